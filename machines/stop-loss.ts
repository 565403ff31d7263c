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
 * The states, retries and DELETE rules are those of every armed stop (machines/armed-stop.ts);
 * what is particular to STOP_LOSS: a fixed level (nothing follows the touch), the sell at the bid.
 */
import { armedStopMachine, ARMED_STOP_STATUS, type ArmedStopContext } from './armed-stop.js';
import {
  baseContext,
  d,
  need,
  strategySnapshotForm,
  type StrategyContext,
  type StrategyDerivation,
  type StrategyInput,
} from './strategy-kit.js';

/** Context of a STOP_LOSS: its armed level is `price` (= `triggerPrice`), it sells `size` shares. */
export interface StopLossContext extends ArmedStopContext {
  price: string;
  size: string;
}

/** The `message` of an armed STOP_LOSS (shares, decimal probability). */
export function stopLossMessage(c: Pick<StrategyContext, 'size' | 'price'>): string {
  return `STOP_LOSS armed: sells ${c.size} shares when the best bid reaches ${c.price}`;
}

function stopLossContext(input: StrategyInput): StopLossContext {
  const price = need(input.price, 'STOP_LOSS price');
  return Object.assign(baseContext(input), {
    price,
    size: need(input.size, 'STOP_LOSS size'),
    triggerPrice: price,
    watch: { bidAtOrBelow: price },
  });
}

export const stopLossMachine = armedStopMachine<StopLossContext>({
  id: 'stop_loss',
  context: stopLossContext,
  orderName: 'the stop-loss sell',
  fires: (c, t) => t.bid !== null && d(t.bid).lte(c.price),
  firesWhen: 'best bid at or below the armed level',
  side: 'sell',
  isStopLoss: true,
  size: (c) => c.size,
  firedMessage: (c, f) =>
    `STOP_LOSS triggered: the best bid ${f.price} reached the armed level ${c.price}; ` +
    `placed sell order ${f.orderId} of ${f.size} shares at ${f.price}`,
  watch: (c) => ({ bidAtOrBelow: c.price }),
  doneReason: 'the stop-loss sell order is done',
});

export const STOP_LOSS_STATUS = ARMED_STOP_STATUS;

const STOP_LOSS_DERIVED: readonly StrategyDerivation[] = [
  ['triggerPrice', (c) => c.price],
  ['watch', (c) => ({ bidAtOrBelow: c.price })],
  ['message', (c) => stopLossMessage(c)],
];

/**
 * Stored form of STOP_LOSS snapshots: armed, its level, watch and message follow from `price` and
 * `size`; form 2 stores `[2, value, tokenId, price, size, [bid, ask], createdAtMs]` (a sell: `side`
 * "sell" by default; the slots as machines/strategy-kit.ts `strategySnapshotForm` encodes them).
 */
export const STOP_LOSS_FORM = strategySnapshotForm('STOP_LOSS', STOP_LOSS_DERIVED, {
  fields: ['price', 'size'],
  defaults: { side: 'sell' },
  derived: STOP_LOSS_DERIVED,
});
