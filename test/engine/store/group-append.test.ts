import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { GroupAppender } from '../../../engine/store/group-append.js';

describe('GroupAppender (group commit of the embedded store)', () => {
  const dirP = fs.mkdtemp(path.join(os.tmpdir(), 'pts-append-'));
  afterAll(async () => fs.rm(await dirP, { recursive: true, force: true }));

  it('writes every enqueued line in order; callers arriving during a write share the next one', async () => {
    const file = path.join(await dirP, 'a.db');
    const a = new GroupAppender(file, 0o644);
    const done: Promise<void>[] = [];
    for (let i = 0; i < 1000; i++) {
      a.enqueue(`${i}\n`);
      done.push(a.durable());
    }
    // the first call starts a write alone; the 999 after it join one batch
    expect(new Set(done).size).toBe(2);
    await Promise.all(done);
    const lines = (await fs.readFile(file, 'utf8')).trim().split('\n');
    expect(lines).toEqual(Array.from({ length: 1000 }, (_, i) => String(i)));
    await a.release();
  });

  it('release() writes what is queued and closes, so a replaced file is reopened', async () => {
    const file = path.join(await dirP, 'b.db');
    const a = new GroupAppender(file, 0o644);
    a.enqueue('one\n');
    void a.durable();
    a.enqueue('two\n');
    await a.release();
    expect(await fs.readFile(file, 'utf8')).toBe('one\ntwo\n');
    await fs.rename(file, `${file}.old`);
    await fs.writeFile(file, 'compacted\n');
    a.enqueue('three\n');
    await a.durable();
    expect(await fs.readFile(file, 'utf8')).toBe('compacted\nthree\n');
    await a.release();
  });

  it('a failed write is never dropped: retried until it lands, its callers and later ones wait; failure shows meanwhile (issue 12)', async () => {
    const file = path.join(await dirP, 'missing-dir', 'c.db');
    const seen: Array<string | null> = [];
    const a = new GroupAppender(file, 0o644, (f) => seen.push(f ? f.message : null));
    a.enqueue('x\n');
    let xDone = false;
    const x = a.durable().then(() => (xDone = true));
    await new Promise((r) => setTimeout(r, 120));
    expect(xDone).toBe(false);
    expect(a.failure).toMatchObject({ code: 'ENOENT' });
    a.enqueue('y\n');
    const y = a.durable();
    await fs.mkdir(path.dirname(file));
    await Promise.all([x, y]);
    expect(a.failure).toBeNull();
    // x is written again after a newline (a partly written line stays a line of its own), then y
    expect((await fs.readFile(file, 'utf8')).split('\n').filter(Boolean)).toEqual(['x', 'y']);
    expect(seen[0]).toMatch(/ENOENT/);
    expect(seen.at(-1)).toBeNull();
    await a.release();
  });
});

describe('serializeLine (data-file lines of the embedded store)', () => {
  it("writes exactly NeDB's own line for any document, with or without Dates", async () => {
    const { createRequire } = await import('node:module');
    const { serializeLine } = await import('../../../engine/store/embedded.js');
    const fc = (await import('fast-check')).default;
    const nedb = createRequire(import.meta.url)('@seald-io/nedb/lib/model.js') as { serialize(d: unknown): string };
    const key = fc.string({ minLength: 1, maxLength: 8 }).filter((k) => !k.startsWith('$') && !k.includes('.'));
    const leaf = fc.oneof(fc.string(), fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean(), fc.constant(null), fc.constant(undefined), fc.date({ noInvalidDate: true }));
    const { tree } = fc.letrec((tie) => ({
      tree: fc.oneof({ depthSize: 'small' }, leaf, fc.array(tie('tree'), { maxLength: 4 }), fc.dictionary(key, tie('tree'), { maxKeys: 4 })),
    }));
    fc.assert(
      fc.property(fc.dictionary(key, tree, { maxKeys: 6 }), fc.string(), (doc, id) => {
        const d = { _id: id, ...doc };
        expect(serializeLine(d)).toBe(nedb.serialize(d));
      }),
      { numRuns: 500 },
    );
  });
});
