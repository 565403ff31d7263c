/**
 * `npm run bench:orders`: drives POST /v2/trade/order with LIMIT orders (auth,
 * validation, actor, matching, persistence) over loopback with autocannon, and in the same run a
 * bare Express JSON echo; prints both throughputs, p50/p99 latency and the ratio, once with the
 * SQLite store in memory and once on disk. An echo is measured right before and right after each
 * service's runs (a new process each time, warmed up as each service is, with the service's Node flags:
 * api/node-flags.ts), and each ratio is taken to
 * the mean of those two: the machine's speed drifts by tens of percent over minutes (see
 * `npm run bench:calib`), and an echo measured a minute earlier would put that drift into the ratio.
 * Targets at 50 connections: the service's CPU per order ≤ 2× the echo's per request in memory, ≤ 3×
 * on disk, p99 < 50 ms. Each order is persisted before its response (by construction: the actor host
 * writes before it resolves).
 *
 * Server and echo run as child processes so that the load generator does not share their core.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { SERVICE_NODE_FLAGS } from '../api/node-flags.js';
import { freePort, spawnService } from '../test/process.js';
import { cpuMs, mainCpuMs, writtenBytes } from './proc.js';

/** Connection counts, one run each (`BENCH_CONNECTIONS=50,200,500`); the first also runs the echo. */
const CONNECTION_LEVELS = (process.env.BENCH_CONNECTIONS ?? '50').split(',').map(Number);
/** autocannon's per-request timeout (s): a request unanswered this long counts as a timeout. */
const TIMEOUT_S = Number(process.env.BENCH_TIMEOUT_S ?? 10);
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 10);
/**
 * `BENCH_WARMUP_S`: seconds of the same load sent to the echo and to each service before its measured
 * runs, not counted (default 3; 0: none): V8 compiles the service's code in its first seconds under load,
 * on threads whose CPU the per-request figure would otherwise count.
 */
const WARMUP_S = Number(process.env.BENCH_WARMUP_S ?? 3);
/**
 * `BENCH_RATE`: requests a second over all connections (autocannon's `overallRate`; default: as
 * fast as answered). Below saturation the CPU per request depends on the code, not on what else
 * the cores run, so two builds compare on a busy machine.
 */
const RATE = process.env.BENCH_RATE ? Number(process.env.BENCH_RATE) : undefined;
const USERS = 50;
const KEY = 'pts_bench_master_key_0123456789abcdef';

interface Result {
  rps: number;
  p50: number;
  p99: number;
  max: number;
  /** Requests without an HTTP answer (socket errors and timeouts). */
  errors: number;
  timeouts: number;
  /** Socket errors by code (`ECONNRESET`, …) and timeouts. */
  errorKinds: Record<string, number>;
  non2xx: number;
  /** Answers by HTTP status. */
  statuses: Record<string, number>;
  /** CPU time of the server process per request (µs, all its threads); null off Linux. */
  cpuUsPerReq: number | null;
  /** Of which the main thread's (µs); the rest is V8's GC and compiler threads, libuv's pool. */
  mainUsPerReq: number | null;
  /** Bytes the server process wrote to storage per request (WAL, checkpoints); null off Linux. */
  bytesPerReq: number | null;
  /** Wall-clock span of the run (epoch ms), to pick its event-loop blocks. */
  fromMs: number;
  toMs: number;
}

/** One event-loop block as `bench/loop-blocks.mjs` records it. */
interface LoopBlock {
  atMs: number;
  ms: number;
  /** CPU time of the process (all threads) during the block, ms. */
  cpuMs: number;
  fromUs: number;
  toUs: number;
  gc: { kind: string; ms: number }[];
}

/** What the service's tracer wrote (see `bench/loop-blocks.mjs`). */
interface Traced {
  blocks: LoopBlock[];
  slowest?: { atMs: number; ms: number }[];
  /** `[end atMs, ms]` of every request. */
  requests?: number[][];
  /** `[atMs, share of the last second the event loop was busy]`. */
  elu?: number[][];
  runs?: { fromMs: number; toMs: number }[];
}

/** The service's event-loop block tracer (preloaded; see the file). */
const LOOP_BLOCKS_MODULE = fileURLToPath(new URL('./loop-blocks.mjs', import.meta.url));
/** Block thresholds of the printed histogram (ms). */
const BLOCK_BINS = [10, 20, 50, 100];

/**
 * `event-loop blocks ≥10 ms: 12  ≥20: 3  ≥50: 0  ≥100: 0`
 * `(by CPU ≥10: 9  ≥20: 1  ≥50: 0; max 24.1 ms; …)`:
 * the blocks that ended within the run. Less noisy than p99 on a shared machine: a block holds
 * every in-flight request, whatever else the cores do.
 */
function blocksText(blocks: LoopBlock[], slowest: { atMs: number; ms: number }[], r: Result): string {
  const inRun = blocks.filter((b) => b.atMs >= r.fromMs && b.atMs <= r.toMs);
  const bins = BLOCK_BINS.map(
    (t, i) => `${i === 0 ? `≥${t} ms` : `≥${t}`}: ${inRun.filter((b) => b.ms >= t).length}`,
  ).join('  ');
  const max = inRun.reduce((m, b) => Math.max(m, b.ms), 0);
  // by CPU time: what the process itself did, whatever else the machine did meanwhile
  const cpuBins = BLOCK_BINS.slice(0, 3)
    .map((t) => `≥${t}: ${inRun.filter((b) => b.cpuMs >= t).length}`)
    .join('  ');
  const majors = inRun.filter((b) => b.gc.some((g) => g.kind === 'major'));
  const majorMax = inRun
    .flatMap((b) => b.gc)
    .filter((g) => g.kind === 'major')
    .reduce((m, g) => Math.max(m, g.ms), 0);
  const served = slowest.filter((x) => x.atMs >= r.fromMs && x.atMs <= r.toMs);
  const serverMax = served.length
    ? `; in the service: slowest request ${served[0]!.ms.toFixed(1)} ms, ` +
      `10th ${served[Math.min(9, served.length - 1)]!.ms.toFixed(1)} ms`
    : '';
  return (
    `event-loop blocks ${bins}  (by CPU ${cpuBins}; max ${max.toFixed(1)} ms; ${majors.length} with a major ` +
    `GC${majors.length ? `, longest GC ${majorMax.toFixed(1)} ms` : ''}${serverMax})`
  );
}

/**
 * `in the service: p50 9.8 ms  p99 41.2 ms; event loop busy 91 %; written 38.5 KB a request`: the
 * requests' time inside the service (from the tracer, the run's requests), the event loop's
 * utilisation over the run (near 100 %: the latency is mostly the wait for the loop, which only
 * less CPU per request shortens) and what the process wrote to storage per request.
 */
function serviceText(traced: Traced, r: Result): string {
  const ms = (traced.requests ?? [])
    .filter(([at]) => at! >= r.fromMs && at! <= r.toMs)
    .map(([, m]) => m!)
    .sort((a, b) => a - b);
  const at = (p: number) => ms[Math.min(ms.length - 1, Math.floor(ms.length * p))]!;
  const busy = (traced.elu ?? []).filter(([t]) => t! > r.fromMs && t! <= r.toMs).map(([, u]) => u!);
  const parts = [
    ms.length ? `in the service: p50 ${at(0.5).toFixed(1)} ms  p99 ${at(0.99).toFixed(1)} ms` : '',
    busy.length ? `event loop busy ${((100 * busy.reduce((a, b) => a + b, 0)) / busy.length).toFixed(0)} %` : '',
    r.bytesPerReq !== null ? `written ${(r.bytesPerReq / 1024).toFixed(1)} KB a request` : '',
  ];
  return parts.filter(Boolean).join('; ');
}

/**
 * One autocannon run. The server's CPU per request is printed next to the throughput: it does not
 * move with what else the two cores are doing, unlike req/s.
 */
async function run(
  opts: autocannon.Options,
  serverPid: number,
  connections: number,
  durationS = DURATION_S,
): Promise<Result> {
  const cpu0 = cpuMs(serverPid);
  const main0 = mainCpuMs(serverPid);
  const written0 = writtenBytes(serverPid);
  const fromMs = Date.now();
  const errorKinds: Record<string, number> = {};
  const r = await new Promise<autocannon.Result>((resolve, reject) => {
    const limits = { connections, duration: durationS, timeout: TIMEOUT_S, ...(RATE ? { overallRate: RATE } : {}) };
    const instance = autocannon({ ...limits, ...opts }, (err, result) => (err ? reject(err) : resolve(result)));
    instance.on('reqError', (err: NodeJS.ErrnoException) => {
      const kind = err.code ?? err.message;
      errorKinds[kind] = (errorKinds[kind] ?? 0) + 1;
    });
  });
  const cpu1 = cpuMs(serverPid);
  const main1 = mainCpuMs(serverPid);
  const written1 = writtenBytes(serverPid);
  const toMs = Date.now();
  // a counter's growth over the run per request, times `scale`; null when it could not be read
  const perRequest = (before: number | null, after: number | null, scale = 1) =>
    before !== null && after !== null && r.requests.total > 0 ? ((after - before) * scale) / r.requests.total : null;
  const cpuUsPerReq = perRequest(cpu0, cpu1, 1000);
  const mainUsPerReq = perRequest(main0, main1, 1000);
  const bytesPerReq = perRequest(written0, written1);
  const statuses: Record<string, number> = {};
  for (const [code, s] of Object.entries(
    (r as unknown as { statusCodeStats?: Record<string, { count: number }> }).statusCodeStats ?? {},
  ))
    statuses[code] = s.count;
  return {
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    max: r.latency.max,
    errors: r.errors,
    timeouts: r.timeouts,
    errorKinds,
    non2xx: r.non2xx,
    statuses,
    cpuUsPerReq,
    mainUsPerReq,
    bytesPerReq,
    fromMs,
    toMs,
  };
}

/** `errors 0 (…)  timeouts 0  non-2xx 3 (503: 3)` */
const answersText = (r: Result) => {
  const kinds = Object.entries(r.errorKinds)
    .map(([k, n]) => `${k}: ${n}`)
    .join(', ');
  const non2xx = Object.entries(r.statuses)
    .filter(([c]) => !c.startsWith('2'))
    .map(([c, n]) => `${c}: ${n}`)
    .join(', ');
  return (
    `errors ${r.errors}${kinds ? ` (${kinds})` : ''}  timeouts ${r.timeouts}  ` +
    `non-2xx ${r.non2xx}${non2xx ? ` (${non2xx})` : ''}`
  );
};

/** The warm-up's line: what it did, not counted in any figure. */
const warmUpText = (label: string, r: Result) =>
  `${`${label}, warm-up ${WARMUP_S} s`.padEnd(32)} ${r.rps.toFixed(0).padStart(6)} req/s` +
  `${cpuText(r)} (not counted)`;

const cpuText = (r: Result) =>
  r.cpuUsPerReq === null
    ? ''
    : `  server CPU ${r.cpuUsPerReq.toFixed(0)} µs/req` +
      (r.mainUsPerReq === null ? '' : ` (main thread ${r.mainUsPerReq.toFixed(0)})`);

/**
 * The echo's measurements: {@link measure} starts a new echo, warms it up for {@link WARMUP_S},
 * runs it for {@link DURATION_S}, prints the run's line and stops it; `last` is the latest run.
 */
interface Echo {
  last: Result | null;
  measure(when: string): Promise<Result>;
}

async function startEcho(): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  const src =
    `import express from 'express'; const app = express(); app.use(express.json()); app.post('/echo', (req, ` +
    `res) => res.json(req.body)); app.listen(${port}, '127.0.0.1', () => console.log('up'));`;
  // the echo carries the service's event-loop tracer and Node flags too: the CPU ratio compares like with like
  const child = spawn(
    process.execPath,
    [...SERVICE_NODE_FLAGS, '--import', LOOP_BLOCKS_MODULE, '--input-type=module', '-e', src],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
      cwd: process.cwd(),
      env: { ...process.env, BENCH_LOOP_BLOCKS: path.join(os.tmpdir(), `loop-blocks-echo-${process.pid}.json`) },
    },
  );
  await new Promise<void>((resolve) => child.stdout!.once('data', () => resolve()));
  return { url: `http://127.0.0.1:${port}/echo`, child };
}

/**
 * Runs the service on `dataDir` (`:memory:` for the store in memory) at every connection level.
 * @param env - more settings of the service (`TRADE_HISTORY=off`: the same run without recording).
 * @returns the order throughput (req/s) of the first connection level.
 */
async function benchService(
  label: string,
  dataDir: string,
  echo: Echo,
  env: Record<string, string> = {},
): Promise<number> {
  // BENCH_CPU_PROF=<dir> writes a V8 CPU profile of the service (open it in Chrome DevTools;
  // `tsx bench/blocks-profile.ts <profile> <blocks file>` lists what ran in the long blocks).
  const prof = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  // the event-loop blocks of the service, kept next to the profile when there is one
  const blocksFile = path.join(
    process.env.BENCH_CPU_PROF ?? os.tmpdir(),
    `loop-blocks-${label.replace(/\W+/g, '-')}-${process.pid}.json`,
  );
  const svc = await spawnService(
    {
      DATA_DIR: dataDir,
      MASTER_API_KEY: KEY,
      SIM_REPLAY: 'off',
      LOG_LEVEL: 'warn',
      RATE_LIMIT_PER_MIN: '0',
      BENCH_LOOP_BLOCKS: blocksFile,
      ...env,
    },
    30_000,
    // BENCH_NODE_ARGS: more flags for the service (`--trace-gc`, `--max-semi-space-size=32`, …)
    [...prof, ...(process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? []), '--import', LOOP_BLOCKS_MODULE],
  );
  const results: [string, Result][] = [];
  const H = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };
  for (let u = 0; u < USERS; u++) {
    await fetch(`${svc.baseUrl}/v2/trade/users`, {
      method: 'POST',
      headers: { ...H, 'idempotency-key': randomUUID() },
      body: JSON.stringify({ partner_user_id: `bench${u}` }),
    });
  }
  const markets = (await (await fetch(`${svc.baseUrl}/v2/trade/markets?limit=100`, { headers: H })).json()) as {
    markets: { tokens: { token_id: string }[]; tick_size: string }[];
  };
  const tokens = markets.markets.filter((m) => m.tick_size === '0.01').map((m) => m.tokens[0]!.token_id);
  let i = 0;
  const orders: autocannon.Options = {
    url: `${svc.baseUrl}/v2/trade/order`,
    method: 'POST',
    headers: H,
    requests: [
      {
        setupRequest: (req) => {
          i++;
          // Resting bids well below the touch, every 5th order crossing the ask: matching + rests.
          const crossing = i % 5 === 0;
          const body = {
            symbol: tokens[i % tokens.length],
            side: 'buy',
            type: 'LIMIT',
            price: crossing ? '0.99' : `0.0${1 + (i % 5)}`,
            size: '5',
            ...(crossing ? { time_in_force: 'IOC' } : {}),
          };
          return {
            ...req,
            headers: { ...H, 'x-partner-user-id': `bench${i % USERS}`, 'idempotency-key': randomUUID() },
            body: JSON.stringify(body),
          };
        },
      },
    ],
  };
  if (WARMUP_S > 0) console.log(warmUpText(label, await run(orders, svc.child.pid!, CONNECTION_LEVELS[0]!, WARMUP_S)));
  const before = echo.last ?? (await echo.measure(`before ${label}`));
  for (const connections of CONNECTION_LEVELS)
    results.push([`${label}, ${connections} conn`, await run(orders, svc.child.pid!, connections)]);
  const after = await echo.measure(`after ${label}`);
  // the echo's CPU per request around this service's runs
  const echoCpuUs =
    before.cpuUsPerReq !== null && after.cpuUsPerReq !== null ? (before.cpuUsPerReq + after.cpuUsPerReq) / 2 : null;
  for (const [name, result] of results) {
    const cpuRatio =
      result.cpuUsPerReq !== null && echoCpuUs
        ? `  CPU ${(result.cpuUsPerReq / echoCpuUs).toFixed(2)}× echo (${echoCpuUs.toFixed(0)} µs)`
        : '';
    console.log(
      `${name.padEnd(32)} ${result.rps.toFixed(0).padStart(6)} ` +
        `req/s  p50 ${String(result.p50).padStart(4)} ms  ` +
        `p99 ${String(result.p99).padStart(4)} ms  max ${String(result.max).padStart(5)} ms` +
        `${cpuText(result)}${cpuRatio}\n${' '.repeat(34)}${answersText(result)}`,
    );
  }
  svc.child.kill('SIGTERM');
  await svc.exited;
  const traced = JSON.parse(await fs.readFile(blocksFile, 'utf8').catch(() => '{"blocks":[]}')) as Traced;
  const blocks = traced.blocks;
  // kept beside the profile with the runs' spans (bench/blocks-profile.ts looks only inside them)
  if (process.env.BENCH_CPU_PROF) await fs.writeFile(blocksFile.replace(/\.json$/, '.out.txt'), svc.output());
  if (process.env.BENCH_CPU_PROF)
    await fs.writeFile(
      blocksFile,
      JSON.stringify({ ...traced, runs: results.map(([, r]) => ({ fromMs: r.fromMs, toMs: r.toMs })) }),
    );
  else await fs.rm(blocksFile, { force: true });
  for (const [name, r] of results) {
    const at = `${' '.repeat(34)}${name.replace(/^.*, /, '')}: `;
    console.log(`${at}${blocksText(blocks, traced.slowest ?? [], r)}`);
    console.log(`${at}${serviceText(traced, r)}`);
  }
  return results[0]![1].rps;
}

async function main(): Promise<void> {
  console.log(
    `bench:orders — ${CONNECTION_LEVELS.join(', ')} connections${RATE ? ` at ${RATE} req/s` : ''}, ` +
      `${DURATION_S} s per run, request ` +
      `timeout ${TIMEOUT_S} s, node ${process.version}, ${os.cpus().length} cores`,
  );
  const echoRuns: Echo = {
    last: null,
    async measure(when) {
      // a new echo each time, warmed up as the services are: a fresh process, like each service
      const echo = await startEcho();
      try {
        const echoed: autocannon.Options = {
          url: echo.url,
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ symbol: '1', side: 'buy', type: 'LIMIT', price: '0.5', size: '5' }),
        };
        if (WARMUP_S > 0) await run(echoed, echo.child.pid!, CONNECTION_LEVELS[0]!, WARMUP_S);
        const r = await run(echoed, echo.child.pid!, CONNECTION_LEVELS[0]!);
        console.log(
          `${`express JSON echo, ${CONNECTION_LEVELS[0]} conn`.padEnd(32)} ` +
            `${r.rps.toFixed(0).padStart(6)} req/s  p50 ${String(r.p50).padStart(4)} ms  ` +
            `p99 ${String(r.p99).padStart(4)} ms${cpuText(r)} (${when})`,
        );
        this.last = r;
        return r;
      } finally {
        echo.child.kill();
      }
    },
  };
  await benchAll(echoRuns);
  console.log(
    'targets: server CPU per order ≤ 2× the echo in memory, ≤ 3× on disk; p99 < 50 ms at 50 ' +
      'connections; every request answered (no errors or timeouts; shed load is 429/503)',
  );
}

/** The services' runs: in memory with and without the trade history, on disk. */
async function benchAll(echo: Echo): Promise<void> {
  const onlyDisk = process.env.BENCH_ONLY === 'disk';
  const recorded = onlyDisk ? 0 : await benchService('orders, store in memory', ':memory:', echo);
  // what recording the trade history costs (target: at most 15 % of the order throughput)
  if (!onlyDisk && process.env.BENCH_HISTORY !== 'skip') {
    const bare = await benchService('orders, memory, no history', ':memory:', echo, { TRADE_HISTORY: 'off' });
    console.log(
      `trade history recording: ${recorded.toFixed(0)} req/s with, ${bare.toFixed(0)} without: ` +
        `${(100 * (1 - recorded / bare)).toFixed(1)} % of the throughput (target ≤ 15 %)`,
    );
  }
  if (process.env.BENCH_ONLY !== 'memory') {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-bench-'));
    try {
      await benchService('orders, store on disk', dir, echo);
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
