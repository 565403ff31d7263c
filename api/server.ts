import { createServer, IncomingMessage, type Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import helmet from 'helmet';
import { closeServer, type Services } from '../engine/service.js';
import type { Logger } from '../engine/logger.js';
import { createApp, loggableUrl, requestLogLevel } from './app.js';
import { attachPush, type PushServer } from './push.js';

/** The HTTP server with its Socket.IO push server attached. */
export interface HttpService {
  server: Server;
  push: PushServer;
  /** Port actually bound (port 0 picks a free one). */
  port: number;
  /** Disconnects push clients, stops accepting and ends idle keep-alive connections. */
  close(): Promise<void>;
}

/** The port is taken (or cannot be bound): its message is the one line to print. */
export class PortInUseError extends Error {
  constructor(
    readonly host: string,
    readonly port: number,
    readonly code: string,
  ) {
    super(
      code === 'EADDRINUSE'
        ? `port ${port} on ${host} is already in use: stop the process holding it or set PORT to a free port`
        : `cannot listen on ${host}:${port} (${code}): set HOST / PORT to an address this process may bind`,
    );
    this.name = 'PortInUseError';
  }
}

/**
 * `X-Content-Type-Options: nosniff` (helmet) for what the HTTP server answers outside Express:
 * Socket.IO's client script and transport responses, and the start-up 503.
 */
const nosniff = helmet.xContentTypeOptions();
function noSniff(req: IncomingMessage, res: ServerResponse): void {
  nosniff(req, res, () => {});
}

/**
 * The fields of a log line for an answer given outside the application (the start-up 503,
 * Socket.IO's transport), shaped as the application's request lines: `req` with the URL as logged
 * ({@link loggableUrl}) and `res.statusCode`.
 */
function answerLine(
  req: IncomingMessage,
  status: number,
): { req: { method?: string; url: string }; res: { statusCode: number } } {
  return { req: { method: req.method, url: loggableUrl(req.url ?? '') }, res: { statusCode: status } };
}

const STARTING = { error: 'unavailable', message: 'the service is starting; retry shortly' };

/**
 * The answer while the services start behind an already bound port: 503 in the envelope, and its
 * log line (WARN, as every 503: {@link requestLogLevel}), shaped as the application's request lines.
 */
function starting(log: Logger | null): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    noSniff(req, res);
    res.writeHead(503, { 'content-type': 'application/json; charset=utf-8', 'retry-after': '1' });
    res.end(JSON.stringify(STARTING));
    log?.[requestLogLevel(503)](
      { ...answerLine(req, 503), error: STARTING.error, error_message: STARTING.message },
      'request completed',
    );
  };
}

/**
 * One log line for each answer Socket.IO's HTTP transport gives (`/socket.io/…`: handshakes,
 * long-polls, its refusals), shaped as the application's request lines. Those answers are
 * Engine.IO's own protocol (`{code, message}` on a refusal), which Socket.IO clients read, so they
 * keep it; a WebSocket upgrade is no HTTP answer and gets no line here.
 */
function socketIoLog(log: Logger): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    if (!req.url?.startsWith('/socket.io/')) return;
    const startMs = Date.now();
    res.once('finish', () => {
      const status = res.statusCode;
      const line = { ...answerLine(req, status), responseTime: Date.now() - startMs };
      log[requestLogLevel(status)](status >= 400 ? { ...line, error: 'transport_refused' } : line, 'request completed');
    });
  };
}

/** Node's HTTP parser failures answered with a status other than 400 (by `err.code`). */
const CLIENT_ERROR_STATUS: Record<string, [status: number, reason: string, error: string, message: string]> = {
  HPE_HEADER_OVERFLOW: [
    431,
    'Request Header Fields Too Large',
    'request_header_fields_too_large',
    'the request line and headers are larger than the server accepts (16 KiB): shorten the URL or the headers',
  ],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Request Timeout', 'request_timeout', 'the request was not received in time'],
};

/** How long a connection whose stream broke may still finish the responses under way on it (ms). */
const BROKEN_CONNECTION_GRACE_MS = 30_000;

type HttpSocket = Socket & { _httpMessage?: (ServerResponse & { writableFinished: boolean }) | null };

/**
 * Answers a request Node's HTTP parser refused before the application saw it (a malformed request
 * line or header, `Content-Length` with `Transfer-Encoding`, an over-long URL, an unknown method, a
 * request that did not arrive in time) with the error envelope `{error, message}` (spec part 7:
 * every non-2xx response is a JSON object), where Node's default writes a bare status line: 400
 * `invalid_request`, 431 `request_header_fields_too_large`, 408 `request_timeout`; always
 * `Connection: close` (the stream cannot be parsed on). Each such answer gets one log line on `log`
 * (INFO for a 4xx, as the application's request lines) with its status, `error` and the parser's code.
 *
 * When requests read before the broken one are still being answered on the connection (pipelined,
 * or the broken bytes followed a request's body), their responses are written first and the
 * connection then closes without a further answer: Node's default wrote its 400 in place of them,
 * so a client was told "bad request" about an order that had been placed. A request whose own body
 * was cut short gets the 400 (unless its answer had begun: then the connection just closes).
 */
export function answerClientError(err: NodeJS.ErrnoException, socket: Socket, log: Logger | null = null): void {
  const s = socket as HttpSocket;
  if (err.code === 'ECONNRESET' || !s.writable) {
    s.destroy();
    return;
  }
  const inFlight = s._httpMessage;
  // its request's body was cut short (the client closed mid-body, or
  // sent fewer bytes than announced): the broken request is that one
  const brokenIsInFlight = inFlight && !inFlight.req.complete;
  if (brokenIsInFlight && inFlight.headersSent) {
    s.destroy();
    return;
  }
  if (inFlight && !brokenIsInFlight) {
    const deadline = setTimeout(() => s.destroy(), BROKEN_CONNECTION_GRACE_MS);
    deadline.unref();
    const closeWhenIdle = (): void => {
      const current = s._httpMessage; // the next pipelined response is assigned as the previous finishes
      if (current && !current.writableFinished && !s.destroyed) {
        current.once('finish', () => setImmediate(closeWhenIdle));
        current.once('close', () => setImmediate(closeWhenIdle));
        return;
      }
      clearTimeout(deadline);
      s.destroySoon();
    };
    closeWhenIdle();
    return;
  }
  const [status, reason, error, message] =
    CLIENT_ERROR_STATUS[err.code ?? ''] ??
    (brokenIsInFlight
      ? [400, 'Bad Request', 'invalid_request', 'the request body ended before its Content-Length (or its last chunk)']
      : [400, 'Bad Request', 'invalid_request', 'malformed HTTP request']);
  const body = JSON.stringify({ error, message });
  // the parser read no usable request line: the line names the refusal, never the raw bytes (they may hold a token)
  log?.[requestLogLevel(status)](
    {
      res: { statusCode: status },
      error,
      error_message: message,
      parserError: err.code ?? null,
      remoteAddress: s.remoteAddress ?? null,
    },
    'request refused by the HTTP parser',
  );
  s.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; ` +
      `charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `X-Content-Type-Options: nosniff\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n${body}`,
  );
  s.destroySoon(); // once the answer is flushed
}

/**
 * The request and response classes of one server: plain Node ones until {@link startHttp} puts the
 * application's Express request and response prototypes (`app.request`, `app.response`) in their
 * chain, so that Express finds its methods already there instead of changing the prototype of
 * every request and response (api/app.ts `frontLayer`).
 */
function expressReadyClasses(): { Request: typeof IncomingMessage; Response: typeof ServerResponse } {
  class Request extends IncomingMessage {}
  class Response extends ServerResponse {}
  return { Request, Response: Response as unknown as typeof ServerResponse };
}
/**
 * Per server of {@link bindHttp}: its request and response classes,
 * and its start-up answer (removed once the API is attached).
 */
const serverClasses = new WeakMap<
  Server,
  ReturnType<typeof expressReadyClasses> & { starting: (req: IncomingMessage, res: ServerResponse) => void }
>();

/**
 * Binds the HTTP port before anything else starts (so a taken port fails before a master key is
 * minted); until {@link startHttp} attaches the API, every request answers 503 `unavailable`.
 * @param port - TCP port; 0 picks a free one.
 * @param log - where the start-up 503s and the HTTP parser's refusals are logged (one line each).
 * @throws {PortInUseError} when the address cannot be bound (`EADDRINUSE`, `EACCES`, …).
 */
export async function bindHttp(port: number, host: string, log: Logger | null = null): Promise<Server> {
  const classes = expressReadyClasses();
  const answerStarting = starting(log);
  const server = createServer({ IncomingMessage: classes.Request, ServerResponse: classes.Response }, answerStarting);
  serverClasses.set(server, { ...classes, starting: answerStarting });
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => answerClientError(err, socket, log));
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(err.code ? new PortInUseError(host, port, err.code) : err),
    );
    server.listen(port, host);
  });
  return server;
}

/**
 * Starts the REST API and the live-update namespace on one HTTP server.
 * @param port - TCP port; 0 picks a free one (tests).
 * @param bound - a server from {@link bindHttp} to serve on instead of binding `port` here.
 * @throws {PortInUseError} when the address cannot be bound.
 */
export async function startHttp(services: Services, port: number, host: string, bound?: Server): Promise<HttpService> {
  const app = createApp(services);
  const server = bound ?? (await bindHttp(port, host, services.log));
  const classes = serverClasses.get(server);
  if (classes) {
    Object.setPrototypeOf(classes.Request.prototype, app.request);
    Object.setPrototypeOf(classes.Response.prototype, app.response);
    server.removeListener('request', classes.starting);
  }
  server.on('request', app);
  const push = attachPush(server, services);
  server.prependListener('request', noSniff); // after Socket.IO took over the 'request' listeners
  server.prependListener('request', socketIoLog(services.log));
  return {
    server,
    push,
    port: (server.address() as AddressInfo).port,
    async close() {
      await push.close();
      await closeServer(server);
    },
  };
}
