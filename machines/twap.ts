/**
 * TWAP (spec 2.2.2): trades `size` shares (or `quote_amount` dollars at the limit) in equal
 * slices over `duration_sec`, one every `interval_sec`: n = ⌊duration / interval⌋ slices (at least
 * one), slice i at start + i × interval. Each slice's size is recomputed from what remains:
 * ⌊remaining / slices left⌋ (hundredths), the last takes the rest. `passive: false`: each slice is
 * an IOC LIMIT at the limit price — it takes the touch and never pays past the limit; what it does
 * not fill rolls into the next slices. `passive: true`: each slice rests one tick inside the touch
 * (capped by the limit, never crossing) until the next slice time, when it is canceled and its
 * unfilled part rolls on; a passive slice below the market's minimum size is merged into the next
 * one, and a last remainder below the minimum is left unfilled (see `message`). At
 * start + duration the TWAP ends.
 *
 * A slice that cannot be placed (`order.placeFailed`: a transient failure such as a store write)
 * is counted as lost (`warnings`) and its shares roll into the next slices; at the end time a
 * TWAP that lost slices and filled nothing ends FAILED. A slice the venue refuses
 * (`order.refused`: a risk verdict such as the balance, permanent) ends it FAILED.
 *
 * | state     | REST status | final | events → next state                                                    |
 * |-----------|-------------|-------|------------------------------------------------------------------------|
 * | slicing   | ACTIVE      | no    | (transient) decides the next slice → working / waiting / completed     |
 * | working   | ACTIVE      | no    | slice done → waiting; refused → failed (market closed → canceled);     |
 * |           |             |       | placeFailed → waiting (slice lost); slice time → rolling; end →        |
 * |           |             |       | finishing; cancel → canceling                                          |
 * | waiting   | ACTIVE      | no    | slice time → slicing; end → completed (failed if slices were lost and  |
 * |           |             |       | nothing filled); cancel → canceled                                     |
 * | rolling   | ACTIVE      | no    | previous slice off the book (or placeFailed) → slicing; end →          |
 * |           |             |       | finishing; cancel → canceling                                          |
 * | finishing | ACTIVE      | no    | last slice off the book (or placeFailed) → completed (failed as        |
 * |           |             |       | above); cancel → canceling                                             |
 * | canceling | ACTIVE      | no    | tag `canceling`: the working slice off the book (or placeFailed) → canceled |
 * | completed | COMPLETED   | yes   | all traded, or the duration is over                                    |
 * | canceled  | CANCELED    | yes   | DELETE strategy, or its market resolved (`message` says which)          |
 * | failed    | FAILED      | yes   | the venue refused a slice, or no slice could be placed                 |
 */
import { and, assign } from 'xstate';
import { Dec } from '../engine/decimal.js';
import {
  applyChildUpdate,
  baseContext,
  floorShares,
  isCurrentTimer,
  isWorkingChildDone,
  need,
  nextChildId,
  placeFailedPatch,
  placeFailureText,
  placingOrder,
  remainingShares,
  strategySetup,
  whenChildOff,
  cancelWorking,
  cancelWorkingOnEnd,
  type ChildOrder,
  type StrategyBaseContext,
  type StrategyInput,
} from './strategy-kit.js';
import { given } from './input.js';

/** Context of a TWAP: `size` shares (derived from `quote_amount` when sized in dollars) at limit `price`. */
export interface TwapContext extends StrategyBaseContext {
  price: string;
  size: string;
  intervalMs: number;
  durationMs: number;
  slicesTotal: number;
  passive?: boolean;
}

function twapContext(input: StrategyInput): TwapContext {
  const durationMs = need(input.durationMs, 'TWAP duration');
  return Object.assign(baseContext(input), {
    price: need(input.price, 'TWAP limit price'),
    size: need(input.size, 'TWAP size'),
    intervalMs: need(input.intervalMs, 'TWAP interval'),
    durationMs,
    slicesTotal: need(input.slicesTotal, 'TWAP slice count'),
    deadlines: { end: input.createdAtMs + durationMs },
  });
}

/** Number of slices of a TWAP (README: ⌊duration / interval⌋, at least one). */
export function twapSliceCount(durationMs: number, intervalMs: number): number {
  return Math.max(1, Math.floor(durationMs / intervalMs));
}

/** Size of the next slice (shares): the remainder spread over the slices left. */
export function nextSliceSize(c: TwapContext): Dec {
  const left = c.slicesTotal - c.slicesDone;
  const remaining = remainingShares(c);
  return left <= 1 ? remaining : floorShares(remaining.div(left));
}

const isLast = (c: TwapContext) => c.slicesDone + 1 >= c.slicesTotal;
const tooSmall = (c: TwapContext) => {
  const s = nextSliceSize(c);
  return s.lte(0) || (c.passive === true && s.lt(c.minSize));
};

/** One more slice counted (placed or merged into the next): its count and the next slice time. */
function sliceCounted(c: TwapContext): Pick<TwapContext, 'slicesDone' | 'deadlines'> {
  const done = c.slicesDone + 1;
  const deadlines: Record<string, number> = { end: need(c.deadlines.end, 'TWAP end time') };
  if (done < c.slicesTotal) deadlines.slice = c.createdAtMs + done * c.intervalMs;
  return { slicesDone: done, deadlines };
}

export const twapMachine = strategySetup<TwapContext>()
  .extend({
    actions: {
      /** The working slice could not be placed: counted as lost (warning), its shares roll on. */
      sliceLost: assign(({ context: c, event }) => ({
        ...placeFailedPatch(c),
        warnings: [
          ...c.warnings,
          `slice ${c.slicesDone} of ${c.slicesTotal} could not be placed ` +
            `(${placeFailureText(event)}): its shares roll into the next slices`,
        ],
      })),
      /**
       * Ends CANCELED with the reason the cancel gave when it arrived (`market resolved`, or DELETE
       * strategy's); a snapshot from before the reason was kept at the cancel has none: DELETE's.
       */
      keepCancelReason: assign(({ context: c }) => ({ endReason: c.endReason ?? 'canceled by DELETE strategy' })),
      /** Duration over: the reason names the slices lost, if any. */
      endDurationOver: assign(({ context: c }) => ({
        watch: {},
        deadlines: {},
        endReason:
          (c.placeFailures ?? 0) > 0
            ? `duration over; ${c.placeFailures} slice${c.placeFailures === 1 ? '' : 's'} could not be ` +
              `placed${new Dec(c.filledSize).isZero() ? ' and nothing filled' : ''} (see warnings)`
            : 'duration over',
      })),
      /** Counts the slice, names its order, and arms the next slice time. */
      planSlice: assign(({ context }) => {
        const placing: ChildOrder = {
          orderId: nextChildId(context),
          side: context.side,
          size: nextSliceSize(context).toFixed(),
          pricing: context.passive
            ? { kind: 'passive', limit: context.price }
            : { kind: 'limit', price: context.price },
          timeInForce: context.passive ? 'GTC' : 'IOC',
          postOnly: context.passive === true,
          isStopLoss: false,
        };
        return {
          seq: context.seq + 1,
          working: placing.orderId,
          ...sliceCounted(context),
          pendingSize: placing.size,
          placing,
        };
      }),
      /** A passive slice below the minimum: merged into the next one. */
      skipSlice: assign(({ context }) => sliceCounted(context)),
    },
    guards: {
      /** Slices were lost and nothing filled: at the end time the TWAP failed. */
      nothingFilled: ({ context }) => new Dec(context.filledSize).isZero(),
      lostAndNothingFilled: ({ context }) => (context.placeFailures ?? 0) > 0 && new Dec(context.filledSize).isZero(),
      nothingLeft: ({ context }) => remainingShares(context).lte(0),
      allSlicesPlaced: ({ context }) => context.slicesDone >= context.slicesTotal,
      lastSliceTooSmall: ({ context }) => tooSmall(context) && isLast(context),
      sliceTooSmall: ({ context }) => tooSmall(context),
      workingDoneAndNothingLeft: ({ context, event }) =>
        isWorkingChildDone(context, event) &&
        event.type === 'order.updated' &&
        remainingShares({ ...context, ...applyChildUpdate(context, event) }).lte(0),
      sliceTime: ({ context, event }) => isCurrentTimer(context, event, 'slice'),
      endTime: ({ context, event }) => isCurrentTimer(context, event, 'end'),
    },
  })
  .createMachine({
    id: 'twap',
    context: ({ input }) => twapContext(given(input)),
    initial: 'slicing',
    states: {
      slicing: {
        always: [
          {
            guard: 'nothingLeft',
            target: 'completed',
            actions: ['clearWatchAndDeadlines', { type: 'endWith', params: { reason: 'all shares traded' } }],
            description: 'everything is filled',
          },
          { guard: 'allSlicesPlaced', target: 'waiting', description: 'every slice went out: wait for the end time' },
          {
            guard: 'lastSliceTooSmall',
            target: 'completed',
            actions: [
              'clearWatchAndDeadlines',
              {
                type: 'endWith',
                params: {
                  reason: 'the last remainder is below the market minimum size for a resting slice: left unfilled',
                },
              },
            ],
            description: 'a passive last slice below the minimum is not placed',
          },
          {
            guard: 'sliceTooSmall',
            target: 'waiting',
            actions: 'skipSlice',
            description: 'a passive slice below the minimum merges into the next',
          },
          {
            target: 'working',
            actions: ['planSlice', { type: 'placeOrder', params: placingOrder }],
            description: 'place the next slice',
          },
        ],
      },
      working: {
        on: {
          'order.updated': [
            {
              guard: 'workingDoneAndNothingLeft',
              target: 'completed',
              actions: [
                'recordChild',
                'clearWatchAndDeadlines',
                { type: 'endWith', params: { reason: 'all shares traded' } },
              ],
              description: 'the slice filled the rest',
            },
            {
              guard: 'workingChildDone',
              target: 'waiting',
              actions: 'recordChild',
              description: 'the slice is done; wait for the next slice time',
            },
            { actions: 'recordChild', description: 'fill of the working slice' },
          ],
          'order.refused': [
            {
              guard: 'workingMarketClosed',
              target: 'canceled',
              actions: ['endMarketResolved', 'clearWatchAndDeadlines'],
              description: 'the market resolved before the slice got there: ended by the resolution',
            },
            {
              guard: 'workingRefused',
              target: 'failed',
              actions: ['endWithRefusal', 'clearWatchAndDeadlines'],
              description: 'the venue refused a slice',
            },
          ],
          'order.placeFailed': {
            guard: 'workingPlaceFailed',
            target: 'waiting',
            actions: 'sliceLost',
            description: 'the slice could not be placed: lost, its shares roll on',
          },
          'timer.fired': [
            {
              guard: 'endTime',
              target: 'finishing',
              actions: {
                type: 'cancelOrder',
                params: cancelWorking('DURATION_OVER', 'duration over: the last slice is canceled'),
              },
              description: 'duration over: cancel the working slice',
            },
            {
              guard: 'sliceTime',
              target: 'rolling',
              actions: {
                type: 'cancelOrder',
                params: cancelWorking(
                  'SLICE_ROLLED',
                  "next slice time: the slice's unfilled part rolls into the next slice",
                ),
              },
              description: 'next slice time: cancel the resting slice, its remainder rolls on',
            },
          ],
          'strategy.cancel': {
            target: 'canceling',
            actions: [
              { type: 'endWith', params: { reason: 'canceled by DELETE strategy' } },
              { type: 'cancelOrder', params: cancelWorkingOnEnd },
            ],
            description: 'DELETE strategy (or its market resolved): cancel the working slice',
          },
        },
      },
      waiting: {
        on: {
          'order.updated': { actions: 'recordChild', description: 'a late report of a finished slice' },
          'timer.fired': [
            {
              guard: and(['endTime', 'lostAndNothingFilled']),
              target: 'failed',
              actions: 'endDurationOver',
              description: 'duration over: slices were lost and nothing filled',
            },
            { guard: 'endTime', target: 'completed', actions: 'endDurationOver', description: 'duration over' },
            { guard: 'sliceTime', target: 'slicing', description: 'next slice time' },
          ],
          'strategy.cancel': {
            target: 'canceled',
            actions: ['clearWatchAndDeadlines', { type: 'endWith', params: { reason: 'canceled by DELETE strategy' } }],
            description: 'DELETE strategy between slices',
          },
        },
      },
      rolling: {
        tags: ['cancelingChild'],
        on: {
          ...whenChildOff(
            'slicing',
            { actions: 'recordChild', description: 'the previous slice is off the book: place the next' },
            { actions: 'sliceLost', description: 'the previous slice was never placed: place the next' },
          ),
          'timer.fired': { guard: 'endTime', target: 'finishing', description: 'duration over while rolling' },
          'strategy.cancel': {
            target: 'canceling',
            actions: { type: 'endWith', params: { reason: 'canceled by DELETE strategy' } },
            description: 'DELETE strategy while the slice is being canceled',
          },
        },
      },
      finishing: {
        tags: ['cancelingChild'],
        on: {
          'order.updated': [
            {
              guard: 'workingChildDone',
              target: 'completed',
              actions: ['recordChild', 'endDurationOver'],
              description: 'the last slice is off the book',
            },
            { actions: 'recordChild', description: 'fill racing the cancel' },
          ],
          'order.placeFailed': [
            {
              guard: and(['workingPlaceFailed', 'nothingFilled']),
              target: 'failed',
              actions: ['sliceLost', 'endDurationOver'],
              description: 'the last slice was never placed and nothing filled',
            },
            {
              guard: 'workingPlaceFailed',
              target: 'completed',
              actions: ['sliceLost', 'endDurationOver'],
              description: 'the last slice was never placed',
            },
          ],
          'strategy.cancel': {
            target: 'canceling',
            actions: { type: 'endWith', params: { reason: 'canceled by DELETE strategy' } },
            description: 'DELETE strategy while the last slice is being canceled: it ends CANCELED',
          },
        },
      },
      canceling: {
        tags: ['canceling', 'cancelingChild'],
        on: {
          ...whenChildOff(
            'canceled',
            {
              actions: ['recordChild', 'clearWatchAndDeadlines', 'keepCancelReason'],
              description: 'the working slice is off the book',
            },
            {
              actions: ['sliceLost', 'clearWatchAndDeadlines', 'keepCancelReason'],
              description: 'the working slice was never placed',
            },
          ),
        },
      },
      completed: { type: 'final' },
      canceled: { type: 'final' },
      failed: { type: 'final' },
    },
  });

export const TWAP_STATUS = {
  slicing: 'ACTIVE',
  working: 'ACTIVE',
  waiting: 'ACTIVE',
  rolling: 'ACTIVE',
  finishing: 'ACTIVE',
  canceling: 'ACTIVE',
  completed: 'COMPLETED',
  canceled: 'CANCELED',
  failed: 'FAILED',
} as const;
