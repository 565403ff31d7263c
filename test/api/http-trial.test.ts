import net from 'node:net';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MASTER_KEY, startTestService, type TestService } from '../helpers.js';
import { poll } from './trading-kit.js';

/**
 * One raw HTTP exchange: writes `chunks` (a number = pause in ms), optionally
 * half-closes, and returns all bytes read until the server closes (or `waitMs`, default 15 s: generous, as
 * other test files load the machine; every exchange here ends with the server closing).
 */
function raw(
  port: number,
  chunks: Array<string | Buffer | number>,
  opts: { halfClose?: boolean; waitMs?: number } = {},
): Promise<{ text: string; closedByServer: boolean; ms: number }> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const s = net.connect(port, '127.0.0.1', () => {
      void (async () => {
        for (const c of chunks) {
          if (typeof c === 'number') await new Promise((r) => setTimeout(r, c));
          else s.write(c);
        }
        if (opts.halfClose) s.end();
      })();
    });
    let text = '';
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      s.destroy();
    }, opts.waitMs ?? 15_000);
    s.on('data', (d) => (text += d.toString('utf8')));
    s.on('error', (e: NodeJS.ErrnoException) => (e.code === 'ECONNRESET' ? undefined : reject(e)));
    s.on('close', () => {
      clearTimeout(timer);
      resolve({ text, closedByServer: !timedOut, ms: Date.now() - started });
    });
  });
}

/** The responses in a raw byte stream: status, lower-case headers, body (by Content-Length). */
function responses(text: string): Array<{ status: number; headers: Record<string, string>; body: string }> {
  const out: Array<{ status: number; headers: Record<string, string>; body: string }> = [];
  let rest = text;
  while (rest.startsWith('HTTP/1.1 ')) {
    const end = rest.indexOf('\r\n\r\n');
    const lines = rest.slice(0, end).split('\r\n');
    const headers: Record<string, string> = {};
    for (const l of lines.slice(1))
      headers[l.slice(0, l.indexOf(':')).toLowerCase()] = l.slice(l.indexOf(':') + 1).trim();
    const len = Number(headers['content-length'] ?? 0);
    out.push({ status: Number(lines[0]!.split(' ')[1]), headers, body: rest.slice(end + 4, end + 4 + len) });
    rest = rest.slice(end + 4 + len);
  }
  return out;
}

/** A raw request: headers as given (arrays repeat a header), Content-Length from the body unless given. */
function request(method: string, path: string, headers: Record<string, string | string[]>, body = ''): string {
  const all: Record<string, string | string[]> = { Host: 'x', ...headers };
  if (
    body &&
    !Object.keys(all).some((k) => k.toLowerCase() === 'content-length' || k.toLowerCase() === 'transfer-encoding')
  )
    all['Content-Length'] = String(Buffer.byteLength(body));
  let head = `${method} ${path} HTTP/1.1\r\n`;
  for (const [k, v] of Object.entries(all)) for (const one of ([] as string[]).concat(v)) head += `${k}: ${one}\r\n`;
  return `${head}\r\n${body}`;
}

describe('the HTTP front: what reaches the service outside the happy path', () => {
  let svc: TestService;
  let port: number;
  let symbol: string;
  const user = 'trial';
  const auth = { Authorization: `Bearer ${MASTER_KEY}`, 'X-Partner-User-Id': user };
  const orderBody = (size = '10') => JSON.stringify({ symbol, side: 'buy', type: 'LIMIT', price: '0.01', size });
  const openOrders = async () =>
    (await svc.call('GET', '/v2/trade/orders/open?limit=500', { headers: { 'x-partner-user-id': user } })).body
      .orders as Array<{ size: string }>;
  const post = (body: string, extra: Record<string, string | string[]> = {}) =>
    request(
      'POST',
      '/v2/trade/order',
      { ...auth, 'Content-Type': 'application/json', 'Idempotency-Key': randomUUID(), ...extra },
      body,
    );

  beforeAll(async () => {
    svc = await startTestService();
    port = svc.http.port;
    expect((await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: user } })).status).toBe(201);
    symbol = (await svc.call('GET', '/v2/trade/markets?limit=1')).body.markets[0].tokens[0].token_id;
  });
  afterAll(() => svc.close());

  it("a request Node's parser refuses is answered in the envelope with Connection: close (400, 431)", async () => {
    const cases: Array<[string, number, string]> = [
      ['FOO /v2/trade/order HTTP/1.1\r\nHost: x\r\n\r\n', 400, 'invalid_request'],
      [request('POST', '/v2/trade/order', { ...auth, 'Content-Length': '+10' }, '{}'), 400, 'invalid_request'],
      [
        request(
          'POST',
          '/v2/trade/order',
          { ...auth, 'Content-Length': '5', 'Transfer-Encoding': 'chunked' },
          '0\r\n\r\n',
        ),
        400,
        'invalid_request',
      ],
      [request('GET', `/v2/trade/orders/open?x=${'a'.repeat(20_000)}`, auth), 431, 'request_header_fields_too_large'],
    ];
    for (const [bytes, status, error] of cases) {
      const r = await raw(port, [bytes]);
      const [answer] = responses(r.text);
      expect(answer?.status, bytes.slice(0, 40)).toBe(status);
      expect(answer?.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(answer?.headers.connection).toBe('close');
      expect(JSON.parse(answer!.body)).toMatchObject({ error, message: expect.any(String) });
      expect(r.closedByServer).toBe(true);
    }
    expect(await openOrders()).toEqual([]);
  });

  it('a body shorter than its Content-Length, then half-close: 400 in the envelope, nothing placed', async () => {
    const full = post(orderBody());
    const r = await raw(port, [full.slice(0, full.length - 10)], { halfClose: true });
    const [answer] = responses(r.text);
    expect(answer?.status).toBe(400);
    expect(JSON.parse(answer!.body)).toMatchObject({ error: 'invalid_request' });
    expect(await openOrders()).toEqual([]);
  });

  it('non-HTTP bytes after a complete order: the order is answered 200, then the connection closes', async () => {
    const r = await raw(port, [post(orderBody('11')) + 'GARBAGE\r\n\r\n']);
    const answers = responses(r.text);
    expect(answers.map((a) => a.status)).toEqual([200]);
    expect(JSON.parse(answers[0]!.body)).toMatchObject({ status: 'OPEN', size: '11' });
    expect(r.closedByServer).toBe(true);
    expect((await openOrders()).map((o) => o.size)).toEqual(['11']);
    await svc.call('DELETE', '/v2/trade/orders', { headers: { 'x-partner-user-id': user } });
  });

  it('pipelined requests on one socket are answered in the order sent, an invalid one in its place', async () => {
    const r = await raw(port, [
      post(orderBody('12')) +
        post('{bad') +
        request('GET', '/v2/trade/account', auth) +
        post(orderBody('13'), { Connection: 'close' }),
    ]);
    const answers = responses(r.text);
    expect(answers.map((a) => a.status)).toEqual([200, 400, 200, 200]);
    expect(JSON.parse(answers[0]!.body).size).toBe('12');
    expect(JSON.parse(answers[3]!.body).size).toBe('13');
    await svc.call('DELETE', '/v2/trade/orders', { headers: { 'x-partner-user-id': user } });
  });

  it('a Content-Length over BODY_LIMIT_BYTES: 413 at once, before the body, with Connection: close', async () => {
    const head = post('', { 'Content-Length': String(10 * 1024 * 1024) });
    // only the headers and a few bytes are sent: the answer must not wait for the other 10 MiB
    const r = await raw(port, [head, '{"a":']);
    const [answer] = responses(r.text);
    expect(answer?.status).toBe(413);
    expect(answer?.headers.connection).toBe('close');
    expect(JSON.parse(answer!.body)).toEqual({
      error: 'payload_too_large',
      message: 'request body is larger than the limit',
    });
    // through a real client sending the whole body too
    const res = await fetch(`${svc.baseUrl}/v2/trade/order`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${MASTER_KEY}`,
        'x-partner-user-id': user,
        'content-type': 'application/json',
        'idempotency-key': randomUUID(),
      },
      body: 'x'.repeat(1_000_000),
    });
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({ error: 'payload_too_large', message: 'request body is larger than the limit' });
    expect(await openOrders()).toEqual([]);
  });

  it('two Authorization headers are a 401; two X-Partner-User-Id a 400; nothing placed', async () => {
    for (const second of [`Bearer ${MASTER_KEY}`, 'Bearer pts_some_other_key_000000000000']) {
      const r = await raw(port, [
        post(orderBody(), { Authorization: [`Bearer ${MASTER_KEY}`, second], Connection: 'close' }),
      ]);
      const [answer] = responses(r.text);
      expect(answer?.status).toBe(401);
      expect(JSON.parse(answer!.body)).toEqual({
        error: 'unauthorized',
        message: 'send exactly one Authorization header',
      });
    }
    const r = await raw(port, [
      post(orderBody(), { 'X-Partner-User-Id': [user, 'someone-else'], Connection: 'close' }),
    ]);
    const [answer] = responses(r.text);
    expect(answer?.status).toBe(400);
    expect(JSON.parse(answer!.body)).toEqual({
      error: 'invalid_request',
      message: 'send the X-Partner-User-Id header once',
    });
    expect(await openOrders()).toEqual([]);
  });

  it('another method on a route is 405 with Allow; OPTIONS there 204 with Allow; unknown paths 404', async () => {
    const put = await fetch(`${svc.baseUrl}/v2/trade/order`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${MASTER_KEY}` },
    });
    expect(put.status).toBe(405);
    expect(put.headers.get('allow')).toBe('POST, OPTIONS');
    expect(await put.json()).toEqual({
      error: 'method_not_allowed',
      message: 'PUT is not allowed on /v2/trade/order; allowed: POST, OPTIONS',
    });
    const head = await fetch(`${svc.baseUrl}/v2/trade/order`, { method: 'HEAD' });
    expect([head.status, head.headers.get('allow')]).toEqual([405, 'POST, OPTIONS']);
    const options = await fetch(`${svc.baseUrl}/v2/trade/orders/ord_123`, { method: 'OPTIONS' });
    expect(options.status).toBe(204);
    expect(options.headers.get('allow')).toBe('GET, HEAD, DELETE, OPTIONS');
    for (const [method, path] of [
      ['OPTIONS', '/nope'],
      ['PUT', '/v2/trade/order/'],
      ['DELETE', '/v2/trade/orders/'],
      ['GET', '//v2/trade/order'],
    ] as const) {
      const res = await fetch(`${svc.baseUrl}${path}`, { method, headers: { authorization: `Bearer ${MASTER_KEY}` } });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect((await res.json()).error).toBe('not_found');
    }
  });
});

describe('load shedding under clients that retry at once', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService({ env: { WRITE_CONCURRENCY: '1', WRITE_QUEUE_LENGTH: '0' } });
    await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'shed' } });
  });
  afterAll(() => svc.close());

  it('a shed request is answered 503 with Retry-After and Connection: close, nothing changed', async () => {
    const auth = {
      Authorization: `Bearer ${MASTER_KEY}`,
      'X-Partner-User-Id': 'shed',
      'Content-Type': 'application/json',
    };
    // holds the one write slot: a cancel-all whose handler waits until released
    const orders = svc.services.orders;
    const openOrderIds = orders.openOrderIds.bind(orders);
    let release = (): void => undefined;
    let holding = false;
    orders.openOrderIds = (async (...args: Parameters<typeof openOrderIds>) => {
      holding = true;
      await new Promise<void>((r) => (release = r));
      return openOrderIds(...args);
    }) as typeof orders.openOrderIds;
    const holder = fetch(`${svc.baseUrl}/v2/trade/orders`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${MASTER_KEY}`, 'x-partner-user-id': 'shed', 'idempotency-key': randomUUID() },
    });
    await poll('the cancel-all holds the slot', async () => holding, Boolean);
    try {
      const r = await raw(svc.http.port, [
        request('POST', '/v2/trade/order', { ...auth, 'Idempotency-Key': randomUUID() }, '{}'),
      ]);
      const answers = responses(r.text);
      expect(answers.map((a) => a.status)).toEqual([503]);
      expect(answers[0]!.headers['retry-after']).toBe('1');
      expect(answers[0]!.headers.connection).toBe('close');
      expect(JSON.parse(answers[0]!.body)).toMatchObject({ error: 'overloaded' });
      expect(r.closedByServer).toBe(true);
    } finally {
      release();
      orders.openOrderIds = openOrderIds;
    }
    expect((await holder).status).toBe(200);
    expect(
      (await svc.call('GET', '/v2/trade/activity', { headers: { 'x-partner-user-id': 'shed' } })).body.activity,
    ).toEqual([]);
    expect(
      (await svc.call('GET', '/v2/trade/orders/open', { headers: { 'x-partner-user-id': 'shed' } })).body.orders,
    ).toEqual([]);
  });
});
