import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dec } from '../../engine/decimal.js';
import type { CaptureEvent } from '../../engine/venue/capture.js';
import { loadCatalogue } from '../../engine/venue/markets.js';
import type { SimVenue } from '../../engine/venue/sim-venue.js';
import { startTestService, type TestService } from '../helpers.js';
import { checkInvariants } from '../invariants.js';
import { poll, Trading } from './trading-kit.js';

/**
 * Complementary matching through the real HTTP path, with the capture replay on: the capture
 * records one outcome of each market (Up); Down has no levels of its own, yet its book is Up's
 * mirrored, a STOP_LOSS on Down fires when Up moves, a TWAP buy on Down fills against Up's bids, a
 * resting Up buy fills against a Down buy (full sets minted). The capture's level changes are scripted through
 * {@link SimVenue.applyCaptureEvents} (the replay's own path) on markets the replay (real time)
 * does not reach during the test. The shared invariant check runs after the scenarios.
 */
describe('complementary matching: both outcomes trade against one book (real service, capture replay)', () => {
  let svc: TestService;
  const tr = new Trading(() => svc);
  const capture = loadCatalogue().capture!;
  /**
   * Capture markets whose first event is more than an hour into the capture (untouched by the replay here), Up first.
   */
  const quiet = capture.markets.filter((m) => {
    const first = capture.events.find((e) =>
      e.kind === 'resolved' ? e.conditionId === m.conditionId : m.tokens.some((t) => t.tokenId === e.tokenId),
    );
    return first !== undefined && first.atMs > capture.startMs + 3_600_000;
  });
  const level = (tokenId: string, side: 'buy' | 'sell', price: string, size: number): CaptureEvent => ({
    kind: 'level',
    atMs: capture.startMs,
    tokenId,
    side,
    price: dec(price),
    size: dec(size),
  });
  const venue = () => svc.services.venue as SimVenue;

  beforeAll(async () => {
    svc = await startTestService({ env: { SIM_CONTROL: 'on', SIM_CAPTURE: 'on', SIM_CAPTURE_SPEED: '1' } });
    await tr.init(['alice', 'bob', 'carol', 'dave', 'erin']);
    expect(quiet.length).toBeGreaterThanOrEqual(3);
  });
  afterAll(async () => {
    await svc?.close();
  });

  it('the unrecorded outcome mirrors the recorded one; a STOP_LOSS on it fires at 0.99 and merges', async () => {
    const [up, down] = quiet[0]!.tokens.map((t) => t.tokenId) as [string, string];
    await venue().applyCaptureEvents([
      level(up, 'buy', '0.48', 100),
      level(up, 'buy', '0.47', 200),
      level(up, 'sell', '0.52', 150),
      level(up, 'sell', '0.53', 250),
    ]);
    // Down has no level of its own: its bids are Up's asks at 1 − price, its asks Up's bids
    expect(await tr.book(down)).toMatchObject({
      bids: [
        { price: '0.48', size: '150' },
        { price: '0.47', size: '250' },
      ],
      asks: [
        { price: '0.52', size: '100' },
        { price: '0.53', size: '200' },
      ],
    });
    expect(
      await svc.call('POST', '/v2/trade/positions/split', {
        body: { condition_id: quiet[0]!.conditionId, amount: '20' },
        headers: tr.as('alice'),
      }),
    ).toMatchObject({ status: 200 });
    const stop = await tr.post('alice', { symbol: down, side: 'sell', type: 'STOP_LOSS', price: '0.3', size: '10' });
    expect(stop).toMatchObject({ status: 200, body: { type: 'STOP_LOSS', status: 'ACTIVE' } });
    const before = dec((await svc.call('GET', '/v2/trade/balances', { headers: tr.as('alice') })).body.balance);
    // Up moves to 0.98 / 0.99 (the capture's levels change): Down's bid falls to 0.01, below the stop
    await venue().applyCaptureEvents([
      level(up, 'buy', '0.48', 0),
      level(up, 'buy', '0.47', 0),
      level(up, 'sell', '0.52', 0),
      level(up, 'sell', '0.53', 0),
      level(up, 'buy', '0.98', 500),
      level(up, 'sell', '0.99', 500),
    ]);
    expect(venue().touch(down)).toEqual({ bid: dec('0.01'), ask: dec('0.02') });
    const done = await poll(
      'the stop fired and its sell filled',
      () => tr.strategy('alice', stop.body.record_id),
      (s) => s?.status === 'COMPLETED',
    );
    expect(done).toMatchObject({ status: 'COMPLETED' });
    // the sell of Down (at the bid, 0.01) met Up's ask at 0.99: full sets merged, alice got 0.01 a share
    const positions = (await svc.call('GET', '/v2/trade/positions', { headers: tr.as('alice') })).body.positions;
    expect(positions.find((p: any) => p.token_id === down)).toMatchObject({ size: '10' });
    expect(positions.find((p: any) => p.token_id === up)).toMatchObject({ size: '20' });
    expect((await svc.call('GET', '/v2/trade/balances', { headers: tr.as('alice') })).body.balance).toBe(
      before.plus('0.1').toFixed(),
    );
  });

  it("a resting Up buy at 0.01 fills against a Down buy at 0.99 (a full set minted, maker's price)", async () => {
    const [up, down] = quiet[1]!.tokens.map((t) => t.tokenId) as [string, string];
    const rest = await tr.post('carol', { symbol: up, side: 'buy', type: 'LIMIT', price: '0.01', size: '5' });
    expect(rest).toMatchObject({ status: 200, body: { status: 'OPEN' } });
    expect(await tr.book(down)).toMatchObject({ bids: [], asks: [{ price: '0.99', size: '5' }] });
    const take = await tr.post('dave', {
      symbol: down,
      side: 'buy',
      type: 'LIMIT',
      price: '0.99',
      size: '5',
      time_in_force: 'IOC',
    });
    expect(take).toMatchObject({ status: 200, body: { status: 'FILLED', filled_size: '5' } });
    const carol = await poll(
      'the resting buy filled',
      () => tr.order('carol', rest.body.order_id),
      (o) => o?.status === 'FILLED',
    );
    expect(carol).toMatchObject({ status: 'FILLED' });
    const initial = dec(svc.services.config.simInitialPusd);
    expect((await svc.call('GET', '/v2/trade/balances', { headers: tr.as('carol') })).body.balance).toBe(
      initial.minus('0.05').toFixed(),
    );
    expect((await svc.call('GET', '/v2/trade/balances', { headers: tr.as('dave') })).body.balance).toBe(
      initial.minus('4.95').toFixed(),
    );
    for (const [u, t] of [
      ['carol', up],
      ['dave', down],
    ] as const) {
      expect((await svc.call('GET', '/v2/trade/positions', { headers: tr.as(u) })).body.positions).toEqual([
        expect.objectContaining({ token_id: t, size: '5' }),
      ]);
    }
    expect(await tr.book(up)).toMatchObject({ bids: [], asks: [] });
  });

  it('a TWAP buy on the unrecorded outcome prices off its mirrored ask, fills the recorded bids', async () => {
    const [up, down] = quiet[2]!.tokens.map((t) => t.tokenId) as [string, string];
    await venue().applyCaptureEvents([level(up, 'buy', '0.3', 500), level(up, 'sell', '0.4', 500)]);
    const res = await tr.post('bob', {
      symbol: down,
      side: 'buy',
      type: 'TWAP',
      size: '30',
      execution: { interval_sec: 10, duration_sec: 20 },
    });
    expect(res).toMatchObject({ status: 200, body: { type: 'TWAP', status: 'ACTIVE', price: '0.7' } });
    const id = res.body.record_id as string;
    await svc.services.strategies.whenQuiet(id);
    expect(await tr.strategy('bob', id)).toMatchObject({ slices_done: 1, filled_size: '15' });
    const c = svc.services.host.snapshotOf(id)!.context as { deadlines: { slice?: number } };
    await svc.services.host.deliverTimer({ actorId: id, timerName: 'slice', atMs: c.deadlines.slice! });
    await svc.services.strategies.whenQuiet(id);
    expect(await tr.strategy('bob', id)).toMatchObject({ status: 'COMPLETED', filled_size: '30' });
    expect((await svc.call('GET', '/v2/trade/positions', { headers: tr.as('bob') })).body.positions).toEqual([
      expect.objectContaining({ token_id: down, size: '30', cost_usd: '21' }),
    ]);
    // the recorded Up bid gave its 30 shares' worth: 470 left, shown on Down as asks at 0.7
    expect((await tr.book(down)).asks[0]).toEqual({ price: '0.7', size: '470' });
  });

  it('own resting orders count for triggers: a STOP_LOSS at/above own bids is WOULD_TRIGGER_IMMEDIATELY', async () => {
    const fresh = await tr.freshToken(0.3, 0.6);
    const market = (await svc.call('GET', '/v2/trade/markets?limit=500')).body.markets.find(
      (m: any) => m.tokens[0].token_id === fresh.token,
    );
    const down = market.tokens[1].token_id as string;
    expect(
      await svc.call('POST', '/v2/trade/positions/split', {
        body: { condition_id: market.condition_id, amount: '50' },
        headers: tr.as('erin'),
      }),
    ).toMatchObject({ status: 200 });
    const inside = (fresh.bid + 0.01).toFixed(2);
    const own = await tr.post('erin', { symbol: fresh.token, side: 'buy', type: 'LIMIT', price: inside, size: '10' });
    expect(own).toMatchObject({ status: 200, body: { status: 'OPEN' } });
    expect((await tr.book(fresh.token)).bids[0]).toEqual({ price: inside, size: '10' });
    const refused = await tr.post('erin', {
      symbol: fresh.token,
      side: 'sell',
      type: 'STOP_LOSS',
      price: inside,
      size: '10',
    });
    expect(refused).toMatchObject({ status: 422, body: { error: 'WOULD_TRIGGER_IMMEDIATELY' } });
    expect(refused.body.message).toContain(`best bid ${inside}`);
    expect(await svc.call('DELETE', `/v2/trade/orders/${own.body.order_id}`, { headers: tr.as('erin') })).toMatchObject(
      { status: 200 },
    );
    // the same through the complement: erin's Down ask at 1 − inside is an Up bid at `inside`
    const downAsk = await tr.post('erin', {
      symbol: down,
      side: 'sell',
      type: 'LIMIT',
      price: (1 - Number(inside)).toFixed(2),
      size: '10',
    });
    expect(downAsk).toMatchObject({ status: 200, body: { status: 'OPEN' } });
    expect((await tr.book(fresh.token)).bids[0]).toEqual({ price: inside, size: '10' });
    expect(
      await tr.post('erin', { symbol: fresh.token, side: 'sell', type: 'STOP_LOSS', price: inside, size: '10' }),
    ).toMatchObject({ status: 422, body: { error: 'WOULD_TRIGGER_IMMEDIATELY' } });
    // below it the stop arms; were it to fire, its sell would not trade with erin's own Down ask
    // (self-trade prevention cancels that ask: test/engine/venue/matching.test.ts)
    const armed = await tr.post('erin', {
      symbol: fresh.token,
      side: 'sell',
      type: 'STOP_LOSS',
      price: fresh.bid.toFixed(2),
      size: '10',
    });
    expect(armed).toMatchObject({ status: 200, body: { status: 'ACTIVE' } });
  });

  it('the shared invariants hold after the scenarios (full sets minted and merged accounted)', async () => {
    await checkInvariants(svc.services, { acknowledged: tr.acknowledged });
  });
});
