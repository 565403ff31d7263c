import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../engine/store/sqlite.js';
import { Dec } from '../../engine/decimal.js';
import type { TraderFill } from '../../engine/data/records.js';
import { PORTFOLIO_SNAPSHOTS } from '../../engine/data/portfolio-snapshots.js';
import { poll, Trading } from './trading-kit.js';
import { startTestService, type TestService } from '../helpers.js';

let svc: TestService;
let token: { tokenId: string; conditionId: string; outcome: string; question: string; slug: string };

const WINNER = '0x' + '1a'.repeat(20);
const LOSER = '0x' + '2b'.repeat(20);
const TWIN = '0x' + '3c'.repeat(20);

let seq = 0;
/** Records one fill of `address` through the trade history (its feed keeps the aggregates). */
async function fill(address: string, side: 'BUY' | 'SELL', size: string, price: string, fee = '0'): Promise<void> {
  seq++;
  const s = Math.floor(Date.now() / 1000);
  const f: TraderFill = {
    _id: `pf-${seq}:taker`,
    tradeId: `pf-${seq}`,
    blockTimestamp: s - (s % 2),
    logIndex: seq,
    transactionHash: '0x' + seq.toString(16).padStart(64, '0'),
    address,
    userId: null,
    orderId: null,
    role: 'taker',
    atMs: Date.now(),
    conditionId: token.conditionId,
    tokenId: token.tokenId,
    outcome: token.outcome,
    side,
    price,
    size,
    notionalUsd: String(Number(price) * Number(size)),
    feeUsd: fee,
    source: 'venue',
  };
  await svc.services.history.recordAlone({ trades: [], fills: [f], cash: [] });
}

/** The rows of `addresses`, in the board's order. */
const only = (rows: any[], addresses: string[]) => rows.filter((r) => addresses.includes(r.address));

/** Ranks are competition ranks of `key`, descending: a tie shares the rank, the next row's rank is its place. */
function expectCompetitionRanks(rows: any[], key: 'pnl' | 'volume'): void {
  rows.forEach((r, i) => {
    const prev = rows[i - 1];
    if (prev) expect(new Dec(prev[key]).gte(r[key])).toBe(true);
    expect(r.rank).toBe(prev && new Dec(prev[key]).eq(r[key]) ? prev.rank : i + 1);
  });
}

beforeAll(async () => {
  svc = await startTestService();
  const m = svc.services.venue.markets()[0]!;
  const t = m.tokens[0]!;
  token = { tokenId: t.tokenId, conditionId: m.conditionId, outcome: t.outcome, question: m.question, slug: m.slug };
  // the winner gains 2 on 10 shares, the loser loses 5 on 100, the twin gains 2 as well; the winner
  // and the twin each pay a fee of 0.01 (expensed: the `all` PnL is realized − fees, 1.99 for both)
  await fill(WINNER, 'BUY', '10', '0.4', '0.01');
  await fill(WINNER, 'SELL', '10', '0.6');
  await fill(LOSER, 'BUY', '100', '0.5');
  await fill(LOSER, 'SELL', '100', '0.45');
  await fill(TWIN, 'BUY', '4', '0.2');
  await fill(TWIN, 'SELL', '4', '0.7');
  await fill(TWIN, 'BUY', '5', '0.3', '0.01');
});

afterAll(async () => {
  await svc?.close();
});

describe('GET /v2/trade/leaderboard', () => {
  it('ranks by realized PnL over all with competition ranks, and by volume when asked', async () => {
    // the loaded real history's wallets are on the board too: check the ranks of all, the order of ours
    const byPnl = await svc.call('GET', '/v2/trade/leaderboard?window=all&limit=500');
    expect(byPnl.status).toBe(200);
    expect(byPnl.body).toMatchObject({ window: 'all', mode: 'pnl', has_more: false });
    expectCompetitionRanks(byPnl.body.leaderboard, 'pnl');
    const ours = only(byPnl.body.leaderboard, [WINNER, LOSER, TWIN]);
    expect(ours.map((r: any) => [r.address, r.pnl])).toEqual([
      [WINNER, '1.99'],
      [TWIN, '1.99'],
      [LOSER, '-5'],
    ]);
    expect(ours[0].rank).toBe(ours[1].rank);
    const byVolume = await svc.call('GET', '/v2/trade/leaderboard?window=all&mode=volume&limit=500');
    expect(byVolume.status).toBe(200);
    expectCompetitionRanks(byVolume.body.leaderboard, 'volume');
    expect(
      only(byVolume.body.leaderboard, [WINNER, LOSER, TWIN]).map((r: any) => [r.address, r.volume, r.trades]),
    ).toEqual([
      [LOSER, '95', 2],
      [WINNER, '10', 2],
      [TWIN, '5.1', 3],
    ]);
  });

  it('over a finite window, PnL is the change of marked equity net of flows', async () => {
    const r = await svc.call('GET', '/v2/trade/leaderboard?window=1d&limit=2&offset=1');
    expect(r.status).toBe(200);
    const mark = svc.services.portfolio.mark(token.tokenId)!;
    // the twin still holds 5 shares bought for 1.51: its equity moved by 2 − 1.51 + 5 × mark
    const twin = mark.times(5).plus('0.49').toDecimalPlaces(6).toFixed();
    const all = (await svc.call('GET', '/v2/trade/leaderboard?window=1d')).body.leaderboard;
    expect(all.find((x: any) => x.address === TWIN).pnl).toBe(String(Number(twin)));
    expect(r.body).toMatchObject({ count: 2, total: 3, limit: 2, offset: 1, has_more: false });
  });

  it('answers 400 invalid window for another window, and 400 for a limit above 500', async () => {
    const bad = await svc.call('GET', '/v2/trade/leaderboard?window=2d');
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe('invalid window');
    const big = await svc.call('GET', '/v2/trade/leaderboard?limit=501');
    expect(big.status).toBe(400);
  });
});

describe('trader reads', () => {
  it("positions: FIFO size, cost, marks and PnL, open and closed, the market's question and slug", async () => {
    const r = await svc.call('GET', `/v2/trade/traders/${TWIN.toUpperCase().replace('0X', '0x')}/positions`);
    expect(r.status).toBe(200);
    expect(r.body.trader).toBe(TWIN);
    const [p] = r.body.positions;
    expect(p).toMatchObject({
      token_id: token.tokenId,
      condition_id: token.conditionId,
      question: token.question,
      slug: token.slug,
      status: 'open',
      size: '5',
      avg_price: '0.3',
      cost: '1.5',
      realized_pnl: '2',
      total_bought: '9',
      redeemable: false,
    });
    expect(Number(p.unrealized_pnl)).toBeCloseTo(Number(p.current_value) - 1.5, 6);
    const closed = await svc.call('GET', `/v2/trade/traders/${WINNER}/positions?status=closed`);
    expect(closed.body.positions.map((x: any) => [x.status, x.size, x.realized_pnl])).toEqual([['closed', '0', '2']]);
    const open = await svc.call('GET', `/v2/trade/traders/${WINNER}/positions?status=open`);
    expect(open.body).toMatchObject({ positions: [], total: 0, status: 'open' });
    expect((await svc.call('GET', `/v2/trade/traders/${WINNER}/positions?limit=1001`)).status).toBe(400);
    expect((await svc.call('GET', `/v2/trade/traders/0x12/positions`)).status).toBe(400);
  });

  it('summary, pnl, metrics and categories', async () => {
    const s = await svc.call('GET', `/v2/trade/traders/${LOSER}`);
    expect(s.status).toBe(200);
    expect(s.body).toMatchObject({
      trader: LOSER,
      window: 'all',
      pnl: '-5',
      realized_pnl: '-5',
      unrealized_pnl: '0',
      total_pnl: '-5',
      volume: '95',
      trades: 2,
      win_rate: '0',
      active_positions: 0,
      closed_positions: 1,
    });
    const pnl = await svc.call('GET', `/v2/trade/traders/${WINNER}/pnl?pnl_type=realized`);
    expect(pnl.status).toBe(200);
    const today = Math.floor(Date.now() / 86_400_000) * 86_400;
    expect(pnl.body).toMatchObject({ window: '30d', pnl_type: 'realized', series: [{ ts: today, pnl: '2' }] });
    // the reference's own request: the realized curve, then realized + unrealized now
    const overall = await svc.call('GET', `/v2/trade/traders/${WINNER}/pnl?window=30d&pnl_type=overall`);
    expect(overall.body.series).toEqual([
      { ts: today, pnl: '2' },
      { ts: expect.any(Number), pnl: '2' },
    ]);
    expect(overall.body.series[1].ts).toBeGreaterThanOrEqual(today);
    const unrealized = await svc.call('GET', `/v2/trade/traders/${WINNER}/pnl?pnl_type=unrealized&window=all`);
    expect(unrealized.body).toMatchObject({ window: 'all', series: [{ pnl: '0' }] });
    expect(await svc.call('GET', `/v2/trade/traders/${WINNER}/pnl?window=2d`)).toMatchObject({
      status: 400,
      body: { error: 'invalid window' },
    });
    expect((await svc.call('GET', `/v2/trade/traders/${WINNER}/pnl?pnl_type=net`)).status).toBe(400);
    expect(pnl.body.windows.map((w: any) => [w.window, w.pnl, w.realized_pnl])).toEqual([
      ['1d', '1.99', '2'],
      ['7d', '1.99', '2'],
      ['30d', '1.99', '2'],
      ['all', '1.99', '2'],
    ]);
    const m = await svc.call('GET', `/v2/trade/traders/${TWIN}/metrics?window=7d`);
    expect(m.status).toBe(200);
    expect(m.body).toMatchObject({ trades: 3, wins: 1, losses: 0, win_rate: '1', volume: '5.1', fees: '0.01' });
    expect(m.body.average_trade).toBe('1.7');
    const c = await svc.call('GET', `/v2/trade/traders/${LOSER}/categories`);
    expect(c.status).toBe(200);
    const category = /^[a-z0-9]+/i.exec(token.slug)?.[0]?.toLowerCase() ?? 'other';
    expect(c.body.categories).toEqual([{ category, realized_pnl: '-5', volume: '95', trades: 2, win_rate: '0' }]);
    const none = await svc.call('GET', `/v2/trade/traders/0x${'9'.repeat(40)}`);
    expect(none.body).toMatchObject({ trades: 0, pnl: '0', first_trade_at: null });
    expect((await svc.call('GET', `/v2/trade/traders/${LOSER}?window=1w`)).body.error).toBe('invalid window');
  });
});

describe('the loaded real history', () => {
  it("the leader wallet's 470 buys make its positions, metrics and categories, its markets named", async () => {
    const leader = '0xb77b6ef359f02192fb077227499f9f853d4870a5';
    const m = await svc.call('GET', `/v2/trade/traders/${leader}/metrics`);
    expect(m.status).toBe(200);
    expect(m.body).toMatchObject({ trades: 470, wins: 0, losses: 0 });
    const p = await svc.call('GET', `/v2/trade/traders/${leader}/positions?limit=1000`);
    expect(p.status).toBe(200);
    expect(p.body.total).toBe(p.body.count);
    // every row a buy without fee: the open lots cost what was traded
    const cost = (p.body.positions as any[]).reduce((a, x) => a.plus(x.cost), new Dec(0));
    expect(cost.toFixed()).toBe(m.body.volume);
    expect(p.body.positions.every((x: any) => x.status === 'open' && x.question !== '' && x.category !== 'other')).toBe(
      true,
    );
    const c = await svc.call('GET', `/v2/trade/traders/${leader}/categories`);
    expect(c.body.categories.reduce((a: number, x: any) => a + x.trades, 0)).toBe(470);
    const s = await svc.call('GET', `/v2/trade/traders/${leader}`);
    expect(s.body).toMatchObject({ trades: 470, active_positions: p.body.total, closed_positions: 0 });
  });
});

describe('through REST orders on the simulated venue', () => {
  let rest: TestService;
  const t = new Trading(() => rest);
  const address: Record<string, string> = {};
  let yes: string;
  let no: string;
  let conditionId: string;

  /** `u`'s IOC LIMIT order. */
  const ioc = (u: string, symbol: string, side: 'buy' | 'sell', price: string, size: string) =>
    t.post(u, { symbol, side, type: 'LIMIT', price, size, time_in_force: 'IOC' });
  /** Σ (price × size + fee) of the fills of order `id` of `u`, dollars. */
  const paid = async (u: string, id: string) =>
    ((await t.orderById(u, id)).body.fills as any[]).reduce(
      (a, f) => a.plus(new Dec(f.price).times(f.size)).plus(f.fee_usd),
      new Dec(0),
    );

  const env = { SIM_CONTROL: 'on', SIM_MAKER_REFILL_MS: '3600000' };
  let dir: string;

  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-portfolio-'));
    rest = await startTestService({ store: await SqliteStore.open(dir), env });
    for (const u of ['winner', 'loser'])
      address[u] = (
        await rest.call('POST', '/v2/trade/users', { body: { partner_user_id: u } })
      ).body.safe_address.toLowerCase();
    await t.init([]);
    yes = (await t.freshToken()).token;
    const market = (await rest.call('GET', `/v2/trade/markets?token_id=${yes}`)).body.markets[0];
    conditionId = market.condition_id;
    no = market.tokens.find((x: any) => x.token_id !== yes).token_id;
  }, 30_000);

  afterAll(async () => {
    await rest?.close();
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('a winner ranks above a loser by PnL, the other way by volume; positions carry FIFO cost and PnL', async () => {
    const buyYes = await ioc('winner', yes, 'buy', '0.99', '5');
    expect(buyYes.body.status).toBe('FILLED');
    const buyNo = await ioc('loser', no, 'buy', '0.99', '20');
    expect(buyNo.body.status).toBe('FILLED');
    const sellNo = await ioc('loser', no, 'sell', '0.01', '8');
    expect(sellNo.body.status).toBe('FILLED');
    const winnerCost = await paid('winner', buyYes.body.order_id);
    const loserCost = await paid('loser', buyNo.body.order_id);
    const proceeds = ((await t.orderById('loser', sellNo.body.order_id)).body.fills as any[]).reduce(
      (a, f) => a.plus(new Dec(f.price).times(f.size)).minus(f.fee_usd),
      new Dec(0),
    );
    // FIFO: the 8 shares sold cost 8/20 of the one lot
    const loserRealized = proceeds.minus(loserCost.times(8).div(20).toDecimalPlaces(6));
    const lp = await rest.call('GET', `/v2/trade/traders/${address.loser}/positions`);
    expect(lp.status).toBe(200);
    expect(lp.body.positions).toEqual([
      expect.objectContaining({
        token_id: no,
        condition_id: conditionId,
        status: 'open',
        size: '12',
        cost: loserCost.minus(loserCost.times(8).div(20).toDecimalPlaces(6)).toFixed(),
        realized_pnl: loserRealized.toFixed(),
        total_bought: '20',
        redeemable: false,
      }),
    ]);

    // the market resolves for Yes: the winner's shares are worth $1, the loser's $0
    const resolved = await rest.call('POST', `/v2/sim/markets/${conditionId}/resolve`, {
      body: { winning_token_id: yes },
    });
    expect(resolved.status).toBe(200);
    const winnerPnl = new Dec(5).minus(winnerCost);
    const loserPnl = proceeds.minus(loserCost);
    const byPnl = await rest.call('GET', '/v2/trade/leaderboard?window=1d');
    expect(byPnl.status).toBe(200);
    expect(byPnl.body.leaderboard.map((r: any) => [r.rank, r.address, r.pnl])).toEqual([
      [1, address.winner, winnerPnl.toFixed()],
      [2, address.loser, loserPnl.toFixed()],
    ]);
    const byVolume = await rest.call('GET', '/v2/trade/leaderboard?window=1d&mode=volume');
    expect(byVolume.body.leaderboard.map((r: any) => [r.rank, r.address, r.trades > 0])).toEqual([
      [1, address.loser, true],
      [2, address.winner, true],
    ]);
    // over all, PnL is realized: the winner sold nothing (0), the loser realized its loss on 8 shares
    const all = await rest.call('GET', '/v2/trade/leaderboard?window=all&limit=500');
    expect(only(all.body.leaderboard, [address.winner!, address.loser!]).map((r: any) => [r.address, r.pnl])).toEqual([
      [address.winner, '0'],
      [address.loser, loserRealized.toFixed()],
    ]);
    const wp = await rest.call(
      'GET',
      `/v2/trade/traders/${address.winner!.toUpperCase().replace('0X', '0x')}/positions?status=open`,
    );
    expect(wp.body.trader).toBe(address.winner);
    expect(wp.body.positions).toEqual([
      expect.objectContaining({
        token_id: yes,
        size: '5',
        cost: winnerCost.toFixed(),
        cur_price: '1',
        current_value: '5',
        unrealized_pnl: winnerPnl.toFixed(),
        redeemable: true,
        market_resolved: true,
      }),
    ]);
  });

  it("a redeem realizes the winner's gain: over all it ranks first, its position is closed", async () => {
    const cost = new Dec(
      (await rest.call('GET', `/v2/trade/traders/${address.winner}/positions`)).body.positions[0].cost,
    );
    const redeem = await rest.call('POST', '/v2/trade/positions/redeem', {
      body: { condition_id: conditionId },
      headers: t.as('winner'),
    });
    expect(redeem.status).toBe(200);
    const gain = new Dec(5).minus(cost).toFixed();
    const summary = await poll(
      'the redeem realized',
      () => rest.call('GET', `/v2/trade/traders/${address.winner}`),
      (r) => r.body.realized_pnl === gain,
    );
    expect(summary.body).toMatchObject({ pnl: gain, active_positions: 0, closed_positions: 1, unrealized_pnl: '0' });
    const series = (await rest.call('GET', `/v2/trade/traders/${address.winner}/pnl`)).body.series;
    expect(series.at(-1).pnl).toBe(gain);
    const all = await rest.call('GET', '/v2/trade/leaderboard?window=all&limit=500');
    expect(only(all.body.leaderboard, [address.winner!, address.loser!]).map((r: any) => r.address)).toEqual([
      address.winner,
      address.loser,
    ]);
    const p = (await rest.call('GET', `/v2/trade/traders/${address.winner}/positions?status=closed`)).body;
    expect(p.positions).toEqual([
      expect.objectContaining({ token_id: yes, status: 'closed', size: '0', cost: '0', realized_pnl: gain }),
    ]);
  });

  /** The mark the venue gives `token`: the mid of its best bid and ask (both quoted on these tokens). */
  const mid = async (token: string) => {
    const b = await t.book(token);
    return new Dec(b.bids[0]!.price).plus(b.asks[0]!.price).div(2);
  };

  it("a split's dollars are shared by the outcomes' marks, a merge's likewise", async () => {
    const fresh = (await t.freshToken()).token;
    const m = (await rest.call('GET', `/v2/trade/markets?token_id=${fresh}`)).body.markets[0];
    const marks = await Promise.all(m.tokens.map((tk: any) => mid(tk.token_id)));
    const as = { headers: t.as('loser') };
    const split = await rest.call('POST', '/v2/trade/positions/split', {
      ...as,
      body: { condition_id: m.condition_id, amount: '10' },
    });
    expect(split.status).toBe(200);
    const merge = await rest.call('POST', '/v2/trade/positions/merge', {
      ...as,
      body: { condition_id: m.condition_id, amount: '4' },
    });
    expect(merge.status).toBe(200);
    const rows = await poll(
      'the split and the merge recorded',
      async () =>
        (await rest.call('GET', `/v2/trade/traders/${address.loser}/positions`)).body.positions.filter(
          (x: any) => x.condition_id === m.condition_id,
        ),
      (r: any[]) => r.length === 2 && r.every((x) => x.size === '6'),
    );
    // each outcome's lot cost its mark's share of the $10; the merge (the same marks) realized nothing
    const sum = marks[0]!.plus(marks[1]!);
    expect(rows.map((x: any) => [x.outcome, x.size, x.realized_pnl, x.total_bought])).toEqual(
      m.tokens.map((tk: any) => [tk.outcome, '6', '0', '10']),
    );
    rows.forEach((x: any, i: number) =>
      expect(new Dec(x.cost).minus(new Dec(6).times(marks[i]!).div(sum)).abs().lte('0.000001')).toBe(true),
    );
    expect(new Dec(rows[0].cost).plus(rows[1].cost).toFixed()).toBe('6');
  });

  it('a split then a merge of shares bought below one half realize no gain from the split', async () => {
    const arb = (
      await rest.call('POST', '/v2/trade/users', { body: { partner_user_id: 'arb' } })
    ).body.safe_address.toLowerCase();
    const cheap = (await t.freshToken(0.1, 0.3)).token;
    const m = (await rest.call('GET', `/v2/trade/markets?token_id=${cheap}`)).body.markets[0];
    const other = m.tokens.find((x: any) => x.token_id !== cheap).token_id;
    const buy = await ioc('arb', cheap, 'buy', '0.99', '5');
    expect(buy.body.status).toBe('FILLED');
    const cost = await paid('arb', buy.body.order_id);
    const [yesMark, noMark] = [await mid(cheap), await mid(other)];
    const as = { headers: t.as('arb') };
    const body = { condition_id: m.condition_id, amount: '5' };
    expect((await rest.call('POST', '/v2/trade/positions/split', { ...as, body })).status).toBe(200);
    expect((await rest.call('POST', '/v2/trade/positions/merge', { ...as, body })).status).toBe(200);
    // the merge disposes of the oldest lot (the 5 bought) for the mark's share of its $5; an equal share
    // ($2.50) would have realized a gain of about $1.50 on shares bought at about $0.20
    const expected = new Dec(5).times(yesMark).div(yesMark.plus(noMark)).minus(cost);
    const summary = await poll(
      'the merge recorded',
      () => rest.call('GET', `/v2/trade/traders/${arb}`),
      (r) => r.status === 200 && r.body.closed_positions + r.body.active_positions === 2 && r.body.realized_pnl !== '0',
    );
    const realized = new Dec(summary.body.realized_pnl);
    expect(realized.lt(0)).toBe(true);
    expect(realized.minus(expected).abs().lte('0.00001')).toBe(true);
    const all = await rest.call('GET', '/v2/trade/leaderboard?window=all&limit=500');
    expect(new Dec(only(all.body.leaderboard, [arb])[0].pnl).lt(0)).toBe(true);
    // the wallet's own cost basis (average cost) shares the split's dollars by the same marks: no gain
    // either (the merge takes half the average cost of the 10 shares held)
    const held = (await rest.call('GET', '/v2/trade/positions', as)).body.positions;
    const pos = held.find((x: any) => x.token_id === cheap);
    const splitCost = new Dec(5).times(yesMark).div(yesMark.plus(noMark));
    expect(new Dec(pos.realized_pnl).lt(0)).toBe(true);
    expect(new Dec(pos.realized_pnl).minus(splitCost.minus(cost).div(2)).abs().lte('0.00001')).toBe(true);
  });

  it('a restart rebuilds the same aggregates from the stored history', async () => {
    const reads = [
      '/v2/trade/leaderboard?window=all&limit=500',
      '/v2/trade/leaderboard?window=7d&mode=volume',
      `/v2/trade/traders/${address.loser}/positions`,
      `/v2/trade/traders/${address.winner}`,
      `/v2/trade/traders/${address.loser}/metrics`,
    ];
    const before = await Promise.all(reads.map((r) => rest.call('GET', r)));
    const answers = (rows: { status: number; body: unknown }[]) => rows.map((r) => [r.status, r.body]);
    // a clean stop writes a snapshot: the restart starts from it and replays only the records after it
    await rest.close();
    rest = await startTestService({ store: await SqliteStore.open(dir), env });
    expect(rest.services.portfolio.startedFrom).not.toBeNull();
    const after = await Promise.all(reads.map((r) => rest.call('GET', r)));
    expect(answers(after)).toEqual(answers(before));
    expect(only(before[0]!.body.leaderboard, [address.winner!, address.loser!]).length).toBe(2);
    // a snapshot of another version is ignored: the whole history is replayed, to the same figures
    await rest.close();
    const store = await SqliteStore.open(dir);
    const snaps = await store.collection<{ _id: string; json: string; gen?: string }>(PORTFOLIO_SNAPSHOTS);
    const { gen } = (await snaps.findOne({ _id: 'head' }))!;
    const part = (await snaps.findOne({ _id: `part:${gen}:000000` }))!;
    await snaps.replaceOne({ ...part, json: part.json.replace(/^\{"version":\d+/, '{"version":0') });
    rest = await startTestService({ store, env });
    expect(rest.services.portfolio.startedFrom).toBeNull();
    const full = await Promise.all(reads.map((r) => rest.call('GET', r)));
    expect(answers(full)).toEqual(answers(before));
  }, 30_000);
});
