/** The storage suites on the embedded SQLite store, each test on a fresh file. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import { storeSuite, type StoreFactory } from './suite.js';
import { roomLeaveSuite } from './room-leave-suite.js';
import { attachmentSuite } from './attachments-suite.js';

const dirs = new Map<object, string>();
const factory: StoreFactory = {
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
};
storeSuite('sqlite', factory);
roomLeaveSuite('sqlite', factory);
attachmentSuite('sqlite', factory);
