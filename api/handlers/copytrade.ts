import { randomUUID } from 'node:crypto';
import { settingsOfRequest, settingsPatched } from '../../engine/copytrade/requests.js';
import { errors } from '../../engine/errors.js';
import type { CopytradeStatusChange } from '../../engine/copytrade/service.js';
import type { ActorRecord } from '../../engine/store/actors.js';
import type { CopytradePatch, CopytradeRequest } from '../../schemas/copytrade.js';
import { bearerToken } from '../auth.js';
import type { Handler, HandlerResult } from '../context.js';

/** The answer of POST /v2/trade/copytrade: 200 with the id and status (spec 2.6; the code is the reference's). */
const createdAnswer = (rec: ActorRecord): HandlerResult => ({ status: 200, body: { id: rec._id, status: rec.status } });

/** POST /v2/trade/copytrade (spec 4.4): 200; 409 when an ACTIVE subscription to the leader exists. */
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

/** The position a history cursor seals: the last row's time and id, and its user. */
type HistoryCursor = { u: string; t: number; i: string };

/**
 * GET /v2/trade/copytrade/history: copies and skips, newest first, by pages of `limit` rows:
 * `next_cursor` (opaque; null at the end) is the next request's `cursor`.
 * @throws {DomainError} `INVALID_REQUEST` (400) for a cursor not issued to this API key, altered,
 *   or issued to another user.
 */
export const copytradeHistory: Handler = async ({ req, services, user }) => {
  const limit = req.query.limit === undefined ? 50 : Number(req.query.limit);
  const only = typeof req.query.copytrade_id === 'string' ? req.query.copytrade_id : undefined;
  const token = bearerToken(req) ?? '';
  let after: { atMs: number; id: string } | undefined;
  if (typeof req.query.cursor === 'string') {
    const c = services.cursors.open<HistoryCursor>(req.query.cursor, token);
    if (c?.u !== user!._id || typeof c.t !== 'number' || typeof c.i !== 'string')
      throw errors.badRequest("cursor is not valid: send back the next_cursor this user's previous page returned");
    after = { atMs: c.t, id: c.i };
  }
  const rows = await services.copytrade.history(user!._id, limit + 1, only, after);
  const shown = rows.slice(0, limit);
  const last = shown.at(-1);
  const next: HistoryCursor | null = rows.length > limit && last ? { u: user!._id, t: last.atMs, i: last._id } : null;
  return {
    status: 200,
    body: {
      history: await services.copytrade.historyView(shown),
      next_cursor: next ? services.cursors.seal(next, token) : null,
    },
  };
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
