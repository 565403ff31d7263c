/**
 * The embedded store's `_id` index on a hash map (issue 15) behaves as NeDB's tree index did:
 * unique violations with NeDB's error, all-or-none multi-document inserts and updates, scans and
 * ranges in key order; through the store port, unsorted finds still come in `_id` order.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EmbeddedStore, IdIndex } from '../../../engine/store/embedded.js';
import { DuplicateKeyError } from '../../../engine/errors.js';

const doc = (id: string, n = 0) => ({ _id: id, n });

describe('IdIndex (embedded store, issue 15)', () => {
  it('keeps documents by _id; scans and ranges come in key order', () => {
    const ix = new IdIndex();
    ix.reset([doc('c'), doc('a'), doc('e')]);
    ix.insert(doc('b'));
    ix.insert(doc('d'));
    expect(ix.getAll().map((d) => d._id)).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(ix.getBetweenBounds({ $gt: 'a', $lte: 'd' }).map((d) => d._id)).toEqual(['b', 'c', 'd']);
    expect(ix.getBetweenBounds({ $gte: 'd' }).map((d) => d._id)).toEqual(['d', 'e']);
    expect(ix.getMatching('c').map((d) => d._id)).toEqual(['c']);
    expect(ix.getMatching('zz')).toEqual([]);
    expect(ix.getMatching(['e', 'zz', 'a', 'e']).map((d) => d._id)).toEqual(['e', 'a']);
  });

  it("refuses a taken _id with NeDB's uniqueViolated error; a multi-document insert or update is all or none", () => {
    const ix = new IdIndex();
    const a = doc('a', 1);
    ix.insert(a);
    expect(() => ix.insert(doc('a', 2))).toThrow(expect.objectContaining({ errorType: 'uniqueViolated', key: 'a' }));
    expect(() => ix.insert([doc('x'), doc('y'), doc('a')])).toThrow();
    expect(ix.getAll()).toEqual([a]);
    const b = doc('b');
    ix.insert(b);
    const a2 = doc('a', 3);
    expect(() => ix.update([{ oldDoc: a, newDoc: a2 }, { oldDoc: b, newDoc: doc('a', 4) }])).toThrow();
    expect(ix.getAll()).toEqual([a, b]);
    ix.update(a, a2);
    expect(ix.getMatching('a')[0]).toBe(a2);
    ix.revertUpdate(a, a2);
    expect(ix.getMatching('a')[0]).toBe(a);
    ix.remove(doc('a', 1)); // an equal but different object is not the indexed one
    expect(ix.getMatching('a')[0]).toBe(a);
    ix.remove(a);
    expect(ix.getAll()).toEqual([b]);
  });

  it('through the port: unsorted finds in _id order, _id ranges, updates and removals', async () => {
    const store = await EmbeddedStore.open(null);
    const c = await store.collection<{ _id: string; n: number; tag?: string }>('ids', [{ fields: ['tag'], sparse: true }]);
    for (const id of ['k3', 'k1', 'k4', 'k2']) await c.insertOne({ _id: id, n: Number(id[1]) });
    await expect(c.insertOne({ _id: 'k1', n: 9 })).rejects.toBeInstanceOf(DuplicateKeyError);
    expect((await c.find({})).map((d) => d._id)).toEqual(['k1', 'k2', 'k3', 'k4']);
    expect(await c.updateOne({ _id: 'k2' }, { n: 20 })).toBe(1);
    expect(await c.updateOne({ _id: 'k3' }, { tag: 't' })).toBe(1);
    expect(await c.findOne({ _id: 'k2' })).toEqual({ _id: 'k2', n: 20 });
    expect(await c.findOne({ tag: 't' })).toEqual({ _id: 'k3', n: 3, tag: 't' });
    expect((await c.find({ _id: { $lte: 'k2' } })).map((d) => d.n)).toEqual([1, 20]);
    expect(await c.deleteMany({ _id: { $lt: 'k3' } })).toBe(2);
    expect((await c.find({})).map((d) => d._id)).toEqual(['k3', 'k4']);
    await store.close();
  });

  it('property: scans and ranges agree with a sorted model through inserts, updates and removals (the key order is kept through changes)', () => {
    type Op = { k: 'insert' | 'update' | 'remove'; id: string } | { k: 'range'; lo: string; hi: string; loStrict: boolean; hiStrict: boolean } | { k: 'all' };
    const id = fc.stringMatching(/^[a-e]{1,3}$/);
    const op: fc.Arbitrary<Op> = fc.oneof(
      fc.record({ k: fc.constantFrom('insert' as const, 'update' as const, 'remove' as const), id }),
      fc.record({ k: fc.constant('range' as const), lo: id, hi: id, loStrict: fc.boolean(), hiStrict: fc.boolean() }),
      fc.constant({ k: 'all' as const }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
        const ix = new IdIndex();
        const model = new Map<string, { _id: string; n: number }>();
        let n = 0;
        const keys = () => [...model.keys()].sort();
        for (const o of ops) {
          if (o.k === 'insert') {
            const d = doc(o.id, n++);
            if (model.has(o.id)) expect(() => ix.insert(d)).toThrow();
            else {
              ix.insert(d);
              model.set(o.id, d);
            }
          } else if (o.k === 'update') {
            const old = model.get(o.id);
            if (!old) continue;
            const next = doc(o.id, n++);
            if (n % 2) ix.update(old, next);
            else expect(ix.replace(old, next)).toBe(true);
            model.set(o.id, next);
          } else if (o.k === 'remove') {
            const old = model.get(o.id);
            if (old) ix.remove(old);
            model.delete(o.id);
          } else if (o.k === 'range') {
            const q = { [o.loStrict ? '$gt' : '$gte']: o.lo, [o.hiStrict ? '$lt' : '$lte']: o.hi };
            const want = keys().filter((k) => (o.loStrict ? k > o.lo : k >= o.lo) && (o.hiStrict ? k < o.hi : k <= o.hi));
            expect(ix.getBetweenBounds(q).map((d) => d._id)).toEqual(want);
          } else expect(ix.getAll()).toEqual(keys().map((k) => model.get(k)));
        }
        expect(ix.getAll()).toEqual(keys().map((k) => model.get(k)));
        for (const k of keys()) expect(ix.getMatching(k)).toEqual([model.get(k)]);
      }),
      { numRuns: 300 },
    );
  });
});
