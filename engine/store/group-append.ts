import { setTimeout as sleep } from 'node:timers/promises';
import { backoffMs } from '../backoff.js';
import fs from 'node:fs/promises';

/**
 * Group commit for an append-only file (the embedded store's data files): text enqueued while a
 * write is in flight goes out together in the next single write, on one open file handle.
 * {@link durable} resolves once everything enqueued before the call is in the file (handed to
 * the operating system, as `fs.appendFile` did: it survives `kill -9`, not a power cut).
 *
 * A write that fails (`ENOSPC`, `EIO`, a read-only file) is never dropped (issue 12): the store
 * has already applied the operation in memory, so losing its lines would make memory and disk
 * disagree, and a later restart would silently undo what was acknowledged. The batch stays at the
 * head and is written again with backoff (50 ms doubling, at most 5 s) on a freshly opened handle,
 * after a newline so that a partly written line stays a line of its own (NeDB skips it as
 * corrupt); everything behind it waits, and nobody is acknowledged until their lines are in the
 * file. Meanwhile {@link failure} names the error (the store reports itself not writable: health
 * degraded, mutating requests 503).
 */
export class GroupAppender {
  private pending: string[] = [];
  private handle: fs.FileHandle | null = null;
  /** The batch being written, if any. */
  private current: Promise<void> | null = null;
  /** The batch collecting text enqueued since the current one started. */
  private next: { promise: Promise<void>; resolve(): void; reject(err: unknown): void } | null = null;

  /**
   * @param onChange told when appends start failing (the error; again every 20 attempts) and when
   *   they land again (null): for the log.
   */
  constructor(
    private readonly filename: string,
    private readonly mode: number,
    private readonly onChange?: (failure: Error | null) => void,
  ) {}

  /** Text enqueued since {@link startTail}, while a compaction copies the file (null otherwise). */
  private tail: string[] | null = null;

  /** Queues `text` (whole lines) for the next write. */
  enqueue(text: string): void {
    if (!text.length) return;
    this.pending.push(text);
    this.tail?.push(text);
  }

  /**
   * From now on, also keeps a copy of every line enqueued (they are still written to the file as
   * usual), until {@link takeTail}: a compaction that copies a snapshot of the collection while
   * writes go on appends these lines to the new file before it replaces the old one.
   */
  startTail(): void {
    this.tail = [];
  }

  /**
   * The lines enqueued since {@link startTail} (or the previous call) and stops keeping them;
   * with `keepGoing`, goes on keeping the lines enqueued from now on.
   */
  takeTail(keepGoing = false): string {
    const text = this.tail?.join('') ?? '';
    this.tail = keepGoing ? [] : null;
    return text;
  }

  /**
   * Resolves when every line enqueued so far is written; while the file cannot be written it waits
   * (the lines are retried, never dropped).
   */
  durable(): Promise<void> {
    if (this.pending.length === 0) return this.next?.promise ?? this.current ?? Promise.resolve();
    if (this.next) return this.next.promise;
    let resolve!: () => void;
    let reject!: (err: unknown) => void;
    const promise = new Promise<void>((res, rej) => ((resolve = res), (reject = rej)));
    this.next = { promise, resolve, reject };
    if (!this.current) this.start();
    return promise;
  }

  private start(): void {
    const batch = this.next!;
    this.next = null;
    const text = this.pending.join('');
    this.pending = [];
    this.current = batch.promise;
    void this.writeUntilDone(text).then(() => {
      batch.resolve();
      this.current = null;
      if (this.next) this.start();
    });
  }

  /** The write failure being retried, or null while appends land. */
  get failure(): Error | null {
    return this.lastFailure;
  }

  private lastFailure: Error | null = null;

  private async writeUntilDone(text: string): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        this.handle ??= await fs.open(this.filename, 'a', this.mode);
        await this.handle.appendFile(attempt === 1 ? text : `\n${text}`, 'utf8');
        if (this.lastFailure) {
          this.lastFailure = null;
          this.onChange?.(null);
        }
        return;
      } catch (err) {
        const first = this.lastFailure === null;
        this.lastFailure = err instanceof Error ? err : new Error(String(err));
        if (first || attempt % 20 === 0) this.onChange?.(this.lastFailure);
        const h = this.handle;
        this.handle = null;
        await h?.close().catch(() => undefined);
        await sleep(backoffMs(attempt, 50, 5000));
      }
    }
  }

  /**
   * Writes what is queued and closes the file handle: the data file is about to be replaced
   * (compaction), so the next write must open the new file.
   */
  async release(): Promise<void> {
    while (this.pending.length || this.current || this.next) await this.durable();
    const h = this.handle;
    this.handle = null;
    await h?.close();
  }
}
