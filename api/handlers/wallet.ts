import type { WalletOpType } from '../../machines/wallet-op.js';
import type { WalletOpBody, WithdrawBody } from '../../engine/wallet/service.js';
import { requireVenue } from '../availability.js';
import type { Handler, HandlerResult } from '../context.js';
import { pageQuery, recordsPage } from '../paging.js';

const REPLAYED = { 'Idempotent-Replayed': 'true' };

/** POST /v2/trade/positions/split | merge | redeem (spec 4.6): the simulated on-chain result. */
function walletOp(type: WalletOpType): Handler {
  return async ({ req, services, user, resourceSeed }): Promise<HandlerResult> => {
    requireVenue(services);
    const { record, replayed } = await services.wallet.operate(
      user!.partnerId,
      user!._id,
      type,
      req.body as WalletOpBody,
      resourceSeed,
    );
    return { status: 200, body: record.view, ...(replayed ? { headers: REPLAYED } : {}) };
  };
}

export const splitPosition = walletOp('SPLIT');
export const mergePositions = walletOp('MERGE');
export const redeemPositions = walletOp('REDEEM');

/** POST /v2/trade/withdraw (spec 4.6): 200 with the withdrawal, PENDING until its block. */
export const withdraw: Handler = async ({ req, services, user, resourceSeed }) => {
  requireVenue(services);
  const { record, replayed } = await services.wallet.withdraw(
    user!.partnerId,
    user!._id,
    req.body as WithdrawBody,
    resourceSeed,
  );
  return { status: 200, body: record.view, ...(replayed ? { headers: REPLAYED } : {}) };
};

/** GET /v2/trade/withdrawals/{withdrawal_id}: one withdrawal of the user (404 otherwise). */
export const getWithdrawal: Handler = async ({ req, services, user }) => {
  const rec = await services.wallet.withdrawal(user!._id, String(req.params.withdrawal_id));
  return { status: 200, body: rec.view };
};

/** GET /v2/trade/withdrawals: the user's withdrawals, newest first (offset/limit, optional status). */
export const listWithdrawals: Handler = async ({ req, services, user }) => {
  const p = pageQuery(req, 500);
  const status = typeof req.query.status === 'string' ? req.query.status : undefined;
  return recordsPage('withdrawals', await services.wallet.withdrawals(user!._id, p, status), p);
};

/** GET /v2/trade/balances/withdrawable (spec 2.8, 4.5). */
export const withdrawableBalances: Handler = async ({ services, user }) => ({
  status: 200,
  body: { balances: services.wallet.withdrawable(user!._id) },
});
