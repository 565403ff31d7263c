/**
 * The trade history's writer: records tape trades, trader fills and cash movements
 * (engine/data/records.ts) inside the unit of work of the step that produced them, and hands each
 * committed batch to the aggregates ({@link TradeHistoryFeed}).
 *
 * Every write is idempotent by `_id`: a tape row is replaced (both parties of a trade write the
 * same row, in whichever order their steps commit), a fill or cash row already present is left as
 * it is, so a report delivered again after a restart records nothing twice. Listeners hear only
 * the rows new to the store, once their transaction has committed, in the order of the commits.
 */

import type { Collection, Doc, Filter, Store, UnitOfWork } from '../store/port.js';
import {
  CASH_MOVES,
  HISTORY_INDEXES,
  TRADER_FILLS,
  TRADES,
  type CashMove,
  type RecordedBatch,
  type ReplayStart,
  type TapeTrade,
  type TradeHistoryFeed,
  type TraderFill,
} from './records.js';

/** A batch with nothing in it. */
export function emptyBatch(): RecordedBatch {
  return { trades: [], fills: [], cash: [] };
}

/** How many records a batch holds. */
export function batchSize(b: RecordedBatch): number {
  return b.trades.length + b.fills.length + b.cash.length;
}

/** Chain order: (`blockTimestamp`, `logIndex`), then `_id` for the rows of one event (a trade's two fills). */
export function chainOrder<T extends { blockTimestamp: number; logIndex: number; _id: string }>(a: T, b: T): number {
  return a.blockTimestamp - b.blockTimestamp || a.logIndex - b.logIndex || (a._id < b._id ? -1 : a._id > b._id ? 1 : 0);
}

/** A chain position as ordered. */
type Position = { blockTimestamp: number; logIndex: number };

/** Whether `a` comes strictly before `b` on the chain. */
function before(a: Position, b: Position): boolean {
  return a.blockTimestamp < b.blockTimestamp || (a.blockTimestamp === b.blockTimestamp && a.logIndex < b.logIndex);
}

/**
 * Inserts each of `rows` whose `_id` is not in `col` yet (nor earlier in `rows`), adding it to
 * `fresh`, in one write with no read first ({@link Collection.insertMissing}); returns the rows
 * left out (their `_id` was taken).
 */
async function insertNew<T extends Doc>(col: Collection<T>, rows: readonly T[], fresh: T[]): Promise<T[]> {
  const taken: T[] = [];
  const inserted = await col.insertMissing(rows as T[]);
  for (let i = 0; i < rows.length; i++) (inserted[i] ? fresh : taken).push(rows[i]!);
  return taken;
}

/** The chain-order sort of the store's queries. */
const CHAIN_SORT = { blockTimestamp: 1, logIndex: 1, _id: 1 } as const;

/**
 * The trade history of this service: the collections `trades`, `traderFills` and `cashMoves`.
 * Open it once per process ({@link TradeHistory.open}); the data reads open the same collections
 * with the same indexes.
 */
export class TradeHistory implements TradeHistoryFeed {
  private readonly listeners: ((batch: RecordedBatch) => void)[] = [];

  private constructor(
    private readonly store: Store,
    /** The market tape (read access for the data reads). */
    readonly trades: Collection<TapeTrade>,
    /** Every party's fills. */
    readonly fills: Collection<TraderFill>,
    /** Cash movements. */
    readonly cash: Collection<CashMove>,
  ) {}

  /** Opens the three collections with {@link HISTORY_INDEXES}. */
  static async open(store: Store): Promise<TradeHistory> {
    const [trades, fills, cash] = await Promise.all([
      store.collection<TapeTrade>(TRADES, HISTORY_INDEXES[TRADES]),
      store.collection<TraderFill>(TRADER_FILLS, HISTORY_INDEXES[TRADER_FILLS]),
      store.collection<CashMove>(CASH_MOVES, HISTORY_INDEXES[CASH_MOVES]),
    ]);
    return new TradeHistory(store, trades, fills, cash);
  }

  /**
   * Writes `batch` through `tx` (the caller's unit of work: the step that records the fill or the
   * operation). Tape rows are replaced by `_id`; fills and cash rows are inserted unless their
   * `_id` is there already.
   * @returns the rows new to the store (a tape row counts as new when its `_id` was absent); hand
   *   them to {@link published} once `tx` has committed.
   * @throws what the store throws (the caller's transaction then fails as a whole).
   */
  async record(tx: UnitOfWork, batch: RecordedBatch): Promise<RecordedBatch> {
    const fresh = emptyBatch();
    if (batch.trades.length) {
      const col = tx.collection<TapeTrade>(TRADES);
      // a tape row already there (the other party's step wrote it, or a capture print written again) is replaced
      for (const t of await insertNew(col, batch.trades, fresh.trades)) await col.replaceOne(t);
    }
    if (batch.fills.length) await insertNew(tx.collection<TraderFill>(TRADER_FILLS), batch.fills, fresh.fills);
    if (batch.cash.length) await insertNew(tx.collection<CashMove>(CASH_MOVES), batch.cash, fresh.cash);
    return fresh;
  }

  /**
   * Records `batch` in a transaction of its own and notifies the listeners once it committed.
   * @returns the rows that were new.
   */
  async recordAlone(batch: RecordedBatch): Promise<RecordedBatch> {
    const fresh = await this.store.transaction((tx) => this.record(tx, batch));
    this.published(fresh);
    return fresh;
  }

  /**
   * Writes a bulk of rows known to be idempotent by `_id` (a load of recorded history), each by
   * `replaceOne` without reading first, in one transaction; the listeners are told the whole batch.
   */
  async load(batch: RecordedBatch): Promise<void> {
    await this.store.transaction(async (tx) => {
      const trades = tx.collection<TapeTrade>(TRADES);
      for (const t of batch.trades) await trades.replaceOne(t);
      const fills = tx.collection<TraderFill>(TRADER_FILLS);
      for (const f of batch.fills) await fills.replaceOne(f);
      const cash = tx.collection<CashMove>(CASH_MOVES);
      for (const c of batch.cash) await cash.replaceOne(c);
    });
    this.published(batch);
  }

  /**
   * Hands rows that {@link record} wrote to the listeners: call once their transaction committed.
   * A listener that throws does not keep the batch from the others. An empty batch is not handed on.
   */
  published(batch: RecordedBatch): void {
    if (batchSize(batch) === 0) return;
    for (const listener of this.listeners) {
      try {
        listener(batch);
      } catch {
        // a listener's failure is its own (it logs and repairs itself); the records are committed
      }
    }
  }

  /** {@inheritDoc TradeHistoryFeed.onRecorded} */
  onRecorded(listener: (batch: RecordedBatch) => void): void {
    this.listeners.push(listener);
  }

  /**
   * {@inheritDoc TradeHistoryFeed.replay}
   * Reads the three collections in chain order, page by page (`batchSize` rows of each at a time,
   * keyed on the chain position, so a page costs O(batchSize)), merged into one chain-ordered stream.
   * The first page starts at `from` (the chain's start without it): the same index range.
   */
  async replay(
    visit: (batch: RecordedBatch) => void | Promise<void>,
    batchSize = 1000,
    from?: ReplayStart,
  ): Promise<void> {
    const start = from?.fromBlockTimestamp ?? 0;
    const cursors = {
      trades: new ChainCursor(this.trades, batchSize, start),
      fills: new ChainCursor(this.fills, batchSize, start),
      cash: new ChainCursor(this.cash, batchSize, start),
    };
    const all = [cursors.trades, cursors.fills, cursors.cash];
    for (;;) {
      const heads = await Promise.all(all.map((c) => c.peek()));
      if (heads.every((h) => h === undefined)) return;
      const out = emptyBatch();
      for (let n = 0; n < batchSize; n++) {
        // a cursor reads its next page only when its page ran out: most rows cost no await
        if (all.some((c) => c.exhausted())) await Promise.all(all.map((c) => c.peek()));
        const t = cursors.trades.head();
        const f = cursors.fills.head();
        const c = cursors.cash.head();
        // the earliest head goes first; a trade's tape row before its fills (same position)
        let best: 'trades' | 'fills' | 'cash' | undefined;
        let pos: Position | undefined;
        const consider = (k: 'trades' | 'fills' | 'cash', r: Position | undefined) => {
          if (r && (!pos || before(r, pos))) {
            best = k;
            pos = r;
          }
        };
        consider('trades', t);
        consider('fills', f);
        consider('cash', c);
        if (!best) break;
        if (best === 'trades') out.trades.push(cursors.trades.take() as TapeTrade);
        else if (best === 'fills') out.fills.push(cursors.fills.take() as TraderFill);
        else out.cash.push(cursors.cash.take() as CashMove);
      }
      await visit(out);
    }
  }
}

/** Pages through one history collection in chain order, keyed on the last position read. */
class ChainCursor<T extends { _id: string; blockTimestamp: number; logIndex: number }> {
  private page: T[] = [];
  private at = 0;
  private last: T | undefined;
  private done = false;

  constructor(
    private readonly col: Collection<T>,
    private readonly size: number,
    /** The first block timestamp read. */
    private readonly from: number,
  ) {}

  /**
   * The next row without taking it, or undefined at the end. A page after the last row read is up to
   * three walks of the chain index, each one range (an `$or` of them would make SQLite merge the
   * three ranges in full and sort them: O(history) a page): the rest of the last row's position
   * (`_id` after it), the rest of its block (`logIndex` after it), then the later blocks.
   */
  async peek(): Promise<T | undefined> {
    if (this.at < this.page.length) return this.page[this.at];
    if (this.done) return undefined;
    const l = this.last;
    const ranges: Filter[] = l
      ? [
          { blockTimestamp: l.blockTimestamp, logIndex: l.logIndex, _id: { $gt: l._id } },
          { blockTimestamp: l.blockTimestamp, logIndex: { $gt: l.logIndex } },
          { blockTimestamp: { $gt: l.blockTimestamp } },
        ]
      : [{ blockTimestamp: { $gte: this.from } }];
    const page: T[] = [];
    for (const filter of ranges) {
      page.push(...(await this.col.find(filter, { sort: CHAIN_SORT, limit: this.size - page.length })));
      if (page.length >= this.size) break;
    }
    this.page = page;
    this.at = 0;
    if (page.length < this.size) this.done = true;
    return page[0];
  }

  /** Whether the page read ran out while the collection may hold more (then {@link peek} reads the next one). */
  exhausted(): boolean {
    return this.at >= this.page.length && !this.done;
  }

  /** The next row of the page read (undefined at the end, or when {@link exhausted}). */
  head(): T | undefined {
    return this.page[this.at];
  }

  /** Takes the row {@link peek} gave. */
  take(): T {
    const r = this.page[this.at++]!;
    this.last = r;
    return r;
  }
}
