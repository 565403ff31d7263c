import type { Dec } from '../decimal.js';
import type { Side } from './port.js';

/** A resting order in a book. Prices are exact tick multiples; `key` is the price in 1/1000ths. */
export interface Resting {
  orderId: string;
  userId: string;
  side: Side;
  price: Dec;
  key: number;
  remaining: Dec;
  /** Arrival sequence: time priority within a level. */
  seq: number;
}

/** A price level: its key (price in 1/1000ths), price and the resting orders at it. */
export interface BookLevel {
  key: number;
  price: Dec;
  orders: Resting[];
}

/** Price keys made, by price (by identity: prices are immutable, and parses of the same string are shared). */
const priceKeys = new WeakMap<Dec, number>();

/** Price key of a decimal probability (prices carry at most 3 decimals: ticks are 0.01 or 0.001). */
export function priceKey(price: Dec): number {
  let key = priceKeys.get(price);
  if (key === undefined) priceKeys.set(price, (key = price.times(1000).toNumber()));
  return key;
}

/**
 * Central limit order book of one outcome token with price-time priority. Bids best (highest)
 * first, asks best (lowest) first; orders within a level in arrival order. Pure data structure:
 * the matching engine (`matching.ts`) does the matching, the ledger (`ledger.ts`) the accounting.
 */
export class OrderBook {
  readonly bids: BookLevel[] = [];
  readonly asks: BookLevel[] = [];
  private readonly index = new Map<string, Resting>();

  constructor(readonly tokenId: string) {}

  private levels(side: Side): BookLevel[] {
    return side === 'buy' ? this.bids : this.asks;
  }

  /** Where the level of price key `key` is, or would go, among `levels` of `side` (binary search). */
  private static levelIndex(levels: BookLevel[], buy: boolean, key: number): number {
    let lo = 0;
    let hi = levels.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      const k = levels[mid]!.key;
      if (buy ? k > key : k < key) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Adds a resting order at the back of its level. */
  add(order: Resting): void {
    const levels = this.levels(order.side);
    const lo = OrderBook.levelIndex(levels, order.side === 'buy', order.key);
    const at = levels[lo];
    if (at && at.key === order.key) at.orders.push(order);
    else levels.splice(lo, 0, { key: order.key, price: order.price, orders: [order] });
    this.index.set(order.orderId, order);
  }

  /** The resting order `orderId`, or undefined. */
  get(orderId: string): Resting | undefined {
    return this.index.get(orderId);
  }

  /** Removes an order; returns it, or undefined when it was not resting. */
  remove(orderId: string): Resting | undefined {
    const order = this.index.get(orderId);
    if (!order) return undefined;
    this.index.delete(orderId);
    const levels = this.levels(order.side);
    const li = OrderBook.levelIndex(levels, order.side === 'buy', order.key);
    const level = levels[li]!;
    level.orders.splice(level.orders.indexOf(order), 1);
    if (level.orders.length === 0) levels.splice(li, 1);
    return order;
  }

  /** Best resting order on `side` (head of the best level). */
  head(side: Side): Resting | undefined {
    return this.levels(side)[0]?.orders[0];
  }

  /** Best price on `side`, or undefined when empty. */
  best(side: Side): Dec | undefined {
    return this.levels(side)[0]?.price;
  }

  /** Iterates resting orders on `side` in priority order. */
  *walk(side: Side): Generator<Resting> {
    for (const level of this.levels(side)) yield* level.orders;
  }

  /** Aggregated levels, best first. */
  depth(side: Side, maxLevels: number): { price: Dec; size: Dec }[] {
    return this.levels(side)
      .slice(0, maxLevels)
      .map((l) => ({
        price: l.price,
        size: l.orders.reduce((s, o) => s.plus(o.remaining), l.orders[0]!.remaining.times(0)),
      }));
  }

  /** Number of resting orders (both sides). */
  get size(): number {
    return this.index.size;
  }

  /** Every resting order (any side). */
  all(): IterableIterator<Resting> {
    return this.index.values();
  }
}
