import { createHash } from 'node:crypto';
import type { Clock } from '../clock.js';
import { Dec, dec, nonPositive, ONE, str, ZERO } from '../decimal.js';
import { priceKey } from './book.js';
import { LIQUIDITY_PROVIDER_ID } from './ledger.js';
import type { CapturedLevelRow } from './journal.js';
import type { Catalogue, CatalogueToken } from './markets.js';
import type { MatchingEngine, Tx } from './matching.js';
import type { Side } from './port.js';

/** Deterministic pseudo-random integer in [0, n) from a string. */
function hashInt(s: string, n: number): number {
  return createHash('sha1').update(s).digest().readUInt32BE(0) % n;
}

/** One quote of the provider's ladder: price (decimal probability) and size (shares), with their strings. */
interface LadderLevel {
  side: Side;
  price: Dec;
  size: Dec;
  priceStr: string;
  sizeStr: string;
}

/** Key of a token's captured level in {@link LiquidityProvider}'s `captured`: the price key, negated for asks. */
function capturedKey(side: Side, price: Dec): number {
  return side === 'buy' ? priceKey(price) : -priceKey(price);
}

/** Key of one captured level: token, side, price. */
function levelKey(tokenId: string, side: Side, price: Dec): string {
  return `${tokenId}|${side}|${str(price)}`;
}

/** Options of the simulated liquidity provider (from SIM_* settings). */
export interface LiquidityOptions {
  catalogue: Catalogue;
  clock: Clock;
  /** Price levels quoted per side of every book (SIM_MAKER_LEVELS). */
  levels: number;
  /** Delay before a book whose quotes were taken is refilled, ms (SIM_MAKER_REFILL_MS). */
  refillMs: number;
  /** Whether the MSTR token follows its recorded path (SIM_REPLAY). */
  replay: boolean;
  /** Recorded seconds per real second (SIM_REPLAY_SPEED). */
  replaySpeed: number;
  /** How often the replay checks for a new recorded price, ms (default 1,000). */
  replayTickMs?: number;
  /** Runs a venue operation nobody awaits (the facade's in memory → journal → reports path). */
  run: (fn: (tx: Tx) => void) => void;
  /**
   * Tokens whose book is the WebSocket capture's (the capture replay is on): the
   * provider quotes no ladder there and refills nothing; it places the captured levels instead
   * ({@link LiquidityProvider.setCapturedLevel}).
   */
  captureDriven?: ReadonlySet<string>;
}

/** A captured level's quote: its order id, and its size as far as the capture's events and the journaled rows tell. */
interface CapturedQuote {
  orderId: string;
  side: Side;
  price: Dec;
  size: Dec;
}

/**
 * The simulated liquidity provider (account {@link LIQUIDITY_PROVIDER_ID}, unlimited inventory,
 * never persisted): quotes a ladder of `levels` price levels each side, one tick apart, around
 * the reference price of the first outcome token of every market (sizes 50–3,600 shares, growing
 * with distance from the touch); the other token's book shows that ladder mirrored (complementary
 * matching, `matching.ts`: a bid of one outcome at p is an ask of the other at 1 − p), so both
 * outcomes trade against one ladder that can never cross itself. It re-quotes a book `refillMs`
 * after its quotes were taken; and, with replay on, moves the MSTR token's reference along its
 * recorded path (its complement the other way), re-quoting the ladder.
 * Its quotes go through the same matching as user orders, so it is never crossed or locked and
 * its re-quotes take the user orders they cross (which is how the path hits resting orders).
 */
export class LiquidityProvider {
  /** Reference price by token, decimal probability. */
  private readonly references = new Map<string, Dec>();
  private readonly refillTimers = new Map<string, NodeJS.Timeout>();
  private replayTimer: NodeJS.Timeout | null = null;
  /** Last quote number (quote order ids are `mm-<n>`). */
  private quoteSeq = 0;
  /**
   * Captured levels resting now, per capture token: signed price key (bids +, asks −) → the quote
   * and its size as far as the capture's events and the journaled {@link CapturedLevelRow}s tell.
   */
  private readonly captured = new Map<string, Map<number, CapturedQuote>>();
  /** Capture tokens whose captured levels an operation set (synced by {@link syncCaptured}). */
  private readonly capturedDirty = new Set<string>();
  /**
   * Captured levels users traded with and the capture did not
   * set again since: `tokenId|side|price` → row (checkpointed).
   */
  private readonly takenLevels = new Map<string, CapturedLevelRow>();

  /** The quoted token of each token's market (its first outcome), by token id. */
  private readonly quotedOf = new Map<string, string>();

  constructor(
    private readonly o: LiquidityOptions,
    private readonly matching: MatchingEngine,
  ) {
    for (const t of o.catalogue.tokens.values()) this.references.set(t.tokenId, t.referencePrice);
    for (const m of o.catalogue.markets) for (const t of m.tokens) this.quotedOf.set(t.tokenId, m.tokens[0]!.tokenId);
  }

  /** The token of `tokenId`'s market whose book holds the ladder (the market's first outcome). */
  private quoted(tokenId: string): string {
    return this.quotedOf.get(tokenId) ?? tokenId;
  }

  /** Quotes every book (after recovery) and, with replay on, starts following the recorded path. */
  start(): void {
    if (this.o.replay) this.applyReplay(true);
    this.o.run((tx) => {
      for (const tokenId of this.matching.tokenIds()) if (this.quoted(tokenId) === tokenId) this.requote(tx, tokenId);
    });
    if (this.o.replay) {
      this.replayTimer = setInterval(() => this.applyReplay(false), this.o.replayTickMs ?? 1000);
      this.replayTimer.unref();
    }
  }

  /** Stops the replay and pending refills. */
  stop(): void {
    if (this.replayTimer) clearInterval(this.replayTimer);
    for (const t of this.refillTimers.values()) clearTimeout(t);
  }

  /**
   * Sets a token's reference price (decimal probability; its complement's is 1 − it); the caller
   * re-quotes it.
   */
  setReference(tokenId: string, price: Dec): void {
    const q = this.quoted(tokenId);
    this.references.set(q, q === tokenId ? price : ONE.minus(price));
    const c = this.o.catalogue.tokens.get(q)?.complementTokenId;
    if (c !== undefined) this.references.set(c, ONE.minus(this.references.get(q)!));
  }

  /** Schedules a refill of every book where the operation `tx` took quotes of the provider. */
  refillAfter(tx: Tx): void {
    for (const tokenId of tx.liquidityTaken) this.scheduleRefill(tokenId);
  }

  /**
   * Ladders made, by token, with the reference price and tick they were made for (by identity:
   * both are replaced, never changed, when they move): a refill after each crossing order re-quotes
   * the same ladder.
   */
  private readonly ladders = new Map<string, { ref: Dec; tick: Dec; out: readonly LadderLevel[] }>();

  /**
   * Quote sizes of each token's ladder by level (`[bid, ask]` of level k at k − 1): they depend on
   * the token and the level only, so they are worked out (a SHA-1 each) once per token, not at
   * every re-quote (the start re-quotes every book in one operation).
   */
  private readonly ladderSizes = new Map<string, [Dec, Dec][]>();

  /** The ladder for a token around its reference price (shared: never modify it). */
  private ladder(info: CatalogueToken): readonly LadderLevel[] {
    const ref = this.references.get(info.tokenId) ?? info.referencePrice;
    const tick = info.tickSize;
    const memo = this.ladders.get(info.tokenId);
    if (memo && memo.ref === ref && memo.tick === tick) return memo.out;
    const out = this.makeLadder(info, ref, tick).map(([side, price, size]): LadderLevel => ({
      side,
      price,
      size,
      priceStr: str(price),
      sizeStr: str(size),
    }));
    this.ladders.set(info.tokenId, { ref, tick, out });
    return out;
  }

  /** {@link ladder}, made: `levels` ticks each side of `ref` rounded to `tick`, within [tick, 1 − tick]. */
  private makeLadder(info: CatalogueToken, ref: Dec, tick: Dec): [Side, Dec, Dec][] {
    const lo = tick;
    const hi = ONE.minus(tick);
    const mid = ref.div(tick).toDecimalPlaces(0, Dec.ROUND_HALF_EVEN).times(tick);
    let sizes = this.ladderSizes.get(info.tokenId);
    if (sizes === undefined) {
      sizes = [];
      const sizeOf = (side: string, k: number) =>
        dec(50 + 25 * hashInt(`${info.tokenId}:${side}:${k}`, 40))
          .times(k === 1 ? 1 : 1 + k / 2)
          .toDecimalPlaces(0);
      for (let k = 1; k <= this.o.levels; k++) sizes.push([sizeOf('b', k), sizeOf('a', k)]);
      this.ladderSizes.set(info.tokenId, sizes);
    }
    const out: [Side, Dec, Dec][] = [];
    for (let k = 1; k <= this.o.levels; k++) {
      const bid = mid.minus(tick.times(k));
      const ask = mid.plus(tick.times(k));
      if (bid.gte(lo)) out.push(['buy', bid, sizes[k - 1]![0]]);
      if (ask.lte(hi)) out.push(['sell', ask, sizes[k - 1]![1]]);
    }
    return out;
  }

  /**
   * The capture says the level `price` (decimal probability) of `side` of `tokenId` now holds
   * `size` shares: the provider's quote there is replaced by one of `size` shares (none when 0).
   * What users took of the previous quote is thus gone until the capture next updates the level.
   * A captured level that crosses user orders takes them (the replay hits resting orders); one
   * that crosses the provider's own captured levels on the other side replaces them (the newer
   * fact wins).
   */
  setCapturedLevel(tx: Tx, tokenId: string, side: Side, price: Dec, size: Dec): void {
    let levels = this.captured.get(tokenId);
    if (!levels) this.captured.set(tokenId, (levels = new Map()));
    const key = capturedKey(side, price);
    const prev = levels.get(key);
    if (prev !== undefined) {
      this.matching.removeQuote(tx, tokenId, prev.orderId);
      levels.delete(key);
    }
    if (this.takenLevels.size) this.takenLevels.delete(levelKey(tokenId, side, price));
    this.capturedDirty.add(tokenId);
    // the book as shown changed, whether or not the level replaces one or trades: its listeners are told
    tx.tokens.add(tokenId);
    if (nonPositive(size)) return;
    const orderId = `mm-${++this.quoteSeq}`;
    levels.set(key, { orderId, side, price, size });
    this.matching.quoteLevel(tx, tokenId, orderId, side, price, size);
  }

  /**
   * After an operation: the captured levels whose resting size is no longer what the capture set
   * (users took from them, or a captured level crossed user orders or an opposite captured level),
   * as rows valid from capture index `at` (the replay's position after the operation). They are
   * journaled with the operation, so a restart rebuilds those levels as they were left.
   */
  syncCaptured(tx: Tx, at: number): CapturedLevelRow[] {
    if (!this.o.captureDriven) return [];
    const out: CapturedLevelRow[] = [];
    for (const t of this.capturedDirty) this.syncToken(t, at, out);
    // elsewhere only the levels users traded with changed: those, not every level of their tokens
    for (const q of tx.quotesTaken) {
      if (this.capturedDirty.has(q.tokenId)) continue;
      const levels = this.captured.get(q.tokenId);
      const key = capturedKey(q.side, q.price);
      const level = levels?.get(key);
      if (level?.orderId === q.orderId) this.syncLevel(levels!, q.tokenId, key, level, at, out);
    }
    this.capturedDirty.clear();
    return out;
  }

  /** {@link syncCaptured} of one token: its rows pushed to `out`. */
  private syncToken(tokenId: string, at: number, out: CapturedLevelRow[]): void {
    const levels = this.captured.get(tokenId);
    if (!levels) return;
    for (const [key, q] of levels) this.syncLevel(levels, tokenId, key, q, at, out);
  }

  /**
   * One captured level of {@link syncToken}: a row pushed to `out` when its resting size changed
   * (the level dropped at 0).
   */
  private syncLevel(
    levels: Map<number, CapturedQuote>,
    tokenId: string,
    key: number,
    q: CapturedQuote,
    at: number,
    out: CapturedLevelRow[],
  ): void {
    const left = this.matching.restingSize(tokenId, q.orderId) ?? ZERO;
    if (left === q.size || left.eq(q.size)) return;
    q.size = left;
    const row: CapturedLevelRow = { tokenId, side: q.side, price: str(q.price), size: str(left), at };
    this.takenLevels.set(levelKey(tokenId, q.side, q.price), row);
    out.push(row);
    if (left.isZero()) levels.delete(key);
  }

  /** The captured levels users traded with that the capture did not set since (checkpoint). */
  takenCapturedLevels(): CapturedLevelRow[] {
    return [...this.takenLevels.values()];
  }

  /**
   * Start-up: places the captured levels as of the replay's resumed position — the
   * capture's last size of each level before it, or a journaled {@link CapturedLevelRow} when
   * users traded with the level after that — silently: a level that would trade with a resting
   * user order is not placed (the state before the restart had none crossing; this only guards
   * against a damaged journal). Levels in `levels` come in the order of their last capture event.
   * @returns how many levels were placed.
   */
  rebuildCaptured(
    tx: Tx,
    levels: readonly { tokenId: string; side: Side; price: Dec; size: Dec; idx: number }[],
    taken: ReadonlyMap<string, CapturedLevelRow>,
  ): number {
    const userBest = new Map<string, { bid: Dec | undefined; ask: Dec | undefined }>();
    let placed = 0;
    for (const l of levels) {
      if (this.matching.isClosed(l.tokenId)) continue;
      const lk = levelKey(l.tokenId, l.side, l.price);
      const row = taken.get(lk);
      let size = l.size;
      if (row && row.at > l.idx) size = dec(row.size);
      if (size.lte(0)) continue;
      let best = userBest.get(l.tokenId);
      if (!best)
        userBest.set(
          l.tokenId,
          (best = {
            bid: this.matching.bestUserPrice(l.tokenId, 'buy'),
            ask: this.matching.bestUserPrice(l.tokenId, 'sell'),
          }),
        );
      if (l.side === 'sell' ? best.bid?.gte(l.price) : best.ask?.lte(l.price)) continue;
      this.setCapturedLevel(tx, l.tokenId, l.side, l.price, size);
      if (row && row.at > l.idx) this.takenLevels.set(lk, row);
      placed++;
    }
    this.capturedDirty.clear();
    return placed;
  }

  /** Forgets the captured levels of `tokenId` (its market closed: the matching engine emptied the book). */
  forgetCaptured(tokenId: string): void {
    this.captured.delete(tokenId);
    this.capturedDirty.delete(tokenId);
    for (const [k, r] of this.takenLevels) if (r.tokenId === tokenId) this.takenLevels.delete(k);
  }

  /**
   * Replaces the provider's quotes of `tokenId`'s market (in the book of its first outcome; its new
   * quotes may take crossing user orders of either outcome).
   */
  requote(tx: Tx, tokenId: string): void {
    tokenId = this.quoted(tokenId);
    if (this.o.captureDriven?.has(tokenId) || this.matching.isClosed(tokenId)) return;
    const info = this.o.catalogue.tokens.get(tokenId);
    if (!info || !this.matching.withdrawQuotes(tx, tokenId)) return;
    for (const { side, price, size, priceStr, sizeStr } of this.ladder(info)) {
      this.matching.quote(
        tx,
        {
          orderId: `mm-${++this.quoteSeq}`,
          userId: LIQUIDITY_PROVIDER_ID,
          tokenId,
          side,
          kind: 'limit',
          price: priceStr,
          size: sizeStr,
          quoteAmount: null,
          timeInForce: 'GTC',
          postOnly: false,
        },
        price,
        size,
      );
    }
  }

  private scheduleRefill(tokenId: string): void {
    if (this.refillTimers.has(tokenId) || this.o.captureDriven?.has(tokenId)) return;
    const t = setTimeout(() => {
      this.refillTimers.delete(tokenId);
      this.o.run((tx) => this.requote(tx, tokenId));
    }, this.o.refillMs);
    t.unref();
    this.refillTimers.set(tokenId, t);
  }

  /** Recorded price of the replay token now: wall time maps onto the path, looping. */
  private replayPrice(): Dec {
    const pts = this.o.catalogue.replay.points;
    const first = pts[0]!.tSec;
    const span = pts[pts.length - 1]!.tSec - first;
    const recorded = first + (((this.o.clock.now() / 1000) * this.o.replaySpeed) % span);
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
    const info = this.o.catalogue.tokens.get(tokenId);
    if (!info) return;
    const p = this.replayPrice();
    if (!initial && this.references.get(tokenId)?.eq(p)) return;
    this.setReference(tokenId, p);
    if (!initial) this.o.run((tx) => this.requote(tx, tokenId));
  }
}
