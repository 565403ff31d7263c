import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { poll } from '../../api/trading-kit.js';
import { SqliteStore } from '../../../engine/store/sqlite.js';
import { runUntil } from '../../process.js';
import { FaultyStore, InjectedFault, fileHandles } from './faulty-store.js';

/**
 * The SQLite store on disk: writes issued together share one commit; checkpoints keep every
 * acknowledged write across `kill -9`; `store.transaction` leaves all or none of its writes when a
 * write inside fails (fault injection) and when the process dies between two writes (`kill -9` of
 * a child process on the built store, dist/), while a transaction that completed stays whole.
 */
describe('the SQLite store on disk: group commit, checkpoints, transactions', () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const d of dirs) await fs.rm(d, { recursive: true, force: true });
  });

  it('writes issued together share one commit (group commit), each answered after it', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-sqlite-gc-'));
    dirs.push(dir);
    const store = await SqliteStore.open(dir);
    const c = await store.collection<{ _id: string; n: number }>('burst');
    const before = store.writer.commits;
    await Promise.all(Array.from({ length: 500 }, (_, i) => c.insertOne({ _id: `b${i}`, n: i })));
    expect(store.writer.commits - before).toBe(1);
    await Promise.all(Array.from({ length: 500 }, (_, i) => c.updateOne({ _id: `b${i}` }, { n: -i })));
    expect(store.writer.commits - before).toBe(2);
    await store.close();
  });

  it('commitNow while every fsync lane runs: the writes asked meanwhile share one COMMIT as one ends', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-sqlite-prompt-'));
    dirs.push(dir);
    const store = await SqliteStore.open(dir);
    const c = await store.collection<{ _id: string; n: number }>('prompt');
    const before = store.writer.commits;
    const first = c.insertOne({ _id: 'p0', n: 0 });
    store.commitNow(); // committed at once: its fsync starts (one lane)
    const second = c.insertOne({ _id: 'p1', n: 1 });
    store.commitNow(); // a lane is free: committed at once, its fsync starts (both lanes run)
    expect(store.writer.commits - before).toBe(2);
    const later = [2, 3, 4].map((i) => {
      const w = c.insertOne({ _id: `p${i}`, n: i });
      store.commitNow(); // both fsyncs run: this commit waits for one to end
      return w;
    });
    expect(store.writer.commits - before).toBe(2);
    await Promise.all([first, second]);
    await Promise.all(later);
    expect(store.writer.commits - before).toBe(3);
    await store.close();
    const reopened = await SqliteStore.open(dir);
    const stored = await (await reopened.collection<{ _id: string; n: number }>('prompt')).find({});
    expect(stored.map((d) => d.n).sort()).toEqual([0, 1, 2, 3, 4]);
    await reopened.close();
  });

  it('a batch waits a few loop turns while writes keep joining it; a lone write commits on the next turn', async () => {
    const store = await SqliteStore.open(null);
    const c = await store.collection<{ _id: string; n: number }>('turns');
    // the next turn's check phase, after the scheduled commit has been considered (as the requests
    // a busy loop reads in each turn)
    const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
    const before = store.writer.commits;
    // two writes in one turn, then one in each of the next two turns (a busy loop): one commit
    const writes: Promise<void>[] = [c.insertOne({ _id: 't0', n: 0 }), c.insertOne({ _id: 't1', n: 1 })];
    for (let i = 2; i < 4; i++) {
      await nextTurn();
      writes.push(c.insertOne({ _id: `t${i}`, n: i }));
    }
    await Promise.all(writes);
    expect(store.writer.commits - before).toBe(1);
    // a write nobody joins is committed in the same turn's check phase, as before
    let answered = false;
    const lone = c.insertOne({ _id: 'lone', n: 0 }).then(() => (answered = true));
    await nextTurn();
    await nextTurn();
    expect(answered).toBe(true);
    await lone;
    expect(store.writer.commits - before).toBe(2);
    // writes joining on every turn: the batch still commits after a few turns
    let outcome: string | null = null;
    void c.insertOne({ _id: 's0', n: 0 }).then(() => (outcome = 'committed'));
    void c.insertOne({ _id: 's1', n: 1 });
    let turns = 0;
    for (let i = 2; outcome === null && i < 50; i++, turns++) {
      await nextTurn();
      void c.insertOne({ _id: `s${i}`, n: i });
    }
    expect(outcome).toBe('committed');
    expect(turns).toBeLessThanOrEqual(4);
    await store.close();
  });

  it('a lazy write applies and answers at once; it commits with the next write, or alone within 250 ms', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-sqlite-lazy-'));
    dirs.push(dir);
    const store = await SqliteStore.open(dir);
    const c = await store.collection<{ _id: string; n: number }>('jobs', [{ fields: ['n'] }]);
    const lazy = store.lazyCollection<{ _id: string; n: number }>('jobs');
    await c.insertOne({ _id: 'j1', n: 1 });
    const before = store.writer.commits;
    expect(await lazy.updateOne({ _id: 'j1', n: 1 }, { n: 2 })).toBe(1); // answered before any commit
    expect(await lazy.updateOne({ _id: 'j1', n: 1 }, { n: 3 })).toBe(0); // the first one is seen at once
    expect(await c.findOne({ n: 2 })).toEqual({ _id: 'j1', n: 2 });
    expect(store.writer.commits).toBe(before);
    await c.insertOne({ _id: 'j2', n: 1 }); // takes the lazy writes along: one commit
    expect(store.writer.commits).toBe(before + 1);
    expect(await lazy.deleteMany({ _id: 'j2' })).toBe(1);
    await new Promise((r) => setTimeout(r, 100));
    expect(store.writer.commits).toBe(before + 1);
    await new Promise((r) => setTimeout(r, 400));
    expect(store.writer.commits).toBe(before + 2); // alone, once nothing else committed
    await store.close();
    const again = await SqliteStore.open(dir);
    expect(await (await again.collection('jobs')).find({})).toEqual([{ _id: 'j1', n: 2 }]);
    await again.close();
  });

  it("a commit made while a WAL fsync runs starts its own; the answers keep the commits' order", async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-sqlite-lanes-'));
    dirs.push(dir);
    const store = await SqliteStore.open(dir);
    const c = await store.collection<{ _id: string }>('docs');
    // the next fsync of a file handle (the WAL's) takes 400 ms, as under another process's disk load
    const proto = await fileHandles();
    const datasync = proto.datasync;
    let started = 0;
    let slowDone = false;
    let startedDuringSlow = 0;
    const spy = vi.spyOn(proto, 'datasync').mockImplementation(async function (this: unknown) {
      if (started++ === 0) {
        await new Promise((r) => setTimeout(r, 400));
        slowDone = true;
      } else if (!slowDone) startedDuringSlow++;
      return datasync.call(this);
    });
    try {
      const answered: string[] = [];
      const first = c.insertOne({ _id: 'a' }).then(() => answered.push('a'));
      await new Promise((r) => setTimeout(r, 20)); // committed, its fsync running
      const second = c.insertOne({ _id: 'b' }).then(() => answered.push('b'));
      await Promise.all([first, second]);
      // the second fsync ran beside the slow one, and b was answered only once a (before it) was durable
      expect(startedDuringSlow).toBe(1);
      expect(answered).toEqual(['a', 'b']);
    } finally {
      spy.mockRestore();
    }
    await store.close();
  });

  it('a failed WAL fsync stops the store: that batch and every later write refused until a restart', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-sqlite-eio-'));
    dirs.push(dir);
    let store = await SqliteStore.open(dir);
    let c = await store.collection<{ _id: string }>('docs');
    await c.insertOne({ _id: 'kept' });
    const proto = await fileHandles();
    const spy = vi
      .spyOn(proto, 'datasync')
      .mockRejectedValueOnce(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }));
    try {
      await expect(c.insertOne({ _id: 'lost' })).rejects.toThrow(/WAL fsync failed \(EIO/);
      // the disk answers again, but what it dropped cannot be known: nothing more is acknowledged
      await expect(c.insertOne({ _id: 'after' })).rejects.toThrow(/store stopped/);
      await expect(store.transaction(async (tx) => tx.collection('docs').insertOne({ _id: 't' }))).rejects.toThrow(
        /store stopped/,
      );
      const later = Date.now() + 60_000;
      vi.spyOn(Date, 'now').mockReturnValue(later); // it does not lapse, unlike a failed commit
      expect(store.writeFailure()).toMatch(/^sqlite: store stopped: a WAL fsync failed/);
    } finally {
      vi.restoreAllMocks();
      spy.mockRestore();
    }
    await store.close();
    store = await SqliteStore.open(dir);
    c = await store.collection<{ _id: string }>('docs');
    expect(store.writeFailure()).toBeNull();
    expect(await c.findOne({ _id: 'kept' })).toEqual({ _id: 'kept' });
    expect(await c.findOne({ _id: 'after' })).toBeNull();
    await c.insertOne({ _id: 'again' });
    expect(await c.findOne({ _id: 'again' })).toEqual({ _id: 'again' });
    await store.close();
  });

  it(
    'kill -9 while writing across checkpoints: every acknowledged write is there, the file is intact',
    { timeout: 60_000 },
    async () => {
      const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-sqlite-cp-'));
      dirs.push(dir);
      const script = `import('./dist/engine/store/sqlite.js').then(async ({ SqliteStore }) => {
      const store = await SqliteStore.open(process.env.DIR, { checkpointBytes: 256 * 1024 });
      const c = await store.collection('docs', [{ fields: ['n'], unique: true }]);
      for (let wave = 0; ; wave++) {
        await Promise.all(
          Array.from({ length: 50 }, (_, i) =>
            c.insertOne({ _id: 'd' + (wave * 50 + i), n: wave * 50 + i, pad: 'x'.repeat(500) }),
          ),
        );
        console.log('acked ' + (wave + 1) * 50 + ' checkpoints ' + store.writer.checkpoints);
      }
    })`;
      const run = await runUntil(script, dir, 'checkpoints 3');
      await new Promise((r) => setTimeout(r, 30));
      run.child.kill('SIGKILL');
      await run.exited;
      const acked = Math.max(...[...run.out().matchAll(/acked (\d+)/g)].map((m) => Number(m[1])));
      const store = await SqliteStore.open(dir);
      expect(store.db.pragma('integrity_check', { simple: true })).toBe('ok');
      const c = await store.collection<{ _id: string; n: number }>('docs');
      expect(await c.count({ n: { $lt: acked } })).toBe(acked);
      await store.close();
    },
  );

  it('checkpoints run beside the writes; under a steady stream the WAL stays bounded', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-sqlite-ckpt-'));
    dirs.push(dir);
    const checkpointBytes = 256 * 1024;
    const store = await SqliteStore.open(dir, { checkpointBytes });
    const c = await store.collection<{ _id: string; n: number; pad: string }>('docs', [{ fields: ['n'] }]);
    const wal = path.join(dir, 'store.sqlite-wal');
    // the writing connection (the event loop's) never runs one: the worker thread's connection does
    const pragmas = vi.spyOn(store.db, 'pragma');
    let written = 0;
    let largestWal = 0;
    let walCut = false;
    // a write always pending (each wave starts once the last one is answered): SQLite can start the
    // WAL over only after a checkpoint that no write overlapped, which past 16 times the checkpoint
    // size is one that holds the writes; the others run beside them, one each time the WAL has
    // grown by the checkpoint size
    while (store.writer.checkpoints < 24) {
      await Promise.all(
        Array.from({ length: 20 }, () => c.insertOne({ _id: `d${written}`, n: written++, pad: 'x'.repeat(500) })),
      );
      const size = (await fs.stat(wal)).size;
      walCut ||= size < largestWal;
      largestWal = Math.max(largestWal, size);
    }
    // few hold the writes (each after several that ran beside them)
    expect(store.writer.heldCheckpoints).toBeLessThanOrEqual(store.writer.checkpoints / 4);
    expect(largestWal).toBeLessThan(17 * checkpointBytes);
    // a WAL started over keeps its file (frames written over its blocks): never cut back on the event loop
    expect(walCut).toBe(false);
    expect(pragmas.mock.calls.filter(([sql]) => /checkpoint/i.test(String(sql)))).toEqual([]);
    await store.close();
    const again = await SqliteStore.open(dir);
    expect(again.db.pragma('integrity_check', { simple: true })).toBe('ok');
    expect(await (await again.collection('docs')).count({})).toBe(written);
    await again.close();
  });

  it('a checkpoint holding the writes as a transaction ends: the next transaction waits for its end', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-sqlite-held-'));
    dirs.push(dir);
    // writes are held past 16 × 8 KiB of WAL: A's commit alone takes the WAL past it
    const store = await SqliteStore.open(dir, { checkpointBytes: 8 * 1024 });
    const c = await store.collection<{ _id: string; pad: string }>('held');
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const a = store.transaction(async (tx) => {
      const docs = tx.collection<{ _id: string; pad: string }>('held');
      for (let i = 0; i < 200; i++) await docs.insertOne({ _id: `a${i}`, pad: 'x'.repeat(1000) });
      await gate;
    });
    await new Promise<void>((resolve) => setImmediate(resolve));
    // B waits for A; a commit is asked for while A holds the writer: it happens as A ends, and the
    // checkpoint it then starts holds the writes
    let heldWhenBStarted = -1;
    const b = store.transaction(async (tx) => {
      heldWhenBStarted = store.writer.heldCheckpoints;
      await tx.collection<{ _id: string; pad: string }>('held').insertOne({ _id: 'b', pad: '' });
    });
    store.commitNow();
    const heldBefore = store.writer.heldCheckpoints;
    release();
    await Promise.all([a, b]);
    // B started once that checkpoint had ended (not at once, taking the writer over from it)
    expect(heldWhenBStarted).toBe(heldBefore + 1);
    expect(await c.count({})).toBe(201);
    await store.close();
  });

  it('a write that fails inside the transaction (injected) undoes the writes before it', async () => {
    const store = new FaultyStore(await SqliteStore.open(null));
    const steps = await store.collection<{ _id: string; n: number }>('steps');
    const records = await store.collection<{ _id: string; n: number }>('records');
    store.failNth('records', 'insertOne', 1);
    type Row = { _id: string; n: number };
    await expect(
      store.transaction(async (tx) => {
        await tx.collection<Row>('steps').insertOne({ _id: 's1', n: 1 });
        await tx.collection<Row>('steps').updateOne({ _id: 's1' }, { n: 2 });
        await tx.collection<Row>('records').insertOne({ _id: 'r1', n: 1 });
      }),
    ).rejects.toBeInstanceOf(InjectedFault);
    expect(await steps.count({})).toBe(0);
    expect(await records.count({})).toBe(0);
    await store.transaction(async (tx) => {
      await tx.collection<Row>('steps').insertOne({ _id: 's1', n: 1 });
      await tx.collection<Row>('records').insertOne({ _id: 'r1', n: 1 });
    });
    expect(await steps.count({})).toBe(1);
    expect(await records.count({})).toBe(1);
    await store.close();
  });

  it(
    'kill -9 between two writes of a transaction: after the restart neither is there; an earlier one is whole',
    { timeout: 30_000 },
    async () => {
      const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-sqlite-tx-'));
      dirs.push(dir);
      // the first transaction completes; the second stops between its writes until killed, while a
      // write from outside waits for it
      const script = `import('./dist/engine/store/sqlite.js').then(async ({ SqliteStore }) => {
      const store = await SqliteStore.open(process.env.DIR);
      const steps = await store.collection('steps');
      const records = await store.collection('records');
      await store.transaction(async (tx) => {
        await tx.collection('steps').insertOne({ _id: 's1', n: 1 });
        await tx.collection('records').insertOne({ _id: 'r1', n: 1 });
      });
      console.log('committed');
      let between;
      const reached = new Promise((r) => (between = r));
      void store.transaction(async (tx) => {
        await tx.collection('steps').updateOne({ _id: 's1' }, { n: 2 });
        await tx.collection('steps').insertOne({ _id: 's2', n: 1 });
        between();
        await new Promise((r) => setTimeout(r, 60000));
        await tx.collection('records').insertOne({ _id: 'r2', n: 1 });
      });
      await reached;
      void records.insertOne({ _id: 'outside', n: 1 });
      setImmediate(() => setImmediate(() => console.log('between')));
    })`;
      const run = await runUntil(script, dir, 'between');
      expect(run.out()).toContain('committed');
      run.child.kill('SIGKILL');
      await run.exited;

      const store = await SqliteStore.open(dir);
      const steps = await store.collection<{ _id: string; n: number }>('steps');
      const records = await store.collection<{ _id: string; n: number }>('records');
      expect(await steps.find({}, { sort: { _id: 1 } })).toEqual([{ _id: 's1', n: 1 }]);
      expect(await records.find({}, { sort: { _id: 1 } })).toEqual([{ _id: 'r1', n: 1 }]);
      await store.close();
    },
  );
});

describe('the SQLite store in memory', () => {
  it('answers batches between COMMITs made at most every 250 ms; reads see them; close commits', async () => {
    const store = await SqliteStore.open(null);
    const c = await store.collection<{ _id: string; n: number }>('spaced');
    await c.insertOne({ _id: 'first', n: 0 });
    const commitsBefore = store.writer.sqliteCommits;
    const batchesBefore = store.writer.commits;
    for (let i = 0; i < 5; i++) await c.insertOne({ _id: `w${i}`, n: i });
    // five batches answered, their COMMIT not made yet
    expect(store.writer.commits - batchesBefore).toBe(5);
    expect(store.writer.sqliteCommits).toBe(commitsBefore);
    expect(await c.count({})).toBe(6);
    // with no later batch, the timer makes it
    await poll(
      'the spaced COMMIT',
      async () => store.writer.sqliteCommits,
      (n) => n === commitsBefore + 1,
    );
    await c.insertOne({ _id: 'last', n: 9 });
    await store.close(); // commits what waits
    expect(store.writer.sqliteCommits).toBe(commitsBefore + 2);
  });

  it('a rollback by SQLite of answered writes waiting for their COMMIT stops the store', async () => {
    const store = await SqliteStore.open(null);
    const c = await store.collection<{ _id: string; n: number }>('doomed');
    await c.insertOne({ _id: 'first', n: 0 });
    await c.insertOne({ _id: 'answered', n: 1 }); // answered, its COMMIT waits
    // a trigger that makes SQLite roll the whole transaction back (as running out of memory may)
    store
      .statement(
        `CREATE TEMP TRIGGER doom BEFORE INSERT ON "doomed" WHEN NEW.id = 'boom' ` +
          `BEGIN SELECT RAISE(ROLLBACK, 'injected'); END`,
      )
      .run();
    await expect(c.insertOne({ _id: 'boom', n: 2 })).rejects.toThrow('injected');
    expect(store.writer.broken).toMatchObject({ code: 'UNAVAILABLE' });
    expect(store.writer.broken?.message).toMatch(
      /store stopped: the in-memory database rolled back writes already answered/,
    );
    await expect(c.insertOne({ _id: 'after', n: 3 })).rejects.toThrow(/store stopped/);
    await store.close();
  });

  it('serves writes and transactions in the order asked: a write asked after a waiting one joins it', async () => {
    const store = await SqliteStore.open(null);
    const c = await store.collection<{ _id: string; n: number }>('asked');
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const committedAt: Record<string, number> = {};
    const at = (name: string) => () => (committedAt[name] = store.writer.commits);
    // A holds the writer; B is asked for meanwhile, then W, an ordinary write asking for a commit at
    // once (as a capture batch's journal entry does after its prints' transaction was asked for)
    const a = store
      .transaction(async (tx) => {
        await tx.collection<{ _id: string; n: number }>('asked').insertOne({ _id: 'a', n: 1 });
        await gate;
      })
      .then(at('a'));
    const b = store
      .transaction((tx) => tx.collection<{ _id: string; n: number }>('asked').insertOne({ _id: 'b', n: 2 }))
      .then(at('b'));
    const w = c.insertOne({ _id: 'w', n: 3 }).then(at('w'));
    store.commitNow();
    release();
    await Promise.all([a, b, w]);
    expect(committedAt.a).toBeLessThan(committedAt.b!);
    expect(committedAt.w).toBe(committedAt.b); // W joined B's commit: not A's, before B's writes
    expect((await c.find({}, { sort: { _id: 1 } })).map((d) => d._id)).toEqual(['a', 'b', 'w']);
    await store.close();
  });

  it("keeps a transaction's savepoint journal in memory on disk too (no temp file written per savepoint)", async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-temp-store-'));
    const disk = await SqliteStore.open(dir);
    try {
      expect(disk.statement('PRAGMA temp_store').pluck().get()).toBe(2);
    } finally {
      await disk.close();
      await fs.rm(dir, { recursive: true, force: true });
    }
  });

  it('has 8 KiB pages (a commit walks the page cache, the whole database); a file on disk keeps 4 KiB', async () => {
    const memory = await SqliteStore.open(null);
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-page-size-'));
    const disk = await SqliteStore.open(dir);
    try {
      const docs = await memory.collection<{ _id: string; n: number }>('docs');
      await Promise.all(Array.from({ length: 50 }, (_, n) => docs.insertOne({ _id: `d${n}`, n })));
      expect(await docs.count({})).toBe(50);
      expect(memory.statement('PRAGMA page_size').pluck().get()).toBe(8192);
      expect(disk.statement('PRAGMA page_size').pluck().get()).toBe(4096);
    } finally {
      await memory.close();
      await disk.close();
      await fs.rm(dir, { recursive: true, force: true });
    }
  });
});
