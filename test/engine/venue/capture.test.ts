import { describe, expect, it } from 'vitest';
import { conditionIdOf, parseCapture, questionOf } from '../../../engine/venue/capture.js';
import { loadCatalogue } from '../../../engine/venue/markets.js';

const HEADER =
  'event_slug,timestamp_ms,timestamp_iso,timestamp_est,event_type,price,size,size_change,side,best_bid,best_ask,token_id,is_winning_token,outcome,time_since_ticker_change_ms,ticker_changed_recently,old_tick_size,new_tick_size,market_resolved,error_message';
const SLUG = 'btc-15min-up-or-down-09:15';
const row = (ms: number, type: string, token: string, outcome: string, f: { price?: string; size?: string; bid?: string; ask?: string; win?: string; oldTick?: string; newTick?: string; err?: string } = {}) =>
  [SLUG, ms, 'iso', 'est', type, f.price ?? '', f.size ?? '', '', '', f.bid ?? '', f.ask ?? '', token, f.win ?? 'false', outcome, '', 'false', f.oldTick ?? '', f.newTick ?? '', 'false', f.err ?? ''].join(',');

describe('capture parser (issue 16)', () => {
  it('skips error rows, N/A and missing values, repeated headers; sorts by time; rounds sizes; resolves on the winning row', () => {
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
    expect(c.markets).toEqual([{ slug: SLUG, conditionId: conditionIdOf(SLUG), question: 'BTC Up or Down - 15 minutes from 09:15 ET', tokens: [{ tokenId: '1', outcome: 'Up' }, { tokenId: '2', outcome: 'Down' }], firstSeenMs: 100 }]);
    expect(c.events.map((e) => [e.kind, e.atMs])).toEqual([['level', 200], ['level', 300], ['tick', 400], ['trade', 410], ['resolved', 500]]);
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

  it('the real capture: 112 binary markets after the 1,001 others, the counts of the issue', () => {
    const cat = loadCatalogue();
    const c = cat.capture!;
    expect(c.markets).toHaveLength(112);
    expect(cat.markets).toHaveLength(1113);
    expect(cat.captureTokens!.size).toBe(224);
    expect(c.skips).toMatchObject({ errorRows: 214, unusable: 0, malformed: 0 });
    const count = (k: string) => c.events.filter((e) => e.kind === k).length;
    // 292 captured tick changes, plus 2 × 2 inferred where levels move in 0.001 steps before (or without) one
    expect([count('level'), count('trade'), count('tick'), count('resolved')]).toEqual([3039 + 3472, 9406, 292 + 4, 104]);
    expect(c.inferredTicks).toBe(2);
    expect(c.events.filter((e) => e.kind === 'tick' && !e.inferred)).toHaveLength(292);
    expect(c.events.every((e, i) => i === 0 || c.events[i - 1]!.atMs <= e.atMs)).toBe(true);
    const m = cat.markets[1001]!;
    expect(m).toMatchObject({ minSize: expect.anything(), negRisk: false });
    expect(m.tickSize.toString()).toBe('0.01');
    expect(cat.tokens.get(m.tokens[0]!.tokenId)!.complementTokenId).toBe(m.tokens[1]!.tokenId);
  });
});
