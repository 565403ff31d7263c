import type { Handler } from '../context.js';
import { buildOpenApi } from '../openapi.js';

let cached: object | null = null;

/** GET /v2/trade/openapi.json (tag trade.health, public): the OpenAPI 3.1 document of this service. */
export const openapiDocument: Handler = async () => {
  cached ??= buildOpenApi();
  return { status: 200, body: cached, headers: { 'Cache-Control': 'public, max-age=300' } };
};
