import express, { type RequestHandler } from 'express';

/**
 * A failure shaped as body-parser's (its `type`, `status`, and
 * for a parse failure the `body`), mapped by api/errors.ts.
 */
function bodyError(message: string, type: string, body?: string): Error {
  const status = type === 'entity.too.large' ? 413 : 400;
  return Object.assign(new Error(message), {
    type,
    status,
    statusCode: status,
    expose: true,
    ...(body !== undefined ? { body } : {}),
  });
}

/** JSON's whitespace (RFC 8259): what body-parser's strict mode skips before the first `{` or `[`. */
function firstNonWhitespace(text: string): string | undefined {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return text[i];
  }
  return undefined;
}

/** Content-Length as sent: decimal digits only (anything else goes the general way). */
const DECIMAL_LENGTH = /^[0-9]{1,15}$/;

/**
 * The JSON body parser of the API: `express.json({limit, strict: true, type: application/json
 * and application/*+json})` — 413 `entity.too.large` over `limitBytes` (on the fast path below
 * at once, before the body is read, when `Content-Length` announces more, with `Connection: close`), 400
 * `entity.parse.failed` for malformed JSON or a JSON value that is not an object or array, 415 for a charset or
 * encoding it cannot read — with a fast path for the common request: a
 * `Content-Type` of exactly `application/json` (or `application/json; charset=utf-8`), a
 * `Content-Length` and no `Content-Encoding` are read and parsed here, without
 * body-parser's per-request header parsing. The outcome is the same either way: `req.body` the
 * parsed value (a leading UTF-8 BOM skipped, as body-parser does), or the same error `type` and
 * `status` handed to `next` (an oversized one sooner). Every other request (compressed, chunked,
 * another charset or media type) goes through express.json itself.
 * @param limitBytes - body size limit (bytes).
 */
export function jsonBody(limitBytes: number): RequestHandler {
  const general = express.json({ limit: limitBytes, strict: true, type: ['application/json', 'application/*+json'] });
  return (req, res, next) => {
    const h = req.headers;
    const length = h['content-length'];
    if (length === undefined && h['transfer-encoding'] === undefined) {
      // no body (body-parser's `hasBody`): nothing to read
      if (!Object.prototype.hasOwnProperty.call(req, 'body')) req.body = undefined;
      return next();
    }
    const type = h['content-type'];
    if (
      (type !== 'application/json' && type !== 'application/json; charset=utf-8') ||
      length === undefined ||
      h['transfer-encoding'] !== undefined ||
      h['content-encoding'] !== undefined ||
      !DECIMAL_LENGTH.test(length) ||
      !req.readable
    ) {
      return general(req, res, next);
    }
    const expected = Number(length);
    if (expected > limitBytes) {
      // announced over the limit: answered at once (body-parser would read the whole body first,
      // leaving the client waiting for as long as it takes to send it, or forever when it waits);
      // what the client still sends is read and dropped, and the connection ends after the answer
      res.setHeader('Connection', 'close');
      req.resume();
      return next(bodyError('request entity too large', 'entity.too.large'));
    }
    if (expected === 0) return general(req, res, next);
    const chunks: Buffer[] = [];
    let received = 0;
    let finished = false;
    const done = (err: Error | null) => {
      if (finished) return;
      finished = true;
      req.removeListener('data', onData);
      req.removeListener('end', onEnd);
      req.removeListener('error', onError);
      req.removeListener('aborted', onAborted);
      req.removeListener('close', onClose);
      if (err) return next(err);
      if (received !== expected)
        return next(bodyError('request size did not match content length', 'request.size.invalid'));
      let text = (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, received)).toString('utf8');
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      const first = text[0] === '{' || text[0] === '[' ? text[0] : firstNonWhitespace(text);
      if (first !== '{' && first !== '[')
        return next(
          bodyError('strict violation: the body must be a JSON object or array', 'entity.parse.failed', text),
        );
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch (e) {
        return next(bodyError((e as Error).message, 'entity.parse.failed', text));
      }
      req.body = body;
      next();
    };
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      chunks.push(chunk);
    };
    const onEnd = () => done(null);
    const onError = () => done(bodyError('request aborted', 'request.aborted'));
    const onAborted = onError;
    const onClose = onError;
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('aborted', onAborted);
    req.on('close', onClose);
  };
}
