/**
 * Venue port (issue 3, deliverable 1). Orders go out as commands; the venue answers with
 * past-tense reports on one stream (NautilusTrader-style), so a real venue adapter can replace the
 * simulated one without touching machines or API. Quantities are decimal strings: prices in
 * decimal probability, sizes in shares, amounts in dollars (pUSD).
 */

export type Side = 'buy' | 'sell';
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

/** One fill of one order. */
export interface FillReport {
  type: 'venue.filled';
  orderId: string;
  /** Unique per trade and side; duplicates must be ignored by the receiver. */
  tradeId: string;
  price: string;
  size: string;
  liquidity: 'maker' | 'taker';
  /** True on the fill that completes the order (nothing left to trade). */
  completes: boolean;
  atMs: number;
}

/** Reports the venue emits, past tense. */
export type VenueReport =
  | { type: 'venue.accepted'; orderId: string; atMs: number; resting: boolean }
  | FillReport
  | { type: 'venue.canceled'; orderId: string; reason: string; atMs: number }
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
}

/** pUSD and share holdings of one user. */
export interface WalletView {
  pusd: { balance: string; reserved: string; available: string };
  positions: { tokenId: string; size: string; reserved: string; available: string; costUsd: string }[];
}

export interface VenuePort {
  /** Accepts a new order; reports follow on the stream before the promise resolves. */
  submit(order: VenueOrder): Promise<void>;
  /** Cancels a resting order; a `venue.canceled` report follows (none if already done). */
  cancel(orderId: string, reason?: string): Promise<void>;
  /** Expires a resting GTD order; a `venue.expired` report follows (none if already done). */
  expire(orderId: string): Promise<void>;
  /** What the venue knows of `orderId`, or null if it never saw it. */
  orderState(orderId: string): VenueOrderState | null;
  /**
   * The client has durably recorded the final state of `orderId`: the venue may forget the order
   * (no reconciliation will ask for it again). Ignored while the order still works.
   */
  release(orderId: string): void;
  book(tokenId: string, depth?: number): BookView | null;
  wallet(userId: string): WalletView;
  /** Subscribes to reports. */
  onReport(listener: (r: VenueReport) => void): void;
  /** Subscribes to book changes (token id), after each venue operation. */
  onBook(listener: (tokenId: string) => void): void;
}
