import { randomUUID } from 'node:crypto';
import type { SnapshotFrom } from 'xstate';
import { ORDER_MACHINE_VERSION, ORDER_STATUS, orderMachine, type OrderContext, type OrderEvent, type OrderInput, type OrderState } from '../machines/order.js';
import type { OrderRequest } from '../schemas/orders.js';
import type { ActorHost } from './actor-host.js';
import type { Clock } from './clock.js';
import { dec, Dec, SIZE_DP, str } from './decimal.js';
import { ApiError, DuplicateKeyError, errors, UnknownActorError } from './errors.js';
import type { Logger } from './logger.js';
import type { ActorRecord, ActorRepository } from './store/actors.js';
import { insufficientBalanceMessage, notEnoughSharesMessage } from './venue/ledger.js';
import type { VenuePort, VenueReport } from './venue/port.js';

export { insufficientBalanceMessage, notEnoughSharesMessage };

export const ORDER_MACHINE_ID = 'order';
const MIN_MARKET_USD = dec(1);
const PRICE_MIN = dec('0.001');
const PRICE_MAX = dec('0.999');
/**
 * How far ahead a GTD `expiration` may lie (README "Order rules"): 365 days from now. Beyond it
 * the order is refused with 400; every accepted expiry is a valid timer date.
 */
export const EXPIRATION_HORIZON_MS = 365 * 24 * 60 * 60 * 1000;

type OrderSnapshot = SnapshotFrom<typeof orderMachine>;

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

/** 400 whose `error` is one of the spec's specific strings (also given as `message`). */
function specError(status: number, text: string): ApiError {
  return new ApiError(status, text, text);
}

/**
 * The REST view of an order (spec 2.3 fields and the open-orders row), derived from its snapshot.
 */
export function orderView(s: OrderSnapshot, meta: { id: string; status: string; createdAtMs: number; updatedAtMs: number; revision: number }): Record<string, unknown> {
  const c = s.context as OrderContext;
  const final = s.status !== 'active';
  const filled = dec(c.filledSize);
  const remaining = c.size === null ? (final ? '0' : null) : final ? '0' : str(dec(c.size).minus(filled));
  const view: Record<string, unknown> = {
    type: c.isTakeProfit ? 'TAKE_PROFIT' : c.type,
    order_id: meta.id,
    record_id: c.parentId ?? null,
    status: meta.status,
    side: c.side,
    symbol: c.tokenId,
    price: c.price,
    size: c.size,
    quote_amount: c.quoteAmount,
    filled_size: str(filled),
    remaining_size: remaining,
    matched_amount: c.matchedAmount,
    avg_price: filled.gt(0) ? str(dec(c.matchedAmount).div(filled).toDecimalPlaces(6)) : null,
    builder_code_used: null,
    time_in_force: c.expiresAtMs !== null ? 'GTD' : c.type === 'MARKET' ? 'IOC' : c.timeInForce,
    expiration: c.expiresAtMs,
    client_order_id: c.clientOrderId,
    metadata: c.metadata,
    is_stop_loss: c.isStopLoss,
    is_take_profit: c.isTakeProfit,
    bracket_id: c.bracketId ?? null,
    created_at: meta.createdAtMs,
    updated_at: meta.updatedAtMs,
    revision: meta.revision,
  };
  if (c.reason) view.message = c.reason;
  return view;
}

/** The machine event of a venue report. */
function eventOf(r: VenueReport): OrderEvent {
  switch (r.type) {
    case 'venue.accepted':
      return { type: r.type, resting: r.resting };
    case 'venue.filled':
      return { type: r.type, tradeId: r.tradeId, price: r.price, size: r.size, liquidity: r.liquidity, completes: r.completes };
    case 'venue.canceled':
      return { type: r.type, reason: r.reason };
    case 'venue.expired':
      return { type: r.type };
    case 'venue.rejected':
      return { type: r.type, error: r.error, reason: r.reason };
  }
}

/**
 * Hosts CLOB order actors (issue 3): checks an order against the market and the wallet (a
 * refused order changes nothing), creates its actor, carries its commands to the venue and the
 * venue's reports back, and reconciles live orders with the venue at start-up.
 */
export class OrderService {
  /** Venue commands in flight per order: {@link settle} waits for them. */
  private readonly inFlight = new Map<string, Set<Promise<unknown>>>();

  constructor(
    private readonly host: ActorHost,
    private readonly actors: ActorRepository,
    private readonly venue: VenuePort,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {
    const track = (id: string, p: Promise<unknown>) => this.track(id, p);
    host.register({
      machineId: ORDER_MACHINE_ID,
      version: ORDER_MACHINE_VERSION,
      kind: 'order',
      logic: orderMachine.provide({
        actions: {
          submitToVenue: (_, { order }) => track(order.orderId, venue.submit(order)),
          cancelAtVenue: (_, { orderId }) => track(orderId, venue.cancel(orderId)),
          expireAtVenue: (_, { orderId }) => track(orderId, venue.expire(orderId)),
        },
      }),
      statusOf: (s) => ORDER_STATUS[s.value as OrderState],
      viewOf: orderView,
    });
    // once an order's actor has recorded its end, the venue need not remember the order
    host.on('changed', (c) => {
      if (c.record.final && c.record.kind === 'order') venue.release(c.record._id);
    });
    venue.onReport((r) => {
      if (r.orderId.startsWith('ord_')) this.deliverReport(r);
    });
  }

  /** Venue reports on their way to each order's actor, in the venue's order. */
  private readonly reportQueues = new Map<string, VenueReport[]>();
  /** Orders whose report delivery is failing and being retried. */
  private readonly failingReports = new Set<string>();

  /** Orders whose venue reports cannot reach their actor right now (retried; for /healthz). */
  get failingDeliveries(): number {
    return this.failingReports.size;
  }

  /**
   * Hands a venue report to its order's actor. Reports of one order go in the venue's order; one
   * whose delivery fails (the actor's write failed) is retried with backoff, the ones after it
   * waiting, so a fill is never lost (issue 12: failures become state, never only a log line).
   * Redelivery is harmless: the order machine ignores a fill whose trade id it has.
   */
  private deliverReport(r: VenueReport): void {
    const queued = this.reportQueues.get(r.orderId);
    if (queued) {
      queued.push(r);
      return;
    }
    const q = [r];
    this.reportQueues.set(r.orderId, q);
    this.track(r.orderId, this.drainReports(r.orderId, q));
  }

  private async drainReports(orderId: string, q: VenueReport[]): Promise<void> {
    try {
      for (let attempt = 1; q.length > 0; ) {
        try {
          await this.host.send(orderId, eventOf(q[0]!));
          q.shift();
          attempt = 1;
          this.failingReports.delete(orderId);
        } catch (err) {
          if (err instanceof UnknownActorError) {
            this.log.error({ err, orderId, report: q.shift() }, 'venue report for an order the service does not know: dropped');
            continue;
          }
          if (attempt === 1 || attempt % 20 === 0) this.log.error({ err, orderId, attempt }, 'venue report not delivered to its order; retrying');
          this.failingReports.add(orderId);
          await new Promise((res) => setTimeout(res, Math.min(5000, 50 * 2 ** Math.min(attempt - 1, 10))));
          attempt++;
        }
      }
    } finally {
      this.failingReports.delete(orderId);
      if (this.reportQueues.get(orderId) === q) this.reportQueues.delete(orderId);
    }
  }

  private track(id: string, p: Promise<unknown>): void {
    let set = this.inFlight.get(id);
    if (!set) this.inFlight.set(id, (set = new Set()));
    const done = p.catch((err) => this.log.error({ err, orderId: id }, 'order command failed')).finally(() => {
      set!.delete(done);
      if (set!.size === 0 && this.inFlight.get(id) === set) this.inFlight.delete(id);
    });
    set.add(done);
  }

  /** Resolves when order `id` has nothing queued or in flight (its response is then final). */
  async settle(id: string): Promise<void> {
    for (;;) {
      await this.host.settle(id);
      const set = this.inFlight.get(id);
      if (!set?.size) {
        await this.host.settle(id);
        if (!this.inFlight.get(id)?.size) return;
        continue;
      }
      await Promise.all([...set]);
    }
  }

  /**
   * Validates a LIMIT or MARKET order against spec 2.1–2.2.2, the market and the wallet.
   * @returns the actor input.
   * @throws {ApiError} 400 (range, cents, tick, minimum size, time in force), 422 (balance,
   *   `Not enough shares to place this sell — holding <X>`). Brackets are checked by the
   *   strategy service ({@link StrategyService.checkBrackets}).
   */
  check(userId: string, body: OrderRequest): OrderInput {
    const info = this.venue.token(body.symbol);
    if (!info) throw errors.badRequest(`symbol ${body.symbol} is not an outcome token of this venue (see GET /v2/trade/markets)`);
    const isMarket = body.type === 'MARKET';
    const forbid = (field: string, why: string) => {
      if ((body as Record<string, unknown>)[field] !== undefined) throw errors.badRequest(`${field} ${why}`);
    };
    if ((body.take_profit || body.stop_loss) && body.side !== 'buy') throw errors.badRequest('take_profit / stop_loss brackets attach to buy LIMIT or MARKET entries only');
    for (const f of ['condition_id', 'outcome', 'offset_ticks', 'budget_usdc', 'price_floor', 'price_ceiling', 'execution']) forbid(f, `is not used by ${body.type} orders`);
    if (body.time_in_force !== undefined && body.expiration !== undefined) {
      throw errors.badRequest('time_in_force cannot be combined with expiration: an order with expiration is GTD');
    }
    let price: Dec | null = null;
    if (isMarket) {
      forbid('price', 'is not used by MARKET orders (they take the book; use LIMIT with IOC for a price cap)');
      forbid('time_in_force', 'is not used by MARKET orders: they always behave as IOC');
      forbid('expiration', 'is not used by MARKET orders');
    } else {
      if (body.price === undefined) throw errors.badRequest('price is required for LIMIT orders');
      price = dec(body.price);
      if (price.gt(1)) throw specError(400, centsMessage(body.price));
      if (price.lt(PRICE_MIN) || price.gt(PRICE_MAX)) throw errors.badRequest(`price must be a decimal probability 0.001–0.999; received ${body.price}`);
      if (!price.mod(info.tickSize).isZero()) throw errors.badRequest(`price ${body.price} is not on this market's tick size ${str(info.tickSize)}`);
      if (price.lt(info.tickSize) || price.gt(dec(1).minus(info.tickSize))) throw errors.badRequest(`price must lie between ${str(info.tickSize)} and ${str(dec(1).minus(info.tickSize))} on this market`);
    }
    let size: Dec | null = null;
    let quote: Dec | null = null;
    if (isMarket && body.side === 'buy') {
      forbid('size', 'is not used by a MARKET buy: send quote_amount (dollars)');
      if (body.quote_amount === undefined) throw errors.badRequest('quote_amount (dollars) is required for a MARKET buy');
      quote = dec(body.quote_amount);
      if (quote.lt(MIN_MARKET_USD)) throw errors.badRequest(`quote_amount must be at least $1 for a MARKET order; received ${body.quote_amount}`);
      if (quote.decimalPlaces() > 6) throw errors.badRequest('quote_amount has at most 6 decimals (pUSD)');
    } else {
      forbid('quote_amount', `is not used by a ${body.type} ${body.side}: send size (shares)`);
      if (body.size === undefined) throw errors.badRequest(`size (shares) is required for a ${body.type} ${body.side}`);
      size = dec(body.size);
      if (size.lte(0)) throw errors.badRequest('size must be greater than 0');
      if (size.decimalPlaces() > SIZE_DP) throw errors.badRequest(`size has at most ${SIZE_DP} decimals`);
    }
    const tif = isMarket ? 'IOC' : body.expiration !== undefined ? 'GTD' : (body.time_in_force ?? 'GTC');
    const resting = tif === 'GTC' || tif === 'GTD';
    if (resting && size!.lt(info.minSize)) {
      throw errors.badRequest(`size ${body.size} is below this market's minimum of ${str(info.minSize)} shares for resting orders`);
    }
    if (body.expiration !== undefined) this.checkExpiration(body.expiration);
    this.checkFunds({ userId, tokenId: body.symbol, side: body.side, price: price ? str(price) : null, size: size ? str(size) : null, quoteAmount: quote ? str(quote) : null });
    if (body.side === 'sell' && isMarket) {
      const bid = this.venue.touch(body.symbol).bid;
      if (bid && bid.times(size!).lt(MIN_MARKET_USD)) throw errors.badRequest(`a MARKET sell must be worth at least $1 at the best bid (${str(bid)}); size ${body.size} is worth $${str(bid.times(size!))}`);
    }
    return {
      orderId: `ord_${randomUUID()}`,
      userId,
      tokenId: body.symbol,
      side: body.side,
      type: isMarket ? 'MARKET' : 'LIMIT',
      price: price ? str(price) : null,
      size: size ? str(size) : null,
      quoteAmount: quote ? str(quote) : null,
      timeInForce: tif,
      expiresAtMs: body.expiration ?? null,
      clientOrderId: body.client_order_id ?? null,
      metadata: body.metadata ?? null,
      createdAtMs: this.clock.now(),
    };
  }

  /**
   * A GTD expiry (spec 2.2 `expiration`, Unix epoch milliseconds) must lie in the future and at
   * most {@link EXPIRATION_HORIZON_MS} (365 days) ahead. A value that reads as seconds (×1000
   * lands in that window) or microseconds (÷1000 does) gets a "did you mean" hint; no other.
   * @throws {ApiError} 400 `invalid_request`.
   */
  private checkExpiration(expiration: number): void {
    const now = this.clock.now();
    const horizon = now + EXPIRATION_HORIZON_MS;
    const ok = (t: number) => Number.isSafeInteger(t) && t > now && t <= horizon;
    if (ok(expiration)) return;
    const hint = [expiration * 1000, Math.round(expiration / 1000)].find((t) => t !== expiration && ok(t));
    const hintText = hint !== undefined ? ` — did you mean ${hint} (milliseconds)?` : '';
    if (expiration <= now) throw errors.badRequest(`expiration must be a future time in Unix epoch milliseconds; received ${expiration}${hintText}`);
    throw errors.badRequest(`expiration must be at most 365 days ahead (at most ${horizon} in Unix epoch milliseconds); received ${expiration}${hintText}`);
  }

  /**
   * The wallet check of an order: a buy needs its notional (LIMIT price × size, MARKET
   * quote_amount) in free pUSD, a sell its size in free shares.
   * @throws {ApiError} 422 `INSUFFICIENT_BALANCE` (`this buy needs $X pUSD; available $Y`), or
   *   422 `Not enough shares to place this sell — holding <X>` (spec part 7).
   */
  private checkFunds(o: Pick<OrderInput, 'userId' | 'tokenId' | 'side' | 'price' | 'size' | 'quoteAmount'>): void {
    const avail = this.venue.available(o.userId, o.tokenId);
    if (o.side === 'buy') {
      const need = o.quoteAmount !== null ? dec(o.quoteAmount) : dec(o.price!).times(o.size!);
      if (avail.usd.lt(need)) throw new ApiError(422, 'INSUFFICIENT_BALANCE', insufficientBalanceMessage('this buy', need, avail.usd));
    } else if (avail.shares.lt(o.size!)) {
      throw specError(422, notEnoughSharesMessage(avail.held, avail.reservedShares));
    }
  }

  /** Tail of each user's queue of order placements (see {@link exclusive}). */
  private readonly userQueues = new Map<string, Promise<unknown>>();

  /**
   * Runs `fn` alone among the order placements of `userId` (REST orders and strategies' child
   * orders): the wallet check, the actor's creation and the venue's reservation happen as one
   * step, so concurrent requests cannot all pass the check and then be refused by the venue
   * (issue 12 defect 8). `fn` must not wait for another placement of the same user.
   */
  private exclusive<T>(userId: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.userQueues.get(userId) ?? Promise.resolve();
    const run = prev.then(fn);
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    this.userQueues.set(userId, tail);
    void tail.then(() => {
      if (this.userQueues.get(userId) === tail) this.userQueues.delete(userId);
    });
    return run;
  }

  /**
   * Places a checked order and waits until the venue has answered (fills of an IOC/FOK/MARKET
   * are in the returned record). The wallet is checked again in the user's placement queue, so a
   * refused request changes nothing (activity included).
   * @param beforeCreate runs in the queue after that check, before the order exists (the BRACKET
   *   record of an entry with brackets is created there).
   * @throws {ApiError} 422 `INSUFFICIENT_BALANCE` / `Not enough shares …` (nothing created); 422
   *   when the venue rejected it for another reason (the REJECTED order stays on record).
   */
  async place(partnerId: string, input: OrderInput, extra: Partial<OrderInput> = {}, beforeCreate?: () => Promise<void>): Promise<ActorRecord> {
    const rec = await this.exclusive(input.userId, async () => {
      this.checkFunds(input);
      if (beforeCreate) await beforeCreate();
      await this.host.create<typeof orderMachine>(ORDER_MACHINE_ID, { id: input.orderId, input: { ...input, ...extra }, partnerId, ownerUserId: input.userId });
      await this.settle(input.orderId);
      return this.host.recordOf(input.orderId) ?? (await this.actors.get(input.orderId))!;
    });
    if (rec.status === 'REJECTED') {
      const c = JSON.parse(rec.snapshot).context as OrderContext;
      const text = c.error === 'INSUFFICIENT_SHARES' ? (c.reason ?? 'Not enough shares to place this sell') : (c.error ?? 'rejected');
      throw new ApiError(422, text, c.reason ?? undefined);
    }
    return rec;
  }

  /**
   * Places an order a strategy decided on (already sized and priced), with a deterministic id.
   * Placing the same id twice is harmless: the second call finds the first.
   * @returns the order's record after the venue answered.
   */
  async placeChild(partnerId: string, input: OrderInput): Promise<ActorRecord> {
    // in the user's placement queue, so that it cannot take the funds a REST order was just checked against
    return this.exclusive(input.userId, async () => {
      try {
        await this.host.create<typeof orderMachine>(ORDER_MACHINE_ID, { id: input.orderId, input, partnerId, ownerUserId: input.userId });
      } catch (err) {
        if (!(err instanceof DuplicateKeyError)) throw err;
      }
      await this.settle(input.orderId);
      return this.host.recordOf(input.orderId) ?? (await this.actors.get(input.orderId))!;
    });
  }

  /**
   * Cancels order `orderId` for a strategy; nothing happens when it is already done.
   * @returns the order's record as it was found (before the cancel took effect), or null when
   *   no such order exists (it was never placed): the caller tells the strategy.
   */
  async cancelChild(orderId: string): Promise<ActorRecord | null> {
    const rec = this.host.recordOf(orderId) ?? (await this.actors.get(orderId));
    if (!rec || rec.final) return rec;
    await this.host.send(orderId, { type: 'order.cancel' });
    return rec;
  }

  /**
   * Cancels an order of `userId`.
   * @throws {ApiError} 404 for an order not of this user; 409 when it is already done.
   */
  async cancel(userId: string, orderId: string): Promise<ActorRecord> {
    const rec = await this.actors.get(orderId);
    if (!rec || rec.kind !== 'order' || rec.ownerUserId !== userId) throw errors.notFound(`no order ${orderId}`);
    if (rec.final) throw new ApiError(409, 'conflict', `order ${orderId} is already ${rec.status}`);
    await this.host.send(orderId, { type: 'order.cancel' });
    await this.settle(orderId);
    return this.host.recordOf(orderId) ?? (await this.actors.get(orderId))!;
  }

  /**
   * Start-up reconciliation: every live order learns what the venue did while it was not
   * listening (fills are deduplicated by trade id), or is submitted again if the venue never saw it.
   */
  async reconcile(): Promise<number> {
    const live = await this.actors.find({ kind: 'order', final: false, quarantine: null });
    for (const rec of live) {
      const state = this.venue.orderState(rec._id);
      if (!state) {
        this.track(rec._id, this.host.send(rec._id, { type: 'venue.unknown' }));
      } else {
        if (state.status !== 'rejected') this.track(rec._id, this.host.send(rec._id, { type: 'venue.accepted', resting: state.status === 'open' }));
        for (const f of state.fills) this.track(rec._id, this.host.send(rec._id, eventOf(f)));
        if (state.final) this.track(rec._id, this.host.send(rec._id, eventOf(state.final)));
      }
      await this.settle(rec._id);
    }
    return live.length;
  }
}
