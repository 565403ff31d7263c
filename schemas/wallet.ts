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

/** `venue` of the wallet bodies (the reference product's field): `polymarket`, the default and only venue. */
const WalletVenue = {
  enum: ['polymarket'],
  description:
    "Venue; `polymarket` (the default and only venue). The reference product's `predictfun` is not offered: 400.",
} as const;

/** Transaction state of a wallet answer, the reference product's enum beside our `status`. */
const TxState = {
  enum: ['STATE_PENDING', 'STATE_CONFIRMED', 'STATE_FAILED'],
  description:
    "The reference product's transaction state, from `status`: PENDING → `STATE_PENDING` (broadcast, its block " +
    'not yet in), CONFIRMED → `STATE_CONFIRMED`, FAILED → `STATE_FAILED`.',
} as const;

/**
 * POST /v2/trade/withdraw body (spec 4.6: payload not shown): the reference product's `{to, amount,
 * token?, venue?}`, with our `to_address` as an alias of `to`. One of them is required; both are
 * accepted only when they name the same address (compared as EIP-55 addresses), else 400.
 */
export const WithdrawRequest = {
  $id: 'WithdrawRequest',
  type: 'object',
  additionalProperties: false,
  required: ['amount'],
  anyOf: [{ required: ['to'] }, { required: ['to_address'] }],
  properties: {
    to: {
      ...Address,
      description:
        "External destination address (the reference product's name). One of `to` and `to_address` is required; " +
        'both must then name the same address.',
    },
    to_address: { ...Address, description: "Alias of `to` (this service's earlier name)." },
    amount: { ...DecimalString, description: 'Human units of the token (dollars for pUSD).' },
    token: { ...Address, description: 'Token address from /balances/withdrawable; pUSD when omitted.' },
    venue: WalletVenue,
  },
} as const;

/** POST /v2/trade/withdraw answer and GET /v2/trade/withdrawals/{withdrawal_id} (ours): one withdrawal. */
export const WithdrawalView = {
  $id: 'WithdrawalView',
  type: 'object',
  additionalProperties: false,
  required: [
    'type',
    'withdrawal_id',
    'status',
    'state',
    'to',
    'to_address',
    'token',
    'symbol',
    'amount',
    'transaction_hash',
    'confirms_at',
    'settled_at',
    'refunded',
    'created_at',
    'updated_at',
  ],
  properties: {
    type: { const: 'WITHDRAWAL' },
    withdrawal_id: { type: 'string', description: 'wd_…; also the activity row id.' },
    status: {
      enum: ['PENDING', 'CONFIRMED', 'FAILED'],
      description:
        'PENDING: the amount left the available balance, the transfer waits for its block (SIM_BLOCK_DELAY_MS). ' +
        'CONFIRMED: transferred. FAILED: reverted on chain (the amount is back: `refunded: true`) or refused ' +
        'before anything was taken.',
    },
    state: TxState,
    to: {
      ...Address,
      description: "Destination, EIP-55 checksummed (the reference product's name; the same as `to_address`).",
    },
    to_address: { ...Address, description: 'Destination, EIP-55 checksummed.' },
    token: { ...Address, description: 'Token contract address (pUSD), also when the request omitted `token`.' },
    symbol: { type: 'string' },
    amount: { ...DecimalString, description: 'Human units of the token (dollars for pUSD).' },
    transaction_hash: {
      type: 'string',
      pattern: '^0x[0-9a-f]{64}$',
      description: 'Simulated transaction hash (keccak256 of the withdrawal), known from the start.',
    },
    confirms_at: {
      type: ['integer', 'null'],
      description: 'When the block is due while PENDING, Unix epoch milliseconds; null otherwise.',
    },
    settled_at: { type: ['integer', 'null'], description: 'When it confirmed or reverted, Unix epoch milliseconds.' },
    refunded: { type: 'boolean', description: "True when a reverted transfer's amount was returned to the wallet." },
    failure_code: {
      type: 'string',
      description:
        'FAILED only: `TRANSFER_REVERTED` (the simulated chain reverts a transfer to the zero address) or the ' +
        'refusal code (`INSUFFICIENT_BALANCE`). `message` says why.',
    },
    message: { type: ['string', 'null'] },
    created_at: { type: 'integer', minimum: 0, description: 'Unix epoch milliseconds.' },
    updated_at: { type: 'integer', minimum: 0, description: 'Unix epoch milliseconds.' },
  },
} as const;

/** GET /v2/trade/withdrawals (ours): the user's withdrawals, newest first, offset/limit. */
export const WithdrawalsPage = offsetPage(
  'WithdrawalsPage',
  'withdrawals',
  { $ref: 'WithdrawalView' } as const,
  'Withdrawals, newest first.',
);

/** POST /v2/trade/positions/split, /merge, /redeem answer (ours): the simulated on-chain result. */
export const WalletOpResponse = {
  $id: 'WalletOpResponse',
  type: 'object',
  additionalProperties: false,
  required: [
    'type',
    'operation_id',
    'status',
    'state',
    'condition_id',
    'neg_risk_market',
    'outcome_index',
    'amount',
    'payout_usd',
    'payout_base_units',
    'transaction_hash',
    'pusd_delta',
    'pusd_balance',
    'tokens',
    'created_at',
    'updated_at',
  ],
  properties: {
    type: { enum: ['SPLIT', 'MERGE', 'REDEEM'] },
    operation_id: { type: 'string', description: 'wop_…; also the activity row id.' },
    status: {
      enum: ['PENDING', 'CONFIRMED', 'FAILED'],
      description: 'CONFIRMED in every 200 (the simulated chain applies it at once).',
    },
    state: TxState,
    condition_id: {
      type: 'string',
      description: "The market's condition id, in the catalogue's (lower-case) spelling.",
    },
    neg_risk_market: {
      type: 'boolean',
      description:
        "Whether the market is a neg-risk market (on chain: routed through the NegRiskAdapter). A request's " +
        '`neg_risk_market`, when sent, equals it (a mismatch is refused, 422).',
    },
    outcome_index: {
      type: ['integer', 'null'],
      description:
        "Redeem of one outcome: the index (in the market's `tokens`) of the outcome redeemed. Null for split " +
        'and merge, and for a redeem of every outcome (sent without `outcome_index`).',
    },
    amount: {
      type: ['string', 'null'],
      description:
        'Split / merge: dollars = full sets of shares. Redeem: the shares redeemed when `amount` was sent, else ' +
        'null (the whole balance).',
    },
    payout_usd: {
      type: ['string', 'null'],
      description: 'Redeem: dollars paid, $1 per winning share, $0 per losing share; null otherwise.',
    },
    payout_base_units: {
      type: ['string', 'null'],
      pattern: '^[0-9]+$',
      description:
        'Redeem: `payout_usd` in pUSD base units (6 decimals: "500000000" is $500), the reference product\'s ' +
        'field; null otherwise.',
    },
    transaction_hash: {
      type: ['string', 'null'],
      pattern: '^0x[0-9a-f]{64}$',
      description: 'Simulated transaction hash (keccak256 of the operation).',
    },
    pusd_delta: {
      type: ['string', 'null'],
      description: 'Signed pUSD change, dollars (split −amount, merge +amount, redeem +payout).',
    },
    pusd_balance: { type: ['string', 'null'], description: 'pUSD balance after the operation, dollars.' },
    tokens: {
      type: 'array',
      description:
        'Both outcome tokens of the market: signed share change and shares held after (a redeem of one outcome ' +
        'leaves the other unchanged: `shares_delta` "0").',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['token_id', 'outcome', 'shares_delta', 'balance'],
        properties: {
          token_id: { type: 'string' },
          outcome: { type: ['string', 'null'] },
          shares_delta: { type: 'string' },
          balance: { type: ['string', 'null'] },
        },
      },
    },
    failure_code: {
      type: 'string',
      description: 'FAILED only (the activity row of an operation the venue refused): the refusal code.',
    },
    message: { type: ['string', 'null'] },
    created_at: { type: 'integer', minimum: 0, description: 'Unix epoch milliseconds.' },
    updated_at: { type: 'integer', minimum: 0, description: 'Unix epoch milliseconds.' },
  },
} as const;

/** `condition_id` of the wallet bodies: 0x + 64 hex (either case). */
const ConditionId = {
  type: 'string',
  pattern: '^0x[0-9a-fA-F]{64}$',
  description: "The market's condition id: 0x + 64 hex (either case).",
} as const;

/** `neg_risk_market` of the wallet bodies (the reference product requires it; here optional). */
const NegRiskMarket = {
  type: 'boolean',
  description:
    'Whether the market is neg-risk (GET /v2/trade/markets `neg_risk`); on chain it routes the operation ' +
    'through the NegRiskAdapter. Optional here (the reference product requires it): ' +
    'when sent it must match the market, else 422 `NEG_RISK_MISMATCH` (nothing changes); when omitted the ' +
    "market's own routing is used.",
} as const;

/**
 * POST /v2/trade/positions/redeem body (spec 4.6: payload not shown): the reference product's
 * `{condition_id, outcome_index, neg_risk_market, amount?, venue?}`; only `condition_id` is
 * required here, so our earlier `{condition_id}` (redeem every outcome) still works.
 */
export const RedeemRequest = {
  $id: 'RedeemRequest',
  type: 'object',
  additionalProperties: false,
  required: ['condition_id'],
  properties: {
    condition_id: ConditionId,
    outcome_index: {
      type: 'integer',
      minimum: 0,
      description:
        "The outcome to redeem: its index in the market's `tokens` (0 = the first, e.g. Yes; 1 = the second). " +
        "Only that outcome's shares are burned: $1 each when it won, $0 when it lost. " +
        'An index the market does not have: 400. Omitted: every outcome the user holds is redeemed.',
    },
    neg_risk_market: NegRiskMarket,
    amount: {
      ...DecimalString,
      description:
        'Shares of `outcome_index` to redeem (at most 6 decimals, at most the shares held); the whole position ' +
        'when omitted. Needs `outcome_index` (400 without).',
    },
    venue: WalletVenue,
  },
} as const;

/**
 * POST /v2/trade/positions/split and /merge body (spec 4.6: payload not shown): the reference
 * product's `{condition_id, amount, neg_risk_market, venue?}`; `neg_risk_market` optional here.
 * `amount` pUSD ↔ full sets of shares.
 */
export const SplitMergeRequest = {
  $id: 'SplitMergeRequest',
  type: 'object',
  additionalProperties: false,
  required: ['condition_id', 'amount'],
  properties: {
    condition_id: ConditionId,
    amount: { ...DecimalString, description: 'Dollars = full sets of shares.' },
    neg_risk_market: NegRiskMarket,
    venue: WalletVenue,
  },
} as const;

/** Most order ids one POST /v2/trade/orders/cancel takes (more → 400; DELETE /v2/trade/orders has no limit). */
export const BATCH_CANCEL_MAX = 100;

/**
 * POST /v2/trade/orders/cancel body (batch cancel; spec 4.6: payload not shown; ours): 1 to
 * {@link BATCH_CANCEL_MAX} order ids. An id that names no order of the user, however malformed, is
 * answered `not_found` in the response; only a body that is not this shape is a 400.
 */
export const BatchCancelRequest = {
  $id: 'BatchCancelRequest',
  type: 'object',
  additionalProperties: false,
  required: ['order_ids'],
  properties: {
    venue: { enum: ['polymarket'], description: 'Venue; `polymarket` (the default and only venue).' },
    order_ids: {
      type: 'array',
      minItems: 1,
      maxItems: BATCH_CANCEL_MAX,
      items: { type: 'string', maxLength: 256 },
      description:
        `Order ids (\`order_id\` of POST /v2/trade/order or GET /v2/trade/orders/open), 1 ` +
        `to ${BATCH_CANCEL_MAX}, each a string of at most 256 characters. ` +
        'A repeated id is answered once. An id that is unknown, malformed, a strategy `record_id` or another ' +
        "user's order is `not_found`, never a 400.",
    },
  },
} as const;
export type BatchCancelRequest = { order_ids: string[]; venue?: 'polymarket' };

/** What a batch cancel or cancel-all did with one order (ours). */
const CancelOutcome = {
  type: 'object',
  additionalProperties: false,
  required: ['order_id', 'outcome', 'status', 'order'],
  properties: {
    order_id: { type: 'string' },
    outcome: {
      enum: ['canceled', 'not_found', 'already_done'],
      description:
        '`canceled`: the cancel took effect (status CANCELED; PENDING_CANCEL while the venue has not ' +
        'confirmed). `already_done`: the order was already final, ' +
        'or filled or expired before the cancel took effect (`status` says which). `not_found`: no order of ' +
        "this user has that id (unknown, malformed, a strategy record, another user's).",
    },
    status: { type: ['string', 'null'], description: "The order's status after the attempt; null when not found." },
    order: {
      anyOf: [{ $ref: 'OrderView' }, { type: 'null' }],
      description:
        'The order after the attempt (as DELETE /v2/trade/orders/{order_id} answers it); null when not found.',
    },
    message: { type: 'string', description: 'Why the order was not canceled (absent when it was).' },
  },
} as const;

/**
 * 200 response of the batch cancels (POST /v2/trade/orders/cancel-batch, its alias POST
 * /v2/trade/orders/cancel) and the cancel-alls (POST /v2/trade/orders/cancel-all, its alias DELETE
 * /v2/trade/orders): the reference product's `cancelled`, `not_cancelled`, `count`, and our
 * per-order `results` with `counts`, both on every path.
 */
export const BatchCancelResponse = {
  $id: 'BatchCancelResponse',
  type: 'object',
  additionalProperties: false,
  required: ['cancelled', 'not_cancelled', 'count', 'results', 'counts'],
  properties: {
    cancelled: {
      type: 'array',
      items: { type: 'string' },
      description: 'Ids of the orders this request canceled (outcome `canceled`), in the order of `results`.',
    },
    not_cancelled: {
      type: 'array',
      description:
        'The other orders, in the order of `results`: `reason` says why (not found; already final, filled or expired).',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['order_id', 'reason'],
        properties: { order_id: { type: 'string' }, reason: { type: 'string' } },
      },
    },
    count: { type: 'integer', minimum: 0, description: 'How many orders were canceled (the length of `cancelled`).' },
    results: {
      type: 'array',
      items: CancelOutcome,
      description:
        'Batch: one per distinct id, in the order sent. Cancel-all: one per open order it found, newest first ' +
        '(empty when none).',
    },
    counts: {
      type: 'object',
      additionalProperties: false,
      required: ['canceled', 'not_found', 'already_done'],
      description: 'How many results have each outcome.',
      properties: {
        canceled: { type: 'integer', minimum: 0 },
        not_found: { type: 'integer', minimum: 0 },
        already_done: { type: 'integer', minimum: 0 },
      },
    },
  },
} as const;

/**
 * One activity item (ours: one of the user's orders, strategies, wallet operations or withdrawals,
 * newest first, with its latest state).
 */
export const ActivityItem = {
  $id: 'ActivityItem',
  type: 'object',
  additionalProperties: false,
  required: ['kind', 'id', 'type', 'status', 'side', 'symbol', 'created_at', 'updated_at'],
  properties: {
    kind: {
      enum: ['order', 'strategy', 'wallet', 'withdrawal', 'combo'],
      description:
        '`wallet`: SPLIT, MERGE, REDEEM; `withdrawal`: WITHDRAWAL; `combo`: COMBO from its quote on (QUOTED, ' +
        'then EXPIRED, or its accept, resolution and redeem as its status).',
    },
    id: { type: 'string', description: 'order_id, record_id, operation_id, withdrawal_id or combo_order_id.' },
    type: { type: 'string', description: 'Order or strategy type, or SPLIT, MERGE, REDEEM, WITHDRAWAL, COMBO.' },
    status: { type: 'string' },
    side: { enum: ['buy', 'sell', null], description: 'Null for wallet operations and withdrawals.' },
    symbol: {
      type: 'string',
      description:
        'Outcome token id; the condition id of a wallet operation; the token address of a withdrawal; the ' +
        'combo_position_id of a combo.',
    },
    amount: {
      type: ['string', 'null'],
      description:
        'Wallet operations and withdrawals: the amount, dollars (redeem: the payout); combos: the cost ' +
        '(notional + fee), the payout once redeemed.',
    },
    transaction_hash: {
      type: ['string', 'null'],
      description:
        "Wallet operations, withdrawals and combos: simulated transaction hash (a combo's redeem once redeemed).",
    },
    price: { type: ['string', 'null'] },
    size: { type: ['string', 'null'] },
    filled_size: { type: ['string', 'null'] },
    record_id: {
      type: ['string', 'null'],
      description:
        'Orders: the strategy or copytrade subscription that placed it (a copy: the subscription `id`), else null.',
    },
    cancel_code: {
      type: ['string', 'null'],
      description:
        'Orders ended or ending by a cancel (CANCELED, EXPIRED, PENDING_CANCEL): why, as on the order ' +
        '(`USER_CANCELED`, `MARKET_RESOLVED`, `EXPIRED`, …).',
    },
    cancel_reason: { type: ['string', 'null'], description: 'The same cancel in words, as on the order.' },
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
    next_cursor: {
      type: ['string', 'null'],
      description: 'Opaque: send back as `cursor`; never parse. Null at the end.',
    },
  },
} as const;
