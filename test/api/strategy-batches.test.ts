import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimVenue } from '../../engine/venue/sim-venue.js';
import { startTestService, type TestService } from '../helpers.js';
import { poll } from './trading-kit.js';

/**
 * The strategies one venue operation concerns are stepped together: a book update that fires
 * several armed stops delivers their touch in ONE host batch (one store transaction), and a
 * market's resolution ends its armed strategies in ONE host batch; armed stops are passivated
 * (not in memory), so the batch loads them first. Read back through the real API.
 */
describe('fired stops and resolution cancels: one host batch each', () => {
  let svc: TestService;
  const u = { 'x-partner-user-id': 'erin' };
  /** The ids of each host batch, in call order. */
  const batches: string[][] = [];
  let market: any;
  let up: string;

  beforeAll(async () => {
    // one provider level a side, no refill: the test empties the bids, then its own bid is the touch
    svc = await startTestService({ env: { SIM_CONTROL: 'on', SIM_MAKER_LEVELS: '1', SIM_MAKER_REFILL_MS: '3600000' } });
    const host = svc.services.host;
    const batch = host.batch.bind(host);
    host.batch = (ids, ...rest) => {
      const list = [...ids];
      batches.push(list);
      return batch(list, ...rest);
    };
    await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'erin' } });
    const markets = (await svc.call('GET', '/v2/trade/markets?limit=500&offset=1001')).body.markets;
    market = markets.find((x: any) => /^eth-15min-up-or-down-/.test(x.slug)) ?? markets[7];
    up = market.tokens[0].token_id;
    expect(
      await svc.call('POST', '/v2/trade/positions/split', {
        body: { condition_id: market.condition_id, amount: '1100' },
        headers: u,
      }),
    ).toMatchObject({ status: 200 });
  });
  afterAll(async () => {
    await svc.close();
  });

  const stop = async (price: string) => {
    const r = await svc.call('POST', '/v2/trade/order', {
      body: { symbol: up, side: 'sell', type: 'STOP_LOSS', price, size: '10' },
      headers: u,
    });
    expect(r).toMatchObject({ status: 200, body: { status: 'ACTIVE' } });
    return r.body.record_id as string;
  };
  const strategies = async () =>
    (await svc.call('GET', '/v2/trade/strategies?limit=500', { headers: u })).body.strategies as any[];
  const batchWith = (ids: string[]) => batches.find((b) => ids.every((id) => b.includes(id)));

  it('three stops crossed by one book update fire in one host batch; their sells are placed', async () => {
    const fired = [await stop('0.3'), await stop('0.3'), await stop('0.3')];
    const armed = [await stop('0.1'), await stop('0.1'), await stop('0.1')];
    const bid = (await svc.call('GET', `/v2/trade/book?token_id=${up}`)).body.bids[0];
    const dump = await svc.call('POST', '/v2/trade/order', {
      body: { symbol: up, side: 'sell', type: 'LIMIT', price: '0.01', size: bid.size, time_in_force: 'IOC' },
      headers: u,
    });
    expect(dump).toMatchObject({ status: 200, body: { status: 'FILLED' } });
    batches.length = 0;
    // erin's own bid at 0.2 is the touch: the three stops at 0.3 fire at it, those at 0.1 do not
    const ownBid = await svc.call('POST', '/v2/trade/order', {
      body: { symbol: up, side: 'buy', type: 'LIMIT', price: '0.2', size: '5' },
      headers: u,
    });
    expect(ownBid).toMatchObject({ status: 200, body: { status: 'OPEN' } });
    const all = await poll('three stops fired', strategies, (xs) =>
      fired.every((id) => xs.find((x) => x.record_id === id)?.status === 'TRIGGERED'),
    );
    for (const id of fired) await svc.services.strategies.whenQuiet(id);
    expect(batchWith(fired)).toBeDefined();
    expect(all.filter((x) => armed.includes(x.record_id)).map((x) => x.status)).toEqual(['ACTIVE', 'ACTIVE', 'ACTIVE']);
    for (const x of await strategies())
      if (fired.includes(x.record_id))
        expect(x).toMatchObject({ status: 'TRIGGERED', order_ids: [expect.any(String)] });

    // the resolution ends the three armed stops in one host batch (the fired ones are left to their sells)
    batches.length = 0;
    const res = await svc.call('POST', `/v2/sim/markets/${market.condition_id}/resolve`, {
      body: { winning_token_id: market.tokens[1].token_id },
    });
    expect(res.status).toBe(200);
    const ended = await poll('every stop ended', strategies, (xs) =>
      [...fired, ...armed].every((id) => xs.find((x) => x.record_id === id)?.status === 'CANCELED'),
    );
    expect(batchWith(armed)).toBeDefined();
    for (const x of ended)
      if ([...fired, ...armed].includes(x.record_id))
        expect(x).toMatchObject({ status: 'CANCELED', message: 'market resolved' });
  });

  it('a touch on a market resolved before its batch stepped is not delivered: the resolution ends it', async () => {
    const markets = (await svc.call('GET', '/v2/trade/markets?limit=500&offset=1001')).body.markets;
    const m = markets.find((x: any) => x.condition_id !== market.condition_id && !x.resolved);
    const token = m.tokens[0].token_id as string;
    const bid = (await svc.call('GET', `/v2/trade/book?token_id=${token}`)).body.bids[0];
    expect(
      await svc.call('POST', '/v2/trade/positions/split', {
        body: { condition_id: m.condition_id, amount: String(Math.ceil(Number(bid.size)) + 10) },
        headers: u,
      }),
    ).toMatchObject({ status: 200 });
    const r = await svc.call('POST', '/v2/trade/order', {
      body: { symbol: token, side: 'sell', type: 'STOP_LOSS', price: '0.3', size: '10' },
      headers: u,
    });
    expect(r).toMatchObject({ status: 200, body: { status: 'ACTIVE' } });
    const id = r.body.record_id as string;
    const venue = svc.services.venue as SimVenue;
    // right after the strategies saw the book update that fires the stop (their listener comes
    // first), the market resolves: the batch delivering the touch runs after that
    let resolving: Promise<unknown> | null = null;
    venue.onBook((t) => {
      if (t === token && resolving === null && venue.touch(token).bid?.lte('0.3'))
        resolving = venue.resolveMarket(m.condition_id, m.tokens[1].token_id);
    });
    const dump = await svc.call('POST', '/v2/trade/order', {
      body: { symbol: token, side: 'sell', type: 'LIMIT', price: '0.01', size: bid.size, time_in_force: 'IOC' },
      headers: u,
    });
    expect(dump).toMatchObject({ status: 200, body: { status: 'FILLED' } });
    const own = await svc.call('POST', '/v2/trade/order', {
      body: { symbol: token, side: 'buy', type: 'LIMIT', price: '0.2', size: '5' },
      headers: u,
    });
    // the bid rested and made the touch; the resolution that followed canceled it
    expect(own).toMatchObject({ status: 200, body: { status: expect.stringMatching(/^(OPEN|CANCELED)$/) } });
    expect(resolving).not.toBeNull();
    await resolving;
    const ended = await poll(
      'stop ended',
      async () => (await strategies()).find((x) => x.record_id === id),
      (x) => x?.status === 'CANCELED',
    );
    // ended by the resolution while armed (revision 2: created, canceled), without stepping on the
    // stale touch first and then on its sell's refusal (market closed), which end the same
    expect(ended).toMatchObject({ status: 'CANCELED', message: 'market resolved', order_ids: [], revision: 2 });
  });
});
