/**
 * Copytrade subscriptions (spec 2.6, 3, 4.4): the facade the API uses. Hosts one
 * durable actor per subscription (machines/copytrade.ts), delivers every leader fill of the trade
 * history (engine/data/records.ts `TradeHistoryFeed`) to the subscriptions of that leader, places
 * copies as child orders (every copy passes engine/risk.ts `checkChild`) and keeps the history of
 * copies and skips (collection `copytradeHistory`).
 *
 * A leader fill's copies are one batch ({@link CopytradeService.copyAll}), the venue first: the
 * subscriptions decide in memory, the copies go to the venue in one operation, and once the venue
 * has made it durable the subscriptions' steps, their history rows and the copies' orders commit in
 * one store transaction (`OrderService.placeChildren`); the orders' changes come back to the
 * subscriptions a burst at a time. A copy decided outside a batch (the fallback
 * of a failed batch, start-up re-placement, a risk-control sell) goes through the child-order
 * router (engine/strategies/child-orders.ts), like strategies' child orders.
 *
 * Exactly once through restarts: each subscription's watermark (its last leader fill's chain
 * position) is persisted with the step that handled the fill, and the step's history rows in the
 * same transaction. The venue is ahead of those records between its operation and their commit (a
 * failed commit, a crash): a fill not recorded is delivered again (the batch's fallback, the
 * start-up replay from the watermark), and a subscription whose copy of it the venue holds (the
 * copy's order id derives from the fill; the venue keeps an order until its actor recorded the end,
 * or a day) records that copy, adopted, instead of deciding again on the wallet it spent. At
 * start-up, once every actor is
 * restored, copies decided but never reported by their order are placed again (their order ids
 * derive from the fill, so an order already placed is found, not doubled), history rows a snapshot
 * still holds are written again, and the history is replayed in chain order so that fills recorded while
 * the process was down reach their subscriptions (those at or before a watermark are ignored by
 * the machine); live fills wait until that replay is over.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { getAddress } from 'ethers';
import {
  copyOrderId,
  copyOrderKeyOf,
  historyDecides,
  historyId,
  isNewFill,
  adoptsFill,
  newHistoryRows,
  riskLevels,
  venueCopyOf,
  copytradeMachine,
  COPYTRADE_MACHINE_VERSION,
  COPYTRADE_SNAPSHOT_FORM,
  COPYTRADE_STATUS,
  PAPER_INITIAL_USD,
  REORDER_SECONDS,
  type CopyHistoryEntry,
  type CopytradeContext,
  type CopytradeEvent,
  type CopytradeInput,
  type WorkingCopy,
} from '../../machines/copytrade.js';
import type { OrderContext, OrderInput } from '../../machines/order.js';
import type { ChildOrder } from '../../machines/strategy-kit.js';
import type { ActorBatch, ActorChange, ActorHost } from '../actor-host.js';
import { backoffMs } from '../backoff.js';
import type { Clock } from '../clock.js';
import {
  HISTORY_INDEXES,
  notionalOf,
  TRADER_FILLS,
  type RecordedBatch,
  type TradeHistoryFeed,
  type TraderFill,
} from '../data/records.js';
import { dec, Dec, str, ZERO } from '../decimal.js';
import { DomainError, errors } from '../errors.js';
import type { Logger } from '../logger.js';
import type { OrderService } from '../orders.js';
import { refusalCode } from '../risk.js';
import type { ActorRecord, ActorRepository } from '../store/actors.js';
import type { Collection, Store } from '../store/port.js';
import type { ChildOrderRouter, ChildParent } from '../strategies/child-orders.js';
import { TriggerIndex } from '../triggers.js';
import type { UserDoc, UserService } from '../users.js';
import { blockOf } from '../venue/chain.js';
import type { VenueOrder, VenuePort } from '../venue/port.js';
import type { CopyEnv, CopyOrder, CopySettings, LeaderFill } from './rules.js';

/** Machine id of a subscription actor. */
export const COPYTRADE_MACHINE_ID = 'copytrade';
/** Order ids of a subscription's orders start with it (subscription ids are `ct_…`). */
const COPY_ORDER_PREFIX = 'ord_ct_';

/** Collection of the history rows. */
export const COPYTRADE_HISTORY = 'copytradeHistory';

/**
 * The earliest block timestamp (chain seconds) of a fill the subscription may still take ({@link isNewFill}):
 * {@link REORDER_SECONDS} before its watermark, or, before its first fill, the block of its creation
 * (a fill's block is never earlier than the block of its time) less the same margin.
 */
export function replayStart(c: Pick<CopytradeContext, 'watermark' | 'createdAtMs'>): number {
  return (c.watermark?.blockTimestamp ?? blockOf(c.createdAtMs)) - REORDER_SECONDS;
}

/**
 * Tries of a leader fill's delivery to one subscription; beyond them the next start-up's replay
 * delivers it, or, when the venue holds the fill's copy already, another round of tries follows
 * {@link ADOPTION_RETRY_MS} later (off the fan-out, until recorded).
 */
export const DELIVERY_ATTEMPTS = 5;
/** The wait before another round of tries to record a copy the venue holds ({@link DELIVERY_ATTEMPTS}), ms. */
const ADOPTION_RETRY_MS = 5000;

/** Order ids read at once when looking for copies at the venue without an order actor (start-up). */
const UNRECORDED_READ_CHUNK = 500;

/** Statuses a subscription can be moved to with PATCH …/status. */
export type CopytradeStatusChange = 'ACTIVE' | 'PAUSED' | 'DISABLED';

/**
 * A subscription's view (GET, PATCH answers): the settings, system fields and counters. Numbers
 * are decimal strings (the reference returns numeric fields as strings). `created_at` and
 * `updated_at` both come from the subscription's own times (its request's, then each event's), so the
 * one is never before the other.
 */
export function subscriptionView(c: CopytradeContext, status: string): Record<string, unknown> {
  const s = c.settings;
  const skippedTotal = Object.values(c.skipped).reduce((a, n) => a + (n ?? 0), 0);
  return {
    id: c.id,
    status,
    ...s,
    created_at: new Date(c.createdAtMs).toISOString(),
    updated_at: new Date(c.updatedAtMs).toISOString(),
    counters: {
      copies: c.copies,
      skipped: skippedTotal,
      skipped_by_reason: c.skipped,
      spent_usd: c.spentUsd,
      realized_pnl: s.is_simulation ? c.paper.realizedPnl : c.realizedPnl,
      working_copies: c.working.length,
    },
  };
}

/** `amount` less `less` (not below zero), as a decimal string. */
const free = (amount: Dec, less: Dec | undefined): string => str(less ? Dec.max(ZERO, amount.minus(less)) : amount);

/**
 * The copy a venue order of a copy stands for (its adoption after a crash: {@link CopytradeService}):
 * a limit order is a GTC buy, a FOK market order a market buy, another market order a market sell.
 * The touch price the decision saw is not the venue's to know: `price` is the limit's, else null.
 */
export function copyOrderOfVenue(o: VenueOrder): CopyOrder {
  const base = { side: o.side, tokenId: o.tokenId };
  if (o.kind === 'limit')
    return {
      ...base,
      kind: 'LIMIT_GTC',
      usd: o.size !== null && o.price !== null ? notionalOf(o.price, o.size) : null,
      shares: o.size,
      price: o.price,
    };
  return {
    ...base,
    kind: o.timeInForce === 'FOK' ? 'MARKET_FOK' : 'MARKET',
    usd: o.quoteAmount,
    shares: o.size,
    price: null,
  };
}

/** Lower-case `0x` address of a fill or a setting. */
const lower = (a: string) => a.toLowerCase();

/** The leader fill a subscription sees of a trader fill. */
export function leaderFillOf(f: TraderFill): LeaderFill {
  return {
    key: `${f.transactionHash}:${f.logIndex}`,
    transactionHash: f.transactionHash,
    logIndex: f.logIndex,
    blockTimestamp: f.blockTimestamp,
    atMs: f.atMs,
    conditionId: f.conditionId,
    tokenId: f.tokenId,
    outcome: f.outcome,
    side: f.side,
    role: f.role,
    price: f.price,
    size: f.size,
    notionalUsd: f.notionalUsd,
  };
}

/**
 * Checks a leader address: `0x` + 40 hex; a mixed-case one must carry a valid EIP-55 checksum.
 * @returns the checksummed address.
 * @throws {DomainError} `INVALID_REQUEST`.
 */
export function checkLeaderAddress(raw: string): string {
  if (!/^0x[0-9a-fA-F]{40}$/.test(raw))
    throw errors.badRequest(`leader_address must be an address (0x and 40 hex digits); received ${raw}`);
  const body = raw.slice(2);
  const mixed = body !== body.toLowerCase() && body !== body.toUpperCase();
  const checked = getAddress(raw.toLowerCase());
  if (mixed && checked !== raw)
    throw errors.badRequest(`leader_address ${raw} fails its EIP-55 checksum (did you mean ${checked}?)`);
  return checked;
}

/** The paper account of a user's simulations (GET /v2/trade/copytrade/simulation). */
export interface SimulationView {
  initial_balance_usdc: string;
  cash_usdc: string;
  realized_pnl: string;
  unrealized_pnl: string | null;
  equity_usdc: string | null;
  positions: {
    token_id: string;
    shares: string;
    avg_cost: string;
    cost_basis: string;
    mark_price: string | null;
    market_value: string | null;
    unrealized_pnl: string | null;
  }[];
}

/**
 * The copytrade service. Open it with {@link CopytradeService.open}; call {@link start} after
 * every actor was restored (it reconciles and replays, then goes live).
 */
export class CopytradeService {
  /** Subscription ids by leader address (lower-case), live (non-final) ones only. */
  private readonly byLeader = new Map<string, Set<string>>();
  /** Leader fills received before {@link start} finished its replay. */
  private buffered: RecordedBatch[] | null = [];
  /** The leader fills being copied ({@link copyAll}), one after another: fills reach a subscription in chain order. */
  private fanOuts: Promise<void> = Promise.resolve();
  /** Copies whose order a batch placed ({@link copyAll}): their `placeCopy` action places nothing. */
  private readonly batched = new Set<string>();
  /** Creation per user, one at a time (the 409 check and the create are one step). */
  private readonly creating = new Map<string, Promise<unknown>>();
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly followed: ((leader: string) => void)[] = [];
  /** Risk-control levels of the positions held, by `<subscription>|<tokenId>` (engine/triggers.ts). */
  private readonly triggers = new TriggerIndex();
  /** Tokens each subscription has levels registered on. */
  private readonly watched = new Map<string, Set<string>>();

  private constructor(
    private readonly host: ActorHost,
    private readonly actors: ActorRepository,
    private readonly rows: Collection<CopyHistoryEntry>,
    /** The trade history's fills (a leader fill read back by its chain position: {@link unrecordedAtVenue}). */
    private readonly fills: Collection<TraderFill>,
    private readonly router: ChildOrderRouter,
    private readonly orders: OrderService,
    private readonly venue: VenuePort,
    private readonly users: UserService,
    private readonly feed: TradeHistoryFeed,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {
    host.register({
      machineId: COPYTRADE_MACHINE_ID,
      version: COPYTRADE_MACHINE_VERSION,
      kind: 'copytrade',
      form: COPYTRADE_SNAPSHOT_FORM,
      logic: copytradeMachine.provide({
        actions: {
          placeCopy: ({ context }: { context: CopytradeContext }, { copy }: { copy: WorkingCopy | null }) => {
            if (copy && !this.batched.delete(copy.orderId)) this.track(this.place(context, copy));
          },
          clearHistory: ({ context }: { context: CopytradeContext }, { rows }: { rows: CopyHistoryEntry[] }) => {
            if (rows.length > 0) this.track(this.clear(context.id, rows));
          },
        },
      }),
      // a step's history rows commit with it: all or none (machines/copytrade.ts, "History rows")
      stepWritesOf: (next, previous) => {
        const rows = newHistoryRows(next.context as CopytradeContext, previous.context as CopytradeContext);
        if (rows.length === 0) return null;
        return async (tx) => {
          const history = tx.collection<CopyHistoryEntry>(COPYTRADE_HISTORY);
          for (const r of rows) await history.replaceOne(r);
        };
      },
      // settings, fills, copies, rows: plain data, never an actor reference
      plainContext: true,
      statusOf: (s) => COPYTRADE_STATUS[s.value as keyof typeof COPYTRADE_STATUS] ?? 'ACTIVE',
      viewOf: (s) =>
        subscriptionView(s.context as CopytradeContext, COPYTRADE_STATUS[s.value as keyof typeof COPYTRADE_STATUS]),
    });
    host.on('changed', (c) => this.onChanged(c));
    feed.onRecorded((batch) => this.onRecorded(batch));
    venue.onBook((tokenId) => this.onBook(tokenId));
  }

  /** Opens the history collection and registers the machine (before the host restores actors). */
  static async open(deps: {
    store: Store;
    host: ActorHost;
    actors: ActorRepository;
    router: ChildOrderRouter;
    orders: OrderService;
    venue: VenuePort;
    users: UserService;
    feed: TradeHistoryFeed;
    clock: Clock;
    log: Logger;
  }): Promise<CopytradeService> {
    const rows = await deps.store.collection<CopyHistoryEntry>(COPYTRADE_HISTORY, [
      { fields: ['userId', 'atMs'] },
      { fields: ['copytradeId', 'atMs'] },
    ]);
    const fills = await deps.store.collection<TraderFill>(TRADER_FILLS, HISTORY_INDEXES[TRADER_FILLS]);
    return new CopytradeService(
      deps.host,
      deps.actors,
      rows,
      fills,
      deps.router,
      deps.orders,
      deps.venue,
      deps.users,
      deps.feed,
      deps.clock,
      deps.log,
    );
  }

  /** Aborted by {@link stop}: no new round of tries to record a copy the venue holds, and the waits end. */
  private readonly stopped = new AbortController();

  /** Waits {@link ADOPTION_RETRY_MS}, or until {@link stop}. */
  private waitBeforeRetry(): Promise<void> {
    return sleep(ADOPTION_RETRY_MS, undefined, { signal: this.stopped.signal }).catch(() => undefined);
  }

  /**
   * Before a shutdown: the tries to record copies the venue holds stop (the next start-up finds them
   * at the venue without their order actors and records them: {@link unrecordedAtVenue}); what is in
   * flight goes on ({@link idle} waits for it).
   */
  stop(): void {
    this.stopped.abort();
  }

  private track(p: Promise<unknown>): void {
    this.inFlight.add(p);
    void p.finally(() => this.inFlight.delete(p));
  }

  /** Waits until every delivery, placement and history write started so far is over (tests, responses). */
  async idle(): Promise<void> {
    for (let i = 0; i < 100 && this.inFlight.size > 0; i++) {
      await Promise.all([...this.inFlight, this.fanOuts]);
      await this.host.whenIdle();
    }
  }

  // ---- start-up ----

  /**
   * Start-up, after every actor was restored: indexes the live subscriptions by leader, places
   * copies never reported, writes history rows not yet written, replays the trade history to the
   * subscriptions from the earliest fill any of them may still take ({@link replayStart}), then
   * delivers the fills that came in meanwhile and goes live.
   * @returns the number of live subscriptions.
   */
  async start(): Promise<number> {
    const ids = this.host.liveIds('copytrade');
    let from: number | undefined;
    const contexts: CopytradeContext[] = [];
    for (const id of ids) {
      const c = this.host.snapshotOf(id)?.context as CopytradeContext | undefined;
      if (c) contexts.push(c);
    }
    // rows first: a copy's report drops the rows before it from the context (a snapshot stored by an
    // earlier version may hold rows never written); a subscription whose rows could not be written
    // places its copies at the next start-up, after them
    const unwritten = new Set<string>();
    await Promise.all(
      contexts
        .filter((c) => c.pending.length > 0)
        .map(async (c) => {
          if (!(await this.write(c.id, c.pending))) unwritten.add(c.id);
        }),
    );
    // the partners of the subscriptions, read together now rather than on the first leader fill's path
    await this.partnersOf(contexts.map((c) => c.id));
    for (const c of contexts) {
      this.index(c.id, c);
      if (!unwritten.has(c.id)) for (const w of c.working) if (!w.reported) this.track(this.place(c, w));
      from = Math.min(from ?? Infinity, replayStart(c));
    }
    // copies the venue took whose records never followed and whose fill the replay below may not
    // deliver again (a later fill moved the watermark past it before a crash): recorded, adopted
    for (const { id, fill } of await this.unrecordedAtVenue(contexts)) this.track(this.sendFill(id, fill));
    if (ids.length > 0) {
      await this.feed.replay((batch) => this.deliverBatch(batch), undefined, { fromBlockTimestamp: from ?? 0 });
    }
    const waiting = this.buffered ?? [];
    this.buffered = null;
    for (const b of waiting) this.deliverBatch(b);
    return ids.length;
  }

  /**
   * The copies the venue holds whose order has no actor (the venue took them and their records did not
   * follow: a crash, or commits failing until the shutdown), each with the leader fill it copies, read
   * back from the trade history: delivered again, each is adopted (its own history row, not the
   * watermark, says whether it is recorded).
   * @param contexts - the live subscriptions (the copies of any other are left: the subscription is gone).
   */
  private async unrecordedAtVenue(contexts: CopytradeContext[]): Promise<{ id: string; fill: LeaderFill }[]> {
    const subs = new Map(contexts.map((c) => [c.id, c]));
    const candidates = new Map<string, { id: string; fillKey: string }>();
    for (const orderId of this.venue.orderIds()) {
      const key = copyOrderKeyOf(orderId);
      if (key && subs.has(key.subscriptionId) && !this.host.recordOf(orderId))
        candidates.set(orderId, { id: key.subscriptionId, fillKey: key.fillKey });
    }
    const ids = [...candidates.keys()];
    for (let i = 0; i < ids.length; i += UNRECORDED_READ_CHUNK)
      for (const r of await this.actors.getStoredMany(ids.slice(i, i + UNRECORDED_READ_CHUNK)))
        candidates.delete(r._id);
    const out: { id: string; fill: LeaderFill }[] = [];
    for (const [orderId, { id, fillKey }] of candidates) {
      const [transactionHash, logIndex] = fillKey.split(':') as [string, string];
      const leader = lower(subs.get(id)!.settings.leader_address);
      const row = await this.fills.findOne({ address: leader, transactionHash, logIndex: Number(logIndex) });
      if (row) out.push({ id, fill: leaderFillOf(row) });
      else
        this.log.error(
          { copytradeId: id, orderId },
          'copy at the venue without its leader fill in the trade history: left unrecorded',
        );
    }
    return out;
  }

  /** Calls `listener` with a leader's address (lower case) whenever a subscription to it starts or is restored. */
  onFollowed(listener: (leader: string) => void): void {
    this.followed.push(listener);
  }

  private index(id: string, c: CopytradeContext): void {
    const key = lower(c.settings.leader_address);
    for (const l of this.followed) l(key);
    this.syncWatches(id, c);
    let set = this.byLeader.get(key);
    if (!set) this.byLeader.set(key, (set = new Set()));
    set.add(id);
  }

  private onChanged(c: ActorChange): void {
    if (c.record.kind === 'order') return this.onOrderChanged(c);
    if (c.record.kind !== 'copytrade') return;
    const ctx = c.snapshot.context as CopytradeContext;
    if (c.record.final) this.byLeader.get(lower(ctx.settings.leader_address))?.delete(c.record._id);
    else if (c.previousStatus === null) {
      this.index(c.record._id, ctx);
      this.partners.set(c.record._id, c.record.partnerId);
    }
    this.syncWatches(c.record._id, c.record.final ? null : ctx);
  }

  // ---- the copies' orders ----

  /** Order reports on their way to subscriptions, by order, in the order they came; null between bursts. */
  private reports: Map<string, { subscription: string; record: ActorRecord; context: OrderContext }> | null = null;

  /**
   * A subscription's order changed: the subscription hears of it (the child-order router leaves
   * them to this service). The changes of one turn (the answers of one venue operation to the
   * copies of a leader fill) reach their subscriptions as one batch ({@link deliverReports}). Its
   * creation is no news to the subscription that decided it.
   */
  private onOrderChanged(c: ActorChange): void {
    const o = c.snapshot.context as OrderContext;
    if (o.parentKind !== 'copytrade' || !o.parentId || c.previousStatus === null) return;
    if (!this.reports) {
      this.reports = new Map();
      queueMicrotask(() => this.deliverReports());
    }
    // the latest change of an order says everything the earlier ones of the burst said
    this.reports.delete(c.record._id);
    this.reports.set(c.record._id, { subscription: o.parentId, record: c.record, context: o });
  }

  /**
   * Hands a burst of order changes to their subscriptions in ONE host batch (one transaction, the
   * steps' history rows with them); when it fails (nothing of it happened), each goes through the
   * router's retried delivery (its latest state at each try).
   */
  private deliverReports(): void {
    const burst = [...this.reports!.values()];
    this.reports = null;
    const events = burst.map((r) => ({
      subscription: r.subscription,
      event: this.router.orderEventOf(r.record, r.context),
    }));
    const run = this.host
      .batch(
        events.map((e) => e.subscription),
        (b) => {
          for (const e of events) b.step(e.subscription, e.event);
        },
      )
      .catch((err: unknown) => {
        this.log.warn({ err, orders: burst.length }, 'copy order reports not delivered together: one by one');
        for (const [i, e] of events.entries()) {
          const id = burst[i]!.record._id;
          const latest = async () => {
            const now = this.host.recordOf(id) ?? (await this.actors.get(id));
            return now ? this.router.orderEvent(now) : null;
          };
          this.track(this.router.sendToStrategy(e.subscription, e.event, latest));
        }
      });
    this.track(run);
  }

  // ---- risk controls of the positions (take-profit, stop-loss, close price) ----

  /**
   * Keeps the trigger index in step with a subscription's positions: per held token, the highest
   * stop-loss price (`bidAtOrBelow`) and the lowest take-profit or close price (`bidAbove` one
   * micro-dollar below it, so a bid at the price fires); a level already reached is delivered now.
   */
  private syncWatches(id: string, c: CopytradeContext | null): void {
    const s = c?.settings;
    // nothing to watch, nothing watched: the usual subscription (no levels) costs no level arithmetic per step
    if (
      !this.watched.has(id) &&
      (!s || (s.take_profit_levels.length === 0 && s.stop_loss_levels.length === 0 && s.close_at_price_cents === null))
    )
      return;
    const before = this.watched.get(id) ?? new Set<string>();
    const now = new Set<string>();
    for (const [tokenId, p] of Object.entries(c?.positions ?? {})) {
      const levels = riskLevels(c!.settings, p);
      const stops = levels.filter((l) => !l.above).map((l) => l.price);
      const targets = levels.filter((l) => l.above).map((l) => l.price);
      if (stops.length === 0 && targets.length === 0) continue;
      now.add(tokenId);
      const key = `${id}|${tokenId}`;
      const changed = this.triggers.set(key, tokenId, {
        ...(stops.length ? { bidAtOrBelow: str(Dec.max(...stops).toDecimalPlaces(6, Dec.ROUND_DOWN)) } : {}),
        ...(targets.length
          ? { bidAbove: str(Dec.max(ZERO, Dec.min(...targets).minus('0.000001')).toDecimalPlaces(6, Dec.ROUND_DOWN)) }
          : {}),
      });
      if (changed && this.triggers.fireOne(key, tokenId, this.touchText(tokenId))) this.deliverTouch(key);
    }
    for (const t of before) if (!now.has(t)) this.triggers.remove(`${id}|${t}`);
    if (now.size) this.watched.set(id, now);
    else this.watched.delete(id);
  }

  private touchText(tokenId: string): { bid: string | null; ask: string | null } {
    const t = this.venue.touch(tokenId);
    return { bid: t.bid ? str(t.bid) : null, ask: t.ask ? str(t.ask) : null };
  }

  private onBook(tokenId: string): void {
    if (this.watched.size === 0) return;
    for (const key of this.triggers.fire(tokenId, this.touchText(tokenId))) this.deliverTouch(key);
  }

  /** Sends the touch of a fired level to its subscription, then registers its levels again. */
  private deliverTouch(key: string): void {
    const [id, tokenId] = key.split('|') as [string, string];
    const touch = this.touchText(tokenId);
    const run = async () => {
      try {
        await this.host.send(id, {
          type: 'book.touch',
          tokenId,
          ...touch,
          atMs: this.clock.now(),
        } satisfies CopytradeEvent);
        this.triggers.delivered(key);
      } catch (err) {
        this.log.error({ err, copytradeId: id, tokenId }, 'risk-control touch not delivered: armed again');
        this.triggers.rearm(key);
        return;
      }
      const c = this.host.snapshotOf(id)?.context as CopytradeContext | undefined;
      this.triggers.remove(key);
      this.syncWatches(id, c ?? null);
    };
    this.track(run());
  }

  // ---- leader fills ----

  private onRecorded(batch: RecordedBatch): void {
    if (this.buffered) this.buffered.push(batch);
    else this.deliverBatch(batch);
  }

  /** Sends each fill of a leader to that leader's subscriptions (in chain order per subscription). */
  private deliverBatch(batch: RecordedBatch): void {
    if (this.byLeader.size === 0) return;
    for (const f of batch.fills) {
      // a subscription's own orders (copies, risk-control exits) are not copied again: chains and
      // cycles of subscriptions cannot echo a fill back and forth
      if (f.orderId?.startsWith(COPY_ORDER_PREFIX)) continue;
      const subs = this.subscriptionsOf(f);
      if (subs.length === 0) continue;
      const fill = leaderFillOf(f);
      const run = (this.fanOuts = this.fanOuts
        .then(() => this.copyAll(subs, fill))
        .catch((err: unknown) =>
          this.log.error({ err, fill: fill.key }, 'leader fill not copied: replayed at the next start-up'),
        ));
      this.track(run);
    }
  }

  /**
   * Copies leader fill `fill` to subscriptions `ids` as one batch (the critical path of a copy):
   * the copy each subscription new to the fill makes is worked out without its step
   * (`venueCopyOf`: the rules, the market read once for all; a copy the venue holds already is
   * adopted: {@link adoptable}), each copy is checked against risk in its follower's placement queue,
   * the orders go to the venue in ONE operation, and once it is durable the subscriptions take their
   * `leader.fill` steps (each given its copy as `adopt`, so it records what the venue took; a risk
   * refusal is that subscription's `order.refused` step after it, the others go on), and every step,
   * history row and new order commits in ONE transaction (`OrderService.placeChildren`). When the batch fails
   * (none of its records written; its copies may be at the venue), the fill is delivered to each
   * subscription on its own ({@link sendFill}: the copies the venue took recorded as decided;
   * retried, else replayed at the next start-up). Never throws.
   */
  private async copyAll(ids: string[], fill: LeaderFill): Promise<void> {
    const targets: string[] = [];
    const users = new Set<string>();
    const actorIds: string[] = [];
    const handled = await this.handledInStore(ids, fill);
    for (const id of ids) {
      const c = this.host.snapshotOf(id)?.context as CopytradeContext | undefined;
      if (!c || !isNewFill(c, fill, handled.get(id))) continue;
      targets.push(id);
      users.add(c.userId);
      actorIds.push(id, copyOrderId(id, fill.key));
    }
    if (targets.length === 0) return;
    const held: (() => void)[] = [];
    const placed: string[] = [];
    /** The copies decided, by subscription: a failed batch's fallback records them as decided (adopted). */
    const decided = new Map<string, CopyOrder>();
    try {
      const partners = await this.partnersOf(targets);
      /** Each subscription's step, decided before the venue's operation and taken after it. */
      const steps: { id: string; event: CopytradeEvent; refusal: CopytradeEvent | null }[] = [];
      const atMs = this.clock.now();
      const decide = (batch: ActorBatch, place: (partnerId: string, input: OrderInput) => void) => {
        for (const id of targets) {
          const snapshot = batch.snapshotOf(id);
          const before = snapshot?.context as CopytradeContext | undefined;
          const known = handled.get(id);
          if (!snapshot || !before || !isNewFill(before, fill, known)) continue;
          const env = this.envOf(before.userId, fill);
          const orderId = copyOrderId(id, fill.key);
          // the copy the subscription's step will record (the venue's, when it holds it already)
          const copy =
            this.adoptable(id, fill) ??
            (before.working.some((w) => w.orderId === orderId) ? null : venueCopyOf(snapshot.value, before, fill, env));
          const event: CopytradeEvent = {
            type: 'leader.fill',
            fill,
            env,
            atMs,
            ...(known === undefined ? {} : { handled: known }),
            ...(copy ? { adopt: copy } : {}),
          };
          const step = { id, event, refusal: null as CopytradeEvent | null };
          steps.push(step);
          if (!copy) continue;
          this.batched.add(orderId);
          placed.push(orderId);
          decided.set(id, copy);
          try {
            const { parent, order } = this.childOf(before, { orderId, order: copy }, partners.get(id)!);
            place(parent.partnerId!, this.router.childInput(parent, order));
            held.push(this.holdUnplaced(before.userId, copy));
          } catch (err) {
            if (!(err instanceof DomainError)) throw err;
            step.refusal = { type: 'order.refused', orderId, error: refusalCode(err), reason: err.message };
          }
        }
      };
      // the steps after the venue's operation, off the path to its acceptance: each records the copy
      // decided above (`adopt`), or decides the same skip again (pure, the same snapshot and event)
      const record = (batch: ActorBatch) => {
        for (const { id, event, refusal } of steps) {
          batch.step(id, event);
          if (refusal) batch.step(id, refusal);
        }
      };
      await this.orders.placeChildren(users, actorIds, decide, record);
    } catch (err) {
      for (const release of held) release();
      for (const orderId of placed) this.batched.delete(orderId);
      this.log.warn({ err, fill: fill.key, subscriptions: targets.length }, 'copies not placed as a batch: one by one');
      for (const [id, copy] of decided) this.awaitingRecord(id, fill, copy);
      await Promise.all(targets.map((id) => this.sendFill(id, fill, decided.get(id))));
      return;
    }
    // the batch's venue operation has taken the copies' dollars and shares (in memory, as it was
    // submitted): the wallet's own balance says it from now on
    for (const release of held) release();
    // the venue's answers reach the orders apart (one host batch per venue operation): idle() waits
    // for them too, so that a copy it reports on has its order's outcome
    this.track(Promise.all(placed.map((orderId) => this.orders.whenQuiet(orderId))));
  }

  /**
   * For the subscriptions of `ids` whose `recent` cannot tell whether they handled `fill`
   * ({@link historyDecides}: rare, a fill late by more than `RECENT_FILLS` or the start-up replay of
   * a busy leader), whether the store holds their history row of it (one read for all of them).
   * @returns by subscription id, for those only.
   */
  private async handledInStore(ids: string[], fill: LeaderFill): Promise<Map<string, boolean>> {
    const out = new Map<string, boolean>();
    for (const id of ids) {
      const c = this.host.snapshotOf(id)?.context as CopytradeContext | undefined;
      if (c && historyDecides(c, fill)) out.set(id, false);
    }
    if (out.size === 0) return out;
    const rowIds = [...out.keys()].map((id) => historyId(id, fill.key));
    for (const r of await this.rows.find({ _id: { $in: rowIds } })) out.set(r.copytradeId, true);
    return out;
  }

  /** Partner of each subscription read so far (it never changes). */
  private readonly partners = new Map<string, string>();

  /**
   * The partners of subscriptions `ids` (their followers'): from the followers cached in memory, else
   * from their records, read together (once: the first leader fill after a start would otherwise
   * read every subscription's record, view included, on its critical path).
   */
  private async partnersOf(ids: string[]): Promise<Map<string, string>> {
    const missing: string[] = [];
    for (const id of ids) {
      if (this.partners.has(id)) continue;
      const c = this.host.snapshotOf(id)?.context as CopytradeContext | undefined;
      const partner = c ? this.users.cached(c.userId)?.partnerId : undefined;
      if (partner !== undefined) this.partners.set(id, partner);
      else missing.push(id);
    }
    if (missing.length > 0) {
      const recs = await this.actors.getMany(missing);
      for (const id of missing) this.partners.set(id, recs.get(id)?.partnerId ?? 'unknown');
    }
    return this.partners;
  }

  /** Subscriptions following the wallet of `f`: by its address, and by the other address of its user. */
  private subscriptionsOf(f: TraderFill): string[] {
    const out = new Set(this.byLeader.get(lower(f.address)) ?? []);
    const user: UserDoc | undefined = f.userId ? this.users.cached(f.userId) : undefined;
    if (user) {
      for (const a of [user.eoaAddress, user.safeAddress])
        for (const id of this.byLeader.get(lower(a)) ?? []) out.add(id);
    }
    return [...out];
  }

  /**
   * Delivers `fill` to subscription `id` alone (a failed batch's fallback), retried.
   * @param decided - the copy the failed batch decided: recorded as it when the venue holds its order.
   */
  private async sendFill(id: string, fill: LeaderFill, decided?: CopyOrder): Promise<void> {
    let retrying = false;
    try {
      for (let attempt = 1; ; attempt++) {
        const seen = { atVenue: false };
        try {
          await this.deliverFill(id, fill, decided, seen);
          return;
        } catch (err) {
          if (attempt >= DELIVERY_ATTEMPTS && seen.atVenue) {
            // the venue has spent the follower's wallet on this copy: its record must follow, whatever
            // later fills do to the watermark (the start-up replay's window would not deliver it again)
            this.log.error(
              { err, copytradeId: id, fill: fill.key },
              'copy at the venue not recorded on its subscription: tried again',
            );
            if (this.stopped.signal.aborted) return; // the next start-up finds it at the venue without its order actor
            retrying = true;
            this.awaitingRecord(id, fill, decided);
            this.track(
              this.waitBeforeRetry().then(() =>
                this.stopped.signal.aborted ? undefined : this.sendFill(id, fill, decided),
              ),
            );
            return;
          }
          if (attempt >= DELIVERY_ATTEMPTS) {
            this.log.error(
              { err, copytradeId: id, fill: fill.key },
              'leader fill not delivered: the next start-up replays it',
            );
            return;
          }
          await sleep(backoffMs(attempt, 100));
        }
      }
    } finally {
      if (!retrying) this.recordedOrGone(id, fill.key);
    }
  }

  /**
   * One try of {@link sendFill}: `fill` delivered to subscription `id` (with `adopt` when the venue
   * holds its copy: `seen.atVenue` set then), or nothing when the subscription is gone or certainly
   * ignores it. @throws what the step throws (nothing of it recorded).
   */
  private async deliverFill(
    id: string,
    fill: LeaderFill,
    decided: CopyOrder | undefined,
    seen: { atVenue: boolean },
  ): Promise<void> {
    let known = (await this.handledInStore([id], fill)).get(id);
    const c = this.host.snapshotOf(id)?.context as CopytradeContext | undefined;
    if (!c) return;
    const adopt = this.adoptable(id, fill, decided);
    seen.atVenue = adopt !== undefined;
    // the machine decides; this only spares a step for a fill it certainly ignores (the start-up
    // replay). A copy at the venue that a later fill's watermark has passed is recorded unless the
    // store holds its history row (adoptsFill): its own record, not the watermark, says
    if (!isNewFill(c, fill, known)) {
      if (!adopt) return;
      // (a row already read above says it: `known` true; false would have made the fill new)
      known ??= (await this.rows.count({ _id: historyId(id, fill.key) })) > 0;
      if (!adoptsFill(c, fill, known)) return;
    }
    await this.host.send(id, {
      type: 'leader.fill',
      fill,
      env: this.envOf(c.userId, fill),
      atMs: this.clock.now(),
      ...(known === undefined ? {} : { handled: known }),
      ...(adopt ? { adopt } : {}),
    } satisfies CopytradeEvent);
  }

  /**
   * Copies the venue may hold whose records have not followed yet (a failed batch's fallback under
   * way, or its next round of tries), by subscription id then fill key: a DELETE records them first.
   */
  private readonly unrecorded = new Map<string, Map<string, { fill: LeaderFill; decided?: CopyOrder }>>();

  private awaitingRecord(id: string, fill: LeaderFill, decided?: CopyOrder): void {
    let m = this.unrecorded.get(id);
    if (!m) this.unrecorded.set(id, (m = new Map()));
    m.set(fill.key, { fill, decided });
  }

  private recordedOrGone(id: string, fillKey: string): void {
    const m = this.unrecorded.get(id);
    if (m?.delete(fillKey) && m.size === 0) this.unrecorded.delete(id);
  }

  /**
   * The copy of `fill` for subscription `id` when the venue holds its order already (a batch went to
   * the venue and its records did not follow: a failed commit, a crash), else undefined: the
   * subscription then records that copy instead of deciding again on the wallet the order spent.
   * @param decided - the copy as the subscription decided it, when known (in memory); else the
   *   venue's order says it ({@link copyOrderOfVenue}).
   */
  private adoptable(id: string, fill: LeaderFill, decided?: CopyOrder): CopyOrder | undefined {
    const order = this.venue.orderOf(copyOrderId(id, fill.key));
    if (!order) return undefined;
    return decided ?? copyOrderOfVenue(order);
  }

  /**
   * What the rules need to know of the market of `fill` and the follower's wallet, now: the wallet's
   * free dollars and shares less what the follower's copies decided but not yet at the venue will
   * take (two leader fills in quick succession: the second is sized on what the first leaves).
   */
  envOf(userId: string, fill: Pick<LeaderFill, 'tokenId' | 'conditionId'>): CopyEnv {
    const market = this.marketEnv(fill.tokenId);
    const available = market.market !== 'unknown' ? this.venue.available(userId, fill.tokenId) : null;
    const unplaced = this.unplaced.get(userId);
    return {
      ...market,
      availableUsd: available ? free(available.usd, unplaced?.usd) : '0',
      availableShares: available ? free(available.shares, unplaced?.shares.get(fill.tokenId)) : '0',
    };
  }

  /**
   * Dollars (buys) and shares by token (sells) of each follower's copies from their decision until
   * their order's placement and venue command are over (see {@link envOf}).
   */
  private readonly unplaced = new Map<string, { usd: Dec; shares: Map<string, Dec> }>();

  /** Counts copy `o` of `userId` as unplaced; the returned function takes it back. */
  private holdUnplaced(userId: string, o: CopyOrder): () => void {
    let u = this.unplaced.get(userId);
    if (!u) this.unplaced.set(userId, (u = { usd: ZERO, shares: new Map() }));
    const entry = u;
    if (o.side === 'buy') {
      const usd = o.usd !== null ? dec(o.usd) : dec(o.shares ?? '0').times(dec(o.price ?? '0'));
      entry.usd = entry.usd.plus(usd);
      return () => {
        entry.usd = entry.usd.minus(usd);
        this.forgetUnplaced(userId, entry);
      };
    }
    const shares = dec(o.shares ?? '0');
    entry.shares.set(o.tokenId, (entry.shares.get(o.tokenId) ?? ZERO).plus(shares));
    return () => {
      const left = (entry.shares.get(o.tokenId) ?? ZERO).minus(shares);
      if (left.isZero()) entry.shares.delete(o.tokenId);
      else entry.shares.set(o.tokenId, left);
      this.forgetUnplaced(userId, entry);
    };
  }

  private forgetUnplaced(userId: string, entry: { usd: Dec; shares: Map<string, Dec> }): void {
    if (entry.usd.isZero() && entry.shares.size === 0 && this.unplaced.get(userId) === entry)
      this.unplaced.delete(userId);
  }

  /** The market part of {@link envOf} by token, read once per turn of the event loop (see {@link marketEnv}). */
  private readonly marketEnvs = new Map<string, Omit<CopyEnv, 'availableUsd' | 'availableShares'>>();

  /**
   * The market part of {@link envOf} for `tokenId`: its status, minimum and touch, the same for
   * every follower a leader fill reaches in this turn of the event loop (one fill fans out to all
   * its subscriptions in one turn), read once then.
   */
  private marketEnv(tokenId: string): Omit<CopyEnv, 'availableUsd' | 'availableShares'> {
    let m = this.marketEnvs.get(tokenId);
    if (m) return m;
    if (this.marketEnvs.size === 0) setImmediate(() => this.marketEnvs.clear());
    const token = this.venue.token(tokenId);
    const status = token ? this.venue.marketStatus(token.conditionId) : undefined;
    const touch = this.venue.touch(tokenId);
    m = {
      market: !token ? 'unknown' : status?.resolved ? 'resolved' : status?.closed ? 'closed' : 'open',
      tags: [],
      minSize: token ? str(token.minSize) : '0',
      bid: touch.bid ? str(touch.bid) : null,
      ask: touch.ask ? str(touch.ask) : null,
    };
    this.marketEnvs.set(tokenId, m);
    return m;
  }

  // ---- effects ----

  private async place(c: CopytradeContext, w: WorkingCopy): Promise<void> {
    const o = w.order;
    const release = this.holdUnplaced(c.userId, o);
    try {
      await this.placeOrder(c, w);
      await this.router.whenPlaced(w.orderId);
    } finally {
      release();
    }
  }

  private async placeOrder(c: CopytradeContext, w: WorkingCopy): Promise<void> {
    // the follower's partner is the subscription's (the router reads its record when the user is not cached)
    const { parent, order } = this.childOf(c, w, this.users.cached(c.userId)?.partnerId);
    await this.router.placeChild(parent, order);
  }

  /** The child order of copy `w` of subscription `c`, and its parent as the child-order router takes it. */
  private childOf(
    c: CopytradeContext,
    w: Pick<WorkingCopy, 'orderId' | 'order'>,
    partnerId: string | undefined,
  ): { parent: ChildParent; order: ChildOrder } {
    const o = w.order;
    const token = this.venue.token(o.tokenId);
    const order: ChildOrder =
      o.kind === 'LIMIT_GTC'
        ? {
            orderId: w.orderId,
            side: 'buy',
            pricing: { kind: 'limit', price: o.price! },
            size: o.shares!,
            timeInForce: 'GTC',
            postOnly: false,
            isStopLoss: false,
          }
        : {
            orderId: w.orderId,
            side: o.side,
            type: 'MARKET',
            pricing: { kind: 'limit', price: o.price ?? '0.5' },
            size: o.shares ?? '0',
            ...(o.usd !== null ? { quoteAmount: o.usd } : {}),
            timeInForce: o.kind === 'MARKET_FOK' ? 'FOK' : 'IOC',
            postOnly: false,
            isStopLoss: false,
          };
    const parent: ChildParent = {
      recordId: c.id,
      userId: c.userId,
      tokenId: o.tokenId,
      tickSize: token ? str(token.tickSize) : '0.01',
      type: 'COPYTRADE',
      parentKind: 'copytrade',
      ...(partnerId ? { partnerId } : {}),
    };
    return { parent, order };
  }

  /**
   * Writes history rows (idempotent by `_id`), then drops them from the context (start-up: see {@link start}).
   * @returns whether they were written (a failure is logged).
   */
  private async write(id: string, rows: CopyHistoryEntry[]): Promise<boolean> {
    try {
      await Promise.all(rows.map((r) => this.rows.replaceOne(r)));
    } catch (err) {
      this.log.error(
        { err, copytradeId: id },
        'copytrade history rows not written: written again at the next start-up',
      );
      return false;
    }
    await this.clear(id, rows);
    return true;
  }

  /** Drops history rows already in the store from the subscription's context (`history.written`). */
  private async clear(id: string, rows: CopyHistoryEntry[]): Promise<void> {
    try {
      await this.host.send(id, { type: 'history.written', ids: rows.map((r) => r._id) } satisfies CopytradeEvent);
    } catch (err) {
      // harmless: they are in the store; the next step that drops rows, or the next start-up, drops them
      this.log.warn({ err, copytradeId: id }, 'written copytrade history rows not dropped from the context');
    }
  }

  // ---- API ----

  private async owned(userId: string, id: string): Promise<ActorRecord> {
    const rec = this.host.recordOf(id) ?? (await this.actors.get(id));
    if (!rec || rec.kind !== 'copytrade' || rec.ownerUserId !== userId || rec.status === 'DELETED')
      throw errors.notFound(`no copytrade subscription ${id}`);
    return rec;
  }

  /** The user's ACTIVE subscription to `leader` other than `exceptId`, if any. */
  private async activeTo(userId: string, leader: string, exceptId: string): Promise<ActorRecord | null> {
    const filter = { kind: 'copytrade', status: 'ACTIVE' };
    const { records } = await this.actors.findOwned(userId, filter, { limit: 1000 });
    const key = lower(leader);
    return records.find((r) => r._id !== exceptId && lower(this.contextOf(r).settings.leader_address) === key) ?? null;
  }

  private contextOf(rec: ActorRecord): CopytradeContext {
    return (this.host.snapshotOf(rec._id)?.context ?? this.host.storedSnapshot(rec).context) as CopytradeContext;
  }

  /**
   * Creates a subscription (POST /v2/trade/copytrade).
   * @param id - the subscription id (`ct_…`, derived from the request's Idempotency-Key).
   * @returns the record; an existing one of this id (a retry) as it is.
   * @throws {DomainError} `CONFLICT` when the user has an ACTIVE subscription to that leader.
   */
  async create(
    user: UserDoc,
    id: string,
    settings: CopySettings,
    initialStatus: 'ACTIVE' | 'PAUSED',
  ): Promise<ActorRecord> {
    const prev = this.creating.get(user._id) ?? Promise.resolve();
    if ([user.eoaAddress, user.safeAddress].some((a) => lower(a) === lower(settings.leader_address)))
      throw errors.badRequest('leader_address is one of your own wallets: a user cannot copy itself');
    const run = prev
      .catch(() => {})
      .then(async () => {
        const existing = this.host.recordOf(id) ?? (await this.actors.get(id));
        if (existing) return existing;
        const clash = initialStatus === 'ACTIVE' ? await this.activeTo(user._id, settings.leader_address, id) : null;
        if (clash)
          throw errors.conflict(`an ACTIVE copytrade subscription to ${settings.leader_address} exists: ${clash._id}`);
        const input: CopytradeInput = {
          id,
          userId: user._id,
          userWallet: user.safeAddress,
          settings,
          initialStatus,
          createdAtMs: this.clock.now(),
        };
        await this.host.create(COPYTRADE_MACHINE_ID, { id, input, partnerId: user.partnerId, ownerUserId: user._id });
        return this.host.recordOf(id) ?? (await this.actors.get(id))!;
      });
    this.creating.set(user._id, run);
    run
      .finally(() => {
        if (this.creating.get(user._id) === run) this.creating.delete(user._id);
      })
      .catch(() => {});
    return run;
  }

  /** The user's subscriptions, ACTIVE, PAUSED, DISABLED and ENDED (deleted ones are left out), newest first. */
  async list(userId: string): Promise<ActorRecord[]> {
    return (await this.actors.findOwned(userId, { kind: 'copytrade', final: false }, { limit: 1000 })).records;
  }

  /**
   * One subscription with its counters, and its open positions' unrealized PnL at the midpoint.
   * @throws {DomainError} `NOT_FOUND`.
   */
  async get(userId: string, id: string): Promise<Record<string, unknown>> {
    const rec = await this.owned(userId, id);
    const c = this.contextOf(rec);
    const view = rec.view as Record<string, unknown> & { counters: Record<string, unknown> };
    const positions = c.settings.is_simulation ? c.paper.positions : c.positions;
    let unrealized: Dec | null = ZERO;
    for (const [tokenId, p] of Object.entries(positions)) {
      const mid = this.midpoint(tokenId);
      if (mid === null || unrealized === null) unrealized = null;
      else unrealized = unrealized.plus(dec(p.shares).times(mid).minus(dec(p.costUsd)));
    }
    return {
      ...view,
      counters: { ...view.counters, unrealized_pnl: unrealized === null ? null : str(unrealized.toDecimalPlaces(6)) },
    };
  }

  private midpoint(tokenId: string): Dec | null {
    const t = this.venue.touch(tokenId);
    if (t.bid && t.ask) return t.bid.plus(t.ask).div(2);
    return t.bid ?? t.ask ?? null;
  }

  /**
   * Changes settings (PATCH /v2/trade/copytrade/{id}); `leader_address` cannot change.
   * @throws {DomainError} `NOT_FOUND`; `INVALID_REQUEST` for a change of leader.
   */
  async update(userId: string, id: string, patch: (current: CopySettings) => CopySettings): Promise<ActorRecord> {
    const rec = await this.owned(userId, id);
    const settings = patch(this.contextOf(rec).settings);
    return this.host.send(id, { type: 'copytrade.update', settings, atMs: this.clock.now() } satisfies CopytradeEvent);
  }

  /**
   * Moves a subscription to ACTIVE, PAUSED or DISABLED (PATCH …/status).
   * @throws {DomainError} `NOT_FOUND`; `CONFLICT` when its state refuses it (ENDED), or when resuming
   *   would make a second ACTIVE subscription to the same leader.
   */
  async setStatus(userId: string, id: string, status: CopytradeStatusChange): Promise<ActorRecord> {
    const rec = await this.owned(userId, id);
    if (rec.status === status) return rec;
    if (status === 'ACTIVE') {
      const clash = await this.activeTo(userId, this.contextOf(rec).settings.leader_address, id);
      if (clash) throw errors.conflict(`an ACTIVE copytrade subscription to this leader exists: ${clash._id}`);
    }
    const event = { type: 'copytrade.status', status, atMs: this.clock.now() } as const;
    const snap = this.host.snapshotOf(id);
    if (!snap?.can(event))
      throw errors.conflict(`copytrade subscription ${id} is ${rec.status}: it cannot become ${status}`);
    return this.host.send(id, event);
  }

  /**
   * Soft-deletes a subscription (history and PnL kept), once the copies the venue holds for it whose
   * records had not followed are recorded. @throws {DomainError} `NOT_FOUND`; a store failure
   * recording such a copy (nothing deleted).
   */
  async remove(userId: string, id: string): Promise<void> {
    await this.owned(userId, id);
    // a copy the venue took for it whose records have not followed is recorded first: once deleted,
    // the subscription takes no step, and the copy would stay without its order and history row
    for (const { fill, decided } of [...(this.unrecorded.get(id)?.values() ?? [])]) {
      await this.deliverFill(id, fill, decided, { atVenue: false });
      this.recordedOrGone(id, fill.key);
    }
    await this.host.send(id, { type: 'copytrade.delete', atMs: this.clock.now() } satisfies CopytradeEvent);
  }

  /**
   * Copies and skips of the user, newest first (by decision time, then id, descending: GET
   * /v2/trade/copytrade/history).
   * @param copytradeId - only this subscription's.
   * @param after - only the rows after this one in that order (the last row of the previous page).
   */
  async history(
    userId: string,
    limit: number,
    copytradeId?: string,
    after?: { atMs: number; id: string },
  ): Promise<CopyHistoryEntry[]> {
    const filter: Record<string, unknown> = { userId, kind: { $in: ['copy', 'skip'] } };
    if (copytradeId) filter.copytradeId = copytradeId;
    if (after) filter.$or = [{ atMs: { $lt: after.atMs } }, { atMs: after.atMs, _id: { $lt: after.id } }];
    return this.rows.find(filter, { sort: { atMs: -1, _id: -1 }, limit });
  }

  /** Realized PnL, 24 h and lifetime, real and simulated (GET /v2/trade/copytrade/pnl). Dollars. */
  async pnl(userId: string): Promise<Record<string, unknown>> {
    const rows = await this.rows.find({ userId, kind: 'realized' });
    const since = this.clock.now() - 24 * 3600_000;
    const sum = (sim: boolean, recent: boolean) =>
      str(
        rows
          .filter((r) => r.isSimulation === sim && (!recent || r.atMs >= since))
          .reduce((a, r) => a.plus(dec(r.pnlUsd ?? '0')), ZERO),
      );
    return {
      realized_pnl_24h: sum(false, true),
      realized_pnl_lifetime: sum(false, false),
      simulation: { realized_pnl_24h: sum(true, true), realized_pnl_lifetime: sum(true, false) },
    };
  }

  /** The paper account over the user's simulation subscriptions, marked at the midpoint. */
  async simulation(userId: string): Promise<SimulationView> {
    const subs = (await this.list(userId)).map((r) => this.contextOf(r)).filter((c) => c.settings.is_simulation);
    let cash = ZERO;
    let realized = ZERO;
    const merged = new Map<string, { shares: Dec; cost: Dec }>();
    for (const c of subs) {
      cash = cash.plus(dec(c.paper.cashUsd));
      realized = realized.plus(dec(c.paper.realizedPnl));
      for (const [t, p] of Object.entries(c.paper.positions)) {
        const m = merged.get(t) ?? { shares: ZERO, cost: ZERO };
        merged.set(t, { shares: m.shares.plus(dec(p.shares)), cost: m.cost.plus(dec(p.costUsd)) });
      }
    }
    let unrealized: Dec | null = ZERO;
    let value: Dec | null = ZERO;
    const positions = [...merged].map(([tokenId, p]) => {
      const mid = this.midpoint(tokenId);
      const mv = mid === null ? null : p.shares.times(mid).toDecimalPlaces(6);
      const u = mv === null ? null : mv.minus(p.cost);
      unrealized = u === null || unrealized === null ? null : unrealized.plus(u);
      value = mv === null || value === null ? null : value.plus(mv);
      return {
        token_id: tokenId,
        shares: str(p.shares),
        avg_cost: str(p.cost.div(p.shares).toDecimalPlaces(6)),
        cost_basis: str(p.cost),
        mark_price: mid === null ? null : str(mid),
        market_value: mv === null ? null : str(mv),
        unrealized_pnl: u === null ? null : str(u),
      };
    });
    const u = unrealized as Dec | null;
    const v = value as Dec | null;
    return {
      initial_balance_usdc: str(dec(PAPER_INITIAL_USD).times(subs.length)),
      cash_usdc: str(cash),
      realized_pnl: str(realized),
      unrealized_pnl: u === null ? null : str(u),
      equity_usdc: v === null ? null : str(cash.plus(v)),
      positions,
    };
  }

  /**
   * Resets a subscription's paper account and deletes its paper history rows.
   * @returns how many rows were deleted.
   * @throws {DomainError} `NOT_FOUND`.
   */
  async resetSimulation(userId: string, id: string): Promise<number> {
    await this.owned(userId, id);
    await this.host.send(id, { type: 'simulation.reset', atMs: this.clock.now() } satisfies CopytradeEvent);
    await this.idle();
    return this.rows.deleteMany({ copytradeId: id, isSimulation: true });
  }

  /** The history row of the API (GET /v2/trade/copytrade/history). */
  async historyView(rows: CopyHistoryEntry[]): Promise<Record<string, unknown>[]> {
    const subs = new Map<string, CopytradeContext | null>();
    const orderIds = rows.map((r) => r.orderId).filter((x): x is string => x !== null);
    const orders = orderIds.length ? await this.actors.getMany(orderIds) : new Map<string, ActorRecord>();
    const out: Record<string, unknown>[] = [];
    for (const r of rows) {
      if (!subs.has(r.copytradeId)) {
        const rec = this.host.recordOf(r.copytradeId) ?? (await this.actors.get(r.copytradeId));
        subs.set(r.copytradeId, rec ? this.contextOf(rec) : null);
      }
      const c = subs.get(r.copytradeId);
      const f = r.fill;
      const order = r.orderId ? (orders.get(r.orderId) ?? null) : null;
      const ov = (order?.view ?? {}) as Record<string, unknown>;
      const market = f ? this.venue.market(f.conditionId) : undefined;
      out.push({
        id: r._id,
        copytrade_id: r.copytradeId,
        leader_address: c?.settings.leader_address ?? null,
        user_wallet: c?.userWallet ?? null,
        market_id: f?.conditionId ?? null,
        event_slug: market?.slug ?? null,
        market_title: market?.question ?? null,
        token_id: f?.tokenId ?? null,
        outcome: f?.outcome ?? null,
        side: f?.side ?? (r.order ? r.order.side.toUpperCase() : null),
        order_type: f ? (f.role === 'taker' ? 'MARKET' : 'LIMIT') : null,
        result: r.kind === 'copy' ? 'COPIED' : 'SKIPPED',
        reason: r.reason,
        detail: r.detail,
        amount: r.order?.usd ?? (order ? String(ov.matched_amount ?? '0') : null),
        shares: r.order?.shares ?? null,
        // the fill price once the copy's order filled (a market copy walks the book; the touch it was
        // decided at is only what it expected), else the price it was sent at
        price: typeof ov.avg_price === 'string' ? ov.avg_price : (r.order?.price ?? null),
        order_id: r.orderId,
        order_status: order ? order.status : null,
        filled_size: order ? String(ov.filled_size ?? '0') : null,
        leader_fill: f
          ? {
              transaction_hash: f.transactionHash,
              log_index: f.logIndex,
              side: f.side,
              price: f.price,
              size: f.size,
              notional_usd: f.notionalUsd,
              role: f.role,
              at: new Date(f.atMs).toISOString(),
            }
          : null,
        is_simulation: r.isSimulation,
        created_at: new Date(r.atMs).toISOString(),
      });
    }
    return out;
  }
}
