import path from 'node:path';
import type { Config } from '../config.js';
import type { Logger } from '../logger.js';
import { takeEngineLease } from './lease.js';
import { MongoStore } from './mongo.js';
import { SQLITE_FILE, SqliteStore } from './sqlite.js';
import type { Store } from './port.js';

export type { Store, Collection, Doc, Filter, IndexSpec } from './port.js';
export { DataDirLockedError } from './lock.js';
export { EngineLeaseHeldError } from './lease.js';
export { MongoStoreRefusedError, MongoUnreachableError } from './mongo.js';
export { OldStoreDataError } from './sqlite.js';

/**
 * Opens the store the configuration asks for: MongoDB when `MONGODB_URI` is set (with the
 * configured write concern, on a replica set unless a standalone server is allowed, holding the
 * database's engine lease for this process's life: see engine/store/lease.ts), otherwise SQLite:
 * the file `store.sqlite` in `DATA_DIR` (one INFO line says so), the folder locked for this
 * process's life, or in memory when `DATA_DIR=:memory:`.
 * @throws {DataDirLockedError} when another live process holds `DATA_DIR`.
 * @throws {OldStoreDataError} when `DATA_DIR` holds the older embedded store's files, not imported
 *   (`npm run migrate -- <DATA_DIR>` imports them).
 * @throws {EngineLeaseHeldError} when another live engine process holds the MongoDB database.
 * @throws {MongoStoreRefusedError} on a standalone MongoDB server (unless allowed), a URI whose
 *   write-concern options contradict the settings, or no server of the URI answering
 *   (`MongoUnreachableError`, a subclass).
 */
export async function openStore(config: Config, log: Logger): Promise<Store> {
  if (config.mongodbUri) {
    const store = await MongoStore.open(config.mongodbUri, config.mongodbDb, {
      w: config.mongodbWriteConcern,
      journal: config.mongodbJournal,
      allowStandalone: config.mongodbAllowStandalone,
    });
    try {
      const lease = await takeEngineLease(store, { log });
      store.onClose(() => lease.release());
      log.info({ store: 'mongodb', lease: lease.owner.instanceId }, `store: ${store.location} (engine lease taken)`);
    } catch (err) {
      await store.close().catch(() => {});
      throw err;
    }
    return store;
  }
  if (config.dataDir === ':memory:') {
    log.info({ store: 'sqlite' }, 'store: sqlite, in memory only (DATA_DIR=:memory:): nothing survives a restart');
    return SqliteStore.open(null, { log });
  }
  const dir = path.resolve(config.dataDir);
  const store = await SqliteStore.open(dir, { lock: true, log });
  log.info({ store: 'sqlite', dir }, `store: sqlite (no MONGODB_URI set), ${path.join(dir, SQLITE_FILE)}`);
  return store;
}
