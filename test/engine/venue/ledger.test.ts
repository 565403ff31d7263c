import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { dec, Dec, str, ZERO } from '../../../engine/decimal.js';
import { Ledger, LIQUIDITY_PROVIDER_ID, type Reservation, type Requirement } from '../../../engine/venue/ledger.js';
import type { VenueOrder } from '../../../engine/venue/port.js';

const T = 'tok';
const USERS = ['u0', 'u1', 'u2'];

let n = 0;
function order(
  userId: string,
  side: 'buy' | 'sell',
  price: string | null,
  size: string | null,
  quoteAmount: string | null = null,
): VenueOrder {
  return {
    orderId: `o${++n}`,
    userId,
    tokenId: T,
    side,
    kind: price === null ? 'market' : 'limit',
    price,
    size,
    quoteAmount,
    timeInForce: 'GTC',
    postOnly: false,
  };
}

/** A ledger where every user holds 100 pUSD and 50 shares of T bought for $20. */
function seeded(): Ledger {
  const l = new Ledger('100');
  for (const u of USERS) l.load({ userId: u, pusd: '100', reserved: '0', positions: [[T, '50', '0', '20']] });
  return l;
}

/** {@link Ledger.available} as decimal strings. */
function avail(l: Ledger, userId: string): Record<string, string> {
  return Object.fromEntries(Object.entries(l.available(userId, T)).map(([k, v]) => [k, str(v)]));
}

/** An order with what it holds reserved, as the matching engine keeps it. */
interface Open extends Reservation {
  order: VenueOrder;
  /** Shares left (null: a market buy, bounded by its dollars). */
  left: Dec | null;
}

function reserveOrNull(l: Ledger, o: VenueOrder): Open | null {
  const need = l.requirement(o, o.price === null ? null : dec(o.price), o.size === null ? null : dec(o.size));
  if ('error' in need) return null;
  const r: Open = { order: o, left: o.size === null ? null : dec(o.size), reservedUsd: ZERO, reservedShares: ZERO };
  l.reserve(o, r, need as Requirement);
  return r;
}

/** Balances and reservations agree with the open orders; nothing negative; pUSD and shares conserved. */
function checkInvariants(l: Ledger, open: Open[]): void {
  let pusd = ZERO;
  let shares = ZERO;
  for (const u of USERS) {
    const w = l.walletOf(u);
    const p = w.positions.get(T)!;
    pusd = pusd.plus(w.pusd);
    shares = shares.plus(p.shares);
    expect(w.reserved.gte(0) && w.reserved.lte(w.pusd), `${u} pUSD ${str(w.pusd)} reserved ${str(w.reserved)}`).toBe(
      true,
    );
    expect(
      p.reserved.gte(0) && p.reserved.lte(p.shares),
      `${u} shares ${str(p.shares)} reserved ${str(p.reserved)}`,
    ).toBe(true);
    expect(p.cost.gte(0), `${u} cost ${str(p.cost)}`).toBe(true);
    // the cost basis is kept in micro-dollars (pUSD's 6 decimals)
    expect(p.cost.decimalPlaces() <= 6, `${u} cost ${str(p.cost)}`).toBe(true);
    const mine = open.filter((o) => o.order.userId === u);
    expect(str(w.reserved)).toBe(str(mine.reduce((s, o) => s.plus(o.reservedUsd), ZERO)));
    expect(str(p.reserved)).toBe(str(mine.reduce((s, o) => s.plus(o.reservedShares), ZERO)));
  }
  expect(str(pusd)).toBe('300');
  expect(str(shares)).toBe('150');
}

describe('ledger: reservations and trade settlement', () => {
  it('refuses what the wallet cannot cover, with the venue’s messages, and changes nothing', () => {
    const l = new Ledger('10');
    expect(l.requirement(order('b', 'buy', '0.5', '30'), dec('0.5'), dec(30))).toEqual({
      error: 'INSUFFICIENT_BALANCE',
      reason: 'this buy needs $15 pUSD; available $10',
    });
    expect(l.requirement(order('b', 'sell', '0.5', '1'), dec('0.5'), dec(1))).toEqual({
      error: 'INSUFFICIENT_SHARES',
      reason: 'Not enough shares to place this sell — holding 0',
    });
    expect(l.view('b')).toEqual({ pusd: { balance: '10', reserved: '0', available: '10' }, positions: [] });
  });

  it('a limit buy filled below its limit pays the fill price and releases the reservation at its limit', () => {
    const l = seeded();
    const buy = reserveOrNull(l, order('u0', 'buy', '0.6', '10'))!;
    const sell = reserveOrNull(l, order('u1', 'sell', '0.5', '10'))!;
    expect(avail(l, 'u0')).toMatchObject({ usd: '94' });
    l.settle(buy.order, buy, dec('0.5'), dec(4));
    l.settle(sell.order, sell, dec('0.5'), dec(4));
    expect(str(buy.reservedUsd)).toBe('3.6'); // 6 − 4 × 0.6
    expect(l.view('u0').pusd).toEqual({ balance: '98', reserved: '3.6', available: '94.4' });
    expect(l.view('u0').positions).toEqual([{ tokenId: T, size: '54', reserved: '0', available: '54', costUsd: '22' }]);
    // the seller's average cost goes out with the shares: 20 × 4 / 50
    expect(l.view('u1').positions).toEqual([
      { tokenId: T, size: '46', reserved: '6', available: '40', costUsd: '18.4', realizedPnl: '0.4' },
    ]); // 4 × 0.5 − 1.6
    l.release(buy.order, buy);
    l.release(sell.order, sell);
    expect(avail(l, 'u0')).toEqual({ usd: '98', shares: '54', held: '54', reservedShares: '0' });
    expect(avail(l, 'u1')).toEqual({ usd: '102', shares: '46', held: '46', reservedShares: '0' });
  });

  it('a sell takes out the average cost in micro-dollars: cost_usd never carries more than 6 decimals', () => {
    const l = new Ledger('100');
    l.load({ userId: 'u0', pusd: '100', reserved: '0', positions: [[T, '50', '0', '20']] });
    l.load({ userId: 'u1', pusd: '100', reserved: '0', positions: [[T, '200', '0', '80']] });
    const costBefore = dec('20');
    // buy 100 at 0.37, 22.85 at 0.35, then sell 20 at 0.31: the average cost does not end
    const buys = [order('u0', 'buy', '0.37', '100'), order('u0', 'buy', '0.35', '22.85')];
    const sells = [order('u1', 'sell', '0.37', '100'), order('u1', 'sell', '0.35', '22.85')];
    for (let i = 0; i < 2; i++) {
      const b = reserveOrNull(l, buys[i]!)!;
      const s = reserveOrNull(l, sells[i]!)!;
      const px = dec(buys[i]!.price!);
      const qty = dec(buys[i]!.size!);
      l.settle(b.order, b, px, qty);
      l.settle(s.order, s, px, qty);
    }
    const sell = reserveOrNull(l, order('u0', 'sell', '0.31', '20'))!;
    const taker = reserveOrNull(l, order('u1', 'buy', '0.31', '20'))!;
    l.settle(sell.order, sell, dec('0.31'), dec(20));
    l.settle(taker.order, taker, dec('0.31'), dec(20));
    const cost = costBefore.plus('37').plus('7.9975');
    const shares = dec(50).plus(122.85);
    // 20 shares take out round6(cost × 20 / shares); what stays is exact to the micro-dollar
    const out = cost.times(20).div(shares).toDecimalPlaces(6, Dec.ROUND_HALF_EVEN);
    const view = l.view('u0').positions[0]!;
    expect(view).toEqual({
      tokenId: T,
      size: str(shares.minus(20)),
      reserved: '0',
      available: str(shares.minus(20)),
      costUsd: str(cost.minus(out)),
      realizedPnl: str(dec('6.2').minus(out)),
    });
    expect(dec(view.costUsd).decimalPlaces()).toBeLessThanOrEqual(6);
    // selling every share takes out the whole cost
    const rest = reserveOrNull(l, order('u0', 'sell', '0.31', str(shares.minus(20))))!;
    l.settle(rest.order, rest, dec('0.31'), shares.minus(20));
    expect(str(l.walletOf('u0').positions.get(T)!.cost)).toBe('0');
  });

  it('the liquidity provider is never settled and never serialized', () => {
    const l = new Ledger('100');
    const o = order(LIQUIDITY_PROVIDER_ID, 'sell', '0.5', '10');
    const r: Reservation = { reservedUsd: ZERO, reservedShares: ZERO };
    l.settle(o, r, dec('0.5'), dec(10));
    l.walletOf(LIQUIDITY_PROVIDER_ID);
    l.walletOf('u');
    expect(l.rows().map((w) => w.userId)).toEqual(['u']);
  });

  it('a row shows each position as it is now; a position whose amounts did not change keeps its tuple', () => {
    const l = seeded();
    l.load({
      userId: 'u0',
      pusd: '100',
      reserved: '0',
      positions: [
        [T, '50', '0', '20'],
        ['other', '7', '0', '3.5'],
      ],
    });
    const before = l.row('u0');
    expect(before.positions).toEqual([
      [T, '50', '0', '20'],
      ['other', '7', '0', '3.5'],
    ]);
    const buy = reserveOrNull(l, order('u0', 'buy', '0.25', '8'))!;
    l.settle(buy.order, buy, dec('0.2'), dec('3'));
    const after = l.row('u0');
    expect(after.positions).toEqual([
      [T, '53', '0', '20.6'],
      ['other', '7', '0', '3.5'],
    ]);
    expect(after.positions[1]).toBe(before.positions[1]); // unchanged: not made again
    expect(after.positions[0]).not.toBe(before.positions[0]);
    expect(before.positions[0]).toEqual([T, '50', '0', '20']); // an earlier row is never changed
    const sell = reserveOrNull(l, order('u0', 'sell', '0.9', '5'))!;
    expect(l.row('u0').positions[0]).toEqual([T, '53', '5', '20.6']);
    l.release(sell.order, sell);
    expect(l.row('u0').positions[0]).toEqual([T, '53', '0', '20.6']);
  });

  it('rows round-trip', () => {
    const l = seeded();
    const buy = reserveOrNull(l, order('u0', 'buy', '0.25', '8'))!;
    l.settle(buy.order, buy, dec('0.2'), dec('3.33'));
    const sell = reserveOrNull(l, order('u1', 'sell', '0.3', '5'))!;
    l.settle(sell.order, sell, dec('0.3'), dec(5));
    // a position that realized PnL carries it as a fifth element (5 × 0.3 − 5 × 0.4)
    expect(l.row('u1').positions).toEqual([[T, '45', '0', '18', '-0.5']]);
    expect(JSON.parse(l.rowJson('u1'))).toEqual(l.row('u1'));
    const copy = new Ledger('1');
    for (const r of l.rows()) copy.load(r);
    expect(copy.rows()).toEqual(l.rows());
    expect(copy.view('u0')).toEqual(l.view('u0'));
  });

  it('any sequence of reservations, fills and releases conserves pUSD and shares and never goes negative', () => {
    const price = fc.integer({ min: 1, max: 99 }).map((c) => dec(c).div(100));
    const size = fc.integer({ min: 1, max: 3000 }).map((c) => dec(c).div(100));
    const step = fc.oneof(
      { arbitrary: fc.record({ t: fc.constant('buy' as const), u: fc.nat(2), price, size }), weight: 2 },
      { arbitrary: fc.record({ t: fc.constant('sell' as const), u: fc.nat(2), price, size }), weight: 2 },
      {
        arbitrary: fc.record({
          t: fc.constant('marketBuy' as const),
          u: fc.nat(2),
          usd: fc.integer({ min: 1, max: 4000 }).map((c) => dec(c).div(100)),
        }),
        weight: 1,
      },
      {
        arbitrary: fc.record({
          t: fc.constant('fill' as const),
          a: fc.nat(),
          b: fc.nat(),
          frac: fc.integer({ min: 1, max: 100 }),
        }),
        weight: 4,
      },
      { arbitrary: fc.record({ t: fc.constant('release' as const), a: fc.nat() }), weight: 1 },
    );
    fc.assert(
      fc.property(fc.array(step, { minLength: 20, maxLength: 80 }), (steps) => {
        const l = seeded();
        let open: Open[] = [];
        for (const s of steps) {
          if (s.t === 'buy' || s.t === 'sell') {
            const r = reserveOrNull(l, order(USERS[s.u]!, s.t, str(s.price), str(s.size)));
            if (r) open.push(r);
          } else if (s.t === 'marketBuy') {
            const r = reserveOrNull(l, order(USERS[s.u]!, 'buy', null, null, str(s.usd)));
            if (r) open.push(r);
          } else if (s.t === 'fill') {
            const buys = open.filter((o) => o.order.side === 'buy');
            const sells = open.filter((o) => o.order.side === 'sell');
            if (!buys.length || !sells.length) continue;
            const b = buys[s.a % buys.length]!;
            const sl = sells[s.b % sells.length]!;
            if (b.order.userId === sl.order.userId) continue;
            // the ledger does not care who rested: a price a limit buy accepts
            // (its limit or lower); a market buy pays at most its dollars
            const px =
              b.order.kind === 'limit' ? Dec.min(dec(b.order.price!), dec(sl.order.price!)) : dec(sl.order.price!);
            let qty = Dec.min(sl.left!, b.left ?? b.reservedUsd.div(px).toDecimalPlaces(2, Dec.ROUND_DOWN));
            qty = qty.times(s.frac).div(100).toDecimalPlaces(2, Dec.ROUND_DOWN);
            if (qty.lte(0)) continue;
            l.settle(b.order, b, px, qty);
            l.settle(sl.order, sl, px, qty);
            for (const o of [b, sl]) if (o.left) o.left = o.left.minus(qty);
            open = open.filter((o) => {
              if (o.left === null || o.left.gt(0)) return true;
              l.release(o.order, o);
              return false;
            });
          } else if (open.length) {
            const o = open[s.a % open.length]!;
            l.release(o.order, o);
            open = open.filter((x) => x !== o);
          }
          checkInvariants(l, open);
        }
        for (const o of open) l.release(o.order, o);
        checkInvariants(l, []);
      }),
      { numRuns: 100 },
    );
  });
});
