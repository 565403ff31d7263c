import { Dec, dec, str, USD_DP } from '../../engine/decimal.js';
import { errors } from '../../engine/errors.js';
import { venueMark } from '../../engine/data/portfolio.js';
import type { BookView, MarketInfo, VenuePort, WalletView } from '../../engine/venue/port.js';
import type { Handler } from '../context.js';
import type { MarketBody, PositionItem } from '../push-events.js';
import { page, pageQuery } from '../paging.js';

/**
 * The REST shape of one market (GET /v2/trade/markets, schemas/market.ts `MarketItem`): current
 * tick, lifecycle (`closed`, `resolved`, `winning_token_id`, `resolved_at`) and each token's
 * `winner` (null until the market resolved, then true or false) and `last_trade_price` (null
 * while no trade print was seen). `market.updated` pushes the same.
 */
export function marketBody(venue: VenuePort, m: MarketInfo): MarketBody {
  const s = venue.marketStatus(m.conditionId);
  return {
    condition_id: m.conditionId,
    question: m.question,
    slug: m.slug,
    tokens: m.tokens.map((t) => {
      const last = venue.book(t.tokenId, 1)?.lastTradePrice;
      return {
        token_id: t.tokenId,
        outcome: t.outcome,
        winner: s?.resolved ? s.winningTokenId === t.tokenId : null,
        last_trade_price: last ?? null,
      };
    }),
    tick_size: str(m.tickSize),
    min_size: str(m.minSize),
    end_date: m.endDateIso,
    neg_risk: m.negRisk,
    closed: s?.closed ?? false,
    resolved: s?.resolved ?? false,
    winning_token_id: s?.winningTokenId ?? null,
    resolved_at: s?.resolvedAtMs ?? null,
  };
}

/**
 * The markets listing the outcome tokens `tokenIds` (each market once, in the order of its first
 * token; an id the venue does not list matches nothing).
 */
function marketsOfTokens(venue: VenuePort, tokenIds: readonly string[]): MarketInfo[] {
  const seen = new Set<string>();
  const out: MarketInfo[] = [];
  for (const id of tokenIds) {
    const conditionId = venue.token(id)?.conditionId;
    const m = conditionId === undefined || seen.has(conditionId) ? undefined : venue.market(conditionId);
    if (!m) continue;
    seen.add(m.conditionId);
    out.push(m);
  }
  return out;
}

/**
 * GET /v2/trade/markets: the venue's markets in catalogue order (offset/limit, limit ≤ 500); with
 * `token_id` (one id or a comma-separated list, checked by the route's query schema) only the
 * markets of those tokens.
 */
export const markets: Handler = async ({ req, services }) => {
  const p = pageQuery(req, 500);
  const tokenIds = typeof req.query.token_id === 'string' ? req.query.token_id.split(',') : null;
  const all = tokenIds ? marketsOfTokens(services.venue, tokenIds) : services.venue.markets();
  const items = all.slice(p.offset, p.offset + p.limit).map((m) => marketBody(services.venue, m));
  return { status: 200, body: page('markets', items, all.length, p) };
};

/** One item of GET /v2/trade/positions (`position.updated` carries the same): {@link PositionItem}. */
export type PositionBody = PositionItem;

/**
 * The REST shape of one position of `userId`, with its market's question and outcome from the
 * venue, its mark and PnL (dollars, 6 decimals: `cash_pnl` unrealized at the mark, `realized_pnl`
 * from the ledger) and what the user can do with it (`redeemable`, `mergeable`).
 */
export function positionBody(venue: VenuePort, userId: string, pos: WalletView['positions'][number]): PositionBody {
  const info = venue.token(pos.tokenId);
  const size = dec(pos.size);
  const status = info ? venue.marketStatus(info.conditionId) : undefined;
  const resolved = status?.resolved ?? false;
  const mark = venueMark(venue, pos.tokenId);
  const value = mark === null ? null : size.times(mark).toDecimalPlaces(USD_DP, Dec.ROUND_HALF_EVEN);
  return {
    token_id: pos.tokenId,
    symbol: pos.tokenId,
    condition_id: info?.conditionId ?? '',
    outcome: info?.outcome ?? '',
    question: info?.question ?? '',
    size: pos.size,
    reserved: pos.reserved,
    available: pos.available,
    avg_price: size.isZero() ? '0' : str(dec(pos.costUsd).div(size).toDecimalPlaces(6)),
    cost_usd: pos.costUsd,
    cur_price: mark === null ? null : str(mark),
    current_value: value === null ? null : str(value),
    cash_pnl: value === null ? null : str(value.minus(dec(pos.costUsd))),
    realized_pnl: pos.realizedPnl ?? '0',
    redeemable: resolved && size.gt(0),
    mergeable:
      info !== undefined && dec(pos.available).gt(0) && venue.available(userId, info.complementTokenId).shares.gt(0),
    market_resolved: resolved,
  };
}

/**
 * The REST shape of a book (GET /v2/trade/book, `book.updated`): levels best first,
 * decimal strings, the current tick, the last trade print (null while none was seen).
 */
export function bookBody(view: BookView): {
  token_id: string;
  tick_size: string;
  min_size: string;
  bids: BookView['bids'];
  asks: BookView['asks'];
  last_trade_price: string | null;
} {
  return {
    token_id: view.tokenId,
    tick_size: view.tickSize,
    min_size: view.minSize,
    bids: view.bids,
    asks: view.asks,
    last_trade_price: view.lastTradePrice ?? null,
  };
}

/** GET /v2/trade/book?token_id=&depth=: levels best first (depth ≤ 100, default 20). */
export const book: Handler = async ({ req, services }) => {
  // token_id and depth were checked against the route's query schema
  const tokenId = String(req.query.token_id);
  const depth = req.query.depth === undefined ? 20 : Number(req.query.depth);
  const view = services.venue.book(tokenId, depth);
  if (!view) throw errors.notFound(`no outcome token ${tokenId}`);
  return { status: 200, body: bookBody(view) };
};

/** GET /v2/trade/balances: pUSD balance, reserved by open buys, available. */
export const balances: Handler = async ({ services, user }) => {
  const w = services.venue.wallet(user!._id);
  return { status: 200, body: { currency: 'pUSD', ...w.pusd } };
};

/** GET /v2/trade/positions: share positions with market details (offset/limit, limit ≤ 500). */
export const positions: Handler = async ({ req, services, user }) => {
  const p = pageQuery(req, 500);
  const all = services.venue.wallet(user!._id).positions;
  const items = all.slice(p.offset, p.offset + p.limit).map((pos) => positionBody(services.venue, user!._id, pos));
  return { status: 200, body: page('positions', items, all.length, p) };
};
