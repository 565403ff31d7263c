import { errors } from './errors.js';
import type { Store } from './store/port.js';

/**
 * Opaque page cursors (spec 2.9, 4.7: "do not parse"): the position, as base64url of its JSON.
 *
 * A cursor is no credential and needs no secret: every page is read for the caller's own user
 * whatever the cursor says, and the reader checks that the position it names belongs to that user
 * (a cursor naming another user is refused), so an altered cursor can only move within the caller's
 * own rows. Keeping no key means there is no secret at rest to protect. Cursors stay valid across
 * restarts and across processes sharing a MongoDB.
 */
export class CursorCodec {
  /**
   * Removes the AES key that sealed cursors before they became plain positions (the `secrets`
   * collection), so no secret is left at rest; cursors it sealed answer 400 and the client
   * starts again from the first page.
   */
  static async open(store: Store): Promise<CursorCodec> {
    const secrets = await store.collection<{ _id: string }>('secrets');
    await secrets.deleteMany({ _id: 'cursor-key' });
    return new CursorCodec();
  }

  /** Encodes `position` (any JSON value) as a URL-safe opaque string. */
  seal(position: unknown): string {
    return Buffer.from(JSON.stringify({ p: position }), 'utf8').toString('base64url');
  }

  /**
   * Reads a cursor made by {@link seal}.
   * @throws {DomainError} `INVALID_REQUEST` when the cursor was not issued by this service.
   */
  open<T>(cursor: string): T {
    try {
      if (!/^[A-Za-z0-9_-]+$/.test(cursor)) throw new Error('not base64url');
      const parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
      if (typeof parsed !== 'object' || parsed === null || !('p' in parsed)) throw new Error('no position');
      return (parsed as { p: T }).p;
    } catch {
      throw errors.badRequest('cursor is not valid: send back next_cursor exactly as received');
    }
  }
}
