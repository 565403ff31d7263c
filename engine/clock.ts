/**
 * Time source injected everywhere logic needs "now". Nothing below the service wiring reads
 * `Date.now()` directly, so tests can drive time.
 */
export interface Clock {
  /** Current time, epoch milliseconds. */
  now(): number;
}

/** Wall clock. */
export const systemClock: Clock = { now: () => Date.now() };

/** A clock that only moves when told to: for tests and simulations. */
export class ManualClock implements Clock {
  constructor(private nowMs = Date.UTC(2026, 1, 8)) {}
  now(): number {
    return this.nowMs;
  }
  /** Move forward by `ms` milliseconds. */
  advance(ms: number): void {
    this.nowMs += ms;
  }
  /** Jump to `ms` (epoch ms). */
  set(ms: number): void {
    this.nowMs = ms;
  }
}
