/**
 * Batch cancel, cancel-all and one order by id (spec 4.6: "batch cancel and
 * cancel-all [trade.cancel] — paths and payloads: not shown"). Each cancel goes through the one
 * cancel path, `OrderService.cancel` (what DELETE /v2/trade/orders/{order_id} runs), so the rules
 * of a single cancel hold per order: a strategy's child order (TWAP slice, ICEBERG clip, PEGGED
 * order, a triggered stop's sell, a bracket's take-profit leg) is canceled as DELETE order would,
 * and its strategy reacts as it does to that; an untriggered STOP_LOSS / TRAILING_STOP is a
 * strategy, not an order (DELETE /v2/trade/strategies/{record_id}).
 */
import type { Request } from 'express';
import { DomainError, errors } from '../../engine/errors.js';
import { IdempotencyService } from '../../engine/idempotency.js';
import type { CancelOutcome } from '../../engine/orders.js';
import type { OrderBatchRequest } from '../../schemas/orders.js';
import type { BatchCancelRequest } from '../../schemas/wallet.js';
import { requireVenue } from '../availability.js';
import type { Handler, HandlerResult } from '../context.js';
import { ERROR_MAP } from '../error-map.js';
import { ApiError } from '../errors.js';

/** The action paths under /v2/trade/orders/ that take POST: never an order id. */
const ORDER_ACTIONS: ReadonlySet<string> = new Set(['cancel', 'cancel-batch', 'cancel-all']);

/**
 * The `order_id` path parameter of GET and DELETE /v2/trade/orders/{order_id}.
 * @throws {ApiError} 405 `method_not_allowed` (with `Allow: POST, OPTIONS`) when it names one of
 *   the POST actions (`cancel`, `cancel-batch`, `cancel-all`): `DELETE /v2/trade/orders/cancel-all`
 *   is the wrong method on that action, not a cancel of an order named "cancel-all".
 */
export function orderIdParam(req: Request): string {
  const id = String(req.params.order_id);
  if (ORDER_ACTIONS.has(id))
    throw new ApiError(
      405,
      'method_not_allowed',
      `${req.method} is not allowed on ${req.path}; allowed: POST, OPTIONS`,
      { Allow: 'POST, OPTIONS' },
    );
  return id;
}

/**
 * The 200 body of a batch cancel or cancel-all (schemas/wallet.ts BatchCancelResponse): the
 * reference's `cancelled` (ids), `not_cancelled` (`{order_id, reason}`) and `count` (how many were
 * canceled), with our `results` and `counts` beside them for the clients that read those.
 */
function cancelResponse(outcomes: CancelOutcome[]): HandlerResult {
  const counts = { canceled: 0, not_found: 0, already_done: 0 };
  const cancelled: string[] = [];
  const notCancelled: { order_id: string; reason: string }[] = [];
  const results = outcomes.map((o) => {
    counts[o.outcome]++;
    if (o.outcome === 'canceled') cancelled.push(o.orderId);
    else notCancelled.push({ order_id: o.orderId, reason: o.message ?? o.outcome });
    return {
      order_id: o.orderId,
      outcome: o.outcome,
      status: o.record?.status ?? null,
      order: o.record?.view ?? null,
      ...(o.message !== null ? { message: o.message } : {}),
    };
  });
  return { status: 200, body: { cancelled, not_cancelled: notCancelled, count: cancelled.length, results, counts } };
}

/**
 * POST /v2/trade/orders/cancel-batch and POST /v2/trade/orders/cancel `{order_ids}` [trade.cancel]: cancels up to 100
 * orders of the bound user, each as DELETE /v2/trade/orders/{order_id} would; 200 with one outcome per distinct
 * id (`canceled`, `not_found`, `already_done`): one id never fails the batch. 400 only for a body
 * that is not the schema (empty, over 100 ids, not strings).
 */
export const cancelBatch: Handler = async ({ req, services, user }) => {
  requireVenue(services);
  const { order_ids } = req.body as BatchCancelRequest;
  return cancelResponse(await services.orders.cancelMany(user!._id, order_ids));
};

/**
 * POST /v2/trade/orders/cancel-all and DELETE /v2/trade/orders [trade.cancel]: cancels every open order of the bound
 * user (the rows of GET /v2/trade/orders/open, strategies' child orders included), narrowed by the query `symbol`
 * (outcome token id) and/or `condition_id` (market). 200 with one outcome per order found
 * (none: empty `results`). Orders placed while it runs are not included.
 * Any other query parameter (a misspelt filter, `token_id=`, `symbol[]=`) is refused by the route's
 * query validation (api/validation.ts) before this runs: ignoring a filter the client meant would
 * cancel every order of the user.
 * @throws {DomainError} `INVALID_REQUEST` (400) for a body other than none or `{}` (filters sent in a
 *   body would be ignored the same way). Nothing is canceled then.
 */
export const cancelAll: Handler = async ({ req, services, user }) => {
  requireVenue(services);
  const body = req.body as unknown;
  if (
    body !== undefined &&
    (body === null || typeof body !== 'object' || Array.isArray(body) || Object.keys(body).length > 0)
  ) {
    throw errors.badRequest(
      'cancel-all takes no body: send its filters (symbol, condition_id) as query parameters; nothing was canceled',
    );
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
  const rec = await services.orders.getOwned(user!._id, orderIdParam(req));
  return { status: 200, body: rec.view };
};

/**
 * A refusal of rung `i` of a ladder, its message prefixed by `rungs[i]: `. The codes whose `error`
 * is the message itself (the cents message of spec 2.1, which names the price it received) keep
 * their message as it is.
 */
function rungError(err: unknown, i: number): unknown {
  if (!(err instanceof DomainError) || ERROR_MAP[err.code].error === 'message') return err;
  return new DomainError(err.code, `rungs[${i}]: ${err.message}`, err.details);
}

/**
 * POST /v2/trade/order/batch `{symbol, side, rungs: [{price, size}]}` [trade.execute]: a ladder of
 * 1 to 20 GTC limit orders of one token and side, all or none. Every rung is checked as a LIMIT
 * order first (a refusal names the rung: nothing placed), prices must differ, and the wallet must
 * cover them all; then they are placed in order ({@link OrderService.placeLadder}): when the venue
 * refuses one, those placed before are canceled and the refusal names the rung. 200 `{orders,
 * count}`, one order per rung. Each rung's order id derives from the request's Idempotency-Key,
 * so a retry after a crash finds the rungs already placed instead of placing them twice.
 */
export const placeBatch: Handler = async ({ req, services, user, resourceSeed }) => {
  requireVenue(services);
  const body = req.body as OrderBatchRequest;
  const userId = user!._id;
  const prices = new Map<string, number>();
  const inputs = body.rungs.map((r, i) => {
    let input;
    try {
      input = services.orders.check(userId, {
        symbol: body.symbol,
        side: body.side,
        type: 'LIMIT',
        price: r.price,
        size: r.size,
      });
    } catch (err) {
      throw rungError(err, i);
    }
    const same = prices.get(input.price!);
    if (same !== undefined)
      throw errors.badRequest(
        `rungs[${i}].price ${input.price} repeats rungs[${same}].price: each rung has a price of its own`,
      );
    prices.set(input.price!, i);
    return resourceSeed
      ? { ...input, orderId: `ord_${IdempotencyService.resourceSeed(resourceSeed, String(i), userId, 'rung')}` }
      : input;
  });
  const recs = await services.orders.placeLadder(user!.partnerId, inputs);
  return { status: 200, body: { orders: recs.map((r) => r.view), count: recs.length } };
};
