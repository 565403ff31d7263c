import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Clock } from './clock.js';
import { DuplicateKeyError, errors } from './errors.js';
import type { Collection, Store } from './store/port.js';

/** Additive scopes of spec part 5. */
export const SCOPES = ['trade.read', 'trade.execute', 'trade.cancel', 'trade.withdraw', 'trade.combos', 'trade.users'] as const;
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

/**
 * How long a key read from the store is trusted without reading it again (ms). A revocation made
 * by this process applies at once; one made by another process sharing a MongoDB store applies
 * here within this time.
 */
export const KEY_CACHE_MS = 5_000;
const KEY_CACHE_SIZE = 10_000;

/**
 * API keys of spec part 5: issuing, verifying and revoking. Tokens are random (256 bits), stored
 * only as SHA-256 hashes, compared in constant time and never logged. Keys read for
 * authentication are cached by hash for {@link KEY_CACHE_MS}: every request authenticates, and
 * the store read was a fifth of a cheap request's cost.
 */
export class ApiKeyService {
  /** hash → key document and the epoch ms it was read. */
  private readonly cache = new Map<string, { doc: ApiKeyDoc | null; readAtMs: number }>();

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
    if (configured) {
      const id = `key_env_${partnerId}`;
      await this.keys.replaceOne({
        _id: id, partnerId, kind: 'master', userId: null, scopes: [...SCOPES], hash: sha256(configured),
        source: 'env', createdAtMs: now, expiresAtMs: null, revokedAtMs: null,
      });
      return null;
    }
    const existing = await this.keys.findOne({ partnerId, kind: 'master', source: 'generated', revokedAtMs: null });
    if (existing) return null;
    const token = newToken();
    await this.keys.insertOne({
      _id: newKeyId(), partnerId, kind: 'master', userId: null, scopes: [...SCOPES], hash: sha256(token),
      source: 'generated', createdAtMs: now, expiresAtMs: null, revokedAtMs: null,
    });
    return token;
  }

  /**
   * Resolves a bearer token to its principal.
   * @throws {DomainError} `UNAUTHORIZED` for a malformed, unknown, expired or revoked token.
   */
  async authenticate(token: string): Promise<Principal> {
    if (!TOKEN_SHAPE.test(token)) throw errors.unauthorized('malformed API key');
    const hash = sha256(token);
    const doc = await this.lookup(hash);
    if (!doc || !timingSafeEqual(Buffer.from(doc.hash, 'hex'), Buffer.from(hash, 'hex'))) {
      throw errors.unauthorized('unknown API key');
    }
    if (doc.revokedAtMs !== null) throw errors.unauthorized('API key has been revoked');
    if (doc.expiresAtMs !== null && doc.expiresAtMs <= this.clock.now()) throw errors.unauthorized('API key has expired');
    return {
      keyId: doc._id, partnerId: doc.partnerId, kind: doc.kind, userId: doc.userId, scopes: doc.scopes,
      expiresAtMs: doc.expiresAtMs, createdAtMs: doc.createdAtMs,
    };
  }

  /** The key with this hash, from the cache when read recently (unknown hashes are cached too). */
  private async lookup(hash: string): Promise<ApiKeyDoc | null> {
    const now = this.clock.now();
    const hit = this.cache.get(hash);
    if (hit && now - hit.readAtMs < KEY_CACHE_MS && hit.readAtMs <= now) return hit.doc;
    const doc = await this.keys.findOne({ hash });
    if (this.cache.size >= KEY_CACHE_SIZE) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(hash, { doc, readAtMs: now });
    return doc;
  }

  /**
   * Mints a per-user key bound to `userId`.
   * @param expiresAtMs - epoch ms, or null for no expiry; must lie in the future.
   * @returns the stored key and the token (shown once).
   * @throws {DomainError} `INVALID_REQUEST` for an expiry in the past.
   */
  async mintUserKey(partnerId: string, userId: string, scopes: Scope[], expiresAtMs: number | null): Promise<{ doc: ApiKeyDoc; token: string }> {
    const now = this.clock.now();
    if (expiresAtMs !== null && expiresAtMs <= now) {
      throw errors.badRequest(`expires_at must be epoch milliseconds in the future; received ${expiresAtMs}`);
    }
    for (;;) {
      const token = newToken();
      const doc: ApiKeyDoc = {
        _id: newKeyId(), partnerId, kind: 'user', userId, scopes: [...new Set(scopes)], hash: sha256(token),
        source: 'minted', createdAtMs: now, expiresAtMs, revokedAtMs: null,
      };
      try {
        await this.keys.insertOne(doc);
        this.cache.delete(doc.hash);
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
    if (doc.source === 'env') throw errors.conflict('the MASTER_API_KEY key is set by configuration and cannot be revoked here');
    if (doc.kind === 'master') throw errors.conflict("the partner's master key cannot be revoked here: it is the partner's way in, and revoking it would lock the partner out");
    if (doc.revokedAtMs !== null) return doc;
    const revokedAtMs = this.clock.now();
    await this.keys.updateOne({ _id: keyId }, { revokedAtMs });
    this.cache.delete(doc.hash);
    for (const l of this.revokedListeners) l(keyId);
    return { ...doc, revokedAtMs };
  }

  private readonly revokedListeners: ((keyId: string) => void)[] = [];

  /** Calls `listener` with the id of each key revoked from now on (live connections drop it). */
  onRevoked(listener: (keyId: string) => void): void {
    this.revokedListeners.push(listener);
  }
}
