/**
 * Process entry: `npm start`. Loads configuration (a bad value stops with one line naming the
 * variable), starts services and the HTTP server, and shuts down gracefully on SIGTERM/SIGINT:
 * stop accepting, drain the scheduler, flush the store.
 */
import { loadConfig, ConfigError } from '../engine/config.js';
import { createLogger } from '../engine/logger.js';
import { announceMasterKey, closeServer, startServices } from '../engine/service.js';
import { createApp } from './app.js';

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
  const app = createApp(services);
  const server = app.listen(config.port, config.host);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : config.port;
  log.info({ host: config.host, port }, `listening on http://${config.host}:${port}`);

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
    await closeServer(server);
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
