import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { TRADER_FILLS, TRADES, type TapeTrade, type TraderFill } from '../../engine/data/records.js';
import type { ActorRecord } from '../../engine/store/actors.js';
import { SqliteStore } from '../../engine/store/sqlite.js';
import type { OrderContext } from '../../machines/order.js';
import { startTestService, type TestService } from '../helpers.js';
import { checkInvariants } from '../invariants.js';
import { orderBurst, processCaller, spawnService, type ServiceProcess, cleanUpCrashTest } from '../process.js';
import { poll } from './trading-kit.js';

const KEY = 'pts_sqlite_crash_master_key_0123456789';

/**
 * The SQLite store on disk (the default without MONGODB_URI) under `kill -9`: a burst of orders is
 * in flight when the process dies; after the restart every order the client was answered 200 for is
 * there, each with the stored answer of the request that created it, no answer without its order,
 * every fill of an acknowledged order is in the trade history exactly once (and no
 * history row without its order's step), and the invariant check (money conserved, acknowledged
 * ids present) passes.
 */
describe('kill -9 during a burst of orders on the SQLite store on disk', () => {
  let dir: string;
  let child: ServiceProcess | null = null;
  let svc: TestService | null = null;
  afterAll(() => cleanUpCrashTest(child, svc, dir));

  it('every acknowledged order is there after the restart; nothing half-written', { timeout: 60_000 }, async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-sqlite-crash-'));
    child = await spawnService({
      DATA_DIR: dir,
      MASTER_API_KEY: KEY,
      SIM_REPLAY: 'off',
      SIM_MAKER_REFILL_MS: '3600000',
    });
    const call = processCaller(child.baseUrl, KEY, 'burst');
    expect((await call('POST', '/v2/trade/users', { partner_user_id: 'burst' })).status).toBe(201);
    const markets = (await call('GET', '/v2/trade/markets?limit=4')).body.markets;
    const tokens: string[] = markets.map((m: any) => m.tokens[0].token_id);
    expect((await call('GET', `/v2/trade/book?token_id=${tokens[0]}`)).status).toBe(200); // the SQLite file is in use
    expect((await fs.readdir(dir)).filter((f) => f.startsWith('store.sqlite'))).toContain('store.sqlite');

    // waves of concurrent orders (resting LIMITs and MARKET buys) until the process is killed
    const burst = orderBurst(
      call,
      tokens.flatMap((t) => [
        { symbol: t, side: 'buy', type: 'LIMIT', price: '0.01', size: '3' },
        { symbol: t, side: 'buy', type: 'MARKET', quote_amount: '1' },
      ]),
    );
    const { acknowledged } = burst;
    await poll(
      '40 orders acknowledged before the kill',
      async () => acknowledged.size,
      (n) => n >= 40,
      15_000,
      5,
    );
    child.child.kill('SIGKILL');
    await child.exited;
    await burst.done;
    expect(burst.sent()).toBeGreaterThan(acknowledged.size); // some were in flight when it died

    svc = await startTestService({
      store: await SqliteStore.open(dir, { lock: true }),
      env: { MASTER_API_KEY: KEY, SIM_REPLAY: 'off', SIM_MAKER_REFILL_MS: '3600000' },
    });
    // an order's steps after its creation and the answer of the request that created it commit
    // together: every acknowledged order has its stored answer, and no answer names an order that
    // is not there (an order whose creation alone landed is found by its id on the retry)
    const orders = await (
      await svc.services.store.collection<{ _id: string; status: string }>('actors')
    ).find({ kind: 'order' });
    const answers = new Set(
      (await (await svc.services.store.collection<{ _id: string; body: string | null }>('idempotencyKeys')).find({}))
        .map((d) => (d.body === null ? undefined : (JSON.parse(d.body) as { order_id?: string }).order_id))
        .filter((id): id is string => typeof id === 'string'),
    );
    expect(orders.length).toBeGreaterThanOrEqual(acknowledged.size);
    expect([...acknowledged].filter((id) => !answers.has(id))).toEqual([]);
    const ids = new Set(orders.map((o) => o._id));
    expect([...answers].filter((id) => !ids.has(id))).toEqual([]);
    // the trade history: every fill of every acknowledged order is in `trades` exactly once, with
    // both parties' fills at its chain position (its order step wrote them with the fill)
    await svc.services.host.whenIdle();
    const tape = await (await svc.services.store.collection<TapeTrade>(TRADES)).find({ source: 'venue' });
    const fills = await (await svc.services.store.collection<TraderFill>(TRADER_FILLS)).find({ source: 'venue' });
    const tapeIds = tape.map((t) => t._id);
    expect(new Set(tapeIds).size).toBe(tapeIds.length);
    let filled = 0;
    for (const id of acknowledged) {
      const got = await svc.call('GET', `/v2/trade/orders/${id}`, {
        token: KEY,
        headers: { 'x-partner-user-id': 'burst' },
      });
      expect(got.status, id).toBe(200);
      expect(got.body.order_id).toBe(id);
      for (const f of got.body.fills ?? []) {
        const tradeId = String(f.trade_id).replace(/-[tm]$/, '');
        expect(tapeIds.filter((t) => t === tradeId).length, tradeId).toBe(1);
        const parties = fills.filter((x) => x.tradeId === tradeId);
        expect(parties.map((x) => x.role).sort(), tradeId).toEqual(['maker', 'taker']);
        const own = parties.find((x) => x.orderId === id);
        expect(own, tradeId).toMatchObject({ blockTimestamp: f.block_timestamp, logIndex: f.log_index, size: f.size });
        filled++;
      }
    }
    expect(filled).toBeGreaterThan(0); // the MARKET buys traded with the liquidity provider
    // and no history row without the order step that recorded it
    const host = svc.services.host;
    const recorded = new Set(
      (await (await svc.services.store.collection<ActorRecord>('actors')).find({ kind: 'order' }))
        .flatMap((o) => (host.storedSnapshot(o).context as OrderContext).fills ?? [])
        .map((f) => f.tradeId.replace(/-[tm]$/, '')),
    );
    expect(tapeIds.filter((t) => !recorded.has(t))).toEqual([]);
    await checkInvariants(svc.services, { acknowledged });
  });
});
