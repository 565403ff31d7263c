import type { Server as HttpServer } from 'node:http';
import { Server, type Namespace, type Socket } from 'socket.io';
import type { ActorChange } from '../engine/actor-host.js';
import { errors } from '../engine/errors.js';
import { ApiError, toApiError } from './errors.js';
import { bookBody } from './handlers/market.js';
import type { Services } from '../engine/service.js';
import {
  PUSH_NAMESPACE, type ClientToServerEvents, type PushSocketData, type ServerToClientEvents,
} from './push-events.js';

type PushNamespace = Namespace<ClientToServerEvents, ServerToClientEvents, Record<string, never>, PushSocketData>;
type PushSocket = Socket<ClientToServerEvents, ServerToClientEvents, Record<string, never>, PushSocketData>;

/** How long a dropped connection can come back and get what it missed (connection-state recovery). */
export const RECOVERY_WINDOW_MS = 2 * 60_000;
const BOOK_DEPTH = 10;

const userRoom = (userId: string) => `user:${userId}`;
const partnerRoom = (partnerId: string) => `partner:${partnerId}`;
const keyRoom = (keyId: string) => `key:${keyId}`;
const bookRoom = (tokenId: string) => `book:${tokenId}`;

/** The Socket.IO error of a refused handshake: `message` is the error string, `data` the REST envelope. */
function handshakeError(err: ApiError): Error & { data: { error: string; message?: string } } {
  const e = new Error(err.error) as Error & { data: { error: string; message?: string } };
  e.data = { error: err.error, ...(err.message && err.message !== err.error ? { message: err.message } : {}) };
  return e;
}

/** A running push server; {@link close} disconnects every client. */
export interface PushServer {
  io: Server<ClientToServerEvents, ServerToClientEvents, Record<string, never>, PushSocketData>;
  nsp: PushNamespace;
  close(): Promise<void>;
}

/**
 * Live updates (issue 6): Socket.IO namespace `/v2/trade` on the API's HTTP server.
 *
 * - Handshake `auth: {token, partner_user_id?}`, checked like a REST request (401 unknown,
 *   expired or revoked key; 403 without `trade.read`; 404 unknown `partner_user_id`; a per-user
 *   key naming another user: 403). A key revoked later is disconnected; one that expires is
 *   disconnected when it expires.
 * - Rooms: `user:<platform_user_id>` for connections that see one user, `partner:<partner_id>` for
 *   master keys that see the partner's users; an update goes to the owner's user room and to the
 *   partner room, never elsewhere.
 * - Each persisted actor change (the host's `changed`, emitted only after the write) becomes
 *   `order.updated` or `strategy.updated` with the REST record and its revision; per record, order
 *   is the write order.
 * - Connection-state recovery (2 min): a client that reconnects with its session gets the
 *   broadcasts it missed; the handshake is checked again (a revoked key does not come back).
 */
export function attachPush(httpServer: HttpServer, services: Services): PushServer {
  const io = new Server<ClientToServerEvents, ServerToClientEvents, Record<string, never>, PushSocketData>(httpServer, {
    serveClient: true,
    cors: { origin: '*' }, // bearer tokens, no cookies: any origin may connect with a valid key
    connectionStateRecovery: { maxDisconnectionDuration: RECOVERY_WINDOW_MS, skipMiddlewares: false },
  });
  const nsp = io.of(PUSH_NAMESPACE) as PushNamespace;
  const { keys, users, host, venue, clock, log } = services;
  /** Rooms whose last connection dropped recently: its session may come back for what it missed. */
  const recentlyWatched = new Map<string, number>();

  nsp.use((socket, next) => {
    void (async () => {
      const auth = (socket.handshake.auth ?? {}) as { token?: unknown; partner_user_id?: unknown };
      if (typeof auth.token !== 'string' || !auth.token) throw errors.unauthorized('send the API key as auth.token in the handshake');
      const principal = await keys.authenticate(auth.token);
      if (!principal.scopes.includes('trade.read')) throw errors.forbidden('live updates need the trade.read scope');
      const named = auth.partner_user_id;
      if (named !== undefined && (typeof named !== 'string' || !named)) throw errors.badRequest('auth.partner_user_id must be a non-empty string');
      let userId: string | null;
      if (principal.kind === 'user') {
        const user = principal.userId ? await users.byId(principal.userId) : null;
        if (!user) throw errors.unauthorized('the user this API key is bound to no longer exists');
        if (named !== undefined && named !== user.partnerUserId) throw errors.forbidden('this API key is bound to another user; omit auth.partner_user_id or name the bound user');
        userId = user._id;
      } else {
        userId = named !== undefined ? (await users.byPartnerUserId(principal.partnerId, named as string))._id : null;
      }
      socket.data = { keyId: principal.keyId, partnerId: principal.partnerId, userId };
      if (principal.expiresAtMs !== null) {
        const t = setTimeout(() => socket.disconnect(true), Math.max(0, principal.expiresAtMs - clock.now()));
        t.unref();
        socket.once('disconnect', () => clearTimeout(t));
      }
    })().then(
      () => next(),
      (err: unknown) => {
        const known = toApiError(err);
        if (known) return next(handshakeError(known));
        log.error({ err }, 'push handshake failed');
        next(handshakeError(new ApiError(500, 'internal_error', 'the handshake could not be checked')));
      },
    );
  });

  nsp.on('connection', (socket: PushSocket) => {
    const { userId, partnerId, keyId } = socket.data;
    const rooms = [userId ? userRoom(userId) : partnerRoom(partnerId), keyRoom(keyId)];
    if (!socket.recovered) void socket.join(rooms);
    socket.on('disconnect', () => {
      for (const r of rooms) recentlyWatched.set(r, clock.now() + RECOVERY_WINDOW_MS);
    });
    socket.on('book.subscribe', (req, ack) => {
      if (typeof ack !== 'function') return;
      const tokenId = typeof req?.token_id === 'string' ? req.token_id : '';
      const book = tokenId ? venue.book(tokenId, BOOK_DEPTH) : null;
      if (!book) return ack({ ok: false, error: 'invalid_request', message: `token_id ${tokenId || '(missing)'} is not an outcome token of this venue` });
      void socket.join(bookRoom(tokenId));
      ack({ ok: true, token_id: tokenId });
      socket.emit('book.updated', { ...bookBody(book), revision: bookRevisions.get(tokenId) ?? 0, at: clock.now() });
    });
    socket.on('book.unsubscribe', (req, ack) => {
      const tokenId = typeof req?.token_id === 'string' ? req.token_id : '';
      void socket.leave(bookRoom(tokenId));
      if (typeof ack === 'function') ack({ ok: true, token_id: tokenId });
    });
  });

  /** Someone is, or may soon again be, watching `room`. */
  const watched = (room: string): boolean => {
    if (nsp.adapter.rooms.has(room)) return true;
    const until = recentlyWatched.get(room);
    if (until === undefined) return false;
    if (until > clock.now()) return true;
    recentlyWatched.delete(room);
    return false;
  };

  const onChanged = (c: ActorChange): void => {
    const r = c.record;
    const event = r.kind === 'order' ? 'order.updated' : r.kind === 'strategy' ? 'strategy.updated' : null;
    if (!event) return;
    const rooms = r.ownerUserId ? [userRoom(r.ownerUserId), partnerRoom(r.partnerId)] : [partnerRoom(r.partnerId)];
    const targets = rooms.filter(watched);
    if (!targets.length) return;
    const payload = { ...r.view, revision: r.revision, platform_user_id: r.ownerUserId, updated_at: r.updatedAtMs };
    nsp.to(targets).emit(event, payload as never);
  };
  host.on('changed', onChanged);

  // book.updated: every change of a subscribed token's book, coalesced per tick
  const bookRevisions = new Map<string, number>();
  const dirtyBooks = new Set<string>();
  let flushing = false;
  const flushBooks = () => {
    flushing = false;
    for (const tokenId of dirtyBooks) {
      const book = venue.book(tokenId, BOOK_DEPTH);
      if (!book) continue;
      const revision = (bookRevisions.get(tokenId) ?? 0) + 1;
      bookRevisions.set(tokenId, revision);
      nsp.to(bookRoom(tokenId)).emit('book.updated', { ...bookBody(book), revision, at: clock.now() });
    }
    dirtyBooks.clear();
  };
  venue.onBook((tokenId) => {
    if (!nsp.adapter.rooms.has(bookRoom(tokenId))) return;
    dirtyBooks.add(tokenId);
    if (!flushing) {
      flushing = true;
      setImmediate(flushBooks);
    }
  });

  keys.onRevoked((keyId) => nsp.in(keyRoom(keyId)).disconnectSockets(true));

  return {
    io,
    nsp,
    close: () =>
      new Promise<void>((resolve) => {
        host.off('changed', onChanged);
        io.close(() => resolve());
      }),
  };
}
