import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../engine/store/sqlite.js';
import { startTestService, type TestService } from '../helpers.js';
import { px, tokenPicker } from './trading-kit.js';

/**
 * Orders stored by version 1 of the order machine (no `cancelReason` in context) restore on
 * version 2 unchanged: a working one is canceled through the real path and records why; a
 * canceled one reads as it did (its `message`, no `cancel_code`).
 */
describe('order snapshots of machine version 1 restore on version 2', () => {
  let dir: string;
  let svc: TestService | undefined;
  afterAll(async () => {
    await svc?.close();
    if (dir) await fs.rm(dir, { recursive: true, force: true });
  });
  const as = { 'x-partner-user-id': 'alice' };

  it('version 1 orders: the LIVE one cancels as USER_CANCELED, the CANCELED one reads unchanged', async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-order-v1-'));
    const env = { SIM_MAKER_REFILL_MS: '3600000', SIM_REPLAY: 'off' };
    svc = await startTestService({ store: await SqliteStore.open(dir), env });
    await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'alice' } });
    const markets = (await svc.call('GET', '/v2/trade/markets?limit=50')).body.markets as any[];
    const { token, bid } = await tokenPicker(
      () => markets,
      async (t) => (await svc!.call('GET', `/v2/trade/book?token_id=${t}`)).body,
    )(0.2, 0.8);
    const place = () =>
      svc!.call('POST', '/v2/trade/order', {
        body: { symbol: token, side: 'buy', type: 'LIMIT', price: px(bid - 0.1), size: '10' },
        headers: as,
      });
    const live = await place();
    const done = await place();
    expect([live.body.status, done.body.status]).toEqual(['LIVE', 'LIVE']);
    expect(await svc.call('DELETE', `/v2/trade/orders/${done.body.order_id}`, { headers: as })).toMatchObject({
      status: 200,
      body: { status: 'CANCELED', cancel_code: 'USER_CANCELED' },
    });
    await svc.close();
    svc = undefined;

    // both records rewritten as version 1 stored them: machine version 1, no cancelReason
    const raw = await SqliteStore.open(dir);
    const actors = await raw.collection<{ _id: string; snapshot: string; machineVersion: number }>('actors');
    for (const id of [live.body.order_id as string, done.body.order_id as string]) {
      const rec = (await actors.findOne({ _id: id }))!;
      const snap = JSON.parse(rec.snapshot) as { context: Record<string, unknown> };
      delete snap.context.cancelReason;
      expect(await actors.updateOne({ _id: id }, { snapshot: JSON.stringify(snap), machineVersion: 1 })).toBe(1);
    }
    await raw.close();

    svc = await startTestService({ store: await SqliteStore.open(dir), env });
    const before = await svc.call('GET', `/v2/trade/orders/${done.body.order_id}`, { headers: as });
    expect(before).toMatchObject({ status: 200, body: { status: 'CANCELED', message: 'canceled by user' } });
    expect(before.body.cancel_code).toBeUndefined();
    expect(await svc.call('GET', `/v2/trade/orders/${live.body.order_id}`, { headers: as })).toMatchObject({
      status: 200,
      body: { status: 'LIVE' },
    });
    expect(await svc.call('DELETE', `/v2/trade/orders/${live.body.order_id}`, { headers: as })).toMatchObject({
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
