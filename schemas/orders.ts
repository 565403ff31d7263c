import type { FromSchema } from 'json-schema-to-ts';
import { EpochMs, PageFields, SharesString, USD_DECIMALS_PATTERN } from './common.js';

const DecimalString = { type: 'string', pattern: '^[0-9]+(\\.[0-9]+)?$', maxLength: 32 } as const;
const Bracket = {
  type: 'object',
  additionalProperties: false,
  required: ['price'],
  properties: { price: DecimalString, size: SharesString },
} as const;

/** Order types of spec 2.2. */
export const ORDER_TYPES = [
  'LIMIT',
  'MARKET',
  'PEGGED',
  'TWAP',
  'ICEBERG',
  'TAKE_PROFIT',
  'STOP_LOSS',
  'TRAILING_STOP',
  'TRAILING_BUY',
] as const;

/**
 * POST /v2/trade/order body (spec 2.2, 2.2.1). Structure and units here (sizes of at most 2
 * decimals, exclusive bounds); the rules that depend on the market or the wallet (price range and
 * tick, minimum sizes, the $1 minimum, balances, crossing) are engine/risk.ts's. Price bounds stay
 * there too, so that a price in cents gets spec 2.1's message.
 */
const OrderRequestBase = {
  type: 'object',
  additionalProperties: false,
  required: ['symbol', 'side', 'type'],
  properties: {
    venue: {
      enum: ['polymarket'],
      description: 'Venue; `polymarket` (the simulated Polymarket CLOB) is the default and only venue.',
    },
    symbol: {
      type: 'string',
      minLength: 1,
      maxLength: 100,
      pattern: '^[0-9]+$',
      description: 'Venue-native outcome token id.',
    },
    side: { enum: ['buy', 'sell'] },
    type: { enum: ORDER_TYPES },
    price: { ...DecimalString, description: 'Decimal probability 0.001–0.999, on the market tick.' },
    size: { ...SharesString, description: 'Shares (at most 2 decimals).' },
    quote_amount: { ...DecimalString, description: 'US dollars.' },
    time_in_force: {
      enum: ['GTC', 'IOC', 'FOK'],
      description:
        'LIMIT: GTC by default (GTD when `expiration` is set), IOC or FOK. MARKET: IOC (the default: fills what ' +
        'the book offers, cancels the rest) or FOK (the whole size, or the whole quote amount of a buy, at once, ' +
        'else canceled with nothing filled); GTC on a MARKET is a 400.',
    },
    // no schema maximum: engine/risk.ts bounds it (365 days ahead)
    // with a message that can suggest the millisecond value
    expiration: {
      type: 'integer',
      minimum: 0,
      description:
        'GTD expiry, Unix epoch milliseconds, in the future and at most 365 days ahead (else 400); incompatible ' +
        'with time_in_force.',
    },
    condition_id: { type: 'string', maxLength: 100 },
    outcome: { enum: ['yes', 'no'] },
    offset_ticks: { type: 'integer', minimum: 0, maximum: 1000 },
    budget_usdc: DecimalString,
    // the range is checked by engine/risk.ts (checkPrice), so that a price in cents gets spec 2.1's message
    price_floor: {
      type: 'number',
      description:
        'PEGGED lowest chase price, decimal probability 0.001–0.999 (a value above 1 is refused with the cents ' +
        'message of spec 2.1).',
    },
    price_ceiling: {
      type: 'number',
      description:
        'PEGGED highest chase price, decimal probability 0.001–0.999 (a value above 1 is refused with the cents ' +
        'message of spec 2.1).',
    },
    execution: {
      type: 'object',
      additionalProperties: false,
      description:
        'Strategy parameters (spec 2.2.1). Each type takes only its own fields — TWAP: interval_sec, ' +
        'duration_sec, passive; ICEBERG: clip_size, price_tolerance_pct; ' +
        'TRAILING_STOP: trailing_offset_pct or trailing_offset, high_water_mark; TRAILING_BUY: ' +
        'trailing_offset_pct or trailing_offset, low_water_mark, price_ceiling. ' +
        'Any other field is refused with 400 naming it, except TWAP clip_size, randomize_pct and ' +
        'price_tolerance_pct, which are ignored with a `warnings` entry (spec 2.2.2). ' +
        'LIMIT, MARKET, TAKE_PROFIT, STOP_LOSS and PEGGED take no execution object.',
      properties: {
        duration_sec: {
          type: 'number',
          exclusiveMinimum: 0,
          maximum: 604800,
          description:
            'TWAP run length in seconds (at most 604800 = 7 days, whole milliseconds); at most 1000 slices ' +
            '(duration_sec / interval_sec). Each slice must be at least 0.01 shares (size / slices), and a ' +
            'passive slice at least the market minimum size.',
        },
        clip_size: SharesString,
        interval_sec: { type: 'integer', minimum: 10, maximum: 604800 },
        randomize_pct: { type: 'number', minimum: 0, maximum: 50 },
        passive: { type: 'boolean' },
        price_tolerance_pct: { type: 'number', minimum: 0, maximum: 100 },
        trailing_offset_pct: { type: 'number', exclusiveMinimum: 0, exclusiveMaximum: 100 },
        trailing_offset: DecimalString,
        high_water_mark: DecimalString,
        low_water_mark: DecimalString,
        price_ceiling: DecimalString,
      },
    },
    take_profit: Bracket,
    stop_loss: Bracket,
    client_order_id: { type: 'string', maxLength: 128 },
    metadata: { type: 'string', maxLength: 1024 },
  },
} as const;

const THEN = (description: string, then: object) => ({ description, then });
/** `if type is T` (optionally `and side is S`). */
const isType = (types: readonly string[], side?: 'buy' | 'sell') => ({
  required: side ? ['type', 'side'] : ['type'],
  properties: { type: { enum: types }, ...(side ? { side: { const: side } } : {}) },
});
const OFFSET = {
  type: 'object',
  anyOf: [{ required: ['trailing_offset_pct'] }, { required: ['trailing_offset'] }],
} as const;

/**
 * Per-type rules of spec 2.2.2 as data: `if` the type (and side) match, `then` these fields are
 * required. Each rule's `description` completes the error message ("price is required for LIMIT
 * orders"). Rules that need the market or the wallet (tick, minimum size, balances, crossing) are
 * checked by engine/risk.ts.
 */
export const ORDER_TYPE_RULES = [
  { if: isType(['LIMIT']), ...THEN('LIMIT orders', { required: ['price', 'size'] }) },
  {
    if: isType(['MARKET'], 'buy'),
    ...THEN('a MARKET buy (dollars)', {
      required: ['quote_amount'],
      properties: { quote_amount: { type: 'string', pattern: USD_DECIMALS_PATTERN } },
    }),
  },
  { if: isType(['MARKET'], 'sell'), ...THEN('a MARKET sell (shares)', { required: ['size'] }) },
  {
    if: isType(['PEGGED']),
    ...THEN('PEGGED orders (budget_usdc, or quote_amount as its alias)', {
      anyOf: [{ required: ['budget_usdc'] }, { required: ['quote_amount'] }],
    }),
  },
  {
    if: isType(['ICEBERG']),
    ...THEN('ICEBERG orders', {
      required: ['price', 'size', 'execution'],
      properties: { execution: { type: 'object', required: ['clip_size'] } },
    }),
  },
  {
    if: isType(['TWAP']),
    ...THEN('TWAP orders', {
      required: ['execution'],
      properties: { execution: { type: 'object', required: ['interval_sec', 'duration_sec'] } },
      anyOf: [{ required: ['size'] }, { required: ['quote_amount'] }],
    }),
  },
  {
    if: isType(['TRAILING_STOP']),
    ...THEN(
      'TRAILING_STOP orders (size, execution.trailing_offset_pct or execution.trailing_offset, and ' +
        'execution.high_water_mark or price)',
      {
        required: ['size', 'execution'],
        properties: { execution: OFFSET },
        anyOf: [
          { required: ['price'] },
          { required: ['execution'], properties: { execution: { type: 'object', required: ['high_water_mark'] } } },
        ],
      },
    ),
  },
  {
    if: isType(['TRAILING_BUY']),
    ...THEN('TRAILING_BUY orders (quote_amount, and execution.trailing_offset_pct or execution.trailing_offset)', {
      required: ['quote_amount', 'execution'],
      properties: { execution: OFFSET },
    }),
  },
  {
    if: isType(['TAKE_PROFIT', 'STOP_LOSS']),
    ...THEN('TAKE_PROFIT and STOP_LOSS orders (sell-side, price and size)', {
      required: ['price', 'size'],
      properties: { side: { const: 'sell' } },
    }),
  },
  {
    if: { anyOf: [{ required: ['take_profit'] }, { required: ['stop_loss'] }] },
    ...THEN('brackets (take_profit / stop_loss attach to buy LIMIT or MARKET entries only)', {
      required: ['type', 'side'],
      properties: { type: { enum: ['LIMIT', 'MARKET'] }, side: { const: 'buy' } },
    }),
  },
] as const;

/**
 * POST /v2/trade/order body (spec 2.2, 2.2.1, 2.2.2): structure, units and the per-type rules;
 * what depends on the market or the wallet is checked by engine/risk.ts.
 */
export const OrderRequest = { $id: 'OrderRequest', ...OrderRequestBase, allOf: ORDER_TYPE_RULES } as const;
export type OrderRequest = FromSchema<typeof OrderRequestBase>;

const Nullable = (s: object) => ({ anyOf: [s, { type: 'null' }] }) as const;
const OrderStatus = {
  enum: ['SUBMITTED', 'OPEN', 'PARTIALLY_FILLED', 'PENDING_CANCEL', 'FILLED', 'CANCELED', 'EXPIRED', 'REJECTED'],
} as const;

/** An order as the API returns it: spec 2.3 fields plus what an open-orders row needs. */
const orderProperties = {
  type: { type: 'string' },
  order_id: { type: ['string', 'null'] },
  record_id: { type: ['string', 'null'] },
  status: {
    type: 'string',
    description:
      'CLOB orders: SUBMITTED, OPEN, PARTIALLY_FILLED, PENDING_CANCEL, FILLED, CANCELED, EXPIRED, REJECTED (one ' +
      'per order-machine state).',
  },
  side: { enum: ['buy', 'sell'] },
  symbol: { type: 'string' },
  price: { type: ['string', 'null'], description: 'Limit price (decimal probability); null for MARKET.' },
  size: { type: ['string', 'null'], description: 'Shares ordered; null for a MARKET buy (sized in dollars).' },
  quote_amount: { type: ['string', 'null'], description: 'Dollars of a MARKET buy.' },
  filled_size: { type: ['string', 'null'], description: 'Shares filled.' },
  remaining_size: {
    type: ['string', 'null'],
    description: 'Shares still working at the venue ("0" once the order is done; null for a working MARKET buy).',
  },
  matched_amount: { type: ['string', 'null'], description: 'Dollars traded (Σ price × size).' },
  avg_price: { type: ['string', 'null'], description: 'Average fill price, null before the first fill.' },
  average_price: { type: ['string', 'null'], description: 'The same as `avg_price` (the name some clients read).' },
  builder_code_used: { type: ['string', 'null'] },
  fills: {
    type: 'array',
    description:
      'The fills, in the order they arrived (absent before the first): each with its trade id, price, size, ' +
      'maker or taker, fee and its position on the simulated chain (as in GET /v2/trade/trades).',
    items: { $ref: 'OrderFill' },
  },
  time_in_force: { enum: ['GTC', 'GTD', 'IOC', 'FOK'] },
  expiration: Nullable(EpochMs),
  client_order_id: { type: ['string', 'null'] },
  metadata: { type: ['string', 'null'] },
  is_stop_loss: { type: 'boolean' },
  is_take_profit: { type: 'boolean' },
  bracket_id: {
    type: ['string', 'null'],
    description: 'A buy entry with brackets: `record_id` of its BRACKET record (GET /v2/trade/strategies).',
  },
  created_at: EpochMs,
  updated_at: EpochMs,
  revision: { type: 'integer', minimum: 1, description: 'Increases by one per change of this order.' },
  message: { type: 'string' },
  cancel_code: {
    enum: [
      'USER_CANCELED',
      'STRATEGY_CANCELED',
      'SLICE_ROLLED',
      'DURATION_OVER',
      'REPEGGED',
      'PRICE_DRIFTED',
      'BRACKET_STOP_FIRED',
      'MARKET_RESOLVED',
      'TICK_SIZE_CHANGED',
      'SELF_TRADE_PREVENTION',
      'IOC_REMAINDER',
      'FOK_NOT_FILLED',
      'EXPIRED',
      'VENUE_CANCELED',
    ],
    description:
      'CANCELED, EXPIRED and PENDING_CANCEL orders: why. `USER_CANCELED` only when the user asked (DELETE ' +
      'order, cancel-batch, cancel-all); `STRATEGY_CANCELED` (its strategy ended: DELETE strategy, market ' +
      'closed), ' +
      '`SLICE_ROLLED` / `DURATION_OVER` (TWAP), `REPEGGED` (PEGGED), `PRICE_DRIFTED` (ICEBERG), ' +
      "`BRACKET_STOP_FIRED` (a take-profit canceled because its bracket's stop fired); the venue's " +
      '`MARKET_RESOLVED`, ' +
      '`TICK_SIZE_CHANGED`, `SELF_TRADE_PREVENTION`, `IOC_REMAINDER`, `FOK_NOT_FILLED`; `EXPIRED` (GTD); ' +
      '`VENUE_CANCELED` (a cancel recorded without a code). Absent on orders canceled before codes were ' +
      'recorded.',
  },
  cancel_reason: {
    type: 'string',
    description:
      'With `cancel_code`: the reason in words (which strategy and why, the bracket whose stop fired, ' +
      '`market resolved`, `expired`, `canceled by user`).',
  },
  warnings: {
    type: 'array',
    items: { type: 'string' },
    description: 'Notes the partner must read (ignored fields, failed brackets); a 200 may carry them.',
  },
  brackets: {
    type: 'object',
    additionalProperties: false,
    description:
      'Bracket legs of a buy entry (spec 2.3): placed once the entry ends with shares filled, sized by the ' +
      'filled quantity; best-effort (a failed leg sets `error` and a `warnings` entry, the entry stands).',
    properties: { take_profit: { $ref: 'BracketResult' }, stop_loss: { $ref: 'BracketResult' } },
  },
} as const;

/** One fill of an order (OrderView `fills`). */
export const OrderFill = {
  $id: 'OrderFill',
  type: 'object',
  additionalProperties: false,
  required: ['trade_id', 'price', 'size', 'liquidity', 'fee_usd', 'traded_at', 'block_timestamp', 'log_index'],
  properties: {
    trade_id: { type: 'string', description: "The venue's id of this order's side of the trade." },
    price: { type: 'string', description: "Price of the order's token (decimal probability)." },
    size: { type: 'string', description: 'Shares.' },
    liquidity: { enum: ['maker', 'taker'], description: 'Whether the order rested (maker) or took (taker).' },
    fee_usd: { type: 'string', description: 'Fee this order paid, dollars ("0": the simulated venue charges none).' },
    traded_at: Nullable(EpochMs),
    block_timestamp: {
      type: ['integer', 'null'],
      description: 'Block of the trade on the simulated chain, integer seconds (2-second blocks).',
    },
    log_index: { type: ['integer', 'null'], description: 'Index of the trade in its block.' },
    transaction_hash: { type: ['string', 'null'], description: 'Simulated transaction hash, `0x` + 64 hex.' },
  },
} as const;

/** One bracket leg in an order response (spec 2.3): a failed bracket sets `error`. */
export const BracketResult = {
  $id: 'BracketResult',
  type: 'object',
  additionalProperties: true,
  properties: {
    order_id: {
      type: ['string', 'null'],
      description:
        "The leg's CLOB order: the take-profit sell, or the stop-loss sell once the stop fired; null before.",
    },
    id: {
      type: ['string', 'null'],
      description:
        '`record_id` of the BRACKET record that runs both legs (GET /v2/trade/strategies, DELETE to disarm).',
    },
    status: {
      type: ['string', 'null'],
      description:
        "WAITING (for the entry to end), ARMED (stop), TRIGGERED (stop fired), the leg order's status (OPEN, " +
        'FILLED, …), FAILED, CANCELED.',
    },
    error: { type: ['string', 'null'], description: 'Why the leg failed; null otherwise.' },
    price: { type: 'string', description: 'Leg price (decimal probability).' },
    size: { type: ['string', 'null'], description: 'Shares protected; null until the entry ended.' },
  },
} as const;

export const OrderView = {
  $id: 'OrderView',
  type: 'object',
  additionalProperties: false,
  required: [
    'type',
    'order_id',
    'record_id',
    'status',
    'side',
    'price',
    'size',
    'filled_size',
    'remaining_size',
    'matched_amount',
    'builder_code_used',
    'created_at',
  ],
  properties: { ...orderProperties, status: OrderStatus },
} as const;
export type OrderView = FromSchema<typeof OrderView>;

/** POST /v2/trade/order 200 response (spec 2.3). */
export const OrderResponse = { ...OrderView, $id: 'OrderResponse', properties: { ...orderProperties } } as const;

/** GET /v2/trade/orders/open response. */
export const OpenOrdersPage = {
  $id: 'OpenOrdersPage',
  type: 'object',
  additionalProperties: false,
  required: ['orders', 'count', 'total', 'limit', 'offset', 'has_more'],
  properties: {
    orders: { type: 'array', items: { $ref: 'OrderView' } },
    ...PageFields,
  },
} as const;

/** Most orders one POST /v2/trade/order/batch places (the reference product's limit). */
export const ORDER_BATCH_MAX = 20;

/**
 * POST /v2/trade/order/batch body (the reference product's ladder): 1 to {@link ORDER_BATCH_MAX}
 * GTC limit orders of one outcome token and side, each at its own price. Each rung follows the
 * rules of a LIMIT order (price range and tick, minimum size); the wallet must cover all of them.
 */
export const OrderBatchRequest = {
  $id: 'OrderBatchRequest',
  type: 'object',
  additionalProperties: false,
  required: ['symbol', 'side', 'rungs'],
  properties: {
    venue: OrderRequestBase.properties.venue,
    symbol: OrderRequestBase.properties.symbol,
    side: OrderRequestBase.properties.side,
    rungs: {
      type: 'array',
      minItems: 1,
      maxItems: ORDER_BATCH_MAX,
      description:
        `1 to ${ORDER_BATCH_MAX} orders, each at its own price ` + '(a repeated price is a 400); placed in this order.',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['price', 'size'],
        properties: { price: OrderRequestBase.properties.price, size: OrderRequestBase.properties.size },
      },
    },
  },
} as const;
export type OrderBatchRequest = FromSchema<typeof OrderBatchRequest>;

/** POST /v2/trade/order/batch 200 response: one order per rung, in the rungs' order. */
export const OrderBatchResponse = {
  $id: 'OrderBatchResponse',
  type: 'object',
  additionalProperties: false,
  required: ['orders', 'count'],
  properties: {
    orders: {
      type: 'array',
      items: { $ref: 'OrderView' },
      description:
        'The order of each rung, as GET /v2/trade/orders/{order_id} shows it once the venue answered (OPEN, or ' +
        'PARTIALLY_FILLED / FILLED when the rung crossed the book).',
    },
    count: { type: 'integer', minimum: 1, description: 'Orders placed (the number of rungs).' },
  },
} as const;
