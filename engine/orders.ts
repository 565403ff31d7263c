import { InFlight } from './in-flight.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { backoffMs } from './backoff.js';
import { randomUUID } from 'node:crypto';
import type { SnapshotFrom } from 'xstate';
import {
  ORDER_MACHINE_VERSION,
  ORDER_RESTORABLE_VERSIONS,
  ORDER_SNAPSHOT_FORM,
  ORDER_STATUS,
  orderMachine,
  USER_CANCEL,
  type OrderContext,
  type OrderEvent,
  type OrderFill,
  type OrderInput,
  type OrderState,
} from '../machines/order.js';
import type { OrderRequest } from '../schemas/orders.js';
import { holdQueues, type ActorBatch, type ActorHost } from './actor-host.js';
import type { HistoryRecorder } from './data/recorder.js';
import type { Clock } from './clock.js';
import { dec, Dec, str, ZERO } from './decimal.js';
import { DomainError, DuplicateKeyError, errors, UnknownActorError } from './errors.js';
import type { Logger } from './logger.js';
import {
  checkMarketLiquidity,
  checkMarketSellMinimum,
  checkMinQuote,
  checkPrice,
  checkRestingMinimum,
  checkShares,
  RiskEngine,
} from './risk.js';
import type { ActorRecord, ActorRepository } from './store/actors.js';
import type { CancelReason, VenuePort, VenueReport } from './venue/port.js';
import { isOrderFinal, OPEN_STATUSES as OPEN_ORDER_STATUSES, venueOrderOf } from '../machines/order.js';

/** Machine id of the CLOB order actors. */
export const ORDER_MACHINE_ID = 'order';

type OrderSnapshot = SnapshotFrom<typeof orderMachine>;

/**
 * The REST view of an order (spec 2.3 fields and the open-orders row), derived from its snapshot.
 */
export function orderView(
  s: OrderSnapshot,
  meta: { id: string; status: string; createdAtMs: number; updatedAtMs: number; revision: number },
): Record<string, unknown> {
  const c = s.context as OrderContext;
  const final = isOrderFinal(s);
  // nothing filled (most orders, most of the time): no decimal arithmetic
  const unfilled = c.filledSize === '0';
  const filled = unfilled ? ZERO : dec(c.filledSize);
  const remaining =
    c.size === null ? (final ? '0' : null) : final ? '0' : unfilled ? str(dec(c.size)) : str(dec(c.size).minus(filled));
  const view: Record<string, unknown> = {
    type: orderTypeOf(c),
    order_id: meta.id,
    record_id: c.parentId ?? null,
    status: meta.status,
    side: c.side,
    symbol: c.tokenId,
    price: c.price,
    size: c.size,
    quote_amount: c.quoteAmount,
    filled_size: unfilled ? '0' : str(filled),
    remaining_size: remaining,
    matched_amount: c.matchedAmount,
    avg_price: null,
    average_price: null,
    builder_code_used: null,
    time_in_force:
      c.expiresAtMs !== null ? 'GTD' : c.type === 'MARKET' && c.timeInForce !== 'FOK' ? 'IOC' : c.timeInForce,
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
  if (!unfilled && filled.gt(0))
    view.avg_price = view.average_price = str(dec(c.matchedAmount).div(filled).toDecimalPlaces(6));
  if (c.fills?.length) view.fills = c.fills.map(fillView);
  if (c.reason) view.message = c.reason;
  // why it ended canceled or expired (or is being canceled): a code to decide on, and its message
  if (c.cancelReason && (meta.status === 'CANCELED' || meta.status === 'EXPIRED' || meta.status === 'PENDING_CANCEL')) {
    view.cancel_code = c.cancelReason.code;
    view.cancel_reason = c.cancelReason.message;
  }
  return view;
}

/** One fill of an order's view (`fills`): decimal strings, its chain position when known. */
function fillView(f: OrderFill): Record<string, unknown> {
  return {
    trade_id: f.tradeId,
    price: f.price,
    size: f.size,
    liquidity: f.liquidity,
    fee_usd: f.feeUsd,
    traded_at: f.atMs,
    block_timestamp: f.trade?.blockTimestamp ?? null,
    log_index: f.trade?.logIndex ?? null,
    transaction_hash: f.trade?.transactionHash ?? null,
  };
}

/** The history writes of an order step that added fills reported with their trade, or null. */
function newFillWrites(recorder: HistoryRecorder, next: OrderSnapshot, previous: OrderSnapshot) {
  const fills = next.context.fills ?? [];
  const before = previous.context.fills?.length ?? 0;
  if (fills.length <= before) return null;
  const added = fills.slice(before).filter((f) => f.trade);
  return added.length ? recorder.fillWrites(added) : null;
}

/** The `type` of an order's view: `TAKE_PROFIT` for a take-profit sell, else `LIMIT` / `MARKET`. */
function orderTypeOf(c: Pick<OrderContext, 'isTakeProfit' | 'type'>): string {
  return c.isTakeProfit ? 'TAKE_PROFIT' : c.type;
}

/** The machine event of a venue report. */
function eventOf(r: VenueReport): OrderEvent {
  switch (r.type) {
    case 'venue.accepted':
      return { type: r.type, resting: r.resting };
    case 'venue.filled':
      return {
        type: r.type,
        tradeId: r.tradeId,
        price: r.price,
        size: r.size,
        liquidity: r.liquidity,
        completes: r.completes,
        atMs: r.atMs,
        feeUsd: r.trade && r.liquidity === 'taker' ? r.trade.feeUsd : '0',
        ...(r.trade ? { trade: r.trade } : {}),
      };
    case 'venue.canceled':
      return { type: r.type, reason: { code: r.code ?? 'VENUE_CANCELED', message: r.reason } };
    case 'venue.expired':
      return { type: r.type };
    case 'venue.rejected':
      return { type: r.type, error: r.error, reason: r.reason };
  }
}

/**
 * The domain error of an order the venue rejected (its `error` code and `reason`):
 * `INSUFFICIENT_BALANCE`, `NOT_ENOUGH_SHARES`, `ORDER_CROSSES_BOOK`, else `VENUE_REJECTED`
 * carrying the venue's code.
 */
function venueRefusal(c: Pick<OrderContext, 'error' | 'reason'>): DomainError {
  switch (c.error) {
    case 'INSUFFICIENT_BALANCE':
      return new DomainError('INSUFFICIENT_BALANCE', c.reason ?? '');
    case 'INSUFFICIENT_SHARES':
      return new DomainError('NOT_ENOUGH_SHARES', c.reason ?? 'Not enough shares to place this sell');
    case 'order crosses book':
      return new DomainError('ORDER_CROSSES_BOOK', c.reason ?? '');
    default:
      return new DomainError('VENUE_REJECTED', c.reason ?? '', { venueError: c.error ?? 'rejected' });
  }
}

/** Request fields of strategy types that a LIMIT or MARKET order must not carry. */
const STRATEGY_ONLY_FIELDS = [
  'condition_id',
  'outcome',
  'offset_ticks',
  'budget_usdc',
  'price_floor',
  'price_ceiling',
  'execution',
] as const;

/**
 * Hosts CLOB order actors: checks an order against the market and the wallet (a
 * refused order changes nothing), creates its actor, carries its commands to the venue and the
 * venue's reports back, and reconciles live orders with the venue at start-up.
 */
export class OrderService {
  /** The pre-trade checks (engine/risk.ts), shared with the strategy service. */
  readonly risk: RiskEngine;
  /** Venue commands in flight per order: {@link whenQuiet} waits for them. */
  private readonly inFlight: InFlight;

  constructor(
    private readonly host: ActorHost,
    private readonly actors: ActorRepository,
    private readonly venue: VenuePort,
    private readonly clock: Clock,
    private readonly log: Logger,
    /** Records each new fill in the trade history with the step that records it on the order; none: not recorded. */
    recorder?: HistoryRecorder,
  ) {
    this.risk = new RiskEngine(venue, clock);
    this.inFlight = new InFlight(host, log, 'order command failed');
    const track = (id: string, p: Promise<unknown>) => this.track(id, p);
    host.register({
      machineId: ORDER_MACHINE_ID,
      version: ORDER_MACHINE_VERSION,
      restorableVersions: ORDER_RESTORABLE_VERSIONS,
      form: ORDER_SNAPSHOT_FORM,
      kind: 'order',
      logic: orderMachine.provide({
        actions: {
          submitToVenue: (_, { order }) => track(order.orderId, venue.submit(order)),
          cancelAtVenue: (_, { orderId, reason }) => track(orderId, venue.cancel(orderId, reason)),
          expireAtVenue: (_, { orderId }) => track(orderId, venue.expire(orderId)),
        },
      }),
      statusOf: (s) => ORDER_STATUS[s.value as OrderState],
      viewOf: orderView,
      typeOf: (s) => orderTypeOf(s.context),
      isFinal: isOrderFinal,
      takesWhenFinal: (e) => e.type === 'venue.filled',
      stepWritesOf: recorder ? (next, previous) => newFillWrites(recorder, next, previous) : undefined,
    });
    // once an order's actor has recorded its end, the venue need not remember the order
    host.on('changed', (c) => {
      if (c.record.final && c.record.kind === 'order') venue.release(c.record._id);
    });
    venue.onReport((r) => {
      if (r.orderId.startsWith('ord_')) this.deliverReport(r);
    });
  }

  /** Reports of one venue operation not yet handed over, by order ({@link deliverReport}); null between operations. */
  private burst: Map<string, VenueReport[]> | null = null;

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
   * waiting, so a fill is never lost (failures become state, never only a log line).
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
    // the venue hands over an operation's reports in one synchronous burst: the orders it reports
    // on are stepped together once it is over ({@link deliverBurst})
    if (!this.burst) {
      this.burst = new Map();
      queueMicrotask(() => this.deliverBurst());
    }
    this.burst.set(r.orderId, q);
  }

  /**
   * Hands the reports of one venue operation to their orders: one order's through
   * {@link drainReports}; several orders' as ONE host batch (one transaction for every order's
   * step and its trade-history writes), each order's reports in the venue's order. What the batch
   * could not take (an order not in memory, reports that came meanwhile) and, when the batch
   * failed, all of it, goes on through {@link drainReports} (retried with backoff, never lost).
   */
  private deliverBurst(): void {
    const burst = this.burst!;
    this.burst = null;
    if (burst.size === 1) {
      for (const [id, q] of burst) this.track(id, this.drainReports(id, q));
      return;
    }
    const taken = new Map<string, number>();
    const run = this.host
      .batch(burst.keys(), (b) => {
        for (const [id, q] of burst) {
          if (b.snapshotOf(id) === null) continue;
          for (const r of q) b.step(id, eventOf(r));
          taken.set(id, q.length);
        }
      })
      .then(
        () => true,
        (err: unknown) => {
          this.log.warn(
            { err, orders: burst.size },
            'venue reports of an operation not delivered together: one by one',
          );
          return false;
        },
      )
      .then((ok) => {
        for (const [id, q] of burst) {
          if (ok) q.splice(0, taken.get(id) ?? 0);
          if (q.length > 0) this.track(id, this.drainReports(id, q));
          else if (this.reportQueues.get(id) === q) this.reportQueues.delete(id);
        }
      });
    for (const id of burst.keys()) this.track(id, run);
  }

  private async drainReports(orderId: string, q: VenueReport[]): Promise<void> {
    try {
      // the venue hands over an operation's reports in one synchronous burst: let the rest of it
      // join the queue before the first delivery
      await Promise.resolve();
      for (let attempt = 1; q.length > 0;) {
        // every report queued so far goes to the actor at once, so that the host handles them as
        // one batch (one write for accepted + filled of an order that crossed); they
        // are taken off the queue only once delivered, in order
        const batch = q.slice();
        const results = await Promise.allSettled(batch.map((r) => this.host.send(orderId, eventOf(r))));
        let delivered = 0;
        while (delivered < results.length && results[delivered]!.status === 'fulfilled') delivered++;
        q.splice(0, delivered);
        if (delivered === results.length) {
          attempt = 1;
          this.failingReports.delete(orderId);
          continue;
        }
        const err = (results[delivered] as PromiseRejectedResult).reason as unknown;
        if (err instanceof UnknownActorError) {
          // an order the venue holds without its actor went to the venue ahead of its record (a batch
          // whose records failed): its actor, once recorded, learns the venue's state of it whole
          if (this.venue.orderState(orderId) !== null)
            this.log.warn(
              { orderId, report: q.shift() },
              'venue report for an order whose record has not followed yet: its actor learns it once recorded',
            );
          else
            this.log.error(
              { err, orderId, report: q.shift() },
              'venue report for an order the service does not know: dropped',
            );
          continue;
        }
        if (attempt === 1 || attempt % 20 === 0)
          this.log.error({ err, orderId, attempt }, 'venue report not delivered to its order; retrying');
        this.failingReports.add(orderId);
        await sleep(backoffMs(attempt, 50, 5000));
        attempt++;
      }
    } finally {
      this.failingReports.delete(orderId);
      if (this.reportQueues.get(orderId) === q) this.reportQueues.delete(orderId);
    }
  }

  private track(id: string, p: Promise<unknown>): void {
    this.inFlight.track(id, p);
  }

  /** Resolves when actor `id` has nothing queued or in flight (its response is then final). */
  whenQuiet(id: string): Promise<void> {
    return this.inFlight.whenQuiet(id);
  }

  /**
   * Validates a LIMIT or MARKET order against spec 2.1–2.2.2, the market and the wallet; the
   * rules themselves are engine/risk.ts's.
   * @param typeName - the type the client sent, for messages (a TAKE_PROFIT is checked as a LIMIT sell).
   * @param orderId - the order's id (a request's seeded id: the same for its retries); a random one when absent.
   * @returns the actor input.
   * @throws {DomainError} `INVALID_REQUEST` (range, tick, minimum size, time in force),
   *   `PRICE_IN_CENTS`, `INSUFFICIENT_BALANCE`, `NOT_ENOUGH_SHARES`. Brackets are checked by the
   *   strategy service ({@link StrategyService.checkBrackets}).
   */
  check(userId: string, body: OrderRequest, typeName: string = body.type, orderId?: string): OrderInput {
    const info = this.risk.market(body.symbol);
    const isMarket = body.type === 'MARKET';
    const forbid = (field: string, why: string) => {
      if ((body as Record<string, unknown>)[field] !== undefined) throw errors.badRequest(`${field} ${why}`);
    };
    if ((body.take_profit || body.stop_loss) && body.side !== 'buy')
      throw errors.badRequest('take_profit / stop_loss brackets attach to buy LIMIT or MARKET entries only');
    for (const f of STRATEGY_ONLY_FIELDS)
      if ((body as Record<string, unknown>)[f] !== undefined)
        throw errors.badRequest(`${f} is not used by ${typeName} orders`);
    if (body.time_in_force !== undefined && body.expiration !== undefined) {
      throw errors.badRequest('time_in_force cannot be combined with expiration: an order with expiration is GTD');
    }
    let price: Dec | null = null;
    if (isMarket) {
      forbid('price', 'is not used by MARKET orders (they take the book; use LIMIT with IOC for a price cap)');
      if (body.time_in_force !== undefined && body.time_in_force !== 'IOC' && body.time_in_force !== 'FOK') {
        throw errors.badRequest(
          `time_in_force ${body.time_in_force} is not used by MARKET orders: ` +
            `they are IOC (the default) or FOK (all or nothing)`,
        );
      }
      forbid('expiration', 'is not used by MARKET orders');
    } else {
      if (body.price === undefined) throw errors.badRequest('price is required for LIMIT orders');
      price = checkPrice('price', body.price, info.tickSize);
    }
    let size: Dec | null = null;
    let quote: Dec | null = null;
    if (isMarket && body.side === 'buy') {
      forbid('size', 'is not used by a MARKET buy: send quote_amount (dollars)');
      if (body.quote_amount === undefined)
        throw errors.badRequest('quote_amount (dollars) is required for a MARKET buy');
      quote = checkMinQuote(body.quote_amount, ' for a MARKET order');
    } else {
      forbid('quote_amount', `is not used by a ${body.type} ${body.side}: send size (shares)`);
      if (body.size === undefined) throw errors.badRequest(`size (shares) is required for a ${body.type} ${body.side}`);
      size = checkShares('size', body.size);
    }
    const tif = isMarket
      ? body.time_in_force === 'FOK'
        ? 'FOK'
        : 'IOC'
      : body.expiration !== undefined
        ? 'GTD'
        : (body.time_in_force ?? 'GTC');
    if (tif === 'GTC' || tif === 'GTD') checkRestingMinimum('size', size!, body.size!, info);
    if (body.expiration !== undefined) this.risk.expiration(body.expiration);
    const input: OrderInput = {
      orderId: orderId ?? `ord_${randomUUID()}`,
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
    if (isMarket) {
      const touch = this.venue.touch(body.symbol);
      if (body.side === 'sell') checkMarketSellMinimum(touch.bid, size!, body.size!);
      checkMarketLiquidity(body.side, touch);
    }
    // the wallet is checked by place(), in the user's placement queue, after every rule of the
    // request (brackets included): a malformed request is a 400 whatever the wallet holds
    return input;
  }

  /** Tail of each user's queue of order placements (see {@link exclusive}). */
  private readonly userQueues = new Map<string, Promise<unknown>>();

  /**
   * Runs `fn` alone among the order placements of `userId` (REST orders, strategies' child
   * orders, and the wallet operations of engine/wallet/service.ts): the wallet check, the actor's creation and the
   * venue's reservation happen as one step, so concurrent requests cannot all pass the check and then be refused by
   * the venue. `fn` must not wait for another placement of the same user. The venue reserves an
   * order's funds when it is submitted (the creation's entry action, in memory), so a placement
   * need not hold the queue while it waits for the venue's answer ({@link place}).
   */
  exclusive<T>(userId: string, fn: () => Promise<T>): Promise<T> {
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
   * The user's queue is held until the order is created and submitted (its funds then reserved at
   * the venue), not while the venue's answer is journaled and recorded: the user's next placement
   * is checked meanwhile, against the funds this one reserved.
   * @throws {DomainError} `INSUFFICIENT_BALANCE` / `NOT_ENOUGH_SHARES` (nothing created); when
   *   the venue rejected it (the REJECTED order stays on record) the code of its verdict
   *   ({@link venueRefusal}).
   */
  async place(
    partnerId: string,
    input: OrderInput,
    extra: Partial<OrderInput> = {},
    beforeCreate?: () => Promise<void>,
  ): Promise<ActorRecord> {
    await this.exclusive(input.userId, async () => {
      this.risk.orderFunds(input);
      if (beforeCreate) await beforeCreate();
      await this.host.create<typeof orderMachine>(ORDER_MACHINE_ID, {
        id: input.orderId,
        // the checked input as it is when there is nothing to add (the machine's context copies it)
        input: hasFields(extra) ? { ...input, ...extra } : input,
        partnerId,
        ownerUserId: input.userId,
      });
    });
    await this.whenQuiet(input.orderId);
    const rec = this.host.recordOf(input.orderId) ?? (await this.actors.get(input.orderId))!;
    if (rec.status === 'REJECTED') throw venueRefusal(this.host.storedSnapshot(rec).context as OrderContext);
    return rec;
  }

  /**
   * Places a ladder: limit orders of one user on one token and side (checked by {@link check}),
   * all or none. In the user's placement queue: the wallet is checked for all of them together
   * (a buy ladder's notional at its limit prices, a sell ladder's shares), then each is placed in
   * turn; when the venue refuses one, the ones placed before are canceled (what a crossing rung
   * already traded stays traded) and the refusal is thrown naming the rung. Rungs whose order
   * already exists (an earlier attempt of the same request, same ids) are not placed again.
   * @param inputs the rungs, in order; each `orderId` deterministic for a retry to find it.
   * @returns the orders' records after the venue answered each, in the rungs' order.
   * @throws {DomainError} `INSUFFICIENT_BALANCE` / `NOT_ENOUGH_SHARES` (nothing created);
   *   `CONFLICT` when an earlier attempt of the request was refused (send it with a new key);
   *   the venue's refusal of a rung ({@link venueRefusal}), its message prefixed by `rungs[i]`.
   */
  async placeLadder(partnerId: string, inputs: readonly OrderInput[]): Promise<ActorRecord[]> {
    const first = inputs[0]!;
    return this.exclusive(first.userId, async () => {
      const existing = await Promise.all(
        inputs.map(async (i) => this.host.recordOf(i.orderId) ?? (await this.actors.get(i.orderId))),
      );
      if (existing.some((r) => r?.status === 'REJECTED')) {
        throw errors.conflict(
          'an earlier attempt of this request was refused and its ladder ' +
            'canceled: send it again with a new Idempotency-Key',
        );
      }
      const missing = inputs.filter((_, i) => !existing[i]);
      const need = missing.reduce(
        (sum, o) => sum.plus(o.side === 'sell' ? dec(o.size!) : dec(o.price!).times(dec(o.size!))),
        ZERO,
      );
      if (missing.length) this.risk.funds(first.userId, first.tokenId, first.side, need, 'this ladder');
      const out: ActorRecord[] = [];
      for (const [i, input] of inputs.entries()) {
        if (!existing[i])
          await this.host.create<typeof orderMachine>(ORDER_MACHINE_ID, {
            id: input.orderId,
            input,
            partnerId,
            ownerUserId: input.userId,
          });
        await this.whenQuiet(input.orderId);
        const rec = this.host.recordOf(input.orderId) ?? (await this.actors.get(input.orderId))!;
        if (rec.status === 'REJECTED') {
          for (const placed of out) {
            // one that ended meanwhile (filled in full, canceled by the venue) answers CONFLICT: nothing left to cancel
            await this.cancel(first.userId, placed._id).catch((e: unknown) => {
              if (!(e instanceof DomainError && e.code === 'CONFLICT')) throw e;
            });
          }
          const err = venueRefusal(this.host.storedSnapshot(rec).context as OrderContext);
          throw new DomainError(
            err.code,
            `rungs[${i}] (price ${input.price}) was refused, the ladder canceled: ${err.message}`,
            err.details,
          );
        }
        out.push(rec);
      }
      return Promise.all(out.map(async (r) => this.host.recordOf(r._id) ?? (await this.actors.get(r._id))!));
    });
  }

  /**
   * Places an order a strategy decided on (already sized and priced), with a deterministic id,
   * once it passed risk ({@link RiskEngine.checkChild}) in the user's placement queue. Placing
   * the same id twice is harmless: the second call finds the first (and does not check again).
   * @returns the order's record after the venue answered.
   * @throws {DomainError} the risk refusal (`INVALID_REQUEST`, `ORDER_CROSSES_BOOK`,
   *   `INSUFFICIENT_BALANCE`, `NOT_ENOUGH_SHARES`): nothing was created.
   */
  async placeChild(partnerId: string, input: OrderInput): Promise<ActorRecord> {
    // in the user's placement queue, so that it cannot take the funds a REST order was just checked against
    return this.exclusive(input.userId, async () => {
      const existing = this.host.recordOf(input.orderId) ?? (await this.actors.get(input.orderId));
      // an order the venue holds already (placed ahead of its record: see placeChildren) is adopted:
      // it passed risk before the venue took it, and the wallet it was checked on is spent by it now
      const atVenue = existing ? null : this.venue.orderState(input.orderId);
      if (!existing && !atVenue) this.risk.checkChild(input);
      try {
        await this.host.create<typeof orderMachine>(ORDER_MACHINE_ID, {
          id: input.orderId,
          input,
          partnerId,
          ownerUserId: input.userId,
        });
        if (atVenue) this.learnVenueState(input.orderId);
      } catch (err) {
        if (!(err instanceof DuplicateKeyError)) throw err;
      }
      await this.whenQuiet(input.orderId);
      return this.host.recordOf(input.orderId) ?? (await this.actors.get(input.orderId))!;
    });
  }

  /**
   * Places child orders of many parents as one batch (the copies of one leader fill), the venue
   * first: in the placement queues of every user concerned ({@link exclusive}), `plan` steps the
   * parents through `batch` and places each child with `place`, which checks it against risk
   * ({@link RiskEngine.checkChild}, in the order called); every new order then goes to the venue in
   * ONE operation ({@link VenuePort.submitMany}) and, once the venue has made it durable, the
   * orders' actors are created in the batch and the parents' steps and the new orders commit in ONE
   * store transaction (all or none, retried while the actors are held: {@link ActorHost.batch}
   * `beforeCommit`). An order the venue holds already (an earlier attempt went to the venue, its
   * records did not follow) is adopted: no risk check (the wallet it was checked on is spent by it),
   * not sent again, and once committed its actor learns the venue's state of it. The venue's
   * answers reach the orders as usual (one batch per operation: {@link deliverBurst}), after the
   * batch (their queues are held until it is over).
   * @param userIds - the owners of every order `plan` may place (their queues are held meanwhile).
   * @param actorIds - every actor `plan` steps or creates (the parents and the orders' ids).
   * @param plan - `place(partnerId, input)` throws the risk refusal ({@link DomainError}: nothing
   *   created for it; the plan records it on its parent) or `DuplicateKeyError` for an order id
   *   that exists.
   * @param record - steps of the batch taken once the venue's operation is durable (before the
   *   orders' creations), off the path to the venue: the parents' steps decided in `plan`.
   * @returns the records written, by id.
   * @throws what the batch throws: nothing of it was recorded, though its venue operation may have
   *   been made (its orders are then adopted by the next placement of the same ids).
   */
  async placeChildren(
    userIds: Iterable<string>,
    actorIds: Iterable<string>,
    plan: (batch: ActorBatch, place: (partnerId: string, input: OrderInput) => void) => void,
    record: (batch: ActorBatch) => void = () => {},
  ): Promise<Map<string, ActorRecord>> {
    const open = await holdQueues(new Set(userIds), (u, work) => void this.exclusive(u, work), this.userQueues);
    try {
      const placed: { partnerId: string; input: OrderInput; atVenue: boolean }[] = [];
      const ids = new Set<string>();
      const written = await this.host.batch(
        actorIds,
        (batch) =>
          plan(batch, (partnerId, input) => {
            if (batch.snapshotOf(input.orderId) !== null || ids.has(input.orderId))
              throw new DuplicateKeyError(`order ${input.orderId} exists`);
            const atVenue = this.venue.orderState(input.orderId) !== null;
            if (!atVenue) this.risk.checkChild(input);
            placed.push({ partnerId, input, atVenue });
            ids.add(input.orderId);
          }),
        undefined,
        {
          // the venue first (its operation durable), then the orders' actors, created with the batch;
          // their own submitToVenue finds them at the venue already: nothing is sent twice
          beforeCommit: async (batch) => {
            const fresh = placed.filter((p) => !p.atVenue).map((p) => venueOrderOf(p.input));
            if (fresh.length) await this.venue.submitMany(fresh);
            record(batch);
            for (const { partnerId, input } of placed)
              batch.create(ORDER_MACHINE_ID, { id: input.orderId, input, partnerId, ownerUserId: input.userId });
          },
        },
      );
      for (const p of placed) if (p.atVenue) this.learnVenueState(p.input.orderId);
      return written;
    } finally {
      open();
    }
  }

  /**
   * Cancels order `orderId` for a strategy; nothing happens when it is already done.
   * @param reason - recorded on the order (view `cancel_code`, `message`): the strategy and why.
   * @returns the order's record as it was found (before the cancel took effect), or null when
   *   no such order exists (it was never placed): the caller tells the strategy.
   */
  async cancelChild(orderId: string, reason: CancelReason): Promise<ActorRecord | null> {
    const rec = this.host.recordOf(orderId) ?? (await this.actors.get(orderId));
    if (!rec || rec.final) return rec;
    await this.host.send(orderId, { type: 'order.cancel', reason });
    // the venue's answer reaches the order (and, through it, the strategy) before this resolves:
    // a DELETE strategy then answers with the record as canceled, not as still canceling
    await this.whenQuiet(orderId);
    return rec;
  }

  /**
   * Cancels an order of `userId` (recorded as `USER_CANCELED`, `canceled by user`).
   * @throws {DomainError} `NOT_FOUND` for an order not of this user; `CONFLICT` when it is already done.
   */
  async cancel(userId: string, orderId: string): Promise<ActorRecord> {
    const rec = await this.actors.get(orderId);
    if (!rec || rec.kind !== 'order' || rec.ownerUserId !== userId) throw errors.notFound(`no order ${orderId}`);
    if (rec.final) throw errors.conflict(`order ${orderId} is already ${rec.status}`);
    await this.host.send(orderId, { type: 'order.cancel', reason: USER_CANCEL });
    await this.whenQuiet(orderId);
    return this.host.recordOf(orderId) ?? (await this.actors.get(orderId))!;
  }

  /**
   * Start-up reconciliation: every live order learns what the venue did while it was not
   * listening (fills are deduplicated by trade id), or is submitted again if the venue never saw it.
   */
  async reconcile(): Promise<number> {
    const live = await this.actors.find({ kind: 'order', final: false, quarantine: null });
    for (const rec of live) {
      this.learnVenueState(rec._id);
      await this.whenQuiet(rec._id);
    }
    return live.length;
  }

  /**
   * Tells order `orderId`'s actor what the venue holds of it (accepted, its fills, its end; fills are
   * deduplicated by trade id), or `venue.unknown` when the venue has no such order.
   */
  private learnVenueState(orderId: string): void {
    const state = this.venue.orderState(orderId);
    if (!state) {
      this.track(orderId, this.host.send(orderId, { type: 'venue.unknown' }));
      return;
    }
    if (state.status !== 'rejected')
      this.track(orderId, this.host.send(orderId, { type: 'venue.accepted', resting: state.status === 'open' }));
    for (const f of state.fills) this.track(orderId, this.host.send(orderId, eventOf(f)));
    if (state.final) this.track(orderId, this.host.send(orderId, eventOf(state.final)));
  }

  /**
   * One order of `userId` in any state (open, filled, canceled, expired, rejected), read from its
   * actor: the live actor's snapshot while it works, its stored final snapshot afterwards.
   * @returns the record; its `view` is the {@link orderView} (OrderView of GET /v2/trade/orders/{order_id}).
   * @throws {DomainError} `NOT_FOUND` for an unknown id, a strategy record, or another user's order.
   */
  async getOwned(userId: string, orderId: string): Promise<ActorRecord> {
    const rec = this.host.recordOf(orderId) ?? (await this.actors.get(orderId));
    if (!rec || rec.kind !== 'order' || rec.ownerUserId !== userId) throw errors.notFound(`no order ${orderId}`);
    return rec;
  }

  /**
   * The open orders of `userId` (the rows of GET /v2/trade/orders/open: strategies' child orders
   * included), newest first, optionally narrowed to one outcome token and/or one market.
   * @param filter.tokenId - outcome token id (`symbol`); @param filter.conditionId - market (its tokens).
   */
  async openOrders(userId: string, filter: { tokenId?: string; conditionId?: string } = {}): Promise<ActorRecord[]> {
    const { records } = await this.actors.findOwned(userId, { kind: 'order', status: { $in: OPEN_ORDER_STATUSES } });
    return records.filter((r) => {
      const tokenId = String((r.view as { symbol?: unknown }).symbol);
      if (filter.tokenId !== undefined && tokenId !== filter.tokenId) return false;
      if (
        filter.conditionId !== undefined &&
        this.venue.token(tokenId)?.conditionId.toLowerCase() !== filter.conditionId.toLowerCase()
      )
        return false;
      return true;
    });
  }

  /** Ids of {@link openOrders}. */
  async openOrderIds(userId: string, filter: { tokenId?: string; conditionId?: string } = {}): Promise<string[]> {
    return (await this.openOrders(userId, filter)).map((r) => r._id);
  }

  /**
   * Cancels each of `orderIds` for `userId` through {@link cancel} (the rules of DELETE
   * /v2/trade/orders/{order_id} apply per order), a few at a time; one order's refusal never
   * stops the others. Duplicate ids are answered once.
   * @returns one outcome per distinct id, in the order given: `canceled` (the order ended
   *   CANCELED, or is PENDING_CANCEL when the venue has not confirmed yet), `already_done` (it was
   *   already final, or it filled or expired before the cancel took effect: its record says how),
   *   `not_found` (unknown, malformed, a strategy record, or another user's order).
   * @throws what is not about one order (a store or venue failure): the batch then answers
   *   503/500 and its retry finds the orders already canceled as `already_done`.
   */
  async cancelMany(userId: string, orderIds: readonly string[], concurrency = 8): Promise<CancelOutcome[]> {
    const ids = [...new Set(orderIds)];
    const out: CancelOutcome[] = new Array(ids.length);
    let next = 0;
    let failed = false;
    const worker = async () => {
      for (let i = next++; i < ids.length && !failed; i = next++) {
        const orderId = ids[i]!;
        try {
          const rec = await this.cancel(userId, orderId);
          const done = rec.final && rec.status !== 'CANCELED';
          out[i] = {
            orderId,
            outcome: done ? 'already_done' : 'canceled',
            record: rec,
            message: done ? `order ${orderId} ended ${rec.status} before the cancel took effect` : null,
          };
        } catch (err) {
          if (!(err instanceof DomainError)) throw err;
          if (err.code === 'NOT_FOUND') out[i] = { orderId, outcome: 'not_found', record: null, message: err.message };
          else if (err.code === 'CONFLICT')
            out[i] = {
              orderId,
              outcome: 'already_done',
              record: await this.getOwned(userId, orderId),
              message: err.message,
            };
          else throw err;
        }
      }
    };
    const guarded = () =>
      worker().catch((err: unknown) => {
        failed = true; // the others stop taking ids: the request fails as a whole, its retry goes on
        throw err;
      });
    // every worker settled before the request fails: the cancels already under way are done when
    // its answer (and so its retry) comes
    const settled = await Promise.allSettled(Array.from({ length: Math.min(concurrency, ids.length) }, guarded));
    for (const s of settled) if (s.status === 'rejected') throw s.reason;
    return out;
  }
}

/** What {@link OrderService.cancelMany} did with one order id. */
export interface CancelOutcome {
  orderId: string;
  outcome: 'canceled' | 'not_found' | 'already_done';
  /** The order after the attempt (its view is the OrderView); null when not found. */
  record: ActorRecord | null;
  /** Why it was not canceled; null when it was. */
  message: string | null;
}

/** Whether `o` has an own enumerable field. */
function hasFields(o: object): boolean {
  for (const _ in o) return true;
  return false;
}
