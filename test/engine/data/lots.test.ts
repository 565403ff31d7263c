import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Dec, ZERO } from '../../../engine/decimal.js';
import { LotBook, type Disposition } from '../../../engine/data/lots.js';
import type { CashMove, TraderFill } from '../../../engine/data/records.js';

const ADDR = '0x' + 'ab'.repeat(20);
const COND = '0x' + 'c0'.repeat(32);
const TOKENS: [string, string] = ['111', '222'];
const OUTCOMES: [string, string] = ['Yes', 'No'];

let seq = 0;
function pos(): { blockTimestamp: number; logIndex: number; transactionHash: string; atMs: number } {
  seq++;
  return {
    blockTimestamp: 1_000 + seq * 2,
    logIndex: 0,
    transactionHash: '0x' + seq.toString(16).padStart(64, '0'),
    atMs: (1_000 + seq * 2) * 1000,
  };
}

function fill(side: 'BUY' | 'SELL', o: 0 | 1, size: string, price: string, fee = '0'): TraderFill {
  const p = pos();
  return {
    ...p,
    _id: `t${seq}:taker`,
    tradeId: `t${seq}`,
    address: ADDR,
    userId: null,
    orderId: null,
    role: 'taker',
    conditionId: COND,
    tokenId: TOKENS[o],
    outcome: OUTCOMES[o],
    side,
    price,
    size,
    notionalUsd: new Dec(price).times(size).toFixed(),
    feeUsd: fee,
    source: 'venue',
  };
}

function cash(kind: 'split' | 'merge' | 'redeem', pusdDelta: string, deltas: [string, string]): CashMove {
  return {
    ...pos(),
    _id: `c${seq}`,
    address: ADDR,
    userId: null,
    kind,
    conditionId: COND,
    pusdDelta,
    shares: [0, 1].map((i) => ({
      tokenId: TOKENS[i as 0 | 1],
      delta: deltas[i as 0 | 1],
      outcome: OUTCOMES[i as 0 | 1],
    })),
    source: 'venue',
  };
}

const sum = (ds: Disposition[], f: (d: Disposition) => Dec): Dec => ds.reduce((a, d) => a.plus(f(d)), ZERO);

describe('FIFO lots', () => {
  it('a sell disposes of the oldest lots first, splitting a lot and its cost by shares; fees are expensed', () => {
    const book = new LotBook();
    const b1 = fill('BUY', 0, '10', '0.4', '0.1');
    const b2 = fill('BUY', 0, '10', '0.6');
    book.applyFill(b1);
    book.applyFill(b2);
    const ds = book.applyFill(fill('SELL', 0, '15', '0.8', '0.2'));
    expect(
      ds.map((d) => [d.acquired?.transactionHash, d.shares.toFixed(), d.costBasis.toFixed(), d.proceeds.toFixed()]),
    ).toEqual([
      [b1.transactionHash, '10', '4', '8'],
      [b2.transactionHash, '5', '3', '4'],
    ]);
    const p = book.position(ADDR, TOKENS[0])!;
    // the fees (0.1 and 0.2) are in no lot's cost or proceeds: on the position's own line
    expect([p.shares.toFixed(), p.cost.toFixed(), p.realized.toFixed(), p.fees.toFixed()]).toEqual([
      '5',
      '3',
      '5',
      '0.3',
    ]);
    expect(p.lots().map((l) => [l.acquired.transactionHash, l.shares.toFixed()])).toEqual([[b2.transactionHash, '5']]);
  });

  it('a sell of more than held records the rest without an acquisition, its cost basis its proceeds (no gain)', () => {
    const book = new LotBook();
    book.applyFill(fill('BUY', 1, '2', '0.4'));
    const ds = book.applyFill(fill('SELL', 1, '5', '0.6', '0.05'));
    expect(ds.map((d) => [d.acquired === null, d.shares.toFixed(), d.costBasis.toFixed(), d.gain.toFixed()])).toEqual([
      [false, '2', '0.8', '0.4'],
      [true, '3', '1.8', '0'],
    ]);
    const p = book.position(ADDR, TOKENS[1])!;
    expect([p.uncoveredShares.toFixed(), p.uncoveredCost.toFixed(), p.realized.toFixed()]).toEqual(['3', '1.8', '0.4']);
  });

  it('a wallet that only sells shares bought before the records realizes nothing on them', () => {
    const book = new LotBook();
    const ds = [...book.applyFill(fill('SELL', 0, '1000', '0.9')), ...book.applyFill(fill('SELL', 0, '500', '0.95'))];
    expect(ds.every((d) => d.acquired === null && d.gain.isZero())).toBe(true);
    const p = book.position(ADDR, TOKENS[0])!;
    expect([p.realized.toFixed(), p.proceeds.toFixed(), p.uncoveredCost.toFixed()]).toEqual(['0', '1375', '1375']);
  });

  it("a split's cost is shared by prices, else equally; a redeem at 1/0 gives the winner the payout", () => {
    const book = new LotBook();
    book.applyCashMove(cash('split', '-10', ['10', '10']), (t) => new Dec(t === TOKENS[0] ? '0.7' : '0.3'));
    expect(book.positions(ADDR).map((p) => p.cost.toFixed())).toEqual(['7', '3']);
    book.applyCashMove(cash('split', '-4', ['4', '4']));
    expect(book.positions(ADDR).map((p) => p.cost.toFixed())).toEqual(['9', '5']);
    const ds = book.applyCashMove(cash('redeem', '14', ['-14', '-14']), (t) => new Dec(t === TOKENS[0] ? 1 : 0));
    expect(ds.map((d) => [d.kind, d.tokenId, d.proceeds.toFixed(), d.gain.toFixed()])).toEqual([
      ['REDEEM', TOKENS[0], '10', '3'],
      ['REDEEM', TOKENS[0], '4', '2'],
      ['REDEEM', TOKENS[1], '0', '-3'],
      ['REDEEM', TOKENS[1], '0', '-2'],
    ]);
  });

  type Op =
    | { k: 'buy' | 'sell'; o: 0 | 1; size: number; price: number; fee: number }
    | { k: 'split' | 'merge'; amount: number; priced: boolean; price: number }
    | { k: 'redeem'; winner: 0 | 1 };
  const op: fc.Arbitrary<Op> = fc.oneof(
    fc.record({
      k: fc.constantFrom('buy' as const, 'sell' as const),
      o: fc.constantFrom(0 as const, 1 as const),
      size: fc.integer({ min: 1, max: 5000 }),
      price: fc.integer({ min: 1, max: 99 }),
      fee: fc.integer({ min: 0, max: 300 }),
    }),
    fc.record({
      k: fc.constantFrom('split' as const, 'merge' as const),
      amount: fc.integer({ min: 1, max: 5000 }),
      priced: fc.boolean(),
      price: fc.integer({ min: 1, max: 99 }),
    }),
    fc.record({ k: fc.constant('redeem' as const), winner: fc.constantFrom(0 as const, 1 as const) }),
  );

  it('conserves shares and cost, and realized PnL is the sum of gains (property)', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
        const book = new LotBook();
        const ds: Disposition[] = [];
        const fees: [Dec, Dec] = [ZERO, ZERO];
        for (const o of ops) {
          if (o.k === 'buy' || o.k === 'sell') {
            const size = new Dec(o.size).div(100).toFixed();
            const price = new Dec(o.price).div(100).toFixed();
            const fee = new Dec(o.fee).div(1000).toFixed();
            ds.push(...book.applyFill(fill(o.k === 'buy' ? 'BUY' : 'SELL', o.o, size, price, fee)));
            fees[o.o] = fees[o.o].plus(fee);
          } else if (o.k === 'split' || o.k === 'merge') {
            const a = new Dec(o.amount).div(100);
            const priceOf = o.priced
              ? (t: string) => new Dec(t === TOKENS[0] ? o.price : 100 - o.price).div(100)
              : undefined;
            const sign = o.k === 'split' ? 1 : -1;
            ds.push(
              ...book.applyCashMove(
                cash(o.k, a.times(-sign).toFixed(), [a.times(sign).toFixed(), a.times(sign).toFixed()]),
                priceOf,
              ),
            );
          } else if (o.k === 'redeem') {
            const w = o.winner;
            const held: [Dec, Dec] = [
              book.position(ADDR, TOKENS[0])?.shares ?? ZERO,
              book.position(ADDR, TOKENS[1])?.shares ?? ZERO,
            ];
            const redeem = cash('redeem', held[w].toFixed(), [held[0].neg().toFixed(), held[1].neg().toFixed()]);
            ds.push(...book.applyCashMove(redeem, (t) => new Dec(t === TOKENS[w] ? 1 : 0)));
          }
        }
        for (const p of book.positions(ADDR)) {
          const mine = ds.filter((d) => d.tokenId === p.tokenId);
          const lots = p.lots();
          // shares in = held + disposed (of what was held)
          expect(p.acquiredShares.toFixed()).toBe(p.shares.plus(p.disposedShares).minus(p.uncoveredShares).toFixed());
          expect(sum(mine, (d) => d.shares).toFixed()).toBe(p.disposedShares.toFixed());
          expect(lots.reduce((a, l) => a.plus(l.shares), ZERO).toFixed()).toBe(p.shares.toFixed());
          // cost in (+ the basis taken for shares beyond the lots) = open cost + disposed cost basis
          expect(p.acquiredCost.plus(p.uncoveredCost).toFixed()).toBe(
            p.cost.plus(sum(mine, (d) => d.costBasis)).toFixed(),
          );
          const beyond = mine.filter((d) => d.acquired === null);
          expect(beyond.every((d) => d.costBasis.eq(d.proceeds) && d.gain.isZero())).toBe(true);
          expect(sum(beyond, (d) => d.costBasis).toFixed()).toBe(p.uncoveredCost.toFixed());
          expect(sum(beyond, (d) => d.shares).toFixed()).toBe(p.uncoveredShares.toFixed());
          expect(lots.reduce((a, l) => a.plus(l.cost), ZERO).toFixed()).toBe(p.cost.toFixed());
          // realized = Σ gains, proceeds received = Σ proceeds
          expect(p.realized.toFixed()).toBe(sum(mine, (d) => d.gain).toFixed());
          expect(p.proceeds.toFixed()).toBe(sum(mine, (d) => d.proceeds).toFixed());
          expect(p.fees.toFixed()).toBe(fees[p.tokenId === TOKENS[0] ? 0 : 1].toFixed());
          expect(lots.every((l) => l.shares.gt(0) && l.cost.gte(0))).toBe(true);
          expect(mine.every((d) => d.shares.gt(0) && d.costBasis.gte(0))).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
  });
});
