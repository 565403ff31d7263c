import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { dec, str, ZERO } from '../../../engine/decimal.js';
import { Ledger, LIQUIDITY_PROVIDER_ID } from '../../../engine/venue/ledger.js';
import { MatchingEngine, newTx, type Tx } from '../../../engine/venue/matching.js';
import type { TokenInfo, VenueOrder, VenueReport } from '../../../engine/venue/port.js';

const A = 'A';
const TOKENS = new Map<string, TokenInfo>([
  [
    A,
    {
      tokenId: A,
      outcome: 'Yes',
      conditionId: 'c',
      question: 'Q?',
      tickSize: dec('0.01'),
      minSize: dec(5),
      complementTokenId: 'B',
    },
  ],
]);
const USERS = ['u0', 'u1', 'u2'];

/**
 * A matching engine over `tokens` and a ledger where every user holds 100 pUSD and 50 shares of
 * each token (by default the single token A).
 */
function engine(tokens: ReadonlyMap<string, TokenInfo> = TOKENS): {
  m: MatchingEngine;
  l: Ledger;
  run: (fn: (tx: Tx) => void) => Tx;
} {
  const l = new Ledger('100');
  for (const u of USERS)
    l.load({ userId: u, pusd: '100', reserved: '0', positions: [...tokens.keys()].map((t) => [t, '50', '0', '25']) });
  const m = new MatchingEngine(tokens, l, () => 5);
  let seq = 0;
  return {
    m,
    l,
    run: (fn) => {
      const tx = newTx(++seq, 1_000 + seq);
      fn(tx);
      return tx;
    },
  };
}

/** A second engine recovered from `m`'s rows (given in reverse order), its books restored. */
function recovered(m: MatchingEngine, l: Ledger, tokens: ReadonlyMap<string, TokenInfo>): MatchingEngine {
  const copy = new MatchingEngine(tokens, l, () => 5);
  for (const r of m.rows().reverse()) copy.load(r);
  copy.advanceOrderSeq(m.orderSeq);
  expect(copy.restoreBooks()).toBe(m.rows().filter((r) => r.status === 'open').length);
  return copy;
}

let n = 0;
function limit(
  userId: string,
  side: 'buy' | 'sell',
  price: string,
  size: string,
  extra: Partial<VenueOrder> = {},
): VenueOrder {
  return {
    orderId: `o${++n}`,
    userId,
    tokenId: A,
    side,
    kind: 'limit',
    price,
    size,
    quoteAmount: null,
    timeInForce: 'GTC',
    postOnly: false,
    ...extra,
  };
}

/** Random orders (or cancels, `cancel` ≠ null) on `tokens`, limit prices `minCents`–`maxCents`. */
function randomOrder(tokens: string[], minCents: number, maxCents: number) {
  return fc.record({
    u: fc.nat(2),
    token: fc.constantFrom(...tokens),
    side: fc.constantFrom('buy' as const, 'sell' as const),
    cents: fc.integer({ min: minCents, max: maxCents }),
    size: fc.integer({ min: 1, max: 2000 }).map((c) => str(dec(c).div(100))),
    tif: fc.constantFrom('GTC' as const, 'GTD' as const, 'IOC' as const, 'FOK' as const, 'MARKET' as const),
    postOnly: fc.boolean(),
    cancel: fc.oneof({ arbitrary: fc.constant(null), weight: 6 }, { arbitrary: fc.nat(), weight: 1 }),
  });
}

/** The venue order of a {@link randomOrder} (a market buy spends `size` dollars). */
function venueOrder(o: {
  u: number;
  token: string;
  side: 'buy' | 'sell';
  cents: number;
  size: string;
  tif: 'GTC' | 'GTD' | 'IOC' | 'FOK' | 'MARKET';
  postOnly: boolean;
}): VenueOrder {
  const base =
    o.tif === 'MARKET'
      ? {
          ...limit(USERS[o.u]!, o.side, '0', '0'),
          kind: 'market' as const,
          price: null,
          size: o.side === 'buy' ? null : o.size,
          quoteAmount: o.side === 'buy' ? o.size : null,
          timeInForce: 'IOC' as const,
        }
      : limit(USERS[o.u]!, o.side, str(dec(o.cents).div(100)), o.size, { timeInForce: o.tif, postOnly: o.postOnly });
  return { ...base, tokenId: o.token };
}

/**
 * Places each random order (or cancels one placed before) in its own operation; after each, the
 * first report is the acceptance or rejection, no touch of `tokens` is crossed and `check` holds.
 * @returns every report, in order.
 */
function play(
  m: MatchingEngine,
  run: (fn: (tx: Tx) => void) => Tx,
  orders: (Parameters<typeof venueOrder>[0] & { cancel: number | null })[],
  tokens: string[],
  check = () => {},
): VenueReport[] {
  const ids: string[] = [];
  const reports: VenueReport[] = [];
  for (const o of orders) {
    if (o.cancel !== null && ids.length) {
      reports.push(
        ...run((tx) =>
          m.cancel(tx, ids[o.cancel! % ids.length]!, { code: 'USER_CANCELED', message: 'canceled by user' }),
        ).reports,
      );
      continue;
    }
    const vo = venueOrder(o);
    ids.push(vo.orderId);
    const tx = run((t) => m.place(t, vo));
    expect(['venue.accepted', 'venue.rejected']).toContain(tx.reports[0]?.type);
    reports.push(...tx.reports);
    for (const t of tokens) {
      const { bid, ask } = m.touch(t);
      if (bid && ask) expect(bid.lt(ask), `${t} crossed: ${str(bid)} / ${str(ask)}`).toBe(true);
    }
    check();
  }
  return reports;
}

describe('matching engine', () => {
  it('one operation: accepted, then each fill taker first, trade ids from the seq; the tx has the changes', () => {
    const { m, run } = engine();
    const s1 = limit('u1', 'sell', '0.5', '5');
    const s2 = limit('u2', 'sell', '0.51', '5');
    run((tx) => m.place(tx, s1));
    run((tx) => m.place(tx, s2));
    const b = limit('u0', 'buy', '0.51', '8');
    const tx = run((t) => m.place(t, b));
    expect(
      tx.reports.map((r) => [
        r.type,
        r.orderId,
        r.type === 'venue.filled' ? `${r.tradeId} ${r.liquidity} ${r.size}@${r.price}` : '',
      ]),
    ).toEqual([
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
    const copy = recovered(m, l, TOKENS);
    const tx = newTx(9, 9);
    copy.place(tx, limit('u0', 'buy', '0.55', '5'));
    expect(
      tx.reports.filter((r) => r.type === 'venue.filled' && r.liquidity === 'maker').map((r) => r.orderId),
    ).toEqual([first.orderId]);
  });

  it('any order sequence: book never crosses, reservations match open orders, pUSD and shares conserved', () => {
    const order = randomOrder([A], 40, 60);
    fc.assert(
      fc.property(fc.array(order, { minLength: 10, maxLength: 60 }), (orders) => {
        const { m, l, run } = engine();
        play(m, run, orders, [A]);
        let pusd = ZERO;
        let shares = ZERO;
        const open = m.rows().filter((r) => r.status === 'open');
        for (const u of USERS) {
          const w = l.walletOf(u);
          const p = w.positions.get(A)!;
          pusd = pusd.plus(w.pusd);
          shares = shares.plus(p.shares);
          expect(w.reserved.gte(0) && w.reserved.lte(w.pusd) && p.reserved.gte(0) && p.reserved.lte(p.shares)).toBe(
            true,
          );
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

const B = 'B';
/** Both outcomes of one market: A and its complement B. */
const PAIR = new Map<string, TokenInfo>([
  [
    A,
    {
      tokenId: A,
      outcome: 'Yes',
      conditionId: 'c',
      question: 'Q?',
      tickSize: dec('0.01'),
      minSize: dec(5),
      complementTokenId: B,
    },
  ],
  [
    B,
    {
      tokenId: B,
      outcome: 'No',
      conditionId: 'c',
      question: 'Q?',
      tickSize: dec('0.01'),
      minSize: dec(5),
      complementTokenId: A,
    },
  ],
]);

/** A matching engine over both outcomes, every user holding 100 pUSD and 50 shares of each. */
const pairEngine = () => engine(PAIR);

const on = (tokenId: string, o: VenueOrder): VenueOrder => ({ ...o, tokenId });
const fills = (tx: Tx) =>
  tx.reports.flatMap((r) =>
    r.type === 'venue.filled' ? [`${r.orderId} ${r.tradeId} ${r.liquidity} ${r.size}@${r.price}`] : [],
  );

describe('complementary matching (mint, merge)', () => {
  it('a buy of A at p crosses a resting buy of B at ≥ 1 − p: a full set minted, maker at its price', () => {
    const { m, l, run } = pairEngine();
    const noBid = on(B, limit('u1', 'buy', '0.45', '10'));
    run((tx) => m.place(tx, noBid));
    // B's bid at 0.45 is A's ask at 0.55: the book and touch of A show it
    expect(m.depth(A, 5)!.asks.map((x) => `${str(x.size)}@${str(x.price)}`)).toEqual(['10@0.55']);
    expect(str(m.touch(A).ask!)).toBe('0.55');
    const yesBuy = on(A, limit('u0', 'buy', '0.6', '4', { timeInForce: 'IOC' }));
    const tx = run((t) => m.place(t, yesBuy));
    expect(fills(tx)).toEqual([
      `${yesBuy.orderId} T2-1-mint-t taker 4@0.55`,
      `${noBid.orderId} T2-1-mint-m maker 4@0.45`,
    ]);
    expect([...tx.tokens].sort()).toEqual([A, B]);
    // each buyer paid its price and got its token; the two payments (4 × $1) back the minted sets
    expect(l.view('u0').pusd.balance).toBe('97.8');
    expect(l.view('u0').positions.find((p) => p.tokenId === A)?.size).toBe('54');
    expect(l.view('u1').pusd).toEqual({ balance: '98.2', reserved: '2.7', available: '95.5' });
    expect(l.view('u1').positions.find((p) => p.tokenId === B)?.size).toBe('54');
    expect(m.depth(A, 5)!.asks.map((x) => `${str(x.size)}@${str(x.price)}`)).toEqual(['6@0.55']);
  });

  it('a sell of A at p crosses a resting sell of B at ≤ 1 − p: a full set merged, each at its price', () => {
    const { m, l, run } = pairEngine();
    const noAsk = on(B, limit('u1', 'sell', '0.3', '10'));
    run((tx) => m.place(tx, noAsk));
    // B's ask at 0.3 is A's bid at 0.7
    expect(str(m.touch(A).bid!)).toBe('0.7');
    expect(m.depth(A, 5)!.bids.map((x) => `${str(x.size)}@${str(x.price)}`)).toEqual(['10@0.7']);
    const yesSell = on(A, limit('u0', 'sell', '0.65', '10'));
    const tx = run((t) => m.place(t, yesSell));
    expect(fills(tx)).toEqual([
      `${yesSell.orderId} T2-1-merge-t taker 10@0.7`,
      `${noAsk.orderId} T2-1-merge-m maker 10@0.3`,
    ]);
    expect(l.view('u0').pusd.balance).toBe('107');
    expect(l.view('u1').pusd.balance).toBe('103');
    expect(l.view('u0').positions.find((p) => p.tokenId === A)?.size).toBe('40');
    expect(l.view('u1').positions.find((p) => p.tokenId === B)?.size).toBe('40');
  });

  it('both books are walked as one, best price first, equal prices by arrival; levels at one price are merged', () => {
    const { m, run } = pairEngine();
    const ownAsk = on(A, limit('u1', 'sell', '0.56', '5'));
    const noBidA = on(B, limit('u2', 'buy', '0.44', '5')); // A ask 0.56, later than ownAsk
    const noBidB = on(B, limit('u2', 'buy', '0.46', '5')); // A ask 0.54: the best
    for (const o of [ownAsk, noBidA, noBidB]) run((tx) => m.place(tx, o));
    expect(m.depth(A, 5)!.asks.map((x) => `${str(x.size)}@${str(x.price)}`)).toEqual(['5@0.54', '10@0.56']);
    expect(m.depth(B, 5)!.bids.map((x) => `${str(x.size)}@${str(x.price)}`)).toEqual(['5@0.46', '10@0.44']);
    const tx = run((t) => m.place(t, on(A, limit('u0', 'buy', '0.56', '15'))));
    expect(
      fills(tx)
        .filter((f) => f.includes('maker'))
        .map((f) => f.split(' ')[0]),
    ).toEqual([noBidB.orderId, ownAsk.orderId, noBidA.orderId]);
  });

  it('self-trade prevention across books: never mints or merges with itself; its resting order canceled', () => {
    const { m, run } = pairEngine();
    const own = on(B, limit('u0', 'buy', '0.5', '5'));
    run((tx) => m.place(tx, own));
    const tx = run((t) => m.place(t, on(A, limit('u0', 'buy', '0.5', '5', { timeInForce: 'IOC' }))));
    expect(fills(tx)).toEqual([]);
    expect(tx.reports.find((r) => r.orderId === own.orderId)).toMatchObject({
      type: 'venue.canceled',
      reason: 'self-trade prevention',
    });
  });

  it('after recovery the restored books of both outcomes match as before, time priority across them kept', () => {
    const { m, l, run } = pairEngine();
    const first = on(B, limit('u1', 'buy', '0.45', '5')); // A ask at 0.55
    const second = on(A, limit('u2', 'sell', '0.55', '5'));
    run((tx) => m.place(tx, first));
    run((tx) => m.place(tx, second));
    const copy = recovered(m, l, PAIR);
    expect(copy.depth(A, 5)).toEqual(m.depth(A, 5));
    const tx = newTx(9, 9);
    copy.place(tx, on(A, limit('u0', 'buy', '0.55', '7')));
    expect(fills(tx)).toEqual([
      expect.stringMatching(/ T9-1-mint-t taker 5@0.55$/),
      `${first.orderId} T9-1-mint-m maker 5@0.45`,
      expect.stringMatching(/ T9-2-t taker 2@0.55$/),
      `${second.orderId} T9-2-m maker 2@0.55`,
    ]);
  });

  it('FOK counts the complement; post-only is checked against the merged touch', () => {
    const { m, run } = pairEngine();
    run((tx) => m.place(tx, on(B, limit('u1', 'buy', '0.45', '5'))));
    run((tx) => m.place(tx, on(A, limit('u2', 'sell', '0.55', '5'))));
    const fok = run((t) => m.place(t, on(A, limit('u0', 'buy', '0.55', '10', { timeInForce: 'FOK' }))));
    expect(fills(fok)).toHaveLength(4);
    run((tx) => m.place(tx, on(B, limit('u1', 'buy', '0.4', '5'))));
    const po = run((t) => m.place(t, on(A, limit('u0', 'buy', '0.6', '5', { postOnly: true }))));
    expect(po.reports[0]).toMatchObject({ type: 'venue.rejected', error: 'order crosses book' });
  });

  it('any sequence on both outcomes: no merged book crosses, reservations match, everything conserved', () => {
    const order = randomOrder([A, B], 35, 65);
    let complementary = 0;
    fc.assert(
      fc.property(fc.array(order, { minLength: 10, maxLength: 60 }), (orders) => {
        const { m, l, run } = pairEngine();
        let sets = ZERO; // full sets minted − merged by trades
        const reports = play(m, run, orders, [A, B], () => {
          // the two outcomes' touches mirror each other
          expect(str(m.touch(A).bid ?? ZERO)).toBe(m.touch(B).ask ? str(dec(1).minus(m.touch(B).ask!)) : '0');
        });
        for (const r of reports) {
          if (r.type !== 'venue.filled' || r.liquidity !== 'taker') continue;
          if (r.tradeId.endsWith('-mint-t')) sets = sets.plus(r.size);
          if (r.tradeId.endsWith('-merge-t')) sets = sets.minus(r.size);
          if (/-m(int|erge)-t$/.test(r.tradeId)) complementary++;
        }
        let pusd = ZERO;
        const shares: Record<string, typeof ZERO> = { [A]: ZERO, [B]: ZERO };
        const open = m.rows().filter((r) => r.status === 'open');
        for (const u of USERS) {
          const w = l.walletOf(u);
          pusd = pusd.plus(w.pusd);
          expect(w.reserved.gte(0) && w.reserved.lte(w.pusd)).toBe(true);
          const mine = open.filter((r) => r.order.userId === u);
          expect(str(w.reserved)).toBe(str(mine.reduce((s, r) => s.plus(r.reservedUsd), ZERO)));
          for (const t of [A, B]) {
            const p = w.positions.get(t)!;
            shares[t] = shares[t]!.plus(p.shares);
            expect(p.reserved.gte(0) && p.reserved.lte(p.shares)).toBe(true);
            expect(str(p.reserved)).toBe(
              str(mine.filter((r) => r.order.tokenId === t).reduce((s, r) => s.plus(r.reservedShares), ZERO)),
            );
          }
        }
        // each minted set took $1 out of the wallets, each merged one gave $1 back; both tokens move together
        expect(str(pusd.plus(sets))).toBe('300');
        expect(str(shares[A]!)).toBe(str(sets.plus(150)));
        expect(str(shares[B]!)).toBe(str(sets.plus(150)));
      }),
      { numRuns: 100 },
    );
    expect(complementary).toBeGreaterThan(0);
  });
});
