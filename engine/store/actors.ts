import { systemClock, type Clock } from '../clock.js';
import { RevisionConflictError } from '../errors.js';
import type { Collection, CollectionLayout, Filter, IndexSpec, Store, UnitOfWork } from './port.js';

/**
 * One persisted actor (order, strategy, combo quote, copytrade subscription): the latest snapshot
 * and what the reads need without restoring it. Spec part 3 lifecycles live in the snapshot.
 */
export interface ActorRecord {
  /** Actor id (order id, record id, …). */
  _id: string;
  /** Machine id, e.g. `order`. */
  machineId: string;
  /** Version of the machine definition that wrote `snapshot`. */
  machineVersion: number;
  /**
   * The persisted snapshot as a JSON string (keeps `.`/`$` in state data away from the store): XState's
   * persisted snapshot (`{status, value, historyValue, context, children}`), or, for a definition
   * with a stored form, the compact form of engine/actor-host.ts `SnapshotForm` (form 2: a JSON
   * array `[2, value, slot…, rest?, envelope?]` without the context's default and derived
   * fields; a STOP_LOSS just armed takes ~86 characters instead of ~1,000; form 1, an object
   * `{form, value, context, …}`, is still read). Read it with `ActorHost.storedSnapshot` (or
   * `unpackSnapshot`), which gives XState's form for either, never with `JSON.parse` alone.
   */
  snapshot: string;
  /** Increases by one per write; a write must name the revision it read. */
  revision: number;
  /** Kind of resource: `order`, `strategy`, `combo`, `copytrade`, … */
  kind: string;
  /** REST status derived from the machine state. */
  status: string;
  /**
   * REST read model of the actor (what GET endpoints and pushes return). Never stored: it is
   * derived from the snapshot when a record is read (see {@link ActorRepository.viewDeriver}),
   * which keeps each stored record small.
   */
  view: Record<string, unknown>;
  /** Resource type (the view's `type`: order type, strategy type), stored for filtering. */
  type?: string | null;
  /** True once the machine reached a final state; final actors are not restored at start-up. */
  final: boolean;
  partnerId: string;
  /** Owning provisioned user (`platform_user_id`), or null for partner-level actors. */
  ownerUserId: string | null;
  /** Epoch ms. */
  createdAtMs: number;
  /** Epoch ms. */
  updatedAtMs: number;
  /** Set when the snapshot no longer restores: the actor is kept but not run. */
  quarantine: { reason: string; atMs: number } | null;
}

/**
 * A position in a user's actors, newest first (what {@link ActorRepository.findOwned}'s `before`
 * continues after): `<ownerUserId>|<createdAtMs, 15 digits>|<_id>`, so it names its user.
 */
function positionText(ownerUserId: string, createdAtMs: number, id: string): string {
  return `${ownerUserId}|${String(createdAtMs).padStart(15, '0')}|${id}`;
}

/** A position of {@link positionText} read back, or null when `text` is not one of `ownerUserId`'s. */
function parsePosition(ownerUserId: string, text: string): { createdAtMs: number; id: string } | null {
  const prefix = `${ownerUserId}|`;
  if (!text.startsWith(prefix)) return null;
  const ms = text.slice(prefix.length, prefix.length + 15);
  if (!/^\d{15}$/.test(ms) || text.charAt(prefix.length + 15) !== '|') return null;
  return { createdAtMs: Number(ms), id: text.slice(prefix.length + 16) };
}

/** A record as stored: no read model. */
type StoredRecord = Omit<ActorRecord, 'view'> & { view?: Record<string, unknown> | null };

/** A one-time data migration that ran (collection `migrations`). */
interface MigrationDoc {
  /** Which migration. */
  _id: string;
  /** When it ran, epoch ms. */
  atMs: number;
}

/** The `migrations` record of the `type` backfill of {@link ActorRepository.open}. */
const ACTORS_MIGRATION = 'actors: ownerKey and type backfilled';

/** The `migrations` record of the rewrite of records that stored an `ownerKey` (see {@link ActorRepository.open}). */
const OWNER_KEY_DROPPED = 'actors: ownerKey dropped';

/** The `migrations` record of the rename of a resting order's status `LIVE` to the reference's `OPEN`. */
const ORDER_OPEN_STATUS = 'actors: resting orders LIVE → OPEN';

/** Records rewritten per transaction by the migration {@link OWNER_KEY_DROPPED}. */
const MIGRATION_PAGE = 1000;

/**
 * Indexes of `actors` (each query of {@link ActorRepository} has one on MongoDB;
 * `test/api/query-indexes.test.ts` checks it, and that each query is an index search on SQLite).
 * The low-cardinality ones are MongoDB's only (see `IndexSpec.adapters`): SQLite has the two of
 * the restore and the reconciliation, and serves findOwned from one user's range of
 * `ownerUserId, createdAtMs, _id`.
 * - `final, quarantine, createdAtMs, _id`: {@link ActorRepository.findRestorable} (start-up). On
 *   SQLite of live actors only (partial, `final: false`): an actor that ends leaves it (one entry
 *   deleted) instead of moving to the final ones' part of it, a page of their own elsewhere (an
 *   entry deleted, one inserted: two pages written per commit where one would do), and the index
 *   stays the size of the live actors however many ended.
 * - `kind, final, quarantine, createdAtMs, _id`: the live orders of the reconciliation, newest first
 *   (its one query, `kind: 'order'`): on SQLite of live orders only (partial, `kind: 'order'` and
 *   `final: false`), so that a strategy, a combo or a subscription costs no insert into it (an armed
 *   stop: about 0.8 µs of CPU and 90 bytes of disk less), and an order that ends leaves it.
 *   MongoDB keeps both whole (an existing index cannot change its options).
 * - `ownerUserId, kind, createdAtMs, _id` / `…, kind, status, …` / `…, kind, type, …` /
 *   `…, kind, status, type, …`: {@link ActorRepository.findOwned} (pages and counts) of the
 *   activity feed, open orders and the strategy list with its status / type filters (MongoDB).
 * - `ownerUserId, createdAtMs, _id`: SQLite's findOwned index.
 * - `partnerId, kind`: kept from before (no current query needs it).
 */
const ACTOR_INDEXES: IndexSpec[] = [
  { fields: ['final', 'quarantine', 'createdAtMs', '_id'], adapters: ['mongodb'] },
  { fields: ['final', 'quarantine', 'createdAtMs', '_id'], where: { final: false }, adapters: ['sqlite'] },
  { fields: ['kind', 'final', 'quarantine', 'createdAtMs', '_id'], adapters: ['mongodb'] },
  {
    fields: ['kind', 'final', 'quarantine', 'createdAtMs', '_id'],
    where: { kind: 'order', final: false },
    adapters: ['sqlite'],
  },
  { fields: ['ownerUserId', 'kind', 'createdAtMs', '_id'], adapters: ['mongodb'] },
  { fields: ['ownerUserId', 'kind', 'status', 'createdAtMs', '_id'], adapters: ['mongodb'] },
  { fields: ['ownerUserId', 'kind', 'type', 'createdAtMs', '_id'], adapters: ['mongodb'] },
  { fields: ['ownerUserId', 'kind', 'status', 'type', 'createdAtMs', '_id'], adapters: ['mongodb'] },
  { fields: ['partnerId', 'kind'], adapters: ['mongodb'] },
  { fields: ['ownerUserId', 'createdAtMs', '_id'], adapters: ['sqlite'] },
];

/**
 * How `actors` is stored: the snapshot, a long string, as it is, and the revision every update
 * compares (on SQLite each a column of its own).
 */
const ACTOR_LAYOUT: CollectionLayout = { textFields: ['snapshot'], columnFields: ['revision'] };

/** The collection of actor records. */
const ACTORS = 'actors';

/** Records read at a time by {@link ActorRepository.restorable}. */
const RESTORE_PAGE = 5000;

/**
 * The live records of `c` (not final, no quarantine), `pageSize` at a time, in the order of the
 * restore's index (`createdAtMs`, then `_id`). A record created while this runs may be read too,
 * when created after the page it falls in.
 */
async function* liveInCreationOrder(c: Collection<StoredRecord>, pageSize: number): AsyncGenerator<StoredRecord[]> {
  let after: { createdAtMs: number; _id: string } | null = null;
  let limit = pageSize;
  for (;;) {
    const filter: Filter = { final: false, quarantine: null };
    if (after) filter.createdAtMs = { $gte: after.createdAtMs };
    const docs = await c.find(filter, { sort: { createdAtMs: 1, _id: 1 }, limit });
    const page: StoredRecord[] = [];
    for (const d of docs) {
      // the page starts at the last one's time: those of that time up to it were read
      if (after && (d.createdAtMs < after.createdAtMs || (d.createdAtMs === after.createdAtMs && d._id <= after._id)))
        continue;
      after = { createdAtMs: d.createdAtMs, _id: d._id };
      page.push(d);
    }
    if (page.length > 0) yield page;
    if (docs.length < limit) return;
    // a page of one time only, all read already: the next one is larger, so it gets past that time
    limit = page.length === 0 ? limit * 2 : pageSize;
  }
}

/**
 * The records of `c` matching `filter`, `pageSize` at a time, by `_id` (a range of the primary key
 * each, on either adapter, the first one too: every id is a non-empty string; what it reads needs no
 * index of its own).
 */
async function* inIdOrder(
  c: Collection<StoredRecord>,
  filter: Filter,
  pageSize: number,
): AsyncGenerator<StoredRecord[]> {
  let after = '';
  for (;;) {
    const page = await c.find({ ...filter, _id: { $gt: after } }, { sort: { _id: 1 }, limit: pageSize });
    if (page.length > 0) yield page;
    if (page.length < pageSize) return;
    after = page[page.length - 1]!._id;
  }
}

/** Revisioned actor-snapshot repository over the store port (optimistic concurrency). */
export class ActorRepository {
  /**
   * Derives the read model of a stored record (set by the actor host, which knows the machines);
   * without one, a record read back has the view it was stored with, or `{}`.
   */
  viewDeriver: ((record: Omit<ActorRecord, 'view'>) => Record<string, unknown>) | null = null;

  private constructor(
    private readonly c: Collection<StoredRecord>,
    private readonly store: Store,
  ) {}

  /** The collection, inside `tx` when given. */
  private within(tx: UnitOfWork | undefined): Collection<StoredRecord> {
    return tx ? tx.collection<StoredRecord>(ACTORS) : this.c;
  }

  /**
   * Runs `fn` in a transaction of the store the records live in (see `Store.transaction`): an
   * actor's write made with its `tx` commits with the other writes made with it, or none does.
   */
  transaction<R>(fn: (tx: UnitOfWork) => Promise<R>): Promise<R> {
    return this.store.transaction(fn);
  }

  private withView(doc: StoredRecord): ActorRecord {
    return { ...doc, view: this.viewDeriver ? this.viewDeriver(doc) : (doc.view ?? {}) };
  }

  private withViews(docs: StoredRecord[]): ActorRecord[] {
    return docs.map((d) => this.withView(d));
  }

  /**
   * Opens the repository on `store`, migrating records written by earlier versions (once: the
   * `migrations` collection records it).
   * @param clock - the time of the migrations' records.
   */
  static async open(store: Store, clock: Clock = systemClock): Promise<ActorRepository> {
    const c = await store.collection<StoredRecord>(ACTORS, ACTOR_INDEXES, ACTOR_LAYOUT);
    // One-time migrations, recorded as done so that later starts do not scan every record again
    // (no query of theirs has an index). Each is idempotent: a crash before its record is written
    // runs it again.
    const migrations = await store.collection<MigrationDoc>('migrations');
    const once = async (id: string, migrate: () => Promise<void>) => {
      if (await migrations.findOne({ _id: id })) return;
      await migrate();
      await migrations.replaceOne({ _id: id, atMs: clock.now() });
    };
    await once(ACTORS_MIGRATION, async () => {
      // Records written when the view was stored: keep its type as a field, drop the rest.
      for (const r of await c.find({ type: { $exists: false } })) {
        await c.updateOne({ _id: r._id }, { type: (r.view?.type as string | undefined) ?? null, view: null });
      }
    });
    await once(OWNER_KEY_DROPPED, () => ActorRepository.dropOwnerKeys(store, c));
    await once(ORDER_OPEN_STATUS, async () => {
      // a resting order's status was `LIVE` (its view and the open-order queries read the stored status)
      for (const r of await c.find({ kind: 'order', status: 'LIVE' }))
        await c.updateOne({ _id: r._id }, { status: 'OPEN' });
    });
    return new ActorRepository(c, store);
  }

  /**
   * Rewrites each record that stores an `ownerKey` (the key of a user's range written before
   * findOwned used `ownerUserId, createdAtMs, _id`) without it, a page of {@link MIGRATION_PAGE} per
   * transaction: the record is then stored as this version stores it. Live records in creation
   * order (on SQLite, about the order of the table's rows: each page rewrites a few table pages,
   * where `_id` order would rewrite one per record), then the final ones by `_id` (SQLite indexes
   * live records only: creation order has no index there), then the quarantined ones.
   */
  private static async dropOwnerKeys(store: Store, c: Collection<StoredRecord>): Promise<void> {
    const rewrite = (page: StoredRecord[]) =>
      store.transaction(async (tx) => {
        const within = tx.collection<StoredRecord>(ACTORS);
        for (const r of page) {
          if (!('ownerKey' in r)) continue;
          const { ownerKey: _dropped, ...rest } = r as StoredRecord & { ownerKey?: string };
          await within.replaceOne(rest);
        }
      });
    for await (const page of liveInCreationOrder(c, MIGRATION_PAGE)) await rewrite(page);
    for await (const page of inIdOrder(c, { final: true, quarantine: null }, MIGRATION_PAGE)) await rewrite(page);
    await rewrite(await c.find({ quarantine: { $ne: null }, ownerKey: { $exists: true } }));
  }

  /**
   * The position of `record` in its owner's actors, which {@link findOwned}'s `before` continues
   * after (an activity cursor's content).
   * @throws {Error} when the record has no owner.
   */
  static positionOf(record: Pick<ActorRecord, '_id' | 'ownerUserId' | 'createdAtMs'>): string {
    if (record.ownerUserId === null) throw new Error(`actor ${record._id} has no owner`);
    return positionText(record.ownerUserId, record.createdAtMs, record._id);
  }

  /**
   * Inserts a new actor at revision 1, inside `tx` when given.
   * @throws {DuplicateKeyError} when the id exists.
   */
  async insert(record: Omit<ActorRecord, 'revision' | 'quarantine'>, tx?: UnitOfWork): Promise<ActorRecord> {
    // fields named one by one: an object rest (`{view, ...rest}`) is slow in V8
    const view = record.view;
    const stored: StoredRecord = {
      _id: record._id,
      machineId: record.machineId,
      machineVersion: record.machineVersion,
      snapshot: record.snapshot,
      kind: record.kind,
      status: record.status,
      final: record.final,
      partnerId: record.partnerId,
      ownerUserId: record.ownerUserId,
      createdAtMs: record.createdAtMs,
      updatedAtMs: record.updatedAtMs,
      type: typeof view.type === 'string' ? view.type : null,
      revision: 1,
      quarantine: null,
    };
    await this.within(tx).insertOne(stored);
    // the stored record itself with its view added last (one hidden class for every record; a
    // copy would be one more object per actor created)
    const out = stored as ActorRecord;
    out.view = view;
    return out;
  }

  /**
   * Writes a new snapshot if the stored revision is still `expectedRevision`, inside `tx` when given.
   * @returns the record at `expectedRevision + 1`.
   * @throws {RevisionConflictError} when another writer got there first.
   */
  async update(
    current: ActorRecord,
    patch: Pick<ActorRecord, 'snapshot' | 'status' | 'view' | 'final' | 'updatedAtMs'> &
      Partial<Pick<ActorRecord, 'machineVersion'>>,
    tx?: UnitOfWork,
  ): Promise<ActorRecord> {
    // the record written, built once field by field (in the order of a record read back, one hidden
    // class for all): a patch field given as undefined leaves the field as it was; the view is added
    // after the write (never stored), to this same object, which is what is returned
    const next = {
      _id: current._id,
      machineId: current.machineId,
      machineVersion: patch.machineVersion ?? current.machineVersion,
      snapshot: patch.snapshot ?? current.snapshot,
      revision: current.revision + 1,
      kind: current.kind,
      status: patch.status ?? current.status,
      final: patch.final ?? current.final,
      partnerId: current.partnerId,
      ownerUserId: current.ownerUserId,
      createdAtMs: current.createdAtMs,
      updatedAtMs: patch.updatedAtMs ?? current.updatedAtMs,
      quarantine: current.quarantine,
    } as StoredRecord;
    if (current.type !== undefined) next.type = current.type;
    const c = this.within(tx);
    const expected = { _id: current._id, revision: current.revision };
    let matched: number;
    if (c.replaceIf) {
      // the whole record written at once (cheaper than setting most of its fields); `current` is
      // the record as stored at the revision expected, so only the columns that change are set
      matched = await c.replaceIf(expected, next, current);
    } else {
      // the stored fields named one by one (no object rest: slow in V8)
      const set: Record<string, unknown> = {
        snapshot: next.snapshot,
        status: next.status,
        final: next.final,
        updatedAtMs: next.updatedAtMs,
      };
      if (patch.machineVersion !== undefined) set.machineVersion = patch.machineVersion;
      set.revision = next.revision;
      matched = await c.updateOne(expected, set);
    }
    if (matched === 0) throw new RevisionConflictError(current._id, current.revision);
    const out = next as ActorRecord;
    out.view = patch.view ?? current.view;
    return out;
  }

  /** Marks an actor whose snapshot cannot be restored; it stays stored for inspection. */
  async quarantine(id: string, reason: string, atMs: number): Promise<void> {
    await this.c.updateOne({ _id: id }, { quarantine: { reason, atMs } });
  }

  async get(id: string): Promise<ActorRecord | null> {
    const doc = await this.c.findOne({ _id: id });
    return doc ? this.withView(doc) : null;
  }

  /** The stored documents of `ids` that exist, in one query (a read by key for one id, an `$in` for more). */
  private async byIds(ids: string[]): Promise<StoredRecord[]> {
    if (ids.length === 1) {
      const doc = await this.c.findOne({ _id: ids[0] });
      return doc ? [doc] : [];
    }
    return this.c.find({ _id: { $in: ids } });
  }

  /** The records of `ids` that exist (one query), by id. */
  async getMany(ids: string[]): Promise<Map<string, ActorRecord>> {
    return new Map((await this.byIds(ids)).map((d) => [d._id, this.withView(d)]));
  }

  /** A record as stored, without deriving its view (the host restoring an actor). */
  async getStored(id: string): Promise<ActorRecord | null> {
    const doc = await this.c.findOne({ _id: id });
    return doc ? { ...doc, view: {} } : null;
  }

  /**
   * The records of `ids` that exist, as stored (views not derived: the host restoring them), in one
   * query (see {@link byIds}).
   */
  async getStoredMany(ids: string[]): Promise<ActorRecord[]> {
    if (ids.length === 0) return [];
    return (await this.byIds(ids)).map((d) => {
      // the record read, its view added last (no copy: it is this read's own object)
      const r = d as ActorRecord;
      r.view = {};
      return r;
    });
  }

  /** Every actor to bring back at start-up: not final, not quarantined (views not derived: the host restores them). */
  async findRestorable(): Promise<ActorRecord[]> {
    return (await this.c.find({ final: false, quarantine: null }, { sort: { createdAtMs: 1 } })).map((d) => ({
      ...d,
      view: {},
    }));
  }

  /**
   * {@link findRestorable} read `pageSize` records at a time, in the index's order (`createdAtMs`,
   * then `_id`), so that the records restored need not all be held at once (views not derived).
   * A record created while this runs may be read too, when created after the page it falls in.
   */
  async *restorable(pageSize = RESTORE_PAGE): AsyncGenerator<ActorRecord> {
    for await (const page of liveInCreationOrder(this.c, pageSize)) {
      for (const d of page) {
        const r = d as ActorRecord;
        r.view = {};
        yield r;
      }
    }
  }

  async find(filter: Filter, options: { skip?: number; limit?: number } = {}): Promise<ActorRecord[]> {
    return this.withViews(await this.c.find(filter, { sort: { createdAtMs: -1, _id: -1 }, ...options }));
  }

  count(filter: Filter): Promise<number> {
    return this.c.count(filter);
  }

  /**
   * Actors of one user matching `filter`, newest first (by `createdAtMs`, then `_id`: an index
   * range on either adapter); `before` (a {@link positionOf}) continues after that record (keyset
   * paging), and is ignored when it is not a position of this user's.
   * @returns the page and the total count matching (after `before` when given).
   */
  async findOwned(
    ownerUserId: string,
    filter: Filter,
    options: { skip?: number; limit?: number; before?: string } = {},
  ): Promise<{ records: ActorRecord[]; total: number }> {
    const newestFirst = { sort: { createdAtMs: -1, _id: -1 } } as const;
    const owned: Filter = { ...filter, ownerUserId };
    const at = options.before === undefined ? null : parsePosition(ownerUserId, options.before);
    if (at === null) {
      const paging = { ...newestFirst, skip: options.skip, limit: options.limit };
      const [docs, total] = await Promise.all([this.c.find(owned, paging), this.c.count(owned)]);
      return { records: this.withViews(docs), total };
    }
    // after the position: those of its time with a lower id, then those of earlier times (two
    // index ranges; no `$or`, which MongoDB could not bound by one index)
    const same: Filter = { ...owned, createdAtMs: at.createdAtMs, _id: { $lt: at.id } };
    const earlier: Filter = { ...owned, createdAtMs: { $lt: at.createdAtMs } };
    const [sameCount, earlierCount] = await Promise.all([this.c.count(same), this.c.count(earlier)]);
    const skip = options.skip ?? 0;
    const limit = options.limit ?? Infinity;
    const fromSame = Math.max(0, Math.min(limit, sameCount - skip));
    const docs =
      fromSame > 0 ? await this.c.find(same, { ...newestFirst, skip, limit: fromSame }) : ([] as StoredRecord[]);
    if (docs.length < limit) {
      const rest = limit - docs.length;
      docs.push(
        ...(await this.c.find(earlier, {
          ...newestFirst,
          skip: Math.max(0, skip - sameCount),
          ...(Number.isFinite(rest) ? { limit: rest } : {}),
        })),
      );
    }
    return { records: this.withViews(docs), total: sameCount + earlierCount };
  }
}
