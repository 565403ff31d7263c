import type { AnyEventObject } from 'xstate';
import type { ActorHost } from './actor-host.js';
import type { Logger } from './logger.js';
import { VenueOpRefused, type VenuePort, type WalletOp, type WalletOpResult } from './venue/port.js';

/**
 * Side-effect promises in flight per actor (venue commands an actor's actions started, deliveries
 * of their answers), so that a request can wait until its actor is quiet: nothing queued at the
 * actor host and nothing in flight here. Shared by the order service and the wallet service.
 */
export class InFlight {
  private readonly byActor = new Map<string, Set<Promise<unknown>>>();

  /**
   * @param host - the actor host whose queue {@link whenQuiet} also waits for.
   * @param log - where a failed promise is logged (with `what` and the actor id); it is never rethrown:
   *   the failure reaches the actor as an event or a retry, this only stops waiting for it.
   */
  constructor(
    private readonly host: ActorHost,
    private readonly log: Logger,
    private readonly what: string,
  ) {}

  /** Tracks `p` for actor `id` until it settles. */
  track(id: string, p: Promise<unknown>): void {
    let set = this.byActor.get(id);
    if (!set) this.byActor.set(id, (set = new Set()));
    const done = p
      .catch((err) => this.log.error({ err, actorId: id }, this.what))
      .finally(() => {
        set!.delete(done);
        if (set!.size === 0 && this.byActor.get(id) === set) this.byActor.delete(id);
      });
    set.add(done);
  }

  /**
   * Runs wallet operation `op` at `venue` for actor `id`, tracked: its result goes to the actor as
   * the event `ok(result)`, a refusal as `venue.refused {error, reason}` (the venue's code and
   * message); another failure is logged (the actor's start-up retry runs it again).
   */
  walletOp(
    venue: Pick<VenuePort, 'walletOp'>,
    id: string,
    op: WalletOp,
    ok: (result: WalletOpResult) => AnyEventObject,
  ): void {
    this.track(
      id,
      venue.walletOp(op).then(
        (r) => this.host.send(id, ok(r)),
        (err: unknown) => {
          if (err instanceof VenueOpRefused)
            return this.host.send(id, { type: 'venue.refused', error: err.error, reason: err.message });
          throw err;
        },
      ),
    );
  }

  /** Resolves when actor `id` has nothing queued at the host and nothing in flight here. */
  async whenQuiet(id: string): Promise<void> {
    for (;;) {
      await this.host.whenQuiet(id);
      const set = this.byActor.get(id);
      if (!set?.size) {
        await this.host.whenQuiet(id);
        if (!this.byActor.get(id)?.size) return;
        continue;
      }
      await Promise.all([...set]);
    }
  }
}
