import { randomUUID } from 'node:crypto';
import type { SnapshotFrom } from 'xstate';
import { ORDER_MACHINE_VERSION, ORDER_STATUS, orderMachine, type OrderContext, type OrderEvent, type OrderInput, type OrderState } from '../machines/order.js';
import type { OrderRequest } from '../schemas/orders.js';
import type { ActorHost } from './actor-host.js';
import type { Clock } from './clock.js';
import { dec, Dec, SIZE_DP, str } from './decimal.js';
import { ApiError, DuplicateKeyError, errors } from './errors.js';
import type { Logger } from './logger.js';
import type { ActorRecord, ActorRepository } from './store/actors.js';
import type { SimVenue } from './venue/sim-venue.js';
import type { VenueReport } from './venue/port.js';

export const ORDER_MACHINE_ID = 'order';
const MIN_MARKET_USD = dec(1);
const PRICE_MIN = dec('0.001');
const PRICE_MAX = dec('0.999');

type OrderSnapshot = SnapshotFrom<typeof orderMachine>;

/** The cents message of spec 2.1, to the letter. */
export function centsMessage(received: string): string {
  return `price must be a decimal probability 0.001–0.999; received ${received} — did you mean ${str(dec(received).div(100))}?`;
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
    private readonly venue: SimVenue,
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
      if (!r.orderId.startsWith('ord_')) return;
      this.track(r.orderId, this.host.send(r.orderId, eventOf(r)));
    });
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
    if (body.expiration !== undefined && body.expiration <= this.clock.now()) {
      const hint = body.expiration < 1e11 ? ` — did you mean ${body.expiration * 1000} (milliseconds)?` : '';
      throw errors.badRequest(`expiration must be a future time in Unix epoch milliseconds; received ${body.expiration}${hint}`);
    }
    const avail = this.venue.available(userId, body.symbol);
    if (body.side === 'buy') {
      const need = quote ?? price!.times(size!);
      if (avail.usd.lt(need)) {
        throw new ApiError(422, 'INSUFFICIENT_BALANCE', `this buy needs $${str(need)} pUSD; available $${str(avail.usd)}`);
      }
    } else {
      if (avail.shares.lt(size!)) {
        const reserved = avail.reservedShares.gt(0) ? `, of which ${str(avail.reservedShares)} reserved by open sells` : '';
        throw specError(422, `Not enough shares to place this sell — holding ${str(avail.held)}${reserved}`);
      }
      if (isMarket) {
        const bid = this.venue.touch(body.symbol).bid;
        if (bid && bid.times(size!).lt(MIN_MARKET_USD)) throw errors.badRequest(`a MARKET sell must be worth at least $1 at the best bid (${str(bid)}); size ${body.size} is worth $${str(bid.times(size!))}`);
      }
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
   * Places a checked order and waits until the venue has answered (fills of an IOC/FOK/MARKET
   * are in the returned record).
   * @throws {ApiError} 422 when the venue rejected it (the REJECTED order stays on record).
   */
  async place(partnerId: string, input: OrderInput, extra: Partial<OrderInput> = {}): Promise<ActorRecord> {
    await this.host.create<typeof orderMachine>(ORDER_MACHINE_ID, { id: input.orderId, input: { ...input, ...extra }, partnerId, ownerUserId: input.userId });
    await this.settle(input.orderId);
    const rec = this.host.recordOf(input.orderId) ?? (await this.actors.get(input.orderId))!;
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
    try {
      await this.host.create<typeof orderMachine>(ORDER_MACHINE_ID, { id: input.orderId, input, partnerId, ownerUserId: input.userId });
    } catch (err) {
      if (!(err instanceof DuplicateKeyError)) throw err;
    }
    await this.settle(input.orderId);
    return this.host.recordOf(input.orderId) ?? (await this.actors.get(input.orderId))!;
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
