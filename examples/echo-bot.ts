// An echo bot on the SDK: one more device of its account, answering every text with the same text.
import { ApiClient, Conversations, cookieFetch, MemoryStore, Messenger } from '@svc/sdk';

const { SVC_SERVER: server = 'http://localhost:8080', SVC_NICK: nick = 'echo', SVC_PASSWORD: password = '' } = process.env;
const api = new ApiClient({ baseUrl: server, origin: new URL(server).origin, fetch: cookieFetch() });
const me = new Messenger({ api });
await me.login({ nick, password });
await me.ensureDevice(process.env.SVC_DEVICE ?? 'echo-bot-1');
// Receipts off: nobody reads on a bot's behalf. The outbox paces the answers under the account's limit.
const chats = new Conversations({ messenger: me, store: new MemoryStore(), receipts: false });

me.events({
  // Resolving acknowledges the message to the service; a throw has it sent again later.
  onMsg: async (envelope) => {
    const { added } = await chats.receive(envelope);
    if (added?.kind === 'text' && added.from !== nick) await chats.sendText(added.chat, `echo: ${added.body}`);
  },
  onReady: () => console.log(`${nick} echoes on ${server}`),
}).start();
