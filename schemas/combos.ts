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
      items: { type: 'string', minLength: 1, maxLength: 100 },
      description:
        '2 to 10 YES outcome token ids (the first outcome of a market: Yes, or Up), each of a distinct open ' +
        'market; a duplicate, a NO token or two legs of one market → 400 naming the leg.',
    },
    notional_usd: { type: 'number', minimum: 0.01, maximum: 1000000, description: 'Dollars (at least 0.01).' },
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
    expires_at: { type: 'string', format: 'date-time', description: 'ISO 8601 with milliseconds: now + 8.5 s.' },
    side: { const: 'BUY' },
    notional_usd: { type: 'number', description: 'Dollars, as requested.' },
    fee_usd: { type: 'number', description: 'Fee, dollars (1% of the notional).' },
    total_cost_usd: { type: 'number', description: 'What the accept takes: notional + fee, dollars.' },
    independent_price_cents: {
      type: 'number',
      description: "The plain product of the legs' best asks, cents: the price without the maker's margin.",
    },
    margin_cents: { type: 'number', description: "price_cents − independent_price_cents: the maker's margin." },
    legs: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['position_id', 'question'],
        properties: { position_id: { type: 'string' }, question: { type: ['string', 'null'] } },
      },
    },
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

const decimalString = (description: string) => ({ type: 'string', description }) as const;
const nullableString = (description: string) => ({ type: ['string', 'null'], description }) as const;

/**
 * One combo (spec 2.5 gives a position's id and status values; the reference product its fields;
 * the rest is ours): GET /combo/{combo_order_id} and each item of GET /combo/positions. Amounts are
 * decimal strings (dollars, shares, cents), times ISO 8601.
 */
export const ComboPosition = {
  $id: 'ComboPosition',
  type: 'object',
  additionalProperties: false,
  required: ['combo_position_id', 'combo_order_id', 'status', 'legs'],
  properties: {
    type: { const: 'COMBO' },
    combo_position_id: { type: 'string', description: 'Takes the place of combo_order_id in POST /combo/redeem.' },
    combo_order_id: { type: 'string' },
    quote_id: { type: 'string' },
    rfq_id: { type: 'string' },
    status: {
      enum: ['QUOTED', 'EXECUTED', 'OPEN', 'PARTIAL', 'RESOLVED_WIN', 'RESOLVED_LOSS', 'REDEEMED', 'EXPIRED', 'FAILED'],
      description:
        'QUOTED until accepted (EXPIRED when never accepted); EXECUTED while the accept settles; then by ' +
        'its legs: OPEN none resolved, PARTIAL some won and none lost, RESOLVED_WIN all won, ' +
        'RESOLVED_LOSS one lost; REDEEMED once paid. FAILED: the venue refused the accept.',
    },
    side: { const: 'BUY' },
    price_cents: decimalString("The maker's price of the blended YES share, cents."),
    independent_price_cents: decimalString("The plain product of the legs' asks at the quote, cents."),
    entry_price: decimalString('price_cents / 100: dollars per combo share.'),
    notional_usd: decimalString('Dollars spent on shares.'),
    fee_usd: decimalString('Fee, dollars.'),
    cost_usd: decimalString('notional + fee, dollars: what the accept took.'),
    taker_shares: decimalString('Combo shares: each pays $1 when every leg wins.'),
    maker_amount_usd: decimalString('What the maker posted, dollars.'),
    legs: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['position_id', 'resolved', 'outcome'],
        properties: {
          position_id: { type: 'string', description: 'The leg’s YES outcome token.' },
          condition_id: { type: 'string' },
          question: nullableString("The leg's market."),
          outcome: { enum: ['WIN', 'LOSS', null], description: 'null while unresolved.' },
          resolved: { type: 'boolean' },
          status: { enum: ['PENDING', 'WON', 'LOST'] },
          resolved_at: nullableString('ISO 8601.'),
          current_price: nullableString(
            "The leg's price now: the touch's midpoint while pending (null without a book), 1 won, 0 lost.",
          ),
        },
      },
    },
    legs_total: { type: 'integer' },
    legs_resolved: { type: 'integer' },
    legs_pending: { type: 'integer' },
    redeemable: { type: 'boolean', description: 'True when RESOLVED_WIN: POST /combo/redeem pays it.' },
    current_value_usd: nullableString(
      "shares × the legs' current prices, dollars (0 once lost or redeemed); null when a leg has no price.",
    ),
    payout_usd: nullableString('Paid by the redeem, dollars; null before.'),
    transaction_hash: nullableString("The accept's simulated transaction hash; null before it."),
    redeem_transaction_hash: nullableString("The redeem's simulated transaction hash; null before it."),
    expires_at: { type: 'string', description: "The quote's end, ISO 8601." },
    accepted_at: nullableString('ISO 8601.'),
    created_at: { type: 'string', description: 'ISO 8601.' },
    updated_at: { type: 'string', description: 'ISO 8601.' },
    failure_code: { type: 'string' },
    message: { type: ['string', 'null'] },
  },
} as const;

export const ComboPositionsPage = offsetPage(
  'ComboPositionsPage',
  'positions',
  { $ref: 'ComboPosition' } as const,
  'Combo positions, newest first (limit ≤ 500).',
);
