import { setTimeout as sleep } from 'node:timers/promises';
import { backoffMs } from '../backoff.js';
import type { Logger } from '../logger.js';
import type { Collection, Store } from '../store/port.js';
import type { ChainRow } from './chain.js';
import type { WalletChangeRow, WalletRow } from './ledger.js';
import type { OrderRow } from './matching.js';
import type { VenueHealth } from './port.js';

/**
 * The state of one market as journaled: its current tick and lifecycle, absolute
 * (a later row replaces an earlier one). Only markets whose tick or status changed have one.
 */
export interface MarketRow {
  conditionId: string;
  /** Current tick, decimal probability. */
  tickSize: string;
  closed: boolean;
  resolved: boolean;
  winningTokenId: string | null;
  /** Epoch ms, or null. */
  resolvedAtMs: number | null;
}

/**
 * A captured level of the WebSocket capture that users traded with: `size` shares
 * (price `price`, decimal probability) were left of it once the capture's events before index `at`
 * were applied. Valid until the capture's next event on that level (index ≥ `at`), which sets its
 * size again: a restart rebuilds the level with `size`, not the captured size (what a user took
 * stays gone).
 */
export interface CapturedLevelRow {
  tokenId: string;
  side: 'buy' | 'sell';
  price: string;
  size: string;
  at: number;
}

/**
 * Where the capture replay was: `next` is the index of the next capture event to apply
 * (every event before it was applied, with its effects in this or an earlier entry), `recordedMs`
 * the capture time reached, epoch ms of the capture. A later row replaces an earlier one.
 */
export interface CaptureRow {
  next: number;
  recordedMs: number;
  /** Captured levels users traded with in this operation (entries), or all still valid (checkpoint). */
  levels?: CapturedLevelRow[];
}

/** What a journal entry or checkpoint holds: absolute wallet, order and market states. */
export interface StateRows {
  /** Whole wallet rows (a checkpoint's; a journal entry's for a wallet's first row) or changes of them (entries). */
  wallets: Array<WalletRow | WalletChangeRow>;
  orders: OrderRow[];
  /** Markets whose tick or status changed (absent in entries without market events). */
  markets?: MarketRow[];
  /** The capture replay's position (absent in entries that did not move it or take captured levels). */
  capture?: CaptureRow;
  /** Where the chain's sequence is after the operation (absent in entries that took no chain position). */
  chain?: ChainRow;
}

/**
 * Rows to chunk for a checkpoint, in order: each given as the row or as its JSON (the ledger's and
 * matching engine's `rowsJson`: made when the state is taken, immutable, and not serialized again).
 */
export interface ChunkInput {
  wallets: readonly (WalletRow | string)[];
  orders: readonly (OrderRow | string)[];
}

/**
 * The state a checkpoint writes, taken when the checkpoint is due (rows possibly as their JSON: {@link ChunkInput}).
 */
export interface CheckpointState extends Omit<StateRows, 'wallets' | 'orders'>, ChunkInput {
  /** The matching engine's last time-priority sequence number. */
  orderSeq: number;
}

/**
 * One journal entry (collection `venueJournal`, `_id` = seq padded to 12 digits). The rows travel
 * as one JSON string: the store then copies and checks a string instead of walking every nested
 * row, and keeps it as it is (a text field of the collection's layout: on SQLite a column of its
 * own, never escaped into the document's JSON). Documents written before this carried the rows as
 * fields, which {@link rowsOf} still reads.
 */
interface JournalDoc {
  _id: string;
  seq: number;
  /** When the operation ran, epoch ms. */
  atMs: number;
  rows?: string;
  wallets?: WalletRow[];
  orders?: OrderRow[];
}
/**
 * A checkpoint in the older single-document format (collection `venueState`, `_id: 'checkpoint'`):
 * all user state up to `seq` in this one document. Still restored; the next checkpoint replaces it with a
 * {@link CheckpointPointer}.
 */
interface LegacyCheckpointDoc extends Omit<JournalDoc, '_id' | 'atMs'> {
  _id: 'checkpoint';
  orderSeq: number;
  generation?: undefined;
}

/**
 * The checkpoint pointer (collection `venueState`, `_id: 'checkpoint'`): names the generation of
 * chunk documents that together hold all user state up to journal entry `seq`. Small and replaced
 * in one write, which is what switches from one checkpoint to the next.
 */
interface CheckpointPointer {
  _id: 'checkpoint';
  /** Generation of the chunks (1, 2, …): chunk `n` of it is `_id` {@link chunkId}(generation, n). */
  generation: number;
  /** Last journal entry the checkpoint covers. */
  seq: number;
  /** The matching engine's last time-priority sequence number. */
  orderSeq: number;
  /** Number of chunk documents (0 … chunks−1). */
  chunks: number;
  /** Rows the chunks hold in all, checked at recovery. */
  walletCount: number;
  orderCount: number;
  /** Market rows as one JSON string of {@link MarketRow}[]: at most one per market, small. */
  markets?: string;
  /** The capture replay's position and the captured levels users traded with, one JSON {@link CaptureRow}. */
  capture?: string;
  /** Where the chain's sequence was. */
  chain?: ChainRow;
}

/**
 * One chunk of a checkpoint (collection `venueState`, `_id` `cp:<generation>:<n>`): a slice of the
 * wallet rows then the order rows, in snapshot order, as one JSON string of {@link StateRows}.
 * The document is at most {@link CHECKPOINT_CHUNK_BYTES} (unless it holds one row larger alone).
 */
interface ChunkDoc {
  _id: string;
  generation: number;
  /** Position in the generation, from 0. */
  n: number;
  rows: string;
}

/** A document of `venueState`: the pointer (or a pre-issue-14 checkpoint) and the chunks. */
type StateDoc = CheckpointPointer | LegacyCheckpointDoc | ChunkDoc;

/**
 * Bound on one checkpoint chunk document: 1 MiB (its BSON size on MongoDB; the rows string gets
 * this less {@link CHUNK_ENVELOPE_BYTES}). MongoDB refuses documents over 16 MiB, so this leaves
 * a 16× margin; 1 MiB holds about 1,700–2,300 orders at the measured 450–630 bytes each, so a
 * checkpoint of 100,000 orders is some 50 writes (the per-write overhead stays negligible) and no
 * single write, nor a recovery's parse of one chunk, holds much memory or the store for long.
 * The only exception: a single row larger than the bound (an order with thousands of fills) gets
 * a chunk of its own, as large as that row; its journal entries are as large already.
 */
export const CHECKPOINT_CHUNK_BYTES = 1024 * 1024;
/** What a chunk document holds besides its rows string (`_id`, `generation`, `n`, BSON framing), generously. */
const CHUNK_ENVELOPE_BYTES = 1024;

/** `_id` of chunk `n` of checkpoint `generation`. */
const chunkId = (generation: number, n: number) => `cp:${generation}:${n}`;

function rowsOf(doc: { rows?: string; wallets?: WalletRow[]; orders?: OrderRow[] }): StateRows {
  return doc.rows !== undefined
    ? (JSON.parse(doc.rows) as StateRows)
    : { wallets: doc.wallets ?? [], orders: doc.orders ?? [] };
}

const EMPTY_CHUNK = '{"wallets":[],"orders":[]}';

/** Rows serialized between two returns to the event loop by {@link chunkRows}. */
const ROWS_PER_SLICE = 500;

/**
 * Splits the rows, in order (wallets then orders), into chunk strings, each the JSON of a
 * {@link StateRows} of at most `maxBytes` UTF-8 bytes; a row too large for that alone gets a chunk
 * of its own. No rows give no chunks. Rows given as objects are serialized here,
 * {@link ROWS_PER_SLICE} at a time, returning to the event loop in between (a checkpoint
 * of 16,000 orders serialized in one go holds every request for ~100 ms); they must not change
 * meanwhile (the venue's checkpoint hands their JSON, made when it was due).
 */
export async function chunkRows(rows: ChunkInput, maxBytes: number): Promise<string[]> {
  const b = chunkBuilder(maxBytes);
  let n = 0;
  for (const w of rows.wallets) {
    b.add(true, w);
    if (++n % ROWS_PER_SLICE === 0) await new Promise((r) => setImmediate(r));
  }
  for (const o of rows.orders) {
    b.add(false, o);
    if (++n % ROWS_PER_SLICE === 0) await new Promise((r) => setImmediate(r));
  }
  return b.done();
}

/** Builds the chunk strings of {@link chunkRows}: rows (or their JSON) added in order (wallets first), then `done`. */
function chunkBuilder(maxBytes: number): { add(wallet: boolean, row: unknown): void; done(): string[] } {
  const chunks: string[] = [];
  let wallets: string[] = [];
  let orders: string[] = [];
  let bytes = EMPTY_CHUNK.length;
  const flush = () => {
    if (wallets.length + orders.length === 0) return;
    chunks.push(`{"wallets":[${wallets.join(',')}],"orders":[${orders.join(',')}]}`);
    wallets = [];
    orders = [];
    bytes = EMPTY_CHUNK.length;
  };
  return {
    add(wallet, row) {
      const json = typeof row === 'string' ? row : JSON.stringify(row);
      const size = Buffer.byteLength(json) + 1; // + the comma
      if (bytes + size > maxBytes) flush();
      (wallet ? wallets : orders).push(json);
      bytes += size;
    },
    done() {
      flush();
      return chunks;
    },
  };
}

/**
 * The JSON of a {@link StateRows} from its rows' JSON (wallet and order rows serialized by the
 * ledger's and matching engine's `rowJson`, which reuse what did not change); `markets` and
 * `capture` are serialized here when present.
 */
export function stateRowsJson(
  wallets: readonly string[],
  orders: readonly string[],
  markets?: MarketRow[],
  capture?: CaptureRow,
  chain?: ChainRow,
): string {
  return (
    `{"wallets":[${wallets.join(',')}],"orders":[${orders.join(',')}]` +
    `${markets ? `,"markets":${JSON.stringify(markets)}` : ''}` +
    `${capture ? `,"capture":${JSON.stringify(capture)}` : ''}` +
    `${chain ? `,"chain":{"block":${chain.block},"next":${chain.next}}` : ''}}`
  );
}

const pad = (n: number) => String(n).padStart(12, '0');
/** Journal entries removed per store operation after a checkpoint (other writes go between). */
const JOURNAL_DELETE_CHUNK = 500;

/** A checkpoint's state and the seq of the last journal entry it covers. */
interface TakenState {
  state: CheckpointState;
  seq: number;
}

/** Options of the venue journal. */
export interface JournalOptions {
  store: Store;
  log: Logger;
  /**
   * Journal entries between checkpoints: at least this many (default 5,000), and at least as many as
   * the last checkpoint held rows (wallets and orders), so that a checkpoint's cost, which grows with the
   * state, stays about one row per entry however large the state grows.
   */
  checkpointEvery?: number;
  /** Bound on one checkpoint chunk document, bytes (default {@link CHECKPOINT_CHUNK_BYTES}; tests set less). */
  checkpointChunkBytes?: number;
  /**
   * The state to checkpoint, taken when a checkpoint is due (it may also prune what it no longer
   * keeps). Rows given as objects must be copies the venue will not change afterwards, since the
   * chunks are made later while the venue goes on; rows given as their JSON are final.
   */
  snapshot: () => CheckpointState;
}

/**
 * Durability of the simulated venue: one journal entry per operation that touched a user (its
 * absolute wallet and order states), written in order; every `checkpointEvery` entries (or, when the
 * last checkpoint held more rows than that, as many entries as it held rows) a
 * checkpoint of all user state, after which the journal it covers is removed in slices. Start-up
 * ({@link recover}) replays checkpoint + journal, so a restart loses nothing and applies nothing
 * twice.
 *
 * A checkpoint is a generation of bounded chunk documents plus a small pointer naming
 * the current generation, so no document nears MongoDB's 16 MiB limit however large the state;
 * see {@link checkpoint} for the write order that keeps the previous checkpoint usable until the
 * new one is complete.
 *
 * A journal write that fails is retried with backoff until it lands, in
 * order: the entries behind it wait, and nothing is skipped. Meanwhile {@link health} reports not
 * ok; it comes back by itself when the store does. A failed checkpoint is logged and tried again
 * at the next one (the journal still holds everything it would have covered).
 */
export class VenueJournal {
  /** Seq of the last entry appended (or recovered). */
  private seq = 0;
  private sinceCheckpoint = 0;
  /**
   * Rows (wallets and orders) of the last checkpoint taken or recovered: the next is due no sooner
   * (see `checkpointEvery`).
   */
  private checkpointRows = 0;
  /** Lowest journal seq that may still be stored. */
  private journalFrom = 1;
  private tail: Promise<unknown> = Promise.resolve();
  /** Journal entries queued and not yet written. */
  private pendingWrites = 0;
  /** Set while a journal write is failing and being retried: the last error. */
  private writeError: string | null = null;
  /** Journal writes failing and being retried. */
  private failingWrites = 0;
  private checkpointError: string | null = null;

  /** Generation of the last checkpoint written or recovered (0: none, or a single-document one). */
  private generation = 0;
  /** Checkpoints run one at a time, in call order. */
  private checkpoints: Promise<unknown> = Promise.resolve();

  private constructor(
    private readonly o: JournalOptions,
    private readonly journal: Collection<JournalDoc>,
    private readonly state: Collection<StateDoc>,
  ) {}

  /**
   * Opens the journal's collections: `venueJournal` and `venueState` (the checkpoint pointer and
   * chunks; indexed on `generation`, which removes a generation's chunks).
   */
  static async open(o: JournalOptions): Promise<VenueJournal> {
    const journal = await o.store.collection<JournalDoc>('venueJournal', [{ fields: ['seq'], unique: true }], {
      textFields: ['rows'],
    });
    const state = await o.store.collection<StateDoc>('venueState', [{ fields: ['generation'] }], {
      textFields: ['rows', 'markets', 'capture'],
    });
    return new VenueJournal(o, journal, state);
  }

  /**
   * Durability status: `ok` is false while a journal write is failing. `pendingWrites` counts
   * entries not yet written; `error` is the last write or checkpoint failure, null when none is
   * outstanding.
   */
  get health(): VenueHealth {
    return {
      ok: this.writeError === null,
      pendingWrites: this.pendingWrites,
      error: this.writeError ?? this.checkpointError,
    };
  }

  /** The seq the next entry gets. */
  get nextSeq(): number {
    return this.seq + 1;
  }

  /** Resolves once everything appended so far is written (a checkpoint may still be running: {@link settled}). */
  written(): Promise<unknown> {
    return this.tail;
  }

  /** Resolves once everything appended so far is written and every checkpoint due so far ran. */
  settled(): Promise<unknown> {
    return Promise.all([this.tail, this.checkpoints]);
  }

  /**
   * The batch collecting the entries appended before its write is issued (on the next microtask):
   * they go to the store together, in one write; `prompt`: an entry asked for that write to commit
   * at once (`append`'s `prompt`). Null when the next append starts a batch of its own.
   */
  private openBatch: { docs: JournalDoc[]; prompt: boolean } | null = null;

  /**
   * Appends entry `seq` (= {@link nextSeq}) after every earlier one; queues a checkpoint behind it
   * every `checkpointEvery` entries. Entries appended in one run of the event loop's microtasks are
   * written together, in seq order, in one store write ({@link Collection.insertMany}).
   * Writes are pipelined: a write is issued without waiting for the earlier ones to be durable (on
   * SQLite it joins the open commit, or the next one while the previous commit's fsync runs), and
   * an entry is acknowledged once it and every earlier entry are durable, in seq order. A write
   * that fails is retried while later ones may land; until it lands they are not acknowledged, and
   * a restart meanwhile ({@link recover}) drops the entries after the missing one.
   * @param atMs when the operation ran, epoch ms.
   * @param rows the entry's rows, or their JSON (see {@link stateRowsJson}).
   * @param prompt the write holding this entry commits as soon as it is made ({@link Store.commitNow})
   *   instead of waiting for other writes to join its commit: for an operation whose own
   *   followers wait behind it (the capture replay's batches, which join the next write anyway).
   * @returns resolves once this entry (and every earlier one) is written (never rejects: a
   *   failing write is retried).
   */
  append(seq: number, atMs: number, rows: StateRows | string, prompt = false): Promise<unknown> {
    this.seq = seq;
    const doc: JournalDoc = { _id: pad(seq), seq, atMs, rows: typeof rows === 'string' ? rows : JSON.stringify(rows) };
    this.pendingWrites++;
    let durable: Promise<unknown>;
    if (this.openBatch) {
      this.openBatch.docs.push(doc);
      // the batch's write commits at once when any of its entries asked for it
      this.openBatch.prompt ||= prompt;
      durable = this.tail;
    } else {
      const batch = (this.openBatch = { docs: [doc], prompt });
      const issued = Promise.resolve().then(() => {
        if (this.openBatch === batch) this.openBatch = null; // later entries start the next batch
        return this.writeDurably(batch.docs, batch.prompt);
      });
      // acknowledged in order: once this write and every earlier one are durable
      durable = this.tail = Promise.all([this.tail, issued]);
    }
    if (++this.sinceCheckpoint >= Math.max(this.o.checkpointEvery ?? 5000, this.checkpointRows)) {
      this.sinceCheckpoint = 0;
      // The state after this entry, taken now; written beside the entries that follow, its pointer
      // only once this entry and every earlier one are written (a checkpoint queued behind the
      // journal would hold every later operation for its whole length).
      const taken = { state: this.o.snapshot(), seq };
      this.checkpointRows = taken.state.wallets.length + taken.state.orders.length;
      this.checkpoints = this.checkpoints.then(() => this.checkpointOrLog(taken, durable));
    }
    return durable;
  }

  /**
   * Writes journal entries (consecutive seqs), retrying with backoff (50 ms doubling, at most
   * 5 s) until a write of them succeeds. A retry writes every entry again ({@link rewriteAll}): a
   * write reported failed may have stored some of them all the same (on MongoDB a prefix of the
   * batch; on SQLite a commit whose fsync failed, readable but not known to be on disk), and only a
   * write that succeeds says they are durable. An entry is self-contained (absolute states) and
   * keyed by its seq, so writing it again changes nothing else.
   */
  private async writeDurably(docs: JournalDoc[], prompt = false): Promise<void> {
    let failed = false;
    for (let attempt = 1; ; attempt++) {
      try {
        // the rows go into the store's open commit at once (or when a transaction holding the writes ends)
        const written = attempt === 1 ? this.insertAll(docs) : this.rewriteAll(docs);
        if (prompt) this.o.store.commitNow?.();
        await written;
        break;
      } catch (err) {
        const first = this.writeError === null;
        if (!failed) this.failingWrites++;
        failed = true;
        this.writeError = `journal write failed: ${(err as Error).message}`;
        if (first || attempt % 20 === 0)
          this.o.log.error(
            { err, seq: docs[0]!.seq, entries: docs.length, attempt },
            'venue journal write failed; venue degraded, retrying',
          );
        await sleep(backoffMs(attempt, 50, 5000));
      }
    }
    this.pendingWrites -= docs.length;
    if (failed) this.failingWrites--;
    if (this.writeError !== null && this.failingWrites === 0) {
      this.writeError = null;
      this.o.log.warn({ seq: docs[docs.length - 1]!.seq }, 'venue journal writes recovered');
    }
  }

  /** Inserts `docs` in order: several in one write when the store can. */
  private async insertAll(docs: JournalDoc[]): Promise<void> {
    if (docs.length > 1 && this.journal.insertMany) return this.journal.insertMany(docs);
    for (const doc of docs) await this.journal.insertOne(doc);
  }

  /**
   * Writes `docs` again, each replacing whatever an earlier attempt stored under its seq (all issued
   * at once: on SQLite one commit); settles once every one did.
   * @throws the first failure.
   */
  private async rewriteAll(docs: JournalDoc[]): Promise<void> {
    const results = await Promise.allSettled(docs.map((doc) => this.journal.replaceOne(doc)));
    const failure = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failure) throw failure.reason;
  }

  /** A checkpoint whose failure is logged, not fatal: the journal still holds what it would cover. */
  private async checkpointOrLog(taken: TakenState, covered: Promise<unknown>): Promise<void> {
    try {
      await this.writeCheckpoint(taken, covered);
      this.checkpointError = null;
    } catch (err) {
      this.checkpointError = `checkpoint failed: ${(err as Error).message}`;
      this.o.log.error(
        { err },
        'venue checkpoint failed; the journal keeps everything, retried at the next checkpoint',
      );
    }
  }

  /**
   * Start-up: hands the checkpoint's rows (chunk by chunk, in order), then every later journal
   * entry's rows in order, to `apply` (later rows overwrite earlier ones), after removing what a
   * checkpoint cut short left behind: chunks of generations the pointer does not name, and
   * journal entries the checkpoint covers. A single-document checkpoint (the older format, all
   * rows in one document) is restored as it is; the next checkpoint replaces it.
   * Replay stops at the first missing seq: the entries after it are removed (see {@link append}).
   * @returns the checkpoint's `orderSeq` (0 without one) and how many journal entries were replayed.
   * @throws when a chunk the pointer names is missing or the row counts disagree (a damaged store).
   */
  async recover(apply: (rows: StateRows) => void): Promise<{ orderSeq: number; replayed: number }> {
    let orderSeq = 0;
    const cp = (await this.state.findOne({ _id: 'checkpoint' })) as CheckpointPointer | LegacyCheckpointDoc | null;
    if (cp && cp.generation !== undefined) {
      let wallets = 0;
      let orders = 0;
      for (let n = 0; n < cp.chunks; n++) {
        const chunk = (await this.state.findOne({ _id: chunkId(cp.generation, n) })) as ChunkDoc | null;
        if (!chunk)
          throw new Error(`venue checkpoint generation ${cp.generation}: chunk ${n} of ${cp.chunks} is missing`);
        const rows = rowsOf(chunk);
        wallets += rows.wallets.length;
        orders += rows.orders.length;
        apply(rows);
      }
      if (wallets !== cp.walletCount || orders !== cp.orderCount) {
        throw new Error(
          `venue checkpoint generation ${cp.generation}: ${wallets} wallets and ${orders} ` +
            `orders read, ${cp.walletCount} and ${cp.orderCount} written`,
        );
      }
      this.generation = cp.generation;
      this.checkpointRows = wallets + orders;
      if (cp.markets !== undefined) apply({ wallets: [], orders: [], markets: JSON.parse(cp.markets) as MarketRow[] });
      if (cp.capture !== undefined) apply({ wallets: [], orders: [], capture: JSON.parse(cp.capture) as CaptureRow });
      if (cp.chain !== undefined) apply({ wallets: [], orders: [], chain: cp.chain });
    } else if (cp) {
      apply(rowsOf(cp));
    }
    if (cp) {
      this.seq = cp.seq;
      orderSeq = cp.orderSeq;
    }
    // chunks of a checkpoint cut short (a later generation) or not yet removed (an earlier one)
    await this.state.deleteMany({ generation: { $gt: this.generation } });
    await this.state.deleteMany({ generation: { $lt: this.generation } });
    await this.journal.deleteMany({ seq: { $lte: this.seq } }); // left by a checkpoint cut short
    this.journalFrom = this.seq + 1;
    const entries = await this.journal.find({ seq: { $gt: this.seq } }, { sort: { seq: 1 } });
    let replayed = 0;
    for (const j of entries) {
      // entries after a missing one were never acknowledged (a write retried when the process
      // ended while later ones had landed): each holds state made on top of the missing one's
      if (j.seq !== this.seq + 1) break;
      apply(rowsOf(j));
      this.seq = j.seq;
      replayed++;
    }
    this.sinceCheckpoint = replayed;
    if (replayed < entries.length) {
      this.o.log.warn(
        { missing: this.seq + 1, dropped: entries.length - replayed },
        'venue journal: entries after a missing one were never acknowledged; dropped',
      );
      await this.journal.deleteMany({ seq: { $gt: this.seq } });
    }
    return { orderSeq, replayed };
  }

  /** The seq of the last entry appended or recovered. */
  get lastSeq(): number {
    return this.seq;
  }

  /**
   * Writes the current state (from `snapshot`, taken and serialized at once) as a new checkpoint
   * generation, then drops what the previous one and the journal held. Checkpoints run one at a
   * time. The order keeps a usable checkpoint in the store whenever this stops (crash or failed
   * write):
   * 1. the chunk documents of generation g+1 (`cp:<g+1>:<n>`, each at most
   *    {@link CHECKPOINT_CHUNK_BYTES}): the pointer still names generation g, whose chunks and the
   *    journal after it are untouched, so a crash here recovers from g (and removes these chunks);
   * 2. the pointer `{_id: 'checkpoint', generation: g+1, seq, orderSeq, chunks, …}`, replaced in one
   *    write of a small document, only once every chunk write was acknowledged: it names g or g+1,
   *    never a generation that is incomplete;
   * 3. the chunks of earlier generations (g, and any of a failed attempt), then
   * 4. the journal entries up to `seq`, in slices: from here on recovery follows g+1 and removes
   *    whatever of 3 and 4 a crash left behind.
   * @throws the first failed write (the journal still holds everything; the next checkpoint takes a new generation).
   */
  checkpoint(): Promise<void> {
    const run = this.checkpoints.then(() => {
      const state = this.o.snapshot();
      this.sinceCheckpoint = 0;
      this.checkpointRows = state.wallets.length + state.orders.length;
      return this.writeCheckpoint({ state, seq: this.seq }, this.tail);
    });
    this.checkpoints = run.catch(() => undefined);
    return run;
  }

  /**
   * Writes the checkpoint of `taken` (the state after entry `taken.seq`); its pointer once
   * `covered` (that entry and every earlier one written) resolved.
   */
  private async writeCheckpoint(taken: TakenState, covered: Promise<unknown>): Promise<void> {
    const { orderSeq, wallets, orders, markets, capture, chain } = taken.state;
    const seq = taken.seq;
    const chunks = await chunkRows(
      { wallets, orders },
      (this.o.checkpointChunkBytes ?? CHECKPOINT_CHUNK_BYTES) - CHUNK_ENVELOPE_BYTES,
    );
    const generation = ++this.generation; // a failed attempt's chunks are never reused: they go at step 3
    for (let n = 0; n < chunks.length; n++) {
      await this.state.replaceOne({ _id: chunkId(generation, n), generation, n, rows: chunks[n]! });
      chunks[n] = ''; // written: let it go
    }
    await covered; // never names state whose journal entries are not all written
    await this.state.replaceOne({
      _id: 'checkpoint',
      generation,
      seq,
      orderSeq,
      chunks: chunks.length,
      walletCount: wallets.length,
      orderCount: orders.length,
      ...(markets?.length ? { markets: JSON.stringify(markets) } : {}),
      ...(capture ? { capture: JSON.stringify(capture) } : {}),
      ...(chain ? { chain: { block: chain.block, next: chain.next } } : {}),
    });
    await this.state.deleteMany({ generation: { $lt: generation } });
    // in slices by _id (= padded seq, indexed everywhere): one long removal would stall every other write
    for (let upTo = this.journalFrom + JOURNAL_DELETE_CHUNK - 1; ; upTo += JOURNAL_DELETE_CHUNK) {
      await this.journal.deleteMany({ _id: { $lte: pad(Math.min(upTo, seq)) } });
      if (upTo >= seq) break;
    }
    this.journalFrom = seq + 1;
  }
}
