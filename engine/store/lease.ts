import { randomUUID } from 'node:crypto';
import os from 'node:os';
import { DuplicateKeyError } from '../errors.js';
import type { Logger } from '../logger.js';
import { processIsGone } from './lock.js';
import type { Store } from './port.js';

/** instanceIds of the leases this process holds (its own pid in a lease is a former life otherwise). */
const heldHere = new Set<string>();

/**
 * Whether `holder` certainly is a process that no longer runs: of this host, and its
 * pid gone (or a zombie), or this very pid in a former life (a container restarted).
 */
function holderIsDead(holder: LeaseOwner): boolean {
  if (holder.host !== os.hostname()) return false;
  if (holder.pid === process.pid) return !heldHere.has(holder.instanceId);
  return processIsGone(holder.pid);
}

/**
 * The engine lease: one engine process per database. The venue journal, the
 * actors and the timers assume a single writer, so on MongoDB (which several processes could
 * reach) the process takes a lease document in the database at start-up, renews it, and releases
 * it on shutdown; a second process finds the live lease and refuses to start. It goes through the
 * store port only (a conditional upsert), so it runs, and is tested, on SQLite too.
 */

/** Collection of the lease document. */
export const LEASE_COLLECTION = 'leases';
/** `_id` of the engine's lease document. */
export const ENGINE_LEASE_ID = 'engine';
/** A lease not renewed for this long (ms) has expired and is taken over. */
export const LEASE_TTL_MS = 15_000;
/** How often the holder renews its lease (ms). */
export const LEASE_RENEW_MS = 5_000;

/** Who holds the lease. */
export interface LeaseOwner {
  pid: number;
  host: string;
  /** Epoch ms the holder took the lease. */
  startedAtMs: number;
  /** Random id of the holding process's life (a pid may be reused, on another host too). */
  instanceId: string;
}

/** The lease document: `{_id: 'engine', owner, expiresAtMs}`. */
export interface LeaseDoc {
  _id: string;
  owner: LeaseOwner;
  /** Epoch ms (the holder's wall clock) after which the lease is free. */
  expiresAtMs: number;
}

/** Another live process holds the engine lease of this database. Its message is the one line to print. */
export class EngineLeaseHeldError extends Error {
  constructor(
    readonly location: string,
    readonly holder: LeaseOwner | null,
    readonly expiresAtMs: number | null,
  ) {
    super(
      `${location} is in use by another engine process` +
        (holder
          ? ` (pid ${holder.pid} on ${holder.host}, instance ${holder.instanceId}, ` +
            `since ${new Date(holder.startedAtMs).toISOString()})`
          : '') +
        ': one engine process per database; stop it, or give this one another database (its lease expires ' +
        `${LEASE_TTL_MS / 1000} s after it stops renewing)`,
    );
    this.name = 'EngineLeaseHeldError';
  }
}

/** The lease was taken by another process, or could not be renewed before it expired. */
export class EngineLeaseLostError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EngineLeaseLostError';
  }
}

/** A held engine lease. */
export interface EngineLease {
  readonly owner: LeaseOwner;
  /** Epoch ms the lease runs to, as last written. */
  readonly expiresAtMs: number;
  /** Renews once now (the timer does this every `renewMs`). @throws {EngineLeaseLostError} */
  renew(): Promise<void>;
  /** Stops renewing and deletes the lease document if it is still ours (idempotent). */
  release(): Promise<void>;
}

/** Options of {@link takeEngineLease}. */
export interface LeaseOptions {
  ttlMs?: number;
  renewMs?: number;
  /** Wall clock in epoch ms (tests). Default `Date.now`. */
  now?: () => number;
  log?: Logger;
  /**
   * Called once when the lease is lost: found taken by another process, or not renewed before it
   * expired. Default: throw from a timer, which the process's `uncaughtException` handler turns
   * into a fatal exit (exit 1), like the SQLite store's lost DATA_DIR lock.
   */
  onLost?: (err: EngineLeaseLostError) => void;
}

/**
 * Takes the engine lease of the database behind `store`: a conditional upsert of
 * `{_id: 'engine'}` that matches only a lease whose `expiresAtMs` passed (or none), so exactly one
 * of several racing processes gets it (the others hit the duplicate `_id`). A lease whose holder is
 * a process of this host that no longer runs (its pid gone or a zombie) is taken over at once,
 * as the SQLite store's `DATA_DIR` lock does (engine/store/lock.ts). Renewed every `renewMs`
 * while held; a renewal that fails is retried at the next tick, and the lease counts as lost when
 * it finds another owner, or when it would expire before the next try.
 * @throws {EngineLeaseHeldError} when another process holds a lease that has not expired.
 */
export async function takeEngineLease(store: Store, options: LeaseOptions = {}): Promise<EngineLease> {
  const ttlMs = options.ttlMs ?? LEASE_TTL_MS;
  const renewMs = options.renewMs ?? LEASE_RENEW_MS;
  const now = options.now ?? Date.now;
  const leases = await store.collection<LeaseDoc>(LEASE_COLLECTION);
  const owner: LeaseOwner = { pid: process.pid, host: os.hostname(), startedAtMs: now(), instanceId: randomUUID() };
  let expiresAtMs = now() + ttlMs;
  // alive from the attempt on: a racer of this process that reads the lease before this write is
  // acknowledged (SQLite answers writes after their commit, reads see them at once) must not take it as dead
  heldHere.add(owner.instanceId);
  try {
    await leases.updateOne(
      { _id: ENGINE_LEASE_ID, expiresAtMs: { $lt: now() } },
      { owner, expiresAtMs },
      { upsert: true },
    );
  } catch (err) {
    if (!(err instanceof DuplicateKeyError)) {
      heldHere.delete(owner.instanceId);
      throw err;
    }
    const held = await leases.findOne({ _id: ENGINE_LEASE_ID });
    // A holder of this host whose process is gone (kill -9, then a supervisor's restart): take over
    // at once, conditionally on that very holder, instead of waiting for the expiry.
    const takenOver =
      held !== null &&
      holderIsDead(held.owner) &&
      (await leases.updateOne(
        { _id: ENGINE_LEASE_ID, 'owner.instanceId': held.owner.instanceId },
        { owner, expiresAtMs },
      )) === 1;
    if (!takenOver) {
      heldHere.delete(owner.instanceId);
      throw new EngineLeaseHeldError(store.location, held?.owner ?? null, held?.expiresAtMs ?? null);
    }
    options.log?.warn(
      { previous: held.owner },
      `engine lease: took over the lease of pid ${held.owner.pid}, which no longer runs on this host`,
    );
  }

  const onLost =
    options.onLost ??
    ((err: EngineLeaseLostError) => {
      setImmediate(() => {
        throw err;
      });
    });
  let released = false;
  let lost = false;
  let renewing: Promise<void> | null = null;

  const renew = async (): Promise<void> => {
    if (released || lost) return;
    const attemptAtMs = now();
    let matched: number;
    try {
      matched = await leases.updateOne(
        { _id: ENGINE_LEASE_ID, 'owner.instanceId': owner.instanceId },
        { expiresAtMs: attemptAtMs + ttlMs },
      );
    } catch (err) {
      if (attemptAtMs + renewMs < expiresAtMs) {
        options.log?.warn({ err: (err as Error).message }, 'engine lease: renewal failed; retrying at the next tick');
        return;
      }
      return lose(
        `could not renew the engine lease of ${store.location} before it expired (${(err as Error).message})`,
      );
    }
    if (released) return;
    if (matched === 0) {
      const other = await leases.findOne({ _id: ENGINE_LEASE_ID }).catch(() => null);
      return lose(
        `the engine lease of ${store.location} was taken by another process` +
          (other
            ? ` (pid ${other.owner.pid} on ${other.owner.host}, instance ${other.owner.instanceId})`
            : ' (lease document gone)'),
      );
    }
    expiresAtMs = attemptAtMs + ttlMs;
  };
  const lose = (why: string) => {
    lost = true;
    heldHere.delete(owner.instanceId);
    clearInterval(timer);
    onLost(new EngineLeaseLostError(`${why}: another engine may now use the database; stopping`));
  };
  const timer = setInterval(() => {
    renewing ??= renew().finally(() => (renewing = null));
  }, renewMs);
  timer.unref();

  return {
    owner,
    get expiresAtMs() {
      return expiresAtMs;
    },
    async renew() {
      await (renewing ??= renew().finally(() => (renewing = null)));
      if (lost) throw new EngineLeaseLostError(`the engine lease of ${store.location} is lost`);
    },
    async release() {
      if (released) return;
      released = true;
      heldHere.delete(owner.instanceId);
      clearInterval(timer);
      await renewing;
      if (!lost) await leases.deleteMany({ _id: ENGINE_LEASE_ID, 'owner.instanceId': owner.instanceId });
    },
  };
}
