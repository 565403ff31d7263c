import { getAddress } from 'ethers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROUTES } from '../../api/routes.js';
import { SCOPES } from '../../engine/auth.js';
import { validatorFor } from '../../api/validation.js';
import { ErrorEnvelope, Health } from '../../schemas/common.js';
import { AccountResponse, ApiKeyCreated, UserResponse } from '../../schemas/users.js';
import { startTestService, type TestService } from '../helpers.js';

function expectSchema(schema: object, body: unknown): void {
  const v = validatorFor(schema);
  expect(v(body), JSON.stringify(v.errors)).toBe(true);
}

function expectError(res: { status: number; body: any }, status: number, error: string, message?: RegExp): void {
  expect(res.status).toBe(status);
  expectSchema(ErrorEnvelope, res.body);
  expect(res.body.error).toBe(error);
  if (message) expect(res.body.message).toMatch(message);
}

/** Fills `:params` with harmless values. */
const concrete = (path: string) =>
  path.replace(/:(\w+)/g, (_, p: string) =>
    p === 'address' ? '0x0000000000000000000000000000000000000001' : `x-${p}`,
  );

describe('API foundation', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService();
  });
  afterAll(() => svc.close());

  it('GET /healthz is public and reports store and scheduler', async () => {
    const res = await svc.call('GET', '/healthz', { token: null });
    expect(res.status).toBe(200);
    expectSchema(Health, res.body);
    expect(res.body).toMatchObject({
      status: 'ok',
      store: { adapter: svc.services.store.adapter, ok: true },
      scheduler: { running: true },
    });
    expect(res.headers.get('x-request-id')).toBeTruthy();
  });

  it('answers unknown routes, malformed JSON, oversized and non-JSON bodies in the envelope', async () => {
    expectError(await svc.call('GET', '/v2/trade/nope'), 404, 'not_found');
    expectError(
      await svc.call('POST', '/v2/trade/users', { body: '{"partner_user_id":' }),
      400,
      'invalid_request',
      /malformed JSON/,
    );
    expectError(
      await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'x', pad: 'a'.repeat(70_000) } }),
      413,
      'payload_too_large',
    );
    expectError(
      await svc.call('POST', '/v2/trade/users', {
        body: 'partner_user_id=x',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      }),
      415,
      'unsupported_media_type',
    );
  });

  it('provisions users idempotently: 201 then 200 with created:false, same addresses', async () => {
    const first = await svc.call('POST', '/v2/trade/users', {
      body: { partner_user_id: 'alice', email: 'alice@example.com' },
    });
    expect(first.status).toBe(201);
    expectSchema(UserResponse, first.body);
    expect(first.body.created).toBe(true);
    expect(first.body.platform_user_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(getAddress(first.body.eoa_address)).toBe(first.body.eoa_address);
    expect(getAddress(first.body.safe_address)).toBe(first.body.safe_address);
    expect(first.body.safe_address).not.toBe(first.body.eoa_address);
    const again = await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'alice' } });
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ ...first.body, created: false });
    const other = await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'bob' } });
    expect(other.body.eoa_address).not.toBe(first.body.eoa_address);
  });

  it('provisioning concurrently for one partner_user_id creates one user', async () => {
    const results = await Promise.all(
      Array.from({ length: 10 }, () => svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'racer' } })),
    );
    expect(results.filter((r) => r.status === 201)).toHaveLength(1);
    expect(new Set(results.map((r) => r.body.platform_user_id)).size).toBe(1);
  });

  it('validates the user body: bad email, unknown property, missing id', async () => {
    expectError(
      await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'c', email: 'nope' } }),
      400,
      'invalid_request',
      /email must match format "email"/,
    );
    expectError(
      await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'c', wallet: 1 } }),
      400,
      'invalid_request',
      /unknown property 'wallet'/,
    );
    expectError(
      await svc.call('POST', '/v2/trade/users', { body: {} }),
      400,
      'invalid_request',
      /partner_user_id is required/,
    );
  });

  it('mints a per-user key (shown once) that sees only its user, and revokes it', async () => {
    await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'carol' } });
    const minted = await svc.call('POST', '/v2/trade/users/carol/api-keys', { body: { scopes: ['trade.read'] } });
    expect(minted.status).toBe(201);
    expectSchema(ApiKeyCreated, minted.body);
    const token = minted.body.api_key as string;
    const acct = await svc.call('GET', '/v2/trade/account', { token });
    expect(acct.status).toBe(200);
    expectSchema(AccountResponse, acct.body);
    expect(acct.body).toMatchObject({
      partner_id: 'demo',
      api_key: { kind: 'user', scopes: ['trade.read'], key_id: minted.body.key_id },
      user: { partner_user_id: 'carol' },
    });
    expectError(
      await svc.call('GET', '/v2/trade/account', { token, headers: { 'x-partner-user-id': 'alice' } }),
      403,
      'forbidden',
      /bound to another user/,
    );
    expectError(
      await svc.call('POST', '/v2/trade/users', { token, body: { partner_user_id: 'z' } }),
      403,
      'forbidden',
      /trade\.users/,
    );
    const revoked = await svc.call('DELETE', `/v2/trade/api-keys/${minted.body.key_id}`);
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({ key_id: minted.body.key_id, revoked: true });
    expectError(await svc.call('GET', '/v2/trade/account', { token }), 401, 'unauthorized', /revoked/);
    expectError(await svc.call('DELETE', '/v2/trade/api-keys/key_nope'), 404, 'not_found');
    expectError(await svc.call('DELETE', '/v2/trade/api-keys/key_env_demo'), 409, 'conflict');
  });

  it('refuses to mint partner scopes or expired keys, and for unknown users', async () => {
    expectError(
      await svc.call('POST', '/v2/trade/users/carol/api-keys', { body: { scopes: ['trade.users'] } }),
      400,
      'invalid_request',
      /scopes\.0 must be one of/,
    );
    expectError(
      await svc.call('POST', '/v2/trade/users/carol/api-keys', { body: { scopes: ['trade.read'], expires_at: 5 } }),
      400,
      'invalid_request',
      /expires_at/,
    );
    expectError(
      await svc.call('POST', '/v2/trade/users/nobody/api-keys', { body: { scopes: ['trade.read'] } }),
      404,
      'not_found',
    );
  });

  it('expired per-user keys answer 401', async () => {
    await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'dave' } });
    // far enough ahead that a loaded machine still uses the key before it expires; then waited for
    const expiresAt = Date.now() + 3000;
    const minted = await svc.call('POST', '/v2/trade/users/dave/api-keys', {
      body: { scopes: ['trade.read'], expires_at: expiresAt },
    });
    expect((await svc.call('GET', '/v2/trade/account', { token: minted.body.api_key })).status).toBe(200);
    await new Promise((r) => setTimeout(r, Math.max(0, expiresAt - Date.now() + 50)));
    expectError(
      await svc.call('GET', '/v2/trade/account', { token: minted.body.api_key }),
      401,
      'unauthorized',
      /expired/,
    );
  });

  it('master key on user-bound routes: X-Partner-User-Id missing → 400, unknown → 404', async () => {
    expectError(await svc.call('GET', '/v2/trade/orders/open'), 400, 'invalid_request', /X-Partner-User-Id/);
    expectError(
      await svc.call('GET', '/v2/trade/orders/open', { headers: { 'x-partner-user-id': 'ghost' } }),
      404,
      'not_found',
    );
    const acct = await svc.call('GET', '/v2/trade/account', { headers: { 'x-partner-user-id': 'alice' } });
    expect(acct.body.user.partner_user_id).toBe('alice');
  });

  describe('auth matrix over the route table', () => {
    let revokedToken: string;
    const tokensLacking = new Map<string, string>();
    beforeAll(async () => {
      await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'matrix' } });
      const k = await svc.call('POST', '/v2/trade/users/matrix/api-keys', { body: { scopes: ['trade.read'] } });
      revokedToken = k.body.api_key;
      await svc.call('DELETE', `/v2/trade/api-keys/${k.body.key_id}`);
      for (const scope of SCOPES) {
        const others = SCOPES.filter((s) => s !== scope && s !== 'trade.users');
        const m = await svc.call('POST', '/v2/trade/users/matrix/api-keys', { body: { scopes: others } });
        tokensLacking.set(scope, m.body.api_key);
      }
    });

    const guarded = ROUTES.filter((r) => r.scope !== null);
    it.each(
      guarded
        .flatMap((r) => [r, ...(r.v1 ? [{ ...r, path: r.path.replace('/v2/', '/v1/') }] : [])])
        .map((r) => [`${r.method.toUpperCase()} ${r.path}`, r] as const),
    )('%s: 401 without, with a bad, with a revoked token; 403 without its scope', async (_name, route) => {
      const path = concrete(route.path);
      const m = route.method.toUpperCase();
      expectError(await svc.call(m, path, { token: null }), 401, 'unauthorized');
      expectError(await svc.call(m, path, { token: 'pts_this_is_not_a_key_at_all' }), 401, 'unauthorized');
      expectError(await svc.call(m, path, { token: 'not a token' }), 401, 'unauthorized');
      expectError(await svc.call(m, path, { token: revokedToken }), 401, 'unauthorized');
      expectError(await svc.call(m, path, { token: tokensLacking.get(route.scope!)! }), 403, 'forbidden');
    });

    it.each(ROUTES.filter((r) => !r.handler).map((r) => [`${r.method.toUpperCase()} ${r.path}`, r] as const))(
      '%s is not built yet: 501 in the envelope',
      async (_n, route) => {
        const res = await svc.call(route.method.toUpperCase(), concrete(route.path), {
          headers: { 'x-partner-user-id': 'matrix' },
          body: route.method === 'get' || route.method === 'delete' ? undefined : (route.example ?? {}),
        });
        expectError(res, 501, 'not_implemented');
      },
    );

    // a misspelt cursor or offset must not serve page 1 again: every route with a query (every paged
    // read, every data read) refuses a parameter it does not declare, and names it
    it.each(
      ROUTES.filter((r) => r.query)
        .flatMap((r) => [r, ...(r.v1 ? [{ ...r, path: r.path.replace('/v2/', '/v1/') }] : [])])
        .map((r) => [`${r.method.toUpperCase()} ${r.path}`, r] as const),
    )('%s: an unknown query parameter is a 400 naming it, and changes nothing', async (_n, route) => {
      const before = await svc.call('GET', '/v2/trade/activity?limit=200', {
        headers: { 'x-partner-user-id': 'matrix' },
      });
      for (const q of ['cursorr=abc', 'ofset=10&limit=1', 'Limit=5']) {
        const res = await svc.call(route.method.toUpperCase(), `${concrete(route.path)}?${q}`, {
          headers: { 'x-partner-user-id': 'matrix' },
        });
        const name = q.split('&')[0]!.split('=')[0]!;
        expectError(
          res,
          400,
          'invalid_request',
          new RegExp(`^unknown query parameters? "${name}"(, "\\w+")*: this endpoint takes \\w`),
        );
      }
      expect(
        (await svc.call('GET', '/v2/trade/activity?limit=200', { headers: { 'x-partner-user-id': 'matrix' } })).body,
      ).toEqual(before.body);
    });
  });
});
