/**
 * The live-update protocol: Socket.IO namespace `/v2/trade` on the API's own HTTP
 * server. One map of typed events, shared by the server (api/push.ts), the tests and the
 * dashboard (web/dashboard.ts); type-only, so the browser bundle imports nothing at run time.
 *
 * Handshake: `io(`${base}/v2/trade`, { auth: { token, partner_user_id?, batch_ms? } })`. A per-user key sees
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

/**
 * `withdrawal.updated`: the withdrawal as `GET /v2/trade/withdrawals/{withdrawal_id}`
 * returns it (WithdrawalView: `withdrawal_id`, `status` `PENDING` → `CONFIRMED` | `FAILED`,
 * `to_address`, `token`, `amount` dollars, `transaction_hash`, `refunded`, `failure_code`, …) after
 * each persisted change, to its owner's and partner's rooms: a client learns the confirmation
 * (which changes no balance: the amount left at once) without polling.
 */
export type WithdrawalPush = PushMeta & { withdrawal_id: string; status: string; [field: string]: unknown };

/**
 * `wallet_operation.updated`: a split, merge or redeem as its POST answer and activity row show it
 * (WalletOpResponse: `operation_id`, `type` SPLIT | MERGE | REDEEM, `status` `PENDING` →
 * `CONFIRMED` | `FAILED`, `condition_id`, `amount`, `payout_usd`, `transaction_hash`, `pusd_delta`,
 * `pusd_balance`, `tokens` with each outcome token's `shares_delta` and `balance`, and
 * `failure_code` / `message` when it failed) after each persisted change, to its owner's and
 * partner's rooms like `order.updated`. The `balance.updated` / `position.updated` it causes come
 * besides it.
 */
export type WalletOperationPush = PushMeta & {
  operation_id: string;
  type: 'SPLIT' | 'MERGE' | 'REDEEM';
  status: string;
  [field: string]: unknown;
};

/**
 * `combo.updated`: a combo as `GET /v2/trade/combo/{combo_order_id}` returns it (ComboPosition:
 * `combo_order_id`, `combo_position_id`, `status` `QUOTED` → `EXECUTED` → `OPEN` / `PARTIAL` →
 * `RESOLVED_WIN` → `REDEEMED`, or `RESOLVED_LOSS`, `EXPIRED`; `legs` with each leg's `outcome`,
 * `payout_usd`, …; without the live `current_price` / `current_value_usd`; `updated_at` in epoch ms
 * as on every push) after each persisted change, to its owner's and partner's rooms like
 * `order.updated`.
 */
export type ComboPush = PushMeta & { combo_order_id: string; status: string; [field: string]: unknown };

/**
 * `copytrade.updated`: a copytrade subscription as `GET /v2/trade/copytrade/{id}` returns it
 * (CopytradeView: `id`, `status`, the settings, `counters` with copies, skips by reason, dollars
 * spent and realized PnL) after each persisted change (a leader fill copied or skipped, a copy's
 * fill, a status or settings change), to its owner's and partner's rooms.
 */
export type CopytradePush = PushMeta & { id: string; status: string; [field: string]: unknown };

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
  /** Price of the token's last trade print (decimal probability), null while none was seen. */
  last_trade_price: string | null;
  /** Increases by one per pushed change of this token's book (per process). */
  revision: number;
  /** Epoch ms. */
  at: number;
}

/**
 * `balance.updated`: the user's pUSD as `GET /v2/trade/balances` returns it (dollars,
 * decimal strings), after venue operations that changed it (coalesced per user per event-loop
 * turn; pushed only when a figure changed). To the user's room only.
 */
export interface BalancePush {
  currency: 'pUSD';
  balance: string;
  reserved: string;
  available: string;
  /** Increases by one per `balance.updated` of this user (per process): a gap means a missed update. */
  revision: number;
  platform_user_id: string;
  /** Epoch ms of the push. */
  at: number;
}

/**
 * One position as `GET /v2/trade/positions` lists it (shares, dollars, decimal probability). A
 * position sold or redeemed to nothing is pushed once with `size`, `reserved`, `available`,
 * `avg_price` and `cost_usd` "0" (REST then no longer lists it). The mark (`cur_price`,
 * `current_value`, `cash_pnl`) is as of the push; a push is sent when the holding changes or its
 * market resolves (marked $1 / $0 then), not when only the book's mid moves.
 */
export interface PositionItem {
  token_id: string;
  /** The outcome token id again, as orders and strategies name it. */
  symbol: string;
  condition_id: string;
  outcome: string;
  question: string;
  /** Shares held. */
  size: string;
  /** Shares reserved by open sells. */
  reserved: string;
  available: string;
  /** Average cost per share, decimal probability ("0" when nothing is held). */
  avg_price: string;
  /** Cost basis, dollars. */
  cost_usd: string;
  /**
   * Mark price, decimal probability: the book's mid; once resolved
   * 1 (winner) or 0; null when the token has no price at all.
   */
  cur_price: string | null;
  /** size × cur_price, dollars (null without a mark). */
  current_value: string | null;
  /** Unrealized PnL: current_value − cost_usd, dollars (null without a mark). */
  cash_pnl: string | null;
  /** PnL realized by sells, merges and redeems of this token, dollars. */
  realized_pnl: string;
  /** The market resolved and these shares can be redeemed. */
  redeemable: boolean;
  /** Free shares of every outcome of the market are held: a merge into pUSD is possible. */
  mergeable: boolean;
  /** The market resolved (its winner is known). */
  market_resolved: boolean;
}

/**
 * `position.updated`: the user's positions that changed (only those), coalesced per user
 * per event-loop turn. To the user's room only.
 */
export interface PositionPush {
  positions: PositionItem[];
  /** Increases by one per `position.updated` of this user (per process). */
  revision: number;
  platform_user_id: string;
  /** Epoch ms of the push. */
  at: number;
}

/**
 * `market.updated`: a market as `GET /v2/trade/markets` lists it, after its tick size
 * changed or it closed or resolved, plus its lifecycle. To the connections that subscribed to it
 * (`markets.subscribe` naming it) or to every market (`markets.subscribe` without `condition_ids`).
 */
export interface MarketBody {
  condition_id: string;
  question: string;
  slug: string;
  /**
   * Each outcome token: `winner` null until the market resolved, then whether this token won;
   * `last_trade_price` its last trade print (decimal probability), null while none was seen.
   */
  tokens: { token_id: string; outcome: string; winner: boolean | null; last_trade_price: string | null }[];
  /** Current tick, decimal probability. */
  tick_size: string;
  /** Minimum resting order size, shares. */
  min_size: string;
  end_date: string | null;
  /** A neg-risk market (split, merge and redeem through the NegRiskAdapter on chain). */
  neg_risk: boolean;
  /** No new orders (closed or resolved). */
  closed: boolean;
  resolved: boolean;
  /** The winning outcome token once resolved, else null. */
  winning_token_id: string | null;
  /** When the market resolved, epoch ms, else null. */
  resolved_at: number | null;
}

/** `market.updated`: the market as GET /v2/trade/markets lists it ({@link MarketBody}), with its push revision. */
export interface MarketPush extends MarketBody {
  /** Increases by one per `market.updated` of this market (per process). */
  revision: number;
  /** Epoch ms of the push. */
  at: number;
}

/** One record of an `updates.batch`: the event it stands for and that event's payload. */
export type BatchedRecord =
  | { event: 'order.updated'; data: OrderPush }
  | { event: 'strategy.updated'; data: StrategyPush }
  | { event: 'withdrawal.updated'; data: WithdrawalPush }
  | { event: 'wallet_operation.updated'; data: WalletOperationPush }
  | { event: 'combo.updated'; data: ComboPush }
  | { event: 'copytrade.updated'; data: CopytradePush }
  | { event: 'balance.updated'; data: BalancePush }
  | { event: 'position.updated'; data: PositionPush };

/**
 * `updates.batch` (opt-in): a connection that asks for it in the handshake
 * (`auth.batch_ms`, 1 to 1000) receives its `order.updated`, `strategy.updated`,
 * `withdrawal.updated`, `wallet_operation.updated`, `combo.updated`, `copytrade.updated`, `balance.updated`
 * and `position.updated` pushes coalesced: one
 * `updates.batch` per room per window of `batch_ms` milliseconds (the window opens at the first record), its records in
 * the order the separate events would have come, nothing dropped or merged, each with its own
 * revision. Such a connection receives none of those events separately; `book.updated` and
 * `market.updated` are unchanged.
 */
export interface BatchPush {
  records: BatchedRecord[];
  /** The window asked for, ms. */
  batch_ms: number;
}

/** Acknowledgement of a client request: `{ok: true}` or the REST error envelope. */
export type Ack = { ok: true; token_id: string } | { ok: false; error: string; message?: string };

/**
 * Acknowledgement of `markets.subscribe` (with the current state of the markets it named, unknown
 * ids left out: those are not subscribed) and `markets.unsubscribe` (`markets` empty).
 */
export type MarketsAck = { ok: true; markets: MarketPush[] } | { ok: false; error: string; message?: string };

/** What the server sends. */
export interface ServerToClientEvents {
  'order.updated': (order: OrderPush) => void;
  'strategy.updated': (strategy: StrategyPush) => void;
  'withdrawal.updated': (withdrawal: WithdrawalPush) => void;
  'wallet_operation.updated': (operation: WalletOperationPush) => void;
  'combo.updated': (combo: ComboPush) => void;
  'copytrade.updated': (subscription: CopytradePush) => void;
  'book.updated': (book: BookPush) => void;
  'balance.updated': (balance: BalancePush) => void;
  'position.updated': (positions: PositionPush) => void;
  'market.updated': (market: MarketPush) => void;
  'updates.batch': (batch: BatchPush) => void;
  /**
   * Sent once, right after a reconnection whose session could not be recovered (the service
   * restarted, or the client was away longer than the 2-minute recovery window): the updates
   * made meanwhile are not replayed, so the client reads the current state through REST.
   */
  'resync.required': (info: { reason: string }) => void;
}

/** What a client may send; each takes an acknowledgement callback. */
export interface ClientToServerEvents {
  /** Starts `book.updated` for a token (10 levels a side); the current book is sent at once. */
  'book.subscribe': (request: { token_id: string }, ack: (result: Ack) => void) => void;
  'book.unsubscribe': (request: { token_id: string }, ack: (result: Ack) => void) => void;
  /**
   * Starts `market.updated` for the markets named in `condition_ids` (at most 500 a call; calls
   * add up; unknown ids are left out), or, without `condition_ids`, for every market of the
   * venue. The ack carries the current state of the markets named, so that a client can show
   * closed and resolved markets before any change.
   */
  'markets.subscribe': (request: { condition_ids?: string[] }, ack: (result: MarketsAck) => void) => void;
  /**
   * Stops `market.updated` for the markets named in `condition_ids`,
   * or, without them, for every market (named ones and all).
   */
  'markets.unsubscribe': (request: { condition_ids?: string[] }, ack: (result: MarketsAck) => void) => void;
}

/** Per-connection data the server keeps (not sent to clients). */
export interface PushSocketData {
  keyId: string;
  partnerId: string;
  /** The one user this connection sees, or null for a master key watching its whole partner. */
  userId: string | null;
  /** The `updates.batch` window this connection asked for (`auth.batch_ms`), or null for separate events. */
  batchMs: number | null;
}

/** Event names, for documentation (README, OpenAPI description) and tests. */
export const PUSH_EVENTS = {
  server: [
    'order.updated',
    'strategy.updated',
    'withdrawal.updated',
    'wallet_operation.updated',
    'combo.updated',
    'copytrade.updated',
    'book.updated',
    'balance.updated',
    'position.updated',
    'market.updated',
    'updates.batch',
  ],
  client: ['book.subscribe', 'book.unsubscribe', 'markets.subscribe', 'markets.unsubscribe'],
} as const;

/** The namespace every client connects to. */
export const PUSH_NAMESPACE = '/v2/trade';
