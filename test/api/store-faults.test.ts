import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { SqliteStore } from '../../engine/store/sqlite.js';
import { FaultyStore, fileHandles } from '../engine/store/faulty-store.js';
import { startTestService, type TestService } from '../helpers.js';

/**
 * Through the real path: while the venue's journal cannot be written, health
 * says so, new venue operations answer 503 with the envelope and Retry-After and change nothing,
 * the request caught in the failure completes once the store is back, and nothing is lost.
 */
describe('venue journal failure over REST', () => {
  let svc: TestService;
  let store: FaultyStore;
  let token: string;
  const alice = { 'x-partner-user-id': 'alice' };

  beforeAll(async () => {
    store = new FaultyStore(await SqliteStore.open(null));
    svc = await startTestService({ store });
    await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'alice' } });
    token = (await svc.call('GET', '/v2/trade/markets?limit=1')).body.markets[0].tokens[0].token_id;
  });
  afterAll(async () => {
    store.clear();
    await svc.close();
  });

  it('health degraded and 503 for venue operations meanwhile; the caught order completes; nothing lost', async () => {
    expect((await svc.call('GET', '/healthz')).body).toMatchObject({
      status: 'ok',
      venue: { ok: true, pending_writes: 0 },
    });
    store.failWhen((i) => i.collection === 'venueJournal');
    const caught = svc.call('POST', '/v2/trade/order', {
      body: { symbol: token, side: 'buy', type: 'LIMIT', price: '0.01', size: '10' },
      headers: alice,
    });
    let health = await svc.call('GET', '/healthz');
    // a generous deadline (other test files load the machine): the write fails in the background
    for (let i = 0; i < 750 && health.status === 200; i++) {
      await new Promise((r) => setTimeout(r, 20));
      health = await svc.call('GET', '/healthz');
    }
    expect(health.status).toBe(503);
    expect(health.body).toMatchObject({
      status: 'degraded',
      venue: { ok: false, pending_writes: 1, error: expect.stringMatching(/journal write failed/) },
    });

    const refused = await svc.call('POST', '/v2/trade/order', {
      body: { symbol: token, side: 'buy', type: 'LIMIT', price: '0.01', size: '10' },
      headers: alice,
    });
    expect(refused.status).toBe(503);
    expect(refused.body).toEqual({
      error: 'unavailable',
      message: expect.stringMatching(/venue cannot record operations right now.*nothing was changed/),
    });
    expect(refused.headers.get('retry-after')).toBe('1');

    store.clear();
    const placed = await caught;
    expect(placed.status).toBe(200);
    expect(placed.body).toMatchObject({ status: 'OPEN', size: '10', price: '0.01' });
    expect((await svc.call('GET', '/healthz')).body).toMatchObject({
      status: 'ok',
      venue: { ok: true, pending_writes: 0 },
    });
    // the refused request left nothing; the caught one is there once
    const activity = (await svc.call('GET', '/v2/trade/activity', { headers: alice })).body.activity;
    expect(activity.map((a: { id: string }) => a.id)).toEqual([placed.body.order_id]);
    expect((await svc.call('GET', '/v2/trade/balances', { headers: alice })).body).toMatchObject({ reserved: '0.1' });
  });

  it('a timer that cannot be armed: the order stands, health shows it, the repair arms it, GTD expires', async () => {
    store.failWhen((i) => i.collection === 'agendaJobs');
    // far enough ahead to be in the future when a loaded machine validates the order
    const expiration = Date.now() + 3000;
    const placed = await svc.call('POST', '/v2/trade/order', {
      body: { symbol: token, side: 'buy', type: 'LIMIT', price: '0.01', size: '10', expiration },
      headers: alice,
    });
    expect(placed.status).toBe(200);
    expect(placed.body).toMatchObject({ status: 'OPEN', time_in_force: 'GTD', expiration });
    // the timer is armed once the step is on disk, which may follow the answer: health shows its failure then
    // (a service job of the scheduler that runs meanwhile fails its write too, and counts as a failing timer)
    await expect
      .poll(
        async () => ({
          health: (await svc.call('GET', '/healthz')).body,
          repairs: svc.services.host.timersFailing, // the order's timer, waiting for its repair
        }),
        { timeout: 15_000, interval: 20 },
      )
      .toMatchObject({
        health: { status: 'degraded', scheduler: { running: true, failing_timers: expect.toSatisfy((n) => n >= 1) } },
        repairs: 1,
      });
    expect((await svc.call('GET', '/healthz')).status).toBe(503);
    store.clear();
    let order = placed.body;
    for (let i = 0; i < 400 && order.status !== 'EXPIRED'; i++) {
      await new Promise((r) => setTimeout(r, 50));
      order = (await svc.call('GET', '/v2/trade/activity', { headers: alice })).body.activity.find(
        (a: { id: string }) => a.id === placed.body.order_id,
      );
    }
    expect(order.status).toBe('EXPIRED');
    expect(Date.now()).toBeGreaterThanOrEqual(expiration);
    // the final step's timer clean-up (which ends the repair) follows its write: health turns ok just after
    await expect
      .poll(async () => (await svc.call('GET', '/healthz')).body, { timeout: 15_000, interval: 50 })
      .toMatchObject({ status: 'ok', scheduler: { failing_timers: 0 } });
  });
});

describe("a service job failing while the store refuses the scheduler's writes too", () => {
  it('health is degraded meanwhile and ok again soon after the store is back; the job runs to its end', async () => {
    const store = new FaultyStore(await SqliteStore.open(null));
    // the statements job's start-up run, held at its progress write (after its reads)
    const progress = store.hold({ collections: ['statementRuns'] });
    const svc = await startTestService({ store });
    try {
      await expect.poll(() => progress.fired, { timeout: 15_000 }).toBe(1);
      expect((await svc.call('GET', '/healthz')).body).toMatchObject({ status: 'ok' });
      // the store now refuses the scheduler's writes: the run's re-arming for the next day fails, and so
      // does any record of that failure Agenda would write into the job's document
      const refusing = store.failWhen((i) => i.collection === 'agendaJobs');
      progress.release();
      await expect
        .poll(async () => (await svc.call('GET', '/healthz')).body, { timeout: 15_000, interval: 20 })
        .toMatchObject({ status: 'degraded', scheduler: { running: true, failing_timers: 1 } });
      refusing.remove();
      // the run is retried with backoff (Agenda's own retry would leave it locked: health degraded for good)
      await expect
        .poll(async () => (await svc.call('GET', '/healthz')).body, { timeout: 15_000, interval: 50 })
        .toMatchObject({ status: 'ok', scheduler: { failing_timers: 0 } });
      expect(svc.services.statements.generatedThrough()).not.toBeNull();
      // re-armed for its next day's run
      const jobs = await (
        await store.inner.collection<{ _id: string; name: string; nextRunAt: Date }>('agendaJobs')
      ).find({ name: 'data.statements' });
      expect(jobs).toHaveLength(1);
      expect(new Date(jobs[0]!.nextRunAt).getTime()).toBeGreaterThan(Date.now());
    } finally {
      store.clear();
      await svc.close();
    }
  });
});

describe("a timer delivery failing while the store refuses the scheduler's writes too", () => {
  it('the GTD order expires once the store is back, and health is ok again', async () => {
    const store = new FaultyStore(await SqliteStore.open(null));
    const svc = await startTestService({ store });
    try {
      const alice = { 'x-partner-user-id': 'alice' };
      await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'alice' } });
      const token = (await svc.call('GET', '/v2/trade/markets?limit=1')).body.markets[0].tokens[0].token_id;
      const expiration = Date.now() + 1500;
      const placed = await svc.call('POST', '/v2/trade/order', {
        body: { symbol: token, side: 'buy', type: 'LIMIT', price: '0.01', size: '10', expiration },
        headers: alice,
      });
      expect(placed.status).toBe(200);
      // the expiry's step (the next write of an actor) fails, and so does any record of that failure
      // Agenda would write into the timer's document
      const step = store.hold({ collections: ['actors'] });
      await expect.poll(() => step.fired, { timeout: 15_000 }).toBe(1);
      const refusing = store.failWhen((i) => i.collection === 'agendaJobs');
      step.release(true);
      await expect
        .poll(async () => (await svc.call('GET', '/healthz')).body, { timeout: 15_000, interval: 20 })
        .toMatchObject({ status: 'degraded', scheduler: { failing_timers: 1 } });
      refusing.remove();
      // delivered again with backoff (Agenda's own retry would leave the timer locked: the order would never expire)
      await expect
        .poll(
          async () =>
            (await svc.call('GET', `/v2/trade/orders/${placed.body.order_id}`, { headers: alice })).body.status,
          { timeout: 15_000, interval: 50 },
        )
        .toBe('EXPIRED');
      await expect
        .poll(async () => (await svc.call('GET', '/healthz')).body, { timeout: 15_000, interval: 50 })
        .toMatchObject({ status: 'ok', scheduler: { failing_timers: 0 } });
    } finally {
      store.clear();
      await svc.close();
    }
  });
});

describe('a failed WAL fsync over REST', () => {
  let dir: string;
  afterAll(async () => {
    vi.restoreAllMocks();
    if (dir) await fs.rm(dir, { recursive: true, force: true });
  });

  it('stops the store: writes 503, health degraded until a restart, reads served; the restart recovers', async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-store-eio-'));
    let svc = await startTestService({ store: await SqliteStore.open(dir) });
    const alice = { 'x-partner-user-id': 'alice' };
    await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'alice' } });
    const token = (await svc.call('GET', '/v2/trade/markets?limit=1')).body.markets[0].tokens[0].token_id;
    const order = { symbol: token, side: 'buy', type: 'LIMIT', price: '0.01', size: '10' };
    const placed = await svc.call('POST', '/v2/trade/order', { body: order, headers: alice });
    expect(placed.status).toBe(200);

    // the disk fails one fsync of the WAL (an I/O error), then answers again
    const proto = await fileHandles();
    vi.spyOn(proto, 'datasync').mockRejectedValueOnce(Object.assign(new Error('EIO: i/o error'), { code: 'EIO' }));
    const caught = await svc.call('POST', '/v2/trade/order', { body: order, headers: alice });
    expect(caught.status).toBe(503);
    expect(caught.body).toEqual({
      error: 'unavailable',
      message: expect.stringMatching(/WAL fsync failed .*retry it with the same Idempotency-Key after the restart/),
    });
    expect(caught.headers.get('retry-after')).toBe('1');

    const refused = await svc.call('POST', '/v2/trade/order', { body: order, headers: alice });
    expect(refused.status).toBe(503);
    expect(refused.body).toEqual({
      error: 'unavailable',
      message: expect.stringMatching(/store cannot record changes right now .*store stopped: a WAL fsync failed/),
    });
    const health = await svc.call('GET', '/healthz');
    expect(health.status).toBe(503);
    expect(health.body).toMatchObject({
      status: 'degraded',
      store: { ok: false, error: expect.stringMatching(/store stopped: a WAL fsync failed \(EIO/) },
    });
    const read = await svc.call('GET', `/v2/trade/orders/${placed.body.order_id}`, { headers: alice });
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ order_id: placed.body.order_id, status: 'OPEN' });
    await svc.close().catch(() => undefined);
    vi.restoreAllMocks();

    // the restart: SQLite recovers what reached the disk; the acknowledged order is there, writes work
    svc = await startTestService({ store: await SqliteStore.open(dir) });
    try {
      expect((await svc.call('GET', '/healthz')).body).toMatchObject({ status: 'ok', store: { ok: true } });
      const again = await svc.call('GET', `/v2/trade/orders/${placed.body.order_id}`, { headers: alice });
      expect(again.body).toMatchObject({ order_id: placed.body.order_id, status: 'OPEN' });
      const next = await svc.call('POST', '/v2/trade/order', { body: order, headers: alice });
      expect(next.status).toBe(200);
      expect(next.body).toMatchObject({ status: 'OPEN' });
    } finally {
      await svc.close();
    }
  });
});
