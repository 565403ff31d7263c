import http from 'node:http';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../api/app.js';
import { ROUTES } from '../../api/routes.js';
import { startHttp, type HttpService } from '../../api/server.js';
import { startServices, type Services } from '../../engine/service.js';
import { SqliteStore } from '../../engine/store/sqlite.js';
import { MASTER_KEY, startTestService, testConfig, type TestService } from '../helpers.js';

/**
 * Sends a request whose body is announced but never sent; resolves with the status (or null when none
 * came within 15 s: generous, as other test files load the machine).
 */
function statusWithoutBody(baseUrl: string, path: string, headers: Record<string, string>): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${baseUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': String(1 << 20), ...headers },
    });
    const timer = setTimeout(() => {
      req.destroy();
      resolve(null);
    }, 15_000);
    req.on('response', (res) => {
      clearTimeout(timer);
      res.resume();
      resolve(res.statusCode ?? null);
      req.destroy();
    });
    req.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    req.flushHeaders();
  });
}

describe('HTTP layer hardening', () => {
  let svc: TestService;
  const as = { 'x-partner-user-id': 'hq' };
  beforeAll(async () => {
    svc = await startTestService();
    await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'hq' } });
  });
  afterAll(() => svc.close());

  it('without a valid token a malformed, non-JSON or oversized body answers 401, before the body is read', async () => {
    const unauthorized = { error: 'unauthorized', message: 'missing Authorization: Bearer <API_KEY> header' };
    for (const token of [null, 'pts_not_a_known_key_0000000000']) {
      for (const [body, headers] of [
        ['{"partner_user_id":', {}],
        ['partner_user_id=x', { 'content-type': 'text/plain' }],
        [JSON.stringify({ partner_user_id: 'x', pad: 'a'.repeat(1 << 20) }), {}],
      ] as const) {
        const res = await svc.call('POST', '/v2/trade/users', { token, body, headers: { ...headers } });
        expect(res.status).toBe(401);
        expect(res.body).toEqual(token === null ? unauthorized : { error: 'unauthorized', message: 'unknown API key' });
      }
    }
    // The 1 MB body is announced and never sent: the answer comes without waiting for it.
    expect(await statusWithoutBody(svc.baseUrl, '/v2/trade/users', {})).toBe(401);
    // With a valid token the body checks apply, the size limit included.
    expect((await svc.call('POST', '/v2/trade/users', { body: '{"partner_user_id":' })).body).toEqual({
      error: 'invalid_request',
      message: 'malformed JSON body',
    });
    expect(
      (await svc.call('POST', '/v2/trade/users', { body: 'x', headers: { 'content-type': 'text/plain' } })).status,
    ).toBe(415);
    expect(
      (await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'x', pad: 'a'.repeat(1 << 20) } })).body,
    ).toEqual({ error: 'payload_too_large', message: 'request body is larger than the limit' });
    // Valid JSON that is not an object is not "malformed": it says what is wrong
    for (const body of ['null', '123', '"x"']) {
      expect((await svc.call('POST', '/v2/trade/users', { body })).body).toEqual({
        error: 'invalid_request',
        message: 'the JSON body must be an object',
      });
    }
    // A body whose Content-Encoding stream is corrupt is the client's fault: 400, never a 500.
    for (const enc of ['gzip', 'deflate', 'br']) {
      expect(
        await svc.call('POST', '/v2/trade/users', { body: 'xx', headers: { 'content-encoding': enc } }),
      ).toMatchObject({
        status: 400,
        body: { error: 'invalid_request', message: expect.stringMatching(/could not be read/) },
      });
    }
    // Public routes keep their behaviour.
    expect((await svc.call('GET', '/healthz', { token: null })).status).toBe(200);
    expect((await svc.call('GET', '/v2/trade/openapi.json', { token: null })).status).toBe(200);
  });

  it('the rate limit still applies to unauthenticated requests', async () => {
    const limited = await startTestService({ env: { RATE_LIMIT_PER_MIN: '2' } });
    try {
      for (let i = 0; i < 2; i++)
        expect((await limited.call('POST', '/v2/trade/users', { token: null, body: '{' })).status).toBe(401);
      const res = await limited.call('POST', '/v2/trade/users', { token: null, body: '{' });
      expect(res.status).toBe(429);
      expect(res.body.error).toBe('rate_limited');
    } finally {
      await limited.close();
    }
  });

  it('a malformed percent-escape in the URL path is a 400 that names the path, not the body', async () => {
    const r = await svc.call('GET', '/v2/trade/orders/%ff', { headers: { 'x-partner-user-id': 'hq' } });
    expect(r).toMatchObject({
      status: 400,
      body: { error: 'invalid_request', message: 'the URL path has a malformed percent-escape' },
    });
  });

  it('DELETE /v2/trade/orders/ (an empty order id) is 404, never cancel-all', async () => {
    for (const v of ['v2', 'v1']) {
      const res = await svc.call('DELETE', `/${v}/trade/orders/`, { headers: as });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: 'not_found', message: `no route DELETE /${v}/trade/orders/` });
      // cancel-all itself stays where it is (built; this user has no open orders)
      const all = await svc.call('DELETE', `/${v}/trade/orders`, { headers: as });
      expect([all.status, all.body]).toEqual([
        200,
        {
          cancelled: [],
          not_cancelled: [],
          count: 0,
          results: [],
          counts: { canceled: 0, not_found: 0, already_done: 0 },
        },
      ]);
    }
    expect((await svc.call('GET', '/v2/trade/account')).status).toBe(200);
    // paths match exactly, case included
    expect((await svc.call('GET', '/V2/trade/account')).status).toBe(404);
  });

  it('a generated master key cannot revoke itself (409, as for MASTER_API_KEY)', async () => {
    const token = (await svc.services.keys.ensureMasterKey('p11', undefined))!;
    const me = await svc.call('GET', '/v2/trade/account', { token });
    expect(me.body.api_key.kind).toBe('master');
    const res = await svc.call('DELETE', `/v2/trade/api-keys/${me.body.api_key.key_id}`, { token });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({
      error: 'conflict',
      message:
        "the partner's master key cannot be revoked here: it is the partner's way in, and revoking it " +
        'would lock the partner out',
    });
    expect((await svc.call('GET', '/v2/trade/account', { token })).status).toBe(200);
    expect((await svc.call('DELETE', '/v2/trade/api-keys/key_env_demo')).body).toEqual({
      error: 'conflict',
      message: 'the MASTER_API_KEY key is set by configuration and cannot be revoked here',
    });
  });

  it('an epoch-ms field is bounded: a key expiry of 1e300 is a 400 naming the field, changing nothing', async () => {
    const res = await svc.call('POST', '/v2/trade/users/hq/api-keys', {
      body: { scopes: ['trade.read'], expires_at: 1e300 },
    });
    expect(res).toMatchObject({
      status: 400,
      body: {
        error: 'invalid_request',
        message: expect.stringMatching(
          /expires_at must be <= 253402300799999|expires_at must be at most 253402300799999/,
        ),
      },
    });
  });

  it('integer query parameters take decimal digits only, on every list', async () => {
    const lists = ROUTES.filter(
      (r) =>
        r.method === 'get' &&
        r.query &&
        Object.values(r.query.properties).some((p) => (p as { type?: string }).type === 'integer'),
    );
    expect(lists.map((r) => r.path)).toContain('/v2/trade/activity');
    for (const route of lists) {
      const path = route.path.replace(':address', '0x0000000000000000000000000000000000000001');
      const ints = Object.entries(route.query!.properties)
        .filter(([, p]) => (p as { type?: string }).type === 'integer')
        .map(([n]) => n);
      const base = route.query!.required?.includes('token_id') ? 'token_id=1&' : '';
      for (const name of ints) {
        for (const bad of ['0x10', '1e2', '%2B5', '5.0', '+5', '']) {
          const res = await svc.call('GET', `${path}?${base}${name}=${bad}`, { headers: as });
          const shown = JSON.stringify(decodeURIComponent(bad.replace(/\+/g, ' ')));
          expect(res.status, `${path} ${name}=${bad}`).toBe(400);
          expect(res.body, `${path} ${name}=${bad}`).toEqual({
            error: 'invalid_request',
            message: `query parameter ${name} must be an integer in decimal digits; received ${shown}`,
          });
        }
      }
    }
    const ok = await svc.call('GET', '/v2/trade/markets?limit=2&offset=0');
    expect(ok.status).toBe(200);
    expect(ok.body.markets).toHaveLength(2);
    expect((await svc.call('GET', '/v2/trade/markets?limit=0')).body).toEqual({
      error: 'invalid_request',
      message: 'query parameter limit must be at least 1',
    });
    expect((await svc.call('GET', '/v2/trade/markets?limit=1&limit=2')).body).toEqual({
      error: 'invalid_request',
      message: 'query parameter limit must be an integer in decimal digits; received more than one value',
    });
  });

  it('nosniff on every response, no-store on authenticated routes, a CSP that lets JSON load nothing', async () => {
    const authed = await svc.call('GET', '/v2/trade/account');
    expect(authed.headers.get('cache-control')).toBe('no-store');
    expect(authed.headers.get('x-content-type-options')).toBe('nosniff');
    expect(authed.headers.get('content-security-policy')).toBe("default-src 'none';frame-ancestors 'none'");
    expect(authed.headers.get('x-frame-options')).toBe('DENY');
    const refused = await svc.call('GET', '/v2/trade/account', { token: null });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('cache-control')).toBe('no-store');
    for (const path of [
      '/healthz',
      '/v2/trade/openapi.json',
      '/v2/trade/nope',
      '/dashboard',
      '/dashboard/dashboard.js',
      '/socket.io/socket.io.min.js',
    ]) {
      const res = await fetch(svc.baseUrl + path);
      expect(res.headers.get('x-content-type-options'), path).toBe('nosniff');
      expect(res.headers.get('cache-control') ?? '', path).not.toContain('no-store');
    }
    const page = await fetch(`${svc.baseUrl}/dashboard`);
    expect(page.headers.get('content-security-policy')).toMatch(
      new RegExp(
        "^default-src 'none';script-src 'self';script-src-attr 'none';style-src 'self'( " +
          "'sha256-[\\w+/=]+')?;img-src 'self' data:;connect-src 'self';base-uri 'none';form-action " +
          "'self';frame-ancestors 'none';object-src 'none'$",
      ),
    );
  });
});

describe('request log lines', () => {
  let services: Services;
  let httpSvc: HttpService;
  const lines: Array<Record<string, any>> = [];
  beforeAll(async () => {
    const log = pino({ level: 'info' }, { write: (s: string) => lines.push(JSON.parse(s)) });
    ({ services } = await startServices(testConfig(), log, { store: await SqliteStore.open(null) }));
    httpSvc = await startHttp(services, 0, '127.0.0.1');
  });
  afterAll(async () => {
    await httpSvc.close();
    await services.stop();
  });

  const lineOf = (url: string) => lines.find((l) => l.req?.url === url && l.res);

  it('a 4xx is an INFO line carrying status, `error` and message, with no stack; a 2xx is INFO', async () => {
    const base = `http://127.0.0.1:${httpSvc.port}`;
    await fetch(`${base}/v2/trade/account?x=401`);
    await fetch(`${base}/v2/trade/markets?limit=0x10`, { headers: { authorization: `Bearer ${MASTER_KEY}` } });
    await fetch(`${base}/healthz?x=200`);
    await new Promise((r) => setImmediate(r));
    expect(lineOf('/v2/trade/account?x=401')).toMatchObject({
      level: 30,
      res: { statusCode: 401 },
      error: 'unauthorized',
      error_message: 'missing Authorization: Bearer <API_KEY> header',
      msg: 'request completed',
    });
    expect(lineOf('/v2/trade/markets?limit=0x10')).toMatchObject({
      level: 30,
      res: { statusCode: 400 },
      error: 'invalid_request',
      error_message: 'query parameter limit must be an integer in decimal digits; received "0x10"',
    });
    expect(lineOf('/healthz?x=200')).toMatchObject({ level: 30, res: { statusCode: 200 } });
    expect(lineOf('/healthz?x=200')!.error).toBeUndefined();
  });

  it('a 503 (degraded health, store down) is a WARN line without a stack, not an ERROR', async () => {
    const base = `http://127.0.0.1:${httpSvc.port}`;
    await services.timers.drain(1000); // the scheduler stops: health is degraded
    expect((await fetch(`${base}/healthz?x=503`)).status).toBe(503);
    await new Promise((r) => setImmediate(r));
    const line = lineOf('/healthz?x=503')!;
    expect(line).toMatchObject({ level: 40, res: { statusCode: 503 }, msg: 'request completed' });
    expect(line.err).toBeUndefined();
  });

  it('an unexpected error is logged through req.log, bound to its request, and answered 500', async () => {
    const app = createApp(services);
    app.get('/boom', () => {
      throw new Error('boom');
    });
    // the test route goes before the 404 handler and the error middleware (the last two layers)
    const stack = (app as unknown as { router: { stack: unknown[] } }).router.stack;
    stack.splice(stack.length - 3, 0, stack.pop());
    const server = http.createServer(app);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const res = await fetch(`http://127.0.0.1:${(server.address() as { port: number }).port}/boom?x=1`, {
        headers: { 'x-request-id': 'req-boom-1' },
      });
      expect(res.status).toBe(500);
      expect(res.headers.get('x-request-id')).toBe('req-boom-1');
      await new Promise((r) => setImmediate(r));
      const unhandled = lines.find((l) => l.msg === 'unhandled error' && l.req?.id === 'req-boom-1');
      expect(unhandled).toMatchObject({
        level: 50,
        req: { id: 'req-boom-1', method: 'GET', url: '/boom?x=1' },
        err: { message: 'boom' },
      });
      expect(lines.filter((l) => l.req?.id === 'req-boom-1' && l.res)).toMatchObject([
        { level: 50, res: { statusCode: 500 }, msg: 'request errored' },
      ]);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });

  it('a token sent in the query string is never logged: its value reads [redacted]', async () => {
    const base = `http://127.0.0.1:${httpSvc.port}`;
    await fetch(`${base}/v2/trade/account?api_key=${MASTER_KEY}&limit=5&access%5Ftoken=${MASTER_KEY}`);
    await new Promise((r) => setImmediate(r));
    expect(lineOf('/v2/trade/account?api_key=[redacted]&limit=5&access%5Ftoken=[redacted]')).toMatchObject({
      res: { statusCode: 401 },
    });
    expect(JSON.stringify(lines)).not.toContain(MASTER_KEY);
  });
});
