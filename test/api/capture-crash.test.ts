import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { TRADES, type TapeTrade } from '../../engine/data/records.js';
import { SqliteStore } from '../../engine/store/sqlite.js';
import { loadCatalogue } from '../../engine/venue/markets.js';
import type { SimVenue } from '../../engine/venue/sim-venue.js';
import { startTestService, type TestService } from '../helpers.js';
import { processCaller, spawnService, type ServiceProcess, cleanUpCrashTest } from '../process.js';
import { poll } from './trading-kit.js';

const KEY = 'pts_capture_crash_master_key_0123456789';

/**
 * `kill -9` while the capture replay runs ahead of the disk: the replay applies up to its window
 * of batches in memory while the earlier ones' commits are being synced, so the process dies with
 * batches applied that were never durable. The restart resumes at the journaled position (the
 * last durable batch's `next`) and, replayed to the end, every trade print of the capture is on
 * the tape exactly once (none skipped, none twice) and every market resolved with its winner.
 */
describe('kill -9 during the capture replay (SQLite on disk)', () => {
  const capture = loadCatalogue().capture!;
  let dir = '';
  let child: ServiceProcess | null = null;
  let svc: TestService | null = null;
  afterAll(() => cleanUpCrashTest(child, svc, dir));

  it('resumes at the durable position; nothing applied twice or skipped', { timeout: 60_000 }, async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-capture-crash-'));
    // the 6.5 hours of capture in about 2.3 s: thousands of events due each 250 ms tick, so the
    // replay applies several batches per tick, up to its window ahead of the disk
    child = await spawnService({
      DATA_DIR: dir,
      MASTER_API_KEY: KEY,
      SIM_REPLAY: 'off',
      SIM_CAPTURE: 'on',
      SIM_CAPTURE_SPEED: '10000',
    });
    const call = processCaller(child.baseUrl, KEY, 'watcher');
    const resolvedNow = async () =>
      ((await call('GET', '/v2/trade/markets?limit=500&offset=1001')).body.markets as { resolved: boolean }[]).filter(
        (m) => m.resolved,
      ).length;
    const resolvedTotal = capture.events.filter((e) => e.kind === 'resolved').length;
    const seen = await poll('5 markets resolved by the replay before the kill', resolvedNow, (n) => n >= 5, 15_000, 5);
    child.child.kill('SIGKILL');
    await child.exited;
    expect(seen).toBeLessThan(resolvedTotal); // killed mid-replay

    // SIM_CAPTURE_SPEED 1: capture time barely moves, so the replay stays where the journal says
    svc = await startTestService({
      store: await SqliteStore.open(dir, { lock: true }),
      env: { MASTER_API_KEY: KEY, SIM_REPLAY: 'off', SIM_CAPTURE: 'on', SIM_CAPTURE_SPEED: '1' },
    });
    const venue = svc.services.venue as SimVenue;
    const replay = venue.capture!;
    replay.stop();
    const resumedAt = replay.applied;
    expect(resumedAt).toBeGreaterThan(0);
    expect(resumedAt).toBeLessThan(capture.events.length);
    // (prints of batches past it may be on the tape already: they are written beside their
    // journal entry, named by their capture index, and the same rows are written again below)
    const tape = await svc.services.store.collection<TapeTrade>(TRADES);
    const index = (t: TapeTrade) => Number(t._id.slice('capture:'.length));

    await replay.runToEnd(500);
    await venue.whenWritten();
    const expected = capture.events.flatMap((e, i) => (e.kind === 'trade' && e.size?.gt(0) ? [i] : []));
    const all = (await tape.find({ source: 'capture' })).map(index).sort((a, b) => a - b);
    expect(all).toEqual(expected);
    const markets = await poll(
      'every capture market resolved',
      async () =>
        (await svc!.call('GET', '/v2/trade/markets?limit=500&offset=1001', { token: KEY })).body.markets as any[],
      (ms) => ms.filter((m) => m.resolved).length === resolvedTotal,
    );
    for (const r of capture.events) {
      if (r.kind !== 'resolved') continue;
      expect(markets.find((m) => m.condition_id === r.conditionId)).toMatchObject({
        resolved: true,
        winning_token_id: r.winningTokenId,
      });
    }
  });
});
