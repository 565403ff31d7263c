import { createActor, type AnyStateMachine } from 'xstate';
import { describe, expect, it } from 'vitest';
import { bracketMachine } from '../../machines/bracket.js';
import { icebergMachine } from '../../machines/iceberg.js';
import { NO_INPUT } from '../../machines/input.js';
import { orderMachine } from '../../machines/order.js';
import { peggedMachine } from '../../machines/pegged.js';
import { stopLossMachine } from '../../machines/stop-loss.js';
import { trailingBuyMachine } from '../../machines/trailing-buy.js';
import { trailingStopMachine } from '../../machines/trailing-stop.js';
import { twapMachine } from '../../machines/twap.js';
import { walletOpMachine } from '../../machines/wallet-op.js';
import { withdrawalMachine } from '../../machines/withdrawal.js';

const machines: Record<string, AnyStateMachine> = {
  order: orderMachine,
  stopLoss: stopLossMachine,
  trailingStop: trailingStopMachine,
  trailingBuy: trailingBuyMachine,
  twap: twapMachine,
  iceberg: icebergMachine,
  pegged: peggedMachine,
  bracket: bracketMachine,
  walletOp: walletOpMachine,
  withdrawal: withdrawalMachine,
};

describe("every machine refuses a missing input with NO_INPUT (each pure step's throwaway actor stays cheap)", () => {
  for (const [name, machine] of Object.entries(machines)) {
    it(name, () => {
      // what XState's transition() / initialTransition() build on every call: an actor without input
      const snapshot = createActor(machine).getSnapshot() as { status: string; error: unknown };
      expect(snapshot.status).toBe('error');
      expect(snapshot.error).toBe(NO_INPUT);
    });
  }
});
