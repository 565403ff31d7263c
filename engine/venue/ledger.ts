import { Dec, dec, ONE, shareOut, str, USD_DP, ZERO } from '../decimal.js';
import { insufficientBalanceMessage, notEnoughSharesMessage } from '../risk.js';
import type { Available, VenueOrder, WalletOpRefusal, WalletOpResult, WalletView } from './port.js';

/**
 * Account id of the simulated liquidity provider (see `liquidity.ts`): unlimited inventory, so
 * the ledger keeps no wallet for it, settles none of its fills and never persists it. The stored
 * value stays `sim-maker` (its name from before it was called the liquidity provider).
 */
export const LIQUIDITY_PROVIDER_ID = 'sim-maker';

/** One token position of a wallet. */
export interface Position {
  /** Shares held. */
  shares: Dec;
  /** Shares reserved by open sells (≤ `shares`). */
  reserved: Dec;
  /** Cost basis of the shares held, dollars. */
  cost: Dec;
  /**
   * Realized PnL of the shares that left the position, dollars: what sells, merges and redeems
   * paid for them minus their cost basis. Absent = 0 (positions that never gave shares up).
   */
  realized?: Dec;
}

/** pUSD and positions of one user. */
export interface Wallet {
  /** pUSD balance, dollars. */
  pusd: Dec;
  /** pUSD reserved by open buys, dollars (≤ `pusd`). */
  reserved: Dec;
  /** Positions by token id (a position may hold 0 shares: it is kept, and serialized, once opened). */
  positions: Map<string, Position>;
  /**
   * Wallet operations applied by op id, with their result: a repeat answers the result
   * instead of applying again. Kept until the client releases the op, at most {@link OP_RETAIN_MS}.
   */
  ops?: Map<string, WalletOpResult>;
  /** Combo positions by combo id (absent = none): shares held, their cost, the legs' tokens. */
  combos?: Map<string, ComboHolding>;
}

/** One combo position of a wallet: its YES shares pay $1 each when every leg's token wins. */
export interface ComboHolding {
  shares: Dec;
  /** Dollars paid for it (notional + fee). */
  cost: Dec;
  /** The legs' outcome tokens. */
  legs: string[];
}

/** How long the ledger remembers a wallet operation nobody released (a safety net), ms. */
export const OP_RETAIN_MS = 24 * 3_600_000;

/** One side of a wallet operation: its op id, when it runs and its simulated transaction hash. */
export interface OpMeta {
  opId: string;
  /** Epoch ms. */
  atMs: number;
  /** `0x` + 64 hex. */
  transactionHash: string;
  /** Position on the simulated chain (engine/venue/chain.ts). */
  blockTimestamp?: number;
  logIndex?: number;
}

/**
 * What one order still holds reserved. The ledger changes it together with the wallet, so that a
 * wallet's `reserved` is always the sum of its open orders' reservations.
 */
export interface Reservation {
  /** pUSD still reserved (buys), dollars. */
  reservedUsd: Dec;
  /** Shares still reserved (sells). */
  reservedShares: Dec;
}

/** What an order needs reserved before it may work: pUSD (buys, dollars) or shares (sells). */
export interface Requirement {
  usd: Dec;
  shares: Dec;
}

/** Why the ledger refuses an order: `error` code and human `reason` of the `venue.rejected` report. */
export interface LedgerRefusal {
  error: string;
  reason: string;
}

/** A position's journal tuple as JSON, with what it was made from (see `Ledger.positionsJson`). */
interface PositionJson {
  tokenId: string;
  position: Position;
  shares: Dec;
  reserved: Dec;
  cost: Dec;
  realized: Dec | undefined;
  /** `["<tokenId>","<shares>","<reserved>","<cost>"]`, with `"<realized>"` after when not 0 */
  json: string;
}

/** {@link PositionJson} of a position now. */
function positionJson(tokenId: string, p: Position): PositionJson {
  return {
    tokenId,
    position: p,
    shares: p.shares,
    reserved: p.reserved,
    cost: p.cost,
    realized: p.realized,
    json: JSON.stringify(tupleOf(tokenId, p)),
  };
}

/**
 * A position's journal tuple: `realized` is written only when not
 * 0, so rows of positions that never realized stay as before.
 */
function tupleOf(tokenId: string, p: Position): WalletRow['positions'][number] {
  return p.realized && !p.realized.isZero()
    ? [tokenId, str(p.shares), str(p.reserved), str(p.cost), str(p.realized)]
    : [tokenId, str(p.shares), str(p.reserved), str(p.cost)];
}

/** The position a journal tuple holds (see {@link tupleOf}). */
function positionOfTuple([, s, res, c, pnl]: WalletRow['positions'][number]): Position {
  return { shares: dec(s), reserved: dec(res), cost: dec(c), ...(pnl !== undefined ? { realized: dec(pnl) } : {}) };
}

/** The journal rows of a wallet's combo positions. */
function comboRows(combos: Map<string, ComboHolding>): NonNullable<WalletRow['combos']> {
  return [...combos].map(([id, h]) => [id, str(h.shares), str(h.cost), h.legs]);
}

/** Adds `pnl` dollars to the realized PnL of `p`. */
function realize(p: Position, pnl: Dec): void {
  p.realized = (p.realized ?? ZERO).plus(pnl);
}

/**
 * A serialized wallet as written to the journal and checkpoints (absolute values: replaying an
 * entry overwrites the wallet). Decimal strings: dollars and shares.
 */
export interface WalletRow {
  userId: string;
  pusd: string;
  reserved: string;
  positions: [tokenId: string, shares: string, reserved: string, cost: string, realized?: string][];
  /** Wallet operations remembered for idempotency (absent in rows written before). */
  ops?: WalletOpResult[];
  /** Combo positions: `[comboId, shares, cost, legs]` (absent when none). */
  combos?: [comboId: string, shares: string, cost: string, legs: string[]][];
}

/**
 * A journal entry's row of a wallet it changed: the balances, wallet operations and combos as in a
 * {@link WalletRow}, but of the positions only those that changed since the wallet's previous journal
 * row (`changedPositions`, merged into the wallet on recovery; positions are never removed). A
 * wallet's row in a checkpoint, and its first journal row in a process, list every position (a
 * {@link WalletRow}).
 * Without it every order journaled every position of its user again: ~120 bytes each, a row of
 * 60 KB an order for a trader holding 500.
 */
export type WalletChangeRow = Omit<WalletRow, 'positions'> & { changedPositions: WalletRow['positions'] };

/**
 * The cost basis (dollars) that `qty` shares take out of position `p` at its average cost, in
 * micro-dollars (pUSD's 6 decimals, half-even): never more than the position's cost, all of it
 * when every share goes. Exact decimals of the average (`cost × qty / shares`) repeat forever
 * and reached partners as 38-decimal `cost_usd` values.
 */
function costOf(p: { shares: Dec; cost: Dec }, qty: Dec): Dec {
  if (p.shares.isZero()) return ZERO;
  if (qty.gte(p.shares)) return p.cost;
  return Dec.min(p.cost, p.cost.times(qty).div(p.shares).toDecimalPlaces(USD_DP, Dec.ROUND_HALF_EVEN));
}

/**
 * The simulated venue's accounts: pUSD balances and reservations, share positions with their
 * cost basis. The only place balances change: reserving for a new order, settling one side of a
 * trade, releasing what an ended order still holds. Wallets open on first use with the configured
 * initial pUSD. Decimal arithmetic only.
 */
export class Ledger {
  private readonly wallets = new Map<string, Wallet>();

  /** @param initialPusd pUSD every new wallet starts with, dollars (decimal string). */
  constructor(private readonly initialPusd: string) {}

  /** The wallet of `userId`, opened with the initial pUSD when it has none yet. */
  walletOf(userId: string): Wallet {
    let w = this.wallets.get(userId);
    if (!w) {
      w = { pusd: dec(this.initialPusd), reserved: ZERO, positions: new Map() };
      this.wallets.set(userId, w);
    }
    return w;
  }

  /** Whether `userId` has a wallet. */
  has(userId: string): boolean {
    return this.wallets.has(userId);
  }

  /**
   * Opens the wallet of `userId` with the initial pUSD and records that as a `credit` operation
   * (`meta.opId`), so the chain shows where the money came from.
   * @returns its result, or null when the wallet was open already (its initial pUSD went unrecorded).
   */
  open(userId: string, meta: OpMeta): WalletOpResult | null {
    if (this.wallets.has(userId)) return null;
    const w = this.walletOf(userId);
    return this.recordOp(w, meta, 'credit', null, dec(this.initialPusd), []);
  }

  private positionOf(w: Wallet, tokenId: string): Position {
    let p = w.positions.get(tokenId);
    if (!p) {
      p = { shares: ZERO, reserved: ZERO, cost: ZERO };
      w.positions.set(tokenId, p);
    }
    return p;
  }

  /** Number of wallets held in memory. */
  get size(): number {
    return this.wallets.size;
  }

  // ---- reads ------------------------------------------------------------------------------

  /** Balances of `userId` as decimal strings; only positions holding shares are listed. */
  view(userId: string): WalletView {
    const w = this.walletOf(userId);
    return {
      pusd: { balance: str(w.pusd), reserved: str(w.reserved), available: str(w.pusd.minus(w.reserved)) },
      positions: [...w.positions.entries()]
        .filter(([, p]) => p.shares.gt(0))
        .map(([tokenId, p]) => ({
          tokenId,
          size: str(p.shares),
          reserved: str(p.reserved),
          available: str(p.shares.minus(p.reserved)),
          costUsd: str(p.cost.toDecimalPlaces(USD_DP, Dec.ROUND_HALF_EVEN)),
          ...(p.realized ? { realizedPnl: str(p.realized.toDecimalPlaces(USD_DP, Dec.ROUND_HALF_EVEN)) } : {}),
        })),
    };
  }

  /** Free pUSD of each wallet, with the balance and reservation it was computed from (by identity). */
  private readonly freeUsdMemo = new WeakMap<Wallet, { pusd: Dec; reserved: Dec; free: Dec }>();

  /**
   * Free pUSD of `w` (balance − reserved), dollars; remade only
   * when either changed (both checks of every order read it).
   */
  private freeUsd(w: Wallet): Dec {
    const m = this.freeUsdMemo.get(w);
    if (m && m.pusd === w.pusd && m.reserved === w.reserved) return m.free;
    const free = w.pusd.minus(w.reserved);
    this.freeUsdMemo.set(w, { pusd: w.pusd, reserved: w.reserved, free });
    return free;
  }

  /** Free pUSD and free, held and reserved shares of `tokenId`, for pre-trade checks. */
  available(userId: string, tokenId: string): Available {
    const w = this.walletOf(userId);
    const p = w.positions.get(tokenId);
    return {
      usd: this.freeUsd(w),
      shares: p ? p.shares.minus(p.reserved) : ZERO,
      held: p?.shares ?? ZERO,
      reservedShares: p?.reserved ?? ZERO,
    };
  }

  // ---- changes ----------------------------------------------------------------------------

  /**
   * What `order` must reserve (a limit buy price × size dollars, a market buy its quote amount, a
   * sell its size in shares), or why the wallet cannot cover it. Changes nothing.
   * @param price the order's limit price (decimal probability), null for a market order.
   * @param size the order's size in shares, null for a market buy.
   */
  requirement(order: VenueOrder, price: Dec | null, size: Dec | null): Requirement | LedgerRefusal {
    const w = this.walletOf(order.userId);
    if (order.side === 'buy') {
      const usd = order.kind === 'market' ? dec(order.quoteAmount!) : price!.times(size!);
      const free = this.freeUsd(w);
      if (free.lt(usd))
        return { error: 'INSUFFICIENT_BALANCE', reason: insufficientBalanceMessage('this buy', usd, free) };
      return { usd, shares: ZERO };
    }
    const p = w.positions.get(order.tokenId);
    const free = p ? p.shares.minus(p.reserved) : ZERO;
    if (free.lt(size!))
      return { error: 'INSUFFICIENT_SHARES', reason: notEnoughSharesMessage(p?.shares ?? ZERO, p?.reserved ?? ZERO) };
    return { usd: ZERO, shares: size! };
  }

  /** Reserves `need` for `order` (checked by {@link requirement}) and records it on `r`. */
  reserve(order: VenueOrder, r: Reservation, need: Requirement): void {
    const w = this.walletOf(order.userId);
    r.reservedUsd = need.usd;
    r.reservedShares = need.shares;
    w.reserved = w.reserved.plus(need.usd);
    if (need.shares.gt(0)) {
      const p = this.positionOf(w, order.tokenId);
      p.reserved = p.reserved.plus(need.shares);
    }
  }

  /**
   * Trade settlement of one side of a trade: `qty` shares of `order` at `px` (decimal probability).
   * A buy pays px × qty dollars, releases its reservation for them (at its limit price; a market
   * buy what it paid) and adds the shares at that cost; a sell delivers reserved shares, takes out
   * their average cost and receives px × qty dollars. The liquidity provider is not settled.
   */
  settle(order: VenueOrder, r: Reservation, px: Dec, qty: Dec): void {
    if (order.userId === LIQUIDITY_PROVIDER_ID) return;
    const w = this.walletOf(order.userId);
    const p = this.positionOf(w, order.tokenId);
    const notional = px.times(qty);
    if (order.side === 'buy') {
      const release = order.kind === 'market' ? notional : dec(order.price!).times(qty);
      w.pusd = w.pusd.minus(notional);
      w.reserved = w.reserved.minus(release);
      r.reservedUsd = r.reservedUsd.minus(release);
      p.shares = p.shares.plus(qty);
      p.cost = p.cost.plus(notional);
    } else {
      const costOut = costOf(p, qty);
      realize(p, notional.minus(costOut));
      p.cost = p.cost.minus(costOut);
      p.shares = p.shares.minus(qty);
      p.reserved = p.reserved.minus(qty);
      r.reservedShares = r.reservedShares.minus(qty);
      w.pusd = w.pusd.plus(notional);
    }
  }

  /**
   * Settlement of all the fills of market buy `order` in one operation that also reserved and
   * released its amount (so the wallet's reserved pUSD is what it was, and is left alone): pays
   * `usd` dollars (the sum of the fills' price × size) and adds `shares` shares at that cost. The
   * same balances as {@link reserve}, {@link settle} of each fill and {@link release} (exact sums).
   */
  settleMarketBuy(order: VenueOrder, usd: Dec, shares: Dec): void {
    const w = this.walletOf(order.userId);
    const p = this.positionOf(w, order.tokenId);
    w.pusd = w.pusd.minus(usd);
    p.shares = p.shares.plus(shares);
    p.cost = p.cost.plus(usd);
  }

  /** Releases everything `order` still holds reserved (it ended) and zeroes `r`. */
  release(order: VenueOrder, r: Reservation): void {
    const w = this.walletOf(order.userId);
    if (!r.reservedUsd.isZero()) w.reserved = w.reserved.minus(r.reservedUsd);
    r.reservedUsd = ZERO;
    if (r.reservedShares.gt(0)) {
      const p = this.positionOf(w, order.tokenId);
      p.reserved = p.reserved.minus(r.reservedShares);
      r.reservedShares = ZERO;
    }
  }

  // ---- wallet operations ------------------------------------------------------------
  //
  // Each is checked first (`…Refusal`: why it cannot run, or null; changes nothing) and then
  // applied; the caller runs both in one synchronous step. Applying records the op's result on
  // the wallet (journaled with it), so a repeat of the same op id answers that result.

  /** The recorded result of `opId` on `userId`'s wallet, if it was applied and not yet released. */
  opResult(userId: string, opId: string): WalletOpResult | undefined {
    return this.wallets.get(userId)?.ops?.get(opId);
  }

  /** Forgets `opId` (its client recorded the outcome); false when it was not remembered. */
  forgetOp(userId: string, opId: string): boolean {
    return this.wallets.get(userId)?.ops?.delete(opId) ?? false;
  }

  /** Why `userId` cannot pay `amount` dollars of free pUSD (split, withdrawal), or null. */
  pusdRefusal(userId: string, amount: Dec, what: string): WalletOpRefusal | null {
    const w = this.walletOf(userId);
    const free = w.pusd.minus(w.reserved);
    return free.lt(amount)
      ? { error: 'INSUFFICIENT_BALANCE', reason: insufficientBalanceMessage(what, amount, free) }
      : null;
  }

  /** Why `userId` cannot merge `amount` full sets of `tokenIds` (free shares of each), or null. */
  mergeRefusal(userId: string, tokenIds: readonly string[], amount: Dec): WalletOpRefusal | null {
    const w = this.walletOf(userId);
    for (const t of tokenIds) {
      const p = w.positions.get(t);
      const free = p ? p.shares.minus(p.reserved) : ZERO;
      if (free.lt(amount)) {
        const held = p?.shares ?? ZERO;
        const reserved = p?.reserved ?? ZERO;
        return {
          error: 'INSUFFICIENT_SHARES',
          reason:
            `Not enough shares to merge ${str(amount)} — holding ${str(held)} of outcome ` +
            `token ${t}${reserved.gt(0) ? `, of which ${str(reserved)} reserved by open sells` : ''}`,
        };
      }
    }
    return null;
  }

  /**
   * Why `userId` cannot redeem `tokenIds` (nothing held, shares reserved by open sells, or fewer
   * shares than `amount` of a one-token redeem), or null.
   */
  redeemRefusal(userId: string, tokenIds: readonly string[], amount?: Dec): WalletOpRefusal | null {
    const w = this.walletOf(userId);
    let held = ZERO;
    for (const t of tokenIds) {
      const p = w.positions.get(t);
      if (p?.reserved.gt(0))
        return {
          error: 'SHARES_RESERVED',
          reason:
            `${str(p.reserved)} shares of outcome token ${t} are reserved by ` +
            `open sells: cancel them before redeeming`,
        };
      held = held.plus(p?.shares ?? ZERO);
    }
    if (held.isZero())
      return {
        error: 'NOTHING_TO_REDEEM',
        reason:
          tokenIds.length === 1
            ? `no shares of outcome token ${tokenIds[0]} to redeem`
            : 'no shares of this market to redeem',
      };
    if (amount && held.lt(amount))
      return {
        error: 'INSUFFICIENT_SHARES',
        reason: `Not enough shares to redeem ${str(amount)} — holding ${str(held)} of outcome token ${tokenIds[0]}`,
      };
    return null;
  }

  /**
   * Split: `amount` dollars of pUSD become `amount` shares of each token of the condition, their cost
   * the amount shared by `marks` (the tokens' marks, in `tokenIds`' order), equally without them ({@link shareOut}).
   */
  split({ userId, meta, conditionId, tokenIds, amount, marks }: CompleteSetOp): WalletOpResult {
    const w = this.walletOf(userId);
    w.pusd = w.pusd.minus(amount);
    const parts = setParts(amount, tokenIds, marks);
    tokenIds.forEach((t, i) => {
      const p = this.positionOf(w, t);
      p.shares = p.shares.plus(amount);
      p.cost = p.cost.plus(parts[i]!);
    });
    return this.recordOp(
      w,
      meta,
      'split',
      conditionId,
      amount.neg(),
      tokenIds.map((t) => [t, amount]),
      undefined,
      marks,
    );
  }

  /**
   * Merge: `amount` free shares of each token of the condition become `amount` dollars of pUSD, the
   * dollars shared among the tokens' proceeds as {@link split} shares its cost.
   */
  merge({ userId, meta, conditionId, tokenIds, amount, marks }: CompleteSetOp): WalletOpResult {
    const w = this.walletOf(userId);
    const parts = setParts(amount, tokenIds, marks);
    tokenIds.forEach((t, i) => {
      const p = this.positionOf(w, t);
      const costOut = costOf(p, amount); // all of it when every share goes
      realize(p, parts[i]!.minus(costOut));
      p.cost = p.cost.minus(costOut);
      p.shares = p.shares.minus(amount);
    });
    w.pusd = w.pusd.plus(amount);
    return this.recordOp(
      w,
      meta,
      'merge',
      conditionId,
      amount,
      tokenIds.map((t) => [t, amount.neg()]),
      undefined,
      marks,
    );
  }

  /**
   * Redeem after resolution: burns the shares of `tokenIds` (all of them, or only `only.amount`
   * shares of `only.tokenId`); each share of `winningTokenId` pays $1. The result lists every token
   * of `tokenIds` (delta 0 for one left alone).
   */
  redeem(
    userId: string,
    meta: OpMeta,
    conditionId: string,
    tokenIds: readonly string[],
    winningTokenId: string | null,
    only?: { tokenId: string; amount?: Dec },
  ): WalletOpResult {
    const w = this.walletOf(userId);
    let payout = ZERO;
    const burned: [string, Dec][] = [];
    for (const t of tokenIds) {
      const p = this.positionOf(w, t);
      const touched = !only || only.tokenId === t;
      const n = touched ? (only?.amount ?? p.shares) : ZERO;
      const costOut = touched && n.gte(p.shares) ? p.cost : costOf(p, n); // all of it when every share goes
      if (t === winningTokenId) payout = payout.plus(n);
      if (n.gt(0)) realize(p, (t === winningTokenId ? n : ZERO).minus(costOut));
      burned.push([t, n.neg()]);
      p.shares = p.shares.minus(n);
      p.cost = p.cost.minus(costOut);
    }
    w.pusd = w.pusd.plus(payout);
    return this.recordOp(w, meta, 'redeem', conditionId, payout, burned);
  }

  /** The combo position `comboId` of `userId`, if held. */
  comboOf(userId: string, comboId: string): ComboHolding | undefined {
    return this.wallets.get(userId)?.combos?.get(comboId);
  }

  /** Every combo position of every wallet (conservation checks). */
  *comboHoldings(): Iterable<{ userId: string; comboId: string; holding: ComboHolding }> {
    for (const [userId, w] of this.wallets)
      for (const [comboId, holding] of w.combos ?? []) yield { userId, comboId, holding };
  }

  /** A combo bought: `cost` dollars leave the wallet, `shares` combo shares of `comboId` enter it. */
  comboBuy(userId: string, meta: OpMeta, comboId: string, cost: Dec, shares: Dec, legs: string[]): WalletOpResult {
    const w = this.walletOf(userId);
    w.pusd = w.pusd.minus(cost);
    (w.combos ??= new Map()).set(comboId, { shares, cost, legs: [...legs] });
    return this.recordOp(w, meta, 'combo_buy', comboId, cost.neg(), [], { comboId, sharesDelta: str(shares) });
  }

  /** A won combo redeemed: its shares are burned and `payout` dollars credited. */
  comboRedeem(userId: string, meta: OpMeta, comboId: string, payout: Dec): WalletOpResult {
    const w = this.walletOf(userId);
    const h = w.combos?.get(comboId);
    w.combos?.delete(comboId);
    w.pusd = w.pusd.plus(payout);
    const sharesDelta = str((h?.shares ?? ZERO).neg());
    return this.recordOp(w, meta, 'combo_redeem', comboId, payout, [], { comboId, sharesDelta });
  }

  /** A withdrawal's debit (`amount` dollars leave the wallet) or its refund (`credit`). */
  transfer(userId: string, meta: OpMeta, kind: 'withdraw' | 'credit', amount: Dec): WalletOpResult {
    const w = this.walletOf(userId);
    const delta = kind === 'withdraw' ? amount.neg() : amount;
    w.pusd = w.pusd.plus(delta);
    return this.recordOp(w, meta, kind, null, delta, []);
  }

  private recordOp(
    w: Wallet,
    meta: OpMeta,
    kind: WalletOpResult['kind'],
    conditionId: string | null,
    pusdDelta: Dec,
    shares: [string, Dec][],
    combo?: WalletOpResult['combo'],
    marks?: readonly Dec[],
  ): WalletOpResult {
    const result: WalletOpResult = {
      opId: meta.opId,
      kind,
      transactionHash: meta.transactionHash,
      ...(meta.blockTimestamp !== undefined ? { blockTimestamp: meta.blockTimestamp, logIndex: meta.logIndex } : {}),
      atMs: meta.atMs,
      conditionId,
      pusdDelta: str(pusdDelta),
      shares: shares.map(([tokenId, d], i) =>
        marks ? { tokenId, delta: str(d), price: str(marks[i]!) } : { tokenId, delta: str(d) },
      ),
      pusdBalance: str(w.pusd),
      positions: shares.map(([tokenId]) => ({ tokenId, size: str(w.positions.get(tokenId)?.shares ?? ZERO) })),
      ...(combo ? { combo } : {}),
    };
    w.ops ??= new Map();
    for (const [id, o] of w.ops) if (o.atMs < meta.atMs - OP_RETAIN_MS) w.ops.delete(id);
    w.ops.set(meta.opId, result);
    return result;
  }

  // ---- serialization ----------------------------------------------------------------------

  /** The row of `userId`'s wallet (opening it when it has none). */
  row(userId: string): WalletRow {
    const w = this.walletOf(userId);
    const positions: WalletRow['positions'] = [];
    for (const [t, p] of w.positions) positions.push(this.positionRow(t, p));
    return {
      userId,
      pusd: str(w.pusd),
      reserved: str(w.reserved),
      positions,
      ...(w.ops?.size ? { ops: [...w.ops.values()] } : {}),
      ...(w.combos?.size ? { combos: comboRows(w.combos) } : {}),
    };
  }

  /**
   * The JSON of {@link row}`(userId)` (the same document once parsed), each position's JSON made
   * once per change of that position ({@link positionJson}: a wallet row lists every
   * position of the user, and serializing them all again would be most of a journal entry's cost).
   */
  rowJson(userId: string): string {
    const w = this.walletOf(userId);
    return this.wholeJson(userId, w, this.positionsJson(w));
  }

  /** {@link rowJson} of `w` from its positions' JSON, brought up to date ({@link positionsJson}). */
  private wholeJson(userId: string, w: Wallet, list: { entries: PositionJson[]; json: string | null }): string {
    list.json ??= list.entries.map((e) => e.json).join(',');
    return this.walletJson(userId, w, `"positions":[${list.json}]`);
  }

  /**
   * The row of `userId`'s wallet for a journal entry: a {@link WalletChangeRow} with the positions
   * changed since the wallet's previous journal row ({@link journalBase}), or the whole
   * {@link WalletRow} when this process journaled none for this wallet object yet (new, loaded at
   * start, or opened by a read) and for the liquidity provider (its wallet is not in checkpoints).
   * The previous journal row is in the journal, or in a durable checkpoint that covers it (which
   * holds the wallet whole as of then), so recovery always has the state the changes apply to. A
   * checkpoint's rows ({@link rowJson}) are not that base: one may never become durable.
   */
  journalRowJson(userId: string): string {
    const w = this.walletOf(userId);
    const list = this.positionsJson(w);
    const entries = list.entries;
    const base = this.journalBase.get(w);
    this.journalBase.set(w, entries.slice());
    if (base === undefined || base.length > entries.length || userId === LIQUIDITY_PROVIDER_ID)
      return this.wholeJson(userId, w, list);
    const changed: string[] = [];
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i]!;
      const b = base[i];
      if (b === e) continue;
      // a position's JSON is made again (a new entry) on every change of it
      if (b !== undefined && (b.tokenId !== e.tokenId || b.position !== e.position))
        return this.wholeJson(userId, w, list);
      changed.push(e.json);
    }
    return this.walletJson(userId, w, `"changedPositions":[${changed.join(',')}]`);
  }

  /**
   * The position entries of each wallet's last journal row ({@link journalRowJson}), in the order of
   * its positions: a journal entry's change row lists those that are not the same entries now.
   */
  private readonly journalBase = new WeakMap<Wallet, PositionJson[]>();

  /** The JSON of a wallet's row with its positions' member (`"positions":[…]` or `"changedPositions":[…]`). */
  private walletJson(userId: string, w: Wallet, positions: string): string {
    const ops = w.ops?.size ? `,"ops":${JSON.stringify([...w.ops.values()])}` : '';
    const combos = w.combos?.size ? `,"combos":${JSON.stringify(comboRows(w.combos))}` : '';
    return (
      `{"userId":${JSON.stringify(userId)},"pusd":"${str(w.pusd)}","reserved":"${str(w.reserved)}",` +
      `${positions}${ops}${combos}}`
    );
  }

  /**
   * The JSON of each wallet's positions list: one entry per position, in order, with the amounts
   * (by identity) its JSON was made from. Most journal entries of a user change one position or
   * none, so only a changed position's JSON is remade, and the list joined again only then.
   * Amounts are immutable `Dec`s replaced on change; a wallet replaced on recovery is a new object.
   */
  private readonly positionLists = new WeakMap<Wallet, { entries: PositionJson[]; json: string | null }>();

  /**
   * The JSON of each position of `w`'s row, brought up to date (see {@link positionLists}: an entry
   * is made again, a new object, when its position changed), and the `positions` array's JSON
   * without brackets when made since the last change (else null: join the entries).
   */
  private positionsJson(w: Wallet): { entries: PositionJson[]; json: string | null } {
    const memo = this.positionLists.get(w);
    if (memo && memo.entries.length <= w.positions.size) {
      let i = 0;
      let same = true;
      for (const [t, p] of w.positions) {
        const e = memo.entries[i++];
        if (e === undefined) {
          // a position opened since (positions are only ever added, at the end)
          memo.entries.push(positionJson(t, p));
          memo.json = null;
          continue;
        }
        if (e.tokenId !== t || e.position !== p) {
          same = false;
          break;
        }
        if (e.shares !== p.shares || e.reserved !== p.reserved || e.cost !== p.cost || e.realized !== p.realized) {
          memo.entries[i - 1] = positionJson(t, p);
          memo.json = null;
        }
      }
      if (same) return memo;
    }
    const entries: PositionJson[] = [];
    for (const [t, p] of w.positions) entries.push(positionJson(t, p));
    const made = { entries, json: null };
    this.positionLists.set(w, made);
    return made;
  }

  /**
   * The journal tuple of each position, with the amounts it was made from: a wallet row lists
   * every position of the user and most did not change since the last row, so their
   * decimal strings are made once per change, not once per journal entry. Amounts are immutable
   * `Dec`s replaced on change, so identity tells whether the tuple is current.
   */
  private readonly positionRows = new WeakMap<
    Position,
    { shares: Dec; reserved: Dec; cost: Dec; realized: Dec | undefined; row: WalletRow['positions'][number] }
  >();

  /** `[tokenId, shares, reserved, cost, realized?]` of a position (a shared tuple: never modify it). */
  private positionRow(tokenId: string, p: Position): WalletRow['positions'][number] {
    const c = this.positionRows.get(p);
    if (
      c &&
      c.shares === p.shares &&
      c.reserved === p.reserved &&
      c.cost === p.cost &&
      c.realized === p.realized &&
      c.row[0] === tokenId
    )
      return c.row;
    const row = tupleOf(tokenId, p);
    this.positionRows.set(p, { shares: p.shares, reserved: p.reserved, cost: p.cost, realized: p.realized, row });
    return row;
  }

  /** Rows of every wallet but the liquidity provider's, for a checkpoint. */
  rows(): WalletRow[] {
    return [...this.wallets.keys()].filter((u) => u !== LIQUIDITY_PROVIDER_ID).map((u) => this.row(u));
  }

  /** {@link rows} as JSON, one string per wallet ({@link rowJson}), for a checkpoint. */
  rowsJson(): string[] {
    const out: string[] = [];
    for (const u of this.wallets.keys()) if (u !== LIQUIDITY_PROVIDER_ID) out.push(this.rowJson(u));
    return out;
  }

  /** Replaces the wallet of a row (recovery: a later row of the same user overwrites). */
  load(r: WalletRow | WalletChangeRow): void {
    const ops = r.ops?.length ? new Map(r.ops.map((o) => [o.opId, o])) : undefined;
    const combos = r.combos?.length
      ? new Map(r.combos.map(([id, sh, c, legs]) => [id, { shares: dec(sh), cost: dec(c), legs }]))
      : undefined;
    if ('changedPositions' in r) {
      const w = this.wallets.get(r.userId);
      if (!w) throw new Error(`venue journal: a change of wallet ${r.userId} comes before any whole row of it`);
      w.pusd = dec(r.pusd);
      w.reserved = dec(r.reserved);
      for (const tuple of r.changedPositions) w.positions.set(tuple[0], positionOfTuple(tuple));
      if (ops) w.ops = ops;
      else delete w.ops;
      if (combos) w.combos = combos;
      else delete w.combos;
      return;
    }
    this.wallets.set(r.userId, {
      pusd: dec(r.pusd),
      reserved: dec(r.reserved),
      positions: new Map(r.positions.map((tuple) => [tuple[0], positionOfTuple(tuple)])),
      ...(ops ? { ops } : {}),
      ...(combos ? { combos } : {}),
    });
  }
}

/**
 * A split or a merge of a complete set: `amount` (dollars, and shares of each token) for `userId` on
 * `conditionId`'s `tokenIds`; `marks` (decimal probabilities, in `tokenIds`' order) share the dollars among
 * the tokens' cost basis or proceeds (none: equally).
 */
export interface CompleteSetOp {
  userId: string;
  meta: OpMeta;
  conditionId: string;
  tokenIds: readonly string[];
  amount: Dec;
  marks?: readonly Dec[];
}

/** A complete set's dollars shared among its tokens: by `marks` when given, else equally ({@link shareOut}). */
function setParts(amount: Dec, tokenIds: readonly string[], marks: readonly Dec[] | undefined): Dec[] {
  return shareOut(amount, marks ?? tokenIds.map(() => ONE));
}
