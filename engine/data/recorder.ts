/**
 * What the venue's facts become in the trade history (engine/data/records.ts): an order's fill
 * becomes its party's {@link TraderFill}, the trade's {@link TapeTrade} and, when the other party
 * is the liquidity provider (which has no actor to record its side), the provider's fill too.
 * The writes are made by the step that records the fill on the order (the order kind's step
 * writes, engine/actor-host.ts), so the order and its history commit together.
 *
 * A party's wallet is its user's `safe_address` (lower-case); the liquidity provider's is
 * {@link LIQUIDITY_PROVIDER_ADDRESS}.
 */
import { keccak256, toUtf8Bytes } from 'ethers';
import type { KindStepWrites } from '../actor-host.js';
import type { UnitOfWork } from '../store/port.js';
import type { UserDoc, UserService } from '../users.js';
import { blockOf } from '../venue/chain.js';
import type { TradeFacts, TradeLeg, VenuePort, WalletOpResult } from '../venue/port.js';
import type { OrderFill } from '../../machines/order.js';
import type { TradeHistory } from './history.js';
import {
  LIQUIDITY_PROVIDER_ADDRESS,
  notionalOf,
  type CashMove,
  type CashMoveKind,
  type RecordedBatch,
  type TapeTrade,
  type TraderFill,
} from './records.js';

/** Turns the venue's facts into history records and writes them with the step that produced them. */
export class HistoryRecorder {
  /** Wallet address by user id (a user's address never changes). */
  private readonly addresses = new Map<string, string>();

  constructor(
    private readonly history: TradeHistory,
    private readonly users: UserService,
    private readonly venue: Pick<VenuePort, 'token' | 'chainPosition'>,
  ) {}

  /**
   * The wallet of `userId` as read inside `tx` (a user provisioned in the same process may not be
   * cached yet): its Safe address in lower case. A user id with no user record (never the case
   * for orders made through the API) gets a stable stand-in: the last 20 bytes of keccak256(id).
   */
  async addressOf(tx: UnitOfWork, userId: string): Promise<string> {
    const known = this.addresses.get(userId);
    if (known) return known;
    const user = this.users.cached(userId) ?? (await tx.collection<UserDoc>('users').findOne({ _id: userId }));
    const address = user ? user.safeAddress.toLowerCase() : `0x${keccak256(toUtf8Bytes(userId)).slice(-40)}`;
    this.addresses.set(userId, address);
    return address;
  }

  /** The wallet of a trade's party: its user's, or the liquidity provider's. */
  private legAddress(tx: UnitOfWork, leg: TradeLeg): Promise<string> {
    return leg.userId === null ? Promise.resolve(LIQUIDITY_PROVIDER_ADDRESS) : this.addressOf(tx, leg.userId);
  }

  /**
   * The records of `fills` of one order (those the venue reported with their trade): each trade's
   * tape row, the order's party's fill, and the liquidity provider's fill when it was the other party.
   */
  async fillRecords(tx: UnitOfWork, fills: readonly OrderFill[]): Promise<RecordedBatch> {
    const out: RecordedBatch = { trades: [], fills: [], cash: [] };
    for (const f of fills) {
      const t = f.trade;
      if (!t) continue;
      const atMs = f.atMs ?? t.blockTimestamp * 1000;
      const maker = await this.legAddress(tx, t.maker);
      const taker = await this.legAddress(tx, t.taker);
      const tape = this.tapeRow(t, atMs, maker, taker);
      out.trades.push(tape);
      const own = f.liquidity;
      out.fills.push(this.fillRow(t, own, own === 'maker' ? maker : taker, atMs, tape));
      const other = own === 'maker' ? 'taker' : 'maker';
      if (t[other].userId === null) out.fills.push(this.fillRow(t, other, LIQUIDITY_PROVIDER_ADDRESS, atMs, tape));
    }
    return out;
  }

  /**
   * The step writes of an order step that added `fills`: their records, written through the
   * step's unit of work; once it committed, the feed's listeners hear of the rows that were new.
   */
  fillWrites(fills: readonly OrderFill[]): KindStepWrites {
    return async (tx) => {
      const fresh = await this.history.record(tx, await this.fillRecords(tx, fills));
      return () => this.history.published(fresh);
    };
  }

  /**
   * The cash movement of a wallet operation's result (`_id` = its venue op id): its pUSD and share
   * changes, its chain position (a result recorded before positions existed: its block, log index 0).
   */
  async cashRecord(tx: UnitOfWork, userId: string, kind: CashMoveKind, r: WalletOpResult): Promise<CashMove> {
    return {
      _id: r.opId,
      address: await this.addressOf(tx, userId),
      userId,
      kind,
      atMs: r.atMs,
      conditionId: r.conditionId,
      pusdDelta: r.pusdDelta,
      // a split's or a merge's marks: what shared its dollars among the outcomes at the venue
      shares: r.shares.map((x) => {
        const share = { tokenId: x.tokenId, delta: x.delta, outcome: this.venue.token(x.tokenId)?.outcome ?? '' };
        return x.price === undefined ? share : { ...share, price: x.price };
      }),
      blockTimestamp: r.blockTimestamp ?? blockOf(r.atMs),
      logIndex: r.logIndex ?? 0,
      transactionHash: r.transactionHash,
      source: 'venue',
    };
  }

  /**
   * The step writes of a wallet step that recorded an operation's result: its cash movement,
   * written through the step's unit of work; the feed hears of it once committed.
   */
  cashWrites(userId: string, kind: CashMoveKind, result: WalletOpResult): KindStepWrites {
    return this.cashMovesWrites(async (tx) => [await this.cashRecord(tx, userId, kind, result)]);
  }

  /**
   * The step writes of a combo step that recorded its buy, its redeem or its loss: their cash
   * movements in one record of the trade history, through the step's unit of work.
   */
  comboWrites(
    userId: string,
    moves: { debit?: WalletOpResult; payout?: WalletOpResult; lost?: { comboId: string; atMs: number } },
  ): KindStepWrites {
    return this.cashMovesWrites(async (tx) => {
      const cash: CashMove[] = [];
      if (moves.debit) cash.push(await this.cashRecord(tx, userId, 'combo_debit', moves.debit));
      if (moves.payout) cash.push(await this.cashRecord(tx, userId, 'combo_payout', moves.payout));
      if (moves.lost) cash.push(await this.comboLossRecord(tx, userId, moves.lost.comboId, moves.lost.atMs));
      return cash;
    });
  }

  /** Step writes recording the cash movements `movesOf` makes; the feed hears of them once committed. */
  private cashMovesWrites(movesOf: (tx: UnitOfWork) => Promise<CashMove[]>): KindStepWrites {
    return async (tx) => {
      const fresh = await this.history.record(tx, { trades: [], fills: [], cash: await movesOf(tx) });
      return () => this.history.published(fresh);
    };
  }

  /**
   * The record of a combo's loss (`combo_loss`, `_id` `<comboId>:loss`): it moves no pUSD; it is what
   * tells the aggregates the combo's cost is lost. Its chain position is the next the venue gives at
   * `atMs` (epoch ms), as for every record made outside a venue operation.
   */
  private async comboLossRecord(tx: UnitOfWork, userId: string, comboId: string, atMs: number): Promise<CashMove> {
    return {
      _id: `${comboId}:loss`,
      address: await this.addressOf(tx, userId),
      userId,
      kind: 'combo_loss',
      atMs,
      conditionId: comboId,
      pusdDelta: '0',
      shares: [],
      ...this.venue.chainPosition(atMs, keccak256(toUtf8Bytes(`combo-loss:${comboId}`))),
      source: 'venue',
    };
  }

  /**
   * Records the cash movement of an operation no actor step records (a new wallet's initial pUSD),
   * in a transaction of its own, and hands it to the feed once committed.
   */
  async recordCash(
    store: { transaction<R>(fn: (tx: UnitOfWork) => Promise<R>): Promise<R> },
    userId: string,
    kind: CashMoveKind,
    result: WalletOpResult,
  ): Promise<void> {
    const committed = await store.transaction(this.cashWrites(userId, kind, result));
    committed?.();
  }

  /** The tape row of a trade: in the taker's terms. */
  private tapeRow(t: TradeFacts, atMs: number, maker: string, taker: string): TapeTrade {
    const token = this.venue.token(t.taker.tokenId);
    return {
      _id: t.id,
      tradeId: t.id,
      blockTimestamp: t.blockTimestamp,
      logIndex: t.logIndex,
      transactionHash: t.transactionHash,
      atMs,
      conditionId: token?.conditionId ?? '',
      tokenId: t.taker.tokenId,
      outcome: token?.outcome ?? '',
      side: t.taker.side === 'buy' ? 'BUY' : 'SELL',
      price: t.taker.price,
      size: t.size,
      notionalUsd: notionalOf(t.taker.price, t.size),
      feeUsd: t.feeUsd,
      maker,
      taker,
      source: 'venue',
    };
  }

  /**
   * One party's fill of a trade, in its own terms; what it shares with the trade's `tape` row (same
   * token, same price: the market's facts, the notional) taken from it rather than looked up again.
   */
  private fillRow(t: TradeFacts, role: 'maker' | 'taker', address: string, atMs: number, tape: TapeTrade): TraderFill {
    const leg = t[role];
    const sameToken = leg.tokenId === tape.tokenId;
    const token = sameToken ? undefined : this.venue.token(leg.tokenId);
    return {
      _id: `${t.id}:${role}`,
      tradeId: t.id,
      blockTimestamp: t.blockTimestamp,
      logIndex: t.logIndex,
      transactionHash: t.transactionHash,
      address,
      userId: leg.userId,
      orderId: leg.orderId,
      role,
      atMs,
      conditionId: sameToken ? tape.conditionId : (token?.conditionId ?? ''),
      tokenId: leg.tokenId,
      outcome: sameToken ? tape.outcome : (token?.outcome ?? ''),
      side: leg.side === 'buy' ? 'BUY' : 'SELL',
      price: leg.price,
      size: t.size,
      notionalUsd: leg.price === tape.price ? tape.notionalUsd : notionalOf(leg.price, t.size),
      feeUsd: role === 'taker' ? t.feeUsd : '0',
      source: 'venue',
    };
  }
}
