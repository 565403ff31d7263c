import type { Health } from '../../schemas/common.js';
import type { Handler } from '../context.js';

/** GET /healthz (public): store and scheduler status; 200 when both are fine, else 503. */
export const health: Handler = async ({ services }) => {
  const storeOk = await services.store.ping();
  const schedulerOk = services.timers.running;
  const body: Health = {
    status: storeOk && schedulerOk ? 'ok' : 'degraded',
    store: { adapter: services.store.adapter, ok: storeOk },
    scheduler: { running: schedulerOk },
    uptime_ms: Math.max(0, Math.round(services.clock.now() - services.startedAtMs)),
  };
  return { status: body.status === 'ok' ? 200 : 503, body };
};
