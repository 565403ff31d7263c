import type { StrategyInput } from '../../machines/strategy-kit.js';

/**
 * A strategy input the machine tests start from: a STOP_LOSS sell on token `123` (tick 0.01, minimum
 * 5 shares) with the touch at 0.55 / 0.57 and nothing else set; each test spreads it and sets what
 * its case needs (`{ ...baseStrategyInput, price: '0.5', size: '10' }`).
 */
export const baseStrategyInput: StrategyInput = {
  recordId: 'stg1',
  userId: 'u1',
  type: 'STOP_LOSS',
  side: 'sell',
  tokenId: '123',
  tickSize: '0.01',
  minSize: '5',
  price: null,
  size: null,
  quoteAmount: null,
  execution: {},
  warnings: [],
  message: null,
  clientOrderId: null,
  metadata: null,
  createdAtMs: 0,
  touch: { bid: '0.55', ask: '0.57' },
};
