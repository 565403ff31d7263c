import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dec } from '../../engine/decimal.js';
import type { CaptureEvent } from '../../engine/venue/capture.js';
import { loadCatalogue } from '../../engine/venue/markets.js';
import type { SimVenue } from '../../engine/venue/sim-venue.js';
import { startTestService, type TestService } from '../helpers.js';
import { checkInvariants } from '../invariants.js';
import { poll } from './trading-kit.js';

/**
 * The acceptance scenario with the capture's own resolutions: three legs of capture markets that
 * the capture resolves Up (btc, eth, sol 09:15), quoted (from the liquidity provider's books:
 * SIM_CAPTURE=off, so the replay's clock does not race the test) and accepted within the quote's
 * life; then the capture's `market_resolved` events of those markets are applied the way the
 * replay applies its batches (`SimVenue.applyCaptureEvents`): the combo ends RESOLVED_WIN and its
 * redeem pays its shares × $1. A combo with a leg the capture resolves Down (btc 09:45) ends
 * RESOLVED_LOSS and its redeem is refused.
 */
describe('combos resolved by the capture replay', () => {
  let svc: TestService;
  const catalogue = loadCatalogue();
  const resolvedOf = new Map(
    catalogue.capture!.events.flatMap((e) => (e.kind === 'resolved' ? [[e.conditionId, e] as const] : [])),
  );
  const as = { headers: { 'x-partner-user-id': 'erin' } };
  let bySlug: Map<string, any>;
  /** Applies the capture's resolution of the market `slug`, as the replay does. */
  const replayResolution = (slug: string) =>
    (svc.services.venue as SimVenue).applyCaptureEvents([
      resolvedOf.get(bySlug.get(slug).condition_id) as CaptureEvent,
    ]);
  const quoteAndAccept = async (slugs: string[], notional: number) => {
    const legs = slugs.map((s) => bySlug.get(s).tokens[0].token_id as string);
    const q = await svc.call('POST', '/v2/trade/combo/quote', {
      ...as,
      body: { leg_position_ids: legs, notional_usd: notional },
    });
    expect(q.status, JSON.stringify(q.body)).toBe(200);
    const a = await svc.call('POST', '/v2/trade/combo/accept', {
      ...as,
      body: { combo_order_id: q.body.combo_order_id, quote_id: q.body.quote_id },
    });
    expect(a).toMatchObject({ status: 200, body: { status: 'EXECUTED' } });
    expect(Date.now()).toBeLessThanOrEqual(Date.parse(q.body.expires_at));
    return q.body;
  };
  const comboOf = async (id: string) => (await svc.call('GET', `/v2/trade/combo/${id}`, as)).body;
  const balance = async () => (await svc.call('GET', '/v2/trade/balances', as)).body.balance as string;

  beforeAll(async () => {
    svc = await startTestService({ env: { SIM_CAPTURE: 'off' } });
    await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'erin' } });
    const markets = (await svc.call('GET', '/v2/trade/markets?limit=500&offset=1001')).body.markets as any[];
    bySlug = new Map(markets.map((m) => [m.slug as string, m]));
  });
  afterAll(async () => {
    await svc.close();
  });

  it('three legs resolved YES by the capture: RESOLVED_WIN, redeem pays shares × $1', async () => {
    const slugs = ['btc', 'eth', 'sol'].map((a) => `${a}-15min-up-or-down-09:15`);
    for (const s of slugs)
      expect(resolvedOf.get(bySlug.get(s).condition_id)?.winningTokenId).toBe(bySlug.get(s).tokens[0].token_id);
    const q = await quoteAndAccept(slugs, 3);
    const before = await balance();
    for (const s of slugs) await replayResolution(s);
    const won = await poll(
      'won',
      () => comboOf(q.combo_order_id),
      (c) => c.status === 'RESOLVED_WIN',
    );
    expect(won.legs.map((l: any) => l.outcome)).toEqual(['WIN', 'WIN', 'WIN']);
    const r = await svc.call('POST', '/v2/trade/combo/redeem', { ...as, body: { combo_order_id: q.combo_order_id } });
    expect(r).toMatchObject({ status: 200, body: { status: 'REDEEMED', payout_usd: q.taker_shares } });
    expect(await balance()).toBe(dec(before).plus(String(q.taker_shares)).toString());
  });

  it('a leg the capture resolves Down: RESOLVED_LOSS, its redeem refused', async () => {
    const slugs = ['xrp-15min-up-or-down-09:30', 'btc-15min-up-or-down-09:45'];
    const q = await quoteAndAccept(slugs, 2);
    await replayResolution(slugs[1]!);
    const lost = await poll(
      'lost',
      () => comboOf(q.combo_order_id),
      (c) => c.status === 'RESOLVED_LOSS',
    );
    expect(lost.legs.map((l: any) => l.outcome)).toEqual([null, 'LOSS']);
    const r = await svc.call('POST', '/v2/trade/combo/redeem', { ...as, body: { combo_order_id: q.combo_order_id } });
    expect(r).toMatchObject({ status: 422, body: { error: 'COMBO_LOST' } });
    await checkInvariants(svc.services);
  });
});
