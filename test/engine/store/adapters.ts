import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { MongoStore } from '../../../engine/store/mongo.js';
import { SqliteStore } from '../../../engine/store/sqlite.js';
import type { Store } from '../../../engine/store/port.js';
import { MONGO_SKIP_REASON, mongoTestUri, withDatabase } from '../../mongo.js';

/** A store adapter under test: `open` may be called again to simulate a restart. */
export interface AdapterUnderTest {
  name: string;
  /** Null when the adapter cannot run here, with the reason as `skip`. */
  skip: string | null;
  /** Whether data survives a close and re-open. */
  durable: boolean;
  open(): Promise<Store>;
  cleanup(): Promise<void>;
}

/** Every adapter of the store port; MongoDB only where one is configured (test/mongo.ts). */
export function adapters(): AdapterUnderTest[] {
  let sqliteDir: string | null = null;
  const dbName = `pts_test_${process.pid}_${Date.now()}`;
  const mongoUri = mongoTestUri();
  const opened: Store[] = [];
  return [
    {
      name: 'sqlite (memory)',
      skip: null,
      durable: false,
      open: () => SqliteStore.open(null),
      cleanup: async () => {},
    },
    {
      name: 'sqlite (disk)',
      skip: null,
      durable: true,
      async open() {
        sqliteDir ??= await fs.mkdtemp(path.join(os.tmpdir(), 'pts-sqlite-'));
        return SqliteStore.open(sqliteDir);
      },
      async cleanup() {
        if (sqliteDir) await fs.rm(sqliteDir, { recursive: true, force: true });
      },
    },
    {
      name: 'mongodb',
      skip: mongoUri ? null : MONGO_SKIP_REASON,
      durable: true,
      async open() {
        // The contract holds on any deployment, a standalone server included.
        const store = await MongoStore.open(withDatabase(mongoUri!, dbName), dbName, { allowStandalone: true });
        opened.push(store);
        return store;
      },
      async cleanup() {
        if (opened.length === 0) return;
        const fresh = await MongoStore.open(withDatabase(mongoUri!, dbName), dbName, { allowStandalone: true });
        await fresh.database.dropDatabase();
        await fresh.close();
      },
    },
  ];
}
