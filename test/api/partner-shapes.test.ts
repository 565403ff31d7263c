/**
 * Shapes partners copy from the reference product's documentation, over real HTTP: positions with
 * marks and PnL, the account snapshot, the reference's cancel paths and answer, the order ladder,
 * `remaining_size` on strategy rows and `average_price` on orders, TWAP `price_tolerance_pct`,
 * MARKET IOC / FOK, and `count` on offset/limit pages. Every response is also checked against the
 * route table's schema by test/helpers.ts.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Dec, dec, str } from '../../engine/decimal.js';
import type { VenueOrder } from '../../engine/venue/port.js';
import { startTestService, type TestService } from '../helpers.js';
import { px, Trading } from './trading-kit.js';

/** A decimal string as the API writes it (no trailing zeros). */
const d = (x: string | number | Dec) => str(dec(x));

describe('shapes partners copy from the reference product', () => {
  let svc: TestService;
  const tr = new Trading(() => svc);
  const as = (u: string) => tr.as(u);
  const get = (u: string | null, path: string, token?: string) =>
    svc.call('GET', `/v2/trade${path}`, { ...(u ? { headers: as(u) } : {}), ...(token ? { token } : {}) });
  const post = (u: string, path: string, body?: unknown, idempotencyKey?: string) =>
    svc.call('POST', `/v2/trade${path}`, {
      headers: as(u),
      ...(body !== undefined ? { body } : {}),
      ...(idempotencyKey ? { idempotencyKey } : {}),
    });
  const rowOf = async (u: string, token: string) =>
    (await get(u, '/positions?limit=500')).body.positions.find((p: any) => p.token_id === token);

  beforeAll(async () => {
    svc = await startTestService({
      env: {
        SIM_CONTROL: 'on',
        SIM_MAKER_REFILL_MS: '3600000',
        SIM_INITIAL_PUSD: '1000000',
        RATE_LIMIT_PER_MIN: '100000',
      },
    });
    await tr.init(['pam', 'quinn', 'rita', 'sam', 'tess']);
  });
  afterAll(() => svc?.close());

  it('positions carry symbol, mid mark, unrealized and realized PnL, redeemable, mergeable, resolved', async () => {
    const a = await tr.freshToken(0.3, 0.6);
    const ask = dec(a.asks[0]!.price);
    const mid = dec(a.bids[0]!.price).plus(ask).div(2);
    await tr.buyShares('pam', a.token, 10);
    const bought = await get('pam', '/positions?limit=500');
    expect(bought.status).toBe(200);
    const row = bought.body.positions.find((p: any) => p.token_id === a.token);
    expect(row).toMatchObject({
      token_id: a.token,
      symbol: a.token,
      size: '10',
      avg_price: d(ask),
      cost_usd: d(ask.times(10)),
      cur_price: d(mid),
      current_value: d(mid.times(10)),
      cash_pnl: d(mid.minus(ask).times(10)),
      realized_pnl: '0',
      redeemable: false,
      mergeable: false,
      market_resolved: false,
    });

    // a sell realizes (price received − average cost) × shares
    const bid = dec(a.bids[0]!.price);
    const sold = await tr.post('pam', {
      symbol: a.token,
      side: 'sell',
      type: 'LIMIT',
      price: d(bid),
      size: '4',
      time_in_force: 'IOC',
    });
    expect([sold.status, sold.body.status]).toEqual([200, 'FILLED']);
    expect(await rowOf('pam', a.token)).toMatchObject({
      size: '6',
      cost_usd: d(ask.times(6)),
      realized_pnl: d(bid.minus(ask).times(4)),
      cash_pnl: d(mid.minus(ask).times(6)),
    });

    // shares of both outcomes held: mergeable on both rows
    const conditionId = row.condition_id as string;
    expect((await post('pam', '/positions/split', { condition_id: conditionId, amount: '5' })).status).toBe(200);
    const both = (await get('pam', '/positions?limit=500')).body.positions.filter(
      (p: any) => p.condition_id === conditionId,
    );
    expect(both).toHaveLength(2);
    const other = both.find((p: any) => p.token_id !== a.token);
    expect(both.find((p: any) => p.token_id === a.token)).toMatchObject({ size: '11', mergeable: true });
    expect(other).toMatchObject({ size: '5', mergeable: true, realized_pnl: '0' });

    // resolved: marked at 1 (winner) and 0, redeemable
    const resolved = await svc.call('POST', `/v2/sim/markets/${conditionId}/resolve`, {
      body: { winning_token_id: a.token },
    });
    expect(resolved.status).toBe(200);
    const after = await rowOf('pam', a.token);
    expect(after).toMatchObject({
      cur_price: '1',
      current_value: '11',
      cash_pnl: d(dec(11).minus(after.cost_usd)),
      redeemable: true,
      market_resolved: true,
    });
    expect(await rowOf('pam', other.token_id)).toMatchObject({
      cur_price: '0',
      current_value: '0',
      cash_pnl: d(dec(0).minus(other.cost_usd)),
      redeemable: true,
      market_resolved: true,
    });
  });

  it('GET /v2/trade/account carries the api_key, the wallet, the partner, the binding and the user', async () => {
    const minted = await svc.call('POST', '/v2/trade/users/quinn/api-keys', {
      body: { scopes: ['trade.read', 'trade.execute'] },
    });
    expect(minted.status).toBe(201);
    const token = minted.body.api_key as string;
    const res = await get(null, '/account', token);
    const user = (await get('quinn', '/account')).body.user;
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      partner_id: 'demo',
      partner: { id: 'demo', slug: 'demo', display_name: 'demo' },
      api_key: {
        id: minted.body.key_id,
        key_id: minted.body.key_id,
        kind: 'user',
        scopes: ['trade.read', 'trade.execute'],
        rate_limit_per_min: 100000,
        last4: token.slice(-4),
        created_at: expect.any(Number),
        expires_at: null,
      },
      wallet: { eoa_address: user.eoa_address, safe_address: user.safe_address },
      binding: { id: user.platform_user_id, partner_user_id: 'quinn', platform_user_id: user.platform_user_id },
      user,
    });
    expect(user).toMatchObject({ partner_user_id: 'quinn', eoa_address: expect.stringMatching(/^0x[0-9a-fA-F]{40}$/) });
    // the master key acting for nobody: no wallet, no binding
    const master = await get(null, '/account');
    expect([
      master.status,
      master.body.wallet,
      master.body.binding,
      master.body.user,
      master.body.api_key.kind,
    ]).toEqual([200, null, null, null, 'master']);
  });

  it('cancel-batch and cancel-all answer cancelled, not_cancelled, count; older paths the same', async () => {
    const a = await tr.freshToken(0.3, 0.6);
    const rest = async (price: string) => {
      const r = await tr.post('rita', { symbol: a.token, side: 'buy', type: 'LIMIT', price, size: '5' });
      expect([r.status, r.body.status]).toEqual([200, 'OPEN']);
      return r.body.order_id as string;
    };
    const [o1, o2, o3, o4] = [await rest('0.02'), await rest('0.03'), await rest('0.04'), await rest('0.05')];
    const unknown = 'ord_00000000-0000-4000-8000-000000000000';

    const batch = await post('rita', '/orders/cancel-batch', { order_ids: [o1, unknown] });
    expect(batch.status).toBe(200);
    expect(batch.body).toMatchObject({
      cancelled: [o1],
      not_cancelled: [{ order_id: unknown, reason: `no order ${unknown}` }],
      count: 1,
      counts: { canceled: 1, not_found: 1, already_done: 0 },
      results: [
        { order_id: o1, outcome: 'canceled' },
        { order_id: unknown, outcome: 'not_found' },
      ],
    });
    const alias = await post('rita', '/orders/cancel', { order_ids: [o2, o1], venue: 'polymarket' });
    expect(alias.status).toBe(200);
    expect(alias.body).toMatchObject({
      cancelled: [o2],
      not_cancelled: [{ order_id: o1, reason: expect.stringMatching(/already CANCELED/) }],
      count: 1,
    });

    // GET / DELETE on the action paths: 405, never read as an order id
    for (const method of ['GET', 'DELETE']) {
      for (const action of ['cancel-all', 'cancel-batch']) {
        const r = await svc.call(method, `/v2/trade/orders/${action}`, { headers: as('rita') });
        expect([r.status, r.body.error, r.headers.get('allow')], `${method} ${action}`).toEqual([
          405,
          'method_not_allowed',
          'POST, OPTIONS',
        ]);
      }
    }
    expect((await tr.openOrders('rita')).map((o) => o.order_id).sort()).toEqual([o3, o4].sort());

    const all = await post('rita', `/orders/cancel-all?symbol=${a.token}&venue=polymarket`);
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({
      cancelled: [o4, o3],
      not_cancelled: [],
      count: 2,
      counts: { canceled: 2, not_found: 0, already_done: 0 },
    });
    const none = await svc.call('DELETE', '/v2/trade/orders', { headers: as('rita') });
    expect([none.status, none.body]).toEqual([
      200,
      {
        cancelled: [],
        not_cancelled: [],
        count: 0,
        results: [],
        counts: { canceled: 0, not_found: 0, already_done: 0 },
      },
    ]);
    expect(await tr.openOrders('rita')).toEqual([]);
  });

  it('POST /v2/trade/order/batch places a ladder all or none, one order per rung', async () => {
    const a = await tr.freshToken(0.3, 0.6);
    const low = (k: number) => px(a.bid - 0.01 * k);
    const rungs = [
      { price: low(1), size: '15' },
      { price: low(2), size: '20' },
      { price: low(3), size: '30' },
    ];
    const key = randomUUID();
    const res = await post('sam', '/order/batch', { symbol: a.token, side: 'buy', rungs }, key);
    expect(res.status).toBe(200);
    expect(res.body.count).toBe(3);
    expect(
      res.body.orders.map((o: any) => [
        o.type,
        o.side,
        o.price,
        o.size,
        o.status,
        o.filled_size,
        o.remaining_size,
        o.time_in_force,
      ]),
    ).toEqual(rungs.map((r) => ['LIMIT', 'buy', r.price, r.size, 'OPEN', '0', r.size, 'GTC']));
    const ids = res.body.orders.map((o: any) => o.order_id);
    expect((await tr.openOrders('sam')).map((o) => o.order_id).sort()).toEqual([...ids].sort());
    const reserved = rungs.reduce((s, r) => s.plus(dec(r.price).times(r.size)), dec(0));
    expect((await get('sam', '/balances')).body.reserved).toBe(d(reserved));
    // the same key again: the first answer, nothing placed twice
    const replay = await post('sam', '/order/batch', { symbol: a.token, side: 'buy', rungs }, key);
    expect([replay.status, replay.headers.get('idempotent-replayed'), replay.body]).toEqual([200, 'true', res.body]);
    expect(await tr.openOrders('sam')).toHaveLength(3);

    // refused before anything is placed: a rung off the tick, a repeated price, the wallet
    const offTick = await post('sam', '/order/batch', {
      symbol: a.token,
      side: 'buy',
      rungs: [
        { price: low(4), size: '15' },
        { price: '0.205', size: '15' },
      ],
    });
    expect([offTick.status, offTick.body.error, offTick.body.message]).toEqual([
      400,
      'invalid_request',
      expect.stringMatching(/^rungs\[1\]: price/),
    ]);
    const repeated = await post('sam', '/order/batch', {
      symbol: a.token,
      side: 'buy',
      rungs: [
        { price: low(4), size: '15' },
        { price: `${low(4)}0`, size: '15' },
      ],
    });
    expect([repeated.status, repeated.body.message]).toEqual([
      400,
      `rungs[1].price ${low(4)} repeats rungs[0].price: each rung has a price of its own`,
    ]);
    const poor = await post('tess', '/order/batch', {
      symbol: a.token,
      side: 'buy',
      rungs: [
        { price: low(4), size: '2000000' },
        { price: low(5), size: '2000000' },
      ],
    });
    // each rung alone fits the wallet, both together do not
    expect([poor.status, poor.body.error, poor.body.message]).toEqual([
      422,
      'INSUFFICIENT_BALANCE',
      expect.stringMatching(/^this ladder needs/),
    ]);
    const tooMany = await post('sam', '/order/batch', {
      symbol: a.token,
      side: 'buy',
      rungs: Array.from({ length: 21 }, (_, i) => ({ price: px(0.02 + i * 0.01), size: '15' })),
    });
    expect(tooMany.status).toBe(400);
    expect(await tr.openOrders('sam')).toHaveLength(3);
    expect(await tr.openOrders('tess')).toEqual([]);

    // the venue refuses the third rung: the two placed before are canceled
    const venue = svc.services.venue;
    const submit = venue.submit;
    let n = 0;
    venue.submit = (o: VenueOrder) => submit.call(venue, ++n === 3 ? { ...o, price: '0.005' } : o);
    const failKey = randomUUID();
    const ladder = {
      symbol: a.token,
      side: 'buy',
      rungs: [
        { price: low(4), size: '15' },
        { price: low(5), size: '15' },
        { price: low(6), size: '15' },
      ],
    };
    let refused;
    try {
      refused = await post('tess', '/order/batch', ladder, failKey);
    } finally {
      venue.submit = submit;
    }
    expect([refused.status, refused.body.error, refused.body.message]).toEqual([
      422,
      'invalid_request',
      expect.stringMatching(
        /^rungs\[2\] \(price [0-9.]+\) was refused, the ladder canceled: price 0\.005 is not on the tick/,
      ),
    ]);
    expect(await tr.openOrders('tess')).toEqual([]);
    expect((await get('tess', '/balances')).body.reserved).toBe('0');
    // its retry with the same key does not pretend the canceled ladder stands
    const again = await post('tess', '/order/batch', ladder, failKey);
    expect([again.status, again.body.error]).toEqual([409, 'conflict']);
  });

  it('strategy rows carry remaining_size as the order response does; order responses carry average_price', async () => {
    const a = await tr.freshToken(0.3, 0.6);
    const buy = await tr.post('pam', {
      symbol: a.token,
      side: 'buy',
      type: 'LIMIT',
      price: '0.99',
      size: '10',
      time_in_force: 'IOC',
    });
    expect(buy.status).toBe(200);
    expect(buy.body).toMatchObject({ status: 'FILLED', avg_price: a.asks[0]!.price, average_price: a.asks[0]!.price });
    const live = await tr.post('pam', { symbol: a.token, side: 'buy', type: 'LIMIT', price: '0.02', size: '5' });
    expect(live.body).toMatchObject({ status: 'OPEN', avg_price: null, average_price: null });
    const stop = await tr.post('pam', {
      symbol: a.token,
      side: 'sell',
      type: 'STOP_LOSS',
      price: px(a.bid - 0.1),
      size: '10',
    });
    expect([stop.status, stop.body.remaining_size]).toEqual([200, '10']);
    const row = await tr.strategy('pam', stop.body.record_id);
    expect(row).toMatchObject({ record_id: stop.body.record_id, size: '10', filled_size: null, remaining_size: '10' });
  });

  it('TWAP accepts execution.price_tolerance_pct with a warnings entry', async () => {
    const a = await tr.freshToken(0.3, 0.6);
    const res = await tr.post('quinn', {
      symbol: a.token,
      side: 'buy',
      type: 'TWAP',
      size: '3',
      price: px(a.ask),
      execution: { interval_sec: 10, duration_sec: 30, price_tolerance_pct: 2 },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      type: 'TWAP',
      warnings: ['execution.price_tolerance_pct is ignored for TWAP orders'],
    });
    // elsewhere still refused, naming the field
    const stop = await tr.post('quinn', {
      symbol: a.token,
      side: 'buy',
      type: 'TRAILING_BUY',
      quote_amount: '5',
      execution: { trailing_offset_pct: 5, price_tolerance_pct: 2 },
    });
    expect([stop.status, stop.body.message]).toEqual([
      400,
      expect.stringMatching(/^execution\.price_tolerance_pct is not used by TRAILING_BUY orders/),
    ]);
  });

  it('MARKET orders take time_in_force IOC and FOK (all or nothing); anything else is a 400', async () => {
    const a = await tr.freshToken(0.3, 0.6);
    const ioc = await tr.post('rita', {
      symbol: a.token,
      side: 'buy',
      type: 'MARKET',
      quote_amount: '5',
      time_in_force: 'IOC',
    });
    expect([ioc.status, ioc.body.status, ioc.body.time_in_force]).toEqual([200, 'FILLED', 'IOC']);
    const fok = await tr.post('rita', {
      symbol: a.token,
      side: 'buy',
      type: 'MARKET',
      quote_amount: '5',
      time_in_force: 'FOK',
    });
    expect([fok.status, fok.body.status, fok.body.time_in_force]).toEqual([200, 'FILLED', 'FOK']);
    // more dollars than every ask of the book holds: nothing fills, nothing is spent
    const book = await tr.book(a.token);
    const depth = book.asks.reduce((s, l) => s.plus(dec(l.price).times(l.size)), dec(0));
    const before = (await get('rita', '/balances')).body;
    const big = await tr.post('rita', {
      symbol: a.token,
      side: 'buy',
      type: 'MARKET',
      quote_amount: d(depth.plus(5).toDecimalPlaces(2)),
      time_in_force: 'FOK',
    });
    expect([big.status, big.body.status, big.body.filled_size, big.body.time_in_force]).toEqual([
      200,
      'CANCELED',
      '0',
      'FOK',
    ]);
    expect((await get('rita', '/balances')).body).toEqual(before);
    expect((await tr.book(a.token)).asks).toEqual(book.asks);
    // a sell of more shares than the bids take: nothing sold
    const bids = book.bids.reduce((s, l) => s.plus(l.size), dec(0));
    const row = await rowOf('rita', a.token);
    expect(
      (await post('rita', '/positions/split', { condition_id: row.condition_id, amount: d(bids.plus(1)) })).status,
    ).toBe(200);
    const held = (await rowOf('rita', a.token)).size as string;
    const sell = await tr.post('rita', {
      symbol: a.token,
      side: 'sell',
      type: 'MARKET',
      size: d(bids.plus(1)),
      time_in_force: 'FOK',
    });
    expect([sell.status, sell.body.status, sell.body.filled_size, sell.body.time_in_force]).toEqual([
      200,
      'CANCELED',
      '0',
      'FOK',
    ]);
    expect((await rowOf('rita', a.token)).size).toBe(held);
    for (const tif of ['GTC']) {
      const r = await tr.post('rita', {
        symbol: a.token,
        side: 'buy',
        type: 'MARKET',
        quote_amount: '5',
        time_in_force: tif,
      });
      expect([r.status, r.body.error, r.body.message]).toEqual([
        400,
        'invalid_request',
        `time_in_force ${tif} is not used by MARKET orders: they are IOC (the default) or FOK (all or nothing)`,
      ]);
    }
  });

  it('offset/limit pages carry count, the rows on the page, beside total, limit, offset and has_more', async () => {
    const markets = await get(null, '/markets?limit=3&offset=2');
    expect(markets.status).toBe(200);
    expect(markets.body).toMatchObject({ count: 3, limit: 3, offset: 2, has_more: true });
    const last = await get(null, `/markets?limit=5&offset=${markets.body.total - 2}`);
    expect([last.status, last.body.count, last.body.markets.length, last.body.has_more]).toEqual([200, 2, 2, false]);
    const positions = await get('pam', '/positions?limit=1');
    expect([positions.status, positions.body.count, positions.body.positions.length]).toEqual([200, 1, 1]);
    for (const path of ['/orders/open', '/strategies', '/withdrawals']) {
      const r = await get('pam', `${path}?limit=500`);
      const key = Object.keys(r.body).find((k) => Array.isArray(r.body[k]))!;
      expect([r.status, r.body.count], path).toEqual([200, r.body[key].length]);
    }
  });
});
