import { hash } from 'node:crypto';
import { KEY_SHOWN_ONCE } from './auth.js';
import type { Clock } from './clock.js';
import { DomainError, DuplicateKeyError, errors } from './errors.js';
import type { Logger } from './logger.js';
import type { Collection, CollectionLayout, Store, UnitOfWork } from './store/port.js';

/** How long a completed request's response is kept for replay (spec 5.6: 24 h). */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60_000;
/**
 * How long a claim of a running request holds. A claim older than this belongs to a process that
 * died mid-request: the next retry takes it over instead of answering 409 for a day.
 */
export const IDEMPOTENCY_LEASE_MS = 60_000;
const SWEEP_EVERY_MS = 10 * 60_000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** One `Idempotency-Key` as stored: the claim, then the response to replay. */
interface IdempotencyDoc {
  /** SHA-256 of API key id + `Idempotency-Key`: keys are scoped to the API token. */
  _id: string;
  keyId: string;
  /** SHA-256 of method, path, acting user and canonical body: "the same request". */
  fingerprint: string;
  state: 'running' | 'done';
  /** Epoch ms until which a `running` claim holds. */
  leaseUntilMs: number;
  status: number | null;
  /** Response body as JSON text. */
  body: string | null;
  headers: Record<string, string> | null;
  createdAtMs: number;
  /** Epoch ms after which the record is gone (sweep on SQLite). */
  expiresAtMs: number;
  /**
   * The same instant as a Date, for MongoDB's TTL index; left out on SQLite (its sweep
   * reads `expiresAtMs`), where a Date would send every record through NeDB's slow line format.
   */
  expiresAt?: Date;
}

/** The `migrations` record of {@link forgetStoredKeys}. */
const KEYS_FORGOTTEN = 'idempotencyKeys: minted api keys removed from stored responses';

/**
 * Once per store: removes the `api_key` of key mints from the responses stored before replays left
 * it out (a key mint's record now holds its replay body, {@link KEY_SHOWN_ONCE}). Only 201s are
 * read, and only once (a `migrations` record); idempotent, so a crash before that record just runs
 * it again.
 */
async function forgetStoredKeys(store: Store, docs: Collection<IdempotencyDoc>, clock: Clock): Promise<void> {
  const migrations = await store.collection<{ _id: string; atMs: number }>('migrations');
  if (await migrations.findOne({ _id: KEYS_FORGOTTEN })) return;
  for (const d of await docs.find({ status: 201 })) {
    if (d.body === null || !d.body.includes('"api_key"')) continue;
    const { api_key: secret, ...rest } = JSON.parse(d.body) as Record<string, unknown>;
    if (typeof secret !== 'string' || typeof rest.key_id !== 'string') continue;
    await docs.updateOne({ _id: d._id }, { body: JSON.stringify({ ...rest, message: KEY_SHOWN_ONCE }) });
  }
  await migrations.replaceOne({ _id: KEYS_FORGOTTEN, atMs: clock.now() });
}

/** A stored response to send again. */
export interface ReplayedResponse {
  status: number;
  body: unknown;
  headers: Record<string, string>;
  /** `body` as JSON text when the caller has it already (stored as is instead of serialized again). */
  bodyJson?: string;
}

/** The JSON text stored for a response body (null: no body). */
function bodyText(res: ReplayedResponse): string | null {
  return res.body === undefined ? null : (res.bodyJson ?? JSON.stringify(res.body));
}

/** The collection of idempotency records. */
const RECORDS = 'idempotencyKeys';

/**
 * How the records are stored: the answer's body, JSON text, as it is (on SQLite a column of its
 * own: neither escaped into the record's JSON when written nor unescaped when read).
 */
const RECORD_LAYOUT: CollectionLayout = { textFields: ['body'] };

/**
 * What an abandoned claim leaves of a record a step had stored its answer in (that step created a
 * resource): no answer and a lease already over, so the next attempt runs at once, as after a
 * delete, but takes the record over with its first attempt's time (`ExecuteClaim.atMs`), and so
 * names what that attempt created as it did.
 */
const UNANSWERED: Partial<IdempotencyDoc> = { status: null, body: null, headers: null, leaseUntilMs: 0 };

/**
 * A claim to run a request: `complete` stores its response (state `done`), `abandon` forgets it.
 * `recordWith` stores the response the request will give as of now, inside a unit of work (the
 * actor step that produced it: `ActorHost.bindStepWrites`), so that step and its answer commit
 * together; the record stays `running` (a duplicate meanwhile still answers 409) until `complete`.
 * A record left `running` with an answer by a process that died is replayed (see `begin`).
 */
export interface ExecuteClaim {
  kind: 'execute';
  /**
   * When the first attempt of this request claimed its key (epoch ms): now for a new claim, the
   * earlier attempt's time when this claim takes over its record (an abandoned or expired one).
   * What a time-ordered id of the resource the request creates is built from
   * ({@link timeOrderedSeed}), so that a retry names the same resource.
   */
  atMs: number;
  complete(res: ReplayedResponse): Promise<void>;
  abandon(): Promise<void>;
  recordWith(tx: UnitOfWork, res: ReplayedResponse): Promise<void>;
  /**
   * The JSON text the last `recordWith` stored for `body` when it was given this very object (the
   * response then sends the same text without serializing it again); undefined otherwise.
   */
  storedJson(body: unknown): string | undefined;
}

/** What {@link IdempotencyService.begin} decided. */
export type IdempotencyClaim = { kind: 'replay'; response: ReplayedResponse } | ExecuteClaim;

/** The body last given to a claim's `recordWith` and the text stored for it ({@link ExecuteClaim.storedJson}). */
function lastRecorded(): { set(body: unknown, text: string | null): void; get(body: unknown): string | undefined } {
  let body: unknown;
  let text: string | undefined;
  return {
    set(b, t) {
      body = b;
      text = t ?? undefined;
    },
    get: (b) => (b !== undefined && b === body ? text : undefined),
  };
}

/** The response a record holds (a `done` one, or a `running` one with an answer so far). */
function storedResponse(doc: IdempotencyDoc): ReplayedResponse {
  return {
    status: doc.status!,
    body: doc.body === null ? undefined : JSON.parse(doc.body),
    headers: doc.headers ?? {},
  };
}

/** JSON with object keys sorted, so `{a,b}` and `{b,a}` are the same body. */
export function canonicalJson(value: unknown): string {
  // built in one pass, without the intermediate arrays of entries (it runs on every mutating request)
  if (typeof value === 'string') return JSON.stringify(value);
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) out += (i > 0 ? ',' : '') + canonicalJson(value[i]);
    return `${out}]`;
  }
  if (value !== null && typeof value === 'object') {
    const obj = value as Record<string, unknown>;
    const keys = sortedKeys(Object.keys(obj));
    let out = '{';
    let first = true;
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i]!;
      const v = obj[k];
      if (v === undefined) continue;
      out += `${first ? '' : ','}${quotedKey(k)}:${canonicalJson(v)}`;
      first = false;
    }
    return `${out}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * `keys` sorted in place by UTF-16 code units (as `<` and the default `sort` order them): by insertion
 * for the few keys of a request body (no comparator calls through `sort`), by `sort` beyond.
 */
function sortedKeys(keys: string[]): string[] {
  if (keys.length > 16) return keys.sort();
  for (let i = 1; i < keys.length; i++) {
    const k = keys[i]!;
    let j = i - 1;
    while (j >= 0 && keys[j]! > k) {
      keys[j + 1] = keys[j]!;
      j--;
    }
    keys[j + 1] = k;
  }
  return keys;
}

/** Keys as JSON strings, by key: request bodies repeat the same few field names. Bounded: filled up to its limit. */
const quotedKeys = new Map<string, string>();
const QUOTED_KEYS_MAX = 1024;

/** `JSON.stringify(k)`, remembered for the first {@link QUOTED_KEYS_MAX} keys seen (short ones only). */
function quotedKey(k: string): string {
  let q = quotedKeys.get(k);
  if (q === undefined) {
    q = JSON.stringify(k);
    if (quotedKeys.size < QUOTED_KEYS_MAX && k.length <= 64) quotedKeys.set(k, q);
  }
  return q;
}

/** `IDEMPOTENCY_KEY_CONFLICT` (API: 409, the reference's code): the key was used for another request. */
function keyConflict(): DomainError {
  return new DomainError(
    'IDEMPOTENCY_KEY_CONFLICT',
    'this Idempotency-Key was already used for a different request (method, path, ' +
      'user or body); send a fresh UUID for a new operation',
  );
}

/** `IDEMPOTENCY_KEY_IN_USE` (API: 409, Retry-After 1): the first request with this key is still running. */
function inUse(): DomainError {
  return new DomainError(
    'IDEMPOTENCY_KEY_IN_USE',
    'a request with this Idempotency-Key is still being processed; retry shortly to receive its response',
    { retryAfterSec: 1 },
  );
}

/**
 * SHA-256 of `text` (UTF-8), hex: the one-shot `crypto.hash`, without a Hash object per call (three calls per
 * mutating request).
 */
function sha256(text: string): string {
  return hash('sha256', text, 'hex');
}

/**
 * A time-ordered UUID (the layout of a UUIDv7): the first 48 bits are `atMs` (epoch ms), the last
 * 74 bits come from `uuid` (any UUID: a {@link IdempotencyService.resourceSeed}, or a random one).
 * Ids made this way sort by their time, so a store's index on them grows at its end (one page
 * touched by the inserts of a commit, instead of one random page each); the same `atMs` and `uuid`
 * give the same id.
 */
export function timeOrderedSeed(atMs: number, uuid: string): string {
  if (atMs !== lastSeedMs) {
    const t = Math.max(0, Math.floor(atMs)).toString(16).padStart(12, '0').slice(-12);
    lastSeedPrefix = `${t.slice(0, 8)}-${t.slice(8, 12)}-7`;
    lastSeedMs = atMs;
  }
  return lastSeedPrefix + uuid.slice(15);
}

/** The time part {@link timeOrderedSeed} made last, and its time: ids made in the same millisecond share it. */
let lastSeedMs = Number.NaN;
let lastSeedPrefix = '';

/**
 * `Idempotency-Key` handling of spec 5.6 for every POST, PATCH and DELETE:
 * - the header is required and must be a UUID (400 otherwise);
 * - keys are scoped to the API key that sent them;
 * - the first request claims the key and runs; its response (2xx or 4xx) is stored for 24 h;
 * - a retry of the same request gets the stored status and body with `Idempotent-Replayed: true`
 *   and runs nothing;
 * - the same key on a different request (method, path, acting user or body) answers 409
 *   (`idempotency_key_conflict`);
 * - a duplicate arriving while the first still runs answers 409 with `Retry-After: 1` (it does
 *   not wait: the client's retry then gets the replay);
 * - a 5xx is not stored: the claim is released so that a retry runs again.
 * Records live in the store (they survive a restart): a TTL index expires them on MongoDB, a
 * periodic sweep on SQLite; reads ignore expired records either way.
 *
 * Claims of running requests: on MongoDB, where several processes may share the store, a claim is
 * a stored `running` record (insert, then update on completion). The SQLite store belongs to one
 * process, so there a claim is held in memory and only the completed response is written (one
 * write per request instead of two). Both behave the same after a crash: a claim left by a
 * process that died is gone (memory) or taken over once its lease ends (stored), unless a step of
 * the request stored its answer with it ({@link ExecuteClaim.recordWith}): that answer is replayed.
 */
export class IdempotencyService {
  private sweeper: NodeJS.Timeout | null = null;
  /** In-memory claims (SQLite only): record id → fingerprint and lease. */
  private readonly running: Map<string, { fingerprint: string; leaseUntilMs: number }> | null;

  private constructor(
    private readonly docs: Collection<IdempotencyDoc>,
    private readonly clock: Clock,
    private readonly log: Logger,
    claimsInMemory: boolean,
    /** Whether records carry `expiresAt` (a Date) for a TTL index: on MongoDB. */
    private readonly ttlDates: boolean,
  ) {
    this.running = claimsInMemory ? new Map() : null;
  }

  /**
   * @param options.claimsInMemory - hold claims of running requests in memory (default: on
   *   SQLite, which one process owns); false stores them, as several processes need.
   */
  static async open(
    store: Store,
    clock: Clock,
    log: Logger,
    options: { claimsInMemory?: boolean } = {},
  ): Promise<IdempotencyService> {
    const docs = await store.collection<IdempotencyDoc>(
      RECORDS,
      [
        { fields: ['expiresAt'], expireAfterSeconds: 0, adapters: ['mongodb'] },
        { fields: ['expiresAtMs'], adapters: ['sqlite'] },
      ],
      RECORD_LAYOUT,
    );
    await forgetStoredKeys(store, docs, clock);
    // SQLite belongs to one process (the DATA_DIR lock): claims in memory, sweep
    const local = store.adapter !== 'mongodb';
    const svc = new IdempotencyService(docs, clock, log, options.claimsInMemory ?? local, !local);
    if (local) {
      await svc.sweep();
      svc.sweeper = setInterval(
        () => void svc.sweep().catch((err) => log.error({ err }, 'idempotency sweep failed')),
        SWEEP_EVERY_MS,
      );
      svc.sweeper.unref();
    }
    return svc;
  }

  /**
   * The id seed of whatever a request with this `Idempotency-Key` creates (a UUID derived from the
   * API key, the idempotency key, the acting user and the path): the order it places is
   * `ord_<seed>`, the strategy `stg_<timeOrderedSeed(claim's atMs, seed)>` (a retry takes over the
   * first attempt's time with its record, `ExecuteClaim.atMs`). A retry after a crash between the order's creation
   * and the recording of its response (the claim of a running request is in memory on
   * SQLite; on MongoDB an abandoned claim is taken over after its lease) finds what the
   * first attempt created under the same id, and answers with it instead of doing it again
   * (spec 5.6: "performs nothing again").
   */
  static resourceSeed(keyId: string, key: string, userId: string | null, path: string): string {
    const hex = sha256(`${keyId}\u0000${key}\u0000${userId ?? ''}\u0000${path}`);
    const variant = '89ab'[parseInt(hex[16]!, 16) % 4];
    return (
      `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-` +
      `${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`
    );
  }

  /**
   * Reads and checks the `Idempotency-Key` header.
   * @returns the key.
   * @throws {DomainError} `INVALID_REQUEST` when missing or not a UUID.
   */
  static keyOf(header: string | string[] | undefined): string {
    const key = Array.isArray(header) ? header[0] : header;
    if (key === undefined || key === '') {
      throw errors.badRequest(
        'the Idempotency-Key header is required on every POST, PATCH and DELETE: send a ' +
          'fresh UUID v4 per operation, the same one when retrying',
      );
    }
    if (!UUID.test(key))
      throw errors.badRequest(
        `Idempotency-Key must be a UUID (for example ${'3f0c9a4e-8b1d-4c52-9e7a-2d6f1b0a9c31'}); ` +
          `received ${JSON.stringify(key.slice(0, 80))}`,
      );
    return key.toLowerCase();
  }

  /**
   * Claims `key` for a request, or finds its stored response.
   * @param keyId - id of the API key that sent the request (the scope of idempotency keys).
   * @param request - what makes two requests "the same": method, path, acting user, parsed body.
   * @throws {DomainError} `IDEMPOTENCY_KEY_IN_USE` while the first request with this key still runs;
   *   `IDEMPOTENCY_KEY_CONFLICT` when the key was used for a different request.
   */
  async begin(
    keyId: string,
    key: string,
    request: { method: string; path: string; userId: string | null; body: unknown },
  ): Promise<IdempotencyClaim> {
    const _id = sha256(`${keyId}\u0000${key}`);
    const fingerprint = sha256(
      `${request.method.toUpperCase()} ${request.path}\u0000` +
        `${request.userId ?? ''}\u0000${canonicalJson(request.body)}`,
    );
    if (this.running) return this.beginInMemory(keyId, _id, fingerprint);
    for (let attempt = 0; attempt < 3; attempt++) {
      const now = this.clock.now();
      const doc: IdempotencyDoc = {
        _id,
        keyId,
        fingerprint,
        state: 'running',
        leaseUntilMs: now + IDEMPOTENCY_LEASE_MS,
        status: null,
        body: null,
        headers: null,
        createdAtMs: now,
        expiresAtMs: now + IDEMPOTENCY_TTL_MS,
        expiresAt: new Date(now + IDEMPOTENCY_TTL_MS),
      };
      try {
        await this.docs.insertOne(doc);
        return this.claim(doc);
      } catch (err) {
        if (!(err instanceof DuplicateKeyError)) throw err;
      }
      const existing = await this.docs.findOne({ _id });
      if (!existing) continue; // expired and swept between the two calls: claim again
      // a claim whose process died after a step recorded the answer (recordWith): that answer is replayed
      const abandoned = existing.state === 'running' && existing.leaseUntilMs <= now;
      const stale = existing.expiresAtMs <= now || (abandoned && existing.status === null);
      if (stale) {
        // Take over an expired record or an abandoned claim, unless another retry got there first.
        // the first attempt's time stays: what it created is named after it (timeOrderedSeed)
        doc.createdAtMs = existing.createdAtMs;
        const { _id: _same, ...fields } = doc;
        const taken = await this.docs.updateOne(
          { _id, state: existing.state, leaseUntilMs: existing.leaseUntilMs, expiresAtMs: existing.expiresAtMs },
          fields,
        );
        if (taken === 1) return this.claim(doc);
        continue;
      }
      if (existing.fingerprint !== fingerprint) throw keyConflict();
      if (existing.state === 'running' && !abandoned) throw inUse();
      return { kind: 'replay', response: storedResponse(existing) };
    }
    throw new DomainError('IDEMPOTENCY_KEY_IN_USE', 'this Idempotency-Key is contended; retry shortly', {
      retryAfterSec: 1,
    });
  }

  /** {@link begin} with the claim held in memory (SQLite: one process owns the store). */
  private async beginInMemory(keyId: string, _id: string, fingerprint: string): Promise<IdempotencyClaim> {
    const running = this.running!;
    const now = this.clock.now();
    const held = running.get(_id);
    if (held && held.leaseUntilMs > now) {
      if (held.fingerprint !== fingerprint) throw keyConflict();
      throw inUse();
    }
    const existing = await this.docs.findOne({ _id });
    // A stored `running` record with an answer is one whose process died after the step that
    // recorded it (this process holds its own claims in memory): that answer is replayed.
    const answered = existing !== null && (existing.state === 'done' || existing.status !== null);
    if (existing && existing.expiresAtMs > now && (answered || existing.leaseUntilMs > now)) {
      if (existing.fingerprint !== fingerprint) throw keyConflict();
      if (!answered) throw inUse();
      return { kind: 'replay', response: storedResponse(existing) };
    }
    const meanwhile = running.get(_id);
    if (meanwhile && meanwhile !== held && meanwhile.leaseUntilMs > now) throw inUse(); // claimed while we read
    const claim = { fingerprint, leaseUntilMs: now + IDEMPOTENCY_LEASE_MS };
    running.set(_id, claim);
    // the first attempt's time: that of the record this claim takes over (expired, or kept by an abandon)
    const atMs = existing?.createdAtMs ?? now;
    const release = () => {
      if (running.get(_id) === claim) running.delete(_id);
    };
    /** The last answer stored by recordWith (its status, body and headers as stored), or null. */
    let recorded: IdempotencyDoc | null = null;
    const last = lastRecorded();
    /** Whether `doc` holds the answer of `earlier` (status, body and headers), compared field by field. */
    const sameAnswer = (earlier: IdempotencyDoc, doc: IdempotencyDoc) =>
      earlier.status === doc.status &&
      earlier.body === doc.body &&
      (earlier.headers === doc.headers || JSON.stringify(earlier.headers) === JSON.stringify(doc.headers));
    const recordOf = (res: ReplayedResponse, state: IdempotencyDoc['state'], at: number): IdempotencyDoc => {
      const doc: IdempotencyDoc = {
        _id,
        keyId,
        fingerprint,
        state,
        leaseUntilMs: claim.leaseUntilMs,
        status: res.status,
        body: bodyText(res),
        headers: res.headers,
        createdAtMs: atMs,
        expiresAtMs: at + IDEMPOTENCY_TTL_MS,
      };
      if (this.ttlDates) doc.expiresAt = new Date(at + IDEMPOTENCY_TTL_MS);
      return doc;
    };
    return {
      kind: 'execute',
      atMs,
      recordWith: async (tx, res) => {
        const doc = recordOf(res, 'running', this.clock.now());
        recorded = doc;
        last.set(res.body, doc.body);
        await tx.collection<IdempotencyDoc>(RECORDS).replaceOne(doc);
      },
      storedJson: last.get,
      complete: async (res) => {
        try {
          const doc = recordOf(res, 'done', this.clock.now());
          // The answer a step stored already: kept as it is (once the claim is released, a stored
          // `running` record with an answer replays like a `done` one; this process owns the store).
          if (recorded !== null && sameAnswer(recorded, doc)) return;
          // an expired (or abandoned) record of this key, or the answer recorded so far, is replaced
          if (existing || recorded !== null) await this.docs.replaceOne(doc);
          else await this.docs.insertOne(doc);
        } finally {
          release();
        }
      },
      abandon: async () => {
        try {
          if (recorded !== null) await this.docs.updateOne({ _id, state: 'running' }, UNANSWERED);
        } finally {
          release();
        }
      },
    };
  }

  private claim(doc: IdempotencyDoc): IdempotencyClaim {
    const last = lastRecorded();
    let recorded = false;
    return {
      kind: 'execute',
      atMs: doc.createdAtMs,
      storedJson: last.get,
      recordWith: async (tx, res) => {
        const body = bodyText(res);
        last.set(res.body, body);
        recorded = true;
        await tx
          .collection<IdempotencyDoc>(RECORDS)
          .updateOne(
            { _id: doc._id, leaseUntilMs: doc.leaseUntilMs },
            { status: res.status, body, headers: res.headers },
          );
      },
      complete: async (res) => {
        await this.docs.updateOne(
          { _id: doc._id, leaseUntilMs: doc.leaseUntilMs },
          { state: 'done', status: res.status, body: bodyText(res), headers: res.headers },
        );
      },
      abandon: async () => {
        const mine = { _id: doc._id, state: 'running', leaseUntilMs: doc.leaseUntilMs };
        if (recorded && (await this.docs.updateOne({ ...mine, status: { $ne: null } }, UNANSWERED)) === 1) return;
        await this.docs.deleteMany(mine);
      },
    };
  }

  /** Deletes expired records (SQLite's stand-in for a TTL index). @returns how many. */
  async sweep(): Promise<number> {
    const n = await this.docs.deleteMany({ expiresAtMs: { $lte: this.clock.now() } });
    if (n) this.log.debug({ removed: n }, 'idempotency records expired');
    return n;
  }

  /** Stops the sweep timer. */
  close(): void {
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = null;
  }
}
