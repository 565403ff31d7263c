/**
 * The capture replay's clock applies what came due in bounded venue operations:
 * a start, a fast replay or a catch-up with thousands of due events goes in batches
 * of at most `maxBatch`, one per event-loop turn, in order, nothing skipped or applied twice.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../engine/clock.js';
import { dec } from '../../../engine/decimal.js';
import { CaptureReplay, type CapturePosition } from '../../../engine/venue/capture-replay.js';
import type { Capture, CaptureEvent } from '../../../engine/venue/capture.js';

const silent = { info: () => undefined, warn: () => undefined, error: () => undefined } as never;

function capture(n: number, startMs: number, stepMs: number): Capture {
  const events: CaptureEvent[] = [];
  for (let i = 0; i < n; i++)
    events.push({ kind: 'trade', atMs: startMs + i * stepMs, tokenId: 't', price: dec('0.5') });
  return {
    markets: [],
    events,
    startMs,
    endMs: startMs + (n - 1) * stepMs,
    skips: { errorRows: 0, unusable: 0, malformed: 0, naValues: 0 },
  } as unknown as Capture;
}

const nextTurn = () => new Promise<void>((r) => setImmediate(r));

describe('CaptureReplay batches (no long venue operation)', () => {
  it('applies 2,000 events due at once in batches of at most maxBatch, one per event-loop turn, in order', async () => {
    const clock = new ManualClock(1_000_000);
    const cap = capture(2_000, 0, 1);
    const batches: { events: CaptureEvent[]; position: CapturePosition }[] = [];
    // resumed at capture time 2,000 ms: every event is due at the start
    const replay = new CaptureReplay({
      capture: cap,
      clock,
      log: silent,
      speed: 1,
      maxBatch: 500,
      resumeFrom: { next: 0, recordedMs: 2_000 },
      apply: (events, position) => void batches.push({ events, position }),
    });
    replay.start();
    expect(batches).toHaveLength(1); // the first batch at once, the rest in later turns
    expect(batches[0]!.events).toHaveLength(500);
    expect(batches[0]!.position).toEqual({ next: 500, recordedMs: 499 });
    for (let i = 0; i < 5 && !replay.done; i++) await nextTurn();
    expect(batches.map((b) => b.events.length)).toEqual([500, 500, 500, 500]);
    expect(batches.flatMap((b) => b.events)).toEqual(cap.events);
    expect(batches.map((b) => b.position.next)).toEqual([500, 1000, 1500, 2000]);
    expect(batches[3]!.position.recordedMs).toBe(cap.endMs);
    expect(replay.done).toBe(true);
    replay.stop();
  });

  it('stop() also cancels the batches still due', async () => {
    const clock = new ManualClock(1_000_000);
    const cap = capture(2_000, 0, 1);
    let applied = 0;
    const replay = new CaptureReplay({
      capture: cap,
      clock,
      log: silent,
      speed: 1,
      maxBatch: 500,
      resumeFrom: { next: 0, recordedMs: 5_000 },
      apply: (events) => void (applied += events.length),
    });
    replay.start();
    replay.stop();
    await nextTurn();
    await nextTurn();
    expect(applied).toBe(500);
    expect(replay.applied).toBe(500);
  });

  it('a step with fewer due events than maxBatch applies them all at once (as before)', () => {
    const clock = new ManualClock(0);
    const cap = capture(100, 0, 10);
    const sizes: number[] = [];
    const replay = new CaptureReplay({
      capture: cap,
      clock,
      log: silent,
      speed: 1,
      apply: (events) => void sizes.push(events.length),
    });
    replay.start(); // the event at capture time 0
    clock.advance(500);
    replay.step();
    expect(sizes).toEqual([1, 50]);
    replay.stop();
  });

  it('runs at most maxInFlight batches ahead of their settlement, and goes on as each settles, in order', async () => {
    const clock = new ManualClock(1_000_000);
    const cap = capture(2_000, 0, 1);
    const pending: (() => void)[] = [];
    const batches: number[] = [];
    const replay = new CaptureReplay({
      capture: cap,
      clock,
      log: silent,
      speed: 1,
      maxBatch: 100,
      maxInFlight: 3,
      resumeFrom: { next: 0, recordedMs: 2_000 },
      apply: (events, position) => {
        batches.push(position.next);
        return new Promise<void>((settle) => pending.push(settle));
      },
    });
    replay.start();
    for (let i = 0; i < 5; i++) await nextTurn();
    // three applied, none settled: the replay waits although more are due
    expect(batches).toEqual([100, 200, 300]);
    expect(replay.batchesInFlight).toBe(3);
    pending.shift()!(); // the oldest settles: one more goes
    for (let i = 0; i < 5; i++) await nextTurn();
    expect(batches).toEqual([100, 200, 300, 400]);
    while (!replay.done) {
      pending.shift()!();
      await nextTurn();
    }
    for (const settle of pending.splice(0)) settle();
    await replay.whenSettled();
    expect(batches).toEqual(Array.from({ length: 20 }, (_, i) => (i + 1) * 100));
    expect(replay.batchesInFlight).toBe(0);
    replay.stop();
  });
});
