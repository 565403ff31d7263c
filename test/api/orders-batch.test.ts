/**
 * Over real HTTP: POST /v2/trade/orders/cancel (batch), DELETE /v2/trade/orders
 * (cancel-all, narrowed by symbol / condition_id) and GET /v2/trade/orders/{order_id}. Every
 * response is also checked against the route table's schema by test/helpers.ts.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../engine/store/sqlite.js';
import { FaultyStore } from '../engine/store/faulty-store.js';
import { startTestService, type TestService } from '../helpers.js';
import { poll, px, Trading } from './trading-kit.js';

const NONE = { canceled: 0, not_found: 0, already_done: 0 };
/** What a batch cancel or cancel-all that found nothing answers. */
const EMPTY = { cancelled: [], not_cancelled: [], count: 0, results: [], counts: NONE };

describe('batch cancel, cancel-all and one order', () => {
  let svc: TestService;
  const tr = new Trading(() => svc);
  const as = (u: string) => tr.as(u);

  beforeAll(async () => {
    svc = await startTestService({ env: { SIM_MAKER_REFILL_MS: '3600000' } });
    await tr.init(['alice', 'bob', 'carol', 'dave']);
  });
  afterAll(() => svc?.close());

  const batch = (u: string, body: unknown, idempotencyKey?: string) =>
    svc.call('POST', '/v2/trade/orders/cancel', {
      body,
      headers: as(u),
      ...(idempotencyKey ? { idempotencyKey } : {}),
    });
  const cancelAll = (u: string, query = '', idempotencyKey?: string) =>
    svc.call('DELETE', `/v2/trade/orders${query}`, { headers: as(u), ...(idempotencyKey ? { idempotencyKey } : {}) });
  const getOrder = (u: string, id: string) =>
    svc.call('GET', `/v2/trade/orders/${encodeURIComponent(id)}`, { headers: as(u) });
  /** A resting buy of `u` far below the touch (stays OPEN). */
  const rest = async (u: string, token: string, price = '0.02', size = '5') => {
    const r = await tr.post(u, { symbol: token, side: 'buy', type: 'LIMIT', price, size });
    expect([r.status, r.body.status]).toEqual([200, 'OPEN']);
    return r.body.order_id as string;
  };
  const openIds = async (u: string) => (await tr.openOrders(u)).map((o) => o.order_id).sort();
  const reserved = async (u: string) => (await svc.call('GET', '/v2/trade/balances', { headers: as(u) })).body.reserved;

  it('a batch of ids in every state, unknown, malformed or not own: one outcome each, none fails it', async () => {
    const a = await tr.freshToken(0.3, 0.6);
    await tr.buyShares('bob', a.token, 20);
    const live = await rest('alice', a.token);
    const partial = await rest('alice', a.token, px(a.bid + 0.01), '10');
    const hit = await tr.post('bob', {
      symbol: a.token,
      side: 'sell',
      type: 'LIMIT',
      price: px(a.bid + 0.01),
      size: '4',
      time_in_force: 'IOC',
    });
    expect(hit.body).toMatchObject({ status: 'FILLED', filled_size: '4' });
    const filled = await tr.post('alice', {
      symbol: a.token,
      side: 'buy',
      type: 'LIMIT',
      price: '0.99',
      size: '5',
      time_in_force: 'IOC',
    });
    expect(filled.body.status).toBe('FILLED');
    const earlier = await rest('alice', a.token, '0.03');
    expect((await svc.call('DELETE', `/v2/trade/orders/${earlier}`, { headers: as('alice') })).status).toBe(200);
    const stop = await tr.post('alice', {
      symbol: a.token,
      side: 'sell',
      type: 'STOP_LOSS',
      price: px(a.bid - 0.1),
      size: '5',
    });
    expect(stop.status).toBe(200);
    const bobs = await rest('bob', a.token, '0.04');

    const ids = [
      live,
      partial,
      filled.body.order_id,
      earlier,
      'ord_00000000-0000-4000-8000-000000000000',
      '../not an id',
      '',
      stop.body.record_id,
      bobs,
      live,
    ];
    const res = await batch('alice', { order_ids: ids });
    expect(res.status).toBe(200);
    expect(res.body.counts).toEqual({ canceled: 2, not_found: 5, already_done: 2 });
    expect(res.body.results.map((r: any) => [r.order_id, r.outcome, r.status])).toEqual([
      [live, 'canceled', 'CANCELED'],
      [partial, 'canceled', 'CANCELED'],
      [filled.body.order_id, 'already_done', 'FILLED'],
      [earlier, 'already_done', 'CANCELED'],
      ['ord_00000000-0000-4000-8000-000000000000', 'not_found', null],
      ['../not an id', 'not_found', null],
      ['', 'not_found', null],
      [stop.body.record_id, 'not_found', null],
      [bobs, 'not_found', null],
    ]);
    // each result carries the order as DELETE order answers it, and why it was not canceled
    expect(res.body.results[1].order).toMatchObject({
      order_id: partial,
      status: 'CANCELED',
      filled_size: '4',
      remaining_size: '0',
    });
    expect(res.body.results[0]).not.toHaveProperty('message');
    expect(res.body.results[2]).toMatchObject({
      order: { order_id: filled.body.order_id, status: 'FILLED' },
      message: expect.stringMatching(/already FILLED/),
    });
    expect(res.body.results[8]).toMatchObject({ order: null, message: `no order ${bobs}` });
    // the other user's order and the stop strategy are untouched; alice's reservations are released
    expect(await openIds('bob')).toEqual([bobs]);
    expect(await openIds('alice')).toEqual([]);
    expect((await tr.strategy('alice', stop.body.record_id)).status).toBe(stop.body.status);
    expect(await reserved('alice')).toBe('0');
    await cancelAll('bob');
  });

  it("a strategy's child order (passive TWAP slice) is canceled as DELETE order does: the TWAP goes on", async () => {
    const t = await tr.freshToken(0.3, 0.6);
    const twap = await tr.post('carol', {
      symbol: t.token,
      side: 'buy',
      type: 'TWAP',
      size: '20',
      price: px(t.bid),
      execution: { interval_sec: 60, duration_sec: 240, passive: true },
    });
    expect(twap.status).toBe(200);
    const slices = await poll(
      'the first slice rests',
      () => tr.openOrders('carol'),
      (o) => o.length === 1,
    );
    expect(slices[0].record_id).toBe(twap.body.record_id);
    const res = await batch('carol', { order_ids: [slices[0].order_id] });
    expect([res.status, res.body.results[0].outcome, res.body.results[0].order.record_id]).toEqual([
      200,
      'canceled',
      twap.body.record_id,
    ]);
    expect(await tr.openOrders('carol')).toEqual([]);
    expect((await tr.strategy('carol', twap.body.record_id)).status).toBe('ACTIVE');
    expect(
      (await svc.call('DELETE', `/v2/trade/strategies/${twap.body.record_id}`, { headers: as('carol') })).status,
    ).toBe(200);
  });

  it("cancel-all narrowed by symbol, then by condition_id, then all; another user's orders stay", async () => {
    const a = await tr.freshToken(0.3, 0.6);
    const b = await tr.freshToken(0.3, 0.6);
    const infoA = svc.services.venue.token(a.token)!;
    const a1 = await rest('dave', a.token, '0.02');
    const a2 = await rest('dave', a.token, '0.03');
    const comp = await rest('dave', infoA.complementTokenId, '0.02');
    const onB = await rest('dave', b.token, '0.02');
    const bobs = await rest('bob', a.token, '0.02');

    const none = await cancelAll('dave', `?symbol=${b.token}&condition_id=${infoA.conditionId}`);
    expect([none.status, none.body]).toEqual([200, EMPTY]);

    const bySymbol = await cancelAll('dave', `?symbol=${a.token}`);
    expect(bySymbol.status).toBe(200);
    // newest first, as open orders list them
    expect(bySymbol.body.results.map((r: any) => [r.order_id, r.outcome, r.status])).toEqual([
      [a2, 'canceled', 'CANCELED'],
      [a1, 'canceled', 'CANCELED'],
    ]);
    expect(bySymbol.body.counts).toEqual({ ...NONE, canceled: 2 });
    expect(await openIds('dave')).toEqual([comp, onB].sort());

    const byCondition = await cancelAll('dave', `?condition_id=${infoA.conditionId.toUpperCase().replace('0X', '0x')}`);
    expect(byCondition.body.results.map((r: any) => [r.order_id, r.outcome])).toEqual([[comp, 'canceled']]);
    expect(await openIds('dave')).toEqual([onB]);

    const all = await cancelAll('dave');
    expect([all.status, all.body.results.map((r: any) => [r.order_id, r.outcome]), all.body.counts]).toEqual([
      200,
      [[onB, 'canceled']],
      { ...NONE, canceled: 1 },
    ]);
    expect(await openIds('dave')).toEqual([]);
    expect(await reserved('dave')).toBe('0');
    expect(await openIds('bob')).toEqual([bobs]);

    const again = await cancelAll('dave');
    expect([again.status, again.body]).toEqual([200, EMPTY]);
    // v1 keeps cancels (spec part 9)
    const v1 = await svc.call('DELETE', '/v1/trade/orders', { headers: as('bob') });
    expect([v1.status, v1.body.results.map((r: any) => r.order_id)]).toEqual([200, [bobs]]);
    // bad filters are 400 and change nothing
    const o = await rest('dave', b.token);
    for (const q of ['?condition_id=0x12', '?symbol=abc']) {
      const bad = await cancelAll('dave', q);
      expect([bad.status, bad.body.error]).toEqual([400, 'invalid_request']);
    }
    expect(await openIds('dave')).toEqual([o]);
    await cancelAll('dave');
  });

  it('cancel-all with an unknown query parameter is 400 and cancels nothing', async () => {
    const a = await tr.freshToken(0.3, 0.6);
    const o = await rest('carol', a.token);
    const before = await svc.call('GET', '/v2/trade/activity?limit=200', { headers: as('carol') });
    for (const q of [
      `?token_id=${a.token}`,
      '?foo=bar',
      `?symbol[]=${a.token}`,
      `?Symbol=${a.token}`,
      `?symbol=${a.token}&market=x`,
    ]) {
      const bad = await cancelAll('carol', q);
      expect([q, bad.status, bad.body.error]).toEqual([q, 400, 'invalid_request']);
      expect(bad.body.message).toMatch(/unknown query parameter .*: this endpoint takes symbol, condition_id, venue$/);
    }
    expect(await openIds('carol')).toEqual([o]);
    expect((await svc.call('GET', '/v2/trade/activity?limit=200', { headers: as('carol') })).body).toEqual(before.body);
    const ok = await cancelAll('carol', `?symbol=${a.token}`);
    expect([ok.status, ok.body.counts]).toEqual([200, { ...NONE, canceled: 1 }]);
  });

  it('a retry with the same Idempotency-Key replays and cancels nothing; the key binds its query too', async () => {
    const a = await tr.freshToken(0.3, 0.6);
    const o1 = await rest('alice', a.token);
    const k1 = randomUUID();
    const first = await batch('alice', { order_ids: [o1] }, k1);
    expect([first.status, first.body.results[0].outcome]).toEqual([200, 'canceled']);
    const replay = await batch('alice', { order_ids: [o1] }, k1);
    expect([replay.status, replay.headers.get('idempotent-replayed'), replay.body]).toEqual([200, 'true', first.body]);
    // run again under a new key, the same batch finds it done
    expect((await batch('alice', { order_ids: [o1] })).body.results[0].outcome).toBe('already_done');
    const reused = await batch('alice', { order_ids: [o1, 'x'] }, k1);
    expect([reused.status, reused.body.error]).toEqual([409, 'idempotency_key_conflict']);

    const o2 = await rest('alice', a.token);
    const k2 = randomUUID();
    const all = await cancelAll('alice', `?symbol=${a.token}`, k2);
    expect(all.body.results.map((r: any) => [r.order_id, r.outcome])).toEqual([[o2, 'canceled']]);
    const o3 = await rest('alice', a.token);
    const allAgain = await cancelAll('alice', `?symbol=${a.token}`, k2);
    expect([allAgain.status, allAgain.headers.get('idempotent-replayed'), allAgain.body]).toEqual([
      200,
      'true',
      all.body,
    ]);
    expect(await openIds('alice')).toEqual([o3]); // the replay canceled nothing
    const otherQuery = await cancelAll('alice', '', k2);
    expect([otherQuery.status, otherQuery.body.error]).toEqual([409, 'idempotency_key_conflict']);
    expect(await openIds('alice')).toEqual([o3]);
    // Idempotency-Key is required on both
    for (const r of [
      await svc.call('POST', '/v2/trade/orders/cancel', {
        body: { order_ids: [o3] },
        headers: as('alice'),
        idempotencyKey: null,
      }),
      await svc.call('DELETE', '/v2/trade/orders', { headers: as('alice'), idempotencyKey: null }),
    ]) {
      expect([r.status, r.body.error, r.body.message]).toEqual([
        400,
        'invalid_request',
        expect.stringMatching(/Idempotency-Key header is required/),
      ]);
    }
    expect(await openIds('alice')).toEqual([o3]);
    await cancelAll('alice');
  });

  it.each([
    ['an empty batch', () => ({ order_ids: [] }), /order_ids must NOT have fewer than 1 items/],
    [
      '101 ids',
      (o: string) => ({ order_ids: [o, ...Array.from({ length: 100 }, (_, i) => `ord_${i}`)] }),
      /order_ids must NOT have more than 100 items/,
    ],
    ['no order_ids', () => ({}), /order_ids is required/],
    ['a non-string id', (o: string) => ({ order_ids: [o, 7] }), /order_ids\.1 must be string/],
    [
      'an id over 256 characters',
      (o: string) => ({ order_ids: [o, 'x'.repeat(257)] }),
      /order_ids\.1 must NOT have more than 256 characters/,
    ],
    ['an unknown property', (o: string) => ({ order_ids: [o], all: true }), /unknown property 'all'/],
  ])('400 for %s, and nothing is canceled', async (_what, body, message) => {
    const a = await tr.freshToken(0.3, 0.6);
    const o = await rest('alice', a.token);
    const res = await batch('alice', body(o));
    expect([res.status, res.body.error]).toEqual([400, 'invalid_request']);
    expect(res.body.message).toMatch(message);
    expect(await openIds('alice')).toEqual([o]);
    await cancelAll('alice');
  });

  it('100 ids is the maximum: accepted, one outcome per id', async () => {
    const a = await tr.freshToken(0.3, 0.6);
    const o = await rest('alice', a.token);
    const ids = [o, ...Array.from({ length: 99 }, (_, i) => `ord_unknown_${i}`)];
    const res = await batch('alice', { order_ids: ids });
    expect([res.status, res.body.results.length, res.body.counts]).toEqual([
      200,
      100,
      { canceled: 1, not_found: 99, already_done: 0 },
    ]);
  });

  it("GET one order through its lifecycle and the open-orders row's shape; 404 for others' ids", async () => {
    const a = await tr.freshToken(0.3, 0.6);
    await tr.buyShares('bob', a.token, 20);
    const id = await rest('alice', a.token, px(a.bid + 0.01), '10');
    const live = await getOrder('alice', id);
    expect([live.status, live.body.status]).toEqual([200, 'OPEN']);
    expect(live.body).toEqual((await tr.openOrders('alice')).find((r) => r.order_id === id));

    await tr.post('bob', {
      symbol: a.token,
      side: 'sell',
      type: 'LIMIT',
      price: px(a.bid + 0.01),
      size: '3',
      time_in_force: 'IOC',
    });
    const partial = await getOrder('alice', id);
    expect(partial.body).toMatchObject({
      order_id: id,
      status: 'PARTIALLY_FILLED',
      filled_size: '3',
      remaining_size: '7',
      avg_price: px(a.bid + 0.01),
    });
    expect(partial.body.revision).toBeGreaterThan(live.body.revision);

    const del = await svc.call('DELETE', `/v2/trade/orders/${id}`, { headers: as('alice') });
    const canceled = await getOrder('alice', id);
    expect([canceled.status, canceled.body]).toEqual([200, del.body]);
    expect(canceled.body).toMatchObject({ status: 'CANCELED', filled_size: '3', remaining_size: '0' });

    const ioc = await tr.post('alice', {
      symbol: a.token,
      side: 'buy',
      type: 'LIMIT',
      price: '0.99',
      size: '5',
      time_in_force: 'IOC',
    });
    expect((await getOrder('alice', ioc.body.order_id)).body).toEqual(ioc.body);

    const gtd = await tr.post('alice', {
      symbol: a.token,
      side: 'buy',
      type: 'LIMIT',
      price: '0.02',
      size: '5',
      // far enough ahead to be in the future when a loaded machine validates it
      expiration: Date.now() + 2_000,
    });
    expect((await getOrder('alice', gtd.body.order_id)).body).toMatchObject({ status: 'OPEN', time_in_force: 'GTD' });
    const expired = await poll(
      'the GTD order expires',
      () => getOrder('alice', gtd.body.order_id),
      (r) => r.body.status === 'EXPIRED',
    );
    expect(expired.body).toMatchObject({
      order_id: gtd.body.order_id,
      status: 'EXPIRED',
      remaining_size: '0',
      expiration: gtd.body.expiration,
    });

    const stop = await tr.post('alice', {
      symbol: a.token,
      side: 'sell',
      type: 'STOP_LOSS',
      price: px(a.bid - 0.1),
      size: '5',
    });
    for (const [u, oid] of [
      ['bob', id],
      ['alice', 'ord_nope'],
      ['alice', stop.body.record_id],
    ]) {
      const r = await getOrder(u!, oid!);
      expect([r.status, r.body]).toEqual([404, { error: 'not_found', message: `no order ${oid}` }]);
    }
    expect(
      (await svc.call('DELETE', `/v2/trade/strategies/${stop.body.record_id}`, { headers: as('alice') })).status,
    ).toBe(200);
  });

  it('scopes: trade.cancel for batch and cancel-all, trade.read for GET one order', async () => {
    const a = await tr.freshToken(0.3, 0.6);
    const o = await rest('alice', a.token);
    const mint = async (scopes: string[]) =>
      (await svc.call('POST', '/v2/trade/users/alice/api-keys', { body: { scopes } })).body.api_key as string;
    const readOnly = await mint(['trade.read']);
    const cancelOnly = await mint(['trade.cancel']);
    const forbidden = [
      await svc.call('POST', '/v2/trade/orders/cancel', { token: readOnly, body: { order_ids: [o] } }),
      await svc.call('DELETE', '/v2/trade/orders', { token: readOnly }),
      await svc.call('GET', `/v2/trade/orders/${o}`, { token: cancelOnly }),
    ];
    for (const r of forbidden) expect([r.status, r.body.error], JSON.stringify(r.body)).toEqual([403, 'forbidden']);
    expect(await openIds('alice')).toEqual([o]);
    const unauth = await svc.call('GET', `/v2/trade/orders/${o}`, { token: null });
    expect(unauth.status).toBe(401);

    const got = await svc.call('GET', `/v2/trade/orders/${o}`, { token: readOnly });
    expect([got.status, got.body.order_id, got.body.status]).toEqual([200, o, 'OPEN']);
    const res = await svc.call('POST', '/v2/trade/orders/cancel', { token: cancelOnly, body: { order_ids: [o] } });
    expect([res.status, res.body.results[0].outcome]).toEqual([200, 'canceled']);
    const all = await svc.call('DELETE', '/v2/trade/orders', { token: cancelOnly });
    expect([all.status, all.body]).toEqual([200, EMPTY]);
  });
});

describe('a batch cancel caught by a store fault', () => {
  let svc: TestService;
  let store: FaultyStore;
  const tr = new Trading(() => svc);

  beforeAll(async () => {
    store = new FaultyStore(await SqliteStore.open(null));
    svc = await startTestService({ store, env: { SIM_MAKER_REFILL_MS: '3600000' } });
    await tr.init(['alice']);
  });
  afterAll(async () => {
    store.clear();
    await svc?.close();
  });

  it("fails whole (5xx, not stored); the retry runs and reports the first attempt's as already_done", async () => {
    const a = await tr.freshToken(0.3, 0.6);
    const ids: string[] = [];
    for (const p of ['0.02', '0.03', '0.04'])
      ids.push(
        (await tr.post('alice', { symbol: a.token, side: 'buy', type: 'LIMIT', price: p, size: '5' })).body.order_id,
      );
    const key = randomUUID();
    store.failWhen((i) => i.collection === 'actors' && i.filter?._id === ids[1], { ops: ['findOne'] });
    const failed = await svc.call('POST', '/v2/trade/orders/cancel', {
      body: { order_ids: ids },
      headers: tr.as('alice'),
      idempotencyKey: key,
    });
    // as DELETE order answers a store fault
    expect([failed.status, failed.body.error]).toEqual([500, 'internal_error']);
    store.clear();
    expect((await tr.openOrders('alice')).map((o) => o.order_id)).toEqual([ids[1]]);
    const retry = await svc.call('POST', '/v2/trade/orders/cancel', {
      body: { order_ids: ids },
      headers: tr.as('alice'),
      idempotencyKey: key,
    });
    expect([retry.status, retry.headers.get('idempotent-replayed')]).toEqual([200, null]);
    expect(retry.body.results.map((r: any) => [r.order_id, r.outcome, r.status])).toEqual([
      [ids[0], 'already_done', 'CANCELED'],
      [ids[1], 'canceled', 'CANCELED'],
      [ids[2], 'already_done', 'CANCELED'],
    ]);
    expect(await tr.openOrders('alice')).toEqual([]);
  });
});
