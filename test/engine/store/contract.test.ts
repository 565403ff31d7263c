import { afterAll, describe, expect, it } from 'vitest';
import { DuplicateKeyError, RevisionConflictError } from '../../../engine/errors.js';
import { ActorRepository } from '../../../engine/store/actors.js';
import type { MongoStore } from '../../../engine/store/mongo.js';
import { withUnit, type Store } from '../../../engine/store/port.js';
import { adapters } from './adapters.js';

interface Item {
  _id: string;
  owner: string;
  n: number;
  tag?: string | null;
  nested?: { k: string };
  expiresAt?: Date;
}

/** A live order actor of no user, created at `atMs`, as the repository inserts it. */
function unownedOrder(id: string, atMs: number) {
  return {
    _id: id,
    machineId: 'm',
    machineVersion: 1,
    snapshot: '{}',
    kind: 'order',
    status: 'OPEN',
    view: {},
    final: false,
    partnerId: 'p',
    ownerUserId: null,
    createdAtMs: atMs,
    updatedAtMs: atMs,
  };
}

/** The ids {@link ActorRepository.restorable} reads, `page` at a time. */
async function restorableIds(repo: ActorRepository, page: number): Promise<string[]> {
  const ids: string[] = [];
  for await (const r of repo.restorable(page)) ids.push(r._id);
  return ids;
}

for (const adapter of adapters()) {
  if (adapter.skip) {
    console.warn(`[store contract] skipping ${adapter.name}: ${adapter.skip}`);
    describe.skip(`store contract: ${adapter.name} (${adapter.skip})`, () => {
      it('skipped', () => {});
    });
    continue;
  }

  describe(`store contract: ${adapter.name}`, () => {
    let store: Store;
    afterAll(async () => {
      await store?.close();
      await adapter.cleanup();
    });

    it('opens and answers ping', async () => {
      store = await adapter.open();
      expect(await store.ping()).toBe(true);
      expect(store.adapter).toMatch(/^(mongodb|sqlite)$/);
    });

    it('inserts, finds with filters, sorts, skips and limits', async () => {
      const c = await store.collection<Item>('items', [{ fields: ['owner', 'n'] }]);
      for (let i = 0; i < 10; i++)
        await c.insertOne({ _id: `i${i}`, owner: i % 2 ? 'odd' : 'even', n: i, tag: null, nested: { k: `k${i}` } });
      expect(await c.count({ owner: 'odd' })).toBe(5);
      expect((await c.find({ owner: 'even' }, { sort: { n: -1 }, skip: 1, limit: 2 })).map((d) => d.n)).toEqual([6, 4]);
      expect((await c.find({ n: { $gte: 3, $lt: 6 } }, { sort: { n: 1 } })).map((d) => d._id)).toEqual([
        'i3',
        'i4',
        'i5',
      ]);
      expect((await c.find({ _id: { $in: ['i1', 'i9', 'zz'] } }, { sort: { n: 1 } })).map((d) => d.n)).toEqual([1, 9]);
      expect(await c.count({ n: { $nin: [0, 1] }, owner: { $ne: 'odd' } })).toBe(4);
      expect(await c.count({ $or: [{ n: 0 }, { 'nested.k': 'k7' }] })).toBe(2);
      expect(await c.count({ tag: null })).toBe(10);
      expect(await c.findOne({ 'nested.k': 'k3' })).toMatchObject({ _id: 'i3', n: 3 });
      expect(await c.findOne({ _id: 'missing' })).toBeNull();
    });

    it('insertMany: in order as one write; a taken _id throws DuplicateKeyError, leaves no gap', async () => {
      const c = await store.collection<Item>('many', [{ fields: ['n'], unique: true }]);
      await c.insertMany!([
        { _id: 'm1', owner: 'o', n: 1 },
        { _id: 'm2', owner: 'o', n: 2 },
        { _id: 'm3', owner: 'o', n: 3 },
      ]);
      expect((await c.find({}, { sort: { n: 1 } })).map((d) => d._id)).toEqual(['m1', 'm2', 'm3']);
      await expect(
        c.insertMany!([
          { _id: 'm4', owner: 'o', n: 4 },
          { _id: 'm2', owner: 'o', n: 5 },
          { _id: 'm6', owner: 'o', n: 6 },
        ]),
      ).rejects.toBeInstanceOf(DuplicateKeyError);
      const ids = (await c.find({}, { sort: { n: 1 } })).map((d) => d._id);
      // SQLite: all or none; MongoDB: the prefix before the duplicate
      expect(store.adapter !== 'mongodb' ? ids : ids.filter((id) => id !== 'm4')).toEqual(['m1', 'm2', 'm3']);
      expect(ids).not.toContain('m6');
    });

    it('insertMissing: inserts absent _ids in order, leaves taken ones stored; other unique keys throw', async () => {
      const c = await store.collection<Item>('missing', [{ fields: ['n'], unique: true }]);
      await c.insertOne({ _id: 'x2', owner: 'stored', n: 2 });
      const inserted = await c.insertMissing!([
        { _id: 'x1', owner: 'o', n: 1 },
        { _id: 'x2', owner: 'again', n: 20 },
        { _id: 'x3', owner: 'o', n: 3 },
        { _id: 'x3', owner: 'twice', n: 30 },
      ]);
      expect(inserted).toEqual([true, false, true, false]);
      expect(await c.find({}, { sort: { n: 1 } })).toEqual([
        { _id: 'x1', owner: 'o', n: 1 },
        { _id: 'x2', owner: 'stored', n: 2 },
        { _id: 'x3', owner: 'o', n: 3 },
      ]);
      await store.transaction(async (tx) => {
        expect(await tx.collection<Item>('missing').insertMissing!([{ _id: 'x4', owner: 'o', n: 4 }])).toEqual([true]);
        expect(await tx.collection<Item>('missing').insertMissing!([{ _id: 'x4', owner: 'o', n: 4 }])).toEqual([false]);
      });
      expect(await c.count({})).toBe(4);
      await expect(c.insertMissing!([{ _id: 'x5', owner: 'o', n: 1 }])).rejects.toBeInstanceOf(DuplicateKeyError);
      expect(await c.findOne({ _id: 'x5' })).toBeNull();
    });

    it('rejects a duplicate _id and a unique-index violation with DuplicateKeyError', async () => {
      const c = await store.collection<Item>('uniq', [{ fields: ['owner', 'n'], unique: true }]);
      await c.insertOne({ _id: 'a', owner: 'x', n: 1 });
      await expect(c.insertOne({ _id: 'a', owner: 'y', n: 2 })).rejects.toBeInstanceOf(DuplicateKeyError);
      await expect(c.insertOne({ _id: 'b', owner: 'x', n: 1 })).rejects.toBeInstanceOf(DuplicateKeyError);
      await c.insertOne({ _id: 'c', owner: 'x', n: 2 });
      await expect(c.updateOne({ _id: 'c' }, { n: 1 })).rejects.toBeInstanceOf(DuplicateKeyError);
    });

    it('updates conditionally, upserts, replaces and deletes', async () => {
      const c = await store.collection<Item>('upd');
      await c.insertOne({ _id: 'u', owner: 'o', n: 1 });
      expect(await c.updateOne({ _id: 'u', n: 2 }, { n: 3 })).toBe(0);
      expect(await c.updateOne({ _id: 'u', n: 1 }, { n: 2, 'nested.k': 'v' })).toBe(1);
      expect(await c.findOne({ _id: 'u' })).toMatchObject({ n: 2, nested: { k: 'v' } });
      expect(await c.updateOne({ _id: 'new', owner: 'p' }, { n: 9 }, { upsert: true })).toBe(0);
      expect(await c.findOne({ _id: 'new' })).toMatchObject({ owner: 'p', n: 9 });
      await c.replaceOne({ _id: 'u', owner: 'q', n: 7 });
      expect(await c.findOne({ _id: 'u' })).toEqual({ _id: 'u', owner: 'q', n: 7 });
      expect(await c.deleteMany({ owner: { $in: ['p', 'q'] } })).toBe(2);
      expect(await c.count({})).toBe(0);
    });

    it('replaceIf: replaces the whole document only when it matches; unique indexes hold', async () => {
      const c = await store.collection<Item>('repl', [{ fields: ['owner', 'n'], unique: true }, { fields: ['tag'] }]);
      await c.insertOne({ _id: 'r1', owner: 'o', n: 1, tag: 'a', nested: { k: 'x' } });
      await c.insertOne({ _id: 'r2', owner: 'o', n: 2 });
      expect(await c.replaceIf!({ _id: 'r1', n: 5 }, { _id: 'r1', owner: 'o', n: 9 })).toBe(0);
      expect(await c.findOne({ _id: 'r1' })).toEqual({ _id: 'r1', owner: 'o', n: 1, tag: 'a', nested: { k: 'x' } });
      expect(await c.replaceIf!({ _id: 'missing' }, { _id: 'missing', owner: 'o', n: 7 })).toBe(0);
      expect(await c.findOne({ _id: 'missing' })).toBeNull();
      expect(await c.replaceIf!({ _id: 'r1', n: 1 }, { _id: 'r1', owner: 'p', n: 3, tag: 'b' })).toBe(1);
      expect(await c.findOne({ _id: 'r1' })).toEqual({ _id: 'r1', owner: 'p', n: 3, tag: 'b' });
      // the indexed fields are found by their new values only
      expect((await c.find({ owner: 'p', n: 3 })).map((d) => d._id)).toEqual(['r1']);
      expect(await c.count({ owner: 'o', n: 1 })).toBe(0);
      expect(await c.count({ tag: 'a' })).toBe(0);
      await expect(c.replaceIf!({ _id: 'r1' }, { _id: 'r1', owner: 'o', n: 2 })).rejects.toBeInstanceOf(
        DuplicateKeyError,
      );
      expect(await c.findOne({ _id: 'r1' })).toMatchObject({ owner: 'p', n: 3 });
    });

    it('replaceIf given the document as read: changed and unchanged fields read and match', async () => {
      const c = await store.collection<Item>('replprev', [{ fields: ['owner', 'n'] }, { fields: ['tag'] }]);
      const first: Item = { _id: 'p1', owner: 'o', n: 1, tag: 'a', nested: { k: 'x' } };
      await c.insertOne(first);
      const second: Item = { _id: 'p1', owner: 'o', n: 2, tag: 'a', nested: { k: 'y' } };
      expect(await c.replaceIf!({ _id: 'p1', n: 1 }, second, first)).toBe(1);
      expect(await c.findOne({ _id: 'p1' })).toEqual(second);
      expect((await c.find({ owner: 'o', n: 2 })).map((d) => d._id)).toEqual(['p1']);
      expect(await c.count({ owner: 'o', n: 1 })).toBe(0);
      expect(await c.count({ tag: 'a' })).toBe(1);
      // an indexed field dropped, one unchanged, one changed
      const third: Item = { _id: 'p1', owner: 'q', n: 2 };
      expect(await c.replaceIf!({ _id: 'p1', n: 1 }, third, first)).toBe(0);
      expect(await c.replaceIf!({ _id: 'p1', n: 2 }, third, second)).toBe(1);
      expect(await c.findOne({ _id: 'p1' })).toEqual(third);
      expect(await c.count({ tag: 'a' })).toBe(0);
      expect(await c.count({ tag: null })).toBe(1);
      expect((await c.find({ owner: 'q', n: 2 })).map((d) => d._id)).toEqual(['p1']);
      // nothing changed but the document
      const same: Item = { _id: 'p1', owner: 'q', n: 2, nested: { k: 'z' } };
      expect(await c.replaceIf!({ _id: 'p1' }, same, third)).toBe(1);
      expect(await c.findOne({ _id: 'p1' })).toEqual(same);
      expect((await c.find({ owner: 'q', n: 2 })).map((d) => d._id)).toEqual(['p1']);
    });

    it('indexed fields follow every kind of update (a field, an object holding it, a field inside it)', async () => {
      const c = await store.collection<Item>('nestix', [{ fields: ['nested.k'] }, { fields: ['n'] }]);
      await c.insertOne({ _id: 'x', owner: 'o', n: 1, nested: { k: 'a' } });
      await c.updateOne({ _id: 'x' }, { nested: { k: 'b' } });
      expect((await c.find({ 'nested.k': 'b' })).map((d) => d._id)).toEqual(['x']);
      await c.updateOne({ _id: 'x' }, { 'nested.k': 'c', n: 2 });
      expect((await c.find({ 'nested.k': 'c', n: 2 })).map((d) => d._id)).toEqual(['x']);
      expect(await c.count({ 'nested.k': { $in: ['a', 'b'] } })).toBe(0);
      await c.updateOne({ _id: 'x' }, { nested: null as never });
      expect(await c.count({ 'nested.k': null })).toBe(1);
      await c.updateOne({ owner: 'o' }, { n: 4 });
      expect(await c.count({ n: { $gt: 3 } })).toBe(1);
      await c.updateOne({ _id: 'y', owner: 'q' }, { 'nested.k': 'u', n: 8 }, { upsert: true });
      expect((await c.find({ 'nested.k': 'u', n: 8 })).map((d) => d._id)).toEqual(['y']);
      await c.replaceOne({ _id: 'y', owner: 'q', n: 9 });
      expect(await c.count({ 'nested.k': 'u' })).toBe(0);
      expect(await c.count({ n: 9 })).toBe(1);
      expect(await c.findOne({ _id: 'y' })).toEqual({ _id: 'y', owner: 'q', n: 9 });
    });

    it('indexed fields: $exists tells a missing field from a null one; Dates read back as Dates', async () => {
      const c = await store.collection<Item>('exists', [{ fields: ['tag'] }, { fields: ['expiresAt'] }]);
      await c.insertOne({ _id: 'e1', owner: 'o', n: 1, tag: 'a' });
      await c.insertOne({ _id: 'e2', owner: 'o', n: 2, tag: null });
      await c.insertOne({ _id: 'e3', owner: 'o', n: 3 });
      expect((await c.find({ tag: { $exists: true } }, { sort: { n: 1 } })).map((d) => d._id)).toEqual(['e1', 'e2']);
      expect((await c.find({ tag: { $exists: false } })).map((d) => d._id)).toEqual(['e3']);
      expect((await c.find({ tag: null }, { sort: { n: 1 } })).map((d) => d._id)).toEqual(['e2', 'e3']);
      const at = new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 6));
      await c.updateOne({ _id: 'e4', owner: 'p' }, { n: 4, expiresAt: at }, { upsert: true });
      const got = await c.findOne({ _id: 'e4' });
      expect(got?.expiresAt).toBeInstanceOf(Date);
      expect(got?.expiresAt?.getTime()).toBe(at.getTime());
      expect(await c.count({ expiresAt: { $gte: at } })).toBe(1);
    });

    it('stores Dates as Dates and accepts a TTL index', async () => {
      const c = await store.collection<Item>('ttl', [{ fields: ['expiresAt'], expireAfterSeconds: 0 }]);
      const later = new Date(Date.now() + 3_600_000);
      await c.insertOne({ _id: 't', owner: 'o', n: 0, expiresAt: later });
      const got = await c.findOne({ _id: 't' });
      expect(got?.expiresAt).toBeInstanceOf(Date);
      expect(got?.expiresAt?.getTime()).toBe(later.getTime());
      expect(await c.count({ expiresAt: { $gt: new Date() } })).toBe(1);
    });

    it('keeps a Date beside indexed fields, at the top or nested, a Date when read back', async () => {
      type Dated = Item & { meta?: { at: Date } };
      const c = await store.collection<Dated>('dated', [{ fields: ['owner', 'n'] }]);
      const at = new Date(Date.UTC(2026, 1, 3, 4, 5, 6, 7));
      await c.insertOne({ _id: 'top', owner: 'o', n: 1, expiresAt: at });
      await c.insertOne({ _id: 'nested', owner: 'o', n: 2, meta: { at } });
      await c.insertOne({ _id: 'none', owner: 'o', n: 3, tag: 'x' });
      expect(await c.insertMissing([{ _id: 'more', owner: 'p', n: 4, meta: { at } }])).toEqual([true]);
      const got = new Map((await c.find({}, { sort: { n: 1 } })).map((d) => [d._id, d]));
      expect(got.get('top')?.expiresAt).toEqual(at);
      expect(got.get('nested')?.meta?.at).toEqual(at);
      expect(got.get('more')?.meta?.at).toEqual(at);
      expect(got.get('none')).toEqual({ _id: 'none', owner: 'o', n: 3, tag: 'x' });
      expect(await c.count({ owner: 'o', n: { $gte: 2 } })).toBe(2);
    });

    it('actor repository: revisions guard writes (optimistic concurrency)', async () => {
      const repo = await ActorRepository.open(store);
      const rec = await repo.insert({
        _id: 'act-1',
        machineId: 'm',
        machineVersion: 1,
        snapshot: '{"value":"a"}',
        kind: 'order',
        status: 'OPEN',
        view: {},
        final: false,
        partnerId: 'p',
        ownerUserId: 'u',
        createdAtMs: 1,
        updatedAtMs: 1,
      });
      expect(rec.revision).toBe(1);
      const r2 = await repo.update(rec, {
        snapshot: '{"value":"b"}',
        status: 'FILLED',
        view: {},
        final: true,
        updatedAtMs: 2,
      });
      expect(r2.revision).toBe(2);
      await expect(
        repo.update(rec, { snapshot: '{}', status: 'X', view: {}, final: false, updatedAtMs: 3 }),
      ).rejects.toBeInstanceOf(RevisionConflictError);
      expect(await repo.get('act-1')).toMatchObject({
        revision: 2,
        status: 'FILLED',
        final: true,
        snapshot: '{"value":"b"}',
      });
      await expect(repo.insert({ ...rec })).rejects.toBeInstanceOf(DuplicateKeyError);
      expect((await repo.findRestorable()).map((r) => r._id)).not.toContain('act-1');
    });

    it('sparse unique indexes leave documents without the field out; string ranges sort', async () => {
      const c = await store.collection<Item>('sparse', [{ fields: ['tag'], unique: true, sparse: true }]);
      for (let i = 0; i < 5; i++) await c.insertOne({ _id: `s${i}`, owner: 'o', n: i });
      await c.insertOne({ _id: 'sa', owner: 'o', n: 10, tag: 'u1|002' });
      await c.insertOne({ _id: 'sb', owner: 'o', n: 11, tag: 'u1|010' });
      await c.insertOne({ _id: 'sc', owner: 'o', n: 12, tag: 'u2|001' });
      await expect(c.insertOne({ _id: 'sd', owner: 'o', n: 13, tag: 'u1|002' })).rejects.toBeInstanceOf(
        DuplicateKeyError,
      );
      const range = { tag: { $gt: 'u1|', $lt: 'u1|\uffff' } };
      expect((await c.find(range, { sort: { tag: -1 } })).map((d) => d._id)).toEqual(['sb', 'sa']);
      expect(await c.count(range)).toBe(2);
    });

    it('partial indexes (where) hold only the documents of those values; queries read them all', async () => {
      const c = await store.collection<Item>('partial', [
        { fields: ['owner', 'n'], unique: true, where: { owner: 'order' } },
      ]);
      await c.insertOne({ _id: 'p1', owner: 'order', n: 1 });
      await expect(c.insertOne({ _id: 'p2', owner: 'order', n: 1 })).rejects.toBeInstanceOf(DuplicateKeyError);
      // another owner is not in the index: its duplicates are not refused
      await c.insertOne({ _id: 'p3', owner: 'strategy', n: 1 });
      await c.insertOne({ _id: 'p4', owner: 'strategy', n: 1 });
      expect((await c.find({ owner: 'order', n: 1 })).map((d) => d._id)).toEqual(['p1']);
      expect(await c.count({ owner: 'strategy', n: 1 })).toBe(2);
    });

    it("actor repository: a user's actors are an index range, newest first", async () => {
      const repo = await ActorRepository.open(store);
      const base = {
        machineId: 'm',
        machineVersion: 1,
        snapshot: '{}',
        view: {},
        final: false,
        partnerId: 'p',
        updatedAtMs: 1,
      };
      await repo.insert({ ...base, _id: 'own-1', kind: 'order', status: 'OPEN', ownerUserId: 'uA', createdAtMs: 10 });
      await repo.insert({ ...base, _id: 'own-2', kind: 'order', status: 'FILLED', ownerUserId: 'uA', createdAtMs: 20 });
      await repo.insert({
        ...base,
        _id: 'own-3',
        kind: 'strategy',
        status: 'ACTIVE',
        ownerUserId: 'uA',
        createdAtMs: 30,
      });
      await repo.insert({ ...base, _id: 'own-4', kind: 'order', status: 'OPEN', ownerUserId: 'uAB', createdAtMs: 40 });
      const all = await repo.findOwned('uA', {});
      expect(all).toMatchObject({ total: 3 });
      expect(all.records.map((r) => r._id)).toEqual(['own-3', 'own-2', 'own-1']);
      const orders = await repo.findOwned('uA', { kind: 'order', status: { $in: ['OPEN'] } }, { skip: 0, limit: 10 });
      expect(orders.records.map((r) => r._id)).toEqual(['own-1']);
      expect((await repo.findOwned('uA', { kind: 'order' }, { skip: 1, limit: 1 })).records.map((r) => r._id)).toEqual([
        'own-1',
      ]);
    });

    it("actor repository: a user's actors after a position (keyset paging), ties in time by id", async () => {
      const repo = await ActorRepository.open(store);
      const base = { machineId: 'm', machineVersion: 1, snapshot: '[2]', view: {}, final: false, partnerId: 'p' };
      const at = (id: string, createdAtMs: number, ownerUserId = 'uK') =>
        repo.insert({ ...base, _id: id, kind: 'order', status: 'OPEN', ownerUserId, createdAtMs, updatedAtMs: 1 });
      // newest first: k-5 (ms 30), k-4, k-3, k-2 (all ms 20, by id descending), k-1 (ms 10)
      for (const [id, ms] of [
        ['k-1', 10],
        ['k-2', 20],
        ['k-3', 20],
        ['k-4', 20],
        ['k-5', 30],
      ] as const)
        await at(id, ms);
      await at('k-9', 15, 'uK2');
      const ids = (p: { records: Array<{ _id: string }> }) => p.records.map((r) => r._id);
      const first = await repo.findOwned('uK', { kind: 'order' }, { limit: 2 });
      expect(first.total).toBe(5);
      expect(ids(first)).toEqual(['k-5', 'k-4']);
      const before = ActorRepository.positionOf(first.records[1]!);
      expect(before.startsWith('uK|')).toBe(true);
      const second = await repo.findOwned('uK', { kind: 'order' }, { limit: 2, before });
      expect(second).toMatchObject({ total: 3 });
      expect(ids(second)).toEqual(['k-3', 'k-2']);
      const third = await repo.findOwned(
        'uK',
        { kind: 'order' },
        { limit: 2, before: ActorRepository.positionOf(second.records[1]!) },
      );
      expect(ids(third)).toEqual(['k-1']);
      // skip within and past the records of the position's time
      expect(ids(await repo.findOwned('uK', {}, { before, skip: 1, limit: 2 }))).toEqual(['k-2', 'k-1']);
      expect(ids(await repo.findOwned('uK', {}, { before, skip: 2 }))).toEqual(['k-1']);
      expect(ids(await repo.findOwned('uK', {}, { before }))).toEqual(['k-3', 'k-2', 'k-1']);
      // a position of another user's is no position of this one's: the list from the newest
      expect(ids(await repo.findOwned('uK', {}, { before: 'uK2|000000000000015|k-9', limit: 1 }))).toEqual(['k-5']);
    });

    it('actor repository: quarantined actors are kept but not restorable', async () => {
      const repo = await ActorRepository.open(store);
      await repo.insert(unownedOrder('act-q', 5));
      expect((await repo.findRestorable()).map((r) => r._id)).toContain('act-q');
      expect((await restorableIds(repo, 2)).sort()).toEqual((await repo.findRestorable()).map((r) => r._id).sort());
      await repo.quarantine('act-q', 'broken', 6);
      expect((await repo.findRestorable()).map((r) => r._id)).not.toContain('act-q');
      expect(await restorableIds(repo, 2)).not.toContain('act-q');
      expect((await repo.get('act-q'))?.quarantine).toEqual({ reason: 'broken', atMs: 6 });
    });

    it('actor repository: restorable() reads each restorable record once, in creation order, by pages', async () => {
      const repo = await ActorRepository.open(store);
      // 7 records created in one millisecond (more than a page), then 3 later; one final
      const times = [20, 20, 20, 20, 20, 20, 20, 21, 22, 22];
      for (const [i, t] of times.entries())
        // ids against creation order: j, i, h, …
        await repo.insert({ ...unownedOrder(`pg-${String.fromCharCode(106 - i)}`, t), final: i === 8 });
      const expected = (await repo.findRestorable()).map((r) => r._id);
      expect(expected.filter((id) => id.startsWith('pg-'))).toEqual([
        'pg-d',
        'pg-e',
        'pg-f',
        'pg-g',
        'pg-h',
        'pg-i',
        'pg-j',
        'pg-c',
        'pg-a',
      ]);
      for (const page of [1, 3, 7, 100]) expect(await restorableIds(repo, page)).toEqual(expected);
    });

    it('concurrent writes all land, in order per document (group commit on disk)', async () => {
      const c = await store.collection<Item>('burst');
      await Promise.all(Array.from({ length: 200 }, (_, i) => c.insertOne({ _id: `b${i}`, owner: 'burst', n: 0 })));
      // 5 rounds of 200 concurrent updates: each document ends at n = 5
      for (let round = 1; round <= 5; round++) {
        const matched = await Promise.all(
          Array.from({ length: 200 }, (_, i) => c.updateOne({ _id: `b${i}`, n: round - 1 }, { n: round })),
        );
        expect(matched.every((m) => m === 1)).toBe(true);
      }
      await Promise.all(Array.from({ length: 50 }, (_, i) => c.deleteMany({ _id: `b${i}` })));
      expect(await c.count({ owner: 'burst', n: 5 })).toBe(150);
    });

    it('transaction: its writes commit together, or none when it throws (standalone MongoDB: not atomic)', async () => {
      const atomic = store.adapter === 'sqlite' || (store.adapter === 'mongodb' && (store as MongoStore).transactional);
      const a = await store.collection<Item>('txa', [{ fields: ['n'], unique: true }]);
      const b = await store.collection<Item>('txb');
      await a.insertOne({ _id: 'x0', owner: 'o', n: 0 });
      const out = await store.transaction(async (tx) => {
        const ta = tx.collection<Item>('txa');
        await ta.insertOne({ _id: 'x1', owner: 'o', n: 1 });
        expect(await ta.updateOne({ _id: 'x0' }, { tag: 'in-tx' })).toBe(1);
        await tx.collection<Item>('txb').replaceOne({ _id: 'y1', owner: 'o', n: 1 });
        expect(await ta.findOne({ _id: 'x1' })).toMatchObject({ n: 1 }); // reads its own writes
        return 'done';
      });
      expect(out).toBe('done');
      expect(await a.count({})).toBe(2);
      expect(await b.count({})).toBe(1);
      if (!atomic) return;
      // a write from outside (another request), issued while the transaction runs, is not undone by its rollback
      let go!: () => void;
      const outside = new Promise<void>((resolve) => (go = resolve)).then(() =>
        b.insertOne({ _id: 'y-out', owner: 'o', n: 9 }),
      );
      await expect(
        store.transaction(async (tx) => {
          const ta = tx.collection<Item>('txa');
          await ta.insertOne({ _id: 'x2', owner: 'o', n: 2 });
          await tx.collection<Item>('txb').deleteMany({ _id: 'y1' });
          go();
          await new Promise((resolve) => setImmediate(resolve));
          await ta.updateOne({ _id: 'x0' }, { tag: 'lost' });
          await ta.insertOne({ _id: 'x3', owner: 'o', n: 1 }); // unique n: DuplicateKeyError
        }),
      ).rejects.toBeInstanceOf(DuplicateKeyError);
      await outside;
      expect((await a.find({}, { sort: { n: 1 } })).map((d) => d._id)).toEqual(['x0', 'x1']);
      expect(await a.findOne({ _id: 'x0' })).toMatchObject({ tag: 'in-tx' });
      expect((await b.find({}, { sort: { n: 1 } })).map((d) => d._id)).toEqual(['y1', 'y-out']);
      // a unit of work passed on (withUnit) extends it; concurrent transactions each commit whole
      await Promise.all(
        [1, 2, 3].map((k) =>
          store.transaction(async (tx) => {
            await tx.collection<Item>('txa').insertOne({ _id: `c${k}`, owner: 'c', n: 10 + k });
            await withUnit(store, tx, (same) =>
              same.collection<Item>('txb').insertOne({ _id: `c${k}`, owner: 'c', n: k }),
            );
          }),
        ),
      );
      expect(await a.count({ owner: 'c' })).toBe(3);
      expect(await b.count({ owner: 'c' })).toBe(3);
      // the one given a unit that fails takes its writes back with it
      await expect(
        store.transaction(async (tx) => {
          await withUnit(store, tx, (same) => same.collection<Item>('txb').insertOne({ _id: 'c9', owner: 'c', n: 9 }));
          throw new Error('step failed');
        }),
      ).rejects.toThrow('step failed');
      expect(await b.findOne({ _id: 'c9' })).toBeNull();
    });

    it.runIf(adapter.durable)('keeps everything across a close and re-open', async () => {
      await store.close();
      store = await adapter.open();
      const c = await store.collection<Item>('items');
      expect(await c.count({})).toBe(10);
      const burst = await store.collection<Item>('burst');
      expect(await burst.count({})).toBe(150);
      expect(await burst.count({ n: 5 })).toBe(150);
      const repo = await ActorRepository.open(store);
      expect(await repo.get('act-1')).toMatchObject({ revision: 2 });
      const uniq = await store.collection<Item>('uniq', [{ fields: ['owner', 'n'], unique: true }]);
      await expect(uniq.insertOne({ _id: 'z', owner: 'x', n: 1 })).rejects.toBeInstanceOf(DuplicateKeyError);
    });
  });
}
