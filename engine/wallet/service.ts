import { InFlight } from '../in-flight.js';
import { randomUUID } from 'node:crypto';
import { getAddress, keccak256, toUtf8Bytes, ZeroAddress } from 'ethers';
import type { AnyEventObject, SnapshotFrom } from 'xstate';
import {
  WALLET_OP_MACHINE_VERSION,
  WALLET_OP_STATUS,
  walletOpMachine,
  walletOpOf,
  type WalletOpContext,
  type WalletOpInput,
  type WalletOpState,
  type WalletOpType,
} from '../../machines/wallet-op.js';
import {
  creditOpId,
  debitOpId,
  WITHDRAWAL_MACHINE_VERSION,
  WITHDRAWAL_STATUS,
  withdrawalMachine,
  type WithdrawalContext,
  type WithdrawalInput,
  type WithdrawalState,
} from '../../machines/withdrawal.js';
import type { ActorHost } from '../actor-host.js';
import type { Clock } from '../clock.js';
import { dec, str, USD_DP } from '../decimal.js';
import { DomainError, errors } from '../errors.js';
import type { Logger } from '../logger.js';
import type { OrderService } from '../orders.js';
import type { HistoryRecorder } from '../data/recorder.js';
import { checkTokenAmount, checkWalletOp, walletOpError } from '../risk.js';
import type { ActorRecord, ActorRepository } from '../store/actors.js';
import type { VenuePort, WalletOp, WalletOpResult } from '../venue/port.js';
import { walletOpHash } from '../venue/sim-venue.js';

/** Machine id and kind of the split / merge / redeem actors. */
export const WALLET_OP_MACHINE_ID = 'wallet-op';
export const WALLET_OP_KIND = 'wallet';

/** The trade history's kind of each wallet operation's cash movement. */
const CASH_KIND = { SPLIT: 'split', MERGE: 'merge', REDEEM: 'redeem' } as const;
/** Machine id and kind of the withdrawal actors. */
export const WITHDRAWAL_MACHINE_ID = 'withdrawal';
export const WITHDRAWAL_KIND = 'withdrawal';

/**
 * pUSD as an ERC20 token of the simulated venue (spec 2.8, 4.5): the address GET
 * /v2/trade/balances/withdrawable lists and POST /v2/trade/withdraw takes as `token`. The
 * simulated venue's own constant (keccak256 of "pUSD (simulated venue)", last 20 bytes, EIP-55):
 * the wallet holds no other ERC20 token (outcome tokens are ERC1155 positions, not withdrawable).
 */
export const PUSD_TOKEN = {
  address: getAddress(`0x${keccak256(toUtf8Bytes('pUSD (simulated venue)')).slice(-40)}`),
  symbol: 'pUSD',
  decimals: USD_DP,
} as const;

/** Revert reason of a transfer to the zero address: the simulated chain's failure case (documented). */
export const ZERO_ADDRESS_REVERT = 'ERC20: transfer to the zero address';

type WalletOpSnapshot = SnapshotFrom<typeof walletOpMachine>;
type WithdrawalSnapshot = SnapshotFrom<typeof withdrawalMachine>;
type Meta = { id: string; status: string; createdAtMs: number; updatedAtMs: number; revision: number };

/** The reference product's transaction `state` of each REST `status`. */
const TX_STATE: Readonly<Record<string, string>> = {
  PENDING: 'STATE_PENDING',
  CONFIRMED: 'STATE_CONFIRMED',
  FAILED: 'STATE_FAILED',
};

/** Body of POST /v2/trade/positions/split, /merge, /redeem (schemas/wallet.ts `SplitMergeRequest`, `RedeemRequest`). */
export interface WalletOpBody {
  condition_id: string;
  /** Split / merge: dollars = full sets of shares (required). Redeem: shares of `outcome_index` (optional). */
  amount?: string;
  /** Redeem only: the outcome's index in the market's tokens. */
  outcome_index?: number;
  /** Must match the market's neg-risk flag when given. */
  neg_risk_market?: boolean;
  venue?: 'polymarket';
}

/** Body of POST /v2/trade/withdraw (schemas/wallet.ts `WithdrawRequest`): `to` or its alias `to_address`. */
export interface WithdrawBody {
  to?: string;
  to_address?: string;
  amount: string;
  token?: string;
  venue?: 'polymarket';
}

/** Adds `failure_code` and `message` to a view when the operation failed (`error` set in its context). */
function withFailure(
  view: Record<string, unknown>,
  c: { error: string | null; reason: string | null },
): Record<string, unknown> {
  if (c.error) {
    view.failure_code = c.error;
    view.message = c.reason;
  }
  return view;
}

/**
 * REST view of a split, merge or redeem (the POST answer and its activity row): the simulated
 * on-chain result (transaction hash, pUSD change and balance after, per outcome token the change
 * and balance after), with the reference product's `state`, `neg_risk_market`, `outcome_index`
 * and `payout_base_units` (the payout in pUSD base units, 6 decimals). Amounts are decimal
 * strings: dollars and shares.
 */
export function walletOpView(
  s: WalletOpSnapshot,
  meta: Meta,
  venue?: Pick<VenuePort, 'token' | 'market'>,
): Record<string, unknown> {
  const c = s.context as WalletOpContext;
  const r = c.result;
  const view: Record<string, unknown> = {
    type: c.type,
    operation_id: meta.id,
    status: meta.status,
    state: TX_STATE[meta.status] ?? 'STATE_PENDING',
    condition_id: c.conditionId,
    neg_risk_market: venue?.market(c.conditionId)?.negRisk ?? false,
    outcome_index: c.outcomeIndex ?? null,
    amount: c.amount,
    payout_usd: c.type === 'REDEEM' && r ? r.pusdDelta : null,
    payout_base_units:
      c.type === 'REDEEM' && r
        ? dec(r.pusdDelta)
            .times(10 ** USD_DP)
            .toFixed(0)
        : null,
    transaction_hash: r?.transactionHash ?? null,
    pusd_delta: r?.pusdDelta ?? null,
    pusd_balance: r?.pusdBalance ?? null,
    tokens: (r?.shares ?? []).map((x, i) => ({
      token_id: x.tokenId,
      outcome: venue?.token(x.tokenId)?.outcome ?? null,
      shares_delta: x.delta,
      balance: r!.positions[i]?.size ?? null,
    })),
    created_at: meta.createdAtMs,
    updated_at: meta.updatedAtMs,
  };
  return withFailure(view, c);
}

/**
 * REST view of a withdrawal (POST /withdraw, GET /withdrawals…, its activity row); the destination
 * under both `to` (the reference product's name) and `to_address`, and `state` beside `status`.
 */
export function withdrawalView(s: WithdrawalSnapshot, meta: Meta): Record<string, unknown> {
  const c = s.context as WithdrawalContext;
  const view: Record<string, unknown> = {
    type: 'WITHDRAWAL',
    withdrawal_id: meta.id,
    status: meta.status,
    state: TX_STATE[meta.status] ?? 'STATE_PENDING',
    to: c.toAddress,
    to_address: c.toAddress,
    token: c.token,
    symbol: c.symbol,
    amount: c.amount,
    transaction_hash: c.transactionHash,
    confirms_at: c.deadlines.confirm ?? null,
    settled_at: c.settledAtMs,
    refunded: c.credit !== null,
    created_at: meta.createdAtMs,
    updated_at: meta.updatedAtMs,
  };
  return withFailure(view, c);
}

/** Options of the wallet service. */
export interface WalletOptions {
  /** Simulated block delay before a withdrawal confirms, ms (SIM_BLOCK_DELAY_MS). */
  blockDelayMs: number;
  /**
   * The user whose deposit wallet is `address` (EIP-55), if any: a withdrawal goes to an external
   * address, never to a wallet of this service (none given: not checked).
   */
  walletOwner?: (address: string) => Promise<{ _id: string } | null>;
}

/**
 * Wallet operations (spec 1, 2.8, 4.5, 4.6): split, merge and redeem of a market's
 * outcome tokens, withdrawals of pUSD, withdrawable balances. Each operation is an actor
 * persisted through the actor host (`wallet-op`, `withdrawal`), so it is on the activity feed and
 * survives a crash: the actor is created first, then its entry action applies the operation at
 * the venue (idempotent by op id, journaled with the wallet); at start-up {@link reconcile} sends
 * the ones caught mid-way `venue.retry`. A refusal changes nothing: the venue's rule is checked
 * in the user's placement queue (shared with orders) before the actor exists.
 */
export class WalletService {
  /** Venue commands in flight per actor: {@link whenQuiet} waits for them. */
  private readonly inFlight: InFlight;

  constructor(
    private readonly host: ActorHost,
    private readonly actors: ActorRepository,
    private readonly venue: VenuePort,
    private readonly orders: OrderService,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly o: WalletOptions,
    /** Records each operation's cash movement with the step that records its result; none: not recorded. */
    recorder?: HistoryRecorder,
  ) {
    this.inFlight = new InFlight(host, log, 'wallet operation failed at the venue; retried at the next start');
    const apply = (actorId: string, op: WalletOp, ok: (r: WalletOpResult) => AnyEventObject) =>
      this.inFlight.walletOp(venue, actorId, op, ok);
    host.register({
      machineId: WALLET_OP_MACHINE_ID,
      version: WALLET_OP_MACHINE_VERSION,
      kind: WALLET_OP_KIND,
      logic: walletOpMachine.provide({
        actions: { applyAtVenue: (_, { op }) => apply(op.opId, op, (result) => ({ type: 'venue.applied', result })) },
      }),
      statusOf: (s) => WALLET_OP_STATUS[s.value as WalletOpState],
      viewOf: (s, meta) => walletOpView(s, meta, venue),
      stepWritesOf: recorder
        ? (next, prev) => {
            const r = next.context.result;
            if (!r || prev.context.result) return null;
            return recorder.cashWrites(next.context.userId, CASH_KIND[next.context.type], r);
          }
        : undefined,
    });
    host.register({
      machineId: WITHDRAWAL_MACHINE_ID,
      version: WITHDRAWAL_MACHINE_VERSION,
      kind: WITHDRAWAL_KIND,
      logic: withdrawalMachine.provide({
        actions: {
          debitAtVenue: ({ context }, { op }) =>
            apply(context.withdrawalId, op, (result) => ({ type: 'venue.debited', result })),
          creditAtVenue: ({ context }, { op }) =>
            apply(context.withdrawalId, op, (result) => ({ type: 'venue.credited', result })),
        },
      }),
      statusOf: (s) => WITHDRAWAL_STATUS[s.value as WithdrawalState],
      viewOf: withdrawalView,
      stepWritesOf: recorder
        ? (next, prev) => {
            const c = next.context;
            if (c.debit && !prev.context.debit) return recorder.cashWrites(c.userId, 'withdraw', c.debit);
            if (c.credit && !prev.context.credit) return recorder.cashWrites(c.userId, 'withdraw_refund', c.credit);
            return null;
          }
        : undefined,
    });
    // once an operation's actor recorded its end, the venue need not remember the operation
    host.on('changed', (c) => {
      const r = c.record;
      if (!r.final || !r.ownerUserId) return;
      if (r.kind === WALLET_OP_KIND) venue.releaseWalletOp(r.ownerUserId, r._id);
      if (r.kind === WITHDRAWAL_KIND) {
        venue.releaseWalletOp(r.ownerUserId, debitOpId(r._id));
        venue.releaseWalletOp(r.ownerUserId, creditOpId(r._id));
      }
    });
  }

  /** Resolves when actor `id` has nothing queued or in flight (its response is then final). */
  whenQuiet(id: string): Promise<void> {
    return this.inFlight.whenQuiet(id);
  }

  private async recordOf(id: string): Promise<ActorRecord | null> {
    return this.host.recordOf(id) ?? (await this.actors.get(id));
  }

  /**
   * Split, merge or redeem for `userId` (spec 4.6): checked (amount, market, `outcome_index`,
   * `neg_risk_market`, the venue's rule for the wallet) in the user's placement queue, then run as
   * a `wallet-op` actor; answers once the venue applied it. A redeem with `outcome_index` burns
   * only that outcome's shares (`amount` of them, or all); without it, every outcome's.
   * @param seed id seed from the Idempotency-Key (`wop_<seed>`): a retry of a request whose
   *   operation exists answers that operation (`replayed`).
   * @throws {DomainError} `INVALID_REQUEST` (amount; a redeem `amount` without `outcome_index`; an
   *   `outcome_index` the market does not have), `NOT_FOUND` (market), `NEG_RISK_MISMATCH`,
   *   `INSUFFICIENT_BALANCE`, `NOT_ENOUGH_SHARES` (merge, or a redeem `amount` above the shares held),
   *   `MARKET_NOT_RESOLVED` (redeem before resolution), `NOTHING_TO_REDEEM`, `SHARES_RESERVED`
   *   (redeem while open sells reserve shares). Nothing changes on a refusal.
   */
  async operate(
    partnerId: string,
    userId: string,
    type: WalletOpType,
    body: WalletOpBody,
    seed: string | null,
  ): Promise<{ record: ActorRecord; replayed: boolean }> {
    const opId = `wop_${seed ?? randomUUID()}`;
    const earlier = await this.recordOf(opId);
    if (earlier && earlier.ownerUserId === userId) {
      await this.whenQuiet(opId);
      return { record: (await this.recordOf(opId))!, replayed: true };
    }
    if (type === 'REDEEM' && body.amount !== undefined && body.outcome_index === undefined) {
      throw errors.badRequest(
        'amount of a redeem counts shares of one outcome: send outcome_index ' +
          'with it (or omit amount to redeem every share)',
      );
    }
    const amount = body.amount === undefined ? null : str(checkTokenAmount('amount', body.amount, USD_DP));
    // hex is case-insensitive (the schema takes A-F, as cancel-all's filter does); the venue's ids are lower case
    const market = this.venue.market(body.condition_id.toLowerCase());
    if (!market) throw errors.notFound(`no market ${body.condition_id} (see GET /v2/trade/markets)`);
    const outcome = body.outcome_index === undefined ? null : market.tokens[body.outcome_index];
    if (outcome === undefined) {
      throw errors.badRequest(
        `outcome_index ${body.outcome_index} is not an outcome of ` +
          `market ${market.conditionId}: ${market.tokens.map((t, i) => `${i} = ${t.outcome}`).join(', ')}`,
      );
    }
    if (body.neg_risk_market !== undefined && body.neg_risk_market !== market.negRisk) {
      throw new DomainError(
        'NEG_RISK_MISMATCH',
        `market ${market.conditionId} is ` +
          (market.negRisk
            ? 'a neg-risk market (routed through the NegRiskAdapter): send neg_risk_market true'
            : 'not a neg-risk market: send neg_risk_market false') +
          ', or omit it (GET /v2/trade/markets shows neg_risk)',
      );
    }
    const input: WalletOpInput = {
      opId,
      userId,
      type,
      conditionId: market.conditionId,
      amount,
      createdAtMs: this.clock.now(),
      ...(outcome ? { outcomeIndex: body.outcome_index!, tokenId: outcome.tokenId } : {}),
    };
    const record = await this.orders.exclusive(userId, async () => {
      checkWalletOp(this.venue, walletOpOf(input));
      await this.host.create<typeof walletOpMachine>(WALLET_OP_MACHINE_ID, {
        id: opId,
        input,
        partnerId,
        ownerUserId: userId,
      });
      await this.whenQuiet(opId);
      return (await this.recordOf(opId))!;
    });
    if (record.status === 'FAILED') {
      const c = this.host.storedSnapshot(record).context as WalletOpContext;
      throw walletOpError({ error: c.error ?? 'rejected', reason: c.reason ?? 'refused by the venue' });
    }
    return { record, replayed: false };
  }

  /**
   * A withdrawal of pUSD for `userId` (spec 4.6): the destination (`to`, or its alias
   * `to_address`; both only when they name the same address) must be an address, with a valid
   * EIP-55 checksum when it mixes case (all lower or all upper case is taken as is); `token`, when
   * given, must be a token of GET /balances/withdrawable (pUSD); `amount` in dollars, at most 6
   * decimals. The amount leaves the available balance at once; the actor confirms after the
   * simulated block delay (a transfer to the zero address reverts: FAILED, amount returned).
   * @param seed id seed from the Idempotency-Key (`wd_<seed>`).
   * @throws {DomainError} `INVALID_REQUEST` (also `to` and `to_address` naming different addresses, or a deposit
   *   wallet of this service),
   *   `INSUFFICIENT_BALANCE` (nothing changes).
   */
  async withdraw(
    partnerId: string,
    userId: string,
    body: WithdrawBody,
    seed: string | null,
  ): Promise<{ record: ActorRecord; replayed: boolean }> {
    const id = `wd_${seed ?? randomUUID()}`;
    const earlier = await this.recordOf(id);
    if (earlier && earlier.ownerUserId === userId) {
      await this.whenQuiet(id);
      return { record: (await this.recordOf(id))!, replayed: true };
    }
    const { field, address: toAddress } = destination(body);
    // an ERC20 transfer to the token's own contract succeeds on chain and the tokens are lost for good
    if (toAddress === PUSD_TOKEN.address)
      throw errors.badRequest(
        `${field} ${toAddress} is the ${PUSD_TOKEN.symbol} token contract itself: tokens ` +
          `sent there cannot be recovered; send them to a wallet address`,
      );
    // the user's own wallet would see nothing move; another user's is credited by no one here (spec 1:
    // "withdrawal of pUSD to an external address")
    const owner = await this.o.walletOwner?.(toAddress);
    if (owner)
      throw errors.badRequest(
        owner._id === userId
          ? `${field} ${toAddress} is this user's own deposit wallet: a withdrawal goes to an external address`
          : `${field} ${toAddress} is the deposit wallet of another user of this service: a withdrawal goes ` +
              'to an external address (transfers between users are not supported)',
      );
    if (body.token !== undefined && checksummed('token', body.token) !== PUSD_TOKEN.address) {
      throw errors.badRequest(
        `token ${body.token} is not withdrawable from this wallet (GET ` +
          `/v2/trade/balances/withdrawable lists the tokens: pUSD ${PUSD_TOKEN.address})`,
      );
    }
    const amount = str(checkTokenAmount('amount', body.amount, PUSD_TOKEN.decimals));
    const input: WithdrawalInput = {
      withdrawalId: id,
      userId,
      toAddress,
      token: PUSD_TOKEN.address,
      symbol: PUSD_TOKEN.symbol,
      amount,
      transactionHash: walletOpHash({ kind: 'withdraw', opId: id, userId }),
      blockDelayMs: this.o.blockDelayMs,
      revertReason: toAddress === ZeroAddress ? ZERO_ADDRESS_REVERT : null,
      createdAtMs: this.clock.now(),
    };
    const record = await this.orders.exclusive(userId, async () => {
      checkWalletOp(this.venue, { kind: 'withdraw', opId: debitOpId(id), userId, amount });
      await this.host.create<typeof withdrawalMachine>(WITHDRAWAL_MACHINE_ID, {
        id,
        input,
        partnerId,
        ownerUserId: userId,
      });
      await this.whenQuiet(id);
      return (await this.recordOf(id))!;
    });
    const c = this.host.storedSnapshot(record).context as WithdrawalContext;
    if (record.status === 'FAILED' && c.debit === null)
      throw walletOpError({ error: c.error ?? 'rejected', reason: c.reason ?? 'refused by the venue' });
    return { record, replayed: false };
  }

  /** A withdrawal of `userId`. @throws {DomainError} `NOT_FOUND` when there is none of this user. */
  async withdrawal(userId: string, id: string): Promise<ActorRecord> {
    const rec = await this.recordOf(id);
    if (!rec || rec.kind !== WITHDRAWAL_KIND || rec.ownerUserId !== userId)
      throw errors.notFound(`no withdrawal ${id}`);
    return rec;
  }

  /** The withdrawals of `userId`, newest first (optionally of one status). */
  async withdrawals(
    userId: string,
    paging: { offset: number; limit: number },
    status?: string,
  ): Promise<{ records: ActorRecord[]; total: number }> {
    return this.actors.findOwned(
      userId,
      { kind: WITHDRAWAL_KIND, ...(status ? { status } : {}) },
      { skip: paging.offset, limit: paging.limit },
    );
  }

  /**
   * Withdrawable ERC20 balances of `userId` (spec 2.8): pUSD not reserved by open buys (a pending
   * withdrawal has already left it), zero balances dropped; `balance` and `value_usd` in dollars.
   */
  withdrawable(
    userId: string,
  ): { token: string; symbol: string; decimals: number; balance: string; value_usd: string }[] {
    const free = dec(this.venue.wallet(userId).pusd.available);
    if (free.lte(0)) return [];
    return [
      {
        token: PUSD_TOKEN.address,
        symbol: PUSD_TOKEN.symbol,
        decimals: PUSD_TOKEN.decimals,
        balance: str(free),
        value_usd: str(free),
      },
    ];
  }

  /**
   * Start-up: every operation caught between its creation and the venue's answer (a split not yet
   * applied, a withdrawal not yet debited or refunded) gets `venue.retry`, which applies it again;
   * the venue answers a repeat with its recorded result, so nothing is applied twice.
   * @returns how many were retried.
   */
  async reconcile(): Promise<number> {
    let n = 0;
    for (const kind of [WALLET_OP_KIND, WITHDRAWAL_KIND]) {
      for (const id of this.host.liveIds(kind)) {
        const s = this.host.snapshotOf(id);
        if (!s || !['submitting', 'debiting', 'refunding'].includes(String(s.value))) continue;
        await this.host.send(id, { type: 'venue.retry' });
        await this.whenQuiet(id);
        n++;
      }
    }
    return n;
  }
}

/**
 * The destination of a withdrawal: `to`, or its alias `to_address`, checksummed; both given must
 * name the same address (any spelling of it).
 * @returns the field the address came from (`to` when both) and the address, EIP-55.
 * @throws {DomainError} `INVALID_REQUEST`: neither given, an invalid address, two different ones.
 */
function destination(body: Pick<WithdrawBody, 'to' | 'to_address'>): { field: 'to' | 'to_address'; address: string } {
  const to = body.to === undefined ? undefined : checksummed('to', body.to);
  const alias = body.to_address === undefined ? undefined : checksummed('to_address', body.to_address);
  if (to !== undefined && alias !== undefined && to !== alias) {
    throw errors.badRequest(
      `to ${body.to} and to_address ${body.to_address} name different ` +
        `addresses: send one of them (to_address is an alias of to)`,
    );
  }
  if (to !== undefined) return { field: 'to', address: to };
  if (alias !== undefined) return { field: 'to_address', address: alias };
  throw errors.badRequest('to is required (or its alias to_address)');
}

/**
 * An address as EIP-55 checksummed (ethers `getAddress`): a mixed-case address must carry a valid
 * checksum; all lower or all upper case is taken as is.
 * @throws {DomainError} `INVALID_REQUEST` naming `field`.
 */
export function checksummed(field: string, raw: string): string {
  try {
    return getAddress(raw);
  } catch {
    throw errors.badRequest(
      `${field} ${raw} is not a valid address (a mixed-case address must carry a valid EIP-55 checksum)`,
    );
  }
}
