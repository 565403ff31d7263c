import { readFileSync } from 'node:fs';

/**
 * utime + stime (ms) of a /proc `stat` file (a process's or a thread's); null when it cannot be read
 * (off Linux). The fields are counted after the command name, which may hold spaces and parentheses.
 */
function statCpuMs(file: string): number | null {
  try {
    const stat = readFileSync(file, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) * 10; // in clock ticks of 10 ms
  } catch {
    return null;
  }
}

/** CPU time (ms) a process has used so far (all its threads), from /proc (Linux); null elsewhere. */
export function cpuMs(pid: number): number | null {
  return statCpuMs(`/proc/${pid}/stat`);
}

/**
 * CPU time (ms) a process's main thread (the event loop's) has used so far, from /proc (Linux); null
 * elsewhere. The rest of {@link cpuMs} is its other threads': V8's GC and compiler helpers, libuv's
 * pool, workers.
 */
export function mainCpuMs(pid: number): number | null {
  return statCpuMs(`/proc/${pid}/task/${pid}/stat`);
}

/**
 * CPU time of the main thread (the one the event loop runs on) so far, ms, from /proc (Linux; 0
 * elsewhere): what bounds the wall time, the other threads (GC, compiler, fsyncs, the
 * checkpointer) run beside it.
 */
export function mainThreadCpuMs(): number {
  return statCpuMs('/proc/thread-self/stat') ?? 0;
}

/**
 * Bytes a process has caused to be written to storage so far (`write_bytes` of /proc/<pid>/io: the
 * page cache's writes on its behalf, its own and its threads', checkpoints included), Linux; null
 * elsewhere or when not readable.
 */
export function writtenBytes(pid: number): number | null {
  try {
    const m = /^write_bytes: (\d+)$/m.exec(readFileSync(`/proc/${pid}/io`, 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

/**
 * Bytes handed to `write` so far (`wchar` of /proc/<scope>/io, Linux; 0 elsewhere): by the whole
 * process (`self`) or by the calling thread alone (`thread-self`). On a SQLite store on disk the
 * main thread writes the WAL frames of the commits, and the checkpointer's worker thread the copies
 * into the database file.
 */
export function charsWritten(scope: 'self' | 'thread-self' = 'self'): number {
  try {
    return Number(/^wchar: (\d+)$/m.exec(readFileSync(`/proc/${scope}/io`, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0;
  }
}

/**
 * A module of the service as `npm run build` compiled it into dist/ (what `npm start` runs), typed
 * as its source by the caller: the engine a benchmark measures in its own process is the production
 * build, not tsx's on-the-fly transform of the source (which wraps functions to keep their names,
 * some 1–3 % of the CPU). The benchmark's npm script builds it first; run by hand, `npm run build` before.
 * @param module - its path under dist/, e.g. `engine/config.js`.
 */
export async function built<T>(module: string): Promise<T> {
  return (await import(new URL(`../dist/${module}`, import.meta.url).href)) as T;
}
