import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { RECENT_FILLS, REORDER_SECONDS, type CopytradeContext } from '../../machines/copytrade.js';
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
    expect(sub.status).toBe(200);
    // after the subscription's creation, however long the set-up took (earlier fills are ignored)
    const fillAt = Math.floor(Date.now() / 1000) + 2;
    await leaderBuy(svc, 6, tokenId, m.conditionId, fillAt);
    const history = () => svc!.call('GET', `/v2/trade/copytrade/history?copytrade_id=${sub.body.id}`, as);
    await poll('the new leader fill handled', history, (r) => r.body.history.length === 1);
    await svc.services.copytrade.idle();
    const watermark = (svc.services.host.snapshotOf(sub.body.id)?.context as CopytradeContext).watermark!;
    expect(watermark.blockTimestamp).toBe(fillAt);
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
    expect(mine.map((c) => c.from)).toEqual([{ fromBlockTimestamp: fillAt - REORDER_SECONDS }]);
    // the window's fills only (the leader's new one, the copy's own): none of the leader's older ones
    expect(mine[0]!.blocks).toContain(fillAt);
    expect(mine[0]!.blocks.filter((b) => b < fillAt - REORDER_SECONDS)).toEqual([]);
    // the older fills are in the store; the new one is still delivered once
    const fills = await svc.services.history.fills.find({ address: LEADER });
    expect(fills.length).toBe(6);
    const after = await history();
    expect([after.status, after.body.history.length]).toEqual([200, 1]);
  });
});

/**
 * A subscription remembers only its last RECENT_FILLS leader fills of the reorder window: a fill
 * older than those (recorded late, or replayed at start-up) is told apart by its history row in
 * the store. A late fill never handled is copied; the restart's replay of the whole window copies
 * none of them again.
 */
describe('copytrade: fills beyond the remembered ones are told apart by their history rows', () => {
  let dir: string;
  let svc: TestService | undefined;
  afterAll(async () => {
    await svc?.close();
    if (dir) await fs.rm(dir, { recursive: true, force: true });
  });

  it(
    'a late fill is copied once; the restart replays the window and copies nothing twice',
    { timeout: 90_000 },
    async () => {
      dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-copytrade-recent-'));
      svc = await startTestService({ store: await SqliteStore.open(dir), env });
      const m = svc.services.venue.markets()[0]!;
      const { tokenId } = m.tokens[0]!;
      expect((await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'follower' } })).status).toBe(201);
      const sub = await svc.call('POST', '/v2/trade/copytrade', { ...as, body: copyEveryFill(LEADER, 1) });
      expect(sub.status).toBe(200);
      const id = sub.body.id as string;
      // after the subscription's creation, however long the set-up took (earlier fills are ignored)
      const now = Math.floor(Date.now() / 1000);
      const history = async () => {
        const r = await svc!.call('GET', `/v2/trade/copytrade/history?copytrade_id=${id}&limit=100`, as);
        expect(r.status).toBe(200);
        return r.body.history as { leader_fill: { transaction_hash: string; log_index: number } }[];
      };
      const count = RECENT_FILLS + 4;
      for (let n = 1; n <= count; n++) await leaderBuy(svc, n, tokenId, m.conditionId, now + 1 + n);
      await poll(
        'every leader fill handled',
        () => history(),
        (h) => h.length === count,
      );
      await svc.services.copytrade.idle();
      const c = svc.services.host.snapshotOf(id)!.context as CopytradeContext;
      expect(c.recent).toHaveLength(RECENT_FILLS);
      expect(c.recentCapped).toBe(now + 1 + (count - RECENT_FILLS));

      // recorded late: before the watermark, within the window, of a block `recent` no longer covers
      const late = await leaderBuy(svc, 100, tokenId, m.conditionId, now + 3);
      await poll(
        'the late fill handled',
        () => history(),
        (h) => h.length === count + 1,
      );
      await svc.services.copytrade.idle();
      const keys = (h: Awaited<ReturnType<typeof history>>) =>
        h.map((r) => `${r.leader_fill.transaction_hash}:${r.leader_fill.log_index}`).sort();
      const before = keys(await history());
      expect(before).toContain(`${late.transactionHash}:100`);
      expect(new Set(before).size).toBe(count + 1);
      // each fill counted once, as a copy or a skip
      const counted = async () => {
        const one = await svc!.call('GET', `/v2/trade/copytrade/${id}`, as);
        expect(one.status).toBe(200);
        return one.body.counters.copies + one.body.counters.skipped;
      };
      expect(await counted()).toBe(count + 1);
      await svc.close();

      svc = await startTestService({ store: await SqliteStore.open(dir), env });
      await svc.services.copytrade.idle();
      expect(keys(await history())).toEqual(before);
      expect(await counted()).toBe(count + 1);
      const orders = await svc.services.actors.find({ kind: 'order' }, { limit: 1000 });
      const copied = (await history()).filter((r) => (r as { result?: string }).result === 'COPIED').length;
      expect(orders.filter((o) => o._id.startsWith(`ord_${id}_`))).toHaveLength(copied);
    },
  );
});
