import { errors } from '../engine/errors.js';
import type { Services } from '../engine/service.js';

/**
 * 503 `unavailable` with `Retry-After: 1` (failures are visible, never a fake success)
 * while the store cannot make writes durable (`Store.writeFailure`): a mutating request could not
 * be acknowledged truthfully, so it is refused before anything changes. Reads keep working.
 * @throws {DomainError} `UNAVAILABLE` (503, Retry-After 1 s) when the store is not writable.
 */
export function requireWritable(services: Services): void {
  const failure = services.store.writeFailure();
  if (failure)
    throw unavailable(`the store cannot record changes right now (${failure}); nothing was changed, retry later`);
}

/**
 * 503 `unavailable` with `Retry-After: 1` while the venue cannot make its operations durable (a
 * journal write is failing): a command accepted now could not be confirmed. Reads keep working.
 * @throws {DomainError} `UNAVAILABLE` (503, Retry-After 1 s) when the venue's journal is failing.
 */
export function requireVenue(services: Services): void {
  const h = services.venue.health;
  if (!h.ok)
    throw unavailable(
      `the venue cannot record operations right now ` +
        `(${h.error ?? 'store unavailable'}); nothing was changed, retry later`,
    );
}

function unavailable(message: string) {
  return errors.unavailable(message, 1);
}
