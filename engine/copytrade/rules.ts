/**
 * The copy rules of a copytrade subscription (spec 2.6 and the reference's copytrade pages), pure: given the
 * subscription's settings, one leader fill and what the engine read of the market and the
 * follower's wallet at delivery, the decision — copy (side, token, dollars or shares, order kind)
 * or skip (with its reason). The machine (machines/copytrade.ts) applies it in a step.
 *
 * Quantities are decimal strings: dollars (pUSD), shares, prices in decimal probability.
 */
import { dec, Dec, str, ZERO } from '../decimal.js';

/** Take-profit / stop-loss level: basis points against the average cost, and the portion of the remaining shares. */
export interface CopyLevel {
  trigger_bps: number;
  portion_bps: number;
}

export type BuySizeMode = 'PCT_OF_LEADER_TRADE' | 'FIXED_USD_PER_TRADE' | 'PCT_OF_FOLLOWER_AVAILABLE';
export type SellSizeMode = BuySizeMode | 'MAX' | 'PCT_OF_MAX';
export type LeaderOrderType = 'MARKET' | 'LIMIT' | 'ALL';

/**
 * A subscription's settings as the API shows them (snake_case, numbers as decimal strings, dates
 * as ISO 8601 or null). Checked and normalised by the service; the machine trusts them.
 */
export interface CopySettings {
  leader_address: string;
  leader_username: string | null;
  buy_enabled: boolean;
  sell_enabled: boolean;
  buy_order_type: LeaderOrderType;
  buy_size_mode: BuySizeMode;
  buy_size_value: string;
  buy_min_for_percent: boolean;
  buy_min_trade_size: string | null;
  buy_max_trade_size: string | null;
  buy_insufficient_usdc_action: 'BUY_MAX' | 'SKIP';
  buy_time_in_force: 'GTC' | 'FOK';
  sell_order_type: LeaderOrderType;
  sell_size_mode: SellSizeMode;
  sell_size_value: string | null;
  sell_insufficient_shares_action: 'SELL_MAX' | 'SKIP';
  market_ids_include: string[];
  market_ids_exclude: string[];
  tags_include: string[];
  tags_exclude: string[];
  is_simulation: boolean;
  copy_start_date: string | null;
  copy_end_date: string | null;
  take_profit_levels: CopyLevel[];
  stop_loss_levels: CopyLevel[];
  close_at_price_cents: number | null;
  max_hold_seconds: number | null;
}

/** A leader's fill as a subscription sees it (from a `TraderFill` of engine/data/records.ts). */
export interface LeaderFill {
  /** `<transactionHash>:<logIndex>`: the fill's identity on the chain. */
  key: string;
  transactionHash: string;
  logIndex: number;
  blockTimestamp: number;
  /** Epoch ms. */
  atMs: number;
  conditionId: string;
  tokenId: string;
  outcome: string;
  side: 'BUY' | 'SELL';
  /** maker = the leader's resting (LIMIT) order filled; taker = its order crossed the book (MARKET). */
  role: 'maker' | 'taker';
  price: string;
  size: string;
  notionalUsd: string;
}

/** What the engine read at delivery: the market of the fill's token and the follower's wallet on it. */
export interface CopyEnv {
  /** unknown: the venue does not list the token. */
  market: 'open' | 'closed' | 'resolved' | 'unknown';
  /** Market tags (none on this venue's catalogue when absent). */
  tags: string[];
  /** Resting minimum of the market, shares. */
  minSize: string;
  /** Best bid / ask of the token, decimal probability (null: empty side). */
  bid: string | null;
  ask: string | null;
  /** Follower's free pUSD, dollars (the paper account's cash for a simulation). */
  availableUsd: string;
  /** Follower's free shares of the token (the paper position for a simulation). */
  availableShares: string;
}

/** Why a leader fill was not copied (history `reason`). */
export type SkipReason =
  | 'paused'
  | 'disabled'
  | 'ended'
  | 'outside_date_window'
  | 'buy_disabled'
  | 'sell_disabled'
  | 'order_type_filtered'
  | 'market_filtered'
  | 'tag_filtered'
  | 'market_unknown'
  | 'market_closed'
  | 'market_resolved'
  | 'below_min_trade_size'
  | 'above_max_trade_size'
  | 'no_liquidity'
  | 'insufficient_pusd'
  | 'insufficient_shares'
  | 'no_position'
  | 'below_market_minimum'
  | 'order_refused';

export const SKIP_REASONS: readonly SkipReason[] = [
  'paused',
  'disabled',
  'ended',
  'outside_date_window',
  'buy_disabled',
  'sell_disabled',
  'order_type_filtered',
  'market_filtered',
  'tag_filtered',
  'market_unknown',
  'market_closed',
  'market_resolved',
  'below_min_trade_size',
  'above_max_trade_size',
  'no_liquidity',
  'insufficient_pusd',
  'insufficient_shares',
  'no_position',
  'below_market_minimum',
  'order_refused',
];

/**
 * A copy to make. A buy is `usd` dollars: with `buy_time_in_force` GTC a LIMIT GTC buy at `price`
 * (the best ask at delivery) of `shares`, its remainder resting; with FOK a MARKET buy of `usd`
 * that fills entirely or not at all. A sell is a MARKET sell of `shares`.
 */
export interface CopyOrder {
  side: 'buy' | 'sell';
  tokenId: string;
  kind: 'LIMIT_GTC' | 'MARKET_FOK' | 'MARKET';
  /** Dollars (buys). */
  usd: string | null;
  /** Shares (a GTC buy's size, a sell's). */
  shares: string | null;
  /** Limit price of a GTC buy; the touch price a paper fill uses otherwise. */
  price: string | null;
}

export type CopyDecision = { copy: CopyOrder } | { skip: SkipReason; detail: string };

/** The $1 minimum notional of a market order (spec part 8). */
const MIN_MARKET_USD = dec(1);
const HUNDRED = dec(100);

/**
 * How a leader fill is classed for `buy_order_type` / `sell_order_type`: a taker fill is a MARKET
 * order (it crossed the book), a maker fill a LIMIT one (it rested).
 */
export function leaderOrderType(f: Pick<LeaderFill, 'role'>): 'MARKET' | 'LIMIT' {
  return f.role === 'taker' ? 'MARKET' : 'LIMIT';
}

/** Whether `atMs` lies in the subscription's copy window (`copy_start_date` inclusive, `copy_end_date` exclusive). */
export function inCopyWindow(s: Pick<CopySettings, 'copy_start_date' | 'copy_end_date'>, atMs: number): boolean {
  if (s.copy_start_date !== null && atMs < Date.parse(s.copy_start_date)) return false;
  if (s.copy_end_date !== null && atMs >= Date.parse(s.copy_end_date)) return false;
  return true;
}

const skip = (reason: SkipReason, detail: string): CopyDecision => ({ skip: reason, detail });
const floor2 = (d: Dec): Dec => d.toDecimalPlaces(2, Dec.ROUND_DOWN);
const floorUsd = (d: Dec): Dec => d.toDecimalPlaces(6, Dec.ROUND_DOWN);

/**
 * The decision for one leader fill on an ACTIVE subscription (statuses are the machine's). Order
 * of the rules: copy window, side enabled, leader order type, market id filters, tag filters, the
 * market's state, the leader trade size filters (buys), sizing, the follower's funds, the market
 * minimums. Never throws.
 */
export function decideCopy(s: CopySettings, f: LeaderFill, env: CopyEnv): CopyDecision {
  if (!inCopyWindow(s, f.atMs)) return skip('outside_date_window', `fill at ${new Date(f.atMs).toISOString()}`);
  const buy = f.side === 'BUY';
  if (buy && !s.buy_enabled) return skip('buy_disabled', 'buy_enabled is false');
  if (!buy && !s.sell_enabled) return skip('sell_disabled', 'sell_enabled is false');
  const wanted = buy ? s.buy_order_type : s.sell_order_type;
  const type = leaderOrderType(f);
  if (wanted !== 'ALL' && wanted !== type) return skip('order_type_filtered', `leader ${type} fill, copying ${wanted}`);
  if (s.market_ids_include.length > 0 && !s.market_ids_include.includes(f.conditionId))
    return skip('market_filtered', `market ${f.conditionId} not in market_ids_include`);
  if (s.market_ids_exclude.includes(f.conditionId))
    return skip('market_filtered', `market ${f.conditionId} in market_ids_exclude`);
  if (s.tags_include.length > 0 && !env.tags.some((t) => s.tags_include.includes(t)))
    return skip('tag_filtered', 'market has none of tags_include');
  if (env.tags.some((t) => s.tags_exclude.includes(t))) return skip('tag_filtered', 'market has a tag of tags_exclude');
  if (env.market !== 'open') return skip(`market_${env.market}`, `market ${f.conditionId} is ${env.market}`);
  return buy ? decideBuy(s, f, env) : decideSell(s, f, env);
}

function decideBuy(s: CopySettings, f: LeaderFill, env: CopyEnv): CopyDecision {
  const leaderUsd = dec(f.notionalUsd);
  if (s.buy_min_trade_size !== null && leaderUsd.lt(dec(s.buy_min_trade_size)))
    return skip('below_min_trade_size', `leader trade $${f.notionalUsd} < buy_min_trade_size ${s.buy_min_trade_size}`);
  if (s.buy_max_trade_size !== null && leaderUsd.gt(dec(s.buy_max_trade_size)))
    return skip('above_max_trade_size', `leader trade $${f.notionalUsd} > buy_max_trade_size ${s.buy_max_trade_size}`);
  if (env.ask === null) return skip('no_liquidity', 'no ask to buy from');
  const ask = dec(env.ask);
  const value = dec(s.buy_size_value);
  const available = dec(env.availableUsd);
  const pct = s.buy_size_mode !== 'FIXED_USD_PER_TRADE';
  let usd = floorUsd(
    s.buy_size_mode === 'PCT_OF_LEADER_TRADE'
      ? leaderUsd.times(value).div(HUNDRED)
      : s.buy_size_mode === 'PCT_OF_FOLLOWER_AVAILABLE'
        ? available.times(value).div(HUNDRED)
        : value,
  );
  // the market's minimum: a resting (GTC) buy needs minSize shares, a FOK market buy $1
  const gtc = s.buy_time_in_force === 'GTC';
  const minUsd = gtc ? dec(env.minSize).times(ask) : MIN_MARKET_USD;
  if (usd.lt(minUsd)) {
    if (!(pct && s.buy_min_for_percent))
      return skip('below_market_minimum', `copy of $${str(usd)} is below the market minimum of $${str(minUsd)}`);
    usd = minUsd;
  }
  if (usd.gt(available)) {
    if (s.buy_insufficient_usdc_action === 'SKIP')
      return skip('insufficient_pusd', `copy needs $${str(usd)}, $${str(available)} available`);
    usd = floorUsd(available);
    if (usd.lt(minUsd))
      return skip('insufficient_pusd', `$${str(available)} available, below the market minimum of $${str(minUsd)}`);
  }
  if (!gtc)
    return {
      copy: { side: 'buy', tokenId: f.tokenId, kind: 'MARKET_FOK', usd: str(usd), shares: null, price: env.ask },
    };
  const shares = floor2(usd.div(ask));
  if (shares.lt(dec(env.minSize)))
    return skip('below_market_minimum', `${str(shares)} shares is below the resting minimum of ${env.minSize}`);
  return {
    copy: {
      side: 'buy',
      tokenId: f.tokenId,
      kind: 'LIMIT_GTC',
      usd: str(shares.times(ask)),
      shares: str(shares),
      price: env.ask,
    },
  };
}

function decideSell(s: CopySettings, f: LeaderFill, env: CopyEnv): CopyDecision {
  const held = dec(env.availableShares);
  if (held.lte(ZERO)) return skip('no_position', `no shares of token ${f.tokenId} to sell`);
  if (env.bid === null) return skip('no_liquidity', 'no bid to sell to');
  const bid = dec(env.bid);
  const value = s.sell_size_value === null ? ZERO : dec(s.sell_size_value);
  let shares = floor2(
    s.sell_size_mode === 'PCT_OF_LEADER_TRADE'
      ? dec(f.size).times(value).div(HUNDRED)
      : s.sell_size_mode === 'FIXED_USD_PER_TRADE'
        ? value.div(bid)
        : s.sell_size_mode === 'PCT_OF_FOLLOWER_AVAILABLE'
          ? dec(env.availableUsd).times(value).div(HUNDRED).div(bid)
          : s.sell_size_mode === 'MAX'
            ? held
            : held.times(value).div(HUNDRED),
  );
  if (shares.gt(held)) {
    if (s.sell_insufficient_shares_action === 'SKIP')
      return skip('insufficient_shares', `copy needs ${str(shares)} shares, ${str(held)} held`);
    shares = floor2(held);
  }
  if (shares.lte(ZERO) || shares.times(bid).lt(MIN_MARKET_USD))
    return skip('below_market_minimum', `sell of ${str(shares)} shares at ${env.bid} is below the $1 market minimum`);
  return { copy: { side: 'sell', tokenId: f.tokenId, kind: 'MARKET', usd: null, shares: str(shares), price: env.bid } };
}
