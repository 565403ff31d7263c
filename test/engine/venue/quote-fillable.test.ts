import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { dec, type Dec } from '../../../engine/decimal.js';
import { quoteFillableDecimal, quoteFillableExact } from '../../../engine/venue/matching.js';

/** A count of `10^-dp` units as a decimal. */
const of = (n: number, dp: number): Dec => dec(n).div(10 ** dp);

/** A resting level: a price on a 0.01 or 0.001 tick, a size in hundredths (now and then in finer units). */
const level = fc.record({
  px: fc.oneof(
    fc.integer({ min: 1, max: 99 }).map((c) => of(c, 2)),
    fc.integer({ min: 1, max: 999 }).map((m) => of(m, 3)),
  ),
  remaining: fc.oneof(
    { arbitrary: fc.integer({ min: 1, max: 500_000 }).map((c) => of(c, 2)), weight: 9 },
    { arbitrary: fc.integer({ min: 1, max: 5_000_000 }).map((c) => of(c, 4)), weight: 1 },
  ),
});

/** A market buy's amount: micro-dollars (now and then finer), from nothing to thousands of dollars. */
const quote = fc.oneof(
  { arbitrary: fc.integer({ min: 0, max: 5_000_000_000 }).map((u) => of(u, 6)), weight: 9 },
  { arbitrary: fc.integer({ min: 1, max: 50_000_000 }).map((u) => of(u, 7)), weight: 1 },
  { arbitrary: fc.integer({ min: 0, max: 200 }).map((c) => of(c, 2)), weight: 4 },
);

/**
 * A FOK market buy's check (engine/venue/matching.ts `quoteFillable`) walks the book in integer
 * units (micro-dollars, thousandths, hundredths of a share); its verdict is the decimal walk's for
 * every book and amount, values finer than those units included (the walk goes on in decimals).
 */
describe('FOK market buy check: integer units give the decimal verdict', () => {
  it('the same verdict on random books and amounts (property)', () => {
    fc.assert(
      fc.property(fc.array(level, { maxLength: 12 }), quote, (levels, q) => {
        levels.sort((a, b) => a.px.comparedTo(b.px));
        expect(quoteFillableExact(levels, q)).toBe(quoteFillableDecimal(levels, q));
      }),
      { numRuns: 3000 },
    );
  });

  it('edges: an amount spent to the cent, a level one hundredth short, an empty book', () => {
    const book = [
      { px: dec('0.13'), remaining: dec('7.69') },
      { px: dec('0.14'), remaining: dec('100') },
    ];
    for (const q of ['1', '0.9997', '0.999699', '1.0096', '1.0097', '1.0098', '15', '0', '0.0099', '0.01'])
      expect([q, quoteFillableExact(book, dec(q))]).toEqual([q, quoteFillableDecimal(book, dec(q))]);
    expect(quoteFillableExact([], dec('0.0099'))).toBe(true);
    expect(quoteFillableExact([], dec('0.01'))).toBe(false);
  });
});
