import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../engine/store/sqlite.js';
import { FaultyStore } from '../engine/store/faulty-store.js';
import { startTestService, type TestService } from '../helpers.js';

/**
 * An order caught in PENDING_CANCEL by a crash — its `canceling` state recorded, the venue's cancel
 * never recorded — must not stay PENDING_CANCEL across restarts with its pUSD reserved: restoring a
 * snapshot does not re-run the state's entry action. The crash is made deterministic: the first
 * process can record actors but not the venue journal (so the cancel never becomes durable), then a
 * second process starts on the same data.
 */
describe('a cancel caught by a crash is sent again after the restart', () => {
  const inner = SqliteStore.open(null);
  let first: TestService | undefined;
  let second: TestService | undefined;
  afterAll(async () => {
    await second?.close();
  });

  it(
    'PENDING_CANCEL after the restart becomes CANCELED and the reservation is released',
    { timeout: 60_000 },
    async () => {
      const store1 = new FaultyStore(await inner);
      first = await startTestService({ store: store1 });
      const alice = { 'x-partner-user-id': 'alice' };
      await first.call('POST', '/v2/trade/users', { body: { partner_user_id: 'alice' } });
      const token = (await first.call('GET', '/v2/trade/markets?limit=1')).body.markets[0].tokens[0].token_id as string;
      const placed = await first.call('POST', '/v2/trade/order', {
        body: { symbol: token, side: 'buy', type: 'LIMIT', price: '0.01', size: '10' },
        headers: alice,
      });
      expect(placed.status).toBe(200);
      const id = placed.body.order_id as string;

      // from now on the first process cannot record venue operations: its cancel stays in memory only
      store1.failWhen((i) => i.collection === 'venueJournal');
      const pending = first.call('DELETE', `/v2/trade/orders/${id}`, {
        headers: { ...alice, 'idempotency-key': randomUUID() },
      });
      pending.catch(() => undefined);
      // generous deadlines (about 15 s each): other test files load the machine
      for (let i = 0; i < 750; i++) {
        const rec = await (await (await inner).collection('actors')).findOne({ _id: id });
        if ((rec as { status?: string } | null)?.status === 'PENDING_CANCEL') break;
        await new Promise((r) => setTimeout(r, 20));
      }
      // "kill -9": the first process writes nothing more
      store1.failWhen(() => true);

      second = await startTestService({ store: new FaultyStore(await inner) });
      let order = await second.call('GET', `/v2/trade/orders/${id}`, { headers: alice });
      for (let i = 0; i < 750 && order.body.status !== 'CANCELED'; i++) {
        await new Promise((r) => setTimeout(r, 20));
        order = await second.call('GET', `/v2/trade/orders/${id}`, { headers: alice });
      }
      expect(order).toMatchObject({ status: 200, body: { order_id: id, status: 'CANCELED' } });
      expect((await second.call('GET', '/v2/trade/balances', { headers: alice })).body).toMatchObject({
        reserved: '0',
      });
      expect(second.services.venue.orderState(id)?.status ?? 'forgotten').not.toBe('open');
    },
  );
});
