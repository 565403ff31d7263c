import type { FromSchema } from 'json-schema-to-ts';

const Level = {
  type: 'object',
  additionalProperties: false,
  required: ['trigger_bps', 'portion_bps'],
  properties: {
    trigger_bps: { type: 'integer', minimum: 1, maximum: 9999 },
    portion_bps: { type: 'integer', minimum: 1, maximum: 9999 },
  },
} as const;

/**
 * POST /v2/trade/copytrade body (spec 2.6). The spec leaves required fields open: only
 * `leader_address` is required here; the rest have the defaults documented in the README.
 */
export const CopytradeRequest = {
  $id: 'CopytradeRequest',
  type: 'object',
  additionalProperties: false,
  required: ['leader_address'],
  properties: {
    leader_address: { type: 'string', minLength: 4, maxLength: 100 },
    leader_username: { type: 'string', maxLength: 100 },
    status: { const: 'ACTIVE' },
    buy_enabled: { type: 'boolean' },
    sell_enabled: { type: 'boolean' },
    buy_order_type: { const: 'MARKET' },
    buy_size_mode: { const: 'PCT_OF_LEADER_TRADE' },
    buy_size_value: { type: 'number', exclusiveMinimum: 0, maximum: 10000 },
    buy_min_for_percent: { type: 'boolean' },
    buy_min_trade_size: { type: 'number', minimum: 0 },
    buy_max_trade_size: { type: 'number', minimum: 0 },
    buy_insufficient_usdc_action: { const: 'BUY_MAX' },
    buy_time_in_force: { const: 'GTC' },
    sell_order_type: { enum: ['MARKET', 'LIMIT'] },
    sell_size_mode: {
      enum: ['PCT_OF_LEADER_TRADE', 'PCT_OF_POSITION', 'FIXED_SHARES', 'FIXED_USD', 'MIRROR_LEADER_PCT'],
    },
    sell_size_value: { type: 'number', minimum: 0 },
    sell_insufficient_shares_action: { const: 'SELL_MAX' },
    market_ids_include: { type: 'array', maxItems: 1000, items: { type: 'string' } },
    market_ids_exclude: { type: 'array', maxItems: 1000, items: { type: 'string' } },
    tags_include: { type: 'array', maxItems: 100, items: { type: 'string' } },
    tags_exclude: { type: 'array', maxItems: 100, items: { type: 'string' } },
    is_simulation: { type: 'boolean' },
    copy_start_date: { type: 'string', format: 'date-time' },
    copy_end_date: { type: 'string', format: 'date-time' },
    take_profit_levels: { type: 'array', maxItems: 10, items: Level },
    stop_loss_levels: { type: 'array', maxItems: 10, items: Level },
    close_at_price_cents: { type: 'number', minimum: 1, maximum: 99 },
    max_hold_seconds: { type: 'integer', minimum: 1 },
  },
} as const;
export type CopytradeRequest = FromSchema<typeof CopytradeRequest>;

/** POST /v2/trade/copytrade response (spec 2.6). */
export const CopytradeResponse = {
  $id: 'CopytradeResponse',
  type: 'object',
  additionalProperties: false,
  required: ['id', 'status'],
  properties: { id: { type: 'string' }, status: { type: 'string' } },
} as const;
