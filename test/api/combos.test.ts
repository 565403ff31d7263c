import { randomUUID } from 'node:crypto';
import { io as connect, type Socket } from 'socket.io-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClientToServerEvents, ComboPush, ServerToClientEvents } from '../../api/push-events.js';
import { dec } from '../../engine/decimal.js';
import { MASTER_KEY, startTestService, type TestService } from '../helpers.js';
import { checkInvariants } from '../invariants.js';
import { poll, useTestClock } from './trading-kit.js';

/**
 * Combos through the real API (spec 2.5, 3, 4.2): quotes priced from the capture markets' books
 * (quoted by the liquidity provider, SIM_CAPTURE=off), accepts within and after the quote's life,
 * the legs resolved through the simulation control, redeems, positions.
 */
describe('combos through the real API', () => {
  let svc: TestService;
  let clock: ReturnType<typeof useTestClock>;
  /** Capture markets: `[yes, no]` token ids and the condition. */
  let markets: { conditionId: string; yes: string; no: string }[];
  let next = 0;
  const as = (u: string) => ({ 'x-partner-user-id': u });
  const call = (u: string, method: string, path: string, body?: unknown, idempotencyKey?: string) =>
    svc.call(method, path, { body, headers: as(u), ...(idempotencyKey ? { idempotencyKey } : {}) });
  const quote = (u: string, legs: string[], notional: number) =>
    call(u, 'POST', '/v2/trade/combo/quote', { leg_position_ids: legs, notional_usd: notional, side: 'BUY' });
  const accept = (u: string, q: any, key?: string) =>
    call(u, 'POST', '/v2/trade/combo/accept', { combo_order_id: q.combo_order_id, quote_id: q.quote_id }, key);
  const balance = async (u: string) => (await call(u, 'GET', '/v2/trade/balances')).body.balance as string;
  const combo = async (u: string, id: string) => (await call(u, 'GET', `/v2/trade/combo/${id}`)).body;
  const resolve = (m: { conditionId: string }, winner: string) =>
    svc.call('POST', `/v2/sim/markets/${m.conditionId}/resolve`, { body: { winning_token_id: winner } });
  /** `n` capture markets nobody used yet. */
  const fresh = (n: number) => markets.slice(next, (next += n));

  beforeAll(async () => {
    clock = useTestClock();
    svc = await startTestService({ env: { SIM_CONTROL: 'on', SIM_MAKER_REFILL_MS: '3600000' } });
    for (const u of ['alice', 'bob', 'carol'])
      await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: u } });
    const page = (await svc.call('GET', '/v2/trade/markets?limit=500&offset=1001')).body.markets as any[];
    markets = page
      .filter((m) => /-15min-up-or-down-/.test(m.slug))
      .map((m) => ({ conditionId: m.condition_id, yes: m.tokens[0].token_id, no: m.tokens[1].token_id }));
    expect(markets.length).toBeGreaterThan(20);
  });
  afterAll(async () => {
    await svc?.close();
    clock.restore();
  });

  it('quote: validation names the leg; unknown 404; closed market 422; side only BUY', async () => {
    const [a, b, c] = fresh(3);
    const bad = async (legs: string[], re: RegExp, status = 400) => {
      const r = await quote('alice', legs, 10);
      expect(r.status, JSON.stringify(r.body)).toBe(status);
      expect(r.body.message).toMatch(re);
    };
    await bad([a!.yes, a!.yes], /leg_position_ids\[1\] .* repeats leg_position_ids\[0\]/);
    await bad([a!.yes, b!.no], /leg_position_ids\[1\] \d+ is the Down outcome of its market/);
    await bad([a!.yes, a!.no], /leg_position_ids\[1\]/);
    await bad([a!.yes, '123456789'], /leg_position_ids\[1\] 123456789 is not an outcome token/, 404);
    expect((await quote('alice', [a!.yes], 10)).status).toBe(400);
    expect((await quote('alice', [a!.yes, b!.yes], 0)).status).toBe(400);
    expect((await quote('alice', [a!.yes, b!.yes], 0.001)).status).toBe(400);
    const sell = await call('alice', 'POST', '/v2/trade/combo/quote', {
      leg_position_ids: [a!.yes, b!.yes],
      notional_usd: 5,
      side: 'SELL',
    });
    expect(sell.status).toBe(400);
    expect((await resolve(c!, c!.yes)).status).toBe(200);
    const closed = await quote('alice', [a!.yes, c!.yes], 10);
    expect(closed).toMatchObject({ status: 422, body: { error: 'MARKET_CLOSED' } });
  });

  it("quote: the maker's price from the legs' asks, the independent price beside it, fee, expires_at", async () => {
    const legs = fresh(3);
    const asks = await Promise.all(
      legs.map(async (m) => Number((await svc.call('GET', `/v2/trade/book?token_id=${m.yes}`)).body.asks[0].price)),
    );
    const before = Date.now();
    const r = await quote(
      'alice',
      legs.map((m) => m.yes),
      10,
    );
    const after = Date.now();
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const q = r.body;
    expect(q).toMatchObject({
      combo_order_id: expect.stringMatching(/^co_/),
      quote_id: expect.stringMatching(/^qt_/),
      rfq_id: expect.stringMatching(/^rfq_/),
      side: 'BUY',
      notional_usd: 10,
      fee_usd: 0.1,
      total_cost_usd: 10.1,
    });
    const independent = asks.reduce((x, y) => x * y, 1) * 100;
    expect(q.independent_price_cents).toBeCloseTo(independent, 3);
    // three legs of one window (btc, eth, sol… 15 min) are one correlated group: above the product
    expect(q.price_cents).toBeGreaterThan(q.independent_price_cents);
    expect(q.price_cents).toBeGreaterThanOrEqual(1);
    expect(q.price_cents).toBeLessThanOrEqual(99);
    expect(q.margin_cents).toBeCloseTo(q.price_cents - q.independent_price_cents, 3);
    expect(q.taker_shares).toBeCloseTo(10 / (q.price_cents / 100), 5);
    expect(q.maker_amount_usd).toBeCloseTo(q.taker_shares - 10, 5);
    expect(q.expires_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const exp = Date.parse(q.expires_at);
    expect(exp).toBeGreaterThanOrEqual(before + 8_500);
    expect(exp).toBeLessThanOrEqual(after + 8_500);
    // never cached: another call is another quote
    const again = await quote(
      'alice',
      legs.map((m) => m.yes),
      10,
    );
    expect(again.body.quote_id).not.toBe(q.quote_id);
    expect(await combo('alice', q.combo_order_id)).toMatchObject({ status: 'QUOTED', legs_total: 3 });
    // not another user's
    expect((await call('bob', 'GET', `/v2/trade/combo/${q.combo_order_id}`)).status).toBe(404);
  });

  it('quote: 422 INSUFFICIENT_BALANCE with the dollars needed and the largest affordable notional', async () => {
    const legs = fresh(2).map((m) => m.yes);
    const free = await balance('carol');
    const r = await quote('carol', legs, 1_000_000);
    expect(r.status).toBe(422);
    expect(r.body.error).toBe('INSUFFICIENT_BALANCE');
    const largest = dec(free).div('1.01').toDecimalPlaces(2, 1).toString();
    expect(r.body.message).toBe(
      `this combo needs $1010000 pUSD; available $${free} (notional $1000000 + fee $10000); ` +
        `the largest affordable notional is $${largest}`,
    );
    expect((await quote('carol', legs, Number(largest))).status).toBe(200);
    expect(await balance('carol')).toBe(free);
  });

  it('quote: 422 NO_LIQUIDITY when a leg has no ask to price from', async () => {
    const [a, b] = fresh(2);
    const book = (await svc.call('GET', `/v2/trade/book?token_id=${b!.yes}&depth=100`)).body;
    const size = book.asks.reduce((x: number, l: any) => x + Number(l.size), 0);
    const taken = await call('bob', 'POST', '/v2/trade/order', {
      symbol: b!.yes,
      side: 'buy',
      type: 'LIMIT',
      price: '0.99',
      size: String(size),
      time_in_force: 'IOC',
    });
    expect(taken.body.status).toBe('FILLED');
    expect((await svc.call('GET', `/v2/trade/book?token_id=${b!.yes}`)).body.asks).toEqual([]);
    const r = await quote('alice', [a!.yes, b!.yes], 10);
    expect(r).toMatchObject({ status: 422, body: { error: 'NO_LIQUIDITY' } });
    expect(r.body.message).toBe(`no maker quoted: leg_position_ids[1] ${b!.yes} has no ask to price from`);
  });

  it('accept: 200 EXECUTED, notional + fee debited once; another key 409; the same key replays', async () => {
    const legs = fresh(2).map((m) => m.yes);
    const q = (await quote('alice', legs, 20)).body;
    const before = await balance('alice');
    const key = randomUUID();
    const r = await accept('alice', q, key);
    expect(r).toMatchObject({
      status: 200,
      body: {
        combo_order_id: q.combo_order_id,
        status: 'EXECUTED',
        transaction_hash: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      },
    });
    expect(await balance('alice')).toBe(dec(before).minus('20.2').toString());
    const other = await accept('alice', q);
    expect(other.status).toBe(409);
    const replay = await accept('alice', q, key);
    expect(replay.status).toBe(200);
    expect(replay.body).toEqual(r.body);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(await balance('alice')).toBe(dec(before).minus('20.2').toString());
    expect(await combo('alice', q.combo_order_id)).toMatchObject({
      status: 'OPEN',
      transaction_hash: r.body.transaction_hash,
      cost_usd: '20.2',
      legs_pending: 2,
    });
    const wrongQuote = await call('alice', 'POST', '/v2/trade/combo/accept', {
      combo_order_id: q.combo_order_id,
      quote_id: 'qt_nope',
    });
    expect(wrongQuote.status).toBe(404);
  });

  it('concurrent accepts of one quote: exactly one executes', async () => {
    const q = (
      await quote(
        'bob',
        fresh(2).map((m) => m.yes),
        5,
      )
    ).body;
    const before = await balance('bob');
    const all = await Promise.all(Array.from({ length: 6 }, () => accept('bob', q)));
    expect(all.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409, 409]);
    expect(await balance('bob')).toBe(dec(before).minus('5.05').toString());
  });

  it('accept after expires_at: 410 QUOTE_EXPIRED, nothing changes; the timer ends the quote EXPIRED', async () => {
    const q = (
      await quote(
        'alice',
        fresh(2).map((m) => m.yes),
        10,
      )
    ).body;
    const before = await balance('alice');
    clock.jump(8_600);
    const r = await accept('alice', q);
    expect(r).toMatchObject({ status: 410, body: { error: 'QUOTE_EXPIRED' } });
    expect(r.body.message).toMatch(/request a new quote/);
    expect(await balance('alice')).toBe(before);
    await poll(
      'the quote expires',
      () => combo('alice', q.combo_order_id),
      (c) => c.status === 'EXPIRED',
    );
    expect((await accept('alice', q)).status).toBe(410);
  });

  it("a combo in the trader's PnL: nothing when bought, its loss or its gain when it loses or pays out", async () => {
    const dan = (await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'dan' } })).body;
    const address = String(dan.safe_address).toLowerCase();
    const pnl = async (window: string) => (await svc.call('GET', `/v2/trade/traders/${address}?window=${window}`)).body;
    const spend = async (legs: { yes: string }[], notional: number) => {
      const before = await balance('dan');
      const q = (
        await quote(
          'dan',
          legs.map((m) => m.yes),
          notional,
        )
      ).body;
      expect((await accept('dan', q)).status).toBe(200);
      return { q, debit: dec(before).minus(await balance('dan')) };
    };
    // bought: cash out, a combo held at its cost; no PnL in any window, no market position
    const [a, b, c, d] = fresh(4);
    const lost = await spend([a!, b!], 10);
    for (const w of ['1d', '7d', '30d', 'all']) expect([w, (await pnl(w)).pnl]).toEqual([w, '0']);
    expect((await svc.call('GET', `/v2/trade/traders/${address}/positions`)).body.positions).toEqual([]);
    // a leg lost: the combo's cost is lost, in every window and over all
    await resolve(a!, a!.no);
    await poll(
      'the combo lost',
      () => combo('dan', lost.q.combo_order_id),
      (x) => x.status === 'RESOLVED_LOSS',
    );
    const lossPnl = lost.debit.neg().toString();
    await poll(
      'the loss in the PnL',
      () => pnl('all'),
      (x) => x.pnl === lossPnl,
    );
    expect((await pnl('1d')).pnl).toBe(lossPnl);
    // another, won and redeemed: its payout less its cost
    const won = await spend([c!, d!], 10);
    await resolve(c!, c!.yes);
    await resolve(d!, d!.yes);
    await poll(
      'the combo won',
      () => combo('dan', won.q.combo_order_id),
      (x) => x.status === 'RESOLVED_WIN',
    );
    expect((await pnl('1d')).pnl).toBe(lossPnl);
    const r = await call('dan', 'POST', '/v2/trade/combo/redeem', { combo_order_id: won.q.combo_order_id });
    expect(r.status).toBe(200);
    const total = dec(lossPnl).plus(String(won.q.taker_shares)).minus(won.debit).toString();
    await poll(
      'the gain in the PnL',
      () => pnl('all'),
      (x) => x.pnl === total,
    );
    expect((await pnl('1d')).pnl).toBe(total);
    expect((await pnl('all')).realized_pnl).toBe(total);
  });

  it('three legs resolve YES: PARTIAL, then RESOLVED_WIN; redeem pays shares × $1 once', async () => {
    const legs = fresh(3);
    const q = (
      await quote(
        'alice',
        legs.map((m) => m.yes),
        12,
      )
    ).body;
    expect((await accept('alice', q)).status).toBe(200);
    const id = q.combo_order_id;
    const early = await call('alice', 'POST', '/v2/trade/combo/redeem', { combo_order_id: id });
    expect(early).toMatchObject({ status: 409, body: { error: 'COMBO_NOT_RESOLVED' } });
    await resolve(legs[0]!, legs[0]!.yes);
    await resolve(legs[1]!, legs[1]!.yes);
    const partial = await poll(
      'partial',
      () => combo('alice', id),
      (c) => c.status === 'PARTIAL' && c.legs_resolved === 2,
    );
    expect(partial).toMatchObject({ legs_pending: 1, redeemable: false });
    expect(partial.legs.map((l: any) => l.status)).toEqual(['WON', 'WON', 'PENDING']);
    const listed = (await call('alice', 'GET', '/v2/trade/combo/positions?status=PARTIAL')).body;
    expect(listed.positions.map((p: any) => p.combo_order_id)).toContain(id);
    await resolve(legs[2]!, legs[2]!.yes);
    const won = await poll(
      'won',
      () => combo('alice', id),
      (c) => c.status === 'RESOLVED_WIN',
    );
    expect(won).toMatchObject({ redeemable: true, current_value_usd: String(q.taker_shares), payout_usd: null });
    const before = await balance('alice');
    const r = await call('alice', 'POST', '/v2/trade/combo/redeem', { combo_position_id: won.combo_position_id });
    expect(r).toMatchObject({
      status: 200,
      body: { combo_order_id: id, status: 'REDEEMED', payout_usd: q.taker_shares },
    });
    expect(await balance('alice')).toBe(dec(before).plus(String(q.taker_shares)).toString());
    const twice = await call('alice', 'POST', '/v2/trade/combo/redeem', { combo_order_id: id });
    expect(twice.status).toBe(409);
    expect(await balance('alice')).toBe(dec(before).plus(String(q.taker_shares)).toString());
    expect(await combo('alice', id)).toMatchObject({ status: 'REDEEMED', payout_usd: String(q.taker_shares) });
    // the activity feed: one row per combo from its quote on, in its latest state
    const activity = (await call('alice', 'GET', '/v2/trade/activity?limit=200')).body.activity as any[];
    expect(activity.find((a) => a.id === id)).toMatchObject({
      kind: 'combo',
      type: 'COMBO',
      status: 'REDEEMED',
      side: 'buy',
      symbol: won.combo_position_id,
      size: String(q.taker_shares),
      amount: String(q.taker_shares),
      transaction_hash: r.body.transaction_hash,
    });
    expect(activity.filter((a) => a.kind === 'combo').map((a) => a.status)).toContain('EXPIRED');
    // the trade history's cash movements: the buy and the payout, at their chain positions
    const moves = await (await svc.services.store.collection<any>('cashMoves')).find({ conditionId: id });
    expect(moves.map((m: any) => [m._id, m.kind, m.pusdDelta, m.userId, m.source])).toEqual([
      [`${id}:buy`, 'combo_debit', '-12.12', expect.any(String), 'venue'],
      [`${id}:redeem`, 'combo_payout', String(q.taker_shares), expect.any(String), 'venue'],
    ]);
    expect(moves[1].transactionHash).toBe(r.body.transaction_hash);
    expect(moves[0].blockTimestamp).toBeLessThanOrEqual(moves[1].blockTimestamp);
  });

  it('a losing leg: RESOLVED_LOSS, redeem refused (422 COMBO_LOST); both ids or neither → 400', async () => {
    const legs = fresh(2);
    const q = (
      await quote(
        'bob',
        legs.map((m) => m.yes),
        8,
      )
    ).body;
    expect((await accept('bob', q)).status).toBe(200);
    await resolve(legs[0]!, legs[0]!.no);
    const lost = await poll(
      'lost',
      () => combo('bob', q.combo_order_id),
      (c) => c.status === 'RESOLVED_LOSS',
    );
    expect(lost).toMatchObject({ redeemable: false, current_value_usd: '0' });
    expect(lost.legs.map((l: any) => l.outcome)).toEqual(['LOSS', null]);
    const r = await call('bob', 'POST', '/v2/trade/combo/redeem', { combo_order_id: q.combo_order_id });
    expect(r).toMatchObject({ status: 422, body: { error: 'COMBO_LOST' } });
    for (const body of [{}, { combo_order_id: q.combo_order_id, combo_position_id: lost.combo_position_id }])
      expect(await call('bob', 'POST', '/v2/trade/combo/redeem', body)).toMatchObject({
        status: 400,
        body: { error: 'invalid_request', message: 'send exactly one of combo_order_id and combo_position_id' },
      });
    expect(await call('bob', 'POST', '/v2/trade/combo/redeem', { combo_position_id: 'cp_nope' })).toMatchObject({
      status: 404,
      body: { error: 'not_found', message: 'no combo position cp_nope' },
    });
    const page = (await call('bob', 'GET', '/v2/trade/combo/positions?status=RESOLVED_LOSS&limit=500')).body;
    expect(page).toMatchObject({ total: 1, limit: 500, offset: 0 });
    expect((await call('bob', 'GET', '/v2/trade/combo/positions?limit=501')).status).toBe(400);
  });

  it('combo.updated pushes each persisted change of a combo to its owner, with its revision', async () => {
    const socket: Socket<ServerToClientEvents, ClientToServerEvents> = connect(`${svc.baseUrl}/v2/trade`, {
      auth: { token: MASTER_KEY, partner_user_id: 'carol' },
      transports: ['websocket'],
      forceNew: true,
      reconnection: false,
    });
    try {
      await new Promise<void>((ok, fail) => {
        socket.once('connect', ok);
        socket.once('connect_error', fail);
      });
      const got: ComboPush[] = [];
      socket.on('combo.updated', (c) => got.push(c));
      const legs = fresh(2);
      const q = (
        await quote(
          'carol',
          legs.map((m) => m.yes),
          4,
        )
      ).body;
      expect((await accept('carol', q)).status).toBe(200);
      await resolve(legs[0]!, legs[0]!.yes);
      await resolve(legs[1]!, legs[1]!.yes);
      const mine = () => got.filter((c) => c.combo_order_id === q.combo_order_id);
      await poll(
        'pushed up to RESOLVED_WIN',
        async () => mine().map((c) => c.status),
        (s) => s.at(-1) === 'RESOLVED_WIN',
      );
      expect(mine().map((c) => c.status)).toEqual(['QUOTED', 'EXECUTED', 'OPEN', 'PARTIAL', 'RESOLVED_WIN']);
      expect(mine().map((c) => c.revision)).toEqual([1, 2, 3, 4, 5]);
      const { revision: _r, platform_user_id: owner, updated_at: _u, ...last } = mine().at(-1)!;
      expect(owner).toEqual(expect.any(String));
      // the REST view but the live marks; `updated_at` is epoch ms on every push (PushMeta)
      const { current_value_usd: _v, legs: restLegs, updated_at: _t, ...rest } = await combo('carol', q.combo_order_id);
      expect({ ...rest, legs: restLegs.map(({ current_price: _p, ...l }: any) => l) }).toEqual(last);
    } finally {
      socket.close();
    }
  });

  it('money is conserved with the combos (the venue holds each combo from its buy to its redeem)', async () => {
    await checkInvariants(svc.services);
  });
});
