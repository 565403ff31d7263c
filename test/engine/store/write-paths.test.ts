import { afterAll, describe, expect, it } from 'vitest';
import { DuplicateKeyError } from '../../../engine/errors.js';
import type { Store } from '../../../engine/store/port.js';
import { adapters } from './adapters.js';

/**
 * Write and read paths (inserts, `_id` updates whose index keys change or not, `_id $in` reads)
 * behave as the store port says, on every adapter: indexes stay consistent, a refused update
 * changes nothing, copies are copies, and a durable adapter reads back exactly what was acknowledged.
 */
interface Rec {
  _id: string;
  owner: string;
  rank: number;
  key?: string;
  meta?: { tags: string[] } | null;
  revision: number;
}

for (const adapter of adapters()) {
  (adapter.skip ? describe.skip : describe)(`store write paths: ${adapter.name}`, () => {
    let store: Store;
    afterAll(async () => {
      await store?.close();
      await adapter.cleanup();
    });

    it('an _id update keeps every index consistent, whether its keys changed or not', async () => {
      store = await adapter.open();
      const c = await store.collection<Rec>('recs', [
        { fields: ['owner'] },
        { fields: ['key'], unique: true, sparse: true },
        { fields: ['rank'] },
      ]);
      for (let i = 0; i < 20; i++)
        await c.insertOne({
          _id: `r${i}`,
          owner: `o${i % 3}`,
          rank: i,
          ...(i % 2 ? { key: `k${i}` } : {}),
          meta: { tags: [`t${i}`] },
          revision: 1,
        });
      // keys unchanged (owner, key, rank): the entries are replaced in place
      expect(await c.updateOne({ _id: 'r5', revision: 1 }, { meta: { tags: ['x'] }, revision: 2 })).toBe(1);
      // keys changed: owner moves, key appears on an even record, rank changes
      expect(await c.updateOne({ _id: 'r4', revision: 1 }, { owner: 'o9', key: 'k4', rank: 100, revision: 2 })).toBe(1);
      expect(await c.findOne({ _id: 'r5' })).toEqual({
        _id: 'r5',
        owner: 'o2',
        rank: 5,
        key: 'k5',
        meta: { tags: ['x'] },
        revision: 2,
      });
      expect((await c.find({ owner: 'o2' })).map((d) => d._id).sort()).toEqual(['r11', 'r14', 'r17', 'r2', 'r5', 'r8']);
      expect((await c.find({ key: 'k5' })).map((d) => d.meta)).toEqual([{ tags: ['x'] }]);
      expect((await c.find({ owner: 'o9' })).map((d) => d._id)).toEqual(['r4']);
      expect((await c.find({ owner: 'o1' })).map((d) => d._id)).not.toContain('r4');
      expect((await c.find({ key: 'k4' })).map((d) => d._id)).toEqual(['r4']);
      expect((await c.find({ rank: { $gte: 100 } })).map((d) => d._id)).toEqual(['r4']);
      expect(await c.count({})).toBe(20);
    });

    it('an update whose filter matches nothing, or breaking a unique index, changes nothing', async () => {
      const c = await store.collection<Rec>('recs');
      expect(await c.updateOne({ _id: 'r5', revision: 1 }, { rank: -1, revision: 2 })).toBe(0);
      expect(await c.updateOne({ _id: 'nope' }, { rank: -1 })).toBe(0);
      await expect(c.updateOne({ _id: 'r7', revision: 1 }, { key: 'k5', revision: 2 })).rejects.toBeInstanceOf(
        DuplicateKeyError,
      );
      expect(await c.findOne({ _id: 'r7' })).toMatchObject({ key: 'k7', revision: 1 });
      expect((await c.find({ key: 'k7' })).map((d) => d._id)).toEqual(['r7']);
      expect((await c.find({ key: 'k5' })).map((d) => d._id)).toEqual(['r5']);
      expect((await c.findOne({ _id: 'r5' }))!.rank).toBe(5);
    });

    it('an upsert by _id inserts when nothing matches', async () => {
      const c = await store.collection<Rec>('recs');
      expect(await c.updateOne({ _id: 'r99' }, { owner: 'o0', rank: 99, revision: 1 }, { upsert: true })).toBe(0);
      expect(await c.findOne({ _id: 'r99' })).toEqual({ _id: 'r99', owner: 'o0', rank: 99, revision: 1 });
    });

    it('reads and writes are copies: changing what was passed or returned does not change the store', async () => {
      const c = await store.collection<Rec>('recs');
      const doc: Rec = { _id: 'c1', owner: 'oc', rank: 1, meta: { tags: ['a'] }, revision: 1 };
      await c.insertOne(doc);
      doc.meta!.tags.push('mutated');
      const set = { meta: { tags: ['b'] }, revision: 2 };
      await c.updateOne({ _id: 'c1' }, set);
      set.meta.tags.push('mutated');
      const many = await c.find({ _id: { $in: ['c1', 'r5', 'c1', 'missing'] } });
      expect(many.map((d) => d._id).sort()).toEqual(['c1', 'r5']);
      many[0]!.meta!.tags.push('mutated');
      const one = (await c.findOne({ _id: 'c1' }))!;
      expect(one.meta).toEqual({ tags: ['b'] });
      one.meta!.tags.push('mutated');
      expect((await c.findOne({ _id: 'c1' }))!.meta).toEqual({ tags: ['b'] });
    });

    it.runIf(adapter.durable)('reads back after a re-open exactly what was acknowledged', async () => {
      await store.close();
      store = await adapter.open();
      const c = await store.collection<Rec>('recs', [
        { fields: ['owner'] },
        { fields: ['key'], unique: true, sparse: true },
        { fields: ['rank'] },
      ]);
      expect(await c.count({})).toBe(22);
      expect(await c.findOne({ _id: 'r5' })).toEqual({
        _id: 'r5',
        owner: 'o2',
        rank: 5,
        key: 'k5',
        meta: { tags: ['x'] },
        revision: 2,
      });
      expect(await c.findOne({ _id: 'r4' })).toMatchObject({ owner: 'o9', key: 'k4', rank: 100, revision: 2 });
      expect(await c.findOne({ _id: 'r7' })).toMatchObject({ key: 'k7', revision: 1 });
      expect((await c.findOne({ _id: 'c1' }))!.meta).toEqual({ tags: ['b'] });
      expect((await c.find({ key: 'k4' })).map((d) => d._id)).toEqual(['r4']);
    });
  });
}
