import { describe, expect, it } from 'vitest';
import { ERROR_MAP, httpOf } from '../../api/error-map.js';
import { ApiError, toApiError } from '../../api/errors.js';
import { DOMAIN_CODES, DomainError, errors } from '../../engine/errors.js';

/** api/error-map.ts: every domain code answers with a status and the spec's envelope (spec part 7). */
describe('domain error → HTTP (api/error-map.ts)', () => {
  it('every code has a status and an error string; the envelope is {error, message}', () => {
    expect(Object.keys(ERROR_MAP).sort()).toEqual([...DOMAIN_CODES].sort());
    for (const code of DOMAIN_CODES) {
      const h = toApiError(new DomainError(code, `why ${code}`, { venueError: 'venue code' }))!;
      expect(h).toBeInstanceOf(ApiError);
      expect(h.status).toBeGreaterThanOrEqual(400);
      expect(h.status).toBeLessThan(600);
      expect(h.toBody()).toEqual({ error: expect.any(String), message: `why ${code}` });
      expect(h.toBody().error.length).toBeGreaterThan(0);
    }
  });

  it.each([
    ['INVALID_REQUEST', 'x', 400, 'invalid_request'],
    [
      'PRICE_IN_CENTS',
      'price must be a decimal probability 0.001–0.999; received 72 — did you mean 0.72?',
      400,
      'price must be a decimal probability 0.001–0.999; received 72 — did you mean 0.72?',
    ],
    ['UNAUTHORIZED', 'x', 401, 'unauthorized'],
    ['FORBIDDEN', 'x', 403, 'forbidden'],
    ['NOT_FOUND', 'x', 404, 'not_found'],
    ['CONFLICT', 'x', 409, 'conflict'],
    ['IDEMPOTENCY_KEY_IN_USE', 'x', 409, 'idempotency_key_in_use'],
    ['INSUFFICIENT_BALANCE', 'this buy needs $5 pUSD; available $1', 422, 'INSUFFICIENT_BALANCE'],
    [
      'NOT_ENOUGH_SHARES',
      'Not enough shares to place this sell — holding 3',
      422,
      'Not enough shares to place this sell — holding 3',
    ],
    ['ORDER_CROSSES_BOOK', 'x', 422, 'order crosses book'],
    ['NO_LIQUIDITY', 'x', 422, 'NO_LIQUIDITY'],
    ['WOULD_TRIGGER_IMMEDIATELY', 'x', 422, 'WOULD_TRIGGER_IMMEDIATELY'],
    ['IDEMPOTENCY_KEY_CONFLICT', 'x', 409, 'idempotency_key_conflict'],
    ['NOT_IMPLEMENTED', 'x', 501, 'not_implemented'],
    ['UNAVAILABLE', 'x', 503, 'unavailable'],
    ['MARKET_NOT_RESOLVED', 'x', 409, 'MARKET_NOT_RESOLVED'],
    ['NOTHING_TO_REDEEM', 'x', 422, 'NOTHING_TO_REDEEM'],
    ['SHARES_RESERVED', 'x', 422, 'SHARES_RESERVED'],
  ] as const)('%s → %i %s', (code, message, status, error) => {
    expect(httpOf(new DomainError(code, message))).toEqual({ status, error, message, headers: {} });
  });

  it("VENUE_REJECTED answers 422 with the venue's code; retryAfterSec becomes Retry-After", () => {
    expect(
      httpOf(new DomainError('VENUE_REJECTED', 'price off the tick', { venueError: 'invalid_request' })),
    ).toMatchObject({ status: 422, error: 'invalid_request' });
    expect(httpOf(errors.unavailable('journal failing', 1))).toEqual({
      status: 503,
      error: 'unavailable',
      message: 'journal failing',
      headers: { 'Retry-After': '1' },
    });
    expect(httpOf(new DomainError('IDEMPOTENCY_KEY_IN_USE', 'x', { retryAfterSec: 1 })).headers).toEqual({
      'Retry-After': '1',
    });
  });

  it('anything else is not an answer (the middleware makes it a 500)', () => {
    expect(toApiError(new Error('boom'))).toBeNull();
    expect(toApiError(undefined)).toBeNull();
  });
});
