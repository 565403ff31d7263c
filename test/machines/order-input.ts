import type { OrderInput } from '../../machines/order.js';

/** A LIMIT GTD buy of 10 at 0.5, as the order machine's tests start it. */
export const baseOrderInput: OrderInput = {
  orderId: 'ord_1',
  userId: 'u1',
  tokenId: '123',
  side: 'buy',
  type: 'LIMIT',
  price: '0.5',
  size: '10',
  quoteAmount: null,
  timeInForce: 'GTD',
  expiresAtMs: 5_000,
  clientOrderId: null,
  metadata: null,
  createdAtMs: 1_000,
};
