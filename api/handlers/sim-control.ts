import { DomainError, errors } from '../../engine/errors.js';
import { SimVenue, VenueRejection } from '../../engine/venue/sim-venue.js';
import type { Handler } from '../context.js';
import { marketBody } from './market.js';

/**
 * POST /v2/sim/markets/{condition_id}/resolve `{winning_token_id}` — the simulated venue's
 * control: how tests and demos resolve a market. Mounted only with
 * `SIM_CONTROL=on` on a simulated venue (otherwise the path answers 404), master key only. It
 * resolves the market durably (SimVenue.resolveMarket): resting orders canceled (`market
 * resolved`), new orders refused (422 `MARKET_CLOSED`), armed strategies ended CANCELED,
 * positions redeemable. Answers 200 with the market as GET /v2/trade/markets shows it (again 200,
 * unchanged, when it already resolved with that winner); 404 for an unknown market; 400 when the
 * token is not one of the market's; 409 when it already resolved with another winner.
 */
export const resolveMarket: Handler = async ({ req, services }) => {
  const venue = services.venue;
  if (!(venue instanceof SimVenue) || !services.config.simControl) throw errors.notFound('no such endpoint');
  const conditionId = String(req.params.condition_id);
  const winningTokenId = String((req.body as { winning_token_id: string }).winning_token_id);
  try {
    await venue.resolveMarket(conditionId, winningTokenId);
  } catch (err) {
    if (!(err instanceof VenueRejection)) throw err;
    if (err.error === 'not_found') throw errors.notFound(err.message);
    if (err.error === 'conflict') throw errors.conflict(err.message);
    throw new DomainError('INVALID_REQUEST', err.message);
  }
  const m = venue.market(conditionId)!;
  return { status: 200, body: marketBody(venue, m) };
};
