/** Unit tests for every validator of the protocol (the value formats of docs/API.md). */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createECDH, randomBytes } from 'node:crypto';
import {
  decodeB64url,
  decodeB64urlLenient,
  encodeB64url,
  isAuthKey,
  isB64url,
  isCt,
  isDeviceId,
  isEncryptedKey,
  isId16,
  isIv,
  isKdf,
  isNick,
  isP256Point,
  isPublicKey,
  isPushSubscription,
  isRoomName,
  isUlid,
  isWrappedKey,
  makeUlid,
  ulidTime,
} from '@svc/protocol';

const b64 = (n: number) => encodeB64url(randomBytes(n));
const point = () => {
  const e = createECDH('prime256v1');
  e.generateKeys();
  return new Uint8Array(e.getPublicKey());
};

describe('b64url', () => {
  test('round-trips every length and matches Node base64url', () => {
    for (let n = 0; n < 70; n++) {
      const bytes = randomBytes(n);
      const text = encodeB64url(bytes);
      assert.equal(text, bytes.toString('base64url'));
      assert.deepEqual(Buffer.from(decodeB64url(text)!), bytes);
    }
  });
  test('round-trips a value of megabytes (a sealed search index) and matches Node base64url', () => {
    for (const n of [1024 * 1024, 3 * 1024 * 1024 + 1, 3 * 1024 * 1024 + 2]) {
      const bytes = Buffer.alloc(n);
      for (let i = 0; i < n; i += 65536) randomBytes(Math.min(65536, n - i)).copy(bytes, i);
      const text = encodeB64url(bytes);
      assert.equal(text, bytes.toString('base64url'));
      assert.ok(Buffer.from(decodeB64url(text)!).equals(bytes));
    }
  });
  test('refuses padding, the standard alphabet, whitespace and impossible lengths', () => {
    for (const bad of ['AAAA=', 'AA==', 'ab+c', 'ab/c', 'ab c', 'A', 'AAAAA', 'é']) assert.equal(isB64url(bad), false, bad);
    // Decoding refuses them too, wherever the character stands (one beyond ASCII whose low bits name a letter too).
    for (const bad of ['AAAA=', 'AA==', 'ab+c', 'ab/c', 'ab c', 'A', 'AAAAA', 'é', 'AAAAAA\u0141', 'AAAA\u0141AAA', 'AAA\u0000', 'A\u0141'])
      assert.equal(decodeB64url(bad), null, JSON.stringify(bad));
    assert.equal(isB64url(''), true);
    assert.equal(isB64url(42), false);
  });
  test('a long text (an attachment part) gets the same answers as a short one', () => {
    const good = randomBytes(24_000).toString('base64url');
    assert.equal(isB64url(good), true);
    // Text whose last character carries bits no byte uses is still of the alphabet.
    assert.equal(isB64url(good.slice(0, -1) + (good.endsWith('B') ? 'C' : 'B')), true);
    const mid = good.length >> 1;
    for (const bad of ['+', '/', ' ', '\n', '=', 'é', '\u0000', '.'])
      assert.equal(isB64url(good.slice(0, mid) + bad + good.slice(mid + 1)), false, JSON.stringify(bad));
    assert.equal(isB64url(good + '='), false);
    assert.equal(isB64url(good + 'A'), false, 'a length that cannot occur');
  });
  test("a long text gets the same answer from the platform's decoder as from the plain code", () => {
    const good = randomBytes(24_000).toString('base64url');
    const mid = good.length >> 1;
    const texts = [
      good,
      good.slice(0, -1),
      good.slice(0, -2),
      // The last character carries bits no byte uses.
      good.slice(0, -1) + (good.endsWith('B') ? 'C' : 'B'),
      ...['+', '/', ' ', '\n', '\t', '=', 'é', '\u0000', '.', '\u0141'].map((bad) => good.slice(0, mid) + bad + good.slice(mid + 1)),
      ...['=', '==', ' ', '  ', 'A', 'AA=', '\n'].map((tail) => good + tail),
      good.slice(0, -2) + '==',
      ' ' + good.slice(1),
    ];
    const answers = (decode: (s: string) => Uint8Array | null) => texts.map((t) => decode(t) && Buffer.from(decode(t)!).toString('hex'));
    // This Node decodes with the plain code; one started with the flag that gives it the platform's decoder answers too.
    assert.equal(typeof (Uint8Array as { fromBase64?: unknown }).fromBase64, 'undefined');
    const script = `const { decodeB64url } = await import(${JSON.stringify(import.meta.resolve('@svc/protocol'))});
      if (typeof Uint8Array.fromBase64 !== 'function') throw new Error('no platform decoder');
      const texts = JSON.parse((await import('node:fs')).readFileSync(0, 'utf8'));
      process.stdout.write(JSON.stringify(texts.map((t) => { const b = decodeB64url(t); return b && Buffer.from(b).toString('hex'); })));`;
    const native = JSON.parse(
      execFileSync(process.execPath, ['--js-base-64', '--input-type=module', '-e', script], {
        input: JSON.stringify(texts),
        encoding: 'utf8',
        maxBuffer: 1 << 26,
      }),
    ) as (string | null)[];
    const plain = answers(decodeB64url);
    assert.deepEqual(
      native.map((a) => a !== null),
      plain.map((a) => a !== null),
    );
    assert.deepEqual(native, plain);
    assert.ok(plain[0] !== null && plain[4] === null);
  });
  test('lenient decoding accepts padded base64url (push keys)', () => {
    const bytes = randomBytes(16);
    assert.deepEqual(Buffer.from(decodeB64urlLenient(bytes.toString('base64url') + '==')!), bytes);
    assert.equal(decodeB64urlLenient('a+b/'), null);
  });
});

describe('nick', () => {
  test('2 to 32 characters of a-z, 0-9 and _', () => {
    for (const ok of ['ab', 'a_1', 'x'.repeat(32), '__', '09']) assert.ok(isNick(ok), ok);
    for (const bad of ['a', 'x'.repeat(33), 'Ab', 'a-b', 'a b', 'ä1', '', 'a\n', null, 12]) assert.equal(isNick(bad), false, String(bad));
  });
});

describe('device id', () => {
  test('8 to 64 characters of A-Z a-z 0-9 _ -', () => {
    for (const ok of ['abcdefgh', 'A-b_C-d_', 'x'.repeat(64)]) assert.ok(isDeviceId(ok), ok);
    for (const bad of ['abcdefg', 'x'.repeat(65), 'abcd efgh', 'abcdefg.', 'abcdefgé', 7]) assert.equal(isDeviceId(bad), false, String(bad));
  });
});

describe('id16, iv, authKey', () => {
  test('id16 is exactly 16 bytes of unpadded b64url', () => {
    assert.ok(isId16(b64(16)));
    assert.equal(isId16(b64(15)), false);
    assert.equal(isId16(b64(17)), false);
    assert.equal(isId16(randomBytes(16).toString('base64')), false);
  });
  test('iv is exactly 12 bytes', () => {
    assert.ok(isIv(b64(12)));
    assert.equal(isIv(b64(11)), false);
    assert.equal(isIv(b64(16)), false);
  });
  test('authKey is exactly 32 bytes', () => {
    assert.ok(isAuthKey(b64(32)));
    assert.equal(isAuthKey(b64(31)), false);
  });
});

describe('ct', () => {
  test('b64url of at least 16 bytes (one AES-GCM tag)', () => {
    assert.ok(isCt(b64(16)));
    assert.ok(isCt(b64(1000)));
    assert.equal(isCt(b64(15)), false);
    assert.equal(isCt('not base64!'), false);
    assert.equal(isCt(''), false);
  });
  test('an upper bound applies where one is given (encryptedKey: 4096 bytes)', () => {
    assert.ok(isCt(b64(4096), 4096));
    assert.equal(isCt(b64(4097), 4096), false);
  });
});

describe('ulid', () => {
  test('26 Crockford base32 characters with a time prefix', () => {
    const id = makeUlid(Date.now(), (n) => new Uint8Array(randomBytes(n)));
    assert.ok(isUlid(id));
    assert.ok(isUlid(id.toLowerCase()));
    for (const bad of [id.slice(1), id + 'A', id.slice(0, 25) + 'U', id.slice(0, 25) + 'I', '8' + id.slice(1), 5])
      assert.equal(isUlid(bad), false, String(bad));
  });
  test('the time prefix decodes to the creation time', () => {
    const t = 1_800_000_000_123;
    assert.equal(ulidTime(makeUlid(t, (n) => new Uint8Array(randomBytes(n)))), t);
    assert.equal(ulidTime('01ARZ3NDEKTSV4RRFFQ69G5FAV'), 1469922850259); // as the reference implementation decodes it
  });
});

describe('room name', () => {
  test('1 to 64 characters, counted as code points', () => {
    assert.ok(isRoomName('a'));
    assert.ok(isRoomName('x'.repeat(64)));
    assert.ok(isRoomName('😀'.repeat(64)));
    assert.equal(isRoomName(''), false);
    assert.equal(isRoomName('x'.repeat(65)), false);
  });
  test('no control characters', () => {
    for (const c of ['\u0000', '\n', '\t', '\u001f', '\u007f', '\u0085']) assert.equal(isRoomName(`a${c}b`), false, JSON.stringify(c));
  });
  test('no bidirectional override characters U+202A–U+202E and U+2066–U+2069', () => {
    for (let cp = 0x202a; cp <= 0x202e; cp++) assert.equal(isRoomName(`a${String.fromCodePoint(cp)}b`), false);
    for (let cp = 0x2066; cp <= 0x2069; cp++) assert.equal(isRoomName(`a${String.fromCodePoint(cp)}b`), false);
  });
  test('not only whitespace; lone surrogates refused', () => {
    for (const bad of [' ', '   ', '\u00a0', '\u3000 ', '\ud800']) assert.equal(isRoomName(bad), false, JSON.stringify(bad));
    assert.ok(isRoomName(' a '));
  });
});

describe('P-256 point', () => {
  test('accepts generated points and refuses points off the curve, compressed or short', () => {
    const p = point();
    assert.ok(isP256Point(p));
    const off = p.slice();
    off[64] = off[64]! ^ 1;
    assert.equal(isP256Point(off), false);
    const compressed = p.slice(0, 33);
    compressed[0] = 0x02;
    assert.equal(isP256Point(compressed), false);
    const wrongPrefix = p.slice();
    wrongPrefix[0] = 0x05;
    assert.equal(isP256Point(wrongPrefix), false);
    assert.equal(isP256Point(new Uint8Array(65)), false);
  });
  test('publicKey is b64url of such a point', () => {
    assert.ok(isPublicKey(encodeB64url(point())));
    assert.equal(isPublicKey(b64(65)), false);
  });
});

describe('kdf', () => {
  const good = () => ({ alg: 'argon2id', salt: b64(16), m: 65536, t: 3, p: 1 });
  test('accepts the bounds m 19456..1048576, t 2..16, p 1..4', () => {
    assert.ok(isKdf(good()));
    for (const [k, v] of [
      ['m', 19456],
      ['m', 1048576],
      ['t', 2],
      ['t', 16],
      ['p', 1],
      ['p', 4],
    ] as const)
      assert.ok(isKdf({ ...good(), [k]: v }), `${k}=${v}`);
  });
  test('refuses values outside the bounds, non-integers, other algorithms and salts not 16 bytes', () => {
    for (const [k, v] of [
      ['m', 19455],
      ['m', 1048577],
      ['t', 1],
      ['t', 17],
      ['p', 0],
      ['p', 5],
      ['m', 65536.5],
      ['t', '3'],
      ['alg', 'argon2i'],
      ['salt', b64(15)],
      ['salt', b64(17)],
    ] as const)
      assert.equal(isKdf({ ...good(), [k]: v }), false, `${k}=${v}`);
    assert.equal(isKdf(null), false);
    assert.equal(isKdf([]), false);
  });
});

describe('encryptedKey and wrapped keys', () => {
  test('encryptedKey is {iv, ct} with ct 16 to 4096 bytes', () => {
    assert.ok(isEncryptedKey({ iv: b64(12), ct: b64(48) }));
    assert.equal(isEncryptedKey({ iv: b64(11), ct: b64(48) }), false);
    assert.equal(isEncryptedKey({ iv: b64(12), ct: b64(4097) }), false);
    assert.equal(isEncryptedKey({ iv: b64(12), ct: b64(15) }), false);
  });
  test('a wrapped key has a nick, a 12-byte iv and a ct of at least 16 bytes', () => {
    assert.ok(isWrappedKey({ to: 'bob', iv: b64(12), ct: b64(48) }));
    assert.equal(isWrappedKey({ to: 'B', iv: b64(12), ct: b64(48) }), false);
    assert.equal(isWrappedKey({ to: 'bob', iv: b64(13), ct: b64(48) }), false);
    assert.equal(isWrappedKey({ to: 'bob', iv: b64(12), ct: b64(8) }), false);
  });
});

describe('push subscription', () => {
  const sub = () => ({ endpoint: 'https://push.example.org/abc', keys: { p256dh: encodeB64url(point()), auth: b64(16) } });
  test('accepts https endpoints with a host and padded keys', () => {
    assert.ok(isPushSubscription(sub()));
    const s = sub();
    s.keys.p256dh += '=';
    s.keys.auth += '==';
    assert.ok(isPushSubscription(s));
  });
  test('refuses http, missing host, over 2048 characters, bad keys', () => {
    assert.equal(isPushSubscription({ ...sub(), endpoint: 'http://push.example.org/' }), false);
    assert.equal(isPushSubscription({ ...sub(), endpoint: 'https://' }), false);
    assert.equal(isPushSubscription({ ...sub(), endpoint: 'https://push.example.org/' + 'a'.repeat(2048) }), false);
    assert.equal(isPushSubscription({ ...sub(), keys: { p256dh: b64(65), auth: b64(16) } }), false);
    assert.equal(isPushSubscription({ ...sub(), keys: { p256dh: encodeB64url(point()), auth: b64(15) } }), false);
    assert.equal(isPushSubscription({ endpoint: 'https://push.example.org/' }), false);
  });
});
