import type { FromSchema } from 'json-schema-to-ts';

/** A take-profit or stop-loss level (basis points). */
const Level = {
  type: 'object',
  additionalProperties: false,
  required: ['trigger_bps', 'portion_bps'],
  properties: {
    trigger_bps: {
      type: 'integer',
      minimum: 1,
      maximum: 1000000,
      description: 'Move against the average cost, basis points (5000 = 50 %).',
    },
    portion_bps: {
      type: 'integer',
      minimum: 1,
      maximum: 10000,
      description: 'Portion of the remaining shares to sell, basis points (10000 = all).',
    },
  },
} as const;

const LEADER_ORDER_TYPE = {
  enum: ['MARKET', 'LIMIT', 'ALL'],
  description:
    "Which of the leader's fills are copied: a taker fill (the leader's order crossed the book) is a MARKET " +
    'order, a maker fill (its order rested) a LIMIT one; ALL copies both.',
} as const;

const DATE = {
  anyOf: [{ type: 'string', format: 'date-time' }, { type: 'null' }],
  description: 'ISO 8601 date-time, or null (no bound).',
} as const;

/** The settings a subscription has (POST body besides `leader_address` and `status`; PATCH body). */
const settingsProperties = {
  leader_username: { type: 'string', maxLength: 100, description: 'A label for the leader (display only).' },
  buy_enabled: { type: 'boolean', description: "Copy the leader's buys (default true)." },
  sell_enabled: { type: 'boolean', description: "Copy the leader's sells (default true)." },
  buy_order_type: LEADER_ORDER_TYPE,
  buy_size_mode: {
    enum: ['PCT_OF_LEADER_TRADE', 'FIXED_USD_PER_TRADE', 'PCT_OF_FOLLOWER_AVAILABLE'],
    description:
      "PCT_OF_LEADER_TRADE: buy_size_value percent of the leader's notional; FIXED_USD_PER_TRADE: " +
      'buy_size_value dollars; PCT_OF_FOLLOWER_AVAILABLE: buy_size_value percent (at most 100) of free pUSD.',
  },
  buy_size_value: { type: 'number', exclusiveMinimum: 0, maximum: 1000000 },
  buy_min_for_percent: {
    type: 'boolean',
    description:
      'With a PCT_* buy mode: a copy computed below the market minimum is raised to it (true) rather than ' +
      'skipped with reason below_market_minimum (false, the default).',
  },
  buy_min_trade_size: { type: 'number', minimum: 0, description: "Leader buys below this many dollars aren't copied." },
  buy_max_trade_size: { type: 'number', minimum: 0, description: "Leader buys above this many dollars aren't copied." },
  buy_insufficient_usdc_action: {
    enum: ['BUY_MAX', 'SKIP'],
    description: 'When free pUSD is short: buy what it allows (BUY_MAX) or skip (SKIP, reason insufficient_pusd).',
  },
  buy_time_in_force: {
    enum: ['GTC', 'FOK'],
    description:
      'GTC (default): a LIMIT GTC buy at the best ask, its remainder resting (at least the market minimum ' +
      'size, 5 shares on most markets); FOK: a MARKET buy that fills in full or not at all (at least $1).',
  },
  sell_order_type: LEADER_ORDER_TYPE,
  sell_size_mode: {
    enum: ['PCT_OF_LEADER_TRADE', 'FIXED_USD_PER_TRADE', 'PCT_OF_FOLLOWER_AVAILABLE', 'MAX', 'PCT_OF_MAX'],
    description:
      "PCT_OF_LEADER_TRADE: sell_size_value percent of the leader's shares sold (of its shares, not its " +
      'notional); FIXED_USD_PER_TRADE: sell_size_value dollars worth at the best bid; PCT_OF_FOLLOWER_AVAILABLE: ' +
      "shares worth sell_size_value percent of the follower's free pUSD; MAX: every free share of the token; " +
      'PCT_OF_MAX: sell_size_value percent of them. Copied sells are MARKET sells (at least $1).',
  },
  sell_size_value: {
    type: 'number',
    minimum: 0,
    maximum: 1000000,
    description: 'Required unless sell_size_mode is MAX.',
  },
  sell_insufficient_shares_action: {
    enum: ['SELL_MAX', 'SKIP'],
    description: 'When free shares are short: sell them all (SELL_MAX) or skip (SKIP, reason insufficient_shares).',
  },
  market_ids_include: {
    type: 'array',
    maxItems: 1000,
    items: { type: 'string', maxLength: 100 },
    description: 'Only fills on these markets (condition ids). Exclusive with market_ids_exclude.',
  },
  market_ids_exclude: { type: 'array', maxItems: 1000, items: { type: 'string', maxLength: 100 } },
  tags_include: {
    type: 'array',
    maxItems: 100,
    items: { type: 'string', maxLength: 100 },
    description: 'Only fills on markets with one of these tags (the venue lists no tags: nothing matches).',
  },
  tags_exclude: { type: 'array', maxItems: 100, items: { type: 'string', maxLength: 100 } },
  is_simulation: {
    type: 'boolean',
    description: 'Paper trading: copies fill at the midpoint on a paper account of $1000; nothing is traded.',
  },
  copy_start_date: DATE,
  copy_end_date: { ...DATE, description: 'After it the subscription is ENDED (a durable timer).' },
  take_profit_levels: { type: 'array', maxItems: 10, items: Level },
  stop_loss_levels: { type: 'array', maxItems: 10, items: Level },
  close_at_price_cents: { anyOf: [{ type: 'integer', minimum: 1, maximum: 9999 }, { type: 'null' }] },
  max_hold_seconds: { anyOf: [{ type: 'integer', minimum: 1 }, { type: 'null' }] },
} as const;

/**
 * POST /v2/trade/copytrade body (spec 2.6). Required: the reference's required fields.
 */
export const CopytradeRequest = {
  $id: 'CopytradeRequest',
  type: 'object',
  additionalProperties: false,
  required: [
    'leader_address',
    'buy_order_type',
    'buy_size_mode',
    'buy_size_value',
    'buy_insufficient_usdc_action',
    'sell_order_type',
    'sell_size_mode',
    'sell_insufficient_shares_action',
  ],
  properties: {
    leader_address: {
      type: 'string',
      minLength: 4,
      maxLength: 100,
      description: '0x + 40 hex; a mixed-case address must carry a valid EIP-55 checksum.',
    },
    status: { enum: ['ACTIVE', 'PAUSED'], description: 'Initial status (default ACTIVE).' },
    ...settingsProperties,
  },
} as const;
export type CopytradeRequest = FromSchema<typeof CopytradeRequest>;

/** PATCH /v2/trade/copytrade/{id} body: any setting; `leader_address` cannot change, status has its own endpoint. */
export const CopytradePatch = {
  $id: 'CopytradePatch',
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: settingsProperties,
} as const;
export type CopytradePatch = FromSchema<typeof CopytradePatch>;

/** POST /v2/trade/copytrade response (spec 2.6). */
export const CopytradeResponse = {
  $id: 'CopytradeResponse',
  type: 'object',
  additionalProperties: false,
  required: ['id', 'status'],
  properties: { id: { type: 'string' }, status: { type: 'string' } },
} as const;

/** PATCH /v2/trade/copytrade/{id}/status body. */
export const CopytradeStatusRequest = {
  $id: 'CopytradeStatusRequest',
  type: 'object',
  additionalProperties: false,
  required: ['status'],
  properties: {
    status: {
      enum: ['ACTIVE', 'PAUSED', 'DISABLED'],
      description: 'DISABLED can be re-enabled (ACTIVE); an ENDED subscription takes no status change (409).',
    },
  },
} as const;

const NUM = { type: 'string', description: 'Decimal string.' } as const;
const NUM_OR_NULL = { type: ['string', 'null'] } as const;

/** A subscription (GET one, list rows, PATCH answer). */
export const CopytradeView = {
  $id: 'CopytradeView',
  type: 'object',
  required: ['id', 'status', 'leader_address', 'created_at', 'updated_at', 'counters'],
  properties: {
    id: { type: 'string' },
    status: { enum: ['ACTIVE', 'PAUSED', 'DISABLED', 'ENDED'] },
    leader_address: { type: 'string' },
    leader_username: { type: ['string', 'null'] },
    buy_size_value: NUM,
    buy_min_trade_size: NUM_OR_NULL,
    buy_max_trade_size: NUM_OR_NULL,
    sell_size_value: NUM_OR_NULL,
    created_at: { type: 'string', format: 'date-time' },
    updated_at: { type: 'string', format: 'date-time' },
    counters: {
      type: 'object',
      required: ['copies', 'skipped', 'skipped_by_reason', 'spent_usd', 'realized_pnl'],
      properties: {
        copies: { type: 'integer' },
        skipped: { type: 'integer' },
        skipped_by_reason: { type: 'object', additionalProperties: { type: 'integer' } },
        spent_usd: NUM,
        realized_pnl: NUM,
        unrealized_pnl: { ...NUM_OR_NULL, description: 'At the midpoint (GET one only); null when a mark is missing.' },
        working_copies: { type: 'integer' },
      },
    },
  },
} as const;

export const CopytradeList = {
  $id: 'CopytradeList',
  type: 'object',
  additionalProperties: false,
  required: ['copytrades'],
  properties: { copytrades: { type: 'array', items: { $ref: 'CopytradeView' } } },
} as const;

export const CopytradeDeleted = {
  $id: 'CopytradeDeleted',
  type: 'object',
  additionalProperties: false,
  required: ['ok'],
  properties: { ok: { const: true } },
} as const;

/** One row of GET /v2/trade/copytrade/history: a copy or a skip with its reason. */
export const CopytradeHistoryItem = {
  $id: 'CopytradeHistoryItem',
  type: 'object',
  required: ['id', 'copytrade_id', 'result', 'reason', 'is_simulation', 'created_at'],
  properties: {
    id: { type: 'string' },
    copytrade_id: { type: 'string' },
    leader_address: { type: ['string', 'null'] },
    user_wallet: { type: ['string', 'null'] },
    market_id: { type: ['string', 'null'] },
    result: { enum: ['COPIED', 'SKIPPED'] },
    reason: {
      type: ['string', 'null'],
      description:
        'Why it was skipped: paused, disabled, ended, outside_date_window, buy_disabled, sell_disabled, ' +
        'order_type_filtered, market_filtered, tag_filtered, market_unknown, market_closed, market_resolved, ' +
        'below_min_trade_size, above_max_trade_size, no_liquidity, insufficient_pusd, insufficient_shares, ' +
        'no_position, below_market_minimum, order_refused.',
    },
    detail: {
      type: ['string', 'null'],
      description: "Why, in words; `risk control: tp0, sl1, close, hold` on the sells of a position's risk controls.",
    },
    event_slug: { type: ['string', 'null'] },
    market_title: { type: ['string', 'null'] },
    token_id: { type: ['string', 'null'], description: "The leader's token, the one the copy trades." },
    outcome: { type: ['string', 'null'] },
    side: { type: ['string', 'null'] },
    shares: NUM_OR_NULL,
    filled_size: NUM_OR_NULL,
    leader_fill: {
      type: ['object', 'null'],
      description: "The leader's fill: transaction_hash and log_index (its identity), side, price, size, role.",
    },
    order_type: { type: ['string', 'null'], description: "The leader's order type (taker: MARKET, maker: LIMIT)." },
    amount: { ...NUM_OR_NULL, description: 'Dollars of the copy.' },
    price: {
      ...NUM_OR_NULL,
      description:
        "The copy's fill price: its order's average fill price once it has filled, until then the price it " +
        'was sent at (its limit, or the touch it was decided at); a paper copy, the midpoint it filled at. ' +
        'Decimal probability (never cents).',
    },
    order_id: { type: ['string', 'null'] },
    order_status: { type: ['string', 'null'] },
    is_simulation: { type: 'boolean' },
    created_at: { type: 'string', format: 'date-time' },
  },
} as const;

export const CopytradeHistory = {
  $id: 'CopytradeHistory',
  type: 'object',
  additionalProperties: false,
  required: ['history', 'next_cursor'],
  properties: {
    history: { type: 'array', items: { $ref: 'CopytradeHistoryItem' } },
    next_cursor: {
      type: ['string', 'null'],
      description: 'Opaque: send back as `cursor` for the next (older) page; never parse. Null at the end.',
    },
  },
} as const;

export const CopytradePnl = {
  $id: 'CopytradePnl',
  type: 'object',
  additionalProperties: false,
  required: ['realized_pnl_24h', 'realized_pnl_lifetime', 'simulation'],
  properties: {
    realized_pnl_24h: NUM,
    realized_pnl_lifetime: NUM,
    simulation: {
      type: 'object',
      additionalProperties: false,
      required: ['realized_pnl_24h', 'realized_pnl_lifetime'],
      properties: { realized_pnl_24h: NUM, realized_pnl_lifetime: NUM },
    },
  },
} as const;

export const CopytradeSimulation = {
  $id: 'CopytradeSimulation',
  type: 'object',
  additionalProperties: false,
  required: ['initial_balance_usdc', 'cash_usdc', 'realized_pnl', 'unrealized_pnl', 'equity_usdc', 'positions'],
  properties: {
    initial_balance_usdc: NUM,
    cash_usdc: NUM,
    realized_pnl: NUM,
    unrealized_pnl: NUM_OR_NULL,
    equity_usdc: NUM_OR_NULL,
    positions: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['token_id', 'shares', 'avg_cost', 'cost_basis', 'mark_price', 'market_value', 'unrealized_pnl'],
        properties: {
          token_id: { type: 'string' },
          shares: NUM,
          avg_cost: { ...NUM, description: 'Dollars per share (decimal probability, never cents).' },
          cost_basis: NUM,
          mark_price: NUM_OR_NULL,
          market_value: NUM_OR_NULL,
          unrealized_pnl: NUM_OR_NULL,
        },
      },
    },
  },
} as const;

export const CopytradeReset = {
  $id: 'CopytradeReset',
  type: 'object',
  additionalProperties: false,
  required: ['deleted_count'],
  properties: { deleted_count: { type: 'integer', minimum: 0 } },
} as const;
