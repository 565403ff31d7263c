import { describe, expect, it } from 'vitest';
import { dec, str } from '../../../engine/decimal.js';
import sha3 from 'js-sha3';
import { notionalOf, operationHash } from '../../../engine/data/records.js';

/** The notional as Decimal computes it: price × size to 6 places, half to even. */
const reference = (price: string, size: string): string => str(dec(price).times(dec(size)).toDecimalPlaces(6));

describe('notionalOf', () => {
  it('gives the digits of Decimal (6 places, half to even) for prices and sizes of every form', () => {
    const cases: [string, string][] = [
      ['0.5', '10'],
      ['0.523', '12.345678'],
      ['0.0000015', '1'], // a tie: up to even
      ['0.0000025', '1'], // a tie: down to even
      ['0.5', '0.0000005'],
      ['0.999', '0'],
      ['1', '123456789'],
      ['0.001', '0.001'],
      ['0.35', '1000000.000001'],
      ['007.50', '2.0'],
      ['0.123456789012345', '987654.321'], // past a double's exact integers: Decimal
      ['1e-3', '5'], // not a plain decimal: Decimal
      ['5.', '0.5'],
      ['.5', '3'],
      ['0.5', '1234567890123456'], // 16 digits: Decimal
    ];
    let seed = 7;
    const rand = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    for (let i = 0; i < 2000; i++) {
      const price = `0.${String(1 + rand(9999)).padStart(4, '0')}`.replace(/0+$/, '');
      const size = `${rand(100000)}.${String(rand(1000000)).padStart(6, '0')}`;
      cases.push([price, size]);
    }
    for (const [price, size] of cases)
      expect([price, size, notionalOf(price, size)]).toEqual([price, size, reference(price, size)]);
  });
});

describe('operationHash', () => {
  it("is keccak256 of `venue-op:<seq>` whether or not it was asked before (past its memo's bound too)", () => {
    for (const seq of [0, 7, 7, ...Array.from({ length: 1500 }, (_, i) => i), 7, 1499])
      expect(operationHash(seq)).toBe(`0x${sha3.keccak256(`venue-op:${seq}`)}`);
  });
});
