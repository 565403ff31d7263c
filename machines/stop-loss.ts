/**
 * STOP_LOSS (spec 2.2.2, part 3): a standalone sell armed at `price`. When the best bid falls to
 * the armed level it triggers into a real CLOB order: a GTC LIMIT sell of `size` at the bid then
 * (it takes the bid and rests whatever is left there), shown on open orders with
 * `is_stop_loss: true`. The record keeps `price` = the armed level; `executed_price` and
 * `filled_size` come from that order.
 *
 * | state     | REST status | final | how it gets there                                  |
 * |-----------|-------------|-------|----------------------------------------------------|
 * | armed     | ACTIVE      | no    | accepted; waits for bid ≤ price                    |
 * | triggered | TRIGGERED   | no    | bid reached the level: the sell order works (not placed → armed again) |
 * | done      | COMPLETED   | yes   | the sell order is done (filled, or ended by the user)|
 * | canceled  | CANCELED    | yes   | DELETE strategy while armed                         |
 * | failed    | FAILED      | yes   | the venue refused the sell, or it was not placed 3 times in a row |
 *
 * After the trigger, an order that cannot be placed (`order.placeFailed`: transient) re-arms the
 * strategy (ACTIVE, its watch back: the engine checks it against the touch at once, so it fires
 * again while the price holds; a warning notes it), PLACE_RETRIES (2) times; a third failure in a
 * row ends it FAILED with the reason in `message`. A refusal by the venue (`order.refused`) ends it FAILED.
 * DELETE strategy while triggered answers 409 (state meta `noCancel`): cancel the order instead.
 */
import { and, assign, setup } from 'xstate';
import { baseContext, d, isWorkingPlaceFailed, placeFailedEndPatch, placeFailedPatch, placeFailureText, PLACE_RETRIES, retriesExhausted, applyChildUpdate, isWorkingChildDone, refusalPatch, nextChildId, type ChildOrder, type StrategyContext, type StrategyEvent, type StrategyInput } from './strategy-kit.js';

export const stopLossMachine = setup({
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
      return { ...patch, watch: { bidAtOrBelow: context.price! }, warnings: [...context.warnings, `the stop-loss sell could not be placed (${placeFailureText(event)}): armed again (retry ${patch.placeFailures} of ${PLACE_RETRIES})`] };
    }),
    endNotPlaced: assign(({ context, event }) => placeFailedEndPatch(context, event, 'the stop-loss sell')),
    fire: assign(({ context, event }) => {
      const touch = event.type === 'book.touch' ? { bid: event.bid, ask: event.ask } : context.lastTouch;
      const placing: ChildOrder = {
        orderId: nextChildId(context), side: 'sell', pricing: { kind: 'limit', price: touch.bid! },
        size: context.size!, timeInForce: 'GTC', postOnly: false, isStopLoss: true,
      };
      const message = `STOP_LOSS triggered: the best bid ${touch.bid} reached the armed level ${context.price}; placed sell order ${placing.orderId} of ${placing.size} shares at ${touch.bid}`;
      return { seq: context.seq + 1, working: placing.orderId, lastTouch: touch, watch: {}, placing, message };
    }),
  },
  guards: {
    workingChildDone: ({ context, event }) => isWorkingChildDone(context, event),
    workingRefused: ({ context, event }) => event.type === 'order.refused' && event.orderId === context.working,
    workingPlaceFailed: ({ context, event }) => isWorkingPlaceFailed(context, event),
    retriesExhausted: ({ context }) => retriesExhausted(context),
    bidReachedStop: ({ context, event }) => event.type === 'book.touch' && event.bid !== null && d(event.bid).lte(context.price!),
  },
}).createMachine({
  id: 'stop_loss',
  context: ({ input }) => ({ ...baseContext(input), triggerPrice: input.price, watch: { bidAtOrBelow: input.price! } }),
  initial: 'armed',
  states: {
    armed: {
      on: {
        'book.touch': { guard: 'bidReachedStop', target: 'triggered', actions: 'fire', description: 'best bid at or below the armed level' },
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
          { guard: 'workingChildDone', target: 'done', actions: ['recordChild', { type: 'endWith', params: { reason: 'the stop-loss sell order is done' } }], description: 'the sell order finished' },
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

export const STOP_LOSS_STATUS = { armed: 'ACTIVE', triggered: 'TRIGGERED', done: 'COMPLETED', canceled: 'CANCELED', failed: 'FAILED' } as const;
