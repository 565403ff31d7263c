import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** What one checkpoint did (SQLite's `wal_checkpoint` row): WAL frames in the log and copied so far. */
export interface CheckpointResult {
  /** 1 when the checkpoint could not take its lock (another one ran). */
  busy: number;
  /** Frames in the WAL. */
  log: number;
  /** Frames of the WAL copied into the database file (all of them when equal to {@link log}). */
  checkpointed: number;
}

/**
 * The worker's code (plain JavaScript, evaluated): a second connection to the database file with
 * `synchronous=FULL`, on which `wal_checkpoint(PASSIVE)` fsyncs the WAL, copies it into the
 * database file and, once every frame is copied, fsyncs the database file before it records them
 * as copied (SQLite's order). It answers each `checkpoint` message with the pragma's row or an
 * `error`; `close` closes the connection and ends the thread.
 */
const WORKER = `
const { workerData, parentPort } = require('node:worker_threads');
const Database = require(workerData.module);
const db = new Database(workerData.file, { fileMustExist: true });
db.pragma('synchronous = FULL');
db.pragma('wal_autocheckpoint = 0');
parentPort.on('message', (msg) => {
  if (msg === 'close') {
    db.close();
    parentPort.close();
    return;
  }
  try {
    const [row] = db.pragma('wal_checkpoint(PASSIVE)');
    parentPort.postMessage({ ok: row });
  } catch (err) {
    parentPort.postMessage({ error: String(err && err.message ? err.message : err) });
  }
});
`;

/**
 * Checkpoints of a SQLite database in WAL mode made on a worker thread's own connection, so the
 * event loop never waits for the copy nor for the database file's fsync, and writes on the main
 * connection go on meanwhile (a PASSIVE checkpoint takes no lock a writer needs).
 *
 * Why this is as safe as a checkpoint made with `synchronous=FULL` on the writing connection:
 * SQLite reuses the WAL from its start (the next write after a checkpoint) only when every frame
 * is recorded as copied, and the checkpointing connection records that only after the database
 * file's fsync; a checkpoint that copied only part of the WAL (a write came in meanwhile) leaves
 * the WAL in use, and the next one copies the rest.
 */
export class Checkpointer {
  private worker: Worker | null = null;
  private pending: { resolve(r: CheckpointResult): void; reject(err: Error): void } | null = null;

  /** @param file - path of the database file (in WAL mode, the WAL file existing). */
  constructor(private readonly file: string) {}

  /** Starts the worker (its connection opens there) unless it runs. */
  private started(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(WORKER, {
      eval: true,
      // the worker's code is plain CommonJS: none of the process's flags (loaders, --input-type) apply
      execArgv: [],
      workerData: { module: createRequire(import.meta.url).resolve('better-sqlite3'), file: this.file },
    });
    worker.unref();
    worker.on('message', (msg: { ok?: CheckpointResult; error?: string }) => {
      worker.unref();
      const p = this.pending;
      this.pending = null;
      if (msg.ok) p?.resolve(msg.ok);
      else p?.reject(new Error(`sqlite checkpoint: ${msg.error ?? 'failed'}`));
    });
    const gone = (err: Error) => {
      if (this.worker === worker) this.worker = null;
      const p = this.pending;
      this.pending = null;
      p?.reject(err);
    };
    worker.on('error', gone);
    worker.on('exit', (code) => gone(new Error(`sqlite checkpoint: worker exited (${code})`)));
    this.worker = worker;
    return worker;
  }

  /**
   * Runs `wal_checkpoint(PASSIVE)` on the worker's connection (one at a time).
   * @returns how many WAL frames there are and how many are copied.
   * @throws {Error} when the checkpoint or its fsyncs fail, or the worker cannot run.
   */
  checkpoint(): Promise<CheckpointResult> {
    if (this.pending) return Promise.reject(new Error('sqlite checkpoint: one is running'));
    const worker = this.started();
    return new Promise<CheckpointResult>((resolve, reject) => {
      this.pending = { resolve, reject };
      // referenced while it works: a process with nothing else to do waits for the answer instead of
      // exiting in the middle of a shutdown that awaits it
      worker.ref();
      worker.postMessage('checkpoint');
    });
  }

  /** Closes the worker's connection and ends the thread (call when no checkpoint runs). */
  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    if (!worker) return;
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    worker.ref();
    worker.postMessage('close');
    await exited;
  }
}
