import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toApiError } from '../../api/errors.js';
import { tokenPicker } from './trading-kit.js';
import { startTestService, type TestService } from '../helpers.js';
import { dec } from '../../engine/decimal.js';
import type { SimVenue } from '../../engine/venue/sim-venue.js';

/**
 * Order validation through the real HTTP path: what POST
 * /v2/trade/order refuses (and that a refusal changes nothing, activity included), the error
 * strings, and messages that tell the truth.
 */
const px = (x: number) => String(Number(x.toFixed(2)));
const CENTS_72 = 'price must be a decimal probability 0.001–0.999; received 72 — did you mean 0.72?';
const DAY_MS = 24 * 60 * 60 * 1000;

describe('order validation', () => {
  let svc: TestService;
  let markets: any[];
  const as = (u: string) => ({ 'x-partner-user-id': u });
  const post = (u: string, body: unknown) => svc.call('POST', '/v2/trade/order', { body, headers: as(u) });
  const book = async (t: string) => (await svc.call('GET', `/v2/trade/book?token_id=${t}&depth=10`)).body;
  const activity = async (u: string) =>
    (await svc.call('GET', '/v2/trade/activity?limit=200', { headers: as(u) })).body.activity as any[];
  const strategy = async (u: string, id: string) =>
    (await svc.call('GET', '/v2/trade/strategies?limit=500', { headers: as(u) })).body.strategies.find(
      (s: any) => s.record_id === id,
    );
  /** A 0.01-tick token with a two-tick spread whose best bid lies in [minBid, maxBid], books untouched. */
  const freshToken = tokenPicker(() => markets, book);
  /** Posts `body` as `u` and expects `status`/`error`/`message`, with nothing new in `u`'s activity. */
  const refused = async (u: string, body: unknown, status: number, error: string, message?: string | RegExp) => {
    const before = await activity(u);
    const res = await post(u, body);
    expect(res.status, JSON.stringify(res.body)).toBe(status);
    expect(res.body.error).toBe(error);
    if (typeof message === 'string') expect(res.body.message).toBe(message);
    else if (message) expect(res.body.message).toMatch(message);
    expect(await activity(u)).toEqual(before);
    return res;
  };

  beforeAll(async () => {
    svc = await startTestService({ env: { SIM_MAKER_REFILL_MS: '3600000', SIM_INITIAL_PUSD: '1000000' } });
    for (const u of ['alice', 'bob']) await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: u } });
    markets = (await svc.call('GET', '/v2/trade/markets?limit=500')).body.markets;
  });
  afterAll(() => svc.close());

  describe('expiration has a horizon (365 days) and every accepted expiry is scheduled', () => {
    it.each([[8700000000000000], [1e300], [Date.now() + 366 * DAY_MS]])(
      'expiration %d → 400 naming the horizon, nothing changes',
      async (expiration) => {
        const { token, bid } = await freshToken();
        await refused(
          'alice',
          { symbol: token, side: 'buy', type: 'LIMIT', price: px(bid - 0.05), size: '10', expiration },
          400,
          'invalid_request',
          /^expiration must be at most 365 days ahead \(at most \d+ in Unix epoch milliseconds\); received /,
        );
      },
    );

    it('a GTD expiry 364 days ahead rests OPEN; its expiry timer is a scheduler job at exactly that time', async () => {
      const { token, bid } = await freshToken();
      const expiration = Date.now() + 364 * DAY_MS;
      const res = await post('alice', {
        symbol: token,
        side: 'buy',
        type: 'LIMIT',
        price: px(bid - 0.05),
        size: '10',
        expiration,
      });
      expect(res).toMatchObject({ status: 200, body: { status: 'OPEN', time_in_force: 'GTD', expiration } });
      const jobs = await (await svc.services.store.collection<any>('agendaJobs')).find({});
      const job = jobs.find((j) => j.data?.actorId === res.body.order_id);
      expect(job?.data).toMatchObject({ timerName: 'expiry', atMs: expiration });
      expect(new Date(job.nextRunAt).getTime()).toBe(expiration);
    });

    it('an expiry in microseconds gets the millisecond value suggested', async () => {
      const { token, bid } = await freshToken();
      const ms = Date.now() + DAY_MS;
      await refused(
        'alice',
        { symbol: token, side: 'buy', type: 'LIMIT', price: px(bid - 0.05), size: '10', expiration: ms * 1000 },
        400,
        'invalid_request',
        new RegExp(`— did you mean ${ms} \\(milliseconds\\)\\?$`),
      );
    });
  });

  describe('a TWAP that cannot work is refused, saying why', () => {
    const twap = (token: string, patch: Record<string, unknown>, execution: Record<string, unknown> = {}) => ({
      symbol: token,
      side: 'buy',
      type: 'TWAP',
      size: '30',
      ...patch,
      execution: { interval_sec: 10, duration_sec: 30, ...execution },
    });
    it.each([
      [
        { size: '0.01' },
        {},
        'each TWAP slice must be at least 0.01 shares: 0.01 shares over 3 slices is less; send a larger ' +
          'size or fewer slices (raise execution.interval_sec)',
      ],
      [
        { size: '0.02' },
        {},
        'each TWAP slice must be at least 0.01 shares: 0.02 shares over 3 slices is less; send a larger ' +
          'size or fewer slices (raise execution.interval_sec)',
      ],
      [{}, { duration_sec: 1e12 }, 'execution.duration_sec must be at most 604800'],
      [
        {},
        { duration_sec: 604800 },
        'a TWAP has at most 1000 slices: duration_sec 604800 / interval_sec 10 makes 60480; raise ' +
          'execution.interval_sec',
      ],
      [
        {},
        { duration_sec: 30.0005 },
        'execution.duration_sec has at most 3 decimals (whole milliseconds); received 30.0005',
      ],
      [
        { size: '6' },
        { passive: true },
        new RegExp(
          "^passive TWAP slices rest on the book, so each must be at least this market's minimum of 5 " +
            'shares: 6 shares over 3 slices is 2 per slice',
        ),
      ],
    ])('%j execution %j → 400', async (patch, execution, message) => {
      const { token } = await freshToken();
      await refused('alice', twap(token, patch, execution), 400, 'invalid_request', message);
    });

    it('the smallest workable TWAP is accepted: 0.03 shares over 3 IOC slices; a 7-day one, few slices', async () => {
      const { token } = await freshToken();
      const res = await post('alice', twap(token, { size: '0.03' }));
      expect(res).toMatchObject({ status: 200, body: { type: 'TWAP', status: 'ACTIVE', size: '0.03' } });
      const week = await post('alice', twap(token, { size: '10' }, { interval_sec: 86400, duration_sec: 604800 }));
      expect(week).toMatchObject({
        status: 200,
        body: { type: 'TWAP', message: expect.stringMatching(/in 7 slices every 86400 s/) },
      });
      for (const id of [res.body.record_id, week.body.record_id])
        await svc.call('DELETE', `/v2/trade/strategies/${id}`, { headers: as('alice') });
    });
  });

  describe('a field the type does not use is refused, naming it (TWAP clip_size / randomize_pct: warnings)', () => {
    it('execution fields and quote_amount a type does not use → 400 (STOP_LOSS, ICEBERG, TRAILING_BUY)', async () => {
      const { token, bid, ask } = await freshToken(0.3);
      await post('alice', {
        symbol: token,
        side: 'buy',
        type: 'LIMIT',
        price: '0.99',
        size: '20',
        time_in_force: 'IOC',
      });
      await refused(
        'alice',
        {
          symbol: token,
          side: 'sell',
          type: 'STOP_LOSS',
          price: px(bid - 0.05),
          size: '5',
          execution: { trailing_offset_pct: 5 },
        },
        400,
        'invalid_request',
        'execution.trailing_offset_pct is not used by STOP_LOSS orders (they take no execution object)',
      );
      await refused(
        'alice',
        {
          symbol: token,
          side: 'buy',
          type: 'ICEBERG',
          price: px(bid - 0.05),
          size: '50',
          execution: { clip_size: '10', interval_sec: 10 },
        },
        400,
        'invalid_request',
        'execution.interval_sec is not used by ICEBERG orders (ICEBERG takes execution.clip_size, ' +
          'execution.price_tolerance_pct)',
      );
      await refused(
        'alice',
        {
          symbol: token,
          side: 'buy',
          type: 'TRAILING_BUY',
          quote_amount: '5',
          execution: { trailing_offset: '0.02', clip_size: '5' },
        },
        400,
        'invalid_request',
        'execution.clip_size is not used by TRAILING_BUY orders (TRAILING_BUY takes ' +
          'execution.trailing_offset_pct, execution.trailing_offset, execution.low_water_mark, ' +
          'execution.price_ceiling)',
      );
      await refused(
        'alice',
        { symbol: token, side: 'sell', type: 'STOP_LOSS', price: px(bid - 0.05), size: '5', quote_amount: '5' },
        400,
        'invalid_request',
        /^quote_amount is not used by STOP_LOSS orders/,
      );
      await refused(
        'alice',
        {
          symbol: token,
          side: 'sell',
          type: 'TRAILING_STOP',
          size: '5',
          execution: { high_water_mark: px(ask), trailing_offset: '0.05', low_water_mark: '0.1' },
        },
        400,
        'invalid_request',
        /^execution\.low_water_mark is not used by TRAILING_STOP orders/,
      );
      await refused(
        'alice',
        {
          symbol: token,
          side: 'buy',
          type: 'TWAP',
          size: '30',
          execution: { interval_sec: 10, duration_sec: 30, trailing_offset_pct: 5 },
        },
        400,
        'invalid_request',
        /^execution\.trailing_offset_pct is not used by TWAP orders/,
      );
    });

    it('TWAP clip_size and randomize_pct stay accepted with a warnings entry each', async () => {
      const { token } = await freshToken();
      const res = await post('alice', {
        symbol: token,
        side: 'buy',
        type: 'TWAP',
        size: '30',
        execution: { interval_sec: 10, duration_sec: 30, clip_size: '5', randomize_pct: 10 },
      });
      expect(res).toMatchObject({
        status: 200,
        body: {
          warnings: [
            'execution.clip_size is ignored for TWAP orders',
            'execution.randomize_pct is ignored for TWAP orders',
          ],
        },
      });
      await svc.call('DELETE', `/v2/trade/strategies/${res.body.record_id}`, { headers: as('alice') });
    });
  });

  describe('every price field of spec 2.1 sent in cents gets the cents message (error and message)', () => {
    it('price_floor / price_ceiling (PEGGED), bracket prices, execution.* prices, strategy prices', async () => {
      const { token, bid, ask } = await freshToken(0.3, 0.6);
      await post('alice', {
        symbol: token,
        side: 'buy',
        type: 'LIMIT',
        price: '0.99',
        size: '20',
        time_in_force: 'IOC',
      });
      const cases: unknown[] = [
        { symbol: token, side: 'buy', type: 'PEGGED', budget_usdc: '10', price_ceiling: 72 },
        { symbol: token, side: 'buy', type: 'PEGGED', budget_usdc: '10', price_floor: 72 },
        {
          symbol: token,
          side: 'buy',
          type: 'LIMIT',
          price: px(ask),
          size: '10',
          take_profit: { price: '0.9' },
          stop_loss: { price: '72' },
        },
        { symbol: token, side: 'buy', type: 'LIMIT', price: px(ask), size: '10', take_profit: { price: '72' } },
        { symbol: token, side: 'sell', type: 'STOP_LOSS', price: '72', size: '5' },
        { symbol: token, side: 'sell', type: 'TAKE_PROFIT', price: '72', size: '5' },
        {
          symbol: token,
          side: 'sell',
          type: 'TRAILING_STOP',
          size: '5',
          execution: { high_water_mark: '72', trailing_offset: '0.05' },
        },
        {
          symbol: token,
          side: 'sell',
          type: 'TRAILING_STOP',
          size: '5',
          price: '72',
          execution: { trailing_offset: '0.05' },
        },
        {
          symbol: token,
          side: 'buy',
          type: 'TRAILING_BUY',
          quote_amount: '5',
          execution: { trailing_offset: '0.02', low_water_mark: '72' },
        },
        {
          symbol: token,
          side: 'buy',
          type: 'TRAILING_BUY',
          quote_amount: '5',
          execution: { trailing_offset: '0.02', price_ceiling: '72' },
        },
        { symbol: token, side: 'buy', type: 'TRAILING_BUY', quote_amount: '5', execution: { trailing_offset: '72' } },
        {
          symbol: token,
          side: 'buy',
          type: 'TWAP',
          price: '72',
          size: '30',
          execution: { interval_sec: 10, duration_sec: 30 },
        },
        { symbol: token, side: 'buy', type: 'ICEBERG', price: '72', size: '50', execution: { clip_size: '10' } },
      ];
      for (const body of cases) await refused('alice', body, 400, CENTS_72, CENTS_72);
      // the price rule comes before the wallet: a user with no shares and no free pUSD gets the
      // cents message too, not a 422 about funds
      await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'pauper' } });
      const free = Number((await svc.call('GET', '/v2/trade/balances', { headers: as('pauper') })).body.available);
      const all = await post('pauper', {
        symbol: token,
        side: 'buy',
        type: 'LIMIT',
        price: '0.01',
        size: String(free / 0.01),
      });
      expect(all).toMatchObject({ status: 200, body: { status: 'OPEN' } });
      expect((await svc.call('GET', '/v2/trade/balances', { headers: as('pauper') })).body.available).toBe('0');
      for (const body of cases) await refused('pauper', body, 400, CENTS_72, CENTS_72);
      await svc.call('DELETE', `/v2/trade/orders/${all.body.order_id}`, { headers: as('pauper') });
      // in range, a PEGGED ceiling as a number still works
      const ok = await post('alice', {
        symbol: token,
        side: 'buy',
        type: 'PEGGED',
        budget_usdc: '10',
        price_floor: 0.1,
        price_ceiling: Number(px(bid)),
      });
      expect(ok).toMatchObject({ status: 200, body: { type: 'PEGGED' } });
      await svc.call('DELETE', `/v2/trade/strategies/${ok.body.record_id}`, { headers: as('alice') });
    });
  });

  describe('messages a partner reads', () => {
    it('TAKE_PROFIT with execution names TAKE_PROFIT; a PEGGED capped by its ceiling says so', async () => {
      const { token, bid } = await freshToken(0.3, 0.6);
      await post('alice', {
        symbol: token,
        side: 'buy',
        type: 'LIMIT',
        price: '0.99',
        size: '10',
        time_in_force: 'IOC',
      });
      await refused(
        'alice',
        { symbol: token, side: 'sell', type: 'TAKE_PROFIT', price: '0.9', size: '5', execution: {} },
        400,
        'invalid_request',
        'execution is not used by TAKE_PROFIT orders',
      );
      const capped = await post('alice', {
        symbol: token,
        side: 'buy',
        type: 'PEGGED',
        budget_usdc: '10',
        price_ceiling: 0.05,
      });
      expect(capped.body.message).toBe(
        `PEGGED: $10 budget, resting at 0.05 (below the best bid ${px(bid)}: capped by price_ceiling)`,
      );
      await svc.call('DELETE', `/v2/trade/strategies/${capped.body.record_id}`, { headers: as('alice') });
      const atTouch = await post('alice', { symbol: token, side: 'buy', type: 'PEGGED', budget_usdc: '10' });
      expect(atTouch.body.message).toBe(`PEGGED: $10 budget, resting at ${px(bid)} (at the touch)`);
      await svc.call('DELETE', `/v2/trade/strategies/${atTouch.body.record_id}`, { headers: as('alice') });
    });
  });

  describe('a stop that would fire at once is 422 WOULD_TRIGGER_IMMEDIATELY', () => {
    it('STOP_LOSS at the bid, TRAILING_STOP whose level the bid reached', async () => {
      const { token, bid } = await freshToken(0.4);
      await post('alice', {
        symbol: token,
        side: 'buy',
        type: 'LIMIT',
        price: '0.99',
        size: '10',
        time_in_force: 'IOC',
      });
      await refused(
        'alice',
        { symbol: token, side: 'sell', type: 'STOP_LOSS', price: px(bid), size: '10' },
        422,
        'WOULD_TRIGGER_IMMEDIATELY',
        `STOP_LOSS price ${px(bid)} is at or above the best bid ${px(bid)}: it would trigger at once; sell ` +
          `with LIMIT or MARKET instead`,
      );
      await refused(
        'alice',
        {
          symbol: token,
          side: 'sell',
          type: 'TRAILING_STOP',
          size: '10',
          execution: { high_water_mark: px(bid + 0.1), trailing_offset: '0.05' },
        },
        422,
        'WOULD_TRIGGER_IMMEDIATELY',
        /^TRAILING_STOP would trigger at once/,
      );
    });
  });

  describe('a MARKET order on an empty side of the book', () => {
    it('is 422 NO_LIQUIDITY and changes nothing; the other side still trades', async () => {
      const { token } = await freshToken();
      const tick = Number(
        markets
          .flatMap((m: any) => m.tokens.map((t: any) => ({ ...t, tick: m.tick_size })))
          .find((t: any) => t.token_id === token).tick,
      );
      // the liquidity provider quotes no ask above 1 − tick: reference 1 − tick leaves the ask side empty
      await (svc.services.venue as SimVenue).setReference(token, dec(1 - tick));
      expect((await book(token)).asks).toEqual([]);
      await refused(
        'alice',
        { symbol: token, side: 'buy', type: 'MARKET', quote_amount: '5' },
        422,
        'NO_LIQUIDITY',
        'the book has no ask for a MARKET buy to take; nothing was placed',
      );
      // reference at one tick: no bid to sell into
      await (svc.services.venue as SimVenue).setReference(token, dec(tick));
      expect((await book(token)).bids).toEqual([]);
      const bought = await post('alice', { symbol: token, side: 'buy', type: 'MARKET', quote_amount: '5' });
      expect(bought).toMatchObject({ status: 200, body: { status: 'FILLED' } });
      await refused(
        'alice',
        { symbol: token, side: 'sell', type: 'MARKET', size: '10' },
        422,
        'NO_LIQUIDITY',
        'the book has no bid for a MARKET sell to take; nothing was placed',
      );
    });
  });

  describe('messages that tell the truth', () => {
    it('price 1000: the spec message without a hint (10 is no price); 72 keeps the exact spec string', async () => {
      const { token } = await freshToken();
      const text = 'price must be a decimal probability 0.001–0.999; received 1000';
      await refused('alice', { symbol: token, side: 'buy', type: 'LIMIT', price: '1000', size: '10' }, 400, text, text);
      await refused(
        'alice',
        { symbol: token, side: 'buy', type: 'LIMIT', price: '72', size: '10' },
        400,
        CENTS_72,
        CENTS_72,
      );
      const small = 'price must be a decimal probability 0.001–0.999; received 1.5 — did you mean 0.015?';
      await refused(
        'alice',
        { symbol: token, side: 'buy', type: 'LIMIT', price: '1.5', size: '10' },
        400,
        small,
        small,
      );
    });

    it('expiration 1000: no "did you mean 1000000" (a time in the past)', async () => {
      const { token, bid } = await freshToken();
      await refused(
        'alice',
        { symbol: token, side: 'buy', type: 'LIMIT', price: px(bid - 0.05), size: '10', expiration: 1000 },
        400,
        'invalid_request',
        'expiration must be a future time in Unix epoch milliseconds; received 1000',
      );
    });

    it('a triggered STOP_LOSS says it triggered and names the order it placed', async () => {
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
      // more than the bid there: the rest rests
      const size = String(Number(bids.find((l: any) => l.price === level)?.size ?? 0) + 50);
      const res = await post('alice', { symbol: token, side: 'sell', type: 'STOP_LOSS', price: level, size });
      expect(res.body.message).toBe(`STOP_LOSS armed: sells ${size} shares when the best bid reaches ${level}`);
      // bob takes the top bid level away: the best bid falls to the armed level
      const top = (await book(token)).bids[0];
      await post('bob', {
        symbol: token,
        side: 'buy',
        type: 'LIMIT',
        price: '0.99',
        size: top.size,
        time_in_force: 'IOC',
      });
      expect(
        (
          await post('bob', {
            symbol: token,
            side: 'sell',
            type: 'LIMIT',
            price: top.price,
            size: top.size,
            time_in_force: 'IOC',
          })
        ).body.status,
      ).toBe('FILLED');
      await svc.services.strategies.idle();
      const s = await strategy('alice', res.body.record_id);
      expect(s).toMatchObject({ status: 'TRIGGERED', order_ids: [expect.any(String)] });
      expect(s.message).toBe(
        `STOP_LOSS triggered: the best bid ${level} reached the armed level ${level}; placed sell order ` +
          `${s.order_ids[0]} of ${size} shares at ${level}`,
      );
      await svc.call('DELETE', `/v2/trade/orders/${s.order_ids[0]}`, { headers: as('alice') });
    });

    it('a TRAILING_BUY names its trigger_price level, also after the mark followed the ask down', async () => {
      const { token, ask } = await freshToken(0.3, 0.6);
      // a low-water mark above the ask: at once the mark follows the ask down, and the level with it
      const res = await post('alice', {
        symbol: token,
        side: 'buy',
        type: 'TRAILING_BUY',
        quote_amount: '5',
        execution: { trailing_offset: '0.02', low_water_mark: px(ask + 0.1) },
      });
      expect(res.status).toBe(200);
      const s = await strategy('alice', res.body.record_id);
      expect(s).toMatchObject({ status: 'ACTIVE', low_water_mark: px(ask), trigger_price: px(ask + 0.02) });
      const text =
        `TRAILING_BUY armed: buys $5 when the ask bounces to ${px(ask + 0.02)} (low-water mark ${px(ask)}, ` +
        `followed the ask down)`;
      expect(s.message).toBe(text);
      expect(res.body.message).toBe(text);
      // a seeded one: mark = ask, level = ask × 1.1 with a percent offset
      const seeded = await post('alice', {
        symbol: token,
        side: 'buy',
        type: 'TRAILING_BUY',
        quote_amount: '5',
        execution: { trailing_offset_pct: 10 },
      });
      const level = String(Number((ask * 1.1).toFixed(4)));
      expect((await strategy('alice', seeded.body.record_id)).trigger_price).toBe(level);
      expect(seeded.body.message).toBe(
        `TRAILING_BUY armed: buys $5 when the ask bounces to ${level} (low-water mark ${px(ask)}, seeded from the ask)`,
      );
      for (const id of [res.body.record_id, seeded.body.record_id])
        await svc.call('DELETE', `/v2/trade/strategies/${id}`, { headers: as('alice') });
    });
  });
});

describe('concurrent buys beyond the balance', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService({ env: { SIM_MAKER_REFILL_MS: '3600000', SIM_INITIAL_PUSD: '10000' } });
    await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'carol' } });
  });
  afterAll(() => svc.close());

  it('30 concurrent $500 buys by a $10,000 user: 20 succeed, 10 get one 422 wording, activity has 20', async () => {
    const markets = (await svc.call('GET', '/v2/trade/markets?limit=500')).body.markets;
    const token = markets.find((m: any) => m.tick_size === '0.01').tokens[0].token_id;
    const headers = { 'x-partner-user-id': 'carol' };
    // $500 each: 10000 shares at 0.05, resting (below the bid): the funds stay reserved
    const results = await Promise.all(
      Array.from({ length: 30 }, () =>
        svc.call('POST', '/v2/trade/order', {
          body: { symbol: token, side: 'buy', type: 'LIMIT', price: '0.05', size: '10000' },
          headers,
        }),
      ),
    );
    const ok = results.filter((r) => r.status === 200);
    const refusedRes = results.filter((r) => r.status !== 200);
    expect(ok).toHaveLength(20);
    for (const r of ok) expect(r.body).toMatchObject({ status: 'OPEN', price: '0.05', size: '10000' });
    expect(refusedRes).toHaveLength(10);
    for (const r of refusedRes)
      expect(r).toMatchObject({
        status: 422,
        body: { error: 'INSUFFICIENT_BALANCE', message: 'this buy needs $500 pUSD; available $0' },
      });
    const act = (await svc.call('GET', '/v2/trade/activity?limit=200', { headers })).body.activity;
    expect(act).toHaveLength(20);
    expect(act.every((a: any) => a.kind === 'order' && a.status === 'OPEN')).toBe(true);
    expect((await svc.call('GET', '/v2/trade/balances', { headers })).body).toMatchObject({
      balance: '10000',
      reserved: '10000',
      available: '0',
    });
  });

  it('30 orders checked first, then placed at once: the 10 over the balance refused, no REJECTED order', async () => {
    const created = await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'dave' } });
    const user = (await svc.services.users.byId(created.body.platform_user_id))!;
    const token = (await svc.call('GET', '/v2/trade/markets?limit=500')).body.markets.find(
      (m: any) => m.tick_size === '0.01',
    ).tokens[0].token_id;
    const body = { symbol: token, side: 'buy', type: 'LIMIT', price: '0.05', size: '10000' } as const;
    // every check passes (nothing is reserved yet): only the placement can still refuse
    const inputs = Array.from({ length: 30 }, () => svc.services.orders.check(user._id, body));
    const results = await Promise.allSettled(inputs.map((i) => svc.services.orders.place(user.partnerId, i)));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(20);
    const refusals = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected').map((r) => r.reason);
    expect(refusals).toHaveLength(10);
    for (const e of refusals)
      expect(toApiError(e)).toMatchObject({
        status: 422,
        error: 'INSUFFICIENT_BALANCE',
        message: 'this buy needs $500 pUSD; available $0',
      });
    const act = (await svc.call('GET', '/v2/trade/activity?limit=200', { headers: { 'x-partner-user-id': 'dave' } }))
      .body.activity;
    expect(act).toHaveLength(20);
    expect(act.filter((a: any) => a.status === 'REJECTED')).toEqual([]);
  });
});
