import { EventEmitter } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  createActor,
  initialTransition,
  type ActorScope,
  transition,
  type AnyActorRef,
  type AnyEventObject,
  type AnyStateNode,
  type AnyMachineSnapshot,
  type AnyStateMachine,
  type SnapshotFrom,
  type InputFrom,
} from 'xstate';
import type { Clock } from './clock.js';
import { backoffMs } from './backoff.js';
import { RevisionConflictError, UnknownActorError } from './errors.js';
import type { Logger } from './logger.js';
import type { ActorRecord, ActorRepository } from './store/actors.js';
import type { UnitOfWork } from './store/port.js';
import type { TimerData } from './scheduler/timers.js';

/**
 * What the engine knows about one kind of actor: its machine (with side effects already supplied
 * through `.provide()`), how a snapshot maps to the REST `status`, and the version of the
 * definition (stored with every snapshot).
 */
export interface ActorDefinition<TLogic extends AnyStateMachine = AnyStateMachine> {
  machineId: string;
  /** Bump when a change makes old snapshots mean something else. */
  version: number;
  /** Older versions whose snapshots still restore unchanged (default: none). */
  restorableVersions?: number[];
  kind: string;
  logic: TLogic;
  /** REST status of a snapshot (spec part 3): derived from the state, never stored separately. */
  statusOf(snapshot: SnapshotFrom<TLogic>): string;
  /**
   * True when an actor in this state may leave memory between events (passivation): it waits for
   * something that finds it by id (a price watch, say) and has no deadline. Its next event
   * reloads it from the store. Default: never. It must read only `status`, `value` and `context`:
   * at start-up it is also asked about the persisted snapshot (plain JSON), and an actor it
   * passivates is then not restored at all (lazy restore: no machine snapshot is built until its
   * next event; {@link ActorHost.restoreAll}).
   */
  passivate?(snapshot: SnapshotFrom<TLogic>): boolean;
  /** REST read model of a snapshot (defaults to `{}`); derived on every read, never stored (its `type` is). */
  viewOf?(
    snapshot: SnapshotFrom<TLogic>,
    meta: { id: string; status: string; createdAtMs: number; updatedAtMs: number; revision: number },
  ): Record<string, unknown>;
  /**
   * The view's `type` (stored with the record for filtering), when it can be had without the whole
   * view: then a new actor's view is derived only if someone reads its record's `view`.
   * Must equal `viewOf(snapshot, …).type` (a string, or null when the view has none).
   */
  typeOf?(snapshot: SnapshotFrom<TLogic>): string | null;
  /**
   * Whether `snapshot` is the actor's end (its record `final`: not restored at start-up, its venue
   * state released), for a machine whose end state still takes an event (an order CANCELED takes a
   * fill the venue reports late). Default: XState's status is not `active` (a final state).
   */
  isFinal?(snapshot: SnapshotFrom<TLogic>): boolean;
  /** Whether a record already final still takes `event` (it is loaded from the store for it). Default: none. */
  takesWhenFinal?(event: AnyEventObject): boolean;
  /**
   * Records that belong with a step of this kind (what the step produced: an order's new fills),
   * given the snapshot before and after it: the writes to make with the step's unit of work, so
   * the step and they commit together or not at all; null when the step has none (then it needs no
   * transaction). Pure of side effects itself; the writes must write only through `tx`.
   */
  stepWritesOf?(next: SnapshotFrom<TLogic>, previous: SnapshotFrom<TLogic>): KindStepWrites | null;
  /**
   * The compact stored form of this kind's snapshots (see {@link SnapshotForm}); absent: XState's
   * persisted snapshot as it is. Snapshots stored in either form restore either way.
   */
  form?: SnapshotForm;
  /**
   * The context is plain JSON data, never an actor reference at any depth: stored without XState's
   * `persistContext` walk (which visits every object of the context on every step). Default: false.
   */
  plainContext?: boolean;
}

/** What a {@link SnapshotForm} may derive context fields from besides the context: the record's ids. */
export interface RecordIds {
  /** The actor id (record `_id`). */
  _id: string;
  /** The record's owner (`ownerUserId`), or null. */
  ownerUserId: string | null;
  /** When the record was created (`createdAtMs`), epoch ms. */
  createdAtMs: number;
}

/**
 * A context field a positional {@link SnapshotForm} stores in its slot through a codec: `encode`
 * gives the slot's JSON value (undefined: this value has none, the snapshot is then stored in
 * XState's form), `decode` gives the field back exactly (`decode(encode(v, ids, c), ids, c′)` JSON-equal
 * to `v`); both may read the record's ids (a time stored as its distance to the record's, say) and
 * the context (the host always passes it): `encode` the whole one, `decode` the one read back so far
 * (the slots before its own, over the form's defaults), so a codec may leave out what an earlier slot
 * holds.
 */
export interface FieldCodec {
  key: string;
  encode(value: unknown, ids: RecordIds, context?: Readonly<Record<string, unknown>>): unknown;
  decode(stored: unknown, ids: RecordIds, context?: Readonly<Record<string, unknown>>): unknown;
}

/**
 * A compact stored form of a kind's snapshots (memory and disk per armed strategy). The persisted shape is
 * `{"form": <version>, "value": <state value>, "context": <packed context>}`, plus `status` unless
 * `active`, `output` / `error` when defined and `historyValue` when not empty; XState's `children`
 * must be empty (an actor with children is stored in XState's own form). The packed context is
 * the context without
 * - the fields of {@link defaults} whose value equals their default (`null`, `0`, `"0"`, `[]`, `{}`, …),
 * - the fields of {@link derived} whose value equals what their derivation gives.
 * Reading it back ({@link unpackSnapshot}) puts them back: first the defaults (fresh `[]` / `{}`),
 * then the stored fields, then each derived field missing, in the order of {@link derived}.
 * A context lacking one of these fields is stored in XState's form: the round trip is always
 * exact. A snapshot in XState's form (no `form` field: every snapshot stored before forms
 * existed) is read as it is.
 *
 * Positional forms ({@link fields}, form 2 of the strategies) store the snapshot as a JSON array
 * `[version, value, slot₀, …, slotₙ₋₁, rest?, envelope?]`: one slot per field of {@link fields}
 * (its value, or its codec's encoding), then, when needed, `rest` = the object of the other
 * context fields not left out (defaults and derivations as above; `{}` when only `envelope`
 * follows), then `envelope` = `{status?, output?, error?, historyValue?}` when one of them is
 * not its usual value (`active`, undefined, undefined, empty). A context lacking a slot's field,
 * or a field of `defaults` / `derived` (or holding `undefined` there), is stored in XState's form.
 *
 * Stored snapshots are read with the form of their `version` (this one or one of {@link older}):
 * a change of a default or of a derivation other than a text's wording needs a new version (the
 * old one kept for reading). A record is written in the current form at its next write.
 */
export interface SnapshotForm {
  /** Stored as `form`. */
  version: number;
  /**
   * Fields every context of the kind has, with the value they are
   * left out at (JSON values; objects and arrays only empty).
   */
  defaults: Readonly<Record<string, unknown>>;
  /**
   * Fields computed from the record's ids and the context, left out when equal (JSON-equal) to
   * what they compute. A derivation reads only fields stored, defaulted or derived before it.
   */
  derived?: ReadonlyArray<
    readonly [key: string, derive: (context: Record<string, unknown>, ids: RecordIds) => unknown]
  >;
  /**
   * A new object holding every field of {@link defaults} at its default (fresh arrays and
   * objects), as an object literal builds it: what reading back starts from (faster than copying
   * the defaults one by one: a million of them are read at start-up). Absent: copied.
   */
  fresh?: () => Record<string, unknown>;
  /** Context fields stored by position, in this order (a positional form: see above); absent: the object form. */
  fields?: ReadonlyArray<string | FieldCodec>;
  /** Forms of earlier versions, still read (never written). */
  older?: readonly SnapshotForm[];
}

/** A persisted snapshot as read back (XState's form): what restore, views and lazy restore read. */
export interface PersistedSnapshot {
  status?: unknown;
  value?: unknown;
  output?: unknown;
  error?: unknown;
  historyValue?: unknown;
  context?: unknown;
  children?: unknown;
}

/** Durable timers the host arms from the deadlines in actor context. */
export interface TimerPort {
  schedule(actorId: string, timerName: string, atMs: number): Promise<void>;
  cancel(actorId: string, timerName: string): Promise<void>;
  cancelAll(actorId: string): Promise<void>;
}

/** One persisted state change, emitted as `changed` after the write succeeded. */
export interface ActorChange {
  record: ActorRecord;
  /** The snapshot after the change (the actor may have left memory since). */
  snapshot: AnyMachineSnapshot;
  /** Status before this change; null on creation. */
  previousStatus: string | null;
  /** The events this write covers, in order (several when a batch was coalesced); empty on creation. */
  events: AnyEventObject[];
  /** Events the machine emitted with `emit()` during this step. */
  emitted: AnyEventObject[];
}

/** The `timer.fired` event every machine with deadlines handles. */
export interface TimerFiredEvent {
  type: 'timer.fired';
  name: string;
  /** Epoch ms the timer was armed for; compare with `context.deadlines[name]`. */
  atMs: number;
}

type ExecutableAction = {
  type: string;
  params?: unknown;
  info?: unknown;
  exec?: ((info: never, params: never) => void) | undefined;
};

/**
 * Writes that belong with each persisted step of one actor ({@link ActorHost.bindStepWrites}):
 * made with the step's unit of work, so the step and they commit together or not at all. Given
 * the record as persisted by the step (its `view` derived on demand). They must write only through
 * `tx` and wait for nothing else (another actor, the venue): other writes wait meanwhile.
 */
export type StepWrites = (tx: UnitOfWork, record: ActorRecord) => Promise<void>;

/**
 * Writes of a kind's step ({@link ActorDefinition.stepWritesOf}): made through `tx`; they may
 * resolve with what to run once the transaction committed (handing the records on to listeners).
 */
export type KindStepWrites = (tx: UnitOfWork) => Promise<(() => void) | void>;

/**
 * What the plan of an {@link ActorHost.batch} calls: steps of live actors and creations of new
 * ones, pure until the batch commits (a step computes the next snapshot, a creation the initial
 * one; nothing is persisted, and no action runs, before the plan returns).
 */
export interface ActorBatch {
  /** The snapshot of actor `id` as the batch has it so far (its steps in the batch taken), or null: not live. */
  snapshotOf(id: string): AnyMachineSnapshot | null;
  /**
   * Steps live actor `id` with `event`, after the steps the batch already took of it (an event
   * that changes nothing is not recorded; a final actor takes only what its definition lets it).
   * @returns the snapshot after the event, or null when the actor is not live (nothing stepped).
   * @throws {Error} when `id` is not one of the batch's ids.
   */
  step(id: string, event: AnyEventObject): AnyMachineSnapshot | null;
  /**
   * Creates actor `args.id` with the batch (its initial snapshot now, its record with the commit).
   * @throws {Error} when `id` is not one of the batch's ids, or is live or created already.
   */
  create(machineId: string, args: { id: string; input: unknown; partnerId: string; ownerUserId: string | null }): void;
}

/**
 * Holds the queues `keys` at once: joins each (through `join`, which queues `work` behind what it
 * holds) with a task that waits for the release, all in one synchronous pass (two holders sharing
 * keys then queue in one order on each: no deadlock between them), and resolves once every one of
 * them has reached its turn.
 * @param queues - when given, the map of each key's queue tail that `join` keeps (a tail is removed
 *   once settled while still the last): a key with no queue is held at once by one tail shared by
 *   all such keys instead of a task of its own (a batch holds thousands of fresh keys: new orders'
 *   ids, followers with nothing queued), which is then removed the same way.
 * @returns the release: the queues go on.
 */
export async function holdQueues(
  keys: Iterable<string>,
  join: (key: string, work: () => Promise<void>) => void,
  queues?: Map<string, Promise<unknown>>,
): Promise<() => void> {
  let release!: () => void;
  const hold = new Promise<void>((resolve) => (release = resolve));
  const ready: Promise<void>[] = [];
  const idle: string[] = [];
  for (const key of keys) {
    if (queues && !queues.has(key)) {
      idle.push(key);
      continue;
    }
    ready.push(
      new Promise<void>((started) =>
        join(key, () => {
          started();
          return hold;
        }),
      ),
    );
  }
  if (queues && idle.length) {
    const tail: Promise<void> = hold.then(() => {
      for (const key of idle) if (queues.get(key) === tail) queues.delete(key);
    });
    for (const key of idle) queues.set(key, tail);
  }
  await Promise.all(ready);
  return release;
}

/** Tries of a batch's transaction once its `beforeCommit` ran ({@link ActorHost.batch}). */
export const BATCH_COMMIT_ATTEMPTS = 4;

/** `run` tried up to {@link BATCH_COMMIT_ATTEMPTS} times, 20, 40, 80 ms apart; the last failure is thrown. */
async function retried<T>(run: () => Promise<T>, log: Logger): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (err) {
      if (attempt >= BATCH_COMMIT_ATTEMPTS) throw err;
      log.warn({ err, attempt }, 'batch transaction failed after its beforeCommit: tried again');
      await sleep(backoffMs(attempt, 20));
    }
  }
}

/** One actor of a batch: stepped (`live` set) or created (`create` set). */
interface BatchEntry {
  def: ActorDefinition;
  live: Live | null;
  create: { machineId: string; partnerId: string; ownerUserId: string | null } | null;
  snapshot: AnyMachineSnapshot;
  actions: ExecutableAction[];
  events: AnyEventObject[];
}

interface Pending {
  event: AnyEventObject;
  resolve(record: ActorRecord): void;
  reject(err: unknown): void;
}

/**
 * XState's pure stepping: each call returns `[snapshot, actions]`, the actions collected (built-in
 * ones such as `assign` already resolved into the snapshot), never executed; the host runs them
 * after the write ({@link ActorHost}).
 *
 * XState's `initialTransition()` / `transition()` build a throwaway actor, with two actor systems
 * and an initial snapshot computed without input, for every call: some 8 µs of CPU per step and 20
 * per initial snapshot of an order (bench:stepper), a tenth of an order's CPU in bench:orders. So
 * for a machine without children the stepper calls the machine's own `getInitialSnapshot(scope,
 * input)` / `transition(snapshot, event, scope)` (the `ActorLogic` interface) with one inert actor
 * scope of its own, built once: the scope XState's functions build per call (xstate 5.x
 * `createInertActorScope`: a `self` never started, no-op `defer` / `emit` / `stopChild`, an
 * `actionExecutor` that collects), less the fresh system, which only matters to child actors
 * registering in it. A step that leaves a child in the snapshot (an invoke or a spawn), or starts
 * from one with children, is made again with XState's functions, and so is every later step of
 * that machine: the shared scope's system is never given a child twice.
 *
 * Arming rate (a million armed stops) and order creation: for a machine whose initial states do
 * nothing but compute the context and collect custom entry actions (an order's `submitToVenue`),
 * {@link initial} makes the snapshot after the first with public API too: the machine's
 * `config.context` function gives the context, `resolveState` the snapshot in the first one's
 * state, and the entry actions are collected as XState collects them (their implementation from
 * `implementations.actions`, their params from the new context). The context is then a fast-mode
 * object (XState's initial `assign` copies the context function's object into a dictionary-mode one,
 * which every later step of the actor copies, reads and writes as JSON more slowly). Exported for
 * its test, test/engine/actor-host.test.ts.
 */
export class PureStepper {
  /**
   * The initial snapshot of a machine whose initial configuration does nothing but compute the
   * context (no entry or exit work, no eventless, delayed or invoked anything): taken from XState
   * once, then reused with each new context (null: not such a machine, or not known yet).
   */
  private template: AnyMachineSnapshot | null | undefined;
  /** The entry actions of the template's states, in the order XState collects them ({@link initialEntries}). */
  private entries: EntryItem[] = [];
  /** The event XState gives the initial entry actions (`xstate.init`), its type. */
  private initType = '';
  /** The `self` the context function is given on the template path (an actor never started). */
  private self: AnyActorRef | undefined;

  /**
   * Key lists of the contexts {@link layChain} laid a chain of hidden classes for, each with the
   * object that keeps that chain alive (V8 holds transitions weakly).
   */
  private readonly laid: Array<{ keys: string[]; keep: object }> = [];

  /** The inert actor scope the steps share (undefined: not built yet; null: the machine has children). */
  private scope: ActorScope<AnyMachineSnapshot, AnyEventObject> | null | undefined;
  /** Where the shared scope collects the actions of the step being made. */
  private sink: ExecutableAction[] = [];

  constructor(private readonly logic: AnyStateMachine) {}

  /** The shared inert scope, or null once a snapshot of this machine had children. */
  private sharedScope(): ActorScope<AnyMachineSnapshot, AnyEventObject> | null {
    if (this.scope === undefined) {
      const self = (this.self ??= createActor(this.logic));
      this.scope = {
        self,
        id: '',
        sessionId: '',
        system: self.system,
        defer: () => {},
        logger: () => {},
        stopChild: () => {},
        emit: () => {},
        actionExecutor: (action) => void this.sink.push(action as ExecutableAction),
      } as ActorScope<AnyMachineSnapshot, AnyEventObject>;
    }
    return this.scope;
  }

  /** Whether a snapshot has child actors (then its steps are XState's own, see the class). */
  private static hasChildren(snapshot: AnyMachineSnapshot): boolean {
    for (const _ in snapshot.children as Record<string, unknown>) return true;
    return false;
  }

  /**
   * Whether {@link initial} makes its snapshots from the template: true once an initial snapshot
   * showed that the machine's initial states only compute the context; false before, and for
   * a machine whose initial states act.
   */
  get usesTemplate(): boolean {
    return Boolean(this.template);
  }

  /** The initial snapshot for `input` and its entry actions. */
  initial(input: unknown): [AnyMachineSnapshot, ExecutableAction[]] {
    if (this.template) {
      const fast = this.initialFromTemplate(this.template, input);
      if (fast) {
        if (this.entries.length === 0) return [fast, []];
        const acts = this.entryActions(fast, input);
        if (acts) return [fast, acts];
      }
    }
    let [snapshot, actions] = this.withSharedScope((scope) => this.logic.getInitialSnapshot(scope, input));
    if (!snapshot)
      [snapshot, actions] = initialTransition(this.logic, input as never) as [AnyMachineSnapshot, ExecutableAction[]];
    // an input the context refuses (an error snapshot) tells nothing: the next one decides
    if (this.template === undefined && snapshot.status !== 'error') this.template = this.templateOf(snapshot, actions);
    return [snapshot, actions];
  }

  /**
   * `snapshot` (XState's first initial snapshot, `actions` its collected entry actions) as the
   * template, or null: when its initial states do more than compute the context and collect
   * custom entry actions, or when the entry actions made again from it ({@link entryActions}) are
   * not those XState collected (type, implementation, params, arguments).
   */
  private templateOf(snapshot: AnyMachineSnapshot, actions: ExecutableAction[]): AnyMachineSnapshot | null {
    const entries = initialEntries(this.logic, snapshot, actions);
    if (entries === null) return null;
    this.entries = entries;
    if (entries.length === 0) return snapshot;
    const event = actions[0]!.info as { event?: { type?: unknown; input?: unknown } } | undefined;
    const init = event?.event;
    if (!init || typeof init.type !== 'string' || Object.keys(init).join() !== 'type,input') return null;
    this.initType = init.type;
    const again = this.entryActions(snapshot, init.input);
    if (!again || again.length !== actions.length) return null;
    for (let i = 0; i < again.length; i++) {
      const [a, b] = [again[i]!, actions[i]!];
      const [ai, bi] = [a.info as Record<string, unknown>, b.info as Record<string, unknown>];
      if (a.type !== b.type || a.exec !== b.exec || !sameJson(a.params, b.params)) return null;
      if (ai.context !== bi.context || ai.self !== bi.self || ai.system !== bi.system) return null;
    }
    return snapshot;
  }

  /**
   * The entry actions of a snapshot made from the template, as XState collects them (see
   * `resolveAndExecuteActionsWithContext`, xstate 5.x): `{type, info: {context, event, self,
   * system}, params, exec}`, the event `{type: 'xstate.init', input}`. Null when a params
   * function throws: XState's own path then makes the snapshot.
   */
  private entryActions(snapshot: AnyMachineSnapshot, input: unknown): ExecutableAction[] | null {
    const self = (this.self ??= createActor(this.logic));
    const context = snapshot.context as unknown;
    const event = { type: this.initType, input };
    const out: ExecutableAction[] = [];
    try {
      for (const e of this.entries) {
        const params = typeof e.params === 'function' ? (e.params as ParamsOf)({ context, event }) : e.params;
        out.push({ type: e.type, info: { context, event, self, system: self.system }, params, exec: e.exec });
      }
    } catch {
      return null;
    }
    return out;
  }

  /** The snapshot after `event` and the actions the step collected. */
  transition(snapshot: AnyMachineSnapshot, event: AnyEventObject): [AnyMachineSnapshot, ExecutableAction[]] {
    this.layChain(snapshot.context);
    if (!PureStepper.hasChildren(snapshot)) {
      const [next, actions] = this.withSharedScope((scope) => this.logic.transition(snapshot, event, scope));
      if (next) return [next, actions];
    } else this.scope = null;
    return transition(this.logic, snapshot as never, event) as [AnyMachineSnapshot, ExecutableAction[]];
  }

  /**
   * Makes XState's `assign` copies of contexts with `context`'s keys (in its order) fast-mode objects,
   * once per key list: `assign` copies the context with `Object.assign({}, context, patch)`, which
   * adds the keys one by one to an empty object, and V8 turns an object that gains more than a dozen
   * or so properties that way into a dictionary-mode one unless an earlier object already made the
   * same chain of hidden classes (maps) from the empty object's, key by key. A context of an order or a strategy
   * (some thirty fields) then cost ~5 µs a copy instead of ~0.6 (each `assign` of each step makes
   * one), and every later read, copy and JSON text of it is slower too. `Object.fromEntries` makes
   * that chain (it adds the keys as fast properties); the object it made is kept, so that the chain
   * stays (V8 drops unused maps). At most {@link MAX_LAID_CHAINS} key lists a machine; contexts of
   * at most {@link FAST_KEYS} keys stay fast without it.
   */
  private layChain(context: unknown): void {
    if (context === null || typeof context !== 'object') return;
    const keys = Object.keys(context);
    if (keys.length <= FAST_KEYS) return;
    const laid = this.laid;
    for (let i = 0; i < laid.length; i++) if (sameKeys(laid[i]!.keys, keys)) return;
    if (laid.length >= MAX_LAID_CHAINS) return;
    const c = context as Record<string, unknown>;
    laid.push({ keys, keep: Object.fromEntries(keys.map((k) => [k, c[k]])) });
  }

  /**
   * `step` made with the shared scope, and the actions it collected; `[null, []]` when the machine
   * needs XState's own functions (it has children: from now on, for every step).
   */
  private withSharedScope(
    step: (scope: ActorScope<AnyMachineSnapshot, AnyEventObject>) => AnyMachineSnapshot,
  ): [AnyMachineSnapshot | null, ExecutableAction[]] {
    const scope = this.sharedScope();
    if (scope === null) return [null, []];
    const actions: ExecutableAction[] = [];
    this.sink = actions;
    let next: AnyMachineSnapshot;
    try {
      next = step(scope);
    } finally {
      this.sink = [];
    }
    if (PureStepper.hasChildren(next)) {
      this.scope = null;
      return [null, []];
    }
    return [next, actions];
  }

  /**
   * XState's initial snapshot for `input`, made from `template` (`getInitialSnapshot` builds an
   * actor, a pre-initial snapshot, resolves an `assign` and enters the states each time): the
   * context XState makes (a copy of what `context(...)` gives), the template's state otherwise. Null when
   * the context function throws or spawns: then XState's own path makes the snapshot (an error
   * snapshot, children) exactly as before.
   */
  private initialFromTemplate(template: AnyMachineSnapshot, input: unknown): AnyMachineSnapshot | null {
    const contextOf = this.logic.config.context as (args: {
      input: unknown;
      self: unknown;
      spawn: unknown;
    }) => Record<string, unknown>;
    let context: Record<string, unknown>;
    try {
      // a copy with the same fields as XState's `Object.assign({}, …)`, made by a spread: adding
      // some thirty fields one by one to `{}` turned every context into a dictionary-mode object
      // (V8's limit on fields added by keyed stores), made and dropped at each strategy armed
      context = { ...contextOf({ input, self: (this.self ??= createActor(this.logic)), spawn: spawnRefused }) };
    } catch {
      return null;
    }
    // the template with this context, as `resolveState({value, context})` would make it again (same
    // state nodes, value, tags, status; fresh children and history) without resolving the state value
    // and collecting the nodes and tags once more: a snapshot is an immutable plain object (XState makes
    // a new one at each step, never changing the state nodes, value or tags of one in place)
    return { ...template, context, children: {}, historyValue: {} };
  }
}

/** Contexts of at most this many keys are fast-mode objects after `assign` anyway (see `PureStepper.layChain`). */
const FAST_KEYS = 16;

/** Key lists a machine's stepper lays a chain of hidden classes for, at most (see `PureStepper.layChain`). */
const MAX_LAID_CHAINS = 16;

/** Whether key lists `a` and `b` are the same keys in the same order. */
function sameKeys(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** The `spawn` given to a context function on the template path: spawning falls back to XState's path. */
function spawnRefused(): never {
  throw new Error('spawn in a context function: made by XState');
}

/** A params function of an entry action, as XState calls it. */
type ParamsOf = (args: { context: unknown; event: AnyEventObject }) => unknown;

/** An entry action of the template's states: its type, params (a value or a function) and implementation. */
interface EntryItem {
  type: string;
  params: unknown;
  exec: ExecutableAction['exec'];
}

/**
 * The entry actions of `snapshot`, the initial snapshot XState made for `logic` (with `actions`
 * collected), when it can serve as a template for every input, else null: the context comes from
 * a function, the machine is active with no children, and its state is the one initial
 * transitions alone enter, through states none of which has delayed, eventless or invoked work
 * or an initial transition with actions, and whose entry actions are all custom ones (not XState's
 * built-in actions such as `assign`, `raise`, `emit`, `sendTo`), listed in the order entered.
 */
function initialEntries(
  logic: AnyStateMachine,
  snapshot: AnyMachineSnapshot,
  actions: ExecutableAction[],
): EntryItem[] | null {
  if (typeof logic.config.context !== 'function' || snapshot.status !== 'active') return null;
  for (const _ in snapshot.children as Record<string, unknown>) return null;
  const entries: EntryItem[] = [];
  if (!enteredInertly(logic, logic.root, snapshot.value, entries) || entries.length !== actions.length) return null;
  return entries;
}

/**
 * The entry items of `node` as {@link EntryItem}s added to `out`; false when one is a built-in
 * action or an inline function (then XState's path makes every initial snapshot).
 */
function customEntries(logic: AnyStateMachine, node: AnyStateNode, out: EntryItem[]): boolean {
  const impls = logic.implementations.actions as Record<string, unknown>;
  for (const item of node.entry as unknown[]) {
    if (typeof item !== 'string' && (typeof item !== 'object' || item === null)) return false;
    const type = typeof item === 'string' ? item : (item as { type?: unknown }).type;
    if (typeof type !== 'string') return false;
    const impl = impls[type];
    if (impl !== undefined && (typeof impl !== 'function' || 'resolve' in impl)) return false;
    const params = typeof item === 'object' && 'params' in item ? (item as { params: unknown }).params : undefined;
    out.push({ type, params, exec: impl as ExecutableAction['exec'] });
  }
  return true;
}

/**
 * Whether state node `node`, in state value `value` (its part of the snapshot's value: a child's
 * key, an object of children, or nothing for an atomic node), is what entering `node` by initial
 * transitions alone gives, and nothing on the way acts on entry but custom entry actions (added to
 * `entries` in the order entered).
 */
function enteredInertly(logic: AnyStateMachine, node: AnyStateNode, value: unknown, entries: EntryItem[]): boolean {
  if ((node.always?.length ?? 0) > 0 || node.after.length > 0 || node.invoke.length > 0) return false;
  if (!customEntries(logic, node, entries)) return false;
  if (node.type === 'parallel') {
    if (typeof value !== 'object' || value === null) return false;
    const keys = Object.keys(node.states);
    if (Object.keys(value).length !== keys.length) return false;
    return keys.every(
      (k) => k in value && enteredInertly(logic, node.states[k]!, (value as Record<string, unknown>)[k], entries),
    );
  }
  if (node.type !== 'compound')
    return node.type === 'atomic' || node.type === 'final'
      ? value === undefined || (typeof value === 'object' && value !== null && Object.keys(value).length === 0)
      : false;
  const initial = node.initial;
  const child = initial.target.length === 1 ? initial.target[0] : undefined;
  if (initial.actions.length > 0 || !child || node.states[child.key] !== child) return false;
  if (typeof value === 'string') return value === child.key && enteredInertly(logic, child, undefined, entries);
  if (typeof value !== 'object' || value === null) return false;
  const keys = Object.keys(value);
  return (
    keys.length === 1 &&
    keys[0] === child.key &&
    enteredInertly(logic, child, (value as Record<string, unknown>)[child.key], entries)
  );
}

interface Live {
  def: ActorDefinition;
  record: ActorRecord;
  snapshot: ReturnType<AnyStateMachine['resolveState']>;
  /**
   * `snapshot` as {@link storedSnapshotJson} writes it, when known: what this process wrote (the
   * record's `snapshot`). Absent for an actor restored from the store, whose stored text may list
   * the same fields in another order; made when first needed ({@link ActorHost.step}).
   */
  json?: string;
  /**
   * The record of this step as its bound writes were given it ({@link ActorHost.bindStepWrites}),
   * its read model derived for them: handed out once by {@link ActorHost.recordOf}, so the request
   * waiting on the step answers with the same view object its stored answer was made of.
   */
  answered?: ActorRecord;
}

const NO_VIEW: Record<string, unknown> = Object.freeze({}) as Record<string, unknown>;

/** A settled promise: what an actor's first queued work runs after ({@link ActorHost.enqueue}). */
const SETTLED: Promise<void> = Promise.resolve();

/** How many recently final actors {@link ActorHost.recordOf} keeps answering for from memory. */
const RECENTLY_FINAL = 1024;

/**
 * The record as kept in memory for a live actor: its read model is derived on demand (memory per
 * actor). A plain record without a view (what the repository's update returns for the host's
 * steps) is kept as it is: no copy per step.
 */
function slim(r: ActorRecord): ActorRecord {
  if (!(LAZY_VIEW in r) && r.view === NO_VIEW) return r;
  const b = bareRecord(r) as ActorRecord;
  b.view = NO_VIEW;
  return b;
}

/** What a kind's `viewOf` is given of a record besides its snapshot. */
function viewMeta(
  r: Pick<ActorRecord, '_id' | 'status' | 'createdAtMs' | 'updatedAtMs' | 'revision'>,
): Parameters<NonNullable<ActorDefinition['viewOf']>>[1] {
  return { id: r._id, status: r.status, createdAtMs: r.createdAtMs, updatedAtMs: r.updatedAtMs, revision: r.revision };
}

/**
 * The stored fields of `record` (no `view`) in a new object, built field by field so that every
 * record copy has one of a few hidden classes (a spread at a site that sees many shapes makes
 * one per copy).
 */
function bareRecord(record: ActorRecord): Omit<ActorRecord, 'view'> {
  const r = {
    _id: record._id,
    machineId: record.machineId,
    machineVersion: record.machineVersion,
    snapshot: record.snapshot,
    revision: record.revision,
    kind: record.kind,
    status: record.status,
    final: record.final,
    partnerId: record.partnerId,
    ownerUserId: record.ownerUserId,
    createdAtMs: record.createdAtMs,
    updatedAtMs: record.updatedAtMs,
    quarantine: record.quarantine,
  } as Omit<ActorRecord, 'view'>;
  // the optional fields added only when present (a `delete` would make the object a dictionary)
  if (record.type !== undefined) r.type = record.type;
  return r;
}

/** Where a record made by {@link withLazyView} keeps how to derive its view, and the view once derived. */
const LAZY_VIEW = Symbol('lazyView');

interface LazyViewSlot {
  derive: (() => Record<string, unknown>) | null;
  view: Record<string, unknown> | undefined;
}

type LazyRecord = ActorRecord & { [LAZY_VIEW]: LazyViewSlot };

/** The shared getter of `view` on records made by {@link withLazyView}: derives once, then keeps. */
function lazyViewGet(this: LazyRecord): Record<string, unknown> {
  const slot = this[LAZY_VIEW];
  if (slot.view === undefined) {
    slot.view = slot.derive!();
    slot.derive = null;
  }
  return slot.view;
}

/** The shared setter of `view` on records made by {@link withLazyView}: assigning replaces it. */
function lazyViewSet(this: LazyRecord, v: Record<string, unknown>): void {
  const slot = this[LAZY_VIEW];
  slot.view = v;
  slot.derive = null;
}

/** The accessor of `view` (one object: the getter and setter are the same for every record). */
const LAZY_VIEW_ACCESSOR: PropertyDescriptor = {
  enumerable: true,
  configurable: true,
  get: lazyViewGet,
  set: lazyViewSet,
};

/**
 * The record a new actor of `def` is stored with at `now` (epoch ms), and how the record written
 * becomes the callers' (with `typeOf`, only the type is stored: the view is derived when read).
 */
function creationOf(
  def: ActorDefinition,
  machineId: string,
  args: { id: string; partnerId: string; ownerUserId: string | null },
  snapshot: AnyMachineSnapshot,
  now: number,
): { doc: Omit<ActorRecord, 'revision' | 'quarantine'>; outOf: (r: ActorRecord) => ActorRecord } {
  const status = def.statusOf(snapshot);
  const meta = { id: args.id, status, createdAtMs: now, updatedAtMs: now, revision: 1 };
  const deriveView = () => def.viewOf?.(snapshot, meta) ?? {};
  return {
    doc: {
      _id: args.id,
      machineId,
      machineVersion: def.version,
      snapshot: storedSnapshotJson(def, snapshot, { _id: args.id, ownerUserId: args.ownerUserId, createdAtMs: now }),
      kind: def.kind,
      status,
      view: def.typeOf ? { type: def.typeOf(snapshot) } : deriveView(),
      final: isFinal(def, snapshot),
      partnerId: args.partnerId,
      ownerUserId: args.ownerUserId,
      createdAtMs: now,
      updatedAtMs: now,
    },
    outOf: (r) => (def.typeOf ? withLazyView(r, deriveView) : r),
  };
}

/**
 * The fields a step of actor `current` to `next` (stored as `snapshotJson`) writes at `now` (epoch
 * ms), and how the record written becomes the callers' (its view derived when read).
 */
function stepOf(
  def: ActorDefinition,
  current: ActorRecord,
  next: AnyMachineSnapshot,
  snapshotJson: string,
  now: number,
): {
  patch: Pick<ActorRecord, 'snapshot' | 'status' | 'view' | 'final' | 'updatedAtMs' | 'machineVersion'>;
  outOf: (r: ActorRecord) => ActorRecord;
} {
  const status = def.statusOf(next);
  const meta = {
    id: current._id,
    status,
    createdAtMs: current.createdAtMs,
    updatedAtMs: now,
    revision: current.revision + 1,
  };
  return {
    patch: {
      snapshot: snapshotJson,
      status,
      view: NO_VIEW,
      final: isFinal(def, next),
      updatedAtMs: now,
      machineVersion: def.version,
    },
    outOf: (r) => withLazyView(r, () => def.viewOf?.(next, meta) ?? {}),
  };
}

/**
 * A copy of `record` whose `view` is derived on first read, then kept: most records a write
 * produces (the one each sender and each `changed` listener gets) are never shown, so deriving
 * the read model eagerly on every write would be wasted. Reads, spreads and JSON see an
 * ordinary enumerable property; assigning it replaces it.
 *
 * The copy is {@link bareRecord}'s and `view` is added last, as an accessor whose getter and
 * setter are shared by every record (the per-record state is a non-enumerable symbol property):
 * so every such record has one of a few hidden classes. An accessor with closures of its own, or
 * a data property turned into an accessor, gives each record a hidden class of its own, made and
 * dropped in the old generation at every write (which fragments the old space at a million armed
 * strategies).
 */
function withLazyView(record: ActorRecord, derive: () => Record<string, unknown>): ActorRecord {
  const r = bareRecord(record);
  Object.defineProperty(r, LAZY_VIEW, {
    value: { derive, view: undefined } satisfies LazyViewSlot,
    enumerable: false,
    writable: false,
    configurable: false,
  });
  Object.defineProperty(r, 'view', LAZY_VIEW_ACCESSOR);
  return r as ActorRecord;
}

/** XState's `persistContext`: actor references in context become `{xstate$$type: 1, id}` (copy on write). */
function persistContext<T>(part: T): T {
  let copy: Record<string, unknown> | unknown[] | undefined;
  for (const key in part) {
    const value = (part as Record<string, unknown>)[key];
    const next = persistValue(value);
    if (next === value) continue;
    copy ??= Array.isArray(part) ? part.slice() : { ...(part as Record<string, unknown>) };
    (copy as Record<string, unknown>)[key] = next;
  }
  return (copy ?? part) as T;
}

/** A context value as XState persists it: an actor reference as `{xstate$$type: 1, id}`, inside too (copy on write). */
function persistValue(value: unknown): unknown {
  if (!value || typeof value !== 'object') return value;
  if ('sessionId' in value && 'send' in value && 'ref' in value)
    return { xstate$$type: 1, id: (value as unknown as { id: string }).id };
  return persistContext(value);
}

/**
 * The JSON text of a snapshot as XState's `getPersistedSnapshot` makes it (same keys, same order:
 * `status`, `output`, `error`, `value`, `historyValue`, `context`, `children`), built directly when
 * the actor has no children (none of ours spawns): XState's version copies the snapshot with an
 * object rest that excludes keys, which V8 runs slowly and which costs more than the transition.
 * With children it defers to XState. `test/engine/actor-host.test.ts` compares both.
 * @param plain - the context holds no actor reference ({@link ActorDefinition.plainContext}): not walked.
 */
export function persistedSnapshotJson(logic: AnyStateMachine, snapshot: AnyMachineSnapshot, plain = false): string {
  const children = snapshot.children as Record<string, unknown>;
  for (const _ in children) return JSON.stringify(logic.getPersistedSnapshot(snapshot));
  const history: Record<string, Array<{ id: string }>> = {};
  const hv = snapshot.historyValue as Record<string, unknown> | undefined;
  if (hv && typeof hv === 'object')
    for (const k in hv)
      if (Array.isArray(hv[k])) history[k] = (hv[k] as Array<{ id: string }>).map((n) => ({ id: n.id }));
  return JSON.stringify({
    status: snapshot.status,
    output: snapshot.output,
    error: snapshot.error,
    value: snapshot.value,
    historyValue: history,
    context: plain ? snapshot.context : persistContext(snapshot.context),
    children: {},
  });
}

/** Whether JSON values `a` and `b` are equal (strings, numbers, booleans, null, arrays, plain objects). */
function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameJson(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  let n = 0;
  for (const k in a) {
    const av = (a as Record<string, unknown>)[k];
    if (av === undefined) continue;
    if (!sameJson(av, (b as Record<string, unknown>)[k])) return false;
    n++;
  }
  for (const k in b) if ((b as Record<string, unknown>)[k] !== undefined) n--;
  return n === 0;
}

/** A fresh copy of a default (an empty array or object is never shared between contexts). */
function freshDefault(v: unknown): unknown {
  if (v === null || typeof v !== 'object') return v;
  return Array.isArray(v) ? [] : {};
}

/**
 * The JSON text of a snapshot in its definition's compact {@link SnapshotForm} (the context
 * packed), or XState's form ({@link persistedSnapshotJson}) when the definition has none, the
 * actor has children or its context lacks a field the form names.
 */
export function storedSnapshotJson(
  def: Pick<ActorDefinition, 'logic' | 'form' | 'plainContext'>,
  snapshot: AnyMachineSnapshot,
  ids: RecordIds,
): string {
  const form = def.form;
  const children = snapshot.children as Record<string, unknown>;
  if (!form) return persistedSnapshotJson(def.logic, snapshot, def.plainContext);
  for (const _ in children) return persistedSnapshotJson(def.logic, snapshot);
  const plan = planOf(form);
  const plain = def.plainContext === true;
  if (form.fields) return positionalSnapshotJson(def.logic, plan, form.fields, snapshot, ids, plain);
  const packed = packContext(plan, snapshot.context as Record<string, unknown>, ids, plain);
  if (packed === null) return persistedSnapshotJson(def.logic, snapshot);
  const out: Record<string, unknown> = { form: form.version };
  if (snapshot.status !== 'active') out.status = snapshot.status;
  if (snapshot.output !== undefined) out.output = snapshot.output;
  if (snapshot.error !== undefined) out.error = snapshot.error;
  out.value = snapshot.value;
  const history = persistedHistory(snapshot);
  if (history) out.historyValue = history;
  out.context = packed;
  return JSON.stringify(out);
}

/**
 * What writing a form's snapshots needs, built once per form: each field the form names with what
 * it does with it (a slot; a derivation; else its default), its fields with a default, its
 * derivations in order.
 */
interface FormPlan {
  version: number;
  roles: Map<string, FieldRole>;
  defaultKeys: readonly string[];
  derivedKeys: readonly string[];
}

/** What a form does with a context field ({@link FormPlan}). */
type FieldRole =
  | { slot: true; derive: null; value: undefined }
  | { slot: false; derive: (context: Record<string, unknown>, ids: RecordIds) => unknown; value: undefined }
  | { slot: false; derive: null; value: unknown };

/** The plan of each form ({@link planOf}). */
const plans = new WeakMap<SnapshotForm, FormPlan>();

/** The {@link FormPlan} of `form` (built on its first use). */
function planOf(form: SnapshotForm): FormPlan {
  let plan = plans.get(form);
  if (plan) return plan;
  const roles = new Map<string, FieldRole>();
  for (const k in form.defaults) roles.set(k, { slot: false, derive: null, value: form.defaults[k] });
  for (const [k, derive] of form.derived ?? []) roles.set(k, { slot: false, derive, value: undefined });
  for (const f of form.fields ?? [])
    roles.set(typeof f === 'string' ? f : f.key, { slot: true, derive: null, value: undefined });
  plan = {
    version: form.version,
    roles,
    defaultKeys: Object.keys(form.defaults),
    derivedKeys: (form.derived ?? []).map(([k]) => k),
  };
  plans.set(form, plan);
  return plan;
}

/** The history value as XState persists it (state node ids), or undefined when empty. */
function persistedHistory(snapshot: AnyMachineSnapshot): Record<string, Array<{ id: string }>> | undefined {
  const hv = snapshot.historyValue as Record<string, unknown> | undefined;
  let history: Record<string, Array<{ id: string }>> | undefined;
  if (hv && typeof hv === 'object') {
    for (const k in hv)
      if (Array.isArray(hv[k])) (history ??= {})[k] = (hv[k] as Array<{ id: string }>).map((n) => ({ id: n.id }));
  }
  return history;
}

/** Whether derivation `f` gives `v` (a derivation that throws gives nothing: the field is stored). */
function derives(
  f: (context: Record<string, unknown>, ids: RecordIds) => unknown,
  v: unknown,
  context: Record<string, unknown>,
  ids: RecordIds,
): boolean {
  try {
    return sameJson(v, f(context, ids));
  } catch {
    return false;
  }
}

/**
 * The snapshot in positional form `form` (see {@link SnapshotForm}), or XState's when its context does not fit.
 * @param plain - the context holds no actor reference ({@link ActorDefinition.plainContext}): not walked.
 */
function positionalSnapshotJson(
  logic: AnyStateMachine,
  plan: FormPlan,
  fields: NonNullable<SnapshotForm['fields']>,
  snapshot: AnyMachineSnapshot,
  ids: RecordIds,
  plain = false,
): string {
  const context = snapshot.context as Record<string, unknown>;
  const packed = packContext(plan, context, ids, plain);
  if (packed === null) return persistedSnapshotJson(logic, snapshot);
  const out: unknown[] = [plan.version, snapshot.value];
  for (let i = 0; i < fields.length; i++) {
    const f = fields[i]!;
    const raw = context[typeof f === 'string' ? f : f.key];
    const v = plain ? raw : persistValue(raw);
    const slot = v === undefined || typeof f === 'string' ? v : f.encode(v, ids, context);
    if (slot === undefined) return persistedSnapshotJson(logic, snapshot);
    out.push(slot);
  }
  let hasRest = false;
  for (const _ in packed) {
    hasRest = true;
    break;
  }
  let envelope: Record<string, unknown> | undefined;
  if (snapshot.status !== 'active') (envelope ??= {}).status = snapshot.status;
  if (snapshot.output !== undefined) (envelope ??= {}).output = snapshot.output;
  if (snapshot.error !== undefined) (envelope ??= {}).error = snapshot.error;
  const history = persistedHistory(snapshot);
  if (history) (envelope ??= {}).historyValue = history;
  if (hasRest || envelope) out.push(packed);
  if (envelope) out.push(envelope);
  return JSON.stringify(out);
}

/** The form of `forms` (or one of its older ones) that reads version `version`, or undefined. */
function formOfVersion(forms: SnapshotForm | null | undefined, version: unknown): SnapshotForm | undefined {
  if (!forms) return undefined;
  if (forms.version === version) return forms;
  return forms.older?.find((f) => f.version === version);
}

/** A context of form `form` with its defaults (fresh `[]` / `{}`), before the stored fields go in. */
function freshContext(form: SnapshotForm, stored: Record<string, unknown>): Record<string, unknown> {
  if (form.fresh) return form.fresh();
  const context: Record<string, unknown> = {};
  const defaults = form.defaults;
  for (const k in defaults) if (!(k in stored)) context[k] = freshDefault(defaults[k]);
  return context;
}

/** Reads back a snapshot stored in positional form (see {@link SnapshotForm}). */
function unpackPositional(
  stored: unknown[],
  form: SnapshotForm,
  fields: NonNullable<SnapshotForm['fields']>,
  ids: RecordIds,
): PersistedSnapshot {
  const n = fields.length;
  const rest = (stored[n + 2] ?? {}) as Record<string, unknown>;
  const envelope = (stored[n + 3] ?? {}) as PersistedSnapshot;
  const context = freshContext(form, rest);
  for (let i = 0; i < n; i++) {
    const f = fields[i]!;
    if (typeof f === 'string') context[f] = stored[i + 2];
    else context[f.key] = f.decode(stored[i + 2], ids, context);
  }
  for (const k in rest) context[k] = rest[k];
  for (const [k, derive] of form.derived ?? []) if (!(k in rest)) context[k] = derive(context, ids);
  return {
    status: envelope.status ?? 'active',
    output: envelope.output,
    error: envelope.error,
    value: stored[1],
    historyValue: envelope.historyValue ?? {},
    context,
    children: {},
  };
}

/**
 * The context without what the form of `plan` restores (its fields at their default, its derived
 * fields when they are what their derivation gives, its slots, fields holding `undefined`), as
 * XState persists it ({@link persistValue}), or null when it lacks (or holds `undefined` in) a
 * field the form names: then it is stored in XState's form, so the round trip stays exact.
 */
function packContext(
  plan: FormPlan,
  context: Record<string, unknown>,
  ids: RecordIds,
  plain = false,
): Record<string, unknown> | null {
  const defaultKeys = plan.defaultKeys;
  for (let i = 0; i < defaultKeys.length; i++) if (context[defaultKeys[i]!] === undefined) return null;
  const derivedKeys = plan.derivedKeys;
  for (let i = 0; i < derivedKeys.length; i++) if (context[derivedKeys[i]!] === undefined) return null;
  const roles = plan.roles;
  const packed: Record<string, unknown> = {};
  for (const k in context) {
    const v = context[k];
    if (v === undefined) continue;
    const role = roles.get(k);
    if (role !== undefined) {
      if (role.slot) continue;
      if (role.derive !== null) {
        if (derives(role.derive, v, context, ids)) continue;
      } else if (v === role.value || sameJson(v, role.value)) continue;
    }
    packed[k] = plain ? v : persistValue(v);
  }
  return packed;
}

/**
 * Reads a stored snapshot back in XState's persisted form (what `resolveState`, the views and the
 * machines read), whichever form it was stored in (see {@link SnapshotForm}).
 * @param forms the form of each stored version (the definition's), or null when it has none.
 * @throws {Error} on text that is not JSON, or a `form` version no form reads.
 */
export function unpackSnapshot(
  json: string,
  forms: SnapshotForm | null | undefined,
  ids: RecordIds,
): PersistedSnapshot {
  const stored = JSON.parse(json) as PersistedSnapshot & { form?: unknown };
  if (Array.isArray(stored)) {
    const form = formOfVersion(forms, stored[0]);
    if (!form?.fields) throw new Error(`snapshot stored in form ${String(stored[0])}, which no definition reads`);
    return unpackPositional(stored, form, form.fields, ids);
  }
  if (stored === null || typeof stored !== 'object' || stored.form === undefined) return stored;
  const form = formOfVersion(forms, stored.form);
  if (!form || form.fields)
    throw new Error(`snapshot stored in form ${String(stored.form)}, which no definition reads`);
  const packed = (stored.context ?? {}) as Record<string, unknown>;
  const derived = form.derived ?? [];
  const context = freshContext(form, packed);
  for (const k in packed) context[k] = packed[k];
  for (const [k, derive] of derived) if (!(k in packed)) context[k] = derive(context, ids);
  return {
    status: stored.status ?? 'active',
    output: stored.output,
    error: stored.error,
    value: stored.value,
    historyValue: stored.historyValue ?? {},
    context,
    children: {},
  };
}

/** Whether `snapshot` ends its actor, by the definition's rule ({@link ActorDefinition.isFinal}). */
function isFinal(def: ActorDefinition, snapshot: AnyMachineSnapshot): boolean {
  return def.isFinal ? def.isFinal(snapshot as never) : snapshot.status !== 'active';
}

/** Context convention: `deadlines` maps timer name → epoch ms. */
function deadlinesOf(snapshot: { context?: unknown }): Record<string, number> {
  const d = (snapshot.context as { deadlines?: Record<string, number> } | undefined)?.deadlines;
  return d && typeof d === 'object' ? d : {};
}

/**
 * One actor restored at start-up (`restored`): its record (without read model) and its context.
 * `dormant`: it passivates, so it was not built into a machine snapshot (nor kept in memory); its
 * next event restores it from the store (and quarantines it then if it no longer restores).
 */
export interface ActorRestored {
  record: ActorRecord;
  context: unknown;
  dormant: boolean;
}

/**
 * Hosts every actor. Each event goes through one queue per actor; the
 * pure `transition()` computes the next snapshot, which is written with a revision check before
 * anything else happens: only then are the machine's actions executed (they are the side
 * effects), timers re-armed from `context.deadlines`, and `changed` emitted for push. The promise
 * returned by {@link send} resolves after the write, so an HTTP response never outruns storage.
 */
export class ActorHost extends EventEmitter<{ changed: [ActorChange]; restored: [ActorRestored] }> {
  private readonly defs = new Map<string, ActorDefinition>();
  private readonly live = new Map<string, Live>();
  /**
   * Ids of {@link live}'s actors by kind (what {@link liveIds} lists, without walking every live
   * actor: the strategy service asks at each market's resolution, with thousands of orders live).
   */
  private readonly liveByKind = new Map<string, Set<string>>();
  private readonly queues = new Map<string, Promise<unknown>>();
  /** Events waiting for the next batch of each actor. */
  private readonly mailboxes = new Map<string, Pending[]>();
  private readonly steppers = new Map<ActorDefinition, PureStepper>();
  /** Writes bound to every step of an actor, by actor id ({@link bindStepWrites}). */
  private readonly stepWrites = new Map<string, StepWrites>();
  /**
   * Settles once {@link restoreAll} has run. The services register their machines before it, so
   * until then an actor whose machine is not registered yet (a venue report redelivered at start-up
   * reaching a copy order's subscription) waits for it instead of being quarantined.
   */
  private readonly restoreRan: Promise<void>;
  private markRestoreRan!: () => void;
  private restoreFinished = false;

  constructor(
    private readonly repo: ActorRepository,
    private readonly timers: TimerPort,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {
    super();
    this.restoreRan = new Promise<void>((resolve) => (this.markRestoreRan = resolve));
    repo.viewDeriver = (r) => {
      const def = this.defs.get(r.machineId);
      if (!def?.viewOf) return {};
      // the persisted snapshot (status, value, context) is what the view functions read
      try {
        return def.viewOf(unpackSnapshot(r.snapshot, def.form, r) as never, viewMeta(r));
      } catch (err) {
        this.log.error({ err, actorId: r._id }, 'read model of a stored snapshot failed');
        return { id: r._id, status: r.status, error: 'unreadable snapshot' };
      }
    };
  }

  /**
   * Binds `writes` to every step of actor `id` persisted from now on (its creation included) until
   * the returned function unbinds them: each such step's record and the writes commit in one
   * transaction (`Store.transaction`), or neither does (the step then fails as a failed write
   * does). One binding per actor: a later one replaces it. The request that creates an actor uses
   * it to store its response with the steps that produce it (engine/idempotency.ts).
   * @param options.afterCreation - leave the actor's creation out (it is then written alone, without
   *   a transaction): for an actor whose creation is always followed by another step before the
   *   caller answers, and found again by its id when a crash falls between the two.
   */
  bindStepWrites(id: string, writes: StepWrites, options: { afterCreation?: boolean } = {}): () => void {
    if (options.afterCreation) this.boundAfterCreation.add(writes);
    this.stepWrites.set(id, writes);
    return () => {
      if (this.stepWrites.get(id) === writes) this.stepWrites.delete(id);
      this.boundAfterCreation.delete(writes);
    };
  }

  /** Bound writes that leave the actor's creation out ({@link bindStepWrites}). */
  private readonly boundAfterCreation = new WeakSet<StepWrites>();

  /**
   * Persists one step of actor `id` with `write`, and with the writes bound to it and its kind's
   * writes (`own`) when there are: then in one transaction, `write` given its unit of work; what
   * the kind's writes resolved with runs once it committed.
   * @returns the record written, as `outOf` gives it (the bound writes were given this same
   *   object: its read model is derived once for both).
   */
  private async persist(
    id: string,
    write: (tx?: UnitOfWork) => Promise<ActorRecord>,
    outOf: (record: ActorRecord) => ActorRecord,
    own: KindStepWrites | null = null,
    creation = false,
  ): Promise<{ record: ActorRecord; out: ActorRecord }> {
    let bound = this.stepWrites.get(id);
    if (creation && bound && this.boundAfterCreation.has(bound)) bound = undefined;
    if (!bound && !own) {
      const record = await write();
      return { record, out: outOf(record) };
    }
    let committed: (() => void) | undefined;
    const written = await this.repo.transaction(async (tx) => {
      const record = await write(tx);
      committed = own ? ((await own(tx)) ?? undefined) : undefined;
      const out = outOf(record);
      if (bound) await bound(tx, out);
      return { record, out };
    });
    if (committed) {
      try {
        committed();
      } catch (err) {
        this.log.error({ err, actorId: id }, 'what follows a committed step failed');
      }
    }
    return written;
  }

  /** Registers a kind of actor. Must happen before {@link restoreAll}. */
  register<T extends AnyStateMachine>(def: ActorDefinition<T>): void {
    this.defs.set(def.machineId, def as unknown as ActorDefinition);
  }

  /**
   * Creates and persists a new actor, then runs its initial actions.
   * @throws {DuplicateKeyError} when `id` exists already.
   */
  create<T extends AnyStateMachine>(
    machineId: string,
    args: { id: string; input: InputFrom<T>; partnerId: string; ownerUserId: string | null },
  ): Promise<ActorRecord> {
    return this.enqueue(args.id, async () => {
      const def = this.definition(machineId);
      const [snapshot, actions] = this.stepperOf(def).initial(args.input);
      const { doc, outOf } = creationOf(def, machineId, args, snapshot, this.clock.now());
      const { record, out } = await this.persist(args.id, (tx) => this.repo.insert(doc, tx), outOf, null, true);
      this.createdDuringRestore?.add(args.id);
      const live: Live = { def, record: slim(record), snapshot, json: record.snapshot };
      this.keep(live);
      await this.afterWrite(live, {}, actions, null, [], out);
      return out;
    });
  }

  /**
   * Steps and creates many actors as one unit of work. Holds the queues of actors `ids` (the
   * events queued for them before are handled first; those sent meanwhile wait for the batch),
   * with `options.loadStored` loads those stored but not in memory (passivated ones; see
   * {@link loadStored}; without it the plan sees no snapshot for them), runs `plan`, then persists
   * every step and creation it made, with their kinds' step writes and the writes bound to them,
   * in ONE store transaction: all or none. Once it committed, the actors' snapshots are current
   * and, in the plan's order (an actor at its first step or creation), their actions run inside
   * `effects` (a caller that gathers the venue commands those actions issue into one operation
   * wraps them), then `changed` is emitted for each; then what the kinds' step writes resolved with
   * runs, and their timers are armed. When `plan` throws or the transaction fails, nothing changed
   * and the error is rethrown.
   * @param ids - every actor the plan steps or creates (their queues are held; order is free).
   * @param options.loadStored - load the passivated actors among `ids` first (a read each).
   * @param options.beforeCommit - runs once the plan is over, before the transaction (the queues still
   *   held), with the batch: what must happen before the batch's records (a venue operation they
   *   follow), and the steps and creations that follow it. Its rejection fails the batch, nothing
   *   written. Once it resolved, the transaction is tried up to
   *   {@link BATCH_COMMIT_ATTEMPTS} times (with backoff, the queues held, so nothing else steps these
   *   actors meanwhile) before the batch fails.
   * @returns the records written, by actor id (none for an actor the plan left unchanged).
   */
  async batch(
    ids: Iterable<string>,
    plan: (b: ActorBatch) => void | Promise<void>,
    effects: (run: () => void) => void = (run) => run(),
    options: { loadStored?: boolean; beforeCommit?: (b: ActorBatch) => Promise<void> } = {},
  ): Promise<Map<string, ActorRecord>> {
    const held = new Set(ids);
    const release = await holdQueues(held, (id, work) => void this.enqueue(id, work), this.queues);
    try {
      const loaded = options.loadStored ? await this.loadStored(held) : [];
      const entries = new Map<string, BatchEntry>();
      const mine = (id: string) => {
        if (!held.has(id)) throw new Error(`actor ${id} is not one of the batch's`);
      };
      const api: ActorBatch = {
        snapshotOf: (id) => entries.get(id)?.snapshot ?? this.live.get(id)?.snapshot ?? null,
        step: (id, event) => {
          mine(id);
          let e = entries.get(id);
          if (!e) {
            const live = this.live.get(id);
            if (!live) return null;
            e = { def: live.def, live, create: null, snapshot: live.snapshot, actions: [], events: [] };
            entries.set(id, e);
          }
          const next = e.snapshot;
          if (next.status !== 'active') return next;
          if (isFinal(e.def, next) && !e.def.takesWhenFinal?.(event)) return next;
          const [after, acts] = this.stepperOf(e.def).transition(next, event);
          if (acts.length === 0 && (after === next || (after.value === next.value && after.context === next.context)))
            return next;
          e.snapshot = after;
          e.actions.push(...acts);
          e.events.push(event);
          return after;
        },
        create: (machineId, args) => {
          mine(args.id);
          if (entries.has(args.id) || this.live.has(args.id)) throw new Error(`actor ${args.id} exists already`);
          const def = this.definition(machineId);
          const [snapshot, actions] = this.stepperOf(def).initial(args.input);
          entries.set(args.id, {
            def,
            live: null,
            create: { machineId, partnerId: args.partnerId, ownerUserId: args.ownerUserId },
            snapshot,
            actions,
            events: [],
          });
        },
      };
      await plan(api);
      if (options.beforeCommit) await options.beforeCommit(api);
      // loaded for the batch and left as they were: passivated again
      for (const l of loaded) if (!entries.get(l.record._id)?.events.length) this.keep(l);
      // as a step: an actor whose stored snapshot would not change is not written
      const storedJson = new Map<string, string>();
      for (const [id, e] of entries) {
        const live = e.live;
        if (e.create || !live || e.events.length === 0) continue;
        const json = storedSnapshotJson(e.def, e.snapshot, live.record);
        if (this.changesNothing(live, e.snapshot, json, e.actions)) {
          this.keep({ def: e.def, record: live.record, snapshot: e.snapshot, json });
          e.events.length = 0;
        } else storedJson.set(id, json);
      }
      const work = [...entries].filter(([, e]) => e.create !== null || e.events.length > 0);
      if (work.length === 0) return new Map();
      const now = this.clock.now();
      const committed: (() => void)[] = [];
      const transaction = () => {
        committed.length = 0;
        return this.repo.transaction(commit);
      };
      const commit = async (tx: UnitOfWork) => {
        const out: { id: string; e: BatchEntry; record: ActorRecord; full: ActorRecord; json: string }[] = [];
        for (const [id, e] of work) {
          const { def, snapshot } = e;
          let record: ActorRecord;
          let full: ActorRecord;
          if (e.create) {
            const { doc, outOf } = creationOf(def, e.create.machineId, { id, ...e.create }, snapshot, now);
            record = await this.repo.insert(doc, tx);
            full = outOf(record);
          } else {
            const current = e.live!.record;
            const json = storedJson.get(id)!; // every step entry left in the work has its text (above)
            const { patch, outOf } = stepOf(def, current, snapshot, json, now);
            record = await this.repo.update(current, patch, tx);
            const own = def.stepWritesOf?.(snapshot, e.live!.snapshot) ?? null;
            if (own) {
              const then = await own(tx);
              if (then) committed.push(then);
            }
            full = outOf(record);
          }
          const bound = this.stepWrites.get(id);
          if (bound && !(e.create && this.boundAfterCreation.has(bound))) await bound(tx, full);
          out.push({ id, e, record, full, json: record.snapshot });
        }
        return out;
      };
      const written = options.beforeCommit ? await retried(transaction, this.log) : await transaction();
      const result = new Map<string, ActorRecord>();
      const after: { live: Live; prev: Record<string, number>; w: (typeof written)[number] }[] = [];
      for (const w of written) {
        const live: Live = { def: w.e.def, record: slim(w.record), snapshot: w.e.snapshot, json: w.json };
        if (this.stepWrites.has(w.id)) live.answered = w.full;
        if (w.e.create) this.createdDuringRestore?.add(w.id);
        this.keep(live);
        after.push({ live, prev: w.e.live ? deadlinesOf(w.e.live.snapshot) : {}, w });
        result.set(w.id, w.full);
      }
      // every actor's actions first (a caller's `effects` gathers the venue commands they issue and
      // sends them as one operation), then the `changed` listeners: what listens to the batch (the
      // pushes, the parents' bookkeeping) follows the venue operation instead of delaying it
      const emitted: AnyEventObject[][] = [];
      effects(() => {
        for (const { live, w } of after) emitted.push(this.runActions(live, w.e.actions));
      });
      for (const [i, { live, w }] of after.entries())
        this.emitChanged(live, w.e.live ? w.e.live.record.status : null, w.e.events, emitted[i] ?? [], w.full);
      // what the kinds' writes hand on (the trade history's records to its listeners) follows the
      // actors' own effects: the venue's answers reach every order of the batch first
      for (const then of committed) {
        try {
          then();
        } catch (err) {
          this.log.error({ err }, 'what follows a committed batch failed');
        }
      }
      await Promise.all(
        after.filter((a) => this.timersChange(a.live, a.prev)).map((a) => this.armTimers(a.live, a.prev)),
      );
      return result;
    } finally {
      release();
    }
  }

  /**
   * Brings the stored actors among `ids` that are not in memory (passivated ones) back to life,
   * as a step would: those not final, not quarantined, whose machine is registered (the others
   * stay out: a batch's plan sees no snapshot for them). Reads them in one query, and loads them
   * in the order of `ids`.
   * @returns the actors loaded.
   */
  private async loadStored(ids: Iterable<string>): Promise<Live[]> {
    const missing: string[] = [];
    for (const id of ids) if (!this.live.has(id)) missing.push(id);
    if (missing.length === 0) return [];
    const records = new Map<string, ActorRecord>();
    for (const r of await this.repo.getStoredMany(missing)) records.set(r._id, r);
    const out: Live[] = [];
    for (const id of missing) {
      const record = records.get(id);
      // one loaded meanwhile (a step of its own while the read was awaited) is live already
      if (!record || this.live.has(id)) continue;
      if (record.final || record.quarantine || !this.defs.has(record.machineId)) continue;
      const live = await this.load(record);
      if (live) out.push(live);
    }
    return out;
  }

  /**
   * Sends `event` to actor `id` through its queue.
   * @returns the persisted record after the event (unchanged revision when the event did nothing).
   * @throws {UnknownActorError} when no such actor exists; quarantined actors refuse events.
   */
  send(id: string, event: AnyEventObject): Promise<ActorRecord> {
    return new Promise<ActorRecord>((resolve, reject) => {
      let box = this.mailboxes.get(id);
      if (!box) {
        this.mailboxes.set(id, (box = []));
        void this.enqueue(id, () => this.drain(id));
      }
      box.push({ event, resolve, reject });
    });
  }

  /** Resolves once every event queued so far for `id` has been handled. */
  async whenQuiet(id: string): Promise<void> {
    // Actions may queue further events while we wait: loop until the queue is quiet.
    for (let q = this.queues.get(id); q;) {
      await q.catch(() => undefined);
      const next = this.queues.get(id);
      if (next === q) break;
      q = next;
    }
  }

  /**
   * Whether a step of `live` to `next`, stored as `json`, with `actions` to run, would change
   * nothing persisted (no actions, the same stored text, the machine at its version): then nothing
   * is written, no revision and no update pushed. The comparison is with the current snapshot
   * written the same way (a restored actor's stored text may order its fields otherwise), made
   * only when the state value is the same: every stored form holds the value, so another value is
   * another text (an actor loaded from the store and ended by the step is not written twice).
   */
  private changesNothing(live: Live, next: AnyMachineSnapshot, json: string, actions: readonly unknown[]): boolean {
    if (actions.length !== 0 || live.record.machineVersion !== live.def.version) return false;
    if (live.json === undefined && !sameJson(next.value, live.snapshot.value)) return false;
    return json === (live.json ??= storedSnapshotJson(live.def, live.snapshot, live.record));
  }

  /**
   * Resolves once no actor has work queued: every actor's queue has run out (so every mailbox is
   * empty too). Events that actions queue meanwhile, on any actor, are waited for as well. A queued
   * step that fails does not reject it.
   */
  async whenIdle(): Promise<void> {
    while (this.queues.size > 0) await Promise.all([...this.queues.values()].map((q) => q.catch(() => undefined)));
  }

  /**
   * The persisted snapshot of `record` in XState's form, whichever form it is stored in (see
   * {@link SnapshotForm}): what to read a stored record's context or state from (never
   * `JSON.parse(record.snapshot)`, which may be packed).
   * @throws {Error} when the snapshot is not JSON or its form is unknown.
   */
  storedSnapshot(
    record: Pick<ActorRecord, 'snapshot' | 'machineId' | '_id' | 'ownerUserId' | 'createdAtMs'>,
  ): PersistedSnapshot {
    return unpackSnapshot(record.snapshot, this.defs.get(record.machineId)?.form, record);
  }

  /**
   * The deadlines of a stored actor record (none when it is absent, final or quarantined).
   * @throws when its snapshot does not unpack.
   */
  private storedDeadlines(rec: ActorRecord | null): Record<string, number> {
    return rec && !rec.final && !rec.quarantine ? deadlinesOf(this.storedSnapshot(rec)) : {};
  }

  /** Current snapshot of a live (non-final) actor, or null. */
  snapshotOf(id: string): Live['snapshot'] | null {
    return this.live.get(id)?.snapshot ?? null;
  }

  /**
   * Last persisted record of a live actor, or of one that reached its final state recently (a
   * final record never changes again), or null (then read the repository).
   */
  recordOf(id: string): ActorRecord | null {
    const l = this.live.get(id) ?? this.recentlyFinal.get(id);
    if (!l) return null;
    const answered = l.answered;
    if (answered === undefined) return this.full(l);
    l.answered = undefined;
    return answered;
  }

  /**
   * Actors that reached a final state lately, newest last, at most {@link RECENTLY_FINAL}: the
   * request that ended one (an IOC order filled at once) reads its record from here instead of
   * reading back and parsing what it has just written.
   */
  private readonly recentlyFinal = new Map<string, Live>();

  /** A live actor's record with its read model, derived again from the snapshot (not kept in memory). */
  private full(l: Live): ActorRecord {
    const r = l.record;
    return { ...r, view: l.def.viewOf?.(l.snapshot as never, viewMeta(r)) ?? {} };
  }

  /**
   * A live actor's record for the senders of a step that wrote nothing: its read model derived
   * only if one of them reads it (an event that changes nothing, a redelivered report, is seldom
   * shown).
   */
  private answer(l: Live): ActorRecord {
    const r = l.record;
    const def = l.def;
    return withLazyView(r, () => def.viewOf?.(l.snapshot as never, viewMeta(r)) ?? {});
  }

  /** Ids of the live (non-final) actors of `kind`. */
  liveIds(kind: string): string[] {
    const ids = this.liveByKind.get(kind);
    return ids ? [...ids] : [];
  }

  /** Holds `l` in memory as actor `id`'s live state ({@link live} and {@link liveByKind}). */
  private setLive(id: string, l: Live): void {
    this.live.set(id, l);
    let ids = this.liveByKind.get(l.def.kind);
    if (!ids) this.liveByKind.set(l.def.kind, (ids = new Set()));
    ids.add(id);
  }

  /** Drops actor `id`'s live state, if held. */
  private dropLive(id: string): void {
    const l = this.live.get(id);
    if (!l) return;
    this.live.delete(id);
    this.liveByKind.get(l.def.kind)?.delete(id);
  }

  /** Number of actors held in memory (passivated ones are not). */
  get liveCount(): number {
    return this.live.size;
  }

  /** Keeps a live actor in memory, unless it is final or its definition lets it passivate. */
  private keep(l: Live): void {
    const id = l.record._id;
    const dormant =
      l.def.passivate?.(l.snapshot as never) === true && Object.keys(deadlinesOf(l.snapshot)).length === 0;
    if (l.record.final || dormant) this.dropLive(id);
    else this.setLive(id, l);
    if (l.record.final) {
      this.recentlyFinal.delete(id);
      this.recentlyFinal.set(id, l);
      if (this.recentlyFinal.size > RECENTLY_FINAL) this.recentlyFinal.delete(this.recentlyFinal.keys().next().value!);
    }
  }

  /**
   * Delivers a due timer. Ignored unless the actor still has that deadline at that time (in memory,
   * or as stored when it is not in memory: an actor being reloaded after a revision conflict), so
   * duplicate and stale firings are harmless; the machine guards the same way.
   */
  async deliverTimer(t: TimerData): Promise<void> {
    const live = this.live.get(t.actorId);
    if (live) {
      if (deadlinesOf(live.snapshot)[t.timerName] !== t.atMs) return;
    } else {
      const rec = await this.repo.getStored(t.actorId);
      if (!rec || !this.defs.has(rec.machineId)) return;
      let stored: Record<string, number>;
      try {
        stored = this.storedDeadlines(rec);
      } catch {
        return; // a snapshot that no longer restores: its next step quarantines it
      }
      if (stored[t.timerName] !== t.atMs) return;
    }
    const event: TimerFiredEvent = { type: 'timer.fired', name: t.timerName, atMs: t.atMs };
    await this.send(t.actorId, event);
  }

  /**
   * Restores every non-final, non-quarantined actor from the store, in creation order, and
   * re-arms its timers; `restored` is emitted for each. Entry actions are not re-run. A snapshot
   * that no longer restores is quarantined and logged. An actor whose definition passivates its
   * persisted snapshot (and that has no deadline) is restored lazily: `restored` carries its
   * stored context (`dormant`), and its machine snapshot is built only by its next event, which
   * quarantines it then if it no longer restores (so a million armed stops start in seconds, not
   * minutes).
   */
  async restoreAll(): Promise<{ restored: number; quarantined: number }> {
    let restored = 0;
    let quarantined = 0;
    const created = new Set<string>();
    this.createdDuringRestore = created;
    try {
      for await (const record of this.repo.restorable()) {
        if (created.has(record._id)) continue; // live already
        const dormant = this.dormantContext(record);
        if (dormant !== null) {
          this.emit('restored', { record, context: dormant, dormant: true });
          restored++;
          continue;
        }
        const live = await this.load(record);
        if (!live) {
          quarantined++;
          continue;
        }
        for (const [name, atMs] of Object.entries(deadlinesOf(live.snapshot)))
          await this.timers.schedule(record._id, name, atMs);
        this.emit('restored', { record: live.record, context: live.snapshot.context, dormant: false });
        this.keep(live);
        restored++;
      }
    } finally {
      this.createdDuringRestore = null;
      this.restoreFinished = true;
      this.markRestoreRan();
    }
    return { restored, quarantined };
  }

  /** Ids of the actors created while {@link restoreAll} runs (live already), or null. */
  private createdDuringRestore: Set<string> | null = null;

  /**
   * The stored context of an actor that restores dormant (its version restores, its definition
   * passivates its persisted snapshot, it has no deadline), or null: restore it now.
   */
  private dormantContext(record: ActorRecord): unknown {
    const def = this.defs.get(record.machineId);
    if (
      !def?.passivate ||
      (record.machineVersion !== def.version && !(def.restorableVersions ?? []).includes(record.machineVersion))
    )
      return null;
    let persisted: PersistedSnapshot;
    try {
      persisted = unpackSnapshot(record.snapshot, def.form, record);
    } catch {
      return null; // load() quarantines it
    }
    if (persisted?.status !== 'active' || typeof persisted.context !== 'object' || persisted.context === null)
      return null;
    if (Object.keys(deadlinesOf(persisted)).length > 0 || def.passivate(persisted as never) !== true) return null;
    return persisted.context;
  }

  private definition(machineId: string): ActorDefinition {
    const def = this.defs.get(machineId);
    if (!def) throw new Error(`no actor definition registered for machine ${machineId}`);
    return def;
  }

  /**
   * Runs `work` after what actor `id` has queued. The queue holds a tail that never rejects (what
   * follows runs whether the work before failed or not) and leaves the map when it settles last.
   */
  private enqueue<R>(id: string, work: () => Promise<R>): Promise<R> {
    const next = (this.queues.get(id) ?? SETTLED).then(work);
    const done = (): void => {
      if (this.queues.get(id) === tail) this.queues.delete(id);
    };
    const tail: Promise<void> = next.then(done, done);
    this.queues.set(id, tail);
    return next;
  }

  /** Rebuilds a live actor from its record, or quarantines it. */
  private async load(record: ActorRecord): Promise<Live | null> {
    const def = this.defs.get(record.machineId);
    let reason: string | null = null;
    let snapshot: Live['snapshot'] | null = null;
    if (!def) reason = `no machine registered for ${record.machineId}`;
    else if (record.machineVersion !== def.version && !(def.restorableVersions ?? []).includes(record.machineVersion)) {
      reason = `snapshot of ${record.machineId} v${record.machineVersion} does not restore on v${def.version}`;
    } else {
      try {
        snapshot = def.logic.resolveState(unpackSnapshot(record.snapshot, def.form, record) as never);
      } catch (err) {
        reason = `snapshot does not restore: ${(err as Error).message}`;
      }
    }
    if (reason || !def || !snapshot) {
      this.log.error({ actorId: record._id, machineId: record.machineId, reason }, 'actor quarantined');
      await this.repo.quarantine(record._id, reason ?? 'unknown', this.clock.now());
      return null;
    }
    const live: Live = { def, record: slim(record), snapshot };
    if (!record.final) this.setLive(record._id, live);
    return live;
  }

  /**
   * Handles every event waiting in the mailbox of `id` as one batch: each goes through the pure
   * transition in arrival order, the last snapshot is written once (group commit), then the
   * actions of all of them run in order. Several venue reports caused by one command (accepted,
   * filled, …) thus cost one write. Each sender gets the record as persisted after its batch.
   */
  private async drain(id: string): Promise<void> {
    const batch = this.mailboxes.get(id) ?? [];
    this.mailboxes.delete(id);
    if (batch.length === 0) return;
    try {
      const record = await this.step(id, batch);
      for (const p of batch) p.resolve(record);
    } catch (err) {
      for (const p of batch) p.reject(err);
    }
  }

  private async step(id: string, batch: Pending[]): Promise<ActorRecord> {
    // After a revision conflict the actor is read again from the store: its stored deadlines may
    // be ones this process never armed (a write reported as failed that had committed), so every
    // deadline of what it steps to is armed (arming is idempotent; a stale firing is ignored).
    let reloaded = false;
    for (let attempt = 0; ; attempt++) {
      let live = this.live.get(id);
      if (!live) {
        const record = await this.repo.getStored(id);
        if (!record) throw new UnknownActorError(id);
        if (record.quarantine) return record;
        if (!this.restoreFinished && !this.defs.has(record.machineId)) {
          await this.restoreRan; // start-up: its machine registers before the restore
          continue;
        }
        const takes = this.defs.get(record.machineId)?.takesWhenFinal;
        if (record.final && !(takes && batch.some((p) => takes(p.event)))) return record;
        const loaded = await this.load(record);
        if (!loaded) return (await this.repo.get(id))!;
        live = loaded;
      }
      const stepper = this.stepperOf(live.def);
      let next = live.snapshot;
      const actions: ExecutableAction[] = [];
      const events: AnyEventObject[] = [];
      for (const p of batch) {
        if (next.status !== 'active') break; // reached a final state earlier in this batch
        if (isFinal(live.def, next) && !live.def.takesWhenFinal?.(p.event)) continue; // ended: only what it takes
        const [after, acts] = stepper.transition(next, p.event);
        // Nothing happened: nothing to persist. (A re-entry can return the same snapshot object
        // *with* entry actions to run, so the actions decide, not object identity.)
        if (acts.length === 0 && (after === next || (after.value === next.value && after.context === next.context)))
          continue;
        next = after;
        actions.push(...acts);
        events.push(p.event);
      }
      if (events.length === 0) {
        this.keep(live);
        if (reloaded) await this.armTimers(live, {});
        return this.answer(live);
      }
      const prevDeadlines = reloaded ? {} : deadlinesOf(live.snapshot);
      const previousStatus = live.record.status;
      const def = live.def;
      const snapshotJson = storedSnapshotJson(def, next, live.record);
      // nothing persisted would change: a start-up reconciliation that tells strategies what they
      // already knew writes nothing
      if (this.changesNothing(live, next, snapshotJson, actions)) {
        const same: Live = { def, record: live.record, snapshot: next, json: snapshotJson };
        this.keep(same);
        if (reloaded) await this.armTimers(same, {});
        return this.answer(same);
      }
      try {
        const current = live.record;
        const { patch, outOf } = stepOf(def, current, next, snapshotJson, this.clock.now());
        const { record, out } = await this.persist(
          id,
          (tx) => this.repo.update(current, patch, tx),
          outOf,
          def.stepWritesOf?.(next, live.snapshot) ?? null,
        );
        const updated: Live = { def, record: slim(record), snapshot: next, json: snapshotJson };
        if (this.stepWrites.has(id)) updated.answered = out;
        this.keep(updated);
        await this.afterWrite(updated, prevDeadlines, actions, previousStatus, events, out);
        return out;
      } catch (err) {
        if (err instanceof RevisionConflictError && attempt < 3) {
          this.log.warn({ actorId: id }, 'revision conflict, reloading actor');
          this.dropLive(id);
          reloaded = true;
          continue;
        }
        throw err;
      }
    }
  }

  /** The pure stepper of a definition, built once. */
  private stepperOf(def: ActorDefinition): PureStepper {
    let s = this.steppers.get(def);
    if (!s) this.steppers.set(def, (s = new PureStepper(def.logic)));
    return s;
  }

  /**
   * What follows a persisted step: persisted means done, so nothing here can
   * undo or fail the step. Timers are re-armed from the deadlines (a failure there is logged and
   * repaired in the background, see {@link repairTimers}), the machine's actions run (each on its
   * own: one that throws is logged and the others still run), and `changed` reaches every
   * listener (one that throws does not keep it from the others).
   */
  private afterWrite(
    live: Live,
    prevDeadlines: Record<string, number>,
    actions: ExecutableAction[],
    previousStatus: string | null,
    events: AnyEventObject[],
    full: ActorRecord,
  ): Promise<void> | void {
    // a promise only when there is something to arm: the actions otherwise run in the write's own turn
    if (this.timersChange(live, prevDeadlines))
      return this.armTimers(live, prevDeadlines).then(() =>
        this.runEffects(live, actions, previousStatus, events, full),
      );
    this.runEffects(live, actions, previousStatus, events, full);
  }

  /** Whether a step of `live` from `prevDeadlines` arms or cancels a timer (or its timers await repair). */
  private timersChange(live: Live, prevDeadlines: Record<string, number>): boolean {
    if (this.timerRepairs.has(live.record._id)) return true;
    const next = live.record.final ? {} : deadlinesOf(live.snapshot);
    for (const name in next) if (prevDeadlines[name] !== next[name]) return true;
    for (const name in prevDeadlines) if (!(name in next)) return true;
    return false;
  }

  /** Arms and cancels the timers of `live` from its deadlines (a failure is repaired in the background). */
  private async armTimers(live: Live, prevDeadlines: Record<string, number>): Promise<void> {
    const id = live.record._id;
    const nextDeadlines = live.record.final ? {} : deadlinesOf(live.snapshot);
    try {
      if (this.timerRepairs.has(id)) await this.rearmAll(id, nextDeadlines);
      else {
        for (const [name, atMs] of Object.entries(nextDeadlines)) {
          if (prevDeadlines[name] !== atMs) await this.timers.schedule(id, name, atMs);
        }
        for (const name of Object.keys(prevDeadlines)) {
          if (!(name in nextDeadlines)) await this.timers.cancel(id, name);
        }
      }
    } catch (err) {
      this.timerArmingFailed(id, err);
    }
  }

  /** Runs the actions of a persisted step (each on its own) and emits `changed` (see {@link afterWrite}). */
  private runEffects(
    live: Live,
    actions: ExecutableAction[],
    previousStatus: string | null,
    events: AnyEventObject[],
    full: ActorRecord,
  ): void {
    this.emitChanged(live, previousStatus, events, this.runActions(live, actions), full);
  }

  /** Runs a step's actions (a failing one is logged); @returns the events they emitted (`xstate.emit`). */
  private runActions(live: Live, actions: ExecutableAction[]): AnyEventObject[] {
    const emitted: AnyEventObject[] = [];
    for (const action of actions) {
      if (action.type === 'xstate.emit') {
        emitted.push((action.params as { event: AnyEventObject }).event);
        continue;
      }
      try {
        action.exec?.(action.info as never, action.params as never);
      } catch (err) {
        this.log.error({ err, actorId: live.record._id, action: action.type }, 'actor action failed');
      }
    }
    return emitted;
  }

  /** Hands a step's change to the `changed` listeners (a failing one is logged). */
  private emitChanged(
    live: Live,
    previousStatus: string | null,
    events: AnyEventObject[],
    emitted: AnyEventObject[],
    full: ActorRecord,
  ): void {
    const id = live.record._id;
    const change: ActorChange = { record: full, snapshot: live.snapshot, previousStatus, events, emitted };
    for (const listener of this.listeners('changed')) {
      try {
        (listener as (c: ActorChange) => void)(change);
      } catch (err) {
        this.log.error({ err, actorId: id }, 'a changed listener failed');
      }
    }
  }

  /** Actors whose timers could not be armed and wait for {@link repairTimers}. */
  private readonly timerRepairs = new Map<string, { attempt: number; timer: NodeJS.Timeout | null }>();

  /** Actors whose timers could not be (re-)armed and are being repaired (for /healthz). */
  get timersFailing(): number {
    return this.timerRepairs.size;
  }

  /** Cancels every timer of `id` and arms exactly `deadlines` (idempotent). */
  private async rearmAll(id: string, deadlines: Record<string, number>): Promise<void> {
    await this.timers.cancelAll(id);
    for (const [name, atMs] of Object.entries(deadlines)) await this.timers.schedule(id, name, atMs);
    const repair = this.timerRepairs.get(id);
    if (repair?.timer) clearTimeout(repair.timer);
    this.timerRepairs.delete(id);
  }

  private timerArmingFailed(id: string, err: unknown): void {
    const repair = this.timerRepairs.get(id) ?? { attempt: 0, timer: null };
    repair.attempt++;
    this.timerRepairs.set(id, repair);
    if (repair.attempt === 1 || repair.attempt % 20 === 0)
      this.log.error(
        { err, actorId: id, attempt: repair.attempt },
        'arming timers failed; repairing in the background',
      );
    if (repair.timer) clearTimeout(repair.timer);
    const delay = backoffMs(repair.attempt, 100, 30_000);
    repair.timer = setTimeout(() => {
      repair.timer = null;
      void this.enqueue(id, () => this.repairTimers(id));
    }, delay);
    repair.timer.unref();
  }

  /**
   * Re-arms the timers of `id` from its current deadlines (in its queue, so no step races it);
   * a final or unknown actor has its timers removed. Retried with backoff until it succeeds.
   */
  private async repairTimers(id: string): Promise<void> {
    if (!this.timerRepairs.has(id)) return;
    try {
      const live = this.live.get(id);
      const deadlines = live
        ? live.record.final
          ? {}
          : deadlinesOf(live.snapshot)
        : this.storedDeadlines(await this.repo.getStored(id));
      await this.rearmAll(id, deadlines);
      this.log.warn({ actorId: id }, 'timers repaired');
    } catch (err) {
      this.timerArmingFailed(id, err);
    }
  }
}
