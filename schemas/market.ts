import { PageFields as Page } from './common.js';

const Dec = { type: 'string', pattern: '^-?[0-9]+(\\.[0-9]+)?$' } as const;

/** GET /v2/trade/book response: levels best first, decimal strings. */
export const BookResponse = {
  $id: 'BookResponse',
  type: 'object',
  additionalProperties: false,
  required: ['token_id', 'tick_size', 'min_size', 'bids', 'asks', 'last_trade_price'],
  properties: {
    token_id: { type: 'string' },
    tick_size: {
      ...Dec,
      description:
        "Current tick of the market (decimal probability): it can change during the market's life (0.01 → " +
        '0.001); new orders are checked against it.',
    },
    min_size: Dec,
    last_trade_price: {
      ...Dec,
      type: ['string', 'null'],
      description: 'Price of the last trade print of the token (decimal probability); null while none was seen.',
    },
    bids: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['price', 'size'],
        properties: { price: Dec, size: Dec },
      },
    },
    asks: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['price', 'size'],
        properties: { price: Dec, size: Dec },
      },
    },
  },
} as const;

/** One market of GET /v2/trade/markets (and the answer of the simulation control's resolve). */
export const MarketItem = {
  type: 'object',
  additionalProperties: false,
  required: [
    'condition_id',
    'question',
    'tokens',
    'tick_size',
    'min_size',
    'end_date',
    'neg_risk',
    'closed',
    'resolved',
    'winning_token_id',
  ],
  properties: {
    condition_id: { type: 'string' },
    question: { type: 'string' },
    slug: { type: 'string' },
    tokens: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['token_id', 'outcome', 'winner', 'last_trade_price'],
        properties: {
          token_id: { type: 'string' },
          outcome: { type: 'string' },
          winner: {
            type: ['boolean', 'null'],
            description:
              'null until the market resolved (not yet known: not "lost"); then true for the winning token, ' +
              'false for the other.',
          },
          last_trade_price: {
            ...Dec,
            type: ['string', 'null'],
            description: "Price of the token's last trade print (decimal probability); null while none was seen.",
          },
        },
      },
    },
    tick_size: { ...Dec, description: "Current tick (decimal probability); it can change during the market's life." },
    min_size: Dec,
    end_date: { type: ['string', 'null'], description: 'ISO 8601.' },
    neg_risk: {
      type: 'boolean',
      description:
        'A neg-risk market (on chain its split, merge and redeem go through the NegRiskAdapter): what ' +
        '`neg_risk_market` of POST /v2/trade/positions/split, /merge and /redeem must say when sent.',
    },
    closed: {
      type: 'boolean',
      description:
        'True once the market takes no new orders (closed or resolved): orders on it answer 422 `MARKET_CLOSED`.',
    },
    resolved: {
      type: 'boolean',
      description: 'True once the winner is known: each winning share redeems for $1, each losing share for $0.',
    },
    winning_token_id: { type: ['string', 'null'], description: 'The winning outcome token once resolved, else null.' },
    resolved_at: { type: ['integer', 'null'], description: 'When the market resolved, epoch ms, else null.' },
  },
} as const;

/** GET /v2/trade/markets response (offset/limit envelope, limit ≤ 500). */
export const MarketsPage = {
  $id: 'MarketsPage',
  type: 'object',
  additionalProperties: false,
  required: ['markets', 'count', 'total', 'limit', 'offset', 'has_more'],
  properties: {
    markets: { type: 'array', items: MarketItem },
    ...Page,
  },
} as const;

/** POST /v2/sim/markets/{condition_id}/resolve response: the market after resolution. */
export const SimResolveResponse = { $id: 'SimResolveResponse', ...MarketItem } as const;

/** POST /v2/sim/markets/{condition_id}/resolve body (simulation control, SIM_CONTROL=on). */
export const SimResolveRequest = {
  $id: 'SimResolveRequest',
  type: 'object',
  additionalProperties: false,
  required: ['winning_token_id'],
  properties: {
    winning_token_id: {
      type: 'string',
      pattern: '^[0-9]{1,100}$',
      description: "The outcome token that wins (one of the market's).",
    },
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
  required: ['positions', 'count', 'total', 'limit', 'offset', 'has_more'],
  properties: {
    positions: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: [
          'token_id',
          'symbol',
          'condition_id',
          'outcome',
          'question',
          'size',
          'reserved',
          'available',
          'avg_price',
          'cost_usd',
          'cur_price',
          'current_value',
          'cash_pnl',
          'realized_pnl',
          'redeemable',
          'mergeable',
          'market_resolved',
        ],
        properties: {
          token_id: { type: 'string' },
          symbol: {
            type: 'string',
            description: 'The outcome token id (the same as `token_id`), as orders and strategies name it.',
          },
          condition_id: { type: 'string' },
          outcome: { type: 'string' },
          question: { type: 'string' },
          size: { ...Dec, description: 'Shares held.' },
          reserved: { ...Dec, description: 'Shares reserved by open sells.' },
          available: Dec,
          avg_price: { ...Dec, description: 'Average cost per share (decimal probability).' },
          cost_usd: { ...Dec, description: 'Cost basis, dollars.' },
          cur_price: {
            ...Dec,
            type: ['string', 'null'],
            description:
              'Mark price (decimal probability): the mid of the best bid and ask; once the market resolved 1 ' +
              'for the winning token, 0 for the other; without both sides the last trade print, else the one ' +
              'side quoted; null when the token has no price at all.',
          },
          current_value: {
            ...Dec,
            type: ['string', 'null'],
            description: 'size × cur_price, dollars (6 decimals); null without a mark.',
          },
          cash_pnl: {
            ...Dec,
            type: ['string', 'null'],
            description:
              'Unrealized PnL at the mark: current_value − cost_usd, dollars (negative for a loss); null ' +
              'without a mark.',
          },
          realized_pnl: {
            ...Dec,
            description:
              "PnL realized on this token by sells (price received − average cost), merges (each token's share " +
              'of the dollars paid − its cost) and redeems ($1 or $0 a share − cost), dollars (negative for ' +
              'a loss).',
          },
          redeemable: {
            type: 'boolean',
            description: 'The market resolved: POST /v2/trade/positions/redeem pays these shares out.',
          },
          mergeable: {
            type: 'boolean',
            description:
              'Free shares of both outcome tokens are held: POST /v2/trade/positions/merge can turn them into pUSD.',
          },
          market_resolved: { type: 'boolean', description: 'The market resolved (its winner is known).' },
        },
      },
    },
    ...Page,
  },
} as const;
