/**
 * One shared invariant check for scenario tests that use the real paths. Given the running services
 * of a test, it checks what must hold once the system is idle, whatever happened before (faults, restarts, races):
 *
 * (a) money and shares — the simulated venue (engine/venue/sim-venue.ts) keeps user wallets
 *     (`pusd`, `reserved`, per-token `shares`/`reserved`/`cost`) and its record of every user order
 *     (with its fills) in memory. The liquidity provider (`sim-maker`) has no wallet: it mints and absorbs
 *     without limit, and its side of a trade is never settled. So the accounting is:
 *       - every user wallet is explained by its own trades: pUSD = SIM_INITIAL_PUSD − Σ buy notional
 *         + Σ sell notional, shares(token) = Σ bought − Σ sold (fills from the venue's order records,
 *         or, for an order the venue already forgot after a checkpoint, from the order actor's
 *         filled size and matched amount);
 *       - a trade between two users appears on both (`T<seq>-<n>-t` and `-m`), same token, price and
 *         size, opposite sides; a complementary trade (`T<seq>-<n>-mint-…` / `-merge-…`) on both
 *         outcomes of one market, same side (two buys mint full sets, two sells merge them), prices
 *         summing to 1, same size; a trade with only one user side is against the maker;
 *       - the maker's implicit ledger closes the books: Σ users pUSD + maker's net pUSD = users ×
 *         SIM_INITIAL_PUSD, and per token Σ users' shares = shares the maker sold net (reported);
 *       - wallet operations are explained by their actors' recorded results: a split, merge
 *         or redeem (`wallet` records, CONFIRMED), a withdrawal's debit and refund (`withdrawal`
 *         records) and a combo's buy and redeem (`combo` records) each add their signed pUSD and share
 *         changes to the user's expected wallet; the venue holds a combo's shares from its buy until
 *         its redeem, and a redeem pays $1 a share;
 *       - conservation per condition: the shares of each outcome token in existence (users' holdings
 *         + shares burned by redeems − what the maker sold net, i.e. minted on its own account) equal
 *         Σ splits − Σ merges of that condition + full sets minted − merged by complementary trades
 *         between users, for both tokens alike (YES = NO); total pUSD changes only by splits /
 *         merges / redeems / withdrawals (signed), trades with the maker and full sets minted ($1
 *         each out of the wallets) or merged ($1 each back) by trades between users;
 *       - nothing negative (balance, reserved, available; shares, reserved, available);
 *       - reservations equal what open orders need: a wallet's reserved pUSD = Σ of its open orders'
 *         reservations, each open limit buy reserving price × remaining, each open sell reserving its
 *         remaining shares; a finished order reserves nothing; every open resting order is in the
 *         book with its remaining size and the book holds no user order that is not open;
 *       - the order actors agree with the venue: a final order record is not open at the venue, a
 *         working one is known there (or waiting for its submission), and its filled size equals the
 *         venue's fills.
 * (b) no strategy left working with nothing working: a non-final strategy either has a working child
 *     order that exists and is not final, a price watch, or an armed deadline whose timer job is in
 *     the scheduler's collection; a child it believes working must not be final in the store
 *     (a missed update); every deadline of a live actor has its timer job; a price watch is
 *     registered in the trigger index and does not hold at the current touch (it would have fired).
 * (c) nothing acknowledged lost: every order / strategy id the test got a 200 for is in the store.
 *
 * The check waits for the system to be idle (strategy commands, actor queues, venue journal), and
 * retries until it passes or `timeoutMs` runs out (asynchronous reports still settling), then
 * throws one precise report listing every violation.
 */
import { Dec } from '../engine/decimal.js';
import type { Services } from '../engine/service.js';
import type { ActorRecord } from '../engine/store/actors.js';
import { LIQUIDITY_PROVIDER_ID } from '../engine/venue/ledger.js';
import { SimVenue } from '../engine/venue/sim-venue.js';

export interface InvariantOptions {
  /** Ids (order_id, record_id, bracket_id) the test got a 2xx for. */
  acknowledged?: Iterable<string>;
  /**
   * How long the check may wait for the system to go quiet (ms; default 15000: generous, as other
   * test files load the machine; a passing check returns as soon as it holds).
   */
  timeoutMs?: number;
  /** Skip part (a), (b) or (c) (for a test that knowingly breaks one). */
  skip?: Array<'money' | 'strategies' | 'acknowledged'>;
}

interface VenueFill {
  tradeId: string;
  price: string;
  size: string;
}
interface VenueEntryLike {
  order: {
    orderId: string;
    userId: string;
    tokenId: string;
    side: 'buy' | 'sell';
    kind: 'limit' | 'market';
    price: string | null;
    timeInForce: string;
  };
  status: 'open' | 'filled' | 'canceled' | 'expired' | 'rejected';
  remaining: Dec | null;
  reservedUsd: Dec;
  reservedShares: Dec;
  fills: VenueFill[];
}
interface WalletLike {
  pusd: Dec;
  reserved: Dec;
  positions: Map<string, { shares: Dec; reserved: Dec; cost: Dec }>;
}
interface RestingLike {
  orderId: string;
  userId: string;
  remaining: Dec;
}
interface VenueInternals {
  wallets: Map<string, WalletLike>;
  orders: Map<string, VenueEntryLike>;
  resting: RestingLike[];
}

/** The simulated venue of `services` (the checks read its audit reads, which only it has). */
function simVenueOf(services: Services): SimVenue {
  if (!(services.venue instanceof SimVenue)) throw new Error('checkInvariants needs the simulated venue');
  return services.venue;
}

/** The simulated venue's state now, through its public audit reads (wallet and order rows, resting orders). */
function internalsOf(services: Services): VenueInternals {
  const v = simVenueOf(services);
  const wallets = new Map<string, WalletLike>();
  for (const w of v.walletRows()) {
    wallets.set(w.userId, {
      pusd: d(w.pusd),
      reserved: d(w.reserved),
      positions: new Map(
        w.positions.map(([t, shares, reserved, cost]) => [
          t,
          { shares: d(shares), reserved: d(reserved), cost: d(cost) },
        ]),
      ),
    });
  }
  const orders = new Map<string, VenueEntryLike>();
  for (const r of v.orderRows()) {
    orders.set(r.order.orderId, {
      order: r.order,
      status: r.status,
      remaining: r.remaining === null ? null : d(r.remaining),
      reservedUsd: d(r.reservedUsd),
      reservedShares: d(r.reservedShares),
      fills: r.fills,
    });
  }
  return { wallets, orders, resting: v.restingOrders() };
}

const d = (x: string | number | Dec) => new Dec(x);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits until nothing is in flight: strategy commands, actor queues, the venue journal. */
export async function waitIdle(services: Services, timeoutMs = 15_000): Promise<void> {
  const venue = simVenueOf(services);
  const end = performance.now() + timeoutMs;
  // three rounds: what one part does when idle may give another work (a venue report, a strategy command)
  for (let round = 0; round < 3 && performance.now() < end; round++) {
    await services.strategies.idle();
    await venue.whenWritten().catch(() => undefined);
    await services.host.whenIdle();
    await sleep(20);
  }
}

/** Everything the check reads, once. */
async function violations(services: Services, opts: InvariantOptions): Promise<string[]> {
  const out: string[] = [];
  const skip = new Set(opts.skip ?? []);
  const venue = internalsOf(services);
  const actorsCol = await services.store.collection<Omit<ActorRecord, 'view'>>('actors');
  const records = await actorsCol.find({});
  const byId = new Map(records.map((r) => [r._id, r]));
  // the stored snapshot in XState's form, whichever form it is stored in (engine/actor-host.ts SnapshotForm)
  const ctxOf = (r: Omit<ActorRecord, 'view'>) => services.host.storedSnapshot(r).context as Record<string, any>;

  if (!skip.has('money'))
    out.push(
      ...moneyViolations(
        services,
        venue,
        records.filter((r) => r.kind === 'order'),
        ctxOf,
        records.filter((r) => r.kind === 'wallet' || r.kind === 'withdrawal' || r.kind === 'combo'),
      ),
    );
  if (!skip.has('strategies')) {
    const jobs = await (
      await services.store.collection<{ _id: string; data?: { actorId: string; timerName: string; atMs: number } }>(
        'agendaJobs',
      )
    ).find({});
    const armed = new Set(
      jobs.filter((j) => j.data).map((j) => `${j.data!.actorId}/${j.data!.timerName}/${j.data!.atMs}`),
    );
    for (const r of records) {
      if (r.final || r.quarantine) continue;
      const c = ctxOf(r);
      const deadlines = Object.entries((c.deadlines ?? {}) as Record<string, number>);
      for (const [name, at] of deadlines) {
        if (!armed.has(`${r._id}/${name}/${at}`))
          out.push(`${r.kind} ${r._id} (${r.status}) has deadline ${name} at ${at} but no timer job is armed for it`);
      }
      if (r.kind !== 'strategy') continue;
      const working = c.working as string | null;
      const watch = Object.keys(c.watch ?? {}).length > 0;
      const openChildren = ((c.children ?? []) as Array<{ orderId: string; final: boolean }>).filter((x) => !x.final);
      for (const ch of openChildren) {
        const o = byId.get(ch.orderId);
        if (o?.final)
          out.push(
            `strategy ${r._id} (${r.machineId}, ${r.status}) believes child ${ch.orderId} is working, but ` +
              `that order is ${o.status} (final): a missed update`,
          );
      }
      // an armed price watch is in the trigger index, and does not already hold (it would have fired)
      const w = (c.watch ?? {}) as Record<string, unknown>;
      const levels = (['bidAtOrBelow', 'bidAbove', 'askBelow', 'askAtOrAbove'] as const).filter(
        (k) => typeof w[k] === 'string',
      );
      if (levels.length || w.any === true) {
        if (!services.strategies.triggers.has(r._id))
          out.push(
            `strategy ${r._id} (${r.machineId}, ${r.status}) watches ${JSON.stringify(w)} but is not in ` +
              `the trigger index: it can never fire`,
          );
        const t = services.venue.touch(c.tokenId as string);
        const holds = levels.filter((k) => {
          const lv = d(w[k] as string);
          if (k === 'bidAtOrBelow') return t.bid !== undefined && t.bid.lte(lv);
          if (k === 'bidAbove') return t.bid !== undefined && t.bid.gt(lv);
          if (k === 'askBelow') return t.ask !== undefined && t.ask.lt(lv);
          return t.ask !== undefined && t.ask.gte(lv);
        });
        if (holds.length)
          out.push(
            `strategy ${r._id} (${r.machineId}, ${r.status}) watches ${JSON.stringify(w)}, which holds at ` +
              `the touch ${t.bid}/${t.ask}, yet it has not fired`,
          );
      }
      const entry = c.entryOrderId ? byId.get(c.entryOrderId as string) : undefined;
      const pendingEntry = entry !== undefined && !entry.final;
      let alive =
        watch ||
        deadlines.length > 0 ||
        pendingEntry ||
        openChildren.some((ch) => byId.get(ch.orderId)?.final === false);
      if (working) {
        const o = byId.get(working);
        if (!o)
          out.push(`strategy ${r._id} (${r.machineId}, ${r.status}) works order ${working}, which does not exist`);
        else if (o.final)
          out.push(
            `strategy ${r._id} (${r.machineId}, ${r.status}) works order ${working}, which is ${o.status} (final)`,
          );
        else alive = true;
      }
      if (!alive) {
        out.push(
          `strategy ${r._id} (${r.machineId}, ${r.status}, state ` +
            `${JSON.stringify(services.host.storedSnapshot(r).value)}) is in a working state with nothing ` +
            `working: no live child order, no watch, no deadline`,
        );
      }
    }
  }
  if (!skip.has('acknowledged')) {
    for (const id of opts.acknowledged ?? []) if (!byId.has(id)) out.push(`acknowledged ${id} is not in the store`);
  }
  return out;
}

/** The shares of combo `comboId` the venue's ledger holds for `userId` (decimal string), if any. */
function comboHeld(venue: SimVenue, userId: string, comboId: string): string | undefined {
  for (const h of venue.comboHoldings())
    if (h.userId === userId && h.comboId === comboId) return h.holding.shares.toString();
  return undefined;
}

function moneyViolations(
  services: Services,
  venue: VenueInternals,
  orderRecords: Array<Omit<ActorRecord, 'view'>>,
  ctxOf: (r: Omit<ActorRecord, 'view'>) => Record<string, any>,
  walletRecords: Array<Omit<ActorRecord, 'view'>> = [],
): string[] {
  const out: string[] = [];
  const initial = d(services.config.simInitialPusd);
  const recordOf = new Map(orderRecords.map((r) => [r._id, r]));
  const users = [...venue.wallets.keys()].filter((u) => u !== LIQUIDITY_PROVIDER_ID);
  const exp = new Map<
    string,
    { pusd: Dec; shares: Map<string, Dec>; reservedUsd: Dec; reservedShares: Map<string, Dec> }
  >();
  const expOf = (u: string) => {
    let e = exp.get(u);
    if (!e) exp.set(u, (e = { pusd: initial, shares: new Map(), reservedUsd: d(0), reservedShares: new Map() }));
    return e;
  };
  const add = (m: Map<string, Dec>, k: string, v: Dec) => m.set(k, (m.get(k) ?? d(0)).plus(v));
  const applyTrade = (u: string, side: 'buy' | 'sell', token: string, size: Dec, notional: Dec) => {
    const e = expOf(u);
    e.pusd = side === 'buy' ? e.pusd.minus(notional) : e.pusd.plus(notional);
    add(e.shares, token, side === 'buy' ? size : size.neg());
  };
  // trades by base id (T<seq>-<n>), for pairing and the maker's ledger
  const trades = new Map<
    string,
    Array<{
      orderId: string;
      user: string;
      side: 'buy' | 'sell';
      token: string;
      price: string;
      size: string;
      leg: string;
    }>
  >();
  let makerPusd = d(0);
  const makerShares = new Map<string, Dec>();

  for (const [id, e] of venue.orders) {
    const o = e.order;
    if (o.userId === LIQUIDITY_PROVIDER_ID) continue;
    let filled = d(0);
    let matched = d(0);
    for (const f of e.fills) {
      const size = d(f.size);
      const notional = d(f.price).times(size);
      filled = filled.plus(size);
      matched = matched.plus(notional);
      applyTrade(o.userId, o.side, o.tokenId, size, notional);
      const base = f.tradeId.replace(/-[tm]$/, '');
      const list = trades.get(base) ?? [];
      list.push({
        orderId: id,
        user: o.userId,
        side: o.side,
        token: o.tokenId,
        price: f.price,
        size: f.size,
        leg: f.tradeId.slice(-1),
      });
      trades.set(base, list);
    }
    // no negative or stale reservation; open orders reserve exactly what they need
    if (e.reservedUsd.lt(0) || e.reservedShares.lt(0))
      out.push(`venue order ${id} reserves a negative amount (${e.reservedUsd} pUSD, ${e.reservedShares} shares)`);
    if (e.status === 'open') {
      expOf(o.userId).reservedUsd = expOf(o.userId).reservedUsd.plus(e.reservedUsd);
      add(expOf(o.userId).reservedShares, o.tokenId, e.reservedShares);
      if (o.side === 'buy' && o.kind === 'limit' && e.remaining && !e.reservedUsd.eq(d(o.price!).times(e.remaining))) {
        out.push(
          `open buy ${id} reserves $${e.reservedUsd} but needs price ${o.price} × remaining ${e.remaining} ` +
            `= $${d(o.price!).times(e.remaining)}`,
        );
      }
      if (o.side === 'sell' && e.remaining && !e.reservedShares.eq(e.remaining))
        out.push(`open sell ${id} reserves ${e.reservedShares} shares but has ${e.remaining} remaining`);
    } else if (!e.reservedUsd.isZero() || !e.reservedShares.isZero()) {
      out.push(`venue order ${id} is ${e.status} but still reserves $${e.reservedUsd} and ${e.reservedShares} shares`);
    }
    // the order actor agrees with the venue
    const rec = recordOf.get(id);
    if (rec) {
      const c = ctxOf(rec);
      if (rec.final && e.status === 'open')
        out.push(`order ${id} is ${rec.status} (final) in the store but still open at the venue`);
      if (!d(c.filledSize).eq(filled))
        out.push(
          `order ${id} records filled ${c.filledSize}, the venue filled ${filled} (a fill report lost or ` +
            `applied twice)`,
        );
      else if (!d(c.matchedAmount).eq(matched))
        out.push(`order ${id} records matched $${c.matchedAmount}, the venue $${matched}`);
    } else if (!id.startsWith('mm-')) {
      out.push(`the venue holds order ${id} (${e.status}) that has no order record`);
    }
  }
  const forgotten: Array<Record<string, any>> = [];
  // orders the venue already forgot (checkpointed after their end): their record is the source
  for (const r of orderRecords) {
    if (venue.orders.has(r._id)) continue;
    const c = ctxOf(r);
    if (!r.final && !r.quarantine)
      out.push(`order ${r._id} is ${r.status} (not final) in the store but unknown to the venue`);
    if (d(c.filledSize).gt(0)) {
      applyTrade(c.userId, c.side, c.tokenId, d(c.filledSize), d(c.matchedAmount));
      forgotten.push(c);
    }
  }
  // a forgotten order's trades: with the maker when no other user holds the other leg
  const legs = new Set<string>();
  const knownLegs = new Map<string, string>(); // trade leg id → size, of orders the venue still holds
  for (const e of venue.orders.values())
    for (const f of e.fills) {
      legs.add(f.tradeId);
      knownLegs.set(f.tradeId, f.size);
    }
  const forgottenLegs = new Set<string>();
  for (const c of forgotten)
    for (const t of c.tradeIds as string[]) {
      legs.add(t);
      forgottenLegs.add(t);
    }
  const otherLeg = (t: string) => t.replace(/-([tm])$/, (_m, x: string) => (x === 't' ? '-m' : '-t'));
  /** Full sets minted (+) or merged (−) by complementary trades between users, by condition. */
  const matchSets = new Map<string, Dec>();
  const complementary = (base: string) => /-(mint|merge)$/.exec(base)?.[1] as 'mint' | 'merge' | undefined;
  const counted = new Set<string>();
  const countSets = (base: string, token: string, size: Dec) => {
    const kind = complementary(base);
    const c = services.venue.token(token)?.conditionId;
    if (!kind || !c || counted.has(base)) return;
    counted.add(base);
    add(matchSets, c, kind === 'mint' ? size : size.neg());
  };
  let ledgerComplete = true;
  for (const c of forgotten) {
    const ids = c.tradeIds as string[];
    const other = ids.map((t) => legs.has(otherLeg(t)));
    if (other.every((x) => !x)) {
      const n = d(c.matchedAmount);
      makerPusd = c.side === 'buy' ? makerPusd.plus(n) : makerPusd.minus(n);
      add(makerShares, c.tokenId, c.side === 'buy' ? d(c.filledSize).neg() : d(c.filledSize));
    } else if (!other.every((x) => x)) ledgerComplete = false;
    // complementary trades with a user: their size from the other leg when the venue still holds it
    for (const t of ids) {
      const base = t.replace(/-[tm]$/, '');
      if (!complementary(base) || !legs.has(otherLeg(t)) || counted.has(base)) continue;
      const size = knownLegs.get(otherLeg(t)) ?? (ids.length === 1 ? c.filledSize : undefined);
      if (size === undefined) ledgerComplete = false;
      else countSets(base, c.tokenId, d(size));
    }
  }
  // pair user–user trades; the rest are against the maker (or a user whose order the venue forgot)
  for (const [base, legs] of trades) {
    if (legs.length === 1) {
      const l = legs[0]!;
      if (forgottenLegs.has(otherLeg(`${base}-${l.leg}`))) continue;
      const n = d(l.price).times(l.size);
      makerPusd = l.side === 'buy' ? makerPusd.plus(n) : makerPusd.minus(n);
      add(makerShares, l.token, l.side === 'buy' ? d(l.size).neg() : d(l.size));
      continue;
    }
    const [a, b] = legs;
    const kind = complementary(base);
    const pairs = kind
      ? a!.side === b!.side &&
        a!.side === (kind === 'mint' ? 'buy' : 'sell') &&
        services.venue.token(a!.token)?.complementTokenId === b!.token &&
        d(a!.price).plus(b!.price).eq(1)
      : a!.side !== b!.side && a!.token === b!.token && a!.price === b!.price;
    if (legs.length !== 2 || a!.leg === b!.leg || !pairs || !d(a!.size).eq(b!.size)) {
      out.push(`trade ${base} does not pair: ${JSON.stringify(legs)}`);
    } else countSets(base, a!.token, d(a!.size));
  }
  // wallet operations: each recorded result moves the wallet it names
  interface OpResultLike {
    opId: string;
    kind: string;
    conditionId: string | null;
    pusdDelta: string;
    shares: { tokenId: string; delta: string }[];
  }
  let opsPusd = d(0);
  const opsShares = new Map<string, Dec>();
  const setsOf = new Map<string, Dec>(); // condition → Σ splits − Σ merges
  const burned = new Map<string, Dec>(); // token → shares burned by redeems
  for (const r of walletRecords) {
    const c = ctxOf(r);
    const results = (
      r.kind === 'wallet' ? [c.result] : r.kind === 'combo' ? [c.buy, c.redeem] : [c.debit, c.credit]
    ).filter((x): x is OpResultLike => x !== null && x !== undefined);
    for (const res of results) {
      const e = expOf(c.userId as string);
      e.pusd = e.pusd.plus(res.pusdDelta);
      opsPusd = opsPusd.plus(res.pusdDelta);
      for (const sh of res.shares) {
        add(e.shares, sh.tokenId, d(sh.delta));
        add(opsShares, sh.tokenId, d(sh.delta));
        if (res.kind === 'redeem') add(burned, sh.tokenId, d(sh.delta).neg());
      }
      if (res.kind === 'split') add(setsOf, res.conditionId!, d(res.shares[0]!.delta));
      if (res.kind === 'merge') add(setsOf, res.conditionId!, d(res.shares[0]!.delta));
    }
    if (r.kind === 'wallet' && r.status === 'CONFIRMED' && !c.result)
      out.push(`wallet operation ${r._id} is CONFIRMED without a result`);
    if (r.kind === 'withdrawal' && r.status === 'CONFIRMED' && (!c.debit || c.credit))
      out.push(`withdrawal ${r._id} is CONFIRMED but debited ${Boolean(c.debit)}, refunded ${Boolean(c.credit)}`);
    if (r.kind === 'combo') {
      // the venue's combo position: held from the buy until the redeem, with the combo's shares
      const held = services.venue instanceof SimVenue ? comboHeld(services.venue, c.userId, r._id) : undefined;
      const want = c.buy && !c.redeem ? (c.shares as string) : undefined;
      if ((held === undefined) !== (want === undefined) || (held && !d(held).eq(want!)))
        out.push(`combo ${r._id} (${r.status}): the venue holds ${held ?? 'no'} shares, want ${want}`);
      if (c.redeem && !d(c.redeem.pusdDelta).eq(c.shares))
        out.push(`combo ${r._id} paid ${c.redeem.pusdDelta} for ${c.shares} shares`);
    }
    if (r.kind === 'withdrawal' && r.status === 'FAILED' && c.debit && !c.credit)
      out.push(`withdrawal ${r._id} FAILED after its debit but was not refunded`);
  }
  // every wallet explained by its trades; nothing negative; reservations
  let totalPusd = d(0);
  const totalShares = new Map<string, Dec>();
  for (const u of users) {
    const w = venue.wallets.get(u)!;
    const e = expOf(u);
    totalPusd = totalPusd.plus(w.pusd);
    if (!w.pusd.eq(e.pusd))
      out.push(
        `user ${u}: pUSD ${w.pusd}, its trades explain ${e.pusd} (initial ${initial}) — off by ` +
          `${w.pusd.minus(e.pusd)}`,
      );
    if (w.pusd.lt(0) || w.reserved.lt(0) || w.pusd.minus(w.reserved).lt(0))
      out.push(`user ${u}: negative pUSD balance/reserved/available (${w.pusd} / ${w.reserved})`);
    if (!w.reserved.eq(e.reservedUsd))
      out.push(`user ${u}: ${w.reserved} pUSD reserved, its open orders reserve ${e.reservedUsd}`);
    const tokens = new Set([...w.positions.keys(), ...e.shares.keys()]);
    for (const t of tokens) {
      const p = w.positions.get(t) ?? { shares: d(0), reserved: d(0), cost: d(0) };
      add(totalShares, t, p.shares);
      const want = e.shares.get(t) ?? d(0);
      if (!p.shares.eq(want))
        out.push(`user ${u} token …${t.slice(-8)}: ${p.shares} shares, its trades explain ${want}`);
      if (p.shares.lt(0) || p.reserved.lt(0) || p.shares.minus(p.reserved).lt(0) || p.cost.lt(0))
        out.push(
          `user ${u} token …${t.slice(-8)}: negative position (${p.shares} shares, ${p.reserved} reserved, ` +
            `cost ${p.cost})`,
        );
      const res = e.reservedShares.get(t) ?? d(0);
      if (!p.reserved.eq(res))
        out.push(`user ${u} token …${t.slice(-8)}: ${p.reserved} shares reserved, its open sells reserve ${res}`);
    }
  }
  for (const u of exp.keys()) if (!venue.wallets.has(u)) out.push(`user ${u} has trades but no wallet`);
  // the maker's implicit ledger closes the books
  const expected = initial.times(users.length);
  // a forgotten order that traded with both the maker and users: its split is unknown, skip the ledger
  if (ledgerComplete) {
    const minted = [...matchSets.values()].reduce((x, y) => x.plus(y), d(0));
    if (!totalPusd.plus(makerPusd).plus(minted).eq(expected.plus(opsPusd))) {
      out.push(
        `pUSD not conserved: users hold ${totalPusd}, the maker took ${makerPusd} net, wallet operations ` +
          `moved ${opsPusd}, trades between users minted ${minted} full sets net, total ` +
          `${totalPusd.plus(makerPusd).plus(minted)} ≠ ${users.length} × ${initial} + ${opsPusd} = ` +
          `${expected.plus(opsPusd)}`,
      );
    }
    const setsMatched = (t: string) => matchSets.get(services.venue.token(t)?.conditionId ?? '') ?? d(0);
    for (const [t, s] of totalShares) {
      const sold = makerShares.get(t) ?? d(0);
      const ops = opsShares.get(t) ?? d(0);
      // users hold what the maker sold net (makerShares is the maker's side:
      // negative = sold) plus what wallet operations and complementary trades made
      if (!s.eq(sold.neg().plus(ops).plus(setsMatched(t)))) {
        out.push(
          `token …${t.slice(-8)}: users hold ${s} shares, the maker sold ${sold.neg()} net, wallet ` +
            `operations made ${ops}, complementary trades minted ${setsMatched(t)} net`,
        );
      }
    }
    // conservation per condition: shares in existence (held +
    // burned − minted by the maker) = sets split − merged, YES = NO
    const conditions = new Set<string>([...setsOf.keys()]);
    for (const t of [...totalShares.keys(), ...burned.keys()]) {
      const c = services.venue.token(t)?.conditionId;
      if (c) conditions.add(c);
    }
    for (const c of conditions) {
      const m = services.venue.market(c);
      if (!m) continue;
      const sets = (setsOf.get(c) ?? d(0)).plus(matchSets.get(c) ?? d(0));
      // merging shares the maker sold (it mints them) is legitimate, so sets may go below 0; what
      // cannot is merging more than was split plus minted: held + burned < 0 for some token
      for (const tk of m.tokens) {
        const splitAndMinted = sets.minus(makerShares.get(tk.tokenId) ?? d(0));
        if (splitAndMinted.lt(0))
          out.push(
            `condition …${c.slice(-8)}: more ${tk.outcome} merged than split and minted by the maker ` +
              `(${splitAndMinted})`,
          );
      }
      const existence = m.tokens.map((tk) =>
        (totalShares.get(tk.tokenId) ?? d(0))
          .plus(burned.get(tk.tokenId) ?? d(0))
          .plus(makerShares.get(tk.tokenId) ?? d(0)),
      );
      for (const [i, tk] of m.tokens.entries()) {
        if (!existence[i]!.eq(sets))
          out.push(
            `condition …${c.slice(-8)}: ${existence[i]} ${tk.outcome} shares in existence (held + burned − ` +
              `minted by the maker), ${sets} sets split − merged (by wallet operations and complementary ` +
              `trades)`,
          );
      }
    }
  }
  // books: every open resting user order is there with its remaining size, and nothing else of users
  const inBooks = new Map<string, RestingLike>();
  for (const r of venue.resting) if (r.userId !== LIQUIDITY_PROVIDER_ID) inBooks.set(r.orderId, r);
  for (const [id, e] of venue.orders) {
    if (e.order.userId === LIQUIDITY_PROVIDER_ID) continue;
    const rests =
      e.status === 'open' &&
      e.order.kind === 'limit' &&
      (e.order.timeInForce === 'GTC' || e.order.timeInForce === 'GTD');
    const r = inBooks.get(id);
    if (rests && !r) out.push(`open order ${id} is not in the book`);
    if (rests && r && e.remaining && !r.remaining.eq(e.remaining))
      out.push(`order ${id} rests ${r.remaining} in the book, the venue says ${e.remaining} remain`);
    if (!rests && r) out.push(`order ${id} is ${e.status} but rests in the book`);
    inBooks.delete(id);
  }
  for (const id of inBooks.keys()) out.push(`the book holds user order ${id} the venue does not know`);
  return out;
}

/**
 * Checks the invariants above on one or more running services (each its own venue and store);
 * waits for idle and retries until they hold or `timeoutMs` ends, then throws with every
 * violation found on the last attempt.
 */
export async function checkInvariants(services: Services | Services[], opts: InvariantOptions = {}): Promise<void> {
  const all = Array.isArray(services) ? services : [services];
  const timeoutMs = opts.timeoutMs ?? 15_000;
  const end = performance.now() + timeoutMs;
  for (;;) {
    const found: string[] = [];
    for (const [i, s] of all.entries()) {
      await waitIdle(s, Math.max(100, end - performance.now()));
      for (const v of await violations(s, opts)) found.push(all.length > 1 ? `[service ${i}] ${v}` : v);
    }
    if (found.length === 0) return;
    if (performance.now() >= end)
      throw new Error(`invariants violated (${found.length}):\n  - ${found.join('\n  - ')}`);
    await sleep(100);
  }
}
