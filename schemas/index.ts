/** Every named schema, for AJV registration and the OpenAPI document's components. */
import { ErrorEnvelope, Health } from './common.js';
import { ComboAcceptRequest, ComboAcceptResponse, ComboPosition, ComboPositionsPage, ComboQuoteRequest, ComboQuoteResponse, ComboRedeemRequest, ComboRedeemResponse } from './combos.js';
import { CopytradeRequest, CopytradeResponse } from './copytrade.js';
import { BalancesResponse, BookResponse, MarketsPage, PositionsPage } from './market.js';
import { BracketResult, OpenOrdersPage, OrderBatchRequest, OrderBatchResponse, OrderRequest, OrderResponse, OrderView } from './orders.js';
import { StrategiesPage, StrategyRecord } from './strategies.js';
import { AccountResponse, ApiKeyCreated, ApiKeyCreateRequest, ApiKeyRevoked, UserCreateRequest, UserResponse } from './users.js';
import {
  ActivityItem, ActivityPage, BatchCancelRequest, BatchCancelResponse, RedeemRequest, SplitMergeRequest, StatementsPage, TradesPage, WalletOpResponse, WithdrawableBalances, WithdrawalsPage,
  WithdrawalView, WithdrawRequest,
} from './wallet.js';

export const namedSchemas = {
  ErrorEnvelope, Health, UserCreateRequest, UserResponse, ApiKeyCreateRequest, ApiKeyCreated, ApiKeyRevoked, AccountResponse,
  OrderRequest, OrderResponse, OrderView, BracketResult, OpenOrdersPage, OrderBatchRequest, OrderBatchResponse, BookResponse, MarketsPage, BalancesResponse, PositionsPage,
  StrategyRecord, StrategiesPage,
  ComboQuoteRequest, ComboQuoteResponse, ComboAcceptRequest, ComboAcceptResponse, ComboRedeemRequest, ComboRedeemResponse, ComboPosition, ComboPositionsPage,
  CopytradeRequest, CopytradeResponse,
  WithdrawableBalances, WithdrawRequest, RedeemRequest, SplitMergeRequest, BatchCancelRequest, BatchCancelResponse, ActivityItem, ActivityPage, TradesPage, StatementsPage,
  WalletOpResponse, WithdrawalView, WithdrawalsPage,
} as const;
