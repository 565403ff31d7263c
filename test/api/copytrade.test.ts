import { getAddress } from 'ethers';
import { io as connect } from 'socket.io-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CopytradePush } from '../../api/push-events.js';
import { MASTER_KEY, startTestService, type TestService } from '../helpers.js';
import { poll, Trading } from './trading-kit.js';

const BODY = {
  buy_order_type: 'ALL',
  buy_size_mode: 'PCT_OF_LEADER_TRADE',
  buy_size_value: 50,
  buy_insufficient_usdc_action: 'BUY_MAX',
  buy_time_in_force: 'FOK',
  sell_order_type: 'ALL',
  sell_size_mode: 'PCT_OF_LEADER_TRADE',
  sell_size_value: 50,
  sell_insufficient_shares_action: 'SELL_MAX',
};

/**
 * Copytrade through the real path: a leader who is a user of this service trades over REST, its
 * fills are recorded in the trade history, and the followers' subscriptions copy them (or record a
 * skip with its reason) as child orders of the subscription.
 */
describe('copytrade: a follower mirrors a leader user', () => {
  let svc: TestService;
  const tr = new Trading(() => svc);
  let leader = '';

  beforeAll(async () => {
    svc = await startTestService();
    await tr.init(['lead', 'follow', 'paper', 'risk', 'hold', 'chain']);
    const r = await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'lead' } });
    leader = getAddress(r.body.safe_address);
  });
  afterAll(async () => {
    await svc?.close();
  });

  const as = (u: string) => ({ 'x-partner-user-id': u });
  const subscribe = (u: string, body: Record<string, unknown>) =>
    svc.call('POST', '/v2/trade/copytrade', { body, headers: as(u) });
  const history = async (u: string) =>
    (await svc.call('GET', '/v2/trade/copytrade/history?limit=200', { headers: as(u) })).body.history as any[];

  it('400 for unknown properties, a bad checksum, a missing field, oneself; nothing created', async () => {
    const own = (await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'follow' } })).body;
    const bad = [
      { ...BODY, leader_address: own.safe_address },
      { ...BODY, leader_address: own.eoa_address.toLowerCase() },
      { ...BODY, leader_address: leader, extra: 1 },
      { ...BODY, leader_address: leader.slice(0, -1) + (leader.endsWith('a') ? 'B' : 'a') },
      { ...BODY, leader_address: '0x1234' },
      { ...BODY, leader_address: leader, buy_size_mode: undefined },
      { ...BODY, leader_address: leader, sell_size_value: undefined },
      { ...BODY, leader_address: leader, market_ids_include: ['a'], market_ids_exclude: ['b'] },
    ];
    for (const body of bad) {
      const r = await subscribe('follow', body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error).toBeTypeOf('string');
    }
    const list = await svc.call('GET', '/v2/trade/copytrade', { headers: as('follow') });
    expect(list).toMatchObject({ status: 200, body: { copytrades: [] } });
  });

  it('leader buys → 50 % follower buys half; leader sells → follower sells by its mode; 409 twice', async () => {
    const sub = await subscribe('follow', { ...BODY, leader_address: leader });
    expect(sub).toMatchObject({ status: 200, body: { id: expect.stringMatching(/^ct_/), status: 'ACTIVE' } });
    const id = sub.body.id;
    const again = await subscribe('follow', { ...BODY, leader_address: leader.toLowerCase() });
    expect(again).toMatchObject({ status: 409, body: { error: expect.any(String) } });

    const f = await tr.freshToken();
    // large enough that the copy's market buy takes more than the touch's level
    const buy = await tr.post('lead', { symbol: f.token, side: 'buy', type: 'MARKET', quote_amount: '120' });
    expect(buy).toMatchObject({ status: 200, body: { status: 'FILLED' } });
    const rows = await poll(
      'copy of the buy',
      () => history('follow'),
      (h) => h.length === 1 && h[0].order_status === 'FILLED',
    );
    const leaderUsd = Number(buy.body.matched_amount);
    expect(rows[0]).toMatchObject({
      copytrade_id: id,
      result: 'COPIED',
      reason: null,
      side: 'BUY',
      order_type: 'MARKET',
      token_id: f.token,
      market_id: expect.any(String),
      leader_address: leader,
      is_simulation: false,
    });
    expect(Number(rows[0].amount)).toBeCloseTo(leaderUsd / 2, 5);
    const copy = await tr.orderById('follow', rows[0].order_id);
    expect(copy).toMatchObject({ status: 200, body: { status: 'FILLED', side: 'buy', record_id: id } });
    // the row's price is the copy's fill price (its order's average), not the touch it was decided at
    expect(rows[0].price).toBe(copy.body.avg_price);
    // in the follower's activity, linked to the subscription
    expect(await tr.order('follow', rows[0].order_id)).toMatchObject({
      kind: 'order',
      status: 'FILLED',
      record_id: id,
    });

    const sell = await tr.post('lead', { symbol: f.token, side: 'sell', type: 'MARKET', size: '10' });
    expect(sell).toMatchObject({ status: 200, body: { status: 'FILLED', filled_size: '10' } });
    const after = await poll(
      'copy of the sell',
      () => history('follow'),
      (h) => h.length === 2 && h[0].order_status === 'FILLED',
    );
    expect(after[0]).toMatchObject({ result: 'COPIED', side: 'SELL', shares: '5' });
    const sold = await tr.orderById('follow', after[0].order_id);
    expect(sold).toMatchObject({ status: 200, body: { status: 'FILLED', side: 'sell', filled_size: '5' } });
    expect(after[0].price).toBe(sold.body.avg_price);

    const one = await svc.call('GET', `/v2/trade/copytrade/${id}`, { headers: as('follow') });
    expect(one).toMatchObject({
      status: 200,
      body: { id, status: 'ACTIVE', leader_address: leader, counters: { copies: 2, skipped: 0 } },
    });
    expect(Number(one.body.counters.spent_usd)).toBeCloseTo(leaderUsd / 2, 2);
    expect(one.body.counters.realized_pnl).toMatch(/^-?\d/);
    expect(one.body.counters.unrealized_pnl).toMatch(/^-?\d/);
  });

  it('pause → the next fill is skipped and recorded as such; resume → the one after is copied', async () => {
    const id = (await svc.call('GET', '/v2/trade/copytrade', { headers: as('follow') })).body.copytrades[0].id;
    // copytrade.updated pushes to the follower's connection
    const pushes: CopytradePush[] = [];
    const socket = connect(`${svc.baseUrl}/v2/trade`, {
      auth: { token: MASTER_KEY, partner_user_id: 'follow' },
      transports: ['websocket'],
      forceNew: true,
      reconnection: false,
    });
    socket.on('copytrade.updated', (p) => pushes.push(p));
    await new Promise((resolve, reject) => {
      socket.once('connect', () => resolve(null));
      socket.once('connect_error', reject);
    });
    const paused = await svc.call('PATCH', `/v2/trade/copytrade/${id}/status`, {
      body: { status: 'PAUSED' },
      headers: as('follow'),
    });
    expect(paused).toMatchObject({ status: 200, body: { id, status: 'PAUSED' } });
    const f = await tr.freshToken();
    await tr.post('lead', { symbol: f.token, side: 'buy', type: 'MARKET', quote_amount: '6' });
    const skipped = await poll(
      'skip',
      () => history('follow'),
      (h) => h.length === 3,
    );
    expect(skipped[0]).toMatchObject({ result: 'SKIPPED', reason: 'paused', order_id: null, token_id: f.token });

    const resumed = await svc.call('PATCH', `/v2/trade/copytrade/${id}/status`, {
      body: { status: 'ACTIVE' },
      headers: as('follow'),
    });
    expect(resumed).toMatchObject({ status: 200, body: { id, status: 'ACTIVE' } });
    await tr.post('lead', { symbol: f.token, side: 'buy', type: 'MARKET', quote_amount: '6' });
    const copied = await poll(
      'copy after resume',
      () => history('follow'),
      (h) => h.length === 4,
    );
    expect(copied[0]).toMatchObject({ result: 'COPIED', reason: null, side: 'BUY' });
    const one = await svc.call('GET', `/v2/trade/copytrade/${id}`, { headers: as('follow') });
    expect(one.body.counters).toMatchObject({ copies: 3, skipped: 1, skipped_by_reason: { paused: 1 } });
    await poll(
      'pushes',
      async () => pushes,
      (p) => p.some((x) => x.counters && (x.counters as any).copies === 3),
    );
    socket.disconnect();
    expect(pushes.map((p) => p.status)).toContain('PAUSED');
    expect(pushes[0]).toMatchObject({ id, platform_user_id: expect.any(String), revision: expect.any(Number) });
    const revisions = pushes.map((p) => p.revision);
    expect([...revisions].sort((a, b) => a - b)).toEqual(revisions);
  });

  it('a simulation trades nothing and shows paper PnL; reset clears it', async () => {
    const sub = await subscribe('paper', { ...BODY, leader_address: leader, is_simulation: true });
    expect(sub).toMatchObject({ status: 200, body: { status: 'ACTIVE' } });
    const f = await tr.freshToken();
    await tr.post('lead', { symbol: f.token, side: 'buy', type: 'MARKET', quote_amount: '20' });
    const rows = await poll(
      'paper copy',
      () => history('paper'),
      (h) => h.length === 1,
    );
    expect(rows[0]).toMatchObject({ result: 'COPIED', is_simulation: true, order_id: null });
    expect(await tr.openOrders('paper')).toEqual([]);
    const acts = await svc.call('GET', '/v2/trade/activity?limit=50', { headers: as('paper') });
    expect(acts.body.activity.filter((a: any) => a.kind === 'order' || a.type === 'trade')).toEqual([]);
    const sim = await svc.call('GET', '/v2/trade/copytrade/simulation', { headers: as('paper') });
    expect(sim).toMatchObject({
      status: 200,
      body: { initial_balance_usdc: '1000', positions: [{ token_id: f.token }] },
    });
    expect(Number(sim.body.cash_usdc)).toBeLessThan(1000);
    expect(sim.body.unrealized_pnl).toMatch(/^-?\d/);
    const pnl = await svc.call('GET', '/v2/trade/copytrade/pnl', { headers: as('paper') });
    expect(pnl).toMatchObject({
      status: 200,
      body: { realized_pnl_24h: '0', realized_pnl_lifetime: '0', simulation: { realized_pnl_lifetime: '0' } },
    });
    const reset = await svc.call('POST', `/v2/trade/copytrade/${sub.body.id}/simulation/reset`, {
      headers: as('paper'),
    });
    expect(reset).toMatchObject({ status: 200, body: { deleted_count: 1 } });
    const cleared = await svc.call('GET', '/v2/trade/copytrade/simulation', { headers: as('paper') });
    expect(cleared.body).toMatchObject({ cash_usdc: '1000', positions: [] });
  });

  it('risk controls: close_at_price_cents sells the position at once, max_hold_seconds by its timer', async () => {
    const close = await subscribe('risk', { ...BODY, leader_address: leader, close_at_price_cents: 1 });
    const hold = await subscribe('hold', { ...BODY, leader_address: leader, max_hold_seconds: 1 });
    // 'chain' follows 'follow': the copies 'follow' makes are not copied again (no echo along chains or cycles)
    const followWallet = (await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'follow' } })).body;
    const chain = await subscribe('chain', { ...BODY, leader_address: followWallet.safe_address });
    expect([close.status, hold.status, chain.status]).toEqual([200, 200, 200]);
    const f = await tr.freshToken();
    await tr.post('lead', { symbol: f.token, side: 'buy', type: 'MARKET', quote_amount: '20' });
    for (const [u, name] of [
      ['risk', 'close'],
      ['hold', 'hold'],
    ] as const) {
      const rows = await poll(
        `${name} exit`,
        () => history(u),
        (h) => h.length === 2 && h.every((r) => r.order_status === 'FILLED'),
      );
      expect(rows[0]).toMatchObject({ result: 'COPIED', side: 'SELL', detail: `risk control: ${name}` });
      expect(rows[1]).toMatchObject({ result: 'COPIED', side: 'BUY' });
      expect(rows[0].shares).toBe((await tr.orderById(u, rows[1].order_id)).body.filled_size);
      const positions = await svc.call('GET', '/v2/trade/positions', { headers: as(u) });
      expect(positions.body.positions.filter((p: any) => p.asset === f.token && Number(p.size) > 0)).toEqual([]);
    }
    expect((await history('follow')).filter((r) => r.token_id === f.token)).toHaveLength(1);
    expect(await history('chain')).toEqual([]);
  });

  it('PATCH changes settings, DELETE soft-deletes (history kept); 404 for another user', async () => {
    const id = (await svc.call('GET', '/v2/trade/copytrade', { headers: as('follow') })).body.copytrades[0].id;
    const patched = await svc.call('PATCH', `/v2/trade/copytrade/${id}`, {
      body: { buy_size_value: 25, buy_max_trade_size: 250 },
      headers: as('follow'),
    });
    expect(patched).toMatchObject({ status: 200, body: { id, buy_size_value: '25', buy_max_trade_size: '250' } });
    const leaderChange = await svc.call('PATCH', `/v2/trade/copytrade/${id}`, {
      body: { leader_address: leader },
      headers: as('follow'),
    });
    expect(leaderChange.status).toBe(400);
    expect((await svc.call('GET', `/v2/trade/copytrade/${id}`, { headers: as('paper') })).status).toBe(404);
    const del = await svc.call('DELETE', `/v2/trade/copytrade/${id}`, { headers: as('follow') });
    expect(del).toMatchObject({ status: 200, body: { ok: true } });
    const list = await svc.call('GET', '/v2/trade/copytrade', { headers: as('follow') });
    expect(list.body.copytrades).toEqual([]);
    // the copies and the skip above, and the copies of the leader's buys of the simulation and risk tests
    expect((await history('follow')).length).toBe(6);
    const resubscribe = await subscribe('follow', { ...BODY, leader_address: leader });
    expect(resubscribe).toMatchObject({ status: 200, body: { status: 'ACTIVE' } });
  });

  it('PATCH with a copy_end_date already past answers ENDED, as GET then shows; created_at ≤ updated_at', async () => {
    const sub = await subscribe('hold', { ...BODY, leader_address: leader.toLowerCase(), status: 'PAUSED' });
    expect(sub).toMatchObject({ status: 200, body: { status: 'PAUSED' } });
    const id = sub.body.id;
    const fresh = await svc.call('GET', `/v2/trade/copytrade/${id}`, { headers: as('hold') });
    expect(Date.parse(fresh.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(fresh.body.created_at));
    const patched = await svc.call('PATCH', `/v2/trade/copytrade/${id}`, {
      body: { copy_end_date: '2020-01-01T00:00:00.000Z' },
      headers: as('hold'),
    });
    expect(patched).toMatchObject({
      status: 200,
      body: { id, status: 'ENDED', copy_end_date: '2020-01-01T00:00:00.000Z' },
    });
    const read = await svc.call('GET', `/v2/trade/copytrade/${id}`, { headers: as('hold') });
    expect(read).toMatchObject({ status: 200, body: { id, status: 'ENDED' } });
    expect(Date.parse(read.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(read.body.created_at));
  });
});
