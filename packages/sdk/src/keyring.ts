/**
 * Room-key bookkeeping: every key this client has unwrapped, per room and keyId, in the order the
 * service lists them (oldest first), so old messages still decrypt after a rotation and new
 * messages use the newest key.
 */
export class RoomKeyring {
  private rooms = new Map<string, Map<string, CryptoKey>>();

  has(roomId: string, keyId: string): boolean {
    return this.rooms.get(roomId)?.has(keyId) ?? false;
  }

  get(roomId: string, keyId: string): CryptoKey | undefined {
    return this.rooms.get(roomId)?.get(keyId);
  }

  /** Adds a key; a key added later counts as newer (re-adding a known keyId keeps its place). */
  add(roomId: string, keyId: string, key: CryptoKey): void {
    let m = this.rooms.get(roomId);
    if (!m) this.rooms.set(roomId, (m = new Map()));
    if (!m.has(keyId)) m.set(keyId, key);
  }

  /** The newest key held for the room. */
  newest(roomId: string): { keyId: string; key: CryptoKey } | undefined {
    const m = this.rooms.get(roomId);
    if (!m || m.size === 0) return undefined;
    const [keyId, key] = [...m.entries()][m.size - 1]!;
    return { keyId, key };
  }

  keyIds(roomId: string): string[] {
    return [...(this.rooms.get(roomId)?.keys() ?? [])];
  }

  /** Drops a room's keys (after room_left): its history is no longer readable without them. */
  forget(roomId: string): void {
    this.rooms.delete(roomId);
  }

  clear(): void {
    this.rooms.clear();
  }
}
