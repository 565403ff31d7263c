/**
 * Shared JSON Schemas (draft 2020-12). Every request and response body is declared in schemas/;
 * AJV validates requests against them, `FromSchema` derives the TypeScript types, and the served
 * OpenAPI document embeds them.
 */
import type { FromSchema } from 'json-schema-to-ts';

/** Spec part 7: every non-2xx body. */
export const ErrorEnvelope = {
  $id: 'ErrorEnvelope',
  type: 'object',
  additionalProperties: false,
  required: ['error'],
  properties: {
    error: { type: 'string', description: 'Stable error string; branch on the status first, then on this.' },
    message: { type: 'string', description: 'Human-readable detail.' },
  },
} as const;
export type ErrorEnvelope = FromSchema<typeof ErrorEnvelope>;

/**
 * Fields of every offset/limit page envelope (spec 2.9): the list goes under a resource key beside
 * them. `count` (the rows on this page) is the reference product's, kept beside the spec's four.
 */
export const PageFields = {
  count: { type: 'integer', minimum: 0, description: 'Rows on this page (the length of the list).' },
  total: { type: 'integer', minimum: 0 },
  limit: { type: 'integer', minimum: 1 },
  offset: { type: 'integer', minimum: 0 },
  has_more: { type: 'boolean' },
} as const;

/** Epoch milliseconds (every timestamp of this API that is a number). */
export const EpochMs = {
  type: 'integer',
  minimum: 0,
  maximum: 253402300799999,
  description: 'Unix epoch milliseconds (at most 253402300799999, the last millisecond of the year 9999).',
} as const;

/** GET /healthz response. */
export const Health = {
  $id: 'Health',
  type: 'object',
  additionalProperties: false,
  required: ['status', 'store', 'scheduler', 'venue', 'deliveries', 'uptime_ms'],
  properties: {
    status: { enum: ['ok', 'degraded'] },
    store: {
      type: 'object',
      additionalProperties: false,
      required: ['adapter', 'ok'],
      properties: {
        adapter: { enum: ['mongodb', 'sqlite'] },
        ok: {
          type: 'boolean',
          description:
            'false when the store does not answer, or cannot make writes durable (then mutating requests answer ' +
            '503 `unavailable` with `Retry-After`).',
        },
        error: {
          type: 'string',
          description:
            'Why writes cannot be made durable, while that lasts: a failed commit (a full disk, a read-only ' +
            'file; shown for 2 s or until a later commit succeeds), or on SQLite `store stopped: a WAL fsync ' +
            'failed (…)`, shown until the service restarts (every write is refused meanwhile).',
        },
      },
    },
    scheduler: {
      type: 'object',
      additionalProperties: false,
      required: ['running', 'failing_timers'],
      properties: {
        running: { type: 'boolean' },
        failing_timers: {
          type: 'integer',
          minimum: 0,
          description: 'Timers whose delivery or arming failed and that are being retried (0 when healthy).',
        },
      },
    },
    venue: {
      type: 'object',
      additionalProperties: false,
      required: ['ok', 'pending_writes'],
      description:
        "The venue's durability: `ok` false while a journal write is failing (order placement and cancels then " +
        'answer 503 with `Retry-After`; the writes are retried in order and nothing acknowledged is lost).',
      properties: {
        ok: { type: 'boolean' },
        pending_writes: { type: 'integer', minimum: 0, description: 'Venue journal entries not yet written.' },
        error: { type: 'string', description: 'The last write or checkpoint failure, while one is outstanding.' },
      },
    },
    deliveries: {
      type: 'object',
      additionalProperties: false,
      required: ['retrying', 'abandoned'],
      description:
        "Events on their way to orders and strategies (venue reports, child orders' changes, price triggers). " +
        '`retrying`: deliveries that failed (a store write) and wait for a retry with backoff, now. `abandoned`: ' +
        'deliveries to strategies given up after every retry since start (each logged at error); those ' +
        'strategies are brought up to date by the reconciliation at the next start, so health stays `degraded` ' +
        'until then.',
      properties: { retrying: { type: 'integer', minimum: 0 }, abandoned: { type: 'integer', minimum: 0 } },
    },
    uptime_ms: { type: 'integer', minimum: 0 },
  },
} as const;
export type Health = FromSchema<typeof Health>;

/** Dollar or share amount as a decimal string (never a JS number on the wire). */
export const DecimalString = { type: 'string', pattern: '^[0-9]+(\\.[0-9]+)?$', maxLength: 32 } as const;

/**
 * Shares as a decimal string of at most 2 decimals (trailing zeros aside: "5.50" is 5.5). Order
 * sizes (spec 2.1: `size`, `execution.clip_size`, bracket `size`).
 */
export const SharesString = { type: 'string', pattern: '^[0-9]+(\\.[0-9]{1,2}0*)?$', maxLength: 32 } as const;

/** At most 6 decimals (pUSD is a 6-decimal token), trailing zeros aside; a MARKET buy's `quote_amount`. */
export const USD_DECIMALS_PATTERN = '^[^.]*(\\.[0-9]{1,6}0*)?$';

/** A UTC day written `YYYY-MM-DD` (a statement's day). */
export const DAY_PATTERN = '^[0-9]{4}-[0-9]{2}-[0-9]{2}$';

/**
 * What a failed `pattern` says (api/validation.ts): the rule, for the patterns whose regular
 * expression would tell a client nothing.
 */
export const PATTERN_TEXT: Readonly<Record<string, string>> = {
  [SharesString.pattern]: 'must be a decimal string of shares with at most 2 decimals',
  [USD_DECIMALS_PATTERN]: 'has at most 6 decimals (pUSD)',
  [DAY_PATTERN]: 'must be a UTC day written YYYY-MM-DD',
};

/** An EVM address (any case on input; responses are EIP-55 checksummed). */
export const Address = { type: 'string', pattern: '^0x[0-9a-fA-F]{40}$' } as const;

/** The required fields of an offset/limit envelope whose list is under `key`. */
export const pageRequired = <K extends string>(key: K) =>
  [key, 'count', 'total', 'limit', 'offset', 'has_more'] as const;

/** Offset/limit page envelope with `items` under `key` (spec 2.9). */
export function offsetPage<K extends string, I extends object>(id: string, key: K, items: I, description: string) {
  return {
    $id: id,
    description,
    type: 'object',
    additionalProperties: false,
    required: pageRequired(key),
    properties: { [key]: { type: 'array', items }, ...PageFields } as {
      [P in K]: { type: 'array'; items: I };
    } & typeof PageFields,
  } as const;
}
