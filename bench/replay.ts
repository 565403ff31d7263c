/**
 * `npm run bench:replay`: replays the whole WebSocket capture
 * (data/ws-capture-2026-02-20.csv, 21,306 usable events) as fast as it goes into a started
 * service (in-process, SQLite store on disk, no HTTP) with 1,000 armed STOP_LOSS strategies
 * and 1,000 resting user LIMIT buys on the capture's tokens. Prints:
 * - capture events applied per second by the venue (in memory + journal + reports), goal ≥ 50,000/s;
 * - the same end to end: until the engine has handled every report, book change and market
 *   event the replay caused (order actors, strategies fired and their child orders, strategies
 *   and orders ended by resolutions);
 * - strategies fired, user fills, orders canceled by resolution, strategies ended by resolution;
 * - CPU time per event (user + system), the figure to compare under contention.
 *
 * Set-up shortcuts (not measured): the bench user's shares of each capture token are written
 * into the venue's ledger directly (the capture books are empty before the replay, so nobody
 * could sell them); strategies and orders are started through the engine's services, not REST.
 * BENCH_BATCH (default 64) = capture events per venue operation (the replay clock applies what
 * came due per tick as one operation; 1 = one operation per event).
 * What the loop awaits is what the replay clock awaits (engine/venue/capture-replay.ts): the batches
 * go through the replay's own `applyThrough`, and the loop waits only when the replay's window of
 * batches in flight (applied, not yet durable with their reports delivered: MAX_BATCHES_IN_FLIGHT)
 * is full, until the oldest settles. So the venue applies the next batches in memory while an
 * earlier one's commit is being synced, and the engine sees each batch's reports and book changes
 * once its journal entry is durable, in order (reading the touch then, which later batches in flight
 * may have moved already).
 * BENCH_PACE=engine waits after each batch until the engine has done what it caused (strategies
 * fired, their sells placed and filled, the venue's journal written), as on the replay clock at
 * real speed: the fired and filled counts then do not depend on how many store commits a batch
 * takes (by default the engine reacts while later batches are applied, and how far it gets before
 * a market resolves depends on that), so they check that a change kept the behaviour.
 * TRADE_HISTORY=off runs it without the trade history (prints and fills not recorded), for its cost.
 * BENCH_CPU_PROF=<dir> writes a V8 CPU profile of the first measured replay (set-up excluded) to
 * <dir>/replay.cpuprofile (open it in Chrome DevTools), a sample every 100 µs; with BENCH_HEAP=1 also
 * a sampled profile of what it allocates, <dir>/replay.heapprofile (collected objects included). It
 * samples wall time: on a busy machine the time the thread waited for a core lands on whatever native
 * call was on the stack (process.cpuUsage, fdatasync); BENCH_PERF_CTL=<fifo> has
 * `perf record --control fifo:<fifo> -D -1` sample CPU time of the first measured replay only (run
 * node with --perf-basic-prof for the JavaScript names).
 * BENCH_MEMORY=1 keeps the store in memory (DATA_DIR=:memory:): the difference is what the disk costs.
 * Warm-up, then measured replays, all in one service (one data folder): its catalogue holds
 * BENCH_WARMUP + BENCH_RUNS copies of the capture's markets (`withCopies`: the same events on markets of
 * their own, under other token and condition ids, an hour apart; the last copy is the capture itself), and
 * each copy is replayed in turn, with 1,000 stops and 1,000 bids of its own set up before it. The first
 * BENCH_WARMUP (default 3) run the service's code until V8 has compiled it, as in a service that has run for
 * a while (the first replay of a fresh process is mostly V8 compiling the engine meanwhile: the other
 * threads' CPU per event printed on each line shows it settle); the target is judged on the median of the
 * next BENCH_RUNS (default 5). The first replay's figure is printed at the end too. BENCH_WARMUP=0
 * BENCH_RUNS=1 replays the capture alone into a fresh service, as the bench did before the copies.
 * The engine is imported from dist/ (`built`), as `npm run build` compiled it.
 * It also prints the store commits, the WAL fsyncs and the time they took in all (they run one after
 * the other beside the main thread: near the wall time, the disk sets the pace).
 * BENCH_KEEP=1 leaves the data folder in place (its path printed) to inspect the store afterwards.
 * BENCH_PAGES=1 (on disk) turns the store's checkpoints off and prints, after the first measured replay, the
 * pages its commits wrote to the WAL by table and index (each WAL frame's page, named by SQLite's `dbstat`): what
 * the bytes written are made of, less the checkpoints' copies.
 */
import { readFileSync } from 'node:fs';
import BetterSqlite3 from 'better-sqlite3';
import { Session } from 'node:inspector/promises';
import { built, charsWritten, mainThreadCpuMs } from './proc.js';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Services } from '../engine/service.js';
import type { Capture, CaptureEvent } from '../engine/venue/capture.js';
import type { Catalogue } from '../engine/venue/markets.js';
import type { Ledger } from '../engine/venue/ledger.js';
import type { SimVenue } from '../engine/venue/sim-venue.js';

// the service's code as built (dist/, what `npm start` runs): see `built`
const { loadConfig } = await built<typeof import('../engine/config.js')>('engine/config.js');
const { dec, str } = await built<typeof import('../engine/decimal.js')>('engine/decimal.js');
const { createLogger } = await built<typeof import('../engine/logger.js')>('engine/logger.js');
const { startServices } = await built<typeof import('../engine/service.js')>('engine/service.js');
const { cjsDefault } = await built<typeof import('../engine/interop.js')>('engine/interop.js');
const { SQLITE_FILE, SqliteStore } = await built<typeof import('../engine/store/sqlite.js')>('engine/store/sqlite.js');
const { loadCatalogue } = await built<typeof import('../engine/venue/markets.js')>('engine/venue/markets.js');

const STRATEGIES = Number(process.env.BENCH_STRATEGIES ?? 1_000);
const ORDERS = Number(process.env.BENCH_ORDERS ?? 1_000);
const BATCH = Number(process.env.BENCH_BATCH ?? 64);
const PACE_ENGINE = process.env.BENCH_PACE === 'engine';
const PAGES = Boolean(process.env.BENCH_PAGES) && !process.env.BENCH_MEMORY;
/** Warm-up replays before the measured ones (BENCH_WARMUP=0: the first measured replay is the process's first). */
const WARM_UPS = Number(process.env.BENCH_WARMUP ?? 3);
/** Measured replays: the target is judged on their median. */
const RUNS = Math.max(1, Number(process.env.BENCH_RUNS ?? 5));

/** One replay's end-to-end figures: events a second, and CPU µs an event on the main thread and on the others. */
interface ReplayFigures {
  perSec: number;
  mainUs: number;
  otherUs: number;
}

/**
 * The pages the commits wrote to the WAL of `file` from byte `from` on, by the table or index
 * (SQLite's `dbstat` names) that holds each page now, most first: frames and MB (a frame is a page
 * and its 24-byte header). The WAL must not have been started over since `from` (no checkpoint).
 */
function walPagesByTree(file: string, from: number): { name: string; frames: number; mb: number }[] {
  const wal = readFileSync(`${file}-wal`);
  const pageSize = wal.readUInt32BE(8);
  const salt = wal.readUInt32BE(16);
  const db = new (cjsDefault(BetterSqlite3))(file, { readonly: true });
  const tree = new Map<number, string>();
  try {
    for (const r of db.prepare('SELECT name, pageno FROM dbstat').iterate() as Iterable<{
      name: string;
      pageno: number;
    }>)
      tree.set(r.pageno, r.name);
  } finally {
    db.close();
  }
  const frames = new Map<string, number>();
  for (let at = Math.max(32, from); at + 24 + pageSize <= wal.length; at += 24 + pageSize) {
    if (wal.readUInt32BE(at + 8) !== salt) break; // a frame of an earlier generation of the WAL
    const name = tree.get(wal.readUInt32BE(at)) ?? '(free now)';
    frames.set(name, (frames.get(name) ?? 0) + 1);
  }
  return [...frames]
    .sort((a, b) => b[1] - a[1])
    .map(([name, n]) => ({ name, frames: n, mb: (n * (24 + pageSize)) / 1e6 }));
}

/** Until the engine has done what the operations so far caused (strategies, their orders, the venue's journal). */
async function engineDone(s: Services): Promise<void> {
  for (let round = 0; round < 3; round++) {
    await s.strategies.idle();
    await s.host.whenIdle();
    await (s.venue as SimVenue).whenWritten();
    await new Promise((r) => setImmediate(r));
  }
}

/** The venue's reports a replay counts: user fills and orders canceled by a resolution (reset per replay). */
interface ReportTally {
  fills: number;
  resolvedCancels: number;
}

/** One copy of the capture's markets in the service's catalogue ({@link withCopies}). */
interface CaptureCopy {
  /** The copy's outcome tokens, market by market: [first outcome, second outcome, …]. */
  tokens: string[];
  /** The copy's markets. */
  conditionIds: Set<string>;
  /** Its events: indexes [from, to) of the catalogue's capture events. */
  from: number;
  to: number;
}

/** `id` (decimal digits or 0x-hex) with its last four characters counted up by `k` in the same base and width. */
function otherId(id: string, k: number): string {
  const hex = id.startsWith('0x');
  const base = hex ? 16 : 10;
  const last = parseInt(id.slice(-4), base);
  return id.slice(0, -4) + ((last + k) % base ** 4).toString(base).padStart(4, '0');
}

/**
 * The catalogue with `n` copies of the capture's markets, replayed one after the other in one service:
 * copies 1 … n − 1 under other token and condition ids ({@link otherId}), their events moved earlier by
 * whole capture spans (an hour apart), and the capture itself, under its own ids, as the last copy. Same
 * books, prints, ticks and resolutions in each copy, on markets of their own.
 * @throws {Error} when another id of a copy is already an id of the catalogue.
 */
function withCopies(catalogue: Catalogue, n: number): { catalogue: Catalogue; copies: CaptureCopy[] } {
  const capture = catalogue.capture!;
  const spanMs = capture.endMs - capture.startMs + 3_600_000;
  const byCondition = new Map(catalogue.markets.map((m) => [m.conditionId, m]));
  const conditions = new Set(byCondition.keys()); // the catalogue's and the copies' so far
  const markets = [...catalogue.markets];
  const tokens = new Map(catalogue.tokens);
  const captureTokens = new Set(catalogue.captureTokens);
  const captureMarkets: Capture['markets'] = [];
  const events: CaptureEvent[] = [];
  const copies: CaptureCopy[] = [];
  for (let k = n - 1; k >= 0; k--) {
    // k: how many spans earlier; the last copy (k = 0) is the capture itself
    const id = (x: string) => (k === 0 ? x : otherId(x, k));
    const shiftMs = k * spanMs;
    const copy: CaptureCopy = { tokens: [], conditionIds: new Set(), from: events.length, to: 0 };
    for (const cm of capture.markets) {
      copy.conditionIds.add(id(cm.conditionId));
      copy.tokens.push(...cm.tokens.map((t) => id(t.tokenId)));
      if (k === 0) {
        captureMarkets.push(cm);
        continue;
      }
      if (conditions.has(id(cm.conditionId))) throw new Error(`copy id ${id(cm.conditionId)} taken`);
      conditions.add(id(cm.conditionId));
      const m = byCondition.get(cm.conditionId)!;
      markets.push({
        ...m,
        conditionId: id(m.conditionId),
        slug: `${m.slug}-copy-${k}`,
        tokens: m.tokens.map((t) => ({ ...t, tokenId: id(t.tokenId) })),
      });
      captureMarkets.push({
        ...cm,
        conditionId: id(cm.conditionId),
        tokens: cm.tokens.map((t) => ({ ...t, tokenId: id(t.tokenId) })),
        firstSeenMs: cm.firstSeenMs - shiftMs,
      });
      for (const t of cm.tokens) {
        if (tokens.has(id(t.tokenId))) throw new Error(`copy id ${id(t.tokenId)} taken`);
        const info = catalogue.tokens.get(t.tokenId)!;
        tokens.set(id(t.tokenId), {
          ...info,
          tokenId: id(t.tokenId),
          conditionId: id(info.conditionId),
          complementTokenId: id(info.complementTokenId),
        });
        captureTokens.add(id(t.tokenId));
      }
    }
    for (const e of capture.events) {
      const atMs = e.atMs - shiftMs;
      if (k === 0) events.push(e);
      else if (e.kind === 'resolved')
        events.push({ ...e, atMs, conditionId: id(e.conditionId), winningTokenId: id(e.winningTokenId) });
      else events.push({ ...e, atMs, tokenId: id(e.tokenId) });
    }
    copy.to = events.length;
    copies.push(copy);
  }
  return {
    catalogue: {
      ...catalogue,
      markets,
      tokens,
      captureTokens,
      capture: { ...capture, markets: captureMarkets, events, startMs: capture.startMs - (n - 1) * spanMs },
    },
    copies,
  };
}

/**
 * Sets up 1,000 armed STOP_LOSS and 1,000 resting LIMIT buys on the markets of `copy`, then replays its
 * events as the replay clock applies them, until the engine is done with what they caused. Prints one line
 * (`warmUp`) or the full report, and returns the end-to-end figures. `instrumented`: the replay the profile,
 * perf and WAL pages are taken of (the first measured one). `tally`: counted by the one report listener.
 */
async function replayCopy(
  s: Services,
  tally: ReportTally,
  copy: CaptureCopy,
  label: string,
  warmUp: boolean,
  instrumented: boolean,
  sqliteFile: string,
): Promise<ReplayFigures> {
  const venue = s.venue as SimVenue;
  const replay = venue.capture!;
  const { user } = await s.users.provision('demo', `bench-${copy.from}`, null);
  const { user: bidder } = await s.users.provision('demo', `bidder-${copy.from}`, null);
  const tokens = copy.tokens;
  const ledger = (venue as unknown as { ledger: Ledger }).ledger;
  for (const t of tokens)
    ledger.walletOf(user._id).positions.set(t, { shares: dec(1_000), reserved: dec(0), cost: dec(0) });

  const t0 = performance.now();
  for (let i = 0; i < STRATEGIES; i++) {
    const token = tokens[2 * (i % (tokens.length / 2))]!; // first outcome (Up) of each market
    // every captured bid is at 0.99 or above: half the stops (at 0.99)
    // fire when a bid appears, the others wait for the resolution
    const level = i % 2 ? str(dec('0.30').plus(dec('0.01').times(i % 40))) : '0.99';
    await s.strategies.start(
      'demo',
      s.strategies.check(user._id, { symbol: token, side: 'sell', type: 'STOP_LOSS', price: level, size: '5' }),
    );
  }
  for (let i = 0; i < ORDERS; i++) {
    // second outcome (Down): a low bid there is no stop's trigger
    const token = tokens[2 * (i % (tokens.length / 2)) + 1]!;
    const price = str(dec('0.01').times(1 + (i % 10))); // 0.01 … 0.10
    await s.orders.place(
      'demo',
      s.orders.check(bidder._id, { symbol: token, side: 'buy', type: 'LIMIT', price, size: '5' }),
    );
  }
  const mine = () => s.actors.find({ kind: 'strategy', ownerUserId: user._id });
  const armedBefore = (await mine()).filter((r) => r.status === 'ACTIVE').length;
  if (!warmUp)
    console.log(
      `${label}: set-up: ${armedBefore} of ${STRATEGIES} strategies armed (ACTIVE) and ${ORDERS} ` +
        `orders resting in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
    );

  tally.fills = 0;
  tally.resolvedCancels = 0;
  const profiler = process.env.BENCH_CPU_PROF && instrumented ? new Session() : null;
  if (profiler) {
    profiler.connect();
    await profiler.post('Profiler.enable');
    // BENCH_HEAP=1: what the replay allocates (collected objects included), by stack
    if (process.env.BENCH_HEAP)
      await profiler.post('HeapProfiler.startSampling', {
        samplingInterval: 2048,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: true,
      });
    // a sample every 100 µs (V8's default, 1 ms, gives a replay a few hundred)
    await profiler.post('Profiler.setSamplingInterval', { interval: 100 });
    await profiler.post('Profiler.start');
  }
  // BENCH_PERF_CTL=<fifo>: `perf record --control fifo:<fifo> -D -1` samples the first measured replay only
  const perfCtl = instrumented ? process.env.BENCH_PERF_CTL : undefined;
  if (perfCtl) await fs.writeFile(perfCtl, 'enable\n');
  const commitsOf = () => (s.store instanceof SqliteStore ? s.store.writer.commits : 0);
  const syncsOf = () => (s.store instanceof SqliteStore ? { ...s.store.writer.syncs } : { count: 0, ms: 0 });
  const checkpointsOf = (): [number, number] =>
    s.store instanceof SqliteStore ? [s.store.writer.checkpoints, s.store.writer.heldCheckpoints] : [0, 0];
  const commits0 = commitsOf();
  const syncs0 = syncsOf();
  const [checkpoints0, held0] = checkpointsOf();
  const cpu0 = process.cpuUsage();
  const main0 = mainThreadCpuMs();
  const written0 = charsWritten();
  const pages = PAGES && instrumented;
  const wal0 = pages ? (await fs.stat(`${sqliteFile}-wal`)).size : 0;
  const start = performance.now();
  // the service's start applied the first copy's first events (those due at once)
  const from = replay.applied;
  if (from < copy.from || from >= copy.to) throw new Error(`the replay is at event ${from}, not in this copy`);
  // batches applied as the replay clock applies them (CaptureReplay.applyThrough): each one venue
  // operation, awaited only when the replay's window of batches in flight is full (then until the
  // oldest is durable and its reports delivered), as the replay clock awaits
  let memMs = 0;
  let waitMs = 0; // awaiting room in the window: the disk and the deliveries behind the replay
  const cpuMem = { user: 0, system: 0 };
  for (let i = from; i < copy.to; i += BATCH) {
    const w = performance.now();
    await replay.whenRoom();
    waitMs += performance.now() - w;
    const c = process.cpuUsage();
    const t = performance.now();
    replay.applyThrough(Math.min(copy.to, i + BATCH));
    memMs += performance.now() - t;
    const d = process.cpuUsage(c);
    cpuMem.user += d.user;
    cpuMem.system += d.system;
    if (PACE_ENGINE) {
      await replay.whenSettled();
      await engineDone(s);
    }
  }
  const w = performance.now();
  await replay.whenSettled(); // every batch durable, its reports and book changes delivered
  waitMs += performance.now() - w;
  await venue.whenWritten();
  const applied = copy.to - from;
  const venueMs = performance.now() - start;
  const cpuVenue = process.cpuUsage(cpu0);
  // end to end: the engine handles what the replay caused
  for (let round = 0; round < 5; round++) {
    await s.strategies.idle();
    await new Promise((r) => setImmediate(r));
  }
  const e2eMs = performance.now() - start;
  const cpuAll = process.cpuUsage(cpu0);
  const mainMs = mainThreadCpuMs() - main0;
  const written = charsWritten() - written0;
  const commits = commitsOf() - commits0;
  const syncs1 = syncsOf();
  const [checkpoints1, held1] = checkpointsOf();
  if (perfCtl) await fs.writeFile(perfCtl, 'disable\n');
  if (profiler) {
    const dir = process.env.BENCH_CPU_PROF!;
    await fs.mkdir(dir, { recursive: true });
    if (process.env.BENCH_HEAP) {
      const { profile: heap } = await profiler.post('HeapProfiler.stopSampling');
      await fs.writeFile(path.join(dir, 'replay.heapprofile'), JSON.stringify(heap));
    }
    const { profile } = await profiler.post('Profiler.stop');
    await fs.writeFile(path.join(dir, 'replay.cpuprofile'), JSON.stringify(profile));
    profiler.disconnect();
  }
  // the next copy's set-up and replay are not this one's
  await engineDone(s);
  const { fills, resolvedCancels } = tally;

  const figures: ReplayFigures = {
    perSec: applied / (e2eMs / 1000),
    mainUs: (mainMs * 1000) / applied,
    // V8's compiler and GC helper threads, the fsyncs' kernel time, the checkpointer
    otherUs: (cpuAll.user + cpuAll.system - mainMs * 1000) / applied,
  };
  if (warmUp) {
    console.log(
      `${label}: ${Math.round(figures.perSec).toLocaleString('en-US')} events/s end to end ` +
        `(${e2eMs.toFixed(0)} ms; CPU µs an event: main thread ${figures.mainUs.toFixed(1)}, other threads ` +
        `${figures.otherUs.toFixed(1)}; heap used after ${(process.memoryUsage().heapUsed / 1e6).toFixed(0)} MB)`,
    );
    return figures;
  }
  const all = await mine();
  const byStatus: Record<string, number> = {};
  for (const r of all) byStatus[r.status] = (byStatus[r.status] ?? 0) + 1;
  const byResolution = (r: (typeof all)[number]) =>
    r.status === 'CANCELED' && (r.view as { message?: string }).message === 'market resolved';
  // fired: the stop triggered (it planned its sell: a child sequence number was used), whatever came after
  // (a stop that fired as its market resolved ends CANCELED, market resolved, its sell refused there)
  const firedOf = (r: (typeof all)[number]) =>
    // the stored form read back (engine/actor-host.ts SnapshotForm)
    ((s.host.storedSnapshot(r) as { context?: { seq?: number } }).context?.seq ?? 0) > 0;
  const fired = all.filter(firedOf).length;
  const firedThenResolved = all.filter((r) => firedOf(r) && byResolution(r)).length;
  const endedByResolution = all.filter(byResolution).length;
  const resolvedMarkets = [...copy.conditionIds].filter((c) => venue.marketStatus(c)?.resolved).length;
  const perSec = (ms: number) => Math.round(applied / (ms / 1000)).toLocaleString('en-US');
  const cpuUs = (c: NodeJS.CpuUsage) =>
    `${((c.user + c.system) / applied).toFixed(1)} µs/event ` +
    `= ${Math.round((applied * 1e6) / (c.user + c.system)).toLocaleString('en-US')} events per ` +
    `CPU second`;
  console.log(
    `venue, in memory (every event applied to books, ledger, order states): ${perSec(memMs)} ` +
      `events/s (${memMs.toFixed(0)} ms; CPU ${cpuUs(cpuMem)}) — goal ≥ 50,000/s`,
  );
  console.log(
    `venue, durable (journal entries written, reports and book changes delivered to the ` +
      `engine): ${perSec(venueMs)} events/s (${venueMs.toFixed(0)} ms; CPU ${cpuUs(cpuVenue)})`,
  );
  console.log(
    `end to end (engine done with every report and trigger): ${perSec(e2eMs)} ` +
      `events/s (${e2eMs.toFixed(0)} ms; CPU ${cpuUs(cpuAll)}; the main thread's ` +
      `${figures.mainUs.toFixed(1)} µs/event, the other threads' ${figures.otherUs.toFixed(1)})`,
  );
  console.log(
    `store commits during the replay: ${commits} ` +
      `(${(commits / Math.ceil(applied / BATCH)).toFixed(1)} a batch); WAL fsyncs ${syncs1.count - syncs0.count} ` +
      `taking ${(syncs1.ms - syncs0.ms).toFixed(0)} ms in all (one after the other, beside the main thread); ` +
      `checkpoints ${checkpoints1 - checkpoints0} ` +
      `(${held1 - held0} holding the writes); waiting for room in the replay's window (the disk and the ` +
      `deliveries behind) ` +
      `${waitMs.toFixed(0)} ms; written ${(written / 1e6).toFixed(1)} MB (WAL and checkpoints: ` +
      `${(written / 1024 / Math.max(commits, 1)).toFixed(0)} KB a commit)`,
  );
  console.log(
    `strategies fired: ${fired} (${firedThenResolved} of them as their market resolved: CANCELED, market ` +
      `resolved); ended CANCELED by resolution: ${endedByResolution}; by status: ${JSON.stringify(byStatus)}`,
  );
  const failed = all.find((r) => r.status === 'FAILED');
  if (failed) console.log(`a fired stop that FAILED says: ${(failed.view as { message?: string }).message}`);
  console.log(
    `user fills: ${fills}; resting orders canceled by ` +
      `resolution: ${resolvedCancels}; markets resolved: ${resolvedMarkets}`,
  );
  if (pages) {
    console.log(`pages the replay's commits wrote to the WAL (checkpoints off), by table and index:`);
    for (const t of walPagesByTree(sqliteFile, wal0).slice(0, 16))
      console.log(`  ${t.name.padEnd(64)} ${String(t.frames).padStart(6)} pages ${t.mb.toFixed(2).padStart(6)} MB`);
  }
  return figures;
}

async function main(): Promise<void> {
  console.log(
    `bench:replay — ${STRATEGIES} armed STOP_LOSS, ${ORDERS} resting LIMIT buys, batches ` +
      `of ${BATCH} events, ${WARM_UPS} warm-up and ${RUNS} measured replays in one service, node ${process.version}, ` +
      `${os.cpus().length} cores`,
  );
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-replay-'));
  try {
    const { catalogue, copies } = withCopies(loadCatalogue(), WARM_UPS + RUNS);
    // SIM_CAPTURE_SPEED 1 (real time): the capture clock barely moves; the bench drives the capture itself
    const config = loadConfig({
      DATA_DIR: process.env.BENCH_MEMORY ? ':memory:' : dir,
      LOG_LEVEL: 'silent',
      MASTER_API_KEY: 'pts_bench_master_key_0123456789abcdef',
      SIM_REPLAY: 'off',
      SIM_CAPTURE: 'on',
      SIM_CAPTURE_SPEED: '1',
      SIM_MAKER_REFILL_MS: '3600000',
      SIM_INITIAL_PUSD: '1000000',
      TRADE_HISTORY: process.env.TRADE_HISTORY, // off: what recording fills and prints costs
    });
    // BENCH_PAGES: the WAL keeps every frame of the replays (no checkpoint starts it over)
    const store = PAGES ? await SqliteStore.open(dir, { checkpointBytes: Number.MAX_SAFE_INTEGER }) : undefined;
    const s: Services = (await startServices(config, createLogger('silent'), { catalogue, store })).services;
    (s.venue as SimVenue).capture!.stop();
    const tally: ReportTally = { fills: 0, resolvedCancels: 0 };
    s.venue.onReport((r) => {
      if (r.type === 'venue.filled') tally.fills++;
      else if (r.type === 'venue.canceled' && r.reason === 'market resolved') tally.resolvedCancels++;
    });
    const sqliteFile = path.join(dir, SQLITE_FILE);
    const capture = catalogue.capture!;
    console.log(
      `capture events a replay: ${copies[0]!.to - copies[0]!.from} ` +
        `(levels, trade prints, tick changes, resolutions); ` +
        `skipped ${capture.skips.errorRows} error rows, ${capture.skips.unusable} unusable`,
    );
    const firsts: ReplayFigures[] = [];
    const runs: ReplayFigures[] = [];
    for (const [i, copy] of copies.entries()) {
      const warmUp = i < WARM_UPS;
      const label = warmUp
        ? `warm-up replay ${i + 1} of ${WARM_UPS}`
        : `measured replay ${i + 1 - WARM_UPS} of ${RUNS}${i === copies.length - 1 ? " (the capture's own ids)" : ''}`;
      (warmUp ? firsts : runs).push(await replayCopy(s, tally, copy, label, warmUp, i === WARM_UPS, sqliteFile));
    }
    await s.stop();
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[(xs.length - 1) >> 1]!;
    const events = (x: number) => Math.round(x).toLocaleString('en-US');
    const cold = (firsts[0] ?? runs[0])!;
    console.log(
      `the service's first replay (V8 compiling the engine as it runs): ${events(cold.perSec)} events/s end to end ` +
        `(CPU µs an event: main thread ${cold.mainUs.toFixed(1)}, other threads ${cold.otherUs.toFixed(1)})`,
    );
    console.log(
      `end to end, median of the ${RUNS} measured replays after ${WARM_UPS} warm-up${WARM_UPS === 1 ? '' : 's'}: ` +
        `${events(median(runs.map((r) => r.perSec)))} events/s ` +
        `(each: ${runs.map((r) => events(r.perSec)).join(', ')}; ` +
        `CPU µs an event, median: main thread ${median(runs.map((r) => r.mainUs)).toFixed(1)}, other threads ` +
        `${median(runs.map((r) => r.otherUs)).toFixed(1)}) — goal ≥ 40,000/s`,
    );
  } finally {
    if (process.env.BENCH_KEEP) console.log(`data folder kept: ${dir}`);
    else await fs.rm(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
