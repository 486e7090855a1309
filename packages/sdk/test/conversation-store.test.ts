import { MemoryStore } from '../src/index.js';
import { conversationStoreSuite } from '@svc/testkit/conversation-store-suite';

// A MemoryStore kept between runs goes through its snapshot (MemoryStore.from), so that is the reopen.
conversationStoreSuite('MemoryStore', async () => {
  const store = new MemoryStore();
  return { store, reopen: async () => MemoryStore.from(store.snapshot()), close: async () => undefined };
});
