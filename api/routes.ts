import { ErrorEnvelope, Health } from '../schemas/common.js';
import { AccountResponse, ApiKeyCreated, ApiKeyCreateRequest, ApiKeyRevoked, UserCreateRequest, UserResponse } from '../schemas/users.js';
import type { RouteSpec } from './context.js';
import { health } from './handlers/health.js';
import { account, mintUserKey, provisionUser, revokeKey } from './handlers/users.js';
import { cancelOrder, openOrders, placeOrder } from './handlers/orders.js';
import { balances, book, markets, positions } from './handlers/market.js';
import { OpenOrdersPage, OrderRequest, OrderResponse, OrderView } from '../schemas/orders.js';
import { BalancesResponse, BookResponse, MarketsPage, PositionsPage } from '../schemas/market.js';

export { ErrorEnvelope };

const V2 = '/v2/trade';

/**
 * Every endpoint of the v2 spec (part 4) plus the documented extras. Rows without a handler are
 * in the spec but not built yet: after authentication and the scope check they answer 501 with
 * the error envelope, never a fake success.
 */
export const ROUTES: RouteSpec[] = [
  { method: 'get', path: '/healthz', scope: null, user: 'none', tag: 'trade.health', summary: 'Liveness probe (public)', responses: { 200: Health }, handler: health },

  // Users and keys (spec 4.3, part 5)
  { method: 'post', path: `${V2}/users`, scope: 'trade.users', user: 'none', masterOnly: true, tag: 'trade.users', summary: 'Provision a partner user', body: UserCreateRequest, responses: { 200: UserResponse, 201: UserResponse }, handler: provisionUser, v1: true },
  { method: 'post', path: `${V2}/users/:partner_user_id/api-keys`, scope: 'trade.users', user: 'none', masterOnly: true, tag: 'trade.users', summary: 'Mint a per-user API key (token shown once)', body: ApiKeyCreateRequest, responses: { 201: ApiKeyCreated }, handler: mintUserKey },
  { method: 'delete', path: `${V2}/api-keys/:key_id`, scope: 'trade.users', user: 'none', masterOnly: true, tag: 'trade.users', summary: 'Revoke an API key', responses: { 200: ApiKeyRevoked }, handler: revokeKey },
  { method: 'get', path: `${V2}/account`, scope: 'trade.read', user: 'optional', tag: 'trade.read', summary: 'The calling key, its partner and bound user', responses: { 200: AccountResponse }, handler: account, v1: true },

  // Orders and reads (spec 4.1, 4.6)
  { method: 'post', path: `${V2}/order`, scope: 'trade.execute', user: 'required', tag: 'trade.execute', summary: 'Place an order or start a managed strategy', body: OrderRequest, responses: { 200: OrderResponse }, handler: placeOrder },
  { method: 'get', path: `${V2}/orders/open`, scope: 'trade.read', user: 'required', tag: 'trade.read', summary: 'Open orders', responses: { 200: OpenOrdersPage }, handler: openOrders, v1: true },
  { method: 'delete', path: `${V2}/orders/:order_id`, scope: 'trade.cancel', user: 'required', tag: 'trade.cancel', summary: 'Cancel one order', responses: { 200: OrderView }, handler: cancelOrder, v1: true },
  { method: 'post', path: `${V2}/orders/cancel`, scope: 'trade.cancel', user: 'required', tag: 'trade.cancel', summary: 'Cancel a batch of orders', v1: true },
  { method: 'delete', path: `${V2}/orders`, scope: 'trade.cancel', user: 'required', tag: 'trade.cancel', summary: 'Cancel all open orders', v1: true },
  { method: 'get', path: `${V2}/strategies`, scope: 'trade.read', user: 'required', tag: 'trade.read', summary: 'Managed strategies', v1: true },
  { method: 'delete', path: `${V2}/strategies/:record_id`, scope: 'trade.cancel', user: 'required', tag: 'trade.cancel', summary: 'Cancel an untriggered strategy', v1: true },
  { method: 'get', path: `${V2}/balances`, scope: 'trade.read', user: 'required', tag: 'trade.read', summary: 'pUSD balance and reservations', responses: { 200: BalancesResponse }, handler: balances, v1: true },
  { method: 'get', path: `${V2}/balances/withdrawable`, scope: 'trade.read', user: 'required', tag: 'trade.read', summary: 'Withdrawable ERC20 balances', v1: true },
  { method: 'get', path: `${V2}/positions`, scope: 'trade.read', user: 'required', tag: 'trade.read', summary: 'Share positions', responses: { 200: PositionsPage }, handler: positions, v1: true },
  { method: 'get', path: `${V2}/activity`, scope: 'trade.read', user: 'required', tag: 'trade.read', summary: 'Account activity', v1: true },
  { method: 'post', path: `${V2}/positions/redeem`, scope: 'trade.execute', user: 'required', tag: 'trade.execute', summary: 'Redeem a resolved position' },
  { method: 'post', path: `${V2}/positions/split`, scope: 'trade.execute', user: 'required', tag: 'trade.execute', summary: 'Split pUSD into outcome tokens' },
  { method: 'post', path: `${V2}/positions/merge`, scope: 'trade.execute', user: 'required', tag: 'trade.execute', summary: 'Merge outcome tokens into pUSD' },
  { method: 'post', path: `${V2}/withdraw`, scope: 'trade.withdraw', user: 'required', tag: 'trade.withdraw', summary: 'Withdraw to an external address' },

  // Combos (spec 4.2)
  { method: 'post', path: `${V2}/combo/quote`, scope: 'trade.combos', user: 'required', tag: 'trade.combos', summary: 'Request a combo quote' },
  { method: 'post', path: `${V2}/combo/accept`, scope: 'trade.combos', user: 'required', tag: 'trade.combos', summary: 'Accept a combo quote' },
  { method: 'post', path: `${V2}/combo/redeem`, scope: 'trade.combos', user: 'required', tag: 'trade.combos', summary: 'Redeem a winning combo' },
  { method: 'get', path: `${V2}/combo/positions`, scope: 'trade.combos', user: 'required', tag: 'trade.combos', summary: 'Combo positions' },

  // Copytrade (spec 4.4)
  { method: 'post', path: `${V2}/copytrade`, scope: 'trade.execute', user: 'required', tag: 'trade.execute', summary: 'Subscribe to a leader' },

  // Market data the spec lacks (issue 3)
  { method: 'get', path: `${V2}/markets`, scope: 'trade.read', user: 'none', tag: 'trade.read', summary: 'Markets of the venue', responses: { 200: MarketsPage }, handler: markets },
  { method: 'get', path: `${V2}/book`, scope: 'trade.read', user: 'none', tag: 'trade.read', summary: 'Order book of one outcome token', responses: { 200: BookResponse }, handler: book },

  // Public-data reads (spec 4.6)
  { method: 'get', path: `${V2}/leaderboard`, scope: 'trade.read', user: 'none', tag: 'trade.read', summary: 'Leaderboard' },
  { method: 'get', path: `${V2}/traders/:address/positions`, scope: 'trade.read', user: 'none', tag: 'trade.read', summary: 'A trader\'s positions' },
  { method: 'get', path: `${V2}/traders/:address/trades`, scope: 'trade.read', user: 'none', tag: 'trade.read', summary: 'A trader\'s trades' },
  { method: 'get', path: `${V2}/trades`, scope: 'trade.read', user: 'none', tag: 'trade.read', summary: 'Trades' },
  { method: 'get', path: `${V2}/traders/:address/statements`, scope: 'trade.read', user: 'none', tag: 'trade.read', summary: 'A trader\'s statements' },
  { method: 'get', path: `${V2}/traders/:address/statements/r1`, scope: 'trade.read', user: 'none', tag: 'trade.read', summary: 'A trader\'s R1 statement rows' },
];
