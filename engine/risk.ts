/**
 * Pre-trade risk, in the spirit of NautilusTrader's RiskEngine: the one
 * place of the rules an order must pass before it reaches the venue — price range and tick, the
 * cents message of spec 2.1, minimum sizes, the $1 minimum notional, available pUSD and free
 * shares, post-only crossing, the GTD horizon and the TWAP slice rules (spec 2.1, 2.2.2, part 8).
 *
 * REST orders (engine/orders.ts `check`), strategies and brackets (engine/strategies/requests.ts `check`,
 * `checkBrackets`) and every child order a strategy places ({@link RiskEngine.checkChild}, from
 * `OrderService.placeChild`) use it. Rules the JSON Schema enforces (schemas/orders.ts: required
 * fields, decimal strings, sizes of at most 2 decimals, numeric bounds) are not repeated here.
 *
 * Every refusal is a {@link DomainError}: `PRICE_IN_CENTS`, `INVALID_REQUEST`,
 * `INSUFFICIENT_BALANCE`, `NOT_ENOUGH_SHARES`, `ORDER_CROSSES_BOOK`. Prices are decimal
 * probabilities, sizes shares, amounts dollars (pUSD); all arithmetic is decimal ({@link Dec}).
 * The simulated venue keeps its own guard (engine/venue/matching.ts, ledger.ts) with the wording
 * of this module.
 */
import type { Clock } from './clock.js';
import { dec, Dec, ONE, onTick, str } from './decimal.js';
import { DomainError, errors } from './errors.js';
import { crossesBook, type Touch } from './touch.js';
import type {
  Available,
  MarketInfo,
  MarketStatus,
  Side,
  TokenInfo,
  VenuePort,
  WalletOp,
  WalletOpRefusal,
} from './venue/port.js';

/** Lowest price of any price field, decimal probability (spec 2.1, part 8). */
export const PRICE_MIN = dec('0.001');
/** Highest price of any price field, decimal probability (spec 2.1, part 8). */
export const PRICE_MAX = dec('0.999');
/** The $1 minimum notional, dollars: a MARKET order, an ICEBERG slice, a TRAILING_BUY (spec 2.2.2, part 8). */
export const MIN_NOTIONAL_USD = dec(1);
/** Smallest share quantity an order can carry (hundredths of a share). */
export const MIN_SHARES = dec('0.01');
/**
 * How far ahead a GTD `expiration` may lie (README "Order rules"): 365 days from now. Beyond it
 * the order is refused; every accepted expiry is a valid timer date.
 */
export const EXPIRATION_HORIZON_MS = 365 * 24 * 60 * 60 * 1000;
/** TWAP bound (README): at most 1000 slices; `execution.duration_sec` ≤ 7 days is a schema rule. */
export const TWAP_MAX_SLICES = 1000;

// ── wording ───────────────────────────────

/**
 * The cents message of spec 2.1, to the letter, for any price field above 1 (spec 2.1 names
 * `price` whatever the field): `price must be a decimal probability 0.001–0.999; received <n> —
 * did you mean <n/100>?`. The hint is given only when n/100 is itself a price of 0.001–0.999
 * (1000 is not 10 cents away from a price: no hint).
 * @param received the value as the client sent it (decimal string).
 */
export function centsMessage(received: string): string {
  const base = `price must be a decimal probability 0.001–0.999; received ${received}`;
  const guess = dec(received).div(100);
  return guess.gte(PRICE_MIN) && guess.lte(PRICE_MAX) ? `${base} — did you mean ${str(guess)}?` : base;
}

/**
 * The one wording of a refusal for funds: `<what> needs $X pUSD; available $Y`
 * (dollars), used by the pre-trade checks and the venue alike.
 */
export function insufficientBalanceMessage(what: string, need: Dec, available: Dec): string {
  return `${what} needs $${str(need)} pUSD; available $${str(available)}`;
}

/**
 * Spec part 7's `Not enough shares to place this sell — holding <X>` (X = shares held), with the
 * part reserved by open sells named after it when there is one.
 */
export function notEnoughSharesMessage(held: Dec, reserved: Dec): string {
  return (
    `Not enough shares to place this sell — ` +
    `holding ${str(held)}${reserved.gt(0) ? `, of which ${str(reserved)} reserved by open sells` : ''}`
  );
}

// ── pure rules ────────────────────────────

/**
 * A price field (spec 2.1: every field of its first row): above 1 → the cents message; outside
 * 0.001–0.999 → refused; with a `step` (the market's tick; 0.000001 for fields not placed at the
 * venue as such), on that step and within the market's own bounds step…1−step.
 * @param field the field as the client names it (`price`, `take_profit.price`, `execution.price_ceiling`).
 * @param raw the value as sent (decimal string).
 * @returns the price.
 * @throws {DomainError} `PRICE_IN_CENTS` (above 1), `INVALID_REQUEST` (range, step, bounds).
 */
export function checkPrice(field: string, raw: string, step: Dec): Dec {
  const p = dec(raw);
  // the common case, memoized by the identity of the (memoized) parse and the tick
  if (onTick(p, step) && p.gte(PRICE_MIN) && p.lte(PRICE_MAX)) return p;
  if (p.gt(1)) throw new DomainError('PRICE_IN_CENTS', centsMessage(raw));
  if (p.lt(PRICE_MIN) || p.gt(PRICE_MAX))
    throw errors.badRequest(`${field} must be a decimal probability 0.001–0.999; received ${raw}`);
  if (!p.mod(step).isZero()) throw errors.badRequest(`${field} ${raw} is not on this market's tick size ${str(step)}`);
  if (p.lt(step) || p.gt(ONE.minus(step)))
    throw errors.badRequest(`${field} must lie between ${str(step)} and ${str(ONE.minus(step))} on this market`);
  return p;
}

/**
 * A trail distance as a decimal probability (`execution.trailing_offset`, spec 2.2.1): above 1 →
 * the cents message; else strictly between 0 and 1.
 * @throws {DomainError} `PRICE_IN_CENTS`, `INVALID_REQUEST`.
 */
export function checkTrailingOffset(raw: string): Dec {
  const o = dec(raw);
  if (o.gt(1)) throw new DomainError('PRICE_IN_CENTS', centsMessage(raw));
  if (o.lte(0) || o.gte(1))
    throw errors.badRequest('execution.trailing_offset must be a decimal probability between 0 and 1 (exclusive)');
  return o;
}

/**
 * A share quantity: greater than 0 (at most 2 decimals is the schema's `SharesString` pattern).
 * @returns the shares.
 * @throws {DomainError} `INVALID_REQUEST`.
 */
export function checkShares(field: string, raw: string): Dec {
  const s = dec(raw);
  if (s.lte(0)) throw errors.badRequest(`${field} must be greater than 0`);
  return s;
}

/**
 * The market's minimum for resting orders (spec 2.2.2 bracket rules, part 8: per market, usually
 * 5 shares).
 * @param shown the size as the message shows it.
 * @throws {DomainError} `INVALID_REQUEST`
 *   `<field> <size> is below this market's minimum of <min> shares for resting orders`.
 */
export function checkRestingMinimum(field: string, size: Dec, shown: string, market: Pick<TokenInfo, 'minSize'>): void {
  if (size.lt(market.minSize))
    throw errors.badRequest(
      `${field} ${shown} is below this market's minimum of ${str(market.minSize)} shares for resting orders`,
    );
}

/**
 * The $1 minimum of an amount in dollars (spec part 8: MARKET buy `quote_amount`; TRAILING_BUY
 * `quote_amount`).
 * @param what how the refusal names the order (`for a MARKET order`, or empty).
 * @throws {DomainError} `INVALID_REQUEST` `quote_amount must be at least $1<what>; received <raw>`.
 */
export function checkMinQuote(raw: string, what: string): Dec {
  const q = dec(raw);
  if (q.lt(MIN_NOTIONAL_USD)) throw errors.badRequest(`quote_amount must be at least $1${what}; received ${raw}`);
  return q;
}

/**
 * A MARKET sell must be worth at least $1 at the best bid (spec 2.2.2, part 8); without a bid
 * there is nothing to value it by (the venue then cancels it unfilled).
 * @throws {DomainError} `INVALID_REQUEST`.
 */
export function checkMarketSellMinimum(bid: Dec | undefined, size: Dec, shown: string): void {
  if (bid && bid.times(size).lt(MIN_NOTIONAL_USD)) {
    throw errors.badRequest(
      `a MARKET sell must be worth at least $1 at the best bid (${str(bid)}); ` +
        `size ${shown} is worth $${str(bid.times(size))}`,
    );
  }
}

/**
 * A MARKET order needs something to take (spec part 7, `NO_LIQUIDITY`): a buy needs an ask, a sell
 * a bid. Checked when the order is placed; a book emptied between the check and the venue still
 * ends the order CANCELED with nothing filled.
 * @param touch - best bid and ask now (undefined or null: that side is empty).
 * @throws {DomainError} `NO_LIQUIDITY` when that side of the book is empty.
 */
export function checkMarketLiquidity(side: Side, touch: { bid?: unknown; ask?: unknown }): void {
  const other = side === 'buy' ? touch.ask : touch.bid;
  if (other === undefined || other === null) {
    throw new DomainError(
      'NO_LIQUIDITY',
      `the book has no ${side === 'buy' ? 'ask' : 'bid'} for a MARKET ${side} to take; nothing was placed`,
    );
  }
}

/**
 * ICEBERG slices (spec 2.2.2, part 8): `clip_size` < `size`, each slice notional `clip_size` ×
 * `price` at least $1, and a clip rests, so at least the market's resting minimum.
 * @throws {DomainError} `INVALID_REQUEST`.
 */
export function checkIcebergClip(clip: Dec, size: Dec, price: Dec, market: Pick<TokenInfo, 'minSize'>): void {
  if (!clip.lt(size)) throw errors.badRequest(`execution.clip_size ${str(clip)} must be less than size ${str(size)}`);
  if (clip.times(price).lt(MIN_NOTIONAL_USD))
    throw errors.badRequest(
      `each ICEBERG slice must be worth at least $1: clip_size × price = $${str(clip.times(price))}`,
    );
  checkRestingMinimum('execution.clip_size', clip, str(clip), market);
}

/** Best bid and ask as decimal strings (null: that side is empty), as strategies see the touch (engine/touch.ts). */
export type TouchText = Touch;

/** The crossing rule lives in engine/touch.ts (pure, shared with machines/iceberg.ts). */
export { crossesBook };

/**
 * Post-only orders never take liquidity (spec 2.2.2 ICEBERG: `order crosses book`).
 * @param subject how the refusal names the order (`ICEBERG slices are`, `a post-only order is`).
 * @throws {DomainError} `ORDER_CROSSES_BOOK`.
 */
export function checkPostOnly(side: Side, price: Dec, touch: TouchText, subject: string): void {
  if (crossesBook(side, price, touch)) {
    throw new DomainError(
      'ORDER_CROSSES_BOOK',
      `${subject} post-only: price ${str(price)} would take liquidity ` +
        `(touch ${touch.bid ?? '-'} / ${touch.ask ?? '-'})`,
    );
  }
}

/**
 * The wallet covers an order: a buy needs `need` dollars of free pUSD, a sell `need` free shares
 * (held − reserved by open sells).
 * @param what how an `INSUFFICIENT_BALANCE` message names the order (`this buy`, `this strategy`).
 * @throws {DomainError} `INSUFFICIENT_BALANCE` (`<what> needs $X pUSD; available $Y`) or
 *   `NOT_ENOUGH_SHARES` (`Not enough shares to place this sell — holding <X>`), spec part 7.
 */
export function checkFunds(avail: Available, side: Side, need: Dec, what = 'this buy'): void {
  if (side === 'buy') {
    if (avail.usd.lt(need))
      throw new DomainError('INSUFFICIENT_BALANCE', insufficientBalanceMessage(what, need, avail.usd));
  } else if (avail.shares.lt(need)) {
    throw new DomainError('NOT_ENOUGH_SHARES', notEnoughSharesMessage(avail.held, avail.reservedShares));
  }
}

/**
 * A GTD expiry (spec 2.2 `expiration`, Unix epoch milliseconds) lies in the future and at most
 * {@link EXPIRATION_HORIZON_MS} (365 days) ahead. A value that reads as seconds (×1000 lands in
 * that window) or microseconds (÷1000 does) gets a "did you mean" hint; no other.
 * @param nowMs the current time, epoch ms.
 * @throws {DomainError} `INVALID_REQUEST`.
 */
export function checkExpiration(expiration: number, nowMs: number): void {
  const horizon = nowMs + EXPIRATION_HORIZON_MS;
  const ok = (t: number) => Number.isSafeInteger(t) && t > nowMs && t <= horizon;
  if (ok(expiration)) return;
  const hint = [expiration * 1000, Math.round(expiration / 1000)].find((t) => t !== expiration && ok(t));
  const hintText = hint !== undefined ? ` — did you mean ${hint} (milliseconds)?` : '';
  if (expiration <= nowMs)
    throw errors.badRequest(
      `expiration must be a future time in Unix epoch milliseconds; received ${expiration}${hintText}`,
    );
  throw errors.badRequest(
    `expiration must be at most 365 days ahead (at most ${horizon} in Unix ` +
      `epoch milliseconds); received ${expiration}${hintText}`,
  );
}

/** A TWAP's shape as the slice rules see it. */
export interface TwapPlan {
  /** Shares to trade in all. */
  size: Dec;
  /** `execution.duration_sec` and `execution.interval_sec` as sent (seconds; interval ≥ 10 is a schema rule). */
  durationSec: number;
  intervalSec: number;
  /** Number of slices (⌊duration / interval⌋, at least one: machines/twap.ts `twapSliceCount`). */
  slices: number;
  /** Shares of one slice (size / slices, rounded down to hundredths). */
  sliceSize: Dec;
  /** Passive slices rest on the book. */
  passive: boolean;
}

/**
 * TWAP slice rules (spec 2.2.2, part 8; README): `duration_sec` in whole milliseconds and at least
 * `interval_sec`; at most {@link TWAP_MAX_SLICES} slices; each slice at least 0.01 shares; a
 * passive slice (it rests) at least the market's resting minimum.
 * @throws {DomainError} `INVALID_REQUEST`.
 */
export function checkTwapDuration(durationSec: number, intervalSec: number): number {
  const durationMs = Math.round(durationSec * 1000);
  if (Math.abs(durationMs - durationSec * 1000) > 1e-6)
    throw errors.badRequest(
      `execution.duration_sec has at most 3 decimals (whole milliseconds); received ${durationSec}`,
    );
  if (durationSec < intervalSec)
    throw errors.badRequest(
      `execution.duration_sec (${durationSec}) must be at least execution.interval_sec (${intervalSec})`,
    );
  return durationMs;
}

/**
 * The slice rules of a TWAP whose duration passed {@link checkTwapDuration}.
 * @throws {DomainError} `INVALID_REQUEST`.
 */
export function checkTwapSlices(p: TwapPlan, market: Pick<TokenInfo, 'minSize'>): void {
  if (p.slices > TWAP_MAX_SLICES) {
    throw errors.badRequest(
      `a TWAP has at most ${TWAP_MAX_SLICES} slices: duration_sec ${p.durationSec} / ` +
        `interval_sec ${p.intervalSec} makes ${p.slices}; raise execution.interval_sec`,
    );
  }
  if (p.sliceSize.lt(MIN_SHARES)) {
    throw errors.badRequest(
      `each TWAP slice must be at least 0.01 shares: ${str(p.size)} shares over ${p.slices} slices is ` +
        `less; send a larger size or fewer slices (raise execution.interval_sec)`,
    );
  }
  if (p.passive && p.sliceSize.lt(market.minSize)) {
    throw errors.badRequest(
      `passive TWAP slices rest on the book, so each must be at least this market's minimum ` +
        `of ${str(market.minSize)} shares: ${str(p.size)} shares over ${p.slices} slices ` +
        `is ${str(p.sliceSize)} per slice; send a larger size or fewer slices`,
    );
  }
}

// ── the engine ────────────────────────────

/** A concrete CLOB order as risk checks it (the order actor's input, engine/orders.ts `OrderInput`). */
export interface RiskOrder {
  userId: string;
  tokenId: string;
  side: Side;
  /** Limit price (decimal probability); null for a MARKET order. */
  price: string | null;
  /** Shares; null for a MARKET buy. */
  size: string | null;
  /** Dollars of a MARKET buy. */
  quoteAmount: string | null;
  postOnly?: boolean;
}

/** The venue reads risk needs (market data and ledger reads of {@link VenuePort}). */
export type RiskVenue = Pick<VenuePort, 'token' | 'touch' | 'available'> & Partial<Pick<VenuePort, 'marketStatus'>>;

/**
 * A market that closed or resolved takes no new orders: every order,
 * strategy request and child order on one of its tokens is refused.
 * @throws {DomainError} `MARKET_CLOSED` (422) naming the market and, once resolved, the winner.
 */
export function checkMarketOpen(
  info: Pick<TokenInfo, 'conditionId' | 'tokenId'>,
  status: MarketStatus | undefined,
): void {
  if (!status?.closed) return;
  const why = status.resolved ? `resolved (winning token ${status.winningTokenId})` : 'closed';
  throw new DomainError(
    'MARKET_CLOSED',
    `market ${info.conditionId} of token ${info.tokenId} is ${why}: it takes no new orders`,
  );
}

/**
 * The pre-trade checks that read the venue (markets, the touch, the wallet). One per service,
 * shared by the order and strategy services.
 */
export class RiskEngine {
  constructor(
    private readonly venue: RiskVenue,
    private readonly clock: Clock,
  ) {}

  /**
   * The market of `symbol`, open for new orders (every placement path reads it first: orders,
   * strategy requests, brackets, child orders). Its `tickSize` is the current tick (a tick-size
   * change applies at once).
   * @throws {DomainError} `INVALID_REQUEST` when the venue does not list it; `MARKET_CLOSED` when
   *   its market closed or resolved ({@link checkMarketOpen}).
   */
  market(symbol: string): TokenInfo {
    const info = this.venue.token(symbol);
    if (!info)
      throw errors.badRequest(`symbol ${symbol} is not an outcome token of this venue (see GET /v2/trade/markets)`);
    checkMarketOpen(info, this.venue.marketStatus?.(info.conditionId));
    return info;
  }

  /**
   * The current tick of `tokenId` (decimal string, decimal probability), or undefined for an
   * unknown token: a tick-size change applies at once, so strategies price their
   * children on it rather than on the tick they were created with.
   */
  tickOf(tokenId: string): string | undefined {
    const info = this.venue.token(tokenId);
    return info ? str(info.tickSize) : undefined;
  }

  /** The touch of `tokenId` as strategies see it (decimal strings, null for an empty side). */
  touch(tokenId: string): TouchText {
    const t = this.venue.touch(tokenId);
    return { bid: t.bid ? str(t.bid) : null, ask: t.ask ? str(t.ask) : null };
  }

  /** {@link checkExpiration} against the clock. @throws {DomainError} `INVALID_REQUEST`. */
  expiration(expiration: number): void {
    checkExpiration(expiration, this.clock.now());
  }

  /**
   * {@link checkFunds} against the wallet of `userId`: a buy needs `need` dollars, a sell `need` shares.
   * @throws {DomainError} `INSUFFICIENT_BALANCE`, `NOT_ENOUGH_SHARES`.
   */
  funds(userId: string, tokenId: string, side: Side, need: Dec, what = 'this buy'): void {
    checkFunds(this.venue.available(userId, tokenId), side, need, what);
  }

  /**
   * The wallet check of a CLOB order: a buy needs its notional (limit price × size, or a MARKET
   * buy's quote amount) in free pUSD, a sell its size in free shares.
   * @throws {DomainError} `INSUFFICIENT_BALANCE`, `NOT_ENOUGH_SHARES`.
   */
  orderFunds(o: RiskOrder): void {
    const need =
      o.side === 'sell'
        ? dec(o.size!)
        : o.quoteAmount !== null
          ? dec(o.quoteAmount)
          : dec(o.price!).times(dec(o.size!));
    this.funds(o.userId, o.tokenId, o.side, need);
  }

  /**
   * The check of a child order a strategy decided on (already priced and sized by the engine):
   * price range, tick and market bounds, a size above 0, post-only crossing, and the wallet. The
   * request-level minimums (resting minimum, $1 notional) were checked on the strategy's request;
   * a strategy's remainders (a last clip, a stop's size) are not refused for them here.
   * @throws {DomainError} `INVALID_REQUEST`, `ORDER_CROSSES_BOOK`, `INSUFFICIENT_BALANCE`, `NOT_ENOUGH_SHARES`.
   */
  checkChild(o: RiskOrder): void {
    const info = this.market(o.tokenId);
    const price = o.price === null ? null : checkPrice('price', o.price, info.tickSize);
    if (o.size !== null) checkShares('size', o.size);
    if (o.postOnly && price) checkPostOnly(o.side, price, this.touch(o.tokenId), 'a child order is');
    this.orderFunds(o);
  }
}

/**
 * The code a strategy machine sees in `order.refused` for a risk refusal: the venue's vocabulary
 * of `venue.rejected` (machines/strategy-kit.ts `CROSSES_BOOK`), so that a child refused by risk
 * is handled exactly like one the venue refused.
 */
export function refusalCode(err: DomainError): string {
  switch (err.code) {
    case 'ORDER_CROSSES_BOOK':
      return 'order crosses book';
    case 'INSUFFICIENT_BALANCE':
      return 'INSUFFICIENT_BALANCE';
    case 'NOT_ENOUGH_SHARES':
      return 'INSUFFICIENT_SHARES';
    case 'MARKET_CLOSED':
      return 'market_closed';
    default:
      return 'invalid_request';
  }
}

// ── wallet operations ─────────────────────

/**
 * A token amount in human units (dollars for pUSD; dollars = full sets for split and merge):
 * greater than 0 with at most `decimals` decimals (pUSD and outcome tokens have 6).
 * @returns the amount.
 * @throws {DomainError} `INVALID_REQUEST`.
 */
export function checkTokenAmount(field: string, raw: string, decimals: number): Dec {
  const a = dec(raw);
  if (a.lte(0)) throw errors.badRequest(`${field} must be greater than 0`);
  if (a.decimalPlaces() > decimals) throw errors.badRequest(`${field} has more than ${decimals} decimals: ${raw}`);
  return a;
}

/**
 * The domain error of a wallet operation the venue refuses (engine/venue/port.ts
 * {@link WalletOpRefusal}): `INSUFFICIENT_BALANCE`; `NOT_ENOUGH_SHARES` (`Not enough shares to
 * merge …`); `MARKET_NOT_RESOLVED`; `NOTHING_TO_REDEEM`; `SHARES_RESERVED`; `NOT_FOUND` for an
 * unlisted market; else `VENUE_REJECTED` with the venue's code.
 */
export function walletOpError(r: WalletOpRefusal): DomainError {
  switch (r.error) {
    case 'INSUFFICIENT_BALANCE':
    case 'MARKET_NOT_RESOLVED':
    case 'NOTHING_TO_REDEEM':
    case 'SHARES_RESERVED':
    case 'MARKET_CLOSED':
    case 'COMBO_NOT_RESOLVED':
    case 'COMBO_LOST':
      return new DomainError(r.error, r.reason);
    case 'INSUFFICIENT_SHARES':
      return new DomainError('NOT_ENOUGH_SHARES', r.reason);
    case 'UNKNOWN_MARKET':
      return errors.notFound(r.reason);
    default:
      return new DomainError('VENUE_REJECTED', r.reason, { venueError: r.error });
  }
}

/**
 * The pre-check of a wallet operation: the venue's own rule, read without changing anything (the
 * wallet service runs it in the user's placement queue, right before the operation).
 * @throws {DomainError} see {@link walletOpError}.
 */
export function checkWalletOp(venue: Pick<VenuePort, 'walletOpRefusal'>, op: WalletOp): void {
  const r = venue.walletOpRefusal(op);
  if (r) throw walletOpError(r);
}

/**
 * The legs of a combo quote (spec 2.5, 8): 2 to 10 YES outcome tokens of distinct, open markets.
 * A market's YES token is its first outcome (`Yes`, or `Up` for the capture's up/down markets).
 * @returns each leg's token and market, in the order sent.
 * @throws {DomainError} `INVALID_REQUEST` naming the leg (a duplicate, the market's other outcome, a
 *   second leg of one market), `NOT_FOUND` (a token the venue does not list), `MARKET_CLOSED` (a
 *   market closed or resolved).
 */
export function checkComboLegs(
  venue: Pick<VenuePort, 'token' | 'market' | 'marketStatus'>,
  legIds: readonly string[],
): { tokenId: string; market: MarketInfo }[] {
  const seen = new Map<string, number>();
  const markets = new Map<string, number>();
  return legIds.map((id, i) => {
    const leg = `leg_position_ids[${i}] ${id}`;
    if (seen.has(id)) throw errors.badRequest(`${leg} repeats leg_position_ids[${seen.get(id)}]`);
    seen.set(id, i);
    const t = venue.token(id);
    if (!t) throw errors.notFound(`${leg} is not an outcome token of this venue (see GET /v2/trade/markets)`);
    const market = venue.market(t.conditionId)!;
    const yes = market.tokens[0]!;
    if (yes.tokenId !== id)
      throw errors.badRequest(
        `${leg} is the ${t.outcome} outcome of its market: a combo leg is a YES position ` +
          `(the ${yes.outcome} token ${yes.tokenId})`,
      );
    if (markets.has(t.conditionId))
      throw errors.badRequest(
        `${leg} is of the same market (${t.conditionId}) as leg_position_ids[${markets.get(t.conditionId)}]: ` +
          'each leg must be of a distinct market',
      );
    markets.set(t.conditionId, i);
    const s = venue.marketStatus(t.conditionId);
    if (s?.closed)
      throw new DomainError(
        'MARKET_CLOSED',
        `${leg}: market ${t.conditionId} is ${s.resolved ? 'resolved' : 'closed'} and takes no new combos`,
      );
    return { tokenId: id, market };
  });
}
