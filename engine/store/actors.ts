import { RevisionConflictError } from '../errors.js';
import type { Collection, Filter, IndexSpec, Store, UnitOfWork } from './port.js';

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
  /**
   * `<ownerUserId>|<createdAtMs, 15 digits>|<_id>` for owned actors (absent otherwise): one unique,
   * creation-ordered key per actor, so a user's actors are an index range on either adapter.
   */
  ownerKey?: string;
  /** Epoch ms. */
  createdAtMs: number;
  /** Epoch ms. */
  updatedAtMs: number;
  /** Set when the snapshot no longer restores: the actor is kept but not run. */
  quarantine: { reason: string; atMs: number } | null;
}

function ownerKeyOf(ownerUserId: string, createdAtMs: number, id: string): string {
  return `${ownerUserId}|${String(createdAtMs).padStart(15, '0')}|${id}`;
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

/** The `migrations` record of the ownerKey / type backfill of {@link ActorRepository.open}. */
const ACTORS_MIGRATION = 'actors: ownerKey and type backfilled';

/**
 * Indexes of `actors` (each query of {@link ActorRepository} has one on MongoDB;
 * `test/api/query-indexes.test.ts` checks it, and that each query is an index search on SQLite).
 * The low-cardinality ones are MongoDB's only (see `IndexSpec.adapters`): SQLite has the two of
 * the restore and the reconciliation, and serves findOwned from the `ownerKey` range (one user's actors).
 * - `final, quarantine, createdAtMs, _id`: {@link ActorRepository.findRestorable} (start-up).
 * - `kind, final, quarantine, createdAtMs, _id`: the live orders of the reconciliation, newest first.
 * - `kind, ownerKey` / `kind, status, ownerKey` / `kind, type, ownerKey` /
 *   `kind, status, type, ownerKey`: {@link ActorRepository.findOwned} (pages and counts) of the
 *   activity feed, open orders and the strategy list with its status / type filters.
 * - `ownerKey` (unique, sparse): one key per owned actor; SQLite's findOwned index.
 * - `partnerId, kind`: kept from before (no current query needs it).
 */
const ACTOR_INDEXES: IndexSpec[] = [
  { fields: ['final', 'quarantine', 'createdAtMs', '_id'] },
  { fields: ['kind', 'final', 'quarantine', 'createdAtMs', '_id'] },
  { fields: ['kind', 'ownerKey'], adapters: ['mongodb'] },
  { fields: ['kind', 'status', 'ownerKey'], adapters: ['mongodb'] },
  { fields: ['kind', 'type', 'ownerKey'], adapters: ['mongodb'] },
  { fields: ['kind', 'status', 'type', 'ownerKey'], adapters: ['mongodb'] },
  { fields: ['partnerId', 'kind'], adapters: ['mongodb'] },
  { fields: ['ownerKey'], unique: true, sparse: true },
];

/** The collection of actor records. */
const ACTORS = 'actors';

/** Records read at a time by {@link ActorRepository.restorable}. */
const RESTORE_PAGE = 5000;

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

  static async open(store: Store): Promise<ActorRepository> {
    const c = await store.collection<StoredRecord>(ACTORS, ACTOR_INDEXES);
    // One-time migrations, recorded as done so that later starts do not scan every record again
    // (neither query has an index). Both are idempotent: a crash before the
    // record is written runs them again.
    const migrations = await store.collection<MigrationDoc>('migrations');
    if (!(await migrations.findOne({ _id: ACTORS_MIGRATION }))) {
      // Records written before ownerKey existed get theirs now.
      for (const r of await c.find({ ownerUserId: { $ne: null }, ownerKey: { $exists: false } })) {
        await c.updateOne({ _id: r._id }, { ownerKey: ownerKeyOf(r.ownerUserId!, r.createdAtMs, r._id) });
      }
      // Records written when the view was stored: keep its type as a field, drop the rest.
      for (const r of await c.find({ type: { $exists: false } })) {
        await c.updateOne({ _id: r._id }, { type: (r.view?.type as string | undefined) ?? null, view: null });
      }
      await migrations.replaceOne({ _id: ACTORS_MIGRATION, atMs: Date.now() });
    }
    return new ActorRepository(c, store);
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
    if (record.ownerUserId !== null) stored.ownerKey = ownerKeyOf(record.ownerUserId, record.createdAtMs, record._id);
    await this.within(tx).insertOne(stored);
    // built field by field: an object spread of `stored` makes a hidden class per record
    const out: ActorRecord = {
      _id: stored._id,
      machineId: stored.machineId,
      machineVersion: stored.machineVersion,
      snapshot: stored.snapshot,
      kind: stored.kind,
      status: stored.status,
      final: stored.final,
      partnerId: stored.partnerId,
      ownerUserId: stored.ownerUserId,
      createdAtMs: stored.createdAtMs,
      updatedAtMs: stored.updatedAtMs,
      type: stored.type,
      revision: 1,
      quarantine: null,
      view,
    };
    if (stored.ownerKey !== undefined) out.ownerKey = stored.ownerKey;
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
    const next: ActorRecord = { ...current, ...patch, revision: current.revision + 1 };
    const c = this.within(tx);
    const expected = { _id: current._id, revision: current.revision };
    let matched: number;
    if (c.replaceIf) {
      // the whole record written at once (cheaper than setting most of its fields); every stored
      // field of the record read is kept (a patch field given as undefined leaves it as it was),
      // the view is never stored
      const stored: Record<string, unknown> = {};
      for (const k in next) {
        if (k === 'view') continue;
        const v = next[k as keyof ActorRecord];
        stored[k] = v === undefined ? current[k as keyof ActorRecord] : v;
      }
      matched = await c.replaceIf(expected, stored as StoredRecord);
    } else {
      // the stored fields named one by one (no object rest: slow in V8)
      const set: Record<string, unknown> = {
        snapshot: patch.snapshot,
        status: patch.status,
        final: patch.final,
        updatedAtMs: patch.updatedAtMs,
      };
      if (patch.machineVersion !== undefined) set.machineVersion = patch.machineVersion;
      set.revision = next.revision;
      matched = await c.updateOne(expected, set);
    }
    if (matched === 0) throw new RevisionConflictError(current._id, current.revision);
    return next;
  }

  /** Marks an actor whose snapshot cannot be restored; it stays stored for inspection. */
  async quarantine(id: string, reason: string, atMs: number): Promise<void> {
    await this.c.updateOne({ _id: id }, { quarantine: { reason, atMs } });
  }

  async get(id: string): Promise<ActorRecord | null> {
    const doc = await this.c.findOne({ _id: id });
    return doc ? this.withView(doc) : null;
  }

  /** The records of `ids` that exist (one query), by id. */
  async getMany(ids: string[]): Promise<Map<string, ActorRecord>> {
    const docs =
      ids.length === 1
        ? [await this.c.findOne({ _id: ids[0] })].filter((d) => d !== null)
        : await this.c.find({ _id: { $in: ids } });
    return new Map(docs.map((d) => [d._id, this.withView(d)]));
  }

  /** A record as stored, without deriving its view (the host restoring an actor). */
  async getStored(id: string): Promise<ActorRecord | null> {
    const doc = await this.c.findOne({ _id: id });
    return doc ? { ...doc, view: {} } : null;
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
    let after: { createdAtMs: number; _id: string } | null = null;
    let limit = pageSize;
    for (;;) {
      const filter: Filter = { final: false, quarantine: null };
      if (after) filter.createdAtMs = { $gte: after.createdAtMs };
      const docs = await this.c.find(filter, { sort: { createdAtMs: 1, _id: 1 }, limit });
      let fresh = 0;
      for (const d of docs) {
        // the page starts at the last one's time: those of that time up to it were read
        if (after && (d.createdAtMs < after.createdAtMs || (d.createdAtMs === after.createdAtMs && d._id <= after._id)))
          continue;
        fresh++;
        after = { createdAtMs: d.createdAtMs, _id: d._id };
        const r = d as ActorRecord;
        r.view = {};
        yield r;
      }
      if (docs.length < limit) return;
      // a page of one time only, all read already: the next one is larger, so it gets past that time
      limit = fresh === 0 ? limit * 2 : pageSize;
    }
  }

  async find(filter: Filter, options: { skip?: number; limit?: number } = {}): Promise<ActorRecord[]> {
    return this.withViews(await this.c.find(filter, { sort: { createdAtMs: -1, _id: -1 }, ...options }));
  }

  count(filter: Filter): Promise<number> {
    return this.c.count(filter);
  }

  /**
   * Actors of one user matching `filter`, newest first (an index range on `ownerKey`); `before`
   * continues after the record whose `ownerKey` it is (keyset paging).
   * @returns the page and the total count matching.
   */
  async findOwned(
    ownerUserId: string,
    filter: Filter,
    options: { skip?: number; limit?: number; before?: string } = {},
  ): Promise<{ records: ActorRecord[]; total: number }> {
    const upper = `${ownerUserId}|\uffff`;
    const { before, ...paging } = options;
    const q = {
      ...filter,
      ownerKey: { $gt: `${ownerUserId}|`, $lt: before !== undefined && before < upper ? before : upper },
    };
    const [docs, total] = await Promise.all([this.c.find(q, { sort: { ownerKey: -1 }, ...paging }), this.c.count(q)]);
    return { records: this.withViews(docs), total };
  }
}
