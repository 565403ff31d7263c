import { createRequire } from 'node:module';
import path from 'node:path';
import fs from 'node:fs/promises';
import NedbModule from '@seald-io/nedb';
import { cjsDefault } from '../interop.js';
import { DuplicateKeyError } from '../errors.js';
import type { Logger } from '../logger.js';
import { GroupAppender } from './group-append.js';
import { lockDataDir, type DataDirLock, type LockOptions } from './lock.js';
import type { Collection, Doc, Filter, FindOptions, IndexSpec, Store } from './port.js';

/** NeDB's own line format (`serialize`): the data file stays a file NeDB itself reads. */
const nedbModel = createRequire(import.meta.url)('@seald-io/nedb/lib/model.js') as { serialize(doc: unknown): string; deepCopy<T>(doc: T): T };

/** The parts of a NeDB datastore that {@link EmbeddedCollection.findOne} reads directly. */
interface NedbInternals {
  indexes: { _id: { getMatching(key: string): unknown[] } };
  ttlIndexes: Record<string, number>;
}

/** Whether a value holds a Date anywhere (NeDB writes Dates as `{"$$date": ms}`). */
function holdsDate(v: unknown): boolean {
  if (v === null || typeof v !== 'object') return false;
  if (v instanceof Date) return true;
  if (Array.isArray(v)) return v.some(holdsDate);
  for (const k in v) if (holdsDate((v as Record<string, unknown>)[k])) return true;
  return false;
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

/** The NeDB datastore class. */
const Datastore = cjsDefault(NedbModule);
type Datastore<T> = InstanceType<typeof Datastore> & { __doc?: T };

const COMPACT_EVERY_MS = 10 * 60_000;

function isUniqueViolation(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { errorType?: string }).errorType === 'uniqueViolated';
}

function equalityFields(filter: Filter): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(filter)) {
    if (k.startsWith('$')) continue;
    if (v !== null && typeof v === 'object' && !(v instanceof Date) && Object.keys(v).some((x) => x.startsWith('$'))) continue;
    out[k] = v;
  }
  return out;
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
      this.ds.compactDatafileAsync().then(
        () => (this.compactionFailure = null),
        (err: unknown) => (this.compactionFailure = err instanceof Error ? err : new Error(String(err))),
      );
    }, everyMs);
    this.compaction.unref();
  }

  /** Resolves once this collection's writes so far are in its file. */
  durable(): Promise<void> {
    return this.appender ? this.appender.durable() : Promise.resolve();
  }

  async insertOne(doc: T): Promise<void> {
    try {
      await this.ds.insertAsync(doc);
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
    let cursor = this.ds.findAsync(filter);
    if (options.sort) cursor = cursor.sort(options.sort);
    if (options.skip) cursor = cursor.skip(options.skip);
    if (options.limit) cursor = cursor.limit(options.limit);
    return (await cursor) as T[];
  }

  async count(filter: Filter): Promise<number> {
    return await this.ds.countAsync(filter);
  }

  async updateOne(filter: Filter, set: Record<string, unknown>, options: { upsert?: boolean } = {}): Promise<number> {
    try {
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

  async deleteMany(filter: Filter): Promise<number> {
    const n = await this.ds.removeAsync(filter, { multi: true });
    if (n > 0) await this.durable();
    return n;
  }
}

/** Turns `{'a.b': 1}` into `{a: {b: 1}}` for inserts (queries accept dotted paths natively). */
function expandDotted(obj: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(obj)) {
    const parts = k.split('.');
    let node = out;
    for (const p of parts.slice(0, -1)) node = (node[p] ??= {}) as Record<string, unknown>;
    node[parts[parts.length - 1]!] = v;
  }
  return out;
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
    await fs.mkdir(dir, { recursive: true });
    const { lock, log, ...lockOptions } = options;
    return new EmbeddedStore(dir, lock ? await lockDataDir(dir, lockOptions) : null, log ?? null);
  }

  collection<T extends Doc>(name: string, indexes: IndexSpec[] = []): Promise<Collection<T>> {
    let pending = this.collections.get(name);
    if (!pending) {
      pending = (async () => {
        const ds = new Datastore<Doc>(
          this.dir ? { filename: path.join(this.dir, `${name}.db`), autoload: false } : { inMemoryOnly: true },
        );
        await ds.loadDatabaseAsync();
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
      await c.durable();
      return c as unknown as Collection<T>;
    });
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
      if (this.dir) await c.ds.compactDatafileAsync();
      await c.appender?.release();
    }
    this.collections.clear();
    this.opened.clear();
    const lock = this.lock;
    this.lock = null;
    await lock?.release();
  }
}
