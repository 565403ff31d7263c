/**
 * TRAILING_STOP (spec 2.2.2): sells `size` when the best bid falls back by the offset from its
 * high-water mark. The mark starts at `execution.high_water_mark` (or `price`) and follows the
 * bid up; the trigger is `mark × (1 − pct/100)` or `mark − offset`. On trigger: a GTC LIMIT sell
 * at the bid, `is_stop_loss: true` (as STOP_LOSS). The record's `price` is the armed level.
 *
 * Example: mark 0.60, 10 % → armed at 0.54; the bid rises to 0.70 → mark 0.70, armed at 0.63;
 * the bid falls to 0.63 → fires.
 *
 * | state     | REST status | final | meaning                                                   |
 * |-----------|-------------|-------|-----------------------------------------------------------|
 * | armed     | ACTIVE      | no    | waits for bid ≤ trigger; a bid above the mark raises both |
 * | triggered | TRIGGERED   | no    | the sell works (not placed → armed again)                 |
 * | done      | COMPLETED   | yes   | the sell is done                                          |
 * | canceled  | CANCELED    | yes   | DELETE strategy while armed                               |
 * | failed    | FAILED      | yes   | the venue refused the sell, or it was not placed 3 times  |
 *
 * The states, retries and DELETE rules are those of every armed stop (machines/armed-stop.ts).
 */
import { Dec } from '../engine/decimal.js';
import { armedStopMachine, ARMED_STOP_STATUS, type ArmedStopContext } from './armed-stop.js';
import {
  baseContext,
  d,
  fromExecution,
  need,
  rememberedLevel,
  strategySnapshotForm,
  TRAILING_OFFSET_DERIVATIONS,
  type StrategyContext,
  type StrategyDerivation,
  type StrategyInput,
  type TrailingLevel,
} from './strategy-kit.js';

/** Context of a TRAILING_STOP: sells `size` shares; `price` = `triggerPrice` = the level the mark implies. */
export interface TrailingStopContext extends ArmedStopContext {
  size: string;
  highWaterMark: string;
  offsetPct?: string | null;
  offsetAbs?: string | null;
}

/** Trigger level of a trailing stop for a high-water mark (remembered: {@link rememberedLevel}). */
export const trailingStopLevel: TrailingLevel = rememberedLevel((c, mark) => {
  const m = d(mark);
  const level =
    c.offsetPct != null
      ? m.times(new Dec(100).minus(c.offsetPct)).div(100)
      : m.minus(need(c.offsetAbs, 'trailing offset'));
  return Dec.max(0, level).toFixed();
});

/**
 * The `message` of an armed TRAILING_STOP: names the level it sells at, which is always its
 * `trigger_price`, and the high-water mark it trails (decimal probabilities).
 */
export function trailingStopMessage(
  c: Pick<StrategyContext, 'triggerPrice' | 'highWaterMark'>,
  note: string | null = null,
): string {
  return (
    `TRAILING_STOP armed at ${c.triggerPrice} ` +
    `(high-water mark ${c.highWaterMark}${note ? `, ${note}` : ''}); follows the bid up`
  );
}

function trailingStopContext(input: StrategyInput): TrailingStopContext {
  const highWaterMark = need(input.highWaterMark, 'TRAILING_STOP high-water mark');
  const triggerPrice = trailingStopLevel(input, highWaterMark);
  return Object.assign(baseContext(input), {
    size: need(input.size, 'TRAILING_STOP size'),
    highWaterMark,
    price: triggerPrice,
    triggerPrice,
    watch: { bidAtOrBelow: triggerPrice, bidAbove: highWaterMark },
  });
}

export const trailingStopMachine = armedStopMachine<TrailingStopContext>({
  id: 'trailing_stop',
  context: trailingStopContext,
  orderName: 'the trailing-stop sell',
  fires: (c, t) => t.bid !== null && d(t.bid).lte(c.triggerPrice),
  firesWhen: 'the bid fell back by the offset from the mark',
  follows: {
    when: (c, t) => t.bid !== null && d(t.bid).gt(c.highWaterMark),
    patch: (c, t) => {
      const bid = need(t.bid, 'the bid above the mark');
      const triggerPrice = trailingStopLevel(c, bid);
      const message = trailingStopMessage({ triggerPrice, highWaterMark: bid }, 'followed the bid up');
      return {
        highWaterMark: bid,
        triggerPrice,
        price: triggerPrice,
        message,
        lastTouch: t,
        watch: { bidAtOrBelow: triggerPrice, bidAbove: bid },
      };
    },
    description: 'a new high: the mark and the armed level follow the bid up',
  },
  side: 'sell',
  isStopLoss: true,
  size: (c) => c.size,
  firedMessage: (c, f) =>
    `TRAILING_STOP triggered: the best bid ${f.price} fell to the armed level ${c.triggerPrice} ` +
    `(high-water mark ${c.highWaterMark}); placed sell order ${f.orderId} of ${f.size} shares at ${f.price}`,
  watch: (c) => ({ bidAtOrBelow: c.triggerPrice, bidAbove: c.highWaterMark }),
  doneReason: 'the trailing-stop sell order is done',
});

export const TRAILING_STOP_STATUS = ARMED_STOP_STATUS;

const ARMED_DERIVED: readonly StrategyDerivation[] = [
  ['price', (c) => c.triggerPrice],
  ['watch', (c) => ({ bidAtOrBelow: c.triggerPrice, bidAbove: c.highWaterMark })],
  ['message', (c) => trailingStopMessage(c)],
];

/**
 * Stored form of TRAILING_STOP snapshots: armed, `price`, watch and message follow from the level
 * and the mark. Form 2 stores `[2, value, tokenId, size, execution, [bid, ask], createdAtMs]` (a sell); the
 * mark (until it follows the bid), the offsets and the level follow from `execution` as
 * engine/strategies/requests.ts reads it.
 */
export const TRAILING_STOP_FORM = strategySnapshotForm('TRAILING_STOP', ARMED_DERIVED, {
  fields: ['size', 'execution'],
  defaults: { side: 'sell' },
  derived: [
    fromExecution('highWaterMark', 'high_water_mark'),
    ...TRAILING_OFFSET_DERIVATIONS,
    ['triggerPrice', (c) => trailingStopLevel(c, need(c.highWaterMark, 'high-water mark'))],
    ...ARMED_DERIVED,
  ],
});
