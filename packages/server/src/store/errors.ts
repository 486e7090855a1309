/** Errors shared by every store backend, so callers can tell them apart without knowing the backend. */

/**
 * The database was written by a newer build (its newest migration is unknown here). The store
 * refuses to open it rather than guess at a schema it does not know.
 */
export class NewerSchemaError extends Error {
  constructor(found: number, known: number) {
    super(`the database has schema version ${found}, newer than this build knows (${known}); run a newer version of the service`);
    this.name = 'NewerSchemaError';
  }
}
