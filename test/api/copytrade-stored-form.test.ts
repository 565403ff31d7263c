import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { persistedSnapshotJson, storedSnapshotJson, unpackSnapshot } from '../../engine/actor-host.js';
import { SqliteStore } from '../../engine/store/sqlite.js';
import { COPYTRADE_SNAPSHOT_FORM, copytradeMachine } from '../../machines/copytrade.js';
import { startTestService, type TestService } from '../helpers.js';
import { copyEveryFill, poll, recordLeaderBuy } from './trading-kit.js';

const LEADER = '0x' + '5e'.repeat(20);
const env = { SIM_MAKER_REFILL_MS: '3600000' };
const as = { headers: { 'x-partner-user-id': 'follower' } };
const DEF = { logic: copytradeMachine, plainContext: true, form: COPYTRADE_SNAPSHOT_FORM };

/** JSON of `v` with every object's keys sorted (equality whatever the key order). */
const canonical = (v: unknown): string =>
  JSON.stringify(v, (_k, x: unknown) =>
    x && typeof x === 'object' && !Array.isArray(x)
      ? Object.fromEntries(Object.entries(x as Record<string, unknown>).sort(([a], [b]) => a.localeCompare(b)))
      : x,
  );

/**
 * Subscription snapshots are stored in a compact positional form (machines/copytrade.ts
 * `COPYTRADE_SNAPSHOT_FORM`): every step's snapshot reads back exactly (the copy just decided, its
 * history row, the settings, the ids), in fewer characters; a subscription stored in XState's form
 * (every one before this form) restores, reads the same over HTTP, copies the next leader fill once
 * and is stored in the form after.
 */
describe('copytrade: compact stored form of subscriptions, XState form still restores', () => {
  let dir: string;
  let svc: TestService | undefined;
  afterAll(async () => {
    await svc?.close();
    if (dir) await fs.rm(dir, { recursive: true, force: true });
  });

  it('each step round-trips; a snapshot in XState’s form restores and copies on', { timeout: 60_000 }, async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-copytrade-form-'));
    svc = await startTestService({ store: await SqliteStore.open(dir), env });
    const m = svc.services.venue.markets()[0]!;
    const market = { tokenId: m.tokens[0]!.tokenId, conditionId: m.conditionId };
    // a block after the subscription's creation (a fill before it is not the subscription's)
    const nextBlock = () => Math.ceil(Date.now() / 1000) + 1;
    expect((await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'follower' } })).status).toBe(201);
    const sub = await svc.call('POST', '/v2/trade/copytrade', {
      ...as,
      body: copyEveryFill(LEADER, 1, { buy_max_trade_size: 1000, market_ids_exclude: ['0x' + '00'.repeat(32)] }),
    });
    expect(sub.status, JSON.stringify(sub.body)).toBe(200);
    const id = sub.body.id as string;
    // every step of the subscription: stored in the form, read back to the same context
    const steps: { form: number; xstate: number; same: boolean; working: number }[] = [];
    svc.services.host.on('changed', (c) => {
      if (c.record._id !== id) return;
      const ids = { _id: id, ownerUserId: c.record.ownerUserId, createdAtMs: c.record.createdAtMs };
      const json = storedSnapshotJson(DEF, c.snapshot, ids);
      const back = unpackSnapshot(json, COPYTRADE_SNAPSHOT_FORM, ids);
      steps.push({
        form: json.length,
        xstate: persistedSnapshotJson(copytradeMachine, c.snapshot, true).length,
        same: canonical(back.context) === canonical(c.snapshot.context) && back.value === c.snapshot.value,
        working: (c.snapshot.context as { working: unknown[] }).working.length,
      });
    });
    const history = () => svc!.call('GET', `/v2/trade/copytrade/history?copytrade_id=${id}`, as);
    await recordLeaderBuy(svc, LEADER, 1, market, nextBlock());
    await poll('the first leader fill copied', history, (r) => r.body.history.length === 1);
    await svc.services.copytrade.idle();
    expect(steps.length).toBeGreaterThanOrEqual(2);
    expect(steps.every((s) => s.same)).toBe(true);
    // the step that decided the copy (its working copy and history row): a little over half XState's form
    const decided = steps.find((s) => s.working === 1)!;
    expect(decided.form).toBeLessThan(decided.xstate * 0.6);
    const stored = (await svc.services.actors.get(id))!.snapshot;
    expect(stored.startsWith('[1,')).toBe(true);
    const before = await svc.call('GET', `/v2/trade/copytrade/${id}`, as);
    expect(before).toMatchObject({ status: 200, body: { status: 'ACTIVE', counters: { copies: 1 } } });
    const xstateForm = persistedSnapshotJson(copytradeMachine, svc.services.host.snapshotOf(id)!, true);
    await svc.close();
    svc = undefined;

    // as a version before the form stored it
    const raw = await SqliteStore.open(dir);
    expect(
      await (await raw.collection<{ _id: string }>('actors')).updateOne({ _id: id }, { snapshot: xstateForm }),
    ).toBe(1);
    await raw.close();
    svc = await startTestService({ store: await SqliteStore.open(dir), env });
    await svc.services.copytrade.idle();
    const after = await svc.call('GET', `/v2/trade/copytrade/${id}`, as);
    expect(after.status).toBe(200);
    expect(after.body).toEqual(before.body);
    await recordLeaderBuy(svc, LEADER, 2, market, nextBlock() + 1);
    await poll('the second leader fill copied', history, (r) => r.body.history.length === 2);
    await svc.services.copytrade.idle();
    const rows = (await history()).body.history as { result: string; leader_fill: { log_index: number } }[];
    expect(rows.map((r) => [r.result, r.leader_fill.log_index])).toEqual([
      ['COPIED', 2],
      ['COPIED', 1],
    ]);
    expect((await svc.services.actors.get(id))!.snapshot.startsWith('[1,')).toBe(true);
  });
});
