/**
 * The trade history's records: every fill, every tape trade and every cash movement is a fact with a
 * position on a simulated chain (2-second blocks), so that public reads, statements, leaderboards and
 * copies are built from records alone. Spec 2.9, 4.6, 4.7.
 *
 * Three collections, each row carrying its chain position (`blockTimestamp`, `logIndex`,
 * `transactionHash`). The pair (`blockTimestamp`, `logIndex`) is one chain event: a trade's tape row
 * and its parties' fills share it, every other trade and every cash movement has its own, so the
 * pair orders the records of all three collections in one total order (the chain's):
 * - `trades` ({@link TapeTrade}): the market tape, one row per trade (users' trades, the liquidity
 *   provider's, the capture's prints, the loaded real history);
 * - `traderFills` ({@link TraderFill}): one row per party with a wallet in a trade, in that party's own
 *   terms (its token, side and price: with complementary matching the maker may hold the other outcome);
 * - `cashMoves` ({@link CashMove}): pUSD and share movements that are not trades (the initial credit,
 *   split, merge, redeem, withdrawals and their refunds, combo and copytrade cash).
 *
 * Quantities are decimal strings: prices in decimal probability, sizes in shares, amounts in dollars
 * (pUSD, at most 6 decimals). Addresses are lower-case `0x` + 40 hex.
 */

import sha3 from 'js-sha3';
import { dec, str, unitsString } from '../decimal.js';
import type { IndexSpec } from '../store/port.js';

/** Seconds between two simulated blocks. */
export const BLOCK_SECONDS = 2;

/** The fixed wallet of the simulated liquidity provider (its trades are on the tape under it). */
export const LIQUIDITY_PROVIDER_ADDRESS = '0x00000000000000000000000000000000000a11ce';

/** Where a record of the trade history comes from. */
export type RecordSource =
  /** A trade or cash movement of this service's venue (users and the liquidity provider). */
  | 'venue'
  /** A trade print of the market-data capture: anonymous (no wallets). */
  | 'capture'
  /** A row of the real Polymarket history loaded at start (data/). */
  | 'history'
  /** A fill of the real leader wallet replayed live (`COPYTRADE_LEADER_REPLAY`), at its replay time. */
  | 'replay';

/** Position of a record on the simulated chain. */
export interface ChainPosition {
  /** Block time, integer seconds since the epoch (a multiple of {@link BLOCK_SECONDS} for venue records). */
  blockTimestamp: number;
  /** Index of the event in its block (0-based; a trade's tape row and fills share one). */
  logIndex: number;
  /** `0x` + 64 hex; the records of one venue operation share it (one transaction can hold several fills). */
  transactionHash: string;
}

/** One trade on the market tape (collection `trades`, `_id` = {@link TapeTrade.tradeId}). */
export interface TapeTrade extends ChainPosition {
  _id: string;
  /** Unique trade id (the venue's; `<transactionHash>:<logIndex>` for loaded history). */
  tradeId: string;
  /** When it traded, epoch ms. */
  atMs: number;
  conditionId: string;
  /** The taker's outcome token. */
  tokenId: string;
  /** Outcome name of `tokenId` ("Yes", "Up", …). */
  outcome: string;
  /** The taker's side. */
  side: 'BUY' | 'SELL';
  /** Price of `tokenId`, decimal probability. */
  price: string;
  /** Shares. */
  size: string;
  /** price × size, dollars. */
  notionalUsd: string;
  /** Fee paid by the taker, dollars ("0" when none). */
  feeUsd: string;
  /** Maker's wallet; null on an anonymous print. */
  maker: string | null;
  /** Taker's wallet; null on an anonymous print. */
  taker: string | null;
  source: RecordSource;
}

/** One party's side of a trade (collection `traderFills`, `_id` = `<tradeId>:<role>`). */
export interface TraderFill extends ChainPosition {
  _id: string;
  tradeId: string;
  /** The party's wallet (lower-case). */
  address: string;
  /** This service's user id of the party; null for the liquidity provider and loaded history. */
  userId: string | null;
  /** The order of the party that filled; null when it had none (liquidity provider, history). */
  orderId: string | null;
  role: 'maker' | 'taker';
  atMs: number;
  conditionId: string;
  /** The party's outcome token. */
  tokenId: string;
  outcome: string;
  /** The party's side. */
  side: 'BUY' | 'SELL';
  /** Price of the party's token, decimal probability. */
  price: string;
  /** Shares. */
  size: string;
  /** price × size, dollars. */
  notionalUsd: string;
  /** Fee this party paid, dollars. */
  feeUsd: string;
  source: RecordSource;
}

/** Kinds of {@link CashMove}. */
export type CashMoveKind =
  | 'credit'
  | 'split'
  | 'merge'
  | 'redeem'
  | 'withdraw'
  | 'withdraw_refund'
  | 'combo_debit'
  | 'combo_payout'
  /** A combo that lost (a leg's market resolved against it): no pUSD moves, its cost is lost. */
  | 'combo_loss'
  | 'copytrade';

/** A pUSD or share movement that is not a trade (collection `cashMoves`, `_id` = the operation's id). */
export interface CashMove extends ChainPosition {
  _id: string;
  address: string;
  userId: string | null;
  kind: CashMoveKind;
  atMs: number;
  /** The condition of a split, merge or redeem (or the combo's id for combo cash); null otherwise. */
  conditionId: string | null;
  /** Signed pUSD change, dollars. */
  pusdDelta: string;
  /**
   * Signed share changes. A split acquires both outcomes (their cost basis: the dollars paid, shared
   * by the outcomes' prices at the time, else equally), a merge and a redeem dispose of shares
   * (proceeds: the dollars received, likewise shared). `price`: the outcome's mark when a split or a
   * merge was recorded (decimal probability), what shares its dollars; absent on other movements and on
   * movements recorded before it was kept (their dollars are shared equally).
   */
  shares: { tokenId: string; delta: string; outcome: string; price?: string }[];
  source: RecordSource;
}

/**
 * The simulated transaction hash of venue operation `seq` (its journal sequence number, never
 * reused): keccak256 of `venue-op:<seq>` (UTF-8), `0x` + 64 lowercase hex. The trades of one operation
 * share it. js-sha3 hashes a short string in a few µs, about a quarter of ethers' `keccak256` (one hash
 * per venue operation that trades).
 */
export function operationHash(seq: number): string {
  let hash = recentHashes.get(seq);
  if (hash === undefined) {
    hash = `0x${sha3.keccak256(`venue-op:${seq}`)}`;
    if (recentHashes.size >= RECENT_HASHES) recentHashes.clear();
    recentHashes.set(seq, hash);
  }
  return hash;
}

/**
 * The {@link operationHash}es of the latest operations, by seq: the venue hashes an operation that
 * trades when it runs, and the trade history again when it records the operation's prints.
 */
const recentHashes = new Map<number, string>();
/** Bound on {@link recentHashes}' entries (cleared when full). */
const RECENT_HASHES = 1024;

/** Decimal places of a notional ({@link notionalOf}). */
const NOTIONAL_DP = 6;

/** Powers of ten exact as doubles (up to 10^22). */
const POW10 = Array.from({ length: 23 }, (_, k) => 10 ** k);

/** The last {@link scaled} result (reused: read before the next call). */
const scaledOut = { n: 0, scale: 0 };

/**
 * `v`, a plain non-negative decimal (digits, then optionally `.` and digits: no sign, no exponent),
 * as an integer count `n` of 10^-`scale`, when at most 15 digits (exact as a double); else null.
 * The result object is shared: read it before the next call.
 */
function scaled(v: string): { n: number; scale: number } | null {
  const len = v.length;
  let n = 0;
  let digits = 0;
  let dot = -1;
  for (let i = 0; i < len; i++) {
    const c = v.charCodeAt(i) - 48;
    if (c >= 0 && c <= 9) {
      n = n * 10 + c;
      digits++;
    } else if (c === -2 && dot < 0 && i > 0 && i < len - 1) dot = i;
    else return null;
  }
  if (len === 0 || digits > 15) return null;
  scaledOut.n = n;
  scaledOut.scale = dot < 0 ? 0 : len - dot - 1;
  return scaledOut;
}

/**
 * price × size in dollars, at most 6 decimals, rounded half to even (decimal strings in and out,
 * canonical as {@link str} writes them). Every print and fill computes it: plain decimals whose
 * product is an exact integer count of its last decimal place as a double are multiplied and
 * rounded in integers (the same digits as Decimal's, without its allocations), any other input
 * through Decimal.
 */
export function notionalOf(price: string, size: string): string {
  const p = scaled(price);
  const pn = p?.n ?? 0;
  const ps = p?.scale ?? 0;
  const s = p && scaled(size);
  if (p && s) {
    const product = pn * s.n;
    const scale = ps + s.scale;
    if (Number.isSafeInteger(product) && scale - NOTIONAL_DP < POW10.length) {
      let units = product; // of 10^-dp
      let dp = scale;
      if (scale > NOTIONAL_DP) {
        const div = POW10[scale - NOTIONAL_DP]!;
        const rest = product % div;
        units = (product - rest) / div;
        const twice = 2 * rest;
        if (twice > div || (twice === div && units % 2 === 1)) units += 1;
        dp = NOTIONAL_DP;
      }
      return unitsString(units, dp);
    }
  }
  return str(dec(price).times(dec(size)).toDecimalPlaces(NOTIONAL_DP));
}

/** The market facts of an outcome token (the venue's catalogue): what a stored capture print leaves out. */
export type TokenFacts = (tokenId: string) => { conditionId: string; outcome: string } | undefined;

/**
 * The market facts of a token some stored capture print leaves out, as the `tapeTokens` collection
 * keeps them (written with the first such print): the prints read back whole even when a later
 * catalogue no longer lists the token.
 */
export interface TapeTokenRow {
  /** The outcome token id. */
  _id: string;
  /**
   * The token's short key on the tape ({@link TapeKey.tokenSeq}): 1, 2, … in the order tokens first
   * reached the tape, assigned with the token's first stored row and never reused.
   */
  tokenSeq: number;
  /** The token's market; absent while no catalogue knew the token when its rows were written. */
  conditionId?: string;
  /** The token's outcome name; present with `conditionId`. */
  outcome?: string;
}

/**
 * The short integer every stored row of `trades` carries for its token (`tokenSeq`, from
 * {@link TapeTokenRow}): the tape's per-token index is on it instead of the 77-digit token id, a key
 * a fraction of the size (a capture print's insert and the pages a commit writes). Never in an answer.
 */
export interface TapeKey {
  tokenSeq: number;
}

/** The stored rows of `trades`: full rows and compact prints, each with its token's {@link TapeKey}. */
export type StoredTapeRow = (TapeTrade | StoredPrint) & TapeKey;

/**
 * A capture print as the `trades` collection stores it: the fields of a {@link TapeTrade} that do not
 * follow from the others. A print is anonymous (`maker`, `taker` null, no fee), its trade id is its
 * `_id`, its notional is price × size ({@link notionalOf}), its market and outcome are its token's
 * ({@link TokenFacts}) and its transaction hash is its venue operation's ({@link operationHash} of
 * `op`, when the writer knew the operation), so most of its bytes (and of the pages a commit writes)
 * need not be stored. Told apart from a full row by the absent `tradeId`.
 */
export type StoredPrint = Omit<
  TapeTrade,
  'tradeId' | 'conditionId' | 'outcome' | 'notionalUsd' | 'feeUsd' | 'maker' | 'taker' | 'transactionHash'
> &
  ({ transactionHash: string; op?: undefined } | { op: number; transactionHash?: undefined });

/** A venue operation's sequence number and its {@link operationHash}. */
export interface Operation {
  seq: number;
  hash: string;
}

/**
 * The stored form of tape row `t`: a capture print whose left-out fields are what
 * {@link tapeRowOf} gives back (checked here) as a {@link StoredPrint}, any other row as it is; either
 * with its token's `tokenSeq` ({@link TapeKey}).
 * @param op - the venue operation that made the print, if known: a print of it stores `op.seq`
 *   instead of the hash.
 */
export function storedTapeRow(t: TapeTrade, tokens: TokenFacts, tokenSeq: number, op?: Operation): StoredTapeRow {
  if (t.source !== 'capture' || t.tradeId !== t._id || t.maker !== null || t.taker !== null || t.feeUsd !== '0')
    return { ...t, tokenSeq };
  const token = tokens(t.tokenId);
  if (!token || token.conditionId !== t.conditionId || token.outcome !== t.outcome) return { ...t, tokenSeq };
  if (t.notionalUsd !== notionalOf(t.price, t.size)) return { ...t, tokenSeq };
  return {
    _id: t._id,
    tokenSeq,
    blockTimestamp: t.blockTimestamp,
    logIndex: t.logIndex,
    ...(op && op.hash === t.transactionHash ? { op: op.seq } : { transactionHash: t.transactionHash }),
    atMs: t.atMs,
    tokenId: t.tokenId,
    side: t.side,
    price: t.price,
    size: t.size,
    source: t.source,
  };
}

/** The last operation whose hash {@link tapeRowOf} computed (the prints of one operation are read together). */
let lastOperation: Operation = { seq: -1, hash: '' };

/** The transaction hash of a stored print. */
function printHash(row: StoredPrint): string {
  if (row.transactionHash !== undefined) return row.transactionHash;
  if (lastOperation.seq !== row.op) lastOperation = { seq: row.op, hash: operationHash(row.op) };
  return lastOperation.hash;
}

/**
 * The tape row a stored row of `trades` stands for: a {@link StoredPrint} completed, a full row as it
 * is; either without its {@link TapeKey}.
 */
export function tapeRowOf(row: TapeTrade | StoredPrint | StoredTapeRow, tokens: TokenFacts): TapeTrade {
  if ('tradeId' in row && row.tradeId !== undefined) {
    if (!('tokenSeq' in row)) return row;
    const { tokenSeq: _key, ...t } = row;
    return t;
  }
  const print = row as StoredPrint;
  const token = tokens(print.tokenId);
  return {
    _id: print._id,
    tradeId: print._id,
    blockTimestamp: print.blockTimestamp,
    logIndex: print.logIndex,
    transactionHash: printHash(print),
    atMs: print.atMs,
    conditionId: token?.conditionId ?? '',
    tokenId: print.tokenId,
    outcome: token?.outcome ?? '',
    side: print.side,
    price: print.price,
    size: print.size,
    notionalUsd: notionalOf(print.price, print.size),
    feeUsd: '0',
    maker: null,
    taker: null,
    source: print.source,
  };
}

/** Collection names. */
export const TRADES = 'trades';
export const TRADER_FILLS = 'traderFills';
export const CASH_MOVES = 'cashMoves';
/** The market facts of the tokens of stored capture prints ({@link TapeTokenRow}). */
export const TAPE_TOKENS = 'tapeTokens';

/** Everything one venue operation recorded, handed to {@link TradeHistoryFeed} listeners after commit. */
export interface RecordedBatch {
  trades: TapeTrade[];
  fills: TraderFill[];
  cash: CashMove[];
}

/**
 * The feed the aggregates (positions, PnL, leaderboard, statements) are kept up to date from:
 * each batch once committed, in chain order; {@link TradeHistoryFeed.replay} hands the history
 * recorded so far in the same order (at start, before live batches).
 */
export interface TradeHistoryFeed {
  /** Subscribes to batches committed from now on. */
  onRecorded(listener: (batch: RecordedBatch) => void): void;
  /**
   * Every record so far in chain order, in batches of at most `batchSize` records; with `from`, only
   * the records at or after `from.fromBlockTimestamp` (chain seconds).
   */
  replay(visit: (batch: RecordedBatch) => void | Promise<void>, batchSize?: number, from?: ReplayStart): Promise<void>;
}

/** Where a {@link TradeHistoryFeed.replay} starts: the first block timestamp (chain seconds) it hands. */
export interface ReplayStart {
  fromBlockTimestamp: number;
}

/**
 * Indexes of the three collections (opened with them at start, by whoever opens them first; the
 * history's writer and its readers pass the same list). Chain order is (`blockTimestamp`, `logIndex`), `_id`
 * breaking ties (a trade's tape row and fills share a position; the replay walks in this order).
 */
export const HISTORY_INDEXES: Record<string, IndexSpec[]> = {
  [TRADES]: [
    { fields: ['blockTimestamp', 'logIndex', '_id'] },
    // a market's tape is read token by token (engine/data/tape.ts): no index on the market; the
    // token by its short key (TapeKey), not its 77-digit id
    { fields: ['tokenSeq', 'blockTimestamp', 'logIndex'] },
  ],
  [TRADER_FILLS]: [
    { fields: ['address', 'blockTimestamp', 'logIndex'] },
    { fields: ['blockTimestamp', 'logIndex', '_id'] },
  ],
  [CASH_MOVES]: [
    { fields: ['address', 'blockTimestamp', 'logIndex'] },
    { fields: ['blockTimestamp', 'logIndex', '_id'] },
  ],
};
