import type { Request } from 'express';
import { dec, str } from '../../engine/decimal.js';
import { errors } from '../../engine/errors.js';
import {
  LONG_TERM_DAYS,
  isDay,
  nextDay,
  netFlows,
  positionsOf,
  residual,
  type StatementDoc,
  type StatementR1Doc,
} from '../../engine/data/statements.js';
import type { Handler, HandlerResult } from '../context.js';
import { intParam, page, pageQuery, type PageRequest } from '../paging.js';

/** Most R1 rows a page carries (spec part 8). */
export const R1_LIMIT_MAX = 5000;
/** R1 rows a page carries when `r1_limit` is absent. */
const R1_LIMIT_DEFAULT = 500;
const DAY_MS = 86_400_000;

/** The `{address}` of the path, lower-case (the route's schema checked its form). */
function addressOf(req: Request): string {
  return String(req.params.address).toLowerCase();
}

/**
 * `date` of the query: a real UTC day `YYYY-MM-DD`, or null when absent.
 * @throws {DomainError} `INVALID_REQUEST` (400) for anything else.
 */
function dateOf(req: Request): string | null {
  const raw = req.query.date as unknown;
  if (raw === undefined) return null;
  if (typeof raw !== 'string' || !isDay(raw)) throw errors.badRequest('date must be a UTC day written YYYY-MM-DD');
  return raw;
}

/**
 * `r1_limit` and `r1_offset` of the query; on the R1 read `limit` and `offset` (the reference
 * product's names there) mean the same, and giving both names of one with different values is a 400.
 * @throws {DomainError} `INVALID_REQUEST` (400) for a malformed value, a limit of 0 or above {@link R1_LIMIT_MAX}.
 */
function r1PageOf(req: Request, aliases: boolean): PageRequest {
  const pick = (name: string, alias: string): number | undefined => {
    const a = intParam(req, name);
    const b = aliases ? intParam(req, alias) : undefined;
    if (a !== undefined && b !== undefined && a !== b)
      throw errors.badRequest(`${name} and ${alias} are the same parameter here; send one`);
    return a ?? b;
  };
  const limit = pick('r1_limit', 'limit') ?? R1_LIMIT_DEFAULT;
  const offset = pick('r1_offset', 'offset') ?? 0;
  if (limit < 1) throw errors.badRequest('r1_limit must be at least 1');
  if (limit > R1_LIMIT_MAX) throw errors.badRequest(`r1_limit must be at most ${R1_LIMIT_MAX}; received ${limit}`);
  return { limit, offset };
}

const iso = (ms: number) => new Date(ms).toISOString();

/** The REST shape of an R1 row (schemas/data-statements.ts `StatementR1Row`). */
export function r1View(r: StatementR1Doc): Record<string, unknown> {
  const held = r.acquired ? r.disposed.atMs - r.acquired.atMs : null;
  return {
    date: r.date,
    seq: r.seq,
    asset: { market: r.conditionId, outcome_label: r.outcome, token_id: r.tokenId },
    shares: r.shares,
    disposal_kind: r.kind,
    date_acquired: r.acquired ? iso(r.acquired.atMs) : null,
    date_disposed: iso(r.disposed.atMs),
    acquire_tx: r.acquired?.transactionHash ?? null,
    dispose_tx: r.disposed.transactionHash,
    dispose_block_timestamp: r.disposed.blockTimestamp,
    dispose_log_index: r.disposed.logIndex,
    proceeds: r.proceeds,
    cost_basis: r.costBasis,
    gain_loss: r.gain,
    term: held === null ? null : held > LONG_TERM_DAYS * DAY_MS ? 'LONG' : 'SHORT',
  };
}

/** The REST shape of a statement (schemas/data-statements.ts `Statement`), without its rows. */
export function statementView(s: StatementDoc): Record<string, unknown> {
  const rest = residual(s);
  return {
    trader: s.address,
    date: s.date,
    period: { from: `${s.date}T00:00:00.000Z`, to: `${nextDay(s.date)}T00:00:00.000Z` },
    has_records: !s.carried,
    opening_balance: str(dec(s.openingCash).plus(dec(s.openingPositionsCost))),
    closing_balance: str(dec(s.closingCash).plus(dec(s.closingPositionsCost))),
    opening_cash: s.openingCash,
    closing_cash: s.closingCash,
    opening_positions_cost: s.openingPositionsCost,
    closing_positions_cost: s.closingPositionsCost,
    deposits: s.deposits,
    withdrawals: s.withdrawals,
    withdrawal_refunds: s.withdrawalRefunds,
    other_flows: s.otherFlows,
    unrecorded_cost_basis: s.unrecordedCost ?? '0',
    net_flows: str(netFlows(s)),
    realized_pnl: s.realizedPnl,
    proceeds: s.proceeds,
    cost_basis: s.costBasis,
    fees: s.fees,
    redemptions: s.redemptions,
    volume: s.volume,
    trade_count: s.tradeCount,
    r1_total: s.r1Count,
    positions: positionsOf(s.closing).map((p) => ({
      asset: { market: p.conditionId, outcome_label: p.outcome, token_id: p.tokenId },
      shares: p.shares,
      cost_basis: p.cost,
    })),
    disclosure: {
      cost_basis_method: 'FIFO',
      balance_basis: 'CASH_PLUS_POSITIONS_AT_COST',
      fee_treatment: 'EXPENSED',
      long_term_threshold_days: LONG_TERM_DAYS,
    },
    reconciliation: { residual: str(rest), all_zero: rest.isZero() },
  };
}

/**
 * 503 for a day whose statements are not generated yet (spec part 7): `available: false`, and
 * `Retry-After` the seconds until the job is due (at least 1).
 */
function notGenerated(date: string, dueAtMs: number, nowMs: number): HandlerResult {
  const retryAfter = Math.max(1, Math.ceil((dueAtMs - nowMs) / 1000));
  return {
    status: 503,
    headers: { 'Retry-After': String(retryAfter) },
    body: {
      available: false,
      error: 'statement not available',
      message:
        `the statements of ${date} are generated after that UTC day closes, from ${iso(dueAtMs)}; ` +
        `retry after ${retryAfter} s`,
      date,
      retry_after: retryAfter,
    },
  };
}

/**
 * GET /v2/trade/traders/{address}/statements: the trader's statements newest first (offset/limit,
 * `limit` ≤ 500), each with its R1 rows from `r1_offset` (at most `r1_limit` ≤ 5000); with `date`
 * only that day's statement (a day without records carries the previous close over), 503 while
 * that day is not generated, 404 when the trader has no statement on or before it.
 */
export const traderStatements: Handler = async ({ req, services }) => {
  const address = addressOf(req);
  const p = pageQuery(req, 500);
  const r1p = r1PageOf(req, false);
  const date = dateOf(req);
  const st = services.statements;
  let items: StatementDoc[];
  let total: number;
  if (date !== null) {
    const a = st.availability(date);
    if (!a.generated) return notGenerated(date, a.dueAtMs, services.clock.now());
    const one = await st.statementOn(address, date);
    if (!one) throw errors.notFound(`${address} has no statement on ${date}: no record of it on or before that day`);
    items = p.offset === 0 ? [one] : [];
    total = 1;
  } else ({ items, total } = await st.list(address, p));
  let hasMoreR1 = false;
  const statements = await Promise.all(
    items.map(async (s) => {
      const { rows, total: rowsTotal } = s.carried ? { rows: [], total: 0 } : await st.r1(address, s.date, r1p);
      const more = r1p.offset + rows.length < rowsTotal;
      hasMoreR1 ||= more;
      return { ...statementView(s), r1: rows.map(r1View), has_more_r1: more };
    }),
  );
  return {
    status: 200,
    body: {
      ...page('statements', statements, total, p),
      has_more_r1: hasMoreR1,
      trader: address,
      generated_through: st.generatedThrough(),
    },
  };
};

/**
 * GET /v2/trade/traders/{address}/statements/r1: R1 rows (`r1_limit` ≤ 5000, `r1_offset`; `limit`
 * and `offset` are accepted as the same) of the statement of `date`, or of every statement oldest
 * first; 503 while `date` is not generated.
 */
export const traderStatementR1: Handler = async ({ req, services }) => {
  const address = addressOf(req);
  const r1p = r1PageOf(req, true);
  const date = dateOf(req);
  const st = services.statements;
  if (date !== null) {
    const a = st.availability(date);
    if (!a.generated) return notGenerated(date, a.dueAtMs, services.clock.now());
  }
  const { rows, total } = await st.r1(address, date, r1p);
  return {
    status: 200,
    body: {
      trader: address,
      date,
      ...page('rows', rows.map(r1View), total, r1p),
      has_more_r1: r1p.offset + rows.length < total,
    },
  };
};
