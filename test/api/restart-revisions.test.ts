import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../engine/store/sqlite.js';
import { startTestService, type TestService } from '../helpers.js';
import { px, tokenPicker } from './trading-kit.js';

/**
 * A restart changes nothing a partner can see of a strategy that did not move (no new
 * revision, no new `updated_at`, no pushed update for an ICEBERG, PEGGED or BRACKET whose state is
 * unchanged). The start-up
 * reconciliation tells each strategy the state of its child orders; when that changes nothing
 * stored, the host writes nothing (engine/actor-host.ts `step`).
 */
describe('a restart with nothing changed keeps revisions (SQLite store on disk)', () => {
  let dir: string;
  let svc: TestService | undefined;
  afterAll(async () => {
    await svc?.close();
    if (dir) await fs.rm(dir, { recursive: true, force: true });
  });

  it('ICEBERG, PEGGED and a waiting BRACKET keep revision and updated_at across two restarts', async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-revisions-'));
    const env = { SIM_MAKER_REFILL_MS: '3600000', SIM_REPLAY: 'off' };
    const as = { 'x-partner-user-id': 'alice' };
    svc = await startTestService({ store: await SqliteStore.open(dir), env });
    await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'alice' }, headers: as });
    const markets = (await svc.call('GET', '/v2/trade/markets?limit=80')).body.markets as any[];
    const pick = tokenPicker(
      () => markets,
      async (t) => (await svc!.call('GET', `/v2/trade/book?token_id=${t}`)).body,
    );
    const picks = [await pick(0.21, 0.59), await pick(0.21, 0.59), await pick(0.21, 0.59)];
    const post = async (body: unknown) => {
      const r = await svc!.call('POST', '/v2/trade/order', { body, headers: as });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return r.body;
    };
    await post({
      symbol: picks[0]!.token,
      side: 'buy',
      type: 'ICEBERG',
      price: px(picks[0]!.bid - 0.05),
      size: '30',
      execution: { clip_size: '10' },
    });
    await post({
      symbol: picks[1]!.token,
      side: 'buy',
      type: 'PEGGED',
      budget_usdc: '20',
      price_ceiling: Number(px(picks[1]!.bid + 0.01)),
    });
    // a buy entry resting below the touch, with brackets waiting for it
    await post({
      symbol: picks[2]!.token,
      side: 'buy',
      type: 'LIMIT',
      price: px(picks[2]!.bid - 0.05),
      size: '10',
      take_profit: { price: px(picks[2]!.ask + 0.1) },
    });
    await svc.services.strategies.idle();
    const list = async () =>
      (await svc!.call('GET', '/v2/trade/strategies?limit=50', { headers: as })).body.strategies as any[];
    const before = await list();
    expect(before.map((s) => s.type).sort()).toEqual(['BRACKET', 'ICEBERG', 'PEGGED']);
    expect(before.every((s) => s.status === 'ACTIVE' || s.status === 'PENDING')).toBe(true);
    for (let i = 0; i < 2; i++) {
      await svc.close();
      svc = await startTestService({ store: await SqliteStore.open(dir), env });
      await svc.services.strategies.idle();
      // the same records, revisions and updated_at: a restart writes nothing to an unchanged actor
      expect(await list()).toEqual(before);
    }
  });
});
