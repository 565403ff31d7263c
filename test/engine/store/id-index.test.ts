/**
 * The embedded store's `_id` index on a hash map (issue 15) behaves as NeDB's tree index did:
 * unique violations with NeDB's error, all-or-none multi-document inserts and updates, scans and
 * ranges in key order; through the store port, unsorted finds still come in `_id` order.
 */
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
});
