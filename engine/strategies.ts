import { randomUUID } from 'node:crypto';
import type { AnyStateMachine, SnapshotFrom } from 'xstate';
import { bracketMachine, BRACKET_STATUS } from '../machines/bracket.js';
import { icebergMachine, ICEBERG_STATUS } from '../machines/iceberg.js';
import type { OrderContext, OrderInput } from '../machines/order.js';
import { peggedMachine, PEGGED_STATUS, pegPrice } from '../machines/pegged.js';
import { stopLossMachine, STOP_LOSS_STATUS } from '../machines/stop-loss.js';
import { STRATEGY_MACHINE_VERSION, childOrderPrice, floorShares, type BracketLeg, type ChildOrder, type StrategyContext, type StrategyEvent, type StrategyInput, type StrategyType, type Touch } from '../machines/strategy-kit.js';
import { trailingBuyLevel, trailingBuyMachine, trailingBuyMessage, TRAILING_BUY_STATUS } from '../machines/trailing-buy.js';
import { trailingStopLevel, trailingStopMachine, trailingStopMessage, TRAILING_STOP_STATUS } from '../machines/trailing-stop.js';
import { twapMachine, twapSliceCount, TWAP_STATUS } from '../machines/twap.js';
import type { OrderRequest } from '../schemas/orders.js';
import type { ActorChange, ActorHost } from './actor-host.js';
import type { Clock } from './clock.js';
import { dec, Dec, str } from './decimal.js';
import { DomainError, errors } from './errors.js';
import type { Logger } from './logger.js';
import type { OrderService } from './orders.js';
import {
  checkIcebergClip, checkMinQuote, checkPostOnly, checkPrice, checkRestingMinimum, checkShares, checkTrailingOffset, checkTwapDuration, checkTwapSlices, refusalCode,
} from './risk.js';
import type { ActorRecord, ActorRepository } from './store/actors.js';
import { TriggerIndex } from './triggers.js';
import type { VenuePort } from './venue/port.js';

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
/** `execution` fields ignored with a warning (spec 2.2.2: TWAP `clip_size` and `randomize_pct`). */
const EXECUTION_WARNED: Partial<Record<StrategyType, readonly string[]>> = { TWAP: ['clip_size', 'randomize_pct'] };
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

/** Machine id, machine and status table of each strategy type. */
const DEFINITIONS: Record<StrategyType, { machineId: string; logic: AnyStateMachine; status: Record<string, string> }> = {
  STOP_LOSS: { machineId: 'strategy.stop_loss', logic: stopLossMachine, status: STOP_LOSS_STATUS },
  TRAILING_STOP: { machineId: 'strategy.trailing_stop', logic: trailingStopMachine, status: TRAILING_STOP_STATUS },
  TRAILING_BUY: { machineId: 'strategy.trailing_buy', logic: trailingBuyMachine, status: TRAILING_BUY_STATUS },
  TWAP: { machineId: 'strategy.twap', logic: twapMachine, status: TWAP_STATUS },
  ICEBERG: { machineId: 'strategy.iceberg', logic: icebergMachine, status: ICEBERG_STATUS },
  PEGGED: { machineId: 'strategy.pegged', logic: peggedMachine, status: PEGGED_STATUS },
  BRACKET: { machineId: 'strategy.bracket', logic: bracketMachine, status: BRACKET_STATUS },
};

/** A bracket leg as the API shows it (spec 2.3 `brackets.<leg>`). */
function legView(l: BracketLeg, recordId: string): Record<string, unknown> {
  return { order_id: l.order_id, id: recordId, status: l.status, error: l.error, price: l.price, size: l.size };
}

/** `brackets` of a BRACKET strategy: both legs as the order response and the record show them. */
export function bracketsView(c: Pick<StrategyContext, 'legs'>, recordId: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (c.legs?.take_profit) out.take_profit = legView(c.legs.take_profit, recordId);
  if (c.legs?.stop_loss) out.stop_loss = legView(c.legs.stop_loss, recordId);
  return out;
}

type Snapshot = SnapshotFrom<AnyStateMachine>;

/**
 * The strategy record of spec 2.4 (see schemas/strategies.ts), derived from a snapshot.
 */
export function strategyView(s: Snapshot, meta: { id: string; status: string; createdAtMs: number; updatedAtMs: number; revision: number }): Record<string, unknown> {
  const c = s.context as StrategyContext;
  const filled = dec(c.filledSize);
  const executed = filled.gt(0);
  return {
    record_id: meta.id,
    type: c.type,
    status: meta.status,
    side: c.side,
    symbol: c.tokenId,
    price: c.price,
    size: c.size,
    quote_amount: c.quoteAmount,
    filled_size: executed ? str(filled) : null,
    executed_price: executed ? str(dec(c.matchedAmount).div(filled).toDecimalPlaces(6)) : null,
    matched_amount: c.matchedAmount,
    execution: c.execution,
    high_water_mark: c.highWaterMark ?? null,
    low_water_mark: c.lowWaterMark ?? null,
    trigger_price: c.triggerPrice,
    slices_done: c.type === 'TWAP' || c.type === 'ICEBERG' ? c.slicesDone : null,
    slices_total: c.type === 'TWAP' ? (c.slicesTotal ?? null) : null,
    next_slice_at: c.deadlines.slice ?? null,
    ...(c.type === 'BRACKET' ? { entry_order_id: c.entryOrderId ?? null, brackets: bracketsView(c, meta.id) } : {}),
    order_ids: c.children.map((x) => x.orderId).concat(c.working && !c.children.some((x) => x.orderId === c.working) ? [c.working] : []),
    client_order_id: c.clientOrderId,
    metadata: c.metadata,
    message: c.endReason ?? c.message ?? undefined,
    warnings: c.warnings,
    created_at: meta.createdAtMs,
    updated_at: meta.updatedAtMs,
    revision: meta.revision,
  };
}

/** POST /v2/trade/order response of a strategy (spec 2.3): `record_id`, PENDING/ACTIVE, `message`. */
export function strategyResponse(rec: ActorRecord): Record<string, unknown> {
  const v = rec.view as Record<string, unknown>;
  const filled = (v.filled_size as string | null) ?? '0';
  const size = v.size as string | null;
  return {
    type: v.type, order_id: null, record_id: rec._id, status: rec.status, side: v.side, symbol: v.symbol,
    price: v.price, size, quote_amount: v.quote_amount, filled_size: filled,
    remaining_size: size === null ? null : str(Dec.max(0, dec(size).minus(filled))),
    matched_amount: v.matched_amount, builder_code_used: null, client_order_id: v.client_order_id, metadata: v.metadata,
    created_at: rec.createdAtMs, updated_at: rec.updatedAtMs, revision: rec.revision,
    ...(v.message ? { message: v.message } : {}),
    ...((v.warnings as string[]).length ? { warnings: v.warnings } : {}),
  };
}

/**
 * A delivery from the engine to a strategy (a touch, a child order's report, a placement failure)
 * that fails (a store read or write) is retried this many times, after 100 ms, 200 ms, … 1.6 s.
 */
const DELIVERY_RETRIES = 5;
const deliveryDelayMs = (attempt: number) => 100 * 2 ** (attempt - 1);

/** The venue's verdict on a REJECTED order, as codes (the order machine's `error`, `reason`). */
function rejectionOf(rec: ActorRecord): { error: string; reason: string } {
  try {
    const c = JSON.parse(rec.snapshot).context as OrderContext;
    return { error: c.error ?? 'rejected', reason: c.reason ?? '' };
  } catch {
    return { error: 'rejected', reason: '' };
  }
}

/** What a state's `meta` may say about DELETE strategy (see the machines' `noCancel`). */
interface CancelMeta {
  noCancel?: string;
  /** The working order can be canceled instead (DELETE order). */
  cancelWorking?: boolean;
}

/**
 * Managed strategies (issue 5; spec 2.2.1, 2.2.2, 2.4, part 3): checks a request against the
 * per-type rules, the market and the wallet; hosts one actor per strategy; carries their
 * commands (child orders) to the order service and the child orders' changes back; keeps the
 * price-trigger index in step with each strategy's `context.watch` and feeds it the venue's book
 * updates; reconciles every strategy with its orders at start-up before it acts again.
 */
export class StrategyService {
  readonly triggers = new TriggerIndex();
  private readonly inFlight = new Set<Promise<unknown>>();
  /** Deliveries waiting for a retry (backoff timers); {@link idle} waits for them, {@link settle} does not. */
  private readonly retrying = new Set<Promise<unknown>>();
  private readonly retryTimers = new Set<NodeJS.Timeout>();
  /** Child orders being placed: a cancel of one waits for its placement. */
  private readonly placements = new Map<string, Promise<void>>();
  private failedDeliveries = 0;
  private abandonedDeliveries = 0;
  private stopped = false;

  constructor(
    private readonly host: ActorHost,
    private readonly actors: ActorRepository,
    private readonly orders: OrderService,
    private readonly venue: VenuePort,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {
    for (const [, def] of Object.entries(DEFINITIONS)) {
      host.register({
        machineId: def.machineId,
        version: STRATEGY_MACHINE_VERSION,
        kind: 'strategy',
        logic: def.logic.provide({
          actions: {
            placeOrder: ({ context }: { context: StrategyContext }, { order }: { order: ChildOrder }) => this.track(this.placeChild(context, order)),
            cancelOrder: ({ context }: { context: StrategyContext }, { orderId }: { orderId: string }) => this.track(this.cancelChild(context.recordId, orderId)),
          },
        }),
        statusOf: (s) => def.status[String(s.value)] ?? 'ACTIVE',
        viewOf: strategyView,
        // armed and waiting only for a price (a stop, a trailing order): the trigger index finds
        // it by id, so it need not stay in memory (memory per armed strategy)
        passivate: (s) => {
          const c = s.context as StrategyContext;
          return c.working === null && Object.keys(c.watch ?? {}).length > 0 && !c.watch.any;
        },
      });
    }
    host.on('changed', (c) => this.onChanged(c));
    host.on('restored', ({ record, snapshot }) => {
      if (record.kind === 'strategy') this.triggers.set(record._id, (snapshot.context as StrategyContext).tokenId, (snapshot.context as StrategyContext).watch);
    });
    venue.onBook((tokenId) => this.onBook(tokenId));
  }

  private track(p: Promise<unknown>): void {
    const done = p.catch((err) => this.log.error({ err }, 'strategy command failed')).finally(() => this.inFlight.delete(done));
    this.inFlight.add(done);
  }

  /** Runs `fn` after `ms` (a retry): tracked for {@link idle}; dropped once {@link stop} was called. */
  private later(ms: number, fn: () => Promise<unknown>): void {
    if (this.stopped) return;
    let timer: NodeJS.Timeout | undefined;
    const wait = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
      timer.unref?.();
      this.retryTimers.add(timer);
    });
    const done: Promise<unknown> = wait
      .then(() => {
        this.retryTimers.delete(timer!);
        return this.stopped ? undefined : fn();
      })
      .catch((err) => this.log.error({ err }, 'strategy retry failed'))
      .finally(() => this.retrying.delete(done));
    this.retrying.add(done);
  }

  /**
   * Deliveries to strategies that failed (a store read or write) and were retried or armed again,
   * since start. Health can show it (with {@link deliveriesAbandoned}).
   */
  get deliveryFailures(): number {
    return this.failedDeliveries;
  }

  /**
   * Deliveries given up after every retry, since start (each logged at error): a child order's
   * report or a placement failure the strategy has not seen (it learns it at its next event or
   * at the next start-up's reconciliation); a fired trigger is armed again, never given up.
   */
  get deliveriesAbandoned(): number {
    return this.abandonedDeliveries;
  }

  /** Deliveries to strategies waiting for a retry right now (for /healthz). */
  get retryingDeliveries(): number {
    return this.retrying.size;
  }

  /** Stops retrying (service shutdown): pending retry timers are dropped. */
  stop(): void {
    this.stopped = true;
    for (const t of this.retryTimers) clearTimeout(t);
    this.retryTimers.clear();
    this.retrying.clear();
  }

  /**
   * Sends `event` to strategy `id`; when that fails (a store read or write), retries with backoff,
   * at most {@link DELIVERY_RETRIES} times, then gives up (logged at error and counted).
   * @param refresh - builds the event again for a retry (a child order's report: its latest
   *   state, so that a retried report never takes the strategy back to an older one); null =
   *   nothing to send any more.
   */
  private async sendToStrategy(id: string, event: StrategyEvent, refresh?: () => Promise<StrategyEvent | null>, attempt = 0): Promise<void> {
    try {
      await this.host.send(id, event);
    } catch (err) {
      this.failedDeliveries++;
      if (attempt >= DELIVERY_RETRIES) {
        this.abandonedDeliveries++;
        this.log.error({ err, recordId: id, event: event.type, attempts: attempt + 1 }, 'delivery to a strategy abandoned after every retry');
        return;
      }
      this.log.warn({ err, recordId: id, event: event.type, attempt: attempt + 1 }, 'delivery to a strategy failed: retrying');
      this.later(deliveryDelayMs(attempt + 1), async () => {
        const again = refresh ? await refresh().catch(() => event) : event;
        if (again) await this.sendToStrategy(id, again, refresh, attempt + 1);
      });
    }
  }

  /** Resolves when strategy `id` and everything it started have settled (for responses and tests). */
  async settle(id: string): Promise<void> {
    for (let i = 0; i < 50; i++) {
      await this.host.settle(id);
      if (this.inFlight.size === 0) {
        await new Promise((r) => setImmediate(r));
        if (this.inFlight.size === 0) {
          await this.host.settle(id);
          return;
        }
      }
      await Promise.all([...this.inFlight]);
    }
  }

  /** Waits for every command in flight and every pending retry (tests). */
  async idle(): Promise<void> {
    while (this.inFlight.size || this.retrying.size) await Promise.all([...this.inFlight, ...this.retrying]);
  }

  // ── child orders ────────────────────────────────────────────────────────────────────────────

  private touchOf(tokenId: string): Touch {
    return this.risk.touch(tokenId);
  }

  /**
   * Places a child order a strategy decided on. Refused by risk (engine/risk.ts `checkChild`:
   * the wallet, post-only crossing, price), the strategy gets `order.refused` with the venue's
   * code for it (risk `refusalCode`) and no order is created; when it cannot be placed (the order
   * service throws: a store read or write failed), the strategy gets `order.placeFailed` and
   * decides (retry, next slice, FAILED); a cancel of the order waits for this placement.
   */
  private placeChild(c: StrategyContext, order: ChildOrder): Promise<void> {
    const p = this.tryPlaceChild(c, order);
    this.placements.set(order.orderId, p);
    void p.finally(() => {
      if (this.placements.get(order.orderId) === p) this.placements.delete(order.orderId);
    });
    return p;
  }

  private async tryPlaceChild(c: StrategyContext, order: ChildOrder): Promise<void> {
    let placed: ActorRecord;
    try {
      const rec = await this.actors.get(c.recordId);
      const partnerId = rec?.partnerId ?? 'unknown';
      const input: OrderInput = {
        orderId: order.orderId, userId: c.userId, tokenId: c.tokenId, side: order.side, type: 'LIMIT',
        price: str(childOrderPrice(c, order, this.touchOf(c.tokenId))), size: order.size, quoteAmount: null, timeInForce: order.timeInForce, expiresAtMs: null,
        clientOrderId: null, metadata: null, createdAtMs: this.clock.now(), isStopLoss: order.isStopLoss, isTakeProfit: order.isTakeProfit ?? false,
        parentId: c.recordId, postOnly: order.postOnly,
      };
      placed = await this.orders.placeChild(partnerId, input);
    } catch (err) {
      if (err instanceof DomainError) {
        // refused by risk (engine/risk.ts): permanent, like the venue's verdict; nothing was created
        await this.sendToStrategy(c.recordId, { type: 'order.refused', orderId: order.orderId, error: refusalCode(err), reason: err.message });
        return;
      }
      this.log.error({ err, recordId: c.recordId, orderId: order.orderId }, 'child order could not be placed');
      // a failure after the order's first write leaves the order on record: it then reports itself
      const existing = await this.actors.get(order.orderId).catch(() => null);
      if (existing) return this.forwardOrder(existing);
      const reason = err instanceof Error ? err.message : String(err);
      await this.sendToStrategy(c.recordId, { type: 'order.placeFailed', orderId: order.orderId, error: 'placement_failed', reason, atMs: this.clock.now() });
      return;
    }
    // The order's changes reach the strategy through onChanged; a duplicate (restart) is resent here.
    this.forwardOrder(placed);
  }

  /**
   * Cancels a strategy's child order, once its placement (if in flight) is over. A child that
   * does not exist (never placed) is reported to the strategy as `order.placeFailed`
   * (`not_placed`); one already done has its final state sent again: a strategy waiting for the
   * cancel never waits forever. A cancel that fails (a store read or write) is retried like a
   * delivery; given up, the next start-up's reconciliation cancels again (state tag `cancelingChild`).
   */
  private async cancelChild(recordId: string, orderId: string, attempt = 0): Promise<void> {
    await this.placements.get(orderId);
    let rec: ActorRecord | null;
    try {
      rec = await this.orders.cancelChild(orderId);
    } catch (err) {
      this.failedDeliveries++;
      if (attempt >= DELIVERY_RETRIES) {
        this.abandonedDeliveries++;
        this.log.error({ err, recordId, orderId, attempts: attempt + 1 }, 'cancel of a child order abandoned after every retry: canceled again at the next start-up');
        return;
      }
      this.log.warn({ err, recordId, orderId, attempt: attempt + 1 }, 'cancel of a child order failed: retrying');
      this.later(deliveryDelayMs(attempt + 1), () => this.cancelChild(recordId, orderId, attempt + 1));
      return;
    }
    if (rec === null) {
      await this.sendToStrategy(recordId, { type: 'order.placeFailed', orderId, error: 'not_placed', reason: 'the order was never placed', atMs: this.clock.now() });
    } else if (rec.final) {
      this.forwardOrder(rec);
    }
  }

  /** Tells the strategy that placed an order (and the bracket of an entry) about its latest state. */
  private forwardOrder(rec: ActorRecord): void {
    const v = rec.view as Record<string, unknown>;
    for (const parent of [v.record_id, v.bracket_id]) {
      if (typeof parent !== 'string') continue;
      const latest = async () => {
        const now = this.host.recordOf(rec._id) ?? (await this.actors.get(rec._id));
        return now ? this.orderEvent(now) : null;
      };
      this.track(this.sendToStrategy(parent, this.orderEvent(rec), latest));
    }
  }

  /** The strategy event of an order's state: `order.refused` (by the venue's error code, never its prose) or `order.updated`. */
  private orderEvent(rec: ActorRecord): StrategyEvent {
    if (rec.status === 'REJECTED') {
      const { error, reason } = rejectionOf(rec);
      return { type: 'order.refused', orderId: rec._id, error, reason };
    }
    const v = rec.view as Record<string, unknown>;
    return { type: 'order.updated', orderId: rec._id, status: rec.status, filledSize: String(v.filled_size ?? '0'), matchedAmount: String(v.matched_amount ?? '0'), final: rec.final };
  }

  private onChanged(c: ActorChange): void {
    if (c.record.kind === 'order') {
      const v = c.record.view as { record_id?: string | null; bracket_id?: string | null };
      if (v.record_id || v.bracket_id) this.forwardOrder(c.record);
      return;
    }
    if (c.record.kind === 'strategy') this.syncWatch(c.record, c.snapshot.context as StrategyContext);
  }

  // ── price triggers ──────────────────────────────────────────────────────────────────────────

  /**
   * Registers the strategy's current watch; with `checkNow`, a new or changed watch is checked
   * against the touch at once.
   */
  private syncWatch(rec: ActorRecord, context?: StrategyContext, checkNow = true): void {
    const c = context ?? (this.host.snapshotOf(rec._id)?.context as StrategyContext | undefined) ?? (JSON.parse(rec.snapshot).context as StrategyContext);
    if (rec.final) {
      this.triggers.remove(rec._id);
      return;
    }
    const changed = this.triggers.set(rec._id, c.tokenId, c.watch);
    if (checkNow && changed && Object.keys(c.watch ?? {}).length) this.deliver(c.tokenId, this.touchOf(c.tokenId), [rec._id], true);
  }

  private onBook(tokenId: string): void {
    const touch = this.touchOf(tokenId);
    this.deliver(tokenId, touch, this.triggers.fire(tokenId, touch), false);
  }

  /** Sends `book.touch` to strategies; each one's watch is registered again after it handled it. */
  private deliver(tokenId: string, touch: Touch, ids: string[], onlyIfHolds: boolean): void {
    for (const id of ids) {
      // a fresh or changed watch: only strategies whose condition already holds get the touch
      if (onlyIfHolds && !this.triggers.fireOne(id, tokenId, touch)) continue;
      this.track(this.deliverTouch(id, tokenId, touch, 0));
    }
  }

  /**
   * Delivers a fired touch to strategy `id`. Delivered: its (new) watch is registered. Failed (a
   * store read, a write): it is armed again at once (a later touch fires it), and after a backoff
   * the current touch is checked against it and delivered if its condition still holds, at most
   * {@link DELIVERY_RETRIES} times; then it stays armed, logged at error and counted.
   */
  private async deliverTouch(id: string, tokenId: string, touch: Touch, attempt: number): Promise<void> {
    const held = this.triggers.held(id);
    let rec: ActorRecord;
    try {
      rec = await this.host.send(id, { type: 'book.touch', bid: touch.bid, ask: touch.ask });
    } catch (err) {
      this.failedDeliveries++;
      // the host's snapshot is the persisted one (a failure after the write leaves the new one);
      // without it, the registration as it fired
      const c = this.host.snapshotOf(id)?.context as StrategyContext | undefined;
      if (c) this.triggers.set(id, c.tokenId, c.watch);
      else this.triggers.rearm(id, held);
      if (attempt >= DELIVERY_RETRIES) {
        this.abandonedDeliveries++;
        this.log.error({ err, recordId: id, attempts: attempt + 1 }, 'price trigger not delivered after every retry: armed again, it fires at the next touch change');
        return;
      }
      this.log.warn({ err, recordId: id, attempt: attempt + 1 }, 'price trigger not delivered: armed again, retrying');
      this.later(deliveryDelayMs(attempt + 1), async () => {
        const now = this.touchOf(tokenId);
        if (this.triggers.fireOne(id, tokenId, now, true)) await this.deliverTouch(id, tokenId, now, attempt + 1);
      });
      return;
    }
    this.triggers.delivered(id, held);
    // registered again, whether or not the touch changed anything (a change did so already)
    this.syncWatch(rec, undefined, false);
  }

  // ── requests ────────────────────────────────────────────────────────────────────────────────

  private get risk() {
    return this.orders.risk;
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
   *   `WOULD_TRIGGER_IMMEDIATELY` (a stop whose level the best bid already reached).
   */
  check(userId: string, body: OrderRequest): StrategyInput {
    const type = body.type as StrategyType;
    const info = this.risk.market(body.symbol);
    const tick = info.tickSize;
    const ex = (body.execution ?? {}) as Record<string, unknown>;
    const forbid = (fields: string[], why: string) => {
      for (const f of fields) if ((body as Record<string, unknown>)[f] !== undefined) throw errors.badRequest(`${f} ${why}`);
    };
    forbid(['time_in_force', 'expiration'], `is not used by ${type} strategies`);
    if (type !== 'PEGGED') forbid(['condition_id', 'outcome', 'offset_ticks', 'budget_usdc', 'price_floor', 'price_ceiling'], `is only used by PEGGED orders`);
    if (!AMOUNT_FIELDS[type].includes('quote_amount')) forbid(['quote_amount'], `is not used by ${type} orders (they are sized in shares: send size)`);
    if (body.execution !== undefined) {
      const used = EXECUTION_FIELDS[type];
      const warned = EXECUTION_WARNED[type] ?? [];
      if (!used.length) {
        const first = Object.keys(body.execution)[0];
        throw errors.badRequest(`${first !== undefined ? `execution.${first}` : 'execution'} is not used by ${type} orders (they take no execution object)`);
      }
      for (const f of Object.keys(body.execution)) {
        if (!used.includes(f) && !warned.includes(f)) throw errors.badRequest(`execution.${f} is not used by ${type} orders (${type} takes ${used.map((u) => `execution.${u}`).join(', ')})`);
      }
    }
    const touchNow = this.touchOf(body.symbol);
    const warnings: string[] = [];
    const base: StrategyInput = {
      recordId: `stg_${randomUUID()}`, userId, type, side: body.side, tokenId: body.symbol, tickSize: str(tick), minSize: str(info.minSize),
      price: null, size: null, quoteAmount: null, execution: ex, warnings, message: null,
      clientOrderId: body.client_order_id ?? null, metadata: body.metadata ?? null, createdAtMs: this.clock.now(), touch: touchNow,
    };
    const offsets = () => {
      const pct = ex.trailing_offset_pct as number | undefined;
      const abs = ex.trailing_offset as string | undefined;
      if (pct !== undefined && abs !== undefined) throw errors.badRequest('send execution.trailing_offset_pct or execution.trailing_offset, not both');
      if (abs !== undefined) checkTrailingOffset(abs);
      return { offsetPct: pct !== undefined ? new Dec(String(pct)).toFixed() : null, offsetAbs: abs ?? null };
    };
    switch (type) {
      case 'STOP_LOSS': {
        const price = checkPrice('price', body.price!, tick);
        const size = checkShares('size', body.size!);
        this.needShares(userId, body.symbol, size);
        if (touchNow.bid !== null && dec(touchNow.bid).lte(price)) {
          throw new DomainError('WOULD_TRIGGER_IMMEDIATELY', `STOP_LOSS price ${str(price)} is at or above the best bid ${touchNow.bid}: it would trigger at once; sell with LIMIT or MARKET instead`);
        }
        return { ...base, price: str(price), size: str(size), message: `STOP_LOSS armed: sells ${str(size)} shares when the best bid reaches ${str(price)}` };
      }
      case 'TRAILING_STOP': {
        if (body.side !== 'sell') throw errors.badRequest('TRAILING_STOP is a sell: side must be "sell"');
        const size = checkShares('size', body.size!);
        const ref = (ex.high_water_mark as string | undefined) ?? body.price!;
        const mark = checkPrice(ex.high_water_mark !== undefined ? 'execution.high_water_mark' : 'price', ref, FINE_STEP);
        const o = offsets();
        const level = trailingStopLevel(o, str(mark));
        this.needShares(userId, body.symbol, size); // after every rule of the request: a 400 comes first
        if (touchNow.bid !== null && dec(touchNow.bid).lte(level)) {
          throw new DomainError('WOULD_TRIGGER_IMMEDIATELY', `TRAILING_STOP would trigger at once: the best bid ${touchNow.bid} is at or below the armed level ${level} (mark ${str(mark)})`);
        }
        return { ...base, size: str(size), highWaterMark: str(mark), ...o, message: trailingStopMessage({ triggerPrice: level, highWaterMark: str(mark) }) };
      }
      case 'TRAILING_BUY': {
        if (body.side !== 'buy') throw errors.badRequest('TRAILING_BUY is a buy: side must be "buy"');
        forbid(['size', 'price'], 'is not used by TRAILING_BUY (it is sized by quote_amount; the ceiling is execution.price_ceiling)');
        const quote = checkMinQuote(body.quote_amount!, '');
        const o = offsets();
        const seeded = ex.low_water_mark === undefined;
        if (seeded && touchNow.ask === null) throw new DomainError('NO_LIQUIDITY', 'no ask to seed the low-water mark from; send execution.low_water_mark');
        const mark = seeded ? dec(touchNow.ask!) : checkPrice('execution.low_water_mark', ex.low_water_mark as string, FINE_STEP);
        const entry = trailingBuyLevel(o, str(mark));
        const ceiling = ex.price_ceiling !== undefined ? checkPrice('execution.price_ceiling', ex.price_ceiling as string, FINE_STEP) : null;
        if (ceiling && ceiling.lt(entry)) {
          throw errors.badRequest(`execution.price_ceiling ${str(ceiling)} is below the entry ${entry} that the offset implies from the low-water mark ${str(mark)}: it could never fire`);
        }
        this.needDollars(userId, body.symbol, quote); // after every rule of the request: a 400 comes first
        return {
          ...base, quoteAmount: str(quote), lowWaterMark: str(mark), priceCeiling: ceiling ? str(ceiling) : null, ...o,
          message: trailingBuyMessage({ quoteAmount: str(quote), triggerPrice: entry, lowWaterMark: str(mark), priceCeiling: ceiling ? str(ceiling) : null }, seeded ? 'seeded from the ask' : null),
        };
      }
      case 'TWAP': {
        const interval = ex.interval_sec as number;
        const duration = ex.duration_sec as number;
        const durationMs = checkTwapDuration(duration, interval);
        if (body.size !== undefined && body.quote_amount !== undefined) throw errors.badRequest('send size (shares) or quote_amount (dollars) for a TWAP, not both');
        for (const f of EXECUTION_WARNED.TWAP!) if (ex[f] !== undefined) warnings.push(`execution.${f} is ignored for TWAP orders`);
        let derived = false;
        let price: Dec;
        if (body.price !== undefined) price = checkPrice('price', body.price, tick);
        else {
          const touch = body.side === 'buy' ? touchNow.ask : touchNow.bid;
          if (touch === null) throw new DomainError('NO_LIQUIDITY', `no ${body.side === 'buy' ? 'ask' : 'bid'} to derive the TWAP limit from; send price`);
          price = dec(touch);
          derived = true;
        }
        const size = body.size !== undefined ? checkShares('size', body.size) : floorShares(dec(body.quote_amount!).div(price));
        if (size.lte(0)) throw errors.badRequest(`quote_amount ${body.quote_amount} buys less than 0.01 shares at ${str(price)}`);
        const n = twapSliceCount(durationMs, interval * 1000);
        checkTwapSlices({ size, durationSec: duration, intervalSec: interval, slices: n, sliceSize: floorShares(size.div(n)), passive: ex.passive === true }, info);
        if (body.side === 'buy') this.needDollars(userId, body.symbol, price.times(size));
        else this.needShares(userId, body.symbol, size);
        return {
          ...base, price: str(price), size: str(size), quoteAmount: body.quote_amount ?? null,
          intervalMs: interval * 1000, durationMs, slicesTotal: n, passive: ex.passive === true,
          message: `TWAP: ${str(size)} shares in ${n} slices every ${interval} s, limit ${str(price)}${derived ? ` (derived from the live touch: best ${body.side === 'buy' ? 'ask' : 'bid'})` : ''}`,
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
        const tol = ex.price_tolerance_pct as number | undefined;
        return {
          ...base, price: str(price), size: str(size), clipSize: str(clip), tolerancePct: tol !== undefined ? new Dec(String(tol)).toFixed() : null,
          message: `ICEBERG: ${str(size)} shares at ${str(price)}, ${str(clip)} shown at a time`,
        };
      }
      case 'PEGGED': {
        if (body.side !== 'buy') throw errors.badRequest('PEGGED is a buy with a dollar budget: side must be "buy"');
        forbid(['size', 'price', 'execution'], 'is not used by PEGGED orders');
        if (body.budget_usdc !== undefined && body.quote_amount !== undefined && !dec(body.budget_usdc).eq(body.quote_amount)) {
          throw errors.badRequest('budget_usdc and quote_amount (its alias) disagree: send one');
        }
        const budget = dec(body.budget_usdc ?? body.quote_amount!);
        if (budget.lte(0)) throw errors.badRequest('budget_usdc must be greater than 0');
        if (body.condition_id !== undefined && body.condition_id !== info.conditionId) throw errors.badRequest(`condition_id ${body.condition_id} is not the market of symbol ${body.symbol}`);
        if (body.outcome !== undefined && body.outcome !== info.outcome.toLowerCase()) throw errors.badRequest(`outcome ${body.outcome} does not match symbol ${body.symbol} (${info.outcome.toLowerCase()})`);
        const floor = body.price_floor !== undefined ? checkPrice('price_floor', String(body.price_floor), FINE_STEP) : null;
        const ceiling = body.price_ceiling !== undefined ? checkPrice('price_ceiling', String(body.price_ceiling), FINE_STEP) : null;
        if (floor && ceiling && floor.gt(ceiling)) throw errors.badRequest(`price_floor ${str(floor)} is above price_ceiling ${str(ceiling)}`);
        this.needDollars(userId, body.symbol, budget);
        const input: StrategyInput = {
          ...base, quoteAmount: str(budget), offsetTicks: body.offset_ticks ?? 0, priceFloor: floor ? str(floor) : null, priceCeiling: ceiling ? str(ceiling) : null,
        };
        const peg = pegPrice(input, touchNow);
        // where the peg rests against the touch it follows: the message says why when it is elsewhere
        const target = touchNow.bid === null ? null : dec(touchNow.bid).minus(dec(input.offsetTicks ?? 0).times('0.001'));
        const where =
          peg === null ? ''
          : target !== null && dec(peg).lt(target) ? ` (below the best bid ${touchNow.bid}: capped by ${ceiling && dec(peg).eq(ceiling) ? 'price_ceiling' : "the market's tick"})`
          : target !== null && dec(peg).gt(target) ? ` (above the best bid minus the offset: raised to ${floor && dec(peg).eq(floor) ? 'price_floor' : "the market's tick"})`
          : input.offsetTicks ? ` (${input.offsetTicks} ticks of 0.001 from the touch)` : ' (at the touch)';
        return { ...input, message: `PEGGED: $${str(budget)} budget, resting at ${peg ?? '(waiting for a price within floor/ceiling)'}${where}` };
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
    const info = this.venue.token(body.symbol)!;
    const tick = info.tickSize;
    const legOf = (name: 'take_profit' | 'stop_loss', raw: { price: string; size?: string }): BracketLeg => {
      const price = checkPrice(`${name}.price`, raw.price, tick);
      let requested: string | null = null;
      if (raw.size !== undefined && !dec(raw.size).isZero()) {
        const size = checkShares(`${name}.size`, raw.size);
        if (entry.size !== null && size.gt(entry.size)) throw errors.badRequest(`${name}.size ${str(size)} is more than the entry's ${entry.size} shares`);
        if (name === 'take_profit') checkRestingMinimum('take_profit.size', size, str(size), info);
        requested = str(size);
      }
      return { price: str(price), requestedSize: requested, size: null, order_id: null, id: null, status: 'WAITING', error: null };
    };
    const tp = body.take_profit ? legOf('take_profit', body.take_profit) : undefined;
    const sl = body.stop_loss ? legOf('stop_loss', body.stop_loss) : undefined;
    if (tp && sl && !dec(tp.price).gt(sl.price)) throw errors.badRequest(`take_profit.price ${tp.price} must be above stop_loss.price ${sl.price}`);
    const what = [tp && `take-profit at ${tp.price}`, sl && `stop-loss at ${sl.price}`].filter(Boolean).join(' and ');
    return {
      recordId: `stg_${entry.orderId.slice(4)}`, userId, type: 'BRACKET', side: 'sell', tokenId: body.symbol, tickSize: str(tick), minSize: str(info.minSize),
      price: sl?.price ?? tp!.price, size: null, quoteAmount: null, execution: {}, warnings: [],
      message: `brackets: ${what}, placed when entry ${entry.orderId} ends, sized by what it filled`,
      clientOrderId: null, metadata: null, createdAtMs: entry.createdAtMs, touch: this.touchOf(body.symbol),
      entryOrderId: entry.orderId, legs: { ...(tp ? { take_profit: tp } : {}), ...(sl ? { stop_loss: sl } : {}) },
    };
  }

  /**
   * Places a buy entry with brackets: the BRACKET actor is created first (so a crash in between
   * leaves a bracket whose entry never came, which reconciliation ends), then the entry; the
   * legs go out once the entry ends with shares filled.
   * @returns the entry's record and the bracket's legs (spec 2.3 `brackets`) and warnings.
   */
  async placeWithBrackets(partnerId: string, entry: OrderInput, bracket: StrategyInput): Promise<{ entry: ActorRecord; brackets: Record<string, unknown>; warnings: string[] }> {
    let rec: ActorRecord;
    let created = false;
    try {
      // the bracket is created in the user's placement queue once the entry passed its wallet
      // check there: an entry refused for funds leaves no BRACKET record either
      rec = await this.orders.place(partnerId, { ...entry, bracketId: bracket.recordId }, {}, async () => {
        await this.host.create(DEFINITIONS.BRACKET.machineId, { id: bracket.recordId, input: bracket, partnerId, ownerUserId: bracket.userId });
        created = true;
      });
    } finally {
      if (created) await this.settle(bracket.recordId);
    }
    const c = this.host.snapshotOf(bracket.recordId)?.context as StrategyContext | undefined;
    const b = c ?? (JSON.parse((await this.actors.get(bracket.recordId))!.snapshot).context as StrategyContext);
    return { entry: this.host.recordOf(rec._id) ?? rec, brackets: bracketsView(b, bracket.recordId), warnings: b.warnings };
  }

  /**
   * Starts a checked strategy and waits until its first actions settled (a TWAP's first slice,
   * an iceberg's first clip, …).
   * @returns the strategy record.
   */
  async start(partnerId: string, input: StrategyInput): Promise<ActorRecord> {
    const def = DEFINITIONS[input.type];
    await this.host.create(def.machineId, { id: input.recordId, input, partnerId, ownerUserId: input.userId });
    await this.settle(input.recordId);
    return this.host.recordOf(input.recordId) ?? (await this.actors.get(input.recordId))!;
  }

  /**
   * DELETE /v2/trade/strategies/{record_id}. The strategy's machine decides: it must accept
   * `strategy.cancel` in its current state (`snapshot.can`), and afterwards be CANCELED or in a
   * state that certainly ends canceled (tag `canceling`, e.g. while its working order is being
   * canceled). A strategy already being canceled answers as canceled.
   * @throws {DomainError} `NOT_FOUND` for a strategy not of this user; `CONFLICT` when it already ended, when its
   *   state refuses a cancel (a stop that triggered: its order must be canceled with DELETE
   *   order; the reason is the state's `noCancel`), or when it ended otherwise meanwhile.
   */
  async cancel(userId: string, recordId: string): Promise<ActorRecord> {
    const rec = this.host.recordOf(recordId) ?? (await this.actors.get(recordId));
    if (!rec || rec.kind !== 'strategy' || rec.ownerUserId !== userId) throw errors.notFound(`no strategy ${recordId}`);
    if (rec.final) throw errors.conflict(`strategy ${recordId} is already ${rec.status}`);
    const snapshot = this.snapshotFor(rec);
    if (!snapshot.hasTag('canceling')) {
      if (!snapshot.can({ type: 'strategy.cancel' })) throw errors.conflict(this.noCancelReason(recordId, snapshot));
      await this.host.send(recordId, { type: 'strategy.cancel' });
    }
    await this.settle(recordId);
    const after = this.host.recordOf(recordId) ?? (await this.actors.get(recordId))!;
    if (after.status === 'CANCELED' || (!after.final && this.host.snapshotOf(recordId)?.hasTag('canceling'))) return after;
    const message = (after.view as { message?: string }).message;
    throw errors.conflict(`strategy ${recordId} is ${after.status}${message ? `: ${message}` : ''}; it was not canceled`);
  }

  /** The live snapshot of a strategy, or its stored one restored (a passivated strategy). */
  private snapshotFor(rec: ActorRecord): Snapshot {
    const live = this.host.snapshotOf(rec._id);
    if (live) return live as Snapshot;
    const type = (JSON.parse(rec.snapshot).context as StrategyContext).type;
    return DEFINITIONS[type].logic.resolveState(JSON.parse(rec.snapshot)) as Snapshot;
  }

  /** Why a strategy's current state refuses DELETE strategy (its state's meta `noCancel`). */
  private noCancelReason(recordId: string, snapshot: Snapshot): string {
    const metas = Object.values(snapshot.getMeta() as Record<string, CancelMeta>);
    const meta = metas.find((m) => m?.noCancel);
    const c = snapshot.context as StrategyContext;
    if (!meta) return `strategy ${recordId} cannot be canceled in its current state (${String(snapshot.value)})`;
    const hint = meta.cancelWorking ? `: cancel its order with DELETE /v2/trade/orders/${c.working ?? c.children.at(-1)?.orderId ?? '{order_id}'}` : '';
    return `strategy ${recordId} ${meta.noCancel}${hint}`;
  }

  /**
   * Start-up reconciliation, after orders were reconciled with the venue: every live strategy
   * learns the latest state of its working order, re-places an order the process died before
   * placing (same deterministic id), cancels again the order it was canceling (state tag
   * `cancelingChild`), registers its watch, and sees the current touch.
   */
  async reconcile(): Promise<number> {
    const ids = this.host.liveIds('strategy');
    for (const id of ids) {
      const c = this.host.snapshotOf(id)?.context as StrategyContext | undefined;
      if (c?.type === 'BRACKET' && c.entryOrderId && c.legs && Object.values(c.legs).every((l) => l.status === 'WAITING')) {
        // a bracket still waiting for its entry: tell it the entry's state, or that it never came
        const entry = this.host.recordOf(c.entryOrderId) ?? (await this.actors.get(c.entryOrderId));
        if (entry) this.forwardOrder(entry);
        else this.track(this.sendToStrategy(id, { type: 'order.refused', orderId: c.entryOrderId, error: 'rejected', reason: 'the entry was never placed (the process stopped first)' }));
        continue;
      }
      if (!c?.working) continue;
      const child = this.host.recordOf(c.working) ?? (await this.actors.get(c.working));
      if (child) this.forwardOrder(child);
      else if (c.placing?.orderId === c.working) this.track(this.placeChild(c, c.placing));
      else this.track(this.sendToStrategy(id, { type: 'order.placeFailed', orderId: c.working, error: 'not_placed', reason: 'the order was never placed', atMs: this.clock.now() }));
      // a cancel persisted but not carried out before the process stopped (or given up): again
      if (this.host.snapshotOf(id)?.hasTag('cancelingChild') && !child?.final) this.track(this.cancelChild(id, c.working));
    }
    await this.idle();
    // every watch (registered as each strategy was restored) meets the current touch
    for (const tokenId of this.triggers.watchedTokens()) {
      const touch = this.touchOf(tokenId);
      this.deliver(tokenId, touch, this.triggers.fire(tokenId, touch, true), false);
    }
    await this.idle();
    return ids.length;
  }

}
