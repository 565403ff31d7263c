import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { dec, type Dec } from '../decimal.js';
import { CAPTURE_FILE, CAPTURE_INITIAL_TICK, CAPTURE_MIN_SIZE, parseCapture, type Capture } from './capture.js';
import type { MarketInfo, TokenInfo } from './port.js';

/** A token of the catalogue: what the port tells of it, plus the price the liquidity provider starts from. */
export interface CatalogueToken extends TokenInfo {
  /** Reference price the liquidity provider quotes around at start (decimal probability). */
  referencePrice: Dec;
}

/** A recorded price path: unix seconds → decimal probability. */
export interface PricePath {
  tokenId: string;
  points: { tSec: number; price: Dec }[];
}

/**
 * The simulated venue's catalogue: markets in file order (the 1,000 static markets, the MSTR
 * market, then the markets of the WebSocket capture), tokens by id, the replayed price path and
 * the capture. Tick sizes are mutable: a tick-size change updates the token and its
 * market objects in place, so every reader (risk, matching, views) sees the new tick at once.
 */
export interface Catalogue {
  markets: MarketInfo[];
  tokens: Map<string, CatalogueToken>;
  replay: PricePath;
  /** The parsed WebSocket capture whose markets are listed (null when not loaded). */
  capture?: Capture | null;
  /** Token ids of the capture's markets (their books follow the capture when its replay runs). */
  captureTokens?: ReadonlySet<string>;
}

const DATA_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'data');
/** Project data folder, from both the sources (engine/venue) and the build (dist/engine/venue). */
export function dataFile(name: string): string {
  for (const dir of [DATA_DIR, path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'data')]) {
    const p = path.join(dir, name);
    if (fs.existsSync(p)) return p;
  }
  throw new Error(`data file ${name} not found in the project's data/ folder`);
}

/** The captured markets (file name in `data/`). */
export const MARKETS_FILE = 'markets-2026-02-08.json';
/** The MSTR token's recorded 10-minute price history (file name in `data/`). */
export const REPLAY_FILE = 'prices-history-mstr-10min-2026-01-07_2026-02-07.json';

interface RawMarket {
  condition_id: string;
  question: string;
  market_slug: string;
  end_date_iso: string | null;
  minimum_order_size: number;
  minimum_tick_size: number;
  neg_risk: boolean;
  tokens: { token_id: string; outcome: string; price: number }[];
}

/** JSON numbers of the capture as exact decimals (they are short literals like 0.01 or 0.185). */
const num = (n: number) => dec(String(n));

/**
 * Loads the 1,000 markets of the capture, both tokens each, and the MSTR price path (adding the
 * MSTR market from the history file's `market` object, as the markets file lacks it), then the
 * 112 binary markets of the WebSocket capture (`ws-capture-2026-02-20.csv`, see capture.ts):
 * condition id keccak256(slug), tick {@link CAPTURE_INITIAL_TICK}, minimum size
 * {@link CAPTURE_MIN_SIZE}, reference price 0.5 (used only when the capture replay is off).
 * @param options.capture whether to list the capture's markets (default true).
 */
export function loadCatalogue(options: { capture?: boolean } = {}): Catalogue {
  const raw = JSON.parse(fs.readFileSync(dataFile(MARKETS_FILE), 'utf8')) as { markets: RawMarket[] };
  const hist = JSON.parse(fs.readFileSync(dataFile(REPLAY_FILE), 'utf8')) as {
    market: {
      question: string;
      condition_id: string;
      token_id: string;
      outcome: string;
      complement_token_id: string;
      minimum_tick_size: number;
      minimum_order_size: number;
      end_date_iso: string;
      neg_risk: boolean;
    };
    history: { t: number; p: number }[];
  };
  const markets: MarketInfo[] = raw.markets.map((m) => ({
    conditionId: m.condition_id,
    question: m.question,
    slug: m.market_slug,
    endDateIso: m.end_date_iso ?? null,
    tickSize: num(m.minimum_tick_size),
    minSize: num(m.minimum_order_size),
    negRisk: m.neg_risk,
    tokens: m.tokens.map((t) => ({ tokenId: t.token_id, outcome: t.outcome, price: num(t.price) })),
  }));
  const hm = hist.market;
  if (!markets.some((m) => m.conditionId === hm.condition_id)) {
    const p0 = num(hist.history[hist.history.length - 1]!.p);
    markets.push({
      conditionId: hm.condition_id,
      question: hm.question,
      slug: 'microstrategy-sells-any-bitcoin-by-december-31-2026',
      endDateIso: hm.end_date_iso,
      tickSize: num(hm.minimum_tick_size),
      minSize: num(hm.minimum_order_size),
      negRisk: hm.neg_risk,
      tokens: [
        { tokenId: hm.token_id, outcome: hm.outcome, price: p0 },
        { tokenId: hm.complement_token_id, outcome: hm.outcome === 'Yes' ? 'No' : 'Yes', price: dec(1).minus(p0) },
      ],
    });
  }
  const capture = options.capture === false ? null : parseCapture(fs.readFileSync(dataFile(CAPTURE_FILE), 'utf8'));
  const captureTokens = new Set<string>();
  for (const cm of capture?.markets ?? []) {
    if (markets.some((m) => m.conditionId === cm.conditionId)) continue;
    markets.push({
      conditionId: cm.conditionId,
      question: cm.question,
      slug: cm.slug,
      endDateIso: null,
      tickSize: dec(CAPTURE_INITIAL_TICK),
      minSize: dec(CAPTURE_MIN_SIZE),
      negRisk: false,
      tokens: cm.tokens.map((t) => ({ tokenId: t.tokenId, outcome: t.outcome, price: dec('0.5') })),
    });
    for (const t of cm.tokens) captureTokens.add(t.tokenId);
  }
  const tokens = new Map<string, CatalogueToken>();
  for (const m of markets) {
    for (const [i, t] of m.tokens.entries()) {
      tokens.set(t.tokenId, {
        tokenId: t.tokenId,
        outcome: t.outcome,
        conditionId: m.conditionId,
        question: m.question,
        referencePrice: t.price,
        tickSize: m.tickSize,
        minSize: m.minSize,
        complementTokenId: m.tokens[1 - i]!.tokenId,
      });
    }
  }
  return {
    markets,
    tokens,
    replay: { tokenId: hm.token_id, points: hist.history.map((h) => ({ tSec: h.t, price: num(h.p) })) },
    capture,
    captureTokens,
  };
}
