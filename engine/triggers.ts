import type { Touch, Watch } from '../machines/strategy-kit.js';
import { Dec } from './decimal.js';

/** Micro-units of one digit at each decimal place (index: places after the point, 0 … 6). */
const PLACE = [1_000_000, 100_000, 10_000, 1_000, 100, 10, 1];

/**
 * A price as integer micro-units (exact for prices with at most 6 decimals; never a float). The
 * common case, a plain decimal of 1 to 9 digits and at most 6 places (`\d{1,9}(\.\d{1,6})?`), is
 * read digit by digit, with no allocation (it runs for every watch armed and every touch); the
 * rest through Dec.
 */
export function micro(price: string, round: 'floor' | 'ceil' | 'exact'): number {
  const n = price.length;
  let i = 0;
  let units = 0;
  for (let c = price.charCodeAt(0); i < n && c >= 48 && c <= 57; c = price.charCodeAt(++i)) units = units * 10 + c - 48;
  let plain = i >= 1 && i <= 9;
  if (plain && i < n) {
    let places = 0;
    let fraction = 0;
    plain = price.charCodeAt(i) === 46;
    for (i++; plain && i < n; i++) {
      const c = price.charCodeAt(i);
      plain = c >= 48 && c <= 57 && ++places <= 6;
      fraction = fraction * 10 + c - 48;
    }
    if (plain && places > 0) return units * 1_000_000 + fraction * PLACE[places]!;
    plain = false;
  }
  if (plain) return units * 1_000_000;
  const x = new Dec(price).times(1_000_000);
  return (round === 'ceil' ? x.ceil() : round === 'floor' ? x.floor() : x.round()).toNumber();
}

/** The four price ladders of a token. */
type LadderName = 'bidAtOrBelow' | 'bidAbove' | 'askBelow' | 'askAtOrAbove';
const LADDERS: readonly LadderName[] = ['bidAtOrBelow', 'bidAbove', 'askBelow', 'askAtOrAbove'];

/**
 * Entries kept sorted so that the ones a touch fires are always at the end: a book update looks
 * at the last entry (O(1) when nothing fires) and pops what fires (O(1) each). `fires(level,
 * price)` must hold for a suffix. Two parallel arrays (levels as small integers, ids), no object
 * per entry: memory per armed strategy. Insertions wait in a buffer until the ladder
 * is next read, then go in one by one when they are few, or sorted and merged in one pass when
 * many (a restart registers a million strategies before the first book update).
 */
class Ladder {
  private levels: number[] = [];
  private ids: string[] = [];
  /** Inserted since the ladder was last read, in insertion order. */
  private pendingLevels: number[] = [];
  private pendingIds: string[] = [];
  /** `ascending`: fire suffix holds the highest levels. */
  constructor(private readonly ascending: boolean) {}

  private before(a: number, b: number): boolean {
    return this.ascending ? a < b : a > b;
  }

  insert(level: number, id: string): void {
    this.pendingLevels.push(level);
    this.pendingIds.push(id);
  }

  /** Puts the pending insertions in place: each after every equal level already in (insertion order). */
  private settle(): void {
    const pl = this.pendingLevels;
    const n = pl.length;
    if (n === 0) return;
    const pi = this.pendingIds;
    this.pendingLevels = [];
    this.pendingIds = [];
    if (n <= 32) {
      for (let k = 0; k < n; k++) this.insertOne(pl[k]!, pi[k]!);
      return;
    }
    const order = Array.from({ length: n }, (_, k) => k);
    order.sort((a, b) => (this.before(pl[a]!, pl[b]!) ? -1 : this.before(pl[b]!, pl[a]!) ? 1 : a - b));
    const levels = this.levels;
    const ids = this.ids;
    const outLevels: number[] = new Array<number>(levels.length + n);
    const outIds: string[] = new Array<string>(levels.length + n);
    let i = 0;
    let j = 0;
    let o = 0;
    while (i < levels.length || j < n) {
      // an existing entry goes first unless the pending one is strictly before it
      if (j === n || (i < levels.length && !this.before(pl[order[j]!]!, levels[i]!))) {
        outLevels[o] = levels[i]!;
        outIds[o++] = ids[i++]!;
      } else {
        outLevels[o] = pl[order[j]!]!;
        outIds[o++] = pi[order[j++]!]!;
      }
    }
    this.levels = outLevels;
    this.ids = outIds;
  }

  private insertOne(level: number, id: string): void {
    const levels = this.levels;
    let lo = 0;
    let hi = levels.length;
    // after every equal level (so appending in order costs no move)
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (!this.before(level, levels[mid]!)) lo = mid + 1;
      else hi = mid;
    }
    if (lo === levels.length) {
      levels.push(level);
      this.ids.push(id);
    } else {
      levels.splice(lo, 0, level);
      this.ids.splice(lo, 0, id);
    }
  }

  remove(level: number, id: string): void {
    this.settle();
    // binary search to the first entry of that level, then scan the (few) equal levels
    const levels = this.levels;
    let lo = 0;
    let hi = levels.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.before(levels[mid]!, level)) lo = mid + 1;
      else hi = mid;
    }
    for (let i = lo; i < levels.length && levels[i] === level; i++) {
      if (this.ids[i] === id) {
        if (i === levels.length - 1) {
          levels.pop();
          this.ids.pop();
        } else {
          levels.splice(i, 1);
          this.ids.splice(i, 1);
        }
        return;
      }
    }
  }

  /** Pops every entry at the end for which `fires(level)` holds. */
  popWhile(fires: (level: number) => boolean, out: Set<string>): void {
    this.settle();
    const levels = this.levels;
    while (levels.length && fires(levels[levels.length - 1]!)) {
      levels.pop();
      out.add(this.ids.pop()!);
    }
  }

  get size(): number {
    return this.levels.length + this.pendingLevels.length;
  }

  /** Adds the id of every entry (placed or pending) to `out`. */
  idsInto(out: Set<string>): void {
    for (const id of this.ids) out.add(id);
    for (const id of this.pendingIds) out.add(id);
  }
}

/** The watches of one token. */
class TokenWatches {
  /** fire when bid ≤ level: ascending, the highest levels fire first. */
  readonly bidAtOrBelow = new Ladder(true);
  /** fire when bid > mark: descending, the lowest marks at the end. */
  readonly bidAbove = new Ladder(false);
  /** fire when ask < mark: ascending, the highest marks at the end. */
  readonly askBelow = new Ladder(true);
  /** fire when ask ≥ level: descending, the lowest levels at the end. */
  readonly askAtOrAbove = new Ladder(false);
  readonly any = new Set<string>();
  last: Touch = { bid: null, ask: null };

  get size(): number {
    return this.bidAtOrBelow.size + this.bidAbove.size + this.askBelow.size + this.askAtOrAbove.size + this.any.size;
  }
}

/**
 * One strategy's registration: its token and, per ladder, its level in micro-units (null: not on
 * that ladder). One small object per armed strategy.
 */
interface Registration {
  tokenId: string;
  any: boolean;
  bidAtOrBelow: number | null;
  bidAbove: number | null;
  askBelow: number | null;
  askAtOrAbove: number | null;
}

/**
 * Price-trigger index of the strategy engine: per token, the armed
 * conditions (`context.watch` of each strategy) sorted by price, so that a book update costs time
 * in proportion to the strategies it actually fires, not to all that are armed. A strategy that
 * fires leaves the ladders (it does not fire again while its touch is being delivered) but its
 * registration is held until the engine either confirms the delivery ({@link delivered}, then
 * registers the strategy's new watch) or, when delivery failed, arms it again ({@link rearm}):
 * a fired trigger is always delivered or armed again, never lost.
 */
export class TriggerIndex {
  private readonly tokens = new Map<string, TokenWatches>();
  private readonly byId = new Map<string, Registration>();
  /** Registrations fired and not yet confirmed delivered. */
  private readonly inDelivery = new Map<string, Registration>();

  /** Number of strategies registered. */
  get size(): number {
    return this.byId.size;
  }

  /**
   * Replaces the watch of strategy `id` on `tokenId` (an empty watch unregisters it).
   * @returns whether the registration changed (a new or different watch).
   */
  set(id: string, tokenId: string, watch: Watch | undefined): boolean {
    const reg: Registration = {
      tokenId,
      any: watch?.any === true,
      bidAtOrBelow: watch?.bidAtOrBelow !== undefined ? micro(watch.bidAtOrBelow, 'floor') : null,
      bidAbove: watch?.bidAbove !== undefined ? micro(watch.bidAbove, 'floor') : null,
      askBelow: watch?.askBelow !== undefined ? micro(watch.askBelow, 'ceil') : null,
      askAtOrAbove: watch?.askAtOrAbove !== undefined ? micro(watch.askAtOrAbove, 'ceil') : null,
    };
    const prev = this.byId.get(id);
    if (this.inDelivery.size > 0) this.inDelivery.delete(id);
    if (
      !reg.any &&
      reg.bidAtOrBelow === null &&
      reg.bidAbove === null &&
      reg.askBelow === null &&
      reg.askAtOrAbove === null
    ) {
      if (prev !== undefined) this.unlink(id);
      return prev !== undefined;
    }
    if (
      prev &&
      prev.tokenId === tokenId &&
      prev.any === reg.any &&
      prev.bidAtOrBelow === reg.bidAtOrBelow &&
      prev.bidAbove === reg.bidAbove &&
      prev.askBelow === reg.askBelow &&
      prev.askAtOrAbove === reg.askAtOrAbove
    )
      return false;
    if (prev !== undefined) this.unlink(id); // a new strategy (arming) has nothing to take out
    this.link(id, reg);
    return true;
  }

  private link(id: string, reg: Registration): void {
    let t = this.tokens.get(reg.tokenId);
    if (!t) this.tokens.set(reg.tokenId, (t = new TokenWatches()));
    for (const ladder of LADDERS) {
      const level = reg[ladder];
      if (level !== null) t[ladder].insert(level, id);
    }
    if (reg.any) t.any.add(id);
    this.byId.set(id, reg);
  }

  /** Takes strategy `id` out of the ladders. @returns its registration, if it had one. */
  private unlink(id: string): Registration | undefined {
    const reg = this.byId.get(id);
    if (!reg) return undefined;
    this.byId.delete(id);
    const t = this.tokens.get(reg.tokenId);
    if (!t) return reg;
    for (const ladder of LADDERS) {
      const level = reg[ladder];
      if (level !== null) t[ladder].remove(level, id);
    }
    if (reg.any) t.any.delete(id);
    return reg;
  }

  /** Fires strategy `id`: out of the ladders, held until {@link delivered} or {@link rearm}. */
  private hold(id: string): void {
    const reg = this.unlink(id);
    if (reg) this.inDelivery.set(id, reg);
  }

  /** Unregisters strategy `id` (its watch and any fired registration held for it). */
  remove(id: string): void {
    this.unlink(id);
    this.inDelivery.delete(id);
  }

  /**
   * The registration held for strategy `id` since it fired (an opaque token for
   * {@link delivered} / {@link rearm}), if any.
   */
  held(id: string): object | undefined {
    return this.inDelivery.get(id);
  }

  /**
   * The touch fired for strategy `id` was delivered: the registration held for it is dropped
   * (only `token`'s, when given: a later firing's hold stays).
   */
  delivered(id: string, token?: object): void {
    if (token === undefined || this.inDelivery.get(id) === token) this.inDelivery.delete(id);
  }

  /**
   * Delivery of a fired touch to strategy `id` failed: its registration as it was when it fired
   * (`token`, or the one held now) is armed again, unless the strategy is armed already (a newer
   * watch was set meanwhile).
   * @returns whether it was armed again.
   */
  rearm(id: string, token?: object): boolean {
    const reg = (token as Registration | undefined) ?? this.inDelivery.get(id);
    if (this.inDelivery.get(id) === reg) this.inDelivery.delete(id);
    if (!reg || this.byId.has(id)) return false;
    this.link(id, reg);
    return true;
  }

  /** Ids of the strategies registered on `tokenId` (armed, or fired and held), for market events. */
  idsOn(tokenId: string): string[] {
    // from the token's own ladders (a market's resolution asks for its tokens: walking every armed
    // strategy for each was most of what a resolution cost with thousands armed)
    const out = new Set<string>();
    const t = this.tokens.get(tokenId);
    if (t) {
      for (const ladder of LADDERS) t[ladder].idsInto(out);
      for (const id of t.any) out.add(id);
    }
    for (const [id, reg] of this.inDelivery) if (reg.tokenId === tokenId) out.add(id);
    return [...out];
  }

  /** Whether strategy `id` is armed (registered in the ladders). */
  has(id: string): boolean {
    return this.byId.has(id);
  }

  /** Number of fired triggers whose delivery is not yet confirmed. */
  get pendingDeliveries(): number {
    return this.inDelivery.size;
  }

  /**
   * Whether strategy `id`'s price conditions already hold at `touch` (used when a watch is new or
   * changed); if so it is taken out of the ladders and held, like {@link fire} does. `any`
   * watches count only with `withAny` (a retried delivery: any touch is news to them).
   */
  fireOne(id: string, tokenId: string, touch: Touch, withAny = false): boolean {
    const reg = this.byId.get(id);
    if (!reg || reg.tokenId !== tokenId) return false;
    if (withAny && reg.any) {
      this.hold(id);
      return true;
    }
    const bid = touch.bid !== null ? micro(touch.bid, 'exact') : null;
    const ask = touch.ask !== null ? micro(touch.ask, 'exact') : null;
    const holds =
      (bid !== null &&
        ((reg.bidAtOrBelow !== null && bid <= reg.bidAtOrBelow) || (reg.bidAbove !== null && bid > reg.bidAbove))) ||
      (ask !== null &&
        ((reg.askBelow !== null && ask < reg.askBelow) || (reg.askAtOrAbove !== null && ask >= reg.askAtOrAbove)));
    if (holds) this.hold(id);
    return holds;
  }

  /**
   * Whether a watch was ever registered on `tokenId`: {@link fire} of a token without one does nothing
   * and reads nothing of its touch, so a caller can skip computing that touch.
   */
  knowsToken(tokenId: string): boolean {
    return this.tokens.has(tokenId);
  }

  /** Tokens with at least one watch. */
  watchedTokens(): string[] {
    return [...this.tokens].filter(([, t]) => t.size > 0).map(([id]) => id);
  }

  /**
   * A new touch of `tokenId`: pops (takes out of the ladders, holding their registrations until
   * {@link delivered} / {@link rearm}) and returns the strategies whose condition holds.
   * When neither side of the touch moved since the last call, nothing fires (O(1)).
   * @param force - evaluate even if the touch did not change (start-up, re-registration).
   */
  fire(tokenId: string, touch: Touch, force = false): string[] {
    const t = this.tokens.get(tokenId);
    if (!t) return [];
    if (!force && t.last.bid === touch.bid && t.last.ask === touch.ask) return [];
    t.last = touch;
    const out = new Set<string>();
    if (touch.bid !== null) {
      const bid = micro(touch.bid, 'exact');
      t.bidAtOrBelow.popWhile((level) => bid <= level, out);
      t.bidAbove.popWhile((mark) => bid > mark, out);
    }
    if (touch.ask !== null) {
      const ask = micro(touch.ask, 'exact');
      t.askBelow.popWhile((mark) => ask < mark, out);
      t.askAtOrAbove.popWhile((level) => ask >= level, out);
    }
    for (const id of t.any) out.add(id);
    for (const id of out) this.hold(id);
    return [...out];
  }
}
