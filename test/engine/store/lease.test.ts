import { spawnSync } from 'node:child_process';
import os from 'node:os';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../../engine/config.js';
import { createLogger } from '../../../engine/logger.js';
import { openStore } from '../../../engine/store/index.js';
import { MongoStore } from '../../../engine/store/mongo.js';
import { SqliteStore } from '../../../engine/store/sqlite.js';
import {
  ENGINE_LEASE_ID,
  EngineLeaseHeldError,
  EngineLeaseLostError,
  LEASE_COLLECTION,
  takeEngineLease,
  type LeaseDoc,
} from '../../../engine/store/lease.js';
import {
  collectionWhenOpen,
  type Collection,
  type Doc,
  type IndexSpec,
  type Store,
  type UnitOfWork,
} from '../../../engine/store/port.js';
import { poll } from '../../api/trading-kit.js';

/** One engine process per database, through the store port (here the SQLite adapter). */
describe('engine lease', () => {
  const stores: Store[] = [];
  const open = async () => {
    const s = await SqliteStore.open(null);
    stores.push(s);
    return s;
  };
  afterEach(async () => {
    for (const s of stores.splice(0)) await s.close();
  });
  const doc = async (store: Store) =>
    (await store.collection<LeaseDoc>(LEASE_COLLECTION)).findOne({ _id: ENGINE_LEASE_ID });

  it('takes the lease {_id: engine, owner, expiresAtMs}; a second taker refused, naming the holder', async () => {
    const store = await open();
    let t = 1_000_000;
    const now = () => t;
    const a = await takeEngineLease(store, { now, ttlMs: 15_000 });
    expect(await doc(store)).toEqual({
      _id: 'engine',
      owner: { pid: process.pid, host: os.hostname(), startedAtMs: 1_000_000, instanceId: a.owner.instanceId },
      expiresAtMs: 1_015_000,
    });

    t += 14_999;
    const second = takeEngineLease(store, { now });
    await expect(second).rejects.toBeInstanceOf(EngineLeaseHeldError);
    await expect(second).rejects.toThrow(
      `${store.location} is in use by another engine process (pid ${process.pid} on ${os.hostname()}, ` +
        `instance ${a.owner.instanceId}`,
    );

    await a.release();
    expect(await doc(store)).toBeNull();
    const b = await takeEngineLease(store, { now });
    expect((await doc(store))?.owner.instanceId).toBe(b.owner.instanceId);
    await b.release();
  });

  it('of several processes racing for a free lease exactly one gets it', async () => {
    const store = await open();
    const results = await Promise.allSettled(Array.from({ length: 8 }, () => takeEngineLease(store)));
    const won = results.filter((r) => r.status === 'fulfilled');
    expect(won).toHaveLength(1);
    for (const r of results) if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(EngineLeaseHeldError);
    await (won[0] as PromiseFulfilledResult<Awaited<ReturnType<typeof takeEngineLease>>>).value.release();
  });

  it('renewal pushes the expiry forward; an expired lease is taken over, and the old holder loses it', async () => {
    const store = await open();
    let t = 0;
    const now = () => t;
    const lostA: Error[] = [];
    const a = await takeEngineLease(store, { now, ttlMs: 15_000, renewMs: 60_000, onLost: (e) => lostA.push(e) });
    t = 5_000;
    await a.renew();
    expect((await doc(store))?.expiresAtMs).toBe(20_000);
    expect(a.expiresAtMs).toBe(20_000);

    t = 20_001; // a stopped renewing (stalled or killed)
    const b = await takeEngineLease(store, { now, renewMs: 60_000 });
    expect((await doc(store))?.owner.instanceId).toBe(b.owner.instanceId);

    await expect(a.renew()).rejects.toBeInstanceOf(EngineLeaseLostError);
    expect(lostA).toHaveLength(1);
    expect(lostA[0]!.message).toMatch(
      new RegExp(`was taken by another process \\(pid ${process.pid} on .*instance ${b.owner.instanceId}\\).*stopping`),
    );
    await a.release(); // lost: leaves b's lease alone
    expect((await doc(store))?.owner.instanceId).toBe(b.owner.instanceId);
    await b.release();
  });

  it('renews on its own timer every renewMs', async () => {
    const store = await open();
    const a = await takeEngineLease(store, { ttlMs: 2_000, renewMs: 50 });
    const first = a.expiresAtMs;
    // renewed, and stored as the lease holds it (read between two renewals: they come every 50 ms)
    await poll(
      'a renewal stored',
      async () => ({ stored: (await doc(store))?.expiresAtMs, held: a.expiresAtMs }),
      ({ stored, held }) => held > first && stored === held,
    );
    await a.release();
  });

  it('a failed renewal is retried while the lease is valid, lost (fatal) once it would expire first', async () => {
    const inner = await open();
    let failing = false;
    const leases = await inner.collection<LeaseDoc>(LEASE_COLLECTION);
    const store: Store = Object.assign(Object.create(inner) as Store, {
      collection: async () => ({
        ...leases,
        findOne: leases.findOne.bind(leases),
        deleteMany: leases.deleteMany.bind(leases),
        updateOne: (...args: Parameters<typeof leases.updateOne>) =>
          failing ? Promise.reject(new Error('connection reset')) : leases.updateOne(...args),
      }),
    });
    let t = 0;
    const lost: Error[] = [];
    const a = await takeEngineLease(store, {
      now: () => t,
      ttlMs: 15_000,
      renewMs: 5_000,
      onLost: (e) => lost.push(e),
    });
    failing = true;
    t = 5_000;
    await a.renew(); // 5 s + 5 s < 15 s: kept, retried next tick
    expect(lost).toHaveLength(0);
    t = 10_000;
    await expect(a.renew()).rejects.toBeInstanceOf(EngineLeaseLostError);
    expect(lost[0]!.message).toMatch(
      /could not renew the engine lease of .* before it expired \(connection reset\).*stopping/,
    );
  });

  it('takes over the lease of a dead process of this host (kill -9) at once; a live remote one refused', async () => {
    const store = await open();
    const leases = await store.collection<LeaseDoc>(LEASE_COLLECTION);
    const deadPid = Number(
      spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout,
    );
    const future = Date.now() + 60_000;
    await leases.insertOne({
      _id: 'engine',
      owner: { pid: deadPid, host: os.hostname(), startedAtMs: 1, instanceId: 'dead' },
      expiresAtMs: future,
    });
    const a = await takeEngineLease(store);
    expect((await doc(store))?.owner).toMatchObject({ pid: process.pid, instanceId: a.owner.instanceId });
    await a.release();

    await leases.insertOne({
      _id: 'engine',
      owner: { pid: deadPid, host: 'other-host', startedAtMs: 1, instanceId: 'remote' },
      expiresAtMs: future,
    });
    await expect(takeEngineLease(store)).rejects.toThrow(
      `(pid ${deadPid} on other-host, instance remote, since 1970-01-01T00:00:00.001Z)`,
    );
  });

  it('openStore on MongoDB: write settings, the lease, a second engine refused (client closed), released', async () => {
    // MongoStore.open stands in for the driver (no server here):
    // each "client" is a view of one in-memory SQLite database.
    const db = await open();
    class FakeMongo implements Store {
      readonly adapter = 'mongodb' as const;
      readonly location = 'mongodb database db';
      closed = false;
      private readonly hooks: Array<() => Promise<void>> = [];
      collection<T extends Doc>(name: string, indexes?: IndexSpec[]): Promise<Collection<T>> {
        return db.collection<T>(name, indexes);
      }
      ping = async () => true;
      transaction = <R>(fn: (tx: UnitOfWork) => Promise<R>) =>
        fn({ collection: (name) => collectionWhenOpen(db.collection(name)) });
      writeFailure = () => null;
      onClose(fn: () => Promise<void>) {
        this.hooks.push(fn);
      }
      async close() {
        for (const fn of this.hooks.splice(0)) await fn();
        this.closed = true;
      }
    }
    const clients: FakeMongo[] = [];
    const spy = vi.spyOn(MongoStore, 'open').mockImplementation(async () => {
      const c = new FakeMongo();
      clients.push(c);
      return c as unknown as MongoStore;
    });
    try {
      const config = loadConfig({
        MONGODB_URI: 'mongodb://h1:27017,h2:27017/db?replicaSet=rs0',
        MONGODB_WRITE_CONCERN: '2',
        MONGODB_JOURNAL: 'off',
      });
      const first = await openStore(config, createLogger('silent'));
      expect(spy).toHaveBeenCalledWith('mongodb://h1:27017,h2:27017/db?replicaSet=rs0', 'partner_trading', {
        w: 2,
        journal: false,
        allowStandalone: false,
      });
      expect((await doc(db))?.owner.pid).toBe(process.pid);

      const second = openStore(config, createLogger('silent'));
      await expect(second).rejects.toBeInstanceOf(EngineLeaseHeldError);
      await expect(second).rejects.toThrow(/^mongodb database db is in use by another engine process \(pid \d+ on /);
      expect(clients[1]!.closed).toBe(true);

      await first.close();
      expect(await doc(db)).toBeNull();
      const third = await openStore(config, createLogger('silent'));
      expect((await doc(db))?.owner.pid).toBe(process.pid);
      await third.close();
    } finally {
      spy.mockRestore();
    }
  });
});
