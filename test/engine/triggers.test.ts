import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { Dec } from '../../engine/decimal.js';
import { micro, TriggerIndex } from '../../engine/triggers.js';

/** A fired trigger is held until delivered, or armed again. */
describe('TriggerIndex: fired triggers are delivered or armed again', () => {
  const touch = (bid: string | null, ask: string | null) => ({ bid, ask });

  it('a fired stop is out of the ladders while its touch is delivered; rearm puts it back as it was', () => {
    const t = new TriggerIndex();
    t.set('s1', 'tok', { bidAtOrBelow: '0.5' });
    expect(t.fire('tok', touch('0.5', '0.52'))).toEqual(['s1']);
    expect(t.has('s1')).toBe(false);
    expect(t.pendingDeliveries).toBe(1);
    expect(t.fire('tok', touch('0.49', '0.52'))).toEqual([]); // not fired twice while in delivery
    const held = t.held('s1');
    expect(t.rearm('s1', held)).toBe(true);
    expect(t.has('s1')).toBe(true);
    expect(t.pendingDeliveries).toBe(0);
    expect(t.fireOne('s1', 'tok', touch('0.48', '0.5'))).toBe(true);
  });

  it('delivered drops only its own hold: a later firing stays held; rearm of one armed meanwhile is a no-op', () => {
    const t = new TriggerIndex();
    t.set('s1', 'tok', { bidAtOrBelow: '0.5' });
    t.fire('tok', touch('0.5', '0.52'));
    const first = t.held('s1');
    t.set('s1', 'tok', { bidAtOrBelow: '0.4' }); // the strategy's new watch, registered after it handled the touch
    expect(t.fireOne('s1', 'tok', touch('0.4', '0.42'))).toBe(true); // ... fires at once
    const second = t.held('s1');
    t.delivered('s1', first);
    expect(t.held('s1')).toBe(second);
    expect(t.rearm('s1', second)).toBe(true);
    expect(t.rearm('s1', first)).toBe(false); // armed already
    t.remove('s1');
    expect(t.size).toBe(0);
    expect(t.pendingDeliveries).toBe(0);
  });

  it('any-watches fire on a retried delivery only when asked (withAny)', () => {
    const t = new TriggerIndex();
    t.set('i1', 'tok', { any: true });
    expect(t.fireOne('i1', 'tok', touch('0.4', '0.42'))).toBe(false);
    expect(t.fireOne('i1', 'tok', touch('0.4', '0.42'), true)).toBe(true);
    expect(t.has('i1')).toBe(false);
  });
});

/**
 * After any sequence of add / remove / touch changes (and the hold,
 * delivered and rearm API), exactly the strategies whose level the touch crossed fire, each once,
 * against a naive model that checks every armed strategy at every touch.
 */
describe('TriggerIndex against a naive model (property)', () => {
  type Touch = { bid: string | null; ask: string | null };
  type Watch = { bidAtOrBelow?: string; bidAbove?: string; askBelow?: string; askAtOrAbove?: string; any?: boolean };
  interface Reg {
    tokenId: string;
    watch: Watch;
  }
  const LEVELS = ['bidAtOrBelow', 'bidAbove', 'askBelow', 'askAtOrAbove'] as const;

  /** The naive model: armed registrations, fired ones held until delivered or armed again, the last touch per token. */
  class Model {
    readonly armed = new Map<string, Reg>();
    readonly held = new Map<string, Reg>();
    /** Tokens that ever had a watch (the index keeps their last touch from then on). */
    readonly last = new Map<string, Touch>();

    private static same(a: Reg, b: Reg): boolean {
      return (
        a.tokenId === b.tokenId &&
        (a.watch.any === true) === (b.watch.any === true) &&
        LEVELS.every((k) =>
          a.watch[k] === undefined
            ? b.watch[k] === undefined
            : b.watch[k] !== undefined && Number(a.watch[k]) === Number(b.watch[k]),
        )
      );
    }
    private static holds(w: Watch, t: Touch, withAny: boolean): boolean {
      const bid = t.bid === null ? null : Number(t.bid);
      const ask = t.ask === null ? null : Number(t.ask);
      return (
        (withAny && w.any === true) ||
        (bid !== null && w.bidAtOrBelow !== undefined && bid <= Number(w.bidAtOrBelow)) ||
        (bid !== null && w.bidAbove !== undefined && bid > Number(w.bidAbove)) ||
        (ask !== null && w.askBelow !== undefined && ask < Number(w.askBelow)) ||
        (ask !== null && w.askAtOrAbove !== undefined && ask >= Number(w.askAtOrAbove))
      );
    }
    set(id: string, tokenId: string, watch: Watch): boolean {
      const prev = this.armed.get(id);
      this.held.delete(id);
      if (!LEVELS.some((k) => watch[k] !== undefined) && watch.any !== true) {
        this.armed.delete(id);
        return prev !== undefined;
      }
      const reg = { tokenId, watch };
      if (prev && Model.same(prev, reg)) return false;
      this.armed.set(id, reg);
      if (!this.last.has(tokenId)) this.last.set(tokenId, { bid: null, ask: null });
      return true;
    }
    remove(id: string): void {
      this.armed.delete(id);
      this.held.delete(id);
    }
    private hold(id: string): void {
      this.held.set(id, this.armed.get(id)!);
      this.armed.delete(id);
    }
    fire(tokenId: string, t: Touch, force: boolean): string[] {
      const last = this.last.get(tokenId);
      if (!last || (!force && last.bid === t.bid && last.ask === t.ask)) return [];
      this.last.set(tokenId, t);
      const out = [...this.armed]
        .filter(([, r]) => r.tokenId === tokenId && Model.holds(r.watch, t, true))
        .map(([id]) => id);
      for (const id of out) this.hold(id);
      return out;
    }
    fireOne(id: string, tokenId: string, t: Touch, withAny: boolean): boolean {
      const r = this.armed.get(id);
      if (!r || r.tokenId !== tokenId || !Model.holds(r.watch, t, withAny)) return false;
      this.hold(id);
      return true;
    }
    delivered(id: string): void {
      this.held.delete(id);
    }
    rearm(id: string): boolean {
      const r = this.held.get(id);
      this.held.delete(id);
      if (!r || this.armed.has(id)) return false;
      this.armed.set(id, r);
      return true;
    }
  }

  const ids = fc.constantFrom('a', 'b', 'c', 'd', 'e');
  const tokens = fc.constantFrom('t1', 't2');
  /**
   * Prices over a narrow range so that levels are often crossed: mostly 3 decimals, some with 6
   * (trailing marks) and some written with a trailing zero ("0.450"): the index parses them itself.
   */
  const price = fc
    .tuple(
      fc.oneof(
        { arbitrary: fc.integer({ min: 400, max: 600 }).map((n) => String(n / 1000)), weight: 4 },
        { arbitrary: fc.integer({ min: 400_000, max: 600_000 }).map((n) => String(n / 1e6)), weight: 1 },
      ),
      fc.boolean(),
    )
    .map(([p, pad]) => (pad && p.includes('.') && p.split('.')[1]!.length < 6 ? `${p}0` : p));
  const side = fc.option(price, { nil: null, freq: 6 });
  const touchArb = fc.record({ bid: side, ask: side });
  /** A watch: any subset of the four levels; `any` now and then (iceberg drift, pegged). */
  const watchArb = fc.record(
    {
      bidAtOrBelow: price,
      bidAbove: price,
      askBelow: price,
      askAtOrAbove: price,
      any: fc.constantFrom(true, false, false, false),
    },
    { requiredKeys: [] },
  );
  const op = fc.oneof(
    {
      arbitrary: fc.record({ kind: fc.constant('set' as const), id: ids, tokenId: tokens, watch: watchArb }),
      weight: 4,
    },
    { arbitrary: fc.record({ kind: fc.constant('remove' as const), id: ids }), weight: 1 },
    {
      arbitrary: fc.record({
        kind: fc.constant('fire' as const),
        tokenId: tokens,
        touch: touchArb,
        force: fc.boolean(),
      }),
      weight: 5,
    },
    {
      arbitrary: fc.record({
        kind: fc.constant('fireOne' as const),
        id: ids,
        tokenId: tokens,
        touch: touchArb,
        withAny: fc.boolean(),
      }),
      weight: 2,
    },
    { arbitrary: fc.record({ kind: fc.constant('delivered' as const), id: ids, withToken: fc.boolean() }), weight: 2 },
    { arbitrary: fc.record({ kind: fc.constant('rearm' as const), id: ids, withToken: fc.boolean() }), weight: 2 },
  );

  it('fires exactly the strategies whose condition the touch meets, each once until delivered or armed again', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 80 }), (ops) => {
        const index = new TriggerIndex();
        const model = new Model();
        for (const o of ops) {
          switch (o.kind) {
            case 'set':
              expect(index.set(o.id, o.tokenId, o.watch)).toBe(model.set(o.id, o.tokenId, o.watch));
              break;
            case 'remove':
              index.remove(o.id);
              model.remove(o.id);
              break;
            case 'fire': {
              const fired = index.fire(o.tokenId, o.touch, o.force);
              expect(new Set(fired).size).toBe(fired.length); // each once
              expect([...fired].sort()).toEqual(model.fire(o.tokenId, o.touch, o.force).sort());
              break;
            }
            case 'fireOne':
              expect(index.fireOne(o.id, o.tokenId, o.touch, o.withAny)).toBe(
                model.fireOne(o.id, o.tokenId, o.touch, o.withAny),
              );
              break;
            case 'delivered':
              expect(index.held(o.id) !== undefined).toBe(model.held.has(o.id));
              index.delivered(o.id, o.withToken ? index.held(o.id) : undefined);
              model.delivered(o.id);
              break;
            case 'rearm':
              expect(index.rearm(o.id, o.withToken ? index.held(o.id) : undefined)).toBe(model.rearm(o.id));
              break;
          }
          for (const id of ['a', 'b', 'c', 'd', 'e']) expect(index.has(id)).toBe(model.armed.has(id));
          expect(index.size).toBe(model.armed.size);
          expect(index.pendingDeliveries).toBe(model.held.size);
          // a market's strategies: every one armed or held on the token, each once
          for (const tokenId of ['t1', 't2']) {
            const on = index.idsOn(tokenId);
            expect(new Set(on).size).toBe(on.length);
            expect([...on].sort()).toEqual(
              [...model.armed, ...model.held]
                .filter(([, r]) => r.tokenId === tokenId)
                .map(([id]) => id)
                .sort(),
            );
          }
        }
        // whatever is still armed fires at a forced touch that crosses everything it waits for (no strategy lost)
        for (const tokenId of ['t1', 't2']) {
          const extreme = { bid: '0.001', ask: '0.999' };
          const high = { bid: '0.999', ask: '0.001' };
          const fired = [...index.fire(tokenId, extreme, true), ...index.fire(tokenId, high, true)].sort();
          expect(fired).toEqual([...model.fire(tokenId, extreme, true), ...model.fire(tokenId, high, true)].sort());
          expect([...model.armed.values()].some((r) => r.tokenId === tokenId)).toBe(false);
        }
      }),
      { numRuns: 400 },
    );
  });

  it('many strategies registered before the next book update (a restart) fire as one by one would', () => {
    const many = fc.array(fc.record({ n: fc.integer({ min: 0, max: 299 }), tokenId: tokens, watch: watchArb }), {
      minLength: 40,
      maxLength: 400,
    });
    const later = fc.array(
      fc.oneof(
        fc.record({ kind: fc.constant('fire' as const), tokenId: tokens, touch: touchArb }),
        fc.record({ kind: fc.constant('remove' as const), n: fc.integer({ min: 0, max: 299 }) }),
        fc.record({
          kind: fc.constant('set' as const),
          n: fc.integer({ min: 0, max: 299 }),
          tokenId: tokens,
          watch: watchArb,
        }),
      ),
      { maxLength: 40 },
    );
    fc.assert(
      fc.property(many, later, (sets, ops) => {
        const index = new TriggerIndex();
        const model = new Model();
        for (const o of sets)
          expect(index.set(`s${o.n}`, o.tokenId, o.watch)).toBe(model.set(`s${o.n}`, o.tokenId, o.watch));
        for (const o of ops) {
          if (o.kind === 'fire') {
            const fired = index.fire(o.tokenId, o.touch);
            expect(new Set(fired).size).toBe(fired.length);
            expect([...fired].sort()).toEqual(model.fire(o.tokenId, o.touch, false).sort());
          } else if (o.kind === 'remove') {
            index.remove(`s${o.n}`);
            model.remove(`s${o.n}`);
          } else expect(index.set(`s${o.n}`, o.tokenId, o.watch)).toBe(model.set(`s${o.n}`, o.tokenId, o.watch));
          expect(index.size).toBe(model.armed.size);
        }
        for (const tokenId of ['t1', 't2']) {
          const fired = [
            ...index.fire(tokenId, { bid: '0.001', ask: '0.999' }, true),
            ...index.fire(tokenId, { bid: '0.999', ask: '0.001' }, true),
          ].sort();
          expect(fired).toEqual(
            [
              ...model.fire(tokenId, { bid: '0.001', ask: '0.999' }, true),
              ...model.fire(tokenId, { bid: '0.999', ask: '0.001' }, true),
            ].sort(),
          );
        }
      }),
      { numRuns: 150 },
    );
  });
});

/** The index parses prices to micro-units itself; the same as decimal.js, rounding included. */
describe('micro (property)', () => {
  it('equals the decimal.js result for any decimal string (exact up to 6 places, rounded beyond)', () => {
    const decimal = fc
      .tuple(
        fc.integer({ min: 0, max: 2 }),
        fc.string({ unit: fc.constantFrom(...'0123456789'.split('')), minLength: 0, maxLength: 9 }),
      )
      .map(([i, f]) => (f ? `${i}.${f}` : String(i)));
    fc.assert(
      fc.property(decimal, fc.constantFrom('floor' as const, 'ceil' as const, 'exact' as const), (p, round) => {
        const x = new Dec(p).times(1_000_000);
        expect(micro(p, round)).toBe(
          (round === 'ceil' ? x.ceil() : round === 'floor' ? x.floor() : x.round()).toNumber(),
        );
      }),
      { numRuns: 2000 },
    );
  });

  it('reads any plain decimal of up to 9 integer digits as decimal.js does; other text goes to decimal.js', () => {
    const digits = (min: number, max: number) =>
      fc.string({ unit: fc.constantFrom(...'0123456789'.split('')), minLength: min, maxLength: max });
    const text = fc.oneof(
      fc.tuple(digits(1, 11), fc.option(digits(0, 8))).map(([i, f]) => (f === null ? i : `${i}.${f}`)),
      fc.constantFrom('.5', '1.', '1e3', '-1', ' 1', '1 ', '0x10', '+1', '1.5.1', '', '00.000001', '999999999.999999'),
    );
    fc.assert(
      fc.property(text, fc.constantFrom('floor' as const, 'ceil' as const, 'exact' as const), (p, round) => {
        let expected: number | string;
        try {
          const x = new Dec(p).times(1_000_000);
          expected = (round === 'ceil' ? x.ceil() : round === 'floor' ? x.floor() : x.round()).toNumber();
        } catch {
          expected = 'throws';
        }
        let got: number | string;
        try {
          got = micro(p, round);
        } catch {
          got = 'throws';
        }
        expect(got).toBe(expected);
      }),
      { numRuns: 3000 },
    );
  });
});
