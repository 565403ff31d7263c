/**
 * `npm run bench:stepper`: the actor host's pure stepper (engine/actor-host.ts `PureStepper`: one
 * shared inert actor scope per machine without children, a template for inert initial snapshots)
 * against XState's public pure functions `initialTransition()` / `transition()` (which build a
 * throwaway actor and two actor systems per call), in one process, on the same machines and inputs:
 * - initial snapshots a second for STOP_LOSS inputs as the strategy service checks them (arming);
 * - transitions a second for an order's usual events (accepted resting, a partial fill, the last fill);
 * - initial snapshots a second for an order (its entry action collected from the template);
 * - and, for comparison, the JSON text of an order's snapshot as the host stores it (kinds without
 *   a form): the host's own `persistedSnapshotJson` against `JSON.stringify(getPersistedSnapshot())`.
 *
 * Rounds alternate between the two steppers; each round prints its rate and the process's CPU time
 * per operation, then the medians, the spread (min–max of the rounds, the machine's noise) and the
 * ratio. `BENCH_ROUNDS` (7) and `BENCH_MS` (time per round and stepper, 1000) override.
 */
import {
  initialTransition,
  transition,
  type AnyEventObject,
  type AnyMachineSnapshot,
  type AnyStateMachine,
} from 'xstate';
import { PureStepper, persistedSnapshotJson } from '../engine/actor-host.js';
import { orderMachine, type OrderInput } from '../machines/order.js';
import { stopLossMachine } from '../machines/stop-loss.js';
import type { StrategyInput } from '../machines/strategy-kit.js';
import { BENCH_ORDER, startArming } from './arming.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const ROUND_MS = Number(process.env.BENCH_MS ?? 1000);

type ExecutableAction = { type: string; params?: unknown; info?: unknown; exec?: unknown };
type Step = [AnyMachineSnapshot, ExecutableAction[]];

interface Stepper {
  initial(input: unknown): Step;
  transition(snapshot: AnyMachineSnapshot, event: AnyEventObject): Step;
}

/** XState's own pure functions (`initialTransition`, `transition`): what the host's stepper is measured against. */
class XStateStepper implements Stepper {
  constructor(private readonly logic: AnyStateMachine) {}

  initial(input: unknown): Step {
    return initialTransition(this.logic, input as never) as unknown as Step;
  }

  transition(snapshot: AnyMachineSnapshot, event: AnyEventObject): Step {
    return transition(this.logic, snapshot as never, event) as unknown as Step;
  }
}

/** STOP_LOSS inputs as the strategy service checks them (one user, four tokens, distinct record ids). */
async function stopLossInputs(n: number): Promise<StrategyInput[]> {
  const { services: s, userId, body } = await startArming('bench-stepper');
  try {
    return Array.from({ length: n }, (_, i) => s.strategies.check(userId, body(2 * i)));
  } finally {
    await s.stop();
  }
}

const ORDER: OrderInput = BENCH_ORDER;
const ORDER_EVENTS: AnyEventObject[] = [
  { type: 'venue.accepted', resting: true },
  { type: 'venue.filled', tradeId: 't1', price: '0.5', size: '4', liquidity: 'maker', completes: false },
  { type: 'venue.filled', tradeId: 't2', price: '0.5', size: '6', liquidity: 'maker', completes: true },
];

interface Sample {
  perSec: number;
  cpuUs: number;
}

/**
 * Runs `op` (which does `per` operations) for {@link ROUND_MS}: operations a second (wall) and CPU µs per operation.
 */
function round(op: (i: number) => void, per: number): Sample {
  let n = 0;
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  let t = t0;
  while (t - t0 < ROUND_MS) {
    for (let k = 0; k < 100; k++) op(n++);
    t = performance.now();
  }
  const c = process.cpuUsage(c0);
  return { perSec: (n * per * 1000) / (t - t0), cpuUs: (c.user + c.system) / (n * per) };
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const fmt = (x: number): string => Math.round(x).toLocaleString('en-US');

const STEPPERS = { old: "XState's initialTransition / transition", now: 'host PureStepper' };

/** Alternating rounds of `old` and `now`, then the medians and spreads. */
function compare(
  title: string,
  per: number,
  ops: { old: (i: number) => void; now: (i: number) => void },
  labels: { old: string; now: string } = STEPPERS,
): void {
  const width = Math.max(labels.old.length, labels.now.length);
  console.log(`\n${title}`);
  const runs: Record<'old' | 'now', Sample[]> = { old: [], now: [] };
  for (let i = 0; i < 2; i++) {
    round(ops.old, per);
    round(ops.now, per);
  } // warm-up
  for (let r = 0; r < ROUNDS; r++) {
    for (const k of r % 2 === 0 ? (['old', 'now'] as const) : (['now', 'old'] as const)) {
      const s = round(ops[k], per);
      runs[k].push(s);
      console.log(
        `  round ${r + 1} ${labels[k].padEnd(width)}  ${fmt(s.perSec).padStart(9)} /s  ` +
          `CPU ${s.cpuUs.toFixed(2).padStart(6)} µs`,
      );
    }
  }
  const line = (k: 'old' | 'now', label: string) => {
    const rates = runs[k].map((s) => s.perSec);
    const cpu = runs[k].map((s) => s.cpuUs);
    console.log(
      `  ${label} median ${fmt(median(rates)).padStart(9)} /s ` +
        `(rounds ${fmt(Math.min(...rates))}–${fmt(Math.max(...rates))})  CPU ` +
        `median ${median(cpu).toFixed(2)} µs ` +
        `(${Math.min(...cpu).toFixed(2)}–${Math.max(...cpu).toFixed(2)})`,
    );
  };
  line('old', labels.old.padEnd(width));
  line('now', labels.now.padEnd(width));
  const o = median(runs.old.map((s) => s.cpuUs));
  const nw = median(runs.now.map((s) => s.cpuUs));
  console.log(
    `  ${labels.now} / ${labels.old}, CPU per operation: ${(nw / o).toFixed(2)}×  (${(nw - o).toFixed(2)} µs)`,
  );
}

/** The snapshot after {@link ORDER_EVENTS}. */
function lifecycleEnd(stepper: Stepper, first: AnyMachineSnapshot): AnyMachineSnapshot {
  let snap = first;
  for (const e of ORDER_EVENTS) snap = stepper.transition(snap, e)[0];
  return snap;
}

async function main(): Promise<void> {
  const inputs = await stopLossInputs(4096);
  const mask = inputs.length - 1;
  const steppers = { old: new XStateStepper(stopLossMachine), now: new PureStepper(stopLossMachine) as Stepper };
  let sink = 0;
  console.log(
    `bench:stepper — ${ROUNDS} rounds of ${ROUND_MS} ms per stepper, ` +
      `node ${process.version}, ${(await import('node:os')).availableParallelism()} cores ` +
      `(shared)`,
  );
  compare('STOP_LOSS initial snapshot (arming): one per operation', 1, {
    old: (i) => void (sink += steppers.old.initial(inputs[i & mask]).length),
    now: (i) => void (sink += steppers.now.initial(inputs[i & mask]).length),
  });
  const orders = { old: new XStateStepper(orderMachine), now: new PureStepper(orderMachine) as Stepper };
  // the host's first order of a process teaches its stepper the template; the orders after it are made from it
  orders.now.initial(ORDER);
  const first = { old: orders.old.initial(ORDER)[0], now: orders.now.initial(ORDER)[0] };
  const lifecycle = (k: 'old' | 'now') => () => {
    let snap = first[k];
    for (const e of ORDER_EVENTS) {
      const [next, actions] = orders[k].transition(snap, e);
      snap = next;
      sink += actions.length;
    }
    if (snap.value !== 'filled') throw new Error(`order ended in ${JSON.stringify(snap.value)}`);
  };
  compare('order transitions (accepted resting, partial fill, last fill): one per operation', ORDER_EVENTS.length, {
    old: lifecycle('old'),
    now: lifecycle('now'),
  });
  compare('order initial snapshot (entry action submitToVenue, collected from the template): one per operation', 1, {
    old: () => void (sink += orders.old.initial(ORDER).length),
    now: () => void (sink += orders.now.initial(ORDER).length),
  });
  const filled = lifecycleEnd(orders.now, first.now);
  compare(
    'an order snapshot as the host stores it (no form): JSON text, one per operation',
    1,
    {
      old: () => void (sink += JSON.stringify(orderMachine.getPersistedSnapshot(filled)).length),
      now: () => void (sink += persistedSnapshotJson(orderMachine, filled).length),
    },
    { old: 'JSON.stringify(getPersistedSnapshot())', now: 'host persistedSnapshotJson (built by hand)' },
  );
  if (sink < 0) console.log(sink);
}

await main();
