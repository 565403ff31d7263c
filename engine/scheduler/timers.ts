import { createRequire } from 'node:module';
import { setTimeout as sleep } from 'node:timers/promises';
import tty from 'node:tty';
import { backoffMs } from '../backoff.js';
import { Agenda, type AgendaBackend, type Job } from 'agenda';
import { DuplicateKeyError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { Store } from '../store/port.js';
import { MongoStore } from '../store/mongo.js';
import { StoreAgendaBackend } from './store-backend.js';
import { LOCK_LIMIT, LookaheadBackend, type NextDueAt } from './lookahead.js';
import { mongoTimerBackend, NotifyingBackend } from './mongo-backend.js';

/** Job name of every actor timer. */
export const TIMER_JOB = 'actor.timer';

/** Payload of a timer job and of the `timer.fired` event it turns into. */
export interface TimerData {
  actorId: string;
  /** Name of the deadline in the actor's context, e.g. `expiry`, `nextSlice`. */
  timerName: string;
  /** When it was due, epoch ms; lets the actor ignore a stale or duplicate firing. */
  atMs: number;
}

/** Payload of a service job's run ({@link TimerService.defineJob}). */
interface ServiceJobData {
  /** When the run was due, epoch ms. */
  atMs: number;
}

/** Receives due timers. Must be idempotent: a timer may fire twice (crash between run and save). */
export type TimerSink = (timer: TimerData) => Promise<void>;

/** The key of timer `timerName` of `actorId` in the failure records. */
function timerKey(actorId: string, timerName: string): string {
  return `${actorId}/${timerName}`;
}

/** The key of service job `name` in the failure records. */
function jobKey(name: string): string {
  return `job:${name}`;
}

/** Delay before delivery attempt `attempt` + 1 of a timer whose delivery failed (ms): 100 ms doubling, at most 30 s. */
export function timerRetryDelayMs(attempt: number): number {
  return backoffMs(attempt, 100, 30_000);
}

/** Attempts of {@link TimerService.schedule} when its insert meets a concurrent one (unique index). */
const SCHEDULE_ATTEMPTS = 5;

function isDuplicateKey(err: unknown): boolean {
  return (
    err instanceof DuplicateKeyError ||
    (typeof err === 'object' && err !== null && (err as { code?: unknown }).code === 11000)
  );
}

/**
 * Agenda creates a `debug` logger on nearly every step of its job processor
 * (`log.extend('jobProcessing')(...)`), and each new logger asks `tty.isatty(process.stderr.fd)`
 * (a system call) whether to use colours; in bench:timers that was 11 % of the process's CPU. The
 * answer cannot change while the process runs, so it is asked once here and kept in the
 * `inspectOpts` of the `debug` module Agenda itself loads (where `DEBUG_COLORS` would put it; a
 * value set that way wins). Output with `DEBUG=agenda:*` is unchanged.
 */
function cacheAgendaDebugColors(): void {
  try {
    const fromAgenda = createRequire(createRequire(import.meta.url).resolve('agenda'));
    const debug = fromAgenda('debug') as { inspectOpts?: Record<string, unknown> };
    if (debug.inspectOpts && !('colors' in debug.inspectOpts)) debug.inspectOpts.colors = tty.isatty(process.stderr.fd);
  } catch {
    // another layout of node_modules: Agenda keeps asking, which costs CPU only
  }
}

cacheAgendaDebugColors();

/**
 * The Agenda backend for `store`: on MongoDB, Agenda's MongoDB backend with an in-process
 * notification channel and the timer indexes created at connect ({@link mongoTimerBackend});
 * otherwise our backend over the store port (which has its own channel).
 */
export function timerBackend(store: Store, log?: Logger): AgendaBackend {
  return store instanceof MongoStore
    ? mongoTimerBackend(store.database, TIMER_JOB, log)
    : new StoreAgendaBackend(store);
}

/**
 * Durable timers on Agenda 6: the Mongo backend on MongoDB, our backend over
 * the store port otherwise. One job document per armed deadline of an (actor, timer name): scheduling
 * again removes the previous one and inserts a new one, cancelling removes it. Jobs survive
 * restarts; a job that comes due while the service is down runs at start.
 *
 * Why a new document per arming: a deadline is often re-armed by the very
 * event its own job delivers (a TWAP's slice timer arms the next slice). Agenda, once the running
 * job's handler returns, writes the job's own state back and removes a completed one-time job
 * (`removeOnComplete`), so re-arming by moving that same document was undone: the next slice
 * never fired. Removing the running document and inserting a new one leaves Agenda's write-back
 * nothing to undo (it ignores a job that was removed while it ran).
 *
 * On MongoDB a job due now is delivered through an in-process notification
 * channel, not at the next poll, and `agendaJobs` has a unique index on (`name`, `data.actorId`,
 * `data.timerName`): see `timerJobIndexes` in `./mongo-backend.ts`.
 *
 * A delivery that fails (the sink rejects: a store write failed) is retried with backoff
 * ({@link timerRetryDelayMs}), never dropped; while any is failing, {@link failing} is above 0 and
 * health reports the scheduler degraded.
 */
export class TimerService {
  private readonly agenda: Agenda;
  /** The backend Agenda runs on when the store can tell when the next job is due (both stores can). */
  private readonly lookahead: LookaheadBackend | null;
  private started = false;
  private readonly failingJobs = new Set<string>();
  /** Resolves once the backend is connected and its indexes exist; rejects with why not. */
  private readonly ready: () => Promise<void>;

  constructor(
    store: Store,
    private readonly sink: TimerSink,
    private readonly log: Logger,
    pollMs: number,
  ) {
    const inner = timerBackend(store, log);
    this.ready = inner instanceof NotifyingBackend ? () => inner.ready() : () => Promise.resolve();
    // lock only what is due now and wake Agenda just before the next one (./lookahead.ts)
    const nextDueAt: NextDueAt | undefined =
      inner instanceof StoreAgendaBackend
        ? (name, after, until) => inner.repository.nextDueAt(name, after, until)
        : inner instanceof NotifyingBackend
          ? inner.nextDueAt
          : undefined;
    const channel = inner.notificationChannel;
    this.lookahead = nextDueAt && channel ? new LookaheadBackend(inner, channel, nextDueAt) : null;
    const backend = this.lookahead ?? inner;
    this.agenda = new Agenda({
      backend,
      processEvery: pollMs,
      defaultLockLifetime: 60_000,
      maxConcurrency: 50,
      defaultConcurrency: 20,
      // without the lookahead nothing resumes a fill the limit stopped before the next poll
      ...(this.lookahead ? { lockLimit: LOCK_LIMIT } : {}),
      removeOnComplete: true,
    });
    this.agenda.define<TimerData>(TIMER_JOB, async (job: Job<TimerData>) => {
      // Agenda runs a job it locked ahead of time from its own queue, even if the job was
      // canceled (or re-armed: replaced by a new document) since: such a firing is dropped here
      if (await this.replaced(job)) return;
      await this.deliver(job.attrs.data);
    });
    this.agenda.on('error', (err) => this.log.error({ err }, 'scheduler error'));
    this.agenda.on('fail', (err: unknown, job: unknown) => {
      const attrs = (job as Job<TimerData> | undefined)?.attrs;
      // the handlers retry their own failures: a run that throws is a defect, shown in health until a restart
      if (attrs && attrs.name !== TIMER_JOB) {
        this.failingJobs.add(jobKey(attrs.name));
        this.log.error({ err, job: attrs.name }, 'scheduled job threw');
        return;
      }
      const data = attrs?.data;
      if (data) this.failingJobs.add(timerKey(data.actorId, data.timerName));
      this.log.error({ err, job: data }, 'timer job threw');
    });
  }

  /**
   * Whether the document of `job` is gone (canceled or replaced since Agenda locked it). When the
   * store cannot tell, the run goes on: a stale timer firing is ignored by the sink, and a service
   * job's run is idempotent.
   */
  private async replaced(job: Job<TimerData> | Job<ServiceJobData>): Promise<boolean> {
    if (job.attrs._id === undefined) return false;
    try {
      return !(await this.agenda.db.getJobById(String(job.attrs._id)));
    } catch {
      return false;
    }
  }

  /**
   * The retry of each timer (`actorId/timerName`) whose delivery failed and of each service job
   * (`job:name`) whose run failed: the failures in a row (its backoff), the due time it retries and
   * its pending timer (null once it fired: the retry runs, or ran and failed again).
   */
  private readonly retries = new Map<string, { attempt: number; atMs: number; timer: NodeJS.Timeout | null }>();
  /** Redeliveries and re-armings running now ({@link drain} waits for them as Agenda's drain does for its runs). */
  private readonly retrying = new Set<Promise<void>>();

  /**
   * After a failure of `key` (a timer's delivery or a service job's run, due at `atMs`): counted in
   * {@link failing}, logged at the first attempt and every 20th, and `again` runs after the backoff
   * ({@link timerRetryDelayMs}), tracked in {@link retrying}, unless the scheduler stopped meanwhile.
   */
  private retryLater(
    key: string,
    atMs: number,
    err: unknown,
    log: { job: unknown; message: string },
    again: () => Promise<void>,
  ): void {
    const prior = this.retries.get(key);
    const attempt = (prior?.attempt ?? 0) + 1;
    this.failingJobs.add(key);
    if (attempt === 1 || attempt % 20 === 0) this.log.warn({ err, job: log.job, attempt }, log.message);
    if (prior?.timer) clearTimeout(prior.timer);
    const entry = { attempt, atMs, timer: null as NodeJS.Timeout | null };
    entry.timer = setTimeout(() => {
      entry.timer = null;
      if (!this.started) return;
      const p = again().finally(() => this.retrying.delete(p));
      this.retrying.add(p);
    }, timerRetryDelayMs(attempt));
    entry.timer.unref();
    this.retries.set(key, entry);
  }

  /** Drops the retry of `key` (its count and pending timer) and, unless `keepFailing`, its failing mark. */
  private forgetRetry(key: string, keepFailing = false): void {
    const r = this.retries.get(key);
    if (r?.timer) clearTimeout(r.timer);
    this.retries.delete(key);
    if (!keepFailing) this.failingJobs.delete(key);
  }

  /**
   * Hands `t` to the sink. A delivery that fails is counted in {@link failing} and delivered again
   * from here after a backoff ({@link timerRetryDelayMs}), until it succeeds or the timer is
   * canceled or re-armed. Not by Agenda's backoff: Agenda writes a failed run's next time into the
   * job's document, and when that write fails too (the store is what failed the delivery) the
   * document stays locked and the timer never fires again (a GTD order would never expire). Agenda
   * sees the run end and removes its document; a restart in between re-arms the timer from the
   * actor's deadlines (`ActorHost.restoreAll`), and the sink ignores a stale firing.
   */
  private async deliver(t: TimerData): Promise<void> {
    const key = timerKey(t.actorId, t.timerName);
    try {
      await this.sink(t);
    } catch (err) {
      // a later deadline's redelivery already waits: it stays (this firing is stale)
      if (!this.awaitsOther(key, t.atMs))
        this.retryLater(key, t.atMs, err, { job: t, message: 'timer delivery failed; retrying with backoff' }, () =>
          this.deliver(t),
        );
      return;
    }
    // a firing of another deadline (stale, ignored by the sink) leaves a pending redelivery alone
    if (!this.awaitsOther(key, t.atMs)) this.forgetRetry(key);
  }

  /** Whether `key` has a retry pending for another due time than `atMs`. */
  private awaitsOther(key: string, atMs: number): boolean {
    const r = this.retries.get(key);
    return r !== undefined && r.timer !== null && r.atMs !== atMs;
  }

  /** Starts processing due jobs. */
  async start(): Promise<void> {
    await this.ready();
    await this.agenda.start();
    this.started = true;
  }

  /** Whether the scheduler is processing jobs (for /healthz). */
  get running(): boolean {
    return this.started;
  }

  /** Timers whose last delivery failed and that wait for a retry (for /healthz). */
  get failing(): number {
    return this.failingJobs.size;
  }

  /**
   * Arms (or moves) timer `timerName` of `actorId` to fire at `atMs` (epoch ms).
   * Delivered as a {@link TimerData} to the sink at or after that time. When a concurrent call
   * for the same timer inserted its job between this call's cancel and insert (MongoDB's unique
   * index refuses the second one), this call cancels and inserts again: the later call wins.
   */
  async schedule(actorId: string, timerName: string, atMs: number): Promise<void> {
    const data: TimerData = { actorId, timerName, atMs };
    for (let attempt = 1; ; attempt++) {
      await this.cancel(actorId, timerName);
      try {
        await this.agenda.create<TimerData>(TIMER_JOB, data).schedule(new Date(atMs)).save();
        return;
      } catch (err) {
        if (!isDuplicateKey(err) || attempt >= SCHEDULE_ATTEMPTS) throw err;
      }
    }
  }

  /** Disarms timer `timerName` of `actorId` (a running delivery of it finishes); a no-op when it is not armed. */
  async cancel(actorId: string, timerName: string): Promise<void> {
    await this.ready();
    await this.agenda.cancel({ name: TIMER_JOB, data: { actorId, timerName } });
    this.forgetRetry(timerKey(actorId, timerName));
  }

  /**
   * Defines job `name`, a job of the service's own (not an actor's timer): `run` receives the
   * epoch ms the run was due at. A run that rejects is run again, due at the same time, after a
   * backoff ({@link timerRetryDelayMs}), and counted in {@link failing} meanwhile. Call before
   * {@link start}.
   *
   * The retry is armed from here, not by Agenda's own backoff: Agenda writes a failed run's next
   * time into the job's document, and when that write fails too (the store is what failed the run)
   * the document stays locked and the job never runs again (health would stay degraded once the
   * store is back). Here Agenda sees the run end; the retry arms the job again (a new document,
   * {@link scheduleJob}, itself retried while the store refuses it). A restart in between loses the
   * pending retry: the job's owner arms it at each start (the statements job does).
   */
  defineJob(name: string, run: (dueAtMs: number) => Promise<void>): void {
    this.agenda.define<ServiceJobData>(name, async (job: Job<ServiceJobData>) => {
      // a run locked ahead of time whose document was replaced since (re-armed) is dropped
      if (await this.replaced(job)) return;
      const dueAtMs = job.attrs.data.atMs;
      try {
        await run(dueAtMs);
      } catch (err) {
        this.jobFailed(name, dueAtMs, err);
        return;
      }
      this.forgetRetry(jobKey(name));
    });
  }

  /** After a failed run (or re-arming) of service job `name`: counted failing, armed again after a backoff. */
  private jobFailed(name: string, dueAtMs: number, err: unknown): void {
    this.retryLater(
      jobKey(name),
      dueAtMs,
      err,
      { job: name, message: 'scheduled job failed; retrying with backoff' },
      () => this.armJob(name, dueAtMs).catch((e: unknown) => this.jobFailed(name, dueAtMs, e)),
    );
  }

  /**
   * Arms the run of job `name` (see {@link defineJob}) at `atMs` (epoch ms), replacing the armed
   * one if any: one document per arming, as for timers (a job re-armed by its own run is not undone
   * by Agenda's write-back of the run). A pending retry of a failed run is replaced too.
   */
  async scheduleJob(name: string, atMs: number): Promise<void> {
    this.forgetRetry(jobKey(name), true); // failing until a run succeeds
    await this.armJob(name, atMs);
  }

  /** {@link scheduleJob} without touching a pending retry (the retry itself). */
  private async armJob(name: string, atMs: number): Promise<void> {
    await this.ready();
    await this.agenda.cancel({ name });
    await this.agenda.create<ServiceJobData>(name, { atMs }).schedule(new Date(atMs)).save();
  }

  /** Disarms every timer of `actorId`. */
  async cancelAll(actorId: string): Promise<void> {
    await this.ready();
    await this.agenda.cancel({ name: TIMER_JOB, data: { actorId } });
    // (a timer's retry is always marked failing: the failing marks name every one)
    for (const k of this.failingJobs) if (k.startsWith(`${actorId}/`)) this.forgetRetry(k);
  }

  /** Stops taking new jobs and waits (up to `timeoutMs`) for running ones, no longer than they run. */
  async drain(timeoutMs: number): Promise<void> {
    if (!this.started) return;
    this.started = false;
    for (const r of this.retries.values()) if (r.timer) clearTimeout(r.timer);
    this.retries.clear();
    // Agenda's drain looks at its running jobs again only on a job's `complete` event, which comes
    // before that job's removal (removeOnComplete) ends: alone, the last job would hold it to the timeout
    const ended = new AbortController();
    const watch = setInterval(() => {
      this.agenda.getRunningStats().then(
        (s) => (Array.isArray(s.runningJobs) ? s.runningJobs.length : s.runningJobs) === 0 && ended.abort(),
        () => ended.abort(),
      );
    }, 20);
    const startedAt = Date.now();
    try {
      await this.agenda.drain({ timeout: timeoutMs, signal: ended.signal });
    } finally {
      clearInterval(watch);
    }
    // and for the redeliveries and re-armings under way (within what is left of the timeout)
    const left = Math.max(0, timeoutMs - (Date.now() - startedAt));
    if (this.retrying.size > 0)
      await Promise.race([Promise.allSettled([...this.retrying]), sleep(left, undefined, { ref: false })]);
    this.lookahead?.repository.stop();
  }
}
