import { pino, type Logger } from 'pino';

/**
 * Creates the service logger (pino, JSON lines on stdout). Authorization headers, API keys and
 * private keys are redacted wherever they might appear.
 * @param level - pino level name (`LOG_LEVEL`).
 */
export function createLogger(level: string): Logger {
  return pino({
    level,
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers.cookie',
        'headers.authorization',
        'api_key',
        '*.api_key',
        'privateKey',
        '*.privateKey',
      ],
      censor: '[redacted]',
    },
  });
}

export type { Logger };

/**
 * The logger's destination (pino's own stream on stdout). Plain text written here is queued in
 * order with the JSON lines, so it never lands inside one (a direct `process.stdout.write` can,
 * since pino writes asynchronously).
 */
export function logDestination(log: Logger): { write(text: string): unknown } {
  return (log as unknown as Record<symbol, { write(text: string): unknown }>)[pino.symbols.streamSym]!;
}
