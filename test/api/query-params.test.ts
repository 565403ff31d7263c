/**
 * Over real HTTP: query parameters. An authenticated endpoint that takes none refuses any (400,
 * nothing changed); the reference product's `venue` (GET /balances, GET /orders/open, DELETE
 * /orders/{order_id}) and `token_id` (GET /orders/open) are taken; public endpoints ignore them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../helpers.js';
import { Trading } from './trading-kit.js';

describe('query parameters', () => {
  let svc: TestService;
  const tr = new Trading(() => svc);
  const as = (u: string) => tr.as(u);

  beforeAll(async () => {
    svc = await startTestService({ env: { SIM_MAKER_REFILL_MS: '3600000' } });
    await tr.init(['alice', 'bob']);
  });
  afterAll(() => svc?.close());

  const rest = async (u: string, token: string) => {
    const r = await tr.post(u, { symbol: token, side: 'buy', type: 'LIMIT', price: '0.02', size: '5' });
    expect([r.status, r.body.status]).toEqual([200, 'OPEN']);
    return r.body.order_id as string;
  };

  it('an endpoint that takes none: 400 naming the parameter, and nothing placed or recorded', async () => {
    const a = await tr.freshToken(0.3, 0.6);
    const activity = async () => (await svc.call('GET', '/v2/trade/activity?limit=200', { headers: as('alice') })).body;
    const before = await activity();
    const bad = await svc.call('POST', '/v2/trade/order?dry_run=true', {
      body: { symbol: a.token, side: 'buy', type: 'LIMIT', price: '0.02', size: '5' },
      headers: as('alice'),
    });
    expect([bad.status, bad.body]).toEqual([
      400,
      { error: 'invalid_request', message: 'unknown query parameter "dry_run": this endpoint takes none' },
    ]);
    expect(await tr.openOrders('alice')).toEqual([]);
    expect(await activity()).toEqual(before);
    for (const path of ['/v2/trade/account?x=1', '/v2/trade/copytrade/pnl?window=zz', '/v2/trade/copytrade?limit=5']) {
      const r = await svc.call('GET', path, { headers: as('alice') });
      expect([path, r.status, r.body.error]).toEqual([path, 400, 'invalid_request']);
      expect(r.body.message).toMatch(/^unknown query parameter ".+": this endpoint takes none$/);
    }
  });

  it("the reference's venue and token_id are taken; another venue is a 400", async () => {
    const a = await tr.freshToken(0.3, 0.6);
    const b = await tr.freshToken(0.3, 0.6);
    const onA = await rest('bob', a.token);
    const onB = await rest('bob', b.token);
    const open = async (q: string) => svc.call('GET', `/v2/trade/orders/open${q}`, { headers: as('bob') });
    const all = await open('?venue=polymarket');
    expect([all.status, all.body.orders.map((o: { order_id: string }) => o.order_id)]).toEqual([200, [onB, onA]]);
    const onlyA = await open(`?token_id=${a.token}&limit=10`);
    expect([onlyA.status, onlyA.body.orders.map((o: { order_id: string }) => o.order_id), onlyA.body.total]).toEqual([
      200,
      [onA],
      1,
    ]);
    const none = await open('?token_id=123');
    expect([none.status, none.body.orders, none.body.total]).toEqual([200, [], 0]);
    expect((await open('?token_id=abc')).status).toBe(400);
    const bal = await svc.call('GET', '/v2/trade/balances?venue=polymarket', { headers: as('bob') });
    expect([bal.status, bal.body.currency]).toEqual([200, 'pUSD']);
    const other = await svc.call('GET', '/v2/trade/balances?venue=predictfun', { headers: as('bob') });
    expect([other.status, other.body.error]).toEqual([400, 'invalid_request']);
    const del = await svc.call('DELETE', `/v2/trade/orders/${onA}?venue=polymarket`, { headers: as('bob') });
    expect([del.status, del.body.order_id, del.body.status]).toEqual([200, onA, 'CANCELED']);
  });

  it('public endpoints ignore query parameters (probes add their own)', async () => {
    const h = await svc.call('GET', '/healthz?probe=1');
    expect([h.status, h.body.status]).toEqual([200, 'ok']);
    const o = await svc.call('GET', '/v2/trade/openapi.json?v=2');
    expect([o.status, typeof o.body.openapi]).toEqual([200, 'string']);
  });
});
