/**
 * PEGGED (spec 2.2.2): spends `budget_usdc` dollars buying at the touch. The peg price is the
 * best bid (or one tick under the ask when there is no bid) minus `offset_ticks` × 0.001
 * (spec 2.1: one tick = 0.001), rounded down to the market's current tick (a `book.touch`
 * carries it: a tick-size change applies from the next touch on), kept within `price_floor` /
 * `price_ceiling` and always below the ask (never crossing). One post-only GTC buy rests there
 * for ⌊budget left / price⌋ shares; when the touch moves so that the peg price changes, the order
 * is canceled and re-placed at the new price. It ends COMPLETED when the budget left cannot buy
 * the market's minimum size.
 *
 * A peg order the venue refuses because it would cross (`order crosses book`) waits for the next
 * touch; any other refusal (a risk verdict: permanent) ends it FAILED. An order that cannot be
 * placed (`order.placeFailed`: transient) is retried PLACE_RETRIES (2) times, after 1 s
 * and 2 s (`deadlines.retry`, warnings note each); a third failure in a row ends it FAILED.
 *
 * | state     | REST status | final | events → next state                                                  |
 * |-----------|-------------|-------|----------------------------------------------------------------------|
 * | pegging   | ACTIVE      | no    | (transient) → working / waiting / completed                           |
 * | working   | ACTIVE      | no    | filled → pegging; ended unfilled → canceled; peg moved → repegging;  |
 * |           |             |       | crossed → waiting; refused → failed (market closed → canceled);      |
 * |           |             |       | placeFailed → retrying / failed; cancel → canceling                  |
 * | repegging | ACTIVE      | no    | old order off the book (or placeFailed) → pegging; cancel → canceling |
 * | waiting   | PENDING     | no    | touch → pegging; cancel → canceled                                    |
 * | retrying  | ACTIVE      | no    | retry timer → pegging; cancel → canceled                              |
 * | canceling | ACTIVE      | no    | tag `canceling`: order off the book (or placeFailed) → canceled       |
 * | completed | COMPLETED   | yes   |                                                                       |
 * | canceled  | CANCELED    | yes   |                                                                       |
 * | failed    | FAILED      | yes   | refused by the venue, or not placed 3 times in a row                   |
 */
import { assign } from 'xstate';
import { Dec } from '../engine/decimal.js';
import {
  baseContext,
  d,
  floorShares,
  floorTick,
  isWorkingChildDone,
  need,
  nextChildId,
  placingOrder,
  retryActions,
  retryingChild,
  strategySetup,
  whenChildOff,
  cancelWorking,
  cancelWorkingOnEnd,
  type ChildOrder,
  type StrategyBaseContext,
  type StrategyContext,
  type StrategyInput,
  type Touch,
} from './strategy-kit.js';
import { given } from './input.js';

/** Context of a PEGGED buy: spends `quoteAmount` dollars (the budget). */
export interface PeggedContext extends StrategyBaseContext {
  quoteAmount: string;
  /**
   * PEGGED `offset_ticks` as sent: a count of 0.001 price steps (spec 2.1), not market ticks; read it
   * as a price through machines/pegged.ts `pegOffsetPrice`. Persisted in snapshots under this name.
   */
  offsetTicks?: number;
  priceFloor?: string | null;
  priceCeiling?: string | null;
}

function peggedContext(input: StrategyInput): PeggedContext {
  return Object.assign(baseContext(input), { quoteAmount: need(input.quoteAmount, 'PEGGED budget') });
}

/** One step of `offset_ticks`: 0.001 of probability (spec 2.1's tick, whatever the market's tick). */
export const OFFSET_STEP = '0.001';

/**
 * How far below the best bid the peg rests, as a price (decimal probability): `offset_ticks` ×
 * {@link OFFSET_STEP}. The context keeps the count (`offsetTicks`, its persisted name).
 */
export function pegOffsetPrice(c: Pick<StrategyContext, 'offsetTicks'>): Dec {
  return new Dec(OFFSET_STEP).times(c.offsetTicks ?? 0);
}

/** The peg price at this touch, or null when no price fits (empty book, ceiling/floor out of reach). */
export function pegPrice(
  c: Pick<StrategyContext, 'tickSize' | 'offsetTicks' | 'priceFloor' | 'priceCeiling'>,
  t: Touch,
): string | null {
  const tick = d(c.tickSize);
  let base: Dec | null = t.bid !== null ? d(t.bid) : t.ask !== null ? d(t.ask).minus(tick) : null;
  if (base === null) return null;
  base = floorTick(base.minus(pegOffsetPrice(c)), c.tickSize);
  if (c.priceCeiling != null && base.gt(c.priceCeiling)) base = floorTick(d(c.priceCeiling), c.tickSize);
  if (t.ask !== null && base.gte(t.ask)) base = d(t.ask).minus(tick);
  if (c.priceFloor != null && base.lt(c.priceFloor)) return null;
  if (base.lt(tick) || base.gt(new Dec(1).minus(tick))) return null;
  return base.toFixed();
}

/** Shares the budget left buys at `price`. */
function affordable(c: PeggedContext, price: string): Dec {
  return floorShares(Dec.max(0, d(c.quoteAmount).minus(c.matchedAmount)).div(price));
}

const retry = retryingChild('pegging', 'order');

export const peggedMachine = strategySetup<PeggedContext>()
  .extend({
    actions: {
      ...retryActions<PeggedContext>(() => 'the pegged order'),
      planPeg: assign(({ context }) => {
        const price = need(pegPrice(context, context.lastTouch), 'a peg price');
        const placing: ChildOrder = {
          orderId: nextChildId(context),
          side: 'buy',
          pricing: { kind: 'limit', price },
          size: affordable(context, price).toFixed(),
          timeInForce: 'GTC',
          postOnly: true,
          isStopLoss: false,
        };
        // the message follows the peg: the one written at acceptance (which says why the first price) until it moves
        const message =
          context.seq > 0 ? { message: `PEGGED: $${context.quoteAmount} budget, resting at ${price}` } : {};
        return {
          seq: context.seq + 1,
          working: placing.orderId,
          workingPrice: price,
          pendingSize: placing.size,
          watch: { any: true },
          placing,
          ...message,
        };
      }),
      waitForBook: assign({ working: null, workingPrice: null, watch: { any: true } }),
      clearWorking: assign({ working: null, workingPrice: null }),
    },
    guards: {
      childFilled: ({ context, event }) =>
        isWorkingChildDone(context, event) && event.type === 'order.updated' && event.status === 'FILLED',
      noPegPrice: ({ context }) => pegPrice(context, context.lastTouch) === null,
      budgetSpent: ({ context }) => {
        const price = pegPrice(context, context.lastTouch);
        return price !== null && affordable(context, price).lt(context.minSize);
      },
      pegMoved: ({ context, event }) => {
        if (event.type !== 'book.touch') return false;
        // on the tick the touch carries (a tick-size change applies at once)
        const price = pegPrice(
          { ...context, tickSize: event.tickSize ?? context.tickSize },
          { bid: event.bid, ask: event.ask },
        );
        return price !== context.workingPrice;
      },
    },
  })
  .createMachine({
    id: 'pegged',
    context: ({ input }) => peggedContext(given(input)),
    initial: 'pegging',
    states: {
      pegging: {
        always: [
          {
            guard: 'noPegPrice',
            target: 'waiting',
            actions: 'waitForBook',
            description: 'no price within the floor/ceiling: wait for the book',
          },
          {
            guard: 'budgetSpent',
            target: 'completed',
            actions: [
              'clearWatchAndDeadlines',
              { type: 'endWith', params: { reason: 'budget spent (what is left cannot buy the minimum size)' } },
            ],
            description: 'budget spent',
          },
          {
            target: 'working',
            actions: ['planPeg', { type: 'placeOrder', params: placingOrder }],
            description: 'rest at the peg price',
          },
        ],
      },
      working: {
        on: {
          'book.touch': [
            {
              guard: 'pegMoved',
              target: 'repegging',
              actions: [
                'recordTouch',
                {
                  type: 'cancelOrder',
                  params: cancelWorking('REPEGGED', 'the touch moved the peg price: re-placed at the new one'),
                },
              ],
              description: 'the touch moved the peg price: cancel and re-place',
            },
            { actions: 'recordTouch', description: 'peg price unchanged' },
          ],
          'order.updated': [
            {
              guard: 'childFilled',
              target: 'pegging',
              actions: 'recordChild',
              description: 'filled: place the next tranche or finish',
            },
            {
              guard: 'workingChildDone',
              target: 'canceled',
              actions: [
                'recordChild',
                'clearWatchAndDeadlines',
                { type: 'endWith', params: { reason: 'the pegged order was canceled outside the strategy' } },
              ],
              description: 'the order ended without filling (DELETE order)',
            },
            { actions: 'recordChild', description: 'partial fill' },
          ],
          ...retry.whenNotPlaced,
          'strategy.cancel': {
            target: 'canceling',
            actions: [
              { type: 'endWith', params: { reason: 'canceled by DELETE strategy' } },
              { type: 'cancelOrder', params: cancelWorkingOnEnd },
            ],
            description: 'DELETE strategy',
          },
        },
      },
      repegging: {
        tags: ['cancelingChild'],
        on: {
          ...whenChildOff(
            'pegging',
            { actions: 'recordChild', description: 'the old order is off the book: re-peg' },
            { actions: 'clearWorking', description: 'the old order was never placed: re-peg' },
          ),
          'book.touch': { actions: 'recordTouch', description: 'the touch moved again' },
          'strategy.cancel': {
            target: 'canceling',
            actions: { type: 'endWith', params: { reason: 'canceled by DELETE strategy' } },
            description: 'DELETE strategy while re-pegging',
          },
        },
      },
      waiting: {
        on: {
          'book.touch': { target: 'pegging', actions: 'recordTouch', description: 'the book changed: try again' },
          ...retry.whileWaiting,
        },
      },
      ...retry.states,
      completed: { type: 'final' },
      canceled: { type: 'final' },
      failed: { type: 'final' },
    },
  });

export const PEGGED_STATUS = {
  pegging: 'ACTIVE',
  working: 'ACTIVE',
  repegging: 'ACTIVE',
  waiting: 'PENDING',
  retrying: 'ACTIVE',
  canceling: 'ACTIVE',
  completed: 'COMPLETED',
  canceled: 'CANCELED',
  failed: 'FAILED',
} as const;
