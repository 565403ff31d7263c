/**
 * Process entry: `npm start`. Loads configuration (a bad value stops with one line naming the
 * variable), binds the HTTP port (a taken port stops with one line naming it, before anything
 * else happens), starts services (a DATA_DIR held by another process stops with one line naming
 * the folder, a MongoDB database held by another engine process stops with one line naming the
 * holder, a standalone MongoDB server is refused unless allowed), serves, and shuts down gracefully on SIGTERM/SIGINT:
 * stop accepting, drain the scheduler, flush the store. An uncaught exception or unhandled rejection is fatal (exit 1).
 */
import { loadConfig, ConfigError } from '../engine/config.js';
import { createLogger, logDestination } from '../engine/logger.js';
import { announceMasterKey, startServices } from '../engine/service.js';
import {
  DataDirLockedError,
  EngineLeaseHeldError,
  MongoStoreRefusedError,
  OldStoreDataError,
} from '../engine/store/index.js';
import { installFatalHandlers } from './fatal.js';
import { missingNodeFlags } from './node-flags.js';
import { bindHttp, PortInUseError, startHttp } from './server.js';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`configuration error: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const log = createLogger(config.logLevel);
  installFatalHandlers(log);
  const missing = missingNodeFlags(process.execArgv, process.env.NODE_OPTIONS);
  if (missing.length)
    log.warn(
      { missing },
      `started without ${missing.join(' ')}: npm start passes it; with node's defaults the garbage collector ` +
        'takes more CPU under load (docs/operations.md, "Node flags")',
    );
  const bound = await bindHttp(config.port, config.host, log);
  const { services, generatedMasterKey } = await startServices(config, log);
  if (generatedMasterKey) {
    // Before the API answers: a client that sees /healthz 200 finds the key printed.
    announceMasterKey(config, generatedMasterKey, logDestination(log));
    await new Promise<void>((resolve) => log.flush(() => resolve()));
  }
  const http = await startHttp(services, config.port, config.host, bound);
  const port = http.port;
  log.info(
    { host: config.host, port },
    `listening on http://${config.host}:${port} (live updates: Socket.IO namespace /v2/trade; dashboard: /dashboard)`,
  );

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    const force = setTimeout(() => {
      log.error('graceful shutdown timed out; exiting');
      process.exit(1);
    }, config.shutdownGraceMs + 5000);
    force.unref();
    await http.close();
    await services.stop();
    log.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

main().catch((err: unknown) => {
  // A refusal to start is one line; anything else keeps its stack.
  const known =
    err instanceof PortInUseError ||
    err instanceof DataDirLockedError ||
    err instanceof EngineLeaseHeldError ||
    err instanceof MongoStoreRefusedError ||
    err instanceof OldStoreDataError;
  process.stderr.write(
    known
      ? `cannot start: ${err.message}\n`
      : `fatal: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exit(1);
});
