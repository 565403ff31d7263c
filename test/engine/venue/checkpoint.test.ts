/**
 * Venue checkpoints as many bounded documents: a state larger than MongoDB's
 * 16 MiB document limit checkpoints and restores exactly with every document under the bound; a
 * checkpoint cut short at any step leaves the previous one (and the journal) usable and its
 * leftovers are removed at recovery; a checkpoint in the older single-document form restores.
 * On the SQLite store, in memory and on disk.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { BSON } from 'mongodb';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../engine/clock.js';
import { dec, ZERO } from '../../../engine/decimal.js';
import { createLogger } from '../../../engine/logger.js';
import { SqliteStore } from '../../../engine/store/sqlite.js';
import type { Doc, Store } from '../../../engine/store/port.js';
import { CHECKPOINT_CHUNK_BYTES, chunkRows, VenueJournal, type StateRows } from '../../../engine/venue/journal.js';
import type { Ledger, WalletRow } from '../../../engine/venue/ledger.js';
import type { Catalogue } from '../../../engine/venue/markets.js';
import { newTx, type MatchingEngine, type OrderRow } from '../../../engine/venue/matching.js';
import type { VenueOrder } from '../../../engine/venue/port.js';
import { SimVenue } from '../../../engine/venue/sim-venue.js';
import { FaultyStore, InjectedFault, type OpInfo } from '../store/faulty-store.js';

/** Rows as a checkpoint holds them: whole wallet rows. */
type CheckpointRows = StateRows & { wallets: WalletRow[] };

const MiB = 1024 * 1024;
const log = createLogger('silent');

/** Four tokens (two markets) with ids as long as real ones (77 digits). */
const TOKENS = [1, 2, 3, 4].map((i) => `${'7'.repeat(76)}${i}`);

function catalogue(): Catalogue {
  const tick = dec('0.01');
  const min = dec(5);
  const market = (yes: string, no: string, c: string) => ({
    conditionId: c,
    question: `${c}?`,
    slug: c,
    endDateIso: null,
    tickSize: tick,
    minSize: min,
    negRisk: false,
    tokens: [
      { tokenId: yes, outcome: 'Yes', price: dec('0.5') },
      { tokenId: no, outcome: 'No', price: dec('0.5') },
    ],
  });
  const info = (tokenId: string, outcome: string, c: string, complementTokenId: string) =>
    [
      tokenId,
      {
        tokenId,
        outcome,
        conditionId: c,
        question: `${c}?`,
        referencePrice: dec('0.5'),
        tickSize: tick,
        minSize: min,
        complementTokenId,
      },
    ] as const;
  const [a, b, c, d] = TOKENS as [string, string, string, string];
  return {
    markets: [market(a, b, '0xc1'), market(c, d, '0xc2')],
    tokens: new Map([
      info(a, 'Yes', '0xc1', b),
      info(b, 'No', '0xc1', a),
      info(c, 'Yes', '0xc2', d),
      info(d, 'No', '0xc2', c),
    ]),
    replay: {
      tokenId: a,
      points: [
        { tSec: 0, price: dec('0.5') },
        { tSec: 600, price: dec('0.6') },
      ],
    },
  };
}

/**
 * The parts of the venue a test drives directly: building tens of thousands of orders through the
 * matching engine without journaling each, running a checkpoint when the test chooses, stopping
 * the liquidity timers. What a test reads goes through the venue's public audit reads ({@link stateOf}).
 */
interface Internals {
  ledger: Ledger;
  matching: MatchingEngine;
  journal: VenueJournal;
  liquidity: { stop(): void };
}
const inside = (v: SimVenue) => v as unknown as Internals;

function openVenue(store: Store): Promise<SimVenue> {
  return SimVenue.open({
    catalogue: catalogue(),
    store,
    clock: new ManualClock(1_000),
    log,
    initialPusd: '1000',
    liquidityLevels: 0,
    refillMs: 60_000,
    replay: false,
    replaySpeed: 1,
  });
}

const userId = (u: number) => `0x${u.toString(16).padStart(40, '0')}`;
const orderId = (u: number, k: number) =>
  `${u.toString(16).padStart(8, '0')}-0000-4000-8000-${k.toString(16).padStart(12, '0')}`;
const price = (cents: number) => (cents / 100).toFixed(2);

function limit(
  u: number,
  k: number,
  tokenId: string,
  side: 'buy' | 'sell',
  px: string,
  size: number,
  extra: Partial<VenueOrder> = {},
): VenueOrder {
  return {
    orderId: orderId(u, k),
    userId: userId(u),
    tokenId,
    side,
    kind: 'limit',
    price: px,
    size: String(size),
    quoteAmount: null,
    timeInForce: 'GTC',
    postOnly: false,
    ...extra,
  };
}

/**
 * Builds user state straight through the matching engine (no journal: that is what makes tens of
 * thousands of orders take a second): per user a position in one token, three resting buys
 * (0.01–0.45), two resting sells (0.55–0.99), and every 5th user an IOC buy that takes from the
 * asks (fills, partial fills, positions with cost).
 */
function buildState(venue: SimVenue, users: number, from = 0): void {
  const { ledger, matching } = inside(venue);
  const place = (o: VenueOrder) => matching.place(newTx(0, 1_000), o);
  for (let u = from; u < from + users; u++) {
    const own = TOKENS[u % TOKENS.length]!;
    ledger.walletOf(userId(u)).positions.set(own, { shares: dec(200), reserved: ZERO, cost: dec(97.5) });
    for (let k = 0; k < 3; k++)
      place(
        limit(u, k, TOKENS[(u + k) % TOKENS.length]!, 'buy', price(1 + ((u * 7 + k * 13) % 45)), 5 + ((u + k) % 20)),
      );
    for (let k = 3; k < 5; k++)
      place(
        limit(
          u,
          k,
          own,
          'sell',
          price(55 + ((u * 3 + k * 11) % 45)),
          5 + ((u * k) % 30),
          k === 4 ? { timeInForce: 'GTD' } : {},
        ),
      );
    if (u % 5 === 0) place(limit(u, 5, TOKENS[(u + 1) % TOKENS.length]!, 'buy', '0.99', 40, { timeInForce: 'IOC' }));
  }
}

/** Everything a restart must restore: wallet and order rows, time priority, and every resting order in book order. */
function stateOf(venue: SimVenue) {
  return {
    wallets: venue.walletRows(),
    orders: venue.orderRows(),
    orderSeq: venue.orderSeq,
    books: venue
      .restingOrders()
      .map((r) => [r.tokenId, r.side, r.price.toString(), r.orderId, r.userId, r.remaining.toString(), r.seq]),
  };
}

/** Compares two states row by row (a failure names the first differing row, not a 20 MiB diff). */
function expectSameState(actual: ReturnType<typeof stateOf>, expected: ReturnType<typeof stateOf>): void {
  expect(actual.orderSeq).toBe(expected.orderSeq);
  for (const key of ['wallets', 'orders', 'books'] as const) {
    const a = actual[key] as unknown[];
    const e = expected[key] as unknown[];
    expect(a.length, key).toBe(e.length);
    const i = a.findIndex((x, n) => JSON.stringify(x) !== JSON.stringify(e[n]));
    if (i >= 0) expect(a[i], `${key}[${i}]`).toEqual(e[i]);
  }
}

/** Measures every document written (BSON size, as MongoDB counts it; and its JSON text, as SQLite stores it). */
function measureWrites(store: FaultyStore) {
  const m = { writes: 0, maxBson: 0, maxBsonId: '', maxLine: 0, chunkWrites: 0 };
  store.failWhen((i: OpInfo) => {
    const doc = i.doc ?? i.set;
    if (!doc) return false; // deleteMany
    m.writes++;
    const bson = BSON.calculateObjectSize(doc);
    if (bson > m.maxBson) Object.assign(m, { maxBson: bson, maxBsonId: String((doc as Doc)._id ?? i.filter?._id) });
    m.maxLine = Math.max(m.maxLine, JSON.stringify(doc).length);
    if (String((doc as Doc)._id).startsWith('cp:')) m.chunkWrites++;
    return false; // an observer: never fails anything
  });
  return m;
}

/** The SQLite store variants: `reopen` simulates a restart (on disk: a fresh store on the folder, like kill -9). */
const variants = [
  { name: 'in memory', disk: false },
  { name: 'on disk', disk: true },
];

describe('venue checkpoints: many bounded documents', () => {
  const cleanup: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const c of cleanup.splice(0).reverse()) await c();
  });

  async function storeFor(disk: boolean): Promise<{ inner: SqliteStore; reopen: () => Promise<SqliteStore> }> {
    if (!disk) {
      const inner = await SqliteStore.open(null);
      return { inner, reopen: async () => inner };
    }
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-ckpt-'));
    cleanup.push(() => fs.rm(dir, { recursive: true, force: true }));
    const inner = await SqliteStore.open(dir);
    return {
      inner,
      reopen: async () => {
        const s = await SqliteStore.open(dir);
        cleanup.push(() => s.close());
        return s;
      },
    };
  }

  async function stateDocs(store: Store) {
    const c = await store.collection<Doc & { generation?: number; chunks?: number; seq?: number; rows?: unknown }>(
      'venueState',
    );
    return c.find({}, { sort: { _id: 1 } });
  }

  /** The store holds the pointer, exactly its chunks, and no journal entry the checkpoint covers. */
  async function expectClean(store: Store) {
    const docs = await stateDocs(store);
    const pointer = docs.find((d) => d._id === 'checkpoint')!;
    expect(pointer).toMatchObject({ generation: expect.any(Number), chunks: expect.any(Number) });
    expect(pointer.rows).toBeUndefined();
    const chunks = docs.filter((d) => d._id !== 'checkpoint');
    expect(chunks.map((d) => d._id).sort()).toEqual(
      Array.from({ length: pointer.chunks! }, (_, n) => `cp:${pointer.generation}:${n}`).sort(),
    );
    const journal = await store.collection('venueJournal');
    expect(await journal.count({ seq: { $lte: pointer.seq } })).toBe(0);
    return pointer;
  }

  for (const v of variants) {
    it(`a state over 16 MiB checkpoints and restores exactly, in chunks under the limit (${v.name})`, async () => {
      const t0 = Date.now();
      const { inner, reopen } = await storeFor(v.disk);
      const store = new FaultyStore(inner, { keepOpen: true });
      const m = measureWrites(store);
      const first = await openVenue(store);
      buildState(first, 10_000);
      // a few journaled operations on top: the checkpoint covers them and removes their entries
      for (let k = 0; k < 20; k++) await first.submit(limit(20_000 + k, 0, TOKENS[k % 4]!, 'buy', '0.02', 5));
      await first.cancel(orderId(20_000, 0), { code: 'USER_CANCELED', message: 'canceled by user' });
      const built = Date.now();
      await first.close(); // writes the checkpoint
      const written = Date.now();
      const expected = stateOf(first);
      const stateBytes = Buffer.byteLength(
        JSON.stringify({ wallets: expected.wallets, orders: expected.orders } satisfies StateRows),
      );
      expect(stateBytes).toBeGreaterThan(16 * MiB);
      expect(m.maxBson).toBeLessThanOrEqual(CHECKPOINT_CHUNK_BYTES);
      expect(m.chunkWrites).toBeGreaterThanOrEqual(17);
      if (v.disk) await inner.close();
      const again = await reopen();
      const t1 = Date.now();
      const second = await openVenue(again);
      const restored = Date.now();
      expectSameState(stateOf(second), expected);
      const pointer = await expectClean(again);
      expect(pointer.chunks).toBe(m.chunkWrites);
      inside(second).liquidity.stop();
      console.info(
        `[checkpoint ${v.name}] state ${(stateBytes / MiB).toFixed(1)} MiB (${expected.wallets.length} ` +
          `wallets, ${expected.orders.length} orders) in ${pointer.chunks} chunks; ` +
          (`largest document ${(m.maxBson / MiB).toFixed(3)} MiB BSON (${m.maxBsonId}), largest JSON text ` +
            `${(m.maxLine / MiB).toFixed(3)} MiB; `) +
          `build ${built - t0} ms, checkpoint ${written - built} ms, restore ${restored - t1} ms`,
      );
    });
  }

  const crashPoints: Array<{
    name: string;
    fault: (s: FaultyStore) => void;
    leftovers: (docs: Array<Doc & { generation?: number }>, journalLeft: number) => void;
  }> = [
    {
      name: 'after 2 chunks of the new generation',
      fault: (s) => s.failNth('venueState', 'replaceOne', 3),
      leftovers: (docs) => expect(docs.filter((d) => d.generation === 2 && d._id !== 'checkpoint')).toHaveLength(2),
    },
    {
      name: 'at the pointer switch (not written)',
      fault: (s) => s.failWhen((i) => i.collection === 'venueState' && i.doc?._id === 'checkpoint'),
      leftovers: (docs) => {
        expect(docs.find((d) => d._id === 'checkpoint')?.generation).toBe(1);
        expect(docs.filter((d) => d.generation === 2).length).toBeGreaterThanOrEqual(3);
      },
    },
    {
      name: 'at the pointer switch (written, reported failed)',
      fault: (s) => s.failWhen((i) => i.collection === 'venueState' && i.doc?._id === 'checkpoint', { when: 'after' }),
      leftovers: (docs, journalLeft) => {
        expect(docs.find((d) => d._id === 'checkpoint')?.generation).toBe(2);
        expect(docs.filter((d) => d.generation === 1).length).toBeGreaterThanOrEqual(3);
        expect(journalLeft).toBeGreaterThan(500);
      },
    },
    {
      name: 'after the switch, before the previous chunks are removed',
      fault: (s) => s.failNth('venueState', 'deleteMany', 1),
      leftovers: (docs) => expect(docs.filter((d) => d.generation === 1).length).toBeGreaterThanOrEqual(3),
    },
    {
      name: 'while the journal it covers is removed (second slice)',
      fault: (s) => s.failNth('venueJournal', 'deleteMany', 2),
      leftovers: (docs, journalLeft) => {
        expect(docs.filter((d) => d.generation === 1)).toEqual([]);
        expect(journalLeft).toBeGreaterThan(0);
      },
    },
  ];

  for (const v of variants) {
    for (const cp of crashPoints) {
      it(`a checkpoint cut short ${cp.name}: restart restores exactly, removes the leftovers (${v.name})`, async () => {
        const { inner, reopen } = await storeFor(v.disk);
        const store = new FaultyStore(inner, { keepOpen: true });
        const first = await openVenue(store);
        buildState(first, 2_000); // ~3.5 MiB: 4 chunks
        await inside(first).journal.checkpoint(); // generation 1
        expect((await stateDocs(inner)).filter((d) => d.generation === 1).length).toBeGreaterThanOrEqual(4);
        // > 500 journaled operations after it (two deletion slices): new orders, fills, cancels
        for (let k = 0; k < 600; k++) {
          const seller = { userId: userId(k % 2_000) }; // sells the token it holds; the buys take them
          await first.submit(
            k % 2
              ? limit(30_000 + k, 0, TOKENS[k % 4]!, 'buy', '0.60', 5)
              : limit(30_000 + k, 0, TOKENS[k % 4]!, 'sell', '0.50', 5, seller),
          );
        }
        for (let u = 0; u < 20; u++)
          await first.cancel(orderId(u, 1), { code: 'USER_CANCELED', message: 'canceled by user' });
        cp.fault(store);
        await expect(inside(first).journal.checkpoint()).rejects.toThrow(InjectedFault);
        const expected = stateOf(first);
        inside(first).liquidity.stop();
        // the process dies here: what did the checkpoint leave behind?
        const journal = await inner.collection<Doc & { seq: number }>('venueJournal');
        cp.leftovers(await stateDocs(inner), await journal.count({}));
        const again = await reopen();
        const second = await openVenue(again);
        expectSameState(stateOf(second), expected);
        await expectClean(again);
        // and it keeps working: one more operation and another restart
        await second.submit(limit(40_000, 0, TOKENS[0]!, 'buy', '0.03', 5));
        const next = stateOf(second);
        await second.close();
        const third = await openVenue(again);
        expectSameState(stateOf(third), next);
        await expectClean(again);
        inside(third).liquidity.stop();
      });
    }
  }

  for (const v of variants) {
    for (const legacy of ['rows as one JSON string', 'rows as fields'] as const) {
      it(`an older one-document checkpoint (${legacy}) restores; the next is chunked (${v.name})`, async () => {
        const { inner, reopen } = await storeFor(v.disk);
        const first = await openVenue(inner);
        buildState(first, 300);
        for (let k = 0; k < 10; k++) await first.submit(limit(50_000 + k, 0, TOKENS[k % 4]!, 'buy', '0.04', 5));
        // the single-document form of a checkpoint: one document, then the journal removed
        const j = inside(first).journal;
        const wallets = first.walletRows();
        const orders = first.orderRows();
        const state = await inner.collection<Doc & Record<string, unknown>>('venueState');
        const rows = legacy === 'rows as fields' ? { wallets, orders } : { rows: JSON.stringify({ wallets, orders }) };
        await state.replaceOne({ _id: 'checkpoint', seq: j.lastSeq, orderSeq: first.orderSeq, ...rows });
        await (await inner.collection('venueJournal')).deleteMany({});
        // then more journaled operations, and the process dies
        for (let k = 0; k < 10; k++)
          await first.submit(limit(60_000 + k, 0, TOKENS[k % 4]!, 'sell', '0.04', 5, { userId: userId(k) }));
        await first.cancel(orderId(50_000, 0), { code: 'USER_CANCELED', message: 'canceled by user' });
        const expected = stateOf(first);
        inside(first).liquidity.stop();
        const again = await reopen();
        const second = await openVenue(again); // restores the old document, replays, then checkpoints in the new format
        expectSameState(stateOf(second), expected);
        const pointer = await expectClean(again);
        // as many chunks as the rows need (fills carry their trade: a few hundred bytes each)
        expect(pointer).toMatchObject({
          generation: 1,
          chunks: expect.any(Number),
          walletCount: expected.wallets.length,
          orderCount: expected.orders.length,
        });
        await second.close();
        const third = await openVenue(again);
        expectSameState(stateOf(third), expected);
        inside(third).liquidity.stop();
      });
    }
  }
});

describe('VenueJournal checkpoint chunks', () => {
  const wallet = (i: number): WalletRow => ({
    userId: `u${i}`,
    pusd: `${1000 - i}`,
    reserved: '1.5',
    positions: [[TOKENS[0]!, '10', '0', '5.25']],
  });
  const order = (i: number, fills = 0): OrderRow => ({
    order: limit(i, 0, TOKENS[1]!, 'buy', '0.25', 10),
    status: fills ? 'filled' : 'open',
    remaining: fills ? '0' : '10',
    reservedUsd: '2.5',
    reservedShares: '0',
    fills: Array.from({ length: fills }, (_, n) => ({
      type: 'venue.filled',
      orderId: orderId(i, 0),
      tradeId: `T${i}-${n}`,
      price: '0.25',
      size: '0.01',
      liquidity: 'maker',
      completes: false,
      atMs: 5,
    })),
    final: null,
    updatedAtMs: 7,
    seq: i,
  });

  it('chunkRows: chunks of at most the bound, in order; a row larger than the bound alone in its chunk', async () => {
    const rows: CheckpointRows = {
      wallets: Array.from({ length: 50 }, (_, i) => wallet(i)),
      orders: [...Array.from({ length: 50 }, (_, i) => order(i)), order(99, 60), order(100)],
    };
    const big = Buffer.byteLength(JSON.stringify(order(99, 60)));
    expect(big).toBeGreaterThan(4000);
    const chunks = await chunkRows(rows, 4000);
    const parsed = chunks.map((c) => JSON.parse(c) as StateRows);
    expect({ wallets: parsed.flatMap((p) => p.wallets), orders: parsed.flatMap((p) => p.orders) }).toEqual(rows);
    for (const [n, c] of chunks.entries()) {
      const alone =
        parsed[n]!.orders.length === 1 && parsed[n]!.wallets.length === 0 && parsed[n]!.orders[0]!.seq === 99;
      expect(Buffer.byteLength(c)).toBeLessThanOrEqual(alone ? big + 100 : 4000);
    }
    expect(parsed.some((p) => p.orders.length === 1 && p.orders[0]!.seq === 99)).toBe(true);
    expect(await chunkRows({ wallets: [], orders: [] }, 4000)).toEqual([]);
  });

  it('recover: follows the pointer chunk by chunk, removes other generations, refuses a missing chunk', async () => {
    const store = await SqliteStore.open(null);
    const rows: CheckpointRows = {
      wallets: Array.from({ length: 40 }, (_, i) => wallet(i)),
      orders: Array.from({ length: 40 }, (_, i) => order(i)),
    };
    const snapshot = () => ({ orderSeq: 40, ...structuredClone(rows) });
    const j1 = await VenueJournal.open({ store, log, snapshot, checkpointChunkBytes: 3000 });
    await j1.recover(() => undefined);
    await j1.checkpoint();
    await j1.checkpoint(); // generation 2 replaces 1
    const state = await store.collection<Doc & { generation?: number; chunks?: number }>('venueState');
    const pointer = (await state.findOne({ _id: 'checkpoint' }))!;
    expect(pointer).toMatchObject({ generation: 2, seq: 0, orderSeq: 40, walletCount: 40, orderCount: 40 });
    expect(pointer.chunks).toBeGreaterThan(5);
    expect(await state.count({ generation: 1 })).toBe(0);
    // leftovers: a generation cut short (3) and an earlier one never removed (1)
    await state.replaceOne({ _id: 'cp:3:0', generation: 3, n: 0, rows: '{"wallets":[],"orders":[]}' } as Doc);
    await state.replaceOne({ _id: 'cp:1:7', generation: 1, n: 7, rows: '{"wallets":[],"orders":[]}' } as Doc);
    const seen: StateRows = { wallets: [], orders: [] };
    const j2 = await VenueJournal.open({ store, log, snapshot });
    expect(await j2.recover((r) => (seen.wallets.push(...r.wallets), seen.orders.push(...r.orders)))).toEqual({
      orderSeq: 40,
      replayed: 0,
    });
    expect(seen).toEqual(rows);
    expect(await state.count({})).toBe(1 + pointer.chunks!);
    expect(await state.count({ generation: { $ne: 2 } })).toBe(0);
    // a damaged store is not restored partially
    await state.deleteMany({ _id: 'cp:2:1' });
    const j3 = await VenueJournal.open({ store, log, snapshot });
    await expect(j3.recover(() => undefined)).rejects.toThrow(/generation 2: chunk 1 of \d+ is missing/);
    await store.close();
  });
});

describe('journal entries: a wallet row lists the positions its operation changed', () => {
  for (const opened of ['read', 'refused order'] as const) {
    it(`a wallet opened with no entry (${opened}), a checkpoint that does not land, a change: restored`, async () => {
      const inner = await SqliteStore.open(null);
      const store = new FaultyStore(inner, { keepOpen: true });
      const first = await openVenue(store);
      inside(first).liquidity.stop();
      await first.submit(limit(1, 0, TOKENS[0]!, 'buy', '0.40', 10));
      await inside(first).journal.checkpoint();
      const b = userId(2);
      if (opened === 'read') first.wallet(b);
      else await first.submit(limit(2, 0, TOKENS[0]!, 'buy', '0.405', 10)); // off tick: refused, not journaled
      // the next checkpoint takes its rows, then its pointer is not written (as a kill -9 before it)
      const rule = store.failWhen((i) => i.collection === 'venueState' && i.doc?._id === 'checkpoint');
      await expect(inside(first).journal.checkpoint()).rejects.toThrow(InjectedFault);
      rule.remove();
      await first.submit(limit(2, 1, TOKENS[0]!, 'buy', '0.30', 10));
      const expected = stateOf(first);
      const second = await openVenue(store);
      inside(second).liquidity.stop();
      expectSameState(stateOf(second), expected);
    });
  }

  it('a wallet first journaled whole, then its changes only; checkpoint and journal restore it exactly', async () => {
    const store = await SqliteStore.open(null);
    const first = await openVenue(store);
    inside(first).liquidity.stop();
    // the seller holds all four tokens (checkpointed); it sells each, the buyer takes two
    const seller = userId(1);
    for (const t of TOKENS)
      inside(first)
        .ledger.walletOf(seller)
        .positions.set(t, { shares: dec(100), reserved: ZERO, cost: dec(40) });
    await inside(first).journal.checkpoint();
    for (const [k, t] of TOKENS.entries()) await first.submit(limit(1, k, t, 'sell', '0.60', 10));
    await first.submit(limit(2, 0, TOKENS[0]!, 'buy', '0.60', 10, { timeInForce: 'IOC' }));
    await first.submit(limit(2, 1, TOKENS[2]!, 'buy', '0.60', 4, { timeInForce: 'IOC' }));
    const journal = await store.collection<Doc & { seq: number; rows: string }>('venueJournal');
    const entries = (await journal.find({}, { sort: { seq: 1 } })).map((e) => JSON.parse(e.rows) as StateRows);
    const rowsOf = (u: string) => entries.flatMap((e) => e.wallets.filter((w) => w.userId === u));
    const shape = (w: StateRows['wallets'][number]) =>
      'changedPositions' in w ? w.changedPositions.map((p) => p[0]) : { whole: w.positions.map((p) => p[0]) };
    // the seller: its first journal row is whole (a checkpoint is no base: it may not land); then each
    // sell reserves one token's shares, and each trade changes that token's position
    expect(rowsOf(seller).map(shape)).toEqual([
      { whole: TOKENS },
      [TOKENS[1]],
      [TOKENS[2]],
      [TOKENS[3]],
      [TOKENS[0]],
      [TOKENS[2]],
    ]);
    // the buyer: its first row is whole (it has no earlier one), the next lists the position it opened
    expect(rowsOf(userId(2)).map(shape)).toEqual([{ whole: [TOKENS[0]] }, [TOKENS[2]]]);
    const expected = stateOf(first);
    expect(expected.wallets.find((w) => w.userId === seller)?.positions).toHaveLength(4);
    const second = await openVenue(store);
    inside(second).liquidity.stop();
    expectSameState(stateOf(second), expected);
    // after the restart a wallet's first journal row is whole again, its changes after it
    await second.submit(limit(2, 2, TOKENS[0]!, 'sell', '0.70', 5));
    await second.submit(limit(2, 3, TOKENS[2]!, 'sell', '0.70', 2));
    const after = (await journal.find({}, { sort: { seq: -1 }, limit: 2 })).map((e) => JSON.parse(e.rows) as StateRows);
    expect(after.reverse().flatMap((e) => e.wallets.map(shape))).toEqual([
      { whole: [TOKENS[0], TOKENS[2]] },
      [TOKENS[2]],
    ]);
    const next = stateOf(second);
    const third = await openVenue(store);
    inside(third).liquidity.stop();
    expectSameState(stateOf(third), next);
  });
});
