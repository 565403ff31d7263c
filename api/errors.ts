import type { ErrorRequestHandler, RequestHandler } from 'express';
import { DomainError, errors } from '../engine/errors.js';
import { httpOf } from './error-map.js';

/**
 * An HTTP error answer: the status, the spec's error envelope `{error, message?}` (spec part 7)
 * and headers. The API layer's own failures (body parsing, media type, rate limit, parameters)
 * are thrown as ApiError; the engine's {@link DomainError}s become one in {@link toApiError}.
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

/**
 * The HTTP answer of a thrown value: an {@link ApiError} as it is, a {@link DomainError} through
 * the mapping of api/error-map.ts, a body-parser failure by its type; null for anything else
 * (a server fault).
 */
export function toApiError(err: unknown): ApiError | null {
  if (err instanceof ApiError) return err;
  if (err instanceof DomainError) {
    const h = httpOf(err);
    return new ApiError(h.status, h.error, h.message || undefined, h.headers);
  }
  return fromBodyParser((err ?? {}) as { type?: string; message?: string });
}

/** Unknown route: 404 in the envelope. */
export const notFoundHandler: RequestHandler = (req) => {
  throw errors.notFound(`no route ${req.method} ${req.path}`);
};

/**
 * Whether `text` is valid JSON (body-parser's strict mode
 * refuses a valid `null`, `1` or `"x"` body as a parse failure).
 */
function isJson(text: unknown): boolean {
  if (typeof text !== 'string') return false;
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** Maps body-parser's failures to the statuses of spec part 7. */
function fromBodyParser(err: { type?: string; status?: number; message?: string; body?: unknown }): ApiError | null {
  switch (err.type) {
    case 'entity.parse.failed':
      return new ApiError(
        400,
        'invalid_request',
        isJson(err.body) ? 'the JSON body must be an object' : 'malformed JSON body',
      );
    case 'entity.too.large':
      return new ApiError(413, 'payload_too_large', 'request body is larger than the limit');
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new ApiError(415, 'unsupported_media_type', err.message ?? 'unsupported body encoding');
    case 'request.aborted':
      return new ApiError(400, 'invalid_request', 'request aborted');
    default:
      // the router could not decode a path parameter (`/orders/%ff`): the URL's, not the body's
      if (err.message?.startsWith('Failed to decode param'))
        return new ApiError(400, 'invalid_request', 'the URL path has a malformed percent-escape');
      // a body that cannot be read as sent (a corrupt gzip/deflate/br stream, a length that does
      // not match): body-parser marks it a 4xx; it is the client's, never a server fault
      if (typeof err.status === 'number' && err.status >= 400 && err.status < 500) {
        return new ApiError(
          400,
          'invalid_request',
          'the request body could not be read (a corrupt Content-Encoding stream, or a length that does not match)',
        );
      }
      return null;
  }
}

/**
 * The one error middleware: every thrown or rejected error ends here and is written as the spec's
 * envelope `{error, message?}`. Client-caused errors keep their status; anything else is a 500
 * whose detail goes to the log, never to the client.
 */
export const errorHandler: ErrorRequestHandler = (err, req, res, _next) => {
  const known = toApiError(err);
  const apiErr =
    known ??
    new ApiError(500, 'internal_error', 'the server failed to handle this request; retry with exponential backoff');
  if (!known) req.log?.error({ err }, 'unhandled error');
  if (res.headersSent) return;
  for (const [k, v] of Object.entries(apiErr.headers)) res.setHeader(k, v);
  const body = apiErr.toBody();
  if (known) res.locals.errorEnvelope = body; // the request's log line names it (api/app.ts)
  res.status(apiErr.status).json(body);
};
