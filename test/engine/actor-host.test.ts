import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { assign, emit, setup, type AnyStateMachine } from 'xstate';
import { ActorHost, holdQueues, type ActorChange, type TimerPort } from '../../engine/actor-host.js';
import { ManualClock } from '../../engine/clock.js';
import { createLogger } from '../../engine/logger.js';
import { ActorRepository, type ActorRecord } from '../../engine/store/actors.js';
import { SqliteStore } from '../../engine/store/sqlite.js';
import { baseOrderInput } from '../machines/order-input.js';
import { baseStrategyInput } from '../machines/strategy-input.js';
import { poll } from '../api/trading-kit.js';

/** A small machine with a deadline, an action and an emitted event: enough to exercise the host. */
function makeMachine(effects: string[]) {
  return setup({
    types: {
      context: {} as { n: number; deadlines: Record<string, number> },
      input: {} as { n: number; expiresAtMs: number },
      events: {} as
        | { type: 'bump' }
        | { type: 'finish' }
        | { type: 'again' }
        | { type: 'extend'; atMs: number }
        | { type: 'timer.fired'; name: string; atMs: number },
    },
    actions: {
      record: (_, p: { what: string }) => void effects.push(p.what),
    },
    guards: {
      isCurrentExpiry: ({ context, event }) =>
        event.type === 'timer.fired' && context.deadlines[event.name] === event.atMs,
    },
  }).createMachine({
    id: 'test',
    context: ({ input }) => ({ n: input.n, deadlines: { expiry: input.expiresAtMs } }),
    initial: 'open',
    entry: [{ type: 'record', params: { what: 'entered' } }],
    states: {
      open: {
        entry: [{ type: 'record', params: { what: 'open entered' } }],
        on: {
          bump: {
            actions: [
              assign({ n: ({ context }) => context.n + 1 }),
              { type: 'record', params: ({ context }) => ({ what: `bump ${context.n}` }) },
              emit({ type: 'bumped' }),
            ],
          },
          finish: { target: 'done', actions: assign({ deadlines: {} }) },
          extend: { actions: assign({ deadlines: ({ event }) => ({ expiry: event.atMs }) }) },
          again: { target: 'open', reenter: true },
          'timer.fired': { guard: 'isCurrentExpiry', target: 'expired', actions: assign({ deadlines: {} }) },
        },
      },
      expired: { type: 'final' },
      done: { type: 'final' },
    },
  });
}

class FakeTimers implements TimerPort {
  armed = new Map<string, number>();
  /** While set, every call rejects (a failing store under the scheduler). */
  failing = false;
  async schedule(actorId: string, name: string, atMs: number) {
    if (this.failing) throw new Error('injected: scheduler store down');
    this.armed.set(`${actorId}/${name}`, atMs);
  }
  async cancel(actorId: string, name: string) {
    if (this.failing) throw new Error('injected: scheduler store down');
    this.armed.delete(`${actorId}/${name}`);
  }
  async cancelAll(actorId: string) {
    if (this.failing) throw new Error('injected: scheduler store down');
    for (const k of [...this.armed.keys()]) if (k.startsWith(`${actorId}/`)) this.armed.delete(k);
  }
}

/** The next actor update commits, but its caller is told it failed (as an unknown MongoDB commit result). */
function loseAnswerOfNextUpdate(repo: ActorRepository): void {
  const update = repo.update.bind(repo);
  let lose = true;
  repo.update = async (...args: Parameters<typeof update>) => {
    const written = await update(...args);
    if (!lose) return written;
    lose = false;
    throw new Error('injected: the answer of a committed write is lost');
  };
}

async function setupHost(store?: SqliteStore, version = 1) {
  store ??= await SqliteStore.open(null);
  const repo = await ActorRepository.open(store);
  const timers = new FakeTimers();
  const clock = new ManualClock(1_000_000);
  const effects: string[] = [];
  const host = new ActorHost(repo, timers, clock, createLogger('silent'));
  host.register({
    machineId: 'test',
    version,
    kind: 'order',
    logic: makeMachine(effects),
    statusOf: (s) => (s.value === 'open' ? 'OPEN' : String(s.value).toUpperCase()),
  });
  const changes: ActorChange[] = [];
  host.on('changed', (c) => changes.push(c));
  return { store, repo, timers, clock, effects, host, changes };
}

describe('ActorHost', () => {
  it('creates, persists, then runs actions, arms deadlines and emits a change', async () => {
    const { host, repo, timers, effects, changes } = await setupHost();
    const rec = await host.create('test', {
      id: 'a1',
      input: { n: 1, expiresAtMs: 2_000_000 },
      partnerId: 'p',
      ownerUserId: 'u',
    });
    expect(rec).toMatchObject({ revision: 1, status: 'OPEN', final: false, kind: 'order' });
    expect(effects).toEqual(['entered', 'open entered']);
    expect(timers.armed.get('a1/expiry')).toBe(2_000_000);
    expect(changes[0]).toMatchObject({ previousStatus: null, events: [] });
    expect((await repo.get('a1'))?.revision).toBe(1);
  });

  it("derives the view of a write's records on first read only, equal to viewOf; typeOf gives its type", async () => {
    const { host, repo } = await setupHost();
    const views: string[] = [];
    host.register({
      machineId: 'viewed',
      version: 1,
      kind: 'order',
      logic: makeMachine([]),
      statusOf: (s) => (s.value === 'open' ? 'OPEN' : String(s.value).toUpperCase()),
      viewOf: (s, meta) => (
        views.push(`${meta.revision}`),
        { type: 'LIMIT', n: (s.context as { n: number }).n, revision: meta.revision, updated_at: meta.updatedAtMs }
      ),
      typeOf: () => 'LIMIT',
    });
    const changes: ActorChange[] = [];
    host.on('changed', (c) => changes.push(c));
    const created = await host.create('viewed', {
      id: 'v1',
      input: { n: 1, expiresAtMs: 2_000_000 },
      partnerId: 'p',
      ownerUserId: 'u',
    });
    const bumped = await host.send('v1', { type: 'bump' });
    expect(views).toEqual([]); // nobody read a view yet
    expect(created.view).toEqual({ type: 'LIMIT', n: 1, revision: 1, updated_at: 1_000_000 });
    expect(created.view).toBe(created.view); // derived once, then kept
    expect({ ...bumped }.view).toEqual({ type: 'LIMIT', n: 2, revision: 2, updated_at: 1_000_000 });
    expect(JSON.parse(JSON.stringify(changes[1]!.record)).view).toEqual(bumped.view);
    expect(views).toEqual(['1', '2']);
    expect(host.recordOf('v1')!.view).toEqual(bumped.view);
    // an event that changes nothing answers the record as it is, its view derived when read
    views.length = 0;
    const unchanged = await host.send('v1', { type: 'timer.fired', name: 'expiry', atMs: 5 });
    expect(views).toEqual([]);
    expect(unchanged.revision).toBe(2);
    expect(unchanged.view).toEqual(bumped.view);
    expect(views).toEqual(['2']);
    expect((await repo.get('v1'))!.type).toBe('LIMIT');
    bumped.view = { replaced: true };
    expect(bumped.view).toEqual({ replaced: true });
  });

  it('a step with bound writes derives its view once: the bound writes and the caller get one record', async () => {
    const { host } = await setupHost();
    const views: number[] = [];
    host.register({
      machineId: 'bound',
      version: 1,
      kind: 'order',
      logic: makeMachine([]),
      statusOf: (s) => (s.value === 'open' ? 'OPEN' : String(s.value).toUpperCase()),
      viewOf: (s, meta) => (views.push(meta.revision), { type: 'LIMIT', n: (s.context as { n: number }).n }),
      typeOf: () => 'LIMIT',
    });
    const given: ActorRecord[] = [];
    const unbind = host.bindStepWrites('b1', async (_tx, record) => {
      given.push(record);
      expect(record.view).toEqual({ type: 'LIMIT', n: given.length });
    });
    const created = await host.create('bound', {
      id: 'b1',
      input: { n: 1, expiresAtMs: 2_000_000 },
      partnerId: 'p',
      ownerUserId: 'u',
    });
    const bumped = await host.send('b1', { type: 'bump' });
    unbind();
    expect(given).toStrictEqual([created, bumped]);
    expect(given[0]).toBe(created);
    expect(given[1]).toBe(bumped);
    expect(bumped.view).toEqual({ type: 'LIMIT', n: 2 });
    expect(views).toEqual([1, 2]); // once per step
  });

  it('persists every transition with the next revision before resolving', async () => {
    const { host, repo, effects, changes } = await setupHost();
    await host.create('test', { id: 'a2', input: { n: 1, expiresAtMs: 2_000_000 }, partnerId: 'p', ownerUserId: 'u' });
    host.on('changed', async (c) => {
      // by the time a change is announced, it is in the store
      expect((await repo.get(c.record._id))?.revision).toBeGreaterThanOrEqual(c.record.revision);
    });
    const r = await host.send('a2', { type: 'bump' });
    expect(r.revision).toBe(2);
    expect(JSON.parse((await repo.get('a2'))!.snapshot).context.n).toBe(2);
    expect(effects).toContain('bump 2');
    expect(changes.at(-1)?.emitted).toEqual([{ type: 'bumped' }]);
  });

  it("whenIdle resolves once every actor's queue has run out, events queued by listeners included", async () => {
    const { host, repo } = await setupHost();
    await host.whenIdle(); // nothing queued: resolves at once
    await host.create('test', { id: 'i1', input: { n: 1, expiresAtMs: 2_000_000 }, partnerId: 'p', ownerUserId: 'u' });
    await host.create('test', { id: 'i2', input: { n: 1, expiresAtMs: 2_000_000 }, partnerId: 'p', ownerUserId: 'u' });
    // i1's change queues one more event for i2 while the host works
    host.on('changed', (c) => {
      if (c.record._id === 'i1' && c.record.revision === 2) void host.send('i2', { type: 'bump' });
    });
    void host.send('i1', { type: 'bump' });
    void host.send('i2', { type: 'bump' });
    await host.whenIdle();
    expect(JSON.parse((await repo.get('i1'))!.snapshot).context.n).toBe(2);
    expect(JSON.parse((await repo.get('i2'))!.snapshot).context.n).toBe(3);
  });

  it('serialises concurrent events per actor and group-commits what arrives together', async () => {
    const { host, repo, effects, changes } = await setupHost();
    await host.create('test', { id: 'a3', input: { n: 0, expiresAtMs: 2_000_000 }, partnerId: 'p', ownerUserId: 'u' });
    const results = await Promise.all(Array.from({ length: 25 }, () => host.send('a3', { type: 'bump' })));
    const rec = await repo.get('a3');
    expect(JSON.parse(rec!.snapshot).context.n).toBe(25);
    // 25 events sent in one turn: one write covers them all, and every sender sees it
    expect(rec?.revision).toBe(2);
    expect(results.every((r) => r.revision === 2)).toBe(true);
    expect(changes.at(-1)?.events).toHaveLength(25);
    // actions of every event still ran, in order
    expect(effects.filter((e) => e.startsWith('bump '))).toEqual(Array.from({ length: 25 }, (_, i) => `bump ${i + 1}`));
    // events arriving while a write is in flight form the next batch
    const first = host.send('a3', { type: 'bump' });
    await Promise.resolve();
    await new Promise((r) => setImmediate(r));
    const second = host.send('a3', { type: 'bump' });
    expect((await first).revision).toBeLessThan((await second).revision);
    expect(JSON.parse((await repo.get('a3'))!.snapshot).context.n).toBe(27);
  });

  it('ignores stale and duplicate timers, honours the current one, and disarms on final', async () => {
    const { host, repo, timers } = await setupHost();
    await host.create('test', { id: 'a4', input: { n: 0, expiresAtMs: 2_000_000 }, partnerId: 'p', ownerUserId: 'u' });
    await host.deliverTimer({ actorId: 'a4', timerName: 'expiry', atMs: 1_999_999 });
    expect((await repo.get('a4'))?.status).toBe('OPEN');
    await host.deliverTimer({ actorId: 'a4', timerName: 'expiry', atMs: 2_000_000 });
    expect(await repo.get('a4')).toMatchObject({ status: 'EXPIRED', final: true });
    expect(timers.armed.has('a4/expiry')).toBe(false);
    await host.deliverTimer({ actorId: 'a4', timerName: 'expiry', atMs: 2_000_000 });
    expect((await repo.get('a4'))?.revision).toBe(2);
  });

  it('a re-entry that returns the same snapshot still runs its entry actions', async () => {
    const { host, effects } = await setupHost();
    await host.create('test', { id: 'r1', input: { n: 0, expiresAtMs: 2_000_000 }, partnerId: 'p', ownerUserId: 'u' });
    effects.length = 0;
    await host.send('r1', { type: 'again' });
    expect(effects).toEqual(['open entered']);
  });

  it('an event that changes nothing writes nothing', async () => {
    const { host, repo } = await setupHost();
    await host.create('test', { id: 'a5', input: { n: 0, expiresAtMs: 2_000_000 }, partnerId: 'p', ownerUserId: 'u' });
    await host.send('a5', { type: 'timer.fired', name: 'expiry', atMs: 5 });
    expect((await repo.get('a5'))?.revision).toBe(1);
  });

  it('restores live actors in a new host without re-running entry actions, and re-arms timers', async () => {
    const first = await setupHost();
    await first.host.create('test', {
      id: 'a6',
      input: { n: 3, expiresAtMs: 3_000_000 },
      partnerId: 'p',
      ownerUserId: 'u',
    });
    await first.host.create('test', {
      id: 'a7',
      input: { n: 0, expiresAtMs: 3_000_000 },
      partnerId: 'p',
      ownerUserId: 'u',
    });
    await first.host.send('a7', { type: 'finish' });

    const second = await setupHost(first.store);
    expect(await second.host.restoreAll()).toEqual({ restored: 1, quarantined: 0 });
    expect(second.effects).toEqual([]);
    expect(second.timers.armed.get('a6/expiry')).toBe(3_000_000);
    const r = await second.host.send('a6', { type: 'bump' });
    expect(JSON.parse(r.snapshot).context.n).toBe(4);
    expect(r.revision).toBe(2);
  });

  it('quarantines a snapshot that no longer restores, and keeps it', async () => {
    const first = await setupHost();
    await first.host.create('test', {
      id: 'a8',
      input: { n: 0, expiresAtMs: 3_000_000 },
      partnerId: 'p',
      ownerUserId: 'u',
    });
    await first.host.create('test', {
      id: 'a9',
      input: { n: 0, expiresAtMs: 3_000_000 },
      partnerId: 'p',
      ownerUserId: 'u',
    });
    const a9 = (await first.repo.get('a9'))!;
    await first.repo.update(a9, {
      snapshot: JSON.stringify({ status: 'active', value: 'vanished', context: {} }),
      status: 'OPEN',
      view: {},
      final: false,
      updatedAtMs: 1,
    });

    const second = await setupHost(first.store, 2); // a new machine version that does not restore v1
    expect(await second.host.restoreAll()).toEqual({ restored: 0, quarantined: 2 });
    expect((await second.repo.get('a8'))?.quarantine?.reason).toMatch(/v1 does not restore on v2/);

    const third = await setupHost(await SqliteStore.open(null));
    await third.host.create('test', {
      id: 'b1',
      input: { n: 0, expiresAtMs: 3_000_000 },
      partnerId: 'p',
      ownerUserId: 'u',
    });
    const b1 = (await third.repo.get('b1'))!;
    await third.repo.update(b1, {
      snapshot: JSON.stringify({ status: 'active', value: 'vanished', context: {} }),
      status: 'OPEN',
      view: {},
      final: false,
      updatedAtMs: 1,
    });
    const fourth = await setupHost(third.store);
    expect(await fourth.host.restoreAll()).toEqual({ restored: 0, quarantined: 1 });
    expect((await fourth.repo.get('b1'))?.quarantine?.reason).toMatch(/does not exist/);
  });

  it('an event before the start-up restore waits for its machine to register instead of quarantining', async () => {
    const first = await setupHost();
    await first.host.create('test', {
      id: 'w1',
      input: { n: 1, expiresAtMs: 3_000_000 },
      partnerId: 'p',
      ownerUserId: 'u',
    });
    // the next process: an event arrives (a venue report at start-up) before the machine registers
    const repo = await ActorRepository.open(first.store);
    const effects: string[] = [];
    const host = new ActorHost(repo, new FakeTimers(), new ManualClock(1_000_000), createLogger('silent'));
    const sent = host.send('w1', { type: 'bump' });
    await new Promise((r) => setTimeout(r, 20));
    expect((await repo.get('w1'))?.quarantine).toBeNull();
    host.register({
      machineId: 'test',
      version: 1,
      kind: 'order',
      logic: makeMachine(effects),
      statusOf: (s) => (s.value === 'open' ? 'OPEN' : String(s.value).toUpperCase()),
    });
    expect(await host.restoreAll()).toEqual({ restored: 1, quarantined: 0 });
    const r = await sent;
    expect(JSON.parse(r.snapshot).context.n).toBe(2);
    expect(effects).toEqual(['bump 2']);
    expect((await repo.get('w1'))?.quarantine).toBeNull();
  });

  it('passivates actors that allow it (no deadline): they leave memory, the next event reloads them', async () => {
    const store = await SqliteStore.open(null);
    const repo = await ActorRepository.open(store);
    const host = new ActorHost(repo, new FakeTimers(), new ManualClock(1_000_000), createLogger('silent'));
    const effects: string[] = [];
    const def = {
      machineId: 'test',
      version: 1,
      kind: 'strategy',
      logic: makeMachine(effects),
      statusOf: (s: { value: unknown }) => String(s.value).toUpperCase(),
      viewOf: (s: { context: { n: number } }) => ({ n: s.context.n }),
      passivate: (s: { context: { n: number } }) => s.context.n >= 2,
    };
    host.register(def as never);
    await host.create('test', { id: 'p1', input: { n: 1, expiresAtMs: 2_000_000 }, partnerId: 'p', ownerUserId: 'u' });
    await host.send('p1', { type: 'finish' } as never).catch(() => undefined);
    // a deadline keeps an actor in memory even when its definition would passivate it
    await host.create('test', { id: 'p2', input: { n: 5, expiresAtMs: 2_000_000 }, partnerId: 'p', ownerUserId: 'u' });
    expect(host.snapshotOf('p2')).not.toBeNull();
    // no deadline and n >= 2: passivated after each change, reloaded for the next event
    const noDeadline = setup({
      types: { context: {} as { n: number; deadlines: Record<string, number> }, events: {} as { type: 'bump' } },
    }).createMachine({
      id: 'idle',
      context: { n: 2, deadlines: {} },
      initial: 'open',
      states: { open: { on: { bump: { actions: assign({ n: ({ context }) => context.n + 1 }) } } } },
    });
    host.register({ ...def, machineId: 'idle', logic: noDeadline } as never);
    await host.create('idle', { id: 'p3', input: {} as never, partnerId: 'p', ownerUserId: 'u' });
    expect(host.snapshotOf('p3')).toBeNull();
    // the live ones of a kind: not the final p1 nor the passivated p3
    expect(host.liveIds('strategy')).toEqual(['p2']);
    expect(host.liveIds('order')).toEqual([]);
    const after = await host.send('p3', { type: 'bump' });
    expect(after).toMatchObject({ revision: 2, view: { n: 3 } });
    expect(host.snapshotOf('p3')).toBeNull();
    expect((await repo.get('p3'))!.view).toEqual({ n: 3 });
    // restart: every non-final actor is reported by `restored`, then the dormant one leaves memory
    const host2 = new ActorHost(repo, new FakeTimers(), new ManualClock(1_000_000), createLogger('silent'));
    host2.register(def as never);
    host2.register({ ...def, machineId: 'idle', logic: noDeadline } as never);
    const restored: string[] = [];
    host2.on('restored', ({ record, context, dormant }) =>
      restored.push(`${record._id} ${dormant ? 'dormant' : 'live'} n=${(context as { n: number }).n}`),
    );
    await host2.restoreAll();
    expect(restored.sort()).toEqual(['p2 live n=5', 'p3 dormant n=3']);
    expect(host2.snapshotOf('p3')).toBeNull();
    expect(host2.snapshotOf('p2')).not.toBeNull();
    expect(host2.liveIds('strategy')).toEqual(['p2']);
    await host2.send('p2', { type: 'finish' } as never);
    expect(host2.liveIds('strategy')).toEqual([]);
  });

  it('restores dormant actors lazily, in creation order; the next event quarantines one that fails', async () => {
    const store = await SqliteStore.open(null);
    const repo = await ActorRepository.open(store);
    const clock = new ManualClock(1_000_000);
    const idle = setup({
      types: {
        context: {} as { n: number; deadlines: Record<string, number> },
        input: {} as { n: number },
        events: {} as { type: 'bump' },
      },
    }).createMachine({
      id: 'idle',
      context: ({ input }) => ({ n: input.n, deadlines: {} }),
      initial: 'open',
      states: { open: { on: { bump: { actions: assign({ n: ({ context }) => context.n + 1 }) } } } },
    });
    const def = {
      machineId: 'idle',
      version: 1,
      kind: 'strategy',
      logic: idle,
      statusOf: () => 'ACTIVE',
      viewOf: (s: { context: { n: number } }) => ({ n: s.context.n }),
      passivate: () => true,
    };
    const host = new ActorHost(repo, new FakeTimers(), clock, createLogger('silent'));
    host.register(def as never);
    for (const [id, n] of [
      ['d3', 3],
      ['d1', 1],
      ['d2', 2],
    ] as const) {
      clock.advance(1);
      await host.create('idle', { id, input: { n } as never, partnerId: 'p', ownerUserId: 'u' });
    }
    const d2 = (await repo.get('d2'))!;
    await repo.update(d2, {
      snapshot: JSON.stringify({ status: 'active', value: 'vanished', context: { n: 2, deadlines: {} } }),
      status: 'ACTIVE',
      view: {},
      final: false,
      updatedAtMs: 1,
    });

    const host2 = new ActorHost(repo, new FakeTimers(), clock, createLogger('silent'));
    host2.register(def as never);
    const order: string[] = [];
    host2.on('restored', ({ record, dormant }) => order.push(`${record._id}${dormant ? '' : ' live'}`));
    expect(await host2.restoreAll()).toEqual({ restored: 3, quarantined: 0 });
    expect(order).toEqual(['d3', 'd1', 'd2']); // creation order, all dormant
    expect(host2.liveCount).toBe(0);
    // the next event builds the snapshot from the store
    expect(await host2.send('d1', { type: 'bump' })).toMatchObject({ revision: 2, view: { n: 2 } });
    // one that no longer restores is quarantined then, and refuses the event
    const r = await host2.send('d2', { type: 'bump' });
    expect(r.revision).toBe(2);
    expect((await repo.get('d2'))?.quarantine?.reason).toMatch(/does not exist/);
  });

  it('a write reported failed that had committed: the next step reloads the actor and arms its deadlines', async () => {
    const { host, repo, timers } = await setupHost();
    await host.create('test', { id: 'c1', input: { n: 0, expiresAtMs: 2_000_000 }, partnerId: 'p', ownerUserId: 'u' });
    loseAnswerOfNextUpdate(repo);
    await expect(host.send('c1', { type: 'extend', atMs: 3_000_000 })).rejects.toThrow('injected');
    expect(await repo.get('c1')).toMatchObject({ revision: 2 });
    expect(timers.armed.get('c1/expiry')).toBe(2_000_000); // the stored deadline was never armed
    // the old deadline fires: its step conflicts, reloads the stored actor, ignores the stale
    // firing and arms the stored deadline
    await host.deliverTimer({ actorId: 'c1', timerName: 'expiry', atMs: 2_000_000 });
    expect(await repo.get('c1')).toMatchObject({ revision: 2, status: 'OPEN' });
    expect(timers.armed.get('c1/expiry')).toBe(3_000_000);
    await host.deliverTimer({ actorId: 'c1', timerName: 'expiry', atMs: 3_000_000 });
    expect(await repo.get('c1')).toMatchObject({ status: 'EXPIRED', final: true });
  });

  it('a timer due while its actor is reloaded after a revision conflict is delivered, not dropped', async () => {
    const { host, repo } = await setupHost();
    await host.create('test', { id: 'c2', input: { n: 0, expiresAtMs: 2_000_000 }, partnerId: 'p', ownerUserId: 'u' });
    loseAnswerOfNextUpdate(repo);
    await expect(host.send('c2', { type: 'extend', atMs: 3_000_000 })).rejects.toThrow('injected');
    // the reload's read waits until released: the actor is out of memory meanwhile
    const getStored = repo.getStored.bind(repo);
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let reads = 0;
    repo.getStored = async (id: string) => {
      if (reads++ === 0) await held;
      return getStored(id);
    };
    const bumped = host.send('c2', { type: 'bump' });
    await poll(
      'the reload reads the store',
      async () => reads,
      (n) => n === 1,
    );
    const fired = host.deliverTimer({ actorId: 'c2', timerName: 'expiry', atMs: 3_000_000 });
    release();
    expect(await bumped).toMatchObject({ revision: 3, status: 'OPEN' });
    await fired;
    expect(await repo.get('c2')).toMatchObject({ status: 'EXPIRED', final: true, revision: 4 });
  });

  it('persisted means done: a timer not armed or a throwing listener neither fails nor skips the step', async () => {
    const { host, timers, effects, changes } = await setupHost();
    host.on('changed', () => {
      throw new Error('a listener fails');
    });
    const later: ActorChange[] = [];
    host.on('changed', (c) => later.push(c));
    timers.failing = true;
    const rec = await host.create('test', {
      id: 't19',
      input: { n: 1, expiresAtMs: 2_000_000 },
      partnerId: 'p',
      ownerUserId: 'u',
    });
    expect(rec).toMatchObject({ revision: 1, status: 'OPEN' });
    // the entry actions ran, every listener heard of it, the timer waits for repair
    expect(effects).toEqual(['entered', 'open entered']);
    expect(changes).toHaveLength(1);
    expect(later).toHaveLength(1);
    expect(host.timersFailing).toBe(1);
    const bumped = await host.send('t19', { type: 'bump' });
    expect(bumped.revision).toBe(2);
    expect(effects.at(-1)).toBe('bump 2');
    // the scheduler comes back: the repair arms the current deadlines, by itself
    timers.failing = false;
    await poll(
      'timers repaired',
      async () => host.timersFailing,
      (n) => n === 0,
    );
    expect(timers.armed.get('t19/expiry')).toBe(2_000_000);
  });
});

describe('persistedSnapshotJson: the text XState’s getPersistedSnapshot gives, built directly', () => {
  it('equals JSON.stringify(getPersistedSnapshot) along an order’s life (history, parallel, actor ref)', async () => {
    const { persistedSnapshotJson } = await import('../../engine/actor-host.js');
    const { orderMachine } = await import('../../machines/order.js');
    const { createActor } = await import('xstate');
    const same = (logic: Parameters<typeof persistedSnapshotJson>[0], s: Parameters<typeof persistedSnapshotJson>[1]) =>
      expect(persistedSnapshotJson(logic, s)).toBe(JSON.stringify(logic.getPersistedSnapshot(s)));
    const logic = orderMachine.provide({
      actions: { submitToVenue: () => {}, cancelAtVenue: () => {}, expireAtVenue: () => {} },
    });
    const actor = createActor(logic, {
      input: {
        orderId: 'ord_1',
        userId: 'u',
        tokenId: 't',
        side: 'buy',
        type: 'LIMIT',
        price: '0.5',
        size: '10',
        quoteAmount: null,
        timeInForce: 'GTC',
        expiresAtMs: null,
        clientOrderId: null,
        metadata: '{"a":1}',
        createdAtMs: 1,
      },
    }).start();
    same(logic, actor.getSnapshot());
    actor.send({ type: 'venue.accepted', resting: true });
    same(logic, actor.getSnapshot());
    actor.send({ type: 'venue.filled', tradeId: 'tr1', price: '0.5', size: '4', liquidity: 'maker', completes: false });
    same(logic, actor.getSnapshot());
    actor.send({ type: 'venue.filled', tradeId: 'tr2', price: '0.5', size: '6', liquidity: 'maker', completes: true });
    same(logic, actor.getSnapshot());
    // history and parallel states, a nested context with an array
    const m = setup({
      types: { context: {} as { n: number; list: Array<{ a: number[] }>; ref: unknown } },
    }).createMachine({
      context: { n: 0, list: [{ a: [1, 2] }], ref: null },
      initial: 'on',
      states: {
        on: {
          initial: 'a',
          states: { a: { on: { NEXT: 'b' } }, b: {}, hist: { type: 'history', history: 'deep' } },
          on: { OFF: 'off' },
        },
        off: { type: 'parallel', states: { x: {}, y: {} }, on: { BACK: 'on.hist' } },
      },
    });
    const a = createActor(m).start();
    a.send({ type: 'NEXT' });
    a.send({ type: 'OFF' });
    same(m, a.getSnapshot());
    a.send({ type: 'BACK' });
    same(m, a.getSnapshot());
    // an actor reference in context is persisted as XState does it
    const withRef = setup({ types: { context: {} as { ref: unknown } } }).createMachine({
      context: { ref: null },
      on: { SET: { actions: assign({ ref: () => createActor(m) }) } },
    });
    const b = createActor(withRef).start();
    b.send({ type: 'SET' });
    same(withRef, b.getSnapshot());
  });

  it('a stored form persists actor references as XState does, in a slot, a kept field and nested', async () => {
    const { persistedSnapshotJson, storedSnapshotJson, unpackSnapshot } = await import('../../engine/actor-host.js');
    const { createActor } = await import('xstate');
    const child = setup({}).createMachine({});
    const m = setup({
      types: { context: {} as { slot: unknown; kept: unknown; nested: unknown; plain: number } },
    }).createMachine({
      context: { slot: null, kept: null, nested: null, plain: 0 },
      on: {
        SET: {
          actions: assign({
            slot: () => createActor(child),
            kept: () => createActor(child),
            nested: () => ({ list: [createActor(child)] }),
          }),
        },
      },
    });
    const a = createActor(m).start();
    a.send({ type: 'SET' });
    const ids = { _id: 'x', ownerUserId: null, createdAtMs: 1 };
    for (const form of [
      { version: 1, defaults: { plain: 0 }, fields: ['slot'] },
      { version: 1, defaults: { plain: 0 } },
    ]) {
      const stored = storedSnapshotJson({ logic: m, form }, a.getSnapshot(), ids);
      expect(stored).not.toContain('sessionId');
      const back = JSON.parse(JSON.stringify(unpackSnapshot(stored, form, ids)));
      expect(back).toStrictEqual(JSON.parse(persistedSnapshotJson(m, a.getSnapshot())));
      expect(back.context.kept).toMatchObject({ xstate$$type: 1 });
    }
  });
});

describe('stored snapshot forms: packed context, read back exactly; XState’s form still read', () => {
  it('a strategy context packed by its form (2, or 1) reads back as the persisted snapshot (property)', async () => {
    const { persistedSnapshotJson, storedSnapshotJson, unpackSnapshot } = await import('../../engine/actor-host.js');
    const { stopLossMachine, STOP_LOSS_FORM } = await import('../../machines/stop-loss.js');
    const { trailingStopMachine, TRAILING_STOP_FORM } = await import('../../machines/trailing-stop.js');
    const { trailingBuyMachine, TRAILING_BUY_FORM } = await import('../../machines/trailing-buy.js');
    const { twapMachine } = await import('../../machines/twap.js');
    const { icebergMachine } = await import('../../machines/iceberg.js');
    const { peggedMachine } = await import('../../machines/pegged.js');
    const { strategySnapshotForm, STRATEGY_CONTEXT_DEFAULTS } = await import('../../machines/strategy-kit.js');
    const kinds: Array<{ logic: AnyStateMachine; form: typeof STOP_LOSS_FORM; type: string; states: string[] }> = [
      {
        logic: stopLossMachine,
        form: STOP_LOSS_FORM,
        type: 'STOP_LOSS',
        states: ['armed', 'triggered', 'done', 'canceled', 'failed'],
      },
      {
        logic: trailingStopMachine,
        form: TRAILING_STOP_FORM,
        type: 'TRAILING_STOP',
        states: ['armed', 'triggered', 'done', 'canceled', 'failed'],
      },
      {
        logic: trailingBuyMachine,
        form: TRAILING_BUY_FORM,
        type: 'TRAILING_BUY',
        states: ['armed', 'triggered', 'done', 'canceled', 'failed'],
      },
      { logic: twapMachine, form: strategySnapshotForm('TWAP'), type: 'TWAP', states: ['working', 'completed'] },
      {
        logic: icebergMachine,
        form: strategySnapshotForm('ICEBERG'),
        type: 'ICEBERG',
        states: Object.keys(icebergMachine.root.states),
      },
      {
        logic: peggedMachine,
        form: strategySnapshotForm('PEGGED'),
        type: 'PEGGED',
        states: Object.keys(peggedMachine.root.states),
      },
    ];
    expect(STOP_LOSS_FORM.version).toBe(2);
    expect(STOP_LOSS_FORM.older?.map((f) => f.version)).toEqual([1]);
    const price = fc.constantFrom('0.5', '0.6', '0.7', '0.71', '0.8', '0.123456', '1', '0.50');
    const touch = fc.oneof(
      fc.record({ bid: fc.option(price, { nil: null }), ask: fc.option(price, { nil: null }) }),
      fc.constantFrom(null, { bid: '0.5', ask: '0.6', type: 'book.touch' }, { bid: '0.5' }),
    );
    const execution = fc.constantFrom(
      {},
      { high_water_mark: '0.8', trailing_offset: '0.1' },
      { high_water_mark: '0.80', trailing_offset_pct: 12.5 },
      { high_water_mark: '0.8', trailing_offset_pct: '10' },
      { low_water_mark: '0.5', trailing_offset: '0.1' },
      { low_water_mark: '0.5', trailing_offset_pct: 20, price_ceiling: '0.7' },
      { trailing_offset: '0.1', price_ceiling: '0.80' },
      { trailing_offset: 'x' },
    );
    // each default field at its default or not; the derived ones at their derivation or not
    const other: Record<string, fc.Arbitrary<unknown>> = {
      side: fc.constantFrom('sell', 'buy'),
      tickSize: fc.constantFrom('0.01', '0.001'),
      minSize: fc.constantFrom('5', '1'),
      price: fc.option(price, { nil: null }),
      size: fc.option(fc.constantFrom('5', '10.5'), { nil: null }),
      quoteAmount: fc.option(fc.constant('12'), { nil: null }),
      execution,
      warnings: fc.constantFrom([], ['w']),
      message: fc.option(
        fc.constantFrom(
          'm',
          '',
          'STOP_LOSS armed: sells 5 shares when the best bid reaches 0.7',
          'TRAILING_STOP armed at 0.7 (high-water mark 0.8); follows the bid up',
          'TRAILING_BUY armed: buys $12 when the ask bounces to 0.6 (low-water mark 0.5, seeded from the ask)',
          'TRAILING_BUY armed: buys $12 when the ask bounces to 0.6 (low-water mark 0.5)',
        ),
        { nil: null },
      ),
      clientOrderId: fc.option(fc.constant('c1'), { nil: null }),
      metadata: fc.option(fc.constant('{}'), { nil: null }),
      filledSize: fc.constantFrom('0', '2'),
      matchedAmount: fc.constantFrom('0', '1.1'),
      children: fc.constantFrom(
        [],
        [{ orderId: 'o', status: 'OPEN', filledSize: '0', matchedAmount: '0', final: false }],
      ),
      working: fc.option(fc.constant('o'), { nil: null }),
      seq: fc.constantFrom(0, 1),
      slicesDone: fc.constantFrom(0, 3),
      triggerPrice: fc.option(price, { nil: null }),
      watch: fc.constantFrom(
        {},
        { bidAtOrBelow: '0.5' },
        { bidAtOrBelow: '0.7', bidAbove: '0.8' },
        { askBelow: '0.5', askAtOrAbove: '0.6' },
      ),
      deadlines: fc.constantFrom({}, { slice: 5 }),
      endReason: fc.option(fc.constant('e'), { nil: null }),
      workingPrice: fc.option(price, { nil: null }),
      pendingSize: fc.option(fc.constant('1'), { nil: null }),
      placing: fc.constantFrom(null, {
        orderId: 'o',
        side: 'sell',
        pricing: { kind: 'limit', price: '0.5' },
        size: '5',
        timeInForce: 'GTC',
        postOnly: false,
        isStopLoss: true,
      }),
    };
    const createdAtMs = 1_795_000_000_123;
    const arb = fc.record({
      kind: fc.constantFrom(...kinds),
      v1: fc.boolean(),
      tokenId: fc.constantFrom(
        't1',
        '41583919731714354912849507182398941127545694257513505398713274521520484370640',
        '0',
        '007',
        '255',
        '-1',
        '1e3',
      ),
      ids: fc.record({
        _id: fc.constantFrom('stg_1', 'stg_2'),
        ownerUserId: fc.constantFrom('u1', 'u2', null),
        createdAtMs: fc.constantFrom(createdAtMs, createdAtMs + 1),
      }),
      recordId: fc.constantFrom('stg_1', 'stg_x'),
      userId: fc.constantFrom('u1', 'u3'),
      touch,
      lastTouch: fc.option(touch, { nil: undefined }),
      fields: fc.record(other),
      highWaterMark: fc.option(price, { nil: null }),
      lowWaterMark: fc.option(price, { nil: null }),
      offsetPct: fc.option(fc.constantFrom('10', '12.5', '20'), { nil: null }),
      offsetAbs: fc.option(fc.constant('0.1'), { nil: null }),
      priceCeiling: fc.option(fc.constantFrom('0.7', '0.8'), { nil: null }),
      placeFailures: fc.option(fc.constant(1), { nil: undefined }),
      lacks: fc.option(
        fc.constantFrom(...Object.keys(STRATEGY_CONTEXT_DEFAULTS), 'tokenId', 'touch', 'createdAtMs', 'offsetAbs'),
        { nil: undefined, freq: 2 },
      ),
      state: fc.nat(5),
    });
    let positional = 0;
    fc.assert(
      fc.property(arb, (a) => {
        const context: Record<string, unknown> = {
          recordId: a.recordId,
          userId: a.userId,
          type: a.kind.type,
          tokenId: a.tokenId,
          createdAtMs,
          touch: a.touch,
          lastTouch: a.lastTouch ?? (a.touch === null ? null : { ...a.touch }),
          ...a.fields,
          highWaterMark: a.highWaterMark,
          lowWaterMark: a.lowWaterMark,
          offsetPct: a.offsetPct,
          offsetAbs: a.offsetAbs,
          priceCeiling: a.priceCeiling,
          ...(a.placeFailures !== undefined ? { placeFailures: a.placeFailures } : {}),
        };
        if (a.lacks) delete context[a.lacks]; // a context without a field the form names: stored whole
        const form = a.v1 ? a.kind.form.older![0]! : a.kind.form;
        const snapshot = a.kind.logic.resolveState({
          value: a.kind.states[a.state % a.kind.states.length]!,
          context: context as never,
        });
        const stored = storedSnapshotJson({ logic: a.kind.logic, form }, snapshot, a.ids);
        const parsed = JSON.parse(stored);
        if (Array.isArray(parsed)) positional++;
        if (!a.lacks && a.touch?.bid !== '0.5') expect(a.v1 ? parsed.form : parsed[0]).toBe(a.v1 ? 1 : 2);
        // stored whole, in XState's form
        if (a.lacks && a.lacks in STRATEGY_CONTEXT_DEFAULTS) expect(parsed.form).toBeUndefined();
        // read with the current form (which reads form 1 and XState's too)
        const back = JSON.parse(JSON.stringify(unpackSnapshot(stored, a.kind.form, a.ids)));
        expect(back).toStrictEqual(JSON.parse(persistedSnapshotJson(a.kind.logic, snapshot)));
        // and it restores to the same machine snapshot
        expect(a.kind.logic.resolveState(back).context).toStrictEqual(back.context);
      }),
      { numRuns: 1500 },
    );
    expect(positional).toBeGreaterThan(250);
  });

  it('form 2 of the contexts the machines make: exact, and ~45 % shorter than form 1', async () => {
    const { persistedSnapshotJson, storedSnapshotJson, unpackSnapshot } = await import('../../engine/actor-host.js');
    const { stopLossMachine, STOP_LOSS_FORM } = await import('../../machines/stop-loss.js');
    const { trailingStopMachine, TRAILING_STOP_FORM } = await import('../../machines/trailing-stop.js');
    const { trailingBuyMachine, TRAILING_BUY_FORM } = await import('../../machines/trailing-buy.js');
    const { getInitialSnapshot, transition } = await import('xstate');
    const token = '41583919731714354912849507182398941127545694257513505398713274521520484370640';
    const base = {
      recordId: 'stg_9b2f6c1e-5d1a-4a57-9a43-0c6f3f1e2d7a',
      userId: 'usr_1',
      side: 'sell',
      tokenId: token,
      tickSize: '0.01',
      minSize: '5',
      price: null,
      size: null,
      quoteAmount: null,
      execution: {},
      warnings: [],
      message: null,
      clientOrderId: null,
      metadata: null,
      createdAtMs: 1_795_375_296_441,
      touch: { bid: '0.76', ask: '0.78' },
    };
    const ids = { _id: base.recordId, ownerUserId: 'usr_1', createdAtMs: base.createdAtMs };
    const cases = [
      {
        logic: stopLossMachine,
        form: STOP_LOSS_FORM,
        input: {
          ...base,
          type: 'STOP_LOSS',
          price: '0.71',
          size: '5',
          message: 'STOP_LOSS armed: sells 5 shares when the best bid reaches 0.71',
        },
        move: { bid: '0.70', ask: '0.72' },
      },
      {
        logic: trailingStopMachine,
        form: TRAILING_STOP_FORM,
        move: { bid: '0.85', ask: '0.87' },
        input: {
          ...base,
          type: 'TRAILING_STOP',
          size: '5',
          execution: { high_water_mark: '0.8', trailing_offset: '0.1' },
          highWaterMark: '0.8',
          offsetPct: null,
          offsetAbs: '0.1',
          message: 'TRAILING_STOP armed at 0.7 (high-water mark 0.8); follows the bid up',
        },
      },
      {
        logic: trailingStopMachine,
        form: TRAILING_STOP_FORM,
        move: { bid: '0.85', ask: '0.87' },
        input: {
          ...base,
          type: 'TRAILING_STOP',
          size: '5',
          execution: { high_water_mark: '0.8', trailing_offset_pct: 10 },
          highWaterMark: '0.8',
          offsetPct: '10',
          offsetAbs: null,
          message: 'TRAILING_STOP armed at 0.72 (high-water mark 0.8); follows the bid up',
        },
      },
      {
        logic: trailingBuyMachine,
        form: TRAILING_BUY_FORM,
        move: { bid: '0.70', ask: '0.72' },
        input: {
          ...base,
          type: 'TRAILING_BUY',
          side: 'buy',
          quoteAmount: '20',
          execution: { trailing_offset: '0.05' },
          lowWaterMark: '0.78',
          priceCeiling: null,
          offsetPct: null,
          offsetAbs: '0.05',
          message:
            'TRAILING_BUY armed: buys $20 when the ask bounces to 0.83 (low-water mark 0.78, seeded from the ask)',
        },
      },
      {
        logic: trailingBuyMachine,
        form: TRAILING_BUY_FORM,
        move: { bid: '0.70', ask: '0.72' },
        input: {
          ...base,
          type: 'TRAILING_BUY',
          side: 'buy',
          quoteAmount: '20',
          execution: { low_water_mark: '0.8', trailing_offset_pct: '5', price_ceiling: '0.9' },
          lowWaterMark: '0.8',
          priceCeiling: '0.9',
          offsetPct: '5',
          offsetAbs: null,
          message: 'TRAILING_BUY armed: buys $20 when the ask bounces to 0.84 (low-water mark 0.8), never above 0.9',
        },
      },
    ];
    for (const k of cases) {
      const exact = (snapshot: any, ratio?: number) => {
        const v2 = storedSnapshotJson({ logic: k.logic, form: k.form }, snapshot, ids);
        const v1 = storedSnapshotJson({ logic: k.logic, form: k.form.older![0]! }, snapshot, ids);
        const xs = JSON.parse(persistedSnapshotJson(k.logic, snapshot));
        expect(JSON.parse(v2)[0]).toBe(2);
        expect(JSON.parse(JSON.stringify(unpackSnapshot(v2, k.form, ids)))).toStrictEqual(xs);
        expect(JSON.parse(JSON.stringify(unpackSnapshot(v1, k.form, ids)))).toStrictEqual(xs);
        if (ratio !== undefined) expect(v2.length / v1.length, `${v2}\n${v1}`).toBeLessThan(ratio);
        return v2;
      };
      let snap: any = getInitialSnapshot(k.logic as never, k.input as never);
      const armed = exact(snap, 0.45);
      // the armed form holds nothing but the slots
      expect(JSON.parse(armed)).toHaveLength(7);
      expect(JSON.parse(armed)[6]).toBe(0); // created when the record was
      expect(JSON.parse(armed)[2]).toHaveLength(43); // the token id in base64url
      for (const e of [
        { type: 'book.touch', ...k.move },
        { type: 'book.touch', bid: '0.01', ask: '0.99' },
        { type: 'strategy.cancel' },
      ]) {
        snap = transition(k.logic as never, snap as never, e as never)[0];
        exact(snap);
      }
    }
  });

  it('reads XState’s form as it is; refuses an unknown form version (the host quarantines it)', async () => {
    const { unpackSnapshot } = await import('../../engine/actor-host.js');
    const { STOP_LOSS_FORM } = await import('../../machines/stop-loss.js');
    const ids = { _id: 'stg_1', ownerUserId: 'u', createdAtMs: 1 };
    const xstate = {
      status: 'active',
      value: 'armed',
      historyValue: {},
      context: { recordId: 'stg_1', working: null, watch: { bidAtOrBelow: '0.5' } },
      children: {},
    };
    expect(unpackSnapshot(JSON.stringify(xstate), STOP_LOSS_FORM, ids)).toStrictEqual(xstate);
    expect(unpackSnapshot(JSON.stringify(xstate), null, ids)).toStrictEqual(xstate);
    expect(() => unpackSnapshot('{"form":3,"value":"armed","context":{}}', STOP_LOSS_FORM, ids)).toThrow(/form 3/);
    // form 2 is positional
    expect(() => unpackSnapshot('{"form":2,"value":"armed","context":{}}', STOP_LOSS_FORM, ids)).toThrow(/form 2/);
    // form 1 is an object
    expect(() => unpackSnapshot('[1,"armed","t","0.5","5",null]', STOP_LOSS_FORM, ids)).toThrow(/form 1/);
    expect(() => unpackSnapshot('[3,"armed"]', STOP_LOSS_FORM, ids)).toThrow(/form 3/);
    expect(() => unpackSnapshot('{"form":1,"value":"armed","context":{}}', null, ids)).toThrow(/form 1/);
    expect(() => unpackSnapshot('[2,"armed","t","0.5","5",null]', null, ids)).toThrow(/form 2/);
  });
});

describe('PureStepper.initial (arming rate): the initial snapshot made once per machine, then per context', () => {
  it('equals XState’s initialTransition for every strategy machine; TWAP’s acting start keeps XState’s', async () => {
    const { PureStepper, persistedSnapshotJson } = await import('../../engine/actor-host.js');
    const { initialTransition, transition } = await import('xstate');
    const { stopLossMachine } = await import('../../machines/stop-loss.js');
    const { trailingStopMachine } = await import('../../machines/trailing-stop.js');
    const { trailingBuyMachine } = await import('../../machines/trailing-buy.js');
    const { twapMachine } = await import('../../machines/twap.js');
    const { icebergMachine } = await import('../../machines/iceberg.js');
    const { peggedMachine } = await import('../../machines/pegged.js');
    const { type: _type, ...base } = baseStrategyInput;
    const price = fc.constantFrom('0.5', '0.45', '0.123456');
    const input = fc.oneof(
      fc.record({
        type: fc.constant('STOP_LOSS'),
        price: fc.option(price, { nil: null }),
        size: fc.constantFrom('5', '10.5'),
      }), // price null: the context throws
      fc.record({
        type: fc.constant('TRAILING_STOP'),
        size: fc.constant('5'),
        highWaterMark: price,
        offsetAbs: fc.option(fc.constant('0.1'), { nil: null }),
        offsetPct: fc.option(fc.constant('10'), { nil: null }),
      }),
      fc.record({
        type: fc.constant('TRAILING_BUY'),
        side: fc.constant('buy'),
        price: fc.constant('0.9'),
        quoteAmount: fc.constant('10'),
        lowWaterMark: price,
        offsetAbs: fc.constant('0.1'),
        offsetPct: fc.constant(null),
      }),
      fc.record({
        type: fc.constant('TWAP'),
        price: price,
        size: fc.constant('20'),
        intervalMs: fc.constant(60_000),
        durationMs: fc.constant(300_000),
        slicesTotal: fc.constant(5),
        passive: fc.boolean(),
      }),
    );
    const machines: Record<string, AnyStateMachine> = {
      STOP_LOSS: stopLossMachine,
      TRAILING_STOP: trailingStopMachine,
      TRAILING_BUY: trailingBuyMachine,
      TWAP: twapMachine,
      ICEBERG: icebergMachine,
      PEGGED: peggedMachine,
    };
    const steppers = new Map<AnyStateMachine, InstanceType<typeof PureStepper>>();
    fc.assert(
      fc.property(
        input,
        fc.constantFrom<Array<{ type: string; [k: string]: unknown }>>(
          { type: 'book.touch', bid: '0.4', ask: '0.42' },
          { type: 'book.touch', bid: '0.7', ask: '0.72' },
          { type: 'strategy.cancel' },
        ),
        (extra, event) => {
          const logic = machines[extra.type]!;
          const inp = { ...base, ...extra };
          let stepper = steppers.get(logic);
          if (!stepper) steppers.set(logic, (stepper = new PureStepper(logic)));
          const [mine, myActions] = stepper.initial(inp);
          const [theirs, theirActions] = initialTransition(logic, inp as never);
          expect(mine.status).toBe(theirs.status);
          expect(mine.value).toStrictEqual(theirs.value);
          expect(mine.context).toStrictEqual(theirs.context);
          expect([...mine.tags]).toStrictEqual([...theirs.tags]);
          expect(myActions.map((a) => a.type)).toStrictEqual(theirActions.map((a) => a.type));
          if (theirs.status !== 'active') return;
          expect(persistedSnapshotJson(logic, mine)).toBe(persistedSnapshotJson(logic, theirs));
          expect(mine.can(event as never)).toBe(theirs.can(event as never));
          const [a, aActions] = stepper.transition(mine, event as never);
          const [b, bActions] = transition(logic, theirs, event as never);
          expect(persistedSnapshotJson(logic, a)).toBe(persistedSnapshotJson(logic, b));
          expect(aActions.map((x) => x.type)).toStrictEqual(bActions.map((x) => x.type));
        },
      ),
      { numRuns: 300 },
    );
    // the template is taken for the armed stops, not for a machine whose initial state acts (TWAP's first slice)
    expect(steppers.get(stopLossMachine)!.usesTemplate).toBe(true);
    expect(steppers.get(twapMachine)!.usesTemplate).toBe(false);
    const effects: string[] = [];
    const entryActs = new PureStepper(makeMachine(effects));
    for (let i = 0; i < 2; i++)
      expect(entryActs.initial({ n: i, expiresAtMs: 5 })[1].map((a) => a.type)).toStrictEqual(['record', 'record']);
    expect(effects).toStrictEqual([]); // collected, never run
    expect(entryActs.usesTemplate).toBe(true); // custom entry actions only: collected from the template's states
  });
  it('an order’s initial snapshot from the template: XState’s snapshot and entry action', async () => {
    const { PureStepper, persistedSnapshotJson } = await import('../../engine/actor-host.js');
    const { initialTransition } = await import('xstate');
    const { orderMachine } = await import('../../machines/order.js');
    const submitted: unknown[] = [];
    const logic = orderMachine.provide({ actions: { submitToVenue: (_, p) => void submitted.push(p) } });
    const input = fc.record({
      orderId: fc.constantFrom('ord_a', 'ord_b'),
      side: fc.constantFrom('buy', 'sell'),
      type: fc.constantFrom('LIMIT', 'MARKET'),
      timeInForce: fc.constantFrom('GTC', 'GTD', 'FOK', 'IOC'),
      expiresAtMs: fc.option(fc.constant(1_700_000_060_000), { nil: null }),
      parentId: fc.option(fc.constant('rec_1'), { nil: undefined }),
      isStopLoss: fc.option(fc.boolean(), { nil: undefined }),
      postOnly: fc.option(fc.boolean(), { nil: undefined }),
    });
    const stepper = new PureStepper(logic);
    fc.assert(
      fc.property(input, (extra) => {
        const inp = { ...baseOrderInput, ...extra };
        const [mine, myActions] = stepper.initial(inp);
        const [theirs, theirActions] = initialTransition(logic, inp as never);
        expect(persistedSnapshotJson(logic, mine)).toBe(persistedSnapshotJson(logic, theirs));
        expect([...mine.tags]).toStrictEqual([...theirs.tags]);
        // the same snapshot object as XState's, field by field; its own children and history objects
        const { context: _m, machine: mm, _nodes: mn, ...myRest } = mine as unknown as Record<string, unknown>;
        const { context: _t, machine: tm, _nodes: tn, ...theirRest } = theirs as unknown as Record<string, unknown>;
        expect(Object.keys(mine)).toStrictEqual(Object.keys(theirs));
        expect(myRest).toStrictEqual(theirRest);
        expect(mm).toBe(tm);
        expect((mn as Array<{ id: string }>).map((n) => n.id)).toStrictEqual(
          (tn as Array<{ id: string }>).map((n) => n.id),
        );
        expect(mine.matches(theirs.value as never)).toBe(true);
        const [again] = stepper.initial(inp);
        expect(again.children).not.toBe(mine.children);
        expect(again.historyValue).not.toBe(mine.historyValue);
        expect(myActions.length).toBe(theirActions.length);
        for (let i = 0; i < myActions.length; i++) {
          const [a, b] = [myActions[i]!, theirActions[i]!];
          expect(a.type).toBe(b.type);
          expect(a.exec).toBe(b.exec);
          expect(a.params).toStrictEqual(b.params);
          const [ai, bi] = [a.info as Record<string, unknown>, b.info as unknown as Record<string, unknown>];
          expect(ai.event).toStrictEqual(bi.event);
          expect(ai.context).toBe(mine.context);
        }
        // run as the host runs them: the venue gets the order XState's action gives
        submitted.length = 0;
        for (const a of myActions) a.exec?.(a.info as never, a.params as never);
        for (const a of theirActions) a.exec?.(a.info as never, a.params as never);
        expect(submitted).toHaveLength(2);
        expect(submitted[0]).toStrictEqual(submitted[1]);
      }),
      { numRuns: 200 },
    );
    expect(stepper.usesTemplate).toBe(true);
  });
  it('a shared inert scope: order steps equal XState’s; a machine with children uses XState’s functions', async () => {
    const { PureStepper, persistedSnapshotJson } = await import('../../engine/actor-host.js');
    const { initialTransition, transition, createMachine, fromPromise } = await import('xstate');
    const { orderMachine } = await import('../../machines/order.js');
    const order = baseOrderInput;
    const events = fc.array(
      fc.constantFrom<Array<{ type: string; [k: string]: unknown }>>(
        { type: 'venue.accepted', resting: true },
        { type: 'venue.filled', tradeId: 't1', price: '0.5', size: '4', liquidity: 'maker', completes: false },
        { type: 'venue.filled', tradeId: 't2', price: '0.5', size: '6', liquidity: 'taker', completes: true },
        { type: 'order.cancel', reason: { by: 'user' } },
        { type: 'venue.canceled', reason: { by: 'user' } },
        { type: 'venue.rejected', error: 'INSUFFICIENT_BALANCE', reason: 'no funds' },
      ),
      { maxLength: 5 },
    );
    const stepper = new PureStepper(orderMachine);
    const types = (actions: Array<{ type: string }>) => actions.map((a) => a.type);
    fc.assert(
      fc.property(events, (evs) => {
        let [mine, myActions] = stepper.initial(order);
        let [theirs, theirActions] = initialTransition(orderMachine, order as never);
        expect(types(myActions)).toStrictEqual(types(theirActions));
        expect(persistedSnapshotJson(orderMachine, mine)).toBe(persistedSnapshotJson(orderMachine, theirs));
        for (const e of evs) {
          [mine, myActions] = stepper.transition(mine, e as never);
          [theirs, theirActions] = transition(orderMachine, theirs, e as never);
          expect(types(myActions)).toStrictEqual(types(theirActions));
          expect(persistedSnapshotJson(orderMachine, mine)).toBe(persistedSnapshotJson(orderMachine, theirs));
        }
      }),
      { numRuns: 100 },
    );
    // a machine whose step invokes a child: the snapshot XState's functions give, child included
    const parent = createMachine({
      initial: 'idle',
      states: { idle: { on: { go: 'working' } }, working: { invoke: { id: 'job', src: fromPromise(async () => 1) } } },
    }) as unknown as AnyStateMachine;
    const withChild = new PureStepper(parent);
    const [idle] = withChild.initial(undefined);
    const [working] = withChild.transition(idle, { type: 'go' });
    expect(working.value).toBe('working');
    expect(Object.keys(working.children)).toStrictEqual(['job']);
    const [again] = withChild.transition(withChild.initial(undefined)[0], { type: 'go' });
    expect(Object.keys(again.children)).toStrictEqual(['job']);
  });
  it('takes the template only where entering the initial states alone gives the state, doing nothing', async () => {
    const { PureStepper, persistedSnapshotJson } = await import('../../engine/actor-host.js');
    const { initialTransition } = await import('xstate');
    type C = { n: number };
    const states = (leaf: object) => ({
      outer: {
        initial: 'inner',
        states: {
          inner: { type: 'parallel' as const, states: { a: { initial: 'a1', states: { a1: leaf, a2: {} } }, b: {} } },
          other: {},
        },
      },
      elsewhere: {},
    });
    const make = (leaf: object) =>
      setup({ types: { context: {} as C, input: {} as C } }).createMachine({
        context: ({ input }: { input: C }) => ({ n: input.n }),
        initial: 'outer',
        states: states(leaf),
      } as never) as unknown as AnyStateMachine;
    const cases: Array<[string, AnyStateMachine, boolean]> = [
      ['inert', make({}), true],
      [
        'an eventless transition on the way',
        make({ always: { target: 'a2', guard: ({ context }: { context: C }) => context.n > 1 } }),
        false,
      ],
      ['a delayed transition', make({ after: { 1000: 'a2' } }), false],
      ['an entry assignment', make({ entry: assign({ n: 0 }) }), false],
      ['an entry emit', make({ entry: emit({ type: 'entered' }) }), false],
      ['an inline entry function', make({ entry: () => {} }), false],
      [
        'a custom entry action with params (collected from the template)',
        make({ entry: { type: 'note', params: ({ context }: { context: C }) => ({ n: context.n }) } }),
        true,
      ],
    ];
    for (const [what, logic, inert] of cases) {
      const stepper = new PureStepper(logic);
      for (let n = 0; n < 3; n++) {
        const [mine, actions] = stepper.initial({ n });
        const [theirs, theirActions] = initialTransition(logic, { n } as never);
        expect(mine.value, what).toStrictEqual(theirs.value);
        expect(mine.context, what).toStrictEqual(theirs.context);
        expect(persistedSnapshotJson(logic, mine), what).toBe(persistedSnapshotJson(logic, theirs));
        expect(
          actions.map((a) => [a.type, a.params, (a.info as { event?: unknown } | undefined)?.event]),
          what,
        ).toStrictEqual(theirActions.map((a) => [a.type, a.params, (a.info as { event?: unknown }).event]));
      }
      expect(stepper.usesTemplate, what).toBe(inert);
    }
  });
});

describe('holdQueues', () => {
  /** A queue per key as the host and the order service keep them: the tail removed once settled and still the last. */
  function queues() {
    const map = new Map<string, Promise<unknown>>();
    const join = (key: string, work: () => Promise<void>) => {
      const run = (map.get(key) ?? Promise.resolve()).then(work);
      const tail: Promise<void> = run.then(
        () => {
          if (map.get(key) === tail) map.delete(key);
        },
        () => undefined,
      );
      map.set(key, tail);
    };
    return { map, join };
  }

  it('holds fresh keys (one shared tail) and busy ones alike until the release, then empties the queues', async () => {
    const { map, join } = queues();
    const log: string[] = [];
    let unblock!: () => void;
    join('busy', () => new Promise<void>((r) => (unblock = r)).then(() => void log.push('busy ran')));
    let held = false;
    const holding = holdQueues(['fresh1', 'fresh2', 'busy'], join, map).then((release) => {
      held = true;
      return release;
    });
    expect(map.get('fresh1')).toBe(map.get('fresh2'));
    join('fresh1', async () => void log.push('fresh1 after'));
    join('busy', async () => void log.push('busy after'));
    await new Promise((r) => setTimeout(r, 5));
    expect(held).toBe(false); // 'busy' is still taken by its first task
    unblock();
    const release = await holding;
    await new Promise((r) => setTimeout(r, 5));
    expect(log).toEqual(['busy ran']); // the queued work waits for the release
    release();
    await new Promise((r) => setTimeout(r, 5));
    expect(log.sort()).toEqual(['busy after', 'busy ran', 'fresh1 after']);
    expect(map.size).toBe(0);
  });
});
