import { Dec, dec, str, USD_DP } from '../decimal.js';
import type { MarketInfo } from '../venue/port.js';

/** How long a combo quote can be accepted (spec 8: about 8.5 s), ms. */
export const QUOTE_TTL_MS = 8_500;

/** The combo fee: 1% of the notional (dollars, rounded up to the micro-dollar). */
export const COMBO_FEE_RATE = dec('0.01');

/** The simulated maker's margin per leg, as a fraction of the fair price: 2% a leg (4% for 2 legs, 20% for 10). */
export const MARGIN_PER_LEG = dec('0.02');

/** One leg as the maker prices it: the leg's best ask (decimal probability) and its correlation group. */
export interface PricedLeg {
  tokenId: string;
  ask: Dec;
  /** Legs with the same key are priced as correlated ({@link eventKeyOf}). */
  eventKey: string;
}

/** The simulated maker's quote of a combo. Prices in cents, amounts in dollars, shares: exact decimals. */
export interface ComboPrice {
  /** The maker's price of the blended YES share, cents, on the 0.1-cent tick, in [1, 99]. */
  priceCents: Dec;
  /** The plain product of the legs' asks, cents (4 decimals): what independent legs would cost. */
  independentPriceCents: Dec;
  /** The maker's margin over the fair price, percent. */
  marginPct: Dec;
  /** Combo shares for the notional: notional / price, rounded down to 6 decimals. */
  shares: Dec;
  /** What the maker posts: shares × $1 − notional, dollars. */
  makerAmountUsd: Dec;
  /** The fee, dollars. */
  feeUsd: Dec;
}

/** Up/down markets of the capture: `<asset>-<interval>-up-or-down-<hh:mm>`. */
const UP_DOWN = /^[a-z]+-(\d+min-up-or-down-\d\d:\d\d)$/;

/**
 * The correlation group of a market: the up/down markets of the capture that share an interval
 * and a window (`btc-15min-up-or-down-09:15` and `eth-15min-up-or-down-09:15`: the crypto assets
 * move together) are one event; every other market is its own.
 */
export function eventKeyOf(m: Pick<MarketInfo, 'slug' | 'conditionId'>): string {
  const w = UP_DOWN.exec(m.slug);
  return w ? `window:${w[1]}` : m.conditionId;
}

/** The fee of a notional, dollars (rounded up to the micro-dollar). */
export function comboFee(notional: Dec): Dec {
  return notional.times(COMBO_FEE_RATE).toDecimalPlaces(USD_DP, Dec.ROUND_UP);
}

/**
 * The largest notional (whole cents) whose notional + fee fits in `available` dollars.
 */
export function largestAffordableNotional(available: Dec): Dec {
  let n = available.div(COMBO_FEE_RATE.plus(1)).toDecimalPlaces(2, Dec.ROUND_DOWN);
  while (n.gt(0) && n.plus(comboFee(n)).gt(available)) n = n.minus('0.01');
  return Dec.max(n, 0);
}

/**
 * The simulated maker's price of a combo (pure). Fair price: the product over correlation groups
 * of each group's price; a lone leg's group price is its ask; a group of correlated legs is priced
 * halfway between fully correlated (the lowest ask of the group: the legs win together) and
 * independent (the product of its asks). The maker adds {@link MARGIN_PER_LEG} per leg; the result
 * is rounded up to the 0.1-cent tick and clamped to [1, 99] cents.
 * @param legs every leg with its best ask (> 0).
 * @param notional dollars to spend (> 0).
 */
export function priceCombo(legs: readonly PricedLeg[], notional: Dec): ComboPrice {
  const groups = new Map<string, Dec[]>();
  for (const l of legs) {
    const g = groups.get(l.eventKey);
    if (g) g.push(l.ask);
    else groups.set(l.eventKey, [l.ask]);
  }
  const product = (xs: Dec[]) => xs.reduce((a, b) => a.times(b), dec(1));
  let fair = dec(1);
  for (const asks of groups.values())
    fair = fair.times(
      asks.length === 1
        ? asks[0]!
        : Dec.min(...asks)
            .plus(product(asks))
            .div(2),
    );
  const margin = MARGIN_PER_LEG.times(legs.length);
  const raw = fair.times(margin.plus(1)).times(100).toDecimalPlaces(1, Dec.ROUND_UP);
  const priceCents = Dec.min(99, Dec.max(1, raw));
  const shares = notional.div(priceCents.div(100)).toDecimalPlaces(USD_DP, Dec.ROUND_DOWN);
  return {
    priceCents,
    independentPriceCents: product(legs.map((l) => l.ask))
      .times(100)
      .toDecimalPlaces(4, Dec.ROUND_HALF_EVEN),
    marginPct: margin.times(100),
    shares,
    makerAmountUsd: shares.minus(notional),
    feeUsd: comboFee(notional),
  };
}

/** A decimal as a JSON number for the spec's number fields (2.5), from its exact decimal string. */
export function num(d: Dec): number {
  return Number(str(d));
}
