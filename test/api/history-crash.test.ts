import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { TRADER_FILLS, TRADES, type TapeTrade, type TraderFill } from '../../engine/data/records.js';
import { SqliteStore } from '../../engine/store/sqlite.js';
import { startTestService, type TestService } from '../helpers.js';
import { spawnService, type ServiceProcess } from '../process.js';

const KEY = 'pts_history_crash_master_key_0123456789';
const ENV = { MASTER_API_KEY: KEY, SIM_REPLAY: 'off', SIM_MAKER_REFILL_MS: '3600000' };

/**
 * `kill -9` of a spawned service during a burst of fills: after the restart every fill of every
 * order the client was answered 200 for is in `trades` exactly once, with its parties' fills, and
 * no history row exists without the order step that recorded it.
 */
describe('kill -9 during a burst of fills: the trade history', () => {
  let dir: string;
  let child: ServiceProcess | null = null;
  let svc: TestService | null = null;
  afterAll(async () => {
    if (child && child.child.exitCode === null) child.child.kill('SIGKILL');
    await svc?.close();
    if (dir) await fs.rm(dir, { recursive: true, force: true });
  });

  it(
    'every fill of every acknowledged order is recorded exactly once after the restart',
    { timeout: 60_000 },
    async () => {
      dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-history-crash-'));
      child = await spawnService({ DATA_DIR: dir, ...ENV });
      const call = async (method: string, p: string, body?: unknown) => {
        const r = await fetch(child!.baseUrl + p, {
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

      const acknowledged = new Set<string>();
      const burst = (async () => {
        for (let wave = 0; wave < 200; wave++) {
          const orders = tokens.flatMap((t) => [
            { symbol: t, side: 'buy', type: 'LIMIT', price: '0.99', size: '1', time_in_force: 'IOC' },
            { symbol: t, side: 'buy', type: 'MARKET', quote_amount: '1' },
          ]);
          const results = await Promise.all(orders.map((o) => call('POST', '/v2/trade/order', o).catch(() => null)));
          for (const r of results) if (r?.status === 200) acknowledged.add(r.body.order_id);
          if (results.some((r) => r === null)) return;
        }
      })();
      while (acknowledged.size < 40) await new Promise((r) => setTimeout(r, 5));
      child.child.kill('SIGKILL');
      await child.exited;
      await burst;

      svc = await startTestService({ store: await SqliteStore.open(dir, { lock: true }), env: ENV });
      await svc.services.host.whenIdle();
      const tape = await (await svc.services.store.collection<TapeTrade>(TRADES)).find({});
      const fills = await (await svc.services.store.collection<TraderFill>(TRADER_FILLS)).find({});
      const tapeIds = tape.map((t) => t._id);
      expect(new Set(tapeIds).size).toBe(tapeIds.length);
      let checked = 0;
      for (const id of acknowledged) {
        const got = await svc.call('GET', `/v2/trade/orders/${id}`, {
          token: KEY,
          headers: { 'x-partner-user-id': 'burst' },
        });
        expect(got.status, id).toBe(200);
        for (const f of got.body.fills ?? []) {
          const tradeId = String(f.trade_id).replace(/-[tm]$/, '');
          expect(
            tapeIds.filter((t) => t === tradeId),
            tradeId,
          ).toHaveLength(1);
          const parties = fills.filter((x) => x.tradeId === tradeId);
          expect(parties.map((x) => x.role).sort(), tradeId).toEqual(['maker', 'taker']);
          expect(
            parties.find((x) => x.orderId === id),
            tradeId,
          ).toMatchObject({
            blockTimestamp: f.block_timestamp,
            logIndex: f.log_index,
            size: f.size,
          });
          checked++;
        }
      }
      expect(checked).toBeGreaterThanOrEqual(acknowledged.size);
      // no history row without the order step that recorded it
      const orders = await (
        await svc.services.store.collection<{ _id: string; snapshot: string }>('actors')
      ).find({
        kind: 'order',
      });
      const recorded = new Set(
        orders.flatMap((o) =>
          ((JSON.parse(o.snapshot).context.fills ?? []) as { tradeId: string }[]).map((f) =>
            f.tradeId.replace(/-[tm]$/, ''),
          ),
        ),
      );
      expect(tapeIds.filter((t) => !recorded.has(t))).toEqual([]);
    },
  );
});
