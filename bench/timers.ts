/**
 * `npm run bench:timers` (issue 15, item 4): arms 10,000 actor deadlines through the path actors
 * use (actor host → `TimerService` → Agenda 6 over the embedded backend, `SCHEDULER_POLL_MS` at its
 * default), due spread evenly over 60 s, and records each delivery. Prints:
 * - lateness at the scheduler's sink (delivery time − due time): p50 / p99 / max;
 * - lateness at the actor (its `timer.fired` transition persisted and its action run);
 * - delivered, lost (not delivered within a grace period after the last due time) and fired twice;
 * - whether the goal is met: p99 < 50 ms at the sink, 0 lost, 0 fired twice.
 *
 * Each timer belongs to its own tiny actor (one deadline, final on `timer.fired`), created through
 * `ActorHost.create`, which persists it and arms the deadline from `context.deadlines`. Arming runs
 * before the first due time (`BENCH_LEAD_S` after the start); timers armed after their due time are
 * counted and reported.
 *
 * In-process, one Node process. Knobs: BENCH_TIMERS (10000), BENCH_SPAN_S (60), BENCH_LEAD_S
 * (lead before the first due time, 20), BENCH_GRACE_S (10), BENCH_STORE=disk (embedded store on
 * disk in a temp DATA_DIR; in memory by default), SCHEDULER_POLL_MS (as the service reads it).
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { assign, setup } from 'xstate';
import { ActorHost } from '../engine/actor-host.js';
import { systemClock } from '../engine/clock.js';
import { loadConfig } from '../engine/config.js';
import { createLogger } from '../engine/logger.js';
import { TimerService, type TimerData } from '../engine/scheduler/timers.js';
import { ActorRepository } from '../engine/store/actors.js';
import { openStore } from '../engine/store/index.js';

const TIMERS = Number(process.env.BENCH_TIMERS ?? 10_000);
const SPAN_S = Number(process.env.BENCH_SPAN_S ?? 60);
const LEAD_S = Number(process.env.BENCH_LEAD_S ?? 20);
const GRACE_S = Number(process.env.BENCH_GRACE_S ?? 10);
const DISK = process.env.BENCH_STORE === 'disk';

/** Per timer: when the sink and the actor saw it (ms since epoch, fractional), how often. */
interface Seen {
  dueMs: number;
  armedAtMs: number;
  sinkAtMs: number;
  sinkCount: number;
  actorAtMs: number;
  actorCount: number;
}

const seen = new Map<string, Seen>();
/** Wall clock with sub-millisecond resolution. */
const nowMs = (): number => performance.timeOrigin + performance.now();

/** One deadline, final when it fires; the action records when the actor handled it. */
const machine = setup({
  types: {
    context: {} as { id: string; deadlines: Record<string, number> },
    input: {} as { id: string; dueMs: number },
    events: {} as { type: 'timer.fired'; name: string; atMs: number },
  },
  actions: {
    record: ({ context }) => {
      const s = seen.get(context.id);
      if (s) {
        s.actorCount++;
        if (s.actorCount === 1) s.actorAtMs = nowMs();
      }
    },
  },
  guards: {
    isCurrent: ({ context, event }) => context.deadlines[event.name] === event.atMs,
  },
}).createMachine({
  id: 'bench-timer',
  context: ({ input }) => ({ id: input.id, deadlines: { due: input.dueMs } }),
  initial: 'armed',
  states: {
    armed: { on: { 'timer.fired': { guard: 'isCurrent', target: 'fired', actions: [assign({ deadlines: {} }), 'record'] } } },
    fired: { type: 'final' },
  },
});

function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!;
}

function figures(label: string, values: number[]): string {
  const v = [...values].sort((a, b) => a - b);
  return `${label}: p50 ${percentile(v, 0.5).toFixed(1)} ms, p99 ${percentile(v, 0.99).toFixed(1)} ms, max ${(v[v.length - 1] ?? NaN).toFixed(1)} ms`;
}

async function main(): Promise<void> {
  const dir = DISK ? await fs.mkdtemp(path.join(os.tmpdir(), 'pts-timers-')) : null;
  const config = loadConfig({ ...process.env, DATA_DIR: dir ?? ':memory:', LOG_LEVEL: 'silent', MONGODB_URI: '' });
  console.log(
    `bench:timers — ${TIMERS} timers due over ${SPAN_S} s, store ${DISK ? 'on disk' : 'in memory'}, SCHEDULER_POLL_MS ${config.schedulerPollMs}, node ${process.version}, ${os.cpus().length} cores`,
  );
  const log = createLogger('silent');
  const store = await openStore(config, log);
  const hostRef: { current: ActorHost | null } = { current: null };
  const sink = async (t: TimerData): Promise<void> => {
    const at = nowMs();
    const s = seen.get(t.actorId);
    if (s) {
      s.sinkCount++;
      if (s.sinkCount === 1) s.sinkAtMs = at;
    }
    await hostRef.current!.deliverTimer(t);
  };
  const timers = new TimerService(store, sink, log, config.schedulerPollMs);
  const repo = await ActorRepository.open(store);
  const host = new ActorHost(repo, timers, systemClock, log);
  hostRef.current = host;
  host.register({ machineId: 'bench-timer', version: 1, kind: 'bench', logic: machine, statusOf: (s) => String(s.value).toUpperCase() });
  await timers.start();
  try {
    // due times: whole milliseconds (the actor's deadline), spread evenly over the span
    const firstDueMs = Math.ceil(Date.now() + LEAD_S * 1000);
    const t0 = performance.now();
    for (let i = 0; i < TIMERS; i++) {
      const id = `bt-${i}`;
      const dueMs = firstDueMs + Math.floor((i * SPAN_S * 1000) / TIMERS);
      seen.set(id, { dueMs, armedAtMs: 0, sinkAtMs: 0, sinkCount: 0, actorAtMs: 0, actorCount: 0 });
      await host.create<typeof machine>('bench-timer', { id, input: { id, dueMs }, partnerId: 'bench', ownerUserId: null });
      seen.get(id)!.armedAtMs = nowMs();
    }
    const armS = (performance.now() - t0) / 1000;
    const armedLate = [...seen.values()].filter((s) => s.armedAtMs > s.dueMs).length;
    console.log(`armed ${TIMERS} in ${armS.toFixed(1)} s (${(TIMERS / armS).toFixed(0)}/s), first due ${LEAD_S} s after the start; armed after their due time: ${armedLate}`);
    const lastDueMs = firstDueMs + Math.floor(((TIMERS - 1) * SPAN_S * 1000) / TIMERS);
    const deadline = lastDueMs + GRACE_S * 1000;
    const cpu0 = process.cpuUsage();
    const wall0 = performance.now();
    const all = [...seen.values()];
    while (Date.now() < deadline && all.some((s) => s.actorCount === 0)) await new Promise((r) => setTimeout(r, 200));
    // a little longer: a second firing of the last ones would show up here
    await new Promise((r) => setTimeout(r, Math.min(2_000, Math.max(0, deadline - Date.now()))));
    const cpu = process.cpuUsage(cpu0);
    const wallS = (performance.now() - wall0) / 1000;
    const delivered = all.filter((s) => s.sinkCount > 0);
    const lost = all.filter((s) => s.actorCount === 0).length;
    const twice = all.filter((s) => s.sinkCount > 1 || s.actorCount > 1).length;
    const sinkLateness = delivered.map((s) => s.sinkAtMs - s.dueMs);
    const actorLateness = all.filter((s) => s.actorCount > 0).map((s) => s.actorAtMs - s.dueMs);
    const early = sinkLateness.filter((l) => l < 0).length;
    const sorted = [...sinkLateness].sort((a, b) => a - b);
    const p99 = percentile(sorted, 0.99);
    console.log(figures('lateness at the scheduler sink (delivery − due)', sinkLateness));
    console.log(figures('lateness at the actor (timer.fired persisted, action run)', actorLateness));
    console.log(`delivered ${delivered.length} of ${TIMERS}; lost ${lost} (not handled within ${GRACE_S} s after the last due time); fired twice ${twice}; early ${early}`);
    console.log(`process CPU while firing: ${(((cpu.user + cpu.system) / 1e6 / wallS) * 100).toFixed(0)} % of one core over ${wallS.toFixed(1)} s`);
    const met = p99 < 50 && lost === 0 && twice === 0;
    console.log(`goal (p99 < 50 ms, 0 lost, 0 fired twice): ${met ? 'met' : 'NOT met'}`);
  } finally {
    await timers.drain(5_000);
    await store.close();
    if (dir) await fs.rm(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
