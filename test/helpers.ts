import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import { startHttp, type HttpService } from '../api/server.js';
import { ManualClock, systemClock, type Clock } from '../engine/clock.js';
import { loadConfig, type Config } from '../engine/config.js';
import { createLogger, type Logger } from '../engine/logger.js';
import { startServices, type Services } from '../engine/service.js';
import { openStore } from '../engine/store/index.js';
import type { MongoStore } from '../engine/store/mongo.js';
import { SqliteStore } from '../engine/store/sqlite.js';
import { loadCatalogue, type Catalogue } from '../engine/venue/markets.js';
import { mongoTestUri, withDatabase } from './mongo.js';
import type { Store } from '../engine/store/port.js';
import { ROUTES, SIM_ROUTES } from '../api/routes.js';
import { validatorFor } from '../api/validation.js';
import { ErrorEnvelope } from '../schemas/common.js';

export const MASTER_KEY = 'pts_test_master_key_0123456789abcdef';

/**
 * A running in-process service on port 0: on the `store` given, else on MongoDB when the tests have
 * one (test/mongo.ts: `MONGODB_URI` or `MONGOMS_SYSTEM_BINARY`, unless `TEST_STORE=sqlite`; a
 * fresh database per service, opened like production with `openStore`, engine lease included, and
 * dropped at close), else on an in-memory SQLite store (the default adapter).
 */
export interface TestService {
  baseUrl: string;
  services: Services;
  server: Server;
  http: HttpService;
  clock: Clock;
  /**
   * fetch against the service with the master key (unless `token` is given; null = no token).
   * POST, PATCH and DELETE get a fresh `Idempotency-Key` unless `idempotencyKey` names one
   * (null = send none).
   */
  call(
    method: string,
    path: string,
    opts?: { body?: unknown; token?: string | null; headers?: Record<string, string>; idempotencyKey?: string | null },
  ): Promise<{ status: number; body: any; headers: Headers }>;
  close(): Promise<void>;
}

export function testConfig(overrides: Record<string, string> = {}): Config {
  return loadConfig({
    PORT: '0',
    LOG_LEVEL: 'silent',
    MASTER_API_KEY: MASTER_KEY,
    SCHEDULER_POLL_MS: '200',
    SIM_REPLAY: 'off',
    SIM_CAPTURE: 'off',
    RATE_LIMIT_PER_MIN: '0',
    // a burst waits for its turn rather than being shed (503) when other test files load the machine;
    // the admission tests set their own queue limits
    WRITE_QUEUE_WAIT_MS: '30000',
    ...overrides,
  });
}

let databases = 0;

/** Opens the store of a service that brings none: see {@link TestService}. */
async function defaultTestStore(env: Record<string, string> = {}): Promise<Store> {
  const mongoUri = mongoTestUri();
  if (!mongoUri) return SqliteStore.open(null);
  const db = `pts_t_${process.pid}_${++databases}_${randomUUID().slice(0, 8)}`;
  const store = (await openStore(
    testConfig({ ...env, MONGODB_URI: withDatabase(mongoUri, db), MONGODB_ALLOW_STANDALONE: 'on' }),
    createLogger('silent'),
  )) as MongoStore;
  store.onClose(() => store.database.dropDatabase().then(() => {}));
  return store;
}

let parsedCatalogue: Catalogue | undefined;

/**
 * The project's catalogue (engine/venue/markets.ts `loadCatalogue`), read and parsed once per test
 * file, as a copy of its own for each service: tick sizes are mutable (a tick-size change updates the
 * market and token objects in place), the price path and the capture are only read.
 */
export function testCatalogue(): Catalogue {
  parsedCatalogue ??= loadCatalogue();
  return {
    ...parsedCatalogue,
    markets: parsedCatalogue.markets.map((m) => ({ ...m })),
    tokens: new Map([...parsedCatalogue.tokens].map(([id, t]) => [id, { ...t }])),
  };
}

/**
 * @param opts.log - the services' logger (default: silent); a test reading log lines passes one writing to an array.
 * @param opts.catalogue - the venue's catalogue (default: {@link testCatalogue}).
 */
export async function startTestService(
  opts: {
    clock?: Clock | ManualClock;
    store?: Store;
    env?: Record<string, string>;
    log?: Logger;
    catalogue?: Catalogue;
  } = {},
): Promise<TestService> {
  const config = testConfig(opts.env);
  const clock = opts.clock ?? systemClock;
  const store = opts.store ?? (await defaultTestStore(opts.env));
  const { services } = await startServices(config, opts.log ?? createLogger('silent'), {
    store,
    clock,
    catalogue: opts.catalogue ?? testCatalogue(),
  });
  const http = await startHttp(services, 0, '127.0.0.1');
  const server = http.server;
  const baseUrl = `http://127.0.0.1:${http.port}`;
  return {
    baseUrl,
    services,
    server,
    http,
    clock,
    async call(method, path, o = {}) {
      const headers: Record<string, string> = { ...(o.headers ?? {}) };
      const token = o.token === undefined ? MASTER_KEY : o.token;
      if (token !== null) headers.authorization = `Bearer ${token}`;
      if (method !== 'GET' && o.idempotencyKey !== null)
        headers['idempotency-key'] ??= o.idempotencyKey ?? randomUUID();
      let body: string | undefined;
      if (o.body !== undefined) {
        headers['content-type'] ??= 'application/json';
        body = typeof o.body === 'string' ? o.body : JSON.stringify(o.body);
      }
      const res = await fetch(baseUrl + path, { method, headers, body });
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        /* not JSON: keep text */
      }
      checkResponse(method, path, res.status, parsed);
      return { status: res.status, body: parsed, headers: res.headers };
    },
    async close() {
      await http.close();
      await services.stop();
    },
  };
}

const routeMatchers = [...ROUTES, ...SIM_ROUTES].flatMap((r) => {
  const toRe = (p: string) => new RegExp(`^${p.replace(/:\w+/g, '[^/]+')}$`);
  return [
    { route: r, re: toRe(r.path) },
    ...(r.v1 ? [{ route: r, re: toRe(r.path.replace(/^\/v2\//, '/v1/')) }] : []),
  ].map((x) => ({ ...x, method: r.method.toUpperCase() }));
});

/**
 * Every API test checks each response against the route table: a 2xx body must match
 * the schema declared for that status, every other status must be the error envelope. Throws
 * with AJV's report when it does not.
 */
export function checkResponse(method: string, url: string, status: number, body: unknown): void {
  const path = url.split('?')[0]!;
  const m = routeMatchers.find((x) => x.method === method.toUpperCase() && x.re.test(path));
  if (status >= 300 && !m?.route.responses?.[status]) {
    const v = validatorFor(ErrorEnvelope);
    if (!v(body))
      throw new Error(
        `${method} ${url} → ${status}: body is not the error envelope: ${JSON.stringify(body)} ` +
          `${JSON.stringify(v.errors)}`,
      );
    return;
  }
  if (!m) throw new Error(`${method} ${url} → ${status} matches no route of the route table`);
  const schema = m.route.responses?.[status];
  if (!schema) throw new Error(`${method} ${url} → ${status}: the route table declares no ${status} response`);
  const v = validatorFor(schema);
  if (!v(body))
    throw new Error(`${method} ${url} → ${status}: body does not match its schema: ${JSON.stringify(v.errors)}`);
  if (status < 300 && body !== null && typeof body === 'object' && 'error' in body)
    throw new Error(`${method} ${url} → ${status}: a successful body carries \`error\``);
}
