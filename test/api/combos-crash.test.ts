import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../engine/store/sqlite.js';
import { startTestService, type TestService } from '../helpers.js';
import { checkInvariants, waitIdle } from '../invariants.js';
import { FaultyStore } from '../engine/store/faulty-store.js';
import type { SimVenue } from '../../engine/venue/sim-venue.js';
import { processCaller, spawnService, type ServiceProcess, cleanUpCrashTest } from '../process.js';
import { poll } from './trading-kit.js';

const KEY = 'pts_combo_crash_master_key_0123456789';
const ENV = {
  MASTER_API_KEY: KEY,
  SIM_REPLAY: 'off',
  SIM_CAPTURE: 'off',
  SIM_MAKER_REFILL_MS: '3600000',
  SIM_CONTROL: 'on',
};

/**
 * `kill -9` of a spawned service (SQLite on disk) while combo accepts are in flight: after the
 * restart each combo is executed exactly once or not at all (the venue's pUSD agrees: the invariant
 * check), every accept answered 200 is executed, and a retry with the same Idempotency-Key returns
 * the outcome (the stored answer of an executed one, replayed). And a leg's market resolution that
 * the venue recorded but the combos could not (their steps failing): the restart delivers it.
 */
describe('kill -9 between combo accepts and their answers', () => {
  let dir: string;
  let child: ServiceProcess | null = null;
  let svc: TestService | null = null;
  // both cases share one DATA_DIR: the second starts on what the first left
  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-combo-crash-'));
  });
  afterAll(() => cleanUpCrashTest(child, svc, dir));
  const restart = async () => {
    child!.child.kill('SIGKILL');
    await child!.exited;
    await svc?.close();
    svc = await startTestService({ store: await SqliteStore.open(dir, { lock: true }), env: ENV });
  };

  it('each combo executed once or not at all; the same key returns that outcome', { timeout: 60_000 }, async () => {
    child = await spawnService({ DATA_DIR: dir, ...ENV });
    const call = processCaller(child.baseUrl, KEY, 'dana');
    expect((await call('POST', '/v2/trade/users', { partner_user_id: 'dana' })).status).toBe(201);
    const markets = (await call('GET', '/v2/trade/markets?limit=40')).body.markets as any[];
    const yes = markets.map((m) => m.tokens[0].token_id as string);
    const quotes: any[] = [];
    for (let i = 0; i < 30; i++) {
      const q = await call('POST', '/v2/trade/combo/quote', {
        leg_position_ids: [yes[i % 20]!, yes[20 + (i % 20)]!],
        notional_usd: 1,
      });
      expect(q.status, JSON.stringify(q.body)).toBe(200);
      quotes.push(q.body);
    }
    const keys = quotes.map(() => randomUUID());
    const answered = new Map<string, any>();
    const accepts = quotes.map((q, i) =>
      call('POST', '/v2/trade/combo/accept', { combo_order_id: q.combo_order_id, quote_id: q.quote_id }, keys[i])
        .then((r) => {
          if (r.status === 200) answered.set(q.combo_order_id, r.body);
        })
        .catch(() => undefined),
    );
    await poll(
      '3 accepts answered before the kill',
      async () => answered.size,
      (n) => n >= 3,
      15_000,
      1,
    );
    const killed = restart();
    await Promise.all(accepts);
    await killed;
    expect(answered.size).toBeLessThan(quotes.length); // some were in flight when it died

    const as = { token: KEY, headers: { 'x-partner-user-id': 'dana' } };
    const states = await Promise.all(
      quotes.map(async (q) => (await svc!.call('GET', `/v2/trade/combo/${q.combo_order_id}`, as)).body),
    );
    for (const s of states) expect(['QUOTED', 'EXPIRED', 'OPEN'], s.combo_order_id).toContain(s.status);
    for (const id of answered.keys()) expect(states.find((s) => s.combo_order_id === id)?.status).toBe('OPEN');
    // the retry with the same key: an executed combo replays its answer, the others run now
    for (const [i, q] of quotes.entries()) {
      const r = await svc!.call('POST', '/v2/trade/combo/accept', {
        ...as,
        body: { combo_order_id: q.combo_order_id, quote_id: q.quote_id },
        idempotencyKey: keys[i]!,
      });
      const before = states[i]!;
      if (before.status === 'OPEN') {
        expect(r.status).toBe(200);
        expect(r.body).toEqual({
          combo_order_id: q.combo_order_id,
          status: 'EXECUTED',
          transaction_hash: before.transaction_hash,
        });
        expect(r.headers.get('idempotent-replayed')).toBe('true');
      } else expect([200, 410]).toContain(r.status);
    }
    await checkInvariants(svc!.services);
    await svc!.close();
    svc = null;
  });

  it("a leg's resolution the combos could not record: the restart delivers it to every one", async () => {
    const inner = await SqliteStore.open(null);
    const faulty = new FaultyStore(inner, { keepOpen: true });
    const first = await startTestService({ store: faulty, env: ENV });
    const as = { token: KEY, headers: { 'x-partner-user-id': 'dana' } };
    await first.call('POST', '/v2/trade/users', { token: KEY, body: { partner_user_id: 'dana' } });
    const markets = (await first.call('GET', '/v2/trade/markets?limit=10&offset=100', { token: KEY })).body
      .markets as any[];
    const [shared, ...others] = markets;
    const ids: string[] = [];
    for (const other of others) {
      const q = (
        await first.call('POST', '/v2/trade/combo/quote', {
          ...as,
          body: { leg_position_ids: [shared.tokens[0].token_id, other.tokens[0].token_id], notional_usd: 1 },
        })
      ).body;
      const a = await first.call('POST', '/v2/trade/combo/accept', {
        ...as,
        body: { combo_order_id: q.combo_order_id, quote_id: q.quote_id },
      });
      expect(a.status).toBe(200);
      ids.push(q.combo_order_id);
    }
    // the venue records the shared leg's loss; every combo's step recording it fails
    const lost = faulty.failWhen(
      (i) => i.collection === 'actors' && i.op === 'updateOne' && i.set?.status === 'RESOLVED_LOSS',
      { times: 1_000 },
    );
    await (first.services.venue as SimVenue).resolveMarket(shared.condition_id, shared.tokens[1].token_id);
    await waitIdle(first.services);
    expect(lost.fired).toBe(ids.length);
    for (const id of ids) expect((await first.call('GET', `/v2/trade/combo/${id}`, as)).body.status).toBe('OPEN');
    await first.close();
    svc = await startTestService({ store: inner, env: ENV });
    await waitIdle(svc.services);
    for (const id of ids)
      expect((await svc.call('GET', `/v2/trade/combo/${id}`, as)).body).toMatchObject({
        status: 'RESOLVED_LOSS',
        legs: [{ outcome: 'LOSS' }, { outcome: null }],
      });
    await checkInvariants(svc.services);
  });
});
