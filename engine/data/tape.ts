/**
 * Reads of the trade tape in chain order, newest first, by compound cursor (spec 2.9, 4.7): the
 * market's trades (collection `trades`) and one trader's fills (collection `traderFills`).
 *
 * A page is at most two index walks of O(limit) rows each, whatever the history's size:
 * - with a cursor `(ts, logIndex)`, first the rest of block `ts` (`blockTimestamp = ts`,
 *   `logIndex < logIndex`, walking `logIndex` down), then the blocks before it
 *   (`blockTimestamp < ts`, walking (`blockTimestamp`, `logIndex`) down);
 * - without one, the newest rows.
 * Both walks are served by the indexes of {@link HISTORY_INDEXES} (an equality prefix — the trader
 * or the token's short key, `tokenSeq` — then the chain position). A token no tape row holds has no
 * key: its walk reads nothing. A market's tape is the walks of its outcome tokens
 * (O(limit) rows each), merged: the tape keeps no index of its own on the market, which would cost
 * every print one more index entry (and its page written) to serve one read.
 *
 * Rows sharing one chain position (a trader who was both maker and taker of one trade) are never
 * split between two pages, so a cursor made of the last row's position neither skips nor repeats
 * a row, also while new rows are appended at the head.
 *
 * Filters the index does not serve (side, role, and the market or token of a trader's fills) are
 * applied to a bounded scan of at most {@link SCAN_FACTOR} × limit rows: such a page may hold fewer
 * rows than `limit`, even none, while its `next` cursor is not null.
 */

import type { Collection, Doc, Filter, Store } from '../store/port.js';
import { errors } from '../errors.js';
import { HISTORY_INDEXES, TRADER_FILLS, TRADES, tapeRowOf } from './records.js';
import type { ChainPosition, StoredTapeRow, TapeTrade, TokenFacts, TraderFill } from './records.js';

/** Rows a filtered page scans per row it may return. */
export const SCAN_FACTOR = 4;

/** A position in chain order: the last row of a page, where the next page starts (exclusive). */
export interface ChainCursor {
  /** `blockTimestamp` of the row, integer seconds. */
  ts: number;
  /** `logIndex` of the row. */
  logIndex: number;
}

/** What a tape read asks for. */
export interface TapeQuery {
  /** Rows per page, 1 or more (the API caps it). */
  limit: number;
  /** Start strictly after this position (in descending chain order); null = the newest rows. */
  cursor: ChainCursor | null;
  /** Only this market (condition id). */
  conditionId?: string;
  /**
   * The outcome tokens of `conditionId` (the market registry's, engine/data/markets.ts): the tape of
   * a market is read token by token. None known: the market has no rows.
   */
  marketTokens?: readonly string[];
  /** Only this outcome token. */
  tokenId?: string;
  /** Only this side (the taker's on the tape, the trader's own on a trader's fills). */
  side?: 'BUY' | 'SELL';
}

/** What a trader's fills read asks for. */
export interface TraderTapeQuery extends TapeQuery {
  /** Only the fills where the trader was the taker. */
  takerOnly?: boolean;
}

/** One page in descending chain order. */
export interface ChainPage<T> {
  rows: T[];
  /** Where the next page starts (the position of the last row read), or null at the end. */
  next: ChainCursor | null;
}

/**
 * The cursor of a request from its two parameters (both or neither).
 * @throws {DomainError} `INVALID_REQUEST` when only one of them is given.
 */
export function cursorOf(ts: number | undefined, logIndex: number | undefined): ChainCursor | null {
  if (ts === undefined && logIndex === undefined) return null;
  if (ts === undefined || logIndex === undefined)
    throw errors.badRequest(
      'cursor_ts and next_cursor_log_idx go together: send both (next_cursor and next_cursor_log_idx of the ' +
        'previous page) or neither',
    );
  return { ts, logIndex };
}

const samePosition = (a: ChainPosition, b: ChainPosition) =>
  a.blockTimestamp === b.blockTimestamp && a.logIndex === b.logIndex;

/**
 * Up to `n` rows matching `eq` strictly before `cursor` in chain order, newest first: the rest of
 * the cursor's block, then the blocks before it.
 */
async function chainScan<T extends Doc>(
  coll: Collection<T>,
  eq: Filter,
  cursor: ChainCursor | null,
  n: number,
): Promise<T[]> {
  const rows: T[] = [];
  if (cursor) {
    rows.push(
      ...(await coll.find(
        { ...eq, blockTimestamp: cursor.ts, logIndex: { $lt: cursor.logIndex } },
        { sort: { logIndex: -1 }, limit: n },
      )),
    );
    if (rows.length >= n) return rows;
  }
  // without a cursor, from the chain's head: an index range like a cursor's page
  const before = { ...eq, blockTimestamp: cursor ? { $lt: cursor.ts } : { $gte: 0 } };
  rows.push(...(await coll.find(before, { sort: { blockTimestamp: -1, logIndex: -1 }, limit: n - rows.length })));
  return rows;
}

/**
 * A page of at most `limit` rows kept by `keep` (one more when the last position holds two rows)
 * out of `scanned`, the rows after the cursor in chain order; `exhausted`: the history ends there.
 */
function assemble<T extends ChainPosition>(
  scanned: T[],
  exhausted: boolean,
  limit: number,
  keep: ((row: T) => boolean) | null,
): ChainPage<T> {
  const groups: T[][] = [];
  for (const row of scanned) {
    const g = groups.at(-1);
    if (g && samePosition(g[0]!, row)) g.push(row);
    else groups.push([row]);
  }
  // the last position read may have a row beyond the scan: leave it to the next page
  if (!exhausted && groups.length > 1) groups.pop();
  const rows: T[] = [];
  let last: T | null = null;
  let used = 0;
  for (const g of groups) {
    if (rows.length >= limit) break;
    rows.push(...(keep ? g.filter(keep) : g));
    last = g[0]!;
    used++;
  }
  const atEnd = exhausted && used === groups.length;
  return { rows, next: atEnd || !last ? null : { ts: last.blockTimestamp, logIndex: last.logIndex } };
}

/** Descending chain order of tape rows (one row a position). */
const newestFirst = (a: ChainPosition, b: ChainPosition) =>
  b.blockTimestamp - a.blockTimestamp || b.logIndex - a.logIndex;

/** Rows a page reads: a row past `limit` tells whether the history goes on, another a second row at its position. */
const scanSize = (limit: number, filtered: boolean) => (filtered ? SCAN_FACTOR * limit : limit) + 2;

const opened = new WeakMap<Store, Promise<TapeReader>>();

/** What the tape's reads know of its tokens: the history's writer (engine/data/history.ts `TradeHistory`). */
export interface TapeTokens {
  /** The market facts of the capture's tokens, as stored capture prints are completed with them. */
  tokens: TokenFacts;
  /** The token's short key on the tape (records.ts `TapeKey`); undefined: no tape row holds the token. */
  tokenSeq(tokenId: string): number | undefined;
}

/**
 * The tape's reads over one store (its collections opened once, with {@link HISTORY_INDEXES}); tape
 * rows stored as {@link StoredPrint}s are read back whole ({@link tapeRowOf}).
 */
export class TapeReader {
  private constructor(
    private readonly stored: Collection<StoredTapeRow>,
    private readonly fills: Collection<TraderFill>,
    private readonly keys: TapeTokens,
  ) {}

  /**
   * The reader of `store` (opened on first use, then shared).
   * @param tokens - the tokens' facts and keys, the history's writer's (engine/data/history.ts).
   */
  static of(store: Store, tokens: TapeTokens): Promise<TapeReader> {
    let r = opened.get(store);
    if (!r) {
      r = (async () =>
        new TapeReader(
          await store.collection<StoredTapeRow>(TRADES, HISTORY_INDEXES[TRADES]),
          await store.collection<TraderFill>(TRADER_FILLS, HISTORY_INDEXES[TRADER_FILLS]),
          tokens,
        ))();
      r.catch(() => opened.delete(store));
      opened.set(store, r);
    }
    return r;
  }

  /** Up to `n` tape rows matching `eq` before `cursor` ({@link chainScan}), read back whole. */
  private async tapeScan(eq: Filter, cursor: ChainCursor | null, n: number): Promise<TapeTrade[]> {
    return (await chainScan(this.stored, eq, cursor, n)).map((row) => tapeRowOf(row, this.keys.tokens));
  }

  /** Up to `n` rows of token `tokenId` before `cursor`: none, without a scan, when no row holds it. */
  private tokenScan(tokenId: string, cursor: ChainCursor | null, n: number): Promise<TapeTrade[]> {
    const tokenSeq = this.keys.tokenSeq(tokenId);
    return tokenSeq === undefined ? Promise.resolve([]) : this.tapeScan({ tokenSeq }, cursor, n);
  }

  /**
   * A page of the market tape, newest first. `tokenId` narrows the index walk, or else
   * `conditionId` to the walks of its `marketTokens`, merged; with both, a token of another market
   * gives an empty last page. `side` (the taker's) is a filter of the scan (see the module header).
   */
  async tradesPage(q: TapeQuery): Promise<ChainPage<TapeTrade>> {
    const keep = q.side ? (t: TapeTrade) => t.side === q.side : null;
    const n = scanSize(q.limit, keep !== null);
    let scanned: TapeTrade[];
    if (q.tokenId) scanned = await this.tokenScan(q.tokenId, q.cursor, n);
    else if (!q.conditionId) scanned = await this.tapeScan({}, q.cursor, n);
    else {
      // each token's first n rows hold the market's first n: merged, the first n of them
      const walks = await Promise.all(
        [...new Set(q.marketTokens ?? [])].map((tokenId) => this.tokenScan(tokenId, q.cursor, n)),
      );
      scanned = walks
        .flat()
        .filter((t) => t.conditionId === q.conditionId)
        .sort(newestFirst)
        .slice(0, n);
    }
    // a token belongs to one market: its first row tells whether it is the market asked for
    if (q.tokenId && q.conditionId && scanned.length && scanned[0]!.conditionId !== q.conditionId)
      return { rows: [], next: null };
    return assemble(scanned, scanned.length < n, q.limit, keep);
  }

  /**
   * A page of `address`'s fills (lower-case), newest first, each in the trader's own terms. The
   * trader narrows the index walk; market, token, side and `takerOnly` are filters of the scan.
   */
  async traderPage(address: string, q: TraderTapeQuery): Promise<ChainPage<TraderFill>> {
    const conds: Array<(f: TraderFill) => boolean> = [];
    if (q.conditionId) conds.push((f) => f.conditionId === q.conditionId);
    if (q.tokenId) conds.push((f) => f.tokenId === q.tokenId);
    if (q.side) conds.push((f) => f.side === q.side);
    if (q.takerOnly) conds.push((f) => f.role === 'taker');
    const keep = conds.length ? (f: TraderFill) => conds.every((c) => c(f)) : null;
    const n = scanSize(q.limit, keep !== null);
    const scanned = await chainScan(this.fills, { address }, q.cursor, n);
    return assemble(scanned, scanned.length < n, q.limit, keep);
  }

  /**
   * A page of the tape rows of the trades `address` (lower-case) was a party to, newest first: its
   * fills' walk (as {@link TapeReader.traderPage}), each fill's trade read by id (one row for a trade
   * it was on both sides of). Market, token and side are the tape row's (the taker's), and
   * `takerOnly` keeps the trades it took; all are filters of the scan.
   */
  async walletTradesPage(address: string, q: TraderTapeQuery): Promise<ChainPage<TapeTrade>> {
    const filtered = Boolean(q.conditionId || q.tokenId || q.side || q.takerOnly);
    const n = scanSize(q.limit, filtered);
    const fills = await chainScan(this.fills, { address }, q.cursor, n);
    const ids = [...new Set(fills.map((f) => f.tradeId))];
    const byId = new Map(
      (ids.length ? await this.stored.find({ _id: { $in: ids } }) : []).map((t) => [
        t._id,
        tapeRowOf(t, this.keys.tokens),
      ]),
    );
    const rows = ids.map((id) => byId.get(id)).filter((t): t is TapeTrade => t !== undefined);
    const taken = new Set(fills.filter((f) => f.role === 'taker').map((f) => f.tradeId));
    const keep = filtered
      ? (t: TapeTrade) =>
          (!q.conditionId || t.conditionId === q.conditionId) &&
          (!q.tokenId || t.tokenId === q.tokenId) &&
          (!q.side || t.side === q.side) &&
          (!q.takerOnly || taken.has(t.tradeId))
      : null;
    return assemble(rows, fills.length < n, q.limit, keep);
  }
}
