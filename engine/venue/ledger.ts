import { Dec, dec, str, ZERO } from '../decimal.js';
import { insufficientBalanceMessage, notEnoughSharesMessage } from '../risk.js';
import type { Available, VenueOrder, WalletView } from './port.js';


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
}

/** pUSD and positions of one user. */
export interface Wallet {
  /** pUSD balance, dollars. */
  pusd: Dec;
  /** pUSD reserved by open buys, dollars (≤ `pusd`). */
  reserved: Dec;
  /** Positions by token id (a position may hold 0 shares: it is kept, and serialized, once opened). */
  positions: Map<string, Position>;
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

/**
 * A serialized wallet as written to the journal and checkpoints (absolute values: replaying an
 * entry overwrites the wallet). Decimal strings: dollars and shares.
 */
export interface WalletRow {
  userId: string;
  pusd: string;
  reserved: string;
  positions: [tokenId: string, shares: string, reserved: string, cost: string][];
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
        .map(([tokenId, p]) => ({ tokenId, size: str(p.shares), reserved: str(p.reserved), available: str(p.shares.minus(p.reserved)), costUsd: str(p.cost) })),
    };
  }

  /** Free pUSD and free, held and reserved shares of `tokenId`, for pre-trade checks. */
  available(userId: string, tokenId: string): Available {
    const w = this.walletOf(userId);
    const p = w.positions.get(tokenId);
    return {
      usd: w.pusd.minus(w.reserved),
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
      const free = w.pusd.minus(w.reserved);
      if (free.lt(usd)) return { error: 'INSUFFICIENT_BALANCE', reason: insufficientBalanceMessage('this buy', usd, free) };
      return { usd, shares: ZERO };
    }
    const p = w.positions.get(order.tokenId);
    const free = p ? p.shares.minus(p.reserved) : ZERO;
    if (free.lt(size!)) return { error: 'INSUFFICIENT_SHARES', reason: notEnoughSharesMessage(p?.shares ?? ZERO, p?.reserved ?? ZERO) };
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
      const costOut = p.shares.isZero() ? ZERO : p.cost.times(qty).div(p.shares);
      p.cost = p.cost.minus(costOut);
      p.shares = p.shares.minus(qty);
      p.reserved = p.reserved.minus(qty);
      r.reservedShares = r.reservedShares.minus(qty);
      w.pusd = w.pusd.plus(notional);
    }
  }

  /** Releases everything `order` still holds reserved (it ended) and zeroes `r`. */
  release(order: VenueOrder, r: Reservation): void {
    const w = this.walletOf(order.userId);
    w.reserved = w.reserved.minus(r.reservedUsd);
    r.reservedUsd = ZERO;
    if (r.reservedShares.gt(0)) {
      const p = this.positionOf(w, order.tokenId);
      p.reserved = p.reserved.minus(r.reservedShares);
      r.reservedShares = ZERO;
    }
  }

  // ---- serialization ----------------------------------------------------------------------

  /** The row of `userId`'s wallet (opening it when it has none). */
  row(userId: string): WalletRow {
    const w = this.walletOf(userId);
    return {
      userId, pusd: str(w.pusd), reserved: str(w.reserved),
      positions: [...w.positions.entries()].map(([t, p]) => [t, str(p.shares), str(p.reserved), str(p.cost)]),
    };
  }

  /** Rows of every wallet but the liquidity provider's, for a checkpoint. */
  rows(): WalletRow[] {
    return [...this.wallets.keys()].filter((u) => u !== LIQUIDITY_PROVIDER_ID).map((u) => this.row(u));
  }

  /** Replaces the wallet of a row (recovery: a later row of the same user overwrites). */
  load(r: WalletRow): void {
    this.wallets.set(r.userId, {
      pusd: dec(r.pusd), reserved: dec(r.reserved),
      positions: new Map(r.positions.map(([t, s, res, c]) => [t, { shares: dec(s), reserved: dec(res), cost: dec(c) }])),
    });
  }
}
