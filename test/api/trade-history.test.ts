import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  LIQUIDITY_PROVIDER_ADDRESS,
  TRADER_FILLS,
  TRADES,
  type TapeTrade,
  type TraderFill,
} from '../../engine/data/records.js';
import type { RecordedBatch } from '../../engine/data/records.js';
import { SqliteStore } from '../../engine/store/sqlite.js';
import { FaultyStore } from '../engine/store/faulty-store.js';
import { startTestService, type TestService } from '../helpers.js';
import { px, Trading } from './trading-kit.js';

/**
 * The trade history through the real path: fills made by REST orders land, in the same store
 * transaction as the order step that records them, in `trades` (one row per trade) and
 * `traderFills` (one row per party, the liquidity provider's too), with one chain position.
 */
describe('trade history: fills made through REST are recorded with their chain position', () => {
  let svc: TestService;
  const tr = new Trading(() => svc);
  const address: Record<string, string> = {};

  beforeAll(async () => {
    svc = await startTestService();
    await tr.init(['alice', 'bob']);
    for (const u of ['alice', 'bob']) {
      const r = await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: u } });
      address[u] = r.body.safe_address.toLowerCase();
    }
  });
  afterAll(async () => {
    await svc?.close();
  });

  const tape = async () => (await svc.services.store.collection<TapeTrade>(TRADES)).find({});
  const fillsOf = async (tradeId: string) =>
    (await svc.services.store.collection<TraderFill>(TRADER_FILLS)).find({ tradeId }, { sort: { _id: 1 } });

  it('a trade between two users: one tape row, both parties fills, the same position on both orders', async () => {
    const f = await tr.freshToken();
    await tr.buyShares('bob', f.token, 20);
    const price = px(f.bid + 0.01); // inside the spread: only bob's sell meets it
    const rest = await tr.post('alice', { symbol: f.token, side: 'buy', type: 'LIMIT', price, size: '10' });
    expect(rest).toMatchObject({ status: 200, body: { status: 'LIVE' } });
    const take = await tr.post('bob', {
      symbol: f.token,
      side: 'sell',
      type: 'LIMIT',
      price,
      size: '6',
      time_in_force: 'IOC',
    });
    expect(take).toMatchObject({ status: 200, body: { status: 'FILLED', filled_size: '6' } });
    const takerFill = take.body.fills[0];
    expect(take.body.fills).toEqual([
      {
        trade_id: expect.stringMatching(/-t$/),
        price,
        size: '6',
        liquidity: 'taker',
        fee_usd: '0',
        traded_at: expect.any(Number),
        block_timestamp: expect.any(Number),
        log_index: expect.any(Number),
        transaction_hash: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      },
    ]);
    expect(takerFill.block_timestamp % 2).toBe(0);
    const maker = await tr.orderById('alice', rest.body.order_id);
    expect(maker).toMatchObject({ status: 200, body: { status: 'PARTIALLY_FILLED', filled_size: '6' } });
    expect(maker.body.fills).toEqual([
      {
        ...takerFill,
        trade_id: takerFill.trade_id.replace(/-t$/, '-m'),
        liquidity: 'maker',
      },
    ]);

    const tradeId = takerFill.trade_id.replace(/-t$/, '');
    const position = {
      blockTimestamp: takerFill.block_timestamp,
      logIndex: takerFill.log_index,
      transactionHash: takerFill.transaction_hash,
    };
    expect((await tape()).filter((t) => t._id === tradeId)).toEqual([
      {
        _id: tradeId,
        tradeId,
        ...position,
        atMs: takerFill.traded_at,
        conditionId: expect.stringMatching(/^0x/),
        tokenId: f.token,
        outcome: expect.any(String),
        side: 'SELL',
        price,
        size: '6',
        notionalUsd: String(Number((Number(price) * 6).toFixed(6))),
        feeUsd: '0',
        maker: address.alice,
        taker: address.bob,
        source: 'venue',
      },
    ]);
    expect(await fillsOf(tradeId)).toMatchObject([
      { _id: `${tradeId}:maker`, ...position, address: address.alice, role: 'maker', side: 'BUY', size: '6' },
      { _id: `${tradeId}:taker`, ...position, address: address.bob, role: 'taker', side: 'SELL', size: '6' },
    ]);
    const orderIds = (await fillsOf(tradeId)).map((x) => x.orderId);
    expect(orderIds).toEqual([rest.body.order_id, take.body.order_id]);
  });

  it("a trade with the liquidity provider: the user's fill, the provider's fill and the tape row", async () => {
    const f = await tr.freshToken();
    const buy = await tr.post('alice', {
      symbol: f.token,
      side: 'buy',
      type: 'LIMIT',
      price: px(f.ask),
      size: '5',
      time_in_force: 'IOC',
    });
    expect(buy).toMatchObject({ status: 200, body: { status: 'FILLED' } });
    const tradeId = buy.body.fills[0].trade_id.replace(/-t$/, '');
    const rows = await fillsOf(tradeId);
    expect(rows).toMatchObject([
      { role: 'maker', address: LIQUIDITY_PROVIDER_ADDRESS, userId: null, orderId: null, side: 'SELL', size: '5' },
      { role: 'taker', address: address.alice, orderId: buy.body.order_id, side: 'BUY', price: px(f.ask) },
    ]);
    expect(rows[0]!.logIndex).toBe(rows[1]!.logIndex);
    expect((await tape()).find((t) => t._id === tradeId)).toMatchObject({
      maker: LIQUIDITY_PROVIDER_ADDRESS,
      taker: address.alice,
      side: 'BUY',
      blockTimestamp: rows[0]!.blockTimestamp,
      logIndex: rows[0]!.logIndex,
    });
  });
});

describe('trade history: a fill, its order step and its records commit together', () => {
  let svc: TestService;
  afterAll(async () => {
    await svc?.close();
  });

  it("a fault between the history's writes: the order step rolls back whole, is redelivered, lands once", async () => {
    const store = new FaultyStore(await SqliteStore.open(null));
    svc = await startTestService({ store, env: { SIM_MAKER_REFILL_MS: '3600000' } });
    const tr = await new Trading(() => svc).init(['alice']);
    const heard: RecordedBatch[] = [];
    svc.services.history.onRecorded((b) => heard.push(b));
    const f = await tr.freshToken();
    // the tape row is written, then the first fill's insert fails: nothing of the step may stay
    const fault = store.failNth(TRADER_FILLS, 'insertOne', 1, { times: 1 });
    const buy = await tr.post('alice', {
      symbol: f.token,
      side: 'buy',
      type: 'LIMIT',
      price: px(f.ask),
      size: '5',
      time_in_force: 'IOC',
    });
    expect(fault.fired).toBe(1);
    expect(buy).toMatchObject({ status: 200, body: { status: 'FILLED', filled_size: '5' } });
    const tradeId = buy.body.fills[0].trade_id.replace(/-t$/, '');
    expect(await (await store.collection('actors')).find({ _id: buy.body.order_id })).toMatchObject([
      { revision: 2, status: 'FILLED' },
    ]);
    expect(await (await store.collection(TRADES)).count({ _id: tradeId })).toBe(1);
    expect(await (await store.collection(TRADER_FILLS)).count({ tradeId })).toBe(2);
    // the failed attempt told nobody: the committed rows were handed on once
    expect(heard.flatMap((b) => b.trades.map((t) => t._id))).toEqual([tradeId]);
    expect(heard.flatMap((b) => b.fills.map((x) => x._id)).sort()).toEqual([`${tradeId}:maker`, `${tradeId}:taker`]);
  });
});
