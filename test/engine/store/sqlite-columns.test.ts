import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { RevisionConflictError } from '../../../engine/errors.js';
import { ActorRepository } from '../../../engine/store/actors.js';
import { SQLITE_FILE, SqliteStore } from '../../../engine/store/sqlite.js';

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await fs.rm(d, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-sqlite-columns-'));
  dirs.push(dir);
  return dir;
}

/** The columns and index definitions of `table` in the database file of `dir`. */
function schemaOf(dir: string, table: string): { columns: string[]; indexes: string[] } {
  const db = new BetterSqlite3(path.join(dir, SQLITE_FILE), { readonly: true });
  try {
    const columns = (db.prepare(`PRAGMA table_info("${table}")`).all() as Array<{ name: string }>).map((r) => r.name);
    const indexes = db
      .prepare("SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL ORDER BY name")
      .pluck()
      .all(table) as string[];
    return { columns, indexes };
  } finally {
    db.close();
  }
}

/**
 * The SQLite store keeps each indexed field in a column of its own, written with the document (its
 * indexes then never read the document's JSON); a database whose indexes are on the documents' JSON
 * (the layout before) gets the columns, filled from its documents, when opened.
 */
describe('the SQLite store: indexed fields in columns', () => {
  it('a database with indexes on the JSON gets the columns, filled, and its records are found by them', async () => {
    const dir = await tempDir();
    // the layout before: (id, doc) and indexes on json_extract, as the store made them
    const old = new BetterSqlite3(path.join(dir, SQLITE_FILE));
    old.pragma('journal_mode = WAL');
    old.exec(`CREATE TABLE "actors" (id TEXT PRIMARY KEY, doc TEXT NOT NULL);
      CREATE UNIQUE INDEX "ix_actors_ownerKey_u_s" ON "actors" (json_extract(doc, '$."ownerKey"'))
        WHERE json_extract(doc, '$."ownerKey"') IS NOT NULL;
      CREATE INDEX "ix_actors_final_quarantine_createdAtMs__id" ON "actors" (json_extract(doc, '$."final"'),
        json_extract(doc, '$."quarantine"'), json_extract(doc, '$."createdAtMs"'), id)`);
    const insert = old.prepare('INSERT INTO "actors" (id, doc) VALUES (?, ?)');
    for (let i = 0; i < 3; i++) {
      const doc = {
        _id: `a${i}`,
        machineId: 'm',
        machineVersion: 1,
        snapshot: '{}',
        kind: 'order',
        status: 'OPEN',
        final: i === 2,
        partnerId: 'p',
        ownerUserId: 'u',
        ownerKey: `u|${String(10 + i).padStart(15, '0')}|a${i}`,
        createdAtMs: 10 + i,
        updatedAtMs: 10 + i,
        type: 'LIMIT',
        revision: 1,
        quarantine: null,
      };
      insert.run(doc._id, JSON.stringify(doc));
    }
    old.close();

    const store = await SqliteStore.open(dir);
    const repo = await ActorRepository.open(store);
    const owned = await repo.findOwned('u', { kind: 'order' });
    expect(owned.records.map((r) => r._id)).toEqual(['a2', 'a1', 'a0']);
    expect(owned.total).toBe(3);
    expect((await repo.findRestorable()).map((r) => r._id)).toEqual(['a0', 'a1']);
    // the revision, now a column filled from the JSON, is what an update compares
    const a0 = (await repo.get('a0'))!;
    expect(a0.revision).toBe(1);
    const step = { snapshot: '{}', status: 'OPEN', view: {}, final: false, updatedAtMs: 20 };
    const a0next = await repo.update(a0, step);
    expect(a0next).toMatchObject({ revision: 2, status: 'OPEN', createdAtMs: 10, type: 'LIMIT' });
    await expect(repo.update(a0, step)).rejects.toBeInstanceOf(RevisionConflictError);
    const { view: _v, ...stored } = a0next;
    expect(await repo.getStored('a0')).toEqual({ ...stored, view: {} });
    await store.close();

    const { columns, indexes } = schemaOf(dir, 'actors');
    expect(columns).toEqual(
      expect.arrayContaining([
        'id',
        'doc',
        'ix:final',
        'ix:quarantine',
        'ix:createdAtMs',
        'ix:kind',
        'ix:ownerUserId',
        'ix:snapshot',
        'ix:revision',
      ]),
    );
    expect(indexes.length).toBeGreaterThan(0);
    for (const sql of indexes) expect(sql).not.toContain('json_extract');
    const db = new BetterSqlite3(path.join(dir, SQLITE_FILE), { readonly: true });
    expect(
      db
        .prepare(
          'SELECT id, "ix:final" AS f, "ix:createdAtMs" AS c, "ix:kind" AS k, "ix:revision" AS r ' +
            'FROM actors ORDER BY id',
        )
        .all(),
    ).toEqual([
      { id: 'a0', f: 0, c: 10, k: 'order', r: 2 },
      { id: 'a1', f: 0, c: 11, k: 'order', r: 1 },
      { id: 'a2', f: 1, c: 12, k: 'order', r: 1 },
    ]);
    // rewritten as stored now: the snapshot, the owner and the revision in their columns, no ownerKey,
    // no _id in the JSON
    for (const row of db.prepare('SELECT doc, "ix:snapshot" AS s, "ix:ownerUserId" AS u FROM actors').all() as Array<{
      doc: string;
      s: string;
      u: string;
    }>) {
      expect(row).toMatchObject({ s: '{}', u: 'u' });
      expect(Object.keys(JSON.parse(row.doc) as object)).not.toEqual(
        expect.arrayContaining([expect.stringMatching(/^(_id|ownerKey|snapshot|ownerUserId|revision)$/)]),
      );
    }
    db.close();
  });

  it('plain-equality filters reuse their statement; a field that gets a column mid-run is read from it', async () => {
    const store = await SqliteStore.open(null);
    type D = { _id: string; kind: string; n: number; ok: boolean };
    const c = await store.collection<D>('shaped');
    await c.insertMany!([
      { _id: 'a', kind: 'x', n: 1, ok: true },
      { _id: 'b', kind: 'x', n: 2, ok: false },
      { _id: 'c', kind: 'y', n: 2, ok: true },
    ]);
    // the same shape with other values: the answers of each
    expect((await c.findOne({ kind: 'x', n: 2 }))?._id).toBe('b');
    expect((await c.findOne({ kind: 'y', n: 2 }))?._id).toBe('c');
    expect(await c.findOne({ kind: 'y', n: 1 })).toBeNull();
    expect(await c.count({ ok: true })).toBe(2);
    expect(await c.count({ ok: false })).toBe(1);
    const prepared = store.preparedSql().length;
    expect(await c.count({ ok: true, kind: 'x' })).toBe(1);
    expect(await c.count({ ok: true, kind: 'y' })).toBe(1);
    expect(store.preparedSql().length).toBe(prepared + 1); // one statement for the shape
    // field `kind` indexed from now on: held by its column alone in new rows, still found by it
    await store.collection<D>('shaped', [{ fields: ['kind'] }]);
    await c.insertOne({ _id: 'd', kind: 'z', n: 3, ok: true });
    expect((await c.findOne({ kind: 'z', n: 3 }))?._id).toBe('d');
    expect((await c.find({ kind: 'x', n: 1 })).map((d) => d._id)).toStrictEqual(['a']);
    expect(await c.replaceIf!({ _id: 'd', kind: 'z' }, { _id: 'd', kind: 'w', n: 4, ok: false })).toBe(1);
    expect(await c.replaceIf!({ _id: 'd', kind: 'z' }, { _id: 'd', kind: 'v', n: 5, ok: false })).toBe(0);
    expect(await c.findOne({ _id: 'd' })).toStrictEqual({ _id: 'd', kind: 'w', n: 4, ok: false });
    // given the document as read, only the columns that change are set (an unchanged column's
    // index entries are not rewritten)
    const read = (await c.findOne({ _id: 'd' }))!;
    expect(await c.replaceIf!({ _id: 'd', n: 4 }, { _id: 'd', kind: 'w', n: 6, ok: true }, read)).toBe(1);
    expect(store.preparedSql()).toContain(
      'UPDATE "shaped" SET doc = ? WHERE id = ? AND id = ? AND json_extract(doc, \'$."n"\') = ?',
    );
    expect(await c.findOne({ kind: 'w' })).toStrictEqual({ _id: 'd', kind: 'w', n: 6, ok: true });
    await c.replaceIf!({ _id: 'd' }, { _id: 'd', kind: 'u', n: 6, ok: true }, { _id: 'd', kind: 'w', n: 6, ok: true });
    expect(store.preparedSql()).toContain('UPDATE "shaped" SET doc = ?, "ix:kind" = ? WHERE id = ? AND id = ?');
    expect((await c.find({ kind: 'u' })).map((d) => d._id)).toStrictEqual(['d']);
    expect(await c.count({ kind: 'w' })).toBe(0);
    expect(await c.deleteMany({ kind: 'u', ok: true })).toBe(1);
    // a few ids: each by its key (duplicates and missing ones as the query gives them)
    const ids = async (list: string[]) => (await c.find({ _id: { $in: list } })).map((d) => d._id);
    expect(await ids(['c', 'a', 'nope', 'a'])).toStrictEqual(['a', 'c']);
    expect(await ids([])).toStrictEqual([]);
    expect(await ids(['d'])).toStrictEqual([]);
    await store.close();
  });

  it('a field no longer indexed loses its column at the next open; indexed again, it is filled again', async () => {
    const dir = await tempDir();
    let store = await SqliteStore.open(dir);
    let c = await store.collection<{ _id: string; a: number; b: string }>('things', [
      { fields: ['a'] },
      { fields: ['b'] },
    ]);
    await c.insertOne({ _id: 't1', a: 1, b: 'x' });
    await c.insertOne({ _id: 't2', a: 5, b: 'y' });
    await store.close();
    expect(schemaOf(dir, 'things').columns).toEqual(['id', 'doc', 'ix:a', 'ix:b']);

    // a string or a number is held by its column alone, the _id by the id column
    const db = new BetterSqlite3(path.join(dir, SQLITE_FILE), { readonly: true });
    expect(db.prepare('SELECT doc FROM things WHERE id = ?').pluck().get('t2')).toBe('{}');
    db.close();

    // opened with the index on b only: a's column (no longer written) goes with its index, its values
    // back into the documents
    store = await SqliteStore.open(dir);
    c = await store.collection('things', [{ fields: ['b'] }]);
    expect(await c.findOne({ _id: 't2' })).toEqual({ _id: 't2', a: 5, b: 'y' });
    await c.updateOne({ _id: 't1' }, { a: 2 });
    await store.close();
    expect(schemaOf(dir, 'things').columns).toEqual(['id', 'doc', 'ix:b']);

    store = await SqliteStore.open(dir);
    c = await store.collection('things', [{ fields: ['a'] }, { fields: ['b'] }]);
    expect(await c.count({ a: 2 })).toBe(1);
    expect(await c.count({ a: 1 })).toBe(0);
    expect(await c.find({}, { sort: { a: 1 } })).toEqual([
      { _id: 't1', a: 2, b: 'x' },
      { _id: 't2', a: 5, b: 'y' },
    ]);
    await store.close();
  });
});

describe('the SQLite store: statistics for the query planner', () => {
  it("with statistics, a user's list is a range of the owner's index, in order (no sort of a kind)", async () => {
    const dir = await tempDir();
    let store = await SqliteStore.open(dir);
    await ActorRepository.open(store);
    const records = await store.collection<{ _id: string }>('actors');
    await records.insertMany!(
      Array.from({ length: 30_000 }, (_, i) => ({
        _id: `s${i}`,
        machineId: 'm',
        machineVersion: 1,
        snapshot: '{}',
        kind: i % 10 === 0 ? 'order' : 'strategy',
        status: 'ACTIVE',
        final: false,
        partnerId: 'p',
        ownerUserId: `u${i % 3}`,
        createdAtMs: 1000 + i,
        updatedAtMs: 1000 + i,
        type: 'STOP_LOSS',
        revision: 1,
        quarantine: null,
      })),
    );
    await store.close();

    // opened again: the table has rows and no statistics, which the store then makes
    store = await SqliteStore.open(dir);
    const repo = await ActorRepository.open(store);
    const page = await repo.findOwned('u1', { kind: 'strategy' }, { limit: 5 });
    expect(page.total).toBe(9000);
    expect(page.records.map((r) => r._id)).toEqual(['s29998', 's29995', 's29992', 's29989', 's29986']);
    const sqlite = store as SqliteStore;
    const owned = sqlite
      .preparedSql()
      .find((sql) => sql.startsWith('SELECT') && sql.includes('ORDER BY "ix:createdAtMs" DESC, id DESC'));
    expect(owned).toBeDefined();
    const plan = (
      sqlite.db.prepare(`EXPLAIN QUERY PLAN ${owned!}`).all(...Array<null>(4).fill(null)) as Array<{ detail: string }>
    ).map((r) => r.detail);
    expect(plan.join(' | ')).toMatch(/USING INDEX ic_actors_ownerUserId_createdAtMs__id/);
    expect(plan.join(' | ')).not.toMatch(/TEMP B-TREE/);

    // a table of a few rows keeps none: its plans stay those of a large table, the size it may grow to
    const few = await store.collection<{ _id: string; n: number }>('few', [{ fields: ['n'] }]);
    for (let i = 0; i < 5; i++) await few.insertOne({ _id: `f${i}`, n: i });
    sqlite.writer.optimize();
    const statsOf = (table: string) =>
      sqlite.db.prepare('SELECT count(*) FROM sqlite_stat1 WHERE tbl = ?').pluck().get(table) as number;
    expect(statsOf('few')).toBe(0);
    expect(statsOf('actors')).toBeGreaterThan(0);
    // the live orders' partial index (3,000 of 30,000 actors) keeps its statistics: the next refresh
    // finds nothing to analyze in the table again
    const orders = 'ic_actors_kind_final_quarantine_createdAtMs__id_w_kind_order_w_final_false';
    expect(sqlite.db.prepare('SELECT stat FROM sqlite_stat1 WHERE idx = ?').pluck().get(orders)).toMatch(/^3000 /);
    const planned = (sqlite.db.pragma('optimize = 0x10003') as Array<{ optimize: string }>).map((r) => r.optimize);
    expect(planned.filter((sql) => sql.includes('"actors"'))).toEqual([]);
    await store.close();
  });
});
