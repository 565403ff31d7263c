import { afterAll, describe, expect, it } from 'vitest';
import { COPYTRADE_HISTORY } from '../../engine/copytrade/service.js';
import { SqliteStore } from '../../engine/store/sqlite.js';
import type { VenueOrder } from '../../engine/venue/port.js';
import { copyOrderId } from '../../machines/copytrade.js';
import { FaultyStore } from '../engine/store/faulty-store.js';
import { startTestService, type TestService } from '../helpers.js';
import { copyEveryFill, leaderBuy, recordLeaderBuy } from './trading-kit.js';

const LEADER = '0x' + '5c'.repeat(20);
const as = (u: string) => ({ headers: { 'x-partner-user-id': u } });

/**
 * With the simulated venue on SQLite, a leader fill's copies and the venue operation holding them
 * share ONE store commit: the subscriptions' steps, their history rows, the copies' orders and the
 * venue's journal entry commit together (one sync, not two in a row), and the venue's first report
 * of a copy comes only once that commit is made.
 */
describe('copytrade: the copies and their venue operation in one commit', () => {
  let svc: TestService | undefined;
  let store: SqliteStore | undefined;
  afterAll(async () => {
    await svc?.close();
    await store?.close();
  });

  it('one commit from the leader fill to the venue reporting every copy', { timeout: 60_000 }, async () => {
    store = await SqliteStore.open(null);
    svc = await startTestService({ store, env: { SIM_MAKER_REFILL_MS: '3600000' } });
    const s = svc.services;
    const ids: string[] = [];
    for (const u of ['c1', 'c2', 'c3']) {
      expect((await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: u } })).status).toBe(201);
      const sub = await svc.call('POST', '/v2/trade/copytrade', { ...as(u), body: copyEveryFill(LEADER, 1) });
      expect(sub.status).toBe(201);
      ids.push(sub.body.id as string);
    }
    await s.copytrade.idle();
    const m = s.venue.markets()[0]!;
    const market = { conditionId: m.conditionId, tokenId: m.tokens[0]!.tokenId };
    const writer = store.writer;
    let atFill: number | null = null;
    // the copytrade service heard of the fill first (its listener is older): its batch is under way
    s.history.onRecorded(() => {
      atFill ??= writer.commits;
    });
    const atReport = new Map<string, number>();
    s.venue.onReport((r) => {
      if (!atReport.has(r.orderId)) atReport.set(r.orderId, writer.commits);
    });
    const fill = await recordLeaderBuy(svc, LEADER, 1, market, Math.floor(Date.now() / 1000) + 2);
    await s.copytrade.idle();
    const copies = ids.map((id) => copyOrderId(id, `${fill.transactionHash}:1`));
    expect(atFill).not.toBeNull();
    expect(copies.map((id) => atReport.get(id))).toEqual(copies.map(() => atFill! + 1));
    for (const [i, u] of ['c1', 'c2', 'c3'].entries()) {
      const h = await svc.call('GET', `/v2/trade/copytrade/history?copytrade_id=${ids[i]}`, as(u));
      expect(h.status).toBe(200);
      expect(h.body.history).toMatchObject([{ result: 'COPIED', order_id: copies[i], order_status: 'FILLED' }]);
    }
  });
});

/** The venue order of a $1 FOK copy of `userId` on `tokenId` (what the copy's batch submits). */
const copyAtVenue = (orderId: string, userId: string, tokenId: string): VenueOrder => ({
  orderId,
  userId,
  tokenId,
  side: 'buy',
  kind: 'market',
  price: null,
  size: null,
  quoteAmount: '1',
  timeInForce: 'FOK',
  postOnly: false,
});

/**
 * A copy's venue operation runs inside its batch's transaction: when that commit fails after it
 * (an I/O error), the venue holds orders whose records were never kept, and the fill goes on to the
 * one-by-one path with the same order ids. An order the venue knows at its creation gets the
 * venue's answers from what the venue holds (as at start-up), never stays waiting for reports
 * that were already given.
 */
describe('copytrade: a copy whose order the venue already holds', () => {
  let svc: TestService | undefined;
  afterAll(async () => {
    await svc?.close();
  });

  it('is answered from the venue state, filled once', { timeout: 60_000 }, async () => {
    svc = await startTestService({ env: { SIM_MAKER_REFILL_MS: '3600000' } });
    await heldCopyFilled(svc);
  });
});

/**
 * The same through the one-by-one path (the batch failed, here on its history row: its fallback
 * places the copy as a single child order): the order the venue holds is answered from its state.
 */
describe('copytrade: a single child order the venue already holds', () => {
  let svc: TestService | undefined;
  let inner: SqliteStore | undefined;
  afterAll(async () => {
    await svc?.close();
    await inner?.close();
  });

  it('is answered from the venue state, filled once', { timeout: 60_000 }, async () => {
    inner = await SqliteStore.open(null);
    const faulty = new FaultyStore(inner, { keepOpen: true });
    svc = await startTestService({ store: faulty, env: { SIM_MAKER_REFILL_MS: '3600000' } });
    const rule = faulty.failWhen((i) => i.collection === COPYTRADE_HISTORY && i.op === 'replaceOne', { times: 1 });
    await heldCopyFilled(svc);
    expect(rule.hits.length).toBe(1);
  });
});

/**
 * A follower k1 of LEADER whose copy of LEADER's next fill the venue holds (filled) before the fill
 * is recorded; the copy must end FILLED, over HTTP, filled once at the venue.
 */
async function heldCopyFilled(svc: TestService): Promise<void> {
  const s = svc.services;
  expect((await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'k1' } })).status).toBe(201);
  const sub = await svc.call('POST', '/v2/trade/copytrade', { ...as('k1'), body: copyEveryFill(LEADER, 1) });
  expect(sub.status).toBe(201);
  const userId = (await s.users.byPartnerUserId(s.config.partnerId, 'k1'))._id;
  const m = s.venue.markets()[0]!;
  const market = { conditionId: m.conditionId, tokenId: m.tokens[0]!.tokenId };
  const block = Math.floor(Date.now() / 1000) + 2;
  const txHash = leaderBuy(LEADER, 1, market, block).transactionHash;
  const orderId = copyOrderId(sub.body.id as string, `${txHash}:1`);
  // the venue operation of a batch whose commit then failed: the venue holds the copy, filled
  await s.venue.submitMany([copyAtVenue(orderId, userId, market.tokenId)]);
  await recordLeaderBuy(svc, LEADER, 1, market, block);
  await s.copytrade.idle();
  const h = await svc.call('GET', `/v2/trade/copytrade/history?copytrade_id=${sub.body.id}`, as('k1'));
  expect(h.status).toBe(200);
  expect(h.body.history).toMatchObject([{ result: 'COPIED', order_id: orderId, order_status: 'FILLED' }]);
  const o = await svc.call('GET', `/v2/trade/orders/${orderId}`, as('k1'));
  expect(o.status).toBe(200);
  expect(o.body).toMatchObject({ status: 'FILLED' });
  expect(s.venue.orderState(orderId)!.fills).toHaveLength(1);
}
