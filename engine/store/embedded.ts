import { createRequire } from 'node:module';
import path from 'node:path';
import fs from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import NedbModule from '@seald-io/nedb';
import { cjsDefault } from '../interop.js';
import { DuplicateKeyError } from '../errors.js';
import type { Logger } from '../logger.js';
import { GroupAppender } from './group-append.js';
import { loadDatastore } from './embedded-load.js';
import { compareKeys, insertAll, UniqueIndex, takesUniqueIndex, updatePairs, type Bounds } from './unique-index.js';
import { DATA_MODES, prepareDataDir } from './data-dir.js';
import { lockDataDir, type DataDirLock, type LockOptions } from './lock.js';
import { collectionWhenOpen, type Collection, type Doc, type Filter, type FindOptions, type IndexSpec, type Store, type UnitOfWork } from './port.js';
import { equalityFields, expandDotted, holdsDate } from './sqlite.js';

/** NeDB's own line format (`serialize`): the data file stays a file NeDB itself reads. */
const nedbModel = createRequire(import.meta.url)('@seald-io/nedb/lib/model.js') as {
  serialize(doc: unknown): string;
  deepCopy<T>(doc: T): T;
  checkObject(doc: unknown): void;
  match(doc: unknown, query: unknown): boolean;
};

type StoredDoc = Record<string, unknown> & { _id: unknown };

/** NeDB's storage helpers (the crash-safe file steps of its compaction). */
const nedbStorage = createRequire(import.meta.url)('@seald-io/nedb/lib/storage.js') as {
  flushToStorageAsync(options: { filename: string; isDir?: boolean; mode?: number }): Promise<void>;
  existsAsync(filename: string): Promise<boolean>;
  renameAsync(from: string, to: string): Promise<void>;
};

/**
 * The `_id` index of every embedded collection, on a hash map instead of NeDB's AVL tree
 * (issue 15): each order inserts into three collections and reads by `_id` several times, and the
 * tree's generic comparisons and rebalancing were the largest part of the store's CPU. Same
 * interface and semantics as NeDB's `Index` for a unique, non-sparse single-field index: the same
 * `uniqueViolated` error, all-or-none inserts and updates of several documents, and
 * {@link getAll} / {@link getBetweenBounds} in key order (as the tree walks them; sorted on
 * demand, once per change).
 */
export class IdIndex {
  /** What NeDB reads of an index: its field, unique, not sparse (also written by compaction). */
  readonly fieldName = '_id';
  readonly unique = true;
  readonly sparse = false;
  private byId = new Map<unknown, StoredDoc>();
  /**
   * Every document in key order, or null until a scan or range needs it (then sorted once). Kept
   * up to date through changes (issue 15: it was dropped at every change, and each `_id` range
   * removal after a venue checkpoint sorted the whole journal again): an update puts the new
   * document in the old one's slot, an insertion after the last key appends, removals are taken
   * out together when the order is next read ({@link removed}); only an insertion in the middle
   * drops it.
   */
  private ordered: StoredDoc[] | null = null;
  /**
   * Documents removed but still in {@link ordered}: a removal of many (a journal's pruned entries,
   * 500 at a time) would otherwise shift the whole array once per document.
   */
  private removed = new Set<StoredDoc>();

  /** Empties the index, then inserts `newData` (NeDB calls this when it loads the data file). */
  reset(newData?: StoredDoc | StoredDoc[]): void {
    this.byId = new Map();
    this.ordered = null;
    this.removed.clear();
    if (newData) this.insert(newData);
  }

  /** @throws NeDB's `uniqueViolated` error (nothing inserted) when an `_id` is taken. */
  insert(doc: StoredDoc | StoredDoc[]): void {
    if (Array.isArray(doc)) {
      insertAll(doc, (d) => this.insert(d), (d) => this.remove(d));
      return;
    }
    const key = doc._id;
    if (this.byId.has(key)) {
      const err = new Error(`Can't insert key ${JSON.stringify(key)}, it violates the unique constraint`) as Error & { key: unknown; errorType: string };
      err.key = key;
      err.errorType = 'uniqueViolated';
      throw err;
    }
    this.byId.set(key, doc);
    const o = this.settled();
    if (o !== null && (o.length === 0 || compareKeys(o[o.length - 1]!._id, key) < 0)) o.push(doc);
    else this.ordered = null;
  }

  /** Removes `doc` (or each of several), when it is the document indexed under its `_id`. */
  remove(doc: StoredDoc | StoredDoc[]): void {
    if (Array.isArray(doc)) {
      for (const d of doc) this.remove(d);
      return;
    }
    if (this.byId.get(doc._id) === doc) {
      this.byId.delete(doc._id);
      if (this.ordered !== null) this.removed.add(doc);
    }
  }

  /** {@link ordered} without the documents removed since it was last read (or null). */
  private settled(): StoredDoc[] | null {
    if (this.ordered !== null && this.removed.size > 0) {
      const removed = this.removed;
      this.ordered = this.ordered.filter((d) => !removed.has(d));
      this.removed = new Set();
    }
    return this.ordered;
  }

  /** Puts `newDoc` in place of `oldDoc` (same `_id`): the `_id` update fast path. */
  replace(oldDoc: StoredDoc, newDoc: StoredDoc): boolean {
    if (oldDoc._id !== newDoc._id || this.byId.get(oldDoc._id) !== oldDoc) return false;
    this.byId.set(newDoc._id, newDoc);
    const at = this.slotOf(oldDoc);
    if (at >= 0) this.ordered![at] = newDoc;
    else this.ordered = null;
    return true;
  }

  /** Where `doc` is in {@link ordered} (binary search by key), or −1 (not there, or no order kept). */
  private slotOf(doc: StoredDoc): number {
    const o = this.settled();
    if (o === null) return -1;
    const at = this.lowerBound(doc._id, false);
    return o[at] === doc ? at : -1;
  }

  /** The first position in key order whose key is above `key` (`strict`) or at least `key`. */
  private lowerBound(key: unknown, strict: boolean): number {
    const o = this.sorted();
    let lo = 0;
    let hi = o.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const c = compareKeys(o[mid]!._id, key);
      if (c < 0 || (strict && c === 0)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /**
   * Replaces `oldDoc` by `newDoc` (or each pair of several, all or none).
   * @throws NeDB's `uniqueViolated` error (nothing changed) when a new `_id` is taken.
   */
  update(oldDoc: StoredDoc | Array<{ oldDoc: StoredDoc; newDoc: StoredDoc }>, newDoc?: StoredDoc): void {
    if (!Array.isArray(oldDoc) && newDoc !== undefined && this.replace(oldDoc, newDoc)) return;
    updatePairs(Array.isArray(oldDoc) ? oldDoc : [{ oldDoc, newDoc: newDoc! }], (d) => this.remove(d), (d) => this.insert(d));
  }

  /** Undoes {@link update} (NeDB calls it when a later index refused the same update). */
  revertUpdate(oldDoc: StoredDoc | Array<{ oldDoc: StoredDoc; newDoc: StoredDoc }>, newDoc?: StoredDoc): void {
    if (Array.isArray(oldDoc)) this.update(oldDoc.map((p) => ({ oldDoc: p.newDoc, newDoc: p.oldDoc })));
    else this.update(newDoc!, oldDoc);
  }

  /** The document with `_id` `value`, or those of the `_id`s in `value` (each once, in the order given). */
  getMatching(value: unknown): StoredDoc[] {
    if (!Array.isArray(value)) {
      const hit = this.byId.get(value);
      return hit === undefined ? [] : [hit];
    }
    const out = new Map<unknown, StoredDoc>();
    for (const v of value) {
      const hit = this.byId.get(v);
      if (hit !== undefined) out.set(hit._id, hit);
    }
    return [...out.values()];
  }

  /** Documents whose `_id` lies within `$gt` / `$gte` / `$lt` / `$lte`, in key order (binary search of the bounds). */
  getBetweenBounds(query: { $gt?: unknown; $gte?: unknown; $lt?: unknown; $lte?: unknown }): StoredDoc[] {
    const o = this.sorted();
    let from = 0;
    let to = o.length;
    if (query.$gt !== undefined) from = Math.max(from, this.lowerBound(query.$gt, true));
    if (query.$gte !== undefined) from = Math.max(from, this.lowerBound(query.$gte, false));
    if (query.$lt !== undefined) to = Math.min(to, this.lowerBound(query.$lt, false));
    if (query.$lte !== undefined) to = Math.min(to, this.lowerBound(query.$lte, true));
    return from < to ? o.slice(from, to) : [];
  }

  /** Every document, in key order (a fresh array). */
  getAll(): StoredDoc[] {
    return this.sorted().slice();
  }

  /**
   * Every document (a fresh array, in no particular order unless `sorted`), without sorting:
   * what a compaction sorts itself, in slices ({@link sortInSlices}).
   */
  snapshot(): { docs: StoredDoc[]; sorted: boolean } {
    const o = this.settled();
    return o ? { docs: o.slice(), sorted: true } : { docs: [...this.byId.values()], sorted: false };
  }

  /** Every document in key order (kept through changes, see {@link ordered}; never handed out). */
  private sorted(): StoredDoc[] {
    return this.settled() ?? (this.ordered = [...this.byId.values()].sort((a, b) => compareKeys(a._id, b._id)));
  }
}

/** Gives a loaded NeDB datastore an {@link IdIndex} in place of its `_id` tree. */
function useIdIndex(ds: unknown): void {
  const nedb = ds as { indexes: Record<string, unknown>; getAllData(): StoredDoc[] };
  const ix = new IdIndex();
  ix.reset(nedb.getAllData());
  nedb.indexes._id = ix;
}

/**
 * Gives a datastore a {@link UniqueIndex} in place of each NeDB tree index that is unique, on one
 * top-level field (issue 15, item 5; the loader builds them so from the data file, this covers an
 * index created by `ensureIndex`), filled from the tree in key order, in the datastore's executor.
 */
async function useUniqueIndexes(ds: unknown): Promise<void> {
  const nedb = ds as { indexes: Record<string, { fieldName: string; unique: boolean; sparse: boolean; getAll(): StoredDoc[] }>; executor: { pushAsync<R>(task: () => Promise<R>): Promise<R> } };
  const swap = () => Object.keys(nedb.indexes).filter((k) => !(nedb.indexes[k] instanceof UniqueIndex || nedb.indexes[k] instanceof IdIndex) && takesUniqueIndex(nedb.indexes[k]!));
  if (swap().length === 0) return;
  await nedb.executor.pushAsync(async () => {
    for (const k of swap()) {
      const tree = nedb.indexes[k]!;
      const ix = new UniqueIndex(tree.fieldName, tree.sparse);
      ix.reset(tree.getAll());
      nedb.indexes[k] = ix as never;
    }
  });
}

/** One NeDB index, as {@link EmbeddedCollection.updateOne}'s fast path reads it. */
interface NedbIndex {
  fieldName: string;
  sparse: boolean;
  tree: { search(key: unknown): unknown[] };
  getMatching(key: string): unknown[];
}

/**
 * The parts of a NeDB datastore that {@link EmbeddedCollection} uses directly (issue 15): reads
 * by `_id`, and inserts and `_id` updates without NeDB's extra copies. Every write still runs in
 * NeDB's executor (so it is ordered with every other operation) and is persisted by NeDB's
 * persistence (group commit on disk) exactly as NeDB would.
 */
interface NedbInternals {
  indexes: Record<string, NedbIndex> & { _id: NedbIndex };
  ttlIndexes: Record<string, number>;
  executor: { pushAsync<R>(task: () => Promise<R>): Promise<R> };
  persistence: { persistNewStateAsync(docs: unknown[]): Promise<void> };
  _prepareDocumentForInsertion(doc: unknown): Record<string, unknown>;
  _insertInCache(doc: unknown): void;
  _updateIndexes(modifications: { oldDoc: unknown; newDoc: unknown }[]): void;
}

/** A value NeDB compares with `===` (what the `_id` update fast path accepts in filters and index keys). */
function isPlain(v: unknown): v is string | number | boolean {
  return typeof v === 'string' || (typeof v === 'number' && !Number.isNaN(v)) || typeof v === 'boolean';
}

/**
 * One data-file line, exactly as NeDB's `serialize` writes it. Its per-key replacer function only
 * matters for Dates (keys were checked when NeDB accepted the document), so documents without one
 * go through plain `JSON.stringify`, several times faster on the large snapshot strings.
 */
export function serializeLine(doc: unknown): string {
  return holdsDate(doc) ? nedbModel.serialize(doc) : JSON.stringify(doc);
}

/** The part of NeDB's persistence object that group commit replaces. */
interface NedbPersistence {
  filename: string;
  modes: { fileMode: number };
  persistNewStateAsync(docs: unknown[]): Promise<void>;
  persistCachedDatabaseAsync(): Promise<void>;
}

/**
 * Group commit on an on-disk datastore: NeDB appends each operation's lines with its own
 * `fs.appendFile` (open, write, close) and runs the next operation only after it, so one
 * collection managed a few hundred writes a second. Here an operation's lines are queued and the
 * operation completes in memory at once; {@link EmbeddedCollection} then awaits
 * {@link GroupAppender.durable} before acknowledging, so every write is still in the file before
 * its caller hears of it, and concurrent writes share one `write` on an open handle. Lines keep
 * NeDB's order and format; compaction (which replaces the file) first writes what is queued.
 */
function groupCommit(ds: { persistence: NedbPersistence }, onFailure?: (failure: Error | null) => void): GroupAppender {
  const p = ds.persistence;
  const appender = new GroupAppender(p.filename, p.modes.fileMode, onFailure);
  p.persistNewStateAsync = async (docs) => {
    let text = '';
    for (const d of docs) text += `${serializeLine(d)}\n`;
    appender.enqueue(text);
  };
  const compact = p.persistCachedDatabaseAsync.bind(p);
  p.persistCachedDatabaseAsync = async () => {
    await appender.release();
    await compact();
  };
  return appender;
}

/** Documents removed at once after which an in-memory `deleteMany` lets the event loop turn. */
const YIELD_AFTER_REMOVED = 100;

/** CPU time a compaction may take before it lets the event loop run again (ms). */
const COMPACT_SLICE_MS = 4;
/** Characters of lines gathered before one write to the compacted file. */
const COMPACT_WRITE_CHARS = 1 << 20;

/**
 * Lets long work give the event loop back every `sliceMs` of CPU: call {@link turn} often (it
 * reads the clock every 256 steps); it resolves at once, or after the next event-loop turn
 * (`setImmediate`, so requests and timers waiting meanwhile run) when the slice is used up.
 * How many turns were given back is counted in {@link yields} (tests read it).
 */
export class TimeSlicer {
  private started = performance.now();
  private calls = 0;
  yields = 0;

  constructor(private readonly sliceMs = COMPACT_SLICE_MS) {}

  /**
   * Resolves at once, or after an event-loop turn once the slice is used up.
   * @param steps - how much work was done since the last call, in steps (the clock is read every 256).
   */
  turn(steps = 1): Promise<void> | undefined {
    this.calls += steps;
    if (this.calls < 256) return undefined;
    this.calls = 0;
    if (performance.now() - this.started < this.sliceMs) return undefined;
    return this.yieldNow();
  }

  /** Gives the event loop a turn now. */
  async yieldNow(): Promise<void> {
    this.yields++;
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.started = performance.now();
  }
}

/** NeDB's order of documents by `_id`. */
const compareIds = (a: StoredDoc, b: StoredDoc): number => compareKeys(a._id, b._id);

/**
 * Sorts `items` by `cmp` (stable; `items` itself is left as it was) as a merge sort that gives the
 * event loop back through `slicer`: runs of 1,024 sorted, then merged pairwise. A million
 * documents sort in about a second of CPU, which must not be one block.
 */
export async function sortInSlices<T>(items: readonly T[], cmp: (a: T, b: T) => number, slicer: TimeSlicer): Promise<T[]> {
  const RUN = 1024;
  let runs: T[][] = [];
  for (let i = 0; i < items.length; i += RUN) {
    runs.push(items.slice(i, i + RUN).sort(cmp));
    await slicer.turn(256); // ~10 comparisons an item: read the clock after each run
  }
  while (runs.length > 1) {
    const merged: T[][] = [];
    for (let r = 0; r < runs.length; r += 2) {
      const a = runs[r]!;
      const b = runs[r + 1];
      if (!b) {
        merged.push(a);
        continue;
      }
      const out = new Array<T>(a.length + b.length);
      let i = 0;
      let j = 0;
      let k = 0;
      while (i < a.length && j < b.length) {
        out[k++] = cmp(b[j]!, a[i]!) < 0 ? b[j++]! : a[i++]!;
        await slicer.turn();
      }
      while (i < a.length) out[k++] = a[i++]!;
      while (j < b.length) out[k++] = b[j++]!;
      merged.push(out);
    }
    runs = merged;
  }
  return runs[0] ?? [];
}

/** The parts of an on-disk NeDB datastore that {@link compactInSlices} uses. */
interface CompactableDatastore {
  indexes: Record<string, { fieldName: string; unique: boolean; sparse: boolean }> & { _id: unknown };
  executor: { pushAsync<R>(task: () => Promise<R>): Promise<R> };
  persistence: { filename: string; modes: { fileMode: number; dirMode: number } };
  emit(event: string): void;
}

/**
 * NeDB's compaction (`compactDatafileAsync`: the file rewritten with one line per document in
 * `_id` order, then one `$$indexCreated` line per index but `_id`, crash-safe: flush, temporary
 * file, flush, rename, flush), without its stall (issue 15): NeDB holds the collection for the
 * whole rewrite and serializes every document in one synchronous run (seconds at a million
 * records; every write to the collection waits, and every request with it). Here:
 * - the documents are taken as they are at one point of the collection's operations (stored
 *   documents are never changed in place, so the array of them is a consistent snapshot), and the
 *   collection goes on at once; the group appender keeps a copy of every line written after that
 *   point ({@link GroupAppender.startTail});
 * - sorting and serializing give the event loop back every few ms ({@link TimeSlicer}); lines go
 *   out in writes of about a megabyte;
 * - the lines written meanwhile are appended to the new file (most of them while the collection
 *   goes on; the last few, and the rename, while it holds its operations for a moment), so the
 *   new file holds everything acknowledged, in order (later lines override earlier ones, as NeDB
 *   reads its file).
 * With no write meanwhile (on close) the file is byte for byte what NeDB's compaction writes.
 * @throws a file-system failure (the old file is left as it was; the temporary file is removed).
 */
export async function compactInSlices(datastore: unknown, appender: GroupAppender, slicer = new TimeSlicer()): Promise<void> {
  const ds = datastore as CompactableDatastore;
  const { filename, modes } = ds.persistence;
  const dir = path.dirname(filename);
  const temp = `${filename}~`;
  const { docs, sorted, indexLines } = await ds.executor.pushAsync(async () => {
    appender.startTail();
    const ix = ds.indexes._id;
    const taken = ix instanceof IdIndex ? ix.snapshot() : { docs: (datastore as { getAllData(): StoredDoc[] }).getAllData(), sorted: true };
    const lines = Object.keys(ds.indexes)
      .filter((f) => f !== '_id')
      .map((f) => nedbModel.serialize({ $$indexCreated: { fieldName: ds.indexes[f]!.fieldName, unique: ds.indexes[f]!.unique, sparse: ds.indexes[f]!.sparse } }));
    return { ...taken, indexLines: lines };
  });
  try {
    const ordered = sorted ? docs : await sortInSlices(docs, compareIds, slicer);
    await nedbStorage.flushToStorageAsync({ filename: dir, isDir: true, mode: modes.dirMode });
    if (await nedbStorage.existsAsync(filename)) await nedbStorage.flushToStorageAsync({ filename, mode: modes.fileMode });
    const handle = await fs.open(temp, 'w', modes.fileMode);
    try {
      let block = '';
      for (let i = 0; i < ordered.length; i++) {
        block += `${serializeLine(ordered[i])}\n`;
        ordered[i] = undefined as unknown as StoredDoc; // written: let it go
        if (block.length >= COMPACT_WRITE_CHARS) {
          await handle.writeFile(block, 'utf8');
          block = '';
        } else await slicer.turn();
      }
      for (const line of indexLines) block += `${line}\n`;
      await handle.writeFile(block, 'utf8');
      // most of what was written meanwhile, while the collection goes on
      await handle.writeFile(appender.takeTail(true), 'utf8');
    } finally {
      await handle.close();
    }
    await nedbStorage.flushToStorageAsync({ filename: temp, mode: modes.fileMode });
    await ds.executor.pushAsync(async () => {
      await appender.release(); // every line so far in the old file, its handle closed
      const rest = appender.takeTail();
      if (rest) {
        await fs.appendFile(temp, rest, { encoding: 'utf8', mode: modes.fileMode });
        await nedbStorage.flushToStorageAsync({ filename: temp, mode: modes.fileMode });
      }
      await nedbStorage.renameAsync(temp, filename);
      await nedbStorage.flushToStorageAsync({ filename: dir, isDir: true, mode: modes.dirMode });
    });
  } catch (err) {
    appender.takeTail();
    await fs.rm(temp, { force: true }).catch(() => undefined);
    throw err;
  }
  ds.emit('compaction.done');
}

/** The NeDB datastore class. */
const Datastore = cjsDefault(NedbModule);
type Datastore<T> = InstanceType<typeof Datastore> & { __doc?: T };

const COMPACT_EVERY_MS = 10 * 60_000;

function isUniqueViolation(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { errorType?: string }).errorType === 'uniqueViolated';
}

class EmbeddedCollection<T extends Doc> implements Collection<T> {
  /** Periodic compaction of an on-disk datastore (null in memory). */
  compaction: NodeJS.Timeout | null = null;
  /** The last compaction failure, until a compaction succeeds. */
  compactionFailure: Error | null = null;

  /** @param appender - group commit of an on-disk datastore (null in memory). */
  constructor(
    readonly ds: Datastore<T>,
    readonly appender: GroupAppender | null,
  ) {}

  /**
   * Compacts now and then (NeDB's own autocompaction leaves a failed compaction as an unhandled
   * rejection, which would stop the process); a failure is kept for health and tried again later.
   */
  startCompaction(everyMs: number): void {
    this.compaction = setInterval(() => {
      this.compact().then(
        () => (this.compactionFailure = null),
        (err: unknown) => (this.compactionFailure = err instanceof Error ? err : new Error(String(err))),
      );
    }, everyMs);
    this.compaction.unref();
  }

  /** The compaction running, if any. */
  private compacting: Promise<void> | null = null;

  /**
   * Rewrites the data file without what later lines overrode ({@link compactInSlices}: the
   * collection goes on meanwhile); one at a time (a call while one runs gets that one).
   * Nothing to do in memory.
   */
  compact(): Promise<void> {
    if (!this.appender) return Promise.resolve();
    this.compacting ??= compactInSlices(this.ds, this.appender).finally(() => (this.compacting = null));
    return this.compacting;
  }

  /** Resolves once this collection's writes so far are in its file. */
  durable(): Promise<void> {
    return this.appender ? this.appender.durable() : Promise.resolve();
  }

  /** NeDB's internals of this datastore. */
  private get nedb(): NedbInternals {
    return this.ds as unknown as NedbInternals;
  }

  /**
   * NeDB's `insertAsync` without its last step, a deep copy of the inserted document returned to
   * the caller (the port returns nothing): same executor, same checks, same index and file writes.
   */
  async insertOne(doc: T): Promise<void> {
    try {
      const ds = this.nedb;
      await ds.executor.pushAsync(async () => {
        const prepared = ds._prepareDocumentForInsertion(doc);
        ds._insertInCache(prepared);
        await ds.persistence.persistNewStateAsync([prepared]);
      });
      await this.durable();
    } catch (err) {
      if (isUniqueViolation(err)) throw new DuplicateKeyError((err as Error).message);
      throw err;
    }
  }

  /**
   * {@link insertOne} of several documents as one operation: NeDB inserts them all or none (its
   * `_insertInCache` rolls back on a unique-key failure), and their lines go out in one append.
   */
  async insertMany(docs: T[]): Promise<void> {
    try {
      const ds = this.nedb;
      await ds.executor.pushAsync(async () => {
        const prepared = ds._prepareDocumentForInsertion(docs) as unknown as unknown[];
        ds._insertInCache(prepared);
        await ds.persistence.persistNewStateAsync(prepared);
      });
      await this.durable();
    } catch (err) {
      if (isUniqueViolation(err)) throw new DuplicateKeyError((err as Error).message);
      throw err;
    }
  }

  /**
   * A lookup by `_id` alone (most reads: actors, idempotency records) reads NeDB's `_id` index
   * directly, a copy as NeDB would return, instead of queuing a cursor behind every pending
   * operation (issue 15): it sees every write whose promise has resolved, as a cursor does.
   * Collections with a TTL index keep NeDB's path (it drops expired documents on read).
   */
  async findOne(filter: Filter): Promise<T | null> {
    const id = filter._id;
    if (typeof id === 'string') {
      const ds = this.ds as unknown as NedbInternals;
      let only = true;
      for (const k in filter) if (k !== '_id') only = false;
      if (only && Object.keys(ds.ttlIndexes).length === 0) {
        const hit = ds.indexes._id.getMatching(id)[0];
        return hit === undefined ? null : nedbModel.deepCopy(hit as T);
      }
    }
    return (await this.ds.findOneAsync(filter)) as T | null;
  }

  async find(filter: Filter, options: FindOptions = {}): Promise<T[]> {
    // `{_id: {$in: [ids]}}` alone (ActorRepository.getMany: every order request asks whether an
    // earlier attempt created its ids): read from the `_id` index like findOne, in the order of
    // the ids, each document once, copies as NeDB returns them
    const inIds = (filter._id as { $in?: unknown } | undefined)?.$in;
    if (Array.isArray(inIds) && !options.sort && !options.skip && !options.limit && inIds.every((x) => typeof x === 'string')) {
      const ds = this.nedb;
      let only = true;
      for (const k in filter) if (k !== '_id') only = false;
      for (const k in filter._id as object) if (k !== '$in') only = false;
      if (only && Object.keys(ds.ttlIndexes).length === 0) {
        const out: T[] = [];
        for (const id of new Set(inIds as string[])) {
          const hit = ds.indexes._id.getMatching(id)[0];
          if (hit !== undefined) out.push(nedbModel.deepCopy(hit as T));
        }
        return out;
      }
    }
    const page = await this.sortedPage(filter, options);
    if (page !== null) return page;
    let cursor = this.ds.findAsync(filter);
    if (options.sort) cursor = cursor.sort(options.sort);
    if (options.skip) cursor = cursor.skip(options.skip);
    if (options.limit) cursor = cursor.limit(options.limit);
    return (await cursor) as T[];
  }

  /**
   * The {@link UniqueIndex} on `field` and the filter's range on it (`$gt` / `$gte` / `$lt` /
   * `$lte` alone), when the datastore is one where walking that range finds every document the
   * filter matches (no TTL index, NeDB's own string order, the index holding only string keys).
   */
  private indexedRange(filter: Filter, field: string): { ix: UniqueIndex; range: Bounds } | null {
    const ds = this.nedb as NedbInternals & { compareStrings?: unknown };
    const ix = ds.indexes[field] as unknown;
    if (!(ix instanceof UniqueIndex) || ix.delegated) return null;
    if (Object.keys(ds.ttlIndexes).length > 0 || ds.compareStrings !== undefined) return null;
    const range = filter[field];
    if (range === null || typeof range !== 'object' || Array.isArray(range) || range instanceof Date) return null;
    const ops = Object.keys(range);
    if (ops.length === 0 || ops.some((op) => op !== '$gt' && op !== '$gte' && op !== '$lt' && op !== '$lte')) return null;
    return { ix, range: range as Bounds };
  }

  /**
   * A page sorted on one field that has a {@link UniqueIndex}, with a range on that field in the
   * filter (ActorRepository.findOwned: `ownerKey` `$gt` / `$lt`, sort −1, skip / limit): the
   * index's range walked in the sort's direction, each document matched against the whole filter
   * ({@link matcher}: NeDB's `match`), stopping once the page is full (issue 15: NeDB's cursor
   * matched the whole range, then sorted it, for each page: ~0.5 s for a user with 300,000
   * actors). Same result as the cursor: every document matching the filter has a string key in
   * the range (NeDB compares only strings with strings), and keys are unique, so the sort has no
   * ties. Run in NeDB's executor, as a cursor is.
   * @returns the page (copies, as NeDB returns them), or null when the query is not of that shape.
   */
  private async sortedPage(filter: Filter, options: FindOptions): Promise<T[] | null> {
    const sort = options.sort;
    if (!sort) return null;
    const fields = Object.keys(sort);
    if (fields.length !== 1) return null;
    const field = fields[0]!;
    const direction = (sort as Record<string, unknown>)[field];
    if (direction !== 1 && direction !== -1) return null;
    const found = this.indexedRange(filter, field);
    if (found === null) return null;
    const skip = options.skip ?? 0;
    const limit = options.limit || Infinity;
    if (!(Number.isInteger(skip) && skip >= 0) || !(limit === Infinity || (Number.isInteger(limit) && limit > 0))) return null;
    const matches = matcher(filter, field, found.range);
    return this.nedb.executor.pushAsync(async () => {
      const out: T[] = [];
      let skipped = 0;
      for (const doc of found.ix.walk(found.range, direction === -1)) {
        if (!matches(doc)) continue;
        if (skipped < skip) skipped++;
        else if (out.push(nedbModel.deepCopy(doc as unknown as T)) >= limit) break;
      }
      return out;
    });
  }

  /**
   * {@link count} of a filter with a range on a field that has a {@link UniqueIndex} (findOwned's
   * total): that range walked and matched as in {@link sortedPage}, in NeDB's executor.
   * @returns null when the filter has no such range.
   */
  private async rangeCount(filter: Filter): Promise<number | null> {
    for (const field in filter) {
      const found = this.indexedRange(filter, field);
      if (found === null) continue;
      const matches = matcher(filter, field, found.range);
      return this.nedb.executor.pushAsync(async () => {
        let n = 0;
        for (const doc of found.ix.walk(found.range, false)) if (matches(doc)) n++;
        return n;
      });
    }
    return null;
  }

  async count(filter: Filter): Promise<number> {
    const n = await this.rangeCount(filter);
    if (n !== null) return n;
    return await this.ds.countAsync(filter);
  }

  /**
   * `$set` of top-level fields on the document with this `_id` (other filter fields: plain
   * equality), in NeDB's executor: what NeDB's update does (the same document, checks, index
   * changes and data-file line), without its cursor, query matching and deep copy of the whole
   * document; an index whose key did not change gets the new document in place of the old one
   * instead of a removal and an insertion (issue 15: every actor transition is such an update).
   * @returns the number updated (0 or 1), or null when the filter or update is not of that shape
   *   (then NeDB's own update runs).
   */
  private async updateById(filter: Filter, set: Record<string, unknown>): Promise<number | null> {
    const id = filter._id;
    const ds = this.nedb;
    if (typeof id !== 'string' || Object.keys(ds.ttlIndexes).length > 0) return null;
    for (const k in filter) if (k !== '_id' && (k.startsWith('$') || k.includes('.') || !isPlain(filter[k]))) return null;
    for (const k in set) if (k.startsWith('$') || k.includes('.') || k === '_id') return null;
    return ds.executor.pushAsync(async () => {
      const old = ds.indexes._id.getMatching(id)[0] as Record<string, unknown> | undefined;
      if (old === undefined) return 0;
      for (const k in filter) if (k !== '_id' && old[k] !== filter[k]) return 0;
      const patch = nedbModel.deepCopy(set);
      nedbModel.checkObject(patch);
      // stored documents are never changed in place (NeDB copies on every read and update), so the
      // new one may share the untouched fields' values with the old one
      const next: Record<string, unknown> = { ...old, ...patch };
      let sameKeys = true;
      for (const name in ds.indexes) {
        const ix = ds.indexes[name]!;
        const a = old[ix.fieldName];
        const b = next[ix.fieldName];
        if (ix.fieldName.includes('.') || ix.fieldName.includes(',') || a !== b || !(isPlain(a) || a === null || (a === undefined && ix.sparse))) sameKeys = false;
      }
      const slots: { docs: unknown[]; at: number }[] = [];
      const uniques: UniqueIndex[] = [];
      if (sameKeys) {
        for (const name in ds.indexes) {
          const ix = ds.indexes[name]!;
          const key = old[ix.fieldName];
          if (key === undefined || ix instanceof IdIndex) continue; // sparse: not indexed; the id index: below
          if (ix instanceof UniqueIndex) {
            if (!ix.holds(old as StoredDoc)) {
              sameKeys = false; // not where it should be: let NeDB's own update decide
              break;
            }
            uniques.push(ix);
            continue;
          }
          const docs = ix.tree.search(key);
          const at = docs.indexOf(old);
          if (at < 0) {
            sameKeys = false; // not where it should be: let NeDB's own update decide
            break;
          }
          slots.push({ docs, at });
        }
      }
      const idIndex = ds.indexes._id as unknown;
      if (sameKeys && idIndex instanceof IdIndex && !idIndex.replace(old as StoredDoc, next as StoredDoc)) sameKeys = false;
      if (sameKeys) {
        for (const { docs, at } of slots) docs[at] = next;
        for (const ix of uniques) ix.replace(old as StoredDoc, next as StoredDoc);
      }
      else ds._updateIndexes([{ oldDoc: old, newDoc: next }]);
      await ds.persistence.persistNewStateAsync([next]);
      return 1;
    });
  }

  async updateOne(filter: Filter, set: Record<string, unknown>, options: { upsert?: boolean } = {}): Promise<number> {
    try {
      const fast = await this.updateById(filter, set);
      if (fast === 1 || (fast === 0 && !options.upsert)) {
        if (fast === 1) await this.durable();
        return fast;
      }
      const res = await this.ds.updateAsync(filter, { $set: set }, { multi: false, upsert: false });
      if (res.numAffected > 0 || !options.upsert) {
        if (res.numAffected > 0) await this.durable();
        return res.numAffected;
      }
      await this.ds.insertAsync(expandDotted({ ...equalityFields(filter), ...set }) as T);
      await this.durable();
      return 0;
    } catch (err) {
      if (isUniqueViolation(err)) throw new DuplicateKeyError((err as Error).message);
      throw err;
    }
  }

  async replaceOne(doc: T): Promise<void> {
    try {
      await this.ds.updateAsync({ _id: doc._id }, doc, { upsert: true });
      await this.durable();
    } catch (err) {
      if (isUniqueViolation(err)) throw new DuplicateKeyError((err as Error).message);
      throw err;
    }
  }

  /**
   * Removes every matching document. A removal of many in memory also lets the event loop turn
   * before it resolves: an in-memory store never waits for I/O, so a caller removing in slices
   * (the venue journal after a checkpoint) would otherwise run every slice in one block.
   */
  async deleteMany(filter: Filter): Promise<number> {
    const n = await this.ds.removeAsync(filter, { multi: true });
    if (n > 0) await this.durable();
    if (!this.appender && n >= YIELD_AFTER_REMOVED) await new Promise<void>((resolve) => setImmediate(resolve));
    return n;
  }
}

/**
 * NeDB's `match(doc, filter)` for documents of a walked index range on `field` (their key there
 * is a string within `range`): when the range's bounds are strings and every other filter field
 * is a top-level field compared with a string, number, boolean or null, a document matches when
 * each such field of it is `===` that value (NeDB's `areThingsEqual` for such a value; a field
 * holding an array goes to NeDB's `match`, which looks into arrays); otherwise NeDB's `match`.
 */
function matcher(filter: Filter, field: string, range: Bounds): (doc: StoredDoc) => boolean {
  const full = (doc: StoredDoc) => nedbModel.match(doc, filter);
  for (const op in range) if (typeof (range as Record<string, unknown>)[op] !== 'string') return full;
  const names: string[] = [];
  const values: unknown[] = [];
  for (const k in filter) {
    if (k === field) continue;
    const v = filter[k];
    if (k.startsWith('$') || k.includes('.') || !(v === null || typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && !Number.isNaN(v)))) return full;
    names.push(k);
    values.push(v);
  }
  return (doc) => {
    for (let i = 0; i < names.length; i++) {
      const x = doc[names[i]!];
      if (x !== values[i]) return Array.isArray(x) ? full(doc) : false;
    }
    return true;
  };
}

/**
 * Embedded Mongo-style store on @seald-io/nedb: one append-only file per collection under `dir`,
 * or purely in memory when `dir` is null (tests). Writes are appended before their promise
 * resolves (concurrent writes share one append: {@link groupCommit}), so an acknowledged write
 * survives `kill -9`. Files are compacted periodically and on close. TTL indexes are honoured on read and swept by compaction.
 */
export class EmbeddedStore implements Store {
  readonly adapter = 'embedded' as const;
  private readonly collections = new Map<string, Promise<EmbeddedCollection<Doc>>>();
  /** The collections opened so far (read synchronously by {@link writeFailure}). */
  private readonly opened = new Map<string, EmbeddedCollection<Doc>>();

  private constructor(
    private readonly dir: string | null,
    private lock: DataDirLock | null = null,
    private readonly log: Logger | null = null,
  ) {}

  get location(): string {
    return this.dir ?? '(memory)';
  }

  /**
   * Opens the store in `dir` (created when missing), or in memory when `dir` is null.
   * @param options.lock - take the folder's exclusive lock ({@link lockDataDir}) for as long as
   *   the store is open, as the service does; tests that simulate a `kill -9` by opening a folder
   *   twice in one process leave it off.
   * @param options.log - where a data file that cannot be appended to is reported (ERROR when it
   *   starts failing and every 20th retry, WARN when it recovers).
   * @throws {DataDirLockedError} with `lock` when another live process holds `dir`.
   */
  static async open(dir: string | null, options: { lock?: boolean; log?: Logger } & LockOptions = {}): Promise<EmbeddedStore> {
    if (!dir) return new EmbeddedStore(null);
    const { lock, log, ...lockOptions } = options;
    await prepareDataDir(dir, log);
    return new EmbeddedStore(dir, lock ? await lockDataDir(dir, lockOptions) : null, log ?? null);
  }

  collection<T extends Doc>(name: string, indexes: IndexSpec[] = []): Promise<Collection<T>> {
    let pending = this.collections.get(name);
    if (!pending) {
      pending = (async () => {
        const ds = new Datastore<Doc>(
          this.dir ? { filename: path.join(this.dir, `${name}.db`), autoload: false, modes: { ...DATA_MODES } } : { inMemoryOnly: true },
        );
        await loadDatastore(ds); // NeDB's loadDatabaseAsync, faster (issue 15)
        useIdIndex(ds);
        const file = this.dir ? path.join(this.dir, `${name}.db`) : '';
        const report = (failure: Error | null) =>
          failure
            ? this.log?.error({ err: failure, file }, `store: appending to ${file} failed; its writes wait and are retried (mutating requests answer 503 meanwhile)`)
            : this.log?.warn({ file }, `store: appending to ${file} works again; the waiting writes landed`);
        const appender = this.dir ? groupCommit(ds as unknown as { persistence: NedbPersistence }, report) : null;
        const c = new EmbeddedCollection<Doc>(ds, appender);
        if (this.dir) c.startCompaction(COMPACT_EVERY_MS);
        this.opened.set(name, c);
        return c;
      })();
      this.collections.set(name, pending);
    }
    return pending.then(async (c) => {
      for (const ix of indexes) {
        if (ix.adapters && !ix.adapters.includes('embedded')) continue;
        await c.ds.ensureIndexAsync({
          fieldName: ix.fields.length === 1 ? ix.fields[0]! : ix.fields,
          unique: ix.unique ?? false,
          ...(ix.sparse ? { sparse: true } : {}),
          ...(ix.expireAfterSeconds !== undefined ? { expireAfterSeconds: ix.expireAfterSeconds } : {}),
        });
      }
      await useUniqueIndexes(c.ds);
      await c.durable();
      return c as unknown as Collection<T>;
    });
  }

  /** Runs `fn` without atomicity: the embedded store (retired for SQLite) has no transactions. */
  transaction<R>(fn: (tx: UnitOfWork) => Promise<R>): Promise<R> {
    return fn({ collection: (name) => collectionWhenOpen(this.collection(name)) });
  }

  async ping(): Promise<boolean> {
    return true;
  }

  /** The first collection whose appends keep failing (they are retried, unacknowledged), or null. */
  writeFailure(): string | null {
    for (const [name, c] of this.opened) {
      const f = c.appender?.failure ?? c.compactionFailure;
      if (f) return `${name}: ${f.message}`;
    }
    return null;
  }

  async close(): Promise<void> {
    for (const pending of this.collections.values()) {
      const c = await pending;
      if (c.compaction) clearInterval(c.compaction);
      if (this.dir) await c.compact();
      await c.appender?.release();
    }
    this.collections.clear();
    this.opened.clear();
    const lock = this.lock;
    this.lock = null;
    await lock?.release();
  }
}
