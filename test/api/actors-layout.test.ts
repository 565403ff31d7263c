import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SQLITE_FILE, SqliteStore } from '../../engine/store/sqlite.js';
import { startTestService, type TestService } from '../helpers.js';
import { px, sellThrough, Trading } from './trading-kit.js';

const ENV = { SIM_MAKER_REFILL_MS: '3600000', SIM_INITIAL_PUSD: '1000000' };

/** The previous layout's `actors` table and indexes, as that version created them. */
const PREVIOUS_ACTORS_SCHEMA = `
  CREATE TABLE "actors" (id TEXT PRIMARY KEY, doc TEXT NOT NULL, "ix:final", "ix:quarantine", "ix:createdAtMs",
    "ix:kind", "ix:ownerKey");
  CREATE INDEX "ic_actors_final_quarantine_createdAtMs__id" ON "actors" ("ix:final", "ix:quarantine",
    "ix:createdAtMs", id);
  CREATE INDEX "ic_actors_kind_final_quarantine_createdAtMs__id" ON "actors" ("ix:kind", "ix:final",
    "ix:quarantine", "ix:createdAtMs", id);
  CREATE UNIQUE INDEX "ic_actors_ownerKey_u_s" ON "actors" ("ix:ownerKey") WHERE "ix:ownerKey" IS NOT NULL;`;

/**
 * Rewrites the `actors` table of the store in `dir` (closed) as the previous layout stored it: the
 * document's JSON holding its `_id`, its snapshot (a JSON string inside the JSON), its owner and its
 * revision; a column per indexed field, `ownerKey` (`<owner>|<createdAtMs, 15 digits>|<_id>`) among
 * them, a string or a number held by its column alone; and no record of this version's migration.
 */
function toPreviousLayout(dir: string): void {
  const db = new BetterSqlite3(path.join(dir, SQLITE_FILE));
  try {
    const rows = db
      .prepare(
        'SELECT id, doc, "ix:final" AS f, "ix:quarantine" AS q, "ix:createdAtMs" AS c, "ix:kind" AS k, ' +
          '"ix:ownerUserId" AS u, "ix:snapshot" AS s, "ix:revision" AS r FROM actors',
      )
      .all() as Array<{
      id: string;
      doc: string;
      f: number;
      q: string | null;
      c: number;
      k: string;
      u: string | null;
      s: string;
      r: number;
    }>;
    expect(rows.length).toBeGreaterThan(0);
    db.exec(`DROP TABLE actors; ${PREVIOUS_ACTORS_SCHEMA}`);
    const insert = db.prepare('INSERT INTO actors VALUES (?, ?, ?, ?, ?, ?, ?)');
    for (const r of rows) {
      const doc = { _id: r.id, snapshot: r.s, ownerUserId: r.u, revision: r.r, ...(JSON.parse(r.doc) as object) };
      const ownerKey = r.u === null ? null : `${r.u}|${String(r.c).padStart(15, '0')}|${r.id}`;
      insert.run(r.id, JSON.stringify(doc), r.f, r.q, r.c, r.k, ownerKey);
    }
    db.prepare('DELETE FROM migrations WHERE id = ?').run('actors: ownerKey dropped');
  } finally {
    db.close();
  }
}

/** The `actors` table of the store in `dir` (closed): its columns, and the field names of its documents' JSON. */
function actorsTable(dir: string): { columns: string[]; jsonFields: string[] } {
  const db = new BetterSqlite3(path.join(dir, SQLITE_FILE), { readonly: true });
  try {
    const columns = (db.prepare('PRAGMA table_info("actors")').all() as Array<{ name: string }>).map((r) => r.name);
    const docs = db.prepare('SELECT doc FROM actors').pluck().all() as string[];
    return { columns, jsonFields: [...new Set(docs.flatMap((d) => Object.keys(JSON.parse(d) as object)))].sort() };
  } finally {
    db.close();
  }
}

/**
 * A `DATA_DIR` whose actors were stored by the previous layout (the snapshot inside the document's
 * JSON, a stored `ownerKey` with its unique index) opens on this version: the records are rewritten
 * once as stored now, every read answers as before (an activity cursor issued before included), and
 * an armed stop restored from it still fires.
 */
describe('actors stored by the previous layout: migrated at start, read and run the same', () => {
  let dir: string;
  let svc: TestService;
  const tr = new Trading(() => svc);
  const start = async () => (svc = await startTestService({ store: await SqliteStore.open(dir), env: ENV }));

  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-actors-layout-'));
    await start();
    await tr.init(['alice', 'bob']);
  });
  afterAll(async () => {
    await svc?.close();
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('migrates the records once; strategies, activity (and its cursor) read the same; a stop fires', async () => {
    const { token, bid } = await tr.freshToken(0.3);
    await tr.buyShares('alice', token, 30);
    const level = px(bid - 0.01);
    const stop = await tr.post('alice', { symbol: token, side: 'sell', type: 'STOP_LOSS', price: level, size: '10' });
    expect(stop.status).toBe(200);
    const trailing = await tr.post('alice', {
      symbol: token,
      side: 'sell',
      type: 'TRAILING_STOP',
      size: '10',
      execution: { high_water_mark: px(bid + 0.05), trailing_offset: '0.2' },
    });
    expect(trailing.status).toBe(200);
    const resting = await tr.post('alice', { symbol: token, side: 'buy', type: 'LIMIT', price: px(0.05), size: '5' });
    expect(resting.status).toBe(200);
    const reads = async () => ({
      strategies: await svc.call('GET', '/v2/trade/strategies', { headers: tr.as('alice') }),
      open: await svc.call('GET', '/v2/trade/orders/open', { headers: tr.as('alice') }),
      first: await svc.call('GET', '/v2/trade/activity?limit=2', { headers: tr.as('alice') }),
    });
    const before = await reads();
    expect(before.strategies.body.strategies).toHaveLength(2);
    const cursor = before.first.body.next_cursor as string;
    expect(cursor).toEqual(expect.any(String));
    const next = `/v2/trade/activity?limit=2&cursor=${encodeURIComponent(cursor)}`;
    const secondBefore = await svc.call('GET', next, { headers: tr.as('alice') });
    expect(secondBefore.status).toBe(200);
    expect(secondBefore.body.activity.length).toBeGreaterThan(0);
    await svc.close();

    toPreviousLayout(dir);
    expect(actorsTable(dir).columns).toContain('ix:ownerKey');
    expect(actorsTable(dir).jsonFields).toEqual(expect.arrayContaining(['_id', 'ownerUserId', 'snapshot']));

    await start();
    const after = await reads();
    expect(after.strategies).toMatchObject({ status: 200, body: before.strategies.body });
    expect(after.open).toMatchObject({ status: 200, body: before.open.body });
    // a cursor is sealed afresh each time (a new nonce): the same page, another text
    expect(after.first).toMatchObject({
      status: 200,
      body: { ...before.first.body, next_cursor: expect.any(String) },
    });
    const secondAfter = await svc.call('GET', next, { headers: tr.as('alice') });
    expect(secondAfter).toMatchObject({ status: 200, body: secondBefore.body });

    // the armed stop, restored from the migrated record, fires when the bid reaches it
    await sellThrough(
      (u, body) => tr.post(u, body),
      (t) => tr.book(t),
      token,
      px(bid),
    );
    await svc.services.strategies.idle();
    expect(await tr.strategy('alice', stop.body.record_id)).toMatchObject({
      status: 'COMPLETED',
      filled_size: '10',
      executed_price: level,
    });
    await svc.close();

    // stored as this version stores them: no ownerKey, the snapshot and the owner in columns
    const table = actorsTable(dir);
    expect(table.columns).not.toContain('ix:ownerKey');
    expect(table.columns).toEqual(expect.arrayContaining(['ix:snapshot', 'ix:ownerUserId']));
    expect(table.jsonFields).not.toEqual(
      expect.arrayContaining([expect.stringMatching(/^(_id|ownerKey|ownerUserId|snapshot)$/)]),
    );
    const db = new BetterSqlite3(path.join(dir, SQLITE_FILE), { readonly: true });
    const indexes = db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'actors'")
      .pluck()
      .all() as string[];
    // the restore's index holds the live actors only, the reconciliation's the live orders only,
    // instead of every actor: the stop that completed (and the orders filled) left them
    const restoreIndex = 'ic_actors_final_quarantine_createdAtMs__id_w_final_false';
    const ordersIndex = 'ic_actors_kind_final_quarantine_createdAtMs__id_w_kind_order_w_final_false';
    const count = (sql: string, ...params: unknown[]) =>
      db
        .prepare(sql)
        .pluck()
        .get(...params) as number;
    const entries = (index: string) =>
      count("SELECT sum(ncell) FROM dbstat WHERE name = ? AND pagetype = 'leaf'", index) ?? 0;
    const live = count('SELECT count(*) FROM actors WHERE "ix:final" = 0');
    const ended = count('SELECT count(*) FROM actors WHERE "ix:final" = 1');
    const liveOrders = count(`SELECT count(*) FROM actors WHERE "ix:kind" = 'order' AND "ix:final" = 0`);
    const endedOrders = count(`SELECT count(*) FROM actors WHERE "ix:kind" = 'order' AND "ix:final" = 1`);
    const stopEnded = count('SELECT "ix:final" FROM actors WHERE id = ?', stop.body.record_id);
    const planOf = (sql: string) =>
      (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all() as Array<{ detail: string }>).map((r) => r.detail).join(' | ');
    // the queries as the store writes them (a boolean as its literal)
    const reconcile = planOf(
      `SELECT id, doc FROM "actors" WHERE "ix:kind" = 'order' AND "ix:final" = 0 AND ` +
        '"ix:quarantine" IS NULL ORDER BY "ix:createdAtMs" DESC, id DESC',
    );
    const restore = planOf(
      'SELECT id, doc FROM "actors" WHERE "ix:final" = 0 AND "ix:quarantine" IS NULL ' +
        'ORDER BY "ix:createdAtMs" ASC, id ASC',
    );
    const inRestore = entries(restoreIndex);
    const inOrders = entries(ordersIndex);
    db.close();
    expect(indexes).not.toContain('ic_actors_ownerKey_u_s');
    expect(indexes).toContain('ic_actors_ownerUserId_createdAtMs__id');
    expect(indexes).not.toContain('ic_actors_kind_final_quarantine_createdAtMs__id');
    expect(indexes).not.toContain('ic_actors_final_quarantine_createdAtMs__id');
    expect(indexes).toEqual(expect.arrayContaining([restoreIndex, ordersIndex]));
    expect({ stopEnded, ended: ended > 0, endedOrders: endedOrders > 0, liveOrders: liveOrders > 0 }).toEqual({
      stopEnded: 1,
      ended: true,
      endedOrders: true,
      liveOrders: true,
    });
    expect({ restore: inRestore, orders: inOrders }).toEqual({
      restore: live,
      orders: liveOrders,
    });
    expect(reconcile).toContain(`USING INDEX ${ordersIndex}`);
    expect(restore).toContain(`USING INDEX ${restoreIndex}`);
    expect(restore).not.toContain('TEMP B-TREE');

    // once: the next start finds the migration recorded
    await start();
    const migrations = await svc.services.store.collection<{ _id: string; atMs: number }>('migrations');
    expect(await migrations.findOne({ _id: 'actors: ownerKey dropped' })).toMatchObject({ atMs: expect.any(Number) });
  });
});
