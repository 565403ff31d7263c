/**
 * Storage port. Two adapters implement it: MongoDB (engine/store/mongo.ts, when `MONGODB_URI` is
 * set) and SQLite (engine/store/sqlite.ts, the default: a file in `DATA_DIR`, or memory). They speak the same small
 * subset of the MongoDB query language, so code above the port never knows which one it runs on. The contract suite
 * `test/engine/store/contract.test.ts` runs against each.
 */

/** A stored document: every collection keys documents by a string `_id`. */
export interface Doc {
  _id: string;
}

/**
 * Query filter: MongoDB syntax restricted to what both adapters evaluate identically — field
 * equality (dotted paths allowed) and the operators `$in`, `$nin`, `$ne`, `$lt`, `$lte`, `$gt`,
 * `$gte`, `$exists`, plus top-level `$or`.
 */
export type Filter = Record<string, unknown>;

/** Sort specification: field → 1 (ascending) or -1 (descending). */
export type Sort = Record<string, 1 | -1>;

/** Options of {@link Collection.find}. */
export interface FindOptions {
  sort?: Sort;
  skip?: number;
  limit?: number;
}

/** An index to create at start-up. */
export interface IndexSpec {
  /** Field names; several make a compound index. */
  fields: string[];
  unique?: boolean;
  /** Documents without the field are left out of the index. */
  sparse?: boolean;
  /** TTL index: documents expire this many seconds after the (Date-valued) field. */
  expireAfterSeconds?: number;
  /**
   * A partial index: only documents whose fields (of `fields`) hold these values are in it (SQLite
   * `WHERE`, MongoDB `partialFilterExpression`). A query uses it when its filter holds the same
   * values (equalities): an index that serves one kind of document costs the others no insert.
   */
  where?: Record<string, string | number | boolean>;
  /**
   * Adapters that build this index (default: all): an index that serves a query of one adapter
   * only (a TTL stand-in swept on SQLite, a low-cardinality one MongoDB's planner wants).
   */
  adapters?: Array<StoreAdapter>;
}

/**
 * How a collection's documents may be laid out, beside its indexes (see {@link Store.collection}).
 * A read gives the same document whatever the layout.
 */
export interface CollectionLayout {
  /**
   * Top-level fields holding long strings written as they are (an actor's serialized snapshot):
   * SQLite keeps each in a column of its own, so the text is stored once and read as it is, never
   * escaped inside the document's JSON nor parsed with it. MongoDB stores the document unchanged.
   * A value that is not a string stays in the document.
   */
  textFields?: string[];
  /**
   * Top-level fields that writes compare (an expected revision): SQLite keeps each in a column of
   * its own, so that the condition reads no JSON. MongoDB stores the document unchanged.
   */
  columnFields?: string[];
}

/** Which adapter a store is. */
export type StoreAdapter = 'mongodb' | 'sqlite';

/** A collection of documents of type `T`. */
export interface Collection<T extends Doc> {
  /** @throws {DuplicateKeyError} when `_id` or a unique index is taken. */
  insertOne(doc: T): Promise<void>;
  /**
   * Inserts `docs` in order as one write (group commit: the venue journal's entries that queued
   * while the previous write was in flight). Optional: callers fall back to {@link insertOne} per
   * document when a collection lacks it.
   * - SQLite: all or none (one SQLite transaction).
   * - MongoDB: an ordered insert; on failure a prefix of `docs` may have landed (never a gap).
   * @throws {DuplicateKeyError} when an `_id` or a unique key is taken (see above for what landed).
   */
  insertMany?(docs: T[]): Promise<void>;
  /**
   * Inserts, in order, each of `docs` whose `_id` is not taken (in the collection or by an earlier
   * doc of the list), leaving the stored document of a taken `_id` as it is: an idempotent append
   * that needs no read first.
   * - SQLite: all or none (`INSERT … ON CONFLICT (id) DO NOTHING` a document, several in a savepoint).
   * - MongoDB: one ordered bulk write of `$setOnInsert` upserts by `_id` (no failed write, so it is
   *   usable inside a transaction); outside one, a prefix may have landed when it throws.
   * @returns for each of `docs`, whether it was inserted.
   * @throws {DuplicateKeyError} when a unique index other than `_id` is taken.
   */
  insertMissing(docs: T[]): Promise<boolean[]>;
  findOne(filter: Filter): Promise<T | null>;
  find(filter: Filter, options?: FindOptions): Promise<T[]>;
  count(filter: Filter): Promise<number>;
  /**
   * Sets fields on the first document matching `filter` (`$set` semantics; dotted paths allowed).
   * With `upsert`, inserts `{...equality fields of filter, ...set}` when nothing matches.
   * @returns how many documents matched (0 or 1).
   * @throws {DuplicateKeyError} when the change breaks a unique index.
   */
  updateOne(filter: Filter, set: Record<string, unknown>, options?: { upsert?: boolean }): Promise<number>;
  /** Replaces the document whose `_id` matches, inserting it when absent. */
  replaceOne(doc: T): Promise<void>;
  /**
   * Replaces the document `doc._id` with `doc` when it also matches `filter` (an expected revision,
   * say): one write of the whole document, cheaper than {@link updateOne} of most of its fields.
   * Optional: callers fall back to `updateOne` when a collection lacks it.
   * @param previous - the document as stored when it matches `filter` (what the writer read at the
   *   revision it expects), when known: SQLite then rewrites only the columns (and index entries) of
   *   the fields whose value changed. MongoDB ignores it.
   * @returns how many documents matched (0 or 1); 0 changes nothing.
   * @throws {DuplicateKeyError} when the new document breaks a unique index.
   */
  replaceIf?(filter: Filter, doc: T, previous?: T): Promise<number>;
  /** @returns how many documents were removed. */
  deleteMany(filter: Filter): Promise<number>;
}

/** The store: named collections over one database. */
export interface Store {
  /** `mongodb` or `sqlite`. */
  readonly adapter: StoreAdapter;
  /** Human-readable location (database name or folder), never credentials. */
  readonly location: string;
  /**
   * Opens collection `name`, creating it with `indexes` (and the `layout` it is stored in) when
   * needed. Pass the same declarations on every open of a collection.
   */
  collection<T extends Doc>(name: string, indexes?: IndexSpec[], layout?: CollectionLayout): Promise<Collection<T>>;
  /**
   * Runs `fn` with a unit of work `tx`: every write made through `tx.collection(name)` commits
   * together, or none does when `fn` throws (its error is rethrown). Resolves with `fn`'s result
   * once committed. Writes made through the store's own collections are not part of it, even
   * from inside `fn`. To extend a unit of work, pass its `tx` on ({@link withUnit}); a second
   * `transaction` started inside `fn` is a different unit (on SQLite it waits for this one: a
   * deadlock). Keep `fn` short: issue the writes of one step from one place, and never let `fn`
   * wait for anything that writes outside it (another actor's queue, the venue journal).
   * - SQLite: one SQLite transaction (a savepoint of the group commit); writes made outside `tx`
   *   while it runs, or while it waits for an earlier transaction, wait until it ends (writes and
   *   transactions are served in the order they were asked for).
   * - MongoDB: a session's `withTransaction` with the store's write concern (`fn` may run again on
   *   a transient error; a write that fails inside aborts the whole transaction, so `fn` must let
   *   such an error propagate, never catch it and go on). On a standalone server (`MONGODB_ALLOW_STANDALONE=on`), which
   *   has no transactions, `fn` runs without one: its writes land one by one.
   */
  transaction<R>(fn: (tx: UnitOfWork) => Promise<R>): Promise<R>;
  /** Cheap liveness check for /healthz. */
  ping(): Promise<boolean>;
  /**
   * Why writes cannot be made durable right now, or null when they can. SQLite says so for a short
   * while after a commit or fsync failed (each write concerned is rejected with its error); on
   * MongoDB each operation reports its own error, so this stays null. The API answers mutating
   * requests 503 meanwhile, and health is `degraded`.
   */
  writeFailure(): string | null;
  /**
   * Optional: commits the writes made so far now, instead of at the end of the group commit's
   * window (SQLite: the next event-loop turns while writes keep joining). For a writer that others
   * wait behind (the capture replay's journal entries); the writes still resolve once durable.
   * SQLite on disk: while every fsync lane runs, the writes are committed as one ends, together with
   * every other write asked for meanwhile, so that the next fsync covers them all.
   */
  commitNow?(): void;
  /**
   * Optional: collection `name` (opened earlier) for bookkeeping whose loss in a crash is harmless
   * (a timer job's lock or removal: the job then runs again, and its run is idempotent). A write
   * made through it applies at once (every later read sees it) and resolves with its result then,
   * before any commit; it commits with the next commit of other writes (SQLite: at most 250 ms
   * later by itself, with no fsync of its own). A failed commit undoes it, reported as every commit
   * failure is ({@link writeFailure}). Stores without it write such records as any other.
   * @throws {Error} when the collection was never opened.
   */
  lazyCollection?<T extends Doc>(name: string): Collection<T>;
  /** Flushes pending writes and releases the database. */
  close(): Promise<void>;
}

/**
 * A running {@link Store.transaction}, passed explicitly to whatever writes in it (no ambient
 * state: a write belongs to the transaction only when made through these handles).
 */
export interface UnitOfWork {
  /**
   * Collection `name` (opened earlier through {@link Store.collection}) with its reads and writes
   * inside this transaction.
   * @throws {Error} when the collection was never opened.
   */
  collection<T extends Doc>(name: string): Collection<T>;
}

/**
 * Runs `fn` in `tx` when given (extending that unit of work), else in a new transaction of `store`.
 * What a function that may be part of a larger unit calls.
 */
export function withUnit<R>(store: Store, tx: UnitOfWork | undefined, fn: (tx: UnitOfWork) => Promise<R>): Promise<R> {
  return tx ? fn(tx) : store.transaction(fn);
}

/** A collection whose every call waits for `opening` first (a store that opens collections asynchronously). */
export function collectionWhenOpen<T extends Doc>(opening: Promise<Collection<T>>): Collection<T> {
  return {
    insertOne: async (doc) => (await opening).insertOne(doc),
    insertMissing: async (docs) => (await opening).insertMissing(docs),
    findOne: async (filter) => (await opening).findOne(filter),
    find: async (filter, options) => (await opening).find(filter, options),
    count: async (filter) => (await opening).count(filter),
    updateOne: async (filter, set, options) => (await opening).updateOne(filter, set, options),
    replaceOne: async (doc) => (await opening).replaceOne(doc),
    deleteMany: async (filter) => (await opening).deleteMany(filter),
  };
}
