import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toApiError } from '../../api/errors.js';
import { ManualClock } from '../../engine/clock.js';
import {
  IDEMPOTENCY_LEASE_MS,
  IDEMPOTENCY_TTL_MS,
  IdempotencyService,
  canonicalJson,
  timeOrderedSeed,
} from '../../engine/idempotency.js';
import { createLogger } from '../../engine/logger.js';
import { SQLITE_FILE, SqliteStore } from '../../engine/store/sqlite.js';
import { startTestService, type TestService } from '../helpers.js';

describe('Idempotency-Key (spec 5.6) over REST', () => {
  let svc: TestService;
  let token: string;
  const as = { 'x-partner-user-id': 'idem' };
  const order = (price = '0.05') => ({ symbol: token, side: 'buy', type: 'LIMIT', price, size: '5' });
  const openCount = async () =>
    (await svc.call('GET', '/v2/trade/orders/open?limit=500', { headers: as })).body.total as number;

  beforeAll(async () => {
    svc = await startTestService();
    await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'idem' } });
    const m = await svc.call('GET', '/v2/trade/markets?limit=50');
    token = m.body.markets.find((x: any) => x.tick_size === '0.01').tokens[0].token_id;
  });
  afterAll(() => svc.close());

  it('is required on POST, PATCH and DELETE: missing or not a UUID → 400, nothing done', async () => {
    const before = await openCount();
    const missing = await svc.call('POST', '/v2/trade/order', { body: order(), headers: as, idempotencyKey: null });
    expect(missing).toMatchObject({
      status: 400,
      body: { error: 'invalid_request', message: expect.stringMatching(/Idempotency-Key header is required/) },
    });
    const bad = await svc.call('POST', '/v2/trade/order', { body: order(), headers: as, idempotencyKey: 'retry-1' });
    expect(bad).toMatchObject({
      status: 400,
      body: { error: 'invalid_request', message: expect.stringMatching(/Idempotency-Key must be a UUID/) },
    });
    const del = await svc.call('DELETE', '/v2/trade/orders/ord_x', { headers: as, idempotencyKey: null });
    expect(del.status).toBe(400);
    const users = await svc.call('POST', '/v2/trade/users', {
      body: { partner_user_id: 'nokey' },
      idempotencyKey: null,
    });
    expect(users.status).toBe(400);
    expect(await openCount()).toBe(before);
    // GET needs none
    expect((await svc.call('GET', '/v2/trade/balances', { headers: as })).status).toBe(200);
  });

  it('a retry after a crash before the response was recorded finds what was placed, places nothing', async () => {
    // the crash window: the order is durable, its response was never recorded (the claim of a
    // running request is in memory on SQLite and dies with the process). A strategy has no such
    // window: its answer commits with its creation (test/api/step-answer.test.ts)
    const forget = async () => (await svc.services.store.collection('idempotencyKeys')).deleteMany({});
    const buys = [order('0.04'), { ...order('0.03'), take_profit: { price: '0.5' }, stop_loss: { price: '0.01' } }];
    for (const body of buys) {
      const key = randomUUID();
      const first = await svc.call('POST', '/v2/trade/order', { body, headers: as, idempotencyKey: key });
      expect(first.status).toBe(200);
      await forget();
      const openBefore = await openCount();
      const activityBefore = (await svc.call('GET', '/v2/trade/activity?limit=200', { headers: as })).body.activity
        .length;
      const again = await svc.call('POST', '/v2/trade/order', { body, headers: as, idempotencyKey: key });
      expect(again.status).toBe(200);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.body.order_id).toBe(first.body.order_id);
      expect(again.body.record_id).toBe(first.body.record_id);
      if (first.body.brackets) expect(Object.keys(again.body.brackets)).toEqual(Object.keys(first.body.brackets));
      expect(await openCount()).toBe(openBefore);
      expect((await svc.call('GET', '/v2/trade/activity?limit=200', { headers: as })).body.activity.length).toBe(
        activityBefore,
      );
      // and from then on the stored replay
      const third = await svc.call('POST', '/v2/trade/order', { body, headers: as, idempotencyKey: key });
      expect(third.headers.get('idempotent-replayed')).toBe('true');
      expect(third.body.order_id ?? third.body.record_id).toBe(first.body.order_id ?? first.body.record_id);
    }
  });

  it('a retry after a crash, refused by its checks now (the first holds the funds), answers the first', async () => {
    const headers = { 'x-partner-user-id': 'idem-all-in' };
    await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'idem-all-in' } });
    const usd = Number((await svc.call('GET', '/v2/trade/balances', { headers })).body.available);
    // a resting buy at 0.01 taking every dollar: a second one is refused before it is created
    const body = { symbol: token, side: 'buy', type: 'LIMIT', price: '0.01', size: String(Math.floor(usd / 0.01)) };
    const key = randomUUID();
    const first = await svc.call('POST', '/v2/trade/order', { body, headers, idempotencyKey: key });
    expect(first).toMatchObject({ status: 200, body: { status: 'OPEN' } });
    const other = await svc.call('POST', '/v2/trade/order', { body, headers });
    expect(other).toMatchObject({ status: 422, body: { error: 'INSUFFICIENT_BALANCE' } });
    await (await svc.services.store.collection('idempotencyKeys')).deleteMany({}); // the crash window
    const again = await svc.call('POST', '/v2/trade/order', { body, headers, idempotencyKey: key });
    expect(again).toMatchObject({ status: 200, body: { order_id: first.body.order_id, status: 'OPEN' } });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const open = await svc.call('GET', '/v2/trade/orders/open', { headers });
    expect(open.body.orders.map((o: any) => o.order_id)).toEqual([first.body.order_id]);
  });

  it('a retry of a completed request replays status and body (Idempotent-Replayed), does nothing again', async () => {
    const key = randomUUID();
    const before = await openCount();
    const first = await svc.call('POST', '/v2/trade/order', { body: order(), headers: as, idempotencyKey: key });
    expect(first.status).toBe(200);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    // same body, keys in another order: the same request
    const body = order();
    const reordered = Object.fromEntries(Object.entries(body).reverse());
    const retry = await svc.call('POST', '/v2/trade/order', { body: reordered, headers: as, idempotencyKey: key });
    expect(retry.status).toBe(200);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.body).toEqual(first.body);
    expect(await openCount()).toBe(before + 1);
    // the same holds for DELETE and for user provisioning (201 replayed as 201)
    const delKey = randomUUID();
    const c1 = await svc.call('DELETE', `/v2/trade/orders/${first.body.order_id}`, {
      headers: as,
      idempotencyKey: delKey,
    });
    const c2 = await svc.call('DELETE', `/v2/trade/orders/${first.body.order_id}`, {
      headers: as,
      idempotencyKey: delKey,
    });
    expect(c1).toMatchObject({ status: 200, body: { status: 'CANCELED' } });
    expect(c2).toMatchObject({ status: 200, body: c1.body });
    expect(c2.headers.get('idempotent-replayed')).toBe('true');
    const uKey = randomUUID();
    const u1 = await svc.call('POST', '/v2/trade/users', {
      body: { partner_user_id: 'idem-new' },
      idempotencyKey: uKey,
    });
    const u2 = await svc.call('POST', '/v2/trade/users', {
      body: { partner_user_id: 'idem-new' },
      idempotencyKey: uKey,
    });
    expect(u1.status).toBe(201);
    expect(u2).toMatchObject({ status: 201, body: u1.body });
  });

  it('the same key with a different request answers 422 and does nothing', async () => {
    const key = randomUUID();
    const before = await openCount();
    expect(
      (await svc.call('POST', '/v2/trade/order', { body: order('0.04'), headers: as, idempotencyKey: key })).status,
    ).toBe(200);
    const other = await svc.call('POST', '/v2/trade/order', { body: order('0.03'), headers: as, idempotencyKey: key });
    expect(other).toMatchObject({ status: 409, body: { error: 'idempotency_key_conflict' } });
    // another path with the same key is a different request too
    const elsewhere = await svc.call('DELETE', '/v2/trade/orders/ord_nope', { headers: as, idempotencyKey: key });
    expect(elsewhere).toMatchObject({ status: 409, body: { error: 'idempotency_key_conflict' } });
    expect(await openCount()).toBe(before + 1);
  });

  it('keys are scoped to the API token: another key may reuse the value', async () => {
    const minted = await svc.call('POST', '/v2/trade/users/idem/api-keys', {
      body: { scopes: ['trade.read', 'trade.execute', 'trade.cancel'] },
    });
    expect(minted.status).toBe(201);
    const key = randomUUID();
    const a = await svc.call('POST', '/v2/trade/order', { body: order('0.02'), headers: as, idempotencyKey: key });
    const b = await svc.call('POST', '/v2/trade/order', {
      body: order('0.02'),
      token: minted.body.api_key,
      idempotencyKey: key,
    });
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    expect(b.headers.get('idempotent-replayed')).toBeNull();
    expect(b.body.order_id).not.toBe(a.body.order_id);
  });

  it('a refused request is not kept: its retry runs (4xx changes nothing)', async () => {
    const key = randomUUID();
    const bad = await svc.call('POST', '/v2/trade/order', {
      body: { ...order(), price: '72' },
      headers: as,
      idempotencyKey: key,
    });
    expect(bad.status).toBe(400);
    const fixed = await svc.call('POST', '/v2/trade/order', { body: order('0.01'), headers: as, idempotencyKey: key });
    expect(fixed.status).toBe(200);
  });

  it('50 concurrent requests with one key create exactly one order; the rest replay or answer 409', async () => {
    const key = randomUUID();
    const before = await openCount();
    const all = await Promise.all(
      Array.from({ length: 50 }, () =>
        svc.call('POST', '/v2/trade/order', { body: order('0.03'), headers: as, idempotencyKey: key }),
      ),
    );
    const statuses = all.map((r) => r.status);
    expect(statuses.every((s) => s === 200 || s === 409)).toBe(true);
    const ids = new Set(all.filter((r) => r.status === 200).map((r) => r.body.order_id));
    expect(ids.size).toBe(1);
    for (const r of all.filter((x) => x.status === 409)) {
      expect(r.body.error).toBe('idempotency_key_in_use');
      expect(r.headers.get('retry-after')).toBe('1');
    }
    expect(await openCount()).toBe(before + 1);
    // after the first finished, a retry replays
    const later = await svc.call('POST', '/v2/trade/order', { body: order('0.03'), headers: as, idempotencyKey: key });
    expect(later.headers.get('idempotent-replayed')).toBe('true');
    expect(later.body.order_id).toBe([...ids][0]);
  });
});

describe.each([
  { claims: 'in memory (SQLite)', claimsInMemory: true },
  { claims: 'stored (MongoDB: several processes)', claimsInMemory: false },
])('IdempotencyService, claims $claims', ({ claimsInMemory }) => {
  it('keeps records across a restart, expires them after 24 h (sweep), and takes over abandoned claims', async () => {
    const clock = new ManualClock(1_700_000_000_000);
    const store = await SqliteStore.open(null);
    const log = createLogger('silent');
    const svc = await IdempotencyService.open(store, clock, log, { claimsInMemory });
    const req = { method: 'POST', path: '/v2/trade/order', userId: 'u', body: { a: 1 } };
    const key = randomUUID();
    const claim = await svc.begin('key_1', key, req);
    expect(claim.kind).toBe('execute');
    if (claim.kind === 'execute') await claim.complete({ status: 200, body: { ok: true }, headers: {} });
    svc.close();
    // "restart": a new service over the same store replays
    const again = await IdempotencyService.open(store, clock, log, { claimsInMemory });
    expect(await again.begin('key_1', key, req)).toEqual({
      kind: 'replay',
      response: { status: 200, body: { ok: true }, headers: {} },
    });
    // 24 h later the record is gone: the key is fresh again
    clock.advance(IDEMPOTENCY_TTL_MS + 1);
    expect(await again.sweep()).toBe(1);
    expect((await again.begin('key_1', key, req)).kind).toBe('execute');
    // a claim whose process died (lease over) is taken over by the next retry
    const k2 = randomUUID();
    expect((await again.begin('key_1', k2, req)).kind).toBe('execute');
    await expect(again.begin('key_1', k2, req).catch(toApiError)).resolves.toMatchObject({ status: 409 });
    clock.advance(IDEMPOTENCY_LEASE_MS + 1);
    const taken = await again.begin('key_1', k2, req);
    expect(taken.kind).toBe('execute');
    // the same key on another request → 409 while running and once done; abandon frees the key
    await expect(again.begin('key_1', k2, { ...req, body: { a: 2 } }).catch(toApiError)).resolves.toMatchObject({
      status: 409,
      error: 'idempotency_key_conflict',
    });
    if (taken.kind === 'execute') await taken.abandon();
    const k2Again = await again.begin('key_1', k2, { ...req, body: { a: 2 } });
    if (k2Again.kind === 'execute')
      await k2Again.complete({ status: 201, body: { n: 2 }, headers: { Location: '/x' } });
    await expect(again.begin('key_1', k2, req).catch(toApiError)).resolves.toMatchObject({ status: 409 });
    expect(await again.begin('key_1', k2, { ...req, body: { a: 2 } })).toEqual({
      kind: 'replay',
      response: { status: 201, body: { n: 2 }, headers: { Location: '/x' } },
    });
    // keys are scoped to the API key
    expect((await again.begin('key_2', k2, req)).kind).toBe('execute');
    again.close();
    await store.close();
  });

  it("gives the first attempt's time to retries: after an abandon past a step's answer, and an expiry", async () => {
    const clock = new ManualClock(1_700_000_000_000);
    const store = await SqliteStore.open(null);
    const svc = await IdempotencyService.open(store, clock, createLogger('silent'), { claimsInMemory });
    const req = { method: 'POST', path: '/v2/trade/order', userId: 'u', body: { a: 1 } };
    const execute = async (key: string) => {
      const c = await svc.begin('key_1', key, req);
      if (c.kind !== 'execute') throw new Error(`expected an execute claim, got ${c.kind}`);
      return c;
    };
    // abandoned before any step stored an answer: nothing was created, the key is forgotten
    const fresh = randomUUID();
    await (await execute(fresh)).abandon();
    clock.advance(1_000);
    expect((await execute(fresh)).atMs).toBe(1_700_000_001_000);
    // a step stored its answer (it created something), then the request failed: the retry runs
    // at once, with the first attempt's time (the id of what it created), and can answer
    const key = randomUUID();
    const first = await execute(key);
    expect(first.atMs).toBe(1_700_000_001_000);
    await store.transaction((tx) => first.recordWith(tx, { status: 200, body: { id: 1 }, headers: {} }));
    await first.abandon();
    clock.advance(5_000);
    const retry = await execute(key);
    expect(retry.atMs).toBe(first.atMs);
    // the id built from it: the time's 48 bits first (it sorts by time), then the seed's last 74 bits
    const seed = IdempotencyService.resourceSeed('key_1', key, 'u', '/v2/trade/order');
    expect(timeOrderedSeed(retry.atMs, seed)).toBe(`018bcfe5-6be8-7${seed.slice(15)}`);
    await retry.complete({ status: 200, body: { id: 1 }, headers: {} });
    expect(await svc.begin('key_1', key, req)).toMatchObject({ kind: 'replay', response: { body: { id: 1 } } });
    // expired, not swept yet: the retry still names what the first attempt created
    clock.advance(IDEMPOTENCY_TTL_MS + 1);
    expect((await execute(key)).atMs).toBe(first.atMs);
    svc.close();
    await store.close();
  });
});

describe('canonical JSON', () => {
  it('canonical JSON ignores key order but not values', () => {
    expect(canonicalJson({ b: 1, a: [1, { d: 2, c: 3 }] })).toBe(canonicalJson({ a: [1, { c: 3, d: 2 }], b: 1 }));
    expect(canonicalJson({ a: '1' })).not.toBe(canonicalJson({ a: 1 }));
  });

  it('is the same text as the earlier implementation gave (stored fingerprints keep matching)', () => {
    // the implementation the stored fingerprints were computed with
    const reference = (value: unknown): string => {
      if (Array.isArray(value)) return `[${value.map(reference).join(',')}]`;
      if (value !== null && typeof value === 'object') {
        const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
        entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
        return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${reference(v)}`).join(',')}}`;
      }
      return JSON.stringify(value) ?? 'null';
    };
    const value = fc.letrec((tie) => ({
      any: fc.oneof(
        fc.constant(null),
        fc.constant(undefined),
        fc.boolean(),
        fc.double(),
        fc.integer(),
        fc.string(),
        fc.string({ unit: 'binary' }),
        fc.array(tie('any'), { maxLength: 4 }),
        fc.dictionary(fc.string(), tie('any'), { maxKeys: 5 }),
        // any UTF-16 text as keys (lone surrogates, accents), and more keys than the insertion sort takes
        fc.dictionary(fc.oneof(fc.string({ unit: 'binary' }), fc.string({ unit: 'grapheme' })), tie('any'), {
          maxKeys: 8,
        }),
        fc.dictionary(fc.string({ maxLength: 2 }), fc.integer(), { minKeys: 15, maxKeys: 30 }),
      ),
    })).any;
    fc.assert(
      fc.property(value, (v) => canonicalJson(v) === reference(v)),
      { numRuns: 500 },
    );
  });
});

describe('rate limit (spec part 8)', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService({ env: { RATE_LIMIT_PER_MIN: '5' } });
  });
  afterAll(() => svc.close());

  it('counts per API key; over the limit → 429 in the envelope with Retry-After and RateLimit headers', async () => {
    for (let i = 0; i < 5; i++) {
      const r = await svc.call('GET', '/v2/trade/account');
      expect(r.status).toBe(200);
      expect(r.headers.get('ratelimit-policy')).toMatch(/q=5; w=60/);
    }
    const over = await svc.call('GET', '/v2/trade/account');
    expect(over).toMatchObject({
      status: 429,
      body: { error: 'rate_limited', message: expect.stringMatching(/5 requests per minute/) },
    });
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(over.headers.get('ratelimit')).toMatch(/r=0/);
    // another key has its own budget; /healthz is never limited
    const other = await svc.call('GET', '/v2/trade/account', { token: 'pts_someone_else_0123456789' });
    expect(other.status).toBe(401);
    expect((await svc.call('GET', '/healthz', { token: null })).status).toBe(200);
  });
});

/**
 * On SQLite, a stored answer's body and a venue journal entry's rows (JSON text) are kept as they
 * are, each in a column of its own, not escaped into the record's JSON; answers stored in the
 * record's JSON (the layout before) still replay after the start that moves them out.
 */
describe('stored answers and journal rows as text columns (SQLite)', () => {
  let dir: string;
  let svc: TestService | undefined;
  afterAll(async () => {
    await svc?.close();
    if (dir) await fs.rm(dir, { recursive: true, force: true });
  });
  const as = { 'x-partner-user-id': 'cols' };

  it('the body and the rows sit in their columns; an answer of the layout before replays', async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-idem-columns-'));
    svc = await startTestService({ store: await SqliteStore.open(dir) });
    await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'cols' } });
    const m = await svc.call('GET', '/v2/trade/markets?limit=50');
    const token = m.body.markets.find((x: any) => x.tick_size === '0.01').tokens[0].token_id;
    const key = randomUUID();
    const body = { symbol: token, side: 'buy', type: 'LIMIT', price: '0.05', size: '5' };
    const first = await svc.call('POST', '/v2/trade/order', { body, headers: as, idempotencyKey: key });
    expect([first.status, first.body.status]).toEqual([200, 'OPEN']);
    // the journal, read while the service runs (its clean stop checkpoints and removes it)
    const reader = new BetterSqlite3(path.join(dir, SQLITE_FILE), { readonly: true });
    const entries = reader.prepare('SELECT doc, "ix:rows" AS rows FROM "venueJournal"').all() as Array<{
      doc: string;
      rows: string;
    }>;
    reader.close();
    expect(entries.length).toBeGreaterThan(0);
    for (const e of entries) {
      expect(JSON.parse(e.doc)).not.toHaveProperty('rows');
      expect(JSON.parse(e.rows)).toHaveProperty('wallets');
    }
    await svc.close();
    svc = undefined;

    const db = new BetterSqlite3(path.join(dir, SQLITE_FILE));
    const chunks = db.prepare(`SELECT doc, "ix:rows" AS rows FROM "venueState" WHERE id LIKE 'cp:%'`).all() as Array<{
      doc: string;
      rows: string;
    }>;
    expect(chunks.length).toBeGreaterThan(0);
    for (const c of chunks) {
      expect(JSON.parse(c.doc)).not.toHaveProperty('rows');
      expect(JSON.parse(c.rows)).toHaveProperty('orders');
    }
    const answers = db.prepare('SELECT doc, "ix:body" AS body FROM "idempotencyKeys"').all() as Array<{
      doc: string;
      body: string | null;
    }>;
    const answer = answers.find((a) => a.body?.includes(first.body.order_id))!;
    expect(JSON.parse(answer.body!)).toEqual(first.body);
    expect(JSON.parse(answer.doc)).not.toHaveProperty('body');
    // the layout before: the body inside the record's JSON, no column
    db.exec(`UPDATE "idempotencyKeys" SET doc = json_set(doc, '$.body', "ix:body")`);
    db.exec('ALTER TABLE "idempotencyKeys" DROP COLUMN "ix:body"');
    db.close();

    svc = await startTestService({ store: await SqliteStore.open(dir) });
    const retry = await svc.call('POST', '/v2/trade/order', { body, headers: as, idempotencyKey: key });
    expect(retry).toMatchObject({ status: 200, body: first.body });
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect((await svc.call('GET', '/v2/trade/orders/open?limit=50', { headers: as })).body.total).toBe(1);
  }, 60_000);
});
