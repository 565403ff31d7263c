import { MongoBackend } from '@agendajs/mongo-backend';
import {
  InMemoryNotificationChannel,
  type AgendaBackend,
  type JobLogger,
  type JobRepository,
  type NotificationChannel,
} from 'agenda';
import type { CreateIndexesOptions, Db, Document, ObjectId } from 'mongodb';
import type { Logger } from '../logger.js';
import type { NextDueAt } from './lookahead.js';

/** The collection of Agenda's jobs on MongoDB (the same name the store-port backend uses). */
export const AGENDA_JOBS = 'agendaJobs';

/** An index on {@link AGENDA_JOBS} that the service creates at start-up, besides Agenda's own. */
export interface JobIndex {
  /** Field → direction, in key order. */
  key: Record<string, 1 | -1>;
  /** Driver options; `name` fixed so that a restart finds the index it made before. */
  options: CreateIndexesOptions & { name: string };
}

/**
 * The indexes the service adds on {@link AGENDA_JOBS} for timer jobs named `jobName`. Agenda's
 * MongoDB backend makes only `findAndLockNextJobIndex` (`name`, `nextRunAt`,
 * `priority`, `lockedAt`, `disabled`: the poll's query); a timer's cancel (`name` + `data.actorId` +
 * `data.timerName`) and an actor's cancel-all (`name` + `data.actorId`) would scan every job.
 *
 * `actorTimer` is **unique**: at most one armed job per (actor, timer name). `schedule` is cancel +
 * insert, so a second document for a key exists only when two `schedule` calls for it interleave;
 * the index turns that race into a duplicate-key error, which `TimerService.schedule` answers by
 * cancelling and inserting again (the later call wins). No legitimate insert collides: a failed
 * delivery is retried by the process without a document (`TimerService`), Agenda's saves of a job it
 * runs update it by `_id`, and a job re-armed while it runs is removed before its successor is inserted. It is
 * partial on `name` so that a job of another name (none today) is not constrained by it; queries
 * name `name`, so they can use it.
 */
export function timerJobIndexes(jobName: string): JobIndex[] {
  return [
    {
      key: { name: 1, 'data.actorId': 1, 'data.timerName': 1 },
      options: { name: 'actorTimer', unique: true, partialFilterExpression: { name: jobName } },
    },
  ];
}

/** The part of a driver collection {@link ensureJobIndexes} uses (a fake in unit tests). */
export interface IndexableCollection {
  createIndex(key: Record<string, 1 | -1>, options: CreateIndexesOptions): Promise<string>;
  aggregate(pipeline: Document[]): { toArray(): Promise<Document[]> };
  deleteMany(filter: Document): Promise<{ deletedCount: number }>;
}

function isDuplicateKey(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === 11000;
}

/**
 * Creates `indexes` on `c` (a no-op for one that exists). A unique index that cannot be built
 * because documents already break it (written before it existed) is built after removing, per
 * key, every document but the newest (largest `_id`): harmless for timers, since start-up re-arms
 * every live actor's deadlines from its snapshot and a firing that no longer matches is dropped.
 * @returns how many documents were removed that way.
 */
export async function ensureJobIndexes(c: IndexableCollection, indexes: JobIndex[], log?: Logger): Promise<number> {
  let removed = 0;
  for (const ix of indexes) {
    try {
      await c.createIndex(ix.key, ix.options);
    } catch (err) {
      if (!ix.options.unique || !isDuplicateKey(err)) throw err;
      const fields = Object.keys(ix.key);
      const groups = await c
        .aggregate([
          { $match: ix.options.partialFilterExpression ?? {} },
          {
            $group: {
              _id: Object.fromEntries(fields.map((f, i) => [`k${i}`, `$${f}`])),
              ids: { $push: '$_id' },
              keep: { $max: '$_id' },
              n: { $sum: 1 },
            },
          },
          { $match: { n: { $gt: 1 } } },
        ])
        .toArray();
      for (const g of groups) {
        const extra = (g.ids as ObjectId[]).filter((id) => String(id) !== String(g.keep));
        removed += (await c.deleteMany({ _id: { $in: extra } })).deletedCount;
      }
      log?.warn(
        { index: ix.options.name, removed },
        `${AGENDA_JOBS}: removed ${removed} duplicate job(s) to build the unique index ${ix.options.name}`,
      );
      await c.createIndex(ix.key, ix.options);
    }
  }
  return removed;
}

/**
 * An Agenda backend that adds an in-process notification channel to another one. Agenda's MongoDB
 * backend has none, so a job saved as due now would wait for the next poll (`SCHEDULER_POLL_MS`);
 * with this channel, a job this process saves is published at once and picked up by this process's
 * job processor (Agenda publishes on every `Job.save()` when the backend has a channel). Jobs saved
 * by another process still wait for a poll, which is moot while one engine process owns a database.
 *
 * Storage, connection and job logging are the wrapped backend's; `prepare` runs after it connects
 * (creating indexes). Agenda calls {@link connect} from its constructor without handling a
 * rejection, so a failure is kept for {@link ready} instead of being thrown there.
 */
export class NotifyingBackend implements AgendaBackend {
  readonly name: string;
  readonly notificationChannel: NotificationChannel = new InMemoryNotificationChannel();
  private connecting: Promise<void> | null = null;

  /**
   * @param inner - the backend that stores jobs (Agenda's `MongoBackend` in production).
   * @param prepare - runs once `inner` connected (index creation); its failure fails {@link ready}.
   * @param nextDueAt - when the next job is due, for the scheduler's lookahead (`./lookahead.ts`);
   *   without it the scheduler locks as Agenda does, everything due before the next poll.
   */
  constructor(
    readonly inner: AgendaBackend,
    private readonly prepare: () => Promise<unknown> = async () => undefined,
    readonly nextDueAt?: NextDueAt,
  ) {
    this.name = `${inner.name} + in-process notifications`;
  }

  get repository(): JobRepository {
    return this.inner.repository;
  }

  get logger(): JobLogger | undefined {
    return this.inner.logger;
  }

  get ownsConnection(): boolean {
    return this.inner.ownsConnection ?? false;
  }

  /** Connects the wrapped backend, then runs `prepare`; never rejects (see {@link ready}). */
  connect(): Promise<void> {
    this.connecting ??= (async () => {
      await this.inner.connect();
      await this.prepare();
    })();
    return this.connecting.catch(() => undefined);
  }

  /** Resolves once {@link connect} succeeded; rejects with the reason it failed. */
  ready(): Promise<void> {
    return this.connecting ?? Promise.reject(new Error('the scheduler backend was not connected'));
  }

  async disconnect(): Promise<void> {
    await this.inner.disconnect();
  }
}

/**
 * The timer backend on MongoDB: Agenda's `MongoBackend` over `db` (collection {@link AGENDA_JOBS},
 * its own `findAndLockNextJobIndex` included), with an in-process notification channel, and the
 * {@link timerJobIndexes} of `jobName` created when it connects.
 */
export function mongoTimerBackend(db: Db, jobName: string, log?: Logger): NotifyingBackend {
  const mongo = new MongoBackend({ mongo: db, collection: AGENDA_JOBS });
  return new NotifyingBackend(
    mongo,
    () => ensureJobIndexes(db.collection(AGENDA_JOBS) as unknown as IndexableCollection, timerJobIndexes(jobName), log),
    (name, after, until) => mongoNextDueAt(db.collection(AGENDA_JOBS), name, after, until),
  );
}

/** The part of a driver collection {@link mongoNextDueAt} uses. */
export interface DueQueryCollection {
  findOne(
    filter: Document,
    options: { sort: Record<string, 1 | -1>; projection: Record<string, 1> },
  ): Promise<Document | null>;
}

/**
 * The earliest `nextRunAt` of a job named `name` due in (`after`, `until`], or null
 * ({@link NextDueAt} on MongoDB): one query on Agenda's `findAndLockNextJobIndex` (`name` equal,
 * then `nextRunAt` as range and sort).
 */
export async function mongoNextDueAt(
  c: DueQueryCollection,
  name: string,
  after: Date,
  until: Date,
): Promise<Date | null> {
  const next = await c.findOne(
    { name, nextRunAt: { $gt: after, $lte: until } },
    { sort: { nextRunAt: 1 }, projection: { nextRunAt: 1 } },
  );
  return next?.nextRunAt instanceof Date ? next.nextRunAt : null;
}
