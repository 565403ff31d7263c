import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { keccak256, toUtf8Bytes } from 'ethers';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../engine/clock.js';
import { dec } from '../../../engine/decimal.js';
import { createLogger } from '../../../engine/logger.js';
import { SqliteStore } from '../../../engine/store/sqlite.js';
import type { Store } from '../../../engine/store/port.js';
import { FaultyStore } from '../store/faulty-store.js';
import { poll } from '../../api/trading-kit.js';
import type { Catalogue } from '../../../engine/venue/markets.js';
import type { VenueOrder, VenueReport } from '../../../engine/venue/port.js';
import { SimVenue } from '../../../engine/venue/sim-venue.js';
import { operationHash } from '../../../engine/data/records.js';

const A = '111';
const B = '222';

function catalogue(): Catalogue {
  const tick = dec('0.01');
  const min = dec(5);
  return {
    markets: [
      {
        conditionId: '0xc',
        question: 'Q?',
        slug: 'q',
        endDateIso: null,
        tickSize: tick,
        minSize: min,
        negRisk: false,
        tokens: [
          { tokenId: A, outcome: 'Yes', price: dec('0.5') },
          { tokenId: B, outcome: 'No', price: dec('0.5') },
        ],
      },
    ],
    tokens: new Map([
      [
        A,
        {
          tokenId: A,
          outcome: 'Yes',
          conditionId: '0xc',
          question: 'Q?',
          referencePrice: dec('0.5'),
          tickSize: tick,
          minSize: min,
          complementTokenId: B,
        },
      ],
      [
        B,
        {
          tokenId: B,
          outcome: 'No',
          conditionId: '0xc',
          question: 'Q?',
          referencePrice: dec('0.5'),
          tickSize: tick,
          minSize: min,
          complementTokenId: A,
        },
      ],
    ]),
    replay: {
      tokenId: A,
      points: [
        { tSec: 0, price: dec('0.5') },
        { tSec: 600, price: dec('0.6') },
      ],
    },
  };
}

let n = 0;
function order(
  userId: string,
  side: 'buy' | 'sell',
  price: string | null,
  size: string | null,
  extra: Partial<VenueOrder> = {},
): VenueOrder {
  return {
    orderId: `ord_${++n}`,
    userId,
    tokenId: A,
    side,
    kind: price === null ? 'market' : 'limit',
    price,
    size,
    quoteAmount: null,
    timeInForce: 'GTC',
    postOnly: false,
    ...extra,
  };
}

async function openVenue(
  opts: { dir?: string | null; liquidityLevels?: number; initial?: string; store?: Store } = {},
) {
  const store = opts.store ?? (await SqliteStore.open(opts.dir ?? null));
  const venue = await SimVenue.open({
    catalogue: catalogue(),
    store,
    clock: new ManualClock(1_000),
    log: createLogger('silent'),
    initialPusd: opts.initial ?? '1000',
    liquidityLevels: opts.liquidityLevels ?? 0,
    refillMs: 60_000,
    replay: false,
    replaySpeed: 1,
  });
  const reports: VenueReport[] = [];
  venue.onReport((r) => reports.push(r));
  return { store, venue, reports };
}

/** Gives `user` shares of A by crossing a resting sell of the liquidity-less book from `seller`… */
async function seedShares(venue: SimVenue, user: string, size: string, price = '0.5') {
  // a short-lived counterparty that splits full sets for the shares: buys cannot happen without a seller
  const seller = `seed-${user}`;
  await venue.walletOp({ kind: 'split', opId: `seed-${++n}`, userId: seller, conditionId: '0xc', amount: size });
  await venue.submit(order(seller, 'sell', price, size));
  await venue.submit(order(user, 'buy', price, size));
}

describe('simulated venue: matching engine', () => {
  const dirs: string[] = [];
  afterEach(async () => {
    for (const d of dirs.splice(0)) await fs.rm(d, { recursive: true, force: true });
  });

  it('price-time priority: better price first, then arrival order; fills at the resting price', async () => {
    const { venue, reports } = await openVenue();
    await seedShares(venue, 's1', '30');
    await seedShares(venue, 's2', '30');
    const o1 = order('s1', 'sell', '0.55', '10');
    const o2 = order('s2', 'sell', '0.55', '10');
    const o3 = order('s1', 'sell', '0.54', '5');
    for (const o of [o1, o2, o3]) await venue.submit(o);
    reports.length = 0;
    const taker = order('b', 'buy', '0.56', '18');
    await venue.submit(taker);
    const fills = reports.filter((r) => r.type === 'venue.filled' && r.orderId === taker.orderId);
    expect(fills.map((f) => f.type === 'venue.filled' && [f.price, f.size, f.liquidity])).toEqual([
      ['0.54', '5', 'taker'],
      ['0.55', '10', 'taker'],
      ['0.55', '3', 'taker'],
    ]);
    expect(venue.orderState(o1.orderId)?.status).toBe('filled');
    expect(venue.orderState(o2.orderId)?.fills.map((f) => f.size)).toEqual(['3']);
    expect(venue.book(A)?.asks).toEqual([{ price: '0.55', size: '7' }]);
    // buyer paid 5×0.54 + 13×0.55 = 9.85; reservation released in full
    expect(venue.wallet('b').pusd).toEqual({ balance: '990.15', reserved: '0', available: '990.15' });
    expect(venue.wallet('b').positions[0]).toMatchObject({ size: '18', costUsd: '9.85' });
  });

  it('GTC remainder rests with its reservation; cancel releases it', async () => {
    const { venue, reports } = await openVenue();
    const o = order('b', 'buy', '0.4', '100');
    await venue.submit(o);
    expect(venue.wallet('b').pusd).toEqual({ balance: '1000', reserved: '40', available: '960' });
    expect(venue.book(A)?.bids).toEqual([{ price: '0.4', size: '100' }]);
    await venue.cancel(o.orderId, { code: 'USER_CANCELED', message: 'canceled by user' });
    expect(reports.at(-1)).toMatchObject({ type: 'venue.canceled', orderId: o.orderId });
    expect(venue.wallet('b').pusd.reserved).toBe('0');
    expect(venue.book(A)?.bids).toEqual([]);
  });

  it('IOC fills what crosses and cancels the rest; FOK is all or nothing', async () => {
    const { venue, reports } = await openVenue();
    await seedShares(venue, 's', '10');
    await venue.submit(order('s', 'sell', '0.6', '10'));
    const ioc = order('b', 'buy', '0.6', '25', { timeInForce: 'IOC' });
    const fok = order('c', 'buy', '0.6', '25', { timeInForce: 'FOK' });
    await venue.submit(fok);
    expect(venue.orderState(fok.orderId)).toMatchObject({ status: 'canceled', fills: [] });
    expect(venue.wallet('c').pusd.reserved).toBe('0');
    await venue.submit(ioc);
    expect(venue.orderState(ioc.orderId)?.fills.map((f) => f.size)).toEqual(['10']);
    expect(reports.at(-1)).toMatchObject({
      type: 'venue.canceled',
      orderId: ioc.orderId,
      reason: expect.stringMatching(/IOC/),
    });
    expect(venue.wallet('b').pusd).toEqual({ balance: '994', reserved: '0', available: '994' });
    expect(venue.book(A)?.bids).toEqual([]);
  });

  it('market buy spends dollars across levels; a market order against an empty side cancels', async () => {
    const { venue } = await openVenue();
    await seedShares(venue, 's', '40');
    await venue.submit(order('s', 'sell', '0.5', '10'));
    await venue.submit(order('s', 'sell', '0.6', '30'));
    const m = order('b', 'buy', null, null, { kind: 'market', quoteAmount: '8', timeInForce: 'IOC' });
    await venue.submit(m);
    const st = venue.orderState(m.orderId)!;
    expect(st.status).toBe('filled');
    expect(st.fills.map((f) => [f.price, f.size])).toEqual([
      ['0.5', '10'],
      ['0.6', '5'],
    ]);
    expect(st.fills.at(-1)?.completes).toBe(true);
    expect(venue.wallet('b').pusd.balance).toBe('992');
    const sell = order('b', 'sell', null, '5', { kind: 'market', timeInForce: 'IOC' });
    await venue.submit(sell);
    expect(venue.orderState(sell.orderId)?.status).toBe('canceled');
  });

  it('self-trade prevention cancels the resting order of the same user and keeps matching', async () => {
    const { venue, reports } = await openVenue();
    await seedShares(venue, 'u', '10');
    await seedShares(venue, 'v', '10');
    const own = order('u', 'sell', '0.5', '10');
    const other = order('v', 'sell', '0.51', '10');
    await venue.submit(own);
    await venue.submit(other);
    const buy = order('u', 'buy', '0.51', '10');
    await venue.submit(buy);
    expect(reports.find((r) => r.orderId === own.orderId && r.type === 'venue.canceled')).toMatchObject({
      reason: 'self-trade prevention',
    });
    expect(venue.orderState(buy.orderId)?.fills.map((f) => f.price)).toEqual(['0.51']);
  });

  it('refuses what the wallet cannot cover and post-only orders that cross', async () => {
    const { venue, reports } = await openVenue({ initial: '10' });
    await venue.submit(order('b', 'buy', '0.5', '30'));
    expect(reports.at(-1)).toMatchObject({ type: 'venue.rejected', error: 'INSUFFICIENT_BALANCE' });
    await venue.submit(order('b', 'sell', '0.5', '1'));
    expect(reports.at(-1)).toMatchObject({
      type: 'venue.rejected',
      error: 'INSUFFICIENT_SHARES',
      reason: 'Not enough shares to place this sell — holding 0',
    });
    await venue.submit(order('b', 'buy', '0.3', '10'));
    await venue.submit(order('c', 'sell', '0.3', '5', { postOnly: true }));
    expect(reports.at(-1)).toMatchObject({ type: 'venue.rejected', error: 'order crosses book' });
    expect(venue.wallet('b').pusd).toEqual({ balance: '10', reserved: '3', available: '7' });
  });

  it('submitting the same order id twice does nothing the second time', async () => {
    const { venue } = await openVenue();
    const o = order('b', 'buy', '0.4', '10');
    await venue.submit(o);
    await venue.submit(o);
    expect(venue.book(A)?.bids).toEqual([{ price: '0.4', size: '10' }]);
    expect(venue.wallet('b').pusd.reserved).toBe('4');
  });

  it('the liquidity provider seeds several levels each side of the reference, never crossed or locked', async () => {
    const { venue } = await openVenue({ liquidityLevels: 5 });
    const book = venue.book(A)!;
    expect(book.bids.map((l) => l.price)).toEqual(['0.49', '0.48', '0.47', '0.46', '0.45']);
    expect(book.asks.map((l) => l.price)).toEqual(['0.51', '0.52', '0.53', '0.54', '0.55']);
    expect(book.bids.every((l) => Number(l.size) >= 50)).toBe(true);
    await venue.setReference(A, dec('0.6'));
    const moved = venue.book(A)!;
    expect(dec(moved.bids[0]!.price).lt(dec(moved.asks[0]!.price))).toBe(true);
    expect(moved.bids[0]!.price).toBe('0.59');
  });

  it('a liquidity provider re-quote takes user orders its new prices cross (how replay hits orders)', async () => {
    const { venue, reports } = await openVenue({ liquidityLevels: 3 });
    const o = order('b', 'buy', '0.5', '10');
    await venue.submit(o); // rests inside the spread
    await venue.setReference(A, dec('0.45'));
    expect(venue.orderState(o.orderId)?.status).toBe('filled');
    expect(reports.filter((r) => r.orderId === o.orderId && r.type === 'venue.filled')[0]).toMatchObject({
      liquidity: 'maker',
      price: '0.5',
    });
  });

  it('state survives a restart: resting orders rest, wallets unchanged, no fill applied twice', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-venue-'));
    dirs.push(dir);
    const first = await openVenue({ dir });
    await seedShares(first.venue, 's', '20');
    const rest = order('b', 'buy', '0.3', '10');
    await first.venue.submit(rest);
    await first.venue.submit(order('s', 'sell', '0.7', '5'));
    const before = { b: first.venue.wallet('b'), s: first.venue.wallet('s'), book: first.venue.book(A) };
    // no close(): as after kill -9, only the journal is there
    const second = await openVenue({ dir });
    expect(second.venue.wallet('b')).toEqual(before.b);
    expect(second.venue.wallet('s')).toEqual(before.s);
    expect(second.venue.book(A)).toEqual(before.book);
    expect(second.venue.orderState(rest.orderId)?.status).toBe('open');
    await second.venue.submit(rest);
    expect(second.venue.book(A)?.bids).toEqual([{ price: '0.3', size: '10' }]);
    await second.venue.close();
    const third = await openVenue({ dir });
    expect(third.venue.wallet('b')).toEqual(before.b);
    await third.venue.submit(order('s', 'sell', '0.3', '10'));
    expect(third.venue.orderState(rest.orderId)?.status).toBe('filled');
  });

  it('chain positions: the two sides of a trade share one; a restart keeps it, reuses none', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-venue-'));
    dirs.push(dir);
    const positions = (rs: VenueReport[]) =>
      rs.flatMap((r) => (r.type === 'venue.filled' && r.trade ? [[r.trade.blockTimestamp, r.trade.logIndex]] : []));
    const first = await openVenue({ dir });
    const split = await first.venue.walletOp({
      kind: 'split',
      opId: 'op1',
      userId: 's',
      conditionId: '0xc',
      amount: '20',
    });
    expect(split).toMatchObject({ blockTimestamp: 0, logIndex: 0 }); // the clock is at 1 s: block 0
    const rest = order('b', 'buy', '0.3', '10');
    await first.venue.submit(rest);
    const sell = order('s', 'sell', '0.3', '4');
    await first.venue.submit(sell);
    const fills = first.reports.filter((r) => r.type === 'venue.filled');
    expect(fills).toHaveLength(2);
    const [t, m] = fills as Extract<VenueReport, { type: 'venue.filled' }>[];
    expect(t!.trade).toEqual(m!.trade);
    expect(t!.trade).toMatchObject({
      blockTimestamp: 0,
      logIndex: 1,
      transactionHash: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      size: '4',
      feeUsd: '0',
      taker: { userId: 's', orderId: sell.orderId, tokenId: A, side: 'sell', price: '0.3' },
      maker: { userId: 'b', orderId: rest.orderId, tokenId: A, side: 'buy', price: '0.3' },
    });
    // the simulated transaction hash is keccak256 of `venue-op:<seq>` (ethers' reference computation)
    const opHashes = Array.from({ length: 64 }, (_, seq) => keccak256(toUtf8Bytes(`venue-op:${seq}`)));
    expect(opHashes).toContain(t!.trade!.transactionHash);
    // no close(): as after kill -9; the fill is reported again with its position, the next trade comes after it
    const second = await openVenue({ dir });
    expect(second.venue.orderState(rest.orderId)?.fills[0]?.trade).toEqual(t!.trade);
    await second.venue.submit(order('s', 'sell', '0.3', '3'));
    await second.venue.close();
    const third = await openVenue({ dir });
    await third.venue.submit(order('s', 'sell', '0.3', '3'));
    expect([...positions(second.reports), ...positions(third.reports)]).toEqual([
      [0, 2],
      [0, 2],
      [0, 3],
      [0, 3],
    ]);
  });

  it('operationHash is keccak256 of `venue-op:<seq>`, as ethers computes it, for every sequence number', () => {
    for (const seq of [
      0,
      1,
      9,
      10,
      99,
      12_345,
      2 ** 31,
      Number.MAX_SAFE_INTEGER,
      ...Array.from({ length: 500 }, (_, i) => i * 7919),
    ])
      expect(operationHash(seq)).toBe(keccak256(toUtf8Bytes(`venue-op:${seq}`)));
  });

  it('checkpoints keep working and unreleased finished orders, forget released ones, compact the journal', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-venue-'));
    dirs.push(dir);
    const first = await openVenue({ dir });
    await seedShares(first.venue, 's', '20');
    const resting = order('b', 'buy', '0.3', '10');
    await first.venue.submit(resting);
    const filled = order('b', 'buy', '0.5', '5');
    const filledToo = order('b', 'buy', '0.5', '5');
    await first.venue.submit(order('s', 'sell', '0.5', '10'));
    await first.venue.submit(filled);
    await first.venue.submit(filledToo);
    expect(first.venue.orderState(filled.orderId)?.status).toBe('filled');
    first.venue.release(filled.orderId); // its actor recorded the fill
    first.venue.release(resting.orderId); // still working: ignored
    const wallet = first.venue.wallet('b');
    // journal > 2 deletion slices
    for (let i = 0; i < 1100; i++) await first.venue.submit(order('c', 'buy', '0.01', '5'));
    await first.venue.close(); // writes a checkpoint
    const journal = await first.store.collection('venueJournal');
    expect(await journal.count({})).toBe(0);
    await first.store.close();
    const second = await openVenue({ dir });
    expect(second.venue.orderState(filled.orderId)).toBeNull();
    expect(second.venue.orderState(filledToo.orderId)?.status).toBe('filled');
    expect(second.venue.orderState(resting.orderId)?.status).toBe('open');
    expect(second.venue.wallet('b')).toEqual(wallet);
    expect(second.venue.book(A)?.bids).toEqual([
      { price: '0.3', size: '10' },
      { price: '0.01', size: '5500' },
    ]);
  });

  it('kill -9 while a journal write is retried and later ones landed: none of them is applied at restart', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-venue-'));
    dirs.push(dir);
    const store = new FaultyStore(await SqliteStore.open(dir));
    const { venue, reports } = await openVenue({ store });
    const kept = order('b', 'buy', '0.2', '10');
    await venue.submit(kept);
    const a = order('b', 'buy', '0.4', '10');
    const b = order('b', 'buy', '0.3', '10');
    // a's entry never lands (the disk refuses it until the process ends); b's is written after it
    store.failWhen(
      (i) =>
        i.collection === 'venueJournal' && String((i.doc as { rows?: string } | undefined)?.rows).includes(a.orderId),
    );
    void venue.submit(a);
    await poll(
      'the journal write of a failed',
      async () => venue.health.ok,
      (ok) => !ok,
    );
    void venue.submit(b);
    await poll(
      'the journal write of b landed',
      async () => venue.health.pendingWrites,
      (n) => n === 1,
    );
    expect(venue.health).toMatchObject({ ok: false, pendingWrites: 1 }); // b's entry is written, a's is not
    const journal = await store.inner.collection<{ _id: string; rows: string }>('venueJournal');
    expect((await journal.find({})).some((d) => d.rows.includes(b.orderId))).toBe(true);
    // neither acknowledged: b waits for a
    expect(reports.filter((r) => r.orderId === a.orderId || r.orderId === b.orderId)).toEqual([]);
    // kill -9 now: b's entry holds b's reservation on top of a's, which was never written
    const again = await openVenue({ store: await SqliteStore.open(dir) });
    expect(again.venue.orderState(kept.orderId)?.status).toBe('open');
    expect(again.venue.orderState(a.orderId)).toBeNull();
    expect(again.venue.orderState(b.orderId)).toBeNull();
    expect(again.venue.wallet('b').pusd).toEqual({ balance: '1000', reserved: '2', available: '998' });
    expect(again.venue.book(A)?.bids).toEqual([{ price: '0.2', size: '10' }]);
  });

  it('a failing journal write: degraded, later operations wait in order, nothing lost; self-recovers', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-venue-'));
    dirs.push(dir);
    const store = new FaultyStore(await SqliteStore.open(dir));
    const { venue, reports } = await openVenue({ store });
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown) => unhandled.push(e);
    process.on('unhandledRejection', onUnhandled);
    try {
      expect(venue.health).toEqual({ ok: true, pendingWrites: 0, error: null });
      const journalDown = store.failWhen((i) => i.collection === 'venueJournal');
      const a = order('b', 'buy', '0.4', '10');
      const b = order('b', 'buy', '0.3', '10');
      const pa = venue.submit(a);
      const pb = venue.submit(b);
      await poll(
        'the journal write failed',
        async () => venue.health.ok,
        (ok) => !ok,
      );
      // not acknowledged: no report went out, the venue says why
      expect(reports.filter((r) => r.orderId === a.orderId || r.orderId === b.orderId)).toEqual([]);
      expect(venue.health).toMatchObject({
        ok: false,
        pendingWrites: 2,
        error: expect.stringMatching(/journal write failed: injected fault/),
      });
      journalDown.remove();
      await Promise.all([pa, pb]);
      expect(venue.health).toEqual({ ok: true, pendingWrites: 0, error: null });
      expect(reports.filter((r) => r.type === 'venue.accepted').map((r) => r.orderId)).toEqual([a.orderId, b.orderId]);
      // later operations are written again (the tail is not left rejected)
      await venue.cancel(a.orderId, { code: 'USER_CANCELED', message: 'canceled by user' });
      expect(reports.at(-1)).toMatchObject({ type: 'venue.canceled', orderId: a.orderId });
      // kill -9 now: the journal holds everything that was acknowledged
      const again = await openVenue({ dir: null, store: await SqliteStore.open(dir) });
      expect(again.venue.orderState(a.orderId)?.status).toBe('canceled');
      expect(again.venue.orderState(b.orderId)?.status).toBe('open');
      expect(again.venue.wallet('b').pusd).toEqual({ balance: '1000', reserved: '3', available: '997' });
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});
