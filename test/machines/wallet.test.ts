import { describe, expect, it } from 'vitest';
import { initialTransition, transition } from 'xstate';
import { WALLET_OP_STATUS, walletOpMachine, type WalletOpEvent, type WalletOpInput } from '../../machines/wallet-op.js';
import {
  WITHDRAWAL_STATUS,
  withdrawalMachine,
  type WithdrawalEvent,
  type WithdrawalInput,
} from '../../machines/withdrawal.js';
import type { WalletOpResult } from '../../engine/venue/port.js';
import { modelTest, roundTrip } from './model-test.js';

const result = (kind: WalletOpResult['kind'], atMs: number, pusdDelta: string): WalletOpResult => ({
  opId: 'x',
  kind,
  transactionHash: `0x${'1'.repeat(64)}`,
  atMs,
  conditionId: null,
  pusdDelta,
  shares: [],
  pusdBalance: '0',
  positions: [],
});

const opInput: WalletOpInput = {
  opId: 'wop_1',
  userId: 'u1',
  type: 'SPLIT',
  conditionId: `0x${'ab'.repeat(32)}`,
  amount: '10',
  createdAtMs: 1_000,
};
modelTest(
  'wallet-op',
  walletOpMachine,
  [opInput],
  [
    { type: 'venue.applied', result: result('split', 1_001, '-10') },
    { type: 'venue.refused', error: 'INSUFFICIENT_BALANCE', reason: 'no' },
    { type: 'venue.retry' },
  ] satisfies WalletOpEvent[],
  WALLET_OP_STATUS,
  (s) => JSON.stringify([s.value, s.context.result?.pusdDelta ?? null, s.context.error]),
  (log) =>
    walletOpMachine.provide({
      actions: { applyAtVenue: (_, { op }) => void log.push(`apply ${op.kind} ${op.opId}`) },
    }) as never,
  (s, log) => {
    expect(log[0]).toBe('apply split wop_1');
    if (s.value === 'done') expect(s.context.result).not.toBeNull();
    if (s.value === 'failed') expect(s.context.error).toBe('INSUFFICIENT_BALANCE');
  },
);

const wdInput: WithdrawalInput = {
  withdrawalId: 'wd_1',
  userId: 'u1',
  toAddress: '0x0000000000000000000000000000000000000000',
  token: '0x1',
  symbol: 'pUSD',
  amount: '5',
  transactionHash: `0x${'2'.repeat(64)}`,
  blockDelayMs: 2_000,
  revertReason: 'ERC20: transfer to the zero address',
  createdAtMs: 1_000,
};
const WD_EVENTS: WithdrawalEvent[] = [
  { type: 'venue.debited', result: result('withdraw', 1_000, '-5') },
  { type: 'venue.credited', result: result('credit', 3_100, '5') },
  { type: 'venue.refused', error: 'INSUFFICIENT_BALANCE', reason: 'no' },
  { type: 'venue.retry' },
  { type: 'timer.fired', name: 'confirm', atMs: 3_000 },
  { type: 'timer.fired', name: 'confirm', atMs: 2_999 },
];
const wdSerialize = (s: any) =>
  JSON.stringify([s.value, s.context.deadlines, Boolean(s.context.debit), Boolean(s.context.credit), s.context.error]);
const wdProvide = (log: string[]) =>
  withdrawalMachine.provide({
    actions: {
      debitAtVenue: (_, { op }) => void log.push(`${op.kind} ${op.opId}`),
      creditAtVenue: (_, { op }) => void log.push(`${op.kind} ${op.opId}`),
    },
  }) as never;
const wdCheck = (s: any, log: string[]) => {
  expect(log[0]).toBe('withdraw wd_1:debit');
  if (s.value === 'failed') {
    expect(s.context.debit && s.context.credit).toBeTruthy();
    expect(log).toContain('credit wd_1:credit');
  }
  if (s.value === 'confirmed') expect(s.context.credit).toBeNull();
  if (s.status === 'done') expect(s.context.deadlines).toEqual({});
};
// a reverting transfer (to the zero address) reaches refunding and failed; a good one confirmed
modelTest(
  'withdrawal',
  withdrawalMachine,
  [wdInput, { ...wdInput, revertReason: null }],
  WD_EVENTS,
  WITHDRAWAL_STATUS,
  wdSerialize,
  wdProvide,
  wdCheck,
);

describe('withdrawal machine', () => {
  it('arms its confirmation deadline from the debit time; a stale timer changes nothing', () => {
    let [s] = initialTransition(withdrawalMachine, { ...wdInput, revertReason: null });
    [s] = transition(withdrawalMachine, s, WD_EVENTS[0]!);
    expect(s.value).toBe('pending');
    expect(s.context.deadlines).toEqual({ confirm: 3_000 });
    const [stale] = transition(withdrawalMachine, s, WD_EVENTS[5]!);
    expect(stale.value).toBe('pending');
    const [done] = transition(withdrawalMachine, roundTrip(withdrawalMachine, s), WD_EVENTS[4]!);
    expect(done.value).toBe('confirmed');
    expect(done.context.settledAtMs).toBe(3_000);
    expect(WITHDRAWAL_STATUS[done.value as keyof typeof WITHDRAWAL_STATUS]).toBe('CONFIRMED');
  });
});
