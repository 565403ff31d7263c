/**
 * Batch cancel, cancel-all and one order by id (issue 16 item 6; spec 4.6: "batch cancel and
 * cancel-all [trade.cancel] — paths and payloads: not shown"). Each cancel goes through the one
 * cancel path, `OrderService.cancel` (what DELETE /v2/trade/orders/{order_id} runs), so the rules
 * of a single cancel hold per order: a strategy's child order (TWAP slice, ICEBERG clip, PEGGED
 * order, a triggered stop's sell, a bracket's take-profit leg) is canceled as DELETE order would,
 * and its strategy reacts as it does to that; an untriggered STOP_LOSS / TRAILING_STOP is a
 * strategy, not an order (DELETE /v2/trade/strategies/{record_id}).
 */
import { errors } from '../../engine/errors.js';
import type { CancelOutcome } from '../../engine/orders.js';
import type { BatchCancelRequest } from '../../schemas/wallet.js';
import { requireVenue } from '../availability.js';
import type { Handler, HandlerResult } from '../context.js';

/** The 200 body of a batch cancel or cancel-all (schemas/wallet.ts BatchCancelResponse). */
function cancelResponse(outcomes: CancelOutcome[]): HandlerResult {
  const counts = { canceled: 0, not_found: 0, already_done: 0 };
  const results = outcomes.map((o) => {
    counts[o.outcome]++;
    return { order_id: o.orderId, outcome: o.outcome, status: o.record?.status ?? null, order: o.record?.view ?? null, ...(o.message !== null ? { message: o.message } : {}) };
  });
  return { status: 200, body: { results, counts } };
}

/**
 * POST /v2/trade/orders/cancel `{order_ids}` [trade.cancel]: cancels up to 100 orders of the
 * bound user, each as DELETE /v2/trade/orders/{order_id} would; 200 with one outcome per distinct
 * id (`canceled`, `not_found`, `already_done`): one id never fails the batch. 400 only for a body
 * that is not the schema (empty, over 100 ids, not strings).
 */
export const cancelBatch: Handler = async ({ req, services, user }) => {
  requireVenue(services);
  const { order_ids } = req.body as BatchCancelRequest;
  return cancelResponse(await services.orders.cancelMany(user!._id, order_ids));
};

/** The query parameters DELETE /v2/trade/orders understands (its filters). */
const CANCEL_ALL_FILTERS: ReadonlySet<string> = new Set(['symbol', 'condition_id']);

/**
 * DELETE /v2/trade/orders [trade.cancel]: cancels every open order of the bound user (the rows of
 * GET /v2/trade/orders/open, strategies' child orders included), narrowed by the query `symbol`
 * (outcome token id) and/or `condition_id` (market). 200 with one outcome per order found
 * (none: empty `results`). Orders placed while it runs are not included.
 * @throws {DomainError} `INVALID_REQUEST` (400) for any other query parameter (a misspelt filter,
 *   `token_id=`, `symbol[]=`): elsewhere unknown parameters are ignored, but here ignoring a filter
 *   the client meant would cancel every order of the user. Nothing is canceled then.
 */
export const cancelAll: Handler = async ({ req, services, user }) => {
  requireVenue(services);
  const unknown = Object.keys(req.query as object).filter((k) => !CANCEL_ALL_FILTERS.has(k));
  if (unknown.length) {
    throw errors.badRequest(`unknown query parameter ${unknown.map((k) => JSON.stringify(k.slice(0, 40))).join(', ')}: cancel-all takes only symbol and condition_id; nothing was canceled`);
  }
  const q = req.query as { symbol?: string; condition_id?: string };
  const ids = await services.orders.openOrderIds(user!._id, {
    ...(q.symbol !== undefined ? { tokenId: String(q.symbol) } : {}),
    ...(q.condition_id !== undefined ? { conditionId: String(q.condition_id) } : {}),
  });
  return cancelResponse(await services.orders.cancelMany(user!._id, ids));
};

/** GET /v2/trade/orders/{order_id} [trade.read]: one order of the bound user in any state; 404 otherwise. */
export const getOrder: Handler = async ({ req, services, user }) => {
  const rec = await services.orders.getOwned(user!._id, String(req.params.order_id));
  return { status: 200, body: rec.view };
};
