/**
 * A combo (spec 1, 2.5, 3, 4.2): a multi-leg parlay bought by request for quote. Its YES share pays
 * $1 only when every leg's market resolves to the leg's token; one losing leg zeroes it. There is
 * no combo sell: the exit is a redeem on a win, or the resolution to zero.
 *
 * Pure: no I/O, no clock. The engine supplies two side effects through `.provide()`: `buyAtVenue`
 * (the notional plus the fee leave the wallet and the combo shares are credited to it, in one venue
 * operation, idempotent by op id `<id>:buy`) and `redeemAtVenue` (the shares are burned and the
 * payout credited, op id `<id>:redeem`). The venue answers `venue.applied` / `venue.refused`. The
 * quote's life is data: `deadlines.expiry` = `expiresAtMs`, armed by the actor host as a durable
 * timer that comes back as a guarded `timer.fired`. Whether an accept comes in time is decided by
 * the accept's own time (`accept.atMs` ≤ `expiresAtMs`), never by that timer having fired.
 * A leg's market resolving arrives as `leg.resolved` (the leg's token won or lost); it is recorded
 * in any live state and moves an executed combo at once. At start-up an actor in `executed` or
 * `redeeming` gets `venue.retry`, which runs its venue command again (the venue answers a repeat
 * with the recorded result): an accept or a redeem interrupted by a crash happens exactly once.
 *
 * | state         | REST status     | final | on                                                              |
 * |---------------|-----------------|-------|-----------------------------------------------------------------|
 * | quoted        | `QUOTED`        | no    | accept (atMs ≤ expiresAtMs) → executed;                         |
 * |               |                 |       | timer.fired(expiry, current) → expired; leg.resolved → quoted   |
 * | executed      | `EXECUTED`      | no    | venue.applied → open / partial / resolved_win / resolved_loss   |
 * |               |                 |       | (by the legs known); venue.refused → failed;                    |
 * |               |                 |       | venue.retry → executed; leg.resolved → executed                 |
 * | open          | `OPEN`          | no    | leg.resolved → partial / resolved_loss                          |
 * | partial       | `PARTIAL`       | no    | leg.resolved → resolved_win / resolved_loss (or stays)          |
 * | resolved_win  | `RESOLVED_WIN`  | no    | redeem → redeeming                                              |
 * | redeeming     | `RESOLVED_WIN`  | no    | venue.applied → redeemed; venue.refused → resolved_win;         |
 * |               |                 |       | venue.retry → redeeming                                         |
 * | redeemed      | `REDEEMED`      | yes   | (payout credited)                                               |
 * | resolved_loss | `RESOLVED_LOSS` | yes   | (worth nothing; a redeem is refused)                            |
 * | expired       | `EXPIRED`       | yes   | (never accepted; nothing moved)                                 |
 * | failed        | `FAILED`        | yes   | (the venue refused the debit; nothing moved)                    |
 */
import { and, assign, setup } from 'xstate';
import type { WalletOp, WalletOpResult } from '../engine/venue/port.js';
import { given } from './input.js';

/** One leg: a YES outcome token of one market, with how it resolved once known. */
export interface ComboLeg {
  tokenId: string;
  conditionId: string;
  /** `WIN` once the leg's token won its market, `LOSS` once it lost; null while unresolved. */
  outcome: 'WIN' | 'LOSS' | null;
  /** When the leg's market resolved, epoch ms; null while unresolved. */
  resolvedAtMs: number | null;
}

/** Input of a combo actor: the quote. Amounts are decimal strings. */
export interface ComboInput {
  /** Actor id = `combo_order_id` (`co_…`). */
  comboId: string;
  quoteId: string;
  rfqId: string;
  userId: string;
  legs: ComboLeg[];
  /** Dollars the taker spends (before the fee). */
  notionalUsd: string;
  /** Fee, dollars. */
  feeUsd: string;
  /** What the accept takes from the wallet: notional + fee, dollars. */
  debitUsd: string;
  /** Maker's price of the blended YES share, cents (clamped to [1, 99]). */
  priceCents: string;
  /** The plain product of the legs' asks, cents (the price without the maker's margin). */
  independentPriceCents: string;
  /** Combo shares bought: notional / price. */
  shares: string;
  /** Dollars the maker posts: shares × $1 − notional. */
  makerAmountUsd: string;
  /** Simulated transaction hashes of the buy and of the redeem. */
  buyTransactionHash: string;
  redeemTransactionHash: string;
  /** Epoch ms. */
  createdAtMs: number;
  /** The quote's end, epoch ms: an accept after it is refused. */
  expiresAtMs: number;
}

export interface ComboContext extends ComboInput {
  /** When the accept came, epoch ms. */
  acceptedAtMs: number | null;
  /** The buy as the venue applied it. */
  buy: WalletOpResult | null;
  /** The redeem as the venue applied it. */
  redeem: WalletOpResult | null;
  /** Why the venue refused the buy or the redeem (its code), and its message. */
  error: string | null;
  reason: string | null;
  /** Timer name → epoch ms (see engine/actor-host.ts). */
  deadlines: { expiry?: number };
}

export type ComboEvent =
  | { type: 'accept'; atMs: number }
  | { type: 'redeem'; atMs: number }
  | { type: 'leg.resolved'; tokenId: string; won: boolean; atMs: number }
  | { type: 'venue.applied'; result: WalletOpResult }
  | { type: 'venue.refused'; error: string; reason: string }
  | { type: 'venue.retry' }
  | { type: 'timer.fired'; name: string; atMs: number };

/** Machine definition version, stored with every snapshot. */
export const COMBO_MACHINE_VERSION = 1;

/** Venue op ids of a combo's buy and redeem. */
export const comboBuyOpId = (comboId: string) => `${comboId}:buy`;
export const comboRedeemOpId = (comboId: string) => `${comboId}:redeem`;

/** The legs after `event` (a `leg.resolved` of an unresolved leg of this combo), else the same legs. */
function legsAfter(legs: readonly ComboLeg[], event: ComboEvent): ComboLeg[] {
  if (event.type !== 'leg.resolved') return legs as ComboLeg[];
  return legs.map((l) =>
    l.tokenId === event.tokenId && l.outcome === null
      ? { ...l, outcome: event.won ? 'WIN' : 'LOSS', resolvedAtMs: event.atMs }
      : l,
  );
}

/** Status of a combo position (spec 2.5's filter values). */
export type ComboPositionStatus = 'OPEN' | 'PARTIAL' | 'RESOLVED_WIN' | 'RESOLVED_LOSS';

/**
 * The position status the legs give : any leg lost → `RESOLVED_LOSS`; every leg won
 * → `RESOLVED_WIN`; some won, none lost → `PARTIAL`; none resolved → `OPEN`.
 */
export function positionStatusOf(legs: readonly Pick<ComboLeg, 'outcome'>[]): ComboPositionStatus {
  if (legs.some((l) => l.outcome === 'LOSS')) return 'RESOLVED_LOSS';
  if (legs.every((l) => l.outcome === 'WIN')) return 'RESOLVED_WIN';
  return legs.some((l) => l.outcome === 'WIN') ? 'PARTIAL' : 'OPEN';
}

export const comboMachine = setup({
  types: { context: {} as ComboContext, input: {} as ComboInput, events: {} as ComboEvent },
  actions: {
    /** Side effect: debit notional + fee and credit the combo shares (idempotent by op id). */
    buyAtVenue: (_, _params: { op: WalletOp }) => {},
    /** Side effect: burn the combo shares and credit the payout (idempotent by op id). */
    redeemAtVenue: (_, _params: { op: WalletOp }) => {},
    recordAccept: assign(({ event }) => ({
      acceptedAtMs: event.type === 'accept' ? event.atMs : null,
      deadlines: {},
    })),
    recordLegs: assign(({ context, event }) => ({ legs: legsAfter(context.legs, event) })),
    recordBuy: assign({ buy: ({ event }) => (event.type === 'venue.applied' ? event.result : null) }),
    recordRedeem: assign(({ event }) => ({
      redeem: event.type === 'venue.applied' ? event.result : null,
      // an earlier refused redeem's reason no longer applies
      error: null,
      reason: null,
    })),
    recordRefusal: assign(({ event }) =>
      event.type === 'venue.refused' ? { error: event.error, reason: event.reason } : {},
    ),
    recordExpired: assign({ deadlines: {} }),
  },
  guards: {
    inTime: ({ context, event }) => event.type === 'accept' && event.atMs <= context.expiresAtMs,
    expiryDue: ({ context, event }) =>
      event.type === 'timer.fired' && event.name === 'expiry' && context.deadlines.expiry === event.atMs,
    newLeg: ({ context, event }) =>
      event.type === 'leg.resolved' && context.legs.some((l) => l.tokenId === event.tokenId && l.outcome === null),
    legsLost: ({ context, event }) => positionStatusOf(legsAfter(context.legs, event)) === 'RESOLVED_LOSS',
    legsWon: ({ context, event }) => positionStatusOf(legsAfter(context.legs, event)) === 'RESOLVED_WIN',
    legsPartial: ({ context, event }) => positionStatusOf(legsAfter(context.legs, event)) === 'PARTIAL',
  },
}).createMachine({
  id: 'combo',
  context: ({ input }) => ({
    ...given(input),
    acceptedAtMs: null,
    buy: null,
    redeem: null,
    error: null,
    reason: null,
    deadlines: { expiry: input.expiresAtMs },
  }),
  initial: 'quoted',
  states: {
    quoted: {
      on: {
        accept: {
          guard: 'inTime',
          target: 'executed',
          actions: 'recordAccept',
          description: 'accepted before expires_at',
        },
        'timer.fired': {
          guard: 'expiryDue',
          target: 'expired',
          actions: 'recordExpired',
          description: 'the quote ran out unaccepted',
        },
        'leg.resolved': { guard: 'newLeg', actions: 'recordLegs', description: 'a leg resolved (kept)' },
      },
    },
    executed: {
      entry: {
        type: 'buyAtVenue',
        params: ({ context }) => ({
          op: {
            kind: 'combo_buy',
            opId: comboBuyOpId(context.comboId),
            userId: context.userId,
            comboId: context.comboId,
            amount: context.debitUsd,
            shares: context.shares,
            legs: context.legs.map((l) => l.tokenId),
          },
        }),
      },
      on: {
        'venue.applied': [
          { guard: 'legsLost', target: 'resolved_loss', actions: ['recordBuy'], description: 'a leg lost already' },
          { guard: 'legsWon', target: 'resolved_win', actions: ['recordBuy'], description: 'every leg won already' },
          { guard: 'legsPartial', target: 'partial', actions: ['recordBuy'], description: 'some legs won already' },
          { target: 'open', actions: ['recordBuy'], description: 'bought; no leg resolved yet' },
        ],
        'venue.refused': {
          target: 'failed',
          actions: 'recordRefusal',
          description: 'the wallet could not pay (nothing moved)',
        },
        'venue.retry': {
          target: 'executed',
          reenter: true,
          description: 'start-up: buy again (a repeat answers the recorded buy)',
        },
        'leg.resolved': { guard: 'newLeg', actions: 'recordLegs', description: 'a leg resolved (kept)' },
      },
    },
    open: {
      on: {
        // a combo has at least two legs: the first resolved leg cannot make it won
        'leg.resolved': [
          { guard: and(['newLeg', 'legsLost']), target: 'resolved_loss', actions: 'recordLegs', description: 'lost' },
          { guard: 'newLeg', target: 'partial', actions: 'recordLegs', description: 'a first leg won' },
        ],
      },
    },
    partial: {
      on: {
        'leg.resolved': [
          { guard: and(['newLeg', 'legsLost']), target: 'resolved_loss', actions: 'recordLegs', description: 'lost' },
          { guard: and(['newLeg', 'legsWon']), target: 'resolved_win', actions: 'recordLegs', description: 'won' },
          { guard: 'newLeg', actions: 'recordLegs', description: 'one more leg won' },
        ],
      },
    },
    resolved_win: {
      on: {
        redeem: { target: 'redeeming', description: 'the holder claims the payout' },
      },
    },
    redeeming: {
      entry: {
        type: 'redeemAtVenue',
        params: ({ context }) => ({
          op: {
            kind: 'combo_redeem',
            opId: comboRedeemOpId(context.comboId),
            userId: context.userId,
            comboId: context.comboId,
          },
        }),
      },
      on: {
        'venue.applied': { target: 'redeemed', actions: 'recordRedeem', description: 'payout credited' },
        'venue.refused': {
          target: 'resolved_win',
          actions: 'recordRefusal',
          description: 'the venue refused (nothing moved)',
        },
        'venue.retry': {
          target: 'redeeming',
          reenter: true,
          description: 'start-up: redeem again (a repeat answers the recorded redeem)',
        },
      },
    },
    redeemed: { type: 'final' },
    resolved_loss: { type: 'final' },
    expired: { type: 'final' },
    failed: { type: 'final' },
  },
});

/** REST status of each state. */
export const COMBO_STATUS = {
  quoted: 'QUOTED',
  executed: 'EXECUTED',
  open: 'OPEN',
  partial: 'PARTIAL',
  resolved_win: 'RESOLVED_WIN',
  redeeming: 'RESOLVED_WIN',
  redeemed: 'REDEEMED',
  resolved_loss: 'RESOLVED_LOSS',
  expired: 'EXPIRED',
  failed: 'FAILED',
} as const satisfies Record<string, string>;
export type ComboState = keyof typeof COMBO_STATUS;
