/**
 * `npm run bench:copytrade`: copytrade latency and exactly-once.
 *
 * 1. Latency, in process, SQLite on disk: one leader (a user of this service), BENCH_FOLLOWERS
 *    (default 1000) followers each with an ACTIVE subscription ($1 FOK market buys); the leader
 *    buys BENCH_LATENCY_FILLS (default 20) times, one at a time. For each leader fill, from the
 *    moment its history row is committed, two clocks stop:
 *    - "accepted by the venue" (the issue's measure): the venue's operation holding the copies
 *      (`submitMany`) is durable in its journal and its first report of every copy is out (the
 *      venue first: the copies' records commit after it, their exactly-once resting on the venue's
 *      idempotence by order id: docs/architecture.md, "Copytrade");
 *    - "answered, recorded" (stricter): every copy's order actor has recorded the venue's answer
 *      (its step left SUBMITTED: live, filled or refused, with the fill in the trade history).
 *    Prints p50 / p99 / max per fill (all copies) and per copy, and the process's CPU time per copy
 *    over the fan-out (from the first leader order to the last copy settled). Goal: p99 < 100 ms.
 * 2. kill -9: the service as a child process (`dist/api/main.js`, SQLite on disk), the same
 *    followers created over REST, a burst of BENCH_BURST (default 50) leader buys, `kill -9` once
 *    half of them were answered, then a restart on the same DATA_DIR: per subscription, leader
 *    fills missing from its history (lost) and copies with more than one order or rows for one
 *    fill (duplicated), counted. Goal: 0 and 0.
 *
 *    Skips are counted by their recorded reason. The script exits 1 when a copy was lost or
 *    duplicated (or no leader fill was recorded at all).
 *
 * Develop with small sizes: `BENCH_FOLLOWERS=20 BENCH_BURST=10 npm run bench:copytrade`;
 * `BENCH_ONLY=latency` or `BENCH_ONLY=kill` runs one part; `BENCH_CPU_PROF=<dir>` writes a V8 CPU
 * profile of the latency part's fan-out (`copytrade-fanout.cpuprofile`); with `BENCH_CPU_PROF_EACH=1`, one
 * per leader fill besides (`fill-<i>.cpuprofile`, to the fill recorded: the first fill after the start apart).
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { SERVICE_NODE_FLAGS } from '../api/node-flags.js';
import { COPYTRADE_HISTORY } from '../engine/copytrade/service.js';
import { settingsOfRequest } from '../engine/copytrade/requests.js';
import { loadConfig } from '../engine/config.js';
import { createLogger } from '../engine/logger.js';
import { startServices, type Services } from '../engine/service.js';
import { SqliteStore } from '../engine/store/sqlite.js';
import type { TraderFill } from '../engine/data/records.js';
import { TRADER_FILLS } from '../engine/data/records.js';
import { copyOrderId, type CopyHistoryEntry } from '../machines/copytrade.js';
import type { CopytradeRequest } from '../schemas/copytrade.js';
import { copyEveryFill } from '../test/api/trading-kit.js';

/** A JSON answer's fields as this script reads them. */
type Json = { safe_address?: string; markets?: unknown };

const FOLLOWERS = Number(process.env.BENCH_FOLLOWERS ?? 1000);
const LATENCY_FILLS = Number(process.env.BENCH_LATENCY_FILLS ?? 20);
const BURST = Number(process.env.BENCH_BURST ?? 50);
/** `latency` or `kill`: run that part alone. */
const ONLY = process.env.BENCH_ONLY;
/** A folder: a V8 CPU profile of the latency part's fan-out (the leader fills, not the set-up) goes there. */
const PROF = process.env.BENCH_CPU_PROF;
/**
 * With BENCH_CPU_PROF: one profile per leader fill besides (`fill-<i>.cpuprofile`; the fan-out one
 * then holds the rest).
 */
const PROF_EACH = process.env.BENCH_CPU_PROF_EACH === '1';
const KEY = 'pts_bench_copytrade_master_key_0123456789';
const ENV = {
  SIM_REPLAY: 'off',
  SIM_CAPTURE: 'off',
  SIM_MAKER_REFILL_MS: '50',
  LOG_LEVEL: 'warn',
  RATE_LIMIT_PER_MIN: '0',
};

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]! : NaN;
};
const fmt = (xs: number[]) =>
  `p50 ${pct(xs, 50).toFixed(1)} ms, p99 ${pct(xs, 99).toFixed(1)} ms, ` +
  `max ${Math.max(...xs).toFixed(1)} ms (n=${xs.length})`;

/** A token with asks to buy from (the first market's first token). */
function tradableToken(s: Services): string {
  for (const m of s.venue.markets()) {
    const t = m.tokens[0]!.tokenId;
    const touch = s.venue.touch(t);
    if (touch.ask && touch.bid && touch.ask.lt(0.9) && touch.bid.gt(0.1)) return t;
  }
  throw new Error('no tradable token');
}

/** CPU µs of a synchronous span (the process's, so a sampler's or a helper thread's time counts too). */
function cpuOf(t0: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(t0);
  return d.user + d.system;
}

/**
 * Times the venue's operation of each batch of copies (`submitMany` with more than one order): its
 * synchronous part (in memory, up to the journal entry handed to the store), and within it the
 * matching (`place` of each order) and the journal entry's JSON; CPU µs per copy and wall ms per
 * fill, the first fill apart (JIT warm-up). Reads the simulated venue's internals: measure only.
 */
function timeVenueOperation(s: Services): { print(): void } {
  type Internals = {
    submitMany(orders: readonly unknown[]): Promise<void>;
    entryJson(...a: unknown[]): string;
  };
  const v = s.venue as unknown as Internals;
  const ops: { copies: number; ms: number; cpu: number; placeCpu: number; jsonCpu: number }[] = [];
  let c0 = process.cpuUsage();
  let placeCpu = 0;
  let jsonCpu = 0;
  const submitMany = v.submitMany.bind(v);
  v.submitMany = (orders) => {
    if (orders.length < 2) return submitMany(orders);
    placeCpu = jsonCpu = 0;
    c0 = process.cpuUsage();
    const t0 = performance.now();
    const done = submitMany(orders);
    ops.push({ copies: orders.length, ms: performance.now() - t0, cpu: cpuOf(c0), placeCpu, jsonCpu });
    return done;
  };
  // the orders are placed between the operation's start and its journal entry's JSON
  const entryJson = v.entryJson.bind(v);
  v.entryJson = (...a) => {
    const j0 = process.cpuUsage();
    placeCpu = cpuOf(c0);
    const json = entryJson(...a);
    jsonCpu = cpuOf(j0);
    return json;
  };
  return {
    print() {
      const line = (label: string, xs: typeof ops) => {
        const n = xs.reduce((a, o) => a + o.copies, 0) || 1;
        const sum = (f: (o: (typeof ops)[number]) => number) => xs.reduce((a, o) => a + f(o), 0);
        console.log(
          `    ${label}: ${(sum((o) => o.ms) / Math.max(1, xs.length)).toFixed(1)} ms a fill; CPU ` +
            `${(sum((o) => o.cpu) / n).toFixed(1)} µs a copy (matching ${(sum((o) => o.placeCpu) / n).toFixed(1)}, ` +
            `journal entry JSON ${(sum((o) => o.jsonCpu) / n).toFixed(1)})`,
        );
      };
      console.log(
        `  the venue's operation of a fill's copies (submitMany, in memory; the matching: the time before its ` +
          `journal entry; ${ops.length} operations):`,
      );
      line('the first', ops.slice(0, 1));
      line('the others', ops.slice(1));
    },
  };
}

async function latency(): Promise<void> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-bench-copytrade-'));
  const config = loadConfig({ ...process.env, ...ENV, DATA_DIR: dir, MASTER_API_KEY: KEY });
  const { services: s } = await startServices(config, createLogger('warn'));
  try {
    const partner = config.partnerId;
    const leader = (await s.users.provision(partner, 'leader', null)).user;
    const subs: string[] = [];
    for (let i = 0; i < FOLLOWERS; i++) {
      const u = (await s.users.provision(partner, `f${i}`, null)).user;
      const body = copyEveryFill(leader.safeAddress, 1) as CopytradeRequest;
      const rec = await s.copytrade.create(u, `ct_bench_${i}`, settingsOfRequest(body), 'ACTIVE');
      subs.push(rec._id);
    }
    const token = tradableToken(s);
    const spans = timeVenueOperation(s);
    const leaderAddress = leader.safeAddress.toLowerCase();
    /** Per leader fill, both clocks: the venue's acceptance of all its copies, then their answers recorded. */
    type Countdown = { left: number; done: (ms: number) => void };
    type FillClocks = { t0: number; accepted: Countdown; recorded: Countdown };
    const pending = new Map<string, { key: string; t0: number }>();
    const atVenue = new Map<string, { key: string; t0: number }>();
    const perFill = new Map<string, FillClocks>();
    const perCopy: number[] = [];
    const perCopyAccepted: number[] = [];
    s.history.onRecorded((b) => {
      for (const f of b.fills) {
        if (f.address !== leaderAddress) continue;
        const key = `${f.transactionHash}:${f.logIndex}`;
        const t0 = performance.now();
        for (const id of subs) {
          const orderId = copyOrderId(id, key);
          pending.set(orderId, { key, t0 });
          atVenue.set(orderId, { key, t0 });
        }
        const w = perFill.get('next');
        if (w) {
          perFill.delete('next');
          perFill.set(key, { ...w, t0 });
        }
      }
    });
    // the venue's first report of a copy: its operation is durable and the copy is at the venue
    s.venue.onReport((r) => {
      const p = atVenue.get(r.orderId);
      if (!p) return;
      atVenue.delete(r.orderId);
      const ms = performance.now() - p.t0;
      perCopyAccepted.push(ms);
      const f = perFill.get(p.key);
      if (f && --f.accepted.left === 0) f.accepted.done(ms);
    });
    s.host.on('changed', (c) => {
      if (c.record.kind !== 'order' || c.record.status === 'SUBMITTED') return;
      const p = pending.get(c.record._id);
      if (!p) return;
      pending.delete(c.record._id);
      const ms = performance.now() - p.t0;
      perCopy.push(ms);
      const f = perFill.get(p.key);
      if (f && --f.recorded.left === 0) f.recorded.done(ms);
    });
    const fills: number[] = [];
    const fillsAccepted: number[] = [];
    const within30s = (p: Promise<number>) =>
      Promise.race([p, new Promise<number>((r) => setTimeout(() => r(NaN), 30_000))]);
    const profiler = PROF ? new Session() : null;
    if (profiler) {
      profiler.connect();
      await profiler.post('Profiler.enable');
      await profiler.post('Profiler.start');
    }
    const cpu0 = process.cpuUsage();
    for (let i = 0; i < LATENCY_FILLS; i++) {
      let accepted!: Promise<number>;
      const recorded = new Promise<number>((resolveRecorded) => {
        accepted = new Promise<number>((resolveAccepted) =>
          perFill.set('next', {
            t0: 0,
            accepted: { left: FOLLOWERS, done: resolveAccepted },
            recorded: { left: FOLLOWERS, done: resolveRecorded },
          }),
        );
      });
      const input = s.orders.check(leader._id, { symbol: token, side: 'buy', type: 'MARKET', quote_amount: '5' });
      await s.orders.place(partner, input);
      fillsAccepted.push(await within30s(accepted));
      fills.push(await within30s(recorded));
      if (profiler && PROF_EACH) {
        const { profile } = await profiler.post('Profiler.stop');
        await fs.mkdir(PROF!, { recursive: true });
        await fs.writeFile(path.join(PROF!, `fill-${i}.cpuprofile`), JSON.stringify(profile));
        await profiler.post('Profiler.start');
      }
    }
    await s.copytrade.idle();
    const cpu = process.cpuUsage(cpu0);
    if (profiler) {
      const { profile } = await profiler.post('Profiler.stop');
      await fs.mkdir(PROF!, { recursive: true });
      await fs.writeFile(path.join(PROF!, 'copytrade-fanout.cpuprofile'), JSON.stringify(profile));
      profiler.disconnect();
    }
    console.log(`latency, ${FOLLOWERS} followers, ${LATENCY_FILLS} leader fills (store on disk)`);
    const cpuUs = cpu.user + cpu.system;
    console.log(
      `  CPU of the process from the first leader order to the last copy settled: ${(cpuUs / 1000).toFixed(0)} ms, ` +
        `${(cpuUs / Math.max(1, perCopy.length)).toFixed(0)} µs per copy (${perCopy.length} copies)`,
    );
    const done = (xs: number[]) => xs.filter((x) => !Number.isNaN(x));
    console.log(`  leader fill → all copies accepted by the venue (issue's measure): ${fmt(done(fillsAccepted))}`);
    console.log(
      `    the first leader fill ${fillsAccepted[0]?.toFixed(1)} ms; the others ${fmt(done(fillsAccepted.slice(1)))}`,
    );
    console.log(`  leader fill → one copy accepted by the venue: ${fmt(perCopyAccepted)}`);
    console.log(`  leader fill → all copies' answers recorded on their orders (stricter): ${fmt(done(fills))}`);
    console.log(`  leader fill → one copy's answer recorded: ${fmt(perCopy)}`);
    console.log(`  fills not fully copied within 30 s: ${fills.filter((x) => Number.isNaN(x)).length}`);
    spans.print();
  } finally {
    await s.stop();
    await fs.rm(dir, { recursive: true, force: true });
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = net.createServer().listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

async function killNine(): Promise<void> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-bench-copytrade-kill-'));
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ...ENV,
    DATA_DIR: dir,
    MASTER_API_KEY: KEY,
    PORT: String(port),
    HOST: '127.0.0.1',
  };
  delete env.MONGODB_URI;
  const child = spawn(process.execPath, [...SERVICE_NODE_FLAGS, 'dist/api/main.js'], { env, stdio: 'ignore' });
  const exited = new Promise((r) => child.on('exit', r));
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`${base}/healthz`)).status === 200) break;
    } catch {
      /* not up yet */
    }
    if (i > 400) throw new Error('service did not start');
    await new Promise((r) => setTimeout(r, 50));
  }
  const call = async (u: string, method: string, p: string, body?: unknown) => {
    const r = await fetch(base + p, {
      method,
      headers: {
        authorization: `Bearer ${KEY}`,
        'content-type': 'application/json',
        'x-partner-user-id': u,
        ...(method === 'GET' ? {} : { 'idempotency-key': randomUUID() }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: r.status, body: (await r.json()) as Record<string, unknown> & Json };
  };
  const leader = (await call('leader', 'POST', '/v2/trade/users', { partner_user_id: 'leader' })).body;
  const follow = async (i: number) => {
    await call(`f${i}`, 'POST', '/v2/trade/users', { partner_user_id: `f${i}` });
    const r = await call(`f${i}`, 'POST', '/v2/trade/copytrade', copyEveryFill(String(leader.safe_address), 1));
    if (r.status !== 200) throw new Error(`subscription ${i}: ${r.status} ${JSON.stringify(r.body)}`);
  };
  for (let i = 0; i < FOLLOWERS; i += 16)
    await Promise.all(Array.from({ length: Math.min(16, FOLLOWERS - i) }, (_, k) => follow(i + k)));
  const markets = (await call('leader', 'GET', '/v2/trade/markets?limit=20')).body.markets as {
    tokens: { token_id: string }[];
  }[];
  const token = markets[0]!.tokens[0]!.token_id;
  let answered = 0;
  const burst = (async () => {
    for (let i = 0; i < BURST; i++) {
      const r = await call('leader', 'POST', '/v2/trade/order', {
        symbol: token,
        side: 'buy',
        type: 'MARKET',
        quote_amount: '2',
      }).catch(() => null);
      if (!r) return;
      answered++;
    }
  })();
  while (answered < Math.ceil(BURST / 2)) await new Promise((r) => setTimeout(r, 2));
  child.kill('SIGKILL');
  await exited;
  await burst;
  // what the killed process had made durable: copies in flight are those still to come
  const dead = await SqliteStore.open(dir);
  const actors = await dead.collection('actors');
  const atKill = {
    fills: await (await dead.collection(TRADER_FILLS)).count({ address: String(leader.safe_address).toLowerCase() }),
    rows: await (await dead.collection(COPYTRADE_HISTORY)).count({}),
    orders: await actors.count({ kind: 'order' }),
    open: await actors.count({ kind: 'order', final: false }),
  };
  await dead.close();

  const config = loadConfig({ ...process.env, ...ENV, DATA_DIR: dir, MASTER_API_KEY: KEY });
  const { services: s } = await startServices(config, createLogger('warn'));
  try {
    await s.copytrade.idle();
    const address = String(leader.safe_address).toLowerCase();
    const fills = await (await s.store.collection<TraderFill>(TRADER_FILLS)).find({ address });
    const keys = new Set(fills.map((f) => `${f.transactionHash}:${f.logIndex}`));
    const rows = await (await s.store.collection<CopyHistoryEntry>(COPYTRADE_HISTORY)).find({});
    const orders = await s.actors.find({ kind: 'order' }, { limit: 10_000_000 });
    const ordersBySub = new Map<string, number>();
    for (const o of orders) {
      const parent = (o.view as { record_id?: string | null }).record_id;
      if (parent) ordersBySub.set(parent, (ordersBySub.get(parent) ?? 0) + 1);
    }
    const bySub = new Map<string, CopyHistoryEntry[]>();
    for (const r of rows) if (r.kind !== 'realized') bySub.set(r.copytradeId, [...(bySub.get(r.copytradeId) ?? []), r]);
    let lost = 0;
    let duplicated = 0;
    let copies = 0;
    const skips = new Map<string, number>();
    for (const [sub, rs] of bySub) {
      const seen = new Set(rs.map((r) => `${r.fill!.transactionHash}:${r.fill!.logIndex}`));
      for (const k of keys) if (!seen.has(k)) lost++;
      duplicated += rs.length - seen.size;
      const copied = rs.filter((r) => r.kind === 'copy').length;
      copies += copied;
      for (const r of rs) if (r.kind === 'skip') skips.set(r.reason!, (skips.get(r.reason!) ?? 0) + 1);
      duplicated += Math.max(0, (ordersBySub.get(sub) ?? 0) - copied);
    }
    lost += (FOLLOWERS - bySub.size) * keys.size;
    console.log(
      `kill -9 during a burst of ${BURST} leader buys (${answered} answered before the kill), ${FOLLOWERS} followers`,
    );
    console.log(
      `  at the kill: ${atKill.fills} leader fills, ${atKill.rows} of their ${atKill.fills * FOLLOWERS} ` +
        `copies or skips decided, ${atKill.orders} orders on record (the leader's included), ` +
        `${atKill.open} of them not final; copies decided without an order yet: ` +
        `${Math.max(0, atKill.rows - (atKill.orders - atKill.fills))} (in flight)`,
    );
    console.log(
      `  after the restart: leader fills recorded: ${keys.size}; copies made: ${copies}; history rows: ${rows.length}`,
    );
    const reasons = [...skips].map(([r, n]) => `${r} ${n}`).join(', ') || 'none';
    console.log(`  skipped (each recorded with its reason): ${reasons}`);
    console.log(`  lost: ${lost}   duplicated: ${duplicated}   (goal 0 and 0)`);
    if (lost > 0 || duplicated > 0 || keys.size === 0) process.exitCode = 1;
  } finally {
    await s.stop();
    await fs.rm(dir, { recursive: true, force: true });
  }
}

if (ONLY !== 'kill') await latency();
if (ONLY !== 'latency') await killNine();
