import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../engine/store/sqlite.js';
import { startTestService, type TestService } from '../helpers.js';
import { checkInvariants } from '../invariants.js';
import { spawnService, type ServiceProcess } from '../process.js';

const KEY = 'pts_sqlite_crash_master_key_0123456789';

/**
 * The SQLite store on disk (the default without MONGODB_URI) under `kill -9`: a burst of orders is
 * in flight when the process dies; after the restart every order the client was answered 200 for is
 * there, each order with the stored answer of the request that created it and no answer without
 * its order, and the invariant check (money conserved, acknowledged ids present) passes.
 */
describe('kill -9 during a burst of orders on the SQLite store on disk', () => {
  let dir: string;
  let child: ServiceProcess | null = null;
  let svc: TestService | null = null;
  afterAll(async () => {
    if (child && child.child.exitCode === null) child.child.kill('SIGKILL');
    await svc?.close();
    if (dir) await fs.rm(dir, { recursive: true, force: true });
  });

  it('every acknowledged order is there after the restart; nothing half-written', { timeout: 60_000 }, async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-sqlite-crash-'));
    child = await spawnService({
      DATA_DIR: dir,
      MASTER_API_KEY: KEY,
      SIM_REPLAY: 'off',
      SIM_MAKER_REFILL_MS: '3600000',
    });
    const base = child.baseUrl;
    const call = async (method: string, p: string, body?: unknown) => {
      const r = await fetch(base + p, {
        method,
        headers: {
          authorization: `Bearer ${KEY}`,
          'content-type': 'application/json',
          'x-partner-user-id': 'burst',
          ...(method === 'GET' ? {} : { 'idempotency-key': randomUUID() }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: r.status, body: (await r.json()) as any };
    };
    expect((await call('POST', '/v2/trade/users', { partner_user_id: 'burst' })).status).toBe(201);
    const markets = (await call('GET', '/v2/trade/markets?limit=4')).body.markets;
    const tokens: string[] = markets.map((m: any) => m.tokens[0].token_id);
    expect((await call('GET', `/v2/trade/book?token_id=${tokens[0]}`)).status).toBe(200); // the SQLite file is in use
    expect((await fs.readdir(dir)).filter((f) => f.startsWith('store.sqlite'))).toContain('store.sqlite');

    const acknowledged = new Set<string>();
    let sent = 0;
    // waves of concurrent orders (resting LIMITs and MARKET buys) until the process is killed
    const burst = (async () => {
      for (let wave = 0; wave < 200; wave++) {
        const orders = tokens.flatMap((t) => [
          { symbol: t, side: 'buy', type: 'LIMIT', price: '0.01', size: '3' },
          { symbol: t, side: 'buy', type: 'MARKET', quote_amount: '1' },
        ]);
        sent += orders.length;
        const results = await Promise.all(orders.map((o) => call('POST', '/v2/trade/order', o).catch(() => null)));
        for (const r of results) if (r?.status === 200) acknowledged.add(r.body.order_id);
        if (results.some((r) => r === null)) return;
      }
    })();
    while (acknowledged.size < 40) await new Promise((r) => setTimeout(r, 5));
    child.child.kill('SIGKILL');
    await child.exited;
    await burst;
    expect(sent).toBeGreaterThan(acknowledged.size); // some were in flight when it died

    svc = await startTestService({
      store: await SqliteStore.open(dir, { lock: true }),
      env: { MASTER_API_KEY: KEY, SIM_REPLAY: 'off', SIM_MAKER_REFILL_MS: '3600000' },
    });
    // each order's steps and the answer of the request that created it commit together: every
    // order has its stored answer (but a REJECTED one: its request answered 4xx, which is not
    // kept), and no answer names an order that is not there
    const orders = await (
      await svc.services.store.collection<{ _id: string; status: string }>('actors')
    ).find({ kind: 'order' });
    const answers = new Set(
      (await (await svc.services.store.collection<{ _id: string; body: string | null }>('idempotencyKeys')).find({}))
        .map((d) => (d.body === null ? undefined : (JSON.parse(d.body) as { order_id?: string }).order_id))
        .filter((id): id is string => typeof id === 'string'),
    );
    expect(orders.length).toBeGreaterThanOrEqual(acknowledged.size);
    expect(orders.filter((o) => o.status !== 'REJECTED' && !answers.has(o._id))).toEqual([]);
    const ids = new Set(orders.map((o) => o._id));
    expect([...answers].filter((id) => !ids.has(id))).toEqual([]);
    for (const id of acknowledged) {
      const got = await svc.call('GET', `/v2/trade/orders/${id}`, {
        token: KEY,
        headers: { 'x-partner-user-id': 'burst' },
      });
      expect(got.status, id).toBe(200);
      expect(got.body.order_id).toBe(id);
    }
    await checkInvariants(svc.services, { acknowledged });
  });
});
