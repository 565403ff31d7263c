/**
 * Process entry: `npm start`. Loads configuration (a bad value stops with one line naming the
 * variable), starts services and the HTTP server, and shuts down gracefully on SIGTERM/SIGINT:
 * stop accepting, drain the scheduler, flush the store.
 */
import { loadConfig, ConfigError } from '../engine/config.js';
import { createLogger } from '../engine/logger.js';
import { announceMasterKey, startServices } from '../engine/service.js';
import { startHttp } from './server.js';

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
  const { services, generatedMasterKey } = await startServices(config, log);
  if (generatedMasterKey) await announceMasterKey(config, generatedMasterKey);
  const http = await startHttp(services, config.port, config.host);
  const port = http.port;
  log.info({ host: config.host, port }, `listening on http://${config.host}:${port} (live updates: Socket.IO namespace /v2/trade; dashboard: /dashboard)`);

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
  process.stderr.write(`fatal: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
