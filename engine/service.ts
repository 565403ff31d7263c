import type { Server } from 'node:http';
import { ActorHost } from './actor-host.js';
import { ApiKeyService } from './auth.js';
import { systemClock, type Clock } from './clock.js';
import type { Config } from './config.js';
import type { Logger } from './logger.js';
import { ActorRepository } from './store/actors.js';
import { openStore } from './store/index.js';
import type { Store } from './store/port.js';
import { TimerService } from './scheduler/timers.js';
import { UserService } from './users.js';
import { IdempotencyService } from './idempotency.js';
import { CursorCodec } from './cursor.js';
import { OrderService } from './orders.js';
import { StrategyService } from './strategies/service.js';
import { loadCatalogue, type Catalogue } from './venue/markets.js';
import { SimVenue } from './venue/sim-venue.js';
import { initialCreditOpId, type VenuePort } from './venue/port.js';
import { WalletService } from './wallet/service.js';
import { TradeHistory } from './data/history.js';
import { HistoryRecorder } from './data/recorder.js';
import { CopytradeService } from './copytrade/service.js';
import { LeaderReplay, leaderRows, withLeaderMarkets } from './copytrade/leader-replay.js';
import { MarketRegistry } from './data/markets.js';
import { loadRealHistory } from './data/real-history.js';

/** Everything a request handler may use. Built once per process by {@link startServices}. */
export interface Services {
  config: Config;
  log: Logger;
  clock: Clock;
  store: Store;
  actors: ActorRepository;
  host: ActorHost;
  timers: TimerService;
  keys: ApiKeyService;
  users: UserService;
  catalogue: Catalogue;
  /** The venue, through its port only (the simulated one here). */
  venue: VenuePort;
  orders: OrderService;
  strategies: StrategyService;
  /** Split, merge, redeem, withdrawals, withdrawable balances. */
  wallet: WalletService;
  idempotency: IdempotencyService;
  cursors: CursorCodec;
  /** The trade history (tape trades, trader fills, cash movements) and its feed of committed records. */
  history: TradeHistory;
  /** Copytrade subscriptions (engine/copytrade/service.ts). */
  copytrade: CopytradeService;
  /** Question, outcome and slug of the venue's markets and of the loaded real history's (data reads). */
  markets: MarketRegistry;
  /** Epoch ms the services started. */
  startedAtMs: number;
  /** Actors restored from the store at start-up. */
  restoredAtStart: number;
  /**
   * Wall-clock ms of the start-up phases (also logged): `open` (the store opened and loaded, keys,
   * users, venue), `restore` (every live actor restored, triggers re-armed), `reconcile` (orders
   * and strategies with the venue).
   */
  startPhasesMs: { open: number; restore: number; reconcile: number };
  /** Stops timers and closes the store (after the HTTP server stopped). */
  stop(): Promise<void>;
}

/** Options for tests: an in-memory store, a controlled clock. */
export interface StartOptions {
  store?: Store;
  clock?: Clock;
  /** Markets to trade (default: the project's data files); loading once per test file saves time. */
  catalogue?: Catalogue;
}

/**
 * Opens the store, restores every live actor, re-arms timers, makes sure the partner has a master
 * key, and starts the scheduler.
 * @returns the services and, when a master key was generated on this start, its token (to print once).
 */
export async function startServices(
  config: Config,
  log: Logger,
  options: StartOptions = {},
): Promise<{ services: Services; generatedMasterKey: string | null }> {
  const clock = options.clock ?? systemClock;
  const t0 = performance.now();
  const store = options.store ?? (await openStore(config, log));
  const actors = await ActorRepository.open(store);
  const keys = await ApiKeyService.open(store, clock);
  const users = await UserService.open(store, clock);
  const idempotency = await IdempotencyService.open(store, clock, log);
  const cursors = await CursorCodec.open(store);
  const history = await TradeHistory.open(store);
  const hostRef: { current?: ActorHost } = {};
  const timers = new TimerService(store, (t) => hostRef.current!.deliverTimer(t), log, config.schedulerPollMs);
  const host = new ActorHost(actors, timers, clock, log);
  hostRef.current = host;
  const generatedMasterKey = await keys.ensureMasterKey(config.partnerId, config.masterApiKey);
  const leader = config.copytradeLeaderReplay ? leaderRows() : null;
  const baseCatalogue = options.catalogue ?? loadCatalogue();
  const catalogue = leader ? withLeaderMarkets(baseCatalogue, leader) : baseCatalogue;
  const venue = await SimVenue.open({
    catalogue,
    store,
    clock,
    log,
    initialPusd: config.simInitialPusd,
    liquidityLevels: config.simLiquidityLevels,
    refillMs: config.simLiquidityRefillMs,
    replay: config.simReplay,
    replaySpeed: config.simReplaySpeed,
    captureReplay: config.simCapture,
    captureSpeed: config.simCaptureSpeed,
    recordPrints: config.tradeHistory
      ? async (trades) => {
          await history.recordAlone({ trades, fills: [], cash: [] });
        }
      : undefined,
  });
  const markets = new MarketRegistry(venue);
  const realHistory = config.tradeHistory ? await loadRealHistory(store, history, markets, clock) : null;
  const recorder = config.tradeHistory ? new HistoryRecorder(history, users, venue) : undefined;
  const orders = new OrderService(host, actors, venue, clock, log, recorder);
  // a new user's wallet opens with the initial pUSD: a credit on the chain, recorded in the history
  users.onCreated(async (user) => {
    try {
      const credit = await venue.openWallet(user._id);
      if (credit && recorder) await recorder.recordCash(store, user._id, 'credit', credit);
      venue.releaseWalletOp(user._id, initialCreditOpId(user._id));
    } catch (err) {
      log.error({ err, userId: user._id }, 'the initial credit of a new wallet was not recorded');
    }
  });
  const strategies = new StrategyService(host, actors, orders, venue, clock, log);
  const wallet = new WalletService(
    host,
    actors,
    venue,
    orders,
    clock,
    log,
    { blockDelayMs: config.simBlockDelayMs },
    recorder,
  );
  const copytrade = await CopytradeService.open({
    store,
    host,
    actors,
    router: strategies.childOrders,
    venue,
    users,
    feed: history,
    clock,
    log,
  });
  const t1 = performance.now();
  const { restored, quarantined } = await host.restoreAll();
  const t2 = performance.now();
  const reconciled = await orders.reconcile();
  const strategiesReconciled = await strategies.reconcile();
  const walletReconciled = await wallet.reconcile();
  const leaderReplay = leader
    ? new LeaderReplay(store, history, leader, config.copytradeLeaderReplaySpeed, clock, log)
    : null;
  if (leaderReplay)
    copytrade.onFollowed((address) => {
      if (address === leaderReplay.wallet) void leaderReplay.start();
    });
  const copytradeLive = await copytrade.start();
  const startPhasesMs = {
    open: Math.round(t1 - t0),
    restore: Math.round(t2 - t1),
    reconcile: Math.round(performance.now() - t2),
  };
  log.info(
    {
      restored,
      quarantined,
      reconciled,
      strategies: strategiesReconciled,
      wallet: walletReconciled,
      copytrade: copytradeLive,
      realHistory,
      startPhasesMs,
    },
    'actors restored and reconciled with the venue',
  );
  await timers.start();
  const services: Services = {
    config,
    log,
    clock,
    store,
    actors,
    host,
    timers,
    keys,
    users,
    catalogue,
    venue,
    orders,
    strategies,
    wallet,
    idempotency,
    cursors,
    history,
    copytrade,
    markets,
    startedAtMs: clock.now(),
    restoredAtStart: restored,
    startPhasesMs,
    async stop() {
      idempotency.close();
      strategies.stop();
      leaderReplay?.stop();
      await copytrade.idle();
      await strategies.idle();
      await timers.drain(config.shutdownGraceMs);
      await venue.close();
      await store.close();
    },
  };
  return { services, generatedMasterKey };
}

/**
 * Hands a freshly generated master key to the operator: printed once on stdout, as a plain block
 * of its own. It is written nowhere: the store keeps only its hash, so a key not copied from this
 * block is lost (set `MASTER_API_KEY` to choose one instead).
 * @param out - where the plain block goes: the logger's own destination (`api/main.ts`), so it
 *   is queued in order with the JSON log lines and never lands inside one; stdout by default.
 */
export function announceMasterKey(
  config: Config,
  token: string,
  out: { write(text: string): unknown } = process.stdout,
): void {
  out.write(
    `\nMASTER_API_KEY for partner '${config.partnerId}' (shown once, kept nowhere: copy it now):\n${token}\n\n`,
  );
}

/** Closes the HTTP server: stops accepting and ends idle keep-alive connections. */
export function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
  });
}
