import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EmbeddedStore } from '../../../engine/store/embedded.js';
import { SqliteStore } from '../../../engine/store/sqlite.js';

interface Item {
  _id: string;
  n: number;
  at?: Date;
  nested?: { k: string };
}

describe("the SQLite store imports the embedded store's files once", () => {
  let dir: string;
  afterAll(async () => {
    if (dir) await fs.rm(dir, { recursive: true, force: true });
  });

  it('documents as last written (updates, deletes, Dates), then never again', async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-import-'));
    const at = new Date(1_700_000_000_123);
    const old = await EmbeddedStore.open(dir);
    const items = await old.collection<Item>('items', [{ fields: ['n'], unique: true }]);
    await items.insertOne({ _id: 'a', n: 1, at, nested: { k: 'x' } });
    await items.insertOne({ _id: 'b', n: 2 });
    await items.insertOne({ _id: 'c', n: 3 });
    await items.updateOne({ _id: 'b' }, { n: 20 });
    await items.deleteMany({ _id: 'c' });
    await (await old.collection<Item>('other')).insertOne({ _id: 'o', n: 0 });
    // the files as a crash leaves them: not compacted (updates and deletes are later lines)
    for (const c of ['items', 'other']) {
      const pending = (old as unknown as { collections: Map<string, Promise<{ appender: { release(): Promise<void> } | null; compaction: NodeJS.Timeout | null }>> }).collections.get(c)!;
      const col = await pending;
      if (col.compaction) clearInterval(col.compaction);
      await col.appender?.release();
    }
    expect((await fs.readFile(path.join(dir, 'items.db'), 'utf8')).split('\n').filter(Boolean).length).toBeGreaterThan(4);

    let store = await SqliteStore.open(dir);
    const got = await store.collection<Item>('items', [{ fields: ['n'], unique: true }]);
    expect(await got.find({}, { sort: { _id: 1 } })).toEqual([
      { _id: 'a', n: 1, at, nested: { k: 'x' } },
      { _id: 'b', n: 20 },
    ]);
    expect((await got.findOne({ _id: 'a' }))?.at).toBeInstanceOf(Date);
    expect(await got.count({ at: { $gte: at } })).toBe(1);
    expect(await (await store.collection<Item>('other')).count({})).toBe(1);
    await got.deleteMany({ _id: 'a' });
    await store.close();

    store = await SqliteStore.open(dir);
    expect((await (await store.collection<Item>('items')).find({})).map((d) => d._id)).toEqual(['b']);
    await store.close();
  });
});
