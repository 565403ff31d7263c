import { keccak256, toUtf8Bytes } from 'ethers';
import type { Clock } from '../clock.js';
import { dec, ONE, positive, str, ZERO, type Dec } from '../decimal.js';
import type { Logger } from '../logger.js';
import type { Store } from '../store/port.js';
import { notionalOf, type ChainPosition, type TapeTrade } from '../data/records.js';
import type { CaptureEvent } from './capture.js';
import { CaptureReplay, type CapturePosition } from './capture-replay.js';
import { ChainClock } from './chain.js';
import {
  stateRowsJson,
  VenueJournal,
  type CapturedLevelRow,
  type CaptureRow,
  type CheckpointState,
  type MarketRow,
} from './journal.js';
import { Ledger, LIQUIDITY_PROVIDER_ID, type ComboHolding, type WalletRow } from './ledger.js';
import { LiquidityProvider } from './liquidity.js';
import type { Catalogue } from './markets.js';
import { MatchingEngine, newTx, nextPosition, type OrderRow, type RestingOrder, type Tx } from './matching.js';
import type {
  Available,
  BookView,
  CancelReason,
  MarketInfo,
  MarketStatus,
  TokenInfo,
  Touch,
  VenueHealth,
  VenueOrder,
  VenueOrderState,
  VenuePort,
  VenueReport,
  WalletOp,
  WalletOpRefusal,
  WalletOpResult,
  WalletView,
} from './port.js';
import { initialCreditOpId, VenueOpRefused } from './port.js';

/** Options of the simulated venue (from SIM_* settings). */
export interface SimVenueOptions {
  catalogue: Catalogue;
  store: Store;
  clock: Clock;
  log: Logger;
  /** pUSD every new wallet starts with (dollars). */
  initialPusd: string;
  /** Price levels the liquidity provider quotes per side (SIM_MAKER_LEVELS). */
  liquidityLevels: number;
  /** Delay before the liquidity provider refills a book it traded in, ms (SIM_MAKER_REFILL_MS). */
  refillMs: number;
  /** Whether the MSTR token follows its recorded path. */
  replay: boolean;
  /** Recorded seconds per real second. */
  replaySpeed: number;
  /** How often the replay checks for a new recorded price (ms). */
  replayTickMs?: number;
  /** Journal entries between checkpoints. */
  checkpointEvery?: number;
  /**
   * Whether the WebSocket capture's markets follow the capture (SIM_CAPTURE): their
   * books are the captured levels, their tick and resolution come from the capture. Off: the
   * liquidity provider quotes them like the static markets. Default off here (the service passes
   * the setting).
   */
  captureReplay?: boolean;
  /** How often the capture replay applies due events, ms (default 250). */
  captureTickMs?: number;
  /** Capture seconds per real second of the capture replay (SIM_CAPTURE_SPEED; default 1 = real time). */
  captureSpeed?: number;
  /**
   * Records the capture's trade prints of one venue operation as anonymous tape rows (the trade
   * history), called as the operation's journal entry is appended (both share a store commit): one
   * call per capture batch with the operation's sequence number, the batch's promise resolved once it
   * is done. Absent: not recorded.
   */
  recordPrints?: (prints: TapeTrade[], opSeq: number) => Promise<void>;
}

/** Reason of the `venue.canceled` report of a resting order whose price is off a new tick. */
export const TICK_CHANGED_REASON: CancelReason = Object.freeze({
  code: 'TICK_SIZE_CHANGED',
  message: 'tick size changed',
});
/** Reason of the `venue.canceled` report of a resting order on a market that resolved. */
export const MARKET_RESOLVED_REASON: CancelReason = Object.freeze({
  code: 'MARKET_RESOLVED',
  message: 'market resolved',
});

/**
 * How long a finished order nobody released is kept (a safety net: the order service releases
 * each order once its actor recorded the end, so checkpoints hold working orders, wallets and
 * orders finished moments ago, not a day of history).
 */
const RETAIN_DONE_MS = 24 * 3_600_000;

/** Typed errors the venue raises for a rejected command; the API maps them to 4xx. */
export class VenueRejection extends Error {
  constructor(
    readonly error: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Simulated CLOB venue, the {@link VenuePort} of this service, wired from its parts:
 * - {@link MatchingEngine} (`matching.ts`): one book per outcome token, price-time priority,
 *   complementary matching across a market's two outcomes (mint, merge; each token's book and
 *   touch show the other's orders mirrored), the market's tick, IOC/FOK/GTC/GTD, post-only,
 *   self-trade prevention; pure, in memory;
 * - {@link Ledger} (`ledger.ts`): pUSD wallets with reservations, positions with cost basis, trade
 *   settlement; the only place balances change;
 * - {@link VenueJournal} (`journal.ts`): journal entries, checkpoints, recovery, retried writes and
 *   the health they give;
 * - {@link LiquidityProvider} (`liquidity.ts`): the simulated liquidity provider that quotes every
 *   book around the token's recorded price, refills what is taken and (with replay on) re-quotes
 *   the MSTR token along its recorded path.
 *
 * Every operation runs synchronously in memory, then its journal entry is written (when it
 * touched a user: absolute wallet and order states), then its reports and book notifications go
 * out, in that order. Journal entries are written in order: while a write fails and is retried,
 * the operations behind it wait and their reports go out only once their entries are written;
 * {@link health} says so meanwhile (the API then answers venue operations 503). Liquidity is not
 * persisted: it is re-quoted at start-up.
 */
export class SimVenue implements VenuePort {
  private readonly reportListeners: ((r: VenueReport) => void)[] = [];
  private readonly bookListeners: ((tokenId: string) => void)[] = [];
  private readonly walletListeners: ((userId: string) => void)[] = [];
  private readonly marketListeners: ((conditionId: string) => void)[] = [];
  private readonly ledger: Ledger;
  private readonly matching: MatchingEngine;
  private readonly liquidity: LiquidityProvider;
  private journal!: VenueJournal;
  /** Markets that closed or resolved; absent = open. Journaled (market rows). */
  private readonly statuses = new Map<string, MarketStatus>();
  /** Markets that have a journaled market row (tick change, closed, resolved): a checkpoint keeps their rows. */
  private readonly changedMarkets = new Set<string>();
  /** Markets by condition id. */
  private readonly marketsById = new Map<string, MarketInfo>();
  /** Last trade print per token (the capture's `last_trade_price`), decimal probability. */
  private readonly lastTrades = new Map<string, Dec>();
  /** The capture replay, when on. */
  private captureReplay: CaptureReplay | null = null;
  /** Where the capture replay is (index of the next event, capture time reached); journaled with each batch. */
  private capturePos: CapturePosition | null = null;
  /** Recovery: journaled captured levels users traded with (latest per level), for the rebuild. */
  private readonly recoveredTaken = new Map<string, CapturedLevelRow>();
  /** The simulated chain's sequence: positions of trades and wallet operations (journaled). */
  private readonly chain = new ChainClock();

  private constructor(private readonly o: SimVenueOptions) {
    for (const m of o.catalogue.markets) this.marketsById.set(m.conditionId, m);
    this.ledger = new Ledger(o.initialPusd);
    this.matching = new MatchingEngine(o.catalogue.tokens, this.ledger, () => o.clock.now());
    this.liquidity = new LiquidityProvider(
      {
        catalogue: o.catalogue,
        clock: o.clock,
        levels: o.liquidityLevels,
        refillMs: o.refillMs,
        replay: o.replay,
        replaySpeed: o.replaySpeed,
        replayTickMs: o.replayTickMs,
        run: (fn) => this.background(fn),
        captureDriven: o.captureReplay && o.catalogue.capture ? o.catalogue.captureTokens : undefined,
      },
      this.matching,
    );
  }

  /** Opens the venue: rebuilds user state from the store, quotes the liquidity, starts the replay. */
  static async open(o: SimVenueOptions): Promise<SimVenue> {
    const v = new SimVenue(o);
    v.journal = await VenueJournal.open({
      store: o.store,
      log: o.log,
      checkpointEvery: o.checkpointEvery,
      snapshot: () => v.snapshot(),
    });
    await v.recover();
    v.liquidity.start();
    v.startCaptureReplay();
    return v;
  }

  /** Stops timers and waits for pending journal writes, then writes a checkpoint. */
  async close(): Promise<void> {
    this.captureReplay?.stop();
    this.liquidity.stop();
    await this.journal.written();
    await this.journal.checkpoint();
  }

  /**
   * Durability status for /healthz: `ok` is false while a journal write is failing (the venue
   * then refuses new operations at the API: 503). `pendingWrites` counts journal entries not yet
   * written; `error` is the last write or checkpoint failure, null when none is outstanding.
   */
  get health(): VenueHealth {
    return this.journal.health;
  }

  onReport(listener: (r: VenueReport) => void): void {
    this.reportListeners.push(listener);
  }

  onBook(listener: (tokenId: string) => void): void {
    this.bookListeners.push(listener);
  }

  onWallet(listener: (userId: string) => void): void {
    this.walletListeners.push(listener);
  }

  onMarket(listener: (conditionId: string) => void): void {
    this.marketListeners.push(listener);
  }

  // ---- reads ------------------------------------------------------------------------------

  token(tokenId: string): TokenInfo | undefined {
    return this.o.catalogue.tokens.get(tokenId);
  }

  markets(): readonly MarketInfo[] {
    return this.o.catalogue.markets;
  }

  market(conditionId: string): MarketInfo | undefined {
    return this.marketsById.get(conditionId);
  }

  marketStatus(conditionId: string): MarketStatus | undefined {
    const known = this.statuses.get(conditionId);
    if (known) return known;
    if (!this.marketsById.has(conditionId)) return undefined;
    return { conditionId, closed: false, resolved: false, winningTokenId: null, resolvedAtMs: null };
  }

  book(tokenId: string, depth = 50): BookView | null {
    const info = this.token(tokenId);
    const levels = this.matching.depth(tokenId, depth);
    if (!info || !levels) return null;
    const lv = (side: { price: Dec; size: Dec }[]) => side.map((l) => ({ price: str(l.price), size: str(l.size) }));
    const last = this.lastTrades.get(tokenId);
    return {
      tokenId,
      tickSize: str(info.tickSize),
      minSize: str(info.minSize),
      bids: lv(levels.bids),
      asks: lv(levels.asks),
      ...(last ? { lastTradePrice: str(last) } : {}),
    };
  }

  /**
   * The marks of condition `conditionId`'s outcome tokens (decimal probability, in `tokenIds`' order) that
   * share a split's or a merge's dollars among them: once the market resolved, its payouts (1 for the
   * winner, 0 for the others); else each token's mid (its best bid and ask), else its last captured trade
   * print; undefined when a token has neither, or when they sum to zero (the dollars are then shared equally).
   */
  private outcomeMarks(conditionId: string, tokenIds: readonly string[]): Dec[] | undefined {
    const status = this.marketStatus(conditionId);
    if (status?.resolved) return tokenIds.map((t) => (t === status.winningTokenId ? ONE : ZERO));
    const marks: Dec[] = [];
    for (const t of tokenIds) {
      const { bid, ask } = this.matching.touch(t);
      const mark = bid && ask ? bid.plus(ask).div(2) : this.lastTradePrice(t);
      if (mark === undefined) return undefined;
      marks.push(mark);
    }
    return marks.some((m) => m.gt(0)) ? marks : undefined;
  }

  /** Last trade print of `tokenId` (decimal probability), or undefined when none was seen. */
  lastTradePrice(tokenId: string): Dec | undefined {
    return this.lastTrades.get(tokenId);
  }

  // ---- market events ---------------------------------------------------------------

  /**
   * Simulation control (not on the port): resolves the market
   * `conditionId` with `winningTokenId` as winner, durably (journaled with the cancels it causes:
   * survives kill -9). Afterwards the market is closed: new orders on its tokens are rejected
   * (the engine refuses them first: engine/risk.ts `checkMarketOpen`), its resting user orders are
   * canceled (`venue.canceled`, reason {@link MARKET_RESOLVED_REASON}), its book is emptied,
   * {@link marketStatus} answers resolved with the winner, and the `onMarket` listeners are
   * called once the entry is written. Resolving a resolved market again with the same winner is
   * a no-op.
   * @returns `resolved`, or `already` when it was resolved with this winner before.
   * @throws {VenueRejection} `not_found` for an unknown market; `invalid_request` when the token
   *   is not one of the market's; `conflict` when it already resolved with another winner.
   */
  async resolveMarket(conditionId: string, winningTokenId: string): Promise<'resolved' | 'already'> {
    const m = this.marketsById.get(conditionId);
    if (!m) throw new VenueRejection('not_found', `no market ${conditionId}`);
    if (!m.tokens.some((t) => t.tokenId === winningTokenId))
      throw new VenueRejection('invalid_request', `token ${winningTokenId} is not an outcome of market ${conditionId}`);
    const known = this.statuses.get(conditionId);
    if (known?.resolved) {
      if (known.winningTokenId === winningTokenId) return 'already';
      throw new VenueRejection(
        'conflict',
        `market ${conditionId} already resolved with winner ${known.winningTokenId}`,
      );
    }
    await this.runMarketOp(false, (tx) => this.applyResolution(tx, m, winningTokenId));
    return 'resolved';
  }

  /**
   * Simulation control: sets the tick of `tokenId`'s market (both
   * tokens) to `tickSize` (decimal probability), durably. New orders are checked against it at
   * once (risk and matching read the token's tick); resting user orders off the new tick are
   * canceled (reason {@link TICK_CHANGED_REASON}), the others keep price and priority.
   * @throws {VenueRejection} `not_found` for an unknown token.
   */
  async changeTickSize(tokenId: string, tickSize: Dec): Promise<void> {
    const info = this.token(tokenId);
    if (!info) throw new VenueRejection('not_found', `no outcome token ${tokenId}`);
    await this.runMarketOp(false, (tx) => this.applyTick(tx, info.conditionId, tickSize));
  }

  /** The capture replay (null when SIM_CAPTURE is off or no capture is loaded): benchmark and tests. */
  get capture(): CaptureReplay | null {
    return this.captureReplay;
  }

  /**
   * Applies a batch of capture events in order, as one venue operation (one journal entry when
   * it touched a user or a market): levels become the provider's quotes (capture.ts,
   * {@link LiquidityProvider.setCapturedLevel}), trade prints set the last-trade price, tick
   * changes and resolutions as {@link changeTickSize} / {@link resolveMarket}. Events of closed
   * markets are ignored.
   * @param position where the replay is once these events are applied (the replay and the
   *   benchmark pass it): journaled in the same entry as their effects, so a restart resumes there
   *   and never applies them twice. Without it (tests) the position does not move.
   */
  applyCaptureEvents(events: readonly CaptureEvent[], position?: CapturePosition): Promise<void> {
    return this.runMarketOp(true, (tx) => {
      if (position) this.capturePos = { next: position.next, recordedMs: position.recordedMs };
      for (let i = 0; i < events.length; i++) {
        const ev = events[i]!;
        switch (ev.kind) {
          case 'level':
            if (!this.matching.isClosed(ev.tokenId))
              this.liquidity.setCapturedLevel(tx, ev.tokenId, ev.side, ev.price, ev.size);
            break;
          case 'trade':
            this.lastTrades.set(ev.tokenId, ev.price);
            if (this.o.recordPrints && ev.size && positive(ev.size))
              this.addPrint(tx, ev, position ? `capture:${position.next - events.length + i}` : null);
            break;
          case 'tick': {
            const info = this.token(ev.tokenId);
            if (info && !info.tickSize.eq(ev.tickSize) && !this.matching.isClosed(ev.tokenId))
              this.applyTick(tx, info.conditionId, ev.tickSize);
            break;
          }
          case 'resolved': {
            const m = this.marketsById.get(ev.conditionId);
            if (m && !this.statuses.get(ev.conditionId)?.resolved) this.applyResolution(tx, m, ev.winningTokenId);
            break;
          }
        }
      }
    });
  }

  /**
   * A trade print of the capture as an anonymous tape row (no wallets) at the next chain position.
   * @param id - the capture event's index as `capture:<n>` (a replay applies each once), or null
   *   (scripted events, tests): the operation's transaction and log index then name it.
   */
  private addPrint(tx: Tx, ev: Extract<CaptureEvent, { kind: 'trade' }>, id: string | null): void {
    const info = this.token(ev.tokenId);
    if (!info) return;
    const pos = nextPosition(tx);
    const price = str(ev.price);
    const size = str(ev.size!);
    const tradeId = id ?? `capture:${pos.transactionHash}:${pos.logIndex}`;
    tx.prints.push({
      _id: tradeId,
      tradeId,
      blockTimestamp: pos.blockTimestamp,
      logIndex: pos.logIndex,
      transactionHash: pos.transactionHash,
      atMs: tx.atMs,
      conditionId: info.conditionId,
      tokenId: ev.tokenId,
      outcome: info.outcome,
      side: ev.side === 'sell' ? 'SELL' : 'BUY',
      price,
      size,
      notionalUsd: notionalOf(price, size),
      feeUsd: '0',
      maker: null,
      taker: null,
      source: 'capture',
    });
  }

  /**
   * Starts the capture replay where the previous run left it (the journaled {@link CapturePosition};
   * the capture's start on a fresh store). Before that, the books of the capture tokens are
   * rebuilt as of that position, silently (no trade with user orders, nothing journaled): each
   * level at the capture's last size before the position, or at what users left of it
   * ({@link CapturedLevelRow}); the last trade prints as of the position. Ticks and resolutions
   * before it are not applied again (their market rows were recovered).
   */
  private startCaptureReplay(): void {
    const capture = this.o.catalogue.capture;
    if (!this.o.captureReplay || !capture) return;
    const from = this.capturePos ?? { next: 0, recordedMs: capture.startMs };
    this.capturePos = from;
    if (from.next > 0) {
      const last = new Map<string, { tokenId: string; side: 'buy' | 'sell'; price: Dec; size: Dec; idx: number }>();
      const end = Math.min(from.next, capture.events.length);
      for (let i = 0; i < end; i++) {
        const ev = capture.events[i]!;
        if (ev.kind === 'level') {
          const k = `${ev.tokenId}|${ev.side}|${str(ev.price)}`;
          last.delete(k); // re-inserted: the map keeps the order of each level's last event
          last.set(k, { tokenId: ev.tokenId, side: ev.side, price: ev.price, size: ev.size, idx: i });
        } else if (ev.kind === 'trade') this.lastTrades.set(ev.tokenId, ev.price);
      }
      let placed = 0;
      this.execute((tx) => {
        placed = this.liquidity.rebuildCaptured(tx, [...last.values()], this.recoveredTaken);
      }).catch((err: unknown) => this.o.log.error({ err }, 'capture books rebuild failed'));
      this.o.log.info(
        { next: from.next, recordedMs: from.recordedMs, levels: placed, taken: this.recoveredTaken.size },
        'capture replay resumes where the previous run was; books rebuilt',
      );
    }
    this.recoveredTaken.clear();
    this.captureReplay = new CaptureReplay({
      capture,
      clock: this.o.clock,
      log: this.o.log,
      speed: this.o.captureSpeed ?? 1,
      tickMs: this.o.captureTickMs,
      resumeFrom: from,
      apply: (events, position) =>
        this.applyCaptureEvents(events, position).catch((err: unknown) =>
          this.o.log.error({ err }, 'capture replay batch failed'),
        ),
    });
    this.captureReplay.start();
  }

  /**
   * The journal row of the capture replay after an operation:
   * position, and the captured levels users traded with in it.
   */
  private captureRow(tx: Tx, positionMoved: boolean): CaptureRow | undefined {
    if (!this.capturePos) return undefined;
    const levels = this.liquidity.syncCaptured(tx, this.capturePos.next);
    if (!positionMoved && !levels.length) return undefined;
    return { next: this.capturePos.next, recordedMs: this.capturePos.recordedMs, ...(levels.length ? { levels } : {}) };
  }

  private applyResolution(tx: Tx, m: MarketInfo, winningTokenId: string): void {
    this.statuses.set(m.conditionId, {
      conditionId: m.conditionId,
      closed: true,
      resolved: true,
      winningTokenId,
      resolvedAtMs: tx.atMs,
    });
    for (const t of m.tokens) {
      this.matching.closeToken(tx, t.tokenId, MARKET_RESOLVED_REASON);
      this.liquidity.forgetCaptured(t.tokenId);
    }
    tx.markets.add(m.conditionId);
  }

  private applyTick(tx: Tx, conditionId: string, tickSize: Dec): void {
    const m = this.marketsById.get(conditionId);
    if (!m) return;
    m.tickSize = tickSize;
    for (const t of m.tokens) {
      const info = this.o.catalogue.tokens.get(t.tokenId);
      if (info) info.tickSize = tickSize;
      this.matching.cancelOffTick(tx, t.tokenId, tickSize, TICK_CHANGED_REASON);
    }
    tx.markets.add(conditionId);
  }

  /** The journal row of a market's tick and status. */
  private marketRow(conditionId: string): MarketRow {
    const m = this.marketsById.get(conditionId)!;
    const s = this.marketStatus(conditionId)!;
    return {
      conditionId,
      tickSize: str(m.tickSize),
      closed: s.closed,
      resolved: s.resolved,
      winningTokenId: s.winningTokenId,
      resolvedAtMs: s.resolvedAtMs,
    };
  }

  /** Recovery: a journaled market row back in force (tick of the market and its tokens, status, closed books). */
  private loadMarketRow(r: MarketRow): void {
    const m = this.marketsById.get(r.conditionId);
    if (!m) return;
    this.changedMarkets.add(r.conditionId);
    const tick = dec(r.tickSize);
    m.tickSize = tick;
    for (const t of m.tokens) {
      const info = this.o.catalogue.tokens.get(t.tokenId);
      if (info) info.tickSize = tick;
    }
    if (r.closed || r.resolved) {
      this.statuses.set(r.conditionId, {
        conditionId: r.conditionId,
        closed: r.closed,
        resolved: r.resolved,
        winningTokenId: r.winningTokenId,
        resolvedAtMs: r.resolvedAtMs,
      });
      const tx = newTx(0, this.o.clock.now());
      for (const t of m.tokens) this.matching.closeToken(tx, t.tokenId, MARKET_RESOLVED_REASON);
    }
  }

  /**
   * Runs one operation that may change markets (capture batches, resolutions, tick changes), like
   * the order operations: in memory, then one journal entry with the touched wallets, orders and
   * market rows, then reports, book, wallet and market notifications, in that order.
   * @param prompt - its journal entry's write commits at once (see {@link VenueJournal.append}):
   *   the capture replay's batches, whose window of batches in flight waits for it.
   */
  private runMarketOp(prompt: boolean, fn: (tx: Tx) => void): Promise<void> {
    const tx = newTx(this.journal.nextSeq, this.o.clock.now(), this.chain);
    const posBefore = this.capturePos?.next;
    try {
      fn(tx);
    } catch (err) {
      this.o.log.error({ err }, 'venue market operation failed');
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    } finally {
      this.liquidity.refillAfter(tx);
    }
    tx.users.delete(LIQUIDITY_PROVIDER_ID);
    for (const c of tx.markets) this.changedMarkets.add(c);
    const capture = this.captureRow(tx, this.capturePos?.next !== posBefore);
    let durable = this.journal.written();
    if (tx.users.size || tx.orders.size || tx.markets.size || capture || tx.positioned) {
      durable = this.journal.append(
        tx.seq,
        tx.atMs,
        this.entryJson(tx, tx.markets.size ? [...tx.markets].map((c) => this.marketRow(c)) : undefined, capture),
        prompt,
      );
    }
    // The prints are written beside the journal entry, so that both share one store commit (one
    // fsync a batch, not two in a row). A print is named by its capture index and replaced by it:
    // when the entry is lost with a crash, the replay resumes before it and writes the same rows again.
    const recorded = tx.prints.length
      ? this.o.recordPrints!(tx.prints, tx.seq).catch((err: unknown) =>
          this.o.log.error({ err, prints: tx.prints.length }, 'trade prints of the capture not recorded'),
        )
      : undefined;
    return durable.then(async () => {
      for (const r of tx.reports) for (const l of this.reportListeners) l(r);
      for (const t of this.booksChanged(tx)) for (const l of this.bookListeners) l(t);
      for (const u of tx.users) for (const l of this.walletListeners) l(u);
      for (const c of tx.markets) for (const l of this.marketListeners) l(c);
      await recorded;
    });
  }

  /** Best bid and ask of a token (decimal), for strategies and checks. */
  touch(tokenId: string): Touch {
    return this.matching.touch(tokenId);
  }

  wallet(userId: string): WalletView {
    return this.ledger.view(userId);
  }

  /** Free pUSD and free shares of `tokenId`, for pre-trade checks. */
  available(userId: string, tokenId: string): Available {
    return this.ledger.available(userId, tokenId);
  }

  orderState(orderId: string): VenueOrderState | null {
    return this.matching.state(orderId);
  }

  orderOf(orderId: string): VenueOrder | null {
    return this.matching.has(orderId) ? this.matching.row(orderId).order : null;
  }

  orderIds(): string[] {
    return this.matching.orderIds();
  }

  release(orderId: string): void {
    this.matching.release(orderId);
  }

  chainPosition(atMs: number, transactionHash: string): ChainPosition {
    return this.chain.position(atMs, transactionHash);
  }

  // ---- audit reads (invariant checks, tests) ----------------------------------------------

  /**
   * Every user wallet (the liquidity provider has none) as its journal row: absolute pUSD and
   * reserved dollars, and each position's shares, reserved shares and cost basis (decimal strings).
   * Made now: later operations do not change it.
   */
  walletRows(): WalletRow[] {
    return this.ledger.rows();
  }

  /**
   * Every order the venue holds, as its journal row: the open ones, and the finished ones not yet
   * forgotten (a checkpoint forgets those released or older than the retention), with their fills
   * and what they still reserve. The rows share the order and its fills with the venue: read only.
   */
  orderRows(): OrderRow[] {
    return this.matching.rows();
  }

  /** Last time-priority sequence number given to an order (persisted with checkpoints). */
  get orderSeq(): number {
    return this.matching.orderSeq;
  }

  /** Every order resting in the books, liquidity included, in book order (see {@link MatchingEngine.resting}). */
  restingOrders(): RestingOrder[] {
    return this.matching.resting();
  }

  /**
   * Resolves once every operation so far is journaled (written to the store). Never rejects: a failing journal write
   * is retried until it lands.
   */
  async whenWritten(): Promise<void> {
    await this.journal.written();
  }

  // ---- commands ---------------------------------------------------------------------------

  submit(order: VenueOrder): Promise<void> {
    if (this.matching.has(order.orderId)) return Promise.resolve(); // idempotent
    return this.execute((tx) => this.matching.place(tx, order));
  }

  /** See {@link VenuePort.submitMany}: one operation, so one journal entry (one store commit) for all. */
  submitMany(orders: readonly VenueOrder[]): Promise<void> {
    const ids = new Set<string>();
    const fresh = orders.filter((o) => !this.matching.has(o.orderId) && !ids.has(o.orderId) && ids.add(o.orderId));
    if (fresh.length === 0) return Promise.resolve();
    return this.execute((tx) => {
      for (const o of fresh) this.matching.place(tx, o);
    });
  }

  cancel(orderId: string, reason: CancelReason): Promise<void> {
    return this.execute((tx) => this.matching.cancel(tx, orderId, reason));
  }

  expire(orderId: string): Promise<void> {
    return this.execute((tx) => this.matching.expire(tx, orderId));
  }

  /**
   * Simulation control (not on the port): sets a token's reference price (decimal probability) and
   * re-quotes the liquidity provider around it (tests).
   */
  setReference(tokenId: string, price: Dec): Promise<void> {
    this.liquidity.setReference(tokenId, price);
    return this.execute((tx) => this.liquidity.requote(tx, tokenId));
  }

  // ---- wallet operations --------------------------------------------------------

  /**
   * Applies a wallet operation (split, merge, redeem, withdrawal debit, refund) in one synchronous
   * step: checked, then applied by the ledger and journaled like a trade (the wallet row carries
   * the op's result, so a repeat after a restart answers it instead of applying again). Neg-risk
   * markets are split, merged and redeemed like the others: on chain that goes through the
   * NegRiskAdapter, with the same effect on a binary question.
   * @returns the result, once recorded.
   * @throws {VenueOpRefused} `UNKNOWN_MARKET`, `MARKET_NOT_RESOLVED`, `INSUFFICIENT_BALANCE`,
   *   `INSUFFICIENT_SHARES`, `SHARES_RESERVED`, `NOTHING_TO_REDEEM` (nothing changed).
   */
  walletOp(op: WalletOp): Promise<WalletOpResult> {
    const done = this.ledger.opResult(op.userId, op.opId);
    if (done) return this.journal.written().then(() => done);
    const refusal = this.walletOpRefusal(op);
    if (refusal) return Promise.reject(new VenueOpRefused(refusal.error, refusal.reason));
    let result: WalletOpResult | undefined;
    return this.execute((tx) => {
      const { blockTimestamp, logIndex } = nextPosition(tx);
      const meta = { opId: op.opId, atMs: tx.atMs, transactionHash: walletOpHash(op), blockTimestamp, logIndex };
      switch (op.kind) {
        case 'split':
        case 'merge': {
          const tokens = this.conditionTokens(op.conditionId)!;
          const marks = this.outcomeMarks(op.conditionId, tokens);
          const set = {
            userId: op.userId,
            meta,
            conditionId: op.conditionId,
            tokenIds: tokens,
            amount: dec(op.amount),
          };
          result = this.ledger[op.kind](marks ? { ...set, marks } : set);
          break;
        }
        case 'redeem':
          result = this.ledger.redeem(
            op.userId,
            meta,
            op.conditionId,
            this.conditionTokens(op.conditionId)!,
            this.marketStatus(op.conditionId)!.winningTokenId,
            op.tokenId === undefined
              ? undefined
              : { tokenId: op.tokenId, ...(op.amount === undefined ? {} : { amount: dec(op.amount) }) },
          );
          break;
        case 'combo_buy':
          result = this.ledger.comboBuy(op.userId, meta, op.comboId, dec(op.amount), dec(op.shares), op.legs);
          break;
        case 'combo_redeem':
          result = this.ledger.comboRedeem(
            op.userId,
            meta,
            op.comboId,
            this.ledger.comboOf(op.userId, op.comboId)?.shares ?? ZERO,
          );
          break;
        default:
          result = this.ledger.transfer(op.userId, meta, op.kind, dec(op.amount));
      }
      tx.users.add(op.userId);
    }).then(() => result!);
  }

  openWallet(userId: string): Promise<WalletOpResult | null> {
    const opId = initialCreditOpId(userId);
    const done = this.ledger.opResult(userId, opId);
    if (done) return this.journal.written().then(() => done);
    let result: WalletOpResult | null = null;
    return this.execute((tx) => {
      if (this.ledger.has(userId)) return;
      const { blockTimestamp, logIndex } = nextPosition(tx);
      const meta = {
        opId,
        atMs: tx.atMs,
        transactionHash: walletOpHash({ kind: 'credit', opId, userId }),
        blockTimestamp,
        logIndex,
      };
      result = this.ledger.open(userId, meta);
      if (result) tx.users.add(userId);
    }).then(() => result);
  }

  releaseWalletOp(userId: string, opId: string): void {
    this.ledger.forgetOp(userId, opId);
  }

  /** Why `op` cannot run now, or null. Changes nothing. */
  walletOpRefusal(op: WalletOp): WalletOpRefusal | null {
    if (op.kind === 'combo_buy' || op.kind === 'combo_redeem') return this.comboRefusal(op);
    if (op.kind === 'withdraw' || op.kind === 'credit')
      return op.kind === 'withdraw' ? this.ledger.pusdRefusal(op.userId, dec(op.amount), 'this withdrawal') : null;
    const tokens = this.conditionTokens(op.conditionId);
    if (!tokens) return { error: 'UNKNOWN_MARKET', reason: `no market ${op.conditionId}` };
    if (op.kind === 'split') return this.ledger.pusdRefusal(op.userId, dec(op.amount), 'this split');
    if (op.kind === 'merge') return this.ledger.mergeRefusal(op.userId, tokens, dec(op.amount));
    if (!this.marketStatus(op.conditionId)!.resolved)
      return {
        error: 'MARKET_NOT_RESOLVED',
        reason: `market ${op.conditionId} is not resolved yet: nothing can be redeemed before resolution`,
      };
    if (op.tokenId === undefined) return this.ledger.redeemRefusal(op.userId, tokens);
    if (!tokens.includes(op.tokenId))
      return {
        error: 'UNKNOWN_MARKET',
        reason: `outcome token ${op.tokenId} is not a token of market ${op.conditionId}`,
      };
    return this.ledger.redeemRefusal(op.userId, [op.tokenId], op.amount === undefined ? undefined : dec(op.amount));
  }

  /**
   * Why a combo operation cannot run now, or null: a buy needs every leg's market open and the
   * notional + fee in free pUSD; a redeem needs the combo held and every leg's token the winner of
   * its resolved market (each share then pays $1).
   */
  private comboRefusal(op: Extract<WalletOp, { kind: 'combo_buy' | 'combo_redeem' }>): WalletOpRefusal | null {
    if (op.kind === 'combo_buy') {
      for (const t of op.legs) {
        const m = this.token(t);
        if (!m) return { error: 'UNKNOWN_MARKET', reason: `no outcome token ${t}` };
        if (this.marketStatus(m.conditionId)!.closed)
          return { error: 'MARKET_CLOSED', reason: `the market of leg ${t} (${m.conditionId}) is closed` };
      }
      return this.ledger.pusdRefusal(op.userId, dec(op.amount), 'this combo');
    }
    const h = this.ledger.comboOf(op.userId, op.comboId);
    if (!h) return { error: 'NOTHING_TO_REDEEM', reason: `no shares of combo ${op.comboId} to redeem` };
    for (const t of h.legs) {
      const s = this.marketStatus(this.token(t)?.conditionId ?? '');
      if (!s?.resolved) return { error: 'COMBO_NOT_RESOLVED', reason: `leg ${t} has not resolved yet` };
      if (s.winningTokenId !== t) return { error: 'COMBO_LOST', reason: `leg ${t} lost: the combo pays nothing` };
    }
    return null;
  }

  /** Every combo position the ledger holds (conservation checks). */
  comboHoldings(): Iterable<{ userId: string; comboId: string; holding: ComboHolding }> {
    return this.ledger.comboHoldings();
  }

  /** The outcome tokens of a listed market, in the market's order; undefined when not listed. */
  private conditionTokens(conditionId: string): string[] | undefined {
    return this.marketsById.get(conditionId)?.tokens.map((t) => t.tokenId);
  }

  // ---- internals --------------------------------------------------------------------------

  /**
   * Runs one operation: synchronous in memory, then its journal entry (when it touched a user),
   * then its reports and book notifications, in that order.
   */
  private execute(fn: (tx: Tx) => void): Promise<void> {
    const tx = newTx(this.journal.nextSeq, this.o.clock.now(), this.chain);
    try {
      fn(tx);
    } catch (err) {
      this.o.log.error({ err }, 'venue operation failed');
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    } finally {
      this.liquidity.refillAfter(tx);
    }
    tx.users.delete(LIQUIDITY_PROVIDER_ID);
    const capture = this.captureRow(tx, false);
    let durable = this.journal.written();
    if (tx.users.size || tx.orders.size || capture || tx.positioned) {
      durable = this.journal.append(tx.seq, tx.atMs, this.entryJson(tx, undefined, capture));
    }
    return durable.then(() => {
      for (const r of tx.reports) for (const l of this.reportListeners) l(r);
      for (const t of this.booksChanged(tx)) for (const l of this.bookListeners) l(t);
      for (const u of tx.users) for (const l of this.walletListeners) l(u);
    });
  }

  /**
   * The tokens whose book, as shown, an operation changed: those whose own book changed and their
   * complements (each token's book shows its complement's orders mirrored).
   */
  private booksChanged(tx: Tx): Set<string> {
    const out = new Set<string>();
    for (const t of tx.tokens) {
      out.add(t);
      const c = this.o.catalogue.tokens.get(t)?.complementTokenId;
      if (c !== undefined) out.add(c);
    }
    return out;
  }

  /**
   * The JSON of an operation's journal entry: the touched wallets and orders, then `markets` and `capture` when given.
   */
  private entryJson(tx: Tx, markets: MarketRow[] | undefined, capture: CaptureRow | undefined): string {
    const wallets: string[] = [];
    for (const u of tx.users) wallets.push(this.ledger.journalRowJson(u));
    const orders: string[] = [];
    for (const id of tx.orders) orders.push(this.matching.rowJson(id));
    return stateRowsJson(wallets, orders, markets, capture, tx.positioned ? this.chain.row : undefined);
  }

  /** Runs an operation nobody awaits (liquidity refill, replay); a failure is logged. */
  private background(fn: (tx: Tx) => void): void {
    this.execute(fn).catch((err: unknown) => this.o.log.error({ err }, 'venue background operation failed'));
  }

  /** Checkpoint + journal → wallets, orders, resting user orders; then compacts the journal. */
  private async recover(): Promise<void> {
    const { orderSeq, replayed } = await this.journal.recover((rows) => {
      rows.wallets.forEach((w) => this.ledger.load(w));
      rows.orders.forEach((o) => this.matching.load(o));
      rows.markets?.forEach((m) => this.loadMarketRow(m));
      if (rows.chain) this.chain.load(rows.chain);
      if (rows.capture) {
        this.capturePos = { next: rows.capture.next, recordedMs: rows.capture.recordedMs };
        for (const l of rows.capture.levels ?? []) this.recoveredTaken.set(`${l.tokenId}|${l.side}|${l.price}`, l);
      }
    });
    this.matching.advanceOrderSeq(orderSeq);
    const resting = this.matching.restoreBooks();
    this.o.log.info(
      { seq: this.journal.lastSeq, wallets: this.ledger.size, orders: this.matching.size, resting, replayed },
      'venue state recovered',
    );
    if (replayed) await this.journal.checkpoint();
  }

  /** What a checkpoint writes: forgets released and long-finished orders, then all user state. */
  private snapshot(): CheckpointState {
    this.matching.forgetDone(this.o.clock.now(), RETAIN_DONE_MS);
    return {
      orderSeq: this.matching.orderSeq,
      wallets: this.ledger.rowsJson(),
      orders: this.matching.rowsJson(),
      markets: [...this.changedMarkets].map((c) => this.marketRow(c)),
      chain: this.chain.row,
      ...(this.capturePos ? { capture: { ...this.capturePos, levels: this.liquidity.takenCapturedLevels() } } : {}),
    };
  }
}

/**
 * The simulated transaction hash of a wallet operation: keccak256 of its kind, op id and user,
 * so the same operation always has the same hash (`0x` + 64 hex).
 */
export function walletOpHash(op: Pick<WalletOp, 'kind' | 'opId' | 'userId'>): string {
  return keccak256(toUtf8Bytes(`${op.kind}:${op.opId}:${op.userId}`));
}
