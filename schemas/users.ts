import type { FromSchema } from 'json-schema-to-ts';
import { EpochMs } from './common.js';

const Scope = { enum: ['trade.read', 'trade.execute', 'trade.cancel', 'trade.withdraw', 'trade.combos', 'trade.users'] } as const;

/** POST /v2/trade/users body (spec 2.7). `partner_user_id` is required: it is the idempotency key of provisioning. */
export const UserCreateRequest = {
  $id: 'UserCreateRequest',
  type: 'object',
  additionalProperties: false,
  required: ['partner_user_id'],
  properties: {
    partner_user_id: { type: 'string', minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9._:@-]+$' },
    email: { type: 'string', format: 'email', maxLength: 254, description: "The user's address. On a later call for an existing partner_user_id, a different email replaces the stored one (200, created: false); omitted, it stays as it is." },
  },
} as const;
export type UserCreateRequest = FromSchema<typeof UserCreateRequest>;

/** POST /v2/trade/users response (spec 2.7): 201 when created, 200 with `created: false` after. */
export const UserResponse = {
  $id: 'UserResponse',
  type: 'object',
  additionalProperties: false,
  required: ['platform_user_id', 'partner_user_id', 'eoa_address', 'safe_address', 'created'],
  properties: {
    platform_user_id: { type: 'string', format: 'uuid' },
    partner_user_id: { type: 'string' },
    email: { type: ['string', 'null'] },
    eoa_address: { type: 'string', pattern: '^0x[0-9a-fA-F]{40}$', description: 'EIP-55 checksummed address of the embedded wallet.' },
    safe_address: { type: 'string', pattern: '^0x[0-9a-fA-F]{40}$', description: 'EIP-55 checksummed counterfactual Safe address derived from the EOA.' },
    created: { type: 'boolean' },
    created_at: EpochMs,
  },
} as const;
export type UserResponse = FromSchema<typeof UserResponse>;

/** POST /v2/trade/users/{partner_user_id}/api-keys body (not in the spec; per-user key minting). */
export const ApiKeyCreateRequest = {
  $id: 'ApiKeyCreateRequest',
  type: 'object',
  additionalProperties: false,
  required: ['scopes'],
  properties: {
    scopes: {
      type: 'array',
      minItems: 1,
      uniqueItems: true,
      items: { enum: ['trade.read', 'trade.execute', 'trade.cancel', 'trade.withdraw', 'trade.combos'] },
      description: 'Scopes of the new key; trade.users is partner-level and cannot be bound to a user.',
    },
    expires_at: { ...EpochMs, description: 'Expiry, Unix epoch milliseconds; omitted = never.' },
  },
} as const;
export type ApiKeyCreateRequest = FromSchema<typeof ApiKeyCreateRequest>;

/**
 * Minted key: the `api_key` token is in the first answer only; a replay of the request (same
 * `Idempotency-Key`, `Idempotent-Replayed: true`) carries `message` instead.
 */
export const ApiKeyCreated = {
  $id: 'ApiKeyCreated',
  type: 'object',
  additionalProperties: false,
  required: ['key_id', 'scopes', 'expires_at', 'partner_user_id'],
  properties: {
    key_id: { type: 'string' },
    api_key: { type: 'string', description: 'Bearer token; in the first answer only (never in a replay), stored only as a hash.' },
    message: { type: 'string', description: 'On a replay only, instead of api_key: the token is shown once and not kept.' },
    scopes: { type: 'array', items: Scope },
    expires_at: { anyOf: [EpochMs, { type: 'null' }] },
    partner_user_id: { type: 'string' },
  },
} as const;
export type ApiKeyCreated = FromSchema<typeof ApiKeyCreated>;

/** DELETE /v2/trade/api-keys/{key_id} response. */
export const ApiKeyRevoked = {
  $id: 'ApiKeyRevoked',
  type: 'object',
  additionalProperties: false,
  required: ['key_id', 'revoked', 'revoked_at'],
  properties: { key_id: { type: 'string' }, revoked: { const: true }, revoked_at: EpochMs },
} as const;
export type ApiKeyRevoked = FromSchema<typeof ApiKeyRevoked>;

/** GET /v2/trade/account response: `api_key.scopes` per spec 4.6, plus partner, key and bound user. */
export const AccountResponse = {
  $id: 'AccountResponse',
  type: 'object',
  additionalProperties: false,
  required: ['partner_id', 'api_key', 'user'],
  properties: {
    partner_id: { type: 'string' },
    api_key: {
      type: 'object',
      additionalProperties: false,
      required: ['key_id', 'kind', 'scopes', 'created_at', 'expires_at'],
      properties: {
        key_id: { type: 'string' },
        kind: { enum: ['master', 'user'] },
        scopes: { type: 'array', items: Scope },
        created_at: EpochMs,
        expires_at: { anyOf: [EpochMs, { type: 'null' }] },
      },
    },
    user: {
      description: 'The bound user (per-user key) or the user named by X-Partner-User-Id (master key); null otherwise.',
      anyOf: [
        { type: 'null' },
        {
          type: 'object',
          additionalProperties: false,
          required: ['platform_user_id', 'partner_user_id', 'eoa_address', 'safe_address'],
          properties: {
            platform_user_id: { type: 'string' },
            partner_user_id: { type: 'string' },
            email: { type: ['string', 'null'] },
            eoa_address: { type: 'string' },
            safe_address: { type: 'string' },
            created_at: EpochMs,
          },
        },
      ],
    },
  },
} as const;
export type AccountResponse = FromSchema<typeof AccountResponse>;
