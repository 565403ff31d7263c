/**
 * What the in-process arming benches share (bench:stepper, bench:hidden-classes): services on an
 * in-memory store, one user holding shares of four tokens, and the requests arming a stop on them.
 */
import { loadConfig, type Config } from '../engine/config.js';
import { str } from '../engine/decimal.js';
import { createLogger } from '../engine/logger.js';
import { startServices, type Services } from '../engine/service.js';
import type { OrderInput } from '../machines/order.js';
import type { OrderRequest } from '../schemas/orders.js';
import { baseOrderInput } from '../test/machines/order-input.js';

export interface Arming {
  services: Services;
  userId: string;
  /**
   * The `i`th arming request: a STOP_LOSS sell below the bid for even `i`, a TRAILING_STOP sell
   * for odd `i`, on the four tokens in turn.
   */
  body(i: number): OrderRequest;
}

/**
 * The settings of the services an in-process bench starts: the store in `dataDir` (`:memory:`:
 * SQLite in memory), no logs, a fixed master key, no simulated market replay nor capture, the
 * simulated makers refilling once an hour.
 */
export function benchConfig(dataDir: string): Config {
  return loadConfig({
    DATA_DIR: dataDir,
    LOG_LEVEL: 'silent',
    MASTER_API_KEY: 'pts_bench_master_key_0123456789abcdef',
    SIM_REPLAY: 'off',
    SIM_CAPTURE: 'off',
    SIM_MAKER_REFILL_MS: '3600000',
  });
}

/** The order the in-process benches step (bench:stepper, bench:host-step): a GTC LIMIT buy of 10 shares at 0.5. */
export const BENCH_ORDER: OrderInput = {
  ...baseOrderInput,
  orderId: 'ord_bench',
  timeInForce: 'GTC',
  expiresAtMs: null,
  createdAtMs: 1_700_000_000_000,
};

/** Starts the services and provisions `partnerUserId` with shares to sell (stop them with `services.stop()`). */
export async function startArming(partnerUserId: string): Promise<Arming> {
  const { services: s } = await startServices(benchConfig(':memory:'), createLogger('silent'), {});
  const userId = (await s.users.provision('demo', partnerUserId, null)).user._id;
  const tokens = s.venue
    .markets()
    .map((m) => m.tokens[0]?.tokenId)
    .filter(
      (t): t is string =>
        t !== undefined && (s.venue.touch(t).bid?.gt('0.2') ?? false) && (s.venue.touch(t).bid?.lt('0.8') ?? false),
    )
    .slice(0, 4);
  // shares to sell (stops do not reserve them, but the request check wants them held)
  for (const t of tokens) {
    await s.venue.submit({
      orderId: `seed-${t.slice(0, 10)}`,
      userId,
      tokenId: t,
      side: 'buy',
      kind: 'limit',
      price: '0.99',
      size: '5',
      quoteAmount: null,
      timeInForce: 'IOC',
      postOnly: false,
    });
  }
  const body = (i: number): OrderRequest => {
    const token = tokens[i % tokens.length]!;
    const bid = s.venue.touch(token).bid!;
    return i % 2 === 1
      ? {
          symbol: token,
          side: 'sell',
          type: 'TRAILING_STOP',
          size: '5',
          execution: { high_water_mark: str(bid.plus('0.05')), trailing_offset: '0.1' },
        }
      : { symbol: token, side: 'sell', type: 'STOP_LOSS', price: str(bid.minus('0.05')), size: '5' };
  };
  return { services: s, userId, body };
}
