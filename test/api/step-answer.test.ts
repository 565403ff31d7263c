import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../engine/store/sqlite.js';
import { FaultyStore, type OpInfo } from '../engine/store/faulty-store.js';
import { startTestService, type TestService } from '../helpers.js';
import { Trading } from './trading-kit.js';

/**
 * The answer of a request that creates an order or a strategy is stored in the same transaction
 * as each step of that actor (ActorHost.bindStepWrites, IdempotencyClaim.recordWith): a step never
 * lands without the answer it produced, nor the answer without its step. An order's creation is
 * the exception: it is written alone (the venue's answer always follows it within the request),
 * and a crash between the two is answered from the order found by its id (test/api/idempotency.test.ts).
 * Fault injection through
 * the real path (HTTP on an app over a {@link FaultyStore}); `kill -9` of a spawned service during
 * a burst: test/api/sqlite-crash.test.ts.
 */
const ENV = { SIM_MAKER_REFILL_MS: '3600000', SIM_INITIAL_PUSD: '1000000' };

/** The idempotency record's writes: `running` with an answer (with a step), `done` (the request completed). */
const answerWrite = (state: 'running' | 'done') => (i: OpInfo) =>
  i.collection === 'idempotencyKeys' &&
  i.op === 'replaceOne' &&
  (i.doc as { state?: string } | undefined)?.state === state;
const actorInsert = (prefix: string) => (i: OpInfo) =>
  i.collection === 'actors' && i.op === 'insertOne' && String(i.doc?._id).startsWith(prefix);

describe("a request's answer and the actor step that produced it commit together", () => {
  const running: TestService[] = [];
  afterEach(async () => {
    for (const s of running.splice(0)) await s.close().catch(() => undefined);
  });

  async function setup(): Promise<{
    svc: TestService;
    store: FaultyStore;
    tr: Trading;
    stored: (name: string, prefix: string) => Promise<number>;
  }> {
    const store = new FaultyStore(await SqliteStore.open(null));
    const svc = await startTestService({ store, env: ENV });
    running.push(svc);
    const tr = await new Trading(() => svc).init(['alice', 'bob']);
    const stored = async (name: string, prefix: string) =>
      (await (await store.collection(name)).find({})).filter((d) => d._id.startsWith(prefix)).length;
    return { svc, store, tr, stored };
  }

  it("an order's creation is written alone; the answer fails with the venue's answer: redelivered", async () => {
    const { svc, store, tr, stored } = await setup();
    const { token, bid } = await tr.freshToken();
    const body = { symbol: token, side: 'buy', type: 'LIMIT', price: (bid - 0.05).toFixed(2), size: '5' };
    const key = randomUUID();
    const keys = await stored('idempotencyKeys', '');
    const accept = store.failWhen(answerWrite('running'), { times: 1 });
    const first = await svc.call('POST', '/v2/trade/order', { body, headers: tr.as('alice'), idempotencyKey: key });
    expect(accept.fired).toBe(1);
    expect(first).toMatchObject({ status: 200, body: { status: 'OPEN', size: '5' } });
    // the creation (revision 1) carried no answer; the venue's answer (revision 2) landed with it on the second try
    expect(await (await store.collection('actors')).find({ _id: first.body.order_id })).toMatchObject([
      { revision: 2, status: 'OPEN' },
    ]);
    expect(await stored('idempotencyKeys', '')).toBe(keys + 1);
    const replay = await svc.call('POST', '/v2/trade/order', { body, headers: tr.as('alice'), idempotencyKey: key });
    expect(replay).toMatchObject({ status: 200, body: first.body });
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect((await tr.openOrders('alice')).map((o) => o.order_id)).toEqual([first.body.order_id]);
  });

  it("the answer's write fails with the fill's step: rolled back whole, redelivered, the fill answered", async () => {
    const { svc, store, tr } = await setup();
    const { token } = await tr.freshToken();
    const body = { symbol: token, side: 'buy', type: 'LIMIT', price: '0.99', size: '5', time_in_force: 'IOC' };
    const key = randomUUID();
    const fill = store.failWhen(answerWrite('running'), { times: 1 }); // the creation carries no answer
    const first = await svc.call('POST', '/v2/trade/order', { body, headers: tr.as('alice'), idempotencyKey: key });
    expect(fill.fired).toBe(1);
    expect(first).toMatchObject({ status: 200, body: { status: 'FILLED', filled_size: '5' } });
    // two steps persisted (creation, fill): the failed attempt of the second left nothing
    expect(await (await store.collection('actors')).find({ _id: first.body.order_id })).toMatchObject([
      { revision: 2, status: 'FILLED' },
    ]);
    const replay = await svc.call('POST', '/v2/trade/order', { body, headers: tr.as('alice'), idempotencyKey: key });
    expect(replay).toMatchObject({ status: 200, body: first.body });
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
  });

  it("an order crossing another user's: both step in one host batch, the taker's answer stored with it", async () => {
    const { svc, store, tr } = await setup();
    const { token, bid } = await tr.freshToken(0.3, 0.7);
    await tr.buyShares('bob', token, 5);
    const inside = (bid + 0.01).toFixed(2); // inside the two-tick spread: only bob's order is there
    const rest = await tr.post('bob', { symbol: token, side: 'sell', type: 'LIMIT', price: inside, size: '5' });
    expect(rest).toMatchObject({ status: 200, body: { status: 'OPEN' } });
    const body = { symbol: token, side: 'buy', type: 'LIMIT', price: inside, size: '5', time_in_force: 'IOC' };
    const key = randomUUID();
    const taken = await svc.call('POST', '/v2/trade/order', { body, headers: tr.as('alice'), idempotencyKey: key });
    expect(taken).toMatchObject({ status: 200, body: { status: 'FILLED', filled_size: '5' } });
    expect(await tr.order('bob', rest.body.order_id)).toMatchObject({ status: 'FILLED' });
    const records = await (
      await store.collection<{ _id: string; state: string; body: string }>('idempotencyKeys')
    ).find({});
    const mine = records.filter((r) => r.body?.includes(taken.body.order_id));
    expect(mine.map((r) => ({ state: r.state, body: JSON.parse(r.body) }))).toEqual([
      { state: 'running', body: taken.body },
    ]);
    const replay = await svc.call('POST', '/v2/trade/order', { body, headers: tr.as('alice'), idempotencyKey: key });
    expect(replay).toMatchObject({ status: 200, body: taken.body });
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
  });

  it("the order's insert fails: no answer is stored either; the retry with the same key places it", async () => {
    const { svc, store, tr, stored } = await setup();
    const { token } = await tr.freshToken();
    const body = { symbol: token, side: 'buy', type: 'LIMIT', price: '0.99', size: '5', time_in_force: 'IOC' };
    const key = randomUUID();
    const keys = await stored('idempotencyKeys', '');
    store.failWhen(actorInsert('ord_'), { times: 1 });
    const first = await svc.call('POST', '/v2/trade/order', { body, headers: tr.as('alice'), idempotencyKey: key });
    expect(first.status).toBeGreaterThanOrEqual(500);
    expect(await stored('idempotencyKeys', '')).toBe(keys);
    const retry = await svc.call('POST', '/v2/trade/order', { body, headers: tr.as('alice'), idempotencyKey: key });
    expect(retry).toMatchObject({ status: 200, body: { status: 'FILLED', filled_size: '5' } });
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
  });

  it("the answer stored with the steps is the request's record: after a restart it replays, places none", async () => {
    const inner = await SqliteStore.open(null);
    const first = new FaultyStore(inner, { keepOpen: true });
    const svc = await startTestService({ store: first, env: ENV });
    running.push(svc);
    const tr = await new Trading(() => svc).init(['alice']);
    const { token } = await tr.freshToken();
    const body = { symbol: token, side: 'buy', type: 'LIMIT', price: '0.99', size: '5', time_in_force: 'IOC' };
    const key = randomUUID();
    const placed = await svc.call('POST', '/v2/trade/order', { body, headers: tr.as('alice'), idempotencyKey: key });
    expect(placed).toMatchObject({ status: 200, body: { status: 'FILLED', filled_size: '5' } });
    // written by the order's steps, in their transactions; the completion had nothing to add
    const records = await (
      await inner.collection<{ _id: string; state: string; body: string }>('idempotencyKeys')
    ).find({});
    const mine = records.filter((r) => r.body?.includes(placed.body.order_id));
    expect(mine.map((r) => ({ state: r.state, body: JSON.parse(r.body) }))).toEqual([
      { state: 'running', body: placed.body },
    ]);
    await svc.close();
    const again = await startTestService({ store: inner, env: ENV });
    running.push(again);
    const retry = await again.call('POST', '/v2/trade/order', { body, headers: tr.as('alice'), idempotencyKey: key });
    expect(retry).toMatchObject({ status: 200, body: placed.body });
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect((await (await inner.collection('actors')).find({ kind: 'order' })).length).toBe(1);
    const positions = (await again.call('GET', '/v2/trade/positions', { headers: tr.as('alice') })).body.positions;
    expect(positions).toMatchObject([{ size: '5' }]); // bought once
  });

  it("a strategy's id holds its first attempt's time; after a crash the retry replays it, arms none", async () => {
    const inner = await SqliteStore.open(null);
    const svc = await startTestService({ store: new FaultyStore(inner, { keepOpen: true }), env: ENV });
    running.push(svc);
    const tr = await new Trading(() => svc).init(['alice']);
    const { token, bid } = await tr.freshToken(0.3, 0.7);
    await tr.buyShares('alice', token, 10);
    const body = { symbol: token, side: 'sell', type: 'STOP_LOSS', price: (bid - 0.1).toFixed(2), size: '10' };
    const key = randomUUID();
    const before = Date.now();
    const armed = await svc.call('POST', '/v2/trade/order', { body, headers: tr.as('alice'), idempotencyKey: key });
    const after = Date.now();
    expect(armed).toMatchObject({ status: 200, body: { type: 'STOP_LOSS', status: 'ACTIVE', record_id: /^stg_/ } });
    // stg_ and a time-ordered UUID: its first 48 bits are the claim's time (epoch ms)
    const id: string = armed.body.record_id;
    expect(id).toMatch(/^stg_[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const atMs = parseInt(id.slice(4, 12) + id.slice(13, 17), 16);
    expect(atMs).toBeGreaterThanOrEqual(before);
    expect(atMs).toBeLessThanOrEqual(after);
    // the process dies (its claims in memory with it); the answer committed with the creation
    await svc.close();
    const again = await startTestService({ store: inner, env: ENV });
    running.push(again);
    const retry = await again.call('POST', '/v2/trade/order', { body, headers: tr.as('alice'), idempotencyKey: key });
    expect(retry).toMatchObject({ status: 200, body: { record_id: id, status: 'ACTIVE' } });
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect((await (await inner.collection('actors')).find({ kind: 'strategy' })).map((r) => r._id)).toEqual([id]);
  });

  it("a strategy: the answer's write fails with its creation: neither lands; the retry arms it once", async () => {
    const { svc, store, tr, stored } = await setup();
    const { token, bid } = await tr.freshToken(0.3, 0.7);
    await tr.buyShares('alice', token, 10);
    const body = { symbol: token, side: 'sell', type: 'STOP_LOSS', price: (bid - 0.1).toFixed(2), size: '10' };
    const key = randomUUID();
    store.failWhen(answerWrite('running'), { times: 1 });
    const first = await svc.call('POST', '/v2/trade/order', { body, headers: tr.as('alice'), idempotencyKey: key });
    expect(first.status).toBeGreaterThanOrEqual(500);
    expect(await stored('actors', 'stg_')).toBe(0);
    const retry = await svc.call('POST', '/v2/trade/order', { body, headers: tr.as('alice'), idempotencyKey: key });
    expect(retry).toMatchObject({ status: 200, body: { type: 'STOP_LOSS', status: 'ACTIVE', size: '10' } });
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
    const replay = await svc.call('POST', '/v2/trade/order', { body, headers: tr.as('alice'), idempotencyKey: key });
    expect(replay).toMatchObject({ status: 200, body: { record_id: retry.body.record_id, status: 'ACTIVE' } });
    expect(await stored('actors', 'stg_')).toBe(1);
  });
});
