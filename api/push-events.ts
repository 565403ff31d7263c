/**
 * The live-update protocol (issue 6): Socket.IO namespace `/v2/trade` on the API's own HTTP
 * server. One map of typed events, shared by the server (api/push.ts), the tests and the
 * dashboard (web/dashboard.ts); type-only, so the browser bundle imports nothing at run time.
 *
 * Handshake: `io(`${base}/v2/trade`, { auth: { token, partner_user_id? } })`. A per-user key sees
 * its user; a master key sees every user of its partner, or one when `partner_user_id` names it.
 * A refused handshake ends in `connect_error` whose `message` is the error string and whose
 * `data` is the REST error envelope (`{error, message}`); a revoked key is disconnected.
 */

/** Fields every record push carries besides the REST record itself. */
export interface PushMeta {
  /** Increases by one per persisted change of this record: a gap means a missed update (re-read over REST). */
  revision: number;
  /** `platform_user_id` of the record's owner (useful on master-key connections). */
  platform_user_id: string | null;
  /** Epoch ms the change was persisted. */
  updated_at: number;
}

/**
 * `order.updated`: the order as `GET /v2/trade/orders/open` and `POST /v2/trade/order` return it
 * (OrderView: `order_id`, `type`, `status`, `side`, `symbol`, `price`, `size`, `filled_size`,
 * `remaining_size`, `matched_amount`, `is_stop_loss`, `is_take_profit`, `record_id`, …).
 */
export type OrderPush = PushMeta & { order_id: string; status: string; [field: string]: unknown };

/**
 * `strategy.updated`: the record as `GET /v2/trade/strategies` returns it (StrategyRecord:
 * `record_id`, `type`, `status`, `price`, `filled_size`, `executed_price`, water marks,
 * `slices_done` / `slices_total`, `order_ids`, …).
 */
export type StrategyPush = PushMeta & { record_id: string; type: string; status: string; [field: string]: unknown };

/** One price level: decimal strings (probability, shares). */
export interface BookLevel {
  price: string;
  size: string;
}

/**
 * `book.updated`: the top of a subscribed token's book, as `GET /v2/trade/book?depth=10` returns
 * it (levels best first), after each change of the book (changes within one tick are coalesced).
 */
export interface BookPush {
  token_id: string;
  tick_size: string;
  min_size: string;
  bids: BookLevel[];
  asks: BookLevel[];
  /** Increases by one per pushed change of this token's book (per process). */
  revision: number;
  /** Epoch ms. */
  at: number;
}

/** Acknowledgement of a client request: `{ok: true}` or the REST error envelope. */
export type Ack = { ok: true; token_id: string } | { ok: false; error: string; message?: string };

/** What the server sends. */
export interface ServerToClientEvents {
  'order.updated': (order: OrderPush) => void;
  'strategy.updated': (strategy: StrategyPush) => void;
  'book.updated': (book: BookPush) => void;
}

/** What a client may send; each takes an acknowledgement callback. */
export interface ClientToServerEvents {
  /** Starts `book.updated` for a token (10 levels a side); the current book is sent at once. */
  'book.subscribe': (request: { token_id: string }, ack: (result: Ack) => void) => void;
  'book.unsubscribe': (request: { token_id: string }, ack: (result: Ack) => void) => void;
}

/** Per-connection data the server keeps (not sent to clients). */
export interface PushSocketData {
  keyId: string;
  partnerId: string;
  /** The one user this connection sees, or null for a master key watching its whole partner. */
  userId: string | null;
}

/** Event names, for documentation (README, OpenAPI description) and tests. */
export const PUSH_EVENTS = {
  server: ['order.updated', 'strategy.updated', 'book.updated'],
  client: ['book.subscribe', 'book.unsubscribe'],
} as const;

/** The namespace every client connects to. */
export const PUSH_NAMESPACE = '/v2/trade';
