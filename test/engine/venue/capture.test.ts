import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  CAPTURE_FILE,
  conditionIdOf,
  parseCapture,
  questionOf,
  type CaptureEvent,
} from '../../../engine/venue/capture.js';
import { loadCatalogue } from '../../../engine/venue/markets.js';

const HEADER =
  'event_slug,timestamp_ms,timestamp_iso,timestamp_est,event_type,price,size,size_change,side,best_bid,' +
  'best_ask,token_id,is_winning_token,outcome,time_since_ticker_change_ms,ticker_changed_recently,' +
  'old_tick_size,new_tick_size,market_resolved,error_message';
const SLUG = 'btc-15min-up-or-down-09:15';
const row = (
  ms: number,
  type: string,
  token: string,
  outcome: string,
  f: {
    price?: string;
    size?: string;
    bid?: string;
    ask?: string;
    win?: string;
    oldTick?: string;
    newTick?: string;
    err?: string;
  } = {},
) =>
  [
    SLUG,
    ms,
    'iso',
    'est',
    type,
    f.price ?? '',
    f.size ?? '',
    '',
    '',
    f.bid ?? '',
    f.ask ?? '',
    token,
    f.win ?? 'false',
    outcome,
    '',
    'false',
    f.oldTick ?? '',
    f.newTick ?? '',
    'false',
    f.err ?? '',
  ].join(',');

describe('capture parser', () => {
  it('skips error rows, N/A, missing values, repeated headers; sorts by time; rounds sizes; resolves', () => {
    const text = [
      HEADER,
      row(100, 'market_open', '1', 'Up'),
      row(101, 'market_open', '2', 'Down'),
      row(300, 'bid', '1', 'Up', { price: '0.95', size: '232.58999999999992', bid: '0.95', ask: 'N/A' }),
      row(200, 'ask', '1', 'Up', { price: '0.97', size: '50', bid: 'N/A', ask: 'N/A' }), // out of order in the file
      'x,150,iso,est,error,,,,,,,,,,,,,,true,WebSocket connection closed unexpectedly',
      row(250, 'last_trade_price', '1', 'Up', { price: 'N/A' }), // a value needed is N/A: skipped
      row(260, 'bid', '2', 'Down', { price: '', size: '5' }), // missing price: skipped
      HEADER, // a repeated header
      row(400, 'tick_size_change', '1', 'Up', { oldTick: '0.01', newTick: '0.001' }),
      row(410, 'last_trade_price', '1', 'Up', { price: '0.96', size: '10' }),
      row(500, 'market_resolved', '2', 'Down', { win: 'false' }),
      row(500, 'market_resolved', '1', 'Up', { win: 'true' }),
      'short,row',
      '',
    ].join('\n');
    const c = parseCapture(text);
    expect(c.skips).toEqual({ errorRows: 1, unusable: 2, naValues: 4, malformed: 2, losingResolutionRows: 1 });
    expect(c.markets).toEqual([
      {
        slug: SLUG,
        conditionId: conditionIdOf(SLUG),
        question: 'BTC Up or Down - 15 minutes from 09:15 ET',
        tokens: [
          { tokenId: '1', outcome: 'Up' },
          { tokenId: '2', outcome: 'Down' },
        ],
        firstSeenMs: 100,
      },
    ]);
    expect(c.events.map((e) => [e.kind, e.atMs])).toEqual([
      ['level', 200],
      ['level', 300],
      ['tick', 400],
      ['trade', 410],
      ['resolved', 500],
    ]);
    expect(c.events[1]).toMatchObject({ side: 'buy', tokenId: '1' });
    expect(String((c.events[1] as { size: unknown }).size)).toBe('232.59');
    expect(c.events[4]).toEqual({ kind: 'resolved', atMs: 500, conditionId: conditionIdOf(SLUG), winningTokenId: '1' });
    expect([c.startMs, c.endMs]).toEqual([200, 500]);
  });

  it('never throws on garbage', () => {
    expect(parseCapture('').events).toEqual([]);
    expect(parseCapture(`${HEADER}\n,,,,\nnot,a,row,at,all`).skips.malformed).toBe(2);
  });

  it('condition ids are keccak256 of the slug (0x + 64 hex), questions from the slug', () => {
    expect(conditionIdOf(SLUG)).toMatch(/^0x[0-9a-f]{64}$/);
    expect(conditionIdOf(SLUG)).toBe(conditionIdOf(SLUG));
    expect(conditionIdOf(SLUG)).not.toBe(conditionIdOf('eth-15min-up-or-down-09:15'));
    expect(questionOf('sol-15min-up-or-down-16:00')).toBe('SOL Up or Down - 15 minutes from 16:00 ET');
    expect(questionOf('something-else')).toBe('something-else');
  });

  it('the real capture: 112 binary markets after the 1,001 others, the counts of the capture README', () => {
    const cat = loadCatalogue();
    const c = cat.capture!;
    expect(c.markets).toHaveLength(112);
    expect(cat.markets).toHaveLength(1113);
    expect(cat.captureTokens!.size).toBe(224);
    expect(c.skips).toMatchObject({ errorRows: 214, unusable: 0, malformed: 0 });
    const count = (k: string) => c.events.filter((e) => e.kind === k).length;
    // 292 captured tick changes, plus 2 × 2 inferred where levels move in 0.001 steps before (or without) one
    // 3,039 bid and 3,472 ask rows, plus 4,989 level events made from their best_bid / best_ask
    expect([count('level'), count('trade'), count('tick'), count('resolved')]).toEqual([
      3039 + 3472 + 4989,
      9406,
      292 + 4,
      104,
    ]);
    expect(c.touchLevels).toBe(4989);
    expect(c.inferredTicks).toBe(2);
    expect(c.events.filter((e) => e.kind === 'tick' && !e.inferred)).toHaveLength(292);
    expect(c.events.every((e, i) => i === 0 || c.events[i - 1]!.atMs <= e.atMs)).toBe(true);
    const m = cat.markets[1001]!;
    expect(m).toMatchObject({ minSize: expect.anything(), negRisk: false });
    expect(m.tickSize.toString()).toBe('0.01');
    expect(cat.tokens.get(m.tokens[0]!.tokenId)!.complementTokenId).toBe(m.tokens[1]!.tokenId);
  });

  describe("the book's touch follows the rows' best_bid / best_ask", () => {
    /** Levels resting per token after `events` (size > 0), as `side price` → size. */
    const restingAfter = (events: readonly CaptureEvent[], tokenId = '1') => {
      const out = new Map<string, string>();
      for (const e of events) {
        if (e.kind !== 'level' || e.tokenId !== tokenId) continue;
        const k = `${e.side} ${e.price.toFixed()}`;
        if (e.size.gt(0)) out.set(k, e.size.toFixed());
        else out.delete(k);
      }
      return Object.fromEntries([...out].sort());
    };
    const levels = (...rows: string[]) =>
      parseCapture(
        [HEADER, row(100, 'market_open', '1', 'Up'), row(101, 'market_open', '2', 'Down'), ...rows].join('\n'),
      );

    it('a synthetic 100-share level each side of the touch; replay levels inside go; one at the touch is it', () => {
      const c = levels(
        row(200, 'ask', '1', 'Up', { price: '0.99', size: '5000', bid: '0.93', ask: '0.95' }),
        row(300, 'ask', '1', 'Up', { price: '0.99', size: '4000', bid: '0.94', ask: '0.96' }),
      );
      expect(
        c.events
          .filter((e) => e.kind === 'level' && e.touch)
          .map((e) => e.kind === 'level' && [e.atMs, e.side, e.price.toFixed(), e.size.toFixed()]),
      ).toEqual([
        [200, 'buy', '0.93', '100'],
        [200, 'sell', '0.95', '100'],
        // the touch moved up: the old synthetic ask is inside it, the old synthetic bid is replaced
        [300, 'sell', '0.95', '0'],
        [300, 'buy', '0.93', '0'],
        [300, 'buy', '0.94', '100'],
        [300, 'sell', '0.96', '100'],
      ]);
      expect(restingAfter(c.events)).toEqual({ 'buy 0.94': '100', 'sell 0.96': '100', 'sell 0.99': '4000' });
      expect(c.touchLevels).toBe(6);
      // the ask touch reaches the captured level at 0.99: no synthetic ask, the one at 0.96 goes
      const d = levels(
        row(200, 'ask', '1', 'Up', { price: '0.99', size: '5000', bid: '0.93', ask: '0.95' }),
        row(300, 'ask', '1', 'Up', { price: '0.99', size: '4000', bid: '0.98', ask: '0.99' }),
      );
      expect(restingAfter(d.events)).toEqual({ 'buy 0.98': '100', 'sell 0.99': '4000' });
    });

    it('a bid touch at a captured ask removes it; N/A leaves that side; a crossed touch, same-ms rows', () => {
      const c = levels(
        row(200, 'ask', '1', 'Up', { price: '0.99', size: '5000', bid: '0.97', ask: '0.98' }),
        // no asks left in the real book (N/A): the bid at 0.99 takes the touch, asks at or below it go
        row(300, 'bid', '1', 'Up', { price: '0.99', size: '600', bid: '0.99', ask: 'N/A' }),
      );
      expect(restingAfter(c.events)).toEqual({ 'buy 0.99': '600' });
      const n = levels(
        row(200, 'ask', '1', 'Up', { price: '0.99', size: '5000', bid: '0.50', ask: '0.60' }),
        row(300, 'ask', '1', 'Up', { price: '0.99', size: '5001', bid: 'N/A', ask: '0.55' }),
      );
      expect(restingAfter(n.events)).toEqual({ 'buy 0.5': '100', 'sell 0.55': '100', 'sell 0.99': '5001' });
      // a crossed touch moves nothing; rows of one token in one millisecond shape the touch once, after the last
      const x = levels(
        row(200, 'ask', '1', 'Up', { price: '0.99', size: '5000', bid: '0.50', ask: '0.60' }),
        row(300, 'ask', '1', 'Up', { price: '0.99', size: '10', bid: '0.99', ask: '0.99' }),
        row(400, 'bid', '1', 'Up', { price: '0.40', size: '7', bid: '0.45', ask: '0.60' }),
        row(400, 'bid', '1', 'Up', { price: '0.45', size: '8', bid: '0.45', ask: '0.60' }),
      );
      expect(
        x.events
          .filter((e) => e.kind === 'level' && e.touch && e.atMs >= 300)
          .map((e) => e.kind === 'level' && [e.side, e.price.toFixed(), e.size.toFixed()]),
      ).toEqual([['buy', '0.5', '0']]);
      expect(restingAfter(x.events)).toEqual({ 'buy 0.4': '7', 'buy 0.45': '8', 'sell 0.6': '100', 'sell 0.99': '10' });
    });

    it('the real capture: after every update carrying a touch, the replayed levels show exactly that touch', () => {
      const c = loadCatalogue().capture!;
      const touchOf = new Map<string, [string, string]>();
      for (const line of fs.readFileSync(path.join('data', CAPTURE_FILE), 'utf8').split('\n')) {
        const f = line.split(',');
        if (f[4] === 'bid' || f[4] === 'ask') touchOf.set(`${f[11]}|${f[1]}`, [f[9]!, f[10]!]);
      }
      const books = new Map<string, Map<string, number>>();
      let checked = 0;
      c.events.forEach((e, i) => {
        if (e.kind !== 'level') return;
        let b = books.get(e.tokenId);
        if (!b) books.set(e.tokenId, (b = new Map()));
        const k = `${e.side} ${e.price.toFixed()}`;
        if (e.size.gt(0)) b.set(k, e.price.toNumber());
        else b.delete(k);
        const n = c.events[i + 1];
        if (n?.kind === 'level' && n.tokenId === e.tokenId && n.atMs === e.atMs) return;
        const [bid, ask] = touchOf.get(`${e.tokenId}|${e.atMs}`)!;
        if (bid !== 'N/A' && ask !== 'N/A' && Number(bid) >= Number(ask)) return;
        const side = (s: string) => [...b].filter(([key]) => key.startsWith(s)).map(([, p]) => p);
        if (bid !== 'N/A') expect(Math.max(...side('buy')), `${e.tokenId} at ${e.atMs}`).toBe(Number(bid));
        if (ask !== 'N/A') expect(Math.min(...side('sell')), `${e.tokenId} at ${e.atMs}`).toBe(Number(ask));
        checked++;
      });
      expect(checked).toBeGreaterThan(5000);
    });
  });
});
