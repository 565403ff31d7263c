import { describe, expect, it } from 'vitest';
import { initialTransition, transition, type AnyStateMachine } from 'xstate';
import { getSimplePaths } from 'xstate/graph';
import { WALLET_OP_STATUS, walletOpMachine, type WalletOpEvent, type WalletOpInput } from '../../machines/wallet-op.js';
import {
  WITHDRAWAL_STATUS,
  withdrawalMachine,
  type WithdrawalEvent,
  type WithdrawalInput,
} from '../../machines/withdrawal.js';
import type { WalletOpResult } from '../../engine/venue/port.js';

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

/** Save → JSON → restore, as the engine does between events. */
function roundTrip<M extends AnyStateMachine>(machine: M, s: any): any {
  return machine.resolveState(JSON.parse(JSON.stringify(machine.getPersistedSnapshot(s))));
}
function runActions(actions: Array<{ exec?: unknown; info?: unknown; params?: unknown }>) {
  for (const a of actions) (a.exec as ((i: unknown, p: unknown) => void) | undefined)?.(a.info, a.params);
}

/** Every path of the graph replayed with save/restore between events; each transition of the table covered. */
function modelTest<M extends AnyStateMachine>(
  name: string,
  machine: M,
  inputs: unknown[],
  events: unknown[],
  statuses: Record<string, string>,
  serializeState: (s: any) => string,
  provide: (log: string[]) => M,
  check: (s: any, log: string[]) => void,
) {
  describe(`${name} machine (model-based)`, () => {
    const paths = inputs.flatMap((input) =>
      getSimplePaths(machine, { input: input as never, events: events as never, serializeState }).map((p) =>
        Object.assign(p, { input }),
      ),
    );
    it('reaches every state', () => {
      expect([...new Set(paths.map((p) => String(p.state.value)))].sort()).toEqual(Object.keys(statuses).sort());
    });
    it('covers every transition of the table', () => {
      const covered = new Set<string>();
      for (const p of paths)
        for (const [i, step] of p.steps.entries())
          if (i > 0)
            covered.add(`${String(p.steps[i - 1]!.state.value)} --${step.event.type}--> ${String(step.state.value)}`);
      for (const [from, node] of Object.entries(
        (machine.config.states ?? {}) as Record<string, { on?: Record<string, unknown> }>,
      )) {
        for (const [ev, t] of Object.entries(node.on ?? {})) {
          for (const tr of [t].flat() as Array<{ target?: string }>) {
            const to = tr.target ?? from;
            if (to !== from) expect(covered).toContain(`${from} --${ev}--> ${to}`);
          }
        }
      }
    });
    it.each(paths.map((p, i) => [i, p.steps.map((s) => s.event.type).join(' → '), p] as const))(
      'path %i: %s',
      (_i, _n, path) => {
        const log: string[] = [];
        const m = provide(log);
        let [s, actions] = initialTransition(m, path.input as never) as [any, any[]];
        runActions(actions);
        for (const step of path.steps.slice(1)) {
          s = roundTrip(m, s);
          [s, actions] = transition(m, s, step.event as never) as [any, any[]];
          runActions(actions);
          expect(serializeState(s)).toBe(serializeState(step.state));
        }
        expect(statuses[String(s.value)]).toBeDefined();
        check(s, log);
      },
    );
  });
}

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
