/// <reference lib="dom" />
import { copyEveryFill } from '../api/trading-kit.js';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StrategyContext } from '../../machines/strategy-kit.js';
import type { SimVenue } from '../../engine/venue/sim-venue.js';
import { Dec } from '../../engine/decimal.js';
import { MASTER_KEY, startTestService, type TestService } from '../helpers.js';

/**
 * End-to-end: Debian's Chromium, headless, driven by playwright-core, against the
 * dashboard served by an in-process service. Screenshots go to test-artifacts/.
 */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const present = existsSync(CHROMIUM);
if (!present && !process.env.CI)
  console.warn(
    `test/web/dashboard.test.ts skipped: no Chromium at ${CHROMIUM} (apt-get install -y chromium, or set ` +
      `CHROMIUM_PATH)`,
  );
const ARTIFACTS = path.resolve('test-artifacts');

describe.skipIf(!present && !process.env.CI)('dashboard in headless Chromium', () => {
  let svc: TestService;
  let browser: Browser;
  let page: Page;
  let key: string;
  let token: string;
  /** Another outcome token (tick 0.01), charted with its levels. */
  let chartToken: string;
  /** The market of `token`. */
  let market: any;
  const as = { 'x-partner-user-id': 'alice' };

  /** A new partner user `u` and a `trade.read` key of its own. */
  const readKeyOf = async (u: string): Promise<string> => {
    await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: u } });
    return (await svc.call('POST', `/v2/trade/users/${u}/api-keys`, { body: { scopes: ['trade.read'] } })).body.api_key;
  };
  /** A new page on the dashboard that submitted `apiKey` (after `prepare`, e.g. routes to set up). */
  const loggingIn = async (apiKey: string, prepare?: (p: Page) => Promise<unknown>) => {
    const p = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    await prepare?.(p);
    await p.goto(`${svc.baseUrl}/dashboard`);
    await p.fill('#api-key', apiKey);
    await p.click('#connect');
    return p;
  };
  /** A new page logged in with `apiKey`, live. */
  const loggedIn = async (apiKey: string, prepare?: (p: Page) => Promise<unknown>) => {
    const p = await loggingIn(apiKey, prepare);
    await p.waitForSelector('#connection.on', { timeout: 10_000 });
    return p;
  };
  /** The texts of a table row's cells. */
  const cells = (p: Page, row: string) =>
    p.$eval(row, (tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent));
  /** Signed dollars to the cent as the dashboard writes them: `+$1.25`, `-$0.40`, `$0.00`. */
  const signedUsd = (d: Dec | string) => {
    const c = new Dec(d).toDecimalPlaces(2, Dec.ROUND_HALF_UP);
    return `${c.isZero() ? '' : c.isPos() ? '+' : '-'}$${c.abs().toFixed(2)}`;
  };
  /** Mid of `tokenId`'s book (best bid and ask), as the dashboard marks a position. */
  const midOf = async (tokenId: string) => {
    const b = (await svc.call('GET', `/v2/trade/book?token_id=${tokenId}&depth=1`)).body;
    return new Dec(b.bids[0].price).plus(b.asks[0].price).div(2);
  };

  beforeAll(async () => {
    if (!present) throw new Error(`Chromium not found at ${CHROMIUM}: .ci/run installs Debian's chromium`);
    svc = await startTestService({ env: { SIM_MAKER_REFILL_MS: '3600000', SIM_INITIAL_PUSD: '1000000' } });
    await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'alice' } });
    key = (
      await svc.call('POST', '/v2/trade/users/alice/api-keys', {
        body: { scopes: ['trade.read', 'trade.execute', 'trade.cancel'] },
      })
    ).body.api_key;
    const markets = (await svc.call('GET', '/v2/trade/markets?limit=100')).body.markets.filter(
      (m: any) => m.tick_size === '0.01',
    );
    market = markets[0];
    token = market.tokens[0].token_id;
    // a token quoted well inside (0.2, 0.8): its levels below can sit far from the mid on both sides
    for (const m of markets.slice(3)) {
      for (const t of m.tokens) {
        const mid = await midOf(t.token_id).catch(() => null);
        if (!chartToken && mid && mid.gt(0.2) && mid.lt(0.8)) chartToken = t.token_id;
      }
    }
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-quic',
        '--no-first-run',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    mkdirSync(ARTIFACTS, { recursive: true });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await svc?.close();
  });

  it('logs in with a key; a REST order appears and changes status live; a TWAP progress bar advances', async () => {
    await page.goto(`${svc.baseUrl}/dashboard`);
    await page.fill('#api-key', key);
    await page.click('#connect');
    await page.waitForSelector('#connection.on', { timeout: 10_000 });
    expect(await page.evaluate(() => Object.keys(sessionStorage))).toContain('pts.dashboard.key');

    // an order placed over REST: its row appears, OPEN, then CANCELED after DELETE, without reload
    const placed = await svc.call('POST', '/v2/trade/order', {
      headers: as,
      body: { symbol: token, side: 'buy', type: 'LIMIT', price: '0.02', size: '10' },
    });
    expect(placed.status).toBe(200);
    const row = `#orders tr[data-id="${placed.body.order_id}"]`;
    await page.waitForSelector(`${row}[data-status="OPEN"]`, { timeout: 15_000 });
    await svc.call('DELETE', `/v2/trade/orders/${placed.body.order_id}`, { headers: as });
    await page.waitForSelector(`${row}[data-status="CANCELED"]`, { timeout: 15_000 });

    // a TWAP of 3 slices: the progress bar advances slice by slice
    const twap = await svc.call('POST', '/v2/trade/order', {
      headers: as,
      body: { symbol: token, side: 'buy', type: 'TWAP', size: '30', execution: { interval_sec: 10, duration_sec: 30 } },
    });
    expect(twap.body.status).toBe('ACTIVE');
    const id = twap.body.record_id as string;
    const bar = `#strategies tr[data-id="${id}"] progress`;
    const progressOf = () => page.$eval(bar, (p) => [(p as HTMLProgressElement).value, (p as HTMLProgressElement).max]);
    await page.waitForSelector(bar, { timeout: 15_000 });
    await expect.poll(progressOf, { timeout: 15_000 }).toEqual([1, 3]);
    await page.screenshot({ path: path.join(ARTIFACTS, 'dashboard-twap-1-of-3.png'), fullPage: true });
    for (const k of [2, 3]) {
      const c = svc.services.host.snapshotOf(id)!.context as StrategyContext;
      await svc.services.host.deliverTimer({ actorId: id, timerName: 'slice', atMs: c.deadlines.slice! });
      await expect.poll(progressOf, { timeout: 15_000 }).toEqual([k, 3]);
    }
    await page.waitForSelector(`#strategies tr[data-id="${id}"][data-status="COMPLETED"]`, { timeout: 15_000 });
    await page.waitForFunction(() => document.querySelector('#chart canvas') !== null, undefined, { timeout: 15_000 });
    await page.screenshot({ path: path.join(ARTIFACTS, 'dashboard.png'), fullPage: true });
    expect(existsSync(path.join(ARTIFACTS, 'dashboard.png'))).toBe(true);
  }, 60_000);

  it('a bad key is refused and the login form says why', async () => {
    const p = await browser.newPage();
    await p.goto(`${svc.baseUrl}/dashboard`);
    await p.fill('#api-key', 'pts_wrong_key_000000000000000000');
    await p.click('#connect');
    await p.waitForSelector('#login-error:not([hidden])', { timeout: 10_000 });
    expect(await p.textContent('#login-error')).toMatch(/^unauthorized/);
    expect(await p.evaluate(() => sessionStorage.getItem('pts.dashboard.key'))).toBeNull();
    await p.close();
  }, 30_000);

  it('runs under its strict Content-Security-Policy without a single violation', async () => {
    const p = await browser.newPage();
    const violations: string[] = [];
    p.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) violations.push(m.text());
    });
    const res = await p.goto(`${svc.baseUrl}/dashboard`);
    const csp = res!.headers()['content-security-policy']!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe-inline');
    expect(res!.headers()['x-content-type-options']).toBe('nosniff');
    await p.fill('#api-key', key);
    await p.click('#connect');
    await p.waitForSelector('#connection.on', { timeout: 10_000 }); // the websocket connected
    const placed = await svc.call('POST', '/v2/trade/order', {
      headers: as,
      body: { symbol: token, side: 'buy', type: 'LIMIT', price: '0.03', size: '10' },
    });
    await p.waitForSelector(`#orders tr[data-id="${placed.body.order_id}"]`, { timeout: 15_000 });
    await p.click(`#orders tr[data-id="${placed.body.order_id}"]`);
    await p.waitForFunction(() => document.querySelector('#chart canvas') !== null, undefined, { timeout: 15_000 });
    expect(violations).toEqual([]);
    await p.close();
  }, 30_000);

  it('shows balance and positions with question and outcome, updated live; marks a resolved market', async () => {
    const p = await loggedIn(key);
    await p.waitForFunction(() => document.querySelector('#balance-balance')?.textContent !== '–', undefined, {
      timeout: 15_000,
    }); // loaded over REST
    const shownBefore = await p.textContent('#balance-available');
    const bought = await svc.call('POST', '/v2/trade/order', {
      headers: as,
      body: { symbol: chartToken, side: 'buy', type: 'MARKET', quote_amount: '5' },
    });
    expect(bought.status).toBe(200);
    const balance = (await svc.call('GET', '/v2/trade/balances', { headers: as })).body;
    expect(shownBefore).not.toBe(`$${balance.available}`);
    const held = (await svc.call('GET', '/v2/trade/positions', { headers: as })).body.positions.find(
      (x: any) => x.token_id === token,
    );
    const row = `#positions tr[data-id="${token}"]`;
    // live, without reload: the balance and the position with its market's question and outcome
    await expect.poll(() => p.textContent('#balance-available'), { timeout: 15_000 }).toBe(`$${balance.available}`);
    await p.waitForSelector(`${row}[data-market="open"]`, { timeout: 15_000 });
    // marked at the mid of the book: unrealized PnL = size × mid − cost, to the cent
    const mid = await midOf(token);
    const pnlText = signedUsd(new Dec(held.size).times(mid).minus(held.cost_usd));
    await expect
      .poll(() => cells(p, row), { timeout: 15_000 })
      .toEqual([
        held.question,
        held.outcome,
        held.size,
        held.available,
        held.avg_price,
        `$${held.cost_usd}`,
        mid.toString(),
        pnlText,
        '$0.00',
        'open',
      ]);
    // the market resolves for this outcome: the row is marked resolved, won
    await (svc.services.venue as SimVenue).resolveMarket(held.condition_id, token);
    await p.waitForSelector(`${row}[data-market="resolved"]`, { timeout: 15_000 });
    expect(await p.textContent(`${row} td:last-child`)).toBe('resolved: won ($1 a share)');
    // resolved for this outcome: marked at $1 a share
    const won = new Dec(held.size).minus(held.cost_usd).toDecimalPlaces(2, Dec.ROUND_HALF_UP);
    await expect
      .poll(() => cells(p, row).then((c) => c.slice(6, 8)), { timeout: 15_000 })
      .toEqual(['1', `${won.isNeg() ? '-' : '+'}$${won.abs().toFixed(2)}`]);
    await p.screenshot({ path: path.join(ARTIFACTS, 'dashboard-positions-resolved.png'), fullPage: true });
    // a reload shows the same from REST and the markets.subscribe acknowledgement
    await p.reload();
    await p.waitForSelector(`${row}[data-market="resolved"]`, { timeout: 10_000 });
    expect(await p.textContent('#balance-balance')).toBe(
      `$${(await svc.call('GET', '/v2/trade/balances', { headers: as })).body.balance}`,
    );
    await p.close();
  }, 60_000);

  it('shows combos with their legs, live from quote to redeem, and from REST after a reload', async () => {
    const bob = { 'x-partner-user-id': 'bob' };
    await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'bob' } });
    const bobKey = (
      await svc.call('POST', '/v2/trade/users/bob/api-keys', { body: { scopes: ['trade.read', 'trade.combos'] } })
    ).body.api_key;
    const legs = ((await svc.call('GET', '/v2/trade/markets?limit=500&offset=1001')).body.markets as any[])
      .filter((m) => /^(btc|eth)-15min-up-or-down-12:00$/.test(m.slug))
      .map((m) => ({
        condition_id: m.condition_id as string,
        yes: m.tokens[0].token_id as string,
        question: m.question,
      }));
    expect(legs).toHaveLength(2);
    const p = await loggedIn(bobKey);
    const q = (
      await svc.call('POST', '/v2/trade/combo/quote', {
        headers: bob,
        body: { leg_position_ids: legs.map((l) => l.yes), notional_usd: 5 },
      })
    ).body;
    expect(
      (
        await svc.call('POST', '/v2/trade/combo/accept', {
          headers: bob,
          body: { combo_order_id: q.combo_order_id, quote_id: q.quote_id },
        })
      ).status,
    ).toBe(200);
    const row = `#combos tr[data-id="${q.combo_order_id}"]`;
    await p.waitForSelector(`${row}[data-status="OPEN"]`, { timeout: 15_000 });
    const venue = svc.services.venue as SimVenue;
    await venue.resolveMarket(legs[0]!.condition_id, legs[0]!.yes);
    await p.waitForSelector(`${row}[data-status="PARTIAL"]`, { timeout: 15_000 });
    await venue.resolveMarket(legs[1]!.condition_id, legs[1]!.yes);
    await p.waitForSelector(`${row}[data-status="RESOLVED_WIN"]`, { timeout: 15_000 });
    const c = (await svc.call('GET', `/v2/trade/combo/${q.combo_order_id}`, { headers: bob })).body;
    const shown = await cells(p, row);
    expect(shown.slice(1, 8)).toEqual([
      'RESOLVED_WIN',
      legs.map((l) => `✓ ${l.question}`).join(' · '),
      '2/2',
      c.taker_shares,
      `${c.price_cents}¢`,
      `$${c.cost_usd}`,
      '–',
    ]);
    const redeemed = await svc.call('POST', '/v2/trade/combo/redeem', {
      headers: bob,
      body: { combo_order_id: q.combo_order_id },
    });
    expect(redeemed.status).toBe(200);
    await p.waitForSelector(`${row}[data-status="REDEEMED"]`, { timeout: 15_000 });
    expect((await cells(p, row))[7]).toBe(`$${c.taker_shares}`);
    await p.screenshot({ path: path.join(ARTIFACTS, 'dashboard-combos.png'), fullPage: true });
    // a reload lists it from GET /combo/positions
    await p.reload();
    await p.waitForSelector(`${row}[data-status="REDEEMED"]`, { timeout: 10_000 });
    expect((await cells(p, row))[7]).toBe(`$${c.taker_shares}`);
    await p.close();
  }, 60_000);

  it('the header shows the bound user; strategies and orders show question and outcome, not a token id', async () => {
    const p = await loggedIn(key);
    expect(await p.textContent('#who')).toMatch(/^user alice · partner \S+ · user key$/);
    const other = (await svc.call('GET', '/v2/trade/markets?limit=100')).body.markets.filter(
      (m: any) => m.tick_size === '0.01',
    )[2]; // not chartToken's
    const [yes, no] = other.tokens;
    const limit = await svc.call('POST', '/v2/trade/order', {
      headers: as,
      body: { symbol: no.token_id, side: 'buy', type: 'LIMIT', price: '0.02', size: '10' },
    });
    const twap = await svc.call('POST', '/v2/trade/order', {
      headers: as,
      body: {
        symbol: yes.token_id,
        side: 'buy',
        type: 'TWAP',
        size: '30',
        execution: { interval_sec: 600, duration_sec: 1800 },
      },
    });
    expect([limit.status, twap.body.status]).toEqual([200, 'ACTIVE']);
    const orderRow = `#orders tr[data-id="${limit.body.order_id}"]`;
    const strategyRow = `#strategies tr[data-id="${twap.body.record_id}"]`;
    // columns 5 and 6: the market's question and the outcome (the token id on hover)
    await expect
      .poll(() => cells(p, orderRow).then((c) => c.slice(4, 6)), { timeout: 15_000 })
      .toEqual([other.question, no.outcome]);
    await expect
      .poll(() => cells(p, strategyRow).then((c) => c.slice(4, 6)), { timeout: 15_000 })
      .toEqual([other.question, yes.outcome]);
    expect(await p.getAttribute(`${orderRow} [data-token-question]`, 'title')).toBe(`token ${no.token_id}`);
    // the chart's title names the charted outcome too
    await p.click(orderRow);
    await expect
      .poll(() => p.textContent('#chart-token'), { timeout: 15_000 })
      .toBe(`${other.question} — ${no.outcome}`);
    // after a reload (rows from REST) the same
    await p.reload();
    await p.waitForSelector('#connection.on', { timeout: 10_000 });
    await expect
      .poll(() => cells(p, orderRow).then((c) => c.slice(4, 6)), { timeout: 15_000 })
      .toEqual([other.question, no.outcome]);
    await p.screenshot({ path: path.join(ARTIFACTS, 'dashboard-names.png'), fullPage: true });
    expect((await svc.call('DELETE', `/v2/trade/orders/${limit.body.order_id}`, { headers: as })).status).toBe(200);
    expect((await svc.call('DELETE', `/v2/trade/strategies/${twap.body.record_id}`, { headers: as })).status).toBe(200);
    await p.close();
  }, 60_000);

  it("Forget key forgets the board: the next key's user sees none of the previous user's data", async () => {
    const bobKey = await readKeyOf('bob');
    const p = await loggedIn(key);
    const placed = await svc.call('POST', '/v2/trade/order', {
      headers: as,
      body: { symbol: chartToken, side: 'buy', type: 'LIMIT', price: '0.02', size: '10' },
    });
    expect(placed.status).toBe(200);
    const row = `#orders tr[data-id="${placed.body.order_id}"]`;
    await p.waitForSelector(row, { timeout: 15_000 });
    await p.click(row);
    await expect
      .poll(() => p.evaluate(() => (window as any).dashboardChart.token()), { timeout: 15_000 })
      .toBe(chartToken);
    await p.click('#logout');
    await p.fill('#api-key', bobKey);
    await p.click('#connect');
    await p.waitForSelector('#connection.on', { timeout: 10_000 });
    await expect.poll(() => p.textContent('#who'), { timeout: 15_000 }).toMatch(/^user bob /);
    expect(await p.$(row)).toBeNull();
    expect(await p.$$eval('#orders tbody tr, #strategies tbody tr, #positions tbody tr', (rows) => rows.length)).toBe(
      0,
    );
    expect(await p.evaluate(() => (window as any).dashboardChart.token())).toBeNull();
    expect((await svc.call('DELETE', `/v2/trade/orders/${placed.body.order_id}`, { headers: as })).status).toBe(200);
    await p.close();
  }, 30_000);

  it("an answer to the previous key that arrives after Forget key is not drawn on the next key's board", async () => {
    const doraKey = await readKeyOf('dora');
    const placed = await svc.call('POST', '/v2/trade/order', {
      headers: as,
      body: { symbol: chartToken, side: 'buy', type: 'LIMIT', price: '0.02', size: '10' },
    });
    expect(placed.status).toBe(200);
    let held: (() => void) | null = null;
    let aliceAnswered = false;
    const p = await loggingIn(key, (page) =>
      page.route(/\/v2\/trade\/orders\/open\?/, async (route) => {
        const response = await route.fetch();
        if (route.request().headers().authorization !== `Bearer ${key}`) return route.fulfill({ response });
        await new Promise<void>((release) => (held = release)); // alice's open orders wait
        await route.fulfill({ response });
        aliceAnswered = true;
      }),
    );
    await expect.poll(() => held !== null, { timeout: 10_000 }).toBe(true);
    await p.click('#logout');
    await p.fill('#api-key', doraKey);
    await p.click('#connect');
    await expect.poll(() => p.textContent('#who'), { timeout: 15_000 }).toMatch(/^user dora /);
    await p.waitForSelector('#connection.on', { timeout: 10_000 });
    held!(); // alice's answer arrives on dora's board
    await expect.poll(() => aliceAnswered, { timeout: 10_000 }).toBe(true);
    await new Promise((r) => setTimeout(r, 1_000));
    expect(await p.$(`#orders tr[data-id="${placed.body.order_id}"]`)).toBeNull();
    expect(await p.$$eval('#orders tbody tr, #strategies tbody tr, #positions tbody tr', (rows) => rows.length)).toBe(
      0,
    );
    expect((await svc.call('DELETE', `/v2/trade/orders/${placed.body.order_id}`, { headers: as })).status).toBe(200);
    await p.close();
  }, 30_000);

  it("the next key's board loads its copies even when the previous key's load never answered", async () => {
    const erinKey = await readKeyOf('erin');
    let held = false;
    let erinAsked = false;
    const p = await loggingIn(key, (page) =>
      page.route(/\/v2\/trade\/copytrade\/history\?/, async (route) => {
        if (route.request().headers().authorization === `Bearer ${erinKey}`) erinAsked = true;
        else if (!held) {
          held = true; // alice's first load of her copies never answers
          return;
        }
        await route.continue();
      }),
    );
    await expect.poll(() => held, { timeout: 10_000 }).toBe(true);
    await p.click('#logout');
    await p.fill('#api-key', erinKey);
    await p.click('#connect');
    await expect.poll(() => p.textContent('#who'), { timeout: 15_000 }).toMatch(/^user erin /);
    await expect.poll(() => erinAsked, { timeout: 10_000 }).toBe(true);
    await p.close();
  }, 30_000);

  it('a master key without a user id gets a field asking for one, again for an unknown id, then watches', async () => {
    const p = await loggingIn(MASTER_KEY);
    await p.waitForSelector('#pick-user:not([hidden])', { timeout: 10_000 });
    expect(await p.isHidden('#board')).toBe(true);
    expect(await p.isHidden('#pick-user-error')).toBe(true);
    expect(await p.textContent('body')).not.toMatch(/bad_request|X-Partner-User-Id header/);
    await p.fill('#pick-user-id', 'nobody');
    await p.click('#pick-user button[type=submit]');
    await p.waitForSelector('#pick-user-error:not([hidden])', { timeout: 15_000 });
    expect(await p.textContent('#pick-user-error')).toBe('no partner user "nobody" at this partner');
    await p.fill('#pick-user-id', 'alice');
    await p.click('#pick-user button[type=submit]');
    await p.waitForSelector('#connection.on', { timeout: 10_000 });
    expect(await p.isHidden('#pick-user')).toBe(true);
    expect(await p.textContent('#who')).toMatch(/^user alice · partner \S+ · master key$/);
    const balance = (await svc.call('GET', '/v2/trade/balances', { headers: as })).body;
    await expect.poll(() => p.textContent('#balance-balance'), { timeout: 15_000 }).toBe(`$${balance.balance}`);
    expect(await p.textContent('#wallet-note')).toBe('');
    await p.close();
  }, 30_000);

  it("the chart's scale takes in armed levels and working prices far from the mid", async () => {
    const bought = await svc.call('POST', '/v2/trade/order', {
      headers: as,
      body: { symbol: chartToken, side: 'buy', type: 'MARKET', quote_amount: '10' },
    });
    expect(bought.status).toBe(200);
    const mid = Number(await midOf(chartToken));
    const stop = await svc.call('POST', '/v2/trade/order', {
      headers: as,
      body: { symbol: chartToken, side: 'sell', type: 'STOP_LOSS', price: '0.03', size: '5' },
    });
    const take = await svc.call('POST', '/v2/trade/order', {
      headers: as,
      body: { symbol: chartToken, side: 'sell', type: 'TAKE_PROFIT', price: '0.97', size: '5' },
    });
    const limit = await svc.call('POST', '/v2/trade/order', {
      headers: as,
      body: { symbol: chartToken, side: 'buy', type: 'LIMIT', price: '0.02', size: '10' },
    });
    expect([stop.status, take.status, limit.status]).toEqual([200, 200, 200]);
    const p = await loggedIn(key);
    await p.waitForSelector(`#orders tr[data-id="${limit.body.order_id}"]`, { timeout: 15_000 });
    await p.click(`#orders tr[data-id="${limit.body.order_id}"]`);
    await expect
      .poll(() => p.evaluate(() => (window as any).dashboardChart.levels().sort()), { timeout: 15_000 })
      .toEqual([0.02, 0.03, 0.97]);
    // every level and the mid fall inside the plot's height (a price off the scale has no coordinate)
    const inView = (prices: number[]) =>
      p.evaluate((xs) => {
        const c = (window as any).dashboardChart;
        const h = c.height();
        return xs.map((x) => {
          const y = c.coordinate(x);
          return h > 0 && y !== null && y >= 0 && y <= h;
        });
      }, prices);
    await expect.poll(() => inView([0.02, 0.03, 0.97, mid]), { timeout: 15_000 }).toEqual([true, true, true, true]);
    // a level armed while the chart is shown, lower still (the book does not change): the scale widens to it
    const lower = await svc.call('POST', '/v2/trade/order', {
      headers: as,
      body: { symbol: chartToken, side: 'sell', type: 'STOP_LOSS', price: '0.01', size: '5' },
    });
    expect(lower.status).toBe(200);
    await expect
      .poll(() => p.evaluate(() => (window as any).dashboardChart.levels().sort()), { timeout: 15_000 })
      .toEqual([0.01, 0.02, 0.03, 0.97]);
    await expect
      .poll(() => inView([0.01, 0.02, 0.03, 0.97, mid]), { timeout: 15_000 })
      .toEqual([true, true, true, true, true]);
    await p.screenshot({ path: path.join(ARTIFACTS, 'dashboard-levels.png'), fullPage: true });
    for (const id of [stop.body.record_id, lower.body.record_id])
      expect((await svc.call('DELETE', `/v2/trade/strategies/${id}`, { headers: as })).status).toBe(200);
    for (const id of [limit.body.order_id, take.body.order_id])
      expect((await svc.call('DELETE', `/v2/trade/orders/${id}`, { headers: as })).status).toBe(200);
    await p.close();
  }, 60_000);

  it("the chart plots the token's recent trades from the tape, one point per second, and new ones live", async () => {
    /** What the chart should show: the tape's last 200 trades of the token, per block second its last price. */
    const expected = async () => {
      const tape = (await svc.call('GET', `/v2/trade/trades?token_id=${chartToken}&limit=200`)).body.trades;
      const bySecond = new Map<number, number>();
      for (const t of [...tape].reverse()) bySecond.set(t.block_timestamp, Number(t.price));
      return [...bySecond].map(([time, value]) => ({ time, value }));
    };
    const buy = (size: string) =>
      svc.call('POST', '/v2/trade/order', {
        headers: as,
        body: { symbol: chartToken, side: 'buy', type: 'LIMIT', price: '0.99', size, time_in_force: 'IOC' },
      });
    expect((await buy('5')).body.status).toBe('FILLED');
    const order = await svc.call('POST', '/v2/trade/order', {
      headers: as,
      body: { symbol: chartToken, side: 'buy', type: 'LIMIT', price: '0.02', size: '10' },
    });
    expect(order.status).toBe(200);
    const before = await expected();
    expect(before.length).toBeGreaterThan(0);
    const p = await loggedIn(key);
    await p.waitForSelector(`#orders tr[data-id="${order.body.order_id}"]`, { timeout: 15_000 });
    await p.click(`#orders tr[data-id="${order.body.order_id}"]`);
    const shown = () => p.evaluate(() => (window as any).dashboardChart.trades());
    await expect.poll(shown, { timeout: 15_000 }).toEqual(before);
    // a trade made while the chart is shown (through several ask levels: a new last trade price) appears
    await new Promise((r) => setTimeout(r, 2_100)); // the next block
    expect((await buy('400')).body.fills.length).toBeGreaterThan(0);
    const after = await expected();
    expect(after.length).toBeGreaterThan(before.length);
    await expect.poll(shown, { timeout: 15_000 }).toEqual(after);
    await p.screenshot({ path: path.join(ARTIFACTS, 'dashboard-trades.png'), fullPage: true });
    expect((await svc.call('DELETE', `/v2/trade/orders/${order.body.order_id}`, { headers: as })).status).toBe(200);
    await p.close();
  }, 30_000);

  it("positions show the server's cur_price and cash_pnl when the rows carry them", async () => {
    const p = await loggingIn(key, (page) =>
      page.route(/\/v2\/trade\/positions\?/, async (route) => {
        const response = await route.fetch();
        const body = await response.json();
        body.positions = body.positions.map((x: any) => ({ ...x, cur_price: '0.615', cash_pnl: '-1.235' }));
        await route.fulfill({ response, json: body });
      }),
    );
    await p.waitForSelector('#positions tbody tr', { timeout: 10_000 });
    const rows = await p.$$eval('#positions tbody tr', (trs) => trs.map((tr) => tr.getAttribute('data-id')));
    expect(rows.length).toBeGreaterThan(0);
    for (const id of rows)
      expect(await cells(p, `#positions tr[data-id="${id}"]`).then((c) => [c[6], c[7]])).toEqual(['0.615', '-$1.24']);
    await p.close();
  }, 30_000);

  it("a position pushed while the wallet's REST load is on its way is not drawn over by the older load", async () => {
    const token = (await svc.call('GET', '/v2/trade/markets?limit=100')).body.markets.filter(
      (m: any) => m.tick_size === '0.01',
    )[2].tokens[0].token_id;
    let held: (() => void) | null = null;
    let olderAnswered = false;
    const p = await loggingIn(key, (page) =>
      page.route(/\/v2\/trade\/positions\?/, async (route) => {
        const response = await route.fetch(); // the positions as they are now
        if (held !== null || olderAnswered) return route.fulfill({ response });
        await new Promise<void>((release) => (held = release)); // the first load's answer waits
        await route.fulfill({ response });
        olderAnswered = true;
      }),
    );
    await expect.poll(() => held !== null, { timeout: 10_000 }).toBe(true);
    const buy = { symbol: token, side: 'buy', type: 'MARKET', quote_amount: '5' };
    expect((await svc.call('POST', '/v2/trade/order', { headers: as, body: buy })).status).toBe(200);
    const row = `#positions tr[data-id="${token}"]`;
    await p.waitForSelector(row, { timeout: 10_000 }); // drawn from the push
    held!(); // the load's answer, from before the buy, arrives now
    await expect.poll(() => olderAnswered, { timeout: 10_000 }).toBe(true);
    await new Promise((r) => setTimeout(r, 1_000));
    expect(await p.$(row)).not.toBeNull();
    await p.close();
  }, 30_000);

  it('positions show the realized PnL of a partial sell beside the unrealized, live', async () => {
    const p = await loggedIn(key);
    const other = (await svc.call('GET', '/v2/trade/markets?limit=100')).body.markets.filter(
      (m: any) => m.tick_size === '0.01',
    )[1].tokens[0].token_id;
    const row = `#positions tr[data-id="${other}"]`;
    const buy = { symbol: other, side: 'buy', type: 'MARKET', quote_amount: '5' };
    expect((await svc.call('POST', '/v2/trade/order', { headers: as, body: buy })).status).toBe(200);
    await p.waitForSelector(row, { timeout: 15_000 });
    const before = (await svc.call('GET', '/v2/trade/positions', { headers: as })).body.positions.find(
      (x: any) => x.token_id === other,
    );
    const half = new Dec(before.size).div(2).toDecimalPlaces(2, Dec.ROUND_DOWN).toString();
    const sell = { symbol: other, side: 'sell', type: 'LIMIT', price: '0.01', size: half, time_in_force: 'IOC' };
    const sold = await svc.call('POST', '/v2/trade/order', { headers: as, body: sell });
    expect(sold.body.status).toBe('FILLED');
    const after = (await svc.call('GET', '/v2/trade/positions', { headers: as })).body.positions.find(
      (x: any) => x.token_id === other,
    );
    expect(new Dec(after.realized_pnl).isZero()).toBe(false);
    await expect
      .poll(() => cells(p, row).then((c) => [c[2], c[7], c[8]]), { timeout: 15_000 })
      .toEqual([after.size, signedUsd(after.cash_pnl), signedUsd(after.realized_pnl)]);
    await p.close();
  }, 30_000);

  it('serves its icon: the page links one and /favicon.ico answers it, so nothing it asks for is a 404', async () => {
    const failed: string[] = [];
    const p = await loggedIn(key, async (page) =>
      page.on('response', (r) => {
        if (r.status() >= 400) failed.push(`${r.status()} ${r.url()}`);
      }),
    );
    const href = await p.$eval('link[rel=icon]', (l) => (l as HTMLLinkElement).href);
    for (const url of [href, `${svc.baseUrl}/favicon.ico`]) {
      const r = await fetch(url);
      expect([url, r.status, r.headers.get('content-type')]).toEqual([url, 200, 'image/svg+xml']);
      expect(await r.text()).toMatch(/^<svg /);
    }
    expect(failed).toEqual([]);
    await p.close();
  }, 30_000);

  it('shows each copytrade subscription (leader, status, copies, skips, PnL) and its recent copies, live', async () => {
    const leader = (await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'ct-leader' } })).body;
    const p = await loggedIn(key);
    const sub = await svc.call('POST', '/v2/trade/copytrade', {
      headers: as,
      body: copyEveryFill(leader.safe_address, 2, { leader_username: 'sharp' }),
    });
    expect(sub.status).toBe(200);
    const row = `#copytrades tr[data-id="${sub.body.id}"]`;
    await p.waitForSelector(`${row}[data-status="ACTIVE"]`, { timeout: 15_000 });
    const bought = await svc.call('POST', '/v2/trade/order', {
      headers: { 'x-partner-user-id': 'ct-leader' },
      body: { symbol: chartToken, side: 'buy', type: 'MARKET', quote_amount: '5' },
    });
    expect(bought.status).toBe(200);
    await expect.poll(async () => (await cells(p, row))[4], { timeout: 15_000 }).toBe('1');
    expect((await cells(p, row)).slice(0, 4)).toEqual([expect.any(String), 'sharp', 'ACTIVE', 'FIXED_USD_PER_TRADE 2']);
    await p.waitForSelector('#copies tr[data-result="COPIED"]', { timeout: 15_000 });
    const copy = await cells(p, '#copies tr[data-result="COPIED"]');
    expect(copy[2]).toBe('copied');
    expect(copy[3]).toBe('BUY');
    // the market named by its question, not by a token id
    await expect
      .poll(async () => (await cells(p, '#copies tr[data-result="COPIED"]'))[4], { timeout: 15_000 })
      .not.toMatch(/^\d|^–$/);
    await p.screenshot({ path: path.join(ARTIFACTS, 'dashboard-copytrade.png'), fullPage: true });
    await p.close();
  }, 30_000);
});
