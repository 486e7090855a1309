/** One numbered migration of the PostgreSQL store: its version, a name, and the SQL it runs. */
export interface PgMigration {
  version: number;
  name: string;
  sql: string;
}
