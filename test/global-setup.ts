import { execFileSync } from 'node:child_process';
import type { TestProject } from 'vitest/node';

/**
 * Builds dist/ once (incremental) so child-process tests run the same code `npm start` runs, and,
 * when `MONGOMS_SYSTEM_BINARY` names a mongod and neither `MONGODB_URI` nor `TEST_STORE=sqlite`
 * is set, starts a one-member replica set with mongodb-memory-server for the whole run (its URI is
 * provided to the tests as `mongodbMemoryUri`, see test/mongo.ts) and stops it at the end.
 */
export default async function setup(project: TestProject): Promise<(() => Promise<void>) | void> {
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'], {
    stdio: 'inherit',
  });
  project.provide('mongodbMemoryUri', '');
  if (process.env.TEST_STORE === 'sqlite' || process.env.MONGODB_URI || !process.env.MONGOMS_SYSTEM_BINARY) return;
  const { MongoMemoryReplSet } = await import('mongodb-memory-server');
  const replSet = await MongoMemoryReplSet.create({ replSet: { count: 1, storageEngine: 'wiredTiger' } });
  await replSet.waitUntilRunning();
  project.provide('mongodbMemoryUri', replSet.getUri());
  return async () => {
    await replSet.stop();
  };
}
