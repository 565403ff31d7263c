import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dec } from '../../engine/decimal.js';
import { CAPTURE_FILE, CAPTURE_TOUCH_SIZE, type CaptureEvent } from '../../engine/venue/capture.js';
import { loadCatalogue } from '../../engine/venue/markets.js';
import type { SimVenue } from '../../engine/venue/sim-venue.js';
import { startTestService, type TestService } from '../helpers.js';
import { checkInvariants } from '../invariants.js';
import { poll, Trading } from './trading-kit.js';

/**
 * The capture replay's books follow the rows' `best_bid` / `best_ask` (the real touch), through the
 * real HTTP path, on the real rows of btc-15min-up-or-down-15:30 (recorded: Up; its ask goes 0.95 →
 * 0.999 in the last minutes). The market's events are applied through
 * {@link SimVenue.applyCaptureEvents} (the replay's own path), one book update (token, millisecond)
 * at a time: the replay itself runs in real time here and does not reach that market (6 hours into
 * the capture) during the test.
 */
describe("the capture replay's touch is the captured best_bid / best_ask (real service, real rows)", () => {
  const SLUG = 'btc-15min-up-or-down-15:30';
  let svc: TestService;
  const tr = new Trading(() => svc);
  const capture = loadCatalogue().capture!;
  const market = capture.markets.find((m) => m.slug === SLUG)!;
  const [up, down] = market.tokens.map((t) => t.tokenId) as [string, string];
  /** The market's book events (levels, captured and made from the touch), grouped by update (millisecond), in order. */
  const updates: CaptureEvent[][] = [];
  for (const e of capture.events) {
    if (e.kind !== 'level' || e.tokenId !== up) continue;
    const last = updates.at(-1);
    if (last && last[0]!.atMs === e.atMs) last.push(e);
    else updates.push([e]);
  }
  /** The captured touch of each update of Up: the last bid/ask row of that millisecond. */
  const touchAt = new Map<number, { bid: string; ask: string }>();
  for (const line of fs.readFileSync(path.join('data', CAPTURE_FILE), 'utf8').split('\n')) {
    const f = line.split(',');
    if (f[0] === SLUG && f[11] === up && (f[4] === 'bid' || f[4] === 'ask'))
      touchAt.set(Number(f[1]), { bid: f[9]!, ask: f[10]! });
  }
  let applied = 0;
  const venue = () => svc.services.venue as SimVenue;
  /** Applies the next update; returns its captured touch. */
  const applyNext = async () => {
    const u = updates[applied++]!;
    await venue().applyCaptureEvents(u);
    return { atMs: u[0]!.atMs, ...touchAt.get(u[0]!.atMs)! };
  };
  const balance = async (u: string) =>
    dec((await svc.call('GET', '/v2/trade/balances', { headers: tr.as(u) })).body.balance);

  beforeAll(async () => {
    svc = await startTestService({ env: { SIM_CONTROL: 'on', SIM_CAPTURE: 'on', SIM_CAPTURE_SPEED: '1' } });
    await tr.init(['alice']);
    expect(market.tokens.map((t) => t.outcome)).toEqual(['Up', 'Down']);
  });
  afterAll(async () => {
    await svc?.close();
  });

  it("Up's book shows the captured touch (a synthetic 100-share level at 0.99 ask); Down mirrors it", async () => {
    expect(await applyNext()).toEqual({ atMs: 1771620041030, bid: '0.93', ask: '0.95' });
    expect(await tr.book(up)).toMatchObject({
      bids: [{ price: '0.93', size: CAPTURE_TOUCH_SIZE }],
      asks: [
        { price: '0.95', size: CAPTURE_TOUCH_SIZE },
        { price: '0.99', size: '5637.62' },
      ],
    });
    expect(await tr.book(down)).toMatchObject({
      bids: [
        { price: '0.05', size: CAPTURE_TOUCH_SIZE },
        { price: '0.01', size: '5637.62' },
      ],
      asks: [{ price: '0.07', size: CAPTURE_TOUCH_SIZE }],
    });
  });

  it("a Down STOP_LOSS fires when Up's captured best ask rises to 0.96; its sell merges against Up's ask", async () => {
    // Down shares first: a MARKET buy takes Down's ask at 0.07 (Up's bid at 0.93: a full set minted)
    const buy = await tr.post('alice', { symbol: down, side: 'buy', type: 'MARKET', quote_amount: '1.4' });
    expect(buy).toMatchObject({ status: 200, body: { type: 'MARKET', status: 'FILLED', filled_size: '20' } });
    const stop = await tr.post('alice', { symbol: down, side: 'sell', type: 'STOP_LOSS', price: '0.04', size: '10' });
    expect(stop).toMatchObject({ status: 200, body: { type: 'STOP_LOSS', status: 'ACTIVE' } });
    const before = await balance('alice');
    // Up's best ask stays 0.95 (Down's bid 0.05) until the row of 1771620064100 (0.96: Down's bid 0.04)
    for (;;) {
      const t = await applyNext();
      expect((await tr.book(up)).asks[0]!.price, `Up's ask after ${t.atMs}`).toBe(t.ask);
      if (t.ask !== '0.95') {
        expect(t).toEqual({ atMs: 1771620064100, bid: '0.94', ask: '0.96' });
        break;
      }
      expect(await tr.strategy('alice', stop.body.record_id)).toMatchObject({ status: 'ACTIVE' });
    }
    const done = await poll(
      'the stop fired and its sell filled',
      () => tr.strategy('alice', stop.body.record_id),
      (s) => s?.status === 'COMPLETED',
    );
    expect(done).toMatchObject({ status: 'COMPLETED', filled_size: '10' });
    // the sell of Down at its bid 0.04 met Up's ask at 0.96: full sets merged, 0.04 a share to alice
    expect((await balance('alice')).minus(before).toFixed()).toBe('0.4');
    expect((await svc.call('GET', '/v2/trade/positions', { headers: tr.as('alice') })).body.positions).toEqual([
      expect.objectContaining({ token_id: down, size: '10' }),
    ]);
  });

  it("every later update's captured touch is Up's book touch (N/A sides aside), up to the 0.999 ask", async () => {
    const seen: string[] = [];
    while (applied < updates.length) {
      const t = await applyNext();
      const book = await tr.book(up);
      if (t.bid !== 'N/A' && t.ask !== 'N/A' && Number(t.bid) >= Number(t.ask)) continue;
      if (t.bid !== 'N/A') expect(book.bids[0]?.price, `Up's bid after ${t.atMs}`).toBe(t.bid);
      if (t.ask !== 'N/A') expect(book.asks[0]?.price, `Up's ask after ${t.atMs}`).toBe(t.ask);
      if (t.ask !== 'N/A' && seen.at(-1) !== t.ask) seen.push(t.ask);
    }
    expect(seen).toContain('0.999');
    // the last rows: bid 0.999, no ask left (N/A): Up's asks at or below 0.999 are gone, so Down has no bid
    const [u, d] = [await tr.book(up), await tr.book(down)];
    expect(u.bids[0]).toEqual({ price: '0.999', size: '350330.18' });
    expect([u.asks, d.bids]).toEqual([[], []]);
    expect(d.asks[0]).toEqual({ price: '0.001', size: '350330.18' });
  });

  it('the shared invariants hold (full sets minted and merged accounted)', async () => {
    await checkInvariants(svc.services, { acknowledged: tr.acknowledged });
  });
});
