/**
 * BRACKET (spec 2.2, 2.2.2 "Bracket rules", 2.3 `brackets`): the take-profit and stop-loss legs
 * attached to a buy LIMIT or MARKET entry, as one one-cancels-other actor.
 *
 * - The legs wait for the entry to end (filled, or canceled / expired / an IOC remainder after a
 *   partial fill). They are then sized by what the entry filled: a leg's `size` omitted or "0"
 *   protects every filled share; a positive `size` protects min(size, filled). An entry that
 *   ends with nothing filled places no leg.
 * - Take-profit: a GTC LIMIT sell at `take_profit.price` (on open orders with
 *   `is_take_profit: true`). Stop-loss: armed on the best bid; when the bid falls to
 *   `stop_loss.price` the take-profit (which holds the shares) is canceled first, then a GTC
 *   LIMIT sell of the shares still protected goes out at the bid (`is_stop_loss: true`).
 * - One cancels the other: shares the take-profit sold are no longer protected by the stop; once
 *   nothing is left to protect, the bracket completes.
 * - Best-effort: a leg that cannot be placed (below the market's minimum, refused by the venue,
 *   or `order.placeFailed`: the engine could not place it) records its `error`; the entry is
 *   never undone. A take-profit not placed leaves the stop armed; a stop-loss sell not placed
 *   ends the bracket FAILED (its leg FAILED, the reason in `message`).
 * - DELETE strategy: answered by the machine (`snapshot.can`): awaiting_entry, placing_take_profit
 *   and protecting cancel (the take-profit being placed is canceled once placed: `canceling`,
 *   tag `canceling`); once the stop fired (stopping, selling; state meta `noCancel`) → 409.
 *
 * | state               | REST status | final | how it gets there                                       |
 * |---------------------|-------------|-------|---------------------------------------------------------|
 * | awaiting_entry      | PENDING     | no    | accepted with its entry; waits for the entry to end      |
 * | placing_take_profit | ACTIVE      | no    | the entry filled: the take-profit sell goes out         |
 * |                     |             |       | (placed/refused/placeFailed → protecting)               |
 * | protecting          | ACTIVE      | no    | take-profit resting and/or stop armed                    |
 * | stopping            | TRIGGERED   | no    | bid reached the stop: the take-profit is being canceled  |
 * | selling             | TRIGGERED   | no    | the stop-loss sell works                                 |
 * | completed           | COMPLETED   | yes   | nothing left to protect                                  |
 * | canceled            | CANCELED    | yes   | DELETE strategy, the entry filled nothing, or the       |
 * |                     |             |       | market resolved (the stop-loss sell refused             |
 * |                     |             |       | `market_closed`)                                        |
 * | canceling           | ACTIVE      | no    | DELETE strategy: the take-profit is being canceled        |
 * | failed              | FAILED      | yes   | the stop-loss sell was refused or could not be placed     |
 */
import { and, assign } from 'xstate';
import { Dec } from '../engine/decimal.js';
import {
  applyChildUpdate,
  baseContext,
  d,
  need,
  nextChildId,
  placeFailureText,
  placingOrder,
  refusalText,
  strategySetup,
  cancelWorking,
  cancelWorkingOnEnd,
  type BracketLeg,
  type ChildOrder,
  type StrategyBaseContext,
  type StrategyEvent,
  type StrategyInput,
} from './strategy-kit.js';
import { given } from './input.js';

/**
 * Params of `cancelOrder` for the take-profit when the stop fired (after `recordTrigger`): one
 * cancels the other, recorded on the take-profit as `BRACKET_STOP_FIRED` naming the stop.
 */
function stopFiredCancel({ context: c }: { context: BracketContext }) {
  return cancelWorking(
    'BRACKET_STOP_FIRED',
    `stop-loss fired (best bid ${c.lastTouch.bid ?? '-'} reached ${c.triggerPrice ?? '-'}): ` +
      `take-profit canceled, one cancels the other`,
  )({ context: c });
}

/** Context of a BRACKET: the entry order it waits for, its legs, and what the entry filled. */
export interface BracketContext extends StrategyBaseContext {
  entryOrderId: string;
  legs: { take_profit?: BracketLeg; stop_loss?: BracketLeg };
  /** Shares the entry filled. */
  entryFilled: string;
}
type Ctx = BracketContext;
type LegName = 'take_profit' | 'stop_loss';

function bracketContext(input: StrategyInput): BracketContext {
  return Object.assign(baseContext(input), {
    entryOrderId: need(input.entryOrderId, 'BRACKET entry order'),
    legs: need(input.legs, 'BRACKET legs'),
    entryFilled: '0',
  });
}

const ZERO = new Dec(0);

/** Shares a leg protects once the entry filled `filled` shares (its size "0" or omitted = all of them). */
export function protectedShares(leg: BracketLeg | null | undefined, filled: string): Dec {
  if (!leg) return ZERO;
  return leg.requestedSize === null || d(leg.requestedSize).isZero()
    ? d(filled)
    : Dec.min(d(leg.requestedSize), d(filled));
}

/** The warning of an entry whose bracket leg asked for more shares than the entry filled (its size is capped). */
export const BRACKET_SIZE_CAPPED = 'bracket size capped to fill size';

/** Shares the take-profit sold so far. */
export function takeProfitSold(c: Ctx): Dec {
  const id = c.legs.take_profit?.order_id;
  const child = id ? c.children.find((x) => x.orderId === id) : undefined;
  return child ? d(child.filledSize) : ZERO;
}

/** Shares the stop would sell now: its protected size, but never more than the entry left unsold. */
export function stopShares(c: Ctx): Dec {
  const sl = c.legs.stop_loss;
  if (!sl || sl.status !== 'ARMED') return ZERO;
  return Dec.max(0, Dec.min(protectedShares(sl, c.entryFilled), d(c.entryFilled).minus(takeProfitSold(c))));
}

const tpWorking = (c: Ctx) => c.working !== null && c.working === c.legs.take_profit?.order_id;
const isEntry = (c: Ctx, e: StrategyEvent) =>
  (e.type === 'order.updated' || e.type === 'order.refused') && e.orderId === c.entryOrderId;
const isWorking = (c: Ctx, e: StrategyEvent) =>
  (e.type === 'order.updated' || e.type === 'order.refused') && e.orderId === c.working;
/** The `error` of a leg whose order was refused or could not be placed. */
const legError = (e: StrategyEvent) =>
  e.type === 'order.refused'
    ? refusalText(e)
    : e.type === 'order.placeFailed'
      ? `not placed: ${placeFailureText(e)}`
      : 'refused';
/** Leg `name` (which this state guarantees). */
const legOf = (c: Ctx, name: LegName): BracketLeg => need(c.legs[name], `the ${name} leg`);
/** The legs with `patch` applied to leg `name`. */
const leg = (c: Ctx, name: LegName, patch: Partial<BracketLeg>): Ctx['legs'] => ({
  ...c.legs,
  [name]: { ...legOf(c, name), ...patch },
});

export const bracketMachine = strategySetup<BracketContext>()
  .extend({
    actions: {
      recordEntry: assign(({ event }) => (event.type === 'order.updated' ? { entryFilled: event.filledSize } : {})),
      /** The entry is done: size the legs; a take-profit below the market minimum fails here. */
      sizeLegs: assign(({ context: c }) => {
        const legs = { ...c.legs };
        const warnings = [...c.warnings];
        const tp = legs.take_profit;
        if (tp) {
          const size = protectedShares(tp, c.entryFilled);
          legs.take_profit = { ...tp, size: size.toFixed() };
          if (size.lt(c.minSize)) {
            const error =
              `take-profit of ${size.toFixed()} shares is below this market's minimum ` +
              `of ${c.minSize} shares for resting orders: not placed`;
            legs.take_profit = { ...legs.take_profit, status: 'FAILED', error };
            warnings.push(`bracket take_profit failed: ${error}`);
          }
        }
        const sl = legs.stop_loss;
        if (sl) legs.stop_loss = { ...sl, size: protectedShares(sl, c.entryFilled).toFixed(), status: 'ARMED' };
        // a leg asked for more shares than the entry filled protects what was filled (the reference's words)
        const capped = [tp, sl].some((l) => l?.requestedSize && d(l.requestedSize).gt(c.entryFilled));
        if (capped) warnings.push(BRACKET_SIZE_CAPPED);
        // the message follows the state: what now protects the shares the entry filled
        const parts = [
          legs.take_profit &&
            legs.take_profit.status !== 'FAILED' &&
            `take-profit of ${legs.take_profit.size} shares at ${legs.take_profit.price}`,
          legs.stop_loss &&
            `stop-loss of ${legs.stop_loss.size} shares armed at ${legs.stop_loss.price} on the best bid`,
        ].filter(Boolean);
        const message =
          `brackets: entry ${c.entryOrderId} filled ${c.entryFilled} ` +
          `shares; ${parts.length ? parts.join(', ') : 'no leg could be placed'}`;
        return { legs, warnings, message };
      }),
      planTakeProfit: assign(({ context: c }) => {
        const tp = legOf(c, 'take_profit');
        const placing: ChildOrder = {
          orderId: nextChildId(c),
          side: 'sell',
          pricing: { kind: 'limit', price: tp.price },
          size: need(tp.size, 'the take-profit size'),
          timeInForce: 'GTC',
          postOnly: false,
          isStopLoss: false,
          isTakeProfit: true,
        };
        return {
          seq: c.seq + 1,
          working: placing.orderId,
          placing,
          legs: leg(c, 'take_profit', { order_id: placing.orderId, id: placing.orderId, status: 'SUBMITTED' }),
        };
      }),
      recordChild: assign(({ context: c, event }) => {
        if (event.type !== 'order.updated') return {};
        const patch = applyChildUpdate(c, event);
        const name =
          event.orderId === c.legs.take_profit?.order_id
            ? 'take_profit'
            : event.orderId === c.legs.stop_loss?.order_id
              ? 'stop_loss'
              : null;
        return name ? { ...patch, legs: leg(c, name, { status: event.status }) } : patch;
      }),
      takeProfitRefused: assign(({ context: c, event }) => {
        const error = legError(event);
        return {
          working: null,
          legs: leg(c, 'take_profit', { status: 'FAILED', error }),
          warnings: [...c.warnings, `bracket take_profit failed: ${error}`],
        };
      }),
      stopRefused: assign(({ context: c, event }) => {
        const error = legError(event);
        const what = event.type === 'order.placeFailed' ? 'could not be placed' : 'was refused';
        return {
          working: null,
          watch: {},
          legs: leg(c, 'stop_loss', { status: 'FAILED', error }),
          endReason: `the stop-loss sell ${what}: ${error}`,
        };
      }),
      /** The stop-loss sell was refused because the market resolved first: its leg CANCELED with that reason. */
      stopClosedByResolution: assign(({ context: c }) => ({
        working: null,
        watch: {},
        legs: leg(c, 'stop_loss', { status: 'CANCELED', error: 'market resolved' }),
      })),
      /** The take-profit never existed (placeFailed while it was being canceled): CANCELED, no child works. */
      closeTakeProfit: assign(({ context: c }) => ({
        working: null,
        legs: c.legs.take_profit ? leg(c, 'take_profit', { status: 'CANCELED' }) : c.legs,
      })),
      armStop: assign(({ context: c }) => ({
        watch: c.legs.stop_loss?.status === 'ARMED' ? { bidAtOrBelow: c.legs.stop_loss.price } : {},
      })),
      recordTrigger: assign(({ context: c, event }) => {
        const touch = event.type === 'book.touch' ? { bid: event.bid, ask: event.ask } : c.lastTouch;
        const price = legOf(c, 'stop_loss').price;
        const takeProfitWorks = c.legs.take_profit?.order_id && c.legs.take_profit.status !== 'FAILED';
        const message =
          `brackets: stop-loss triggered: the best bid ${touch.bid ?? '-'} reached ${price}; ` +
          `${takeProfitWorks ? 'the take-profit is canceled and ' : ''}the protected shares are sold at the bid`;
        return {
          watch: {},
          lastTouch: touch,
          triggerPrice: price,
          legs: leg(c, 'stop_loss', { status: 'TRIGGERED' }),
          message,
        };
      }),
      planStopSell: assign(({ context: c }) => {
        const placing: ChildOrder = {
          orderId: nextChildId(c),
          side: 'sell',
          pricing: { kind: 'limit', price: c.lastTouch.bid ?? legOf(c, 'stop_loss').price },
          size: stopShares({ ...c, legs: leg(c, 'stop_loss', { status: 'ARMED' }) }).toFixed(),
          timeInForce: 'GTC',
          postOnly: false,
          isStopLoss: true,
        };
        return {
          seq: c.seq + 1,
          working: placing.orderId,
          placing,
          legs: leg(c, 'stop_loss', { order_id: placing.orderId, status: 'SUBMITTED' }),
        };
      }),
      /** Legs that will never act get their final status. */
      closeLegs: assign(({ context: c }, params: { status: string }) => {
        const legs = { ...c.legs };
        for (const name of ['take_profit', 'stop_loss'] as const) {
          const l = legs[name];
          if (l && ['WAITING', 'ARMED', 'TRIGGERED'].includes(l.status)) legs[name] = { ...l, status: params.status };
        }
        return { legs, watch: {}, deadlines: {}, working: null };
      }),
    },
    guards: {
      entryEndedFilled: ({ context, event }) =>
        isEntry(context, event) && event.type === 'order.updated' && event.final && d(event.filledSize).gt(0),
      entryEndedEmpty: ({ context, event }) =>
        isEntry(context, event) && (event.type === 'order.refused' || (event.type === 'order.updated' && event.final)),
      entryUpdate: ({ context, event }) => isEntry(context, event),
      takeProfitToPlace: ({ context }) => context.legs.take_profit?.status === 'WAITING',
      workingDone: ({ context, event }) => isWorking(context, event) && event.type === 'order.updated' && event.final,
      workingRefused: ({ context, event }) => isWorking(context, event) && event.type === 'order.refused',
      workingUpdate: ({ context, event }) => isWorking(context, event) && event.type === 'order.updated',
      nothingToProtect: ({ context }) => !tpWorking(context) && stopShares(context).lte(0),
      bidReachedStop: ({ context, event }) =>
        event.type === 'book.touch' &&
        event.bid !== null &&
        context.legs.stop_loss?.status === 'ARMED' &&
        d(event.bid).lte(context.legs.stop_loss.price),
      takeProfitWorking: ({ context }) => tpWorking(context),
      /** After this update of the take-profit, the stop still has shares to sell. */
      stopHasShares: ({ context, event }) => {
        const c = event.type === 'order.updated' ? { ...context, ...applyChildUpdate(context, event) } : context;
        return stopShares({ ...c, legs: leg(c, 'stop_loss', { status: 'ARMED' }) }).gt(0);
      },
    },
  })
  .createMachine({
    id: 'bracket',
    context: ({ input }) => bracketContext(given(input)),
    initial: 'awaiting_entry',
    states: {
      awaiting_entry: {
        on: {
          'order.updated': [
            {
              guard: 'entryEndedFilled',
              target: 'sizing',
              actions: ['recordEntry', 'sizeLegs'],
              description: 'the entry is done with shares filled: size the legs',
            },
            {
              guard: 'entryEndedEmpty',
              target: 'canceled',
              actions: [
                'recordEntry',
                { type: 'closeLegs', params: { status: 'CANCELED' } },
                { type: 'endWith', params: { reason: 'the entry ended with nothing filled: no bracket placed' } },
              ],
              description: 'the entry ended with nothing filled',
            },
            {
              guard: 'entryUpdate',
              actions: 'recordEntry',
              description: 'a partial fill of the entry (legs wait for it to end)',
            },
          ],
          'order.refused': {
            guard: 'entryEndedEmpty',
            target: 'canceled',
            actions: [
              { type: 'closeLegs', params: { status: 'CANCELED' } },
              { type: 'endWith', params: { reason: 'the entry was refused: no bracket placed' } },
            ],
            description: 'the entry was refused (or never placed)',
          },
          'strategy.cancel': {
            target: 'canceled',
            actions: [
              { type: 'closeLegs', params: { status: 'CANCELED' } },
              { type: 'endWith', params: { reason: 'canceled by DELETE strategy before the entry ended' } },
            ],
            description: 'DELETE strategy',
          },
        },
      },
      sizing: {
        always: [
          {
            guard: 'takeProfitToPlace',
            target: 'placing_take_profit',
            actions: 'planTakeProfit',
            description: 'place the take-profit first',
          },
          { target: 'protecting', actions: 'armStop', description: 'no take-profit to place: arm the stop' },
        ],
      },
      placing_take_profit: {
        entry: { type: 'placeOrder', params: placingOrder },
        on: {
          'order.updated': [
            {
              guard: 'workingDone',
              target: 'protecting',
              actions: ['recordChild', 'armStop'],
              description: 'the take-profit filled (or ended) at once',
            },
            {
              guard: 'workingUpdate',
              actions: ['recordChild', 'armStop'],
              target: 'protecting',
              description: 'the take-profit rests: arm the stop',
            },
          ],
          'order.refused': {
            guard: 'workingRefused',
            target: 'protecting',
            actions: ['takeProfitRefused', 'armStop'],
            description: 'the venue refused the take-profit',
          },
          'order.placeFailed': {
            guard: 'workingPlaceFailed',
            target: 'protecting',
            actions: ['takeProfitRefused', 'armStop'],
            description: 'the take-profit could not be placed: its leg fails, the stop protects',
          },
          'strategy.cancel': {
            target: 'canceling',
            actions: [
              { type: 'endWith', params: { reason: 'canceled by DELETE strategy' } },
              { type: 'cancelOrder', params: cancelWorkingOnEnd },
            ],
            description: 'DELETE strategy: cancel the take-profit being placed',
          },
        },
      },
      protecting: {
        always: {
          guard: 'nothingToProtect',
          target: 'completed',
          actions: [
            { type: 'closeLegs', params: { status: 'CANCELED' } },
            { type: 'endWith', params: { reason: 'nothing left to protect' } },
          ],
          description: 'the take-profit sold everything, or no leg is working',
        },
        on: {
          'order.updated': [
            {
              guard: 'workingDone',
              actions: ['recordChild', 'armStop'],
              description: 'the take-profit is done: the stop protects what is left',
            },
            { guard: 'workingUpdate', actions: 'recordChild', description: 'partial fill of the take-profit' },
          ],
          'book.touch': [
            {
              guard: and(['bidReachedStop', 'takeProfitWorking']),
              target: 'stopping',
              actions: ['recordTrigger', { type: 'cancelOrder', params: stopFiredCancel }],
              description: 'the stop fired: cancel the take-profit first (it holds the shares)',
            },
            {
              guard: 'bidReachedStop',
              target: 'selling',
              actions: ['recordTrigger', 'planStopSell'],
              description: 'the stop fired: sell',
            },
          ],
          'strategy.cancel': [
            {
              guard: 'takeProfitWorking',
              target: 'canceling',
              actions: [
                { type: 'endWith', params: { reason: 'canceled by DELETE strategy' } },
                { type: 'cancelOrder', params: cancelWorkingOnEnd },
              ],
              description: 'DELETE strategy: cancel the take-profit',
            },
            {
              target: 'canceled',
              actions: [
                { type: 'closeLegs', params: { status: 'CANCELED' } },
                { type: 'endWith', params: { reason: 'canceled by DELETE strategy' } },
              ],
              description: 'DELETE strategy: disarm the stop',
            },
          ],
        },
      },
      stopping: {
        tags: ['cancelingChild'],
        meta: { noCancel: 'has triggered its stop-loss: the take-profit is being canceled and the shares sold' },
        on: {
          // the take-profit never existed, so it sold nothing: the stop has every protected share to sell
          'order.placeFailed': {
            guard: 'workingPlaceFailed',
            target: 'selling',
            actions: ['closeTakeProfit', 'planStopSell'],
            description: 'the take-profit was never placed: sell',
          },
          'order.updated': [
            {
              guard: and(['workingDone', 'stopHasShares']),
              target: 'selling',
              actions: ['recordChild', 'planStopSell'],
              description: 'the take-profit is off the book: sell what is left',
            },
            {
              guard: 'workingDone',
              target: 'completed',
              actions: [
                'recordChild',
                { type: 'closeLegs', params: { status: 'CANCELED' } },
                { type: 'endWith', params: { reason: 'the take-profit sold everything before the stop could' } },
              ],
              description: 'the take-profit filled while being canceled',
            },
            { guard: 'workingUpdate', actions: 'recordChild', description: 'a fill racing the cancel' },
          ],
        },
      },
      selling: {
        entry: { type: 'placeOrder', params: placingOrder },
        meta: { noCancel: 'has triggered its stop-loss and its sell is working', cancelWorking: true },
        on: {
          'order.placeFailed': {
            guard: 'workingPlaceFailed',
            target: 'failed',
            actions: 'stopRefused',
            description: 'the stop-loss sell could not be placed',
          },
          'order.updated': [
            {
              guard: 'workingDone',
              target: 'completed',
              actions: [
                'recordChild',
                { type: 'closeLegs', params: { status: 'CANCELED' } },
                { type: 'endWith', params: { reason: 'the stop-loss sell order is done' } },
              ],
              description: 'the stop-loss sell finished',
            },
            { guard: 'workingUpdate', actions: 'recordChild', description: 'fill of the stop-loss sell' },
          ],
          'order.refused': [
            {
              guard: 'workingMarketClosed',
              target: 'canceled',
              actions: [
                'stopClosedByResolution',
                { type: 'closeLegs', params: { status: 'CANCELED' } },
                'endMarketResolved',
                'clearWatchAndDeadlines',
              ],
              description: 'the market resolved before the stop-loss sell got there: ended by the resolution',
            },
            {
              guard: 'workingRefused',
              target: 'failed',
              actions: 'stopRefused',
              description: 'the venue refused the stop-loss sell',
            },
          ],
        },
      },
      canceling: {
        tags: ['canceling', 'cancelingChild'],
        on: {
          'order.placeFailed': {
            guard: 'workingPlaceFailed',
            target: 'canceled',
            actions: ['closeTakeProfit', { type: 'closeLegs', params: { status: 'CANCELED' } }],
            description: 'the take-profit was never placed',
          },
          'order.updated': [
            {
              guard: 'workingDone',
              target: 'canceled',
              actions: ['recordChild', { type: 'closeLegs', params: { status: 'CANCELED' } }],
              description: 'the take-profit is off the book',
            },
            { guard: 'workingUpdate', actions: 'recordChild', description: 'a fill racing the cancel' },
          ],
        },
      },
      completed: { type: 'final' },
      canceled: { type: 'final' },
      failed: { type: 'final' },
    },
  });

export const BRACKET_STATUS = {
  awaiting_entry: 'PENDING',
  sizing: 'ACTIVE',
  placing_take_profit: 'ACTIVE',
  protecting: 'ACTIVE',
  stopping: 'TRIGGERED',
  selling: 'TRIGGERED',
  completed: 'COMPLETED',
  canceled: 'CANCELED',
  failed: 'FAILED',
  canceling: 'ACTIVE',
} as const;
