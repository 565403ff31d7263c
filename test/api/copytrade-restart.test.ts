import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { REORDER_SECONDS, type CopytradeContext } from '../../machines/copytrade.js';
import { TradeHistory } from '../../engine/data/history.js';
import type { ReplayStart } from '../../engine/data/records.js';
import { SqliteStore } from '../../engine/store/sqlite.js';
import { startTestService, type TestService } from '../helpers.js';
import { poll, copyEveryFill, recordLeaderBuy } from './trading-kit.js';

const LEADER = '0x' + '4d'.repeat(20);
const env = { SIM_MAKER_REFILL_MS: '3600000' };
const as = { headers: { 'x-partner-user-id': 'follower' } };

/** A buy of one share of `tokenId` by {@link LEADER} at chain second `block`, recorded through the trade history. */
const leaderBuy = (svc: TestService, n: number, tokenId: string, conditionId: string, block: number) =>
  recordLeaderBuy(svc, LEADER, n, { tokenId, conditionId }, block);

/**
 * A restart with a live subscription replays the trade history to it only from its watermark less
 * the reorder window: the leader's older fills are not read again, and none is delivered twice.
 */
describe('copytrade: the start-up replay begins at the subscriptions’ watermarks', () => {
  let dir: string;
  let svc: TestService | undefined;
  afterAll(async () => {
    vi.restoreAllMocks();
    await svc?.close();
    if (dir) await fs.rm(dir, { recursive: true, force: true });
  });

  it('a restart reads no leader fill older than watermark − REORDER_SECONDS', { timeout: 60_000 }, async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-copytrade-restart-'));
    svc = await startTestService({ store: await SqliteStore.open(dir), env });
    const m = svc.services.venue.markets()[0]!;
    const { tokenId } = m.tokens[0]!;
    const now = Math.floor(Date.now() / 1000);
    // the leader's history before the subscription: hours old
    for (let n = 1; n <= 5; n++) await leaderBuy(svc, n, tokenId, m.conditionId, now - 6 * 3600 + n);
    expect((await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'follower' } })).status).toBe(201);
    const sub = await svc.call('POST', '/v2/trade/copytrade', {
      ...as,
      body: copyEveryFill(LEADER, 1),
    });
    expect(sub.status).toBe(201);
    await leaderBuy(svc, 6, tokenId, m.conditionId, now + 2);
    const history = () => svc!.call('GET', `/v2/trade/copytrade/history?copytrade_id=${sub.body.id}`, as);
    await poll('the new leader fill handled', history, (r) => r.body.history.length === 1);
    await svc.services.copytrade.idle();
    const watermark = (svc.services.host.snapshotOf(sub.body.id)?.context as CopytradeContext).watermark!;
    expect(watermark.blockTimestamp).toBe(now + 2);
    await svc.close();

    // every replay of the restart, the fills it handed, and whether the copytrade start-up asked for it
    const calls: { from?: ReplayStart; blocks: number[]; copytrade: boolean }[] = [];
    const replay = TradeHistory.prototype.replay;
    vi.spyOn(TradeHistory.prototype, 'replay').mockImplementation(function (this: TradeHistory, visit, size, from) {
      const call = { from, blocks: [] as number[], copytrade: /CopytradeService\.start/.test(new Error().stack ?? '') };
      calls.push(call);
      return replay.call(
        this,
        (b) => {
          call.blocks.push(...b.fills.map((f) => f.blockTimestamp));
          return visit(b);
        },
        size,
        from,
      );
    });
    svc = await startTestService({ store: await SqliteStore.open(dir), env });
    await svc.services.copytrade.idle();
    const mine = calls.filter((c) => c.copytrade);
    expect(mine.map((c) => c.from)).toEqual([{ fromBlockTimestamp: now + 2 - REORDER_SECONDS }]);
    // the window's fills only (the leader's new one, the copy's own): none of the leader's older ones
    expect(mine[0]!.blocks).toContain(now + 2);
    expect(mine[0]!.blocks.filter((b) => b < now + 2 - REORDER_SECONDS)).toEqual([]);
    // the older fills are in the store; the new one is still delivered once
    const fills = await svc.services.history.fills.find({ address: LEADER });
    expect(fills.length).toBe(6);
    const after = await history();
    expect([after.status, after.body.history.length]).toEqual([200, 1]);
  });
});
