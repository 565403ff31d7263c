/**
 * The one error type that reaches the HTTP layer. Every failure a client can cause is an
 * {@link ApiError}; the Express error middleware (api/errors.ts) writes it as the spec's error
 * envelope `{error, message?}` (spec part 7). Anything else is a server fault (500).
 */
export class ApiError extends Error {
  /**
   * @param status - HTTP status (spec part 7 table).
   * @param error - the envelope's `error` string; clients branch on status, then on this string.
   * @param message - optional human-readable detail (the envelope's `message`).
   * @param headers - extra response headers (for example `Retry-After`).
   */
  constructor(
    readonly status: number,
    readonly error: string,
    message?: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message ?? error);
    this.name = 'ApiError';
    this.detail = message;
  }

  /** The envelope's `message`, when one was given. */
  readonly detail: string | undefined;

  /** The JSON body written for this error. */
  toBody(): { error: string; message?: string } {
    return this.detail === undefined ? { error: this.error } : { error: this.error, message: this.detail };
  }
}

/** Shorthands for the statuses of spec part 7. Each returns an {@link ApiError} to throw. */
export const errors = {
  badRequest: (message: string) => new ApiError(400, 'invalid_request', message),
  unauthorized: (message: string) => new ApiError(401, 'unauthorized', message),
  forbidden: (message: string) => new ApiError(403, 'forbidden', message),
  notFound: (message: string) => new ApiError(404, 'not_found', message),
  conflict: (message: string) => new ApiError(409, 'conflict', message),
  notImplemented: (what: string) =>
    new ApiError(501, 'not_implemented', `${what} is part of the v2 specification but is not available on this service yet`),
  unavailable: (message: string) => new ApiError(503, 'unavailable', message),
};

/** Store write lost an optimistic-concurrency race: the revision on disk moved on. */
export class RevisionConflictError extends Error {
  constructor(readonly id: string, readonly expectedRevision: number) {
    super(`revision conflict on ${id}: expected revision ${expectedRevision}`);
    this.name = 'RevisionConflictError';
  }
}

/** A unique index refused a document. */
export class DuplicateKeyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DuplicateKeyError';
  }
}

/** An event was sent to an actor id the store does not hold. */
export class UnknownActorError extends Error {
  constructor(readonly id: string) {
    super(`unknown actor ${id}`);
    this.name = 'UnknownActorError';
  }
}
