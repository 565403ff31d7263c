import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { ApiError } from './errors.js';

/** Seconds a shed request is told to wait (`Retry-After`). */
export const OVERLOADED_RETRY_AFTER_SEC = 1;

/**
 * Most release callbacks (`setImmediate`) queued for one event-loop iteration. A callback that finds
 * the budget spent does nothing (~0.5 µs); the batch size adapts to what the last one released.
 */
export const MAX_RELEASES_PER_ITERATION = 256;

/**
 * Limits of {@link admission} (settings WRITE_CONCURRENCY, WRITE_QUEUE_LENGTH, WRITE_QUEUE_WAIT_MS, LOOP_BUDGET_MS).
 */
export interface AdmissionLimits {
  /** Requests handled at once; 0 = no limit. */
  concurrency: number;
  /** Requests that may wait for a slot or for a later event-loop iteration; beyond it the answer is 503 at once. */
  queueLength: number;
  /** Longest wait in the queue (ms); then 503. */
  queueWaitMs: number;
  /**
   * Request work started per event-loop iteration (ms of wall time, see {@link LoopBudget}); once
   * spent, further requests wait in the queue for a later iteration. 0 = no budget. With both
   * `concurrency` and `loopBudgetMs` 0 nothing is limited and nothing waits.
   */
  loopBudgetMs?: number;
}

/** What {@link LoopBudget} and {@link AdmissionGate} need from the runtime; tests inject their own. */
export interface LoopRuntime {
  /** Monotonic time in ms (default `performance.now()`). */
  nowMs(): number;
  /**
   * Runs `fn` in the check phase of the event loop (default `setImmediate`): in this iteration when
   * called before the check phase (poll phase: socket reads), in the next one when called from a
   * check-phase callback itself.
   */
  defer(fn: () => void): void;
}

const realRuntime: LoopRuntime = {
  nowMs: () => performance.now(),
  defer: (fn) => void setImmediate(fn),
};

/**
 * A per-event-loop-iteration work budget. Node 20.20 (libuv 1.46) accepts ONE
 * new connection per event-loop iteration (libuv/libuv#3696), so an iteration that runs every
 * request its connections sent (an order taking ~0.9 ms of CPU with the store in memory) lasts
 * connections × 0.9 ms and new connections wait in the listen backlog until clients give up. The
 * budget keeps iterations short whatever the number of connections: {@link take} answers true while
 * the wall time since the current window opened is below `budgetMs`.
 *
 * A window opens at the first {@link take} after the previous one closed and closes at the start of
 * the next check phase (a "sentinel" `setImmediate` queued when it opened, so ahead of the release
 * callbacks queued after it): a window opened in the poll phase covers that poll phase; one opened
 * by a check-phase release covers that check phase and the next iteration's poll phase. Time the
 * loop spends idle before a window opens is not counted. Nothing is queued while no one takes.
 */
export class LoopBudget {
  private windowStartMs: number | undefined;
  private closeQueued = false;

  /**
   * @param budgetMs - wall time (ms) a window may spend starting work; 0 or less: no limit.
   * @param runtime - clock and check-phase scheduler (tests inject theirs).
   */
  constructor(
    readonly budgetMs: number,
    private readonly runtime: LoopRuntime = realRuntime,
  ) {}

  /**
   * Whether a piece of work may start now; opens a window when none is open. The work done after a
   * true answer counts against the window, since the next call sees the time it took.
   */
  take(): boolean {
    if (this.budgetMs <= 0) return true;
    const now = this.runtime.nowMs();
    if (this.windowStartMs === undefined) {
      this.windowStartMs = now;
      if (!this.closeQueued) {
        this.closeQueued = true;
        this.runtime.defer(this.close);
      }
      return true;
    }
    return now - this.windowStartMs < this.budgetMs;
  }

  /** Whether a window is open (tests). */
  get open(): boolean {
    return this.windowStartMs !== undefined;
  }

  private readonly close = () => {
    this.closeQueued = false;
    this.windowStartMs = undefined;
  };
}

/** One request as {@link AdmissionGate} sees it. */
export interface AdmissionTicket {
  /** Runs the request (it then holds a slot until {@link AdmissionGate.leave}). */
  admit(): void;
  /** Answers 503 `overloaded`: the request did not run. `why` goes into the message. */
  shed(why: string): void;
  /** Whether the client left (its request is dropped from the queue without running). */
  gone(): boolean;
}

interface Waiting {
  ticket: AdmissionTicket;
  timer: NodeJS.Timeout;
}

/**
 * The admission queue of mutating requests, independent of Express (unit-tested with an injected
 * runtime): at most `concurrency` requests run at once, new work starts only while the
 * {@link LoopBudget} of the current event-loop iteration is not spent, at most `queueLength` wait,
 * first come first served, none longer than `queueWaitMs` (then {@link AdmissionTicket.shed}).
 *
 * A request that finds the queue empty, a slot free and the budget unspent runs at once (no
 * deferral: the common case at low load). Otherwise it waits, and waiting requests are released in
 * the check phase, one per `setImmediate` callback: Node runs the nextTicks and microtasks of a
 * callback before the next one, so a request that completes synchronously or on promise
 * continuations (the store in memory) has done its work when the next callback checks the budget.
 * A batch of callbacks is queued per iteration (at most {@link MAX_RELEASES_PER_ITERATION}, sized by
 * what the previous batch released) and its last callback queues the next batch when requests still
 * wait and a slot is free; none is queued while the queue is empty, so an idle service does not spin.
 */
export class AdmissionGate {
  private running = 0;
  private readonly queue: Waiting[] = [];
  private batchQueued = false;
  private batchSize = 8;
  readonly budget: LoopBudget;
  private readonly concurrency: number;

  /**
   * @param limits - see {@link AdmissionLimits}.
   * @param runtime - clock and check-phase scheduler (tests inject theirs).
   */
  constructor(
    private readonly limits: AdmissionLimits,
    runtime: LoopRuntime = realRuntime,
  ) {
    this.concurrency = limits.concurrency > 0 ? limits.concurrency : Infinity;
    this.budget = new LoopBudget(limits.loopBudgetMs ?? 0, runtime);
    this.defer = runtime.defer;
  }

  private readonly defer: (fn: () => void) => void;

  /** Requests running (admitted, not yet left). */
  get runningCount(): number {
    return this.running;
  }

  /** Requests waiting. */
  get waitingCount(): number {
    return this.queue.length;
  }

  /** A request arrives: runs at once, waits, or is shed at once (queue full). */
  enter(ticket: AdmissionTicket): void {
    if (this.queue.length === 0 && this.running < this.concurrency && this.budget.take()) {
      this.running++;
      ticket.admit();
      return;
    }
    if (this.queue.length >= this.limits.queueLength) {
      const what =
        this.running >= this.concurrency
          ? `${this.limits.concurrency} requests running`
          : this.budget.budgetMs > 0
            ? `this event-loop iteration's ${this.budget.budgetMs} ms of work spent`
            : `${this.running} requests running`;
      ticket.shed(`${what} and ${this.queue.length} waiting`);
      return;
    }
    const w: Waiting = {
      ticket,
      timer: setTimeout(() => {
        const at = this.queue.indexOf(w);
        if (at >= 0) this.queue.splice(at, 1);
        ticket.shed(`no slot within ${this.limits.queueWaitMs} ms`);
      }, this.limits.queueWaitMs),
    };
    this.queue.push(w);
    this.scheduleBatch();
  }

  /** A running request finished (its response was sent or its client left): frees its slot. */
  leave(): void {
    this.running--;
    this.scheduleBatch();
  }

  private scheduleBatch(): void {
    if (this.batchQueued || this.queue.length === 0 || this.running >= this.concurrency) return;
    this.batchQueued = true;
    // not capped by the queue's length: requests arriving later in this poll phase use the same batch
    const size = this.batchSize;
    const batch = { released: 0, stopped: false };
    for (let i = 0; i < size; i++) this.defer(() => this.releaseOne(batch, i === size - 1, size));
  }

  /** One check-phase callback of a batch: releases the head of the queue if a slot and the budget allow. */
  private releaseOne(batch: { released: number; stopped: boolean }, last: boolean, size: number): void {
    if (!batch.stopped) {
      // the client left while waiting
      while (this.queue.length > 0 && this.queue[0]!.ticket.gone()) clearTimeout(this.queue.shift()!.timer);
      if (this.queue.length > 0 && this.running < this.concurrency && this.budget.take()) {
        const w = this.queue.shift()!;
        clearTimeout(w.timer);
        this.running++;
        batch.released++;
        w.ticket.admit();
      } else {
        batch.stopped = true;
      }
    }
    if (!last) return;
    this.batchQueued = false;
    // every callback released one: the next batch may be larger; else one more than were needed
    this.batchSize =
      batch.released === size ? Math.min(2 * size, MAX_RELEASES_PER_ITERATION) : Math.max(batch.released + 1, 1);
    this.scheduleBatch(); // queued from the check phase: runs in the next iteration
  }
}

/**
 * 503 `overloaded` with `Retry-After` (the error envelope): the request was not run, nothing
 * changed. With `Connection: close`: a client that retries at once (ignoring Retry-After) must
 * connect again, and Node accepts one connection per event-loop iteration, so shed clients can no
 * longer keep the loop busy answering 503s. Without it, 800 such connections (300 beyond the
 * queue) cut the orders completed from ~700/s to ~30/s: the admitted requests
 * progressed one long iteration at a time, each iteration spent answering the same clients' 503s.
 */
function overloaded(why: string): ApiError {
  return new ApiError(
    503,
    'overloaded',
    `the service is at capacity (${why}); nothing was changed: retry after Retry-After seconds, with jitter`,
    {
      'Retry-After': String(OVERLOADED_RETRY_AFTER_SEC),
      Connection: 'close',
    },
  );
}

/**
 * Load shedding and fairness for mutating requests, on an {@link AdmissionGate}:
 * at most `concurrency` run at once, new ones start only while the event-loop iteration's work
 * budget (`loopBudgetMs`) is not spent, at most `queueLength` wait (first come, first served) and
 * none waits longer than `queueWaitMs`. Beyond that the answer is 503 `overloaded` with
 * `Retry-After` in the error envelope, before anything changes (the body is read before
 * admission, so a slow upload holds no slot). Without a
 * bound, a burst beyond the service's throughput made every request wait behind all the others,
 * until clients gave up without an answer; without the budget, iterations grew with the number of
 * connections and connections beyond ~225 were not even accepted (see {@link LoopBudget}).
 * A slot is freed when the response is finished or the connection closes, whichever comes first.
 * @param runtime - clock and check-phase scheduler (tests inject theirs).
 */
export function admission(limits: AdmissionLimits, runtime: LoopRuntime = realRuntime): RequestHandler {
  if (limits.concurrency <= 0 && !((limits.loopBudgetMs ?? 0) > 0)) return (_req, _res, next) => next();
  const gate = new AdmissionGate(limits, runtime);
  const leave = () => gate.leave();
  return (req: Request, res: Response, next: NextFunction) => {
    gate.enter({
      admit: () => {
        let left = false;
        const done = () => {
          if (left) return;
          left = true;
          leave();
        };
        res.once('finish', done);
        res.once('close', done);
        next();
      },
      shed: (why) => next(overloaded(why)),
      gone: () => req.socket.destroyed,
    });
  };
}
