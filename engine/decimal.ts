import { Decimal } from 'decimal.js';

/**
 * Money and quantities are never JS floats: prices (decimal probability), sizes (shares) and
 * dollars (pUSD) are `Decimal` inside and decimal strings in the API.
 */
export const Dec = Decimal.clone({ precision: 40, rounding: Decimal.ROUND_HALF_EVEN, toExpNeg: -30, toExpPos: 40 });
export type Dec = Decimal;

export const ZERO = new Dec(0);
/** The decimal 1 (the price range's upper bound is `ONE − tick`). */
export const ONE = new Dec(1);

/**
 * Decimals parsed from strings, by string (orders carry the same few prices and sizes,
 * parsed again at every step of the order path). `Decimal`s are immutable (every operation
 * returns a new one), so sharing one parse is safe. Bounded: cleared when full.
 */
const parsed = new Map<string, Decimal>();
/**
 * Canonical strings ({@link str}) of the memoized parses, by identity: orders carry the same few
 * prices and sizes, written back as strings at every step. Made once per parse.
 */
const canonical = new WeakMap<Decimal, string>();
/** Bound on {@link parsed}'s entries. */
const PARSED_MAX = 4096;

/**
 * Parses a decimal string (or an exact integer). Strings are memoized (an immutable shared
 * `Decimal`, see {@link parsed}); a `Decimal` or number gives a new one.
 * @throws {Error} when it is not a finite decimal.
 */
export function dec(v: string | number | Decimal): Decimal {
  if (typeof v === 'string') {
    const hit = parsed.get(v);
    if (hit) return hit;
  }
  const d = new Dec(v);
  if (!d.isFinite()) throw new Error(`not a finite decimal: ${String(v)}`);
  if (typeof v === 'string') {
    if (parsed.size >= PARSED_MAX) parsed.clear();
    parsed.set(v, d);
    canonical.set(d, d.toFixed());
  }
  return d;
}

/**
 * Whether `d` (finite) is above zero: `d.gt(0)` without the decimal `0` that decimal.js makes at
 * every comparison with a number (the venue asks it of every size, remainder and quantity).
 */
export function positive(d: Decimal): boolean {
  return !d.isZero() && !d.isNeg();
}

/** Whether `d` (finite) is zero or below: `d.lte(0)` without the decimal it makes (see {@link positive}). */
export function nonPositive(d: Decimal): boolean {
  return d.isZero() || d.isNeg();
}

/** Canonical API string: no exponent, no trailing zeros ("0.5", "12", "0.001"). */
export function str(d: Decimal): string {
  if (d === ZERO) return '0';
  return canonical.get(d) ?? d.toFixed();
}

/**
 * `n` units of 10^-`dp` (`n` a non-negative safe integer, `dp` at most 22) as the canonical string
 * {@link str} writes: no exponent, no trailing zeros (`unitsString(1_500_000, 6)` is "1.5"). Exact:
 * integer arithmetic only.
 */
export function unitsString(n: number, dp: number): string {
  const unit = 10 ** dp;
  let fraction = n % unit;
  const whole = (n - fraction) / unit;
  if (fraction === 0) return String(whole);
  while (fraction % 10 === 0) {
    fraction /= 10;
    dp--;
  }
  return `${whole}.${String(fraction).padStart(dp, '0')}`;
}

/** Verdicts of {@link onTick} by tick, then price (both by identity: memoized parses share one). */
const tickVerdicts = new WeakMap<Decimal, WeakMap<Decimal, boolean>>();

/**
 * Whether `price` (decimal probability) is a multiple of `tick` within [tick, 1 − tick]: the
 * venue's and risk's price rule. Memoized by the identity of both (prices and ticks are immutable
 * shared `Decimal`s, see {@link dec}), since orders repeat the same few prices.
 */
export function onTick(price: Decimal, tick: Decimal): boolean {
  let byPrice = tickVerdicts.get(tick);
  if (!byPrice) tickVerdicts.set(tick, (byPrice = new WeakMap()));
  let ok = byPrice.get(price);
  if (ok === undefined) {
    ok = price.gte(tick) && price.lte(ONE.minus(tick)) && price.mod(tick).isZero();
    byPrice.set(price, ok);
  }
  return ok;
}

/** Number of shares decimals an order size may carry. */
export const SIZE_DP = 2;
/** pUSD is a 6-decimal token. */
export const USD_DP = 6;

/**
 * Shares `total` dollars among `weights` (≥ 0) in proportion, each rounded to {@link USD_DP} decimals,
 * the last taking the remainder (the parts sum to `total` exactly). Equal parts when Σ weights is 0. The one
 * rounding of a split's cost and a merge's proceeds among outcomes: the venue's ledger and the trade history's
 * lots share them alike.
 */
export function shareOut(total: Decimal, weights: readonly Decimal[]): Decimal[] {
  const sum = weights.reduce((a, w) => a.plus(w), ZERO);
  const parts: Decimal[] = [];
  let left = total;
  weights.forEach((w, i) => {
    if (i === weights.length - 1) {
      parts.push(left);
      return;
    }
    const ratio = sum.isZero() ? new Dec(1).div(weights.length) : w.div(sum);
    const part = total.times(ratio).toDecimalPlaces(USD_DP);
    parts.push(part);
    left = left.minus(part);
  });
  return parts;
}
