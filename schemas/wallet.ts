import { Address, DecimalString, offsetPage } from './common.js';

/** GET /v2/trade/balances/withdrawable response (spec 2.8): zero balances are dropped. */
export const WithdrawableBalances = {
  $id: 'WithdrawableBalances',
  type: 'object',
  additionalProperties: false,
  required: ['balances'],
  properties: {
    balances: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['token', 'symbol', 'decimals', 'balance', 'value_usd'],
        properties: {
          token: { ...Address, description: 'Token contract address (what POST /withdraw takes).' },
          symbol: { type: 'string' },
          decimals: { type: 'integer', minimum: 0 },
          balance: { ...DecimalString, description: 'Scaled to human decimals.' },
          value_usd: DecimalString,
        },
      },
    },
  },
} as const;

/** POST /v2/trade/withdraw body (spec 4.6: payload not shown; ours). */
export const WithdrawRequest = {
  $id: 'WithdrawRequest',
  type: 'object',
  additionalProperties: false,
  required: ['to_address', 'amount'],
  properties: {
    to_address: { ...Address, description: 'External destination address.' },
    amount: { ...DecimalString, description: 'Human units of the token (dollars for pUSD).' },
    token: { ...Address, description: 'Token address from /balances/withdrawable; pUSD when omitted.' },
  },
} as const;

/** POST /v2/trade/positions/redeem body (ours). */
export const RedeemRequest = {
  $id: 'RedeemRequest',
  type: 'object',
  additionalProperties: false,
  required: ['condition_id'],
  properties: { condition_id: { type: 'string', pattern: '^0x[0-9a-fA-F]{64}$' } },
} as const;

/** POST /v2/trade/positions/split and /merge body (ours): `amount` pUSD ↔ full sets of shares. */
export const SplitMergeRequest = {
  $id: 'SplitMergeRequest',
  type: 'object',
  additionalProperties: false,
  required: ['condition_id', 'amount'],
  properties: { condition_id: { type: 'string', pattern: '^0x[0-9a-fA-F]{64}$' }, amount: { ...DecimalString, description: 'Dollars = full sets of shares.' } },
} as const;

/** Most order ids one POST /v2/trade/orders/cancel takes (more → 400; DELETE /v2/trade/orders has no limit). */
export const BATCH_CANCEL_MAX = 100;

/**
 * POST /v2/trade/orders/cancel body (batch cancel; spec 4.6: payload not shown; ours): 1 to
 * {@link BATCH_CANCEL_MAX} order ids. An id that names no order of the user, however malformed, is
 * answered `not_found` in the response; only a body that is not this shape is a 400.
 */
export const BatchCancelRequest = {
  $id: 'BatchCancelRequest',
  type: 'object',
  additionalProperties: false,
  required: ['order_ids'],
  properties: {
    order_ids: {
      type: 'array',
      minItems: 1,
      maxItems: BATCH_CANCEL_MAX,
      items: { type: 'string', maxLength: 256 },
      description:
        `Order ids (\`order_id\` of POST /v2/trade/order or GET /v2/trade/orders/open), 1 to ${BATCH_CANCEL_MAX}, each a string of at most 256 characters. ` +
        'A repeated id is answered once. An id that is unknown, malformed, a strategy `record_id` or another user\'s order is `not_found`, never a 400.',
    },
  },
} as const;
export type BatchCancelRequest = { order_ids: string[] };

/** What a batch cancel or cancel-all did with one order (ours). */
const CancelOutcome = {
  type: 'object',
  additionalProperties: false,
  required: ['order_id', 'outcome', 'status', 'order'],
  properties: {
    order_id: { type: 'string' },
    outcome: {
      enum: ['canceled', 'not_found', 'already_done'],
      description:
        '`canceled`: the cancel took effect (status CANCELED; PENDING_CANCEL while the venue has not confirmed). `already_done`: the order was already final, ' +
        'or filled or expired before the cancel took effect (`status` says which). `not_found`: no order of this user has that id (unknown, malformed, a strategy record, another user\'s).',
    },
    status: { type: ['string', 'null'], description: 'The order\'s status after the attempt; null when not found.' },
    order: { anyOf: [{ $ref: 'OrderView' }, { type: 'null' }], description: 'The order after the attempt (as DELETE /v2/trade/orders/{order_id} answers it); null when not found.' },
    message: { type: 'string', description: 'Why the order was not canceled (absent when it was).' },
  },
} as const;

/** POST /v2/trade/orders/cancel and DELETE /v2/trade/orders 200 response (ours): one outcome per order. */
export const BatchCancelResponse = {
  $id: 'BatchCancelResponse',
  type: 'object',
  additionalProperties: false,
  required: ['results', 'counts'],
  properties: {
    results: {
      type: 'array',
      items: CancelOutcome,
      description: 'Batch: one per distinct id, in the order sent. Cancel-all: one per open order it found, newest first (empty when none).',
    },
    counts: {
      type: 'object',
      additionalProperties: false,
      required: ['canceled', 'not_found', 'already_done'],
      description: 'How many results have each outcome.',
      properties: { canceled: { type: 'integer', minimum: 0 }, not_found: { type: 'integer', minimum: 0 }, already_done: { type: 'integer', minimum: 0 } },
    },
  },
} as const;

/** One activity item (ours: one of the user's orders or strategies, newest first, with its latest state). */
export const ActivityItem = {
  $id: 'ActivityItem',
  type: 'object',
  additionalProperties: false,
  required: ['kind', 'id', 'type', 'status', 'side', 'symbol', 'created_at', 'updated_at'],
  properties: {
    kind: { enum: ['order', 'strategy'] },
    id: { type: 'string', description: 'order_id or record_id.' },
    type: { type: 'string' },
    status: { type: 'string' },
    side: { enum: ['buy', 'sell'] },
    symbol: { type: 'string' },
    price: { type: ['string', 'null'] },
    size: { type: ['string', 'null'] },
    filled_size: { type: ['string', 'null'] },
    created_at: { type: 'integer', minimum: 0, description: 'Unix epoch milliseconds.' },
    updated_at: { type: 'integer', minimum: 0, description: 'Last change, Unix epoch milliseconds.' },
  },
} as const;

/** GET /v2/trade/activity response (spec 2.9: opaque cursor). */
export const ActivityPage = {
  $id: 'ActivityPage',
  type: 'object',
  additionalProperties: false,
  required: ['activity', 'next_cursor'],
  properties: {
    activity: { type: 'array', items: { $ref: 'ActivityItem' } },
    next_cursor: { type: ['string', 'null'], description: 'Opaque: send back as `cursor`; never parse. Null at the end.' },
  },
} as const;

/** Trade-history page envelope (spec 2.9: compound cursor). */
export const TradesPage = {
  $id: 'TradesPage',
  type: 'object',
  additionalProperties: false,
  required: ['trades', 'next_cursor', 'next_cursor_log_idx'],
  properties: {
    trades: { type: 'array', items: { type: 'object' } },
    next_cursor: { type: ['integer', 'null'], description: 'Block timestamp; send as cursor_ts. Null at the end.' },
    next_cursor_log_idx: { type: ['integer', 'null'], description: 'Tie-breaker; send with cursor_ts.' },
  },
} as const;

/** Statement page envelope (spec 2.9): offset/limit plus nested R1 paging. */
export const StatementsPage = {
  ...offsetPage('StatementsPage', 'statements', { type: 'object' } as const, 'Statement rows.'),
  required: ['statements', 'total', 'limit', 'offset', 'has_more', 'has_more_r1'],
  properties: { ...offsetPage('StatementsPage', 'statements', { type: 'object' } as const, '').properties, has_more_r1: { type: 'boolean' } },
} as const;
