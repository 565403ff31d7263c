/**
 * `npm run bench:hidden-classes`: does arming a strategy make V8 hidden classes (maps) of its own?
 * Memory per armed strategy (bench:triggers at a million) depends on it: records with a lazily
 * derived view, request inputs and strategy contexts of one type should share their hidden class
 * and keep fast properties. Each record's own `view` accessor, object spreads gone megamorphic or a
 * context copied onto `{}` field by field made new maps and descriptor arrays in the old
 * generation at every strategy, most of the old space left fragmented after arming a million.
 *
 * A finding, not a test: what V8 does with a shape is the engine's business (and changes with
 * Node versions), so this prints each check with what was seen and exits 1 when one differs from
 * what the arming path was built for. Uses V8's natives syntax (`%HaveSameMap`,
 * `%HasFastProperties`), switched on for the functions compiled here.
 */
import v8 from 'node:v8';
import { isDeepStrictEqual } from 'node:util';
import { PureStepper } from '../engine/actor-host.js';
import { stopLossMachine } from '../machines/stop-loss.js';
import { trailingStopMachine } from '../machines/trailing-stop.js';
import { startArming, type Arming } from './arming.js';

v8.setFlagsFromString('--allow-natives-syntax');
const sameMap = new Function('a', 'b', 'return %HaveSameMap(a, b)') as (a: object, b: object) => boolean;
const fast = new Function('a', 'return %HasFastProperties(a)') as (a: object) => boolean;

let differs = 0;

/** Prints one finding: what was seen and whether it is what was expected. */
function check(what: string, seen: unknown, expected: unknown): void {
  const ok = isDeepStrictEqual(seen, expected);
  if (!ok) differs++;
  const expectedText = ok ? '' : ` (expected ${JSON.stringify(expected)})`;
  console.log(`  ${ok ? 'as built ' : 'DIFFERS  '} ${what}: ${JSON.stringify(seen)}${expectedText}`);
}

async function main(): Promise<void> {
  const arming = await startArming('hidden-classes');
  try {
    console.log(`bench:hidden-classes — node ${process.version} (V8 ${process.versions.v8})`);
    await findings(arming);
  } finally {
    await arming.services.stop();
  }
  console.log(
    differs === 0 ? 'every shape as built' : `${differs} finding(s) differ from what the arming path was built for`,
  );
  process.exitCode = differs === 0 ? 0 : 1;
}

async function findings({ services: s, userId, body }: Arming): Promise<void> {
  console.log('request inputs and the records the strategy service returns:');
  // warm-up: the first ones of each type may still be settling their field representations
  for (let i = 0; i < 40; i++) await s.strategies.start('demo', s.strategies.check(userId, body(i)));
  const inputs = [0, 1, 2, 3].map((i) => s.strategies.check(userId, body(40 + i)));
  check('two STOP_LOSS inputs share their hidden class', sameMap(inputs[0]!, inputs[2]!), true);
  check('two TRAILING_STOP inputs share their hidden class', sameMap(inputs[1]!, inputs[3]!), true);
  check('inputs with fast properties', inputs.map(fast), [true, true, true, true]);
  const records = [];
  for (const input of inputs) records.push(await s.strategies.start('demo', input));
  check('two STOP_LOSS records share their hidden class', sameMap(records[0]!, records[2]!), true);
  check('two TRAILING_STOP records share their hidden class', sameMap(records[1]!, records[3]!), true);
  check('one record shape for both types', sameMap(records[0]!, records[1]!), true);
  check('records with fast properties', records.map(fast), [true, true, true, true]);
  const r = records[0]!;
  r.view = { replaced: true };
  check('assigning the view keeps the hidden class', sameMap(r, records[2]!), true);

  console.log('initial contexts the host makes (PureStepper.initial):');
  const steppers = [new PureStepper(stopLossMachine), new PureStepper(trailingStopMachine)];
  const contextAt = (i: number) =>
    steppers[i % 2]!.initial(s.strategies.check(userId, body(100 + i)))[0].context as Record<string, unknown>;
  for (let i = 0; i < 20; i++) contextAt(i); // the first one is XState's own path (it makes the template)
  const contexts = [0, 1, 2, 3].map((i) => contextAt(200 + i));
  check('two STOP_LOSS contexts share their hidden class', sameMap(contexts[0]!, contexts[2]!), true);
  check('two TRAILING_STOP contexts share their hidden class', sameMap(contexts[1]!, contexts[3]!), true);
  check('contexts with fast properties', contexts.map(fast), [true, true, true, true]);
  // the fields in the order an object spread of the input gave them: the input's, then the defaults
  check("a TRAILING_STOP context's first fields", Object.keys(contexts[1]!).slice(0, 24), [
    'recordId',
    'userId',
    'type',
    'side',
    'tokenId',
    'tickSize',
    'minSize',
    'price',
    'size',
    'quoteAmount',
    'execution',
    'warnings',
    'message',
    'clientOrderId',
    'metadata',
    'createdAtMs',
    'touch',
    'highWaterMark',
    'offsetPct',
    'offsetAbs',
    'filledSize',
    'matchedAmount',
    'children',
    'working',
  ]);

  console.log("contexts after a step's assign (PureStepper.transition, layChain):");
  // a context read back from JSON (as an actor loaded from the store), its keys in an order no object
  // of this process had (a field of its own first), then canceled: two `assign`s, each XState's
  // Object.assign copy of the context onto an empty object
  const stepper = new PureStepper(stopLossMachine);
  const stopped = [0, 1, 2, 3].map((i) => {
    const [armed] = stepper.initial(s.strategies.check(userId, body(300 + 2 * i)));
    const context = JSON.parse(`{"hiddenClassesProbe":${i},${JSON.stringify(armed.context).slice(1)}`) as object;
    const restored = stopLossMachine.resolveState({ ...armed, context } as never);
    return stepper.transition(restored, { type: 'strategy.cancel' })[0].context as Record<string, unknown>;
  });
  check('stepped contexts with fast properties', stopped.map(fast), [true, true, true, true]);
  check('two stepped STOP_LOSS contexts share their hidden class', sameMap(stopped[0]!, stopped[2]!), true);
}

await main();
