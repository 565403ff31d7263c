import { readSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { DuplicateKeyError, errors, type DomainError } from '../errors.js';
import { cjsDefault } from '../interop.js';
import type { Logger } from '../logger.js';
import { DATA_FILE_MODE, prepareDataDir } from './data-dir.js';
import { lockDataDir, type DataDirLock, type LockOptions } from './lock.js';
import { Checkpointer, type CheckpointResult } from './sqlite-checkpointer.js';
import type { Collection, CollectionLayout, Doc, Filter, FindOptions, IndexSpec, Store, UnitOfWork } from './port.js';

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
 * Fields of a collection kept in columns of their own (its indexed fields and the text fields of its
 * `CollectionLayout`): field name → quoted column name. The column holds the value
 * {@link columnValue} gives (what `json_extract` reads from the document), written with the
 * document, so an index on it is maintained without reading the document's JSON.
 */
type Columns = ReadonlyMap<string, string>;

/** No column besides `id` and `doc`. */
const NO_COLUMNS: Columns = new Map();

/**
 * The quoted name of the column of field `field` (`"ix:data.actorId"`; the prefix names every field
 * column, indexed or not).
 */
function columnName(field: string): string {
  jsonPath(field); // refuses a name that cannot be queried
  return `"ix:${field}"`;
}

/** The value of a (dotted) field of `doc` as its column holds it (null: missing or null). */
function columnValue(doc: unknown, field: string): SqlValue {
  let v: unknown = doc;
  if (field.includes('.')) {
    for (const p of field.split('.')) {
      if (v === null || typeof v !== 'object' || Array.isArray(v)) return null;
      v = (v as Record<string, unknown>)[p];
    }
  } else v = doc !== null && typeof doc === 'object' ? (doc as Record<string, unknown>)[field] : undefined;
  return param(v);
}

/**
 * The SQL expression of a field: `_id` is the primary key column, an indexed field its column
 * (see {@link Columns}), any other field is read from the document. Indexes are built on exactly
 * these expressions, so a query on the field can use them.
 */
function fieldSql(field: string, columns: Columns = NO_COLUMNS): string {
  if (field === '_id') return 'id';
  return columns.get(field) ?? `json_extract(doc, '${jsonPath(field)}')`;
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

/**
 * `e = v` for a filter value without operators (null: missing or null, as MongoDB matches it). A
 * boolean is written as its literal (1 / 0, as {@link param} binds it), not a parameter: a partial
 * index on a boolean (`WHERE e = 0`, {@link indexSql}) then serves the statement whatever it is
 * bound to, without SQLite preparing it again at each new binding to compare the value.
 */
function equals(field: string, v: unknown, params: SqlValue[], columns: Columns): string {
  if (v === null || v === undefined) return `${fieldSql(field, columns)} IS NULL`;
  if (typeof v === 'boolean') return `${fieldSql(field, columns)} = ${v ? 1 : 0}`;
  params.push(param(v));
  return `${fieldSql(field, columns)} = ?`;
}

/** The condition of one field's operators (`{$gt: 1, $lt: 5}`), ANDed. */
function operators(field: string, ops: Record<string, unknown>, params: SqlValue[], columns: Columns): string {
  const terms: string[] = [];
  for (const [op, v] of Object.entries(ops)) {
    const e = fieldSql(field, columns);
    switch (op) {
      case '$eq':
        terms.push(equals(field, v, params, columns));
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
        const plain = fieldSql(field, columns);
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
      case '$exists': {
        if (field === '_id') {
          terms.push(v ? '1' : '0');
          break;
        }
        const inDoc = `json_type(doc, '${jsonPath(field)}')`;
        const column = columns.get(field);
        // a value held by its column only (see Table) is not in the document
        if (column === undefined) terms.push(`${inDoc} IS ${v ? 'NOT ' : ''}NULL`);
        else
          terms.push(
            v ? `(${column} IS NOT NULL OR ${inDoc} IS NOT NULL)` : `(${column} IS NULL AND ${inDoc} IS NULL)`,
          );
        break;
      }
      default:
        throw new Error(`store: operator ${op} is not in the port's filter subset`);
    }
  }
  return terms.length ? terms.join(' AND ') : '1';
}

/**
 * The SQL condition of a port filter (MongoDB syntax: equality, `$in`, `$nin`, `$ne`, `$lt`,
 * `$lte`, `$gt`, `$gte`, `$exists`, top-level `$or`). Equality on an array or object field compares
 * the whole value (no match of an array's elements). Fields in `columns` are read from their column.
 */
export function whereOf(filter: Filter, columns: Columns = NO_COLUMNS): Where {
  const params: SqlValue[] = [];
  const terms: string[] = [];
  for (const [k, v] of Object.entries(filter)) {
    if (k === '$or') {
      if (!Array.isArray(v) || v.length === 0) throw new Error('store: $or needs a non-empty array');
      terms.push(
        `(${v
          .map((branch) => {
            const w = whereOf(branch as Filter, columns);
            params.push(...w.params);
            return `(${w.sql})`;
          })
          .join(' OR ')})`,
      );
    } else if (k.startsWith('$')) throw new Error(`store: operator ${k} is not in the port's filter subset`);
    else if (isOperatorObject(v)) terms.push(operators(k, v, params, columns));
    else terms.push(equals(k, v, params, columns));
  }
  return { sql: terms.length ? terms.join(' AND ') : '1', params };
}

/**
 * The shape of a filter of plain equalities (every value a string, number, boolean or bigint; no
 * operator, no null): its field names in order and its booleans' values, which alone decide its
 * SQL (`field = ?` each, a boolean's literal, see {@link whereOf}); null for any other filter. The
 * hot paths (an actor's update by id and revision, a user by partner and id) come in a few such
 * shapes, whose SQL is then built once ({@link Table.statementFor}).
 */
function plainShape(filter: Filter): string | null {
  let shape = '';
  for (const k in filter) {
    if (k.charCodeAt(0) === 36 /* $ */) return null;
    const t = typeof filter[k];
    if (t === 'boolean') shape += `${k}=${filter[k] ? 1 : 0}\u0000`;
    else if (t !== 'string' && t !== 'number' && t !== 'bigint') return null;
    else shape += `${k}\u0000`;
  }
  return shape;
}

/** The parameters of a filter of {@link plainShape} (its values but the booleans, in its order). */
function plainParams(filter: Filter): SqlValue[] {
  const params: SqlValue[] = [];
  for (const k in filter) if (typeof filter[k] !== 'boolean') params.push(param(filter[k]));
  return params;
}

/** Statements kept per table for filters of a {@link plainShape} (code's shapes: a few dozen). */
const SHAPED_STATEMENTS = 128;

/** Ids up to which `find({_id: {$in: ids}})` reads each by its key instead of one `json_each` query. */
const FEW_IDS = 8;

/** `ORDER BY` of a sort specification ('' when none). */
function orderBy(sort: FindOptions['sort'], columns: Columns): string {
  if (!sort) return '';
  const keys = Object.entries(sort);
  if (keys.length === 0) return '';
  return ` ORDER BY ${keys.map(([f, d]) => `${fieldSql(f, columns)} ${d === -1 ? 'DESC' : 'ASC'}`).join(', ')}`;
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
 * The scope of the writes made through {@link SqliteStore.lazyCollection}: none of a transaction, a
 * mark that the write asks for no commit of its own (see `Writer.write`).
 */
const LAZY: TxScope = Object.freeze({ id: 0 });

/**
 * How long a lazy write ({@link SqliteStore.lazyCollection}) waits at most for a commit of other writes
 * to ride (ms); then it is committed by itself.
 */
const LAZY_COMMIT_MS = 250;

/**
 * The syncs of a store on disk, made off the event loop: SQLite runs with `synchronous=OFF` on the
 * writing connection (a COMMIT only hands the WAL frames to the OS) and the writer fsyncs the WAL
 * itself (libuv's thread pool) before it answers the writes of a commit; checkpoints run on a
 * connection of their own in a worker thread with `synchronous=FULL` ({@link Checkpointer}), which
 * fsyncs the database file before the WAL may be reused: the order `synchronous=FULL` keeps,
 * without blocking the event loop for an fsync (about 10 ms a commit here) or a checkpoint's copy.
 */
interface DiskSync {
  /** fdatasync of the WAL file. */
  wal(): Promise<void>;
  /** A PASSIVE checkpoint on the worker's connection (WAL synced, copied, database file synced). */
  checkpoint(): Promise<CheckpointResult>;
  /**
   * Bytes of the WAL in use: its header and the frames written since it was last started over
   * (the file itself keeps its size from one cycle to the next, up to {@link walSizeLimit}).
   */
  walBytes(): number;
}

/**
 * Rows changed (SQLite's `total_changes()`) after which the writer first refreshes the query
 * planner's statistics; then each time the rows changed since double (see {@link Writer.optimize}).
 */
const OPTIMIZE_CHANGES = 100_000;

/** Rows of each index ANALYZE samples (`PRAGMA analysis_limit`): statistics in milliseconds at any size. */
const ANALYSIS_LIMIT = 1000;

/**
 * Rows below which a table keeps no statistics (see {@link Writer.optimize}): those of a small table
 * tell the planner a scan is cheap, which stays in place while the table grows.
 */
const STATS_MIN_ROWS = 10_000;

/**
 * Page size of a store in memory (bytes; SQLite's default is 4096). A COMMIT of an in-memory
 * database walks SQLite's page cache, which holds the whole database, so a commit costs in
 * proportion to the pages the database has: at 40,000 orders a commit cost about 25 µs an order
 * with 4 KiB pages and 10 µs with 8 KiB, the statements about the same (16 KiB pages halve the
 * commits but make the statements dearer: bench:orders gave no gain). Why it walks: when a B-tree
 * split puts its new pages in order, SQLite moves one of them through the page number of the
 * pending byte (1 GiB / page size + 1) for a moment; the commit then cuts the cache back to the
 * database's size, and with a key that far past it, `pcache1TruncateUnsafe` walks every hash slot.
 * A store on disk keeps the size its file was created with, and a page cache of 2 MB: short walks.
 */
const MEMORY_PAGE_SIZE = 8192;

/**
 * In memory, the shortest time between two COMMITs (ms). A batch's writes are answered at the
 * batch's end as on disk, but the SQLite transaction is left open across batches until this long
 * after the last COMMIT: in memory a COMMIT makes nothing durable (it only ends the rollback
 * journal), and each one walks the page cache (see {@link MEMORY_PAGE_SIZE}) and makes the next
 * transaction journal again every page it changes. A failure that rolls the open transaction back
 * would then undo writes already answered: it stops the store instead ({@link Writer.broken}).
 */
const MEMORY_COMMIT_MS = 250;

/** WAL bytes after which the writer checkpoints into the database file (default). */
const CHECKPOINT_BYTES = 8 << 20;

/**
 * WAL size, in multiples of the checkpoint size, past which a checkpoint holds the writes while it
 * runs (see {@link Writer.checkpoint}). Under a steady stream of commits nearly every hold is one
 * cycle of the WAL, and each holds every write for a checkpoint's two fsyncs: at 2 (a hold every
 * 16 MiB) the holds were the tail of bench:timers on disk. At 16 (a hold every 128 MiB) bench:orders
 * on disk holds half as often as at 8 (about 4 % of its checkpoints instead of 11 %, 0.35 % of its
 * writes waiting instead of 0.8 %); the WAL file, which keeps its size, then takes up to 136 MiB
 * ({@link walSizeLimit}), and a restart after a crash reads up to that much WAL.
 */
const HELD_CHECKPOINT_FACTOR = 16;

/**
 * The size a reset WAL file is cut back to (`journal_size_limit`, bytes): one checkpoint size
 * past the size at which writes are held ({@link HELD_CHECKPOINT_FACTOR}), which a WAL under a
 * steady stream of writes reaches every cycle. The file then keeps that size from one cycle to the
 * next: the frames of a new cycle are written over its blocks (fsyncs without a metadata commit),
 * and the commit that starts the WAL over does not cut tens of MiB out of it on the event loop (a
 * 25–35 ms block each cycle of bench:orders on disk).
 */
function walSizeLimit(checkpointBytes: number): number {
  return Math.floor((HELD_CHECKPOINT_FACTOR + 1) * checkpointBytes);
}

/**
 * Event-loop turns a batch waits at most for more writes while they keep arriving (see
 * `Writer.commitTurn`): in bench:orders a COMMIT then serves several orders instead of about two.
 */
const BATCH_TURNS = 3;

/**
 * WAL fsyncs that may run at once (see `Writer.syncLoop`). A commit made while one runs starts its
 * own instead of waiting for it to end: under another process's disk load an fsync takes tens of
 * ms, and a batch then waited for most of one and then its own (the tail of bench:timers on disk).
 * An fdatasync makes durable everything written before it started, so each batch still waits for
 * one that started after its COMMIT.
 */
const SYNC_LANES = 2;

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
 * scope and other transactions wait (served in the order they were asked for once it ends) and the
 * batch is not committed; it ends with RELEASE (its
 * writes then commit with the batch) or ROLLBACK TO (none of them happened). Which writes belong to
 * the scope is said explicitly: each write names the scope it is made in (the collections handed
 * out by the transaction's unit of work), never inferred from async context.
 */
class Writer {
  private batch: Batch | null = null;
  private scheduled = false;
  private current: TxScope | null = null;
  private flushWanted = false;
  /**
   * Writes from outside the open scope, run when it ends, each with its place in the order of arrival
   * (`asked`, shared with {@link scopes}).
   */
  private readonly held: Array<{ asked: number; run(): void }> = [];
  /** Scopes waiting for the open one to end (each becomes the open one before it is woken), in arrival order. */
  private readonly scopes: Array<{ asked: number; scope: TxScope; start(): void }> = [];
  /** Arrivals of held writes and waiting scopes so far: they are served in this order. */
  private asked = 0;
  private nextScope = 0;
  /** The last commit or fsync failure, until one succeeds. */
  failure: Error | null = null;
  /** When {@link failure} happened (epoch ms). */
  failedAtMs = 0;
  /**
   * The failed WAL fsync that stopped the store, if any: from then on every write and transaction is
   * refused (and every batch not yet answered), until the service restarts. After a failed fsync the
   * kernel may have dropped the WAL pages it could not write and report later fsyncs as successful;
   * SQLite's WAL frames chain their checksums, so recovery stops at the first lost frame and every
   * commit after it is gone too: answering those would promise what the disk does not hold. At the
   * restart SQLite recovers the database from what reached the disk (PostgreSQL stops for the same
   * reason).
   */
  broken: DomainError | null = null;
  /** WAL fsyncs started and not yet answered, in the order they started (see {@link syncLoop}). */
  private rounds: Array<{ batches: Batch[]; outcome: true | Error | null }> = [];
  /** Batches committed, waiting for the next fsync of the WAL to start. */
  private syncWaiters: Batch[] = [];
  /** Loops of WAL fsyncs running ({@link syncLoop}), at most {@link SYNC_LANES}. */
  private syncLanes = 0;
  /** Their promises (each resolves when its loop found no batch waiting). */
  private readonly syncLoops = new Set<Promise<void>>();
  /** Whether {@link commitSoon} asked for a commit while every fsync lane ran: made as one ends. */
  private commitWanted = false;
  /**
   * Batches ended so far (the group-commit tests read it): each with a COMMIT, except in memory
   * within {@link MEMORY_COMMIT_MS} of the last one, where the batch is answered and its COMMIT
   * made with a later batch's (its writes are then all or none with those).
   */
  commits = 0;
  /** The COMMITs themselves (in memory fewer than {@link commits}). */
  sqliteCommits = 0;
  /** WAL fsyncs made so far, and the milliseconds they took in all (the benchmarks print them). */
  readonly syncs = { count: 0, ms: 0 };
  /** Checkpoints made so far. */
  checkpoints = 0;
  /** Of {@link checkpoints}, those that held the writes while they ran. */
  heldCheckpoints = 0;
  /** The checkpoint running on the worker, if any. */
  private checkpointing: Promise<void> | null = null;
  /** WAL size past which the next checkpoint runs beside the writes (see {@link checkpoint}). */
  private nextCheckpointBytes: number;
  /** How long the writes were held for checkpoints in all (ms), and the longest once. */
  heldMs = { total: 0, max: 0 };
  /** Whether the writes are held for a checkpoint (see {@link checkpoint}). */
  private holding = false;
  /** The transaction statements, prepared once (an `exec` parses its SQL on every call). */
  private readonly control: Record<
    'begin' | 'commit' | 'rollback' | 'savepoint' | 'release' | 'rollbackTo' | 'many' | 'releaseMany' | 'undoMany',
    Statement
  >;

  /**
   * @param sync - the fsyncs of a store on disk; null in memory (a batch is done when COMMIT returns, or
   *   answered before it, see {@link MEMORY_COMMIT_MS}).
   * @param checkpointBytes - WAL size past which a commit is followed by a checkpoint (the size
   *   a reset WAL file is cut back to).
   * @param onBroken - told once when the store stops ({@link broken}): a failed WAL fsync, or in memory
   *   a rollback of answered writes.
   */
  constructor(
    private readonly db: Database,
    private readonly sync: DiskSync | null = null,
    private readonly checkpointBytes = CHECKPOINT_BYTES,
    private readonly onBroken: (err: Error) => void = () => undefined,
  ) {
    this.nextCheckpointBytes = checkpointBytes;
    this.control = {
      begin: db.prepare('BEGIN IMMEDIATE'),
      commit: db.prepare('COMMIT'),
      rollback: db.prepare('ROLLBACK'),
      savepoint: db.prepare('SAVEPOINT tx'),
      release: db.prepare('RELEASE tx'),
      rollbackTo: db.prepare('ROLLBACK TO tx'),
      many: db.prepare('SAVEPOINT many'),
      releaseMany: db.prepare('RELEASE many'),
      undoMany: db.prepare('ROLLBACK TO many'),
    };
  }

  /**
   * Runs the synchronous statements of `op` all or none, inside the batch's open SQLite transaction
   * (a savepoint of its own, with statements prepared once: better-sqlite3's `db.transaction()`
   * builds its wrapper functions on every call). Only inside {@link write}'s `op`.
   */
  allOrNone(op: () => void): void {
    this.control.many.run();
    try {
      op();
    } catch (err) {
      if (this.db.inTransaction) {
        this.control.undoMany.run();
        this.control.releaseMany.run();
      }
      throw err;
    }
    this.control.releaseMany.run();
  }

  /**
   * Runs the synchronous write `op` in the current batch, as part of transaction `scope` when given
   * ({@link LAZY}: a lazy write, see {@link lazyCommit}).
   * @returns its result once committed (inside a transaction, or lazy: at once).
   * @throws {Error} when `scope` is not the open transaction (it ended).
   */
  write<R>(op: () => R, scope: TxScope | null = null): Promise<R> {
    if (this.broken) return Promise.reject(this.broken);
    const lazy = scope === LAZY;
    const tx = lazy ? null : scope;
    if (tx !== null && tx !== this.current)
      return Promise.reject(new Error('store: a write through a transaction that has ended'));
    if (this.current !== null && tx === null) {
      return new Promise<R>((resolve, reject) =>
        this.held.push({ asked: ++this.asked, run: () => void this.write(op, scope).then(resolve, reject) }),
      );
    }
    this.begin();
    let result: R;
    try {
      result = mapped(op);
    } catch (err) {
      this.abortedBy(err);
      return Promise.reject(err);
    }
    if (lazy) this.lazyCommit();
    return tx !== null || lazy ? Promise.resolve(result) : this.committed().then(() => result);
  }

  /** The pending commit of lazy writes that no other commit took along yet (see {@link lazyCommit}). */
  private lazyTimer: NodeJS.Timeout | null = null;

  /**
   * After a lazy write (one made with the scope {@link LAZY}, through
   * {@link SqliteStore.lazyCollection}; answered once applied, before any commit): it asks for no
   * commit of its own. It commits with the next batch of other writes, or by itself
   * {@link LAZY_COMMIT_MS} later, with no fsync of its own (the next one of the WAL, or the
   * checkpoint's, covers it). Until then every read sees it; a crash may lose it, and a failed
   * commit undoes it (reported as every commit failure is, {@link failure}).
   */
  private lazyCommit(): void {
    if (this.scheduled || this.lazyTimer !== null) return;
    this.lazyTimer = setTimeout(() => {
      this.lazyTimer = null;
      if (!this.scheduled) this.flush();
    }, LAZY_COMMIT_MS);
    this.lazyTimer.unref();
  }

  /** BEGIN when no SQLite transaction is open. */
  private begin(): void {
    if (!this.db.inTransaction) this.control.begin.run();
  }

  /**
   * In memory: the open transaction that held answered writes was rolled back (a failed COMMIT, or
   * SQLite's own rollback after an error such as running out of memory). Those writes are gone
   * though they were answered: the store stops ({@link broken}), as a store on disk does after a
   * failed fsync.
   */
  private stopAfterLostWrites(err: unknown): void {
    this.answeredUncommitted = false;
    const why = err instanceof Error ? err.message : String(err);
    this.stop(
      `store stopped: the in-memory database rolled back writes already answered (${why}); ` +
        'writes are refused until the service restarts',
    );
  }

  /** Stops the store ({@link broken}) with `message`, once: later stops keep the first reason. */
  private stop(message: string): void {
    if (this.broken !== null) return;
    this.broken = errors.unavailable(message, 1);
    this.failed(this.broken);
    this.onBroken(this.broken);
  }

  /**
   * After a failed statement: when SQLite rolled the whole transaction back (I/O error, disk full), the batch failed
   * (and, in memory, answered writes were lost: {@link stopAfterLostWrites}).
   */
  private abortedBy(err: unknown): void {
    if (this.answeredUncommitted && !this.db.inTransaction) this.stopAfterLostWrites(err);
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
    if (this.scheduled) this.joined++;
    else {
      this.scheduled = true;
      this.joined = 0;
      this.waited = 0;
      setImmediate(this.commitTurn);
    }
    return this.batch.promise;
  }

  /** Writes that joined the scheduled batch since its commit was last considered ({@link commitTurn}). */
  private joined = 0;
  /** Event-loop turns the scheduled batch has waited so far. */
  private waited = 0;

  /**
   * The check-phase callback of a scheduled commit: while writes keep joining the batch (the loop
   * is busy with requests), the batch waits for the next turn, at most {@link BATCH_TURNS} turns,
   * so that more writes share one COMMIT (each table page a batch changes is journaled and
   * committed once however many writes change it); a batch nobody joined commits at once.
   */
  private readonly commitTurn = (): void => {
    if (this.joined > 0 && this.waited < BATCH_TURNS) {
      this.joined = 0;
      this.waited++;
      setImmediate(this.commitTurn);
      return;
    }
    this.scheduled = false;
    this.flush();
  };

  /**
   * COMMITs the batch now when an fsync lane is free, or else as soon as one ends: a commit made
   * then would wait for a lane anyway, and the writes asked for meanwhile then share one COMMIT
   * (each page they change written to the WAL once) and that lane's next fsync, which starts at once.
   */
  commitSoon(): void {
    if (this.syncLanes >= SYNC_LANES) this.commitWanted = true;
    else this.flush();
  }

  /** When the last COMMIT was made (`performance.now()` ms; in memory, see {@link MEMORY_COMMIT_MS}). */
  private committedAt = 0;
  /** In memory: whether writes already answered wait in the open transaction for a COMMIT. */
  private answeredUncommitted = false;
  /** In memory: the COMMIT of the answered writes when no batch comes to make it ({@link MEMORY_COMMIT_MS}). */
  private memoryCommitTimer: NodeJS.Timeout | null = null;

  /**
   * In memory: whether the COMMIT of a batch waits ({@link MEMORY_COMMIT_MS}); a timer then makes it
   * unless a later batch does.
   */
  private commitLater(): boolean {
    const sinceMs = performance.now() - this.committedAt;
    if (sinceMs >= MEMORY_COMMIT_MS) return false;
    this.answeredUncommitted = true;
    if (this.memoryCommitTimer === null) {
      this.memoryCommitTimer = setTimeout(() => {
        this.memoryCommitTimer = null;
        if (!this.scheduled) this.flush();
      }, MEMORY_COMMIT_MS - sinceMs);
      this.memoryCommitTimer.unref();
    }
    return true;
  }

  /**
   * COMMITs the batch now (unless a scope is open: then when it ends). In memory, within
   * {@link MEMORY_COMMIT_MS} of the last COMMIT the batch is answered and the transaction stays
   * open, unless `now`.
   */
  flush(now = false): void {
    if (this.current !== null) {
      this.flushWanted = true;
      return;
    }
    if (this.lazyTimer !== null) {
      clearTimeout(this.lazyTimer);
      this.lazyTimer = null;
    }
    const b = this.batch;
    this.batch = null;
    if (!this.db.inTransaction) {
      b?.resolve();
      return;
    }
    if (this.broken) {
      this.control.rollback.run();
      b?.reject(this.broken);
      return;
    }
    if (!this.sync && !now && this.commitLater()) {
      this.commits++;
      b?.resolve();
      return;
    }
    try {
      this.control.commit.run();
      this.commits++;
      this.sqliteCommits++;
      this.committedAt = performance.now();
      this.answeredUncommitted = false;
      if (this.memoryCommitTimer !== null) {
        clearTimeout(this.memoryCommitTimer);
        this.memoryCommitTimer = null;
      }
      if (this.sqliteCommits % 64 === 0) this.optimizeWhenGrown();
    } catch (err) {
      this.failed(err);
      if (this.db.inTransaction) {
        try {
          this.control.rollback.run();
        } catch {
          /* already rolled back by SQLite */
        }
      }
      if (this.answeredUncommitted) this.stopAfterLostWrites(err);
      b?.reject(this.broken ?? err);
      return;
    }
    if (!this.sync) {
      this.failure = null;
      b?.resolve();
      return;
    }
    if (b) this.syncWaiters.push(b);
    // (a loop counts itself out in the same turn as it finds no batch waiting: never one too many here)
    if (this.syncWaiters.length > 0 && this.syncLanes < SYNC_LANES) {
      this.syncLanes++;
      const loop = this.syncLoop();
      this.syncLoops.add(loop);
      void loop.then(() => this.syncLoops.delete(loop));
    }
    this.checkpoint();
  }

  /** Rows changed when the statistics were last refreshed. */
  private changesAtOptimize = 0;

  /** {@link optimize} once the rows changed since the last time reach the threshold (doubling). */
  private optimizeWhenGrown(): void {
    const changes = this.db.prepare('SELECT total_changes()').pluck().get() as number;
    if (changes - this.changesAtOptimize < Math.max(OPTIMIZE_CHANGES, this.changesAtOptimize)) return;
    this.changesAtOptimize = changes;
    this.optimize();
  }

  /**
   * Refreshes the query planner's statistics where a table grew or shrank (`PRAGMA optimize`:
   * ANALYZE sampling {@link ANALYSIS_LIMIT} rows of each index), outside any transaction. Without
   * them SQLite guesses that an equality on a few-valued field (an actor's `kind`) selects fewer
   * rows than one user's range of an index (`ownerUserId, createdAtMs, _id`), and reads every actor
   * of that kind.
   * The statistics of a table under {@link STATS_MIN_ROWS} rows (its largest index) are dropped: the planner then
   * assumes a large table, as for one never analyzed, instead of one of a few rows that a scan
   * serves (which stays so until the next refresh, however large it grows meanwhile). A failure is
   * ignored: the statistics only guide the planner.
   */
  optimize(): void {
    if (this.db.inTransaction) return;
    try {
      this.db.pragma('optimize = 0x10002');
      if (!this.db.prepare("SELECT 1 FROM sqlite_schema WHERE name = 'sqlite_stat1'").get()) return;
      // by table (its largest index's count): a partial index of few entries in a large table (the
      // live orders among a million armed strategies) keeps its statistics, or every refresh would
      // analyze that table again
      const dropped = this.db
        .prepare(
          'DELETE FROM sqlite_stat1 WHERE tbl IN ' +
            '(SELECT tbl FROM sqlite_stat1 GROUP BY tbl HAVING max(CAST(stat AS INTEGER)) < ?)',
        )
        .run(STATS_MIN_ROWS).changes;
      if (dropped > 0) this.db.exec('ANALYZE sqlite_schema'); // the planner reloads the statistics
    } catch {
      /* the plans stay as they were */
    }
  }

  private failed(err: unknown): void {
    this.failure = err instanceof Error ? err : new Error(String(err));
    this.failedAtMs = Date.now();
  }

  /**
   * fsyncs the WAL until no committed batch waits, answering the batches committed before each
   * fsync started once it is done (a batch committed meanwhile waits for the next one, in this loop
   * or in another lane's: up to {@link SYNC_LANES} fsyncs run at once).
   */
  private async syncLoop(): Promise<void> {
    while (this.syncWaiters.length > 0) {
      const round: (typeof this.rounds)[number] = { batches: this.syncWaiters, outcome: null };
      this.syncWaiters = [];
      this.rounds.push(round);
      const startedMs = performance.now();
      try {
        await this.sync!.wal();
        this.syncs.count++;
        this.syncs.ms += performance.now() - startedMs;
        round.outcome = true;
      } catch (err) {
        round.outcome = err instanceof Error ? err : new Error(String(err));
      }
      this.answerRounds();
      if (this.commitWanted) {
        this.commitWanted = false;
        this.flush(); // its batch joins syncWaiters: this lane's next fsync covers it
      }
    }
    this.syncLanes--;
  }

  /**
   * Answers the fsyncs that ended, in the order they started: a batch is answered only once every
   * batch committed before it is durable too (with two lanes, a later fsync can end first). A failed
   * fsync stops the store ({@link broken}): its batches, and those of every fsync after it, are refused.
   */
  private answerRounds(): void {
    while (this.rounds.length > 0 && this.rounds[0]!.outcome !== null) {
      const round = this.rounds.shift()!;
      const outcome = round.outcome!;
      if (outcome !== true)
        this.stop(
          `store stopped: a WAL fsync failed (${outcome.message}); writes are refused until the service ` +
            'restarts and SQLite recovers the database from what reached the disk (a write made just before ' +
            'may or may not be there: retry it with the same Idempotency-Key after the restart)',
        );
      if (this.broken !== null) for (const b of round.batches) b.reject(this.broken);
      else {
        this.failure = null;
        for (const b of round.batches) b.resolve();
      }
    }
  }

  /**
   * Each time the WAL has grown by the checkpoint size, copies it into the database file on the
   * checkpointer's connection in a worker thread ({@link DiskSync.checkpoint}: the WAL synced first,
   * the database file synced after, and only then may a write start the WAL over), while writes go
   * on. SQLite starts the WAL over only when a checkpoint copied all of it and no write began while
   * it ran; when one did, the WAL grows on (and an fsync of a growing file also commits its size),
   * and the next checkpoint copies what came since. Past {@link HELD_CHECKPOINT_FACTOR} times the
   * checkpoint size, every write is held (as a transaction scope holds them) until a checkpoint
   * that starts after the running one, if any, has copied the little that is left; the next write
   * then starts the WAL over, so the WAL stays bounded under any load.
   */
  private checkpoint(): void {
    const bytes = this.sync!.walBytes();
    if (bytes <= this.checkpointBytes) {
      // started over (a reset WAL file is cut back to the checkpoint size)
      if (this.checkpointing === null) this.nextCheckpointBytes = this.checkpointBytes;
      return;
    }
    const hold = bytes > HELD_CHECKPOINT_FACTOR * this.checkpointBytes;
    if (hold && this.current === null && !this.holding) {
      const scope: TxScope = { id: ++this.nextScope };
      this.current = scope;
      this.holding = true;
      const heldAt = performance.now();
      this.checkpointRun(
        (this.checkpointing ?? Promise.resolve())
          .then(() => this.checkpointNow(scope))
          .finally(() => {
            const ms = performance.now() - heldAt;
            this.heldMs.total += ms;
            this.heldMs.max = Math.max(this.heldMs.max, ms);
          }),
      );
      return;
    }
    if (this.checkpointing !== null || hold || bytes <= this.nextCheckpointBytes) return;
    this.nextCheckpointBytes = bytes + this.checkpointBytes;
    this.checkpointRun(this.checkpointNow(null));
  }

  /** Records `run` as the checkpoint running (until it ends, unless a later one was chained to it). */
  private checkpointRun(run: Promise<void>): void {
    this.checkpointing = run;
    void run.then(() => {
      if (this.checkpointing === run) this.checkpointing = null;
    });
  }

  /** One checkpoint on the worker; with `scope` (the writes held meanwhile), ended with it. */
  private async checkpointNow(scope: TxScope | null): Promise<void> {
    try {
      await this.sync!.checkpoint();
      this.checkpoints++;
      if (scope) this.heldCheckpoints++;
    } catch (err) {
      this.failed(err);
    } finally {
      if (scope) {
        this.holding = false;
        if (this.current === scope) this.endScope();
      }
    }
  }

  /**
   * Runs `fn` so that every write made with its scope commits together, or none does.
   */
  async transaction<R>(fn: (scope: TxScope) => Promise<R>): Promise<R> {
    if (this.broken) throw this.broken;
    const scope: TxScope = { id: ++this.nextScope };
    if (this.current !== null)
      await new Promise<void>((start) => this.scopes.push({ asked: ++this.asked, scope, start }));
    else this.current = scope;
    let committed: Promise<void>;
    try {
      // the first writes of a batch need no savepoint: undoing them is rolling the batch back
      const first = !this.db.inTransaction;
      if (first) this.control.begin.run();
      else this.control.savepoint.run();
      let result: R;
      try {
        result = await fn(scope);
      } catch (err) {
        if (!this.db.inTransaction) this.abortedBy(err);
        else if (first) this.control.rollback.run();
        else {
          this.control.rollbackTo.run();
          this.control.release.run();
        }
        throw err;
      }
      if (!this.db.inTransaction) {
        const err = new Error('store: the transaction was rolled back by SQLite (I/O error)');
        this.abortedBy(err);
        throw err;
      }
      if (!first) this.control.release.run();
      committed = this.committed();
      this.endScope();
      await committed;
      return result;
    } finally {
      if (this.current === scope) this.endScope();
    }
  }

  /**
   * Ends the open scope: the writes held meanwhile that were asked for before the next waiting scope
   * run, a wanted commit happens, the next scope starts (the writes asked for after it wait for its
   * end). Writes and transactions are thus served in the order they were asked for: a write asked
   * for after a transaction never commits before it (a capture batch's journal entry and its prints).
   */
  private endScope(): void {
    this.current = null;
    const nextAsked = this.scopes[0]?.asked ?? Infinity;
    let due = 0;
    while (due < this.held.length && this.held[due]!.asked < nextAsked) due++;
    for (const h of this.held.splice(0, due)) h.run();
    if (this.flushWanted) {
      this.flushWanted = false;
      this.flush();
      // writes still held behind the next transaction may be the ones that asked for it: commit as it ends
      if (this.held.length > 0) this.flushWanted = true;
    }
    // the flush may have started a checkpoint that holds the writes (it took `current`): the next
    // transaction starts when that ends
    if (this.current !== null) return;
    const next = this.scopes.shift();
    if (next) {
      this.current = next.scope;
      next.start();
    }
  }

  /** Waits until no scope is open, commits what is pending and waits for its fsync (and a running checkpoint). */
  async drain(): Promise<void> {
    while (this.current !== null || this.scopes.length > 0) await new Promise<void>((resolve) => setImmediate(resolve));
    this.flush(true);
    while (this.syncLanes > 0 || this.checkpointing) await (this.syncLoops.values().next().value ?? this.checkpointing);
  }
}

/** Field columns a table may have (see {@link Table.row}). */
const MAX_COLUMNS = 30;

/**
 * A collection's table: `(id TEXT PRIMARY KEY, doc TEXT NOT NULL, …)`, each document as JSON, and a
 * column per indexed field and per text field (see {@link Columns}) holding the field's value,
 * written with the document. The `_id` is held by the `id` column only. A top-level field whose
 * value is a string or a number is held by its column only (left out of the JSON: stored once, a
 * string not escaped) and put back into the document when it is read; other values (a boolean,
 * null, an object, a Date) stay in the JSON too, which is what a read takes when both hold the field
 * (`updateOne` sets both). Rows written by earlier layouts (the `_id` or such a field in the JSON
 * too) read the same.
 */
class Table {
  readonly quoted: string;
  /** Indexed field → its column. */
  readonly columns = new Map<string, string>();
  /** The fields of {@link columns}, in their order. */
  private fields: string[] = [];
  /** Which of {@link fields} are top-level (their column may hold them alone). */
  private top: boolean[] = [];
  /** The top-level fields, in the order of their columns after `doc` in {@link selectList}. */
  private topFields: string[] = [];
  /** Each of {@link fields}' position, by name (a bit of the fields a row's column holds alone). */
  private position = new Map<string, number>();
  /** INSERT of a row ({@link row}'s values). */
  insertSql = '';
  /** INSERT of a row, replacing the row of the same id. */
  replaceSql = '';
  /** INSERT of a row unless its id is taken (then nothing). */
  insertMissingSql = '';
  /** UPDATEs of a row's document and some of its columns, by {@link rewriteSqlOf}'s mask. */
  private readonly rewrites = new Map<number, string>();
  /** The mask of every column of {@link fields} (see {@link rewriteSqlOf}). */
  allColumns = 0;
  /** What a read selects: `id`, `doc` and the columns of top-level fields ({@link fromRow} reads it). */
  selectList = 'id, doc';
  /** The SELECT of one document by id. */
  selectByIdSql = '';
  /** Statements of filters of a {@link plainShape}, by kind of statement and shape (see {@link statementFor}). */
  private readonly shaped = new Map<string, Statement>();

  constructor(readonly name: string) {
    this.quoted = `"${name}"`;
    this.built();
  }

  /**
   * Adds the column of `field` (already in the table).
   * @throws {Error} past {@link MAX_COLUMNS} fields (a row's fields held alone are bits of a number).
   */
  add(field: string): void {
    if (this.columns.size >= MAX_COLUMNS) throw new Error(`store: table ${this.name} has too many field columns`);
    this.columns.set(field, columnName(field));
    this.built();
  }

  private built(): void {
    const cols = [...this.columns.values()];
    this.fields = [...this.columns.keys()];
    this.top = this.fields.map((f) => !f.includes('.'));
    this.topFields = this.fields.filter((f) => !f.includes('.'));
    this.position = new Map(this.fields.map((f, i) => [f, i]));
    const names = ['id', 'doc', ...cols];
    this.insertSql = `INSERT INTO ${this.quoted} (${names.join(', ')}) VALUES (${names.map(() => '?').join(', ')})`;
    const sets = ['doc', ...cols].map((c) => `${c} = excluded.${c}`).join(', ');
    this.replaceSql = `${this.insertSql} ON CONFLICT (id) DO UPDATE SET ${sets}`;
    this.insertMissingSql = `${this.insertSql} ON CONFLICT (id) DO NOTHING`;
    this.rewrites.clear();
    this.allColumns = 2 ** cols.length - 1;
    this.selectList = ['id', 'doc', ...this.topFields.map((f) => this.columns.get(f)!)].join(', ');
    this.selectByIdSql = `SELECT ${this.selectList} FROM ${this.quoted} WHERE id = ?`;
    this.shaped.clear(); // the SQL of a field changes with its column
  }

  /**
   * The UPDATE of a row's document and of the columns of `mask` (bit `i`: the column of field `i`
   * of {@link fields}), `WHERE id = ?` and a condition to append; its parameters are the JSON text,
   * the values of those columns in their order, then the id ({@link rewriteValues}).
   */
  rewriteSqlOf(mask: number): string {
    let sql = this.rewrites.get(mask);
    if (sql === undefined) {
      const sets = ['doc = ?'];
      this.fields.forEach((f, i) => {
        if (mask & (1 << i)) sets.push(`${this.columns.get(f)!} = ?`);
      });
      sql = `UPDATE ${this.quoted} SET ${sets.join(', ')} WHERE id = ?`;
      this.rewrites.set(mask, sql);
    }
    return sql;
  }

  /**
   * The mask ({@link rewriteSqlOf}) of the columns whose value in `row` (a {@link row}) differs from
   * the one `previous` gives them: the columns a rewrite of `previous` into `row` must set.
   */
  changedColumns(row: SqlValue[], previous: Doc): number {
    let mask = 0;
    const fields = this.fields;
    for (let i = 0; i < fields.length; i++) {
      const f = fields[i]!;
      const before = this.top[i]
        ? param((previous as unknown as Record<string, unknown>)[f])
        : columnValue(previous, f);
      if (before !== row[i + 2]) mask |= 1 << i;
    }
    return mask;
  }

  /** The parameters of {@link rewriteSqlOf}`(mask)` for `row` (a {@link row}), before the condition's. */
  rewriteValues(row: SqlValue[], mask: number): SqlValue[] {
    const values: SqlValue[] = [row[1]!];
    for (let i = 2; i < row.length; i++) if (mask & (1 << (i - 2))) values.push(row[i]!);
    values.push(row[0]!);
    return values;
  }

  /**
   * The statement `sqlOf(condition)` for `filter`, and its parameters: for a filter of a
   * {@link plainShape}, kept per `kind` and shape, so that neither the condition nor the SQL text
   * is built again (nor hashed to find the prepared statement); otherwise built as usual.
   */
  statementFor(
    kind: string,
    filter: Filter,
    prepare: (sql: string) => Statement,
    sqlOf: (where: string) => string,
  ): { st: Statement; params: SqlValue[] } {
    const shape = plainShape(filter);
    if (shape === null) {
      const w = whereOf(filter, this.columns);
      return { st: prepare(sqlOf(w.sql)), params: w.params };
    }
    const key = `${kind}\u0001${shape}`;
    let st = this.shaped.get(key);
    if (st === undefined) {
      st = prepare(sqlOf(whereOf(filter, this.columns).sql));
      if (this.shaped.size < SHAPED_STATEMENTS) this.shaped.set(key, st);
    }
    return { st, params: plainParams(filter) };
  }

  /**
   * The values of a row of {@link insertSql}: id, JSON text (less the `_id` and the fields held by
   * columns alone), each column's.
   */
  row(doc: Doc): SqlValue[] {
    const out: SqlValue[] = [doc._id, null];
    /** Bit `i`: field `i` is held by its column alone. */
    let alone = 0;
    const fields = this.fields;
    for (let i = 0; i < fields.length; i++) {
      const f = fields[i]!;
      if (!this.top[i]) {
        out.push(columnValue(doc, f));
        continue;
      }
      const v = (doc as unknown as Record<string, unknown>)[f];
      if (typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v))) alone |= 1 << i;
      out.push(param(v));
    }
    if (alone === 0) out[1] = withoutId(encode(doc), doc._id);
    else {
      const rest: Record<string, unknown> = {};
      const position = this.position;
      /** Whether a value of `rest` is an object (that may hold a Date: then {@link encode} looks). */
      let objects = false;
      for (const k in doc) {
        if (k === '_id') continue;
        const i = position.get(k);
        if (i === undefined || (alone & (1 << i)) === 0) {
          const v = (doc as unknown as Record<string, unknown>)[k];
          if (v !== null && typeof v === 'object') objects = true;
          rest[k] = v;
        }
      }
      out[1] = objects ? encode(rest) : JSON.stringify(rest);
    }
    return out;
  }

  /** A document from a row of {@link selectList} (read with `.raw()`). */
  fromRow<T>(row: unknown[]): T {
    const doc = decode<Record<string, unknown>>(withId(row[1] as string, row[0] as string));
    const top = this.topFields;
    for (let i = 0; i < top.length; i++) {
      const v = row[i + 2];
      if (v === null || top[i]! in doc) continue;
      // a Date's text (an upsert's document is stored from its JSON): read back as a Date, as decode does
      doc[top[i]!] = typeof v === 'string' && v.startsWith(DATE_MARK) ? new Date(v.slice(DATE_MARK.length)) : v;
    }
    return doc as T;
  }
}

/** The start of the JSON text of a document whose first field is `_id` `id`. */
function idHead(id: string): string {
  return `{"_id":${JSON.stringify(id)}`;
}

/** JSON text of a document without its `_id` (which the row's `id` holds) when it is the first field, as it is made. */
function withoutId(text: string, id: string): string {
  const head = idHead(id);
  if (!text.startsWith(head)) return text;
  const next = text.charCodeAt(head.length);
  return next === 44 /* , */ ? `{${text.slice(head.length + 1)}` : next === 125 /* } */ ? '{}' : text;
}

/** JSON text of a document with its `_id` (`id`) first, unless it holds one (a row of an earlier layout). */
function withId(text: string, id: string): string {
  if (text.startsWith('{"_id":')) return text;
  return text.length === 2 ? `${idHead(id)}}` : `${idHead(id)},${text.slice(1)}`;
}

/** Whether setting field `key` (`$set`) changes field `field` (the same, one inside the other). */
function touches(key: string, field: string): boolean {
  return key === field || field.startsWith(`${key}.`) || key.startsWith(`${field}.`);
}

/**
 * The ids of a `find({_id: {$in: ids}})` without options, distinct and sorted, when they are at
 * most {@link FEW_IDS} strings; null for any other query.
 */
function fewIds(filter: Filter, options: FindOptions): string[] | null {
  if (options.sort || options.limit || options.skip) return null;
  const cond = filter._id;
  if (cond === null || typeof cond !== 'object' || Array.isArray(cond)) return null;
  const list = (cond as Record<string, unknown>).$in;
  if (!Array.isArray(list) || list.length > FEW_IDS) return null;
  for (const k in filter) if (k !== '_id') return null;
  for (const k in cond) if (k !== '$in') return null;
  for (const id of list) if (typeof id !== 'string') return null;
  return [...new Set(list as string[])].sort();
}

/** One collection: a {@link Table}. */
class SqliteCollection<T extends Doc> implements Collection<T> {
  private readonly table: string;

  constructor(
    private readonly store: SqliteStore,
    readonly t: Table,
    /** The transaction this handle writes in (null: the store's own handle). */
    private readonly scope: TxScope | null = null,
  ) {
    this.table = t.quoted;
  }

  /** This collection with its writes in transaction `scope`. */
  within(scope: TxScope): SqliteCollection<T> {
    return new SqliteCollection<T>(this.store, this.t, scope);
  }

  private st(sql: string): Statement {
    return this.store.statement(sql);
  }

  async insertOne(doc: T): Promise<void> {
    const row = this.t.row(doc);
    await this.store.writer.write(() => this.st(this.t.insertSql).run(row), this.scope);
  }

  /** All or none (a savepoint inside the batch). */
  async insertMany(docs: T[]): Promise<void> {
    const rows = docs.map((d) => this.t.row(d));
    await this.store.writer.write(() => {
      const insert = this.st(this.t.insertSql);
      // one row is all or none by itself: no savepoint
      if (rows.length === 1) return void insert.run(rows[0]);
      this.store.writer.allOrNone(() => {
        for (const row of rows) insert.run(row);
      });
    }, this.scope);
  }

  /** All or none, as {@link insertMany}; an `_id` taken (stored or earlier in `docs`) is skipped. */
  async insertMissing(docs: T[]): Promise<boolean[]> {
    const rows = docs.map((d) => this.t.row(d));
    const insert = this.st(this.t.insertMissingSql);
    const all = () => rows.map((row) => insert.run(row).changes === 1);
    return this.store.writer.write(() => {
      // one row is all or none by itself: no savepoint
      if (rows.length === 1) return all();
      let inserted: boolean[] = [];
      this.store.writer.allOrNone(() => void (inserted = all()));
      return inserted;
    }, this.scope);
  }

  async findOne(filter: Filter): Promise<T | null> {
    const id = filter._id;
    let row: unknown[] | undefined;
    if (typeof id === 'string' && Object.keys(filter).length === 1) row = this.byId(id);
    else {
      const q = this.t.statementFor(
        'findOne',
        filter,
        (sql) => this.st(sql),
        (where) => `SELECT ${this.t.selectList} FROM ${this.table} WHERE ${where} LIMIT 1`,
      );
      row = q.st.raw().get(...q.params) as typeof row;
    }
    return row ? this.t.fromRow<T>(row) : null;
  }

  /** The row of the document with id `id` (as {@link Table.fromRow} reads it), or undefined. */
  private byId(id: string): unknown[] | undefined {
    return this.st(this.t.selectByIdSql).raw().get(id) as unknown[] | undefined;
  }

  /** The SELECT of {@link find} with its parameters (the query-plan test explains it). */
  selectOf(filter: Filter, options: FindOptions = {}): Where {
    const w = whereOf(filter, this.t.columns);
    let sql = `SELECT ${this.t.selectList} FROM ${this.table} WHERE ${w.sql}${orderBy(options.sort, this.t.columns)}`;
    const params = [...w.params];
    if (options.limit || options.skip) {
      sql += ' LIMIT ? OFFSET ?';
      params.push(options.limit || -1, options.skip ?? 0);
    }
    return { sql, params };
  }

  async find(filter: Filter, options: FindOptions = {}): Promise<T[]> {
    const few = fewIds(filter, options);
    if (few !== null) {
      // a few ids (an API read of both candidates of a request's ids): each by its key, in id order
      const out: T[] = [];
      for (const id of few) {
        const row = this.byId(id);
        if (row) out.push(this.t.fromRow<T>(row));
      }
      return out;
    }
    const q = this.selectOf(filter, options);
    const rows = this.st(q.sql)
      .raw()
      .all(...q.params) as unknown[][];
    return rows.map((row) => this.t.fromRow<T>(row));
  }

  async count(filter: Filter): Promise<number> {
    const q = this.t.statementFor(
      'count',
      filter,
      (sql) => this.st(sql),
      (where) => `SELECT count(*) FROM ${this.table} WHERE ${where}`,
    );
    return (q.st.pluck().get(...q.params) as number) ?? 0;
  }

  async updateOne(filter: Filter, set: Record<string, unknown>, options: { upsert?: boolean } = {}): Promise<number> {
    const w = whereOf(filter, this.t.columns);
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
    // the columns of the fields the update changes: their value when the update gives it (the
    // field or an object holding it), else read from the new document
    const columnSets: string[] = [];
    const columnValues: SqlValue[] = [];
    for (const [field, column] of this.t.columns) {
      const keys = Object.keys(set).filter((k) => k !== '_id' && touches(k, field));
      if (keys.length === 0) continue;
      const k = keys[0]!;
      if (keys.length === 1 && !k.startsWith(`${field}.`)) {
        columnSets.push(`${column} = ?`);
        columnValues.push(k === field ? param(set[k]) : columnValue(set[k], field.slice(k.length + 1)));
      } else {
        columnSets.push(`${column} = json_extract(${setSql}, '${jsonPath(field)}')`);
        columnValues.push(...values);
      }
    }
    const sets = [`doc = ${setSql}`, ...columnSets].join(', ');
    const byId = typeof filter._id === 'string';
    // a lookup by _id: the row is the one with that id when the rest matches
    const sql = byId
      ? `UPDATE ${this.table} SET ${sets} WHERE ${w.sql}`
      : `UPDATE ${this.table} SET ${sets} WHERE rowid = (SELECT ` + `rowid FROM ${this.table} WHERE ${w.sql} LIMIT 1)`;
    const upsert = options.upsert ? encode(expandDotted({ ...equalityFields(filter), ...set })) : null;
    return this.store.writer.write(() => {
      const n = this.st(sql).run(...values, ...columnValues, ...w.params).changes;
      if (n > 0 || upsert === null) return n;
      const doc = JSON.parse(upsert) as { _id?: unknown };
      if (typeof doc._id !== 'string') throw new Error('store: an upsert needs an _id in its filter or update');
      this.st(this.t.insertSql).run(this.t.row(doc as T));
      return 0;
    }, this.scope);
  }

  async replaceOne(doc: T): Promise<void> {
    const row = this.t.row(doc);
    await this.store.writer.write(() => this.st(this.t.replaceSql).run(row), this.scope);
  }

  /**
   * Rewrites the document and, given `previous`, only the columns whose value changed: an index
   * entry of the row is then touched only when one of its fields changed (SQLite rewrites the
   * entries of every index on a column an UPDATE sets, whatever its value).
   */
  async replaceIf(filter: Filter, doc: T, previous?: T): Promise<number> {
    const t = this.t;
    const row = t.row(doc);
    const mask = previous === undefined ? t.allColumns : t.changedColumns(row, previous);
    const q = t.statementFor(
      `replaceIf\u0002${mask}`,
      filter,
      (sql) => this.st(sql),
      (where) => `${t.rewriteSqlOf(mask)} AND ${where}`,
    );
    const values = t.rewriteValues(row, mask);
    for (const p of q.params) values.push(p);
    return this.store.writer.write(() => q.st.run(values).changes, this.scope);
  }

  async deleteMany(filter: Filter): Promise<number> {
    const q = this.t.statementFor(
      'deleteMany',
      filter,
      (sql) => this.st(sql),
      (where) => `DELETE FROM ${this.table} WHERE ${where}`,
    );
    return this.store.writer.write(() => q.st.run(...q.params).changes, this.scope);
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

/** {@link DiskSync} over an open handle of the WAL file and a {@link Checkpointer}. */
interface SyncFiles extends DiskSync {
  /** Ends the checkpointer's connection (before the writing connection closes: it must be the last). */
  stopCheckpoints(): Promise<void>;
  /** Closes the WAL file's handle (after the writing connection closed). */
  close(): Promise<void>;
}

/** Offset of `mxFrame` (u32, native byte order) in the wal-index header (https://sqlite.org/walformat.html). */
const WAL_INDEX_MX_FRAME = 16;
/** The WAL file's header and each frame's, bytes (https://sqlite.org/fileformat.html, "WAL File Format"). */
const WAL_HEADER_BYTES = 32;
const WAL_FRAME_HEADER_BYTES = 24;

/**
 * Opens the WAL file for its fsyncs and the checkpointer of `file` (and syncs the folder that holds
 * them). The WAL's bytes in use are read from the wal-index (`-shm`, shared memory every connection
 * of the database keeps current): the last valid frame, `mxFrame`, of its header, which a commit
 * sets and a WAL started over resets to 0.
 * @param pageSize - the database's page size (bytes): a WAL frame holds one page.
 */
async function openSyncFiles(dir: string, file: string, pageSize: number): Promise<SyncFiles> {
  const wal = await fs.open(`${file}-wal`, 'r');
  const shm = await fs.open(`${file}-shm`, 'r');
  const header = Buffer.alloc(4);
  const littleEndian = os.endianness() === 'LE';
  const folder = await fs.open(dir, 'r');
  try {
    await folder.sync();
  } finally {
    await folder.close();
  }
  const checkpointer = new Checkpointer(file);
  return {
    wal: () => wal.datasync(),
    checkpoint: () => checkpointer.checkpoint(),
    walBytes: () => {
      readSync(shm.fd, header, 0, 4, WAL_INDEX_MX_FRAME);
      const frames = littleEndian ? header.readUInt32LE(0) : header.readUInt32BE(0);
      return frames === 0 ? 0 : WAL_HEADER_BYTES + frames * (pageSize + WAL_FRAME_HEADER_BYTES);
    },
    stopCheckpoints: () => checkpointer.close(),
    close: async () => {
      await wal.close();
      await shm.close();
    },
  };
}

/**
 * The SQL of an index on the columns of its fields ({@link fieldSql}; partial for a sparse one:
 * documents with none of the fields are left out), and its name.
 */
export function indexSql(table: string, ix: IndexSpec, columns: Columns): { sql: string; name: string } {
  const exprs = ix.fields.map((f) => fieldSql(f, columns));
  const name = `ic_${indexSuffix(table, ix)}`;
  const terms = ix.sparse ? [exprs.map((e) => `${e} IS NOT NULL`).join(' OR ')] : [];
  for (const [field, value] of Object.entries(ix.where ?? {})) {
    if (!ix.fields.includes(field)) throw new Error(`store: index where ${field}: not one of the index's fields`);
    terms.push(`${fieldSql(field, columns)} = ${sqlLiteral(value)}`);
  }
  const where = terms.length ? ` WHERE ${terms.map((t) => (terms.length > 1 ? `(${t})` : t)).join(' AND ')}` : '';
  const sql =
    `CREATE ${ix.unique ? 'UNIQUE ' : ''}INDEX IF NOT EXISTS "${name}" ` +
    `ON "${table}" (${exprs.join(', ')})${where}`;
  return { sql, name };
}

/** What names an index of `table` (its fields and kind), after the prefix. */
function indexSuffix(table: string, ix: IndexSpec): string {
  const date = ix.expireAfterSeconds !== undefined;
  const where = Object.entries(ix.where ?? {}).map(([f, v]) => `_w_${f}_${String(v)}`);
  return (
    `${table}_${ix.fields.join('_')}${where.join('')}`.replace(/[^A-Za-z0-9_]/g, '_') +
    `${ix.unique ? '_u' : ''}${ix.sparse ? '_s' : ''}${date ? '_ttl' : ''}`
  );
}

/** A value of a partial index's `where` as an SQL literal, as {@link param} binds it (booleans as 1 / 0). */
function sqlLiteral(v: string | number | boolean): string {
  if (typeof v === 'boolean') return v ? '1' : '0';
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new Error(`store: index where ${v}: not a finite number`);
    return String(v);
  }
  return `'${v.replace(/'/g, "''")}'`;
}

/**
 * The store on SQLite (better-sqlite3): one file `store.sqlite` in `DATA_DIR` (WAL mode with
 * `synchronous=FULL`'s guarantee, its syncs made off the event loop: a write is acknowledged once
 * its commit is synced to the WAL file), or in memory. One table per collection; each
 * {@link IndexSpec} is a real index on the document's fields (unique; partial for sparse; a TTL
 * index is swept by a periodic delete); the port's filter subset is translated to SQL
 * ({@link whereOf}). Concurrent writes share one commit (see {@link Writer}). A store belongs to
 * one process (the `DATA_DIR` lock).
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
    this.writer = new Writer(db, files, checkpointBytes, (err) => this.log?.error({ err }, err.message));
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
    if (!dir) {
      const memory = new Sqlite(':memory:');
      // before any table exists (it is fixed from then on): see MEMORY_PAGE_SIZE
      memory.pragma(`page_size = ${MEMORY_PAGE_SIZE}`);
      memory.pragma(`analysis_limit = ${ANALYSIS_LIMIT}`);
      return new SqliteStore(memory, null, null, log ?? null);
    }
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
        // back to walSizeLimit only: frames are then written over existing blocks (an fsync
        // without a metadata commit), and the file grows past its size only when a checkpoint is due
        db.pragma('synchronous = OFF');
        db.pragma('wal_autocheckpoint = 0');
        // a savepoint's statement journal (a transaction inside a batch) and temporary B-trees in
        // memory: in files they were written out, megabytes per capture replay, for nothing a crash needs
        db.pragma('temp_store = MEMORY');
        db.pragma(`analysis_limit = ${ANALYSIS_LIMIT}`);
        db.pragma(`journal_size_limit = ${walSizeLimit(checkpointBytes ?? CHECKPOINT_BYTES)}`);
        db.exec('BEGIN IMMEDIATE; COMMIT'); // the WAL file exists from here on
        db.exec('CREATE TABLE IF NOT EXISTS "_imports" (id TEXT PRIMARY KEY, atMs INTEGER NOT NULL)');
        if (
          !oldStoreFiles &&
          oldFiles.length > 0 &&
          !db.prepare('SELECT 1 FROM "_imports" WHERE id = ?').get(NEDB_IMPORT)
        )
          throw new OldStoreDataError(dir);
        const files = await openSyncFiles(dir, file, db.pragma('page_size', { simple: true }) as number);
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

  async collection<T extends Doc>(
    name: string,
    indexes: IndexSpec[] = [],
    layout: CollectionLayout = {},
  ): Promise<Collection<T>> {
    if (!/^[A-Za-z][A-Za-z0-9_]*$/.test(name))
      throw new Error(`store: collection name ${JSON.stringify(name)} is not an identifier`);
    const text = [...(layout.textFields ?? []), ...(layout.columnFields ?? [])];
    for (const f of text)
      if (f.includes('.') || f === '_id') throw new Error(`store: ${JSON.stringify(f)} cannot be a column field`);
    let c = this.collections.get(name);
    const fresh = !c;
    if (!c) {
      c = new SqliteCollection<Doc>(this, new Table(name));
      this.collections.set(name, c);
    }
    const table = c.t;
    const specs = indexes.filter((ix) => !ix.adapters || ix.adapters.includes('sqlite'));
    if (fresh || specs.length > 0 || text.length > 0) {
      await this.writer.write(() => this.prepareTable(table, specs, text, fresh));
      // statistics of a table opened with data and none (a database before them, or a crash)
      this.writer.optimize();
    }
    for (const ix of specs)
      if (ix.expireAfterSeconds !== undefined) this.sweepTtl(table, ix.fields[0]!, ix.expireAfterSeconds);
    return c as unknown as Collection<T>;
  }

  /**
   * Creates `table` when missing, with a column per field of `specs` and per text field (added to an
   * existing table when missing, filled from its documents: a top-level string or number moves out
   * of the document's JSON into its column, as {@link Table.row} writes it) and the indexes of
   * `specs`. Indexes on the documents' JSON made by earlier versions are dropped. On the first open
   * of the table in this process (`first`), the indexes no longer declared are dropped, and the
   * columns of fields no longer indexed nor text fields with theirs: an index or a column is kept
   * only while it is declared (the first open of a collection declares all of them).
   */
  private prepareTable(table: Table, specs: IndexSpec[], textFields: string[], first: boolean): void {
    const db = this.db;
    db.exec(`CREATE TABLE IF NOT EXISTS ${table.quoted} (id TEXT PRIMARY KEY, doc TEXT NOT NULL)`);
    const existing = new Set(
      (db.prepare(`PRAGMA table_info(${table.quoted})`).all() as Array<{ name: string }>).map((r) => r.name),
    );
    const wanted = new Set([...specs.flatMap((ix) => ix.fields), ...textFields].filter((f) => f !== '_id'));
    if (first) {
      const declared = new Set(specs.map((ix) => `ic_${indexSuffix(table.name, ix)}`));
      for (const ix of db
        .prepare(
          "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND " +
            "(name LIKE 'ix\\_%' ESCAPE '\\' OR name LIKE 'ic\\_%' ESCAPE '\\')",
        )
        .pluck()
        .all(table.name) as string[])
        if (!declared.has(ix)) db.exec(`DROP INDEX "${ix}"`);
      for (const col of existing) {
        if (!col.startsWith('ix:') || wanted.has(col.slice(3))) continue;
        const quoted = `"${col}"`;
        const field = col.slice(3);
        // a value its column held alone goes back into the document first
        if (!field.includes('.'))
          db.exec(
            `UPDATE ${table.quoted} SET doc = json_set(doc, '${jsonPath(field)}', ${quoted}) ` +
              `WHERE ${quoted} IS NOT NULL AND json_type(doc, '${jsonPath(field)}') IS NULL`,
          );
        for (const ix of db
          .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql LIKE ?")
          .pluck()
          .all(table.name, `%${quoted}%`) as string[])
          db.exec(`DROP INDEX "${ix}"`);
        db.exec(`ALTER TABLE ${table.quoted} DROP COLUMN ${quoted}`);
      }
    }
    for (const field of wanted) {
      if (table.columns.has(field)) continue;
      const column = columnName(field);
      if (!existing.has(column.slice(1, -1))) {
        db.exec(`ALTER TABLE ${table.quoted} ADD COLUMN ${column}`);
        const p = `'${jsonPath(field)}'`;
        db.exec(
          field.includes('.')
            ? `UPDATE ${table.quoted} SET ${column} = json_extract(doc, ${p})`
            : `UPDATE ${table.quoted} SET ${column} = json_extract(doc, ${p}), doc = CASE WHEN ` +
                `json_type(doc, ${p}) IN ('text', 'integer', 'real') THEN json_remove(doc, ${p}) ELSE doc END`,
        );
      }
      table.add(field);
    }
    for (const ix of specs) {
      db.exec(`DROP INDEX IF EXISTS "ix_${indexSuffix(table.name, ix)}"`);
      db.exec(indexSql(table.name, ix, table.columns).sql);
    }
  }

  /** Deletes the documents of `table` whose Date `field` is more than `seconds` ago, every minute. */
  private sweepTtl(table: Table, field: string, seconds: number): void {
    const sweep = () => {
      if (this.closed) return;
      const w = whereOf({ [field]: { $lte: new Date(Date.now() - seconds * 1000) } }, table.columns);
      this.writer
        .write(() => this.statement(`DELETE FROM ${table.quoted} WHERE ${w.sql}`).run(...w.params))
        .catch((err: unknown) => this.log?.error({ err, table: table.name }, 'store: TTL sweep failed'));
    };
    const timer = setInterval(sweep, TTL_SWEEP_MS);
    timer.unref();
    this.sweepers.push(timer);
  }

  /**
   * Runs `fn`; every write made through `tx` commits in one SQLite transaction, or none does when
   * it throws. Writes made otherwise while it runs, or while it waits for an earlier transaction,
   * wait until it ends, so `fn` must not wait for such a write (nor for long: it holds every other
   * write).
   */
  transaction<R>(fn: (tx: UnitOfWork) => Promise<R>): Promise<R> {
    return this.writer.transaction((scope) => {
      const tx: UnitOfWork = { collection: <T extends Doc>(name: string) => this.within<T>(name, scope) };
      this.units.set(tx, scope);
      return fn(tx);
    });
  }

  /** {@inheritDoc Store.lazyCollection} */
  lazyCollection<T extends Doc>(name: string): Collection<T> {
    return this.within<T>(name, LAZY);
  }

  /**
   * Collection `name` with its writes made in `scope` (a transaction's, or {@link LAZY}).
   * @throws {Error} when the collection was never opened.
   */
  private within<T extends Doc>(name: string, scope: TxScope): Collection<T> {
    const c = this.collections.get(name);
    if (!c) throw new Error(`store: collection ${name} was not opened`);
    return c.within(scope) as unknown as Collection<T>;
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

  /** {@inheritDoc Store.commitNow} */
  commitNow(): void {
    this.writer.commitSoon();
  }

  /**
   * The last commit or fsync failure, for 2 s after it happened or until a later commit succeeds,
   * or null. It lapses by itself so that the API's refusal of writes meanwhile (503) cannot keep
   * the next commit, which would clear it, from ever being tried. Once the store stopped until a
   * restart (a failed WAL fsync; in memory, a rollback of answered writes) it stays.
   */
  writeFailure(): string | null {
    if (this.writer.broken) return `sqlite: ${this.writer.broken.message}`;
    const f = this.writer.failure;
    return f && Date.now() - this.writer.failedAtMs < FAILURE_SHOWN_MS ? `sqlite: ${f.message}` : null;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    for (const t of this.sweepers.splice(0)) clearInterval(t);
    await this.writer.drain();
    this.closed = true;
    // SQLite checkpoints and removes the WAL as the last connection closes: with its own syncs
    await this.files?.stopCheckpoints();
    if (this.files) this.db.pragma('synchronous = FULL');
    this.db.close();
    await this.files?.close();
    const lock = this.lock;
    this.lock = null;
    await lock?.release();
  }
}
