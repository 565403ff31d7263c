/**
 * Fault injection for the store port, so that failure tests use the real paths: a {@link Store}
 * that forwards to a real one and fails or delays the operations a test chooses — the Nth write of a
 * collection, writes matching a predicate, or writes picked at random from a seed — switchable on
 * and off at runtime. Reads are forwarded untouched unless a rule names a read operation.
 *
 *   const store = new FaultyStore(await SqliteStore.open(null));
 *   const svc = await startTestService({ store });
 *   const rule = store.failNth('actors', 'updateOne', 2);   // the 2nd actors update from now fails
 *   store.failRandomly({ seed: 7, probability: 0.1, collections: ['actors', 'venueJournal'] });
 *   store.enabled = false;                                    // every fault off (rules are kept)
 *   rule.remove();
 *
 * A failed write throws {@link InjectedFault} and, by default, changes nothing (`when: 'before'`);
 * with `when: 'after'` the write is applied and then reported as failed (an ambiguous write: the
 * caller cannot tell whether it happened). {@link FaultyStore.hold} keeps a matching operation
 * waiting until the test releases it (then it runs, or fails); `{ keepOpen: true }` leaves the
 * wrapped store open on close() (a restart of the service on the same store).
 */
import fs from 'node:fs/promises';
import type {
  Collection,
  CollectionLayout,
  Doc,
  Filter,
  FindOptions,
  IndexSpec,
  Store,
  UnitOfWork,
} from '../../../engine/store/port.js';

export type WriteOp = 'insertOne' | 'insertMany' | 'insertMissing' | 'updateOne' | 'replaceOne' | 'deleteMany';
export type ReadOp = 'findOne' | 'find' | 'count';
export type StoreOp = WriteOp | ReadOp;
export const WRITE_OPS: readonly WriteOp[] = [
  'insertOne',
  'insertMany',
  'insertMissing',
  'updateOne',
  'replaceOne',
  'deleteMany',
];

/** One operation as a rule sees it. */
export interface OpInfo {
  collection: string;
  op: StoreOp;
  /** insertOne / replaceOne: the document. */
  doc?: Doc;
  /** updateOne / deleteMany / reads: the filter. */
  filter?: Filter;
  /** updateOne: the fields set. */
  set?: Record<string, unknown>;
}

/** The error an injected failure throws. */
export class InjectedFault extends Error {
  constructor(
    readonly info: OpInfo,
    readonly rule: string,
    message?: string,
  ) {
    super(message ?? `injected fault (${rule}): ${info.op} on ${info.collection}`);
    this.name = 'InjectedFault';
  }
}

export interface FaultRule {
  /** Name for reports (default: derived). */
  name?: string;
  /** Collections the rule applies to (default: all). */
  collections?: string[];
  /** Operations the rule applies to (default: every write). */
  ops?: StoreOp[];
  /** Extra condition on the operation. */
  where?: (info: OpInfo) => boolean;
  /** Fire on these (1-based) matching operations counted from when the rule was added; default every one. */
  nth?: number[];
  /** Fire with this probability per matching operation (deterministic from `seed`). */
  probability?: number;
  seed?: number;
  /** Fire at most this many times (default unlimited). */
  times?: number;
  /** What to do: fail (default), delay by `delayMs` then proceed, or hold until released ({@link FaultyStore.hold}). */
  effect?: 'fail' | 'delay' | 'hold';
  delayMs?: number;
  /**
   * A failure before the write (nothing written; default) or after it (written, reported failed); a hold before
   * the operation (default) or after it (it ran, its caller waits for the release with the result).
   */
  when?: 'before' | 'after';
  /** The failure's message (default: names the rule, the operation and the collection). */
  message?: (info: OpInfo) => string;
}

/** A rule in force, with what it matched and fired. */
export interface ActiveRule {
  readonly rule: FaultRule;
  /** Matching operations seen while enabled. */
  readonly matched: number;
  /** Times it fired. */
  readonly fired: number;
  /** `_id` of the document of each operation it fired on (the document's, or the filter's), in order. */
  readonly hits: readonly string[];
  remove(): void;
}

/** A hold in force: the operations it caught wait until {@link release}. */
export interface HeldRule extends ActiveRule {
  /** Lets the held operations go on; with `fail`, they fail ({@link InjectedFault}) instead. */
  release(fail?: boolean): void;
}

/** mulberry32: a small seeded PRNG, enough for reproducible fault schedules. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

class Active implements ActiveRule {
  matched = 0;
  fired = 0;
  readonly hits: string[] = [];
  /** effect 'hold': resolves (go on) or rejects (fail) when released. */
  gate: Promise<void> | null = null;
  readonly random: (() => number) | null;
  constructor(
    readonly rule: FaultRule,
    private readonly owner: FaultyStore,
  ) {
    this.random = rule.probability !== undefined ? prng(rule.seed ?? 1) : null;
  }
  get label(): string {
    return (
      this.rule.name ??
      `${this.rule.effect ?? 'fail'} ${this.rule.ops?.join('/') ?? 'writes'} ` +
        `on ${this.rule.collections?.join('/') ?? 'any collection'}` +
        (this.rule.nth ? ` #${this.rule.nth.join(',')}` : '')
    );
  }
  matches(info: OpInfo): boolean {
    const r = this.rule;
    if (r.collections && !r.collections.includes(info.collection)) return false;
    if (!((r.ops ?? WRITE_OPS) as readonly StoreOp[]).includes(info.op)) return false;
    return !r.where || r.where(info);
  }
  /** Counts a matching operation; true when the rule fires on it. */
  decide(): boolean {
    const r = this.rule;
    this.matched++;
    if (r.times !== undefined && this.fired >= r.times) return false;
    if (r.nth && !r.nth.includes(this.matched)) return false;
    if (this.random && this.random() >= r.probability!) return false;
    this.fired++;
    return true;
  }
  remove(): void {
    this.owner.remove(this);
  }
}

/** A Store that injects faults into the operations of a wrapped store. */
export class FaultyStore implements Store {
  /** Master switch: when false every operation is forwarded untouched (rules keep their counts). */
  enabled = true;
  /** Every fault that fired, in order. */
  readonly log: Array<{ info: OpInfo; rule: string; effect: 'fail' | 'delay' | 'hold' }> = [];
  /** Operations forwarded per `collection:op`. */
  readonly counts = new Map<string, number>();
  private rules: Active[] = [];
  private readonly wrapped = new Map<string, Collection<Doc>>();

  /** `keepOpen`: close() leaves `inner` open (the service restarted on the same store). */
  constructor(
    readonly inner: Store,
    private readonly options: { keepOpen?: boolean } = {},
  ) {}

  get adapter(): Store['adapter'] {
    return this.inner.adapter;
  }
  get location(): string {
    return this.inner.location;
  }

  /** Adds a rule; returns a handle with its counts and `remove()`. */
  add(rule: FaultRule): ActiveRule {
    const a = new Active(rule, this);
    this.rules.push(a);
    return a;
  }

  /** The `n`th (1-based, counted from now) `op` on `collection` fails. */
  failNth(collection: string, op: StoreOp, n: number | number[], extra: Partial<FaultRule> = {}): ActiveRule {
    return this.add({ collections: [collection], ops: [op], nth: Array.isArray(n) ? n : [n], ...extra });
  }

  /** Every write (or `ops`) matching `where` fails, until removed or `times` ran out. */
  failWhen(where: (info: OpInfo) => boolean, extra: Partial<FaultRule> = {}): ActiveRule {
    return this.add({ where, ...extra });
  }

  /** Writes of `collections` fail with `probability`, reproducibly from `seed`. */
  failRandomly(o: {
    seed: number;
    probability: number;
    collections?: string[];
    ops?: StoreOp[];
    when?: 'before' | 'after';
  }): ActiveRule {
    return this.add({ name: `random(seed ${o.seed}, p ${o.probability})`, ...o });
  }

  /** Matching operations are delayed by `delayMs` (real time) before they run. */
  delay(delayMs: number, extra: Partial<FaultRule> = {}): ActiveRule {
    return this.add({ effect: 'delay', delayMs, ...extra });
  }

  /**
   * The next `times` (default 1) operations matching `extra` (every write by default) wait until
   * the handle's `release()`; released with `fail`, they fail instead of running. With `when: 'after'`
   * they run first and their callers wait (a read that saw the store as it was before a later write).
   */
  hold(extra: Partial<FaultRule> = {}): HeldRule {
    let release!: (fail?: boolean) => void;
    const gate = new Promise<void>(
      (resolve, reject) => (release = (fail) => (fail ? reject(new Error('released as failed')) : resolve())),
    );
    gate.catch(() => undefined);
    const a = new Active({ times: 1, ...extra, effect: 'hold' }, this);
    a.gate = gate;
    this.rules.push(a);
    return Object.assign(a, { release });
  }

  /** Removes every rule. */
  clear(): void {
    this.rules = [];
  }

  /** @internal */
  remove(a: Active): void {
    this.rules = this.rules.filter((r) => r !== a);
  }

  /** Faults that fired on `collection` (all when omitted). */
  faults(collection?: string): number {
    return this.log.filter((l) => l.effect === 'fail' && (!collection || l.info.collection === collection)).length;
  }

  /** Runs one operation through the rules. */
  async run<R>(info: OpInfo, forward: () => Promise<R>): Promise<R> {
    const key = `${info.collection}:${info.op}`;
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
    if (!this.enabled) return forward();
    let failAfter: Active | null = null;
    const holdsAfter: Active[] = [];
    for (const a of [...this.rules]) {
      if (!a.matches(info) || !a.decide()) continue;
      const effect = a.rule.effect ?? 'fail';
      this.log.push({ info, rule: a.label, effect });
      a.hits.push(String(info.doc?._id ?? info.filter?._id));
      if (effect === 'delay') await new Promise((r) => setTimeout(r, a.rule.delayMs ?? 0));
      else if (effect === 'hold' && a.rule.when === 'after') holdsAfter.push(a);
      else if (effect === 'hold')
        await a.gate!.catch(() => Promise.reject(new InjectedFault(info, a.label, a.rule.message?.(info))));
      else if ((a.rule.when ?? 'before') === 'before') throw new InjectedFault(info, a.label, a.rule.message?.(info));
      else failAfter ??= a;
    }
    const result = await forward();
    for (const a of holdsAfter)
      await a.gate!.catch(() => Promise.reject(new InjectedFault(info, a.label, a.rule.message?.(info))));
    if (failAfter) throw new InjectedFault(info, failAfter.label, failAfter.rule.message?.(info));
    return result;
  }

  async collection<T extends Doc>(
    name: string,
    indexes?: IndexSpec[],
    layout?: CollectionLayout,
  ): Promise<Collection<T>> {
    const inner = await this.inner.collection<T>(name, indexes, layout);
    let c = this.wrapped.get(name) as Collection<T> | undefined;
    if (!c) {
      c = this.wrap(name, inner);
      this.wrapped.set(name, c as unknown as Collection<Doc>);
    }
    return c;
  }

  /** `inner` with its operations run through the rules. */
  private wrap<T extends Doc>(name: string, inner: Collection<T>): Collection<T> {
    return {
      insertOne: (doc) => this.run({ collection: name, op: 'insertOne', doc }, () => inner.insertOne(doc)),
      // several journal entries in one write: a rule sees the first document
      ...(inner.insertMany
        ? {
            insertMany: (docs: T[]) =>
              this.run({ collection: name, op: 'insertMany', doc: docs[0] }, () => inner.insertMany!(docs)),
          }
        : {}),
      insertMissing: (docs: T[]) =>
        this.run({ collection: name, op: 'insertMissing', doc: docs[0] }, () => inner.insertMissing(docs)),
      findOne: (filter) => this.run({ collection: name, op: 'findOne', filter }, () => inner.findOne(filter)),
      find: (filter, options?: FindOptions) =>
        this.run({ collection: name, op: 'find', filter }, () => inner.find(filter, options)),
      count: (filter) => this.run({ collection: name, op: 'count', filter }, () => inner.count(filter)),
      updateOne: (filter, set, options) =>
        this.run({ collection: name, op: 'updateOne', filter, set }, () => inner.updateOne(filter, set, options)),
      replaceOne: (doc) => this.run({ collection: name, op: 'replaceOne', doc }, () => inner.replaceOne(doc)),
      deleteMany: (filter) => this.run({ collection: name, op: 'deleteMany', filter }, () => inner.deleteMany(filter)),
    };
  }

  /** The inner store's transaction, its collections' operations run through the rules too. */
  transaction<R>(fn: (tx: UnitOfWork) => Promise<R>): Promise<R> {
    return this.inner.transaction((tx) =>
      fn({ collection: <T extends Doc>(name: string) => this.wrap(name, tx.collection<T>(name)) }),
    );
  }

  ping(): Promise<boolean> {
    return this.inner.ping();
  }

  writeFailure(): string | null {
    return this.inner.writeFailure();
  }

  close(): Promise<void> {
    return this.options.keepOpen ? Promise.resolve() : this.inner.close();
  }
}

/**
 * The prototype of Node's `FileHandle` (fs/promises), whose `datasync` the SQLite store calls for
 * each fsync of its WAL: a test spies on it (`vi.spyOn(await fileHandles(), 'datasync')`) to make
 * fsyncs slow or fail, as a loaded or failing disk does. Every file handle of the process shares it.
 */
export async function fileHandles(): Promise<{ datasync(this: unknown): Promise<void> }> {
  const handle = await fs.open(process.execPath, 'r');
  try {
    return Object.getPrototypeOf(handle) as { datasync(this: unknown): Promise<void> };
  } finally {
    await handle.close();
  }
}
