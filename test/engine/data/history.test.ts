import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { TradeHistory } from '../../../engine/data/history.js';
import {
  operationHash,
  TAPE_TOKENS,
  TRADER_FILLS,
  TRADES,
  type CashMove,
  type RecordedBatch,
  type TapeTrade,
  type TraderFill,
} from '../../../engine/data/records.js';
import { SqliteStore } from '../../../engine/store/sqlite.js';
import type { Store } from '../../../engine/store/port.js';
import { FaultyStore, InjectedFault } from '../store/faulty-store.js';

const HASH = `0x${'ab'.repeat(32)}`;

function tape(id: string, blockTimestamp: number, logIndex: number): TapeTrade {
  return {
    _id: id,
    tradeId: id,
    blockTimestamp,
    logIndex,
    transactionHash: HASH,
    atMs: blockTimestamp * 1000,
    conditionId: '0xc',
    tokenId: 't1',
    outcome: 'Yes',
    side: 'BUY',
    price: '0.5',
    size: '10',
    notionalUsd: '5',
    feeUsd: '0',
    maker: '0x' + '1'.repeat(40),
    taker: '0x' + '2'.repeat(40),
    source: 'venue',
  };
}

function fill(t: TapeTrade, role: 'maker' | 'taker'): TraderFill {
  return {
    _id: `${t.tradeId}:${role}`,
    tradeId: t.tradeId,
    blockTimestamp: t.blockTimestamp,
    logIndex: t.logIndex,
    transactionHash: t.transactionHash,
    address: (role === 'maker' ? t.maker : t.taker)!,
    userId: null,
    orderId: null,
    role,
    atMs: t.atMs,
    conditionId: t.conditionId,
    tokenId: t.tokenId,
    outcome: t.outcome,
    side: role === 'taker' ? t.side : 'SELL',
    price: t.price,
    size: t.size,
    notionalUsd: t.notionalUsd,
    feeUsd: '0',
    source: 'venue',
  };
}

function cash(id: string, blockTimestamp: number, logIndex: number): CashMove {
  return {
    _id: id,
    address: '0x' + '1'.repeat(40),
    userId: 'u1',
    kind: 'credit',
    atMs: blockTimestamp * 1000,
    conditionId: null,
    pusdDelta: '1000',
    shares: [],
    blockTimestamp,
    logIndex,
    transactionHash: HASH,
    source: 'venue',
  };
}

describe('TradeHistory', () => {
  let store: Store | undefined;
  afterEach(async () => {
    await store?.close();
    store = undefined;
  });

  it('records idempotently by _id and tells listeners only the rows new to the store, after commit', async () => {
    store = await SqliteStore.open(null);
    const history = await TradeHistory.open(store);
    const heard: RecordedBatch[] = [];
    history.onRecorded((b) => heard.push(b));
    const t = tape('T1', 100, 0);
    const makerSide: RecordedBatch = { trades: [t], fills: [fill(t, 'maker')], cash: [cash('c1', 98, 0)] };
    const takerSide: RecordedBatch = { trades: [t], fills: [fill(t, 'taker')], cash: [] };

    const fresh = await store.transaction((tx) => history.record(tx, makerSide));
    expect(heard).toEqual([]); // nothing published before the caller says the transaction committed
    history.published(fresh);
    await history.recordAlone(takerSide);
    await history.recordAlone(makerSide); // delivered again: nothing new

    expect(heard).toEqual([makerSide, { trades: [], fills: [fill(t, 'taker')], cash: [] }]);
    expect(await history.trades.count({})).toBe(1);
    expect(await history.fills.count({})).toBe(2);
    expect(await history.cash.count({})).toBe(1);
  });

  it("keys a token with its first committed row: a rolled-back write's key stored by the next, kept", async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-tape-key-'));
    try {
      const faulty = new FaultyStore(await SqliteStore.open(dir));
      store = faulty;
      const history = await TradeHistory.open(store);
      const t = tape('T1', 100, 0);
      const other = { ...tape('T2', 100, 1), tokenId: 't2' };
      const rule = faulty.failNth(TRADER_FILLS, 'insertMissing', 1);
      await expect(history.recordAlone({ trades: [t], fills: [fill(t, 'maker')], cash: [] })).rejects.toBeInstanceOf(
        InjectedFault,
      );
      rule.remove();
      // the key assigned to the rolled-back write stays the token's; the next write stores it
      expect(history.tokenSeq('t1')).toBe(1);
      await history.recordAlone({ trades: [other, t], fills: [], cash: [] });
      await history.recordAlone({ trades: [tape('T3', 102, 0)], fills: [], cash: [] });
      expect([history.tokenSeq('t1'), history.tokenSeq('t2')]).toEqual([1, 2]);
      await store.close();

      store = await SqliteStore.open(dir);
      const again = await TradeHistory.open(store);
      expect([again.tokenSeq('t1'), again.tokenSeq('t2'), again.tokenSeq('t3')]).toEqual([1, 2, undefined]);
      expect(await (await store.collection(TAPE_TOKENS)).find({}, { sort: { tokenSeq: 1 } })).toEqual([
        { _id: 't1', tokenSeq: 1 },
        { _id: 't2', tokenSeq: 2 },
      ]);
      // a new token takes the next key, never one taken
      await again.recordAlone({ trades: [{ ...tape('T4', 104, 0), tokenId: 't3' }], fills: [], cash: [] });
      expect(again.tokenSeq('t3')).toBe(3);
      expect((await again.trades.find({ tokenSeq: 1 })).map((r) => r._id)).toEqual(['T1', 'T3']);
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });

  it('writes all of a batch or none of it (a fault between the writes)', async () => {
    const faulty = new FaultyStore(await SqliteStore.open(null));
    store = faulty;
    const history = await TradeHistory.open(store);
    const t = tape('T1', 100, 0);
    // the tape row is written, then the fills' insert (one write for both) fails
    const rule = faulty.failNth(TRADER_FILLS, 'insertMissing', 1);
    await expect(
      history.recordAlone({ trades: [t], fills: [fill(t, 'maker'), fill(t, 'taker')], cash: [] }),
    ).rejects.toBeInstanceOf(InjectedFault);
    expect(await history.trades.count({})).toBe(0);
    expect(await history.fills.count({})).toBe(0);
    rule.remove();
    await history.recordAlone({ trades: [t], fills: [fill(t, 'maker'), fill(t, 'taker')], cash: [] });
    expect(await (await store.collection(TRADES)).count({})).toBe(1);
    expect(await history.fills.count({})).toBe(2);
  });

  it('replays every record in chain order, tape row before its fills, in batches', async () => {
    store = await SqliteStore.open(null);
    const history = await TradeHistory.open(store);
    const t1 = tape('T1', 100, 1);
    const t2 = tape('T2', 100, 0);
    const t3 = tape('T3', 104, 0);
    await history.recordAlone({ trades: [t3], fills: [fill(t3, 'taker')], cash: [cash('c2', 102, 0)] });
    await history.recordAlone({ trades: [t1, t2], fills: [fill(t1, 'taker'), fill(t1, 'maker')], cash: [] });
    await history.recordAlone({ trades: [], fills: [], cash: [cash('c1', 98, 0)] });
    const order: string[] = [];
    const sizes: number[] = [];
    await history.replay((b) => {
      sizes.push(b.trades.length + b.fills.length + b.cash.length);
      for (const r of [...b.trades, ...b.fills, ...b.cash]) order.push(r._id);
    }, 2);
    // within one batch the order is by collection; across batches by chain position
    const all: string[] = [];
    await history.replay((b) => {
      const rows = [
        ...b.trades.map((r) => ({ r, k: 0 })),
        ...b.fills.map((r) => ({ r, k: 1 })),
        ...b.cash.map((r) => ({ r, k: 1 })),
      ];
      rows.sort((a, b) => a.r.blockTimestamp - b.r.blockTimestamp || a.r.logIndex - b.r.logIndex || a.k - b.k);
      for (const { r } of rows) all.push(r._id);
    }, 100);
    expect(all).toEqual(['c1', 'T2', 'T1', 'T1:maker', 'T1:taker', 'c2', 'T3', 'T3:taker']);
    expect(sizes.every((n) => n <= 2)).toBe(true);
    expect(order.sort()).toEqual([...all].sort());
  });

  it('replays from a block timestamp: the records at or after it, in chain order', async () => {
    store = await SqliteStore.open(null);
    const history = await TradeHistory.open(store);
    const [t1, t2, t3] = [tape('T1', 100, 0), tape('T2', 102, 0), tape('T3', 104, 0)];
    await history.recordAlone({ trades: [t1, t2, t3], fills: [fill(t1, 'taker'), fill(t3, 'taker')], cash: [] });
    await history.recordAlone({ trades: [], fills: [], cash: [cash('c1', 101, 0), cash('c2', 102, 1)] });
    const ids: string[] = [];
    await history.replay((b) => void ids.push(...[...b.trades, ...b.fills, ...b.cash].map((r) => r._id)), 1, {
      fromBlockTimestamp: 102,
    });
    expect(ids).toEqual(['T2', 'c2', 'T3', 'T3:taker']);
  });

  it('stores a capture print without what follows from its token and operation, and replays it whole', async () => {
    store = await SqliteStore.open(null);
    const history = await TradeHistory.open(store, (tokenId) =>
      tokenId === 't1' ? { conditionId: '0xc', outcome: 'Yes' } : undefined,
    );
    const print = (id: string, logIndex: number): TapeTrade => ({
      ...tape(id, 100, logIndex),
      transactionHash: operationHash(7),
      size: '3.5',
      price: '0.41',
      notionalUsd: '1.435',
      maker: null,
      taker: null,
      source: 'capture',
    });
    const compact = print('capture:1', 0);
    // a hash not the operation's is stored as it is
    const otherHash = { ...print('capture:2', 1), transactionHash: HASH };
    // what the lookup does not vouch for is stored whole: another token's market, an unknown token
    const otherMarket = { ...print('capture:3', 2), conditionId: '0xd' };
    const unknownToken = { ...print('capture:4', 3), tokenId: 't9' };
    const all = [compact, otherHash, otherMarket, unknownToken];
    const heard: RecordedBatch[] = [];
    history.onRecorded((b) => heard.push(b));
    await history.recordAlone({ trades: all, fills: [], cash: [] }, 7);
    expect(heard[0]!.trades).toEqual(all);

    const stored = await (await store.collection(TRADES)).find({}, { sort: { logIndex: 1 } });
    const kept = { atMs: 100_000, tokenId: 't1', side: 'BUY', price: '0.41', size: '3.5', source: 'capture' };
    // each row with its token's short key, assigned in the order tokens reached the tape
    expect(stored.slice(0, 2)).toEqual([
      { _id: 'capture:1', blockTimestamp: 100, logIndex: 0, op: 7, ...kept, tokenSeq: 1 },
      { _id: 'capture:2', blockTimestamp: 100, logIndex: 1, transactionHash: HASH, ...kept, tokenSeq: 1 },
    ]);
    expect(stored.slice(2)).toEqual([
      { ...otherMarket, tokenSeq: 1 },
      { ...unknownToken, tokenSeq: 2 },
    ]);
    expect([history.tokenSeq('t1'), history.tokenSeq('t9'), history.tokenSeq('t2')]).toEqual([1, 2, undefined]);
    const replayed: TapeTrade[] = [];
    await history.replay((b) => void replayed.push(...b.trades));
    expect(replayed).toEqual(all);
  });
});
