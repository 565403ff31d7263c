import type { FromSchema } from 'json-schema-to-ts';
import { offsetPage } from './common.js';

/** POST /v2/trade/combo/quote body (spec 2.5). */
export const ComboQuoteRequest = {
  $id: 'ComboQuoteRequest',
  type: 'object',
  additionalProperties: false,
  required: ['leg_position_ids', 'notional_usd'],
  properties: {
    leg_position_ids: {
      type: 'array',
      minItems: 2,
      maxItems: 10,
      uniqueItems: true,
      items: { type: 'string', minLength: 1, maxLength: 100 },
      description: '2 to 10 YES position ids.',
    },
    notional_usd: { type: 'number', exclusiveMinimum: 0, maximum: 1000000, description: 'Dollars.' },
    side: { const: 'BUY', description: 'Only BUY exists for combos.' },
  },
} as const;
export type ComboQuoteRequest = FromSchema<typeof ComboQuoteRequest>;

/** Combo quote (spec 2.5): valid about 8.5 s. */
export const ComboQuoteResponse = {
  $id: 'ComboQuoteResponse',
  type: 'object',
  additionalProperties: false,
  required: ['combo_order_id', 'quote_id', 'rfq_id', 'price_cents', 'maker_amount_usd', 'taker_shares', 'expires_at'],
  properties: {
    combo_order_id: { type: 'string' },
    quote_id: { type: 'string' },
    rfq_id: { type: 'string' },
    price_cents: { type: 'number', description: 'Cents per blended YES share.' },
    maker_amount_usd: { type: 'number', description: 'Dollars.' },
    taker_shares: { type: 'number', description: 'Shares.' },
    expires_at: { type: 'string', format: 'date-time', description: 'ISO 8601.' },
  },
} as const;

/** POST /v2/trade/combo/accept body. */
export const ComboAcceptRequest = {
  $id: 'ComboAcceptRequest',
  type: 'object',
  additionalProperties: false,
  required: ['combo_order_id', 'quote_id'],
  properties: {
    combo_order_id: { type: 'string', minLength: 1, maxLength: 100 },
    quote_id: { type: 'string', minLength: 1, maxLength: 100 },
  },
} as const;

export const ComboAcceptResponse = {
  $id: 'ComboAcceptResponse',
  type: 'object',
  additionalProperties: false,
  required: ['combo_order_id', 'status', 'transaction_hash'],
  properties: {
    combo_order_id: { type: 'string' },
    status: { const: 'EXECUTED' },
    transaction_hash: { type: 'string' },
  },
} as const;

/** POST /v2/trade/combo/redeem body: exactly one identifier. */
export const ComboRedeemRequest = {
  $id: 'ComboRedeemRequest',
  type: 'object',
  additionalProperties: false,
  properties: {
    combo_order_id: { type: 'string', minLength: 1, maxLength: 100 },
    combo_position_id: { type: 'string', minLength: 1, maxLength: 100 },
  },
  oneOf: [{ required: ['combo_order_id'] }, { required: ['combo_position_id'] }],
} as const;

export const ComboRedeemResponse = {
  $id: 'ComboRedeemResponse',
  type: 'object',
  additionalProperties: false,
  required: ['combo_order_id', 'status', 'payout_usd', 'transaction_hash'],
  properties: {
    combo_order_id: { type: 'string' },
    status: { const: 'REDEEMED' },
    payout_usd: { type: 'number', description: 'pUSD.' },
    transaction_hash: { type: 'string' },
  },
} as const;

/** One combo position (spec 2.5 gives its id and status values; the rest is ours). */
export const ComboPosition = {
  $id: 'ComboPosition',
  type: 'object',
  additionalProperties: false,
  required: ['combo_position_id', 'combo_order_id', 'status'],
  properties: {
    combo_position_id: { type: 'string' },
    combo_order_id: { type: 'string' },
    status: { enum: ['OPEN', 'PARTIAL', 'RESOLVED_WIN', 'RESOLVED_LOSS', 'REDEEMED'] },
    leg_position_ids: { type: 'array', items: { type: 'string' } },
    shares: { type: 'number' },
    cost_usd: { type: 'number' },
    created_at: { type: 'integer' },
  },
} as const;

export const ComboPositionsPage = offsetPage(
  'ComboPositionsPage',
  'positions',
  { $ref: 'ComboPosition' } as const,
  'Combo positions, newest first (limit ≤ 500).',
);
