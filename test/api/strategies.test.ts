import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { StrategyContext } from '../../machines/strategy-kit.js';
import { sellThrough as sellThroughBids, tokenPicker } from './trading-kit.js';
import { startTestService, type TestService } from '../helpers.js';

/**
 * Scenario tests of the managed strategies on static books (SIM_REPLAY=off, no liquidity
 * provider refill): a second user ("bob") moves the touch by trading, as a partner would see it.
 */
/** A price as the API writes it (decimal string, no trailing zeros). */
const px = (x: number) => String(Number(x.toFixed(2)));

describe('managed strategies over REST', () => {
  let svc: TestService;
  let markets: any[];
  const as = (u: string) => ({ 'x-partner-user-id': u });
  const post = (u: string, body: unknown) => svc.call('POST', '/v2/trade/order', { body, headers: as(u) });
  const book = async (t: string) => (await svc.call('GET', `/v2/trade/book?token_id=${t}&depth=10`)).body;
  const strategy = async (u: string, id: string) =>
    (await svc.call('GET', '/v2/trade/strategies?limit=500', { headers: as(u) })).body.strategies.find(
      (s: any) => s.record_id === id,
    );
  const whenQuiet = () => svc.services.strategies.idle();
  /** A 0.01-tick token with a two-tick spread whose best bid lies in [minBid, maxBid], books untouched. */
  const freshToken = tokenPicker(() => markets, book);
  /** bob sells into the bids down to (and including) price `p`, so the best bid ends below `p`. */
  const sellThrough = (token: string, p: string) => sellThroughBids(post, book, token, p);

  beforeAll(async () => {
    svc = await startTestService({ env: { SIM_MAKER_REFILL_MS: '3600000', SIM_INITIAL_PUSD: '1000000' } });
    for (const u of ['alice', 'bob']) await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: u } });
    markets = (await svc.call('GET', '/v2/trade/markets?limit=500')).body.markets;
  });
  afterAll(() => svc.close());

  it('STOP_LOSS: armed, fires into a sell with is_stop_loss when the bid reaches it; DELETE then 409', async () => {
    const { token, bid } = await freshToken(0.3);
    await post('alice', { symbol: token, side: 'buy', type: 'LIMIT', price: '0.99', size: '10', time_in_force: 'IOC' });
    const level = px(bid - 0.01);
    const tooHigh = await post('alice', { symbol: token, side: 'sell', type: 'STOP_LOSS', price: px(bid), size: '10' });
    expect(tooHigh).toMatchObject({ status: 422, body: { message: expect.stringMatching(/would trigger at once/) } });
    const over = await post('alice', { symbol: token, side: 'sell', type: 'STOP_LOSS', price: level, size: '1000' });
    expect(over).toMatchObject({
      status: 422,
      body: { error: expect.stringMatching(/^Not enough shares to place this sell — holding 10/) },
    });
    const res = await post('alice', { symbol: token, side: 'sell', type: 'STOP_LOSS', price: level, size: '10' });
    // spec 2.4: filled_size null until execution, in the POST answer as in the strategy list
    expect(res).toMatchObject({
      status: 200,
      body: {
        type: 'STOP_LOSS',
        order_id: null,
        status: 'ACTIVE',
        price: level,
        size: '10',
        filled_size: null,
        remaining_size: '10',
        message: expect.stringMatching(/armed/),
      },
    });
    const id = res.body.record_id;
    expect(await strategy('alice', id)).toMatchObject({
      status: 'ACTIVE',
      price: level,
      executed_price: null,
      filled_size: null,
    });
    // the type stored when it was armed (its view is derived only when read) serves the type filter
    const stops = await svc.call('GET', '/v2/trade/strategies?type=STOP_LOSS&status=ACTIVE', { headers: as('alice') });
    expect(stops).toMatchObject({
      status: 200,
      body: { strategies: expect.arrayContaining([expect.objectContaining({ record_id: id, type: 'STOP_LOSS' })]) },
    });
    // the bid falls to the armed level: bob sells through the top bid level
    await sellThrough(token, px(bid));
    await whenQuiet();
    const s = await strategy('alice', id);
    expect(s.status).toMatch(/TRIGGERED|COMPLETED/);
    expect(s.price).toBe(level);
    expect(s.order_ids).toHaveLength(1);
    const child = (await svc.call('GET', '/v2/trade/activity?limit=200', { headers: as('alice') })).body.activity.find(
      (a: any) => a.id === s.order_ids[0],
    );
    expect(child).toMatchObject({ kind: 'order', side: 'sell', price: level });
    expect(s).toMatchObject({ status: 'COMPLETED', filled_size: '10', executed_price: level });
    const del = await svc.call('DELETE', `/v2/trade/strategies/${id}`, { headers: as('alice') });
    expect(del).toMatchObject({ status: 409, body: { error: 'conflict' } });
  });

  it("a triggered stop's resting sell shows is_stop_loss: true; DELETE strategy → 409 naming the order", async () => {
    const { token, bid, bids } = await freshToken(0.3);
    await post('alice', {
      symbol: token,
      side: 'buy',
      type: 'LIMIT',
      price: '0.99',
      size: '2000',
      time_in_force: 'IOC',
    });
    const level = px(bid - 0.01);
    const depthAtLevel = Number(bids.find((l: any) => l.price === level)?.size ?? 0);
    const size = String(depthAtLevel + 50); // more than the bid at the level: the rest rests
    const res = await post('alice', { symbol: token, side: 'sell', type: 'STOP_LOSS', price: level, size });
    await sellThrough(token, px(bid));
    await whenQuiet();
    const s = await strategy('alice', res.body.record_id);
    expect(s.status).toBe('TRIGGERED');
    const open = (await svc.call('GET', '/v2/trade/orders/open', { headers: as('alice') })).body.orders;
    const child = open.find((o: any) => o.order_id === s.order_ids[0]);
    expect(child).toMatchObject({
      is_stop_loss: true,
      side: 'sell',
      price: level,
      status: 'PARTIALLY_FILLED',
      record_id: res.body.record_id,
    });
    const del = await svc.call('DELETE', `/v2/trade/strategies/${res.body.record_id}`, { headers: as('alice') });
    expect(del.status).toBe(409);
    expect(del.body.message).toContain(`DELETE /v2/trade/orders/${child.order_id}`);
    // canceling the order ends the strategy with what filled
    await svc.call('DELETE', `/v2/trade/orders/${child.order_id}`, { headers: as('alice') });
    await whenQuiet();
    expect(await strategy('alice', res.body.record_id)).toMatchObject({
      status: 'COMPLETED',
      filled_size: String(depthAtLevel),
    });
  });

  it('DELETE of an untriggered stop cancels it; another user gets 404', async () => {
    const { token, bid } = await freshToken(0.3);
    await post('alice', { symbol: token, side: 'buy', type: 'LIMIT', price: '0.99', size: '10', time_in_force: 'IOC' });
    const res = await post('alice', {
      symbol: token,
      side: 'sell',
      type: 'STOP_LOSS',
      price: px(bid - 0.05),
      size: '5',
    });
    expect(
      (await svc.call('DELETE', `/v2/trade/strategies/${res.body.record_id}`, { headers: as('bob') })).status,
    ).toBe(404);
    const del = await svc.call('DELETE', `/v2/trade/strategies/${res.body.record_id}`, { headers: as('alice') });
    expect(del).toMatchObject({ status: 200, body: { status: 'CANCELED', record_id: res.body.record_id } });
    expect(
      (await svc.call('DELETE', `/v2/trade/strategies/${res.body.record_id}`, { headers: as('alice') })).status,
    ).toBe(409);
  });

  it('TRAILING_STOP: follows the bid up, fires exactly when it falls back by the offset (exact numbers)', async () => {
    const { token, bid } = await freshToken(0.4);
    const b = px(bid);
    await post('alice', { symbol: token, side: 'buy', type: 'LIMIT', price: '0.99', size: '10', time_in_force: 'IOC' });
    // mark 0.02 under the bid, offset 0.03: the bid is above the mark, so the mark rises to the bid at once
    const mark = px(bid - 0.02);
    const res = await post('alice', {
      symbol: token,
      side: 'sell',
      type: 'TRAILING_STOP',
      size: '10',
      execution: { high_water_mark: mark, trailing_offset: '0.03' },
    });
    expect(res).toMatchObject({ status: 200, body: { status: 'ACTIVE', record_id: expect.any(String) } });
    await whenQuiet();
    let s = await strategy('alice', res.body.record_id);
    expect(s).toMatchObject({ high_water_mark: b, price: px(bid - 0.03), trigger_price: px(bid - 0.03) });
    // bob bids one tick higher: the mark follows
    const up = px(bid + 0.01);
    const bobBid = await post('bob', { symbol: token, side: 'buy', type: 'LIMIT', price: up, size: '5' });
    await whenQuiet();
    s = await strategy('alice', res.body.record_id);
    expect(s).toMatchObject({ high_water_mark: up, price: px(bid - 0.02), status: 'ACTIVE' });
    // the message follows the state: it names the armed level, which is the trigger_price
    expect(s.message).toBe(
      `TRAILING_STOP armed at ${px(bid - 0.02)} (high-water mark ${up}, followed the bid up); follows the bid up`,
    );
    expect(s.trigger_price).toBe(px(bid - 0.02));
    // the bid comes back down to the old level: above the armed level, nothing fires
    await svc.call('DELETE', `/v2/trade/orders/${bobBid.body.order_id}`, { headers: as('bob') });
    await whenQuiet();
    expect((await strategy('alice', res.body.record_id)).status).toBe('ACTIVE');
    // bob sells through the top bid: the bid is now one tick lower (bid − 0.01): still above bid − 0.02
    await sellThrough(token, b);
    await whenQuiet();
    expect((await strategy('alice', res.body.record_id)).status).toBe('ACTIVE');
    // and through the next level: the bid reaches bid − 0.02 = the armed level → fires there
    await sellThrough(token, px(bid - 0.01));
    await whenQuiet();
    s = await strategy('alice', res.body.record_id);
    expect(s).toMatchObject({
      status: 'COMPLETED',
      filled_size: '10',
      executed_price: px(bid - 0.02),
      high_water_mark: up,
    });
    expect(s.message).toBe('the trailing-stop sell order is done');
  });

  it('TRAILING_BUY: buys on the bounce, never past its ceiling, and stays armed for a cheaper ask', async () => {
    const { token, ask, asks } = await freshToken(0.2, 0.6);
    const a = (x: number) => px(ask + x);
    // a ceiling below the entry the offset implies is refused at arm time
    const bad = await post('alice', {
      symbol: token,
      side: 'buy',
      type: 'TRAILING_BUY',
      quote_amount: '5',
      execution: { trailing_offset: '0.02', price_ceiling: a(0.01) },
    });
    expect(bad).toMatchObject({
      status: 400,
      body: { message: expect.stringMatching(/price_ceiling .* is below the entry/) },
    });
    // low-water mark seeded from the ask; entry at ask + 0.02; ceiling ask + 0.02
    const res = await post('alice', {
      symbol: token,
      side: 'buy',
      type: 'TRAILING_BUY',
      quote_amount: '5',
      execution: { trailing_offset: '0.02', price_ceiling: a(0.02) },
    });
    expect(res).toMatchObject({ status: 200, body: { status: 'ACTIVE', price: a(0.02) } });
    await whenQuiet();
    expect(await strategy('alice', res.body.record_id)).toMatchObject({ low_water_mark: a(0), trigger_price: a(0.02) });
    // bob lifts the asks up to ask + 0.03 in one go: the ask gaps past the ceiling → no entry
    const through = asks
      .filter((l: any) => Number(l.price) <= ask + 0.025)
      .reduce((x: number, l: any) => x + Number(l.size), 0);
    await post('bob', {
      symbol: token,
      side: 'buy',
      type: 'LIMIT',
      price: a(0.02),
      size: String(through),
      time_in_force: 'IOC',
    });
    await whenQuiet();
    expect((await book(token)).asks[0].price).toBe(a(0.03));
    expect((await strategy('alice', res.body.record_id)).status).toBe('ACTIVE');
    // bob offers at the ceiling: the ask is back within it → the entry fires at that ask
    await post('bob', { symbol: token, side: 'sell', type: 'LIMIT', price: a(0.02), size: '100' });
    await whenQuiet();
    const s = await strategy('alice', res.body.record_id);
    const shares = (Math.floor((5 / (ask + 0.02)) * 100) / 100).toString();
    expect(s).toMatchObject({ status: 'COMPLETED', executed_price: a(0.02), filled_size: shares });
  });

  it('TWAP 10 s / 30 s: 3 slices on schedule adding up to the order; price derived and echoed', async () => {
    const { token, ask } = await freshToken(0.2, 0.6);
    const res = await post('alice', {
      symbol: token,
      side: 'buy',
      type: 'TWAP',
      size: '100',
      execution: { interval_sec: 10, duration_sec: 30, clip_size: '5', randomize_pct: 10 },
    });
    expect(res).toMatchObject({
      status: 200,
      body: { type: 'TWAP', status: 'ACTIVE', order_id: null, price: px(ask) },
    });
    expect(res.body.message).toMatch(
      new RegExp(`3 slices every 10 s, limit ${px(ask)} \\(derived from the live touch: best ask\\)`),
    );
    expect(res.body.warnings).toEqual([
      'execution.clip_size is ignored for TWAP orders',
      'execution.randomize_pct is ignored for TWAP orders',
    ]);
    const id = res.body.record_id;
    await whenQuiet();
    let s = await strategy('alice', id);
    expect(s).toMatchObject({ slices_done: 1, slices_total: 3, filled_size: '33.33' });
    expect(s.next_slice_at - s.created_at).toBeGreaterThan(9_900);
    expect(s.next_slice_at - s.created_at).toBeLessThanOrEqual(10_000);
    for (const k of [2, 3]) {
      const c = svc.services.host.snapshotOf(id)!.context as StrategyContext;
      await svc.services.host.deliverTimer({ actorId: id, timerName: 'slice', atMs: c.deadlines.slice! });
      await whenQuiet();
      s = await strategy('alice', id);
      expect(s.slices_done).toBe(k);
    }
    expect(s).toMatchObject({
      status: 'COMPLETED',
      filled_size: '100',
      order_ids: [expect.any(String), expect.any(String), expect.any(String)],
    });
    const sizes = (await svc.call('GET', '/v2/trade/activity?limit=200', { headers: as('alice') })).body.activity
      .filter((a: any) => s.order_ids.includes(a.id))
      .map((a: any) => Number(a.size));
    expect(sizes.sort()).toEqual([33.33, 33.33, 33.34]);
    // a stale or duplicate slice timer changes nothing
    await svc.services.host.deliverTimer({ actorId: id, timerName: 'slice', atMs: s.created_at + 20_000 });
    expect((await strategy('alice', id)).revision).toBe(s.revision);
  });

  it('ICEBERG: one clip at a time, parent totals on the record; a crossing price → 422 crosses book', async () => {
    const { token, bid, ask } = await freshToken(0.2, 0.6);
    const crossing = await post('alice', {
      symbol: token,
      side: 'buy',
      type: 'ICEBERG',
      price: px(ask),
      size: '30',
      execution: { clip_size: '10' },
    });
    expect(crossing).toMatchObject({ status: 422, body: { error: 'order crosses book' } });
    const tiny = await post('alice', {
      symbol: token,
      side: 'buy',
      type: 'ICEBERG',
      price: '0.05',
      size: '30',
      execution: { clip_size: '10' },
    });
    expect(tiny.body.message).toMatch(/at least \$1/);
    const notLess = await post('alice', {
      symbol: token,
      side: 'buy',
      type: 'ICEBERG',
      price: px(bid),
      size: '10',
      execution: { clip_size: '10' },
    });
    expect(notLess.body.message).toMatch(/must be less than size/);
    const price = px(bid + 0.01); // inside the spread: the clip is the best bid
    const res = await post('alice', {
      symbol: token,
      side: 'buy',
      type: 'ICEBERG',
      price,
      size: '30',
      execution: { clip_size: '10' },
    });
    expect(res).toMatchObject({ status: 200, body: { status: 'ACTIVE', record_id: expect.any(String) } });
    const id = res.body.record_id;
    const clips = async () =>
      (await svc.call('GET', '/v2/trade/orders/open', { headers: as('alice') })).body.orders.filter(
        (o: any) => o.record_id === id,
      );
    expect(await clips()).toMatchObject([{ size: '10', price, status: 'OPEN' }]);
    // bob hits the clip twice: each time the next clip appears, one at a time
    for (let i = 1; i <= 2; i++) {
      await post('bob', { symbol: token, side: 'buy', type: 'LIMIT', price: '0.99', size: '10', time_in_force: 'IOC' });
      await post('bob', { symbol: token, side: 'sell', type: 'LIMIT', price, size: '10', time_in_force: 'IOC' });
      await whenQuiet();
      const open = await clips();
      expect(open).toHaveLength(1);
      expect(await strategy('alice', id)).toMatchObject({ slices_done: i + 1, filled_size: String(10 * i) });
    }
    await post('bob', { symbol: token, side: 'buy', type: 'LIMIT', price: '0.99', size: '10', time_in_force: 'IOC' });
    await post('bob', { symbol: token, side: 'sell', type: 'LIMIT', price, size: '10', time_in_force: 'IOC' });
    await whenQuiet();
    expect(await clips()).toHaveLength(0);
    expect(await strategy('alice', id)).toMatchObject({
      status: 'COMPLETED',
      filled_size: '30',
      executed_price: price,
    });
  });

  it('ICEBERG price_tolerance_pct: drift auto-cancels the working clip', async () => {
    const { token, bid } = await freshToken(0.3, 0.6);
    const price = px(bid);
    const res = await post('alice', {
      symbol: token,
      side: 'buy',
      type: 'ICEBERG',
      price,
      size: '30',
      execution: { clip_size: '10', price_tolerance_pct: 5 },
    });
    const id = res.body.record_id;
    // bob lifts the asks beyond 5 % above the price: the market ran away from the iceberg
    const b = await book(token);
    const limit = bid * 1.05;
    const size = b.asks
      .filter((l: any) => Number(l.price) <= limit)
      .reduce((x: number, l: any) => x + Number(l.size), 0);
    expect(size).toBeGreaterThan(0);
    await post('bob', {
      symbol: token,
      side: 'buy',
      type: 'LIMIT',
      price: px(Math.floor(limit * 100) / 100),
      size: String(size),
      time_in_force: 'IOC',
    });
    expect(Number((await book(token)).asks[0].price)).toBeGreaterThan(limit);
    await whenQuiet();
    expect(await strategy('alice', id)).toMatchObject({ status: 'CANCELED', message: expect.stringMatching(/drift/) });
    expect(
      (await svc.call('GET', '/v2/trade/orders/open', { headers: as('alice') })).body.orders.filter(
        (o: any) => o.record_id === id,
      ),
    ).toHaveLength(0);
  });

  it('PEGGED: rests at the touch, re-pegs within its ceiling; DELETE cancels it and its order', async () => {
    const { token, bid } = await freshToken(0.2, 0.6);
    const res = await post('alice', {
      symbol: token,
      side: 'buy',
      type: 'PEGGED',
      budget_usdc: '20',
      price_ceiling: Number(px(bid + 0.01)),
    });
    expect(res).toMatchObject({ status: 200, body: { type: 'PEGGED', status: 'ACTIVE' } });
    const id = res.body.record_id;
    const pegs = async () =>
      (await svc.call('GET', '/v2/trade/orders/open', { headers: as('alice') })).body.orders.filter(
        (o: any) => o.record_id === id,
      );
    expect(await pegs()).toMatchObject([{ price: px(bid), status: 'OPEN' }]);
    // bob improves the bid by a tick: the peg follows (cancel + re-place), ceiling allows it
    await post('bob', { symbol: token, side: 'buy', type: 'LIMIT', price: px(bid + 0.01), size: '5' });
    await whenQuiet();
    expect(await pegs()).toMatchObject([{ price: px(bid + 0.01) }]);
    const del = await svc.call('DELETE', `/v2/trade/strategies/${id}`, { headers: as('alice') });
    expect(del).toMatchObject({ status: 200, body: { status: 'CANCELED' } });
    expect(await pegs()).toHaveLength(0);
  });

  it('TAKE_PROFIT is a real CLOB sell placed at once (open orders, is_take_profit), not a strategy', async () => {
    const { token, ask } = await freshToken(0.2, 0.6);
    await post('alice', { symbol: token, side: 'buy', type: 'LIMIT', price: '0.99', size: '10', time_in_force: 'IOC' });
    const res = await post('alice', {
      symbol: token,
      side: 'sell',
      type: 'TAKE_PROFIT',
      price: px(ask + 0.05),
      size: '10',
    });
    expect(res).toMatchObject({
      status: 200,
      body: { type: 'TAKE_PROFIT', record_id: null, status: 'OPEN', is_take_profit: true },
    });
    const open = (await svc.call('GET', '/v2/trade/orders/open', { headers: as('alice') })).body.orders;
    expect(open.find((o: any) => o.order_id === res.body.order_id)).toMatchObject({
      is_take_profit: true,
      is_stop_loss: false,
    });
    const strategies = (await svc.call('GET', '/v2/trade/strategies', { headers: as('alice') })).body.strategies;
    expect(strategies.some((s: any) => s.record_id === res.body.order_id)).toBe(false);
  });

  describe('brackets (take_profit / stop_loss on a buy entry)', () => {
    const open = async (u: string) =>
      (await svc.call('GET', '/v2/trade/orders/open?limit=500', { headers: as(u) })).body.orders as any[];
    /** bob buys every ask up to and including `p`, so the best ask ends above `p`. */
    const buyThrough = async (token: string, p: string) => {
      const b = await book(token);
      const size = b.asks
        .filter((l: any) => Number(l.price) <= Number(p))
        .reduce((a: number, l: any) => a + Number(l.size), 0);
      const r = await post('bob', {
        symbol: token,
        side: 'buy',
        type: 'LIMIT',
        price: p,
        size: String(size),
        time_in_force: 'IOC',
      });
      expect(r.body.filled_size).toBe(String(size));
    };

    it('a filled LIMIT entry places its take-profit, arms its stop; the stop fires: take-profit canceled', async () => {
      const { token, bid, ask } = await freshToken(0.3, 0.7);
      const tp = px(ask + 0.1);
      const sl = px(bid - 0.01);
      const res = await post('alice', {
        symbol: token,
        side: 'buy',
        type: 'LIMIT',
        price: px(ask),
        size: '10',
        take_profit: { price: tp },
        stop_loss: { price: sl },
      });
      expect(res).toMatchObject({
        status: 200,
        body: { type: 'LIMIT', status: 'FILLED', filled_size: '10', record_id: null },
      });
      const rid = res.body.bracket_id;
      expect(rid).toMatch(/^stg_/);
      expect(res.body.brackets).toEqual({
        take_profit: { order_id: `ord_${rid}_1`, id: rid, status: 'OPEN', error: null, price: tp, size: '10' },
        stop_loss: { order_id: null, id: rid, status: 'ARMED', error: null, price: sl, size: '10' },
      });
      expect(res.body.warnings).toBeUndefined();
      // every leg carries its bracket's id, as the entry does
      expect((await open('alice')).find((o: any) => o.order_id === `ord_${rid}_1`)).toMatchObject({
        is_take_profit: true,
        side: 'sell',
        price: tp,
        size: '10',
        record_id: rid,
        bracket_id: rid,
      });
      expect(await svc.call('GET', `/v2/trade/orders/${res.body.order_id}`, { headers: as('alice') })).toMatchObject({
        status: 200,
        body: { bracket_id: rid, record_id: null },
      });
      expect(await strategy('alice', rid)).toMatchObject({
        type: 'BRACKET',
        status: 'ACTIVE',
        entry_order_id: res.body.order_id,
        price: sl,
        filled_size: null,
      });
      // the message follows the state: what protects the filled shares now
      expect((await strategy('alice', rid)).message).toBe(
        `brackets: entry ${res.body.order_id} filled 10 shares; take-profit of 10 shares at ${tp}, ` +
          `stop-loss of 10 shares armed at ${sl} on the best bid`,
      );
      // the bid falls to the stop: the take-profit (holding the shares) is canceled, then the stop sells
      await sellThrough(token, px(bid));
      await whenQuiet();
      const s = await strategy('alice', rid);
      expect(s).toMatchObject({
        status: 'COMPLETED',
        filled_size: '10',
        executed_price: sl,
        order_ids: [`ord_${rid}_1`, `ord_${rid}_2`],
      });
      expect(s.brackets.take_profit).toMatchObject({ status: 'CANCELED', error: null });
      expect(s.brackets.stop_loss).toMatchObject({ order_id: `ord_${rid}_2`, status: 'FILLED' });
      // the take-profit says why it was canceled (one cancels the
      // other), not "canceled by user"; both legs carry the bracket's id
      expect(await svc.call('GET', `/v2/trade/orders/ord_${rid}_1`, { headers: as('alice') })).toMatchObject({
        status: 200,
        body: {
          status: 'CANCELED',
          is_take_profit: true,
          bracket_id: rid,
          record_id: rid,
          cancel_code: 'BRACKET_STOP_FIRED',
          cancel_reason: expect.stringMatching(
            new RegExp(`^BRACKET ${rid}: stop-loss fired \\(best bid [0-9.]+ reached ${sl}\\): take-profit canceled`),
          ),
        },
      });
      expect(await svc.call('GET', `/v2/trade/orders/ord_${rid}_2`, { headers: as('alice') })).toMatchObject({
        status: 200,
        body: { status: 'FILLED', is_stop_loss: true, bracket_id: rid, record_id: rid },
      });
      expect((await open('alice')).some((o: any) => o.order_id.startsWith(`ord_${rid}`))).toBe(false);
    });

    it('the take-profit fills: the stop is disarmed (one cancels the other)', async () => {
      const { token, ask } = await freshToken(0.3, 0.7);
      const tp = px(ask + 0.01);
      const res = await post('alice', {
        symbol: token,
        side: 'buy',
        type: 'LIMIT',
        price: px(ask),
        size: '10',
        take_profit: { price: tp, size: '0' },
        stop_loss: { price: '0.1' },
      });
      const rid = res.body.bracket_id;
      await buyThrough(token, tp); // bob takes every ask up to the take-profit price, alice's included
      await whenQuiet();
      const s = await strategy('alice', rid);
      expect(s).toMatchObject({ status: 'COMPLETED', filled_size: '10', executed_price: tp });
      expect(s.brackets).toMatchObject({
        take_profit: { status: 'FILLED' },
        stop_loss: { status: 'CANCELED', order_id: null },
      });
    });

    it('partial fills: legs follow the filled size; a leg below the minimum fails, the entry stands', async () => {
      const { token, ask, asks } = await freshToken(0.3, 0.7);
      const depth = Number(asks[0]!.size);
      const res = await post('alice', {
        symbol: token,
        side: 'buy',
        type: 'LIMIT',
        price: px(ask),
        size: String(depth + 40),
        time_in_force: 'IOC',
        take_profit: { price: px(ask + 0.1), size: '5' },
        stop_loss: { price: '0.1' },
      });
      expect(res.body).toMatchObject({ status: 'CANCELED', filled_size: String(depth) });
      expect(res.body.brackets.take_profit).toMatchObject({ size: '5', status: 'OPEN' });
      expect(res.body.brackets.stop_loss).toMatchObject({ size: String(depth), status: 'ARMED' });
      expect(res.body.warnings).toBeUndefined();
      // a leg asking for more shares than the entry filled protects the fill, with the reference's warning
      const { token: t1, ask: a1 } = await freshToken(0.3, 0.7);
      const capped = await post('alice', {
        symbol: t1,
        side: 'buy',
        type: 'MARKET',
        quote_amount: '5',
        take_profit: { price: px(a1 + 0.1), size: '1000' },
      });
      expect(capped.status).toBe(200);
      expect(capped.body.brackets.take_profit).toMatchObject({ size: capped.body.filled_size });
      expect(capped.body.warnings).toEqual(['bracket size capped to fill size']);
      // an IOC entry that fills 3 shares: a 3-share take-profit is below the market minimum of 5
      const { token: t2, ask: a2 } = await freshToken(0.3, 0.7);
      const small = await post('alice', {
        symbol: t2,
        side: 'buy',
        type: 'LIMIT',
        price: px(a2),
        size: '3',
        time_in_force: 'IOC',
        take_profit: { price: px(a2 + 0.1) },
      });
      expect(small.status).toBe(200);
      expect(small.body).toMatchObject({ status: 'FILLED', filled_size: '3' });
      expect(small.body.brackets.take_profit).toMatchObject({
        status: 'FAILED',
        order_id: null,
        error: expect.stringMatching(/below this market's minimum of 5 shares/),
      });
      expect(small.body.warnings).toEqual([expect.stringMatching(/^bracket take_profit failed: /)]);
      expect(await strategy('alice', small.body.bracket_id)).toMatchObject({ status: 'COMPLETED' });
    });

    it('a resting entry: legs wait for it; canceled with nothing filled → no leg placed', async () => {
      const { token, bid } = await freshToken(0.3, 0.7);
      const res = await post('alice', {
        symbol: token,
        side: 'buy',
        type: 'LIMIT',
        price: px(bid - 0.05),
        size: '10',
        take_profit: { price: px(bid + 0.1) },
      });
      expect(res.body).toMatchObject({
        status: 'OPEN',
        brackets: { take_profit: { status: 'WAITING', order_id: null, size: null } },
      });
      expect(await strategy('alice', res.body.bracket_id)).toMatchObject({ status: 'PENDING' });
      await svc.call('DELETE', `/v2/trade/orders/${res.body.order_id}`, { headers: as('alice') });
      await whenQuiet();
      const s = await strategy('alice', res.body.bracket_id);
      expect(s).toMatchObject({
        status: 'CANCELED',
        message: 'the entry ended with nothing filled: no bracket placed',
        brackets: { take_profit: { status: 'CANCELED' } },
      });
    });

    it('a MARKET buy entry with a stop; DELETE strategy disarms it', async () => {
      const { token, bid } = await freshToken(0.3, 0.7);
      const res = await post('alice', {
        symbol: token,
        side: 'buy',
        type: 'MARKET',
        quote_amount: '5',
        stop_loss: { price: px(bid - 0.1) },
      });
      expect(res).toMatchObject({
        status: 200,
        body: {
          type: 'MARKET',
          status: 'FILLED',
          brackets: { stop_loss: { status: 'ARMED', size: res.body.filled_size } },
        },
      });
      expect(res.body.brackets.take_profit).toBeUndefined();
      const del = await svc.call('DELETE', `/v2/trade/strategies/${res.body.bracket_id}`, { headers: as('alice') });
      expect(del).toMatchObject({
        status: 200,
        body: { status: 'CANCELED', brackets: { stop_loss: { status: 'CANCELED' } } },
      });
    });

    it('start-up reconciliation ends a bracket whose entry was never placed (process stopped between)', async () => {
      const { token } = await freshToken(0.3, 0.7);
      const firstOrder = (await svc.call('GET', '/v2/trade/activity?limit=1', { headers: as('alice') })).body
        .activity[0];
      const alice = (await svc.services.actors.get(firstOrder.id))!;
      const entry = svc.services.orders.check(alice.ownerUserId!, {
        symbol: token,
        side: 'buy',
        type: 'LIMIT',
        price: '0.1',
        size: '10',
        take_profit: { price: '0.9' },
      } as never);
      const input = svc.services.strategies.checkBrackets(
        entry.userId,
        { symbol: token, side: 'buy', type: 'LIMIT', price: '0.1', size: '10', take_profit: { price: '0.9' } } as never,
        entry,
      )!;
      await svc.services.host.create('strategy.bracket', {
        id: input.recordId,
        input,
        partnerId: alice.partnerId,
        ownerUserId: entry.userId,
      });
      await svc.services.strategies.reconcile();
      await whenQuiet();
      expect(await strategy('alice', input.recordId)).toMatchObject({
        status: 'CANCELED',
        message: 'the entry was refused: no bracket placed',
      });
    });

    it('refuses brackets that cannot work, changing nothing', async () => {
      const { token, ask } = await freshToken(0.3, 0.7);
      const before = (await svc.call('GET', '/v2/trade/balances', { headers: as('alice') })).body;
      const bad = [
        [
          { side: 'sell', type: 'LIMIT', price: px(ask), size: '10', take_profit: { price: '0.9' } },
          /buy LIMIT or MARKET entries only/,
        ],
        [
          {
            side: 'buy',
            type: 'TWAP',
            size: '10',
            execution: { interval_sec: 10, duration_sec: 30 },
            stop_loss: { price: '0.1' },
          },
          /buy LIMIT or MARKET entries only/,
        ],
        [
          {
            side: 'buy',
            type: 'LIMIT',
            price: px(ask),
            size: '10',
            take_profit: { price: '0.2' },
            stop_loss: { price: '0.25' },
          },
          /take_profit.price 0.2 must be above stop_loss.price 0.25/,
        ],
        [
          { side: 'buy', type: 'LIMIT', price: px(ask), size: '10', stop_loss: { price: '0.1', size: '11' } },
          /stop_loss.size 11 is more than the entry's 10 shares/,
        ],
        [
          { side: 'buy', type: 'LIMIT', price: px(ask), size: '10', take_profit: { price: '0.9', size: '2' } },
          /below this market's minimum/,
        ],
        [
          { side: 'buy', type: 'LIMIT', price: px(ask), size: '10', take_profit: { price: '60' } },
          /did you mean 0.6\?/,
        ],
        [
          { side: 'buy', type: 'LIMIT', price: px(ask), size: '10', take_profit: { price: '0.9', extra: 1 } },
          /extra|additional/,
        ],
      ] as const;
      for (const [body, msg] of bad) {
        const r = await post('alice', { symbol: token, ...body });
        expect(r.status, JSON.stringify(body)).toBe(400);
        expect(`${r.body.error} ${r.body.message}`).toMatch(msg);
      }
      expect((await svc.call('GET', '/v2/trade/balances', { headers: as('alice') })).body).toEqual(before);
    });
  });

  it('GET strategies filters by status and type and pages', async () => {
    const all = await svc.call('GET', '/v2/trade/strategies?limit=2', { headers: as('alice') });
    expect(all.body).toMatchObject({ limit: 2, offset: 0, has_more: true });
    const twaps = await svc.call('GET', '/v2/trade/strategies?type=TWAP', { headers: as('alice') });
    expect(twaps.body.strategies.every((s: any) => s.type === 'TWAP')).toBe(true);
    expect(twaps.body.total).toBeGreaterThanOrEqual(1);
    const canceled = await svc.call('GET', '/v2/trade/strategies?status=CANCELED', { headers: as('alice') });
    expect(canceled.body.strategies.every((s: any) => s.status === 'CANCELED')).toBe(true);
    expect((await svc.call('GET', '/v2/trade/strategies?status=DONE', { headers: as('alice') })).status).toBe(400);
  });

  it('book updates of a token no strategy watches compute no touch; a watched token still fires its stop', async () => {
    const { token, bid } = await freshToken(0.3);
    const { token: other } = await freshToken(0.3);
    await post('alice', { symbol: token, side: 'buy', type: 'LIMIT', price: '0.99', size: '10', time_in_force: 'IOC' });
    const level = px(bid - 0.01);
    const res = await post('alice', { symbol: token, side: 'sell', type: 'STOP_LOSS', price: level, size: '10' });
    expect(res).toMatchObject({ status: 200, body: { type: 'STOP_LOSS', status: 'ACTIVE' } });
    await whenQuiet();
    const touch = vi.spyOn(svc.services.orders.risk, 'touch');
    try {
      // a trade and a resting order on the unwatched token: its book changes, no touch is computed for it
      const ioc = { symbol: other, side: 'buy', type: 'LIMIT', price: '0.99', size: '10', time_in_force: 'IOC' };
      expect(await post('alice', ioc)).toMatchObject({ status: 200, body: { status: 'FILLED' } });
      const rest = { symbol: other, side: 'buy', type: 'LIMIT', price: '0.05', size: '10', time_in_force: 'GTC' };
      expect(await post('alice', rest)).toMatchObject({ status: 200, body: { status: 'OPEN' } });
      await whenQuiet();
      expect(touch.mock.calls.filter(([t]) => t === other)).toHaveLength(0);
      // the watched token's bid falls to the level: its touch is computed and the stop fires
      await sellThrough(token, px(bid));
      await whenQuiet();
      expect(touch.mock.calls.filter(([t]) => t === token).length).toBeGreaterThan(0);
    } finally {
      touch.mockRestore();
    }
    const s = await strategy('alice', res.body.record_id);
    expect(s).toMatchObject({ status: 'COMPLETED', filled_size: '10', executed_price: level });
  });
});
