/**
 * The trade reads over HTTP: GET /v2/trade/trades (the market tape) and GET
 * /v2/trade/traders/{address}/trades (a trader's fills), their compound cursor, filters and refusals.
 * Fills are made through REST orders; edge cases REST does not make (a trader on both sides of one
 * trade, blocks of several trades at chosen times) are written through the store port as the
 * history's writer stores them.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  HISTORY_INDEXES,
  TAPE_TOKENS,
  TRADER_FILLS,
  notionalOf,
  type TapeTrade,
  type TraderFill,
} from '../../engine/data/records.js';
import { LEADER_TRADES_FILE } from '../../engine/data/real-history.js';
import type { Collection, Doc } from '../../engine/store/port.js';
import { SqliteStore } from '../../engine/store/sqlite.js';
import { dataFile } from '../../engine/venue/markets.js';
import { startTestService, type TestService } from '../helpers.js';
import { px, Trading } from './trading-kit.js';

const ALICE = '0x' + 'a1'.repeat(20);
const BOB = '0x' + 'b2'.repeat(20);
const T0 = 1_780_000_000;
/** The wallet of the real leader history in data/ (470 fills). */
const LEADER = '0xb77b6ef359f02192fb077227499f9f853d4870a5';

/**
 * Every page of `path` (limit `limit`) read from `svc`, following next_cursor, with `between` run
 * after each page but the last.
 */
async function pageAll(svc: TestService, path: string, limit: number, between?: (page: number) => Promise<void>) {
  const seen: any[] = [];
  let cursor = '';
  for (let page = 0; ; page++) {
    const sep = path.includes('?') ? '&' : '?';
    const res = await svc.call('GET', `${path}${sep}limit=${limit}${cursor}`);
    expect(res.status).toBe(200);
    seen.push(...res.body.trades);
    if (res.body.next_cursor === null) {
      expect(res.body.next_cursor_log_idx).toBeNull();
      return { rows: seen, pages: page + 1 };
    }
    cursor = `&cursor_ts=${res.body.next_cursor}&next_cursor_log_idx=${res.body.next_cursor_log_idx}`;
    await between?.(page);
  }
}

/** Whether `rows` are in descending chain order. */
const chainDesc = (rows: any[]) =>
  rows.every(
    (r, i) =>
      i === 0 ||
      rows[i - 1].block_timestamp > r.block_timestamp ||
      (rows[i - 1].block_timestamp === r.block_timestamp && rows[i - 1].log_index >= r.log_index),
  );

/** A row's chain position. */
const position = (r: { block_timestamp: number; log_index: number; transaction_hash: string }) => ({
  block_timestamp: r.block_timestamp,
  log_index: r.log_index,
  transaction_hash: r.transaction_hash,
});

describe('trade reads of fills made through REST orders', () => {
  let svc: TestService;
  const tr = new Trading(() => svc);
  const address = tr.address;

  beforeAll(async () => {
    svc = await startTestService();
    await tr.init(['alice', 'bob']);
  });
  afterAll(() => svc.close());

  /** `u` buys 5 shares of `token` at the asks: the order's taker fills. */
  const take = async (u: string, token: string) => (await tr.buyShares(u, token, 5)).fills as any[];

  it("a trade between two users is on the tape and in both traders' trades, at one chain position", async () => {
    const f = await tr.freshToken();
    await tr.buyShares('bob', f.token, 20);
    const price = px(f.bid + 0.01);
    const rest = await tr.post('alice', { symbol: f.token, side: 'buy', type: 'LIMIT', price, size: '10' });
    expect(rest.status).toBe(200);
    const sell = await tr.post('bob', {
      symbol: f.token,
      side: 'sell',
      type: 'LIMIT',
      price,
      size: '6',
      time_in_force: 'IOC',
    });
    expect(sell).toMatchObject({ status: 200, body: { status: 'FILLED' } });
    const fill = sell.body.fills[0];
    const tape = await svc.call('GET', `/v2/trade/trades?token_id=${f.token}&limit=1`);
    const market = (await svc.call('GET', `/v2/trade/markets?token_id=${f.token}`)).body.markets[0];
    const common = {
      ...position(fill),
      trade_id: fill.trade_id.replace(/-t$/, ''),
      ts: new Date(fill.block_timestamp * 1000).toISOString(),
      market_id: market.condition_id,
      question: market.question,
      slug: market.slug,
      token_id: f.token,
      outcome: market.tokens.find((t: any) => t.token_id === f.token).outcome,
      price,
      shares: '6',
      usdc_amount: String(Number((Number(price) * 6).toFixed(6))),
      event_type: 'TRADE',
      source: 'venue',
    };
    expect([tape.status, tape.body.trades]).toEqual([
      200,
      [{ ...common, side: 'SELL', fee_usd: '0', maker: address.alice, taker: address.bob }],
    ]);
    // any case in the path, lower case out
    const alice = await svc.call('GET', `/v2/trade/traders/${address.alice!.toUpperCase().replace('0X', '0x')}/trades`);
    const bob = await svc.call('GET', `/v2/trade/traders/${address.bob}/trades?limit=1`);
    expect(alice.body.trades[0]).toEqual({
      ...common,
      side: 'BUY',
      fee_usd: '0',
      address: address.alice,
      role: 'maker',
    });
    expect(bob.body.trades[0]).toEqual({ ...common, side: 'SELL', fee_usd: '0', address: address.bob, role: 'taker' });
    const takerOnly = await svc.call(
      'GET',
      `/v2/trade/traders/${address.alice}/trades?taker_only=true&token_id=${f.token}`,
    );
    expect([takerOnly.status, takerOnly.body.trades]).toEqual([200, []]);
    // the tape rows of a wallet's trades: the same row, for the maker as for the taker
    const asMaker = await svc.call(
      'GET',
      `/v2/trade/trades?address=${address.alice!.toUpperCase().replace('0X', '0x')}`,
    );
    expect(asMaker.body.trades[0]).toEqual(tape.body.trades[0]);
    const took = (u: string) =>
      svc.call('GET', `/v2/trade/trades?address=${address[u]}&taker_only=true&token_id=${f.token}`);
    expect((await took('bob')).body.trades.map((t: any) => t.trade_id)).toContain(common.trade_id);
    expect((await took('alice')).body.trades).toEqual([]);
    await svc.call('DELETE', `/v2/trade/orders/${rest.body.order_id}`, { headers: tr.as('alice') });
  });

  it("the leader wallet's 470 real fills, newest first, with their real prices, sizes and times", async () => {
    const [head, ...lines] = fs.readFileSync(dataFile(LEADER_TRADES_FILE), 'utf8').trim().split('\n');
    const cols = head!.split(',');
    const file = lines.map((l) => Object.fromEntries(l.split(',').map((v, i) => [cols[i], v])));
    const leader = `/v2/trade/traders/${LEADER.toUpperCase().replace('0X', '0x')}/trades`;
    const { rows, pages } = await pageAll(svc, leader, 100);
    expect([rows.length, pages]).toEqual([470, 5]);
    expect(chainDesc(rows)).toBe(true);
    const byHash = new Map(rows.map((r) => [r.transaction_hash, r]));
    for (const r of file)
      expect(byHash.get(r.transaction_hash), r.transaction_hash).toMatchObject({
        address: LEADER,
        role: 'taker',
        source: 'history',
        block_timestamp: Number(r.timestamp),
        ts: new Date(Number(r.timestamp) * 1000).toISOString(),
        side: r.side,
        price: r.price,
        shares: r.size,
        token_id: r.asset,
        market_id: r.condition_id,
        outcome: r.outcome,
      });
    // the newest fill first, its market named from the history's own fields
    expect(rows[0]).toMatchObject({
      transaction_hash: '0xc46cbad2a1fc296085c400730f63ab66a9aa7d944c5d5dbded99b8e1eca6a3bb',
      block_timestamp: 1771678938,
      price: '0.999',
      shares: '4.99',
      usdc_amount: '4.98501',
      question: svc.services.markets.marketOf(file[0]!.condition_id!)!.question,
    });
    // on the tape too, anonymous on the maker's side
    const tape = await svc.call('GET', `/v2/trade/trades?token_id=${file[0]!.asset}&limit=500`);
    expect(tape.body.trades.find((t: any) => t.transaction_hash === rows[0].transaction_hash)).toMatchObject({
      maker: null,
      taker: LEADER,
      source: 'history',
    });
  });

  it('paging 10 pages while new fills arrive neither skips nor repeats one (the tape and a trader)', async () => {
    const f = await tr.freshToken();
    const fills: any[] = [];
    while (fills.length < 50) fills.push(...(await take('bob', f.token)));
    const expected = [...fills]
      .sort((a, b) => a.block_timestamp - b.block_timestamp || a.log_index - b.log_index)
      .reverse()
      .map((x) => x.trade_id.replace(/-t$/, ''));
    const arrived: string[] = [];
    const tape = await pageAll(svc, `/v2/trade/trades?token_id=${f.token}`, 5, async () => {
      for (const x of await take('bob', f.token)) arrived.push(x.trade_id.replace(/-t$/, ''));
    });
    expect(tape.pages).toBeGreaterThanOrEqual(10);
    expect(tape.rows.map((r) => r.trade_id)).toEqual(expected);
    expect(chainDesc(tape.rows)).toBe(true);
    // the fills that arrived meanwhile are ahead of the first page's cursor: the next first page has them
    const head = await pageAll(svc, `/v2/trade/trades?token_id=${f.token}`, 500);
    expect(head.rows.map((r) => r.trade_id)).toEqual([...[...arrived].reverse(), ...expected]);
    // bob's own fills on that token, paged the same way while more arrive
    const before = head.rows.map((r) => r.trade_id);
    const mine = await pageAll(svc, `/v2/trade/traders/${address.bob}/trades?token_id=${f.token}`, 5, async () => {
      await take('bob', f.token);
    });
    expect(mine.pages).toBeGreaterThanOrEqual(10);
    expect(mine.rows.map((r) => [r.trade_id, r.role, r.side])).toEqual(before.map((id) => [id, 'taker', 'BUY']));
  });
});

describe('trade reads of records written through the store port (edge cases REST does not make)', () => {
  let svc: TestService;
  let fills: Collection<TraderFill>;
  let market: { condition_id: string; question: string; slug: string; tokens: { token_id: string; outcome: string }[] };
  let seq = 0;

  /**
   * Stores one trade at (ts, logIndex): its tape row and its parties' fills (maker `maker`, taker
   * `taker`; the maker on the same token, opposite side).
   */
  async function record(
    ts: number,
    logIndex: number,
    o: { maker?: string; taker?: string; side?: 'BUY' | 'SELL'; token?: number } = {},
  ) {
    const n = ++seq;
    const tok = market.tokens[o.token ?? 0]!;
    const side = o.side ?? (n % 2 ? 'BUY' : 'SELL');
    const price = (0.3 + (n % 50) / 100).toFixed(2);
    const pos = { blockTimestamp: ts, logIndex, transactionHash: '0x' + n.toString(16).padStart(64, '0') };
    const base = {
      ...pos,
      tradeId: `t${n}`,
      atMs: ts * 1000,
      conditionId: market.condition_id,
      tokenId: tok.token_id,
      outcome: tok.outcome,
      price,
      size: '10',
      notionalUsd: (Number(price) * 10).toFixed(1),
      source: 'venue' as const,
    };
    const maker = o.maker ?? BOB;
    const taker = o.taker ?? ALICE;
    // the tape row as the history stores it (with its token's key), not handed to the aggregates
    const tape: TapeTrade = { ...base, _id: base.tradeId, side, feeUsd: '0.01', maker, taker };
    await svc.services.store.transaction((tx) =>
      svc.services.history.record(tx, { trades: [tape], fills: [], cash: [] }),
    );
    const fill = (address: string, role: 'maker' | 'taker'): TraderFill => ({
      ...base,
      _id: `${base.tradeId}:${role}`,
      address,
      userId: null,
      orderId: null,
      role,
      side: role === 'taker' ? side : side === 'BUY' ? 'SELL' : 'BUY',
      feeUsd: role === 'taker' ? '0.01' : '0',
    });
    await fills.insertOne(fill(maker, 'maker'));
    await fills.insertOne(fill(taker, 'taker'));
    return base.tradeId;
  }

  const get = (path: string) => svc.call('GET', path);

  beforeAll(async () => {
    svc = await startTestService();
    fills = await svc.services.store.collection<TraderFill>(TRADER_FILLS, HISTORY_INDEXES[TRADER_FILLS]);
    market = (await get('/v2/trade/markets?limit=1')).body.markets[0];
  });
  afterAll(() => svc.close());

  it('a market without trades: an empty last page', async () => {
    const res = await get(`/v2/trade/trades?market_id=${market.condition_id}`);
    expect([res.status, res.body]).toEqual([
      200,
      { trades: [], count: 0, next_cursor: null, next_cursor_log_idx: null },
    ]);
  });

  it('pages through the tape newest first while new trades arrive: neither skips nor repeats one', async () => {
    // blocks of 1 to 4 trades each
    const ids: string[] = [];
    let ts = T0;
    for (let i = 0; i < 95; ts += 2)
      for (let li = 0, k = 1 + (ts % 4); li < k && i < 95; li++, i++) ids.push(await record(ts, li));
    const head = ts;
    let arriving = 0;
    const before = await pageAll(svc, '/v2/trade/trades', 500);
    const { rows, pages } = await pageAll(svc, '/v2/trade/trades', 10, async () => {
      // two new trades land at the head (later blocks) between every two pages
      await record(head + 2 * ++arriving, 0);
      await record(head + 2 * arriving, 1);
    });
    // these trades, then the older ones already there (the real history loaded at start)
    expect(pages).toBe(Math.ceil(before.rows.length / 10));
    expect(rows.map((r) => r.trade_id)).toEqual(before.rows.map((r) => r.trade_id));
    expect(rows.slice(0, 95).map((r) => r.trade_id)).toEqual([...ids].reverse());
    expect(chainDesc(rows)).toBe(true);
    const first = rows[94];
    expect(first).toEqual({
      trade_id: ids[0],
      block_timestamp: T0,
      log_index: 0,
      transaction_hash: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      ts: new Date(T0 * 1000).toISOString(),
      market_id: market.condition_id,
      question: market.question,
      slug: market.slug,
      outcome: market.tokens[0]!.outcome,
      token_id: market.tokens[0]!.token_id,
      side: 'BUY',
      price: '0.31',
      shares: '10',
      usdc_amount: '3.1',
      fee_usd: '0.01',
      event_type: 'TRADE',
      source: 'venue',
      maker: BOB,
      taker: ALICE,
    });
    // the new ones are on the next read's first page
    const now = await get('/v2/trade/trades?limit=3');
    expect(now.body.trades.map((r: any) => [r.block_timestamp, r.log_index])).toEqual([
      [head + 2 * arriving, 1],
      [head + 2 * arriving, 0],
      [head + 2 * (arriving - 1), 1],
    ]);
    expect([now.body.count, now.body.next_cursor, now.body.next_cursor_log_idx]).toEqual([
      3,
      head + 2 * (arriving - 1),
      1,
    ]);
  });

  it('filters the tape by market, token and side', async () => {
    const other = await record(T0 + 100_001, 0, { token: 1, side: 'SELL' });
    const byToken = await pageAll(svc, `/v2/trade/trades?token_id=${market.tokens[1]!.token_id}`, 50);
    expect(byToken.rows.map((r) => r.trade_id)).toEqual([other]);
    const byMarket = await get(
      `/v2/trade/trades?market_id=${market.condition_id.toUpperCase().replace('0X', '0x')}&limit=2`,
    );
    expect(byMarket.body.trades.map((r: any) => r.market_id)).toEqual([market.condition_id, market.condition_id]);
    const sells = await pageAll(svc, '/v2/trade/trades?side=SELL', 7);
    expect(sells.rows.length).toBeGreaterThan(40);
    expect(sells.rows.every((r) => r.side === 'SELL')).toBe(true);
    expect(chainDesc(sells.rows)).toBe(true);
    expect(new Set(sells.rows.map((r) => r.trade_id)).size).toBe(sells.rows.length);
    const all = await pageAll(svc, '/v2/trade/trades', 500);
    expect(sells.rows.map((r) => r.trade_id)).toEqual(all.rows.filter((r) => r.side === 'SELL').map((r) => r.trade_id));
    // a token of another market than the one asked for
    const mismatch = await get(`/v2/trade/trades?token_id=${market.tokens[1]!.token_id}&market_id=0x${'0'.repeat(64)}`);
    expect([mismatch.status, mismatch.body.trades, mismatch.body.next_cursor]).toEqual([200, [], null]);
  });

  it("a market's tape: its tokens' trades merged in chain order, paged without a skip or a repeat", async () => {
    const m0 = market.condition_id;
    // the two tokens interleaved, several trades in one block, and a page boundary inside a block
    for (let i = 0; i < 9; i++) await record(T0 + 150_000 + 2 * Math.floor(i / 3), i % 3, { token: i % 2 });
    const all = (await pageAll(svc, '/v2/trade/trades', 500)).rows;
    for (const [path, want] of [
      [`/v2/trade/trades?market_id=${m0}`, all.filter((r) => r.market_id === m0)],
      [`/v2/trade/trades?market_id=${m0}&side=SELL`, all.filter((r) => r.market_id === m0 && r.side === 'SELL')],
    ] as const) {
      for (const limit of [1, 4, 500]) {
        const { rows } = await pageAll(svc, path, limit);
        expect(rows.map((r) => r.trade_id)).toEqual(want.map((r) => r.trade_id));
      }
    }
    expect(new Set(all.filter((r) => r.market_id === m0).map((r) => r.token_id)).size).toBe(2);
    // a market of the real history loaded at start (known from its rows, not listed by the venue)
    const loaded = all.find((r) => r.source === 'history')!;
    const own = all.filter((r) => r.market_id === loaded.market_id);
    const { rows } = await pageAll(svc, `/v2/trade/trades?market_id=${loaded.market_id}`, 2);
    expect([rows.length > 0, rows]).toEqual([true, own]);
  });

  it("a trader's trades: own side and role, any case in, lower case out; self-trade rows together", async () => {
    const carol = '0x' + 'c3'.repeat(20);
    const ids: string[] = [];
    for (let i = 0; i < 6; i++)
      ids.push(await record(T0 + 200_000 + 2 * i, 0, { maker: carol, taker: i === 2 ? carol : ALICE, side: 'BUY' }));
    const upper = `/v2/trade/traders/0x${'C3'.repeat(20)}/trades`;
    const { rows, pages } = await pageAll(svc, upper, 1);
    expect(pages).toBe(6);
    // one row per page, but the trade with carol on both sides is one page of two rows
    expect(rows.map((r) => r.trade_id)).toEqual([ids[5], ids[4], ids[3], ids[2], ids[2], ids[1], ids[0]]);
    expect([rows[3].role, rows[4].role].sort()).toEqual(['maker', 'taker']);
    expect(rows.every((r) => r.address === carol)).toBe(true);
    expect(rows.find((r) => r.role === 'maker')).toMatchObject({ side: 'SELL', fee_usd: '0' });
    // the tape rows of carol's trades: one per trade, the one she was on both sides of once
    const tapeRows = await pageAll(svc, `/v2/trade/trades?address=${carol}`, 1);
    expect([tapeRows.pages, tapeRows.rows.map((r) => r.trade_id)]).toEqual([6, [...ids].reverse()]);
    const takenByCarol = await pageAll(svc, `/v2/trade/trades?address=${carol}&taker_only=true`, 3);
    expect(takenByCarol.rows.map((r) => [r.trade_id, r.maker, r.taker])).toEqual([[ids[2], carol, carol]]);
    const takers = await pageAll(svc, `${upper}?taker_only=true`, 2);
    expect(takers.rows.map((r) => [r.trade_id, r.role, r.side, r.fee_usd])).toEqual([[ids[2], 'taker', 'BUY', '0.01']]);
    const none = await get(`/v2/trade/traders/0x${'d4'.repeat(20)}/trades`);
    expect([none.status, none.body]).toEqual([
      200,
      { trades: [], count: 0, next_cursor: null, next_cursor_log_idx: null },
    ]);
  });

  it('refuses a lone cursor half, a limit above 500, a bad address, unknown parameters: 400 naming it', async () => {
    const cases: Array<[string, RegExp]> = [
      ['/v2/trade/trades?cursor_ts=5', /cursor_ts and next_cursor_log_idx go together/],
      ['/v2/trade/trades?next_cursor_log_idx=5', /cursor_ts and next_cursor_log_idx go together/],
      [`/v2/trade/traders/${ALICE}/trades?cursor_ts=5`, /cursor_ts and next_cursor_log_idx go together/],
      ['/v2/trade/trades?limit=501', /limit must be at most 500/],
      ['/v2/trade/trades?taker_only=true', /taker_only needs address/],
      ['/v2/trade/trades?address=0x12', /address/],
      ['/v2/trade/trades?limit=0', /limit must be at least 1/],
      ['/v2/trade/trades?side=buy', /side must be one of "BUY", "SELL"/],
      ['/v2/trade/trades?cursor=abc', /unknown query parameter "cursor": this endpoint takes limit, cursor_ts/],
      [`/v2/trade/traders/${ALICE}/trades?cursorr_ts=5`, /unknown query parameter "cursorr_ts"/],
      [`/v2/trade/traders/${ALICE}/trades?takerOnly=true`, /unknown query parameter "takerOnly"/],
      ['/v2/trade/traders/0xabc/trades', /address/],
    ];
    for (const [path, message] of cases) {
      const res = await get(path);
      expect([path, res.status, res.body.error]).toEqual([path, 400, 'invalid_request']);
      expect(res.body.message).toMatch(message);
    }
  });
});

/** A stored row of any shape. */
type AnyRow = Doc & Record<string, unknown>;

describe('a data folder whose tape rows predate the token keys', () => {
  it('is keyed once at open and answers the tape reads a fresh folder with the same trades answers', async () => {
    const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'pts-tape-keys-'));
    const fresh = await startTestService();
    try {
      const market = (await fresh.call('GET', '/v2/trade/markets?limit=1')).body.markets[0];
      const [tok0, tok1] = market.tokens as { token_id: string; outcome: string }[];
      // full rows on the first outcome, capture prints (stored compact) on the second
      const rows: TapeTrade[] = [];
      for (let i = 0; i < 12; i++) {
        const tok = i % 3 === 2 ? tok1! : tok0!;
        const capture = tok === tok1;
        const price = (0.2 + i / 100).toFixed(2);
        rows.push({
          _id: `k${i}`,
          tradeId: `k${i}`,
          blockTimestamp: T0 + 2 * Math.floor(i / 2),
          logIndex: i % 2,
          transactionHash: '0x' + (i + 1).toString(16).padStart(64, '0'),
          atMs: (T0 + 2 * Math.floor(i / 2)) * 1000,
          conditionId: market.condition_id,
          tokenId: tok.token_id,
          outcome: tok.outcome,
          side: i % 2 ? 'SELL' : 'BUY',
          price,
          size: '5',
          notionalUsd: notionalOf(price, '5'),
          feeUsd: capture ? '0' : '0.01',
          maker: capture ? null : BOB,
          taker: capture ? null : ALICE,
          source: capture ? 'capture' : 'venue',
        });
      }
      await fresh.services.store.transaction((tx) =>
        fresh.services.history.record(tx, { trades: rows, fills: [], cash: [] }),
      );

      // the folder as the version before the keys wrote it: its token index, no key on any row,
      // the prints compact with their token's facts in a row of their own
      const old = await SqliteStore.open(dir);
      const trades = await old.collection<AnyRow>('trades', [
        { fields: ['blockTimestamp', 'logIndex', '_id'] },
        { fields: ['tokenId', 'blockTimestamp', 'logIndex'] },
      ]);
      for (const t of rows)
        if (t.source === 'capture') {
          const { blockTimestamp, logIndex, transactionHash, atMs, tokenId, side, price, size, source } = t;
          await trades.insertOne({
            _id: t._id,
            blockTimestamp,
            logIndex,
            transactionHash,
            atMs,
            tokenId,
            side,
            price,
            size,
            source,
          });
        } else await trades.insertOne({ ...t });
      await (
        await old.collection<AnyRow>(TAPE_TOKENS)
      ).insertOne({ _id: tok1!.token_id, conditionId: market.condition_id, outcome: tok1!.outcome });
      await old.close();

      const reads = [
        `/v2/trade/trades?token_id=${tok0!.token_id}&limit=5`,
        `/v2/trade/trades?token_id=${tok1!.token_id}`,
        `/v2/trade/trades?market_id=${market.condition_id}&limit=7`,
        `/v2/trade/trades?market_id=${market.condition_id}&cursor_ts=${T0 + 6}&next_cursor_log_idx=1`,
        `/v2/trade/trades?token_id=${tok0!.token_id}&side=SELL`,
        '/v2/trade/trades?token_id=123456789',
        `/v2/trade/trades?address=${ALICE}`,
      ];
      const answers = async (svc: TestService) => {
        const out: unknown[] = [];
        for (const p of reads) {
          const res = await svc.call('GET', p);
          out.push([p, res.status, JSON.stringify(res.body)]);
        }
        return out;
      };
      const want = await answers(fresh);
      expect(want.filter((a: any) => JSON.parse(a[2]).trades.length > 0)).toHaveLength(5);
      for (let open = 0; open < 2; open++) {
        // opened twice: the second open finds every row keyed and changes nothing
        const svc = await startTestService({ store: await SqliteStore.open(dir) });
        try {
          expect(await answers(svc)).toEqual(want);
          const stored = await (
            await svc.services.store.collection<AnyRow>('trades')
          ).find({ _id: { $in: rows.map((r) => r._id) } });
          const keyOf = new Map(stored.map((r) => [r._id, r.tokenSeq]));
          expect(rows.map((r) => keyOf.get(r._id))).toEqual(rows.map((r) => svc.services.history.tokenSeq(r.tokenId)));
          expect(new Set(stored.map((r) => r.tokenSeq)).size).toBe(2);
          expect(
            await (await svc.services.store.collection<AnyRow>(TAPE_TOKENS)).findOne({ _id: tok1!.token_id }),
          ).toEqual({
            _id: tok1!.token_id,
            tokenSeq: svc.services.history.tokenSeq(tok1!.token_id),
            conditionId: market.condition_id,
            outcome: tok1!.outcome,
          });
        } finally {
          await svc.close();
        }
      }
    } finally {
      await fresh.close();
      await fs.promises.rm(dir, { recursive: true, force: true });
    }
  });
});
