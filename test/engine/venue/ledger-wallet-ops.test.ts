import { describe, expect, it } from 'vitest';
import { dec } from '../../../engine/decimal.js';
import { LotBook, recordedPrices } from '../../../engine/data/lots.js';
import { Ledger, OP_RETAIN_MS } from '../../../engine/venue/ledger.js';

const Y = 'yes';
const N = 'no';
const meta = (opId: string, atMs = 1_000) => ({ opId, atMs, transactionHash: `0x${'a'.repeat(64)}` });
/** A split or merge of `amount` on condition `c` ([Y, N]), its dollars shared by `marks` when given. */
const set = (opId: string, amount: string, marks?: string[]) => ({
  userId: 'u',
  meta: meta(opId),
  conditionId: 'c',
  tokenIds: [Y, N],
  amount: dec(amount),
  ...(marks ? { marks: marks.map(dec) } : {}),
});

/** The ledger's wallet operations: split, merge, redeem, withdrawal debit and refund. */
describe('ledger wallet operations', () => {
  it('split then merge returns the same pUSD; cost basis half each, removed on merge; signed deltas', () => {
    const l = new Ledger('100');
    const s = l.split(set('s1', '30'));
    expect(s).toMatchObject({
      kind: 'split',
      pusdDelta: '-30',
      pusdBalance: '70',
      shares: [
        { tokenId: Y, delta: '30' },
        { tokenId: N, delta: '30' },
      ],
      positions: [
        { tokenId: Y, size: '30' },
        { tokenId: N, size: '30' },
      ],
    });
    expect(l.view('u').positions.map((p) => p.costUsd)).toEqual(['15', '15']);
    expect(l.mergeRefusal('u', [Y, N], dec('30.01'))?.error).toBe('INSUFFICIENT_SHARES');
    const m = l.merge(set('m1', '10'));
    expect(m).toMatchObject({ pusdDelta: '10', pusdBalance: '80', positions: [{ size: '20' }, { size: '20' }] });
    expect(l.view('u').positions.map((p) => p.costUsd)).toEqual(['10', '10']);
    // a merge realizes each token's half of the dollars paid minus the cost it took out: 5 − 5
    expect(l.view('u').positions.map((p) => p.realizedPnl)).toEqual(['0', '0']);
    l.merge(set('m2', '20'));
    expect(l.view('u')).toEqual({ pusd: { balance: '100', reserved: '0', available: '100' }, positions: [] });
  });

  it("with the outcomes' marks, a split's cost and a merge's proceeds are shared by them", () => {
    const l = new Ledger('100');
    const s = l.split(set('s1', '30', ['0.2', '0.8']));
    expect(s.shares).toEqual([
      { tokenId: Y, delta: '30', price: '0.2' },
      { tokenId: N, delta: '30', price: '0.8' },
    ]);
    expect(l.view('u').positions.map((p) => p.costUsd)).toEqual(['6', '24']);
    // merged at other marks: each token realizes its share of the $10 minus a third of its cost
    l.merge(set('m1', '10', ['0.5', '0.5']));
    expect(l.view('u').positions.map((p) => [p.costUsd, p.realizedPnl])).toEqual([
      ['4', '3'],
      ['16', '-3'],
    ]);
    // the trade history's lots share a split's dollars exactly as the ledger does (one rounding)
    for (const marks of [
      ['2', '1'],
      ['0.35', '0.6'],
      ['0.123457', '0.876543'],
    ]) {
      const ledger = new Ledger('100');
      const r = ledger.split({ ...set('s3', '7.777777', marks), userId: 'v' });
      const lots = new LotBook();
      const move = {
        ...{ _id: r.opId, address: 'v', userId: 'v', kind: 'split' as const, atMs: 1, conditionId: 'c' },
        ...{ pusdDelta: r.pusdDelta, blockTimestamp: 1, logIndex: 0, transactionHash: r.transactionHash },
        ...{ source: 'venue' as const, shares: r.shares.map((x) => ({ ...x, outcome: x.tokenId })) },
      };
      lots.applyCashMove(move, recordedPrices(move));
      expect(lots.positions('v').map((p) => p.cost.toFixed())).toEqual(
        ledger.view('v').positions.map((p) => p.costUsd),
      );
    }
    // marks that do not divide evenly: the last token takes what rounding to micro-dollars left
    const t = new Ledger('100');
    t.split(set('s2', '1', ['1', '2']));
    expect(t.view('u').positions.map((p) => p.costUsd)).toEqual(['0.333333', '0.666667']);
  });

  it('refusals: free pUSD (not reserved), free shares, reserved shares block a redeem, nothing to redeem', () => {
    const l = new Ledger('100');
    l.load({ userId: 'u', pusd: '100', reserved: '60', positions: [[Y, '10', '4', '5']] });
    expect(l.pusdRefusal('u', dec('40.01'), 'this split')).toEqual({
      error: 'INSUFFICIENT_BALANCE',
      reason: 'this split needs $40.01 pUSD; available $40',
    });
    expect(l.pusdRefusal('u', dec('40'), 'this split')).toBeNull();
    expect(l.mergeRefusal('u', [Y, N], dec('1'))?.reason).toMatch(
      /^Not enough shares to merge 1 — holding 0 of outcome token no$/,
    );
    expect(l.redeemRefusal('u', [Y, N])?.error).toBe('SHARES_RESERVED');
    expect(l.redeemRefusal('v', [Y, N])?.error).toBe('NOTHING_TO_REDEEM');
  });

  it('redeem burns both tokens: $1 per winning share, $0 per losing share', () => {
    const l = new Ledger('0');
    l.load({
      userId: 'u',
      pusd: '0',
      reserved: '0',
      positions: [
        [Y, '7.5', '0', '3'],
        [N, '2', '0', '1'],
      ],
    });
    const r = l.redeem('u', meta('r'), 'c', [Y, N], Y);
    expect(r).toMatchObject({
      pusdDelta: '7.5',
      pusdBalance: '7.5',
      shares: [
        { tokenId: Y, delta: '-7.5' },
        { tokenId: N, delta: '-2' },
      ],
    });
    expect(l.view('u').positions).toEqual([]);
    // realized: 7.5 × $1 − 3 on the winner, 0 − 1 on the loser (kept with the emptied positions)
    expect(l.row('u').positions).toEqual([
      [Y, '0', '0', '0', '4.5'],
      [N, '0', '0', '0', '-1'],
    ]);
  });

  it('redeem of one outcome burns only its shares, its cost basis in proportion; the other unchanged', () => {
    const l = new Ledger('0');
    l.load({
      userId: 'u',
      pusd: '0',
      reserved: '0',
      positions: [
        [Y, '10', '0', '6'],
        [N, '2', '0', '1'],
      ],
    });
    expect(l.redeemRefusal('u', [Y], dec('10.5'))).toEqual({
      error: 'INSUFFICIENT_SHARES',
      reason: 'Not enough shares to redeem 10.5 — holding 10 of outcome token yes',
    });
    const part = l.redeem('u', meta('r1'), 'c', [Y, N], Y, { tokenId: Y, amount: dec('4') });
    expect(part).toMatchObject({
      pusdDelta: '4',
      pusdBalance: '4',
      shares: [
        { tokenId: Y, delta: '-4' },
        { tokenId: N, delta: '0' },
      ],
      positions: [{ size: '6' }, { size: '2' }],
    });
    // realized on the winner: 4 × $1 − 4/10 of its $6 cost
    expect(l.row('u').positions).toEqual([
      [Y, '6', '0', '3.6', '1.6'],
      [N, '2', '0', '1'],
    ]);
    l.redeem('u', meta('r2'), 'c', [Y, N], Y, { tokenId: N });
    expect(l.row('u').positions).toEqual([
      [Y, '6', '0', '3.6', '1.6'],
      [N, '0', '0', '0', '-1'],
    ]);
    expect(l.redeemRefusal('u', [N])).toEqual({
      error: 'NOTHING_TO_REDEEM',
      reason: 'no shares of outcome token no to redeem',
    });
  });

  it('remembers each op with the wallet row (found after recovery), forgets on release or OP_RETAIN_MS', () => {
    const l = new Ledger('100');
    const d = l.transfer('u', meta('wd:debit'), 'withdraw', dec('25'));
    expect(d).toMatchObject({ kind: 'withdraw', pusdDelta: '-25', pusdBalance: '75', conditionId: null });
    const restored = new Ledger('100');
    restored.load(JSON.parse(JSON.stringify(l.row('u'))));
    expect(restored.opResult('u', 'wd:debit')).toEqual(d);
    expect(restored.forgetOp('u', 'wd:debit')).toBe(true);
    expect(restored.row('u').ops).toBeUndefined();
    l.transfer('u', meta('later:credit', 1_000 + OP_RETAIN_MS + 1), 'credit', dec('25'));
    expect(l.opResult('u', 'wd:debit')).toBeUndefined();
    expect(l.view('u').pusd.balance).toBe('100');
  });
});
