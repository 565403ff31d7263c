import { createRequire } from 'node:module';
import { InMemoryNotificationChannel, type JobNotification } from 'agenda';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../../engine/logger.js';
import { StoreJobRepository } from '../../../engine/scheduler/store-backend.js';
import { LOCK_AHEAD_MS, LOCK_LIMIT, LookaheadRepository } from '../../../engine/scheduler/lookahead.js';
import { mongoNextDueAt, type DueQueryCollection } from '../../../engine/scheduler/mongo-backend.js';
import { TimerService, type TimerData } from '../../../engine/scheduler/timers.js';
import { SqliteStore } from '../../../engine/store/sqlite.js';

/**
 * Agenda locks only the jobs due within LOCK_AHEAD_MS and is woken just before
 * the next one, so its local queue stays a handful of jobs (bench:timers measures the lateness).
 */
const log = createLogger('silent');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitFor(pred: () => boolean, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await sleep(5);
  }
}

describe('LookaheadRepository', () => {
  const stops: Array<() => void> = [];
  afterEach(() => stops.splice(0).forEach((s) => s()));

  async function setup() {
    const store = await SqliteStore.open(null);
    const inner = new StoreJobRepository(store);
    await inner.connect();
    const channel = new InMemoryNotificationChannel();
    await channel.connect();
    const published: Array<{ n: JobNotification; atMs: number }> = [];
    channel.subscribe((n) => void published.push({ n, atMs: Date.now() }));
    const repo = new LookaheadRepository(inner, channel, (name, after, until) => inner.nextDueAt(name, after, until));
    stops.push(() => repo.stop());
    return { inner, repo, published };
  }

  it('locks only what is due within LOCK_AHEAD_MS and wakes the processor just before the next one', async () => {
    const { inner, repo, published } = await setup();
    // the wall clock and the repository's timers are the test's: the windows below (due in 80, 300 and
    // 700 ms) hold however slowly the machine runs the steps between them
    vi.useFakeTimers({ toFake: ['Date', 'setTimeout', 'clearTimeout'] });
    try {
      const now = Date.now();
      await inner.saveJob(
        { name: 'j', priority: 0, nextRunAt: new Date(now + 80), type: 'normal', data: { actorId: 'soon' } },
        undefined,
      );
      await inner.saveJob(
        { name: 'j', priority: 0, nextRunAt: new Date(now + 300), type: 'normal', data: { actorId: 'later' } },
        undefined,
      );
      await inner.saveJob(
        { name: 'j', priority: 0, nextRunAt: new Date(now + 700), type: 'normal', data: { actorId: 'last' } },
        undefined,
      );
      const nextScanAt = new Date(now + 1000);
      const lockDeadline = new Date(now - 60_000);
      const first = await repo.getNextJobToRun('j', nextScanAt, lockDeadline, undefined, undefined);
      expect(first?.data).toEqual({ actorId: 'soon' });
      // Agenda alone would lock `later` and `last` now as well (both are due before its next scan)
      expect(await repo.getNextJobToRun('j', nextScanAt, lockDeadline, undefined, undefined)).toBeUndefined();
      const wakes = () => published.filter((p) => String(p.n.jobId).startsWith('wake:'));
      const kicks = () => published.filter((p) => String(p.n.jobId).startsWith('kick:'));
      expect(published).toHaveLength(0);
      // `soon` was locked ahead: a kick once it is due by the wall clock (past it), so that Agenda runs it
      // even if its own timer fired early
      await vi.advanceTimersByTimeAsync(80);
      expect(kicks()).toHaveLength(0);
      await vi.advanceTimersByTimeAsync(1);
      expect(kicks().map((k) => k.atMs)).toEqual([now + 81]);
      // woken for `later`, LOCK_AHEAD_MS before it
      await vi.advanceTimersByTimeAsync(300 - LOCK_AHEAD_MS - 81 - 1);
      expect(wakes()).toHaveLength(0);
      await vi.advanceTimersByTimeAsync(1);
      expect(wakes().map((w) => [w.n.jobName, w.atMs])).toEqual([['j', now + 300 - LOCK_AHEAD_MS]]);
      const woken = await repo.getNextJobToRun('j', new Date(Date.now() + 1000), lockDeadline, undefined, undefined);
      expect(woken?.data).toEqual({ actorId: 'later' });
    } finally {
      vi.useRealTimers();
    }
  });

  it('a job moved to its retry time (saveJobState, unlocked) gets a wake of its own', async () => {
    const { inner, repo, published } = await setup();
    const job = await inner.saveJob(
      { name: 'j', priority: 0, nextRunAt: new Date(Date.now() + 3_600_000), type: 'normal', data: { actorId: 'r' } },
      undefined,
    );
    const retryAt = Date.now() + LOCK_AHEAD_MS + 100;
    await repo.saveJobState({ ...job, nextRunAt: new Date(retryAt), lockedAt: undefined }, undefined);
    await waitFor(() => published.length === 1, 15_000);
    expect(published[0]!.atMs).toBeGreaterThanOrEqual(retryAt - LOCK_AHEAD_MS - 2);
  });

  it('after stop() no wake is published', async () => {
    const { inner, repo, published } = await setup();
    await inner.saveJob(
      {
        name: 'j',
        priority: 0,
        nextRunAt: new Date(Date.now() + LOCK_AHEAD_MS + 100),
        type: 'normal',
        data: { actorId: 's' },
      },
      undefined,
    );
    expect(
      await repo.getNextJobToRun('j', new Date(Date.now() + 1000), new Date(0), undefined, undefined),
    ).toBeUndefined();
    repo.stop();
    await sleep(LOCK_AHEAD_MS + 200);
    expect(published).toHaveLength(0);
  });
});

describe('TimerService with the lookahead', () => {
  const drains: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const d of drains.splice(0)) await d();
  });

  it('a timer due in 300 ms fires on time with a one-minute poll (only the wake can deliver it), once', async () => {
    const store = await SqliteStore.open(null);
    const fired: Array<TimerData & { atDeliveryMs: number }> = [];
    const timers = new TimerService(
      store,
      async (t) => void fired.push({ ...t, atDeliveryMs: Date.now() }),
      log,
      60_000,
    );
    await timers.start();
    drains.push(() => timers.drain(1000));
    const at = Date.now() + 300;
    await timers.schedule('w1', 'expiry', at);
    // any wait below the one-minute poll shows the wake delivered it (half of it: generous on a loaded machine)
    await waitFor(() => fired.length === 1, 30_000);
    expect(fired[0]!.atDeliveryMs).toBeGreaterThanOrEqual(at);
    await sleep(300);
    expect(fired).toHaveLength(1);
  });

  it('with 100 timers due within a second, only the few due now are locked at any time; all fire once', async () => {
    const store = await SqliteStore.open(null);
    const jobs = new StoreJobRepository(store);
    await jobs.connect();
    /** Per delivery: the jobs locked more than LOCK_AHEAD_MS before they are due. */
    const lockedAhead: number[] = [];
    const fired: string[] = [];
    const timers = new TimerService(
      store,
      async (t) => {
        fired.push(t.actorId);
        const locked = (await jobs.queryJobs({})).jobs.filter((j) => j.lockedAt);
        // the time after the read: whatever was locked by then was locked at most LOCK_AHEAD_MS before its time
        const now = Date.now();
        lockedAhead.push(locked.filter((j) => new Date(j.nextRunAt!).getTime() > now + LOCK_AHEAD_MS).length);
      },
      log,
      1000,
    );
    await timers.start();
    drains.push(() => timers.drain(1000));
    const t0 = Date.now() + 1500;
    for (let i = 0; i < 100; i++) await timers.schedule(`m${i}`, 'due', t0 + i * 8);
    await waitFor(() => fired.length === 100, 30_000);
    await sleep(200);
    expect(new Set(fired).size).toBe(100);
    expect(fired).toHaveLength(100);
    // Agenda alone locks every job due before its next scan (~100 here, most of them further ahead than
    // LOCK_AHEAD_MS); with the lookahead only those due within LOCK_AHEAD_MS (3 at this spacing; more
    // while the event loop lags behind, but those are due by then: however slow the machine, none ahead)
    expect(lockedAhead).toHaveLength(100);
    expect(Math.max(...lockedAhead)).toBe(0);
  });

  it('500 timers due at start: all fire once, never more than LOCK_LIMIT locked, fills resumed', async () => {
    const store = await SqliteStore.open(null);
    const jobs = await store.collection('agendaJobs');
    const lockedAtDelivery: number[] = [];
    const fired: string[] = [];
    // a one-minute poll: the limit stops each fill, so only the resumes can deliver 500 in time
    const timers = new TimerService(
      store,
      async (t) => {
        fired.push(t.actorId);
        lockedAtDelivery.push(await jobs.count({ lockedAt: { $ne: null } }));
      },
      log,
      60_000,
    );
    const dueMs = Date.now() - 5_000;
    for (let i = 0; i < 500; i++) await timers.schedule(`o${i}`, 'due', dueMs + i);
    await timers.start();
    drains.push(() => timers.drain(1000));
    await waitFor(() => fired.length === 500, 40_000);
    await sleep(200);
    expect(fired).toHaveLength(500);
    expect(new Set(fired).size).toBe(500);
    expect(Math.max(...lockedAtDelivery)).toBeLessThanOrEqual(LOCK_LIMIT);
  });

  it('a timer canceled after Agenda locked it ahead of time is not delivered (its firing is dropped)', async () => {
    const store = await SqliteStore.open(null);
    const jobs = await store.collection('agendaJobs');
    const fired: TimerData[] = [];
    const timers = new TimerService(store, async (t) => void fired.push(t), log, 60_000);
    await timers.start();
    drains.push(() => timers.drain(1000));
    // the cancel has to land inside the LOCK_AHEAD_MS between the lock and the due time: an attempt the
    // machine was too slow for (the cancel done later than 5 ms before the due time) proves nothing, and
    // is made again with timers of its own
    for (let attempt = 1; ; attempt++) {
      const [gone, kept] = [`gone${attempt}`, `kept${attempt}`];
      const at = Date.now() + LOCK_AHEAD_MS + 300;
      await timers.schedule(gone, 'expiry', at);
      await timers.schedule(kept, 'expiry', at);
      // locked LOCK_AHEAD_MS before they are due, and in Agenda's queue from then on
      while ((await jobs.count({ lockedAt: { $ne: null } })) < 2 && Date.now() < at) await sleep(1);
      await timers.cancel(gone, 'expiry');
      const inTime = Date.now() < at - 5;
      await waitFor(() => fired.some((f) => f.actorId === kept), 15_000);
      await sleep(200);
      if (inTime) {
        expect(fired.map((f) => f.actorId).filter((id) => id === gone || id === kept)).toEqual([kept]);
        return;
      }
      expect(attempt, 'the cancel never landed between the lock and the due time').toBeLessThan(5);
    }
  });

  it('a failed delivery is retried at its backoff time with a one-minute poll (the retry gets a wake)', async () => {
    const store = await SqliteStore.open(null);
    let attempts = 0;
    const delivered: number[] = [];
    const timers = new TimerService(
      store,
      async () => {
        if (++attempts <= 2) throw new Error('injected: the actor store is down');
        delivered.push(Date.now());
      },
      log,
      60_000,
    );
    await timers.start();
    drains.push(() => timers.drain(1000));
    await timers.schedule('retry', 'expiry', Date.now());
    await waitFor(() => delivered.length === 1, 15_000);
    expect(attempts).toBe(3);
  });
});

describe('mongoNextDueAt', () => {
  it('asks for the earliest job of the name due in (after, until], sorted on nextRunAt (indexed)', async () => {
    const calls: unknown[] = [];
    const due = new Date(2_000_000);
    const c: DueQueryCollection = {
      findOne: async (filter, options) => {
        calls.push({ filter, options });
        return { _id: 1, nextRunAt: due };
      },
    };
    const after = new Date(1_000_000);
    const until = new Date(3_000_000);
    expect(await mongoNextDueAt(c, 'actor.timer', after, until)).toEqual(due);
    expect(calls).toEqual([
      {
        filter: { name: 'actor.timer', nextRunAt: { $gt: after, $lte: until } },
        options: { sort: { nextRunAt: 1 }, projection: { nextRunAt: 1 } },
      },
    ]);
    expect(await mongoNextDueAt({ findOne: async () => null }, 'actor.timer', after, until)).toBeNull();
  });
});

describe("Agenda's debug loggers", () => {
  it('the colour decision is made once at load (no isatty per processor step), as DEBUG_COLORS would', () => {
    // importing engine/scheduler/timers.ts (above) set it on the `debug` module Agenda loads
    const debug = createRequire(createRequire(import.meta.url).resolve('agenda'))('debug') as {
      inspectOpts: Record<string, unknown>;
      useColors(): boolean;
    };
    expect(typeof debug.inspectOpts.colors).toBe('boolean');
    expect(debug.useColors()).toBe(debug.inspectOpts.colors);
  });
});
