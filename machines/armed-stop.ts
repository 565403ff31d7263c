/**
 * The armed-stop machine shared by STOP_LOSS, TRAILING_STOP and TRAILING_BUY (spec 2.2.2): armed
 * on a price condition, it fires one GTC LIMIT child order and follows it to its end. What is
 * particular to each (when it fires, how its level follows the touch, the order it places, its
 * messages) comes in an {@link ArmedStopSpec}; each machine file keeps its own table.
 *
 * | state     | REST status | final | events → next state                                                  |
 * |-----------|-------------|-------|----------------------------------------------------------------------|
 * | armed     | ACTIVE      | no    | touch meets the level → triggered (`fire`); touch moves the level    |
 * |           |             |       | (`follow`); cancel → canceled                                        |
 * | triggered | TRIGGERED   | no    | order done → done (canceled by its market's resolution → canceled,   |
 * |           |             |       | `market resolved`); refused → failed (market closed first →          |
 * |           |             |       | canceled, `market resolved`); placeFailed → armed (retry) / failed   |
 * |           |             |       | (retries exhausted)                                                  |
 * | done      | COMPLETED   | yes   | the order is done (filled, or ended by the user)                      |
 * | canceled  | CANCELED    | yes   | DELETE strategy while armed, or its market resolved (armed, its      |
 * |           |             |       | order refused, or its order canceled by the resolution)              |
 * | failed    | FAILED      | yes   | the venue refused the order, or it was not placed 3 times in a row    |
 *
 * After the trigger, an order that cannot be placed (`order.placeFailed`: transient) re-arms the
 * strategy (ACTIVE, its watch back: the engine checks it against the touch at once, so it fires
 * again while the price holds; a warning notes it), PLACE_RETRIES (2) times; a third failure in a
 * row ends it FAILED with the reason in `message`. A refusal by the venue (`order.refused`) ends it
 * FAILED. DELETE strategy while triggered answers 409 (state meta `noCancel`): cancel the order instead.
 */
import { and, assign } from 'xstate';
import {
  assignShared,
  need,
  nextChildId,
  placeFailedEndPatch,
  placeFailedPatch,
  placeFailureText,
  placingOrder,
  PLACE_RETRIES,
  strategySetup,
  touchOf,
  type ChildOrder,
  type KeepsSharedFields,
  type StrategyBaseContext,
  type StrategyInput,
  type Touch,
  type Watch,
} from './strategy-kit.js';
import { given } from './input.js';

/** What every armed stop's context has besides the base: the level it fires at. */
export interface ArmedStopContext extends StrategyBaseContext {
  /** Decimal probability. */
  triggerPrice: string;
}

/** What is particular to one armed stop. */
export interface ArmedStopSpec<C extends ArmedStopContext> {
  /** Machine id (persisted with snapshots: never change it). */
  id: string;
  /** The context at acceptance. */
  context: (input: StrategyInput) => C;
  /** What the order is called in warnings and messages ("the stop-loss sell"). */
  orderName: string;
  /** The touch meets the level: fire. */
  fires: (c: C, t: Touch) => boolean;
  /** Why it fires (the transition's description). */
  firesWhen: string;
  /** The touch moves the level (a trailing mark) without firing; absent: the level is fixed. */
  follows?: { when: (c: C, t: Touch) => boolean; patch: (c: C, t: Touch) => Partial<C>; description: string };
  /** The order it fires: a sell at the best bid, or a buy at the best ask (GTC LIMIT, not post-only). */
  side: 'sell' | 'buy';
  /** The order shows `is_stop_loss: true` on open orders. */
  isStopLoss: boolean;
  /** Shares of the order fired at `price`. */
  size: (c: C, price: string) => string;
  /** The `message` once it fired order `orderId` of `size` shares at `price`. */
  firedMessage: (c: C, fired: { price: string; orderId: string; size: string }) => string;
  /** The watch of the armed state (set again when the order could not be placed). */
  watch: (c: C) => Watch;
  /** `message` once the order is done. */
  doneReason: string;
}

/** Builds the machine of an armed stop (states and statuses: the table above). */
export function armedStopMachine<C extends ArmedStopContext>(
  spec: ArmedStopSpec<C>,
  ...noNarrowing: KeepsSharedFields<C>
) {
  const what = spec.orderName;
  return strategySetup<C>(...noNarrowing)
    .extend({
      actions: {
        /**
         * The order could not be placed: armed again (the engine
         * re-checks the watch against the touch), a warning says so.
         */
        rearm: assignShared<C>((c, e) => {
          const patch = placeFailedPatch(c);
          return {
            ...patch,
            watch: spec.watch(c),
            warnings: [
              ...c.warnings,
              `${what} could not be placed (${placeFailureText(e)}): armed again ` +
                `(retry ${patch.placeFailures} of ${PLACE_RETRIES})`,
            ],
          };
        }),
        endNotPlaced: assignShared<C>((c, e) => placeFailedEndPatch(c, e, what)),
        follow: assign(({ context, event }) =>
          event.type === 'book.touch' && spec.follows ? spec.follows.patch(context, touchOf(event)) : {},
        ),
        fire: assignShared<C>((c, e) => {
          const touch = e.type === 'book.touch' ? touchOf(e) : c.lastTouch;
          const price = need(spec.side === 'sell' ? touch.bid : touch.ask, 'the touch that fired');
          const placing: ChildOrder = {
            orderId: nextChildId(c),
            side: spec.side,
            pricing: { kind: 'limit', price },
            size: spec.size(c, price),
            timeInForce: 'GTC',
            postOnly: false,
            isStopLoss: spec.isStopLoss,
          };
          const message = spec.firedMessage(c, { price, orderId: placing.orderId, size: placing.size });
          return { seq: c.seq + 1, working: placing.orderId, lastTouch: touch, watch: {}, placing, message };
        }),
      },
      guards: {
        fires: ({ context, event }) => event.type === 'book.touch' && spec.fires(context, touchOf(event)),
        follows: ({ context, event }) =>
          event.type === 'book.touch' && spec.follows !== undefined && spec.follows.when(context, touchOf(event)),
      },
    })
    .createMachine({
      id: spec.id,
      context: ({ input }) => spec.context(given(input)),
      initial: 'armed',
      states: {
        armed: {
          on: {
            'book.touch': [
              { guard: 'fires', target: 'triggered', actions: 'fire', description: spec.firesWhen },
              ...(spec.follows
                ? [{ guard: 'follows', actions: 'follow', description: spec.follows.description } as const]
                : []),
            ],
            'strategy.cancel': {
              target: 'canceled',
              actions: [
                'clearWatchAndDeadlines',
                { type: 'endWith', params: { reason: 'canceled before it triggered' } },
              ],
              description: 'DELETE strategy while untriggered',
            },
          },
        },
        triggered: {
          entry: { type: 'placeOrder', params: placingOrder },
          meta: { noCancel: 'has triggered and its order is working', cancelWorking: true },
          on: {
            'order.placeFailed': [
              {
                guard: and(['workingPlaceFailed', 'retriesExhausted']),
                target: 'failed',
                actions: 'endNotPlaced',
                description: `${what} could not be placed, again: give up`,
              },
              {
                guard: 'workingPlaceFailed',
                target: 'armed',
                actions: 'rearm',
                description: `${what} could not be placed: armed again`,
              },
            ],
            'order.updated': [
              {
                guard: 'workingChildEndedByResolution',
                target: 'canceled',
                actions: ['recordChild', 'endMarketResolved', 'clearWatchAndDeadlines'],
                description:
                  `the market resolved while ${what} was working: the venue canceled it, the resolution ` +
                  `ended the strategy (filled_size shows what it sold or bought before)`,
              },
              {
                guard: 'workingChildDone',
                target: 'done',
                actions: ['recordChild', { type: 'endWith', params: { reason: spec.doneReason } }],
                description: `${what} finished`,
              },
              { actions: 'recordChild', description: `fill or status change of ${what}` },
            ],
            'order.refused': [
              {
                guard: 'workingMarketClosed',
                target: 'canceled',
                actions: ['endMarketResolved', 'clearWatchAndDeadlines'],
                description: `the market resolved before ${what} got there: ended by the resolution`,
              },
              {
                guard: 'workingRefused',
                target: 'failed',
                actions: 'endWithRefusal',
                description: `the venue refused ${what}`,
              },
            ],
          },
        },
        done: { type: 'final' },
        canceled: { type: 'final' },
        failed: { type: 'final' },
      },
    });
}

/** REST status of each state of an armed stop. */
export const ARMED_STOP_STATUS = {
  armed: 'ACTIVE',
  triggered: 'TRIGGERED',
  done: 'COMPLETED',
  canceled: 'CANCELED',
  failed: 'FAILED',
} as const;
