import type { FromSchema } from 'json-schema-to-ts';
import type { AnyStateMachine, SnapshotFrom } from 'xstate';
import type { BracketLeg, StrategyContext } from '../../machines/strategy-kit.js';
import { BracketResult, OrderResponse } from '../../schemas/orders.js';
import { StrategyRecord, type STRATEGY_STATUSES } from '../../schemas/strategies.js';
import { dec, Dec, str } from '../decimal.js';
import type { ActorRecord } from '../store/actors.js';

/** One bracket leg as the API shows it (schemas/orders.ts `BracketResult`, spec 2.3 `brackets.<leg>`). */
export type BracketLegView = FromSchema<typeof BracketResult>;
/** `brackets` of an order response and of a BRACKET record: the legs present. */
export interface BracketsView {
  take_profit?: BracketLegView;
  stop_loss?: BracketLegView;
}
/** The strategy record of spec 2.4 (schemas/strategies.ts `StrategyRecord`). */
export type StrategyView = FromSchema<typeof StrategyRecord, { references: [typeof BracketResult] }>;
/** POST /v2/trade/order 200 response of a strategy (schemas/orders.ts `OrderResponse`, spec 2.3). */
export type StrategyResponse = FromSchema<typeof OrderResponse, { references: [typeof BracketResult] }>;
/** A strategy status (schemas/strategies.ts `STRATEGY_STATUSES`). */
export type StrategyStatus = (typeof STRATEGY_STATUSES)[number];

/** A bracket leg as the API shows it (spec 2.3 `brackets.<leg>`); `id` is the BRACKET's record id. */
function legView(l: BracketLeg, recordId: string): BracketLegView {
  return { order_id: l.order_id, id: recordId, status: l.status, error: l.error, price: l.price, size: l.size };
}

/** `brackets` of a BRACKET strategy: both legs as the order response and the record show them. */
export function bracketsView(c: Pick<StrategyContext, 'legs'>, recordId: string): BracketsView {
  const out: BracketsView = {};
  if (c.legs?.take_profit) out.take_profit = legView(c.legs.take_profit, recordId);
  if (c.legs?.stop_loss) out.stop_loss = legView(c.legs.stop_loss, recordId);
  return out;
}

/**
 * The strategy record of spec 2.4 (schemas/strategies.ts), derived from a snapshot: amounts as
 * decimal strings (shares, dollars, probabilities), times in epoch ms; `executed_price` is the
 * average fill (matched dollars / filled shares, 6 decimals), null until the first fill;
 * `remaining_size` the shares not yet filled (null when sized in dollars), as the order response
 * of the same strategy shows it.
 */
export function strategyView(
  s: SnapshotFrom<AnyStateMachine>,
  meta: { id: string; status: string; createdAtMs: number; updatedAtMs: number; revision: number },
): StrategyView {
  const c = s.context as StrategyContext;
  const filled = dec(c.filledSize);
  const executed = filled.gt(0);
  return {
    record_id: meta.id,
    type: c.type,
    status: meta.status as StrategyStatus,
    side: c.side,
    symbol: c.tokenId,
    price: c.price,
    size: c.size,
    quote_amount: c.quoteAmount,
    filled_size: executed ? str(filled) : null,
    remaining_size: c.size === null ? null : str(Dec.max(0, dec(c.size).minus(filled))),
    executed_price: executed ? str(dec(c.matchedAmount).div(filled).toDecimalPlaces(6)) : null,
    matched_amount: c.matchedAmount,
    execution: c.execution,
    high_water_mark: c.highWaterMark ?? null,
    low_water_mark: c.lowWaterMark ?? null,
    trigger_price: c.triggerPrice,
    slices_done: c.type === 'TWAP' || c.type === 'ICEBERG' ? c.slicesDone : null,
    slices_total: c.type === 'TWAP' ? (c.slicesTotal ?? null) : null,
    next_slice_at: c.deadlines.slice ?? null,
    ...(c.type === 'BRACKET' ? { entry_order_id: c.entryOrderId ?? null, brackets: bracketsView(c, meta.id) } : {}),
    order_ids: c.children
      .map((x) => x.orderId)
      .concat(c.working && !c.children.some((x) => x.orderId === c.working) ? [c.working] : []),
    client_order_id: c.clientOrderId,
    metadata: c.metadata,
    message: c.endReason ?? c.message ?? undefined,
    warnings: c.warnings,
    created_at: meta.createdAtMs,
    updated_at: meta.updatedAtMs,
    revision: meta.revision,
  };
}

/**
 * POST /v2/trade/order response of a strategy (spec 2.3): `order_id` null, `record_id`,
 * PENDING/ACTIVE, `remaining_size` (shares; null when sized in dollars), `message`, `warnings`.
 */
export function strategyResponse(rec: ActorRecord): StrategyResponse {
  const v = rec.view as StrategyView;
  return {
    type: v.type,
    order_id: null,
    record_id: rec._id,
    status: rec.status,
    side: v.side,
    symbol: v.symbol,
    // spec 2.4: `filled_size` is null until execution, as the strategy's own record shows it
    price: v.price,
    size: v.size,
    quote_amount: v.quote_amount,
    filled_size: v.filled_size ?? null,
    remaining_size: v.remaining_size ?? null,
    matched_amount: v.matched_amount ?? null,
    builder_code_used: null,
    client_order_id: v.client_order_id,
    metadata: v.metadata,
    created_at: rec.createdAtMs,
    updated_at: rec.updatedAtMs,
    revision: rec.revision,
    ...(v.message ? { message: v.message } : {}),
    ...(v.warnings?.length ? { warnings: v.warnings } : {}),
  };
}
