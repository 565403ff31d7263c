import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../../engine/logger.js';
import { StoreJobRepository } from '../../../engine/scheduler/store-backend.js';
import { TimerService, TIMER_JOB, type TimerData } from '../../../engine/scheduler/timers.js';
import { SqliteStore } from '../../../engine/store/sqlite.js';
import type { Store } from '../../../engine/store/port.js';
import { runUntil } from '../../process.js';

const log = createLogger('silent');

/** Polls `pred` until it holds; the deadline only bounds a failing test (generous: other files load the machine). */
function waitFor(pred: () => boolean, timeoutMs = 15_000): Promise<void> {
  return new Promise((resolve, reject) => {
    const start = Date.now();
    const tick = () => {
      if (pred()) return resolve();
      if (Date.now() - start > timeoutMs) return reject(new Error('condition not met in time'));
      setTimeout(tick, 10);
    };
    tick();
  });
}

describe('TimerService on the SQLite store', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0)) await c();
  });

  async function start(store: Store, pollMs = 200) {
    const fired: TimerData[] = [];
    const timers = new TimerService(store, async (t) => void fired.push(t), log, pollMs);
    await timers.start();
    cleanups.push(() => timers.drain(1000));
    return { timers, fired };
  }

  it('delivers a due-now timer through the notification channel, not the next poll', async () => {
    const store = await SqliteStore.open(null);
    // A one-minute poll: only the notification channel can deliver within the wait below (half of it:
    // generous on a loaded machine, and still before the poll).
    const { timers, fired } = await start(store, 60_000);
    await timers.schedule('a1', 'expiry', Date.now());
    await waitFor(() => fired.length === 1, 30_000);
    expect(fired[0]).toMatchObject({ actorId: 'a1', timerName: 'expiry' });
  });

  it('fires a future timer once, at or after its time', async () => {
    const store = await SqliteStore.open(null);
    const { timers, fired } = await start(store);
    const at = Date.now() + 300;
    await timers.schedule('a2', 'slice', at);
    await waitFor(() => fired.length === 1);
    expect(Date.now()).toBeGreaterThanOrEqual(at);
    await new Promise((r) => setTimeout(r, 400));
    expect(fired).toHaveLength(1);
  });

  it('moves a timer when scheduled again and forgets it when cancelled', async () => {
    const store = await SqliteStore.open(null);
    const { timers, fired } = await start(store);
    await timers.schedule('a3', 'x', Date.now() + 60_000);
    await timers.schedule('a3', 'x', Date.now() + 100);
    // far enough ahead that the cancel comes first on a loaded machine; then waited past its time
    const yAt = Date.now() + 1500;
    await timers.schedule('a3', 'y', yAt);
    await timers.cancel('a3', 'y');
    await waitFor(() => fired.length >= 1);
    await waitFor(() => Date.now() > yAt + 400);
    expect(fired.map((f) => f.timerName)).toEqual(['x']);
    const repo = new StoreJobRepository(store);
    await repo.connect();
    expect((await repo.queryJobs({ name: TIMER_JOB })).total).toBe(0);
  });

  it("a job that re-arms its own timer while it runs fires again (a TWAP's next slice)", async () => {
    const store = await SqliteStore.open(null);
    const fired: TimerData[] = [];
    const timersRef: { t?: TimerService } = {};
    // the sink re-arms the same (actor, timer) while its job is still running, as the actor host
    // does when a slice timer's event arms the next slice
    const timers = new TimerService(
      store,
      async (t) => {
        fired.push(t);
        if (fired.length < 3) await timersRef.t!.schedule(t.actorId, t.timerName, Date.now() + 50);
        await new Promise((r) => setTimeout(r, 20)); // still running after the re-arm
      },
      log,
      200,
    );
    timersRef.t = timers;
    await timers.start();
    cleanups.push(() => timers.drain(1000));
    await timers.schedule('rearm', 'slice', Date.now() + 50);
    await waitFor(() => fired.length === 3);
    await new Promise((r) => setTimeout(r, 400));
    expect(fired.map((f) => f.timerName)).toEqual(['slice', 'slice', 'slice']);
    expect(new Set(fired.map((f) => f.atMs)).size).toBe(3);
    const repo = new StoreJobRepository(store);
    await repo.connect();
    expect((await repo.queryJobs({ name: TIMER_JOB })).total).toBe(0);
  });

  it('a delivery that fails is retried with backoff, not dropped; `failing` shows it meanwhile', async () => {
    const store = await SqliteStore.open(null);
    let attempts = 0;
    const delivered: TimerData[] = [];
    const timers = new TimerService(
      store,
      async (t) => {
        if (++attempts <= 2) throw new Error('injected: the actor store is down');
        delivered.push(t);
      },
      log,
      100,
    );
    await timers.start();
    cleanups.push(() => timers.drain(1000));
    await timers.schedule('retry', 'expiry', Date.now());
    await waitFor(() => attempts >= 1);
    await waitFor(() => timers.failing === 1);
    await waitFor(() => delivered.length === 1);
    expect(attempts).toBe(3);
    expect(timers.failing).toBe(0);
  });

  it('re-arming a timer whose delivery keeps failing replaces its redelivery: the new deadline fires', async () => {
    const store = await SqliteStore.open(null);
    const first = Date.now();
    const attemptsAt = new Map<number, number>();
    const delivered: number[] = [];
    const timers = new TimerService(
      store,
      async (t) => {
        attemptsAt.set(t.atMs, (attemptsAt.get(t.atMs) ?? 0) + 1);
        if (t.atMs === first) throw new Error('injected: this deadline never goes through');
        delivered.push(t.atMs);
      },
      log,
      100,
    );
    await timers.start();
    cleanups.push(() => timers.drain(1000));
    await timers.schedule('rearm', 'expiry', first);
    await waitFor(() => timers.failing === 1);
    const second = Date.now() + 50;
    await timers.schedule('rearm', 'expiry', second); // the actor moved its deadline
    expect(timers.failing).toBe(0);
    await waitFor(() => delivered.length === 1);
    expect(delivered).toEqual([second]);
    const triedFirst = attemptsAt.get(first);
    await new Promise((r) => setTimeout(r, 500)); // past the next backoffs: the old deadline is not tried again
    expect(attemptsAt.get(first)).toBe(triedFirst);
    expect(timers.failing).toBe(0);
  });

  it('a service job runs at its time, re-arms itself, and a failed run is retried (`failing` meanwhile)', async () => {
    const store = await SqliteStore.open(null);
    const timers = new TimerService(store, async () => undefined, log, 200);
    const runs: number[] = [];
    timers.defineJob('service.job', async (dueAtMs) => {
      runs.push(dueAtMs);
      if (runs.length === 2) throw new Error('store down');
      if (runs.length < 4) await timers.scheduleJob('service.job', Date.now() + 50);
    });
    await timers.start();
    cleanups.push(() => timers.drain(1000));
    const first = Date.now();
    await timers.scheduleJob('service.job', first);
    await waitFor(() => timers.failing === 1);
    await waitFor(() => runs.length === 4);
    expect(runs[0]).toBe(first);
    expect(runs[2]).toBe(runs[1]); // the failed run again, not a new one
    expect(runs[3]).toBeGreaterThan(runs[2]!);
    expect(timers.failing).toBe(0);
    await new Promise((r) => setTimeout(r, 300));
    expect(runs).toHaveLength(4);
  });

  it('keeps timers across a restart of the process (disk store)', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-timers-'));
    cleanups.push(() => fs.rm(dir, { recursive: true, force: true }));
    const store1 = await SqliteStore.open(dir);
    const t1 = new TimerService(store1, async () => {}, log, 60_000);
    await t1.schedule('a4', 'expiry', Date.now() + 200);
    await store1.close();

    const store2 = await SqliteStore.open(dir);
    const { fired } = await start(store2);
    await waitFor(() => fired.length === 1);
    expect(fired[0]).toMatchObject({ actorId: 'a4', timerName: 'expiry' });
  });

  it('a firing on disk: the disarm after the step waits for no commit, the end of the run writes nothing', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-timers-'));
    cleanups.push(() => fs.rm(dir, { recursive: true, force: true }));
    const store = await SqliteStore.open(dir);
    const steps = await store.collection<{ _id: string; atMs: number }>('steps');
    let afterStep = 0;
    let disarmCommits = -1;
    const timers: TimerService = new TimerService(
      store,
      async (t) => {
        await steps.insertOne({ _id: t.actorId, atMs: t.atMs }); // the actor's step, on disk
        afterStep = store.writer.commits;
        await timers.cancel(t.actorId, t.timerName); // the actor host then disarms the deadline
        disarmCommits = store.writer.commits - afterStep;
      },
      log,
      60_000,
    );
    await timers.start();
    await timers.schedule('d1', 'expiry', Date.now() + 150);
    await waitFor(() => disarmCommits >= 0);
    expect(disarmCommits).toBe(0);
    // the removal commits after the run (background work: waited for, then nothing more)
    await waitFor(() => store.writer.commits > afterStep);
    await new Promise((r) => setTimeout(r, 300));
    // the removal's commit only: Agenda's end-of-run state and its removal of the completed job
    // find the job gone and write nothing
    expect(store.writer.commits - afterStep).toBe(1);
    await timers.drain(1000);
    await store.close();

    const again = await SqliteStore.open(dir);
    const repo = new StoreJobRepository(again);
    await repo.connect();
    expect((await repo.queryJobs({ name: TIMER_JOB })).total).toBe(0);
    expect(await (await again.collection('steps')).findOne({ _id: 'd1' })).toMatchObject({ _id: 'd1' });
    await again.close();
  });

  it('repository: a lock is applied at once, not waiting for its commit; behind a transaction it waits', async () => {
    const store = await SqliteStore.open(null);
    const repo = new StoreJobRepository(store);
    await repo.connect();
    const due = { name: 'j', priority: 0, nextRunAt: new Date(Date.now() - 1), type: 'normal' as const };
    await repo.saveJob({ ...due, data: { actorId: 'l1' } }, undefined);
    const second = await repo.saveJob({ ...due, data: { actorId: 'l2' } }, undefined);
    const scanTo = () => new Date(Date.now() + 1000);
    const expired = () => new Date(Date.now() - 600_000);
    const before = store.writer.commits;
    const first = await repo.getNextJobToRun('j', scanTo(), expired(), undefined, undefined);
    expect(first?.lockedAt).toBeInstanceOf(Date);
    expect(store.writer.commits).toBe(before); // answered before its commit
    expect(await repo.lockJob(first!, undefined)).toBeUndefined(); // locked already
    let release!: () => void;
    const tx = store.transaction(() => new Promise<void>((r) => (release = r)));
    const pending = repo.lockJob(second, undefined); // the store holds it until the transaction ends
    await new Promise((r) => setTimeout(r, 20));
    release();
    await tx;
    expect((await pending)?.lockedAt).toBeInstanceOf(Date);
    expect(await repo.getNextJobToRun('j', scanTo(), expired(), undefined, undefined)).toBeUndefined();
  });

  it('repository: a job is locked by one taker only', async () => {
    const store = await SqliteStore.open(null);
    const repo = new StoreJobRepository(store);
    await repo.connect();
    const job = await repo.saveJob(
      { name: 'j', priority: 0, nextRunAt: new Date(Date.now() - 1), type: 'normal', data: { actorId: 'z' } },
      undefined,
    );
    const now = new Date();
    const takers = await Promise.all(
      [1, 2, 3].map(() =>
        repo.getNextJobToRun('j', new Date(now.getTime() + 1000), new Date(now.getTime() - 600_000), now, undefined),
      ),
    );
    expect(takers.filter(Boolean)).toHaveLength(1);
    expect(await repo.lockJob(job, undefined)).toBeUndefined();
    await repo.unlockJob(job);
    expect(await repo.lockJob(job, undefined)).toBeDefined();
    expect(await repo.removeJobs({ data: { actorId: 'z' } })).toBe(1);
  });
});

/**
 * The child process of the crash test: an actor host with one tiny actor (a deadline 300 ms ahead;
 * `timer.fired` counts and leaves it live, with no deadline) on the SQLite store in `DIR`, through
 * the real scheduler. `MODE=first` creates the actor and, when its firing's action runs (the step on
 * disk, the job's removal applied but not committed: a lazy write), prints `fired` and freezes the
 * event loop, so that nothing commits before the kill. `MODE=second` prints the job as stored, starts
 * the scheduler and restores the actor, delivers the firing again (as a job run again would), waits
 * past a few polls and prints the deliveries, the jobs left and the actor's count.
 */
const CRASH_SCRIPT = `(async () => {
  const { SqliteStore } = await import('./dist/engine/store/sqlite.js');
  const { ActorRepository } = await import('./dist/engine/store/actors.js');
  const { StoreJobRepository } = await import('./dist/engine/scheduler/store-backend.js');
  const { TimerService } = await import('./dist/engine/scheduler/timers.js');
  const { ActorHost } = await import('./dist/engine/actor-host.js');
  const { systemClock } = await import('./dist/engine/clock.js');
  const { createLogger } = await import('./dist/engine/logger.js');
  const { assign, setup } = await import('xstate');
  const first = process.env.MODE === 'first';
  const machine = setup({
    actions: {
      fired: ({ context }) => {
        console.log('fired ' + context.count);
        if (first) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 60000);
      },
    },
  }).createMachine({
    id: 'crash-timer',
    context: ({ input }) => ({ count: 0, deadlines: { due: input.dueMs } }),
    initial: 'armed',
    states: {
      armed: {
        on: {
          'timer.fired': {
            guard: ({ context, event }) => context.deadlines[event.name] === event.atMs,
            target: 'fired',
            actions: [assign({ count: ({ context }) => context.count + 1, deadlines: {} }), 'fired'],
          },
        },
      },
      fired: {},
    },
  });
  const log = createLogger('silent');
  const store = await SqliteStore.open(process.env.DIR);
  let left = [];
  if (!first) {
    left = await (await store.collection('agendaJobs')).find({});
    console.log('stored ' + left.map((j) => j.data.timerName + ' next run ' + j.nextRunAt).join());
  }
  const hostRef = {};
  const timers = new TimerService(store, async (t) => {
    console.log('delivered ' + t.timerName);
    await hostRef.host.deliverTimer(t);
  }, log, 200);
  const host = new ActorHost(await ActorRepository.open(store), timers, systemClock, log);
  hostRef.host = host;
  const statusOf = (s) => String(s.value);
  host.register({ machineId: 'crash-timer', version: 1, kind: 'test', logic: machine, statusOf });
  if (first) {
    await timers.start();
    const input = { dueMs: Date.now() + 300 };
    await host.create('crash-timer', { id: 'c1', input, partnerId: 'p', ownerUserId: null });
    return;
  }
  await host.restoreAll();
  await timers.start();
  const jobs = new StoreJobRepository(store);
  await jobs.connect();
  for (const j of left) await host.deliverTimer(j.data);
  await new Promise((r) => setTimeout(r, 1000));
  await host.whenIdle();
  const c1 = host.snapshotOf('c1');
  console.log('jobs ' + (await jobs.queryJobs({})).total + ' count ' + c1.context.count + ' state ' + c1.value);
  console.log('done');
  await timers.drain(1000);
  await store.close();
})()`;

describe('a firing across kill -9 on disk', () => {
  it(
    "killed after the step is on disk, before the job's removal is: removed at the restart, a firing again dropped",
    { timeout: 60_000 },
    async () => {
      const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-timers-crash-'));
      try {
        const run = await runUntil(`process.env.MODE = 'first'; ${CRASH_SCRIPT}`, dir, 'fired');
        run.child.kill('SIGKILL');
        await run.exited;
        expect(run.out()).toContain('fired 1');
        const again = await runUntil(`process.env.MODE = 'second'; ${CRASH_SCRIPT}`, dir, 'done');
        await again.exited;
        // the job was still there, its run started (no next run: Agenda's state as a run starts, committed
        // with the step) and its removal lost; at the restart it was removed without running, and the
        // firing delivered again was dropped: the actor handled timer.fired once
        expect(again.out()).toBe('stored due next run null\njobs 0 count 1 state fired\ndone\n');
      } finally {
        await fs.rm(dir, { recursive: true, force: true });
      }
    },
  );
});
