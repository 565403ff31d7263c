import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { MongoClient } from 'mongodb';
import { afterAll, describe, expect, it } from 'vitest';
import { mongoTestUri, MONGO_SKIP_REASON, withDatabase } from '../mongo.js';
import { printed, printedMasterKey, runToExit, spawnService, type ServiceProcess } from '../process.js';

describe('the service process', () => {
  const dirs: string[] = [];
  const running: ServiceProcess[] = [];
  /** MongoDB databases the processes of these tests made, dropped once they stopped. */
  const databases: string[] = [];
  const tmp = async () => {
    const d = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-proc-'));
    dirs.push(d);
    return d;
  };
  afterAll(async () => {
    for (const p of running) {
      p.child.kill('SIGTERM');
      await p.exited;
    }
    for (const d of dirs) await fs.rm(d, { recursive: true, force: true });
    const uri = mongoTestUri();
    if (uri && databases.length) {
      const client = new MongoClient(uri, { serverSelectionTimeoutMS: 5_000 });
      try {
        for (const db of databases) await client.db(db).dropDatabase();
      } finally {
        await client.close();
      }
    }
  });

  it('a second process on one DATA_DIR refuses with one line; a taken port fails before a key is minted', async () => {
    const dir = await tmp();
    const first = await spawnService({ DATA_DIR: dir, LOG_LEVEL: 'info', SIM_REPLAY: 'off' });
    running.push(first);
    const port = new URL(first.baseUrl).port;

    // The master key is a plain block of its own, never inside a JSON line, before the API answers.
    const key = await printedMasterKey(first);
    // the listening line follows the key: read the output once it is there
    await printed(first, 'listening line', (all) => (all.some((l) => l.includes('"listening on')) ? true : undefined));
    const lines = first
      .output()
      .split('\n')
      .filter((l) => l.trim() !== '');
    const keyAt = lines.indexOf(key);
    expect(keyAt).toBeGreaterThan(0);
    expect(lines[keyAt - 1]).toMatch(/^MASTER_API_KEY for partner 'demo' \(shown once/);
    expect(lines.findIndex((l) => l.includes('"listening on'))).toBeGreaterThan(keyAt);
    for (const l of lines.filter((x, i) => i !== keyAt && i !== keyAt - 1)) expect(() => JSON.parse(l)).not.toThrow();

    const other = await tmp();
    const second = await runToExit(['dist/api/main.js'], { DATA_DIR: dir, PORT: '0' });
    expect(second.code).toBe(1);
    expect(second.out.trim().split('\n').at(-1)).toBe(
      `cannot start: DATA_DIR ${dir} is in use by another process (pid ${first.child.pid} on ` +
        `${os.hostname()}): the SQLite store belongs to one process; stop it, or give this one another ` +
        `DATA_DIR (or MONGODB_URI)`,
    );

    const taken = await runToExit(['dist/api/main.js'], { DATA_DIR: other, PORT: port });
    expect(taken.code).toBe(1);
    expect(taken.out).toBe(
      `cannot start: port ${port} on 127.0.0.1 is already in use: stop the process holding it or set PORT ` +
        `to a free port\n`,
    );
    expect(await fs.readdir(other)).toEqual([]); // nothing opened, no key minted
    expect((await fetch(`${first.baseUrl}/healthz`)).status).toBe(200);
  });

  it('an unhandled rejection or uncaught exception is logged at fatal and exits 1', async () => {
    for (const fault of ['Promise.reject(new Error("boom"))', 'setTimeout(() => { throw new Error("boom") }, 0)']) {
      // 'still running' 10 s later: the exit comes first, however loaded the machine
      const script =
        `import('./dist/api/fatal.js').then(async (f) => { const { createLogger } = await ` +
        `import('./dist/engine/logger.js'); f.installFatalHandlers(createLogger('info')); ${fault}; ` +
        `setTimeout(() => console.log('still running'), 10000); })`;
      const { code, out } = await runToExit(['-e', script], {});
      expect(code).toBe(1);
      const fatal = JSON.parse(out.trim().split('\n')[0]!) as {
        level: number;
        err: { message: string; stack: string };
        msg: string;
      };
      expect(fatal).toMatchObject({ level: 60, err: { message: 'boom' } });
      expect(fatal.msg).toMatch(/^(unhandledRejection|uncaughtException): exiting/);
      expect(out).not.toContain('still running');
    }
  });

  it('a process whose engine lease is taken by another stops: FATAL naming it, exit 1', async () => {
    // Through the store port on SQLite, with the default onLost of the service; 'still running' 10 s
    // later: the stop comes first, however loaded the machine.
    const script = `Promise.all([
      import('./dist/api/fatal.js'),
      import('./dist/engine/logger.js'),
      import('./dist/engine/store/sqlite.js'),
      import('./dist/engine/store/lease.js'),
    ]).then(async ([f, l, e, lease]) => {
      f.installFatalHandlers(l.createLogger('info'));
      const store = await e.SqliteStore.open(null);
      await lease.takeEngineLease(store, { renewMs: 50 });
      const c = await store.collection('leases');
      await c.replaceOne({
        _id: 'engine',
        owner: { pid: 4242, host: 'other-host', startedAtMs: 1, instanceId: 'thief' },
        expiresAtMs: Date.now() + 60000,
      });
      setTimeout(() => console.log('still running'), 10000);
    })`;
    const { code, out } = await runToExit(['-e', script], {});
    expect(code).toBe(1);
    const fatal = JSON.parse(out.trim().split('\n')[0]!) as { level: number; err: { message: string } };
    expect(fatal.level).toBe(60);
    expect(fatal.err.message).toMatch(
      new RegExp(
        'the engine lease of \\(memory\\) was taken by another process \\(pid 4242 on other-host, instance ' +
          'thief\\).*stopping',
      ),
    );
    expect(out).not.toContain('still running');
  });

  it('a MONGODB_URI whose seed list answers nowhere: one `cannot start:` line, no stack, exit 1', async () => {
    const { code, out } = await runToExit(['dist/api/main.js'], {
      MONGODB_URI: 'mongodb://app:s3cret@127.0.0.1:1,127.0.0.1:2/pts?replicaSet=rs0&serverSelectionTimeoutMS=300',
      DATA_DIR: await tmp(),
      PORT: '0',
      LOG_LEVEL: 'warn',
    });
    expect(code).toBe(1);
    const lines = out.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      new RegExp(
        '^cannot start: no MongoDB server of MONGODB_URI \\(127\\.0\\.0\\.1:1,127\\.0\\.0\\.1:2\\) answered: ' +
          '.+; check that the servers run and are reachable from here$',
      ),
    );
    expect(out).not.toContain('s3cret');
  });

  const mongoUri = mongoTestUri();
  it.skipIf(!mongoUri)(
    `on MongoDB a second process on one database refuses, naming the holder; a kill -9'd one is taken over` +
      (mongoUri ? '' : ` — skipped: ${MONGO_SKIP_REASON}`),
    async () => {
      const db = `pts_proc_${process.pid}_${Date.now()}`;
      databases.push(db);
      const env = { MONGODB_URI: withDatabase(mongoUri!, db), MONGODB_ALLOW_STANDALONE: 'on', SIM_REPLAY: 'off' };
      const first = await spawnService({ ...env, DATA_DIR: await tmp() });
      running.push(first);
      const second = await runToExit(['dist/api/main.js'], { ...env, DATA_DIR: await tmp(), PORT: '0' });
      expect(second.code).toBe(1);
      expect(second.out.trim().split('\n').at(-1)).toMatch(
        new RegExp(
          `^cannot start: mongodb database ${db} is in use by another engine process \\(pid ` +
            `${first.child.pid} on ${os.hostname()}, instance [0-9a-f-]+, since [0-9T:.-]+Z\\): one engine ` +
            `process per database`,
        ),
      );
      first.child.kill('SIGKILL');
      await first.exited;
      const third = await spawnService({ ...env, DATA_DIR: await tmp() });
      running.push(third);
      expect((await fetch(`${third.baseUrl}/healthz`)).status).toBe(200);
    },
  );
});
