import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { IdempotencyService } from '../../engine/idempotency.js';
import { validatorFor } from '../../api/validation.js';
import { ErrorEnvelope } from '../../schemas/common.js';
import { BalancesResponse, BookResponse, MarketsPage, PositionsPage } from '../../schemas/market.js';
import { OpenOrdersPage, OrderResponse, OrderView } from '../../schemas/orders.js';
import { SqliteStore } from '../../engine/store/sqlite.js';
import type { SimVenue } from '../../engine/venue/sim-venue.js';
import { FaultyStore } from '../engine/store/faulty-store.js';
import { startTestService, type TestService } from '../helpers.js';
import { poll } from './trading-kit.js';

function expectSchema(schema: object, body: unknown): void {
  const v = validatorFor(schema);
  expect(v(body), JSON.stringify(v.errors)).toBe(true);
}
function expectError(
  res: { status: number; body: any },
  status: number,
  error: string | RegExp,
  message?: RegExp,
): void {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expectSchema(ErrorEnvelope, res.body);
  if (typeof error === 'string') expect(res.body.error).toBe(error);
  else expect(res.body.error).toMatch(error);
  if (message) expect(res.body.message).toMatch(message);
}

describe('orders over REST on the simulated venue (SIM_REPLAY=off)', () => {
  let svc: TestService;
  let token: string; // a token of a 0.01-tick market
  let fineToken: string; // a 0.001-tick market
  const as = (user: string) => ({ 'x-partner-user-id': user });
  const post = (user: string, body: unknown) => svc.call('POST', '/v2/trade/order', { body, headers: as(user) });

  beforeAll(async () => {
    svc = await startTestService();
    for (const u of ['alice', 'bob']) await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: u } });
    const m = await svc.call('GET', '/v2/trade/markets?limit=500');
    expect(m.status).toBe(200);
    expectSchema(MarketsPage, m.body);
    expect(m.body.total).toBe(1113);
    token = m.body.markets.find((x: any) => x.tick_size === '0.01').tokens[0].token_id;
    fineToken = m.body.markets.find((x: any) => x.tick_size === '0.001').tokens[0].token_id;
  });
  afterAll(() => svc.close());

  const book = async (t = token) => (await svc.call('GET', `/v2/trade/book?token_id=${t}`)).body;

  it('serves markets and books of real markets; paging and limits are checked', async () => {
    const b = await svc.call('GET', `/v2/trade/book?token_id=${token}&depth=3`);
    expect(b.status).toBe(200);
    expectSchema(BookResponse, b.body);
    expect(b.body.bids).toHaveLength(3);
    expect(Number(b.body.bids[0].price)).toBeLessThan(Number(b.body.asks[0].price));
    expectError(await svc.call('GET', '/v2/trade/markets?limit=501'), 400, 'invalid_request', /at most 500/);
    expectError(await svc.call('GET', '/v2/trade/book'), 400, 'invalid_request', /token_id is required/);
    expectError(await svc.call('GET', '/v2/trade/book?token_id=42'), 404, 'not_found');
    const p2 = await svc.call('GET', '/v2/trade/markets?limit=2&offset=1000');
    expect(p2.body).toMatchObject({ total: 1113, limit: 2, offset: 1000, has_more: true });
    expect(p2.body.markets[0].question).toMatch(/MicroStrategy/);
  });

  it("a crossing LIMIT buy fills at the book's prices; balances and positions change by the fill", async () => {
    const before = await book();
    const ask0 = before.asks[0];
    const bal0 = await svc.call('GET', '/v2/trade/balances', { headers: as('alice') });
    expectSchema(BalancesResponse, bal0.body);
    expect(bal0.body).toEqual({ currency: 'pUSD', balance: '10000', reserved: '0', available: '10000' });
    const res = await post('alice', { symbol: token, side: 'buy', type: 'LIMIT', price: '0.99', size: '10' });
    expect(res.status).toBe(200);
    expectSchema(OrderResponse, res.body);
    expect(res.body).toMatchObject({
      type: 'LIMIT',
      status: 'FILLED',
      record_id: null,
      side: 'buy',
      price: '0.99',
      size: '10',
      filled_size: '10',
      remaining_size: '0',
      avg_price: ask0.price,
      builder_code_used: null,
    });
    const cost = (Number(ask0.price) * 10).toFixed(2);
    expect(Number(res.body.matched_amount).toFixed(2)).toBe(cost);
    const bal = await svc.call('GET', '/v2/trade/balances', { headers: as('alice') });
    expect(Number(bal.body.balance).toFixed(2)).toBe((10000 - Number(cost)).toFixed(2));
    const pos = await svc.call('GET', '/v2/trade/positions', { headers: as('alice') });
    expectSchema(PositionsPage, pos.body);
    expect(pos.body.positions).toEqual([
      expect.objectContaining({ token_id: token, size: '10', avg_price: ask0.price }),
    ]);
    expect((await book()).asks[0].size).toBe(String(Number(ask0.size) - 10));
  });

  it('a GTC bid below the touch rests, is open, cancels; 404 for another user, 409 when done', async () => {
    const res = await post('alice', {
      symbol: token,
      side: 'buy',
      type: 'LIMIT',
      price: '0.01',
      size: '20',
      client_order_id: 'c-1',
    });
    expect(res.body).toMatchObject({
      status: 'OPEN',
      filled_size: '0',
      remaining_size: '20',
      time_in_force: 'GTC',
      client_order_id: 'c-1',
    });
    const open = await svc.call('GET', '/v2/trade/orders/open', { headers: as('alice') });
    expectSchema(OpenOrdersPage, open.body);
    expect(open.body.orders).toEqual([
      expect.objectContaining({ order_id: res.body.order_id, is_stop_loss: false, is_take_profit: false }),
    ]);
    expect((await svc.call('GET', '/v2/trade/balances', { headers: as('alice') })).body.reserved).toBe('0.2');
    expectError(
      await svc.call('DELETE', `/v2/trade/orders/${res.body.order_id}`, { headers: as('bob') }),
      404,
      'not_found',
    );
    const del = await svc.call('DELETE', `/v2/trade/orders/${res.body.order_id}`, { headers: as('alice') });
    expect(del.status).toBe(200);
    expectSchema(OrderView, del.body);
    expect(del.body).toMatchObject({
      status: 'CANCELED',
      cancel_code: 'USER_CANCELED',
      cancel_reason: 'canceled by user',
      message: 'canceled by user',
    });
    expect(await svc.call('GET', `/v2/trade/orders/${res.body.order_id}`, { headers: as('alice') })).toMatchObject({
      status: 200,
      body: { status: 'CANCELED', cancel_code: 'USER_CANCELED' },
    });
    const activity = await svc.call('GET', '/v2/trade/activity', { headers: as('alice') });
    expect(activity.status).toBe(200);
    expect(activity.body.activity.find((a: any) => a.id === res.body.order_id)).toMatchObject({
      status: 'CANCELED',
      cancel_code: 'USER_CANCELED',
      cancel_reason: 'canceled by user',
    });
    expect((await svc.call('GET', '/v2/trade/orders/open', { headers: as('alice') })).body.total).toBe(0);
    expect((await svc.call('GET', '/v2/trade/balances', { headers: as('alice') })).body.reserved).toBe('0');
    expectError(
      await svc.call('DELETE', `/v2/trade/orders/${res.body.order_id}`, { headers: as('alice') }),
      409,
      'conflict',
      /already CANCELED/,
    );
    expectError(await svc.call('DELETE', '/v2/trade/orders/ord_nope', { headers: as('alice') }), 404, 'not_found');
  });

  it('IOC reports the actual filled_size; FOK fills all or nothing', async () => {
    const b = await book(fineToken);
    const ask = b.asks[0];
    const ioc = await post('bob', {
      symbol: fineToken,
      side: 'buy',
      type: 'LIMIT',
      price: ask.price,
      size: String(Number(ask.size) + 7),
      time_in_force: 'IOC',
    });
    expect(ioc.body).toMatchObject({
      status: 'CANCELED',
      filled_size: ask.size,
      remaining_size: '0',
      time_in_force: 'IOC',
    });
    const b2 = await book(fineToken);
    const fokTooBig = await post('bob', {
      symbol: fineToken,
      side: 'buy',
      type: 'LIMIT',
      price: b2.asks[0].price,
      size: String(Number(b2.asks[0].size) + 1),
      time_in_force: 'FOK',
    });
    expect(fokTooBig.body).toMatchObject({ status: 'CANCELED', filled_size: '0' });
    const fok = await post('bob', {
      symbol: fineToken,
      side: 'buy',
      type: 'LIMIT',
      price: b2.asks[0].price,
      size: b2.asks[0].size,
      time_in_force: 'FOK',
    });
    expect(fok.body).toMatchObject({ status: 'FILLED', filled_size: b2.asks[0].size });
  });

  it("the venue's answer to an order (accepted, fills, end) is one write of the order: revision 2", async () => {
    const b = await book(fineToken);
    const ask = b.asks[0];
    const ioc = await post('bob', {
      symbol: fineToken,
      side: 'buy',
      type: 'LIMIT',
      price: ask.price,
      size: String(Number(ask.size) + 3),
      time_in_force: 'IOC',
    });
    expect(ioc.body).toMatchObject({ status: 'CANCELED', filled_size: ask.size, revision: 2 });
    const resting = await post('bob', { symbol: fineToken, side: 'buy', type: 'LIMIT', price: '0.01', size: '5' });
    expect(resting.body).toMatchObject({ status: 'OPEN', revision: 2 });
    const again = await svc.call('GET', `/v2/trade/orders/${ioc.body.order_id}`, { headers: as('bob') });
    expect(again.body).toMatchObject({ status: 'CANCELED', filled_size: ask.size, revision: 2 });
  });

  it('MARKET buy of $5 fills; MARKET sell by size', async () => {
    const buy = await post('bob', { symbol: token, side: 'buy', type: 'MARKET', quote_amount: '5' });
    expect(buy.body).toMatchObject({
      type: 'MARKET',
      status: 'FILLED',
      price: null,
      size: null,
      quote_amount: '5',
      time_in_force: 'IOC',
    });
    expect(Number(buy.body.matched_amount)).toBeLessThanOrEqual(5);
    expect(Number(buy.body.matched_amount)).toBeGreaterThan(4.9);
    const sell = await post('bob', { symbol: token, side: 'sell', type: 'MARKET', size: '10' });
    expect(sell.body).toMatchObject({ status: 'FILLED', filled_size: '10' });
  });

  it('a GTD order expires at its time through the scheduler', async () => {
    const res = await post('alice', {
      symbol: token,
      side: 'buy',
      type: 'LIMIT',
      price: '0.02',
      size: '5',
      // far enough ahead to be in the future when a loaded machine validates it
      expiration: Date.now() + 2_000,
    });
    expect(res.body).toMatchObject({ status: 'OPEN', time_in_force: 'GTD' });
    for (let i = 0; i < 400; i++) {
      const rec = await svc.services.actors.get(res.body.order_id);
      if (rec?.status === 'EXPIRED') break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect((await svc.services.actors.get(res.body.order_id))?.status).toBe('EXPIRED');
    expect((await svc.call('GET', '/v2/trade/balances', { headers: as('alice') })).body.reserved).toBe('0');
  });

  it.each([
    [{ price: '72' }, 400, 'price must be a decimal probability 0.001–0.999; received 72 — did you mean 0.72?'],
    [{ price: '0.0005' }, 400, 'invalid_request', /0\.001–0\.999/],
    [{ price: '0.505' }, 400, 'invalid_request', /not on this market's tick size 0\.01/],
    [{ size: '4' }, 400, 'invalid_request', /minimum of 5 shares/],
    [{ size: '5.555' }, 400, 'invalid_request', /at most 2 decimals/],
    [
      { time_in_force: 'GTC', expiration: Date.now() + 60_000 },
      400,
      'invalid_request',
      /cannot be combined with expiration/,
    ],
    // seconds for a future time: the millisecond value is suggested (only when it is itself valid)
    [
      { expiration: Math.floor(Date.now() / 1000) + 86_400 },
      400,
      'invalid_request',
      /did you mean \d+000 \(milliseconds\)\?/,
    ],
    [{ surprise: 1 }, 400, 'invalid_request', /unknown property 'surprise'/],
    [{ execution: { clip_size: '5' } }, 400, 'invalid_request', /execution is not used by LIMIT/],
    [{ take_profit: { price: '0.9', extra: 1 } }, 400, 'invalid_request', /take_profit: unknown property 'extra'/],
    [{ price: undefined }, 400, 'invalid_request', /price is required/],
    [{ size: '2000000' }, 422, 'INSUFFICIENT_BALANCE', /needs \$20000 pUSD/],
    [{ side: 'sell', size: '1000' }, 422, /^Not enough shares to place this sell — holding 10/],
  ])('LIMIT %j → %i %s', async (patch, status, error, message?) => {
    const body = { symbol: token, side: 'buy', type: 'LIMIT', price: '0.01', size: '10', ...patch } as Record<
      string,
      unknown
    >;
    for (const k of Object.keys(body)) if (body[k] === undefined) delete body[k];
    const openBefore = (await svc.call('GET', '/v2/trade/orders/open', { headers: as('alice') })).body.total;
    expectError(await post('alice', body), status as number, error as string, message as RegExp | undefined);
    expect((await svc.call('GET', '/v2/trade/orders/open', { headers: as('alice') })).body.total).toBe(openBefore);
  });

  it.each([
    [{ side: 'buy', quote_amount: '0.5' }, /at least \$1/],
    [{ side: 'buy' }, /^quote_amount is required for a MARKET buy \(dollars\)$/],
    [{ side: 'buy', quote_amount: '5', price: '0.5' }, /price is not used by MARKET/],
    [{ side: 'sell' }, /^size is required for a MARKET sell \(shares\)$/],
    [
      { side: 'buy', quote_amount: '5', time_in_force: 'GTC' },
      /^time_in_force GTC is not used by MARKET orders: they are IOC \(the default\) or FOK \(all or nothing\)$/,
    ],
  ])('MARKET %j → 400', async (patch, message) => {
    expectError(await post('bob', { symbol: token, type: 'MARKET', ...patch }), 400, 'invalid_request', message);
  });

  it('a sell takes its shares out at average cost in micro-dollars: cost_usd at most 6 decimals', async () => {
    // bob buys 10 and 13 shares (fills at the book's asks), then sells 7: 7/size of the cost is a
    // decimal that does not end (unrounded, cost_usd would carry 38 decimals)
    const t = fineToken;
    for (const size of ['10', '13'])
      expect((await post('bob', { symbol: t, side: 'buy', type: 'LIMIT', price: '0.99', size })).body.status).toBe(
        'FILLED',
      );
    const before = (await svc.call('GET', '/v2/trade/positions', { headers: as('bob') })).body.positions.find(
      (p: any) => p.token_id === t,
    );
    const sold = await post('bob', { symbol: t, side: 'sell', type: 'MARKET', size: '7' });
    expect(sold.body).toMatchObject({ status: 'FILLED', filled_size: '7' });
    const pos = await svc.call('GET', '/v2/trade/positions', { headers: as('bob') });
    expectSchema(PositionsPage, pos.body);
    const after = pos.body.positions.find((p: any) => p.token_id === t);
    const costOut = ((Number(before.cost_usd) * 7) / Number(before.size)).toFixed(6);
    expect(after).toMatchObject({ size: String(Number(before.size) - 7) });
    expect(after.cost_usd).toMatch(/^\d+(\.\d{1,6})?$/);
    expect(Math.abs(Number(after.cost_usd) - (Number(before.cost_usd) - Number(costOut)))).toBeLessThan(1e-9);
  });

  it("an order's id is ord_ + its request's resource seed (Idempotency-Key): LIMIT, TAKE_PROFIT", async () => {
    const seeds = vi.spyOn(IdempotencyService, 'resourceSeed');
    try {
      const bid = await post('alice', { symbol: token, side: 'buy', type: 'LIMIT', price: '0.02', size: '10' });
      expect(bid).toMatchObject({
        status: 200,
        body: { status: 'OPEN', order_id: `ord_${seeds.mock.results[0]!.value}` },
      });
      const buy = { symbol: token, side: 'buy', type: 'LIMIT', price: '0.99', size: '10', time_in_force: 'IOC' };
      expect(await post('alice', buy)).toMatchObject({ status: 200, body: { status: 'FILLED' } });
      const tp = await post('alice', { symbol: token, side: 'sell', type: 'TAKE_PROFIT', price: '0.98', size: '10' });
      expect(tp).toMatchObject({
        status: 200,
        body: { status: 'OPEN', is_take_profit: true, order_id: `ord_${seeds.mock.results[2]!.value}` },
      });
      expect(seeds).toHaveBeenCalledTimes(3);
    } finally {
      seeds.mockRestore();
    }
  });

  it('unknown symbols 400 (brackets: test/api/strategies.test.ts)', async () => {
    expectError(
      await post('bob', { symbol: '999', side: 'buy', type: 'LIMIT', price: '0.5', size: '10' }),
      400,
      'invalid_request',
      /not an outcome token/,
    );
  });
});

describe("a user's orders while the venue's answer to an earlier one is still being written", () => {
  it('the next order is checked and placed at once, against the funds the first reserved; both OPEN', async () => {
    const store = new FaultyStore(await SqliteStore.open(null));
    const svc = await startTestService({ store, env: { SIM_MAKER_REFILL_MS: '3600000', SIM_INITIAL_PUSD: '1000' } });
    let journal: ReturnType<FaultyStore['hold']> | undefined;
    try {
      const headers = { 'x-partner-user-id': 'erin' };
      await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'erin' } });
      const markets = (await svc.call('GET', '/v2/trade/markets?limit=500')).body.markets;
      const token = markets.find((m: any) => m.tick_size === '0.01').tokens[0].token_id;
      await (svc.services.venue as SimVenue).whenWritten();
      // the venue's next journal write (the first order's acceptance) waits: its answer cannot be recorded
      journal = store.hold({ collections: ['venueJournal'] });
      // $400 each, resting below the bid: the funds stay reserved
      const body = { symbol: token, side: 'buy', type: 'LIMIT', price: '0.05', size: '8000' };
      const first = svc.call('POST', '/v2/trade/order', { body, headers });
      await poll(
        "the first order's journal write held",
        async () => journal!.fired,
        (n) => n === 1,
      );
      const second = svc.call('POST', '/v2/trade/order', { body, headers });
      const balances = await poll(
        'both orders reserved at the venue',
        async () => (await svc.call('GET', '/v2/trade/balances', { headers })).body,
        (b) => b.reserved === '800',
      );
      expect(balances).toMatchObject({ balance: '1000', reserved: '800', available: '200' });
      // a third beyond what is left is refused up front, while the first two still wait
      const third = await svc.call('POST', '/v2/trade/order', { body, headers });
      expect(third).toMatchObject({
        status: 422,
        body: { error: 'INSUFFICIENT_BALANCE', message: 'this buy needs $400 pUSD; available $200' },
      });
      journal.release();
      const answers = await Promise.all([first, second]);
      for (const a of answers) {
        expect(a.status, JSON.stringify(a.body)).toBe(200);
        expectSchema(OrderResponse, a.body);
        expect(a.body).toMatchObject({ status: 'OPEN', price: '0.05', size: '8000', filled_size: '0' });
      }
      const act = (await svc.call('GET', '/v2/trade/activity?limit=10', { headers })).body.activity;
      expect(act.map((a: any) => [a.kind, a.status])).toEqual([
        ['order', 'OPEN'],
        ['order', 'OPEN'],
      ]);
    } finally {
      journal?.release();
      await svc.close();
    }
  });
});
