import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../engine/clock.js';
import { dec } from '../../../engine/decimal.js';
import { createLogger } from '../../../engine/logger.js';
import { SqliteStore } from '../../../engine/store/sqlite.js';
import type { CaptureEvent } from '../../../engine/venue/capture.js';
import type { VenueOrder, VenueReport } from '../../../engine/venue/port.js';
import { SimVenue } from '../../../engine/venue/sim-venue.js';
import { A, B, binaryCaptureCatalogue, C } from './capture-fixture.js';

let n = 0;
function order(
  userId: string,
  side: 'buy' | 'sell',
  price: string,
  size: string,
  extra: Partial<VenueOrder> = {},
): VenueOrder {
  return {
    orderId: `ord_${++n}`,
    userId,
    tokenId: A,
    side,
    kind: 'limit',
    price,
    size,
    quoteAmount: null,
    timeInForce: 'GTC',
    postOnly: false,
    ...extra,
  };
}

async function openVenue(dir: string | null = null) {
  const store = await SqliteStore.open(dir);
  const venue = await SimVenue.open({
    catalogue: binaryCaptureCatalogue('0.001'),
    store,
    clock: new ManualClock(1_000),
    log: createLogger('silent'),
    initialPusd: '1000',
    liquidityLevels: 0,
    refillMs: 3_600_000,
    replay: false,
    replaySpeed: 1,
    captureReplay: true,
  });
  const reports: VenueReport[] = [];
  const markets: string[] = [];
  venue.onReport((r) => reports.push(r));
  venue.onMarket((c) => markets.push(c));
  return { venue, reports, markets };
}

const level = (side: 'buy' | 'sell', price: string, size: string, tokenId = A): CaptureEvent => ({
  kind: 'level',
  atMs: 1,
  tokenId,
  side,
  price: dec(price),
  size: dec(size),
});

describe('simulated venue: capture levels, tick-size changes, resolution', () => {
  const dirs: string[] = [];
  afterEach(async () => {
    for (const d of dirs.splice(0)) await fs.rm(d, { recursive: true, force: true });
  });

  it('captured levels are the book; taken stays gone until the capture updates it; trades set last price', async () => {
    const { venue } = await openVenue();
    await venue.applyCaptureEvents([
      level('buy', '0.95', '100'),
      level('sell', '0.97', '50'),
      level('sell', '0.98', '70'),
      { kind: 'trade', atMs: 1, tokenId: A, price: dec('0.96') },
    ]);
    expect(venue.book(A)).toMatchObject({
      bids: [{ price: '0.95', size: '100' }],
      asks: [
        { price: '0.97', size: '50' },
        { price: '0.98', size: '70' },
      ],
      lastTradePrice: '0.96',
    });
    await venue.submit(order('u', 'buy', '0.97', '20', { timeInForce: 'IOC' }));
    expect(venue.book(A)!.asks[0]).toEqual({ price: '0.97', size: '30' });
    await venue.applyCaptureEvents([level('sell', '0.98', '75')]); // another level: 0.97 stays taken
    expect(venue.book(A)!.asks).toEqual([
      { price: '0.97', size: '30' },
      { price: '0.98', size: '75' },
    ]);
    await venue.applyCaptureEvents([level('sell', '0.97', '50')]); // the capture updates it: back to its captured size
    expect(venue.book(A)!.asks[0]).toEqual({ price: '0.97', size: '50' });
    await venue.applyCaptureEvents([level('sell', '0.97', '0')]);
    expect(venue.book(A)!.asks).toEqual([{ price: '0.98', size: '75' }]);
    expect(venue.wallet('u').positions).toMatchObject([{ tokenId: A, size: '20' }]);
  });

  it('every captured level tells the book listeners, a new price that replaces and crosses nothing too', async () => {
    const { venue } = await openVenue();
    const changed: string[] = [];
    venue.onBook((t) => changed.push(t));
    await venue.applyCaptureEvents([level('buy', '0.95', '100')]);
    expect(changed).toEqual([A, B]); // the token and its complement, whose book shows it mirrored
    changed.length = 0;
    await venue.applyCaptureEvents([level('sell', '0.97', '50', B)]); // a new price on the complement
    expect(changed.sort()).toEqual([A, B].sort());
    expect(venue.book(A)!.bids.map((l) => l.price)).toEqual(['0.95', '0.03']); // B's ask mirrored
  });

  it('a captured level that crosses a resting user order trades with it', async () => {
    const { venue, reports } = await openVenue();
    const o = order('u', 'buy', '0.9', '10');
    await venue.submit(o);
    await venue.applyCaptureEvents([level('sell', '0.9', '4')]);
    expect(reports.filter((r) => r.type === 'venue.filled' && r.orderId === o.orderId)).toMatchObject([
      { price: '0.9', size: '4', liquidity: 'maker' },
    ]);
    expect(venue.book(A)!.bids).toEqual([{ price: '0.9', size: '6' }]);
  });

  it('tick change: applies at once; resting orders on the new tick stay, the others canceled', async () => {
    const { venue, reports, markets } = await openVenue();
    const onTick = order('u', 'buy', '0.5', '10');
    const offTick = order('u', 'buy', '0.505', '10');
    await venue.submit(onTick);
    await venue.submit(offTick);
    await venue.changeTickSize(A, dec('0.01'));
    expect(markets).toEqual([C]);
    expect(venue.token(A)!.tickSize.toString()).toBe('0.01');
    expect(venue.token(B)!.tickSize.toString()).toBe('0.01');
    expect(venue.markets()[0]!.tickSize.toString()).toBe('0.01');
    expect(venue.orderState(offTick.orderId)).toMatchObject({
      status: 'canceled',
      final: { type: 'venue.canceled', reason: 'tick size changed' },
    });
    expect(venue.orderState(onTick.orderId)!.status).toBe('open');
    expect(venue.book(A)).toMatchObject({ tickSize: '0.01', bids: [{ price: '0.5', size: '10' }] });
    expect(venue.wallet('u').pusd.reserved).toBe('5'); // the canceled order's reservation is released
    const late = order('u', 'buy', '0.515', '10');
    await venue.submit(late);
    expect(reports.find((r) => r.orderId === late.orderId)).toMatchObject({
      type: 'venue.rejected',
      reason: expect.stringMatching(/not on the tick 0.01/),
    });
  });

  it("a split's dollars are shared by the outcomes' marks: the book's mids, the payouts once resolved", async () => {
    const { venue } = await openVenue();
    // A quoted 0.55 / 0.65 (mid 0.6); B has no quote of its own: its touch mirrors A's (mid 0.4)
    await venue.applyCaptureEvents([level('buy', '0.55', '100'), level('sell', '0.65', '100')]);
    const before = await venue.walletOp({ kind: 'split', opId: 's1', userId: 'u', conditionId: C, amount: '10' });
    expect(before.shares.map((x) => [x.tokenId, x.price])).toEqual([
      [A, '0.6'],
      [B, '0.4'],
    ]);
    expect(venue.wallet('u').positions.map((p) => [p.tokenId, p.costUsd])).toEqual([
      [A, '6'],
      [B, '4'],
    ]);
    // resolved for B: the books are gone, the stale last prices do not price it; the payouts do
    expect(await venue.resolveMarket(C, B)).toBe('resolved');
    const after = await venue.walletOp({ kind: 'split', opId: 's2', userId: 'u', conditionId: C, amount: '10' });
    expect(after.shares.map((x) => [x.tokenId, x.price])).toEqual([
      [A, '0'],
      [B, '1'],
    ]);
    expect(venue.wallet('u').positions.map((p) => [p.tokenId, p.costUsd])).toEqual([
      [A, '6'],
      [B, '14'],
    ]);
  });

  it('resolution: resting canceled, new rejected, status resolved; survives kill -9 and a checkpoint', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-market-'));
    dirs.push(dir);
    const { venue, reports, markets } = await openVenue(dir);
    const resting = order('u', 'buy', '0.4', '10');
    await venue.submit(resting);
    await venue.changeTickSize(A, dec('0.01'));
    expect(await venue.resolveMarket(C, A)).toBe('resolved');
    expect(markets).toEqual([C, C]);
    expect(venue.orderState(resting.orderId)).toMatchObject({
      status: 'canceled',
      final: { reason: 'market resolved' },
    });
    expect(venue.wallet('u').pusd).toMatchObject({ balance: '1000', reserved: '0' });
    expect(venue.marketStatus(C)).toMatchObject({
      closed: true,
      resolved: true,
      winningTokenId: A,
      resolvedAtMs: 1_000,
    });
    const late = order('u', 'buy', '0.4', '10', { tokenId: B });
    await venue.submit(late);
    expect(reports.find((r) => r.orderId === late.orderId)).toMatchObject({
      type: 'venue.rejected',
      error: 'market_closed',
    });
    expect(await venue.resolveMarket(C, A)).toBe('already');
    await expect(venue.resolveMarket(C, B)).rejects.toMatchObject({ error: 'conflict' });
    await venue.applyCaptureEvents([level('sell', '0.97', '50')]); // capture levels of a closed market are ignored
    expect(venue.book(A)!.asks).toEqual([]);

    // no close(): as after kill -9, only the journal is there
    const second = await openVenue(dir);
    expect(second.venue.marketStatus(C)).toMatchObject({ closed: true, resolved: true, winningTokenId: A });
    expect(second.venue.token(A)!.tickSize.toString()).toBe('0.01');
    expect(second.venue.orderState(resting.orderId)!.status).toBe('canceled');
    await second.venue.close(); // checkpoint: the market rows move into the checkpoint pointer
    const third = await openVenue(dir);
    expect(third.venue.marketStatus(C)).toMatchObject({ resolved: true, winningTokenId: A });
    expect(third.venue.book(B)!.tickSize).toBe('0.01');
    const again = order('u', 'buy', '0.4', '10');
    await third.venue.submit(again);
    expect(third.reports.find((r) => r.orderId === again.orderId)).toMatchObject({
      type: 'venue.rejected',
      error: 'market_closed',
    });
  });

  it('capture events: tick change and resolution apply from the capture; a resolution is journaled', async () => {
    const { venue, markets } = await openVenue();
    const seller = 's';
    await venue.walletOp({ kind: 'split', opId: 'seed-s', userId: seller, conditionId: C, amount: '10' });
    await venue.applyCaptureEvents([{ kind: 'tick', atMs: 2, tokenId: A, tickSize: dec('0.01') }]);
    expect(venue.book(A)!.tickSize).toBe('0.01');
    // no change: no market event
    await venue.applyCaptureEvents([{ kind: 'tick', atMs: 3, tokenId: A, tickSize: dec('0.01') }]);
    expect(markets).toEqual([C]);
    await venue.applyCaptureEvents([{ kind: 'resolved', atMs: 4, conditionId: C, winningTokenId: B }]);
    expect(venue.marketStatus(C)).toMatchObject({ resolved: true, winningTokenId: B });
    expect(markets).toEqual([C, C]);
  });
});
