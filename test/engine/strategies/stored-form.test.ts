import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../../engine/store/sqlite.js';
import { TOKEN_ID_CODEC } from '../../../machines/strategy-kit.js';
import { tokenPicker } from '../../api/trading-kit.js';
import { startTestService, type TestService } from '../../helpers.js';

/**
 * Strategy snapshots are stored in a compact form (engine/actor-host.ts
 * `SnapshotForm`, machines/strategy-kit.ts `strategySnapshotForm`; form 2, positional). Snapshots
 * stored before, in XState's form or in form 1, must still restore: a STOP_LOSS whose stored
 * snapshot is rewritten to the text the service wrote then comes back armed at the next start
 * (same record), is canceled through the real path (HTTP, the host loading it from the store),
 * and is stored in form 2 after.
 */
/**
 * Provisions alice and buys her 10 shares of a 0.01-tick token whose best bid is between 0.3 and
 * 0.8 (stops do not reserve shares, but the request check wants them held).
 * @returns the token and its best bid (decimal probability).
 */
async function aliceWithShares(svc: TestService): Promise<{ token: string; bid: number }> {
  const as = { 'x-partner-user-id': 'alice' };
  await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'alice' }, headers: as });
  const markets = (await svc.call('GET', '/v2/trade/markets?limit=50')).body.markets as any[];
  const { token, bid } = await tokenPicker(
    () => markets,
    async (t) => (await svc.call('GET', `/v2/trade/book?token_id=${t}`)).body,
  )(0.31, 0.79);
  expect(
    (
      await svc.call('POST', '/v2/trade/order', {
        body: { symbol: token, side: 'buy', type: 'LIMIT', price: '0.99', size: '10', time_in_force: 'IOC' },
        headers: as,
      })
    ).status,
  ).toBe(200);
  return { token, bid };
}

/**
 * Writes `snapshot` as the stored snapshot of actor `id` in
 * the (closed) store of `dir`, as an older version would have.
 */
async function storeSnapshot(dir: string, id: string, snapshot: string): Promise<void> {
  const raw = await SqliteStore.open(dir);
  expect(await (await raw.collection<{ _id: string }>('actors')).updateOne({ _id: id }, { snapshot })).toBe(1);
  await raw.close();
}

describe('strategy snapshots: compact stored form, XState form still restores', () => {
  let dir: string;
  let svc: TestService | undefined;
  afterAll(async () => {
    await svc?.close();
    if (dir) await fs.rm(dir, { recursive: true, force: true });
  });
  const as = { 'x-partner-user-id': 'alice' };

  it('a STOP_LOSS in XState’s form or form 1 restores armed, reads the same, cancels, saves form 2', async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-form-'));
    const env = { SIM_MAKER_REFILL_MS: '3600000', SIM_REPLAY: 'off' };
    svc = await startTestService({ store: await SqliteStore.open(dir), env });
    const { token, bid } = await aliceWithShares(svc);
    const level = String(Number((bid - 0.05).toFixed(2)));
    const res = await svc.call('POST', '/v2/trade/order', {
      body: { symbol: token, side: 'sell', type: 'STOP_LOSS', price: level, size: '5' },
      headers: as,
    });
    expect(res).toMatchObject({ status: 200, body: { status: 'ACTIVE' } });
    const id = res.body.record_id as string;
    const list = async () =>
      (await svc!.call('GET', '/v2/trade/strategies?limit=50', { headers: as })).body.strategies.find(
        (s: any) => s.record_id === id,
      );
    const before = await list();
    expect(before).toMatchObject({
      status: 'ACTIVE',
      price: level,
      trigger_price: level,
      size: '5',
      message: `STOP_LOSS armed: sells 5 shares when the best bid reaches ${level}`,
    });

    // compact: no default, no derived field, no id
    const actors = async (s: TestService) =>
      s.services.store.collection<{
        _id: string;
        snapshot: string;
        machineId: string;
        ownerUserId: string;
        createdAtMs: number;
        type: string | null;
      }>('actors');
    const rec = (await (await actors(svc)).findOne({ _id: id }))!;
    // the stored `type` (the host's typeOf: the view is derived only when read) is the view's
    expect(rec.type).toBe(before.type);
    expect(before.type).toBe('STOP_LOSS');
    const compact = JSON.parse(rec.snapshot);
    // form 2: [2, value, tokenId, price, size, [bid, ask], ms from the
    // request to the record] and nothing else (tick 0.01, min size 5)
    const packedToken = TOKEN_ID_CODEC.encode(token, { _id: id, ownerUserId: null, createdAtMs: 0 });
    expect(packedToken).toMatch(/^[\w-]{1,43}$/); // the venue's decimal token id, in base64url
    expect(compact).toEqual([
      2,
      'armed',
      packedToken,
      level,
      '5',
      [expect.any(String), expect.any(String)],
      expect.any(Number),
    ]);
    expect(rec.snapshot.length).toBeLessThan(100);
    const restored = svc.services.host.storedSnapshot(rec).context as Record<string, any>;
    const c = {
      tickSize: restored.tickSize,
      minSize: restored.minSize,
      createdAtMs: restored.createdAtMs,
      touch: restored.touch,
    };
    expect(c).toEqual({
      tickSize: '0.01',
      minSize: '5',
      createdAtMs: rec.createdAtMs - compact[6],
      touch: { bid: compact[5][0], ask: compact[5][1] },
    });
    await svc.close();
    svc = undefined;

    // the text the service stored until now (XState's persisted snapshot), for the same stop
    const xstateForm =
      `{"status":"active","value":"armed","historyValue":{},"context":{"recordId":"${id}",` +
      `"userId":"${rec.ownerUserId}","type":"STOP_LOSS","side":"sell",` +
      `"tokenId":"${token}","tickSize":"${c.tickSize}","minSize":"${c.minSize}","price":"${level}",` +
      `"size":"5","quoteAmount":null,"execution":{},"warnings":[],` +
      (`"message":"STOP_LOSS armed: sells 5 shares when the best bid reaches ` +
        `${level}","clientOrderId":null,"metadata":null,"createdAtMs":${c.createdAtMs},`) +
      `"touch":{"bid":"${c.touch.bid}","ask":"${c.touch.ask}"},"filledSize":"0","matchedAmount":"0",` +
      `"children":[],"working":null,"seq":0,"slicesDone":0,` +
      `"lastTouch":{"bid":"${c.touch.bid}","ask":"${c.touch.ask}"},"triggerPrice":"${level}",` +
      `"watch":{"bidAtOrBelow":"${level}"},"deadlines":{},"endReason":null,` +
      `"workingPrice":null,"pendingSize":null,"placing":null},"children":{}}`;
    await storeSnapshot(dir, id, xstateForm);

    svc = await startTestService({ store: await SqliteStore.open(dir), env });
    expect(svc.services.strategies.triggers.has(id)).toBe(true);
    expect(await list()).toEqual(before);
    const stored = (await (await actors(svc)).findOne({ _id: id }))!;
    expect(stored.snapshot).toBe(xstateForm);

    const del = await svc.call('DELETE', `/v2/trade/strategies/${id}`, { headers: as });
    expect(del.status).toBe(200);
    expect(await list()).toMatchObject({
      status: 'CANCELED',
      message: 'canceled before it triggered',
      price: level,
      trigger_price: level,
    });
    const after = JSON.parse((await (await actors(svc)).findOne({ _id: id }))!.snapshot);
    expect(after).toEqual([
      2,
      'canceled',
      packedToken,
      level,
      '5',
      [c.touch.bid, c.touch.ask],
      compact[6],
      { watch: {}, endReason: 'canceled before it triggered' },
      { status: 'done' },
    ]);
    expect(svc.services.strategies.triggers.has(id)).toBe(false);
    await svc.close();
    svc = undefined;

    // a second stop stored in form 1 (the compact form written before
    // form 2) restores, reads the same, cancels and is written in form 2
    svc = await startTestService({ store: await SqliteStore.open(dir), env });
    const res2 = await svc.call('POST', '/v2/trade/order', {
      body: { symbol: token, side: 'sell', type: 'STOP_LOSS', price: level, size: '5' },
      headers: as,
    });
    expect(res2).toMatchObject({ status: 200, body: { status: 'ACTIVE' } });
    const id2 = res2.body.record_id as string;
    const list2 = async () =>
      (await svc!.call('GET', '/v2/trade/strategies?limit=50', { headers: as })).body.strategies.find(
        (s: any) => s.record_id === id2,
      );
    const before2 = await list2();
    const rec2 = (await (await actors(svc)).findOne({ _id: id2 }))!;
    const t2 = JSON.parse(rec2.snapshot)[5] as [string, string];
    await svc.close();
    svc = undefined;
    const form1 =
      `{"form":1,"value":"armed","context":{"side":"sell","tokenId":"${token}","tickSize":"0.01",` +
      `"minSize":"5","price":"${level}","size":"5",` +
      `"createdAtMs":${rec2.createdAtMs - 7},"touch":{"bid":"${t2[0]}","ask":"${t2[1]}"}}}`;
    await storeSnapshot(dir, id2, form1);
    svc = await startTestService({ store: await SqliteStore.open(dir), env });
    expect(svc.services.strategies.triggers.has(id2)).toBe(true);
    expect(await list2()).toEqual(before2);
    expect((await (await actors(svc)).findOne({ _id: id2 }))!.snapshot).toBe(form1);
    expect((await svc.call('DELETE', `/v2/trade/strategies/${id2}`, { headers: as })).status).toBe(200);
    expect(await list2()).toMatchObject({
      status: 'CANCELED',
      message: 'canceled before it triggered',
      price: level,
      trigger_price: level,
    });
    const after2 = JSON.parse((await (await actors(svc)).findOne({ _id: id2 }))!.snapshot);
    expect(after2).toEqual([
      2,
      'canceled',
      packedToken,
      level,
      '5',
      t2,
      7,
      { watch: {}, endReason: 'canceled before it triggered' },
      { status: 'done' },
    ]);
    expect(svc.services.strategies.triggers.has(id2)).toBe(false);
  }, 60_000);

  it('a TRAILING_STOP is stored in form 2 as its slots only (the rest from execution), restarts the same', async () => {
    const tdir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-form2-'));
    const env = { SIM_MAKER_REFILL_MS: '3600000', SIM_REPLAY: 'off' };
    let s2: TestService | undefined = await startTestService({ store: await SqliteStore.open(tdir), env });
    try {
      const { token, bid } = await aliceWithShares(s2);
      const mark = String(Number((bid + 0.02).toFixed(2)));
      const execution = { high_water_mark: mark, trailing_offset: '0.1' };
      const res = await s2.call('POST', '/v2/trade/order', {
        body: { symbol: token, side: 'sell', type: 'TRAILING_STOP', size: '5', execution },
        headers: as,
      });
      expect(res).toMatchObject({ status: 200, body: { status: 'ACTIVE' } });
      const id = res.body.record_id as string;
      const list = async () =>
        (await s2!.call('GET', '/v2/trade/strategies?limit=50', { headers: as })).body.strategies.find(
          (s: any) => s.record_id === id,
        );
      const before = await list();
      expect(before).toMatchObject({ high_water_mark: mark, trigger_price: String(Number((bid - 0.08).toFixed(2))) });
      const rec = (await (
        await s2.services.store.collection<{ _id: string; snapshot: string }>('actors')
      ).findOne({ _id: id }))!;
      expect(JSON.parse(rec.snapshot)).toEqual([
        2,
        'armed',
        TOKEN_ID_CODEC.encode(token, { _id: id, ownerUserId: null, createdAtMs: 0 }),
        '5',
        execution,
        [expect.any(String), expect.any(String)],
        expect.any(Number),
      ]);
      await s2.close();
      s2 = await startTestService({ store: await SqliteStore.open(tdir), env });
      expect(s2.services.strategies.triggers.has(id)).toBe(true);
      expect(await list()).toEqual(before);
    } finally {
      await s2?.close();
      await fs.rm(tdir, { recursive: true, force: true });
    }
  }, 60_000);
});
