/**
 * Room-key bookkeeping: every key this client has unwrapped, per room and keyId, so old messages
 * still decrypt after a rotation. Each key remembers who wrapped it and under which of their
 * public keys, so that a key that came under a changed (not yet accepted) key is not used for
 * sending. Which key is the room's newest is not decided here: the order in which this client
 * managed to unwrap keys is not the room's order (Messenger tracks the order the service lists).
 */

/** Who wrapped a room key, and the public key of theirs that the pair key was made with. */
export interface KeyOrigin {
  from: string;
  publicKey: string;
}

export interface HeldRoomKey extends KeyOrigin {
  key: CryptoKey;
}

export class RoomKeyring {
  private rooms = new Map<string, Map<string, HeldRoomKey>>();

  has(roomId: string, keyId: string): boolean {
    return this.rooms.get(roomId)?.has(keyId) ?? false;
  }

  get(roomId: string, keyId: string): CryptoKey | undefined {
    return this.rooms.get(roomId)?.get(keyId)?.key;
  }

  /** The key with its origin (who wrapped it, under which public key). */
  entry(roomId: string, keyId: string): HeldRoomKey | undefined {
    return this.rooms.get(roomId)?.get(keyId);
  }

  /** Adds a key; re-adding a known keyId keeps the first one. */
  add(roomId: string, keyId: string, key: CryptoKey, origin: KeyOrigin): void {
    let m = this.rooms.get(roomId);
    if (!m) this.rooms.set(roomId, (m = new Map<string, HeldRoomKey>()));
    if (!m.has(keyId)) m.set(keyId, { key, from: origin.from, publicKey: origin.publicKey });
  }

  /** The keyIds held for the room, in the order they were added. */
  keyIds(roomId: string): string[] {
    return [...(this.rooms.get(roomId)?.keys() ?? [])];
  }

  /** Drops a room's keys: its history is no longer readable without them. */
  forget(roomId: string): void {
    this.rooms.delete(roomId);
  }

  clear(): void {
    this.rooms.clear();
  }
}
