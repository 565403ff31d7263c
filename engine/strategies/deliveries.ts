import type { Logger } from '../logger.js';
import { backoffMs } from '../backoff.js';

/**
 * A delivery from the engine to a strategy (a touch, a child order's report, a placement failure,
 * a child cancel) that fails (a store read or write) is retried this many times, after 100 ms,
 * 200 ms, … 1.6 s.
 */
export const DELIVERY_RETRIES = 5;

/** Backoff before retry `attempt` (1-based), in ms: 100 × 2^(attempt − 1). */
export const deliveryDelayMs = (attempt: number): number => backoffMs(attempt, 100);

/**
 * The bookkeeping shared by the child-order router and the trigger feed: commands in flight
 * (what {@link StrategyService.whenQuiet} waits for), retries waiting on their backoff timer
 * (what {@link idle} also waits for), and the health counters of failed and abandoned deliveries.
 */
export class Deliveries {
  /** Commands in flight (a child placement, a cancel, a delivery). */
  readonly inFlight = new Set<Promise<unknown>>();
  /** Deliveries waiting for a retry (backoff timers); {@link idle} waits for them, `whenQuiet` does not. */
  private readonly retrying = new Set<Promise<unknown>>();
  private readonly retryTimers = new Set<NodeJS.Timeout>();
  private stopped = false;
  /** Deliveries that failed (a store read or write) and were retried or armed again, since start. */
  failed = 0;
  /** Deliveries given up after every retry, since start. */
  abandoned = 0;

  constructor(private readonly log: Logger) {}

  /** Tracks a command: {@link idle} and `whenQuiet` wait for it; a rejection is logged, never thrown. */
  track(p: Promise<unknown>): void {
    const done = p
      .catch((err) => this.log.error({ err }, 'strategy command failed'))
      .finally(() => this.inFlight.delete(done));
    this.inFlight.add(done);
  }

  /** Runs `fn` after `ms` (a retry): tracked for {@link idle}; dropped once {@link stop} was called. */
  later(ms: number, fn: () => Promise<unknown>): void {
    if (this.stopped) return;
    let timer: NodeJS.Timeout | undefined;
    const wait = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
      timer.unref?.();
      this.retryTimers.add(timer);
    });
    const done: Promise<unknown> = wait
      .then(() => {
        if (timer) this.retryTimers.delete(timer);
        return this.stopped ? undefined : fn();
      })
      .catch((err) => this.log.error({ err }, 'strategy retry failed'))
      .finally(() => this.retrying.delete(done));
    this.retrying.add(done);
  }

  /** Deliveries waiting for a retry right now. */
  get retryingCount(): number {
    return this.retrying.size;
  }

  /** Stops retrying (service shutdown): pending retry timers are dropped. */
  stop(): void {
    this.stopped = true;
    for (const t of this.retryTimers) clearTimeout(t);
    this.retryTimers.clear();
    this.retrying.clear();
  }

  /** Waits for every command in flight and every pending retry. */
  async idle(): Promise<void> {
    while (this.inFlight.size || this.retrying.size) await Promise.all([...this.inFlight, ...this.retrying]);
  }
}
