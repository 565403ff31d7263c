import { afterAll, describe, expect, it } from 'vitest';
import { BATCH_COMMIT_ATTEMPTS } from '../../engine/actor-host.js';
import { COPYTRADE_HISTORY, DELIVERY_ATTEMPTS } from '../../engine/copytrade/service.js';
import { SqliteStore } from '../../engine/store/sqlite.js';
import type { CopyHistoryEntry, CopytradeContext } from '../../machines/copytrade.js';
import { FaultyStore } from '../engine/store/faulty-store.js';
import { startTestService, type TestService } from '../helpers.js';
import { copyEveryFill, poll, recordLeaderBuy } from './trading-kit.js';

const LEADER = '0x' + '5e'.repeat(20);
const env = { SIM_MAKER_REFILL_MS: '3600000' };
const as = { headers: { 'x-partner-user-id': 'follower' } };

/**
 * A subscription's step and its history rows commit together: when the rows cannot be written
 * (the write lands, then fails: the transaction is rolled back), nothing of the step stays (no
 * row, no watermark, no counter, no order on record: its copy is at the venue, which takes copies
 * before their records); the next start-up's replay then records the leader fill exactly once
 * (the copy the venue holds, adopted).
 */
describe('copytrade: a step and its history rows are all or none', () => {
  let svc: TestService | undefined;
  const inner = SqliteStore.open(null);
  afterAll(async () => {
    await svc?.close();
    await (await inner).close();
  });

  it('a failed row write leaves nothing; the restart copies the fill once', { timeout: 60_000 }, async () => {
    const faulty = new FaultyStore(await inner, { keepOpen: true });
    svc = await startTestService({ store: faulty, env });
    const m = svc.services.venue.markets()[0]!;
    expect((await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'follower' } })).status).toBe(201);
    const sub = await svc.call('POST', '/v2/trade/copytrade', { ...as, body: copyEveryFill(LEADER, 1) });
    expect(sub.status).toBe(200);
    const id: string = sub.body.id;

    const rule = faulty.failWhen((i) => i.collection === COPYTRADE_HISTORY && i.op === 'replaceOne', {
      when: 'after',
    });
    const block = Math.floor(Date.now() / 1000) + 2;
    const fill = await recordLeaderBuy(
      svc,
      LEADER,
      1,
      { conditionId: m.conditionId, tokenId: m.tokens[0]!.tokenId },
      block,
      {
        size: '4',
        notionalUsd: '2',
      },
    );
    // every try of the batch, then of the subscription alone, failed (another round would follow
    // in a few seconds: its copy is at the venue; the restart below comes first)
    await poll(
      'the tries',
      async () => rule.hits.length,
      (n) => n >= BATCH_COMMIT_ATTEMPTS + DELIVERY_ATTEMPTS,
    );

    // none: no row, no counter, no order, the stored watermark where it was
    const empty = await svc.call('GET', `/v2/trade/copytrade/history?copytrade_id=${id}`, as);
    expect(empty).toMatchObject({ status: 200, body: { history: [] } });
    const one = await svc.call('GET', `/v2/trade/copytrade/${id}`, as);
    expect(one).toMatchObject({ status: 200, body: { counters: { copies: 0, skipped: 0, working_copies: 0 } } });
    const rows = await (await (await inner).collection<CopyHistoryEntry>(COPYTRADE_HISTORY)).find({});
    expect(rows).toEqual([]);
    expect(await svc.services.actors.find({ kind: 'order' }, { limit: 100 })).toEqual([]);
    const stored = (await svc.services.actors.get(id))!;
    expect((svc.services.host.storedSnapshot(stored).context as CopytradeContext).watermark).toBeNull();

    // all: the restart's replay copies it once, its row and its watermark with the step
    faulty.clear();
    await svc.close();
    svc = await startTestService({ store: new FaultyStore(await inner, { keepOpen: true }), env });
    await svc.services.copytrade.idle();
    const history = await svc.call('GET', `/v2/trade/copytrade/history?copytrade_id=${id}`, as);
    expect(history.status).toBe(200);
    expect(history.body.history).toHaveLength(1);
    expect(history.body.history[0]).toMatchObject({
      copytrade_id: id,
      leader_fill: { transaction_hash: fill.transactionHash, log_index: 1 },
    });
    const after = (await svc.call('GET', `/v2/trade/copytrade/${id}`, as)).body.counters;
    expect(after.copies + after.skipped).toBe(1);
    const orders = await svc.services.actors.find({ kind: 'order' }, { limit: 100 });
    expect(orders).toHaveLength(after.copies);
    const ctx = svc.services.host.snapshotOf(id)!.context as CopytradeContext;
    expect(ctx.watermark).toEqual({ blockTimestamp: block, logIndex: 1 });
    expect(ctx.pending).toEqual([]);
  });
});
