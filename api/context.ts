import type { Request } from 'express';
import type { Principal, Scope } from '../engine/auth.js';
import type { Services } from '../engine/service.js';
import type { ActorRecord } from '../engine/store/actors.js';
import type { UserDoc } from '../engine/users.js';

/** What a handler gets: the authenticated principal, the user it acts for, and the services. */
export interface HandlerContext {
  req: Request;
  services: Services;
  principal: Principal | null;
  /** Present on user-bound routes (always), and on optional-user routes when named. */
  user: UserDoc | null;
  /**
   * On mutating requests: the id seed of what this request creates, derived from its
   * `Idempotency-Key` (`IdempotencyService.resourceSeed`, engine/idempotency.ts); null otherwise.
   */
  resourceSeed: string | null;
  /**
   * On requests with an `Idempotency-Key`: when the first attempt of this request claimed the key
   * (epoch ms; a retry gets the first attempt's time: `ExecuteClaim.atMs`), for time-ordered ids
   * built with `resourceSeed` (`timeOrderedSeed`, engine/idempotency.ts). Absent otherwise.
   */
  firstAttemptAtMs?: number;
  /**
   * On requests with an `Idempotency-Key`: binds the response to the steps of actor `actorId`
   * while the handler runs: each step the actor persists stores `respond(record)` as the request's
   * answer in the same transaction (`ActorHost.bindStepWrites`), so a crash after the step replays
   * that answer and never finds the step without it. `respond` must give what the handler returns
   * for that record. With `afterCreation`, the actor's creation is left out (see
   * `ActorHost.bindStepWrites`): a crash right after it is answered from the actor found by its id.
   * Absent otherwise (nothing to bind).
   */
  answerFrom?: (
    actorId: string,
    respond: (record: ActorRecord) => HandlerResult,
    options?: { afterCreation?: boolean },
  ) => void;
}

/** A handler's answer; the framework writes it as JSON. */
export interface HandlerResult {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
  /**
   * What a replay of this answer (the same `Idempotency-Key` again) returns instead of `body`, and
   * so what the idempotency record keeps: set when `body` carries a secret shown once (a minted
   * API key), which is then never stored nor sent again. Absent: `body` is kept and replayed.
   */
  replayBody?: unknown;
}

export type Handler = (ctx: HandlerContext) => Promise<HandlerResult>;

/**
 * One row of the route table. The table drives mounting, authentication, scopes, the 501s of
 * unbuilt endpoints, the OpenAPI document and the generated auth-matrix tests.
 */
export interface RouteSpec {
  method: 'get' | 'post' | 'patch' | 'delete';
  /** Express path, e.g. `/v2/trade/orders/:order_id`. */
  path: string;
  /** Required scope; null = public (no token). */
  scope: Scope | null;
  /** `required`: acts for one user (per-user key, or master key + X-Partner-User-Id). */
  user: 'required' | 'optional' | 'none';
  /** Only partner-level (master) keys may call it. */
  masterOnly?: boolean;
  tag: string;
  summary: string;
  /** Request body schema (POST/PATCH). */
  body?: object;
  /**
   * Query parameters as JSON Schema properties (validated with type coercion before the
   * handler, and before the 501 of an unbuilt endpoint; a parameter not declared here is a 400 naming it).
   */
  query?: {
    properties: Record<string, object>;
    required?: string[];
    /** The envelope's `error` when that parameter is invalid (a spec string, e.g. `invalid window`). */
    errorStrings?: Record<string, string>;
  };
  /** Path parameters as JSON Schemas (default: a non-empty string). */
  params?: Record<string, object>;
  /** Client-error statuses this endpoint answers besides the common ones (400, 401, 403, 429). */
  errors?: number[];
  /** A valid request body (the OpenAPI example; tests send it to reach the handler or the 501). */
  example?: Record<string, unknown>;
  /** Longer description for the OpenAPI document. */
  description?: string;
  /** Success status → response schema. */
  responses?: Record<number, object>;
  /** Absent: the endpoint is in the spec but not built yet, and answers 501. */
  handler?: Handler;
  /** Also mounted under /v1/trade (spec part 9: reads, cancels, user provisioning). */
  v1?: boolean;
}
