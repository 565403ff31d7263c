import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { ApiError } from './errors.js';

/** Seconds a shed request is told to wait (`Retry-After`). */
export const OVERLOADED_RETRY_AFTER_SEC = 1;

/** Limits of {@link admission} (settings WRITE_CONCURRENCY, WRITE_QUEUE_LENGTH, WRITE_QUEUE_WAIT_MS). */
export interface AdmissionLimits {
  /** Requests handled at once; 0 = no limit (everything is admitted at once). */
  concurrency: number;
  /** Requests that may wait for a slot; beyond it the answer is 503 at once. */
  queueLength: number;
  /** Longest wait for a slot (ms); then 503. */
  queueWaitMs: number;
}

interface Waiter {
  admit(): void;
  timer: NodeJS.Timeout;
  req: Request;
}

/** 503 `overloaded` with `Retry-After` (the error envelope): the request was not run, nothing changed. */
function overloaded(why: string): ApiError {
  return new ApiError(503, 'overloaded', `the service is at capacity (${why}); nothing was changed: retry after Retry-After seconds, with jitter`, {
    'Retry-After': String(OVERLOADED_RETRY_AFTER_SEC),
  });
}

/**
 * Load shedding for mutating requests (issue 15, item 2): at most `concurrency` run at once, at
 * most `queueLength` wait (first come, first served) and none waits longer than `queueWaitMs`.
 * Beyond that the answer is 503 `overloaded` with `Retry-After` in the error envelope, before the
 * body is read or anything changes. Without a bound, a burst beyond the service's throughput made
 * every request wait behind all the others, until clients gave up without an answer (autocannon's
 * 10 s timeouts at 200 connections); now every request gets an HTTP answer in bounded time.
 * A slot is freed when the response is finished or the connection closes, whichever comes first.
 */
export function admission(limits: AdmissionLimits): RequestHandler {
  if (limits.concurrency <= 0) return (_req, _res, next) => next();
  let running = 0;
  const queue: Waiter[] = [];
  const release = () => {
    running--;
    while (queue.length > 0 && running < limits.concurrency) {
      const w = queue.shift()!;
      clearTimeout(w.timer);
      if (w.req.socket.destroyed) continue; // the client left while waiting
      w.admit();
    }
  };
  const admit = (res: Response, next: NextFunction) => {
    running++;
    let released = false;
    const done = () => {
      if (released) return;
      released = true;
      release();
    };
    res.once('finish', done);
    res.once('close', done);
    next();
  };
  return (req: Request, res: Response, next: NextFunction) => {
    if (running < limits.concurrency) return admit(res, next);
    if (queue.length >= limits.queueLength) return next(overloaded(`${limits.concurrency} requests running and ${queue.length} waiting`));
    const w: Waiter = {
      req,
      admit: () => admit(res, next),
      timer: setTimeout(() => {
        const at = queue.indexOf(w);
        if (at >= 0) queue.splice(at, 1);
        next(overloaded(`no slot within ${limits.queueWaitMs} ms`));
      }, limits.queueWaitMs),
    };
    queue.push(w);
  };
}
