import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../engine/clock.js';
import { Dec, ONE, ZERO } from '../../../engine/decimal.js';
import type { Decimal } from 'decimal.js';
import { createLogger } from '../../../engine/logger.js';
import { Portfolio } from '../../../engine/data/portfolio.js';
import { SqliteStore } from '../../../engine/store/sqlite.js';
import type { Store } from '../../../engine/store/port.js';
import {
  CASH_MOVES,
  HISTORY_INDEXES,
  TRADER_FILLS,
  type CashMove,
  type CashMoveKind,
  type TraderFill,
} from '../../../engine/data/records.js';
import {
  dayOfSec,
  lastDueDay,
  netFlows,
  residual,
  statementDueMs,
  StatementService,
  STATEMENTS,
  type JobScheduler,
  type MovePrices,
  type StatementDoc,
} from '../../../engine/data/statements.js';

/**
 * Statements from random histories: trades (with fees), splits, merges, market resolutions,
 * redeems, deposits, withdrawals and their refunds, over several traders and days, stored as
 * records and turned into statements by the job's own code (StatementService over a SQLite store).
 */

const TRADERS = ['0x' + 'a1'.repeat(20), '0x' + 'b2'.repeat(20)];
const MARKETS = [0, 1].map((m) => ({
  conditionId: '0x' + String(m + 1).repeat(64),
  tokens: [`${m + 1}1`, `${m + 1}2`] as [string, string],
  outcomes: ['Yes', 'No'] as [string, string],
}));
/** 2026-02-08 00:00 UTC, seconds. */
const T0 = Date.UTC(2026, 1, 8) / 1000;

type Op =
  | { k: 'buy' | 'sell'; t: number; m: number; o: 0 | 1; size: number; price: number; fee: number }
  | { k: 'split' | 'merge'; t: number; m: number; amount: number }
  | { k: 'resolve'; m: number; winner: 0 | 1 }
  | { k: 'redeem'; t: number; m: number }
  | { k: 'flow'; kind: 'deposit' | 'withdraw' | 'refund' | 'combo'; t: number; amount: number }
  | { k: 'wait'; hours: number };

const trader = fc.integer({ min: 0, max: TRADERS.length - 1 });
const market = fc.integer({ min: 0, max: MARKETS.length - 1 });
const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      k: fc.constantFrom('buy' as const, 'sell' as const),
      t: trader,
      m: market,
      o: fc.constantFrom(0 as const, 1 as const),
      size: fc.integer({ min: 1, max: 5000 }),
      price: fc.integer({ min: 1, max: 99 }),
      fee: fc.integer({ min: 0, max: 300 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      k: fc.constantFrom('split' as const, 'merge' as const),
      t: trader,
      m: market,
      amount: fc.integer({ min: 1, max: 5000 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('resolve' as const), m: market, winner: fc.constantFrom(0, 1) }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('redeem' as const), t: trader, m: market }) },
  {
    weight: 2,
    arbitrary: fc.record({
      k: fc.constant('flow' as const),
      kind: fc.constantFrom('deposit' as const, 'withdraw' as const, 'refund' as const, 'combo' as const),
      t: trader,
      amount: fc.integer({ min: 1, max: 100_000 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('wait' as const), hours: fc.integer({ min: 1, max: 60 }) }) },
) as fc.Arbitrary<Op>;

const cents = (n: number) => new Dec(n).div(100);

/** The records of a history of `ops`, and what the test knows independently: each trader's cash. */
function recordsOf(ops: Op[]): {
  fills: TraderFill[];
  cash: CashMove[];
  winners: Map<string, string>;
  cashOf: Map<string, Decimal>;
} {
  let sec = T0 + 10;
  let n = 0;
  const fills: TraderFill[] = [];
  const cash: CashMove[] = [];
  const winners = new Map<string, string>();
  const held = new Map<string, Decimal>();
  const cashOf = new Map<string, Decimal>(TRADERS.map((t) => [t, ZERO]));
  const at = () => {
    sec += 2;
    n++;
    return {
      blockTimestamp: sec,
      logIndex: n % 3,
      transactionHash: '0x' + n.toString(16).padStart(64, '0'),
      atMs: sec * 1000,
    };
  };
  const hold = (t: string, token: string, d: Decimal) =>
    held.set(`${t}:${token}`, (held.get(`${t}:${token}`) ?? ZERO).plus(d));
  const move = (
    t: string,
    kind: CashMoveKind,
    pusd: Decimal,
    conditionId: string | null,
    shares: CashMove['shares'],
  ) => {
    cash.push({
      ...at(),
      _id: `c${n}`,
      address: t,
      userId: null,
      kind,
      conditionId,
      pusdDelta: pusd.toFixed(),
      shares,
      source: 'venue',
    });
    cashOf.set(t, cashOf.get(t)!.plus(pusd));
  };
  for (const o of ops) {
    if (o.k === 'wait') {
      sec += o.hours * 3600;
      continue;
    }
    if (o.k === 'resolve') {
      if (!winners.has(MARKETS[o.m]!.conditionId))
        winners.set(MARKETS[o.m]!.conditionId, MARKETS[o.m]!.tokens[o.winner]);
      continue;
    }
    const t = TRADERS[o.t]!;
    if (o.k === 'flow') {
      const kind = (
        { deposit: 'credit', withdraw: 'withdraw', refund: 'withdraw_refund', combo: 'combo_payout' } as const
      )[o.kind];
      move(t, kind, o.kind === 'withdraw' ? cents(o.amount).neg() : cents(o.amount), null, []);
      continue;
    }
    const m = MARKETS[o.m]!;
    const resolved = winners.has(m.conditionId);
    if (o.k === 'buy' || o.k === 'sell') {
      if (resolved) continue;
      const size = cents(o.size);
      const price = cents(o.price);
      const notional = price.times(size);
      const fee = new Dec(o.fee).div(1000);
      const p = at();
      fills.push({
        ...p,
        _id: `f${n}:taker`,
        tradeId: `f${n}`,
        address: t,
        userId: null,
        orderId: null,
        role: 'taker',
        conditionId: m.conditionId,
        tokenId: m.tokens[o.o],
        outcome: m.outcomes[o.o],
        side: o.k === 'buy' ? 'BUY' : 'SELL',
        price: price.toFixed(),
        size: size.toFixed(),
        notionalUsd: notional.toFixed(),
        feeUsd: fee.toFixed(),
        source: 'venue',
      });
      hold(t, m.tokens[o.o], o.k === 'buy' ? size : size.neg());
      cashOf.set(
        t,
        cashOf
          .get(t)!
          .plus(o.k === 'buy' ? notional.neg() : notional)
          .minus(fee),
      );
      continue;
    }
    if (o.k === 'split' || o.k === 'merge') {
      if (resolved) continue;
      const a = cents(o.amount);
      const d = o.k === 'split' ? a : a.neg();
      m.tokens.forEach((tok) => hold(t, tok, d));
      const shares = m.tokens.map((tok, i) => ({ tokenId: tok, delta: d.toFixed(), outcome: m.outcomes[i]! }));
      move(t, o.k, d.neg(), m.conditionId, shares);
      continue;
    }
    // redeem: every share held of the market, paid 1 a winning share
    const winner = winners.get(m.conditionId);
    if (winner === undefined) continue;
    const legs = m.tokens.map((tok, i) => ({ tok, i, size: Dec.max(held.get(`${t}:${tok}`) ?? ZERO, ZERO) }));
    if (legs.every((l) => l.size.isZero())) continue;
    legs.forEach((l) => hold(t, l.tok, l.size.neg()));
    const payout = legs.find((l) => l.tok === winner)!.size;
    move(
      t,
      'redeem',
      payout,
      m.conditionId,
      legs.map((l) => ({ tokenId: l.tok, delta: l.size.neg().toFixed(), outcome: m.outcomes[l.i]! })),
    );
  }
  return { fills, cash, winners, cashOf };
}

/** A scheduler that only records what is armed (the job's runs are called directly here). */
const noScheduler: JobScheduler = { defineJob: () => undefined, scheduleJob: async () => undefined };

let stores: Store[] = [];
afterEach(async () => {
  await Promise.all(stores.map((s) => s.close()));
  stores = [];
});

async function statementsOf(records: ReturnType<typeof recordsOf>, nowMs: number) {
  const store = await SqliteStore.open(null);
  stores.push(store);
  const fills = await store.collection<TraderFill>(TRADER_FILLS, HISTORY_INDEXES[TRADER_FILLS]);
  const cash = await store.collection<CashMove>(CASH_MOVES, HISTORY_INDEXES[CASH_MOVES]);
  for (const f of records.fills) await fills.insertOne(f);
  for (const c of records.cash) await cash.insertOne(c);
  const prices: MovePrices = (move) => {
    const winner = move.kind === 'redeem' && move.conditionId ? records.winners.get(move.conditionId) : undefined;
    return winner === undefined ? undefined : (tokenId) => (tokenId === winner ? ONE : ZERO);
  };
  const clock = new ManualClock(nowMs);
  const service = await StatementService.open(store, noScheduler, clock, createLogger('silent'), prices);
  const stored = await store.collection<StatementDoc>(STATEMENTS);
  return { service, store, clock, all: () => stored.find({}, { sort: { address: 1, date: 1 } }) };
}

const sumOf = (xs: string[]) => xs.reduce((a, x) => a.plus(x), ZERO);

describe('daily statements', () => {
  it('R1 rows add up to realized PnL; opening + flows + realized − fees = closing; re-runs agree', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 80 }), async (ops) => {
        const records = recordsOf(ops);
        const last = Math.max(...[...records.fills, ...records.cash].map((r) => r.blockTimestamp), T0);
        const { service, all } = await statementsOf(records, statementDueMs(dayOfSec(last)));
        expect(await service.runDue()).toBe(dayOfSec(last));
        const statements = await all();
        const active = new Set(
          [...records.fills, ...records.cash].map((r) => `${r.address}:${dayOfSec(r.blockTimestamp)}`),
        );
        expect(statements.map((s) => s._id).sort()).toEqual([...active].sort());
        for (const s of statements) {
          const { rows, total } = await service.r1(s.address, s.date, { limit: 5000, offset: 0 });
          expect(total).toBe(s.r1Count);
          expect(sumOf(rows.map((r) => r.gain)).eq(s.realizedPnl), s._id).toBe(true);
          expect(sumOf(rows.map((r) => r.proceeds)).eq(s.proceeds)).toBe(true);
          expect(sumOf(rows.map((r) => r.costBasis)).eq(s.costBasis)).toBe(true);
          // opening balance + flows + realized PnL − fees = closing balance, exactly
          expect(residual(s).toFixed(), s._id).toBe('0');
          const opening = new Dec(s.openingCash).plus(s.openingPositionsCost);
          const closing = new Dec(s.closingCash).plus(s.closingPositionsCost);
          expect(opening.plus(netFlows(s)).plus(s.realizedPnl).minus(s.fees).eq(closing)).toBe(true);
        }
        // the aggregates behind the positions read, fed the same records, realize per token what the
        // statements' R1 rows do (one FIFO definition: fees expensed, shares beyond the lots realize nothing)
        const portfolio = new Portfolio(
          {
            token: (tokenId) => {
              const m = MARKETS.find((x) => x.tokens.includes(tokenId))!;
              const winner = records.winners.get(m.conditionId);
              return {
                ...m,
                question: '',
                slug: '',
                outcome: '',
                resolved: winner !== undefined,
                winner: winner === undefined ? null : winner === tokenId,
              };
            },
            mark: () => null,
          },
          new ManualClock(statementDueMs(dayOfSec(last))),
        );
        portfolio.apply({ trades: [], fills: records.fills, cash: records.cash });
        for (const t of TRADERS) {
          const gains = new Map<string, Decimal>();
          for (const s of statements.filter((x) => x.address === t))
            for (const r of (await service.r1(t, s.date, { limit: 5000, offset: 0 })).rows)
              gains.set(r.tokenId, (gains.get(r.tokenId) ?? ZERO).plus(r.gain));
          for (const p of portfolio.positions(t))
            expect(p.realized.toFixed(), `${t} ${p.tokenId}`).toBe((gains.get(p.tokenId) ?? ZERO).toFixed());
        }
        for (const t of TRADERS) {
          const mine = statements.filter((s) => s.address === t);
          for (let i = 1; i < mine.length; i++) {
            expect(mine[i]!.openingCash).toBe(mine[i - 1]!.closingCash);
            expect(mine[i]!.openingPositionsCost).toBe(mine[i - 1]!.closingPositionsCost);
          }
          // the cash the statements arrive at is the cash the records moved
          if (mine.length) expect(new Dec(mine.at(-1)!.closingCash).eq(records.cashOf.get(t)!)).toBe(true);
        }
        // a day generated again writes the same statements and rows
        if (statements.length) {
          const day = statements[Math.floor(statements.length / 2)]!.date;
          const before = await Promise.all(
            TRADERS.map(async (t) => [
              await service.statementOn(t, day),
              await service.r1(t, day, { limit: 5000, offset: 0 }),
            ]),
          );
          await service.generateDay(day);
          const after = await Promise.all(
            TRADERS.map(async (t) => [
              await service.statementOn(t, day),
              await service.r1(t, day, { limit: 5000, offset: 0 }),
            ]),
          );
          expect(after).toEqual(before);
        }
      }),
      { numRuns: 60 },
    );
  });

  it('runs due only for closed days past the grace, catches up missed days, skips days without records', async () => {
    const ops: Op[] = [
      { k: 'flow', kind: 'deposit', t: 0, amount: 10_000 },
      { k: 'buy', t: 0, m: 0, o: 0, size: 1000, price: 40, fee: 0 },
      { k: 'wait', hours: 72 },
      { k: 'sell', t: 0, m: 0, o: 0, size: 500, price: 60, fee: 0 },
    ];
    const records = recordsOf(ops);
    const day1 = dayOfSec(T0);
    const day4 = dayOfSec(T0 + 3 * 86_400);
    // before the first day's statements are due: nothing
    const { service, clock, all } = await statementsOf(records, statementDueMs(day1) - 1);
    expect(await service.runDue()).toBe(lastDueDay(clock.now()));
    expect(await all()).toEqual([]);
    expect(service.availability(day1)).toEqual({ generated: false, dueAtMs: statementDueMs(day1) });
    // the service was down for days: one run catches up every closed day
    clock.set(statementDueMs(day4) + 5_000);
    expect(await service.runDue()).toBe(day4);
    const statements = await all();
    expect(
      statements.map((s) => [s.date, s.openingCash, s.closingCash, s.closingPositionsCost, s.realizedPnl]),
    ).toEqual([
      [day1, '0', '96', '4', '0'],
      [day4, '96', '99', '2', '1'],
    ]);
    // a day between them carries the close over
    const idle = await service.statementOn(TRADERS[0]!, dayOfSec(T0 + 86_400));
    expect(idle).toMatchObject({
      carried: true,
      openingCash: '96',
      closingCash: '96',
      closingPositionsCost: '4',
      r1Count: 0,
    });
    expect(await service.statementOn(TRADERS[1]!, day4)).toBeNull();
  });
});
