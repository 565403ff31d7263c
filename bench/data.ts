/**
 * `npm run bench:data`: the public data reads over a large trade history on the embedded store
 * (SQLite on disk). Stores `BENCH_FILLS` trades (default 1,000,000) through the store port in bulk
 * (`insertMany`): each a tape row and its two parties' fills, over `BENCH_TRADERS` wallets (a few
 * busy, most occasional), 1,000 markets of two tokens each, 2 or 3 trades per 2-second block. At a
 * tenth of the size and at the full size it starts the service on that folder and measures, one
 * request at a time over loopback, the latency of each read (`BENCH_SAMPLES` requests, default
 * 1,000): the first page and a deep page of `/trades`, of a busy trader's trades, a trader's
 * positions and the 30-day leaderboard (a route answering 501 is skipped with the reason). Target:
 * p99 < 20 ms, and the same p99 at both sizes (a page costs O(limit), not O(history)).
 *
 * `BENCH_FILLS=20000 npm run bench:data` is a quick run; the full one stores 1M trades (2M fills,
 * about 2.2 GB on disk) and takes a while. The cost of recording fills on order throughput is
 * bench:orders' (printed at the end: how to compare).
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  HISTORY_INDEXES,
  TAPE_TOKENS,
  TRADER_FILLS,
  TRADES,
  type StoredTapeRow,
  type TapeTokenRow,
  type TraderFill,
} from '../engine/data/records.js';
import { PORTFOLIO_SNAPSHOTS } from '../engine/data/portfolio-snapshots.js';
import { SqliteStore } from '../engine/store/sqlite.js';
import { prng } from '../test/engine/store/faulty-store.js';
import { spawnService } from '../test/process.js';
import { cpuMs } from './proc.js';

const FILLS = Number(process.env.BENCH_FILLS ?? 1_000_000);
const TRADERS = Number(process.env.BENCH_TRADERS ?? 20_000);
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 1_000);
const MARKETS = 1_000;
const BATCH = 10_000;
const KEY = 'pts_bench_master_key_0123456789abcdef';
const T0 = 1_767_225_600; // 2026-01-01T00:00:00Z
const TARGET_P99_MS = 20;

const hex = (n: number, width: number) => n.toString(16).padStart(width, '0');
const addressOf = (i: number) => `0x${hex(i + 1, 40)}`;
const conditionOf = (m: number) => `0x${hex(m + 1, 64)}`;
const tokenOf = (m: number, outcome: 0 | 1) => String(1_000_000_000 + m * 2 + outcome);
/** The short key of token (m, outcome) on the tape (records.ts `TapeKey`): one per token, from 1. */
const tokenSeqOf = (m: number, outcome: 0 | 1) => 1 + m * 2 + outcome;
/** The busiest wallet (index 0 of the skewed pick): its trades are the trader reads' subject. */
const BUSY = addressOf(0);

/**
 * Appends trades `from` … `to` − 1 of the synthetic history (the same ones whatever the batches):
 * trade i sits in block ⌊i / 2.5⌋ (2 or 3 per block, 2 s apart), its wallets picked with a skew
 * (wallet k with weight ~1/(k+1)), its market, outcome, side, price and size at random.
 */
async function populate(dir: string, from: number, to: number): Promise<void> {
  const store = await SqliteStore.open(dir);
  const trades = await store.collection<StoredTapeRow>(TRADES, HISTORY_INDEXES[TRADES]);
  const fills = await store.collection<TraderFill>(TRADER_FILLS, HISTORY_INDEXES[TRADER_FILLS]);
  // the tape's token keys, as the trade history stores them with a token's first row
  const tapeTokens = await store.collection<TapeTokenRow>(TAPE_TOKENS);
  if (from === 0)
    for (let m = 0; m < MARKETS; m++)
      for (const outcome of [0, 1] as const)
        await tapeTokens.replaceOne({
          _id: tokenOf(m, outcome),
          tokenSeq: tokenSeqOf(m, outcome),
          conditionId: conditionOf(m),
          outcome: outcome === 0 ? 'Yes' : 'No',
        });
  const pick = (r: number) => Math.min(TRADERS - 1, Math.floor(Math.exp(r * Math.log(TRADERS + 1))) - 1);
  for (let start = from; start < to; start += BATCH) {
    const tapeRows: StoredTapeRow[] = [];
    const fillRows: TraderFill[] = [];
    for (let i = start; i < Math.min(to, start + BATCH); i++) {
      const rnd = prng(i + 1); // the same history on every run
      // block b holds trades ⌈2.5·b⌉ … ⌈2.5·(b+1)⌉ − 1
      const block = Math.floor(i / 2.5);
      const logIndex = i - Math.ceil(block * 2.5);
      const ts = T0 + 2 * block;
      const m = Math.floor(rnd() * MARKETS);
      const outcome = rnd() < 0.5 ? 0 : 1;
      const side = rnd() < 0.5 ? 'BUY' : 'SELL';
      const cents = 1 + Math.floor(rnd() * 98);
      const shares = 1 + Math.floor(rnd() * 200);
      let maker = pick(rnd());
      const taker = pick(rnd());
      if (maker === taker) maker = (maker + 1) % TRADERS;
      const price = (cents / 100).toFixed(2);
      const notional = ((cents * shares) / 100).toFixed(2);
      const base = {
        blockTimestamp: ts,
        logIndex,
        transactionHash: `0x${hex(i + 1, 64)}`,
        tradeId: `bench-${i}`,
        atMs: ts * 1000,
        conditionId: conditionOf(m),
        outcome: outcome === 0 ? 'Yes' : 'No',
        price,
        size: String(shares),
        notionalUsd: notional,
        source: 'venue' as const,
      };
      const tokenId = tokenOf(m, outcome);
      const fee = (Number(notional) * 0.01).toFixed(2);
      tapeRows.push({
        ...base,
        _id: base.tradeId,
        tokenId,
        tokenSeq: tokenSeqOf(m, outcome),
        side,
        feeUsd: fee,
        maker: addressOf(maker),
        taker: addressOf(taker),
      });
      const party = (role: 'maker' | 'taker', who: number): TraderFill => ({
        ...base,
        _id: `${base.tradeId}:${role}`,
        address: addressOf(who),
        userId: null,
        orderId: null,
        role,
        tokenId,
        side: role === 'taker' ? side : side === 'BUY' ? 'SELL' : 'BUY',
        feeUsd: role === 'taker' ? fee : '0',
      });
      fillRows.push(party('maker', maker), party('taker', taker));
    }
    await trades.insertMany!(tapeRows);
    await fills.insertMany!(fillRows);
    if ((start / BATCH) % 10 === 0) process.stdout.write(`\r  stored ${Math.min(to, start + BATCH)} trades`);
  }
  process.stdout.write('\n');
  await store.close();
}

interface Stat {
  p50: number;
  p99: number;
  max: number;
  /** The service's CPU time per request (all its threads, from /proc), ms; null where /proc is missing. */
  cpu: number | null;
}

/**
 * Latency of `SAMPLES` sequential GETs of `url` (after a warm-up) and the CPU time the service
 * (`pid`) spent per request meanwhile, or the reason it was skipped.
 */
async function measure(url: string, pid: number): Promise<Stat | string> {
  const get = async () => {
    const r = await fetch(url, { headers: { authorization: `Bearer ${KEY}` } });
    const body = await r.text();
    return { status: r.status, body };
  };
  const first = await get();
  if (first.status === 501) return 'skipped: 501 (not built on this branch)';
  if (first.status !== 200) return `skipped: ${first.status} ${first.body.slice(0, 200)}`;
  for (let i = 0; i < 20; i++) await get();
  const ms: number[] = [];
  const cpu0 = cpuMs(pid);
  for (let i = 0; i < SAMPLES; i++) {
    const t = performance.now();
    await get();
    ms.push(performance.now() - t);
  }
  const cpu1 = cpuMs(pid);
  ms.sort((a, b) => a - b);
  const at = (q: number) => ms[Math.min(ms.length - 1, Math.floor(q * ms.length))]!;
  const cpu = cpu0 === null || cpu1 === null ? null : (cpu1 - cpu0) / SAMPLES;
  return { p50: at(0.5), p99: at(0.99), max: ms.at(-1)!, cpu };
}

/** The reads measured on a history of `n` trades: name → path. */
function reads(n: number): Record<string, string> {
  // a deep page: the cursor in the middle of the history
  const mid = Math.floor(n / 2);
  const block = Math.floor(mid / 2.5);
  const deep = `cursor_ts=${T0 + 2 * block}&next_cursor_log_idx=${mid - Math.ceil(block * 2.5)}`;
  return {
    '/trades first page': '/v2/trade/trades?limit=100',
    '/trades deep page': `/v2/trade/trades?limit=100&${deep}`,
    "busy trader's trades, first page": `/v2/trade/traders/${BUSY}/trades?limit=100`,
    "busy trader's trades, deep page": `/v2/trade/traders/${BUSY}/trades?limit=100&${deep}`,
    "a trader's trades, taker only": `/v2/trade/traders/${BUSY}/trades?limit=100&taker_only=true`,
    "busy wallet's trades as tape rows (/trades?address=)": `/v2/trade/trades?limit=100&address=${BUSY}`,
    "busy trader's positions": `/v2/trade/traders/${BUSY}/positions?limit=100`,
    'leaderboard 30d': '/v2/trade/leaderboard?window=30d&limit=100',
  };
}

/**
 * Waits until the daily statements job has generated every closed day of the stored history (it
 * runs at start and works through the days the history covers), so that the reads are measured
 * on a service doing nothing else; prints how long that took.
 */
async function statementsCaughtUp(baseUrl: string): Promise<void> {
  const t = performance.now();
  const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
  for (;;) {
    const r = await fetch(`${baseUrl}/v2/trade/traders/${BUSY}/statements?limit=1`, {
      headers: { authorization: `Bearer ${KEY}` },
    });
    const through =
      r.status === 200 ? ((await r.json()) as { generated_through: string | null }).generated_through : null;
    if (through !== null && through >= yesterday) break;
    if (performance.now() - t > 1_800_000)
      throw new Error(`statements not caught up after 30 min (through ${through})`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  console.log(`    (statements job caught up ${((performance.now() - t) / 1000).toFixed(1)} s after the start)`);
}

/**
 * Starts the service on `dir`: the process, how long it took to answer /healthz, and the CPU time
 * it had used by then (all threads, from /proc; null where missing), ms.
 */
async function start(dir: string, env: Record<string, string> = {}) {
  const t = performance.now();
  const svc = await spawnService(
    { DATA_DIR: dir, MASTER_API_KEY: KEY, SIM_REPLAY: 'off', RATE_LIMIT_PER_MIN: '0', ...env },
    600_000,
  );
  return { svc, ms: performance.now() - t, cpu: svc.child.pid === undefined ? null : cpuMs(svc.child.pid) };
}

/** Removes the snapshot of the trader aggregates: the next start replays the whole history. */
async function dropSnapshot(dir: string): Promise<void> {
  const store = await SqliteStore.open(dir);
  await (await store.collection(PORTFOLIO_SNAPSHOTS)).deleteMany({});
  await store.close();
}

/**
 * The start-ups on `dir`, then the reads: the first start replays the whole history (no snapshot of
 * the aggregates: a bulk load invalidates it), and after its clean stop the restart starts from the
 * snapshot it wrote, as a service restarts in production; the reads are measured on that restarted
 * service, once the statements job has caught up (steady state: the catch-up after a full replay,
 * which builds the aggregates' snapshot in the background, is a one-time cost of a bulk load).
 */
async function run(dir: string, n: number): Promise<Record<string, Stat | string>> {
  await dropSnapshot(dir);
  // its clean stop writes the aggregates' snapshot: at a million trades that outlasts the default grace
  const { svc: cold, ms: first, cpu: firstCpu } = await start(dir, { SHUTDOWN_GRACE_MS: '600000' });
  await statementsCaughtUp(cold.baseUrl);
  cold.child.kill('SIGTERM');
  await cold.exited;
  const { svc, ms: again, cpu: againCpu } = await start(dir);
  const secs = (ms: number, cpu: number | null) =>
    `${(ms / 1000).toFixed(1)} s${cpu === null ? '' : ` (CPU ${(cpu / 1000).toFixed(1)} s)`}`;
  console.log(
    `  start-up: replaying the whole history ${secs(first, firstCpu)}, from the snapshot ${secs(again, againCpu)}`,
  );
  const out: Record<string, Stat | string> = {};
  try {
    await statementsCaughtUp(svc.baseUrl);
    for (const [name, p] of Object.entries(reads(n))) out[name] = await measure(svc.baseUrl + p, svc.child.pid!);
  } finally {
    svc.child.kill('SIGTERM');
    await svc.exited;
  }
  return out;
}

const fmt = (s: Stat | string | undefined) =>
  s === undefined
    ? '–'
    : typeof s === 'string'
      ? s
      : `p50 ${s.p50.toFixed(2)}  p99 ${s.p99.toFixed(2)}  max ${s.max.toFixed(1)} ms` +
        (s.cpu === null ? '' : `  CPU ${(s.cpu * 1000).toFixed(0)} µs/req`);

async function main(): Promise<void> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'bench-data-'));
  const sizes = [Math.floor(FILLS / 10), FILLS];
  console.log(
    `bench:data: ${FILLS.toLocaleString('en')} trades (${(2 * FILLS).toLocaleString('en')} fills) over ` +
      `${TRADERS.toLocaleString('en')} wallets, SQLite on disk (${dir}); ${SAMPLES} requests per read`,
  );
  const results: Array<Record<string, Stat | string>> = [];
  let stored = 0;
  try {
    for (const n of sizes) {
      const t = performance.now();
      await populate(dir, stored, n);
      stored = n;
      const files = await fs.readdir(dir);
      const bytes = (await Promise.all(files.map((f) => fs.stat(path.join(dir, f))))).reduce((a, x) => a + x.size, 0);
      console.log(
        `  ${n.toLocaleString('en')} trades stored (${((performance.now() - t) / 1000).toFixed(1)} s; ` +
          `${(bytes / 1e6).toFixed(0)} MB on disk)`,
      );
      results.push(await run(dir, n));
    }
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
  console.log(`\nread (target p99 < ${TARGET_P99_MS} ms, the same at both sizes)`);
  let ok = true;
  for (const name of Object.keys(results[0]!)) {
    const small = results[0]![name]!;
    const big = results[1]![name]!;
    let verdict = '';
    if (typeof small !== 'string' && typeof big !== 'string') {
      const within = big.p99 < TARGET_P99_MS;
      // "the same": within 2× or 2 ms of each other (one shared machine's noise)
      const flat = big.p99 <= Math.max(2 * small.p99, small.p99 + 2);
      const why = [...(within ? [] : ['p99 ≥ target']), ...(flat ? [] : ['grows with the history'])];
      verdict = why.length ? `missed (${why.join(', ')})` : 'met';
      ok &&= within && flat;
    }
    console.log(`  ${name}`);
    console.log(`    ${sizes[0]!.toLocaleString('en')}: ${fmt(small)}`);
    console.log(`    ${FILLS.toLocaleString('en')}: ${fmt(big)}${verdict ? `  → ${verdict}` : ''}`);
  }
  console.log(
    '\nRecording fills on order throughput: run `npm run bench:orders` on this build and on one without the ' +
      'trade history writer (e.g. `git stash` / the commit before it), same machine, same hour; the target is ' +
      'at most 15 % fewer orders per second with recording.',
  );
  process.exitCode = ok ? 0 : 1;
}

await main();
