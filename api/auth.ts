import type { Request } from 'express';
import type { ApiKeyService, Principal, Scope } from '../engine/auth.js';
import { errors } from '../engine/errors.js';
import type { UserDoc, UserService } from '../engine/users.js';

/** Header through which a master key acts for one of its partner's users. */
export const USER_HEADER = 'x-partner-user-id';

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/**
 * How many times the request carries header `lower` (lower-case name). Node keeps only the first
 * `Authorization` and joins repeated custom headers with `, `, so a repeat is only seen here.
 */
function headerCount(req: Request, lower: string): number {
  const raw = req.rawHeaders;
  let n = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const k = raw[i]!;
    if (k.length === lower.length && k.toLowerCase() === lower) n++;
  }
  return n;
}

/** The token of the request's `Authorization: Bearer <API_KEY>` header, or null when there is none of that shape. */
export function bearerToken(req: Request): string | null {
  const header = req.headers.authorization;
  return header ? (BEARER.exec(header)?.[1] ?? null) : null;
}

/**
 * Authenticates the request's `Authorization: Bearer <API_KEY>` (spec part 5): at once for a token
 * seen recently ({@link ApiKeyService.cached}), else after reading the key.
 * @returns the principal, or a promise of it when the key must be read.
 * @throws {DomainError} `UNAUTHORIZED` (401) when missing, malformed, sent more than once, unknown,
 *   expired or revoked (thrown, or the promise rejected).
 */
export function authenticate(req: Request, keys: ApiKeyService): Principal | Promise<Principal> {
  const header = req.headers.authorization;
  if (!header) throw errors.unauthorized('missing Authorization: Bearer <API_KEY> header');
  const m = BEARER.exec(header);
  if (!m) throw errors.unauthorized('Authorization header must be Bearer <API_KEY>');
  // Node would keep the first of several and drop the rest unseen: which one a proxy in front used is unknown
  if (headerCount(req, 'authorization') > 1) throw errors.unauthorized('send exactly one Authorization header');
  return keys.cached(m[1]!) ?? keys.authenticate(m[1]!);
}

/** @throws {DomainError} `FORBIDDEN` (403) when `principal` lacks `scope`. */
export function requireScope(principal: Principal, scope: Scope): void {
  if (!principal.scopes.includes(scope)) throw errors.forbidden(`this endpoint needs the ${scope} scope`);
}

/**
 * The user a request acts for: a per-user key's bound user, or for a master key the user named
 * by `X-Partner-User-Id`; at once when the user was read before, else a promise of it.
 * @param required - true for user-bound endpoints.
 * @throws {DomainError} `INVALID_REQUEST` (400) when a master key omits the header on a user-bound endpoint or it is
 *   sent more than once (Node would join the values with `, `); 404 for a
 *   user not of this partner; 403 when a per-user key names another user in the header.
 */
export function resolveUser(
  req: Request,
  principal: Principal,
  users: UserService,
  required: boolean,
): UserDoc | null | Promise<UserDoc | null> {
  const named = req.headers[USER_HEADER];
  const partnerUserId = Array.isArray(named) ? named[0] : named;
  if (partnerUserId !== undefined && headerCount(req, USER_HEADER) > 1)
    throw errors.badRequest('send the X-Partner-User-Id header once');
  if (principal.kind === 'user') {
    const bound = (user: UserDoc | null): UserDoc => {
      if (!user) throw errors.unauthorized('the user this API key is bound to no longer exists');
      if (partnerUserId !== undefined && partnerUserId !== user.partnerUserId) {
        throw errors.forbidden('this API key is bound to another user; omit X-Partner-User-Id or name the bound user');
      }
      return user;
    };
    if (!principal.userId) return bound(null);
    const known = users.cached(principal.userId);
    return known ? bound(known) : users.byId(principal.userId).then(bound);
  }
  if (partnerUserId === undefined || partnerUserId === '') {
    if (required)
      throw errors.badRequest('a master key must name the user with the X-Partner-User-Id header on this endpoint');
    return null;
  }
  return users.cached(principal.partnerId, partnerUserId) ?? users.byPartnerUserId(principal.partnerId, partnerUserId);
}
