import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lastDueDay } from '../../engine/data/statements.js';
import { Dec } from '../../engine/decimal.js';
import { SqliteStore } from '../../engine/store/sqlite.js';
import { loadCatalogue } from '../../engine/venue/markets.js';
import type { SimVenue } from '../../engine/venue/sim-venue.js';
import { startTestService, type TestService } from '../helpers.js';
import { poll } from './trading-kit.js';

/**
 * The capture replay through the real service: SIM_CAPTURE=on with the fastest replay clock
 * (SIM_CAPTURE_SPEED=1000000: the 6.5 hours of capture in about 25 ms of real time, applied on the
 * replay's 250 ms tick). The capture's facts reach REST: resolutions with their winners, tick
 * changes, last trade prints; the replay stops at the end; a restart resumes at the journaled
 * position (here: the end) and keeps what it journaled.
 */
describe('the WebSocket capture replayed on the replay clock (real service)', () => {
  const capture = loadCatalogue().capture!;
  const resolved = capture.events.filter((e) => e.kind === 'resolved');
  let dir: string;
  let svc: TestService;
  const start = async () =>
    startTestService({ store: await SqliteStore.open(dir), env: { SIM_CAPTURE: 'on', SIM_CAPTURE_SPEED: '1000000' } });
  const captureMarkets = async () =>
    (await svc.call('GET', '/v2/trade/markets?limit=500&offset=1001')).body.markets as any[];

  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-capture-'));
    svc = await start();
  });
  afterAll(async () => {
    await svc.close();
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('replays to the end: 104 markets resolved, captured ticks and last trades applied; orders there 422', async () => {
    const markets = await poll(
      'capture replayed',
      captureMarkets,
      (ms) => ms.filter((m) => m.resolved).length === resolved.length,
    );
    expect((svc.services.venue as SimVenue).capture!.done).toBe(true);
    for (const r of resolved) {
      if (r.kind !== 'resolved') continue;
      expect(markets.find((m) => m.condition_id === r.conditionId)).toMatchObject({
        closed: true,
        resolved: true,
        winning_token_id: r.winningTokenId,
      });
    }
    const ticked = new Set(
      capture.events.filter((e) => e.kind === 'tick').map((e) => (e as { tokenId: string }).tokenId),
    );
    const withTick = markets.filter((m) => m.tokens.some((t: any) => ticked.has(t.token_id)));
    expect(withTick.length).toBeGreaterThan(0);
    for (const m of withTick) expect(m.tick_size).toBe('0.001');
    expect(markets.some((m) => m.tokens.some((t: any) => t.last_trade_price !== null))).toBe(true);
    const open = markets.filter((m) => !m.resolved);
    expect(open).toHaveLength(112 - resolved.length);
    await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'carol' } });
    const closed = markets.find((m) => m.resolved)!;
    const r = await svc.call('POST', '/v2/trade/order', {
      body: { symbol: closed.tokens[0].token_id, side: 'buy', type: 'LIMIT', price: '0.5', size: '10' },
      headers: { 'x-partner-user-id': 'carol' },
    });
    expect(r).toMatchObject({ status: 422, body: { error: 'MARKET_CLOSED' } });
    // an open market's book is the captured levels (no ladder of the liquidity provider), near 0.99 on
    // the recorded token; the other token's book shows them mirrored (complementary matching)
    const mirrored = (levels: { price: string; size: string }[]) =>
      levels.map((l) => ({ price: new Dec(1).minus(l.price).toFixed(), size: l.size }));
    let withLevels = 0;
    for (const m of open) {
      const [a, b] = await Promise.all(
        m.tokens.map(async (t: any) => (await svc.call('GET', `/v2/trade/book?token_id=${t.token_id}`)).body),
      );
      expect(b.bids).toEqual(mirrored(a.asks));
      expect(b.asks).toEqual(mirrored(a.bids));
      for (const l of [...a.bids, ...a.asks, ...b.bids, ...b.asks])
        expect(Number(l.price) >= 0.9 || Number(l.price) <= 0.1, l.price).toBe(true);
      if (a.bids.length + a.asks.length) withLevels++;
    }
    expect(withLevels).toBeGreaterThan(0);
  });

  it('a restart resumes at the journaled position (the end): state stays, nothing resolves twice', async () => {
    const before = await captureMarkets();
    await svc.close();
    svc = await start();
    const replay = (svc.services.venue as SimVenue).capture!;
    expect(replay.done).toBe(true);
    const after = await captureMarkets();
    const view = (ms: any[]) =>
      ms.map((m) => [
        m.condition_id,
        m.resolved,
        m.winning_token_id,
        m.tick_size,
        m.resolved_at,
        m.tokens.map((t: any) => t.last_trade_price),
      ]);
    expect(view(after)).toEqual(view(before));
  });
});

describe("a capture batch's trade prints (real service, SQLite on disk)", () => {
  /**
   * A service on a fresh SQLite folder with the capture replay stopped (SIM_CAPTURE_SPEED 1: the
   * capture clock barely moves; the test applies its batches itself), handed the capture's last
   * market's first token, its start time and the replay's position; closed and removed after.
   */
  async function withStoppedReplay(
    test: (o: {
      svc: TestService;
      store: SqliteStore;
      venue: SimVenue;
      tokenId: string;
      atMs: number;
      from: number;
    }) => Promise<void>,
  ): Promise<void> {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-prints-'));
    const store = await SqliteStore.open(dir);
    const svc = await startTestService({ store, env: { SIM_CAPTURE: 'on', SIM_CAPTURE_SPEED: '1' } });
    try {
      const venue = svc.services.venue as SimVenue;
      venue.capture!.stop();
      await venue.whenWritten();
      // the start's statements run (the loaded real history's days, many transactions) done: while it
      // runs, its transactions hold other writes and would split the batch's commit on a loaded machine
      await poll(
        'statements generated through the last due day',
        async () => svc.services.statements.generatedThrough(),
        (day) => day !== null && day >= lastDueDay(svc.clock.now()),
      );
      const capture = svc.services.catalogue.capture!;
      const tokenId = capture.markets.at(-1)!.tokens[0]!.tokenId;
      await test({ svc, store, venue, tokenId, atMs: capture.startMs, from: venue.capture!.applied });
    } finally {
      await svc.close();
      await fs.rm(dir, { recursive: true, force: true });
    }
  }

  it("are written in the store commit of the batch's journal entry, and are on the tape", () =>
    withStoppedReplay(async ({ svc, store, venue, tokenId, atMs, from }) => {
      // the journal entry (position, chain) and both tape rows: one commit, one fsync of the WAL. A
      // background commit (a scheduler job) can land in the same window, so the batch gets a few tries:
      // written in two commits, every try would count two or more.
      const commitsPerTry: number[] = [];
      for (let attempt = 1; attempt <= 5 && !commitsPerTry.includes(1); attempt++) {
        await venue.whenWritten();
        const before = store.writer.commits;
        await venue.applyCaptureEvents(
          [
            { kind: 'trade', atMs, tokenId, price: new Dec('0.42'), size: new Dec('12.5'), side: 'sell' },
            { kind: 'trade', atMs, tokenId, price: new Dec('0.44'), size: new Dec('2'), side: 'buy' },
          ],
          { next: from + 2 * attempt, recordedMs: atMs },
        );
        commitsPerTry.push(store.writer.commits - before);
      }
      expect(commitsPerTry).toContain(1);
      const tape = await svc.call('GET', `/v2/trade/trades?token_id=${tokenId}&limit=2`);
      expect(tape.status).toBe(200);
      expect(tape.body.trades).toMatchObject([
        { side: 'BUY', price: '0.44', shares: '2', maker: null, taker: null, source: 'capture' },
        { side: 'SELL', price: '0.42', shares: '12.5', maker: null, taker: null, source: 'capture' },
      ]);
    }));

  it("commit at once, without waiting for the group commit's next event-loop turns", () =>
    withStoppedReplay(async ({ svc, store, venue, tokenId, atMs, from }) => {
      // the replay's window of batches waits for this commit: it is not held for other writes to join
      const before = store.writer.commits;
      const done = venue.applyCaptureEvents(
        [{ kind: 'trade', atMs, tokenId, price: new Dec('0.42'), size: new Dec('3'), side: 'sell' }],
        { next: from + 1, recordedMs: atMs },
      );
      for (let i = 0; i < 50; i++) await Promise.resolve(); // microtasks only: no event-loop turn
      expect(store.writer.commits).toBeGreaterThan(before);
      await done;
      const tape = await svc.call('GET', `/v2/trade/trades?token_id=${tokenId}&limit=1`);
      expect(tape).toMatchObject({
        status: 200,
        body: { trades: [{ price: '0.42', shares: '3', source: 'capture' }] },
      });
    }));
});
