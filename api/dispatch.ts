import type { NextFunction, Request, RequestHandler, Response } from 'express';

/**
 * One mounted route as {@link RouteDispatcher} keeps it: its method (upper case), its Express path
 * (literal segments and `:name` parameters only) and the handlers Express would run for it.
 */
interface DispatchEntry {
  method: string;
  path: string;
  /** Literal segments as strings, parameters as their names prefixed by `:`. */
  segments: string[];
  hasParams: boolean;
  chain: RequestHandler[];
  /** Position in mounting order (Express tries routes in this order). */
  order: number;
}

/**
 * Whether `path` (a URL pathname, split on `/`) matches the route's segments; the raw (undecoded) parameters, or null.
 */
function matchSegments(segments: string[], parts: string[]): Record<string, string> | null {
  if (parts.length !== segments.length) return null;
  let params: Record<string, string> | null = null;
  for (let i = 0; i < segments.length; i++) {
    const s = segments[i]!;
    const p = parts[i]!;
    if (s.charCodeAt(0) === 58 /* : */) {
      if (p.length === 0) return null;
      (params ??= {})[s.slice(1)] = p;
    } else if (s !== p) return null;
  }
  return params ?? {};
}

/**
 * Runs `chain` as Express runs a route's handlers: each gets `next`; `next(err)`, a throw or a
 * rejected promise leaves the chain for `out(err)` (the error middleware); `next()` after the
 * last handler continues with `out()`.
 */
function runChain(chain: RequestHandler[], req: Request, res: Response, out: NextFunction): void {
  let i = 0;
  const next = (err?: unknown): void => {
    if (err) {
      out(err);
      return;
    }
    const handler = chain[i++];
    if (!handler) {
      out();
      return;
    }
    try {
      const r = handler(req, res, next) as unknown;
      if (r instanceof Promise) r.then(undefined, (e: unknown) => next(e ?? new Error('Rejected promise')));
    } catch (e) {
      next(e);
    }
  };
  next();
}

/**
 * `handlers` as one middleware, run in turn as Express would run them mounted one after the
 * other (one router layer instead of several); what the last passes on goes to `next`.
 */
export function sequence(handlers: RequestHandler[]): RequestHandler {
  return (req, res, next) => runChain(handlers, req, res, next);
}

/**
 * One dispatch for the whole route table: the route of a request is found in a map of
 * exact paths, or in the short list of parametrised paths, instead of Express testing each of
 * ~130 mounted layers in turn. It picks exactly the route Express would: routes keep their
 * mounting order (an exact path that an earlier parametrised route of the same method also
 * matches is left to the list), `HEAD` runs the `GET` route, paths match case-sensitively and
 * strictly (no trailing slash), parameters are `[^/]+` segments, percent-decoded.
 *
 * What it does not handle falls through (`next()`) to the same routes mounted on Express as
 * before, whose behaviour is then Express's own: `OPTIONS` (Express's automatic `Allow` answer), a
 * path carrying a percent-escape (a malformed one is a 400 from whichever route Express tries
 * first), and anything matching no route (the 404 after the walk).
 */
export class RouteDispatcher {
  private readonly exact = new Map<string, DispatchEntry>();
  private readonly parametrised: DispatchEntry[] = [];
  private readonly all: DispatchEntry[] = [];

  /**
   * Adds a route, after every route added before it (Express's order).
   * @param method - `get`, `post`, `patch` or `delete`.
   * @param path - literal segments and `:name` parameters only (e.g. `/v2/trade/orders/:order_id`).
   * @throws {Error} for any other path syntax (wildcards, optional groups), which this dispatch does not match.
   */
  add(method: string, path: string, chain: RequestHandler[]): void {
    if (!/^(\/(:[A-Za-z_][A-Za-z0-9_]*|[A-Za-z0-9._~-]+))+$|^\/$/.test(path))
      throw new Error(`RouteDispatcher: unsupported path syntax ${path}`);
    const segments = path.split('/');
    const entry: DispatchEntry = {
      method: method.toUpperCase(),
      path,
      segments,
      hasParams: segments.some((s) => s.startsWith(':')),
      chain,
      order: this.all.length,
    };
    this.all.push(entry);
    if (entry.hasParams) {
      this.parametrised.push(entry);
      // an exact route added before that this one shadows cannot have been shadowed: nothing to redo
      return;
    }
    const key = `${entry.method} ${path}`;
    if (this.exact.has(key)) return; // Express runs the first one mounted
    // an earlier parametrised route of the same method matching this path wins in Express
    const parts = path.split('/');
    if (this.parametrised.some((p) => p.method === entry.method && matchSegments(p.segments, parts) !== null)) {
      this.parametrised.push(entry); // tried in order with the others
      return;
    }
    this.exact.set(key, entry);
  }

  /**
   * The methods of the routes whose path matches `path` (a URL pathname, matched as it is sent:
   * a percent-escape stays inside its segment), `HEAD` with `GET`, in a fixed order; empty when no
   * route has this path. For the `Allow` header of a 405 and of an `OPTIONS` answer.
   */
  allowedMethods(path: string): string[] {
    const parts = path.split('/');
    const found = new Set<string>();
    for (const e of this.all) if (matchSegments(e.segments, parts) !== null) found.add(e.method);
    if (found.has('GET')) found.add('HEAD');
    return ['GET', 'HEAD', 'POST', 'PATCH', 'PUT', 'DELETE'].filter((m) => found.has(m));
  }

  /** The Express middleware: runs the request's route, or `next()` for what it leaves to Express. */
  middleware(): RequestHandler {
    return (req, res, next) => {
      const m = req.method;
      if (m === 'OPTIONS') return next();
      const method = m === 'HEAD' ? 'GET' : m;
      const path = req.path;
      if (path.includes('%')) return next();
      const hit = this.exact.get(`${method} ${path}`);
      if (hit) {
        req.params = {};
        return runChain(hit.chain, req, res, next);
      }
      if (this.parametrised.length === 0) return next();
      const parts = path.split('/');
      for (const e of this.parametrised) {
        if (e.method !== method) continue;
        const params = matchSegments(e.segments, parts);
        if (!params) continue;
        req.params = params; // no `%` in the path: nothing to decode
        return runChain(e.chain, req, res, next);
      }
      next();
    };
  }
}
