import { createRequire } from 'node:module';

/**
 * A unique single-field index of the embedded store on string keys, in place of NeDB's AVL tree
 * (issue 15, item 5): the actors' `ownerKey` index held a tree node (80 B) and a `[doc]` array
 * (~80 B) per entry, and its generic comparisons and rebalancing were ~5 % of arming's CPU.
 *
 * Here the documents are kept in key order in blocks of at most {@link BLOCK} entries (a sorted
 * array of keys and one of documents each): about 20 bytes per entry, no object per entry. An
 * insertion or removal is two binary searches and a splice inside one block (a block that grows
 * past {@link BLOCK} is split in two; an emptied one dropped, a small one merged into its
 * neighbour), so an insertion in the middle costs the same at a million entries as at a thousand,
 * and an ordered read after it needs no sort nor merge: a range is two binary searches and a copy.
 *
 * Same interface and semantics as NeDB's `Index` (`@seald-io/nedb/lib/indexes.js`) for a unique
 * index on one top-level field, sparse or not: `insert` / `remove` / `update` / `revertUpdate` of
 * one document or several (all or none), NeDB's `uniqueViolated` error (same message, `key`,
 * `errorType`), documents without the field left out of a sparse index, `getMatching` (one value,
 * or an array as `$in`, deduplicated by `_id` in NeDB's order), `getBetweenBounds` (`$gt` /
 * `$gte` / `$lt` / `$lte`, present as own properties, compared as NeDB's `compareThings` does,
 * whatever their type) and `getAll` in key order, `reset`. A document whose key is not a string
 * (nor absent on a sparse index: a number, null, an array, a Date...) turns the index into NeDB's
 * own (filled with what it holds, in order) for the rest of its life: exactly NeDB's behaviour,
 * at NeDB's cost, for keys the store does not write.
 */

type StoredDoc = Record<string, unknown> & { _id: unknown };

const requireCjs = createRequire(import.meta.url);

/**
 * NeDB's insertion of several documents in an index, all or none: when one is refused, those
 * inserted before it are taken out again and the refusal thrown. Shared by {@link UniqueIndex} and
 * the `_id` index.
 */
export function insertAll(docs: readonly StoredDoc[], insert: (doc: StoredDoc) => void, remove: (doc: StoredDoc) => void): void {
  for (let i = 0; i < docs.length; i++) {
    try {
      insert(docs[i]!);
    } catch (err) {
      for (let j = 0; j < i; j++) remove(docs[j]!);
      throw err;
    }
  }
}

/**
 * NeDB's update of one or several (old, new) document pairs in an index, all or none: every old document
 * out, then every new one in; when an insertion is refused, what was done is undone (the new ones
 * out, the old ones back) and the refusal thrown. Shared by {@link UniqueIndex} and the `_id` index.
 */
export function updatePairs(pairs: ReadonlyArray<{ oldDoc: StoredDoc; newDoc: StoredDoc }>, remove: (doc: StoredDoc) => void, insert: (doc: StoredDoc) => void): void {
  for (const p of pairs) remove(p.oldDoc);
  for (let i = 0; i < pairs.length; i++) {
    try {
      insert(pairs[i]!.newDoc);
    } catch (err) {
      for (let j = 0; j < i; j++) remove(pairs[j]!.newDoc);
      for (const p of pairs) insert(p.oldDoc);
      throw err;
    }
  }
}

/** NeDB's order of values (`compareThings`: by type, then strings with `<` and `>`). */
const model = requireCjs('@seald-io/nedb/lib/model.js') as { compareThings(a: unknown, b: unknown): number };

/** The parts of NeDB's `Index` this class hands work to once it holds a key that is not a string. */
interface NedbIndex {
  insert(doc: StoredDoc | StoredDoc[]): void;
  remove(doc: StoredDoc | StoredDoc[]): void;
  update(oldDoc: StoredDoc | Pair[], newDoc?: StoredDoc): void;
  revertUpdate(oldDoc: StoredDoc | Pair[], newDoc?: StoredDoc): void;
  getMatching(value: unknown): StoredDoc[];
  getBetweenBounds(query: Bounds): StoredDoc[];
  getAll(): StoredDoc[];
  tree: { search(key: unknown): StoredDoc[] };
}
const NedbIndexClass = requireCjs('@seald-io/nedb/lib/indexes.js') as new (options: { fieldName: string; unique: boolean; sparse: boolean }) => NedbIndex;

/** One document update as NeDB hands several to an index. */
export interface Pair {
  oldDoc: StoredDoc;
  newDoc: StoredDoc;
}

/** A range query on the indexed field (what NeDB's `getBetweenBounds` takes). */
export interface Bounds {
  $gt?: unknown;
  $gte?: unknown;
  $lt?: unknown;
  $lte?: unknown;
}

/** Most entries in one block (split in two beyond). */
export const BLOCK = 512;
/** Entries per block when built in bulk (room for insertions before the first split). */
const BULK_FILL = 384;

/** NeDB's order of two keys (strings compared directly). */
export function compareKeys(x: unknown, y: unknown): number {
  if (typeof x === 'string' && typeof y === 'string') return x < y ? -1 : x > y ? 1 : 0;
  return model.compareThings(x, y);
}

const has = (o: object, k: string): boolean => Object.prototype.hasOwnProperty.call(o, k);

/** NeDB's lower-bound test of a range query (`getLowerBoundMatcher` of its tree), on keys. */
function lowerMatcher(q: Bounds): (key: string) => boolean {
  const gt = has(q, '$gt');
  const gte = has(q, '$gte');
  if (!gt && !gte) return () => true;
  if (gt && gte) {
    const c = compareKeys(q.$gte, q.$gt);
    if (c > 0) return (k) => compareKeys(k, q.$gte) >= 0;
    return (k) => compareKeys(k, q.$gt) > 0;
  }
  if (gt) return (k) => compareKeys(k, q.$gt) > 0;
  return (k) => compareKeys(k, q.$gte) >= 0;
}

/** NeDB's upper-bound test of a range query (`getUpperBoundMatcher` of its tree), on keys. */
function upperMatcher(q: Bounds): (key: string) => boolean {
  const lt = has(q, '$lt');
  const lte = has(q, '$lte');
  if (!lt && !lte) return () => true;
  if (lt && lte) {
    const c = compareKeys(q.$lte, q.$lt);
    if (c < 0) return (k) => compareKeys(k, q.$lte) <= 0;
    return (k) => compareKeys(k, q.$lt) < 0;
  }
  if (lt) return (k) => compareKeys(k, q.$lt) < 0;
  return (k) => compareKeys(k, q.$lte) <= 0;
}

/** The first position of sorted `keys` (from `lo`) whose key is at least `key`. */
function lowerBound(keys: string[], key: string, lo = 0): number {
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (keys[mid]! < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The first position of `keys` where `pred` (false, then true along the keys) holds. */
function firstWhere(keys: string[], pred: (key: string) => boolean): number {
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (pred(keys[mid]!)) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/** NeDB's `uniqueViolated` error, as its tree throws it. */
function uniqueViolated(key: unknown): Error {
  const err = new Error(`Can't insert key ${JSON.stringify(key)}, it violates the unique constraint`) as Error & { key: unknown; errorType: string };
  err.key = key;
  err.errorType = 'uniqueViolated';
  return err;
}

/**
 * A unique index on one top-level field of string keys (see the file header). `fieldName` must
 * name a top-level field (no `.`, no `,`): the store gives this index only such fields.
 */
export class UniqueIndex {
  /** What NeDB reads of an index (also written by compaction). */
  readonly unique = true;
  /** Blocks of keys, each sorted, non-empty; all keys of block b below those of block b + 1. */
  private keys: string[][] = [];
  /** The documents of {@link keys}, slot for slot. */
  private docs: StoredDoc[][] = [];
  /** NeDB's own index, once a key that is not a string came (then everything goes there). */
  private nedb: NedbIndex | null = null;

  /**
   * @param fieldName - a top-level field.
   * @param sparse - documents without the field are not indexed.
   */
  constructor(
    readonly fieldName: string,
    readonly sparse: boolean,
  ) {}

  /** Entries indexed. */
  get size(): number {
    if (this.nedb) return this.nedb.getAll().length;
    let n = 0;
    for (const b of this.keys) n += b.length;
    return n;
  }

  /** Whether NeDB's own index does the work now (a key that is not a string came). */
  get delegated(): boolean {
    return this.nedb !== null;
  }

  /** Whether `doc`'s key is one this class keeps itself (a string, or absent on a sparse index). */
  private own(doc: StoredDoc): boolean {
    const key = doc[this.fieldName];
    return typeof key === 'string' || (key === undefined && this.sparse);
  }

  /** Hands everything to NeDB's own index from now on, when one of `docs` has a key of another kind. */
  private delegateFor(docs: StoredDoc[]): NedbIndex | null {
    if (this.nedb) return this.nedb;
    for (const d of docs) {
      if (!this.own(d)) {
        const ix = new NedbIndexClass({ fieldName: this.fieldName, unique: true, sparse: this.sparse });
        ix.insert(this.getAll());
        this.keys = [];
        this.docs = [];
        this.nedb = ix;
        return ix;
      }
    }
    return null;
  }

  /** Empties the index, then inserts `newData` (NeDB calls this when it loads the data file). */
  reset(newData?: StoredDoc | StoredDoc[]): void {
    this.keys = [];
    this.docs = [];
    this.nedb = null;
    if (newData) this.insert(newData);
  }

  /**
   * Fills the empty index with `data` at once (start-up: one sort instead of one insertion each).
   * @returns false (nothing changed) when a key is not a string or is there twice: the caller then
   *   uses {@link reset}, which reports the violation as NeDB does.
   */
  load(data: readonly StoredDoc[]): boolean {
    const field = this.fieldName;
    const byKey = new Map<string, StoredDoc>();
    let sorted = true;
    let last: string | null = null;
    for (const doc of data) {
      const key = doc[field];
      if (typeof key === 'string') {
        if (byKey.has(key)) return false;
        byKey.set(key, doc);
        if (last !== null && !(last < key)) sorted = false;
        last = key;
      } else if (!(key === undefined && this.sparse)) return false;
    }
    // the default sort compares strings by UTF-16 code units, as NeDB's `<` and `>` do
    const keys = [...byKey.keys()];
    if (!sorted) keys.sort();
    this.reset();
    for (let i = 0; i < keys.length; i += BULK_FILL) {
      const k = keys.slice(i, i + BULK_FILL);
      this.keys.push(k);
      this.docs.push(k.map((x) => byKey.get(x)!));
    }
    return true;
  }

  /** The block where `key` is or would go: the first whose last key is at least `key`, else the last. */
  private blockOf(key: string): number {
    const ks = this.keys;
    let lo = 0;
    let hi = ks.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const b = ks[mid]!;
      if (b[b.length - 1]! < key) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Inserts one document whose key is a string (or absent on a sparse index). */
  private insertOwn(doc: StoredDoc): void {
    const key = doc[this.fieldName];
    if (typeof key !== 'string') return; // absent, sparse
    if (this.keys.length === 0) {
      this.keys.push([key]);
      this.docs.push([doc]);
      return;
    }
    const b = this.blockOf(key);
    const kb = this.keys[b]!;
    const db = this.docs[b]!;
    const at = lowerBound(kb, key);
    if (kb[at] === key) throw uniqueViolated(key);
    if (at === kb.length) {
      kb.push(key);
      db.push(doc);
    } else {
      kb.splice(at, 0, key);
      db.splice(at, 0, doc);
    }
    if (kb.length > BLOCK) {
      const half = kb.length >>> 1;
      this.keys.splice(b + 1, 0, kb.splice(half));
      this.docs.splice(b + 1, 0, db.splice(half));
    }
  }

  /** Where `doc` is (its block and slot), or null when it is not the document indexed under its key. */
  private find(doc: StoredDoc): { b: number; at: number } | null {
    const key = doc[this.fieldName];
    if (typeof key !== 'string' || this.keys.length === 0) return null;
    const b = this.blockOf(key);
    const at = lowerBound(this.keys[b]!, key);
    return this.docs[b]![at] === doc ? { b, at } : null;
  }

  /**
   * Removes the entry under `doc`'s key (a string). As NeDB's tree does: its deletion drops a
   * node holding one document whatever that document is (only a node of several compares them),
   * so the entry goes even when another document is indexed under that key.
   */
  private removeOwn(doc: StoredDoc): void {
    const key = doc[this.fieldName];
    if (typeof key !== 'string' || this.keys.length === 0) return;
    const b = this.blockOf(key);
    const kb = this.keys[b]!;
    const db = this.docs[b]!;
    const at = lowerBound(kb, key);
    if (kb[at] !== key) return;
    kb.splice(at, 1);
    db.splice(at, 1);
    if (kb.length === 0) {
      this.keys.splice(b, 1);
      this.docs.splice(b, 1);
    } else if (kb.length < BLOCK / 4 && b + 1 < this.keys.length && kb.length + this.keys[b + 1]!.length <= BLOCK / 2) {
      // a small block takes in its small neighbour (no block of a few entries left behind)
      kb.push(...this.keys[b + 1]!);
      db.push(...this.docs[b + 1]!);
      this.keys.splice(b + 1, 1);
      this.docs.splice(b + 1, 1);
    }
  }

  /** @throws NeDB's `uniqueViolated` error (nothing inserted) when a key is taken. */
  insert(doc: StoredDoc | StoredDoc[]): void {
    const docs = Array.isArray(doc) ? doc : [doc];
    const nedb = this.delegateFor(docs);
    if (nedb) return nedb.insert(doc);
    insertAll(docs, (d) => this.insertOwn(d), (d) => this.removeOwn(d));
  }

  /** Removes the entry under `doc`'s key (or each of several's; see {@link removeOwn}). */
  remove(doc: StoredDoc | StoredDoc[]): void {
    if (this.nedb) return this.nedb.remove(doc);
    // a document whose key is not a string cannot be here (it would have handed the index to NeDB)
    if (Array.isArray(doc)) for (const d of doc) this.removeOwn(d);
    else this.removeOwn(doc);
  }

  /**
   * Replaces `oldDoc` by `newDoc` (or each pair of several, all or none).
   * @throws NeDB's `uniqueViolated` error (nothing changed) when a new key is taken.
   */
  update(oldDoc: StoredDoc | Pair[], newDoc?: StoredDoc): void {
    const involved = Array.isArray(oldDoc) ? oldDoc.flatMap((p) => [p.oldDoc, p.newDoc]) : [oldDoc, newDoc!];
    const nedb = this.delegateFor(involved);
    if (nedb) return nedb.update(oldDoc, newDoc);
    if (!Array.isArray(oldDoc) && this.replace(oldDoc, newDoc!)) return;
    updatePairs(Array.isArray(oldDoc) ? oldDoc : [{ oldDoc, newDoc: newDoc! }], (d) => this.removeOwn(d), (d) => this.insertOwn(d));
  }

  /** Undoes {@link update} (NeDB calls it when a later index refused the same update). */
  revertUpdate(oldDoc: StoredDoc | Pair[], newDoc?: StoredDoc): void {
    if (Array.isArray(oldDoc)) this.update(oldDoc.map((p) => ({ oldDoc: p.newDoc, newDoc: p.oldDoc })));
    else this.update(newDoc!, oldDoc);
  }

  /** Whether `doc` is the document indexed under its key (or, sparse, has no key). */
  holds(doc: StoredDoc): boolean {
    const key = doc[this.fieldName];
    if (key === undefined && this.sparse) return true;
    if (this.nedb) return this.nedb.tree.search(key).includes(doc);
    return this.find(doc) !== null;
  }

  /**
   * Puts `newDoc` in `oldDoc`'s slot when both have the same key and `oldDoc` is indexed (an
   * update that leaves the key alone: no removal and insertion); absent on a sparse index: true.
   * @returns false (nothing changed) otherwise.
   */
  replace(oldDoc: StoredDoc, newDoc: StoredDoc): boolean {
    const key = oldDoc[this.fieldName];
    if (key !== newDoc[this.fieldName]) return false;
    if (key === undefined && this.sparse) return true;
    if (this.nedb) {
      if (typeof key !== 'string') return false;
      const data = this.nedb.tree.search(key);
      const at = data.indexOf(oldDoc);
      if (at < 0) return false;
      data[at] = newDoc;
      return true;
    }
    const hit = this.find(oldDoc);
    if (hit === null) return false;
    this.docs[hit.b]![hit.at] = newDoc;
    return true;
  }

  /** The document whose key is `value` (as NeDB's tree finds it), or those of the values of an array (each `_id` once, in NeDB's order). */
  getMatching(value: unknown): StoredDoc[] {
    if (this.nedb) return this.nedb.getMatching(value);
    if (!Array.isArray(value)) {
      if (typeof value !== 'string' || this.keys.length === 0) return []; // only a string equals a string key
      const b = this.blockOf(value);
      const at = lowerBound(this.keys[b]!, value);
      return this.keys[b]![at] === value ? [this.docs[b]![at]!] : [];
    }
    // NeDB gathers them in a plain object by `_id`: its key order
    const byId: Record<string, StoredDoc> = {};
    for (const v of value) for (const d of this.getMatching(v)) byId[d._id as string] = d;
    return Object.keys(byId).map((id) => byId[id]!);
  }

  /** Documents whose key lies within the bounds, in key order. */
  getBetweenBounds(query: Bounds): StoredDoc[] {
    if (this.nedb) return this.nedb.getBetweenBounds(query);
    const lower = lowerMatcher(query);
    const upper = upperMatcher(query);
    const from = this.position(lower);
    const to = this.position((k) => !upper(k));
    const out: StoredDoc[] = [];
    for (let b = from.b; b < this.docs.length && b <= to.b; b++) {
      const db = this.docs[b]!;
      const start = b === from.b ? from.at : 0;
      const end = b === to.b ? to.at : db.length;
      for (let i = start; i < end; i++) out.push(db[i]!);
    }
    return out;
  }

  /**
   * The documents whose key lies within the bounds, one at a time, in key order (`descending`:
   * the reverse), without gathering them first: what a page sorted on this field reads.
   * Only while {@link delegated} is false (the caller checks); the index must not change meanwhile.
   */
  *walk(query: Bounds, descending: boolean): Generator<StoredDoc, void, undefined> {
    const upper = upperMatcher(query);
    const from = this.position(lowerMatcher(query));
    const to = this.position((k) => !upper(k));
    const docs = this.docs;
    if (from.b > to.b || (from.b === to.b && from.at >= to.at)) return;
    if (!descending) {
      for (let b = from.b; b < docs.length && b <= to.b; b++) {
        const db = docs[b]!;
        const end = b === to.b ? to.at : db.length;
        for (let i = b === from.b ? from.at : 0; i < end; i++) yield db[i]!;
      }
      return;
    }
    for (let b = Math.min(to.b, docs.length - 1); b >= from.b; b--) {
      const db = docs[b]!;
      const start = b === from.b ? from.at : 0;
      for (let i = (b === to.b ? to.at : db.length) - 1; i >= start; i--) yield db[i]!;
    }
  }

  /** The first position (block, slot) in key order where `pred` (false, then true) holds; past the end when none. */
  private position(pred: (key: string) => boolean): { b: number; at: number } {
    const ks = this.keys;
    let lo = 0;
    let hi = ks.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const kb = ks[mid]!;
      if (pred(kb[kb.length - 1]!)) hi = mid;
      else lo = mid + 1;
    }
    if (lo === ks.length) return { b: lo, at: 0 };
    return { b: lo, at: firstWhere(ks[lo]!, pred) };
  }

  /** Every document, in key order (a fresh array). */
  getAll(): StoredDoc[] {
    if (this.nedb) return this.nedb.getAll();
    const out: StoredDoc[] = [];
    for (const db of this.docs) for (const d of db) out.push(d);
    return out;
  }
}

/** Whether the embedded store gives an index of these options a {@link UniqueIndex}: unique, on one top-level field other than `_id`. */
export function takesUniqueIndex(options: { fieldName: unknown; unique?: boolean }): options is { fieldName: string; unique: true; sparse?: boolean } {
  const f = options.fieldName;
  return options.unique === true && typeof f === 'string' && f !== '_id' && f !== '' && !f.includes('.') && !f.includes(',');
}
