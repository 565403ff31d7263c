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
   * Batches applied whose promise has not settled yet, at most (default {@link MAX_BATCHES_IN_FLIGHT}):
   * while that many are in flight, the replay applies nothing more and resumes once the oldest
   * settles. The venue applies a batch in memory at once and hands its reports and book changes
   * to the engine only once its journal entry is durable, so a later batch may be applied while an
   * earlier one's commit is being synced (its entry then joins the next commit), but the replay
   * never runs ahead of the disk by more than this.
   */
  maxInFlight?: number;
  /**
   * Applies a batch of due events in order, as one venue operation; `position` is where the
   * replay is once they are applied (journaled with them).
   * @returns resolves once the batch's journal entry is durable and its reports and book changes
   *   were handed to the engine (a rejection counts as settled: the venue logs it).
   */
  apply: (events: CaptureEvent[], position: CapturePosition) => Promise<void> | void;
}

/** Default {@link CaptureReplayOptions.maxBatch}. */
export const MAX_EVENTS_PER_BATCH = 500;

/** Default {@link CaptureReplayOptions.maxInFlight}. */
export const MAX_BATCHES_IN_FLIGHT = 16;

/**
 * The replay clock of the WebSocket capture. The capture's first event
 * is applied when the replay starts (venue start-up); from then on capture time advances `speed`
 * times as fast as the injected clock (`recorded = from + (now − startedAt) × speed`, `from` the
 * capture's start or the resumed position's capture time), and every `tickMs` the events whose
 * time came are applied, in order, as one batch. At the end of the capture the replay **stops**
 * (no loop): the books keep their last captured levels, the resolved markets stay resolved, the
 * others stay open. A restart **resumes** where the previous run was ({@link CapturePosition},
 * journaled with each batch): capture time does not advance while the service is down.
 *
 * The replay awaits only the disk, and only when it runs ahead of it: at most
 * {@link CaptureReplayOptions.maxInFlight} batches are applied and not yet settled (durable, their
 * reports delivered); the next due batch waits for the oldest of them.
 */
export class CaptureReplay {
  private next = 0;
  private startedAtMs = 0;
  private fromRecordedMs: number;
  private timer: NodeJS.Timeout | null = null;
  /** The next turn's {@link step}, while more events are due than one batch takes. */
  private continuation: NodeJS.Immediate | null = null;
  private ended = false;
  /** Set by {@link stop}: a batch settling then does not resume the replay. */
  private stopped = false;
  /** Settlement of the batches applied and not yet settled, oldest first. */
  private readonly inFlight: Promise<void>[] = [];
  /** Whether {@link step} found the window full and waits for a batch to settle. */
  private waitingForRoom = false;

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
    this.stopped = false;
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
    this.stopped = true;
    this.waitingForRoom = false;
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
   * capture. While {@link CaptureReplayOptions.maxInFlight} batches are in flight it applies
   * nothing and goes on once the oldest settled.
   */
  step(): void {
    const events = this.o.capture.events;
    if (this.inFlight.length >= this.maxInFlight) {
      this.waitingForRoom = true;
      return;
    }
    const upTo = this.recordedNowMs();
    const limit = this.next + (this.o.maxBatch ?? MAX_EVENTS_PER_BATCH);
    let end = this.next;
    while (end < events.length && events[end]!.atMs <= upTo && end < limit) end++;
    const more = end < events.length && events[end]!.atMs <= upTo;
    // a partial batch reached the time of its last event (as runToEnd's batches)
    if (end > this.next) this.applyThrough(end, more ? events[end - 1]!.atMs : Math.min(upTo, this.o.capture.endMs));
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

  /** The most batches in flight ({@link CaptureReplayOptions.maxInFlight}). */
  private get maxInFlight(): number {
    return Math.max(1, this.o.maxInFlight ?? MAX_BATCHES_IN_FLIGHT);
  }

  /** Batches applied and not yet settled (durable, reports delivered). */
  get batchesInFlight(): number {
    return this.inFlight.length;
  }

  /**
   * Applies the events from the next one up to index `end` (excluded) as one batch, whatever the
   * clock says (the replay's steps, and the benchmark without the clock). Check
   * {@link whenRoom} first: this does not wait for the window.
   * @param recordedMs - the capture time reached with them (default: the last one's).
   */
  applyThrough(end: number, recordedMs?: number): void {
    const events = this.o.capture.events;
    end = Math.min(end, events.length);
    if (end <= this.next) return;
    const batch = events.slice(this.next, end);
    this.next = end;
    let settled: Promise<void>;
    try {
      settled = Promise.resolve(this.o.apply(batch, { next: end, recordedMs: recordedMs ?? events[end - 1]!.atMs }));
    } catch {
      settled = Promise.resolve(); // the venue logged it
    }
    const tracked: Promise<void> = settled.then(
      () => this.settled(tracked),
      () => this.settled(tracked),
    );
    this.inFlight.push(tracked);
  }

  /** A batch settled: out of the window; a step that found the window full goes on. */
  private settled(batch: Promise<void>): void {
    const i = this.inFlight.indexOf(batch);
    if (i >= 0) this.inFlight.splice(i, 1);
    if (this.waitingForRoom && !this.stopped) {
      this.waitingForRoom = false;
      this.step();
    }
  }

  /** Resolves once fewer than {@link CaptureReplayOptions.maxInFlight} batches are in flight. */
  async whenRoom(): Promise<void> {
    while (this.inFlight.length >= this.maxInFlight) await this.inFlight[0];
  }

  /** Resolves once every batch applied so far has settled. */
  async whenSettled(): Promise<void> {
    while (this.inFlight.length > 0) await this.inFlight[this.inFlight.length - 1];
  }

  /**
   * Applies the rest of the capture without the clock (benchmark), in batches of `batchSize`
   * events, each one venue operation, with the replay's window of batches in flight.
   * @returns how many events were applied, once every batch settled.
   */
  async runToEnd(batchSize: number): Promise<number> {
    const events = this.o.capture.events;
    const from = this.next;
    while (this.next < events.length) {
      await this.whenRoom();
      this.applyThrough(this.next + batchSize);
    }
    await this.whenSettled();
    return this.next - from;
  }
}
