import type { StrategyContext } from '../../machines/strategy-kit.js';
import type { ActorHost } from '../actor-host.js';
import type { Clock } from '../clock.js';
import type { ActorRepository } from '../store/actors.js';
import type { ChildOrderRouter } from './child-orders.js';
import type { Deliveries } from './deliveries.js';
import type { TriggerFeed } from './trigger-feed.js';

/** What start-up reconciliation works with (wired by StrategyService). */
export interface ReconcileDeps {
  host: ActorHost;
  actors: ActorRepository;
  clock: Clock;
  router: ChildOrderRouter;
  feed: TriggerFeed;
  deliveries: Deliveries;
}

/**
 * Start-up reconciliation of strategies, after orders were reconciled with the venue: every live
 * strategy learns the latest state of its working order, re-places an order the process died
 * before placing (same deterministic id), cancels again the order it was canceling (state tag
 * `cancelingChild`); a BRACKET still waiting learns its entry's state, or `order.refused` when the
 * entry never came; then every registered watch meets the current touch.
 * @returns how many live strategies were reconciled.
 */
export async function reconcileStrategies({
  host,
  actors,
  clock,
  router,
  feed,
  deliveries,
}: ReconcileDeps): Promise<number> {
  const ids = host.liveIds('strategy');
  for (const id of ids) {
    const c = host.snapshotOf(id)?.context as StrategyContext | undefined;
    if (
      c?.type === 'BRACKET' &&
      c.entryOrderId &&
      c.legs &&
      Object.values(c.legs).every((l) => l.status === 'WAITING')
    ) {
      // a bracket still waiting for its entry: tell it the entry's state, or that it never came
      const entry = host.recordOf(c.entryOrderId) ?? (await actors.get(c.entryOrderId));
      if (entry) router.forwardOrder(entry);
      else
        deliveries.track(
          router.sendToStrategy(id, {
            type: 'order.refused',
            orderId: c.entryOrderId,
            error: 'rejected',
            reason: 'the entry was never placed (the process stopped first)',
          }),
        );
      continue;
    }
    if (!c?.working) continue;
    const child = host.recordOf(c.working) ?? (await actors.get(c.working));
    if (child) router.forwardOrder(child);
    else if (c.placing?.orderId === c.working) deliveries.track(router.placeChild(c, c.placing));
    else
      deliveries.track(
        router.sendToStrategy(id, {
          type: 'order.placeFailed',
          orderId: c.working,
          error: 'not_placed',
          reason: 'the order was never placed',
          atMs: clock.now(),
        }),
      );
    // a cancel persisted but not carried out before the process stopped (or given up): again (an
    // order that heard the first keeps that one's reason)
    if (host.snapshotOf(id)?.hasTag('cancelingChild') && !child?.final) {
      deliveries.track(
        router.cancelChild(id, c.working, {
          code: 'STRATEGY_CANCELED',
          message: `${c.type} ${id}: ${c.endReason ?? 'canceling its order'} (canceled again at start-up)`,
        }),
      );
    }
  }
  await deliveries.idle();
  // every watch (registered as each strategy was restored) meets the current touch
  feed.fireAll();
  await deliveries.idle();
  return ids.length;
}
