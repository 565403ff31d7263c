import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { dec, str, ZERO } from '../../../engine/decimal.js';
import { Ledger, LIQUIDITY_PROVIDER_ID } from '../../../engine/venue/ledger.js';
import { MatchingEngine, newTx, type Tx } from '../../../engine/venue/matching.js';
import type { TokenInfo, VenueOrder } from '../../../engine/venue/port.js';

const A = 'A';
const TOKENS = new Map<string, TokenInfo>([[A, { tokenId: A, outcome: 'Yes', conditionId: 'c', question: 'Q?', tickSize: dec('0.01'), minSize: dec(5), complementTokenId: 'B' }]]);
const USERS = ['u0', 'u1', 'u2'];

/** A matching engine over a ledger where every user holds 100 pUSD and 50 shares of A. */
function engine(): { m: MatchingEngine; l: Ledger; run: (fn: (tx: Tx) => void) => Tx } {
  const l = new Ledger('100');
  for (const u of USERS) l.load({ userId: u, pusd: '100', reserved: '0', positions: [[A, '50', '0', '25']] });
  const m = new MatchingEngine(TOKENS, l, () => 5);
  let seq = 0;
  return {
    m, l,
    run: (fn) => {
      const tx = newTx(++seq, 1_000 + seq);
      fn(tx);
      return tx;
    },
  };
}

let n = 0;
function limit(userId: string, side: 'buy' | 'sell', price: string, size: string, extra: Partial<VenueOrder> = {}): VenueOrder {
  return { orderId: `o${++n}`, userId, tokenId: A, side, kind: 'limit', price, size, quoteAmount: null, timeInForce: 'GTC', postOnly: false, ...extra };
}

describe('matching engine', () => {
  it('one operation: accepted, then each fill taker side first, trade ids from the operation seq; what changed is in the tx', () => {
    const { m, run } = engine();
    const s1 = limit('u1', 'sell', '0.5', '5');
    const s2 = limit('u2', 'sell', '0.51', '5');
    run((tx) => m.place(tx, s1));
    run((tx) => m.place(tx, s2));
    const b = limit('u0', 'buy', '0.51', '8');
    const tx = run((t) => m.place(t, b));
    expect(tx.reports.map((r) => [r.type, r.orderId, r.type === 'venue.filled' ? `${r.tradeId} ${r.liquidity} ${r.size}@${r.price}` : ''])).toEqual([
      ['venue.accepted', b.orderId, ''],
      ['venue.filled', b.orderId, 'T3-1-t taker 5@0.5'],
      ['venue.filled', s1.orderId, 'T3-1-m maker 5@0.5'],
      ['venue.filled', b.orderId, 'T3-2-t taker 3@0.51'],
      ['venue.filled', s2.orderId, 'T3-2-m maker 3@0.51'],
    ]);
    expect([...tx.users]).toEqual(['u0', 'u1', 'u2']);
    expect([...tx.orders]).toEqual([b.orderId, s1.orderId, s2.orderId]);
    expect([...tx.tokens]).toEqual([A]);
    expect(m.state(b.orderId)?.status).toBe('filled');
    expect(m.state(s2.orderId)?.status).toBe('open');
  });

  it('liquidity provider quotes: no record, no settlement; taking them is noted for a refill', () => {
    const { m, l, run } = engine();
    run((tx) => m.quote(tx, limit(LIQUIDITY_PROVIDER_ID, 'sell', '0.6', '100'), dec('0.6'), dec(100)));
    expect(m.size).toBe(0);
    const tx = run((t) => m.place(t, limit('u0', 'buy', '0.6', '10')));
    expect([...tx.liquidityTaken]).toEqual([A]);
    expect(tx.reports.filter((r) => r.type === 'venue.filled')).toHaveLength(1);
    expect(str(m.touch(A).ask!)).toBe('0.6');
    expect(l.view('u0').pusd.balance).toBe('94');
    const w = run((t) => m.withdrawQuotes(t, A));
    expect(m.touch(A).ask).toBeUndefined();
    expect(w.reports).toEqual([]);
  });

  it('rows restore orders and their books in time priority', () => {
    const { m, l, run } = engine();
    const first = limit('u1', 'sell', '0.55', '5');
    const second = limit('u2', 'sell', '0.55', '5');
    run((tx) => m.place(tx, first));
    run((tx) => m.place(tx, second));
    const copy = new MatchingEngine(TOKENS, l, () => 5);
    for (const r of m.rows().reverse()) copy.load(r);
    copy.advanceOrderSeq(m.orderSeq);
    expect(copy.restoreBooks()).toBe(2);
    const tx = newTx(9, 9);
    copy.place(tx, limit('u0', 'buy', '0.55', '5'));
    expect(tx.reports.filter((r) => r.type === 'venue.filled' && r.liquidity === 'maker').map((r) => r.orderId)).toEqual([first.orderId]);
  });

  it('any order sequence: the book never crosses, reservations match the open orders, pUSD and shares are conserved', () => {
    const order = fc.record({
      u: fc.nat(2),
      side: fc.constantFrom('buy' as const, 'sell' as const),
      cents: fc.integer({ min: 40, max: 60 }),
      size: fc.integer({ min: 1, max: 2000 }).map((c) => str(dec(c).div(100))),
      tif: fc.constantFrom('GTC' as const, 'GTD' as const, 'IOC' as const, 'FOK' as const, 'MARKET' as const),
      postOnly: fc.boolean(),
      cancel: fc.oneof({ arbitrary: fc.constant(null), weight: 6 }, { arbitrary: fc.nat(), weight: 1 }),
    });
    fc.assert(
      fc.property(fc.array(order, { minLength: 10, maxLength: 60 }), (orders) => {
        const { m, l, run } = engine();
        const ids: string[] = [];
        for (const o of orders) {
          if (o.cancel !== null && ids.length) {
            run((tx) => m.cancel(tx, ids[o.cancel! % ids.length]!, { code: 'USER_CANCELED', message: 'canceled by user' }));
            continue;
          }
          const vo: VenueOrder = o.tif === 'MARKET'
            ? { ...limit(USERS[o.u]!, o.side, '0', '0'), kind: 'market', price: null, size: o.side === 'buy' ? null : o.size, quoteAmount: o.side === 'buy' ? o.size : null, timeInForce: 'IOC' }
            : limit(USERS[o.u]!, o.side, str(dec(o.cents).div(100)), o.size, { timeInForce: o.tif, postOnly: o.postOnly });
          ids.push(vo.orderId);
          const tx = run((t) => m.place(t, vo));
          expect(['venue.accepted', 'venue.rejected']).toContain(tx.reports[0]?.type);
          const { bid, ask } = m.touch(A);
          if (bid && ask) expect(bid.lt(ask), `crossed: ${str(bid)} / ${str(ask)}`).toBe(true);
        }
        let pusd = ZERO;
        let shares = ZERO;
        const open = m.rows().filter((r) => r.status === 'open');
        for (const u of USERS) {
          const w = l.walletOf(u);
          const p = w.positions.get(A)!;
          pusd = pusd.plus(w.pusd);
          shares = shares.plus(p.shares);
          expect(w.reserved.gte(0) && w.reserved.lte(w.pusd) && p.reserved.gte(0) && p.reserved.lte(p.shares)).toBe(true);
          const mine = open.filter((r) => r.order.userId === u);
          expect(str(w.reserved)).toBe(str(mine.reduce((s, r) => s.plus(r.reservedUsd), ZERO)));
          expect(str(p.reserved)).toBe(str(mine.reduce((s, r) => s.plus(r.reservedShares), ZERO)));
        }
        expect(str(pusd)).toBe('300');
        expect(str(shares)).toBe('150');
        for (const r of m.rows()) {
          const filled = r.fills.reduce((s, f) => s.plus(f.size), ZERO);
          if (r.order.size !== null) expect(filled.lte(r.order.size)).toBe(true);
          if (r.status !== 'open') expect([r.reservedUsd, r.reservedShares]).toEqual(['0', '0']);
        }
      }),
      { numRuns: 100 },
    );
  });
});
