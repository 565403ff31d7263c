/**
 * `npm run bench:host-step`: the cost of one persisted actor step in the actor host
 * (engine/actor-host.ts) through its public API, on the services' own host (every `changed`
 * listener of the services attached), SQLite in memory and on disk:
 * - `BENCH_ACTORS` (5,000) order actors created (`ActorHost.create`), then walked through an
 *   order's usual venue reports (accepted resting, a partial fill, the last fill: `ActorHost.send`),
 *   `BENCH_INFLIGHT` (64) actors at a time;
 * - the same with `ActorHost.batch`: `BENCH_INFLIGHT` actors per batch (one transaction each), one
 *   batch of creations, then one batch per report.
 * The order machine is the service's (machines/order.ts, the REST view and status of
 * engine/orders.ts) with its venue effects supplied as no-ops and no trade-history writes: what is
 * measured is the host's step (transition, stored snapshot, record write, notifications, effects),
 * not the venue's. Prints, per round and as medians over `BENCH_ROUNDS` (3): CPU µs per creation
 * and per step of the process (all threads) and of the main thread (from /proc, 10 ms ticks), and
 * the wall rate. `BENCH_CPU_PROF=<dir>` writes a V8 CPU profile of the measured part of each store
 * (`host-step-memory.cpuprofile`, `host-step-disk.cpuprofile`). `BENCH_STORE=memory|disk` runs one
 * store, `BENCH_WAYS=send|batch` one way.
 * It prints figures; it judges nothing.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { AnyEventObject } from 'xstate';
import { createLogger } from '../engine/logger.js';
import { orderView } from '../engine/orders.js';
import { startServices, type Services } from '../engine/service.js';
import {
  isOrderFinal,
  orderMachine,
  ORDER_MACHINE_VERSION,
  ORDER_SNAPSHOT_FORM,
  ORDER_STATUS,
  type OrderInput,
  type OrderState,
} from '../machines/order.js';
import { BENCH_ORDER, benchConfig } from './arming.js';
import { mainThreadCpuMs } from './proc.js';

const ACTORS = Number(process.env.BENCH_ACTORS ?? 5_000);
const INFLIGHT = Number(process.env.BENCH_INFLIGHT ?? 64);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const PROF_DIR = process.env.BENCH_CPU_PROF;
const STORES = (process.env.BENCH_STORE ?? 'memory,disk').split(',') as Array<'memory' | 'disk'>;
const WAYS = (process.env.BENCH_WAYS ?? 'send,batch').split(',') as Way[];

const MACHINE = 'bench-order';

/** The order input of actor `id` (a GTC LIMIT buy of 10 shares). */
function inputOf(id: string, now: number): OrderInput {
  return { ...BENCH_ORDER, orderId: id, createdAtMs: now };
}

/** The reports every order takes, in order: accepted resting, a partial fill, the last fill. */
function reportsOf(id: string, now: number): AnyEventObject[] {
  return [
    { type: 'venue.accepted', resting: true },
    {
      type: 'venue.filled',
      tradeId: `${id}-t1`,
      price: '0.5',
      size: '4',
      liquidity: 'maker',
      completes: false,
      atMs: now,
      feeUsd: '0',
    },
    {
      type: 'venue.filled',
      tradeId: `${id}-t2`,
      price: '0.5',
      size: '6',
      liquidity: 'maker',
      completes: true,
      atMs: now,
      feeUsd: '0',
    },
  ];
}

/** Registers the bench's order definition on the services' host (venue effects as no-ops). */
function register(s: Services): void {
  s.host.register({
    machineId: MACHINE,
    version: ORDER_MACHINE_VERSION,
    kind: 'order',
    logic: orderMachine.provide({
      actions: { submitToVenue: () => {}, cancelAtVenue: () => {}, expireAtVenue: () => {} },
    }),
    statusOf: (snap) => ORDER_STATUS[snap.value as OrderState],
    viewOf: orderView,
    typeOf: (snap) => (snap.context.isTakeProfit ? 'TAKE_PROFIT' : snap.context.type),
    isFinal: isOrderFinal,
    takesWhenFinal: (e) => e.type === 'venue.filled',
    form: ORDER_SNAPSHOT_FORM,
  });
}

interface Cost {
  /** Process CPU µs per operation (every thread). */
  cpuUs: number;
  /** Main thread CPU µs per operation. */
  mainUs: number;
  /** Operations a second, wall clock. */
  perSec: number;
}

/** Runs `work` (which does `ops` operations) and measures it. */
async function measure(ops: number, work: () => Promise<void>): Promise<Cost> {
  const c0 = process.cpuUsage();
  const m0 = mainThreadCpuMs();
  const t0 = performance.now();
  await work();
  const wall = performance.now() - t0;
  const c = process.cpuUsage(c0);
  return {
    cpuUs: (c.user + c.system) / ops,
    mainUs: ((mainThreadCpuMs() - m0) * 1000) / ops,
    perSec: (ops * 1000) / wall,
  };
}

/** Runs `each` for every id, {@link INFLIGHT} at a time. */
async function inFlight(ids: string[], each: (id: string) => Promise<unknown>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < ids.length) await each(ids[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(INFLIGHT, ids.length) }, lane));
}

/** Splits `ids` into groups of {@link INFLIGHT}. */
function groups(ids: string[]): string[][] {
  const out: string[][] = [];
  for (let i = 0; i < ids.length; i += INFLIGHT) out.push(ids.slice(i, i + INFLIGHT));
  return out;
}

type Way = 'send' | 'batch';
type Round = Record<Way, { create: Cost; step: Cost }>;

/** One round on `s`: {@link ACTORS} actors each way. */
async function round(s: Services, r: number): Promise<Round> {
  const now = s.clock.now();
  const out = {} as Round;
  for (const way of r % 2 === 0 ? WAYS : [...WAYS].reverse()) {
    const ids = Array.from({ length: ACTORS }, (_, i) => `ord_bench_${way}_${r}_${i}`);
    const reports = new Map(ids.map((id) => [id, reportsOf(id, now)]));
    const base = { partnerId: 'demo', ownerUserId: 'usr_bench' };
    const create =
      way === 'send'
        ? await measure(ACTORS, () =>
            inFlight(ids, (id) => s.host.create(MACHINE, { id, input: inputOf(id, now), ...base })),
          )
        : await measure(ACTORS, async () => {
            await Promise.all(
              groups(ids).map((g) =>
                s.host.batch(g, (b) => {
                  for (const id of g) b.create(MACHINE, { id, input: inputOf(id, now), ...base });
                }),
              ),
            );
          });
    const step = await measure(ACTORS * 3, async () => {
      for (let k = 0; k < 3; k++) {
        if (way === 'send') await inFlight(ids, (id) => s.host.send(id, reports.get(id)![k]!));
        else
          await Promise.all(
            groups(ids).map((g) =>
              s.host.batch(g, (b) => {
                for (const id of g) b.step(id, reports.get(id)![k]!);
              }),
            ),
          );
      }
    });
    await s.host.whenIdle();
    for (const id of [ids[0]!, ids[ids.length - 1]!]) {
      const status = (s.host.recordOf(id) ?? (await s.actors.get(id)))?.status;
      if (status !== 'FILLED') throw new Error(`${way}: order ${id} ended ${status}`);
    }
    out[way] = { create, step };
  }
  return out;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const show = (c: Cost) =>
  `CPU ${c.cpuUs.toFixed(1).padStart(6)} µs (main thread ${c.mainUs.toFixed(1).padStart(6)} µs)  ` +
  `${Math.round(c.perSec).toLocaleString('en-US').padStart(7)} /s`;

async function runStore(store: 'memory' | 'disk'): Promise<void> {
  const dir = store === 'disk' ? mkdtempSync(path.join(tmpdir(), 'bench-host-step-')) : null;
  const config = benchConfig(dir ?? ':memory:');
  const { services: s } = await startServices(config, createLogger('silent'), {});
  try {
    register(s);
    await round(s, -1); // warm-up
    const session = PROF_DIR ? new Session() : null;
    if (session) {
      session.connect();
      await session.post('Profiler.enable');
      await session.post('Profiler.start');
    }
    const rounds: Round[] = [];
    console.log(`\nSQLite ${store === 'disk' ? `on disk (${dir})` : 'in memory'}`);
    for (let r = 0; r < ROUNDS; r++) {
      const x = await round(s, r);
      rounds.push(x);
      for (const way of WAYS)
        console.log(`  round ${r + 1} ${way.padEnd(5)} create ${show(x[way].create)} | step ${show(x[way].step)}`);
    }
    if (session) {
      const { profile } = await session.post('Profiler.stop');
      writeFileSync(path.join(PROF_DIR!, `host-step-${store}.cpuprofile`), JSON.stringify(profile));
      session.disconnect();
    }
    for (const way of WAYS)
      for (const what of ['create', 'step'] as const) {
        const m = (k: keyof Cost) => median(rounds.map((x) => x[way][what][k]));
        console.log(
          `  median ${(way === 'send' ? 'create/send' : 'batch').padEnd(11)} per ${what.padEnd(6)} ` +
            show({ cpuUs: m('cpuUs'), mainUs: m('mainUs'), perSec: m('perSec') }),
        );
      }
  } finally {
    await s.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
}

console.log(
  `bench:host-step — ${ACTORS} order actors a round and way, ${INFLIGHT} in flight / per batch, ` +
    `${ROUNDS} rounds, node ${process.version}, ${(await import('node:os')).availableParallelism()} cores (shared)`,
);
for (const store of STORES) await runStore(store);
