/** The storage suite on the embedded SQLite store, each test on a fresh file. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import { storeSuite } from './suite.js';

const dirs = new Map<object, string>();
storeSuite('sqlite', {
  async make() {
    const dir = mkdtempSync(join(tmpdir(), 'svc-store-'));
    const store = SqliteStore.open(join(dir, 'svc.db'));
    dirs.set(store, dir);
    return store;
  },
  async destroy(store) {
    await store.close();
    rmSync(dirs.get(store)!, { recursive: true, force: true });
  },
});
