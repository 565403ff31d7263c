import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../engine/config.js';
import { createLogger } from '../../../engine/logger.js';
import { SqliteStore } from '../../../engine/store/sqlite.js';
import { DataDirLockedError, openStore } from '../../../engine/store/index.js';
import { LOCK_NAME, OWNER_NAME, lockDataDir } from '../../../engine/store/lock.js';

const exists = (p: string) =>
  fs.stat(p).then(
    () => true,
    () => false,
  );

describe('DATA_DIR lock', () => {
  const dirs: string[] = [];
  const tmp = async () => {
    const d = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-lock-'));
    dirs.push(d);
    return d;
  };
  afterEach(async () => {
    for (const d of dirs.splice(0)) await fs.rm(d, { recursive: true, force: true });
  });

  it('openStore takes the lock; a second open of the folder is refused naming it; close releases it', async () => {
    const dir = await tmp();
    const config = loadConfig({ DATA_DIR: dir });
    const store = await openStore(config, createLogger('silent'));
    expect(await exists(path.join(dir, LOCK_NAME))).toBe(true);
    expect(JSON.parse(await fs.readFile(path.join(dir, OWNER_NAME), 'utf8'))).toMatchObject({
      pid: process.pid,
      host: os.hostname(),
    });

    const second = openStore(config, createLogger('silent'));
    await expect(second).rejects.toBeInstanceOf(DataDirLockedError);
    await expect(second).rejects.toThrow(
      `DATA_DIR ${dir} is in use by another process (pid ${process.pid} on ${os.hostname()})`,
    );

    await store.close();
    expect(await exists(path.join(dir, LOCK_NAME))).toBe(false);
    const again = await openStore(config, createLogger('silent'));
    await again.close();
  });

  it('neither :memory: nor a store opened without `lock` takes a lock', async () => {
    const dir = await tmp();
    const a = await SqliteStore.open(dir);
    const b = await SqliteStore.open(dir);
    expect(await exists(path.join(dir, LOCK_NAME))).toBe(false);
    await a.close();
    await b.close();
    const mem = await openStore(loadConfig({ DATA_DIR: ':memory:' }), createLogger('silent'));
    await mem.close();
  });

  it('takes over at once the lock of a process of this host that no longer runs (kill -9)', async () => {
    const dir = await tmp();
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    const deadPid = Number(dead.stdout);
    await fs.mkdir(path.join(dir, LOCK_NAME)); // fresh mtime: not stale by age
    await fs.writeFile(path.join(dir, OWNER_NAME), JSON.stringify({ pid: deadPid, host: os.hostname(), since: 1 }));
    const lock = await lockDataDir(dir);
    expect(JSON.parse(await fs.readFile(path.join(dir, OWNER_NAME), 'utf8'))).toMatchObject({ pid: process.pid });
    await lock.release();
    expect(await exists(path.join(dir, LOCK_NAME))).toBe(false);
  });

  it.runIf(process.platform === 'linux')(
    'takes over at once the lock of a killed process that is still a zombie (not yet reaped by its parent)',
    async () => {
      const dir = await tmp();
      // the background sleep's parent execs into another sleep that never reaps it: killed, it stays a zombie
      const parent = spawn('sh', ['-c', 'sleep 60 & echo $!; exec sleep 60'], { stdio: ['ignore', 'pipe', 'ignore'] });
      try {
        const zombiePid = Number(
          await new Promise<string>((resolve) =>
            parent.stdout!.once('data', (d: Buffer) => resolve(d.toString().trim())),
          ),
        );
        process.kill(zombiePid, 'SIGKILL');
        // a zombie, or (when the shell reaped it before its exec) gone: either way a dead owner
        const state = async () => await fs.readFile(`/proc/${zombiePid}/stat`, 'utf8').catch(() => ') gone');
        // up to ~15 s: generous, as other test files load the machine
        for (let i = 0; i < 1500 && !/\) (Z|gone)/.test(await state()); i++)
          await new Promise((r) => setTimeout(r, 10));
        expect(await state()).toMatch(/\) (Z|gone)/);
        await fs.mkdir(path.join(dir, LOCK_NAME)); // fresh mtime: not stale by age
        await fs.writeFile(
          path.join(dir, OWNER_NAME),
          JSON.stringify({ pid: zombiePid, host: os.hostname(), since: 1 }),
        );
        const lock = await lockDataDir(dir);
        expect(JSON.parse(await fs.readFile(path.join(dir, OWNER_NAME), 'utf8'))).toMatchObject({ pid: process.pid });
        await lock.release();
      } finally {
        parent.kill('SIGKILL');
      }
    },
  );

  it('takes over a stale lock whose owner is unknown (not refreshed for longer than the stale time)', async () => {
    const dir = await tmp();
    await fs.mkdir(path.join(dir, LOCK_NAME));
    const old = new Date(Date.now() - 60_000);
    await fs.utimes(path.join(dir, LOCK_NAME), old, old);
    const lock = await lockDataDir(dir, { staleMs: 2000 });
    expect(await exists(path.join(dir, LOCK_NAME))).toBe(true);
    await lock.release();
    await lock.release(); // idempotent
  });
});
