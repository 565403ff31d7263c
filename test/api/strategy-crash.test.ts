import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { spawnService, type ServiceProcess } from '../process.js';

const KEY = 'pts_test_master_key_0123456789abcdef';

/**
 * Crash test: a TWAP runs in a child process on the SQLite store, the process is
 * killed with SIGKILL mid-run, restarted, and the TWAP finishes with no slice placed twice or lost
 * and balances consistent with the fills.
 */
describe('TWAP survives kill -9 (child process, SQLite store on disk)', () => {
  let dir = '';
  let svc: ServiceProcess | null = null;
  afterAll(async () => {
    svc?.child.kill('SIGKILL');
    if (dir) await fs.rm(dir, { recursive: true, force: true });
  });

  it('finishes after a restart with every slice placed exactly once', async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-twap-'));
    const env = {
      DATA_DIR: dir,
      MASTER_API_KEY: KEY,
      SIM_REPLAY: 'off',
      SIM_MAKER_REFILL_MS: '3600000',
      SCHEDULER_POLL_MS: '200',
    };
    svc = await spawnService(env);
    const call = async (base: string, method: string, p: string, body?: unknown) => {
      const r = await fetch(base + p, {
        method,
        headers: {
          authorization: `Bearer ${KEY}`,
          'content-type': 'application/json',
          'x-partner-user-id': 'twapper',
          ...(method === 'GET' ? {} : { 'idempotency-key': randomUUID() }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: r.status, body: (await r.json()) as any };
    };
    await call(svc.baseUrl, 'POST', '/v2/trade/users', { partner_user_id: 'twapper' });
    const market = (await call(svc.baseUrl, 'GET', '/v2/trade/markets?limit=20')).body.markets.find(
      (m: any) => m.tick_size === '0.01',
    );
    const token = market.tokens[0].token_id;
    const ask = (await call(svc.baseUrl, 'GET', `/v2/trade/book?token_id=${token}`)).body.asks[0].price;
    const res = await call(svc.baseUrl, 'POST', '/v2/trade/order', {
      symbol: token,
      side: 'buy',
      type: 'TWAP',
      size: '30',
      price: ask,
      execution: { interval_sec: 10, duration_sec: 30 },
    });
    expect(res).toMatchObject({ status: 200, body: { status: 'ACTIVE', record_id: expect.any(String) } });
    const id = res.body.record_id as string;
    const record = async (base: string) =>
      (await call(base, 'GET', '/v2/trade/strategies')).body.strategies.find((s: any) => s.record_id === id);

    // wait for the second slice (10 s after the first), then kill -9; generous deadlines, as other test
    // files load the machine
    for (let i = 0; i < 300 && (await record(svc.baseUrl)).slices_done < 2; i++)
      await new Promise((r) => setTimeout(r, 100));
    expect((await record(svc.baseUrl)).slices_done).toBe(2);
    svc.child.kill('SIGKILL');
    await svc.exited;

    svc = await spawnService(env);
    let s = await record(svc.baseUrl);
    for (let i = 0; i < 450 && s.status !== 'COMPLETED'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      s = await record(svc.baseUrl);
    }
    expect(s).toMatchObject({ status: 'COMPLETED', slices_done: 3, slices_total: 3, filled_size: '30' });
    expect(s.order_ids).toEqual([`ord_${id}_1`, `ord_${id}_2`, `ord_${id}_3`]);
    const activity = (await call(svc.baseUrl, 'GET', '/v2/trade/activity?limit=200')).body.activity.filter(
      (a: any) => a.kind === 'order',
    );
    expect(activity.map((a: any) => a.id).sort()).toEqual([...s.order_ids].sort());
    expect(activity.map((a: any) => Number(a.size)).sort()).toEqual([10, 10, 10]);
    const balances = (await call(svc.baseUrl, 'GET', '/v2/trade/balances')).body;
    const positions = (await call(svc.baseUrl, 'GET', '/v2/trade/positions')).body.positions;
    expect(positions).toHaveLength(1);
    expect(positions[0]).toMatchObject({ token_id: token, size: '30' });
    expect(Number(balances.balance)).toBeCloseTo(10000 - Number(positions[0].cost_usd), 6);
    expect(Number(positions[0].cost_usd)).toBeCloseTo(Number(s.matched_amount), 6);
    expect(balances.reserved).toBe('0');
  }, 90_000);
});
