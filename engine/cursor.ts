import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { errors } from './errors.js';
import type { Store } from './store/port.js';

interface SecretDoc {
  _id: string;
  /** base64 of 32 random bytes. */
  key: string;
}

/**
 * Opaque page cursors (spec 2.9, 4.7: "do not parse"): the position is sealed with AES-256-GCM
 * under a key kept in the store, so a cursor is unreadable and tamper-proof for clients and
 * stays valid across restarts (and across processes sharing a MongoDB).
 */
export class CursorCodec {
  private constructor(private readonly key: Buffer) {}

  /** Loads the cursor key from the store, creating it on first use. */
  static async open(store: Store): Promise<CursorCodec> {
    const secrets = await store.collection<SecretDoc>('secrets');
    let doc = await secrets.findOne({ _id: 'cursor-key' });
    if (!doc) {
      await secrets.updateOne({ _id: 'cursor-key', key: { $exists: false } }, { key: randomBytes(32).toString('base64') }, { upsert: true }).catch(() => 0);
      doc = await secrets.findOne({ _id: 'cursor-key' });
    }
    return new CursorCodec(Buffer.from(doc!.key, 'base64'));
  }

  /** Seals `position` (any JSON value) into a URL-safe opaque string. */
  seal(position: unknown): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const body = Buffer.concat([cipher.update(JSON.stringify(position), 'utf8'), cipher.final()]);
    return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
  }

  /**
   * Opens a cursor made by {@link seal}.
   * @throws {DomainError} `INVALID_REQUEST` when the cursor was not issued by this service or was altered.
   */
  open<T>(cursor: string): T {
    try {
      const raw = Buffer.from(cursor, 'base64url');
      if (raw.length < 29) throw new Error('short');
      const decipher = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, 12));
      decipher.setAuthTag(raw.subarray(12, 28));
      return JSON.parse(Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8')) as T;
    } catch {
      throw errors.badRequest('cursor is not valid: send back next_cursor exactly as received');
    }
  }
}
