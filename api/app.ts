import { createHash, randomUUID } from 'node:crypto';
import { ipKeyGenerator, rateLimit } from 'express-rate-limit';
import express, { type Express, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import helmet from 'helmet';
import type {} from 'pino-http'; // its `req.log` typing (api/errors.ts); the middleware is requestLog below
import { errors } from '../engine/errors.js';
import type { Principal } from '../engine/auth.js';
import type { ActorRecord } from '../engine/store/actors.js';
import type { Logger } from '../engine/logger.js';
import type { Services } from '../engine/service.js';
import { admission } from './admission.js';
import { requireWritable } from './availability.js';
import { authenticate, requireScope, resolveUser } from './auth.js';
import type { HandlerContext, HandlerResult, RouteSpec } from './context.js';
import { IdempotencyService } from '../engine/idempotency.js';
import { dashboardRouter, FAVICON } from './dashboard.js';
import { ApiError, errorHandler, notFoundHandler } from './errors.js';
import { RouteDispatcher, sequence } from './dispatch.js';
import { jsonBody } from './json-body.js';
import { ROUTES, SIM_ROUTES } from './routes.js';
import { validate, validateParams } from './validation.js';

const BODY_METHODS = new Set(['POST', 'PATCH', 'PUT']);

/** The dashboard's path prefix (api/dashboard.ts; its router matches it case-insensitively). */
const DASHBOARD = '/dashboard';

/** 415 for a body that is not JSON (an empty body passes: handlers then see `{}`). */
const requireJson: RequestHandler = (req, _res, next) => {
  if (req.headers['content-type'] === 'application/json') return next(); // the common case, without parsing the header
  const hasBody = Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
  if (BODY_METHODS.has(req.method) && hasBody && !req.is('application/json')) {
    throw new ApiError(415, 'unsupported_media_type', 'request bodies must be application/json');
  }
  next();
};

/**
 * Writes a handler's answer. A GET goes through Express's `res.json` (ETag, 304 on a matching
 * `If-None-Match`); the answer of a POST, PATCH or DELETE is written directly, without an ETag:
 * nobody revalidates it, and hashing every order's body cost more than writing it.
 */
function send(
  req: Request,
  res: Response,
  result: HandlerResult,
  extraHeaders: Record<string, string> = {},
  bodyJson?: string,
): void {
  if (result.headers) for (const k in result.headers) res.setHeader(k, result.headers[k]!);
  for (const k in extraHeaders) res.setHeader(k, extraHeaders[k]!);
  res.statusCode = result.status; // a handler's own constant (Express's `status` would only check it again)
  if (result.body === undefined) res.end();
  else if (req.method === 'GET' || req.method === 'HEAD') res.json(result.body);
  else {
    const text = bodyJson ?? JSON.stringify(result.body);
    res.setHeader('Content-Type', 'application/json; charset=utf-8');
    res.setHeader('Content-Length', Buffer.byteLength(text));
    endLater(res, text);
  }
}

/** Answers of mutating requests waiting for the end of this event-loop iteration ({@link endLater}). */
const pendingEnds: Array<[Response, string]> = [];

function flushEnds(): void {
  const batch = pendingEnds.splice(0);
  for (const [res, text] of batch) res.end(text);
}

/**
 * Ends `res` with `text` at the end of the current event-loop iteration (its check phase, or the
 * next one's when called from a check-phase callback), together with every other answer finished
 * in the same iteration. On loopback, each socket write also runs the client's receive
 * path and wakes it; answers written in one burst find the client already awake, which cut the
 * server's CPU per order by about a fifth in bench:orders (423 → 348 µs in memory). The answer is
 * already final and, for an idempotent request, already stored; Node keeps pipelined answers on
 * one socket in order. Exported for tests.
 */
export function endLater(res: Pick<Response, 'end'>, text: string): void {
  if (pendingEnds.push([res as Response, text]) === 1) setImmediate(flushEnds);
}

/** The request's authenticated caller, set by {@link mount}'s first step. */
const PRINCIPAL = Symbol('principal');
type WithPrincipal = Request & { [PRINCIPAL]?: Principal | null };

/** The query of an endpoint that takes no query parameter: any name is unknown (400). */
const NO_QUERY = { properties: {} };

/**
 * Mounts one route. Every request goes the same way, so each endpoint (built or not, present or
 * future) gets the same contract: authenticate (401) → scope (403) → master-only (403) — all
 * before the body is read (spec 5.3: a caller without a valid token hears 401, whatever its body)
 * → non-JSON body (415) → body parsing (413 over the limit, 400 malformed) → acting user
 * (400/404) → `Idempotency-Key` on POST/PATCH/DELETE (400) → body schema (400) → 501 when not
 * built → idempotent execution (replay, 409) → handler. Mutating requests pass the load
 * shedding of api/admission.ts after authentication and once their body is read (503
 * `overloaded` with `Retry-After` when the service is at capacity), so that a slow upload waits
 * for its own body without holding a write slot. Responses of authenticated routes carry
 * `Cache-Control: no-store`.
 */
function mount(
  app: Express,
  dispatcher: RouteDispatcher,
  route: RouteSpec,
  path: string,
  services: Services,
  parseBody: RequestHandler[],
  admit: RequestHandler,
): void {
  const mutating = route.method !== 'get';
  const scope = route.scope;
  // an authenticated endpoint that takes no query parameter refuses one (a misspelt filter is a 400
  // everywhere); the public ones (health, the OpenAPI document) ignore them, as probes add their own
  const query = route.query ?? (scope ? NO_QUERY : undefined);
  const admitted = (req: WithPrincipal, principal: Principal, next: NextFunction) => {
    requireScope(principal, scope!);
    if (route.masterOnly && principal.kind !== 'master')
      throw errors.forbidden('this endpoint needs a partner master key');
    req[PRINCIPAL] = principal;
    next();
  };
  // synchronous when the token was seen recently (no promise per request)
  const authorize = (req: WithPrincipal, res: Response, next: NextFunction): void | Promise<void> => {
    if (!scope) {
      req[PRINCIPAL] = null;
      return next();
    }
    res.setHeader('Cache-Control', 'no-store');
    const principal = authenticate(req, services.keys);
    if (principal instanceof Promise) return principal.then((p) => admitted(req, p, next));
    admitted(req, principal, next);
  };
  const run = async (req: WithPrincipal, res: Response) => {
    const principal = req[PRINCIPAL] ?? null;
    const found =
      principal && route.user !== 'none'
        ? resolveUser(req, principal, services.users, route.user === 'required')
        : null;
    const user = found instanceof Promise ? await found : found;
    const idempotencyKey = mutating ? IdempotencyService.keyOf(req.headers['idempotency-key']) : null;
    if (route.params) validateParams({ properties: route.params }, req.params, 'path parameter');
    if (query)
      Object.defineProperty(req, 'query', {
        value: validateParams(query, req.query as Record<string, unknown>, 'query parameter'),
        writable: true,
      });
    if (route.body) req.body = validate(route.body, req.body ?? {});
    if (!route.handler) throw errors.notImplemented(`${route.method.toUpperCase()} ${path}`);
    const resourceSeed =
      idempotencyKey && principal
        ? IdempotencyService.resourceSeed(principal.keyId, idempotencyKey, user?._id ?? null, req.path)
        : null;
    if (!idempotencyKey || !principal) {
      if (mutating) requireWritable(services);
      return send(req, res, await route.handler({ req, services, principal, user, resourceSeed }));
    }
    // the claim first: a duplicate of a request still running is a 409, a completed one replays,
    // even while the store cannot take writes
    // a mutating route with query parameters (DELETE
    // /v2/trade/orders?symbol=…): the query is part of "the same request"
    const request = route.query ? { body: req.body ?? {}, query: req.query as unknown } : (req.body ?? {});
    const claim = await services.idempotency.begin(principal.keyId, idempotencyKey, {
      method: req.method,
      path: req.path,
      userId: user?._id ?? null,
      body: request,
    });
    if (claim.kind === 'replay') return send(req, res, claim.response, { 'Idempotent-Replayed': 'true' });
    let result: HandlerResult;
    // the answer stored with the steps of the actors the handler names (one transaction per step)
    const unbind: Array<() => void> = [];
    const answerFrom = (
      actorId: string,
      respond: (record: ActorRecord) => HandlerResult,
      options?: { afterCreation?: boolean },
    ) => {
      unbind.push(
        services.host.bindStepWrites(
          actorId,
          (tx, record) => {
            const r = respond(record);
            return claim.recordWith(tx, { status: r.status, body: r.replayBody ?? r.body, headers: r.headers ?? {} });
          },
          options,
        ),
      );
    };
    try {
      requireWritable(services);
      // every field named: a spread of an object with fields added after it costs V8 (node 20) ~1 µs a field
      const handlerCtx: HandlerContext = {
        req,
        services,
        principal,
        user,
        resourceSeed,
        answerFrom,
        firstAttemptAtMs: claim.atMs,
      };
      result = await route.handler(handlerCtx);
    } catch (err) {
      for (const u of unbind) u();
      // Only successes are kept (spec 5.6): a refused request changed nothing, so its retry runs.
      await claim.abandon().catch((e: unknown) => services.log.error({ err: e }, 'idempotency release failed'));
      throw err;
    }
    for (const u of unbind) u();
    // serialized once: the stored response and the one sent are the same text
    // (the text a step stored with this very body when there is one)
    const bodyJson =
      result.body === undefined || req.method === 'GET'
        ? undefined
        : (claim.storedJson(result.body) ?? JSON.stringify(result.body));
    // an answer carrying a secret shown once is kept (and replayed) without it
    if ('replayBody' in result)
      await claim.complete({ status: result.status, body: result.replayBody, headers: result.headers ?? {} });
    else
      await claim.complete({
        status: result.status,
        body: result.body,
        headers: result.headers ?? {},
        ...(bodyJson !== undefined ? { bodyJson } : {}),
      });
    send(req, res, result, {}, bodyJson);
  };
  // the body is read before admission: a client sending its body slowly (or never) must not hold a
  // write slot meanwhile (64 such connections would block every write for every partner)
  const chain: RequestHandler[] = [
    authorize as RequestHandler,
    ...parseBody,
    ...(mutating ? [admit] : []),
    run as RequestHandler,
  ];
  dispatcher.add(route.method, path, chain);
  // also on Express, for what the dispatcher leaves to it (OPTIONS, percent-escaped paths)
  app[route.method](path, ...chain);
}

/**
 * Words that name a credential (compared case-insensitively): a query parameter whose name is one
 * of them, or ends in one as its last word (`client_secret`, `access-token`, `key[]`, `X-Api-Key`),
 * has its value logged as `[redacted]`. Nothing else is: `token_id` (a public market token, whose
 * last word is `id`) and the like are logged as sent.
 */
const SECRET_WORDS = new Set([
  'authorization',
  'bearer',
  'token',
  'access_token',
  'accesstoken',
  'api_key',
  'apikey',
  'key',
  'secret',
  'password',
  'auth',
  'signature',
]);
/** A cheap first test: a query that cannot name one of {@link SECRET_WORDS} nor hold a token is logged as is. */
const MAY_NAME_SECRET = /auth|bearer|token|key|secret|password|signature|pts_|%/i;
/** An API key of this service (`pts_` + 43 base64url characters), wherever it appears. */
const API_TOKEN = /pts_[A-Za-z0-9_-]{20,}/g;

/**
 * A query parameter's name as the application reads it (`+` is a
 * space, percent-escapes decoded); a malformed escape keeps it raw.
 */
function paramName(raw: string): string {
  const spaced = raw.replace(/\+/g, ' ');
  try {
    return decodeURIComponent(spaced);
  } catch {
    return spaced;
  }
}

/**
 * Whether a query parameter's name names a credential: the
 * whole name, or its last word, is one of {@link SECRET_WORDS}.
 */
function namesSecret(raw: string): boolean {
  const name = paramName(raw).toLowerCase();
  if (SECRET_WORDS.has(name.trim())) return true;
  const words = name.split(/[^a-z0-9]+/).filter(Boolean);
  return words.length > 0 && SECRET_WORDS.has(words[words.length - 1]!);
}

/**
 * Text as a log line may carry it: every API key of this service in it (`pts_…`) replaced by
 * `pts_[redacted]`, so a token a client put where it does not belong (a query, a request id, a
 * user id header echoed in an error message) never reaches the log.
 */
export function withoutTokens(text: string): string {
  return text.includes('pts_') ? text.replace(API_TOKEN, 'pts_[redacted]') : text;
}

/**
 * The request URL as the log line shows it: the value of a query parameter named for a credential
 * ({@link namesSecret}) is replaced by `[redacted]`, and any API key elsewhere in it too
 * ({@link withoutTokens}), since logs never carry a token; every other parameter is kept. `&` and
 * `;` both separate parameters here.
 */
export function loggableUrl(url: string): string {
  const q = url.indexOf('?');
  if (q < 0 || !MAY_NAME_SECRET.test(url.slice(q))) return url;
  const query = url
    .slice(q + 1)
    .split(/([&;])/)
    .map((kv) => {
      const eq = kv.indexOf('=');
      return eq >= 0 && namesSecret(kv.slice(0, eq)) ? `${kv.slice(0, eq)}=[redacted]` : kv;
    })
    .join('');
  return withoutTokens(`${url.slice(0, q)}?${query}`);
}

/**
 * Per-API-key rate limit (spec part 8; RATE_LIMIT_PER_MIN): requests are counted per bearer
 * token (its hash) or, without one, per client address; over the limit → 429 in the envelope with
 * `Retry-After` (seconds) and the IETF `RateLimit` / `RateLimit-Policy` headers. Counters live
 * in this process (see README for several processes).
 */
function rateLimiter(perMinute: number): RequestHandler {
  return rateLimit({
    windowMs: 60_000,
    limit: perMinute,
    standardHeaders: 'draft-8',
    legacyHeaders: false,
    skip: (req) => req.path === '/healthz',
    keyGenerator: (req) => {
      const m = /^Bearer\s+(\S+)/i.exec(req.headers.authorization ?? '');
      return m ? `key:${createHash('sha256').update(m[1]!).digest('base64url')}` : `ip:${ipKeyGenerator(req.ip ?? '')}`;
    },
    handler: (_req, _res, next, options) => {
      next(
        new ApiError(
          429,
          'rate_limited',
          `more than ${options.limit} requests per minute for this API key; wait for ` +
            `Retry-After seconds, add jitter, do not retry in a tight loop`,
        ),
      );
    },
  });
}

/**
 * Security headers (helmet) on every response: `X-Content-Type-Options: nosniff`, a
 * Content-Security-Policy that lets a JSON response load nothing and be framed nowhere
 * (`default-src 'none'; frame-ancestors 'none'`; the dashboard sets its own, api/dashboard.ts),
 * `X-Frame-Options: DENY`, `Referrer-Policy: no-referrer` and helmet's other defaults. No HSTS: the
 * service speaks plain HTTP; the TLS-terminating proxy in front of it sets that.
 */
export function securityHeaders(): RequestHandler {
  const h = helmet({
    contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
    strictTransportSecurity: false,
    xFrameOptions: { action: 'deny' },
  });
  // These headers do not depend on the request: helmet runs once here, and each response gets
  // what it set in one step (helmet's dozen middlewares per request cost more than an echo).
  const set: Array<[string, string]> = [];
  const removed: string[] = [];
  const recorder = {
    setHeader: (k: string, v: unknown) => void set.push([k, String(v)]),
    removeHeader: (k: string) => void removed.push(k),
  };
  let ran = false;
  h({} as never, recorder as never, () => (ran = true));
  if (!ran) return h; // helmet changed its ways: let it run per request
  return (_req, res, next) => {
    for (const [k, v] of set) res.setHeader(k, v);
    for (const k of removed) if (res.hasHeader(k)) res.removeHeader(k);
    next();
  };
}

/** The envelope an error response carried (set by api/errors.ts), for the request's log line. */
function envelopeOf(res: unknown): { error: string; message?: string } | undefined {
  return (res as Response).locals?.errorEnvelope as { error: string; message?: string } | undefined;
}

/**
 * Level of a request's log line: ERROR for a server fault (5xx but 501 and 503), WARN for 503 (the
 * service said it cannot take this now: a store or venue fault, logged once where it happens;
 * health polls while degraded would otherwise flood ERROR), INFO for everything else, client
 * errors (4xx) and 501 `not_implemented` included: they are answers, not faults, and their line
 * carries `error` and `error_message` from the envelope.
 */
export function requestLogLevel(status: number, err?: unknown): 'info' | 'warn' | 'error' {
  if (status === 503) return 'warn';
  return (err && status < 400) || (status >= 500 && status !== 501) ? 'error' : 'info';
}

function withEnvelope(res: unknown, val: Record<string, unknown>): Record<string, unknown> {
  const env = envelopeOf(res);
  return env
    ? { ...val, error: env.error, ...(env.message !== undefined ? { error_message: withoutTokens(env.message) } : {}) }
    : val;
}

/** What {@link requestLog} keeps on each request (read by its shared listeners and `req.log`). */
interface RequestLogState {
  log: Logger;
  id: string;
  method: string;
  url: string;
  startMs: number;
  /** `req.log`, made on first use. */
  child: Logger | null;
}

const REQUEST_LOG = Symbol('requestLog');
/** A client's `X-Request-Id` that is echoed (anything else, or one holding an API key, gets a fresh UUID). */
const REQUEST_ID = /^[\w.-]{1,128}$/;
type WithRequestLog = { [REQUEST_LOG]?: RequestLogState };

const reqFieldOf = (st: RequestLogState) => ({ id: st.id, method: st.method, url: loggableUrl(st.url) });

/** The request's log line, once (listener of `finish` and `close`, `this` being the response). */
function requestDone(this: Response & WithRequestLog): void {
  const st = this[REQUEST_LOG];
  if (!st) return;
  this[REQUEST_LOG] = undefined;
  this.removeListener('finish', requestDone);
  this.removeListener('close', requestDone);
  const { log } = st;
  const status = this.statusCode;
  const level = requestLogLevel(status);
  if (!log.isLevelEnabled(level)) return;
  const line: Record<string, unknown> = {
    req: reqFieldOf(st),
    res: { statusCode: status },
    responseTime: Date.now() - st.startMs,
  };
  if (status >= 500) {
    if (level === 'error')
      log.error({ ...line, err: new Error(`failed with status code ${status}`) }, 'request errored');
    else
      log[level](withEnvelope(this, line), status === 501 || status === 503 ? 'request completed' : 'request errored');
    return;
  }
  log[level](withEnvelope(this, line), 'request completed');
}

/**
 * `req.log` on a request prototype (once per application, not per request): the
 * request's child logger, bound to it, made on first use.
 */
function installRequestLogGetter(proto: object): void {
  if (Object.getOwnPropertyDescriptor(proto, 'log')) return;
  Object.defineProperty(proto, 'log', {
    configurable: true,
    enumerable: false,
    get(this: WithRequestLog) {
      const st = this[REQUEST_LOG];
      if (!st) return undefined;
      return (st.child ??= st.log.child({ req: reqFieldOf(st) }));
    },
  });
}

/**
 * The request's log line (one per request, when it finished or its connection closed) and its id:
 * `X-Request-Id` echoes a well-formed id the client sent, else a fresh UUID. The line carries only
 * what is safe, never headers (the bearer token lives there): `req` `{id, method, url}` (credential
 * query values redacted, {@link loggableUrl}), `res` `{statusCode}`, `responseTime` (ms), and for an
 * answered error its envelope (`error`, `error_message`); its level is {@link requestLogLevel}'s;
 * a server fault (5xx but 501 and 503) keeps an `err`. The same lines pino-http wrote, without its
 * per-request child loggers: a level that is off costs nothing beyond the id.
 * `req.log` (the error middleware's logger) is made on first use, bound to the request. The
 * per-request state is one object; the listeners and the `req.log` getter are shared.
 */
function requestLog(log: Logger): RequestHandler {
  let installedOn: object | null = null;
  return (req, res, next) => {
    const given = req.headers['x-request-id'];
    const id = typeof given === 'string' && REQUEST_ID.test(given) && !given.includes('pts_') ? given : randomUUID();
    res.setHeader('X-Request-Id', id);
    (req as { id?: unknown }).id = id;
    const proto = Object.getPrototypeOf(req) as object;
    if (proto !== installedOn) {
      installRequestLogGetter(proto);
      installedOn = proto;
    }
    const st: RequestLogState = { log, id, method: req.method, url: req.originalUrl, startMs: Date.now(), child: null };
    (req as WithRequestLog)[REQUEST_LOG] = st;
    (res as WithRequestLog)[REQUEST_LOG] = st;
    res.on('finish', requestDone);
    res.on('close', requestDone);
    next();
  };
}

/** Set on a request whose front steps already ran in {@link frontLayer}'s fast start; `err` what they passed on. */
const FRONT_RAN = Symbol('frontRan');
type WithFront = { [FRONT_RAN]?: { err: unknown } };

/**
 * The application's first layer, `front` (request log, security headers, dashboard, rate limit,
 * route dispatch), and a faster start for every request: `app.handle` is replaced by
 * one doing what Express's does (circular `req.res`/`res.req`, Express's request and response
 * prototypes, `res.locals`, `req.originalUrl`, `req.baseUrl`), then running `front` directly,
 * without Express's router, whose per-request set-up cost more than the route lookup itself. What
 * `front` passes on (no route matched, an OPTIONS request, or an error) goes to Express's own
 * `handle`, whose first layer (this one) then passes it on in turn: the routes mounted on
 * Express, the 404 and the error middleware see it exactly as before.
 */
function frontLayer(app: Express, front: RequestHandler): RequestHandler {
  type Handle = (req: Request, res: Response, callback?: NextFunction) => void;
  const withHandle = app as unknown as { handle: Handle };
  const expressHandle = withHandle.handle.bind(app);
  const requestProto = app.request;
  const responseProto = app.response;
  const fastHandle = (req: Request & WithFront, res: Response, callback?: NextFunction): void => {
    if (app.enabled('x-powered-by')) return expressHandle(req, res, callback);
    req.res = res;
    res.req = req;
    // already in the chain when the server was made for it (api/server.ts): nothing to change
    if (!Object.prototype.isPrototypeOf.call(requestProto, req)) Object.setPrototypeOf(req, requestProto);
    if (!Object.prototype.isPrototypeOf.call(responseProto, res)) Object.setPrototypeOf(res, responseProto);
    if (!res.locals) res.locals = Object.create(null) as Record<string, unknown>;
    req.originalUrl = req.originalUrl || req.url;
    req.baseUrl = '';
    const ran = { err: undefined as unknown };
    req[FRONT_RAN] = ran;
    front(req, res, (err?: unknown) => {
      ran.err = err;
      expressHandle(req, res, callback);
    });
  };
  withHandle.handle = fastHandle;
  return (req: Request & WithFront, res, next) => {
    const ran = req[FRONT_RAN];
    if (!ran) return front(req, res, next);
    return ran.err ? next(ran.err) : next();
  };
}

/**
 * What no route answered, on a path that routes have (RFC 9110 15.5.6, 9.3.7): `OPTIONS` → 204
 * with `Allow` (no authentication: it names methods only, as the public OpenAPI document does);
 * any other method → 405 `method_not_allowed` in the error envelope with `Allow`. Paths no route
 * has go on to the 404.
 */
function methodNotAllowed(dispatcher: RouteDispatcher): RequestHandler {
  return (req, res, next) => {
    const allowed = dispatcher.allowedMethods(req.path);
    if (allowed.length === 0) return next();
    const allow = [...allowed, 'OPTIONS'].join(', ');
    res.setHeader('Allow', allow);
    if (req.method === 'OPTIONS') {
      res.statusCode = 204;
      res.end();
      return;
    }
    next(
      new ApiError(405, 'method_not_allowed', `${req.method} is not allowed on ${req.path}; allowed: ${allow}`, {
        Allow: allow,
      }),
    );
  };
}

/**
 * Builds the Express 5 application over running services (usable in-process by tests on port 0).
 * Order: request id + log line ({@link requestLog}), security headers, the dashboard, the rate limit, the
 * route table (authentication before the body is read, then JSON body parsing: size limit → 413,
 * malformed → 400, non-JSON → 415), 405 (with `Allow`; `OPTIONS` 204) for another method on a
 * route's path, 404 for the rest, one error middleware writing `{error, message?}`.
 */
export function createApp(services: Services): Express {
  const app = express();
  // Paths match exactly: `/v2/trade/orders/` (an empty order id) is not cancel-all but a 404.
  app.set('strict routing', true);
  app.set('case sensitive routing', true); // paths match exactly: /V2/trade/... is a 404
  app.disable('x-powered-by');
  app.set('trust proxy', false);
  // static page and assets: outside the API's rate limit; only paths it can match enter its router
  const dashboard = dashboardRouter();
  const dashboardOnly: RequestHandler = (req, res, next) => {
    const path = req.path;
    return (path.length >= DASHBOARD.length && path.slice(0, DASHBOARD.length).toLowerCase() === DASHBOARD) ||
      path === FAVICON
      ? dashboard(req, res, next)
      : next();
  };
  // one dispatch finds the route (api/dispatch.ts); the same routes stay mounted on Express behind it
  const dispatcher = new RouteDispatcher();
  // the steps every request takes, as one middleware (one router layer)
  const front = sequence([
    requestLog(services.log),
    securityHeaders(),
    dashboardOnly,
    ...(services.config.rateLimitPerMin > 0 ? [rateLimiter(services.config.rateLimitPerMin)] : []),
    dispatcher.middleware(),
  ]);
  app.use(frontLayer(app, front));
  // Per route, after authentication: an unauthenticated body is never read.
  const parseBody = [requireJson, jsonBody(services.config.bodyLimitBytes)];
  // one admission limit for every mutating route (v1 and v2 alike)
  const admit = admission({
    concurrency: services.config.writeConcurrency,
    queueLength: services.config.writeQueueLength,
    queueWaitMs: services.config.writeQueueWaitMs,
    loopBudgetMs: services.config.loopBudgetMs,
  });
  for (const route of ROUTES) {
    mount(app, dispatcher, route, route.path, services, parseBody, admit);
    if (route.v1) mount(app, dispatcher, route, route.path.replace(/^\/v2\//, '/v1/'), services, parseBody, admit);
  }
  // simulation controls: only when enabled, else their paths are unknown (404)
  if (services.config.simControl)
    for (const route of SIM_ROUTES) mount(app, dispatcher, route, route.path, services, parseBody, admit);
  app.use(methodNotAllowed(dispatcher));
  app.use(notFoundHandler);
  app.use(errorHandler);
  return app;
}
