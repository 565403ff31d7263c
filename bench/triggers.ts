/**
 * `npm run bench:triggers`: arms STOP_LOSS / TRAILING_STOP
 * strategies across 100 tokens on the SQLite store (on disk) through the strategy service (the
 * request check, the actor host, the store: what POST /v2/trade/order does without its HTTP
 * layer), `BENCH_ARM_CONCURRENCY` (256) at a time, as concurrent requests would; then drives book
 * updates that move the touch without firing anything. Prints:
 * - the arming rate — target ≥ 25,000 strategies a second;
 * - the time per book update (a venue order placed and canceled inside the spread, the engine's
 *   trigger check included) with 1,000 and with all armed — target ratio ≤ 1.2;
 * - the trigger index alone per touch change, for the same two sizes;
 * - memory per armed strategy (heap and RSS growth / armed)
 *   — target: heap < 0.7 KB (most of it the stored record: its snapshot is kept in the compact stored
 *   form 2 of engine/actor-host.ts `SnapshotForm`, ~86 characters for a STOP_LOSS, ~130 for a
 *   TRAILING_STOP, instead of ~1,000 in XState's form), with the RSS broken down (heapUsed,
 *   heap committed but free after a full GC, external / array buffers, the rest: code, malloc,
 *   stacks) and V8's spaces (committed / used). At a million the gap RSS − heapUsed is almost all
 *   old space committed but free after a full GC: fragmentation, which one compacting GC gives
 *   back (`BENCH_COMPACT=1` prints RSS after one; opt-in, as it changes what is measured after);
 * - the time to restore all of them at start-up (a service start on the stored data, once the
 *   stopped services' heap is collected, as in a new process), with its phases — target < 10 s;
 * - disk per armed strategy: growth of the SQLite files (store.sqlite + its -wal) while arming
 *   — target < 1 KB.
 *
 * Runs in-process (services without HTTP): arming a million over REST would measure the HTTP
 * stack. BENCH_ARMED overrides 100,000; a million needs a larger heap:
 * `BENCH_ARMED=1000000 NODE_OPTIONS=--max-old-space-size=12000 npm run bench:triggers`.
 * `BENCH_RESTORE_PROF=<dir>` writes a V8 CPU profile of the restart alone (`restore.cpuprofile`);
 * `BENCH_ARM_PROF=<dir>` one of the arming window after the first 1,000 (`arming.cpuprofile`).
 * `BENCH_KEEP=1` keeps the data folder (its path is printed last) for a look at the stored rows.
 * Run with `node --expose-gc` for exact heap figures, and `--max-semi-space-size=64` (the npm
 * script does both): with a heap of a million stored records each young-generation collection
 * costs more, and a larger young generation runs fewer of them (at 300,000 armed, one run each on
 * the shared 2-core machine: book update CPU ratio 1.95 → 1.26, arming 139 → 116 µs of CPU each).
 */
import fs from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import os from 'node:os';
import path from 'node:path';
import type { Services } from '../engine/service.js';
import type { OrderRequest } from '../schemas/orders.js';
import { built } from './proc.js';

const { loadConfig } = await built<typeof import('../engine/config.js')>('engine/config.js');
const { createLogger } = await built<typeof import('../engine/logger.js')>('engine/logger.js');
const { startServices } = await built<typeof import('../engine/service.js')>('engine/service.js');
const { loadCatalogue } = await built<typeof import('../engine/venue/markets.js')>('engine/venue/markets.js');
const { str } = await built<typeof import('../engine/decimal.js')>('engine/decimal.js');
const { SQLITE_FILE } = await built<typeof import('../engine/store/sqlite.js')>('engine/store/sqlite.js');

const ARMED = Number(process.env.BENCH_ARMED ?? 100_000);
const TOKENS = 100;
const UPDATES = 2_000;
/**
 * Arming requests in flight. A request is answered once its commit is synced to the WAL (an fsync of
 * some 6 ms at the median and 30 ms at p90 on the 2-core machine), so a fleet arming 25,000 a second
 * has about 250 requests in flight (Little's law): 256. Commits then group about four times as many
 * inserts as at 64, which costs less CPU per armed strategy (100,000 armed, back to back, load ~5:
 * 62 µs at 64, 53 at 256, 52 at 1,024).
 */
const CONCURRENCY = Number(process.env.BENCH_ARM_CONCURRENCY ?? 256);
const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});

interface Memory {
  heap: number;
  heapTotal: number;
  rss: number;
  external: number;
  arrayBuffers: number;
}

function memory(): Memory {
  gc();
  gc();
  const m = process.memoryUsage();
  return { heap: m.heapUsed, heapTotal: m.heapTotal, rss: m.rss, external: m.external, arrayBuffers: m.arrayBuffers };
}

async function start(dir: string): Promise<Services> {
  const config = loadConfig({
    DATA_DIR: dir,
    LOG_LEVEL: 'silent',
    MASTER_API_KEY: 'pts_bench_master_key_0123456789abcdef',
    SIM_REPLAY: 'off',
    SIM_MAKER_REFILL_MS: '3600000',
  });
  const { services } = await startServices(config, createLogger('silent'), { catalogue });
  return services;
}

const catalogue = loadCatalogue();

/** Sizes (bytes) of the SQLite store's files in `dir`: the database file and its WAL (0 when absent). */
async function storeBytes(dir: string): Promise<{ main: number; wal: number }> {
  const size = (name: string) =>
    fs.stat(path.join(dir, name)).then(
      (st) => st.size,
      () => 0,
    );
  return { main: await size(SQLITE_FILE), wal: await size(`${SQLITE_FILE}-wal`) };
}

let wiggles = 0;

/** Places and cancels a bid one tick above the best bid of `token`: two touch changes, nothing fires. */
async function wiggle(s: Services, mover: string, token: string): Promise<void> {
  const n = ++wiggles;
  const t = s.venue.touch(token);
  const info = s.venue.token(token)!;
  const price = str(t.bid!.plus(info.tickSize));
  await s.venue.submit({
    orderId: `mv-${token.slice(0, 8)}-${n}`,
    userId: mover,
    tokenId: token,
    side: 'buy',
    kind: 'limit',
    price,
    size: str(info.minSize),
    quoteAmount: null,
    timeInForce: 'GTC',
    postOnly: false,
  });
  await s.venue.cancel(`mv-${token.slice(0, 8)}-${n}`, { code: 'USER_CANCELED', message: 'canceled by user' });
}

/**
 * Times {@link UPDATES} book updates (after a warm-up).
 * @returns µs per book update: wall clock, and CPU time of the process (what the machine's other
 *   load does not inflate; each wiggle = 2 updates).
 */
async function timeUpdates(s: Services, mover: string, tokens: string[]): Promise<{ wall: number; cpu: number }> {
  for (let i = 0; i < 200; i++) await wiggle(s, mover, tokens[i % tokens.length]!); // warm-up
  await s.strategies.idle();
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < UPDATES / 2; i++) await wiggle(s, mover, tokens[i % tokens.length]!);
  await s.strategies.idle();
  const c = process.cpuUsage(c0);
  return { wall: ((performance.now() - t0) * 1000) / UPDATES, cpu: (c.user + c.system) / UPDATES };
}

function timeIndex(s: Services, tokens: string[]): number {
  const idx = s.strategies.triggers;
  const touches = tokens.map((t) => s.venue.touch(t)).map((t) => ({ bid: str(t.bid!), ask: str(t.ask!) }));
  const t0 = performance.now();
  let fired = 0;
  const N = 200_000;
  for (let i = 0; i < N; i++) {
    const k = i % tokens.length;
    const tt = touches[k]!;
    // alternate between two touches that fire nothing
    // same prices, new strings: a full check
    fired += idx.fire(tokens[k]!, i % 2 ? tt : { bid: tt.bid, ask: `${tt.ask}0` }).length;
  }
  if (fired) throw new Error(`bench book updates fired ${fired} strategies`);
  return ((performance.now() - t0) * 1000) / N;
}

/** Starts a V8 CPU profile when `dir` is set (a `BENCH_*_PROF` setting), or does nothing. */
async function startProfile(dir: string | undefined): Promise<Session | null> {
  if (!dir) return null;
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  return session;
}

/** Stops a profile {@link startProfile} started and writes it to `dir`/`file`. */
async function stopProfile(session: Session | null, dir: string | undefined, file: string): Promise<void> {
  if (!session || !dir) return;
  const { profile } = await session.post('Profiler.stop');
  await fs.mkdir(dir, { recursive: true });
  await fs.writeFile(path.join(dir, file), JSON.stringify(profile));
  session.disconnect();
}

/**
 * Arms strategies `from` … `to` − 1, {@link CONCURRENCY} requests at a time. The request bodies
 * (a STOP_LOSS 0.05 under the token's best bid, a TRAILING_STOP whose mark is 0.05 over it) are
 * worked out once per token at the start (nothing fires while arming, so the touch stays): what a
 * client does is not in the arming CPU; each request still gets a body object of its own, as a
 * parsed request would.
 */
async function arm(s: Services, userId: string, tokens: string[], from: number, to: number): Promise<void> {
  let next = from;
  const bodies = new Map<string, [OrderRequest, OrderRequest]>();
  for (const token of tokens) {
    const bid = s.venue.touch(token).bid!;
    bodies.set(token, [
      { symbol: token, side: 'sell', type: 'STOP_LOSS', price: str(bid.minus('0.05')), size: '5' },
      {
        symbol: token,
        side: 'sell',
        type: 'TRAILING_STOP',
        size: '5',
        execution: { high_water_mark: str(bid.plus('0.05')), trailing_offset: '0.1' },
      },
    ]);
  }
  const one = async (i: number) => {
    const template = bodies.get(tokens[i % tokens.length]!)![i % 2]!;
    const body: OrderRequest = template.execution
      ? { ...template, execution: { ...template.execution } }
      : { ...template };
    await s.strategies.start('demo', s.strategies.check(userId, body));
  };
  const worker = async () => {
    for (let i = next++; i < to; i = next++) await one(i);
  };
  await Promise.all(Array.from({ length: Math.max(1, CONCURRENCY) }, worker));
}

async function main(): Promise<void> {
  console.log(
    `bench:triggers — ${ARMED} armed over ${TOKENS} tokens, ${CONCURRENCY} at a time, ` +
      `node ${process.version}, ${os.cpus().length} cores, ` +
      `heap limit ${Math.round((await import('node:v8')).getHeapStatistics().heap_size_limit / 2 ** 20)} MB`,
  );
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-triggers-'));
  try {
    let s = await start(dir);
    const { user } = await s.users.provision('demo', 'bench', null);
    const { user: mover } = await s.users.provision('demo', 'mover', null);
    const tokens = catalogue.markets
      .filter(
        (m) =>
          m.tokens.length &&
          s.venue.touch(m.tokens[0]!.tokenId).bid?.gt('0.2') &&
          s.venue.touch(m.tokens[0]!.tokenId).bid?.lt('0.8'),
      )
      .slice(0, TOKENS)
      .map((m) => m.tokens[0]!.tokenId);
    // shares to sell: 5 in each token (stops do not reserve shares)
    for (const t of tokens) {
      await s.venue.submit({
        orderId: `seed-${t.slice(0, 10)}`,
        userId: user._id,
        tokenId: t,
        side: 'buy',
        kind: 'limit',
        price: '0.99',
        size: '5',
        quoteAmount: null,
        timeInForce: 'IOC',
        postOnly: false,
      });
    }
    const before = memory();
    const storeBefore = await storeBytes(dir);
    const small = Math.min(1_000, ARMED);
    const t0 = performance.now();
    await arm(s, user._id, tokens, 0, small);
    const perUpdateSmall = await timeUpdates(s, mover._id, tokens);
    const indexSmall = timeIndex(s, tokens);
    const armProfiler = await startProfile(process.env.BENCH_ARM_PROF);
    const t1 = performance.now();
    const cpu1 = process.cpuUsage();
    await arm(s, user._id, tokens, small, ARMED);
    const cpuArm = process.cpuUsage(cpu1);
    const armEnd = performance.now();
    await stopProfile(armProfiler, process.env.BENCH_ARM_PROF, 'arming.cpuprofile');
    const armCpuUs = (cpuArm.user + cpuArm.system) / (ARMED - small);
    const armSeconds = (armEnd - t0) / 1000;
    const armRate = (ARMED - small) / ((armEnd - t1) / 1000);
    const after = memory();
    const perUpdateLarge = await timeUpdates(s, mover._id, tokens);
    const indexLarge = timeIndex(s, tokens);
    console.log(
      `armed ${ARMED} in ${armSeconds.toFixed(1)} s (the book updates at ${small} ` +
        `included): ${Math.round(armRate)} strategies a second after the first ${small} (target ≥ 25,000), ` +
        `CPU ${armCpuUs.toFixed(0)} µs each (${Math.round(1e6 / armCpuUs)} a second on one free core); ` +
        `index holds ${s.strategies.triggers.size}`,
    );
    console.log(
      `book update (venue place/cancel + trigger check), CPU time: ${perUpdateSmall.cpu.toFixed(1)} µs ` +
        `with ${small} armed, ${perUpdateLarge.cpu.toFixed(1)} µs with ${ARMED} armed — ` +
        `ratio ${(perUpdateLarge.cpu / perUpdateSmall.cpu).toFixed(2)} (target ≤ 1.2); ` +
        `wall clock ${perUpdateSmall.wall.toFixed(1)} → ${perUpdateLarge.wall.toFixed(1)} µs ` +
        `(ratio ${(perUpdateLarge.wall / perUpdateSmall.wall).toFixed(2)})`,
    );
    console.log(
      `trigger index alone per touch change: ${indexSmall.toFixed(2)} µs ` +
        `with ${small}, ${indexLarge.toFixed(2)} µs with ${ARMED} — ` +
        `ratio ${(indexLarge / indexSmall).toFixed(2)}`,
    );
    const heapPer = (after.heap - before.heap) / ARMED;
    const rssPer = (after.rss - before.rss) / ARMED;
    console.log(
      `memory per armed strategy: heap ${(heapPer / 1024).toFixed(2)} KB, ` +
        `RSS ${(rssPer / 1024).toFixed(2)} KB (target: heap < 0.7 KB)`,
    );
    const kb = (bytes: number) => `${(bytes / ARMED / 1024).toFixed(2)} KB`;
    const rest = after.rss - before.rss - (after.heapTotal - before.heapTotal) - (after.external - before.external);
    console.log(
      `  RSS breakdown per armed strategy: heapUsed ${kb(after.heap - before.heap)}, ` +
        `heapTotal ${kb(after.heapTotal - before.heapTotal)} ` +
        `(committed but free after GC ${kb(after.heapTotal - after.heap - (before.heapTotal - before.heap))}), ` +
        `external ${kb(after.external - before.external)} ` +
        `(arrayBuffers ${kb(after.arrayBuffers - before.arrayBuffers)}), ` +
        `rest (code, malloc arenas, stacks) ${kb(rest)}; ` +
        `totals after: rss ${Math.round(after.rss / 2 ** 20)} MB, ` +
        `heapTotal ${Math.round(after.heapTotal / 2 ** 20)} MB, ` +
        `heapUsed ${Math.round(after.heap / 2 ** 20)} MB`,
    );
    if (process.env.BENCH_COMPACT === '1') {
      // diagnostic (opt-in: it changes the figures after it): the heap committed but free after
      // a full GC is fragmentation of the old space; one compacting full GC (what V8's memory
      // reducer runs in an idle process) gives it back
      const v8flags = await import('node:v8');
      v8flags.setFlagsFromString('--compact-on-every-full-gc');
      gc();
      v8flags.setFlagsFromString('--no-compact-on-every-full-gc');
      await new Promise((r) => setTimeout(r, 2_000)); // freed pages are unmapped by a background thread
      const c = process.memoryUsage();
      console.log(
        `  after one compacting full GC: RSS ${kb(c.rss - before.rss)}, ` +
          `heapTotal ${kb(c.heapTotal - before.heapTotal)}, ` +
          `heapUsed ${kb(c.heapUsed - before.heap)} per armed strategy`,
      );
    }
    const disk = await storeBytes(dir);
    console.log(
      `disk per armed strategy: ${kb(disk.main + disk.wal - storeBefore.main - storeBefore.wal)} ` +
        `(${SQLITE_FILE} ${Math.round(disk.main / 2 ** 20)} MB + -wal ${Math.round(disk.wal / 2 ** 20)} MB ` +
        'after arming, growth since the first strategy; target < 1 KB)',
    );
    const v8 = await import('node:v8');
    const spaces = v8.getHeapSpaceStatistics().filter((sp) => sp.space_size > 2 ** 20);
    const mb = (bytes: number) => Math.round(bytes / 2 ** 20);
    console.log(
      `  V8 spaces after (committed / used MB): ` +
        spaces.map((sp) => `${sp.space_name} ${mb(sp.space_size)}/${mb(sp.space_used_size)}`).join(', '),
    );
    await s.stop();
    console.log(
      `  after the stop (WAL checkpointed into it): ${SQLITE_FILE} ` +
        `${kb((await storeBytes(dir)).main - storeBefore.main)} per armed strategy`,
    );
    // a restart is a new process: the stopped services' heap (gigabytes at a million armed) is
    // dropped first, not marked by every collection of the start-up
    s = undefined as unknown as Services;
    memory();
    const profiler = await startProfile(process.env.BENCH_RESTORE_PROF);
    const beforeRestore = performance.now();
    const restoreCpu0 = process.cpuUsage();
    s = await start(dir);
    const restoreSeconds = (performance.now() - beforeRestore) / 1000;
    const restoreCpu = process.cpuUsage(restoreCpu0);
    await stopProfile(profiler, process.env.BENCH_RESTORE_PROF, 'restore.cpuprofile');
    const p = s.startPhasesMs;
    console.log(
      `restart: ${s.restoredAtStart} actors restored and re-armed in ${restoreSeconds.toFixed(1)} s (target < ` +
        `10 s; CPU ${((restoreCpu.user + restoreCpu.system) / 1e6).toFixed(1)} s): ` +
        `store opened and loaded ${(p.open / 1000).toFixed(1)} s, actors ` +
        `restored ${(p.restore / 1000).toFixed(1)} s, reconciled ${(p.reconcile / 1000).toFixed(1)} s; ` +
        `index holds ${s.strategies.triggers.size}`,
    );
    // the owner's list (GET of a user's strategies: ActorRepository.findOwned, newest first, a page
    // of 50 and the total), each right after one more strategy is armed: a range of the
    // `ownerUserId, createdAtMs, _id` index
    const PAGES = 20;
    const c2 = process.cpuUsage();
    for (let i = 0; i < PAGES; i++) {
      await arm(s, user._id, tokens, ARMED + i, ARMED + i + 1);
      const { records, total } = await s.actors.findOwned(user._id, { kind: 'strategy' }, { limit: 50 });
      if (records.length !== 50 || total < ARMED) throw new Error(`findOwned gave ${records.length} of ${total}`);
    }
    const pageCpu = process.cpuUsage(c2);
    console.log(
      `owner's list after each arming (findOwned, limit 50, with the total of ${ARMED + PAGES}): ` +
        `CPU ${((pageCpu.user + pageCpu.system) / PAGES / 1000).toFixed(2)} ms per arming + page`,
    );
    await s.stop();
  } finally {
    if (process.env.BENCH_KEEP === '1') console.log(`data kept in ${dir}`);
    else await fs.rm(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
