import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dec } from '../../engine/decimal.js';
import { loadCatalogue } from '../../engine/venue/markets.js';
import type { SimVenue } from '../../engine/venue/sim-venue.js';
import { startTestService, type TestService } from '../helpers.js';
import { poll } from './trading-kit.js';

/**
 * Strategies on capture markets as a partner uses them, each case walked through the real HTTP
 * path. The capture markets are quoted by the liquidity provider here (SIM_CAPTURE=off:
 * bids 0.49, 0.48, … and asks 0.51, 0.52, … on a 0.01 tick); tick changes go through
 * SimVenue.changeTickSize, as the capture's `tick_size_change` does.
 */
describe('capture trial: strategies on a capture market whose tick changes', () => {
  let svc: TestService;
  let market: any;
  const as = (u: string) => ({ 'x-partner-user-id': u });
  const post = (u: string, body: unknown) => svc.call('POST', '/v2/trade/order', { body, headers: as(u) });

  beforeAll(async () => {
    svc = await startTestService({ env: { SIM_CONTROL: 'on', SIM_MAKER_REFILL_MS: '3600000' } });
    for (const u of ['alice', 'bob']) await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: u } });
    const page = (await svc.call('GET', '/v2/trade/markets?limit=500&offset=1001')).body;
    market = page.markets.find((m: any) => /^xrp-15min-up-or-down-/.test(m.slug));
    expect(market).toMatchObject({ tick_size: '0.01', resolved: false });
  });
  afterAll(async () => {
    await svc.close();
  });

  it('PEGGED follows the touch on the new tick after a 0.01 → 0.001 change; its message names where', async () => {
    const up = market.tokens[0].token_id as string;
    const res = await post('alice', { symbol: up, side: 'buy', type: 'PEGGED', budget_usdc: '5' });
    expect(res).toMatchObject({
      status: 200,
      body: { type: 'PEGGED', status: 'ACTIVE', message: 'PEGGED: $5 budget, resting at 0.49 (at the touch)' },
    });
    const id = res.body.record_id as string;
    await svc.services.strategies.whenQuiet(id);
    await (svc.services.venue as SimVenue).changeTickSize(up, dec('0.001'));
    expect((await svc.call('GET', `/v2/trade/book?token_id=${up}`)).body.tick_size).toBe('0.001');
    // bob bids 0.495, on the new tick: the touch is 0.495 and the peg follows it there
    const bid = await post('bob', { symbol: up, side: 'buy', type: 'LIMIT', price: '0.495', size: '10' });
    expect(bid).toMatchObject({ status: 200, body: { status: 'OPEN', price: '0.495' } });
    const open = await poll(
      'the peg re-placed at 0.495',
      async () => (await svc.call('GET', '/v2/trade/orders/open', { headers: as('alice') })).body,
      (b: any) => b.orders.some((o: any) => o.record_id === id && o.price === '0.495'),
    );
    expect(open.orders.filter((o: any) => o.record_id === id)).toEqual([
      expect.objectContaining({ price: '0.495', status: 'OPEN', size: '10.1' }),
    ]);
    await svc.services.strategies.whenQuiet(id);
    const rec = (await svc.call('GET', '/v2/trade/strategies', { headers: as('alice') })).body.strategies.find(
      (s: any) => s.record_id === id,
    );
    expect(rec).toMatchObject({ status: 'ACTIVE', message: 'PEGGED: $5 budget, resting at 0.495' });
  });

  it('a TWAP whose slice rests at resolution ends CANCELED, message market resolved (not DELETE)', async () => {
    const page = (await svc.call('GET', '/v2/trade/markets?limit=500&offset=1001')).body;
    const m = page.markets.find((x: any) => /^eth-15min-up-or-down-/.test(x.slug) && !x.resolved);
    const up = m.tokens[0].token_id as string;
    const res = await post('alice', {
      symbol: up,
      side: 'buy',
      type: 'TWAP',
      price: '0.5',
      size: '30',
      execution: { interval_sec: 10, duration_sec: 30, passive: true },
    });
    expect(res).toMatchObject({ status: 200, body: { type: 'TWAP', status: 'ACTIVE' } });
    const id = res.body.record_id as string;
    await poll(
      'the first slice rests',
      async () => (await svc.call('GET', '/v2/trade/orders/open', { headers: as('alice') })).body,
      (b: any) => b.orders.some((o: any) => o.record_id === id),
    );
    const r = await svc.call('POST', `/v2/sim/markets/${m.condition_id}/resolve`, { body: { winning_token_id: up } });
    expect(r).toMatchObject({ status: 200, body: { resolved: true, winning_token_id: up } });
    const rec = await poll(
      'the TWAP ended',
      async () =>
        (await svc.call('GET', '/v2/trade/strategies', { headers: as('alice') })).body.strategies.find(
          (s: any) => s.record_id === id,
        ),
      (x: any) => x.status !== 'ACTIVE',
    );
    expect(rec).toMatchObject({ type: 'TWAP', status: 'CANCELED', message: 'market resolved' });
    const open = (await svc.call('GET', '/v2/trade/orders/open', { headers: as('alice') })).body.orders;
    expect(open.filter((o: any) => o.record_id === id)).toEqual([]);
  });

  it('a STOP_LOSS firing as its market resolves ends CANCELED, market resolved (not FAILED)', async () => {
    const page = (await svc.call('GET', '/v2/trade/markets?limit=500&offset=1001')).body;
    const m = page.markets.find((x: any) => /^sol-15min-up-or-down-/.test(x.slug) && !x.resolved);
    const [up, down] = m.tokens.map((t: any) => t.token_id as string);
    expect(
      await svc.call('POST', '/v2/trade/positions/split', {
        body: { condition_id: m.condition_id, amount: '20' },
        headers: as('alice'),
      }),
    ).toMatchObject({ status: 200 });
    const res = await post('alice', { symbol: up, side: 'sell', type: 'STOP_LOSS', price: '0.45', size: '10' });
    expect(res).toMatchObject({ status: 200, body: { type: 'STOP_LOSS', status: 'ACTIVE' } });
    const id = res.body.record_id as string;
    await svc.services.strategies.whenQuiet(id);
    const venue = svc.services.venue as SimVenue;
    const at = Date.now();
    // one capture batch takes the bids down to 0.44 (the stop's level is 0.45), and the market resolves right after
    const moved = venue.applyCaptureEvents([
      { kind: 'level', atMs: at, tokenId: up, side: 'sell', price: dec('0.40'), size: dec('1000') },
      { kind: 'level', atMs: at, tokenId: up, side: 'buy', price: dec('0.44'), size: dec('100') },
    ]);
    const resolved = venue.resolveMarket(m.condition_id, down);
    await Promise.all([moved, resolved]);
    const rec = await poll(
      'the stop ended',
      async () =>
        (await svc.call('GET', '/v2/trade/strategies', { headers: as('alice') })).body.strategies.find(
          (s: any) => s.record_id === id,
        ),
      (x: any) => !['ACTIVE', 'TRIGGERED'].includes(x.status),
    );
    expect(rec).toMatchObject({ type: 'STOP_LOSS', status: 'CANCELED', message: 'market resolved' });
    // the shares are still there to redeem (the sell never traded)
    const red = await svc.call('POST', '/v2/trade/positions/redeem', {
      body: { condition_id: m.condition_id },
      headers: as('alice'),
    });
    expect(red).toMatchObject({ status: 200, body: { type: 'REDEEM', payout_usd: '20' } });
  });
});

describe('capture trial: the captured book levels are on the tick the market shows', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService({ env: { SIM_CAPTURE: 'on', SIM_CAPTURE_SPEED: '1000000' } });
  });
  afterAll(async () => {
    await svc.close();
  });

  it('sol 10:15 (no tick change, 0.001 levels) shows tick 0.001; open books hold levels on their tick', async () => {
    const capture = loadCatalogue().capture!;
    const slug = 'sol-15min-up-or-down-10:15';
    expect(
      capture.events.some(
        (e) =>
          e.kind === 'tick' &&
          !e.inferred &&
          capture.markets.find((m) => m.slug === slug)!.tokens.some((t) => t.tokenId === e.tokenId),
      ),
    ).toBe(false);
    await poll(
      'capture replayed',
      async () => (svc.services.venue as SimVenue).capture!.done,
      (d) => d,
    );
    const markets = (await svc.call('GET', '/v2/trade/markets?limit=500&offset=1001')).body.markets as any[];
    expect(markets.find((m) => m.slug === slug)).toMatchObject({ tick_size: '0.001', resolved: true });
    // every level of every open capture book is on the tick its market shows
    for (const m of markets.filter((x) => !x.resolved)) {
      for (const t of m.tokens) {
        const b = (await svc.call('GET', `/v2/trade/book?token_id=${t.token_id}`)).body;
        expect(b.tick_size).toBe(m.tick_size);
        for (const l of [...b.bids, ...b.asks]) expect(dec(l.price).mod(b.tick_size).isZero()).toBe(true);
      }
    }
  });
});
