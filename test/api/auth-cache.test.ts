import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../engine/clock.js';
import { startTestService, type TestService } from '../helpers.js';

/**
 * The caches in front of authentication: a token seen before is answered without
 * hashing it or reading its key (engine/auth.ts), a user read before without reading the store
 * (engine/users.ts). Through the real HTTP path.
 */
describe('authentication caches through HTTP', () => {
  let svc: TestService;
  const clock = new ManualClock(1_800_000_000_000);
  beforeAll(async () => {
    svc = await startTestService({ clock });
    await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'dora' } });
  });
  afterAll(() => svc.close());

  const mint = async (body: Record<string, unknown>) => {
    const minted = await svc.call('POST', '/v2/trade/users/dora/api-keys', { body });
    expect(minted.status).toBe(201);
    return { token: minted.body.api_key as string, keyId: minted.body.key_id as string };
  };

  it('a cached key revoked is refused on the very next request', async () => {
    const { token, keyId } = await mint({ scopes: ['trade.read'] });
    for (let i = 0; i < 3; i++) expect((await svc.call('GET', '/v2/trade/account', { token })).status).toBe(200);
    expect((await svc.call('DELETE', `/v2/trade/api-keys/${keyId}`)).status).toBe(200);
    const refused = await svc.call('GET', '/v2/trade/account', { token });
    expect([refused.status, refused.body]).toEqual([
      401,
      { error: 'unauthorized', message: 'API key has been revoked' },
    ]);
  });

  it('a cached key expires at its expires_at to the millisecond', async () => {
    const { token } = await mint({ scopes: ['trade.read'], expires_at: clock.now() + 1_000 });
    expect((await svc.call('GET', '/v2/trade/account', { token })).status).toBe(200);
    clock.advance(999);
    expect((await svc.call('GET', '/v2/trade/account', { token })).status).toBe(200);
    clock.advance(1);
    const refused = await svc.call('GET', '/v2/trade/account', { token });
    expect([refused.status, refused.body]).toEqual([401, { error: 'unauthorized', message: 'API key has expired' }]);
  });

  it('scopes are those of the key used, each request: a cached read-only key stays read-only', async () => {
    const { token } = await mint({ scopes: ['trade.read'] });
    expect((await svc.call('GET', '/v2/trade/balances', { token })).status).toBe(200);
    const refused = await svc.call('DELETE', '/v2/trade/orders/ord_x', { token });
    expect([refused.status, refused.body]).toEqual([
      403,
      { error: 'forbidden', message: 'this endpoint needs the trade.cancel scope' },
    ]);
  });

  it('an unknown user is not remembered: provisioned, it is found on the next request', async () => {
    const as = { 'x-partner-user-id': 'erin' };
    expect((await svc.call('GET', '/v2/trade/balances', { headers: as })).status).toBe(404);
    expect((await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'erin' } })).status).toBe(201);
    expect((await svc.call('GET', '/v2/trade/balances', { headers: as })).status).toBe(200);
    expect((await svc.call('GET', '/v2/trade/balances', { headers: as })).status).toBe(200); // the cached user
  });
});
