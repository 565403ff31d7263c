import type { AnyStateMachine, SnapshotFrom } from 'xstate';
import { bracketMachine, BRACKET_STATUS } from '../../machines/bracket.js';
import { icebergMachine, ICEBERG_STATUS } from '../../machines/iceberg.js';
import type { OrderInput } from '../../machines/order.js';
import { peggedMachine, PEGGED_STATUS } from '../../machines/pegged.js';
import { stopLossMachine, STOP_LOSS_FORM, STOP_LOSS_STATUS } from '../../machines/stop-loss.js';
import {
  STRATEGY_MACHINE_VERSION,
  strategySnapshotForm,
  type CancelOrderParams,
  type ChildOrder,
  type StrategyContext,
  type StrategyInput,
  type StrategyType,
} from '../../machines/strategy-kit.js';
import { trailingBuyMachine, TRAILING_BUY_FORM, TRAILING_BUY_STATUS } from '../../machines/trailing-buy.js';
import { trailingStopMachine, TRAILING_STOP_FORM, TRAILING_STOP_STATUS } from '../../machines/trailing-stop.js';
import { twapMachine, TWAP_STATUS } from '../../machines/twap.js';
import type { OrderRequest } from '../../schemas/orders.js';
import type { ActorChange, ActorHost, SnapshotForm } from '../actor-host.js';
import type { Clock } from '../clock.js';
import { errors } from '../errors.js';
import type { Logger } from '../logger.js';
import type { OrderService } from '../orders.js';
import type { ActorRecord, ActorRepository } from '../store/actors.js';
import type { TriggerIndex } from '../triggers.js';
import type { VenuePort } from '../venue/port.js';
import { ChildOrderRouter } from './child-orders.js';
import { Deliveries } from './deliveries.js';
import { reconcileStrategies } from './reconcile.js';
import { StrategyRequests } from './requests.js';
import { TriggerFeed } from './trigger-feed.js';
import { bracketsView, strategyView, type BracketsView } from './views.js';

type Snapshot = SnapshotFrom<AnyStateMachine>;

/**
 * Machine id, machine, status table and stored form of each strategy type. BRACKET snapshots
 * stay in XState's form (api/handlers/orders.ts reads a bracket's stored context directly).
 */
const DEFINITIONS: Record<
  StrategyType,
  { machineId: string; logic: AnyStateMachine; status: Record<string, string>; form?: SnapshotForm }
> = {
  STOP_LOSS: {
    machineId: 'strategy.stop_loss',
    logic: stopLossMachine,
    status: STOP_LOSS_STATUS,
    form: STOP_LOSS_FORM,
  },
  TRAILING_STOP: {
    machineId: 'strategy.trailing_stop',
    logic: trailingStopMachine,
    status: TRAILING_STOP_STATUS,
    form: TRAILING_STOP_FORM,
  },
  TRAILING_BUY: {
    machineId: 'strategy.trailing_buy',
    logic: trailingBuyMachine,
    status: TRAILING_BUY_STATUS,
    form: TRAILING_BUY_FORM,
  },
  TWAP: { machineId: 'strategy.twap', logic: twapMachine, status: TWAP_STATUS, form: strategySnapshotForm('TWAP') },
  ICEBERG: {
    machineId: 'strategy.iceberg',
    logic: icebergMachine,
    status: ICEBERG_STATUS,
    form: strategySnapshotForm('ICEBERG'),
  },
  PEGGED: {
    machineId: 'strategy.pegged',
    logic: peggedMachine,
    status: PEGGED_STATUS,
    form: strategySnapshotForm('PEGGED'),
  },
  BRACKET: { machineId: 'strategy.bracket', logic: bracketMachine, status: BRACKET_STATUS },
};

/** The message of a strategy ended because its market resolved. */
export const MARKET_RESOLVED_MESSAGE = 'market resolved';

/** What a state's `meta` may say about DELETE strategy (see the machines' `noCancel`). */
interface CancelMeta {
  noCancel?: string;
  /** The working order can be canceled instead (DELETE order). */
  cancelWorking?: boolean;
}

/**
 * Managed strategies (spec 2.2.1, 2.2.2, 2.4, part 3): the facade the API uses. It
 * hosts one actor per strategy (create, cancel, list through the host) and wires the parts:
 * request checks (./requests.ts), the child-order router (./child-orders.ts), the trigger feed
 * (./trigger-feed.ts), start-up reconciliation (./reconcile.ts) and the record views (./views.ts).
 */
export class StrategyService {
  private readonly deliveries: Deliveries;
  private readonly router: ChildOrderRouter;
  private readonly feed: TriggerFeed;
  private readonly requests: StrategyRequests;
  /** The last persisted record of each strategy being started ({@link start}), kept by `changed`. */
  private readonly starting = new Map<string, ActorRecord | null>();

  constructor(
    private readonly host: ActorHost,
    private readonly actors: ActorRepository,
    private readonly orders: OrderService,
    private readonly venue: VenuePort,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {
    this.deliveries = new Deliveries(log);
    this.router = new ChildOrderRouter(host, actors, orders, clock, log, this.deliveries);
    this.feed = new TriggerFeed(
      host,
      (tokenId) => orders.risk.touch(tokenId),
      log,
      this.deliveries,
      (tokenId) => orders.risk.tickOf(tokenId),
      (tokenId) => venue.marketStatus(venue.token(tokenId)?.conditionId ?? '')?.closed === true,
    );
    this.requests = new StrategyRequests(orders.risk, clock);
    for (const [, def] of Object.entries(DEFINITIONS)) {
      host.register({
        machineId: def.machineId,
        version: STRATEGY_MACHINE_VERSION,
        kind: 'strategy',
        logic: def.logic.provide({
          actions: {
            placeOrder: ({ context }: { context: StrategyContext }, { order }: { order: ChildOrder }) =>
              this.deliveries.track(this.router.placeChild(context, order)),
            cancelOrder: ({ context }: { context: StrategyContext }, { orderId, reason }: CancelOrderParams) =>
              this.deliveries.track(this.router.cancelChild(context.recordId, orderId, reason)),
          },
        }),
        statusOf: (s) => def.status[String(s.value)] ?? 'ACTIVE',
        ...(def.form ? { form: def.form } : {}),
        viewOf: strategyView,
        // the view's type without the view: a new strategy's view is derived only when read
        typeOf: (s) => (s.context as StrategyContext).type,
        // armed and waiting only for a price (a stop, a trailing order): the trigger index finds
        // it by id, so it need not stay in memory (memory per armed strategy)
        passivate: (s) => {
          const c = s.context as StrategyContext;
          return c.working === null && Object.keys(c.watch ?? {}).length > 0 && !c.watch.any;
        },
      });
    }
    host.on('changed', (c) => this.onChanged(c));
    host.on('restored', ({ record, context }) => {
      if (record.kind === 'strategy')
        this.triggers.set(record._id, (context as StrategyContext).tokenId, (context as StrategyContext).watch);
    });
    venue.onBook((tokenId) => this.feed.onBook(tokenId));
    venue.onMarket((conditionId) => this.onMarket(conditionId));
  }

  /**
   * A market changed. Once it is closed or resolved, every live strategy on one of its
   * tokens that accepts a cancel (armed, waiting) gets `strategy.cancel` with reason
   * {@link MARKET_RESOLVED_MESSAGE} (or `market closed`) and ends CANCELED with that message;
   * strategies working an order are left to their order, which the venue cancels (`market
   * resolved`). Tracked like every delivery; also run for every closed market at start-up
   * ({@link reconcile}), in case the process died in between.
   */
  onMarket(conditionId: string): void {
    const status = this.venue.marketStatus(conditionId);
    if (!status?.closed) return;
    const market = this.venue.market(conditionId);
    if (!market) return;
    const tokens = new Set(market.tokens.map((t) => t.tokenId));
    const ids = new Set<string>();
    for (const id of this.host.liveIds('strategy')) {
      const c = this.host.snapshotOf(id)?.context as StrategyContext | undefined;
      if (c && tokens.has(c.tokenId)) ids.add(id);
    }
    for (const t of tokens) for (const id of this.triggers.idsOn(t)) ids.add(id);
    const reason = status.resolved ? MARKET_RESOLVED_MESSAGE : 'market closed';
    if (ids.size > 1) this.deliveries.track(this.endAllForMarket([...ids], reason));
    else for (const id of ids) this.deliveries.track(this.endForMarket(id, reason));
  }

  /**
   * {@link endForMarket} of several strategies as ONE host batch (one transaction for all their
   * cancels); when the batch fails, one by one.
   */
  private async endAllForMarket(ids: string[], reason: string): Promise<void> {
    const event = { type: 'strategy.cancel', reason };
    try {
      await this.host.batch(
        ids,
        (b) => {
          for (const id of ids) {
            const snapshot = b.snapshotOf(id); // null: final or gone, nothing to end
            if (snapshot && !snapshot.hasTag('canceling') && snapshot.can(event)) b.step(id, event);
          }
        },
        undefined,
        { loadStored: true }, // armed strategies are passivated
      );
    } catch (err) {
      this.log.warn({ err, strategies: ids.length }, 'ending the strategies of a closed market together failed');
      await Promise.all(ids.map((id) => this.endForMarket(id, reason)));
    }
  }

  private async endForMarket(id: string, reason: string): Promise<void> {
    try {
      const rec = this.host.recordOf(id) ?? (await this.actors.get(id));
      if (!rec || rec.kind !== 'strategy' || rec.final) return;
      const snapshot = this.snapshotFor(rec);
      if (snapshot.hasTag('canceling') || !snapshot.can({ type: 'strategy.cancel', reason })) return;
      await this.host.send(id, { type: 'strategy.cancel', reason });
    } catch (err) {
      this.log.error({ err, strategy: id }, 'ending a strategy on a closed market failed; retried at the next start');
    }
  }

  /**
   * The child-order router: it serves any parent (a strategy, a copytrade subscription), and
   * reports each child order's changes to the parent named by the order's `record_id`.
   */
  get childOrders(): ChildOrderRouter {
    return this.router;
  }

  /** The price-trigger index the feed keeps in step with every strategy's watch. */
  get triggers(): TriggerIndex {
    return this.feed.triggers;
  }

  private onChanged(c: ActorChange): void {
    if (c.record.kind === 'order') this.router.onOrderChanged(c);
    else if (c.record.kind === 'strategy') {
      if (this.starting.has(c.record._id)) this.starting.set(c.record._id, c.record);
      this.feed.syncWatch(c.record, c.snapshot.context as StrategyContext);
    }
  }

  /**
   * Deliveries to strategies that failed (a store read or write) and were retried or armed again,
   * since start. Health can show it (with {@link deliveriesAbandoned}).
   */
  get deliveryFailures(): number {
    return this.deliveries.failed;
  }

  /**
   * Deliveries given up after every retry, since start (each logged at error): a child order's
   * report or a placement failure the strategy has not seen (it learns it at its next event or
   * at the next start-up's reconciliation); a fired trigger is armed again, never given up.
   */
  get deliveriesAbandoned(): number {
    return this.deliveries.abandoned;
  }

  /** Deliveries to strategies waiting for a retry right now (for /healthz). */
  get retryingDeliveries(): number {
    return this.deliveries.retryingCount;
  }

  /** Stops retrying (service shutdown): pending retry timers are dropped. */
  stop(): void {
    this.deliveries.stop();
  }

  /**
   * Resolves when strategy `id` and every command it started are quiet (no step running, no
   * command in flight; retries waiting on a backoff are not waited for): for responses and tests.
   */
  async whenQuiet(id: string): Promise<void> {
    const inFlight = this.deliveries.inFlight;
    for (let i = 0; i < 50; i++) {
      await this.host.whenQuiet(id);
      if (inFlight.size === 0) {
        await new Promise((r) => setImmediate(r));
        if (inFlight.size === 0) {
          await this.host.whenQuiet(id);
          return;
        }
      }
      await Promise.all([...inFlight]);
    }
  }

  /** Waits for every command in flight and every pending retry (tests, shutdown). */
  async idle(): Promise<void> {
    await this.deliveries.idle();
  }

  /**
   * Checks a managed-strategy request (spec 2.2, 2.2.1, 2.2.2): see {@link StrategyRequests.check}.
   * @returns the actor input.
   * @throws {DomainError} `INVALID_REQUEST`, `PRICE_IN_CENTS`, `INSUFFICIENT_BALANCE`,
   *   `NOT_ENOUGH_SHARES`, `ORDER_CROSSES_BOOK`, `NO_LIQUIDITY`, `WOULD_TRIGGER_IMMEDIATELY`.
   */
  check(userId: string, body: OrderRequest): StrategyInput {
    return this.requests.check(userId, body);
  }

  /**
   * Checks the brackets of a buy entry (spec 2.2 "Bracket rules"): see {@link StrategyRequests.checkBrackets}.
   * @returns the BRACKET actor input, or null when the request has no bracket.
   * @throws {DomainError} `INVALID_REQUEST`, `PRICE_IN_CENTS`.
   */
  checkBrackets(userId: string, body: OrderRequest, entry: OrderInput): StrategyInput | null {
    return this.requests.checkBrackets(userId, body, entry);
  }

  /**
   * Places a buy entry with brackets: the BRACKET actor is created first (so a crash in between
   * leaves a bracket whose entry never came, which reconciliation ends), then the entry; the
   * legs go out once the entry ends with shares filled.
   * @returns the entry's record and the bracket's legs (spec 2.3 `brackets`) and warnings.
   * @throws {DomainError} what the order service's placement throws (risk refusals, engine/risk.ts).
   */
  async placeWithBrackets(
    partnerId: string,
    entry: OrderInput,
    bracket: StrategyInput,
  ): Promise<{ entry: ActorRecord; brackets: BracketsView; warnings: string[] }> {
    let rec: ActorRecord;
    let created = false;
    try {
      // the bracket is created in the user's placement queue once the entry passed its wallet
      // check there: an entry refused for funds leaves no BRACKET record either
      rec = await this.orders.place(partnerId, { ...entry, bracketId: bracket.recordId }, {}, async () => {
        await this.host.create(DEFINITIONS.BRACKET.machineId, {
          id: bracket.recordId,
          input: bracket,
          partnerId,
          ownerUserId: bracket.userId,
        });
        created = true;
      });
    } finally {
      if (created) await this.whenQuiet(bracket.recordId);
    }
    const c = this.host.snapshotOf(bracket.recordId)?.context as StrategyContext | undefined;
    const b = c ?? (this.host.storedSnapshot((await this.actors.get(bracket.recordId))!).context as StrategyContext);
    return {
      entry: this.host.recordOf(rec._id) ?? rec,
      brackets: bracketsView(b, bracket.recordId),
      warnings: b.warnings,
    };
  }

  /**
   * Starts a checked strategy and waits until its first actions are quiet (a TWAP's first slice,
   * an iceberg's first clip, …).
   * @returns the strategy record.
   */
  async start(partnerId: string, input: StrategyInput): Promise<ActorRecord> {
    const def = DEFINITIONS[input.type];
    // a passivated strategy (an armed stop) is not in the host's memory afterwards: its last
    // persisted record comes from `changed`, not from a store read (for arming throughput)
    this.starting.set(input.recordId, null);
    try {
      const id = input.recordId;
      const created = await this.host.create(def.machineId, { id, input, partnerId, ownerUserId: input.userId });
      // armed and passivated by its creation, nothing since, no command in flight anywhere (a stop,
      // a trailing order): nothing to wait for, and the record its creation wrote is its last
      if (this.starting.get(id) === created && this.deliveries.inFlight.size === 0 && !this.host.recordOf(id))
        return created;
      await this.whenQuiet(input.recordId);
      return (
        this.host.recordOf(input.recordId) ??
        this.starting.get(input.recordId) ??
        (await this.actors.get(input.recordId))!
      );
    } finally {
      this.starting.delete(input.recordId);
    }
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
    await this.whenQuiet(recordId);
    const after = this.host.recordOf(recordId) ?? (await this.actors.get(recordId))!;
    if (after.status === 'CANCELED' || (!after.final && this.host.snapshotOf(recordId)?.hasTag('canceling')))
      return after;
    const message = (after.view as { message?: string }).message;
    throw errors.conflict(
      `strategy ${recordId} is ${after.status}${message ? `: ${message}` : ''}; it was not canceled`,
    );
  }

  /** The live snapshot of a strategy, or its stored one restored (a passivated strategy). */
  private snapshotFor(rec: ActorRecord): Snapshot {
    const live = this.host.snapshotOf(rec._id);
    if (live) return live as Snapshot;
    const stored = this.host.storedSnapshot(rec);
    const type = (stored.context as StrategyContext).type;
    return DEFINITIONS[type].logic.resolveState(stored as never) as Snapshot;
  }

  /** Why a strategy's current state refuses DELETE strategy (its state's meta `noCancel`). */
  private noCancelReason(recordId: string, snapshot: Snapshot): string {
    const metas = Object.values(snapshot.getMeta() as Record<string, CancelMeta>);
    const meta = metas.find((m) => m?.noCancel);
    const c = snapshot.context as StrategyContext;
    if (!meta) return `strategy ${recordId} cannot be canceled in its current state (${String(snapshot.value)})`;
    const hint = meta.cancelWorking
      ? `: cancel its order with DELETE /v2/trade/orders/${c.working ?? c.children.at(-1)?.orderId ?? '{order_id}'}`
      : '';
    return `strategy ${recordId} ${meta.noCancel}${hint}`;
  }

  /**
   * Start-up reconciliation of every live strategy with its orders (./reconcile.ts), after
   * orders were reconciled with the venue.
   * @returns how many live strategies were reconciled.
   */
  async reconcile(): Promise<number> {
    const n = await reconcileStrategies({
      host: this.host,
      actors: this.actors,
      clock: this.clock,
      router: this.router,
      feed: this.feed,
      deliveries: this.deliveries,
    });
    for (const m of this.venue.markets())
      if (this.venue.marketStatus(m.conditionId)?.closed) this.onMarket(m.conditionId);
    return n;
  }
}
