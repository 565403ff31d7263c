/**
 * ICEBERG (spec 2.2.2, part 3): works `size` shares at `price` showing one clip of
 * `execution.clip_size` at a time. Each clip is a live, post-only GTC LIMIT order (on open
 * orders); when it fills, the next clip goes out; the record carries the parent totals. A clip
 * that would cross the book is not placed: the iceberg waits (PENDING) until the book no longer
 * crosses its price. With `price_tolerance_pct`, when the far touch (the ask for a buy, the bid
 * for a sell) drifts from `price` by more than that percent, the working clip is canceled and the
 * iceberg ends CANCELED (drift auto-cancel).
 *
 * A clip the venue refuses because it would cross (`order.refused` with the code `order crosses
 * book`) waits for the book; any other refusal (a risk verdict: permanent) ends it FAILED. A clip
 * that cannot be placed (`order.placeFailed`: transient) is retried PLACE_RETRIES (2) times, after
 * 1 s and 2 s (`deadlines.retry`, warnings note each); a third failure in a row ends it FAILED.
 *
 * | state     | REST status | final | events → next state                                                     |
 * |-----------|-------------|-------|-------------------------------------------------------------------------|
 * | placing   | ACTIVE      | no    | (transient) → working / waiting / completed                              |
 * | working   | ACTIVE      | no    | clip filled → placing; clip ended unfilled → canceled; crossed →        |
 * |           |             |       | waiting; refused → failed (market closed → canceled); placeFailed →     |
 * |           |             |       | retrying / failed; drift, cancel → canceling                            |
 * | waiting   | PENDING     | no    | touch uncrossed → placing; drift, cancel → canceled                      |
 * | retrying  | ACTIVE      | no    | retry timer → placing; cancel → canceled                                 |
 * | canceling | ACTIVE      | no    | tag `canceling`: clip off the book (or placeFailed) → canceled           |
 * | completed | COMPLETED   | yes   |                                                                          |
 * | canceled  | CANCELED    | yes   |                                                                          |
 * | failed    | FAILED      | yes   | refused by the venue, or not placed 3 times in a row                      |
 */
import { assign } from 'xstate';
import { Dec } from '../engine/decimal.js';
import { crossesBook } from '../engine/touch.js';
import {
  baseContext,
  d,
  isWorkingChildDone,
  need,
  nextChildId,
  placingOrder,
  remainingShares,
  retryActions,
  retryingChild,
  strategySetup,
  cancelWorking,
  cancelWorkingOnEnd,
  type ChildOrder,
  type StrategyBaseContext,
  type StrategyInput,
  type Touch,
} from './strategy-kit.js';
import { given } from './input.js';

/** Context of an ICEBERG: `size` shares at `price`, `clipSize` shown at a time. */
export interface IcebergContext extends StrategyBaseContext {
  price: string;
  size: string;
  clipSize: string;
  tolerancePct?: string | null;
}

function icebergContext(input: StrategyInput): IcebergContext {
  return Object.assign(baseContext(input), {
    price: need(input.price, 'ICEBERG price'),
    size: need(input.size, 'ICEBERG size'),
    clipSize: need(input.clipSize, 'ICEBERG clip size'),
  });
}

/**
 * A post-only clip at `price` would take liquidity at this touch (engine/touch.ts `crossesBook`, the rule risk uses).
 */
const clipWouldCross = (c: Pick<IcebergContext, 'side' | 'price'>, t: Touch): boolean =>
  crossesBook(c.side, c.price, t);

/**
 * The market ran away from the iceberg's price by more than the tolerance: the far touch (the ask
 * for a buy, the bid for a sell: where the other side trades) is off `price` by more than
 * `price_tolerance_pct` percent of it.
 */
export function drifted(c: Pick<IcebergContext, 'side' | 'price' | 'tolerancePct'>, t: Touch): boolean {
  if (c.tolerancePct == null) return false;
  const ref = c.side === 'buy' ? t.ask : t.bid;
  if (ref === null) return false;
  return d(ref).minus(c.price).abs().div(c.price).times(100).gt(c.tolerancePct);
}

const retry = retryingChild('placing', 'clip');

export const icebergMachine = strategySetup<IcebergContext>()
  .extend({
    actions: {
      ...retryActions<IcebergContext>((c) => `clip ${c.slicesDone}`),
      planClip: assign(({ context }) => {
        const placing: ChildOrder = {
          orderId: nextChildId(context),
          side: context.side,
          pricing: { kind: 'limit', price: context.price },
          size: Dec.min(d(context.clipSize), remainingShares(context)).toFixed(),
          timeInForce: 'GTC',
          postOnly: true,
          isStopLoss: false,
        };
        return {
          seq: context.seq + 1,
          working: placing.orderId,
          slicesDone: context.slicesDone + 1,
          workingPrice: context.price,
          pendingSize: placing.size,
          watch: { any: true },
          placing,
        };
      }),
      waitForBook: assign({ working: null, watch: { any: true } }),
    },
    guards: {
      clipFilled: ({ context, event }) =>
        isWorkingChildDone(context, event) && event.type === 'order.updated' && event.status === 'FILLED',
      nothingLeft: ({ context }) => remainingShares(context).lte(0),
      wouldCross: ({ context }) => clipWouldCross(context, context.lastTouch),
      touchDrifted: ({ context, event }) =>
        event.type === 'book.touch' && drifted(context, { bid: event.bid, ask: event.ask }),
      touchUncrossed: ({ context, event }) =>
        event.type === 'book.touch' && !clipWouldCross(context, { bid: event.bid, ask: event.ask }),
    },
  })
  .createMachine({
    id: 'iceberg',
    context: ({ input }) => icebergContext(given(input)),
    initial: 'placing',
    states: {
      placing: {
        always: [
          {
            guard: 'nothingLeft',
            target: 'completed',
            actions: ['clearWatchAndDeadlines', { type: 'endWith', params: { reason: 'all shares traded' } }],
            description: 'the last clip filled the order',
          },
          {
            guard: 'wouldCross',
            target: 'waiting',
            actions: 'waitForBook',
            description: 'post-only: the clip would cross, wait for the book',
          },
          {
            target: 'working',
            actions: ['planClip', { type: 'placeOrder', params: placingOrder }],
            description: 'show the next clip',
          },
        ],
      },
      working: {
        on: {
          'order.updated': [
            {
              guard: 'clipFilled',
              target: 'placing',
              actions: 'recordChild',
              description: 'the clip filled: show the next',
            },
            {
              guard: 'workingChildDone',
              target: 'canceled',
              actions: [
                'recordChild',
                'clearWatchAndDeadlines',
                { type: 'endWith', params: { reason: 'the working clip was canceled outside the strategy' } },
              ],
              description: 'the clip ended without filling (DELETE order)',
            },
            { actions: 'recordChild', description: 'partial fill of the clip' },
          ],
          ...retry.whenNotPlaced,
          'book.touch': [
            {
              guard: 'touchDrifted',
              target: 'canceling',
              actions: [
                'recordTouch',
                { type: 'endWith', params: { reason: 'price drifted beyond price_tolerance_pct: auto-canceled' } },
                {
                  type: 'cancelOrder',
                  params: cancelWorking('PRICE_DRIFTED', 'price drifted beyond price_tolerance_pct: auto-canceled'),
                },
              ],
              description: 'drift beyond tolerance',
            },
            { actions: 'recordTouch', description: 'the touch moved within tolerance' },
          ],
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
      waiting: {
        on: {
          'book.touch': [
            {
              guard: 'touchDrifted',
              target: 'canceled',
              actions: [
                'recordTouch',
                'clearWatchAndDeadlines',
                { type: 'endWith', params: { reason: 'price drifted beyond price_tolerance_pct: auto-canceled' } },
              ],
              description: 'drift beyond tolerance',
            },
            {
              guard: 'touchUncrossed',
              target: 'placing',
              actions: 'recordTouch',
              description: 'the book no longer crosses the price',
            },
            { actions: 'recordTouch', description: 'still crossing' },
          ],
          ...retry.whileWaiting,
        },
      },
      ...retry.states,
      completed: { type: 'final' },
      canceled: { type: 'final' },
      failed: { type: 'final' },
    },
  });

export const ICEBERG_STATUS = {
  placing: 'ACTIVE',
  working: 'ACTIVE',
  waiting: 'PENDING',
  retrying: 'ACTIVE',
  canceling: 'ACTIVE',
  completed: 'COMPLETED',
  canceled: 'CANCELED',
  failed: 'FAILED',
} as const;
