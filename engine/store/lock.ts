import { readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import lockfile from 'proper-lockfile';
import { DATA_DIR_MODE, writePrivateFile } from './data-dir.js';

/** The lock's directory inside `DATA_DIR` (proper-lockfile's lock is an atomic `mkdir`). */
export const LOCK_NAME = 'service.lock';
/** Who holds the lock: `{pid, host, since}` (JSON), next to the lock. */
export const OWNER_NAME = 'service.lock.owner';

/** A lock refreshed less recently than this (ms) belongs to a dead process and is taken over. */
export const LOCK_STALE_MS = 10_000;

/** Another process holds the SQLite store's folder. Its message is the one line to print. */
export class DataDirLockedError extends Error {
  constructor(
    readonly dir: string,
    readonly owner: LockOwner | null,
  ) {
    super(
      `DATA_DIR ${dir} is in use by another process${owner ? ` (pid ${owner.pid} on ${owner.host})` : ''}: ` +
        'the SQLite store belongs to one process; stop it, or give this one another DATA_DIR (or MONGODB_URI)',
    );
    this.name = 'DataDirLockedError';
  }
}

/** The recorded holder of a lock. */
export interface LockOwner {
  pid: number;
  host: string;
  /** Epoch ms the lock was taken. */
  since: number;
}

/** A held lock on a data folder. */
export interface DataDirLock {
  readonly dir: string;
  /** Releases the lock (idempotent). */
  release(): Promise<void>;
}

/** Options of {@link lockDataDir}. */
export interface LockOptions {
  /** Staleness threshold in ms (default {@link LOCK_STALE_MS}; proper-lockfile's minimum is 2000). */
  staleMs?: number;
  /**
   * Called when the lock could not be kept fresh (the process stalled longer than the stale time,
   * or the lock was removed): another process may now own the folder. Default: throw, which the
   * process's `uncaughtException` handler turns into a fatal exit.
   */
  onCompromised?: (err: Error) => void;
}

/** Folders whose lock this process holds. */
const heldHere = new Set<string>();

async function readOwner(dir: string): Promise<LockOwner | null> {
  try {
    const o = JSON.parse(await fs.readFile(path.join(dir, OWNER_NAME), 'utf8')) as LockOwner;
    return Number.isInteger(o.pid) && typeof o.host === 'string' ? o : null;
  } catch {
    return null;
  }
}

/** Whether `owner` certainly is a process that no longer runs (same host, pid gone or ourselves). */
function ownerIsDead(dir: string, owner: LockOwner | null): boolean {
  if (!owner || owner.host !== os.hostname()) return false;
  // This very pid: held here (refuse) or a former life of the pid (a container restarted): dead.
  if (owner.pid === process.pid) return !heldHere.has(dir);
  return processIsGone(owner.pid);
}

/**
 * Whether the process `pid` of this host certainly no longer runs: signal 0 finds no such process,
 * or it is a zombie (killed a moment ago, `kill -9`, and not yet reaped by its parent: on Linux
 * /proc says so, state Z or X; a zombie holds nothing). False for a live process and for
 * `process.pid` itself (callers decide about their own pid).
 */
export function processIsGone(pid: number): boolean {
  if (pid === process.pid) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
  return isZombie(pid);
}

/** Whether `pid` is a zombie (or dead) process according to /proc (false where /proc is absent). */
function isZombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state === 'Z' || state === 'X';
  } catch {
    return false;
  }
}

/**
 * Takes the exclusive lock of a SQLite store's folder for this process's life (proper-lockfile:
 * an atomic `mkdir` of `<dir>/service.lock` whose mtime is refreshed every `staleMs / 2`). A lock
 * left by a dead process is taken over: at once when its recorded owner is a process of this host
 * that no longer runs (a `kill -9` and restart), otherwise once it has not been refreshed for
 * `staleMs`. The lock is removed by {@link DataDirLock.release} and, best effort, at process exit.
 * @param dir - absolute folder, created when missing.
 * @throws {DataDirLockedError} when a live process holds the folder.
 */
export async function lockDataDir(dir: string, options: LockOptions = {}): Promise<DataDirLock> {
  const staleMs = Math.max(options.staleMs ?? LOCK_STALE_MS, 2000);
  await fs.mkdir(dir, { recursive: true, mode: DATA_DIR_MODE });
  const lockPath = path.join(dir, LOCK_NAME);
  const onCompromised =
    options.onCompromised ??
    ((err: Error) => {
      throw new Error(`lost the lock on DATA_DIR ${dir} (${err.message}): another process may now use it; stopping`);
    });
  const attempt = (retries: number) =>
    lockfile.lock(dir, {
      lockfilePath: lockPath,
      stale: staleMs,
      retries: retries ? { retries, factor: 1, minTimeout: 250, maxTimeout: 250 } : 0,
      onCompromised,
    });
  let release: () => Promise<void>;
  try {
    release = await attempt(0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ELOCKED') throw err;
    const owner = await readOwner(dir);
    if (ownerIsDead(dir, owner)) {
      // Its holder is gone: age the lock so proper-lockfile's own stale takeover applies now.
      await fs.utimes(lockPath, 0, 0).catch(() => {});
    } else if (owner && owner.host === os.hostname()) {
      throw new DataDirLockedError(dir, owner);
    }
    try {
      // Unknown or remote holder: wait until its lock is either refreshed (alive) or stale (dead).
      release = await attempt(Math.ceil(staleMs / 250) + 4);
    } catch (again) {
      if ((again as NodeJS.ErrnoException).code === 'ELOCKED') throw new DataDirLockedError(dir, await readOwner(dir));
      throw again;
    }
  }
  // proper-lockfile makes its folder with the process's umask: closed to other users like the rest of DATA_DIR
  await fs.chmod(lockPath, DATA_DIR_MODE).catch(() => {});
  const owner: LockOwner = { pid: process.pid, host: os.hostname(), since: Date.now() };
  await writePrivateFile(path.join(dir, OWNER_NAME), JSON.stringify(owner));
  heldHere.add(dir);
  let released = false;
  return {
    dir,
    async release() {
      if (released) return;
      released = true;
      heldHere.delete(dir);
      await fs.rm(path.join(dir, OWNER_NAME), { force: true });
      await release().catch((e: unknown) => {
        if ((e as NodeJS.ErrnoException).code !== 'ERELEASED') throw e;
      });
    },
  };
}
