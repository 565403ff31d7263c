import { describe, expect, it } from 'vitest';
import { initialTransition, transition } from 'xstate';
import {
  COMBO_STATUS,
  comboMachine,
  positionStatusOf,
  type ComboEvent,
  type ComboInput,
} from '../../machines/combo.js';
import type { WalletOpResult } from '../../engine/venue/port.js';
import { modelTest, roundTrip } from './model-test.js';

const result = (kind: WalletOpResult['kind'], pusdDelta: string): WalletOpResult => ({
  opId: 'x',
  kind,
  transactionHash: `0x${'3'.repeat(64)}`,
  atMs: 9_500,
  conditionId: 'co_1',
  pusdDelta,
  shares: [],
  pusdBalance: '0',
  positions: [],
  combo: { comboId: 'co_1', sharesDelta: kind === 'combo_buy' ? '100' : '-100' },
});

const input: ComboInput = {
  comboId: 'co_1',
  quoteId: 'qt_1',
  rfqId: 'rfq_1',
  userId: 'u1',
  legs: [
    { tokenId: 'A', conditionId: '0xa', outcome: null, resolvedAtMs: null },
    { tokenId: 'B', conditionId: '0xb', outcome: null, resolvedAtMs: null },
  ],
  notionalUsd: '10',
  feeUsd: '0.1',
  debitUsd: '10.1',
  priceCents: '10',
  independentPriceCents: '9',
  shares: '100',
  makerAmountUsd: '90',
  buyTransactionHash: `0x${'1'.repeat(64)}`,
  redeemTransactionHash: `0x${'2'.repeat(64)}`,
  createdAtMs: 1_500,
  expiresAtMs: 10_000,
};

const EVENTS: ComboEvent[] = [
  { type: 'accept', atMs: 10_000 },
  { type: 'accept', atMs: 10_001 },
  { type: 'timer.fired', name: 'expiry', atMs: 10_000 },
  { type: 'timer.fired', name: 'expiry', atMs: 9_999 },
  { type: 'leg.resolved', tokenId: 'A', won: true, atMs: 20_000 },
  { type: 'leg.resolved', tokenId: 'B', won: true, atMs: 21_000 },
  { type: 'leg.resolved', tokenId: 'B', won: false, atMs: 21_000 },
  { type: 'venue.refused', error: 'INSUFFICIENT_BALANCE', reason: 'no' },
  { type: 'venue.retry' },
  { type: 'redeem', atMs: 30_000 },
];
/** venue.applied answers the command the state sent: the buy in `executed`, the redeem in `redeeming`. */
const applied = (kind: 'combo_buy' | 'combo_redeem'): ComboEvent => ({
  type: 'venue.applied',
  result: result(kind, kind === 'combo_buy' ? '-10.1' : '100'),
});

const serialize = (s: any) =>
  JSON.stringify([
    s.value,
    s.context.legs.map((l: any) => l.outcome),
    s.context.deadlines,
    Boolean(s.context.buy),
    Boolean(s.context.redeem),
    s.context.error,
  ]);

modelTest(
  'combo',
  comboMachine,
  [input],
  // one venue.applied in the walk: the machine takes it as the answer to the command its state sent
  [...EVENTS, applied('combo_buy')],
  COMBO_STATUS,
  serialize,
  (log) =>
    comboMachine.provide({
      actions: {
        buyAtVenue: (_, { op }) => void log.push(`${op.kind} ${op.opId} ${'amount' in op ? op.amount : ''}`),
        redeemAtVenue: (_, { op }) => void log.push(`${op.kind} ${op.opId}`),
      },
    }) as never,
  (s, log) => {
    const v = String(s.value);
    if (v === 'quoted' || v === 'expired') expect(log).toEqual([]);
    if (v === 'expired') expect(s.context.deadlines).toEqual({});
    if (!['quoted', 'expired'].includes(v)) {
      expect(log[0]).toBe('combo_buy co_1:buy 10.1');
      expect(s.context.acceptedAtMs).toBe(10_000);
    }
    if (['open', 'partial', 'resolved_win', 'resolved_loss', 'redeemed', 'redeeming'].includes(v)) {
      expect(s.context.buy).not.toBeNull();
      expect(COMBO_STATUS[v as keyof typeof COMBO_STATUS]).toBe(
        v === 'redeemed' ? 'REDEEMED' : v === 'redeeming' ? 'RESOLVED_WIN' : positionStatusOf(s.context.legs),
      );
    }
    if (v === 'redeeming' || v === 'redeemed') expect(log).toContain('combo_redeem co_1:redeem');
    if (v === 'failed') expect(s.context.error).toBe('INSUFFICIENT_BALANCE');
  },
);

describe('combo machine', () => {
  it('an accept after expires_at changes nothing, whether or not the expiry timer fired', () => {
    const [s] = initialTransition(comboMachine, input);
    expect(s.context.deadlines).toEqual({ expiry: 10_000 });
    const [late] = transition(comboMachine, roundTrip(comboMachine, s), { type: 'accept', atMs: 10_001 });
    expect(late.value).toBe('quoted');
    const [stale] = transition(comboMachine, s, { type: 'timer.fired', name: 'expiry', atMs: 9_999 });
    expect(stale.value).toBe('quoted');
    const [inTime] = transition(comboMachine, stale, { type: 'accept', atMs: 10_000 });
    expect(inTime.value).toBe('executed');
    expect(inTime.context.deadlines).toEqual({});
  });

  it('legs resolved before the buy is applied decide where it lands; a repeated leg changes nothing', () => {
    let [s] = initialTransition(comboMachine, input);
    [s] = transition(comboMachine, s, { type: 'leg.resolved', tokenId: 'A', won: true, atMs: 9_000 });
    [s] = transition(comboMachine, s, { type: 'accept', atMs: 9_500 });
    [s] = transition(comboMachine, roundTrip(comboMachine, s), {
      type: 'leg.resolved',
      tokenId: 'B',
      won: true,
      atMs: 9_600,
    });
    const [again] = transition(comboMachine, s, { type: 'leg.resolved', tokenId: 'B', won: false, atMs: 9_700 });
    expect(again.context.legs[1]).toMatchObject({ outcome: 'WIN', resolvedAtMs: 9_600 });
    [s] = transition(comboMachine, s, applied('combo_buy'));
    expect(s.value).toBe('resolved_win');
    [s] = transition(comboMachine, s, { type: 'redeem', atMs: 10_000 });
    [s] = transition(comboMachine, s, applied('combo_redeem'));
    expect(s.value).toBe('redeemed');
    expect(s.context.redeem?.pusdDelta).toBe('100');
  });

  it('positionStatusOf: none → OPEN, some won → PARTIAL, all won → RESOLVED_WIN, any lost → RESOLVED_LOSS', () => {
    expect(positionStatusOf([{ outcome: null }, { outcome: null }])).toBe('OPEN');
    expect(positionStatusOf([{ outcome: 'WIN' }, { outcome: null }])).toBe('PARTIAL');
    expect(positionStatusOf([{ outcome: 'WIN' }, { outcome: 'WIN' }])).toBe('RESOLVED_WIN');
    expect(positionStatusOf([{ outcome: null }, { outcome: 'LOSS' }])).toBe('RESOLVED_LOSS');
  });
});
