import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../helpers.js';
import { copyEveryFill, leaderBuy, recordLeaderBuy } from './trading-kit.js';

const LEADER = '0x' + '6f'.repeat(20);
const as = (u: string) => ({ headers: { 'x-partner-user-id': u } });

/**
 * GET /v2/trade/copytrade/history pages beyond its 200-row limit: `next_cursor` (opaque, null at
 * the end) is the next request's `cursor`; the pages together are the whole history, newest first,
 * each row once; a cursor altered or of another user is refused.
 */
describe('copytrade: the history pages with a cursor', () => {
  let svc: TestService;
  let id = '';
  beforeAll(async () => {
    svc = await startTestService({ env: { SIM_MAKER_REFILL_MS: '3600000' } });
    for (const u of ['paged', 'other'])
      expect((await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: u } })).status).toBe(201);
    // PAUSED: every leader fill becomes a skip row (reason paused), nothing is traded
    const sub = await svc.call('POST', '/v2/trade/copytrade', {
      ...as('paged'),
      body: copyEveryFill(LEADER, 1, { status: 'PAUSED' }),
    });
    expect(sub.status).toBe(200);
    id = sub.body.id;
    const m = svc.services.venue.markets()[0]!;
    const block = Math.floor(Date.now() / 1000) + 2;
    for (let n = 1; n <= 5; n++)
      await recordLeaderBuy(svc, LEADER, n, { conditionId: m.conditionId, tokenId: m.tokens[0]!.tokenId }, block);
    await svc.services.copytrade.idle();
  });
  afterAll(async () => {
    await svc?.close();
  });

  it('pages of 2, 2 and 1 rows make the whole history, newest first; null cursor at the end', async () => {
    const whole = await svc.call('GET', '/v2/trade/copytrade/history?limit=200', as('paged'));
    expect(whole.status).toBe(200);
    expect(whole.body.history).toHaveLength(5);
    expect(whole.body.next_cursor).toBeNull();
    expect(whole.body.history.every((r: any) => r.result === 'SKIPPED' && r.reason === 'paused')).toBe(true);

    const ids: string[] = [];
    const sizes: number[] = [];
    let cursor: string | null = null;
    do {
      const q: string = cursor ? `&cursor=${encodeURIComponent(cursor)}` : '';
      const page = await svc.call('GET', `/v2/trade/copytrade/history?limit=2&copytrade_id=${id}${q}`, as('paged'));
      expect(page.status).toBe(200);
      sizes.push(page.body.history.length);
      ids.push(...page.body.history.map((r: any) => r.id));
      cursor = page.body.next_cursor;
    } while (cursor);
    expect(sizes).toEqual([2, 2, 1]);
    expect(ids).toEqual(whole.body.history.map((r: any) => r.id));
  });

  it("400 for an altered cursor and for another user's; nothing else changes", async () => {
    const first = await svc.call('GET', '/v2/trade/copytrade/history?limit=2', as('paged'));
    const cursor: string = first.body.next_cursor;
    expect(cursor).toEqual(expect.any(String));
    const altered = cursor.slice(0, -2) + (cursor.endsWith('AA') ? 'BB' : 'AA');
    for (const [u, c] of [
      ['paged', altered],
      ['other', cursor],
    ] as const) {
      const r = await svc.call('GET', `/v2/trade/copytrade/history?limit=2&cursor=${encodeURIComponent(c)}`, as(u));
      expect(r.status, u).toBe(400);
      expect(r.body).toEqual({ error: expect.any(String), message: expect.stringMatching(/cursor is not valid/) });
    }
    const again = await svc.call('GET', '/v2/trade/copytrade/history?limit=2', as('paged'));
    expect(again.body.history).toEqual(first.body.history);
  });
});

/**
 * Two leader fills reach a follower before its first copy's order is at the venue: the second copy
 * is sized on the dollars the first leaves (BUY_MAX), not on the same balance and then refused.
 * (A copy refused before any fill names its leader fill too: test/machines/copytrade.test.ts.)
 */
describe('copytrade: leader fills in quick succession', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService({ env: { SIM_MAKER_REFILL_MS: '3600000' } });
    expect((await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'short' } })).status).toBe(201);
  });
  afterAll(async () => {
    await svc?.close();
  });

  it('two leader buys in one batch: the second copy is sized on what the first leaves, not refused', async () => {
    const sub = await svc.call('POST', '/v2/trade/copytrade', {
      ...as('short'),
      body: copyEveryFill(LEADER, 1_000_000, { buy_time_in_force: 'GTC' }),
    });
    expect(sub.status).toBe(200);
    const m = svc.services.venue.markets()[0]!;
    const market = { conditionId: m.conditionId, tokenId: m.tokens[0]!.tokenId };
    const block = Math.floor(Date.now() / 1000) + 2;
    const fills = [1, 2].map((n) => leaderBuy(LEADER, n, market, block));
    await svc.services.history.recordAlone({ trades: [], fills, cash: [] });
    await svc.services.copytrade.idle();
    const h = await svc.call('GET', '/v2/trade/copytrade/history?limit=200', as('short'));
    expect(h.status).toBe(200);
    const [second, first] = h.body.history;
    expect(first).toMatchObject({ result: 'COPIED', leader_fill: { log_index: 1 } });
    // the first copy took the wallet's dollars: the second is a skip of the rules, with its leader fill
    expect(second).toMatchObject({
      result: 'SKIPPED',
      reason: expect.stringMatching(/^(insufficient_pusd|below_market_minimum)$/),
      market_id: m.conditionId,
      token_id: market.tokenId,
      side: 'BUY',
      leader_fill: { transaction_hash: fills[1]!.transactionHash, log_index: 2, side: 'BUY', price: '0.5', size: '1' },
    });
    expect(h.body.next_cursor).toBeNull();
  });
});
