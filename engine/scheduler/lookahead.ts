import type {
  AgendaBackend,
  JobId,
  JobLogger,
  JobParameters,
  JobRepository,
  JobRepositoryOptions,
  JobsOverview,
  JobsQueryOptions,
  JobsResult,
  NotificationChannel,
  RemoveJobsOptions,
} from 'agenda';

/**
 * How far ahead of its due time a job is locked (ms). Agenda then runs it with its own
 * `setTimeout` at the due time, so lateness does not depend on when the lock happened as long as
 * the locks of one fill (one store write each, sequential; on disk an append each) take less than
 * this. At 167 timers due a second that is ~17 jobs in Agenda's queue, whose walks are then cheap.
 * bench:timers on disk under load: p99 160 ms with 20 ms ahead, 74 ms with 100 ms.
 */
export const LOCK_AHEAD_MS = 100;

/**
 * At most this many jobs locked by the process at once (Agenda's `lockLimit`): the local queue
 * Agenda walks stays this short when many are due at once. Above the job's concurrency (20), so
 * that jobs due soon are locked while others run.
 */
export const LOCK_LIMIT = 30;

/** The first window {@link LookaheadRepository} looks for the next due job in (ms after what it locks). */
const NEAR_WINDOW_MS = 100;

/**
 * Finds when the next job is due: the earliest `nextRunAt` of a job named `jobName` with
 * `after < nextRunAt ≤ until`, or null. One indexed range query. Locks need not be looked at:
 * only jobs due by the lock horizon (≤ `after`, which only moves forward) are ever locked, bar an
 * expired lock taken over (due long ago); a locked or disabled job answered here only costs a
 * wake that finds nothing.
 */
export type NextDueAt = (jobName: string, after: Date, until: Date) => Promise<Date | null>;

/**
 * Agenda's job processor, kept busy only with the jobs due now.
 *
 * Agenda locks, at each poll, every job due before the next poll (`processEvery`, our
 * `SCHEDULER_POLL_MS`, 1 s by default) and keeps them in a local queue until due. That queue is
 * walked again after every job that ends and every job timer, and each step of the walk scans the
 * queue and the list of jobs already seen in the walk (`JobProcessingQueue.returnNextConcurrencyFreeJob`,
 * `handledJobs.includes`) and creates a `debug` logger (a `tty.isatty` system call each): cubic in
 * the queue's length. At 167 timers due a second that queue held ~170 jobs, the walks took the
 * event loop for tens of milliseconds (the p99 of bench:timers) and, once behind, longer and longer
 * (seconds, on a busy machine).
 *
 * This repository wrapper narrows what Agenda may lock to the jobs due within {@link LOCK_AHEAD_MS}
 * (a handful), and wakes Agenda's processor itself, through the backend's notification channel,
 * just before the next job is due: after every queue fill it asks the store for the earliest
 * unlocked job due before the next poll ({@link NextDueAt}) and sets one timer for it. Agenda's
 * own poll still runs every `processEvery` (jobs written by another process, expired locks, a
 * missed wake), so a wake that goes wrong makes a firing late, never lost. Every other method is
 * the wrapped repository's.
 *
 * Many jobs due at once (the service was down while they came due) would fill the queue just the
 * same, so Agenda runs with a lock limit ({@link LOCK_LIMIT}); a fill that the limit stopped is
 * resumed by the next run that ends, here (`saveJobState` of an unlocked job), not at the next
 * poll.
 */
export class LookaheadRepository implements JobRepository {
  /** Per job name: the pending wake (epoch ms it is set for, its timer). */
  private readonly wakes = new Map<string, { atMs: number; timer: NodeJS.Timeout }>();
  private stopped = false;
  /** Job names whose last queue fill ended on a job (Agenda's lock limit stopped it), not on "none left". */
  private readonly cutShort = new Set<string>();

  constructor(
    readonly inner: JobRepository,
    private readonly channel: NotificationChannel,
    private readonly nextDueAt: NextDueAt,
    private readonly lockAheadMs = LOCK_AHEAD_MS,
  ) {}

  /** Clears the pending wakes (the processor stops). */
  stop(): void {
    this.stopped = true;
    for (const w of this.wakes.values()) clearTimeout(w.timer);
    this.wakes.clear();
  }

  /** Wakes Agenda's processor for `jobName` at `atMs` (epoch ms), unless an earlier wake is pending. */
  private wakeAt(jobName: string, atMs: number): void {
    if (this.stopped) return;
    const pending = this.wakes.get(jobName);
    if (pending && pending.atMs <= atMs) return;
    if (pending) clearTimeout(pending.timer);
    const timer = setTimeout(
      () => {
        this.wakes.delete(jobName);
        if (this.channel.state !== 'connected') return;
        // Agenda fills its queue for `jobName` on a notification due before its next scan
        const now = new Date();
        this.channel
          .publish({
            jobId: `wake:${jobName}` as unknown as JobId,
            jobName,
            nextRunAt: now,
            priority: 0,
            timestamp: now,
          })
          .catch(() => undefined);
      },
      Math.max(0, atMs - Date.now()),
    );
    timer.unref();
    this.wakes.set(jobName, { atMs, timer });
  }

  /**
   * Makes Agenda's processor look at its queue once `dueMs` (epoch ms) has passed by the wall clock.
   * Agenda runs a job it locked ahead with one `setTimeout` of the remaining time; Node measures that
   * from the loop's cached time, so after a long tick it fires early by the wall clock, Agenda finds
   * the job not yet due, queues it again and sets no second timer: the job then waited for the next
   * job to end or the next poll (up to `SCHEDULER_POLL_MS` when nothing else runs). This kick
   * checks the wall clock itself before it publishes.
   */
  private kickAt(jobName: string, dueMs: number): void {
    const fire = (): void => {
      if (this.stopped || this.channel.state !== 'connected') return;
      const left = dueMs + 1 - Date.now();
      if (left > 0) {
        setTimeout(fire, left).unref();
        return;
      }
      const now = new Date();
      this.channel
        .publish({ jobId: `kick:${jobName}` as unknown as JobId, jobName, nextRunAt: now, priority: 0, timestamp: now })
        .catch(() => undefined);
    };
    setTimeout(fire, Math.max(0, dueMs + 1 - Date.now())).unref();
  }

  async getNextJobToRun(
    jobName: string,
    nextScanAt: Date,
    lockDeadline: Date,
    now: Date | undefined,
    options: JobRepositoryOptions | undefined,
  ): Promise<JobParameters | undefined> {
    const horizon = new Date(Math.min(nextScanAt.getTime(), Date.now() + this.lockAheadMs));
    const job = await this.inner.getNextJobToRun(jobName, horizon, lockDeadline, now, options);
    if (job) {
      this.cutShort.add(jobName);
      if (job.nextRunAt && job.nextRunAt.getTime() > Date.now()) this.kickAt(jobName, job.nextRunAt.getTime());
      return job;
    }
    this.cutShort.delete(jobName);
    // the queue fill ends here: wake up for the next job due before the next poll
    // (first in a short window: at a high rate the next one is near, and the store sorts fewer)
    const near = new Date(Math.min(nextScanAt.getTime(), horizon.getTime() + NEAR_WINDOW_MS));
    const next =
      (near > horizon ? await this.nextDueAt(jobName, horizon, near) : null) ??
      (nextScanAt > near ? await this.nextDueAt(jobName, near, nextScanAt) : null);
    if (next) this.wakeAt(jobName, next.getTime() - this.lockAheadMs);
    return undefined;
  }

  async saveJob<DATA = unknown>(
    job: JobParameters<DATA>,
    options: JobRepositoryOptions | undefined,
  ): Promise<JobParameters<DATA>> {
    return this.inner.saveJob(job, options);
  }

  async saveJobState(job: JobParameters, options: JobRepositoryOptions | undefined): Promise<void> {
    await this.inner.saveJobState(job, options);
    if (job.lockedAt) return; // a run starts
    // a run ended with a next run time (a recurring job, or one Agenda moved to a retry time: the
    // service's own handlers retry from the process instead), which Agenda publishes no notification for
    if (job.nextRunAt && !job.disabled) this.wakeAt(job.name, job.nextRunAt.getTime() - this.lockAheadMs);
    // and, when the lock limit stopped the last fill with due jobs left, a lock is free now: fill again
    if (this.cutShort.has(job.name)) this.wakeAt(job.name, Date.now());
  }

  connect(): Promise<void> {
    return this.inner.connect();
  }
  queryJobs(options?: JobsQueryOptions): Promise<JobsResult> {
    return this.inner.queryJobs(options);
  }
  getJobsOverview(): Promise<JobsOverview[]> {
    return this.inner.getJobsOverview();
  }
  getDistinctJobNames(): Promise<string[]> {
    return this.inner.getDistinctJobNames();
  }
  getJobById(id: string): Promise<JobParameters | null> {
    return this.inner.getJobById(id);
  }
  getQueueSize(): Promise<number> {
    return this.inner.getQueueSize();
  }
  removeJobs(options: RemoveJobsOptions): Promise<number> {
    return this.inner.removeJobs(options);
  }
  lockJob(job: JobParameters, options: JobRepositoryOptions | undefined): Promise<JobParameters | undefined> {
    return this.inner.lockJob(job, options);
  }
  unlockJob(job: JobParameters): Promise<void> {
    return this.inner.unlockJob(job);
  }
  unlockJobs(jobIds: (JobId | string)[]): Promise<void> {
    return this.inner.unlockJobs(jobIds);
  }
  disableJobs(options: RemoveJobsOptions): Promise<number> {
    return this.inner.disableJobs(options);
  }
  enableJobs(options: RemoveJobsOptions): Promise<number> {
    return this.inner.enableJobs(options);
  }
  purgeAllJobs(): Promise<number> {
    return this.inner.purgeAllJobs();
  }
}

/**
 * A backend whose repository is a {@link LookaheadRepository} over another backend's; the rest is the other backend's.
 */
export class LookaheadBackend implements AgendaBackend {
  readonly name: string;
  readonly repository: LookaheadRepository;

  /**
   * @param inner - the backend that stores jobs.
   * @param notificationChannel - `inner`'s notification channel (Agenda's processor listens on it).
   * @param nextDueAt - when the next job is due in `inner`'s store.
   */
  constructor(
    readonly inner: AgendaBackend,
    readonly notificationChannel: NotificationChannel,
    nextDueAt: NextDueAt,
    lockAheadMs = LOCK_AHEAD_MS,
  ) {
    this.name = `${inner.name}, locking ${lockAheadMs} ms ahead`;
    this.repository = new LookaheadRepository(inner.repository, notificationChannel, nextDueAt, lockAheadMs);
  }

  get logger(): JobLogger | undefined {
    return this.inner.logger;
  }

  get ownsConnection(): boolean {
    return this.inner.ownsConnection ?? false;
  }

  connect(): Promise<void> {
    return this.inner.connect();
  }

  async disconnect(): Promise<void> {
    this.repository.stop();
    await this.inner.disconnect();
  }
}
