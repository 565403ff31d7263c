// @ts-check
/**
 * Live dashboard: the bound user in the header; the user's pUSD balance and positions (with each
 * market's question and outcome, the mark and unrealized PnL at the mid, the realized PnL, and whether the
 * market closed or resolved), strategies and orders (named by question and outcome, looked up by token id
 * through `GET /v2/trade/markets?token_id=`), combos (legs with how each resolved, status, payout;
 * with a key holding `trade.combos`, else only what is pushed), updated by the Socket.IO pushes of namespace
 * /v2/trade, and a price chart of one token (the mid of its book, and its recent trades from the
 * tape, `GET /v2/trade/trades?token_id=`) whose scale takes in its armed levels and working
 * prices. A master key is asked which partner user to watch. Plain browser JavaScript,
 * type-checked by `npm run typecheck` against the event map the server uses
 * (api/push-events.ts). The API key lives in this tab's session storage only. Money shown is
 * computed on decimal strings (scaled integers), never on floats.
 *
 * @typedef {import('../api/push-events.js').ServerToClientEvents} ServerToClientEvents
 * @typedef {import('../api/push-events.js').ClientToServerEvents} ClientToServerEvents
 * @typedef {import('../api/push-events.js').OrderPush} OrderPush
 * @typedef {import('../api/push-events.js').StrategyPush} StrategyPush
 * @typedef {import('../api/push-events.js').BookPush} BookPush
 * @typedef {import('../api/push-events.js').BalancePush} BalancePush
 * @typedef {import('../api/push-events.js').PositionPush} PositionPush
 * @typedef {import('../api/push-events.js').PositionItem} PositionItem
 * @typedef {import('../api/push-events.js').MarketPush} MarketPush
 * @typedef {Record<string, any> & { revision: number }} Row
 * @typedef {PositionItem & { cur_price?: string | number | null; cash_pnl?: string | number | null }} HeldPosition
 *   A position row; `cur_price` (mark at the mid) and `cash_pnl` (unrealized PnL, dollars) when the server sends them.
 * @typedef {{ question: string; outcome: string; condition_id: string }} TokenInfo
 */

const KEY = 'pts.dashboard.key';
const USER = 'pts.dashboard.partnerUserId';
const API = '/v2/trade';

/** @param {string} id */
const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));

/** @type {import('socket.io-client').Socket<ServerToClientEvents, ClientToServerEvents> | null} */
let socket = null;
/** Rows by id (record_id / order_id); a push older than what is shown is ignored. @type {Map<string, Row>} */
const strategies = new Map();
/** Copytrade subscriptions by id. @type {Map<string, Row>} */
const copytrades = new Map();
/** @type {Map<string, Row>} */
const orders = new Map();
/** Combos by combo_order_id. @type {Map<string, Row>} */
const combos = new Map();
/** The user's positions by token id (REST item shape). @type {Map<string, HeldPosition>} */
const positions = new Map();
/**
 * Lifecycle of the markets of those positions, by condition id (from markets.subscribe and market.updated).
 * @type {Map<string, MarketPush>}
 */
const marketStates = new Map();
/** Last balance / position revision applied (a push older than what is shown is ignored). */
const walletRevision = { balance: 0, position: 0 };
/** @type {string | null} */
let chartToken = null;
/** @type {any} */
let chart = null;
/** @type {any} */
let series = null;
/** The charted token's recent trades (dots beside the mid's line). @type {any} */
let tradeSeries = null;
/** Its points, one per second (the time unit): the last trade. @type {{ time: number; value: number }[]} */
let tradePoints = [];
/** A tape read waiting (book changes close together make one read). @type {ReturnType<typeof setTimeout> | null} */
let tradesTimer = null;
/** Trades of the charted token read from the tape. */
const TRADES_SHOWN = 200;
/** @type {any[]} */
let priceLines = [];
/** Prices of the lines drawn on the chart: its autoscale takes them in. @type {number[]} */
let levelPrices = [];
/**
 * Why each token's book is subscribed ('chart', 'mark'); unsubscribed when no reason is left.
 * @type {Map<string, Set<string>>}
 */
const bookWants = new Map();
/**
 * Mid price of the subscribed books, in scaled units ({@link units}), and its time (epoch ms), by token id.
 * @type {Map<string, { mid: bigint; at: number }>}
 */
const mids = new Map();
/** Question and outcome of each outcome token seen, by token id. @type {Map<string, TokenInfo>} */
const tokenInfo = new Map();
/** Token ids asked of `GET /markets?token_id=` (once each; again after a failed lookup). */
const tokenAsked = new Set();
/** Token ids waiting for the next lookup (gathered so that one request names up to 100). */
const tokenQueue = new Set();

// ---- decimal strings as scaled integers (12 decimal places), for money and prices shown ----
const PLACES = 12;
const ONE = 10n ** BigInt(PLACES);

/** A decimal string (or a JSON number) as an integer count of 1e-12. @param {string | number} v @returns {bigint} */
function units(v) {
  const m = /^([+-]?)(\d*)(?:\.(\d*))?$/.exec(typeof v === 'number' ? v.toFixed(PLACES) : String(v).trim());
  if (!m || (!m[2] && !m[3])) throw new Error(`not a decimal: ${v}`);
  const n = BigInt(m[2] || '0') * ONE + BigInt((m[3] ?? '').slice(0, PLACES).padEnd(PLACES, '0'));
  return m[1] === '-' ? -n : n;
}
/** `n / d` (d > 0) rounded half away from zero. @param {bigint} n @param {bigint} d */
const divRound = (n, d) => (n < 0n ? -((-n + d / 2n) / d) : (n + d / 2n) / d);
/**
 * `u` rounded half away from zero to `dp` places, as an integer count of 10^-dp.
 * @param {bigint} u
 * @param {number} dp
 */
const rounded = (u, dp) => divRound(u, 10n ** BigInt(PLACES - dp));
/** The product of two scaled values (rounded half away from zero). @param {bigint} a @param {bigint} b */
const times = (a, b) => divRound(a * b, ONE);
/**
 * `u` as a decimal string with `dp` places (rounded), or with its significant places when `dp` is omitted.
 * @param {bigint} u
 * @param {number} [dp]
 */
function decimal(u, dp) {
  const r = rounded(u, dp ?? PLACES);
  const places = dp ?? PLACES;
  const digits = (r < 0n ? -r : r).toString().padStart(places + 1, '0');
  let out = places ? `${digits.slice(0, -places)}.${digits.slice(-places)}` : digits;
  if (dp === undefined) out = out.replace(/\.?0+$/, '');
  return r < 0n ? `-${out}` : out;
}
/** Signed dollars to the cent: `+$1.25`, `-$0.40`, `$0.00`. @param {bigint} u */
function signedUsd(u) {
  const cents = rounded(u, 2);
  const text = `$${decimal(cents < 0n ? -u : u, 2)}`;
  return cents > 0n ? `+${text}` : cents < 0n ? `-${text}` : text;
}

function credentials() {
  return { token: sessionStorage.getItem(KEY), partnerUserId: sessionStorage.getItem(USER) || '' };
}

/** An error answer of the API: the envelope's text, and the HTTP status. */
class ApiError extends Error {
  /** @param {number} status @param {{ error?: string; message?: string }} body */
  constructor(status, body) {
    super(`${body.error ?? status}${body.message ? `: ${body.message}` : ''}`);
    this.status = status;
  }
}

/**
 * The board's session: a new one at each key given and at each Forget key. An answer to an earlier
 * session is not handed to its caller, so what the previous key asked for is never drawn on the next
 * key's board.
 */
let session = 0;

/**
 * REST GET with the session's key; throws an {@link ApiError}. When the session ended while the
 * answer was on its way, the returned promise never settles: its caller stops there, drawing nothing
 * (and what marks a load in flight is reset by {@link forgetBoard}, so the next session loads again).
 * @param {string} path
 */
async function get(path) {
  const asked = session;
  const { token, partnerUserId } = credentials();
  /** @type {Record<string, string>} */
  const headers = { authorization: `Bearer ${token}` };
  if (partnerUserId) headers['x-partner-user-id'] = partnerUserId;
  const res = await fetch(API + path, { headers });
  const body = await res.json();
  if (asked !== session) return new Promise(() => {});
  if (!res.ok) throw new ApiError(res.status, body);
  return body;
}

/** @param {string | null | undefined} s */
const short = (s) => (s ? (s.length > 14 ? `${s.slice(0, 6)}…${s.slice(-6)}` : s) : '–');
/** @param {unknown} v */
const text = (v) => (v === null || v === undefined || v === '' ? '–' : String(v));
/** @param {number} ms */
const time = (ms) => new Date(ms).toLocaleTimeString();
const FINAL = new Set([
  'FILLED',
  'CANCELED',
  'EXPIRED',
  'REJECTED',
  'COMPLETED',
  'FAILED',
  'REDEEMED',
  'RESOLVED_LOSS',
]);

/** Progress of a strategy as [done, total, label]. @param {Row} s @returns {[number, number, string]} */
function progress(s) {
  if (s.type === 'TWAP' && s.slices_total)
    return [s.slices_done ?? 0, s.slices_total, `${s.slices_done ?? 0}/${s.slices_total} slices`];
  const size = Number(s.size ?? 0);
  const filled = Number(s.filled_size ?? 0);
  if (s.type === 'ICEBERG') return [filled, size || 1, `${s.slices_done ?? 0} clips, ${filled}/${size}`];
  if (size > 0) return [filled, size, `${filled}/${size}`];
  return [FINAL.has(s.status) ? 1 : 0, 1, s.quote_amount ? `$${s.quote_amount}` : ''];
}

/**
 * Fills a row; a question cell (and a combo's legs) wraps.
 * @param {HTMLTableRowElement} tr
 * @param {Array<string | HTMLElement>} cells
 */
function fill(tr, cells) {
  tr.replaceChildren(
    ...cells.map((c) => {
      const td = document.createElement('td');
      if (typeof c === 'string') td.textContent = c;
      else {
        td.append(c);
        if (c.dataset.tokenQuestion || c.dataset.legs) td.className = 'question';
      }
      return td;
    }),
  );
}

/** @param {string} status */
function statusCell(status) {
  const span = document.createElement('span');
  span.className = `status s-${status}`;
  span.textContent = status;
  return span;
}

/**
 * Remembers the question and outcome of each token of market `m`.
 * @param {{ condition_id: string; question: string; tokens: { token_id: string; outcome: string }[] }} m
 */
function learnMarket(m) {
  for (const t of m.tokens)
    tokenInfo.set(t.token_id, { question: m.question, outcome: t.outcome, condition_id: m.condition_id });
}

/**
 * Writes what is known of `tokenId` into its question and outcome cells (and the chart's title).
 * @param {string} tokenId
 */
function relabel(tokenId) {
  const info = tokenInfo.get(tokenId);
  const id = CSS.escape(tokenId);
  for (const el of document.querySelectorAll(`[data-token-question="${id}"]`))
    el.textContent = info?.question || short(tokenId);
  for (const el of document.querySelectorAll(`[data-token-outcome="${id}"]`)) el.textContent = info?.outcome || '–';
  if (tokenId === chartToken)
    $('chart-token').textContent = info ? `${info.question} — ${info.outcome}` : `token ${short(tokenId)}`;
}

/** Looks up the markets of the tokens queued since the last call, up to 100 tokens a request. */
async function lookUpTokens() {
  const ids = [...tokenQueue];
  tokenQueue.clear();
  for (let i = 0; i < ids.length; i += 100) {
    const chunk = ids.slice(i, i + 100);
    try {
      const page = await get(`/markets?limit=100&token_id=${chunk.join(',')}`);
      for (const m of page.markets) learnMarket(m);
    } catch {
      for (const id of chunk) tokenAsked.delete(id); // asked again when next shown
    }
    for (const id of chunk) relabel(id);
  }
}

/** Asks for the question and outcome of `tokenId` unless known or asked already. @param {string} tokenId */
function askToken(tokenId) {
  if (!tokenId || tokenInfo.has(tokenId) || tokenAsked.has(tokenId)) return;
  tokenAsked.add(tokenId);
  if (!tokenQueue.size) setTimeout(() => void lookUpTokens(), 0);
  tokenQueue.add(tokenId);
}

/**
 * The question and outcome cells of `tokenId` (the token id until looked up; its full id on hover).
 * @param {string} tokenId
 * @returns {[HTMLElement, HTMLElement]}
 */
function tokenCells(tokenId) {
  const question = document.createElement('span');
  question.dataset.tokenQuestion = tokenId;
  question.title = `token ${tokenId}`;
  const outcome = document.createElement('span');
  outcome.dataset.tokenOutcome = tokenId;
  const info = tokenInfo.get(tokenId);
  question.textContent = info?.question || short(tokenId);
  outcome.textContent = info?.outcome || '–';
  askToken(tokenId);
  return [question, outcome];
}

/** @param {Row} s */
function strategyCells(s) {
  const [done, total, label] = progress(s);
  const bar = document.createElement('span');
  const p = document.createElement('progress');
  p.max = total;
  p.value = done;
  bar.append(p, ` ${label}`);
  const marks = [
    s.high_water_mark && `HWM ${s.high_water_mark}`,
    s.low_water_mark && `LWM ${s.low_water_mark}`,
    s.trigger_price && `trigger ${s.trigger_price}`,
  ]
    .filter(Boolean)
    .join(' · ');
  return [
    short(s.record_id),
    s.type,
    statusCell(s.status),
    s.side,
    ...tokenCells(s.symbol),
    text(s.price),
    bar,
    text(s.filled_size),
    text(s.executed_price),
    marks || '–',
    time(s.updated_at),
  ];
}

/** @param {Row} o */
function orderCells(o) {
  const flags = [
    o.is_stop_loss && 'stop-loss',
    o.is_take_profit && 'take-profit',
    o.record_id && `of ${short(o.record_id)}`,
  ]
    .filter(Boolean)
    .join(' · ');
  return [
    short(o.order_id),
    o.type,
    statusCell(o.status),
    o.side,
    ...tokenCells(o.symbol),
    text(o.price),
    text(o.size ?? (o.quote_amount && `$${o.quote_amount}`)),
    text(o.filled_size),
    flags || '–',
    time(o.updated_at),
  ];
}

/** A copytrade subscription's row: leader, status, sizing, counters. @param {Row} c */
function copytradeCells(c) {
  const n = c.counters ?? {};
  const reasons = Object.entries(n.skipped_by_reason ?? {})
    .map(([why, k]) => `${why} ${k}`)
    .join(', ');
  const skips = document.createElement('span');
  skips.textContent = String(n.skipped ?? 0);
  skips.title = reasons || 'none';
  return [
    short(c.id),
    c.leader_username || short(String(c.leader_address ?? '')),
    statusCell(c.status),
    `${c.buy_size_mode} ${c.buy_size_value}${c.is_simulation ? ' · paper' : ''}`,
    String(n.copies ?? 0),
    skips,
    `$${n.spent_usd ?? '0'}`,
    `$${n.realized_pnl ?? '0'}`,
    time(c.updated_at),
  ];
}

/** The history read in flight (one at a time; a push meanwhile asks for one more). @type {Promise<void> | null} */
let copiesLoading = null;
let copiesAgain = false;
/** The latest copies and skips (GET /copytrade/history), read again after each copytrade push. */
async function loadCopies() {
  if (copiesLoading) {
    copiesAgain = true;
    return;
  }
  copiesLoading = (async () => {
    do {
      copiesAgain = false;
      const h = await get('/copytrade/history?limit=20');
      const tbody = /** @type {HTMLTableSectionElement} */ ($('copies').querySelector('tbody'));
      tbody.replaceChildren(
        ...h.history.map((/** @type {Row} */ r) => {
          const tr = document.createElement('tr');
          tr.dataset.id = r.id;
          tr.dataset.result = r.result;
          tr.addEventListener('click', () => selectToken(r.token_id ?? undefined));
          fill(tr, [
            time(r.created_at),
            short(r.copytrade_id),
            r.result === 'SKIPPED' ? `skipped: ${r.reason}` : r.detail || 'copied',
            text(r.side),
            ...(r.token_id ? tokenCells(r.token_id) : ['–', '–']),
            r.amount ? `$${r.amount}` : r.shares ? `${r.shares} sh` : '–',
            r.order_status ? statusCell(r.order_status) : r.is_simulation ? 'paper' : '–',
          ]);
          return tr;
        }),
      );
    } while (copiesAgain);
  })().finally(() => (copiesLoading = null));
  await copiesLoading.catch(() => {});
}

/**
 * A combo's cells: its legs by question with how each resolved (✓ won, ✗ lost, … pending), the
 * shares at the entry price, the cost and the payout (dollars).
 * @param {Row} c
 */
function comboCells(c) {
  const mark = /** @param {string} s */ (s) => (s === 'WON' ? '✓' : s === 'LOST' ? '✗' : '…');
  /** @type {{ position_id: string; question: string | null; status: string }[]} */
  const legs = c.legs ?? [];
  const list = document.createElement('span');
  list.dataset.legs = String(legs.length);
  list.textContent = legs.map((l) => `${mark(l.status)} ${l.question ?? short(l.position_id)}`).join(' · ');
  return [
    short(c.combo_order_id),
    statusCell(c.status),
    list,
    `${c.legs_resolved ?? 0}/${c.legs_total ?? legs.length}`,
    text(c.taker_shares),
    c.price_cents === undefined ? '–' : `${c.price_cents}¢`,
    c.cost_usd ? `$${c.cost_usd}` : '–',
    c.payout_usd ? `$${c.payout_usd}` : '–',
    time(c.updated_at),
  ];
}

/**
 * Applies a record to a table: inserts or updates its row (newest first), unless it is older.
 * @param {'strategies' | 'orders' | 'combos' | 'copytrades'} table
 * @param {Map<string, Row>} rows
 * @param {string} id
 * @param {Row} rec
 * @param {boolean} flash
 */
function upsert(table, rows, id, rec, flash) {
  const prev = rows.get(id);
  if (prev && prev.revision >= rec.revision) return;
  rows.set(id, rec);
  const tbody = /** @type {HTMLTableSectionElement} */ ($(table).querySelector('tbody'));
  let tr = /** @type {HTMLTableRowElement | null} */ (tbody.querySelector(`tr[data-id="${CSS.escape(id)}"]`));
  if (!tr) {
    tr = document.createElement('tr');
    tr.dataset.id = id;
    tr.addEventListener('click', () => selectToken(rows.get(id)?.symbol));
    tbody.prepend(tr);
  }
  tr.dataset.status = rec.status;
  tr.dataset.revision = String(rec.revision);
  tr.classList.toggle('done', FINAL.has(rec.status));
  fill(
    tr,
    table === 'strategies'
      ? strategyCells(rec)
      : table === 'combos'
        ? comboCells(rec)
        : table === 'copytrades'
          ? copytradeCells(rec)
          : orderCells(rec),
  );
  if (flash) {
    tr.classList.remove('flash');
    void tr.offsetWidth;
    tr.classList.add('flash');
  }
  if (!chartToken && rec.symbol && !FINAL.has(rec.status)) void selectToken(rec.symbol);
  else if (rec.symbol === chartToken) drawLevels();
}

/** @param {{ balance: string; reserved: string; available: string }} b */
function showBalance(b) {
  $('balance-balance').textContent = `$${b.balance}`;
  $('balance-reserved').textContent = `$${b.reserved}`;
  $('balance-available').textContent = `$${b.available}`;
}

/**
 * The market status cell of a position: open, closed, or resolved with whether this outcome won.
 * @param {PositionItem} p
 */
function marketCell(p) {
  const m = marketStates.get(p.condition_id);
  const span = document.createElement('span');
  if (m?.resolved) {
    const won = m.winning_token_id === p.token_id;
    span.className = won ? 'market-won' : 'market-lost';
    span.textContent = won ? 'resolved: won ($1 a share)' : 'resolved: lost ($0)';
  } else if (m?.closed) {
    span.className = 'market-closed';
    span.textContent = 'closed';
  } else span.textContent = 'open';
  return span;
}

/**
 * Mark and unrealized PnL of a position, as scaled values (null when unknown): the server's
 * `cur_price` and `cash_pnl` when the row has them; otherwise $1 / $0 a share once the market
 * resolved, else the mid of the live book, and PnL = size × mark − cost basis.
 * @param {HeldPosition} p @returns {{ mark: bigint | null; pnl: bigint | null }}
 */
function valuation(p) {
  const m = marketStates.get(p.condition_id);
  const given = p.cur_price !== undefined && p.cur_price !== null ? units(p.cur_price) : null;
  const mark =
    given ?? (m?.resolved ? (m.winning_token_id === p.token_id ? ONE : 0n) : (mids.get(p.token_id)?.mid ?? null));
  if (p.cash_pnl !== undefined && p.cash_pnl !== null) return { mark, pnl: units(p.cash_pnl) };
  if (mark === null) return { mark, pnl: null };
  const size = units(p.size);
  const cost = p.cost_usd !== undefined ? units(p.cost_usd) : times(size, units(p.avg_price));
  return { mark, pnl: times(size, mark) - cost };
}

/**
 * Whether the dashboard needs the live book of `p`'s token to value
 * it (the server sent no mark, and the market did not resolve).
 * @param {HeldPosition} p
 */
function needsBook(p) {
  return (
    (p.cur_price === undefined || p.cur_price === null || p.cash_pnl === undefined || p.cash_pnl === null) &&
    !marketStates.get(p.condition_id)?.resolved
  );
}

/**
 * A signed PnL cell: to the cent, green above zero, red below, the exact amount as its title; `–` when unknown.
 * @param {bigint | null} pnl
 */
function pnlSpan(pnl) {
  const span = document.createElement('span');
  span.className = pnl === null ? '' : pnl > 0n ? 'pnl-up' : pnl < 0n ? 'pnl-down' : '';
  span.textContent = pnl === null ? '–' : signedUsd(pnl);
  if (pnl !== null) span.title = `$${decimal(pnl)}`;
  return span;
}

/** Draws one position row (removes it when nothing is held any more). @param {HeldPosition} p @param {boolean} flash */
function drawPosition(p, flash) {
  const tbody = /** @type {HTMLTableSectionElement} */ ($('positions').querySelector('tbody'));
  let tr = /** @type {HTMLTableRowElement | null} */ (tbody.querySelector(`tr[data-id="${CSS.escape(p.token_id)}"]`));
  if (units(p.size) === 0n) {
    positions.delete(p.token_id);
    dropBook(p.token_id, 'mark');
    tr?.remove();
    return;
  }
  positions.set(p.token_id, p);
  if (p.question)
    learnMarket({
      condition_id: p.condition_id,
      question: p.question,
      tokens: [{ token_id: p.token_id, outcome: p.outcome }],
    });
  if (needsBook(p)) wantBook(p.token_id, 'mark');
  else dropBook(p.token_id, 'mark');
  if (!tr) {
    tr = document.createElement('tr');
    tr.dataset.id = p.token_id;
    tr.addEventListener('click', () => selectToken(p.token_id));
    tbody.append(tr);
  }
  const m = marketStates.get(p.condition_id);
  tr.dataset.condition = p.condition_id;
  tr.dataset.market = m?.resolved ? 'resolved' : m?.closed ? 'closed' : 'open';
  tr.classList.toggle('m-resolved', Boolean(m?.resolved));
  const { mark, pnl } = valuation(p);
  const pnlCell = pnlSpan(pnl);
  const realizedCell = pnlSpan(p.realized_pnl === undefined ? null : units(p.realized_pnl));
  fill(tr, [
    ...tokenCells(p.token_id),
    p.size,
    p.available,
    p.avg_price,
    `$${p.cost_usd}`,
    mark === null ? '–' : decimal(mark),
    pnlCell,
    realizedCell,
    marketCell(p),
  ]);
  if (flash) {
    tr.classList.remove('flash');
    void tr.offsetWidth;
    tr.classList.add('flash');
  }
}

/**
 * Asks for the lifecycle of markets not known yet (and for market.updated from now on).
 * @param {string[]} conditionIds
 */
async function watchMarkets(conditionIds) {
  const missing = [...new Set(conditionIds)].filter((id) => id && !marketStates.has(id));
  if (!socket || !missing.length) return;
  const ack = await socket.emitWithAck('markets.subscribe', { condition_ids: missing.slice(0, 500) });
  if (!ack.ok) return;
  for (const m of ack.markets) onMarket(m);
}

/** @param {MarketPush} m */
function onMarket(m) {
  const prev = marketStates.get(m.condition_id);
  if (prev && prev.revision > m.revision) return;
  if (!prev && ![...positions.values()].some((p) => p.condition_id === m.condition_id)) return;
  marketStates.set(m.condition_id, m);
  learnMarket(m);
  for (const p of positions.values()) if (p.condition_id === m.condition_id) drawPosition(p, true);
}

/** Wallet pushes received so far: a REST load of the wallet that one came during is made again ({@link loadWallet}). */
let walletPushes = 0;

/** @param {BalancePush} b */
function onBalance(b) {
  walletPushes++;
  if (b.revision <= walletRevision.balance) return;
  walletRevision.balance = b.revision;
  showBalance(b);
}

/** @param {PositionPush} p */
function onPositions(p) {
  walletPushes++;
  if (p.revision <= walletRevision.position) return;
  walletRevision.position = p.revision;
  for (const item of p.positions) drawPosition(item, true);
  void watchMarkets(p.positions.map((x) => x.condition_id));
}

/**
 * Balance and positions over REST (a connection that sees one user); hides the wallet otherwise.
 * A push that arrives while the REST answers are on their way may carry a change they do not hold
 * (the two travel apart): the table is then loaded again, or it would redraw the older state.
 */
async function loadWallet() {
  for (let attempt = 0; attempt < 5; attempt++) {
    const pushesBefore = walletPushes;
    await loadWalletOnce();
    if (walletPushes === pushesBefore) return;
  }
}

/** One REST load of {@link loadWallet}. */
async function loadWalletOnce() {
  try {
    const [b, p] = await Promise.all([get('/balances'), get('/positions?limit=500')]);
    // a fresh session (not recovered): start again from REST; revisions restart with a new server process
    walletRevision.balance = 0;
    walletRevision.position = 0;
    for (const tokenId of positions.keys()) dropBook(tokenId, 'mark');
    positions.clear();
    /** @type {HTMLElement} */ ($('positions').querySelector('tbody')).replaceChildren();
    $('wallet-note').textContent = '';
    showBalance(b);
    for (const item of p.positions) drawPosition(item, false);
    await watchMarkets(p.positions.map((/** @type {PositionItem} */ x) => x.condition_id));
  } catch (err) {
    $('wallet-note').textContent = String(/** @type {Error} */ (err).message);
  }
}

/**
 * Subscribes to `tokenId`'s book on the current connection (the chart's title says why it failed).
 * @param {string} tokenId
 */
async function subscribeBook(tokenId) {
  if (!socket) return;
  const ack = await socket.emitWithAck('book.subscribe', { token_id: tokenId });
  if (!ack.ok && tokenId === chartToken) $('chart-token').textContent = `${ack.error}: ${ack.message ?? ''}`;
}

/** Keeps `tokenId`'s book subscribed for `why` ('chart', 'mark'). @param {string} tokenId @param {string} why */
function wantBook(tokenId, why) {
  const wants = bookWants.get(tokenId) ?? new Set();
  bookWants.set(tokenId, wants);
  const first = wants.size === 0;
  wants.add(why);
  if (first && socket?.connected) void subscribeBook(tokenId);
}

/**
 * Drops reason `why` for `tokenId`'s book; unsubscribes when none is left.
 * @param {string} tokenId
 * @param {string} why
 */
function dropBook(tokenId, why) {
  const wants = bookWants.get(tokenId);
  if (!wants?.delete(why) || wants.size) return;
  bookWants.delete(tokenId);
  mids.delete(tokenId);
  if (socket?.connected) void socket.emitWithAck('book.unsubscribe', { token_id: tokenId });
}

/** Dashed price lines: armed levels of strategies and prices of working orders on the charted token. */
function drawLevels() {
  if (!series) return;
  for (const l of priceLines) series.removePriceLine(l);
  priceLines = [];
  for (const s of strategies.values()) {
    if (s.symbol !== chartToken || FINAL.has(s.status)) continue;
    const level = s.trigger_price ?? s.price;
    if (level)
      priceLines.push(
        series.createPriceLine({
          price: Number(level),
          color: '#f0b429',
          lineStyle: 2,
          lineWidth: 1,
          axisLabelVisible: true,
          title: `${s.type} ${short(s.record_id)}`,
        }),
      );
  }
  for (const o of orders.values()) {
    if (o.symbol !== chartToken || FINAL.has(o.status) || !o.price) continue;
    priceLines.push(
      series.createPriceLine({
        price: Number(o.price),
        color: o.side === 'buy' ? '#3fb68b' : '#ff5d5d',
        lineStyle: 1,
        lineWidth: 1,
        axisLabelVisible: false,
        title: `${o.side} ${o.size ?? ''}`,
      }),
    );
  }
  levelPrices = priceLines.map((l) => l.options().price);
}

/**
 * The chart's autoscale: the series' own range widened to take in every drawn level, so that an
 * armed level or a working price far from the mid stays on the scale.
 * @param {() => any} original @returns {any}
 */
function autoscaleWithLevels(original) {
  const own = original();
  if (!levelPrices.length) return own;
  const range = own?.priceRange;
  const low = Math.min(...levelPrices, ...(range ? [range.minValue] : []));
  const high = Math.max(...levelPrices, ...(range ? [range.maxValue] : []));
  return { ...own, priceRange: { minValue: low, maxValue: high } };
}

/** Charts `tokenId`: subscribes to its book and plots the mid price. @param {string | undefined} tokenId */
async function selectToken(tokenId) {
  if (!tokenId || tokenId === chartToken || !socket) return;
  if (chartToken) dropBook(chartToken, 'chart');
  chartToken = tokenId;
  relabel(tokenId);
  askToken(tokenId);
  if (!chart) {
    chart = LightweightCharts.createChart($('chart'), {
      layout: { background: { color: '#171e26' }, textColor: '#8a97a6' },
      grid: { vertLines: { color: '#263241' }, horzLines: { color: '#263241' } },
      timeScale: { timeVisible: true, secondsVisible: true },
      autoSize: true,
    });
  }
  if (series) chart.removeSeries(series);
  series = chart.addSeries(LightweightCharts.LineSeries, {
    color: '#4c9aff',
    lineWidth: 2,
    priceFormat: { type: 'price', precision: 3, minMove: 0.001 },
    autoscaleInfoProvider: autoscaleWithLevels,
  });
  if (tradeSeries) chart.removeSeries(tradeSeries);
  tradeSeries = chart.addSeries(LightweightCharts.LineSeries, {
    color: '#f5a623',
    lineVisible: false,
    pointMarkersVisible: true,
    pointMarkersRadius: 3,
    lastValueVisible: false,
    priceLineVisible: false,
    priceFormat: { type: 'price', precision: 3, minMove: 0.001 },
    autoscaleInfoProvider: autoscaleWithLevels,
  });
  tradePoints = [];
  void loadTrades(tokenId);
  priceLines = [];
  drawLevels();
  // a book already subscribed (a held token) is not pushed again: plot its last mid at once
  const last = mids.get(tokenId);
  if (last) series.update({ time: Math.floor(last.at / 1000), value: Number(decimal(last.mid)) });
  wantBook(tokenId, 'chart');
}

/**
 * Plots the last {@link TRADES_SHOWN} trades of `tokenId` from the tape (newest first there), one
 * point per second: the price of the second's last trade. A failed read leaves the points shown.
 * @param {string} tokenId
 */
async function loadTrades(tokenId) {
  /** @type {{ trades: { block_timestamp: number; price: string }[] }} */
  let body;
  try {
    body = await get(`/trades?token_id=${tokenId}&limit=${TRADES_SHOWN}`);
  } catch {
    return;
  }
  if (tokenId !== chartToken || !tradeSeries) return;
  /** @type {Map<number, number>} */
  const bySecond = new Map();
  for (const t of [...body.trades].reverse()) bySecond.set(t.block_timestamp, Number(t.price));
  tradePoints = [...bySecond].map(([time, value]) => ({ time, value }));
  tradeSeries.setData(tradePoints);
}

/** Reads the charted token's tape again in a second (the book changes of that second make one read). */
function tradesChanged() {
  if (tradesTimer) return;
  tradesTimer = setTimeout(() => {
    tradesTimer = null;
    if (chartToken) void loadTrades(chartToken);
  }, 1000);
}

/**
 * Mid of a book in scaled units: the middle of the best bid and ask,
 * else the one side quoted, else the last trade; null when none.
 * @param {BookPush} b
 */
function bookMid(b) {
  const bid = b.bids[0] ? units(b.bids[0].price) : null;
  const ask = b.asks[0] ? units(b.asks[0].price) : null;
  if (bid !== null && ask !== null) return (bid + ask) / 2n;
  return bid ?? ask ?? (b.last_trade_price ? units(b.last_trade_price) : null);
}

/** @param {BookPush} b */
function onBook(b) {
  if (!bookWants.has(b.token_id)) return;
  const mid = bookMid(b);
  if (mid === null) mids.delete(b.token_id);
  else mids.set(b.token_id, { mid, at: b.at });
  const held = positions.get(b.token_id);
  if (held && needsBook(held)) drawPosition(held, false);
  if (b.token_id === chartToken && series && mid !== null)
    series.update({ time: Math.floor(b.at / 1000), value: Number(decimal(mid)) });
  // a trade changes the book: read the tape again (at most once a second while the book moves)
  if (b.token_id === chartToken) tradesChanged();
}

/** @param {boolean} on @param {string} label */
function setConnection(on, label) {
  const el = $('connection');
  el.className = `pill ${on ? 'on' : 'off'}`;
  el.textContent = label;
}

/**
 * Shows one of the three views: the login form, the partner-user prompt of a master key, the board.
 * @param {'login' | 'pick-user' | 'board'} view
 */
function show(view) {
  $('login').hidden = view !== 'login';
  $('pick-user').hidden = view !== 'pick-user';
  $('board').hidden = view !== 'board';
}

/**
 * A master key acts for one partner user at a time: asks which (with why the last id did not do).
 * @param {string} [why]
 */
function askPartnerUser(why) {
  sessionStorage.removeItem(USER);
  show('pick-user');
  const err = $('pick-user-error');
  err.hidden = !why;
  err.textContent = why ?? '';
  $('pick-user-id').focus();
}

async function start() {
  session++;
  const { token, partnerUserId } = credentials();
  if (!token) return;
  /** @type {any} */
  let account;
  try {
    account = await get('/account');
  } catch (err) {
    const e = /** @type {ApiError} */ (err);
    // a partner user id this partner does not have: ask again; anything else: back to the key
    if (e.status === 404 && partnerUserId) askPartnerUser(`no partner user "${partnerUserId}" at this partner`);
    else logout(e.message);
    return;
  }
  if (account.api_key.kind === 'master' && !account.user) return askPartnerUser();
  show('board');
  const bound = account.user?.partner_user_id;
  $('who').textContent =
    `user ${bound ?? '–'} · partner ${account.partner_id} ` +
    `· ${account.api_key.kind === 'master' ? 'master key' : 'user key'}`;
  $('who').dataset.user = bound ?? '';
  socket = io(API, {
    auth: partnerUserId ? { token, partner_user_id: partnerUserId } : { token },
    transports: ['websocket'],
  });
  socket.on('connect', async () => {
    setConnection(true, socket?.recovered ? 'live (recovered)' : 'live');
    if (socket?.recovered) return;
    // a fresh session joined no book room yet
    for (const tokenId of bookWants.keys()) void subscribeBook(tokenId);
    // (re)load over REST, then pushes keep it current (a push older than a row is ignored)
    try {
      const [s, o] = await Promise.all([get('/strategies?limit=500'), get('/orders/open?limit=500')]);
      for (const r of [...s.strategies].reverse()) upsert('strategies', strategies, r.record_id, r, false);
      for (const r of [...o.orders].reverse()) upsert('orders', orders, r.order_id, r, false);
      if (account.api_key.scopes?.includes('trade.combos')) {
        const c = await get('/combo/positions?limit=500');
        for (const r of [...c.positions].reverse()) upsert('combos', combos, r.combo_order_id, r, false);
      }
      const ct = await get('/copytrade');
      for (const r of [...ct.copytrades].reverse()) upsert('copytrades', copytrades, r.id, r, false);
      await loadCopies();
    } catch (err) {
      setConnection(false, String(/** @type {Error} */ (err).message));
    }
    await loadWallet();
  });
  socket.on('disconnect', (reason) => setConnection(false, `disconnected (${reason})`));
  socket.on('connect_error', (err) => {
    setConnection(false, err.message);
    if (err.message === 'unauthorized' || err.message === 'forbidden')
      logout(`${err.message}: ${/** @type {any} */ (err).data?.message ?? ''}`);
  });
  socket.on('strategy.updated', (s) => upsert('strategies', strategies, s.record_id, s, true));
  socket.on('order.updated', (o) => upsert('orders', orders, o.order_id, o, true));
  socket.on('combo.updated', (c) => upsert('combos', combos, c.combo_order_id, c, true));
  socket.on('copytrade.updated', (c) => {
    upsert('copytrades', copytrades, c.id, c, true);
    void loadCopies();
  });
  socket.on('book.updated', onBook);
  socket.on('balance.updated', onBalance);
  socket.on('position.updated', onPositions);
  socket.on('market.updated', onMarket);
}

/**
 * Forgets everything the previous key showed (rows, positions, market states, the chart and its
 * book subscriptions), so the next key's user never sees another user's records.
 */
function forgetBoard() {
  for (const rows of [strategies, orders, combos, copytrades, positions, marketStates, bookWants, mids]) rows.clear();
  // loads of the ended session never resume ({@link get}): what marks one in flight goes with them
  copiesLoading = null;
  copiesAgain = false;
  tokenAsked.clear();
  tokenQueue.clear();
  walletRevision.balance = 0;
  walletRevision.position = 0;
  for (const table of ['strategies', 'orders', 'combos', 'copytrades', 'copies', 'positions'])
    /** @type {HTMLElement} */ ($(table).querySelector('tbody')).replaceChildren();
  if (chart) chart.remove();
  chart = null;
  series = null;
  tradeSeries = null;
  tradePoints = [];
  priceLines = [];
  levelPrices = [];
  chartToken = null;
}

/** @param {string} [why] */
function logout(why) {
  session++;
  sessionStorage.removeItem(KEY);
  sessionStorage.removeItem(USER);
  socket?.disconnect();
  socket = null;
  forgetBoard();
  show('login');
  $('who').textContent = '';
  const err = $('login-error');
  err.hidden = !why;
  err.textContent = why ?? '';
}

/**
 * Read-only view of the chart, for the devtools console and the browser test: the charted token,
 * the prices of its drawn levels, where a price falls on the chart (pixels from the top, null
 * when off the scale) and the height of the plot.
 */
Object.defineProperty(window, 'dashboardChart', {
  value: Object.freeze({
    token: () => chartToken,
    levels: () => [...levelPrices],
    /** The tape's trades plotted: `{time, value}` (block second, price), oldest first. */
    trades: () => tradePoints.map((x) => ({ ...x })),
    /** @param {number} price */
    coordinate: (price) => series?.priceToCoordinate(price) ?? null,
    height: () => chart?.paneSize().height ?? 0,
  }),
});

$('login-form').addEventListener('submit', (e) => {
  e.preventDefault();
  sessionStorage.setItem(KEY, /** @type {HTMLInputElement} */ ($('api-key')).value.trim());
  sessionStorage.setItem(USER, /** @type {HTMLInputElement} */ ($('partner-user-id')).value.trim());
  void start();
});
$('pick-user-form').addEventListener('submit', (e) => {
  e.preventDefault();
  sessionStorage.setItem(USER, /** @type {HTMLInputElement} */ ($('pick-user-id')).value.trim());
  void start();
});
$('pick-user-cancel').addEventListener('click', () => logout());
$('logout').addEventListener('click', () => logout());
void start();
