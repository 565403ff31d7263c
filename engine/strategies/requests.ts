import { randomUUID } from 'node:crypto';
import type { OrderInput } from '../../machines/order.js';
import { pegOffsetPrice, pegPrice } from '../../machines/pegged.js';
import { stopLossMessage } from '../../machines/stop-loss.js';
import {
  floorShares,
  type BracketLeg,
  type StrategyInput,
  type StrategyType,
  type Touch,
} from '../../machines/strategy-kit.js';
import { trailingBuyLevel, trailingBuyMessage } from '../../machines/trailing-buy.js';
import { trailingStopLevel, trailingStopMessage } from '../../machines/trailing-stop.js';
import { twapSliceCount } from '../../machines/twap.js';
import type { OrderRequest } from '../../schemas/orders.js';
import type { Clock } from '../clock.js';
import { dec, Dec, str } from '../decimal.js';
import { DomainError, errors } from '../errors.js';
import { timeOrderedSeed } from '../idempotency.js';
import {
  checkIcebergClip,
  checkMinQuote,
  checkPostOnly,
  checkPrice,
  checkRestingMinimum,
  checkShares,
  checkTrailingOffset,
  checkTwapDuration,
  checkTwapSlices,
  type RiskEngine,
} from '../risk.js';

/** The `execution` object of a request (schemas/orders.ts). */
type Execution = NonNullable<OrderRequest['execution']>;

/** Step of the price fields not placed at the venue as they are (trailing marks, PEGGED bounds): at most 6 decimals. */
const FINE_STEP = dec('0.000001');

/**
 * The `execution` fields each strategy type uses (spec 2.2.1). Any other field is refused with
 * 400 naming it, except TWAP's `clip_size` and `randomize_pct`, which spec 2.2.2 wants ignored with
 * a `warnings` entry. LIMIT, MARKET, TAKE_PROFIT, STOP_LOSS and PEGGED take no `execution`.
 */
export const EXECUTION_FIELDS: Record<StrategyType, readonly string[]> = {
  TWAP: ['interval_sec', 'duration_sec', 'passive'],
  ICEBERG: ['clip_size', 'price_tolerance_pct'],
  TRAILING_STOP: ['trailing_offset_pct', 'trailing_offset', 'high_water_mark'],
  TRAILING_BUY: ['trailing_offset_pct', 'trailing_offset', 'low_water_mark', 'price_ceiling'],
  STOP_LOSS: [],
  PEGGED: [],
  BRACKET: [],
};
/**
 * `execution` fields ignored with a warning (spec 2.2.2: TWAP `clip_size` and `randomize_pct`;
 * `price_tolerance_pct`, which clients send to every type, by the same rule).
 */
export const EXECUTION_WARNED: Partial<Record<StrategyType, readonly (keyof Execution)[]>> = {
  TWAP: ['clip_size', 'randomize_pct', 'price_tolerance_pct'],
};
/** Top-level amount fields each strategy type uses (the others are refused, naming the field). */
const AMOUNT_FIELDS: Record<StrategyType, readonly string[]> = {
  STOP_LOSS: ['price', 'size'],
  TRAILING_STOP: ['price', 'size'],
  TRAILING_BUY: ['quote_amount'],
  TWAP: ['price', 'size', 'quote_amount'],
  ICEBERG: ['price', 'size'],
  PEGGED: ['budget_usdc', 'quote_amount'],
  BRACKET: [],
};

/**
 * Request checks of managed strategies and brackets (spec 2.2, 2.2.1, 2.2.2, 2.3 "Bracket
 * rules"): which fields each type takes, the per-type rules, and the actor input they build. The
 * rules of price, size, notional, wallet and crossing are engine/risk.ts's; the rules the JSON
 * Schema expresses (schemas/orders.ts) are not repeated here. Throws domain errors with codes
 * (engine/errors.ts), never HTTP.
 */
export class StrategyRequests {
  constructor(
    private readonly risk: RiskEngine,
    private readonly clock: Clock,
  ) {}

  private touchOf(tokenId: string): Touch {
    return this.risk.touch(tokenId);
  }

  private needShares(userId: string, tokenId: string, size: Dec): void {
    this.risk.funds(userId, tokenId, 'sell', size);
  }

  private needDollars(userId: string, tokenId: string, usd: Dec): void {
    this.risk.funds(userId, tokenId, 'buy', usd, 'this strategy');
  }

  /**
   * Checks a managed-strategy request (spec 2.2, 2.2.1, 2.2.2) against the market and the wallet.
   * @returns the actor input.
   * The rules of price, size, notional, wallet and crossing are engine/risk.ts's.
   * @throws {DomainError} `INVALID_REQUEST` (rules, units, tick), `PRICE_IN_CENTS`,
   *   `INSUFFICIENT_BALANCE`, `NOT_ENOUGH_SHARES`, `ORDER_CROSSES_BOOK`, `NO_LIQUIDITY`,
   *   `WOULD_TRIGGER_IMMEDIATELY` (a stop whose level the best bid already reached; the best bid is
   *   the public merged touch, so the user's own resting orders count, complement included: see
   *   engine/venue/matching.ts).
   */
  check(userId: string, body: OrderRequest): StrategyInput {
    const type = body.type as StrategyType;
    const info = this.risk.market(body.symbol);
    const tick = info.tickSize;
    const ex: Execution = body.execution ?? {};
    const forbid = (fields: (keyof OrderRequest)[], why: string) => {
      for (const f of fields) if (body[f] !== undefined) throw errors.badRequest(`${f} ${why}`);
    };
    forbid(['time_in_force', 'expiration'], `is not used by ${type} strategies`);
    if (type !== 'PEGGED')
      forbid(
        ['condition_id', 'outcome', 'offset_ticks', 'budget_usdc', 'price_floor', 'price_ceiling'],
        `is only used by PEGGED orders`,
      );
    if (!AMOUNT_FIELDS[type].includes('quote_amount'))
      forbid(['quote_amount'], `is not used by ${type} orders (they are sized in shares: send size)`);
    if (body.execution !== undefined) {
      const used = EXECUTION_FIELDS[type];
      const warned: readonly string[] = EXECUTION_WARNED[type] ?? [];
      if (!used.length) {
        const first = Object.keys(body.execution)[0];
        throw errors.badRequest(
          `${first !== undefined ? `execution.${first}` : 'execution'} is not used ` +
            `by ${type} orders (they take no execution object)`,
        );
      }
      for (const f of Object.keys(body.execution)) {
        if (!used.includes(f) && !warned.includes(f))
          throw errors.badRequest(
            `execution.${f} is not used by ${type} orders (${type} ` +
              `takes ${used.map((u) => `execution.${u}`).join(', ')})`,
          );
      }
    }
    const touchNow = this.touchOf(body.symbol);
    const warnings: string[] = [];
    const now = this.clock.now();
    const base: StrategyInput = {
      // time-ordered: the actors' id index grows at its end (a request with an Idempotency-Key
      // gets its id from that key and its first attempt's time instead: api/handlers/orders.ts)
      recordId: `stg_${timeOrderedSeed(now, randomUUID())}`,
      userId,
      type,
      side: body.side,
      tokenId: body.symbol,
      tickSize: str(tick),
      minSize: str(info.minSize),
      price: null,
      size: null,
      quoteAmount: null,
      execution: ex,
      warnings,
      message: null,
      clientOrderId: body.client_order_id ?? null,
      metadata: body.metadata ?? null,
      createdAtMs: now,
      touch: touchNow,
    };
    const offsets = () => {
      const pct = ex.trailing_offset_pct;
      const abs = ex.trailing_offset;
      if (pct !== undefined && abs !== undefined)
        throw errors.badRequest('send execution.trailing_offset_pct or execution.trailing_offset, not both');
      if (abs !== undefined) checkTrailingOffset(abs);
      return { offsetPct: pct !== undefined ? new Dec(String(pct)).toFixed() : null, offsetAbs: abs ?? null };
    };
    switch (type) {
      case 'STOP_LOSS': {
        const price = checkPrice('price', body.price!, tick);
        const size = checkShares('size', body.size!);
        this.needShares(userId, body.symbol, size);
        if (touchNow.bid !== null && dec(touchNow.bid).lte(price)) {
          throw new DomainError(
            'WOULD_TRIGGER_IMMEDIATELY',
            `STOP_LOSS price ${str(price)} is at or above the best bid ${touchNow.bid}: it ` +
              `would trigger at once; sell with LIMIT or MARKET instead`,
          );
        }
        // the input is `base` completed in place (as a spread would order its fields): an object
        // spread here made a hidden class per request (memory per armed strategy)
        base.price = str(price);
        base.size = str(size);
        base.message = stopLossMessage({ size: base.size, price: base.price });
        return base;
      }
      case 'TRAILING_STOP': {
        if (body.side !== 'sell') throw errors.badRequest('TRAILING_STOP is a sell: side must be "sell"');
        const size = checkShares('size', body.size!);
        const ref = ex.high_water_mark ?? body.price!;
        const mark = checkPrice(
          ex.high_water_mark !== undefined ? 'execution.high_water_mark' : 'price',
          ref,
          FINE_STEP,
        );
        const o = offsets();
        const level = trailingStopLevel(o, str(mark));
        this.needShares(userId, body.symbol, size); // after every rule of the request: a 400 comes first
        if (touchNow.bid !== null && dec(touchNow.bid).lte(level)) {
          throw new DomainError(
            'WOULD_TRIGGER_IMMEDIATELY',
            `TRAILING_STOP would trigger at once: the best bid ${touchNow.bid} is at or ` +
              `below the armed level ${level} (mark ${str(mark)})`,
          );
        }
        base.size = str(size);
        base.highWaterMark = str(mark);
        base.offsetPct = o.offsetPct;
        base.offsetAbs = o.offsetAbs;
        base.message = trailingStopMessage({ triggerPrice: level, highWaterMark: base.highWaterMark });
        return base;
      }
      case 'TRAILING_BUY': {
        if (body.side !== 'buy') throw errors.badRequest('TRAILING_BUY is a buy: side must be "buy"');
        forbid(
          ['size', 'price'],
          'is not used by TRAILING_BUY (it is sized by quote_amount; the ceiling is execution.price_ceiling)',
        );
        const quote = checkMinQuote(body.quote_amount!, '');
        const o = offsets();
        const seeded = ex.low_water_mark === undefined;
        if (seeded && touchNow.ask === null)
          throw new DomainError(
            'NO_LIQUIDITY',
            'no ask to seed the low-water mark from; send execution.low_water_mark',
          );
        const mark = seeded
          ? dec(touchNow.ask!)
          : checkPrice('execution.low_water_mark', ex.low_water_mark as string, FINE_STEP);
        const entry = trailingBuyLevel(o, str(mark));
        const ceiling =
          ex.price_ceiling !== undefined
            ? checkPrice('execution.price_ceiling', ex.price_ceiling as string, FINE_STEP)
            : null;
        if (ceiling && ceiling.lt(entry)) {
          throw errors.badRequest(
            `execution.price_ceiling ${str(ceiling)} is below the entry ${entry} that the offset ` +
              `implies from the low-water mark ${str(mark)}: it could never fire`,
          );
        }
        this.needDollars(userId, body.symbol, quote); // after every rule of the request: a 400 comes first
        return {
          ...base,
          quoteAmount: str(quote),
          lowWaterMark: str(mark),
          priceCeiling: ceiling ? str(ceiling) : null,
          ...o,
          message: trailingBuyMessage(
            {
              quoteAmount: str(quote),
              triggerPrice: entry,
              lowWaterMark: str(mark),
              priceCeiling: ceiling ? str(ceiling) : null,
            },
            seeded ? 'seeded from the ask' : null,
          ),
        };
      }
      case 'TWAP': {
        const interval = ex.interval_sec as number;
        const duration = ex.duration_sec as number;
        const durationMs = checkTwapDuration(duration, interval);
        if (body.size !== undefined && body.quote_amount !== undefined)
          throw errors.badRequest('send size (shares) or quote_amount (dollars) for a TWAP, not both');
        for (const f of EXECUTION_WARNED.TWAP!)
          if (ex[f] !== undefined) warnings.push(`execution.${f} is ignored for TWAP orders`);
        let derived = false;
        let price: Dec;
        if (body.price !== undefined) price = checkPrice('price', body.price, tick);
        else {
          const touch = body.side === 'buy' ? touchNow.ask : touchNow.bid;
          if (touch === null)
            throw new DomainError(
              'NO_LIQUIDITY',
              `no ${body.side === 'buy' ? 'ask' : 'bid'} to derive the TWAP limit from; send price`,
            );
          price = dec(touch);
          derived = true;
        }
        const size =
          body.size !== undefined ? checkShares('size', body.size) : floorShares(dec(body.quote_amount!).div(price));
        if (size.lte(0))
          throw errors.badRequest(`quote_amount ${body.quote_amount} buys less than 0.01 shares at ${str(price)}`);
        const n = twapSliceCount(durationMs, interval * 1000);
        checkTwapSlices(
          {
            size,
            durationSec: duration,
            intervalSec: interval,
            slices: n,
            sliceSize: floorShares(size.div(n)),
            passive: ex.passive === true,
          },
          info,
        );
        if (body.side === 'buy') this.needDollars(userId, body.symbol, price.times(size));
        else this.needShares(userId, body.symbol, size);
        return {
          ...base,
          price: str(price),
          size: str(size),
          quoteAmount: body.quote_amount ?? null,
          intervalMs: interval * 1000,
          durationMs,
          slicesTotal: n,
          passive: ex.passive === true,
          message:
            `TWAP: ${str(size)} shares in ${n} slices every ${interval} s, ` +
            `limit ${str(price)}` +
            (derived ? ` (derived from the live touch: best ${body.side === 'buy' ? 'ask' : 'bid'})` : ''),
        };
      }
      case 'ICEBERG': {
        const price = checkPrice('price', body.price!, tick);
        const size = checkShares('size', body.size!);
        const clip = checkShares('execution.clip_size', ex.clip_size as string);
        checkIcebergClip(clip, size, price, info);
        checkPostOnly(body.side, price, touchNow, 'ICEBERG slices are');
        if (body.side === 'buy') this.needDollars(userId, body.symbol, price.times(size));
        else this.needShares(userId, body.symbol, size);
        const tol = ex.price_tolerance_pct;
        return {
          ...base,
          price: str(price),
          size: str(size),
          clipSize: str(clip),
          tolerancePct: tol !== undefined ? new Dec(String(tol)).toFixed() : null,
          message: `ICEBERG: ${str(size)} shares at ${str(price)}, ${str(clip)} shown at a time`,
        };
      }
      case 'PEGGED': {
        if (body.side !== 'buy') throw errors.badRequest('PEGGED is a buy with a dollar budget: side must be "buy"');
        forbid(['size', 'price', 'execution'], 'is not used by PEGGED orders');
        if (
          body.budget_usdc !== undefined &&
          body.quote_amount !== undefined &&
          !dec(body.budget_usdc).eq(body.quote_amount)
        ) {
          throw errors.badRequest('budget_usdc and quote_amount (its alias) disagree: send one');
        }
        const budget = dec(body.budget_usdc ?? body.quote_amount!);
        if (budget.lte(0)) throw errors.badRequest('budget_usdc must be greater than 0');
        if (body.condition_id !== undefined && body.condition_id !== info.conditionId)
          throw errors.badRequest(`condition_id ${body.condition_id} is not the market of symbol ${body.symbol}`);
        if (body.outcome !== undefined && body.outcome !== info.outcome.toLowerCase())
          throw errors.badRequest(
            `outcome ${body.outcome} does not match symbol ${body.symbol} (${info.outcome.toLowerCase()})`,
          );
        const floor =
          body.price_floor !== undefined ? checkPrice('price_floor', String(body.price_floor), FINE_STEP) : null;
        const ceiling =
          body.price_ceiling !== undefined ? checkPrice('price_ceiling', String(body.price_ceiling), FINE_STEP) : null;
        if (floor && ceiling && floor.gt(ceiling))
          throw errors.badRequest(`price_floor ${str(floor)} is above price_ceiling ${str(ceiling)}`);
        this.needDollars(userId, body.symbol, budget);
        const input: StrategyInput = {
          ...base,
          quoteAmount: str(budget),
          offsetTicks: body.offset_ticks ?? 0,
          priceFloor: floor ? str(floor) : null,
          priceCeiling: ceiling ? str(ceiling) : null,
        };
        const peg = pegPrice(input, touchNow);
        // where the peg rests against the touch it follows: the message says why when it is elsewhere
        const target = touchNow.bid === null ? null : dec(touchNow.bid).minus(pegOffsetPrice(input));
        const where =
          peg === null
            ? ''
            : target !== null && dec(peg).lt(target)
              ? ` (below the best bid ${touchNow.bid}: capped ` +
                `by ${ceiling && dec(peg).eq(ceiling) ? 'price_ceiling' : "the market's tick"})`
              : target !== null && dec(peg).gt(target)
                ? ` (above the best bid minus the offset: raised ` +
                  `to ${floor && dec(peg).eq(floor) ? 'price_floor' : "the market's tick"})`
                : input.offsetTicks
                  ? ` (${input.offsetTicks} ticks of 0.001 from the touch)`
                  : ' (at the touch)';
        return {
          ...input,
          message:
            peg === null
              ? `PEGGED: $${str(budget)} budget, nothing resting yet: waiting for a best bid that ` +
                `puts the peg within price_floor / price_ceiling and below the ask`
              : `PEGGED: $${str(budget)} budget, resting at ${peg}${where}`,
        };
      }
      case 'BRACKET':
        throw errors.badRequest('BRACKET records come from take_profit / stop_loss on a buy LIMIT or MARKET entry');
    }
  }

  /**
   * Checks the `take_profit` / `stop_loss` brackets of a buy LIMIT or MARKET entry (spec 2.2
   * "Bracket rules") and builds the BRACKET strategy that will run them.
   * @param entry the checked entry order (its id links the two).
   * @returns the BRACKET actor input, or null when the request has no bracket.
   * @throws {DomainError} `INVALID_REQUEST`: a leg price off the range or tick, a leg size above
   *   the entry's or below the market minimum, a take-profit at or below the stop;
   *   `PRICE_IN_CENTS` (engine/risk.ts).
   */
  checkBrackets(userId: string, body: OrderRequest, entry: OrderInput): StrategyInput | null {
    if (!body.take_profit && !body.stop_loss) return null;
    const info = this.risk.market(body.symbol);
    const tick = info.tickSize;
    const legOf = (name: 'take_profit' | 'stop_loss', raw: { price: string; size?: string }): BracketLeg => {
      const price = checkPrice(`${name}.price`, raw.price, tick);
      let requested: string | null = null;
      if (raw.size !== undefined && !dec(raw.size).isZero()) {
        const size = checkShares(`${name}.size`, raw.size);
        if (entry.size !== null && size.gt(entry.size))
          throw errors.badRequest(`${name}.size ${str(size)} is more than the entry's ${entry.size} shares`);
        if (name === 'take_profit') checkRestingMinimum('take_profit.size', size, str(size), info);
        requested = str(size);
      }
      return {
        price: str(price),
        requestedSize: requested,
        size: null,
        order_id: null,
        id: null,
        status: 'WAITING',
        error: null,
      };
    };
    const tp = body.take_profit ? legOf('take_profit', body.take_profit) : undefined;
    const sl = body.stop_loss ? legOf('stop_loss', body.stop_loss) : undefined;
    if (tp && sl && !dec(tp.price).gt(sl.price))
      throw errors.badRequest(`take_profit.price ${tp.price} must be above stop_loss.price ${sl.price}`);
    const what = [tp && `take-profit at ${tp.price}`, sl && `stop-loss at ${sl.price}`].filter(Boolean).join(' and ');
    return {
      recordId: `stg_${entry.orderId.slice(4)}`,
      userId,
      type: 'BRACKET',
      side: 'sell',
      tokenId: body.symbol,
      tickSize: str(tick),
      minSize: str(info.minSize),
      price: sl?.price ?? tp!.price,
      size: null,
      quoteAmount: null,
      execution: {},
      warnings: [],
      message: `brackets: ${what}, placed when entry ${entry.orderId} ends, sized by what it filled`,
      clientOrderId: null,
      metadata: null,
      createdAtMs: entry.createdAtMs,
      touch: this.touchOf(body.symbol),
      entryOrderId: entry.orderId,
      legs: { ...(tp ? { take_profit: tp } : {}), ...(sl ? { stop_loss: sl } : {}) },
    };
  }
}
