import { describe, expect, it } from 'vitest';
import { initialTransition, transition, type SnapshotFrom } from 'xstate';
import { decideCopy, type CopyEnv, type CopySettings, type LeaderFill } from '../../engine/copytrade/rules.js';
import {
  COPYTRADE_STATUS,
  copyOrderId,
  copyOrderKeyOf,
  copytradeMachine,
  historyDecides,
  newHistoryRows,
  RECENT_FILLS,
  type CopytradeEvent,
  type CopytradeInput,
} from '../../machines/copytrade.js';

type Snap = SnapshotFrom<typeof copytradeMachine>;

const settings: CopySettings = {
  leader_address: '0x00000000000000000000000000000000000000bb',
  leader_username: null,
  buy_enabled: true,
  sell_enabled: true,
  buy_order_type: 'ALL',
  buy_size_mode: 'PCT_OF_LEADER_TRADE',
  buy_size_value: '50',
  buy_min_for_percent: false,
  buy_min_trade_size: null,
  buy_max_trade_size: null,
  buy_insufficient_usdc_action: 'BUY_MAX',
  buy_time_in_force: 'FOK',
  sell_order_type: 'ALL',
  sell_size_mode: 'PCT_OF_LEADER_TRADE',
  sell_size_value: '50',
  sell_insufficient_shares_action: 'SELL_MAX',
  market_ids_include: [],
  market_ids_exclude: [],
  tags_include: [],
  tags_exclude: [],
  is_simulation: false,
  copy_start_date: null,
  copy_end_date: null,
  take_profit_levels: [],
  stop_loss_levels: [],
  close_at_price_cents: null,
  max_hold_seconds: null,
};

const input = (over: Partial<CopySettings> = {}): CopytradeInput => ({
  id: 'ct_1',
  userId: 'u1',
  userWallet: '0xabc',
  settings: { ...settings, ...over },
  initialStatus: 'ACTIVE',
  createdAtMs: 1_000_000,
});

const fill = (logIndex: number, over: Partial<LeaderFill> = {}): LeaderFill => ({
  key: `0x${'ab'.repeat(32)}:${logIndex}`,
  transactionHash: `0x${'ab'.repeat(32)}`,
  logIndex,
  blockTimestamp: 1_000,
  atMs: 1_000_500,
  conditionId: '0xc0',
  tokenId: '111',
  outcome: 'Yes',
  side: 'BUY',
  role: 'taker',
  price: '0.5',
  size: '40',
  notionalUsd: '20',
  ...over,
});

const env: CopyEnv = {
  market: 'open',
  tags: [],
  minSize: '5',
  bid: '0.49',
  ask: '0.51',
  availableUsd: '100',
  availableShares: '0',
};

function run(inp: CopytradeInput, events: CopytradeEvent[]) {
  const placed: string[] = [];
  const written: string[] = [];
  const machine = copytradeMachine.provide({
    actions: {
      placeCopy: (_, p: { copy: { orderId: string } | null }) => void (p.copy && placed.push(p.copy.orderId)),
      clearHistory: (_, p: { rows: { _id: string }[] }) => void written.push(...p.rows.map((r) => r._id)),
    },
  });
  let [s, actions] = initialTransition(machine, inp);
  const exec = (as: typeof actions) => {
    for (const a of as) (a as { exec?: (i: unknown, p: unknown) => void }).exec?.(a.info, a.params);
  };
  exec(actions);
  for (const e of events) {
    // save → JSON → restore between events, as the engine does
    s = machine.resolveState(JSON.parse(JSON.stringify(machine.getPersistedSnapshot(s))) as never) as Snap;
    [s, actions] = transition(machine, s, e);
    exec(actions);
  }
  return { s, placed, written, status: COPYTRADE_STATUS[s.value as keyof typeof COPYTRADE_STATUS] };
}

const leaderFill = (f: LeaderFill, e: CopyEnv = env): CopytradeEvent => ({
  type: 'leader.fill',
  fill: f,
  env: e,
  atMs: 2_000_000,
});

describe('copytrade machine', () => {
  it('copies a new fill once: duplicates and fills long before the watermark are ignored', () => {
    const r = run(input(), [
      leaderFill(fill(3)),
      leaderFill(fill(3)),
      leaderFill(fill(1, { blockTimestamp: 1_000 - 200 })),
    ]);
    expect(r.status).toBe('ACTIVE');
    expect(r.placed).toEqual([copyOrderId('ct_1', fill(3).key)]);
    expect(r.s.context.copies).toBe(1);
    expect(r.s.context.working[0]?.order).toMatchObject({ side: 'buy', kind: 'MARKET_FOK', usd: '10' });
    expect(r.s.context.watermark).toEqual({ blockTimestamp: 1_000, logIndex: 3 });
  });

  it('a fill recorded out of chain order (just before the watermark) is copied once, not dropped', () => {
    const r = run(input(), [leaderFill(fill(3)), leaderFill(fill(2)), leaderFill(fill(2)), leaderFill(fill(3))]);
    expect(r.placed).toEqual([copyOrderId('ct_1', fill(3).key), copyOrderId('ct_1', fill(2).key)]);
    expect(r.s.context.watermark).toEqual({ blockTimestamp: 1_000, logIndex: 3 });
  });

  it('ignores fills from before the subscription existed', () => {
    const r = run(input(), [leaderFill(fill(1, { atMs: 999_999 }))]);
    expect(r.s.context.copies + Object.keys(r.s.context.skipped).length).toBe(0);
  });

  it('paused: the next fill is skipped and recorded; resumed: the one after is copied', () => {
    const r = run(input(), [
      { type: 'copytrade.status', status: 'PAUSED', atMs: 1 },
      leaderFill(fill(1)),
      { type: 'copytrade.status', status: 'ACTIVE', atMs: 2 },
      leaderFill(fill(2)),
    ]);
    expect(r.s.context.skipped).toEqual({ paused: 1 });
    expect(r.s.context.copies).toBe(1);
    expect(r.written).toContain(`ct_1:${fill(1).key}`);
    expect(r.placed).toEqual([copyOrderId('ct_1', fill(2).key)]);
  });

  it('a fill whose copy the venue holds (adopt) is recorded as that copy, even paused, and only once', () => {
    const held = {
      side: 'buy',
      tokenId: fill(1).tokenId,
      kind: 'MARKET_FOK',
      usd: '3',
      shares: null,
      price: null,
    } as const;
    const broke: CopyEnv = { ...env, availableUsd: '0' };
    const r = run(input(), [
      { type: 'copytrade.status', status: 'PAUSED', atMs: 1 },
      { ...leaderFill(fill(1), broke), adopt: held } as CopytradeEvent,
      { ...leaderFill(fill(1), broke), adopt: held } as CopytradeEvent,
      leaderFill(fill(2)),
    ]);
    expect(r.status).toBe('PAUSED');
    expect(r.placed).toEqual([copyOrderId('ct_1', fill(1).key)]);
    expect(r.s.context.copies).toBe(1);
    expect(r.s.context.working[0]).toMatchObject({ orderId: copyOrderId('ct_1', fill(1).key), order: held });
    expect(r.s.context.skipped).toEqual({ paused: 1 });
  });

  it('a copy the venue holds of a fill the watermark passed is recorded when the store has no row of it', () => {
    const held = { side: 'buy', tokenId: '111', kind: 'MARKET_FOK', usd: '3', shares: null, price: null } as const;
    // fill 2, 200 chain seconds after fill 1 (beyond the reorder window), recorded first
    const late = fill(2, { blockTimestamp: 1_200, atMs: 1_200_500 });
    const adopt = (handled?: boolean) =>
      ({ ...leaderFill(fill(1)), adopt: held, ...(handled === undefined ? {} : { handled }) }) as CopytradeEvent;
    // without the store's word (or with its row there) the old fill is ignored; with no row it is adopted, once
    const r = run(input(), [leaderFill(late), adopt(), adopt(true), adopt(false), adopt(false)]);
    expect(r.placed).toEqual([copyOrderId('ct_1', late.key), copyOrderId('ct_1', fill(1).key)]);
    expect(r.s.context.copies).toBe(2);
    expect(r.s.context.watermark).toEqual({ blockTimestamp: 1_200, logIndex: 2 });
  });

  it('a DISABLED subscription can be re-enabled; ENDED after copy_end_date (guarded timer)', () => {
    const end = '2026-01-01T00:00:00.000Z';
    const r = run(input({ copy_end_date: end }), [
      { type: 'copytrade.status', status: 'DISABLED', atMs: 1 },
      { type: 'copytrade.status', status: 'ACTIVE', atMs: 2 },
      { type: 'timer.fired', name: 'end', atMs: 123 },
    ]);
    expect(r.status).toBe('ACTIVE');
    const e = run(input({ copy_end_date: end }), [{ type: 'timer.fired', name: 'end', atMs: Date.parse(end) }]);
    expect(e.status).toBe('ENDED');
  });

  it('order reports move the position; a sell realizes PnL against the average cost', () => {
    const buyId = copyOrderId('ct_1', fill(1).key);
    const sellFill = fill(2, { side: 'SELL', size: '20', notionalUsd: '12', price: '0.6' });
    const r = run(input(), [
      leaderFill(fill(1)),
      { type: 'order.updated', orderId: buyId, status: 'FILLED', filledSize: '20', matchedAmount: '10', final: true },
      leaderFill(sellFill, { ...env, availableShares: '20' }),
      {
        type: 'order.updated',
        orderId: copyOrderId('ct_1', sellFill.key),
        status: 'FILLED',
        filledSize: '10',
        matchedAmount: '6',
        final: true,
        atMs: 3,
      },
    ]);
    expect(r.s.context.positions['111']).toMatchObject({ shares: '10', costUsd: '5' });
    expect(r.s.context.realizedPnl).toBe('1');
    expect(r.s.context.spentUsd).toBe('10');
    expect(r.s.context.working).toEqual([]);
  });

  it("a copy's rows leave the context with its order's first fill or end; acceptance and repeats are no step", () => {
    const id = copyOrderId('ct_1', fill(1).key);
    const paused = run(input(), [{ type: 'copytrade.status', status: 'PAUSED', atMs: 1 }, leaderFill(fill(0))]);
    const r = run(input(), [leaderFill(fill(1))]);
    // the step's rows are new to it (written with it); none is cleared by `clearHistory`: the report will
    expect(newHistoryRows(r.s.context, { pending: [] }).map((x) => x._id)).toEqual([`ct_1:${fill(1).key}`]);
    expect(r.written).toEqual([]);
    expect(paused.written).toEqual([`ct_1:${fill(0).key}`]);
    const accepted = {
      type: 'order.updated',
      orderId: id,
      status: 'OPEN',
      filledSize: '0',
      matchedAmount: '0',
    } as const;
    const [same, acts] = transition(r.s.machine, r.s, { ...accepted, final: false });
    expect(acts).toEqual([]);
    expect(same.context).toBe(r.s.context);
    const filled = { ...accepted, status: 'FILLED', filledSize: '20', matchedAmount: '10', final: true } as const;
    const done = run(input(), [leaderFill(fill(1)), filled, filled]);
    expect(done.s.context.pending).toEqual([]);
    expect(done.s.context.working).toEqual([]);
    expect(done.s.context.positions['111']).toMatchObject({ shares: '20', costUsd: '10' });
  });

  it('a refused copy becomes a skip with reason order_refused', () => {
    const r = run(input(), [
      leaderFill(fill(1)),
      { type: 'order.refused', orderId: copyOrderId('ct_1', fill(1).key), error: 'INSUFFICIENT_BALANCE', reason: 'x' },
    ]);
    expect(r.s.context.copies).toBe(0);
    expect(r.s.context.skipped).toEqual({ order_refused: 1 });
    // the skip row names the leader fill it answers, as every other row does
    expect(r.s.context.pending.at(-1)).toMatchObject({ reason: 'order_refused', fill: { key: fill(1).key } });
  });

  it('a simulation paper-fills at the midpoint and places nothing', () => {
    const r = run(input({ is_simulation: true }), [leaderFill(fill(1))]);
    expect(r.placed).toEqual([]);
    expect(r.s.context.paper.positions['111']).toMatchObject({ shares: '20', costUsd: '10' });
    expect(r.s.context.paper.cashUsd).toBe('990');
  });

  it('its context is plain data: stored without the persistContext walk, the text is XState’s own', async () => {
    const { persistedSnapshotJson } = await import('../../engine/actor-host.js');
    const id = copyOrderId('ct_1', fill(1).key);
    const filled = {
      type: 'order.updated',
      orderId: id,
      status: 'FILLED',
      filledSize: '20',
      matchedAmount: '10',
    } as const;
    const lives = [
      run(input(), [leaderFill(fill(1))]),
      run(input(), [leaderFill(fill(1)), { ...filled, final: true }, leaderFill(fill(2, { side: 'SELL' }))]),
      run(input({ is_simulation: true, take_profit_levels: [{ trigger_bps: 1000, portion_bps: 5000 }] }), [
        leaderFill(fill(1)),
        { type: 'copytrade.status', status: 'PAUSED', atMs: 1 },
        leaderFill(fill(2)),
      ]),
    ];
    for (const { s } of lives)
      expect(persistedSnapshotJson(s.machine, s, true)).toBe(JSON.stringify(s.machine.getPersistedSnapshot(s)));
  });
});

describe('copy rules', () => {
  it('sizes buys by each mode and applies the filters and minimums', () => {
    const f = fill(1);
    expect(
      decideCopy({ ...settings, buy_size_mode: 'FIXED_USD_PER_TRADE', buy_size_value: '7' }, f, env),
    ).toMatchObject({
      copy: { usd: '7' },
    });
    expect(
      decideCopy({ ...settings, buy_size_mode: 'PCT_OF_FOLLOWER_AVAILABLE', buy_size_value: '10' }, f, env),
    ).toMatchObject({ copy: { usd: '10' } });
    expect(decideCopy({ ...settings, buy_size_value: '1' }, f, env)).toMatchObject({ skip: 'below_market_minimum' });
    expect(decideCopy({ ...settings, buy_size_value: '1', buy_min_for_percent: true }, f, env)).toMatchObject({
      copy: { usd: '1' },
    });
    expect(decideCopy({ ...settings, buy_time_in_force: 'GTC' }, f, env)).toMatchObject({
      copy: { kind: 'LIMIT_GTC', shares: '19.6', price: '0.51' },
    });
    expect(decideCopy(settings, f, { ...env, availableUsd: '4' })).toMatchObject({ copy: { usd: '4' } });
    expect(
      decideCopy({ ...settings, buy_insufficient_usdc_action: 'SKIP' }, f, { ...env, availableUsd: '4' }),
    ).toMatchObject({
      skip: 'insufficient_pusd',
    });
    expect(decideCopy({ ...settings, buy_order_type: 'LIMIT' }, f, env)).toMatchObject({ skip: 'order_type_filtered' });
    expect(decideCopy({ ...settings, buy_min_trade_size: '50' }, f, env)).toMatchObject({
      skip: 'below_min_trade_size',
    });
    expect(decideCopy({ ...settings, market_ids_exclude: ['0xc0'] }, f, env)).toMatchObject({
      skip: 'market_filtered',
    });
    expect(decideCopy(settings, f, { ...env, market: 'resolved' })).toMatchObject({ skip: 'market_resolved' });
    expect(decideCopy({ ...settings, buy_enabled: false }, f, env)).toMatchObject({ skip: 'buy_disabled' });
    expect(decideCopy({ ...settings, copy_start_date: '2030-01-01T00:00:00Z' }, f, env)).toMatchObject({
      skip: 'outside_date_window',
    });
  });

  it('sizes sells by each mode', () => {
    const f = fill(1, { side: 'SELL', size: '40' });
    const held = { ...env, availableShares: '30' };
    expect(decideCopy(settings, f, held)).toMatchObject({ copy: { side: 'sell', shares: '20' } });
    expect(decideCopy({ ...settings, sell_size_mode: 'MAX' }, f, held)).toMatchObject({ copy: { shares: '30' } });
    expect(decideCopy({ ...settings, sell_size_mode: 'PCT_OF_MAX', sell_size_value: '10' }, f, held)).toMatchObject({
      copy: { shares: '3' },
    });
    expect(decideCopy({ ...settings, sell_size_value: '100' }, f, held)).toMatchObject({ copy: { shares: '30' } });
    expect(
      decideCopy({ ...settings, sell_size_value: '100', sell_insufficient_shares_action: 'SKIP' }, f, held),
    ).toMatchObject({
      skip: 'insufficient_shares',
    });
    expect(decideCopy(settings, f, env)).toMatchObject({ skip: 'no_position' });
  });
});

describe('copytrade risk controls', () => {
  const buyId = copyOrderId('ct_1', fill(1).key);
  const bought: CopytradeEvent[] = [
    leaderFill(fill(1)),
    {
      type: 'order.updated',
      orderId: buyId,
      status: 'FILLED',
      filledSize: '20',
      matchedAmount: '10',
      final: true,
      atMs: 5_000,
    },
  ];
  const touch = (bid: string): CopytradeEvent => ({ type: 'book.touch', tokenId: '111', bid, ask: null, atMs: 6_000 });

  it('take-profit and stop-loss levels fire once each against the average cost, selling their portion', () => {
    const r = run(
      input({
        take_profit_levels: [{ trigger_bps: 2000, portion_bps: 5000 }],
        stop_loss_levels: [{ trigger_bps: 3000, portion_bps: 10000 }],
      }),
      [...bought, touch('0.59'), touch('0.6'), touch('0.61')],
    );
    // average cost 0.5: take-profit at 0.6 sells half of the 20 shares, once
    expect(r.placed).toEqual([buyId, 'ord_ct_1_x1']);
    expect(r.s.context.working[0]?.order).toMatchObject({ side: 'sell', kind: 'MARKET', shares: '10' });
    expect(r.s.context.positions['111']?.done).toEqual(['tp0']);
    const sl = run(input({ stop_loss_levels: [{ trigger_bps: 3000, portion_bps: 10000 }] }), [
      ...bought,
      touch('0.35'),
    ]);
    expect(sl.s.context.working[0]?.order).toMatchObject({ shares: '20' });
  });

  it('close_at_price_cents sells everything; PAUSED positions keep their controls', () => {
    const r = run(input({ close_at_price_cents: 55 }), [
      ...bought,
      { type: 'copytrade.status', status: 'PAUSED', atMs: 5_500 },
      touch('0.55'),
    ]);
    expect(r.status).toBe('PAUSED');
    expect(r.s.context.working[0]?.order).toMatchObject({ side: 'sell', shares: '20' });
  });

  it('max_hold_seconds: a durable deadline per position; its (current) timer sells it whole', () => {
    const r = run(input({ max_hold_seconds: 60 }), bought);
    expect(r.s.context.deadlines).toEqual({ 'hold:111': 65_000 });
    const stale = run(input({ max_hold_seconds: 60 }), [...bought, { type: 'timer.fired', name: 'hold:111', atMs: 1 }]);
    expect(stale.placed).toEqual([buyId]);
    const due = run(input({ max_hold_seconds: 60 }), [
      ...bought,
      { type: 'timer.fired', name: 'hold:111', atMs: 65_000 },
    ]);
    expect(due.placed).toEqual([buyId, 'ord_ct_1_x1']);
    expect(due.s.context.deadlines).toEqual({});
  });
});

describe('copytrade watermark', () => {
  it('remembers only the fills within the reorder window (a small snapshot), still refusing their redelivery', () => {
    const late = fill(3, { blockTimestamp: 1_000 + 500 });
    const r = run(input(), [leaderFill(fill(1)), leaderFill(fill(2)), leaderFill(late), leaderFill(fill(2))]);
    expect(r.s.context.recent).toEqual([[late.key, 1_500]]);
    // fill 2 (500 s before the watermark) is outside the window: ignored, not copied again
    expect(r.placed).toEqual([fill(1).key, fill(2).key, late.key].map((k) => copyOrderId('ct_1', k)));
  });

  it('remembers at most RECENT_FILLS; an older one in the window is told apart by the event’s `handled`', () => {
    const fills = Array.from({ length: RECENT_FILLS + 2 }, (_, i) => fill(i + 1, { blockTimestamp: 1_000 + i }));
    const seen = run(
      input(),
      fills.map((f) => leaderFill(f)),
    );
    const c = seen.s.context;
    expect(c.recent.map(([k]) => k)).toEqual(fills.slice(2).map((f) => f.key));
    expect(c.recentCapped).toBe(1_001);
    const first = fills[0]!;
    expect([
      historyDecides(c, first),
      historyDecides(c, fills[5]!),
      historyDecides(c, fill(99, { blockTimestamp: 1_050 })),
    ]).toEqual([true, false, false]);
    const again = (handled?: boolean) =>
      run(input(), [
        ...fills.map((f) => leaderFill(f)),
        { ...leaderFill(first), ...(handled === undefined ? {} : { handled }) },
      ]).placed.length;
    // in the store already (or unknown): ignored; not in the store (recorded late): copied once
    expect([again(true), again(undefined), again(false)]).toEqual([fills.length, fills.length, fills.length + 1]);
    // a late fill of a block after every one left out needs no store: copied
    const late = fill(200, { blockTimestamp: 1_005 });
    expect(historyDecides(c, late)).toBe(false);
    expect(run(input(), [...fills.map((f) => leaderFill(f)), leaderFill(late)]).placed).toHaveLength(fills.length + 1);
  });
});

describe('copy order ids', () => {
  it('read back to the subscription and the leader fill they were made from; other ids are not copies', () => {
    const sub = 'ct_885e6244-7dc1-5b5f-bef0-78a6bd43388f';
    const key = `0x${'ab12'.repeat(16)}:7`;
    expect(copyOrderKeyOf(copyOrderId(sub, key))).toEqual({ subscriptionId: sub, fillKey: key });
    expect(copyOrderKeyOf('ord_9cb1e46f-074a-5b99-9246-8c61e719c9ce')).toBeNull();
    expect(copyOrderKeyOf(`ord_${sub}_nothex_7`)).toBeNull();
  });
});
