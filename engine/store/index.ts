import path from 'node:path';
import type { Config } from '../config.js';
import type { Logger } from '../logger.js';
import { EmbeddedStore } from './embedded.js';
import { MongoStore } from './mongo.js';
import type { Store } from './port.js';

export type { Store, Collection, Doc, Filter, IndexSpec } from './port.js';
export { DataDirLockedError } from './lock.js';

/**
 * Opens the store the configuration asks for: MongoDB when `MONGODB_URI` is set, otherwise the
 * embedded store on disk under `DATA_DIR` (one INFO line says so), locked for this process's life.
 * @throws {DataDirLockedError} when another live process holds `DATA_DIR`.
 */
export async function openStore(config: Config, log: Logger): Promise<Store> {
  if (config.mongodbUri) {
    const store = await MongoStore.open(config.mongodbUri, config.mongodbDb);
    log.info({ store: 'mongodb' }, `store: ${store.location}`);
    return store;
  }
  if (config.dataDir === ':memory:') {
    log.info({ store: 'embedded' }, 'store: embedded, in memory only (DATA_DIR=:memory:): nothing survives a restart');
    return EmbeddedStore.open(null);
  }
  const dir = path.resolve(config.dataDir);
  const store = await EmbeddedStore.open(dir, { lock: true, log });
  log.info({ store: 'embedded', dir }, `store: embedded (no MONGODB_URI set), files in ${dir}`);
  return store;
}
