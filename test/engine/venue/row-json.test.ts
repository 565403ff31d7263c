/**
 * The journal's rows made as JSON directly (`Ledger.rowJson`, `MatchingEngine.rowJson`,
 * `stateRowsJson`): once parsed they are exactly the rows `row()` gives, serialized — what the
 * journal stored before and recovery reads.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { dec } from '../../../engine/decimal.js';
import { stateRowsJson } from '../../../engine/venue/journal.js';
import { Ledger, LIQUIDITY_PROVIDER_ID } from '../../../engine/venue/ledger.js';
import { MatchingEngine, newTx } from '../../../engine/venue/matching.js';
import type { TokenInfo, VenueOrder } from '../../../engine/venue/port.js';

const TOKENS = new Map<string, TokenInfo>(
  ['A', 'B'].map((t) => [
    t,
    {
      tokenId: t,
      outcome: 'Yes',
      conditionId: 'c',
      question: 'Q?',
      tickSize: dec('0.01'),
      minSize: dec(5),
      complementTokenId: t === 'A' ? 'B' : 'A',
    },
  ]),
);
const USERS = ['u0', 'u1', 'u"2'];

type Cmd = {
  u: number;
  t: number;
  side: 'buy' | 'sell';
  kind: 'limit' | 'market';
  tif: 'GTC' | 'IOC' | 'FOK';
  price: number;
  size: number;
  cancel: boolean;
};
const cmd = fc.record({
  u: fc.integer({ min: 0, max: 2 }),
  t: fc.integer({ min: 0, max: 1 }),
  side: fc.constantFrom('buy' as const, 'sell' as const),
  kind: fc.constantFrom('limit' as const, 'market' as const),
  tif: fc.constantFrom('GTC' as const, 'IOC' as const, 'FOK' as const),
  price: fc.integer({ min: 1, max: 99 }),
  size: fc.integer({ min: 1, max: 3000 }),
  cancel: fc.boolean(),
});

describe('journal rows as JSON', () => {
  it('rowJson and rowsJson parse to the JSON of row() / rows(), over random order sequences (fast-check)', () => {
    fc.assert(
      fc.property(fc.array(cmd, { minLength: 1, maxLength: 40 }), (cmds: Cmd[]) => {
        const l = new Ledger('100');
        for (const u of USERS)
          l.load({
            userId: u,
            pusd: '100',
            reserved: '0',
            positions: [
              ['A', '50', '0', '25'],
              ['B', '7.5', '0', '3.25'],
            ],
          });
        const m = new MatchingEngine(TOKENS, l, () => 5);
        const tx0 = newTx(1, 1000);
        m.quote(
          tx0,
          {
            orderId: 'mm-1',
            userId: LIQUIDITY_PROVIDER_ID,
            tokenId: 'A',
            side: 'sell',
            kind: 'limit',
            price: '0.6',
            size: '40',
            quoteAmount: null,
            timeInForce: 'GTC',
            postOnly: false,
          },
          dec('0.6'),
          dec(40),
        );
        let n = 0;
        for (const c of cmds) {
          const tx = newTx(++n + 1, 1000 + n);
          const tokenId = c.t ? 'B' : 'A';
          const market = c.kind === 'market';
          const order: VenueOrder = {
            orderId: `o${n}`,
            userId: USERS[c.u]!,
            tokenId,
            side: c.side,
            kind: c.kind,
            price: market ? null : (c.price / 100).toFixed(2),
            size: market && c.side === 'buy' ? null : (c.size / 100).toFixed(2),
            quoteAmount: market && c.side === 'buy' ? (c.size / 100).toFixed(2) : null,
            timeInForce: market ? 'IOC' : c.tif,
            postOnly: false,
          };
          m.place(tx, order);
          if (c.cancel && n > 1) m.cancel(tx, `o${n - 1}`, { code: 'USER_CANCELED', message: 'test' });
          const wallets = [...tx.users].filter((u) => u !== LIQUIDITY_PROVIDER_ID);
          const orders = [...tx.orders];
          for (const u of wallets) expect(JSON.parse(l.rowJson(u))).toEqual(JSON.parse(JSON.stringify(l.row(u))));
          for (const id of orders) expect(JSON.parse(m.rowJson(id))).toEqual(JSON.parse(JSON.stringify(m.row(id))));
          const entry = stateRowsJson(
            wallets.map((u) => l.rowJson(u)),
            orders.map((id) => m.rowJson(id)),
            undefined,
            { next: n, recordedMs: 7 },
          );
          expect(JSON.parse(entry)).toEqual(
            JSON.parse(
              JSON.stringify({
                wallets: wallets.map((u) => l.row(u)),
                orders: orders.map((id) => m.row(id)),
                capture: { next: n, recordedMs: 7 },
              }),
            ),
          );
          // every order's row as a checkpoint would take it now: the JSON kept from an earlier
          // operation is reused only while the order is unchanged
          expect(m.rowsJson().map((j) => JSON.parse(j))).toEqual(JSON.parse(JSON.stringify(m.rows())));
        }
        // the checkpoint's rows (rowsJson) are the rows too
        expect(l.rowsJson().map((j) => JSON.parse(j))).toEqual(JSON.parse(JSON.stringify(l.rows())));
        expect(m.rowsJson().map((j) => JSON.parse(j))).toEqual(JSON.parse(JSON.stringify(m.rows())));
      }),
      { numRuns: 60 },
    );
  });
});
