import type { FromSchema } from 'json-schema-to-ts';
import { EpochMs } from './common.js';

const Scope = {
  enum: ['trade.read', 'trade.execute', 'trade.cancel', 'trade.withdraw', 'trade.combos', 'trade.users'],
} as const;

/** POST /v2/trade/users body (spec 2.7). `partner_user_id` is required: it is the idempotency key of provisioning. */
export const UserCreateRequest = {
  $id: 'UserCreateRequest',
  type: 'object',
  additionalProperties: false,
  required: ['partner_user_id'],
  properties: {
    partner_user_id: { type: 'string', minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9._:@-]+$' },
    email: {
      type: 'string',
      format: 'email',
      maxLength: 254,
      description:
        "The user's address. On a later call for an existing partner_user_id, a different email replaces the " +
        'stored one (200, created: false); omitted, it stays as it is.',
    },
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
    eoa_address: {
      type: 'string',
      pattern: '^0x[0-9a-fA-F]{40}$',
      description: 'EIP-55 checksummed address of the embedded wallet.',
    },
    safe_address: {
      type: 'string',
      pattern: '^0x[0-9a-fA-F]{40}$',
      description: 'EIP-55 checksummed counterfactual Safe address derived from the EOA.',
    },
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
    api_key: {
      type: 'string',
      description: 'Bearer token; in the first answer only (never in a replay), stored only as a hash.',
    },
    message: {
      type: 'string',
      description: 'On a replay only, instead of api_key: the token is shown once and not kept.',
    },
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
  required: ['partner_id', 'partner', 'api_key', 'wallet', 'binding', 'user'],
  properties: {
    partner_id: { type: 'string' },
    partner: {
      type: 'object',
      additionalProperties: false,
      required: ['id', 'slug', 'display_name'],
      description:
        'The partner the key belongs to. Its id (PARTNER_ID) is also its slug and display name: no other name ' +
        'is configured.',
      properties: { id: { type: 'string' }, slug: { type: 'string' }, display_name: { type: 'string' } },
    },
    api_key: {
      type: 'object',
      additionalProperties: false,
      required: ['id', 'key_id', 'kind', 'scopes', 'rate_limit_per_min', 'last4', 'created_at', 'expires_at'],
      properties: {
        id: { type: 'string', description: "The key's id (the same as `key_id`)." },
        key_id: { type: 'string' },
        kind: { enum: ['master', 'user'] },
        scopes: { type: 'array', items: Scope },
        rate_limit_per_min: {
          type: 'integer',
          minimum: 0,
          description: 'Requests per minute this key may make (RATE_LIMIT_PER_MIN); 0 when no limit applies.',
        },
        last4: {
          type: 'string',
          maxLength: 4,
          description: 'The last 4 characters of the key, to tell keys apart (the key itself is never stored).',
        },
        created_at: EpochMs,
        expires_at: { anyOf: [EpochMs, { type: 'null' }] },
      },
    },
    wallet: {
      description: 'The wallet of the bound user (as `user` names it); null without one.',
      anyOf: [
        { type: 'null' },
        {
          type: 'object',
          additionalProperties: false,
          required: ['eoa_address', 'safe_address'],
          properties: { eoa_address: { type: 'string' }, safe_address: { type: 'string' } },
        },
      ],
    },
    binding: {
      description: 'The partner user the request acts for (the same user as `user`); null without one.',
      anyOf: [
        { type: 'null' },
        {
          type: 'object',
          additionalProperties: false,
          required: ['id', 'partner_user_id', 'platform_user_id'],
          properties: {
            id: { type: 'string', description: "The binding's id: the user's `platform_user_id`." },
            partner_user_id: { type: 'string' },
            platform_user_id: { type: 'string' },
          },
        },
      ],
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
