import { PageFields as Page } from './common.js';

const Dec = { type: 'string', pattern: '^-?[0-9]+(\\.[0-9]+)?$' } as const;

/** GET /v2/trade/book response: levels best first, decimal strings. */
export const BookResponse = {
  $id: 'BookResponse',
  type: 'object',
  additionalProperties: false,
  required: ['token_id', 'tick_size', 'min_size', 'bids', 'asks'],
  properties: {
    token_id: { type: 'string' },
    tick_size: Dec,
    min_size: Dec,
    bids: { type: 'array', items: { type: 'object', additionalProperties: false, required: ['price', 'size'], properties: { price: Dec, size: Dec } } },
    asks: { type: 'array', items: { type: 'object', additionalProperties: false, required: ['price', 'size'], properties: { price: Dec, size: Dec } } },
  },
} as const;

/** GET /v2/trade/markets response (offset/limit envelope, limit ≤ 500). */
export const MarketsPage = {
  $id: 'MarketsPage',
  type: 'object',
  additionalProperties: false,
  required: ['markets', 'total', 'limit', 'offset', 'has_more'],
  properties: {
    markets: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['condition_id', 'question', 'tokens', 'tick_size', 'min_size', 'end_date'],
        properties: {
          condition_id: { type: 'string' },
          question: { type: 'string' },
          slug: { type: 'string' },
          tokens: { type: 'array', items: { type: 'object', additionalProperties: false, required: ['token_id', 'outcome'], properties: { token_id: { type: 'string' }, outcome: { type: 'string' } } } },
          tick_size: Dec,
          min_size: Dec,
          end_date: { type: ['string', 'null'], description: 'ISO 8601.' },
        },
      },
    },
    ...Page,
  },
} as const;

/** GET /v2/trade/balances response: pUSD on the venue. */
export const BalancesResponse = {
  $id: 'BalancesResponse',
  type: 'object',
  additionalProperties: false,
  required: ['currency', 'balance', 'reserved', 'available'],
  properties: {
    currency: { const: 'pUSD' },
    balance: { ...Dec, description: 'Dollars held.' },
    reserved: { ...Dec, description: 'Dollars reserved by open buy orders.' },
    available: { ...Dec, description: 'balance − reserved: what new orders may use.' },
  },
} as const;

/** GET /v2/trade/positions response (offset/limit envelope, limit ≤ 500). */
export const PositionsPage = {
  $id: 'PositionsPage',
  type: 'object',
  additionalProperties: false,
  required: ['positions', 'total', 'limit', 'offset', 'has_more'],
  properties: {
    positions: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['token_id', 'condition_id', 'outcome', 'question', 'size', 'reserved', 'available', 'avg_price', 'cost_usd'],
        properties: {
          token_id: { type: 'string' },
          condition_id: { type: 'string' },
          outcome: { type: 'string' },
          question: { type: 'string' },
          size: { ...Dec, description: 'Shares held.' },
          reserved: { ...Dec, description: 'Shares reserved by open sells.' },
          available: Dec,
          avg_price: { ...Dec, description: 'Average cost per share (decimal probability).' },
          cost_usd: { ...Dec, description: 'Cost basis, dollars.' },
        },
      },
    },
    ...Page,
  },
} as const;

