/**
 * Checks a copytrade request body (spec 2.6, the reference's rules where ours is silent) and
 * turns it into a subscription's settings (engine/copytrade/rules.ts `CopySettings`): numbers as
 * decimal strings, defaults filled in. What the JSON Schema (schemas/copytrade.ts) says is not
 * repeated here.
 */
import type { CopytradePatch, CopytradeRequest } from '../../schemas/copytrade.js';
import { errors } from '../errors.js';
import type { CopySettings } from './rules.js';
import { checkLeaderAddress } from './service.js';

/** A JSON number as a decimal string (`1e-7` → `0.0000001`). */
function decimalOf(n: number): string {
  return Number.isInteger(n) ? String(n) : n.toFixed(12).replace(/\.?0+$/, '');
}

const decimalOrNull = (n: number | undefined | null) => (n === undefined || n === null ? null : decimalOf(n));

/** The settings of a new subscription before the body applies: the reference's defaults. */
const DEFAULTS: Omit<
  CopySettings,
  | 'leader_address'
  | 'buy_order_type'
  | 'buy_size_mode'
  | 'buy_size_value'
  | 'buy_insufficient_usdc_action'
  | 'sell_order_type'
  | 'sell_size_mode'
  | 'sell_insufficient_shares_action'
> = {
  leader_username: null,
  buy_enabled: true,
  sell_enabled: true,
  buy_min_for_percent: false,
  buy_min_trade_size: null,
  buy_max_trade_size: null,
  buy_time_in_force: 'GTC',
  sell_size_value: null,
  market_ids_include: [],
  market_ids_exclude: [],
  tags_include: [],
  tags_exclude: [],
  is_simulation: false,
  copy_start_date: null,
  copy_end_date: null,
  take_profit_levels: [],
  stop_loss_levels: [],
  close_at_price_cents: null,
  max_hold_seconds: null,
};

/** `patch` applied over `base`, numbers turned into decimal strings. */
function applied(base: CopySettings, patch: CopytradePatch): CopySettings {
  const out: CopySettings = { ...base };
  for (const [k, v] of Object.entries(patch)) {
    if (v === undefined) continue;
    (out as unknown as Record<string, unknown>)[k] = v;
  }
  if (patch.buy_size_value !== undefined) out.buy_size_value = decimalOf(patch.buy_size_value);
  if (patch.sell_size_value !== undefined) out.sell_size_value = decimalOf(patch.sell_size_value);
  if (patch.buy_min_trade_size !== undefined) out.buy_min_trade_size = decimalOrNull(patch.buy_min_trade_size);
  if (patch.buy_max_trade_size !== undefined) out.buy_max_trade_size = decimalOrNull(patch.buy_max_trade_size);
  for (const d of ['copy_start_date', 'copy_end_date'] as const)
    if (typeof out[d] === 'string') out[d] = new Date(Date.parse(out[d])).toISOString();
  return out;
}

/**
 * The rules across fields.
 * @throws {DomainError} `INVALID_REQUEST`.
 */
function checkSettings(s: CopySettings): CopySettings {
  if (s.sell_size_mode !== 'MAX' && s.sell_size_value === null)
    throw errors.badRequest(`sell_size_value is required with sell_size_mode ${s.sell_size_mode}`);
  if (s.buy_size_mode === 'PCT_OF_FOLLOWER_AVAILABLE' && Number(s.buy_size_value) > 100)
    throw errors.badRequest('buy_size_value is a percent of the free pUSD with PCT_OF_FOLLOWER_AVAILABLE: at most 100');
  if (
    (s.sell_size_mode === 'PCT_OF_MAX' || s.sell_size_mode === 'PCT_OF_FOLLOWER_AVAILABLE') &&
    Number(s.sell_size_value) > 100
  )
    throw errors.badRequest(`sell_size_value is a percent with ${s.sell_size_mode}: at most 100`);
  if (s.market_ids_include.length > 0 && s.market_ids_exclude.length > 0)
    throw errors.badRequest('market_ids_include and market_ids_exclude are exclusive: send one or the other');
  if (
    s.buy_min_trade_size !== null &&
    s.buy_max_trade_size !== null &&
    Number(s.buy_min_trade_size) > Number(s.buy_max_trade_size)
  )
    throw errors.badRequest('buy_min_trade_size is above buy_max_trade_size');
  if (s.copy_start_date !== null && s.copy_end_date !== null && s.copy_start_date >= s.copy_end_date)
    throw errors.badRequest('copy_end_date must come after copy_start_date');
  return s;
}

/**
 * The settings of a POST body.
 * @throws {DomainError} `INVALID_REQUEST` (an address that is not one or fails its checksum, the rules across fields).
 */
export function settingsOfRequest(body: CopytradeRequest): CopySettings {
  const { leader_address, status: _status, ...rest } = body;
  const base = {
    ...DEFAULTS,
    leader_address: checkLeaderAddress(leader_address),
    buy_order_type: body.buy_order_type,
    buy_size_mode: body.buy_size_mode,
    buy_size_value: decimalOf(body.buy_size_value),
    buy_insufficient_usdc_action: body.buy_insufficient_usdc_action,
    sell_order_type: body.sell_order_type,
    sell_size_mode: body.sell_size_mode,
    sell_insufficient_shares_action: body.sell_insufficient_shares_action,
  } as CopySettings;
  return checkSettings(applied(base, rest as CopytradePatch));
}

/**
 * The settings after a PATCH body.
 * @throws {DomainError} `INVALID_REQUEST` (the rules across fields).
 */
export function settingsPatched(current: CopySettings, patch: CopytradePatch): CopySettings {
  return checkSettings(applied(current, patch));
}
