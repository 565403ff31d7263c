import { Agenda, type AgendaBackend, type Job } from 'agenda';
import { MongoBackend } from '@agendajs/mongo-backend';
import type { Logger } from '../logger.js';
import type { Store } from '../store/port.js';
import { MongoStore } from '../store/mongo.js';
import { EmbeddedAgendaBackend } from './embedded-backend.js';

/** Job name of every actor timer. */
export const TIMER_JOB = 'actor.timer';

/** Payload of a timer job and of the `timer.fired` event it turns into. */
export interface TimerData {
  actorId: string;
  /** Name of the deadline in the actor's context, e.g. `expiry`, `nextSlice`. */
  timerName: string;
  /** When it was due, epoch ms; lets the actor ignore a stale or duplicate firing. */
  atMs: number;
}

/** Receives due timers. Must be idempotent: a timer may fire twice (crash between run and save). */
export type TimerSink = (timer: TimerData) => Promise<void>;

/**
 * Durable timers on Agenda 6 (issue 2, deliverable 5): the Mongo backend on MongoDB, our embedded
 * backend otherwise. One job per (actor, timer name): scheduling again moves it, cancelling
 * removes it. Jobs survive restarts; a job that comes due while the service is down runs at start.
 */
export class TimerService {
  private readonly agenda: Agenda;
  private started = false;

  constructor(
    store: Store,
    private readonly sink: TimerSink,
    private readonly log: Logger,
    pollMs: number,
  ) {
    const backend: AgendaBackend =
      store instanceof MongoStore ? new MongoBackend({ mongo: store.database, collection: 'agendaJobs' }) : new EmbeddedAgendaBackend(store);
    this.agenda = new Agenda({ backend, processEvery: pollMs, defaultLockLifetime: 60_000, maxConcurrency: 50, defaultConcurrency: 20, removeOnComplete: true });
    this.agenda.define<TimerData>(TIMER_JOB, async (job: Job<TimerData>) => {
      await this.sink(job.attrs.data);
    });
    this.agenda.on('error', (err) => this.log.error({ err }, 'scheduler error'));
    this.agenda.on('fail', (err: unknown, job: unknown) => this.log.warn({ err, job: (job as Job)?.attrs?.data }, 'timer delivery failed'));
  }

  /** Starts processing due jobs. */
  async start(): Promise<void> {
    await this.agenda.start();
    this.started = true;
  }

  /** Whether the scheduler is processing jobs (for /healthz). */
  get running(): boolean {
    return this.started;
  }

  /**
   * Arms (or moves) timer `timerName` of `actorId` to fire at `atMs` (epoch ms).
   * Delivered as a {@link TimerData} to the sink at or after that time.
   */
  async schedule(actorId: string, timerName: string, atMs: number): Promise<void> {
    const data: TimerData = { actorId, timerName, atMs };
    await this.agenda
      .create<TimerData>(TIMER_JOB, data)
      .unique({ 'data.actorId': actorId, 'data.timerName': timerName })
      .schedule(new Date(atMs))
      .save();
  }

  /** Disarms timer `timerName` of `actorId`; a no-op when it is not armed. */
  async cancel(actorId: string, timerName: string): Promise<void> {
    await this.agenda.cancel({ name: TIMER_JOB, data: { actorId, timerName } });
  }

  /** Disarms every timer of `actorId`. */
  async cancelAll(actorId: string): Promise<void> {
    await this.agenda.cancel({ name: TIMER_JOB, data: { actorId } });
  }

  /** Stops taking new jobs and waits (up to `timeoutMs`) for running ones. */
  async drain(timeoutMs: number): Promise<void> {
    if (!this.started) return;
    this.started = false;
    await this.agenda.drain({ timeout: timeoutMs });
  }
}
