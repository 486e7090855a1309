/** Errors shared by every store backend, so callers can tell them apart without knowing the backend. */

/**
 * The database was written by a newer build (its newest migration is unknown here). The store
 * refuses to open it rather than guess at a schema it does not know.
 */
/**
 * The database is at an older schema version than this build, and the caller asked not to
 * upgrade it: the admin command, which may run beside a service of the older version (a
 * migration could break it). The service itself upgrades the store when it starts.
 */
export class OlderSchemaError extends Error {
  constructor(found: number, known: number) {
    super(
      `the database has schema version ${found}, older than this build (${known}); start this version of the service once to upgrade it (docs/DEPLOY.md, "Upgrading"), then run the command again`,
    );
    this.name = 'OlderSchemaError';
  }
}

export class NewerSchemaError extends Error {
  constructor(found: number, known: number) {
    super(`the database has schema version ${found}, newer than this build knows (${known}); run a newer version of the service`);
    this.name = 'NewerSchemaError';
  }
}
