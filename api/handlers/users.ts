import { KEY_SHOWN_ONCE, USER_KEY_SCOPES, type Scope } from '../../engine/auth.js';
import { errors } from '../../engine/errors.js';
import { userView } from '../../engine/users.js';
import type {
  AccountResponse,
  ApiKeyCreated,
  ApiKeyCreateRequest,
  ApiKeyRevoked,
  UserCreateRequest,
  UserResponse,
} from '../../schemas/users.js';
import { bearerToken } from '../auth.js';
import type { Handler } from '../context.js';

/** POST /v2/trade/users (spec 2.7, 4.3): 201 on creation, 200 with `created: false` after. */
export const provisionUser: Handler = async ({ req, services, principal }) => {
  const body = req.body as UserCreateRequest;
  const { user, created } = await services.users.provision(
    principal!.partnerId,
    body.partner_user_id,
    body.email ?? null,
  );
  const out: UserResponse = { ...userView(user), created };
  return { status: created ? 201 : 200, body: out };
};

/**
 * POST /v2/trade/users/{partner_user_id}/api-keys: mints a per-user key. The token is shown once:
 * a replay (same `Idempotency-Key`) answers 201 with the key's id, scopes and expiry and
 * {@link KEY_SHOWN_ONCE} instead of `api_key`, and the idempotency record never holds the token.
 */
export const mintUserKey: Handler = async ({ req, services, principal }) => {
  const body = req.body as ApiKeyCreateRequest;
  const user = await services.users.byPartnerUserId(principal!.partnerId, String(req.params.partner_user_id));
  const scopes = body.scopes as Scope[];
  const beyond = scopes.filter((s) => !USER_KEY_SCOPES.includes(s) || !principal!.scopes.includes(s));
  if (beyond.length) throw errors.forbidden(`cannot grant ${beyond.join(', ')} with this key`);
  const { doc, token } = await services.keys.mintUserKey(
    principal!.partnerId,
    user._id,
    scopes,
    body.expires_at ?? null,
  );
  const shown: Omit<ApiKeyCreated, 'api_key' | 'message'> = {
    key_id: doc._id,
    scopes: doc.scopes,
    expires_at: doc.expiresAtMs,
    partner_user_id: user.partnerUserId,
  };
  const out: ApiKeyCreated = { ...shown, api_key: token };
  // the token is shown once: a replay of this request gets the key's description without it
  const replay: ApiKeyCreated = { ...shown, message: KEY_SHOWN_ONCE };
  return { status: 201, body: out, replayBody: replay };
};

/** DELETE /v2/trade/api-keys/{key_id}: revokes a key of the caller's partner at once. */
export const revokeKey: Handler = async ({ req, services, principal }) => {
  const doc = await services.keys.revoke(principal!.partnerId, String(req.params.key_id));
  const out: ApiKeyRevoked = { key_id: doc._id, revoked: true, revoked_at: doc.revokedAtMs! };
  return { status: 200, body: out };
};

/**
 * GET /v2/trade/account (spec 4.6): `api_key.scopes`, and what the reference product returns: the
 * partner, the key (`id`, `rate_limit_per_min`, `last4`), the bound user's `wallet` and `binding`,
 * and the user.
 */
export const account: Handler = async ({ req, services, principal, user }) => {
  const p = principal!;
  const out: AccountResponse = {
    partner_id: p.partnerId,
    partner: { id: p.partnerId, slug: p.partnerId, display_name: p.partnerId },
    api_key: {
      id: p.keyId,
      key_id: p.keyId,
      kind: p.kind,
      scopes: p.scopes,
      rate_limit_per_min: services.config.rateLimitPerMin,
      // the request's own token (authenticated above): its last 4 characters, never stored
      last4: (bearerToken(req) ?? '').slice(-4),
      created_at: p.createdAtMs,
      expires_at: p.expiresAtMs,
    },
    wallet: user ? { eoa_address: user.eoaAddress, safe_address: user.safeAddress } : null,
    binding: user ? { id: user._id, partner_user_id: user.partnerUserId, platform_user_id: user._id } : null,
    user: user ? userView(user) : null,
  };
  return { status: 200, body: out };
};
