/**
 * Every trader's aggregates, kept up to date as the trade history's records land (fed by a
 * {@link TradeHistoryFeed}: {@link Portfolio.open} replays the history, then follows committed
 * batches): FIFO positions ({@link LotBook}), realized PnL, volume, trade count, fees, wins and losses,
 * per-category figures, and hourly buckets that slide the 1d / 7d / 30d windows forward, so a
 * leaderboard or a trader's figures never scan the history.
 *
 * Definitions (the API documents the same):
 * - realized PnL: Σ gains of the dispositions (proceeds − FIFO cost basis, before fees: fees are
 *   expensed, {@link LotBook}), the statements' definition; shares sold beyond the recorded lots
 *   realize nothing (their cost basis is taken as their proceeds);
 * - fees: Σ fees of the fills;
 * - unrealized PnL: open lots at the current mark ({@link venueMark}) − their cost;
 * - a trade: one fill of the trader; volume: Σ notional of its fills (splits, merges and redeems are
 *   not volume);
 * - a win (loss): a closed position (its last shares disposed of: a sell fill, a merge, a redeem) whose
 *   realized PnL since it opened is positive (negative); the win rate is wins / closed positions (those
 *   closed at zero included), the reference's "fraction of closed positions with positive realized PnL";
 * - over a finite window, PnL is the change of marked equity net of flows: trading cash in the
 *   window (fills, splits, merges, redeems, combo cash) + positions now at today's marks − positions at
 *   the window's start at the marks then (the tape's last price before the start); over `all` it is
 *   the realized PnL net of fees (realized − fees). A combo is a position of one unit held at its
 *   cost ({@link withComboShare}): realized when it pays out or loses, in no positions list or win
 *   rate. Windows are whole hours: a window of N hours holds the current hour and the N hours before
 *   it (`blockTimestamp` of the records);
 * - flows: the initial credit, withdrawals and their refunds, copytrade transfers (they move cash in or
 *   out without being PnL).
 * - category: the market's tag from {@link PortfolioFacts}, else the leading word of its event's slug (else
 *   of its slug), else `other`.
 */

import type { Decimal } from 'decimal.js';
import type { Clock } from '../clock.js';
import { Dec, dec, ONE, ZERO } from '../decimal.js';
import type { VenuePort } from '../venue/port.js';
import type { MarketRegistry } from './markets.js';
import {
  chainOrder,
  LotBook,
  type Disposition,
  type Lot,
  type LotEvent,
  type PositionLots,
  type PriceOf,
  recordedPrices,
} from './lots.js';
import {
  LIQUIDITY_PROVIDER_ADDRESS,
  type CashMove,
  type CashMoveKind,
  type RecordedBatch,
  type TapeTrade,
  type TradeHistoryFeed,
  type TraderFill,
} from './records.js';

/** Ranking windows (spec 4.6). */
export type Window = '1d' | '7d' | '30d' | 'all';
export const WINDOWS: readonly Window[] = ['1d', '7d', '30d', 'all'];
type FiniteWindow = Exclude<Window, 'all'>;
/** Hours of each finite window. */
export const WINDOW_HOURS: Record<FiniteWindow, number> = { '1d': 24, '7d': 7 * 24, '30d': 30 * 24 };
const HOUR_S = 3600;
const DAY_S = 24 * HOUR_S;

/** Cash movements that move money in or out of a wallet without being PnL. */
const FLOW_KINDS: ReadonlySet<CashMoveKind> = new Set(['credit', 'withdraw', 'withdraw_refund', 'copytrade']);

/** Prefix of the token a combo is held as in the aggregates' lots: `combo:<combo id>`. */
const COMBO_TOKEN = 'combo:';

/** Whether `tokenId` is a combo's ({@link withComboShare}), not a market's. */
function isComboToken(tokenId: string): boolean {
  return tokenId.startsWith(COMBO_TOKEN);
}

/** The share a combo's cash movement moves: its buy acquires it, its payout or its loss disposes of it. */
const COMBO_SHARE: Partial<Record<CashMoveKind, string>> = { combo_debit: '1', combo_payout: '-1', combo_loss: '-1' };

/**
 * `c` with the share of its combo when it is a combo's buy, payout or loss (stored without shares: a
 * combo has no market token): one unit of `combo:<combo id>`, bought for the debit and disposed of for
 * the payout (nothing for a loss), so a combo is a position held at its cost until it pays out or
 * loses, and its gain or loss is realized then, as a market position's is.
 */
function withComboShare(c: CashMove): CashMove {
  const delta = COMBO_SHARE[c.kind];
  if (delta === undefined || c.shares.length > 0 || c.conditionId === null) return c;
  return { ...c, shares: [{ tokenId: COMBO_TOKEN + c.conditionId, outcome: 'combo', delta }] };
}

/** What the aggregates need to know of a token's market (display, category, resolution). */
export interface TokenFacts {
  conditionId: string;
  question: string;
  slug: string;
  /** The slug of the market's event, when known. */
  eventSlug?: string | null;
  outcome: string;
  /** The market's tag when the registry has one. */
  tag?: string | null;
  /** Whether the market resolved. */
  resolved: boolean;
  /** Whether this token won (null until resolved). */
  winner: boolean | null;
}

/** The markets' facts and current marks (see {@link portfolioFacts}). */
export interface PortfolioFacts {
  /** Facts of `tokenId`, or undefined when no registry knows it. */
  token(tokenId: string): TokenFacts | undefined;
  /** The current mark of `tokenId` (decimal probability), or null when it has none. */
  mark(tokenId: string): Decimal | null;
}

/**
 * The mark of `tokenId` on the venue, decimal probability: 1 or 0 once its market resolved (winner
 * or not), else the mid of its best bid and ask, else its last trade print, else the one side quoted;
 * null when it has no price at all.
 */
export function venueMark(venue: VenuePort, tokenId: string): Decimal | null {
  const info = venue.token(tokenId);
  const status = info ? venue.marketStatus(info.conditionId) : undefined;
  if (status?.resolved) return status.winningTokenId === tokenId ? ONE : ZERO;
  const { bid, ask } = venue.touch(tokenId);
  if (bid && ask) return bid.plus(ask).div(2);
  const last = venue.book(tokenId, 1)?.lastTradePrice;
  return last !== undefined ? dec(last) : (bid ?? ask ?? null);
}

/**
 * {@link PortfolioFacts} from the market registry (question, slug, event slug and outcome of the venue's
 * markets and of the loaded history's), the venue's resolutions and its marks.
 */
export function portfolioFacts(
  venue: VenuePort,
  registry: Pick<MarketRegistry, 'tokenOf' | 'marketOf'>,
): PortfolioFacts {
  return {
    token(tokenId) {
      const t = registry.tokenOf(tokenId);
      if (!t) return undefined;
      const m = registry.marketOf(t.conditionId);
      const status = venue.marketStatus(t.conditionId);
      const resolved = status?.resolved ?? false;
      return {
        conditionId: t.conditionId,
        question: m?.question ?? '',
        slug: m?.slug ?? '',
        eventSlug: m?.eventSlug ?? null,
        outcome: t.outcome,
        resolved,
        winner: resolved ? status?.winningTokenId === tokenId : null,
      };
    },
    mark: (tokenId) => venueMark(venue, tokenId),
  };
}

/**
 * The category of a market: its tag, else the leading word of its event's slug (else of its own slug),
 * lower-case, else `other`.
 */
export function categoryOf(facts: Pick<TokenFacts, 'tag' | 'slug' | 'eventSlug'> | undefined): string {
  if (facts?.tag) return facts.tag;
  const word = /^[a-z0-9]+/i.exec(facts?.eventSlug || facts?.slug || '')?.[0];
  return word ? word.toLowerCase() : 'other';
}

/** `mine` plus (`sign` 1) or minus (−1) `theirs`; `mine` itself when `theirs` is zero (no new Decimal). */
function moved(mine: Decimal, theirs: Decimal, sign: 1 | -1): Decimal {
  return theirs.isZero() ? mine : sign === 1 ? mine.plus(theirs) : mine.minus(theirs);
}

/** Running figures of a trader (all time, one category, or one hour / window). */
export class Figures {
  realized: Decimal = ZERO;
  volume: Decimal = ZERO;
  /** Shares traded (Σ fill sizes). */
  shares: Decimal = ZERO;
  fees: Decimal = ZERO;
  trades = 0;
  /** Positions closed with a positive realized PnL since they opened. */
  wins = 0;
  /** … with a negative one. */
  losses = 0;
  /** … at exactly zero (closed positions too: in the win rate's denominator). */
  evens = 0;
  /** Trading cash (fills, splits, merges, redeems, combo cash), dollars. */
  cash: Decimal = ZERO;

  /** Adds (`sign` 1) or removes (−1) `o` (zero figures cost nothing: most records move only a few). */
  add(o: Figures, sign: 1 | -1 = 1): void {
    this.realized = moved(this.realized, o.realized, sign);
    this.volume = moved(this.volume, o.volume, sign);
    this.shares = moved(this.shares, o.shares, sign);
    this.fees = moved(this.fees, o.fees, sign);
    this.cash = moved(this.cash, o.cash, sign);
    this.trades += o.trades * sign;
    this.wins += o.wins * sign;
    this.losses += o.losses * sign;
    this.evens += o.evens * sign;
  }

  /**
   * Whether these figures hold anything: a trade, cash, a realized gain or loss (a combo's loss moves
   * no cash), a closed position. A window's trader with none is not on its board.
   */
  hasActivity(): boolean {
    return (
      this.trades > 0 || this.wins + this.losses + this.evens > 0 || !this.cash.isZero() || !this.realized.isZero()
    );
  }

  /** Closed positions won / closed positions (the reference's win rate), 0 when none was closed. */
  winRate(): Decimal {
    const n = this.wins + this.losses + this.evens;
    return n === 0 ? ZERO : new Dec(this.wins).div(n);
  }
}

/** Figures of one trader in one hour or window, with its share changes per token. */
class Slice extends Figures {
  readonly deltas = new Map<string, Decimal>();

  /** {@link Figures.hasActivity}, or shares changed (a combo bought and still held moves no PnL). */
  override hasActivity(): boolean {
    if (super.hasActivity()) return true;
    for (const d of this.deltas.values()) if (!d.isZero()) return true;
    return false;
  }

  addSlice(o: Slice, sign: 1 | -1): void {
    this.add(o, sign);
    for (const [t, d] of o.deltas) {
      const mine = this.deltas.get(t) ?? ZERO;
      this.deltas.set(t, sign === 1 ? mine.plus(d) : mine.minus(d));
    }
  }
}

/** One trader's aggregates. */
export interface TraderAggregate {
  address: string;
  /** All time. */
  total: Figures;
  /** Deposits, withdrawals and refunds, copytrade transfers: Σ signed pUSD, dollars. */
  flows: Decimal;
  /** Per category, all time. */
  categories: Map<string, Figures>;
  /** Realized PnL by UTC day (days since the epoch, by block time) of the days with a disposition. */
  realizedByDay: Map<number, Decimal>;
  firstAtMs: number;
  lastAtMs: number;
}

/** One trader's figures over a window. */
export interface WindowFigures {
  address: string;
  window: Window;
  /** PnL as defined for the window (module TSDoc). */
  pnl: Decimal;
  figures: Figures;
}

/** A ranked leaderboard row. */
export interface LeaderRow extends WindowFigures {
  /** Competition rank (1, 2, 2, 4). */
  rank: number;
}

/** A sliding window's figures per trader and the first hour it holds. */
interface SlidingWindow {
  hours: number;
  fromHour: number;
  byAddress: Map<string, Slice>;
}

/** Prices of a token from the tape, by hour (the last trade of each hour), hours ascending. */
interface PriceSeries {
  hours: number[];
  prices: Decimal[];
}

/** Version of {@link PortfolioSnapshot}'s layout: a snapshot of another version is ignored. */
export const PORTFOLIO_SNAPSHOT_VERSION = 4;

/**
 * Chain seconds before the latest record applied that a snapshot replays again at start: a record
 * that commits out of chain order (after a later one was applied) is not lost within it. The `_id`s
 * applied in it are kept, so none is applied twice.
 */
export const SNAPSHOT_WINDOW_SECONDS = 300;

/**
 * Least size of the applied `_id`s kept ({@link SNAPSHOT_WINDOW_SECONDS}) at which they are pruned
 * (then at twice what stays): the maps stay near what the window holds, a few thousand entries at a
 * busy tape's rate, instead of growing to a hundred thousand keys, every lookup then a cache miss.
 */
const MIN_PRUNE_AT = 4_096;

/** Kinds of records, as a snapshot's `applied` keys name them: tape trades, trader fills, cash moves. */
type RecordKind = 't' | 'f' | 'c';
/** Every {@link RecordKind}. */
const RECORD_KINDS: readonly RecordKind[] = ['t', 'f', 'c'];
/** The {@link RecordCounts} field of each {@link RecordKind}. */
const COUNT_OF = { t: 'trades', f: 'fills', c: 'cash' } as const;

/** Records of each history collection. */
export interface RecordCounts {
  trades: number;
  fills: number;
  cash: number;
}

/** Figures as decimal strings and counts: realized, volume, shares, fees, cash, trades, wins, losses, evens. */
type FiguresRow = [string, string, string, string, string, number, number, number, number];

/**
 * The aggregates as of a batch boundary, compact (decimal strings), JSON-safe: what {@link Portfolio.snapshot}
 * gives and {@link Portfolio.open} starts from, replaying only the records at or after `fromBlockTimestamp`.
 */
export interface PortfolioSnapshot {
  version: number;
  /** The replay after this snapshot starts here (chain seconds): the window before the latest record applied. */
  fromBlockTimestamp: number;
  /** Records applied before `fromBlockTimestamp`: the stored history must hold as many, else it moved meanwhile. */
  below: RecordCounts;
  /** `<kind>:<_id>` (kind t, f or c) and block timestamp of the records applied at or after `fromBlockTimestamp`. */
  applied: [string, number][];
  /**
   * Every position: address, token, condition, outcome, last event, figures (shares, cost, realized,
   * acquired shares and cost, disposed and uncovered shares, proceeds, fees, uncovered cost, realized
   * since it last opened), open lots (acquisition, shares, cost).
   */
  positions: [string, string, string, string, LotEvent, string[], [LotEvent, string, string][]][];
  /** Every trader: address, all-time figures, flows, per category, realized by day, first and last ms. */
  traders: [string, FiguresRow, string, [string, FiguresRow][], [number, string][], number, number][];
  /** Hourly slices of the 30d window: hour, then per address its figures and share deltas. */
  hourly: [number, [string, FiguresRow, [string, string][]][]][];
  /** Per token, the tape's hourly prices a window may still need: hours, prices. */
  tape: [string, number[], string[]][];
}

const figuresRow = (f: Figures): FiguresRow => [
  f.realized.toString(),
  f.volume.toString(),
  f.shares.toString(),
  f.fees.toString(),
  f.cash.toString(),
  f.trades,
  f.wins,
  f.losses,
  f.evens,
];

function fromRow<F extends Figures>(f: F, r: FiguresRow): F {
  [f.realized, f.volume, f.shares, f.fees, f.cash] = [dec(r[0]), dec(r[1]), dec(r[2]), dec(r[3]), dec(r[4])];
  [f.trades, f.wins, f.losses, f.evens] = [r[5], r[6], r[7], r[8]];
  return f;
}

/**
 * Where {@link Portfolio} keeps its snapshots and how it checks one against the stored history
 * (engine/data/portfolio-snapshots.ts over the store).
 */
export interface SnapshotPort {
  /** The latest snapshot, or null. */
  load(): Promise<PortfolioSnapshot | null>;
  /** Replaces the snapshot. */
  save(snapshot: PortfolioSnapshot): Promise<void>;
  /** Records of each history collection before `blockTimestamp`. */
  countBefore(blockTimestamp: number): Promise<RecordCounts>;
}

/** When {@link Portfolio} writes a snapshot while it runs (and at {@link Portfolio.close}). */
export interface SnapshotOptions {
  port: SnapshotPort;
  /** After this many records applied since the last one. */
  everyRecords?: number;
  /** After this long since the last one (once a record landed), ms. */
  everyMs?: number;
  /** Told of a snapshot that failed to load or save (the aggregates are not affected). */
  onError?: (err: unknown, what: 'load' | 'save') => void;
}

/**
 * A periodic snapshot comes no sooner than this many times the last one's duration (its build and
 * its write) after that one ended: the background work of snapshots stays under 1 % of the time
 * whatever the history's size (at a million trades a snapshot takes tens of seconds, and the reads
 * that run beside it are slower).
 */
export const SNAPSHOT_GAP_PER_DURATION = 100;

/** Records per batch of the history's replay at start (a page of each collection's index walk). */
const REPLAY_BATCH = 5000;

/** How long a slice of {@link Portfolio.snapshotSliced} serializes before the event loop runs again, ms. */
const SNAPSHOT_SLICE_MS = 8;

/** The snapshot row of a position: its figures and open lots as decimal strings. */
function positionRow(q: PositionLots): PortfolioSnapshot['positions'][number] {
  const figures = [q.shares, q.cost, q.realized, q.acquiredShares, q.acquiredCost, q.disposedShares]
    .concat([q.uncoveredShares, q.proceeds, q.fees, q.uncoveredCost, q.lifeRealized])
    .map(String);
  const lots = q.lots().map((l): [LotEvent, string, string] => [l.acquired, String(l.shares), String(l.cost)]);
  return [q.address, q.tokenId, q.conditionId, q.outcome, q.last, figures, lots];
}

/** One address's rows of a {@link PortfolioSnapshot}. */
interface AddressRows {
  positions: PortfolioSnapshot['positions'];
  trader: PortfolioSnapshot['traders'][number] | null;
}

/** How long a computed leaderboard is served before marks are read again, ms. */
const BOARD_TTL_MS = 1000;

/** Every trader's aggregates; see the module TSDoc for what each figure means. */
export class Portfolio {
  readonly lots = new LotBook();
  private readonly traders = new Map<string, TraderAggregate>();
  private readonly hourly = new Map<number, Map<string, Slice>>();
  /** Hours of {@link hourly}, ascending. */
  private hourList: number[] = [];
  private readonly windows: Record<FiniteWindow, SlidingWindow>;
  /** {@link windows}' values (each record updates them all). */
  private readonly windowList: readonly SlidingWindow[];
  /** The clock's hour {@link slide} last moved the windows to (NaN before the first slide). */
  private slidHour = NaN;
  private readonly tape = new Map<string, PriceSeries>();
  /** Category by token id, once its market is known. */
  private readonly categories = new Map<string, string>();
  /** Ranked leaderboards by `<window>:<mode>`, with when and at which {@link version} they were computed. */
  private readonly boards = new Map<string, { atMs: number; version: number; rows: readonly LeaderRow[] }>();
  /** Records applied so far (a cached leaderboard is stale once it moved). */
  private version = 0;
  /** The latest block timestamp applied. */
  private maxBlock = -Infinity;
  /**
   * By kind (t, f, c: {@link RecordKind}), `_id` → block timestamp of the records applied within
   * {@link SNAPSHOT_WINDOW_SECONDS} of the latest: one map per kind, so that a record's own `_id` is
   * the key (no `<kind>:<_id>` string made per record applied).
   */
  private readonly recent: Record<RecordKind, Map<string, number>> = { t: new Map(), f: new Map(), c: new Map() };
  /** The entries of {@link recent}'s maps. */
  private recentSize = 0;
  /** {@link recentSize} beyond which {@link recent} is pruned. */
  private pruneAt = MIN_PRUNE_AT;
  /** Records applied, by kind. */
  private readonly counts: RecordCounts = { trades: 0, fills: 0, cash: 0 };
  private snapshots: SnapshotOptions | undefined;
  private sinceSnapshot = 0;
  private lastSnapshotMs = 0;
  /** How long the last snapshot took (build and write), ms of the injected clock. */
  private lastSnapshotDurationMs = 0;
  private saving: Promise<void> | null = null;
  /** Addresses touched while {@link snapshotSliced} runs (serialized again at its end); null otherwise. */
  private dirty: Set<string> | null = null;
  /** Where {@link open} replayed the history from: a snapshot's block timestamp, or null (the whole history). */
  startedFrom: number | null = null;

  /**
   * @param facts markets' facts and marks.
   * @param clock the window's "now".
   */
  constructor(
    private readonly facts: PortfolioFacts,
    private readonly clock: Clock,
  ) {
    const hour = Math.floor(clock.now() / 1000 / HOUR_S);
    const w = (hours: number): SlidingWindow => ({ hours, fromHour: hour - hours + 1, byAddress: new Map() });
    this.windows = { '1d': w(WINDOW_HOURS['1d']), '7d': w(WINDOW_HOURS['7d']), '30d': w(WINDOW_HOURS['30d']) };
    this.windowList = Object.values(this.windows);
  }

  /**
   * Builds the aggregates from `feed`: subscribes, starts from the latest valid snapshot of
   * `snapshots` (same version, and the stored history holds as many records before its position as
   * it applied) or from nothing, replays the history after it (all of it without one), then applies
   * the batches that were committed meanwhile (a record the replay already gave is not applied twice).
   * With `snapshots`, writes a snapshot as records land (see {@link SnapshotOptions}) and at {@link close}.
   */
  static async open(
    feed: TradeHistoryFeed,
    facts: PortfolioFacts,
    clock: Clock,
    snapshots?: SnapshotOptions,
  ): Promise<Portfolio> {
    let p = new Portfolio(facts, clock);
    let pending: RecordedBatch[] | null = [];
    const pendingIds = new Set<string>();
    feed.onRecorded((batch) => {
      if (!pending) return p.applyLive(batch);
      pending.push(batch);
      for (const r of [...batch.fills, ...batch.cash]) pendingIds.add(r._id);
    });
    const snap = snapshots ? await Portfolio.validSnapshot(snapshots) : null;
    if (snap) p = Portfolio.restore(snap, facts, clock);
    await feed.replay(
      (batch) => {
        const dup = (r: { _id: string }) => pendingIds.has(r._id);
        p.apply({
          trades: batch.trades,
          fills: batch.fills.filter((r) => !dup(r)),
          cash: batch.cash.filter((r) => !dup(r)),
        });
      },
      REPLAY_BATCH,
      snap ? { fromBlockTimestamp: snap.fromBlockTimestamp } : undefined,
    );
    const live = pending;
    pending = null;
    for (const batch of live) p.apply(batch);
    p.snapshots = snapshots;
    p.lastSnapshotMs = clock.now();
    p.startedFrom = snap?.fromBlockTimestamp ?? null;
    return p;
  }

  /** The snapshot of `o.port` when it can be started from, else null. */
  private static async validSnapshot(o: SnapshotOptions): Promise<PortfolioSnapshot | null> {
    try {
      const snap = await o.port.load();
      if (!snap || snap.version !== PORTFOLIO_SNAPSHOT_VERSION) return null;
      const n = await o.port.countBefore(snap.fromBlockTimestamp);
      const b = snap.below;
      return n.trades === b.trades && n.fills === b.fills && n.cash === b.cash ? snap : null;
    } catch (err) {
      o.onError?.(err, 'load');
      return null;
    }
  }

  /**
   * The aggregates now, at a batch boundary (every record handed so far applied), to start from
   * with {@link open}: the tape is kept only as far back as a window may read it.
   */
  snapshot(): PortfolioSnapshot {
    const rows = new Map<string, AddressRows>();
    for (const a of this.addressesHeld()) rows.set(a, this.rowsOf(a));
    return this.assemble(rows);
  }

  /**
   * {@link snapshot} without holding the event loop for long: the traders' rows (the bulk) are
   * serialized {@link SNAPSHOT_SLICE_MS} at a time, the loop running between two slices while
   * live batches keep landing; the addresses those batches touched meanwhile are serialized again
   * at the end, with the rest (hourly buckets, tape, counts), in one synchronous step. The result is
   * the aggregates at that step's batch boundary, as {@link snapshot} gives it.
   * @param sliceMs how long a slice runs before the loop runs again, ms.
   */
  async snapshotSliced(sliceMs = SNAPSHOT_SLICE_MS): Promise<PortfolioSnapshot> {
    const dirty = new Set<string>();
    this.dirty = dirty;
    try {
      const rows = new Map<string, AddressRows>();
      let since = performance.now();
      for (const a of [...this.addressesHeld()]) {
        if (dirty.has(a)) continue; // serialized at the end
        // a busy trader holds thousands of positions: the loop may run between two of them (a
        // change to the trader meanwhile marks it dirty: its rows are taken again at the end)
        const positions: PortfolioSnapshot['positions'] = [];
        for (const q of this.lots.positions(a)) {
          positions.push(positionRow(q));
          if (performance.now() - since < sliceMs) continue;
          await new Promise<void>((r) => setImmediate(r));
          since = performance.now();
        }
        rows.set(a, { positions, trader: this.traderRow(a) });
      }
      for (const a of dirty) rows.set(a, this.rowsOf(a));
      return this.assemble(rows);
    } finally {
      this.dirty = null;
    }
  }

  /** Every address with an aggregate or a position. */
  private addressesHeld(): Set<string> {
    const out = new Set(this.traders.keys());
    for (const a of this.lots.addresses()) out.add(a);
    return out;
  }

  /** The snapshot rows of one address: its positions and its trader aggregate. */
  private rowsOf(address: string): AddressRows {
    return { positions: this.lots.positions(address).map(positionRow), trader: this.traderRow(address) };
  }

  /** The snapshot row of a trader's aggregate, or null when it has none. */
  private traderRow(address: string): PortfolioSnapshot['traders'][number] | null {
    const a = this.traders.get(address);
    return a
      ? [
          a.address,
          figuresRow(a.total),
          a.flows.toString(),
          [...a.categories].map(([c, f]) => [c, figuresRow(f)]),
          [...a.realizedByDay].map(([d, r]) => [d, r.toString()]),
          a.firstAtMs,
          a.lastAtMs,
        ]
      : null;
  }

  /** The snapshot of the aggregates now, the traders' rows given (every address held). */
  private assemble(rows: Map<string, AddressRows>): PortfolioSnapshot {
    const from = Number.isFinite(this.maxBlock) ? this.maxBlock - SNAPSHOT_WINDOW_SECONDS : 0;
    const below = { ...this.counts };
    const applied: [string, number][] = [];
    for (const kind of RECORD_KINDS) {
      const recent = this.recent[kind];
      for (const [id, block] of recent) {
        if (block < from) {
          recent.delete(id);
          this.recentSize--;
          continue;
        }
        applied.push([`${kind}:${id}`, block]);
        below[COUNT_OF[kind]]--;
      }
    }
    const positions: PortfolioSnapshot['positions'] = [];
    const traders: PortfolioSnapshot['traders'] = [];
    for (const r of rows.values()) {
      for (const q of r.positions) positions.push(q);
      if (r.trader) traders.push(r.trader);
    }
    this.slide();
    const oldest = this.windows['30d'].fromHour;
    const tape: PortfolioSnapshot['tape'] = [];
    for (const [tokenId, series] of this.tape) {
      let i = series.hours.findIndex((h) => h >= oldest);
      i = i < 0 ? series.hours.length - 1 : Math.max(0, i - 1);
      tape.push([tokenId, series.hours.slice(i), series.prices.slice(i).map(String)]);
    }
    return {
      version: PORTFOLIO_SNAPSHOT_VERSION,
      fromBlockTimestamp: from,
      below,
      applied,
      positions,
      traders,
      hourly: this.hourList.map((h) => [
        h,
        [...(this.hourly.get(h) ?? [])].map(([a, sl]) => [
          a,
          figuresRow(sl),
          [...sl.deltas].map(([t, d]): [string, string] => [t, d.toString()]),
        ]),
      ]),
      tape,
    };
  }

  /** The aggregates of `snap` (see {@link snapshot}), the windows at the clock's now. */
  private static restore(snap: PortfolioSnapshot, facts: PortfolioFacts, clock: Clock): Portfolio {
    const p = new Portfolio(facts, clock);
    for (const [address, tokenId, conditionId, outcome, last, f, lots] of snap.positions) {
      const [
        shares,
        cost,
        realized,
        acquiredShares,
        acquiredCost,
        disposedShares,
        uncovered,
        proceeds,
        fees,
        uncCost,
        life,
      ] = f.map((x) => dec(x));
      p.lots.restore(
        {
          address,
          tokenId,
          conditionId,
          outcome,
          last,
          shares: shares!,
          cost: cost!,
          realized: realized!,
          lifeRealized: life!,
          acquiredShares: acquiredShares!,
          acquiredCost: acquiredCost!,
          disposedShares: disposedShares!,
          uncoveredShares: uncovered!,
          uncoveredCost: uncCost!,
          proceeds: proceeds!,
          fees: fees!,
        },
        lots.map(([acquired, sh, c]): Lot => ({ acquired, shares: dec(sh), cost: dec(c) })),
      );
    }
    for (const [address, total, flows, cats, days, firstAtMs, lastAtMs] of snap.traders) {
      p.traders.set(address, {
        address,
        total: fromRow(new Figures(), total),
        flows: dec(flows),
        categories: new Map(cats.map(([c, f]) => [c, fromRow(new Figures(), f)])),
        realizedByDay: new Map(days.map(([d, r]) => [d, dec(r)])),
        firstAtMs,
        lastAtMs,
      });
    }
    const oldest = p.windows['30d'].fromHour;
    for (const [hour, rows] of snap.hourly) {
      if (hour < oldest) continue;
      const bucket = new Map<string, Slice>();
      for (const [address, f, deltas] of rows) {
        const sl = fromRow(new Slice(), f);
        for (const [t, d] of deltas) sl.deltas.set(t, dec(d));
        bucket.set(address, sl);
        for (const w of Object.values(p.windows)) {
          if (hour < w.fromHour) continue;
          let ws = w.byAddress.get(address);
          if (!ws) w.byAddress.set(address, (ws = new Slice()));
          ws.addSlice(sl, 1);
        }
      }
      p.hourly.set(hour, bucket);
      p.hourList.push(hour);
    }
    p.hourList.sort((x, y) => x - y);
    for (const [tokenId, hours, prices] of snap.tape) p.tape.set(tokenId, { hours, prices: prices.map((x) => dec(x)) });
    for (const [key, block] of snap.applied) {
      const recent = p.recent[key[0] as RecordKind];
      if (!recent || key[1] !== ':') continue;
      const id = key.slice(2);
      if (!recent.has(id)) p.recentSize++;
      recent.set(id, block);
    }
    Object.assign(p.counts, snap.below);
    p.maxBlock = snap.fromBlockTimestamp + SNAPSHOT_WINDOW_SECONDS;
    return p;
  }

  /** Applies a live batch, then writes a snapshot when one is due (after the batch, off its caller's path). */
  private applyLive(batch: RecordedBatch): void {
    this.apply(batch);
    const o = this.snapshots;
    if (!o || this.saving) return;
    const sinceMs = this.clock.now() - this.lastSnapshotMs;
    const due =
      sinceMs >= SNAPSHOT_GAP_PER_DURATION * this.lastSnapshotDurationMs &&
      (this.sinceSnapshot >= (o.everyRecords ?? 50_000) ||
        (this.sinceSnapshot > 0 && sinceMs >= (o.everyMs ?? 60_000)));
    if (due) this.saving = new Promise((r) => setImmediate(r)).then(() => this.save());
  }

  /** Writes a snapshot now (a failure is told to `onError` and leaves the previous one). */
  private async save(): Promise<void> {
    const o = this.snapshots;
    if (!o) return;
    const startedMs = this.clock.now();
    try {
      this.sinceSnapshot = 0;
      const snap = await this.snapshotSliced();
      await o.port.save(snap);
    } catch (err) {
      o.onError?.(err, 'save');
    } finally {
      // a failed attempt spaces the next one as a written snapshot does
      this.lastSnapshotMs = this.clock.now();
      this.lastSnapshotDurationMs = this.lastSnapshotMs - startedMs;
      this.saving = null;
    }
  }

  /** At a clean stop: waits for a snapshot being written, then writes one of the aggregates now. */
  async close(): Promise<void> {
    await this.saving;
    await this.save();
    this.snapshots = undefined;
  }

  /** A trader's aggregates, or undefined when no record names it. */
  trader(address: string): TraderAggregate | undefined {
    return this.traders.get(address);
  }

  /**
   * The cumulative realized PnL of `address` at the end of each UTC day with a disposition, days
   * ascending (`day`: days since the epoch). An equity curve's realized part.
   */
  realizedSeries(address: string): { day: number; cumulative: Decimal }[] {
    const days = [...(this.traders.get(address)?.realizedByDay ?? [])].sort(([a], [b]) => a - b);
    let sum = ZERO;
    return days.map(([day, r]) => ({ day, cumulative: (sum = sum.plus(r)) }));
  }

  /** Every position `address` ever had (first acquisition order). */
  positions(address: string): PositionLots[] {
    return this.lots.positions(address).filter((p) => !isComboToken(p.tokenId));
  }

  /** Facts of a token: the registry's, else what its records said. */
  tokenFacts(tokenId: string): TokenFacts | undefined {
    return this.facts.token(tokenId);
  }

  /** The current mark of `tokenId`: the venue's, else the tape's last price, else null. */
  mark(tokenId: string): Decimal | null {
    const m = this.facts.mark(tokenId);
    if (m !== null) return m;
    const s = this.tape.get(tokenId);
    return s?.prices[s.prices.length - 1] ?? null;
  }

  /** Unrealized PnL of `address`: Σ over open positions of shares × mark − cost (unmarked ones count 0). */
  unrealized(address: string): Decimal {
    let u = ZERO;
    for (const p of this.lots.positions(address)) {
      if (p.shares.isZero()) continue;
      const m = this.valueMark(address, p.tokenId);
      if (m !== null) u = u.plus(p.shares.times(m).minus(p.cost));
    }
    return u;
  }

  /**
   * Applies a committed batch (records in chain order). A record applied already within
   * {@link SNAPSHOT_WINDOW_SECONDS} of the latest one (by `_id`) is not applied again.
   */
  apply(batch: RecordedBatch): void {
    for (const t of batch.trades) if (this.fresh('t', t)) this.tapePrice(t);
    for (const r of chainOrder(batch)) {
      if ('kind' in r) {
        if (this.fresh('c', r)) this.applyCash(r);
      } else if (this.fresh('f', r)) this.applyFill(r);
      this.version++;
    }
  }

  /** Whether `r` was not applied yet; notes it as applied. */
  private fresh(kind: RecordKind, r: { _id: string; blockTimestamp: number }): boolean {
    const recent = this.recent[kind];
    if (recent.has(r._id)) return false;
    this.counts[COUNT_OF[kind]]++;
    this.sinceSnapshot++;
    if (r.blockTimestamp > this.maxBlock) this.maxBlock = r.blockTimestamp;
    if (r.blockTimestamp >= this.maxBlock - SNAPSHOT_WINDOW_SECONDS) {
      recent.set(r._id, r.blockTimestamp);
      if (++this.recentSize > this.pruneAt) this.prune();
    }
    return true;
  }

  /** Forgets the applied `_id`s more than {@link SNAPSHOT_WINDOW_SECONDS} before the latest record. */
  private prune(): void {
    const from = this.maxBlock - SNAPSHOT_WINDOW_SECONDS;
    for (const kind of RECORD_KINDS) {
      const recent = this.recent[kind];
      for (const [id, block] of recent) if (block < from) recent.delete(id);
    }
    this.recentSize = this.recent.t.size + this.recent.f.size + this.recent.c.size;
    this.pruneAt = Math.max(MIN_PRUNE_AT, 2 * this.recentSize);
  }

  /**
   * The figures of `address` over `window` (all time for `all`), at the clock's now.
   * @returns null when the trader has no record (in the window, for a finite one).
   */
  windowFigures(address: string, window: Window): WindowFigures | null {
    const agg = this.traders.get(address);
    if (!agg) return null;
    if (window === 'all') return { address, window, pnl: agg.total.realized.minus(agg.total.fees), figures: agg.total };
    this.slide();
    const slice = this.windows[window].byAddress.get(address);
    if (!slice) return null;
    return { address, window, pnl: this.equityChange(address, slice, this.windows[window].fromHour), figures: slice };
  }

  /**
   * The leaderboard of `window`: traders with a trade, split, merge or redeem in it (the liquidity
   * provider excluded),
   * ranked by PnL or by volume, descending, ties sharing a rank (competition ranks: 1, 2, 2, 4), equal
   * rows in address order. Computed from the aggregates and served again while no record lands (a
   * finite window's for at most {@link BOARD_TTL_MS}: its PnL follows the marks).
   */
  leaderboard(window: Window, by: 'pnl' | 'volume'): readonly LeaderRow[] {
    const now = this.clock.now();
    const cacheKey = `${window}:${by}`;
    const cached = this.boards.get(cacheKey);
    // `all` ranks realized figures only (no marks): it changes only when a record lands
    const fresh = window === 'all' || (now >= (cached?.atMs ?? 0) && now - (cached?.atMs ?? 0) < BOARD_TTL_MS);
    if (cached && cached.version === this.version && fresh) return cached.rows;
    const rows: WindowFigures[] = [];
    const addresses = window === 'all' ? this.traders.keys() : (this.slide(), this.windows[window].byAddress.keys());
    for (const a of addresses) {
      if (a === LIQUIDITY_PROVIDER_ADDRESS) continue;
      const f = this.windowFigures(a, window);
      if (f && f.figures.hasActivity()) rows.push(f);
    }
    const key = (r: WindowFigures) => (by === 'pnl' ? r.pnl : r.figures.volume);
    rows.sort((a, b) => key(b).comparedTo(key(a)) || (a.address < b.address ? -1 : 1));
    const ranked: LeaderRow[] = [];
    rows.forEach((r, i) => {
      const prev = ranked[i - 1];
      ranked.push({ ...r, rank: prev && key(prev).eq(key(r)) ? prev.rank : i + 1 });
    });
    this.boards.set(cacheKey, { atMs: now, version: this.version, rows: ranked });
    return ranked;
  }

  private agg(address: string, atMs: number): TraderAggregate {
    this.dirty?.add(address);
    let a = this.traders.get(address);
    if (!a) {
      a = {
        address,
        total: new Figures(),
        flows: ZERO,
        categories: new Map(),
        realizedByDay: new Map(),
        firstAtMs: atMs,
        lastAtMs: atMs,
      };
      this.traders.set(address, a);
    }
    a.firstAtMs = Math.min(a.firstAtMs, atMs);
    a.lastAtMs = Math.max(a.lastAtMs, atMs);
    return a;
  }

  /** The category of `tokenId`'s market (a market's facts do not change its category: kept per token). */
  private categoryOfToken(tokenId: string): string {
    let c = this.categories.get(tokenId);
    if (c === undefined) {
      const facts = this.facts.token(tokenId);
      c = categoryOf(facts);
      if (facts) this.categories.set(tokenId, c);
    }
    return c;
  }

  private tapePrice(t: TapeTrade): void {
    const hour = Math.floor(t.blockTimestamp / HOUR_S);
    let s = this.tape.get(t.tokenId);
    if (!s) this.tape.set(t.tokenId, (s = { hours: [], prices: [] }));
    const last = s.hours.length - 1;
    if (last >= 0 && s.hours[last] === hour) s.prices[last] = dec(t.price);
    else if (last < 0 || (s.hours[last] ?? 0) < hour) {
      s.hours.push(hour);
      s.prices.push(dec(t.price));
    } // an older print than the series' last hour changes no mark
  }

  /** The tape's price of `tokenId` before `hour` (the last trade of an earlier hour), or undefined. */
  private priceBefore(tokenId: string, hour: number): Decimal | undefined {
    const s = this.tape.get(tokenId);
    if (!s) return undefined;
    let lo = 0;
    let hi = s.hours.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((s.hours[mid] ?? 0) < hour) lo = mid + 1;
      else hi = mid;
    }
    return lo === 0 ? undefined : s.prices[lo - 1];
  }

  private applyFill(f: TraderFill): void {
    const ds = this.lots.applyFill(f);
    const fig = new Slice();
    const notional = dec(f.notionalUsd);
    // most fills pay no fee: no parse and no arithmetic for it (a replay applies millions)
    const fee = f.feeUsd === '0' ? ZERO : dec(f.feeUsd);
    const size = dec(f.size);
    fig.trades = 1;
    fig.volume = notional;
    fig.shares = size;
    fig.fees = fee;
    const net = fee.isZero() ? notional : f.side === 'BUY' ? notional.plus(fee) : notional.minus(fee);
    fig.cash = f.side === 'BUY' ? net.neg() : net;
    fig.deltas.set(f.tokenId, f.side === 'BUY' ? size : size.neg());
    this.book(f.address, f.atMs, f.blockTimestamp, fig, ds, f.tokenId);
  }

  private applyCash(c: CashMove): void {
    if (FLOW_KINDS.has(c.kind)) {
      const a = this.agg(c.address, c.atMs);
      a.flows = a.flows.plus(dec(c.pusdDelta));
      return;
    }
    c = withComboShare(c);
    // as the statements share a movement's dollars: a redeem of a resolved market by its outcomes'
    // payouts (1 and 0), a split or a merge by the marks it was recorded with, anything else by shares
    const priceOf: PriceOf | undefined =
      c.kind === 'redeem'
        ? (tokenId) => {
            const f = this.facts.token(tokenId);
            return f?.resolved ? (f.winner ? ONE : ZERO) : undefined;
          }
        : recordedPrices(c);
    const ds = this.lots.applyCashMove(c, priceOf);
    const fig = new Slice();
    fig.cash = dec(c.pusdDelta);
    for (const s of c.shares) fig.deltas.set(s.tokenId, (fig.deltas.get(s.tokenId) ?? ZERO).plus(dec(s.delta)));
    this.book(c.address, c.atMs, c.blockTimestamp, fig, ds, c.shares[0]?.tokenId);
  }

  /** Adds a record's figures (and its dispositions' gains, wins, losses) to the trader, its category, its hour. */
  private book(
    address: string,
    atMs: number,
    blockTimestamp: number,
    fig: Slice,
    ds: Disposition[],
    tokenId: string | undefined,
  ): void {
    for (const d of ds) {
      fig.realized = fig.realized.plus(d.gain);
      // a market position closed by this record: won or lost over its life (a combo's is in the PnL only)
      if (d.closes === undefined || isComboToken(d.tokenId)) continue;
      if (d.closes.gt(0)) fig.wins++;
      else if (d.closes.lt(0)) fig.losses++;
      else fig.evens++;
    }
    const a = this.agg(address, atMs);
    a.total.add(fig);
    if (!fig.realized.isZero()) {
      const day = Math.floor(blockTimestamp / DAY_S);
      a.realizedByDay.set(day, fig.realized.plus(a.realizedByDay.get(day) ?? ZERO));
    }
    const category = tokenId === undefined ? categoryOf(undefined) : this.categoryOfToken(tokenId);
    let cat = a.categories.get(category);
    if (!cat) a.categories.set(category, (cat = new Figures()));
    cat.add(fig);

    this.slide();
    const hour = Math.floor(blockTimestamp / HOUR_S);
    const oldest = this.windows['30d'].fromHour;
    if (hour < oldest) return;
    let bucket = this.hourly.get(hour);
    if (!bucket) {
      this.hourly.set(hour, (bucket = new Map()));
      this.hourList.push(hour);
      if (hour < (this.hourList[this.hourList.length - 2] ?? hour)) this.hourList.sort((x, y) => x - y);
    }
    let s = bucket.get(address);
    if (!s) bucket.set(address, (s = new Slice()));
    s.addSlice(fig, 1);
    for (const w of this.windowList) {
      if (hour < w.fromHour) continue;
      let ws = w.byAddress.get(address);
      if (!ws) w.byAddress.set(address, (ws = new Slice()));
      ws.addSlice(fig, 1);
    }
  }

  /** Moves each window's start to the clock's hour, removing the hours that left it. */
  private slide(): void {
    const hour = Math.floor(this.clock.now() / 1000 / HOUR_S);
    // every record and read slides: within the hour slid to last, nothing moves
    if (hour === this.slidHour) return;
    for (const w of this.windowList) {
      const from = hour - w.hours + 1;
      if (from <= w.fromHour) continue;
      for (const h of this.hourList) {
        if (h >= from) break;
        if (h < w.fromHour) continue;
        for (const [address, s] of this.hourly.get(h) ?? []) {
          const ws = w.byAddress.get(address);
          if (!ws) continue;
          ws.addSlice(s, -1);
          if (!ws.hasActivity()) w.byAddress.delete(address);
        }
      }
      w.fromHour = from;
    }
    const oldest = this.windows['30d'].fromHour;
    while (this.hourList.length && (this.hourList[0] ?? oldest) < oldest) {
      this.hourly.delete(this.hourList.shift()!);
    }
    this.slidHour = hour;
  }

  /**
   * Change of marked equity net of flows since the start of hour `fromHour`: trading cash in the
   * window + Σ positions now × marks now − Σ positions then × marks then (the tape's price before the
   * window; a token with no such price is taken at today's mark, so it changes nothing).
   */
  /**
   * The mark a window values `address`'s shares of `tokenId` at: a combo at what it cost (it has no
   * market: its gain or loss is realized when it pays out or loses), any other token at its mark.
   */
  private valueMark(address: string, tokenId: string): Decimal | null {
    if (!isComboToken(tokenId)) return this.mark(tokenId);
    const p = this.lots.position(address, tokenId);
    return p && p.acquiredShares.gt(0) ? p.acquiredCost.div(p.acquiredShares) : null;
  }

  private equityChange(address: string, slice: Slice, fromHour: number): Decimal {
    let pnl = slice.cash;
    const tokens = new Set(slice.deltas.keys());
    for (const p of this.lots.positions(address)) if (!p.shares.isZero()) tokens.add(p.tokenId);
    for (const t of tokens) {
      const now = this.lots.position(address, t)?.shares ?? ZERO;
      const then = now.minus(slice.deltas.get(t) ?? ZERO);
      const markNow = this.valueMark(address, t) ?? ZERO;
      const markThen = then.isZero() ? ZERO : (this.priceBefore(t, fromHour) ?? markNow);
      pnl = pnl.plus(now.times(markNow)).minus(then.times(markThen));
    }
    return pnl;
  }
}
