import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../../engine/store/sqlite.js';
import type { WalletOp } from '../../../engine/venue/port.js';
import { startTestService, type TestService } from '../../helpers.js';
import { checkInvariants } from '../../invariants.js';
import { poll } from '../../api/trading-kit.js';

const TO = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed';

/**
 * The crash window of a wallet operation: the venue applied it (journaled
 * with the wallet) but the process stopped before the actor recorded the answer. At the next start
 * `WalletService.reconcile` sends `venue.retry`; the venue answers the recorded result instead of
 * applying again: the split and the withdrawal's debit happen exactly once.
 */
describe('wallet operations caught mid-way are finished at start-up, exactly once', () => {
  const dirs: string[] = [];
  let svc: TestService | null = null;
  afterAll(async () => {
    await svc?.close();
    for (const d of dirs) await fs.rm(d, { recursive: true, force: true });
  });

  it('split and withdrawal applied at the venue, unanswered, restarted: CONFIRMED once, balances agree', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-wallet-'));
    dirs.push(dir);
    const env = { SIM_INITIAL_PUSD: '1000', SIM_BLOCK_DELAY_MS: '100', SIM_MAKER_REFILL_MS: '3600000' };
    svc = await startTestService({ store: await SqliteStore.open(dir), env });
    const idOf = async (u: string) => {
      await svc!.call('POST', '/v2/trade/users', { body: { partner_user_id: u } });
      return (await svc!.call('GET', '/v2/trade/account', { headers: { 'x-partner-user-id': u } })).body.user
        .platform_user_id as string;
    };
    // two users: each user's operations queue behind each other, and these never get their answer
    const userId = await idOf('r');
    const other = await idOf('s');
    const condition = svc.services.venue.markets()[0]!.conditionId;
    // the venue applies, but its answer never reaches the actor (the process "dies" first)
    const venue = svc.services.venue;
    const real = venue.walletOp.bind(venue);
    venue.walletOp = (op: WalletOp) => {
      void real(op);
      return new Promise(() => {});
    };
    void svc.services.wallet.operate('demo', userId, 'SPLIT', { condition_id: condition, amount: '30' }, 'seed-split');
    void svc.services.wallet.withdraw('demo', other, { to_address: TO, amount: '70' }, 'seed-wd');
    await poll(
      'both applied at the venue',
      async () => [venue.wallet(userId).pusd.balance, venue.wallet(other).pusd.balance],
      (b) => b[0] === '970' && b[1] === '930',
    );
    const stuck = await svc.services.actors.find({ ownerUserId: { $in: [userId, other] } });
    expect(stuck.map((r) => r.status).sort()).toEqual(['PENDING', 'PENDING']);
    await svc.close();

    svc = await startTestService({ store: await SqliteStore.open(dir), env });
    const get = (u: string, p: string) => svc!.call('GET', `/v2/trade${p}`, { headers: { 'x-partner-user-id': u } });
    const wd = await poll(
      'withdrawal confirmed',
      async () => (await get('s', '/withdrawals/wd_seed-wd')).body,
      (b) => b.status === 'CONFIRMED',
    );
    expect(wd).toMatchObject({ amount: '70', refunded: false });
    expect((await get('s', '/activity')).body.activity).toMatchObject([
      { id: 'wd_seed-wd', type: 'WITHDRAWAL', status: 'CONFIRMED' },
    ]);
    expect((await get('r', '/activity')).body.activity).toMatchObject([
      { id: 'wop_seed-split', type: 'SPLIT', status: 'CONFIRMED', amount: '30' },
    ]);
    expect((await get('r', '/balances')).body.balance).toBe('970');
    expect((await get('s', '/balances')).body.balance).toBe('930');
    const positions = (await get('r', '/positions')).body.positions;
    expect(positions.map((p: any) => p.size)).toEqual(['30', '30']);
    await checkInvariants(svc.services);
  });
});
