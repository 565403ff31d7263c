import { DuplicateKeyError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { Collection, Store } from '../store/port.js';
import type { WalletRow } from './ledger.js';
import type { OrderRow } from './matching.js';
import type { VenueHealth } from './port.js';

/** What a journal entry or checkpoint holds: absolute wallet and order states. */
export interface StateRows {
  wallets: WalletRow[];
  orders: OrderRow[];
}

/** The state a checkpoint writes, taken when the checkpoint runs. */
export interface CheckpointState extends StateRows {
  /** The matching engine's last time-priority sequence number. */
  orderSeq: number;
}

/**
 * One journal entry (collection `venueJournal`, `_id` = seq padded to 12 digits). The rows travel
 * as one JSON string: the store then copies and checks a string instead of walking every nested
 * row (documents written before this carried the rows as fields, which {@link rowsOf} still reads).
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
/** The checkpoint (collection `venueState`, one document `_id: 'checkpoint'`): all user state up to `seq`. */
interface CheckpointDoc extends Omit<JournalDoc, '_id' | 'atMs'> {
  _id: 'checkpoint';
  orderSeq: number;
}

function rowsOf(doc: { rows?: string; wallets?: WalletRow[]; orders?: OrderRow[] }): StateRows {
  return doc.rows !== undefined ? (JSON.parse(doc.rows) as StateRows) : { wallets: doc.wallets ?? [], orders: doc.orders ?? [] };
}

const pad = (n: number) => String(n).padStart(12, '0');
/** Journal entries removed per store operation after a checkpoint (other writes go between). */
const JOURNAL_DELETE_CHUNK = 500;

/** Options of the venue journal. */
export interface JournalOptions {
  store: Store;
  log: Logger;
  /** Journal entries between checkpoints (default 5,000). */
  checkpointEvery?: number;
  /** The state to checkpoint, read when a checkpoint runs (it may also prune what it no longer keeps). */
  snapshot: () => CheckpointState;
}

/**
 * Durability of the simulated venue: one journal entry per operation that touched a user (its
 * absolute wallet and order states), written in order; every `checkpointEvery` entries a
 * checkpoint of all user state, after which the journal it covers is removed in slices. Start-up
 * ({@link recover}) replays checkpoint + journal, so a restart loses nothing and applies nothing
 * twice.
 *
 * A journal write that fails (issue 12, defect 17) is retried with backoff until it lands, in
 * order: the entries behind it wait, and nothing is skipped. Meanwhile {@link health} reports not
 * ok; it comes back by itself when the store does. A failed checkpoint is logged and tried again
 * at the next one (the journal still holds everything it would have covered).
 */
export class VenueJournal {
  /** Seq of the last entry appended (or recovered). */
  private seq = 0;
  private sinceCheckpoint = 0;
  /** Lowest journal seq that may still be stored. */
  private journalFrom = 1;
  private tail: Promise<unknown> = Promise.resolve();
  /** Journal entries queued and not yet written. */
  private pendingWrites = 0;
  /** Set while a journal write is failing and being retried: the last error. */
  private writeError: string | null = null;
  private checkpointError: string | null = null;

  private constructor(
    private readonly o: JournalOptions,
    private readonly journal: Collection<JournalDoc>,
    private readonly state: Collection<CheckpointDoc>,
  ) {}

  /** Opens the journal's collections (`venueJournal`, `venueState`). */
  static async open(o: JournalOptions): Promise<VenueJournal> {
    const journal = await o.store.collection<JournalDoc>('venueJournal', [{ fields: ['seq'], unique: true, adapters: ['mongodb'] }]);
    const state = await o.store.collection<CheckpointDoc>('venueState');
    return new VenueJournal(o, journal, state);
  }

  /**
   * Durability status: `ok` is false while a journal write is failing. `pendingWrites` counts
   * entries not yet written; `error` is the last write or checkpoint failure, null when none is
   * outstanding.
   */
  get health(): VenueHealth {
    return { ok: this.writeError === null, pendingWrites: this.pendingWrites, error: this.writeError ?? this.checkpointError };
  }

  /** The seq the next entry gets. */
  get nextSeq(): number {
    return this.seq + 1;
  }

  /** Resolves once everything appended so far is written (and any checkpoint queued behind it ran). */
  written(): Promise<unknown> {
    return this.tail;
  }

  /**
   * Appends entry `seq` (= {@link nextSeq}) after every earlier one; queues a checkpoint behind it
   * every `checkpointEvery` entries.
   * @param atMs when the operation ran, epoch ms.
   * @returns resolves once this entry is written (never rejects: a failing write is retried).
   */
  append(seq: number, atMs: number, rows: StateRows): Promise<unknown> {
    this.seq = seq;
    const doc: JournalDoc = { _id: pad(seq), seq, atMs, rows: JSON.stringify(rows) };
    this.pendingWrites++;
    const durable = (this.tail = this.tail.then(() => this.writeDurably(doc)));
    if (++this.sinceCheckpoint >= (this.o.checkpointEvery ?? 5000)) {
      this.sinceCheckpoint = 0;
      this.tail = this.tail.then(() => this.checkpointOrLog());
    }
    return durable;
  }

  /**
   * Writes one journal entry, retrying with backoff (50 ms doubling, at most 5 s) until it lands.
   * An entry is self-contained (absolute states) and keyed by its seq, so a retry of a write that
   * did land is recognised by its duplicate key.
   */
  private async writeDurably(doc: JournalDoc): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.journal.insertOne(doc);
        break;
      } catch (err) {
        if (err instanceof DuplicateKeyError) break;
        const first = this.writeError === null;
        this.writeError = `journal write failed: ${(err as Error).message}`;
        if (first || attempt % 20 === 0) this.o.log.error({ err, seq: doc.seq, attempt }, 'venue journal write failed; venue degraded, retrying');
        await new Promise((r) => setTimeout(r, Math.min(5000, 50 * 2 ** Math.min(attempt - 1, 10))));
      }
    }
    this.pendingWrites--;
    if (this.writeError !== null) {
      this.writeError = null;
      this.o.log.warn({ seq: doc.seq }, 'venue journal writes recovered');
    }
  }

  /** A checkpoint whose failure is logged, not fatal: the journal still holds what it would cover. */
  private async checkpointOrLog(): Promise<void> {
    try {
      await this.checkpoint();
      this.checkpointError = null;
    } catch (err) {
      this.checkpointError = `checkpoint failed: ${(err as Error).message}`;
      this.o.log.error({ err }, 'venue checkpoint failed; the journal keeps everything, retried at the next checkpoint');
    }
  }

  /**
   * Start-up: hands the checkpoint's rows, then every later journal entry's rows in order, to
   * `apply` (later rows overwrite earlier ones), after removing entries a checkpoint cut short
   * left behind.
   * @returns the checkpoint's `orderSeq` (0 without one) and how many journal entries were replayed.
   */
  async recover(apply: (rows: StateRows) => void): Promise<{ orderSeq: number; replayed: number }> {
    let orderSeq = 0;
    const cp = await this.state.findOne({ _id: 'checkpoint' });
    if (cp) {
      apply(rowsOf(cp));
      this.seq = cp.seq;
      orderSeq = cp.orderSeq;
    }
    await this.journal.deleteMany({ seq: { $lte: this.seq } }); // left by a checkpoint cut short
    this.journalFrom = this.seq + 1;
    const entries = await this.journal.find({ seq: { $gt: this.seq } }, { sort: { seq: 1 } });
    for (const j of entries) {
      apply(rowsOf(j));
      this.seq = j.seq;
    }
    return { orderSeq, replayed: entries.length };
  }

  /** The seq of the last entry appended or recovered. */
  get lastSeq(): number {
    return this.seq;
  }

  /** Writes the current state (from `snapshot`) as the checkpoint, then drops the journal it covers. */
  async checkpoint(): Promise<void> {
    const { orderSeq, wallets, orders } = this.o.snapshot();
    const seq = this.seq;
    await this.state.replaceOne({ _id: 'checkpoint', seq, orderSeq, rows: JSON.stringify({ wallets, orders } satisfies StateRows) });
    // in slices by _id (= padded seq, indexed everywhere): one long removal would stall every other write
    for (let upTo = this.journalFrom + JOURNAL_DELETE_CHUNK - 1; ; upTo += JOURNAL_DELETE_CHUNK) {
      await this.journal.deleteMany({ _id: { $lte: pad(Math.min(upTo, seq)) } });
      if (upTo >= seq) break;
    }
    this.journalFrom = seq + 1;
  }
}
