/**
 * What every managed-strategy machine shares (issue 5; spec 2.2.1, 2.2.2, 2.4, part 3): the
 * context shape, the events, the named side effects the engine provides, and the pure helpers
 * (decimal arithmetic, child-order bookkeeping). Each strategy type has its own machine file
 * (stop-loss, trailing-stop, trailing-buy, twap, iceberg, pegged); all are pure.
 *
 * Conventions the engine relies on (like `deadlines`, they are data in context):
 * - `context.deadlines[name]` = epoch ms → a durable timer delivering `timer.fired`;
 * - `context.watch` = the price conditions under which the machine wants a `book.touch` event
 *   (the engine keeps them in an index keyed by token and price);
 * - child orders get deterministic ids `ord_<recordId>_<seq>`, with `seq` persisted before the
 *   order is placed, so a restart never places one twice and never loses one;
 * - state tags: `canceling` = DELETE strategy was accepted and the strategy certainly ends
 *   CANCELED (DELETE answers 200); `cancelingChild` = the working child is being canceled (the
 *   engine's start-up reconciliation cancels it again). State `meta.noCancel` = why DELETE
 *   strategy is refused (409) in that state (`cancelWorking`: DELETE order is the way).
 * - `order.placeFailed` (transient: the engine could not place a child) and `order.refused` (the
 *   venue's verdict, with its error code, e.g. `order crosses book`) are decided per machine.
 */
import { Dec } from '../engine/decimal.js';

/** Best bid and ask of the strategy's token, decimal probabilities (null: that side is empty). */
export interface Touch {
  bid: string | null;
  ask: string | null;
}

/**
 * Price conditions a strategy waits for; the engine sends `book.touch` when one holds:
 * `bidAtOrBelow` (stops), `bidAbove` (a trailing stop's high-water mark), `askBelow` (a trailing
 * buy's low-water mark), `askAtOrAbove` (its entry), `any` (every touch change: iceberg drift,
 * pegging).
 */
export interface Watch {
  bidAtOrBelow?: string;
  bidAbove?: string;
  askBelow?: string;
  askAtOrAbove?: string;
  any?: boolean;
}

/** How a child order is priced: at a fixed limit, or one tick inside the touch capped by the limit (TWAP `passive`). */
export type ChildPricing = { kind: 'limit'; price: string } | { kind: 'passive'; limit: string };

/** A child CLOB order a strategy asks the engine to place (a real LIMIT order on the venue). */
export interface ChildOrder {
  orderId: string;
  side: 'buy' | 'sell';
  pricing: ChildPricing;
  /** Shares. */
  size: string;
  timeInForce: 'GTC' | 'IOC';
  /** Refuse (rather than take liquidity) when the price would cross the book. */
  postOnly: boolean;
  isStopLoss: boolean;
  /** A bracket's take-profit (open orders show `is_take_profit: true`). */
  isTakeProfit?: boolean;
}

/**
 * One leg of a bracket (spec 2.3 `brackets.<leg>`): `status` is WAITING (for the entry to end),
 * ARMED (stop), TRIGGERED (stop fired), the leg's order status once it has an order, FAILED
 * (with `error`) or CANCELED.
 */
export interface BracketLeg {
  /** Decimal probability. */
  price: string;
  /** Shares asked for; null or "0" = every share the entry filled. */
  requestedSize: string | null;
  /** Shares protected, known once the entry ended. */
  size: string | null;
  order_id: string | null;
  id: string | null;
  status: string;
  error: string | null;
}

/** What the strategy knows of one of its child orders. */
export interface ChildState {
  orderId: string;
  status: string;
  /** Shares. */
  filledSize: string;
  /** Dollars. */
  matchedAmount: string;
  final: boolean;
}

export type StrategyType = 'STOP_LOSS' | 'TRAILING_STOP' | 'TRAILING_BUY' | 'TWAP' | 'ICEBERG' | 'PEGGED' | 'BRACKET';

/** Input of a strategy actor, built by the engine from a checked request. Quantities are decimal strings. */
export interface StrategyInput {
  recordId: string;
  userId: string;
  type: StrategyType;
  side: 'buy' | 'sell';
  tokenId: string;
  /** The market's tick and resting minimum (shares). */
  tickSize: string;
  minSize: string;
  /** Armed level (STOP_LOSS), limit (TWAP, ICEBERG), ceiling (TRAILING_BUY); decimal probability. */
  price: string | null;
  /** Shares to trade; null when sized in dollars (TRAILING_BUY, PEGGED). */
  size: string | null;
  /** Dollars (TRAILING_BUY, PEGGED budget, TWAP by notional). */
  quoteAmount: string | null;
  /** The request's `execution` object, echoed on the record. */
  execution: Record<string, unknown>;
  warnings: string[];
  message: string | null;
  clientOrderId: string | null;
  metadata: string | null;
  /** Epoch ms. */
  createdAtMs: number;
  /** Touch when the strategy was accepted. */
  touch: Touch;
  /** Trailing: offset as a percent of the water mark, or absolute (decimal probability). */
  offsetPct?: string | null;
  offsetAbs?: string | null;
  /** TRAILING_STOP high-water mark / TRAILING_BUY low-water mark (seeded by the engine). */
  highWaterMark?: string | null;
  lowWaterMark?: string | null;
  /** TWAP. */
  intervalMs?: number;
  durationMs?: number;
  slicesTotal?: number;
  passive?: boolean;
  /** ICEBERG. */
  clipSize?: string | null;
  tolerancePct?: string | null;
  /** PEGGED. */
  offsetTicks?: number;
  priceFloor?: string | null;
  priceCeiling?: string | null;
  /** BRACKET: the entry order and its legs. */
  entryOrderId?: string;
  legs?: { take_profit?: BracketLeg; stop_loss?: BracketLeg };
}

export interface StrategyContext extends StrategyInput {
  /** Shares filled over every child order. */
  filledSize: string;
  /** Dollars traded over every child order. */
  matchedAmount: string;
  children: ChildState[];
  /** The child order working now, if any. */
  working: string | null;
  /** Number of child orders issued (the next id is `ord_<recordId>_<seq + 1>`). */
  seq: number;
  /** Slices placed (TWAP) / clips placed (ICEBERG). */
  slicesDone: number;
  /** Latest touch seen. */
  lastTouch: Touch;
  /** Current trigger level of a trailing order (decimal probability). */
  triggerPrice: string | null;
  watch: Watch;
  deadlines: Record<string, number>;
  /** Why the strategy ended (message on the record). */
  endReason: string | null;
  /** Price of the working child (PEGGED, ICEBERG), to notice when it must move. */
  workingPrice: string | null;
  /** Size of the child order being placed (shares). */
  pendingSize: string | null;
  /** The child order being placed: kept so that start-up reconciliation can place it again if the process died first. */
  placing: ChildOrder | null;
  /** BRACKET: shares the entry filled. */
  entryFilled?: string;
  /**
   * Child orders that could not be placed (`order.placeFailed`): consecutive ones for the
   * machines that retry (ICEBERG, PEGGED, the stops), every one for TWAP (slices lost). Absent
   * in snapshots written before it existed (= 0).
   */
  placeFailures?: number;
}

export type StrategyEvent =
  | { type: 'book.touch'; bid: string | null; ask: string | null }
  | { type: 'order.updated'; orderId: string; status: string; filledSize: string; matchedAmount: string; final: boolean }
  | { type: 'order.refused'; orderId: string; error: string; reason: string }
  /**
   * The engine could not place child order `orderId` (a store write failed, …), or found it
   * missing when asked to cancel it (`error: 'not_placed'`): the order does not exist and filled
   * nothing. A transient failure, unlike `order.refused` (the venue's verdict). `atMs` = when the
   * engine gave up on it (machines arm retry timers from it).
   */
  | { type: 'order.placeFailed'; orderId: string; error: string; reason: string; atMs: number }
  | { type: 'timer.fired'; name: string; atMs: number }
  | { type: 'strategy.cancel' };

/** Machine definition version of every strategy machine, stored with each snapshot. */
export const STRATEGY_MACHINE_VERSION = 1;

export const ZERO = '0';
export const d = (x: string) => new Dec(x);
/** Shares are traded in hundredths: round down. */
export const floorShares = (x: Dec) => x.toDecimalPlaces(2, Dec.ROUND_DOWN);
/** Price rounded down / up to the tick. */
export const floorTick = (x: Dec, tick: string) => x.div(tick).floor().times(tick);
export const ceilTick = (x: Dec, tick: string) => x.div(tick).ceil().times(tick);

/** The context every strategy starts from. */
export function baseContext(input: StrategyInput): StrategyContext {
  return {
    ...input,
    filledSize: ZERO,
    matchedAmount: ZERO,
    children: [],
    working: null,
    seq: 0,
    slicesDone: 0,
    lastTouch: input.touch,
    triggerPrice: null,
    watch: {},
    deadlines: {},
    endReason: null,
    workingPrice: null,
    pendingSize: null,
    placing: null,
  };
}

/** Id of the next child order. */
export function nextChildId(c: StrategyContext): string {
  return `ord_${c.recordId}_${c.seq + 1}`;
}

/** Shares still to trade (size-based strategies). */
export function remainingShares(c: StrategyContext): Dec {
  return c.size === null ? new Dec(0) : Dec.max(0, d(c.size).minus(c.filledSize));
}

/** Applies a child-order update: replaces that child's state and recomputes the totals. */
export function applyChildUpdate(c: StrategyContext, e: Extract<StrategyEvent, { type: 'order.updated' }>): Partial<StrategyContext> {
  const state: ChildState = { orderId: e.orderId, status: e.status, filledSize: e.filledSize, matchedAmount: e.matchedAmount, final: e.final };
  const children = c.children.some((x) => x.orderId === e.orderId) ? c.children.map((x) => (x.orderId === e.orderId ? state : x)) : [...c.children, state];
  let filled = new Dec(0);
  let matched = new Dec(0);
  for (const x of children) {
    filled = filled.plus(x.filledSize);
    matched = matched.plus(x.matchedAmount);
  }
  return {
    children,
    filledSize: filled.toFixed(),
    matchedAmount: matched.toFixed(),
    working: e.final && c.working === e.orderId ? null : c.working,
  };
}

/** Patch of `order.refused`: the strategy ends with the venue's reason. */
export function refusalPatch(e: StrategyEvent): Partial<StrategyContext> {
  return e.type === 'order.refused' ? { endReason: `order refused: ${e.error}${e.reason ? ` — ${e.reason}` : ''}`, working: null } : {};
}

/** The venue's error code of a post-only order that would have taken liquidity (`venue.rejected` `error`). */
export const CROSSES_BOOK = 'order crosses book';

/** A placement that failed (`order.placeFailed`) is retried this many times; the next failure in a row ends the strategy FAILED. */
export const PLACE_RETRIES = 2;

/** Delay before retry `n` (1, 2, …) of a failed placement: 1 s, 2 s, 4 s, … */
export function placeRetryDelayMs(n: number): number {
  return 1000 * 2 ** Math.max(0, n - 1);
}

/** `order.refused` of the working child. */
export function isWorkingRefused(c: StrategyContext, e: StrategyEvent): boolean {
  return e.type === 'order.refused' && e.orderId === c.working;
}

/** `order.refused` of the working child because it would have crossed the book (post-only). */
export function isWorkingCrossed(c: StrategyContext, e: StrategyEvent): boolean {
  return isWorkingRefused(c, e) && e.type === 'order.refused' && e.error === CROSSES_BOOK;
}

/** The working child could not be placed (or is missing): it does not exist and filled nothing. */
export function isWorkingPlaceFailed(c: StrategyContext, e: StrategyEvent): boolean {
  return e.type === 'order.placeFailed' && e.orderId === c.working;
}

/** What a failed placement says (`<error> — <reason>`). */
export function placeFailureText(e: StrategyEvent): string {
  return e.type === 'order.placeFailed' ? `${e.error}${e.reason ? ` — ${e.reason}` : ''}` : 'not placed';
}

/** Another failed placement would exceed {@link PLACE_RETRIES}. */
export function retriesExhausted(c: StrategyContext): boolean {
  return (c.placeFailures ?? 0) >= PLACE_RETRIES;
}

/** Patch of `order.placeFailed` of the working child: no child works; one more failure counted. */
export function placeFailedPatch(c: StrategyContext): Partial<StrategyContext> {
  return { working: null, workingPrice: null, pendingSize: null, placing: null, placeFailures: (c.placeFailures ?? 0) + 1 };
}

/**
 * Patch of `order.placeFailed` that will be retried: the failure counted and noted in `warnings`,
 * the retry timer (`deadlines.retry`) armed after {@link placeRetryDelayMs}.
 */
export function placeRetryPatch(c: StrategyContext, e: StrategyEvent, what: string): Partial<StrategyContext> {
  const patch = placeFailedPatch(c);
  const n = patch.placeFailures!;
  const atMs = e.type === 'order.placeFailed' ? e.atMs : c.createdAtMs;
  return {
    ...patch,
    deadlines: { ...c.deadlines, retry: atMs + placeRetryDelayMs(n) },
    warnings: [...c.warnings, `${what} could not be placed (${placeFailureText(e)}): retry ${n} of ${PLACE_RETRIES}`],
  };
}

/** Patch of `order.placeFailed` that ends the strategy: the reason goes to `message`. */
export function placeFailedEndPatch(c: StrategyContext, e: StrategyEvent, what: string): Partial<StrategyContext> {
  const n = (c.placeFailures ?? 0) + 1;
  return { ...placeFailedPatch(c), watch: {}, deadlines: {}, endReason: `${what} could not be placed (${n} attempt${n === 1 ? '' : 's'}): ${placeFailureText(e)}` };
}

/** The update is about the working child and it is done. */
export function isWorkingChildDone(c: StrategyContext, e: StrategyEvent): boolean {
  return e.type === 'order.updated' && e.final && e.orderId === c.working;
}

/** A current (not stale, not duplicate) firing of timer `name`. */
export function isCurrentTimer(c: StrategyContext, e: StrategyEvent, name: string): boolean {
  return e.type === 'timer.fired' && e.name === name && c.deadlines[name] === e.atMs;
}

/** REST statuses of strategy records (spec 2.4; see schemas/strategies.ts). */
export type StrategyStatus = 'PENDING' | 'ACTIVE' | 'TRIGGERED' | 'COMPLETED' | 'CANCELED' | 'FAILED';
