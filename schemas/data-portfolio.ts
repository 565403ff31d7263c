/**
 * Shapes of the portfolio reads (spec 4.6 and the reference's trader analytics): a trader's FIFO
 * positions, the leaderboard, a trader's summary, PnL by window, metrics and categories. Dollars are
 * decimal strings (at most 6 decimals, signed where a PnL), prices decimal probabilities.
 */
import { EpochMs, offsetPage, pageRequired, PageFields } from './common.js';

/** A signed dollar amount (PnL), at most 6 decimals. */
const SignedUsd = { type: 'string', pattern: '^-?[0-9]+(\\.[0-9]{1,6})?$', maxLength: 40 } as const;
/** A non-negative decimal string. */
const Amount = { type: 'string', pattern: '^[0-9]+(\\.[0-9]+)?$', maxLength: 40 } as const;
const Address = { type: 'string', pattern: '^0x[0-9a-f]{40}$', description: 'Wallet address, lower-case.' } as const;
const WindowName = { enum: ['1d', '7d', '30d', 'all'] } as const;
const WinRate = {
  type: 'string',
  pattern: '^(0|1)(\\.[0-9]+)?$',
  description:
    'Closed positions won / closed positions, 4 decimals: the fraction of closed positions (last shares ' +
    'sold, merged or redeemed; those closed at zero too) with a positive realized PnL since they opened; ' +
    '"0" while none.',
} as const;

/** One (address, token) position from the FIFO lots. */
export const TraderPosition = {
  type: 'object',
  additionalProperties: false,
  required: [
    'token_id',
    'condition_id',
    'outcome',
    'question',
    'slug',
    'category',
    'status',
    'size',
    'avg_price',
    'cost',
    'cur_price',
    'current_value',
    'unrealized_pnl',
    'realized_pnl',
    'total_bought',
    'redeemable',
    'market_resolved',
    'last_activity_at',
  ],
  properties: {
    token_id: { type: 'string' },
    condition_id: { type: 'string' },
    outcome: { type: 'string' },
    question: { type: 'string', description: "The market's question ('' when no registry knows the market)." },
    slug: { type: 'string' },
    category: {
      type: 'string',
      description: "The market's tag, else its event slug's (else its slug's) leading word, else `other`.",
    },
    status: { enum: ['open', 'closed'], description: '`open` while shares are held, `closed` once none are.' },
    size: { ...Amount, description: 'Shares held (Σ open FIFO lots).' },
    avg_price: { ...Amount, description: 'cost / size, 6 decimals; "0" when closed.' },
    cost: {
      ...Amount,
      description: 'Cost of the shares held (their FIFO lots at their prices; fees expensed), dollars.',
    },
    cur_price: {
      anyOf: [Amount, { type: 'null' }],
      description: 'Mark: 1 or 0 once resolved, else the mid, else the last trade; null when unpriced.',
    },
    current_value: { anyOf: [Amount, { type: 'null' }], description: 'size × cur_price, dollars.' },
    unrealized_pnl: { ...SignedUsd, description: 'current_value − cost ("0" when unpriced or closed).' },
    realized_pnl: {
      ...SignedUsd,
      description:
        "Σ gains of the dispositions (proceeds − FIFO cost basis, before fees: the statements' R1 rows of the " +
        'token add up to it). Shares disposed of beyond the recorded lots (acquired before the records) have an ' +
        'unknown cost basis, taken as their proceeds: they realize no gain or loss. Dollars.',
    },
    total_bought: { ...Amount, description: 'Shares ever acquired (bought or split).' },
    redeemable: { type: 'boolean', description: 'The market resolved and shares are held.' },
    market_resolved: { type: 'boolean' },
    last_activity_at: { ...EpochMs, description: 'The last record that changed the position.' },
  },
} as const;

export const TraderPositionsPage = {
  ...offsetPage('TraderPositionsPage', 'positions', TraderPosition, "A trader's positions (FIFO)."),
  required: [...pageRequired('positions'), 'trader', 'status'],
  properties: {
    trader: Address,
    status: { enum: ['open', 'closed', 'all'], description: 'The filter applied.' },
    positions: { type: 'array', items: TraderPosition },
    ...PageFields,
  },
} as const;

/** One ranked trader. */
export const LeaderboardRow = {
  type: 'object',
  additionalProperties: false,
  required: ['rank', 'address', 'pnl', 'realized_pnl', 'volume', 'trades', 'win_rate'],
  properties: {
    rank: { type: 'integer', minimum: 1, description: 'Competition rank: ties share it, the next skips (1, 2, 2, 4).' },
    address: Address,
    pnl: { ...SignedUsd, description: "The window's PnL (see the endpoint's description), dollars." },
    realized_pnl: { ...SignedUsd, description: 'Realized PnL of the dispositions in the window.' },
    volume: { ...Amount, description: 'Σ notional of the fills in the window, dollars.' },
    trades: { type: 'integer', minimum: 0, description: 'Fills in the window.' },
    win_rate: WinRate,
  },
} as const;

export const LeaderboardPage = {
  ...offsetPage('LeaderboardPage', 'leaderboard', LeaderboardRow, 'Ranked traders.'),
  required: [...pageRequired('leaderboard'), 'window', 'mode'],
  properties: {
    window: WindowName,
    mode: { enum: ['pnl', 'volume'], description: 'What the rows are ranked by.' },
    leaderboard: { type: 'array', items: LeaderboardRow },
    ...PageFields,
  },
} as const;

/** A trader's profile summary. */
export const TraderSummary = {
  $id: 'TraderSummary',
  type: 'object',
  additionalProperties: false,
  required: [
    'trader',
    'window',
    'pnl',
    'realized_pnl',
    'unrealized_pnl',
    'total_pnl',
    'fees',
    'volume',
    'trades',
    'win_rate',
    'active_positions',
    'closed_positions',
    'first_trade_at',
    'last_trade_at',
  ],
  properties: {
    trader: Address,
    window: WindowName,
    pnl: { ...SignedUsd, description: "The window's PnL (as on the leaderboard)." },
    realized_pnl: { ...SignedUsd, description: 'Realized in the window.' },
    unrealized_pnl: { ...SignedUsd, description: 'Open positions at the current marks − their cost (now).' },
    total_pnl: { ...SignedUsd, description: 'All-time realized + unrealized − all-time fees.' },
    fees: { ...Amount, description: 'Fees paid in the window.' },
    volume: { ...Amount, description: 'Σ notional of the fills in the window.' },
    trades: { type: 'integer', minimum: 0, description: 'Fills in the window.' },
    win_rate: WinRate,
    active_positions: { type: 'integer', minimum: 0 },
    closed_positions: { type: 'integer', minimum: 0 },
    first_trade_at: { anyOf: [EpochMs, { type: 'null' }], description: 'First record naming the trader.' },
    last_trade_at: { anyOf: [EpochMs, { type: 'null' }], description: 'Last record naming the trader.' },
  },
} as const;

/** PnL of one window. */
const PnlWindow = {
  type: 'object',
  additionalProperties: false,
  required: ['window', 'pnl', 'realized_pnl', 'fees', 'volume'],
  properties: {
    window: WindowName,
    pnl: SignedUsd,
    realized_pnl: SignedUsd,
    fees: Amount,
    volume: Amount,
  },
} as const;

export const TraderPnl = {
  $id: 'TraderPnl',
  type: 'object',
  additionalProperties: false,
  required: ['trader', 'realized_pnl', 'unrealized_pnl', 'windows', 'window', 'pnl_type', 'series'],
  properties: {
    trader: Address,
    realized_pnl: { ...SignedUsd, description: 'All time.' },
    unrealized_pnl: { ...SignedUsd, description: 'Open positions at the current marks − their cost.' },
    windows: { type: 'array', items: PnlWindow, description: 'One entry per window: 1d, 7d, 30d, all.' },
    window: { enum: ['1d', '7d', '30d', 'all'], description: 'The window of `series`.' },
    pnl_type: { enum: ['realized', 'unrealized', 'overall'], description: 'Which curve `series` is.' },
    series: {
      type: 'array',
      description:
        'Oldest first. `realized`: the cumulative realized PnL at the start of each UTC day with a disposition ' +
        'in the window; `unrealized`: one point, now; `overall`: the realized points, then realized + ' +
        'unrealized now.',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['ts', 'pnl'],
        properties: {
          ts: {
            type: 'integer',
            minimum: 0,
            description: 'Start of the UTC day (now for the last point), Unix seconds.',
          },
          pnl: SignedUsd,
        },
      },
    },
  },
} as const;

export const TraderMetrics = {
  $id: 'TraderMetrics',
  type: 'object',
  additionalProperties: false,
  required: [
    'trader',
    'window',
    'trades',
    'wins',
    'losses',
    'win_rate',
    'volume',
    'shares_traded',
    'average_trade',
    'fees',
  ],
  properties: {
    trader: Address,
    window: WindowName,
    trades: { type: 'integer', minimum: 0, description: 'Fills.' },
    wins: { type: 'integer', minimum: 0, description: 'Positions closed with a positive realized PnL.' },
    losses: { type: 'integer', minimum: 0, description: 'Positions closed with a negative realized PnL.' },
    win_rate: WinRate,
    volume: { ...Amount, description: 'Σ notional of the fills, dollars.' },
    shares_traded: Amount,
    average_trade: { ...Amount, description: 'volume / trades, dollars, 6 decimals ("0" without trades).' },
    fees: Amount,
  },
} as const;

const CategoryRow = {
  type: 'object',
  additionalProperties: false,
  required: ['category', 'realized_pnl', 'volume', 'trades', 'win_rate'],
  properties: {
    category: { type: 'string' },
    realized_pnl: SignedUsd,
    volume: Amount,
    trades: { type: 'integer', minimum: 0 },
    win_rate: WinRate,
  },
} as const;

export const TraderCategories = {
  $id: 'TraderCategories',
  type: 'object',
  additionalProperties: false,
  required: ['trader', 'categories'],
  properties: {
    trader: Address,
    categories: { type: 'array', items: CategoryRow, description: 'All time, by volume descending.' },
  },
} as const;
