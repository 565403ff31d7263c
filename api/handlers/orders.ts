import { OPEN_STATUSES } from '../../machines/order.js';
import { DuplicateKeyError, errors } from '../../engine/errors.js';
import type { Services } from '../../engine/service.js';
import { COMBO_KIND } from '../../engine/combos/service.js';
import { timeOrderedSeed } from '../../engine/idempotency.js';
import { ActorRepository, type ActorRecord } from '../../engine/store/actors.js';
import { bracketsView, strategyResponse } from '../../engine/strategies/views.js';
import type { StrategyContext } from '../../machines/strategy-kit.js';
import type { OrderRequest } from '../../schemas/orders.js';
import { requireVenue } from '../availability.js';
import { orderIdParam } from './order-batch.js';
import type { Handler, HandlerContext, HandlerResult } from '../context.js';
import { bearerToken } from '../auth.js';
import { page, pageQuery, recordsPage } from '../paging.js';

const REPLAYED = { 'Idempotent-Replayed': 'true' };

/** The ids of what a request creates: {@link seededIds}. */
interface SeededIds {
  /** Its order, and the entry of a buy with brackets. */
  orderId: string;
  /** The BRACKET record of a buy with brackets (`stg_` and the order id's seed: engine/strategies/requests.ts). */
  bracketId: string;
  /** Its strategy: time-ordered (the first attempt's time), so the actors' id index grows at its end. */
  recordId: string;
}

/**
 * The ids of what a request with this `resourceSeed` ({@link IdempotencyService.resourceSeed}) and
 * first attempt's time (`HandlerContext.firstAttemptAtMs`) creates: the same for every retry.
 */
function seededIds(seed: string, firstAttemptAtMs: number | undefined): SeededIds {
  const strategySeed = firstAttemptAtMs === undefined ? seed : timeOrderedSeed(firstAttemptAtMs, seed);
  return { orderId: `ord_${seed}`, bracketId: `stg_${seed}`, recordId: `stg_${strategySeed}` };
}

/**
 * What an earlier attempt of this request created ({@link seededIds}), answered as that attempt
 * would have been, with `Idempotent-Replayed: true`: the process died after creating it and before
 * recording the response, so the retry finds it instead of placing it again. Null when there is none.
 */
async function interruptedAttempt(
  services: Services,
  userId: string,
  seeded: SeededIds,
): Promise<HandlerResult | null> {
  const get = async (id: string) => services.host.recordOf(id) ?? (await services.actors.get(id));
  // the candidates in one store read (every order request asks; almost always none exists)
  const ids = [seeded.orderId, seeded.bracketId, seeded.recordId];
  const inMemory = ids.map((id) => services.host.recordOf(id));
  const stored = inMemory.some((r) => r !== null) ? null : await services.actors.getMany(ids);
  const order = inMemory[0] ?? stored?.get(ids[0]!) ?? null;
  if (order && order.ownerUserId === userId) {
    const view = order.view as Record<string, unknown>;
    const bracketId = typeof view.bracket_id === 'string' ? view.bracket_id : null;
    const bracket = bracketId ? await get(bracketId) : null;
    if (!bracket) return { status: 200, body: view, headers: REPLAYED };
    const c = services.host.storedSnapshot(bracket).context as StrategyContext;
    const warnings = [...((view.warnings as string[] | undefined) ?? []), ...c.warnings];
    return {
      status: 200,
      body: { ...view, brackets: bracketsView(c, bracket._id), ...(warnings.length ? { warnings } : {}) },
      headers: REPLAYED,
    };
  }
  const found = (i: number) => inMemory[i] ?? stored?.get(ids[i]!) ?? null;
  const record = found(1) ?? found(2) ?? (stored ? null : ((await get(ids[1]!)) ?? (await get(ids[2]!))));
  if (record && record.ownerUserId === userId) {
    if ((record.view as { type?: string }).type === 'BRACKET') {
      // the bracket was created, the process died before its entry was placed: nothing traded,
      // and start-up reconciliation ended the bracket
      throw errors.conflict(
        'an earlier attempt of this request was interrupted before its entry order was ' +
          'placed: nothing was placed; send it again with a new Idempotency-Key',
      );
    }
    return { status: 200, body: strategyResponse(record), headers: REPLAYED };
  }
  return null;
}

/** POST /v2/trade/order (spec 4.1): LIMIT and MARKET trade on the venue; other types are not built yet (501). */
export const placeOrder: Handler = async (ctx) => {
  const { req, services, user, resourceSeed, firstAttemptAtMs } = ctx;
  const body = req.body as OrderRequest;
  const seeded = resourceSeed ? seededIds(resourceSeed, firstAttemptAtMs) : null;
  if (seeded && isBareOrder(body)) {
    // An earlier attempt of this request (same ids) is looked for only when this one fails: before
    // this attempt creates its order (a check refused what the earlier one changed), or at the
    // creation (the id is taken). Almost every request places a new order and reads nothing.
    let creating = false;
    try {
      return await placeNew(ctx, body, seeded, () => {
        creating = true;
        return Promise.resolve();
      });
    } catch (err) {
      if (creating && !(err instanceof DuplicateKeyError)) throw err;
      const earlier = await interruptedAttempt(services, user!._id, seeded);
      if (earlier) return earlier;
      throw err;
    }
  }
  if (seeded) {
    const earlier = await interruptedAttempt(services, user!._id, seeded);
    if (earlier) return earlier;
  }
  return placeNew(ctx, body, seeded);
};

/** A LIMIT, MARKET or TAKE_PROFIT order without brackets: one order actor, created by {@link placeNew}'s `place`. */
function isBareOrder(body: OrderRequest): boolean {
  return (
    (body.type === 'LIMIT' || body.type === 'MARKET' || body.type === 'TAKE_PROFIT') &&
    body.take_profit === undefined &&
    body.stop_loss === undefined
  );
}

/**
 * Places the order or starts the strategy of a request.
 * @param seeded - the ids of what it creates ({@link seededIds}), when it has a `resourceSeed`.
 * @param beforeCreate - for an order without brackets: runs once its checks passed, right before its creation.
 */
async function placeNew(
  { services, user, answerFrom }: HandlerContext,
  body: OrderRequest,
  seeded: SeededIds | null,
  beforeCreate?: () => Promise<void>,
): Promise<HandlerResult> {
  requireVenue(services);
  const ids: Partial<SeededIds> = seeded ?? {};
  if (body.type === 'LIMIT' || body.type === 'MARKET') {
    const input = services.orders.check(user!._id, body, body.type, ids.orderId);
    const bracket = services.strategies.checkBrackets(user!._id, body, input);
    if (bracket) {
      // spec 2.2 bracket rules: placed after the entry, best-effort; a 200 may carry a failed leg
      const r = await services.strategies.placeWithBrackets(user!.partnerId, input, bracket);
      const view = r.entry.view as Record<string, unknown>;
      const warnings = [...((view.warnings as string[] | undefined) ?? []), ...r.warnings];
      return { status: 200, body: { ...view, brackets: r.brackets, ...(warnings.length ? { warnings } : {}) } };
    }
    if (ids.orderId) answerFrom?.(ids.orderId, orderAnswer, ORDER_ANSWER);
    const rec = await services.orders.place(user!.partnerId, input, {}, beforeCreate);
    return orderAnswer(rec);
  }
  if (body.type === 'TAKE_PROFIT') {
    // spec part 3: a real CLOB sell placed at once, on open orders with is_take_profit: true
    const input = services.orders.check(user!._id, { ...body, type: 'LIMIT' }, 'TAKE_PROFIT', ids.orderId);
    if (ids.orderId) answerFrom?.(ids.orderId, orderAnswer, ORDER_ANSWER);
    const rec = await services.orders.place(user!.partnerId, input, { isTakeProfit: true }, beforeCreate);
    return orderAnswer(rec);
  }
  const input = { ...services.strategies.check(user!._id, body), ...(ids.recordId ? { recordId: ids.recordId } : {}) };
  if (ids.recordId) answerFrom?.(ids.recordId, strategyAnswer);
  const rec = await services.strategies.start(user!.partnerId, input);
  return strategyAnswer(rec);
}

/**
 * An order's answer is stored with its steps after its creation: the venue's answer always follows
 * the creation before the request is answered, and a crash between the two leaves the order,
 * which the retry finds by its id ({@link interruptedAttempt}) and answers with.
 */
const ORDER_ANSWER = { afterCreation: true };

/** The answer of an order placed (without brackets): its view. */
const orderAnswer = (rec: ActorRecord): HandlerResult => ({ status: 200, body: rec.view });

/** The answer of a strategy started. */
const strategyAnswer = (rec: ActorRecord): HandlerResult => ({ status: 200, body: strategyResponse(rec) });

/** GET /v2/trade/strategies: the user's managed strategies, newest first; filter by status and type. */
export const listStrategies: Handler = async ({ req, services, user }) => {
  const p = pageQuery(req, 500);
  const filter: Record<string, unknown> = { kind: 'strategy' };
  if (req.query.status !== undefined) filter.status = String(req.query.status);
  if (req.query.type !== undefined) filter.type = String(req.query.type);
  return recordsPage(
    'strategies',
    await services.actors.findOwned(user!._id, filter, { skip: p.offset, limit: p.limit }),
    p,
  );
};

/** DELETE /v2/trade/strategies/{record_id}: cancels while untriggered; 409 once a stop executes. */
export const cancelStrategy: Handler = async ({ req, services, user }) => {
  requireVenue(services);
  const rec = await services.strategies.cancel(user!._id, String(req.params.record_id));
  return { status: 200, body: rec.view };
};

/**
 * GET /v2/trade/orders/open (spec 4.6): the user's working orders, newest first, offset/limit; only
 * those on outcome token `token_id` when given (the reference product's filter).
 */
export const openOrders: Handler = async ({ req, services, user }) => {
  const p = pageQuery(req, 500);
  const tokenId = (req.query as { token_id?: string }).token_id;
  const open = { kind: 'order', status: { $in: OPEN_STATUSES } };
  if (tokenId === undefined)
    return recordsPage(
      'orders',
      await services.actors.findOwned(user!._id, open, { skip: p.offset, limit: p.limit }),
      p,
    );
  // the token is not a stored field of the order's record: the user's working orders (one index range)
  // are matched on their views, then paged
  const views = (await services.orders.openOrders(user!._id, { tokenId })).map((r) => r.view);
  return { status: 200, body: page('orders', views.slice(p.offset, p.offset + p.limit), views.length, p) };
};

/** DELETE /v2/trade/orders/{order_id}: cancels one order; 404 when not the user's, 409 when done. */
export const cancelOrder: Handler = async ({ req, services, user }) => {
  requireVenue(services);
  const rec = await services.orders.cancel(user!._id, orderIdParam(req));
  return { status: 200, body: rec.view };
};

/**
 * The position an activity cursor continues after: `ActorRepository.positionOf` the last row it was
 * issued with, which starts with its owner's id, so a cursor names its user.
 * @throws {DomainError} `INVALID_REQUEST` (400) for a cursor this service did not issue to this API
 *   key, or one issued to another user (it would otherwise page nothing and answer an empty 200).
 */
function activityCursor(services: Services, cursor: string, userId: string, apiToken: string): string {
  const k = services.cursors.open<{ k: unknown }>(cursor, apiToken).k;
  if (typeof k !== 'string') throw errors.badRequest('cursor is not valid: send back next_cursor exactly as received');
  if (!k.startsWith(`${userId}|`))
    throw errors.badRequest(
      "cursor belongs to another user's activity: send back the next_cursor this user's previous page returned",
    );
  return k;
}

/**
 * GET /v2/trade/activity (spec 4.6, 4.7): the user's orders, strategies, wallet operations (SPLIT,
 * MERGE, REDEEM) and withdrawals (WITHDRAWAL), newest first, with an
 * opaque cursor (keyset paging: stable while new activity arrives).
 */
export const activity: Handler = async ({ req, services, user }) => {
  const limit = req.query.limit === undefined ? 50 : Number(req.query.limit);
  const before =
    typeof req.query.cursor === 'string'
      ? activityCursor(services, req.query.cursor, user!._id, bearerToken(req) ?? '')
      : undefined;
  const { records } = await services.actors.findOwned(
    user!._id,
    { kind: { $in: ['order', 'strategy', 'wallet', 'withdrawal', COMBO_KIND] } },
    { limit: limit + 1, ...(before !== undefined ? { before } : {}) },
  );
  const items = records.slice(0, limit);
  const more = records.length > limit;
  return {
    status: 200,
    body: {
      activity: items.map((r) => {
        const v = r.view as Record<string, unknown>;
        const row: Record<string, unknown> = {
          kind: r.kind,
          id: r._id,
          type: v.type,
          status: r.status,
          side: v.side ?? null,
          symbol: r.kind === 'withdrawal' ? v.token : (v.symbol ?? v.condition_id),
          price: v.price ?? null,
          size: v.size ?? null,
          filled_size: v.filled_size ?? null,
          created_at: r.createdAtMs,
          updated_at: r.updatedAtMs,
        };
        // wallet operations and withdrawals: the amount (a redeem's
        // payout) and the transaction hash; orders: why a cancel happened
        if (r.kind === 'wallet' || r.kind === 'withdrawal')
          Object.assign(row, {
            amount: v.payout_usd ?? v.amount ?? null,
            transaction_hash: v.transaction_hash ?? null,
          });
        // combos: the shares at the entry price, the cost (the payout once redeemed), the last transaction
        if (r.kind === COMBO_KIND)
          Object.assign(row, {
            side: 'buy',
            symbol: v.combo_position_id,
            price: v.entry_price,
            size: v.taker_shares,
            amount: v.payout_usd ?? v.cost_usd,
            transaction_hash: v.redeem_transaction_hash ?? v.transaction_hash,
          });
        if (r.kind === 'order')
          Object.assign(row, {
            cancel_code: v.cancel_code ?? null,
            cancel_reason: v.cancel_reason ?? null,
            record_id: v.record_id ?? null,
          });
        return row;
      }),
      next_cursor: more
        ? services.cursors.seal({ k: ActorRepository.positionOf(items.at(-1)!) }, bearerToken(req) ?? '')
        : null,
    },
  };
};
