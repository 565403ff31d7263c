/**
 * The real Polymarket history loaded at start (data/): `data-api-trades-2026-02-07.json` (100
 * trades of 79 wallets, Data API `/trades`) and `leader-wallet-trades-2026-02-21.csv` (470 fills of
 * one wallet). Each row becomes a tape row and its wallet's fill (`source: 'history'`, role
 * `taker`; the other party is unknown, so the tape's maker is null), at its real time (block = its
 * timestamp, log index = its order among the rows of that timestamp), its real price and size as
 * the decimal text of the row, its real transaction hash; its market is made known to the
 * {@link MarketRegistry} from the row's own fields. Loaded once (a `migrations` record; every write
 * is idempotent by `_id`, so a start that died half-way loads it again harmlessly).
 */
import fs from 'node:fs';
import type { Store } from '../store/port.js';
import { dataFile } from '../venue/markets.js';
import type { Clock } from '../clock.js';
import type { TradeHistory } from './history.js';
import type { MarketRegistry } from './markets.js';
import { notionalOf, type RecordedBatch } from './records.js';

/** The Data API trades file (in `data/`). */
export const DATA_API_TRADES_FILE = 'data-api-trades-2026-02-07.json';
/** The leader wallet's fills (in `data/`). */
export const LEADER_TRADES_FILE = 'leader-wallet-trades-2026-02-21.csv';
/** The `migrations` record of the load. */
export const REAL_HISTORY_MIGRATION = 'history: real Polymarket trades loaded';

/** One row of either file, its numbers as decimal text. */
export interface HistoryRow {
  wallet: string;
  side: 'BUY' | 'SELL';
  tokenId: string;
  conditionId: string;
  outcome: string;
  outcomeIndex: number | null;
  /** Decimal probability, the row's text. */
  price: string;
  /** Shares, the row's text. */
  size: string;
  /** Unix seconds. */
  timestamp: number;
  transactionHash: string;
  title: string | null;
  slug: string | null;
  eventSlug: string | null;
}

interface DataApiTrade {
  proxyWallet: string;
  side: 'BUY' | 'SELL';
  asset: string;
  conditionId: string;
  size: number;
  price: number;
  timestamp: number;
  title: string;
  slug: string;
  eventSlug: string;
  outcome: string;
  outcomeIndex: number;
  transactionHash: string;
}

/**
 * A JSON number as decimal text: the shortest text that reads back as the same double, which is
 * the text of a JSON literal of up to 17 significant digits (0.21999995306666104 stays that).
 */
function decimalText(n: number): string {
  const s = String(n);
  if (!/e/i.test(s)) return s;
  return n.toFixed(20).replace(/\.?0+$/, '');
}

/** The rows of the Data API trades file (a JSON array), in file order. */
export function parseDataApiTrades(text: string): HistoryRow[] {
  return (JSON.parse(text) as DataApiTrade[]).map((t) => ({
    wallet: t.proxyWallet.toLowerCase(),
    side: t.side,
    tokenId: t.asset,
    conditionId: t.conditionId.toLowerCase(),
    outcome: t.outcome,
    outcomeIndex: t.outcomeIndex,
    price: decimalText(t.price),
    size: decimalText(t.size),
    timestamp: t.timestamp,
    transactionHash: t.transactionHash.toLowerCase(),
    title: t.title || null,
    slug: t.slug || null,
    eventSlug: t.eventSlug || null,
  }));
}

/** The rows of the leader wallet's CSV (no quoted cells), in file order. */
export function parseLeaderCsv(text: string): HistoryRow[] {
  const [head, ...lines] = text.split(/\r?\n/).filter((l) => l.trim() !== '');
  const cols = head!.split(',');
  const at = (name: string) => {
    const i = cols.indexOf(name);
    if (i < 0) throw new Error(`${LEADER_TRADES_FILE}: no column ${name}`);
    return i;
  };
  const c = {
    timestamp: at('timestamp'),
    wallet: at('wallet'),
    side: at('side'),
    price: at('price'),
    size: at('size'),
    asset: at('asset'),
    condition: at('condition_id'),
    outcome: at('outcome'),
    eventSlug: at('event_slug'),
    hash: at('transaction_hash'),
  };
  return lines.map((line) => {
    const v = line.split(',');
    return {
      wallet: v[c.wallet]!.toLowerCase(),
      side: v[c.side] === 'SELL' ? 'SELL' : 'BUY',
      tokenId: v[c.asset]!,
      conditionId: v[c.condition]!.toLowerCase(),
      outcome: v[c.outcome]!,
      outcomeIndex: null,
      price: v[c.price]!,
      size: v[c.size]!,
      timestamp: Number(v[c.timestamp]),
      transactionHash: v[c.hash]!.toLowerCase(),
      title: null,
      slug: null,
      eventSlug: v[c.eventSlug] || null,
    };
  });
}

/**
 * The records of history rows: per row a tape row (`<transactionHash>:<logIndex>`) and its
 * wallet's taker fill; rows ordered by timestamp (stable: file order within one), log index
 * counting the rows of each timestamp.
 */
export function historyRecords(rows: readonly HistoryRow[]): RecordedBatch {
  const out: RecordedBatch = { trades: [], fills: [], cash: [] };
  const ordered = rows.map((r, i) => ({ r, i })).sort((a, b) => a.r.timestamp - b.r.timestamp || a.i - b.i);
  let last = -1;
  let logIndex = 0;
  for (const { r } of ordered) {
    logIndex = r.timestamp === last ? logIndex + 1 : 0;
    last = r.timestamp;
    const tradeId = `${r.transactionHash}:${logIndex}`;
    const common = {
      tradeId,
      blockTimestamp: r.timestamp,
      logIndex,
      transactionHash: r.transactionHash,
      atMs: r.timestamp * 1000,
      conditionId: r.conditionId,
      tokenId: r.tokenId,
      outcome: r.outcome,
      side: r.side,
      price: r.price,
      size: r.size,
      notionalUsd: notionalOf(r.price, r.size),
      feeUsd: '0',
      source: 'history' as const,
    };
    out.trades.push({ _id: tradeId, ...common, maker: null, taker: r.wallet });
    out.fills.push({
      _id: `${tradeId}:taker`,
      ...common,
      address: r.wallet,
      userId: null,
      orderId: null,
      role: 'taker',
    });
  }
  return out;
}

/** Both files' rows (Data API trades first, then the leader's fills). */
export function readRealHistory(): HistoryRow[] {
  return [
    ...parseDataApiTrades(fs.readFileSync(dataFile(DATA_API_TRADES_FILE), 'utf8')),
    ...parseLeaderCsv(fs.readFileSync(dataFile(LEADER_TRADES_FILE), 'utf8')),
  ];
}

/**
 * Makes the history's markets known to `markets` (every start) and, unless done before, records its
 * rows in the trade history in one transaction, then the `migrations` record.
 * @returns how many rows the files hold and whether they were recorded by this call.
 */
export async function loadRealHistory(
  store: Store,
  history: TradeHistory,
  markets: MarketRegistry,
  clock: Clock,
  rows: readonly HistoryRow[] = readRealHistory(),
): Promise<{ rows: number; recorded: boolean }> {
  for (const r of rows) markets.learn(r);
  const migrations = await store.collection<{ _id: string; atMs: number }>('migrations');
  if (await migrations.findOne({ _id: REAL_HISTORY_MIGRATION })) return { rows: rows.length, recorded: false };
  await history.load(historyRecords(rows));
  await migrations.replaceOne({ _id: REAL_HISTORY_MIGRATION, atMs: clock.now() });
  return { rows: rows.length, recorded: true };
}
