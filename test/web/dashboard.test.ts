/// <reference lib="dom" />
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StrategyContext } from '../../machines/strategy-kit.js';
import type { SimVenue } from '../../engine/venue/sim-venue.js';
import { startTestService, type TestService } from '../helpers.js';

/**
 * End-to-end (issue 6): Debian's Chromium, headless, driven by playwright-core, against the
 * dashboard served by an in-process service. Screenshots go to test-artifacts/.
 */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const present = existsSync(CHROMIUM);
if (!present && !process.env.CI) console.warn(`test/web/dashboard.test.ts skipped: no Chromium at ${CHROMIUM} (apt-get install -y chromium, or set CHROMIUM_PATH)`);
const ARTIFACTS = path.resolve('test-artifacts');

describe.skipIf(!present && !process.env.CI)('dashboard in headless Chromium', () => {
  let svc: TestService;
  let browser: Browser;
  let page: Page;
  let key: string;
  let token: string;
  const as = { 'x-partner-user-id': 'alice' };

  beforeAll(async () => {
    if (!present) throw new Error(`Chromium not found at ${CHROMIUM}: .ci/run installs Debian's chromium`);
    svc = await startTestService({ env: { SIM_MAKER_REFILL_MS: '3600000', SIM_INITIAL_PUSD: '1000000' } });
    await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'alice' } });
    key = (await svc.call('POST', '/v2/trade/users/alice/api-keys', { body: { scopes: ['trade.read', 'trade.execute', 'trade.cancel'] } })).body.api_key;
    const markets = (await svc.call('GET', '/v2/trade/markets?limit=100')).body.markets;
    token = markets.find((m: any) => m.tick_size === '0.01').tokens[0].token_id;
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-quic', '--no-first-run', '--disable-component-update', '--disable-sync'],
    });
    page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    mkdirSync(ARTIFACTS, { recursive: true });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await svc?.close();
  });

  it('logs in with a key; an order placed over REST appears and changes status live; a TWAP progress bar advances', async () => {
    await page.goto(`${svc.baseUrl}/dashboard`);
    await page.fill('#api-key', key);
    await page.click('#connect');
    await page.waitForSelector('#connection.on', { timeout: 10_000 });
    expect(await page.evaluate(() => Object.keys(sessionStorage))).toContain('pts.dashboard.key');

    // an order placed over REST: its row appears, LIVE, then CANCELED after DELETE, without reload
    const placed = await svc.call('POST', '/v2/trade/order', { headers: as, body: { symbol: token, side: 'buy', type: 'LIMIT', price: '0.02', size: '10' } });
    expect(placed.status).toBe(200);
    const row = `#orders tr[data-id="${placed.body.order_id}"]`;
    await page.waitForSelector(`${row}[data-status="LIVE"]`, { timeout: 5_000 });
    await svc.call('DELETE', `/v2/trade/orders/${placed.body.order_id}`, { headers: as });
    await page.waitForSelector(`${row}[data-status="CANCELED"]`, { timeout: 5_000 });

    // a TWAP of 3 slices: the progress bar advances slice by slice
    const twap = await svc.call('POST', '/v2/trade/order', { headers: as, body: { symbol: token, side: 'buy', type: 'TWAP', size: '30', execution: { interval_sec: 10, duration_sec: 30 } } });
    expect(twap.body.status).toBe('ACTIVE');
    const id = twap.body.record_id as string;
    const bar = `#strategies tr[data-id="${id}"] progress`;
    const progressOf = () => page.$eval(bar, (p) => [(p as HTMLProgressElement).value, (p as HTMLProgressElement).max]);
    await page.waitForSelector(bar, { timeout: 5_000 });
    await expect.poll(progressOf, { timeout: 5_000 }).toEqual([1, 3]);
    await page.screenshot({ path: path.join(ARTIFACTS, 'dashboard-twap-1-of-3.png'), fullPage: true });
    for (const k of [2, 3]) {
      const c = svc.services.host.snapshotOf(id)!.context as StrategyContext;
      await svc.services.host.deliverTimer({ actorId: id, timerName: 'slice', atMs: c.deadlines.slice! });
      await expect.poll(progressOf, { timeout: 5_000 }).toEqual([k, 3]);
    }
    await page.waitForSelector(`#strategies tr[data-id="${id}"][data-status="COMPLETED"]`, { timeout: 5_000 });
    await page.waitForFunction(() => document.querySelector('#chart canvas') !== null, undefined, { timeout: 5_000 });
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

  it('runs under its strict Content-Security-Policy without a single violation (issue 12 item 22)', async () => {
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
    const placed = await svc.call('POST', '/v2/trade/order', { headers: as, body: { symbol: token, side: 'buy', type: 'LIMIT', price: '0.03', size: '10' } });
    await p.waitForSelector(`#orders tr[data-id="${placed.body.order_id}"]`, { timeout: 5_000 });
    await p.click(`#orders tr[data-id="${placed.body.order_id}"]`);
    await p.waitForFunction(() => document.querySelector('#chart canvas') !== null, undefined, { timeout: 5_000 });
    expect(violations).toEqual([]);
    await p.close();
  }, 30_000);

  it('shows the balance and positions with question and outcome, updated live, and marks a resolved market (issue 16)', async () => {
    const p = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    await p.goto(`${svc.baseUrl}/dashboard`);
    await p.fill('#api-key', key);
    await p.click('#connect');
    await p.waitForSelector('#connection.on', { timeout: 10_000 });
    await p.waitForFunction(() => document.querySelector('#balance-balance')?.textContent !== '–', undefined, { timeout: 5_000 }); // loaded over REST
    const shownBefore = await p.textContent('#balance-available');
    const bought = await svc.call('POST', '/v2/trade/order', { headers: as, body: { symbol: token, side: 'buy', type: 'MARKET', quote_amount: '5' } });
    expect(bought.status).toBe(200);
    const balance = (await svc.call('GET', '/v2/trade/balances', { headers: as })).body;
    expect(shownBefore).not.toBe(`$${balance.available}`);
    const held = (await svc.call('GET', '/v2/trade/positions', { headers: as })).body.positions.find((x: any) => x.token_id === token);
    const row = `#positions tr[data-id="${token}"]`;
    // live, without reload: the balance and the position with its market's question and outcome
    await expect.poll(() => p.textContent('#balance-available'), { timeout: 5_000 }).toBe(`$${balance.available}`);
    await p.waitForSelector(`${row}[data-market="open"]`, { timeout: 5_000 });
    await expect.poll(() => p.$eval(row, (tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)), { timeout: 5_000 }).toEqual(
      [held.question, held.outcome, held.size, held.available, held.avg_price, `$${held.cost_usd}`, 'open'],
    );
    // the market resolves for this outcome: the row is marked resolved, won
    await (svc.services.venue as SimVenue).resolveMarket(held.condition_id, token);
    await p.waitForSelector(`${row}[data-market="resolved"]`, { timeout: 5_000 });
    expect(await p.textContent(`${row} td:last-child`)).toBe('resolved: won ($1 a share)');
    await p.screenshot({ path: path.join(ARTIFACTS, 'dashboard-positions-resolved.png'), fullPage: true });
    // a reload shows the same from REST and the markets.subscribe acknowledgement
    await p.reload();
    await p.waitForSelector(`${row}[data-market="resolved"]`, { timeout: 10_000 });
    expect(await p.textContent('#balance-balance')).toBe(`$${(await svc.call('GET', '/v2/trade/balances', { headers: as })).body.balance}`);
    await p.close();
  }, 60_000);
});
