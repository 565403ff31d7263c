import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROUTES } from '../../api/routes.js';
import { startTestService, type TestService } from '../helpers.js';

const concrete = (path: string) =>
  path.replace(/:(\w+)/g, (_, p: string) =>
    p === 'address' ? '0x0000000000000000000000000000000000000001' : `x-${p}`,
  );

const parsesAsJson = (s: string): boolean => {
  try {
    JSON.parse(s);
    return true;
  } catch {
    return false;
  }
};

/** Bodies no schema accepts: non-objects, and objects carrying a property no schema declares. */
const malformedBody = fc.oneof(
  fc.array(fc.jsonValue(), { maxLength: 4 }).map((v) => JSON.stringify(v)),
  fc
    .oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.string(), fc.boolean())
    .map((v) => JSON.stringify(v)),
  fc
    .tuple(
      fc.dictionary(fc.string({ maxLength: 12 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 5 }),
      fc.jsonValue({ maxDepth: 2 }),
    )
    .map(([o, v]) => JSON.stringify({ ...o, zz_not_in_any_schema: v })),
  fc
    .string({ maxLength: 40 })
    .map((s) => `{${s}`)
    .filter((s) => !parsesAsJson(s)), // not JSON at all ("{" + "}" would be the empty object)
  fc.constant('null'),
);

describe('API contract properties', () => {
  let svc: TestService;
  let snapshot: () => Promise<unknown>;
  beforeAll(async () => {
    svc = await startTestService();
    await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'prop' } });
    const as = { 'x-partner-user-id': 'prop' };
    snapshot = async () => ({
      balances: (await svc.call('GET', '/v2/trade/balances', { headers: as })).body,
      open: (await svc.call('GET', '/v2/trade/orders/open', { headers: as })).body.total,
      positions: (await svc.call('GET', '/v2/trade/positions', { headers: as })).body.total,
      actors: await svc.services.actors.count({}),
    });
  });
  afterAll(() => svc.close());

  const posts = ROUTES.filter((r) => r.method === 'post');

  it.each(posts.map((r) => [r.path, r] as const))(
    'malformed bodies to POST %s → always 4xx in the envelope, never 5xx, nothing changed',
    async (_p, route) => {
      const before = await snapshot();
      await fc.assert(
        fc.asyncProperty(malformedBody, async (raw) => {
          const res = await svc.call('POST', concrete(route.path), {
            body: raw,
            headers: { 'x-partner-user-id': 'prop', 'content-type': 'application/json' },
          });
          // call() already checked the envelope shape of every non-2xx
          expect(res.status, `${raw} → ${JSON.stringify(res.body)}`).toBeGreaterThanOrEqual(400);
          expect(res.status).toBeLessThan(500);
        }),
        { numRuns: 40 },
      );
      expect(await snapshot()).toEqual(before);
    },
  );

  it('POST /v2/trade/order: arbitrary field values never cause a 5xx', async () => {
    const market = (await svc.call('GET', '/v2/trade/markets?limit=1')).body.markets[0];
    const symbol = market.tokens[0].token_id;
    const dec = fc.oneof(
      fc.constantFrom('0', '0.5', '72', '0.001', '1', '5', '1e3', '-1', '', '0.0000001', '99999999999999999999'),
      fc.string({ maxLength: 8 }),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.record(
          {
            symbol: fc.constantFrom(symbol, '1', 'abc'),
            side: fc.constantFrom('buy', 'sell', 'hold'),
            type: fc.constantFrom(
              'LIMIT',
              'MARKET',
              'TWAP',
              'ICEBERG',
              'PEGGED',
              'STOP_LOSS',
              'TAKE_PROFIT',
              'TRAILING_STOP',
              'TRAILING_BUY',
              'OTHER',
            ),
            price: dec,
            size: dec,
            quote_amount: dec,
            time_in_force: fc.constantFrom('GTC', 'IOC', 'FOK', 'GTD'),
            expiration: fc.oneof(fc.integer(), fc.constant(4_102_444_800_000)),
            execution: fc.record(
              { interval_sec: fc.integer({ min: -5, max: 100 }), clip_size: dec },
              { requiredKeys: [] },
            ),
            take_profit: fc.record({ price: dec }),
          },
          { requiredKeys: ['symbol', 'side', 'type'] },
        ),
        async (body) => {
          const res = await svc.call('POST', '/v2/trade/order', { body, headers: { 'x-partner-user-id': 'prop' } });
          // 501 is the honest answer for a valid body of a type not built yet; nothing else may be 5xx
          expect(res.status < 500 || res.status === 501, JSON.stringify({ body, res: res.body })).toBe(true);
        },
      ),
      { numRuns: 150 },
    );
  });
});

describe('spec part 9: /v1/trade mounts', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService();
  });
  afterAll(() => svc.close());

  it('reads, cancels and user provisioning behave as under /v2/trade', async () => {
    const v1 = await svc.call('POST', '/v1/trade/users', { body: { partner_user_id: 'old-client' } });
    expect(v1.status).toBe(201);
    const v2 = await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'old-client' } });
    expect(v2).toMatchObject({ status: 200, body: { ...v1.body, created: false } });
    const as = { 'x-partner-user-id': 'old-client' };
    for (const p of ['/balances', '/positions', '/orders/open', '/account']) {
      const a = await svc.call('GET', `/v1/trade${p}`, { headers: as });
      const b = await svc.call('GET', `/v2/trade${p}`, { headers: as });
      expect(a.status).toBe(200);
      expect(a.body).toEqual(b.body);
    }
    const token = (await svc.call('GET', '/v2/trade/markets?limit=5')).body.markets.find(
      (m: any) => m.tick_size === '0.01',
    ).tokens[0].token_id;
    const placed = await svc.call('POST', '/v2/trade/order', {
      body: { symbol: token, side: 'buy', type: 'LIMIT', price: '0.02', size: '5' },
      headers: as,
    });
    const canceled = await svc.call('DELETE', `/v1/trade/orders/${placed.body.order_id}`, { headers: as });
    expect(canceled).toMatchObject({ status: 200, body: { status: 'CANCELED' } });
    // not mounted under v1: order placement is v2 only
    expect((await svc.call('POST', '/v1/trade/order', { body: {}, headers: as })).status).toBe(404);
    // the v1 mount needs the same auth
    expect((await svc.call('GET', '/v1/trade/balances', { token: null })).status).toBe(401);
  });

  it('activity pages with an opaque cursor that clients cannot read or forge', async () => {
    await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'act' } });
    const as = { 'x-partner-user-id': 'act' };
    const token = (await svc.call('GET', '/v2/trade/markets?limit=5')).body.markets.find(
      (m: any) => m.tick_size === '0.01',
    ).tokens[0].token_id;
    const ids: string[] = [];
    for (let i = 1; i <= 5; i++)
      ids.push(
        (
          await svc.call('POST', '/v2/trade/order', {
            body: { symbol: token, side: 'buy', type: 'LIMIT', price: `0.0${i}`, size: '5' },
            headers: as,
          })
        ).body.order_id,
      );
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let pages = 0; pages < 5; pages++) {
      const res: any = await svc.call('GET', `/v2/trade/activity?limit=2${cursor ? `&cursor=${cursor}` : ''}`, {
        headers: as,
      });
      expect(res.status).toBe(200);
      seen.push(...res.body.activity.map((a: any) => a.id));
      cursor = res.body.next_cursor;
      if (!cursor) break;
      expect(Buffer.from(cursor, 'base64url').toString('latin1')).not.toMatch(/ord_/);
    }
    expect(seen).toEqual([...ids].reverse());
    const forged = Buffer.from(JSON.stringify({ k: 'x' })).toString('base64url');
    expect((await svc.call('GET', `/v2/trade/activity?cursor=${forged}`, { headers: as })).body).toMatchObject({
      error: 'invalid_request',
      message: expect.stringMatching(/cursor is not valid/),
    });
    // sealed under a key derived from the API token that read the page: another key of the same user cannot open it
    const first: any = await svc.call('GET', '/v2/trade/activity?limit=2', { headers: as });
    const minted = await svc.call('POST', '/v2/trade/users/act/api-keys', { body: { scopes: ['trade.read'] } });
    expect(minted.status).toBe(201);
    const other = await svc.call('GET', `/v2/trade/activity?limit=2&cursor=${first.body.next_cursor}`, {
      token: minted.body.api_key,
    });
    expect(other).toMatchObject({
      status: 400,
      body: { error: 'invalid_request', message: expect.stringMatching(/cursor is not valid/) },
    });
    const own: any = await svc.call('GET', '/v2/trade/activity?limit=2', { token: minted.body.api_key });
    const next = await svc.call('GET', `/v2/trade/activity?limit=2&cursor=${own.body.next_cursor}`, {
      token: minted.body.api_key,
    });
    expect(next.status).toBe(200);
    expect(next.body.activity.map((a: any) => a.id)).toEqual([...ids].reverse().slice(2, 4));
  });

  it('spec strings: `invalid window` for a bad leaderboard window; limit above the maximum → 400', async () => {
    const bad = await svc.call('GET', '/v2/trade/leaderboard?window=fortnight');
    expect(bad).toMatchObject({
      status: 400,
      body: { error: 'invalid window', message: expect.stringMatching(/window must be one of/) },
    });
    expect((await svc.call('GET', '/v2/trade/leaderboard?limit=501')).body).toMatchObject({
      error: 'invalid_request',
      message: 'query parameter limit must be at most 500',
    });
    expect(
      (await svc.call('GET', '/v2/trade/traders/0x0000000000000000000000000000000000000001/positions?limit=1001'))
        .status,
    ).toBe(400);
    expect(
      (await svc.call('GET', '/v2/trade/traders/0x0000000000000000000000000000000000000001/positions?limit=1000'))
        .status,
    ).toBe(200);
    expect(
      (await svc.call('GET', '/v2/trade/activity?limit=201', { headers: { 'x-partner-user-id': 'old-client' } }))
        .status,
    ).toBe(400);
    expect((await svc.call('GET', '/v2/trade/traders/not-an-address/positions')).body).toMatchObject({
      error: 'invalid_request',
      message: expect.stringMatching(/path parameter address must match pattern/),
    });
  });
});
