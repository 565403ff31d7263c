import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import NedbModule from '@seald-io/nedb';
import { cjsDefault } from '../../../engine/interop.js';
import { EmbeddedStore, TimeSlicer, compactInSlices, sortInSlices } from '../../../engine/store/embedded.js';
import { GroupAppender } from '../../../engine/store/group-append.js';
import type { Collection, Doc as BaseDoc } from '../../../engine/store/port.js';

/** The test documents: any fields. */
type Doc = BaseDoc & Record<string, unknown>;

const Datastore = cjsDefault(NedbModule);

let dirs = 0;
const root = fs.mkdtemp(path.join(os.tmpdir(), 'pts-compact-'));
afterAll(async () => fs.rm(await root, { recursive: true, force: true }));
const freshDir = async () => {
  const dir = path.join(await root, String(dirs++));
  await fs.mkdir(dir);
  return dir;
};

/** The same documents, in an insertion order that is not the `_id` order, with Dates, nesting and unicode. */
function sampleDocs(n: number): Doc[] {
  const out: Doc[] = [];
  for (let i = 0; i < n; i++) {
    const k = (i * 7919) % n; // scrambled
    out.push({ _id: `id-${String(k).padStart(5, '0')}`, n: k, owner: `u${k % 7}`, text: `é ${k} ☃`, nested: { a: [k, { b: 'x' }] }, ...(k % 5 === 0 ? { at: new Date(1_700_000_000_000 + k) } : {}) });
  }
  return out;
}

/** Collection in a store on `dir` with the operations of {@link applyOps}. */
async function applyOps(c: Collection<Doc>, docs: Doc[]): Promise<void> {
  for (let i = 0; i < docs.length; i += 50) await c.insertMany!(docs.slice(i, i + 50));
  for (let i = 0; i < docs.length; i += 3) await c.updateOne({ _id: docs[i]!._id }, { n: -1, updated: true });
  await c.deleteMany({ owner: 'u3' });
}

/** NeDB's own compaction of a file: a plain NeDB datastore loads it and compacts. */
async function nedbCompacted(file: string): Promise<string> {
  const dir = await freshDir();
  const copy = path.join(dir, 'c.db');
  await fs.copyFile(file, copy);
  const ds = new Datastore({ filename: copy, autoload: false });
  await ds.loadDatabaseAsync();
  await ds.compactDatafileAsync();
  return fs.readFile(copy, 'utf8');
}

describe('compaction of the embedded store (issue 15: no stall while it runs)', () => {
  it('writes the same bytes as NeDB\'s compaction (documents in _id order, Dates, unicode, index lines)', async () => {
    const dir = await freshDir();
    const store = await EmbeddedStore.open(dir);
    const c = await store.collection<Doc>('things', [{ fields: ['owner'] }, { fields: ['n'], unique: false, sparse: true }]);
    await applyOps(c, sampleDocs(2_000));
    const file = path.join(dir, 'things.db');
    const expected = await nedbCompacted(file); // the appended file as it stands, compacted by NeDB
    await store.close(); // compacts (compactInSlices)
    expect(await fs.readFile(file, 'utf8')).toBe(expected);
    expect(await fs.stat(`${file}~`).catch(() => null)).toBeNull();
  });

  it('gives the event loop turns, and keeps every write made while it runs (after a reopen they are all there)', async () => {
    const dir = await freshDir();
    const store = await EmbeddedStore.open(dir);
    const c = await store.collection<Doc>('things', [{ fields: ['owner'] }]);
    const docs = sampleDocs(3_000);
    await applyOps(c, docs);
    const internals = c as unknown as { ds: unknown; appender: GroupAppender };
    const slicer = new TimeSlicer(0); // a turn every 256 steps, whatever the clock says
    const tails: number[] = [];
    const takeTail = internals.appender.takeTail.bind(internals.appender);
    internals.appender.takeTail = (keepGoing?: boolean) => {
      const text = takeTail(keepGoing);
      tails.push(text.length);
      return text;
    };
    let turnsSeen = 0;
    const ticking = setInterval(() => turnsSeen++, 0);
    const compaction = compactInSlices(internals.ds, internals.appender, slicer);
    // writes while the compaction runs: inserts, updates of copied documents, deletes
    const during: Promise<unknown>[] = [];
    for (let i = 0; i < 200; i++) {
      during.push(c.insertOne({ _id: `late-${i}`, n: i, owner: 'late' }));
      during.push(c.updateOne({ _id: docs[i]!._id }, { n: 1000 + i }));
      await new Promise((r) => setImmediate(r));
    }
    during.push(c.deleteMany({ owner: 'u4' }));
    await Promise.all(during);
    await compaction;
    clearInterval(ticking);
    expect(slicer.yields).toBeGreaterThan(10);
    expect(turnsSeen).toBeGreaterThan(0);
    expect(tails.reduce((a, b) => a + b, 0)).toBeGreaterThan(0); // writes landed while it ran
    const expected = await c.find({}, { sort: { _id: 1 } });
    // the file as the compaction and the appends after it left it, read as after a kill -9
    const reopened = await EmbeddedStore.open(dir);
    const again = await reopened.collection<Doc>('things', [{ fields: ['owner'] }]);
    const got = await again.find({}, { sort: { _id: 1 } });
    expect(got).toEqual(expected);
    expect(got.filter((d) => d.owner === 'late')).toHaveLength(200);
    expect(got.some((d) => d.owner === 'u4')).toBe(false);
    expect(got.find((d) => d._id === docs[5]!._id)?.n).toBe(1005);
    await reopened.close();
    await store.close();
  });

  it('a failed compaction leaves the file as it was and no temporary file; writes go on', async () => {
    const dir = await freshDir();
    const store = await EmbeddedStore.open(dir);
    const c = await store.collection<Doc>('things');
    await c.insertMany!(sampleDocs(100));
    const file = path.join(dir, 'things.db');
    const before = await fs.readFile(file, 'utf8');
    const internals = c as unknown as { ds: { persistence: { modes: { dirMode: number } } }; appender: GroupAppender };
    await fs.mkdir(`${file}~`); // the temporary file cannot be opened for writing
    await expect(compactInSlices(internals.ds, internals.appender)).rejects.toThrow();
    await fs.rm(`${file}~`, { recursive: true, force: true });
    expect(await fs.readFile(file, 'utf8')).toBe(before);
    await c.insertOne({ _id: 'after', n: 1 });
    await store.close();
    const reopened = await EmbeddedStore.open(dir);
    expect(await (await reopened.collection<Doc>('things')).count({})).toBe(101);
    await reopened.close();
  });

  it('property: sortInSlices sorts as Array.prototype.sort does (stable), yielding when the slice is used up', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(fc.integer({ min: 0, max: 50 }), fc.nat()), { maxLength: 5000 }), async (items) => {
        const cmp = (a: [number, number], b: [number, number]) => a[0] - b[0];
        const slicer = new TimeSlicer(0);
        const got = await sortInSlices(items, cmp, slicer);
        expect(got).toEqual([...items].sort(cmp));
        if (items.length > 2048) expect(slicer.yields).toBeGreaterThan(0);
      }),
      { numRuns: 40 },
    );
  });
});

describe('removals of many documents (issue 15: the venue journal pruned after a checkpoint)', () => {
  it('in memory, a deleteMany of 100 or more lets the event loop turn before it resolves; a small one does not wait', async () => {
    const store = await EmbeddedStore.open(null);
    const c = await store.collection<Doc>('journal');
    const pad = (n: number) => String(n).padStart(12, '0');
    const docs: Doc[] = [];
    for (let i = 1; i <= 1000; i++) docs.push({ _id: pad(i), seq: i });
    await c.insertMany!(docs);
    let turned = false;
    setImmediate(() => (turned = true));
    expect(await c.deleteMany({ _id: { $lte: pad(10) } })).toBe(10);
    expect(turned).toBe(false); // resolved in the same turn
    expect(await c.deleteMany({ _id: { $lte: pad(500) } })).toBe(490);
    expect(turned).toBe(true);
    // the _id order kept through the removals: ranges and scans still right
    expect((await c.find({ _id: { $gt: pad(990) } })).map((d) => d.seq)).toEqual([991, 992, 993, 994, 995, 996, 997, 998, 999, 1000]);
    expect(await c.count({})).toBe(500);
    await store.close();
  });
});
