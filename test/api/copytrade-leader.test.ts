import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { leaderRows } from '../../engine/copytrade/leader-replay.js';
import { startTestService, type TestService } from '../helpers.js';
import { poll, copyEveryFill } from './trading-kit.js';

/**
 * The real leader wallet replayed on the replay clock (COPYTRADE_LEADER_REPLAY, at a speed that
 * makes its 27.7 recorded hours a blink): each of its 470 fills reaches the follower's
 * subscription and is copied or skipped, with its reason, exactly once; its markets trade on the venue.
 */
describe('copytrade: the real leader wallet replayed', () => {
  let svc: TestService;
  const rows = leaderRows();
  const wallet = rows[0]!.wallet;

  beforeAll(async () => {
    svc = await startTestService({
      env: { COPYTRADE_LEADER_REPLAY: 'on', COPYTRADE_LEADER_REPLAY_SPEED: '100000000' },
    });
    await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'copier' } });
  });
  afterAll(async () => {
    await svc?.close();
  });

  it('every one of the 470 fills is copied or skipped once, with its reason', { timeout: 120_000 }, async () => {
    expect(rows).toHaveLength(470);
    const market = await svc.call('GET', `/v2/trade/book?token_id=${rows[0]!.tokenId}`);
    expect(market).toMatchObject({ status: 200, body: { asks: expect.any(Array) } });
    const headers = { 'x-partner-user-id': 'copier' };
    const sub = await svc.call('POST', '/v2/trade/copytrade', {
      headers,
      body: copyEveryFill(wallet, 2, { buy_insufficient_usdc_action: 'SKIP' }),
    });
    expect(sub).toMatchObject({ status: 200, body: { status: 'ACTIVE' } });
    const one = await poll(
      'all 470 handled',
      async () => (await svc.call('GET', `/v2/trade/copytrade/${sub.body.id}`, { headers })).body,
      (b) => b.counters.copies + b.counters.skipped === 470,
      90_000,
    );
    await svc.services.copytrade.idle();
    const history: any[] = [];
    for (const r of await svc.services.copytrade.history(
      (await svc.services.users.byPartnerUserId(svc.services.config.partnerId, 'copier'))._id,
      1000,
    ))
      history.push(r);
    expect(history).toHaveLength(470);
    const keys = new Set(history.map((r) => `${r.fill.transactionHash}:${r.fill.logIndex}`));
    expect(keys.size).toBe(470);
    for (const r of history) {
      if (r.kind === 'skip') expect(r.reason, JSON.stringify(r)).toMatch(/^[a-z_]+$/);
      expect(r.fill.side).toBe('BUY');
    }
    expect(one.counters.copies).toBeGreaterThan(0);
    expect(one.counters.skipped_by_reason.market_unknown ?? 0).toBe(0);
    const api = await svc.call('GET', '/v2/trade/copytrade/history?limit=200', { headers });
    expect(api.status).toBe(200);
    expect(api.body.history).toHaveLength(200);
    expect(api.body.history[0].leader_address.toLowerCase()).toBe(wallet);
  });

  it('replayed fills and the venue own trades share one chain order on the tape', async () => {
    // the follower's copies are venue trades made while the replay ran: walk the whole tape
    const seen: any[] = [];
    let q = '';
    for (;;) {
      const page = await svc.call('GET', `/v2/trade/trades?limit=500${q}`);
      expect(page.status).toBe(200);
      seen.push(...page.body.trades);
      if (page.body.next_cursor === null) break;
      q = `&cursor_ts=${page.body.next_cursor}&next_cursor_log_idx=${page.body.next_cursor_log_idx}`;
    }
    const replayed = seen.filter((t) => t.source === 'replay');
    expect(replayed).toHaveLength(470);
    expect(seen.filter((t) => t.source === 'venue').length).toBeGreaterThan(0);
    // newest first: positions never go back up, and no two rows share one
    for (let i = 1; i < seen.length; i++) {
      const [a, b] = [seen[i - 1], seen[i]];
      expect(a.block_timestamp > b.block_timestamp || a.log_index > b.log_index, JSON.stringify([a, b])).toBe(true);
    }
  });
});
