import { Dec, dec, nonPositive, ONE, onTick, positive, SIZE_DP, str, unitsString, USD_DP, ZERO } from '../decimal.js';
import { OrderBook, priceKey, type BookLevel, type Resting } from './book.js';
import { LIQUIDITY_PROVIDER_ID, type Ledger, type Reservation } from './ledger.js';
import { blockOf, type ChainClock } from './chain.js';
import { operationHash, type ChainPosition, type TapeTrade } from '../data/records.js';
import type {
  CancelReason,
  FillReport,
  Side,
  TradeFacts,
  TradeLeg,
  TokenInfo,
  Touch,
  VenueOrder,
  VenueOrderState,
  VenueReport,
} from './port.js';

/**
 * What one venue operation did, collected while it runs in memory: the facade then journals the
 * touched users and orders, emits the reports in order and notifies the touched books.
 */
export interface Tx {
  /** The operation's journal sequence number (also names its trades: `T<seq>-<n>`). */
  seq: number;
  /** When the operation ran, epoch ms. */
  atMs: number;
  /** Users whose wallet changed (insertion order = journal row order). */
  users: Set<string>;
  /** Orders whose state changed (insertion order = journal row order). */
  orders: Set<string>;
  /** Tokens whose book changed. */
  tokens: Set<string>;
  /** Reports, in the order they go out. */
  reports: VenueReport[];
  /** Trades so far in this operation. */
  trades: number;
  /** Tokens where quotes of the liquidity provider were taken (it refills them later). */
  liquidityTaken: Set<string>;
  /** The liquidity provider's quotes traded with, each once per trade: the captured levels to sync. */
  quotesTaken: { tokenId: string; orderId: string; side: Side; price: Dec }[];
  /** Markets (condition ids) whose tick or status changed: journaled with the operation. */
  markets: Set<string>;
  /**
   * The venue's chain sequence (positions of trades and wallet operations); null: positions made up
   * from the operation alone.
   */
  chain: ChainClock | null;
  /** The operation's simulated transaction hash, once one of its events needed it. */
  hash?: string;
  /** Whether the operation took chain positions (its journal entry then records where the sequence is). */
  positioned: boolean;
  /** Trade prints of the capture applied by the operation: anonymous tape rows, recorded once it is journaled. */
  prints: TapeTrade[];
}

/**
 * A fresh, empty transaction. @param atMs epoch ms.
 * @param chain - the venue's chain sequence; without it (tests of the matching alone) positions are
 *   the operation's block and its trade count.
 */
export function newTx(seq: number, atMs: number, chain: ChainClock | null = null): Tx {
  return {
    seq,
    atMs,
    chain,
    positioned: false,
    prints: [],
    users: new Set(),
    orders: new Set(),
    tokens: new Set(),
    reports: [],
    trades: 0,
    liquidityTaken: new Set(),
    quotesTaken: [],
    markets: new Set(),
  };
}

/** The chain position of the next event (trade, wallet operation) of operation `tx`. */
export function nextPosition(tx: Tx): ChainPosition {
  const hash = (tx.hash ??= operationHash(tx.seq));
  tx.positioned = true;
  if (tx.chain) return tx.chain.position(tx.atMs, hash);
  return { blockTimestamp: blockOf(tx.atMs), logIndex: tx.trades, transactionHash: hash };
}

/** An order resting in a book, as {@link MatchingEngine.resting} lists it (a copy: changing it changes nothing). */
export interface RestingOrder {
  tokenId: string;
  orderId: string;
  userId: string;
  side: Side;
  /** Limit price, decimal probability. */
  price: Dec;
  /** Shares it still offers in the book. */
  remaining: Dec;
  /** Time priority within its level. */
  seq: number;
}

/** The venue's record of a user order (with what it still reserves). */
export interface OrderEntry extends Reservation {
  order: VenueOrder;
  status: VenueOrderState['status'];
  /** Shares left (limit and market sell); null for a market buy. */
  remaining: Dec | null;
  fills: FillReport[];
  final: VenueReport | null;
  /** Last change, epoch ms. */
  updatedAtMs: number;
  /** Time priority when resting. */
  seq: number;
  /** The order's actor recorded its final state: the next checkpoint forgets the order. */
  released?: boolean;
  /** JSON of `order` (which never changes), made by the first {@link MatchingEngine.rowJson}. */
  orderJson?: string;
  /** The last {@link MatchingEngine.rowJson} of this entry and the values it was made from. */
  rowMemo?: RowMemo;
}

/**
 * A row's JSON with the entry's values it was made from: the row is the same while each is (the
 * decimals are immutable and replaced on change, the fills only appended to; a market buy's last fill
 * marked `completes` in place is so as its order closes, which changes its status), so a checkpoint
 * reuses the JSON of every order that did not change since it was last journaled.
 */
interface RowMemo {
  json: string;
  status: OrderEntry['status'];
  remaining: Dec | null;
  reservedUsd: Dec;
  reservedShares: Dec;
  fills: number;
  final: VenueReport | null;
  updatedAtMs: number;
  seq: number;
}

/** A serialized order, as written to the journal and checkpoints (decimal strings: shares, dollars). */
export interface OrderRow {
  order: VenueOrder;
  status: OrderEntry['status'];
  remaining: string | null;
  reservedUsd: string;
  reservedShares: string;
  fills: FillReport[];
  final: VenueReport | null;
  updatedAtMs: number;
  seq: number;
}

/**
 * How a trade is settled, as Polymarket's CTF exchange matches: `normal` (a buy against a sell of
 * the same token: shares change hands), `mint` (a buy of one outcome against a buy of the other:
 * both payments, summing to $1 a share, mint full sets, each buyer gets its token), `merge` (a
 * sell of one outcome against a sell of the other: the full sets are merged back into $1 a share,
 * each seller gets its price).
 */
export type MatchKind = 'normal' | 'mint' | 'merge';

/** A resting order an incoming order can meet, with the price it trades at on the incoming order's token. */
interface Meet {
  resting: Resting;
  /** The book it rests in: the incoming order's token (`normal`) or its complement. */
  book: OrderBook;
  /** Price on the incoming order's token: the resting price, or 1 − it for the complement. */
  px: Dec;
  kind: MatchKind;
}

/** 1 − price by price key (complement prices are on the same tick: at most 3 decimals). */
const mirrors = new Map<number, Dec>();

/** The complement price 1 − `price` (decimal probability), shared by key. */
export function mirror(price: Dec): Dec {
  const key = priceKey(price);
  let m = mirrors.get(key);
  if (m === undefined) mirrors.set(key, (m = ONE.minus(price)));
  return m;
}

/**
 * The better price for a bid (`buy`) or an ask of the best level `own` of a token's book and the
 * best level `comp` of its complement's opposite side (at 1 − its price), or undefined when both
 * are empty. Compared by price key (thousandths) when both are whole numbers of them, else in decimals.
 */
function bestOf(own: BookLevel | undefined, comp: BookLevel | undefined, buy: boolean): Dec | undefined {
  if (comp === undefined) return own?.price;
  if (own === undefined) return mirror(comp.price);
  const mk = 1000 - comp.key;
  const better =
    Number.isInteger(own.key) && Number.isInteger(comp.key)
      ? buy
        ? mk > own.key
        : mk < own.key
      : buy
        ? mirror(comp.price).gt(own.price)
        : mirror(comp.price).lt(own.price);
  return better ? mirror(comp.price) : own.price;
}

/**
 * One side of a book as levels `{price, size}`, best first, with
 * the complement's opposite side mirrored in and merged by price.
 */
function mergedLevels(
  own: { price: Dec; size: Dec }[],
  mirrored: { price: Dec; size: Dec }[],
  side: Side,
  maxLevels: number,
): { price: Dec; size: Dec }[] {
  if (!mirrored.length) return own;
  const byKey = new Map<number, { price: Dec; size: Dec }>();
  for (const l of own) byKey.set(priceKey(l.price), { price: l.price, size: l.size });
  for (const l of mirrored) {
    const price = mirror(l.price);
    const k = priceKey(price);
    const at = byKey.get(k);
    if (at) at.size = at.size.plus(l.size);
    else byKey.set(k, { price, size: l.size });
  }
  const out = [...byKey.entries()].sort((a, b) => (side === 'buy' ? b[0] - a[0] : a[0] - b[0])).map(([, l]) => l);
  return out.slice(0, maxLevels);
}

/** One hundredth of a dollar: what a market buy may leave unspent and still be complete. */
const CENT = dec('0.01');

/**
 * Whether a market buy of `quote` dollars completes against `levels` (the resting orders it would
 * meet, best first, its own left out), in decimals: at each, whole hundredths of a share its
 * remaining amount buys at the level's price, up to the level's size; it stops when the amount left
 * cannot buy a hundredth at the next price, or the levels run out with less than a cent left.
 */
export function quoteFillableDecimal(levels: Iterable<{ px: Dec; remaining: Dec }>, quote: Dec): boolean {
  let left = quote;
  for (const { px, remaining } of levels) {
    const qty = Dec.min(remaining, left.div(px).toDecimalPlaces(SIZE_DP, Dec.ROUND_DOWN));
    if (nonPositive(qty)) return true;
    left = left.minus(qty.times(px));
  }
  return left.lt(CENT);
}

/**
 * {@link units} of `10^-dp` read once per decimal (by identity: prices, sizes and amounts are shared
 * immutable decimals, see {@link dec} and {@link mirror}; a batch's buys share the parse of theirs).
 */
function unitsMemo(dp: number): (d: Dec) => number | null {
  const memo = new WeakMap<Dec, number | null>();
  return (d) => {
    let n = memo.get(d);
    if (n === undefined) memo.set(d, (n = units(d, dp)));
    return n;
  };
}

/** A price in thousandths. */
const milliOf = unitsMemo(3);

/** A decimal as an integer count of `10^-dp` units, or null when it has more decimals or is too large to be exact. */
function units(d: Dec, dp: number): number | null {
  if (d.decimalPlaces() > dp) return null;
  const n = Math.round(d.toNumber() * 10 ** dp);
  return Number.isSafeInteger(n) && Math.abs(n) < 2 ** 40 ? n : null;
}

/** `floor(a / b)` of non-negative safe integers, exact (the float quotient corrected by one either way). */
function floorDiv(a: number, b: number): number {
  let q = Math.floor(a / b);
  if (q * b > a) q--;
  else if ((q + 1) * b <= a) q++;
  return q;
}

/** A size in hundredths of a share. */
const centisOf = unitsMemo(SIZE_DP);

/**
 * What a market buy's trade last left of the resting order it took from, in hundredths: the next
 * buy of a batch meets that order first (kept apart from {@link centisOf}'s memo: one size per trade).
 */
const leftBy: { size: Dec | null; centi: number } = { size: null, centi: 0 };

/** A size in hundredths of a share, the one a trade just left included. */
function centiOf(size: Dec): number | null {
  return size === leftBy.size ? leftBy.centi : centisOf(size);
}

/** An amount in micro-dollars. */
const microOf = unitsMemo(USD_DP);

/**
 * The decimal of `n` units of `10^-dp` (non-negative safe integers), parsed once per string
 * ({@link dec}'s memo: its canonical string is then known to {@link str}).
 */
function decOf(n: number, dp: number): Dec {
  if (n === 0) return ZERO;
  const memo = dp === SIZE_DP ? sizeDecs : usdDecs;
  let d = memo.get(n);
  if (d === undefined) {
    if (memo.size >= 1024) memo.clear();
    memo.set(n, (d = dec(unitsString(n, dp))));
  }
  return d;
}

/** {@link decOf}'s decimals of hundredths of a share and of micro-dollars, by count (bounded: cleared when full). */
const sizeDecs = new Map<number, Dec>();
const usdDecs = new Map<number, Dec>();

/** Canonical strings of prices (mirrored prices are computed, so {@link str} would write them each time). */
const priceStrings = new WeakMap<Dec, string>();

/** {@link str} of a price, made once per price. */
function priceString(px: Dec): string {
  let s = priceStrings.get(px);
  if (s === undefined) priceStrings.set(px, (s = str(px)));
  return s;
}

/** One party of a trade (the liquidity provider's without user and order). */
function legOf(userId: string, orderId: string, tokenId: string, side: Side, px: Dec): TradeLeg {
  return userId === LIQUIDITY_PROVIDER_ID
    ? { userId: null, orderId: null, tokenId, side, price: priceString(px) }
    : { userId, orderId, tokenId, side, price: priceString(px) };
}

/** One trade of a market buy's integer walk: the resting order met and the hundredths of a share taken from it. */
interface PlannedTrade {
  meet: Meet;
  /** Hundredths of a share. */
  qty: number;
  /** Price on the buyer's token, thousandths. */
  milli: number;
  /** Hundredths of a share the resting order had before. */
  centi: number;
}

/**
 * {@link quoteFillableDecimal} in integers, the same verdict: dollars in micro-dollars, prices in
 * thousandths, sizes in hundredths of a share (every product stays below 2^53). Falls back to the
 * decimal walk when a value has more decimals than those units hold.
 */
export function quoteFillableExact(levels: Iterable<{ px: Dec; remaining: Dec }>, quote: Dec): boolean {
  let left = units(quote, 6);
  if (left === null || left < 0) return quoteFillableDecimal(levels, quote);
  const it = levels[Symbol.iterator]();
  for (let n = it.next(); !n.done; n = it.next()) {
    const { px, remaining } = n.value;
    const milli = milliOf(px);
    const centi = units(remaining, SIZE_DP);
    // the walk goes on in decimals from this level, with the dollars left (exact: micro-dollars)
    if (milli === null || centi === null || milli <= 0)
      return quoteFillableDecimal(prepend(n.value, it), dec(left).div(1_000_000));
    // hundredths of a share `left` buys at `px`: left µ$ / (px‰ × 10 µ$ per hundredth at 1‰)
    const qty = Math.min(centi, floorDiv(left, milli * 10));
    if (qty <= 0) return true;
    left -= qty * milli * 10;
  }
  return left < 10_000;
}

/** `first`, then what `rest` has left. */
function* prepend<T>(first: T, rest: Iterator<T>): Generator<T> {
  yield first;
  for (let n = rest.next(); !n.done; n = rest.next()) yield n.value;
}

/**
 * The matching engine: one central limit order book per outcome token (see {@link OrderBook}) and
 * the record of every user order it knows. Price-time priority, fills at the resting order's
 * price; GTC/GTD rest, IOC fills what crosses and cancels the rest, FOK is all or nothing, market
 * orders are IOC (a market buy spends a dollar amount); post-only orders that would take are
 * rejected; the market's tick and price range are enforced.
 *
 * Complementary matching (Polymarket's CTF exchange): an incoming order of one outcome token
 * meets, besides the opposite side of its own book (`normal`), the same side of the complement
 * token's book: a buy at p crosses a resting buy of the complement at q ≥ 1 − p (`mint`: a full
 * set is minted from both payments), a sell at p a resting sell of the complement at q ≤ 1 − p
 * (`merge`: a full set is merged back into collateral). Both sources are walked as one book, best
 * price on the incoming order's token first (a complement order at q counts at 1 − q), equal
 * prices by arrival. The resting order trades at its own price (q), the incoming one at 1 − q:
 * the taker gets any price improvement, as in same-token matches. {@link touch} and
 * {@link depth} show the same merged view: the bids of a token are its own bids and the
 * complement's asks at 1 − price, its asks its own asks and the complement's bids at 1 − price,
 * levels at the same price merged (sizes summed).
 *
 * Self-trade prevention: an incoming order never trades with a resting order of the same user
 * (either book); that resting order is cancelled (reason `self-trade prevention`) and matching
 * goes on. The user's own resting orders still show in the book and the touch (the book is
 * public and the same for everyone, price triggers included).
 *
 * Pure and in memory: no I/O, no timers. Every change goes into the operation's {@link Tx};
 * balances change only through the {@link Ledger}. Decimal arithmetic only.
 */
export class MatchingEngine {
  private readonly books = new Map<string, OrderBook>();
  private readonly orders = new Map<string, OrderEntry>();
  /** Tokens of closed or resolved markets: new orders are rejected there. */
  private readonly closed = new Set<string>();
  /** Last time-priority sequence number given to an order. */
  private seq = 0;

  /**
   * @param tokens the tradable tokens: one book each.
   * @param now epoch ms, stamped on new order records.
   * @param integerMarketBuys market buys are walked and settled in integer units
   *   ({@link placeMarketBuy}); false: in decimals only (the reference the integer path is tested
   *   against). Default true.
   */
  constructor(
    private readonly tokens: ReadonlyMap<string, TokenInfo>,
    private readonly ledger: Ledger,
    private readonly now: () => number,
    private readonly integerMarketBuys = true,
  ) {
    for (const tokenId of tokens.keys()) this.books.set(tokenId, new OrderBook(tokenId));
  }

  // ---- reads ------------------------------------------------------------------------------

  /** Token ids, one per book. */
  tokenIds(): IterableIterator<string> {
    return this.books.keys();
  }

  /**
   * Aggregated levels of `tokenId` (best first, at most `maxLevels` per side), or null when
   * unknown: its own orders and its complement's mirrored (see the class comment), merged by price.
   */
  depth(
    tokenId: string,
    maxLevels: number,
  ): { bids: { price: Dec; size: Dec }[]; asks: { price: Dec; size: Dec }[] } | null {
    const book = this.books.get(tokenId);
    if (!book) return null;
    const comp = this.complementBook(tokenId);
    return {
      bids: mergedLevels(book.depth('buy', maxLevels), comp?.depth('sell', maxLevels) ?? [], 'buy', maxLevels),
      asks: mergedLevels(book.depth('sell', maxLevels), comp?.depth('buy', maxLevels) ?? [], 'sell', maxLevels),
    };
  }

  /** Best bid and ask of `tokenId`, complement included (a complement ask at q is a bid at 1 − q). */
  touch(tokenId: string): Touch {
    const b = this.books.get(tokenId);
    const c = this.complementBook(tokenId);
    return { bid: bestOf(b?.bids[0], c?.asks[0], true), ask: bestOf(b?.asks[0], c?.bids[0], false) };
  }

  /** The complement token's book, or undefined when it has none or its market closed. */
  private complementBook(tokenId: string): OrderBook | undefined {
    const c = this.tokens.get(tokenId)?.complementTokenId;
    return c === undefined || this.closed.has(c) ? undefined : this.books.get(c);
  }

  /**
   * Best price of the resting *user* orders (not the liquidity provider's quotes) on `side` of
   * `tokenId`, complement included (as {@link touch}), or undefined when none rests there (the
   * capture's levels are rebuilt at start-up without trading with them).
   */
  bestUserPrice(tokenId: string, side: Side): Dec | undefined {
    let best: Dec | undefined;
    const consider = (price: Dec) => {
      if (best === undefined || (side === 'buy' ? price.gt(best) : price.lt(best))) best = price;
    };
    for (const r of this.books.get(tokenId)?.all() ?? [])
      if (r.userId !== LIQUIDITY_PROVIDER_ID && r.side === side) consider(r.price);
    for (const r of this.complementBook(tokenId)?.all() ?? [])
      if (r.userId !== LIQUIDITY_PROVIDER_ID && r.side !== side) consider(mirror(r.price));
    return best;
  }

  /**
   * Every order resting in the books, the liquidity provider's quotes included: per token (in
   * catalogue order) the bids best first, then the asks best first, each level in time priority.
   */
  resting(): RestingOrder[] {
    const out: RestingOrder[] = [];
    for (const [tokenId, book] of this.books) {
      for (const levels of [book.bids, book.asks]) {
        for (const l of levels)
          for (const r of l.orders)
            out.push({
              tokenId,
              orderId: r.orderId,
              userId: r.userId,
              side: r.side,
              price: r.price,
              remaining: r.remaining,
              seq: r.seq,
            });
      }
    }
    return out;
  }

  /** Whether the engine knows `orderId` (submitting it again is then a no-op). */
  has(orderId: string): boolean {
    return this.orders.has(orderId);
  }

  /** Ids of every order held (open, and finished ones not yet forgotten), in no particular order. */
  orderIds(): string[] {
    return [...this.orders.keys()];
  }

  /** What the engine knows of `orderId`, or null. */
  state(orderId: string): VenueOrderState | null {
    const e = this.orders.get(orderId);
    return e ? { status: e.status, fills: [...e.fills], final: e.final } : null;
  }

  /** Marks a finished order as released (forgotten at the next checkpoint); ignored while open. */
  release(orderId: string): void {
    const e = this.orders.get(orderId);
    if (e && e.status !== 'open') e.released = true;
  }

  /** Number of order records held. */
  get size(): number {
    return this.orders.size;
  }

  /** Last time-priority sequence number given (persisted with checkpoints). */
  get orderSeq(): number {
    return this.seq;
  }

  // ---- commands ---------------------------------------------------------------------------

  /** Places a user order: checks, reserves through the ledger, matches, rests or ends it. */
  place(tx: Tx, order: VenueOrder): void {
    const info = this.tokens.get(order.tokenId);
    if (!info) return this.reject(tx, order, 'invalid_request', `unknown token ${order.tokenId}`);
    if (this.closed.has(order.tokenId))
      return this.reject(tx, order, 'market_closed', `the market of token ${order.tokenId} is closed or resolved`);
    const book = this.books.get(order.tokenId)!;
    this.ledger.walletOf(order.userId); // a user's first order opens the wallet, even a refused one
    const price = order.price === null ? null : dec(order.price);
    const size = order.size === null ? null : dec(order.size);
    if (price && !onTick(price, info.tickSize)) {
      return this.reject(
        tx,
        order,
        'invalid_request',
        `price ${order.price} is not on the tick ${str(info.tickSize)} within (0, 1)`,
      );
    }
    if (order.postOnly && price) {
      const t = this.touch(order.tokenId);
      const opp = order.side === 'buy' ? t.ask : t.bid;
      if (opp && (order.side === 'buy' ? opp.lte(price) : opp.gte(price)))
        return this.reject(tx, order, 'order crosses book', 'post-only order would take liquidity');
    }
    const need = this.ledger.requirement(order, price, size);
    if ('error' in need) return this.reject(tx, order, need.error, need.reason);
    if (order.kind === 'market' && order.side === 'buy' && !price && this.integerMarketBuys)
      if (this.placeMarketBuy(tx, book, order, need.usd)) return;
    // FOK: all or nothing against what could trade (own orders excluded).
    if (
      order.timeInForce === 'FOK' &&
      !(size ? this.fillable(book, order, price, size) : this.quoteFillable(book, order, dec(order.quoteAmount!)))
    )
      return this.fokNotFilled(tx, order, size);
    const e = this.newEntry(order, 'open', size);
    this.ledger.reserve(order, e, need);
    tx.users.add(order.userId);
    tx.orders.add(order.orderId);
    const willRest = order.kind === 'limit' && (order.timeInForce === 'GTC' || order.timeInForce === 'GTD');
    tx.reports.push({ type: 'venue.accepted', orderId: order.orderId, atMs: tx.atMs, resting: willRest });
    const quoteLeft = this.match(tx, book, e, price);
    if (e.status !== 'open') return; // filled in full
    if (willRest && positive(e.remaining!)) {
      this.rest(book, e, price!);
      tx.tokens.add(order.tokenId);
      return;
    }
    if (quoteLeft) return this.endMarketBuy(tx, book, e, quoteLeft.gte(CENT));
    this.cancelRemainder(tx, e);
  }

  /** Ends IOC / market order `e`, open after its walk, canceled for what it could not fill (`IOC_REMAINDER`). */
  private cancelRemainder(tx: Tx, e: OrderEntry): void {
    const ioc = e.order.kind === 'market' ? 'market orders are IOC' : 'IOC';
    const why = e.fills.length === 0 ? 'no liquidity at an acceptable price' : 'unfilled remainder canceled';
    this.close(tx, e, 'canceled', {
      type: 'venue.canceled',
      orderId: e.order.orderId,
      reason: `${why} (${ioc})`,
      code: 'IOC_REMAINDER',
      atMs: tx.atMs,
    });
  }

  /** Records `order` rejected (`venue.rejected` with `error` and `reason`). */
  private reject(tx: Tx, order: VenueOrder, error: string, reason: string): void {
    const e = this.newEntry(order, 'rejected', null);
    e.final = { type: 'venue.rejected', orderId: order.orderId, error, reason, atMs: tx.atMs };
    tx.orders.add(order.orderId);
    tx.reports.push(e.final);
  }

  /** A FOK order that could not fill in full: recorded canceled, reported accepted then canceled. */
  private fokNotFilled(tx: Tx, order: VenueOrder, size: Dec | null): void {
    const e = this.newEntry(order, 'canceled', size);
    e.final = {
      type: 'venue.canceled',
      orderId: order.orderId,
      reason: 'FOK order could not be filled in full',
      code: 'FOK_NOT_FILLED',
      atMs: tx.atMs,
    };
    tx.orders.add(order.orderId);
    tx.reports.push({ type: 'venue.accepted', orderId: order.orderId, atMs: tx.atMs, resting: false }, e.final);
  }

  /**
   * Ends a market buy `e` once it met what it could: canceled when nothing filled; filled (its
   * last fill completing it) when what is left of its amount cannot buy a hundredth of a share at
   * the next price, or less than a cent is left; else canceled for the unfilled remainder.
   * @param centLeft at least a cent of its amount is left.
   */
  private endMarketBuy(tx: Tx, book: OrderBook, e: OrderEntry, centLeft: boolean): void {
    if (e.fills.length === 0 || (centLeft && this.next(book, this.complementBook(book.tokenId), 'buy') === undefined))
      return this.cancelRemainder(tx, e);
    e.fills[e.fills.length - 1]!.completes = true;
    this.close(tx, e, 'filled', null);
  }

  /**
   * A market buy of `quote` dollars (its requirement, checked), walked and settled in integer units
   * (micro-dollars, thousandths, hundredths of a share: exact, see {@link quoteFillableExact}):
   * the same trades, reports, records and balances as the decimal path of {@link place}, with a
   * handful of decimal operations a trade instead of some twenty an order. One walk of what it
   * meets gives the FOK verdict and the trades; they are then made one after the other (each
   * resting order taken as {@link match} takes it), and the buyer's wallet is settled once for
   * all of them: its reservation (the amount) is made and released within this operation, so the
   * wallet's reserved pUSD comes out as it went in and is left alone.
   * @returns false, having changed nothing, when the decimal path must place it: an amount, price
   *   or size finer than those units, or a resting order of the buyer's own on the way
   *   (self-trade prevention cancels it).
   */
  private placeMarketBuy(tx: Tx, book: OrderBook, order: VenueOrder, quote: Dec): boolean {
    const amount = microOf(quote);
    if (amount === null || amount < 0) return false;
    const plan: PlannedTrade[] = [];
    let left = amount;
    let stopped = false;
    // what it meets, as {@link meets} walks it: the asks and the complement's bids, merged by price
    const comp = this.complementBook(book.tokenId);
    const own = book.asks;
    const other = comp?.bids ?? [];
    let li = 0;
    let oi = 0;
    let lj = 0;
    let oj = 0;
    for (;;) {
      const a = li < own.length ? own[li]!.orders[oi] : undefined;
      const b = lj < other.length ? other[lj]!.orders[oj] : undefined;
      if (a === undefined && b === undefined) break;
      let meet: Meet;
      if (b === undefined || (a !== undefined && this.before('buy', a, b))) {
        meet = { resting: a!, book, px: a!.price, kind: 'normal' };
        if (++oi === own[li]!.orders.length) {
          li++;
          oi = 0;
        }
      } else {
        meet = { resting: b, book: comp!, px: mirror(b.price), kind: 'mint' };
        if (++oj === other[lj]!.orders.length) {
          lj++;
          oj = 0;
        }
      }
      const r = meet.resting;
      if (r.userId === order.userId) return false;
      const milli = milliOf(meet.px);
      const centi = centiOf(r.remaining);
      if (milli === null || centi === null || milli <= 0) return false;
      const qty = Math.min(centi, floorDiv(left, milli * 10));
      if (qty <= 0) {
        stopped = true;
        break;
      }
      plan.push({ meet, qty, milli, centi });
      left -= qty * milli * 10;
    }
    if (order.timeInForce === 'FOK' && !(stopped || left < 10_000)) {
      this.fokNotFilled(tx, order, null);
      return true;
    }
    const e = this.newEntry(order, 'open', null);
    tx.users.add(order.userId);
    tx.orders.add(order.orderId);
    tx.reports.push({ type: 'venue.accepted', orderId: order.orderId, atMs: tx.atMs, resting: false });
    let shares = 0;
    for (const { meet, qty, centi } of plan) {
      const size = decOf(qty, SIZE_DP);
      this.trade(tx, book, e, meet, size, false);
      leftBy.size = meet.resting.remaining;
      leftBy.centi = centi - qty;
      shares += qty;
    }
    if (plan.length) this.ledger.settleMarketBuy(order, decOf(amount - left, 6), decOf(shares, SIZE_DP));
    this.endMarketBuy(tx, book, e, left >= 10_000);
    return true;
  }

  /** Cancels an open order (`venue.canceled` with `reason`); nothing when it is not open. */
  cancel(tx: Tx, orderId: string, reason: CancelReason): void {
    const e = this.orders.get(orderId);
    if (!e || e.status !== 'open') return;
    this.close(tx, e, 'canceled', {
      type: 'venue.canceled',
      orderId,
      reason: reason.message,
      code: reason.code,
      atMs: tx.atMs,
    });
  }

  /** Expires an open order (`venue.expired`); nothing when it is not open. */
  expire(tx: Tx, orderId: string): void {
    const e = this.orders.get(orderId);
    if (!e || e.status !== 'open') return;
    this.close(tx, e, 'expired', { type: 'venue.expired', orderId, atMs: tx.atMs });
  }

  /**
   * Removes every resting quote of the liquidity provider from `tokenId`'s book (no reports: its
   * quotes are not orders anybody follows).
   * @returns false when the token has no book.
   */
  withdrawQuotes(tx: Tx, tokenId: string): boolean {
    const book = this.books.get(tokenId);
    if (!book) return false;
    for (const r of [...book.all()]) if (r.userId === LIQUIDITY_PROVIDER_ID) book.remove(r.orderId);
    tx.tokens.add(tokenId);
    return true;
  }

  /**
   * Places a quote of the liquidity provider: a GTC limit `order` of `size` shares at `price`
   * (decimal probability) that trades with the user orders it crosses and rests the rest. No
   * checks, no reservation, no record (its inventory is unlimited).
   */
  quote(tx: Tx, order: VenueOrder, price: Dec, size: Dec): void {
    const book = this.books.get(order.tokenId)!;
    const e = this.newEntry(order, 'open', size);
    this.match(tx, book, e, price);
    if (e.remaining && positive(e.remaining)) this.rest(book, e, price);
  }

  /**
   * Places a quote of the liquidity provider as {@link quote} does (GTC limit `orderId` of `size`
   * shares at `price` on `tokenId`), its order and record made only when it may trade: a quote that
   * crosses nothing (most of a capture's level changes) rests at once, with the next time priority.
   */
  quoteLevel(tx: Tx, tokenId: string, orderId: string, side: Side, price: Dec, size: Dec): void {
    const book = this.books.get(tokenId)!;
    const key = priceKey(price);
    if (this.mayCross(book, side, key)) {
      const order: VenueOrder = {
        orderId,
        userId: LIQUIDITY_PROVIDER_ID,
        tokenId,
        side,
        kind: 'limit',
        price: str(price),
        size: str(size),
        quoteAmount: null,
        timeInForce: 'GTC',
        postOnly: false,
      };
      this.quote(tx, order, price, size);
      return;
    }
    const seq = ++this.seq;
    if (positive(size)) book.add({ orderId, userId: LIQUIDITY_PROVIDER_ID, side, price, key, remaining: size, seq });
  }

  /**
   * Whether an incoming order of `side` at price key `key` on `book` may meet a resting order
   * ({@link match} would walk at least one): the head of the book's opposite side or of the
   * complement's same side (at 1000 − its key) is at `key` or better for it. Compared in
   * thousandths; true whenever a key is not a whole number of them (then {@link match} decides).
   */
  private mayCross(book: OrderBook, side: Side, key: number): boolean {
    const buy = side === 'buy';
    const own = book.head(buy ? 'sell' : 'buy');
    const other = this.complementBook(book.tokenId)?.head(side);
    if (!Number.isInteger(key) || (own && !Number.isInteger(own.key)) || (other && !Number.isInteger(other.key)))
      return true;
    if (own && (buy ? own.key <= key : own.key >= key)) return true;
    return other !== undefined && (buy ? 1000 - other.key <= key : 1000 - other.key >= key);
  }

  // ---- market events -------------------------------------------------------------

  /**
   * Closes `tokenId` (its market closed or resolved): new orders there are rejected
   * (`market_closed`), every resting user order is canceled with `reason` and the liquidity
   * provider's quotes leave the book.
   */
  closeToken(tx: Tx, tokenId: string, reason: CancelReason): void {
    this.closed.add(tokenId);
    const book = this.books.get(tokenId);
    if (!book) return;
    for (const r of [...book.all()]) {
      const e = this.orders.get(r.orderId);
      if (e)
        this.close(tx, e, 'canceled', {
          type: 'venue.canceled',
          orderId: r.orderId,
          reason: reason.message,
          code: reason.code,
          atMs: tx.atMs,
        });
      else book.remove(r.orderId);
    }
    tx.tokens.add(tokenId);
  }

  /** Whether `tokenId`'s market is closed (see {@link closeToken}). */
  isClosed(tokenId: string): boolean {
    return this.closed.has(tokenId);
  }

  /**
   * After a tick-size change of `tokenId` to `tick` (decimal probability): every resting user
   * order whose price is not a multiple of the new tick is canceled with `reason`; the others
   * keep their price and priority. The provider's quotes stay (the capture's levels are facts).
   * @returns how many orders were canceled.
   */
  cancelOffTick(tx: Tx, tokenId: string, tick: Dec, reason: CancelReason): number {
    const book = this.books.get(tokenId);
    if (!book) return 0;
    let n = 0;
    for (const r of [...book.all()]) {
      const e = this.orders.get(r.orderId);
      if (!e || r.price.mod(tick).isZero()) continue;
      this.close(tx, e, 'canceled', {
        type: 'venue.canceled',
        orderId: r.orderId,
        reason: reason.message,
        code: reason.code,
        atMs: tx.atMs,
      });
      n++;
    }
    return n;
  }

  /** Removes one resting quote of the liquidity provider (no report). @returns whether it rested. */
  removeQuote(tx: Tx, tokenId: string, orderId: string): boolean {
    const removed = this.books.get(tokenId)?.remove(orderId);
    if (removed) tx.tokens.add(tokenId);
    return removed !== undefined;
  }

  /** Shares left of a resting order, or undefined when it does not rest (taken in full, removed). */
  restingSize(tokenId: string, orderId: string): Dec | undefined {
    return this.books.get(tokenId)?.get(orderId)?.remaining;
  }

  // ---- matching ---------------------------------------------------------------------------

  private rest(book: OrderBook, e: OrderEntry, price: Dec): void {
    const o = e.order;
    book.add({
      orderId: o.orderId,
      userId: o.userId,
      side: o.side,
      price,
      key: priceKey(price),
      remaining: e.remaining!,
      seq: e.seq,
    });
  }

  /** Whether `size` shares could trade now at `price` or better (market: any price), complement included. */
  private fillable(book: OrderBook, order: VenueOrder, price: Dec | null, size: Dec): boolean {
    let left = size;
    const buy = order.side === 'buy';
    for (const { resting: r, px } of this.meets(book, order.side)) {
      if (price && (buy ? px.gt(price) : px.lt(price))) break;
      if (r.userId === order.userId) continue;
      left = left.minus(r.remaining);
      if (nonPositive(left)) return true;
    }
    return false;
  }

  /**
   * Whether a market buy of `quote` dollars would complete now (FOK market buy): walked as
   * {@link match} walks it (best price first across the book and its complement, whole hundredths
   * of a share per level, own orders skipped), it stops with what is left unable to buy a hundredth
   * at the next price, or runs out of sellers with less than a cent left; both are what `place`
   * reports as filled.
   */
  private quoteFillable(book: OrderBook, order: VenueOrder, quote: Dec): boolean {
    return quoteFillableExact(this.others(this.meets(book, 'buy'), order.userId), quote);
  }

  /** The levels of `meets` (price and remaining size) of resting orders not of `userId`, lazily. */
  private *others(meets: Iterable<Meet>, userId: string): Generator<{ px: Dec; remaining: Dec }> {
    for (const { resting: r, px } of meets) if (r.userId !== userId) yield { px, remaining: r.remaining };
  }

  /**
   * Every resting order an incoming order of `side` on `book` could meet, in the order {@link match}
   * meets them: the book's opposite side and the complement's same side (at 1 − its price) merged by
   * price, equal prices by arrival. Nothing is removed: a read-only walk for the FOK checks.
   */
  private *meets(book: OrderBook, side: Side): Generator<Meet> {
    const comp = this.complementBook(book.tokenId);
    const own = book.walk(side === 'buy' ? 'sell' : 'buy');
    const other = comp?.walk(side);
    let a = own.next();
    let b = other?.next();
    while (!a.done || (b && !b.done)) {
      const takeOwn = b === undefined || b.done || (!a.done && this.before(side, a.value, b.value));
      if (takeOwn) {
        yield { resting: a.value as Resting, book, px: (a.value as Resting).price, kind: 'normal' };
        a = own.next();
      } else {
        const r = b!.value as Resting;
        yield { resting: r, book: comp!, px: mirror(r.price), kind: side === 'buy' ? 'mint' : 'merge' };
        b = other!.next();
      }
    }
  }

  /** Whether `own` (on the incoming order's token) comes before `other` (resting on the complement). */
  private before(side: Side, own: Resting, other: Resting): boolean {
    const otherKey = 1000 - other.key;
    return (side === 'buy' ? own.key < otherKey : own.key > otherKey) || (own.key === otherKey && own.seq < other.seq);
  }

  /**
   * The next resting order an incoming order of `side` on `book` meets: the better of the head of
   * the book's opposite side and the head of the complement's same side (at 1 − its price); equal
   * prices by arrival (time priority across both books).
   */
  private next(book: OrderBook, comp: OrderBook | undefined, side: Side): Meet | undefined {
    const own = book.head(side === 'buy' ? 'sell' : 'buy');
    const other = comp?.head(side);
    if (!other) return own && { resting: own, book, px: own.price, kind: 'normal' };
    if (own && this.before(side, own, other)) return { resting: own, book, px: own.price, kind: 'normal' };
    return { resting: other, book: comp!, px: mirror(other.price), kind: side === 'buy' ? 'mint' : 'merge' };
  }

  private newEntry(order: VenueOrder, status: OrderEntry['status'], size: Dec | null): OrderEntry {
    const e: OrderEntry = {
      order,
      status,
      remaining: size,
      reservedUsd: ZERO,
      reservedShares: ZERO,
      fills: [],
      final: null,
      updatedAtMs: this.now(),
      seq: ++this.seq,
    };
    if (order.userId !== LIQUIDITY_PROVIDER_ID) this.orders.set(order.orderId, e);
    return e;
  }

  /**
   * Walks what the taker meets (the opposite side of its book and the complement's same side, see
   * {@link next}) while it crosses `limit` (null = market), filling `taker`.
   * @returns dollars left of a market buy's amount (null for share-sized orders).
   */
  private match(tx: Tx, book: OrderBook, taker: OrderEntry, limit: Dec | null): Dec | null {
    const side = taker.order.side;
    const comp = this.complementBook(book.tokenId);
    let quoteLeft = taker.order.kind === 'market' && side === 'buy' ? dec(taker.order.quoteAmount!) : null;
    for (;;) {
      const meet = this.next(book, comp, side);
      if (!meet) break;
      const head = meet.resting;
      if (limit && (side === 'buy' ? meet.px.gt(limit) : meet.px.lt(limit))) break;
      if (head.userId === taker.order.userId) {
        const resting = this.orders.get(head.orderId);
        meet.book.remove(head.orderId);
        tx.tokens.add(meet.book.tokenId);
        if (resting)
          this.close(tx, resting, 'canceled', {
            type: 'venue.canceled',
            orderId: head.orderId,
            reason: 'self-trade prevention',
            code: 'SELF_TRADE_PREVENTION',
            atMs: tx.atMs,
          });
        continue;
      }
      let qty = head.remaining;
      if (taker.remaining) qty = Dec.min(qty, taker.remaining);
      if (quoteLeft) qty = Dec.min(qty, quoteLeft.div(meet.px).toDecimalPlaces(SIZE_DP, Dec.ROUND_DOWN));
      if (nonPositive(qty)) break;
      this.trade(tx, book, taker, meet, qty);
      if (quoteLeft) quoteLeft = quoteLeft.minus(qty.times(meet.px));
      if (taker.remaining && nonPositive(taker.remaining)) break;
    }
    return quoteLeft;
  }

  /**
   * One trade: the resting order at its own price, the taker at the price on its token (the same,
   * or 1 − it against the complement); fills both sides (taker first) and reports each user side.
   * Trade ids: `T<seq>-<n>` for a same-token trade, `T<seq>-<n>-mint` / `-merge` for a
   * complementary one, each side suffixed `-t` (taker) or `-m` (maker).
   */
  private trade(tx: Tx, book: OrderBook, taker: OrderEntry, meet: Meet, qty: Dec, settleTaker = true): void {
    const resting = meet.resting;
    const tradeId = `T${tx.seq}-${++tx.trades}${meet.kind === 'normal' ? '' : `-${meet.kind}`}`;
    tx.tokens.add(book.tokenId);
    tx.tokens.add(meet.book.tokenId);
    const at = nextPosition(tx);
    const facts: TradeFacts = {
      id: tradeId,
      blockTimestamp: at.blockTimestamp,
      logIndex: at.logIndex,
      transactionHash: at.transactionHash,
      size: str(qty),
      feeUsd: '0',
      taker: legOf(taker.order.userId, taker.order.orderId, book.tokenId, taker.order.side, meet.px),
      maker: legOf(resting.userId, resting.orderId, meet.book.tokenId, resting.side, resting.price),
    };
    this.fill(tx, taker, meet.px, qty, `${tradeId}-t`, 'taker', facts, settleTaker);
    resting.remaining = resting.remaining.minus(qty);
    const restingEntry = this.orders.get(resting.orderId);
    if (restingEntry) this.fill(tx, restingEntry, resting.price, qty, `${tradeId}-m`, 'maker', facts);
    if (nonPositive(resting.remaining)) meet.book.remove(resting.orderId);
    if (resting.userId === LIQUIDITY_PROVIDER_ID) {
      tx.liquidityTaken.add(meet.book.tokenId);
      tx.quotesTaken.push({
        tokenId: meet.book.tokenId,
        orderId: resting.orderId,
        side: resting.side,
        price: resting.price,
      });
    }
  }

  /**
   * One side of a trade: settles it in the ledger (unless `settle` is false: the caller settles
   * the order's fills itself), records and reports the fill, ends a completed order.
   */
  private fill(
    tx: Tx,
    e: OrderEntry,
    px: Dec,
    qty: Dec,
    tradeId: string,
    liquidity: 'maker' | 'taker',
    trade: TradeFacts,
    settle = true,
  ): void {
    const o = e.order;
    if (o.userId === LIQUIDITY_PROVIDER_ID) {
      // a quote that takes (a re-quote or a captured level crossing user orders) takes only its size
      if (e.remaining) e.remaining = e.remaining.minus(qty);
      return;
    }
    if (settle) this.ledger.settle(o, e, px, qty);
    if (e.remaining) e.remaining = e.remaining.minus(qty);
    const fill: FillReport = {
      type: 'venue.filled',
      orderId: o.orderId,
      tradeId,
      price: priceString(px),
      size: str(qty),
      liquidity,
      completes: e.remaining ? nonPositive(e.remaining) : false,
      atMs: tx.atMs,
      trade,
    };
    e.fills.push(fill);
    e.updatedAtMs = tx.atMs;
    tx.users.add(o.userId);
    tx.orders.add(o.orderId);
    tx.reports.push(fill);
    if (e.remaining && nonPositive(e.remaining)) this.close(tx, e, 'filled', null);
  }

  /** Ends an order: releases what it still reserves, leaves the book, records the final report. */
  private close(tx: Tx, e: OrderEntry, status: OrderEntry['status'], report: VenueReport | null): void {
    const o = e.order;
    this.ledger.release(o, e);
    if (this.books.get(o.tokenId)?.remove(o.orderId)) tx.tokens.add(o.tokenId);
    e.status = status;
    e.final = report;
    e.updatedAtMs = tx.atMs;
    tx.users.add(o.userId);
    tx.orders.add(o.orderId);
    if (report) tx.reports.push(report);
  }

  // ---- serialization ----------------------------------------------------------------------

  /** Forgets finished orders that were released, or finished more than `retainMs` before `nowMs`. */
  forgetDone(nowMs: number, retainMs: number): void {
    for (const [id, e] of this.orders)
      if (e.status !== 'open' && (e.released || nowMs - e.updatedAtMs > retainMs)) this.orders.delete(id);
  }

  /** The row of a known order. */
  row(orderId: string): OrderRow {
    const e = this.orders.get(orderId)!;
    return {
      order: e.order,
      status: e.status,
      remaining: e.remaining ? str(e.remaining) : null,
      reservedUsd: str(e.reservedUsd),
      reservedShares: str(e.reservedShares),
      fills: e.fills,
      final: e.final,
      updatedAtMs: e.updatedAtMs,
      seq: e.seq,
    };
  }

  /**
   * The JSON of {@link row}`(orderId)` (the same document once parsed), made without walking the
   * order itself again: its JSON is made once per order (every journal entry of an
   * order serialized it anew).
   */
  rowJson(orderId: string): string {
    const e = this.orders.get(orderId)!;
    const m = e.rowMemo;
    if (
      m !== undefined &&
      m.remaining === e.remaining &&
      m.reservedUsd === e.reservedUsd &&
      m.reservedShares === e.reservedShares &&
      m.fills === e.fills.length &&
      m.status === e.status &&
      m.final === e.final &&
      m.updatedAtMs === e.updatedAtMs &&
      m.seq === e.seq
    )
      return m.json;
    const orderJson = (e.orderJson ??= JSON.stringify(e.order));
    const remaining = e.remaining ? `"${str(e.remaining)}"` : 'null';
    const json =
      `{"order":${orderJson},"status":"${e.status}","remaining":${remaining},` +
      `"reservedUsd":"${str(e.reservedUsd)}","reservedShares":"${str(e.reservedShares)}",` +
      `"fills":${e.fills.length ? JSON.stringify(e.fills) : '[]'},` +
      `"final":${e.final ? JSON.stringify(e.final) : 'null'},"updatedAtMs":${e.updatedAtMs},"seq":${e.seq}}`;
    e.rowMemo = {
      json,
      status: e.status,
      remaining: e.remaining,
      reservedUsd: e.reservedUsd,
      reservedShares: e.reservedShares,
      fills: e.fills.length,
      final: e.final,
      updatedAtMs: e.updatedAtMs,
      seq: e.seq,
    };
    return json;
  }

  /** Rows of every order held (a checkpoint takes their JSON: {@link rowsJson}). */
  rows(): OrderRow[] {
    return [...this.orders.keys()].map((id) => this.row(id));
  }

  /**
   * {@link rows} as JSON, one string per order ({@link rowJson}): made now, so later trades cannot
   * change them, and not serialized again by the checkpoint.
   */
  rowsJson(): string[] {
    const out: string[] = [];
    for (const id of this.orders.keys()) out.push(this.rowJson(id));
    return out;
  }

  /** Replaces the record of a row's order (recovery); the books are rebuilt by {@link restoreBooks}. */
  load(r: OrderRow): void {
    this.orders.set(r.order.orderId, {
      order: r.order,
      status: r.status,
      remaining: r.remaining === null ? null : dec(r.remaining),
      reservedUsd: dec(r.reservedUsd),
      reservedShares: dec(r.reservedShares),
      fills: r.fills,
      final: r.final,
      updatedAtMs: r.updatedAtMs,
      seq: r.seq,
    });
    this.seq = Math.max(this.seq, r.seq);
  }

  /** Raises the time-priority sequence to at least `seq` (a checkpoint's). */
  advanceOrderSeq(seq: number): void {
    this.seq = Math.max(this.seq, seq);
  }

  /**
   * After recovery: puts every open GTC/GTD order with shares left back into its book, in its
   * time priority. @returns how many.
   */
  restoreBooks(): number {
    const resting = [...this.orders.values()].filter(
      (e) => e.status === 'open' && e.remaining && (e.order.timeInForce === 'GTC' || e.order.timeInForce === 'GTD'),
    );
    resting.sort((a, b) => a.seq - b.seq);
    for (const e of resting) {
      const book = this.books.get(e.order.tokenId);
      if (book) this.rest(book, e, dec(e.order.price!));
    }
    return resting.length;
  }
}
