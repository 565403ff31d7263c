import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../engine/clock.js';
import { dec, str, ZERO } from '../../engine/decimal.js';
import { DomainError } from '../../engine/errors.js';
import {
  centsMessage,
  checkExpiration,
  checkFunds,
  checkIcebergClip,
  checkMarketSellMinimum,
  checkMinQuote,
  checkPostOnly,
  checkPrice,
  checkRestingMinimum,
  checkShares,
  checkTrailingOffset,
  checkTwapDuration,
  checkTwapSlices,
  crossesBook,
  EXPIRATION_HORIZON_MS,
  insufficientBalanceMessage,
  MIN_NOTIONAL_USD,
  notEnoughSharesMessage,
  refusalCode,
  RiskEngine,
  TWAP_MAX_SLICES,
} from '../../engine/risk.js';
import type { Available, TokenInfo } from '../../engine/venue/port.js';

/** What `fn` throws, as code and message (fails when it does not throw a DomainError). */
function refusal(fn: () => unknown): { code: string; message: string } {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(DomainError);
    return { code: (err as DomainError).code, message: (err as DomainError).message };
  }
  throw new Error('no refusal');
}

const market = { tickSize: dec('0.01'), minSize: dec(5) };
const fine = dec('0.001');
/** A decimal string with up to 3 decimals in [lo, hi] thousandths. */
const thousandths = (lo: number, hi: number) => fc.integer({ min: lo, max: hi }).map((n) => str(dec(n).div(1000)));

describe('engine/risk.ts: price (spec 2.1, part 8)', () => {
  it('any price above 1 gets the cents message as PRICE_IN_CENTS, the hint only when n/100 is a price', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1001, max: 10_000_000 }).map((n) => str(dec(n).div(1000))),
        (raw) => {
          const r = refusal(() => checkPrice('take_profit.price', raw, market.tickSize));
          expect(r).toEqual({ code: 'PRICE_IN_CENTS', message: centsMessage(raw) });
          const hinted = dec(raw).div(100).lte('0.999') && dec(raw).div(100).gte('0.001');
          expect(r.message.includes('did you mean')).toBe(hinted);
        },
      ),
    );
    expect(centsMessage('72')).toBe(
      'price must be a decimal probability 0.001–0.999; received 72 — did you mean 0.72?',
    );
    expect(centsMessage('1000')).toBe('price must be a decimal probability 0.001–0.999; received 1000');
  });

  it('0.001–0.999 on the step is accepted; outside the range, off the tick → INVALID_REQUEST', () => {
    fc.assert(
      fc.property(thousandths(1, 999), (raw) => {
        expect(checkPrice('price', raw, fine).eq(raw)).toBe(true);
      }),
    );
    fc.assert(
      fc.property(
        thousandths(1, 999).filter((r) => !dec(r).mod('0.01').isZero()),
        (raw) => {
          expect(refusal(() => checkPrice('price', raw, market.tickSize))).toEqual({
            code: 'INVALID_REQUEST',
            message: `price ${raw} is not on this market's tick size 0.01`,
          });
        },
      ),
    );
    expect(refusal(() => checkPrice('stop_loss.price', '0.0005', fine))).toEqual({
      code: 'INVALID_REQUEST',
      message: 'stop_loss.price must be a decimal probability 0.001–0.999; received 0.0005',
    });
    expect(refusal(() => checkPrice('price', '1', fine))).toEqual({
      code: 'INVALID_REQUEST',
      message: 'price must be a decimal probability 0.001–0.999; received 1',
    });
    expect(refusal(() => checkPrice('price', '0', fine)).code).toBe('INVALID_REQUEST');
  });

  it('execution.trailing_offset: above 1 the cents message; strictly between 0 and 1', () => {
    expect(refusal(() => checkTrailingOffset('72'))).toEqual({ code: 'PRICE_IN_CENTS', message: centsMessage('72') });
    for (const raw of ['0', '1']) {
      expect(refusal(() => checkTrailingOffset(raw))).toEqual({
        code: 'INVALID_REQUEST',
        message: 'execution.trailing_offset must be a decimal probability between 0 and 1 (exclusive)',
      });
    }
    expect(checkTrailingOffset('0.05').toFixed()).toBe('0.05');
  });
});

describe('engine/risk.ts: sizes and notional (spec 2.2.2, part 8)', () => {
  it('shares > 0; the resting minimum of the market', () => {
    expect(refusal(() => checkShares('execution.clip_size', '0'))).toEqual({
      code: 'INVALID_REQUEST',
      message: 'execution.clip_size must be greater than 0',
    });
    expect(refusal(() => checkRestingMinimum('size', dec(4), '4', market))).toEqual({
      code: 'INVALID_REQUEST',
      message: "size 4 is below this market's minimum of 5 shares for resting orders",
    });
    fc.assert(
      fc.property(fc.integer({ min: 500, max: 1e9 }), (n) => {
        checkRestingMinimum('size', dec(n).div(100), 'x', market);
      }),
    );
  });

  it('$1 minimum: MARKET buy quote_amount, MARKET sell at the bid, ICEBERG slice (one constant)', () => {
    expect(MIN_NOTIONAL_USD.toFixed()).toBe('1');
    expect(refusal(() => checkMinQuote('0.5', ' for a MARKET order'))).toEqual({
      code: 'INVALID_REQUEST',
      message: 'quote_amount must be at least $1 for a MARKET order; received 0.5',
    });
    expect(refusal(() => checkMinQuote('0.99', ''))).toEqual({
      code: 'INVALID_REQUEST',
      message: 'quote_amount must be at least $1; received 0.99',
    });
    expect(checkMinQuote('1', '').toFixed()).toBe('1');
    expect(refusal(() => checkMarketSellMinimum(dec('0.3'), dec(3), '3'))).toEqual({
      code: 'INVALID_REQUEST',
      message: 'a MARKET sell must be worth at least $1 at the best bid (0.3); size 3 is worth $0.9',
    });
    checkMarketSellMinimum(undefined, dec(1), '1');
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 999 }), fc.integer({ min: 1, max: 100_000 }), (p, c) => {
        const price = dec(p).div(1000);
        const clip = dec(c).div(100);
        const size = clip.plus(1);
        const worth = clip.times(price);
        let r: { code: string; message: string } | null = null;
        try {
          checkIcebergClip(clip, size, price, { minSize: ZERO });
        } catch (err) {
          r = { code: (err as DomainError).code, message: (err as DomainError).message };
        }
        expect(r === null).toBe(worth.gte(1));
        if (r)
          expect(r).toEqual({
            code: 'INVALID_REQUEST',
            message: `each ICEBERG slice must be worth at least $1: clip_size × price = $${str(worth)}`,
          });
      }),
    );
    expect(refusal(() => checkIcebergClip(dec(10), dec(10), dec('0.5'), market)).message).toBe(
      'execution.clip_size 10 must be less than size 10',
    );
    expect(refusal(() => checkIcebergClip(dec(4), dec(10), dec('0.5'), market)).message).toBe(
      "execution.clip_size 4 is below this market's minimum of 5 shares for resting orders",
    );
  });

  it('TWAP: whole ms, duration ≥ interval; ≤ 1000 slices; slices ≥ 0.01 shares, passive ≥ market min', () => {
    expect(refusal(() => checkTwapDuration(30.0005, 10)).message).toBe(
      'execution.duration_sec has at most 3 decimals (whole milliseconds); received 30.0005',
    );
    expect(refusal(() => checkTwapDuration(5, 10)).message).toBe(
      'execution.duration_sec (5) must be at least execution.interval_sec (10)',
    );
    expect(checkTwapDuration(30.5, 10)).toBe(30_500);
    const plan = { size: dec(30), durationSec: 30, intervalSec: 10, slices: 3, sliceSize: dec(10), passive: false };
    checkTwapSlices(plan, market);
    expect(refusal(() => checkTwapSlices({ ...plan, slices: TWAP_MAX_SLICES + 1 }, market)).message).toMatch(
      /^a TWAP has at most 1000 slices/,
    );
    expect(refusal(() => checkTwapSlices({ ...plan, size: dec('0.02'), sliceSize: dec(0) }, market)).message).toBe(
      'each TWAP slice must be at least 0.01 shares: 0.02 shares over 3 slices is less; send a larger size ' +
        'or fewer slices (raise execution.interval_sec)',
    );
    expect(
      refusal(() => checkTwapSlices({ ...plan, size: dec(6), sliceSize: dec(2), passive: true }, market)).message,
    ).toMatch(
      new RegExp(
        "^passive TWAP slices rest on the book, so each must be at least this market's minimum of 5 shares: " +
          '6 shares over 3 slices is 2 per slice',
      ),
    );
  });
});

describe('engine/risk.ts: wallet, crossing, expiration', () => {
  const avail = (usd: string, shares: string, held = shares, reserved = '0'): Available => ({
    usd: dec(usd),
    shares: dec(shares),
    held: dec(held),
    reservedShares: dec(reserved),
  });

  it('a buy needs its dollars, a sell its free shares: INSUFFICIENT_BALANCE / NOT_ENOUGH_SHARES', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1e9 }), fc.integer({ min: 0, max: 1e9 }), (a, n) => {
        const have = dec(a).div(1e6);
        const need = dec(n).div(1e6);
        let r: { code: string; message: string } | null = null;
        try {
          checkFunds(avail(str(have), '0'), 'buy', need);
        } catch (err) {
          r = { code: (err as DomainError).code, message: (err as DomainError).message };
        }
        expect(r === null).toBe(have.gte(need));
        if (r)
          expect(r).toEqual({
            code: 'INSUFFICIENT_BALANCE',
            message: insufficientBalanceMessage('this buy', need, have),
          });
      }),
    );
    expect(refusal(() => checkFunds(avail('5', '0'), 'buy', dec(6), 'this strategy'))).toEqual({
      code: 'INSUFFICIENT_BALANCE',
      message: 'this strategy needs $6 pUSD; available $5',
    });
    expect(refusal(() => checkFunds(avail('0', '2', '10', '8'), 'sell', dec(5)))).toEqual({
      code: 'NOT_ENOUGH_SHARES',
      message: 'Not enough shares to place this sell — holding 10, of which 8 reserved by open sells',
    });
    expect(notEnoughSharesMessage(dec(10), ZERO)).toBe('Not enough shares to place this sell — holding 10');
  });

  it('post-only: a buy at or above the ask, a sell at or below the bid crosses (ORDER_CROSSES_BOOK)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 999 }), fc.integer({ min: 1, max: 999 }), (p, q) => {
        const price = dec(p).div(1000);
        const other = str(dec(q).div(1000));
        expect(crossesBook('buy', price, { bid: null, ask: other })).toBe(dec(other).lte(price));
        expect(crossesBook('sell', price, { bid: other, ask: null })).toBe(dec(other).gte(price));
      }),
    );
    expect(crossesBook('buy', dec('0.5'), { bid: '0.6', ask: null })).toBe(false);
    expect(refusal(() => checkPostOnly('buy', dec('0.5'), { bid: '0.48', ask: '0.5' }, 'ICEBERG slices are'))).toEqual({
      code: 'ORDER_CROSSES_BOOK',
      message: 'ICEBERG slices are post-only: price 0.5 would take liquidity (touch 0.48 / 0.5)',
    });
  });

  it('expiration: future, at most 365 days ahead; seconds and microseconds get a hint', () => {
    const now = 1_800_000_000_000;
    checkExpiration(now + 1, now);
    checkExpiration(now + EXPIRATION_HORIZON_MS, now);
    expect(refusal(() => checkExpiration(1000, now)).message).toBe(
      'expiration must be a future time in Unix epoch milliseconds; received 1000',
    );
    expect(refusal(() => checkExpiration(now + EXPIRATION_HORIZON_MS + 1, now)).message).toMatch(
      /^expiration must be at most 365 days ahead/,
    );
    expect(refusal(() => checkExpiration((now + 60_000) / 1000, now)).message).toMatch(
      new RegExp(`did you mean ${now + 60_000} \\(milliseconds\\)\\?$`),
    );
  });
});

describe('engine/risk.ts: RiskEngine (venue reads) and child orders', () => {
  const token: TokenInfo = {
    tokenId: 't1',
    outcome: 'Yes',
    conditionId: 'c1',
    question: 'q',
    tickSize: dec('0.01'),
    minSize: dec(5),
    complementTokenId: 't2',
  };
  const wallet = { usd: dec(10), shares: dec(3), held: dec(3), reservedShares: ZERO };
  const risk = new RiskEngine(
    {
      token: (id) => (id === 't1' ? token : undefined),
      touch: () => ({ bid: dec('0.4'), ask: dec('0.42') }),
      available: () => wallet,
    },
    new ManualClock(1_800_000_000_000),
  );
  const child = {
    userId: 'u',
    tokenId: 't1',
    side: 'buy' as const,
    price: '0.41',
    size: '10',
    quoteAmount: null,
    postOnly: true,
  };

  it('an unknown symbol is INVALID_REQUEST', () => {
    expect(refusal(() => risk.market('t9'))).toEqual({
      code: 'INVALID_REQUEST',
      message: 'symbol t9 is not an outcome token of this venue (see GET /v2/trade/markets)',
    });
  });

  it("a child order passes price, tick, post-only and wallet; its resting minimum is the request's", () => {
    risk.checkChild(child);
    risk.checkChild({ ...child, size: '1' }); // below the market minimum: not refused for a child
    expect(refusal(() => risk.checkChild({ ...child, price: '0.415' })).code).toBe('INVALID_REQUEST');
    expect(refusal(() => risk.checkChild({ ...child, price: '0.42' })).code).toBe('ORDER_CROSSES_BOOK');
    expect(refusal(() => risk.checkChild({ ...child, size: '30' }))).toEqual({
      code: 'INSUFFICIENT_BALANCE',
      message: 'this buy needs $12.3 pUSD; available $10',
    });
    expect(refusal(() => risk.checkChild({ ...child, side: 'sell', price: '0.5', size: '5' })).code).toBe(
      'NOT_ENOUGH_SHARES',
    );
  });

  it("a refusal reaches a strategy with the venue's code for it (machines/strategy-kit.ts)", () => {
    expect(refusalCode(new DomainError('ORDER_CROSSES_BOOK', 'x'))).toBe('order crosses book');
    expect(refusalCode(new DomainError('INSUFFICIENT_BALANCE', 'x'))).toBe('INSUFFICIENT_BALANCE');
    expect(refusalCode(new DomainError('NOT_ENOUGH_SHARES', 'x'))).toBe('INSUFFICIENT_SHARES');
    expect(refusalCode(new DomainError('INVALID_REQUEST', 'x'))).toBe('invalid_request');
  });
});
