/** The event data the service serialises: the envelope's field order (docs/API.md) and the other payloads. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { envelopeJson, eventData, type Envelope } from '@svc/protocol';

test('envelopeJson writes the fields in the order of docs/API.md, whatever the order of the object', () => {
  const shuffled = {
    ts: 1795279006392,
    ct: 'Y3Q',
    iv: 'aXY',
    keyId: 'dm',
    from: 'alice',
    to: { dm: 'bob' },
    id: '01M7ZFFANRWA7JQVACR0YHSRY0',
  } satisfies Envelope;
  const json = envelopeJson(shuffled);
  assert.equal(json, '{"id":"01M7ZFFANRWA7JQVACR0YHSRY0","to":{"dm":"bob"},"from":"alice","keyId":"dm","iv":"aXY","ct":"Y3Q","ts":1795279006392}');
  assert.deepEqual(JSON.parse(json), shuffled);
});

test('eventData is the payload as JSON', () => {
  assert.equal(eventData('ready', {}), '{}');
  assert.equal(eventData('room_left', { id: 'YA4oUMRpiuuiacqOPi2DSg' }), '{"id":"YA4oUMRpiuuiacqOPi2DSg"}');
});
