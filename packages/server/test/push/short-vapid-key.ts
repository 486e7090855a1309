import { createECDH } from 'node:crypto';

/**
 * A P-256 key pair whose private scalar starts with a zero byte, as Node's ECDH hands it out:
 * 31 bytes (push/vapid-keys.ts). About one generated pair in 200.
 */
export function shortScalarPair(): { publicKey: Buffer; privateKey: Buffer } {
  for (;;) {
    const ecdh = createECDH('prime256v1');
    ecdh.generateKeys();
    const privateKey = ecdh.getPrivateKey();
    if (privateKey.length < 32) return { publicKey: ecdh.getPublicKey(), privateKey };
  }
}
