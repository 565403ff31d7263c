/**
 * The FIFO lot engine: per (address, token) the open lots of a trader and the dispositions that close
 * them, computed from the trade history's records alone (engine/data/records.ts). Pure: no I/O, no
 * clock; exact decimals (decimal.js).
 *
 * - A BUY fill acquires a lot: its shares, its cost = notional (price × size).
 * - A SELL fill disposes of the oldest lots first; its proceeds = notional, shared among the
 *   lots it consumes by shares. Each consumed (part of a) lot is one {@link Disposition} (the R1 rows
 *   of statements: acquired at/in, disposed at/in, shares, proceeds, cost basis, gain).
 * - Fees are expensed, never in a lot: a position counts its fills' fees on a line of their own
 *   ({@link PositionLots.fees}), so realized PnL is before fees and the statements, the positions and
 *   the leaderboard share one definition of it (Σ gains of the dispositions).
 * - A split (a {@link CashMove} with positive share deltas) acquires one lot per outcome; the dollars
 *   paid are their cost, shared by the outcomes' prices at the time (the caller's `priceOf`), else by
 *   shares (equally for a split's equal amounts).
 * - A merge or a redeem (negative share deltas) disposes of the oldest lots of each outcome; the
 *   dollars received are the proceeds, shared the same way (a redeem's resolved prices 1 and 0 give the
 *   winner everything, the loser's disposal realizes its cost as a loss).
 * - Disposing of more shares than held (the recorded history can start mid-life of a position: the
 *   shares were acquired before it) disposes of what is held, then records the rest as one
 *   disposition without an acquisition (`acquired` null) whose cost basis is unknown: it is taken
 *   equal to its proceeds, so it realizes no gain and no loss (a wallet that only sells shares bought
 *   before the records does not show their whole proceeds as profit). Its shares and proceeds still
 *   count (volume, proceeds); its cost basis is {@link PositionLots.uncoveredCost}.
 *
 * Dollar shares are rounded to {@link USD_DP} decimals, the last part taking the remainder, so that
 * sums are exact: Σ cost of acquisitions = open cost + Σ cost basis of dispositions, and realized PnL =
 * Σ gains.
 */

import type { Decimal } from 'decimal.js';
import { Dec, dec, shareOut, USD_DP, ZERO } from '../decimal.js';
import type { CashMove, CashMoveKind, ChainPosition, RecordedBatch, TraderFill } from './records.js';

/** Where and when a lot was acquired or disposed of: a record's chain position and time. */
export interface LotEvent extends ChainPosition {
  /** Epoch ms of the record. */
  atMs: number;
}

/** One open lot (shares still held from one acquisition). */
export interface Lot {
  acquired: LotEvent;
  /** Shares still held from this acquisition (> 0). */
  shares: Decimal;
  /** Cost (dollars) of the shares still held. */
  cost: Decimal;
}

/** How shares were disposed of: a sell fill, a merge, a redeem, or another cash movement's share debit. */
export type DisposalKind = 'SELL' | 'MERGE' | 'REDEEM' | 'TRANSFER';

/** One disposition: shares of one lot (or not covered by any) disposed of by one record. An R1 row. */
export interface Disposition {
  address: string;
  conditionId: string;
  tokenId: string;
  outcome: string;
  kind: DisposalKind;
  /** The acquisition; null for shares disposed of beyond what was held (cost basis = proceeds, no gain). */
  acquired: LotEvent | null;
  disposed: LotEvent;
  /** Shares disposed of (> 0). */
  shares: Decimal;
  /** Dollars received for them (their part of the notional, before fees). */
  proceeds: Decimal;
  /** Dollars they cost (their part of the lot's cost, before fees; = proceeds when `acquired` is null). */
  costBasis: Decimal;
  /** proceeds − costBasis, dollars. */
  gain: Decimal;
  /**
   * Set on the last disposition of a record that closed the position (no shares left after it): the
   * position's realized PnL since it last opened (dollars), which makes it a won or a lost position.
   */
  closes?: Decimal;
}

/** The lots and running totals of one (address, token). */
export interface PositionLots {
  address: string;
  conditionId: string;
  tokenId: string;
  outcome: string;
  /** Shares held (Σ open lots). */
  shares: Decimal;
  /** Cost of the shares held (Σ open lots' cost), dollars. */
  cost: Decimal;
  /** Σ gains of this token's dispositions, dollars. */
  realized: Decimal;
  /** Realized PnL since the position last opened (acquired from no shares), dollars. */
  lifeRealized: Decimal;
  /** Shares ever acquired (fills bought and split). */
  acquiredShares: Decimal;
  /** Dollars ever paid for them. */
  acquiredCost: Decimal;
  /** Shares ever disposed of (covered or not). */
  disposedShares: Decimal;
  /** Shares disposed of beyond what was held (their cost basis unknown: taken as their proceeds). */
  uncoveredShares: Decimal;
  /** The cost basis given to {@link uncoveredShares} (their proceeds), dollars. */
  uncoveredCost: Decimal;
  /** Dollars ever received from disposals. */
  proceeds: Decimal;
  /** Fees paid on this token's fills (expensed: in no lot's cost or proceeds), dollars. */
  fees: Decimal;
  /** The last record that changed it. */
  last: LotEvent;
  /** Open lots, oldest first. */
  lots(): readonly Lot[];
}

/** Price of an outcome token at a record's time (decimal probability), when known. */
export type PriceOf = (tokenId: string) => Decimal | undefined;

/**
 * The outcomes' prices a cash movement was recorded with (a split's or a merge's marks, see
 * {@link CashMove.shares}), or undefined when one of its shares has none (its dollars are then shared
 * equally by shares).
 */
export function recordedPrices(move: Pick<CashMove, 'shares'>): PriceOf | undefined {
  if (move.shares.length === 0) return undefined;
  const prices = new Map<string, Decimal>();
  for (const s of move.shares) {
    if (s.price === undefined) return undefined;
    prices.set(s.tokenId, dec(s.price));
  }
  return (tokenId) => prices.get(tokenId);
}

class Position implements PositionLots {
  shares: Decimal = ZERO;
  cost: Decimal = ZERO;
  realized: Decimal = ZERO;
  lifeRealized: Decimal = ZERO;
  acquiredShares: Decimal = ZERO;
  acquiredCost: Decimal = ZERO;
  disposedShares: Decimal = ZERO;
  uncoveredShares: Decimal = ZERO;
  uncoveredCost: Decimal = ZERO;
  proceeds: Decimal = ZERO;
  fees: Decimal = ZERO;
  /** Open lots from index {@link head} on (a queue: consumed lots are skipped, compacted now and then). */
  private queue: Lot[] = [];
  private head = 0;

  constructor(
    readonly address: string,
    readonly conditionId: string,
    readonly tokenId: string,
    public outcome: string,
    public last: LotEvent,
  ) {}

  lots(): readonly Lot[] {
    return this.queue.slice(this.head);
  }

  /** Sets the open lots (a position restored from a snapshot). */
  restoreLots(lots: Lot[]): void {
    this.queue = lots;
    this.head = 0;
  }

  acquire(at: LotEvent, shares: Decimal, cost: Decimal): void {
    if (this.shares.isZero()) this.lifeRealized = ZERO; // a position opens (again)
    this.queue.push({ acquired: at, shares, cost });
    this.shares = this.shares.plus(shares);
    this.cost = this.cost.plus(cost);
    this.acquiredShares = this.acquiredShares.plus(shares);
    this.acquiredCost = this.acquiredCost.plus(cost);
    this.last = at;
  }

  /** Disposes of `shares` oldest first for `proceeds` dollars (shared by shares); returns the dispositions. */
  dispose(at: LotEvent, kind: DisposalKind, shares: Decimal, proceeds: Decimal): Disposition[] {
    const held = this.shares.gt(0);
    const out: Disposition[] = [];
    let left = shares;
    let proceedsLeft = proceeds;
    for (let lot = this.queue[this.head]; lot && left.gt(0); lot = this.queue[this.head]) {
      const take = Dec.min(lot.shares, left);
      let basis: Decimal;
      if (take.eq(lot.shares)) {
        basis = lot.cost;
        this.head++;
      } else {
        basis = lot.cost.times(take).div(lot.shares).toDecimalPlaces(USD_DP);
        lot.shares = lot.shares.minus(take);
        lot.cost = lot.cost.minus(basis);
      }
      left = left.minus(take);
      const part = left.isZero() ? proceedsLeft : proceeds.times(take).div(shares).toDecimalPlaces(USD_DP);
      proceedsLeft = proceedsLeft.minus(part);
      this.shares = this.shares.minus(take);
      this.cost = this.cost.minus(basis);
      out.push(this.disposition(kind, lot.acquired, at, take, part, basis));
    }
    if (this.head > 32 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
    if (left.gt(0)) {
      this.uncoveredShares = this.uncoveredShares.plus(left);
      this.uncoveredCost = this.uncoveredCost.plus(proceedsLeft);
      out.push(this.disposition(kind, null, at, left, proceedsLeft, proceedsLeft));
    }
    this.disposedShares = this.disposedShares.plus(shares);
    this.proceeds = this.proceeds.plus(proceeds);
    this.last = at;
    if (held && this.shares.isZero() && out.length > 0) out[out.length - 1]!.closes = this.lifeRealized;
    return out;
  }

  private disposition(
    kind: DisposalKind,
    acquired: LotEvent | null,
    disposed: LotEvent,
    shares: Decimal,
    proceeds: Decimal,
    costBasis: Decimal,
  ): Disposition {
    const gain = proceeds.minus(costBasis);
    this.realized = this.realized.plus(gain);
    this.lifeRealized = this.lifeRealized.plus(gain);
    return {
      address: this.address,
      conditionId: this.conditionId,
      tokenId: this.tokenId,
      outcome: this.outcome,
      kind,
      acquired,
      disposed,
      shares,
      proceeds,
      costBasis,
      gain,
    };
  }
}

function eventOf(r: ChainPosition & { atMs: number }): LotEvent {
  return { blockTimestamp: r.blockTimestamp, logIndex: r.logIndex, transactionHash: r.transactionHash, atMs: r.atMs };
}

const DISPOSAL_OF: Partial<Record<CashMoveKind, DisposalKind>> = {
  merge: 'MERGE',
  redeem: 'REDEEM',
  combo_payout: 'REDEEM',
  combo_loss: 'REDEEM',
};

/**
 * Every trader's FIFO lots by (address, token), fed with the history's records in chain order.
 * Not thread-safe in any sense but the obvious one: apply records in chain order, each once.
 */
export class LotBook {
  private readonly byAddress = new Map<string, Map<string, Position>>();

  /** The lots of `address` in `tokenId`, if it ever held any. */
  position(address: string, tokenId: string): PositionLots | undefined {
    return this.byAddress.get(address)?.get(tokenId);
  }

  /** Every (token) position `address` ever had, open or closed, in first-acquisition order. */
  positions(address: string): PositionLots[] {
    return [...(this.byAddress.get(address)?.values() ?? [])];
  }

  /** Addresses with at least one position. */
  addresses(): IterableIterator<string> {
    return this.byAddress.keys();
  }

  /** Every position of every address (for a snapshot). */
  *all(): IterableIterator<PositionLots> {
    for (const tokens of this.byAddress.values()) yield* tokens.values();
  }

  /**
   * Puts back a position as {@link all} gave it (a snapshot's), with its open lots, oldest first.
   * Restore each (address, token) once, before any record is applied.
   */
  restore(p: Omit<PositionLots, 'lots'>, lots: Lot[]): void {
    const q = this.slot(p.address, p.conditionId, p.tokenId, p.outcome, p.last);
    q.restoreLots(lots);
    Object.assign(q, {
      shares: p.shares,
      cost: p.cost,
      realized: p.realized,
      lifeRealized: p.lifeRealized,
      acquiredShares: p.acquiredShares,
      acquiredCost: p.acquiredCost,
      disposedShares: p.disposedShares,
      uncoveredShares: p.uncoveredShares,
      uncoveredCost: p.uncoveredCost,
      proceeds: p.proceeds,
      fees: p.fees,
    });
  }

  private slot(address: string, conditionId: string, tokenId: string, outcome: string, at: LotEvent): Position {
    let tokens = this.byAddress.get(address);
    if (!tokens) this.byAddress.set(address, (tokens = new Map()));
    let p = tokens.get(tokenId);
    if (!p) tokens.set(tokenId, (p = new Position(address, conditionId, tokenId, outcome, at)));
    return p;
  }

  /**
   * Applies one party's fill: a BUY acquires a lot (cost = notional), a SELL disposes of the oldest
   * lots (proceeds = notional); its fee is added to the position's `fees` (expensed).
   * @returns the SELL's dispositions (empty for a BUY).
   * @throws {Error} when a quantity is not a decimal string.
   */
  applyFill(fill: TraderFill): Disposition[] {
    const at = eventOf(fill);
    const p = this.slot(fill.address, fill.conditionId, fill.tokenId, fill.outcome, at);
    const size = dec(fill.size);
    const notional = dec(fill.notionalUsd);
    if (fill.feeUsd !== '0') p.fees = p.fees.plus(dec(fill.feeUsd));
    if (fill.side === 'BUY') {
      p.acquire(at, size, notional);
      return [];
    }
    return p.dispose(at, 'SELL', size, notional);
  }

  /**
   * Applies a cash movement's share changes: positive deltas acquire lots (cost: the dollars paid,
   * `−pusdDelta`), negative ones dispose (proceeds: the dollars received, `pusdDelta`), the dollars
   * shared by `priceOf` × shares when every token's price is known and their sum is positive, else by
   * shares. Moves without share changes (credit, withdraw, …) change no lot.
   * @param priceOf the outcomes' prices at the movement's time (a resolved market's 1 and 0 for a redeem).
   * @returns the dispositions of a merge or a redeem.
   * @throws {Error} when a quantity is not a decimal string.
   */
  applyCashMove(move: CashMove, priceOf?: PriceOf): Disposition[] {
    if (move.shares.length === 0) return [];
    const at = eventOf(move);
    const conditionId = move.conditionId ?? '';
    const legs = move.shares.map((s) => {
      const delta = dec(s.delta);
      const size = delta.abs();
      const price = priceOf?.(s.tokenId);
      return { ...s, delta, size, value: price === undefined ? undefined : size.times(price) };
    });
    const values = legs.flatMap((l) => (l.value === undefined ? [] : [l.value]));
    const byPrice = values.length === legs.length && values.some((v) => v.gt(0));
    const dollars = shareOut(dec(move.pusdDelta).abs(), byPrice ? values : legs.map((l) => l.size));
    const kind = DISPOSAL_OF[move.kind] ?? 'TRANSFER';
    const out: Disposition[] = [];
    legs.forEach((l, i) => {
      if (l.delta.isZero()) return;
      const p = this.slot(move.address, conditionId, l.tokenId, l.outcome, at);
      const usd = dollars[i] ?? ZERO;
      if (l.delta.gt(0)) p.acquire(at, l.size, usd);
      else out.push(...p.dispose(at, kind, l.size, usd));
    });
    return out;
  }

  /**
   * Applies a batch's fills and cash movements in chain order (`blockTimestamp`, `logIndex`).
   * @returns the dispositions, in that order.
   */
  applyBatch(batch: RecordedBatch, priceOf?: (move: CashMove) => PriceOf | undefined): Disposition[] {
    const out: Disposition[] = [];
    for (const r of chainOrder(batch)) {
      if ('kind' in r) out.push(...this.applyCashMove(r, priceOf?.(r)));
      else out.push(...this.applyFill(r));
    }
    return out;
  }
}

/** A batch's fills and cash movements merged in chain order (stable for equal positions: fills first). */
export function chainOrder(batch: Pick<RecordedBatch, 'fills' | 'cash'>): (TraderFill | CashMove)[] {
  const all: (TraderFill | CashMove)[] = [...batch.fills, ...batch.cash];
  return all.sort((a, b) => a.blockTimestamp - b.blockTimestamp || a.logIndex - b.logIndex);
}
