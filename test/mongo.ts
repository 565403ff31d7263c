import { ConnectionString } from 'mongodb-connection-string-url';
import { inject } from 'vitest';

/**
 * Which MongoDB the tests run on, in this order:
 * - `TEST_STORE=sqlite`: none, everything runs on SQLite;
 * - `MONGODB_URI`: that server (a replica set, or a standalone one: the tests allow it);
 * - `MONGOMS_SYSTEM_BINARY` naming a mongod: a one-member replica set that `test/global-setup.ts`
 *   starts with mongodb-memory-server for the whole run;
 * - otherwise none, and the MongoDB runs are skipped with {@link MONGO_SKIP_REASON}.
 * When there is one, the store contract suite runs on it and every `startTestService()` without a
 * `store` of its own runs on it, each service on a fresh database (dropped when it closes).
 */
declare module 'vitest' {
  export interface ProvidedContext {
    /** URI of the mongod global-setup started (mongodb-memory-server), or '' when none. */
    mongodbMemoryUri: string;
  }
}

/** Why the MongoDB runs are skipped when {@link mongoTestUri} is null. */
export const MONGO_SKIP_REASON =
  process.env.TEST_STORE === 'sqlite'
    ? 'TEST_STORE=sqlite'
    : 'no MongoDB reachable: set MONGODB_URI, or MONGOMS_SYSTEM_BINARY to a mongod binary for mongodb-memory-server';

/** The MongoDB server URI the tests run on, or null when none is configured (see above). */
export function mongoTestUri(): string | null {
  if (process.env.TEST_STORE === 'sqlite') return null;
  let memory = '';
  try {
    memory = inject('mongodbMemoryUri') ?? '';
  } catch {
    /* outside a vitest worker */
  }
  return process.env.MONGODB_URI || memory || null;
}

/** `uri` with its database replaced by `db` (credentials, hosts and options kept). */
export function withDatabase(uri: string, db: string): string {
  const cs = new ConnectionString(uri);
  cs.pathname = `/${encodeURIComponent(db)}`;
  return cs.toString();
}
