import type { Decimal } from 'decimal.js';
import { Dec, str, USD_DP, ZERO } from '../../engine/decimal.js';
import {
  categoryOf,
  WINDOW_HOURS,
  WINDOWS,
  type Figures,
  type Portfolio,
  type Window,
} from '../../engine/data/portfolio.js';
import type { PositionLots } from '../../engine/data/lots.js';
import type { Handler } from '../context.js';
import { page, pageQuery } from '../paging.js';

/** Dollars as the API writes them: at most 6 decimals, no trailing zeros, never "-0". */
function usd(d: Decimal): string {
  const r = d.toDecimalPlaces(USD_DP, Dec.ROUND_HALF_EVEN);
  return r.isZero() ? '0' : str(r);
}

/** A ratio with 4 decimals. */
function ratio(d: Decimal): string {
  return str(d.toDecimalPlaces(4, Dec.ROUND_HALF_EVEN));
}

/** The path's address, lower-case (its pattern was checked by the route). */
function traderOf(params: Record<string, string | string[] | undefined>): string {
  return String(params.address).toLowerCase();
}

/** The query's window (checked against the route's enum), else `fallback`. */
function windowOf(q: Record<string, unknown>, fallback: Window): Window {
  return (typeof q.window === 'string' ? q.window : fallback) as Window;
}

/** The REST shape of one FIFO position (schemas/data-portfolio.ts `TraderPosition`). */
function positionBody(portfolio: Portfolio, p: PositionLots): Record<string, unknown> {
  const facts = portfolio.tokenFacts(p.tokenId);
  const open = p.shares.gt(0);
  const mark = portfolio.mark(p.tokenId);
  const value = mark === null ? null : p.shares.times(mark);
  const resolved = facts?.resolved ?? false;
  return {
    token_id: p.tokenId,
    condition_id: p.conditionId,
    outcome: facts?.outcome ?? p.outcome,
    question: facts?.question ?? '',
    slug: facts?.slug ?? '',
    category: categoryOf(facts),
    status: open ? 'open' : 'closed',
    size: str(p.shares),
    avg_price: open ? str(p.cost.div(p.shares).toDecimalPlaces(6, Dec.ROUND_HALF_EVEN)) : '0',
    cost: usd(p.cost),
    cur_price: mark === null ? null : str(mark),
    current_value: value === null ? null : usd(value),
    unrealized_pnl: value === null || !open ? '0' : usd(value.minus(p.cost)),
    realized_pnl: usd(p.realized),
    total_bought: str(p.acquiredShares),
    redeemable: resolved && open,
    market_resolved: resolved,
    last_activity_at: p.last.atMs,
  };
}

/**
 * GET /v2/trade/traders/{address}/positions: the trader's FIFO positions in first-acquisition order,
 * `status` open (shares held), closed (none held) or all (default); offset/limit ≤ 1000.
 */
export const traderPositions: Handler = async ({ req, services }) => {
  const p = pageQuery(req, 1000);
  const trader = traderOf(req.params);
  const status = typeof req.query.status === 'string' ? req.query.status : 'all';
  const every = services.portfolio.positions(trader);
  const all = status === 'all' ? every : every.filter((x) => (status === 'open') === x.shares.gt(0));
  const items = all.slice(p.offset, p.offset + p.limit).map((x) => positionBody(services.portfolio, x));
  return { status: 200, body: { trader, status, ...page('positions', items, all.length, p) } };
};

/**
 * GET /v2/trade/leaderboard: traders with a record in the window ranked by `mode` (`pnl`, the
 * default, or `volume`), competition ranks; offset/limit ≤ 500.
 */
export const leaderboard: Handler = async ({ req, services }) => {
  const p = pageQuery(req, 500);
  const window = windowOf(req.query, '30d');
  const mode = req.query.mode === 'volume' ? 'volume' : 'pnl';
  const rows = services.portfolio.leaderboard(window, mode);
  const items = rows.slice(p.offset, p.offset + p.limit).map((r) => ({
    rank: r.rank,
    address: r.address,
    pnl: usd(r.pnl),
    realized_pnl: usd(r.figures.realized),
    volume: usd(r.figures.volume),
    trades: r.figures.trades,
    win_rate: ratio(r.figures.winRate()),
  }));
  return { status: 200, body: { window, mode, ...page('leaderboard', items, rows.length, p) } };
};

/** Figures of `trader` over `window`, zeros when it has none there. */
function figuresOf(portfolio: Portfolio, trader: string, window: Window): { pnl: Decimal; f: Figures | null } {
  const w = portfolio.windowFigures(trader, window);
  return { pnl: w?.pnl ?? ZERO, f: w?.figures ?? null };
}

/** GET /v2/trade/traders/{address}: the trader's summary over `window` (default all). */
export const traderSummary: Handler = async ({ req, services }) => {
  const trader = traderOf(req.params);
  const window = windowOf(req.query, 'all');
  const portfolio = services.portfolio;
  const agg = portfolio.trader(trader);
  const { pnl, f } = figuresOf(portfolio, trader, window);
  const unrealized = portfolio.unrealized(trader);
  const positions = portfolio.positions(trader);
  const active = positions.filter((x) => x.shares.gt(0)).length;
  return {
    status: 200,
    body: {
      trader,
      window,
      pnl: usd(pnl),
      realized_pnl: usd(f?.realized ?? ZERO),
      unrealized_pnl: usd(unrealized),
      total_pnl: usd((agg?.total.realized ?? ZERO).plus(unrealized).minus(agg?.total.fees ?? ZERO)),
      fees: usd(f?.fees ?? ZERO),
      volume: usd(f?.volume ?? ZERO),
      trades: f?.trades ?? 0,
      win_rate: ratio(f?.winRate() ?? ZERO),
      active_positions: active,
      closed_positions: positions.length - active,
      first_trade_at: agg?.firstAtMs ?? null,
      last_trade_at: agg?.lastAtMs ?? null,
    },
  };
};

/**
 * GET /v2/trade/traders/{address}/pnl: realized and unrealized PnL, each window's PnL, and the daily
 * series of cumulative realized PnL.
 */
export const traderPnl: Handler = async ({ req, services }) => {
  const trader = traderOf(req.params);
  const portfolio = services.portfolio;
  const window = windowOf(req.query, '30d');
  const pnlType = typeof req.query.pnl_type === 'string' ? req.query.pnl_type : 'overall';
  const nowS = Math.floor(services.clock.now() / 1000);
  const fromS = window === 'all' ? 0 : nowS - WINDOW_HOURS[window] * 3_600;
  const realized = portfolio
    .realizedSeries(trader)
    .map((p) => ({ ts: p.day * 86_400, pnl: usd(p.cumulative) }))
    .filter((p) => p.ts + 86_400 > fromS);
  const unrealized = portfolio.unrealized(trader);
  const allRealized = portfolio.trader(trader)?.total.realized ?? ZERO;
  const series =
    pnlType === 'realized'
      ? realized
      : pnlType === 'unrealized'
        ? [{ ts: nowS, pnl: usd(unrealized) }]
        : [...realized, { ts: nowS, pnl: usd(allRealized.plus(unrealized)) }];
  const windows = WINDOWS.map((window) => {
    const { pnl, f } = figuresOf(portfolio, trader, window);
    return {
      window,
      pnl: usd(pnl),
      realized_pnl: usd(f?.realized ?? ZERO),
      fees: usd(f?.fees ?? ZERO),
      volume: usd(f?.volume ?? ZERO),
    };
  });
  return {
    status: 200,
    body: {
      trader,
      realized_pnl: usd(allRealized),
      unrealized_pnl: usd(unrealized),
      windows,
      window,
      pnl_type: pnlType,
      series,
    },
  };
};

/** GET /v2/trade/traders/{address}/metrics: trade count, wins, win rate, volume, average trade over `window`. */
export const traderMetrics: Handler = async ({ req, services }) => {
  const trader = traderOf(req.params);
  const window = windowOf(req.query, 'all');
  const { f } = figuresOf(services.portfolio, trader, window);
  const trades = f?.trades ?? 0;
  const volume = f?.volume ?? ZERO;
  return {
    status: 200,
    body: {
      trader,
      window,
      trades,
      wins: f?.wins ?? 0,
      losses: f?.losses ?? 0,
      win_rate: ratio(f?.winRate() ?? ZERO),
      volume: usd(volume),
      shares_traded: str(f?.shares ?? ZERO),
      average_trade: trades === 0 ? '0' : usd(volume.div(trades)),
      fees: usd(f?.fees ?? ZERO),
    },
  };
};

/** GET /v2/trade/traders/{address}/categories: realized PnL, volume, trades and win rate per category, all time. */
export const traderCategories: Handler = async ({ req, services }) => {
  const trader = traderOf(req.params);
  const cats = [...(services.portfolio.trader(trader)?.categories ?? [])].sort(
    ([a, x], [b, y]) => y.volume.comparedTo(x.volume) || (a < b ? -1 : 1),
  );
  return {
    status: 200,
    body: {
      trader,
      categories: cats.map(([category, f]) => ({
        category,
        realized_pnl: usd(f.realized),
        volume: usd(f.volume),
        trades: f.trades,
        win_rate: ratio(f.winRate()),
      })),
    },
  };
};
