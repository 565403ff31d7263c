import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmbeddedStore } from '../../engine/store/embedded.js';
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
    store = new FaultyStore(await EmbeddedStore.open(null));
    svc = await startTestService({ store });
    await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'alice' } });
    token = (await svc.call('GET', '/v2/trade/markets?limit=1')).body.markets[0].tokens[0].token_id;
  });
  afterAll(async () => {
    store.clear();
    await svc.close();
  });

  it('health degraded and 503 for venue operations while it lasts; the caught order completes after; nothing lost', async () => {
    expect((await svc.call('GET', '/healthz')).body).toMatchObject({ status: 'ok', venue: { ok: true, pending_writes: 0 } });
    store.failWhen((i) => i.collection === 'venueJournal');
    const caught = svc.call('POST', '/v2/trade/order', { body: { symbol: token, side: 'buy', type: 'LIMIT', price: '0.01', size: '10' }, headers: alice });
    let health = (await svc.call('GET', '/healthz'));
    for (let i = 0; i < 100 && health.status === 200; i++) {
      await new Promise((r) => setTimeout(r, 20));
      health = await svc.call('GET', '/healthz');
    }
    expect(health.status).toBe(503);
    expect(health.body).toMatchObject({ status: 'degraded', venue: { ok: false, pending_writes: 1, error: expect.stringMatching(/journal write failed/) } });

    const refused = await svc.call('POST', '/v2/trade/order', { body: { symbol: token, side: 'buy', type: 'LIMIT', price: '0.01', size: '10' }, headers: alice });
    expect(refused.status).toBe(503);
    expect(refused.body).toEqual({ error: 'unavailable', message: expect.stringMatching(/venue cannot record operations right now.*nothing was changed/) });
    expect(refused.headers.get('retry-after')).toBe('1');

    store.clear();
    const placed = await caught;
    expect(placed.status).toBe(200);
    expect(placed.body).toMatchObject({ status: 'LIVE', size: '10', price: '0.01' });
    expect((await svc.call('GET', '/healthz')).body).toMatchObject({ status: 'ok', venue: { ok: true, pending_writes: 0 } });
    // the refused request left nothing; the caught one is there once
    const activity = (await svc.call('GET', '/v2/trade/activity', { headers: alice })).body.activity;
    expect(activity.map((a: { id: string }) => a.id)).toEqual([placed.body.order_id]);
    expect((await svc.call('GET', '/v2/trade/balances', { headers: alice })).body).toMatchObject({ reserved: '0.1' });
  });

  it('a timer that cannot be armed: the order is placed all the same (persisted means done), health shows it, the repair arms it and the GTD order expires on time', async () => {
    store.failWhen((i) => i.collection === 'agendaJobs');
    const expiration = Date.now() + 1500;
    const placed = await svc.call('POST', '/v2/trade/order', { body: { symbol: token, side: 'buy', type: 'LIMIT', price: '0.01', size: '10', expiration }, headers: alice });
    expect(placed.status).toBe(200);
    expect(placed.body).toMatchObject({ status: 'LIVE', time_in_force: 'GTD', expiration });
    const health = await svc.call('GET', '/healthz');
    expect(health.status).toBe(503);
    expect(health.body).toMatchObject({ status: 'degraded', scheduler: { running: true, failing_timers: 1 } });
    store.clear();
    let order = placed.body;
    for (let i = 0; i < 150 && order.status !== 'EXPIRED'; i++) {
      await new Promise((r) => setTimeout(r, 50));
      order = (await svc.call('GET', '/v2/trade/activity', { headers: alice })).body.activity.find((a: { id: string }) => a.id === placed.body.order_id);
    }
    expect(order.status).toBe('EXPIRED');
    expect(Date.now()).toBeGreaterThanOrEqual(expiration);
    expect((await svc.call('GET', '/healthz')).body).toMatchObject({ status: 'ok', scheduler: { failing_timers: 0 } });
  });
});

/**
 * The embedded store on disk when a data file cannot be appended to (as with
 * `chattr +i venueJournal.db`): the operations wait unacknowledged and are retried, never dropped
 * (a dropped append would leave memory and disk disagreeing: a restart would undo an acknowledged fill); health
 * says so and mutating requests answer 503 meanwhile; once the file takes writes again, the caught
 * request completes and its lines are on disk.
 */
describe('embedded store: a data file that cannot be written', () => {
  let svc: TestService;
  let dir: string;
  let broken = false;
  const storeLog: Array<{ level: number; msg: string; file?: string }> = [];

  /** Makes the appends of `collection` fail (EIO) while `broken` holds, through the appender's file handle. */
  function breakAppends(store: EmbeddedStore, collection: string): void {
    const c = (store as unknown as { opened: Map<string, { appender: object }> }).opened.get(collection)!;
    let real: unknown = null;
    const failing = { appendFile: () => Promise.reject(Object.assign(new Error('EIO: i/o error, write'), { code: 'EIO' })), close: async () => {} };
    Object.defineProperty(c.appender, 'handle', {
      get: () => (broken ? failing : real),
      set: (h: unknown) => void (real = h),
      configurable: true,
    });
  }

  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-eio-'));
    const store = await EmbeddedStore.open(dir, { log: pino({ level: 'info' }, { write: (l: string) => void storeLog.push(JSON.parse(l)) }) });
    svc = await startTestService({ store });
    await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'alice' } });
    breakAppends(store, 'venueJournal');
  });
  afterAll(async () => {
    broken = false;
    await svc.close();
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('the caught order waits and lands; health degraded and 503 meanwhile; the fill is in the file afterwards', async () => {
    const alice = { 'x-partner-user-id': 'alice' };
    const token = (await svc.call('GET', '/v2/trade/markets?limit=1')).body.markets[0].tokens[0].token_id;
    broken = true;
    const caught = svc.call('POST', '/v2/trade/order', { body: { symbol: token, side: 'buy', type: 'LIMIT', price: '0.99', size: '10', time_in_force: 'IOC' }, headers: alice });
    let health = await svc.call('GET', '/healthz');
    for (let i = 0; i < 100 && health.status === 200; i++) {
      await new Promise((r) => setTimeout(r, 20));
      health = await svc.call('GET', '/healthz');
    }
    expect(health).toMatchObject({ status: 503, body: { status: 'degraded', store: { ok: false, error: expect.stringMatching(/^venueJournal: EIO/) } } });
    const refused = await svc.call('POST', '/v2/trade/order', { body: { symbol: token, side: 'buy', type: 'LIMIT', price: '0.01', size: '10' }, headers: alice });
    expect(refused).toMatchObject({ status: 503, body: { error: 'unavailable', message: expect.stringMatching(/store cannot record changes right now/) } });
    expect(refused.headers.get('retry-after')).toBe('1');
    broken = false;
    const placed = await caught;
    expect(placed).toMatchObject({ status: 200, body: { status: 'FILLED', filled_size: '10' } });
    expect((await svc.call('GET', '/healthz')).status).toBe(200);
    // the store said so in the log, once when it started failing and once when it recovered
    const file = path.join(dir, 'venueJournal.db');
    expect(storeLog.filter((l) => l.file === file).map((l) => [l.level, l.msg.split(';')[0]])).toEqual([
      [50, `store: appending to ${file} failed`],
      [40, `store: appending to ${file} works again`],
    ]);
    const journal = await fs.readFile(path.join(dir, 'venueJournal.db'), 'utf8');
    expect(journal).toContain(placed.body.order_id);
    const activity = (await svc.call('GET', '/v2/trade/activity', { headers: alice })).body.activity;
    expect(activity.map((a: { id: string }) => a.id)).toEqual([placed.body.order_id]);
  });
});
