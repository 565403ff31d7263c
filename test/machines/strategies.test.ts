import { describe, expect, it } from 'vitest';
import { initialTransition, transition, type AnyStateMachine } from 'xstate';
import { getShortestPaths } from 'xstate/graph';
import { BRACKET_STATUS, bracketMachine } from '../../machines/bracket.js';
import { ICEBERG_STATUS, icebergMachine } from '../../machines/iceberg.js';
import { PEGGED_STATUS, peggedMachine } from '../../machines/pegged.js';
import { STOP_LOSS_STATUS, stopLossMachine } from '../../machines/stop-loss.js';
import {
  placeRetryDelayMs,
  type CancelOrderParams,
  type StrategyContext,
  type StrategyEvent,
  type StrategyInput,
} from '../../machines/strategy-kit.js';
import { TRAILING_BUY_STATUS, trailingBuyMachine } from '../../machines/trailing-buy.js';
import { TRAILING_STOP_STATUS, trailingStopMachine } from '../../machines/trailing-stop.js';
import { TWAP_STATUS, twapMachine } from '../../machines/twap.js';
import { baseStrategyInput } from './strategy-input.js';

const base = baseStrategyInput;
const touch = (bid: string | null, ask: string | null): StrategyEvent => ({ type: 'book.touch', bid, ask });
const upd = (n: number, status: string, filled: string, matched: string, final: boolean): StrategyEvent => ({
  type: 'order.updated',
  orderId: `ord_stg1_${n}`,
  status,
  filledSize: filled,
  matchedAmount: matched,
  final,
});
const refused: StrategyEvent = {
  type: 'order.refused',
  orderId: 'ord_stg1_1',
  error: 'order crosses book',
  reason: 'post-only',
};
const cancel: StrategyEvent = { type: 'strategy.cancel' };
/** The working child canceled by its market's resolution (the venue's reason `market resolved`). */
const resolvedCancel = (n: number): StrategyEvent => ({
  type: 'order.updated',
  orderId: `ord_stg1_${n}`,
  status: 'CANCELED',
  filledSize: '0',
  matchedAmount: '0',
  final: true,
  marketResolved: true,
});
const entry = (status: string, filled: string, final: boolean): StrategyEvent => ({
  type: 'order.updated',
  orderId: 'ord_e1',
  status,
  filledSize: filled,
  matchedAmount: String(Number(filled) / 2),
  final,
});
const refusedAs = (n: number | 'e1'): StrategyEvent => ({
  type: 'order.refused',
  orderId: n === 'e1' ? 'ord_e1' : `ord_stg1_${n}`,
  error: 'rejected',
  reason: 'no',
});
const leg = (price: string, requestedSize: string | null) => ({
  price,
  requestedSize,
  size: null,
  order_id: null,
  id: null,
  status: 'WAITING',
  error: null,
});
const timer = (name: string, atMs: number): StrategyEvent => ({ type: 'timer.fired', name, atMs });
/**
 * The engine could not place child n. For ICEBERG / PEGGED (child n fails at its n-th failure in a
 * row) `atMs` is chosen so that every retry is due at 10 000 ms: one timer event covers them all.
 */
const notPlaced = (n: number): StrategyEvent => ({
  type: 'order.placeFailed',
  orderId: `ord_stg1_${n}`,
  error: 'placement_failed',
  reason: 'store write failed',
  atMs: 10_000 - placeRetryDelayMs(n),
});
const riskRefused = (n: number): StrategyEvent => ({
  type: 'order.refused',
  orderId: `ord_stg1_${n}`,
  error: 'INSUFFICIENT_BALANCE',
  reason: 'needs $5',
});
/** Child n refused because its market resolved first: the strategy ends CANCELED, `market resolved`. */
const closedRefused = (n: number): StrategyEvent => ({
  type: 'order.refused',
  orderId: `ord_stg1_${n}`,
  error: 'market_closed',
  reason: 'market resolved',
});

/** Per machine: input, event alphabet, status table, states only passed through (transient). */
const CASES: Array<{
  name: string;
  machine: AnyStateMachine;
  input: StrategyInput;
  events: StrategyEvent[];
  status: Record<string, string>;
  transient?: string[];
}> = [
  {
    name: 'STOP_LOSS',
    machine: stopLossMachine,
    status: STOP_LOSS_STATUS,
    input: { ...base, price: '0.5', size: '10' },
    events: [
      touch('0.52', '0.57'),
      touch('0.5', '0.52'),
      upd(1, 'PARTIALLY_FILLED', '4', '2', false),
      upd(1, 'FILLED', '10', '5', true),
      refused,
      closedRefused(1),
      resolvedCancel(1),
      cancel,
      notPlaced(1),
      notPlaced(2),
      notPlaced(3),
    ],
  },
  {
    name: 'TRAILING_STOP',
    machine: trailingStopMachine,
    status: TRAILING_STOP_STATUS,
    input: { ...base, type: 'TRAILING_STOP', size: '10', highWaterMark: '0.6', offsetAbs: '0.05', offsetPct: null },
    events: [
      touch('0.65', '0.67'),
      touch('0.6', '0.62'),
      touch('0.55', '0.57'),
      upd(1, 'FILLED', '10', '5.5', true),
      refused,
      closedRefused(1),
      resolvedCancel(1),
      cancel,
      notPlaced(1),
      notPlaced(2),
      notPlaced(3),
    ],
  },
  {
    name: 'TRAILING_BUY',
    machine: trailingBuyMachine,
    status: TRAILING_BUY_STATUS,
    input: {
      ...base,
      type: 'TRAILING_BUY',
      side: 'buy',
      quoteAmount: '10',
      lowWaterMark: '0.4',
      offsetAbs: null,
      offsetPct: '12.5',
      priceCeiling: '0.5',
    },
    events: [
      touch('0.33', '0.35'),
      touch('0.43', '0.45'),
      touch('0.53', '0.55'),
      upd(1, 'FILLED', '22.22', '9.999', true),
      refused,
      closedRefused(1),
      resolvedCancel(1),
      cancel,
      notPlaced(1),
      notPlaced(2),
      notPlaced(3),
    ],
  },
  {
    name: 'TWAP',
    machine: twapMachine,
    status: TWAP_STATUS,
    transient: ['slicing'],
    input: {
      ...base,
      type: 'TWAP',
      side: 'buy',
      price: '0.5',
      size: '30',
      intervalMs: 10_000,
      durationMs: 30_000,
      slicesTotal: 3,
      passive: false,
    },
    events: [
      upd(1, 'FILLED', '10', '5', true),
      upd(1, 'CANCELED', '0', '0', true),
      upd(2, 'FILLED', '10', '5', true),
      upd(3, 'FILLED', '10', '5', true),
      timer('slice', 10_000),
      timer('slice', 20_000),
      timer('end', 30_000),
      refused,
      closedRefused(1),
      cancel,
      notPlaced(1),
    ],
  },
  {
    name: 'ICEBERG',
    machine: icebergMachine,
    status: ICEBERG_STATUS,
    transient: ['placing'],
    input: {
      ...base,
      type: 'ICEBERG',
      side: 'buy',
      price: '0.5',
      size: '20',
      clipSize: '10',
      tolerancePct: '5',
      touch: { bid: '0.49', ask: '0.51' },
    },
    events: [
      upd(1, 'FILLED', '10', '5', true),
      upd(2, 'FILLED', '10', '5', true),
      upd(1, 'CANCELED', '0', '0', true),
      upd(1, 'PARTIALLY_FILLED', '5', '2.5', false),
      refused,
      riskRefused(1),
      closedRefused(1),
      touch('0.49', '0.6'),
      touch('0.45', '0.5'),
      touch('0.49', '0.51'),
      cancel,
      notPlaced(1),
      notPlaced(2),
      notPlaced(3),
      timer('retry', 10_000),
    ],
  },
  {
    name: 'PEGGED',
    machine: peggedMachine,
    status: PEGGED_STATUS,
    transient: ['pegging'],
    input: {
      ...base,
      type: 'PEGGED',
      side: 'buy',
      quoteAmount: '10',
      offsetTicks: 0,
      priceFloor: null,
      priceCeiling: '0.45',
      touch: { bid: '0.4', ask: '0.42' },
    },
    events: [
      touch('0.41', '0.42'),
      touch(null, null),
      upd(1, 'FILLED', '25', '10', true),
      upd(1, 'CANCELED', '0', '0', true),
      upd(2, 'CANCELED', '0', '0', true),
      refused,
      riskRefused(1),
      closedRefused(1),
      cancel,
      notPlaced(1),
      notPlaced(2),
      notPlaced(3),
      timer('retry', 10_000),
    ],
  },
  {
    name: 'BRACKET',
    machine: bracketMachine,
    status: BRACKET_STATUS,
    transient: ['sizing'],
    input: {
      ...base,
      type: 'BRACKET',
      side: 'sell',
      price: '0.4',
      entryOrderId: 'ord_e1',
      legs: { take_profit: leg('0.7', null), stop_loss: leg('0.4', '6') },
    },
    events: [
      entry('PARTIALLY_FILLED', '4', false),
      entry('FILLED', '10', true),
      entry('CANCELED', '0', true),
      refusedAs('e1'),
      upd(1, 'OPEN', '0', '0', false),
      upd(1, 'PARTIALLY_FILLED', '5', '3.5', false),
      upd(1, 'FILLED', '10', '7', true),
      upd(1, 'CANCELED', '0', '0', true),
      refusedAs(1),
      touch('0.5', '0.52'),
      touch('0.4', '0.42'),
      upd(2, 'FILLED', '6', '2.4', true),
      upd(2, 'PARTIALLY_FILLED', '2', '0.8', false),
      refusedAs(2),
      closedRefused(2),
      cancel,
      notPlaced(1),
      notPlaced(2),
    ],
  },
];

/** The cancel codes a strategy gives its child orders. */
const STRATEGY_CODES = [
  'STRATEGY_CANCELED',
  'SLICE_ROLLED',
  'DURATION_OVER',
  'REPEGGED',
  'PRICE_DRIFTED',
  'BRACKET_STOP_FIRED',
];

type Snap = ReturnType<typeof initialTransition>[0] & { value: unknown; context: StrategyContext; status: string };

function roundTrip(machine: AnyStateMachine, s: Snap): Snap {
  return machine.resolveState(JSON.parse(JSON.stringify(machine.getPersistedSnapshot(s)))) as Snap;
}

const serializeState = (s: Snap) =>
  JSON.stringify([
    s.value,
    s.context.seq,
    s.context.working,
    s.context.children,
    s.context.slicesDone,
    s.context.highWaterMark,
    s.context.lowWaterMark,
    s.context.deadlines,
    s.context.workingPrice,
    s.context.lastTouch,
    s.context.legs,
    s.context.entryFilled,
    s.context.placeFailures,
  ]);

for (const c of CASES) {
  describe(`${c.name} machine (model-based)`, () => {
    const log: string[] = [];
    const strategyCancel = new RegExp(`^cancel ord_stg1_\\d+ (${STRATEGY_CODES.join('|')}) ${c.input.type} stg1: .+`);
    const machine = c.machine.provide({
      actions: {
        placeOrder: (_: unknown, p: { order: { orderId: string } }) => void log.push(`place ${p.order.orderId}`),
        cancelOrder: (_: unknown, p: CancelOrderParams) =>
          void log.push(`cancel ${p.orderId} ${p.reason.code} ${p.reason.message}`),
      },
    } as never) as AnyStateMachine;
    // one shortest path to every reachable state; every event is then tried from each of them, so
    // every transition out of every reachable state is taken (and replayed with save/restore)
    const shortest = getShortestPaths(c.machine, {
      input: c.input,
      events: c.events,
      serializeState: serializeState as never,
    });
    const paths = shortest.flatMap((p) =>
      p.state.status === 'done'
        ? [p]
        : c.events.map((e) => ({
            ...p,
            steps: [...p.steps, { event: e, state: transition(c.machine, p.state, e)[0] }],
            state: transition(c.machine, p.state, e)[0],
          })),
    );

    it('reaches every state of its status table', () => {
      const reached = new Set(paths.map((p) => String(p.state.value)));
      const expected = Object.keys(c.status).filter((s) => !(c.transient ?? []).includes(s));
      expect([...reached].sort()).toEqual(expected.sort());
    });

    it('covers every transition of its table', () => {
      const covered = new Set<string>();
      for (const p of paths) {
        for (const [i, step] of p.steps.entries())
          if (i > 0)
            covered.add(`${String(p.steps[i - 1]!.state.value)} --${step.event.type}--> ${String(step.state.value)}`);
      }
      const transient = new Set(c.transient ?? []);
      for (const [from, node] of Object.entries(
        (c.machine.config.states ?? {}) as Record<string, { on?: Record<string, unknown> }>,
      )) {
        if (transient.has(from)) continue;
        for (const [ev, t] of Object.entries(node.on ?? {})) {
          for (const tr of [t].flat() as Array<{ target?: string }>) {
            const to = tr.target ?? from;
            // self and via-transient transitions are checked by the replays
            if (to === from || transient.has(to)) continue;
            expect(covered, `${from} --${ev}--> ${to}`).toContain(`${from} --${ev}--> ${to}`);
          }
        }
      }
    });

    // CPU-bound, ~10 s on a quiet machine for the largest machine: a timeout that a loaded machine cannot reach
    it(
      `replays ${paths.length} paths (to every reachable state, then each event), save → restore between`,
      { timeout: 240_000 },
      () => {
        for (const path of paths) {
          log.length = 0;
          let [s, actions] = initialTransition(machine, c.input) as unknown as [
            Snap,
            Array<{ exec?: (i: unknown, p: unknown) => void; info?: unknown; params?: unknown }>,
          ];
          for (const a of actions) a.exec?.(a.info, a.params);
          for (const step of path.steps.slice(1)) {
            s = roundTrip(machine, s);
            [s, actions] = transition(machine, s, step.event) as unknown as [Snap, typeof actions];
            for (const a of actions) a.exec?.(a.info, a.params);
            expect(serializeState(s)).toBe(serializeState(step.state as Snap));
          }
          expect(c.status[String(s.value)]).toBeDefined();
          // invariants: child ids are never reused; a final strategy has no timers and no watch
          const placed = log.filter((l) => l.startsWith('place ')).map((l) => l.slice(6));
          expect(new Set(placed).size).toBe(placed.length);
          // every cancel of a child carries the strategy's own code and names the strategy: never the user's
          for (const l of log) if (l.startsWith('cancel ')) expect(l).toMatch(strategyCancel);
          if (s.status === 'done') {
            expect(s.context.deadlines).toEqual({});
            expect(s.context.watch).toEqual({});
          }
        }
      },
    );
  });
}

describe('the reason a strategy gives each cancel of its child order (save → restore between events)', () => {
  /** Runs `events` from the start of `input`'s machine; returns the cancels sent (order id and reason). */
  function cancels(machine: AnyStateMachine, input: StrategyInput, events: StrategyEvent[]): CancelOrderParams[] {
    const sent: CancelOrderParams[] = [];
    const m = machine.provide({
      actions: { placeOrder: () => {}, cancelOrder: (_: unknown, p: CancelOrderParams) => void sent.push(p) },
    } as never) as AnyStateMachine;
    let [s, actions] = initialTransition(m, input) as unknown as [
      Snap,
      Array<{ exec?: (i: unknown, p: unknown) => void; info?: unknown; params?: unknown }>,
    ];
    for (const e of events) {
      [s, actions] = transition(m, roundTrip(m, s), e) as unknown as [Snap, typeof actions];
      for (const a of actions) a.exec?.(a.info, a.params);
    }
    return sent;
  }
  const twap = {
    ...base,
    type: 'TWAP' as const,
    side: 'buy' as const,
    price: '0.5',
    size: '30',
    intervalMs: 10_000,
    durationMs: 30_000,
    slicesTotal: 3,
    passive: true,
  };

  it('TWAP: SLICE_ROLLED at the slice time, DURATION_OVER at the end, STRATEGY_CANCELED by DELETE', () => {
    expect(cancels(twapMachine, twap, [timer('slice', 10_000)])).toEqual([
      {
        orderId: 'ord_stg1_1',
        reason: {
          code: 'SLICE_ROLLED',
          message: "TWAP stg1: next slice time: the slice's unfilled part rolls into the next slice",
        },
      },
    ]);
    expect(
      cancels(twapMachine, twap, [
        upd(1, 'CANCELED', '0', '0', true),
        timer('slice', 10_000),
        timer('slice', 20_000),
        timer('end', 30_000),
      ]),
    ).toEqual([
      {
        orderId: 'ord_stg1_2',
        reason: {
          code: 'SLICE_ROLLED',
          message: "TWAP stg1: next slice time: the slice's unfilled part rolls into the next slice",
        },
      },
    ]);
    expect(cancels(twapMachine, { ...twap, slicesTotal: 1, durationMs: 10_000 }, [timer('end', 10_000)])).toEqual([
      {
        orderId: 'ord_stg1_1',
        reason: { code: 'DURATION_OVER', message: 'TWAP stg1: duration over: the last slice is canceled' },
      },
    ]);
    expect(cancels(twapMachine, twap, [cancel])).toEqual([
      {
        orderId: 'ord_stg1_1',
        reason: { code: 'STRATEGY_CANCELED', message: 'TWAP stg1: canceled by DELETE strategy' },
      },
    ]);
    expect(cancels(twapMachine, twap, [{ type: 'strategy.cancel', reason: 'market closed' }])).toEqual([
      { orderId: 'ord_stg1_1', reason: { code: 'STRATEGY_CANCELED', message: 'TWAP stg1: ended: market closed' } },
    ]);
  });

  it('BRACKET: the stop fires while the take-profit works: it is canceled as BRACKET_STOP_FIRED', () => {
    const input = {
      ...base,
      type: 'BRACKET' as const,
      side: 'sell' as const,
      price: '0.4',
      entryOrderId: 'ord_e1',
      legs: { take_profit: leg('0.7', null), stop_loss: leg('0.4', null) },
    };
    expect(
      cancels(bracketMachine, input, [
        entry('FILLED', '10', true),
        upd(1, 'OPEN', '0', '0', false),
        touch('0.39', '0.42'),
      ]),
    ).toEqual([
      {
        orderId: 'ord_stg1_1',
        reason: {
          code: 'BRACKET_STOP_FIRED',
          message:
            'BRACKET stg1: stop-loss fired (best bid 0.39 reached 0.4): take-profit canceled, one cancels the other',
        },
      },
    ]);
  });

  it('PEGGED re-pegs (REPEGGED); ICEBERG drifts past its tolerance (PRICE_DRIFTED)', () => {
    const pegged = {
      ...base,
      type: 'PEGGED' as const,
      side: 'buy' as const,
      quoteAmount: '10',
      offsetTicks: 0,
      priceFloor: null,
      priceCeiling: '0.45',
      touch: { bid: '0.4', ask: '0.42' },
    };
    expect(cancels(peggedMachine, pegged, [touch('0.41', '0.42')])).toEqual([
      {
        orderId: 'ord_stg1_1',
        reason: { code: 'REPEGGED', message: 'PEGGED stg1: the touch moved the peg price: re-placed at the new one' },
      },
    ]);
    const iceberg = {
      ...base,
      type: 'ICEBERG' as const,
      side: 'buy' as const,
      price: '0.5',
      size: '20',
      clipSize: '10',
      tolerancePct: '5',
      touch: { bid: '0.49', ask: '0.51' },
    };
    expect(cancels(icebergMachine, iceberg, [touch('0.49', '0.6')])).toEqual([
      {
        orderId: 'ord_stg1_1',
        reason: {
          code: 'PRICE_DRIFTED',
          message: 'ICEBERG stg1: price drifted beyond price_tolerance_pct: auto-canceled',
        },
      },
    ]);
  });
});
