import type { Clock } from '../clock.js';
import type { Logger } from '../logger.js';
import type { Capture, CaptureEvent } from './capture.js';

/** Where a replay resumes: index of the next event, capture time reached (epoch ms of the capture). */
export interface CapturePosition {
  next: number;
  recordedMs: number;
}

/** Options of the capture replay (from SIM_CAPTURE, SIM_CAPTURE_SPEED). */
export interface CaptureReplayOptions {
  capture: Capture;
  clock: Clock;
  log: Logger;
  /** Capture seconds per real second (SIM_CAPTURE_SPEED; 1 = real time). */
  speed: number;
  /** Where to resume (the journaled position of the previous run); default the capture's start. */
  resumeFrom?: CapturePosition;
  /** How often the replay applies the events that came due, ms (default 250). */
  tickMs?: number;
  /**
   * Events applied in one venue operation at most (default {@link MAX_EVENTS_PER_BATCH}): when
   * more came due (the start, a fast replay, a catch-up after the event loop was held), the rest
   * go in further operations, one per event-loop turn, instead of one long block.
   */
  maxBatch?: number;
  /**
   * Applies a batch of due events in order, as one venue operation; `position` is where the
   * replay is once they are applied (journaled with them).
   */
  apply: (events: CaptureEvent[], position: CapturePosition) => void;
}

/** Default {@link CaptureReplayOptions.maxBatch}. */
export const MAX_EVENTS_PER_BATCH = 500;

/**
 * The replay clock of the WebSocket capture. The capture's first event
 * is applied when the replay starts (venue start-up); from then on capture time advances `speed`
 * times as fast as the injected clock (`recorded = from + (now − startedAt) × speed`, `from` the
 * capture's start or the resumed position's capture time), and every `tickMs` the events whose
 * time came are applied, in order, as one batch. At the end of the capture the replay **stops**
 * (no loop): the books keep their last captured levels, the resolved markets stay resolved, the
 * others stay open. A restart **resumes** where the previous run was ({@link CapturePosition},
 * journaled with each batch): capture time does not advance while the service is down.
 */
export class CaptureReplay {
  private next = 0;
  private startedAtMs = 0;
  private fromRecordedMs: number;
  private timer: NodeJS.Timeout | null = null;
  /** The next turn's {@link step}, while more events are due than one batch takes. */
  private continuation: NodeJS.Immediate | null = null;
  private ended = false;

  constructor(private readonly o: CaptureReplayOptions) {
    this.next = Math.min(o.resumeFrom?.next ?? 0, o.capture.events.length);
    this.fromRecordedMs = Math.max(o.resumeFrom?.recordedMs ?? o.capture.startMs, o.capture.startMs);
  }

  /** Events applied so far. */
  get applied(): number {
    return this.next;
  }

  /** Whether every event was applied. */
  get done(): boolean {
    return this.next >= this.o.capture.events.length;
  }

  /** Starts the replay clock now and applies what is due at once (the capture's first events). */
  start(): void {
    this.startedAtMs = this.o.clock.now();
    const s = this.o.capture.skips;
    this.o.log.info(
      {
        events: this.o.capture.events.length,
        resumedAt: this.next,
        markets: this.o.capture.markets.length,
        speed: this.o.speed,
        spanMs: this.o.capture.endMs - this.o.capture.startMs,
        skipped: s,
      },
      `capture replay started; skipped ${s.errorRows} error rows, ${s.unusable} rows with N/A or ` +
        `missing values, ${s.malformed} malformed rows (${s.naValues} N/A values seen)`,
    );
    this.step();
    if (this.done) return;
    this.timer = setInterval(() => this.step(), this.o.tickMs ?? 250);
    this.timer.unref();
  }

  /** Stops the replay clock. */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    if (this.continuation) clearImmediate(this.continuation);
    this.continuation = null;
  }

  /** Capture time now, epoch ms of the capture. */
  recordedNowMs(): number {
    return this.fromRecordedMs + (this.o.clock.now() - this.startedAtMs) * this.o.speed;
  }

  /**
   * Applies the events due at the replay clock's time, at most {@link CaptureReplayOptions.maxBatch}
   * of them (the rest in the next event-loop turn, and so on, in order); stops at the end of the
   * capture.
   */
  step(): void {
    const events = this.o.capture.events;
    const upTo = this.recordedNowMs();
    const limit = this.next + (this.o.maxBatch ?? MAX_EVENTS_PER_BATCH);
    let end = this.next;
    while (end < events.length && events[end]!.atMs <= upTo && end < limit) end++;
    const more = end < events.length && events[end]!.atMs <= upTo;
    if (end > this.next) {
      const batch = events.slice(this.next, end);
      this.next = end;
      // a partial batch reached the time of its last event (as runToEnd's batches)
      this.o.apply(batch, {
        next: end,
        recordedMs: more ? events[end - 1]!.atMs : Math.min(upTo, this.o.capture.endMs),
      });
    }
    if (more && !this.continuation) {
      this.continuation = setImmediate(() => {
        this.continuation = null;
        this.step();
      });
      this.continuation.unref();
    }
    if (this.done && !this.ended) {
      this.ended = true;
      this.stop();
      this.o.log.info({ applied: this.next }, 'capture replay reached the end of the capture and stopped');
    }
  }

  /**
   * Applies the rest of the capture at once, in batches of `batchSize` events, without the
   * clock (benchmark): each batch is one venue operation.
   * @returns how many events were applied.
   */
  runToEnd(batchSize: number): number {
    const events = this.o.capture.events;
    const from = this.next;
    while (this.next < events.length) {
      const end = Math.min(events.length, this.next + batchSize);
      const batch = events.slice(this.next, end);
      this.next = end;
      this.o.apply(batch, { next: end, recordedMs: events[end - 1]!.atMs });
    }
    return this.next - from;
  }
}
