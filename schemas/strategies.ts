import type { FromSchema } from 'json-schema-to-ts';
import { EpochMs, offsetPage } from './common.js';

const NullableString = { type: ['string', 'null'] } as const;

/** Statuses of a managed strategy (spec 2.4 names PENDING and ACTIVE; the rest are ours, see README). */
export const STRATEGY_STATUSES = ['PENDING', 'ACTIVE', 'TRIGGERED', 'COMPLETED', 'CANCELED', 'FAILED'] as const;
export const STRATEGY_TYPES = [
  'PEGGED',
  'TWAP',
  'ICEBERG',
  'STOP_LOSS',
  'TRAILING_STOP',
  'TRAILING_BUY',
  'BRACKET',
] as const;

/**
 * A managed strategy as GET /v2/trade/strategies returns it (spec 2.4). `price` is the armed
 * level (STOP_LOSS, TRAILING_STOP) or the ceiling (TRAILING_BUY), never the fill;
 * `executed_price` and `filled_size` are the fill, null until execution.
 */
export const StrategyRecord = {
  $id: 'StrategyRecord',
  type: 'object',
  additionalProperties: false,
  required: [
    'record_id',
    'type',
    'status',
    'side',
    'symbol',
    'price',
    'size',
    'filled_size',
    'remaining_size',
    'executed_price',
    'created_at',
    'updated_at',
  ],
  properties: {
    record_id: { type: 'string' },
    type: { enum: STRATEGY_TYPES },
    status: {
      enum: STRATEGY_STATUSES,
      description:
        'PENDING: accepted, waiting for its first action (a start time, a book); ACTIVE: working or armed; ' +
        'TRIGGERED: a stop fired and its CLOB order works (see order_ids); COMPLETED: done (filled, or budget ' +
        'spent); CANCELED: by DELETE or drift tolerance; FAILED: could not continue (see message).',
    },
    side: { enum: ['buy', 'sell'] },
    symbol: { type: 'string', description: 'Outcome token id.' },
    price: {
      ...NullableString,
      description:
        'Armed level (STOP_LOSS, TRAILING_STOP), ceiling (TRAILING_BUY), limit (TWAP, ICEBERG); decimal probability.',
    },
    size: { ...NullableString, description: 'Shares to trade; null when sized in dollars.' },
    quote_amount: { ...NullableString, description: 'Dollars (TWAP by notional, TRAILING_BUY, PEGGED budget).' },
    filled_size: { ...NullableString, description: 'Shares filled so far; null until the first fill.' },
    remaining_size: {
      ...NullableString,
      description:
        'Shares not yet filled (size − filled_size, "0" once all traded); null when sized in dollars. The same ' +
        'as in the order response of this strategy.',
    },
    executed_price: { ...NullableString, description: 'Average fill price; null until execution.' },
    matched_amount: { ...NullableString, description: 'Dollars traded so far.' },
    execution: { type: 'object', description: 'The execution parameters as sent (spec 2.2.1).' },
    high_water_mark: { ...NullableString, description: 'TRAILING_STOP: highest bid seen since arming.' },
    low_water_mark: { ...NullableString, description: 'TRAILING_BUY: lowest ask seen since arming.' },
    trigger_price: { ...NullableString, description: 'Current trigger level of a trailing order.' },
    slices_done: {
      type: ['integer', 'null'],
      minimum: 0,
      description: 'TWAP slices placed so far / ICEBERG clips filled.',
    },
    slices_total: {
      type: ['integer', 'null'],
      minimum: 0,
      description: 'TWAP slices planned; null for ICEBERG (until done).',
    },
    next_slice_at: { anyOf: [EpochMs, { type: 'null' }], description: 'TWAP: when the next slice goes out.' },
    entry_order_id: { ...NullableString, description: 'BRACKET: the buy entry whose shares the legs protect.' },
    brackets: {
      type: 'object',
      additionalProperties: false,
      description: 'BRACKET: its legs, as in the order response (spec 2.3).',
      properties: { take_profit: { $ref: 'BracketResult' }, stop_loss: { $ref: 'BracketResult' } },
    },
    order_ids: {
      type: 'array',
      items: { type: 'string' },
      description: 'CLOB orders this strategy placed, oldest first.',
    },
    client_order_id: NullableString,
    metadata: NullableString,
    message: { type: 'string' },
    warnings: { type: 'array', items: { type: 'string' } },
    created_at: EpochMs,
    updated_at: EpochMs,
    revision: { type: 'integer', minimum: 1, description: 'Increases by one per change of this record.' },
  },
} as const;
export type StrategyRecord = FromSchema<typeof StrategyRecord>;

/** GET /v2/trade/strategies response (offset/limit, limit ≤ 500). */
export const StrategiesPage = offsetPage(
  'StrategiesPage',
  'strategies',
  { $ref: 'StrategyRecord' } as const,
  "The user's managed strategies, newest first.",
);
