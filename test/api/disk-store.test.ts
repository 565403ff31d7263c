import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../engine/store/sqlite.js';
import { startTestService, type TestService } from '../helpers.js';
import { px, tokenPicker } from './trading-kit.js';

/**
 * Behaviour that depends on writes taking real time: the SQLite store on disk (group commit),
 * as `npm start` runs it, rather than in memory.
 */
describe('on the on-disk store', () => {
  let svc: TestService;
  let dir: string;
  let markets: any[];
  const alice = { 'x-partner-user-id': 'alice' };
  const book = async (t: string) => (await svc.call('GET', `/v2/trade/book?token_id=${t}&depth=10`)).body;
  const freshToken = tokenPicker(() => markets, book);

  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-disk-'));
    svc = await startTestService({
      store: await SqliteStore.open(dir),
      env: { SIM_MAKER_REFILL_MS: '3600000', SIM_INITIAL_PUSD: '1000000' },
    });
    await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'alice' } });
    markets = (await svc.call('GET', '/v2/trade/markets?limit=500')).body.markets;
  });
  afterAll(async () => {
    await svc.close();
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('DELETE of a working ICEBERG or PEGGED answers 200 with the record CANCELED, not ACTIVE', async () => {
    const { token, bid } = await freshToken(0.3, 0.6);
    const iceberg = await svc.call('POST', '/v2/trade/order', {
      body: {
        symbol: token,
        side: 'buy',
        type: 'ICEBERG',
        price: px(bid - 0.05),
        size: '100',
        execution: { clip_size: '20' },
      },
      headers: alice,
    });
    const peg = await svc.call('POST', '/v2/trade/order', {
      body: { symbol: token, side: 'buy', type: 'PEGGED', budget_usdc: '20' },
      headers: alice,
    });
    for (const r of [iceberg, peg]) {
      expect(r.body.status).toBe('ACTIVE');
      const del = await svc.call('DELETE', `/v2/trade/strategies/${r.body.record_id}`, { headers: alice });
      expect(del).toMatchObject({ status: 200, body: { status: 'CANCELED', message: 'canceled by DELETE strategy' } });
    }
    expect((await svc.call('GET', '/v2/trade/orders/open', { headers: alice })).body.orders).toEqual([]);
  });
});
