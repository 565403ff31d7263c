import fs from 'node:fs/promises';

/**
 * Group commit for an append-only file (the embedded store's data files): text enqueued while a
 * write is in flight goes out together in the next single write, on one open file handle.
 * {@link durable} resolves once everything enqueued before the call is in the file (handed to
 * the operating system, as `fs.appendFile` did: it survives `kill -9`, not a power cut).
 */
export class GroupAppender {
  private pending: string[] = [];
  private handle: fs.FileHandle | null = null;
  /** The batch being written, if any. */
  private current: Promise<void> | null = null;
  /** The batch collecting text enqueued since the current one started. */
  private next: { promise: Promise<void>; resolve(): void; reject(err: unknown): void } | null = null;

  constructor(
    private readonly filename: string,
    private readonly mode: number,
  ) {}

  /** Queues `text` (whole lines) for the next write. */
  enqueue(text: string): void {
    if (text.length) this.pending.push(text);
  }

  /**
   * Resolves when every line enqueued so far is written.
   * @throws the write error (`ENOSPC`, …) to every caller whose lines were in that write.
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
    const write = (async () => {
      this.handle ??= await fs.open(this.filename, 'a', this.mode);
      await this.handle.appendFile(text, 'utf8');
    })();
    write.then(batch.resolve, batch.reject);
    this.current = batch.promise;
    void write
      .catch(() => undefined)
      .then(() => {
        this.current = null;
        if (this.next) this.start();
      });
  }

  /**
   * Writes what is queued and closes the file handle: the data file is about to be replaced
   * (compaction), so the next write must open the new file.
   */
  async release(): Promise<void> {
    while (this.pending.length || this.current || this.next) await this.durable().catch(() => undefined);
    const h = this.handle;
    this.handle = null;
    await h?.close();
  }
}
