/**
 * The venue journal's group commit and pipelined writes: entries appended together go to the
 * store in one write, in seq order, issued without waiting for earlier writes to be durable; an
 * entry is acknowledged once it and every earlier one are stored; a failed or ambiguous batch write
 * is retried until every entry of it is stored, and the entries behind it wait to be acknowledged
 * (a restart meanwhile drops them).
 */
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../engine/logger.js';
import { SqliteStore } from '../../../engine/store/sqlite.js';
import { VenueJournal, type StateRows } from '../../../engine/venue/journal.js';
import { FaultyStore, type HeldRule } from '../store/faulty-store.js';
import { poll } from '../../api/trading-kit.js';

const log = createLogger('silent');
const rows = (n: number): StateRows => ({ wallets: [], orders: [], capture: { next: n, recordedMs: n } });

async function openJournal(): Promise<{ store: FaultyStore; journal: VenueJournal }> {
  const store = new FaultyStore(await SqliteStore.open(null));
  const journal = await VenueJournal.open({ store, log, snapshot: () => ({ orderSeq: 0, wallets: [], orders: [] }) });
  return { store, journal };
}

/** Resolves once the held write is in flight (reached the store and held there), however loaded the machine. */
const inFlight = (held: HeldRule) =>
  poll(
    'the held write in flight',
    async () => held.fired,
    (n) => n === 1,
  );

async function storedSeqs(store: FaultyStore): Promise<number[]> {
  const c = await store.inner.collection<{ _id: string; seq: number }>('venueJournal');
  return (await c.find({}, { sort: { seq: 1 } })).map((d) => d.seq);
}

describe('VenueJournal group commit', () => {
  it('entries appended together: one insertMany while an earlier write is in flight; acked in order', async () => {
    const { store, journal } = await openJournal();
    const held = store.hold({ collections: ['venueJournal'], ops: ['insertOne'] });
    const acked: number[] = [];
    const first = journal.append(1, 1, rows(1)).then(() => acked.push(1));
    await inFlight(held);
    const later = [2, 3, 4, 5].map((seq) => journal.append(seq, seq, rows(seq)).then(() => acked.push(seq)));
    await poll(
      'entries 2–5 written',
      async () => journal.health.pendingWrites,
      (pending) => pending === 1,
    );
    expect(acked).toEqual([]); // 2–5 are stored, but 1 is not yet
    expect(await storedSeqs(store)).toEqual([2, 3, 4, 5]);
    expect(journal.health).toMatchObject({ ok: true, pendingWrites: 1 });
    held.release();
    await Promise.all([first, ...later]);
    expect(acked).toEqual([1, 2, 3, 4, 5]);
    expect(store.counts.get('venueJournal:insertOne')).toBe(1);
    expect(store.counts.get('venueJournal:insertMany')).toBe(1);
    expect(await storedSeqs(store)).toEqual([1, 2, 3, 4, 5]);
    expect(journal.health).toMatchObject({ ok: true, pendingWrites: 0 });
  });

  it('a failing batch write is retried (health not ok), entries behind it wait for their ack; none lost', async () => {
    const { store, journal } = await openJournal();
    const held = store.hold({ collections: ['venueJournal'], ops: ['insertOne'] });
    const done = [journal.append(1, 1, rows(1))];
    await inFlight(held);
    // the batch of 2 and 3, and its retries (each writes the entries again)
    const fail = store.failWhen(
      (i) => i.collection === 'venueJournal' && [2, 3].includes((i.doc as { seq?: number } | undefined)?.seq ?? 0),
    );
    done.push(...[2, 3].map((seq) => journal.append(seq, seq, rows(seq))));
    held.release();
    await done[0];
    await poll(
      'the batch write failed',
      async () => journal.health.ok,
      (ok) => !ok,
    );
    let fourthAcked = false;
    done.push(journal.append(4, 4, rows(4)).then(() => (fourthAcked = true))); // behind the failing batch
    await poll(
      'entry 4 written',
      async () => journal.health.pendingWrites,
      (pending) => pending === 2,
    );
    expect(await storedSeqs(store)).toEqual([1, 4]); // landed, not acknowledged
    expect(fourthAcked).toBe(false);
    expect(journal.health).toMatchObject({ ok: false, pendingWrites: 2 });
    fail.remove();
    await Promise.all(done);
    expect(await storedSeqs(store)).toEqual([1, 2, 3, 4]);
    expect(journal.health).toMatchObject({ ok: true, pendingWrites: 0, error: null });
  });

  it('an ambiguous batch write (stored, reported failed) is written again, acked once that write is', async () => {
    const { store, journal } = await openJournal();
    const held = store.hold({ collections: ['venueJournal'], ops: ['insertOne'] });
    const acked: number[] = [];
    const done = [journal.append(1, 1, rows(1)).then(() => acked.push(1))];
    await inFlight(held);
    // stored, then reported failed: what a commit whose fsync failed looks like (readable, not known durable)
    store.failNth('venueJournal', 'insertMany', 1, { when: 'after' });
    const rewrite = store.hold({ collections: ['venueJournal'], ops: ['replaceOne'], times: 3 });
    done.push(...[2, 3, 4].map((seq) => journal.append(seq, seq, rows(seq)).then(() => acked.push(seq))));
    held.release();
    await done[0];
    await poll(
      'the batch written again',
      async () => rewrite.fired,
      (n) => n === 3,
    );
    expect(await storedSeqs(store)).toEqual([1, 2, 3, 4]); // there, but not acknowledged before the rewrite is
    expect(acked).toEqual([1]);
    expect(journal.health).toMatchObject({ ok: false, pendingWrites: 3 });
    rewrite.release();
    await Promise.all(done);
    expect(acked).toEqual([1, 2, 3, 4]);
    expect(await storedSeqs(store)).toEqual([1, 2, 3, 4]);
    expect(journal.health).toMatchObject({ ok: true, pendingWrites: 0 });
  });
});

describe('VenueJournal recovery', () => {
  it('stops at a missing entry: those after it (never acknowledged) are dropped, the next append follows', async () => {
    const { store, journal } = await openJournal();
    // until the process ends
    store.failWhen((i) => i.collection === 'venueJournal' && (i.doc as { seq?: number } | undefined)?.seq === 2);
    const acked: number[] = [];
    for (const seq of [1, 2, 3, 4]) {
      void journal.append(seq, seq, rows(seq)).then(() => acked.push(seq));
      await new Promise((r) => setImmediate(r)); // each its own write
    }
    await poll(
      'entries 1, 3 and 4 written',
      async () => journal.health.pendingWrites,
      (pending) => pending === 1,
    );
    await poll(
      'entry 1 acknowledged',
      async () => acked,
      (a) => a.length === 1,
    );
    expect(await storedSeqs(store)).toEqual([1, 3, 4]);
    expect(acked).toEqual([1]);
    // the process ends here (kill -9), entry 2 still being retried: a restart on the same store
    const restarted = await VenueJournal.open({
      store: store.inner,
      log,
      snapshot: () => ({ orderSeq: 0, wallets: [], orders: [] }),
    });
    const applied: number[] = [];
    const { replayed } = await restarted.recover((r) => applied.push(r.capture!.next));
    expect({ replayed, applied, lastSeq: restarted.lastSeq }).toEqual({ replayed: 1, applied: [1], lastSeq: 1 });
    expect(await storedSeqs(store)).toEqual([1]);
    await restarted.append(2, 2, rows(20));
    expect(await storedSeqs(store)).toEqual([1, 2]);
  });
});

describe('VenueJournal checkpoint beside the journal', () => {
  it('a due checkpoint takes the state at its entry, lets later entries be written, names it once done', async () => {
    const store = new FaultyStore(await SqliteStore.open(null));
    let state = 0; // the venue's state: the seq of the last operation applied
    const orders = (n: number) => Array.from({ length: n }, (_, i) => ({ order: { orderId: `o${i}` }, at: state }));
    const journal = await VenueJournal.open({
      store,
      log,
      checkpointEvery: 3,
      // > one slice: serialized across event-loop turns
      snapshot: () => ({ orderSeq: state, wallets: [], orders: orders(1200) as never }),
    });
    const stateDocs = await store.inner.collection<{ _id: string; seq?: number; rows?: string }>('venueState');
    // entry 3 (the one the checkpoint covers) is held in flight
    const done = [1, 2].map((seq) => ((state = seq), journal.append(seq, seq, rows(seq))));
    await Promise.all(done);
    const held = store.hold({ collections: ['venueJournal'], ops: ['insertOne', 'insertMany'] });
    state = 3;
    const third = journal.append(3, 3, rows(3)); // checkpoint due: state 3 taken now
    state = 4; // the venue goes on before the checkpoint is serialized
    await new Promise((r) => setTimeout(r, 20));
    expect(await stateDocs.findOne({ _id: 'checkpoint' })).toBeNull(); // entry 3 not written: no pointer yet
    held.release();
    await third;
    const fourth = journal.append(4, 4, rows(4)); // written while the checkpoint may still run
    await fourth;
    await journal.settled();
    const pointer = await stateDocs.findOne({ _id: 'checkpoint' });
    expect(pointer).toMatchObject({ seq: 3, orderSeq: 3 });
    const chunks = (await stateDocs.find({})).filter((d) => d._id !== 'checkpoint');
    const stored = chunks.flatMap((c) => (JSON.parse(c.rows!) as { orders: { at: number }[] }).orders);
    expect(stored).toHaveLength(1200);
    expect(new Set(stored.map((o) => o.at))).toEqual(new Set([3])); // the state taken at entry 3, not later
    expect(await storedSeqs(store)).toEqual([4]); // entries up to 3 removed, 4 kept
  });
});

describe('VenueJournal checkpoint cadence', () => {
  it('waits as many entries as the last checkpoint held rows (over checkpointEvery), after a restart too', async () => {
    const store = new FaultyStore(await SqliteStore.open(null));
    const orders = Array.from({ length: 7 }, (_, i) => ({ order: { orderId: `o${i}` } }));
    const open = () =>
      VenueJournal.open({
        store,
        log,
        checkpointEvery: 3,
        snapshot: () => ({ orderSeq: 0, wallets: [], orders: orders as never }),
      });
    const stateDocs = await store.inner.collection<{ _id: string; seq?: number }>('venueState');
    const pointerSeq = async () => (await stateDocs.findOne({ _id: 'checkpoint' }))?.seq ?? null;
    const journal = await open();
    const seen: (number | null)[] = [];
    for (let seq = 1; seq <= 12; seq++) {
      await journal.append(seq, seq, rows(seq));
      await journal.settled();
      seen.push(await pointerSeq());
    }
    // the first after 3 entries (no state known yet), the next 7 entries later: the state holds 7 rows
    expect(seen).toEqual([null, null, 3, 3, 3, 3, 3, 3, 3, 10, 10, 10]);
    const restarted = await open();
    await restarted.recover(() => {});
    // 2 entries replayed since the checkpoint at 10: the next is due at 17, not 13
    for (let seq = 13; seq <= 17; seq++) {
      await restarted.append(seq, seq, rows(seq));
      await restarted.settled();
      seen.push(await pointerSeq());
    }
    expect(seen.slice(12)).toEqual([10, 10, 10, 10, 17]);
  });
});
