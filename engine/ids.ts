import { randomUUID } from 'node:crypto';

/**
 * A UUID version 7 (RFC 9562): the 48-bit Unix time `ms` first, then 74 random bits. Ids made in
 * time order sort in time order, so a store's index on them grows at its end: inserting one
 * changes the index's last pages instead of a random page each (what a random UUID's index costs
 * in writes, commits and checkpoints once it outgrows memory).
 * @param ms - epoch milliseconds (the caller's clock), 0 … 2^48 − 1.
 * @returns the lower-case hex form `tttttttt-tttt-7rrr-vrrr-rrrrrrrrrrrr`.
 */
export function uuidV7(ms: number): string {
  const t = Math.trunc(ms).toString(16).padStart(12, '0');
  // a v4 UUID's random bits and variant; its version digit (position 14) replaced by 7
  return `${t.slice(0, 8)}-${t.slice(8, 12)}-7${randomUUID().slice(15)}`;
}
