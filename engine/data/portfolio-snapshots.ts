/**
 * The {@link SnapshotPort} of the trader aggregates over the store: the collection
 * `portfolioSnapshots` holds the latest snapshot as a header document and its JSON in parts (a
 * document stays far below MongoDB's 16 MB limit however large the aggregates grow), all replaced
 * in one transaction; the history's collections count the records before a snapshot's position.
 */

import type { Store } from '../store/port.js';
import type { TradeHistory } from './history.js';
import type { PortfolioSnapshot, RecordCounts, SnapshotPort } from './portfolio.js';

/** Collection of the snapshot's documents. */
export const PORTFOLIO_SNAPSHOTS = 'portfolioSnapshots';

/** Characters of JSON per part document. */
const PART_CHARS = 4_000_000;

/** The header: which snapshot, in how many parts. */
interface Head {
  _id: 'head';
  parts: number;
  savedAtMs: number;
}

/** One part of the snapshot's JSON. */
interface Part {
  _id: string;
  json: string;
}

/**
 * Opens `portfolioSnapshots` and gives the port the aggregates keep their snapshot through.
 * @param now epoch ms of a save (recorded in the header).
 */
export async function storeSnapshots(store: Store, history: TradeHistory, now: () => number): Promise<SnapshotPort> {
  const col = await store.collection<Head | Part>(PORTFOLIO_SNAPSHOTS);
  const partId = (i: number) => `part:${String(i).padStart(6, '0')}`;
  return {
    async load() {
      const head = (await col.findOne({ _id: 'head' })) as Head | null;
      if (!head) return null;
      const parts = (await col.find({ _id: { $gt: 'part:', $lt: 'part;' } }, { sort: { _id: 1 } })) as Part[];
      if (parts.length !== head.parts) return null;
      return JSON.parse(parts.map((p) => p.json).join('')) as PortfolioSnapshot;
    },
    async save(snapshot) {
      const json = JSON.stringify(snapshot);
      const n = Math.max(1, Math.ceil(json.length / PART_CHARS));
      await store.transaction(async (tx) => {
        const c = tx.collection<Head | Part>(PORTFOLIO_SNAPSHOTS);
        for (let i = 0; i < n; i++) {
          await c.replaceOne({ _id: partId(i), json: json.slice(i * PART_CHARS, (i + 1) * PART_CHARS) });
        }
        await c.deleteMany({ _id: { $gte: partId(n), $lt: 'part;' } });
        await c.replaceOne({ _id: 'head', parts: n, savedAtMs: now() });
      });
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
