import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../engine/store/sqlite.js';
import { startTestService, type TestService } from '../helpers.js';
import { checkInvariants } from '../invariants.js';
import { poll, px, Trading, useTestClock } from './trading-kit.js';

/**
 * Timer-driven behaviour through the real scheduler: Agenda over the store port (SQLite),
 * started by the service, never `host.deliverTimer`. Time is a clock the test controls (only
 * `Date` is faked, see useTestClock): a jump past a deadline lets the scheduler's next real poll
 * (SCHEDULER_POLL_MS = 200 ms in tests) run the due job.
 */
const ENV = { SIM_MAKER_REFILL_MS: '3600000', SIM_INITIAL_PUSD: '1000000' };
const SLICE_MS = 10_000;

describe('timers through the real scheduler (controlled clock)', () => {
  let svc: TestService;
  let clock: ReturnType<typeof useTestClock>;
  const tr = new Trading(() => svc);

  beforeAll(async () => {
    clock = useTestClock();
    svc = await startTestService({ env: ENV });
    await tr.init(['alice', 'bob']);
  });
  afterAll(async () => {
    await svc?.close();
    clock.restore();
  });

  it('TWAPs of 3 and 5 slices, passive and not, buy and sell, run side by side and fill completely', async () => {
    const specs = [3, 5].flatMap((slices) =>
      [false, true].flatMap((passive) => (['buy', 'sell'] as const).map((side) => ({ slices, passive, side }))),
    );
    const size = (n: number) => 20 * n; // 20 shares a slice, above every market's minimum (5)
    // books, shares to sell (alice) and shares to hit passive buys with (bob), before any TWAP starts
    const plans: Array<{
      slices: number;
      passive: boolean;
      side: 'buy' | 'sell';
      token: string;
      body: Record<string, unknown>;
    }> = [];
    for (const s of specs) {
      const f = await tr.freshToken(0.25, 0.6);
      if (s.side === 'sell') await tr.buyShares('alice', f.token, size(s.slices));
      if (s.passive && s.side === 'buy') await tr.buyShares('bob', f.token, size(s.slices));
      const b = await tr.book(f.token);
      const price = s.side === 'buy' ? px(Number(b.asks[0]!.price) + 0.03) : px(Number(b.bids[0]!.price) - 0.03);
      plans.push({
        ...s,
        token: f.token,
        body: {
          symbol: f.token,
          side: s.side,
          type: 'TWAP',
          size: String(size(s.slices)),
          price,
          execution: { interval_sec: 10, duration_sec: 10 * s.slices, ...(s.passive ? { passive: true } : {}) },
        },
      });
    }
    const created = await Promise.all(plans.map((p) => tr.post('alice', p.body)));
    for (const [i, r] of created.entries())
      expect(r, JSON.stringify(plans[i])).toMatchObject({ status: 200, body: { type: 'TWAP', status: 'ACTIVE' } });
    const ids = created.map((r) => r.body.record_id as string);
    const label = (i: number) =>
      `${plans[i]!.slices} slices ${plans[i]!.passive ? 'passive' : 'aggressive'} ${plans[i]!.side}`;
    // bob takes each resting passive slice in full, then the clock jumps to the next slice time
    const takePassives = async () => {
      for (const [i, p] of plans.entries()) if (p.passive) await tr.takeChildren('alice', ids[i]!, 'bob');
      await poll(
        'passive slices filled',
        () => tr.openOrders('alice'),
        (o) => !o.some((x) => ids.includes(x.record_id)),
      );
    };
    for (let step = 1; step < 5; step++) {
      await takePassives();
      await poll(
        `slice ${step} done`,
        () => tr.strategies('alice', ids),
        (all) => all.every((s, i) => s.filled_size === String(size(Math.min(step, plans[i]!.slices)))),
      );
      clock.jump(SLICE_MS);
      const placed = await poll(
        `slice ${step + 1} counted`,
        () => tr.strategies('alice', ids),
        (all) => all.every((s, i) => s.slices_done === Math.min(step + 1, plans[i]!.slices)),
      );
      // the slice's order is placed just after its count is saved: wait for each strategy's newest
      // child order itself to be answered by the venue (a passive one resting, an IOC one done)
      await poll(
        `slice ${step + 1} placed`,
        () => Promise.all(placed.map((s) => tr.orderById('alice', s.order_ids[s.order_ids.length - 1]))),
        (os) => os.every((o) => o.status === 200 && o.body.status !== 'SUBMITTED'),
      );
    }
    await takePassives();
    const done = await poll(
      'all completed',
      () => tr.strategies('alice', ids),
      (all) => all.every((s) => s.status === 'COMPLETED'),
    );
    for (const [i, s] of done.entries()) {
      expect(s, label(i)).toMatchObject({
        status: 'COMPLETED',
        filled_size: String(size(plans[i]!.slices)),
        slices_done: plans[i]!.slices,
        slices_total: plans[i]!.slices,
        message: 'all shares traded',
      });
      expect(s.order_ids, label(i)).toHaveLength(plans[i]!.slices);
    }
    await checkInvariants(svc.services, { acknowledged: tr.acknowledged });
  });

  it('a passive slice rests until the next slice, is canceled there, its rest rolls on; the end cancels', async () => {
    const { token } = await tr.freshToken(0.25, 0.6);
    await tr.buyShares('bob', token, 100);
    const res = await tr.post('alice', {
      symbol: token,
      side: 'buy',
      type: 'TWAP',
      size: '30',
      execution: { interval_sec: 10, duration_sec: 30, passive: true },
    });
    expect(res).toMatchObject({ status: 200, body: { status: 'ACTIVE' } });
    const id = res.body.record_id as string;
    const slices = async () => (await tr.openOrders('alice')).filter((o) => o.record_id === id);
    expect(await slices()).toMatchObject([{ size: '10', status: 'OPEN' }]);
    const first = (await slices())[0].order_id;
    // bob fills 4 of slice 1; at the next slice time it is canceled and 26 are left over 2 slices
    await tr.takeChildren('alice', id, 'bob', () => 4);
    clock.jump(SLICE_MS);
    await poll('slice 2 rests', slices, (o) => o.length === 1 && o[0].order_id !== first);
    expect(await slices()).toMatchObject([{ size: '13', filled_size: '0', status: 'OPEN' }]);
    expect(await tr.order('alice', first)).toMatchObject({ status: 'CANCELED', filled_size: '4', size: '10' });
    // the roll is recorded as the strategy's, not as the user's
    expect(await tr.orderById('alice', first)).toMatchObject({
      status: 200,
      body: {
        status: 'CANCELED',
        record_id: id,
        cancel_code: 'SLICE_ROLLED',
        cancel_reason: `TWAP ${id}: next slice time: the slice's unfilled part rolls into the next slice`,
        message: `TWAP ${id}: next slice time: the slice's unfilled part rolls into the next slice`,
      },
    });
    expect(await tr.strategy('alice', id)).toMatchObject({ status: 'ACTIVE', slices_done: 2, filled_size: '4' });
    // slice 2 untouched: rolls on whole → slice 3 is the rest, 26
    clock.jump(SLICE_MS);
    await poll('slice 3 rests', slices, (o) => o.length === 1 && o[0].size === '26');
    // bob fills 6 of the last slice; the end time cancels it: COMPLETED with what traded
    await tr.takeChildren('alice', id, 'bob', () => 6);
    clock.jump(SLICE_MS);
    const s = await poll(
      'ended',
      () => tr.strategy('alice', id),
      (x) => x.status !== 'ACTIVE',
    );
    expect(s).toMatchObject({ status: 'COMPLETED', filled_size: '10', slices_done: 3, message: 'duration over' });
    expect(await tr.orderById('alice', s.order_ids[s.order_ids.length - 1])).toMatchObject({
      status: 200,
      body: {
        status: 'CANCELED',
        filled_size: '6',
        cancel_code: 'DURATION_OVER',
        cancel_reason: `TWAP ${id}: duration over: the last slice is canceled`,
      },
    });
    expect(await slices()).toEqual([]);
    await checkInvariants(svc.services, { acknowledged: tr.acknowledged });
  });

  it('a GTD order rests OPEN until its expiration, then ends EXPIRED and releases its reservation', async () => {
    const { token, bid } = await tr.freshToken(0.25, 0.6);
    await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'carol' } });
    const before = (await svc.call('GET', '/v2/trade/balances', { headers: tr.as('carol') })).body;
    const expiration = Date.now() + 60_000;
    const res = await tr.post('carol', {
      symbol: token,
      side: 'buy',
      type: 'LIMIT',
      price: px(bid - 0.05),
      size: '10',
      expiration,
    });
    expect(res).toMatchObject({ status: 200, body: { status: 'OPEN', time_in_force: 'GTD', expiration } });
    expect((await svc.call('GET', '/v2/trade/balances', { headers: tr.as('carol') })).body.reserved).not.toBe(
      before.reserved,
    );
    clock.jump(30_000);
    await new Promise((r) => setTimeout(r, 600)); // three scheduler polls: nothing is due yet
    expect(await tr.order('carol', res.body.order_id)).toMatchObject({ status: 'OPEN' });
    clock.jump(31_000);
    await poll(
      'expired',
      () => tr.order('carol', res.body.order_id),
      (o) => o.status === 'EXPIRED',
    );
    expect(await tr.orderById('carol', res.body.order_id)).toMatchObject({
      status: 200,
      body: { status: 'EXPIRED', cancel_code: 'EXPIRED', cancel_reason: 'expired', message: 'expired' },
    });
    expect((await svc.call('GET', '/v2/trade/balances', { headers: tr.as('carol') })).body).toEqual(before);
    await checkInvariants(svc.services, { acknowledged: tr.acknowledged });
  });
});

describe('a TWAP survives a restart mid-way and finishes through the real scheduler', () => {
  let dir: string;
  let svc: TestService | null = null;
  let clock: ReturnType<typeof useTestClock>;
  beforeAll(() => {
    clock = useTestClock();
  });
  afterAll(async () => {
    await svc?.close();
    clock.restore();
    if (dir) await fs.rm(dir, { recursive: true, force: true });
  });

  it('3 of 5 slices before the stop, 2 after the restart (one due while down); COMPLETED in full', async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-timers-'));
    svc = await startTestService({ store: await SqliteStore.open(dir), env: ENV });
    const tr = await new Trading(() => svc!).init(['alice']);
    const { token, ask } = await tr.freshToken(0.25, 0.6);
    const res = await tr.post('alice', {
      symbol: token,
      side: 'buy',
      type: 'TWAP',
      size: '50',
      price: px(ask + 0.03),
      execution: { interval_sec: 10, duration_sec: 50 },
    });
    expect(res).toMatchObject({ status: 200, body: { status: 'ACTIVE', filled_size: '10' } });
    const id = res.body.record_id as string;
    for (const k of [2, 3]) {
      clock.jump(SLICE_MS);
      await poll(
        `slice ${k}`,
        () => tr.strategy('alice', id),
        (s) => s.slices_done === k && s.filled_size === String(10 * k),
      );
    }
    await svc.close();
    svc = null;
    clock.jump(SLICE_MS); // slice 4 comes due while the service is down
    svc = await startTestService({ store: await SqliteStore.open(dir), env: ENV });
    const again = new Trading(() => svc!);
    await poll(
      'slice 4 (due while down) placed at start',
      () => again.strategy('alice', id),
      (s) => s.slices_done === 4 && s.filled_size === '40',
    );
    clock.jump(SLICE_MS);
    const s = await poll(
      'completed',
      () => again.strategy('alice', id),
      (x) => x.status === 'COMPLETED',
    );
    expect(s).toMatchObject({
      status: 'COMPLETED',
      filled_size: '50',
      slices_done: 5,
      slices_total: 5,
      message: 'all shares traded',
    });
    expect(s.order_ids).toEqual([1, 2, 3, 4, 5].map((n) => `ord_${id}_${n}`));
    await checkInvariants(svc.services, { acknowledged: [...tr.acknowledged] });
  });
});
