/**
 * The web client end to end, over the real server: two people and three devices exchange direct
 * messages live, history survives a reload, a closed device catches up and acknowledges, a
 * password change signs the other sessions out, and no typed text reaches the database.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { missingBrowser, type Device } from './harness/browser.js';
import { plaintextFound, queueLength } from './harness/db.js';
import { nick, openScene, type Scene } from './harness/scene.js';
import { changePassword, chatEntry, ensureSignedIn, openChat, seeMessage, send, signIn, signedOut, signUp, startChat } from './harness/ui.js';
import { until } from './harness/wait.js';

describe('web client: direct messages', { skip: missingBrowser() }, () => {
  let scene: Scene;
  const alice = { nick: nick('alice'), password: 'alice password one' };
  const bob = { nick: nick('bob'), password: 'bob password one' };
  let aliceLaptop: Device;
  let alicePhone: Device;
  let bobLaptop: Device;
  /** Texts each conversation view should hold, in the order they were sent. */
  const history: string[] = [];

  before(async () => {
    scene = await openScene();
  });
  after(async () => {
    await scene?.close();
  });

  test('two people sign up, one starts a chat, and both exchange messages live', async () => {
    await scene.step(async () => {
      aliceLaptop = await scene.device('alice laptop');
      bobLaptop = await scene.device('bob laptop');
      await Promise.all([signUp(aliceLaptop.page, alice.nick, alice.password), signUp(bobLaptop.page, bob.nick, bob.password)]);

      await startChat(aliceLaptop.page, bob.nick);
      const first = scene.text('hello bob, first message');
      await send(aliceLaptop.page, first);

      // Bob did nothing: the chat appears in his list and holds the message.
      await chatEntry(bobLaptop.page, alice.nick).waitFor();
      await openChat(bobLaptop.page, alice.nick);
      await seeMessage(bobLaptop.page, first);

      const reply = scene.text('hi alice, a reply');
      await send(bobLaptop.page, reply);
      await seeMessage(aliceLaptop.page, reply);

      // Both have the conversation open now: each message arrives without any action.
      const live = scene.text('live while both look');
      await send(aliceLaptop.page, live);
      await seeMessage(bobLaptop.page, live);
      history.push(first, reply, live);
    })();
  });

  test("a second device of the same account receives new messages and its own account's sent messages", async () => {
    await scene.step(async () => {
      alicePhone = await scene.device('alice phone');
      await signIn(alicePhone.page, alice.nick, alice.password);
      await openChat(alicePhone.page, bob.nick);

      const fromBob = scene.text('bob to both of alice devices');
      await send(bobLaptop.page, fromBob);
      await seeMessage(aliceLaptop.page, fromBob);
      await seeMessage(alicePhone.page, fromBob);

      const fromLaptop = scene.text('alice from the laptop');
      await send(aliceLaptop.page, fromLaptop);
      await seeMessage(alicePhone.page, fromLaptop);
      await seeMessage(bobLaptop.page, fromLaptop);

      const fromPhone = scene.text('alice from the phone');
      await send(alicePhone.page, fromPhone);
      await seeMessage(aliceLaptop.page, fromPhone);
      await seeMessage(bobLaptop.page, fromPhone);
      history.push(fromBob, fromLaptop, fromPhone);
    })();
  });

  test('after a reload the history is still there', async () => {
    await scene.step(async () => {
      for (const [device, who, peer] of [
        [bobLaptop, bob, alice.nick],
        [aliceLaptop, alice, bob.nick],
      ] as const) {
        await device.page.reload();
        await ensureSignedIn(device.page, who.nick, who.password);
        await openChat(device.page, peer);
        for (const t of history) await seeMessage(device.page, t);
      }
    })();
  });

  test('a device that was closed catches up when it opens again, and its acks empty its queue', async () => {
    await scene.step(async () => {
      const bobDevice = bobLaptop.deviceIds.at(-1);
      assert.ok(bobDevice, "bob's page never opened its event stream");
      await bobLaptop.page.close();

      const missed = [scene.text('sent while bob was away'), scene.text('another one while away')];
      for (const t of missed) await send(aliceLaptop.page, t);
      await until("the missed messages queued for bob's closed device", () =>
        queueLength(scene.server.dbPath, bobDevice) >= missed.length ? true : undefined,
      );

      const page = await bobLaptop.reopen();
      await ensureSignedIn(page, bob.nick, bob.password);
      await openChat(page, alice.nick);
      for (const t of [...history, ...missed]) await seeMessage(page, t);
      assert.equal(bobLaptop.deviceIds.at(-1), bobDevice, 'the reopened app must come back as the same device');
      await until("bob's device queue emptied by its acks", () => (queueLength(scene.server.dbPath, bobDevice) === 0 ? true : undefined));
      history.push(...missed);
    })();
  });

  test('a password change signs the other sessions out and keeps this one', async () => {
    await scene.step(async () => {
      const newPassword = 'alice password two';
      await changePassword(aliceLaptop.page, alice.password, newPassword);
      alice.password = newPassword;

      await signedOut(alicePhone.page);

      // The laptop, where the change was made, still sends and receives.
      await openChat(aliceLaptop.page, bob.nick);
      const after = scene.text('still signed in after the change');
      await send(aliceLaptop.page, after);
      await seeMessage(bobLaptop.page, after);
      const back = scene.text('bob answers after the change');
      await send(bobLaptop.page, back);
      await seeMessage(aliceLaptop.page, back);

      // The phone gets in again with the new password only.
      await signIn(alicePhone.page, alice.nick, newPassword);
    })();
  });

  test('the database holds none of the message texts typed', async () => {
    assert.ok(scene.typed.length >= 10, 'the scenarios above typed the texts');
    assert.deepEqual(plaintextFound(scene.server.dbPath, [alice.nick]), [alice.nick], 'the scan finds open metadata, so it reads the right file');
    assert.deepEqual(plaintextFound(scene.server.dbPath, scene.typed), []);
  });
});
