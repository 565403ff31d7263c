import type { OrderContext, OrderInput, OrderParentKind } from '../../machines/order.js';
import {
  childOrderPrice,
  type ChildOrder,
  type StrategyContext,
  type StrategyEvent,
} from '../../machines/strategy-kit.js';
import type { OrderView } from '../../schemas/orders.js';
import type { ActorChange, ActorHost } from '../actor-host.js';
import type { Clock } from '../clock.js';
import { dec, str } from '../decimal.js';
import { DomainError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { OrderService } from '../orders.js';
import { refusalCode } from '../risk.js';
import type { ActorRecord, ActorRepository } from '../store/actors.js';
import type { CancelReason } from '../venue/port.js';
import { DELIVERY_RETRIES, deliveryDelayMs, type Deliveries } from './deliveries.js';

/** The venue's verdict on a REJECTED order, as codes (the order machine's `error`, `reason`). */
function rejectionOf(host: ActorHost, rec: ActorRecord): { error: string; reason: string } {
  try {
    const c = host.storedSnapshot(rec).context as OrderContext;
    return { error: c.error ?? 'rejected', reason: c.reason ?? '' };
  } catch {
    return { error: 'rejected', reason: '' };
  }
}

/**
 * Whether a finished CANCELED order was canceled by its market's
 * resolution (its cancel code `MARKET_RESOLVED`, never the prose).
 */
function canceledByResolution(host: ActorHost, rec: ActorRecord): boolean {
  if (!rec.final || rec.status !== 'CANCELED') return false;
  try {
    return (host.storedSnapshot(rec).context as OrderContext).cancelReason?.code === 'MARKET_RESOLVED';
  } catch {
    return false;
  }
}

/**
 * The parent a child order is placed for: a strategy (its context) or a copytrade subscription
 * (`parentKind: 'copytrade'`, `type` `COPYTRADE`, `tokenId` the token of this copy). Tick size:
 * the token's tick when the parent was created (the current one is used when the venue knows it).
 */
export type ChildParent = Pick<StrategyContext, 'recordId' | 'userId' | 'tokenId' | 'tickSize'> & {
  type: string;
  parentKind?: OrderParentKind;
  /** The parent's partner, when the caller knows it (else read from the parent's record). */
  partnerId?: string;
};

/** The strategy links of an order's view (spec 2.3 `record_id`, `bracket_id`). */
type OrderLinks = Pick<OrderView, 'record_id' | 'bracket_id' | 'filled_size' | 'matched_amount'>;

/**
 * The child-order router: carries a strategy's commands (place, cancel a child order) to the
 * order service, and each child order's changes back to the strategy that placed it (and to the
 * BRACKET of an entry). What reaches a strategy is structured: `order.refused` with the venue's
 * or risk's error code (engine/risk.ts `refusalCode`), `order.placeFailed` with `placement_failed`
 * or `not_placed`, `order.updated` with the order's status and amounts; the `reason` prose is for
 * messages only, never for decisions.
 *
 * A delivery that fails (a store read or write) is retried with backoff
 * ({@link DELIVERY_RETRIES} times, see engine/strategies/deliveries.ts), then given up and counted.
 */
export class ChildOrderRouter {
  /** Child orders being placed: a cancel of one waits for its placement. */
  private readonly placements = new Map<string, Promise<void>>();

  constructor(
    private readonly host: ActorHost,
    private readonly actors: ActorRepository,
    private readonly orders: OrderService,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly deliveries: Deliveries,
  ) {}

  /**
   * Places a child order a strategy decided on. Refused by risk (engine/risk.ts `checkChild`:
   * the wallet, post-only crossing, price), the strategy gets `order.refused` with the venue's
   * code for it (risk `refusalCode`) and no order is created; when it cannot be placed (the order
   * service throws: a store read or write failed), the strategy gets `order.placeFailed`
   * (`placement_failed`) and decides (retry, next slice, FAILED); a cancel of the order waits for
   * this placement. Never throws.
   */
  placeChild(c: ChildParent, order: ChildOrder): Promise<void> {
    const p = this.tryPlaceChild(c, order);
    this.placements.set(order.orderId, p);
    void p.finally(() => {
      if (this.placements.get(order.orderId) === p) this.placements.delete(order.orderId);
    });
    return p;
  }

  /**
   * Resolves when child order `orderId` has nothing queued or in flight: its placement and its
   * venue command are over (the venue's balances reflect it). At once for an order never placed.
   */
  whenPlaced(orderId: string): Promise<void> {
    return Promise.resolve(this.placements.get(orderId)).then(() => this.orders.whenQuiet(orderId));
  }

  /**
   * The order input of child order `order` of parent `c`: priced on the market's current tick (it
   * may have changed since the parent started), linked to its parent (`parentId`, `parentKind`,
   * a bracket's id).
   */
  childInput(c: ChildParent, order: ChildOrder): OrderInput {
    return {
      orderId: order.orderId,
      userId: c.userId,
      tokenId: c.tokenId,
      side: order.side,
      type: order.type ?? 'LIMIT',
      // priced on the market's current tick (it may have changed since the strategy started)
      price:
        order.type === 'MARKET'
          ? null
          : str(
              childOrderPrice(
                { tickSize: this.orders.risk.tickOf(c.tokenId) ?? c.tickSize },
                order,
                this.orders.risk.touch(c.tokenId),
              ),
            ),
      size: order.type === 'MARKET' && order.side === 'buy' ? null : order.size,
      quoteAmount: order.type === 'MARKET' && order.side === 'buy' ? (order.quoteAmount ?? null) : null,
      timeInForce: order.timeInForce,
      expiresAtMs: null,
      clientOrderId: null,
      metadata: null,
      createdAtMs: this.clock.now(),
      isStopLoss: order.isStopLoss,
      isTakeProfit: order.isTakeProfit ?? false,
      // every leg of a bracket carries its bracket's id, like the entry does
      parentId: c.recordId,
      ...(c.parentKind && c.parentKind !== 'strategy' ? { parentKind: c.parentKind } : {}),
      bracketId: c.type === 'BRACKET' ? c.recordId : null,
      postOnly: order.postOnly,
    };
  }

  private async tryPlaceChild(c: ChildParent, order: ChildOrder): Promise<void> {
    let placed: ActorRecord;
    try {
      const partnerId = c.partnerId ?? (await this.actors.get(c.recordId))?.partnerId ?? 'unknown';
      placed = await this.orders.placeChild(partnerId, this.childInput(c, order));
    } catch (err) {
      if (err instanceof DomainError) {
        // refused by risk (engine/risk.ts): permanent, like the venue's verdict; nothing was created
        await this.sendToStrategy(c.recordId, {
          type: 'order.refused',
          orderId: order.orderId,
          error: refusalCode(err),
          reason: err.message,
        });
        return;
      }
      this.log.error({ err, recordId: c.recordId, orderId: order.orderId }, 'child order could not be placed');
      // a failure after the order's first write leaves the order on record: it then reports itself
      const existing = await this.actors.get(order.orderId).catch(() => null);
      if (existing) return this.forwardOrder(existing);
      const reason = err instanceof Error ? err.message : String(err);
      await this.sendToStrategy(c.recordId, {
        type: 'order.placeFailed',
        orderId: order.orderId,
        error: 'placement_failed',
        reason,
        atMs: this.clock.now(),
      });
      return;
    }
    // The order's changes reach the strategy through onChanged; a duplicate (restart) is resent here.
    this.forwardOrder(placed);
  }

  /**
   * Cancels a strategy's child order, once its placement (if in flight) is over, recording
   * `reason` on it (the strategy and why: view `cancel_code`, `message`). A child that
   * does not exist (never placed) is reported to the strategy as `order.placeFailed`
   * (`not_placed`); one already done has its final state sent again: a strategy waiting for the
   * cancel never waits forever. A cancel that fails (a store read or write) is retried like a
   * delivery; given up, the next start-up's reconciliation cancels again (state tag `cancelingChild`).
   * Never throws.
   */
  async cancelChild(recordId: string, orderId: string, reason: CancelReason, attempt = 0): Promise<void> {
    await this.placements.get(orderId);
    let rec: ActorRecord | null;
    try {
      rec = await this.orders.cancelChild(orderId, reason);
    } catch (err) {
      this.deliveries.failed++;
      if (attempt >= DELIVERY_RETRIES) {
        this.deliveries.abandoned++;
        this.log.error(
          { err, recordId, orderId, attempts: attempt + 1 },
          'cancel of a child order abandoned after every retry: canceled again at the next start-up',
        );
        return;
      }
      this.log.warn({ err, recordId, orderId, attempt: attempt + 1 }, 'cancel of a child order failed: retrying');
      this.deliveries.later(deliveryDelayMs(attempt + 1), () =>
        this.cancelChild(recordId, orderId, reason, attempt + 1),
      );
      return;
    }
    if (rec === null) {
      await this.sendToStrategy(recordId, {
        type: 'order.placeFailed',
        orderId,
        error: 'not_placed',
        reason: 'the order was never placed',
        atMs: this.clock.now(),
      });
    } else if (rec.final) {
      this.forwardOrder(rec);
    }
  }

  /**
   * Tells the strategy that placed an order (view `record_id`) and the bracket of an entry (view
   * `bracket_id`) about the order's latest state; a retry sends the state of that moment.
   */
  forwardOrder(rec: ActorRecord): void {
    const v = rec.view as OrderLinks;
    // a bracket's leg names the bracket twice (`record_id`, `bracket_id`): it hears once
    for (const parent of new Set([v.record_id, v.bracket_id])) {
      if (typeof parent !== 'string') continue;
      const latest = async () => {
        const now = this.host.recordOf(rec._id) ?? (await this.actors.get(rec._id));
        return now ? this.orderEvent(now) : null;
      };
      this.deliveries.track(this.sendToStrategy(parent, this.orderEvent(rec), latest));
    }
  }

  /**
   * The strategy event of an order's state: `order.refused` (by
   * the venue's error code, never its prose) or `order.updated`.
   */
  orderEvent(rec: ActorRecord): StrategyEvent {
    if (rec.status === 'REJECTED') {
      const { error, reason } = rejectionOf(this.host, rec);
      return { type: 'order.refused', orderId: rec._id, error, reason };
    }
    const v = rec.view as OrderLinks;
    return {
      type: 'order.updated',
      orderId: rec._id,
      status: rec.status,
      filledSize: String(v.filled_size ?? '0'),
      matchedAmount: String(v.matched_amount ?? '0'),
      final: rec.final,
      ...(canceledByResolution(this.host, rec) ? { marketResolved: true } : {}),
      atMs: this.clock.now(),
    };
  }

  /**
   * {@link orderEvent} from the order's context as its step left it (an `ActorChange`'s snapshot):
   * the same event, without deriving the order's whole view or parsing its stored snapshot.
   * @param rec - the order's record at that step (status, final).
   */
  orderEventOf(rec: Pick<ActorRecord, '_id' | 'status' | 'final'>, c: OrderContext): StrategyEvent {
    if (rec.status === 'REJECTED')
      return { type: 'order.refused', orderId: rec._id, error: c.error ?? 'rejected', reason: c.reason ?? '' };
    return {
      type: 'order.updated',
      orderId: rec._id,
      status: rec.status,
      filledSize: c.filledSize === '0' ? '0' : str(dec(c.filledSize)),
      matchedAmount: c.matchedAmount,
      final: rec.final,
      ...(rec.final && rec.status === 'CANCELED' && c.cancelReason?.code === 'MARKET_RESOLVED'
        ? { marketResolved: true }
        : {}),
      atMs: this.clock.now(),
    };
  }

  /**
   * An order actor changed (ActorHost `changed`): its strategy and bracket hear of it. A copytrade
   * subscription's orders are left to the copytrade service, which hands their changes over a
   * burst at a time (engine/copytrade/service.ts).
   */
  onOrderChanged(c: ActorChange): void {
    const order = c.snapshot.context as OrderContext;
    if (order.parentKind === 'copytrade') return;
    // the view's `record_id` / `bracket_id`, read from the context: an order of no strategy
    // (most of them) never has its view derived here
    if (order.parentId || order.bracketId) this.forwardOrder(c.record);
  }

  /**
   * Sends `event` to strategy `id`; when that fails (a store read or write), retries with backoff,
   * at most {@link DELIVERY_RETRIES} times, then gives up (logged at error and counted). Never throws.
   * @param refresh - builds the event again for a retry (a child order's report: its latest
   *   state, so that a retried report never takes the strategy back to an older one); null =
   *   nothing to send any more.
   */
  async sendToStrategy(
    id: string,
    event: StrategyEvent,
    refresh?: () => Promise<StrategyEvent | null>,
    attempt = 0,
  ): Promise<void> {
    try {
      await this.host.send(id, event);
    } catch (err) {
      this.deliveries.failed++;
      if (attempt >= DELIVERY_RETRIES) {
        this.deliveries.abandoned++;
        this.log.error(
          { err, recordId: id, event: event.type, attempts: attempt + 1 },
          'delivery to a strategy abandoned after every retry',
        );
        return;
      }
      this.log.warn(
        { err, recordId: id, event: event.type, attempt: attempt + 1 },
        'delivery to a strategy failed: retrying',
      );
      this.deliveries.later(deliveryDelayMs(attempt + 1), async () => {
        const again = refresh ? await refresh().catch(() => event) : event;
        if (again) await this.sendToStrategy(id, again, refresh, attempt + 1);
      });
    }
  }
}
