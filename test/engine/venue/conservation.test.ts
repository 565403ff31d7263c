import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Dec } from '../../../engine/decimal.js';
import type { SimVenue } from '../../../engine/venue/sim-venue.js';
import { startTestService, type TestService } from '../../helpers.js';
import { checkInvariants } from '../../invariants.js';
import { Trading } from '../../api/trading-kit.js';

const TO = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed';
const ZERO = '0x0000000000000000000000000000000000000000';

type Cmd =
  | { k: 'buy'; u: number; m: number; o: number; size: number }
  | { k: 'sell'; u: number; m: number; o: number; pct: number; price: number }
  | { k: 'bid'; u: number; m: number; o: number; size: number; price: number }
  /** A pair of orders at the midpoint, one per user and outcome, same side: they mint or merge full sets. */
  | { k: 'mid'; u: number; m: number; o: number; side: 'buy' | 'sell'; size: number; pct: number }
  | { k: 'split'; u: number; m: number; pct: number }
  | { k: 'merge'; u: number; m: number; pct: number }
  | { k: 'resolve'; m: number; o: number }
  | { k: 'redeem'; u: number; m: number }
  | { k: 'withdraw'; u: number; pct: number; revert: boolean };

const U = fc.integer({ min: 0, max: 1 });
const M = fc.integer({ min: 0, max: 1 });
const O = fc.integer({ min: 0, max: 1 });
/** Percent of what the user holds (free pUSD or free shares) a command uses; above 100 is refused. */
const PCT = fc.integer({ min: 1, max: 120 });
const cmd: fc.Arbitrary<Cmd> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({ k: fc.constant('buy' as const), u: U, m: M, o: O, size: fc.integer({ min: 1, max: 40 }) }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      k: fc.constant('sell' as const),
      u: U,
      m: M,
      o: O,
      pct: PCT,
      price: fc.integer({ min: 1, max: 99 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      k: fc.constant('bid' as const),
      u: U,
      m: M,
      o: O,
      size: fc.integer({ min: 5, max: 30 }),
      price: fc.integer({ min: 1, max: 99 }),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      k: fc.constant('mid' as const),
      u: U,
      m: M,
      o: O,
      side: fc.constantFrom('buy' as const, 'sell' as const),
      size: fc.integer({ min: 5, max: 30 }),
      pct: PCT,
    }),
  },
  { weight: 3, arbitrary: fc.record({ k: fc.constant('split' as const), u: U, m: M, pct: PCT }) },
  { weight: 3, arbitrary: fc.record({ k: fc.constant('merge' as const), u: U, m: M, pct: PCT }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('resolve' as const), m: M, o: O }) },
  { weight: 3, arbitrary: fc.record({ k: fc.constant('redeem' as const), u: U, m: M }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('withdraw' as const), u: U, pct: PCT, revert: fc.boolean() }) },
);

/**
 * Conservation, a property over random sequences of orders (fills against the
 * liquidity provider and between users, resting bids and asks, orders at the market's midpoint on
 * either outcome, so that a buy of one outcome meets a buy of the other (full sets minted) and a
 * sell of one a sell of the other (merged): complementary matching), splits, merges, resolutions,
 * redeems and withdrawals, each through the real HTTP path: after every command no balance or
 * position is negative; after every sequence the shared invariant check (test/invariants.ts) holds —
 * every wallet explained by its trades and wallet operations, per condition YES = NO shares in
 * existence (= sets split − merged, with what the liquidity provider minted accounted), total pUSD
 * moved only by wallet operations and trades with the liquidity provider.
 */
describe('conservation over random sequences (fast-check)', () => {
  let svc: TestService;
  const tr = new Trading(() => svc);
  let markets: { condition_id: string; tokens: { token_id: string }[] }[];
  let run = 0;
  /** Legs of complementary trades (mint, merge) seen over every sequence. */
  const complementary = new Set<string>();

  beforeAll(async () => {
    svc = await startTestService({
      env: { SIM_MAKER_REFILL_MS: '3600000', SIM_INITIAL_PUSD: '100', SIM_BLOCK_DELAY_MS: '50' },
    });
    await tr.init([]);
    markets = (await svc.call('GET', '/v2/trade/markets?limit=500')).body.markets.filter(
      (m: any) => m.tick_size === '0.01',
    );
  });
  afterAll(() => svc.close());

  const noNegative = () => {
    const d = (x: string) => new Dec(x);
    for (const w of (svc.services.venue as SimVenue).walletRows()) {
      const [pusd, reserved] = [d(w.pusd), d(w.reserved)];
      expect(pusd.gte(0) && reserved.gte(0) && pusd.gte(reserved), `pUSD of ${w.userId}`).toBe(true);
      for (const [t, s, r, c] of w.positions) {
        const [shares, held, cost] = [d(s), d(r), d(c)];
        expect(shares.gte(0) && held.gte(0) && shares.gte(held) && cost.gte(0), `position ${t} of ${w.userId}`).toBe(
          true,
        );
      }
    }
  };

  it('holds for every sequence', { timeout: 180_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(cmd, { minLength: 5, maxLength: 30 }), async (cmds) => {
        run++;
        const users = [0, 1].map((i) => `c${run}_${i}`);
        const ids: string[] = [];
        for (const u of users) {
          await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: u } });
          ids.push(
            (await svc.call('GET', '/v2/trade/account', { headers: { 'x-partner-user-id': u } })).body.user
              .platform_user_id,
          );
        }
        const venue = svc.services.venue;
        /** `pct` percent of `of` (≥ 0.01), 2 decimals. */
        const part = (of: Dec, pct: number) =>
          Dec.max(of.times(pct).div(100).toDecimalPlaces(2, Dec.ROUND_DOWN), '0.01').toFixed();
        const mk = [markets[2 * run]!, markets[2 * run + 1]!];
        const h = (u: number) => ({ 'x-partner-user-id': users[u]! });
        // the midpoint of each market's first outcome (the other's is 1 − it): resting orders there
        // rest between the liquidity provider's quotes, and meet each other across the outcomes
        const mids = mk.map((m) => {
          const t = venue.touch(m.tokens[0]!.token_id);
          return t.bid && t.ask
            ? t.bid.plus(t.ask).div(2).toDecimalPlaces(2)
            : t.bid
              ? t.bid.plus('0.01')
              : t.ask
                ? t.ask.minus('0.01')
                : new Dec('0.5');
        });
        for (const c of cmds) {
          let r: { status: number } = { status: 0 };
          switch (c.k) {
            case 'buy':
              r = await tr.post(users[c.u]!, {
                symbol: mk[c.m]!.tokens[c.o]!.token_id,
                side: 'buy',
                type: 'LIMIT',
                price: '0.99',
                size: String(c.size),
                time_in_force: 'IOC',
              });
              break;
            case 'sell': {
              const token = mk[c.m]!.tokens[c.o]!.token_id;
              const size = part(venue.available(ids[c.u]!, token).shares, c.pct);
              // below the resting minimum it trades now or not at all (IOC)
              r = await tr.post(users[c.u]!, {
                symbol: token,
                side: 'sell',
                type: 'LIMIT',
                price: String(c.price / 100),
                size,
                time_in_force: Number(size) < 5 ? 'IOC' : 'GTC',
              });
              break;
            }
            case 'bid':
              r = await tr.post(users[c.u]!, {
                symbol: mk[c.m]!.tokens[c.o]!.token_id,
                side: 'buy',
                type: 'LIMIT',
                price: String(c.price / 100),
                size: String(c.size),
              });
              break;
            case 'mid': {
              // user u on outcome o, then the other user on the other outcome, same side, both at the midpoint
              for (const [u, o] of [
                [c.u, c.o],
                [1 - c.u, 1 - c.o],
              ] as const) {
                const token = mk[c.m]!.tokens[o]!.token_id;
                const price = (o === 0 ? mids[c.m]! : new Dec(1).minus(mids[c.m]!)).toFixed();
                const size = c.side === 'buy' ? String(c.size) : part(venue.available(ids[u]!, token).shares, c.pct);
                r = await tr.post(users[u]!, {
                  symbol: token,
                  side: c.side,
                  type: 'LIMIT',
                  price,
                  size,
                  time_in_force: Number(size) < 5 ? 'IOC' : 'GTC',
                });
                expect([200, 400, 409, 422]).toContain(r.status);
              }
              break;
            }
            case 'split':
              r = await svc.call('POST', '/v2/trade/positions/split', {
                headers: h(c.u),
                body: {
                  condition_id: mk[c.m]!.condition_id,
                  amount: part(venue.available(ids[c.u]!, mk[c.m]!.tokens[0]!.token_id).usd.div(2), c.pct),
                },
              });
              break;
            case 'merge': {
              const [y, n] = mk[c.m]!.tokens.map((t) => venue.available(ids[c.u]!, t.token_id).shares);
              r = await svc.call('POST', '/v2/trade/positions/merge', {
                headers: h(c.u),
                body: { condition_id: mk[c.m]!.condition_id, amount: part(Dec.min(y!, n!), c.pct) },
              });
              break;
            }
            case 'resolve':
              if (!svc.services.venue.marketStatus(mk[c.m]!.condition_id)?.resolved) {
                await (svc.services.venue as SimVenue).resolveMarket(
                  mk[c.m]!.condition_id,
                  mk[c.m]!.tokens[c.o]!.token_id,
                );
              }
              r = { status: 200 };
              break;
            case 'redeem':
              r = await svc.call('POST', '/v2/trade/positions/redeem', {
                headers: h(c.u),
                body: { condition_id: mk[c.m]!.condition_id },
              });
              break;
            case 'withdraw':
              r = await svc.call('POST', '/v2/trade/withdraw', {
                headers: h(c.u),
                body: {
                  to_address: c.revert ? ZERO : TO,
                  amount: part(venue.available(ids[c.u]!, mk[0]!.tokens[0]!.token_id).usd.div(4), c.pct),
                },
              });
              break;
          }
          expect([200, 400, 409, 422]).toContain(r.status);
          noNegative();
        }
        await checkInvariants(svc.services, { acknowledged: tr.acknowledged, skip: ['strategies'] });
        for (const e of (venue as SimVenue).orderRows())
          for (const f of e.fills) if (/-(mint|merge)-[tm]$/.test(f.tradeId)) complementary.add(f.tradeId);
      }),
      {
        numRuns: 20,
        // one sequence that surely mints and merges between the users, besides the random ones
        examples: [
          [
            [
              { k: 'split', u: 0, m: 0, pct: 50 },
              { k: 'split', u: 1, m: 0, pct: 50 },
              { k: 'mid', u: 0, m: 0, o: 0, side: 'buy', size: 10, pct: 1 },
              { k: 'mid', u: 1, m: 0, o: 0, side: 'sell', size: 5, pct: 20 },
            ],
          ],
        ],
      },
    );
    // the sequences did mint and merge full sets between users (both legs of a trade are users')
    const between = (kind: string) =>
      [...complementary].some((t) => t.endsWith(`-${kind}-t`) && complementary.has(t.replace(/-t$/, '-m')));
    expect(between('mint')).toBe(true);
    expect(between('merge')).toBe(true);
  });
});
