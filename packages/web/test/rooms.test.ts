/**
 * Rooms in the web client, over the real server: three people talk in a room; the owner removes
 * one, who loses the room and every later message; in another room a member leaves, the owner's
 * client rotates the room key, and the two who remain keep talking. No typed text is stored.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { missingBrowser, type Device } from './harness/browser.js';
import { envelopeKeyIds, plaintextFound, queueLength, roomState, type RoomKeyState } from './harness/db.js';
import { nick, openScene, type Scene } from './harness/scene.js';
import { chatEntry, createRoom, leaveRoom, messageBox, openChat, removeMember, seeMessage, send, shows, signUp } from './harness/ui.js';
import { until } from './harness/wait.js';

describe('web client: rooms', { skip: missingBrowser() }, () => {
  let scene: Scene;
  const people = { alice: nick('alice'), bob: nick('bob'), carol: nick('carol') };
  const password = 'a long room password';
  let alice: Device;
  let bob: Device;
  let carol: Device;
  const roomName = (label: string) => `${label} ${randomBytes(3).toString('hex')}`;

  before(async () => {
    scene = await openScene();
  });
  after(async () => {
    await scene?.close();
  });

  /** Each of `speakers` sends a line in the open room, and every one of `all` sees every line. */
  async function talk(room: string, speakers: Device[], all: Device[]): Promise<string[]> {
    const lines: string[] = [];
    for (const who of speakers) {
      const line = scene.text(`${who.name} in ${room}`);
      await send(who.page, line);
      lines.push(line);
      for (const other of all) await seeMessage(other.page, line);
    }
    return lines;
  }

  /** `device` no longer lists the room and never shows `texts`, and none of them waits in its queue. */
  async function shutOut(device: Device, room: string, texts: string[]): Promise<void> {
    await chatEntry(device.page, room).waitFor({ state: 'detached' });
    for (const t of texts) assert.equal(await shows(device.page, t), false, `${device.name} must not see "${t}"`);
    await drained(device);
  }

  /**
   * Nothing waits in `device`'s queue, now or half a second later. What reached the device before
   * it left the room (the last messages, their receipts) leaves its queue when its client
   * acknowledges it, which on a loaded machine may come a little after the page shows the change:
   * the queue must drain, and stay empty.
   */
  async function drained(device: Device): Promise<void> {
    const id = device.deviceIds.at(-1);
    assert.ok(id, `${device.name} never opened its event stream`);
    await until(`${device.name}'s queue to drain`, () => (queueLength(scene.server.dbPath, id) === 0 ? true : undefined));
    await device.page.waitForTimeout(500);
    assert.equal(queueLength(scene.server.dbPath, id), 0, `nothing may be queued for ${device.name}`);
  }

  /**
   * The room's envelopes since `since` (the `count` texts, plus the receipts the members' clients
   * send) were all sealed under keys made after `old`, which the shut-out member never received.
   * (The server keeps each envelope for its retry window.)
   */
  function sealedWithNewKeys(old: RoomKeyState, since: number, count: number): void {
    const used = envelopeKeyIds(scene.server.dbPath, old.id, since);
    assert.ok(used.length >= count, `the envelopes sent after the change are still on the server (${used.length} of at least ${count})`);
    for (const keyId of used) {
      assert.ok(!old.keyIds.includes(keyId), `a message after the change used the old key ${keyId}`);
    }
  }

  test('a room of three: everyone sees everyone’s messages', async () => {
    await scene.step(async () => {
      [alice, bob, carol] = await Promise.all([scene.device('alice'), scene.device('bob'), scene.device('carol')]);
      await Promise.all([
        signUp(alice.page, people.alice, password),
        signUp(bob.page, people.bob, password),
        signUp(carol.page, people.carol, password),
      ]);
      const room = roomName('Book club');
      await createRoom(alice.page, room, [people.bob, people.carol]);
      for (const d of [bob, carol]) await openChat(d.page, room);
      await talk(room, [alice, bob, carol], [alice, bob, carol]);
    })();
  });

  /**
   * `device` was removed from `room`: the room stays in its list, read-only, saying so, with the
   * composer disabled; it never shows `texts`, and its queue drains and stays empty.
   */
  async function keptReadOnly(device: Device, room: string, texts: string[]): Promise<void> {
    await chatEntry(device.page, room).waitFor();
    await openChat(device.page, room);
    await device.page.getByText(`You were removed from ${room}`).first().waitFor();
    assert.equal(await messageBox(device.page).isDisabled(), true, 'the composer of a room one was removed from is disabled');
    for (const t of texts) assert.equal(await shows(device.page, t), false, `${device.name} must not see "${t}"`);
    await drained(device);
  }

  test('the owner removes a member, who keeps the room read-only with its history and cannot read later messages', async () => {
    await scene.step(async () => {
      const room = roomName('Project');
      await createRoom(alice.page, room, [people.bob, people.carol]);
      for (const d of [bob, carol]) await openChat(d.page, room);
      await talk(room, [alice, carol], [alice, bob, carol]);
      const old = roomState(scene.server.dbPath, room);
      assert.ok(old);

      await removeMember(alice.page, people.carol);
      await until('carol removed on the server', () =>
        roomState(scene.server.dbPath, room)?.members.includes(people.carol) === false ? true : undefined,
      );
      await carol.page.getByText(`You were removed from ${room}`).first().waitFor();
      const since = Date.now();

      // Make sure the owner's view is the room again, whatever the settings screen did.
      await openChat(alice.page, room);
      await openChat(bob.page, room);
      // The others' logs say so, as a line of its own.
      await seeMessage(bob.page, `${people.carol} left`);
      const later = await talk(room, [alice, bob], [alice, bob]);
      await keptReadOnly(carol, room, later);
      sealedWithNewKeys(old, since, later.length);
      // A receipt carol's client sent for the last messages before the removal may reach the
      // server just after it: refused not_member, which no client can foresee (it learns of the
      // removal from the server). Only that refusal of carol's sends is forgiven.
      carol.forgiveErrors(/^\[carol\] HTTP 403 POST \/api\/messages(?: .*"not_member".*)?$/);
    })();
  });

  test("a member leaves, the owner's client rotates the key, and the others keep talking", async () => {
    await scene.step(async () => {
      const room = roomName('Weekend');
      await createRoom(alice.page, room, [people.bob, people.carol]);
      for (const d of [bob, carol]) await openChat(d.page, room);
      await talk(room, [bob, carol], [alice, bob, carol]);
      const old = roomState(scene.server.dbPath, room);
      assert.ok(old);

      await leaveRoom(carol.page);
      await chatEntry(carol.page, room).waitFor({ state: 'detached' });
      const rotated = await until("the owner's client rotating the room key", () => {
        const s = roomState(scene.server.dbPath, room);
        return s && !s.members.includes(people.carol) && !s.needsRekey && s.keyIds.some((k) => !old.keyIds.includes(k)) ? s : undefined;
      });
      const since = Date.now();
      assert.deepEqual([...rotated.members].sort(), [people.alice, people.bob].sort());

      await openChat(alice.page, room);
      await openChat(bob.page, room);
      const later = await talk(room, [alice, bob, alice], [alice, bob]);
      await shutOut(carol, room, later);
      sealedWithNewKeys(old, since, later.length);
    })();
  });

  test('the database holds none of the message texts typed', async () => {
    assert.ok(scene.typed.length >= 10, 'the scenarios above typed the texts');
    assert.deepEqual(plaintextFound(scene.server.dbPath, [people.carol]), [people.carol], 'the scan finds open metadata, so it reads the right file');
    assert.deepEqual(plaintextFound(scene.server.dbPath, scene.typed), []);
  });
});
