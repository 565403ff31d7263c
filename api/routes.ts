import { DAY_PATTERN, ErrorEnvelope, Health } from '../schemas/common.js';
import {
  ComboAcceptRequest,
  ComboAcceptResponse,
  ComboPosition,
  ComboPositionsPage,
  ComboQuoteRequest,
  ComboQuoteResponse,
  ComboRedeemRequest,
  ComboRedeemResponse,
} from '../schemas/combos.js';
import { StatementR1Page, StatementsPage, StatementUnavailable } from '../schemas/data-statements.js';
import { STATEMENT_GRACE_MS } from '../engine/data/statements.js';
import {
  LeaderboardPage,
  TraderCategories,
  TraderMetrics,
  TraderPnl,
  TraderPositionsPage,
  TraderSummary,
} from '../schemas/data-portfolio.js';
import {
  CopytradeDeleted,
  CopytradeHistory,
  CopytradeList,
  CopytradePatch,
  CopytradePnl,
  CopytradeRequest,
  CopytradeReset,
  CopytradeResponse,
  CopytradeSimulation,
  CopytradeStatusRequest,
  CopytradeView,
} from '../schemas/copytrade.js';
import {
  BalancesResponse,
  BookResponse,
  MarketsPage,
  PositionsPage,
  SimResolveRequest,
  SimResolveResponse,
} from '../schemas/market.js';
import {
  OpenOrdersPage,
  ORDER_BATCH_MAX,
  OrderBatchRequest,
  OrderBatchResponse,
  OrderRequest,
  OrderResponse,
  OrderView,
} from '../schemas/orders.js';
import { STRATEGY_STATUSES, STRATEGY_TYPES, StrategiesPage, StrategyRecord } from '../schemas/strategies.js';
import {
  AccountResponse,
  ApiKeyCreated,
  ApiKeyCreateRequest,
  ApiKeyRevoked,
  UserCreateRequest,
  UserResponse,
} from '../schemas/users.js';
import {
  ActivityPage,
  BATCH_CANCEL_MAX,
  BatchCancelRequest,
  BatchCancelResponse,
  RedeemRequest,
  SplitMergeRequest,
  WalletOpResponse,
  WithdrawableBalances,
  WithdrawalsPage,
  WithdrawalView,
  WithdrawRequest,
} from '../schemas/wallet.js';
import { TradesPage, TraderTradesPage } from '../schemas/data.js';
import { SCAN_FACTOR } from '../engine/data/tape.js';
import { LIQUIDITY_PROVIDER_ADDRESS } from '../engine/data/records.js';
import type { RouteSpec } from './context.js';
import { listTrades, listTraderTrades, TRADES_DEFAULT_LIMIT } from './handlers/data-tape.js';
import { health } from './handlers/health.js';
import { openapiDocument } from './handlers/openapi.js';
import { account, mintUserKey, provisionUser, revokeKey } from './handlers/users.js';
import { activity, cancelOrder, cancelStrategy, listStrategies, openOrders, placeOrder } from './handlers/orders.js';
import { balances, book, markets, positions } from './handlers/market.js';
import { cancelAll, cancelBatch, getOrder, placeBatch } from './handlers/order-batch.js';
import {
  getWithdrawal,
  listWithdrawals,
  mergePositions,
  redeemPositions,
  splitPosition,
  withdraw,
  withdrawableBalances,
} from './handlers/wallet.js';
import { resolveMarket } from './handlers/sim-control.js';
import {
  leaderboard,
  traderCategories,
  traderMetrics,
  traderPnl,
  traderPositions,
  traderSummary,
} from './handlers/data-portfolio.js';
import { R1_LIMIT_MAX, traderStatementR1, traderStatements } from './handlers/data-statements.js';
import { comboAccept, comboPositions, comboQuote, comboRedeem, getCombo } from './handlers/combos.js';
import {
  copytradeHistory,
  copytradePnl,
  copytradeSimulation,
  createCopytrade,
  deleteCopytrade,
  getCopytrade,
  listCopytrades,
  patchCopytrade,
  resetCopytradeSimulation,
  setCopytradeStatus,
} from './handlers/copytrade.js';

export { ErrorEnvelope };

const V2 = '/v2/trade';

/** The reference product's `venue` query parameter: `polymarket`, the default and only venue (others → 400). */
const VENUE_QUERY = { enum: ['polymarket'], description: 'Venue; `polymarket` (the default and only venue).' };

/** `limit` (1…max) and `offset` query parameters of an offset/limit list (spec 4.7, part 8). */
function paged(max: number, extra: Record<string, object> = {}): NonNullable<RouteSpec['query']> {
  return {
    properties: {
      limit: {
        type: 'integer',
        minimum: 1,
        maximum: max,
        description: `Page size, 1 to ${max} (default ${Math.min(100, max)}); above ${max} → 400.`,
      },
      offset: { type: 'integer', minimum: 0, maximum: 1_000_000_000, description: 'Items to skip (default 0).' },
      ...extra,
    },
  };
}
/**
 * GET /v2/trade/markets `token_id`: only the markets of these outcome tokens (one id or up to 100, comma-separated).
 */
const MARKET_TOKEN_FILTER = {
  type: 'string',
  pattern: '^[0-9]{1,100}(,[0-9]{1,100}){0,99}$',
  description:
    'Only the markets listing these outcome tokens: one token id, or up to 100 separated by commas (a ' +
    'market once, in the order of its first token; unknown ids match nothing).',
};
const ADDRESS_PATH = {
  address: { type: 'string', pattern: '^0x[0-9a-fA-F]{40}$', description: 'Trader wallet address.' },
};
/** What PnL means over a window (the leaderboard's and the trader reads' descriptions). */
const PNL_MEANING =
  'PnL over a finite window (`1d`, `7d`, `30d`: the current hour and the 24, 168 or 720 whole hours before ' +
  'it, by block time) is the change of marked equity net of flows: the trading cash of the window (fills net ' +
  'of fees, splits, merges, redeems) + positions held now at the current marks − positions held at the ' +
  "window's start at the marks then (the tape's last trade before it); deposits and withdrawals are flows, " +
  'not PnL. Over `all` it is the realized PnL net of fees: Σ over dispositions (sells, merges, redeems, FIFO) ' +
  "of proceeds − cost basis (`realized_pnl`, the statements' definition), − the fees of all fills. Shares " +
  'disposed of beyond the recorded lots (the history starts after they were acquired) have an unknown cost ' +
  'basis, taken as their proceeds: they realize no gain or loss, and count in volume. Dollars, decimal strings.';
/** `window` of the trader reads (default `all`). */
const TRADER_WINDOW_QUERY = {
  properties: {
    window: {
      enum: ['1d', '7d', '30d', 'all'],
      description: 'Window of the figures (default `all`); another value → 400 `invalid window`.',
    },
  },
  errorStrings: { window: 'invalid window' },
};
/** What every public read of one trader shares (GET, the address in the path, `trade.read`, no user). */
const TRADER_READ = {
  method: 'get',
  params: ADDRESS_PATH,
  scope: 'trade.read',
  user: 'none',
  tag: 'trade.read',
} as const satisfies Partial<RouteSpec>;
const COMPOUND_CURSOR = {
  cursor_ts: {
    type: 'integer',
    minimum: 0,
    maximum: 1e12,
    description:
      'next_cursor of the previous page: with next_cursor_log_idx, the page starts strictly after the row at ' +
      '(block_timestamp, log_index) = (cursor_ts, next_cursor_log_idx) in chain order, i.e. block_timestamp < ' +
      'cursor_ts, or block_timestamp = cursor_ts and log_index < next_cursor_log_idx. Send both or neither (400).',
  },
  next_cursor_log_idx: {
    type: 'integer',
    minimum: 0,
    maximum: 1e9,
    description: 'next_cursor_log_idx of the previous page (the tie-breaker within a block); send with cursor_ts.',
  },
};
/** Query of the trade reads (GET /v2/trade/trades, /traders/{address}/trades). */
const TAPE_QUERY = {
  limit: {
    type: 'integer',
    minimum: 1,
    maximum: 500,
    description: `Page size, 1 to 500 (default ${TRADES_DEFAULT_LIMIT}); above 500 → 400.`,
  },
  ...COMPOUND_CURSOR,
  market_id: {
    type: 'string',
    pattern: '^0x[0-9a-fA-F]{64}$',
    description: 'Only trades of this market (condition id).',
  },
  token_id: { type: 'string', pattern: '^[0-9]{1,100}$', description: 'Only trades of this outcome token.' },
  side: { enum: ['BUY', 'SELL'], description: 'Only trades of this side.' },
};
const TAKER_ONLY = {
  type: 'boolean',
  description: 'true: only the fills where the trader was the taker (default false: both roles).',
} as const;
/** How the trade reads page (spec 2.9, 4.7), for their OpenAPI descriptions. */
const TAPE_PAGING =
  'Chain order is (block_timestamp, log_index), newest first. Page by the compound cursor: `next_cursor` ' +
  "(a block_timestamp; null at the end) and `next_cursor_log_idx` of a page are the next request's `cursor_ts` " +
  'and `next_cursor_log_idx` (one without the other → 400); trades recorded meanwhile are newer than ' +
  'every row already read, so paging neither skips nor repeats a row. A page holds `limit` rows (one more ' +
  'when its last trade has the trader on both sides: two rows of one position are never split). The filters ' +
  "the index does not serve (`side`, `taker_only`, and `market_id`/`token_id` on a trader's trades or with " +
  `\`address\`) are applied to a scan of at most ${SCAN_FACTOR} × limit rows: such a page may hold fewer rows, ` +
  'even none, while next_cursor is not null; ' +
  'page on until it is null. Numbers are decimal strings, prices decimal probability. An unknown query ' +
  'parameter → 400 naming it.';

/** What every batch cancel and cancel-all answers (schemas/wallet.ts BatchCancelResponse). */
const CANCEL_SHAPE =
  '200 `{cancelled, not_cancelled, count, results, counts}`: `cancelled` the ids this request canceled, ' +
  '`not_cancelled` `{order_id, reason}` for the others, `count` how many were canceled; ' +
  '`results` one outcome per order (`canceled`, `already_done`: already final, or filled or ' +
  'expired before the cancel took effect; `not_found`: unknown, malformed, a strategy `record_id`, ' +
  "another user's order) with the order, and `counts` per outcome. ";

/**
 * POST /v2/trade/orders/cancel-batch and its alias POST /v2/trade/orders/cancel (the path and summary are each row's).
 */
const CANCEL_BATCH = {
  method: 'post',
  scope: 'trade.cancel',
  user: 'required',
  tag: 'trade.cancel',
  description:
    `Cancels up to ${BATCH_CANCEL_MAX} orders, each exactly as DELETE /v2/trade/orders/{order_id} would ` +
    `(a strategy's child order included: its strategy reacts as to that cancel). ` +
    CANCEL_SHAPE +
    'Orders in the order sent, a repeated id once; one id never fails the batch. ' +
    `400 when the body is not \`{order_ids: [1 to ${BATCH_CANCEL_MAX} strings], venue?}\`. A retry with ` +
    `the same Idempotency-Key returns the first response and cancels nothing again. ` +
    'POST /v2/trade/orders/cancel-batch and POST /v2/trade/orders/cancel are the same endpoint.',
  body: BatchCancelRequest,
  example: { order_ids: ['ord_5f1c2d9e-0b7a-4c1e-9d3f-2a6b8c4e1f00'] },
  responses: { 200: BatchCancelResponse },
  errors: [404, 503],
  handler: cancelBatch,
  v1: true,
} as const satisfies Omit<RouteSpec, 'path' | 'summary'>;

/**
 * POST /v2/trade/orders/cancel-all and its alias DELETE /v2/trade/orders (the method, path and summary are each row's).
 */
const CANCEL_ALL = {
  scope: 'trade.cancel',
  user: 'required',
  tag: 'trade.cancel',
  description:
    "Cancels every open order of the bound user (the rows of GET /v2/trade/orders/open, strategies' child " +
    'orders included: each strategy reacts as to DELETE order; strategies themselves are not canceled), ' +
    'narrowed by `symbol` (outcome token id) and/or `condition_id` (market: both ' +
    'its tokens); both given = orders matching both. No body. ' +
    CANCEL_SHAPE +
    'Orders newest first; none found: empty lists, `count` 0. No limit on the number ' +
    'of orders. Orders placed while it runs are not included. ' +
    'POST /v2/trade/orders/cancel-all and DELETE /v2/trade/orders are the same endpoint; `cancel-all` is ' +
    'never read as an order id (GET or DELETE /v2/trade/orders/cancel-all: 405). ' +
    '`DELETE /v2/trade/orders/` (trailing slash) is a 404, never cancel-all. Any other query parameter ' +
    '(a misspelt filter) is a 400 that cancels nothing. A retry with the same Idempotency-Key (and the ' +
    'same query) returns the first response and cancels nothing again.',
  query: {
    properties: {
      symbol: { type: 'string', pattern: '^[0-9]{1,100}$', description: 'Only orders on this outcome token.' },
      condition_id: {
        type: 'string',
        pattern: '^0x[0-9a-fA-F]{64}$',
        description: 'Only orders on this market (condition).',
      },
      venue: VENUE_QUERY,
    },
  },
  responses: { 200: BatchCancelResponse },
  errors: [404, 503],
  handler: cancelAll,
  v1: true,
} as const satisfies Omit<RouteSpec, 'method' | 'path' | 'summary'>;

/**
 * Every endpoint of the v2 spec (part 4) plus the documented extras. Rows without a handler are
 * in the spec but not built yet: after authentication, scope, idempotency-key and input checks
 * they answer 501 with the error envelope, never a fake success. The table drives mounting, the
 * OpenAPI document (api/handlers/openapi.ts) and the generated auth-matrix tests.
 */
export const ROUTES: RouteSpec[] = [
  {
    method: 'get',
    path: '/healthz',
    scope: null,
    user: 'none',
    tag: 'trade.health',
    summary: 'Liveness and readiness probe (public): 200 ok, 503 degraded naming the part at fault',
    responses: { 200: Health, 503: Health },
    handler: health,
  },
  {
    method: 'get',
    path: `${V2}/openapi.json`,
    scope: null,
    user: 'none',
    tag: 'trade.health',
    summary: 'This OpenAPI 3.1 document (public)',
    responses: { 200: { type: 'object', description: 'OpenAPI 3.1.0 document.' } },
    handler: openapiDocument,
    v1: true,
  },

  // Users and keys (spec 4.3, part 5)
  {
    method: 'post',
    path: `${V2}/users`,
    scope: 'trade.users',
    user: 'none',
    masterOnly: true,
    tag: 'trade.users',
    summary: 'Provision a partner user (idempotent on partner_user_id: 201, then 200)',
    body: UserCreateRequest,
    example: { partner_user_id: 'alice', email: 'alice@example.com' },
    responses: { 200: UserResponse, 201: UserResponse },
    handler: provisionUser,
    v1: true,
  },
  {
    method: 'post',
    path: `${V2}/users/:partner_user_id/api-keys`,
    scope: 'trade.users',
    user: 'none',
    masterOnly: true,
    tag: 'trade.users',
    summary: 'Mint a per-user API key (token shown once)',
    body: ApiKeyCreateRequest,
    example: { scopes: ['trade.read', 'trade.execute', 'trade.cancel'] },
    responses: { 201: ApiKeyCreated },
    errors: [404],
    handler: mintUserKey,
  },
  {
    method: 'delete',
    path: `${V2}/api-keys/:key_id`,
    scope: 'trade.users',
    user: 'none',
    masterOnly: true,
    tag: 'trade.users',
    summary: 'Revoke an API key',
    responses: { 200: ApiKeyRevoked },
    errors: [404, 409],
    handler: revokeKey,
  },
  {
    method: 'get',
    path: `${V2}/account`,
    scope: 'trade.read',
    user: 'optional',
    tag: 'trade.read',
    summary: 'The calling key, its partner and bound user',
    responses: { 200: AccountResponse },
    errors: [404],
    handler: account,
    v1: true,
  },

  // Orders and reads (spec 4.1, 4.6)
  {
    method: 'post',
    path: `${V2}/order`,
    scope: 'trade.execute',
    user: 'required',
    tag: 'trade.execute',
    summary: 'Place an order or start a managed strategy',
    description:
      'Body: spec 2.2 with the per-type rules of 2.2.2. 400: price out of range (any price field above 1 gets ' +
      'the cents message of spec 2.1 as `error` and `message`), missing field, tick, minimum size, ' +
      'an `execution` field the type does not use (named; TWAP `clip_size` / `randomize_pct` / ' +
      '`price_tolerance_pct` are ignored with a `warnings` entry instead), `expiration` in the past or more than ' +
      '365 days ahead, a TWAP over 7 days or 1000 slices or whose slices would be under ' +
      '0.01 shares (passive: under the market minimum). ' +
      '422: `INSUFFICIENT_BALANCE`, `Not enough shares to place this sell — holding <X>`, ' +
      '`order crosses book` (ICEBERG), `NO_LIQUIDITY`, `MARKET_CLOSED` (the market closed or resolved), ' +
      '`WOULD_TRIGGER_IMMEDIATELY` (a STOP_LOSS or TRAILING_STOP whose level the best bid already reached; the ' +
      "best bid is the book's, the user's own resting orders included). A refused request changes nothing.",
    body: OrderRequest,
    example: {
      symbol: '104173557214744537570424345347209544585775842950109756851652855913015295701992',
      side: 'buy',
      type: 'LIMIT',
      price: '0.52',
      size: '10',
      time_in_force: 'GTC',
    },
    responses: { 200: OrderResponse },
    errors: [404, 422, 503],
    handler: placeOrder,
  },
  {
    method: 'post',
    path: `${V2}/order/batch`,
    scope: 'trade.execute',
    user: 'required',
    tag: 'trade.execute',
    summary: `Place a ladder of 1 to ${ORDER_BATCH_MAX} limit orders, all or none`,
    description:
      `1 to ${ORDER_BATCH_MAX} GTC LIMIT orders on one outcome token (\`symbol\`) and ` +
      `\`side\`, one per rung \`{price, size}\`, each at its own price. ` +
      'Every rung is checked as a LIMIT order of POST /v2/trade/order, and the wallet must cover all of them ' +
      'together (a buy ladder its notional at the limit prices, a sell ladder its shares): ' +
      'a refusal changes nothing and its message names the rung (`rungs[2]: …`; 400, 422 ' +
      '`INSUFFICIENT_BALANCE`, `Not enough shares to place this sell — holding <X>`, `MARKET_CLOSED`); a ' +
      'repeated price is a 400. ' +
      'Then the rungs are placed in order; should the venue refuse one, the ones placed before it are ' +
      'canceled and the answer is that refusal naming the rung (422): never a partial ladder. ' +
      'A rung that crosses the book trades at once like any LIMIT order (what ' +
      'it traded stays traded if the ladder is canceled). ' +
      "200 `{orders, count}`: each rung's order, in the rungs' order. A retry with the same Idempotency-Key " +
      'returns the first answer; a retry after a crash finds the rungs already placed.',
    body: OrderBatchRequest,
    example: {
      symbol: '104173557214744537570424345347209544585775842950109756851652855913015295701992',
      side: 'buy',
      rungs: [
        { price: '0.50', size: '10' },
        { price: '0.49', size: '10' },
      ],
    },
    responses: { 200: OrderBatchResponse },
    errors: [404, 409, 422, 503],
    handler: placeBatch,
  },
  {
    method: 'get',
    path: `${V2}/orders/open`,
    scope: 'trade.read',
    user: 'required',
    tag: 'trade.read',
    summary: 'Open orders (working CLOB orders, newest first)',
    query: paged(500, {
      token_id: { type: 'string', pattern: '^[0-9]{1,100}$', description: 'Only orders on this outcome token.' },
      venue: VENUE_QUERY,
    }),
    responses: { 200: OpenOrdersPage },
    errors: [404],
    handler: openOrders,
    v1: true,
  },
  {
    method: 'delete',
    path: `${V2}/orders/:order_id`,
    scope: 'trade.cancel',
    user: 'required',
    tag: 'trade.cancel',
    summary: 'Cancel one order',
    query: { properties: { venue: VENUE_QUERY } },
    responses: { 200: OrderView },
    errors: [404, 409, 503],
    handler: cancelOrder,
    v1: true,
  },
  {
    method: 'get',
    path: `${V2}/orders/:order_id`,
    scope: 'trade.read',
    user: 'required',
    tag: 'trade.read',
    summary: 'One order in any state',
    description:
      'One CLOB order of the bound user by `order_id`, whatever its state: working (SUBMITTED, OPEN, ' +
      'PARTIALLY_FILLED, PENDING_CANCEL) or finished (FILLED, CANCELED, EXPIRED, REJECTED), ' +
      "strategies' child orders included; the same view as the rows of GET /v2/trade/orders/open. 404 " +
      "`not_found` for an unknown id, a strategy `record_id` (GET /v2/trade/strategies) or another user's order.",
    responses: { 200: OrderView },
    errors: [404],
    handler: getOrder,
  },
  {
    ...CANCEL_BATCH,
    path: `${V2}/orders/cancel-batch`,
    summary: `Cancel a batch of orders (1 to ${BATCH_CANCEL_MAX})`,
  },
  {
    ...CANCEL_BATCH,
    path: `${V2}/orders/cancel`,
    summary: `Cancel a batch of orders (1 to ${BATCH_CANCEL_MAX}; alias of POST /v2/trade/orders/cancel-batch)`,
  },
  {
    ...CANCEL_ALL,
    method: 'post',
    path: `${V2}/orders/cancel-all`,
    summary: 'Cancel all open orders (optionally of one token or market)',
  },
  {
    ...CANCEL_ALL,
    method: 'delete',
    path: `${V2}/orders`,
    summary: 'Cancel all open orders (optionally of one token or market; alias of POST /v2/trade/orders/cancel-all)',
  },
  {
    method: 'get',
    path: `${V2}/strategies`,
    scope: 'trade.read',
    user: 'required',
    tag: 'trade.read',
    summary: 'Managed strategies (newest first)',
    query: paged(500, { status: { enum: STRATEGY_STATUSES }, type: { enum: STRATEGY_TYPES } }),
    responses: { 200: StrategiesPage },
    errors: [404],
    handler: listStrategies,
    v1: true,
  },
  {
    method: 'delete',
    path: `${V2}/strategies/:record_id`,
    scope: 'trade.cancel',
    user: 'required',
    tag: 'trade.cancel',
    summary: 'Cancel an untriggered strategy (409 once executing: cancel its order instead)',
    responses: { 200: StrategyRecord },
    errors: [404, 409, 503],
    handler: cancelStrategy,
    v1: true,
  },
  {
    method: 'get',
    path: `${V2}/balances`,
    scope: 'trade.read',
    user: 'required',
    tag: 'trade.read',
    summary: 'pUSD balance and reservations',
    query: { properties: { venue: VENUE_QUERY } },
    responses: { 200: BalancesResponse },
    errors: [404],
    handler: balances,
    v1: true,
  },
  {
    method: 'get',
    path: `${V2}/balances/withdrawable`,
    scope: 'trade.read',
    user: 'required',
    tag: 'trade.read',
    summary: 'Withdrawable ERC20 balances',
    description:
      'Spec 2.8: the pUSD not reserved by open buys (a pending withdrawal has already left it); zero ' +
      'balances are dropped. `token` is what POST /withdraw takes: pUSD of the simulated venue. ' +
      'Outcome tokens are ERC1155 positions (GET /positions), not listed.',
    responses: { 200: WithdrawableBalances },
    errors: [404],
    handler: withdrawableBalances,
    v1: true,
  },
  {
    method: 'get',
    path: `${V2}/positions`,
    scope: 'trade.read',
    user: 'required',
    tag: 'trade.read',
    summary: 'Share positions',
    query: paged(500),
    responses: { 200: PositionsPage },
    errors: [404],
    handler: positions,
    v1: true,
  },
  {
    method: 'get',
    path: `${V2}/activity`,
    scope: 'trade.read',
    user: 'required',
    tag: 'trade.read',
    summary: 'Account activity (opaque cursor)',
    query: {
      properties: {
        limit: { type: 'integer', minimum: 1, maximum: 200, description: 'Page size, 1 to 200.' },
        cursor: { type: 'string', maxLength: 512, description: 'next_cursor of the previous page; opaque.' },
      },
    },
    responses: { 200: ActivityPage },
    errors: [404],
    handler: activity,
    v1: true,
  },
  {
    method: 'post',
    path: `${V2}/positions/redeem`,
    scope: 'trade.execute',
    user: 'required',
    tag: 'trade.execute',
    summary: 'Redeem a resolved position',
    description:
      "The reference product's body `{condition_id, outcome_index, neg_risk_market, amount?}`: burns the shares " +
      "of outcome `outcome_index` (index in the market's `tokens`; `amount` of them, or all) and pays $1 per " +
      'winning share, $0 per losing share, in pUSD (`payout_usd`, and `payout_base_units` in 6-decimal base ' +
      'units). Without `outcome_index` (only `condition_id` is required here) every outcome the user holds is ' +
      'redeemed. `neg_risk_market`, optional here, must match the market (GET /markets `neg_risk`). Neg-risk ' +
      'markets too (the NegRiskAdapter on chain; same effect). 400 an `outcome_index` the market does not have, ' +
      'or `amount` without `outcome_index`; 404 unknown market; 409 `MARKET_NOT_RESOLVED` before resolution; 422 ' +
      '`NEG_RISK_MISMATCH`, `NOTHING_TO_REDEEM` (no shares), `Not enough shares to redeem …` (`amount` above the ' +
      'shares held), `SHARES_RESERVED` (open sells reserve shares: cancel them first). A refusal changes ' +
      'nothing. Activity row `REDEEM`.',
    body: RedeemRequest,
    example: { condition_id: `0x${'ab'.repeat(32)}`, outcome_index: 0, neg_risk_market: false },
    responses: { 200: WalletOpResponse },
    errors: [404, 409, 422, 503],
    handler: redeemPositions,
  },
  {
    method: 'post',
    path: `${V2}/positions/split`,
    scope: 'trade.execute',
    user: 'required',
    tag: 'trade.execute',
    summary: 'Split pUSD into outcome tokens',
    description:
      '`amount` dollars of pUSD (at most 6 decimals) become `amount` shares of each outcome token of the market ' +
      "(cost basis: the amount shared by the outcomes' marks: their mids, else their last captured trades, " +
      "equally without; 1 and 0 once resolved). Neg-risk markets too: `neg_risk_market` (the reference product's " +
      'field; optional here) must match the market when sent. 404 unknown market; 422 `NEG_RISK_MISMATCH`, ' +
      '`INSUFFICIENT_BALANCE` (free pUSD, not reserved by open buys). Activity row `SPLIT`.',
    body: SplitMergeRequest,
    example: { condition_id: `0x${'ab'.repeat(32)}`, amount: '100.00', neg_risk_market: false },
    responses: { 200: WalletOpResponse },
    errors: [404, 422, 503],
    handler: splitPosition,
  },
  {
    method: 'post',
    path: `${V2}/positions/merge`,
    scope: 'trade.execute',
    user: 'required',
    tag: 'trade.execute',
    summary: 'Merge outcome tokens into pUSD',
    description:
      '`amount` shares of each outcome token of the market become `amount` dollars of pUSD. `neg_risk_market` ' +
      '(optional here) must match the market when sent. 404 unknown market; 422 `NEG_RISK_MISMATCH`, ' +
      '`Not enough shares to merge <amount> — holding <X> of outcome token <id>' +
      '[, of which <Y> reserved by open sells]` (shares reserved by open sells cannot be merged). ' +
      'Activity row `MERGE`.',
    body: SplitMergeRequest,
    example: { condition_id: `0x${'ab'.repeat(32)}`, amount: '100', neg_risk_market: false },
    responses: { 200: WalletOpResponse },
    errors: [404, 422, 503],
    handler: mergePositions,
  },
  {
    method: 'post',
    path: `${V2}/withdraw`,
    scope: 'trade.withdraw',
    user: 'required',
    tag: 'trade.withdraw',
    summary: 'Withdraw to an external address',
    description:
      'Body: `to` (an address; a mixed-case one must carry a valid EIP-55 checksum; `to_address` is its alias: ' +
      'one of them, or both naming the same address, else 400), `amount` (dollars, at most 6 decimals), `token` ' +
      '(optional: a token address of GET /balances/withdrawable; pUSD when omitted). The amount leaves the ' +
      'available balance at once; 200 with the withdrawal `PENDING` (`state` `STATE_PENDING`; `to` and ' +
      '`to_address` both carry the destination), which confirms after the simulated block delay ' +
      '(SIM_BLOCK_DELAY_MS) → `CONFIRMED`, or `FAILED` with the amount returned when the transfer reverts (the ' +
      'simulated chain reverts a transfer to the zero address). Read it at GET /withdrawals/{withdrawal_id}. 400 ' +
      'bad address, token or amount, or a destination that is the token contract itself (tokens sent there are ' +
      'lost); 422 `INSUFFICIENT_BALANCE`. Activity row `WITHDRAWAL`. Scope `trade.withdraw` only ' +
      '(`trade.execute` is not enough).',
    body: WithdrawRequest,
    example: { to: '0x00000000000000000000000000000000000000aa', amount: '250.00' },
    responses: { 200: WithdrawalView },
    errors: [404, 422, 503],
    handler: withdraw,
  },
  {
    method: 'get',
    path: `${V2}/withdrawals`,
    scope: 'trade.read',
    user: 'required',
    tag: 'trade.read',
    summary: "The user's withdrawals, newest first",
    query: paged(500, { status: { enum: ['PENDING', 'CONFIRMED', 'FAILED'] } }),
    responses: { 200: WithdrawalsPage },
    errors: [404],
    handler: listWithdrawals,
  },
  {
    method: 'get',
    path: `${V2}/withdrawals/:withdrawal_id`,
    scope: 'trade.read',
    user: 'required',
    tag: 'trade.read',
    summary: "One withdrawal (404 when not the user's)",
    responses: { 200: WithdrawalView },
    errors: [404],
    handler: getWithdrawal,
  },

  // Combos (spec 4.2)
  {
    method: 'post',
    path: `${V2}/combo/quote`,
    scope: 'trade.combos',
    user: 'required',
    tag: 'trade.combos',
    summary: 'Request a combo quote (valid about 8.5 s)',
    description:
      "A simulated maker prices the blended YES share from each leg's best ask: the product over " +
      "correlation groups (the capture's up/down markets of one window are one group, priced halfway " +
      'between fully correlated, the lowest ask, and independent, the product; every other leg alone), ' +
      'plus a margin of 2% a leg, rounded up to 0.1 cent and clamped to [1, 99] cents; ' +
      '`independent_price_cents` (the plain product) and `margin_cents` show the margin. Fee: 1% of the ' +
      'notional. `taker_shares` = notional / price; `expires_at` = now + 8.5 s. Priced afresh on every ' +
      'call. 400 a leg repeated, a NO (second) outcome, two legs of one market (the leg named); 404 an ' +
      'unknown token; 422 `MARKET_CLOSED` (a closed or resolved market), `NO_LIQUIDITY` (a leg without ' +
      'an ask), `INSUFFICIENT_BALANCE` (free pUSD below notional + fee; message: dollars needed, largest ' +
      'affordable notional).',
    body: ComboQuoteRequest,
    example: { leg_position_ids: ['pos_1', 'pos_2'], notional_usd: 10, side: 'BUY' },
    responses: { 200: ComboQuoteResponse },
    errors: [404, 422],
    handler: comboQuote,
  },
  {
    method: 'post',
    path: `${V2}/combo/accept`,
    scope: 'trade.combos',
    user: 'required',
    tag: 'trade.combos',
    summary: 'Accept a combo quote',
    description:
      'Before `expires_at`: notional + fee leave the wallet and the combo shares enter it in one venue ' +
      'operation; 200 `EXECUTED` with the simulated transaction hash. After it: 410 `QUOTE_EXPIRED`, ' +
      'nothing changes (decided by the time of the accept, not by any timer). The same quote accepted ' +
      'again under another Idempotency-Key: 409; the same key replays the answer. 404 an unknown combo or ' +
      "a quote_id that is not the combo's; 422 `INSUFFICIENT_BALANCE`, `MARKET_CLOSED` (a leg's market " +
      'closed meanwhile). Lost answer: read GET /combo/{combo_order_id}.',
    body: ComboAcceptRequest,
    example: { combo_order_id: 'combo_1', quote_id: 'quote_1' },
    responses: { 200: ComboAcceptResponse },
    errors: [404, 409, 410, 422],
    handler: comboAccept,
  },
  {
    method: 'post',
    path: `${V2}/combo/redeem`,
    scope: 'trade.combos',
    user: 'required',
    tag: 'trade.combos',
    summary: 'Redeem a winning combo',
    description:
      'Exactly one of `combo_order_id` and `combo_position_id` (both or neither: 400). A `RESOLVED_WIN` ' +
      'combo pays its shares × $1 in pUSD at once (200 `REDEEMED`). Refused, changing nothing: 409 ' +
      '`COMBO_NOT_RESOLVED` before every leg resolved, 422 `COMBO_LOST` after a leg lost, 409 `conflict` ' +
      'once redeemed (a second redeem never pays twice) or for a combo never executed; 404 unknown.',
    body: ComboRedeemRequest,
    example: { combo_order_id: 'combo_1' },
    responses: { 200: ComboRedeemResponse },
    errors: [404, 409, 422],
    handler: comboRedeem,
  },
  {
    method: 'get',
    path: `${V2}/combo/positions`,
    scope: 'trade.combos',
    user: 'required',
    tag: 'trade.combos',
    summary: 'Combo positions',
    description:
      'Executed combos, newest first (REDEEMED ones too unless `status` filters), with their legs (token, ' +
      'question, outcome, leg status, current price), legs total / resolved / pending, entry price, cost, ' +
      'current value, `redeemable` and the payout once redeemed.',
    query: paged(500, { status: { enum: ['OPEN', 'PARTIAL', 'RESOLVED_WIN', 'RESOLVED_LOSS'] } }),
    responses: { 200: ComboPositionsPage },
    errors: [404],
    handler: comboPositions,
  },
  {
    method: 'get',
    path: `${V2}/combo/:combo_order_id`,
    scope: 'trade.combos',
    user: 'required',
    tag: 'trade.combos',
    summary: 'One combo in any state',
    description: 'The recovery handle after a lost answer: the combo as GET /combo/positions shows it. 404 unknown.',
    responses: { 200: ComboPosition },
    errors: [404],
    handler: getCombo,
  },

  // Copytrade (spec 4.4; the other endpoints as the reference publishes them)
  {
    method: 'post',
    path: `${V2}/copytrade`,
    scope: 'trade.execute',
    user: 'required',
    tag: 'trade.execute',
    summary: 'Subscribe to a leader (409 when one is active)',
    description:
      "200 with the subscription's id and status (the reference's code: the spec shows none). The follower " +
      'is the bound user (per-user key, or master key + X-Partner-User-Id). 409 `conflict` when this user ' +
      'already has an ACTIVE subscription to the leader (a PAUSED or DISABLED one does not count). Copies ' +
      'are child orders of the subscription (`record_id` on the order), each checked by the pre-trade risk ' +
      'rules like every order.',
    body: CopytradeRequest,
    example: {
      leader_address: '0x00000000000000000000000000000000000000bb',
      buy_order_type: 'ALL',
      buy_size_mode: 'PCT_OF_LEADER_TRADE',
      buy_size_value: 50,
      buy_insufficient_usdc_action: 'BUY_MAX',
      sell_order_type: 'ALL',
      sell_size_mode: 'PCT_OF_LEADER_TRADE',
      sell_size_value: 50,
      sell_insufficient_shares_action: 'SELL_MAX',
    },
    responses: { 200: CopytradeResponse },
    errors: [404, 409],
    handler: createCopytrade,
  },
  {
    method: 'get',
    path: `${V2}/copytrade`,
    scope: 'trade.read',
    user: 'required',
    tag: 'trade.read',
    summary: 'Copytrade subscriptions (not deleted), newest first',
    responses: { 200: CopytradeList },
    errors: [404],
    handler: listCopytrades,
  },
  {
    method: 'get',
    path: `${V2}/copytrade/history`,
    scope: 'trade.read',
    user: 'required',
    tag: 'trade.read',
    summary: 'Every copy and every skip (with its reason), newest first',
    query: {
      properties: {
        limit: { type: 'integer', minimum: 1, maximum: 200, description: 'Rows (default 50, at most 200).' },
        copytrade_id: { type: 'string', maxLength: 100, description: "Only this subscription's rows." },
        cursor: { type: 'string', maxLength: 512, description: 'next_cursor of the previous page; opaque.' },
      },
    },
    responses: { 200: CopytradeHistory },
    errors: [404],
    handler: copytradeHistory,
  },
  {
    method: 'get',
    path: `${V2}/copytrade/pnl`,
    scope: 'trade.read',
    user: 'required',
    tag: 'trade.read',
    summary: 'Realized copytrade PnL: 24 h and lifetime, real and simulated (dollars)',
    responses: { 200: CopytradePnl },
    errors: [404],
    handler: copytradePnl,
  },
  {
    method: 'get',
    path: `${V2}/copytrade/simulation`,
    scope: 'trade.read',
    user: 'required',
    tag: 'trade.read',
    summary: "The paper account of the user's simulation subscriptions, marked at the midpoint",
    responses: { 200: CopytradeSimulation },
    errors: [404],
    handler: copytradeSimulation,
  },
  {
    method: 'get',
    path: `${V2}/copytrade/:id`,
    scope: 'trade.read',
    user: 'required',
    tag: 'trade.read',
    summary: 'One subscription with its counters (copies, skips by reason, dollars spent, PnL)',
    responses: { 200: CopytradeView },
    errors: [404],
    handler: getCopytrade,
  },
  {
    method: 'patch',
    path: `${V2}/copytrade/:id`,
    scope: 'trade.execute',
    user: 'required',
    tag: 'trade.execute',
    summary: 'Change settings (not the leader; status has its own endpoint)',
    body: CopytradePatch,
    example: { buy_size_value: 25 },
    responses: { 200: CopytradeView },
    errors: [404],
    handler: patchCopytrade,
  },
  {
    method: 'patch',
    path: `${V2}/copytrade/:id/status`,
    scope: 'trade.execute',
    user: 'required',
    tag: 'trade.execute',
    summary: 'Pause, resume or disable',
    description:
      'ACTIVE, PAUSED or DISABLED; a DISABLED subscription can be re-enabled (the reference pages disagree: ' +
      'this service lets it). While PAUSED or DISABLED every leader fill is skipped and recorded as such. 409 ' +
      'for an ENDED subscription, or when resuming would make a second ACTIVE one to the same leader.',
    body: CopytradeStatusRequest,
    example: { status: 'PAUSED' },
    responses: { 200: CopytradeResponse },
    errors: [404, 409],
    handler: setCopytradeStatus,
  },
  {
    method: 'delete',
    path: `${V2}/copytrade/:id`,
    scope: 'trade.execute',
    user: 'required',
    tag: 'trade.execute',
    summary: 'Soft delete (history and PnL kept)',
    responses: { 200: CopytradeDeleted },
    errors: [404],
    handler: deleteCopytrade,
  },
  {
    method: 'post',
    path: `${V2}/copytrade/:id/simulation/reset`,
    scope: 'trade.execute',
    user: 'required',
    tag: 'trade.execute',
    summary: "Reset a subscription's paper account (its paper history rows deleted)",
    responses: { 200: CopytradeReset },
    errors: [404],
    handler: resetCopytradeSimulation,
  },

  // Market data the spec lacks
  {
    method: 'get',
    path: `${V2}/markets`,
    scope: 'trade.read',
    user: 'none',
    tag: 'trade.read',
    summary: 'Markets of the venue',
    query: paged(500, { token_id: MARKET_TOKEN_FILTER }),
    responses: { 200: MarketsPage },
    handler: markets,
  },
  {
    method: 'get',
    path: `${V2}/book`,
    scope: 'trade.read',
    user: 'none',
    tag: 'trade.read',
    summary: 'Order book of one outcome token',
    description:
      'What can trade against the token, complementary matching included: `bids` are its own bids plus the ' +
      "other outcome's asks at 1 − price (a sell of the other outcome at q merges with a sell of this one at " +
      '1 − q), ' +
      "`asks` its own asks plus the other outcome's bids at 1 − price (a buy of the other at q " +
      'mints full sets with a buy of this one at 1 − q). Levels at the same price are merged ' +
      "(sizes summed), so the two outcomes' books mirror each other.",
    query: {
      properties: {
        token_id: { type: 'string', pattern: '^[0-9]{1,100}$', description: 'Outcome token id.' },
        depth: { type: 'integer', minimum: 1, maximum: 100, description: 'Levels per side (default 20).' },
      },
      required: ['token_id'],
    },
    responses: { 200: BookResponse },
    errors: [404],
    handler: book,
  },

  // Public-data reads (spec 4.6)
  {
    method: 'get',
    path: `${V2}/leaderboard`,
    scope: 'trade.read',
    user: 'none',
    tag: 'trade.read',
    summary: 'Leaderboard: traders ranked by PnL (default) or volume over a window',
    description:
      'Traders with a trade, split, merge or redeem in the window (the liquidity provider excluded), ranked ' +
      'by `mode`: `pnl` (default) or `volume`, descending, with competition ranks (ties share a rank, the ' +
      'next rank skips: 1, 2, 2, 4; tied rows in address order). ' +
      PNL_MEANING +
      ' Volume: Σ notional of the fills in the window (splits, merges and redeems are not volume); `trades`: ' +
      'fills in the window. Served from aggregates kept up to date as records land; marks are re-read at most ' +
      'once a second.',
    query: {
      ...paged(500, {
        window: {
          enum: ['1d', '7d', '30d', 'all'],
          description: 'Ranking window (default `30d`); another value → 400 `invalid window`.',
        },
        mode: { enum: ['pnl', 'volume'], description: 'Rank by `pnl` (default) or by `volume`.' },
      }),
      errorStrings: { window: 'invalid window' },
    },
    responses: { 200: LeaderboardPage },
    handler: leaderboard,
  },
  {
    ...TRADER_READ,
    path: `${V2}/traders/:address/positions`,
    summary: "A trader's positions (FIFO lots, marks, PnL)",
    description:
      'One row per outcome token the trader ever held, in first-acquisition order: shares held, average ' +
      'price and cost of the open FIFO lots (fees expensed, not in the lots), the current mark and value, ' +
      'unrealized and ' +
      'realized PnL, `redeemable` once the market resolved. `status`: `open` (shares held), `closed` (none ' +
      'held) or `all` (default). The address may be sent in any case; the answer is lower-case.',
    query: paged(1000, {
      status: { enum: ['open', 'closed', 'all'], description: 'Which positions (default `all`).' },
    }),
    responses: { 200: TraderPositionsPage },
    handler: traderPositions,
  },
  {
    ...TRADER_READ,
    path: `${V2}/traders/:address`,
    summary: "A trader's summary: PnL, volume, trades, win rate, positions",
    description:
      'Figures over `window` (default `all`): `pnl` as on the leaderboard, realized PnL, fees, volume, fills ' +
      'and win rate; `unrealized_pnl`, `total_pnl` (all-time realized + unrealized) and the position counts ' +
      'are as of now. An address without records answers zeros. ' +
      PNL_MEANING,
    query: TRADER_WINDOW_QUERY,
    responses: { 200: TraderSummary },
    handler: traderSummary,
  },
  {
    ...TRADER_READ,
    path: `${V2}/traders/:address/pnl`,
    summary: "A trader's realized and unrealized PnL, and PnL by window",
    description:
      'All-time realized, unrealized at the current marks, each window (1d, 7d, 30d, all), and the cumulative ' +
      'realized PnL at the end of each UTC day with a disposition (`series`) within `window` (default `30d`): ' +
      'with `pnl_type` `realized` the realized curve only, `unrealized` one point (now: the open positions ' +
      'at the current marks − their cost), `overall` (default) the realized curve with realized + unrealized now ' +
      'as its last point. ' +
      PNL_MEANING,
    query: {
      properties: {
        window: { ...TRADER_WINDOW_QUERY.properties.window, description: 'Window of `series` (default `30d`).' },
        pnl_type: {
          enum: ['realized', 'unrealized', 'overall'],
          description: 'Which curve `series` is (default `overall`).',
        },
      },
      errorStrings: { window: 'invalid window' },
    },
    responses: { 200: TraderPnl },
    handler: traderPnl,
  },
  {
    ...TRADER_READ,
    path: `${V2}/traders/:address/metrics`,
    summary: "A trader's metrics: trades, win rate, volume, average trade",
    description:
      'Over `window` (default `all`): fills, wins and losses (a disposal of one token, by a sell, a merge or ' +
      'a redeem, with a positive or negative gain), win rate, volume, shares traded, average trade ' +
      '(volume / fills) and fees.',
    query: TRADER_WINDOW_QUERY,
    responses: { 200: TraderMetrics },
    handler: traderMetrics,
  },
  {
    ...TRADER_READ,
    path: `${V2}/traders/:address/categories`,
    summary: "A trader's realized PnL and volume by market category",
    description:
      "All time, by volume descending. A market's category is its tag, else the leading word of its event's " +
      'slug (else of its own slug, lower-case), else `other` (`btc-5min-up-or-down-…` → `btc`).',
    query: { properties: {} },
    responses: { 200: TraderCategories },
    handler: traderCategories,
  },
  {
    method: 'get',
    path: `${V2}/traders/:address/trades`,
    params: ADDRESS_PATH,
    scope: 'trade.read',
    user: 'none',
    tag: 'trade.read',
    summary: "A trader's trades, newest first (compound cursor)",
    description:
      "Every fill of the wallet `address` (any case; rows answer it lower-case), in the trader's own terms: " +
      'its token, side, price and fee, and its `role` (maker or taker; a trader on both sides of one trade ' +
      'has two rows). Any public address: one that never traded has an empty page. ' +
      TAPE_PAGING,
    query: { properties: { ...TAPE_QUERY, taker_only: TAKER_ONLY } },
    responses: { 200: TraderTradesPage },
    handler: listTraderTrades,
  },
  {
    method: 'get',
    path: `${V2}/trades`,
    scope: 'trade.read',
    user: 'none',
    tag: 'trade.read',
    summary: 'The market tape: every trade, newest first (compound cursor)',
    description:
      "One row per trade: this service's venue (its users' trades, and those of the liquidity provider under " +
      `its fixed wallet ${LIQUIDITY_PROVIDER_ADDRESS}), the market-data capture's prints (anonymous: \`maker\` ` +
      'and `taker` null) and the loaded real history; `side`, `price` and `fee_usd` are the taker’s. ' +
      TAPE_PAGING,
    query: {
      properties: {
        ...TAPE_QUERY,
        address: {
          type: 'string',
          pattern: '^0x[0-9a-fA-F]{40}$',
          description:
            'Only the trades this wallet (any case) was a party to, as maker or taker (the tape rows of ' +
            'GET /v2/trade/traders/{address}/trades).',
        },
        taker_only: { ...TAKER_ONLY, description: 'With address: true keeps the trades that wallet took.' },
      },
    },
    responses: { 200: TradesPage },
    handler: listTrades,
  },
  {
    method: 'get',
    path: `${V2}/traders/:address/statements`,
    params: ADDRESS_PATH,
    scope: 'trade.read',
    user: 'none',
    tag: 'trade.read',
    summary: "A trader's daily statements, with their R1 rows",
    description:
      'One statement per closed UTC day on which the trader has a record, generated by a scheduled job ' +
      `about ${STATEMENT_GRACE_MS / 1000} s after the day closes (the days the service was down for are caught ` +
      'up at start). Newest first (offset/limit); each carries its R1 rows from `r1_offset`, at most `r1_limit`, ' +
      'and `has_more_r1`. With `date` only that day: a day without records of the trader carries its previous ' +
      'close over (`has_records` false); 404 when the trader has no statement on or before it; 503 ' +
      '`{available: false, error, message, date, retry_after}` with `Retry-After` (seconds until the job is ' +
      'due) while that day is not generated (today, or the job has not run yet). What the figures mean and ' +
      'the identity they keep: the `Statement` schema.',
    query: paged(500, {
      date: {
        type: 'string',
        pattern: DAY_PATTERN,
        description: 'Only the statement of this UTC day (YYYY-MM-DD).',
      },
      r1_limit: {
        type: 'integer',
        minimum: 1,
        maximum: R1_LIMIT_MAX,
        description: `R1 rows per statement, 1 to ${R1_LIMIT_MAX} (default 500); above → 400.`,
      },
      r1_offset: { type: 'integer', minimum: 0, description: 'R1 rows to skip in each statement (default 0).' },
    }),
    responses: { 200: StatementsPage, 503: StatementUnavailable },
    errors: [404],
    handler: traderStatements,
  },
  {
    method: 'get',
    path: `${V2}/traders/:address/statements/r1`,
    params: ADDRESS_PATH,
    scope: 'trade.read',
    user: 'none',
    tag: 'trade.read',
    summary: "A trader's R1 rows (dispositions)",
    description:
      'The R1 rows of the statement of `date`, or of every statement (oldest first) without it, in chain ' +
      'order: what was acquired and disposed of, when, in which transactions, proceeds, cost basis (FIFO) and ' +
      "gain or loss. A statement's rows add up to its `realized_pnl`. `r1_limit` (1 to " +
      `${R1_LIMIT_MAX}, default 500; above → 400) and \`r1_offset\`; \`limit\` and \`offset\` are accepted as ` +
      'the same (both names with different values → 400). 503 as for the statements while `date` is not ' +
      'generated.',
    query: {
      properties: {
        date: {
          type: 'string',
          pattern: DAY_PATTERN,
          description: 'Only the rows of the statement of this UTC day (YYYY-MM-DD).',
        },
        r1_limit: {
          type: 'integer',
          minimum: 1,
          maximum: R1_LIMIT_MAX,
          description: `Rows per page, 1 to ${R1_LIMIT_MAX} (default 500); above → 400.`,
        },
        r1_offset: { type: 'integer', minimum: 0, description: 'Rows to skip (default 0).' },
        limit: { type: 'integer', minimum: 1, maximum: R1_LIMIT_MAX, description: 'Same as `r1_limit`.' },
        offset: { type: 'integer', minimum: 0, description: 'Same as `r1_offset`.' },
      },
    },
    responses: { 200: StatementR1Page, 503: StatementUnavailable },
    handler: traderStatementR1,
  },
];

/**
 * Controls of the simulated venue: not part of the partner API and not in the OpenAPI
 * document. Mounted (api/app.ts) only when `SIM_CONTROL=on` and the venue is the simulated one;
 * otherwise their paths answer 404. Master key only: a partner user's key never reaches them.
 * This is how tests and demos resolve a market:
 * `POST /v2/sim/markets/{condition_id}/resolve {"winning_token_id": "<token id>"}`.
 */
export const SIM_ROUTES: RouteSpec[] = [
  {
    method: 'post',
    path: '/v2/sim/markets/:condition_id/resolve',
    params: {
      condition_id: { type: 'string', pattern: '^0x[0-9a-fA-F]{64}$', description: 'Condition id of the market.' },
    },
    scope: 'trade.users',
    user: 'none',
    masterOnly: true,
    tag: 'sim.control',
    summary: 'Resolve a market of the simulated venue (SIM_CONTROL=on only)',
    body: SimResolveRequest,
    responses: { 200: SimResolveResponse },
    errors: [404, 409],
    handler: resolveMarket,
  },
];
