import type { Request } from 'express';
import { errors } from '../engine/errors.js';

/** An offset/limit page request (spec 2.9, 4.7). */
export interface PageRequest {
  limit: number;
  offset: number;
}

/**
 * Query parameter `name` as a non-negative integer; undefined when absent.
 * @throws {DomainError} `INVALID_REQUEST` (400) when it is not one.
 */
export function intParam(req: Request, name: string): number | undefined {
  const raw = req.query[name] as unknown;
  if (raw === undefined) return undefined;
  if (typeof raw === 'number' && Number.isInteger(raw) && raw >= 0) return raw; // coerced by the route's query schema
  if (typeof raw !== 'string' || !/^\d{1,9}$/.test(raw))
    throw errors.badRequest(`${name} must be a non-negative integer`);
  return Number(raw);
}

/**
 * Reads `limit` and `offset` from the query.
 * @param max - the endpoint's maximum `limit` (spec part 8); above it → 400.
 * @param defaultLimit - used when `limit` is absent.
 * @throws {DomainError} `INVALID_REQUEST` (400) for a malformed value, `limit` 0 or above `max`.
 */
export function pageQuery(req: Request, max: number, defaultLimit = Math.min(100, max)): PageRequest {
  const limit = intParam(req, 'limit') ?? defaultLimit;
  const offset = intParam(req, 'offset') ?? 0;
  if (limit < 1) throw errors.badRequest('limit must be at least 1');
  if (limit > max) throw errors.badRequest(`limit must be at most ${max} on this endpoint; received ${limit}`);
  return { limit, offset };
}

/**
 * The offset/limit envelope: the list under `key` plus `count` (its length: the rows on this
 * page), `total`, `limit`, `offset`, `has_more`.
 */
export function page<T>(key: string, items: T[], total: number, p: PageRequest): Record<string, unknown> {
  return {
    [key]: items,
    count: items.length,
    total,
    limit: p.limit,
    offset: p.offset,
    has_more: p.offset + items.length < total,
  };
}

/**
 * A 200 answer of actor records' views (`{records, total}` as the store pages them) in the
 * offset/limit envelope of {@link page}, under `key`.
 */
export function recordsPage(
  key: string,
  found: { records: readonly { view: Record<string, unknown> }[]; total: number },
  p: PageRequest,
): { status: 200; body: Record<string, unknown> } {
  return {
    status: 200,
    body: page(
      key,
      found.records.map((r) => r.view),
      found.total,
      p,
    ),
  };
}
