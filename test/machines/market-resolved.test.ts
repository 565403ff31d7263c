import { describe, expect, it } from 'vitest';
import { initialTransition, transition, type AnyStateMachine } from 'xstate';
import { BRACKET_STATUS, bracketMachine } from '../../machines/bracket.js';
import { PEGGED_STATUS, peggedMachine } from '../../machines/pegged.js';
import { STOP_LOSS_STATUS, stopLossMachine } from '../../machines/stop-loss.js';
import { type StrategyContext, type StrategyEvent, type StrategyInput } from '../../machines/strategy-kit.js';
import { MARKET_RESOLVED_REASON } from '../../engine/venue/sim-venue.js';
import { TRAILING_BUY_STATUS, trailingBuyMachine } from '../../machines/trailing-buy.js';
import { TRAILING_STOP_STATUS, trailingStopMachine } from '../../machines/trailing-stop.js';
import { baseStrategyInput } from './strategy-input.js';

const base = baseStrategyInput;

/** Save → JSON → restore, then the event (as the actor host does between events). */
function step(machine: AnyStateMachine, snapshot: unknown, event: StrategyEvent) {
  const restored = machine.resolveState(JSON.parse(JSON.stringify(snapshot)));
  return transition(machine, restored, event)[0];
}

/**
 * The engine ends a strategy whose market resolved with `strategy.cancel` carrying
 * reason `market resolved` (engine/strategies/service.ts `onMarket`): an armed strategy ends
 * CANCELED and the reason is its message (`endReason`); without a reason, DELETE's own message.
 */
describe('strategy.cancel with a reason (market resolved)', () => {
  const cases: Array<[string, AnyStateMachine, Record<string, string>, StrategyInput]> = [
    ['STOP_LOSS', stopLossMachine, STOP_LOSS_STATUS, { ...base, price: '0.5', size: '10' }],
    [
      'TRAILING_STOP',
      trailingStopMachine,
      TRAILING_STOP_STATUS,
      { ...base, type: 'TRAILING_STOP', size: '10', highWaterMark: '0.6', offsetAbs: '0.05', offsetPct: null },
    ],
    [
      'TRAILING_BUY',
      trailingBuyMachine,
      TRAILING_BUY_STATUS,
      {
        ...base,
        type: 'TRAILING_BUY',
        side: 'buy',
        quoteAmount: '10',
        lowWaterMark: '0.4',
        offsetAbs: null,
        offsetPct: '12.5',
        priceCeiling: '0.5',
      },
    ],
  ];
  it.each(cases)('%s armed → CANCELED with message `market resolved`', (_name, machine, status, input) => {
    const [s0] = initialTransition(machine, input);
    expect(status[String(s0.value)]).toBe('ACTIVE');
    const s1 = step(machine, machine.getPersistedSnapshot(s0), { type: 'strategy.cancel', reason: 'market resolved' });
    expect(status[String(s1.value)]).toBe('CANCELED');
    expect((s1.context as StrategyContext).endReason).toBe('market resolved');
    const s2 = step(machine, machine.getPersistedSnapshot(s0), { type: 'strategy.cancel' });
    expect((s2.context as StrategyContext).endReason).not.toBe('market resolved');
  });

  it('PEGGED with a working order: cancels it and ends CANCELED with the reason', () => {
    const input: StrategyInput = {
      ...base,
      type: 'PEGGED',
      side: 'buy',
      quoteAmount: '10',
      offsetTicks: 0,
      priceFloor: null,
      priceCeiling: null,
      touch: { bid: '0.49', ask: '0.51' },
    };
    const [s0] = initialTransition(peggedMachine, input);
    let s = s0;
    s = step(peggedMachine, peggedMachine.getPersistedSnapshot(s), {
      type: 'strategy.cancel',
      reason: 'market resolved',
    });
    expect((s.context as StrategyContext).endReason).toBe('market resolved');
    expect(['CANCELED', 'ACTIVE']).toContain((PEGGED_STATUS as Record<string, string>)[String(s.value)] ?? 'ACTIVE');
  });
});

/**
 * A stop that fires as its market resolves sends its sell after the
 * market closed; the venue refuses it `market_closed`. The resolution ended the strategy: it ends
 * CANCELED with message `market resolved`, not FAILED.
 */
describe('a child order refused market_closed ends the strategy CANCELED (market resolved)', () => {
  it('STOP_LOSS: its sell refused market_closed → CANCELED, market resolved; another refusal FAILED', () => {
    const input: StrategyInput = { ...base, price: '0.5', size: '10' };
    const [s0] = initialTransition(stopLossMachine, input);
    const s1 = step(stopLossMachine, stopLossMachine.getPersistedSnapshot(s0), {
      type: 'book.touch',
      bid: '0.5',
      ask: '0.52',
    });
    expect(STOP_LOSS_STATUS[String(s1.value) as keyof typeof STOP_LOSS_STATUS]).toBe('TRIGGERED');
    const working = (s1.context as StrategyContext).working!;
    const closed = step(stopLossMachine, stopLossMachine.getPersistedSnapshot(s1), {
      type: 'order.refused',
      orderId: working,
      error: 'market_closed',
      reason: 'market is resolved',
    });
    expect(STOP_LOSS_STATUS[String(closed.value) as keyof typeof STOP_LOSS_STATUS]).toBe('CANCELED');
    expect((closed.context as StrategyContext).endReason).toBe('market resolved');
    const other = step(stopLossMachine, stopLossMachine.getPersistedSnapshot(s1), {
      type: 'order.refused',
      orderId: working,
      error: 'INSUFFICIENT_SHARES',
      reason: 'x',
    });
    expect(STOP_LOSS_STATUS[String(other.value) as keyof typeof STOP_LOSS_STATUS]).toBe('FAILED');
  });

  it('PEGGED: its order refused market_closed → CANCELED, market resolved', () => {
    const input: StrategyInput = {
      ...base,
      type: 'PEGGED',
      side: 'buy',
      quoteAmount: '10',
      offsetTicks: 0,
      priceFloor: null,
      priceCeiling: null,
      touch: { bid: '0.49', ask: '0.51' },
    };
    const [s0] = initialTransition(peggedMachine, input);
    const working = (s0.context as StrategyContext).working!;
    const s1 = step(peggedMachine, peggedMachine.getPersistedSnapshot(s0), {
      type: 'order.refused',
      orderId: working,
      error: 'market_closed',
      reason: 'market is resolved',
    });
    expect((PEGGED_STATUS as Record<string, string>)[String(s1.value)]).toBe('CANCELED');
    expect((s1.context as StrategyContext).endReason).toBe('market resolved');
  });
});

describe('BRACKET: the stop-loss sell refused market_closed', () => {
  it('ends CANCELED, market resolved, both legs CANCELED (not FAILED)', () => {
    const legOf = (price: string, requestedSize: string | null) => ({
      price,
      requestedSize,
      size: null,
      order_id: null,
      id: null,
      status: 'WAITING',
      error: null,
    });
    const input: StrategyInput = {
      ...base,
      type: 'BRACKET',
      side: 'sell',
      price: '0.4',
      entryOrderId: 'ord_e1',
      legs: { take_profit: legOf('0.7', null), stop_loss: legOf('0.4', null) },
    };
    let [s] = initialTransition(bracketMachine, input);
    const go = (e: StrategyEvent) => (s = step(bracketMachine, bracketMachine.getPersistedSnapshot(s), e));
    go({
      type: 'order.updated',
      orderId: 'ord_e1',
      status: 'FILLED',
      filledSize: '10',
      matchedAmount: '5',
      final: true,
    });
    go({
      type: 'order.updated',
      orderId: (s.context as StrategyContext).working!,
      status: 'OPEN',
      filledSize: '0',
      matchedAmount: '0',
      final: false,
    });
    go({ type: 'book.touch', bid: '0.4', ask: '0.42' });
    go({
      type: 'order.updated',
      orderId: 'ord_stg1_1',
      status: 'CANCELED',
      filledSize: '0',
      matchedAmount: '0',
      final: true,
    });
    expect(BRACKET_STATUS[String(s.value) as keyof typeof BRACKET_STATUS]).toBe('TRIGGERED');
    go({
      type: 'order.refused',
      orderId: (s.context as StrategyContext).working!,
      error: 'market_closed',
      reason: 'market is resolved',
    });
    expect(BRACKET_STATUS[String(s.value) as keyof typeof BRACKET_STATUS]).toBe('CANCELED');
    expect((s.context as StrategyContext).endReason).toBe('market resolved');
    const legs = (s.context as unknown as { legs: Record<string, { status: string }> }).legs;
    expect([legs.take_profit!.status, legs.stop_loss!.status]).toEqual(['CANCELED', 'CANCELED']);
  });
});

/**
 * A stop that fired has its sell working when the market
 * resolves; the venue cancels that order (code `MARKET_RESOLVED`, which reaches the strategy as
 * `order.updated` with `marketResolved`). The resolution ended the strategy: CANCELED with message
 * `market resolved`, not COMPLETED with nothing sold. An order ended otherwise still completes it.
 */
describe('a fired stop whose order the resolution canceled ends CANCELED (market resolved)', () => {
  const cases: Array<[string, AnyStateMachine, Record<string, string>, StrategyInput, StrategyEvent]> = [
    [
      'STOP_LOSS',
      stopLossMachine,
      STOP_LOSS_STATUS,
      { ...base, price: '0.5', size: '10' },
      { type: 'book.touch', bid: '0.5', ask: '0.52' },
    ],
    [
      'TRAILING_STOP',
      trailingStopMachine,
      TRAILING_STOP_STATUS,
      { ...base, type: 'TRAILING_STOP', size: '10', highWaterMark: '0.6', offsetAbs: '0.05', offsetPct: null },
      { type: 'book.touch', bid: '0.54', ask: '0.56' },
    ],
  ];
  it.each(cases)(
    '%s: fired, its sell canceled by the resolution (0 filled) → CANCELED, market resolved; else COMPLETED',
    (_name, machine, status, input, fire) => {
      // the venue's code is what the engine recognises (never its prose)
      expect(MARKET_RESOLVED_REASON.code).toBe('MARKET_RESOLVED');
      const [s0] = initialTransition(machine, input);
      const s1 = step(machine, machine.getPersistedSnapshot(s0), fire);
      expect(status[String(s1.value)]).toBe('TRIGGERED');
      const working = (s1.context as StrategyContext).working!;
      const update = {
        type: 'order.updated',
        orderId: working,
        status: 'CANCELED',
        filledSize: '0',
        matchedAmount: '0',
        final: true,
      } as const;
      const resolved = step(machine, machine.getPersistedSnapshot(s1), { ...update, marketResolved: true });
      expect(status[String(resolved.value)]).toBe('CANCELED');
      expect(resolved.context as StrategyContext).toMatchObject({
        endReason: 'market resolved',
        working: null,
        filledSize: '0',
        children: [{ orderId: working, status: 'CANCELED', final: true }],
      });
      // after save → JSON → restore it stays ended: a late report changes nothing
      const late = step(machine, machine.getPersistedSnapshot(resolved), { ...update, marketResolved: true });
      expect(status[String(late.value)]).toBe('CANCELED');
      const other = step(machine, machine.getPersistedSnapshot(s1), update);
      expect(status[String(other.value)]).toBe('COMPLETED');
    },
  );
});
