/**
 * Storage port. Two adapters implement it: MongoDB (engine/store/mongo.ts, when `MONGODB_URI` is
 * set) and SQLite (engine/store/sqlite.ts, the default: a file in `DATA_DIR`, or memory). They speak the same small subset of the MongoDB query language, so code
 * above the port never knows which one it runs on. The contract suite
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
   * Adapters that build this index (default: all): an index that serves a query of one adapter
   * only (a TTL stand-in swept on SQLite, a low-cardinality one MongoDB's planner wants).
   */
  adapters?: Array<StoreAdapter>;
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
  /** @returns how many documents were removed. */
  deleteMany(filter: Filter): Promise<number>;
}

/** The store: named collections over one database. */
export interface Store {
  /** `mongodb` or `sqlite`. */
  readonly adapter: StoreAdapter;
  /** Human-readable location (database name or folder), never credentials. */
  readonly location: string;
  collection<T extends Doc>(name: string, indexes?: IndexSpec[]): Promise<Collection<T>>;
  /**
   * Runs `fn`; every write it makes through this store (any collection) commits together, or none
   * does when `fn` throws (its error is rethrown). Resolves with `fn`'s result once committed. A call
   * inside a running transaction joins it. Keep `fn` short and never let it wait for a write made
   * outside it.
   * - SQLite: one SQLite transaction (a savepoint of the group commit); writes made outside `fn`
   *   meanwhile wait until it ends.
   * - MongoDB: a session's `withTransaction` with the store's write concern (`fn` may run again on
   *   a transient error; a write that fails inside aborts the whole transaction, so `fn` must let
   *   such an error propagate, never catch it and go on). On a standalone server (`MONGODB_ALLOW_STANDALONE=on`), which has no
   *   transactions, `fn` runs without one: its writes land one by one.
   */
  transaction<R>(fn: () => Promise<R>): Promise<R>;
  /** Cheap liveness check for /healthz. */
  ping(): Promise<boolean>;
  /**
   * Why writes cannot be made durable right now, or null when they can. SQLite says so for a short
   * while after a commit or fsync failed (each write concerned is rejected with its error); on
   * MongoDB each operation reports its own error, so this stays null. The API answers mutating
   * requests 503 meanwhile, and health is `degraded`.
   */
  writeFailure(): string | null;
  /** Flushes pending writes and releases the database. */
  close(): Promise<void>;
}
