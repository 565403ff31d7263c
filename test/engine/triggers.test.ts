import { describe, expect, it } from 'vitest';
import { TriggerIndex } from '../../engine/triggers.js';

/** Issue 12, item 15: a fired trigger is held until delivered, or armed again. */
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

  it('delivered drops only the hold it was given: a later firing stays held; rearm of a strategy armed meanwhile changes nothing', () => {
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
