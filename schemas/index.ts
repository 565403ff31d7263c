/** Every named schema, for AJV registration and the OpenAPI document's components. */
export * as common from './common.js';
export * as users from './users.js';
import { ErrorEnvelope, Health } from './common.js';
import { AccountResponse, ApiKeyCreated, ApiKeyCreateRequest, ApiKeyRevoked, UserCreateRequest, UserResponse } from './users.js';

export const namedSchemas = {
  ErrorEnvelope, Health, UserCreateRequest, UserResponse, ApiKeyCreateRequest, ApiKeyCreated, ApiKeyRevoked, AccountResponse,
} as const;
