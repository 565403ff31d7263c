import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Dec } from '../../engine/decimal.js';
import { dayOfSec, lastDueDay, statementDueMs } from '../../engine/data/statements.js';
import { SqliteStore } from '../../engine/store/sqlite.js';
import type { SimVenue } from '../../engine/venue/sim-venue.js';
import { startTestService, type TestService } from '../helpers.js';
import { poll, Trading, useTestClock } from './trading-kit.js';

/**
 * Daily statements through the real path: REST orders and wallet operations during a UTC day, the
 * statements job run by the real scheduler (Agenda over the store) once the day closed, read over
 * HTTP. Time is the test clock (only `Date` faked): jumping past the day's due time lets the
 * scheduler's next poll run the job.
 */
const ENV = { SIM_MAKER_REFILL_MS: '3600000', SIM_INITIAL_PUSD: '1000', SIM_BLOCK_DELAY_MS: '200' };
const DESTINATION = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed';
const sum = (xs: string[]) => xs.reduce((a, x) => a.plus(x), new Dec(0));
/**
 * Waits until the statements job has caught up with the clock (its run at start): the clock must
 * not jump while a job runs (Agenda would take its lock for an expired one).
 */
const caughtUp = (svc: TestService) =>
  poll(
    'statements job caught up',
    async () => svc.services.statements.generatedThrough(),
    (through) => through === lastDueDay(Date.now()),
  );
/** How far to jump the test clock to reach 01:00 UTC of the next day. */
const toNextDay = () => (Math.floor(Date.now() / 86_400_000) + 1) * 86_400_000 + 3_600_000 - Date.now();

describe('statements over REST (real scheduler, controlled clock)', () => {
  let svc: TestService;
  let clock: ReturnType<typeof useTestClock>;
  const tr = new Trading(() => svc);
  let alice: string;
  let day: string;

  beforeAll(async () => {
    clock = useTestClock();
    svc = await startTestService({ env: ENV });
    await caughtUp(svc);
    // trade from 01:00 of the next UTC day on: the whole scenario falls within one day
    clock.jump(toNextDay());
    await tr.init(['alice', 'bob']);
    alice = (await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'alice' } })).body.safe_address;
  });
  afterAll(async () => {
    await svc?.close();
    clock.restore();
  });

  const as = { 'x-partner-user-id': 'alice' };
  const statements = (query: string, address = alice) =>
    svc.call('GET', `/v2/trade/traders/${address}/statements${query}`);
  const r1 = (query: string, address = alice) => svc.call('GET', `/v2/trade/traders/${address}/statements/r1${query}`);

  it("answers 503 with Retry-After before its day's job ran, then the statement, whose R1 rows add up", async () => {
    // a day of trading: buy, sell at a loss, split, merge, redeem, withdraw
    const f = await tr.freshToken(0.3, 0.6);
    await tr.buyShares('alice', f.token, 20);
    const sell = await tr.post('alice', {
      symbol: f.token,
      side: 'sell',
      type: 'LIMIT',
      price: '0.01',
      size: '10',
      time_in_force: 'IOC',
    });
    expect(sell.body.status).toBe('FILLED');
    const conditionId = (await svc.call('GET', `/v2/trade/markets?token_id=${f.token}`)).body.markets[0].condition_id;
    for (const [path, amount] of [
      ['split', '5'],
      ['merge', '2'],
    ] as const) {
      const r = await svc.call('POST', `/v2/trade/positions/${path}`, {
        body: { condition_id: conditionId, amount },
        headers: as,
      });
      expect(r).toMatchObject({ status: 200, body: { status: 'CONFIRMED' } });
    }
    // the market resolves for the bought outcome: a redeem pays its 13 shares $1 each, the other's 3 nothing
    await (svc.services.venue as SimVenue).resolveMarket(conditionId, f.token);
    const redeem = await svc.call('POST', '/v2/trade/positions/redeem', {
      body: { condition_id: conditionId },
      headers: as,
    });
    expect(redeem).toMatchObject({ status: 200, body: { status: 'CONFIRMED', payout_usd: '13' } });
    const w = await svc.call('POST', '/v2/trade/withdraw', { body: { to: DESTINATION, amount: '10' }, headers: as });
    expect(w.status).toBe(200);
    await poll(
      'withdrawal confirmed',
      async () => (await svc.call('GET', `/v2/trade/withdrawals/${w.body.withdrawal_id}`, { headers: as })).body,
      (b) => b.status === 'CONFIRMED',
    );
    day = dayOfSec(Math.floor(Date.now() / 1000));

    // the day has not closed: 503, available false, Retry-After = seconds until the job is due
    const early = await statements(`?date=${day}`, alice.toUpperCase().replace('0X', '0x'));
    const wait = Math.ceil((statementDueMs(day) - Date.now()) / 1000);
    expect(early).toMatchObject({
      status: 503,
      body: { available: false, error: 'statement not available', date: day },
    });
    expect(Math.abs(early.body.retry_after - wait)).toBeLessThanOrEqual(2);
    expect(early.headers.get('retry-after')).toBe(String(early.body.retry_after));
    expect((await r1(`?date=${day}`)).status).toBe(503);
    expect((await statements('')).body).toMatchObject({ statements: [], total: 0 });

    // the day closes; the scheduler runs the job at its due time
    clock.jump(statementDueMs(day) - Date.now() + 1_000);
    const ready = await poll(
      'statement generated',
      () => statements(`?date=${day}`),
      (r) => r.status === 200,
    );
    const s = ready.body.statements[0];
    expect(ready.body).toMatchObject({ trader: alice.toLowerCase(), total: 1, count: 1, has_more_r1: false });
    expect(s).toMatchObject({
      trader: alice.toLowerCase(),
      date: day,
      has_records: true,
      opening_balance: '0',
      opening_cash: '0',
      deposits: '1000',
      withdrawals: '10',
      redemptions: '13',
      closing_positions_cost: '0',
      positions: [],
      trade_count: expect.any(Number),
      disclosure: { cost_basis_method: 'FIFO', balance_basis: 'CASH_PLUS_POSITIONS_AT_COST' },
      reconciliation: { residual: '0', all_zero: true },
    });
    expect(s.trade_count).toBeGreaterThanOrEqual(2);
    // the R1 rows: the dispositions of the sell, the merge and the redeem, adding up to the statement's totals
    const rows = await r1(`?date=${day}&r1_limit=5000`);
    expect(rows).toMatchObject({ status: 200, body: { date: day, total: s.r1_total, has_more_r1: false } });
    const kinds = new Set(rows.body.rows.map((r: any) => r.disposal_kind));
    expect([...kinds].sort()).toEqual(['MERGE', 'REDEEM', 'SELL']);
    expect(sum(rows.body.rows.map((r: any) => r.gain_loss)).eq(s.realized_pnl)).toBe(true);
    expect(sum(rows.body.rows.map((r: any) => r.proceeds)).eq(s.proceeds)).toBe(true);
    expect(sum(rows.body.rows.map((r: any) => r.cost_basis)).eq(s.cost_basis)).toBe(true);
    const sells = rows.body.rows.filter((r: any) => r.disposal_kind === 'SELL');
    expect(sum(sells.map((r: any) => r.gain_loss)).lt(0)).toBe(true); // sold into the bid what cost the ask
    expect(new Dec(s.realized_pnl).eq(new Dec(s.proceeds).minus(s.cost_basis))).toBe(true);
    // opening balance + flows + realized PnL − fees = closing balance
    expect(new Dec(s.opening_balance).plus(s.net_flows).plus(s.realized_pnl).minus(s.fees).eq(s.closing_balance)).toBe(
      true,
    );
    // the positions read realizes the same per token (one FIFO definition in every data read: fees
    // expensed, a split's and a merge's dollars shared alike): Σ R1 gains of a token = its realized PnL
    const positions = await svc.call('GET', `/v2/trade/traders/${alice}/positions?limit=1000`);
    expect(positions.status).toBe(200);
    const gains = new Map<string, Dec>();
    for (const r of rows.body.rows)
      gains.set(r.asset.token_id, (gains.get(r.asset.token_id) ?? new Dec(0)).plus(r.gain_loss));
    expect(gains.size).toBe(2);
    const realized = new Map<string, string>(positions.body.positions.map((p: any) => [p.token_id, p.realized_pnl]));
    expect([...realized.keys()].sort()).toEqual([...gains.keys()].sort());
    for (const [token, gain] of gains) expect(gain.eq(realized.get(token)!), `token ${token}`).toBe(true);
    // built from the records alone, its cash is the venue's
    const balance = (await svc.call('GET', '/v2/trade/balances', { headers: as })).body.balance;
    expect(new Dec(s.closing_cash).eq(balance)).toBe(true);
    // the list nests the rows and pages them
    const listed = await statements('?r1_limit=1');
    expect(listed.body).toMatchObject({ total: 1, has_more_r1: s.r1_total > 1, generated_through: day });
    expect(listed.body.statements[0].r1).toEqual(rows.body.rows.slice(0, 1));
    expect((await r1(`?date=${day}&r1_offset=1&r1_limit=1`)).body.rows).toEqual(rows.body.rows.slice(1, 2));
  });

  it('refuses bad paging and dates with 400, and a trader without statements with 404', async () => {
    expect((await r1('?r1_limit=5001')).status).toBe(400);
    expect((await statements('?limit=501')).status).toBe(400);
    expect((await statements('?r1_limit=5001')).status).toBe(400);
    expect((await r1('?r1_limit=5&limit=6')).status).toBe(400);
    expect((await statements('?date=2026-02-30')).status).toBe(400);
    expect((await r1('?date=yesterday')).body).toMatchObject({
      error: 'invalid_request',
      message: expect.stringMatching(/date must be a UTC day written YYYY-MM-DD/),
    });
    expect((await statements('', '0x123')).status).toBe(400);
    const bob = (await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'bob' } })).body.safe_address;
    const none = await statements(`?date=${dayOfSec(Math.floor(Date.now() / 1000) - 5 * 86_400)}`, bob);
    expect(none).toMatchObject({ status: 404, body: { error: expect.any(String) } });
  });
});

describe('statements after downtime (restart on the SQLite store on disk, real scheduler)', () => {
  it(
    'the days that closed while the service was down are generated at the next start',
    { timeout: 60_000 },
    async () => {
      const clock = useTestClock();
      const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-statements-'));
      let svc: TestService | undefined;
      try {
        svc = await startTestService({ env: ENV, store: await SqliteStore.open(dir) });
        await caughtUp(svc);
        clock.jump(toNextDay());
        const tr = new Trading(() => svc!);
        await tr.init(['carol']);
        const carol = (await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'carol' } })).body
          .safe_address as string;
        await tr.buyShares('carol', (await tr.freshToken()).token, 10);
        const day = dayOfSec(Math.floor(Date.now() / 1000));
        await caughtUp(svc);
        await svc.close();
        svc = undefined;
        // down for three days: the job's run due after that day never happened
        clock.jump(3 * 86_400_000);
        svc = await startTestService({ env: ENV, store: await SqliteStore.open(dir) });
        const back = svc;
        const r = await poll(
          'statement caught up',
          () => back.call('GET', `/v2/trade/traders/${carol}/statements?date=${day}`),
          (x) => x.status === 200,
        );
        expect(r.body.statements[0]).toMatchObject({ date: day, has_records: true, trade_count: 1, r1_total: 0 });
        const list = await back.call('GET', `/v2/trade/traders/${carol}/statements`);
        expect(list.body).toMatchObject({ total: 1, generated_through: lastDueDay(Date.now()) });
      } finally {
        await svc?.close();
        clock.restore();
        await fs.rm(dir, { recursive: true, force: true });
      }
    },
  );
});
