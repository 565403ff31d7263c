/**
 * Venue port. Orders go out as commands; the venue answers with
 * past-tense reports on one stream (NautilusTrader-style), so a real venue adapter can replace the
 * simulated one without touching machines or API: the engine and the API depend on this port
 * only. Quantities in commands, reports and views are decimal strings: prices in decimal
 * probability, sizes in shares, amounts in dollars (pUSD). The reads the engine computes with
 * (market data, ledger reads) are exact decimals ({@link Dec}).
 */
import type { ChainPosition } from '../data/records.js';
import type { Dec } from '../decimal.js';

/** Side of an order: buy or sell outcome shares. */
export type Side = 'buy' | 'sell';
/** GTC and GTD rest until done (GTD is expired by the client); IOC fills what it can now; FOK all or nothing. */
export type TimeInForce = 'GTC' | 'GTD' | 'IOC' | 'FOK';

/** A new order for the venue. `orderId` is the idempotency key: submitting it twice is a no-op. */
export interface VenueOrder {
  orderId: string;
  userId: string;
  tokenId: string;
  side: Side;
  kind: 'limit' | 'market';
  /** Limit price; null for market orders. */
  price: string | null;
  /** Shares; null for a market buy (sized by `quoteAmount`). */
  size: string | null;
  /** Dollars to spend; market buys only. */
  quoteAmount: string | null;
  /** Market orders are always IOC. */
  timeInForce: TimeInForce;
  /** Reject instead of taking liquidity (`order crosses book`). */
  postOnly: boolean;
}

/**
 * One party of a trade in its own terms: with complementary matching the maker may hold the other
 * outcome (a buy of Yes against a buy of No mints both), so each party has its token, side and price.
 */
export interface TradeLeg {
  /** The party's user; null for the venue's liquidity provider. */
  userId: string | null;
  /** The party's order; null for the liquidity provider's quotes. */
  orderId: string | null;
  tokenId: string;
  side: Side;
  /** Price of `tokenId`, decimal probability. */
  price: string;
}

/**
 * A trade as the venue recorded it, shared by the fill reports of its two parties (the market
 * tape's row): its position on the simulated chain, given when it matched and journaled with it.
 */
export interface TradeFacts extends ChainPosition {
  /** The trade's id; each party's report's `tradeId` is it suffixed `-t` (taker) or `-m` (maker). */
  id: string;
  /** Shares traded. */
  size: string;
  /** Fee the taker paid, dollars ("0": the simulated venue charges none). */
  feeUsd: string;
  taker: TradeLeg;
  maker: TradeLeg;
}

/** One fill of one order. */
export interface FillReport {
  type: 'venue.filled';
  orderId: string;
  /** Unique per trade and side; duplicates must be ignored by the receiver. */
  tradeId: string;
  /** Trade price (the resting order's), decimal probability. */
  price: string;
  /** Shares traded. */
  size: string;
  /** Whether this order was resting (maker) or incoming (taker) in the trade. */
  liquidity: 'maker' | 'taker';
  /** True on the fill that completes the order (nothing left to trade). */
  completes: boolean;
  /** When the venue traded, epoch ms. */
  atMs: number;
  /**
   * The trade, with its chain position and both parties (absent in fills journaled before trades
   * carried it: such a fill is not in the trade history).
   */
  trade?: TradeFacts;
}

/**
 * Why an order ended canceled or expired (order view `cancel_code`, `message`): `code` is what
 * the engine decides on, `message` is for people. The engine's own cancels pass theirs to
 * {@link VenuePort.cancel}; the venue's own cancels carry the venue's.
 * - `USER_CANCELED`: the user asked (DELETE order, cancel-batch, cancel-all);
 * - `STRATEGY_CANCELED`: the strategy that placed it ended (DELETE strategy, its market closed);
 * - `SLICE_ROLLED`, `DURATION_OVER` (TWAP), `REPEGGED` (PEGGED), `PRICE_DRIFTED` (ICEBERG),
 *   `BRACKET_STOP_FIRED` (a bracket's take-profit when its stop fired: one cancels the other);
 * - the venue's: `MARKET_RESOLVED`, `TICK_SIZE_CHANGED`, `SELF_TRADE_PREVENTION`,
 *   `IOC_REMAINDER` (what an IOC or MARKET order could not fill), `FOK_NOT_FILLED`;
 * - `EXPIRED`: a GTD order's expiration; `VENUE_CANCELED`: a cancel the venue recorded without a code.
 */
export type CancelCode =
  | 'USER_CANCELED'
  | 'STRATEGY_CANCELED'
  | 'SLICE_ROLLED'
  | 'DURATION_OVER'
  | 'REPEGGED'
  | 'PRICE_DRIFTED'
  | 'BRACKET_STOP_FIRED'
  | 'MARKET_RESOLVED'
  | 'TICK_SIZE_CHANGED'
  | 'SELF_TRADE_PREVENTION'
  | 'IOC_REMAINDER'
  | 'FOK_NOT_FILLED'
  | 'EXPIRED'
  | 'VENUE_CANCELED';

/** A cancel's reason: {@link CancelCode} and a human message. */
export interface CancelReason {
  code: CancelCode;
  message: string;
}

/** Reports the venue emits, past tense. */
export type VenueReport =
  | { type: 'venue.accepted'; orderId: string; atMs: number; resting: boolean }
  | FillReport
  /** `reason` is the message; `code` the {@link CancelCode} (absent only in reports recorded before codes existed). */
  | { type: 'venue.canceled'; orderId: string; reason: string; code?: CancelCode; atMs: number }
  | { type: 'venue.expired'; orderId: string; atMs: number }
  | { type: 'venue.rejected'; orderId: string; error: string; reason: string; atMs: number };

/** What the venue knows of one order (reconciliation at start-up). */
export interface VenueOrderState {
  status: 'open' | 'filled' | 'canceled' | 'expired' | 'rejected';
  fills: FillReport[];
  /** Final report (canceled/expired/rejected) when the order is done without a full fill. */
  final: VenueReport | null;
}

/** A price level: decimal strings. */
export interface Level {
  price: string;
  size: string;
}

/** Order book of one token, best levels first. */
export interface BookView {
  tokenId: string;
  tickSize: string;
  minSize: string;
  bids: Level[];
  asks: Level[];
  /** Price of the token's last trade print, decimal probability (the capture's `last_trade_price`), when known. */
  lastTradePrice?: string;
}

/** pUSD and share holdings of one user. */
export interface WalletView {
  pusd: { balance: string; reserved: string; available: string };
  /** `realizedPnl`: dollars (6 decimals) realized by sells, merges and redeems of the token; absent when none. */
  positions: {
    tokenId: string;
    size: string;
    reserved: string;
    available: string;
    costUsd: string;
    realizedPnl?: string;
  }[];
}

/** An outcome token: an order book of its own. */
export interface TokenInfo {
  tokenId: string;
  /** Outcome name ("Yes", "No", …). */
  outcome: string;
  /** The market (condition) the token belongs to. */
  conditionId: string;
  question: string;
  /** Price step, decimal probability (0.01 or 0.001). */
  tickSize: Dec;
  /** Minimum size of a resting order, shares. */
  minSize: Dec;
  /** The other outcome token of the market. */
  complementTokenId: string;
}

/** One market (condition) with its outcome tokens. */
export interface MarketInfo {
  conditionId: string;
  question: string;
  slug: string;
  /** End date as an ISO 8601 string, or null when the market has none. */
  endDateIso: string | null;
  /** Price step, decimal probability. */
  tickSize: Dec;
  /** Minimum size of a resting order, shares. */
  minSize: Dec;
  negRisk: boolean;
  /** Its tokens with their recorded price (decimal probability). */
  tokens: { tokenId: string; outcome: string; price: Dec }[];
}

/**
 * Lifecycle of one market (condition) on the venue: open for trading, closed (no new
 * orders), resolved with its winning outcome token (each winning share redeems for $1, each losing
 * share for $0).
 */
export interface MarketStatus {
  conditionId: string;
  /** True once the market takes no new orders (closed or resolved). */
  closed: boolean;
  /** True once the winner is known. */
  resolved: boolean;
  /** The winning outcome token once resolved, else null. */
  winningTokenId: string | null;
  /** When the market resolved, epoch ms, else null. */
  resolvedAtMs: number | null;
}

/** Best bid and best ask of a token (decimal probability); undefined for an empty side. */
export interface Touch {
  bid: Dec | undefined;
  ask: Dec | undefined;
}

/** What a user may still commit on one token (ledger read for pre-trade checks). */
export interface Available {
  /** Free pUSD (balance − reserved), dollars. */
  usd: Dec;
  /** Free shares (held − reserved by open sells). */
  shares: Dec;
  /** Shares held. */
  held: Dec;
  /** Shares reserved by open sells. */
  reservedShares: Dec;
}

/** Whether the venue can make its operations durable (GET /healthz). */
export interface VenueHealth {
  /** False while the venue cannot record operations (the API then answers venue operations 503). */
  ok: boolean;
  /** Operations accepted in memory and not yet recorded. */
  pendingWrites: number;
  /** The last failure still outstanding, or null. */
  error: string | null;
}

/**
 * A wallet operation: a simulated on-chain transaction of the conditional-token
 * framework (split, merge, redeem) or of pUSD (a withdrawal's debit, the refund of a failed one).
 * `opId` is the idempotency key: the venue applies an operation once and answers a repeat with
 * the recorded result.
 */
export type WalletOp =
  | {
      kind: 'split';
      opId: string;
      userId: string;
      conditionId: string;
      /** Dollars = full sets of shares (≤ 6 decimals). */ amount: string;
    }
  | {
      kind: 'merge';
      opId: string;
      userId: string;
      conditionId: string;
      /** Full sets of shares = dollars (≤ 6 decimals). */ amount: string;
    }
  | {
      kind: 'redeem';
      opId: string;
      userId: string;
      conditionId: string;
      /** Redeem only this outcome token of the condition; every outcome when absent. */
      tokenId?: string;
      /** Shares of `tokenId` to redeem (≤ 6 decimals); all of them when absent. */
      amount?: string;
    }
  | { kind: 'withdraw'; opId: string; userId: string; /** Dollars of pUSD (≤ 6 decimals). */ amount: string }
  | { kind: 'credit'; opId: string; userId: string; /** Dollars of pUSD (≤ 6 decimals). */ amount: string }
  | {
      /** A combo bought (its accept): `amount` pUSD leave the wallet, `shares` combo shares enter it. */
      kind: 'combo_buy';
      opId: string;
      userId: string;
      comboId: string;
      /** Dollars of pUSD: notional + fee (≤ 6 decimals). */ amount: string;
      /** Combo shares credited. */ shares: string;
      /** The legs' YES outcome tokens: each must be of an open market. */ legs: string[];
    }
  | {
      /** A won combo redeemed: its shares are burned, $1 each is paid. */
      kind: 'combo_redeem';
      opId: string;
      userId: string;
      comboId: string;
    };

/** The kinds of {@link WalletOp}. */
export type WalletOpKind = WalletOp['kind'];

/**
 * What a wallet operation did, as the simulated chain reports it: signed changes (pUSD in dollars,
 * shares per outcome token) and the balances after it. Decimal strings.
 */
export interface WalletOpResult {
  opId: string;
  kind: WalletOpKind;
  /** Simulated transaction hash: `0x` + 64 hex, keccak256 of the operation (deterministic). */
  transactionHash: string;
  /** Its block on the simulated chain (integer seconds; absent in results recorded before positions existed). */
  blockTimestamp?: number;
  /** Its index in the block (absent likewise). */
  logIndex?: number;
  /** When the venue applied it, epoch ms. */
  atMs: number;
  /** The condition of a split, merge or redeem (the combo's id for a combo operation); null for pUSD transfers. */
  conditionId: string | null;
  /**
   * Signed pUSD change, dollars (split −amount, merge +amount, redeem +payout, withdraw −amount, credit +amount).
   */
  pusdDelta: string;
  /**
   * Signed share change per outcome token of the condition (both tokens, in the market's order). `price`:
   * on a split or a merge, the token's mark (decimal probability) that shared the operation's dollars
   * among the outcomes' cost basis; absent when they were shared equally (no mark for every token).
   */
  shares: { tokenId: string; delta: string; price?: string }[];
  /** pUSD balance after the operation, dollars. */
  pusdBalance: string;
  /** Shares held after the operation of each token in `shares`. */
  positions: { tokenId: string; size: string }[];
  /** A combo operation: the combo and its signed share change (`shares` and `positions` are then empty). */
  combo?: { comboId: string; sharesDelta: string };
}

/** Why the venue refuses a wallet operation (nothing changed): a code and a human reason. */
export interface WalletOpRefusal {
  /**
   * `INSUFFICIENT_BALANCE` (pUSD), `INSUFFICIENT_SHARES` (free shares below a merge's amount),
   * `SHARES_RESERVED` (redeem while open sells reserve shares), `MARKET_NOT_RESOLVED`,
   * `INSUFFICIENT_SHARES` also for a redeem of more shares of one outcome than held,
   * `NOTHING_TO_REDEEM`, `UNKNOWN_MARKET`; for combos also `MARKET_CLOSED` (a leg's market takes no
   * new trades), `COMBO_NOT_RESOLVED` (a leg pending) and `COMBO_LOST` (a leg lost).
   */
  error: string;
  reason: string;
}

/** What the engine and the API need of a venue: commands, reports, market data and ledger reads. */
export interface VenuePort {
  /** Accepts a new order; reports follow on the stream before the promise resolves. */
  submit(order: VenueOrder): Promise<void>;
  /**
   * Accepts many new orders as ONE venue operation: each matched in turn, in the order given (each
   * sees the books and balances the ones before it left), one durable record for all of them; the
   * reports of all follow on the stream, in that order, before the promise resolves. An order
   * already known is skipped (idempotent, as {@link submit}).
   */
  submitMany(orders: readonly VenueOrder[]): Promise<void>;
  /** Cancels a resting order; a `venue.canceled` report carrying `reason` follows (none if already done). */
  cancel(orderId: string, reason: CancelReason): Promise<void>;
  /** Expires a resting GTD order; a `venue.expired` report follows (none if already done). */
  expire(orderId: string): Promise<void>;
  /** What the venue knows of `orderId`, or null if it never saw it. */
  orderState(orderId: string): VenueOrderState | null;
  /** The order `orderId` as it was submitted, while the venue holds it (see {@link release}); else null. */
  orderOf(orderId: string): VenueOrder | null;
  /**
   * Ids of every order the venue holds: the open ones and the finished ones it has not forgotten yet
   * (see {@link release}). What a client reconciles its records against at start-up.
   */
  orderIds(): string[];
  /**
   * The client has durably recorded the final state of `orderId`: the venue may forget the order
   * (no reconciliation will ask for it again). Ignored while the order still works.
   */
  release(orderId: string): void;
  /**
   * The next position of the venue's chain sequence for an event recorded outside the venue (the
   * leader replay's fills) at `atMs` (epoch ms) of transaction `transactionHash`: after every
   * position given before, so such events and the venue's own share one chain order.
   */
  chainPosition(atMs: number, transactionHash: string): ChainPosition;
  /**
   * Order book of `tokenId`, at most `depth` levels per side; null for an unknown token. It shows
   * what can trade against the token: the other outcome's orders are in it at 1 − their price
   * (complementary matching), merged by price with the token's own.
   */
  book(tokenId: string, depth?: number): BookView | null;
  /** Best bid and ask of `tokenId` as {@link book} shows them (empty for an unknown token). */
  touch(tokenId: string): Touch;
  /** The token `tokenId`, or undefined when the venue does not list it. */
  token(tokenId: string): TokenInfo | undefined;
  /** Every market the venue lists, in the venue's order. */
  markets(): readonly MarketInfo[];
  /** The listed market `conditionId` (exact id: the venue's ids are lower-case hex), or undefined. */
  market(conditionId: string): MarketInfo | undefined;
  /** Lifecycle of the market `conditionId` (open, closed, resolved), or undefined when not listed. */
  marketStatus(conditionId: string): MarketStatus | undefined;
  /** Balances and positions of `userId`. */
  wallet(userId: string): WalletView;
  /** Free pUSD and free shares of `tokenId` of `userId`. */
  available(userId: string, tokenId: string): Available;
  /** Whether operations are being recorded; read on every order and by /healthz. */
  readonly health: VenueHealth;
  /** Subscribes to reports. */
  onReport(listener: (r: VenueReport) => void): void;
  /** Subscribes to book changes (token id: both outcomes when either's orders changed), after each venue operation. */
  onBook(listener: (tokenId: string) => void): void;
  /** Subscribes to wallet changes (user id: pUSD or positions changed), after each venue operation that is recorded. */
  onWallet(listener: (userId: string) => void): void;
  /** Subscribes to market changes (condition id: tick size, closed, resolved), once recorded. */
  onMarket(listener: (conditionId: string) => void): void;
  /**
   * Applies a wallet operation at once, or answers the recorded result of one applied
   * before under the same `opId`; resolves once it is recorded. Nothing changes on a refusal.
   * @throws {VenueOpRefused} carrying a {@link WalletOpRefusal}.
   */
  walletOp(op: WalletOp): Promise<WalletOpResult>;
  /**
   * Opens the wallet of a new user with the venue's initial pUSD, as a `credit` operation (op id
   * {@link initialCreditOpId}) with its chain position, once recorded; a repeat answers the recorded
   * result while the venue remembers it.
   * @returns the result, or null when the wallet was open before (nothing to record).
   */
  openWallet(userId: string): Promise<WalletOpResult | null>;
  /** Why the venue would refuse `op` now (the same rule {@link walletOp} applies), or null. Changes nothing. */
  walletOpRefusal(op: WalletOp): WalletOpRefusal | null;
  /** The client recorded the outcome of `opId` of `userId`: the venue may forget it (no retry will come). */
  releaseWalletOp(userId: string, opId: string): void;
  /** Stops background work and waits until everything accepted is recorded (shutdown). */
  close(): Promise<void>;
}

/** The op id of a new wallet's initial pUSD credit ({@link VenuePort.openWallet}). */
export const initialCreditOpId = (userId: string) => `initial:${userId}`;

/** A wallet operation the venue refused (nothing changed): {@link WalletOpRefusal} as an error. */
export class VenueOpRefused extends Error {
  constructor(
    readonly error: string,
    reason: string,
  ) {
    super(reason);
    this.name = 'VenueOpRefused';
  }
}
