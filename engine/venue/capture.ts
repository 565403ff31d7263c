import { keccak256, toUtf8Bytes } from 'ethers';
import { dec, type Dec } from '../decimal.js';
import type { Side } from './port.js';

/**
 * The captured CLOB market channel: `data/ws-capture-2026-02-20.csv`
 * parsed into markets and a time-ordered list of events the replay applies
 * (engine/venue/capture-replay.ts). Pure: no I/O besides what the caller reads.
 */

/** One event of the capture, in the venue's terms (prices decimal probability, sizes shares, times epoch ms). */
export type CaptureEvent =
  /**
   * A price level of one side changed to `size` shares (0: the level is gone). `touch`: not a
   * `bid`/`ask` row of the capture but made from a row's `best_bid` / `best_ask` (see
   * {@link shapeTouch}): the synthetic touch level, or a replay level the touch removed.
   */
  | { kind: 'level'; atMs: number; tokenId: string; side: Side; price: Dec; size: Dec; touch?: true }
  /**
   * A trade printed at `price` (the last-trade price of the token), with its size (shares) and
   * the taker's side when the row gives them.
   */
  | { kind: 'trade'; atMs: number; tokenId: string; price: Dec; size?: Dec; side?: Side }
  /**
   * The token's market changed its tick to `tickSize`. `inferred`: the capture has no
   * `tick_size_change` row for it, but a book level priced finer than the market's tick says the
   * tick already was finer (see {@link parseCapture}).
   */
  | { kind: 'tick'; atMs: number; tokenId: string; tickSize: Dec; inferred?: boolean }
  /** The market of `conditionId` resolved; `winningTokenId` won. */
  | { kind: 'resolved'; atMs: number; conditionId: string; winningTokenId: string };

/** A market of the capture: one event slug, its two outcome tokens (first seen first). */
export interface CaptureMarket {
  slug: string;
  /** keccak256 of the slug's UTF-8 bytes, 0x + 64 hex: see {@link conditionIdOf}. */
  conditionId: string;
  question: string;
  tokens: { tokenId: string; outcome: string }[];
  /** When the capture first saw the market, epoch ms. */
  firstSeenMs: number;
}

/** What was skipped while parsing: rows that are not usable facts. */
export interface CaptureSkips {
  /** `error` rows (the capture's WebSocket reconnects). */
  errorRows: number;
  /** Rows of a known type whose needed value was `N/A`, empty or not a number. */
  unusable: number;
  /**
   * `N/A` values met in any column (best_bid/best_ask mostly: an `N/A` touch leaves that side of the book as it is).
   */
  naValues: number;
  /** Rows of an unknown `event_type`, repeated headers, rows with too few columns. */
  malformed: number;
  /** `market_resolved` rows of the losing token (the winning row resolves the market). */
  losingResolutionRows: number;
}

/** The parsed capture. */
export interface Capture {
  markets: CaptureMarket[];
  /** Events in `timestamp_ms` order (stable: file order within a millisecond). */
  events: CaptureEvent[];
  /** First and last event time, epoch ms. */
  startMs: number;
  endMs: number;
  skips: CaptureSkips;
  /**
   * Markets whose tick change was inferred from a book level priced finer than the market's tick
   * at that time (the capture misses the `tick_size_change` of 2 markets: their levels move in
   * 0.001 steps on a 0.01 tick): one `tick` event with `inferred: true` per token of the market,
   * just before that level.
   */
  inferredTicks?: number;
  /** Level events made from the rows' `best_bid` / `best_ask` (`touch: true`, see {@link shapeTouch}). */
  touchLevels?: number;
}

/** The capture file in the project's `data/` folder. */
export const CAPTURE_FILE = 'ws-capture-2026-02-20.csv';
/** Tick of a capture market until its `tick_size_change` (the capture's markets start at 0.01). */
export const CAPTURE_INITIAL_TICK = '0.01';
/** Minimum size of a resting order on a capture market, shares (the capture does not say otherwise). */
export const CAPTURE_MIN_SIZE = '5';
/**
 * Size of the synthetic touch level the replay places at a row's `best_bid` / `best_ask` when no
 * captured level rests at that price, shares: 20 × {@link CAPTURE_MIN_SIZE} (the capture gives no
 * size for the touch; this one lets a few minimum orders trade there).
 */
export const CAPTURE_TOUCH_SIZE = '100';

/**
 * The condition id of a capture market: keccak256 of its event slug (UTF-8), `0x` + 64 hex. The
 * capture carries no condition id; this is deterministic (the same across restarts and builds)
 * and has the shape of a real one.
 */
export function conditionIdOf(slug: string): string {
  return keccak256(toUtf8Bytes(slug));
}

/**
 * The question of a capture market from its slug: `btc-15min-up-or-down-09:15` →
 * `BTC Up or Down - 15 minutes from 09:15 ET`. Other slugs are shown as they are.
 */
export function questionOf(slug: string): string {
  const m = /^([a-z0-9]+)-15min-up-or-down-(\d{1,2}:\d{2})$/.exec(slug);
  return m ? `${m[1]!.toUpperCase()} Up or Down - 15 minutes from ${m[2]} ET` : slug;
}

const COLUMNS = [
  'event_slug',
  'timestamp_ms',
  'timestamp_iso',
  'timestamp_est',
  'event_type',
  'price',
  'size',
  'size_change',
  'side',
  'best_bid',
  'best_ask',
  'token_id',
  'is_winning_token',
  'outcome',
  'time_since_ticker_change_ms',
  'ticker_changed_recently',
  'old_tick_size',
  'new_tick_size',
  'market_resolved',
  'error_message',
] as const;
const col = Object.fromEntries(COLUMNS.map((c, i) => [c, i])) as Record<(typeof COLUMNS)[number], number>;

/** A decimal from a cell, or null for `N/A`, empty or not a finite non-negative number. */
function decimalCell(v: string | undefined): Dec | null {
  if (v === undefined || v === '' || v === 'N/A') return null;
  if (!/^[0-9]+(\.[0-9]+)?$/.test(v)) return null;
  return dec(v);
}

/** A cell holding a value strictly between 0 and 1 (a price or a tick, decimal probability), or null. */
function probabilityCell(v: string | undefined): Dec | null {
  const d = decimalCell(v);
  return d && d.gt(0) && d.lt(1) ? d : null;
}

/**
 * Parses the capture CSV (header line first; no quoted cells in this file). Never throws on a
 * bad row: `error` rows, `N/A` or empty values where a value is needed, repeated headers and
 * unknown event types are counted in {@link Capture.skips} and skipped. Level sizes are rounded to
 * the venue's 2 share decimals (half-even; the file carries float noise like `232.58999999999992`).
 * Market identity: a row's `event_slug` with its `token_id` and `outcome`; a slug with other than
 * two tokens is not listed (none in this file).
 * @param text the file's content.
 */
export function parseCapture(text: string): Capture {
  const skips: CaptureSkips = { errorRows: 0, unusable: 0, naValues: 0, malformed: 0, losingResolutionRows: 0 };
  const bySlug = new Map<string, CaptureMarket>();
  const tokenSlug = new Map<string, string>();
  const rows: {
    ev: CaptureEvent | { kind: 'resolvedToken'; atMs: number; slug: string; tokenId: string };
    n: number;
    touch?: Touch;
  }[] = [];
  const lines = text.split(/\r?\n/);
  for (let n = 1; n < lines.length; n++) {
    const line = lines[n]!;
    if (line === '') continue;
    if (line.includes('N/A')) skips.naValues += line.split(',').filter((c) => c === 'N/A').length;
    const c = line.split(',');
    const type = c[col.event_type];
    const atMs = Number(c[col.timestamp_ms]);
    if (c.length < COLUMNS.length - 1 || type === undefined || type === 'event_type' || !Number.isFinite(atMs)) {
      skips.malformed++;
      continue;
    }
    if (type === 'error') {
      skips.errorRows++;
      continue;
    }
    const slug = c[col.event_slug]!;
    const tokenId = c[col.token_id]!;
    if (!slug || !/^[0-9]+$/.test(tokenId)) {
      skips.unusable++;
      continue;
    }
    // every row with a token names its market
    let m = bySlug.get(slug);
    if (!m)
      bySlug.set(
        slug,
        (m = { slug, conditionId: conditionIdOf(slug), question: questionOf(slug), tokens: [], firstSeenMs: atMs }),
      );
    m.firstSeenMs = Math.min(m.firstSeenMs, atMs);
    if (!tokenSlug.has(tokenId)) {
      tokenSlug.set(tokenId, slug);
      m.tokens.push({ tokenId, outcome: c[col.outcome] || `Outcome ${m.tokens.length + 1}` });
    }
    switch (type) {
      case 'market_open':
        break;
      case 'bid':
      case 'ask': {
        const price = probabilityCell(c[col.price]);
        const size = decimalCell(c[col.size]);
        if (!price || !size) {
          skips.unusable++;
          break;
        }
        const touch = { bid: probabilityCell(c[col.best_bid]), ask: probabilityCell(c[col.best_ask]) };
        rows.push({
          ev: {
            kind: 'level',
            atMs,
            tokenId,
            side: type === 'bid' ? 'buy' : 'sell',
            price,
            size: size.toDecimalPlaces(2),
          },
          n,
          touch,
        });
        break;
      }
      case 'last_trade_price': {
        const price = probabilityCell(c[col.price]);
        if (!price) {
          skips.unusable++;
          break;
        }
        const size = decimalCell(c[col.size]);
        const side = c[col.side] === 'BUY' ? 'buy' : c[col.side] === 'SELL' ? 'sell' : undefined;
        rows.push({
          ev: { kind: 'trade', atMs, tokenId, price, ...(size ? { size } : {}), ...(side ? { side } : {}) },
          n,
        });
        break;
      }
      case 'tick_size_change': {
        const tickSize = probabilityCell(c[col.new_tick_size]);
        if (!tickSize) {
          skips.unusable++;
          break;
        }
        rows.push({ ev: { kind: 'tick', atMs, tokenId, tickSize }, n });
        break;
      }
      case 'market_resolved':
        if (c[col.is_winning_token] === 'true') rows.push({ ev: { kind: 'resolvedToken', atMs, slug, tokenId }, n });
        else skips.losingResolutionRows++;
        break;
      default:
        skips.malformed++;
    }
  }
  const markets = [...bySlug.values()].filter((m) => m.tokens.length === 2);
  const listed = new Set(markets.map((m) => m.slug));
  rows.sort((a, b) => a.ev.atMs - b.ev.atMs || a.n - b.n);
  const events: CaptureEvent[] = [];
  // each market's tick as the capture goes (a level finer than it makes the tick finer: see Capture.inferredTicks)
  const tickOf = new Map<string, Dec>();
  let inferredTicks = 0;
  const push = (ev: CaptureEvent, slug: string) => {
    if (ev.kind === 'level') {
      const tick = tickOf.get(slug) ?? dec(CAPTURE_INITIAL_TICK);
      if (!ev.price.mod(tick).isZero()) {
        const finer = dec(10).pow(-Math.max(ev.price.decimalPlaces(), 3));
        tickOf.set(slug, finer);
        for (const t of bySlug.get(slug)!.tokens)
          events.push({ kind: 'tick', atMs: ev.atMs, tokenId: t.tokenId, tickSize: finer, inferred: true });
        inferredTicks++;
      }
    }
    events.push(ev);
  };
  const books = new Map<string, ReplayBook>();
  let touchLevels = 0;
  for (let i = 0; i < rows.length; i++) {
    const { ev, touch } = rows[i]!;
    const slug = ev.kind === 'resolvedToken' ? ev.slug : ev.kind === 'resolved' ? '' : tokenSlug.get(ev.tokenId)!;
    if (!listed.has(slug)) continue;
    if (ev.kind === 'tick') tickOf.set(slug, ev.tickSize);
    push(
      ev.kind === 'resolvedToken'
        ? { kind: 'resolved', atMs: ev.atMs, conditionId: bySlug.get(slug)!.conditionId, winningTokenId: ev.tokenId }
        : ev,
      slug,
    );
    if (ev.kind !== 'level') continue;
    let book = books.get(ev.tokenId);
    if (!book) books.set(ev.tokenId, (book = newReplayBook()));
    noteLevel(book, ev.side, ev.price, ev.size);
    // rows of one token in one millisecond are one book update: its touch is shaped after the last of them
    const nx = rows[i + 1]?.ev;
    if (!touch || (nx?.kind === 'level' && nx.tokenId === ev.tokenId && nx.atMs === ev.atMs)) continue;
    for (const l of shapeTouch(book, touch)) {
      push(
        { kind: 'level', atMs: ev.atMs, tokenId: ev.tokenId, side: l.side, price: l.price, size: l.size, touch: true },
        slug,
      );
      touchLevels++;
    }
  }
  return {
    markets,
    events,
    startMs: events[0]?.atMs ?? 0,
    endMs: events.at(-1)?.atMs ?? 0,
    skips,
    inferredTicks,
    touchLevels,
  };
}

/** A row's `best_bid` / `best_ask` (null: `N/A`, empty or not a price). */
interface Touch {
  bid: Dec | null;
  ask: Dec | null;
}

/**
 * What the replay rests on one capture token as far as its events tell (users' trades aside):
 * levels by `side|price` (size > 0), and the price of the synthetic touch level of each side.
 */
interface ReplayBook {
  levels: Map<string, { side: Side; price: Dec }>;
  synthetic: { buy: Dec | null; sell: Dec | null };
}

function newReplayBook(): ReplayBook {
  return { levels: new Map(), synthetic: { buy: null, sell: null } };
}

const bookKey = (side: Side, price: Dec) => `${side}|${price.toFixed()}`;

/** A level event of the capture (or one made by {@link shapeTouch}) applied to the model. */
function noteLevel(book: ReplayBook, side: Side, price: Dec, size: Dec): void {
  const k = bookKey(side, price);
  if (size.gt(0)) book.levels.set(k, { side, price });
  else book.levels.delete(k);
  // any level event at the synthetic level's price replaces it (same side and price: same quote)
  if (book.synthetic[side]?.eq(price)) book.synthetic[side] = null;
}

/**
 * The level events that make a token's replayed book show a row's touch (`best_bid` /
 * `best_ask`), applied to the model `book`:
 * - every replay level inside the touch goes (bids above `best_bid`, asks below `best_ask`), and
 *   every one the other side's touch would cross (asks at or below `best_bid`, bids at or above
 *   `best_ask`);
 * - at `best_bid` (and `best_ask`) a level of {@link CAPTURE_TOUCH_SIZE} shares is placed, unless
 *   a level rests at that price already (a captured one keeps its captured size); the side's
 *   previous synthetic level goes (one per side).
 * An `N/A` side moves nothing of its own (only the other side's crossing rule applies); a crossed
 * or locked touch (`best_bid` ≥ `best_ask`: one update of the file) is ignored. Deterministic: the same
 * rows make the same events, so a restart rebuilds the same book from them.
 */
function shapeTouch(book: ReplayBook, touch: Touch): { side: Side; price: Dec; size: Dec }[] {
  const { bid, ask } = touch;
  if ((!bid && !ask) || (bid && ask && bid.gte(ask))) return [];
  const out: { side: Side; price: Dec; size: Dec }[] = [];
  const set = (side: Side, price: Dec, size: Dec) => {
    noteLevel(book, side, price, size);
    out.push({ side, price, size });
  };
  const zero = dec(0);
  for (const l of [...book.levels.values()]) {
    const inside =
      l.side === 'buy'
        ? (bid !== null && l.price.gt(bid)) || (ask !== null && l.price.gte(ask))
        : (ask !== null && l.price.lt(ask)) || (bid !== null && l.price.lte(bid));
    if (inside) set(l.side, l.price, zero);
  }
  for (const [side, price] of [
    ['buy', bid],
    ['sell', ask],
  ] as const) {
    if (!price) continue;
    const prev = book.synthetic[side];
    if (prev && !prev.eq(price)) set(side, prev, zero);
    if (book.levels.has(bookKey(side, price))) continue;
    set(side, price, dec(CAPTURE_TOUCH_SIZE));
    book.synthetic[side] = price;
  }
  return out;
}
