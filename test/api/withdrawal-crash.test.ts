import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { spawnService, type ServiceProcess } from '../process.js';

const KEY = 'pts_test_master_key_0123456789abcdef';
const TO = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed';

/**
 * kill -9 mid-withdrawal (acceptance): the built service as a child process on the
 * SQLite store; withdrawals PENDING (debited, block not yet mined) and a burst still in flight
 * when the process dies. After the restart every withdrawal ends CONFIRMED or FAILED exactly once,
 * none is lost, and the balance agrees: initial − Σ confirmed (a reverted one is refunded once).
 */
describe('withdrawal survives kill -9', () => {
  let dir = '';
  let svc: ServiceProcess | null = null;
  afterAll(async () => {
    svc?.child.kill('SIGKILL');
    if (dir) await fs.rm(dir, { recursive: true, force: true });
  });

  it('ends CONFIRMED or FAILED exactly once after a restart, balances agree', async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-wd-'));
    const env = {
      DATA_DIR: dir,
      MASTER_API_KEY: KEY,
      SIM_REPLAY: 'off',
      SIM_INITIAL_PUSD: '1000',
      SIM_BLOCK_DELAY_MS: '1500',
      SCHEDULER_POLL_MS: '200',
    };
    svc = await spawnService(env);
    const call = async (base: string, method: string, p: string, body?: unknown) => {
      const r = await fetch(base + p, {
        method,
        headers: {
          authorization: `Bearer ${KEY}`,
          'content-type': 'application/json',
          'x-partner-user-id': 'w',
          ...(method === 'GET' ? {} : { 'idempotency-key': randomUUID() }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: r.status, body: (await r.json()) as any };
    };
    await call(svc.baseUrl, 'POST', '/v2/trade/users', { partner_user_id: 'w' });
    const a = await call(svc.baseUrl, 'POST', '/v2/trade/withdraw', { to_address: TO, amount: '100' });
    const b = await call(svc.baseUrl, 'POST', '/v2/trade/withdraw', {
      to_address: '0x0000000000000000000000000000000000000000',
      amount: '50',
    });
    expect(a.body.status).toBe('PENDING');
    expect(b.body.status).toBe('PENDING');
    expect((await call(svc.baseUrl, 'GET', '/v2/trade/balances')).body.balance).toBe('850');
    // a burst in flight while the process dies
    const burst = Array.from({ length: 8 }, () =>
      call(svc!.baseUrl, 'POST', '/v2/trade/withdraw', { to_address: TO, amount: '10' }).catch(() => null),
    );
    await new Promise((r) => setTimeout(r, 5));
    svc.child.kill('SIGKILL');
    await svc.exited;
    await Promise.all(burst);

    svc = await spawnService(env);
    const base = svc.baseUrl;
    let list: any[] = [];
    for (let i = 0; i < 300; i++) {
      list = (await call(base, 'GET', '/v2/trade/withdrawals?limit=500')).body.withdrawals;
      if (list.every((w) => w.status !== 'PENDING')) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(list.map((w) => w.status).filter((s) => s === 'PENDING')).toEqual([]);
    const byId = new Map(list.map((w) => [w.withdrawal_id, w]));
    expect(byId.get(a.body.withdrawal_id)).toMatchObject({ status: 'CONFIRMED', refunded: false });
    expect(byId.get(b.body.withdrawal_id)).toMatchObject({
      status: 'FAILED',
      refunded: true,
      failure_code: 'TRANSFER_REVERTED',
    });
    const confirmed = list.filter((w) => w.status === 'CONFIRMED').reduce((s, w) => s + Number(w.amount), 0);
    const balance = (await call(base, 'GET', '/v2/trade/balances')).body;
    expect(Number(balance.balance)).toBeCloseTo(1000 - confirmed, 9);
    expect(balance.reserved).toBe('0');
    // exactly one activity row per withdrawal
    const rows = (await call(base, 'GET', '/v2/trade/activity?limit=200')).body.activity.filter(
      (r: any) => r.type === 'WITHDRAWAL',
    );
    expect(rows.map((r: any) => r.id).sort()).toEqual([...byId.keys()].sort());
    svc.child.kill('SIGTERM');
    expect(await svc.exited).toBe(0);
    svc = null;
  });
});
