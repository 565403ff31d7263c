import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StrategyContext } from '../../machines/strategy-kit.js';
import { SqliteStore } from '../../engine/store/sqlite.js';
import { sellThrough as sellThroughBids, tokenPicker } from '../api/trading-kit.js';
import { startTestService, type TestService } from '../helpers.js';
import { FaultyStore, type ActiveRule, type FaultRule, type HeldRule, type OpInfo } from './store/faulty-store.js';

/**
 * Failures between the strategy engine and the store become state
 * (never only a log line), and DELETE strategy answers what the machine decided. Faults are
 * injected through the store the service runs on (a wrapper over the SQLite store whose chosen
 * writes of the `actors` collection fail or wait for the test).
 */

/** A write of the `actors` collection as the rules below see it. */
interface Write {
  op: 'insert' | 'update';
  /** `_id` of the document written. */
  id: string;
  doc: Record<string, unknown>;
}

/** The `actors` insert or update `info` is, as a {@link Write} (null: another operation). */
function writeOf(info: OpInfo): Write | null {
  if (info.collection !== 'actors') return null;
  if (info.op === 'insertOne')
    return { op: 'insert', id: String(info.doc?._id), doc: (info.doc ?? {}) as Record<string, unknown> };
  if (info.op === 'updateOne') return { op: 'update', id: String(info.filter?._id), doc: info.set ?? {} };
  return null;
}

/** A rule over `actors` writes matching `match`, failing with the message the assertions name. */
function actorsRule(match: (w: Write) => boolean, times: number): Partial<FaultRule> {
  return {
    collections: ['actors'],
    ops: ['insertOne', 'updateOne'],
    where: (info) => {
      const w = writeOf(info);
      return w !== null && match(w);
    },
    times,
    message: (info) => `injected store fault: ${writeOf(info)!.op} of ${writeOf(info)!.id}`,
  };
}

/** The next `times` `actors` writes matching `match` fail (shared FaultyStore, test/engine/store/faulty-store.ts). */
const failWrites = (store: FaultyStore, match: (w: Write) => boolean, times = 1): ActiveRule =>
  store.add({ ...actorsRule(match, times) });

/** The next `actors` write matching `match` waits until `release()` (with `fail`: then it fails). */
const holdWrite = (store: FaultyStore, match: (w: Write) => boolean): HeldRule => store.hold(actorsRule(match, 1));

/** A price as the API writes it. */
const px = (x: number) => String(Number(x.toFixed(2)));

/**
 * Lets queued work run, a turn of the event loop at a time, until `done()` holds; for up to 15 s (a
 * number of turns is no bound: what the work waits for, a request over loopback, takes real time on a
 * loaded machine).
 */
async function until(done: () => boolean, what: string): Promise<void> {
  const end = performance.now() + 15_000;
  while (!done() && performance.now() < end) await new Promise((r) => setImmediate(r));
  if (!done()) throw new Error(`never happened: ${what}`);
}

describe('strategy engine failures become state', () => {
  let svc: TestService;
  let store: FaultyStore;
  let markets: any[];
  const as = (u: string) => ({ 'x-partner-user-id': u });
  const post = (u: string, body: unknown) => svc.call('POST', '/v2/trade/order', { body, headers: as(u) });
  const book = async (t: string) => (await svc.call('GET', `/v2/trade/book?token_id=${t}&depth=10`)).body;
  const strategy = async (u: string, id: string) =>
    (await svc.call('GET', '/v2/trade/strategies?limit=500', { headers: as(u) })).body.strategies.find(
      (s: any) => s.record_id === id,
    );
  const openOrders = async (u: string) =>
    (await svc.call('GET', '/v2/trade/orders/open', { headers: as(u) })).body.orders;
  const idle = () => svc.services.strategies.idle();
  const stateOf = (id: string) => String(svc.services.host.snapshotOf(id)?.value);
  /** A 0.01-tick token with a two-tick spread whose best bid lies in [minBid, maxBid], books untouched. */
  const freshToken = tokenPicker(() => markets, book);
  /** bob sells into the bids down to (and including) price `p`, so the best bid ends below `p`. */
  const sellThrough = (token: string, p: string) => sellThroughBids(post, book, token, p);
  const isStrategyUpdate = (id: string) => (w: Write) => w.op === 'update' && w.id === id;
  const isInsertOf = (id: string) => (w: Write) => w.op === 'insert' && w.id === id;

  beforeAll(async () => {
    store = new FaultyStore(await SqliteStore.open(null));
    svc = await startTestService({ store, env: { SIM_MAKER_REFILL_MS: '3600000', SIM_INITIAL_PUSD: '1000000' } });
    for (const u of ['alice', 'bob']) await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: u } });
    markets = (await svc.call('GET', '/v2/trade/markets?limit=500')).body.markets;
  });
  afterAll(() => svc.close());

  describe('15: a fired price trigger is delivered or armed again', () => {
    it('the stop whose touch could not be written still fires: retried on the current touch, counted', async () => {
      const { token, bid } = await freshToken(0.3);
      await post('alice', {
        symbol: token,
        side: 'buy',
        type: 'LIMIT',
        price: '0.99',
        size: '10',
        time_in_force: 'IOC',
      });
      const level = px(bid - 0.01);
      const res = await post('alice', { symbol: token, side: 'sell', type: 'STOP_LOSS', price: level, size: '10' });
      expect(res).toMatchObject({ status: 200, body: { status: 'ACTIVE' } });
      const id = res.body.record_id;
      const failuresBefore = svc.services.strategies.deliveryFailures;
      const fault = failWrites(store, isStrategyUpdate(id)); // the write of the fired stop's book.touch
      await sellThrough(token, px(bid));
      await idle();
      expect(fault.hits).toEqual([id]);
      expect(svc.services.strategies.deliveryFailures).toBe(failuresBefore + 1);
      expect(await strategy('alice', id)).toMatchObject({
        status: 'COMPLETED',
        filled_size: '10',
        executed_price: level,
        order_ids: [`ord_${id}_1`],
      });
    });

    it('a lasting fault: the stop stays armed (abandoned, counted), fires at the next touch once healed', async () => {
      const { token, bid } = await freshToken(0.3);
      await post('alice', {
        symbol: token,
        side: 'buy',
        type: 'LIMIT',
        price: '0.99',
        size: '10',
        time_in_force: 'IOC',
      });
      const level = px(bid - 0.01);
      const res = await post('alice', { symbol: token, side: 'sell', type: 'STOP_LOSS', price: level, size: '10' });
      const id = res.body.record_id;
      const abandonedBefore = svc.services.strategies.deliveriesAbandoned;
      const fault = failWrites(store, isStrategyUpdate(id), 1000);
      await sellThrough(token, px(bid));
      await idle();
      expect(fault.hits.length).toBe(6); // the first delivery and 5 retries
      expect(svc.services.strategies.deliveriesAbandoned).toBe(abandonedBefore + 1);
      expect(svc.services.strategies.triggers.has(id)).toBe(true); // armed again, not lost
      expect(await strategy('alice', id)).toMatchObject({ status: 'ACTIVE' });
      fault.remove(); // the store heals
      // the next touch change fires it: bob offers below the ask (the bid is still at the level)
      await post('bob', { symbol: token, side: 'buy', type: 'LIMIT', price: '0.99', size: '10', time_in_force: 'IOC' });
      expect(
        (await post('bob', { symbol: token, side: 'sell', type: 'LIMIT', price: px(bid + 0.01), size: '5' })).body
          .status,
      ).toBe('OPEN');
      await idle();
      expect(await strategy('alice', id)).toMatchObject({
        status: 'COMPLETED',
        filled_size: '10',
        order_ids: [`ord_${id}_1`],
      });
    });
  });

  describe('16: a child order that cannot be placed reaches its strategy', () => {
    it('TWAP: a slice not placed is lost (warning), its shares roll into the next, the TWAP completes', async () => {
      const { token, ask } = await freshToken(0.2, 0.6);
      // the first slice's order cannot be written
      const fault = failWrites(store, (w) => w.op === 'insert' && /^ord_stg_.*_1$/.test(w.id));
      const res = await post('alice', {
        symbol: token,
        side: 'buy',
        type: 'TWAP',
        size: '30',
        price: px(ask),
        execution: { interval_sec: 10, duration_sec: 30 },
      });
      expect(res).toMatchObject({ status: 200, body: { status: 'ACTIVE' } });
      const id = res.body.record_id;
      expect(fault.hits).toEqual([`ord_${id}_1`]);
      await idle();
      let s = await strategy('alice', id);
      expect(s).toMatchObject({ status: 'ACTIVE', slices_done: 1, filled_size: null, order_ids: [] });
      expect(s.warnings).toEqual([
        expect.stringMatching(
          new RegExp(
            '^slice 1 of 3 could not be placed \\(placement_failed — injected store fault: insert of ' +
              'ord_stg_.*_1\\): its shares roll into the next slices$',
          ),
        ),
      ]);
      expect(stateOf(id)).toBe('waiting');
      for (const k of [2, 3]) {
        const c = svc.services.host.snapshotOf(id)!.context as StrategyContext;
        await svc.services.host.deliverTimer({ actorId: id, timerName: 'slice', atMs: c.deadlines.slice! });
        await idle();
        expect((await strategy('alice', id)).slices_done).toBe(k);
      }
      s = await strategy('alice', id);
      expect(s).toMatchObject({
        status: 'COMPLETED',
        filled_size: '30',
        message: 'all shares traded',
        order_ids: [`ord_${id}_2`, `ord_${id}_3`],
      });
    });

    it('TWAP: no slice can be placed → FAILED at the end time with the reason in message (not ACTIVE)', async () => {
      const { token, ask } = await freshToken(0.2, 0.6);
      const fault = failWrites(store, (w) => w.op === 'insert' && /^ord_stg_.*_\d$/.test(w.id), 3);
      const res = await post('alice', {
        symbol: token,
        side: 'buy',
        type: 'TWAP',
        size: '30',
        price: px(ask),
        execution: { interval_sec: 10, duration_sec: 30 },
      });
      const id = res.body.record_id;
      for (const name of ['slice', 'slice', 'end']) {
        const c = svc.services.host.snapshotOf(id)!.context as StrategyContext;
        await svc.services.host.deliverTimer({ actorId: id, timerName: name, atMs: c.deadlines[name]! });
        await idle();
      }
      expect(fault.hits).toEqual([`ord_${id}_1`, `ord_${id}_2`, `ord_${id}_3`]);
      const s = await strategy('alice', id);
      expect(s).toMatchObject({
        status: 'FAILED',
        filled_size: null,
        message: 'duration over; 3 slices could not be placed and nothing filled (see warnings)',
      });
      expect(s.warnings).toHaveLength(3);
    });

    it("a child's report that could not be written is retried with its latest state: no TWAP hangs", async () => {
      const { token, ask } = await freshToken(0.2, 0.6);
      const failuresBefore = svc.services.strategies.deliveryFailures;
      // the TWAP's first write after its creation fails three times: every report of its only slice
      // (SUBMITTED, FILLED, and the placement's own) is lost unless retried
      const fault = failWrites(store, (w) => w.op === 'update' && /^stg_/.test(w.id) && w.doc.revision === 2, 3);
      const res = await post('alice', {
        symbol: token,
        side: 'buy',
        type: 'TWAP',
        size: '10',
        price: px(ask),
        execution: { interval_sec: 10, duration_sec: 10 },
      });
      const id = res.body.record_id;
      await idle();
      expect(fault.hits).toEqual([id, id, id]);
      expect(svc.services.strategies.deliveryFailures).toBeGreaterThanOrEqual(failuresBefore + 3);
      expect(await strategy('alice', id)).toMatchObject({
        status: 'COMPLETED',
        filled_size: '10',
        order_ids: [`ord_${id}_1`],
      });
    });

    it('ICEBERG: a clip not placed is retried (ACTIVE, warning, retry timer), then works', async () => {
      const { token, bid } = await freshToken(0.2, 0.6);
      const fault = failWrites(store, (w) => w.op === 'insert' && /^ord_stg_.*_1$/.test(w.id));
      const res = await post('alice', {
        symbol: token,
        side: 'buy',
        type: 'ICEBERG',
        price: px(bid),
        size: '30',
        execution: { clip_size: '10' },
      });
      expect(res.status).toBe(200);
      const id = res.body.record_id;
      expect(fault.hits).toEqual([`ord_${id}_1`]);
      await idle();
      let s = await strategy('alice', id);
      expect(s).toMatchObject({
        status: 'ACTIVE',
        warnings: [expect.stringMatching(/^clip 1 could not be placed \(placement_failed — .*\): retry 1 of 2$/)],
      });
      expect(stateOf(id)).toBe('retrying');
      const c = svc.services.host.snapshotOf(id)!.context as StrategyContext;
      await svc.services.host.deliverTimer({ actorId: id, timerName: 'retry', atMs: c.deadlines.retry! });
      await idle();
      s = await strategy('alice', id);
      expect(s).toMatchObject({ status: 'ACTIVE', order_ids: [`ord_${id}_2`] });
      expect((await openOrders('alice')).find((o: any) => o.order_id === `ord_${id}_2`)).toMatchObject({
        size: '10',
        price: px(bid),
        record_id: id,
      });
      expect((await svc.call('DELETE', `/v2/trade/strategies/${id}`, { headers: as('alice') })).body).toMatchObject({
        status: 'CANCELED',
      });
    });

    it('ICEBERG canceled while its clip is being placed, the placement failing: still ends CANCELED', async () => {
      const { token, bid } = await freshToken(0.2, 0.6);
      const held = holdWrite(store, (w) => w.op === 'insert' && /^ord_stg_.*_1$/.test(w.id));
      const created = post('alice', {
        symbol: token,
        side: 'buy',
        type: 'ICEBERG',
        price: px(bid),
        size: '30',
        execution: { clip_size: '10' },
      });
      await until(() => held.hits.length === 1, 'the clip reached the store');
      const id = held.hits[0]!.slice(4, -2);
      expect(stateOf(id)).toBe('working');
      const del = svc.call('DELETE', `/v2/trade/strategies/${id}`, { headers: as('alice') });
      await until(() => stateOf(id) === 'canceling', 'DELETE reached the iceberg');
      held.release(true);
      expect(await del).toMatchObject({ status: 200, body: { record_id: id, status: 'CANCELED' } });
      expect((await created).status).toBe(200);
      expect(await strategy('alice', id)).toMatchObject({
        status: 'CANCELED',
        message: 'canceled by DELETE strategy',
        order_ids: [],
      });
      expect((await openOrders('alice')).some((o: any) => o.order_id.startsWith(`ord_${id}`))).toBe(false);
    });

    it('BRACKET: a take-profit not placed → its leg FAILED with the error (a warning), the stop armed', async () => {
      const { token, ask } = await freshToken(0.3, 0.7);
      const fault = failWrites(store, (w) => w.op === 'insert' && /^ord_stg_.*_1$/.test(w.id));
      const res = await post('alice', {
        symbol: token,
        side: 'buy',
        type: 'LIMIT',
        price: px(ask),
        size: '10',
        take_profit: { price: px(ask + 0.1) },
        stop_loss: { price: '0.1' },
      });
      expect(res).toMatchObject({ status: 200, body: { status: 'FILLED' } });
      const rid = res.body.bracket_id;
      expect(fault.hits).toEqual([`ord_${rid}_1`]);
      await idle();
      const s = await strategy('alice', rid);
      expect(s).toMatchObject({
        status: 'ACTIVE',
        brackets: {
          take_profit: {
            status: 'FAILED',
            error: expect.stringMatching(/^not placed: placement_failed — injected store fault/),
          },
          stop_loss: { status: 'ARMED', size: '10' },
        },
      });
      expect(s.warnings).toEqual([expect.stringMatching(/^bracket take_profit failed: not placed: placement_failed/)]);
    });

    it("STOP_LOSS: a triggered sell not placed re-arms the stop, which fires again at the bid's level", async () => {
      const { token, bid } = await freshToken(0.3);
      await post('alice', {
        symbol: token,
        side: 'buy',
        type: 'LIMIT',
        price: '0.99',
        size: '10',
        time_in_force: 'IOC',
      });
      const level = px(bid - 0.01);
      const res = await post('alice', { symbol: token, side: 'sell', type: 'STOP_LOSS', price: level, size: '10' });
      const id = res.body.record_id;
      const fault = failWrites(store, isInsertOf(`ord_${id}_1`));
      await sellThrough(token, px(bid));
      await idle();
      expect(fault.hits).toEqual([`ord_${id}_1`]);
      const s = await strategy('alice', id);
      expect(s).toMatchObject({ status: 'COMPLETED', filled_size: '10', order_ids: [`ord_${id}_2`] });
      expect(s.warnings).toEqual([
        expect.stringMatching(
          /^the stop-loss sell could not be placed \(placement_failed — .*\): armed again \(retry 1 of 2\)$/,
        ),
      ]);
    });
  });

  describe('18: DELETE strategy answers what the machine decided', () => {
    it('a TWAP in its finishing step (last slice canceling): DELETE → 200, the record ends CANCELED', async () => {
      const { token, ask, bid } = await freshToken(0.2, 0.6);
      const res = await post('alice', {
        symbol: token,
        side: 'buy',
        type: 'TWAP',
        size: '30',
        price: px(ask),
        execution: { interval_sec: 10, duration_sec: 10, passive: true },
      });
      const id = res.body.record_id;
      await idle();
      expect((await openOrders('alice')).find((o: any) => o.order_id === `ord_${id}_1`)).toMatchObject({
        status: 'OPEN',
        price: px(bid + 0.01),
      });
      // the slice's cancel is held in the store: the TWAP stays in its finishing step
      const held = holdWrite(store, isStrategyUpdate(`ord_${id}_1`));
      const c = svc.services.host.snapshotOf(id)!.context as StrategyContext;
      await svc.services.host.deliverTimer({ actorId: id, timerName: 'end', atMs: c.deadlines.end! });
      await until(() => held.hits.length === 1, 'the cancel of the slice reached the store');
      expect(stateOf(id)).toBe('finishing');
      const del = svc.call('DELETE', `/v2/trade/strategies/${id}`, { headers: as('alice') });
      await until(() => stateOf(id) === 'canceling', 'DELETE reached the TWAP');
      held.release();
      expect(await del).toMatchObject({ status: 200, body: { record_id: id, status: 'CANCELED' } });
      expect(await strategy('alice', id)).toMatchObject({ status: 'CANCELED', message: 'canceled by DELETE strategy' });
      expect((await openOrders('alice')).some((o: any) => o.order_id.startsWith(`ord_${id}`))).toBe(false);
    });

    it('the cancel of the working slice fails: retried, the TWAP ends CANCELED, not stuck in canceling', async () => {
      const { token, ask } = await freshToken(0.2, 0.6);
      const res = await post('alice', {
        symbol: token,
        side: 'buy',
        type: 'TWAP',
        size: '30',
        price: px(ask),
        execution: { interval_sec: 10, duration_sec: 30, passive: true },
      });
      const id = res.body.record_id;
      await idle();
      // the slice's order.cancel cannot be written, twice
      const fault = failWrites(store, isStrategyUpdate(`ord_${id}_1`), 2);
      const del = await svc.call('DELETE', `/v2/trade/strategies/${id}`, { headers: as('alice') });
      expect(del.status).toBe(200); // accepted: the TWAP is canceling (tag canceling) and certainly ends CANCELED
      expect(svc.services.host.snapshotOf(id)?.hasTag('canceling') ?? del.body.status === 'CANCELED').toBe(true);
      await idle();
      expect(fault.hits).toEqual([`ord_${id}_1`, `ord_${id}_1`]);
      expect(await strategy('alice', id)).toMatchObject({ status: 'CANCELED', message: 'canceled by DELETE strategy' });
      expect((await openOrders('alice')).some((o: any) => o.order_id.startsWith(`ord_${id}`))).toBe(false);
    });

    it('a BRACKET placing its take-profit: DELETE → 200, the take-profit canceled once placed', async () => {
      const { token, ask } = await freshToken(0.3, 0.7);
      const held = holdWrite(store, (w) => w.op === 'insert' && /^ord_stg_.*_1$/.test(w.id));
      const entry = post('alice', {
        symbol: token,
        side: 'buy',
        type: 'LIMIT',
        price: px(ask),
        size: '10',
        take_profit: { price: px(ask + 0.1) },
        stop_loss: { price: '0.1' },
      });
      await until(() => held.hits.length === 1, 'the take-profit reached the store');
      const tp = held.hits[0]!;
      const rid = tp.slice(4, -2);
      expect(stateOf(rid)).toBe('placing_take_profit');
      const del = svc.call('DELETE', `/v2/trade/strategies/${rid}`, { headers: as('alice') });
      await until(() => stateOf(rid) === 'canceling', 'DELETE reached the bracket');
      held.release();
      expect(await del).toMatchObject({ status: 200, body: { record_id: rid, status: 'CANCELED' } });
      expect((await entry).body).toMatchObject({ status: 'FILLED', bracket_id: rid });
      const s = await strategy('alice', rid);
      expect(s).toMatchObject({
        status: 'CANCELED',
        message: 'canceled by DELETE strategy',
        brackets: { take_profit: { order_id: tp, status: 'CANCELED' }, stop_loss: { status: 'CANCELED' } },
      });
      expect((await openOrders('alice')).some((o: any) => o.order_id === tp)).toBe(false);
    });

    it('a triggered stop: DELETE → 409 with the reason (the machine refuses), record unchanged', async () => {
      const { token, bid, bids } = await freshToken(0.3);
      await post('alice', {
        symbol: token,
        side: 'buy',
        type: 'LIMIT',
        price: '0.99',
        size: '2000',
        time_in_force: 'IOC',
      });
      const level = px(bid - 0.01);
      const size = String(Number(bids.find((l: any) => l.price === level)?.size ?? 0) + 50);
      const res = await post('alice', { symbol: token, side: 'sell', type: 'STOP_LOSS', price: level, size });
      await sellThrough(token, px(bid));
      await idle();
      const before = await strategy('alice', res.body.record_id);
      expect(before.status).toBe('TRIGGERED');
      const del = await svc.call('DELETE', `/v2/trade/strategies/${res.body.record_id}`, { headers: as('alice') });
      expect(del).toMatchObject({
        status: 409,
        body: {
          error: 'conflict',
          message:
            `strategy ${res.body.record_id} has triggered and its order is working: cancel its order with ` +
            `DELETE /v2/trade/orders/${before.order_ids[0]}`,
        },
      });
      expect((await strategy('alice', res.body.record_id)).revision).toBe(before.revision);
    });
  });
});

describe('start-up reconciliation', () => {
  it('a TWAP whose slice cancel was given up is canceled at the next start: CANCELED, nothing working', async () => {
    const env = { SIM_MAKER_REFILL_MS: '3600000', SIM_INITIAL_PUSD: '1000000' };
    const inner = await SqliteStore.open(null);
    const first = new FaultyStore(inner, { keepOpen: true });
    let svc = await startTestService({ store: first, env });
    const as = { 'x-partner-user-id': 'carol' };
    await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'carol' } });
    const m = (await svc.call('GET', '/v2/trade/markets?limit=50')).body.markets.find(
      (x: any) => x.tick_size === '0.01',
    );
    const token = m.tokens[0].token_id;
    const ask = (await svc.call('GET', `/v2/trade/book?token_id=${token}`)).body.asks[0].price;
    const res = await svc.call('POST', '/v2/trade/order', {
      body: {
        symbol: token,
        side: 'buy',
        type: 'TWAP',
        size: '30',
        price: ask,
        execution: { interval_sec: 10, duration_sec: 30, passive: true },
      },
      headers: as,
    });
    const id = res.body.record_id;
    await svc.services.strategies.idle();
    const fault = failWrites(first, (w) => w.op === 'update' && w.id === `ord_${id}_1`, 1000);
    expect((await svc.call('DELETE', `/v2/trade/strategies/${id}`, { headers: as })).status).toBe(200);
    await svc.services.strategies.idle(); // every retry of the cancel fails: given up, counted
    expect(fault.hits).toHaveLength(6);
    expect(svc.services.strategies.deliveriesAbandoned).toBe(1);
    expect(String(svc.services.host.snapshotOf(id)?.value)).toBe('canceling');
    await svc.close();

    svc = await startTestService({ store: new FaultyStore(inner), env });
    try {
      await svc.services.strategies.idle();
      const s = (await svc.call('GET', '/v2/trade/strategies', { headers: as })).body.strategies.find(
        (x: any) => x.record_id === id,
      );
      expect(s).toMatchObject({
        status: 'CANCELED',
        message: 'canceled by DELETE strategy',
        order_ids: [`ord_${id}_1`],
      });
      expect((await svc.call('GET', '/v2/trade/orders/open', { headers: as })).body.orders).toEqual([]);
    } finally {
      await svc.close();
    }
  });
});
