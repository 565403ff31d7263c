import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  AdmissionGate,
  LoopBudget,
  MAX_RELEASES_PER_ITERATION,
  type AdmissionLimits,
  type LoopRuntime,
} from '../../api/admission.js';

/**
 * An event loop the test drives: an injected clock (ms) and a check phase that runs the callbacks
 * queued before it started, leaving those queued during it for the next one (as Node's
 * `setImmediate` does). "Poll phase" work is whatever the test calls between check phases.
 */
class FakeLoop {
  nowMs = 0;
  private immediates: (() => void)[] = [];
  readonly runtime: LoopRuntime = { nowMs: () => this.nowMs, defer: (fn) => void this.immediates.push(fn) };

  /** Runs one check phase; returns how many callbacks ran. */
  checkPhase(): number {
    const batch = this.immediates;
    this.immediates = [];
    for (const fn of batch) fn();
    return batch.length;
  }

  get pending(): number {
    return this.immediates.length;
  }
}

interface Probe {
  admitted: number[];
  shed: { id: number; why: string }[];
  /**
   * Arrival of request `id`, whose work takes `workMs` of the
   * clock and, unless `hold`, finishes at once (store in memory).
   */
  arrive(id: number, opts?: { workMs?: number; hold?: boolean; gone?: () => boolean }): void;
}

function probe(loop: FakeLoop, gate: AdmissionGate): Probe {
  const p: Probe = {
    admitted: [],
    shed: [],
    arrive: (id, opts = {}) =>
      gate.enter({
        admit: () => {
          p.admitted.push(id);
          loop.nowMs += opts.workMs ?? 1;
          if (!opts.hold) gate.leave();
        },
        shed: (why) => p.shed.push({ id, why }),
        gone: opts.gone ?? (() => false),
      }),
  };
  return p;
}

const limits = (over: Partial<AdmissionLimits> = {}): AdmissionLimits => ({
  concurrency: 64,
  queueLength: 512,
  queueWaitMs: 2000,
  loopBudgetMs: 4,
  ...over,
});

describe('LoopBudget (injected clock and check phase)', () => {
  it('a window opens at the first take, allows work under budgetMs, closes at the next check phase', () => {
    const loop = new FakeLoop();
    const budget = new LoopBudget(4, loop.runtime);
    loop.nowMs = 1000; // idle time before the window is not counted
    expect(budget.open).toBe(false);
    expect(budget.take()).toBe(true);
    expect(budget.open).toBe(true);
    expect(loop.pending).toBe(1); // the sentinel that closes it
    loop.nowMs += 3.9;
    expect(budget.take()).toBe(true);
    expect(loop.pending).toBe(1); // one sentinel per window
    loop.nowMs += 0.1;
    expect(budget.take()).toBe(false);
    expect(loop.checkPhase()).toBe(1);
    expect(budget.open).toBe(false);
    expect(loop.pending).toBe(0); // nothing queued while no one takes: no busy loop
    loop.nowMs += 50;
    expect(budget.take()).toBe(true);
  });

  it('budgetMs 0: every take is allowed and nothing is queued', () => {
    const loop = new FakeLoop();
    const budget = new LoopBudget(0, loop.runtime);
    for (let i = 0; i < 5; i++) {
      expect(budget.take()).toBe(true);
      loop.nowMs += 100;
    }
    expect(loop.pending).toBe(0);
  });
});

describe('AdmissionGate: per-iteration budget, FIFO, concurrency, shedding (injected clock and check phase)', () => {
  beforeEach(() => vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] }));
  afterEach(() => vi.useRealTimers());

  it('one poll phase runs until the budget is spent; the rest follow in later check phases, in order', () => {
    const loop = new FakeLoop();
    const gate = new AdmissionGate(limits(), loop.runtime);
    const p = probe(loop, gate);
    for (let id = 0; id < 20; id++) p.arrive(id); // 1 ms each, budget 4 ms
    expect(p.admitted).toEqual([0, 1, 2, 3]); // at 0, 1, 2, 3 ms; at 4 ms the budget is spent
    expect(gate.waitingCount).toBe(16);
    const perPhase: number[] = [];
    while (gate.waitingCount > 0) {
      const before = p.admitted.length;
      loop.checkPhase();
      perPhase.push(p.admitted.length - before);
    }
    expect(perPhase.every((n) => n > 0 && n <= 4)).toBe(true); // never more than the budget's worth per check phase
    expect(p.admitted).toEqual(Array.from({ length: 20 }, (_, i) => i)); // first come, first served
    expect(p.shed).toEqual([]);
  });

  it('a request arriving while others wait waits behind them, even with budget left (FIFO)', () => {
    const loop = new FakeLoop();
    const gate = new AdmissionGate(limits(), loop.runtime);
    const p = probe(loop, gate);
    for (let id = 0; id < 6; id++) p.arrive(id);
    expect(p.admitted).toEqual([0, 1, 2, 3]);
    loop.checkPhase(); // window closed, a new one: 4 and 5 released
    expect(p.admitted).toEqual([0, 1, 2, 3, 4, 5]);
    // next poll phase, window of the check phase still open: 6 at 2 ms
    for (let id = 6; id < 12; id++) p.arrive(id, { workMs: 3 });
    p.arrive(12, { workMs: 0.1 });
    loop.checkPhase();
    loop.checkPhase();
    loop.checkPhase();
    loop.checkPhase();
    expect(p.admitted).toEqual(Array.from({ length: 13 }, (_, i) => i));
  });

  it('an idle gate queues nothing; a lone request runs at once and queues only the sentinel closing its window', () => {
    const loop = new FakeLoop();
    const gate = new AdmissionGate(limits(), loop.runtime);
    const p = probe(loop, gate);
    expect(loop.pending).toBe(0);
    p.arrive(1);
    expect(p.admitted).toEqual([1]);
    expect(loop.pending).toBe(1);
    loop.checkPhase();
    expect(loop.pending).toBe(0);
    expect(loop.checkPhase()).toBe(0);
  });

  it('release callbacks per check phase are bounded and adapt to what a phase releases', () => {
    const loop = new FakeLoop();
    const gate = new AdmissionGate(limits({ queueLength: 10_000 }), loop.runtime);
    const p = probe(loop, gate);
    // cheap requests: the budget lets thousands through
    for (let id = 0; id < 5000; id++) p.arrive(id, { workMs: 0.001 });
    const ran: number[] = [];
    while (gate.waitingCount > 0) ran.push(loop.checkPhase());
    expect(Math.max(...ran)).toBeLessThanOrEqual(MAX_RELEASES_PER_ITERATION + 1); // + the sentinel
    expect(p.admitted).toEqual(Array.from({ length: 5000 }, (_, i) => i));
    // expensive requests: few released per phase, so few callbacks are queued per phase
    loop.checkPhase(); // the last window closed
    loop.nowMs = 10_000;
    for (let id = 0; id < 100; id++) p.arrive(id, { workMs: 1.5 }); // three per 4 ms window
    const expensive: number[] = [];
    while (gate.waitingCount > 0) expensive.push(loop.checkPhase());
    expect(Math.max(...expensive.slice(3))).toBeLessThanOrEqual(5); // the sentinel + 3 released + 1 spare
    loop.checkPhase();
    expect(loop.pending).toBe(0); // drained: nothing left queued
  });

  it('at most `concurrency` run; a slot freed releases the next in a check phase', () => {
    const loop = new FakeLoop();
    const gate = new AdmissionGate(limits({ concurrency: 2, loopBudgetMs: 0 }), loop.runtime);
    const p = probe(loop, gate);
    for (let id = 0; id < 4; id++) p.arrive(id, { hold: true });
    expect(p.admitted).toEqual([0, 1]);
    expect(gate.runningCount).toBe(2);
    loop.checkPhase();
    expect(p.admitted).toEqual([0, 1]);
    gate.leave();
    loop.checkPhase();
    expect(p.admitted).toEqual([0, 1, 2]);
    gate.leave();
    gate.leave();
    loop.checkPhase();
    expect(p.admitted).toEqual([0, 1, 2, 3]);
  });

  it('queue full: 503 at once naming it; wait over: 503 after queueWaitMs; neither runs; gone dropped', () => {
    const loop = new FakeLoop();
    const gate = new AdmissionGate(limits({ queueLength: 2, queueWaitMs: 300 }), loop.runtime);
    const p = probe(loop, gate);
    p.arrive(0, { workMs: 5 }); // spends the window
    let left = false;
    p.arrive(1, { gone: () => left });
    p.arrive(2);
    p.arrive(3);
    expect(p.shed).toEqual([{ id: 3, why: "this event-loop iteration's 4 ms of work spent and 2 waiting" }]);
    left = true;
    loop.checkPhase();
    expect(p.admitted).toEqual([0, 2]); // 1 left while waiting: never run
    p.arrive(4, { workMs: 5, hold: true });
    p.arrive(5);
    vi.advanceTimersByTime(300);
    expect(p.shed.at(-1)).toEqual({ id: 5, why: 'no slot within 300 ms' });
    loop.checkPhase();
    loop.checkPhase();
    expect(p.admitted).toEqual([0, 2, 4]); // 5 never ran
    expect(gate.waitingCount).toBe(0);
  });

  it('concurrency 0 and budget 0: everything runs at once, nothing is queued', () => {
    const loop = new FakeLoop();
    const gate = new AdmissionGate(limits({ concurrency: 0, loopBudgetMs: 0 }), loop.runtime);
    const p = probe(loop, gate);
    for (let id = 0; id < 100; id++) p.arrive(id, { hold: true, workMs: 10 });
    expect(p.admitted).toHaveLength(100);
    expect(loop.pending).toBe(0);
  });
});
