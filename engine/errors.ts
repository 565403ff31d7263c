/**
 * Domain errors: what the engine throws when a request cannot be carried out. Each has
 * a {@link DomainCode} and a human `message`; the engine knows nothing of HTTP. The API layer
 * (api/error-map.ts) maps each code to an HTTP status and the spec's error envelope
 * `{error, message?}` (spec part 7). Anything that is not a DomainError is a server fault (500).
 */

/**
 * The codes of {@link DomainError}. Spec part 7 names the business ones (`INSUFFICIENT_BALANCE`,
 * `NO_LIQUIDITY`, `order crosses book`, the not-enough-shares sentence, the cents message of 2.1).
 */
export type DomainCode =
  /** A request that breaks a rule (spec part 7: 400). */
  | 'INVALID_REQUEST'
  /** A price field above 1: the cents message of spec 2.1 is both `error` and `message`. */
  | 'PRICE_IN_CENTS'
  | 'UNAUTHORIZED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'CONFLICT'
  /** pUSD balance below the notional (spec part 7). */
  | 'INSUFFICIENT_BALANCE'
  /** Free shares below a sell's size: `Not enough shares to place this sell — holding <X>` (spec part 7). */
  | 'NOT_ENOUGH_SHARES'
  /** A post-only order (ICEBERG slice) that would take liquidity (spec 2.2.2: `order crosses book`). */
  | 'ORDER_CROSSES_BOOK'
  /** No bid or ask to price from (spec part 7). */
  | 'NO_LIQUIDITY'
  /** The order's market closed or resolved: it takes no new orders (422 `MARKET_CLOSED`). */
  | 'MARKET_CLOSED'
  /** A stop whose level the best bid already reached. */
  | 'WOULD_TRIGGER_IMMEDIATELY'
  /** The venue refused an order for a reason of its own; `details.venueError` is the venue's code. */
  | 'VENUE_REJECTED'
  /** The Idempotency-Key was used for a different request. */
  | 'IDEMPOTENCY_KEY_CONFLICT'
  /** A request with the same Idempotency-Key still runs (`retryAfterSec`). */
  | 'IDEMPOTENCY_KEY_IN_USE'
  /** Part of the specification, not built on this service. */
  | 'NOT_IMPLEMENTED'
  /** The service cannot do it right now (`retryAfterSec` when a retry is worth it). */
  | 'UNAVAILABLE'
  /** A redeem on a market that has not resolved yet. */
  | 'MARKET_NOT_RESOLVED'
  /** A redeem of a market the user holds no shares of. */
  | 'NOTHING_TO_REDEEM'
  /** A redeem while open sells reserve shares of the market: cancel them first. */
  | 'SHARES_RESERVED'
  /**
   * A split, merge or redeem whose `neg_risk_market` does not
   * match the market (routing through the NegRiskAdapter or not).
   */
  | 'NEG_RISK_MISMATCH'
  /** A combo accept after the quote's `expires_at` (spec part 7: 410): re-quote. */
  | 'QUOTE_EXPIRED'
  /** A combo redeem while a leg has not resolved yet. */
  | 'COMBO_NOT_RESOLVED'
  /** A combo redeem after a leg lost: the combo pays nothing. */
  | 'COMBO_LOST';

/** Every {@link DomainCode}, for exhaustive checks (the API's mapping test). */
export const DOMAIN_CODES: readonly DomainCode[] = [
  'INVALID_REQUEST',
  'PRICE_IN_CENTS',
  'UNAUTHORIZED',
  'FORBIDDEN',
  'NOT_FOUND',
  'CONFLICT',
  'INSUFFICIENT_BALANCE',
  'NOT_ENOUGH_SHARES',
  'ORDER_CROSSES_BOOK',
  'NO_LIQUIDITY',
  'MARKET_CLOSED',
  'WOULD_TRIGGER_IMMEDIATELY',
  'VENUE_REJECTED',
  'IDEMPOTENCY_KEY_CONFLICT',
  'IDEMPOTENCY_KEY_IN_USE',
  'NOT_IMPLEMENTED',
  'UNAVAILABLE',
  'MARKET_NOT_RESOLVED',
  'NOTHING_TO_REDEEM',
  'SHARES_RESERVED',
  'NEG_RISK_MISMATCH',
  'QUOTE_EXPIRED',
  'COMBO_NOT_RESOLVED',
  'COMBO_LOST',
];

/** Optional details of a {@link DomainError}. */
export interface DomainErrorDetails {
  /** Seconds after which a retry may succeed (the API sends it as `Retry-After`). */
  retryAfterSec?: number;
  /** `VENUE_REJECTED`: the venue's own error code (the `venue.rejected` report's `error`). */
  venueError?: string;
}

/**
 * A failure a client can cause: a {@link DomainCode}, a human `message` (the envelope's `message`;
 * for the message-shaped codes of spec part 7 also its `error`) and optional details.
 */
export class DomainError extends Error {
  /**
   * @param code - what went wrong, as a code (the API maps it to a status and `error`).
   * @param message - human-readable detail.
   * @param details - `retryAfterSec`, `venueError`.
   */
  constructor(
    readonly code: DomainCode,
    message: string,
    readonly details: DomainErrorDetails = {},
  ) {
    super(message);
    this.name = 'DomainError';
  }
}

/** Shorthands for the common codes. Each returns a {@link DomainError} to throw. */
export const errors = {
  /** `INVALID_REQUEST`: a rule the request breaks (400). */
  badRequest: (message: string) => new DomainError('INVALID_REQUEST', message),
  /** `UNAUTHORIZED`: missing or invalid credentials (401). */
  unauthorized: (message: string) => new DomainError('UNAUTHORIZED', message),
  /** `FORBIDDEN`: a scope is missing (403). */
  forbidden: (message: string) => new DomainError('FORBIDDEN', message),
  /** `NOT_FOUND`: no such thing for this caller (404). */
  notFound: (message: string) => new DomainError('NOT_FOUND', message),
  /** `CONFLICT`: the current state refuses it (409). */
  conflict: (message: string) => new DomainError('CONFLICT', message),
  /** `NOT_IMPLEMENTED`: `what` is part of the v2 specification but not built (501). */
  notImplemented: (what: string) =>
    new DomainError(
      'NOT_IMPLEMENTED',
      `${what} is part of the v2 specification but is not available on this service yet`,
    ),
  /** `UNAVAILABLE`: not now (503); `retryAfterSec` when a retry is worth it. */
  unavailable: (message: string, retryAfterSec?: number) =>
    new DomainError('UNAVAILABLE', message, retryAfterSec !== undefined ? { retryAfterSec } : {}),
};

/** Store write lost an optimistic-concurrency race: the revision on disk moved on. */
export class RevisionConflictError extends Error {
  constructor(
    readonly id: string,
    readonly expectedRevision: number,
  ) {
    super(`revision conflict on ${id}: expected revision ${expectedRevision}`);
    this.name = 'RevisionConflictError';
  }
}

/** A unique index refused a document. */
export class DuplicateKeyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DuplicateKeyError';
  }
}

/** An event was sent to an actor id the store does not hold. */
export class UnknownActorError extends Error {
  constructor(readonly id: string) {
    super(`unknown actor ${id}`);
    this.name = 'UnknownActorError';
  }
}
