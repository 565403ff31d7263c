import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../engine/clock.js';
import { Dec } from '../../../engine/decimal.js';
import {
  Portfolio,
  SNAPSHOT_GAP_PER_DURATION,
  SNAPSHOT_WINDOW_SECONDS,
  WINDOWS,
  type PortfolioFacts,
  type PortfolioSnapshot,
  type SnapshotPort,
} from '../../../engine/data/portfolio.js';
import type { CashMove, RecordedBatch, TapeTrade, TradeHistoryFeed, TraderFill } from '../../../engine/data/records.js';
import { TradeHistory } from '../../../engine/data/history.js';
import { PORTFOLIO_SNAPSHOTS, storeSnapshots } from '../../../engine/data/portfolio-snapshots.js';
import { SqliteStore } from '../../../engine/store/sqlite.js';

const A = '0x' + 'a1'.repeat(20);
const B = '0x' + 'b2'.repeat(20);
const T = '777';
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

let seq = 0;
const marks = new Map<string, Dec>();
const facts: PortfolioFacts = {
  token: (tokenId) => ({
    conditionId: 'c',
    question: 'Will it?',
    slug: 'sports-final',
    outcome: 'Yes',
    tag: tokenId === T ? null : 'politics',
    resolved: false,
    winner: null,
  }),
  mark: (tokenId) => marks.get(tokenId) ?? null,
};

function at(ms: number) {
  seq++;
  const s = Math.floor(ms / 1000);
  return { blockTimestamp: s - (s % 2), logIndex: seq, transactionHash: `0x${seq}`, atMs: ms };
}

function fill(address: string, side: 'BUY' | 'SELL', size: string, price: string, ms: number): TraderFill {
  return {
    ...at(ms),
    _id: `f${seq}`,
    tradeId: `t${seq}`,
    address,
    userId: null,
    orderId: null,
    role: 'taker',
    conditionId: 'c',
    tokenId: T,
    outcome: 'Yes',
    side,
    price,
    size,
    notionalUsd: new Dec(price).times(size).toFixed(),
    feeUsd: '0',
    source: 'venue',
  };
}

function print(price: string, ms: number): TapeTrade {
  const p = at(ms);
  return {
    ...p,
    _id: `p${seq}`,
    tradeId: `p${seq}`,
    conditionId: 'c',
    tokenId: T,
    outcome: 'Yes',
    side: 'BUY',
    price,
    size: '1',
    notionalUsd: price,
    feeUsd: '0',
    maker: null,
    taker: null,
    source: 'capture',
  };
}

function credit(address: string, usd: string, ms: number): CashMove {
  return {
    ...at(ms),
    _id: `c${seq}`,
    address,
    userId: null,
    kind: 'credit',
    conditionId: null,
    pusdDelta: usd,
    shares: [],
    source: 'venue',
  };
}

/** A combo's cash movement (`kind` its buy, payout or loss) of `address`, the combo's id as its condition. */
function comboMove(address: string, kind: CashMove['kind'], comboId: string, usd: string, ms: number): CashMove {
  return { ...credit(address, usd, ms), kind, conditionId: comboId };
}

const batch = (b: Partial<RecordedBatch>): RecordedBatch => ({ trades: [], fills: [], cash: [], ...b });

describe('Portfolio', () => {
  it('slides the windows forward as time passes: a day-old trade leaves 1d, stays in 7d and all', () => {
    const clock = new ManualClock(Date.UTC(2026, 5, 1, 12));
    const p = new Portfolio(facts, clock);
    const t0 = clock.now();
    marks.set(T, new Dec('0.5'));
    p.apply(batch({ cash: [credit(A, '100', t0)] }));
    p.apply(batch({ fills: [fill(A, 'BUY', '10', '0.4', t0), fill(A, 'SELL', '10', '0.6', t0)] }));
    p.apply(batch({ fills: [fill(B, 'BUY', '100', '0.5', t0), fill(B, 'SELL', '100', '0.45', t0)] }));
    expect(p.leaderboard('1d', 'pnl').map((r) => [r.rank, r.address, r.pnl.toFixed()])).toEqual([
      [1, A, '2'],
      [2, B, '-5'],
    ]);
    expect(p.leaderboard('1d', 'volume').map((r) => r.address)).toEqual([B, A]);
    clock.advance(DAY + HOUR);
    expect(p.leaderboard('1d', 'pnl')).toEqual([]);
    expect(p.windowFigures(A, '1d')).toBeNull();
    expect(p.leaderboard('7d', 'pnl').map((r) => [r.address, r.pnl.toFixed(), r.figures.trades])).toEqual([
      [A, '2', 2],
      [B, '-5', 2],
    ]);
    clock.advance(7 * DAY);
    expect(p.leaderboard('7d', 'pnl')).toEqual([]);
    expect(p.leaderboard('30d', 'pnl').length).toBe(2);
    expect(p.leaderboard('all', 'pnl').map((r) => [r.address, r.pnl.toFixed()])).toEqual([
      [A, '2'],
      [B, '-5'],
    ]);
    // the credit is a flow: not PnL, not on the board by itself
    expect(p.trader(A)!.flows.toFixed()).toBe('100');
  });

  it('a win or a loss is a closed position, by its realized PnL since it opened (partial sells are one)', () => {
    const clock = new ManualClock(Date.UTC(2026, 5, 1, 12));
    const p = new Portfolio(facts, clock);
    const t0 = clock.now();
    marks.set(T, new Dec('0.5'));
    // opened, sold in two parts at a gain (+1, +0.5): one position won
    p.apply(batch({ fills: [fill(A, 'BUY', '10', '0.4', t0), fill(A, 'SELL', '5', '0.6', t0)] }));
    p.apply(batch({ fills: [fill(A, 'SELL', '5', '0.5', t0)] }));
    // opened again and closed at a loss (−2): its life starts over, one position lost
    p.apply(batch({ fills: [fill(A, 'BUY', '10', '0.5', t0), fill(A, 'SELL', '10', '0.3', t0)] }));
    // closed at exactly zero: a closed position, neither won nor lost (in the rate's denominator)
    p.apply(batch({ fills: [fill(A, 'BUY', '10', '0.5', t0), fill(A, 'SELL', '10', '0.5', t0)] }));
    // a sell at a gain that leaves shares: not closed, none of them
    p.apply(batch({ fills: [fill(A, 'BUY', '10', '0.5', t0), fill(A, 'SELL', '5', '0.9', t0)] }));
    for (const w of WINDOWS) {
      const f = w === 'all' ? p.trader(A)!.total : p.windowFigures(A, w)!.figures;
      expect([w, f.wins, f.losses, f.evens, f.winRate().toDecimalPlaces(4).toFixed()]).toEqual([w, 1, 1, 1, '0.3333']);
    }
    expect(p.trader(A)!.total.realized.toFixed()).toBe('1.5');
  });

  it('a combo is held at its cost: no PnL until it pays out or loses, then in the window it happened in', () => {
    const clock = new ManualClock(Date.UTC(2026, 5, 1, 12));
    const p = new Portfolio(facts, clock);
    const t0 = clock.now();
    p.apply(batch({ cash: [credit(A, '100', t0), comboMove(A, 'combo_debit', 'co_1', '-10', t0)] }));
    p.apply(batch({ cash: [comboMove(A, 'combo_debit', 'co_2', '-4', t0)] }));
    expect(WINDOWS.map((w) => p.windowFigures(A, w)?.pnl.toFixed() ?? null)).toEqual(['0', '0', '0', '0']);
    expect(p.positions(A)).toEqual([]);
    clock.advance(2 * DAY);
    // co_1 lost and co_2 paid 9, two days after they were bought (outside 1d when bought)
    p.apply(
      batch({
        cash: [
          comboMove(A, 'combo_loss', 'co_1', '0', clock.now()),
          comboMove(A, 'combo_payout', 'co_2', '9', clock.now()),
        ],
      }),
    );
    expect(WINDOWS.map((w) => p.windowFigures(A, w)!.pnl.toFixed())).toEqual(['-5', '-5', '-5', '-5']);
    expect(p.trader(A)!.total.realized.toFixed()).toBe('-5');
    // market positions only in the win rate
    expect([p.trader(A)!.total.wins, p.trader(A)!.total.losses]).toEqual([0, 0]);
  });

  it('a combo lost in a window is on its board even when nothing else of the trader is in it', () => {
    const clock = new ManualClock(Date.UTC(2026, 5, 1, 12));
    const p = new Portfolio(facts, clock);
    // bought, then lost 23 hours later; two hours on, the buy has left the 1d window, the loss has not
    p.apply(batch({ cash: [comboMove(B, 'combo_debit', 'co_b', '-10', clock.now())] }));
    clock.advance(23 * HOUR);
    p.apply(batch({ cash: [comboMove(B, 'combo_loss', 'co_b', '0', clock.now())] }));
    clock.advance(2 * HOUR);
    expect(p.windowFigures(B, '1d')!.pnl.toFixed()).toBe('-10');
    for (const w of WINDOWS)
      expect([
        w,
        p
          .leaderboard(w, 'pnl')
          .find((r) => r.address === B)
          ?.pnl.toFixed(),
      ]).toEqual([w, '-10']);
  });

  it("a finite window's PnL is the change of marked equity net of flows: held shares move with the marks", () => {
    const clock = new ManualClock(Date.UTC(2026, 5, 1, 12));
    const p = new Portfolio(facts, clock);
    const t0 = clock.now();
    // bought 10 at 0.4 three days ago; the tape printed 0.45 two days ago; marked at 0.7 now
    p.apply(batch({ fills: [fill(A, 'BUY', '10', '0.4', t0 - 3 * DAY)], trades: [print('0.45', t0 - 2 * DAY)] }));
    // a small trade today puts it on the 1d board
    p.apply(batch({ fills: [fill(A, 'BUY', '1', '0.6', t0)] }));
    marks.set(T, new Dec('0.7'));
    // 1d: −0.6 of cash, 11 × 0.7 now − 10 × 0.45 then = 2.6
    expect(p.windowFigures(A, '1d')!.pnl.toFixed()).toBe('2.6');
    // 7d: −4.6 of cash + 7.7 − 0 = 3.1 (nothing was held a week ago)
    expect(p.windowFigures(A, '7d')!.pnl.toFixed()).toBe('3.1');
    // all: realized only
    expect(p.windowFigures(A, 'all')!.pnl.toFixed()).toBe('0');
    expect(p.unrealized(A).toFixed()).toBe('3.1');
    expect([...p.trader(A)!.categories.keys()]).toEqual(['sports']);
  });

  it('open() replays the history, then live batches, a record the replay gave applied once', async () => {
    const clock = new ManualClock(Date.UTC(2026, 5, 1, 12));
    const t0 = clock.now();
    const first = fill(A, 'BUY', '10', '0.4', t0);
    const live = fill(A, 'SELL', '4', '0.5', t0);
    let listener: ((b: RecordedBatch) => void) | undefined;
    const feed: TradeHistoryFeed = {
      onRecorded: (l) => (listener = l),
      async replay(visit) {
        // a batch commits while the replay runs, and the replay sees it too
        listener!(batch({ fills: [live] }));
        await visit(batch({ fills: [first, live] }));
      },
    };
    const p = await Portfolio.open(feed, facts, clock);
    expect(p.positions(A)[0]!.shares.toFixed()).toBe('6');
    listener!(batch({ fills: [fill(A, 'SELL', '1', '0.5', t0)] }));
    expect(p.positions(A)[0]!.shares.toFixed()).toBe('5');
    expect(p.trader(A)!.total.realized.toFixed()).toBe('0.5');
  });

  it('keeps the applied ids of the snapshot window only, pruned as records pass: none applied twice', () => {
    const clock = new ManualClock(Date.UTC(2026, 5, 1, 12));
    const p = new Portfolio(facts, clock);
    const t0 = clock.now();
    // a fill a second for 6,000 s: past the pruning threshold, twenty times the window
    const fills = Array.from({ length: 6_000 }, (_, i) => fill(A, 'BUY', '1', '0.5', t0 + i * 1000));
    for (let i = 0; i < fills.length; i += 100) p.apply(batch({ fills: fills.slice(i, i + 100) }));
    const bought = p.trader(A)!.total.volume.toFixed();
    expect(bought).toBe('3000');
    // the last ones again (a replay after a snapshot gives them): not applied twice
    p.apply(batch({ fills: fills.slice(-100) }));
    expect(p.trader(A)!.total.volume.toFixed()).toBe(bought);
    // the snapshot lists exactly the records of the window
    const last = fills[fills.length - 1]!.blockTimestamp;
    const inWindow = fills.filter((f) => f.blockTimestamp >= last - SNAPSHOT_WINDOW_SECONDS);
    expect(
      p
        .snapshot()
        .applied.map(([key]) => key)
        .sort(),
    ).toEqual(inWindow.map((f) => `f:${f._id}`).sort());
  });

  it('with every record inside the window, its PnL is realized + unrealized − fees (property)', () => {
    const U = '888';
    const op = fc.record({
      kind: fc.constantFrom('BUY' as const, 'SELL' as const, 'split' as const, 'merge' as const),
      token: fc.constantFrom(T, U),
      size: fc.integer({ min: 1, max: 3000 }),
      cents: fc.integer({ min: 1, max: 99 }),
    });
    fc.assert(
      fc.property(fc.array(op, { minLength: 1, maxLength: 40 }), fc.integer({ min: 1, max: 99 }), (ops, mark) => {
        const clock = new ManualClock(Date.UTC(2026, 5, 1, 12));
        const p = new Portfolio(facts, clock);
        marks.set(T, new Dec(mark).div(100));
        marks.set(U, new Dec(100 - mark).div(100));
        const held = (t: string) => p.lots.position(A, t)?.shares ?? new Dec(0);
        for (const o of ops) {
          // disposals never exceed what is held here (shares held before the window are another test's)
          const most = o.kind === 'SELL' ? held(o.token) : o.kind === 'merge' ? Dec.min(held(T), held(U)) : null;
          const wanted = new Dec(o.size).div(100);
          if (most && most.isZero()) continue;
          const size = (most ? Dec.min(most, wanted) : wanted).toFixed();
          if (o.kind === 'BUY' || o.kind === 'SELL') {
            const f = { ...fill(A, o.kind, size, new Dec(o.cents).div(100).toFixed(), clock.now()), tokenId: o.token };
            p.apply(batch({ fills: [{ ...f, feeUsd: new Dec(o.cents).div(1000).toFixed() }] }));
          } else {
            const sign = o.kind === 'split' ? 1 : -1;
            const c: CashMove = {
              ...credit(A, new Dec(size).times(-sign).toFixed(), clock.now()),
              kind: o.kind,
              conditionId: 'c',
              shares: [T, U].map((tokenId) => ({ tokenId, outcome: 'x', delta: new Dec(size).times(sign).toFixed() })),
            };
            p.apply(batch({ cash: [c] }));
          }
        }
        const w = p.windowFigures(A, '7d');
        const total = p.trader(A)?.total;
        if (w) expect(w.pnl.toFixed()).toBe(total!.realized.plus(p.unrealized(A)).minus(total!.fees).toFixed());
      }),
      { numRuns: 200 },
    );
  });

  it('snapshot + the replay after it = full replay, out-of-order commits included (property)', async () => {
    const step = fc.record({
      kind: fc.constantFrom('BUY' as const, 'SELL' as const, 'print' as const, 'credit' as const),
      who: fc.constantFrom(A, B),
      size: fc.integer({ min: 1, max: 500 }),
      cents: fc.integer({ min: 1, max: 99 }),
      // chain seconds after the previous record: two days of history over the run
      gap: fc.integer({ min: 0, max: 200 }),
      // committed after the next record (an out-of-order commit within the snapshot's window)
      late: fc.boolean(),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 60 }), fc.nat(), async (steps, cut) => {
        const clock = new ManualClock(Date.UTC(2026, 5, 3, 12));
        marks.set(T, new Dec('0.42'));
        let ms = clock.now() - 2 * DAY;
        const records = steps.map((o) => {
          ms += o.gap * 1000;
          const price = new Dec(o.cents).div(100).toFixed();
          const size = new Dec(o.size).div(10).toFixed();
          if (o.kind === 'print') return batch({ trades: [print(price, ms)] });
          if (o.kind === 'credit') return batch({ cash: [credit(o.who, size, ms)] });
          return batch({ fills: [fill(o.who, o.kind, size, price, ms)] });
        });
        // commit order: a late record swaps with the next one, from the one before the snapshot on (the
        // snapshot holds the later record, the earlier commits after it); before it, commits are in
        // chain order (a live run applies out-of-order commits in commit order, a replay in chain order)
        const k = cut % (records.length + 1);
        const commits = [...records];
        for (let i = Math.max(0, k - 1); i + 1 < commits.length; i++) {
          if (steps[i]!.late) [commits[i], commits[i + 1]] = [commits[i + 1]!, commits[i]!];
        }
        const stored: RecordedBatch[] = [];
        const rows = () => stored.flatMap((b) => [...b.trades, ...b.fills, ...b.cash]);
        const listeners: ((b: RecordedBatch) => void)[] = [];
        const feed: TradeHistoryFeed = {
          onRecorded: (l) => void listeners.push(l),
          async replay(visit, _size, from) {
            const all = rows()
              .filter((r) => r.blockTimestamp >= (from?.fromBlockTimestamp ?? 0))
              .sort((a, b) => a.blockTimestamp - b.blockTimestamp || a.logIndex - b.logIndex);
            for (const r of all) {
              await visit(
                'kind' in r ? batch({ cash: [r] }) : 'role' in r ? batch({ fills: [r] }) : batch({ trades: [r] }),
              );
            }
          },
        };
        let saved: PortfolioSnapshot | null = null;
        const port: SnapshotPort = {
          load: async () => (saved ? (JSON.parse(JSON.stringify(saved)) as PortfolioSnapshot) : null),
          save: async (snap) => void (saved = snap),
          countBefore: async (b) => {
            const before = (xs: { blockTimestamp: number }[]) => xs.filter((r) => r.blockTimestamp < b).length;
            const all = stored;
            return {
              trades: before(all.flatMap((x) => x.trades)),
              fills: before(all.flatMap((x) => x.fills)),
              cash: before(all.flatMap((x) => x.cash)),
            };
          },
        };
        // the first run commits a prefix and snapshots it; the rest commits while it is down
        const first = await Portfolio.open(feed, facts, clock, { port });
        for (const b of commits.slice(0, k)) {
          stored.push(b);
          for (const l of listeners) l(b);
        }
        saved = first.snapshot();
        stored.push(...commits.slice(k));
        const restarted = await Portfolio.open(feed, facts, clock, { port });
        expect(restarted.startedFrom).not.toBeNull();
        // what the first run applied, in its commit order, then every other record once, in chain order
        const once = new Portfolio(facts, clock);
        for (const b of commits.slice(0, k)) once.apply(b);
        for (const b of records.filter((r) => !commits.slice(0, k).includes(r))) once.apply(b);
        expect(view(restarted)).toEqual(view(once));
        // with the commits before the snapshot in chain order, that is the full replay
        const full = await Portfolio.open(feed, facts, clock);
        if (!(k > 0 && steps[k - 1]!.late)) expect(view(restarted)).toEqual(view(full));
      }),
      { numRuns: 150 },
    );
  });
});

describe('periodic snapshots', () => {
  it('come no sooner than SNAPSHOT_GAP_PER_DURATION times the last one took, whatever the records', async () => {
    const clock = new ManualClock(Date.UTC(2026, 5, 1, 12));
    let listener: ((b: RecordedBatch) => void) | undefined;
    const feed: TradeHistoryFeed = { onRecorded: (l) => (listener = l), replay: async () => {} };
    const saves: number[] = [];
    const port = {
      load: async () => null,
      countBefore: async () => ({ trades: 0, fills: 0, cash: 0 }),
      // writing a snapshot takes 2 s of the clock
      save: async () => {
        saves.push(clock.now());
        clock.advance(2_000);
      },
    };
    const p = await Portfolio.open(feed, facts, clock, { port, everyRecords: 1, everyMs: 1 });
    const land = async () => {
      listener!(batch({ fills: [fill(A, 'BUY', '1', '0.4', clock.now())] }));
      // a due snapshot starts on the next turn and is built in slices: let it end
      for (let i = 0; i < 50; i++) await new Promise((r) => setImmediate(r));
    };
    await land(); // the first is due at once
    expect(saves.length).toBe(1);
    clock.advance(SNAPSHOT_GAP_PER_DURATION * 2_000 - 1);
    await land(); // one ms short of the gap: not due, though everyRecords and everyMs are met
    expect(saves.length).toBe(1);
    clock.advance(1);
    await land();
    expect(saves.length).toBe(2);
    expect(p.trader(A)).toBeDefined();
  });
});

describe('snapshots of large aggregates', () => {
  /** A portfolio of `n` traders, each with one fill at a distinct chain position. */
  function many(n: number, clock: ManualClock): Portfolio {
    const p = new Portfolio(facts, clock);
    const t0 = clock.now() - DAY;
    for (let i = 0; i < n; i++) {
      const who = '0x' + i.toString(16).padStart(40, '0');
      p.apply(batch({ fills: [fill(who, i % 3 ? 'BUY' : 'SELL', String(1 + (i % 7)), '0.5', t0 + i * 2000)] }));
    }
    return p;
  }

  it('taken in slices while batches land, a snapshot is the aggregates at its end', async () => {
    const clock = new ManualClock(Date.UTC(2026, 5, 1, 12));
    const p = many(2_000, clock);
    const first = '0x' + '0'.repeat(40);
    const sliced = p.snapshotSliced(0); // the loop runs after every position
    // the loop runs between slices: a trader already serialized trades again, a new one appears
    await new Promise((r) => setImmediate(r));
    p.apply(batch({ fills: [fill(first, 'BUY', '3', '0.25', clock.now())] }));
    p.apply(batch({ fills: [fill(A, 'BUY', '2', '0.4', clock.now())] }));
    const snap = await sliced;
    expect(snap).toEqual(p.snapshot());
    expect(snap.positions.filter((q) => q[0] === first)[0]![5][0]).toBe('3'); // sold 1 beyond its lots, then bought 3
    expect(snap.traders.some((t) => t[0] === A)).toBe(true);
  });

  it('the store keeps a snapshot in parts and gives it back whole; a new one replaces it', async () => {
    const store = await SqliteStore.open(null);
    try {
      const history = await TradeHistory.open(store);
      const clock = new ManualClock(Date.UTC(2026, 5, 1, 12));
      const port = await storeSnapshots(store, history, () => clock.now());
      const p = many(9_000, clock);
      const snap = await p.snapshotSliced();
      await port.save(snap);
      expect(await port.load()).toEqual(snap);
      p.apply(batch({ fills: [fill(A, 'BUY', '2', '0.4', clock.now())] }));
      const next = p.snapshot();
      await port.save(next);
      expect(await port.load()).toEqual(next);
      // the previous snapshot's parts are gone: a header and the parts of the current one
      const docs = await (
        await store.collection<{ _id: string; gen?: string; parts?: number }>(PORTFOLIO_SNAPSHOTS)
      ).find({});
      const head = docs.find((d) => d._id === 'head')!;
      expect(head.parts).toBeGreaterThan(2);
      expect(docs.filter((d) => d._id.startsWith(`part:${head.gen}:`)).length).toBe(head.parts);
      expect(docs.length).toBe(head.parts! + 1);
    } finally {
      await store.close();
    }
  });
});

/** Everything the API reads of the aggregates, as plain strings. */
function view(p: Portfolio) {
  const boards = WINDOWS.flatMap((w) =>
    (['pnl', 'volume'] as const).map((by) =>
      p.leaderboard(w, by).map((r) => [r.rank, r.address, r.pnl.toFixed(), r.figures.volume.toFixed()]),
    ),
  );
  const traders = [A, B].map((a) => {
    const t = p.trader(a);
    return {
      total: t && { ...t.total, categories: [...t.categories], days: [...t.realizedByDay], flows: t.flows.toFixed() },
      positions: p.positions(a).map((x) => {
        const { address, tokenId, shares, cost, realized, acquiredShares, acquiredCost, disposedShares } = x;
        const more = [x.uncoveredShares, x.proceeds, x.fees, x.last, x.lots()];
        return [address, tokenId, shares, cost, realized, acquiredShares, acquiredCost, disposedShares, ...more];
      }),
      series: p.realizedSeries(a),
      unrealized: p.unrealized(a).toFixed(),
      windows: WINDOWS.map((w) => p.windowFigures(a, w)),
    };
  });
  return JSON.parse(JSON.stringify({ boards, traders })) as unknown;
}
