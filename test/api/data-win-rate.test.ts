import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../helpers.js';
import { poll, Trading } from './trading-kit.js';

/**
 * The win rate through the venue (orders, fills, the trade history, the aggregates): a win or a loss
 * is a closed position (the reference's "fraction of closed positions with positive realized PnL"),
 * so a position sold in two parts counts once, and one still held counts not at all.
 */
describe('win rate: closed positions, through real orders', () => {
  let svc: TestService;
  const tr = new Trading(() => svc);
  beforeAll(async () => {
    svc = await startTestService();
    await tr.init(['wr']);
  });
  afterAll(async () => {
    await svc?.close();
  });

  it('a position bought, then sold in two market sells, is one won or lost position', async () => {
    const f = await tr.freshToken();
    await tr.buyShares('wr', f.token, 20);
    const metrics = async () => (await svc.call('GET', `/v2/trade/traders/${tr.address.wr}/metrics?window=all`)).body;
    const sell = { symbol: f.token, side: 'sell', type: 'MARKET', size: '10' };
    expect(await tr.post('wr', sell)).toMatchObject({ status: 200, body: { status: 'FILLED' } });
    // half sold: the position is open, neither won nor lost
    const half = await poll('the first sell in the aggregates', metrics, (m) => m.trades >= 2);
    expect([half.wins, half.losses, half.win_rate]).toEqual([0, 0, '0']);
    expect(await tr.post('wr', sell)).toMatchObject({ status: 200, body: { status: 'FILLED' } });
    const closed = await poll('the second sell in the aggregates', metrics, (m) => m.trades >= 3);
    expect(closed.wins + closed.losses).toBe(1);
    expect(closed.win_rate).toBe(closed.wins === 1 ? '1' : '0');
  });
});
