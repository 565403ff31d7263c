import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dec } from '../../engine/decimal.js';
import { SqliteStore } from '../../engine/store/sqlite.js';
import type { StrategyContext } from '../../machines/strategy-kit.js';
import type { SimVenue } from '../../engine/venue/sim-venue.js';
import { startTestService, type TestService } from '../helpers.js';
import { poll } from './trading-kit.js';

/**
 * Tick-size changes and market resolution through the real API: a capture market (quoted by the liquidity
 * provider, SIM_CAPTURE=off) changes tick and resolves through the simulation control
 * (SIM_CONTROL=on); the effects are read back over REST, and again after a restart on the same
 * disk store.
 */
describe('market resolution and tick change through the real API', () => {
  let dir: string;
  let svc: TestService;
  let market: any;
  const as = (u: string) => ({ 'x-partner-user-id': u });
  const post = (u: string, body: unknown) => svc.call('POST', '/v2/trade/order', { body, headers: as(u) });
  const start = async () =>
    startTestService({
      store: await SqliteStore.open(dir),
      env: { SIM_CONTROL: 'on', SIM_MAKER_REFILL_MS: '3600000' },
    });
  const marketNow = async () =>
    (await svc.call('GET', '/v2/trade/markets?limit=500&offset=1001')).body.markets.find(
      (m: any) => m.condition_id === market.condition_id,
    );

  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-resolve-'));
    svc = await start();
    await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'alice' } });
    const page = (await svc.call('GET', '/v2/trade/markets?limit=500&offset=1001')).body;
    market = page.markets.find((m: any) => /^btc-15min-up-or-down-/.test(m.slug));
    expect(market).toMatchObject({
      condition_id: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      question: expect.stringMatching(/^BTC Up or Down/),
      tick_size: '0.01',
      min_size: '5',
      closed: false,
      resolved: false,
      winning_token_id: null,
    });
    expect(market.tokens.map((t: any) => t.outcome)).toEqual(['Up', 'Down']);
  });

  it('before resolution: winner null, last_trade_price null until a trade print (markets and book)', async () => {
    expect(market.tokens).toEqual([
      { token_id: market.tokens[0].token_id, outcome: 'Up', winner: null, last_trade_price: null },
      { token_id: market.tokens[1].token_id, outcome: 'Down', winner: null, last_trade_price: null },
    ]);
    const book = await svc.call('GET', `/v2/trade/book?token_id=${market.tokens[0].token_id}`);
    expect(book).toMatchObject({ status: 200, body: { token_id: market.tokens[0].token_id, last_trade_price: null } });
  });
  it("GET /v2/trade/markets?token_id= lists only those tokens' markets; a malformed list is a 400", async () => {
    const [up, down] = market.tokens.map((t: any) => t.token_id as string);
    const one = await svc.call('GET', `/v2/trade/markets?token_id=${down}`);
    expect(one).toMatchObject({ status: 200, body: { markets: [market], total: 1, offset: 0, has_more: false } });
    const other = (await svc.call('GET', '/v2/trade/markets?limit=1')).body.markets[0];
    const many = await svc.call('GET', `/v2/trade/markets?token_id=${other.tokens[1].token_id},${up},${down},999`);
    expect(many).toMatchObject({ status: 200, body: { markets: [other, market], total: 2, has_more: false } });
    expect((await svc.call('GET', '/v2/trade/markets?token_id=999')).body).toMatchObject({ markets: [], total: 0 });
    for (const bad of ['abc', `${up},`, `${up},,${down}`, Array.from({ length: 101 }, () => up).join(',')]) {
      const r = await svc.call('GET', `/v2/trade/markets?token_id=${bad}`);
      expect(r.status, bad).toBe(400);
    }
  });
  afterAll(async () => {
    await svc.close();
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('the simulation control is absent (404) unless SIM_CONTROL=on', async () => {
    const off = await startTestService();
    try {
      const r = await off.call('POST', `/v2/sim/markets/${market.condition_id}/resolve`, {
        body: { winning_token_id: market.tokens[0].token_id },
      });
      expect(r.status).toBe(404);
    } finally {
      await off.close();
    }
  });

  it('strategies price on the current tick: a TWAP slice after 0.01 → 0.001 is one tick inside', async () => {
    const page = (await svc.call('GET', '/v2/trade/markets?limit=500&offset=1001')).body;
    const eth = page.markets.find((m: any) => /^eth-15min-up-or-down-/.test(m.slug));
    const token = eth.tokens[0].token_id as string;
    const res = await post('alice', {
      symbol: token,
      side: 'buy',
      type: 'TWAP',
      size: '30',
      execution: { interval_sec: 10, duration_sec: 30, passive: true },
    });
    expect(res).toMatchObject({ status: 200, body: { type: 'TWAP', status: 'ACTIVE' } });
    const id = res.body.record_id as string;
    await svc.services.strategies.whenQuiet(id);
    await (svc.services.venue as SimVenue).changeTickSize(token, dec('0.001'));
    const c = svc.services.host.snapshotOf(id)!.context as StrategyContext;
    await svc.services.host.deliverTimer({ actorId: id, timerName: 'slice', atMs: c.deadlines.slice! });
    await svc.services.strategies.whenQuiet(id);
    const after = svc.services.host.snapshotOf(id)?.context as StrategyContext;
    const second = after.children[1]!;
    const order = await svc.services.actors.get(second.orderId);
    // one tick of 0.001 above the bid (0.49, or the first slice's 0.5 when it still rests): 0.491 or 0.501
    expect((order!.view as { price: string }).price).toMatch(/^0\.[45]01$|^0\.491$/);
    expect(after.children[0]!.orderId).not.toBe(second.orderId);
  });

  it('tick change, resolution: resting canceled, new orders 422, STOP_LOSS CANCELED; restart keeps both', async () => {
    const up = market.tokens[0].token_id as string;
    const down = market.tokens[1].token_id as string;
    // shares to protect with a stop
    const buy = await post('alice', {
      symbol: up,
      side: 'buy',
      type: 'LIMIT',
      price: '0.55',
      size: '20',
      time_in_force: 'IOC',
    });
    expect(buy).toMatchObject({ status: 200, body: { status: 'FILLED' } });
    // tick change 0.01 → 0.001: new orders checked against it at once, the book and markets show it
    await (svc.services.venue as SimVenue).changeTickSize(up, dec('0.001'));
    expect((await svc.call('GET', `/v2/trade/book?token_id=${up}`)).body.tick_size).toBe('0.001');
    expect((await marketNow()).tick_size).toBe('0.001');
    const resting = await post('alice', { symbol: up, side: 'buy', type: 'LIMIT', price: '0.405', size: '10' });
    expect(resting).toMatchObject({ status: 200, body: { status: 'OPEN' } });
    const stop = await post('alice', { symbol: up, side: 'sell', type: 'STOP_LOSS', price: '0.3', size: '10' });
    expect(stop).toMatchObject({ status: 200, body: { status: 'ACTIVE' } });

    const userKey = (
      await svc.call('POST', '/v2/trade/users/alice/api-keys', {
        body: { scopes: ['trade.read', 'trade.execute', 'trade.cancel'] },
      })
    ).body.api_key as string;
    const asUser = await svc.call('POST', `/v2/sim/markets/${market.condition_id}/resolve`, {
      body: { winning_token_id: up },
      token: userKey,
    });
    // a partner user's key never reaches the control
    expect(asUser).toMatchObject({ status: 403, body: { error: 'forbidden' } });
    const bad = await svc.call('POST', `/v2/sim/markets/${market.condition_id}/resolve`, {
      body: { winning_token_id: '42' },
    });
    expect(bad).toMatchObject({ status: 400, body: { error: 'invalid_request' } });
    const res = await svc.call('POST', `/v2/sim/markets/${market.condition_id}/resolve`, {
      body: { winning_token_id: up },
    });
    expect(res).toMatchObject({
      status: 200,
      body: {
        closed: true,
        resolved: true,
        winning_token_id: up,
        tokens: [
          { token_id: up, winner: true },
          { token_id: down, winner: false },
        ],
      },
    });
    const other = await svc.call('POST', `/v2/sim/markets/${market.condition_id}/resolve`, {
      body: { winning_token_id: down },
    });
    expect(other).toMatchObject({ status: 409, body: { error: 'conflict' } });

    const order = await poll(
      'resting order canceled',
      async () => svc.services.actors.get(resting.body.order_id),
      (r) => r?.status === 'CANCELED',
    );
    expect(order!.view).toMatchObject({
      status: 'CANCELED',
      message: 'market resolved',
      cancel_code: 'MARKET_RESOLVED',
      cancel_reason: 'market resolved',
    });
    expect(await svc.call('GET', `/v2/trade/orders/${resting.body.order_id}`, { headers: as('alice') })).toMatchObject({
      status: 200,
      body: { status: 'CANCELED', cancel_code: 'MARKET_RESOLVED' },
    });
    const strategies = async () =>
      (await svc.call('GET', '/v2/trade/strategies?limit=500', { headers: as('alice') })).body.strategies;
    const ended = await poll(
      'stop canceled',
      strategies,
      (l: any[]) => l.find((s) => s.record_id === stop.body.record_id)?.status === 'CANCELED',
    );
    expect(ended.find((s: any) => s.record_id === stop.body.record_id)).toMatchObject({
      status: 'CANCELED',
      message: 'market resolved',
    });

    for (const symbol of [up, down]) {
      const refused = await post('alice', { symbol, side: 'buy', type: 'LIMIT', price: '0.5', size: '10' });
      expect(refused).toMatchObject({
        status: 422,
        body: { error: 'MARKET_CLOSED', message: expect.stringMatching(/resolved/) },
      });
    }
    const refusedStop = await post('alice', { symbol: up, side: 'sell', type: 'STOP_LOSS', price: '0.3', size: '10' });
    expect(refusedStop).toMatchObject({ status: 422, body: { error: 'MARKET_CLOSED' } });
    expect(await marketNow()).toMatchObject({
      closed: true,
      resolved: true,
      winning_token_id: up,
      tick_size: '0.001',
      resolved_at: expect.any(Number),
    });
    expect((await svc.call('GET', `/v2/trade/book?token_id=${up}`)).body).toMatchObject({ bids: [], asks: [] });

    // restart on the same store: the resolution and the tick come back from the journal
    await svc.close();
    svc = await start();
    expect(await marketNow()).toMatchObject({ closed: true, resolved: true, winning_token_id: up, tick_size: '0.001' });
    expect((await svc.call('GET', `/v2/trade/book?token_id=${up}`)).body).toMatchObject({
      tick_size: '0.001',
      bids: [],
      asks: [],
    });
    expect(await post('alice', { symbol: up, side: 'buy', type: 'LIMIT', price: '0.5', size: '10' })).toMatchObject({
      status: 422,
      body: { error: 'MARKET_CLOSED' },
    });
    expect(svc.services.venue.marketStatus(market.condition_id)).toMatchObject({ resolved: true, winningTokenId: up });
  });

  it('a fired STOP_LOSS whose sell rests at resolution ends CANCELED, market resolved (not COMPLETED)', async () => {
    // one provider level a side, no refill: the test empties the bids, then its own bid is the touch
    const own = await startTestService({
      env: { SIM_CONTROL: 'on', SIM_MAKER_LEVELS: '1', SIM_MAKER_REFILL_MS: '3600000' },
    });
    try {
      const u = { 'x-partner-user-id': 'dora' };
      await own.call('POST', '/v2/trade/users', { body: { partner_user_id: 'dora' } });
      const m =
        (await own.call('GET', '/v2/trade/markets?limit=500&offset=1001')).body.markets.find((x: any) =>
          /^sol-15min-up-or-down-/.test(x.slug),
        ) ?? (await own.call('GET', '/v2/trade/markets?limit=500&offset=1001')).body.markets[5];
      const up = m.tokens[0].token_id as string;
      expect(
        await own.call('POST', '/v2/trade/positions/split', {
          body: { condition_id: m.condition_id, amount: '1100' },
          headers: u,
        }),
      ).toMatchObject({ status: 200 });
      // armed first (the touch 0.4x is above its level), then the test empties the bids
      const stop = await own.call('POST', '/v2/trade/order', {
        body: { symbol: up, side: 'sell', type: 'STOP_LOSS', price: '0.3', size: '10' },
        headers: u,
      });
      expect(stop).toMatchObject({ status: 200, body: { status: 'ACTIVE' } });
      const id = stop.body.record_id as string;
      const bid = (await own.call('GET', `/v2/trade/book?token_id=${up}`)).body.bids[0];
      const dump = await own.call('POST', '/v2/trade/order', {
        body: { symbol: up, side: 'sell', type: 'LIMIT', price: '0.01', size: bid.size, time_in_force: 'IOC' },
        headers: u,
      });
      expect(dump).toMatchObject({ status: 200, body: { status: 'FILLED' } });
      expect((await own.call('GET', `/v2/trade/book?token_id=${up}`)).body.bids).toEqual([]);
      // dora's own bid at 0.2 is the touch: the stop fires at it;
      // self-trade prevention cancels that bid, so the sell rests, 0 filled
      const ownBid = await own.call('POST', '/v2/trade/order', {
        body: { symbol: up, side: 'buy', type: 'LIMIT', price: '0.2', size: '5' },
        headers: u,
      });
      expect(ownBid).toMatchObject({ status: 200, body: { status: 'OPEN' } });
      const strategy = async () =>
        (await own.call('GET', '/v2/trade/strategies?limit=500', { headers: u })).body.strategies.find(
          (x: any) => x.record_id === id,
        );
      await poll('stop fired, its sell resting', strategy, (x: any) => x?.status === 'TRIGGERED');
      await own.services.strategies.whenQuiet(id);
      expect((await own.call('GET', `/v2/trade/book?token_id=${up}`)).body.asks[0]).toEqual({
        price: '0.2',
        size: '10',
      });
      const res = await own.call('POST', `/v2/sim/markets/${m.condition_id}/resolve`, {
        body: { winning_token_id: m.tokens[1].token_id },
      });
      expect(res.status).toBe(200);
      const ended = await poll('stop ended', strategy, (x: any) => x?.status !== 'TRIGGERED');
      expect(ended).toMatchObject({ status: 'CANCELED', message: 'market resolved' });
      // the strategy decided on the sell's cancel code, recorded from the venue's report
      expect(await own.call('GET', `/v2/trade/orders/${ended.order_ids[0]}`, { headers: u })).toMatchObject({
        status: 200,
        body: { status: 'CANCELED', is_stop_loss: true, cancel_code: 'MARKET_RESOLVED', message: 'market resolved' },
      });
      expect(await own.call('GET', `/v2/trade/orders/${ownBid.body.order_id}`, { headers: u })).toMatchObject({
        status: 200,
        body: { status: 'CANCELED', cancel_code: 'SELF_TRADE_PREVENTION', message: 'self-trade prevention' },
      });
    } finally {
      await own.close();
    }
  });
});
