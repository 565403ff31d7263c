/**
 * Exponential backoff, the one formula every retry of the engine uses (timer deliveries and
 * arming, venue journal writes, data-file appends, venue reports, deliveries to strategies).
 * @param attempt - 1-based: the delay before the retry that follows failure number `attempt`.
 * @param baseMs - the first delay, ms; each later one doubles.
 * @param capMs - the longest delay, ms (default: none).
 * @returns `min(capMs, baseMs × 2^(attempt − 1))`, in ms.
 */
export function backoffMs(attempt: number, baseMs: number, capMs = Number.POSITIVE_INFINITY): number {
  return Math.min(capMs, baseMs * 2 ** Math.min(Math.max(attempt - 1, 0), 30));
}
