import type { StrategyContext, Touch } from '../../machines/strategy-kit.js';
import type { ActorHost } from '../actor-host.js';
import type { Logger } from '../logger.js';
import type { ActorRecord } from '../store/actors.js';
import { TriggerIndex } from '../triggers.js';
import { DELIVERY_RETRIES, deliveryDelayMs, type Deliveries } from './deliveries.js';

/**
 * The trigger feed: keeps the price-trigger index (engine/triggers.ts, pure) in step with each
 * strategy's `context.watch`, and delivers `book.touch` to the strategies whose level a book
 * update crossed. It lives with the strategies (not beside engine/triggers.ts) because it is
 * strategy delivery: it sends to strategy actors through the host, shares the retries and the
 * health counters of the child-order router, and is wired by {@link StrategyService}; the index
 * itself stays free of I/O.
 */
export class TriggerFeed {
  readonly triggers = new TriggerIndex();

  constructor(
    private readonly host: ActorHost,
    private readonly touchOf: (tokenId: string) => Touch,
    private readonly log: Logger,
    private readonly deliveries: Deliveries,
    /** The market's current tick of a token (decimal string; undefined when unknown): sent with each touch. */
    private readonly tickOf: (tokenId: string) => string | undefined = () => undefined,
    /** Whether a token's market is closed (resolved) now, in the venue's memory. */
    private readonly closedOf: (tokenId: string) => boolean = () => false,
  ) {}

  /**
   * Registers the strategy's current watch (a final strategy's is removed); with `checkNow`, a
   * new or changed watch is checked against the touch at once and delivered if it holds.
   */
  syncWatch(rec: ActorRecord, context?: StrategyContext, checkNow = true): void {
    const c =
      context ??
      (this.host.snapshotOf(rec._id)?.context as StrategyContext | undefined) ??
      (this.host.storedSnapshot(rec).context as StrategyContext);
    if (rec.final) {
      this.triggers.remove(rec._id);
      return;
    }
    const changed = this.triggers.set(rec._id, c.tokenId, c.watch);
    if (checkNow && changed && Object.keys(c.watch ?? {}).length)
      this.deliver(c.tokenId, this.touchOf(c.tokenId), [rec._id], true);
  }

  /** A book update of `tokenId` (VenuePort `onBook`): the strategies whose level it crossed get the touch. */
  onBook(tokenId: string): void {
    // most book updates are of tokens no strategy watches: their touch (both books, mirrored) is not computed
    if (!this.triggers.knowsToken(tokenId)) return;
    const touch = this.touchOf(tokenId);
    this.deliver(tokenId, touch, this.triggers.fire(tokenId, touch), false);
  }

  /** Start-up: every registered watch meets the current touch (held conditions fire). */
  fireAll(): void {
    for (const tokenId of this.triggers.watchedTokens()) {
      const touch = this.touchOf(tokenId);
      this.deliver(tokenId, touch, this.triggers.fire(tokenId, touch, true), false);
    }
  }

  /**
   * Sends `book.touch` to strategies `ids`; each one's watch is registered again after it handled it.
   * @param onlyIfHolds - a fresh or changed watch: only strategies whose condition already holds get it.
   */
  deliver(tokenId: string, touch: Touch, ids: string[], onlyIfHolds: boolean): void {
    const due = onlyIfHolds ? ids.filter((id) => this.triggers.fireOne(id, tokenId, touch)) : ids;
    if (due.length > 0) this.deliveries.track(this.deliverTogether(due, tokenId, touch));
  }

  /** The `book.touch` event of a touch of `tokenId`. */
  private touchEvent(tokenId: string, touch: Touch): { type: 'book.touch'; bid: string | null; ask: string | null } {
    const tickSize = this.tickOf(tokenId);
    return { type: 'book.touch', bid: touch.bid, ask: touch.ask, ...(tickSize ? { tickSize } : {}) };
  }

  /**
   * Delivers one fired touch to the strategies `ids` as ONE host batch (one transaction for all
   * their steps), their watches registered again as {@link deliverTouch} does. When the token's
   * market has closed by the time the batch steps them (the venue resolved it after this touch;
   * the book is empty now), the stale touch is not delivered: they are armed again and the
   * market's end cancels them (a sell they would place now is refused, market closed). Those the
   * batch did not step (not in memory nor stored, or the touch changed nothing) go through
   * {@link deliverTouch} one by one; when the batch failed, each one's delivery failed
   * ({@link notDelivered}: armed again, retried).
   */
  private async deliverTogether(ids: string[], tokenId: string, touch: Touch): Promise<void> {
    const held = new Map(ids.map((id) => [id, this.triggers.held(id)]));
    const event = this.touchEvent(tokenId, touch);
    let written: Map<string, ActorRecord>;
    let closed = false;
    try {
      written = await this.host.batch(
        ids,
        (b) => {
          closed = this.closedOf(tokenId);
          if (!closed) for (const id of ids) b.step(id, event);
        },
        undefined,
        { loadStored: true }, // armed stops are passivated
      );
    } catch (err) {
      // nothing of the batch was written: each one's first delivery failed
      for (const id of ids) this.notDelivered(id, tokenId, held.get(id), 0, err);
      return;
    }
    const rest: Promise<void>[] = [];
    for (const id of ids) {
      if (closed) {
        this.triggers.rearm(id, held.get(id));
        continue;
      }
      const rec = written.get(id);
      if (!rec) {
        rest.push(this.deliverTouch(id, tokenId, touch, 0));
        continue;
      }
      this.triggers.delivered(id, held.get(id));
      this.syncWatch(rec, undefined, false);
    }
    await Promise.all(rest);
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
      rec = await this.host.send(id, this.touchEvent(tokenId, touch));
    } catch (err) {
      this.notDelivered(id, tokenId, held, attempt, err);
      return;
    }
    this.triggers.delivered(id, held);
    // registered again, whether or not the touch changed anything (a change did so already)
    this.syncWatch(rec, undefined, false);
  }

  /**
   * A fired touch could not be delivered to strategy `id` (attempt `attempt`, from 0): counted, the
   * strategy armed again at once, and after a backoff the current touch is checked against it and
   * delivered if its condition still holds, at most {@link DELIVERY_RETRIES} times.
   * @param held - the registration held for it since it fired ({@link TriggerIndex.held}).
   */
  private notDelivered(id: string, tokenId: string, held: object | undefined, attempt: number, err: unknown): void {
    this.deliveries.failed++;
    // the host's snapshot is the persisted one (a failure after the write leaves the new one);
    // without it, the registration as it fired
    const c = this.host.snapshotOf(id)?.context as StrategyContext | undefined;
    if (c) this.triggers.set(id, c.tokenId, c.watch);
    else this.triggers.rearm(id, held);
    if (attempt >= DELIVERY_RETRIES) {
      this.deliveries.abandoned++;
      this.log.error(
        { err, recordId: id, attempts: attempt + 1 },
        'price trigger not delivered after every retry: armed again, it fires at the next touch change',
      );
      return;
    }
    this.log.warn({ err, recordId: id, attempt: attempt + 1 }, 'price trigger not delivered: armed again, retrying');
    this.deliveries.later(deliveryDelayMs(attempt + 1), async () => {
      const now = this.touchOf(tokenId);
      if (this.triggers.fireOne(id, tokenId, now, true)) await this.deliverTouch(id, tokenId, now, attempt + 1);
    });
  }
}
