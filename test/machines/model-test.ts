/**
 * The model-based walk of a money-moving machine (wallet operations, withdrawals, combos): every
 * simple path of its graph (`xstate/graph`) replayed with save → JSON → restore between events,
 * each transition of its table covered, every state reached.
 */
import { describe, expect, it } from 'vitest';
import { initialTransition, transition, type AnyStateMachine } from 'xstate';
import { getSimplePaths } from 'xstate/graph';

/** Save → JSON → restore, as the engine does between events. */
export function roundTrip<M extends AnyStateMachine>(machine: M, s: any): any {
  return machine.resolveState(JSON.parse(JSON.stringify(machine.getPersistedSnapshot(s))));
}
function runActions(actions: Array<{ exec?: unknown; info?: unknown; params?: unknown }>) {
  for (const a of actions) (a.exec as ((i: unknown, p: unknown) => void) | undefined)?.(a.info, a.params);
}

/** Every path of the graph replayed with save/restore between events; each transition of the table covered. */
export function modelTest<M extends AnyStateMachine>(
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
