import { describe, expect, it } from 'vitest';
import { backoffMs } from '../../engine/backoff.js';

describe('backoffMs', () => {
  it('doubles from the base and stops at the cap; never below the base, never Infinity for huge attempts', () => {
    expect([1, 2, 3, 4, 5].map((a) => backoffMs(a, 100))).toEqual([100, 200, 400, 800, 1600]);
    expect([1, 7, 8, 9, 1000].map((a) => backoffMs(a, 50, 5000))).toEqual([50, 3200, 5000, 5000, 5000]);
    expect(backoffMs(0, 100, 30_000)).toBe(100);
    expect(backoffMs(10_000, 100)).toBe(100 * 2 ** 30);
  });
});
