import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import net from 'node:net';
import { SERVICE_NODE_FLAGS } from '../api/node-flags.js';

/** The service's entry point, as `npm start` runs it (with {@link SERVICE_NODE_FLAGS}). */
const SERVICE_ENTRY = 'dist/api/main.js';

/** A free loopback port. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

/**
 * Runs `node <args>` to its exit: exit code and everything it wrote (a MONGODB_URI of the test run
 * is not inherited; LOG_LEVEL info, HOST 127.0.0.1 and SIM_REPLAY off unless `env` says otherwise).
 */
export function runToExit(args: string[], env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const inherited: NodeJS.ProcessEnv = { ...process.env };
    delete inherited.MONGODB_URI;
    // the service's entry runs with the flags npm start gives it
    const flags = args[0] === SERVICE_ENTRY ? SERVICE_NODE_FLAGS : [];
    const child = spawn(process.execPath, [...flags, ...args], {
      env: { ...inherited, LOG_LEVEL: 'info', HOST: '127.0.0.1', SIM_REPLAY: 'off', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('exit', (code) => resolve({ code, out }));
  });
}

/** The built service (`dist/api/main.js`) as a child process. */
export interface ServiceProcess {
  child: ChildProcess;
  baseUrl: string;
  output: () => string;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
}

/**
 * Starts `npm start`'s entry point with `env` and waits until /healthz answers 200 (up to
 * `timeoutMs`: generous, as a child starting on a loaded machine is slow). The child runs
 * on the SQLite store under the `DATA_DIR` given unless `env` itself sets `MONGODB_URI`: a
 * `MONGODB_URI` of the test run's own environment is not inherited (these suites are about the
 * process and its `DATA_DIR`; on one shared database their services would hold each other's engine lease).
 */
export async function spawnService(
  env: Record<string, string>,
  timeoutMs = 30_000,
  nodeArgs: string[] = [],
): Promise<ServiceProcess> {
  // `env.PORT` starts it on that port (a restart where its clients were connected)
  const port = env.PORT !== undefined ? Number(env.PORT) : await freePort();
  const inherited: NodeJS.ProcessEnv = { ...process.env };
  delete inherited.MONGODB_URI;
  const child = spawn(process.execPath, [...SERVICE_NODE_FLAGS, ...nodeArgs, SERVICE_ENTRY], {
    env: { ...inherited, LOG_LEVEL: 'warn', HOST: '127.0.0.1', PORT: String(port), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const baseUrl = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`service exited early (${child.exitCode}):\n${out}`);
    try {
      const r = await fetch(`${baseUrl}/healthz`);
      if (r.status === 200) break;
    } catch {
      /* not up yet */
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`service not healthy within ${timeoutMs} ms:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { child, baseUrl, output: () => out, exited };
}

/**
 * The master key a service generated on its first start: the line after the
 * `MASTER_API_KEY for partner … (shown once` header it printed (the key is written nowhere else).
 * Waits up to 15 s for it: the child's stdout may reach this process after its /healthz answered.
 */
export async function printedMasterKey(svc: ServiceProcess): Promise<string> {
  return printed(svc, 'master key', (lines) => {
    const at = lines.findIndex((l) => l.startsWith('MASTER_API_KEY for partner '));
    return at >= 0 && lines[at + 1]?.trim() ? lines[at + 1]!.trim() : undefined;
  });
}

/**
 * What `find` reads in the lines a spawned service printed so far, once it reads something: waits up
 * to 15 s, since the child's stdout (pino writes asynchronously) may reach this process after its
 * /healthz answered.
 * @param what - named in the error when nothing is found in time.
 */
export async function printed<T>(
  svc: ServiceProcess,
  what: string,
  find: (lines: string[]) => T | undefined,
): Promise<T> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const found = find(svc.output().split('\n'));
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`no ${what} printed:\n${svc.output()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * A JSON call on a spawned service as one partner user (with the key given; on writes the
 * Idempotency-Key given, else a fresh one).
 */
export type ProcessCall = (
  method: string,
  path: string,
  body?: unknown,
  idempotencyKey?: string,
) => Promise<{ status: number; body: any }>;

/** {@link ProcessCall} against `baseUrl` with `key`, as partner user `user`. */
export function processCaller(baseUrl: string, key: string, user: string): ProcessCall {
  return async (method, p, body, idempotencyKey) => {
    const r = await fetch(baseUrl + p, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        'x-partner-user-id': user,
        ...(method === 'GET' ? {} : { 'idempotency-key': idempotencyKey ?? randomUUID() }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: r.status, body: (await r.json()) as any };
  };
}

/**
 * Waves of concurrent `POST /v2/trade/order` of `orders` (at most 200 waves) until a request gets
 * no answer (the process died): the order ids answered 200 are in `acknowledged` as they come.
 */
export function orderBurst(
  call: ProcessCall,
  orders: readonly unknown[],
): { acknowledged: Set<string>; sent: () => number; done: Promise<void> } {
  const acknowledged = new Set<string>();
  let sent = 0;
  const done = (async () => {
    for (let wave = 0; wave < 200; wave++) {
      sent += orders.length;
      const results = await Promise.all(orders.map((o) => call('POST', '/v2/trade/order', o).catch(() => null)));
      for (const r of results) if (r?.status === 200) acknowledged.add(r.body.order_id);
      if (results.some((r) => r === null)) return;
    }
  })();
  return { acknowledged, sent: () => sent, done };
}

/**
 * What a kill -9 test leaves behind, cleaned up: the child service killed (and awaited) if it still
 * runs, the in-process service on its folder closed, the data folder removed.
 */
export async function cleanUpCrashTest(
  child: ServiceProcess | null,
  svc: { close(): Promise<void> } | null | undefined,
  dir: string,
): Promise<void> {
  if (child && child.child.exitCode === null) {
    child.child.kill('SIGKILL');
    await child.exited;
  }
  await svc?.close();
  if (dir) await fs.rm(dir, { recursive: true, force: true });
}

/**
 * Runs `script` (ES module code, run from the worktree: it imports
 * dist/) with `DIR` set; resolves once its output contains `until`.
 */
export function runUntil(
  script: string,
  dir: string,
  until: string,
): Promise<{ child: ChildProcess; out: () => string; exited: Promise<unknown> }> {
  const child = spawn(process.execPath, ['-e', script], {
    env: { ...process.env, DIR: dir },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise((resolve) => child.on('exit', resolve));
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (d) => {
      out += d;
      if (out.includes(until)) resolve({ child, out: () => out, exited });
    });
    child.on('exit', () => reject(new Error(`child exited early: ${out}`)));
  });
}
