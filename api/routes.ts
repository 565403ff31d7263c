import { ErrorEnvelope, Health } from '../schemas/common.js';
import {
  ComboAcceptRequest,
  ComboAcceptResponse,
  ComboPositionsPage,
  ComboQuoteRequest,
  ComboQuoteResponse,
  ComboRedeemRequest,
  ComboRedeemResponse,
} from '../schemas/combos.js';
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
  StatementsPage,
  TradesPage,
  WalletOpResponse,
  WithdrawableBalances,
  WithdrawalsPage,
  WithdrawalView,
  WithdrawRequest,
} from '../schemas/wallet.js';
import type { RouteSpec } from './context.js';
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
const COMPOUND_CURSOR = {
  cursor_ts: {
    type: 'integer',
    minimum: 0,
    description: 'Exclusive upper bound on block_timestamp, from next_cursor; send with next_cursor_log_idx.',
  },
  next_cursor_log_idx: { type: 'integer', minimum: 0, description: 'Tie-breaker; send with cursor_ts.' },
};

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
      venue: { enum: ['polymarket'], description: 'Venue; `polymarket` (the default and only venue).' },
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
    query: paged(500),
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
      'One CLOB order of the bound user by `order_id`, whatever its state: working (SUBMITTED, LIVE, ' +
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
      "(cost basis: half the amount each). Neg-risk markets too: `neg_risk_market` (the reference product's " +
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
    description: '422 `INSUFFICIENT_BALANCE` (message: dollars needed, largest affordable notional) or `NO_LIQUIDITY`.',
    body: ComboQuoteRequest,
    example: { leg_position_ids: ['pos_1', 'pos_2'], notional_usd: 10, side: 'BUY' },
    responses: { 200: ComboQuoteResponse },
    errors: [404, 422],
  },
  {
    method: 'post',
    path: `${V2}/combo/accept`,
    scope: 'trade.combos',
    user: 'required',
    tag: 'trade.combos',
    summary: 'Accept a combo quote',
    description: '410 `QUOTE_EXPIRED` after expires_at: re-quote.',
    body: ComboAcceptRequest,
    example: { combo_order_id: 'combo_1', quote_id: 'quote_1' },
    responses: { 200: ComboAcceptResponse },
    errors: [404, 410, 422],
  },
  {
    method: 'post',
    path: `${V2}/combo/redeem`,
    scope: 'trade.combos',
    user: 'required',
    tag: 'trade.combos',
    summary: 'Redeem a winning combo',
    body: ComboRedeemRequest,
    example: { combo_order_id: 'combo_1' },
    responses: { 200: ComboRedeemResponse },
    errors: [404, 409, 422],
  },
  {
    method: 'get',
    path: `${V2}/combo/positions`,
    scope: 'trade.combos',
    user: 'required',
    tag: 'trade.combos',
    summary: 'Combo positions',
    query: paged(500, { status: { enum: ['OPEN', 'PARTIAL', 'RESOLVED_WIN', 'RESOLVED_LOSS'] } }),
    responses: { 200: ComboPositionsPage },
    errors: [404],
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
      "201 with the subscription's id and status. The follower is the bound user (per-user key, or master key " +
      '+ X-Partner-User-Id). 409 `conflict` when this user already has an ACTIVE subscription to the leader ' +
      '(a PAUSED or DISABLED one does not count). Copies are child orders of the subscription (`record_id` on ' +
      'the order), each checked by the pre-trade risk rules like every order.',
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
    responses: { 201: CopytradeResponse },
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
    summary: 'Leaderboard',
    query: {
      ...paged(500, {
        window: {
          enum: ['1d', '7d', '30d', 'all'],
          description: 'Ranking window; another value → 400 `invalid window`.',
        },
      }),
      errorStrings: { window: 'invalid window' },
    },
  },
  {
    method: 'get',
    path: `${V2}/traders/:address/positions`,
    params: ADDRESS_PATH,
    scope: 'trade.read',
    user: 'none',
    tag: 'trade.read',
    summary: "A trader's positions",
    query: paged(1000),
  },
  {
    method: 'get',
    path: `${V2}/traders/:address/trades`,
    params: ADDRESS_PATH,
    scope: 'trade.read',
    user: 'none',
    tag: 'trade.read',
    summary: "A trader's trades",
    query: { properties: { limit: { type: 'integer', minimum: 1, maximum: 500 }, ...COMPOUND_CURSOR } },
    responses: { 200: TradesPage },
  },
  {
    method: 'get',
    path: `${V2}/trades`,
    scope: 'trade.read',
    user: 'none',
    tag: 'trade.read',
    summary: 'Trades',
    query: { properties: { limit: { type: 'integer', minimum: 1, maximum: 500 }, ...COMPOUND_CURSOR } },
    responses: { 200: TradesPage },
  },
  {
    method: 'get',
    path: `${V2}/traders/:address/statements`,
    params: ADDRESS_PATH,
    scope: 'trade.read',
    user: 'none',
    tag: 'trade.read',
    summary: "A trader's statements",
    query: paged(500),
    responses: { 200: StatementsPage },
    errors: [503],
  },
  {
    method: 'get',
    path: `${V2}/traders/:address/statements/r1`,
    params: ADDRESS_PATH,
    scope: 'trade.read',
    user: 'none',
    tag: 'trade.read',
    summary: "A trader's R1 statement rows",
    query: paged(5000, {
      r1_limit: { type: 'integer', minimum: 1, maximum: 5000 },
      r1_offset: { type: 'integer', minimum: 0 },
    }),
    responses: { 200: StatementsPage },
    errors: [503],
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
