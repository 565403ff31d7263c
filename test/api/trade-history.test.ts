import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CASH_MOVES,
  LIQUIDITY_PROVIDER_ADDRESS,
  TAPE_TOKENS,
  type CashMove,
  TRADER_FILLS,
  TRADES,
  type TapeTrade,
  type TraderFill,
} from '../../engine/data/records.js';
import type { RecordedBatch } from '../../engine/data/records.js';
import { dec } from '../../engine/decimal.js';
import { SqliteStore } from '../../engine/store/sqlite.js';
import type { SimVenue } from '../../engine/venue/sim-venue.js';
import type { VenueReport } from '../../engine/venue/port.js';
import { FaultyStore } from '../engine/store/faulty-store.js';
import { startTestService, testCatalogue, type TestService } from '../helpers.js';
import { poll, px, Trading, type Fresh } from './trading-kit.js';

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
    expect(rest).toMatchObject({ status: 200, body: { status: 'OPEN' } });
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
        // its token's short key (the tape's per-token index), never in an answer
        tokenSeq: svc.services.history.tokenSeq(f.token),
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

  it('a fill the venue reports after the cancel: recorded on the CANCELED order and in the history', async () => {
    const f = await tr.freshToken();
    const price = px(f.bid - 0.05);
    const rest = await tr.post('alice', { symbol: f.token, side: 'buy', type: 'LIMIT', price, size: '10' });
    expect(rest).toMatchObject({ status: 200, body: { status: 'OPEN' } });
    const canceled = await svc.call('DELETE', `/v2/trade/orders/${rest.body.order_id}`, { headers: tr.as('alice') });
    expect(canceled).toMatchObject({ status: 200, body: { status: 'CANCELED', filled_size: '0' } });
    // a real venue can report a trade that matched before the cancel took effect: the port's report
    const aliceId = (await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'alice' } })).body
      .platform_user_id;
    const report = (r: VenueReport) => {
      const venue = svc.services.venue as unknown as { reportListeners: ((r: VenueReport) => void)[] };
      for (const l of venue.reportListeners) l(r);
    };
    const late: VenueReport = {
      type: 'venue.filled',
      orderId: rest.body.order_id,
      tradeId: 'Tlate-1-m',
      price,
      size: '3',
      liquidity: 'maker',
      completes: false,
      atMs: Date.now(),
      trade: {
        id: 'Tlate-1',
        blockTimestamp: 1_000_000_000,
        logIndex: 0,
        transactionHash: `0x${'1'.repeat(64)}`,
        size: '3',
        feeUsd: '0',
        maker: {
          userId: aliceId,
          orderId: rest.body.order_id,
          tokenId: f.token,
          side: 'buy',
          price,
        },
        taker: { userId: null, orderId: null, tokenId: f.token, side: 'sell', price },
      },
    };
    report(late);
    await svc.services.orders.whenQuiet(rest.body.order_id);
    await svc.services.host.whenIdle();
    const after = await tr.orderById('alice', rest.body.order_id);
    expect(after).toMatchObject({
      status: 200,
      body: {
        status: 'CANCELED',
        filled_size: '3',
        cancel_code: 'USER_CANCELED',
        revision: canceled.body.revision + 1,
      },
    });
    expect(after.body.fills).toMatchObject([{ trade_id: 'Tlate-1-m', size: '3', block_timestamp: 1_000_000_000 }]);
    expect(await fillsOf('Tlate-1')).toMatchObject([
      { role: 'maker', address: address.alice, orderId: rest.body.order_id, size: '3' },
      { role: 'taker', address: LIQUIDITY_PROVIDER_ADDRESS },
    ]);
    // delivered again: nothing changes
    report(late);
    await svc.services.host.whenIdle();
    expect((await tr.orderById('alice', rest.body.order_id)).body).toMatchObject({
      filled_size: '3',
      revision: after.body.revision,
    });
  });

  it("a trade with the liquidity provider: the user's fill, the provider's fill and the tape row", async () => {
    const f = await tr.freshToken();
    const buy = await takeAsk(tr, 'alice', f);
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

  it("a trade through the complement: each party's fill in its own token, outcome, price and notional", async () => {
    const f = await tr.freshToken(0.3, 0.6);
    const up = svc.services.venue.token(f.token)!;
    const down = svc.services.venue.token(up.complementTokenId)!;
    // alice's Down bid is an Up ask at 1 − its price: inside Up's spread, it is what bob's Up buy meets
    const downPrice = px(1 - (f.ask - 0.01));
    const upPrice = px(f.ask - 0.01);
    const rest = await tr.post('alice', {
      symbol: down.tokenId,
      side: 'buy',
      type: 'LIMIT',
      price: downPrice,
      size: '5',
    });
    expect(rest).toMatchObject({ status: 200, body: { status: 'OPEN' } });
    const take = await tr.post('bob', {
      symbol: f.token,
      side: 'buy',
      type: 'LIMIT',
      price: upPrice,
      size: '5',
      time_in_force: 'IOC',
    });
    expect(take).toMatchObject({ status: 200, body: { status: 'FILLED', fills: [{ price: upPrice, size: '5' }] } });
    const tradeId = take.body.fills[0].trade_id.replace(/-t$/, '');
    const notional = (p: string) => String(Number((Number(p) * 5).toFixed(6)));
    expect(await fillsOf(tradeId)).toMatchObject([
      {
        role: 'maker',
        address: address.alice,
        orderId: rest.body.order_id,
        conditionId: down.conditionId,
        tokenId: down.tokenId,
        outcome: down.outcome,
        side: 'BUY',
        price: downPrice,
        notionalUsd: notional(downPrice),
      },
      {
        role: 'taker',
        address: address.bob,
        orderId: take.body.order_id,
        conditionId: up.conditionId,
        tokenId: up.tokenId,
        outcome: up.outcome,
        side: 'BUY',
        price: upPrice,
        notionalUsd: notional(upPrice),
      },
    ]);
    expect((await tape()).find((t) => t._id === tradeId)).toMatchObject({
      tokenId: up.tokenId,
      outcome: up.outcome,
      price: upPrice,
      notionalUsd: notional(upPrice),
    });
  });
});

/** `u` buys 5 shares of a fresh token at its ask (IOC): a trade with the liquidity provider. */
function takeAsk(tr: Trading, u: string, f: Fresh) {
  return tr.post(u, { symbol: f.token, side: 'buy', type: 'LIMIT', price: px(f.ask), size: '5', time_in_force: 'IOC' });
}

/** Services started by the tests below, each with settings of its own; closed at the end. */
const running: TestService[] = [];
afterAll(async () => {
  for (const s of running.splice(0)) await s.close();
});
async function started(opts: Parameters<typeof startTestService>[0]): Promise<TestService> {
  const svc = await startTestService(opts);
  running.push(svc);
  return svc;
}

describe('trade history: a fill, its order step and its records commit together', () => {
  it("a fault between the history's writes: the order step rolls back whole, is redelivered, lands once", async () => {
    const store = new FaultyStore(await SqliteStore.open(null));
    const svc = await started({ store, env: { SIM_MAKER_REFILL_MS: '3600000' } });
    const tr = await new Trading(() => svc).init(['alice']);
    const heard: RecordedBatch[] = [];
    svc.services.history.onRecorded((b) => heard.push(b));
    const f = await tr.freshToken();
    // the tape row is written, then the insert of the two fills (one write) fails: nothing of the step may stay
    const fault = store.failNth(TRADER_FILLS, 'insertMissing', 1, { times: 1 });
    const buy = await takeAsk(tr, 'alice', f);
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

describe('trade history: cash movements (credit, split, merge, withdrawal and its refund) through REST', () => {
  it('each operation is one cash row with its deltas and a chain position of its own', async () => {
    const svc = await started({ env: { SIM_INITIAL_PUSD: '1000', SIM_BLOCK_DELAY_MS: '200' } });
    const tr = await new Trading(() => svc).init([]);
    const created = await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'carol' } });
    expect(created.status).toBe(201);
    const address = created.body.safe_address.toLowerCase();
    const as = tr.as('carol');
    const market = (await svc.call('GET', '/v2/trade/markets?limit=5')).body.markets[0];
    const [yes, no] = market.tokens.map((t: any) => t.token_id);
    const post = (path: string, body: unknown) => svc.call('POST', `/v2/trade${path}`, { body, headers: as });
    expect(await post('/positions/split', { condition_id: market.condition_id, amount: '20' })).toMatchObject({
      status: 200,
    });
    expect(await post('/positions/merge', { condition_id: market.condition_id, amount: '5' })).toMatchObject({
      status: 200,
    });
    const ok = await post('/withdraw', { to_address: '0x000000000000000000000000000000000000dEaD', amount: '10' });
    const reverts = await post('/withdraw', { to_address: '0x0000000000000000000000000000000000000000', amount: '7' });
    expect([ok.status, reverts.status]).toEqual([200, 200]);
    await poll(
      'withdrawal refunded',
      async () => (await svc.call('GET', `/v2/trade/withdrawals/${reverts.body.withdrawal_id}`, { headers: as })).body,
      (b) => b.status === 'FAILED',
    );
    const cash = await (
      await svc.services.store.collection<CashMove>(CASH_MOVES)
    ).find({ address }, { sort: { blockTimestamp: 1, logIndex: 1 } });
    const userId = created.body.platform_user_id;
    expect(cash.map((c) => [c.kind, c.pusdDelta, c.shares.map((x) => [x.tokenId, x.delta])])).toEqual([
      ['credit', '1000', []],
      [
        'split',
        '-20',
        [
          [yes, '20'],
          [no, '20'],
        ],
      ],
      [
        'merge',
        '5',
        [
          [yes, '-5'],
          [no, '-5'],
        ],
      ],
      ['withdraw', '-10', []],
      ['withdraw', '-7', []],
      ['withdraw_refund', '7', []],
    ]);
    expect(cash.every((c) => c.userId === userId && c.source === 'venue')).toBe(true);
    expect(cash[1]).toMatchObject({ conditionId: market.condition_id, shares: [{ outcome: expect.any(String) }, {}] });
    const positions = cash.map((c) => `${c.blockTimestamp}:${c.logIndex}`);
    expect(new Set(positions).size).toBe(cash.length);
    expect(cash.every((c) => c.blockTimestamp % 2 === 0 && /^0x[0-9a-f]{64}$/.test(c.transactionHash))).toBe(true);
  });
});

describe("trade history: the capture's trade prints are anonymous tape rows", () => {
  it('a print with a size is a tape row without wallets at a chain position; one without a size is not', async () => {
    const svc = await started({ env: { SIM_CAPTURE: 'on', SIM_CAPTURE_SPEED: '1' } });
    const venue = svc.services.venue as SimVenue;
    const capture = svc.services.catalogue.capture!;
    const tokenId = capture.markets.at(-1)!.tokens[0]!.tokenId;
    const atMs = capture.startMs;
    await venue.applyCaptureEvents([
      { kind: 'trade', atMs, tokenId, price: dec('0.42'), size: dec('12.5'), side: 'sell' },
      { kind: 'trade', atMs, tokenId, price: dec('0.43') },
      { kind: 'trade', atMs, tokenId, price: dec('0.44'), size: dec('2'), side: 'buy' },
    ]);
    const market = capture.markets.at(-1)!;
    const outcome = market.tokens[0]!.outcome;
    const tape = await svc.call('GET', `/v2/trade/trades?token_id=${tokenId}`);
    expect(tape.status).toBe(200);
    const [buy, sell] = tape.body.trades;
    const common = { market_id: market.conditionId, token_id: tokenId, outcome, maker: null, taker: null };
    expect(tape.body).toMatchObject({
      trades: [
        { ...common, side: 'BUY', price: '0.44', shares: '2', usdc_amount: '0.88', fee_usd: '0', source: 'capture' },
        {
          ...common,
          side: 'SELL',
          price: '0.42',
          shares: '12.5',
          usdc_amount: '5.25',
          fee_usd: '0',
          source: 'capture',
        },
      ],
      next_cursor: null,
    });
    expect(buy.transaction_hash).toBe(sell.transaction_hash); // one venue operation
    expect(buy.log_index).toBe(sell.log_index + 1);
    expect(buy.block_timestamp).toEqual(expect.any(Number));
    expect(venue.book(tokenId)?.lastTradePrice).toBe('0.44');

    // stored without what follows from the rest (its token's market facts, the notional, no wallets
    // nor fee, the trade id its _id, the hash its operation's); the tape's reads give it back whole
    const stored = await (
      await svc.services.store.collection(TRADES)
    ).find(
      { tokenSeq: svc.services.history.tokenSeq(tokenId), source: 'capture' },
      { sort: { blockTimestamp: 1, logIndex: 1 } },
    );
    expect(stored.map((r) => Object.keys(r).sort())).toEqual(
      Array(2).fill([
        '_id',
        'atMs',
        'blockTimestamp',
        'logIndex',
        'op',
        'price',
        'side',
        'size',
        'source',
        'tokenId',
        'tokenSeq',
      ]),
    );
    expect(stored.map((r) => r._id)).toEqual([sell.trade_id, buy.trade_id]);
  });
});

describe("trade history: a capture print's market facts outlive the catalogue they were written with", () => {
  it('after a restart whose catalogue no longer lists the market, the tape still names it', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-tape-facts-'));
    try {
      const svc = await startTestService({
        store: await SqliteStore.open(dir),
        env: { SIM_CAPTURE: 'on', SIM_CAPTURE_SPEED: '1' },
      });
      const capture = svc.services.catalogue.capture!;
      const market = capture.markets.at(-1)!;
      const tokenId = market.tokens[0]!.tokenId;
      await (svc.services.venue as SimVenue).applyCaptureEvents([
        { kind: 'trade', atMs: capture.startMs, tokenId, price: dec('0.42'), size: dec('12.5'), side: 'sell' },
      ]);
      const before = await svc.call('GET', '/v2/trade/trades?limit=5');
      expect(before.status).toBe(200);
      expect(before.body.trades[0]).toMatchObject({
        token_id: tokenId,
        market_id: market.conditionId,
        outcome: market.tokens[0]!.outcome,
      });
      await svc.close();

      // a later catalogue without the capture's markets (a data update dropped them)
      const catalogue = testCatalogue();
      const dropped = new Set(capture.markets.map((m) => m.conditionId));
      catalogue.markets = catalogue.markets.filter((m) => !dropped.has(m.conditionId));
      for (const m of capture.markets) for (const t of m.tokens) catalogue.tokens.delete(t.tokenId);
      catalogue.capture = null;
      catalogue.captureTokens = undefined;
      const again = await startTestService({ store: await SqliteStore.open(dir), catalogue });
      try {
        const after = await again.call('GET', '/v2/trade/trades?limit=5');
        expect(after.status).toBe(200);
        // the market's question and slug are the listing's: gone with it; the print's own facts stay
        expect(after.body).toEqual({
          ...before.body,
          trades: [{ ...before.body.trades[0], question: null, slug: null }, ...before.body.trades.slice(1)],
        });
        // the facts are stored once for the token, beside its compact prints, with its key on the tape
        expect(await (await again.services.store.collection(TAPE_TOKENS)).find({ _id: tokenId })).toEqual([
          {
            _id: tokenId,
            tokenSeq: again.services.history.tokenSeq(tokenId),
            conditionId: market.conditionId,
            outcome: market.tokens[0]!.outcome,
          },
        ]);
        expect(again.services.history.tokenSeq(tokenId)).toEqual(expect.any(Number));
      } finally {
        await again.close();
      }
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });
});
