// @ts-check
/**
 * Live dashboard (issue 6, issue 16): the user's pUSD balance and positions (with each market's
 * question and outcome, and whether it closed or resolved), strategies and orders, updated by the
 * Socket.IO pushes of namespace /v2/trade, and a price chart of one token with its armed levels. Plain browser
 * JavaScript, type-checked by `npm run typecheck` against the event map the server uses
 * (api/push-events.ts). The API key lives in this tab's session storage only.
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
/** @type {Map<string, Row>} */
const orders = new Map();
/** The user's positions by token id (REST item shape). @type {Map<string, PositionItem>} */
const positions = new Map();
/** Lifecycle of the markets of those positions, by condition id (from markets.subscribe and market.updated). @type {Map<string, MarketPush>} */
const marketStates = new Map();
/** Last balance / position revision applied (a push older than what is shown is ignored). */
const walletRevision = { balance: 0, position: 0 };
/** @type {string | null} */
let chartToken = null;
/** @type {any} */
let chart = null;
/** @type {any} */
let series = null;
/** @type {any[]} */
let priceLines = [];

function credentials() {
  return { token: sessionStorage.getItem(KEY), partnerUserId: sessionStorage.getItem(USER) || '' };
}

/** REST GET with the session's key; throws the error envelope's text. @param {string} path */
async function get(path) {
  const { token, partnerUserId } = credentials();
  /** @type {Record<string, string>} */
  const headers = { authorization: `Bearer ${token}` };
  if (partnerUserId) headers['x-partner-user-id'] = partnerUserId;
  const res = await fetch(API + path, { headers });
  const body = await res.json();
  if (!res.ok) throw new Error(`${body.error}${body.message ? `: ${body.message}` : ''}`);
  return body;
}

/** @param {string | null | undefined} s */
const short = (s) => (s ? (s.length > 14 ? `${s.slice(0, 6)}…${s.slice(-6)}` : s) : '–');
/** @param {unknown} v */
const text = (v) => (v === null || v === undefined || v === '' ? '–' : String(v));
/** @param {number} ms */
const time = (ms) => new Date(ms).toLocaleTimeString();
const FINAL = new Set(['FILLED', 'CANCELED', 'EXPIRED', 'REJECTED', 'COMPLETED', 'FAILED']);

/** Progress of a strategy as [done, total, label]. @param {Row} s @returns {[number, number, string]} */
function progress(s) {
  if (s.type === 'TWAP' && s.slices_total) return [s.slices_done ?? 0, s.slices_total, `${s.slices_done ?? 0}/${s.slices_total} slices`];
  const size = Number(s.size ?? 0);
  const filled = Number(s.filled_size ?? 0);
  if (s.type === 'ICEBERG') return [filled, size || 1, `${s.slices_done ?? 0} clips, ${filled}/${size}`];
  if (size > 0) return [filled, size, `${filled}/${size}`];
  return [FINAL.has(s.status) ? 1 : 0, 1, s.quote_amount ? `$${s.quote_amount}` : ''];
}

/** @param {HTMLTableRowElement} tr @param {Array<string | Node>} cells */
function fill(tr, cells) {
  tr.replaceChildren(...cells.map((c) => {
    const td = document.createElement('td');
    if (typeof c === 'string') td.textContent = c;
    else td.append(c);
    return td;
  }));
}

/** @param {string} status */
function statusCell(status) {
  const span = document.createElement('span');
  span.className = `status s-${status}`;
  span.textContent = status;
  return span;
}

/** @param {Row} s */
function strategyCells(s) {
  const [done, total, label] = progress(s);
  const bar = document.createElement('span');
  const p = document.createElement('progress');
  p.max = total;
  p.value = done;
  bar.append(p, ` ${label}`);
  const marks = [s.high_water_mark && `HWM ${s.high_water_mark}`, s.low_water_mark && `LWM ${s.low_water_mark}`, s.trigger_price && `trigger ${s.trigger_price}`].filter(Boolean).join(' · ');
  return [short(s.record_id), s.type, statusCell(s.status), s.side, short(s.symbol), text(s.price), bar, text(s.filled_size), text(s.executed_price), marks || '–', time(s.updated_at)];
}

/** @param {Row} o */
function orderCells(o) {
  const flags = [o.is_stop_loss && 'stop-loss', o.is_take_profit && 'take-profit', o.record_id && `of ${short(o.record_id)}`].filter(Boolean).join(' · ');
  return [short(o.order_id), o.type, statusCell(o.status), o.side, short(o.symbol), text(o.price), text(o.size ?? (o.quote_amount && `$${o.quote_amount}`)), text(o.filled_size), flags || '–', time(o.updated_at)];
}

/**
 * Applies a record to a table: inserts or updates its row (newest first), unless it is older.
 * @param {'strategies' | 'orders'} table @param {Map<string, Row>} rows @param {string} id @param {Row} rec @param {boolean} flash
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
  fill(tr, table === 'strategies' ? strategyCells(rec) : orderCells(rec));
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

/** The market status cell of a position: open, closed, or resolved with whether this outcome won. @param {PositionItem} p */
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

/** Draws one position row (removes it when nothing is held any more). @param {PositionItem} p @param {boolean} flash */
function drawPosition(p, flash) {
  const tbody = /** @type {HTMLTableSectionElement} */ ($('positions').querySelector('tbody'));
  let tr = /** @type {HTMLTableRowElement | null} */ (tbody.querySelector(`tr[data-id="${CSS.escape(p.token_id)}"]`));
  if (Number(p.size) === 0) {
    positions.delete(p.token_id);
    tr?.remove();
    return;
  }
  positions.set(p.token_id, p);
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
  const question = document.createElement('span');
  question.textContent = p.question || short(p.token_id);
  question.title = `token ${p.token_id}`;
  fill(tr, [question, p.outcome || '–', p.size, p.available, p.avg_price, `$${p.cost_usd}`, marketCell(p)]);
  /** @type {HTMLElement} */ (tr.firstElementChild).className = 'question';
  if (flash) {
    tr.classList.remove('flash');
    void tr.offsetWidth;
    tr.classList.add('flash');
  }
}

/** Asks for the lifecycle of markets not known yet (and for market.updated from now on). @param {string[]} conditionIds */
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
  for (const p of positions.values()) if (p.condition_id === m.condition_id) drawPosition(p, true);
}

/** @param {BalancePush} b */
function onBalance(b) {
  if (b.revision <= walletRevision.balance) return;
  walletRevision.balance = b.revision;
  showBalance(b);
}

/** @param {PositionPush} p */
function onPositions(p) {
  if (p.revision <= walletRevision.position) return;
  walletRevision.position = p.revision;
  for (const item of p.positions) drawPosition(item, true);
  void watchMarkets(p.positions.map((x) => x.condition_id));
}

/** Balance and positions over REST (a connection that sees one user); hides the wallet otherwise. */
async function loadWallet() {
  try {
    const [b, p] = await Promise.all([get('/balances'), get('/positions?limit=500')]);
    // a fresh session (not recovered): start again from REST; revisions restart with a new server process
    walletRevision.balance = 0;
    walletRevision.position = 0;
    positions.clear();
    /** @type {HTMLElement} */ ($('positions').querySelector('tbody')).replaceChildren();
    $('wallet-note').textContent = '';
    showBalance(b);
    for (const item of p.positions) drawPosition(item, false);
    await watchMarkets(p.positions.map((/** @type {PositionItem} */ x) => x.condition_id));
  } catch (err) {
    // a master key without a partner user id watches no one user: no wallet to show
    $('wallet-note').textContent = String(/** @type {Error} */ (err).message);
  }
}

/** Dashed price lines: armed levels of strategies and prices of working orders on the charted token. */
function drawLevels() {
  if (!series) return;
  for (const l of priceLines) series.removePriceLine(l);
  priceLines = [];
  for (const s of strategies.values()) {
    if (s.symbol !== chartToken || FINAL.has(s.status)) continue;
    const level = s.trigger_price ?? s.price;
    if (level) priceLines.push(series.createPriceLine({ price: Number(level), color: '#f0b429', lineStyle: 2, lineWidth: 1, axisLabelVisible: true, title: `${s.type} ${short(s.record_id)}` }));
  }
  for (const o of orders.values()) {
    if (o.symbol !== chartToken || FINAL.has(o.status) || !o.price) continue;
    priceLines.push(series.createPriceLine({ price: Number(o.price), color: o.side === 'buy' ? '#3fb68b' : '#ff5d5d', lineStyle: 1, lineWidth: 1, axisLabelVisible: false, title: `${o.side} ${o.size ?? ''}` }));
  }
}

/** Charts `tokenId`: subscribes to its book and plots the mid price. @param {string | undefined} tokenId */
async function selectToken(tokenId) {
  if (!tokenId || tokenId === chartToken || !socket) return;
  if (chartToken) await socket.emitWithAck('book.unsubscribe', { token_id: chartToken });
  chartToken = tokenId;
  $('chart-token').textContent = `token ${short(tokenId)}`;
  if (!chart) {
    chart = LightweightCharts.createChart($('chart'), {
      layout: { background: { color: '#171e26' }, textColor: '#8a97a6' },
      grid: { vertLines: { color: '#263241' }, horzLines: { color: '#263241' } },
      timeScale: { timeVisible: true, secondsVisible: true },
      autoSize: true,
    });
  }
  if (series) chart.removeSeries(series);
  series = chart.addSeries(LightweightCharts.LineSeries, { color: '#4c9aff', lineWidth: 2, priceFormat: { type: 'price', precision: 3, minMove: 0.001 } });
  priceLines = [];
  drawLevels();
  const ack = await socket.emitWithAck('book.subscribe', { token_id: tokenId });
  if (!ack.ok) $('chart-token').textContent = `${ack.error}: ${ack.message ?? ''}`;
}

/** @param {BookPush} b */
function onBook(b) {
  if (b.token_id !== chartToken || !series) return;
  const bid = b.bids[0] ? Number(b.bids[0].price) : null;
  const ask = b.asks[0] ? Number(b.asks[0].price) : null;
  const mid = bid !== null && ask !== null ? (bid + ask) / 2 : (bid ?? ask);
  if (mid !== null) series.update({ time: Math.floor(b.at / 1000), value: mid });
}

/** @param {boolean} on @param {string} label */
function setConnection(on, label) {
  const el = $('connection');
  el.className = `pill ${on ? 'on' : 'off'}`;
  el.textContent = label;
}

async function start() {
  const { token, partnerUserId } = credentials();
  if (!token) return;
  $('login').hidden = true;
  $('board').hidden = false;
  const account = await get('/account').catch(() => null);
  $('who').textContent = account ? `partner ${account.partner_id ?? ''} ${partnerUserId ? `· user ${partnerUserId}` : ''}` : '';
  socket = io(API, { auth: partnerUserId ? { token, partner_user_id: partnerUserId } : { token }, transports: ['websocket'] });
  socket.on('connect', async () => {
    setConnection(true, socket?.recovered ? 'live (recovered)' : 'live');
    if (socket?.recovered) return;
    // (re)load over REST, then pushes keep it current (a push older than a row is ignored)
    try {
      const [s, o] = await Promise.all([get('/strategies?limit=500'), get('/orders/open?limit=500')]);
      for (const r of [...s.strategies].reverse()) upsert('strategies', strategies, r.record_id, r, false);
      for (const r of [...o.orders].reverse()) upsert('orders', orders, r.order_id, r, false);
    } catch (err) {
      setConnection(false, String(/** @type {Error} */ (err).message));
    }
    await loadWallet();
  });
  socket.on('disconnect', (reason) => setConnection(false, `disconnected (${reason})`));
  socket.on('connect_error', (err) => {
    setConnection(false, err.message);
    if (err.message === 'unauthorized' || err.message === 'forbidden') logout(`${err.message}: ${/** @type {any} */ (err).data?.message ?? ''}`);
  });
  socket.on('strategy.updated', (s) => upsert('strategies', strategies, s.record_id, s, true));
  socket.on('order.updated', (o) => upsert('orders', orders, o.order_id, o, true));
  socket.on('book.updated', onBook);
  socket.on('balance.updated', onBalance);
  socket.on('position.updated', onPositions);
  socket.on('market.updated', onMarket);
}

/** @param {string} [why] */
function logout(why) {
  sessionStorage.removeItem(KEY);
  sessionStorage.removeItem(USER);
  socket?.disconnect();
  socket = null;
  $('board').hidden = true;
  $('login').hidden = false;
  const err = $('login-error');
  err.hidden = !why;
  err.textContent = why ?? '';
}

$('login-form').addEventListener('submit', (e) => {
  e.preventDefault();
  sessionStorage.setItem(KEY, /** @type {HTMLInputElement} */ ($('api-key')).value.trim());
  sessionStorage.setItem(USER, /** @type {HTMLInputElement} */ ($('partner-user-id')).value.trim());
  void start();
});
$('logout').addEventListener('click', () => logout());
void start();
