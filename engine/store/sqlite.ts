import { fstatSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { DuplicateKeyError } from '../errors.js';
import { cjsDefault } from '../interop.js';
import type { Logger } from '../logger.js';
import { DATA_FILE_MODE, prepareDataDir } from './data-dir.js';
import { lockDataDir, type DataDirLock, type LockOptions } from './lock.js';
import type { Collection, Doc, Filter, FindOptions, IndexSpec, Store, UnitOfWork } from './port.js';

type Database = BetterSqlite3.Database;
type Statement = BetterSqlite3.Statement;
const Sqlite = cjsDefault(BetterSqlite3);

/** The database file of a store on disk, inside `DATA_DIR`. */
export const SQLITE_FILE = 'store.sqlite';

/** How long a failed commit or fsync is reported by `writeFailure` (ms). */
const FAILURE_SHOWN_MS = 2000;

/** How often documents past a TTL index's expiry are deleted (ms). */
const TTL_SWEEP_MS = 60_000;

/** Prepared statements kept per store (by SQL text); the port's queries come in a few dozen shapes. */
const STATEMENT_CACHE = 512;

/** A value as SQLite stores or compares it. */
type SqlValue = string | number | bigint | null;

/**
 * How a Date is stored: this prefix and its ISO 8601 text (`\u0001D2026-01-02T03:04:05.006Z`), so a
 * Date field compares, sorts and indexes in time order (as text, above every number: MongoDB's
 * order of types) and is read back as a Date.
 */
const DATE_MARK = '\u0001D';
/** {@link DATE_MARK} as it appears in JSON text (escaped). */
const DATE_MARK_JSON = '\\u0001D';

/** A Date as stored (see {@link DATE_MARK}). */
function dateText(d: Date): string {
  return DATE_MARK + d.toISOString();
}

/** JSON text of a document, Dates as {@link DATE_MARK} strings (plain `JSON.stringify` when it holds none). */
function encode(doc: unknown): string {
  if (!holdsDate(doc)) return JSON.stringify(doc);
  return JSON.stringify(doc, function (this: Record<string, unknown>, key, value: unknown) {
    const raw = this[key];
    return raw instanceof Date ? dateText(raw) : value;
  });
}

/** Whether a value holds a Date anywhere. */
export function holdsDate(v: unknown): boolean {
  if (v === null || typeof v !== 'object') return false;
  if (v instanceof Date) return true;
  if (Array.isArray(v)) return v.some(holdsDate);
  for (const k in v) if (holdsDate((v as Record<string, unknown>)[k])) return true;
  return false;
}

/** A document from its JSON text ({@link encode}'s Dates turned back into Dates). */
function decode<T>(text: string): T {
  if (!text.includes(DATE_MARK_JSON)) return JSON.parse(text) as T;
  return JSON.parse(text, (_key, value: unknown) =>
    typeof value === 'string' && value.startsWith(DATE_MARK) ? new Date(value.slice(DATE_MARK.length)) : value,
  ) as T;
}

/** A field name as a JSON path literal (`a.b` → `$."a"."b"`); names are code's, never a client's. */
function jsonPath(field: string): string {
  let known = paths.get(field);
  if (known === undefined) paths.set(field, (known = pathOf(field)));
  return known;
}

/** JSON paths of the field names seen (a few dozen). */
const paths = new Map<string, string>();

function pathOf(field: string): string {
  const parts = field.split('.');
  for (const p of parts) {
    if (p === '' || /["'\\]/.test(p) || [...p].some((ch) => ch < ' '))
      throw new Error(`store: field name ${JSON.stringify(field)} cannot be queried`);
  }
  return `$${parts.map((p) => `."${p}"`).join('')}`;
}

/**
 * The SQL expression of a field: `_id` is the primary key column, any other field is read from
 * the document. Indexes are built on exactly these expressions, so a query on the field can use them.
 */
function fieldSql(field: string): string {
  return field === '_id' ? 'id' : `json_extract(doc, '${jsonPath(field)}')`;
}

/** A JavaScript value as a bound SQL parameter (booleans as 1 / 0, as JSON's are read back; objects as JSON text). */
function param(v: unknown): SqlValue {
  if (v === undefined || v === null) return null;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'string' || typeof v === 'number' || typeof v === 'bigint') return v;
  if (v instanceof Date) return dateText(v);
  return encode(v);
}

const isOperatorObject = (v: unknown): v is Record<string, unknown> =>
  v !== null &&
  typeof v === 'object' &&
  !Array.isArray(v) &&
  !(v instanceof Date) &&
  Object.keys(v).some((k) => k.startsWith('$'));

/** A filter turned into a SQL condition with its parameters (values are always parameters). */
interface Where {
  sql: string;
  params: SqlValue[];
}

/** `e = v` for a filter value without operators (null: missing or null, as MongoDB matches it). */
function equals(field: string, v: unknown, params: SqlValue[]): string {
  if (v === null || v === undefined) return `${fieldSql(field)} IS NULL`;
  params.push(param(v));
  return `${fieldSql(field)} = ?`;
}

/** The condition of one field's operators (`{$gt: 1, $lt: 5}`), ANDed. */
function operators(field: string, ops: Record<string, unknown>, params: SqlValue[]): string {
  const terms: string[] = [];
  for (const [op, v] of Object.entries(ops)) {
    const e = fieldSql(field);
    switch (op) {
      case '$eq':
        terms.push(equals(field, v, params));
        break;
      case '$ne':
        if (v === null || v === undefined) terms.push(`${e} IS NOT NULL`);
        else {
          terms.push(`${e} IS NOT ?`);
          params.push(param(v));
        }
        break;
      case '$in':
      case '$nin': {
        if (!Array.isArray(v)) throw new Error(`store: ${op} needs an array`);
        const values = v.filter((x) => x !== null && x !== undefined);
        const withNull = values.length < v.length;
        const plain = fieldSql(field);
        params.push(JSON.stringify(values.map(param)));
        const list = `${plain} IN (SELECT value FROM json_each(?))`;
        if (op === '$in') terms.push(withNull ? `(${plain} IS NULL OR ${list})` : list);
        else terms.push(withNull ? `(${plain} IS NOT NULL AND NOT ${list})` : `(${plain} IS NULL OR NOT ${list})`);
        break;
      }
      case '$gt':
      case '$gte':
      case '$lt':
      case '$lte': {
        const sign = { $gt: '>', $gte: '>=', $lt: '<', $lte: '<=' }[op];
        terms.push(`${e} ${sign} ?`);
        params.push(param(v));
        // MongoDB compares a bound only with values of its type: numbers sort below all text in
        // SQLite, so a lower bound on a number stops before text, an upper bound on text above
        // numbers; a Date bound stays among Dates
        const lower = op === '$gt' || op === '$gte';
        if (lower && typeof v === 'number') terms.push(`${e} < ''`);
        else if (!lower && typeof v === 'string') terms.push(`${e} >= ''`);
        else if (v instanceof Date) {
          terms.push(lower ? `${e} < ?` : `${e} >= ?`);
          params.push(lower ? '\u0001E' : DATE_MARK);
        }
        break;
      }
      case '$exists':
        if (field === '_id') terms.push(v ? '1' : '0');
        else terms.push(`json_type(doc, '${jsonPath(field)}') IS ${v ? 'NOT ' : ''}NULL`);
        break;
      default:
        throw new Error(`store: operator ${op} is not in the port's filter subset`);
    }
  }
  return terms.length ? terms.join(' AND ') : '1';
}

/**
 * The SQL condition of a port filter (MongoDB syntax: equality, `$in`, `$nin`, `$ne`, `$lt`,
 * `$lte`, `$gt`, `$gte`, `$exists`, top-level `$or`). Equality on an array or object field compares
 * the whole value (no match of an array's elements).
 */
export function whereOf(filter: Filter): Where {
  const params: SqlValue[] = [];
  const terms: string[] = [];
  for (const [k, v] of Object.entries(filter)) {
    if (k === '$or') {
      if (!Array.isArray(v) || v.length === 0) throw new Error('store: $or needs a non-empty array');
      terms.push(
        `(${v
          .map((branch) => {
            const w = whereOf(branch as Filter);
            params.push(...w.params);
            return `(${w.sql})`;
          })
          .join(' OR ')})`,
      );
    } else if (k.startsWith('$')) throw new Error(`store: operator ${k} is not in the port's filter subset`);
    else if (isOperatorObject(v)) terms.push(operators(k, v, params));
    else terms.push(equals(k, v, params));
  }
  return { sql: terms.length ? terms.join(' AND ') : '1', params };
}

/** `ORDER BY` of a sort specification ('' when none). */
function orderBy(sort: FindOptions['sort']): string {
  if (!sort) return '';
  const keys = Object.entries(sort);
  if (keys.length === 0) return '';
  return ` ORDER BY ${keys.map(([f, d]) => `${fieldSql(f)} ${d === -1 ? 'DESC' : 'ASC'}`).join(', ')}`;
}

/** Turns `{'a.b': 1}` into `{a: {b: 1}}` (the inserted document of an upsert). */
export function expandDotted(obj: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(obj)) {
    const parts = k.split('.');
    let node = out;
    for (const p of parts.slice(0, -1)) node = (node[p] ??= {}) as Record<string, unknown>;
    node[parts[parts.length - 1]!] = v;
  }
  return out;
}

/** The equality fields of a filter (what an upsert inserts besides the `$set` fields). */
export function equalityFields(filter: Filter): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(filter)) {
    if (k.startsWith('$')) continue;
    if (isOperatorObject(v)) {
      if ('$eq' in v) out[k] = v.$eq;
      continue;
    }
    out[k] = v;
  }
  return out;
}

function isUniqueViolation(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

/** Runs `fn`, turning a unique-constraint failure into {@link DuplicateKeyError}. */
function mapped<R>(fn: () => R): R {
  try {
    return fn();
  } catch (err) {
    if (isUniqueViolation(err)) throw new DuplicateKeyError((err as Error).message);
    throw err;
  }
}

/** A running {@link SqliteStore.transaction} (identity only: the writes made with it belong to it). */
type TxScope = { readonly id: number };

/**
 * The syncs of a store on disk, made off the event loop (libuv's thread pool): SQLite runs with
 * `synchronous=OFF` (a COMMIT only hands the WAL frames to the OS) and the writer fsyncs the WAL
 * itself before it answers the writes of a commit, and the database file after each checkpoint
 * before the WAL is reused, the order `synchronous=FULL` keeps, without blocking the event loop
 * for each fsync (about 10 ms a commit here).
 */
interface DiskSync {
  /** fdatasync of the WAL file. */
  wal(): Promise<void>;
  /** fdatasync of the database file. */
  database(): Promise<void>;
  /** Size of the WAL file (cut back to the checkpoint size when it is reset). */
  walBytes(): number;
}

/** WAL bytes after which the writer checkpoints into the database file (default). */
const CHECKPOINT_BYTES = 8 << 20;

/** Writes waiting for one commit: they resolve together once it is done. */
interface Batch {
  promise: Promise<void>;
  resolve(): void;
  reject(err: unknown): void;
}

/**
 * Group commit and transactions over one SQLite connection (better-sqlite3 is synchronous).
 * A write runs at once inside an open SQLite transaction (BEGIN on the first write of a batch), and
 * its promise resolves after the COMMIT that ends the batch: the commit runs on the next turn of the
 * event loop (`setImmediate`), so every write issued meanwhile shares it (one WAL sync per batch,
 * not per request). Reads run at once on the same connection and see writes whose commit is still
 * pending.
 * A {@link transaction} scope is a SAVEPOINT in the batch: while it is open, writes made without its
 * scope wait (they run when it ends) and the batch is not committed; it ends with RELEASE (its
 * writes then commit with the batch) or ROLLBACK TO (none of them happened). Which writes belong to
 * the scope is said explicitly: each write names the scope it is made in (the collections handed
 * out by the transaction's unit of work), never inferred from async context.
 */
class Writer {
  private batch: Batch | null = null;
  private scheduled = false;
  private current: TxScope | null = null;
  private flushWanted = false;
  /** Writes from outside the open scope, run when it ends. */
  private readonly held: Array<() => void> = [];
  /** Scopes waiting for the open one to end (each becomes the open one before it is woken). */
  private readonly scopes: Array<{ scope: TxScope; start(): void }> = [];
  private nextScope = 0;
  /** The last commit or fsync failure, until one succeeds. */
  failure: Error | null = null;
  /** When {@link failure} happened (epoch ms). */
  failedAtMs = 0;
  /** Batches committed, waiting for the next fsync of the WAL to start. */
  private syncWaiters: Batch[] = [];
  /** The loop of WAL fsyncs while one runs (resolves when no batch waits). */
  private syncing: Promise<void> | null = null;
  /** COMMITs made so far (the group-commit test reads it). */
  commits = 0;
  /** Checkpoints made so far. */
  checkpoints = 0;

  /**
   * @param sync - the fsyncs of a store on disk; null in memory (a commit is done when COMMIT returns).
   * @param checkpointBytes - WAL size past which a commit is followed by a checkpoint (the size
   *   a reset WAL file is cut back to).
   */
  constructor(
    private readonly db: Database,
    private readonly sync: DiskSync | null = null,
    private readonly checkpointBytes = CHECKPOINT_BYTES,
  ) {}

  /**
   * Runs the synchronous write `op` in the current batch, as part of transaction `scope` when given.
   * @returns its result once committed (inside a transaction: at once, the transaction commits).
   * @throws {Error} when `scope` is not the open transaction (it ended).
   */
  write<R>(op: () => R, scope: TxScope | null = null): Promise<R> {
    if (scope !== null && scope !== this.current)
      return Promise.reject(new Error('store: a write through a transaction that has ended'));
    if (this.current !== null && scope === null) {
      return new Promise<R>((resolve, reject) => this.held.push(() => this.write(op).then(resolve, reject)));
    }
    const inScope = scope !== null;
    this.begin();
    let result: R;
    try {
      result = mapped(op);
    } catch (err) {
      this.abortedBy(err);
      return Promise.reject(err);
    }
    return inScope ? Promise.resolve(result) : this.committed().then(() => result);
  }

  /** BEGIN when no SQLite transaction is open. */
  private begin(): void {
    if (!this.db.inTransaction) this.db.exec('BEGIN IMMEDIATE');
  }

  /**
   * After a failed statement: when SQLite rolled the whole transaction back (I/O error, disk full), the batch failed.
   */
  private abortedBy(err: unknown): void {
    if (this.batch && !this.db.inTransaction) {
      const b = this.batch;
      this.batch = null;
      b.reject(err);
    }
  }

  /** The commit of the current batch (scheduled on the next event-loop turn). */
  private committed(): Promise<void> {
    if (!this.batch) {
      let resolve!: () => void;
      let reject!: (err: unknown) => void;
      const promise = new Promise<void>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      this.batch = { promise, resolve, reject };
    }
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        this.flush();
      });
    }
    return this.batch.promise;
  }

  /** COMMITs the batch now (unless a scope is open: then when it ends). */
  flush(): void {
    if (this.current !== null) {
      this.flushWanted = true;
      return;
    }
    const b = this.batch;
    this.batch = null;
    if (!this.db.inTransaction) {
      b?.resolve();
      return;
    }
    try {
      this.db.exec('COMMIT');
      this.commits++;
    } catch (err) {
      this.failed(err);
      if (this.db.inTransaction) {
        try {
          this.db.exec('ROLLBACK');
        } catch {
          /* already rolled back by SQLite */
        }
      }
      b?.reject(err);
      return;
    }
    if (!this.sync) {
      this.failure = null;
      b?.resolve();
      return;
    }
    if (b) this.syncWaiters.push(b);
    // (the loop awaits before it ends, so it is never over before it is recorded here)
    if (this.syncWaiters.length > 0 && this.syncing === null) this.syncing = this.syncLoop();
    if (this.sync.walBytes() > this.checkpointBytes) this.checkpoint();
  }

  private failed(err: unknown): void {
    this.failure = err instanceof Error ? err : new Error(String(err));
    this.failedAtMs = Date.now();
  }

  /**
   * fsyncs the WAL until no committed batch waits, answering the batches committed before each
   * fsync started once it is done (a batch committed meanwhile waits for the next one).
   */
  private async syncLoop(): Promise<void> {
    while (this.syncWaiters.length > 0) {
      const waiting = this.syncWaiters;
      this.syncWaiters = [];
      try {
        await this.sync!.wal();
        this.failure = null;
        for (const b of waiting) b.resolve();
      } catch (err) {
        this.failed(err);
        for (const b of waiting) b.reject(err);
      }
    }
    this.syncing = null;
  }

  /**
   * Copies the WAL into the database file, holding every write meanwhile (as a transaction scope
   * does): the WAL synced first, the database file synced after, so the WAL is reset (by the next
   * write) only once what it held is durable in the database file.
   */
  private checkpoint(): void {
    if (this.current !== null) return;
    const scope: TxScope = { id: ++this.nextScope };
    this.current = scope;
    void (async () => {
      try {
        while (this.syncing) await this.syncing;
        this.db.pragma('wal_checkpoint(PASSIVE)');
        await this.sync!.database();
        this.checkpoints++;
      } catch (err) {
        this.failed(err);
      } finally {
        if (this.current === scope) this.endScope();
      }
    })();
  }

  /**
   * Runs `fn` so that every write made with its scope commits together, or none does.
   */
  async transaction<R>(fn: (scope: TxScope) => Promise<R>): Promise<R> {
    const scope: TxScope = { id: ++this.nextScope };
    if (this.current !== null) await new Promise<void>((start) => this.scopes.push({ scope, start }));
    else this.current = scope;
    let committed: Promise<void>;
    try {
      this.begin();
      this.db.exec('SAVEPOINT tx');
      let result: R;
      try {
        result = await fn(scope);
      } catch (err) {
        if (this.db.inTransaction) this.db.exec('ROLLBACK TO tx; RELEASE tx');
        else this.abortedBy(err);
        throw err;
      }
      if (!this.db.inTransaction) throw new Error('store: the transaction was rolled back by SQLite (I/O error)');
      this.db.exec('RELEASE tx');
      committed = this.committed();
      this.endScope();
      await committed;
      return result;
    } finally {
      if (this.current === scope) this.endScope();
    }
  }

  /** Ends the open scope: the writes held meanwhile run, a wanted commit happens, the next scope starts. */
  private endScope(): void {
    this.current = null;
    for (const run of this.held.splice(0)) run();
    if (this.flushWanted) {
      this.flushWanted = false;
      this.flush();
    }
    const next = this.scopes.shift();
    if (next) {
      this.current = next.scope;
      next.start();
    }
  }

  /** Waits until no scope is open, commits what is pending and waits for its fsync. */
  async drain(): Promise<void> {
    while (this.current !== null || this.scopes.length > 0) await new Promise<void>((resolve) => setImmediate(resolve));
    this.flush();
    while (this.syncing) await this.syncing;
  }
}

/** One collection: a table `(id TEXT PRIMARY KEY, doc TEXT)` holding each document as JSON. */
class SqliteCollection<T extends Doc> implements Collection<T> {
  private readonly table: string;

  constructor(
    private readonly store: SqliteStore,
    name: string,
    /** The transaction this handle writes in (null: the store's own handle). */
    private readonly scope: TxScope | null = null,
  ) {
    this.table = `"${name}"`;
  }

  /** This collection with its writes in transaction `scope`. */
  within(scope: TxScope): SqliteCollection<T> {
    return new SqliteCollection<T>(this.store, this.table.slice(1, -1), scope);
  }

  private st(sql: string): Statement {
    return this.store.statement(sql);
  }

  async insertOne(doc: T): Promise<void> {
    const text = encode(doc);
    await this.store.writer.write(
      () => this.st(`INSERT INTO ${this.table} (id, doc) VALUES (?, ?)`).run(doc._id, text),
      this.scope,
    );
  }

  /** All or none (a savepoint inside the batch). */
  async insertMany(docs: T[]): Promise<void> {
    const texts = docs.map(encode);
    await this.store.writer.write(() => {
      const insert = this.st(`INSERT INTO ${this.table} (id, doc) VALUES (?, ?)`);
      this.store.db.transaction(() => {
        for (let i = 0; i < docs.length; i++) insert.run(docs[i]!._id, texts[i]!);
      })();
    }, this.scope);
  }

  async findOne(filter: Filter): Promise<T | null> {
    const id = filter._id;
    let row: { doc: string } | undefined;
    if (typeof id === 'string' && Object.keys(filter).length === 1)
      row = this.st(`SELECT doc FROM ${this.table} WHERE id = ?`).get(id) as typeof row;
    else {
      const w = whereOf(filter);
      row = this.st(`SELECT doc FROM ${this.table} WHERE ${w.sql} LIMIT 1`).get(...w.params) as typeof row;
    }
    return row ? decode<T>(row.doc) : null;
  }

  /** The SELECT of {@link find} with its parameters (the query-plan test explains it). */
  selectOf(filter: Filter, options: FindOptions = {}): Where {
    const w = whereOf(filter);
    let sql = `SELECT doc FROM ${this.table} WHERE ${w.sql}${orderBy(options.sort)}`;
    const params = [...w.params];
    if (options.limit || options.skip) {
      sql += ' LIMIT ? OFFSET ?';
      params.push(options.limit || -1, options.skip ?? 0);
    }
    return { sql, params };
  }

  async find(filter: Filter, options: FindOptions = {}): Promise<T[]> {
    const q = this.selectOf(filter, options);
    const rows = this.st(q.sql)
      .pluck()
      .all(...q.params) as string[];
    return rows.map((text) => decode<T>(text));
  }

  async count(filter: Filter): Promise<number> {
    const w = whereOf(filter);
    return (
      (this.st(`SELECT count(*) FROM ${this.table} WHERE ${w.sql}`)
        .pluck()
        .get(...w.params) as number) ?? 0
    );
  }

  async updateOne(filter: Filter, set: Record<string, unknown>, options: { upsert?: boolean } = {}): Promise<number> {
    const w = whereOf(filter);
    const assigns: string[] = [];
    const values: SqlValue[] = [];
    for (const [k, v] of Object.entries(set)) {
      if (k === '_id') continue;
      // strings and numbers as they are; anything else (booleans, null, objects, Dates) as JSON
      if (typeof v === 'string' || typeof v === 'number') {
        assigns.push(`'${jsonPath(k)}', ?`);
        values.push(v);
      } else {
        assigns.push(`'${jsonPath(k)}', json(?)`);
        values.push(v === undefined ? 'null' : encode(v));
      }
    }
    const setSql = assigns.length ? `json_set(doc, ${assigns.join(', ')})` : 'doc';
    const byId = typeof filter._id === 'string';
    // a lookup by _id: the row is the one with that id when the rest matches
    const sql = byId
      ? `UPDATE ${this.table} SET doc = ${setSql} WHERE ${w.sql}`
      : `UPDATE ${this.table} SET doc = ${setSql} WHERE rowid = (SELECT ` +
        `rowid FROM ${this.table} WHERE ${w.sql} LIMIT 1)`;
    const upsert = options.upsert ? encode(expandDotted({ ...equalityFields(filter), ...set })) : null;
    return this.store.writer.write(() => {
      const n = this.st(sql).run(...values, ...w.params).changes;
      if (n > 0 || upsert === null) return n;
      const doc = JSON.parse(upsert) as { _id?: unknown };
      if (typeof doc._id !== 'string') throw new Error('store: an upsert needs an _id in its filter or update');
      this.st(`INSERT INTO ${this.table} (id, doc) VALUES (?, ?)`).run(doc._id, upsert);
      return 0;
    }, this.scope);
  }

  async replaceOne(doc: T): Promise<void> {
    const text = encode(doc);
    await this.store.writer.write(
      () =>
        this.st(
          `INSERT INTO ${this.table} (id, doc) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET doc = excluded.doc`,
        ).run(doc._id, text),
      this.scope,
    );
  }

  async deleteMany(filter: Filter): Promise<number> {
    const w = whereOf(filter);
    return this.store.writer.write(
      () => this.st(`DELETE FROM ${this.table} WHERE ${w.sql}`).run(...w.params).changes,
      this.scope,
    );
  }
}

/** The import of the older embedded store's files, recorded in the table `_imports`. */
export const NEDB_IMPORT = 'nedb';

/** A data file of the older embedded store (NeDB): `<collection>.db` at the top of `DATA_DIR`. */
const NEDB_FILE = /^[A-Za-z][A-Za-z0-9_]*\.db$/;

/**
 * The collections whose data files of the older embedded store (`<collection>.db`) lie in `dir`.
 * @returns their names, sorted; none when `dir` holds no such file or does not exist.
 */
export async function nedbCollections(dir: string): Promise<string[]> {
  const names = await fs.readdir(dir).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return [];
    throw err;
  });
  return names
    .filter((f) => NEDB_FILE.test(f))
    .map((f) => f.slice(0, -3))
    .sort();
}

/**
 * `DATA_DIR` holds the data files of the older embedded store and they were not imported: the
 * service refuses to start on it rather than start empty beside them. Its message is the one line
 * to print; it names the command that imports them (scripts/migrate.ts).
 */
export class OldStoreDataError extends Error {
  constructor(readonly dir: string) {
    super(`DATA_DIR ${dir} holds data of the older embedded store: import it with \`npm run migrate -- ${dir}\``);
    this.name = 'OldStoreDataError';
  }
}

/** {@link DiskSync} over open handles of the WAL and database files. */
interface SyncFiles extends DiskSync {
  close(): Promise<void>;
}

/** Opens the WAL and database files for their fsyncs (and syncs the folder that holds them). */
async function openSyncFiles(dir: string, file: string): Promise<SyncFiles> {
  const wal = await fs.open(`${file}-wal`, 'r');
  const database = await fs.open(file, 'r');
  const folder = await fs.open(dir, 'r');
  try {
    await folder.sync();
  } finally {
    await folder.close();
  }
  return {
    wal: () => wal.datasync(),
    database: () => database.datasync(),
    walBytes: () => fstatSync(wal.fd).size,
    close: async () => {
      await wal.close();
      await database.close();
    },
  };
}

/**
 * The SQL of an index ({@link fieldSql} of each field; partial for
 * a sparse one: documents with none of the fields are left out).
 */
export function indexSql(table: string, ix: IndexSpec): string {
  const date = ix.expireAfterSeconds !== undefined;
  const exprs = ix.fields.map((f) => fieldSql(f));
  const name =
    `ix_${table}_${ix.fields.join('_').replace(/[^A-Za-z0-9_]/g, '_')}` +
    `${ix.unique ? '_u' : ''}${ix.sparse ? '_s' : ''}${date ? '_ttl' : ''}`;
  const where = ix.sparse ? ` WHERE ${exprs.map((e) => `${e} IS NOT NULL`).join(' OR ')}` : '';
  return (
    `CREATE ${ix.unique ? 'UNIQUE ' : ''}INDEX IF NOT EXISTS "${name}" ` + `ON "${table}" (${exprs.join(', ')})${where}`
  );
}

/**
 * The store on SQLite (better-sqlite3): one file `store.sqlite` in `DATA_DIR` (WAL mode,
 * `synchronous=FULL`: a write is acknowledged once its commit is synced to the WAL file), or in
 * memory. One table per collection; each {@link IndexSpec} is a real index on the document's
 * fields (unique; partial for sparse; a TTL index is swept by a periodic delete); the port's filter
 * subset is translated to SQL ({@link whereOf}). Concurrent writes share one commit (see
 * {@link Writer}). A store belongs to one process (the `DATA_DIR` lock).
 */
export class SqliteStore implements Store {
  readonly adapter = 'sqlite' as const;
  readonly writer: Writer;
  private readonly statements = new Map<string, Statement>();
  private readonly collections = new Map<string, SqliteCollection<Doc>>();
  /** The transaction scope of each unit of work this store handed out (for its own writes outside a collection). */
  private readonly units = new WeakMap<UnitOfWork, TxScope>();
  private readonly sweepers: NodeJS.Timeout[] = [];
  private closed = false;

  private constructor(
    readonly db: Database,
    private readonly file: string | null,
    private lock: DataDirLock | null,
    private readonly log: Logger | null,
    private readonly files: SyncFiles | null = null,
    checkpointBytes?: number,
  ) {
    this.writer = new Writer(db, files, checkpointBytes);
  }

  get location(): string {
    return this.file ?? '(memory)';
  }

  /**
   * Opens the store in `dir` (the folder is created when missing; the database is `store.sqlite`
   * in it), or in memory when `dir` is null.
   * @param options.lock - take the folder's exclusive lock ({@link lockDataDir}) for as long as the
   *   store is open, as the service does.
   * @param options.log - where a TTL sweep that fails is reported.
   * @param options.checkpointBytes - WAL size (bytes) after which it is checkpointed (default 8 MiB).
   * @param options.oldStoreFiles - open even when `dir` holds data files of the older embedded store
   *   not yet imported (the import itself: scripts/migrate.ts).
   * @throws {DataDirLockedError} with `lock` when another live process holds `dir`.
   * @throws {OldStoreDataError} when `dir` holds data files of the older embedded store (NeDB's
   *   `<collection>.db`) and this database records no import of them (see {@link NEDB_IMPORT}).
   */
  static async open(
    dir: string | null,
    options: { lock?: boolean; log?: Logger; checkpointBytes?: number; oldStoreFiles?: boolean } & LockOptions = {},
  ): Promise<SqliteStore> {
    const { lock, log, checkpointBytes, oldStoreFiles, ...lockOptions } = options;
    if (!dir) return new SqliteStore(new Sqlite(':memory:'), null, null, log ?? null);
    const file = path.join(dir, SQLITE_FILE);
    // the older embedded store's files, unless imported before: refused before the folder is
    // changed in any way (modes, lock, a database beside them)
    const oldFiles = await nedbCollections(dir);
    if (
      !oldStoreFiles &&
      oldFiles.length > 0 &&
      !(await fs.access(file).then(
        () => true,
        () => false,
      ))
    )
      throw new OldStoreDataError(dir);
    await prepareDataDir(dir, log);
    const held = lock ? await lockDataDir(dir, lockOptions) : null;
    try {
      // created owner-only before SQLite opens it: SQLite gives its -wal and -shm files the
      // database file's mode, so none of the three is ever readable by other local users
      await fs.writeFile(file, '', { flag: 'a', mode: DATA_FILE_MODE });
      const db = new Sqlite(file);
      try {
        db.pragma('journal_mode = WAL');
        // the writer makes the syncs (see DiskSync) and the checkpoints. A reset WAL file is cut
        // back to the checkpoint size: frames are then written over existing blocks (an fsync
        // without a metadata commit), and the file grows past that size only when a checkpoint is due
        db.pragma('synchronous = OFF');
        db.pragma('wal_autocheckpoint = 0');
        db.pragma(`journal_size_limit = ${Math.floor(checkpointBytes ?? CHECKPOINT_BYTES)}`);
        db.exec('BEGIN IMMEDIATE; COMMIT'); // the WAL file exists from here on
        db.exec('CREATE TABLE IF NOT EXISTS "_imports" (id TEXT PRIMARY KEY, atMs INTEGER NOT NULL)');
        if (
          !oldStoreFiles &&
          oldFiles.length > 0 &&
          !db.prepare('SELECT 1 FROM "_imports" WHERE id = ?').get(NEDB_IMPORT)
        )
          throw new OldStoreDataError(dir);
        const files = await openSyncFiles(dir, file);
        return new SqliteStore(db, file, held, log ?? null, files, checkpointBytes);
      } catch (err) {
        db.close();
        throw err;
      }
    } catch (err) {
      await held?.release();
      throw err;
    }
  }

  /** A prepared statement of `sql`, kept for the next call. */
  statement(sql: string): Statement {
    let st = this.statements.get(sql);
    if (!st) {
      if (this.statements.size >= STATEMENT_CACHE) this.statements.delete(this.statements.keys().next().value!);
      st = this.db.prepare(sql);
      this.statements.set(sql, st);
    }
    return st;
  }

  /** The SQL of the statements prepared so far, at most the last 512 (the query-plan test explains each). */
  preparedSql(): string[] {
    return [...this.statements.keys()];
  }

  async collection<T extends Doc>(name: string, indexes: IndexSpec[] = []): Promise<Collection<T>> {
    if (!/^[A-Za-z][A-Za-z0-9_]*$/.test(name))
      throw new Error(`store: collection name ${JSON.stringify(name)} is not an identifier`);
    let c = this.collections.get(name);
    const ddl: string[] = [];
    if (!c) {
      ddl.push(`CREATE TABLE IF NOT EXISTS "${name}" (id TEXT PRIMARY KEY, doc TEXT NOT NULL)`);
      c = new SqliteCollection<Doc>(this, name);
      this.collections.set(name, c);
    }
    for (const ix of indexes) {
      if (ix.adapters && !ix.adapters.includes('sqlite')) continue;
      ddl.push(indexSql(name, ix));
      if (ix.expireAfterSeconds !== undefined) this.sweepTtl(name, ix.fields[0]!, ix.expireAfterSeconds);
    }
    if (ddl.length) await this.writer.write(() => this.db.exec(ddl.join(';\n')));
    return c as unknown as Collection<T>;
  }

  /** Deletes the documents of `table` whose Date `field` is more than `seconds` ago, every minute. */
  private sweepTtl(table: string, field: string, seconds: number): void {
    const sweep = () => {
      if (this.closed) return;
      const w = whereOf({ [field]: { $lte: new Date(Date.now() - seconds * 1000) } });
      this.writer
        .write(() => this.statement(`DELETE FROM "${table}" WHERE ${w.sql}`).run(...w.params))
        .catch((err: unknown) => this.log?.error({ err, table }, 'store: TTL sweep failed'));
    };
    const timer = setInterval(sweep, TTL_SWEEP_MS);
    timer.unref();
    this.sweepers.push(timer);
  }

  /**
   * Runs `fn`; every write made through `tx` commits in one SQLite transaction, or none does when
   * it throws. Writes made otherwise meanwhile wait until it ends, so `fn` must not wait for such a
   * write (nor for long: it holds every other write).
   */
  transaction<R>(fn: (tx: UnitOfWork) => Promise<R>): Promise<R> {
    return this.writer.transaction((scope) => {
      const tx: UnitOfWork = {
        collection: <T extends Doc>(name: string): Collection<T> => {
          const c = this.collections.get(name);
          if (!c) throw new Error(`store: collection ${name} was not opened`);
          return c.within(scope) as unknown as Collection<T>;
        },
      };
      this.units.set(tx, scope);
      return fn(tx);
    });
  }

  /** When the import `id` (e.g. {@link NEDB_IMPORT}) was recorded in this database (epoch ms), or null. */
  importedAt(id: string): number | null {
    const row = this.db.prepare('SELECT atMs FROM "_imports" WHERE id = ?').get(id) as { atMs: number } | undefined;
    return row?.atMs ?? null;
  }

  /**
   * Records the import `id` at `atMs` (epoch ms); given the unit of work `tx` of one of this store's
   * {@link transaction}s, it commits with that transaction's writes or not at all.
   */
  async recordImport(id: string, atMs: number, tx?: UnitOfWork): Promise<void> {
    const scope = tx === undefined ? null : this.units.get(tx);
    if (scope === undefined) throw new Error('store: recordImport was given a unit of work of another store');
    await this.writer.write(
      () =>
        this.statement(
          'INSERT INTO "_imports" (id, atMs) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET atMs = excluded.atMs',
        ).run(id, atMs),
      scope,
    );
  }

  async ping(): Promise<boolean> {
    try {
      return this.db.prepare('SELECT 1').pluck().get() === 1;
    } catch {
      return false;
    }
  }

  /**
   * The last commit or fsync failure, for 2 s after it happened or until a later commit succeeds,
   * or null. It lapses by itself so that the API's refusal of writes meanwhile (503) cannot keep
   * the next commit, which would clear it, from ever being tried.
   */
  writeFailure(): string | null {
    const f = this.writer.failure;
    return f && Date.now() - this.writer.failedAtMs < FAILURE_SHOWN_MS ? `sqlite: ${f.message}` : null;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    for (const t of this.sweepers.splice(0)) clearInterval(t);
    await this.writer.drain();
    this.closed = true;
    // SQLite checkpoints and removes the WAL as it closes: with its own syncs
    if (this.files) this.db.pragma('synchronous = FULL');
    this.db.close();
    await this.files?.close();
    const lock = this.lock;
    this.lock = null;
    await lock?.release();
  }
}
