/**
 * CLOB order lifecycle (spec 2.2, 2.3, part 3): LIMIT (GTC, GTD, IOC, FOK) and MARKET.
 *
 * Pure: no I/O. The engine supplies the three side effects through `.provide()`:
 * `submitToVenue`, `cancelAtVenue`, `expireAtVenue`. Venue reports arrive as past-tense events
 * (`venue.accepted`, `venue.filled`, …); cancels as `order.cancel` carrying who asked and why (the
 * user, or the strategy that placed the order and its reason); the GTD deadline lives in
 * `context.deadlines.expiry` and comes back as `timer.fired`. `context.cancelReason` is the cancel
 * asked for, then what the order ended with: the venue's `venue.canceled` reason (its own, or the
 * one it was asked with) or `EXPIRED`.
 *
 * | state            | REST status        | final |
 * |------------------|--------------------|-------|
 * | submitted        | `SUBMITTED`        | no    |
 * | live             | `OPEN`             | no    |
 * | partially_filled | `PARTIALLY_FILLED` | no    |
 * | canceling        | `PENDING_CANCEL`   | no    |
 * | filled           | `FILLED`           | yes   |
 * | canceled         | `CANCELED`         | yes¹  |
 * | expired          | `EXPIRED`          | yes   |
 * | rejected         | `REJECTED`         | yes   |
 *
 * ¹ The order's end (its record is final: {@link isOrderFinal}), yet `canceled` still takes one
 * event: `(CANCELED, venue.filled)`, a fill the venue reports after the cancel (a real venue can:
 * the trade matched before the cancel took effect), recorded on the order, which stays CANCELED
 * (NautilusTrader's order state table has the same row). So `canceled` is not an XState final state.
 */
import { and, assign, setup } from 'xstate';
import type { FieldCodec, RecordIds, SnapshotForm } from '../engine/actor-host.js';
import { dec } from '../engine/decimal.js';
import type { CancelReason, Side, TimeInForce, TradeFacts, TradeLeg, VenueOrder } from '../engine/venue/port.js';
import { given } from './input.js';
import { CREATED_AT_CODEC } from './strategy-kit.js';

/** Input of a new order actor; every quantity a decimal string. */
export interface OrderInput {
  orderId: string;
  userId: string;
  tokenId: string;
  side: Side;
  type: 'LIMIT' | 'MARKET';
  /** Decimal probability; null for MARKET. */
  price: string | null;
  /** Shares; null for a MARKET buy. */
  size: string | null;
  /** Dollars; MARKET buy only. */
  quoteAmount: string | null;
  timeInForce: TimeInForce;
  /** GTD expiry, epoch ms. */
  expiresAtMs: number | null;
  clientOrderId: string | null;
  metadata: string | null;
  /** Epoch ms. */
  createdAtMs: number;
  /** Set on orders a stop strategy or bracket places (open orders show them). */
  isStopLoss?: boolean;
  isTakeProfit?: boolean;
  /**
   * Strategy or copytrade subscription that placed this order (`record_id`), or null (its changes are
   * reported to it); `parentKind` says which (absent: a strategy).
   */
  parentId?: string | null;
  parentKind?: OrderParentKind;
  /** Bracket (`record_id` of its BRACKET strategy) this buy entry carries; its changes are reported to it. */
  bracketId?: string | null;
  /** Refuse rather than take liquidity (`order crosses book`): ICEBERG clips, pegged and passive slices. */
  postOnly?: boolean;
}

/** One fill as the order keeps it: decimal strings, the trade (chain position, both parties) when the venue gave it. */
export interface OrderFill {
  /** The venue's id of this order's side of the trade. */
  tradeId: string;
  /** Price of the order's token, decimal probability. */
  price: string;
  /** Shares. */
  size: string;
  liquidity: 'maker' | 'taker';
  /** Fee this order paid, dollars. */
  feeUsd: string;
  /** When it traded, epoch ms (null when the report did not say: fills reported before it did). */
  atMs: number | null;
  /** The trade (chain position, size, both parties); null when the report carried none. */
  trade: TradeFacts | null;
}

/** What placed a child order: a managed strategy or a copytrade subscription. */
export type OrderParentKind = 'strategy' | 'copytrade';

export interface OrderContext extends Required<Omit<OrderInput, 'parentKind'>> {
  /** Absent on strategies' orders (and in snapshots written before it existed): a strategy. */
  parentKind?: OrderParentKind;
  /** Shares filled so far. */
  filledSize: string;
  /** Dollars traded so far (Σ price × size). */
  matchedAmount: string;
  /** Trade ids applied: a duplicate report is ignored. */
  tradeIds: string[];
  /**
   * The fills, in the order they arrived (absent in snapshots of machine versions 1 and 2, which
   * kept only totals and trade ids).
   */
  fills?: OrderFill[];
  /** Last reason given by the venue (cancel, reject), or `expired`: the view's `message`. */
  reason: string | null;
  /**
   * The cancel asked for (while canceling), then why the order ended CANCELED or EXPIRED. Absent
   * in snapshots of machine version 1 (see {@link requestedCancelReason}).
   */
  cancelReason?: CancelReason | null;
  /** Error string of a rejection (`INSUFFICIENT_BALANCE`, `order crosses book`, …). */
  error: string | null;
  /** A cancel asked for before the venue acknowledged the order. */
  cancelRequested: boolean;
  /** Timer name → epoch ms (see engine/actor-host.ts). */
  deadlines: { expiry?: number };
}

export type OrderEvent =
  | { type: 'venue.accepted'; resting: boolean }
  | {
      type: 'venue.filled';
      tradeId: string;
      price: string;
      size: string;
      liquidity: 'maker' | 'taker';
      completes: boolean;
      /** When it traded, epoch ms. */
      atMs?: number;
      /** Fee this order paid, dollars ("0" when absent). */
      feeUsd?: string;
      trade?: TradeFacts;
    }
  | { type: 'venue.canceled'; reason: CancelReason }
  | { type: 'venue.expired' }
  | { type: 'venue.rejected'; error: string; reason: string }
  | { type: 'venue.unknown' }
  | { type: 'order.cancel'; reason: CancelReason }
  | { type: 'timer.fired'; name: string; atMs: number };

/** Machine definition version, stored with every snapshot (2: `cancelReason` in context; 3: `fills`). */
export const ORDER_MACHINE_VERSION = 3;
/**
 * Versions whose snapshots restore unchanged on this one (version 1 has no `cancelReason`, 1 and 2
 * no `fills`: their fills are the totals and trade ids, and later fills are added to an empty list).
 */
export const ORDER_RESTORABLE_VERSIONS = [1, 2];

/** The reason of a cancel the user asked for (DELETE order, cancel-batch, cancel-all). */
export const USER_CANCEL: CancelReason = Object.freeze({ code: 'USER_CANCELED', message: 'canceled by user' });
/** The reason an order ended EXPIRED. */
export const EXPIRED_REASON: CancelReason = Object.freeze({ code: 'EXPIRED', message: 'expired' });

/**
 * The cancel asked for of an order: the one recorded, or for a snapshot of version 1 (none
 * recorded) the one its origin implies: its strategy's for a child order, else the user's.
 */
export function requestedCancelReason(c: Pick<OrderContext, 'cancelReason' | 'parentId'>): CancelReason {
  if (c.cancelReason) return c.cancelReason;
  return c.parentId ? { code: 'STRATEGY_CANCELED', message: `canceled by its strategy ${c.parentId}` } : USER_CANCEL;
}

/** The venue command of an order (its context, or the input it is created from: the same fields). */
export function venueOrderOf(c: OrderInput | OrderContext): VenueOrder {
  return {
    orderId: c.orderId,
    userId: c.userId,
    tokenId: c.tokenId,
    side: c.side,
    kind: c.type === 'MARKET' ? 'market' : 'limit',
    price: c.price,
    size: c.size,
    quoteAmount: c.quoteAmount,
    timeInForce: c.type === 'MARKET' && c.timeInForce !== 'FOK' ? 'IOC' : c.timeInForce,
    postOnly: c.postOnly ?? false,
  };
}

type FillEvent = Extract<OrderEvent, { type: 'venue.filled' }>;

export const orderMachine = setup({
  types: {
    context: {} as OrderContext,
    input: {} as OrderInput,
    events: {} as OrderEvent,
  },
  actions: {
    /** Side effect: send the order to the venue (idempotent by order id). */
    submitToVenue: (_, _params: { order: VenueOrder }) => {},
    /** Side effect: ask the venue to cancel the resting order. */
    cancelAtVenue: (_, _params: { orderId: string; reason: CancelReason }) => {},
    /** Side effect: ask the venue to expire the resting GTD order. */
    expireAtVenue: (_, _params: { orderId: string }) => {},
    recordFill: assign(({ context, event }) => {
      const e = event as FillEvent;
      return {
        filledSize: dec(context.filledSize).plus(dec(e.size)).toFixed(),
        matchedAmount: dec(context.matchedAmount)
          .plus(dec(e.price).times(dec(e.size)))
          .toFixed(),
        tradeIds: [...context.tradeIds, e.tradeId],
        fills: [
          ...(context.fills ?? []),
          {
            tradeId: e.tradeId,
            price: e.price,
            size: e.size,
            liquidity: e.liquidity,
            feeUsd: e.feeUsd ?? '0',
            atMs: e.atMs ?? null,
            trade: e.trade ?? null,
          },
        ],
      };
    }),
    /** The venue's cancel: its reason is why the order ended. */
    recordCancel: assign(({ event }) =>
      event.type === 'venue.canceled' ? { reason: event.reason.message, cancelReason: event.reason } : {},
    ),
    recordExpiry: assign({ reason: EXPIRED_REASON.message, cancelReason: EXPIRED_REASON }),
    /** The cancel asked for; a repeat while one is on its way keeps the first. */
    recordCancelRequest: assign(({ context, event }) =>
      event.type === 'order.cancel' && !context.cancelReason ? { cancelReason: event.reason } : {},
    ),
    recordRejection: assign(({ event }) =>
      event.type === 'venue.rejected' ? { error: event.error, reason: event.reason } : {},
    ),
    clearDeadlines: assign({ deadlines: () => ({}) }),
    markCancelRequested: assign({ cancelRequested: true }),
  },
  guards: {
    isNewFill: ({ context, event }) => event.type === 'venue.filled' && !context.tradeIds.includes(event.tradeId),
    completesOrder: ({ context, event }) => {
      if (event.type !== 'venue.filled') return false;
      // Sized orders count their shares; a dollar-sized MARKET buy relies on the venue's flag.
      return context.size !== null
        ? dec(context.filledSize).plus(dec(event.size)).gte(dec(context.size))
        : event.completes;
    },
    isCurrentExpiry: ({ context, event }) =>
      event.type === 'timer.fired' && event.name === 'expiry' && context.deadlines.expiry === event.atMs,
    cancelWasRequested: ({ context }) => context.cancelRequested,
    isResting: ({ event }) => event.type === 'venue.accepted' && event.resting,
  },
}).createMachine({
  id: 'order',
  context: ({ input: raw }) => {
    const input = given(raw);
    return {
      isStopLoss: false,
      isTakeProfit: false,
      parentId: null,
      bracketId: null,
      postOnly: false,
      ...input,
      filledSize: '0',
      matchedAmount: '0',
      tradeIds: [],
      fills: [],
      reason: null,
      cancelReason: null,
      error: null,
      cancelRequested: false,
      deadlines: input.expiresAtMs !== null ? { expiry: input.expiresAtMs } : {},
    };
  },
  initial: 'submitted',
  states: {
    submitted: {
      entry: { type: 'submitToVenue', params: ({ context }) => ({ order: venueOrderOf(context) }) },
      on: {
        'venue.accepted': [
          {
            guard: 'cancelWasRequested',
            target: 'canceling',
            description: 'acknowledged after the user asked to cancel: cancel now',
          },
          { target: 'live', description: 'the venue acknowledged the order' },
        ],
        'venue.filled': [
          {
            guard: and(['isNewFill', 'completesOrder']),
            target: 'filled',
            actions: ['recordFill', 'clearDeadlines'],
            description: 'filled in full on arrival',
          },
          {
            guard: 'isNewFill',
            target: 'partially_filled',
            actions: 'recordFill',
            description: 'partly filled on arrival',
          },
        ],
        'venue.rejected': {
          target: 'rejected',
          actions: ['recordRejection', 'clearDeadlines'],
          description: 'the venue refused the order',
        },
        'venue.canceled': {
          target: 'canceled',
          actions: ['recordCancel', 'clearDeadlines'],
          description: 'FOK/IOC/market with nothing to fill',
        },
        'venue.unknown': {
          target: 'submitted',
          reenter: true,
          description: 'reconciliation: the venue never saw it, submit again',
        },
        'order.cancel': {
          actions: ['markCancelRequested', 'recordCancelRequest'],
          description: 'cancel once the venue acknowledges',
        },
      },
    },
    live: {
      on: {
        'venue.filled': [
          {
            guard: and(['isNewFill', 'completesOrder']),
            target: 'filled',
            actions: ['recordFill', 'clearDeadlines'],
            description: 'filled in full',
          },
          { guard: 'isNewFill', target: 'partially_filled', actions: 'recordFill', description: 'partial fill' },
        ],
        'venue.canceled': {
          target: 'canceled',
          actions: ['recordCancel', 'clearDeadlines'],
          description: 'canceled by the venue (IOC remainder, self-trade prevention)',
        },
        'venue.expired': {
          target: 'expired',
          actions: ['recordExpiry', 'clearDeadlines'],
          description: 'GTD expiry took effect',
        },
        'order.cancel': {
          target: 'canceling',
          actions: 'recordCancelRequest',
          description: 'the user or its strategy asks to cancel',
        },
        'timer.fired': {
          guard: 'isCurrentExpiry',
          actions: [
            'clearDeadlines',
            { type: 'expireAtVenue', params: ({ context }) => ({ orderId: context.orderId }) },
          ],
          description: 'GTD expiration reached',
        },
      },
    },
    partially_filled: {
      on: {
        'venue.filled': [
          {
            guard: and(['isNewFill', 'completesOrder']),
            target: 'filled',
            actions: ['recordFill', 'clearDeadlines'],
            description: 'last fill',
          },
          { guard: 'isNewFill', actions: 'recordFill', description: 'another partial fill' },
        ],
        'venue.canceled': {
          target: 'canceled',
          actions: ['recordCancel', 'clearDeadlines'],
          description: 'remainder canceled by the venue',
        },
        'venue.expired': {
          target: 'expired',
          actions: ['recordExpiry', 'clearDeadlines'],
          description: 'GTD expiry took effect on the remainder',
        },
        'order.cancel': {
          target: 'canceling',
          actions: 'recordCancelRequest',
          description: 'the user or its strategy asks to cancel the remainder',
        },
        'timer.fired': {
          guard: 'isCurrentExpiry',
          actions: [
            'clearDeadlines',
            { type: 'expireAtVenue', params: ({ context }) => ({ orderId: context.orderId }) },
          ],
          description: 'GTD expiration reached',
        },
      },
    },
    canceling: {
      entry: {
        type: 'cancelAtVenue',
        params: ({ context }) => ({ orderId: context.orderId, reason: requestedCancelReason(context) }),
      },
      on: {
        'venue.filled': [
          {
            guard: and(['isNewFill', 'completesOrder']),
            target: 'filled',
            actions: ['recordFill', 'clearDeadlines'],
            description: 'filled before the cancel arrived',
          },
          { guard: 'isNewFill', actions: 'recordFill', description: 'partial fill racing the cancel' },
        ],
        'venue.canceled': {
          target: 'canceled',
          actions: ['recordCancel', 'clearDeadlines'],
          description: 'cancel confirmed',
        },
        'venue.expired': {
          target: 'expired',
          actions: ['recordExpiry', 'clearDeadlines'],
          description: 'expired before the cancel arrived',
        },
        'venue.accepted': {
          guard: 'isResting',
          target: 'canceling',
          reenter: true,
          description:
            'reconciliation after a restart: the order still rests, so the cancel is ' +
            'sent again (restoring does not re-run entry actions)',
        },
        'order.cancel': {
          target: 'canceling',
          reenter: true,
          description: 'asked again (a retry): the cancel is sent again',
        },
      },
    },
    filled: { type: 'final' },
    canceled: {
      on: {
        'venue.filled': {
          guard: 'isNewFill',
          actions: 'recordFill',
          description: 'a fill the venue reports after the cancel: recorded, the order stays CANCELED',
        },
      },
    },
    expired: { type: 'final' },
    rejected: { type: 'final' },
  },
});

/**
 * REST status of each state (spec 2.3: "allowed values of status for CLOB orders" not shown: the reference's
 * `OPEN`, `PARTIALLY_FILLED`, `FILLED`, `CANCELED`, and this service's states around them).
 */
export const ORDER_STATUS = {
  submitted: 'SUBMITTED',
  live: 'OPEN',
  partially_filled: 'PARTIALLY_FILLED',
  canceling: 'PENDING_CANCEL',
  filled: 'FILLED',
  canceled: 'CANCELED',
  expired: 'EXPIRED',
  rejected: 'REJECTED',
} as const satisfies Record<string, string>;

export type OrderState = keyof typeof ORDER_STATUS;
export type OrderStatus = (typeof ORDER_STATUS)[OrderState];

/** States that end an order (its record final): `canceled` too, though it still takes a late fill. */
export const FINAL_ORDER_STATES: ReadonlySet<string> = new Set(['filled', 'canceled', 'expired', 'rejected']);

/** Whether an order snapshot is the order's end ({@link FINAL_ORDER_STATES}). */
export function isOrderFinal(s: { value: unknown }): boolean {
  return FINAL_ORDER_STATES.has(String(s.value));
}

/** Statuses of orders still working at the venue (GET orders/open). */
export const OPEN_STATUSES: OrderStatus[] = ['SUBMITTED', 'OPEN', 'PARTIALLY_FILLED', 'PENDING_CANCEL'];

/** Version of the stored form of order snapshots ({@link ORDER_SNAPSHOT_FORM}). */
export const ORDER_FORM_VERSION = 1;

/**
 * Fields every order context has (from {@link OrderInput} and the machine's initial context), with
 * the value the stored form leaves them out at (never change one: a new default needs a new form
 * version, this one kept as `older`). Written out apart from the machine's initial context on
 * purpose: that one may change, these are frozen with the form's version.
 */
function orderContextDefaults(): Record<string, unknown> {
  return {
    isStopLoss: false,
    isTakeProfit: false,
    parentId: null,
    bracketId: null,
    postOnly: false,
    type: 'LIMIT',
    quoteAmount: null,
    timeInForce: 'GTC',
    expiresAtMs: null,
    clientOrderId: null,
    metadata: null,
    filledSize: '0',
    matchedAmount: '0',
    reason: null,
    cancelReason: null,
    error: null,
    cancelRequested: false,
  };
}

/** The deadlines of a new order: its GTD expiry, if any. */
function initialDeadlines(c: Record<string, unknown>): { expiry?: number } {
  return c.expiresAtMs !== null ? { expiry: c.expiresAtMs as number } : {};
}

/** The trade ids of an order's fills, in order (what `tradeIds` holds once every fill is kept). */
function fillTradeIds(c: Record<string, unknown>): string[] {
  return Array.isArray(c.fills) ? (c.fills as OrderFill[]).map((f) => f.tradeId) : [];
}

/** Whether `o` is a plain object with exactly `n` own enumerable keys (none of them holding `undefined`). */
function hasKeys(o: unknown, n: number): o is Record<string, unknown> {
  if (o === null || typeof o !== 'object' || Array.isArray(o)) return false;
  let k = 0;
  for (const key in o) {
    if ((o as Record<string, unknown>)[key] === undefined) return false;
    k++;
  }
  return k === n;
}

const isText = (v: unknown): v is string => typeof v === 'string';
/** A codec called without the context (the host always passes it): nothing is left out. */
const NO_CONTEXT: Readonly<Record<string, unknown>> = Object.freeze({});
const isTextOrNull = (v: unknown): v is string | null => v === null || typeof v === 'string';

/**
 * One fill in the `fills` slot ({@link FILLS_CODEC}): `[tradeId, price, size, liquidity, feeUsd,
 * atMs]` without a trade, `[…, blockTimestamp, logIndex, transactionHash, tradeFeeUsd, other]` with
 * one as the venue records it for this order (its id the trade id without `-t` / `-m`, its size the
 * fill's, this order's leg `{record's user, record's id, the order's token and side, the fill's
 * price}`), `other` the other leg as `[userId, orderId, side, price]` (its token appended when it
 * is not the order's); undefined for any other shape (the fill is then kept as it is).
 */
function packFill(f: unknown, ids: RecordIds, c: Readonly<Record<string, unknown>>): unknown[] | undefined {
  if (!hasKeys(f, 7)) return undefined;
  const { tradeId, price, size, liquidity, feeUsd, atMs, trade } = f;
  if (!isText(tradeId) || !isText(price) || !isText(size) || !isText(feeUsd)) return undefined;
  if ((liquidity !== 'taker' && liquidity !== 'maker') || (atMs !== null && typeof atMs !== 'number')) return undefined;
  const head: unknown[] = [tradeId, price, size, liquidity, feeUsd, atMs];
  if (trade === null) return head;
  if (!hasKeys(trade, 8)) return undefined;
  const t = trade as unknown as TradeFacts;
  const own = (liquidity === 'taker' ? t.taker : t.maker) as unknown;
  const other = (liquidity === 'taker' ? t.maker : t.taker) as unknown;
  if (!isText(t.id) || `${t.id}-${liquidity === 'taker' ? 't' : 'm'}` !== tradeId || t.size !== size) return undefined;
  if (typeof t.blockTimestamp !== 'number' || typeof t.logIndex !== 'number') return undefined;
  if (!isText(t.transactionHash) || !isText(t.feeUsd) || !hasKeys(own, 5) || !hasKeys(other, 5)) return undefined;
  if (own.userId !== ids.ownerUserId || own.orderId !== ids._id || own.tokenId !== c.tokenId) return undefined;
  if (own.side !== c.side || own.price !== price) return undefined;
  const o = other as unknown as TradeLeg;
  if (!isTextOrNull(o.userId) || !isTextOrNull(o.orderId) || !isText(o.tokenId) || !isText(o.side)) return undefined;
  if (!isText(o.price)) return undefined;
  const leg: unknown[] = [o.userId, o.orderId, o.side, o.price];
  if (o.tokenId !== c.tokenId) leg.push(o.tokenId);
  head.push(t.blockTimestamp, t.logIndex, t.transactionHash, t.feeUsd, leg);
  return head;
}

/** A fill packed by {@link packFill}, read back. */
function unpackFill(p: unknown[], ids: RecordIds, c: Readonly<Record<string, unknown>>): OrderFill {
  const [tradeId, price, size, liquidity, feeUsd, atMs] = p as [
    string,
    string,
    string,
    'maker' | 'taker',
    string,
    number | null,
  ];
  const fill: OrderFill = { tradeId, price, size, liquidity, feeUsd, atMs, trade: null };
  if (p.length === 6) return fill;
  const o = p[10] as [string | null, string | null, Side, string, string?];
  const own: TradeLeg = {
    userId: ids.ownerUserId,
    orderId: ids._id,
    tokenId: c.tokenId as string,
    side: c.side as Side,
    price,
  };
  const other: TradeLeg = {
    userId: o[0],
    orderId: o[1],
    tokenId: o[4] ?? (c.tokenId as string),
    side: o[2],
    price: o[3],
  };
  fill.trade = {
    id: tradeId.slice(0, -2),
    blockTimestamp: p[6] as number,
    logIndex: p[7] as number,
    transactionHash: p[8] as string,
    size,
    feeUsd: p[9] as string,
    taker: liquidity === 'taker' ? own : other,
    maker: liquidity === 'taker' ? other : own,
  };
  return fill;
}

/**
 * `fills` in a slot of the order's stored form (after `tokenId` and `side`): `0` when there is
 * none, else the list with each fill packed ({@link packFill}: the trade's parts this order's
 * record and context hold are left out) or, when it has another shape, as it is (an object);
 * anything else has no slot value (the snapshot is then stored in XState's form).
 */
export const FILLS_CODEC: FieldCodec = Object.freeze({
  key: 'fills',
  encode(v: unknown, ids: RecordIds, c: Readonly<Record<string, unknown>> = NO_CONTEXT): unknown {
    if (!Array.isArray(v)) return undefined;
    if (v.length === 0) return 0;
    const out: unknown[] = [];
    for (const f of v as unknown[]) {
      const packed = packFill(f, ids, c);
      if (packed === undefined && (f === null || typeof f !== 'object' || Array.isArray(f))) return undefined;
      out.push(packed ?? f);
    }
    return out;
  },
  decode(stored: unknown, ids: RecordIds, c: Readonly<Record<string, unknown>> = NO_CONTEXT): unknown {
    if (stored === 0) return [];
    return (stored as unknown[]).map((f) => (Array.isArray(f) ? unpackFill(f, ids, c) : f));
  },
});

/**
 * The stored form of order snapshots (bytes to encode, write, read and collect per order step),
 * form {@link ORDER_FORM_VERSION}: positional (engine/actor-host.ts `SnapshotForm` `fields`):
 * `[1, value, tokenId, side, price, size, createdAtMs, fills]` (`createdAtMs` as the milliseconds
 * to the record's: {@link CREATED_AT_CODEC}; the fills packed: {@link FILLS_CODEC}), then an object
 * of the other fields not left out: those at their default ({@link orderContextDefaults}: `type`
 * "LIMIT", `timeInForce` "GTC", the flags false, the optional ids and texts null, nothing filled),
 * `orderId` / `userId` when they are the record's `_id` / `ownerUserId`, `tradeIds` when they are
 * the fills' trade ids, `deadlines` when they are the GTD expiry the order was created with (or
 * none). A resting order just acknowledged is stored as `[1,"live","4158…0640","buy","0.66","10",2,0]`
 * (~115 characters; ~690 in XState's form); a LIMIT buy filled at once by one trade in ~330 (~1,350).
 * Snapshots stored in XState's form (every order before this form) are read as they are.
 */
export const ORDER_SNAPSHOT_FORM: SnapshotForm = Object.freeze({
  version: ORDER_FORM_VERSION,
  defaults: Object.freeze(orderContextDefaults()),
  derived: Object.freeze([
    ['orderId', (_c: Record<string, unknown>, ids: RecordIds) => ids._id],
    ['userId', (_c: Record<string, unknown>, ids: RecordIds) => ids.ownerUserId],
    ['tradeIds', fillTradeIds],
    ['deadlines', initialDeadlines],
  ] as const),
  fresh: orderContextDefaults,
  fields: Object.freeze(['tokenId', 'side', 'price', 'size', CREATED_AT_CODEC, FILLS_CODEC]),
});
