import { createRequire } from 'node:module';
import fs from 'node:fs/promises';
import { constants as bufferConstants, isAscii, isUtf8 } from 'node:buffer';
import path from 'node:path';
import { UniqueIndex, takesUniqueIndex } from './unique-index.js';

/**
 * A faster `loadDatabase` for an on-disk NeDB datastore (issue 15, item 5: NeDB took 86.6 s to
 * load a million actor records). The result is what NeDB's own load gives — the same documents
 * in the same indexes, the same file rewritten (compacted) afterwards, the same refusal when too
 * much of the file is corrupt — but:
 * - the file is read in large chunks and split into lines at once (NeDB streams it through a line
 *   splitter and awaits a promise per line);
 * - a line without `$$date` (and without `\u` escapes) is parsed by plain `JSON.parse`, without
 *   NeDB's reviver (which is a no-op on such a line);
 * - an index on one top-level field whose keys are all strings is built from the sorted keys as a
 *   balanced AVL tree (instead of one tree insertion per document); any other index (compound,
 *   dotted, non-string keys, a unique-key violation) is filled by NeDB's own `Index.reset`;
 * - the compaction after the load is skipped when the file already holds exactly what it would
 *   write (a file compacted on close); otherwise each document without Dates is written as the
 *   bytes of the line it was read from, the rest serialized as NeDB does.
 *
 * "The same file" holds for lines as NeDB and the embedded store write them (`JSON.stringify`
 * output, which `JSON.stringify` of the parsed line reproduces byte for byte); a hand-edited line
 * (extra spaces, say) keeps its spelling where NeDB would rewrite it: the same document either way.
 * Only for datastores without `beforeDeserialization` / `afterSerialization` hooks (the embedded
 * store uses none). Measured on a million actor records (the bench's, 1.5 GB): a compacted file
 * loads in about 20 s where NeDB took 86.6 s; a file after `kill -9` (needing the rewrite) about
 * 21 s of CPU.
 */

const requireCjs = createRequire(import.meta.url);

/** NeDB's model functions used here. */
const model = requireCjs('@seald-io/nedb/lib/model.js') as {
  serialize(doc: unknown): string;
  deserialize(line: string): unknown;
  compareThings(a: unknown, b: unknown): number;
};

/** NeDB's storage helpers (same crash-safe file handling as NeDB's load). */
const storage = requireCjs('@seald-io/nedb/lib/storage.js') as {
  ensureParentDirectoryExistsAsync(filename: string, mode: number): Promise<void>;
  ensureDatafileIntegrityAsync(filename: string, mode?: number): Promise<void>;
  flushToStorageAsync(options: { filename: string; isDir?: boolean; mode?: number }): Promise<void>;
  existsAsync(filename: string): Promise<boolean>;
  renameAsync(from: string, to: string): Promise<void>;
};

/** NeDB's Index class. */
const NedbIndex = requireCjs('@seald-io/nedb/lib/indexes.js') as new (options: RawIndex) => IndexLike;

/** A `$$indexCreated` line's content. */
interface RawIndex {
  fieldName: string;
  unique?: boolean;
  sparse?: boolean;
}

/** One AVL tree node of `@seald-io/binary-search-tree` (the fields this file sets). */
interface AvlNode {
  key?: unknown;
  data: unknown[];
  left: AvlNode | null;
  right: AvlNode | null;
  parent: AvlNode | null;
  height?: number;
  constructor: new (options: Record<string, unknown>) => AvlNode;
}

/** The parts of NeDB's Index this loader uses. */
interface IndexLike {
  fieldName: string;
  _fields: string[];
  unique: boolean;
  sparse: boolean;
  treeOptions: Record<string, unknown>;
  tree: { tree: AvlNode };
  reset(data?: unknown[]): void;
}

/** The parts of a NeDB datastore this loader uses. */
interface DatastoreLike {
  inMemoryOnly: boolean;
  indexes: Record<string, IndexLike>;
  executor: { pushAsync<R>(task: () => Promise<R>, forceQueuing?: boolean): Promise<R>; processBuffer(): void };
  persistence: {
    filename: string;
    corruptAlertThreshold: number;
    modes: { fileMode: number; dirMode: number };
  };
  getAllData(): unknown[];
  emit(event: string): void;
  _resetIndexes(data?: unknown[]): void;
}

/** Bytes read at a time. */
const CHUNK_BYTES = 32 * 1024 * 1024;
/** NeDB's line splitter's line boundaries (byline: Unicode TR18), in a chunk of the file. */
const LINE_BREAKS = /\r\n|[\n\v\f\r\x85\u2028\u2029]/g;
/** The boundaries other than `\n` (a piece without any is split on `\n` alone). */
const OTHER_BREAKS = /[\v\f\r\x85\u2028\u2029]/;

/** What the data file holds once read: NeDB's `treatRawStreamAsync` result. */
export interface TreatedData {
  /** Live documents, in the order of NeDB's `Object.values(dataById)` (array-index ids first, ascending; then first insertion). */
  data: Record<string, unknown>[];
  /** Indexes declared by `$$indexCreated` lines (minus `$$indexRemoved`), by field name. */
  indexes: Record<string, RawIndex>;
  /**
   * When the file is already what NeDB's compaction writes (one `\n`-terminated line per live
   * document in ascending string `_id` order, nothing overridden, deleted, blank or corrupt, then
   * the index lines): those index lines, to compare with the datastore's indexes; otherwise null.
   */
  compactIndexLines: string[] | null;
  /**
   * Where each live document's line lies in the file (byte offsets `starts[k]` to `ends[k]`, −1
   * when unknown), `k` by `_id` key: the compaction copies those bytes instead of serializing.
   */
  lines: { byKey: Map<string, number>; docs: Record<string, unknown>[]; starts: number[]; ends: number[] };
}

/** Whether `key` is an array index (such keys come first, ascending, in a plain object's key order). */
function isArrayIndex(key: string): boolean {
  const c = key.charCodeAt(0);
  if (c < 48 || c > 57) return false;
  const n = Number(key);
  return n >>> 0 === n && n !== 4294967295 && String(n) === key;
}

/**
 * Reads and interprets a NeDB data file exactly as NeDB's `treatRawStreamAsync` does: lines split
 * at every Unicode line boundary, empty lines skipped, later lines override earlier ones by
 * `_id`, `$$deleted` tombstones remove, `$$indexCreated` / `$$indexRemoved` lines declare indexes,
 * dates revived from `{"$$date": ms}`; lines that do not parse (a torn last line) count as corrupt.
 * @param chunkBytes - bytes read at a time (a line longer than that grows the buffer).
 * @throws the error NeDB throws when the corrupt share exceeds `corruptAlertThreshold` (0 to 1).
 */
export async function readDatafile(filename: string, corruptAlertThreshold: number, chunkBytes = CHUNK_BYTES): Promise<TreatedData> {
  // NeDB keeps the documents in a plain object by `_id` (coerced to a string); a Map in the same
  // insertion order is several times faster with a million keys, and the plain object's order is
  // restored at the end (array-index keys first; `__proto__` sets the object's prototype instead)
  // (values: the line number k of the document's last line, into `docs`, `starts`, `ends`)
  const dataById = new Map<string, number>();
  const docs: Record<string, unknown>[] = [];
  const starts: number[] = [];
  const ends: number[] = [];
  const indexes: Record<string, RawIndex> = {};
  let corruptItems = 0;
  let dataLength = 0;
  let compact = true;
  let lastId = '';
  const indexLines: string[] = [];

  /** One line; `start`, `end`: its bytes in the file (−1: not known). */
  const treat = (line: string, start: number, end: number): void => {
    if (line === '') {
      compact = false;
      return;
    }
    try {
      // NeDB's reviver only acts on `$$date` keys; a line without them (and without escapes that
      // could spell one) parses to the same value without it
      const doc = (line.includes('$$date') || line.includes('\\u') ? model.deserialize(line) : JSON.parse(line)) as Record<string, unknown> & {
        $$indexCreated?: RawIndex;
      };
      const id = doc._id;
      if (id) {
        const key = typeof id === 'string' ? id : String(id as string);
        if (typeof id !== 'string' || indexLines.length || !(id > lastId)) compact = false;
        lastId = key;
        if (doc.$$deleted === true) {
          compact = false;
          dataById.delete(key);
        } else if (key !== '__proto__') {
          dataById.set(key, docs.length);
          docs.push(doc);
          starts.push(start);
          ends.push(end);
        }
        else compact = false;
      } else if (doc.$$indexCreated && doc.$$indexCreated.fieldName != null) {
        indexes[doc.$$indexCreated.fieldName] = doc.$$indexCreated;
        indexLines.push(line);
      } else if (typeof doc.$$indexRemoved === 'string') {
        delete indexes[doc.$$indexRemoved];
        compact = false;
      } else compact = false;
    } catch {
      corruptItems += 1;
      compact = false;
    }
    dataLength++;
  };

  // the file is cut into pieces after a `\n` byte (never inside a UTF-8 sequence), each decoded
  // whole: Latin-1 (a plain copy) when it is ASCII, UTF-8 otherwise
  const handle = await fs.open(filename, 'r');
  try {
    let buffer = Buffer.allocUnsafe(Math.min(chunkBytes, (await handle.stat()).size + 1)); // small files: a small buffer
    let have = 0;
    let consumed = 0; // file offset of buffer[0]
    for (;;) {
      if (have === buffer.length) {
        const larger = Buffer.allocUnsafe(buffer.length * 2);
        buffer.copy(larger, 0, 0, have);
        buffer = larger;
      }
      const { bytesRead } = await handle.read(buffer, have, buffer.length - have, null);
      const end = have + bytesRead;
      const cut = bytesRead === 0 ? end - 1 : buffer.lastIndexOf(0x0a, end - 1);
      if (cut < 0 && bytesRead > 0) {
        have = end;
        continue;
      }
      const piece = buffer.subarray(0, cut + 1);
      const ascii = isAscii(piece);
      const text = ascii ? piece.toString('latin1') : piece.toString('utf8');
      const other = ascii ? piece.includes(0x0b) || piece.includes(0x0c) || piece.includes(0x0d) : OTHER_BREAKS.test(text);
      if (other) compact = false;
      const lines = other ? text.split(LINE_BREAKS) : text.split('\n');
      // byte offsets of the lines: known when split on `\n` alone (and valid UTF-8)
      const known = !other && (ascii || isUtf8(piece));
      let at = consumed;
      for (let i = 0; i < lines.length; i++) {
        const line = lines[i]!;
        if (i === lines.length - 1) {
          // after the final `\n` of a piece: '' (or, at the end of the file, a last line without one)
          if (bytesRead === 0 && line !== '') {
            compact = false;
            treat(line, known ? at : -1, known ? consumed + piece.length : -1);
          }
          break;
        }
        const next = known ? at + (ascii ? line.length : Buffer.byteLength(line)) : -1;
        treat(line, known ? at : -1, next);
        at = next + 1;
      }
      if (bytesRead === 0) break;
      buffer.copy(buffer, 0, cut + 1, end);
      have = end - cut - 1;
      consumed += cut + 1;
    }
  } finally {
    await handle.close();
  }

  if (dataLength > 0) {
    const corruptionRate = corruptItems / dataLength;
    if (corruptionRate > corruptAlertThreshold) {
      const error = new Error(
        `${Math.floor(100 * corruptionRate)}% of the data file is corrupt, more than given corruptAlertThreshold (${Math.floor(100 * corruptAlertThreshold)}%). Cautiously refusing to start NeDB to prevent dataloss.`,
      ) as Error & { corruptionRate: number; corruptItems: number; dataLength: number };
      error.corruptionRate = corruptionRate;
      error.corruptItems = corruptItems;
      error.dataLength = dataLength;
      throw error;
    }
  }
  const data: Record<string, unknown>[] = [];
  const indexKeys: string[] = [];
  for (const key of dataById.keys()) if (isArrayIndex(key)) indexKeys.push(key);
  if (indexKeys.length) {
    indexKeys.sort((a, b) => Number(a) - Number(b));
    for (const key of indexKeys) data.push(docs[dataById.get(key)!]!);
    for (const [key, k] of dataById) if (!isArrayIndex(key)) data.push(docs[k]!);
  } else for (const k of dataById.values()) data.push(docs[k]!);
  return { data, indexes, compactIndexLines: compact ? indexLines : null, lines: { byKey: dataById, docs, starts, ends } };
}

/**
 * Fills `ix` with `data` as a balanced AVL tree built from the sorted keys, when `ix` is on one
 * top-level field and every document's key is a string (or absent, on a sparse index).
 * @returns false (nothing changed) when the index is not of that shape, or a unique index meets
 *   a key twice: the caller then lets NeDB's `Index.reset` fill it (and report the violation).
 */
export function bulkBuildIndex(ix: IndexLike, data: Record<string, unknown>[]): boolean {
  const field = ix.fieldName;
  if (ix._fields.length !== 1 || field.includes('.')) return false;
  const keys: string[] = [];
  const docs: Record<string, unknown>[] = [];
  for (const doc of data) {
    const key = doc[field];
    if (typeof key === 'string') {
      keys.push(key);
      docs.push(doc);
    } else if (!(key === undefined && ix.sparse)) return false;
  }
  // equal keys keep the insertion order NeDB's tree gives them (in one node's data)
  let groupKeys: string[] = [];
  let groupDocs: unknown[][] = [];
  let sorted = true;
  for (let i = 1; i < keys.length; i++) {
    if (keys[i - 1]! > keys[i]!) {
      sorted = false;
      break;
    }
  }
  if (sorted) {
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i]!;
      if (groupKeys.length && groupKeys[groupKeys.length - 1] === k) {
        if (ix.unique) return false;
        groupDocs[groupDocs.length - 1]!.push(docs[i]);
      } else {
        groupKeys.push(k);
        groupDocs.push([docs[i]]);
      }
    }
  } else {
    const groups = new Map<string, unknown[]>();
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i]!;
      const g = groups.get(k);
      if (g === undefined) groups.set(k, [docs[i]]);
      else if (ix.unique) return false;
      else g.push(docs[i]);
    }
    // the default sort compares strings by UTF-16 code units, as NeDB's `<` and `>` do
    groupKeys = [...groups.keys()].sort();
    groupDocs = groupKeys.map((k) => groups.get(k)!);
  }
  ix.reset();
  if (groupKeys.length === 0) return true;
  const Node = ix.tree.tree.constructor;
  // one options object for every node (the node constructor copies what it needs from it)
  const options: Record<string, unknown> = { ...ix.treeOptions, parent: null, key: undefined };
  const build = (lo: number, hi: number, parent: AvlNode | null): AvlNode | null => {
    if (lo > hi) return null;
    const mid = (lo + hi) >>> 1;
    options.parent = parent;
    options.key = groupKeys[mid];
    const node = new Node(options);
    node.data = groupDocs[mid]!;
    node.left = build(lo, mid - 1, node);
    node.right = build(mid + 1, hi, node);
    node.height = 1 + Math.max(node.left?.height ?? 0, node.right?.height ?? 0);
    return node;
  };
  ix.tree.tree = build(0, groupKeys.length - 1, null)!;
  return true;
}

/** Whether `v` holds neither a Date nor a key NeDB's `serialize` refuses (then it equals `JSON.stringify`). */
function plainValid(v: unknown): boolean {
  if (v === null || typeof v !== 'object') return true;
  if (v instanceof Date || typeof (v as { getTime?: unknown }).getTime === 'function') return false;
  if (Array.isArray(v)) {
    for (const x of v) if (!plainValid(x)) return false;
    return true;
  }
  for (const k in v) {
    if (k.charCodeAt(0) === 36 /* $ */ || k.includes('.')) return false;
    if (!plainValid((v as Record<string, unknown>)[k])) return false;
  }
  return true;
}

/** One data-file line as NeDB's `serialize` writes it (and throws as it throws). */
function serializeDoc(doc: unknown): string {
  return plainValid(doc) ? JSON.stringify(doc) : model.serialize(doc);
}

/**
 * Whether NeDB's compaction would write the file as it is: {@link TreatedData.compactIndexLines}
 * are the datastore's index lines, and every document serializes as `JSON.stringify` does (no
 * Dates, no key NeDB's `serialize` refuses; each line was read as such a document, and
 * `JSON.stringify` gives back a line it wrote).
 */
function alreadyCompact(ds: DatastoreLike, treated: TreatedData): boolean {
  const lines = treated.compactIndexLines;
  if (!lines) return false;
  const expected = Object.keys(ds.indexes)
    .filter((f) => f !== '_id')
    .map((f) => model.serialize({ $$indexCreated: { fieldName: ds.indexes[f]!.fieldName, unique: ds.indexes[f]!.unique, sparse: ds.indexes[f]!.sparse } }));
  if (expected.length !== lines.length || expected.some((l, i) => l !== lines[i])) return false;
  for (const doc of treated.data) if (!plainValid(doc)) return false;
  return true;
}

/** Bytes written at a time by {@link writeCompacted}. */
const WRITE_BLOCK_BYTES = 8 * 1024 * 1024;
const NEWLINE = Buffer.from('\n');

/**
 * NeDB's `persistCachedDatabaseAsync` (the compaction after a load): every document in `_id`
 * order, then one `$$indexCreated` line per index but `_id`, written crash-safe as NeDB's
 * `crashSafeWriteFileLinesAsync` does (flush, temporary file, flush, rename, flush). A document
 * read from a line whose bytes are known (`treated.lines`) and that serializes as plain JSON is
 * written as that line's bytes (what `JSON.stringify` gives back for a line it wrote, as NeDB and
 * this store write them), read again from the file; any other is serialized as NeDB does.
 */
export async function writeCompacted(ds: DatastoreLike, treated?: TreatedData): Promise<void> {
  const filename = ds.persistence.filename;
  const modes = ds.persistence.modes;
  let bytes: Buffer | null = null;
  const lineOf = new Map<unknown, number>();
  if (treated) {
    const size = (await fs.stat(filename)).size;
    if (size <= bufferConstants.MAX_LENGTH) {
      bytes = await fs.readFile(filename);
      const { byKey, docs, starts } = treated.lines;
      for (const k of byKey.values()) if (starts[k]! >= 0) lineOf.set(docs[k], k);
    }
  }
  const tempFilename = `${filename}~`;
  await storage.flushToStorageAsync({ filename: path.dirname(filename), isDir: true, mode: modes.dirMode });
  if (await storage.existsAsync(filename)) await storage.flushToStorageAsync({ filename, mode: modes.fileMode });
  const handle = await fs.open(tempFilename, 'w', modes.fileMode);
  try {
    let block: Buffer[] = [];
    let blockBytes = 0;
    const flush = async () => {
      const buf = Buffer.concat(block, blockBytes);
      block = [];
      blockBytes = 0;
      for (let off = 0; off < buf.length; ) off += (await handle.write(buf, off, buf.length - off)).bytesWritten;
    };
    const push = async (line: Buffer) => {
      block.push(line, NEWLINE);
      blockBytes += line.length + 1;
      if (blockBytes >= WRITE_BLOCK_BYTES) await flush();
    };
    const { starts, ends } = treated?.lines ?? { starts: [], ends: [] };
    for (const doc of ds.getAllData()) {
      const k = bytes ? lineOf.get(doc) : undefined;
      if (k !== undefined && plainValid(doc)) await push(bytes!.subarray(starts[k]!, ends[k]!));
      else await push(Buffer.from(serializeDoc(doc)));
    }
    for (const fieldName of Object.keys(ds.indexes)) {
      if (fieldName === '_id') continue;
      const ix = ds.indexes[fieldName]!;
      await push(Buffer.from(model.serialize({ $$indexCreated: { fieldName: ix.fieldName, unique: ix.unique, sparse: ix.sparse } })));
    }
    await flush();
  } finally {
    await handle.close();
  }
  await storage.flushToStorageAsync({ filename: tempFilename, mode: modes.fileMode });
  await storage.renameAsync(tempFilename, filename);
  await storage.flushToStorageAsync({ filename: path.dirname(filename), isDir: true, mode: modes.dirMode });
  ds.emit('compaction.done');
}

/**
 * Loads an on-disk NeDB datastore from its file: what `ds.loadDatabaseAsync()` does (in the
 * datastore's executor, releasing the commands queued meanwhile), faster (see the file header).
 * An in-memory datastore gets NeDB's own load.
 * @throws what NeDB's load throws: too much of the file corrupt, a unique index violated by the
 *   stored documents (indexes then left empty), file-system errors.
 */
export async function loadDatastore(datastore: unknown): Promise<void> {
  const ds = datastore as DatastoreLike & { loadDatabaseAsync(): Promise<void> };
  if (ds.inMemoryOnly) return ds.loadDatabaseAsync();
  await ds.executor.pushAsync(async () => {
    ds._resetIndexes();
    const p = ds.persistence;
    await storage.ensureParentDirectoryExistsAsync(p.filename, p.modes.dirMode);
    await storage.ensureDatafileIntegrityAsync(p.filename, p.modes.fileMode);
    const treated = await readDatafile(p.filename, p.corruptAlertThreshold);
    for (const key of Object.keys(treated.indexes)) {
      const raw = treated.indexes[key]!;
      // a unique index on one top-level field: the store's own (issue 15, item 5), built from the sorted keys
      ds.indexes[key] = takesUniqueIndex(raw) ? (new UniqueIndex(raw.fieldName, raw.sparse === true) as unknown as IndexLike) : new NedbIndex(raw);
    }
    try {
      for (const ix of Object.values(ds.indexes)) {
        if (ix instanceof UniqueIndex) {
          if (!ix.load(treated.data as never)) ix.reset(treated.data as never);
        } else if (!bulkBuildIndex(ix, treated.data)) ix.reset(treated.data);
      }
    } catch (e) {
      ds._resetIndexes();
      throw e;
    }
    // NeDB rewrites the file after a load; when it already holds exactly those lines (a file this
    // store compacted on close), the rewrite would write the same bytes
    if (!alreadyCompact(ds, treated)) await writeCompacted(ds, treated);
    else ds.emit('compaction.done');
    ds.executor.processBuffer();
  }, true);
}
