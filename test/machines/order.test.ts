import { describe, expect, it } from 'vitest';
import { initialTransition, transition, type SnapshotFrom } from 'xstate';
import { getSimplePaths } from 'xstate/graph';
import { persistedSnapshotJson, storedSnapshotJson, unpackSnapshot } from '../../engine/actor-host.js';
import { orderView } from '../../engine/orders.js';
import {
  ORDER_SNAPSHOT_FORM,
  ORDER_STATUS,
  orderMachine,
  type OrderEvent,
  type OrderInput,
} from '../../machines/order.js';
import { baseOrderInput } from './order-input.js';

type Snap = SnapshotFrom<typeof orderMachine>;

const input: OrderInput = baseOrderInput;

const EVENTS: OrderEvent[] = [
  { type: 'venue.accepted', resting: true },
  { type: 'venue.filled', tradeId: 't1', price: '0.5', size: '4', liquidity: 'maker', completes: false },
  { type: 'venue.filled', tradeId: 't2', price: '0.49', size: '6', liquidity: 'maker', completes: true },
  { type: 'venue.filled', tradeId: 't3', price: '0.5', size: '10', liquidity: 'taker', completes: true },
  { type: 'venue.canceled', reason: { code: 'IOC_REMAINDER', message: 'IOC remainder' } },
  { type: 'venue.expired' },
  { type: 'venue.rejected', error: 'INSUFFICIENT_BALANCE', reason: 'no money' },
  { type: 'venue.unknown' },
  { type: 'order.cancel', reason: { code: 'USER_CANCELED', message: 'canceled by user' } },
  { type: 'timer.fired', name: 'expiry', atMs: 5_000 },
  { type: 'timer.fired', name: 'expiry', atMs: 4_000 },
];

/** Machine with every side effect recorded instead of performed. */
function recording(log: string[]) {
  return orderMachine.provide({
    actions: {
      submitToVenue: () => void log.push('submit'),
      cancelAtVenue: () => void log.push('cancel'),
      expireAtVenue: () => void log.push('expire'),
    },
  });
}

/** Save → JSON → restore, as the engine does between events. */
function roundTrip(machine: typeof orderMachine, s: Snap): Snap {
  return machine.resolveState(JSON.parse(JSON.stringify(machine.getPersistedSnapshot(s)))) as Snap;
}

function runActions(actions: Array<{ exec?: unknown; info?: unknown; params?: unknown }>) {
  for (const a of actions) (a.exec as ((i: unknown, p: unknown) => void) | undefined)?.(a.info, a.params);
}

const serializeState = (s: Snap) =>
  JSON.stringify([s.value, s.context.cancelRequested, s.context.filledSize, s.context.deadlines, s.context.tradeIds]);

describe('order machine (model-based)', () => {
  const paths = getSimplePaths(orderMachine, { input, events: EVENTS, serializeState });

  it('reaches every state', () => {
    const reached = new Set(paths.map((p) => String(p.state.value)));
    expect([...reached].sort()).toEqual(Object.keys(ORDER_STATUS).sort());
  });

  it('covers every transition of the table', () => {
    const covered = new Set<string>();
    for (const p of paths) {
      for (const [i, step] of p.steps.entries()) {
        if (i === 0) continue;
        covered.add(`${String(p.steps[i - 1]!.state.value)} --${step.event.type}--> ${String(step.state.value)}`);
      }
    }
    const expected: string[] = [];
    for (const [from, node] of Object.entries(orderMachine.config.states ?? {})) {
      for (const [ev, t] of Object.entries(node.on ?? {})) {
        for (const tr of [t].flat() as Array<{ target?: string }>)
          expected.push(`${from} --${ev}--> ${tr.target ?? from}`);
      }
    }
    for (const e of expected) {
      // self-transitions without a state change are covered by the action assertions below
      const [from, , to] = e.split(/ --|--> /);
      if (from === to) continue;
      expect(covered, e).toContain(e);
    }
  });

  it.each(paths.map((p, i) => [i, p.steps.map((s) => s.event.type).join(' → '), p] as const))(
    'path %i: %s — replays with a save/restore between steps',
    (_i, _name, path) => {
      const log: string[] = [];
      const machine = recording(log);
      let [s, actions] = initialTransition(machine, input);
      runActions(actions);
      for (const step of path.steps.slice(1)) {
        s = roundTrip(machine, s);
        [s, actions] = transition(machine, s, step.event);
        runActions(actions);
        expect(serializeState(s)).toBe(serializeState(step.state));
      }
      expect(s.value).toEqual(path.state.value);
      expect(ORDER_STATUS[s.value as keyof typeof ORDER_STATUS]).toBeDefined();
      expect(log[0]).toBe('submit');
      // invariants on every path (the event alphabet may over-fill: that is the venue's fault, not a state)
      if (s.value === 'filled') expect(Number(s.context.filledSize)).toBeGreaterThanOrEqual(10);
      if (s.value === 'partially_filled') expect(Number(s.context.filledSize)).toBeLessThan(10);
      if (s.status === 'done') expect(s.context.deadlines).toEqual({});
    },
  );

  it('every state of every path reads back exactly from the stored form, which is compact', () => {
    const def = { logic: orderMachine, form: ORDER_SNAPSHOT_FORM };
    const inputs: OrderInput[] = [
      input,
      { ...input, timeInForce: 'GTC', expiresAtMs: null },
      { ...input, type: 'MARKET', price: null, size: null, quoteAmount: '12', timeInForce: 'IOC', expiresAtMs: null },
      { ...input, clientOrderId: 'c1', metadata: 'm', isStopLoss: true, parentId: 'stg_1', parentKind: 'copytrade' },
    ];
    const idsOf = [
      { _id: 'ord_1', ownerUserId: 'u1', createdAtMs: 1_003 },
      { _id: 'ord_2', ownerUserId: null, createdAtMs: 900 },
    ];
    let checked = 0;
    for (const start of inputs) {
      for (const p of getSimplePaths(orderMachine, { input: start, events: EVENTS, serializeState })) {
        let [s] = initialTransition(orderMachine, start);
        for (const step of [null, ...p.steps.slice(1)]) {
          if (step) [s] = transition(orderMachine, s, step.event);
          const xstate = persistedSnapshotJson(orderMachine, s);
          for (const ids of idsOf) {
            const stored = storedSnapshotJson(def, s, ids);
            const back = JSON.stringify(unpackSnapshot(stored, ORDER_SNAPSHOT_FORM, ids));
            expect(JSON.parse(back)).toStrictEqual(JSON.parse(xstate));
            expect(stored.length).toBeLessThan(xstate.length);
            checked++;
          }
        }
      }
    }
    expect(checked).toBeGreaterThan(100);
    // a resting GTD order of its record's user: the slots, then what is not a default (its deadline derived)
    const [live] = transition(orderMachine, initialTransition(orderMachine, input)[0], EVENTS[0]!);
    expect(JSON.parse(storedSnapshotJson(def, live, idsOf[0]!))).toEqual([
      1,
      'live',
      '123',
      'buy',
      '0.5',
      '10',
      3,
      0,
      { timeInForce: 'GTD', expiresAtMs: 5_000 },
    ]);
  });

  it('fills and their trades read back exactly from the stored form, packed when as the venue records them', () => {
    const def = { logic: orderMachine, form: ORDER_SNAPSHOT_FORM };
    const ids = { _id: 'ord_1', ownerUserId: 'u1', createdAtMs: 1_003 };
    const own = { userId: 'u1', orderId: 'ord_1', tokenId: '123', side: 'buy' as const, price: '0.5' };
    const provider = { userId: null, orderId: null, tokenId: '123', side: 'sell' as const, price: '0.5' };
    const trade = (id: string, size: string, taker: object, maker: object) => ({
      id,
      blockTimestamp: 1_700_000_000,
      logIndex: 3,
      transactionHash: '0xabc',
      size,
      feeUsd: '0',
      taker,
      maker,
    });
    const fill = (tradeId: string, size: string, liquidity: 'maker' | 'taker', facts: unknown) =>
      ({
        type: 'venue.filled',
        tradeId,
        price: '0.5',
        size,
        liquidity,
        completes: false,
        atMs: 9,
        trade: facts,
      }) as OrderEvent;
    const cases: Array<[string, unknown, boolean]> = [
      ['T1-1-t', trade('T1-1', '1', own, provider), true], // taker against the liquidity provider
      ['T1-2-m', trade('T1-2', '1', { ...provider, userId: 'u2', orderId: 'ord_2', side: 'buy' }, own), true],
      ['T1-3-mint-t', trade('T1-3-mint', '1', own, { ...provider, tokenId: '456', side: 'buy' }), true], // other token
      ['T1-4-t', trade('T1-4', '2', own, provider), false], // the trade's size is not the fill's
      ['T1-5-t', trade('T1-5', '1', { ...own, price: '0.49' }, provider), false], // own price differs
      ['T1-6-t', trade('T1-6', '1', { ...own, orderId: 'ord_x' }, provider), false], // not this order's leg
      ['T1-7-t', { ...trade('T1-7', '1', own, provider), extra: 1 }, false], // a field the form does not know
      ['T1-8-t', undefined, true], // no trade in the report
    ];
    let [s] = initialTransition(orderMachine, input);
    [s] = transition(orderMachine, s, EVENTS[0]!);
    for (const [tradeId, facts, packed] of cases) {
      [s] = transition(orderMachine, s, fill(tradeId, '1', tradeId.endsWith('-m') ? 'maker' : 'taker', facts));
      const stored = storedSnapshotJson(def, s, ids);
      const back = JSON.parse(JSON.stringify(unpackSnapshot(stored, ORDER_SNAPSHOT_FORM, ids)));
      expect(back).toStrictEqual(JSON.parse(persistedSnapshotJson(orderMachine, s)));
      const slot = JSON.parse(stored)[7] as unknown[];
      expect(Array.isArray(slot.at(-1)), tradeId).toBe(packed);
    }
    expect(s.context.fills).toHaveLength(cases.length);
    // the first fill, packed: the trade's parts the order holds left out
    const first = (JSON.parse(storedSnapshotJson(def, s, ids))[7] as unknown[])[0];
    expect(first).toEqual([
      'T1-1-t',
      '0.5',
      '1',
      'taker',
      '0',
      9,
      1_700_000_000,
      3,
      '0xabc',
      '0',
      [null, null, 'sell', '0.5'],
    ]);
  });

  it('a snapshot stored by version 2 (no fills in context) restores; fills from then on are listed', () => {
    const [s0] = initialTransition(orderMachine, input);
    const [s1] = transition(orderMachine, s0, EVENTS[0]!);
    const [s2] = transition(orderMachine, s1, EVENTS[1]!);
    const stored = JSON.parse(JSON.stringify(orderMachine.getPersistedSnapshot(s2)));
    delete stored.context.fills; // as versions 1 and 2 stored it: totals and trade ids only
    const [s3] = transition(orderMachine, orderMachine.resolveState(stored), EVENTS[2]!);
    expect(s3.value).toBe('filled');
    expect(s3.context).toMatchObject({ filledSize: '10', tradeIds: ['t1', 't2'] });
    expect(s3.context.fills).toEqual([
      { tradeId: 't2', price: '0.49', size: '6', liquidity: 'maker', feeUsd: '0', atMs: null, trade: null },
    ]);
    const meta = { id: 'ord_1', status: 'FILLED', createdAtMs: 1_000, updatedAtMs: 2_000, revision: 3 };
    expect(orderView(s3, meta)).toMatchObject({
      filled_size: '10',
      fills: [{ trade_id: 't2', price: '0.49', size: '6', liquidity: 'maker', fee_usd: '0', block_timestamp: null }],
    });
  });

  it('ignores a duplicate fill and a stale timer', () => {
    const [s0] = initialTransition(orderMachine, input);
    const [s1] = transition(orderMachine, s0, EVENTS[0]!);
    const [s2] = transition(orderMachine, s1, EVENTS[1]!);
    const [s3] = transition(orderMachine, roundTrip(orderMachine, s2), EVENTS[1]!);
    expect(s3.context.filledSize).toBe('4');
    expect(s3.context.tradeIds).toEqual(['t1']);
    const [s4] = transition(orderMachine, s3, EVENTS[10]!);
    expect(s4.value).toBe('partially_filled');
    expect(s4.context.deadlines).toEqual({ expiry: 5_000 });
  });

  it('expires through the venue on the current deadline and records matched dollars', () => {
    const log: string[] = [];
    const m = recording(log);
    let [s] = initialTransition(m, input);
    [s] = transition(m, s, EVENTS[0]!);
    [s] = transition(m, s, EVENTS[1]!);
    const [s2, actions] = transition(m, s, EVENTS[9]!);
    runActions(actions);
    expect(log).toContain('expire');
    expect(s2.context.deadlines).toEqual({});
    const [s3] = transition(m, s2, EVENTS[5]!);
    expect(s3.value).toBe('expired');
    expect(s3.context.matchedAmount).toBe('2');
  });

  it('a cancel before the venue acknowledges is carried out on acknowledgement', () => {
    const log: string[] = [];
    const m = recording(log);
    const [s0] = initialTransition(m, input);
    const [s1] = transition(m, s0, EVENTS[8]!);
    expect(s1.value).toBe('submitted');
    const [s, a] = transition(m, roundTrip(m, s1), EVENTS[0]!);
    runActions(a);
    expect(s.value).toBe('canceling');
    expect(log).toContain('cancel');
  });
});

describe('order machine: the reason of a cancel', () => {
  const STRATEGY = { code: 'SLICE_ROLLED', message: 'TWAP stg_1: next slice time' } as const;
  /** Records each cancel sent to the venue with its reason. */
  function withReasons(sent: Array<{ orderId: string; reason: unknown }>) {
    return orderMachine.provide({ actions: { cancelAtVenue: (_, p) => void sent.push(p) } });
  }

  it("a strategy's cancel carries its reason through save → restore; the venue's report ends the order", () => {
    const sent: Array<{ orderId: string; reason: unknown }> = [];
    const m = withReasons(sent);
    let [s] = initialTransition(m, { ...input, parentId: 'stg_1' });
    [s] = transition(m, roundTrip(m, s), EVENTS[0]!);
    let a;
    [s, a] = transition(m, roundTrip(m, s), { type: 'order.cancel', reason: STRATEGY });
    runActions(a);
    expect([s.value, sent]).toEqual(['canceling', [{ orderId: 'ord_1', reason: STRATEGY }]]);
    // the user's DELETE arrives while it is canceling: sent again, same reason
    [s, a] = transition(m, roundTrip(m, s), EVENTS[8]!);
    runActions(a);
    expect(sent).toEqual([
      { orderId: 'ord_1', reason: STRATEGY },
      { orderId: 'ord_1', reason: STRATEGY },
    ]);
    [s] = transition(m, roundTrip(m, s), { type: 'venue.canceled', reason: STRATEGY });
    expect([s.value, s.context.cancelReason, s.context.reason]).toEqual(['canceled', STRATEGY, STRATEGY.message]);
  });

  it('a cancel the venue made itself (market resolved) is recorded with its code; an expiry as EXPIRED', () => {
    const resolved = { code: 'MARKET_RESOLVED', message: 'market resolved' } as const;
    let [s] = initialTransition(orderMachine, input);
    [s] = transition(orderMachine, s, EVENTS[0]!);
    const [c] = transition(orderMachine, roundTrip(orderMachine, s), { type: 'venue.canceled', reason: resolved });
    expect([c.value, c.context.cancelReason]).toEqual(['canceled', resolved]);
    const [e] = transition(orderMachine, roundTrip(orderMachine, s), EVENTS[5]!);
    expect([e.value, e.context.cancelReason, e.context.reason]).toEqual([
      'expired',
      { code: 'EXPIRED', message: 'expired' },
      'expired',
    ]);
  });

  it("a version 1 snapshot (no cancelReason) caught canceling resends the cancel with its origin's reason", () => {
    for (const [parentId, reason] of [
      ['stg_9', { code: 'STRATEGY_CANCELED', message: 'canceled by its strategy stg_9' }],
      [null, { code: 'USER_CANCELED', message: 'canceled by user' }],
    ] as const) {
      const sent: Array<{ orderId: string; reason: unknown }> = [];
      const m = withReasons(sent);
      let [s] = initialTransition(m, { ...input, parentId });
      [s] = transition(m, s, EVENTS[0]!);
      [s] = transition(m, s, EVENTS[8]!);
      const persisted = JSON.parse(JSON.stringify(m.getPersistedSnapshot(s))) as { context: Record<string, unknown> };
      delete persisted.context.cancelReason; // as version 1 stored it
      const restored = m.resolveState(persisted as never) as Snap;
      const [after, a] = transition(m, restored, { type: 'venue.accepted', resting: true });
      runActions(a);
      expect([after.value, sent]).toEqual(['canceling', [{ orderId: 'ord_1', reason }]]);
    }
  });
});
