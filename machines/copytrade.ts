/**
 * A copytrade subscription (spec 2.6, 3, 4.4): mirrors a leader's fills onto the
 * follower's wallet, each fill exactly once.
 *
 * Pure: no I/O. The engine (engine/copytrade/service.ts) delivers each leader fill as
 * `leader.fill` with what it read of the market and the follower's wallet (`env`), and provides
 * two side effects through `.provide()`: `placeCopy` (a child order through the child-order router,
 * its id derived from the fill's identity, so placing it again is harmless; a copy decided in a
 * leader fill's batch has its order created by that batch, in the step's own transaction, and
 * `placeCopy` then does nothing) and `clearHistory`. A fill whose copy the venue holds already comes
 * with it (`adopt`): the step records that copy instead of deciding.
 *
 * History rows: a step's new rows (`pending`) are written with the step itself, in its store
 * transaction (the engine's `stepWritesOf`: {@link newHistoryRows}), so a step and its rows commit
 * together or not at all. Rows in a persisted snapshot are therefore in the store, and leave the
 * context without a write of their own: the first report of a copy's order (`order.updated`,
 * `order.refused`, `order.placeFailed`) drops every row up to the copy's own (they were persisted
 * by the step that decided the copy, or earlier); rows no report will follow (skips, paper copies,
 * realized PnL) are given to `clearHistory` ({@link rowsNoReportClears}), whose `history.written`
 * drops them.
 *
 * Exactly once: `watermark` is the highest chain position (`blockTimestamp`, `logIndex`) of the
 * leader fills handled, `recent` the identities (and block) of the last ones handled within
 * {@link REORDER_SECONDS} of chain time before it: at most {@link RECENT_FILLS}, so that a busy
 * leader does not make every step write thousands of them; `recentCapped` the latest block of one
 * left out for that bound. A fill after the watermark is new; one at most {@link REORDER_SECONDS}
 * before it (fills of one transaction are recorded by several order steps, which may commit out of
 * chain order) is new unless `recent` holds it; when its block is at or before `recentCapped`,
 * `recent` cannot tell, and the event's `handled` does: whether the store holds the subscription's
 * history row of that fill (every handled fill has one, written with the step that handled it: the
 * engine reads it for such a fill only, {@link historyDecides}; absent, the fill is taken as handled).
 * Anything older, or older than the subscription, is ignored (a duplicate, a redelivery, the
 * start-up replay of fills already handled). Handling a fill is one persisted step that advances
 * the watermark and records the copy (in `working`, placed again by start-up reconciliation until
 * its order reports) or the skip with its reason.
 *
 * The end date is data: `deadlines.end` = `copy_end_date` (epoch ms), a durable timer delivering
 * a guarded `timer.fired`.
 *
 * | state    | REST status | final | on                                                                      |
 * |----------|-------------|-------|-------------------------------------------------------------------------|
 * | starting | (transient) | no    | → ended when `copy_end_date` is past, → paused when created PAUSED,     |
 * |          |             |       | else → active                                                            |
 * | active   | `ACTIVE`    | no    | leader.fill (new) → copy or skip by the rules (engine/copytrade/rules.ts)|
 * |          |             |       | copytrade.status PAUSED → paused, DISABLED → disabled;                  |
 * |          |             |       | timer.fired(end, current) → ended; copytrade.update with a past end →    |
 * |          |             |       | ended                                                                    |
 * | paused   | `PAUSED`    | no    | leader.fill (new) → skip `paused`; status ACTIVE → active, DISABLED →    |
 * |          |             |       | disabled; timer.fired(end) or copytrade.update with a past end → ended   |
 * | disabled | `DISABLED`  | no    | leader.fill (new) → skip `disabled`; status ACTIVE → active (re-enabled),|
 * |          |             |       | PAUSED → paused; timer.fired(end) or update with a past end → ended      |
 * | ended    | `ENDED`     | no    | leader.fill (new) → skip `ended` (after `copy_end_date`); no status change|
 * | deleted  | `DELETED`   | yes   | (soft-deleted: history and PnL kept)                                     |
 *
 * A `leader.fill` carrying `adopt` (the venue holds the copy's order already: its batch went to
 * the venue and its records did not follow) is recorded as that copy in `active`, `paused`,
 * `disabled` and `ended` alike when the fill is new, or when the watermark has passed it but the
 * store holds no history row of it (`handled` false: a later fill was recorded meanwhile;
 * {@link adoptsFill}): the venue has spent the follower's wallet on it, so it is never skipped nor
 * decided again, nor left unrecorded.
 *
 * In every state but `deleted` (so a PAUSED, DISABLED or ENDED subscription's positions keep their
 * risk controls): `copytrade.update` (settings; the end deadline follows `copy_end_date`),
 * `copytrade.delete` → deleted, child order reports (`order.updated` when it tells something new
 * of a working copy (a fill, its end), `order.refused`, `order.placeFailed`: the copy's position and PnL),
 * `history.written`, `simulation.reset`,
 * `book.touch` of a held token (take-profit, stop-loss, close price: {@link riskLevels}) and
 * `timer.fired(hold:<tokenId>, current)` (`max_hold_seconds`): a MARKET sell `ord_<id>_x<n>` of the
 * position's portion, each level once per position, none while a copy works on that token.
 */
import { assign, setup } from 'xstate';
import type { FieldCodec, RecordIds, SnapshotForm } from '../engine/actor-host.js';
import { dec, Dec, str, ZERO } from '../engine/decimal.js';
import {
  decideCopy,
  inCopyWindow,
  type CopyEnv,
  type CopyOrder,
  type CopySettings,
  type LeaderFill,
  type SkipReason,
} from '../engine/copytrade/rules.js';
import { given } from './input.js';

/** Starting cash of a simulation's paper account, dollars. */
export const PAPER_INITIAL_USD = '1000';

/** Input of a subscription actor. */
export interface CopytradeInput {
  /** Actor id (`ct_…`). */
  id: string;
  userId: string;
  /** The follower's wallet (its safe address), shown as `user_wallet` in history. */
  userWallet: string;
  settings: CopySettings;
  /** Status asked for at creation (`status` of the request, ACTIVE by default). */
  initialStatus: 'ACTIVE' | 'PAUSED';
  /** Epoch ms; fills before it are not this subscription's. */
  createdAtMs: number;
}

/** A copy whose order has not ended yet. */
export interface WorkingCopy {
  orderId: string;
  /** History row of the copy. */
  entryId: string;
  side: 'buy' | 'sell';
  tokenId: string;
  /** The order as decided (placed again by start-up reconciliation while `reported` is false). */
  order: CopyOrder;
  /** The leader fill copied (absent for a risk-control exit): a refusal's skip row names it too. */
  fill?: LeaderFill;
  /**
   * A report of a fill of the order arrived (the order exists and traded; acceptance alone is no
   * step, see `reportNews`): a refusal after it leaves the copy a copy, one before makes it a skip.
   */
  reported: boolean;
  /** Shares and dollars filled so far. */
  filledSize: string;
  matchedAmount: string;
}

/** A position the subscription's copies hold (average cost basis). */
export interface CopyPosition {
  shares: string;
  /** Dollars paid for `shares`. */
  costUsd: string;
  /** When the position opened (its first copy's fill), epoch ms: the `max_hold_seconds` clock. */
  openedAtMs?: number;
  /** Risk-control levels that fired on it (`tp<i>`, `sl<i>`, `close`, `hold`): each fires once per position. */
  done?: string[];
}

/** One history row (collection `copytradeHistory`): a copy, a skip with its reason, or realized PnL. */
export interface CopyHistoryEntry {
  /**
   * `<subscription>:<transactionHash>:<logIndex>` for a copy or skip; `<subscription>:pnl:…` for
   * realized PnL.
   */
  _id: string;
  copytradeId: string;
  userId: string;
  kind: 'copy' | 'skip' | 'realized';
  /** Epoch ms of the decision. */
  atMs: number;
  isSimulation: boolean;
  fill: LeaderFill | null;
  reason: SkipReason | null;
  detail: string | null;
  orderId: string | null;
  order: CopyOrder | null;
  /** Realized PnL, dollars (kind `realized`). */
  pnlUsd: string | null;
}

/** The paper account of a simulation. */
export interface PaperAccount {
  cashUsd: string;
  realizedPnl: string;
  positions: Record<string, CopyPosition>;
}

export interface CopytradeContext extends CopytradeInput {
  watermark: { blockTimestamp: number; logIndex: number } | null;
  /**
   * `[key, blockTimestamp]` of the last leader fills handled within the reorder window (at most
   * {@link RECENT_FILLS}), oldest first.
   */
  recent: [string, number][];
  /**
   * The latest block (chain seconds) of a fill within the reorder window left out of `recent` for
   * its bound, or null (absent in snapshots of earlier versions: null).
   */
  recentCapped?: number | null;
  working: WorkingCopy[];
  /** The copy decided by the step being taken (its `placeCopy`), null after it. */
  placing: WorkingCopy | null;
  /** History rows of recent steps, in the store already, not yet dropped from the context (see the header). */
  pending: CopyHistoryEntry[];
  copies: number;
  skipped: Partial<Record<SkipReason, number>>;
  /** Dollars spent on buys (paper dollars for a simulation). */
  spentUsd: string;
  realizedPnl: string;
  positions: Record<string, CopyPosition>;
  paper: PaperAccount;
  /** Paper history rows written since the last reset. */
  paperRows: number;
  /** `end` (copy_end_date) and `hold:<tokenId>` (max_hold_seconds of a position), epoch ms. */
  deadlines: Record<string, number>;
  /** Risk-control exit orders issued (the next id is `ord_<id>_x<exitSeq + 1>`). */
  exitSeq: number;
  updatedAtMs: number;
}

export type CopytradeEvent =
  | {
      type: 'leader.fill';
      fill: LeaderFill;
      env: CopyEnv;
      atMs: number;
      /** Whether the store holds this subscription's history row of the fill (given when {@link historyDecides}). */
      handled?: boolean;
      /**
       * The copy's order the venue already holds (its id is this fill's {@link copyOrderId}): the fill is
       * recorded as this copy, in any state but `deleted`, not decided again on a wallet that order spent.
       */
      adopt?: CopyOrder;
    }
  | { type: 'copytrade.status'; status: 'ACTIVE' | 'PAUSED' | 'DISABLED'; atMs: number }
  | { type: 'copytrade.update'; settings: CopySettings; atMs: number }
  | { type: 'copytrade.delete'; atMs: number }
  | { type: 'simulation.reset'; atMs: number }
  | { type: 'history.written'; ids: string[] }
  | {
      type: 'order.updated';
      orderId: string;
      status: string;
      filledSize: string;
      matchedAmount: string;
      final: boolean;
      atMs?: number;
    }
  | { type: 'order.refused'; orderId: string; error: string; reason: string }
  | { type: 'order.placeFailed'; orderId: string; error: string; reason: string; atMs: number }
  | { type: 'timer.fired'; name: string; atMs: number }
  /** The touch of a token a position is held on (engine: when a risk-control level may have been reached). */
  | { type: 'book.touch'; tokenId: string; bid: string | null; ask: string | null; atMs: number };

/** Machine definition version, stored with every snapshot. */
export const COPYTRADE_MACHINE_VERSION = 1;

/** The copy order id of a leader fill for a subscription: the same fill always gives the same id. */
export function copyOrderId(subscriptionId: string, fillKey: string): string {
  return `ord_${subscriptionId}_${fillKey.replace(/^0x/, '').replace(':', '_')}`;
}

/**
 * The subscription and leader fill a copy order id was made from ({@link copyOrderId} read back: its
 * last two `_`-separated parts are the fill's transaction hash, without `0x`, and log index), or null
 * when `orderId` is not a copy's.
 */
export function copyOrderKeyOf(orderId: string): { subscriptionId: string; fillKey: string } | null {
  const m = /^ord_(.+)_([0-9a-fA-F]+)_(\d+)$/.exec(orderId);
  if (!m) return null;
  const key = { subscriptionId: m[1]!, fillKey: `0x${m[2]!}:${m[3]!}` };
  return copyOrderId(key.subscriptionId, key.fillKey) === orderId ? key : null;
}

/** The history row id of a leader fill for a subscription. */
export const historyId = (subscriptionId: string, fillKey: string) => `${subscriptionId}:${fillKey}`;

/**
 * The history rows of `next` that the step from `previous` made (the engine writes them with the
 * step): those of `next.pending` not in `previous.pending` (the same objects: a step copies the
 * array, never the rows; a row replaced under the same id is a new object).
 */
export function newHistoryRows(
  next: Pick<CopytradeContext, 'pending'>,
  previous: Pick<CopytradeContext, 'pending'>,
): CopyHistoryEntry[] {
  if (next.pending === previous.pending) return [];
  const before = new Set(previous.pending);
  return next.pending.filter((r) => !before.has(r));
}

/**
 * The rows of `c.pending` that no coming order report drops: those after the row of the last copy
 * whose order has not reported yet (a report drops every row up to its copy's row).
 */
export function rowsNoReportClears(c: Pick<CopytradeContext, 'pending' | 'working'>): CopyHistoryEntry[] {
  const waiting = new Set(c.working.filter((w) => !w.reported).map((w) => w.entryId));
  for (let i = c.pending.length - 1; i >= 0; i--) if (waiting.has(c.pending[i]!._id)) return c.pending.slice(i + 1);
  return c.pending;
}

/** `pending` without the rows up to and including the row `entryId` (all of it when absent: nothing dropped). */
function dropThrough(pending: CopyHistoryEntry[], entryId: string): CopyHistoryEntry[] {
  const i = pending.findIndex((r) => r._id === entryId);
  return i < 0 ? pending : pending.slice(i + 1);
}

/** Most leader fill identities a subscription remembers (see the header). */
export const RECENT_FILLS = 16;
/** Chain seconds before the watermark within which a fill not in `recent` is still new. */
export const REORDER_SECONDS = 120;

type Dedup = Pick<CopytradeContext, 'watermark' | 'recent' | 'recentCapped' | 'createdAtMs'>;

/** Whether `f` is after the watermark `w` in chain order. */
const afterMark = (w: CopytradeContext['watermark'], f: LeaderFill) =>
  w === null ||
  f.blockTimestamp > w.blockTimestamp ||
  (f.blockTimestamp === w.blockTimestamp && f.logIndex > w.logIndex);

/** Whether `f`, at or before the watermark, is within the reorder window and not in `recent`. */
const unseenInWindow = (c: Dedup, f: LeaderFill) =>
  f.blockTimestamp >= c.watermark!.blockTimestamp - REORDER_SECONDS && !inRecent(c.recent, f.key);

/** Whether `recent` holds fill `key` (a plain loop: it runs for every subscription a fill reaches). */
function inRecent(recent: CopytradeContext['recent'], key: string): boolean {
  for (let i = 0; i < recent.length; i++) if (recent[i]![0] === key) return true;
  return false;
}

/**
 * Whether only the store can tell if `f` was handled (see the header): a fill of the subscription's
 * time, at or before its watermark, within the reorder window, not in `recent`, of a block at or
 * before `recentCapped`. The engine then reads the fill's history row and gives `handled`.
 */
export function historyDecides(c: Dedup, f: LeaderFill): boolean {
  const capped = c.recentCapped ?? null;
  if (capped === null || f.blockTimestamp > capped || f.atMs < c.createdAtMs || afterMark(c.watermark, f)) return false;
  return unseenInWindow(c, f);
}

/**
 * Whether `fill` is new to the subscription (see the header).
 * @param handledInStore - the event's `handled`, read when {@link historyDecides}; absent then: handled.
 */
export function isNewFill(c: Dedup, f: LeaderFill, handledInStore?: boolean): boolean {
  if (f.atMs < c.createdAtMs) return false;
  if (afterMark(c.watermark, f)) return true;
  if (!unseenInWindow(c, f)) return false;
  const capped = c.recentCapped ?? null;
  return capped === null || f.blockTimestamp > capped || handledInStore === false;
}

/**
 * Whether leader fill `f`, whose copy the venue holds already (a `leader.fill` with `adopt`), is
 * recorded as that copy: a new fill ({@link isNewFill}), or one the watermark has passed (a later
 * fill recorded while its records failed) that this subscription never recorded: the store holds no
 * history row of it (`handledInStore` false, read by the engine) and it is no working copy.
 */
export function adoptsFill(
  c: Dedup & Pick<CopytradeContext, 'id' | 'working'>,
  f: LeaderFill,
  handledInStore?: boolean,
) {
  if (isNewFill(c, f, handledInStore)) return true;
  if (handledInStore !== false || f.atMs < c.createdAtMs) return false;
  const orderId = copyOrderId(c.id, f.key);
  return !c.working.some((w) => w.orderId === orderId);
}

/** The watermark, `recent` and `recentCapped` once `f` is handled. */
function handled(c: Pick<CopytradeContext, 'watermark' | 'recent' | 'recentCapped'>, f: LeaderFill) {
  const watermark = afterMark(c.watermark, f)
    ? { blockTimestamp: f.blockTimestamp, logIndex: f.logIndex }
    : c.watermark!;
  const from = watermark.blockTimestamp - REORDER_SECONDS;
  let capped = c.recentCapped ?? null;
  if (capped !== null && capped < from) capped = null;
  // the entries kept, oldest first, then `f`: those within the window, at most RECENT_FILLS (one loop, no copies)
  const kept: [string, number][] = [];
  for (let i = 0; i < c.recent.length; i++) if (c.recent[i]![1] >= from) kept.push(c.recent[i]!);
  kept.push([f.key, f.blockTimestamp]);
  const out = kept.length - RECENT_FILLS;
  if (out <= 0) return { watermark, recent: kept, recentCapped: capped };
  for (let i = 0; i < out; i++) capped = Math.max(capped ?? -Infinity, kept[i]![1]);
  return { watermark, recent: kept.slice(out), recentCapped: capped };
}

/** The end deadline of settings: `copy_end_date` in epoch ms, when set. */
function endDeadline(s: CopySettings): { end?: number } {
  return s.copy_end_date === null ? {} : { end: Date.parse(s.copy_end_date) };
}

const HALF = dec('0.5');
const addStr = (a: string, b: Dec) => str(dec(a).plus(b));

/** The paper fill price of a copy: the midpoint of the touch, else the one side quoted. */
function midOf(env: CopyEnv): Dec | null {
  if (env.bid !== null && env.ask !== null) return dec(env.bid).plus(dec(env.ask)).times(HALF);
  const one = env.bid ?? env.ask;
  return one === null ? null : dec(one);
}

/** A fill of `shares` for `usd` applied to positions; for a sell, the PnL realized (average cost). */
function applyFill(
  positions: Record<string, CopyPosition>,
  tokenId: string,
  side: 'buy' | 'sell',
  shares: Dec,
  usd: Dec,
  atMs = 0,
): { positions: Record<string, CopyPosition>; realized: Dec } {
  const p: CopyPosition = positions[tokenId] ?? { shares: '0', costUsd: '0', openedAtMs: atMs, done: [] };
  const held = dec(p.shares);
  const cost = dec(p.costUsd);
  let next: CopyPosition;
  let realized = ZERO;
  if (side === 'buy') next = { ...p, shares: str(held.plus(shares)), costUsd: str(cost.plus(usd)) };
  else {
    // shares sold beyond what the copies bought (held before) carry no cost basis of this subscription
    const sold = Dec.min(shares, held);
    const costOut = held.isZero() ? ZERO : cost.times(sold).div(held).toDecimalPlaces(6);
    realized = usd
      .times(sold.isZero() ? ZERO : sold.div(shares))
      .minus(costOut)
      .toDecimalPlaces(6);
    next = { ...p, shares: str(held.minus(sold)), costUsd: str(cost.minus(costOut)) };
  }
  const out = { ...positions };
  if (dec(next.shares).isZero()) delete out[tokenId];
  else out[tokenId] = next;
  return { positions: out, realized };
}

function row(
  c: CopytradeContext,
  atMs: number,
  fields: Partial<CopyHistoryEntry> & Pick<CopyHistoryEntry, '_id' | 'kind'>,
): CopyHistoryEntry {
  return {
    copytradeId: c.id,
    userId: c.userId,
    atMs,
    isSimulation: c.settings.is_simulation,
    fill: null,
    reason: null,
    detail: null,
    orderId: null,
    order: null,
    pnlUsd: null,
    ...fields,
  };
}

/** Context changes of a skip. */
function skipped(c: CopytradeContext, f: LeaderFill, atMs: number, reason: SkipReason, detail: string) {
  return {
    ...handled(c, f),
    skipped: { ...c.skipped, [reason]: (c.skipped[reason] ?? 0) + 1 },
    pending: [...c.pending, row(c, atMs, { _id: historyId(c.id, f.key), kind: 'skip', fill: f, reason, detail })],
    updatedAtMs: atMs,
  };
}

/** Context changes of a paper copy: filled at once at the midpoint on the paper account. */
function paperCopy(c: CopytradeContext, f: LeaderFill, env: CopyEnv, order: CopyOrder, atMs: number) {
  const mid = midOf(env)!;
  const shares =
    order.side === 'buy' ? dec(order.usd!).div(mid).toDecimalPlaces(2, Dec.ROUND_DOWN) : dec(order.shares!);
  const usd = shares.times(mid).toDecimalPlaces(6);
  const { positions, realized } = applyFill(c.paper.positions, order.tokenId, order.side, shares, usd);
  const id = historyId(c.id, f.key);
  const paid = { ...order, shares: str(shares), usd: str(usd), price: str(mid) };
  const rows = [row(c, atMs, { _id: id, kind: 'copy', fill: f, order: paid })];
  if (order.side === 'sell')
    rows.push(row(c, atMs, { _id: `${c.id}:pnl:${id}`, kind: 'realized', pnlUsd: str(realized) }));
  return {
    ...handled(c, f),
    copies: c.copies + 1,
    spentUsd: order.side === 'buy' ? addStr(c.spentUsd, usd) : c.spentUsd,
    paper: {
      cashUsd: str(order.side === 'buy' ? dec(c.paper.cashUsd).minus(usd) : dec(c.paper.cashUsd).plus(usd)),
      realizedPnl: addStr(c.paper.realizedPnl, realized),
      positions,
    },
    pending: [...c.pending, ...rows],
    paperRows: c.paperRows + rows.length,
    updatedAtMs: atMs,
  };
}

/** The paper account's view of the wallet for the rules: its cash, its shares of the token. */
function paperEnv(c: CopytradeContext, env: CopyEnv, tokenId: string): CopyEnv {
  return { ...env, availableUsd: c.paper.cashUsd, availableShares: c.paper.positions[tokenId]?.shares ?? '0' };
}

const BPS = dec(10000);

/**
 * The deadlines after positions changed: `end` kept, one `hold:<tokenId>` per open position when
 * `max_hold_seconds` is set (its opening time + the hold), none for a position closed or whose
 * hold already fired.
 */
function holdDeadlines(c: CopytradeContext, positions: Record<string, CopyPosition>): Record<string, number> {
  const out: Record<string, number> = {};
  if (c.deadlines.end !== undefined) out.end = c.deadlines.end;
  const hold = c.settings.max_hold_seconds;
  if (hold === null) return out;
  for (const [t, p] of Object.entries(positions))
    if (p.openedAtMs !== undefined && !(p.done ?? []).includes('hold')) out[`hold:${t}`] = p.openedAtMs + hold * 1000;
  return out;
}

/**
 * The risk-control levels of a position (spec 2.6; each once per position): take-profit `tp<i>` at
 * average cost × (1 + trigger_bps / 10000), stop-loss `sl<i>` at average cost × (1 − trigger_bps /
 * 10000), both selling `portion_bps` of the remaining shares; `close` at `close_at_price_cents` / 100,
 * selling all. Prices are decimal probabilities compared with the best bid: a take-profit and
 * `close` fire at a bid at or above their price, a stop-loss at a bid at or below it.
 */
export function riskLevels(
  s: Pick<CopySettings, 'take_profit_levels' | 'stop_loss_levels' | 'close_at_price_cents'>,
  p: CopyPosition,
): { name: string; price: Dec; above: boolean; portionBps: number }[] {
  const shares = dec(p.shares);
  if (shares.lte(ZERO)) return [];
  const avg = dec(p.costUsd).div(shares);
  const done = new Set(p.done ?? []);
  const out: { name: string; price: Dec; above: boolean; portionBps: number }[] = [];
  s.take_profit_levels.forEach((l, i) =>
    out.push({
      name: `tp${i}`,
      price: avg.times(BPS.plus(l.trigger_bps)).div(BPS),
      above: true,
      portionBps: l.portion_bps,
    }),
  );
  s.stop_loss_levels.forEach((l, i) =>
    out.push({
      name: `sl${i}`,
      price: avg.times(BPS.minus(l.trigger_bps)).div(BPS),
      above: false,
      portionBps: l.portion_bps,
    }),
  );
  if (s.close_at_price_cents !== null)
    out.push({ name: 'close', price: dec(s.close_at_price_cents).div(100), above: true, portionBps: 10000 });
  return out.filter((l) => !done.has(l.name) && l.price.gt(ZERO));
}

/** Whether a copy of the subscription is working on `tokenId` (an exit waits for it to end). */
const busyOn = (c: CopytradeContext, tokenId: string) => c.working.some((w) => w.tokenId === tokenId);

/**
 * Context changes of a risk-control exit on `tokenId`: the levels named fire (marked done), a
 * MARKET sell of their portions of the remaining shares (all for `close` and `hold`) is decided
 * (`placing`) and recorded in the history (kind `copy`, no leader fill, `detail` the levels).
 */
function exitFor(c: CopytradeContext, tokenId: string, names: string[], portionBps: number[], atMs: number) {
  const p = c.positions[tokenId]!;
  let left = dec(p.shares);
  for (const bps of portionBps) left = left.minus(left.times(bps).div(BPS));
  const sell = dec(p.shares).minus(left).toDecimalPlaces(2, Dec.ROUND_DOWN);
  const positions = { ...c.positions, [tokenId]: { ...p, done: [...(p.done ?? []), ...names] } };
  const base = { positions, deadlines: holdDeadlines(c, positions), updatedAtMs: atMs };
  if (sell.lte(ZERO)) return base;
  const seq = c.exitSeq + 1;
  const orderId = `ord_${c.id}_x${seq}`;
  const order: CopyOrder = { side: 'sell', tokenId, kind: 'MARKET', usd: null, shares: str(sell), price: null };
  const entryId = `${c.id}:exit:${seq}`;
  const copy: WorkingCopy = {
    orderId,
    entryId,
    side: 'sell',
    tokenId,
    order,
    reported: false,
    filledSize: '0',
    matchedAmount: '0',
  };
  return {
    ...base,
    exitSeq: seq,
    working: [...c.working, copy],
    placing: copy,
    pending: [
      ...c.pending,
      row(c, atMs, {
        _id: entryId,
        kind: 'copy' as const,
        orderId,
        order,
        detail: `risk control: ${names.join(', ')}`,
      }),
    ],
  };
}

const freshPaper = (): PaperAccount => ({ cashUsd: PAPER_INITIAL_USD, realizedPnl: '0', positions: {} });

/** The `clearHistory` action of a step: the rows (written with the step) that no order report will drop. */
const FLUSH = {
  type: 'clearHistory',
  params: ({ context }: { context: CopytradeContext }) => ({ rows: rowsNoReportClears(context) }),
} as const;

/**
 * The copy at the venue that a new leader fill's `leader.fill` step (without `adopt`) records on a
 * subscription in state `state` with context `c`, worked out without the step: the rules' copy on
 * an `active` subscription trading real money; null when the step records none (a skip, a paper
 * copy, a subscription not `active`). The engine decides a fill's copies with it before the venue's
 * operation and takes the steps after it, each given its copy as `adopt`.
 */
export function venueCopyOf(state: unknown, c: CopytradeContext, f: LeaderFill, env: CopyEnv): CopyOrder | null {
  if (state !== 'active' || c.settings.is_simulation) return null;
  const d = decideCopy(c.settings, f, env);
  return 'copy' in d ? d.copy : null;
}

/** The `placeCopy` action of a step that decided a copy. */
const PLACE = {
  type: 'placeCopy',
  params: ({ context }: { context: CopytradeContext }) => ({ copy: context.placing }),
} as const;

/** A leader fill whose copy the venue holds already ({@link adoptsFill}): recorded as it, in any state but deleted. */
const ADOPT = {
  guard: 'adoptsFill',
  actions: ['handleFill', PLACE, 'placeDecided', FLUSH],
  description: 'the venue holds the copy already: recorded as it',
} as const;

/** Settings changed with a `copy_end_date` already past: the subscription ends in that step. */
const ENDED_BY_UPDATE = {
  guard: 'endedByUpdate',
  target: 'ended',
  actions: ['updateSettings', 'clearEnd', FLUSH],
  description: 'settings changed with a copy_end_date already past: ended now',
} as const;

export const copytradeMachine = setup({
  types: { context: {} as CopytradeContext, input: {} as CopytradeInput, events: {} as CopytradeEvent },
  actions: {
    /** Side effect: place the copy's child order (idempotent by order id); nothing when `copy` is null. */
    placeCopy: (_, _params: { copy: WorkingCopy | null }) => {},
    /** Side effect: send `history.written` for these rows (in the store with the step); nothing when empty. */
    clearHistory: (_, _params: { rows: CopyHistoryEntry[] }) => {},
    /** A new leader fill on an active subscription: the rules decide (`placing`: the copy to place). */
    handleFill: assign(({ context: c, event }) => {
      if (event.type !== 'leader.fill') return {};
      const { fill: f, atMs } = event;
      // an adopted copy is the venue's, real whatever the settings say now (made a simulation since)
      const paper = c.settings.is_simulation && !event.adopt;
      const env = paper ? paperEnv(c, event.env, f.tokenId) : event.env;
      const d = event.adopt ? { copy: event.adopt } : decideCopy(c.settings, f, env);
      if ('skip' in d) return skipped(c, f, atMs, d.skip, d.detail);
      if (paper)
        return midOf(event.env) === null
          ? skipped(c, f, atMs, 'no_liquidity', 'no midpoint to paper-fill at')
          : paperCopy(c, f, event.env, d.copy, atMs);
      const orderId = copyOrderId(c.id, f.key);
      const entryId = historyId(c.id, f.key);
      const copy: WorkingCopy = {
        orderId,
        entryId,
        side: d.copy.side,
        tokenId: d.copy.tokenId,
        order: d.copy,
        fill: f,
        reported: false,
        filledSize: '0',
        matchedAmount: '0',
      };
      return {
        ...handled(c, f),
        copies: c.copies + 1,
        working: [...c.working, copy],
        placing: copy,
        pending: [
          ...c.pending,
          row(c, atMs, { _id: entryId, kind: 'copy', fill: f, orderId, order: d.copy, isSimulation: false }),
        ],
        updatedAtMs: atMs,
      };
    }),
    placeDecided: assign({ placing: () => null }),
    /** A touch of a held token: the levels it reached fire (take-profit, stop-loss, close price). */
    checkLevels: assign(({ context: c, event }) => {
      if (event.type !== 'book.touch' || event.bid === null) return {};
      const p = c.positions[event.tokenId];
      if (!p || busyOn(c, event.tokenId)) return {};
      const bid = dec(event.bid);
      const hit = riskLevels(c.settings, p).filter((l) => (l.above ? bid.gte(l.price) : bid.lte(l.price)));
      if (hit.length === 0) return {};
      return exitFor(
        c,
        event.tokenId,
        hit.map((l) => l.name),
        hit.map((l) => l.portionBps),
        event.atMs,
      );
    }),
    /** `max_hold_seconds` of a position ran out: it is sold whole. */
    holdExpired: assign(({ context: c, event }) => {
      if (event.type !== 'timer.fired' || !event.name.startsWith('hold:')) return {};
      const tokenId = event.name.slice('hold:'.length);
      if (!c.positions[tokenId] || c.deadlines[event.name] !== event.atMs) return {};
      return exitFor(c, tokenId, ['hold'], [10000], event.atMs);
    }),
    /** A new leader fill on a subscription that copies nothing now: skipped with the state's reason. */
    skipFill: assign(({ context: c, event }, params: { reason: SkipReason }) =>
      event.type === 'leader.fill'
        ? skipped(c, event.fill, event.atMs, params.reason, `subscription is ${params.reason}`)
        : {},
    ),
    /** A copy order's report: its fills move the position, a sell's realize PnL. */
    applyReport: assign(({ context: c, event }) => {
      if (event.type !== 'order.updated') return {};
      const w = c.working.find((x) => x.orderId === event.orderId);
      if (!w) return {};
      const dShares = dec(event.filledSize).minus(dec(w.filledSize));
      const dUsd = dec(event.matchedAmount).minus(dec(w.matchedAmount));
      const rest = c.working.filter((x) => x !== w);
      const working = event.final
        ? rest
        : [...rest, { ...w, reported: true, filledSize: event.filledSize, matchedAmount: event.matchedAmount }];
      const kept = w.reported ? c.pending : dropThrough(c.pending, w.entryId);
      if (dShares.lte(ZERO)) return { working, pending: kept };
      const atMs = event.atMs ?? c.updatedAtMs;
      const { positions, realized } = applyFill(c.positions, w.tokenId, w.side, dShares, dUsd, atMs);
      return {
        working,
        positions,
        deadlines: holdDeadlines(c, positions),
        spentUsd: w.side === 'buy' ? addStr(c.spentUsd, dUsd) : c.spentUsd,
        realizedPnl: addStr(c.realizedPnl, realized),
        pending:
          w.side === 'sell'
            ? [
                ...kept,
                row(c, atMs, {
                  _id: `${c.id}:pnl:${w.orderId}:${event.filledSize}`,
                  kind: 'realized',
                  pnlUsd: str(realized),
                  orderId: w.orderId,
                }),
              ]
            : kept,
        updatedAtMs: atMs,
      };
    }),
    /** A copy order refused (risk, the venue) or never placed: the copy becomes a skip `order_refused`. */
    refuseCopy: assign(({ context: c, event }) => {
      if (event.type !== 'order.refused' && event.type !== 'order.placeFailed') return {};
      const w = c.working.find((x) => x.orderId === event.orderId);
      if (!w || w.reported) return { working: c.working.filter((x) => x !== w) };
      const atMs = event.type === 'order.placeFailed' ? event.atMs : c.updatedAtMs;
      // a risk-control exit was not counted as a copy of a leader fill
      const exit = w.entryId.includes(':exit:');
      return {
        working: c.working.filter((x) => x !== w),
        copies: exit ? c.copies : c.copies - 1,
        skipped: { ...c.skipped, order_refused: (c.skipped.order_refused ?? 0) + 1 },
        pending: [
          ...dropThrough(c.pending, w.entryId),
          row(c, atMs, {
            _id: w.entryId,
            kind: 'skip',
            fill: w.fill ?? null,
            reason: 'order_refused',
            detail: `${event.error}: ${event.reason}`,
            orderId: w.orderId,
            order: w.order,
          }),
        ],
      };
    }),
    dropWritten: assign(({ context: c, event }) => {
      if (event.type !== 'history.written') return {};
      const ids = new Set(event.ids);
      return { pending: c.pending.filter((r) => !ids.has(r._id)) };
    }),
    updateSettings: assign(({ context, event }) =>
      event.type === 'copytrade.update'
        ? {
            settings: event.settings,
            deadlines: {
              ...holdDeadlines({ ...context, settings: event.settings, deadlines: {} }, context.positions),
              ...endDeadline(event.settings),
            },
            updatedAtMs: event.atMs,
          }
        : {},
    ),
    resetPaper: assign(({ event }) => ({
      paper: freshPaper(),
      paperRows: 0,
      ...(event.type === 'simulation.reset' ? { updatedAtMs: event.atMs } : {}),
    })),
    touched: assign(({ event }) =>
      'atMs' in event && typeof event.atMs === 'number' ? { updatedAtMs: event.atMs } : {},
    ),
    clearDeadlines: assign({ deadlines: () => ({}) }),
    /** The end date passed: its deadline goes, the positions' hold deadlines stay. */
    clearEnd: assign({
      deadlines: ({ context }) => Object.fromEntries(Object.entries(context.deadlines).filter(([k]) => k !== 'end')),
    }),
  },
  guards: {
    newFill: ({ context, event }) => event.type === 'leader.fill' && isNewFill(context, event.fill, event.handled),
    /** A new leader fill whose copy the venue holds already (`adopt`): recorded as that copy whatever the state. */
    adoptsFill: ({ context, event }) =>
      event.type === 'leader.fill' && event.adopt !== undefined && adoptsFill(context, event.fill, event.handled),
    /** The event's order is one of the working copies. */
    working: ({ context, event }) =>
      'orderId' in event && context.working.some((w) => w.orderId === (event as { orderId: string }).orderId),
    /**
     * A report that tells something new of a working copy: a fill, or its end. The order's
     * acceptance alone (nothing filled yet) and a report repeated are no step: a copy then costs
     * one step of its subscription for its decision and one for its (immediate) outcome.
     */
    reportNews: ({ context, event }) => {
      if (event.type !== 'order.updated') return false;
      const w = context.working.find((x) => x.orderId === event.orderId);
      return (
        w !== undefined && (event.final || event.filledSize !== w.filledSize || event.matchedAmount !== w.matchedAmount)
      );
    },
    /** A PATCH whose `copy_end_date` is already past at its time: the subscription ends with it. */
    endedByUpdate: ({ event }) =>
      event.type === 'copytrade.update' &&
      !inCopyWindow({ copy_start_date: null, copy_end_date: event.settings.copy_end_date }, event.atMs),
    endDue: ({ context, event }) =>
      event.type === 'timer.fired' && event.name === 'end' && context.deadlines.end === event.atMs,
    holdDue: ({ context, event }) =>
      event.type === 'timer.fired' && event.name.startsWith('hold:') && context.deadlines[event.name] === event.atMs,
    toActive: ({ event }) => event.type === 'copytrade.status' && event.status === 'ACTIVE',
    toPaused: ({ event }) => event.type === 'copytrade.status' && event.status === 'PAUSED',
    toDisabled: ({ event }) => event.type === 'copytrade.status' && event.status === 'DISABLED',
    /** Created with a `copy_end_date` already past. */
    endedAtCreation: ({ context }) =>
      !inCopyWindow({ copy_start_date: null, copy_end_date: context.settings.copy_end_date }, context.createdAtMs),
    createdPaused: ({ context }) => context.initialStatus === 'PAUSED',
  },
}).createMachine({
  id: 'copytrade',
  context: ({ input }) => {
    const i = given(input);
    return {
      ...i,
      watermark: null,
      recent: [],
      recentCapped: null,
      working: [],
      placing: null,
      pending: [],
      copies: 0,
      skipped: {},
      spentUsd: '0',
      realizedPnl: '0',
      positions: {},
      paper: freshPaper(),
      paperRows: 0,
      deadlines: endDeadline(i.settings),
      exitSeq: 0,
      updatedAtMs: i.createdAtMs,
    };
  },
  initial: 'starting',
  on: {
    'copytrade.update': { actions: ['updateSettings', FLUSH], description: 'settings changed (PATCH)' },
    'copytrade.delete': { target: '.deleted', actions: ['clearDeadlines', 'touched'], description: 'soft delete' },
    'order.updated': {
      guard: 'reportNews',
      actions: ['applyReport', FLUSH],
      description: 'a copy order filled or ended',
    },
    'order.refused': {
      guard: 'working',
      actions: ['refuseCopy', FLUSH],
      description: 'a copy refused: recorded as a skip',
    },
    'order.placeFailed': {
      guard: 'working',
      actions: ['refuseCopy', FLUSH],
      description: 'a copy not placed: recorded as a skip',
    },
    'history.written': { actions: 'dropWritten', description: 'history rows are in the store' },
    'simulation.reset': { actions: 'resetPaper', description: 'paper account back to its start' },
    'book.touch': {
      actions: ['checkLevels', PLACE, 'placeDecided', FLUSH],
      description: "a position's take-profit, stop-loss or close price reached: sell (in every state but deleted)",
    },
    'timer.fired': {
      guard: 'holdDue',
      actions: ['holdExpired', PLACE, 'placeDecided', FLUSH],
      description: "a position's max_hold_seconds ran out: sell it whole",
    },
  },
  states: {
    starting: {
      always: [
        { guard: 'endedAtCreation', target: 'ended', actions: 'clearEnd' },
        { guard: 'createdPaused', target: 'paused' },
        { target: 'active' },
      ],
    },
    active: {
      on: {
        'leader.fill': [
          ADOPT,
          {
            guard: 'newFill',
            actions: ['handleFill', PLACE, 'placeDecided', FLUSH],
            description: 'copy or skip by the rules',
          },
        ],
        'copytrade.status': [
          { guard: 'toPaused', target: 'paused', actions: 'touched' },
          { guard: 'toDisabled', target: 'disabled', actions: 'touched' },
        ],
        'timer.fired': { guard: 'endDue', target: 'ended', actions: 'clearEnd' },
        'copytrade.update': ENDED_BY_UPDATE,
      },
    },
    paused: {
      on: {
        'leader.fill': [
          ADOPT,
          {
            guard: 'newFill',
            actions: [{ type: 'skipFill', params: { reason: 'paused' } }, FLUSH],
            description: 'no new copies while paused',
          },
        ],
        'copytrade.status': [
          { guard: 'toActive', target: 'active', actions: 'touched' },
          { guard: 'toDisabled', target: 'disabled', actions: 'touched' },
        ],
        'timer.fired': { guard: 'endDue', target: 'ended', actions: 'clearEnd' },
        'copytrade.update': ENDED_BY_UPDATE,
      },
    },
    disabled: {
      on: {
        'leader.fill': [
          ADOPT,
          {
            guard: 'newFill',
            actions: [{ type: 'skipFill', params: { reason: 'disabled' } }, FLUSH],
          },
        ],
        'copytrade.status': [
          { guard: 'toActive', target: 'active', actions: 'touched' },
          { guard: 'toPaused', target: 'paused', actions: 'touched' },
        ],
        'timer.fired': { guard: 'endDue', target: 'ended', actions: 'clearEnd' },
        'copytrade.update': ENDED_BY_UPDATE,
      },
    },
    ended: {
      on: {
        'leader.fill': [
          ADOPT,
          {
            guard: 'newFill',
            actions: [{ type: 'skipFill', params: { reason: 'ended' } }, FLUSH],
          },
        ],
      },
    },
    deleted: { type: 'final' },
  },
});

/** REST status of each state. */
export const COPYTRADE_STATUS = {
  starting: 'ACTIVE',
  active: 'ACTIVE',
  paused: 'PAUSED',
  disabled: 'DISABLED',
  ended: 'ENDED',
  deleted: 'DELETED',
} as const satisfies Record<string, string>;

/** Version of the stored form of subscription snapshots ({@link COPYTRADE_SNAPSHOT_FORM}). */
export const COPYTRADE_FORM_VERSION = 1;

/**
 * The settings' keys in the order a subscription's settings hold them (engine/copytrade/requests.ts
 * builds them so), each with the value the stored form leaves it out at (`undefined`: always
 * stored). Frozen with the form's version: a change needs a new version.
 */
const SETTINGS_DEFAULTS: ReadonlyArray<readonly [key: string, value: unknown]> = Object.freeze([
  ['leader_username', null],
  ['buy_enabled', true],
  ['sell_enabled', true],
  ['buy_min_for_percent', false],
  ['buy_min_trade_size', null],
  ['buy_max_trade_size', null],
  ['buy_time_in_force', 'GTC'],
  ['sell_size_value', null],
  ['market_ids_include', []],
  ['market_ids_exclude', []],
  ['tags_include', []],
  ['tags_exclude', []],
  ['is_simulation', false],
  ['copy_start_date', null],
  ['copy_end_date', null],
  ['take_profit_levels', []],
  ['stop_loss_levels', []],
  ['close_at_price_cents', null],
  ['max_hold_seconds', null],
  ['leader_address', undefined],
  ['buy_order_type', 'ALL'],
  ['buy_size_mode', undefined],
  ['buy_size_value', undefined],
  ['buy_insufficient_usdc_action', 'BUY_MAX'],
  ['sell_order_type', 'ALL'],
  ['sell_size_mode', undefined],
  ['sell_insufficient_shares_action', 'SELL_MAX'],
] as const);

/** Whether `v` is an empty array (the only array default of the settings). */
const isEmptyArray = (v: unknown) => Array.isArray(v) && v.length === 0;

/**
 * `settings` in the settings slot: an object of the keys whose value is not their default, when the
 * settings hold exactly the keys of {@link SETTINGS_DEFAULTS} in that order; else `[settings]` as they are.
 */
const SETTINGS_CODEC: FieldCodec = Object.freeze({
  key: 'settings',
  encode(v: unknown): unknown {
    const s = v as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    let i = 0;
    for (const k in s) {
      const d = SETTINGS_DEFAULTS[i++];
      if (d === undefined || d[0] !== k) return [s];
      const x = s[k];
      if (x === undefined) return [s];
      if (x === d[1] || (isEmptyArray(d[1]) && isEmptyArray(x))) continue;
      out[k] = x;
    }
    return i === SETTINGS_DEFAULTS.length ? out : [s];
  },
  decode(stored: unknown): unknown {
    if (Array.isArray(stored)) return stored[0];
    const o = stored as Record<string, unknown>;
    const s: Record<string, unknown> = {};
    for (const [k, d] of SETTINGS_DEFAULTS) s[k] = k in o ? o[k] : isEmptyArray(d) ? [] : d;
    return s;
  },
});

/** The keys of a history row, in the order {@link row} makes them. */
const ROW_KEYS = [
  'copytradeId',
  'userId',
  'atMs',
  'isSimulation',
  'fill',
  'reason',
  'detail',
  'orderId',
  'order',
  'pnlUsd',
  '_id',
  'kind',
] as const;

/** Whether `o` holds exactly `keys`, in that order, none `undefined`. */
function keysAre(o: unknown, keys: readonly string[]): o is Record<string, unknown> {
  if (o === null || typeof o !== 'object' || Array.isArray(o)) return false;
  let i = 0;
  for (const k in o) if (keys[i++] !== k || (o as Record<string, unknown>)[k] === undefined) return false;
  return i === keys.length;
}

/** The keys of a leader fill, in the order `leaderFillOf` (engine/copytrade/service.ts) makes them. */
const FILL_KEYS = [
  'key',
  'transactionHash',
  'logIndex',
  'blockTimestamp',
  'atMs',
  'conditionId',
  'tokenId',
  'outcome',
  'side',
  'role',
  'price',
  'size',
  'notionalUsd',
] as const;

/**
 * A history row's fill in the `pending` slot: its values after `key` (an array) when it holds
 * exactly {@link FILL_KEYS} in that order and `key` is `<transactionHash>:<logIndex>`; else as it is.
 */
function packFill(f: unknown): unknown {
  if (!keysAre(f, FILL_KEYS)) return f;
  const x = f as unknown as LeaderFill;
  if (x.key !== `${x.transactionHash}:${x.logIndex}`) return f;
  return [
    x.transactionHash,
    x.logIndex,
    x.blockTimestamp,
    x.atMs,
    x.conditionId,
    x.tokenId,
    x.outcome,
    x.side,
    x.role,
    x.price,
    x.size,
    x.notionalUsd,
  ];
}

/** A fill of the `pending` slot read back ({@link packFill}). */
function unpackFill(v: unknown): LeaderFill | null {
  if (!Array.isArray(v)) return v as LeaderFill | null;
  const x = v as unknown[];
  return {
    key: `${x[0] as string}:${x[1] as number}`,
    transactionHash: x[0] as string,
    logIndex: x[1] as number,
    blockTimestamp: x[2] as number,
    atMs: x[3] as number,
    conditionId: x[4] as string,
    tokenId: x[5] as string,
    outcome: x[6] as string,
    side: x[7] as LeaderFill['side'],
    role: x[8] as LeaderFill['role'],
    price: x[9] as string,
    size: x[10] as string,
    notionalUsd: x[11] as string,
  };
}

/**
 * The `pending` slot: each row as `[_id, kind, atMs, fill, reason, detail, orderId, order, pnlUsd]`
 * when it is of this subscription as {@link row} makes it (its subscription, user and simulation flag
 * the context's), its fill as {@link packFill} gives it, `_id` and `orderId` as 0 when they are the
 * ones the fill gives ({@link historyId}, {@link copyOrderId}); any other row as it is (an object).
 */
const PENDING_CODEC: FieldCodec = Object.freeze({
  key: 'pending',
  encode(v: unknown, ids: RecordIds, c?: Readonly<Record<string, unknown>>): unknown {
    const simulation = (c?.settings as CopySettings | undefined)?.is_simulation;
    return (v as unknown[]).map((r) => {
      if (!keysAre(r, ROW_KEYS) || r.copytradeId !== ids._id || r.userId !== ids.ownerUserId) return r;
      if (r.isSimulation !== simulation) return r;
      const key = (r.fill as LeaderFill | null)?.key;
      const id = key !== undefined && r._id === historyId(ids._id, key) ? 0 : r._id;
      const orderId = key !== undefined && r.orderId === copyOrderId(ids._id, key) ? 0 : r.orderId;
      return [id, r.kind, r.atMs, packFill(r.fill), r.reason, r.detail, orderId, r.order, r.pnlUsd];
    });
  },
  decode(stored: unknown, ids: RecordIds, c?: Readonly<Record<string, unknown>>): unknown {
    const simulation = (c?.settings as CopySettings | undefined)?.is_simulation;
    return (stored as unknown[]).map((x) => {
      if (!Array.isArray(x)) return x;
      const [id, kind, atMs, packed, reason, detail, orderId, order, pnlUsd] = x as [
        string | 0,
        string,
        number,
        unknown,
        unknown,
        unknown,
        string | null | 0,
        unknown,
        unknown,
      ];
      const fill = unpackFill(packed);
      return {
        copytradeId: ids._id,
        userId: ids.ownerUserId,
        atMs,
        isSimulation: simulation,
        fill,
        reason,
        detail,
        orderId: orderId === 0 ? copyOrderId(ids._id, fill!.key) : orderId,
        order,
        pnlUsd,
        _id: id === 0 ? historyId(ids._id, fill!.key) : id,
        kind,
      };
    });
  },
});

/** The keys of a working copy of a leader fill, in the order `handleFill` makes them. */
const COPY_KEYS = [
  'orderId',
  'entryId',
  'side',
  'tokenId',
  'order',
  'fill',
  'reported',
  'filledSize',
  'matchedAmount',
] as const;

/**
 * The `working` slot (after `pending`): a copy of a leader fill whose history row is still in
 * `pending` (its decision's step and the next ones until its order reports) as `[i, reported,
 * filledSize, matchedAmount]`, `i` the row's index there, its ids, side, token, order and fill the
 * row's; any other copy as it is (an object).
 */
const WORKING_CODEC: FieldCodec = Object.freeze({
  key: 'working',
  encode(v: unknown, ids: RecordIds, c?: Readonly<Record<string, unknown>>): unknown {
    const pending = (c?.pending ?? []) as CopyHistoryEntry[];
    return (v as WorkingCopy[]).map((w) => {
      if (!keysAre(w, COPY_KEYS) || w.fill === undefined) return w;
      const i = pending.findIndex((r) => r._id === w.entryId);
      const r = pending[i];
      if (r === undefined || r.kind !== 'copy' || r.orderId !== w.orderId || r.fill === null) return w;
      if (w.entryId !== historyId(ids._id, w.fill.key)) return w;
      if (w.side !== w.order.side || w.tokenId !== w.order.tokenId) return w;
      if (!jsonEqual(r.fill, w.fill) || !jsonEqual(r.order, w.order)) return w;
      return [i, w.reported, w.filledSize, w.matchedAmount];
    });
  },
  decode(stored: unknown, _ids: RecordIds, c?: Readonly<Record<string, unknown>>): unknown {
    const pending = (c?.pending ?? []) as CopyHistoryEntry[];
    return (stored as unknown[]).map((x) => {
      if (!Array.isArray(x)) return x;
      const [i, reported, filledSize, matchedAmount] = x as [number, boolean, string, string];
      const r = pending[i]!;
      const order = r.order!;
      return {
        orderId: r.orderId!,
        entryId: r._id,
        side: order.side,
        tokenId: order.tokenId,
        order,
        fill: r.fill!,
        reported,
        filledSize,
        matchedAmount,
      } satisfies WorkingCopy;
    });
  },
});

/**
 * The `recent` slot: `[block, key, key, …, block, key, …]`, each block (a number) the block of the
 * keys after it, each key without its `0x` (about 60 % of the entries' characters), when every key
 * starts with `0x` and every block is an integer; else `{recent}` as it is.
 */
const RECENT_CODEC: FieldCodec = Object.freeze({
  key: 'recent',
  encode(v: unknown): unknown {
    const recent = v as [string, number][];
    const out: (string | number)[] = [];
    let block: number | null = null;
    for (const [key, b] of recent) {
      if (!key.startsWith('0x') || !Number.isInteger(b)) return { recent };
      if (b !== block) out.push((block = b));
      out.push(key.slice(2));
    }
    return out;
  },
  decode(stored: unknown): unknown {
    if (!Array.isArray(stored)) return (stored as { recent: unknown }).recent;
    const recent: [string, number][] = [];
    let block = 0;
    for (const x of stored as (string | number)[]) {
      if (typeof x === 'number') block = x;
      else recent.push(['0x' + x, block]);
    }
    return recent;
  },
});

/** Whether JSON values `a` and `b` are equal (the same object, most often: a copy and its row share them). */
function jsonEqual(a: unknown, b: unknown): boolean {
  return a === b || JSON.stringify(a) === JSON.stringify(b);
}

/** Context fields at the value the stored form leaves them out at (frozen with the form's version). */
function copytradeContextDefaults(): Record<string, unknown> {
  return {
    initialStatus: 'ACTIVE',
    recentCapped: null,
    placing: null,
    copies: 0,
    skipped: {},
    spentUsd: '0',
    realizedPnl: '0',
    positions: {},
    paperRows: 0,
    deadlines: {},
    exitSeq: 0,
  };
}

/**
 * The compact stored form of subscription snapshots (engine/actor-host.ts {@link SnapshotForm},
 * positional): the settings without their defaults ({@link SETTINGS_CODEC}), the dedup window's
 * fills grouped by block ({@link RECENT_CODEC}), the history rows without what the context says
 * ({@link PENDING_CODEC}), a copy just decided as a reference to its
 * row ({@link WORKING_CODEC}), the ids the record holds (`id`, `userId`, `createdAtMs`) and an
 * untouched paper account left out. A subscription that has just decided a copy is stored in about
 * half the characters of XState's form. Snapshots stored in XState's form (every subscription
 * before this form) are read as they are.
 */
export const COPYTRADE_SNAPSHOT_FORM: SnapshotForm = Object.freeze({
  version: COPYTRADE_FORM_VERSION,
  defaults: Object.freeze(copytradeContextDefaults()),
  derived: Object.freeze([
    ['id', (_c: Record<string, unknown>, ids: RecordIds) => ids._id],
    ['userId', (_c: Record<string, unknown>, ids: RecordIds) => ids.ownerUserId],
    ['createdAtMs', (_c: Record<string, unknown>, ids: RecordIds) => ids.createdAtMs],
    ['paper', () => freshPaper()],
  ] as const),
  fresh: copytradeContextDefaults,
  fields: Object.freeze([
    SETTINGS_CODEC,
    'userWallet',
    'watermark',
    RECENT_CODEC,
    PENDING_CODEC,
    WORKING_CODEC,
    'updatedAtMs',
  ]),
});
