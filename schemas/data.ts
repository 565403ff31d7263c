/**
 * Shapes of the public data reads on the trade tape (spec 2.9, 4.6, 4.7): GET /v2/trade/trades and
 * GET /v2/trade/traders/{address}/trades. Field names follow the reference product's trade log;
 * numbers are decimal strings, prices decimal probability (spec 2.1).
 */
import { Address, DecimalString } from './common.js';

const NullableAddress = { anyOf: [Address, { type: 'null' }] } as const;
const NullableText = { type: ['string', 'null'] } as const;

/** Fields every tape row carries: the chain position, the market and the trade's terms. */
const tradeFields = {
  trade_id: { type: 'string', description: 'Trade id (a trade and its parties’ fills share it).' },
  block_timestamp: {
    type: 'integer',
    minimum: 0,
    description:
      'Block time, integer seconds since the epoch (2-second blocks). Chain order is (block_timestamp, log_index).',
  },
  log_index: { type: 'integer', minimum: 0, description: 'Index of the trade event in its block.' },
  transaction_hash: { type: 'string', pattern: '^0x[0-9a-f]{64}$', description: 'Transaction of the trade.' },
  ts: { type: 'string', format: 'date-time', description: 'block_timestamp as ISO 8601 UTC.' },
  market_id: { type: 'string', description: 'Condition id of the market.' },
  question: { ...NullableText, description: 'Market question (null when the market is not listed).' },
  slug: { ...NullableText, description: 'Market slug (null when the market is not listed).' },
  outcome: { type: 'string', description: 'Outcome of token_id ("Yes", "Up", …).' },
  token_id: { type: 'string', description: 'Outcome token id.' },
  side: { enum: ['BUY', 'SELL'] },
  price: { ...DecimalString, description: 'Price of token_id, decimal probability.' },
  shares: { ...DecimalString, description: 'Size, shares.' },
  usdc_amount: { ...DecimalString, description: 'price × shares, dollars.' },
  fee_usd: { ...DecimalString, description: 'Fee paid, dollars ("0" when none).' },
  event_type: { const: 'TRADE', description: 'Always TRADE on these reads (cash movements are not trades).' },
  source: {
    enum: ['venue', 'capture', 'history', 'replay'],
    description:
      "`venue`: a trade of this service's venue (its users and the liquidity provider); `capture`: a trade print " +
      'of the market-data capture (anonymous: no wallets); `history`: a row of the loaded real trade history; ' +
      '`replay`: a fill of the real leader wallet replayed live (`COPYTRADE_LEADER_REPLAY`) at its replay time.',
  },
} as const;
const tradeRequired = Object.keys(tradeFields) as Array<keyof typeof tradeFields>;

/** One row of GET /v2/trade/trades: one trade of the market tape. */
export const TapeTradeItem = {
  $id: 'TapeTradeItem',
  type: 'object',
  additionalProperties: false,
  required: [...tradeRequired, 'maker', 'taker'],
  properties: {
    ...tradeFields,
    side: { enum: ['BUY', 'SELL'], description: "The taker's side." },
    price: { ...DecimalString, description: 'Price of token_id (the taker’s token), decimal probability.' },
    fee_usd: { ...DecimalString, description: 'Fee paid by the taker, dollars ("0" when none).' },
    maker: { ...NullableAddress, description: "Maker's wallet, lower-case; null on an anonymous print." },
    taker: { ...NullableAddress, description: "Taker's wallet, lower-case; null on an anonymous print." },
  },
} as const;

/** One row of GET /v2/trade/traders/{address}/trades: the trader's side of one trade. */
export const TraderTradeItem = {
  $id: 'TraderTradeItem',
  type: 'object',
  additionalProperties: false,
  required: [...tradeRequired, 'address', 'role'],
  properties: {
    ...tradeFields,
    address: { ...Address, description: 'The trader, lower-case.' },
    role: { enum: ['maker', 'taker'], description: 'The trader’s role in the trade.' },
    token_id: {
      type: 'string',
      description: "The trader's outcome token (a maker matched by complementary matching holds the other outcome).",
    },
    side: { enum: ['BUY', 'SELL'], description: "The trader's side." },
    fee_usd: { ...DecimalString, description: 'Fee the trader paid, dollars ("0" when none).' },
  },
} as const;

const cursorFields = {
  next_cursor: {
    type: ['integer', 'null'],
    description: 'block_timestamp of the last row read; send it as cursor_ts for the next page. Null at the end.',
  },
  next_cursor_log_idx: {
    type: ['integer', 'null'],
    description: 'log_index of the last row read; send it as next_cursor_log_idx with cursor_ts. Null at the end.',
  },
} as const;

/** GET /v2/trade/trades response (spec 2.9: compound cursor). */
export const TradesPage = {
  $id: 'TradesPage',
  type: 'object',
  additionalProperties: false,
  required: ['trades', 'count', 'next_cursor', 'next_cursor_log_idx'],
  properties: {
    trades: { type: 'array', items: { $ref: 'TapeTradeItem' }, description: 'Newest first (chain order descending).' },
    count: { type: 'integer', minimum: 0, description: 'Rows on this page.' },
    ...cursorFields,
  },
} as const;

/** GET /v2/trade/traders/{address}/trades response (spec 2.9: compound cursor). */
export const TraderTradesPage = {
  $id: 'TraderTradesPage',
  type: 'object',
  additionalProperties: false,
  required: ['trades', 'count', 'next_cursor', 'next_cursor_log_idx'],
  properties: {
    trades: {
      type: 'array',
      items: { $ref: 'TraderTradeItem' },
      description: 'Newest first (chain order descending).',
    },
    count: { type: 'integer', minimum: 0, description: 'Rows on this page.' },
    ...cursorFields,
  },
} as const;
