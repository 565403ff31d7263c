import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../engine/store/sqlite.js';
import { FaultyStore } from '../engine/store/faulty-store.js';
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
    expect(placed.body).toMatchObject({ status: 'LIVE', size: '10', price: '0.01' });
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
    expect(placed.body).toMatchObject({ status: 'LIVE', time_in_force: 'GTD', expiration });
    const health = await svc.call('GET', '/healthz');
    expect(health.status).toBe(503);
    expect(health.body).toMatchObject({ status: 'degraded', scheduler: { running: true, failing_timers: 1 } });
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
    expect((await svc.call('GET', '/healthz')).body).toMatchObject({ status: 'ok', scheduler: { failing_timers: 0 } });
  });
});
