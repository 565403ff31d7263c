import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { unpackSnapshot } from '../../engine/actor-host.js';
import type { ActorRecord } from '../../engine/store/actors.js';
import { SqliteStore } from '../../engine/store/sqlite.js';
import { ORDER_SNAPSHOT_FORM } from '../../machines/order.js';
import { startTestService, type TestService } from '../helpers.js';
import { px, tokenPicker } from './trading-kit.js';

const env = { SIM_MAKER_REFILL_MS: '3600000', SIM_REPLAY: 'off' };
const as = { 'x-partner-user-id': 'alice' };
const dirs: string[] = [];
let svc: TestService | undefined;
afterAll(async () => {
  await svc?.close();
  for (const d of dirs) await fs.rm(d, { recursive: true, force: true });
});

/** Starts the service on the SQLite store in `dir` (the one running before is closed first). */
async function startOn(dir: string): Promise<TestService> {
  await svc?.close();
  svc = await startTestService({ store: await SqliteStore.open(dir), env });
  return svc;
}

/** A service on a new SQLite folder, with user alice, and a token whose book has a bid and an ask. */
async function started(
  prefix: string,
): Promise<{ s: TestService; dir: string; token: string; bid: number; ask: number }> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), prefix));
  dirs.push(dir);
  const s = await startOn(dir);
  await s.call('POST', '/v2/trade/users', { body: { partner_user_id: 'alice' } });
  const markets = (await s.call('GET', '/v2/trade/markets?limit=50')).body.markets as any[];
  const picked = await tokenPicker(
    () => markets,
    async (t) => (await s.call('GET', `/v2/trade/book?token_id=${t}`)).body,
  )(0.2, 0.8);
  return { s, dir, ...picked };
}

/** Stops the service (its store closed), so that a test can rewrite the records. */
async function stop(): Promise<void> {
  await svc?.close();
  svc = undefined;
}

/**
 * Orders stored by version 1 of the order machine (no `cancelReason` in context) restore on
 * version 2 unchanged: a working one is canceled through the real path and records why; a
 * canceled one reads as it did (its `message`, no `cancel_code`).
 */
describe('order snapshots of machine version 1 restore on version 2', () => {
  it('version 1 orders: the OPEN one cancels as USER_CANCELED, the CANCELED one reads unchanged', async () => {
    const first = await started('pts-order-v1-');
    const { dir, token, bid } = first;
    let s = first.s;
    const place = () =>
      s.call('POST', '/v2/trade/order', {
        body: { symbol: token, side: 'buy', type: 'LIMIT', price: px(bid - 0.1), size: '10' },
        headers: as,
      });
    const live = await place();
    const done = await place();
    expect([live.body.status, done.body.status]).toEqual(['OPEN', 'OPEN']);
    expect(await s.call('DELETE', `/v2/trade/orders/${done.body.order_id}`, { headers: as })).toMatchObject({
      status: 200,
      body: { status: 'CANCELED', cancel_code: 'USER_CANCELED' },
    });
    await stop();

    // both records rewritten as version 1 stored them: machine version 1, no cancelReason
    const raw = await SqliteStore.open(dir);
    const actors = await raw.collection<ActorRecord>('actors');
    for (const id of [live.body.order_id as string, done.body.order_id as string]) {
      const rec = (await actors.findOne({ _id: id }))!;
      const snap = unpackSnapshot(rec.snapshot, ORDER_SNAPSHOT_FORM, rec) as { context: Record<string, unknown> };
      delete snap.context.cancelReason;
      expect(await actors.updateOne({ _id: id }, { snapshot: JSON.stringify(snap), machineVersion: 1 })).toBe(1);
    }
    await raw.close();

    s = await startOn(dir);
    const before = await s.call('GET', `/v2/trade/orders/${done.body.order_id}`, { headers: as });
    expect(before).toMatchObject({ status: 200, body: { status: 'CANCELED', message: 'canceled by user' } });
    expect(before.body.cancel_code).toBeUndefined();
    expect(await s.call('GET', `/v2/trade/orders/${live.body.order_id}`, { headers: as })).toMatchObject({
      status: 200,
      body: { status: 'OPEN' },
    });
    expect(await s.call('DELETE', `/v2/trade/orders/${live.body.order_id}`, { headers: as })).toMatchObject({
      status: 200,
      body: {
        status: 'CANCELED',
        cancel_code: 'USER_CANCELED',
        cancel_reason: 'canceled by user',
        message: 'canceled by user',
      },
    });
  }, 60_000);
});

/**
 * Orders stored in XState's persisted form (every order before the compact stored form) restore
 * unchanged through the real path: a service started on a store holding them serves them over
 * REST, cancels the working one, and writes it back in the compact form.
 */
describe("order snapshots stored in XState's form restore on the compact stored form", () => {
  it("an OPEN and a FILLED order rewritten in XState's form: read as before, the OPEN one cancels", async () => {
    const first = await started('pts-order-xstate-form-');
    const { dir, token, bid, ask } = first;
    let s = first.s;
    const live = await s.call('POST', '/v2/trade/order', {
      body: { symbol: token, side: 'buy', type: 'LIMIT', price: px(bid - 0.1), size: '10', client_order_id: 'c-1' },
      headers: as,
    });
    const filled = await s.call('POST', '/v2/trade/order', {
      body: { symbol: token, side: 'buy', type: 'LIMIT', price: px(ask), size: '5', time_in_force: 'IOC' },
      headers: as,
    });
    expect([live.status, live.body.status, filled.status, filled.body.status]).toEqual([200, 'OPEN', 200, 'FILLED']);
    const ids = [live.body.order_id as string, filled.body.order_id as string];
    const views = await Promise.all(ids.map((id) => s.call('GET', `/v2/trade/orders/${id}`, { headers: as })));
    await stop();

    // both records rewritten as the service stored orders before the compact form: XState's form
    const raw = await SqliteStore.open(dir);
    const actors = await raw.collection<ActorRecord>('actors');
    for (const id of ids) {
      const rec = (await actors.findOne({ _id: id }))!;
      expect(Array.isArray(JSON.parse(rec.snapshot)), 'stored in the compact form').toBe(true);
      const xstate = JSON.stringify(unpackSnapshot(rec.snapshot, ORDER_SNAPSHOT_FORM, rec));
      expect(JSON.parse(xstate)).toMatchObject({ status: expect.any(String), value: expect.any(String), children: {} });
      expect(await actors.updateOne({ _id: id }, { snapshot: xstate })).toBe(1);
    }
    await raw.close();

    s = await startOn(dir);
    for (const [i, id] of ids.entries())
      expect(await s.call('GET', `/v2/trade/orders/${id}`, { headers: as })).toMatchObject({
        status: 200,
        body: views[i]!.body,
      });
    expect(await s.call('DELETE', `/v2/trade/orders/${ids[0]}`, { headers: as })).toMatchObject({
      status: 200,
      body: { order_id: ids[0], status: 'CANCELED', cancel_code: 'USER_CANCELED', client_order_id: 'c-1' },
    });
    const rewritten = (await (await s.services.store.collection<ActorRecord>('actors')).findOne({ _id: ids[0] }))!;
    expect(JSON.parse(rewritten.snapshot).slice(0, 4)).toEqual([1, 'canceled', token, 'buy']);
  }, 60_000);
});
