import { describe, expect, it } from 'vitest';
import { createActor } from 'xstate';
import { armedStopMachine, type ArmedStopContext } from '../../machines/armed-stop.js';
import { trailingBuyLevel } from '../../machines/trailing-buy.js';
import { trailingStopLevel } from '../../machines/trailing-stop.js';
import {
  baseContext,
  childOrderPrice,
  d,
  need,
  rememberedLevel,
  strategySetup,
  type ChildOrder,
  type StrategyBaseContext,
  type StrategyEvent,
  type StrategyInput,
} from '../../machines/strategy-kit.js';

const input: StrategyInput = {
  recordId: 'stg1',
  userId: 'u1',
  type: 'STOP_LOSS',
  side: 'sell',
  tokenId: '123',
  tickSize: '0.01',
  minSize: '5',
  price: '0.5',
  size: '10',
  quoteAmount: null,
  execution: {},
  warnings: [],
  message: null,
  clientOrderId: null,
  metadata: null,
  createdAtMs: 0,
  touch: { bid: '0.55', ask: '0.57' },
};

describe('childOrderPrice (a child order priced at the touch the engine read)', () => {
  const c = { tickSize: '0.01' };
  const passive = (side: 'buy' | 'sell', limit: string) => ({ side, pricing: { kind: 'passive', limit } }) as const;
  const price = (order: Pick<ChildOrder, 'side' | 'pricing'>, bid: string | null, ask: string | null) =>
    childOrderPrice(c, order, { bid, ask }).toFixed();

  it('prices a limit child at its price, whatever the touch', () => {
    expect(price({ side: 'buy', pricing: { kind: 'limit', price: '0.42' } }, '0.5', '0.6')).toBe('0.42');
  });

  it('rests a passive buy one tick above the bid, never at or above the ask, capped by its limit', () => {
    expect(price(passive('buy', '0.6'), '0.5', '0.55')).toBe('0.51');
    expect(price(passive('buy', '0.6'), '0.5', '0.51')).toBe('0.5');
    expect(price(passive('buy', '0.505'), '0.5', '0.55')).toBe('0.505');
    expect(price(passive('buy', '0.6'), null, '0.55')).toBe('0.54');
    expect(price(passive('buy', '0.6'), null, null)).toBe('0.6');
  });

  it('rests a passive sell one tick below the ask, never at or below the bid, floored by its limit', () => {
    expect(price(passive('sell', '0.4'), '0.5', '0.55')).toBe('0.54');
    expect(price(passive('sell', '0.4'), '0.54', '0.55')).toBe('0.55');
    expect(price(passive('sell', '0.545'), '0.5', '0.55')).toBe('0.545');
    expect(price(passive('sell', '0.4'), '0.5', null)).toBe('0.51');
    expect(price(passive('sell', '0.4'), null, null)).toBe('0.4');
  });
});

describe('armedStopMachine (the factory of STOP_LOSS, TRAILING_STOP and TRAILING_BUY)', () => {
  interface TestStopContext extends ArmedStopContext {
    size: string;
  }
  const machine = armedStopMachine<TestStopContext>({
    id: 'test_stop',
    context: (i) => {
      const level = need(i.price, 'price');
      return { ...baseContext(i), size: need(i.size, 'size'), triggerPrice: level, watch: { bidAtOrBelow: level } };
    },
    orderName: 'the test sell',
    fires: (c, t) => t.bid !== null && d(t.bid).lte(c.triggerPrice),
    firesWhen: 'bid at or below the level',
    side: 'sell',
    isStopLoss: true,
    size: (c) => c.size,
    firedMessage: (c, f) => `fired ${f.orderId} ${f.size}@${f.price} (level ${c.triggerPrice})`,
    watch: (c) => ({ bidAtOrBelow: c.triggerPrice }),
    doneReason: 'the test sell is done',
  });
  const run = () => {
    const placed: ChildOrder[] = [];
    const actor = createActor(machine.provide({ actions: { placeOrder: (_, { order }) => void placed.push(order) } }), {
      input,
    }).start();
    return { actor, placed };
  };
  const touch = (bid: string): StrategyEvent => ({ type: 'book.touch', bid, ask: '0.6' });
  const notPlaced = (orderId: string): StrategyEvent => ({
    type: 'order.placeFailed',
    orderId,
    error: 'placement_failed',
    reason: 'store',
    atMs: 1000,
  });

  it('fires once the touch meets the level: one GTC LIMIT order at the touch, with the message of the spec', () => {
    const { actor, placed } = run();
    actor.send(touch('0.51'));
    expect(actor.getSnapshot().value).toBe('armed');
    actor.send(touch('0.49'));
    const s = actor.getSnapshot();
    expect(s.value).toBe('triggered');
    expect(placed).toEqual([
      {
        orderId: 'ord_stg1_1',
        side: 'sell',
        pricing: { kind: 'limit', price: '0.49' },
        size: '10',
        timeInForce: 'GTC',
        postOnly: false,
        isStopLoss: true,
      },
    ]);
    expect(s.context).toMatchObject({
      working: 'ord_stg1_1',
      seq: 1,
      watch: {},
      message: 'fired ord_stg1_1 10@0.49 (level 0.5)',
    });
    expect(s.can({ type: 'strategy.cancel' })).toBe(false);
  });

  it('re-arms (watch back, a warning) when the order is not placed; fails on the third failure in a row', () => {
    const { actor, placed } = run();
    for (const n of [1, 2]) {
      actor.send(touch('0.49'));
      actor.send(notPlaced(`ord_stg1_${n}`));
      const s = actor.getSnapshot();
      expect(s.value).toBe('armed');
      expect(s.context.watch).toEqual({ bidAtOrBelow: '0.5' });
      expect(s.context.warnings.at(-1)).toBe(
        `the test sell could not be placed (placement_failed — store): armed again (retry ${n} of 2)`,
      );
    }
    actor.send(touch('0.49'));
    actor.send(notPlaced('ord_stg1_3'));
    const s = actor.getSnapshot();
    expect(s.value).toBe('failed');
    expect(s.context.endReason).toBe('the test sell could not be placed (3 attempts): placement_failed — store');
    expect(placed.map((o) => o.orderId)).toEqual(['ord_stg1_1', 'ord_stg1_2', 'ord_stg1_3']);
  });

  it('ends done when its order is done, canceled when DELETE comes while armed', () => {
    const a = run().actor;
    a.send(touch('0.49'));
    a.send({
      type: 'order.updated',
      orderId: 'ord_stg1_1',
      status: 'FILLED',
      filledSize: '10',
      matchedAmount: '4.9',
      final: true,
    });
    expect(a.getSnapshot().value).toBe('done');
    expect(a.getSnapshot().context).toMatchObject({
      filledSize: '10',
      endReason: 'the test sell is done',
      working: null,
    });
    const b = run().actor;
    b.send({ type: 'strategy.cancel' });
    expect(b.getSnapshot().value).toBe('canceled');
    expect(b.getSnapshot().context).toMatchObject({ watch: {}, endReason: 'canceled before it triggered' });
  });
});

describe('strategySetup', () => {
  it('refuses (at compile time) a context type that narrows a field the shared actions write', () => {
    interface Narrowed extends StrategyBaseContext {
      working: string;
    }
    // @ts-expect-error `working` is written by the shared actions (null when no child works): it cannot be narrowed
    expect(() => strategySetup<Narrowed>()).not.toThrow();
    expect(() => strategySetup<StrategyBaseContext>()).not.toThrow();
  });
});

describe('form-2 codecs and canonical decimals (the stored form of strategy snapshots)', () => {
  it('canonicalDecimal gives what Dec writes, for any decimal text or number (property)', async () => {
    const fc = (await import('fast-check')).default;
    const { canonicalDecimal } = await import('../../machines/strategy-kit.js');
    const { Dec } = await import('../../engine/decimal.js');
    const text = fc.oneof(
      fc.stringMatching(/^-?[0-9]{1,4}(\.[0-9]{0,5})?$/),
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.constantFrom('0', '0.0', '00.5', '1e-7', '1E3', '.5', '5.', '0.50', '10', '-0'),
    );
    fc.assert(
      fc.property(text, (x) => {
        let expected: string | undefined;
        try {
          expected = new Dec(String(x)).toFixed();
        } catch {
          expected = undefined;
        }
        if (expected === undefined) expect(() => canonicalDecimal(x)).toThrow();
        else expect(canonicalDecimal(x)).toBe(expected);
      }),
      { numRuns: 2000 },
    );
    expect(canonicalDecimal(null)).toBeUndefined();
  });

  it('the touch, created-at and token-id slots read back exactly', async () => {
    const fc = (await import('fast-check')).default;
    const { TOUCH_CODEC, CREATED_AT_CODEC } = await import('../../machines/strategy-kit.js');
    const ids = (createdAtMs: number) => ({ _id: 'stg_1', ownerUserId: null, createdAtMs });
    const side = fc.option(fc.constantFrom('0.5', '0.51'), { nil: null });
    const touch = fc.oneof(
      fc.record({ bid: side, ask: side }),
      fc.constantFrom(null, { bid: '0.5' }, { bid: '0.5', ask: null, type: 'book.touch' }, { bid: 1, ask: '0.5' }),
    );
    fc.assert(
      fc.property(
        touch,
        fc.integer({ min: 0, max: 2e12 }),
        fc.oneof(fc.integer({ min: 0, max: 2e12 }), fc.constantFrom(1.5, null, '5')),
        (t, recordMs, ms) => {
          const slot = TOUCH_CODEC.encode(t, ids(recordMs));
          expect(TOUCH_CODEC.decode(JSON.parse(JSON.stringify(slot)), ids(recordMs))).toStrictEqual(
            JSON.parse(JSON.stringify(t)),
          );
          const at = CREATED_AT_CODEC.encode(ms, ids(recordMs));
          expect(CREATED_AT_CODEC.decode(JSON.parse(JSON.stringify(at)), ids(recordMs))).toStrictEqual(ms);
        },
      ),
    );
    const { TOKEN_ID_CODEC } = await import('../../machines/strategy-kit.js');
    const token = fc.oneof(
      fc.bigInt({ min: 0n, max: 2n ** 256n }).map(String),
      fc.string(),
      fc.constantFrom('007', '-1', '1e3', ''),
    );
    fc.assert(
      fc.property(token, (t) => {
        const slot = TOKEN_ID_CODEC.encode(t, ids(0));
        if (/^[1-9][0-9]*$/.test(t) && t.length > 60)
          expect((slot as string).length).toBeLessThanOrEqual(Math.ceil(t.length * 0.57));
        expect(TOKEN_ID_CODEC.decode(JSON.parse(JSON.stringify(slot)), ids(0))).toBe(t);
      }),
      { numRuns: 1000 },
    );
    // an array would read back as a touch: no slot (XState's form)
    expect(TOUCH_CODEC.encode([1, 2], ids(0))).toBeUndefined();
    expect(CREATED_AT_CODEC.encode(1_000, ids(1_003))).toBe(3);
  });
});

describe('rememberedLevel (the level of a trailing order, remembered by its inputs)', () => {
  it('gives what the computation gives, for a percent and for an absolute offset of the same text', () => {
    let computed = 0;
    const level = rememberedLevel((c, mark) => {
      computed++;
      return c.offsetPct != null ? `${mark}-${c.offsetPct}%` : `${mark}-${need(c.offsetAbs, 'offset')}`;
    });
    expect(level({ offsetPct: '5', offsetAbs: null }, '0.6')).toBe('0.6-5%');
    expect(level({ offsetPct: null, offsetAbs: '5' }, '0.6')).toBe('0.6-5');
    expect(level({ offsetPct: '5', offsetAbs: null }, '0.6')).toBe('0.6-5%');
    expect(computed).toBe(2);
    // a level that throws is not remembered: it throws again
    expect(() => level({ offsetPct: null, offsetAbs: null }, '0.6')).toThrow(/offset/);
    expect(() => level({ offsetPct: null, offsetAbs: null }, '0.6')).toThrow(/offset/);
  });

  it('keeps the trailing levels exact (decimals), a second time from memory', () => {
    for (let i = 0; i < 2; i++) {
      expect(trailingStopLevel({ offsetPct: '10', offsetAbs: null }, '0.6')).toBe('0.54');
      expect(trailingStopLevel({ offsetPct: null, offsetAbs: '0.1' }, '0.05')).toBe('0');
      expect(trailingBuyLevel({ offsetPct: '5', offsetAbs: null }, '0.4')).toBe('0.42');
      expect(trailingBuyLevel({ offsetPct: null, offsetAbs: '0.03' }, '0.4')).toBe('0.43');
    }
  });
});
