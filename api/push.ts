import type { Server as HttpServer } from 'node:http';
import { Server, type Namespace, type Socket } from 'socket.io';
import type { ActorChange } from '../engine/actor-host.js';
import { errors } from '../engine/errors.js';
import { ApiError, toApiError } from './errors.js';
import { bookBody, marketBody, positionBody, type PositionBody } from './handlers/market.js';
import type { Services } from '../engine/service.js';
import { WALLET_OP_KIND, WITHDRAWAL_KIND } from '../engine/wallet/service.js';
import { COMBO_KIND } from '../engine/combos/service.js';
import type { BookView, WalletView } from '../engine/venue/port.js';
import {
  PUSH_NAMESPACE,
  type BatchedRecord,
  type ClientToServerEvents,
  type MarketPush,
  type OrderPush,
  type PushSocketData,
  type ServerToClientEvents,
} from './push-events.js';

type PushNamespace = Namespace<ClientToServerEvents, ServerToClientEvents, Record<string, never>, PushSocketData>;
type PushSocket = Socket<ClientToServerEvents, ServerToClientEvents, Record<string, never>, PushSocketData>;

/** The reason `resync.required` gives (a reconnection whose session could not be recovered). */
export const RESYNC_REASON =
  'this connection could not be recovered (the service restarted, the client was away longer than 2 minutes, or ' +
  'it had received no update yet to resume from): updates made meanwhile are not replayed; read the current ' +
  'orders, strategies, withdrawals, wallet operations (activity), balances and positions through REST';

/** How long a dropped connection can come back and get what it missed (connection-state recovery). */
export const RECOVERY_WINDOW_MS = 2 * 60_000;
const BOOK_DEPTH = 10;

const userRoom = (userId: string) => `user:${userId}`;
const partnerRoom = (partnerId: string) => `partner:${partnerId}`;
const keyRoom = (keyId: string) => `key:${keyId}`;
const bookRoom = (tokenId: string) => `book:${tokenId}`;
/** The room of `market.updated` of every market (`markets.subscribe` without `condition_ids`). */
const MARKETS_ROOM = 'markets';
/** The room of `market.updated` of one market (`markets.subscribe` naming it). */
const marketRoom = (conditionId: string) => `market:${conditionId}`;
/** The room of the connections of `room` that asked for `updates.batch` with a window of `ms`. */
const batchRoom = (room: string, ms: number) => `${room}|batch:${ms}`;
/** Most `condition_ids` one `markets.subscribe` may name. */
const MARKETS_SUBSCRIBE_MAX = 500;
/** Largest `auth.batch_ms` accepted. */
export const BATCH_MS_MAX = 1000;
/** An `updates.batch` is sent early once it holds this many records (bounded frames). */
export const BATCH_MAX_RECORDS = 500;
type RecordEvent = BatchedRecord['event'];
/** The push of each kind of persisted record (the host's `changed`); other kinds are not pushed. */
const RECORD_EVENTS: Partial<Record<string, Exclude<RecordEvent, 'balance.updated' | 'position.updated'>>> = {
  order: 'order.updated',
  strategy: 'strategy.updated',
  [WITHDRAWAL_KIND]: 'withdrawal.updated',
  [WALLET_OP_KIND]: 'wallet_operation.updated',
  [COMBO_KIND]: 'combo.updated',
  copytrade: 'copytrade.updated',
};

/**
 * The markets a `markets.subscribe` / `markets.unsubscribe` request names: its `condition_ids`, or
 * null for every market (the field omitted).
 * @returns the ids, null, or the `invalid_request` message of a malformed request.
 */
function marketsRequest(req: unknown): { ids: string[] | null } | { error: string } {
  // the request is an object (or omitted): a number, string, array or null is not `{condition_ids?}`
  const isObject = typeof req === 'object' && req !== null && !Array.isArray(req);
  if (req !== undefined && !isObject) return { error: 'the request must be an object {condition_ids?: string[]}' };
  const ids = (req as { condition_ids?: unknown } | undefined)?.condition_ids;
  if (ids === undefined) return { ids: null };
  if (!Array.isArray(ids) || ids.length > MARKETS_SUBSCRIBE_MAX || ids.some((id) => typeof id !== 'string')) {
    return { error: `condition_ids must be an array of at most ${MARKETS_SUBSCRIBE_MAX} strings` };
  }
  return { ids: ids as string[] };
}

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
 * Live updates: Socket.IO namespace `/v2/trade` on the API's HTTP server.
 *
 * - Handshake `auth: {token, partner_user_id?}`, checked like a REST request (401 unknown,
 *   expired or revoked key; 403 without `trade.read`; 404 unknown `partner_user_id`; a per-user
 *   key naming another user: 403). A key revoked later is disconnected; one that expires is
 *   disconnected when it expires.
 * - Rooms: `user:<platform_user_id>` for connections that see one user, `partner:<partner_id>` for
 *   master keys that see the partner's users; an update goes to the owner's user room and to the
 *   partner room, never elsewhere.
 * - Each persisted actor change (the host's `changed`, emitted only after the write) becomes
 *   `order.updated`, `strategy.updated`, `withdrawal.updated`, `wallet_operation.updated` (split,
 *   merge, redeem) or `combo.updated` with the REST record and its revision; per record, order is
 *   the write order.
 * - Venue wallet changes (`onWallet`) become `balance.updated` / `position.updated` (only what
 *   changed, coalesced per user per event-loop turn) to the user's room; market changes
 *   (`onMarket`) become `market.updated` to the market's room `market:<condition_id>`
 *   (`markets.subscribe` naming it) and to the `markets` room (`markets.subscribe` without ids).
 * - Opt-in batching: a connection with `auth.batch_ms` sits in `<room>|batch:<ms>` and
 *   gets its record events as `updates.batch`, one frame per room per window, records in order.
 *   Every push is one broadcast: Socket.IO encodes it (and its WebSocket frame) once for all the
 *   connections of its rooms.
 * - Connection-state recovery (2 min): a client that reconnects with its session gets the
 *   broadcasts it missed; the handshake is checked again (a revoked key does not come back). A
 *   client whose session cannot be recovered (a restart of the service, a longer absence) gets
 *   `resync.required` first: what changed meanwhile is read through REST.
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
      const auth = (socket.handshake.auth ?? {}) as { token?: unknown; partner_user_id?: unknown; batch_ms?: unknown };
      if (typeof auth.token !== 'string' || !auth.token)
        throw errors.unauthorized('send the API key as auth.token in the handshake');
      const principal = await keys.authenticate(auth.token);
      if (!principal.scopes.includes('trade.read')) throw errors.forbidden('live updates need the trade.read scope');
      const batchMs = auth.batch_ms ?? null;
      if (
        batchMs !== null &&
        (typeof batchMs !== 'number' || !Number.isInteger(batchMs) || batchMs < 1 || batchMs > BATCH_MS_MAX)
      ) {
        throw errors.badRequest(`auth.batch_ms must be an integer number of milliseconds from 1 to ${BATCH_MS_MAX}`);
      }
      const named = auth.partner_user_id;
      if (named !== undefined && (typeof named !== 'string' || !named))
        throw errors.badRequest('auth.partner_user_id must be a non-empty string');
      let userId: string | null;
      if (principal.kind === 'user') {
        const user = principal.userId ? await users.byId(principal.userId) : null;
        if (!user) throw errors.unauthorized('the user this API key is bound to no longer exists');
        if (named !== undefined && named !== user.partnerUserId)
          throw errors.forbidden(
            'this API key is bound to another user; omit auth.partner_user_id or name the bound user',
          );
        userId = user._id;
      } else {
        userId = named !== undefined ? (await users.byPartnerUserId(principal.partnerId, named as string))._id : null;
      }
      socket.data = {
        keyId: principal.keyId,
        partnerId: principal.partnerId,
        userId,
        batchMs: batchMs as number | null,
      };
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
    const { userId, partnerId, keyId, batchMs } = socket.data;
    const base = userId ? userRoom(userId) : partnerRoom(partnerId);
    const rooms = [batchMs ? batchRoom(base, batchMs) : base, keyRoom(keyId)];
    if (batchMs) {
      const windows = batchWindows.get(base) ?? new Set<number>();
      windows.add(batchMs);
      batchWindows.set(base, windows);
    }
    if (userId) seedWallet(userId);
    if (!socket.recovered) void socket.join(rooms);
    // a client that came back with a session this process does not have (the service restarted,
    // or the client was away past the recovery window) missed updates that nothing replays: it is
    // told to read the current state again through REST (the Socket.IO client sends its session
    // id as `pid` when it tries to recover)
    const { pid } = (socket.handshake.auth ?? {}) as { pid?: unknown };
    if (!socket.recovered && typeof pid === 'string') socket.emit('resync.required', { reason: RESYNC_REASON });
    socket.on('disconnect', () => {
      for (const r of rooms) recentlyWatched.set(r, clock.now() + RECOVERY_WINDOW_MS);
    });
    socket.on('book.subscribe', (req, ack) => {
      if (typeof ack !== 'function') return;
      const tokenId = typeof req?.token_id === 'string' ? req.token_id : '';
      const book = tokenId ? venue.book(tokenId, BOOK_DEPTH) : null;
      if (!book)
        return ack({
          ok: false,
          error: 'invalid_request',
          message: `token_id ${tokenId || '(missing)'} is not an outcome token of this venue`,
        });
      void socket.join(bookRoom(tokenId));
      ack({ ok: true, token_id: tokenId });
      socket.emit('book.updated', bookUpdate(book, bookRevisions.get(tokenId) ?? 0, clock.now()));
    });
    socket.on('book.unsubscribe', (req, ack) => {
      const tokenId = typeof req?.token_id === 'string' ? req.token_id : '';
      void socket.leave(bookRoom(tokenId));
      if (typeof ack === 'function') ack({ ok: true, token_id: tokenId });
    });
    socket.on('markets.subscribe', (req, ack) => {
      if (typeof ack !== 'function') return;
      const r = marketsRequest(req);
      if ('error' in r) return ack({ ok: false, error: 'invalid_request', message: r.error });
      if (r.ids === null) {
        void socket.join(MARKETS_ROOM);
        return ack({ ok: true, markets: [] });
      }
      const at = clock.now();
      const markets = r.ids.flatMap((id) => marketPush(id, marketRevisions.get(id) ?? 0, at) ?? []);
      // only the markets named (and listed): each has a room of its own
      if (markets.length) void socket.join(markets.map((m) => marketRoom(m.condition_id)));
      ack({ ok: true, markets });
    });
    socket.on('markets.unsubscribe', (req, ack) => {
      const r = marketsRequest(req);
      if ('error' in r) {
        if (typeof ack === 'function') ack({ ok: false, error: 'invalid_request', message: r.error });
        return;
      }
      const rooms =
        r.ids === null
          ? [...socket.rooms].filter((room) => room === MARKETS_ROOM || room.startsWith(marketRoom('')))
          : r.ids.map(marketRoom);
      for (const room of rooms) void socket.leave(room);
      if (typeof ack === 'function') ack({ ok: true, markets: [] });
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

  // ---- record pushes: separate events, or coalesced into updates.batch (opt-in) ----

  /** `updates.batch` windows (ms) in use per user / partner room. */
  const batchWindows = new Map<string, Set<number>>();
  /** Records waiting for their batch room's window to end. */
  const pending = new Map<string, { records: BatchedRecord[]; batchMs: number; timer: NodeJS.Timeout }>();
  const flushBatch = (room: string): void => {
    const p = pending.get(room);
    if (!p) return;
    pending.delete(room);
    clearTimeout(p.timer);
    // one broadcast: Socket.IO encodes the packet once for every socket of the room
    nsp.to(room).emit('updates.batch', { records: p.records, batch_ms: p.batchMs });
  };
  const enqueue = (room: string, batchMs: number, record: BatchedRecord): void => {
    let p = pending.get(room);
    if (!p) {
      p = { records: [], batchMs, timer: setTimeout(() => flushBatch(room), batchMs) };
      pending.set(room, p);
    }
    p.records.push(record);
    if (p.records.length >= BATCH_MAX_RECORDS) flushBatch(room);
  };
  /** Batch rooms of `base` someone watches (forgetting windows nobody uses any more). */
  const watchedBatchRooms = (base: string): Array<[string, number]> => {
    const windows = batchWindows.get(base);
    if (!windows) return [];
    const out: Array<[string, number]> = [];
    for (const ms of windows) {
      const room = batchRoom(base, ms);
      if (watched(room)) out.push([room, ms]);
      else windows.delete(ms);
    }
    if (!windows.size) batchWindows.delete(base);
    return out;
  };
  /**
   * Sends one record to `bases` (user / partner rooms): one broadcast to the connections that take
   * separate events (a socket in several of the rooms gets it once), and a place in the pending
   * `updates.batch` of each batch room. Per room, records keep the order of the calls.
   */
  const publish = <E extends RecordEvent>(
    bases: string[],
    event: E,
    data: Extract<BatchedRecord, { event: E }>['data'],
  ): void => {
    const plain = bases.filter(watched);
    if (plain.length) nsp.to(plain).emit(event as 'order.updated', data as OrderPush);
    for (const base of bases)
      for (const [room, ms] of watchedBatchRooms(base)) enqueue(room, ms, { event, data } as BatchedRecord);
  };
  /** Someone watches `base`, separately or batched. */
  const watchedAny = (base: string): boolean => watched(base) || watchedBatchRooms(base).length > 0;

  const onChanged = (c: ActorChange): void => {
    const r = c.record;
    const event = RECORD_EVENTS[r.kind];
    if (!event) return;
    const rooms = r.ownerUserId ? [userRoom(r.ownerUserId), partnerRoom(r.partnerId)] : [partnerRoom(r.partnerId)];
    if (!rooms.some(watchedAny)) return;
    // the view's fields, then these: Object.assign, as a spread with fields added after it is V8's slow path
    // (node 20: ~1 µs a field added, each copy a hidden class of its own)
    const payload = Object.assign({}, r.view, {
      revision: r.revision,
      platform_user_id: r.ownerUserId,
      updated_at: r.updatedAtMs,
    });
    publish(rooms, event, payload as never);
  };
  host.on('changed', onChanged);

  // ---- balance.updated / position.updated: to the user's room, coalesced per turn ----

  /** What was last pushed (or seen at connection) per watched user: balance figures, positions by token. */
  const walletSeen = new Map<string, { balance: string; positions: Map<string, string> }>();
  /** Revisions per user (kept while the process runs, so that they never go back). */
  const walletRevisions = new Map<string, { balance: number; position: number }>();
  const balanceKey = (p: { balance: string; reserved: string }) => `${p.balance}|${p.reserved}`;
  /**
   * What a position holds (the ledger's figures) and whether its market resolved: a push goes out
   * when this changes (its mark then moves to $1 / $0), not when only the book's mid moves.
   */
  const holdingKey = (p: WalletView['positions'][number]) => {
    const conditionId = venue.token(p.tokenId)?.conditionId;
    return `${JSON.stringify(p)}${conditionId && venue.marketStatus(conditionId)?.resolved ? '|resolved' : ''}`;
  };
  /** Remembers what a newly watched user holds, so that the first push carries only changes. */
  function seedWallet(userId: string): void {
    if (walletSeen.has(userId)) return;
    const w = venue.wallet(userId);
    walletSeen.set(userId, {
      balance: balanceKey(w.pusd),
      positions: new Map(w.positions.map((pos) => [pos.tokenId, holdingKey(pos)])),
    });
  }
  const dirtyWallets = new Set<string>();
  let walletFlushing = false;
  const flushWallets = (): void => {
    walletFlushing = false;
    const at = clock.now();
    for (const userId of dirtyWallets) {
      const room = userRoom(userId);
      if (!watchedAny(room)) {
        walletSeen.delete(userId);
        continue;
      }
      seedWallet(userId); // no-op unless the user's connection came after the change
      const seen = walletSeen.get(userId)!;
      const revs = walletRevisions.get(userId) ?? { balance: 0, position: 0 };
      walletRevisions.set(userId, revs);
      const w = venue.wallet(userId);
      const key = balanceKey(w.pusd);
      if (key !== seen.balance) {
        seen.balance = key;
        publish([room], 'balance.updated', {
          currency: 'pUSD',
          ...w.pusd,
          revision: ++revs.balance,
          platform_user_id: userId,
          at,
        });
      }
      const changed: PositionBody[] = [];
      const now = new Set<string>();
      for (const pos of w.positions) {
        now.add(pos.tokenId);
        const key = holdingKey(pos);
        if (seen.positions.get(pos.tokenId) !== key) {
          seen.positions.set(pos.tokenId, key);
          changed.push(positionBody(venue, userId, pos));
        }
      }
      for (const tokenId of seen.positions.keys()) {
        if (now.has(tokenId)) continue;
        seen.positions.delete(tokenId);
        changed.push(positionBody(venue, userId, { tokenId, size: '0', reserved: '0', available: '0', costUsd: '0' }));
      }
      if (changed.length)
        publish([room], 'position.updated', {
          positions: changed,
          revision: ++revs.position,
          platform_user_id: userId,
          at,
        });
    }
    dirtyWallets.clear();
  };
  const walletChanged = (userId: string): void => {
    if (!watchedAny(userRoom(userId))) {
      walletSeen.delete(userId);
      return;
    }
    dirtyWallets.add(userId);
    if (!walletFlushing) {
      walletFlushing = true;
      setImmediate(flushWallets);
    }
  };
  venue.onWallet(walletChanged);
  // a market that resolves re-marks the positions held in it ($1 / $0 a share): pushed to their watched holders
  venue.onMarket((conditionId) => {
    const tokens = venue.market(conditionId)?.tokens.map((t) => t.tokenId) ?? [];
    for (const [userId, seen] of walletSeen) if (tokens.some((t) => seen.positions.has(t))) walletChanged(userId);
  });

  // ---- market.updated: to the market's subscribers and those of every market, coalesced per turn ----

  /**
   * A market as GET /v2/trade/markets lists it, with its lifecycle (venue `marketStatus`); undefined when not listed.
   */
  function marketPush(conditionId: string, revision: number, at: number): MarketPush | undefined {
    const m = venue.market(conditionId);
    if (!m) return undefined;
    return {
      ...marketBody(venue, m),
      revision,
      at,
    };
  }
  const marketRevisions = new Map<string, number>();
  const dirtyMarkets = new Set<string>();
  let marketFlushing = false;
  const flushMarkets = (): void => {
    marketFlushing = false;
    const at = clock.now();
    for (const conditionId of dirtyMarkets) {
      const revision = (marketRevisions.get(conditionId) ?? 0) + 1;
      const push = marketPush(conditionId, revision, at);
      if (!push) continue;
      marketRevisions.set(conditionId, revision);
      // one broadcast: a connection in both rooms gets it once
      nsp.to([MARKETS_ROOM, marketRoom(conditionId)]).emit('market.updated', push);
    }
    dirtyMarkets.clear();
  };
  venue.onMarket((conditionId) => {
    if (!watched(MARKETS_ROOM) && !watched(marketRoom(conditionId))) return;
    dirtyMarkets.add(conditionId);
    if (!marketFlushing) {
      marketFlushing = true;
      setImmediate(flushMarkets);
    }
  });

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
      nsp.to(bookRoom(tokenId)).emit('book.updated', bookUpdate(book, revision, clock.now()));
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
        for (const room of [...pending.keys()]) flushBatch(room); // what was persisted still goes out
        io.close(() => resolve());
      }),
  };
}

/** A `book.updated` payload: the REST book's fields, then its revision and time (epoch ms). */
function bookUpdate(
  book: BookView,
  revision: number,
  at: number,
): ReturnType<typeof bookBody> & { revision: number; at: number } {
  // fields added to bookBody's own fresh object (a spread of it with fields added after it is V8's slow path)
  return Object.assign(bookBody(book), { revision, at });
}
