import { describe, expect, it } from 'vitest';
import { ApiError } from '../../api/errors.js';
import { validate } from '../../api/validation.js';
import { OrderRequest } from '../../schemas/orders.js';

const base = { symbol: '123', side: 'buy' } as const;
function messageOf(body: object): string {
  try {
    validate(OrderRequest, body);
    return 'valid';
  } catch (err) {
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).status).toBe(400);
    return (err as ApiError).detail!;
  }
}

describe('OrderRequest: per-type rules of spec 2.2.2 with messages that name the field and the rule', () => {
  it.each([
    [{ type: 'LIMIT' }, 'price is required for LIMIT orders; size is required for LIMIT orders'],
    [{ type: 'LIMIT', price: '0.5', size: '5' }, 'valid'],
    [{ type: 'MARKET' }, 'quote_amount is required for a MARKET buy (dollars)'],
    [{ type: 'MARKET', side: 'sell' }, 'size is required for a MARKET sell (shares)'],
    [
      { type: 'PEGGED' },
      'budget_usdc or quote_amount is required for PEGGED orders (budget_usdc, or quote_amount as its alias)',
    ],
    [{ type: 'PEGGED', quote_amount: '10' }, 'valid'],
    [{ type: 'ICEBERG', price: '0.5', size: '50' }, 'execution is required for ICEBERG orders'],
    [
      { type: 'ICEBERG', price: '0.5', size: '50', execution: {} },
      'execution.clip_size is required for ICEBERG orders',
    ],
    [
      { type: 'TWAP', size: '10', execution: { interval_sec: 10 } },
      'execution.duration_sec is required for TWAP orders',
    ],
    [
      { type: 'TWAP', execution: { interval_sec: 10, duration_sec: 30 } },
      'size or quote_amount is required for TWAP orders',
    ],
    [
      { type: 'TWAP', size: '10', execution: { interval_sec: 5, duration_sec: 30 } },
      'execution.interval_sec must be at least 10',
    ],
    [
      { type: 'TRAILING_STOP', side: 'sell', size: '10', execution: { trailing_offset_pct: 5 } },
      'price or execution.high_water_mark is required for TRAILING_STOP orders (size, ' +
        'execution.trailing_offset_pct or execution.trailing_offset, and execution.high_water_mark or price)',
    ],
    [
      { type: 'TRAILING_STOP', side: 'sell', size: '10', price: '0.6', execution: {} },
      'execution.trailing_offset_pct or execution.trailing_offset is required for TRAILING_STOP orders ' +
        '(size, execution.trailing_offset_pct or execution.trailing_offset, and execution.high_water_mark or ' +
        'price)',
    ],
    [
      {
        type: 'TRAILING_STOP',
        side: 'sell',
        size: '10',
        execution: { trailing_offset: '0.05', high_water_mark: '0.6' },
      },
      'valid',
    ],
    [
      { type: 'TRAILING_BUY', execution: { trailing_offset_pct: 5 } },
      'quote_amount is required for TRAILING_BUY orders (quote_amount, and execution.trailing_offset_pct ' +
        'or execution.trailing_offset)',
    ],
    [
      { type: 'STOP_LOSS', price: '0.4', size: '5' },
      'side must be "sell" for TAKE_PROFIT and STOP_LOSS orders (sell-side, price and size)',
    ],
    [
      { type: 'TAKE_PROFIT', side: 'sell', size: '5' },
      'price is required for TAKE_PROFIT and STOP_LOSS orders (sell-side, price and size)',
    ],
    [
      { type: 'TWAP', size: '10', execution: { interval_sec: 10, duration_sec: 30 }, take_profit: { price: '0.9' } },
      'type must be one of "LIMIT", "MARKET" for brackets (take_profit / stop_loss attach to buy LIMIT or ' +
        'MARKET entries only)',
    ],
    [
      { type: 'LIMIT', side: 'sell', price: '0.5', size: '5', stop_loss: { price: '0.3' } },
      'side must be "buy" for brackets (take_profit / stop_loss attach to buy LIMIT or MARKET entries only)',
    ],
    [{ type: 'LIMIT', price: '0.5', size: '5', execution: { surprise: 1 } }, "execution: unknown property 'surprise'"],
  ])('%j → %s', (body, expected) => {
    expect(messageOf({ ...base, ...body })).toBe(expected);
  });
});

describe('OrderRequest: rules a schema can say (not repeated in engine/risk.ts)', () => {
  it.each([
    [{ type: 'LIMIT', price: '0.5', size: '5.555' }, 'size must be a decimal string of shares with at most 2 decimals'],
    [{ type: 'LIMIT', price: '0.5', size: '5.50' }, 'valid'],
    [
      { type: 'LIMIT', price: '0.5', size: '5', take_profit: { price: '0.9', size: '1.001' } },
      'take_profit.size must be a decimal string of shares with at most 2 decimals',
    ],
    [
      { type: 'ICEBERG', price: '0.5', size: '50', execution: { clip_size: '10.125' } },
      'execution.clip_size must be a decimal string of shares with at most 2 decimals',
    ],
    [
      { type: 'MARKET', quote_amount: '5.1234567' },
      'quote_amount has at most 6 decimals (pUSD) for a MARKET buy (dollars)',
    ],
    [{ type: 'MARKET', quote_amount: '5.123456' }, 'valid'],
    [
      { type: 'TRAILING_BUY', quote_amount: '5', execution: { trailing_offset_pct: 0 } },
      'execution.trailing_offset_pct must be greater than 0',
    ],
    [
      { type: 'TRAILING_BUY', quote_amount: '5', execution: { trailing_offset_pct: 100 } },
      'execution.trailing_offset_pct must be less than 100',
    ],
    // a price above 1 is not the schema's: the engine answers it with the cents message of spec 2.1
    [{ type: 'LIMIT', price: '72', size: '5' }, 'valid'],
  ])('%j → %s', (body, expected) => {
    expect(messageOf({ ...base, ...body })).toBe(expected);
  });
});
