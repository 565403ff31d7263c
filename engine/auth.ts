import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Clock } from './clock.js';
import { DuplicateKeyError, errors } from './errors.js';
import type { Collection, Store } from './store/port.js';

/** Additive scopes of spec part 5. */
export const SCOPES = [
  'trade.read',
  'trade.execute',
  'trade.cancel',
  'trade.withdraw',
  'trade.combos',
  'trade.users',
] as const;
export type Scope = (typeof SCOPES)[number];

/** Scopes a per-user key may hold: everything but provisioning, which is partner-level. */
export const USER_KEY_SCOPES: readonly Scope[] = SCOPES.filter((s) => s !== 'trade.users');

/** A stored API key. The token itself is never stored: only its SHA-256. */
export interface ApiKeyDoc {
  /** Key id (`key_…`), safe to log and to show. */
  _id: string;
  partnerId: string;
  /** `master` keys are partner-level; `user` keys are bound to `userId`. */
  kind: 'master' | 'user';
  /** Bound user's `platform_user_id`; null for master keys. */
  userId: string | null;
  scopes: Scope[];
  /** Hex SHA-256 of the whole token. */
  hash: string;
  /** `env` (MASTER_API_KEY), `generated` (first start) or `minted` (POST …/api-keys). */
  source: 'env' | 'generated' | 'minted';
  createdAtMs: number;
  expiresAtMs: number | null;
  revokedAtMs: number | null;
}

/** Who is calling: the authenticated key, resolved per request. */
export interface Principal {
  keyId: string;
  partnerId: string;
  kind: 'master' | 'user';
  userId: string | null;
  scopes: Scope[];
  expiresAtMs: number | null;
  createdAtMs: number;
}

/**
 * What a replayed key mint says in place of its token (`message`): the token is shown once and
 * never kept, so it cannot be shown again.
 */
export const KEY_SHOWN_ONCE =
  'this request was already answered: the api_key is shown once, in that first answer, and is not kept (only ' +
  'its hash is); if it was lost, revoke this key_id and mint a new key with a new Idempotency-Key';

const TOKEN_SHAPE = /^[A-Za-z0-9._~+/=-]{16,512}$/;

function sha256(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** Generates a token: `pts_` + 256 random bits, base64url. */
function newToken(): string {
  return `pts_${randomBytes(32).toString('base64url')}`;
}

function newKeyId(): string {
  return `key_${randomBytes(12).toString('hex')}`;
}

/** The principal of a stored key (frozen: shared by every request the key authenticates). */
function principalOf(doc: ApiKeyDoc | null): Readonly<Principal> | null {
  if (!doc) return null;
  return Object.freeze({
    keyId: doc._id,
    partnerId: doc.partnerId,
    kind: doc.kind,
    userId: doc.userId,
    scopes: Object.freeze([...doc.scopes]) as Scope[],
    expiresAtMs: doc.expiresAtMs,
    createdAtMs: doc.createdAtMs,
  });
}

/**
 * How long a key read from the store is trusted without reading it again (ms). A revocation made
 * by this process applies at once; one made by another process sharing a MongoDB store applies
 * here within this time.
 */
export const KEY_CACHE_MS = 5_000;
const KEY_CACHE_SIZE = 10_000;

/**
 * Whether a cached key read at `entry.readAtMs` may still be trusted at `now` (epoch
 * ms): read within {@link KEY_CACHE_MS}, and not in the future (a clock set back).
 */
const fresh = (entry: { readAtMs: number }, now: number): boolean =>
  now - entry.readAtMs < KEY_CACHE_MS && entry.readAtMs <= now;

/** A key read from the store (or its absence), as cached by hash and, when known, by token. */
interface CachedKey {
  hash: string;
  doc: ApiKeyDoc | null;
  /** Epoch ms the document was read. */
  readAtMs: number;
  /** The key's principal (shared by the requests it authenticates; frozen); null for an unknown hash. */
  principal: Readonly<Principal> | null;
  /** False once revoked, replaced or evicted: an entry reached by token is then not trusted. */
  live: boolean;
}

/**
 * API keys of spec part 5: issuing, verifying and revoking. Tokens are random (256 bits), stored
 * only as SHA-256 hashes, compared in constant time and never logged. Keys read for
 * authentication are cached by hash for {@link KEY_CACHE_MS}: every request authenticates, and
 * the store read was a fifth of a cheap request's cost; a known token is also kept (in memory
 * only, never logged or stored) so that its next requests skip the hash too ({@link cached}).
 * A revocation or a mint made here ends the cached entries at once, including a read under way.
 */
export class ApiKeyService {
  /** hash → key document and the epoch ms it was read. */
  private readonly cache = new Map<string, CachedKey>();
  /**
   * token → the same entry, for known keys only (an unknown token is never kept): a repeated
   * token skips the SHA-256 and the comparison. An entry is trusted while live and younger than
   * {@link KEY_CACHE_MS}; revocation, minting and start-up replacement end it at once.
   */
  private readonly byToken = new Map<string, CachedKey>();
  /** Bumped by every {@link forget}: a store read that spans it is not cached (it may predate a revocation). */
  private generation = 0;

  private constructor(
    private readonly keys: Collection<ApiKeyDoc>,
    private readonly clock: Clock,
  ) {}

  static async open(store: Store, clock: Clock): Promise<ApiKeyService> {
    const keys = await store.collection<ApiKeyDoc>('apiKeys', [
      { fields: ['hash'], unique: true },
      { fields: ['partnerId', 'userId'] },
      // the live generated master key of a partner (ensureMasterKey, at start-up without MASTER_API_KEY)
      { fields: ['partnerId', 'kind', 'source', 'revokedAtMs'], adapters: ['mongodb'] },
    ]);
    return new ApiKeyService(keys, clock);
  }

  /**
   * Makes sure `partnerId` has a master key with every scope. With `configured` (MASTER_API_KEY)
   * that token is the env master key (replacing any earlier env key). Without it, a key is
   * generated when the partner has no live generated master key yet.
   * @returns the generated token, to be shown once; null when nothing was generated.
   */
  async ensureMasterKey(partnerId: string, configured: string | undefined): Promise<string | null> {
    const now = this.clock.now();
    // the env key may change its token: nothing cached survives a replacement
    for (const hash of [...this.cache.keys()]) this.forget(hash);
    this.generation++;
    this.byToken.clear();
    if (configured) {
      const id = `key_env_${partnerId}`;
      await this.keys.replaceOne({
        _id: id,
        partnerId,
        kind: 'master',
        userId: null,
        scopes: [...SCOPES],
        hash: sha256(configured),
        source: 'env',
        createdAtMs: now,
        expiresAtMs: null,
        revokedAtMs: null,
      });
      return null;
    }
    const existing = await this.keys.findOne({ partnerId, kind: 'master', source: 'generated', revokedAtMs: null });
    if (existing) return null;
    const token = newToken();
    await this.keys.insertOne({
      _id: newKeyId(),
      partnerId,
      kind: 'master',
      userId: null,
      scopes: [...SCOPES],
      hash: sha256(token),
      source: 'generated',
      createdAtMs: now,
      expiresAtMs: null,
      revokedAtMs: null,
    });
    return token;
  }

  /**
   * Resolves a bearer token to its principal.
   * @throws {DomainError} `UNAUTHORIZED` for a malformed, unknown, expired or revoked token.
   */
  async authenticate(token: string): Promise<Principal> {
    const known = this.cached(token);
    if (known) return known;
    if (!TOKEN_SHAPE.test(token)) throw errors.unauthorized('malformed API key');
    const hash = sha256(token);
    const entry = await this.lookup(hash);
    const doc = entry.doc;
    if (!doc || !timingSafeEqual(Buffer.from(doc.hash, 'hex'), Buffer.from(hash, 'hex'))) {
      throw errors.unauthorized('unknown API key');
    }
    if (entry.live) {
      if (this.byToken.size >= KEY_CACHE_SIZE && !this.byToken.has(token))
        this.byToken.delete(this.byToken.keys().next().value!);
      this.byToken.set(token, entry);
    }
    return this.principalOf(entry, this.clock.now());
  }

  /**
   * {@link authenticate} without waiting, for a token seen within {@link KEY_CACHE_MS} (and not
   * changed since): its principal, or null when the store must be read (then call `authenticate`).
   * @throws {DomainError} `UNAUTHORIZED` for a cached key that is now expired.
   */
  cached(token: string): Principal | null {
    const now = this.clock.now();
    const known = this.byToken.get(token);
    if (known && known.live && fresh(known, now)) return this.principalOf(known, now);
    return null;
  }

  /**
   * The principal of a known key, checked now: revoked and expired keys are refused.
   * @throws {DomainError} `UNAUTHORIZED` for an unknown, revoked or expired key.
   */
  private principalOf(entry: CachedKey, now: number): Principal {
    const doc = entry.doc;
    if (!doc || !entry.principal) throw errors.unauthorized('unknown API key');
    if (doc.revokedAtMs !== null) throw errors.unauthorized('API key has been revoked');
    if (doc.expiresAtMs !== null && doc.expiresAtMs <= now) throw errors.unauthorized('API key has expired');
    return entry.principal;
  }

  /** The key with this hash, from the cache when read recently (unknown hashes are cached too). */
  private async lookup(hash: string): Promise<CachedKey> {
    const now = this.clock.now();
    const hit = this.cache.get(hash);
    if (hit && fresh(hit, now)) return hit;
    const generation = this.generation;
    const doc = await this.keys.findOne({ hash });
    // a key changed meanwhile: used once, not kept
    if (generation !== this.generation) return { hash, doc, readAtMs: now, principal: principalOf(doc), live: false };
    if (this.cache.size >= KEY_CACHE_SIZE && !this.cache.has(hash)) this.forget(this.cache.keys().next().value!, false);
    this.forget(hash, false);
    const entry: CachedKey = { hash, doc, readAtMs: now, principal: principalOf(doc), live: true };
    this.cache.set(hash, entry);
    return entry;
  }

  /**
   * Drops the cached key of `hash`: a request holding its token reads the store again.
   * @param changed - the key changed (revoked, minted, replaced): a read under way is not cached
   *   ({@link generation}); false for an eviction or a refresh.
   */
  private forget(hash: string, changed = true): void {
    if (changed) this.generation++;
    const entry = this.cache.get(hash);
    if (!entry) return;
    entry.live = false;
    this.cache.delete(hash);
  }

  /**
   * Mints a per-user key bound to `userId`.
   * @param expiresAtMs - epoch ms, or null for no expiry; must lie in the future.
   * @returns the stored key and the token (shown once).
   * @throws {DomainError} `INVALID_REQUEST` for an expiry in the past.
   */
  async mintUserKey(
    partnerId: string,
    userId: string,
    scopes: Scope[],
    expiresAtMs: number | null,
  ): Promise<{ doc: ApiKeyDoc; token: string }> {
    const now = this.clock.now();
    if (expiresAtMs !== null && expiresAtMs <= now) {
      throw errors.badRequest(`expires_at must be epoch milliseconds in the future; received ${expiresAtMs}`);
    }
    for (;;) {
      const token = newToken();
      const doc: ApiKeyDoc = {
        _id: newKeyId(),
        partnerId,
        kind: 'user',
        userId,
        scopes: [...new Set(scopes)],
        hash: sha256(token),
        source: 'minted',
        createdAtMs: now,
        expiresAtMs,
        revokedAtMs: null,
      };
      try {
        await this.keys.insertOne(doc);
        this.forget(doc.hash);
        return { doc, token };
      } catch (err) {
        if (!(err instanceof DuplicateKeyError)) throw err; // astronomically unlikely: draw again
      }
    }
  }

  /**
   * Revokes key `keyId` of `partnerId`. Revoking twice is harmless.
   * @throws {DomainError} `NOT_FOUND` when the partner has no such key; `CONFLICT` for a master key: the
   *   MASTER_API_KEY key only the configuration can change, and the generated one is the
   *   partner's way in (revoking it would lock the partner out).
   */
  async revoke(partnerId: string, keyId: string): Promise<ApiKeyDoc> {
    const doc = await this.keys.findOne({ _id: keyId, partnerId });
    if (!doc) throw errors.notFound(`no API key ${keyId}`);
    if (doc.source === 'env')
      throw errors.conflict('the MASTER_API_KEY key is set by configuration and cannot be revoked here');
    if (doc.kind === 'master')
      throw errors.conflict(
        "the partner's master key cannot be revoked here: it is the partner's " +
          'way in, and revoking it would lock the partner out',
      );
    if (doc.revokedAtMs !== null) return doc;
    const revokedAtMs = this.clock.now();
    await this.keys.updateOne({ _id: keyId }, { revokedAtMs });
    this.forget(doc.hash);
    for (const l of this.revokedListeners) l(keyId);
    return { ...doc, revokedAtMs };
  }

  private readonly revokedListeners: ((keyId: string) => void)[] = [];

  /** Calls `listener` with the id of each key revoked from now on (live connections drop it). */
  onRevoked(listener: (keyId: string) => void): void {
    this.revokedListeners.push(listener);
  }
}
