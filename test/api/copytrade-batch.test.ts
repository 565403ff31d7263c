import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BATCH_COMMIT_ATTEMPTS } from '../../engine/actor-host.js';
import { COPYTRADE_HISTORY, DELIVERY_ATTEMPTS } from '../../engine/copytrade/service.js';
import type { TraderFill } from '../../engine/data/records.js';
import { SqliteStore } from '../../engine/store/sqlite.js';
import { copyOrderId, type CopyHistoryEntry, type CopytradeContext } from '../../machines/copytrade.js';
import { FaultyStore } from '../engine/store/faulty-store.js';
import { startTestService, type TestService } from '../helpers.js';
import { copyEveryFill, leaderBuy, poll, recordLeaderBuy } from './trading-kit.js';

const LEADER = '0x' + '7a'.repeat(20);
const env = { SIM_MAKER_REFILL_MS: '3600000' };
const as = (u: string) => ({ headers: { 'x-partner-user-id': u } });

/** Creates `users` (partner user ids) and a subscription of each to LEADER; returns the subscription ids. */
async function follow(svc: TestService, users: string[], body: (u: string) => Record<string, unknown>) {
  const ids: string[] = [];
  for (const u of users) {
    expect((await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: u } })).status).toBe(201);
    const sub = await svc.call('POST', '/v2/trade/copytrade', { ...as(u), body: body(u) });
    expect(sub.status).toBe(200);
    ids.push(sub.body.id);
  }
  return ids;
}

/** LEADER's fill 1 (a buy of the first market's first token) recorded in the trade history. */
function leaderBuyOnFirstMarket(svc: TestService, over: Partial<TraderFill> = {}) {
  const m = svc.services.venue.markets()[0]!;
  const market = { conditionId: m.conditionId, tokenId: m.tokens[0]!.tokenId };
  return recordLeaderBuy(svc, LEADER, 1, market, Math.floor(Date.now() / 1000) + 2, over);
}

/** The history of one follower's subscription, over HTTP. */
async function historyOf(svc: TestService, u: string, id: string) {
  const h = await svc.call('GET', `/v2/trade/copytrade/history?copytrade_id=${id}`, as(u));
  expect(h.status).toBe(200);
  return h.body.history as Record<string, any>[];
}

/**
 * Follower `u` subscribed to LEADER, and LEADER's fill 1 whose copy the venue took while its records
 * failed on every try of the batch and of the one-by-one fallback (the next round of tries is
 * seconds away). `svc` runs on `faulty`.
 */
async function copyLeftUnrecorded(svc: TestService, faulty: FaultyStore, u: string) {
  const [id] = await follow(svc, [u], () => copyEveryFill(LEADER, 1));
  const rule = faulty.failWhen(
    (i) => i.collection === COPYTRADE_HISTORY && i.op === 'replaceOne' && String(i.doc?._id).startsWith(id!),
    { when: 'after', times: BATCH_COMMIT_ATTEMPTS + DELIVERY_ATTEMPTS },
  );
  const fill = await leaderBuyOnFirstMarket(svc, { size: '4', notionalUsd: '2' });
  await poll(
    'the tries',
    async () => rule.hits.length,
    (n) => n >= BATCH_COMMIT_ATTEMPTS + DELIVERY_ATTEMPTS,
  );
  return { id: id!, fill };
}

/**
 * Follower `u` of the leader, whose subscription's history row of the leader's first buy fails to be
 * written (`times` times, else always), that first buy recorded (its copy goes to the venue, its
 * records fail); `recordSecond` records a second buy 200 chain seconds later (past the reorder
 * window: the watermark moves past the first).
 */
async function firstFillRecordsFailing(svc: TestService, faulty: FaultyStore, u: string, times?: number) {
  const [id] = await follow(svc, [u], () => copyEveryFill(LEADER, 1));
  const m = svc.services.venue.markets()[0]!;
  const market = { conditionId: m.conditionId, tokenId: m.tokens[0]!.tokenId };
  const block = Math.floor(Date.now() / 1000) + 2;
  const buy = { size: '4', notionalUsd: '2' };
  const first = leaderBuy(LEADER, 1, market, block, buy);
  const rule = faulty.failWhen(
    (i) =>
      i.collection === COPYTRADE_HISTORY && i.op === 'replaceOne' && i.doc?._id === `${id}:${first.transactionHash}:1`,
    times === undefined ? { when: 'after' } : { when: 'after', times },
  );
  await recordLeaderBuy(svc, LEADER, 1, market, block, buy);
  return {
    id: id!,
    first,
    rule,
    recordSecond: () => recordLeaderBuy(svc, LEADER, 2, market, block + 200, buy),
  };
}

/**
 * Follower `u`'s copy of `fill` for subscription `id`, taken by the venue before its records (a
 * wallet of 1.5 pUSD, $1 copies): COPIED once as decided, its order FILLED over HTTP, paid once.
 */
async function expectOneCopyPaidOnce(svc: TestService, u: string, id: string, fill: TraderFill) {
  const orderId = copyOrderId(id, `${fill.transactionHash}:1`);
  await svc.services.orders.whenQuiet(orderId);
  const h = await historyOf(svc, u, id);
  expect(h, u).toHaveLength(1);
  expect(h[0]).toMatchObject({
    result: 'COPIED',
    reason: null,
    amount: '1',
    order_id: orderId,
    order_status: 'FILLED',
  });
  const order = await svc.call('GET', `/v2/trade/orders/${orderId}`, as(u));
  expect(order).toMatchObject({ status: 200, body: { order_id: orderId, status: 'FILLED' } });
  const sub = await svc.call('GET', `/v2/trade/copytrade/${id}`, as(u));
  expect(sub).toMatchObject({ status: 200, body: { counters: { copies: 1, skipped: 0, working_copies: 0 } } });
  // its $1 paid once (and its fee), out of the 1.5 it had
  const userId = (svc.services.host.snapshotOf(id)!.context as CopytradeContext).userId;
  // its fills in the follower's trade history once each: about the $1 bought (whole shares), no fill twice
  const safe = (await svc.services.users.byId(userId))!.safeAddress;
  const trades = await svc.call('GET', `/v2/trade/traders/${safe}/trades?limit=100`);
  expect(trades.status).toBe(200);
  const rows = trades.body.trades as { trade_id: string; usdc_amount: string }[];
  expect(new Set(rows.map((t) => t.trade_id)).size, u).toBe(rows.length);
  const paid = rows.reduce((s, t) => s + Number(t.usdc_amount), 0);
  expect(paid, u).toBeGreaterThan(0.99);
  expect(paid, u).toBeLessThanOrEqual(1);
  const pusd = Number(svc.services.venue.wallet(userId).pusd.balance);
  expect(pusd, u).toBeGreaterThan(0.4);
  expect(pusd, u).toBeLessThan(0.6);
}

/**
 * The copies of one leader fill are one batch: the copies go to the venue in one operation, then
 * the subscriptions' steps, their history rows and the copies' orders commit in one transaction. A
 * write that fails inside it on every try (here the history row of the batch's last subscription,
 * written and then reported failed) leaves none of the records: the batch is then delivered one
 * subscription at a time, where that failure stays that subscription's (nothing recorded; tried
 * again every few seconds while the service runs, its copy being at the venue; the next start-up
 * finds its copy at the venue and records it, adopted) and the others record the copies the venue
 * took exactly once, their orders answered by the venue.
 */
describe('copytrade: a leader fill copied as one batch is all or none', () => {
  let svc: TestService | undefined;
  const inner = SqliteStore.open(null);
  afterAll(async () => {
    await svc?.close();
    await (await inner).close();
  });

  it(
    'a failure late in the batch leaves nothing of it; each follower gets the fill once',
    { timeout: 90_000 },
    async () => {
      const faulty = new FaultyStore(await inner, { keepOpen: true });
      svc = await startTestService({ store: faulty, env });
      const users = ['b0', 'b1', 'b2'];
      const ids = await follow(svc, users, () => copyEveryFill(LEADER, 1));
      const last = ids[2]!;
      const rule = faulty.failWhen(
        (i) => i.collection === COPYTRADE_HISTORY && i.op === 'replaceOne' && String(i.doc?._id).startsWith(last),
        { when: 'after' },
      );
      const fill = await leaderBuyOnFirstMarket(svc, { size: '4', notionalUsd: '2' });
      // the batch transaction, every try (its earlier writes rolled back), then the tries of the last one alone
      const tries = BATCH_COMMIT_ATTEMPTS + DELIVERY_ATTEMPTS;
      await poll(
        'the tries',
        async () => rule.hits.length,
        (n) => n >= tries,
      );
      expect(rule.hits.length).toBe(tries);
      for (const id of ids.slice(0, 2))
        await svc.services.orders.whenQuiet(copyOrderId(id, `${fill.transactionHash}:1`));

      for (const [i, u] of ['b0', 'b1'].entries()) {
        const h = await historyOf(svc, u, ids[i]!);
        expect(h).toHaveLength(1);
        expect(h[0]).toMatchObject({
          result: 'COPIED',
          order_id: copyOrderId(ids[i]!, `${fill.transactionHash}:1`),
          order_status: expect.not.stringMatching(/^SUBMITTED$/),
          leader_fill: { transaction_hash: fill.transactionHash, log_index: 1 },
        });
      }
      expect(await historyOf(svc, 'b2', last)).toEqual([]);
      const one = await svc.call('GET', `/v2/trade/copytrade/${last}`, as('b2'));
      expect(one).toMatchObject({ status: 200, body: { counters: { copies: 0, skipped: 0, working_copies: 0 } } });
      const orders = await svc.services.actors.find({ kind: 'order' }, { limit: 100 });
      expect(orders.map((o) => o._id).sort()).toEqual(
        ids
          .slice(0, 2)
          .map((id) => copyOrderId(id, `${fill.transactionHash}:1`))
          .sort(),
      );
      for (const o of orders) expect(svc.services.venue.orderState(o._id) ?? o.final).toBeTruthy();
      const stored = (await svc.services.actors.get(last))!;
      expect((svc.services.host.storedSnapshot(stored).context as CopytradeContext).watermark).toBeNull();

      // the restart's replay copies it for the last one, once; the others still have it once
      faulty.clear();
      await svc.close();
      svc = await startTestService({ store: new FaultyStore(await inner, { keepOpen: true }), env });
      await svc.services.copytrade.idle();
      for (const [i, u] of users.entries()) {
        const h = await historyOf(svc, u, ids[i]!);
        expect(h, u).toHaveLength(1);
        expect(h[0]).toMatchObject({
          result: 'COPIED',
          order_status: 'FILLED',
          amount: '1',
          leader_fill: { transaction_hash: fill.transactionHash, log_index: 1 },
        });
        // one copy paid per follower ($1 and its fee out of 10,000): the adopted copy was not placed again
        const userId = (svc.services.host.snapshotOf(ids[i]!)!.context as CopytradeContext).userId;
        const pusd = Number(svc.services.venue.wallet(userId).pusd.balance);
        expect(pusd, u).toBeGreaterThan(9998);
        expect(pusd, u).toBeLessThan(9999.01);
      }
      const rows = await (await (await inner).collection<CopyHistoryEntry>(COPYTRADE_HISTORY)).find({});
      expect(rows.filter((r) => r.kind !== 'realized')).toHaveLength(3);
      expect(await svc.services.actors.find({ kind: 'order' }, { limit: 100 })).toHaveLength(3);
    },
  );
});

/**
 * In one batch each subscription's outcome is its own: a copy the follower cannot pay (SKIP when
 * pUSD is short) is that subscription's skip, a PAUSED subscription records its skip, and the
 * copies beside them are placed and filled, their orders at the venue in one operation (one
 * journal entry for them all), which has started when the batch's `changed` listeners hear of them.
 */
describe('copytrade: one batch, each subscription its own outcome', () => {
  let svc: TestService | undefined;
  afterAll(async () => {
    await svc?.close();
  });

  it(
    'two copies filled in one venue operation, one skipped short of pUSD, one while paused',
    { timeout: 60_000 },
    async () => {
      svc = await startTestService({ env });
      const ids = await follow(svc, ['ok', 'short', 'paused', 'ok2'], (u) =>
        u === 'short'
          ? copyEveryFill(LEADER, 1_000_000, { buy_insufficient_usdc_action: 'SKIP' })
          : u === 'paused'
            ? copyEveryFill(LEADER, 1, { status: 'PAUSED' })
            : copyEveryFill(LEADER, 1),
      );
      const journal = await svc.services.store.collection<{ _id: string }>('venueJournal');
      const before = await journal.count({});
      // the batch's listeners hear of a new copy order once the venue operation holding it has started
      const atCreation = new Map<string, boolean>();
      svc.services.host.on('changed', (c) => {
        if (c.record.kind === 'order' && c.previousStatus === null)
          atCreation.set(c.record._id, svc!.services.venue.orderState(c.record._id) !== null);
      });
      const fill = await leaderBuyOnFirstMarket(svc);
      await svc.services.copytrade.idle();
      const copies = [ids[0]!, ids[3]!].map((id) => copyOrderId(id, `${fill.transactionHash}:1`));
      expect(Object.fromEntries(copies.map((id) => [id, atCreation.get(id)]))).toEqual(
        Object.fromEntries(copies.map((id) => [id, true])),
      );
      const [ok] = await historyOf(svc, 'ok', ids[0]!);
      expect(ok).toMatchObject({ result: 'COPIED', order_status: 'FILLED', leader_fill: { log_index: 1 } });
      const [ok2] = await historyOf(svc, 'ok2', ids[3]!);
      expect(ok2).toMatchObject({ result: 'COPIED', order_status: 'FILLED', leader_fill: { log_index: 1 } });
      const [short] = await historyOf(svc, 'short', ids[1]!);
      expect(short).toMatchObject({
        result: 'SKIPPED',
        reason: 'insufficient_pusd',
        order_id: null,
        leader_fill: { transaction_hash: fill.transactionHash },
      });
      const [paused] = await historyOf(svc, 'paused', ids[2]!);
      expect(paused).toMatchObject({ result: 'SKIPPED', reason: 'paused' });
      expect(await journal.count({})).toBe(before + 1);
    },
  );
});

/**
 * The venue first, the records after: a leader fill's copies are at the venue (durable in its
 * journal) before their records commit. When that commit fails on every try, the one-by-one fallback
 * finds each copy at the venue and records it as the batch decided it (adopted), never deciding
 * again on the wallet that copy spent: a follower whose pUSD paid for exactly one copy keeps that
 * copy, COPIED in history, its order there, and no second order. A copy whose records fail there
 * too is tried again a few seconds later, until recorded (its fill may be out of the start-up
 * replay's window by the next restart).
 */
describe('copytrade: copies at the venue whose records failed are adopted', () => {
  let svc: TestService | undefined;
  afterAll(() => svc?.close());

  it(
    'a failed records transaction: each copy recorded as decided, its order there, none placed twice',
    { timeout: 90_000 },
    async () => {
      const faulty = new FaultyStore(await SqliteStore.open(null));
      svc = await startTestService({ store: faulty, env: { ...env, SIM_INITIAL_PUSD: '1.5' } });
      const users = ['v0', 'v1'];
      const ids = await follow(svc, users, () => copyEveryFill(LEADER, 1));
      const rule = faulty.failWhen(
        (i) => i.collection === COPYTRADE_HISTORY && i.op === 'replaceOne' && String(i.doc?._id).startsWith(ids[1]!),
        { when: 'after', times: BATCH_COMMIT_ATTEMPTS + DELIVERY_ATTEMPTS },
      );
      const fill = await leaderBuyOnFirstMarket(svc, { size: '4', notionalUsd: '2' });
      // v0 recorded by the fallback; v1 failing there too, by the round of tries a few seconds later
      await svc.services.copytrade.idle();
      expect(rule.hits.length).toBe(BATCH_COMMIT_ATTEMPTS + DELIVERY_ATTEMPTS);
      for (const [i, u] of users.entries()) await expectOneCopyPaidOnce(svc, u, ids[i]!, fill);
    },
  );
});

/**
 * `kill -9` between the venue's operation and the records: the files on disk while the records
 * transaction waits on its first history row (the venue's journal entry of the copies committed,
 * none of their records) are what such a crash leaves. A service started on a copy of them replays
 * the fill from the watermarks, finds each copy at the venue and records it, adopted: COPIED once,
 * its order answered by the venue's state, GET /orders/{id} 200, the follower's pUSD paid once.
 */
describe('copytrade: a crash between the venue operation and its records', () => {
  let svc: TestService | undefined;
  let after: TestService | undefined;
  const dirs: string[] = [];
  afterAll(async () => {
    await after?.close();
    await svc?.close();
    for (const d of dirs) await fs.rm(d, { recursive: true, force: true });
  });

  it(
    'the restart adopts each copy the venue took: COPIED once, its order there, paid once',
    { timeout: 90_000 },
    async () => {
      const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-ct-venue-first-'));
      dirs.push(dir);
      const crashed = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-ct-venue-first-crashed-'));
      dirs.push(crashed);
      const cash = { ...env, SIM_INITIAL_PUSD: '1.5' };
      const faulty = new FaultyStore(await SqliteStore.open(dir), { keepOpen: false });
      svc = await startTestService({ store: faulty, env: cash });
      const users = ['k0', 'k1'];
      const ids = await follow(svc, users, () => copyEveryFill(LEADER, 1));
      const hold = faulty.hold({ collections: [COPYTRADE_HISTORY], ops: ['replaceOne'] });
      const fill = await leaderBuyOnFirstMarket(svc, { size: '4', notionalUsd: '2' });
      await poll(
        'the records transaction held at its first history row',
        async () => hold.matched,
        (n) => n > 0,
        15_000,
        2,
      );
      // the venue's operation is durable, the records transaction open: the files are what kill -9 leaves
      for (const f of await fs.readdir(dir))
        if (f.startsWith('store.sqlite') && !f.endsWith('-shm'))
          await fs.copyFile(path.join(dir, f), path.join(crashed, f));
      hold.release(true);
      await svc.services.copytrade.idle();

      after = await startTestService({ store: await SqliteStore.open(crashed, { lock: true }), env: cash });
      await after.services.copytrade.idle();
      for (const [i, u] of users.entries()) await expectOneCopyPaidOnce(after, u, ids[i]!, fill);
    },
  );
});

/**
 * A copy at the venue whose records keep failing while the subscription's later fills are recorded:
 * the later fill moves the watermark past the earlier one by more than the reorder window, so the
 * earlier fill is no longer "new" by the watermark. The copy the venue holds must still be recorded
 * (adopted) by the next round of tries: its order there, COPIED once, paid once.
 */
describe('copytrade: a copy at the venue recorded after a later fill moved the watermark', () => {
  let svc: TestService | undefined;
  afterAll(() => svc?.close());

  it(
    'the unrecorded copy of fill 1 is adopted once its records succeed, after fill 2 (200 s later) was recorded',
    { timeout: 90_000 },
    async () => {
      const faulty = new FaultyStore(await SqliteStore.open(null));
      svc = await startTestService({ store: faulty, env });
      const { id, first, rule, recordSecond } = await firstFillRecordsFailing(
        svc,
        faulty,
        'w0',
        BATCH_COMMIT_ATTEMPTS + DELIVERY_ATTEMPTS,
      );
      await poll(
        'the tries of fill 1',
        async () => rule.hits.length,
        (n) => n >= BATCH_COMMIT_ATTEMPTS + DELIVERY_ATTEMPTS,
      );
      const second = await recordSecond();
      await poll(
        'fill 2 copied',
        async () => (await historyOf(svc!, 'w0', id!)).length,
        (n) => n >= 1,
      );
      // the round of tries a few seconds later records fill 1's copy, adopted
      await poll(
        'fill 1 recorded',
        async () => (await historyOf(svc!, 'w0', id!)).length,
        (n) => n >= 2,
        15_000,
      );
      await svc.services.copytrade.idle();
      const orderIds = [first, second].map((f) => copyOrderId(id!, `${f.transactionHash}:${f.logIndex}`));
      for (const o of orderIds) await svc.services.orders.whenQuiet(o);
      const h = await historyOf(svc, 'w0', id!);
      expect(h.map((r) => [r.result, r.order_id, r.order_status]).sort()).toEqual(
        orderIds.map((o) => ['COPIED', o, 'FILLED']).sort(),
      );
      for (const o of orderIds)
        expect(await svc.call('GET', `/v2/trade/orders/${o}`, as('w0'))).toMatchObject({
          status: 200,
          body: { order_id: o, status: 'FILLED' },
        });
      const sub = await svc.call('GET', `/v2/trade/copytrade/${id}`, as('w0'));
      expect(sub).toMatchObject({ status: 200, body: { counters: { copies: 2, skipped: 0, working_copies: 0 } } });
    },
  );
});

/**
 * A copy at the venue whose records failed, then PATCH makes its subscription a simulation before
 * the next round of tries: the copy the venue took spent real pUSD, so it is recorded as the real
 * copy it is (its order there, FILLED), never as a paper copy that leaves the venue's order unrecorded.
 */
describe('copytrade: a subscription made a simulation while its copy at the venue is unrecorded', () => {
  let svc: TestService | undefined;
  afterAll(() => svc?.close());

  it(
    'the adopted copy stays a real copy: COPIED with its order, FILLED, no paper row',
    { timeout: 90_000 },
    async () => {
      const faulty = new FaultyStore(await SqliteStore.open(null));
      svc = await startTestService({ store: faulty, env });
      const { id, fill } = await copyLeftUnrecorded(svc, faulty, 's0');
      const patched = await svc.call('PATCH', `/v2/trade/copytrade/${id}`, {
        ...as('s0'),
        body: { is_simulation: true },
      });
      expect(patched.status).toBe(200);
      await poll(
        'the copy recorded',
        async () => (await historyOf(svc!, 's0', id!)).length,
        (n) => n >= 1,
      );
      await svc.services.copytrade.idle();
      const orderId = copyOrderId(id!, `${fill.transactionHash}:1`);
      await svc.services.orders.whenQuiet(orderId);
      const h = await historyOf(svc, 's0', id!);
      expect(h).toHaveLength(1);
      expect(h[0]).toMatchObject({ result: 'COPIED', is_simulation: false, order_id: orderId, order_status: 'FILLED' });
      const order = await svc.call('GET', `/v2/trade/orders/${orderId}`, as('s0'));
      expect(order).toMatchObject({ status: 200, body: { order_id: orderId, status: 'FILLED' } });
    },
  );
});

/**
 * A copy at the venue whose records failed until the service stopped, after a later fill (200 chain
 * seconds on) was recorded. The start-up replay reads the leader's fills from the watermark less the
 * reorder window, so it never delivers fill 1 again; the start-up finds the venue's copy order
 * without an order actor, reads its leader fill back from the trade history and records it, adopted
 * (the follower's pUSD spent on it is accounted for: COPIED, its order FILLED).
 */
describe('copytrade: a copy at the venue unrecorded at shutdown, the watermark past it', () => {
  let svc: TestService | undefined;
  const inner = SqliteStore.open(null);
  afterAll(async () => {
    await svc?.close();
    await (await inner).close();
  });

  it('the restart records the copy of fill 1, adopted', { timeout: 90_000 }, async () => {
    const faulty = new FaultyStore(await inner, { keepOpen: true });
    svc = await startTestService({ store: faulty, env });
    const { id, first, recordSecond } = await firstFillRecordsFailing(svc, faulty, 'r0');
    await recordSecond();
    await poll(
      'fill 2 copied',
      async () => (await historyOf(svc!, 'r0', id!)).length,
      (n) => n >= 1,
    );
    faulty.clear();
    await svc.close();
    svc = await startTestService({ store: new FaultyStore(await inner, { keepOpen: true }), env });
    await svc.services.copytrade.idle();
    const orderId = copyOrderId(id!, `${first.transactionHash}:1`);
    await poll(
      'fill 1 recorded',
      async () => (await historyOf(svc!, 'r0', id!)).length,
      (n) => n >= 2,
      10_000,
    );
    const order = await svc.call('GET', `/v2/trade/orders/${orderId}`, as('r0'));
    expect(order).toMatchObject({ status: 200, body: { order_id: orderId, status: 'FILLED' } });
  });
});

/**
 * DELETE of a subscription while its copy at the venue waits for its records (the batch's commit
 * failed; the next round of tries is seconds away): the deleted subscription would take no step, so
 * the DELETE records that copy first: its order 200 FILLED, its history row COPIED, then deleted.
 */
describe('copytrade: DELETE while a copy at the venue waits for its records', () => {
  let svc: TestService | undefined;
  afterAll(() => svc?.close());

  it('the copy the venue took is still recorded: its order 200, its history row', { timeout: 90_000 }, async () => {
    const faulty = new FaultyStore(await SqliteStore.open(null));
    svc = await startTestService({ store: faulty, env });
    const { id, fill } = await copyLeftUnrecorded(svc, faulty, 'd0');
    const del = await svc.call('DELETE', `/v2/trade/copytrade/${id}`, as('d0'));
    expect(del).toMatchObject({ status: 200, body: { ok: true } });
    // past the next round of tries, which finds the subscription gone
    await new Promise((r) => setTimeout(r, 6000));
    await svc.services.copytrade.idle();
    const orderId = copyOrderId(id!, `${fill.transactionHash}:1`);
    const order = await svc.call('GET', `/v2/trade/orders/${orderId}`, as('d0'));
    expect(order).toMatchObject({ status: 200, body: { order_id: orderId, status: 'FILLED' } });
    const h = await historyOf(svc, 'd0', id);
    expect(h).toMatchObject([{ result: 'COPIED', order_id: orderId, order_status: 'FILLED' }]);
    expect((await svc.call('GET', `/v2/trade/copytrade/${id}`, as('d0'))).status).toBe(404);
  });
});
