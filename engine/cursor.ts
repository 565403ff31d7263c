import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { errors } from './errors.js';
import type { Store } from './store/port.js';

/**
 * Opaque page cursors (spec 2.9, 4.7: "do not parse"): the position is sealed with AES-256-GCM under
 * a key derived from the API token the page was read with, so a cursor is unreadable and
 * tamper-proof for clients, and no sealing key exists at rest: the token itself is never stored
 * (only its hash, which the derivation does not use). A cursor is therefore valid with the API key
 * that received it, across restarts and processes; another key (even of the same user) gets 400.
 */
export class CursorCodec {
  /**
   * Deletes the AES key that sealed cursors in older versions (the `secrets` collection), so no
   * secret is left at rest; cursors it sealed answer 400 and the client starts from the first page.
   */
  static async open(store: Store): Promise<CursorCodec> {
    const secrets = await store.collection<{ _id: string }>('secrets');
    await secrets.deleteMany({ _id: 'cursor-key' });
    return new CursorCodec();
  }

  private keyOf(apiToken: string): Buffer {
    return createHash('sha256').update('pts-cursor\0').update(apiToken).digest();
  }

  /**
   * Seals `position` (any JSON value) into a URL-safe opaque string.
   * @param apiToken - the bearer token of the request the page answers.
   */
  seal(position: unknown, apiToken: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.keyOf(apiToken), iv);
    const body = Buffer.concat([cipher.update(JSON.stringify(position), 'utf8'), cipher.final()]);
    return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
  }

  /**
   * Opens a cursor made by {@link seal} for the same token.
   * @throws {DomainError} `INVALID_REQUEST` when the cursor was not issued to this API key or was altered.
   */
  open<T>(cursor: string, apiToken: string): T {
    try {
      const raw = Buffer.from(cursor, 'base64url');
      if (raw.length < 29) throw new Error('short');
      const decipher = createDecipheriv('aes-256-gcm', this.keyOf(apiToken), raw.subarray(0, 12));
      decipher.setAuthTag(raw.subarray(12, 28));
      return JSON.parse(Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8')) as T;
    } catch {
      throw errors.badRequest(
        'cursor is not valid: send back next_cursor exactly as received, with the API key that received it',
      );
    }
  }
}
