import v8 from 'node:v8';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { str } from '../../../engine/decimal.js';
import { PureStepper } from '../../../engine/actor-host.js';
import { createLogger } from '../../../engine/logger.js';
import { startServices, type Services } from '../../../engine/service.js';
import { stopLossMachine } from '../../../machines/stop-loss.js';
import { trailingStopMachine } from '../../../machines/trailing-stop.js';
import type { OrderRequest } from '../../../schemas/orders.js';
import { testConfig } from '../../helpers.js';

/**
 * Issue 15, item 5 (memory per armed strategy, arming rate): arming a strategy makes no hidden
 * class (V8 map) of its own. Records with a lazily derived view, request inputs and strategy
 * contexts of one type share their hidden class and keep fast properties; before, each record's
 * own `view` accessor, object spreads gone megamorphic and a context copied onto `{}` field by
 * field made new maps and descriptor arrays in the old generation at every strategy, which was
 * most of the old space left fragmented after arming a million.
 *
 * Uses V8's natives syntax (`%HaveSameMap`, `%HasFastProperties`), switched on for the functions
 * compiled here.
 */
v8.setFlagsFromString('--allow-natives-syntax');
const sameMap = new Function('a', 'b', 'return %HaveSameMap(a, b)') as (a: object, b: object) => boolean;
const fast = new Function('a', 'return %HasFastProperties(a)') as (a: object) => boolean;

let s: Services;
let userId: string;
let tokens: string[];

beforeAll(async () => {
  ({ services: s } = await startServices(testConfig(), createLogger('silent'), {}));
  userId = (await s.users.provision('demo', 'hidden-classes', null)).user._id;
  tokens = s.venue
    .markets()
    .map((m) => m.tokens[0]?.tokenId)
    .filter((t): t is string => t !== undefined && (s.venue.touch(t).bid?.gt('0.2') ?? false) && (s.venue.touch(t).bid?.lt('0.8') ?? false))
    .slice(0, 4);
  // shares to sell (stops do not reserve them, but the request check wants them held)
  for (const t of tokens) {
    await s.venue.submit({ orderId: `seed-${t.slice(0, 10)}`, userId, tokenId: t, side: 'buy', kind: 'limit', price: '0.99', size: '5', quoteAmount: null, timeInForce: 'IOC', postOnly: false });
  }
});

afterAll(async () => {
  await s?.stop();
});

function body(i: number): OrderRequest {
  const token = tokens[i % tokens.length]!;
  const bid = s.venue.touch(token).bid!;
  return i % 2 === 1
    ? { symbol: token, side: 'sell', type: 'TRAILING_STOP', size: '5', execution: { high_water_mark: str(bid.plus('0.05')), trailing_offset: '0.1' } }
    : { symbol: token, side: 'sell', type: 'STOP_LOSS', price: str(bid.minus('0.05')), size: '5' };
}

describe('arming makes no hidden class of its own', () => {
  it('request inputs and the records the strategy service returns share their hidden class by type, with fast properties; the view reads, spreads and serializes as a field', async () => {
    // warm up: the first ones of each type may still be settling their field representations
    for (let i = 0; i < 40; i++) await s.strategies.start('demo', s.strategies.check(userId, body(i)));
    const inputs = [0, 1, 2, 3].map((i) => s.strategies.check(userId, body(40 + i)));
    expect(sameMap(inputs[0]!, inputs[2]!)).toBe(true); // STOP_LOSS
    expect(sameMap(inputs[1]!, inputs[3]!)).toBe(true); // TRAILING_STOP
    for (const x of inputs) expect(fast(x)).toBe(true);
    const records = [];
    for (const input of inputs) records.push(await s.strategies.start('demo', input));
    expect(sameMap(records[0]!, records[2]!)).toBe(true);
    expect(sameMap(records[1]!, records[3]!)).toBe(true);
    expect(sameMap(records[0]!, records[1]!)).toBe(true); // one record shape for both types
    for (const r of records) expect(fast(r)).toBe(true);
    // the view: derived on first read, an ordinary field to spreads and JSON, replaced by assignment
    const r = records[0]!;
    expect(r.view).toMatchObject({ type: 'STOP_LOSS', status: 'ACTIVE' });
    expect({ ...r }.view).toBe(r.view);
    expect(JSON.parse(JSON.stringify(r)).view).toEqual(JSON.parse(JSON.stringify(r.view)));
    expect(Object.keys(r)).toContain('view');
    r.view = { replaced: true };
    expect(r.view).toEqual({ replaced: true });
    expect(sameMap(r, records[2]!)).toBe(true); // assigning the view keeps the hidden class
  });

  it('the initial contexts of STOP_LOSS and TRAILING_STOP (the host initial snapshots) share their hidden class by type, with fast properties', () => {
    const steppers = [new PureStepper(stopLossMachine), new PureStepper(trailingStopMachine)];
    const contextAt = (i: number) => steppers[i % 2]!.initial(s.strategies.check(userId, body(100 + i)))[0].context as Record<string, unknown>;
    for (let i = 0; i < 20; i++) contextAt(i); // the first one is XState's own path (it makes the template)
    const contexts = [0, 1, 2, 3].map((i) => contextAt(200 + i));
    expect(sameMap(contexts[0]!, contexts[2]!)).toBe(true);
    expect(sameMap(contexts[1]!, contexts[3]!)).toBe(true);
    for (const c of contexts) expect(fast(c)).toBe(true);
    // the fields in the order an object spread of the input gave them: the input's, then the defaults
    expect(Object.keys(contexts[1]!).slice(0, 20)).toEqual([
      'recordId', 'userId', 'type', 'side', 'tokenId', 'tickSize', 'minSize', 'price', 'size', 'quoteAmount', 'execution', 'warnings', 'message',
      'clientOrderId', 'metadata', 'createdAtMs', 'touch', 'highWaterMark', 'offsetPct', 'offsetAbs',
    ]);
    expect(Object.keys(contexts[1]!).slice(20, 24)).toEqual(['filledSize', 'matchedAmount', 'children', 'working']);
  });
});
