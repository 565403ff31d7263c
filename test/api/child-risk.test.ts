import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StrategyContext } from '../../machines/strategy-kit.js';
import { startTestService, type TestService } from '../helpers.js';

/**
 * Every child order a strategy places passes pre-trade risk (engine/risk.ts
 * `RiskEngine.checkChild`). A child refused by risk reaches its strategy as `order.refused`
 * (permanent, like the venue's verdict) and leaves no order record behind (no REJECTED order).
 */
describe('a strategy child order refused by risk', () => {
  let svc: TestService;
  const headers = { 'x-partner-user-id': 'carol' };
  const post = (body: unknown) => svc.call('POST', '/v2/trade/order', { body, headers });

  beforeAll(async () => {
    svc = await startTestService({ env: { SIM_MAKER_REFILL_MS: '3600000', SIM_INITIAL_PUSD: '100' } });
    await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'carol' } });
  });
  afterAll(() => svc.close());

  it('a TWAP slice the wallet no longer covers: FAILED, INSUFFICIENT_BALANCE, no REJECTED order', async () => {
    const markets = (await svc.call('GET', '/v2/trade/markets?limit=500')).body.markets;
    const token = markets.find((m: any) => m.tick_size === '0.01').tokens[0].token_id;
    const book = (await svc.call('GET', `/v2/trade/book?token_id=${token}&depth=10`)).body;
    const ask = book.asks[0].price as string;
    // 3 IOC slices at the ask; the request is covered ($100)
    const size = String(Math.floor(60 / Number(ask)));
    const res = await post({
      symbol: token,
      side: 'buy',
      type: 'TWAP',
      price: ask,
      size,
      execution: { interval_sec: 10, duration_sec: 30 },
    });
    expect(res).toMatchObject({ status: 200, body: { type: 'TWAP', status: 'ACTIVE' } });
    const id = res.body.record_id;
    await svc.services.strategies.idle();
    // carol then commits every free dollar to a resting buy: the next slice is no longer covered
    const free = (await svc.call('GET', '/v2/trade/balances', { headers })).body.available as string;
    const restSize = String(Math.floor(Number(free) / 0.01));
    expect((await post({ symbol: token, side: 'buy', type: 'LIMIT', price: '0.01', size: restSize })).body.status).toBe(
      'OPEN',
    );
    const left = (await svc.call('GET', '/v2/trade/balances', { headers })).body.available as string;
    const c = svc.services.host.snapshotOf(id)!.context as StrategyContext;
    const sliceId = `ord_${id}_${c.seq + 1}`;
    await svc.services.host.deliverTimer({ actorId: id, timerName: 'slice', atMs: c.deadlines.slice! });
    await svc.services.strategies.idle();
    const s = (await svc.call('GET', '/v2/trade/strategies?limit=500', { headers })).body.strategies.find(
      (x: any) => x.record_id === id,
    );
    expect(s.status).toBe('FAILED');
    expect(s.message).toMatch(
      new RegExp(
        `^order refused: INSUFFICIENT_BALANCE — this buy needs \\$[0-9.]+ pUSD; available ` +
          `\\$${left.replace('.', '\\.')}$`,
      ),
    );
    // the refused slice was never created: no record, nothing REJECTED, only the first slice on record
    expect(await svc.services.actors.get(sliceId)).toBeNull();
    const act = (await svc.call('GET', '/v2/trade/activity?limit=200', { headers })).body.activity as any[];
    expect(act.filter((a) => a.status === 'REJECTED')).toEqual([]);
    expect(s.order_ids).toHaveLength(1);
  });
});
