/**
 * Daily statements: one per trader per closed UTC day on which the trader has a record, built from
 * the trade history's records alone (`traderFills` and `cashMoves` in chain order,
 * engine/data/records.ts) by a job of the scheduler that runs after each day closes, and stored
 * with their R1 rows (the dispositions of the FIFO lot engine, engine/data/lots.ts). Spec 4.6, 4.7,
 * 7 (503 while not generated), 8 (R1 rows ≤ 5000 a page).
 *
 * What a statement says, all in dollars (pUSD), exact decimals:
 * - **balance** = pUSD cash + the trader's open positions at cost (FIFO lots; the reference's
 *   statements carry open positions beside cash, and at cost the balance moves by realized results
 *   and flows only, never by a price). Cash is what the records moved: a BUY fill pays notional +
 *   fee, a SELL fill receives notional − fee, a cash movement moves `pusdDelta`.
 * - **fees** are expensed on their own line: the lots of a statement are fed its fills without
 *   fees, so R1 proceeds and cost bases, and the realized PnL they add up to, are before fees (as
 *   in the positions read and the leaderboard: the lot engine holds no fee).
 * - **flows** ({@link netFlows}): deposits (credits) − withdrawals + refunds of failed withdrawals
 *   + other cash (combo and copytrade cash) + the cost basis of shares disposed of beyond the
 *   recorded lots (acquired before the records: their cost basis is taken as their proceeds, so they
 *   realize nothing, and they enter the balance at that value, as shares brought in). Splits, merges
 *   and redeems are not flows: a split buys lots (cash → cost), a merge or a redeem disposes of them
 *   (its proceeds realize a gain or loss).
 *
 * Then, exactly: opening balance + flows + realized PnL − fees = closing balance, and realized PnL =
 * Σ of the R1 rows' gains; the closing state of a day is the opening state of the trader's next one.
 */

import type { Decimal } from 'decimal.js';
import type { Clock } from '../clock.js';
import { dec, ONE, str, ZERO } from '../decimal.js';
import type { Logger } from '../logger.js';
import type { TimerService } from '../scheduler/timers.js';
import type { Collection, Sort, Store, UnitOfWork } from '../store/port.js';
import type { VenuePort } from '../venue/port.js';
import {
  chainOrder,
  LotBook,
  recordedPrices,
  type DisposalKind,
  type Disposition,
  type LotEvent,
  type PriceOf,
} from './lots.js';
import { CASH_MOVES, HISTORY_INDEXES, TRADER_FILLS, type CashMove, type TraderFill } from './records.js';

/** Collections: the statements, their R1 rows, and the job's progress. */
export const STATEMENTS = 'statements';
export const STATEMENT_R1 = 'statementR1';
export const STATEMENT_RUNS = 'statementRuns';

/** Name of the scheduler job that generates statements. */
export const STATEMENTS_JOB = 'data.statements';

/** How long after a UTC day closes its statements are generated (ms): the last block's records land first. */
export const STATEMENT_GRACE_MS = 60_000;

const DAY_SEC = 86_400;
/** Disposals held longer than this many days are long-term. */
export const LONG_TERM_DAYS = 365;
/**
 * The job shares the event loop with the API: it reads a day in windows of this many seconds of
 * history, hands the loop back every {@link YIELD_EVERY} records, and writes at most
 * {@link WRITE_BATCH} documents per transaction, so that no step of it holds a request up for long
 * (the store's calls return at once on SQLite, and awaiting them lets no request in).
 */
const WINDOW_SEC = 300;
const YIELD_EVERY = 256;
const WRITE_BATCH = 500;

/** Lets the event loop run what waits (requests, timers) before going on. */
const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/** One open lot as a statement carries it into the next day. Decimal strings (shares, dollars). */
export interface StoredLot {
  conditionId: string;
  tokenId: string;
  outcome: string;
  shares: string;
  /** Cost of the shares still held, dollars (fees excluded, see the module header). */
  cost: string;
  acquired: LotEvent;
}

/** A trader's ledger at a day's close: cash and open lots (FIFO order per token). */
export interface LedgerState {
  /** pUSD, dollars (negative when the records start mid-life, e.g. loaded history). */
  cash: string;
  lots: StoredLot[];
}

/** A stored statement (collection `statements`, `_id` = `<address>:<date>`). Dollars as decimal strings. */
export interface StatementDoc {
  _id: string;
  address: string;
  /** The UTC day, `YYYY-MM-DD`. */
  date: string;
  openingCash: string;
  openingPositionsCost: string;
  closingCash: string;
  closingPositionsCost: string;
  /** Σ credits. */
  deposits: string;
  /** Σ withdrawals (positive). */
  withdrawals: string;
  /** Σ refunds of failed withdrawals. */
  withdrawalRefunds: string;
  /** Σ other cash: combo and copytrade (signed). */
  otherFlows: string;
  /**
   * Σ cost basis of the R1 rows without an acquisition (shares disposed of beyond the recorded lots:
   * their proceeds), a flow. Absent on a statement stored before it existed: "0".
   */
  unrecordedCost?: string;
  /** Σ R1 gains (before fees). */
  realizedPnl: string;
  /** Σ R1 proceeds. */
  proceeds: string;
  /** Σ R1 cost bases. */
  costBasis: string;
  /** Σ fees of the day's fills. */
  fees: string;
  /** Σ pUSD received from redeems. */
  redemptions: string;
  /** Σ notional of the day's fills. */
  volume: string;
  tradeCount: number;
  r1Count: number;
  /** The ledger at the close (the next day's opening). */
  closing: LedgerState;
  /** Set on a day without records of the trader (derived on read, never stored): see {@link idleStatement}. */
  carried?: true;
}

/** One R1 row (collection `statementR1`, `_id` = `<address>:<date>:<seq>`): a disposition. */
export interface StatementR1Doc {
  _id: string;
  address: string;
  date: string;
  /** Position in the statement, from 0, in chain order. */
  seq: number;
  conditionId: string;
  tokenId: string;
  outcome: string;
  kind: DisposalKind;
  shares: string;
  proceeds: string;
  costBasis: string;
  gain: string;
  /** Null when the shares were not acquired in the records (cost basis = proceeds, no gain). */
  acquired: LotEvent | null;
  disposed: LotEvent;
}

/** Progress of the job (collection `statementRuns`, one document). */
interface RunDoc {
  _id: string;
  /** Every closed day up to this one (`YYYY-MM-DD`) is generated. */
  through: string;
}

const RUN_ID = 'daily';

/** Indexes of the statement collections. */
export const STATEMENT_INDEXES = {
  [STATEMENTS]: [{ fields: ['address', 'date'] }],
  [STATEMENT_R1]: [{ fields: ['address', 'date', 'seq'] }],
};

const DAY_RE = /^\d{4}-\d{2}-\d{2}$/;

/** Whether `s` is a real calendar day written `YYYY-MM-DD`. */
export function isDay(s: string): boolean {
  return DAY_RE.test(s) && !Number.isNaN(Date.parse(`${s}T00:00:00Z`)) && dayOfSec(dayStartSec(s)) === s;
}

/** The UTC day (`YYYY-MM-DD`) of `sec` (epoch seconds). */
export function dayOfSec(sec: number): string {
  return new Date(sec * 1000).toISOString().slice(0, 10);
}

/** Epoch seconds of the start (00:00 UTC) of `day`. */
export function dayStartSec(day: string): number {
  return Date.parse(`${day}T00:00:00Z`) / 1000;
}

/** The day after `day`. */
export function nextDay(day: string): string {
  return dayOfSec(dayStartSec(day) + DAY_SEC);
}

/** When the statements of `day` are due (epoch ms): its close plus {@link STATEMENT_GRACE_MS}. */
export function statementDueMs(day: string): number {
  return (dayStartSec(day) + DAY_SEC) * 1000 + STATEMENT_GRACE_MS;
}

/** The last day whose statements are due at `nowMs` (epoch ms). */
export function lastDueDay(nowMs: number): string {
  return dayOfSec(Math.floor((nowMs - STATEMENT_GRACE_MS) / 1000) - DAY_SEC);
}

/** The flow fields of a statement. */
type FlowFields = Pick<
  StatementDoc,
  'deposits' | 'withdrawals' | 'withdrawalRefunds' | 'otherFlows' | 'unrecordedCost'
>;

/**
 * Flows of a statement, dollars: deposits − withdrawals + withdrawal refunds + other flows (what
 * moved pUSD in or out of the account without buying or selling positions) + the cost basis of
 * shares disposed of beyond the recorded lots (brought in from before the records).
 */
export function netFlows(s: FlowFields): Decimal {
  return dec(s.deposits)
    .minus(dec(s.withdrawals))
    .plus(dec(s.withdrawalRefunds))
    .plus(dec(s.otherFlows))
    .plus(dec(s.unrecordedCost ?? '0'));
}

/**
 * opening balance + flows + realized PnL − fees − closing balance, dollars: zero for every
 * statement (the reconciliation the statement shows).
 */
export function residual(s: StatementDoc): Decimal {
  return dec(s.openingCash)
    .plus(dec(s.openingPositionsCost))
    .plus(netFlows(s))
    .plus(dec(s.realizedPnl))
    .minus(dec(s.fees))
    .minus(dec(s.closingCash))
    .minus(dec(s.closingPositionsCost));
}

/** An open position of a statement: a token's shares and cost (dollars). */
export interface OpenPosition<N> {
  conditionId: string;
  tokenId: string;
  outcome: string;
  shares: N;
  cost: N;
}

/**
 * Open lots of `state` as a statement shows them: per token (first-acquisition order) its shares
 * and cost, dollars.
 */
export function positionsOf(state: LedgerState): OpenPosition<string>[] {
  const byToken = new Map<string, OpenPosition<Decimal>>();
  for (const l of state.lots) {
    const p = byToken.get(l.tokenId) ?? { ...l, shares: ZERO, cost: ZERO };
    p.shares = p.shares.plus(dec(l.shares));
    p.cost = p.cost.plus(dec(l.cost));
    byToken.set(l.tokenId, p);
  }
  return [...byToken.values()].map((p) => ({ ...p, shares: str(p.shares), cost: str(p.cost) }));
}

/**
 * The statement of a day without records of the trader: the ledger carried over from `previous`
 * (its closing), nothing moved. Not stored: derived on read.
 */
export function idleStatement(previous: StatementDoc, date: string): StatementDoc {
  const cost = previous.closingPositionsCost;
  return {
    _id: `${previous.address}:${date}`,
    address: previous.address,
    date,
    openingCash: previous.closingCash,
    openingPositionsCost: cost,
    closingCash: previous.closingCash,
    closingPositionsCost: cost,
    deposits: '0',
    withdrawals: '0',
    withdrawalRefunds: '0',
    otherFlows: '0',
    unrecordedCost: '0',
    realizedPnl: '0',
    proceeds: '0',
    costBasis: '0',
    fees: '0',
    redemptions: '0',
    volume: '0',
    tradeCount: 0,
    r1Count: 0,
    closing: previous.closing,
    carried: true,
  };
}

/**
 * A synthetic BUY that recreates an open lot in a {@link LotBook} (no fee: its cost is the lot's
 * cost exactly, its acquisition the lot's).
 */
function lotAsFill(address: string, lot: StoredLot): TraderFill {
  return {
    _id: '',
    tradeId: '',
    address,
    userId: null,
    orderId: null,
    role: 'taker',
    atMs: lot.acquired.atMs,
    conditionId: lot.conditionId,
    tokenId: lot.tokenId,
    outcome: lot.outcome,
    side: 'BUY',
    price: '0',
    size: lot.shares,
    notionalUsd: lot.cost,
    feeUsd: '0',
    source: 'history',
    blockTimestamp: lot.acquired.blockTimestamp,
    logIndex: lot.acquired.logIndex,
    transactionHash: lot.acquired.transactionHash,
  };
}

/**
 * Builds one trader's statement of one day (pure): start from the previous close, {@link apply} the
 * day's records in chain order, then {@link finish}.
 */
export class DayStatement {
  private readonly book = new LotBook();
  private cash: Decimal;
  private readonly openingCash: Decimal;
  private readonly openingCost: Decimal;
  private readonly dispositions: Disposition[] = [];
  private deposits = ZERO;
  private withdrawals = ZERO;
  private refunds = ZERO;
  private other = ZERO;
  private unrecorded = ZERO;
  private fees = ZERO;
  private redemptions = ZERO;
  private volume = ZERO;
  private trades = 0;
  private realized = ZERO;
  private proceeds = ZERO;
  private basis = ZERO;

  /**
   * @param opening - the ledger at the close of the trader's previous statement; null for a first one.
   */
  constructor(
    readonly address: string,
    readonly date: string,
    opening: LedgerState | null,
  ) {
    this.cash = this.openingCash = dec(opening?.cash ?? '0');
    let cost = ZERO;
    for (const lot of opening?.lots ?? []) {
      this.book.applyFill(lotAsFill(address, lot));
      cost = cost.plus(dec(lot.cost));
    }
    this.openingCost = cost;
  }

  /**
   * Applies one record of the trader (the day's records in chain order, each once).
   * @param priceOf - for a cash movement with shares: its outcomes' prices (a redeem: 1 for the
   *   winner, 0 for the others), sharing its dollars among them; absent: shared by shares.
   * @throws {Error} when a quantity is not a decimal string.
   */
  apply(r: TraderFill | CashMove, priceOf?: PriceOf): void {
    if ('kind' in r) {
      const delta = dec(r.pusdDelta);
      this.cash = this.cash.plus(delta);
      if (r.kind === 'credit') this.deposits = this.deposits.plus(delta);
      else if (r.kind === 'withdraw') this.withdrawals = this.withdrawals.minus(delta);
      else if (r.kind === 'withdraw_refund') this.refunds = this.refunds.plus(delta);
      else if (r.kind === 'redeem') this.redemptions = this.redemptions.plus(delta);
      else if (r.kind !== 'split' && r.kind !== 'merge') this.other = this.other.plus(delta);
      this.dispose(this.book.applyCashMove(r, priceOf));
      return;
    }
    const notional = dec(r.notionalUsd);
    const fee = dec(r.feeUsd);
    this.cash = r.side === 'BUY' ? this.cash.minus(notional).minus(fee) : this.cash.plus(notional).minus(fee);
    this.fees = this.fees.plus(fee);
    this.volume = this.volume.plus(notional);
    this.trades++;
    this.dispose(this.book.applyFill(r));
  }

  private dispose(ds: Disposition[]): void {
    for (const d of ds) {
      this.dispositions.push(d);
      this.realized = this.realized.plus(d.gain);
      this.proceeds = this.proceeds.plus(d.proceeds);
      this.basis = this.basis.plus(d.costBasis);
      if (d.acquired === null) this.unrecorded = this.unrecorded.plus(d.costBasis);
    }
  }

  /** How many R1 rows the statement has. */
  get rowCount(): number {
    return this.dispositions.length;
  }

  /** R1 rows `from` … `from + count − 1` (seq order, which is chain order). */
  rows(from: number, count: number): StatementR1Doc[] {
    return this.dispositions.slice(from, from + count).map((d, i): StatementR1Doc => {
      const seq = from + i;
      return {
        _id: r1Id(this.address, this.date, seq),
        address: this.address,
        date: this.date,
        seq,
        conditionId: d.conditionId,
        tokenId: d.tokenId,
        outcome: d.outcome,
        kind: d.kind,
        shares: str(d.shares),
        proceeds: str(d.proceeds),
        costBasis: str(d.costBasis),
        gain: str(d.gain),
        acquired: d.acquired,
        disposed: d.disposed,
      };
    });
  }

  /** The statement (its R1 rows: {@link rows}). */
  finish(): StatementDoc {
    const lots: StoredLot[] = [];
    let cost = ZERO;
    for (const p of this.book.positions(this.address))
      for (const l of p.lots()) {
        lots.push({
          conditionId: p.conditionId,
          tokenId: p.tokenId,
          outcome: p.outcome,
          shares: str(l.shares),
          cost: str(l.cost),
          acquired: l.acquired,
        });
        cost = cost.plus(l.cost);
      }
    const statement: StatementDoc = {
      _id: `${this.address}:${this.date}`,
      address: this.address,
      date: this.date,
      openingCash: str(this.openingCash),
      openingPositionsCost: str(this.openingCost),
      closingCash: str(this.cash),
      closingPositionsCost: str(cost),
      deposits: str(this.deposits),
      withdrawals: str(this.withdrawals),
      withdrawalRefunds: str(this.refunds),
      otherFlows: str(this.other),
      unrecordedCost: str(this.unrecorded),
      realizedPnl: str(this.realized),
      proceeds: str(this.proceeds),
      costBasis: str(this.basis),
      fees: str(this.fees),
      redemptions: str(this.redemptions),
      volume: str(this.volume),
      tradeCount: this.trades,
      r1Count: this.dispositions.length,
      closing: { cash: str(this.cash), lots },
    };
    return statement;
  }
}

function r1Id(address: string, date: string, seq: number): string {
  return `${address}:${date}:${String(seq).padStart(9, '0')}`;
}

/**
 * Writes queued in transactions of about `size` documents each, in the order queued; the event loop
 * runs between two transactions.
 */
class BatchWriter {
  private ops: ((tx: UnitOfWork) => Promise<unknown>)[] = [];
  private docs = 0;

  constructor(
    private readonly store: Store,
    private readonly size: number,
  ) {}

  /** Queues `op` (writing `docs` documents); commits the queue once it holds `size` documents. */
  async add(docs: number, op: (tx: UnitOfWork) => Promise<unknown>): Promise<void> {
    this.ops.push(op);
    this.docs += docs;
    if (this.docs >= this.size) await this.flush();
  }

  /** Commits what is queued, in one transaction. */
  async flush(): Promise<void> {
    if (this.ops.length === 0) return;
    const ops = this.ops;
    this.ops = [];
    this.docs = 0;
    await this.store.transaction(async (tx) => {
      for (const op of ops) await op(tx);
    });
    await yieldToLoop();
  }
}

/** Prices of a cash movement's outcomes for {@link DayStatement.apply}, when known. */
export type MovePrices = (move: CashMove) => PriceOf | undefined;

/**
 * A redeem's outcome prices once its market resolved on `venue`: 1 for the winner, 0 for the others
 * (the winner's shares receive the dollars, the others' realize their cost as a loss); a split's or a
 * merge's: the marks it was recorded with ({@link recordedPrices}). Other movements, and those recorded
 * without marks: none (their dollars are shared by shares).
 */
export function resolvedPrices(venue: Pick<VenuePort, 'marketStatus'>): MovePrices {
  return (move) => {
    if (move.kind !== 'redeem') return recordedPrices(move);
    if (move.conditionId === null) return undefined;
    const status = venue.marketStatus(move.conditionId);
    if (!status?.resolved) return undefined;
    return (tokenId) => (tokenId === status.winningTokenId ? ONE : ZERO);
  };
}

/** A page of a read: rows to skip and at most how many. */
export interface PageWindow {
  limit: number;
  offset: number;
}

/** The part of the scheduler statements use (TimerService). */
export type JobScheduler = Pick<TimerService, 'defineJob' | 'scheduleJob'>;

/** Whether the statement of a day is there, and when it is due. */
export interface StatementAvailability {
  generated: boolean;
  /** When the job generates it (epoch ms; in the past while the job is late or running). */
  dueAtMs: number;
}

/**
 * The statements: generation by the scheduler job {@link STATEMENTS_JOB} and the reads of the API.
 * The job runs at start (catching up every closed day the service was down for) and then after
 * each UTC day closes ({@link statementDueMs}); a day is generated once all days before it are, and
 * generating one again writes the same statements and rows (idempotent: a run interrupted by a
 * crash is run again).
 */
export class StatementService {
  /** Every closed day up to this one is generated; null before the first run. */
  private through: string | null;
  /** Set by {@link stop}. */
  private stopping = false;

  private constructor(
    private readonly store: Store,
    private readonly statements: Collection<StatementDoc>,
    private readonly rows: Collection<StatementR1Doc>,
    private readonly runs: Collection<RunDoc>,
    private readonly fills: Collection<TraderFill>,
    private readonly cash: Collection<CashMove>,
    private readonly timers: JobScheduler,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly prices: MovePrices,
    through: string | null,
  ) {
    this.through = through;
    timers.defineJob(STATEMENTS_JOB, () => this.runJob());
  }

  /**
   * Opens the collections (the history's with {@link HISTORY_INDEXES}) and defines the job (before
   * the scheduler starts; {@link start} arms it).
   * @param prices - outcome prices of a cash movement (a redeem's resolved 1 and 0), see {@link MovePrices}.
   */
  static async open(
    store: Store,
    timers: JobScheduler,
    clock: Clock,
    log: Logger,
    prices: MovePrices,
  ): Promise<StatementService> {
    const runs = await store.collection<RunDoc>(STATEMENT_RUNS);
    return new StatementService(
      store,
      await store.collection<StatementDoc>(STATEMENTS, STATEMENT_INDEXES[STATEMENTS]),
      await store.collection<StatementR1Doc>(STATEMENT_R1, STATEMENT_INDEXES[STATEMENT_R1]),
      runs,
      await store.collection<TraderFill>(TRADER_FILLS, HISTORY_INDEXES[TRADER_FILLS]),
      await store.collection<CashMove>(CASH_MOVES, HISTORY_INDEXES[CASH_MOVES]),
      timers,
      clock,
      log,
      prices,
      (await runs.findOne({ _id: RUN_ID }))?.through ?? null,
    );
  }

  /** Arms the job now: it catches up the closed days not generated yet, then arms its next run. */
  async start(): Promise<void> {
    await this.timers.scheduleJob(STATEMENTS_JOB, this.clock.now());
  }

  /** One run of the job: {@link runDue}, then the next run at the next day's due time. */
  private async runJob(): Promise<void> {
    await this.runDue();
    if (this.stopping) return;
    await this.timers.scheduleJob(STATEMENTS_JOB, statementDueMs(nextDay(lastDueDay(this.clock.now()))));
  }

  /** The last day generated, or null before the first run. */
  generatedThrough(): string | null {
    return this.through;
  }

  /** Whether the statements of `day` are generated, and when they are due. */
  availability(day: string): StatementAvailability {
    return { generated: this.through !== null && day <= this.through, dueAtMs: statementDueMs(day) };
  }

  /**
   * Generates the statements of every day due by now (see {@link lastDueDay}) and not generated
   * yet, skipping days without records, oldest first; the progress is stored after each day.
   * @returns the last day generated (null when there is none).
   */
  async runDue(): Promise<string | null> {
    const target = lastDueDay(this.clock.now());
    if (this.through !== null && this.through >= target) return this.through;
    let day: string | null = this.through === null ? await this.recordDayFrom(0) : nextDay(this.through);
    while (day !== null && day <= target) {
      const next = await this.recordDayFrom(dayStartSec(day));
      if (next === null || next > target) break;
      const traders = await this.generateDay(next);
      if (traders === null) return this.through;
      this.log.info({ date: next, traders }, 'statements generated');
      await this.setThrough(next);
      day = nextDay(next);
    }
    await this.setThrough(target);
    return this.through;
  }

  /**
   * Stops a run under way at the next window or day (the service is shutting down: the scheduler
   * drains its running jobs); the next start catches up from where it stopped.
   */
  stop(): void {
    this.stopping = true;
  }

  /** The day of the first record at or after `sec` (epoch seconds), or null. */
  private async recordDayFrom(sec: number): Promise<string | null> {
    const first = await this.firstRecordSec(sec);
    return first === null ? null : dayOfSec(first);
  }

  /** The block time (epoch seconds) of the first record at or after `sec`, or null. */
  private async firstRecordSec(sec: number): Promise<number | null> {
    const options = { sort: { blockTimestamp: 1, logIndex: 1 } as const, limit: 1 };
    const [f] = await this.fills.find({ blockTimestamp: { $gte: sec } }, options);
    const [c] = await this.cash.find({ blockTimestamp: { $gte: sec } }, options);
    const first = Math.min(f?.blockTimestamp ?? Infinity, c?.blockTimestamp ?? Infinity);
    return first === Infinity ? null : first;
  }

  private async setThrough(day: string): Promise<void> {
    if (this.through !== null && this.through >= day) return;
    await this.runs.replaceOne({ _id: RUN_ID, through: day });
    this.through = day;
  }

  /**
   * Generates (again) the statements of `day` of every trader with a record that day, from the
   * previous statement of each; written in transactions of about {@link WRITE_BATCH} documents, a
   * trader's R1 rows before its statement.
   * @returns how many traders had records; null when {@link stop} interrupted it (nothing or part written:
   *   the day is generated again).
   */
  async generateDay(day: string): Promise<number | null> {
    const start = dayStartSec(day);
    const builders = new Map<string, DayStatement>();
    for (let from = start; from < start + DAY_SEC; from += WINDOW_SEC) {
      if (this.stopping) return null;
      await yieldToLoop();
      // a stretch without records is skipped, not read window by window
      const next = await this.firstRecordSec(from);
      if (next === null || next >= start + DAY_SEC) break;
      from = next;
      const range = { blockTimestamp: { $gte: from, $lt: from + WINDOW_SEC } };
      const sort = { sort: { blockTimestamp: 1, logIndex: 1 } as const };
      const fills = await this.fills.find(range, sort);
      const cash = await this.cash.find(range, sort);
      for (const [i, r] of chainOrder({ fills, cash }).entries()) {
        if (i % YIELD_EVERY === YIELD_EVERY - 1) await yieldToLoop();
        let b = builders.get(r.address);
        if (!b) {
          const [previous] = await this.statements.find(
            { address: r.address, date: { $lt: day } },
            { sort: { date: -1 }, limit: 1 },
          );
          b = new DayStatement(r.address, day, previous?.closing ?? null);
          builders.set(r.address, b);
        }
        b.apply(r, 'kind' in r ? this.prices(r) : undefined);
      }
    }
    // written in few transactions (a commit is a sync on disk), none of more than WRITE_BATCH documents;
    // a trader's rows before its statement (a stored statement has all its rows)
    const writes = new BatchWriter(this.store, WRITE_BATCH);
    for (const b of builders.values()) {
      const statement = b.finish();
      await writes.add(1, (tx) =>
        tx.collection<StatementR1Doc>(STATEMENT_R1).deleteMany({ address: b.address, date: day }),
      );
      for (let from = 0; from < b.rowCount; from += WRITE_BATCH) {
        const rows = b.rows(from, WRITE_BATCH);
        await writes.add(rows.length, async (tx) => {
          const c = tx.collection<StatementR1Doc>(STATEMENT_R1);
          if (c.insertMany) await c.insertMany(rows);
          else for (const row of rows) await c.insertOne(row);
        });
      }
      await writes.add(1, (tx) => tx.collection<StatementDoc>(STATEMENTS).replaceOne(statement));
    }
    await writes.flush();
    return builders.size;
  }

  /**
   * A trader's statements, newest first.
   * @returns the page and the total.
   */
  async list(address: string, page: PageWindow): Promise<{ items: StatementDoc[]; total: number }> {
    const items = await this.statements.find({ address }, { sort: { date: -1 }, skip: page.offset, limit: page.limit });
    return { items, total: await this.statements.count({ address }) };
  }

  /**
   * The statement of `address` on `day` (a generated day): the stored one, or, on a day without
   * records of the trader, its previous one carried over ({@link idleStatement}); null when the
   * trader has no statement on or before `day`.
   */
  async statementOn(address: string, day: string): Promise<StatementDoc | null> {
    const [latest] = await this.statements.find({ address, date: { $lte: day } }, { sort: { date: -1 }, limit: 1 });
    if (!latest) return null;
    return latest.date === day ? latest : idleStatement(latest, day);
  }

  /**
   * R1 rows of `address`: of the statement of `day`, or of every statement (oldest first) when
   * `day` is null; each statement's in chain order.
   * @returns the page and the total.
   */
  async r1(address: string, day: string | null, page: PageWindow): Promise<{ rows: StatementR1Doc[]; total: number }> {
    const filter = day === null ? { address } : { address, date: day };
    const sort: Sort = day === null ? { date: 1, seq: 1 } : { seq: 1 };
    const rows = await this.rows.find(filter, { sort, skip: page.offset, limit: page.limit });
    return { rows, total: await this.rows.count(filter) };
  }
}
