import type { DomainCode, DomainError } from '../engine/errors.js';

/**
 * How each {@link DomainCode} answers over HTTP (spec part 7): the status, and the envelope's
 * `error` string — a fixed string, or `'message'` for the message-shaped codes whose `error` is
 * the message itself (the cents message of spec 2.1; `Not enough shares to place this sell —
 * holding <X>`), or `'venue'` for the venue's own code (`VENUE_REJECTED`).
 */
export const ERROR_MAP: Readonly<Record<DomainCode, { status: number; error: string | 'message' | 'venue' }>> = {
  INVALID_REQUEST: { status: 400, error: 'invalid_request' },
  PRICE_IN_CENTS: { status: 400, error: 'message' },
  UNAUTHORIZED: { status: 401, error: 'unauthorized' },
  FORBIDDEN: { status: 403, error: 'forbidden' },
  NOT_FOUND: { status: 404, error: 'not_found' },
  CONFLICT: { status: 409, error: 'conflict' },
  IDEMPOTENCY_KEY_IN_USE: { status: 409, error: 'idempotency_key_in_use' },
  INSUFFICIENT_BALANCE: { status: 422, error: 'INSUFFICIENT_BALANCE' },
  NOT_ENOUGH_SHARES: { status: 422, error: 'message' },
  ORDER_CROSSES_BOOK: { status: 422, error: 'order crosses book' },
  NO_LIQUIDITY: { status: 422, error: 'NO_LIQUIDITY' },
  MARKET_CLOSED: { status: 422, error: 'MARKET_CLOSED' },
  WOULD_TRIGGER_IMMEDIATELY: { status: 422, error: 'WOULD_TRIGGER_IMMEDIATELY' },
  VENUE_REJECTED: { status: 422, error: 'venue' },
  IDEMPOTENCY_KEY_CONFLICT: { status: 409, error: 'idempotency_key_conflict' },
  NOT_IMPLEMENTED: { status: 501, error: 'not_implemented' },
  UNAVAILABLE: { status: 503, error: 'unavailable' },
  MARKET_NOT_RESOLVED: { status: 409, error: 'MARKET_NOT_RESOLVED' },
  NOTHING_TO_REDEEM: { status: 422, error: 'NOTHING_TO_REDEEM' },
  SHARES_RESERVED: { status: 422, error: 'SHARES_RESERVED' },
  NEG_RISK_MISMATCH: { status: 422, error: 'NEG_RISK_MISMATCH' },
  QUOTE_EXPIRED: { status: 410, error: 'QUOTE_EXPIRED' },
  COMBO_NOT_RESOLVED: { status: 409, error: 'COMBO_NOT_RESOLVED' },
  COMBO_LOST: { status: 422, error: 'COMBO_LOST' },
};

/**
 * The HTTP answer of a domain error: status, envelope `{error, message}` and headers
 * (`Retry-After` from `details.retryAfterSec`).
 */
export function httpOf(err: DomainError): {
  status: number;
  error: string;
  message: string;
  headers: Record<string, string>;
} {
  const m = ERROR_MAP[err.code];
  const error =
    m.error === 'message' ? err.message : m.error === 'venue' ? (err.details.venueError ?? 'rejected') : m.error;
  const headers: Record<string, string> =
    err.details.retryAfterSec !== undefined ? { 'Retry-After': String(err.details.retryAfterSec) } : {};
  return { status: m.status, error, message: err.message, headers };
}
