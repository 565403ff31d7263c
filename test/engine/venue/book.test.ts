import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { dec } from '../../../engine/decimal.js';
import { OrderBook, priceKey, type Resting } from '../../../engine/venue/book.js';

describe('OrderBook against a naive model (property)', () => {
  const op = fc.oneof(
    {
      arbitrary: fc.record({
        kind: fc.constant('add' as const),
        side: fc.constantFrom('buy' as const, 'sell' as const),
        cents: fc.integer({ min: 1, max: 12 }),
      }),
      weight: 3,
    },
    { arbitrary: fc.record({ kind: fc.constant('remove' as const), pick: fc.nat() }), weight: 2 },
  );

  it('keeps levels in price priority, orders in arrival order; a removal takes exactly its order', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
        const book = new OrderBook('t');
        const model: Resting[] = [];
        let seq = 0;
        for (const o of ops) {
          if (o.kind === 'add') {
            const price = dec(`0.${String(o.cents).padStart(2, '0')}`);
            const r: Resting = {
              orderId: `o${++seq}`,
              userId: 'u',
              side: o.side,
              price,
              key: priceKey(price),
              remaining: dec(1),
              seq,
            };
            book.add(r);
            model.push(r);
          } else {
            // an order that rests, or one that does not
            const id = model.length && o.pick % 4 !== 0 ? model[o.pick % model.length]!.orderId : `none${o.pick}`;
            const at = model.findIndex((r) => r.orderId === id);
            expect(book.remove(id)).toBe(at >= 0 ? model[at] : undefined);
            if (at >= 0) model.splice(at, 1);
          }
          for (const side of ['buy', 'sell'] as const) {
            const levels = side === 'buy' ? book.bids : book.asks;
            const expected = model
              .filter((r) => r.side === side)
              .sort((a, b) => (side === 'buy' ? b.key - a.key : a.key - b.key) || a.seq - b.seq);
            expect(levels.flatMap((l) => l.orders.map((r) => r.orderId))).toEqual(expected.map((r) => r.orderId));
            expect(levels.every((l) => l.orders.length > 0 && l.orders.every((r) => r.key === l.key))).toBe(true);
            expect(new Set(levels.map((l) => l.key)).size).toBe(levels.length);
          }
        }
      }),
      { numRuns: 300 },
    );
  });
});
