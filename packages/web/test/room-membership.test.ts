/**
 * A member nobody added, in the web client over the real server: the server's database gets a
 * member behind everyone's back, then a member leaves, so the server asks the owner's client for a
 * new room key. The owner's client makes none for the listed stranger: the room says so in an
 * alert on the owner's and the other member's screens, no key reaches the stranger, and the owner
 * removing the stranger brings the rotation and ends the warning. The member list and the log's
 * lines are the room's membership record: a member the server stops listing stays in the list,
 * marked and warned about, with no "left" line.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { missingBrowser, type Device } from './harness/browser.js';
import { keyHolders, roomState } from './harness/db.js';
import { nick, openScene, type Scene } from './harness/scene.js';
import { addMemberBehindClients, hideMemberBehindClients } from './harness/tamper.js';
import { createRoom, leaveRoom, messageBox, messageLog, openChat, openRoomSettings, removeMember, seeMessage, send, signUp } from './harness/ui.js';
import { until } from './harness/wait.js';

const WARNING = 'The server lists a member nobody added';

describe('web client: a member nobody added', { skip: missingBrowser() }, () => {
  let scene: Scene;
  const people = { alice: nick('alice'), bob: nick('bob'), carol: nick('carol') };
  // The stranger needs no account: the clients never look it up, they only see it listed.
  const stranger = nick('eve');
  const password = 'a long membership password';
  let alice: Device;
  let bob: Device;
  let carol: Device;

  before(async () => {
    scene = await openScene();
  });
  after(async () => {
    await scene?.close();
  });

  const warning = (page: Page) => page.getByRole('alert').filter({ hasText: WARNING });

  test("the owner's client wraps no key for a member the server added, and both members' rooms warn until the owner removes it", async () => {
    await scene.step(async () => {
      [alice, bob, carol] = await Promise.all([scene.device('alice'), scene.device('bob'), scene.device('carol')]);
      await Promise.all([
        signUp(alice.page, people.alice, password),
        signUp(bob.page, people.bob, password),
        signUp(carol.page, people.carol, password),
      ]);
      const room = `Garden ${randomBytes(3).toString('hex')}`;
      await createRoom(alice.page, room, [people.bob, people.carol]);
      for (const d of [bob, carol]) await openChat(d.page, room);
      const hello = scene.text('hello');
      await send(alice.page, hello);
      for (const d of [bob, carol]) await seeMessage(d.page, hello);
      const start = roomState(scene.server.dbPath, room);
      assert.ok(start);

      await addMemberBehindClients(scene.server.dbPath, start.id, stranger);
      await leaveRoom(carol.page);
      // The server owes a rotation and lists the stranger; the owner's client makes no key.
      await warning(alice.page).waitFor();
      await warning(bob.page).waitFor();
      assert.match((await warning(alice.page).textContent()) ?? '', new RegExp(stranger));
      const owed = roomState(scene.server.dbPath, room);
      assert.ok(owed);
      assert.equal(owed.needsRekey, true, 'the rotation waits');
      assert.deepEqual(owed.keyIds.sort(), [...start.keyIds].sort(), 'no key was made');
      assert.ok(owed.members.includes(stranger));
      assert.equal(keyHolders(scene.server.dbPath, start.id).includes(stranger), false, 'no key reached the stranger');
      await openRoomSettings(alice.page);
      await alice.page.getByText(`${stranger} (nobody added them)`).waitFor();
      await openRoomSettings(alice.page); // the button toggles: closed again, removeMember opens it

      // The owner removes the stranger: the owed rotation happens with it, for alice and bob.
      await removeMember(alice.page, stranger);
      const rotated = await until('the new key', () => {
        const s = roomState(scene.server.dbPath, room);
        return s && !s.needsRekey && !s.members.includes(stranger) ? s : undefined;
      });
      assert.deepEqual([...rotated.members].sort(), [people.alice, people.bob].sort());
      assert.equal(keyHolders(scene.server.dbPath, start.id).includes(stranger), false);
      await warning(alice.page).waitFor({ state: 'detached' });
      await warning(bob.page).waitFor({ state: 'detached' });

      await openChat(alice.page, room);
      const later = scene.text('after the stranger');
      await send(alice.page, later);
      await seeMessage(bob.page, later);
    })();
  });

  test('the member list and the log are the record: a member the server stops listing stays listed and is warned about, and a stranger holds the composer', async () => {
    await scene.step(async () => {
      const room = `Orchard ${randomBytes(3).toString('hex')}`;
      await createRoom(alice.page, room, [people.bob, people.carol]);
      await openChat(bob.page, room);
      const hello = scene.text('orchard hello');
      await send(alice.page, hello);
      await seeMessage(bob.page, hello);
      const start = roomState(scene.server.dbPath, room);
      assert.ok(start);

      // The server hides carol, as if she had left; nobody announced it. Alice's app reads the rooms again on reload.
      await hideMemberBehindClients(scene.server.dbPath, start.id, people.carol);
      await alice.page.reload();
      await openChat(alice.page, room);
      await alice.page.getByRole('alert').filter({ hasText: 'The server no longer lists a member nobody removed' }).waitFor();
      await openRoomSettings(alice.page);
      const list = alice.page.getByRole('region', { name: 'Room settings' }).getByRole('listitem');
      await list.filter({ hasText: `${people.carol} (the server no longer lists them)` }).waitFor();
      assert.equal(await list.count(), 3, 'alice, bob and carol, as the record has them');
      assert.equal(await messageLog(alice.page).getByText(`${people.carol} left`).count(), 0, 'no line for a departure nobody announced');
      await openRoomSettings(alice.page);

      // A stranger listed: the composer holds at once and says why.
      await addMemberBehindClients(scene.server.dbPath, start.id, stranger);
      await alice.page.reload();
      await openChat(alice.page, room);
      await alice.page.getByText(`The server lists a member nobody added (${stranger}), so nothing is sent to the room`).waitFor();
      assert.equal(await alice.page.getByRole('button', { name: 'Send', exact: true }).isDisabled(), true);
      await messageBox(alice.page).fill('not for the stranger');
      assert.equal(await alice.page.getByRole('button', { name: 'Send', exact: true }).isDisabled(), true, 'nothing can be sent');
      // Carol's receipt for the greeting may reach the server after it dropped her: it refuses that, as it would.
      carol.forgiveErrors(/not_member/);
    })();
  });
});
