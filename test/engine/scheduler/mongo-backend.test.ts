import { MongoBackend, MongoJobRepository } from '@agendajs/mongo-backend';
import { Agenda, InMemoryNotificationChannel, type AgendaBackend, type JobNotification } from 'agenda';
import { MongoClient, MongoServerError, ObjectId, type Document } from 'mongodb';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../../engine/logger.js';
import { StoreJobRepository } from '../../../engine/scheduler/store-backend.js';
import {
  ensureJobIndexes,
  mongoTimerBackend,
  NotifyingBackend,
  timerJobIndexes,
  type IndexableCollection,
} from '../../../engine/scheduler/mongo-backend.js';
import { TIMER_JOB, timerBackend, TimerService, type TimerData } from '../../../engine/scheduler/timers.js';
import { SqliteStore } from '../../../engine/store/sqlite.js';
import { MongoStore } from '../../../engine/store/mongo.js';
import type { Collection, Doc } from '../../../engine/store/port.js';

/**
 * Timers on MongoDB without a server: what the MongoDB timer backend is made of, that Agenda
 * publishes to its channel and so runs a due job before the next poll, the index creation against
 * a fake collection, and `schedule` under a unique index on a store that enforces one.
 */
const log = createLogger('silent');
const waitFor = async (pred: () => boolean, timeoutMs: number): Promise<boolean> => {
  const end = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, 10));
  }
  return true;
};

/** A backend shaped like Agenda's MongoBackend (a repository, no notification channel) over the SQLite store. */
async function pollingOnlyBackend(): Promise<AgendaBackend> {
  const repository = new StoreJobRepository(await SqliteStore.open(null));
  return {
    name: 'polling only',
    repository,
    notificationChannel: undefined,
    connect: () => repository.connect(),
    disconnect: async () => undefined,
  };
}

describe('timers on MongoDB: the backend', () => {
  // never connected: building a client and a Db does not touch the network
  const client = new MongoClient('mongodb://127.0.0.1:9/pts', { serverSelectionTimeoutMS: 200 });
  afterAll(() => client.close());

  it("the backend for a MongoStore is Agenda's MongoBackend on agendaJobs plus an in-process channel", () => {
    // a MongoStore as MongoStore.open makes it, minus the connection
    const store = Object.create(MongoStore.prototype, { db: { value: client.db('pts') } }) as MongoStore;
    const backend = timerBackend(store, log);
    expect(backend).toBeInstanceOf(NotifyingBackend);
    const b = backend as NotifyingBackend;
    expect(b.notificationChannel).toBeInstanceOf(InMemoryNotificationChannel);
    expect(b.inner).toBeInstanceOf(MongoBackend);
    expect(b.inner.notificationChannel).toBeUndefined(); // what the wrapper is for
    expect(b.repository).toBeInstanceOf(MongoJobRepository);
    expect(b.repository).toBe(b.inner.repository);
    expect(b.ownsConnection).toBe(false); // the store's client is closed by the store
    expect(mongoTimerBackend(client.db('pts'), TIMER_JOB).notificationChannel).toBeInstanceOf(
      InMemoryNotificationChannel,
    );
  });

  it('Agenda publishes a saved job and runs a due-now job at once; without the channel it waits a poll', async () => {
    for (const notify of [true, false]) {
      const inner = await pollingOnlyBackend();
      const backend = notify ? new NotifyingBackend(inner) : inner;
      const published: JobNotification[] = [];
      if (notify) {
        const channel = backend.notificationChannel!;
        const publish = channel.publish.bind(channel);
        vi.spyOn(channel, 'publish').mockImplementation(async (n) => {
          published.push(n);
          await publish(n);
        });
      }
      const agenda = new Agenda({ backend, processEvery: 60_000, removeOnComplete: true });
      const ran: number[] = [];
      agenda.define('due', async () => void ran.push(Date.now()));
      await agenda.start();
      await new Promise((r) => setTimeout(r, 100)); // the scan at start is over: the next one is a minute away
      await agenda.create('due', {}).schedule(new Date()).save();
      // with the channel, any wait below the one-minute poll shows the notification ran it (half of it:
      // generous on a loaded machine); without, a second shows nothing runs before the poll
      const delivered = await waitFor(() => ran.length > 0, notify ? 30_000 : 1_000);
      await agenda.stop();
      if (notify) {
        expect(published).toHaveLength(1);
        expect(published[0]).toMatchObject({ jobName: 'due' });
        expect(delivered).toBe(true);
      } else {
        expect(delivered).toBe(false); // the next poll is a minute away
      }
    }
  });

  it('ready() rejects with why the backend could not connect or prepare; connect() never rejects', async () => {
    const inner = await pollingOnlyBackend();
    const failing = new NotifyingBackend(inner, async () => {
      throw new Error('index build failed');
    });
    await expect(failing.ready()).rejects.toThrow(/not connected/);
    await expect(failing.connect()).resolves.toBeUndefined();
    await expect(failing.ready()).rejects.toThrow('index build failed');
    const ok = new NotifyingBackend(inner);
    await ok.connect();
    await expect(ok.ready()).resolves.toBeUndefined();
  });
});

/** A driver collection's index calls, faked: `createIndex` fails once with E11000 when `duplicates` are present. */
function fakeJobs(docs: Document[]) {
  const calls: string[] = [];
  let dirty = true;
  const c: IndexableCollection = {
    async createIndex(key, options) {
      calls.push(`createIndex ${JSON.stringify(key)} ${JSON.stringify(options)}`);
      const seen = new Set<string>();
      const dup = docs.some((d) => {
        const k = `${d.name}|${d.data?.actorId}|${d.data?.timerName}`;
        if (seen.has(k)) return true;
        seen.add(k);
        return false;
      });
      if (options.unique && dup && dirty)
        throw new MongoServerError({
          message: 'E11000 duplicate key error collection: pts.agendaJobs index: actorTimer',
          code: 11000,
        });
      return options.name!;
    },
    aggregate(pipeline) {
      calls.push(`aggregate ${JSON.stringify(pipeline)}`);
      const groups = new Map<string, { ids: ObjectId[]; keep: ObjectId }>();
      for (const d of docs.filter((x) => x.name === TIMER_JOB)) {
        const k = `${d.data.actorId}|${d.data.timerName}`;
        const g = groups.get(k) ?? { ids: [] as ObjectId[], keep: d._id as ObjectId };
        g.ids.push(d._id);
        if (String(d._id) > String(g.keep)) g.keep = d._id;
        groups.set(k, g);
      }
      return {
        toArray: async () =>
          [...groups.values()].filter((g) => g.ids.length > 1).map((g) => ({ ...g, n: g.ids.length })),
      };
    },
    async deleteMany(filter) {
      calls.push(`deleteMany ${filter._id.$in.length}`);
      const gone = new Set((filter._id.$in as ObjectId[]).map(String));
      const before = docs.length;
      docs.splice(0, docs.length, ...docs.filter((d) => !gone.has(String(d._id))));
      dirty = false;
      return { deletedCount: before - docs.length };
    },
  };
  return { c, calls, docs };
}

describe('timers on MongoDB: the agendaJobs indexes', () => {
  it('creates the unique (name, data.actorId, data.timerName) index, partial on the timer job name', async () => {
    const { c, calls } = fakeJobs([]);
    expect(await ensureJobIndexes(c, timerJobIndexes(TIMER_JOB))).toBe(0);
    expect(calls).toEqual([
      `createIndex {"name":1,"data.actorId":1,"data.timerName":1} ` +
        `{"name":"actorTimer","unique":true,"partialFilterExpression":{"name":"${TIMER_JOB}"}}`,
    ]);
  });

  it('jobs that break the index: keeps the newest per (actor, timer), removes the others, builds it', async () => {
    const id = (n: number) => new ObjectId(n.toString(16).padStart(24, '0'));
    const job = (n: number, actorId: string, timerName: string, name = TIMER_JOB) => ({
      _id: id(n),
      name,
      data: { actorId, timerName, atMs: n },
    });
    const { c, calls, docs } = fakeJobs([
      job(1, 'a', 'x'),
      job(3, 'a', 'x'),
      job(2, 'a', 'x'),
      job(4, 'a', 'y'),
      job(5, 'b', 'x'),
      job(6, 'b', 'x'),
      job(7, 'z', 'z', 'other'),
    ]);
    expect(await ensureJobIndexes(c, timerJobIndexes(TIMER_JOB), log)).toBe(3);
    expect(docs.map((d) => d.data.atMs).sort()).toEqual([3, 4, 6, 7]);
    expect(calls.filter((x) => x.startsWith('createIndex'))).toHaveLength(2);
    expect(calls.find((x) => x.startsWith('aggregate'))).toContain(`{"$match":{"name":"${TIMER_JOB}"}}`);
  });

  it('any other index failure is not swallowed', async () => {
    const c: IndexableCollection = {
      createIndex: async () => {
        throw new MongoServerError({ message: 'not authorized', code: 13 });
      },
      aggregate: () => ({ toArray: async () => [] }),
      deleteMany: async () => ({ deletedCount: 0 }),
    };
    await expect(ensureJobIndexes(c, timerJobIndexes(TIMER_JOB))).rejects.toThrow('not authorized');
  });
});

describe('TimerService.schedule under a unique (actor, timer) index', () => {
  const fields = ['name', 'data.actorId', 'data.timerName'];
  async function jobsOf(store: SqliteStore): Promise<Collection<Doc & { data: TimerData }>> {
    return store.collection('agendaJobs');
  }

  it('concurrent schedules of one timer succeed, one job left under a unique index (duplicate retried)', async () => {
    const store = await SqliteStore.open(null);
    // the SQLite store enforces unique compound indexes: it stands in for MongoDB's actorTimer here
    await store.collection('agendaJobs', [{ fields, unique: true }]);
    const timers = new TimerService(store, async () => undefined, log, 60_000);
    const at = Date.now() + 3_600_000;
    await Promise.all([1, 2, 3, 4, 5].map((i) => timers.schedule('a1', 'expiry', at + i)));
    const jobs = await (await jobsOf(store)).find({ name: TIMER_JOB });
    expect(jobs).toHaveLength(1);
    expect(jobs[0]!.data).toMatchObject({ actorId: 'a1', timerName: 'expiry' });
  });

  it('without the index the same race leaves several jobs for one timer (what the unique index prevents)', async () => {
    const store = await SqliteStore.open(null);
    const timers = new TimerService(store, async () => undefined, log, 60_000);
    const at = Date.now() + 3_600_000;
    await Promise.all([1, 2, 3].map((i) => timers.schedule('a1', 'expiry', at + i)));
    expect((await (await jobsOf(store)).find({ name: TIMER_JOB })).length).toBeGreaterThan(1);
  });
});
