import { randomUUID } from 'node:crypto';
import {
  computeJobState,
  InMemoryNotificationChannel,
  toJobId,
  type AgendaBackend,
  type JobId,
  type JobParameters,
  type JobRepository,
  type JobRepositoryOptions,
  type JobsOverview,
  type JobsQueryOptions,
  type JobsResult,
  type NotificationChannel,
  type RemoveJobsOptions,
} from 'agenda';
import type { Collection, Filter, Store } from '../store/port.js';

/** A job as stored: dates kept as Date, `_id` a string. */
type StoredJob = Omit<JobParameters, '_id'> & { _id: string };

const SORT = { nextRunAt: 1, priority: -1 } as const;

function toParams(doc: StoredJob): JobParameters {
  const out: Record<string, unknown> = { ...doc, _id: toJobId(doc._id) };
  for (const [k, v] of Object.entries(out)) if (v === null && k !== 'nextRunAt') delete out[k];
  return out as unknown as JobParameters;
}

function flattenData(data: unknown, prefix = 'data'): Filter {
  if (data === null || typeof data !== 'object' || Array.isArray(data)) return { [prefix]: data };
  const out: Filter = {};
  for (const [k, v] of Object.entries(data as Record<string, unknown>)) {
    const key = `${prefix}.${k}`;
    if (v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Date))
      Object.assign(out, flattenData(v, key));
    else out[key] = v;
  }
  return out;
}

function selectorOf(options: RemoveJobsOptions): Filter | null {
  const q: Filter = {};
  if (options.id) q._id = String(options.id);
  else if (options.ids?.length) q._id = { $in: options.ids.map(String) };
  if (options.name) q.name = options.name;
  else if (options.names?.length) q.name = { $in: options.names };
  else if (options.notNames?.length) q.name = { $nin: options.notNames };
  if (options.data !== undefined) Object.assign(q, flattenData(options.data));
  return Object.keys(q).length ? q : null;
}

/**
 * Agenda JobRepository over the store port, for the SQLite store (MongoDB has Agenda's own backend).
 * Jobs live in the `agendaJobs` collection, so they survive a restart like everything else.
 * Locking follows the MongoDB backend's semantics: a job is taken by a conditional update on
 * (`_id`, `lockedAt`), which SQLite applies atomically (one process owns the database).
 */
export class StoreJobRepository implements JobRepository {
  private jobs!: Collection<StoredJob>;
  /**
   * The same collection for the writes a crash may lose (the store's lazy collection when it has
   * one, {@link Store.lazyCollection}): a job's lock, the state Agenda saves as a run starts, and
   * a removal. Each is applied at once and commits with the next commit of other writes (the
   * actor's step that the firing makes, on a busy scheduler), so a firing costs one commit and
   * one fsync, not three. What a crash may lose is harmless: a lost lock lets the job fire at the
   * restart; a lost removal leaves either a job whose run started (no next run), removed at
   * {@link connect}, or a disarmed job that fires after the restart, which the actor ignores (its
   * deadline no longer matches); a service job's run is repeated, as when the process dies between
   * a run and its removal.
   */
  private bookkeeping!: Collection<StoredJob>;

  constructor(private readonly store: Store) {}

  async connect(): Promise<void> {
    this.jobs = await this.store.collection<StoredJob>('agendaJobs', [
      { fields: ['name', 'nextRunAt'] },
      { fields: ['data.actorId'] },
      { fields: ['nextRunAt'], adapters: ['sqlite'] },
    ]);
    this.bookkeeping = this.store.lazyCollection?.<StoredJob>('agendaJobs') ?? this.jobs;
    // A job with no next run is one whose run started (Agenda saves a one-time job's state without
    // one as it starts it) and whose removal a crash lost: every job here is removed once run, and
    // one process owns the database, so none runs now. It would never run again; it is removed.
    await this.jobs.deleteMany({ nextRunAt: null });
  }

  async queryJobs(options: JobsQueryOptions = {}): Promise<JobsResult> {
    const q: Filter = {};
    if (options.name) q.name = options.name;
    else if (options.names?.length) q.name = { $in: options.names };
    if (options.id) q._id = options.id;
    else if (options.ids?.length) q._id = { $in: options.ids };
    if (options.data !== undefined) Object.assign(q, flattenData(options.data));
    if (options.includeDisabled === false) q.disabled = { $ne: true };
    const now = new Date();
    let all = (await this.jobs.find(q, { sort: SORT })).map((d) => {
      const p = toParams(d);
      return { ...p, _id: p._id!, state: computeJobState(p, now) };
    });
    if (options.search) all = all.filter((j) => j.name.toLowerCase().includes(options.search!.toLowerCase()));
    if (options.state)
      all = all.filter((j) => (options.state === 'paused' ? j.disabled === true : j.state === options.state));
    const skip = options.skip ?? 0;
    const page = options.limit ? all.slice(skip, skip + options.limit) : all.slice(skip);
    return { jobs: page, total: all.length };
  }

  async getJobsOverview(): Promise<JobsOverview[]> {
    const { jobs } = await this.queryJobs();
    const byName = new Map<string, JobsOverview>();
    for (const j of jobs) {
      const o = byName.get(j.name) ?? {
        name: j.name,
        total: 0,
        running: 0,
        scheduled: 0,
        queued: 0,
        completed: 0,
        failed: 0,
        repeating: 0,
        paused: 0,
      };
      o.total++;
      o[j.state]++;
      if (j.disabled) o.paused++;
      byName.set(j.name, o);
    }
    return [...byName.values()];
  }

  async getDistinctJobNames(): Promise<string[]> {
    return [...new Set((await this.jobs.find({})).map((j) => j.name))];
  }

  async getJobById(id: string): Promise<JobParameters | null> {
    const doc = await this.jobs.findOne({ _id: id });
    return doc ? toParams(doc) : null;
  }

  getQueueSize(): Promise<number> {
    return this.jobs.count({ nextRunAt: { $lt: new Date() } });
  }

  /**
   * Removes the jobs `options` selects: at once for every later read and write, as a lazy write
   * ({@link bookkeeping}: it commits with the next commit of other writes), and with no write at
   * all when none matches (a timer disarmed twice, Agenda's removal of a completed job its handler
   * already removed).
   *
   * Why its commit is not waited for: a job is removed when its timer is disarmed, which the actor
   * host does only after the actor's step that dropped or moved the deadline is on disk, or once it
   * ran. If the process dies before the removal reaches the disk, a job whose run started is
   * removed when the repository connects ({@link connect}), and a disarmed one fires after the
   * restart, which the actor ignores (its deadline no longer matches). Waiting put a second WAL fsync
   * between every due time and the actor's actions (the lateness of bench:timers on disk). A job
   * armed after the removal (re-arming: remove, then insert) commits with it or after it, so its
   * acknowledgement covers the removal.
   * @returns how many jobs were removed.
   */
  async removeJobs(options: RemoveJobsOptions): Promise<number> {
    const q = selectorOf(options);
    if (!q) return 0;
    return (await this.jobs.count(q)) > 0 ? this.bookkeeping.deleteMany(q) : 0;
  }

  private async setMany(options: RemoveJobsOptions, set: Record<string, unknown>): Promise<number> {
    const q = selectorOf(options);
    if (!q) return 0;
    const targets = await this.jobs.find(q);
    for (const t of targets) await this.jobs.updateOne({ _id: t._id }, set);
    return targets.length;
  }

  disableJobs(options: RemoveJobsOptions): Promise<number> {
    return this.setMany(options, { disabled: true });
  }

  enableJobs(options: RemoveJobsOptions): Promise<number> {
    return this.setMany(options, { disabled: false });
  }

  purgeAllJobs(): Promise<number> {
    return this.jobs.deleteMany({});
  }

  async saveJob<DATA = unknown>(
    job: JobParameters<DATA>,
    options?: JobRepositoryOptions,
  ): Promise<JobParameters<DATA>> {
    const { _id, unique, uniqueOpts, ...props } = job;
    const fields: Record<string, unknown> = {
      ...props,
      lockedAt: props.lockedAt ?? null,
      lastModifiedBy: options?.lastModifiedBy ?? null,
      disabled: props.disabled ?? null,
    };
    if (_id) {
      await this.jobs.updateOne({ _id: String(_id), name: props.name }, fields);
      const saved = await this.jobs.findOne({ _id: String(_id) });
      return (saved ? toParams(saved) : job) as JobParameters<DATA>;
    }
    let selector: Filter | null = null;
    if (props.type === 'single') selector = { name: props.name, type: 'single' };
    else if (unique) selector = { ...unique, name: props.name };
    if (selector) {
      const existing = await this.jobs.findOne(selector);
      if (existing) {
        if (uniqueOpts?.insertOnly) return toParams(existing) as JobParameters<DATA>;
        await this.jobs.updateOne({ _id: existing._id }, fields);
        return toParams((await this.jobs.findOne({ _id: existing._id }))!) as JobParameters<DATA>;
      }
    }
    const doc = { _id: randomUUID(), ...fields } as unknown as StoredJob;
    await this.jobs.insertOne(doc);
    return toParams(doc) as JobParameters<DATA>;
  }

  async saveJobState(job: JobParameters, options?: JobRepositoryOptions): Promise<void> {
    // The end of a run of a job removed while it ran (its timer was re-armed, and a new job document
    // replaced it, or it was canceled) has no state left to save: nothing is written, no commit waited for.
    if (!job.lockedAt && (await this.jobs.count({ _id: String(job._id) })) === 0) return;
    // The write Agenda makes as a run starts (still locked; `lastRunAt`) is a lazy one ({@link
    // bookkeeping}): waiting for its commit (an fsync) lay between the due time and the delivery.
    // Crashing before it is on disk leaves the job as it was locked: it fires again after the
    // restart, which a timer may (the actor ignores a firing that no longer matches its deadline).
    // The end of a run (its next run time, a failure to retry) is waited for.
    await (job.lockedAt ? this.bookkeeping : this.jobs).updateOne(
      { _id: String(job._id), name: job.name },
      {
        lockedAt: job.lockedAt ?? null,
        nextRunAt: job.nextRunAt ?? null,
        lastRunAt: job.lastRunAt ?? null,
        progress: job.progress ?? null,
        failReason: job.failReason ?? null,
        failCount: job.failCount ?? null,
        failedAt: job.failedAt ?? null,
        lastFinishedAt: job.lastFinishedAt ?? null,
        lastModifiedBy: options?.lastModifiedBy ?? null,
      },
    );
  }

  /**
   * Locks job `id` by the conditional update `filter` (setting `lockedAt`), and reads it back.
   *
   * The lock is a lazy write ({@link bookkeeping}): one process owns the database (the `DATA_DIR`
   * lock), so a lock only keeps this process's own processor from taking the job twice, which needs
   * it applied, not on disk. A lock lost in a crash leaves the job unlocked: it fires at the restart
   * (a durable lock would delay it until the lock expired), and the actor ignores a firing it already
   * handled. Waiting for its commit put an fsync per locked job, one job after another, in every
   * queue fill.
   * @returns the locked job, or null when the update matched nothing (taken, or gone).
   */
  private async lock(filter: Filter, id: string, lockedAt: Date, by: string | null): Promise<StoredJob | null> {
    if (!(await this.bookkeeping.updateOne(filter, { lockedAt, lastModifiedBy: by }))) return null;
    return this.jobs.findOne({ _id: id });
  }

  async lockJob(job: JobParameters, options?: JobRepositoryOptions): Promise<JobParameters | undefined> {
    if (!job._id) return undefined;
    const doc = await this.lock(
      { _id: String(job._id), name: job.name, lockedAt: null, nextRunAt: job.nextRunAt, disabled: { $ne: true } },
      String(job._id),
      new Date(),
      options?.lastModifiedBy ?? null,
    );
    return doc ? toParams(doc) : undefined;
  }

  async unlockJob(job: JobParameters): Promise<void> {
    if (job._id) await this.jobs.updateOne({ _id: String(job._id), nextRunAt: { $ne: null } }, { lockedAt: null });
  }

  async unlockJobs(jobIds: (JobId | string)[]): Promise<void> {
    for (const id of jobIds) await this.jobs.updateOne({ _id: String(id) }, { lockedAt: null });
  }

  /**
   * The earliest `nextRunAt` of a job named `jobName` due in (`after`, `until`], or null: the
   * lookahead's next wake ({@link import('./lookahead.js').NextDueAt}). A range on the `nextRunAt`
   * index, of which only the first is copied.
   */
  async nextDueAt(jobName: string, after: Date, until: Date): Promise<Date | null> {
    const [next] = await this.jobs.find(
      { name: jobName, nextRunAt: { $gt: after, $lte: until } },
      { sort: { nextRunAt: 1 }, limit: 1 },
    );
    return next?.nextRunAt ? new Date(next.nextRunAt) : null;
  }

  async getNextJobToRun(
    jobName: string,
    nextScanAt: Date,
    lockDeadline: Date,
    now: Date | undefined,
    options?: JobRepositoryOptions,
  ): Promise<JobParameters | undefined> {
    // Agenda asks once per job it locks. The candidates are found through the `nextRunAt` index
    // (a range: only jobs due by the next scan), never by reading every armed job: at 10,000 armed
    // timers a scan per lock cost ~40 ms and the scheduler fell behind (bench:timers). Nor are they
    // all copied and sorted: with 3,000 due at once (a restart after downtime) that made each lock
    // O(due) and the catch-up quadratic (17 s of CPU). The first unlocked one is taken (no sort:
    // the order among due jobs does not matter, all due by the lookahead's horizon are locked in
    // one fill and Agenda runs its queue in `nextRunAt` order); failing that, one whose lock
    // expired (its process died mid-run; it was due when it was locked).
    const due: Filter = { name: jobName, nextRunAt: { $lte: nextScanAt }, disabled: { $ne: true } };
    // A conditional update can lose to a concurrent locker; try the next candidate then.
    for (let attempt = 0; attempt < 5; attempt++) {
      const candidate =
        (await this.jobs.find({ ...due, lockedAt: null }, { limit: 1 }))[0] ??
        (await this.jobs.find({ ...due, lockedAt: { $lte: lockDeadline } }, { limit: 1 }))[0];
      if (!candidate) return undefined;
      const stillLockable = candidate.lockedAt == null ? { lockedAt: null } : { lockedAt: candidate.lockedAt };
      // taken by another locker, or removed meanwhile (its timer was re-armed or canceled): next one
      const locked = await this.lock(
        { _id: candidate._id, name: jobName, disabled: { $ne: true }, ...stillLockable },
        candidate._id,
        now ?? new Date(),
        options?.lastModifiedBy ?? null,
      );
      if (locked) return toParams(locked);
    }
    return undefined;
  }
}

/**
 * Agenda backend over the store port (SQLite), with an in-process notification channel so that a job
 * saved as due now is picked up at once rather than at the next poll.
 */
export class StoreAgendaBackend implements AgendaBackend {
  readonly name = 'store port';
  readonly repository: StoreJobRepository;
  readonly notificationChannel: NotificationChannel = new InMemoryNotificationChannel();
  readonly ownsConnection = false;

  constructor(store: Store) {
    this.repository = new StoreJobRepository(store);
  }

  async connect(): Promise<void> {
    await this.repository.connect();
  }

  async disconnect(): Promise<void> {}
}
