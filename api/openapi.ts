import { SCOPES } from '../engine/auth.js';
import { namedSchemas } from '../schemas/index.js';
import type { RouteSpec } from './context.js';
import { ROUTES } from './routes.js';

/** Meaning of each error status (spec part 7), for the shared error responses. */
const ERROR_STATUSES: Record<number, string> = {
  400:
    'Invalid request: a malformed or missing field, header or parameter; price out of range (the cents ' +
    'message of spec 2.1); `limit` above the endpoint maximum; a missing or non-UUID `Idempotency-Key`. ' +
    '`error` is `invalid_request` unless the spec names a string (`invalid window`).',
  401:
    'Unauthorized: missing, malformed (or more than one `Authorization` ' +
    'header), unknown, expired or revoked API key.',
  403: "Forbidden: the key lacks the endpoint's scope, or a per-user key names another user.",
  404: 'Not found: no such route, resource, or user (`X-Partner-User-Id`); also a resource of another user.',
  409:
    'Conflict: the resource is in a state that forbids this (already final; an active copytrade ' +
    'for that leader; a strategy already executing); `idempotency_key_conflict` when the key was used for a ' +
    'different request; or `idempotency_key_in_use` while the first request with that key still runs (with ' +
    '`Retry-After`).',
  410: 'Gone: `QUOTE_EXPIRED` (combo accept after `expires_at`): re-quote.',
  413:
    'Request body larger than BODY_LIMIT_BYTES (answered at once, with ' +
    '`Connection: close`, when `Content-Length` announces it).',
  415: 'Request body is not application/json.',
  422:
    'Business rule: `INSUFFICIENT_BALANCE`, `NO_LIQUIDITY`, `order crosses book`, `WOULD_TRIGGER_IMMEDIATELY` (a ' +
    'STOP_LOSS or TRAILING_STOP whose level the touch has already reached), ' +
    'or `Not enough shares to place this sell — holding <X>`.',
  429: 'Rate limit exceeded (RATE_LIMIT_PER_MIN per API key): wait at least `Retry-After` seconds, with jitter.',
  500: 'Server fault: retry with exponential backoff.',
  501: 'Part of the v2 specification, not available on this service yet.',
  503:
    '`unavailable`, with `Retry-After` (seconds): the service cannot take this now and changed nothing; retry ' +
    'after the delay. Statements: data not ready, poll later. Orders and cancels: the venue cannot record ' +
    'operations (a store fault; `GET /healthz` shows `venue.ok: false`) or the service is still starting. ' +
    '`overloaded` (every POST, PATCH and DELETE): the service is at capacity (WRITE_CONCURRENCY requests running, ' +
    'WRITE_QUEUE_LENGTH waiting, or no slot within WRITE_QUEUE_WAIT_MS); the request was not run.',
};

const TAGS: Record<string, string> = {
  'trade.health': 'Public: liveness and this document.',
  'trade.users': 'Partner-level (master key): provision users, mint and revoke per-user keys.',
  'trade.read': 'Reads: account, balances, positions, open orders, activity, strategies, market data.',
  'trade.execute': 'Place orders and strategies; redeem, split, merge; copytrade.',
  'trade.cancel': 'Cancel orders and untriggered strategies.',
  'trade.withdraw': 'Withdraw to an external address (granted explicitly).',
  'trade.combos': 'Combo (parlay) quotes, accepts, redeems and positions.',
};

const DESCRIPTION = `Partner trading API for prediction-market outcome tokens (spec v2.0).

Conventions:
- Prices are decimal probabilities 0.001–0.999 (never cents); sizes are shares; \`quote_amount\` and \`budget_usdc\` \
are US dollars. Quantities travel as decimal strings.
- Timestamps (\`created_at\`, \`updated_at\`, \`expiration\`, \`expires_at\` of keys) are Unix epoch milliseconds; \
combo \`expires_at\` is ISO 8601.
- Every non-2xx body is \`{error, message?}\`: branch on the status, then on \`error\`. Successful bodies never carry \
\`error\` and may carry \`warnings\`.
- Every POST, PATCH and DELETE needs an \`Idempotency-Key\` (a UUID v4 per operation, the same when retrying). Keys \
are scoped to the API key; a retry of a completed request returns the original status and body with \
\`Idempotent-Replayed: true\` (a key mint's replay without its \`api_key\`, which is shown once: a \`message\` says \
so); the same key on a different request answers 409 \`idempotency_key_conflict\`; a duplicate while the first still \
runs answers 409 \`idempotency_key_in_use\`. Successful responses are kept 24 hours; refused requests are not kept.
- HTTP: a path of this document with a method it does not list answers 405 \`method_not_allowed\` with \`Allow\`; \
\`OPTIONS\` on it answers 204 with \`Allow\` (no authentication). A request the HTTP parser cannot read (malformed \
request line or header, \`Content-Length\` with \`Transfer-Encoding\`) answers 400 \`invalid_request\`, an over-long \
URL or headers (16 KiB) 431 \`request_header_fields_too_large\`, both in the error envelope with \`Connection: close\`.
- Authentication comes first: without a valid token the answer is 401 whatever the body (malformed, not JSON, too \
large); the body is read only after the key and its scope are checked. Responses of authenticated endpoints carry \
\`Cache-Control: no-store\`.
- Master keys act for a user with the \`X-Partner-User-Id\` header; per-user keys act for their bound user.
- Query parameters: an endpoint that lists its query parameters refuses any other one (a misspelt \`cursorr\` or \
\`ofset\` would otherwise serve page 1 again) with 400 \`invalid_request\` whose message names it and the ones the \
endpoint takes.
- Rate limit: RATE_LIMIT_PER_MIN requests per minute per API key (default 600); 429 with \`Retry-After\` and the IETF \
\`RateLimit\` / \`RateLimit-Policy\` headers.
- Load shedding: when the service is at capacity a POST, PATCH or DELETE answers 503 \`overloaded\` with \
\`Retry-After\` (seconds) before anything runs; retry after the delay with jitter, with the same \`Idempotency-Key\`.
- \`/v1/trade/*\` mounts reads, cancels and user provisioning with the same behaviour.

Live updates (Socket.IO 4, same host and port, namespace \`/v2/trade\`; see the README):
- Connect with \`io(base + '/v2/trade', { auth: { token: API_KEY, partner_user_id?, batch_ms? } })\`. A per-user key \
sees its user; a master key sees all of its partner's users, or one named by \`partner_user_id\`. The key needs \
\`trade.read\`. A refused handshake ends in \`connect_error\` with \`message\` = the error string (\`unauthorized\`, \
\`forbidden\`, \`not_found\`, \`invalid_request\`) and \`data\` = the error envelope. Revoked keys are disconnected at \
once, expiring keys when they expire.
- Server events: \`order.updated\` (an OrderView), \`strategy.updated\` (a StrategyRecord), \`withdrawal.updated\` (a \
WithdrawalView), \`wallet_operation.updated\` (a WalletOpResponse: split, merge, redeem), \`combo.updated\` (a \
ComboPosition), \`copytrade.updated\` (a \
CopytradeView: a subscription with its counters, after each copy, skip or change), each plus \`revision\` \
(increases by one per persisted change of that record: a gap means a missed update, re-read over REST), \
\`platform_user_id\` and \`updated_at\`; \`book.updated\` (a BookResponse of 10 levels a side plus a per-token \
\`revision\` and \`at\`) for tokens subscribed with \`book.subscribe\` \`{token_id}\` (acknowledged \`{ok: true, \
token_id}\` or \`{ok: false, error, message}\`; \`book.unsubscribe\` stops it).
- \`balance.updated\` (a BalancesResponse plus a per-user \`revision\`, \`platform_user_id\`, \`at\`) and \
\`position.updated\` (\`{positions, revision, platform_user_id, at}\`: the positions that changed, each a \
PositionsPage item; a position sold or redeemed to nothing comes once with \`size\` "0") after venue operations that \
changed the user's wallet, to that user's connections only (a master key sees them with \`partner_user_id\`). \
\`market.updated\` (a MarketsPage item plus \`closed\`, \`resolved\`, \`winning_token_id\`, a per-market \`revision\` \
and \`at\`) when a market's tick size changes or it closes or resolves, to connections subscribed to that market with \
\`markets.subscribe\` \`{condition_ids}\` (calls add up; acknowledged \`{ok: true, markets}\` with the named markets' \
current state) or to every market with \`markets.subscribe\` \`{}\`; \`markets.unsubscribe\` \`{condition_ids?}\` \
stops the named markets, or all.
- Batched delivery (opt-in): with \`auth.batch_ms\` (1 to 1000) the connection receives its \`order.updated\`, \
\`strategy.updated\`, \`withdrawal.updated\`, \`wallet_operation.updated\`, \`combo.updated\`, \
\`copytrade.updated\`, \`balance.updated\` and \
\`position.updated\` as \`updates.batch\` \`{records: [{event, data}], batch_ms}\`: one frame per window of that many \
milliseconds per room, records in the order the separate events would have come, none dropped or merged, each with its \
own revision. Without it, nothing changes.
- An update is pushed only after it is persisted, in write order per record. Connection-state recovery: a client that \
reconnects within 2 minutes gets the updates it missed.`;

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

/** Schema → component: drops `$id`, turns `$ref: 'Name'` into a component reference. */
function toComponent(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(toComponent);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    if (k === '$id') continue;
    out[k] = k === '$ref' && typeof v === 'string' && !v.startsWith('#') ? `#/components/schemas/${v}` : toComponent(v);
  }
  return out;
}

const nameOf = new Map<object, string>(Object.entries(namedSchemas).map(([name, schema]) => [schema as object, name]));

/** A route's schema: a reference when it is a named schema, inline otherwise. */
function schemaRef(schema: object): unknown {
  const name = nameOf.get(schema);
  return name ? ref(name) : toComponent(schema);
}

function operationId(method: string, path: string): string {
  const words = path
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w) => w[0]!.toUpperCase() + w.slice(1));
  return method + words.join('');
}

function operation(route: RouteSpec, path: string, v1: boolean): Record<string, unknown> {
  const mutating = route.method !== 'get';
  const parameters: Record<string, unknown>[] = [];
  for (const m of path.matchAll(/:(\w+)/g)) {
    parameters.push({
      name: m[1],
      in: 'path',
      required: true,
      schema: toComponent(route.params?.[m[1]!] ?? { type: 'string', minLength: 1 }),
    });
  }
  for (const [name, schema] of Object.entries(route.query?.properties ?? {})) {
    const { description, ...rest } = schema as { description?: string };
    parameters.push({
      name,
      in: 'query',
      required: route.query?.required?.includes(name) ?? false,
      schema: toComponent(rest),
      ...(description ? { description } : {}),
    });
  }
  if (mutating) parameters.push({ $ref: '#/components/parameters/IdempotencyKey' });
  if (route.user !== 'none') parameters.push({ $ref: '#/components/parameters/PartnerUserId' });

  const responses: Record<string, unknown> = {};
  const successes = Object.entries(route.responses ?? {});
  if (successes.length === 0) successes.push(['200', { type: 'object', description: 'Shape not fixed yet.' }]);
  for (const [status, schema] of successes) {
    responses[status] = {
      description:
        Number(status) >= 300
          ? ((schema as { description?: string }).description ?? 'Not ready: the same body, naming the part at fault.')
          : route.handler
            ? 'Success.'
            : 'Success (once built).',
      ...(mutating ? { headers: { 'Idempotent-Replayed': { $ref: '#/components/headers/IdempotentReplayed' } } } : {}),
      // a body that says when to retry (`retry_after`) comes with the same in `Retry-After`
      ...('retry_after' in ((schema as { properties?: object }).properties ?? {})
        ? {
            headers: {
              'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer' } },
            },
          }
        : {}),
      content: { 'application/json': { schema: schemaRef(schema) } },
    };
  }
  const errorStatuses = new Set<number>([400, 500, ...(route.errors ?? [])]);
  if (route.scope) [401, 403].forEach((s) => errorStatuses.add(s));
  if (route.path !== '/healthz') errorStatuses.add(429);
  if (route.body) [413, 415].forEach((s) => errorStatuses.add(s));
  if (route.user === 'required' || route.user === 'optional') errorStatuses.add(404);
  // 503 `overloaded`: load shedding (api/admission.ts)
  if (mutating) [409, 422, 503].forEach((s) => errorStatuses.add(s));
  if (!route.handler) errorStatuses.add(501);
  for (const s of [...errorStatuses].sort()) responses[String(s)] = { $ref: `#/components/responses/E${s}` };

  const scopeNote = route.scope
    ? `Scope: \`${route.scope}\`${route.masterOnly ? ' (master key only)' : ''}.`
    : 'Public: no authentication.';
  const built = route.handler ? '' : ' Not built yet: answers 501 after the checks.';
  const v1Note = v1 ? ` Version 1 mount of \`${route.path}\`: same behaviour.` : '';
  return {
    operationId: operationId(route.method, path) + (v1 ? 'V1' : ''),
    summary: route.summary,
    description: `${scopeNote}${built}${v1Note}${route.description ? `\n\n${route.description}` : ''}`,
    tags: [route.tag],
    security: route.scope ? [{ bearerAuth: [route.scope] }] : [],
    parameters,
    ...(route.body
      ? {
          requestBody: {
            required: true,
            content: {
              'application/json': {
                schema: schemaRef(route.body),
                ...(route.example ? { example: route.example } : {}),
              },
            },
          },
        }
      : {}),
    responses,
  };
}

/**
 * Builds the OpenAPI 3.1 document from the route table and the named JSON Schemas: every path and
 * parameter, the scope of each operation as its security requirement, every success and error
 * status, and the schemas as components.
 * @returns the document, served at GET /v2/trade/openapi.json.
 */
export function buildOpenApi(): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of ROUTES) {
    const mounts: Array<[string, boolean]> = [[route.path, false]];
    if (route.v1) mounts.push([route.path.replace(/^\/v2\//, '/v1/'), true]);
    for (const [p, v1] of mounts) {
      const oaPath = p.replace(/:(\w+)/g, '{$1}');
      (paths[oaPath] ??= {})[route.method] = operation(route, p, v1);
    }
  }
  // only the error answers some operation refers to (a route without a handler adds 501)
  const referred = new Set([...JSON.stringify(paths).matchAll(/#\/components\/responses\/E(\d+)/g)].map((m) => m[1]));
  const errorResponses = Object.fromEntries(
    Object.entries(ERROR_STATUSES)
      .filter(([status]) => referred.has(status))
      .map(([status, description]) => [
        `E${status}`,
        {
          description,
          ...(status === '429' || status === '409'
            ? {
                headers: {
                  'Retry-After': {
                    description: 'Seconds to wait before retrying.',
                    schema: { type: 'integer', minimum: 0 },
                  },
                },
              }
            : {}),
          content: { 'application/json': { schema: ref('ErrorEnvelope') } },
        },
      ]),
  );
  return {
    openapi: '3.1.0',
    info: {
      title: 'Partner Trading Service',
      version: '2.0.0',
      summary: 'REST API for trading prediction-market outcome tokens on a central limit order book.',
      description: DESCRIPTION,
      license: { name: 'Proprietary', url: 'https://example.invalid/license' },
      contact: { name: 'Partner Trading Service maintainers' },
    },
    servers: [{ url: 'http://127.0.0.1:8080', description: 'Local `npm start` with the default configuration' }],
    tags: Object.entries(TAGS).map(([name, description]) => ({ name, description })),
    paths,
    components: {
      securitySchemes: {
        bearerAuth: {
          type: 'http',
          scheme: 'bearer',
          description:
            `API key as \`Authorization: Bearer <API_KEY>\`. Scopes (additive; ` +
            `listed per operation): ${SCOPES.join(', ')}.`,
        },
      },
      parameters: {
        IdempotencyKey: {
          name: 'Idempotency-Key',
          in: 'header',
          required: true,
          description: 'A fresh UUID v4 per operation; the same one when retrying (spec 5.6).',
          schema: { type: 'string', format: 'uuid' },
        },
        PartnerUserId: {
          name: 'X-Partner-User-Id',
          in: 'header',
          required: false,
          description:
            'With a master key: the partner_user_id this request acts for (required on ' +
            'user-bound endpoints). Per-user keys may omit it.',
          schema: { type: 'string', minLength: 1, maxLength: 128 },
        },
      },
      headers: {
        IdempotentReplayed: {
          description:
            '`true` when this response is the stored response of an earlier request with the same Idempotency-Key.',
          schema: { type: 'string', enum: ['true'] },
        },
      },
      responses: errorResponses,
      schemas: Object.fromEntries(Object.entries(namedSchemas).map(([name, schema]) => [name, toComponent(schema)])),
    },
  };
}
