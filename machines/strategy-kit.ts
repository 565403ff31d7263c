/**
 * What every managed-strategy machine shares (spec 2.2.1, 2.2.2, 2.4, part 3): the
 * context shape, the events, the named side effects the engine provides, the pure helpers
 * (decimal arithmetic, child-order bookkeeping, a child's price at the touch), and the shared
 * setup ({@link strategySetup}: the common actions and guards, built for each machine's own
 * context type; {@link retryingChild} for the machines that retry a child not placed). Each
 * strategy type has its own machine file (stop-loss, trailing-stop, trailing-buy — all three from
 * the armed-stop factory in armed-stop.ts —, twap, iceberg, pegged, bracket); all are pure.
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
import { Buffer } from 'node:buffer';
import { and, assign, setup } from 'xstate';
import type { FieldCodec, RecordIds, SnapshotForm } from '../engine/actor-host.js';
import { Dec } from '../engine/decimal.js';
import type { Touch } from '../engine/touch.js';
import type { CancelCode, CancelReason } from '../engine/venue/port.js';

/**
 * Best bid and ask of the strategy's token (engine/touch.ts, pure), decimal probabilities (null: that side is empty).
 */
export type { Touch };

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
  timeInForce: 'GTC' | 'IOC' | 'FOK';
  /**
   * MARKET: a market order (no limit price; `pricing` unused), sized by `size` (a sell) or by
   * `quoteAmount` dollars (a buy). Absent: a LIMIT order.
   */
  type?: 'MARKET';
  quoteAmount?: string;
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
  /**
   * PEGGED `offset_ticks` as sent: a count of 0.001 price steps (spec 2.1), not market ticks; read it
   * as a price through machines/pegged.ts `pegOffsetPrice`. Persisted in snapshots under this name.
   */
  offsetTicks?: number;
  priceFloor?: string | null;
  priceCeiling?: string | null;
  /** BRACKET: the entry order and its legs. */
  entryOrderId?: string;
  legs?: { take_profit?: BracketLeg; stop_loss?: BracketLeg };
}

/**
 * The context of any strategy as the engine reads it from a snapshot (views, reconciliation): every
 * machine's fields, those of one type only optional. The machines themselves use their own context
 * types ({@link StrategyBaseContext} plus what each requires); the persisted field names are these.
 */
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
  /**
   * The child order being placed: kept so that start-up reconciliation can place it again if the process died first.
   */
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
  /**
   * The touch of the strategy's token; `tickSize` (decimal probability) is the market's tick now
   * when the engine knows it (a tick-size change applies at once, so a strategy that
   * prices on the tick, PEGGED, takes it from here). Absent: the tick did not change.
   */
  | { type: 'book.touch'; bid: string | null; ask: string | null; tickSize?: string }
  /**
   * A child order's latest state. `marketResolved`: the order ended CANCELED because its market
   * resolved (the order's cancel code `MARKET_RESOLVED`, turned into this flag by the engine,
   * engine/strategies/child-orders.ts), not by the user or the strategy.
   */
  | {
      type: 'order.updated';
      orderId: string;
      status: string;
      filledSize: string;
      matchedAmount: string;
      final: boolean;
      marketResolved?: boolean;
      /** When the engine read the order's state, epoch ms. */
      atMs?: number;
    }
  | { type: 'order.refused'; orderId: string; error: string; reason: string }
  /**
   * The engine could not place child order `orderId` (a store write failed, …), or found it
   * missing when asked to cancel it (`error: 'not_placed'`): the order does not exist and filled
   * nothing. A transient failure, unlike `order.refused` (the venue's verdict). `atMs` = when the
   * engine gave up on it (machines arm retry timers from it).
   */
  | { type: 'order.placeFailed'; orderId: string; error: string; reason: string; atMs: number }
  | { type: 'timer.fired'; name: string; atMs: number }
  /**
   * DELETE strategy, or (with `reason`) the engine ending the strategy for a cause of the market:
   * `market resolved` when its market resolved (engine/strategies/service.ts
   * `onMarket`). The strategy ends as on DELETE strategy; `reason` becomes its `message`.
   */
  | { type: 'strategy.cancel'; reason?: string };

/** Machine definition version of every strategy machine, stored with each snapshot. */
export const STRATEGY_MACHINE_VERSION = 1;

/**
 * Fields every strategy context has (from {@link StrategyInput} and {@link baseContext}), with the
 * value its stored form leaves them out at (engine/actor-host.ts `SnapshotForm` `defaults`, form
 * {@link STRATEGY_FORM_VERSION}: never change one; a new default needs a new form version).
 */
export const STRATEGY_CONTEXT_DEFAULTS: Readonly<Record<string, unknown>> = Object.freeze(strategyContextDefaults());

/** A new object with every field of {@link STRATEGY_CONTEXT_DEFAULTS} at its default (fresh `[]` / `{}`). */
function strategyContextDefaults(): Record<string, unknown> {
  return {
    price: null,
    size: null,
    quoteAmount: null,
    execution: {},
    warnings: [],
    message: null,
    clientOrderId: null,
    metadata: null,
    filledSize: '0',
    matchedAmount: '0',
    children: [],
    working: null,
    seq: 0,
    slicesDone: 0,
    triggerPrice: null,
    watch: {},
    deadlines: {},
    endReason: null,
    workingPrice: null,
    pendingSize: null,
    placing: null,
  };
}

/** Version of the stored form of strategy snapshots ({@link strategySnapshotForm}); form 1 is still read. */
export const STRATEGY_FORM_VERSION = 2;

/** A derived field of a strategy's stored form: its value from the record's ids and the context. */
export type StrategyDerivation = readonly [
  key: keyof StrategyContext & string,
  derive: (c: StrategyContext, ids: RecordIds) => unknown,
];

/**
 * The touch in a slot of the positional form: `{bid, ask}` as `[bid, ask]`; anything else (null,
 * a touch with other fields) as it is, an array never (it would read back as a touch).
 */
export const TOUCH_CODEC: FieldCodec = Object.freeze({
  key: 'touch',
  encode(v: unknown): unknown {
    if (Array.isArray(v)) return undefined;
    if (v === null || typeof v !== 'object') return v;
    let n = 0;
    for (const k in v) if ((v as Record<string, unknown>)[k] !== undefined) n++;
    const t = v as Touch;
    const side = (x: unknown) => x === null || typeof x === 'string';
    return n === 2 && side(t.bid) && side(t.ask) ? [t.bid, t.ask] : v;
  },
  decode(stored: unknown): unknown {
    return Array.isArray(stored) ? { bid: stored[0] as string | null, ask: stored[1] as string | null } : stored;
  },
});

/**
 * `createdAtMs` in a slot of the positional form: as the milliseconds from it to the record's
 * `createdAtMs` (a few: the request is checked before the record is written), or `[value]` when
 * it is not a safe integer.
 */
export const CREATED_AT_CODEC: FieldCodec = Object.freeze({
  key: 'createdAtMs',
  encode(v: unknown, ids: RecordIds): unknown {
    return typeof v === 'number' && Number.isSafeInteger(v) && Number.isSafeInteger(ids.createdAtMs - v)
      ? ids.createdAtMs - v
      : [v];
  },
  decode(stored: unknown, ids: RecordIds): unknown {
    return Array.isArray(stored) ? stored[0] : ids.createdAtMs - (stored as number);
  },
});

/**
 * `tokenId` in a slot of the positional form: a decimal token id (the venue's: a 256-bit integer,
 * ~77 digits) as the base64url text of its big-endian bytes (43 characters), anything else as
 * `[value]`.
 */
export const TOKEN_ID_CODEC: FieldCodec = Object.freeze({
  key: 'tokenId',
  encode(v: unknown): unknown {
    if (typeof v !== 'string') return [v];
    let packed = tokenIdsPacked.get(v);
    if (packed === undefined) {
      if (!DECIMAL_INTEGER.test(v)) return [v];
      const hex = BigInt(v).toString(16);
      packed = Buffer.from(hex.length % 2 ? `0${hex}` : hex, 'hex').toString('base64url');
      remember(tokenIdsPacked, v, packed);
    }
    return packed;
  },
  decode(stored: unknown): unknown {
    if (Array.isArray(stored)) return stored[0];
    let tokenId = tokenIdsRead.get(stored as string);
    if (tokenId === undefined) {
      tokenId = BigInt(`0x${Buffer.from(stored as string, 'base64url').toString('hex')}`).toString();
      remember(tokenIdsRead, stored as string, tokenId);
    }
    return tokenId;
  },
});

/**
 * The token ids packed and read lately, both ways (a pure memo: many strategies share a token; a
 * read gives every context of a token the same string, and saves the BigInt conversion, ~0.7 µs).
 */
const tokenIdsPacked = new Map<string, string>();
const tokenIdsRead = new Map<string, string>();

/** Remembers `key` → `value` in `memo`, forgetting everything first when it holds 10,000. */
function remember(memo: Map<string, string>, key: string, value: string): void {
  if (memo.size >= 10_000) memo.clear();
  memo.set(key, value);
}

/** A trailing order's level for a mark ({@link rememberedLevel}). */
export type TrailingLevel = (c: Pick<StrategyContext, 'offsetPct' | 'offsetAbs'>, mark: string) => string;

/**
 * `level` remembered by its inputs (a pure memo, at most 10,000 entries): the percent or absolute
 * offset and the mark, decimal strings. A trailing order's level is computed with decimals when it
 * is checked, armed, stored and restored; marks lie on the tick grid and offsets are few, so a
 * million restored trailing stops share a few thousand inputs. A level that throws is not remembered.
 */
export function rememberedLevel(level: TrailingLevel): TrailingLevel {
  const memo = new Map<string, string>();
  return (c, mark) => {
    const key = `${c.offsetPct ?? ''}|${c.offsetAbs ?? ''}|${mark}`;
    let v = memo.get(key);
    if (v === undefined) remember(memo, key, (v = level(c, mark)));
    return v;
  };
}

/** A decimal integer as BigInt writes it (no sign, no leading zero), at most 200 digits. */
const DECIMAL_INTEGER = /^(?:0|[1-9][0-9]{0,199})$/;

/** What one strategy type's stored form (form 2) adds to the shared one ({@link strategySnapshotForm}). */
export interface StrategyFormSpec {
  /**
   * Fields stored by position after `tokenId` (besides `touch`, last):
   * those the type always has and that are rarely at a default.
   */
  fields?: ReadonlyArray<keyof StrategyContext & string>;
  /** Defaults of the type besides {@link STRATEGY_CONTEXT_DEFAULTS} (e.g. `side` for a type that only sells). */
  defaults?: Readonly<Record<string, unknown>>;
  /** Derived fields, in the order they are derived (after `recordId`, `userId`, `lastTouch`). */
  derived?: readonly StrategyDerivation[];
}

/**
 * Defaults of every form-2 strategy context besides
 * {@link STRATEGY_CONTEXT_DEFAULTS}: the usual market's tick and minimum size.
 */
const FORM2_DEFAULTS = Object.freeze({ tickSize: '0.01', minSize: '5' });

/**
 * The stored form of the snapshots of one strategy type (memory per armed strategy),
 * form {@link STRATEGY_FORM_VERSION} (2): positional (engine/actor-host.ts `SnapshotForm`
 * `fields`): `[2, value, side, tokenId, …spec.fields, touch, createdAtMs]` (`side` only when
 * `spec.defaults` has none; the token id in base64url: {@link TOKEN_ID_CODEC}; the touch as
 * `[bid, ask]`; `createdAtMs` as the milliseconds to the record's: {@link CREATED_AT_CODEC}), then an object of the
 * other fields not left out: those at their default ({@link STRATEGY_CONTEXT_DEFAULTS}, `type` at `type`, `tickSize`
 * "0.01", `minSize` "5", `spec.defaults`), `recordId` / `userId` when they are the record's `_id` /
 * `ownerUserId`, `lastTouch` when it is `touch`, the type's `derived` fields when they are what
 * their derivation gives. A STOP_LOSS just armed is stored as
 * `[2,"armed","W--qHGK7NfcMrsElZUneRABlZyG90Wf9PXyOgWLvyNA","0.71","5",["0.76","0.78"],1]` (86
 * characters; 264 in form 1, ~1,000 in XState's).
 *
 * Form 1 (the object form, `{"form":1,"value":…,"context":{…}}`: the defaults of
 * {@link STRATEGY_CONTEXT_DEFAULTS}, `recordId`, `userId`, `lastTouch` and `derivedV1` left
 * out) is still read, as `older`; never change it.
 * @param derivedV1 the type's derivations of form 1 (frozen with it).
 */
export function strategySnapshotForm(
  type: StrategyType,
  derivedV1: readonly StrategyDerivation[] = [],
  spec: StrategyFormSpec = {},
): SnapshotForm {
  const form1 = objectForm(1, type, {}, derivedV1);
  const extra = { ...FORM2_DEFAULTS, ...spec.defaults };
  const fields: Array<string | FieldCodec> = ['side' in extra ? [] : ['side'], spec.fields ?? []].flat();
  fields.splice('side' in extra ? 0 : 1, 0, TOKEN_ID_CODEC);
  fields.push(TOUCH_CODEC, CREATED_AT_CODEC);
  return { ...objectForm(STRATEGY_FORM_VERSION, type, extra, spec.derived ?? []), fields, older: [form1] };
}

/**
 * The part every version of a strategy type's stored form shares: the defaults of
 * {@link STRATEGY_CONTEXT_DEFAULTS} (`type` at `type`) and `extra`, and the derivations of
 * `recordId` / `userId` (the record's ids) and `lastTouch` (`touch`) followed by `derived`.
 */
function objectForm(
  version: number,
  type: StrategyType,
  extra: Readonly<Record<string, unknown>>,
  derived: readonly StrategyDerivation[],
): SnapshotForm {
  const all: StrategyDerivation[] = [
    ['recordId', (_c, ids) => ids._id],
    ['userId', (_c, ids) => ids.ownerUserId],
    ['lastTouch', (c) => (c.touch && typeof c.touch === 'object' ? { bid: c.touch.bid, ask: c.touch.ask } : c.touch)],
    ...derived,
  ];
  return {
    version,
    defaults: Object.freeze({ ...STRATEGY_CONTEXT_DEFAULTS, type, ...extra }),
    derived: all as unknown as SnapshotForm['derived'],
    fresh: () => {
      const c = strategyContextDefaults();
      c.type = type;
      for (const k in extra) c[k] = extra[k];
      return c;
    },
  };
}

/** A decimal string as {@link Dec} writes it (`"0.260"` → `"0.26"`), or undefined for anything else. */
export function canonicalDecimal(x: unknown): string | undefined {
  if (typeof x !== 'string' && typeof x !== 'number') return undefined;
  const text = String(x);
  // already as Dec writes it (no sign, exponent, leading or trailing zero): itself, without a Dec
  return CANONICAL_DECIMAL.test(text) ? text : new Dec(text).toFixed();
}

const CANONICAL_DECIMAL = /^(?:0|[1-9][0-9]*)(?:\.[0-9]*[1-9])?$/;

/** The execution object of a context (spec 2.2.2 `execution`), or an empty one. */
function executionOf(c: StrategyContext): Record<string, unknown> {
  return (c.execution ?? {}) as Record<string, unknown>;
}

/**
 * Form-2 derivations of a trailing type's offsets: what engine/strategies/requests.ts makes of
 * `execution.trailing_offset_pct` (canonical decimal) and `execution.trailing_offset`.
 */
export const TRAILING_OFFSET_DERIVATIONS: readonly StrategyDerivation[] = [
  fromExecution('offsetPct', 'trailing_offset_pct', () => null),
  ['offsetAbs', (c) => executionOf(c).trailing_offset ?? null],
];

/**
 * Form-2 derivation of a decimal field (a mark, a ceiling, an offset) from `execution.<name>`
 * (canonical decimal), or `orElse` without it.
 */
export function fromExecution(
  key: keyof StrategyContext & string,
  name: string,
  orElse: (c: StrategyContext) => unknown = () => undefined,
): StrategyDerivation {
  return [key, (c) => (executionOf(c)[name] !== undefined ? canonicalDecimal(executionOf(c)[name]) : orElse(c))];
}

/**
 * Fields of {@link StrategyContext} that only some machines have (each machine's context type makes its own required).
 */
type MachineSpecificKey =
  | 'offsetPct'
  | 'offsetAbs'
  | 'highWaterMark'
  | 'lowWaterMark'
  | 'intervalMs'
  | 'durationMs'
  | 'slicesTotal'
  | 'passive'
  | 'clipSize'
  | 'tolerancePct'
  | 'offsetTicks'
  | 'priceFloor'
  | 'priceCeiling'
  | 'entryOrderId'
  | 'legs'
  | 'entryFilled';

/**
 * What every strategy machine's context holds: the shared actions and guards below read and
 * write only these fields, never with a narrower type than here. Each machine's context type
 * (`TwapContext`, `StopLossContext`, …) is this plus its own fields, required where its input
 * always carries them (checked once, when the context is built from the input). Persisted
 * snapshots hold the same field names.
 */
export type StrategyBaseContext = Omit<StrategyContext, MachineSpecificKey>;

export const ZERO = '0';
export const d = (x: string) => new Dec(x);
/** Shares are traded in hundredths: round down. */
export const floorShares = (x: Dec) => x.toDecimalPlaces(2, Dec.ROUND_DOWN);
/** Price rounded down / up to the tick. */
export const floorTick = (x: Dec, tick: string) => x.div(tick).floor().times(tick);
export const ceilTick = (x: Dec, tick: string) => x.div(tick).ceil().times(tick);

/**
 * `value`, which the machine's input (or its state) guarantees; throws naming `what` when it is
 * missing (an input the engine built wrong: a bug, not a market condition).
 */
export function need<T>(value: T | null | undefined, what: string): T {
  if (value === null || value === undefined) throw new Error(`strategy machine: ${what} is missing`);
  return value;
}

/** The context every strategy starts from. */
export function baseContext(input: StrategyInput): StrategyContext {
  // Built as one literal plus named stores, not an object spread: a spread of the input here made
  // new hidden classes at every strategy created, in the old generation (memory per
  // armed strategy). The fields come out in the order `{...input, filledSize, …}` gives them:
  // the input's (common ones first, as engine/strategies/requests.ts builds it), then the defaults.
  const c = {
    recordId: input.recordId,
    userId: input.userId,
    type: input.type,
    side: input.side,
    tokenId: input.tokenId,
    tickSize: input.tickSize,
    minSize: input.minSize,
    price: input.price,
    size: input.size,
    quoteAmount: input.quoteAmount,
    execution: input.execution,
    warnings: input.warnings,
    message: input.message,
    clientOrderId: input.clientOrderId,
    metadata: input.metadata,
    createdAtMs: input.createdAtMs,
    touch: input.touch,
  } as StrategyContext;
  for (const k in input)
    if (!(k in c)) (c as unknown as Record<string, unknown>)[k] = (input as unknown as Record<string, unknown>)[k];
  c.filledSize = ZERO;
  c.matchedAmount = ZERO;
  c.children = [];
  c.working = null;
  c.seq = 0;
  c.slicesDone = 0;
  c.lastTouch = input.touch;
  c.triggerPrice = null;
  c.watch = {};
  c.deadlines = {};
  c.endReason = null;
  c.workingPrice = null;
  c.pendingSize = null;
  c.placing = null;
  return c;
}

/** Id of the next child order. */
export function nextChildId(c: StrategyBaseContext): string {
  return `ord_${c.recordId}_${c.seq + 1}`;
}

/** Shares still to trade (size-based strategies). */
export function remainingShares(c: StrategyBaseContext): Dec {
  return c.size === null ? new Dec(0) : Dec.max(0, d(c.size).minus(c.filledSize));
}

/** The touch a `book.touch` event carries. */
export function touchOf(e: Extract<StrategyEvent, { type: 'book.touch' }>): Touch {
  return { bid: e.bid, ask: e.ask };
}

/**
 * Price of a child order at this touch (the engine reads the touch when it places the order): a
 * `limit` child at its price; a `passive` one (a TWAP slice) one tick inside the touch — a buy one
 * tick above the bid, a sell one tick below the ask — never crossing the other side, capped by its
 * limit; an empty book leaves the limit.
 */
export function childOrderPrice(
  c: Pick<StrategyBaseContext, 'tickSize'>,
  order: Pick<ChildOrder, 'side' | 'pricing'>,
  t: Touch,
): Dec {
  if (order.pricing.kind === 'limit') return d(order.pricing.price);
  const limit = d(order.pricing.limit);
  const tick = d(c.tickSize);
  const bid = t.bid === null ? null : d(t.bid);
  const ask = t.ask === null ? null : d(t.ask);
  if (order.side === 'buy') {
    let p = bid ? bid.plus(tick) : ask ? ask.minus(tick) : limit;
    if (ask && p.gte(ask)) p = bid ?? ask.minus(tick);
    return Dec.min(p, limit);
  }
  let p = ask ? ask.minus(tick) : bid ? bid.plus(tick) : limit;
  if (bid && p.lte(bid)) p = ask ?? bid.plus(tick);
  return Dec.max(p, limit);
}

/** Applies a child-order update: replaces that child's state and recomputes the totals. */
export function applyChildUpdate(
  c: StrategyBaseContext,
  e: Extract<StrategyEvent, { type: 'order.updated' }>,
): BasePatch {
  const state: ChildState = {
    orderId: e.orderId,
    status: e.status,
    filledSize: e.filledSize,
    matchedAmount: e.matchedAmount,
    final: e.final,
  };
  const children = c.children.some((x) => x.orderId === e.orderId)
    ? c.children.map((x) => (x.orderId === e.orderId ? state : x))
    : [...c.children, state];
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

/** What the venue said when it refused an order (`<error> — <reason>`). */
export function refusalText(e: Extract<StrategyEvent, { type: 'order.refused' }>): string {
  return `${e.error}${e.reason ? ` — ${e.reason}` : ''}`;
}

/** Patch of `order.refused`: the strategy ends with the venue's reason. */
export function refusalPatch(e: StrategyEvent): BasePatch {
  return e.type === 'order.refused' ? { endReason: `order refused: ${refusalText(e)}`, working: null } : {};
}

/** The venue's error code of a post-only order that would have taken liquidity (`venue.rejected` `error`). */
export const CROSSES_BOOK = 'order crosses book';

/**
 * The refusal code of a child order on a market that closed (resolved) before it got there
 * (`market_closed`, from the venue or engine/risk.ts `refusalCode`), and the message of a
 * strategy that ends CANCELED because of it: the resolution ended it, as it ends the armed ones,
 * rather than a failure.
 */
export const MARKET_CLOSED = 'market_closed';
export const MARKET_RESOLVED_MESSAGE = 'market resolved';

/**
 * A placement that failed (`order.placeFailed`) is retried this
 * many times; the next failure in a row ends the strategy FAILED.
 */
export const PLACE_RETRIES = 2;

/** Delay before retry `n` (1, 2, …) of a failed placement: 1 s, 2 s, 4 s, … */
export function placeRetryDelayMs(n: number): number {
  return 1000 * 2 ** Math.max(0, n - 1);
}

/** `order.refused` of the working child. */
export function isWorkingRefused(c: StrategyBaseContext, e: StrategyEvent): boolean {
  return e.type === 'order.refused' && e.orderId === c.working;
}

/** `order.refused` of the working child because its market closed (resolved) first. */
export function isWorkingMarketClosed(c: StrategyBaseContext, e: StrategyEvent): boolean {
  return isWorkingRefused(c, e) && e.type === 'order.refused' && e.error === MARKET_CLOSED;
}

/** `order.refused` of the working child because it would have crossed the book (post-only). */
export function isWorkingCrossed(c: StrategyBaseContext, e: StrategyEvent): boolean {
  return isWorkingRefused(c, e) && e.type === 'order.refused' && e.error === CROSSES_BOOK;
}

/** The working child could not be placed (or is missing): it does not exist and filled nothing. */
export function isWorkingPlaceFailed(c: StrategyBaseContext, e: StrategyEvent): boolean {
  return e.type === 'order.placeFailed' && e.orderId === c.working;
}

/** What a failed placement says (`<error> — <reason>`). */
export function placeFailureText(e: StrategyEvent): string {
  return e.type === 'order.placeFailed' ? `${e.error}${e.reason ? ` — ${e.reason}` : ''}` : 'not placed';
}

/** Another failed placement would exceed {@link PLACE_RETRIES}. */
export function retriesExhausted(c: StrategyBaseContext): boolean {
  return (c.placeFailures ?? 0) >= PLACE_RETRIES;
}

/** Patch of `order.placeFailed` of the working child: no child works; one more failure counted. */
export function placeFailedPatch(c: StrategyBaseContext): BasePatch & { placeFailures: number } {
  return {
    working: null,
    workingPrice: null,
    pendingSize: null,
    placing: null,
    placeFailures: (c.placeFailures ?? 0) + 1,
  };
}

/**
 * Patch of `order.placeFailed` that will be retried: the failure counted and noted in `warnings`,
 * the retry timer (`deadlines.retry`) armed after {@link placeRetryDelayMs}.
 */
export function placeRetryPatch(c: StrategyBaseContext, e: StrategyEvent, what: string): BasePatch {
  const patch = placeFailedPatch(c);
  const n = patch.placeFailures;
  const atMs = e.type === 'order.placeFailed' ? e.atMs : c.createdAtMs;
  return {
    ...patch,
    deadlines: { ...c.deadlines, retry: atMs + placeRetryDelayMs(n) },
    warnings: [...c.warnings, `${what} could not be placed (${placeFailureText(e)}): retry ${n} of ${PLACE_RETRIES}`],
  };
}

/** Patch of `order.placeFailed` that ends the strategy: the reason goes to `message`. */
export function placeFailedEndPatch(c: StrategyBaseContext, e: StrategyEvent, what: string): BasePatch {
  const n = (c.placeFailures ?? 0) + 1;
  return {
    ...placeFailedPatch(c),
    watch: {},
    deadlines: {},
    endReason: `${what} could not be placed (${n} attempt${n === 1 ? '' : 's'}): ${placeFailureText(e)}`,
  };
}

/** The update is about the working child and it is done. */
export function isWorkingChildDone(c: StrategyBaseContext, e: StrategyEvent): boolean {
  return e.type === 'order.updated' && e.final && e.orderId === c.working;
}

/** The working child ended because its market resolved (canceled by the venue, code `MARKET_RESOLVED`). */
export function isWorkingChildEndedByResolution(c: StrategyBaseContext, e: StrategyEvent): boolean {
  return isWorkingChildDone(c, e) && e.type === 'order.updated' && e.marketResolved === true;
}

/** A current (not stale, not duplicate) firing of timer `name`. */
export function isCurrentTimer(c: StrategyBaseContext, e: StrategyEvent, name: string): boolean {
  return e.type === 'timer.fired' && e.name === name && c.deadlines[name] === e.atMs;
}

// ── the shared setup ──────────────────────

/**
 * Fields the shared actions write. No machine's context type narrows them (each keeps the type
 * it has in {@link StrategyBaseContext}); {@link strategySetup} refuses a context type that does.
 */
type SharedKey =
  | 'children'
  | 'filledSize'
  | 'matchedAmount'
  | 'working'
  | 'workingPrice'
  | 'pendingSize'
  | 'placing'
  | 'placeFailures'
  | 'warnings'
  | 'watch'
  | 'deadlines'
  | 'endReason'
  | 'lastTouch'
  | 'seq'
  | 'slicesDone'
  | 'message'
  | 'tickSize';

/** `[]` when context type `C` keeps every shared field as it is (else `[never]`: no call compiles). */
export type KeepsSharedFields<C> =
  Pick<StrategyBaseContext, SharedKey> extends Pick<C, SharedKey & keyof C> ? [] : [never];

/** A patch of shared fields, which fits every machine's context. */
export type BasePatch = Partial<Pick<StrategyBaseContext, SharedKey>>;

/** What a shared guard receives. */
export interface BaseArgs {
  context: StrategyBaseContext;
  event: StrategyEvent;
}

/** Params of `placeOrder` for the child being placed (`context.placing`). */
export const placingOrder = ({ context }: { context: StrategyBaseContext }): { order: ChildOrder } => ({
  order: need(context.placing, 'the child order being placed'),
});
/** Params of `cancelOrder`: the child order and the reason recorded on it. */
export interface CancelOrderParams {
  orderId: string;
  reason: CancelReason;
}

/**
 * Params of `cancelOrder` for the working child, recorded on it as `code` with the message
 * `<TYPE> <record id>: <why>` (which strategy canceled it, and why).
 */
export function cancelWorking(code: CancelCode, why: string) {
  return ({ context }: { context: StrategyBaseContext }): CancelOrderParams => ({
    orderId: need(context.working, 'the working child order'),
    reason: { code, message: `${context.type} ${context.recordId}: ${why}` },
  });
}

/**
 * Params of `cancelOrder` for the working child when the strategy ends on
 * `strategy.cancel`: DELETE strategy, or the engine's reason (its market closed).
 */
export const cancelWorkingOnEnd = ({ context, event }: BaseArgs): CancelOrderParams =>
  cancelWorking(
    'STRATEGY_CANCELED',
    event.type === 'strategy.cancel' && event.reason ? `ended: ${event.reason}` : 'canceled by DELETE strategy',
  )({ context });

/** Guards every strategy machine may use. */
export const strategyGuards = {
  workingChildDone: ({ context, event }: BaseArgs) => isWorkingChildDone(context, event),
  workingChildEndedByResolution: ({ context, event }: BaseArgs) => isWorkingChildEndedByResolution(context, event),
  workingRefused: ({ context, event }: BaseArgs) => isWorkingRefused(context, event),
  workingCrossed: ({ context, event }: BaseArgs) => isWorkingCrossed(context, event),
  workingMarketClosed: ({ context, event }: BaseArgs) => isWorkingMarketClosed(context, event),
  workingPlaceFailed: ({ context, event }: BaseArgs) => isWorkingPlaceFailed(context, event),
  retriesExhausted: ({ context }: BaseArgs) => retriesExhausted(context),
  retryTime: ({ context, event }: BaseArgs) => isCurrentTimer(context, event, 'retry'),
};

/**
 * `assign` of a {@link BasePatch} computed from any machine's context `C`. (An action cannot be
 * one value shared by machines of different context types: XState types its `self` by the
 * machine's context. So each machine's setup builds its own, from one definition.)
 */
export function assignShared<C extends StrategyBaseContext, P = undefined>(
  patch: (c: C, e: StrategyEvent, params: P) => BasePatch,
) {
  // C extends StrategyBaseContext without narrowing a SharedKey (strategySetup checks it), so a
  // patch of shared fields is a patch of C
  return assign<C, StrategyEvent, P, StrategyEvent, never>(
    ({ context, event }, params) => patch(context, event, params) as Partial<C>,
  );
}

/**
 * The shared setup of every strategy machine, for its context type `C`: the side effects the
 * engine provides (`placeOrder`, `cancelOrder`), the bookkeeping actions and the guards of
 * {@link strategyGuards}. A machine adds its own with `.extend({ actions, guards })` and creates
 * itself with `.createMachine(…)`.
 * @param _noNarrowing type-level check only: a `C` that narrows a shared field does not compile.
 */
export function strategySetup<C extends StrategyBaseContext>(..._noNarrowing: KeepsSharedFields<C>) {
  return setup({
    types: { context: {} as C, input: {} as StrategyInput, events: {} as StrategyEvent },
    actions: {
      /** Side effect: place a child CLOB order. */
      placeOrder: (_, _params: { order: ChildOrder }) => {},
      /** Side effect: cancel a child CLOB order, recording why on it. */
      cancelOrder: (_, _params: CancelOrderParams) => {},
      recordChild: assignShared<C>((c, e) => (e.type === 'order.updated' ? applyChildUpdate(c, e) : {})),
      endWith: assignShared<C, { reason: string }>((_c, e, params) => ({
        endReason: e.type === 'strategy.cancel' && e.reason ? e.reason : params.reason,
      })),
      endWithRefusal: assignShared<C>((_c, e) => refusalPatch(e)),
      /**
       * The working child was refused because its market resolved first: the strategy ends CANCELED, `market resolved`.
       */
      endMarketResolved: assignShared<C>(() => ({ endReason: MARKET_RESOLVED_MESSAGE, working: null })),
      clearWatchAndDeadlines: assignShared<C>(() => ({ watch: {}, deadlines: {} })),
    },
    guards: strategyGuards,
  });
}

/**
 * Actions of the machines that retry a child order not placed after a delay (ICEBERG, PEGGED),
 * for their context type `C`. `what` names the order in warnings and messages.
 */
export function retryActions<C extends StrategyBaseContext>(what: (c: C) => string) {
  return {
    /** A report of a child (the working one exists: the failures in a row end). */
    recordChild: assignShared<C>((c, e) =>
      e.type === 'order.updated'
        ? { ...applyChildUpdate(c, e), ...(e.orderId === c.working ? { placeFailures: 0 } : {}) }
        : {},
    ),
    /** Not placed: retry after {@link placeRetryDelayMs}; no watch meanwhile. */
    scheduleRetry: assignShared<C>((c, e) => ({ ...placeRetryPatch(c, e, what(c)), watch: {} })),
    endNotPlaced: assignShared<C>((c, e) => placeFailedEndPatch(c, e, what(c))),
    /** The working order was never placed: no child works. */
    notPlaced: assignShared<C>((c) => placeFailedPatch(c)),
    clearRetry: assignShared<C>((c) => ({
      deadlines: Object.fromEntries(Object.entries(c.deadlines).filter(([k]) => k !== 'retry')),
    })),
    recordTouch: assignShared<C>((_c, e) =>
      e.type === 'book.touch' ? { lastTouch: touchOf(e), ...(e.tickSize ? { tickSize: e.tickSize } : {}) } : {},
    ),
  };
}

/**
 * The transitions of a state that waits for its working child to be off the book (after a cancel)
 * before it goes to `target`: `order.updated` of the working child done → `target` with
 * `done.actions`; any other report is recorded (a fill racing the cancel); `order.placeFailed`
 * of the working child (it was never placed) → `target` with `neverPlaced.actions`. Spread into
 * the state's `on`, next to what is particular to it (PEGGED `repegging`, TWAP `rolling` and
 * `canceling`, the `canceling` of {@link retryingChild}).
 */
export function whenChildOff<const T extends string, const D, const N>(
  target: T,
  done: { actions: D; description: string },
  neverPlaced: { actions: N; description: string },
) {
  return {
    'order.updated': [
      { guard: 'workingChildDone', target, actions: done.actions, description: done.description },
      { actions: 'recordChild', description: 'fill racing the cancel' },
    ],
    'order.placeFailed': {
      guard: 'workingPlaceFailed',
      target,
      actions: neverPlaced.actions,
      description: neverPlaced.description,
    },
  } as const;
}

/**
 * What the machines that retry a child order not placed (ICEBERG, PEGGED; their tables name these
 * states) share: the working state's transitions when its child is refused or not placed, the
 * `retrying` state (waits for the retry timer, then goes to `placeState`, which places the child
 * again) and the `canceling` state (waits for the working child to be off the book). `child` names
 * the child order in the descriptions ("clip", "order").
 */
export function retryingChild<S extends string>(placeState: S, child: string) {
  return {
    /**
     * `working.on`: a post-only crossing waits for the book, any other refusal
     * fails; not placed → `retrying`, or `failed` once the retries are spent.
     */
    whenNotPlaced: {
      'order.refused': [
        {
          guard: 'workingCrossed',
          target: 'waiting',
          actions: 'waitForBook',
          description: `the ${child} would have crossed (the touch moved under it): wait for the book`,
        },
        {
          guard: 'workingMarketClosed',
          target: 'canceled',
          actions: ['endMarketResolved', 'clearWatchAndDeadlines'],
          description: `the market resolved before the ${child} got there: ended by the resolution`,
        },
        {
          guard: 'workingRefused',
          target: 'failed',
          actions: ['endWithRefusal', 'clearWatchAndDeadlines'],
          description: `the venue refused the ${child} (risk): permanent`,
        },
      ],
      'order.placeFailed': [
        {
          guard: and(['workingPlaceFailed', 'retriesExhausted']),
          target: 'failed',
          actions: 'endNotPlaced',
          description: `the ${child} could not be placed, again: give up`,
        },
        {
          guard: 'workingPlaceFailed',
          target: 'retrying',
          actions: 'scheduleRetry',
          description: `the ${child} could not be placed: retry later`,
        },
      ],
    },
    /**
     * `waiting.on` (waiting for the book), besides the touch: a
     * late report is recorded; DELETE strategy cancels at once.
     */
    whileWaiting: {
      'order.updated': { actions: 'recordChild', description: 'a late report' },
      'strategy.cancel': {
        target: 'canceled',
        actions: ['clearWatchAndDeadlines', { type: 'endWith', params: { reason: 'canceled by DELETE strategy' } }],
        description: 'DELETE strategy while waiting',
      },
    },
    states: {
      retrying: {
        on: {
          'timer.fired': {
            guard: 'retryTime',
            target: placeState,
            actions: 'clearRetry',
            description: `retry the ${child}`,
          },
          'order.updated': { actions: 'recordChild', description: 'a late report' },
          'strategy.cancel': {
            target: 'canceled',
            actions: ['clearWatchAndDeadlines', { type: 'endWith', params: { reason: 'canceled by DELETE strategy' } }],
            description: 'DELETE strategy while waiting to retry',
          },
        },
      },
      canceling: {
        tags: ['canceling', 'cancelingChild'],
        on: {
          ...whenChildOff(
            'canceled',
            { actions: ['recordChild', 'clearWatchAndDeadlines'], description: `the ${child} is off the book` },
            { actions: ['notPlaced', 'clearWatchAndDeadlines'], description: `the ${child} was never placed` },
          ),
          'book.touch': { actions: 'recordTouch', description: 'the touch moved' },
        },
      },
    },
  } as const;
}

/** REST statuses of strategy records (spec 2.4; see schemas/strategies.ts). */
export type StrategyStatus = 'PENDING' | 'ACTIVE' | 'TRIGGERED' | 'COMPLETED' | 'CANCELED' | 'FAILED';
