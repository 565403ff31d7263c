import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EmbeddedStore } from '../../../engine/store/embedded.js';
import { startTestService, type TestService } from '../../helpers.js';

/**
 * Issue 15, item 5: strategy snapshots are stored in a compact form (engine/actor-host.ts
 * `SnapshotForm`, machines/strategy-kit.ts `strategySnapshotForm`). Snapshots stored before, in
 * XState's form, must still restore: a STOP_LOSS whose stored snapshot is rewritten to the text the
 * service wrote until now comes back armed at the next start (same record), is canceled through the
 * real path (HTTP, the host loading it from the store), and is stored in the compact form after.
 */
describe('strategy snapshots: compact stored form, XState form still restores', () => {
  let dir: string;
  let svc: TestService | undefined;
  afterAll(async () => {
    await svc?.close();
    if (dir) await fs.rm(dir, { recursive: true, force: true });
  });
  const as = { 'x-partner-user-id': 'alice' };

  it('a STOP_LOSS stored in XState’s form (as every snapshot before) restores armed, reads the same, cancels, and is written back compact', async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-form-'));
    const env = { SIM_MAKER_REFILL_MS: '3600000', SIM_REPLAY: 'off' };
    svc = await startTestService({ store: await EmbeddedStore.open(dir), env });
    await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'alice' }, headers: as });
    const markets = (await svc.call('GET', '/v2/trade/markets?limit=50')).body.markets as any[];
    let token = '';
    let bid = 0;
    for (const m of markets) {
      const b = (await svc.call('GET', `/v2/trade/book?token_id=${m.tokens[0].token_id}`)).body;
      if (b.bids.length && Number(b.bids[0].price) > 0.3 && Number(b.bids[0].price) < 0.8 && b.tick_size === '0.01') {
        token = m.tokens[0].token_id;
        bid = Number(b.bids[0].price);
        break;
      }
    }
    expect(token).not.toBe('');
    expect((await svc.call('POST', '/v2/trade/order', { body: { symbol: token, side: 'buy', type: 'LIMIT', price: '0.99', size: '10', time_in_force: 'IOC' }, headers: as })).status).toBe(200);
    const level = String(Number((bid - 0.05).toFixed(2)));
    const res = await svc.call('POST', '/v2/trade/order', { body: { symbol: token, side: 'sell', type: 'STOP_LOSS', price: level, size: '5' }, headers: as });
    expect(res).toMatchObject({ status: 200, body: { status: 'ACTIVE' } });
    const id = res.body.record_id as string;
    const list = async () => (await svc!.call('GET', '/v2/trade/strategies?limit=50', { headers: as })).body.strategies.find((s: any) => s.record_id === id);
    const before = await list();
    expect(before).toMatchObject({ status: 'ACTIVE', price: level, trigger_price: level, size: '5', message: `STOP_LOSS armed: sells 5 shares when the best bid reaches ${level}` });

    // compact: no default, no derived field, no id
    const actors = async (s: TestService) => s.services.store.collection<{ _id: string; snapshot: string; ownerUserId: string; createdAtMs: number }>('actors');
    const rec = (await (await actors(svc)).findOne({ _id: id }))!;
    // the stored `type` (the host's typeOf: the view is derived only when read) is the view's
    expect((rec as unknown as { type: string }).type).toBe(before.type);
    expect(before.type).toBe('STOP_LOSS');
    const compact = JSON.parse(rec.snapshot);
    expect(compact).toMatchObject({ form: 1, value: 'armed' });
    expect(Object.keys(compact.context).sort()).toEqual(['createdAtMs', 'minSize', 'price', 'side', 'size', 'tickSize', 'tokenId', 'touch']);
    expect(rec.snapshot.length).toBeLessThan(320);
    const c = compact.context;
    await svc.close();
    svc = undefined;

    // the text the service stored until now (XState's persisted snapshot), for the same stop
    const xstateForm =
      `{"status":"active","value":"armed","historyValue":{},"context":{"recordId":"${id}","userId":"${rec.ownerUserId}","type":"STOP_LOSS","side":"sell",` +
      `"tokenId":"${token}","tickSize":"${c.tickSize}","minSize":"${c.minSize}","price":"${level}","size":"5","quoteAmount":null,"execution":{},"warnings":[],` +
      `"message":"STOP_LOSS armed: sells 5 shares when the best bid reaches ${level}","clientOrderId":null,"metadata":null,"createdAtMs":${c.createdAtMs},` +
      `"touch":{"bid":"${c.touch.bid}","ask":"${c.touch.ask}"},"filledSize":"0","matchedAmount":"0","children":[],"working":null,"seq":0,"slicesDone":0,` +
      `"lastTouch":{"bid":"${c.touch.bid}","ask":"${c.touch.ask}"},"triggerPrice":"${level}","watch":{"bidAtOrBelow":"${level}"},"deadlines":{},"endReason":null,` +
      `"workingPrice":null,"pendingSize":null,"placing":null},"children":{}}`;
    const raw = await EmbeddedStore.open(dir);
    expect(await (await raw.collection<{ _id: string }>('actors')).updateOne({ _id: id }, { snapshot: xstateForm })).toBe(1);
    await raw.close();

    svc = await startTestService({ store: await EmbeddedStore.open(dir), env });
    expect(svc.services.strategies.triggers.has(id)).toBe(true);
    expect(await list()).toEqual(before);
    const stored = (await (await actors(svc)).findOne({ _id: id }))!;
    expect(stored.snapshot).toBe(xstateForm);

    const del = await svc.call('DELETE', `/v2/trade/strategies/${id}`, { headers: as });
    expect(del.status).toBe(200);
    expect(await list()).toMatchObject({ status: 'CANCELED', message: 'canceled before it triggered', price: level, trigger_price: level });
    const after = JSON.parse((await (await actors(svc)).findOne({ _id: id }))!.snapshot);
    expect(after).toMatchObject({ form: 1, status: 'done', value: 'canceled', context: { watch: {}, endReason: 'canceled before it triggered' } });
    expect(after.context.recordId).toBeUndefined();
    expect(svc.services.strategies.triggers.has(id)).toBe(false);
  }, 60_000);
});
