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
  TAPE_TOKENS,
  TRADER_FILLS,
  TRADES,
  operationHash,
  storedTapeRow,
  tapeRowOf,
  type CashMove,
  type Operation,
  type RecordedBatch,
  type ReplayStart,
  type StoredPrint,
  type StoredTapeRow,
  type TapeTokenRow,
  type TapeTrade,
  type TokenFacts,
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
 * `fresh`, in one write with no read first ({@link Collection.insertMissing}); `stored` are the
 * rows as written (`rows` themselves unless given). Returns the indexes of the rows left out
 * (their `_id` was taken).
 */
async function insertNew<T extends Doc, S extends Doc = T>(
  col: Collection<S>,
  rows: readonly T[],
  fresh: T[],
  stored: readonly S[] = rows as readonly Doc[] as readonly S[],
): Promise<number[]> {
  const taken: number[] = [];
  const inserted = await col.insertMissing(stored as S[]);
  for (let i = 0; i < rows.length; i++)
    if (inserted[i]) fresh.push(rows[i]!);
    else taken.push(i);
  return taken;
}

/** Rows of `trades` read at a time while {@link keyTape} keys them. */
const KEYING_PAGE = 2000;

/**
 * Gives every row of `trades` written before the token keys its `tokenSeq` ({@link TapeKey}) through
 * `tx` (one transaction): the tokens of the {@link TAPE_TOKENS} rows first, in their order, then the
 * other tokens in the order of the rows (by `_id`), each token's row written with its key (its facts
 * kept). Walks the table once by `_id`.
 */
async function keyTape(tx: UnitOfWork): Promise<void> {
  const trades = tx.collection<TapeTrade | StoredPrint | StoredTapeRow>(TRADES);
  const tapeTokens = tx.collection<TapeTokenRow>(TAPE_TOKENS);
  const rows = new Map<string, TapeTokenRow>();
  let next = 1;
  const old: TapeTokenRow[] = [];
  for (const r of await tapeTokens.find({}, { sort: { _id: 1 } }))
    if (typeof r.tokenSeq === 'number') {
      rows.set(r._id, r);
      next = Math.max(next, r.tokenSeq + 1);
    } else old.push(r);
  const changed = new Map<string, TapeTokenRow>();
  const keyOf = (tokenId: string, facts?: { conditionId?: string; outcome?: string }): number => {
    let r = rows.get(tokenId);
    if (!r) {
      r = { ...facts, _id: tokenId, tokenSeq: next++ };
      rows.set(tokenId, r);
      changed.set(tokenId, r);
    }
    return r.tokenSeq;
  };
  for (const r of old) keyOf(r._id, r);
  let after: string | null = null;
  for (;;) {
    const page: Array<TapeTrade | StoredPrint | StoredTapeRow> = await trades.find(
      after === null ? {} : { _id: { $gt: after } },
      { sort: { _id: 1 }, limit: KEYING_PAGE },
    );
    for (const row of page)
      if (!('tokenSeq' in row) || typeof row.tokenSeq !== 'number')
        await trades.updateOne({ _id: row._id }, { tokenSeq: keyOf(row.tokenId) });
    if (page.length < KEYING_PAGE) break;
    after = page.at(-1)!._id;
  }
  for (const r of changed.values()) await tapeTokens.replaceOne(r);
}

/** No token known: every tape row is stored whole. */
const NO_TOKENS: TokenFacts = () => undefined;

/** The chain-order sort of the store's queries. */
const CHAIN_SORT = { blockTimestamp: 1, logIndex: 1, _id: 1 } as const;

/**
 * The trade history of this service: the collections `trades`, `traderFills` and `cashMoves` (and
 * `tapeTokens`, the token facts the compact capture prints of `trades` leave out).
 * Open it once per process ({@link TradeHistory.open}); the data reads open the same collections
 * with the same indexes.
 */
export class TradeHistory implements TradeHistoryFeed {
  private readonly listeners: ((batch: RecordedBatch) => void)[] = [];
  /** The token rows a {@link record} wrote, by the batch it returned: known once that batch is {@link published}. */
  private readonly factsWritten = new WeakMap<RecordedBatch, TapeTokenRow[]>();
  /** The tokens whose {@link TAPE_TOKENS} row (with its `tokenSeq`) is known committed. */
  private readonly durable = new Set<string>();

  /**
   * The market facts of a token, as stored capture prints are completed with them: those stored with
   * the token's first compact print ({@link TAPE_TOKENS}), else the catalogue's.
   */
  readonly tokens: TokenFacts = (tokenId) => this.facts.get(tokenId) ?? this.catalogue(tokenId);

  private constructor(
    private readonly store: Store,
    /**
     * The market tape as stored: capture prints in their {@link StoredPrint} form (counts and
     * existence checks; a read of rows goes through {@link tapeRowOf}).
     */
    readonly trades: Collection<StoredTapeRow>,
    /** Every party's fills. */
    readonly fills: Collection<TraderFill>,
    /** Cash movements. */
    readonly cash: Collection<CashMove>,
    /** The market facts of the capture's tokens (the venue's catalogue). */
    private readonly catalogue: TokenFacts,
    /** The facts of the tokens of the compact prints stored so far ({@link TAPE_TOKENS}), by token id. */
    private readonly facts: Map<string, { conditionId: string; outcome: string }>,
    /**
     * Every token's `tokenSeq` ({@link TapeKey}): those stored, and those assigned to a write not
     * known committed yet (each such write stores the token's row again, so whichever commits keeps it).
     */
    private readonly seqs: Map<string, number>,
    /** The next `tokenSeq` to assign (one past the largest ever stored or assigned). */
    private nextSeq: number,
  ) {
    for (const tokenId of seqs.keys()) this.durable.add(tokenId);
  }

  /**
   * The short key of `tokenId` on the tape ({@link TapeKey}), or undefined when no row of the tape
   * holds the token (a per-token read then has nothing to walk).
   */
  tokenSeq(tokenId: string): number | undefined {
    return this.seqs.get(tokenId);
  }

  /**
   * Opens the three collections with {@link HISTORY_INDEXES}, and reads the token facts stored
   * with compact prints ({@link TAPE_TOKENS}: one row per token).
   * @param tokens - the market facts of the capture's tokens (the venue's catalogue): capture prints
   *   are stored without them ({@link StoredPrint}), which are stored once per token beside them;
   *   without it every row is stored whole.
   */
  static async open(store: Store, tokens: TokenFacts = NO_TOKENS): Promise<TradeHistory> {
    const [trades, fills, cash, tapeTokens] = await Promise.all([
      store.collection<StoredTapeRow>(TRADES, HISTORY_INDEXES[TRADES]),
      store.collection<TraderFill>(TRADER_FILLS, HISTORY_INDEXES[TRADER_FILLS]),
      store.collection<CashMove>(CASH_MOVES, HISTORY_INDEXES[CASH_MOVES]),
      store.collection<TapeTokenRow>(TAPE_TOKENS),
    ]);
    let tokenRows = await tapeTokens.find({});
    // rows of a version before the token keys: keyed once, before any read walks the index
    if (tokenRows.some((r) => typeof r.tokenSeq !== 'number') || (await trades.findOne({ tokenSeq: null }))) {
      await store.transaction((tx) => keyTape(tx));
      tokenRows = await tapeTokens.find({});
    }
    const facts = new Map<string, { conditionId: string; outcome: string }>();
    const seqs = new Map<string, number>();
    let nextSeq = 1;
    for (const r of tokenRows) {
      if (r.conditionId !== undefined && r.outcome !== undefined)
        facts.set(r._id, { conditionId: r.conditionId, outcome: r.outcome });
      seqs.set(r._id, r.tokenSeq);
      nextSeq = Math.max(nextSeq, r.tokenSeq + 1);
    }
    return new TradeHistory(store, trades, fills, cash, tokens, facts, seqs, nextSeq);
  }

  /** The `tokenSeq` of `tokenId`, assigned now when the token has none. */
  private seqOf(tokenId: string): number {
    let seq = this.seqs.get(tokenId);
    if (seq === undefined) this.seqs.set(tokenId, (seq = this.nextSeq++));
    return seq;
  }

  /**
   * The tape rows of `trades` as stored (their {@link storedTapeRow}), and the facts of the tokens
   * of the compact ones not stored yet, written through `tx` beside them.
   */
  private async storeTape(
    tx: UnitOfWork,
    trades: readonly TapeTrade[],
    op?: Operation,
  ): Promise<{ stored: StoredTapeRow[]; facts: TapeTokenRow[] }> {
    const stored: StoredTapeRow[] = [];
    let facts: Map<string, TapeTokenRow> | undefined;
    for (const t of trades) {
      const tokenSeq = this.seqOf(t.tokenId);
      const row = storedTapeRow(t, this.tokens, tokenSeq, op);
      stored.push(row);
      // the token's row goes with its first stored row, and with its first compact print (its facts)
      if (this.durable.has(t.tokenId) && ('tradeId' in row || this.facts.has(t.tokenId))) continue;
      if (facts?.has(t.tokenId)) continue;
      const known = this.tokens(t.tokenId);
      (facts ??= new Map()).set(
        t.tokenId,
        known
          ? { _id: t.tokenId, tokenSeq, conditionId: known.conditionId, outcome: known.outcome }
          : { _id: t.tokenId, tokenSeq },
      );
    }
    if (!facts) return { stored, facts: [] };
    const col = tx.collection<TapeTokenRow>(TAPE_TOKENS);
    for (const f of facts.values()) await col.replaceOne(f);
    return { stored, facts: [...facts.values()] };
  }

  /** Makes the token rows of a committed write known. */
  private learnFacts(facts: readonly TapeTokenRow[] | undefined): void {
    for (const f of facts ?? []) {
      this.durable.add(f._id);
      if (f.conditionId !== undefined && f.outcome !== undefined)
        this.facts.set(f._id, { conditionId: f.conditionId, outcome: f.outcome });
    }
  }

  /**
   * Writes `batch` through `tx` (the caller's unit of work: the step that records the fill or the
   * operation). Tape rows are replaced by `_id`; fills and cash rows are inserted unless their
   * `_id` is there already.
   * @param opSeq - the venue operation whose capture prints `batch` holds, if it is one
   *   ({@link StoredPrint}: they are stored with it instead of its hash).
   * @returns the rows new to the store (a tape row counts as new when its `_id` was absent); hand
   *   them to {@link published} once `tx` has committed.
   * @throws what the store throws (the caller's transaction then fails as a whole).
   */
  async record(tx: UnitOfWork, batch: RecordedBatch, opSeq?: number): Promise<RecordedBatch> {
    const fresh = emptyBatch();
    if (batch.trades.length) {
      const col = tx.collection<StoredTapeRow>(TRADES);
      const op = opSeq === undefined ? undefined : { seq: opSeq, hash: operationHash(opSeq) };
      const { stored, facts } = await this.storeTape(tx, batch.trades, op);
      if (facts.length) this.factsWritten.set(fresh, facts);
      // a tape row already there (the other party's step wrote it, or a capture print written again) is replaced
      for (const i of await insertNew(col, batch.trades, fresh.trades, stored)) await col.replaceOne(stored[i]!);
    }
    if (batch.fills.length) await insertNew(tx.collection<TraderFill>(TRADER_FILLS), batch.fills, fresh.fills);
    if (batch.cash.length) await insertNew(tx.collection<CashMove>(CASH_MOVES), batch.cash, fresh.cash);
    return fresh;
  }

  /**
   * Records `batch` in a transaction of its own and notifies the listeners once it committed.
   * @param opSeq - as {@link record}'s.
   * @returns the rows that were new.
   */
  async recordAlone(batch: RecordedBatch, opSeq?: number): Promise<RecordedBatch> {
    const fresh = await this.store.transaction((tx) => this.record(tx, batch, opSeq));
    this.published(fresh);
    return fresh;
  }

  /**
   * Writes a bulk of rows known to be idempotent by `_id` (a load of recorded history), each by
   * `replaceOne` without reading first, in one transaction; the listeners are told the whole batch.
   */
  async load(batch: RecordedBatch): Promise<void> {
    const facts = await this.store.transaction(async (tx) => {
      const trades = tx.collection<StoredTapeRow>(TRADES);
      const written = await this.storeTape(tx, batch.trades);
      for (const t of written.stored) await trades.replaceOne(t);
      const fills = tx.collection<TraderFill>(TRADER_FILLS);
      for (const f of batch.fills) await fills.replaceOne(f);
      const cash = tx.collection<CashMove>(CASH_MOVES);
      for (const c of batch.cash) await cash.replaceOne(c);
      return written.facts;
    });
    this.learnFacts(facts);
    this.published(batch);
  }

  /**
   * Hands rows that {@link record} wrote to the listeners: call once their transaction committed.
   * A listener that throws does not keep the batch from the others. An empty batch is not handed on.
   */
  published(batch: RecordedBatch): void {
    this.learnFacts(this.factsWritten.get(batch));
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
      trades: new ChainCursor(this.trades, batchSize, start, (row) => tapeRowOf(row, this.tokens)),
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

/**
 * Pages through one history collection in chain order, keyed on the last position read; `S` is the
 * stored form of its rows, `T` what `toRow` makes of one (the row itself by default).
 */
class ChainCursor<
  T extends { _id: string; blockTimestamp: number; logIndex: number },
  S extends Doc & { _id: string; blockTimestamp: number; logIndex: number } = T & Doc,
> {
  private page: T[] = [];
  private at = 0;
  private last: T | undefined;
  private done = false;

  constructor(
    private readonly col: Collection<S>,
    private readonly size: number,
    /** The first block timestamp read. */
    private readonly from: number,
    private readonly toRow: (row: S) => T = (row) => row as unknown as T,
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
      for (const row of await this.col.find(filter, { sort: CHAIN_SORT, limit: this.size - page.length }))
        page.push(this.toRow(row));
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
