import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../engine/clock.js';
import { dec } from '../../../engine/decimal.js';
import { createLogger } from '../../../engine/logger.js';
import { SqliteStore } from '../../../engine/store/sqlite.js';
import { parseCapture, type CaptureEvent } from '../../../engine/venue/capture.js';
import type { VenueOrder, VenueReport } from '../../../engine/venue/port.js';
import { SimVenue } from '../../../engine/venue/sim-venue.js';
import { A, B, binaryCaptureCatalogue, C } from './capture-fixture.js';

const T0 = 1_700_000_000_000;

const lvl = (atMs: number, side: 'buy' | 'sell', price: string, size: string): CaptureEvent => ({
  kind: 'level',
  atMs,
  tokenId: A,
  side,
  price: dec(price),
  size: dec(size),
});
const trade = (atMs: number, price: string): CaptureEvent => ({ kind: 'trade', atMs, tokenId: A, price: dec(price) });

/**
 * A capture of one market A/B: second 0 an ask 0.60 × 50 (trade 0.55); second 1 the 0.60 ask
 * gone, an ask 0.70 × 40 (trade 0.65); second 5 a bid 0.20 × 30 (trade 0.68); second 10 A wins.
 */
const EVENTS: CaptureEvent[] = [
  lvl(T0, 'sell', '0.6', '50'),
  trade(T0, '0.55'),
  lvl(T0 + 1000, 'sell', '0.6', '0'),
  lvl(T0 + 1000, 'sell', '0.7', '40'),
  trade(T0 + 1000, '0.65'),
  lvl(T0 + 5000, 'buy', '0.2', '30'),
  trade(T0 + 5000, '0.68'),
  { kind: 'resolved', atMs: T0 + 10_000, conditionId: C, winningTokenId: A },
];

let n = 0;
const ioc = (side: 'buy' | 'sell', price: string, size: string): VenueOrder => ({
  orderId: `ord_${++n}`,
  userId: 'u',
  tokenId: A,
  side,
  kind: 'limit',
  price,
  size,
  quoteAmount: null,
  timeInForce: 'IOC',
  postOnly: false,
});

/**
 * Opens the venue on `dir` with the capture replay on, real time
 * (1 capture second per clock second), driven by the test's clock.
 */
/** Every store {@link open} opened: closed after each test (a "killed" one only then, as the OS would). */
const stores: SqliteStore[] = [];

async function open(dir: string, clock: ManualClock, events = EVENTS) {
  const store = await SqliteStore.open(dir);
  stores.push(store);
  const venue = await SimVenue.open({
    catalogue: binaryCaptureCatalogue('0.01', events, T0, events.at(-1)!.atMs),
    store,
    clock,
    log: createLogger('silent'),
    initialPusd: '1000',
    liquidityLevels: 0,
    refillMs: 3_600_000,
    replay: false,
    replaySpeed: 600,
    captureReplay: true,
    captureSpeed: 1,
    captureTickMs: 3_600_000,
  });
  const reports: VenueReport[] = [];
  venue.onReport((r) => reports.push(r));
  return { venue, reports };
}

/** Lets the replay's un-awaited batch write and its reports go out. */
const settle = () => new Promise((r) => setTimeout(r, 20));

describe('capture replay: a restart resumes where the previous run was', () => {
  const dirs: string[] = [];
  afterEach(async () => {
    for (const s of stores.splice(0)) await s.close();
    for (const d of dirs.splice(0)) await fs.rm(d, { recursive: true, force: true });
  });

  for (const mode of ['kill -9 (journal only)', 'graceful (checkpoint)'] as const) {
    it(`${mode}: resumes at the journaled position; taken stays taken; stale levels, prints stay gone`, async () => {
      const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-resume-'));
      dirs.push(dir);
      const clock = new ManualClock(5_000);
      const first = await open(dir, clock);
      await settle();
      expect(first.venue.book(A)).toMatchObject({ asks: [{ price: '0.6', size: '50' }], lastTradePrice: '0.55' });
      expect(first.venue.capture!.applied).toBe(2);

      clock.advance(1_000);
      first.venue.capture!.step();
      await settle();
      expect(first.venue.book(A)).toMatchObject({ asks: [{ price: '0.7', size: '40' }], lastTradePrice: '0.65' });
      await first.venue.submit(ioc('buy', '0.7', '15')); // a user takes 15 of the 40
      expect(first.venue.book(A)!.asks).toEqual([{ price: '0.7', size: '25' }]);
      const applied = first.venue.capture!.applied;
      expect(applied).toBe(5);
      first.venue.capture!.stop();
      if (mode === 'graceful (checkpoint)') await first.venue.close();

      // restart on the same store, the clock moved on meanwhile (capture time does not advance while down)
      clock.advance(60_000);
      const second = await open(dir, clock);
      await settle();
      expect(second.venue.capture!.applied).toBe(applied);
      expect(second.venue.book(A)).toMatchObject({
        asks: [{ price: '0.7', size: '25' }],
        bids: [],
        lastTradePrice: '0.65',
      });
      // the stale 0.60 ask of the first second does not fill a buy placed after the replay moved past it
      await second.venue.submit(ioc('buy', '0.65', '10'));
      expect(second.reports.filter((r) => r.type === 'venue.filled')).toEqual([]);
      expect(second.venue.wallet('u').positions).toMatchObject([{ tokenId: A, size: '15' }]);

      // capture time resumes at second 1: second 5 comes 4 clock seconds later, not at once
      clock.advance(3_000);
      second.venue.capture!.step();
      await settle();
      expect(second.venue.capture!.applied).toBe(applied);
      clock.advance(1_000);
      second.venue.capture!.step();
      await settle();
      expect(second.venue.book(A)).toMatchObject({
        bids: [{ price: '0.2', size: '30' }],
        asks: [{ price: '0.7', size: '25' }],
        lastTradePrice: '0.68',
      });
      clock.advance(5_000);
      second.venue.capture!.step();
      await settle();
      expect(second.venue.marketStatus(C)).toMatchObject({ resolved: true, winningTokenId: A });
      expect(second.venue.capture!.done).toBe(true);
      await second.venue.close();

      // after the end: a third start is done at once, nothing applied again, nothing resolved twice
      const third = await open(dir, clock);
      await settle();
      expect(third.venue.capture!.done).toBe(true);
      expect(third.venue.book(A)).toMatchObject({ bids: [], asks: [], lastTradePrice: '0.68' });
      expect(third.venue.marketStatus(C)).toMatchObject({ resolved: true, winningTokenId: A });
      await third.venue.close();
    });
  }

  it('a level a user emptied stays empty across a restart until the capture sets it again', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-resume-'));
    dirs.push(dir);
    const clock = new ManualClock(5_000);
    const first = await open(dir, clock);
    await settle();
    await first.venue.submit(ioc('buy', '0.6', '50')); // all of the 0.60 ask
    expect(first.venue.book(A)!.asks).toEqual([]);
    first.venue.capture!.stop();
    const second = await open(dir, clock); // no close: kill -9
    await settle();
    expect(second.venue.book(A)).toMatchObject({ asks: [], lastTradePrice: '0.55' });
    clock.advance(1_000);
    second.venue.capture!.step();
    await settle();
    expect(second.venue.book(A)!.asks).toEqual([{ price: '0.7', size: '40' }]);
    await second.venue.close();
  });

  it("levels made from the rows' best_bid / best_ask resume as left (taken synthetic touch stays taken)", async () => {
    const HEADER =
      'event_slug,timestamp_ms,timestamp_iso,timestamp_est,event_type,price,size,size_change,side,best_bid,' +
      'best_ask,token_id,is_winning_token,outcome,time_since_ticker_change_ms,ticker_changed_recently,' +
      'old_tick_size,new_tick_size,market_resolved,error_message';
    const row = (ms: number, type: string, price: string, size: string, bid: string, ask: string, token = A) =>
      [
        'q',
        ms,
        '',
        '',
        type,
        price,
        size,
        '',
        '',
        bid,
        ask,
        token,
        'false',
        token === A ? 'Up' : 'Down',
        '',
        'false',
        '',
        '',
        'false',
        '',
      ].join(',');
    const { events } = parseCapture(
      [
        HEADER,
        row(T0 - 1, 'market_open', '', '', '', '', B),
        row(T0, 'ask', '0.99', '5000', '0.93', '0.95'),
        row(T0 + 1000, 'ask', '0.99', '4000', '0.94', '0.96'),
        row(T0 + 2000, 'bid', '0.9', '30', '0.95', '0.97'),
      ].join('\n'),
    );
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-resume-'));
    dirs.push(dir);
    const clock = new ManualClock(5_000);
    const first = await open(dir, clock, events);
    await settle();
    expect(first.venue.book(A)).toMatchObject({
      bids: [{ price: '0.93', size: '100' }],
      asks: [
        { price: '0.95', size: '100' },
        { price: '0.99', size: '5000' },
      ],
    });
    clock.advance(1_000);
    first.venue.capture!.step();
    await settle();
    await first.venue.submit(ioc('buy', '0.96', '30')); // 30 of the synthetic ask at 0.96
    const left = {
      bids: [{ price: '0.94', size: '100' }],
      asks: [
        { price: '0.96', size: '70' },
        { price: '0.99', size: '4000' },
      ],
    };
    expect(first.venue.book(A)).toMatchObject(left);
    first.venue.capture!.stop();
    const second = await open(dir, clock, events); // no close: kill -9
    await settle();
    expect(second.venue.book(A)).toMatchObject(left);
    clock.advance(1_000);
    second.venue.capture!.step();
    await settle();
    expect(second.venue.book(A)).toMatchObject({
      bids: [
        { price: '0.95', size: '100' },
        { price: '0.9', size: '30' },
      ],
      asks: [
        { price: '0.97', size: '100' },
        { price: '0.99', size: '4000' },
      ],
    });
    await second.venue.close();
  });
});
