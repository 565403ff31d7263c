/**
 * `npm run bench:push`: delivery of live updates at scale.
 *
 * Starts the built service as a child process (SQLite store on disk, defaults otherwise),
 * connects BENCH_CLIENTS (1,000) Socket.IO clients with the partner's master key — all in one
 * partner's room — spread over BENCH_CLIENT_WORKERS worker threads (BENCH_SIO_CLIENTS of them, 20,
 * use socket.io-client; the others speak the same protocol on a bare WebSocket, see bareClient), then produces
 * BENCH_UPDATES_PER_S (100) updates a second for BENCH_DURATION_S (20) seconds: resting LIMIT
 * orders over REST, each persisted twice (SUBMITTED on creation, OPEN once the venue acknowledged
 * it), so 50 orders a second. Prints:
 * - delivery latency p50 / p99 / max, from the record's `updated_at` (stamped by the server just
 *   before the write, so the figure includes the write) to its arrival at the client — target
 *   p99 < 50 ms;
 * - updates lost: (updates produced × clients) − updates received, and revisions out of order or
 *   duplicated — target 0;
 * - frames (WebSocket messages) received per client and the service's CPU time per 1,000 deliveries
 *   (from /proc: all its threads), the figure to judge by when the machine is shared.
 *
 * BENCH_BATCH_MS (default 10; 0 = separate events): the clients ask for `updates.batch` with that
 * window (`auth.batch_ms`), so each room's updates reach each client in one frame per window.
 *
 * Cores: with more than 2 cores the service is pinned with `taskset` to its own
 * BENCH_SERVICE_CORES (default 2: the first two this process may use) and this process, clients
 * included, to the others, so
 * that they share nothing; with 2 cores or fewer (or without taskset) both share the machine and
 * the figures include the clients' CPU (printed).
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { io, type Socket } from 'socket.io-client';
import WebSocket from 'ws';
import type { BatchPush, ClientToServerEvents, OrderPush, ServerToClientEvents } from '../api/push-events.js';
import { spawnService } from '../test/process.js';
import { cpuMs } from './proc.js';

const KEY = 'pts_bench_master_key_0123456789abcdef';
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 1000);
const WORKERS = Number(process.env.BENCH_CLIENT_WORKERS ?? 2);
const RATE = Number(process.env.BENCH_UPDATES_PER_S ?? 100);
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 20);
/** Clients that use socket.io-client itself; the rest speak the same protocol on a bare WebSocket (see below). */
const SIO_CLIENTS = Number(process.env.BENCH_SIO_CLIENTS ?? 20);
/** `auth.batch_ms` the clients ask for; 0: separate `order.updated` events. */
const BATCH_MS = Number(process.env.BENCH_BATCH_MS ?? 10);
const SERVICE_CORES = Number(process.env.BENCH_SERVICE_CORES ?? 2);
const BUCKET_MS = 0.5;
const BUCKETS = 20_000; // 10 s

interface WorkerReport {
  received: number;
  /** WebSocket messages carrying updates (one per event, or one per `updates.batch`). */
  frames: number;
  outOfOrder: number;
  histogram: number[];
  /** The socket.io-client clients' own figures. */
  sio: { received: number; histogram: number[] };
}

/**
 * A Socket.IO client on a bare WebSocket (Engine.IO 4 / Socket.IO 5 framing: `0` open, `2` ping →
 * `3` pong, `40/ns,{auth}` connect, `42/ns,[event, payload, offset]` events). It receives exactly
 * what socket.io-client would, at a fraction of its CPU, so that 1,000 of them and the service fit
 * on one 2-core machine; the service cannot tell them apart.
 */
function bareClient(baseUrl: string, onOrder: (o: OrderPush) => void, onFrame: () => void): Promise<WebSocket> {
  const prefix = '42/v2/trade,';
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${baseUrl.replace(/^http/, 'ws')}/socket.io/?EIO=4&transport=websocket`, {
      perMessageDeflate: false,
    });
    ws.on('message', (data: Buffer) => {
      const text = data.toString();
      if (text.startsWith(prefix)) {
        onFrame();
        const [event, payload] = JSON.parse(text.slice(prefix.length)) as [string, unknown];
        if (event === 'order.updated') onOrder(payload as OrderPush);
        else if (event === 'updates.batch')
          for (const r of (payload as BatchPush).records) if (r.event === 'order.updated') onOrder(r.data);
      } else if (text === '2') ws.send('3');
      else if (text[0] === '0') ws.send(`40/v2/trade,${JSON.stringify(auth())}`);
      else if (text.startsWith('40/v2/trade,')) resolve(ws);
      else if (text.startsWith('44/v2/trade,')) reject(new Error(text));
    });
    ws.once('error', reject);
  });
}

/** The handshake's auth: the key, and the batch window unless separate events are measured. */
const auth = () => (BATCH_MS > 0 ? { token: KEY, batch_ms: BATCH_MS } : { token: KEY });

/** Worker: holds its share of the clients and measures what they receive. */
async function clientWorker(): Promise<void> {
  const { baseUrl, count, sioCount } = workerData as { baseUrl: string; count: number; sioCount: number };
  const histogram = new Uint32Array(BUCKETS);
  const sioHistogram = new Uint32Array(BUCKETS);
  let received = 0;
  let frames = 0;
  const onFrame = () => void frames++;
  let sioReceived = 0;
  let outOfOrder = 0;
  const sockets: Array<Socket<ServerToClientEvents, ClientToServerEvents> | WebSocket> = [];
  /** A receiver that records latency and checks revisions per order. */
  const receiver = (sio: boolean) => {
    const last = new Map<string, number>();
    return (o: OrderPush) => {
      const bucket = Math.min(BUCKETS - 1, Math.max(0, Math.floor((Date.now() - o.updated_at) / BUCKET_MS)));
      histogram[bucket]!++;
      received++;
      if (sio) {
        sioHistogram[bucket]!++;
        sioReceived++;
      }
      if ((last.get(o.order_id) ?? 0) + 1 !== o.revision) outOfOrder++;
      last.set(o.order_id, o.revision);
    };
  };
  for (let i = 0; i < count; i += 50) {
    await Promise.all(
      Array.from({ length: Math.min(50, count - i) }, (_, j) =>
        i + j < sioCount
          ? new Promise<void>((resolve, reject) => {
              const s: Socket<ServerToClientEvents, ClientToServerEvents> = io(`${baseUrl}/v2/trade`, {
                auth: auth(),
                transports: ['websocket'],
                forceNew: true,
                reconnection: false,
              });
              const rx = receiver(true);
              s.on('order.updated', (o) => {
                onFrame();
                rx(o);
              });
              s.on('updates.batch', (b) => {
                onFrame();
                for (const r of b.records) if (r.event === 'order.updated') rx(r.data);
              });
              s.once('connect', () => resolve());
              s.once('connect_error', reject);
              sockets.push(s);
            })
          : bareClient(baseUrl, receiver(false), onFrame).then((ws) => void sockets.push(ws)),
      ),
    );
  }
  parentPort!.postMessage({ type: 'connected' });
  parentPort!.on('message', (m: { type: string }) => {
    if (m.type === 'count') parentPort!.postMessage({ type: 'count', received });
    if (m.type === 'report') {
      for (const s of sockets) {
        if (s instanceof WebSocket) s.terminate();
        else s.disconnect();
      }
      parentPort!.postMessage({
        type: 'report',
        report: {
          received,
          frames,
          outOfOrder,
          histogram: [...histogram],
          sio: { received: sioReceived, histogram: [...sioHistogram] },
        } satisfies WorkerReport,
      });
    }
  });
}

function percentile(h: number[], total: number, p: number): number {
  let seen = 0;
  for (let i = 0; i < h.length; i++) {
    seen += h[i]!;
    if (seen >= total * p) return (i + 1) * BUCKET_MS;
  }
  return Infinity;
}

/** The cores this process may run on (its affinity list, from taskset), or null without taskset. */
function allowedCores(): number[] | null {
  try {
    const list = execFileSync('taskset', ['-c', '-p', String(process.pid)], { encoding: 'utf8' })
      .split(':')
      .pop()!
      .trim();
    return list.split(',').flatMap((part) => {
      const [a, b] = part.split('-').map(Number) as [number, number | undefined];
      return Array.from({ length: (b ?? a) - a + 1 }, (_, i) => a + i);
    });
  } catch {
    return null;
  }
}

/** Pins every thread of `pid` to `cores` ("0,1"); false when taskset is missing or refuses. */
function pin(pid: number, cores: string): boolean {
  try {
    execFileSync('taskset', ['-a', '-p', '-c', cores, String(pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

async function main(): Promise<void> {
  const allowed = allowedCores();
  const cores = allowed?.length ?? os.availableParallelism();
  console.log(
    `bench:push — ${CLIENTS} clients in one partner's room (${WORKERS} client threads), ${RATE} updates/s ` +
      `for ${DURATION_S} s, ` +
      (BATCH_MS > 0 ? `updates.batch every ${BATCH_MS} ms (auth.batch_ms)` : 'separate order.updated events') +
      `, node ${process.version}, ${cores} cores`,
  );
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-push-'));
  const svc = await spawnService(
    {
      DATA_DIR: dataDir,
      MASTER_API_KEY: KEY,
      SIM_REPLAY: 'off',
      LOG_LEVEL: 'warn',
      RATE_LIMIT_PER_MIN: '0',
      SIM_INITIAL_PUSD: '100000000',
    },
    30_000,
    process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [],
  );
  const servicePid = svc.child.pid!;
  const serviceCores = Math.max(1, Math.min(SERVICE_CORES, cores - 1));
  const [mine, theirs] = [allowed?.slice(0, serviceCores).join(','), allowed?.slice(serviceCores).join(',')];
  const pinned = cores > 2 && allowed !== null && pin(servicePid, mine!) && pin(process.pid, theirs!);
  if (pinned)
    console.log(`cores: service pinned to ${mine}, clients and load to ${theirs} (taskset -a): they share no core`);
  else
    console.log(
      `cores: ${cores}${cores > 2 ? ' (taskset unavailable)' : ''}: service and the ${CLIENTS} ` +
        `clients share them — the latency figures include the clients' CPU`,
    );
  const workers: Worker[] = [];
  try {
    const H = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };
    await fetch(`${svc.baseUrl}/v2/trade/users`, {
      method: 'POST',
      headers: { ...H, 'idempotency-key': randomUUID() },
      body: JSON.stringify({ partner_user_id: 'pusher' }),
    });
    const markets = (await (await fetch(`${svc.baseUrl}/v2/trade/markets?limit=100`, { headers: H })).json()) as {
      markets: { tokens: { token_id: string }[]; tick_size: string }[];
    };
    const tokens = markets.markets.filter((m) => m.tick_size === '0.01').map((m) => m.tokens[0]!.token_id);

    const t0 = Date.now();
    const messages: Array<(m: { type: string; received?: number; report?: WorkerReport }) => void> = [];
    for (let w = 0; w < WORKERS; w++) {
      const count = Math.floor(CLIENTS / WORKERS) + (w < CLIENTS % WORKERS ? 1 : 0);
      const sioCount = Math.floor(SIO_CLIENTS / WORKERS) + (w < SIO_CLIENTS % WORKERS ? 1 : 0);
      // the worker runs this file too, through tsx's loader registered inside the worker
      const boot =
        `import('tsx/esm/api').then(({ register }) => { register(); return ` +
        `import(${JSON.stringify(import.meta.url)}); })`;
      const worker = new Worker(boot, { eval: true, workerData: { baseUrl: svc.baseUrl, count, sioCount } });
      workers.push(worker);
      worker.on('message', (m) => messages[w]?.(m));
      worker.on('error', (err) => console.error('client worker failed', err));
    }
    const ask = <T>(w: number, type: string, reply: string): Promise<T> =>
      new Promise((resolve) => {
        messages[w] = (m) => m.type === reply && resolve(m as T);
        if (type) workers[w]!.postMessage({ type });
      });
    await Promise.all(workers.map((_, w) => ask(w, '', 'connected')));
    console.log(`connected ${CLIENTS} clients in ${((Date.now() - t0) / 1000).toFixed(1)} s`);

    // produce: one resting order every 2 / RATE seconds (2 updates each)
    const orders = Math.round((RATE / 2) * DURATION_S);
    const intervalMs = 2000 / RATE;
    const cpu0 = cpuMs(servicePid);
    let produced = 0;
    let failed = 0;
    const start = performance.now();
    const inFlight: Promise<void>[] = [];
    for (let i = 0; i < orders; i++) {
      const due = start + i * intervalMs;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const body = {
        symbol: tokens[i % tokens.length],
        side: 'buy',
        type: 'LIMIT',
        price: `0.0${1 + (i % 5)}`,
        size: '5',
      };
      inFlight.push(
        fetch(`${svc.baseUrl}/v2/trade/order`, {
          method: 'POST',
          headers: { ...H, 'x-partner-user-id': 'pusher', 'idempotency-key': randomUUID() },
          body: JSON.stringify(body),
        }).then(async (r) => {
          const o = (await r.json()) as { revision?: number };
          if (r.status === 200 && o.revision) produced += o.revision;
          else failed++;
        }),
      );
    }
    await Promise.all(inFlight);
    const elapsedS = (performance.now() - start) / 1000;
    // wait until every client has everything (or 10 s of silence)
    const expected = produced * CLIENTS;
    let got = 0;
    for (let quiet = 0, prev = -1; quiet < 20;) {
      got = (await Promise.all(workers.map((_, w) => ask<{ received: number }>(w, 'count', 'count')))).reduce(
        (a, m) => a + m.received,
        0,
      );
      if (got >= expected) break;
      quiet = got === prev ? quiet + 1 : 0;
      prev = got;
      await new Promise((r) => setTimeout(r, 500));
    }
    const cpu1 = cpuMs(servicePid);
    const reports = (
      await Promise.all(workers.map((_, w) => ask<{ report: WorkerReport }>(w, 'report', 'report')))
    ).map((m) => m.report);
    const histogram = new Array<number>(BUCKETS).fill(0);
    const sioHistogram = new Array<number>(BUCKETS).fill(0);
    let received = 0;
    let frames = 0;
    let sioReceived = 0;
    let outOfOrder = 0;
    for (const r of reports) {
      received += r.received;
      frames += r.frames;
      sioReceived += r.sio.received;
      outOfOrder += r.outOfOrder;
      r.histogram.forEach((n, i) => (histogram[i]! += n));
      r.sio.histogram.forEach((n, i) => (sioHistogram[i]! += n));
    }
    let max = 0;
    histogram.forEach((n, i) => n && (max = (i + 1) * BUCKET_MS));
    console.log(
      `produced ${produced} updates in ${elapsedS.toFixed(1)} s (${(produced / elapsedS).toFixed(0)} ` +
        `updates/s; ${failed} requests failed), ${expected} deliveries expected`,
    );
    console.log(
      `delivery latency persist → client: p50 ${percentile(histogram, received, 0.5).toFixed(1)} ms, ` +
        `p99 ${percentile(histogram, received, 0.99).toFixed(1)} ms, max ${max.toFixed(1)} ms (target p99 < 50 ms)`,
    );
    if (SIO_CLIENTS > 0)
      console.log(
        `  of which the ${SIO_CLIENTS} socket.io-client clients: ` +
          `p50 ${percentile(sioHistogram, sioReceived, 0.5).toFixed(1)} ms, ` +
          `p99 ${percentile(sioHistogram, sioReceived, 0.99).toFixed(1)} ms`,
      );
    console.log(
      `updates lost: ${expected - received} of ${expected}; out of order or duplicated: ${outOfOrder} (target 0)`,
    );
    console.log(
      `frames: ${(frames / CLIENTS / elapsedS).toFixed(1)} a second per client ` +
        `(${(received / Math.max(1, frames)).toFixed(2)} updates a frame)`,
    );
    if (cpu0 !== null && cpu1 !== null)
      console.log(
        `service CPU: ${(((cpu1 - cpu0) * 1000) / Math.max(1, received)).toFixed(1)} ms per 1,000 deliveries ` +
          `(${((cpu1 - cpu0) / 1000 / elapsedS).toFixed(2)} cores busy, orders and pushes)`,
      );
  } finally {
    for (const w of workers) await w.terminate();
    svc.child.kill('SIGTERM');
    await svc.exited;
    await fs.rm(dataDir, { recursive: true, force: true });
  }
}

if (isMainThread) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
} else {
  void clientWorker();
}
