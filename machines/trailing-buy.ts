/**
 * TRAILING_BUY (spec 2.2.2, part 3): spends `quote_amount` dollars when the best ask bounces up
 * by the offset from its low-water mark. The mark starts at `execution.low_water_mark` (or the
 * ask when the order was accepted) and follows the ask down; the entry level is
 * `mark × (1 + pct/100)` or `mark + offset`. `price_ceiling` is a veto: an ask above it never
 * fires (at any price) and the order stays armed for a cheaper ask. On entry: a GTC LIMIT buy at
 * the ask of ⌊quote_amount / ask⌋ shares (hundredths). The record's `price` is the ceiling.
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
import { baseContext, d, isWorkingPlaceFailed, placeFailedEndPatch, placeFailedPatch, placeFailureText, PLACE_RETRIES, retriesExhausted, floorShares, applyChildUpdate, isWorkingChildDone, refusalPatch, nextChildId, type ChildOrder, type StrategyContext, type StrategyEvent, type StrategyInput } from './strategy-kit.js';

/** Entry level of a trailing buy for a low-water mark. */
export function trailingBuyLevel(c: Pick<StrategyContext, 'offsetPct' | 'offsetAbs'>, mark: string): string {
  const m = d(mark);
  return (c.offsetPct != null ? m.times(new Dec(100).plus(c.offsetPct)).div(100) : m.plus(c.offsetAbs!)).toFixed();
}

/**
 * The `message` of an armed TRAILING_BUY: names the entry level it will buy at, which is always
 * its `trigger_price` (both come from {@link trailingBuyLevel} of the current low-water mark).
 * @param note why the mark is what it is ("seeded from the ask", "followed the ask down"), or null.
 */
export function trailingBuyMessage(c: Pick<StrategyContext, 'quoteAmount' | 'triggerPrice' | 'lowWaterMark' | 'priceCeiling'>, note: string | null): string {
  return `TRAILING_BUY armed: buys $${c.quoteAmount} when the ask bounces to ${c.triggerPrice} (low-water mark ${c.lowWaterMark}${note ? `, ${note}` : ''})${c.priceCeiling ? `, never above ${c.priceCeiling}` : ''}`;
}

/** Ask at or above the entry level and not above the ceiling. */
function entryAllowed(c: StrategyContext, ask: string): boolean {
  return d(ask).gte(c.triggerPrice!) && (c.priceCeiling == null || d(ask).lte(c.priceCeiling));
}

export const trailingBuyMachine = setup({
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
    /** The buy could not be placed: armed again (the engine re-checks the watch against the touch). */
    rearm: assign(({ context, event }) => {
      const patch = placeFailedPatch(context);
      return { ...patch, watch: { askBelow: context.lowWaterMark!, askAtOrAbove: context.triggerPrice! }, warnings: [...context.warnings, `the trailing-buy order could not be placed (${placeFailureText(event)}): armed again (retry ${patch.placeFailures} of ${PLACE_RETRIES})`] };
    }),
    endNotPlaced: assign(({ context, event }) => placeFailedEndPatch(context, event, 'the trailing-buy order')),
    lowerMark: assign(({ context, event }) => {
      if (event.type !== 'book.touch' || event.ask === null) return {};
      const triggerPrice = trailingBuyLevel(context, event.ask);
      const message = trailingBuyMessage({ ...context, lowWaterMark: event.ask, triggerPrice }, 'followed the ask down');
      return { lowWaterMark: event.ask, triggerPrice, message, lastTouch: { bid: event.bid, ask: event.ask }, watch: { askBelow: event.ask, askAtOrAbove: triggerPrice } };
    }),
    fire: assign(({ context, event }) => {
      const touch = event.type === 'book.touch' ? { bid: event.bid, ask: event.ask } : context.lastTouch;
      const placing: ChildOrder = {
        orderId: nextChildId(context), side: 'buy', pricing: { kind: 'limit', price: touch.ask! },
        size: floorShares(d(context.quoteAmount!).div(touch.ask!)).toFixed(), timeInForce: 'GTC', postOnly: false, isStopLoss: false,
      };
      const message = `TRAILING_BUY triggered: the ask bounced to ${touch.ask} (entry level ${context.triggerPrice}, low-water mark ${context.lowWaterMark}); placed buy order ${placing.orderId} of ${placing.size} shares at ${touch.ask}`;
      return { seq: context.seq + 1, working: placing.orderId, lastTouch: touch, watch: {}, placing, message };
    }),
  },
  guards: {
    workingChildDone: ({ context, event }) => isWorkingChildDone(context, event),
    workingRefused: ({ context, event }) => event.type === 'order.refused' && event.orderId === context.working,
    workingPlaceFailed: ({ context, event }) => isWorkingPlaceFailed(context, event),
    retriesExhausted: ({ context }) => retriesExhausted(context),
    askBouncedWithinCeiling: ({ context, event }) => event.type === 'book.touch' && event.ask !== null && entryAllowed(context, event.ask),
    askBelowMark: ({ context, event }) => event.type === 'book.touch' && event.ask !== null && d(event.ask).lt(context.lowWaterMark!),
  },
}).createMachine({
  id: 'trailing_buy',
  context: ({ input }) => {
    const triggerPrice = trailingBuyLevel(input, input.lowWaterMark!);
    return { ...baseContext(input), price: input.priceCeiling ?? null, triggerPrice, watch: { askBelow: input.lowWaterMark!, askAtOrAbove: triggerPrice } };
  },
  initial: 'armed',
  states: {
    armed: {
      on: {
        'book.touch': [
          { guard: 'askBouncedWithinCeiling', target: 'triggered', actions: 'fire', description: 'the ask bounced up by the offset and is within the ceiling' },
          { guard: 'askBelowMark', actions: 'lowerMark', description: 'a new low: the mark and the entry level follow the ask down' },
        ],
        'strategy.cancel': { target: 'canceled', actions: ['clearWatchAndDeadlines', { type: 'endWith', params: { reason: 'canceled before it triggered' } }], description: 'DELETE strategy while untriggered' },
      },
    },
    triggered: {
      entry: { type: 'placeOrder', params: ({ context }) => ({ order: context.placing! }) },
      meta: { noCancel: 'has triggered and its order is working', cancelWorking: true },
      on: {
        'order.placeFailed': [
          { guard: and(['workingPlaceFailed', 'retriesExhausted']), target: 'failed', actions: 'endNotPlaced', description: 'the buy could not be placed, again: give up' },
          { guard: 'workingPlaceFailed', target: 'armed', actions: 'rearm', description: 'the buy could not be placed: armed again' },
        ],
        'order.updated': [
          { guard: 'workingChildDone', target: 'done', actions: ['recordChild', { type: 'endWith', params: { reason: 'the entry order is done' } }], description: 'the buy order finished' },
          { actions: 'recordChild', description: 'fill or status change of the buy order' },
        ],
        'order.refused': { guard: 'workingRefused', target: 'failed', actions: 'endWithRefusal', description: 'the venue refused the buy' },
      },
    },
    done: { type: 'final' },
    canceled: { type: 'final' },
    failed: { type: 'final' },
  },
});

export const TRAILING_BUY_STATUS = { armed: 'ACTIVE', triggered: 'TRIGGERED', done: 'COMPLETED', canceled: 'CANCELED', failed: 'FAILED' } as const;
