import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Dec } from '../engine/decimal.js';
import type { Ledger } from '../engine/venue/ledger.js';
import type { SimVenue } from '../engine/venue/sim-venue.js';
import { startTestService, type TestService } from './helpers.js';
import { checkInvariants } from './invariants.js';
import { px, Trading } from './api/trading-kit.js';

/** The shared invariant check finds what it claims to find (each violation planted, then undone). */
describe('checkInvariants', () => {
  let svc: TestService;
  const tr = new Trading(() => svc);
  /**
   * The venue's live wallet of a user: the planted faults write where no public operation can (that is what they
   * test), so they reach the ledger behind the venue. Every read of the checks goes through public operations.
   */
  const liveWallet = (u: string) => (svc.services.venue as unknown as { ledger: Ledger }).ledger.walletOf(u);
  let userId: string;
  let token: string;

  beforeAll(async () => {
    svc = await startTestService({ env: { SIM_MAKER_REFILL_MS: '3600000', SIM_INITIAL_PUSD: '1000' } });
    await tr.init(['alice', 'bob']);
    const f = await tr.freshToken();
    token = f.token;
    await tr.buyShares('alice', token, 20);
    await tr.post('alice', { symbol: token, side: 'sell', type: 'LIMIT', price: px(f.ask + 0.05), size: '5' });
    await tr.post('alice', { symbol: token, side: 'buy', type: 'LIMIT', price: px(f.bid - 0.05), size: '5' });
    expect(
      (await tr.post('alice', { symbol: token, side: 'sell', type: 'STOP_LOSS', price: '0.05', size: '5' })).status,
    ).toBe(200);
    userId = (svc.services.venue as SimVenue).walletRows().find((w) => w.positions.length > 0)!.userId;
  });
  afterAll(() => svc.close());

  const planted = async (
    plant: () => () => void,
    message: RegExp,
    acknowledged: Iterable<string> = tr.acknowledged,
  ) => {
    const undo = plant();
    try {
      await expect(checkInvariants(svc.services, { acknowledged, timeoutMs: 200 })).rejects.toThrow(message);
    } finally {
      undo();
    }
  };

  it('passes on a consistent system', async () => {
    await checkInvariants(svc.services, { acknowledged: tr.acknowledged });
  });

  it('finds pUSD created from nothing, and a negative available balance', async () => {
    const w = liveWallet(userId);
    await planted(() => {
      w.pusd = w.pusd.plus(1);
      return () => void (w.pusd = w.pusd.minus(1));
    }, /pUSD .* its trades explain[\s\S]*pUSD not conserved/);
    await planted(() => {
      const was = w.reserved;
      w.reserved = w.pusd.plus(1);
      return () => void (w.reserved = was);
    }, /negative pUSD balance\/reserved\/available[\s\S]*reserved, its open orders reserve/);
  });

  it('finds shares out of thin air and a reservation no open order needs', async () => {
    const p = liveWallet(userId).positions.get(token)!;
    await planted(() => {
      p.shares = p.shares.plus(3);
      return () => void (p.shares = p.shares.minus(3));
    }, /shares, its trades explain[\s\S]*users hold .* shares, the maker sold/);
    await planted(() => {
      p.reserved = p.reserved.plus(1);
      return () => void (p.reserved = p.reserved.minus(1));
    }, /shares reserved, its open sells reserve/);
  });

  it('finds shares a wallet operation did not make (per-condition conservation: YES ≠ NO in existence)', async () => {
    const m = svc.services.venue.markets().find((x) => x.tokens.some((t) => t.tokenId === token))!;
    const r = await svc.call('POST', '/v2/trade/positions/split', {
      headers: tr.as('bob'),
      body: { condition_id: m.conditionId, amount: '4' },
    });
    expect(r.status).toBe(200);
    await checkInvariants(svc.services, { acknowledged: tr.acknowledged });
    const bob = (svc.services.venue as SimVenue)
      .walletRows()
      .find((w) => w.positions.some(([t, shares]) => t === m.tokens[1]!.tokenId && new Dec(shares).eq(4)))!;
    const p = liveWallet(bob.userId).positions.get(m.tokens[1]!.tokenId)!;
    await planted(
      () => {
        p.shares = p.shares.plus(2);
        return () => void (p.shares = p.shares.minus(2));
      },
      new RegExp(
        'condition …\\w+: 6 \\w+ shares in existence \\(held \\+ burned − minted by the maker\\), 4 sets split ' +
          '− merged',
      ),
    );
  });

  it('finds an acknowledged id that is not in the store', async () => {
    await planted(() => () => undefined, /acknowledged ord_nowhere is not in the store/, [
      ...tr.acknowledged,
      'ord_nowhere',
    ]);
  });

  it('finds an armed strategy missing from the trigger index', async () => {
    const triggers = svc.services.strategies.triggers;
    const id = triggers.idsOn(token).find((x) => triggers.has(x))!;
    const { watch } = svc.services.host.storedSnapshot((await svc.services.actors.get(id))!).context as {
      watch: Parameters<typeof triggers.set>[2];
    };
    await planted(() => {
      triggers.remove(id);
      return () => void triggers.set(id, token, watch);
    }, /is not in the trigger index: it can never fire/);
  });
});
