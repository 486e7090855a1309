/** The storage suites on the PostgreSQL store, each test in its own fresh schema, dropped afterwards. */
import { PostgresStore } from '../../src/store/postgres/index.js';
import type { Store } from '../../src/store/types.js';
import { storeSuite, type StoreFactory } from './suite.js';
import { roomLeaveSuite } from './room-leave-suite.js';
import { attachmentSuite } from './attachments-suite.js';
import { dropSchema, freshSchema, testPgUrl } from '@svc/testkit/postgres';

const schemas = new Map<Store, string>();
const factory: StoreFactory = {
  async make() {
    const schema = await freshSchema();
    const store = await PostgresStore.open(testPgUrl, { schema, max: 4 });
    schemas.set(store, schema);
    return store;
  },
  async destroy(store) {
    await store.close();
    await dropSchema(schemas.get(store)!);
    schemas.delete(store);
  },
};
storeSuite('postgres', factory);
roomLeaveSuite('postgres', factory);
attachmentSuite('postgres', factory);
