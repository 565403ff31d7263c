import { randomUUID } from 'node:crypto';
import express, { type Express, type Request, type RequestHandler, type Response } from 'express';
import { pinoHttp } from 'pino-http';
import { ApiError, errors } from '../engine/errors.js';
import type { Services } from '../engine/service.js';
import { authenticate, requireScope, resolveUser } from './auth.js';
import type { RouteSpec } from './context.js';
import { errorHandler, notFoundHandler } from './errors.js';
import { ROUTES } from './routes.js';
import { validate } from './validation.js';

const BODY_METHODS = new Set(['POST', 'PATCH', 'PUT']);

/** 415 for a body that is not JSON (an empty body passes: handlers then see `{}`). */
const requireJson: RequestHandler = (req, _res, next) => {
  const hasBody = Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
  if (BODY_METHODS.has(req.method) && hasBody && !req.is('application/json')) {
    throw new ApiError(415, 'unsupported_media_type', 'request bodies must be application/json');
  }
  next();
};

function mount(app: Express, route: RouteSpec, path: string, services: Services): void {
  const run = async (req: Request, res: Response) => {
    const principal = route.scope ? await authenticate(req, services.keys) : null;
    if (principal && route.scope) requireScope(principal, route.scope);
    if (principal && route.masterOnly && principal.kind !== 'master') throw errors.forbidden('this endpoint needs a partner master key');
    const user = principal && route.user !== 'none' ? await resolveUser(req, principal, services.users, route.user === 'required') : null;
    if (!route.handler) throw errors.notImplemented(`${route.method.toUpperCase()} ${route.path}`);
    if (route.body) req.body = validate(route.body, req.body ?? {});
    const result = await route.handler({ req, services, principal, user });
    for (const [k, v] of Object.entries(result.headers ?? {})) res.setHeader(k, v);
    res.status(result.status).json(result.body);
  };
  app[route.method](path, run);
}

/**
 * Builds the Express 5 application over running services (usable in-process by tests on port 0).
 * Order: request id + pino-http log line, JSON body parsing (size limit → 413, malformed → 400,
 * non-JSON → 415), the route table, 404 for the rest, one error middleware writing `{error, message?}`.
 */
export function createApp(services: Services): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', false);
  app.use(
    pinoHttp({
      logger: services.log,
      genReqId: (req, res) => {
        const given = req.headers['x-request-id'];
        const id = typeof given === 'string' && /^[\w.-]{1,128}$/.test(given) ? given : randomUUID();
        res.setHeader('X-Request-Id', id);
        return id;
      },
      // Only what is safe: never headers (the bearer token lives there).
      serializers: {
        req: (req: { id: unknown; method: string; url: string }) => ({ id: req.id, method: req.method, url: req.url }),
        res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
      },
      customLogLevel: (_req, res, err) => (err || res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'warn' : 'info'),
    }),
  );
  app.use(requireJson);
  app.use(express.json({ limit: services.config.bodyLimitBytes, strict: true, type: ['application/json', 'application/*+json'] }));
  for (const route of ROUTES) {
    mount(app, route, route.path, services);
    if (route.v1) mount(app, route, route.path.replace(/^\/v2\//, '/v1/'), services);
  }
  app.use(notFoundHandler);
  app.use(errorHandler);
  return app;
}
