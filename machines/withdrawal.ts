/**
 * Withdrawal of pUSD to an external address (spec 4.6 `POST /v2/trade/withdraw`): a
 * simulated ERC20 transfer that confirms after a block delay.
 *
 * Pure: no I/O. The engine supplies two side effects through `.provide()`: `debitAtVenue` (the
 * amount leaves the wallet at once; idempotent by op id `<id>:debit`) and `creditAtVenue` (a
 * failed transfer's amount comes back; op id `<id>:credit`). The venue answers `venue.debited`
 * (with when it applied) / `venue.refused` / `venue.credited`. The block delay is data: the
 * confirmation deadline `deadlines.confirm` = debit time + `blockDelayMs`, armed by the actor host
 * as a durable timer that comes back as a guarded `timer.fired`. A transfer the simulated chain
 * reverts (`revertReason` set at creation: a transfer to the zero address) fails at that deadline
 * and is refunded. At start-up an actor in `debiting` or `refunding` gets `venue.retry`, which
 * runs its venue command again (the venue answers a repeat with the recorded result): so a
 * withdrawal interrupted by a crash ends CONFIRMED or FAILED exactly once.
 *
 * | state     | REST status | final | on                                                                   |
 * |-----------|-------------|-------|----------------------------------------------------------------------|
 * | debiting  | `PENDING`   | no    | venue.debited → pending (deadline armed); venue.refused → rejected;  |
 * |           |             |       | venue.retry → debiting                                               |
 * | pending   | `PENDING`   | no    | timer.fired(confirm, current) → confirmed, or → refunding when the   |
 * |           |             |       | transfer reverts                                                     |
 * | refunding | `PENDING`   | no    | venue.credited → failed; venue.retry → refunding                     |
 * | confirmed | `CONFIRMED` | yes   |                                                                      |
 * | failed    | `FAILED`    | yes   | (amount returned)                                                    |
 * | rejected  | `FAILED`    | yes   | (nothing was taken)                                                  |
 */
import { and, assign, setup } from 'xstate';
import type { WalletOp, WalletOpResult } from '../engine/venue/port.js';
import { given } from './input.js';

/** Input of a withdrawal actor. */
export interface WithdrawalInput {
  /** Actor id (`wd_…`). */
  withdrawalId: string;
  userId: string;
  /** Destination, EIP-55 checksummed. */
  toAddress: string;
  /** Token contract address (checksummed) and symbol. */
  token: string;
  symbol: string;
  /** Human units of the token (dollars for pUSD), decimal string. */
  amount: string;
  /** Simulated transaction hash, `0x` + 64 hex. */
  transactionHash: string;
  /** Simulated block delay before the transfer confirms, ms. */
  blockDelayMs: number;
  /** Set when the simulated chain will revert the transfer (its reason); null = it confirms. */
  revertReason: string | null;
  /** Epoch ms. */
  createdAtMs: number;
}

export interface WithdrawalContext extends WithdrawalInput {
  /** The debit as the venue applied it, once applied. */
  debit: WalletOpResult | null;
  /** The refund of a failed transfer, once applied. */
  credit: WalletOpResult | null;
  /** Confirmation (or revert) time, epoch ms. */
  settledAtMs: number | null;
  /** Why it failed: the venue's refusal code, or `TRANSFER_REVERTED`. */
  error: string | null;
  reason: string | null;
  /** Timer name → epoch ms (see engine/actor-host.ts). */
  deadlines: { confirm?: number };
}

export type WithdrawalEvent =
  | { type: 'venue.debited'; result: WalletOpResult }
  | { type: 'venue.credited'; result: WalletOpResult }
  | { type: 'venue.refused'; error: string; reason: string }
  | { type: 'venue.retry' }
  | { type: 'timer.fired'; name: string; atMs: number };

/** Machine definition version, stored with every snapshot. */
export const WITHDRAWAL_MACHINE_VERSION = 1;

/** Venue op ids of a withdrawal's debit and refund. */
export const debitOpId = (withdrawalId: string) => `${withdrawalId}:debit`;
export const creditOpId = (withdrawalId: string) => `${withdrawalId}:credit`;

export const withdrawalMachine = setup({
  types: { context: {} as WithdrawalContext, input: {} as WithdrawalInput, events: {} as WithdrawalEvent },
  actions: {
    /** Side effect: take the amount from the wallet (idempotent by op id). */
    debitAtVenue: (_, _params: { op: WalletOp }) => {},
    /** Side effect: return the amount of a reverted transfer (idempotent by op id). */
    creditAtVenue: (_, _params: { op: WalletOp }) => {},
    recordDebit: assign(({ context, event }) =>
      event.type === 'venue.debited'
        ? { debit: event.result, deadlines: { confirm: event.result.atMs + context.blockDelayMs } }
        : {},
    ),
    recordCredit: assign({ credit: ({ event }) => (event.type === 'venue.credited' ? event.result : null) }),
    recordRefusal: assign(({ event }) =>
      event.type === 'venue.refused' ? { error: event.error, reason: event.reason } : {},
    ),
    recordConfirmed: assign(({ event }) => ({
      settledAtMs: event.type === 'timer.fired' ? event.atMs : null,
      deadlines: {},
    })),
    recordReverted: assign(({ context, event }) => ({
      settledAtMs: event.type === 'timer.fired' ? event.atMs : null,
      deadlines: {},
      error: 'TRANSFER_REVERTED',
      reason: context.revertReason,
    })),
  },
  guards: {
    confirmDue: ({ context, event }) =>
      event.type === 'timer.fired' && event.name === 'confirm' && context.deadlines.confirm === event.atMs,
    reverts: ({ context }) => context.revertReason !== null,
  },
}).createMachine({
  id: 'withdrawal',
  context: ({ input }) => ({
    ...given(input),
    debit: null,
    credit: null,
    settledAtMs: null,
    error: null,
    reason: null,
    deadlines: {},
  }),
  initial: 'debiting',
  states: {
    debiting: {
      entry: {
        type: 'debitAtVenue',
        params: ({ context }) => ({
          op: {
            kind: 'withdraw',
            opId: debitOpId(context.withdrawalId),
            userId: context.userId,
            amount: context.amount,
          },
        }),
      },
      on: {
        'venue.debited': {
          target: 'pending',
          actions: 'recordDebit',
          description: 'the amount left the wallet; the transfer waits for its block',
        },
        'venue.refused': {
          target: 'rejected',
          actions: 'recordRefusal',
          description: 'the wallet could not cover it (nothing taken)',
        },
        'venue.retry': {
          target: 'debiting',
          reenter: true,
          description: 'start-up: debit again (a repeat answers the recorded debit)',
        },
      },
    },
    pending: {
      on: {
        'timer.fired': [
          {
            guard: and(['confirmDue', 'reverts']),
            target: 'refunding',
            actions: 'recordReverted',
            description: 'block mined, the transfer reverted: refund',
          },
          {
            guard: 'confirmDue',
            target: 'confirmed',
            actions: 'recordConfirmed',
            description: 'block mined: the transfer is confirmed',
          },
        ],
      },
    },
    refunding: {
      entry: {
        type: 'creditAtVenue',
        params: ({ context }) => ({
          op: {
            kind: 'credit',
            opId: creditOpId(context.withdrawalId),
            userId: context.userId,
            amount: context.amount,
          },
        }),
      },
      on: {
        'venue.credited': {
          target: 'failed',
          actions: 'recordCredit',
          description: 'the amount is back in the wallet',
        },
        'venue.retry': {
          target: 'refunding',
          reenter: true,
          description: 'start-up: refund again (a repeat answers the recorded refund)',
        },
      },
    },
    confirmed: { type: 'final' },
    failed: { type: 'final' },
    rejected: { type: 'final' },
  },
});

/** REST status of each state. */
export const WITHDRAWAL_STATUS = {
  debiting: 'PENDING',
  pending: 'PENDING',
  refunding: 'PENDING',
  confirmed: 'CONFIRMED',
  failed: 'FAILED',
  rejected: 'FAILED',
} as const satisfies Record<string, string>;
export type WithdrawalState = keyof typeof WITHDRAWAL_STATUS;
