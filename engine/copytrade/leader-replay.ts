/**
 * The real leader wallet of `data/leader-wallet-trades-2026-02-21.csv` (470 fills on 55 short
 * crypto markets) replayed as a live leader, so that subscriptions to it copy
 * each fill as it comes.
 *
 * - Its markets are made tradable on the venue from the fills' own fields
 *   ({@link withLeaderMarkets}): condition id, the traded token and outcome (Up / Down), the event
 *   slug as question and slug; the other outcome's token, which no fill names, gets the id
 *   keccak256(`<condition>:<outcome>`) as a decimal integer; tick 0.01, resting minimum 5 shares;
 *   the liquidity provider quotes around the token's first fill price (kept within 0.02–0.98 so
 *   that both sides are quoted).
 * - The replay clock: fill i is due at `startedAtMs + (t_i − t_0) / speed` (t in recorded
 *   seconds, `COPYTRADE_LEADER_REPLAY_SPEED` recorded seconds per real second). It starts when the
 *   first subscription to the wallet exists, and is durable: its cursor (next fill, start time) is
 *   written in the store transaction that records each replayed fill into the trade history, so a
 *   restart neither replays a fill twice nor skips one (fills already due are recorded at once).
 * - A replayed fill is a new fact of the trade history (`source: 'history'`, role taker, the
 *   wallet's real price and size) at the replay time: block of its instant, log index 100000 + i
 *   (after the venue's events of that block), transaction hash keccak256(`leader-replay:<real
 *   hash>:<i>`).
 */
import fs from 'node:fs';
import { keccak256, toUtf8Bytes } from 'ethers';
import type { Clock } from '../clock.js';
import { parseLeaderCsv, LEADER_TRADES_FILE, type HistoryRow } from '../data/real-history.js';
import type { TradeHistory } from '../data/history.js';
import { notionalOf, type ChainPosition, type RecordedBatch } from '../data/records.js';
import { dec, Dec } from '../decimal.js';
import type { Logger } from '../logger.js';
import type { Store } from '../store/port.js';
import { dataFile, type Catalogue, type CatalogueToken } from '../venue/markets.js';
import type { MarketInfo } from '../venue/port.js';

/** Collection of the replay cursor. */
export const LEADER_REPLAY = 'copytradeLeaderReplay';

/** The leader wallet's fills, in recorded order (timestamp, then file order). */
export function leaderRows(): HistoryRow[] {
  const rows = parseLeaderCsv(fs.readFileSync(dataFile(LEADER_TRADES_FILE), 'utf8'));
  return rows
    .map((r, i) => ({ r, i }))
    .sort((a, b) => a.r.timestamp - b.r.timestamp || a.i - b.i)
    .map((x) => x.r);
}

/** The leader wallet's address (lower case). */
export function leaderWallet(rows: readonly HistoryRow[]): string {
  return rows[0]!.wallet;
}

const LOW = dec('0.02');
const HIGH = dec('0.98');

/** The id of an outcome token no fill names: keccak256(`<condition>:<outcome>`) as a decimal integer. */
function syntheticTokenId(conditionId: string, outcome: string): string {
  return BigInt(keccak256(toUtf8Bytes(`${conditionId}:${outcome}`))).toString();
}

/**
 * `catalogue` with the leader's markets added (those it lists already are kept as they are).
 * @returns a new catalogue; `catalogue` is not changed.
 */
export function withLeaderMarkets(catalogue: Catalogue, rows: readonly HistoryRow[]): Catalogue {
  const markets = [...catalogue.markets];
  const tokens = new Map(catalogue.tokens);
  const byCondition = new Map<string, HistoryRow[]>();
  for (const r of rows) byCondition.set(r.conditionId, [...(byCondition.get(r.conditionId) ?? []), r]);
  for (const [conditionId, rs] of byCondition) {
    if (markets.some((m) => m.conditionId === conditionId)) continue;
    const first = rs[0]!;
    const known = new Map<string, { tokenId: string; price: Dec }>();
    for (const r of rs)
      if (!known.has(r.outcome))
        known.set(r.outcome, { tokenId: r.tokenId, price: Dec.min(HIGH, Dec.max(LOW, dec(r.price))) });
    const names = [...known.keys()];
    const other = names[0] === 'Down' ? 'Up' : names[0] === 'Up' ? 'Down' : names[0] === 'No' ? 'Yes' : 'No';
    if (names.length === 1)
      known.set(other, {
        tokenId: syntheticTokenId(conditionId, other),
        price: dec(1).minus(known.get(names[0]!)!.price),
      });
    const pair = [...known].slice(0, 2).map(([outcome, t]) => ({ tokenId: t.tokenId, outcome, price: t.price }));
    const market: MarketInfo = {
      conditionId,
      question: first.eventSlug ?? conditionId,
      slug: first.eventSlug ?? conditionId,
      endDateIso: null,
      tickSize: dec('0.01'),
      minSize: dec(5),
      negRisk: false,
      tokens: pair,
    };
    markets.push(market);
    for (const [i, t] of pair.entries()) {
      const token: CatalogueToken = {
        tokenId: t.tokenId,
        outcome: t.outcome,
        conditionId,
        question: market.question,
        referencePrice: t.price,
        tickSize: market.tickSize,
        minSize: market.minSize,
        complementTokenId: pair[1 - i]!.tokenId,
      };
      tokens.set(t.tokenId, token);
    }
  }
  return { ...catalogue, markets, tokens };
}

interface Cursor {
  _id: string;
  /** Index of the next fill to replay. */
  next: number;
  /** Epoch ms the replay started. */
  startedAtMs: number;
}

/** The simulated transaction hash of replayed fill `i` (deterministic). */
export function replayedHash(rows: readonly HistoryRow[], i: number): string {
  return keccak256(toUtf8Bytes(`leader-replay:${rows[i]!.transactionHash}:${i}`));
}

/**
 * The records of replayed fill `i` at `atMs`, at chain position `at` (given by the venue's chain
 * sequence, so that replayed fills and the venue's own events share one chain order).
 */
export function replayedRecords(
  rows: readonly HistoryRow[],
  i: number,
  atMs: number,
  at: ChainPosition,
): RecordedBatch {
  const r = rows[i]!;
  const tradeId = `${at.transactionHash}:0`;
  const common = {
    tradeId,
    blockTimestamp: at.blockTimestamp,
    logIndex: at.logIndex,
    transactionHash: at.transactionHash,
    atMs,
    conditionId: r.conditionId,
    tokenId: r.tokenId,
    outcome: r.outcome,
    side: r.side,
    price: r.price,
    size: r.size,
    notionalUsd: notionalOf(r.price, r.size),
    feeUsd: '0',
    source: 'replay' as const,
  };
  return {
    trades: [{ _id: tradeId, ...common, maker: null, taker: r.wallet }],
    fills: [{ _id: `${tradeId}:taker`, ...common, address: r.wallet, userId: null, orderId: null, role: 'taker' }],
    cash: [],
  };
}

/** The replay of the leader wallet (see the file header). */
export class LeaderReplay {
  private timer: NodeJS.Timeout | null = null;
  private running = false;
  private stopped = false;
  private cursor: Cursor | null = null;

  constructor(
    private readonly store: Store,
    private readonly history: TradeHistory,
    private readonly rows: readonly HistoryRow[],
    private readonly speed: number,
    private readonly clock: Clock,
    private readonly log: Logger,
    /** A position on the venue's chain for an event at `atMs` of transaction `hash` (`VenuePort.chainPosition`). */
    private readonly positionOf: (atMs: number, hash: string) => ChainPosition,
  ) {}

  /** The replayed wallet (lower case). */
  get wallet(): string {
    return leaderWallet(this.rows);
  }

  /** Fills replayed so far. */
  get replayed(): number {
    return this.cursor?.next ?? 0;
  }

  /** Starts (or, after a restart, continues) the replay; a second call does nothing. */
  async start(): Promise<void> {
    if (this.running || this.stopped) return;
    this.running = true;
    const col = await this.store.collection<Cursor>(LEADER_REPLAY);
    this.cursor = (await col.findOne({ _id: 'leader' })) ?? { _id: 'leader', next: 0, startedAtMs: this.clock.now() };
    if (this.cursor.next === 0) await col.replaceOne(this.cursor);
    this.schedule();
  }

  /** Stops the replay clock (shutdown); the cursor stays where it is. */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private dueMs(i: number): number {
    const t0 = this.rows[0]!.timestamp;
    return this.cursor!.startedAtMs + ((this.rows[i]!.timestamp - t0) * 1000) / this.speed;
  }

  private schedule(): void {
    if (this.stopped || !this.cursor || this.cursor.next >= this.rows.length) return;
    const wait = Math.max(0, this.dueMs(this.cursor.next) - this.clock.now());
    this.timer = setTimeout(() => void this.emitDue(), Math.min(wait, 60_000));
  }

  private async emitDue(): Promise<void> {
    this.timer = null;
    try {
      while (!this.stopped && this.cursor!.next < this.rows.length && this.dueMs(this.cursor!.next) <= this.clock.now())
        await this.emit(this.cursor!.next);
    } catch (err) {
      this.log.error({ err }, 'leader replay: a fill could not be recorded; retried');
    }
    this.schedule();
  }

  private async emit(i: number): Promise<void> {
    const atMs = this.clock.now();
    const batch = replayedRecords(this.rows, i, atMs, this.positionOf(atMs, replayedHash(this.rows, i)));
    const next: Cursor = { ...this.cursor!, next: i + 1 };
    const fresh = await this.store.transaction(async (tx) => {
      const out = await this.history.record(tx, batch);
      await tx.collection<Cursor>(LEADER_REPLAY).replaceOne(next);
      return out;
    });
    this.cursor = next;
    this.history.published(fresh);
  }
}
