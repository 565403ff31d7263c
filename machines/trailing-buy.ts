/**
 * TRAILING_BUY (spec 2.2.2, part 3): spends `quote_amount` dollars when the best ask bounces up
 * by the offset from its low-water mark. The mark starts at `execution.low_water_mark` (or the
 * ask when the order was accepted) and follows the ask down; the entry level is
 * `mark × (1 + pct/100)` or `mark + offset`. `price_ceiling` is a veto: an ask above it never
 * fires (at any price) and the order stays armed for a cheaper ask. On entry: a GTC LIMIT buy at
 * the ask of ⌊quote_amount / ask⌋ shares (hundredths). The record's `price` is the ceiling.
 *
 * | state     | REST status | final | meaning                                                         |
 * |-----------|-------------|-------|-----------------------------------------------------------------|
 * | armed     | ACTIVE      | no    | waits for ask ≥ entry (and ≤ ceiling); an ask below the mark lowers both |
 * | triggered | TRIGGERED   | no    | the buy works (not placed → armed again)                        |
 * | done      | COMPLETED   | yes   | the buy is done                                                 |
 * | canceled  | CANCELED    | yes   | DELETE strategy while armed                                     |
 * | failed    | FAILED      | yes   | the venue refused the buy, or it was not placed 3 times         |
 *
 * The states, retries and DELETE rules are those of every armed stop (machines/armed-stop.ts).
 */
import { Dec } from '../engine/decimal.js';
import { armedStopMachine, ARMED_STOP_STATUS, type ArmedStopContext } from './armed-stop.js';
import {
  baseContext,
  canonicalDecimal,
  d,
  floorShares,
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

/** Context of a TRAILING_BUY: spends `quoteAmount` dollars; `triggerPrice` = the entry level; `price` = the ceiling. */
export interface TrailingBuyContext extends ArmedStopContext {
  quoteAmount: string;
  lowWaterMark: string;
  priceCeiling?: string | null;
  offsetPct?: string | null;
  offsetAbs?: string | null;
}

/** Entry level of a trailing buy for a low-water mark (remembered: {@link rememberedLevel}). */
export const trailingBuyLevel: TrailingLevel = rememberedLevel((c, mark) => {
  const m = d(mark);
  return (
    c.offsetPct != null
      ? m.times(new Dec(100).plus(c.offsetPct)).div(100)
      : m.plus(need(c.offsetAbs, 'trailing offset'))
  ).toFixed();
});

/**
 * The `message` of an armed TRAILING_BUY: names the entry level it will buy at, which is always
 * its `trigger_price` (both come from {@link trailingBuyLevel} of the current low-water mark).
 * @param note why the mark is what it is ("seeded from the ask", "followed the ask down"), or null.
 */
export function trailingBuyMessage(
  c: Pick<StrategyContext, 'quoteAmount' | 'triggerPrice' | 'lowWaterMark' | 'priceCeiling'>,
  note: string | null,
): string {
  return (
    `TRAILING_BUY armed: buys $${c.quoteAmount} when the ask bounces to ${c.triggerPrice} ` +
    `(low-water mark ${c.lowWaterMark}${note ? `, ${note}` : ''})` +
    `${c.priceCeiling ? `, never above ${c.priceCeiling}` : ''}`
  );
}

/** Ask at or above the entry level and not above the ceiling. */
function entryAllowed(c: TrailingBuyContext, ask: string): boolean {
  return d(ask).gte(c.triggerPrice) && (c.priceCeiling == null || d(ask).lte(c.priceCeiling));
}

function trailingBuyContext(input: StrategyInput): TrailingBuyContext {
  const lowWaterMark = need(input.lowWaterMark, 'TRAILING_BUY low-water mark');
  const triggerPrice = trailingBuyLevel(input, lowWaterMark);
  return Object.assign(baseContext(input), {
    quoteAmount: need(input.quoteAmount, 'TRAILING_BUY quote_amount'),
    lowWaterMark,
    price: input.priceCeiling ?? null,
    triggerPrice,
    watch: { askBelow: lowWaterMark, askAtOrAbove: triggerPrice },
  });
}

export const trailingBuyMachine = armedStopMachine<TrailingBuyContext>({
  id: 'trailing_buy',
  context: trailingBuyContext,
  orderName: 'the trailing-buy order',
  fires: (c, t) => t.ask !== null && entryAllowed(c, t.ask),
  firesWhen: 'the ask bounced up by the offset and is within the ceiling',
  follows: {
    when: (c, t) => t.ask !== null && d(t.ask).lt(c.lowWaterMark),
    patch: (c, t) => {
      const ask = need(t.ask, 'the ask below the mark');
      const triggerPrice = trailingBuyLevel(c, ask);
      const message = trailingBuyMessage({ ...c, lowWaterMark: ask, triggerPrice }, 'followed the ask down');
      return {
        lowWaterMark: ask,
        triggerPrice,
        message,
        lastTouch: t,
        watch: { askBelow: ask, askAtOrAbove: triggerPrice },
      };
    },
    description: 'a new low: the mark and the entry level follow the ask down',
  },
  side: 'buy',
  isStopLoss: false,
  size: (c, ask) => floorShares(d(c.quoteAmount).div(ask)).toFixed(),
  firedMessage: (c, f) =>
    `TRAILING_BUY triggered: the ask bounced to ${f.price} (entry level ${c.triggerPrice}, ` +
    `low-water mark ${c.lowWaterMark}); placed buy order ${f.orderId} of ${f.size} shares at ${f.price}`,
  watch: (c) => ({ askBelow: c.lowWaterMark, askAtOrAbove: c.triggerPrice }),
  doneReason: 'the entry order is done',
});

export const TRAILING_BUY_STATUS = ARMED_STOP_STATUS;

const WATCH: StrategyDerivation = ['watch', (c) => ({ askBelow: c.lowWaterMark, askAtOrAbove: c.triggerPrice })];

/**
 * Stored form of TRAILING_BUY snapshots: armed, the watch follows from the mark and the entry
 * level, the message (form 1: when not seeded). Form 2 stores `[2, value, tokenId, quoteAmount,
 * execution, [bid, ask], createdAtMs]` (a buy); the mark (until it follows the ask: `execution.low_water_mark`,
 * or the ask it was seeded from), the offsets, the ceiling (`price`) and the entry level follow
 * from `execution` as engine/strategies/requests.ts reads it, and so does the message.
 */
export const TRAILING_BUY_FORM = strategySnapshotForm(
  'TRAILING_BUY',
  [WATCH, ['message', (c) => trailingBuyMessage(c, null)]],
  {
    fields: ['quoteAmount', 'execution'],
    defaults: { side: 'buy' },
    derived: [
      fromExecution('lowWaterMark', 'low_water_mark', (c) => canonicalDecimal(c.touch?.ask)),
      ...TRAILING_OFFSET_DERIVATIONS,
      fromExecution('priceCeiling', 'price_ceiling', () => null),
      ['price', (c) => c.priceCeiling ?? null],
      ['triggerPrice', (c) => trailingBuyLevel(c, need(c.lowWaterMark, 'low-water mark'))],
      WATCH,
      [
        'message',
        (c) => trailingBuyMessage(c, c.execution?.low_water_mark === undefined ? 'seeded from the ask' : null),
      ],
    ],
  },
);
