import { randomUUID } from 'node:crypto';
import type { SnapshotFrom } from 'xstate';
import {
  COMBO_MACHINE_VERSION,
  COMBO_STATUS,
  comboBuyOpId,
  comboMachine,
  comboRedeemOpId,
  type ComboContext,
  type ComboInput,
  type ComboState,
} from '../../machines/combo.js';
import type { ActorHost, KindStepWrites } from '../actor-host.js';
import type { HistoryRecorder } from '../data/recorder.js';
import type { Clock } from '../clock.js';
import { dec, Dec, str, USD_DP } from '../decimal.js';
import { DomainError, errors } from '../errors.js';
import { InFlight } from '../in-flight.js';
import type { Logger } from '../logger.js';
import type { OrderService } from '../orders.js';
import { checkComboLegs, checkWalletOp, insufficientBalanceMessage, walletOpError } from '../risk.js';
import type { ActorRecord, ActorRepository } from '../store/actors.js';
import type { VenuePort, WalletOp } from '../venue/port.js';
import { walletOpHash } from '../venue/sim-venue.js';
import { eventKeyOf, largestAffordableNotional, priceCombo, QUOTE_TTL_MS } from './pricing.js';

/** Machine id and kind of the combo actors. */
export const COMBO_MACHINE_ID = 'combo';
export const COMBO_KIND = 'combo';

/** Statuses of an executed combo (a position): what GET /combo/positions lists. */
export const POSITION_STATUSES = ['EXECUTED', 'OPEN', 'PARTIAL', 'RESOLVED_WIN', 'RESOLVED_LOSS', 'REDEEMED'];

type ComboSnapshot = SnapshotFrom<typeof comboMachine>;
type Meta = { id: string; status: string; createdAtMs: number; updatedAtMs: number; revision: number };

/** Body of POST /v2/trade/combo/quote (schemas/combos.ts `ComboQuoteRequest`). */
export interface ComboQuoteBody {
  leg_position_ids: string[];
  notional_usd: number;
  side?: 'BUY';
}

/** Body of POST /v2/trade/combo/redeem: exactly one of the two ids. */
export interface ComboRedeemBody {
  combo_order_id?: string;
  combo_position_id?: string;
}

/** The position id of a combo (`cp_…` for `co_…`): what GET /combo/positions shows and redeem takes. */
export const positionIdOf = (comboId: string) => `cp_${comboId.replace(/^co_/, '')}`;
/** The combo id (`co_…`) of a position id (`cp_…`). */
export const comboIdOf = (positionId: string) => `co_${positionId.replace(/^cp_/, '')}`;

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/**
 * REST view of a combo (GET /combo/{combo_order_id}, the positions list, pushes): the quote, its
 * legs with how each resolved, the position's status once executed, amounts as decimal strings
 * (dollars, shares, cents), times in ISO 8601. `status` is the combo's (`QUOTED`, `EXECUTED`,
 * `OPEN`, `PARTIAL`, `RESOLVED_WIN`, `RESOLVED_LOSS`, `REDEEMED`, `EXPIRED`, `FAILED`).
 */
export function comboView(s: ComboSnapshot, meta: Meta, venue?: Pick<VenuePort, 'token'>): Record<string, unknown> {
  const c = s.context as ComboContext;
  const resolved = c.legs.filter((l) => l.outcome !== null).length;
  const view: Record<string, unknown> = {
    type: 'COMBO',
    combo_order_id: meta.id,
    combo_position_id: positionIdOf(meta.id),
    quote_id: c.quoteId,
    rfq_id: c.rfqId,
    status: meta.status,
    side: 'BUY',
    price_cents: c.priceCents,
    independent_price_cents: c.independentPriceCents,
    entry_price: str(dec(c.priceCents).div(100)),
    notional_usd: c.notionalUsd,
    fee_usd: c.feeUsd,
    cost_usd: c.debitUsd,
    taker_shares: c.shares,
    maker_amount_usd: c.makerAmountUsd,
    legs: c.legs.map((l) => ({
      position_id: l.tokenId,
      condition_id: l.conditionId,
      question: venue?.token(l.tokenId)?.question ?? null,
      outcome: l.outcome,
      resolved: l.outcome !== null,
      status: l.outcome === null ? 'PENDING' : l.outcome === 'WIN' ? 'WON' : 'LOST',
      resolved_at: iso(l.resolvedAtMs),
    })),
    legs_total: c.legs.length,
    legs_resolved: resolved,
    legs_pending: c.legs.length - resolved,
    redeemable: s.value === 'resolved_win',
    payout_usd: c.redeem ? c.redeem.pusdDelta : null,
    transaction_hash: c.buy ? c.buyTransactionHash : null,
    redeem_transaction_hash: c.redeem ? c.redeemTransactionHash : null,
    expires_at: iso(c.expiresAtMs),
    accepted_at: iso(c.acceptedAtMs),
    created_at: iso(meta.createdAtMs),
    updated_at: iso(meta.updatedAtMs),
  };
  if (c.error) Object.assign(view, { failure_code: c.error, message: c.reason });
  return view;
}

/**
 * The writes of a combo step that recorded its buy, its redeem or its loss: its cash movements in the
 * trade history (`combo_debit`, `combo_payout`, `combo_loss`), in the step's transaction (the combo
 * and its cash records commit together; an accept whose leg had lost already records both its buy
 * and its loss); null for any other step. The loss is what the aggregates realize a lost combo's
 * cost by (engine/data/portfolio.ts): it moves no pUSD.
 */
function cashWrites(
  recorder: HistoryRecorder | undefined,
  next: ComboSnapshot,
  previous: ComboSnapshot,
): KindStepWrites | null {
  const n = next.context as ComboContext;
  const p = previous.context as ComboContext;
  if (!recorder) return null;
  const debit = n.buy && !p.buy ? n.buy : undefined;
  const payout = n.redeem && !p.redeem ? n.redeem : undefined;
  const lost =
    next.value === 'resolved_loss' && previous.value !== 'resolved_loss'
      ? { comboId: n.comboId, atMs: lostAtMs(n) }
      : undefined;
  return debit || payout || lost ? recorder.comboWrites(n.userId, { debit, payout, lost }) : null;
}

/** When a lost combo lost: its latest losing leg's resolution, else its buy (a leg had lost before it). */
function lostAtMs(c: ComboContext): number {
  const at = c.legs.filter((l) => l.outcome === 'LOSS').map((l) => l.resolvedAtMs ?? 0);
  return Math.max(c.buy?.atMs ?? c.createdAtMs, ...at);
}

/**
 * Combos (spec 1, 2.5, 3, 4.2): multi-leg parlays bought by request for quote. Each combo is an
 * actor (`machines/combo.ts`) created by its quote; the accept moves the money at the venue in one
 * operation (notional + fee out of the wallet, the combo's shares into it: one journal entry; the
 * trade history's cash record is written in the step that records it),
 * a leg's market resolving moves every combo holding it, a won combo is redeemed for $1 a share.
 * Checks that would refuse run in the user's placement queue (shared with orders and wallet
 * operations) before the actor moves, so a refusal changes nothing.
 */
export class ComboService {
  private readonly inFlight: InFlight;
  /** Live combos by the condition of each of their legs: who a market's resolution moves. */
  private readonly byCondition = new Map<string, Set<string>>();

  constructor(
    private readonly host: ActorHost,
    private readonly actors: ActorRepository,
    private readonly venue: VenuePort,
    private readonly orders: OrderService,
    private readonly clock: Clock,
    private readonly log: Logger,
    recorder?: HistoryRecorder,
  ) {
    this.inFlight = new InFlight(host, log, 'combo operation failed at the venue; retried at the next start');
    const apply = (actorId: string, op: WalletOp) =>
      this.inFlight.walletOp(venue, actorId, op, (result) => ({ type: 'venue.applied', result }));
    host.register({
      machineId: COMBO_MACHINE_ID,
      version: COMBO_MACHINE_VERSION,
      kind: COMBO_KIND,
      logic: comboMachine.provide({
        actions: {
          buyAtVenue: ({ context }, { op }) => apply(context.comboId, op),
          redeemAtVenue: ({ context }, { op }) => apply(context.comboId, op),
        },
      }),
      statusOf: (s) => COMBO_STATUS[s.value as ComboState],
      viewOf: (s, meta) => comboView(s, meta, venue),
      stepWritesOf: (next, previous) => cashWrites(recorder, next, previous),
    });
    host.on('changed', (c) => {
      const r = c.record;
      if (r.kind !== COMBO_KIND || !r.final || !r.ownerUserId) return;
      this.unindex(r._id);
      venue.releaseWalletOp(r.ownerUserId, comboBuyOpId(r._id));
      venue.releaseWalletOp(r.ownerUserId, comboRedeemOpId(r._id));
    });
    venue.onMarket((conditionId) => this.marketChanged(conditionId));
  }

  /** Resolves when combo `id` has nothing queued or in flight. */
  whenQuiet(id: string): Promise<void> {
    return this.inFlight.whenQuiet(id);
  }

  private async recordOf(id: string): Promise<ActorRecord | null> {
    return this.host.recordOf(id) ?? (await this.actors.get(id));
  }

  private index(id: string, legs: readonly { conditionId: string }[]): void {
    for (const l of legs) {
      let set = this.byCondition.get(l.conditionId);
      if (!set) this.byCondition.set(l.conditionId, (set = new Set()));
      set.add(id);
    }
  }

  private unindex(id: string): void {
    for (const [c, set] of this.byCondition) if (set.delete(id) && set.size === 0) this.byCondition.delete(c);
  }

  /**
   * A market changed at the venue: once it resolved, every live combo with a leg in it gets
   * `leg.resolved` (won when the leg's token is the winner).
   */
  private marketChanged(conditionId: string): void {
    const s = this.venue.marketStatus(conditionId);
    const ids = this.byCondition.get(conditionId);
    if (!s?.resolved || !ids) return;
    for (const id of ids) this.deliverLeg(id, conditionId, s.winningTokenId, s.resolvedAtMs ?? this.clock.now());
  }

  private deliverLeg(id: string, conditionId: string, winner: string | null, atMs: number): void {
    const snap = this.host.snapshotOf(id);
    const leg = (snap?.context as ComboContext | undefined)?.legs.find((l) => l.conditionId === conditionId);
    if (!leg || leg.outcome !== null) return;
    this.inFlight.track(
      id,
      this.host.send(id, { type: 'leg.resolved', tokenId: leg.tokenId, won: winner === leg.tokenId, atMs }),
    );
  }

  /**
   * A quote (spec 2.5, 4.2): the legs checked, each priced from its live best ask by the simulated
   * maker (`engine/combos/pricing.ts`), the wallet checked for notional + fee; the combo actor is
   * created `QUOTED` with its expiry (now + 8.5 s). Priced afresh on every call.
   * @param seed id seed from the Idempotency-Key (`co_<seed>`): a retry after a crash answers the
   *   quote made then.
   * @throws {DomainError} `INVALID_REQUEST` (legs, notional), `NOT_FOUND` (a leg), `MARKET_CLOSED`,
   *   `NO_LIQUIDITY` (a leg without an ask), `INSUFFICIENT_BALANCE` (message: the dollars needed and
   *   the largest affordable notional).
   */
  async quote(partnerId: string, userId: string, body: ComboQuoteBody, seed: string | null): Promise<ActorRecord> {
    const comboId = `co_${seed ?? randomUUID()}`;
    const earlier = await this.recordOf(comboId);
    if (earlier && earlier.ownerUserId === userId) return earlier;
    const notional = dec(String(body.notional_usd));
    if (notional.decimalPlaces() > USD_DP)
      throw errors.badRequest(`notional_usd ${body.notional_usd} has more than ${USD_DP} decimals`);
    const legs = checkComboLegs(this.venue, body.leg_position_ids);
    const priced = legs.map((l, i) => {
      const ask = this.venue.touch(l.tokenId).ask;
      if (!ask)
        throw new DomainError(
          'NO_LIQUIDITY',
          `no maker quoted: leg_position_ids[${i}] ${l.tokenId} has no ask to price from`,
        );
      return { tokenId: l.tokenId, ask, eventKey: eventKeyOf(l.market) };
    });
    const p = priceCombo(priced, notional);
    if (p.shares.lte(0)) throw errors.badRequest(`notional_usd ${body.notional_usd} buys no combo share`);
    const need = notional.plus(p.feeUsd);
    const now = this.clock.now();
    const input: ComboInput = {
      comboId,
      quoteId: `qt_${randomUUID().replace(/-/g, '')}`,
      rfqId: `rfq_${randomUUID().replace(/-/g, '')}`,
      userId,
      legs: legs.map((l) => ({
        tokenId: l.tokenId,
        conditionId: l.market.conditionId,
        outcome: null,
        resolvedAtMs: null,
      })),
      notionalUsd: str(notional),
      feeUsd: str(p.feeUsd),
      debitUsd: str(need),
      priceCents: str(p.priceCents),
      independentPriceCents: str(p.independentPriceCents),
      shares: str(p.shares),
      makerAmountUsd: str(p.makerAmountUsd),
      buyTransactionHash: walletOpHash({ kind: 'combo_buy', opId: comboBuyOpId(comboId), userId }),
      redeemTransactionHash: walletOpHash({ kind: 'combo_redeem', opId: comboRedeemOpId(comboId), userId }),
      createdAtMs: now,
      expiresAtMs: now + QUOTE_TTL_MS,
    };
    return this.orders.exclusive(userId, async () => {
      const free = dec(this.venue.available(userId, legs[0]!.tokenId).usd);
      if (free.lt(need))
        throw new DomainError(
          'INSUFFICIENT_BALANCE',
          `${insufficientBalanceMessage('this combo', need, free)} (notional $${str(notional)} + fee ` +
            `$${str(p.feeUsd)}); the largest affordable notional is $${str(largestAffordableNotional(free))}`,
        );
      const rec = await this.host.create<typeof comboMachine>(COMBO_MACHINE_ID, {
        id: comboId,
        input,
        partnerId,
        ownerUserId: userId,
      });
      this.index(comboId, input.legs);
      return rec;
    });
  }

  /**
   * The combo `id` of `userId`.
   * @param asked - how the client named it, for the 404's message (default: `combo <id>`).
   * @throws {DomainError} `NOT_FOUND` when there is none of this user.
   */
  async get(userId: string, id: string, asked = `combo ${id}`): Promise<ActorRecord> {
    const rec = await this.recordOf(id);
    if (!rec || rec.kind !== COMBO_KIND || rec.ownerUserId !== userId) throw errors.notFound(`no ${asked}`);
    return rec;
  }

  /** The machine context of a stored combo record, whichever form its snapshot is stored in. */
  contextOf(r: ActorRecord): ComboContext {
    return this.host.storedSnapshot(r).context as ComboContext;
  }

  /**
   * Accept (spec 3, 4.2): before `expires_at` the combo executes: notional + fee leave the wallet
   * and the combo's shares enter it in one venue operation; answers once applied. `now >
   * expires_at` decides the 410, whether or not the expiry timer has fired.
   * @param bind called right before the accept is sent (the API binds its answer to the step).
   * @throws {DomainError} `NOT_FOUND` (combo, or a quote id that is not the combo's),
   *   `QUOTE_EXPIRED`, `CONFLICT` (the quote was accepted already, under another Idempotency-Key),
   *   `INSUFFICIENT_BALANCE`, `MARKET_CLOSED` (a leg's market closed meanwhile). Nothing changes.
   */
  async accept(
    userId: string,
    body: { combo_order_id: string; quote_id: string },
    bind?: () => void,
  ): Promise<ActorRecord> {
    const id = body.combo_order_id;
    const first = await this.get(userId, id);
    const c = this.contextOf(first);
    if (c.quoteId !== body.quote_id) throw errors.notFound(`no quote ${body.quote_id} of combo ${id}`);
    const rec = await this.orders.exclusive(userId, async () => {
      const cur = await this.get(userId, id);
      if (cur.status === 'FAILED') throw failureOf(this.contextOf(cur));
      if (cur.status !== 'QUOTED' && cur.status !== 'EXPIRED')
        throw errors.conflict(`quote ${c.quoteId} of combo ${id} was accepted already (status ${cur.status})`);
      const now = this.clock.now();
      if (cur.status === 'EXPIRED' || now > c.expiresAtMs)
        throw new DomainError(
          'QUOTE_EXPIRED',
          `quote ${c.quoteId} expired at ${iso(c.expiresAtMs)}: request a new quote (POST /v2/trade/combo/quote)`,
        );
      checkWalletOp(this.venue, {
        kind: 'combo_buy',
        opId: comboBuyOpId(id),
        userId,
        comboId: id,
        amount: c.debitUsd,
        shares: c.shares,
        legs: c.legs.map((l) => l.tokenId),
      });
      bind?.();
      await this.host.send(id, { type: 'accept', atMs: now });
      await this.whenQuiet(id);
      return (await this.recordOf(id))!;
    });
    if (rec.status === 'FAILED') throw failureOf(this.contextOf(rec));
    return rec;
  }

  /**
   * Redeem (spec 3, 4.2) by `combo_order_id` or `combo_position_id`: a `RESOLVED_WIN` combo's shares
   * pay $1 each, credited at once; answers once applied.
   * @param bind called right before the redeem is sent (the API binds its answer to the step).
   * @throws {DomainError} `INVALID_REQUEST` (both ids or neither), `NOT_FOUND`, `COMBO_NOT_RESOLVED`
   *   (409: a leg pending), `COMBO_LOST` (422), `CONFLICT` (redeemed already, or never executed).
   */
  async redeem(userId: string, body: ComboRedeemBody, bind?: () => void): Promise<ActorRecord> {
    if ((body.combo_order_id === undefined) === (body.combo_position_id === undefined))
      throw errors.badRequest('send exactly one of combo_order_id and combo_position_id');
    const id = body.combo_order_id ?? comboIdOf(body.combo_position_id!);
    await this.get(userId, id, body.combo_order_id ? undefined : `combo position ${body.combo_position_id}`);
    const rec = await this.orders.exclusive(userId, async () => {
      const cur = await this.get(userId, id);
      refuseRedeem(id, cur.status);
      bind?.();
      await this.host.send(id, { type: 'redeem', atMs: this.clock.now() });
      await this.whenQuiet(id);
      return (await this.recordOf(id))!;
    });
    if (rec.status !== 'REDEEMED') throw failureOf(this.contextOf(rec));
    return rec;
  }

  /**
   * The combo positions of `userId` (executed combos), newest first; `status` one of `OPEN`,
   * `PARTIAL`, `RESOLVED_WIN`, `RESOLVED_LOSS`. Each view gets the legs' current prices (the touch's
   * midpoint, or the side there is) and the position's current value (shares × the pending legs'
   * prices; 0 once lost, shares × $1 once won, the payout once redeemed).
   */
  async positions(
    userId: string,
    paging: { offset: number; limit: number },
    status?: string,
  ): Promise<{ positions: Record<string, unknown>[]; total: number }> {
    const { records, total } = await this.actors.findOwned(
      userId,
      { kind: COMBO_KIND, status: status ?? { $in: POSITION_STATUSES } },
      { skip: paging.offset, limit: paging.limit },
    );
    return { positions: records.map((r) => this.withPrices(r.view as Record<string, unknown>)), total };
  }

  /** A view with each leg's current price and the position's current value. */
  withPrices(view: Record<string, unknown>): Record<string, unknown> {
    const legs = (view.legs as { position_id: string; outcome: string | null }[]).map((l) => {
      const t = this.venue.touch(l.position_id);
      const mid = t.bid && t.ask ? t.bid.plus(t.ask).div(2) : (t.bid ?? t.ask);
      const price = l.outcome === 'WIN' ? dec(1) : l.outcome === 'LOSS' ? dec(0) : mid;
      return { ...l, current_price: price ? str(price) : null, price };
    });
    const shares = dec(view.taker_shares as string);
    let value: Dec | null = shares;
    for (const l of legs) value = value && l.price ? value.times(l.price) : null;
    if (view.status === 'REDEEMED') value = dec(0);
    return {
      ...view,
      legs: legs.map(({ price: _p, ...l }) => l),
      current_value_usd: value ? str(value.toDecimalPlaces(USD_DP, Dec.ROUND_HALF_EVEN)) : null,
    };
  }

  /**
   * Start-up: indexes the live combos by their legs' markets; a combo caught between its accept (or
   * redeem) and the venue's answer gets `venue.retry` (the venue answers a repeat with its recorded
   * result: exactly once); a leg whose market resolved while the service was down is delivered.
   * @returns how many combos were retried.
   */
  async reconcile(): Promise<number> {
    let n = 0;
    for (const id of this.host.liveIds(COMBO_KIND)) {
      const s = this.host.snapshotOf(id);
      if (!s) continue;
      const c = s.context as ComboContext;
      this.index(id, c.legs);
      if (s.value === 'executed' || s.value === 'redeeming') {
        await this.host.send(id, { type: 'venue.retry' });
        n++;
      }
      for (const l of c.legs) {
        const m = this.venue.marketStatus(l.conditionId);
        if (m?.resolved) this.deliverLeg(id, l.conditionId, m.winningTokenId, m.resolvedAtMs ?? this.clock.now());
      }
      await this.whenQuiet(id);
    }
    return n;
  }
}

/** The venue's refusal recorded on a combo's context (its accept or its redeem), as the domain error it answers. */
function failureOf(f: ComboContext): DomainError {
  return walletOpError({ error: f.error ?? 'rejected', reason: f.reason ?? 'refused by the venue' });
}

/**
 * Why a combo in REST status `status` cannot be redeemed, thrown; nothing when it can (`RESOLVED_WIN`).
 * @throws {DomainError} `COMBO_NOT_RESOLVED` (executed, open, partial), `COMBO_LOST`, `CONFLICT`
 *   (redeemed already; never executed).
 */
function refuseRedeem(id: string, status: string): void {
  switch (status) {
    case 'RESOLVED_WIN':
      return;
    case 'EXECUTED':
    case 'OPEN':
    case 'PARTIAL':
      throw new DomainError(
        'COMBO_NOT_RESOLVED',
        `combo ${id} is ${status}: it can be redeemed once every leg resolved in its favour`,
      );
    case 'RESOLVED_LOSS':
      throw new DomainError('COMBO_LOST', `combo ${id} lost (a leg resolved against it): it pays nothing`);
    case 'REDEEMED':
      throw errors.conflict(`combo ${id} was redeemed already`);
    default:
      throw errors.conflict(`combo ${id} is ${status}: it was never executed, there is nothing to redeem`);
  }
}
