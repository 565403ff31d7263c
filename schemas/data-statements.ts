/**
 * Shapes of the statement reads (spec 2.9, 4.6, 4.7, 7, 8): GET /v2/trade/traders/{address}/statements
 * and /statements/r1. Dollars, shares and prices are decimal strings (signed where they can be
 * negative); addresses are lower-case.
 */
import { DAY_PATTERN, offsetPage, PageFields, pageRequired } from './common.js';

/** A dollar amount that can be negative, as a decimal string. */
const SignedUsd = { type: 'string', pattern: '^-?[0-9]+(\\.[0-9]+)?$', maxLength: 64 } as const;
/** A non-negative dollar or share amount, as a decimal string. */
const Amount = { type: 'string', pattern: '^[0-9]+(\\.[0-9]+)?$', maxLength: 64 } as const;
const Day = { type: 'string', pattern: DAY_PATTERN, description: 'UTC day, YYYY-MM-DD.' } as const;
const Instant = { type: 'string', format: 'date-time', description: 'ISO 8601, UTC.' } as const;
const Trader = { type: 'string', pattern: '^0x[0-9a-f]{40}$', description: 'The trader (lower-case).' } as const;
const TxHash = { type: 'string', pattern: '^0x[0-9a-fA-F]{1,64}$' } as const;

/** The outcome token of an R1 row or an open position. */
const Asset = {
  type: 'object',
  additionalProperties: false,
  required: ['market', 'outcome_label', 'token_id'],
  properties: {
    market: { type: 'string', description: 'Condition id of the market.' },
    outcome_label: { type: 'string', description: 'Outcome name ("Yes", "Up", …).' },
    token_id: { type: 'string', description: 'Outcome token id.' },
  },
} as const;

/** One R1 row: shares of one FIFO lot disposed of by one record. */
export const StatementR1Row = {
  $id: 'StatementR1Row',
  type: 'object',
  additionalProperties: false,
  description:
    'A disposition (Form-8949 style): shares of one FIFO lot disposed of by a sell, a merge, a redeem or another ' +
    'share debit. `gain_loss` = `proceeds` − `cost_basis`, before fees (fees are a line of the statement). Shares ' +
    'disposed of beyond what the records show acquired (history that starts mid-life) have no acquisition: ' +
    '`date_acquired`, `acquire_tx` and `term` null, and an unknown cost basis taken as their proceeds ' +
    '(`cost_basis` = `proceeds`, `gain_loss` 0): they realize no gain or loss.',
  required: [
    'date',
    'seq',
    'asset',
    'shares',
    'disposal_kind',
    'date_acquired',
    'date_disposed',
    'acquire_tx',
    'dispose_tx',
    'dispose_block_timestamp',
    'dispose_log_index',
    'proceeds',
    'cost_basis',
    'gain_loss',
    'term',
  ],
  properties: {
    date: { ...Day, description: 'The statement (UTC day of the disposal).' },
    seq: { type: 'integer', minimum: 0, description: 'Position in the statement, from 0, in chain order.' },
    asset: Asset,
    shares: Amount,
    disposal_kind: {
      enum: ['SELL', 'MERGE', 'REDEEM', 'TRANSFER'],
      description: 'What disposed of the shares: a sell fill, a merge, a redeem, or another share debit.',
    },
    date_acquired: { anyOf: [Instant, { type: 'null' }] },
    date_disposed: Instant,
    acquire_tx: { anyOf: [TxHash, { type: 'null' }], description: 'Transaction of the acquisition.' },
    dispose_tx: { ...TxHash, description: 'Transaction of the disposal.' },
    dispose_block_timestamp: { type: 'integer', minimum: 0, description: 'Block time of the disposal, seconds.' },
    dispose_log_index: { type: 'integer', minimum: 0 },
    proceeds: { ...Amount, description: 'Dollars received for these shares.' },
    cost_basis: { ...Amount, description: 'Dollars these shares cost (FIFO).' },
    gain_loss: SignedUsd,
    term: {
      enum: ['SHORT', 'LONG', null],
      description: '`LONG` when held more than 365 days, else `SHORT`; null without an acquisition.',
    },
  },
} as const;

/** One daily statement. */
export const Statement = {
  $id: 'Statement',
  type: 'object',
  additionalProperties: false,
  description:
    "A trader's statement of one closed UTC day, built from the trade history's records. Balance = pUSD cash + " +
    'open positions at cost (FIFO, fees excluded). `net_flows` = `deposits` − `withdrawals` + ' +
    '`withdrawal_refunds` + `other_flows` (combo and copytrade cash) + `unrecorded_cost_basis`. Always: ' +
    '`opening_balance` + `net_flows` + ' +
    '`realized_pnl` − `fees` = `closing_balance`, and `realized_pnl` = Σ `gain_loss` of its R1 rows ' +
    '(`reconciliation.residual` is that difference: "0"). Splits buy lots, merges and redeems dispose of them ' +
    '(R1 rows); fees are expensed on their own line. A day without records of the trader carries the previous ' +
    'close over (`has_records` false, nothing moved).',
  required: [
    'trader',
    'date',
    'period',
    'has_records',
    'opening_balance',
    'closing_balance',
    'opening_cash',
    'closing_cash',
    'opening_positions_cost',
    'closing_positions_cost',
    'deposits',
    'withdrawals',
    'withdrawal_refunds',
    'other_flows',
    'unrecorded_cost_basis',
    'net_flows',
    'realized_pnl',
    'proceeds',
    'cost_basis',
    'fees',
    'redemptions',
    'volume',
    'trade_count',
    'r1_total',
    'positions',
    'disclosure',
    'reconciliation',
  ],
  properties: {
    trader: Trader,
    date: Day,
    period: {
      type: 'object',
      additionalProperties: false,
      required: ['from', 'to'],
      description: 'The day: from 00:00 (included) to the next 00:00 UTC (excluded).',
      properties: { from: Instant, to: Instant },
    },
    has_records: { type: 'boolean', description: 'false: no record of the trader that day (carried over).' },
    opening_balance: { ...SignedUsd, description: '`opening_cash` + `opening_positions_cost`.' },
    closing_balance: { ...SignedUsd, description: '`closing_cash` + `closing_positions_cost`.' },
    opening_cash: { ...SignedUsd, description: 'pUSD at the open (negative when the records start mid-life).' },
    closing_cash: SignedUsd,
    opening_positions_cost: Amount,
    closing_positions_cost: Amount,
    deposits: { ...SignedUsd, description: 'Credits of pUSD.' },
    withdrawals: { ...SignedUsd, description: 'pUSD withdrawn (positive).' },
    withdrawal_refunds: { ...SignedUsd, description: 'Refunds of failed withdrawals.' },
    other_flows: { ...SignedUsd, description: 'Combo and copytrade cash (signed).' },
    unrecorded_cost_basis: {
      ...Amount,
      description:
        'Cost basis of the shares disposed of beyond the recorded lots (the records start after they were ' +
        'acquired: R1 rows without `acquired`). Their cost basis is unknown and taken as their proceeds, so ' +
        'they realize no gain or loss; they enter the balance at that value, a flow.',
    },
    net_flows: SignedUsd,
    realized_pnl: { ...SignedUsd, description: 'Σ `gain_loss` of the R1 rows (before fees).' },
    proceeds: { ...Amount, description: 'Σ `proceeds` of the R1 rows.' },
    cost_basis: { ...Amount, description: 'Σ `cost_basis` of the R1 rows.' },
    fees: { ...Amount, description: "Fees of the day's fills." },
    redemptions: { ...SignedUsd, description: 'pUSD received from redeems (their R1 rows realize the result).' },
    volume: { ...Amount, description: "Notional of the day's fills." },
    trade_count: { type: 'integer', minimum: 0, description: "The day's fills." },
    r1_total: { type: 'integer', minimum: 0, description: 'R1 rows of the statement.' },
    positions: {
      type: 'array',
      description: 'Open positions at the close, at cost.',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['asset', 'shares', 'cost_basis'],
        properties: { asset: Asset, shares: Amount, cost_basis: Amount },
      },
    },
    disclosure: {
      type: 'object',
      additionalProperties: false,
      required: ['cost_basis_method', 'balance_basis', 'fee_treatment', 'long_term_threshold_days'],
      properties: {
        cost_basis_method: { const: 'FIFO' },
        balance_basis: { const: 'CASH_PLUS_POSITIONS_AT_COST' },
        fee_treatment: { const: 'EXPENSED', description: 'Fees are their own line, outside R1 cost and proceeds.' },
        long_term_threshold_days: { type: 'integer', minimum: 0 },
      },
    },
    reconciliation: {
      type: 'object',
      additionalProperties: false,
      required: ['residual', 'all_zero'],
      properties: {
        residual: {
          ...SignedUsd,
          description: 'opening_balance + net_flows + realized_pnl − fees − closing_balance ("0").',
        },
        all_zero: { type: 'boolean' },
      },
    },
    r1: {
      type: 'array',
      items: { $ref: 'StatementR1Row' },
      description: 'In lists: the R1 rows from `r1_offset`, at most `r1_limit`.',
    },
    has_more_r1: { type: 'boolean', description: 'In lists: whether this statement has R1 rows past this page.' },
  },
} as const;

const statementsPage = offsetPage('StatementsPage', 'statements', { $ref: 'Statement' } as const, '');

/** GET /v2/trade/traders/{address}/statements. */
export const StatementsPage = {
  ...statementsPage,
  description:
    "A trader's statements, newest first (offset/limit), each with its R1 rows from `r1_offset` (at most " +
    '`r1_limit`).',
  required: [...pageRequired('statements'), 'has_more_r1', 'trader', 'generated_through'],
  properties: {
    ...statementsPage.properties,
    has_more_r1: { type: 'boolean', description: 'Whether a statement of this page has R1 rows past this page.' },
    trader: Trader,
    generated_through: {
      anyOf: [Day, { type: 'null' }],
      description: 'Every closed day up to this one is generated (null before the first run).',
    },
  },
} as const;

/** GET /v2/trade/traders/{address}/statements/r1. */
export const StatementR1Page = {
  $id: 'StatementR1Page',
  type: 'object',
  additionalProperties: false,
  description:
    'R1 rows of one statement (`date`) or of all (oldest first), in chain order, as an offset/limit page: ' +
    '`limit` and `offset` are the `r1_limit` and `r1_offset` used.',
  required: ['trader', 'date', ...pageRequired('rows'), 'has_more_r1'],
  properties: {
    trader: Trader,
    date: { anyOf: [Day, { type: 'null' }], description: 'The statement; null for every statement.' },
    rows: { type: 'array', items: { $ref: 'StatementR1Row' } },
    ...PageFields,
    has_more_r1: { type: 'boolean', description: 'Rows past this page (the same as `has_more`).' },
  },
} as const;

/** 503 of a statement read whose day is not generated yet (spec part 7). */
export const StatementUnavailable = {
  $id: 'StatementUnavailable',
  type: 'object',
  additionalProperties: false,
  description:
    'The statement of that day is not generated yet (the day has not closed, or its job has not run): poll again ' +
    'after `Retry-After` seconds (header and `retry_after`), when the job is due.',
  required: ['available', 'error', 'message', 'date', 'retry_after'],
  properties: {
    available: { const: false },
    error: { const: 'statement not available' },
    message: { type: 'string' },
    date: Day,
    retry_after: { type: 'integer', minimum: 1, description: 'Seconds until the job is due.' },
  },
} as const;
