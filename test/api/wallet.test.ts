import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PUSD_TOKEN } from '../../engine/wallet/service.js';
import type { SimVenue } from '../../engine/venue/sim-venue.js';
import { startTestService, type TestService } from '../helpers.js';
import { checkInvariants } from '../invariants.js';
import { poll, Trading } from './trading-kit.js';

const HASH = /^0x[0-9a-f]{64}$/;
/** A checksummed address (EIP-55) and the same with one letter's case flipped (bad checksum). */
const GOOD = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed';
const BAD = '0x5aAeb6053f3E94C9b9A09f33669435E7Ef1BeAed';
/** Another checksummed address. */
const OTHER = '0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359';

/**
 * The reference product's OpenAPI document (its v2-trade.json) for the wallet endpoints: every
 * request property it declares, and the fields its 200 answer requires.
 */
const REFERENCE_SHAPES: Record<string, { request: string[]; response: string[] }> = {
  '/v2/trade/positions/redeem': {
    request: ['condition_id', 'outcome_index', 'neg_risk_market', 'amount', 'venue'],
    response: ['transaction_hash', 'state', 'condition_id', 'outcome_index', 'neg_risk_market', 'payout_base_units'],
  },
  '/v2/trade/positions/split': {
    request: ['venue', 'condition_id', 'amount', 'neg_risk_market'],
    response: ['transaction_hash', 'state', 'condition_id', 'amount', 'neg_risk_market'],
  },
  '/v2/trade/positions/merge': {
    request: ['venue', 'condition_id', 'amount', 'neg_risk_market'],
    response: ['transaction_hash', 'state', 'condition_id', 'amount', 'neg_risk_market'],
  },
  '/v2/trade/withdraw': {
    request: ['venue', 'to', 'amount', 'token'],
    response: ['transaction_hash', 'state', 'to', 'amount', 'token'],
  },
};

/**
 * Wallet operations over REST (spec 1, 2.8, 4.5, 4.6): split, merge, redeem,
 * withdrawals and withdrawable balances, through the real HTTP path and the real scheduler (the
 * withdrawal's block delay is an Agenda timer).
 */
describe('wallet operations (REST)', () => {
  let svc: TestService;
  const tr = new Trading(() => svc);
  let markets: any[];
  const used = new Set<string>();
  /**
   * A market of the catalogue not used by an earlier test (0.01 tick, binary; neg-risk or not when `negRisk` is given).
   */
  const market = (negRisk?: boolean) => {
    const m = markets.find(
      (x) =>
        !used.has(x.condition_id) &&
        x.tick_size === '0.01' &&
        x.tokens.length === 2 &&
        (negRisk === undefined || x.neg_risk === negRisk),
    )!;
    used.add(m.condition_id);
    return m as { condition_id: string; neg_risk: boolean; tokens: { token_id: string; outcome: string }[] };
  };
  const as = (u: string) => ({ 'x-partner-user-id': u });
  const post = (u: string, path: string, body: unknown, idempotencyKey?: string) =>
    svc.call('POST', `/v2/trade${path}`, { body, headers: as(u), ...(idempotencyKey ? { idempotencyKey } : {}) });
  const get = (u: string, path: string) => svc.call('GET', `/v2/trade${path}`, { headers: as(u) });
  const pusd = async (u: string) =>
    (await get(u, '/balances')).body as { balance: string; reserved: string; available: string };
  const shares = async (u: string, token: string) =>
    ((await get(u, '/positions?limit=500')).body.positions.find((p: any) => p.token_id === token)?.size as
      string | undefined) ?? '0';
  const activity = async (u: string) => (await get(u, '/activity?limit=200')).body.activity as any[];

  beforeAll(async () => {
    svc = await startTestService({
      env: { SIM_MAKER_REFILL_MS: '3600000', SIM_INITIAL_PUSD: '1000', SIM_BLOCK_DELAY_MS: '300' },
    });
    await tr.init(['alice', 'bob', 'carol', 'dave', 'erin', 'fay', 'gus', 'hal']);
    markets = (await svc.call('GET', '/v2/trade/markets?limit=500')).body.markets;
  });
  afterAll(() => svc.close());

  it('split then merge: pUSD → YES + NO → same pUSD; each a simulated on-chain result and activity', async () => {
    const m = market();
    const [yes, no] = m.tokens;
    const split = await post('alice', '/positions/split', { condition_id: m.condition_id, amount: '25.5' });
    expect(split.status).toBe(200);
    expect(split.body).toMatchObject({
      type: 'SPLIT',
      status: 'CONFIRMED',
      condition_id: m.condition_id,
      amount: '25.5',
      payout_usd: null,
      pusd_delta: '-25.5',
      pusd_balance: '974.5',
      tokens: [
        { token_id: yes!.token_id, outcome: yes!.outcome, shares_delta: '25.5', balance: '25.5' },
        { token_id: no!.token_id, outcome: no!.outcome, shares_delta: '25.5', balance: '25.5' },
      ],
    });
    expect(split.body.transaction_hash).toMatch(HASH);
    expect(await shares('alice', yes!.token_id)).toBe('25.5');
    const merge = await post('alice', '/positions/merge', { condition_id: m.condition_id, amount: '25.5' });
    expect(merge.status).toBe(200);
    expect(merge.body).toMatchObject({
      type: 'MERGE',
      status: 'CONFIRMED',
      pusd_delta: '25.5',
      pusd_balance: '1000',
      tokens: [
        { shares_delta: '-25.5', balance: '0' },
        { shares_delta: '-25.5', balance: '0' },
      ],
    });
    expect(merge.body.transaction_hash).toMatch(HASH);
    expect(merge.body.transaction_hash).not.toBe(split.body.transaction_hash);
    expect(await pusd('alice')).toEqual({ currency: 'pUSD', balance: '1000', reserved: '0', available: '1000' });
    const rows = await activity('alice');
    expect(rows.slice(0, 2)).toMatchObject([
      {
        kind: 'wallet',
        id: merge.body.operation_id,
        type: 'MERGE',
        status: 'CONFIRMED',
        side: null,
        symbol: m.condition_id,
        amount: '25.5',
        transaction_hash: merge.body.transaction_hash,
      },
      {
        kind: 'wallet',
        id: split.body.operation_id,
        type: 'SPLIT',
        status: 'CONFIRMED',
        side: null,
        symbol: m.condition_id,
        amount: '25.5',
        transaction_hash: split.body.transaction_hash,
      },
    ]);
  });

  it('an upper-case hex condition_id names the same market for split, merge, redeem; answer keeps ours', async () => {
    const m = market();
    const upper = `0x${m.condition_id.slice(2).toUpperCase()}`;
    const split = await post('erin', '/positions/split', { condition_id: upper, amount: '2' });
    expect([split.status, split.body.condition_id, split.body.pusd_delta]).toEqual([200, m.condition_id, '-2']);
    const merge = await post('erin', '/positions/merge', { condition_id: upper, amount: '2' });
    expect([merge.status, merge.body.condition_id, merge.body.pusd_delta]).toEqual([200, m.condition_id, '2']);
    const redeem = await post('erin', '/positions/redeem', { condition_id: upper });
    expect([redeem.status, redeem.body.error]).toEqual([409, 'MARKET_NOT_RESOLVED']);
    expect((await activity('erin')).slice(0, 2).map((r) => [r.type, r.symbol])).toEqual([
      ['MERGE', m.condition_id],
      ['SPLIT', m.condition_id],
    ]);
  });

  it('the same Idempotency-Key answers the same operation once (replayed), the tx hash is deterministic', async () => {
    const m = market();
    const key = randomUUID();
    const a = await post('bob', '/positions/split', { condition_id: m.condition_id, amount: '3' }, key);
    const b = await post('bob', '/positions/split', { condition_id: m.condition_id, amount: '3' }, key);
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    expect(b.headers.get('idempotent-replayed')).toBe('true');
    expect(b.body.transaction_hash).toBe(a.body.transaction_hash);
    expect((await pusd('bob')).balance).toBe('997');
  });

  it('refusals change nothing: balance, shares to merge, reserved shares, bad amount, unknown market', async () => {
    const m = market();
    const before = { pusd: await pusd('carol'), rows: (await activity('carol')).length };
    const tooMuch = await post('carol', '/positions/split', { condition_id: m.condition_id, amount: '1000.01' });
    expect(tooMuch.status).toBe(422);
    expect(tooMuch.body).toEqual({
      error: 'INSUFFICIENT_BALANCE',
      message: 'this split needs $1000.01 pUSD; available $1000',
    });
    const merge = await post('carol', '/positions/merge', { condition_id: m.condition_id, amount: '1' });
    expect(merge.status).toBe(422);
    expect(merge.body.error).toMatch(/^Not enough shares to merge 1 — holding 0 of outcome token/);
    expect((await post('carol', '/positions/split', { condition_id: m.condition_id, amount: '0' })).status).toBe(400);
    expect(
      (await post('carol', '/positions/split', { condition_id: m.condition_id, amount: '1.0000001' })).status,
    ).toBe(400);
    expect(
      (await post('carol', '/positions/split', { condition_id: `0x${'cd'.repeat(32)}`, amount: '1' })).status,
    ).toBe(404);
    expect(await pusd('carol')).toEqual(before.pusd);
    expect((await activity('carol')).length).toBe(before.rows);
    // shares reserved by an open sell cannot be merged
    expect((await post('carol', '/positions/split', { condition_id: m.condition_id, amount: '10' })).status).toBe(200);
    const sell = await tr.post('carol', {
      symbol: m.tokens[0]!.token_id,
      side: 'sell',
      type: 'LIMIT',
      price: '0.99',
      size: '8',
    });
    expect(sell.body.status).toBe('OPEN');
    const rows = (await activity('carol')).length;
    const reserved = await post('carol', '/positions/merge', { condition_id: m.condition_id, amount: '3' });
    expect(reserved.status).toBe(422);
    expect(reserved.body.error).toMatch(
      /^Not enough shares to merge 3 — holding 10 of outcome token \d+, of which 8 reserved by open sells$/,
    );
    expect((await post('carol', '/positions/merge', { condition_id: m.condition_id, amount: '2' })).status).toBe(200);
    expect((await activity('carol')).length).toBe(rows + 1);
  });

  it('redeem: 409 before resolution; then a winning share pays $1, a loser $0; then NOTHING_TO_REDEEM', async () => {
    const m = market();
    const [yes, no] = m.tokens;
    await tr.buyShares('dave', yes!.token_id, 10);
    expect((await post('dave', '/positions/split', { condition_id: m.condition_id, amount: '4' })).status).toBe(200);
    const early = await post('dave', '/positions/redeem', { condition_id: m.condition_id });
    expect(early.status).toBe(409);
    expect(early.body.error).toBe('MARKET_NOT_RESOLVED');
    await (svc.services.venue as SimVenue).resolveMarket(m.condition_id, yes!.token_id);
    const before = dec((await pusd('dave')).balance);
    const r = await post('dave', '/positions/redeem', { condition_id: m.condition_id });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      type: 'REDEEM',
      status: 'CONFIRMED',
      state: 'STATE_CONFIRMED',
      outcome_index: null,
      amount: null,
      payout_usd: '14',
      payout_base_units: '14000000',
      pusd_delta: '14',
      tokens: [
        { token_id: yes!.token_id, shares_delta: '-14', balance: '0' },
        { token_id: no!.token_id, shares_delta: '-4', balance: '0' },
      ],
    });
    expect(r.body.transaction_hash).toMatch(HASH);
    expect(dec((await pusd('dave')).balance) - before).toBeCloseTo(14, 9);
    expect(await shares('dave', yes!.token_id)).toBe('0');
    const again = await post('dave', '/positions/redeem', { condition_id: m.condition_id });
    expect(again.status).toBe(422);
    expect(again.body.error).toBe('NOTHING_TO_REDEEM');
    // a losing position only: redeems to $0
    const m2 = market();
    await tr.buyShares('dave', m2.tokens[1]!.token_id, 6);
    await (svc.services.venue as SimVenue).resolveMarket(m2.condition_id, m2.tokens[0]!.token_id);
    const lose = await post('dave', '/positions/redeem', { condition_id: m2.condition_id });
    expect(lose.body).toMatchObject({
      status: 'CONFIRMED',
      payout_usd: '0',
      tokens: [{ shares_delta: '0' }, { shares_delta: '-6', balance: '0' }],
    });
    expect((await activity('dave'))[0]).toMatchObject({ kind: 'wallet', type: 'REDEEM', amount: '0' });
  });

  it('redeem after an open sell: resolution cancels the sell, its shares are free and redeem pays them', async () => {
    const m = market();
    await post('dave', '/positions/split', { condition_id: m.condition_id, amount: '10' });
    const sell = await tr.post('dave', {
      symbol: m.tokens[0]!.token_id,
      side: 'sell',
      type: 'LIMIT',
      price: '0.99',
      size: '5',
    });
    expect(sell.status).toBe(200);
    await (svc.services.venue as SimVenue).resolveMarket(m.condition_id, m.tokens[0]!.token_id);
    const r = await post('dave', '/positions/redeem', { condition_id: m.condition_id });
    expect(r.status).toBe(200);
    expect(r.body.payout_usd).toBe('10');
    expect(await shares('dave', m.tokens[0]!.token_id)).toBe('0');
  });

  it('withdrawable balances (spec 2.8): pUSD by its token address, human units, zero balances dropped', async () => {
    await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'zed' } });
    const w = await get('erin', '/balances/withdrawable');
    expect(w.status).toBe(200);
    expect(w.body).toEqual({
      balances: [{ token: PUSD_TOKEN.address, symbol: 'pUSD', decimals: 6, balance: '1000', value_usd: '1000' }],
    });
    // all of it withdrawn: the zero balance is dropped
    const all = await post('zed', '/withdraw', { to_address: GOOD, amount: '1000' });
    expect(all.status).toBe(200);
    expect((await get('zed', '/balances/withdrawable')).body).toEqual({ balances: [] });
  });

  it('withdraw: refusals (checksum, unknown token, amount, INSUFFICIENT_BALANCE, scope) change nothing', async () => {
    const before = (await activity('erin')).length;
    const bad = await post('erin', '/withdraw', { to_address: BAD, amount: '1' });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toMatch(/EIP-55 checksum/);
    expect(
      (
        await post('erin', '/withdraw', {
          to_address: GOOD,
          amount: '1',
          token: '0x2791Bca1f2de4661ED88A30C99A7a9449Aa84174',
        })
      ).status,
    ).toBe(400);
    expect((await post('erin', '/withdraw', { to_address: GOOD, amount: '0' })).status).toBe(400);
    // the token contract itself (what /balances/withdrawable lists as `token`), in any spelling
    const pusdToken = (await get('erin', '/balances/withdrawable')).body.balances[0].token as string;
    for (const to of [pusdToken, pusdToken.toLowerCase()]) {
      const lost = await post('erin', '/withdraw', { to_address: to, amount: '1' });
      expect([lost.status, lost.body.error]).toEqual([400, 'invalid_request']);
      expect(lost.body.message).toMatch(/token contract itself/);
    }
    // a deposit wallet of this service, the user's own or another user's: not an external address
    const wallet = async (u: string) =>
      (await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: u } })).body.safe_address as string;
    for (const [to, why] of [
      [await wallet('erin'), /is this user's own deposit wallet/],
      [(await wallet('wd-peer')).toLowerCase(), /deposit wallet of another user of this service/],
    ] as const) {
      const internal = await post('erin', '/withdraw', { to, amount: '1' });
      expect([internal.status, internal.body.error]).toEqual([400, 'invalid_request']);
      expect(internal.body.message).toMatch(why);
    }
    expect((await post('erin', '/withdraw', { to_address: GOOD, amount: '0.0000001' })).status).toBe(400);
    const poor = await post('erin', '/withdraw', { to_address: GOOD, amount: '1000.5' });
    expect(poor.status).toBe(422);
    expect(poor.body).toEqual({
      error: 'INSUFFICIENT_BALANCE',
      message: 'this withdrawal needs $1000.5 pUSD; available $1000',
    });
    // trade.execute is not enough: trade.withdraw is granted explicitly
    const k = await svc.call('POST', '/v2/trade/users/erin/api-keys', {
      body: { scopes: ['trade.read', 'trade.execute', 'trade.cancel'] },
    });
    const denied = await svc.call('POST', '/v2/trade/withdraw', {
      token: k.body.api_key,
      body: { to_address: GOOD, amount: '1' },
    });
    expect(denied.status).toBe(403);
    expect(denied.body.error).toBe('forbidden');
    expect((await activity('erin')).length).toBe(before);
    expect((await pusd('erin')).balance).toBe('1000');
  });

  it('withdraw: leaves at once, PENDING → CONFIRMED after the block delay, readable, an activity row', async () => {
    const k = await svc.call('POST', '/v2/trade/users/erin/api-keys', {
      body: { scopes: ['trade.read', 'trade.withdraw'] },
    });
    const w = await svc.call('POST', '/v2/trade/withdraw', {
      token: k.body.api_key,
      body: { to_address: GOOD.toLowerCase(), amount: '100.25', token: PUSD_TOKEN.address.toLowerCase() },
    });
    expect(w.status).toBe(200);
    expect(w.body).toMatchObject({
      type: 'WITHDRAWAL',
      status: 'PENDING',
      to_address: GOOD,
      token: PUSD_TOKEN.address,
      symbol: 'pUSD',
      amount: '100.25',
      settled_at: null,
      refunded: false,
    });
    expect(w.body.transaction_hash).toMatch(HASH);
    expect(w.body.confirms_at).toBeGreaterThan(w.body.created_at);
    expect(await pusd('erin')).toMatchObject({ balance: '899.75', available: '899.75' });
    expect((await get('erin', '/balances/withdrawable')).body.balances[0].balance).toBe('899.75');
    const id = w.body.withdrawal_id as string;
    const done = await poll(
      'withdrawal confirmed',
      async () => (await get('erin', `/withdrawals/${id}`)).body,
      (b) => b.status === 'CONFIRMED',
    );
    expect(done).toMatchObject({
      withdrawal_id: id,
      status: 'CONFIRMED',
      transaction_hash: w.body.transaction_hash,
      confirms_at: null,
      refunded: false,
    });
    expect(done.settled_at).toBeGreaterThanOrEqual(w.body.confirms_at);
    expect((await pusd('erin')).balance).toBe('899.75');
    const list = await get('erin', '/withdrawals?status=CONFIRMED');
    expect(list.body).toMatchObject({ total: 1, withdrawals: [{ withdrawal_id: id }] });
    expect((await activity('erin'))[0]).toMatchObject({
      kind: 'withdrawal',
      id,
      type: 'WITHDRAWAL',
      status: 'CONFIRMED',
      side: null,
      symbol: PUSD_TOKEN.address,
      amount: '100.25',
      transaction_hash: w.body.transaction_hash,
    });
    expect((await get('alice', `/withdrawals/${id}`)).status).toBe(404);
  });

  it('withdraw to the zero address: the simulated transfer reverts → FAILED with the amount returned', async () => {
    const w = await post('erin', '/withdraw', {
      to_address: '0x0000000000000000000000000000000000000000',
      amount: '50',
    });
    expect(w.status).toBe(200);
    expect(w.body.status).toBe('PENDING');
    expect((await pusd('erin')).balance).toBe('849.75');
    const failed = await poll(
      'withdrawal failed',
      async () => (await get('erin', `/withdrawals/${w.body.withdrawal_id}`)).body,
      (b) => b.status === 'FAILED',
    );
    expect(failed).toMatchObject({
      status: 'FAILED',
      failure_code: 'TRANSFER_REVERTED',
      message: 'ERC20: transfer to the zero address',
      refunded: true,
    });
    expect((await pusd('erin')).balance).toBe('899.75');
  });

  it('the OpenAPI document takes every property of the reference wallet bodies and answers its 200s', async () => {
    const doc = (await svc.call('GET', '/v2/trade/openapi.json', { token: null })).body;
    const deref = (x: any) => (x.$ref ? doc.components.schemas[x.$ref.split('/').pop()] : x);
    for (const [path, ref] of Object.entries(REFERENCE_SHAPES)) {
      const op = doc.paths[path].post;
      const req = deref(op.requestBody.content['application/json'].schema);
      const res = deref(op.responses['200'].content['application/json'].schema);
      expect([path, ref.request.filter((f) => !(f in req.properties))]).toEqual([path, []]);
      expect([path, ref.response.filter((f) => !res.required.includes(f))]).toEqual([path, []]);
      // what the reference requires is never more than it sends: our required fields are among its properties
      expect([path, (req.required as string[]).filter((f) => !ref.request.includes(f))]).toEqual([path, []]);
    }
  });

  it('split and merge take the reference bodies (neg_risk_market, venue), answer its state beside ours', async () => {
    const m = market(false);
    // the reference pages' example bodies, the placeholder condition id replaced by a market of ours
    const split = await post('fay', '/positions/split', {
      condition_id: m.condition_id,
      amount: '100.00',
      neg_risk_market: false,
    });
    expect(split.status).toBe(200);
    expect(split.body).toMatchObject({
      type: 'SPLIT',
      status: 'CONFIRMED',
      state: 'STATE_CONFIRMED',
      condition_id: m.condition_id,
      amount: '100',
      neg_risk_market: false,
      outcome_index: null,
      payout_usd: null,
      payout_base_units: null,
      pusd_delta: '-100',
      pusd_balance: '900',
    });
    expect(split.body.transaction_hash).toMatch(HASH);
    const merge = await post('fay', '/positions/merge', {
      condition_id: m.condition_id,
      amount: '100',
      neg_risk_market: false,
    });
    expect(merge.status).toBe(200);
    expect(merge.body).toMatchObject({
      type: 'MERGE',
      status: 'CONFIRMED',
      state: 'STATE_CONFIRMED',
      condition_id: m.condition_id,
      amount: '100',
      neg_risk_market: false,
      pusd_delta: '100',
      pusd_balance: '1000',
    });
    const withVenue = await post('fay', '/positions/split', {
      venue: 'polymarket',
      condition_id: m.condition_id,
      amount: '1',
      neg_risk_market: false,
    });
    expect([withVenue.status, withVenue.body.state]).toEqual([200, 'STATE_CONFIRMED']);
    const other = await post('fay', '/positions/split', {
      venue: 'predictfun',
      condition_id: m.condition_id,
      amount: '1',
    });
    expect(other.status).toBe(400);
    expect(other.body).toEqual({ error: 'invalid_request', message: 'venue must be one of "polymarket"' });
  });

  it('neg_risk_market must match the market: else 422 NEG_RISK_MISMATCH, nothing changed; may be omitted', async () => {
    const plain = market(false);
    const neg = market(true);
    const listed = (
      await svc.call('GET', `/v2/trade/markets?token_id=${plain.tokens[0]!.token_id},${neg.tokens[0]!.token_id}`)
    ).body.markets;
    expect(listed.map((x: any) => [x.condition_id, x.neg_risk])).toEqual([
      [plain.condition_id, false],
      [neg.condition_id, true],
    ]);
    const before = { pusd: await pusd('fay'), rows: (await activity('fay')).length };
    for (const path of ['/positions/split', '/positions/merge']) {
      const wrong = await post('fay', path, {
        condition_id: neg.condition_id,
        amount: '100.00',
        neg_risk_market: false,
      });
      expect([path, wrong.status, wrong.body]).toEqual([
        path,
        422,
        {
          error: 'NEG_RISK_MISMATCH',
          message:
            `market ${neg.condition_id} is a neg-risk market (routed through the NegRiskAdapter): send ` +
            `neg_risk_market true, or omit it (GET /v2/trade/markets shows neg_risk)`,
        },
      ]);
    }
    const notNeg = await post('fay', '/positions/redeem', {
      condition_id: plain.condition_id,
      outcome_index: 0,
      neg_risk_market: true,
    });
    expect([notNeg.status, notNeg.body]).toEqual([
      422,
      {
        error: 'NEG_RISK_MISMATCH',
        message:
          `market ${plain.condition_id} is not a neg-risk market: send neg_risk_market false, or omit it ` +
          `(GET /v2/trade/markets shows neg_risk)`,
      },
    ]);
    expect(await pusd('fay')).toEqual(before.pusd);
    expect((await activity('fay')).length).toBe(before.rows);
    const right = await post('fay', '/positions/split', {
      condition_id: neg.condition_id,
      amount: '5',
      neg_risk_market: true,
    });
    expect(right.status).toBe(200);
    expect(right.body).toMatchObject({
      type: 'SPLIT',
      state: 'STATE_CONFIRMED',
      neg_risk_market: true,
      pusd_delta: '-5',
    });
    const omitted = await post('fay', '/positions/merge', { condition_id: neg.condition_id, amount: '5' });
    expect(omitted.status).toBe(200);
    expect(omitted.body).toMatchObject({
      type: 'MERGE',
      state: 'STATE_CONFIRMED',
      neg_risk_market: true,
      pusd_delta: '5',
    });
  });

  it('redeem takes the reference body: outcome_index burns one outcome, amount part of it; base units', async () => {
    const m = market(false);
    const [yes, no] = m.tokens;
    expect((await post('gus', '/positions/split', { condition_id: m.condition_id, amount: '10' })).status).toBe(200);
    // the reference page's example body, the placeholder condition id replaced by a market of ours
    const reference = { condition_id: m.condition_id, outcome_index: 0, neg_risk_market: false };
    const early = await post('gus', '/positions/redeem', reference);
    expect([early.status, early.body.error]).toEqual([409, 'MARKET_NOT_RESOLVED']);
    await (svc.services.venue as SimVenue).resolveMarket(m.condition_id, yes!.token_id);
    // refusals first: none changes anything
    const before = { pusd: await pusd('gus'), rows: (await activity('gus')).length };
    const noSuch = await post('gus', '/positions/redeem', { ...reference, outcome_index: 2 });
    expect([noSuch.status, noSuch.body]).toEqual([
      400,
      {
        error: 'invalid_request',
        message:
          `outcome_index 2 is not an outcome of market ${m.condition_id}: ` + `0 = ${yes!.outcome}, 1 = ${no!.outcome}`,
      },
    ]);
    const negative = await post('gus', '/positions/redeem', { ...reference, outcome_index: -1 });
    expect([negative.status, negative.body]).toEqual([
      400,
      { error: 'invalid_request', message: 'outcome_index must be at least 0' },
    ]);
    const loose = await post('gus', '/positions/redeem', { condition_id: m.condition_id, amount: '1' });
    expect([loose.status, loose.body]).toEqual([
      400,
      {
        error: 'invalid_request',
        message:
          'amount of a redeem counts shares of one outcome: send outcome_index with it (or omit amount to ' +
          'redeem every share)',
      },
    ]);
    const tooMany = await post('gus', '/positions/redeem', { ...reference, outcome_index: 1, amount: '11' });
    expect([tooMany.status, tooMany.body]).toEqual([
      422,
      {
        error: `Not enough shares to redeem 11 — holding 10 of outcome token ${no!.token_id}`,
        message: `Not enough shares to redeem 11 — holding 10 of outcome token ${no!.token_id}`,
      },
    ]);
    expect(await pusd('gus')).toEqual(before.pusd);
    expect((await activity('gus')).length).toBe(before.rows);
    // part of the winning outcome, then the rest with the reference's body
    const part = await post('gus', '/positions/redeem', { ...reference, amount: '4' });
    expect(part.status).toBe(200);
    expect(part.body).toMatchObject({
      type: 'REDEEM',
      status: 'CONFIRMED',
      state: 'STATE_CONFIRMED',
      condition_id: m.condition_id,
      outcome_index: 0,
      neg_risk_market: false,
      amount: '4',
      payout_usd: '4',
      payout_base_units: '4000000',
      pusd_delta: '4',
      tokens: [
        { token_id: yes!.token_id, shares_delta: '-4', balance: '6' },
        { token_id: no!.token_id, shares_delta: '0', balance: '10' },
      ],
    });
    const rest = await post('gus', '/positions/redeem', reference);
    expect(rest.status).toBe(200);
    expect(rest.body).toMatchObject({
      state: 'STATE_CONFIRMED',
      outcome_index: 0,
      neg_risk_market: false,
      amount: null,
      payout_usd: '6',
      payout_base_units: '6000000',
      tokens: [
        { shares_delta: '-6', balance: '0' },
        { shares_delta: '0', balance: '10' },
      ],
    });
    expect(rest.body.transaction_hash).toMatch(HASH);
    const again = await post('gus', '/positions/redeem', reference);
    expect([again.status, again.body]).toEqual([
      422,
      { error: 'NOTHING_TO_REDEEM', message: `no shares of outcome token ${yes!.token_id} to redeem` },
    ]);
    // the losing outcome redeems to $0
    const lose = await post('gus', '/positions/redeem', { ...reference, outcome_index: 1 });
    expect(lose.status).toBe(200);
    expect(lose.body).toMatchObject({
      outcome_index: 1,
      payout_usd: '0',
      payout_base_units: '0',
      tokens: [
        { shares_delta: '0', balance: '0' },
        { shares_delta: '-10', balance: '0' },
      ],
    });
    expect((await pusd('gus')).balance).toBe('1000');
    expect((await activity('gus')).slice(0, 3).map((r) => [r.type, r.amount])).toEqual([
      ['REDEEM', '0'],
      ['REDEEM', '6'],
      ['REDEEM', '4'],
    ]);
  });

  it('withdraw takes the reference body {to, amount}: to_address an alias; answers to and state', async () => {
    // the reference page's example bodies, the placeholder addresses replaced by real ones
    const w = await post('hal', '/withdraw', { to: GOOD, amount: '250.00' });
    expect(w.status).toBe(200);
    expect(w.body).toMatchObject({
      type: 'WITHDRAWAL',
      status: 'PENDING',
      state: 'STATE_PENDING',
      to: GOOD,
      to_address: GOOD,
      amount: '250',
      token: PUSD_TOKEN.address,
    });
    expect(w.body.transaction_hash).toMatch(HASH);
    const done = await poll(
      'withdrawal confirmed',
      async () => (await get('hal', `/withdrawals/${w.body.withdrawal_id}`)).body,
      (b) => b.status === 'CONFIRMED',
    );
    expect(done).toMatchObject({ status: 'CONFIRMED', state: 'STATE_CONFIRMED', to: GOOD });
    const token = await post('hal', '/withdraw', { to: GOOD, amount: '50.00', token: PUSD_TOKEN.address });
    expect(token.status).toBe(200);
    expect(token.body).toMatchObject({ state: 'STATE_PENDING', to: GOOD, amount: '50', token: PUSD_TOKEN.address });
    // both names, one address in two spellings: taken
    const both = await post('hal', '/withdraw', {
      to: GOOD.toLowerCase(),
      to_address: GOOD,
      amount: '1',
      venue: 'polymarket',
    });
    expect(both.status).toBe(200);
    expect(both.body).toMatchObject({ to: GOOD, to_address: GOOD, amount: '1' });
    expect((await pusd('hal')).balance).toBe('699');
    // refusals change nothing
    const before = (await activity('hal')).length;
    const differ = await post('hal', '/withdraw', { to: GOOD, to_address: OTHER, amount: '1' });
    expect([differ.status, differ.body]).toEqual([
      400,
      {
        error: 'invalid_request',
        message:
          `to ${GOOD} and to_address ${OTHER} name different addresses: send one of them (to_address is an ` +
          `alias of to)`,
      },
    ]);
    const none = await post('hal', '/withdraw', { amount: '1' });
    expect([none.status, none.body]).toEqual([
      400,
      { error: 'invalid_request', message: 'to or to_address is required' },
    ]);
    const bad = await post('hal', '/withdraw', { to: BAD, amount: '1' });
    expect([bad.status, bad.body]).toEqual([
      400,
      {
        error: 'invalid_request',
        message: `to ${BAD} is not a valid address (a mixed-case address must carry a valid EIP-55 checksum)`,
      },
    ]);
    const self = await post('hal', '/withdraw', { to: PUSD_TOKEN.address, amount: '1' });
    expect([self.status, self.body.message]).toEqual([
      400,
      `to ${PUSD_TOKEN.address} is the pUSD token contract itself: tokens sent there cannot be recovered; ` +
        `send them to a wallet address`,
    ]);
    const venue = await post('hal', '/withdraw', { to: GOOD, amount: '1', venue: 'predictfun' });
    expect([venue.status, venue.body]).toEqual([
      400,
      { error: 'invalid_request', message: 'venue must be one of "polymarket"' },
    ]);
    expect((await activity('hal')).length).toBe(before);
    expect((await pusd('hal')).balance).toBe('699');
  });

  it('the shared invariant check holds over all of the above (wallet operations, conservation)', async () => {
    await checkInvariants(svc.services, { acknowledged: tr.acknowledged });
  });
});

function dec(s: string): number {
  return Number(s);
}
