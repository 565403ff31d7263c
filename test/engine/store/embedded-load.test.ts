import { createRequire } from 'node:module';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import NedbModule from '@seald-io/nedb';
import { cjsDefault } from '../../../engine/interop.js';
import { loadDatastore, readDatafile } from '../../../engine/store/embedded-load.js';
import { EmbeddedStore } from '../../../engine/store/embedded.js';

const Datastore = cjsDefault(NedbModule);
const model = createRequire(import.meta.url)('@seald-io/nedb/lib/model.js') as { serialize(doc: unknown): string };

interface Loaded {
  error: string | null;
  docs: unknown[];
  indexes: Record<string, { unique: boolean; sparse: boolean; all: unknown[]; byKey: unknown[][] }>;
  file: string;
  afterLoad: unknown[];
}

type Internals = {
  indexes: Record<string, { fieldName: string; unique: boolean; sparse: boolean; getAll(): unknown[]; getMatching(k: unknown): unknown[]; tree?: { tree: { checkIsAVLT(): void } } }>;
  getAllData(): unknown[];
};

let dirs = 0;
const root = fs.mkdtemp(path.join(os.tmpdir(), 'pts-load-'));
afterAll(async () => fs.rm(await root, { recursive: true, force: true }));

/** Loads `content` as a data file with NeDB's own load (`nedb`) or ours, and everything observable after. */
async function load(content: string, how: 'nedb' | 'ours', probeKeys: unknown[]): Promise<Loaded> {
  const dir = path.join(await root, String(dirs++));
  await fs.mkdir(dir);
  const filename = path.join(dir, 'c.db');
  await fs.writeFile(filename, content);
  const ds = new Datastore({ filename, autoload: false });
  let error: string | null = null;
  try {
    if (how === 'nedb') await ds.loadDatabaseAsync();
    else await loadDatastore(ds);
  } catch (err) {
    error = (err as Error).message;
  }
  const internals = ds as unknown as Internals;
  const indexes: Loaded['indexes'] = {};
  for (const [name, ix] of Object.entries(internals.indexes)) {
    if (ix.tree) ix.tree.tree.checkIsAVLT(); // (a unique index on one field is the store's UniqueIndex, without a tree)
    indexes[name] = { unique: ix.unique, sparse: ix.sparse, all: ix.getAll(), byKey: probeKeys.map((k) => ix.getMatching(k)) };
  }
  const afterLoad = error ? [] : await ds.findAsync({}).sort({ _id: 1 });
  return { error, docs: internals.getAllData(), indexes, file: await fs.readFile(filename, 'utf8'), afterLoad };
}

async function expectSame(content: string, probeKeys: unknown[] = []): Promise<Loaded> {
  const nedb = await load(content, 'nedb', probeKeys);
  const ours = await load(content, 'ours', probeKeys);
  expect(ours).toEqual(nedb);
  // Dates stay Dates (toEqual compares them by time)
  expect(ours.docs.map((d) => Object.values(d as object).map((v) => v instanceof Date))).toEqual(nedb.docs.map((d) => Object.values(d as object).map((v) => v instanceof Date)));
  return ours;
}

const line = (doc: unknown) => model.serialize(doc);

describe('loadDatastore (embedded store: a faster NeDB load)', () => {
  it('gives what NeDB gives on a file with updates, deletes, index lines, dates and a torn last line', async () => {
    const lines: string[] = [];
    for (let i = 0; i < 40; i++) lines.push(line({ _id: `id${i % 17}`, n: i, ownerKey: i % 5 ? `k${i}` : undefined, at: new Date(1_700_000_000_000 + i), nested: { a: [i, { b: 'x' }] } }));
    lines.push(line({ _id: 'id3', $$deleted: true }));
    lines.push(line({ $$indexCreated: { fieldName: 'ownerKey', unique: true, sparse: true } }));
    lines.push(line({ $$indexCreated: { fieldName: 'n', unique: false, sparse: false } }));
    lines.push(line({ $$indexCreated: { fieldName: 'gone', unique: false, sparse: false } }));
    lines.push(line({ $$indexRemoved: 'gone' }));
    lines.push(line({ _id: '12', n: 1, ownerKey: 'numeric-looking id' }));
    const content = `${lines.join('\n')}\n{"_id":"torn","n":`;
    const r = await expectSame(content, ['k1', 'id4', 1, 39]);
    expect(r.error).toBeNull();
    expect(Object.keys(r.indexes).sort()).toEqual(['_id', 'n', 'ownerKey']);
    expect(r.docs).toHaveLength(17); // 17 ids, one deleted, '12' added
  });

  it('refuses a file more than 10% corrupt as NeDB does (a torn line among few)', async () => {
    const content = `${line({ _id: 'a', x: 1 })}\n${line({ _id: 'b', x: 2 })}\n{"_id":"c","x`;
    const r = await expectSame(content);
    expect(r.error).toMatch(/33% of the data file is corrupt/);
  });

  it('reports a unique index violated by the stored documents as NeDB does (indexes left empty)', async () => {
    const content = [line({ _id: 'a', k: 'same' }), line({ _id: 'b', k: 'same' }), line({ $$indexCreated: { fieldName: 'k', unique: true } })].join('\n');
    const r = await expectSame(content, ['same']);
    expect(r.error).toMatch(/unique constraint/);
  });

  it('splits lines at every Unicode line boundary, as NeDB does; handles CRLF, blank lines, null and non-object lines', async () => {
    const content = [line({ _id: 'a', s: 'one\u2028two' }), '', line({ _id: 'b', s: 'x' }), 'null', '5', '"str"', line({ _id: 'c', s: 'y' })].join('\r\n') + '\n\n';
    await expectSame(content, []);
  });

  it('property: any mix of inserts, updates, deletes, index lines, blank, corrupt and torn lines loads as with NeDB', async () => {
    const id = fc.constantFrom('a', 'b', 'c', '1', '10', '007', 'zz', 'é', '__proto__');
    const value = fc.oneof(fc.string({ maxLength: 6 }), fc.constantFrom('é', '€ 𝄞', 'a\u2028b', 'x\ry'), fc.integer(), fc.constant(null), fc.boolean(), fc.date({ min: new Date(0), max: new Date(4e12), noInvalidDate: true }));
    const docLine = fc.record({ _id: id, v: value, k: fc.option(fc.constantFrom('k1', 'k2', 'k3', 'k4', 'k5', 'k6'), { nil: undefined }), o: fc.option(fc.record({ d: value }), { nil: undefined }) }).map(line);
    const entry = fc.oneof(
      { weight: 8, arbitrary: docLine },
      { weight: 2, arbitrary: id.map((i) => line({ _id: i, $$deleted: true })) },
      { weight: 1, arbitrary: fc.record({ fieldName: fc.constantFrom('k', 'v', 'o.d'), unique: fc.boolean(), sparse: fc.boolean() }).map((x) => line({ $$indexCreated: x })) },
      { weight: 1, arbitrary: fc.constantFrom('k', 'v').map((f) => line({ $$indexRemoved: f })) },
      { weight: 1, arbitrary: fc.constantFrom('', '{"_id":', 'garbage', '{}') },
    );
    await fc.assert(
      fc.asyncProperty(fc.array(entry, { maxLength: 60 }), fc.boolean(), fc.constantFrom('\n', '\r\n'), async (entries, torn, eol) => {
        const content = entries.join(eol) + (torn ? `${eol}{"_id":"t","v":` : eol);
        const r = await expectSame(content, ['k1', 'k2', 'a', 1, null]);
        // and the file NeDB compacted it to (ours then leaves it as it is, unless it holds Dates)
        if (!r.error) await expectSame(r.file, ['k1', 'k2', 'a', 1, null]);
      }),
      { numRuns: 60 },
    );
  });

  it('leaves a file that is already compact as it is (no rewrite), and rewrites one that is not', async () => {
    const lines = [line({ _id: 'a', k: 'x' }), line({ _id: 'b', k: 'y' }), line({ $$indexCreated: { fieldName: 'k', unique: true, sparse: false } })];
    const compact = `${lines.join('\n')}\n`;
    const r = await expectSame(compact, ['x']);
    expect(r.file).toBe(compact);
    const inode = async (content: string) => {
      const dir = path.join(await root, String(dirs++));
      await fs.mkdir(dir);
      const filename = path.join(dir, 'c.db');
      await fs.writeFile(filename, content);
      const before = (await fs.stat(filename)).ino;
      await loadDatastore(new Datastore({ filename, autoload: false }));
      return (await fs.stat(filename)).ino === before;
    };
    expect(await inode(compact)).toBe(true);
    expect(await inode(`${lines[1]}\n${lines[0]}\n${lines[2]}\n`)).toBe(false); // not in _id order
    expect(await inode(`${lines.join('\n')}`)).toBe(false); // no newline after the last line
    expect(await inode(`${lines[0]}\n${lines[0]}\n${lines[1]}\n${lines[2]}\n`)).toBe(false); // a line overridden
  });

  it('reads the same in pieces of any size (lines longer than a piece, UTF-8 characters cut by a piece boundary)', async () => {
    const dir = path.join(await root, String(dirs++));
    await fs.mkdir(dir);
    const filename = path.join(dir, 'c.db');
    const text = fc.string({ unit: fc.constantFrom('a', 'é', '€', '𝄞', '\u2028', '"', '\\', '\r') , maxLength: 30 });
    await fc.assert(
      fc.asyncProperty(fc.array(fc.record({ _id: fc.constantFrom('a', 'b', 'c'), s: text }), { maxLength: 12 }), fc.integer({ min: 1, max: 64 }), async (docs, chunk) => {
        await fs.writeFile(filename, docs.map(line).join('\n') + '\n');
        const whole = await readDatafile(filename, 1);
        const pieces = await readDatafile(filename, 1, chunk);
        expect([pieces.data, pieces.indexes, pieces.compactIndexLines]).toEqual([whole.data, whole.indexes, whole.compactIndexLines]);
        // a line's bytes, where both reads know them (not after a piece split at other line breaks), are the same
        const bytes = await fs.readFile(filename);
        for (const [key, k] of whole.lines.byKey) {
          const j = pieces.lines.byKey.get(key)!;
          if (whole.lines.starts[k]! < 0 || pieces.lines.starts[j]! < 0) continue;
          expect([pieces.lines.starts[j], pieces.lines.ends[j]]).toEqual([whole.lines.starts[k], whole.lines.ends[k]]);
          expect(bytes.subarray(whole.lines.starts[k], whole.lines.ends[k]).toString()).toBe(line(whole.lines.docs[k]));
        }
      }),
      { numRuns: 200 },
    );
  });

  it('through the embedded store: records written, updated and deleted are there after a reopen, file compacted', async () => {
    const dir = path.join(await root, 'store');
    let store = await EmbeddedStore.open(dir);
    let c = await store.collection<{ _id: string; n: number; ownerKey?: string }>('things', [{ fields: ['ownerKey'], unique: true, sparse: true }]);
    for (let i = 0; i < 50; i++) await c.insertOne({ _id: `t${i}`, n: i, ...(i % 2 ? { ownerKey: `o${i}` } : {}) });
    for (let i = 0; i < 50; i += 3) await c.updateOne({ _id: `t${i}` }, { n: -i - 100 });
    await c.deleteMany({ n: { $gt: 40 } });
    const before = await c.find({}, { sort: { _id: 1 } });
    // a reopen without close (kill -9): the file still holds every appended line
    store = await EmbeddedStore.open(dir);
    c = await store.collection('things', [{ fields: ['ownerKey'], unique: true, sparse: true }]);
    expect(await c.find({}, { sort: { _id: 1 } })).toEqual(before);
    expect(await c.findOne({ ownerKey: 'o7' })).toEqual(before.find((d) => d._id === 't7'));
    const text = await fs.readFile(path.join(dir, 'things.db'), 'utf8');
    expect(text.trim().split('\n')).toHaveLength(before.length + 1); // compacted: one line per record + the index line
    await store.close();
  });
});
