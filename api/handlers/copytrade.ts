import { randomUUID } from 'node:crypto';
import { settingsOfRequest, settingsPatched } from '../../engine/copytrade/requests.js';
import type { CopytradeStatusChange } from '../../engine/copytrade/service.js';
import type { ActorRecord } from '../../engine/store/actors.js';
import type { CopytradePatch, CopytradeRequest } from '../../schemas/copytrade.js';
import type { Handler, HandlerResult } from '../context.js';

/** The answer of POST /v2/trade/copytrade: 201 with the id and status (spec 2.6). */
const createdAnswer = (rec: ActorRecord): HandlerResult => ({ status: 201, body: { id: rec._id, status: rec.status } });

/** POST /v2/trade/copytrade (spec 4.4): 201; 409 when an ACTIVE subscription to the leader exists. */
export const createCopytrade: Handler = async ({ req, services, user, resourceSeed, answerFrom }) => {
  const body = req.body as CopytradeRequest;
  const settings = settingsOfRequest(body);
  const id = `ct_${resourceSeed ?? randomUUID().replace(/-/g, '')}`;
  answerFrom?.(id, createdAnswer);
  const rec = await services.copytrade.create(user!, id, settings, body.status ?? 'ACTIVE');
  return createdAnswer(rec);
};

/** GET /v2/trade/copytrade: the user's subscriptions (not deleted), newest first. */
export const listCopytrades: Handler = async ({ services, user }) => {
  const records = await services.copytrade.list(user!._id);
  return { status: 200, body: { copytrades: records.map((r) => r.view) } };
};

/** GET /v2/trade/copytrade/{id}: one subscription with its counters. */
export const getCopytrade: Handler = async ({ req, services, user }) => ({
  status: 200,
  body: await services.copytrade.get(user!._id, String(req.params.id)),
});

/** PATCH /v2/trade/copytrade/{id}: changes settings; answers the subscription. */
export const patchCopytrade: Handler = async ({ req, services, user }) => {
  const id = String(req.params.id);
  await services.copytrade.update(user!._id, id, (current) => settingsPatched(current, req.body as CopytradePatch));
  return { status: 200, body: await services.copytrade.get(user!._id, id) };
};

/** PATCH /v2/trade/copytrade/{id}/status: ACTIVE, PAUSED, DISABLED. */
export const setCopytradeStatus: Handler = async ({ req, services, user }) => {
  const status = (req.body as { status: CopytradeStatusChange }).status;
  const rec = await services.copytrade.setStatus(user!._id, String(req.params.id), status);
  return { status: 200, body: { id: rec._id, status: rec.status } };
};

/** DELETE /v2/trade/copytrade/{id}: soft delete (history and PnL kept). */
export const deleteCopytrade: Handler = async ({ req, services, user }) => {
  await services.copytrade.remove(user!._id, String(req.params.id));
  return { status: 200, body: { ok: true } };
};

/** GET /v2/trade/copytrade/history: copies and skips, newest first. */
export const copytradeHistory: Handler = async ({ req, services, user }) => {
  const limit = req.query.limit === undefined ? 50 : Number(req.query.limit);
  const only = typeof req.query.copytrade_id === 'string' ? req.query.copytrade_id : undefined;
  const rows = await services.copytrade.history(user!._id, limit, only);
  return { status: 200, body: { history: await services.copytrade.historyView(rows) } };
};

/** GET /v2/trade/copytrade/pnl: realized PnL, 24 h and lifetime, real and simulated. */
export const copytradePnl: Handler = async ({ services, user }) => ({
  status: 200,
  body: await services.copytrade.pnl(user!._id),
});

/** GET /v2/trade/copytrade/simulation: the paper account of the user's simulations. */
export const copytradeSimulation: Handler = async ({ services, user }) => ({
  status: 200,
  body: await services.copytrade.simulation(user!._id),
});

/** POST /v2/trade/copytrade/{id}/simulation/reset: paper account back to its start. */
export const resetCopytradeSimulation: Handler = async ({ req, services, user }) => ({
  status: 200,
  body: { deleted_count: await services.copytrade.resetSimulation(user!._id, String(req.params.id)) },
});
