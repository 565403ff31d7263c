/** Every named schema, for AJV registration and the OpenAPI document's components. */
import { ErrorEnvelope, Health } from './common.js';
import { BalancesResponse, BookResponse, MarketsPage, PositionsPage } from './market.js';
import { OpenOrdersPage, OrderRequest, OrderResponse, OrderView } from './orders.js';
import { AccountResponse, ApiKeyCreated, ApiKeyCreateRequest, ApiKeyRevoked, UserCreateRequest, UserResponse } from './users.js';

export const namedSchemas = {
  ErrorEnvelope, Health, UserCreateRequest, UserResponse, ApiKeyCreateRequest, ApiKeyCreated, ApiKeyRevoked, AccountResponse,
  OrderRequest, OrderResponse, OrderView, OpenOrdersPage, BookResponse, MarketsPage, BalancesResponse, PositionsPage,
} as const;
