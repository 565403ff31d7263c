/**
 * The embedded store's unique single-field index (issue 15, item 5: the actors' `ownerKey`) on
 * sorted blocks behaves exactly as NeDB's tree index: compared with a real NeDB `Index` through
 * random sequences of inserts (one or several, failing or not), removals, updates (one or
 * several, all or none), reverts and reads; through the store (in memory and on disk, restarted)
 * the index is this one and answers ranges, sorts, duplicates and updates as before.
 */
import { createRequire } from 'node:module';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BLOCK, UniqueIndex, type Bounds, type Pair } from '../../../engine/store/unique-index.js';
import { EmbeddedStore } from '../../../engine/store/embedded.js';
import { DuplicateKeyError } from '../../../engine/errors.js';

type D = Record<string, unknown> & { _id: unknown };
interface IndexLike {
  insert(doc: D | D[]): void;
  remove(doc: D | D[]): void;
  update(oldDoc: D | Pair[], newDoc?: D): void;
  revertUpdate(oldDoc: D | Pair[], newDoc?: D): void;
  getMatching(value: unknown): D[];
  getBetweenBounds(query: Bounds): D[];
  getAll(): D[];
}
const NedbIndex = createRequire(import.meta.url)('@seald-io/nedb/lib/indexes.js') as new (o: { fieldName: string; unique: boolean; sparse: boolean }) => IndexLike;

/** What a call gave: its result (documents by their `n`) or its error's observable parts. */
function outcome(f: () => unknown): unknown {
  try {
    const r = f();
    return { ok: Array.isArray(r) ? r.map((d: D) => d.n) : r };
  } catch (e) {
    const err = e as Error & { key?: unknown; errorType?: string };
    return { err: err.message, key: err.key, errorType: err.errorType };
  }
}

type Op =
  | { k: 'insert'; keys: (unknown | null)[] }
  | { k: 'remove'; pick: number[] }
  | { k: 'update'; pick: number[]; keys: unknown[]; revert: boolean }
  | { k: 'range'; q: Bounds }
  | { k: 'match'; v: unknown }
  | { k: 'all' };

/** Keys: short strings mostly (collisions likely); `absent` leaves the field out. */
const ABSENT = Symbol('absent');
const stringKey = fc.stringMatching(/^[a-d]{0,3}$/);
const bound = (key: fc.Arbitrary<unknown>) => fc.oneof({ weight: 8, arbitrary: key }, { weight: 1, arbitrary: fc.constantFrom(undefined, 5, null, true) });

function ops(key: fc.Arbitrary<unknown>): fc.Arbitrary<Op[]> {
  const keyOrAbsent = fc.oneof({ weight: 6, arbitrary: key }, { weight: 1, arbitrary: fc.constant(ABSENT) });
  const pick = fc.array(fc.nat(60), { minLength: 1, maxLength: 3 });
  const boundsArb = fc
    .record({ $gt: bound(stringKey), $gte: bound(stringKey), $lt: bound(stringKey), $lte: bound(stringKey) }, { requiredKeys: [] })
    .map((q) => q as Bounds);
  return fc.array(
    fc.oneof(
      { weight: 5, arbitrary: fc.record({ k: fc.constant('insert' as const), keys: fc.array(keyOrAbsent, { minLength: 1, maxLength: 3 }) }) },
      { weight: 2, arbitrary: fc.record({ k: fc.constant('remove' as const), pick }) },
      { weight: 3, arbitrary: fc.record({ k: fc.constant('update' as const), pick, keys: fc.array(keyOrAbsent, { minLength: 3, maxLength: 3 }), revert: fc.boolean() }) },
      { weight: 2, arbitrary: fc.record({ k: fc.constant('range' as const), q: boundsArb }) },
      { weight: 1, arbitrary: fc.record({ k: fc.constant('match' as const), v: fc.oneof(bound(stringKey), fc.array(stringKey, { maxLength: 4 })) }) },
      { weight: 1, arbitrary: fc.constant({ k: 'all' as const }) },
    ),
    { maxLength: 120 },
  );
}

/** Runs `list` on NeDB's index and ours (the same document objects) and compares every outcome. */
function compare(list: Op[], sparse: boolean): void {
  const nedb = new NedbIndex({ fieldName: 'k', unique: true, sparse });
  const ours = new UniqueIndex('k', sparse) as unknown as IndexLike;
  const pool: D[] = [];
  let n = 0;
  const make = (key: unknown, id?: unknown): D => {
    const d: D = { _id: id ?? `id${n}`, n: n++ };
    if (key !== ABSENT) d.k = key;
    pool.push(d);
    return d;
  };
  const both = (f: (ix: IndexLike) => unknown) => expect(outcome(() => f(ours))).toEqual(outcome(() => f(nedb)));
  for (const o of list) {
    if (o.k === 'insert') {
      const docs = o.keys.map((k) => make(k));
      both((ix) => ix.insert(docs.length === 1 ? docs[0]! : docs));
    } else if (o.k === 'remove') {
      const docs = o.pick.map((i) => pool[i % Math.max(1, pool.length)]).filter((d): d is D => d !== undefined);
      both((ix) => ix.remove(docs.length === 1 ? docs[0]! : docs));
    } else if (o.k === 'update') {
      const olds = [...new Set(o.pick.map((i) => pool[i % Math.max(1, pool.length)]).filter((d): d is D => d !== undefined))];
      if (olds.length === 0) continue;
      const pairs = olds.map((old, i) => ({ oldDoc: old, newDoc: make(o.keys[i], old._id) }));
      if (pairs.length === 1) {
        both((ix) => ix.update(pairs[0]!.oldDoc, pairs[0]!.newDoc));
        if (o.revert) both((ix) => ix.revertUpdate(pairs[0]!.oldDoc, pairs[0]!.newDoc));
      } else {
        both((ix) => ix.update(pairs));
        if (o.revert) both((ix) => ix.revertUpdate(pairs));
      }
    } else if (o.k === 'range') both((ix) => ix.getBetweenBounds(o.q));
    else if (o.k === 'match') both((ix) => ix.getMatching(o.v));
    else both((ix) => ix.getAll());
  }
  both((ix) => ix.getAll());
}

describe('UniqueIndex (embedded store, issue 15 item 5)', () => {
  it("keeps string keys in order; refuses a taken key with NeDB's error; several at once all or none", () => {
    const ix = new UniqueIndex('k', true);
    const a = { _id: 'a', k: 'u1|2' };
    const b = { _id: 'b', k: 'u1|1' };
    const c = { _id: 'c' }; // sparse: not indexed
    ix.insert([a, b, c]);
    expect(ix.getAll()).toEqual([b, a]);
    expect(() => ix.insert([{ _id: 'd', k: 'u2|1' }, { _id: 'e', k: 'u1|1' }])).toThrow(
      expect.objectContaining({ message: `Can't insert key "u1|1", it violates the unique constraint`, key: 'u1|1', errorType: 'uniqueViolated' }),
    );
    expect(ix.getAll()).toEqual([b, a]);
    expect(ix.getBetweenBounds({ $gt: 'u1|', $lt: 'u1|~' })).toEqual([b, a]);
    expect(ix.getMatching('u1|2')).toEqual([a]);
    expect(ix.delegated).toBe(false);
  });

  it('hands the work to NeDB\'s own index once a key is not a string (same answers)', () => {
    const ix = new UniqueIndex('k', false);
    ix.insert([{ _id: 'a', k: 'x' }, { _id: 'b', k: 'y' }]);
    ix.insert({ _id: 'c', k: 3 });
    expect(ix.delegated).toBe(true);
    expect(ix.getAll().map((d) => d._id)).toEqual(['c', 'a', 'b']);
    expect(() => ix.insert({ _id: 'd' })).not.toThrow(); // not sparse: the key undefined is indexed
    expect(() => ix.insert({ _id: 'e' })).toThrow(expect.objectContaining({ errorType: 'uniqueViolated' }));
  });

  it('property: the same outcomes as NeDB\'s index, sparse or not (string keys, some absent)', () => {
    fc.assert(
      fc.property(ops(stringKey), fc.boolean(), (list, sparse) => compare(list, sparse)),
      { numRuns: 400 },
    );
  });

  it('property: the same outcomes as NeDB\'s index with keys of other kinds now and then (numbers, null, arrays)', () => {
    const key = fc.oneof({ weight: 12, arbitrary: stringKey }, { weight: 1, arbitrary: fc.constantFrom(1, 2, null, ['a', 'b'], ['c']) });
    fc.assert(
      fc.property(ops(key), fc.boolean(), (list, sparse) => compare(list, sparse)),
      { numRuns: 300 },
    );
  });

  it('property: many keys across blocks (splits, merges, emptied blocks) agree with a sorted model', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.boolean(), fc.integer({ min: 0, max: 3 * BLOCK })), { minLength: 1, maxLength: 6 * BLOCK }), (steps) => {
        const ix = new UniqueIndex('k', true);
        const live = new Map<string, D>();
        for (const [add, i] of steps) {
          const k = `u${i % 7}|${String(i).padStart(15, '0')}`;
          const had = live.get(k);
          if (add && !had) {
            const d = { _id: k, k };
            ix.insert(d);
            live.set(k, d);
          } else if (!add && had) {
            ix.remove(had);
            live.delete(k);
          }
        }
        const keys = [...live.keys()].sort();
        expect(ix.getAll().map((d) => d.k)).toEqual(keys);
        expect(ix.size).toBe(keys.length);
        expect(ix.getBetweenBounds({ $gt: 'u3|', $lt: 'u3|~' }).map((d) => d.k)).toEqual(keys.filter((k) => k > 'u3|' && k < 'u3|~'));
        for (const k of keys.slice(0, 50)) expect(ix.getMatching(k)).toEqual([live.get(k)]);
      }),
      { numRuns: 40 },
    );
  });

  it('through the store, in memory and on disk after a restart: the index is this one; ranges, sorts, duplicates and updates as before', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-uix-'));
    try {
      for (const where of [null, dir]) {
        let store = await EmbeddedStore.open(where);
        const spec = [{ fields: ['ownerKey'], unique: true, sparse: true }];
        let c = await store.collection<{ _id: string; n: number; ownerKey?: string }>('owned', spec);
        for (let i = 0; i < 3 * BLOCK; i++) await c.insertOne({ _id: `r${i}`, n: i, ownerKey: `u${i % 3}|${String(i).padStart(15, '0')}|r${i}` });
        await c.insertOne({ _id: 'free', n: -1 });
        await expect(c.insertOne({ _id: 'dup', n: 0, ownerKey: `u0|${'0'.padStart(15, '0')}|r0` })).rejects.toBeInstanceOf(DuplicateKeyError);
        const page = async () => (await c.find({ ownerKey: { $gt: 'u1|', $lt: 'u1|~' } }, { sort: { ownerKey: -1 }, skip: 2, limit: 3 })).map((d) => d.n);
        const top = 3 * BLOCK - 2; // the last i with i % 3 = 1 (BLOCK is a multiple of 3 plus 2: 512)
        const want = [top - 6, top - 9, top - 12];
        expect(await page()).toEqual(want);
        expect(await c.count({ ownerKey: { $gt: 'u1|', $lt: 'u1|~' } })).toBe(BLOCK);
        expect(await c.updateOne({ _id: `r${want[0]}` }, { n: 7 })).toBe(1); // key unchanged: the slot's document replaced
        expect((await c.find({ ownerKey: { $gt: 'u1|', $lt: 'u1|~' } }, { sort: { ownerKey: -1 }, skip: 2, limit: 1 }))[0]?.n).toBe(7);
        if (where) {
          await store.close();
          store = await EmbeddedStore.open(where);
          c = await store.collection('owned', spec);
          expect((await c.find({ ownerKey: { $gt: 'u1|', $lt: 'u1|~' } }, { sort: { ownerKey: -1 }, skip: 2, limit: 1 }))[0]?.n).toBe(7);
        }
        const internals = (c as unknown as { ds: { indexes: Record<string, unknown> } }).ds;
        expect(internals.indexes.ownerKey).toBeInstanceOf(UniqueIndex);
        expect((internals.indexes.ownerKey as UniqueIndex).size).toBe(3 * BLOCK);
        expect(await c.deleteMany({ ownerKey: { $lt: 'u1|' } })).toBe(BLOCK);
        expect(await c.count({ ownerKey: { $gt: '' } })).toBe(2 * BLOCK);
        await store.close();
      }
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });
});

describe('sorted pages and counts on a UniqueIndex range (embedded store, findOwned)', () => {
  it('property: find (sort on the indexed field, skip, limit) and count give what NeDB\'s cursor gives', async () => {
    const store = await EmbeddedStore.open(null);
    let round = 0;
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.array(
            fc.record({
              owner: fc.option(fc.constantFrom('u1', 'u2', 'u10'), { nil: undefined }),
              t: fc.nat(40),
              kind: fc.constantFrom('strategy', 'order', ['strategy', 'x']),
              status: fc.constantFrom('armed', 'done', null),
            }),
            { maxLength: 60 },
          ),
          fc.record(
            {
              $gt: fc.oneof(fc.constantFrom('u1|', 'u2|', '', 'u1|000000000000010'), fc.constant(5)),
              $gte: fc.constantFrom('u1|', 'u10|', 'u2|000000000000020'),
              $lt: fc.constantFrom('u1|\uffff', 'u2|\uffff', 'u1|000000000000030', 'z'),
              $lte: fc.constantFrom('u1|\uffff', 'u10|000000000000005'),
            },
            { requiredKeys: [] },
          ),
          fc.record({ kind: fc.constantFrom('strategy', 'order'), status: fc.constantFrom('armed', null), other: fc.constant({ $ne: 'done' }) }, { requiredKeys: [] }),
          fc.constantFrom(1, -1),
          fc.nat(5),
          fc.nat(6),
          async (rows, range, extra, direction, skip, limit) => {
            const c = await store.collection<Record<string, unknown> & { _id: string }>(`p${round++}`, [{ fields: ['ownerKey'], unique: true, sparse: true }]);
            const seen = new Set<string>();
            let i = 0;
            for (const r of rows) {
              const id = `r${i++}`;
              const doc: Record<string, unknown> & { _id: string } = { _id: id, kind: r.kind, status: r.status };
              if (r.owner) {
                const key = `${r.owner}|${String(r.t).padStart(15, '0')}`;
                if (seen.has(key)) continue;
                seen.add(key);
                doc.ownerKey = key;
              }
              await c.insertOne(doc);
            }
            const filter: Record<string, unknown> = { ...extra, ownerKey: range };
            if ('other' in filter) {
              filter.status = filter.other;
              delete filter.other;
            }
            const ds = (c as unknown as { ds: { findAsync(q: unknown): { sort(s: unknown): { skip(n: number): { limit(n: number): Promise<unknown[]> } } }; countAsync(q: unknown): Promise<number> } }).ds;
            if (Object.keys(range).length === 0) return;
            const got = await c.find(filter, { sort: { ownerKey: direction }, skip, ...(limit ? { limit } : {}) });
            const want = await ds.findAsync(filter).sort({ ownerKey: direction }).skip(skip).limit(limit);
            expect(got).toEqual(want);
            expect(await c.count(filter)).toBe(await ds.countAsync(filter));
          },
        ),
        { numRuns: 200 },
      );
    } finally {
      await store.close();
    }
  });
});
