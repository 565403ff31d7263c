/**
 * TRAILING_STOP (spec 2.2.2): sells `size` when the best bid falls back by the offset from its
 * high-water mark. The mark starts at `execution.high_water_mark` (or `price`) and follows the
 * bid up; the trigger is `mark × (1 − pct/100)` or `mark − offset`. On trigger: a GTC LIMIT sell
 * at the bid, `is_stop_loss: true` (as STOP_LOSS). The record's `price` is the armed level.
 *
 * Example: mark 0.60, 10 % → armed at 0.54; the bid rises to 0.70 → mark 0.70, armed at 0.63;
 * the bid falls to 0.63 → fires.
 *
 * | state     | REST status | final |
 * |-----------|-------------|-------|
 * | armed     | ACTIVE      | no    |
 * | triggered | TRIGGERED   | no    |
 * | done      | COMPLETED   | yes   |
 * | canceled  | CANCELED    | yes   |
 * | failed    | FAILED      | yes   |
 *
 * After the trigger, an order that cannot be placed (`order.placeFailed`: transient) re-arms the
 * strategy (ACTIVE, its watch back: the engine checks it against the touch at once, so it fires
 * again while the price holds; a warning notes it), PLACE_RETRIES (2) times; a third failure in a
 * row ends it FAILED with the reason in `message`. A refusal by the venue (`order.refused`) ends it FAILED.
 * DELETE strategy while triggered answers 409 (state meta `noCancel`): cancel the order instead.
 */
import { and, assign, setup } from 'xstate';
import { Dec } from '../engine/decimal.js';
import { baseContext, d, isWorkingPlaceFailed, placeFailedEndPatch, placeFailedPatch, placeFailureText, PLACE_RETRIES, retriesExhausted, applyChildUpdate, isWorkingChildDone, refusalPatch, nextChildId, type ChildOrder, type StrategyContext, type StrategyEvent, type StrategyInput } from './strategy-kit.js';

/** Trigger level of a trailing stop for a high-water mark. */
export function trailingStopLevel(c: Pick<StrategyContext, 'offsetPct' | 'offsetAbs'>, mark: string): string {
  const m = d(mark);
  const level = c.offsetPct != null ? m.times(new Dec(100).minus(c.offsetPct)).div(100) : m.minus(c.offsetAbs!);
  return Dec.max(0, level).toFixed();
}

/**
 * The `message` of an armed TRAILING_STOP: names the level it sells at, which is always its
 * `trigger_price`, and the high-water mark it trails (decimal probabilities).
 */
export function trailingStopMessage(c: Pick<StrategyContext, 'triggerPrice' | 'highWaterMark'>, note: string | null = null): string {
  return `TRAILING_STOP armed at ${c.triggerPrice} (high-water mark ${c.highWaterMark}${note ? `, ${note}` : ''}); follows the bid up`;
}

export const trailingStopMachine = setup({
  types: { context: {} as StrategyContext, input: {} as StrategyInput, events: {} as StrategyEvent },
  actions: {
    /** Side effect: place a child CLOB order. */
    placeOrder: (_, _params: { order: ChildOrder }) => {},
    /** Side effect: cancel a child CLOB order. */
    cancelOrder: (_, _params: { orderId: string }) => {},
    recordChild: assign(({ context, event }) => (event.type === 'order.updated' ? applyChildUpdate(context, event) : {})),
    endWith: assign((_, params: { reason: string }) => ({ endReason: params.reason })),
    endWithRefusal: assign(({ event }) => refusalPatch(event)),
    clearWatchAndDeadlines: assign({ watch: {}, deadlines: {} }),
    /** The sell could not be placed: armed again (the engine re-checks the watch against the touch). */
    rearm: assign(({ context, event }) => {
      const patch = placeFailedPatch(context);
      return { ...patch, watch: { bidAtOrBelow: context.triggerPrice!, bidAbove: context.highWaterMark! }, warnings: [...context.warnings, `the trailing-stop sell could not be placed (${placeFailureText(event)}): armed again (retry ${patch.placeFailures} of ${PLACE_RETRIES})`] };
    }),
    endNotPlaced: assign(({ context, event }) => placeFailedEndPatch(context, event, 'the trailing-stop sell')),
    raiseMark: assign(({ context, event }) => {
      if (event.type !== 'book.touch' || event.bid === null) return {};
      const triggerPrice = trailingStopLevel(context, event.bid);
      const message = trailingStopMessage({ triggerPrice, highWaterMark: event.bid }, 'followed the bid up');
      return { highWaterMark: event.bid, triggerPrice, price: triggerPrice, message, lastTouch: { bid: event.bid, ask: event.ask }, watch: { bidAtOrBelow: triggerPrice, bidAbove: event.bid } };
    }),
    fire: assign(({ context, event }) => {
      const touch = event.type === 'book.touch' ? { bid: event.bid, ask: event.ask } : context.lastTouch;
      const placing: ChildOrder = {
        orderId: nextChildId(context), side: 'sell', pricing: { kind: 'limit', price: touch.bid! },
        size: context.size!, timeInForce: 'GTC', postOnly: false, isStopLoss: true,
      };
      const message = `TRAILING_STOP triggered: the best bid ${touch.bid} fell to the armed level ${context.triggerPrice} (high-water mark ${context.highWaterMark}); placed sell order ${placing.orderId} of ${placing.size} shares at ${touch.bid}`;
      return { seq: context.seq + 1, working: placing.orderId, lastTouch: touch, watch: {}, placing, message };
    }),
  },
  guards: {
    workingChildDone: ({ context, event }) => isWorkingChildDone(context, event),
    workingRefused: ({ context, event }) => event.type === 'order.refused' && event.orderId === context.working,
    workingPlaceFailed: ({ context, event }) => isWorkingPlaceFailed(context, event),
    retriesExhausted: ({ context }) => retriesExhausted(context),
    bidFellToTrigger: ({ context, event }) => event.type === 'book.touch' && event.bid !== null && d(event.bid).lte(context.triggerPrice!),
    bidAboveMark: ({ context, event }) => event.type === 'book.touch' && event.bid !== null && d(event.bid).gt(context.highWaterMark!),
  },
}).createMachine({
  id: 'trailing_stop',
  context: ({ input }) => {
    const triggerPrice = trailingStopLevel(input, input.highWaterMark!);
    return { ...baseContext(input), price: triggerPrice, triggerPrice, watch: { bidAtOrBelow: triggerPrice, bidAbove: input.highWaterMark! } };
  },
  initial: 'armed',
  states: {
    armed: {
      on: {
        'book.touch': [
          { guard: 'bidFellToTrigger', target: 'triggered', actions: 'fire', description: 'the bid fell back by the offset from the mark' },
          { guard: 'bidAboveMark', actions: 'raiseMark', description: 'a new high: the mark and the armed level follow the bid up' },
        ],
        'strategy.cancel': { target: 'canceled', actions: ['clearWatchAndDeadlines', { type: 'endWith', params: { reason: 'canceled before it triggered' } }], description: 'DELETE strategy while untriggered' },
      },
    },
    triggered: {
      entry: { type: 'placeOrder', params: ({ context }) => ({ order: context.placing! }) },
      meta: { noCancel: 'has triggered and its order is working', cancelWorking: true },
      on: {
        'order.placeFailed': [
          { guard: and(['workingPlaceFailed', 'retriesExhausted']), target: 'failed', actions: 'endNotPlaced', description: 'the sell could not be placed, again: give up' },
          { guard: 'workingPlaceFailed', target: 'armed', actions: 'rearm', description: 'the sell could not be placed: armed again' },
        ],
        'order.updated': [
          { guard: 'workingChildDone', target: 'done', actions: ['recordChild', { type: 'endWith', params: { reason: 'the trailing-stop sell order is done' } }], description: 'the sell order finished' },
          { actions: 'recordChild', description: 'fill or status change of the sell order' },
        ],
        'order.refused': { guard: 'workingRefused', target: 'failed', actions: 'endWithRefusal', description: 'the venue refused the sell' },
      },
    },
    done: { type: 'final' },
    canceled: { type: 'final' },
    failed: { type: 'final' },
  },
});

export const TRAILING_STOP_STATUS = { armed: 'ACTIVE', triggered: 'TRIGGERED', done: 'COMPLETED', canceled: 'CANCELED', failed: 'FAILED' } as const;
