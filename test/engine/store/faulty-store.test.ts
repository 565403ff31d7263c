import { describe, expect, it } from 'vitest';
import { SqliteStore } from '../../../engine/store/sqlite.js';
import { FaultyStore, InjectedFault, prng } from './faulty-store.js';

interface Row {
  _id: string;
  n: number;
}

async function open() {
  const store = new FaultyStore(await SqliteStore.open(null));
  const c = await store.collection<Row>('things');
  const other = await store.collection<Row>('other');
  return { store, c, other };
}

describe('FaultyStore (fault injection over the store port)', () => {
  it('fails the Nth write of a collection (counted from the rule), and only that one; nothing is written', async () => {
    const { store, c, other } = await open();
    await c.insertOne({ _id: 'a', n: 0 });
    const rule = store.failNth('things', 'updateOne', 2);
    await other.updateOne({ _id: 'x' }, { n: 1 }, { upsert: true }); // another collection: not counted
    expect(await c.updateOne({ _id: 'a' }, { n: 1 })).toBe(1);
    await expect(c.updateOne({ _id: 'a' }, { n: 2 })).rejects.toBeInstanceOf(InjectedFault);
    expect(await c.findOne({ _id: 'a' })).toEqual({ _id: 'a', n: 1 });
    expect(await c.updateOne({ _id: 'a' }, { n: 3 })).toBe(1);
    expect(rule).toMatchObject({ matched: 3, fired: 1 });
    expect(store.faults('things')).toBe(1);
    expect(store.log[0]).toMatchObject({
      info: { collection: 'things', op: 'updateOne', set: { n: 2 } },
      effect: 'fail',
    });
  });

  it('fails writes matching a predicate; `after` applies the write and still reports failure; reads pass', async () => {
    const { store, c } = await open();
    const rule = store.failWhen((i) => i.op === 'insertOne' && (i.doc as Row).n > 5, { when: 'after' });
    await c.insertOne({ _id: 'small', n: 1 });
    await expect(c.insertOne({ _id: 'big', n: 9 })).rejects.toThrow(/injected fault .*insertOne on things/);
    expect(await c.findOne({ _id: 'big' })).toEqual({ _id: 'big', n: 9 }); // ambiguous write: it happened
    expect(await c.count({})).toBe(2);
    rule.remove();
    await c.insertOne({ _id: 'big2', n: 9 });
  });

  it('can be switched off and on at runtime; rules are kept', async () => {
    const { store, c } = await open();
    store.failWhen(() => true);
    await expect(c.insertOne({ _id: 'a', n: 1 })).rejects.toBeInstanceOf(InjectedFault);
    store.enabled = false;
    await c.insertOne({ _id: 'a', n: 1 });
    store.enabled = true;
    await expect(c.deleteMany({})).rejects.toBeInstanceOf(InjectedFault);
    store.clear();
    expect(await c.deleteMany({})).toBe(1);
  });

  it('random faults are reproducible from the seed', async () => {
    const pattern = async (seed: number) => {
      const { store, c } = await open();
      store.failRandomly({ seed, probability: 0.3, collections: ['things'] });
      const out: boolean[] = [];
      for (let i = 0; i < 40; i++)
        out.push(
          await c.insertOne({ _id: `k${i}`, n: i }).then(
            () => true,
            () => false,
          ),
        );
      return out;
    };
    const a = await pattern(42);
    expect(await pattern(42)).toEqual(a);
    expect(a.filter((x) => !x).length).toBeGreaterThan(3);
    expect(a.filter((x) => !x).length).toBeLessThan(25);
    expect(await pattern(43)).not.toEqual(a);
    expect(prng(1)()).toBe(prng(1)());
  });

  it('delays chosen operations and fires at most `times` times; reads only when named', async () => {
    const { store, c } = await open();
    const rule = store.delay(30, { collections: ['things'], ops: ['insertOne', 'findOne'], times: 1 });
    let done = false;
    const p = c.insertOne({ _id: 'a', n: 1 }).then(() => (done = true));
    await new Promise((r) => setTimeout(r, 5));
    expect(done).toBe(false);
    await p;
    expect(await c.findOne({ _id: 'a' })).toEqual({ _id: 'a', n: 1 });
    expect(rule.fired).toBe(1);
    const failReads = store.failNth('things', 'find', 1);
    await expect(c.find({})).rejects.toBeInstanceOf(InjectedFault);
    expect(failReads.fired).toBe(1);
    expect(await c.find({})).toHaveLength(1);
  });
});
