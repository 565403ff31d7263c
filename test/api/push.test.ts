import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { io as connect, type Socket } from 'socket.io-client';
import type {
  BalancePush,
  BatchPush,
  BookPush,
  ClientToServerEvents,
  MarketPush,
  OrderPush,
  PositionPush,
  ServerToClientEvents,
  StrategyPush,
  WalletOperationPush,
  WithdrawalPush,
} from '../../api/push-events.js';
import { dec } from '../../engine/decimal.js';
import type { SimVenue } from '../../engine/venue/sim-venue.js';
import { startTestService, type TestService } from '../helpers.js';

/**
 * Live updates over Socket.IO: handshake authentication, isolation between users and
 * partners, ordering and revisions under a burst, connection-state recovery, revocation, books.
 */
type Client = Socket<ServerToClientEvents, ClientToServerEvents>;

describe('Socket.IO namespace /v2/trade', () => {
  let svc: TestService;
  let token: string;
  const clients: Client[] = [];
  const keys: Record<string, { api_key: string; key_id: string }> = {};
  const as = (u: string) => ({ 'x-partner-user-id': u });
  const post = (u: string, body: unknown) => svc.call('POST', '/v2/trade/order', { body, headers: as(u) });

  /** Connects and resolves once connected (or rejects with the handshake error). */
  const open = (auth: Record<string, unknown>, opts: Record<string, unknown> = {}): Promise<Client> =>
    new Promise((resolve, reject) => {
      const s: Client = connect(`${svc.baseUrl}/v2/trade`, {
        auth,
        transports: ['websocket'],
        forceNew: true,
        reconnection: false,
        ...opts,
      });
      clients.push(s);
      s.once('connect', () => resolve(s));
      s.once('connect_error', (err) => reject(err));
    });
  const refused = async (auth: Record<string, unknown>) => {
    const err = (await open(auth).then(
      () => null,
      (e: Error & { data?: unknown }) => e,
    ))!;
    expect(err).not.toBeNull();
    return { message: err.message, data: err.data };
  };
  /** Collects every order.updated / strategy.updated a client receives. */
  const collect = (s: Client) => {
    const got: Array<(OrderPush | StrategyPush) & { event: string }> = [];
    s.on('order.updated', (o) => got.push({ ...o, event: 'order.updated' }));
    s.on('strategy.updated', (o) => got.push({ ...o, event: 'strategy.updated' }));
    return got;
  };
  // a generous deadline: the condition, not the time, is what is tested (other test files load the machine)
  const until = async (cond: () => boolean, ms = 15_000) => {
    const end = Date.now() + ms;
    while (!cond()) {
      if (Date.now() > end) throw new Error('timed out waiting');
      await new Promise((r) => setTimeout(r, 5));
    }
  };

  beforeAll(async () => {
    svc = await startTestService({ env: { SIM_MAKER_REFILL_MS: '3600000', SIM_INITIAL_PUSD: '1000000' } });
    for (const u of ['alice', 'bob']) {
      await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: u } });
      keys[u] = (
        await svc.call('POST', `/v2/trade/users/${u}/api-keys`, {
          body: { scopes: ['trade.read', 'trade.execute', 'trade.cancel'] },
        })
      ).body;
    }
    const markets = (await svc.call('GET', '/v2/trade/markets?limit=50')).body.markets;
    token = markets.find((m: any) => m.tick_size === '0.01').tokens[0].token_id;
  });
  afterAll(async () => {
    for (const c of clients) c.disconnect();
    await svc.close();
  });

  it('refuses a handshake without a valid key, with the error envelope; accepts per-user and master keys', async () => {
    expect(await refused({})).toEqual({
      message: 'unauthorized',
      data: { error: 'unauthorized', message: 'send the API key as auth.token in the handshake' },
    });
    expect(await refused({ token: 'pts_not_a_real_key_000000000000' })).toMatchObject({
      message: 'unauthorized',
      data: { error: 'unauthorized' },
    });
    expect(await refused({ token: keys.alice!.api_key, partner_user_id: 'bob' })).toMatchObject({
      message: 'forbidden',
      data: { error: 'forbidden' },
    });
    expect(
      await refused({ token: (await import('../helpers.js')).MASTER_KEY, partner_user_id: 'nobody' }),
    ).toMatchObject({ message: 'not_found' });
    const readless = (await svc.call('POST', '/v2/trade/users/alice/api-keys', { body: { scopes: ['trade.execute'] } }))
      .body;
    expect(await refused({ token: readless.api_key })).toMatchObject({
      message: 'forbidden',
      data: { message: 'live updates need the trade.read scope' },
    });
    const ok = await open({ token: keys.alice!.api_key });
    expect(ok.connected).toBe(true);
  });

  it("a user key gets its own order.updated, nothing of others; a master key its partner's", async () => {
    const alice = await open({ token: keys.alice!.api_key });
    const bob = await open({ token: keys.bob!.api_key });
    const master = await open({ token: (await import('../helpers.js')).MASTER_KEY });
    const masterBob = await open({ token: (await import('../helpers.js')).MASTER_KEY, partner_user_id: 'bob' });
    const [ga, gb, gm, gmb] = [collect(alice), collect(bob), collect(master), collect(masterBob)];
    const res = await post('alice', { symbol: token, side: 'buy', type: 'LIMIT', price: '0.02', size: '10' });
    expect(res.status).toBe(200);
    // delivery latency is a target of bench/push.ts (a test on a shared machine cannot hold one)
    await until(() => ga.some((u) => u.order_id === res.body.order_id && u.revision === res.body.revision));
    const mine = ga.filter((u) => u.order_id === res.body.order_id);
    const last = mine.at(-1)!;
    expect(last).toMatchObject({
      event: 'order.updated',
      order_id: res.body.order_id,
      status: 'OPEN',
      price: '0.02',
      size: '10',
      is_stop_loss: false,
      revision: res.body.revision,
    });
    // the pushed record is the REST record (plus platform_user_id)
    const { event: _e, platform_user_id, ...record } = last;
    expect(record).toEqual(res.body);
    expect(platform_user_id).toEqual(expect.any(String));
    await until(() => gm.some((u) => u.order_id === res.body.order_id && u.revision === res.body.revision));
    await new Promise((r) => setTimeout(r, 50));
    expect(gb).toEqual([]);
    expect(gmb).toEqual([]);
    // another partner's master key sees none of it
    const otherToken = 'pts_other_partner_master_key_0123456789';
    await svc.services.keys.ensureMasterKey('other-partner', otherToken);
    const other = await open({ token: otherToken });
    const go = collect(other);
    const res2 = await post('bob', { symbol: token, side: 'buy', type: 'LIMIT', price: '0.02', size: '10' });
    await until(
      () => gb.some((u) => u.order_id === res2.body.order_id) && gmb.some((u) => u.order_id === res2.body.order_id),
    );
    await new Promise((r) => setTimeout(r, 50));
    expect(go).toEqual([]);
    expect(ga.some((u) => u.order_id === res2.body.order_id)).toBe(false);
  });

  it('a burst of 1,000+ updates arrives complete and in order: per record revisions 1, 2, 3, … no gaps', async () => {
    const alice = await open({ token: keys.alice!.api_key });
    const got = collect(alice);
    const ids: string[] = [];
    const finals = new Map<string, number>();
    await Promise.all(
      Array.from({ length: 250 }, async (_, i) => {
        const r = await post('alice', {
          symbol: token,
          side: 'buy',
          type: 'LIMIT',
          price: '0.02',
          size: String(5 + (i % 5)),
        });
        ids.push(r.body.order_id);
        const d = await svc.call('DELETE', `/v2/trade/orders/${r.body.order_id}`, { headers: as('alice') });
        finals.set(r.body.order_id, d.body.revision);
      }),
    );
    // one pass over what arrived per check (the service shares this process and its event loop)
    const lastRevisions = () => {
      const last = new Map<string, number>();
      for (const u of got) {
        const id = u.order_id as string | undefined;
        if (id) last.set(id, Math.max(last.get(id) ?? 0, u.revision));
      }
      return last;
    };
    await until(() => {
      const last = lastRevisions();
      return ids.every((id) => last.get(id) === finals.get(id));
    }, 20_000);
    const byId = new Map<string, number[]>();
    for (const u of got)
      if (u.order_id && finals.has(u.order_id as string))
        byId.set(u.order_id as string, [...(byId.get(u.order_id as string) ?? []), u.revision]);
    let total = 0;
    for (const [id, revs] of byId) {
      expect(revs, id).toEqual(Array.from({ length: finals.get(id)! }, (_, i) => i + 1));
      total += revs.length;
    }
    expect(total).toBeGreaterThanOrEqual(1000);
    expect(
      got
        .filter((u) => finals.has(u.order_id as string) && u.revision === finals.get(u.order_id as string))
        .every((u) => u.status === 'CANCELED'),
    ).toBe(true);
  }, 60_000);

  it('connection-state recovery: after a brief drop the client gets what it missed', async () => {
    const alice = await open(
      { token: keys.alice!.api_key },
      { reconnection: true, reconnectionDelay: 200, reconnectionDelayMax: 200 },
    );
    const got = collect(alice);
    // let the session be recoverable (the server sends the session id with the first packet)
    await post('alice', { symbol: token, side: 'buy', type: 'LIMIT', price: '0.02', size: '5' });
    await until(() => got.length > 0);
    const dropped = new Promise<void>((r) => alice.once('disconnect', () => r()));
    // the client may reconnect (200 ms) before the order below is answered: the wait starts now
    const back = new Promise<void>((r) => alice.once('connect', () => r()));
    alice.io.engine.close(); // the transport drops, as on a network blip
    await dropped;
    await until(() => svc.http.push.nsp.sockets.size === clients.filter((c) => c.connected).length);
    const missed = await post('alice', { symbol: token, side: 'buy', type: 'LIMIT', price: '0.02', size: '6' });
    await back;
    expect(alice.recovered).toBe(true);
    await until(() => got.some((u) => u.order_id === missed.body.order_id && u.revision === missed.body.revision));
    expect(got.filter((u) => u.order_id === missed.body.order_id).map((u) => u.revision)).toEqual(
      Array.from({ length: missed.body.revision }, (_, i) => i + 1),
    );
  });

  it('a revoked key is disconnected at once and cannot come back', async () => {
    const k = (await svc.call('POST', '/v2/trade/users/alice/api-keys', { body: { scopes: ['trade.read'] } })).body;
    const s = await open({ token: k.api_key });
    const gone = new Promise<string>((r) => s.once('disconnect', (reason) => r(reason)));
    expect((await svc.call('DELETE', `/v2/trade/api-keys/${k.key_id}`)).status).toBe(200);
    expect(await gone).toBe('io server disconnect');
    expect(await refused({ token: k.api_key })).toMatchObject({
      message: 'unauthorized',
      data: { message: 'API key has been revoked' },
    });
  });

  it('book.subscribe: the book at once, then book.updated with a revision per change; unknown refused', async () => {
    const s = await open({ token: keys.bob!.api_key });
    const books: BookPush[] = [];
    s.on('book.updated', (b) => books.push(b));
    expect(await s.emitWithAck('book.subscribe', { token_id: '999' })).toMatchObject({
      ok: false,
      error: 'invalid_request',
    });
    expect(await s.emitWithAck('book.subscribe', { token_id: token })).toEqual({ ok: true, token_id: token });
    await until(() => books.length === 1);
    const rest = (await svc.call('GET', `/v2/trade/book?token_id=${token}&depth=10`)).body;
    expect(books[0]).toMatchObject(rest);
    const rev0 = books[0]!.revision;
    await post('bob', { symbol: token, side: 'buy', type: 'LIMIT', price: rest.bids[0].price, size: '7' });
    await until(() => books.length >= 2);
    expect(books[1]!.revision).toBe(rev0 + 1);
    expect(books[1]!.bids[0]!.size).toBe(String(Number(rest.bids[0].size) + 7));
    // a level the capture replay sets (its own path), crossing nothing and replacing no captured level
    await (svc.services.venue as SimVenue).applyCaptureEvents([
      { kind: 'level', atMs: 1, tokenId: token, side: 'buy', price: dec(rest.bids[0].price), size: dec('5') },
    ]);
    await until(() => books.length >= 3);
    expect(books[2]!.revision).toBe(rev0 + 2);
    expect(books[2]!.bids[0]!.size).toBe(String(Number(rest.bids[0].size) + 12));
    expect(await s.emitWithAck('book.unsubscribe', { token_id: token })).toEqual({ ok: true, token_id: token });
  });

  it('updates.batch (opt-in batch_ms): a burst whole, in order, no gaps, fewer frames; others unchanged', async () => {
    const plain = await open({ token: keys.alice!.api_key });
    const batched = await open({ token: keys.alice!.api_key, batch_ms: 50 });
    const gotPlain = collect(plain);
    const separate = collect(batched);
    const batches: BatchPush[] = [];
    batched.on('updates.batch', (b) => batches.push(b));
    const ids: string[] = [];
    const finals = new Map<string, number>();
    await Promise.all(
      Array.from({ length: 100 }, async (_, i) => {
        const r = await post('alice', {
          symbol: token,
          side: 'buy',
          type: 'LIMIT',
          price: '0.02',
          size: String(5 + (i % 5)),
        });
        ids.push(r.body.order_id);
        const d = await svc.call('DELETE', `/v2/trade/orders/${r.body.order_id}`, { headers: as('alice') });
        finals.set(r.body.order_id, d.body.revision);
      }),
    );
    const flat = () =>
      batches
        .flatMap((b) => b.records)
        .filter((r) => r.event === 'order.updated')
        .map((r) => r.data as OrderPush);
    await until(() => ids.every((id) => flat().some((u) => u.order_id === id && u.revision === finals.get(id))));
    await until(() => ids.every((id) => gotPlain.some((u) => u.order_id === id && u.revision === finals.get(id))));
    expect(separate).toEqual([]); // a batched connection gets no separate record events
    expect(batches.every((b) => b.batch_ms === 50)).toBe(true);
    const mine = flat().filter((u) => finals.has(u.order_id));
    // nothing lost, order kept: per order revisions 1..n, and the
    // same records, in the same order, as the separate events
    for (const id of ids)
      expect(
        mine.filter((u) => u.order_id === id).map((u) => u.revision),
        id,
      ).toEqual(Array.from({ length: finals.get(id)! }, (_, i) => i + 1));
    const plainMine = gotPlain.filter((u) => finals.has(u.order_id as string)).map(({ event: _e, ...rec }) => rec);
    expect(mine).toEqual(plainMine);
    const framesWithMine = batches.filter((b) =>
      b.records.some((r) => finals.has((r.data as OrderPush).order_id)),
    ).length;
    expect(framesWithMine).toBeLessThan(mine.length / 2);
  });

  it('updates.batch with recovery: a batch sent while the client was away arrives after it reconnects', async () => {
    const s = await open(
      { token: keys.alice!.api_key, batch_ms: 5 },
      { reconnection: true, reconnectionDelay: 200, reconnectionDelayMax: 200 },
    );
    const got: OrderPush[] = [];
    s.on('updates.batch', (b) =>
      got.push(...b.records.filter((r) => r.event === 'order.updated').map((r) => r.data as OrderPush)),
    );
    await post('alice', { symbol: token, side: 'buy', type: 'LIMIT', price: '0.02', size: '5' });
    await until(() => got.length > 0);
    const dropped = new Promise<void>((r) => s.once('disconnect', () => r()));
    const back = new Promise<void>((r) => s.once('connect', () => r()));
    s.io.engine.close();
    await dropped;
    await until(() => svc.http.push.nsp.sockets.size === clients.filter((c) => c.connected).length);
    const missed = await post('alice', { symbol: token, side: 'buy', type: 'LIMIT', price: '0.02', size: '6' });
    await back;
    expect(s.recovered).toBe(true);
    await until(() => got.some((u) => u.order_id === missed.body.order_id && u.revision === missed.body.revision));
    expect(got.filter((u) => u.order_id === missed.body.order_id).map((u) => u.revision)).toEqual(
      Array.from({ length: missed.body.revision }, (_, i) => i + 1),
    );
  });

  it('refuses auth.batch_ms outside 1..1000 ms with invalid_request', async () => {
    for (const batch_ms of [0, 1001, 2.5, '10']) {
      expect(await refused({ token: keys.alice!.api_key, batch_ms })).toMatchObject({
        message: 'invalid_request',
        data: { error: 'invalid_request' },
      });
    }
  });

  it('balance.updated and position.updated: the REST shapes, to the user only; batched too', async () => {
    const alice = await open({ token: keys.alice!.api_key });
    const aliceBatched = await open({ token: keys.alice!.api_key, batch_ms: 5 });
    const bob = await open({ token: keys.bob!.api_key });
    const master = await open({ token: (await import('../helpers.js')).MASTER_KEY });
    const seen = (s: Client) => {
      const got: { balances: BalancePush[]; positions: PositionPush[] } = { balances: [], positions: [] };
      s.on('balance.updated', (b) => got.balances.push(b));
      s.on('position.updated', (p) => got.positions.push(p));
      return got;
    };
    const [a, b, m] = [seen(alice), seen(bob), seen(master)];
    const batchedRecords: Array<{ event: string; data: unknown }> = [];
    aliceBatched.on('updates.batch', (x) => batchedRecords.push(...x.records));
    const before = (await svc.call('GET', '/v2/trade/balances', { headers: as('alice') })).body;
    const buy = await post('alice', { symbol: token, side: 'buy', type: 'MARKET', quote_amount: '5' });
    expect(buy.status).toBe(200);
    const rest = (await svc.call('GET', '/v2/trade/balances', { headers: as('alice') })).body;
    expect(rest.balance).not.toBe(before.balance);
    await until(() => a.balances.some((x) => x.balance === rest.balance && x.reserved === rest.reserved));
    const last = a.balances.at(-1)!;
    const { revision, platform_user_id, at, ...balance } = last;
    expect(balance).toEqual(rest);
    const consecutive = (revs: number[]) => expect(revs).toEqual(revs.map((_, i) => revs[0]! + i));
    expect(revision).toBe(a.balances[0]!.revision + a.balances.length - 1);
    consecutive(a.balances.map((x) => x.revision));
    expect(platform_user_id).toEqual(expect.any(String));
    expect(at).toEqual(expect.any(Number));
    const positions = (await svc.call('GET', '/v2/trade/positions', { headers: as('alice') })).body.positions;
    const held = positions.find((p: any) => p.token_id === token);
    expect(held.question).not.toBe('');
    await until(() => a.positions.some((p) => p.positions.some((x) => x.token_id === token && x.size === held.size)));
    const pushed = a.positions
      .flatMap((p) => p.positions)
      .filter((x) => x.token_id === token)
      .at(-1);
    expect(pushed).toEqual(held);
    consecutive(a.positions.map((x) => x.revision));
    await until(
      () =>
        batchedRecords.some((r) => r.event === 'position.updated') &&
        batchedRecords.some((r) => r.event === 'balance.updated'),
    );
    expect(batchedRecords.filter((r) => r.event === 'balance.updated').map((r) => r.data)).toEqual(a.balances);
    await new Promise((r) => setTimeout(r, 50));
    expect(b.balances).toEqual([]);
    expect(b.positions).toEqual([]);
    expect(m.balances).toEqual([]); // a master key watching the whole partner: user rooms only
    // selling everything: the position is pushed once with size "0"
    const sell = await post('alice', { symbol: token, side: 'sell', type: 'MARKET', size: held.size });
    expect(sell.status).toBe(200);
    await until(() => a.positions.some((p) => p.positions.some((x) => x.token_id === token && x.size === '0')));
    expect(
      a.positions
        .flatMap((p) => p.positions)
        .filter((x) => x.token_id === token)
        .at(-1),
    ).toMatchObject({
      size: '0',
      reserved: '0',
      available: '0',
      avg_price: '0',
      cost_usd: '0',
      question: held.question,
      outcome: held.outcome,
    });
  });

  it('withdrawal.updated: PENDING then CONFIRMED (or FAILED) as GET returns it, to user and partner', async () => {
    const alice = await open({ token: keys.alice!.api_key });
    const aliceBatched = await open({ token: keys.alice!.api_key, batch_ms: 5 });
    const bob = await open({ token: keys.bob!.api_key });
    const master = await open({ token: (await import('../helpers.js')).MASTER_KEY });
    const seen = (s: Client) => {
      const got: WithdrawalPush[] = [];
      s.on('withdrawal.updated', (w) => got.push(w));
      return got;
    };
    const [a, b, m] = [seen(alice), seen(bob), seen(master)];
    const batched: Array<{ event: string; data: unknown }> = [];
    aliceBatched.on('updates.batch', (x) => batched.push(...x.records));
    const ok = await svc.call('POST', '/v2/trade/withdraw', {
      body: { to_address: '0x00000000000000000000000000000000000000aa', amount: '5' },
      headers: as('alice'),
    });
    const bad = await svc.call('POST', '/v2/trade/withdraw', {
      body: { to_address: '0x0000000000000000000000000000000000000000', amount: '2' },
      headers: as('alice'),
    });
    expect([ok.status, ok.body.status, bad.status]).toEqual([200, 'PENDING', 200]);
    const ended = (id: string) => a.some((w) => w.withdrawal_id === id && w.status !== 'PENDING');
    await until(() => ended(ok.body.withdrawal_id) && ended(bad.body.withdrawal_id));
    for (const [id, final] of [
      [ok.body.withdrawal_id, 'CONFIRMED'],
      [bad.body.withdrawal_id, 'FAILED'],
    ] as const) {
      const pushes = a.filter((w) => w.withdrawal_id === id);
      expect(pushes[0]).toMatchObject({ status: 'PENDING', amount: id === ok.body.withdrawal_id ? '5' : '2' });
      expect(pushes.map((w) => w.revision)).toEqual(pushes.map((_, i) => pushes[0]!.revision + i));
      const { revision, platform_user_id, ...view } = pushes.at(-1)!;
      expect([view.status, typeof revision, typeof platform_user_id, typeof view.updated_at]).toEqual([
        final,
        'number',
        'string',
        'number',
      ]);
      expect(view).toEqual((await svc.call('GET', `/v2/trade/withdrawals/${id}`, { headers: as('alice') })).body);
    }
    expect(a.find((w) => w.withdrawal_id === bad.body.withdrawal_id && w.status === 'FAILED')).toMatchObject({
      refunded: true,
      failure_code: 'TRANSFER_REVERTED',
    });
    // the batched and the master connections receive apart from alice's: each is waited for
    await until(
      () => batched.filter((r) => r.event === 'withdrawal.updated').length === a.length && m.length === a.length,
    );
    expect(batched.filter((r) => r.event === 'withdrawal.updated').map((r) => r.data)).toEqual(a);
    expect(m).toEqual(a); // the partner's master key sees its users' withdrawals
    expect(b).toEqual([]);
  });

  it('markets.subscribe refuses a non-object request with invalid_request and does not join', async () => {
    const s = await open({ token: keys.bob!.api_key });
    for (const req of [5, 'x', [], null]) {
      expect([req, await s.emitWithAck('markets.subscribe', req as never)]).toEqual([
        req,
        { ok: false, error: 'invalid_request', message: 'the request must be an object {condition_ids?: string[]}' },
      ]);
    }
    expect(await s.emitWithAck('markets.subscribe', {})).toEqual({ ok: true, markets: [] });
  });

  it('market.updated: subscribers get the market as GET /markets lists it, resolved with its winner', async () => {
    const s = await open({ token: keys.bob!.api_key });
    const other = await open({ token: keys.alice!.api_key });
    const got: MarketPush[] = [];
    const otherGot: MarketPush[] = [];
    s.on('market.updated', (x) => got.push(x));
    other.on('market.updated', (x) => otherGot.push(x));
    const listed = (await svc.call('GET', '/v2/trade/markets?limit=50')).body.markets.find(
      (m: any) => m.tokens.length === 2 && m.tokens[0].token_id !== token,
    );
    // the ack carries the named markets' current state (unknown ids left out)
    expect(
      await s.emitWithAck('markets.subscribe', { condition_ids: [listed.condition_id, 'no-such-market'] }),
    ).toEqual({
      ok: true,
      markets: [{ ...listed, revision: 0, at: expect.any(Number) }],
    });
    expect(await s.emitWithAck('markets.subscribe', { condition_ids: 'x' as never })).toMatchObject({
      ok: false,
      error: 'invalid_request',
    });
    await (svc.services.venue as SimVenue).resolveMarket(listed.condition_id, listed.tokens[1].token_id);
    await until(() => got.length === 1);
    const after = (await svc.call('GET', '/v2/trade/markets?limit=50')).body.markets.find(
      (m: any) => m.condition_id === listed.condition_id,
    );
    expect(after).toMatchObject({
      closed: true,
      resolved: true,
      winning_token_id: listed.tokens[1].token_id,
      resolved_at: expect.any(Number),
    });
    expect(got[0]).toEqual({ ...after, revision: 1, at: expect.any(Number) });
    expect(await s.emitWithAck('markets.subscribe', { condition_ids: [listed.condition_id] })).toMatchObject({
      ok: true,
      markets: [{ resolved: true, revision: 1 }],
    });
    await new Promise((r) => setTimeout(r, 50));
    expect(otherGot).toEqual([]);
    expect(await s.emitWithAck('markets.unsubscribe', {})).toEqual({ ok: true, markets: [] });
  });

  it('markets.subscribe by condition ids delivers those markets only; without ids every one; unsubscribe', async () => {
    const venue = svc.services.venue as SimVenue;
    const listed = ((await svc.call('GET', '/v2/trade/markets?limit=200')).body.markets as any[]).filter(
      (m) => m.tokens.length === 2 && !m.closed && m.tick_size === '0.01' && m.tokens[0].token_id !== token,
    );
    const [a, b, c] = listed.slice(-3);
    const named = await open({ token: keys.bob!.api_key });
    const all = await open({ token: keys.alice!.api_key });
    const gotNamed: MarketPush[] = [];
    const gotAll: MarketPush[] = [];
    named.on('market.updated', (x) => gotNamed.push(x));
    all.on('market.updated', (x) => gotAll.push(x));
    const ack = await named.emitWithAck('markets.subscribe', { condition_ids: [a.condition_id, b.condition_id] });
    expect(ack).toMatchObject({
      ok: true,
      markets: [{ condition_id: a.condition_id }, { condition_id: b.condition_id }],
    });
    expect(await all.emitWithAck('markets.subscribe', {})).toEqual({ ok: true, markets: [] });
    // a change of a market not named reaches the every-market subscriber only
    await venue.changeTickSize(c.tokens[0].token_id, dec('0.001'));
    await venue.changeTickSize(a.tokens[0].token_id, dec('0.001'));
    await until(() => gotAll.length === 2 && gotNamed.length === 1);
    await new Promise((r) => setTimeout(r, 50));
    expect(gotNamed.map((m) => [m.condition_id, m.tick_size])).toEqual([[a.condition_id, '0.001']]);
    expect(gotAll.map((m) => m.condition_id).sort()).toEqual([a.condition_id, c.condition_id].sort());
    // unsubscribe from a: b still comes; then everything stops
    expect(await named.emitWithAck('markets.unsubscribe', { condition_ids: [a.condition_id] })).toEqual({
      ok: true,
      markets: [],
    });
    await venue.changeTickSize(a.tokens[0].token_id, dec('0.01'));
    await venue.changeTickSize(b.tokens[0].token_id, dec('0.001'));
    await until(() => gotAll.length === 4 && gotNamed.length === 2);
    await new Promise((r) => setTimeout(r, 50));
    expect(gotNamed.map((m) => m.condition_id)).toEqual([a.condition_id, b.condition_id]);
    expect(await named.emitWithAck('markets.unsubscribe', 5 as never)).toMatchObject({
      ok: false,
      error: 'invalid_request',
    });
    expect(await named.emitWithAck('markets.unsubscribe', {})).toEqual({ ok: true, markets: [] });
    expect(await all.emitWithAck('markets.unsubscribe', {})).toEqual({ ok: true, markets: [] });
    await venue.changeTickSize(b.tokens[0].token_id, dec('0.01'));
    await new Promise((r) => setTimeout(r, 100));
    expect([gotNamed.length, gotAll.length]).toEqual([2, 4]);
  });

  it('split, merge and redeem push wallet_operation.updated to the owner and the partner, batched too', async () => {
    const alice = await open({ token: keys.alice!.api_key });
    const bob = await open({ token: keys.bob!.api_key });
    const master = await open({ token: (await import('../helpers.js')).MASTER_KEY });
    const batchedClient = await open({ token: keys.alice!.api_key, batch_ms: 5 });
    const got: WalletOperationPush[] = [];
    const gotMaster: WalletOperationPush[] = [];
    const gotBob: WalletOperationPush[] = [];
    const batched: Array<{ event: string; data: unknown }> = [];
    alice.on('wallet_operation.updated', (x) => got.push(x));
    master.on('wallet_operation.updated', (x) => gotMaster.push(x));
    bob.on('wallet_operation.updated', (x) => gotBob.push(x));
    batchedClient.on('updates.batch', (x) => batched.push(...x.records));
    const m = ((await svc.call('GET', '/v2/trade/markets?limit=200')).body.markets as any[]).find(
      (x) => x.tokens.length === 2 && !x.closed,
    );
    const split = await svc.call('POST', '/v2/trade/positions/split', {
      body: { condition_id: m.condition_id, amount: '3' },
      headers: as('alice'),
    });
    expect(split).toMatchObject({ status: 200, body: { type: 'SPLIT', status: 'CONFIRMED' } });
    const merge = await svc.call('POST', '/v2/trade/positions/merge', {
      body: { condition_id: m.condition_id, amount: '1' },
      headers: as('alice'),
    });
    expect(merge).toMatchObject({ status: 200, body: { type: 'MERGE', status: 'CONFIRMED' } });
    const ids = [split.body.operation_id, merge.body.operation_id];
    const final = (l: WalletOperationPush[]) => l.filter((x) => x.status === 'CONFIRMED');
    await until(
      () =>
        final(got).length === 2 &&
        final(gotMaster).length === 2 &&
        batched.filter(
          (r) => r.event === 'wallet_operation.updated' && (r.data as WalletOperationPush).status === 'CONFIRMED',
        ).length === 2,
    );
    for (const [i, body] of [split.body, merge.body].entries()) {
      const pushes = got.filter((x) => x.operation_id === ids[i]);
      expect(pushes.map((x) => x.revision)).toEqual(pushes.map((_, k) => pushes[0]!.revision + k));
      const { revision, platform_user_id, ...view } = pushes.at(-1)!;
      expect([typeof revision, typeof platform_user_id]).toEqual(['number', 'string']);
      expect(view).toEqual(body);
    }
    expect(gotMaster).toEqual(got);
    expect(batched.filter((r) => r.event === 'wallet_operation.updated').map((r) => r.data)).toEqual(got);
    expect(gotBob).toEqual([]);
  });
});
