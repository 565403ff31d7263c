import type { Health } from '../../schemas/common.js';
import type { Handler } from '../context.js';

/**
 * GET /healthz (public): store, scheduler and venue status; 200 when all are fine, else 503 with
 * `status: "degraded"` and the part at fault (failures are visible, not only logged).
 * Degraded when the store does not answer or cannot make writes durable, the scheduler is not running, a timer's
 * delivery or arming is failing, the venue's journal writes are failing, an event is being redelivered to an
 * order or a strategy, or a delivery to a strategy was given up (until the next start reconciles it).
 */
export const health: Handler = async ({ services }) => {
  const writeFailure = services.store.writeFailure();
  const storeOk = (await services.store.ping()) && writeFailure === null;
  const schedulerOk = services.timers.running;
  const failingTimers = services.timers.failing + services.host.timersFailing;
  const venue = services.venue.health;
  const retrying = services.orders.failingDeliveries + services.strategies.retryingDeliveries;
  const abandoned = services.strategies.deliveriesAbandoned;
  const ok = storeOk && schedulerOk && failingTimers === 0 && venue.ok && retrying === 0 && abandoned === 0;
  const body: Health = {
    status: ok ? 'ok' : 'degraded',
    store: { adapter: services.store.adapter, ok: storeOk, ...(writeFailure ? { error: writeFailure } : {}) },
    scheduler: { running: schedulerOk, failing_timers: failingTimers },
    venue: { ok: venue.ok, pending_writes: venue.pendingWrites, ...(venue.error ? { error: venue.error } : {}) },
    deliveries: { retrying, abandoned },
    uptime_ms: Math.max(0, Math.round(services.clock.now() - services.startedAtMs)),
  };
  return { status: ok ? 200 : 503, body };
};
