import type { Logger } from '../engine/logger.js';

/**
 * Makes an `uncaughtException` or `unhandledRejection` fatal: it is logged at FATAL with its stack
 * and the process exits with code 1. Nothing runs on in an unknown state; every acknowledged
 * change is already durable, so a supervisor's restart resumes safely.
 * @param exit - how to end the process (tests pass a spy); `process.exit` by default.
 * @returns a function that removes the handlers again.
 */
export function installFatalHandlers(
  log: Logger,
  exit: (code: number) => void = (code) => process.exit(code),
): () => void {
  let handled = false;
  const die = (kind: string) => (err: unknown) => {
    if (handled) return;
    handled = true;
    log.fatal({ err, event: kind }, `${kind}: exiting (state is durable; restart the service)`);
    log.flush?.();
    exit(1);
  };
  const onException = die('uncaughtException');
  const onRejection = die('unhandledRejection');
  process.on('uncaughtException', onException);
  process.on('unhandledRejection', onRejection);
  return () => {
    process.removeListener('uncaughtException', onException);
    process.removeListener('unhandledRejection', onRejection);
  };
}
