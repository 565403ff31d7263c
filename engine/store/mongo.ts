import { MongoClient, MongoServerError, type Db, type Collection as MongoCollection } from 'mongodb';
import { DuplicateKeyError } from '../errors.js';
import type { Collection, Doc, Filter, FindOptions, IndexSpec, Store } from './port.js';

function rethrow(err: unknown): never {
  if (err instanceof MongoServerError && err.code === 11000) throw new DuplicateKeyError(err.message);
  throw err;
}

class MongoDocCollection<T extends Doc> implements Collection<T> {
  constructor(private readonly c: MongoCollection<Doc>) {}

  async insertOne(doc: T): Promise<void> {
    try {
      await this.c.insertOne(doc);
    } catch (err) {
      rethrow(err);
    }
  }

  async findOne(filter: Filter): Promise<T | null> {
    return (await this.c.findOne(filter)) as T | null;
  }

  async find(filter: Filter, options: FindOptions = {}): Promise<T[]> {
    let cursor = this.c.find(filter);
    if (options.sort) cursor = cursor.sort(options.sort);
    if (options.skip) cursor = cursor.skip(options.skip);
    if (options.limit) cursor = cursor.limit(options.limit);
    return (await cursor.toArray()) as T[];
  }

  async count(filter: Filter): Promise<number> {
    return await this.c.countDocuments(filter);
  }

  async updateOne(filter: Filter, set: Record<string, unknown>, options: { upsert?: boolean } = {}): Promise<number> {
    try {
      const res = await this.c.updateOne(filter, { $set: set }, { upsert: options.upsert ?? false });
      return res.matchedCount;
    } catch (err) {
      rethrow(err);
    }
  }

  async replaceOne(doc: T): Promise<void> {
    try {
      await this.c.replaceOne({ _id: doc._id }, doc, { upsert: true });
    } catch (err) {
      rethrow(err);
    }
  }

  async deleteMany(filter: Filter): Promise<number> {
    return (await this.c.deleteMany(filter)).deletedCount;
  }
}

/**
 * MongoDB adapter over the official driver. Indexes (unique and TTL among them) are created when a
 * collection is first opened. Writes use the driver's default write concern of the URI.
 */
export class MongoStore implements Store {
  readonly adapter = 'mongodb' as const;

  private constructor(
    private readonly client: MongoClient,
    private readonly db: Db,
  ) {}

  get location(): string {
    return `mongodb database ${this.db.databaseName}`;
  }

  /**
   * Connects to `uri`. The database is the one the URI names, else `defaultDb`.
   * @throws the driver's error when the server cannot be reached within 10 s.
   */
  static async open(uri: string, defaultDb: string): Promise<MongoStore> {
    const client = new MongoClient(uri, { serverSelectionTimeoutMS: 10_000 });
    await client.connect();
    const named = new URL(uri.replace(/^mongodb(\+srv)?:/, 'http:')).pathname.replace(/^\//, '');
    return new MongoStore(client, client.db(named || defaultDb));
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
        ...(ix.expireAfterSeconds !== undefined ? { expireAfterSeconds: ix.expireAfterSeconds } : {}),
      });
    }
    return new MongoDocCollection<T>(c);
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

  async close(): Promise<void> {
    await this.client.close();
  }
}
