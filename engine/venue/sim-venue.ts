import { createHash } from 'node:crypto';
import type { Clock } from '../clock.js';
import { DuplicateKeyError } from '../errors.js';
import { Dec, dec, SIZE_DP, str, ZERO } from '../decimal.js';
import type { Logger } from '../logger.js';
import type { Collection, Store } from '../store/port.js';
import { OrderBook, priceKey, type Resting } from './book.js';
import type { Catalogue, TokenInfo } from './markets.js';
import type { BookView, FillReport, Side, VenueOrder, VenueOrderState, VenuePort, VenueReport, WalletView } from './port.js';

/** Account id of the simulated market maker (unlimited inventory, never persisted). */
export const MAKER_ID = 'sim-maker';

/** Options of the simulated venue (from SIM_* settings). */
export interface SimVenueOptions {
  catalogue: Catalogue;
  store: Store;
  clock: Clock;
  log: Logger;
  /** pUSD every new wallet starts with (dollars). */
  initialPusd: string;
  /** Maker levels per side. */
  makerLevels: number;
  /** Delay before the maker refills a book it traded in (ms). */
  refillMs: number;
  /** Whether the MSTR token follows its recorded path. */
  replay: boolean;
  /** Recorded seconds per real second. */
  replaySpeed: number;
  /** How often the replay checks for a new recorded price (ms). */
  replayTickMs?: number;
  /** Journal entries between checkpoints. */
  checkpointEvery?: number;
}

interface Position {
  shares: Dec;
  reserved: Dec;
  /** Cost basis of the shares held, dollars. */
  cost: Dec;
}

interface Wallet {
  pusd: Dec;
  reserved: Dec;
  positions: Map<string, Position>;
}

/** The venue's record of a user order. */
interface OrderEntry {
  order: VenueOrder;
  status: VenueOrderState['status'];
  /** Shares left (limit and market sell); null for a market buy. */
  remaining: Dec | null;
  /** pUSD still reserved for this order (buys). */
  reservedUsd: Dec;
  /** Shares still reserved for this order (sells). */
  reservedShares: Dec;
  fills: FillReport[];
  final: VenueReport | null;
  updatedAtMs: number;
  /** Time priority when resting. */
  seq: number;
  /** The order's actor recorded its final state: the next checkpoint forgets the order. */
  released?: boolean;
}

/** A serialized wallet/order, as written to the journal (absolute values: replay overwrites). */
interface WalletRow {
  userId: string;
  pusd: string;
  reserved: string;
  positions: [tokenId: string, shares: string, reserved: string, cost: string][];
}
interface OrderRow {
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
/** What a journal entry or checkpoint holds. */
interface StateRows {
  wallets: WalletRow[];
  orders: OrderRow[];
}
/**
 * One journal entry. The rows travel as one JSON string: the store then copies and checks a
 * string instead of walking every nested row (documents written before this carried the rows
 * as fields, which {@link rowsOf} still reads).
 */
interface JournalDoc {
  _id: string;
  seq: number;
  atMs: number;
  rows?: string;
  wallets?: WalletRow[];
  orders?: OrderRow[];
}
interface CheckpointDoc extends Omit<JournalDoc, '_id' | 'atMs'> {
  _id: 'checkpoint';
  orderSeq: number;
}

function rowsOf(doc: { rows?: string; wallets?: WalletRow[]; orders?: OrderRow[] }): StateRows {
  return doc.rows !== undefined ? (JSON.parse(doc.rows) as StateRows) : { wallets: doc.wallets ?? [], orders: doc.orders ?? [] };
}

/** What one venue operation touched. */
interface Tx {
  seq: number;
  atMs: number;
  users: Set<string>;
  orders: Set<string>;
  tokens: Set<string>;
  reports: VenueReport[];
  trades: number;
}

/** Deterministic pseudo-random integer in [0, n) from a string. */
function hashInt(s: string, n: number): number {
  return createHash('sha1').update(s).digest().readUInt32BE(0) % n;
}

const pad = (n: number) => String(n).padStart(12, '0');
/**
 * How long a finished order nobody released is kept (a safety net: the order service releases
 * each order once its actor recorded the end, so checkpoints hold working orders, wallets and
 * orders finished moments ago, not a day of history).
 */
const RETAIN_DONE_MS = 24 * 3_600_000;
/** Journal entries removed per store operation after a checkpoint (other writes go between). */
const JOURNAL_DELETE_CHUNK = 500;

/** Typed errors the venue raises for a rejected command; the API maps them to 4xx. */
export class VenueRejection extends Error {
  constructor(
    readonly error: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The one wording of an `INSUFFICIENT_BALANCE` refusal (spec part 7), whichever layer refuses
 * (this check, the strategy check, or the venue's reservation).
 * @param what the subject ("this buy", "this strategy").
 */
export function insufficientBalanceMessage(what: string, need: Dec, available: Dec): string {
  return `${what} needs $${str(need)} pUSD; available $${str(available)}`;
}

/**
 * The one wording of the not-enough-shares refusal (spec part 7:
 * `Not enough shares to place this sell — holding <X>`), with the reserved part when there is one.
 */
export function notEnoughSharesMessage(held: Dec, reserved: Dec): string {
  return `Not enough shares to place this sell — holding ${str(held)}${reserved.gt(0) ? `, of which ${str(reserved)} reserved by open sells` : ''}`;
}

/**
 * Simulated CLOB venue (issue 3): one book per outcome token, price-time priority, the market's
 * tick and minimum size, decimal arithmetic only, pUSD wallets with reservations, and a market
 * maker that seeds every book around the token's recorded price, refills what is taken and (with
 * replay on) re-quotes the MSTR token along its recorded path.
 *
 * Self-trade prevention: an incoming order never trades with a resting order of the same user;
 * the resting order is cancelled (`venue.canceled`, reason `self-trade prevention`) and matching
 * continues with the next one.
 *
 * Durability: every operation that touches a user is appended to a journal (absolute wallet and
 * order states) before its reports go out; start-up replays checkpoint + journal, so a restart
 * loses nothing and applies nothing twice. Maker liquidity is not persisted: it is re-seeded.
 *
 * A journal write that fails (issue 12, defect 17) is retried with backoff until it lands, in
 * order: the operations behind it wait, their reports go out only once their entries are
 * written, and nothing is skipped. Meanwhile {@link health} reports the venue not ok (health
 * `degraded`, and the API answers venue operations 503); it comes back by itself when the store
 * does. A failed checkpoint is logged and tried again at the next one (the journal still holds
 * everything it would have covered).
 */
export class SimVenue implements VenuePort {
  private readonly books = new Map<string, OrderBook>();
  private readonly wallets = new Map<string, Wallet>();
  private readonly orders = new Map<string, OrderEntry>();
  private readonly reportListeners: ((r: VenueReport) => void)[] = [];
  private readonly bookListeners: ((tokenId: string) => void)[] = [];
  private readonly references = new Map<string, Dec>();
  private readonly refillTimers = new Map<string, NodeJS.Timeout>();
  private replayTimer: NodeJS.Timeout | null = null;
  private seq = 0;
  private orderSeq = 0;
  private makerSeq = 0;
  private sinceCheckpoint = 0;
  /** Lowest journal seq that may still be stored. */
  private journalFrom = 1;
  private journalTail: Promise<unknown> = Promise.resolve();
  /** Journal entries queued and not yet written. */
  private pendingWrites = 0;
  /** Set while a journal write is failing and being retried: the last error. */
  private writeError: string | null = null;
  private checkpointError: string | null = null;
  private journal!: Collection<JournalDoc>;
  private state!: Collection<CheckpointDoc>;

  private constructor(private readonly o: SimVenueOptions) {}

  /** Opens the venue: rebuilds user state from the store, seeds the maker, starts the replay. */
  static async open(o: SimVenueOptions): Promise<SimVenue> {
    const v = new SimVenue(o);
    v.journal = await o.store.collection<JournalDoc>('venueJournal', [{ fields: ['seq'], unique: true, adapters: ['mongodb'] }]);
    v.state = await o.store.collection<CheckpointDoc>('venueState');
    for (const t of o.catalogue.tokens.values()) {
      v.books.set(t.tokenId, new OrderBook(t.tokenId));
      v.references.set(t.tokenId, t.referencePrice);
    }
    await v.recover();
    if (o.replay) v.applyReplay(true);
    v.seedAll();
    if (o.replay) {
      v.replayTimer = setInterval(() => v.applyReplay(false), o.replayTickMs ?? 1000);
      v.replayTimer.unref();
    }
    return v;
  }

  /** Stops timers and waits for pending journal writes, then writes a checkpoint. */
  async close(): Promise<void> {
    if (this.replayTimer) clearInterval(this.replayTimer);
    for (const t of this.refillTimers.values()) clearTimeout(t);
    await this.journalTail;
    await this.checkpoint();
  }

  /**
   * Durability status for /healthz: `ok` is false while a journal write is failing (the venue
   * then refuses new operations at the API: 503). `pendingWrites` counts journal entries not yet
   * written; `error` is the last write or checkpoint failure, null when none is outstanding.
   */
  get health(): { ok: boolean; pendingWrites: number; error: string | null } {
    return { ok: this.writeError === null, pendingWrites: this.pendingWrites, error: this.writeError ?? this.checkpointError };
  }

  onReport(listener: (r: VenueReport) => void): void {
    this.reportListeners.push(listener);
  }

  onBook(listener: (tokenId: string) => void): void {
    this.bookListeners.push(listener);
  }

  token(tokenId: string): TokenInfo | undefined {
    return this.o.catalogue.tokens.get(tokenId);
  }

  // ---- reads ------------------------------------------------------------------------------

  book(tokenId: string, depth = 50): BookView | null {
    const info = this.token(tokenId);
    const book = this.books.get(tokenId);
    if (!info || !book) return null;
    const lv = (side: Side) => book.depth(side, depth).map((l) => ({ price: str(l.price), size: str(l.size) }));
    return { tokenId, tickSize: str(info.tickSize), minSize: str(info.minSize), bids: lv('buy'), asks: lv('sell') };
  }

  /** Best bid and ask of a token (decimal), for strategies and checks. */
  touch(tokenId: string): { bid: Dec | undefined; ask: Dec | undefined } {
    const b = this.books.get(tokenId);
    return { bid: b?.best('buy'), ask: b?.best('sell') };
  }

  wallet(userId: string): WalletView {
    const w = this.walletOf(userId);
    return {
      pusd: { balance: str(w.pusd), reserved: str(w.reserved), available: str(w.pusd.minus(w.reserved)) },
      positions: [...w.positions.entries()]
        .filter(([, p]) => p.shares.gt(0))
        .map(([tokenId, p]) => ({ tokenId, size: str(p.shares), reserved: str(p.reserved), available: str(p.shares.minus(p.reserved)), costUsd: str(p.cost) })),
    };
  }

  /** Free pUSD and free shares of `tokenId`, for pre-trade checks. */
  available(userId: string, tokenId: string): { usd: Dec; shares: Dec; held: Dec; reservedShares: Dec } {
    const w = this.walletOf(userId);
    const p = w.positions.get(tokenId);
    return {
      usd: w.pusd.minus(w.reserved),
      shares: p ? p.shares.minus(p.reserved) : ZERO,
      held: p?.shares ?? ZERO,
      reservedShares: p?.reserved ?? ZERO,
    };
  }

  orderState(orderId: string): VenueOrderState | null {
    const e = this.orders.get(orderId);
    return e ? { status: e.status, fills: [...e.fills], final: e.final } : null;
  }

  release(orderId: string): void {
    const e = this.orders.get(orderId);
    if (e && e.status !== 'open') e.released = true;
  }

  // ---- commands ---------------------------------------------------------------------------

  submit(order: VenueOrder): Promise<void> {
    if (this.orders.has(order.orderId)) return Promise.resolve(); // idempotent
    return this.execute((tx) => this.place(tx, order));
  }

  cancel(orderId: string, reason = 'canceled by user'): Promise<void> {
    return this.execute((tx) => {
      const e = this.orders.get(orderId);
      if (!e || e.status !== 'open') return;
      this.closeOrder(tx, e, 'canceled', { type: 'venue.canceled', orderId, reason, atMs: tx.atMs });
    });
  }

  expire(orderId: string): Promise<void> {
    return this.execute((tx) => {
      const e = this.orders.get(orderId);
      if (!e || e.status !== 'open') return;
      this.closeOrder(tx, e, 'expired', { type: 'venue.expired', orderId, atMs: tx.atMs });
    });
  }

  /** Sets a token's reference price and re-quotes the maker around it (tests, replay). */
  setReference(tokenId: string, price: Dec): Promise<void> {
    this.references.set(tokenId, price);
    return this.execute((tx) => this.requote(tx, tokenId));
  }

  // ---- internals --------------------------------------------------------------------------

  private walletOf(userId: string): Wallet {
    let w = this.wallets.get(userId);
    if (!w) {
      w = { pusd: dec(this.o.initialPusd), reserved: ZERO, positions: new Map() };
      this.wallets.set(userId, w);
    }
    return w;
  }

  private positionOf(w: Wallet, tokenId: string): Position {
    let p = w.positions.get(tokenId);
    if (!p) {
      p = { shares: ZERO, reserved: ZERO, cost: ZERO };
      w.positions.set(tokenId, p);
    }
    return p;
  }

  /**
   * Runs one operation: synchronous in memory, then its journal entry (when it touched a user),
   * then its reports and book notifications, in that order.
   */
  private execute(fn: (tx: Tx) => void): Promise<void> {
    const tx: Tx = { seq: this.seq + 1, atMs: this.o.clock.now(), users: new Set(), orders: new Set(), tokens: new Set(), reports: [], trades: 0 };
    try {
      fn(tx);
    } catch (err) {
      this.o.log.error({ err }, 'venue operation failed');
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
    tx.users.delete(MAKER_ID);
    let durable: Promise<unknown> = this.journalTail;
    if (tx.users.size || tx.orders.size) {
      this.seq = tx.seq;
      const doc: JournalDoc = {
        _id: pad(tx.seq),
        seq: tx.seq,
        atMs: tx.atMs,
        rows: JSON.stringify({
          wallets: [...tx.users].map((u) => this.walletRow(u)),
          orders: [...tx.orders].map((id) => this.orderRow(this.orders.get(id)!)),
        } satisfies StateRows),
      };
      this.pendingWrites++;
      durable = this.journalTail = this.journalTail.then(() => this.writeDurably(doc));
      if (++this.sinceCheckpoint >= (this.o.checkpointEvery ?? 5000)) {
        this.sinceCheckpoint = 0;
        this.journalTail = this.journalTail.then(() => this.checkpointOrLog());
      }
    }
    return durable.then(() => {
      for (const r of tx.reports) for (const l of this.reportListeners) l(r);
      for (const t of tx.tokens) for (const l of this.bookListeners) l(t);
    });
  }

  /**
   * Writes one journal entry, retrying with backoff (50 ms doubling, at most 5 s) until it lands.
   * An entry is self-contained (absolute states) and keyed by its seq, so a retry of a write that
   * did land is recognised by its duplicate key.
   */
  private async writeDurably(doc: JournalDoc): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.journal.insertOne(doc);
        break;
      } catch (err) {
        if (err instanceof DuplicateKeyError) break;
        const first = this.writeError === null;
        this.writeError = `journal write failed: ${(err as Error).message}`;
        if (first || attempt % 20 === 0) this.o.log.error({ err, seq: doc.seq, attempt }, 'venue journal write failed; venue degraded, retrying');
        await new Promise((r) => setTimeout(r, Math.min(5000, 50 * 2 ** Math.min(attempt - 1, 10))));
      }
    }
    this.pendingWrites--;
    if (this.writeError !== null) {
      this.writeError = null;
      this.o.log.warn({ seq: doc.seq }, 'venue journal writes recovered');
    }
  }

  /** A checkpoint whose failure is logged, not fatal: the journal still holds what it would cover. */
  private async checkpointOrLog(): Promise<void> {
    try {
      await this.checkpoint();
      this.checkpointError = null;
    } catch (err) {
      this.checkpointError = `checkpoint failed: ${(err as Error).message}`;
      this.o.log.error({ err }, 'venue checkpoint failed; the journal keeps everything, retried at the next checkpoint');
    }
  }

  /** Runs an operation nobody awaits (maker refill, replay); a failure is logged. */
  private background(fn: (tx: Tx) => void): void {
    this.execute(fn).catch((err: unknown) => this.o.log.error({ err }, 'venue background operation failed'));
  }

  private place(tx: Tx, order: VenueOrder): void {
    const info = this.token(order.tokenId);
    const reject = (error: string, reason: string) => {
      const e = this.newEntry(order, 'rejected', null);
      e.final = { type: 'venue.rejected', orderId: order.orderId, error, reason, atMs: tx.atMs };
      tx.orders.add(order.orderId);
      tx.reports.push(e.final);
    };
    if (!info) return reject('invalid_request', `unknown token ${order.tokenId}`);
    const book = this.books.get(order.tokenId)!;
    const w = this.walletOf(order.userId);
    const price = order.price === null ? null : dec(order.price);
    const size = order.size === null ? null : dec(order.size);
    if (price && (price.lt(info.tickSize) || price.gt(dec(1).minus(info.tickSize)) || !price.mod(info.tickSize).isZero())) {
      return reject('invalid_request', `price ${order.price} is not on the tick ${str(info.tickSize)} within (0, 1)`);
    }
    if (order.postOnly && price) {
      const opp = book.best(order.side === 'buy' ? 'sell' : 'buy');
      if (opp && (order.side === 'buy' ? opp.lte(price) : opp.gte(price))) return reject('order crosses book', 'post-only order would take liquidity');
    }
    // Reservation.
    let reserveUsd = ZERO;
    let reserveShares = ZERO;
    if (order.side === 'buy') {
      reserveUsd = order.kind === 'market' ? dec(order.quoteAmount!) : price!.times(size!);
      const free = w.pusd.minus(w.reserved);
      if (free.lt(reserveUsd)) return reject('INSUFFICIENT_BALANCE', insufficientBalanceMessage('this buy', reserveUsd, free));
    } else {
      const p = w.positions.get(order.tokenId);
      const free = p ? p.shares.minus(p.reserved) : ZERO;
      if (free.lt(size!)) return reject('INSUFFICIENT_SHARES', notEnoughSharesMessage(p?.shares ?? ZERO, p?.reserved ?? ZERO));
      reserveShares = size!;
    }
    // FOK: all or nothing against what could trade (own orders excluded).
    if (order.timeInForce === 'FOK' && !this.fillable(book, order, price, size!)) {
      const e = this.newEntry(order, 'canceled', size);
      e.final = { type: 'venue.canceled', orderId: order.orderId, reason: 'FOK order could not be filled in full', atMs: tx.atMs };
      tx.orders.add(order.orderId);
      tx.reports.push({ type: 'venue.accepted', orderId: order.orderId, atMs: tx.atMs, resting: false }, e.final);
      return;
    }
    const e = this.newEntry(order, 'open', size);
    e.reservedUsd = reserveUsd;
    e.reservedShares = reserveShares;
    w.reserved = w.reserved.plus(reserveUsd);
    if (reserveShares.gt(0)) {
      const p = this.positionOf(w, order.tokenId);
      p.reserved = p.reserved.plus(reserveShares);
    }
    tx.users.add(order.userId);
    tx.orders.add(order.orderId);
    const willRest = order.kind === 'limit' && (order.timeInForce === 'GTC' || order.timeInForce === 'GTD');
    tx.reports.push({ type: 'venue.accepted', orderId: order.orderId, atMs: tx.atMs, resting: willRest });
    const quoteLeft = this.match(tx, book, e, price);
    if (e.status !== 'open') return; // filled in full
    if (willRest && e.remaining!.gt(0)) {
      book.add({ orderId: order.orderId, userId: order.userId, side: order.side, price: price!, key: priceKey(price!), remaining: e.remaining!, seq: e.seq });
      tx.tokens.add(order.tokenId);
      return;
    }
    const ioc = order.kind === 'market' ? 'market orders are IOC' : 'IOC';
    if (e.fills.length === 0) {
      this.closeOrder(tx, e, 'canceled', { type: 'venue.canceled', orderId: order.orderId, reason: `no liquidity at an acceptable price (${ioc})`, atMs: tx.atMs });
    } else if (quoteLeft && !(book.head('sell') === undefined && quoteLeft.gte(dec('0.01')))) {
      // A market buy that spent its amount, up to less than one hundredth of a share: complete.
      e.fills[e.fills.length - 1]!.completes = true;
      this.closeOrder(tx, e, 'filled', null);
    } else {
      this.closeOrder(tx, e, 'canceled', { type: 'venue.canceled', orderId: order.orderId, reason: `unfilled remainder canceled (${ioc})`, atMs: tx.atMs });
    }
  }

  /** Whether `size` shares could trade now at `price` or better (market: any price). */
  private fillable(book: OrderBook, order: VenueOrder, price: Dec | null, size: Dec): boolean {
    let left = size;
    for (const r of book.walk(order.side === 'buy' ? 'sell' : 'buy')) {
      if (price && (order.side === 'buy' ? r.price.gt(price) : r.price.lt(price))) break;
      if (r.userId === order.userId) continue;
      left = left.minus(r.remaining);
      if (left.lte(0)) return true;
    }
    return false;
  }

  private newEntry(order: VenueOrder, status: OrderEntry['status'], size: Dec | null): OrderEntry {
    const e: OrderEntry = {
      order, status, remaining: size, reservedUsd: ZERO, reservedShares: ZERO, fills: [], final: null,
      updatedAtMs: this.o.clock.now(), seq: ++this.orderSeq,
    };
    if (order.userId !== MAKER_ID) this.orders.set(order.orderId, e);
    return e;
  }

  /**
   * Walks the opposite side while it crosses `limit` (null = market), filling `taker`.
   * @returns dollars left of a market buy's amount (null for share-sized orders).
   */
  private match(tx: Tx, book: OrderBook, taker: OrderEntry, limit: Dec | null): Dec | null {
    const side = taker.order.side;
    const opp: Side = side === 'buy' ? 'sell' : 'buy';
    let quoteLeft = taker.order.kind === 'market' && side === 'buy' ? dec(taker.order.quoteAmount!) : null;
    for (;;) {
      const head = book.head(opp);
      if (!head) break;
      if (limit && (side === 'buy' ? head.price.gt(limit) : head.price.lt(limit))) break;
      if (head.userId === taker.order.userId) {
        const resting = this.orders.get(head.orderId);
        book.remove(head.orderId);
        tx.tokens.add(book.tokenId);
        if (resting) this.closeOrder(tx, resting, 'canceled', { type: 'venue.canceled', orderId: head.orderId, reason: 'self-trade prevention', atMs: tx.atMs });
        continue;
      }
      let qty = head.remaining;
      if (taker.remaining) qty = Dec.min(qty, taker.remaining);
      if (quoteLeft) qty = Dec.min(qty, quoteLeft.div(head.price).toDecimalPlaces(SIZE_DP, Dec.ROUND_DOWN));
      if (qty.lte(0)) break;
      this.trade(tx, book, taker, head, qty);
      if (quoteLeft) quoteLeft = quoteLeft.minus(qty.times(head.price));
      if (taker.remaining?.lte(0)) break;
    }
    return quoteLeft;
  }

  /** One trade at the resting order's price; settles both sides and reports each user side. */
  private trade(tx: Tx, book: OrderBook, taker: OrderEntry, maker: Resting, qty: Dec): void {
    const px = maker.price;
    const tradeId = `T${tx.seq}-${++tx.trades}`;
    tx.tokens.add(book.tokenId);
    // taker side
    this.settle(tx, taker, px, qty, `${tradeId}-t`, 'taker');
    // maker side
    maker.remaining = maker.remaining.minus(qty);
    const makerEntry = this.orders.get(maker.orderId);
    if (makerEntry) this.settle(tx, makerEntry, px, qty, `${tradeId}-m`, 'maker');
    if (maker.remaining.lte(0)) book.remove(maker.orderId);
    if (maker.userId === MAKER_ID) this.scheduleRefill(book.tokenId);
  }

  private settle(tx: Tx, e: OrderEntry, px: Dec, qty: Dec, tradeId: string, liquidity: 'maker' | 'taker'): void {
    const o = e.order;
    if (o.userId === MAKER_ID) return;
    const w = this.walletOf(o.userId);
    const p = this.positionOf(w, o.tokenId);
    const notional = px.times(qty);
    if (o.side === 'buy') {
      const release = o.kind === 'market' ? notional : dec(o.price!).times(qty);
      w.pusd = w.pusd.minus(notional);
      w.reserved = w.reserved.minus(release);
      e.reservedUsd = e.reservedUsd.minus(release);
      p.shares = p.shares.plus(qty);
      p.cost = p.cost.plus(notional);
    } else {
      const costOut = p.shares.isZero() ? ZERO : p.cost.times(qty).div(p.shares);
      p.cost = p.cost.minus(costOut);
      p.shares = p.shares.minus(qty);
      p.reserved = p.reserved.minus(qty);
      e.reservedShares = e.reservedShares.minus(qty);
      w.pusd = w.pusd.plus(notional);
    }
    if (e.remaining) e.remaining = e.remaining.minus(qty);
    const fill: FillReport = {
      type: 'venue.filled', orderId: o.orderId, tradeId, price: str(px), size: str(qty), liquidity, completes: e.remaining?.lte(0) ?? false, atMs: tx.atMs,
    };
    e.fills.push(fill);
    e.updatedAtMs = tx.atMs;
    tx.users.add(o.userId);
    tx.orders.add(o.orderId);
    tx.reports.push(fill);
    if (e.remaining?.lte(0)) this.closeOrder(tx, e, 'filled', null);
  }

  /** Ends an order: releases what it still reserves, leaves the book, records the final report. */
  private closeOrder(tx: Tx, e: OrderEntry, status: OrderEntry['status'], report: VenueReport | null): void {
    const o = e.order;
    const w = this.walletOf(o.userId);
    w.reserved = w.reserved.minus(e.reservedUsd);
    e.reservedUsd = ZERO;
    if (e.reservedShares.gt(0)) {
      const p = this.positionOf(w, o.tokenId);
      p.reserved = p.reserved.minus(e.reservedShares);
      e.reservedShares = ZERO;
    }
    if (this.books.get(o.tokenId)?.remove(o.orderId)) tx.tokens.add(o.tokenId);
    e.status = status;
    e.final = report;
    e.updatedAtMs = tx.atMs;
    tx.users.add(o.userId);
    tx.orders.add(o.orderId);
    if (report) tx.reports.push(report);
  }

  // ---- market maker -----------------------------------------------------------------------

  /** The maker's ladder for a token around its reference price: [side, price, size][]. */
  private ladder(info: TokenInfo): [Side, Dec, Dec][] {
    const ref = this.references.get(info.tokenId) ?? info.referencePrice;
    const tick = info.tickSize;
    const lo = tick;
    const hi = dec(1).minus(tick);
    const mid = ref.div(tick).toDecimalPlaces(0, Dec.ROUND_HALF_EVEN).times(tick);
    const out: [Side, Dec, Dec][] = [];
    for (let k = 1; k <= this.o.makerLevels; k++) {
      const bid = mid.minus(tick.times(k));
      const ask = mid.plus(tick.times(k));
      const sizeOf = (side: string) => dec(50 + 25 * hashInt(`${info.tokenId}:${side}:${k}`, 40)).times(k === 1 ? 1 : 1 + k / 2).toDecimalPlaces(0);
      if (bid.gte(lo)) out.push(['buy', bid, sizeOf('b')]);
      if (ask.lte(hi)) out.push(['sell', ask, sizeOf('a')]);
    }
    return out;
  }

  /** Replaces the maker's quotes on one token (maker orders may take crossing user orders). */
  private requote(tx: Tx, tokenId: string): void {
    const info = this.token(tokenId);
    const book = this.books.get(tokenId);
    if (!info || !book) return;
    for (const r of [...book.all()]) if (r.userId === MAKER_ID) book.remove(r.orderId);
    tx.tokens.add(tokenId);
    for (const [side, price, size] of this.ladder(info)) {
      const order: VenueOrder = {
        orderId: `mm-${++this.makerSeq}`, userId: MAKER_ID, tokenId, side, kind: 'limit', price: str(price), size: str(size), quoteAmount: null, timeInForce: 'GTC', postOnly: false,
      };
      const e = this.newEntry(order, 'open', size);
      this.match(tx, book, e, price);
      if (e.remaining && e.remaining.gt(0)) book.add({ orderId: order.orderId, userId: MAKER_ID, side, price, key: priceKey(price), remaining: e.remaining, seq: e.seq });
    }
  }

  private seedAll(): void {
    this.background((tx) => {
      for (const tokenId of this.books.keys()) this.requote(tx, tokenId);
    });
  }

  private scheduleRefill(tokenId: string): void {
    if (this.refillTimers.has(tokenId)) return;
    const t = setTimeout(() => {
      this.refillTimers.delete(tokenId);
      this.background((tx) => this.requote(tx, tokenId));
    }, this.o.refillMs);
    t.unref();
    this.refillTimers.set(tokenId, t);
  }

  /** Recorded price of the replay token now: wall time maps onto the path, looping. */
  private replayPrice(): Dec {
    const pts = this.o.catalogue.replay.points;
    const first = pts[0]!.tSec;
    const span = pts[pts.length - 1]!.tSec - first;
    const recorded = first + ((this.o.clock.now() / 1000) * this.o.replaySpeed) % span;
    let lo = 0;
    let hi = pts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (pts[mid]!.tSec <= recorded) lo = mid;
      else hi = mid - 1;
    }
    return pts[lo]!.price;
  }

  private applyReplay(initial: boolean): void {
    const tokenId = this.o.catalogue.replay.tokenId;
    const info = this.token(tokenId);
    if (!info) return;
    const p = this.replayPrice();
    if (!initial && this.references.get(tokenId)?.eq(p)) return;
    this.references.set(tokenId, p);
    this.references.set(info.complementTokenId, dec(1).minus(p));
    if (!initial) {
      this.background((tx) => {
        this.requote(tx, tokenId);
        this.requote(tx, info.complementTokenId);
      });
    }
  }

  // ---- persistence ------------------------------------------------------------------------

  private walletRow(userId: string): WalletRow {
    const w = this.walletOf(userId);
    return {
      userId, pusd: str(w.pusd), reserved: str(w.reserved),
      positions: [...w.positions.entries()].map(([t, p]) => [t, str(p.shares), str(p.reserved), str(p.cost)]),
    };
  }

  private orderRow(e: OrderEntry): OrderRow {
    return {
      order: e.order, status: e.status, remaining: e.remaining ? str(e.remaining) : null, reservedUsd: str(e.reservedUsd),
      reservedShares: str(e.reservedShares), fills: e.fills, final: e.final, updatedAtMs: e.updatedAtMs, seq: e.seq,
    };
  }

  private loadWallet(r: WalletRow): void {
    this.wallets.set(r.userId, {
      pusd: dec(r.pusd), reserved: dec(r.reserved),
      positions: new Map(r.positions.map(([t, s, res, c]) => [t, { shares: dec(s), reserved: dec(res), cost: dec(c) }])),
    });
  }

  private loadOrder(r: OrderRow): void {
    this.orders.set(r.order.orderId, {
      order: r.order, status: r.status, remaining: r.remaining === null ? null : dec(r.remaining), reservedUsd: dec(r.reservedUsd),
      reservedShares: dec(r.reservedShares), fills: r.fills, final: r.final, updatedAtMs: r.updatedAtMs, seq: r.seq,
    });
    this.orderSeq = Math.max(this.orderSeq, r.seq);
  }

  /** Checkpoint + journal → wallets, orders, resting user orders; then compacts the journal. */
  private async recover(): Promise<void> {
    const cp = await this.state.findOne({ _id: 'checkpoint' });
    if (cp) {
      const rows = rowsOf(cp);
      rows.wallets.forEach((w) => this.loadWallet(w));
      rows.orders.forEach((o) => this.loadOrder(o));
      this.seq = cp.seq;
      this.orderSeq = Math.max(this.orderSeq, cp.orderSeq);
    }
    await this.journal.deleteMany({ seq: { $lte: this.seq } }); // left by a checkpoint cut short
    this.journalFrom = this.seq + 1;
    const entries = await this.journal.find({ seq: { $gt: this.seq } }, { sort: { seq: 1 } });
    for (const j of entries) {
      const rows = rowsOf(j);
      rows.wallets.forEach((w) => this.loadWallet(w));
      rows.orders.forEach((o) => this.loadOrder(o));
      this.seq = j.seq;
    }
    const resting = [...this.orders.values()].filter((e) => e.status === 'open' && e.remaining && (e.order.timeInForce === 'GTC' || e.order.timeInForce === 'GTD'));
    resting.sort((a, b) => a.seq - b.seq);
    for (const e of resting) {
      const price = dec(e.order.price!);
      this.books.get(e.order.tokenId)?.add({ orderId: e.order.orderId, userId: e.order.userId, side: e.order.side, price, key: priceKey(price), remaining: e.remaining!, seq: e.seq });
    }
    this.o.log.info({ seq: this.seq, wallets: this.wallets.size, orders: this.orders.size, resting: resting.length, replayed: entries.length }, 'venue state recovered');
    if (entries.length) await this.checkpoint();
  }

  /** Writes all user state as one checkpoint document, then drops the journal it covers. */
  private async checkpoint(): Promise<void> {
    const now = this.o.clock.now();
    for (const [id, e] of this.orders) if (e.status !== 'open' && (e.released || now - e.updatedAtMs > RETAIN_DONE_MS)) this.orders.delete(id);
    const seq = this.seq;
    await this.state.replaceOne({
      _id: 'checkpoint', seq, orderSeq: this.orderSeq,
      rows: JSON.stringify({
        wallets: [...this.wallets.keys()].filter((u) => u !== MAKER_ID).map((u) => this.walletRow(u)),
        orders: [...this.orders.values()].map((e) => this.orderRow(e)),
      } satisfies StateRows),
    });
    // in slices by _id (= padded seq, indexed everywhere): one long removal would stall every other write
    for (let upTo = this.journalFrom + JOURNAL_DELETE_CHUNK - 1; ; upTo += JOURNAL_DELETE_CHUNK) {
      await this.journal.deleteMany({ _id: { $lte: pad(Math.min(upTo, seq)) } });
      if (upTo >= seq) break;
    }
    this.journalFrom = seq + 1;
  }
}
