import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { TRADER_FILLS, type TraderFill } from '../../engine/data/records.js';
import { SqliteStore } from '../../engine/store/sqlite.js';
import { startTestService, type TestService } from '../helpers.js';
import { processCaller, spawnService, type ServiceProcess, cleanUpCrashTest } from '../process.js';
import { poll, copyEveryFill } from './trading-kit.js';

const KEY = 'pts_copytrade_crash_master_key_0123456789';
const ENV = { MASTER_API_KEY: KEY, SIM_REPLAY: 'off', SIM_MAKER_REFILL_MS: '3600000' };
const FOLLOWERS = ['f1', 'f2', 'f3'];

/** REST calls to a spawned service with the master key, acting for user `u`. */
function caller(baseUrl: string) {
  return (u: string, method: string, p: string, body?: unknown) => processCaller(baseUrl, KEY, u)(method, p, body);
}

/**
 * `kill -9` of a spawned service while a leader's burst of fills is being copied: after the
 * restart every leader fill is in each follower's history exactly once (copied or skipped), every
 * copy has exactly one order, and none is missing.
 */
describe('copytrade: kill -9 while copies are in flight', () => {
  let dir: string;
  let child: ServiceProcess | null = null;
  let svc: TestService | null = null;
  afterAll(() => cleanUpCrashTest(child, svc, dir));

  it('no leader fill copied twice or missed after the restart', { timeout: 90_000 }, async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-copytrade-crash-'));
    child = await spawnService({ DATA_DIR: dir, ...ENV });
    const call = caller(child.baseUrl);
    const lead = await call('lead', 'POST', '/v2/trade/users', { partner_user_id: 'lead' });
    expect(lead.status).toBe(201);
    const subs: Record<string, string> = {};
    for (const u of FOLLOWERS) {
      expect((await call(u, 'POST', '/v2/trade/users', { partner_user_id: u })).status).toBe(201);
      const s = await call(u, 'POST', '/v2/trade/copytrade', copyEveryFill(lead.body.safe_address, 1));
      expect(s.status).toBe(200);
      subs[u] = s.body.id;
    }
    const markets = (await call('lead', 'GET', '/v2/trade/markets?limit=4')).body.markets;
    const tokens: string[] = markets.map((m: any) => m.tokens[0].token_id);

    let acknowledged = 0;
    const burst = (async () => {
      for (let wave = 0; wave < 50; wave++) {
        const results = await Promise.all(
          tokens.map((t) =>
            call('lead', 'POST', '/v2/trade/order', {
              symbol: t,
              side: 'buy',
              type: 'MARKET',
              quote_amount: '2',
            }).catch(() => null),
          ),
        );
        acknowledged += results.filter((r) => r?.status === 200).length;
        if (results.some((r) => r === null)) return;
      }
    })();
    await poll(
      '12 leader orders acknowledged before the kill',
      async () => acknowledged,
      (n) => n >= 12,
      15_000,
      5,
    );
    child.child.kill('SIGKILL');
    await child.exited;
    await burst;

    svc = await startTestService({ store: await SqliteStore.open(dir, { lock: true }), env: ENV });
    await svc.services.copytrade.idle();
    const leaderId = (await svc.services.users.byPartnerUserId(svc.services.config.partnerId, 'lead').catch(() => null))
      ?._id;
    const fills = await (await svc.services.store.collection<TraderFill>(TRADER_FILLS)).find({});
    const leaderKeys = fills
      .filter((f) => f.address === lead.body.safe_address.toLowerCase() || (leaderId && f.userId === leaderId))
      .map((f) => `${f.transactionHash}:${f.logIndex}`);
    expect(leaderKeys.length).toBeGreaterThanOrEqual(12);
    for (const u of FOLLOWERS) {
      const h = await svc.call('GET', `/v2/trade/copytrade/history?limit=200&copytrade_id=${subs[u]}`, {
        token: KEY,
        headers: { 'x-partner-user-id': u },
      });
      expect(h.status).toBe(200);
      const rows: any[] = h.body.history;
      const keys = rows.map((r) => `${r.leader_fill.transaction_hash}:${r.leader_fill.log_index}`);
      expect(new Set(keys).size, u).toBe(keys.length);
      expect(new Set(keys), u).toEqual(new Set(leaderKeys));
      const copies = rows.filter((r) => r.result === 'COPIED');
      expect(copies.length, u).toBeGreaterThan(0);
      for (const c of copies) expect(c.order_status, c.order_id).toMatch(/FILLED|CANCELED/);
      const one = await svc.call('GET', `/v2/trade/copytrade/${subs[u]}`, {
        token: KEY,
        headers: { 'x-partner-user-id': u },
      });
      expect(one.body.counters.copies + one.body.counters.skipped, u).toBe(leaderKeys.length);
      // every copy is one order of the subscription (record_id), none twice
      const orders = await svc.services.actors.findOwned(
        (await svc.services.users.byPartnerUserId(svc.services.config.partnerId, u))._id,
        { kind: 'order' },
        { limit: 1000 },
      );
      const mine = orders.records.filter((o) => (o.view as any).record_id === subs[u]);
      expect(mine.length, u).toBe(copies.length);
    }
  });
});

/**
 * The real leader wallet replayed (COPYTRADE_LEADER_REPLAY) and `kill -9` while its fills are being
 * copied: after the restart the replay continues from its durable cursor and each of the 470 fills
 * is in the follower's history exactly once.
 */
describe('copytrade: kill -9 during the real leader wallet replay', () => {
  let dir: string;
  let child: ServiceProcess | null = null;
  let svc: TestService | null = null;
  afterAll(() => cleanUpCrashTest(child, svc, dir));

  it('each of the 470 fills copied or skipped once across the restart', { timeout: 120_000 }, async () => {
    const replay = { ...ENV, COPYTRADE_LEADER_REPLAY: 'on', COPYTRADE_LEADER_REPLAY_SPEED: '20000' };
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-copytrade-replay-crash-'));
    child = await spawnService({ DATA_DIR: dir, ...replay });
    const call = caller(child.baseUrl);
    expect((await call('f', 'POST', '/v2/trade/users', { partner_user_id: 'f' })).status).toBe(201);
    const sub = await call(
      'f',
      'POST',
      '/v2/trade/copytrade',
      copyEveryFill('0xb77b6ef359f02192fb077227499f9f853d4870a5', 1),
    );
    expect(sub.status).toBe(200);
    const handled = async () => {
      const r = await call('f', 'GET', `/v2/trade/copytrade/${sub.body.id}`);
      return (r.body.counters.copies as number) + (r.body.counters.skipped as number);
    };
    // the replay runs (470 fills over ~5 s at this speed): kill it part-way
    await poll('40 leader fills handled before the kill', handled, (n) => n >= 40, 15_000, 20);
    child.child.kill('SIGKILL');
    await child.exited;

    svc = await startTestService({ store: await SqliteStore.open(dir, { lock: true }), env: replay });
    const userId = (await svc.services.users.byPartnerUserId(svc.services.config.partnerId, 'f'))._id;
    await poll(
      'all 470 handled after the restart',
      async () => (await svc!.services.copytrade.history(userId, 1000)).length,
      (n) => n >= 470,
      60_000,
    );
    await svc.services.copytrade.idle();
    const rows = await svc.services.copytrade.history(userId, 1000);
    const keys = new Set(rows.map((r) => `${r.fill!.transactionHash}:${r.fill!.logIndex}`));
    expect(rows).toHaveLength(470);
    expect(keys.size).toBe(470);
    const one = await svc.call('GET', `/v2/trade/copytrade/${sub.body.id}`, {
      token: KEY,
      headers: { 'x-partner-user-id': 'f' },
    });
    expect(one.body.counters.copies + one.body.counters.skipped).toBe(470);
    const orders = await svc.services.actors.findOwned(userId, { kind: 'order' }, { limit: 1000 });
    expect(orders.records.length).toBe(rows.filter((r) => r.kind === 'copy').length);
  });
});
