import { cursorOf, TapeReader, type ChainPage, type TapeQuery } from '../../engine/data/tape.js';
import type { ChainPosition, TapeTrade, TraderFill } from '../../engine/data/records.js';
import type { MarketRegistry } from '../../engine/data/markets.js';
import { errors } from '../../engine/errors.js';
import type { Handler } from '../context.js';

/** Default `limit` of the trade reads (the reference product's). */
export const TRADES_DEFAULT_LIMIT = 100;

/**
 * The fields of a tape row or a fill that every trade row shows (schemas/data.ts `tradeFields`);
 * question and slug from `markets` (the venue's listing, else the loaded history's).
 */
function tradeFields(markets: MarketRegistry, r: TapeTrade | TraderFill) {
  const market = markets.marketOf(r.conditionId);
  return {
    trade_id: r.tradeId,
    block_timestamp: r.blockTimestamp,
    log_index: r.logIndex,
    transaction_hash: r.transactionHash,
    ts: new Date(r.blockTimestamp * 1000).toISOString(),
    market_id: r.conditionId,
    question: market?.question ?? null,
    slug: market?.slug ?? null,
    outcome: r.outcome,
    token_id: r.tokenId,
    side: r.side,
    price: r.price,
    shares: r.size,
    usdc_amount: r.notionalUsd,
    fee_usd: r.feeUsd,
    event_type: 'TRADE' as const,
    source: r.source,
  };
}

/** The query of a trade read (validated by the route's query schema: types, ranges, unknown names). */
function tapeQuery(query: Record<string, unknown>): TapeQuery {
  const q = query as {
    limit?: number;
    cursor_ts?: number;
    next_cursor_log_idx?: number;
    market_id?: string;
    token_id?: string;
    side?: 'BUY' | 'SELL';
  };
  return {
    limit: q.limit ?? TRADES_DEFAULT_LIMIT,
    cursor: cursorOf(q.cursor_ts, q.next_cursor_log_idx),
    ...(q.market_id !== undefined ? { conditionId: q.market_id.toLowerCase() } : {}),
    ...(q.token_id !== undefined ? { tokenId: q.token_id } : {}),
    ...(q.side !== undefined ? { side: q.side } : {}),
  };
}

/** `q` with the outcome tokens of its market, when it reads a market's tape (see {@link TapeQuery.marketTokens}). */
function withMarketTokens(q: TapeQuery, markets: MarketRegistry): TapeQuery {
  return q.conditionId && !q.tokenId ? { ...q, marketTokens: markets.tokensOf(q.conditionId) } : q;
}

/** The compound-cursor envelope (spec 2.9) of `page`, its rows shown by `show`. */
function envelope<T extends ChainPosition>(page: ChainPage<T>, show: (row: T) => unknown) {
  return {
    trades: page.rows.map(show),
    count: page.rows.length,
    next_cursor: page.next?.ts ?? null,
    next_cursor_log_idx: page.next?.logIndex ?? null,
  };
}

/**
 * GET /v2/trade/trades [trade.read]: the market tape, newest first, by compound cursor; filters
 * `market_id`, `token_id`, `side` (the taker's), and `address` (the trades that wallet was a party
 * to, any case) with `taker_only` (those it took).
 * @throws {DomainError} `INVALID_REQUEST` (400) when only one of `cursor_ts`, `next_cursor_log_idx` is
 *   sent, or `taker_only` without `address`.
 */
export const listTrades: Handler = async ({ req, services }) => {
  const query = req.query as Record<string, unknown>;
  const tape = await TapeReader.of(services.store, services.history);
  const address = typeof query.address === 'string' ? query.address.toLowerCase() : null;
  if (query.taker_only !== undefined && address === null)
    throw errors.badRequest('taker_only needs address: it keeps the trades that wallet took');
  const page = address
    ? await tape.walletTradesPage(address, { ...tapeQuery(query), takerOnly: query.taker_only === true })
    : await tape.tradesPage(withMarketTokens(tapeQuery(query), services.markets));
  return {
    status: 200,
    body: envelope(page, (t) => ({ ...tradeFields(services.markets, t), maker: t.maker, taker: t.taker })),
  };
};

/**
 * GET /v2/trade/traders/{address}/trades [trade.read]: the trader's fills in their own terms,
 * newest first, by compound cursor; filters `market_id`, `token_id`, `side`, `taker_only`. Any
 * address (any case; answered lower-case); one that never traded has an empty last page.
 * @throws {DomainError} `INVALID_REQUEST` (400) when only one of `cursor_ts`, `next_cursor_log_idx` is sent.
 */
export const listTraderTrades: Handler = async ({ req, services }) => {
  const address = String(req.params.address).toLowerCase();
  const query = req.query as Record<string, unknown>;
  const tape = await TapeReader.of(services.store, services.history);
  const page = await tape.traderPage(address, { ...tapeQuery(query), takerOnly: query.taker_only === true });
  return {
    status: 200,
    body: envelope(page, (f) => ({ ...tradeFields(services.markets, f), address: f.address, role: f.role })),
  };
};
