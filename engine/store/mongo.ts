import {
  MongoClient,
  MongoNetworkError,
  MongoServerError,
  MongoServerSelectionError,
  type ClientSession,
  type Db,
  type Collection as MongoCollection,
  type Document,
  type MongoClientOptions,
} from 'mongodb';
import { ConnectionString } from 'mongodb-connection-string-url';
import { DuplicateKeyError } from '../errors.js';
import type { Collection, Doc, Filter, FindOptions, IndexSpec, Store, UnitOfWork } from './port.js';

function rethrow(err: unknown): never {
  if (err instanceof MongoServerError && err.code === 11000) throw new DuplicateKeyError(err.message);
  throw err;
}

class MongoDocCollection<T extends Doc> implements Collection<T> {
  constructor(
    private readonly c: MongoCollection<Doc>,
    /** The session of the {@link MongoStore.transaction} this handle works in (none: the store's own handle). */
    private readonly session: ClientSession | null = null,
  ) {}

  /** Options carrying this handle's transaction session (none outside one). */
  private inTx<O extends object>(options: O): O & { session?: ClientSession } {
    return this.session ? { ...options, session: this.session } : options;
  }

  async insertOne(doc: T): Promise<void> {
    try {
      await this.c.insertOne(doc, this.inTx({}));
    } catch (err) {
      rethrow(err);
    }
  }

  /** An ordered insert of `docs` (a prefix may have landed when it throws). */
  async insertMany(docs: T[]): Promise<void> {
    try {
      await this.c.insertMany(docs, this.inTx({ ordered: true }));
    } catch (err) {
      rethrow(err);
    }
  }

  /** `$setOnInsert` upserts by `_id`, ordered: a taken `_id` matches and changes nothing. */
  async insertMissing(docs: T[]): Promise<boolean[]> {
    if (docs.length === 0) return [];
    try {
      const res = await this.c.bulkWrite(
        docs.map(({ _id, ...rest }) => ({
          // the filter's `_id` is the new document's; `$setOnInsert` may not be empty
          updateOne: {
            filter: { _id },
            update: { $setOnInsert: Object.keys(rest).length ? rest : { _id } },
            upsert: true,
          },
        })),
        this.inTx({ ordered: true }),
      );
      const inserted = docs.map(() => false);
      for (const i of Object.keys(res.upsertedIds)) inserted[Number(i)] = true;
      return inserted;
    } catch (err) {
      rethrow(err);
    }
  }

  async findOne(filter: Filter): Promise<T | null> {
    return (await this.c.findOne(filter, this.inTx({}))) as T | null;
  }

  async find(filter: Filter, options: FindOptions = {}): Promise<T[]> {
    let cursor = this.c.find(filter, this.inTx({}));
    if (options.sort) cursor = cursor.sort(options.sort);
    if (options.skip) cursor = cursor.skip(options.skip);
    if (options.limit) cursor = cursor.limit(options.limit);
    return (await cursor.toArray()) as T[];
  }

  async count(filter: Filter): Promise<number> {
    return await this.c.countDocuments(filter, this.inTx({}));
  }

  async updateOne(filter: Filter, set: Record<string, unknown>, options: { upsert?: boolean } = {}): Promise<number> {
    try {
      const res = await this.c.updateOne(filter, { $set: set }, this.inTx({ upsert: options.upsert ?? false }));
      return res.matchedCount;
    } catch (err) {
      rethrow(err);
    }
  }

  async replaceOne(doc: T): Promise<void> {
    try {
      await this.c.replaceOne({ _id: doc._id }, doc, this.inTx({ upsert: true }));
    } catch (err) {
      rethrow(err);
    }
  }

  async replaceIf(filter: Filter, doc: T): Promise<number> {
    try {
      return (await this.c.replaceOne({ ...filter, _id: doc._id }, doc, this.inTx({}))).matchedCount;
    } catch (err) {
      rethrow(err);
    }
  }

  async deleteMany(filter: Filter): Promise<number> {
    return (await this.c.deleteMany(filter, this.inTx({}))).deletedCount;
  }
}

/**
 * The database a MongoDB connection string names, read with the driver's own connection-string
 * parser (`mongodb-connection-string-url`, exactly as `MongoClient` reads it: the path after the
 * host list, percent-decoded), so seed lists with ports (`mongodb://h1:27017,h2:27017/db?replicaSet=rs0`),
 * `mongodb+srv://` URIs, credentials and options all parse. No DNS lookup, no connection.
 * @param uri - a `mongodb://` or `mongodb+srv://` URI.
 * @param fallback - the database when the URI names none (`MONGODB_DB`).
 * @returns the decoded database name.
 * @throws the parser's `MongoParseError` when `uri` is not a valid connection string.
 */
export function databaseOf(uri: string, fallback: string): string {
  const path = new ConnectionString(uri).pathname;
  const named = decodeURIComponent(path.startsWith('/') ? path.slice(1) : path);
  return named || fallback;
}

/** Write concern of every write the service makes on MongoDB (`MONGODB_WRITE_CONCERN`, `MONGODB_JOURNAL`). */
export interface MongoWriteSettings {
  /** `majority` or a number of members (>= 1) that must acknowledge a write. */
  w: 'majority' | number;
  /** Whether a write is acknowledged only once it is in the on-disk journal. */
  journal: boolean;
}

/** Options of {@link MongoStore.open}. */
export interface MongoOpenOptions extends Partial<MongoWriteSettings> {
  /** Accept a standalone server (no replica set): majority and retryable writes then do not hold. Default false. */
  allowStandalone?: boolean;
  /** Server selection timeout (ms); default the URI's `serverSelectionTimeoutMS`, else 10,000. */
  serverSelectionTimeoutMS?: number;
}

/** Default write concern: a majority of the replica set, journaled. */
export const DEFAULT_WRITE_SETTINGS: MongoWriteSettings = { w: 'majority', journal: true };

/**
 * The driver options the service connects with: the write concern set explicitly (never the
 * server's default) and the server selection timeout (ms): `serverSelectionTimeoutMS` when given,
 * else none when `uri` carries its own (the driver reads it there), else 10,000. Retryable writes are
 * the driver's default (on) unless the URI says `retryWrites=false`.
 * @returns options for `new MongoClient(uri, options)`.
 */
export function mongoClientOptions(
  write: MongoWriteSettings = DEFAULT_WRITE_SETTINGS,
  serverSelectionTimeoutMS?: number,
  uri?: string,
): MongoClientOptions {
  const writeConcern = { w: write.w, journal: write.journal };
  if (serverSelectionTimeoutMS === undefined && uri !== undefined && uriHasOption(uri, 'serverSelectionTimeoutMS'))
    return { writeConcern };
  return { serverSelectionTimeoutMS: serverSelectionTimeoutMS ?? 10_000, writeConcern };
}

/** Whether connection string `uri` sets option `name` (case-insensitive, as the driver reads options). */
function uriHasOption(uri: string, name: string): boolean {
  const wanted = name.toLowerCase();
  for (const key of new ConnectionString(uri).searchParams.keys()) if (key.toLowerCase() === wanted) return true;
  return false;
}

/**
 * Why the write-concern options written in the URI (`w`, `journal`, `j`; names case-insensitive)
 * contradict the settings, or null when the URI has none or agrees. The settings are the one source
 * of the write concern: a URI carrying another one is refused rather than silently overridden.
 */
export function uriWriteConcernConflict(uri: string, wanted: MongoWriteSettings): string | null {
  const conflicts: string[] = [];
  for (const [key, value] of new ConnectionString(uri).searchParams) {
    const k = key.toLowerCase();
    if (k === 'w' && value !== String(wanted.w)) conflicts.push(`${key}=${value} (MONGODB_WRITE_CONCERN=${wanted.w})`);
    if ((k === 'journal' || k === 'j') && value.toLowerCase() !== String(wanted.journal)) {
      conflicts.push(`${key}=${value} (MONGODB_JOURNAL=${wanted.journal ? 'on' : 'off'})`);
    }
  }
  if (conflicts.length === 0) return null;
  return (
    `MONGODB_URI's write concern ${conflicts.join(', ')} contradicts the ` +
    `settings: remove it from the URI or change the settings`
  );
}

/**
 * A MongoDB deployment the service refuses to start on: a standalone server without
 * `MONGODB_ALLOW_STANDALONE=on`, or a URI whose write-concern options (`w`, `journal`, `j`)
 * contradict the settings.
 * Its message is the one line to print.
 */
export class MongoStoreRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MongoStoreRefusedError';
  }
}

/**
 * No member of the URI's seed list answered within the server selection timeout (a closed port, a
 * host that does not resolve, a replica set whose members are all down). Its message is the one
 * line to print: the hosts (never the credentials) and the driver's reason.
 */
export class MongoUnreachableError extends MongoStoreRefusedError {
  constructor(uri: string, cause: Error) {
    let hosts = '(unparsed)';
    try {
      hosts = new ConnectionString(uri).hosts.join(',');
    } catch {
      /* the driver parsed it; keep the placeholder */
    }
    super(
      `no MongoDB server of MONGODB_URI (${hosts}) answered: ${cause.message.split('\n')[0]}; ` +
        `check that the servers run and are reachable from here`,
    );
    this.name = 'MongoUnreachableError';
  }
}

/** The kind of deployment a `hello` reply describes. */
export type MongoTopology = 'replicaSet' | 'sharded' | 'standalone';

/**
 * Classifies a deployment from its `hello` (or legacy `isMaster`) reply: a replica-set member
 * carries `setName`, a mongos answers `msg: 'isdbgrid'`, anything else is a standalone server.
 */
export function topologyOf(hello: Document): MongoTopology {
  if (typeof hello.setName === 'string' && hello.setName !== '') return 'replicaSet';
  if (hello.msg === 'isdbgrid') return 'sharded';
  return 'standalone';
}

/**
 * Why the service must not run on the deployment a `hello` reply describes, or null when it may.
 * A standalone server is refused unless `allowStandalone`: it has no majority to wait for (a write
 * acknowledged there is on one machine only) and no retryable writes.
 */
export function standaloneRefusal(hello: Document, allowStandalone: boolean): string | null {
  if (topologyOf(hello) !== 'standalone' || allowStandalone) return null;
  return (
    'MongoDB server is a standalone server (its hello reply names no replica set): write concern majority and ' +
    'retryable writes need a replica set; run a replica set (one member is enough) or set MONGODB_ALLOW_STANDALONE=on'
  );
}

/**
 * Why the write concern the driver ended up with differs from the one asked for, or null when it
 * does not (a `journal=false` or `j=` option in the URI overrides the client options in the driver).
 */
export function writeConcernMismatch(
  wanted: MongoWriteSettings,
  effective: { w?: unknown; journal?: unknown } | undefined,
): string | null {
  const w = effective?.w;
  const journal = effective?.journal === true;
  if (w === wanted.w && journal === wanted.journal) return null;
  return (
    `MONGODB_URI's options give write concern w=${String(w)} journal=${journal}, ` +
    `but MONGODB_WRITE_CONCERN / MONGODB_JOURNAL ask for ` +
    `w=${wanted.w} journal=${wanted.journal}: remove w / journal / j from the URI or change the settings`
  );
}

/**
 * MongoDB adapter over the official driver. Indexes (unique and TTL among them) are created when a
 * collection is first opened. Every write uses the write concern given to {@link MongoStore.open}
 * (default `w: 'majority'`, journaled) and the driver's retryable writes.
 */
export class MongoStore implements Store {
  readonly adapter = 'mongodb' as const;

  private constructor(
    private readonly client: MongoClient,
    private readonly db: Db,
    private readonly write: MongoWriteSettings,
    /** Whether the deployment has transactions (a replica set or a sharded cluster). */
    readonly transactional: boolean,
  ) {}

  get location(): string {
    return `mongodb database ${this.db.databaseName}`;
  }

  /**
   * Connects to `uri` with {@link mongoClientOptions}, checks the deployment with `hello` and the
   * effective write concern, and opens the database the URI names ({@link databaseOf}), else
   * `defaultDb`. When the connection or a check fails the client is closed before the error propagates.
   * @throws {MongoStoreRefusedError} on a standalone server without `allowStandalone`, or when the
   *   URI's options contradict the write concern asked for.
   * @throws {MongoUnreachableError} when no server of the seed list answers within the selection
   *   timeout (the URI's `serverSelectionTimeoutMS`, else 10 s).
   * @throws the driver's error when the URI does not parse.
   */
  static async open(uri: string, defaultDb: string, options: MongoOpenOptions = {}): Promise<MongoStore> {
    const write: MongoWriteSettings = {
      w: options.w ?? DEFAULT_WRITE_SETTINGS.w,
      journal: options.journal ?? DEFAULT_WRITE_SETTINGS.journal,
    };
    const dbName = databaseOf(uri, defaultDb);
    const client = new MongoClient(uri, mongoClientOptions(write, options.serverSelectionTimeoutMS, uri));
    try {
      const mismatch = uriWriteConcernConflict(uri, write) ?? writeConcernMismatch(write, client.options.writeConcern);
      if (mismatch) throw new MongoStoreRefusedError(mismatch);
      const db = client.db(dbName);
      // `hello` since MongoDB 4.4.2; the legacy `isMaster` answers the same fields before.
      const admin = db.admin();
      const hello = await client
        .connect()
        .then(() => admin.command({ hello: 1 }).catch(() => admin.command({ isMaster: 1 })))
        .catch((err: unknown) => {
          throw err instanceof MongoServerSelectionError || err instanceof MongoNetworkError
            ? new MongoUnreachableError(uri, err)
            : err;
        });
      const refusal = standaloneRefusal(hello, options.allowStandalone ?? false);
      if (refusal) throw new MongoStoreRefusedError(refusal);
      return new MongoStore(client, db, write, topologyOf(hello) !== 'standalone');
    } catch (err) {
      await client.close().catch(() => {});
      throw err;
    }
  }

  /** The underlying driver database, for the Agenda Mongo backend. */
  get database(): Db {
    return this.db;
  }

  async collection<T extends Doc>(name: string, indexes: IndexSpec[] = []): Promise<Collection<T>> {
    const c = this.db.collection<Doc>(name);
    for (const ix of indexes) {
      if (ix.adapters && !ix.adapters.includes('mongodb')) continue;
      await c.createIndex(Object.fromEntries(ix.fields.map((f) => [f, 1])), {
        unique: ix.unique ?? false,
        ...(ix.sparse ? { sparse: true } : {}),
        ...(ix.where ? { partialFilterExpression: ix.where } : {}),
        ...(ix.expireAfterSeconds !== undefined ? { expireAfterSeconds: ix.expireAfterSeconds } : {}),
      });
    }
    return new MongoDocCollection<T>(c);
  }

  /**
   * Runs `fn` in a session's `withTransaction` with the store's write concern: its writes commit
   * together or not at all (see {@link Store.transaction}); the driver runs `fn` again on a
   * transient transaction error. On a standalone server (allowed by `MONGODB_ALLOW_STANDALONE`),
   * which has no transactions, `fn` runs without one and its writes land one by one.
   */
  async transaction<R>(fn: (tx: UnitOfWork) => Promise<R>): Promise<R> {
    const unit = (session: ClientSession | null): UnitOfWork => ({
      collection: <T extends Doc>(name: string): Collection<T> =>
        new MongoDocCollection<T>(this.db.collection<Doc>(name), session),
    });
    if (!this.transactional) return fn(unit(null));
    return this.client.withSession(async (session) => {
      let result: R;
      await session.withTransaction(
        async () => {
          result = await fn(unit(session));
        },
        { writeConcern: { w: this.write.w, journal: this.write.journal } },
      );
      return result!;
    });
  }

  /** Always null: each MongoDB operation reports its own failure (see {@link Store.writeFailure}). */
  writeFailure(): string | null {
    return null;
  }

  async ping(): Promise<boolean> {
    try {
      await this.db.command({ ping: 1 });
      return true;
    } catch {
      return false;
    }
  }

  private readonly beforeClose: Array<() => Promise<void>> = [];

  /** Runs `fn` at {@link close} before the client closes (the engine lease's release). */
  onClose(fn: () => Promise<void>): void {
    this.beforeClose.push(fn);
  }

  async close(): Promise<void> {
    try {
      for (const fn of this.beforeClose.splice(0)) await fn();
    } finally {
      await this.client.close();
    }
  }
}
