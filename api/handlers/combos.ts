import { comboIdOf, type ComboQuoteBody, type ComboRedeemBody } from '../../engine/combos/service.js';
import { num } from '../../engine/combos/pricing.js';
import { dec } from '../../engine/decimal.js';
import type { Services } from '../../engine/service.js';
import type { ActorRecord } from '../../engine/store/actors.js';
import { requireVenue } from '../availability.js';
import type { Handler, HandlerResult } from '../context.js';
import { page, pageQuery } from '../paging.js';

/** A decimal string of a view as a JSON number (spec 2.5's number fields). */
const n = (v: unknown) => num(dec(v as string));

/**
 * POST /v2/trade/combo/quote (spec 2.5, 4.2): the maker's quote, with the fee, the independent price
 * (the plain product of the legs' asks) and the margin beside it.
 */
export const comboQuote: Handler = async ({ req, services, user, resourceSeed }) => {
  requireVenue(services);
  const rec = await services.combos.quote(user!.partnerId, user!._id, req.body as ComboQuoteBody, resourceSeed);
  const v = rec.view as Record<string, unknown>;
  const price = dec(v.price_cents as string);
  const independent = dec(v.independent_price_cents as string);
  return {
    status: 200,
    body: {
      combo_order_id: v.combo_order_id,
      quote_id: v.quote_id,
      rfq_id: v.rfq_id,
      price_cents: n(v.price_cents),
      maker_amount_usd: n(v.maker_amount_usd),
      taker_shares: n(v.taker_shares),
      expires_at: v.expires_at,
      side: 'BUY',
      notional_usd: n(v.notional_usd),
      fee_usd: n(v.fee_usd),
      total_cost_usd: n(v.cost_usd),
      independent_price_cents: n(v.independent_price_cents),
      margin_cents: num(price.minus(independent).toDecimalPlaces(4)),
      legs: (v.legs as { position_id: string; question: string | null }[]).map((l) => ({
        position_id: l.position_id,
        question: l.question,
      })),
    },
  };
};

/** The answer of an accepted combo (what a replay of its Idempotency-Key returns too). */
const acceptAnswer =
  (services: Services) =>
  (rec: ActorRecord): HandlerResult => {
    const v = rec.view as Record<string, unknown>;
    const hash = services.combos.contextOf(rec).buyTransactionHash;
    return { status: 200, body: { combo_order_id: v.combo_order_id, status: 'EXECUTED', transaction_hash: hash } };
  };

/** POST /v2/trade/combo/accept (spec 3, 4.2): 200 EXECUTED before `expires_at`, 410 `QUOTE_EXPIRED` after. */
export const comboAccept: Handler = async ({ req, services, user, answerFrom }) => {
  requireVenue(services);
  const body = req.body as { combo_order_id: string; quote_id: string };
  const answer = acceptAnswer(services);
  const rec = await services.combos.accept(user!._id, body, () => answerFrom?.(body.combo_order_id, answer));
  return answer(rec);
};

/** The answer of a redeemed combo: its shares × $1. */
const redeemAnswer =
  (services: Services) =>
  (rec: ActorRecord): HandlerResult => {
    const c = services.combos.contextOf(rec);
    const v = rec.view as Record<string, unknown>;
    return {
      status: 200,
      body: {
        combo_order_id: v.combo_order_id,
        status: 'REDEEMED',
        payout_usd: n(v.payout_usd ?? c.shares),
        transaction_hash: c.redeemTransactionHash,
      },
    };
  };

/** POST /v2/trade/combo/redeem (spec 3, 4.2): a won combo pays its shares × $1 at once. */
export const comboRedeem: Handler = async ({ req, services, user, answerFrom }) => {
  requireVenue(services);
  const body = req.body as ComboRedeemBody;
  const answer = redeemAnswer(services);
  const rec = await services.combos.redeem(user!._id, body, () =>
    answerFrom?.(body.combo_order_id ?? comboIdOf(body.combo_position_id!), answer),
  );
  return answer(rec);
};

/** GET /v2/trade/combo/positions (spec 2.5, 4.2, 4.7): offset/limit, optional status filter. */
export const comboPositions: Handler = async ({ req, services, user }) => {
  const p = pageQuery(req, 500);
  const status = typeof req.query.status === 'string' ? req.query.status : undefined;
  const { positions, total } = await services.combos.positions(user!._id, p, status);
  return { status: 200, body: page('positions', positions, total, p) };
};

/** GET /v2/trade/combo/{combo_order_id}: one combo in any state (the recovery handle after a lost answer). */
export const getCombo: Handler = async ({ req, services, user }) => {
  const rec = await services.combos.get(user!._id, String(req.params.combo_order_id));
  return { status: 200, body: services.combos.withPrices(rec.view as Record<string, unknown>) };
};
