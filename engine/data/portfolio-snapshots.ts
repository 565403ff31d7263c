/**
 * The {@link SnapshotPort} of the trader aggregates over the store: the collection
 * `portfolioSnapshots` holds the latest snapshot as a header document and its parts, each a JSON
 * document of about 500 KB of rows (a document stays far below MongoDB's 16 MB limit however large
 * the aggregates grow), the header switched to a new snapshot's parts in one transaction; the
 * history's collections count the records before a snapshot's position.
 */

import type { Store } from '../store/port.js';
import type { TradeHistory } from './history.js';
import type { PortfolioSnapshot, RecordCounts, SnapshotPort } from './portfolio.js';

/** Collection of the snapshot's documents. */
export const PORTFOLIO_SNAPSHOTS = 'portfolioSnapshots';

/** Characters of JSON after which a part document is written (a part holds whole rows: a little more). */
const PART_CHARS = 500_000;

/** The header: which snapshot (its generation), in how many parts. */
interface Head {
  _id: 'head';
  /** The parts' generation (zero-padded save time and a counter): `part:<gen>:<i>`. */
  gen: string;
  parts: number;
  savedAtMs: number;
}

/** One part of a snapshot: part 0 the snapshot without positions and traders, the others a slice of either. */
interface Part {
  _id: string;
  json: string;
}

/** Lets the event loop run what waits (requests, timers) before going on. */
const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Opens `portfolioSnapshots` and gives the port the aggregates keep their snapshot through.
 *
 * A save writes the new snapshot's parts under a generation of their own, each in a transaction of
 * its own with the event loop running in between (a large snapshot is hundreds of MB of JSON: one
 * string of it could not even be built), then switches the header to that generation in one
 * transaction, then deletes the other generations' parts. A crash before the switch leaves the
 * previous snapshot in force (the unfinished parts are deleted by the next save).
 * @param now epoch ms of a save (recorded in the header).
 */
export async function storeSnapshots(store: Store, history: TradeHistory, now: () => number): Promise<SnapshotPort> {
  const col = await store.collection<Head | Part>(PORTFOLIO_SNAPSHOTS);
  const partId = (gen: string, i: number) => `part:${gen}:${String(i).padStart(6, '0')}`;
  let saves = 0;
  return {
    async load() {
      const head = (await col.findOne({ _id: 'head' })) as Head | null;
      if (!head?.gen) return null;
      const parts = (await col.find(
        { _id: { $gt: `part:${head.gen}:`, $lt: `part:${head.gen};` } },
        { sort: { _id: 1 } },
      )) as Part[];
      if (parts.length !== head.parts || parts.length === 0) return null;
      const snap = JSON.parse(parts[0]!.json) as PortfolioSnapshot;
      for (const p of parts.slice(1)) {
        const slice = JSON.parse(p.json) as Partial<Pick<PortfolioSnapshot, 'positions' | 'traders'>>;
        for (const r of slice.positions ?? []) snap.positions.push(r);
        for (const r of slice.traders ?? []) snap.traders.push(r);
      }
      return snap;
    },
    async save(snapshot) {
      const savedAtMs = now();
      const gen = `${String(savedAtMs).padStart(15, '0')}-${String(saves++).padStart(6, '0')}`;
      let parts = 0;
      const write = async (json: string) => {
        const _id = partId(gen, parts++);
        await store.transaction(async (tx) => tx.collection<Part>(PORTFOLIO_SNAPSHOTS).replaceOne({ _id, json }));
        await yieldToLoop();
      };
      await write(JSON.stringify({ ...snapshot, positions: [], traders: [] }));
      // rows serialized one at a time into parts of about PART_CHARS, the loop running after each part
      for (const key of ['positions', 'traders'] as const) {
        let rows: string[] = [];
        let chars = 0;
        for (const r of snapshot[key]) {
          const json = JSON.stringify(r);
          rows.push(json);
          chars += json.length;
          if (chars < PART_CHARS) continue;
          await write(`{"${key}":[${rows.join(',')}]}`);
          rows = [];
          chars = 0;
        }
        if (rows.length) await write(`{"${key}":[${rows.join(',')}]}`);
      }
      await store.transaction(async (tx) =>
        tx.collection<Head>(PORTFOLIO_SNAPSHOTS).replaceOne({ _id: 'head', gen, parts, savedAtMs }),
      );
      // the other generations' parts: the previous snapshot's, and any a crash left unfinished
      await col.deleteMany({ _id: { $gt: 'part:', $lt: `part:${gen}:` } });
      await col.deleteMany({ _id: { $gt: `part:${gen};`, $lt: 'part;' } });
    },
    async countBefore(blockTimestamp): Promise<RecordCounts> {
      const before = { blockTimestamp: { $lt: blockTimestamp } };
      const [trades, fills, cash] = await Promise.all([
        history.trades.count(before),
        history.fills.count(before),
        history.cash.count(before),
      ]);
      return { trades, fills, cash };
    },
  };
}
