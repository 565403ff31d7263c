import { Decimal } from 'decimal.js';

/**
 * Money and quantities are never JS floats: prices (decimal probability), sizes (shares) and
 * dollars (pUSD) are `Decimal` inside and decimal strings in the API.
 */
export const Dec = Decimal.clone({ precision: 40, rounding: Decimal.ROUND_HALF_EVEN, toExpNeg: -30, toExpPos: 40 });
export type Dec = Decimal;

export const ZERO = new Dec(0);

/** Parses a decimal string (or an exact integer). @throws {Error} when it is not a finite decimal. */
export function dec(v: string | number | Decimal): Decimal {
  const d = new Dec(v);
  if (!d.isFinite()) throw new Error(`not a finite decimal: ${String(v)}`);
  return d;
}

/** Canonical API string: no exponent, no trailing zeros ("0.5", "12", "0.001"). */
export function str(d: Decimal): string {
  return d.toFixed();
}

/** Number of shares decimals an order size may carry. */
export const SIZE_DP = 2;
/** pUSD is a 6-decimal token. */
export const USD_DP = 6;
