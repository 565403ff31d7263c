/**
 * What scenario tests over REST share: a controllable clock for the real scheduler,
 * polling, and a partner's view of trading (orders, strategies, books) that remembers every id it
 * got a 200 for (for the invariant check's "nothing acknowledged lost").
 */
import { vi } from 'vitest';
import type { TraderFill } from '../../engine/data/records.js';
import type { TestService } from '../helpers.js';

/**
 * Test clock for the real scheduler. The whole process reads time through `Date` (Agenda's
 * `new Date()`/`Date.now()`, the service's systemClock, the venue): only `Date` is faked, timers
 * stay real, and the fake clock keeps advancing with real time (`shouldAdvanceTime`). `jump(ms)`
 * moves it forward at once; the scheduler's next poll (SCHEDULER_POLL_MS, real setTimeout) then finds
 * every job that came due and runs it, so a 10 s TWAP interval costs one poll, not 10 s.
 * Call `restore()` in afterAll. Never jump backwards (Agenda locks would look stale or young).
 */
export function useTestClock(): { jump(ms: number): void; restore(): void } {
  vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: true });
  return {
    jump(ms: number) {
      vi.setSystemTime(Date.now() + ms);
    },
    restore() {
      vi.useRealTimers();
    },
  };
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Polls `fn` until `ok` holds (real time; generous default), else throws with `what` and the last value.
 * @param stepMs - the pause between two calls of `fn` (short where a test acts on the first moment `ok` holds).
 */
export async function poll<T>(
  what: string,
  fn: () => Promise<T>,
  ok: (v: T) => boolean,
  timeoutMs = 15_000,
  stepMs = 50,
): Promise<T> {
  const end = performance.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (ok(v)) return v;
    if (performance.now() > end)
      throw new Error(`${what}: not reached within ${timeoutMs} ms; last: ${JSON.stringify(v)}`);
    await sleep(stepMs);
  }
}

/** A price as the API writes it (decimal string, no trailing zeros). */
export const px = (x: number) => String(Number(x.toFixed(2)));

export interface Fresh {
  token: string;
  bid: number;
  ask: number;
  bids: Array<{ price: string; size: string }>;
  asks: Array<{ price: string; size: string }>;
}

/** An API test's view of a book: levels best first, decimal strings. */
interface BookBody {
  bids: { price: string; size: string }[];
  asks: { price: string; size: string }[];
}

/**
 * Hands out untouched tokens one at a time: a 0.01-tick token whose best bid lies in
 * [minBid, maxBid] with a two-tick spread, skipping the ones handed out before (each scenario
 * trades on a book of its own). Shared by every REST scenario test.
 */
export function tokenPicker(
  markets: () => any[],
  book: (tokenId: string) => Promise<BookBody>,
): (minBid?: number, maxBid?: number) => Promise<Fresh> {
  let next = 0;
  return async (minBid = 0.2, maxBid = 0.9) => {
    const list = markets();
    for (; next < list.length; next++) {
      const m = list[next];
      if (m.tick_size !== '0.01') continue;
      const t = m.tokens[0].token_id as string;
      const b = await book(t);
      const bid = Number(b.bids[0]?.price);
      const ask = Number(b.asks[0]?.price);
      if (bid >= minBid && bid <= maxBid && Math.round((ask - bid) * 100) === 2) {
        next++;
        return { token: t, bid, ask, bids: b.bids, asks: b.asks };
      }
    }
    throw new Error('no suitable market left');
  };
}

/**
 * `seller` sells into the bids of `token` down to (and including) price `p` (IOC; buying the shares
 * first at any price), so that the best bid ends below `p`: how a test moves the bid down.
 */
export async function sellThrough(
  post: (u: string, body: unknown) => Promise<{ body: any }>,
  book: (tokenId: string) => Promise<BookBody>,
  token: string,
  p: string,
  seller = 'bob',
): Promise<void> {
  const b = await book(token);
  const size = b.bids.filter((l) => Number(l.price) >= Number(p)).reduce((a, l) => a + Number(l.size), 0);
  await post(seller, {
    symbol: token,
    side: 'buy',
    type: 'LIMIT',
    price: '0.99',
    size: String(size),
    time_in_force: 'IOC',
  });
  const r = await post(seller, {
    symbol: token,
    side: 'sell',
    type: 'LIMIT',
    price: p,
    size: String(size),
    time_in_force: 'IOC',
  });
  if (r.body.status !== 'FILLED') throw new Error(`selling through ${p} did not fill: ${JSON.stringify(r.body)}`);
}

/** A partner trading over REST on a running test service. */
export class Trading {
  /** Ids answered with 2xx (order_id, record_id, bracket_id). */
  readonly acknowledged = new Set<string>();
  /** Each provisioned user's wallet (`safe_address`, lower-case), by partner user id. */
  readonly address: Record<string, string> = {};
  private markets: any[] = [];
  private readonly pick = tokenPicker(
    () => this.markets,
    (t) => this.book(t),
  );

  constructor(private readonly svc: () => TestService) {}

  /** Loads the market list and provisions `users`. */
  async init(users: string[]): Promise<this> {
    for (const u of users) {
      const r = await this.svc().call('POST', '/v2/trade/users', { body: { partner_user_id: u } });
      this.address[u] = String(r.body.safe_address).toLowerCase();
    }
    this.markets = (await this.svc().call('GET', '/v2/trade/markets?limit=500')).body.markets;
    return this;
  }

  as(u: string): Record<string, string> {
    return { 'x-partner-user-id': u };
  }

  /** POST /v2/trade/order; remembers the ids of a 200. */
  async post(u: string, body: unknown): Promise<{ status: number; body: any }> {
    const r = await this.svc().call('POST', '/v2/trade/order', { body, headers: this.as(u) });
    if (r.status === 200)
      for (const k of ['order_id', 'record_id', 'bracket_id'])
        if (typeof r.body[k] === 'string') this.acknowledged.add(r.body[k]);
    return r;
  }

  async book(
    t: string,
  ): Promise<{ bids: Array<{ price: string; size: string }>; asks: Array<{ price: string; size: string }> }> {
    return (await this.svc().call('GET', `/v2/trade/book?token_id=${t}&depth=10`)).body;
  }

  async strategy(u: string, id: string): Promise<any> {
    return (
      await this.svc().call('GET', '/v2/trade/strategies?limit=500', { headers: this.as(u) })
    ).body.strategies.find((s: any) => s.record_id === id);
  }

  async strategies(u: string, ids: string[]): Promise<any[]> {
    const all = (await this.svc().call('GET', '/v2/trade/strategies?limit=500', { headers: this.as(u) })).body
      .strategies;
    return ids.map((id) => all.find((s: any) => s.record_id === id));
  }

  /** An order as the activity feed shows it (kind, status, size, filled_size, price). */
  async order(u: string, id: string): Promise<any> {
    return (await this.svc().call('GET', '/v2/trade/activity?limit=200', { headers: this.as(u) })).body.activity.find(
      (a: any) => a.id === id,
    );
  }

  /** GET /v2/trade/orders/{order_id} as `u`: status and body (404 while the order does not exist). */
  orderById(u: string, id: string): Promise<{ status: number; body: any }> {
    return this.svc().call('GET', `/v2/trade/orders/${id}`, { headers: this.as(u) });
  }

  async openOrders(u: string): Promise<any[]> {
    return (await this.svc().call('GET', '/v2/trade/orders/open?limit=500', { headers: this.as(u) })).body.orders;
  }

  /** A 0.01-tick token with a 2-tick spread, best bid in [minBid, maxBid], untouched by earlier calls. */
  async freshToken(minBid = 0.2, maxBid = 0.7): Promise<Fresh> {
    return this.pick(minBid, maxBid);
  }

  /** `u` buys `size` shares of `token` at any price (IOC at 0.99). @returns the order's answer (its `fills`). */
  async buyShares(u: string, token: string, size: number): Promise<any> {
    const r = await this.post(u, {
      symbol: token,
      side: 'buy',
      type: 'LIMIT',
      price: '0.99',
      size: String(size),
      time_in_force: 'IOC',
    });
    if (r.body.status !== 'FILLED') throw new Error(`could not buy ${size} shares: ${JSON.stringify(r.body)}`);
    return r.body;
  }

  /**
   * `taker` trades against every open order of `u` belonging to strategy `recordId` (fills them; `part` caps the size).
   */
  async takeChildren(
    u: string,
    recordId: string,
    taker: string,
    part?: (remaining: number) => number,
  ): Promise<number> {
    let n = 0;
    for (const o of (await this.openOrders(u)).filter((x) => x.record_id === recordId)) {
      const rem = Number(o.remaining_size);
      const size = part ? part(rem) : rem;
      if (size <= 0) continue;
      const r = await this.post(taker, {
        symbol: o.symbol,
        side: o.side === 'buy' ? 'sell' : 'buy',
        type: 'LIMIT',
        price: o.price,
        size: String(size),
        time_in_force: 'IOC',
      });
      if (r.status !== 200) throw new Error(`taking ${o.order_id}: ${JSON.stringify(r.body)}`);
      n++;
    }
    return n;
  }
}

/**
 * A copytrade subscription body (POST /v2/trade/copytrade) that copies every fill of `leader`:
 * each buy with `usd` dollars (FIXED_USD_PER_TRADE, FOK, BUY_MAX when pUSD is short), each sell of
 * the whole position (MAX, SELL_MAX); `more` adds or overrides fields.
 */
export function copyEveryFill(leader: string, usd: number, more: Record<string, unknown> = {}) {
  return {
    leader_address: leader,
    buy_order_type: 'ALL',
    buy_size_mode: 'FIXED_USD_PER_TRADE',
    buy_size_value: usd,
    buy_insufficient_usdc_action: 'BUY_MAX',
    buy_time_in_force: 'FOK',
    sell_order_type: 'ALL',
    sell_size_mode: 'MAX',
    sell_insufficient_shares_action: 'SELL_MAX',
    ...more,
  };
}

/**
 * A taker buy of `leader` (a wallet that is no user of the service) as the trade history records
 * it: fill `n` (log index `n`, transaction `0x…n`) at chain second `block`, 1 share at 0.5 unless
 * `over` says otherwise.
 */
export function leaderBuy(
  leader: string,
  n: number,
  market: { conditionId: string; tokenId: string },
  block: number,
  over: Partial<TraderFill> = {},
): TraderFill {
  return {
    _id: `lead-${n}:taker`,
    tradeId: `lead-${n}`,
    blockTimestamp: block,
    logIndex: n,
    transactionHash: '0x' + n.toString(16).padStart(64, 'e'),
    address: leader,
    userId: null,
    orderId: null,
    role: 'taker',
    atMs: block * 1000,
    conditionId: market.conditionId,
    tokenId: market.tokenId,
    outcome: 'Yes',
    side: 'BUY',
    price: '0.5',
    size: '1',
    notionalUsd: '0.5',
    feeUsd: '0',
    source: 'venue',
    ...over,
  };
}

/**
 * Records {@link leaderBuy} `n` through the trade history, as its copytrade subscriptions receive it.
 * @returns the fill recorded.
 */
export async function recordLeaderBuy(
  svc: TestService,
  leader: string,
  n: number,
  market: { conditionId: string; tokenId: string },
  block: number,
  over: Partial<TraderFill> = {},
): Promise<TraderFill> {
  const f = leaderBuy(leader, n, market, block, over);
  await svc.services.history.recordAlone({ trades: [], fills: [f], cash: [] });
  return f;
}
