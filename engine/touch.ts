/**
 * The touch (best bid and ask) and what it says about a price: pure, no I/O, shared by the engine
 * (engine/risk.ts, the post-only check) and the strategy machines (machines/iceberg.ts, a clip
 * that would cross waits), so that both decide crossing the same way.
 */
import { dec, type Dec } from './decimal.js';

/** Best bid and ask of a token, decimal probabilities as strings (null: that side is empty). */
export interface Touch {
  bid: string | null;
  ask: string | null;
}

/**
 * A post-only order at `price` (decimal probability) would take liquidity at this touch: a buy at
 * or above the ask, a sell at or below the bid. An empty far side never crosses.
 */
export function crossesBook(side: 'buy' | 'sell', price: Dec | string, touch: Touch): boolean {
  return side === 'buy'
    ? touch.ask !== null && dec(touch.ask).lte(price)
    : touch.bid !== null && dec(touch.bid).gte(price);
}
