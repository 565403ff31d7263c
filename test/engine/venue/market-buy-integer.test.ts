import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { dec, str, type Dec } from '../../../engine/decimal.js';
import { Ledger, LIQUIDITY_PROVIDER_ID } from '../../../engine/venue/ledger.js';
import { MatchingEngine, newTx, type Tx } from '../../../engine/venue/matching.js';
import type { TokenInfo, VenueOrder } from '../../../engine/venue/port.js';

/** Both outcomes of one market on a 0.001 tick (prices in thousandths), each the other's complement. */
const token = (tokenId: string, complementTokenId: string): [string, TokenInfo] => [
  tokenId,
  {
    tokenId,
    outcome: tokenId,
    conditionId: 'c',
    question: 'Q?',
    tickSize: dec('0.001'),
    minSize: dec(5),
    complementTokenId,
  },
];
const TOKENS = new Map([token('A', 'B'), token('B', 'A')]);
const USERS = ['u0', 'u1', 'u2', 'u3'];

/** A count of `10^-dp` units as a decimal string. */
const of = (n: number, dp: number): string => str(dec(n).div(10 ** dp));

/** One step: a resting limit order, a quote of the liquidity provider, a market buy or a cancel. */
const step = fc.oneof(
  fc.record({
    kind: fc.constant('limit' as const),
    u: fc.nat(3),
    token: fc.constantFrom('A', 'B'),
    side: fc.constantFrom('buy' as const, 'sell' as const),
    milli: fc.integer({ min: 1, max: 999 }),
    size: fc.oneof(
      { arbitrary: fc.integer({ min: 1, max: 3000 }).map((c) => of(c, 2)), weight: 9 },
      { arbitrary: fc.integer({ min: 1, max: 30000 }).map((c) => of(c, 4)), weight: 1 },
    ),
  }),
  fc.record({
    kind: fc.constant('quote' as const),
    token: fc.constantFrom('A', 'B'),
    side: fc.constantFrom('buy' as const, 'sell' as const),
    milli: fc.integer({ min: 1, max: 999 }),
    size: fc.integer({ min: 1, max: 5000 }).map((c) => of(c, 2)),
  }),
  {
    arbitrary: fc.record({
      kind: fc.constant('buy' as const),
      u: fc.nat(3),
      token: fc.constantFrom('A', 'B'),
      fok: fc.boolean(),
      amount: fc.oneof(
        { arbitrary: fc.integer({ min: 0, max: 60_000_000 }).map((u) => of(u, 6)), weight: 8 },
        { arbitrary: fc.integer({ min: 0, max: 200 }).map((c) => of(c, 2)), weight: 3 },
        { arbitrary: fc.integer({ min: 1, max: 50_000_000 }).map((u) => of(u, 7)), weight: 1 },
      ),
    }),
    weight: 4,
  },
  fc.record({ kind: fc.constant('cancel' as const), at: fc.nat() }),
);

/**
 * Everything an operation and the state after it show: its reports, the users, orders, books and
 * quotes it touched (in order: the journal's row order), every wallet and order row, the books.
 */
function outcome(m: MatchingEngine, l: Ledger, tx: Tx): string {
  return JSON.stringify({
    reports: tx.reports,
    users: [...tx.users],
    orders: [...tx.orders],
    tokens: [...tx.tokens],
    taken: [...tx.liquidityTaken],
    trades: tx.trades,
    wallets: l.rows(),
    rows: m.rowsJson(),
    books: m.resting().map((r) => `${r.tokenId} ${r.orderId} ${r.side} ${str(r.remaining)}@${str(r.price)} ${r.seq}`),
  });
}

/** A ledger and matching engine (integer market buys or decimals only); every user's wallet set. */
function venue(integer: boolean, pusd: readonly string[]) {
  const l = new Ledger('100');
  USERS.forEach((u, i) =>
    l.load({
      userId: u,
      pusd: pusd[i]!,
      reserved: '0',
      positions: [
        ['A', '40', '0', '20'],
        ['B', '40', '0', '20'],
      ],
    }),
  );
  return { l, m: new MatchingEngine(TOKENS, l, () => 7, integer) };
}

/**
 * The venue walks and settles a market buy in integer units (micro-dollars, thousandths, hundredths
 * of a share); the decimal path is the reference: for random books (user orders on both outcomes,
 * quotes of the liquidity provider, sizes finer than hundredths now and then), buyers (some with
 * orders of their own in the way) and amounts (finer than micro-dollars now and then), FOK and IOC,
 * every operation gives the same reports, touched rows in the same order, wallets, order rows and books.
 */
describe('market buys in integer units: the decimal path, to the digit', () => {
  it('the same reports, rows and books as the decimal path (property)', () => {
    fc.assert(
      fc.property(
        fc.array(step, { minLength: 1, maxLength: 40 }),
        fc.array(fc.integer({ min: 0, max: 200_000_000 }), { minLength: 4, maxLength: 4 }),
        (steps, balances) => {
          const pusd = balances.map((u) => of(u, 6));
          const a = venue(true, pusd);
          const b = venue(false, pusd);
          const ids: string[] = [];
          steps.forEach((s, i) => {
            const orderId = `o${i}`;
            let op: (m: MatchingEngine, tx: Tx) => void;
            if (s.kind === 'cancel') {
              const id = ids[s.at % Math.max(1, ids.length)] ?? 'none';
              op = (m, tx) => m.cancel(tx, id, { code: 'USER_CANCELED', message: 'canceled by user' });
            } else {
              const order: VenueOrder =
                s.kind === 'buy'
                  ? { ...buyOf(USERS[s.u]!, s.amount), orderId, tokenId: s.token, timeInForce: s.fok ? 'FOK' : 'IOC' }
                  : orderOf({
                      orderId,
                      userId: s.kind === 'quote' ? LIQUIDITY_PROVIDER_ID : USERS[s.u]!,
                      tokenId: s.token,
                      side: s.side,
                      price: of(s.milli, 3),
                      size: s.size,
                    });
              ids.push(orderId);
              const px: Dec | null = order.price === null ? null : dec(order.price);
              op =
                s.kind === 'quote'
                  ? (m, tx) => m.quote(tx, order, px!, dec(order.size!))
                  : (m, tx) => m.place(tx, order);
            }
            const run = (v: { m: MatchingEngine; l: Ledger }) => {
              const tx = newTx(i + 1, 1_000 + i);
              op(v.m, tx);
              return outcome(v.m, v.l, tx);
            };
            expect(run(a)).toBe(run(b));
          });
        },
      ),
      { numRuns: 400 },
    );
  });

  it('edges: the book spent with just under, exactly and over a cent left; an amount buying no hundredth', () => {
    const ends: string[] = [];
    for (const amount of ['1.0099', '1.01', '1.02', '0.004', '1'])
      for (const tif of ['IOC', 'FOK'] as const) {
        const results = [true, false].map((integer) => {
          const { m, l } = venue(integer, ['5', '5', '5', '5']);
          m.quote(newTx(1, 1_000), limitOf('q', 'sell', '0.5', '2'), dec('0.5'), dec('2'));
          const tx = newTx(2, 2_000);
          m.place(tx, { ...buyOf('u0', amount), timeInForce: tif });
          return outcome(m, l, tx);
        });
        expect(results[0]).toBe(results[1]);
        const r = (JSON.parse(results[0]!) as { reports: { type: string; code?: string }[] }).reports.at(-1)!;
        ends.push(`${amount} ${tif} ${r.type} ${r.code ?? ''}`.trim());
      }
    expect(ends).toEqual([
      '1.0099 IOC venue.filled',
      '1.0099 FOK venue.filled',
      '1.01 IOC venue.canceled IOC_REMAINDER',
      '1.01 FOK venue.canceled FOK_NOT_FILLED',
      '1.02 IOC venue.canceled IOC_REMAINDER',
      '1.02 FOK venue.canceled FOK_NOT_FILLED',
      '0.004 IOC venue.canceled IOC_REMAINDER',
      '0.004 FOK venue.canceled IOC_REMAINDER',
      '1 IOC venue.filled',
      '1 FOK venue.filled',
    ]);
  });

  it('a batch of $1 FOK buys against one quote: each takes what the ones before left, the last is refused', () => {
    const a = venue(true, ['5', '5', '5', '5']);
    const b = venue(false, ['5', '5', '5', '5']);
    for (const v of [a, b]) {
      const tx = newTx(1, 1_000);
      v.m.quote(tx, { ...limitOf('q', 'sell', '0.43', '7') }, dec('0.43'), dec('7'));
    }
    const results = [a, b].map(({ m, l }) => {
      const tx = newTx(2, 2_000);
      for (const u of USERS) m.place(tx, buyOf(u, '1'));
      return outcome(m, l, tx);
    });
    expect(results[0]).toBe(results[1]);
    const reports = JSON.parse(results[0]!) as { reports: { type: string; orderId: string; size?: string }[] };
    // 7 shares at 0.43: $1 buys 2.32 shares, three buys take 6.96, the fourth finds 0.04 and is refused
    expect(reports.reports.filter((r) => r.type === 'venue.filled').map((r) => `${r.orderId} ${r.size}`)).toEqual([
      'buy-u0 2.32',
      'buy-u1 2.32',
      'buy-u2 2.32',
    ]);
    expect(reports.reports.filter((r) => r.type === 'venue.canceled').map((r) => r.orderId)).toEqual(['buy-u3']);
  });
});

/** A venue order of A by `o.userId`: a GTC limit buy unless `o` says otherwise. */
function orderOf(o: Partial<VenueOrder> & Pick<VenueOrder, 'orderId' | 'userId'>): VenueOrder {
  const base = { tokenId: 'A', side: 'buy', kind: 'limit', price: null, size: null, quoteAmount: null } as const;
  return { ...base, timeInForce: 'GTC', postOnly: false, ...o };
}

/** A GTC limit order of the liquidity provider (a quote). */
const limitOf = (orderId: string, side: 'buy' | 'sell', price: string, size: string): VenueOrder =>
  orderOf({ orderId, userId: LIQUIDITY_PROVIDER_ID, side, price, size });

/** A $`amount` FOK market buy of A by `userId`. */
const buyOf = (userId: string, amount: string): VenueOrder =>
  orderOf({ orderId: `buy-${userId}`, userId, kind: 'market', quoteAmount: amount, timeInForce: 'FOK' });

/** The best bid and ask of `tokenId` from the resting orders in decimals (its own, its complement's at 1 − price). */
function touchOf(m: MatchingEngine, tokenId: string): string {
  let bid: Dec | undefined;
  let ask: Dec | undefined;
  for (const r of m.resting()) {
    const own = r.tokenId === tokenId;
    const px = own ? r.price : dec(1).minus(r.price);
    if ((r.side === 'buy') === own) bid = bid === undefined || px.gt(bid) ? px : bid;
    else ask = ask === undefined || px.lt(ask) ? px : ask;
  }
  return `${bid ? str(bid) : '-'} ${ask ? str(ask) : '-'}`;
}

/**
 * A quote of the liquidity provider through `quoteLevel` (captured levels: rests at once when the
 * heads of the book and its complement, compared in thousandths, show it crosses nothing) against
 * the same quote through `quote` (always the matching walk): for random books of user orders and
 * quotes (prices finer than thousandths now and then), every operation gives the same reports,
 * touched rows, wallets, order rows and books (time priority included), and the touch compared in
 * thousandths is the one worked out in decimals from the resting orders.
 */
describe('quotes of captured levels: the matching walk, to the digit', () => {
  it('quoteLevel gives what quote gives; touch is the decimal touch (property)', () => {
    const px = fc.oneof(
      // near 0.5 on both outcomes: orders meet at equal prices and across the complement often
      { arbitrary: fc.integer({ min: 495, max: 505 }).map((k) => of(k, 3)), weight: 9 },
      { arbitrary: fc.integer({ min: 4950, max: 5050 }).map((k) => of(k, 4)), weight: 1 },
    );
    const levelStep = fc.record({
      quote: fc.boolean(),
      u: fc.nat(3),
      token: fc.constantFrom('A', 'B'),
      side: fc.constantFrom('buy' as const, 'sell' as const),
      price: px,
      size: fc.integer({ min: 1, max: 3000 }).map((c) => of(c, 2)),
    });
    fc.assert(
      fc.property(fc.array(levelStep, { minLength: 1, maxLength: 40 }), (steps) => {
        const pusd = USERS.map(() => '1000');
        const a = venue(true, pusd);
        const b = venue(true, pusd);
        steps.forEach((s, i) => {
          const orderId = `o${i}`;
          const order = orderOf({
            orderId,
            userId: s.quote ? LIQUIDITY_PROVIDER_ID : USERS[s.u]!,
            tokenId: s.token,
            side: s.side,
            price: s.price,
            size: s.size,
          });
          const run = (v: { m: MatchingEngine; l: Ledger }, level: boolean) => {
            const tx = newTx(i + 1, 1_000 + i);
            if (!s.quote) v.m.place(tx, order);
            else if (level) v.m.quoteLevel(tx, s.token, orderId, s.side, dec(s.price), dec(s.size));
            else v.m.quote(tx, order, dec(s.price), dec(s.size));
            return outcome(v.m, v.l, tx);
          };
          expect(run(a, true)).toBe(run(b, false));
          for (const t of ['A', 'B']) {
            const { bid, ask } = a.m.touch(t);
            expect(`${bid ? str(bid) : '-'} ${ask ? str(ask) : '-'}`).toBe(touchOf(a.m, t));
          }
        });
      }),
      { numRuns: 300 },
    );
  });
});
