/**
 * engine/decimal.ts memoization: shared parses, tick verdicts and canonical strings
 * give exactly what the unmemoized decimal.js calls give.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { dec, Dec, nonPositive, onTick, positive, str, unitsString, ZERO } from '../../engine/decimal.js';

describe('decimal memoization', () => {
  it('dec of a string: one shared immutable parse; arithmetic leaves it unchanged; a non-decimal throws', () => {
    const a = dec('0.05');
    expect(dec('0.05')).toBe(a);
    expect(str(a.times(dec('5')))).toBe('0.25');
    expect(str(a)).toBe('0.05');
    expect(dec('0.050')).not.toBe(a);
    expect(dec('0.050').eq(a)).toBe(true);
    expect(() => dec('NaN')).toThrow(/not a finite decimal/);
    expect(() => dec('Infinity')).toThrow(/not a finite decimal/);
  });

  it('onTick and str agree with the direct decimal.js rule and toFixed, memoized or not (fast-check)', () => {
    const ticks = [dec('0.01'), dec('0.001'), dec('0.1')];
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 1100 }),
        fc.integer({ min: 0, max: 2 }),
        fc.boolean(),
        (thousandths, t, viaParse) => {
          const raw = (thousandths / 1000).toFixed(3);
          const price = viaParse ? dec(raw) : new Dec(raw);
          const tick = ticks[t]!;
          const direct = price.gte(tick) && price.lte(new Dec(1).minus(tick)) && price.mod(tick).isZero();
          expect(onTick(price, tick)).toBe(direct);
          expect(onTick(price, tick)).toBe(direct); // memoized verdict
          expect(str(price)).toBe(price.toFixed());
          expect(str(price.plus(ZERO))).toBe(price.toFixed());
        },
      ),
      { numRuns: 500 },
    );
    expect(str(ZERO)).toBe('0');
  });
});

describe('unitsString', () => {
  it('writes n units of 10^-dp as str writes their decimal, up to 2^53 (property)', () => {
    expect(unitsString(0, 6)).toBe('0');
    expect(unitsString(1_500_000, 6)).toBe('1.5');
    expect(unitsString(5, 2)).toBe('0.05');
    expect(unitsString(Number.MAX_SAFE_INTEGER, 6)).toBe(str(new Dec(Number.MAX_SAFE_INTEGER).div(1e6)));
    fc.assert(
      fc.property(fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }), fc.integer({ min: 0, max: 12 }), (n, dp) => {
        expect(unitsString(n, dp)).toBe(str(new Dec(n).div(new Dec(10).pow(dp))));
      }),
      { numRuns: 2000 },
    );
  });
});

describe('positive and nonPositive', () => {
  it('answer as gt(0) and lte(0) for every finite decimal, -0 included (property)', () => {
    const check = (d: Dec) => {
      expect(positive(d)).toBe(d.gt(0));
      expect(nonPositive(d)).toBe(d.lte(0));
    };
    for (const d of [ZERO, new Dec(-0), dec('0.00'), dec('-0.01'), dec('0.01')]) check(d);
    fc.assert(
      fc.property(fc.integer({ min: -1e9, max: 1e9 }), fc.nat(8), (n, dp) => check(new Dec(n).div(10 ** dp))),
      { numRuns: 500 },
    );
  });
});
