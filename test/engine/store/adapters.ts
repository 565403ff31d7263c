import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { EmbeddedStore } from '../../../engine/store/embedded.js';
import { MongoStore } from '../../../engine/store/mongo.js';
import type { Store } from '../../../engine/store/port.js';

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

/** Every adapter of the store port; MongoDB only where a mongod is reachable. */
export function adapters(): AdapterUnderTest[] {
  let dir: string | null = null;
  let memoryServer: { getUri(): string; stop(): Promise<unknown> } | null = null;
  const dbName = `pts_test_${process.pid}_${Date.now()}`;
  const mongoUri = process.env.MONGODB_URI;
  const mongoBinary = process.env.MONGOMS_SYSTEM_BINARY;
  const opened: Store[] = [];
  return [
    {
      name: 'embedded (memory)',
      skip: null,
      durable: false,
      open: () => EmbeddedStore.open(null),
      cleanup: async () => {},
    },
    {
      name: 'embedded (disk)',
      skip: null,
      durable: true,
      async open() {
        dir ??= await fs.mkdtemp(path.join(os.tmpdir(), 'pts-store-'));
        return EmbeddedStore.open(dir);
      },
      async cleanup() {
        if (dir) await fs.rm(dir, { recursive: true, force: true });
      },
    },
    {
      name: 'mongodb',
      skip: mongoUri || mongoBinary ? null : 'no MongoDB reachable: set MONGODB_URI, or MONGOMS_SYSTEM_BINARY to a mongod binary for mongodb-memory-server',
      durable: true,
      async open() {
        let uri = mongoUri;
        if (!uri) {
          if (!memoryServer) {
            const { MongoMemoryServer } = await import('mongodb-memory-server');
            memoryServer = await MongoMemoryServer.create();
          }
          uri = memoryServer.getUri();
        }
        const store = await MongoStore.open(uri, dbName, { allowStandalone: true }); // the contract holds on any deployment
        opened.push(store);
        return store;
      },
      async cleanup() {
        const s = opened[0] as MongoStore | undefined;
        if (s) {
          const fresh = await MongoStore.open(mongoUri ?? memoryServer!.getUri(), dbName, { allowStandalone: true });
          await fresh.database.dropDatabase();
          await fresh.close();
        }
        await memoryServer?.stop();
      },
    },
  ];
}
