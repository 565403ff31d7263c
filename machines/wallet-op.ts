/**
 * Wallet operation on a market's outcome tokens (spec 4.6 `POST /v2/trade/positions/split`,
 * `/merge`, `/redeem`): one simulated on-chain transaction of the conditional-token framework.
 *
 * Pure: no I/O. The engine supplies the side effect `applyAtVenue` through `.provide()` (the
 * venue applies the operation once per `opId`, so applying again after a restart is harmless) and
 * answers with `venue.applied` (the venue's result) or `venue.refused`. At start-up an actor still
 * `submitting` gets `venue.retry`, which applies again (the venue answers the recorded result).
 *
 * | state      | REST status | final | on                                                |
 * |------------|-------------|-------|---------------------------------------------------|
 * | submitting | `PENDING`   | no    | venue.applied → done; venue.refused → failed;     |
 * |            |             |       | venue.retry → submitting (re-entered)             |
 * | done       | `CONFIRMED` | yes   |                                                   |
 * | failed     | `FAILED`    | yes   |                                                   |
 */
import { assign, setup } from 'xstate';
import type { WalletOp, WalletOpResult } from '../engine/venue/port.js';
import { given } from './input.js';

/** Activity type of each operation (the `type` of the activity row). */
export type WalletOpType = 'SPLIT' | 'MERGE' | 'REDEEM';

/** Input of a wallet-operation actor; quantities as decimal strings. */
export interface WalletOpInput {
  /** Actor id and venue op id (`wop_…`). */
  opId: string;
  userId: string;
  type: WalletOpType;
  conditionId: string;
  /**
   * Dollars = full sets of shares (split, merge); a redeem of one outcome: its shares to redeem, or
   * null (the whole balance).
   */
  amount: string | null;
  /** Redeem of one outcome: its index in the market's tokens; null (or absent) for every outcome. */
  outcomeIndex?: number | null;
  /** Redeem of one outcome: its token id; null (or absent) for every outcome. */
  tokenId?: string | null;
  /** Epoch ms. */
  createdAtMs: number;
}

export interface WalletOpContext extends WalletOpInput {
  /** What the venue did, once applied. */
  result: WalletOpResult | null;
  /** Refusal code (`INSUFFICIENT_BALANCE`, `MARKET_NOT_RESOLVED`, …) and reason, once refused. */
  error: string | null;
  reason: string | null;
}

export type WalletOpEvent =
  | { type: 'venue.applied'; result: WalletOpResult }
  | { type: 'venue.refused'; error: string; reason: string }
  | { type: 'venue.retry' };

/** Machine definition version, stored with every snapshot. */
export const WALLET_OP_MACHINE_VERSION = 1;

/** The venue command of a wallet-operation actor. */
export function walletOpOf(c: WalletOpInput): WalletOp {
  if (c.type === 'REDEEM') {
    return {
      kind: 'redeem',
      opId: c.opId,
      userId: c.userId,
      conditionId: c.conditionId,
      ...(c.tokenId ? { tokenId: c.tokenId, ...(c.amount !== null ? { amount: c.amount } : {}) } : {}),
    };
  }
  return {
    kind: c.type === 'SPLIT' ? 'split' : 'merge',
    opId: c.opId,
    userId: c.userId,
    conditionId: c.conditionId,
    amount: c.amount!,
  };
}

export const walletOpMachine = setup({
  types: { context: {} as WalletOpContext, input: {} as WalletOpInput, events: {} as WalletOpEvent },
  actions: {
    /** Side effect: apply the operation at the venue (idempotent by op id). */
    applyAtVenue: (_, _params: { op: WalletOp }) => {},
    recordResult: assign({ result: ({ event }) => (event.type === 'venue.applied' ? event.result : null) }),
    recordRefusal: assign(({ event }) =>
      event.type === 'venue.refused' ? { error: event.error, reason: event.reason } : {},
    ),
  },
}).createMachine({
  id: 'walletOp',
  context: ({ input }) => ({ ...given(input), result: null, error: null, reason: null }),
  initial: 'submitting',
  states: {
    submitting: {
      entry: { type: 'applyAtVenue', params: ({ context }) => ({ op: walletOpOf(context) }) },
      on: {
        'venue.applied': { target: 'done', actions: 'recordResult', description: 'the venue applied it' },
        'venue.refused': {
          target: 'failed',
          actions: 'recordRefusal',
          description: 'the venue refused it (nothing changed)',
        },
        'venue.retry': {
          target: 'submitting',
          reenter: true,
          description: 'start-up: apply again (the venue answers a repeat with its result)',
        },
      },
    },
    done: { type: 'final' },
    failed: { type: 'final' },
  },
});

/** REST status of each state. */
export const WALLET_OP_STATUS = {
  submitting: 'PENDING',
  done: 'CONFIRMED',
  failed: 'FAILED',
} as const satisfies Record<string, string>;
export type WalletOpState = keyof typeof WALLET_OP_STATUS;
