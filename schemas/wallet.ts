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

/** POST /v2/trade/orders/cancel body (batch cancel; spec 4.6: payload not shown; ours). */
export const BatchCancelRequest = {
  $id: 'BatchCancelRequest',
  type: 'object',
  additionalProperties: false,
  required: ['order_ids'],
  properties: { order_ids: { type: 'array', minItems: 1, maxItems: 100, uniqueItems: true, items: { type: 'string', minLength: 1, maxLength: 100 } } },
} as const;

/** Batch cancel and cancel-all response (ours): what was canceled and what was not. */
export const BatchCancelResponse = {
  $id: 'BatchCancelResponse',
  type: 'object',
  additionalProperties: false,
  required: ['canceled', 'not_canceled'],
  properties: {
    canceled: { type: 'array', items: { type: 'string' } },
    not_canceled: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['order_id', 'error'],
        properties: { order_id: { type: 'string' }, error: { type: 'string' }, message: { type: 'string' } },
      },
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
