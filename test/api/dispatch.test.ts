import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type ErrorRequestHandler, type Express, type RequestHandler } from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RouteDispatcher, sequence } from '../../api/dispatch.js';
import { jsonBody } from '../../api/json-body.js';
import { ROUTES, SIM_ROUTES } from '../../api/routes.js';

/** Every mounted (method, path) of the route table, in mounting order (api/app.ts `createApp`). */
const MOUNTED: Array<[method: 'get' | 'post' | 'patch' | 'delete', path: string]> = [
  ...ROUTES.flatMap(
    (r) =>
      (r.v1
        ? [
            [r.method, r.path],
            [r.method, r.path.replace(/^\/v2\//, '/v1/')],
          ]
        : [[r.method, r.path]]) as Array<[typeof r.method, string]>,
  ),
  ...SIM_ROUTES.map((r) => [r.method, r.path] as [typeof r.method, string]),
];

async function listen(app: Express): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer(app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

const onError: ErrorRequestHandler = (err: { status?: number; message: string }, _req, res, _next) => {
  res.status(err.status ?? 500).json({ error: err.message });
};

/** The route table on Express alone (Express's own routing), or behind the dispatcher (as api/app.ts mounts it). */
function tableApp(withDispatcher: boolean): Express {
  const app = express();
  app.set('strict routing', true);
  app.set('case sensitive routing', true);
  const dispatcher = new RouteDispatcher();
  if (withDispatcher) app.use(sequence([(_req, _res, next) => next(), dispatcher.middleware()]));
  MOUNTED.forEach(([method, path], i) => {
    const answer =
      (via: string): RequestHandler =>
      (req, res) =>
        void res.set('x-via', via).json({ route: i, params: req.params });
    dispatcher.add(method, path, [(_req, _res, next) => next(), answer('dispatch')]);
    app[method](path, (_req, _res, next) => next(), answer('express'));
  });
  app.use((req, res) => void res.status(404).json({ error: 'not_found', path: req.path }));
  app.use(onError);
  return app;
}

describe('RouteDispatcher (api/dispatch.ts): the route Express would pick, without walking the table', () => {
  let plain: Awaited<ReturnType<typeof listen>>;
  let dispatched: Awaited<ReturnType<typeof listen>>;
  beforeAll(async () => {
    plain = await listen(tableApp(false));
    dispatched = await listen(tableApp(true));
  });
  afterAll(async () => {
    await plain.close();
    await dispatched.close();
  });

  it('answers every method on every path (and near misses) exactly as Express alone, over HTTP', async () => {
    const paths = new Set<string>([
      '/',
      '/v2/trade',
      '/v2/trade/',
      '/v2/trade/orders/',
      '/v2/trade/orders//x',
      '/nope',
      '/v2/trade/orders/open/',
      '/v2/trade/orders/%ff',
      '/v2/trade/orders/a%2Fb',
    ]);
    for (const [, path] of MOUNTED) {
      const filled = path.replace(/:[A-Za-z_]+/g, 'abc');
      paths.add(filled);
      paths.add(`${filled}/`);
      paths.add(filled.toUpperCase());
      paths.add(path.replace(/:[A-Za-z_]+/g, '%41b%20c'));
      paths.add(`${filled}?x=1`);
    }
    let viaDispatch = 0;
    for (const path of paths) {
      for (const method of ['GET', 'HEAD', 'POST', 'PATCH', 'DELETE', 'OPTIONS', 'PUT']) {
        const [a, b] = await Promise.all([
          fetch(plain.url + path, { method }),
          fetch(dispatched.url + path, { method }),
        ]);
        const what = `${method} ${path}`;
        expect(b.status, what).toBe(a.status);
        expect(await b.text(), what).toBe(await a.text());
        expect(b.headers.get('allow'), what).toBe(a.headers.get('allow'));
        if (b.headers.get('x-via') === 'dispatch') viaDispatch++;
        else if (a.status === 200 && method !== 'OPTIONS' && !path.includes('%'))
          throw new Error(`${what} was not dispatched`);
      }
    }
    expect(viaDispatch).toBeGreaterThan(MOUNTED.length);
  });

  it('keeps mounting order: an earlier route wins, parametrised over exact and exact over parametrised', async () => {
    const dispatcher = new RouteDispatcher();
    const says =
      (what: string): RequestHandler =>
      (_req, res) =>
        void res.json(what);
    dispatcher.add('get', '/a/:id', [says('param a')]);
    dispatcher.add('get', '/a/fixed', [says('exact a')]);
    dispatcher.add('get', '/b/fixed', [says('exact b')]);
    dispatcher.add('get', '/b/:id', [says('param b')]);
    dispatcher.add('post', '/a/fixed', [says('post exact a')]);
    const app = express();
    app.use(dispatcher.middleware());
    app.use((_req, res) => void res.status(404).json('none'));
    const s = await listen(app);
    try {
      const get = async (path: string, method = 'GET') => (await fetch(s.url + path, { method })).json();
      expect(await get('/a/fixed')).toBe('param a');
      expect(await get('/b/fixed')).toBe('exact b');
      expect(await get('/b/other')).toBe('param b');
      expect(await get('/a/fixed', 'POST')).toBe('post exact a');
      expect(await get('/a/fixed/')).toBe('none');
    } finally {
      await s.close();
    }
    expect(() => new RouteDispatcher().add('get', '/files/*path', [])).toThrow(/unsupported path syntax/);
  });

  it('throw, reject or next(err) reach the error middleware; next() after the last handler continues', async () => {
    const dispatcher = new RouteDispatcher();
    dispatcher.add('get', '/throw', [
      () => {
        throw Object.assign(new Error('thrown'), { status: 418 });
      },
    ]);
    dispatcher.add('get', '/reject', [
      async () => {
        throw Object.assign(new Error('rejected'), { status: 409 });
      },
    ]);
    dispatcher.add('get', '/next-err', [
      (_req, _res, next) => next(Object.assign(new Error('passed'), { status: 422 })),
    ]);
    dispatcher.add('get', '/through', [(_req, _res, next) => next()]);
    const app = express();
    app.use(dispatcher.middleware());
    app.use((_req, res) => void res.status(404).json({ error: 'fell through' }));
    app.use(onError);
    const s = await listen(app);
    try {
      for (const [path, status, error] of [
        ['/throw', 418, 'thrown'],
        ['/reject', 409, 'rejected'],
        ['/next-err', 422, 'passed'],
        ['/through', 404, 'fell through'],
      ] as const) {
        const res = await fetch(s.url + path);
        expect([res.status, await res.json()], path).toEqual([status, { error }]);
      }
    } finally {
      await s.close();
    }
  });
});

describe('jsonBody (api/json-body.ts): the fast path reads what express.json reads', () => {
  const LIMIT = 1024;
  let general: Awaited<ReturnType<typeof listen>>;
  let fast: Awaited<ReturnType<typeof listen>>;
  const parserApp = (parser: RequestHandler) => {
    const app = express();
    app.post('/p', parser, (req, res) => void res.json({ body: req.body === undefined ? '(undefined)' : req.body }));
    app.use(((err: { status?: number; type?: string; body?: unknown }, _req, res, _next) => {
      res.status(err.status ?? 500).json({ type: err.type, body: err.body ?? null });
    }) as ErrorRequestHandler);
    return app;
  };
  beforeAll(async () => {
    general = await listen(
      parserApp(express.json({ limit: LIMIT, strict: true, type: ['application/json', 'application/*+json'] })),
    );
    fast = await listen(parserApp(jsonBody(LIMIT)));
  });
  afterAll(async () => {
    await general.close();
    await fast.close();
  });

  it('the same body or the same error type, status and text, for every content type and body', async () => {
    const bodies: Array<string | Uint8Array<ArrayBuffer>> = [
      '{"a":1}',
      '[1,2]',
      ' \n\t{"a":"é€𝄞"}',
      '\ufeff{"bom":true}',
      '',
      ' ',
      'null',
      '1',
      '"x"',
      'true',
      '{"a":',
      '{"a":1}x',
      'x',
      `{"pad":"${'a'.repeat(LIMIT)}"}`,
      `{"pad":"${'a'.repeat(LIMIT - 10)}"}`,
      new Uint8Array([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
    ];
    const types = [
      'application/json',
      'application/json; charset=utf-8',
      'application/json; charset=latin1',
      'application/merge-patch+json',
      'text/plain',
      'APPLICATION/JSON',
      undefined,
    ];
    for (const body of bodies) {
      for (const type of types) {
        const init: RequestInit = { method: 'POST', body, headers: type ? { 'content-type': type } : {} };
        const [a, b] = await Promise.all([fetch(`${general.url}/p`, init), fetch(`${fast.url}/p`, init)]);
        const what = `${type} ${JSON.stringify(body.toString().slice(0, 30))}`;
        expect(b.status, what).toBe(a.status);
        expect(await b.json(), what).toEqual(await a.json());
      }
    }
  });

  it('a body sent in several packets, and a request without a body', async () => {
    for (const app of [general, fast]) {
      const url = new URL(`${app.url}/p`);
      const answer = await new Promise<{ status: number; text: string }>((resolve, reject) => {
        const req = http.request(
          {
            host: url.hostname,
            port: url.port,
            path: '/p',
            method: 'POST',
            headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength('{"a":"€€€"}') },
          },
          (res) => {
            let text = '';
            res.on('data', (d) => (text += d));
            res.on('end', () => resolve({ status: res.statusCode!, text }));
          },
        );
        req.on('error', reject);
        req.write('{"a":"');
        setTimeout(() => req.end('€€€"}'), 30);
      });
      expect(answer).toEqual({ status: 200, text: JSON.stringify({ body: { a: '€€€' } }) });
      const none = await fetch(`${app.url}/p`, { method: 'POST' });
      expect(await none.json()).toEqual({ body: '(undefined)' });
    }
  });
});
