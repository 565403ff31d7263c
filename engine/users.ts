import { randomUUID } from 'node:crypto';
import { AbiCoder, computeAddress, getCreate2Address, hexlify, keccak256, randomBytes } from 'ethers';
import type { Clock } from './clock.js';
import { DuplicateKeyError, errors } from './errors.js';
import type { Collection, Store } from './store/port.js';

/** Polymarket's Gnosis Safe proxy factory on Polygon and its proxy init-code hash. */
const SAFE_FACTORY = '0xaacFeEa03eb1561C4e67d661e40682Bd20E3541b';
const SAFE_INIT_CODE_HASH = '0x2bce2127ff07fb632d16c8347c4ebf501f4841168bed00d9e6ef715ddb6fcecf';

/** A provisioned user (spec 2.7). */
export interface UserDoc {
  /** `platform_user_id`, a UUID. */
  _id: string;
  partnerId: string;
  partnerUserId: string;
  email: string | null;
  /** Checksummed address of the embedded wallet's freshly generated key. */
  eoaAddress: string;
  /** Checksummed counterfactual Safe address derived from the EOA (CREATE2). */
  safeAddress: string;
  createdAtMs: number;
}

/** The spec 2.7 response body of a user. */
export interface UserView {
  platform_user_id: string;
  partner_user_id: string;
  email: string | null;
  eoa_address: string;
  safe_address: string;
  created_at: number;
}

/**
 * Deterministic smart-contract wallet address of an EOA: the CREATE2 address the Safe proxy
 * factory deploys to for salt keccak256(abi.encode(owner)).
 * @param eoa - owner address (any case).
 * @returns the EIP-55 checksummed Safe address.
 */
export function safeAddressOf(eoa: string): string {
  const salt = keccak256(AbiCoder.defaultAbiCoder().encode(['address'], [eoa]));
  return getCreate2Address(SAFE_FACTORY, salt, SAFE_INIT_CODE_HASH);
}

export function userView(u: UserDoc): UserView {
  return {
    platform_user_id: u._id,
    partner_user_id: u.partnerUserId,
    email: u.email,
    eoa_address: u.eoaAddress,
    safe_address: u.safeAddress,
    created_at: u.createdAtMs,
  };
}

const USER_CACHE_SIZE = 20_000;

/** Listener told about each newly provisioned user (the venue funds its wallet). */
export type UserCreatedListener = (user: UserDoc) => Promise<void>;

/**
 * Partner-scoped user provisioning (spec 2.7, 4.3). The embedded wallet's private key is
 * generated, used once to derive the address, and not kept: this service signs nothing on the
 * user's behalf (the simulated venue needs no signatures; a production signer belongs in a KMS).
 */
export class UserService {
  private readonly listeners: UserCreatedListener[] = [];
  private readonly cache = new Map<string, UserDoc>();

  private constructor(
    private readonly users: Collection<UserDoc>,
    private readonly clock: Clock,
  ) {}

  static async open(store: Store, clock: Clock): Promise<UserService> {
    const users = await store.collection<UserDoc>('users', [
      { fields: ['partnerId', 'partnerUserId'], unique: true },
      // a withdrawal's destination is checked against the service's own wallets
      { fields: ['safeAddress'] },
    ]);
    return new UserService(users, clock);
  }

  onCreated(listener: UserCreatedListener): void {
    this.listeners.push(listener);
  }

  /**
   * Provisions `partnerUserId` for `partnerId`, idempotently: a later call for the same user
   * returns it (`created: false`), with its `email` updated when the call names a different one
   * (a call without `email` leaves it as it is). Nothing else of a user ever changes.
   * @param email - the user's address; null: none given.
   * @returns the user as it now is and whether this call created it.
   */
  async provision(
    partnerId: string,
    partnerUserId: string,
    email: string | null,
  ): Promise<{ user: UserDoc; created: boolean }> {
    const existing = await this.users.findOne({ partnerId, partnerUserId });
    if (existing) return { user: await this.withEmail(existing, email), created: false };
    // A fresh secp256k1 key (no mnemonic: HD derivation costs ~15 ms and the key is not kept).
    const eoaAddress = computeAddress(hexlify(randomBytes(32)));
    const user: UserDoc = {
      _id: randomUUID(),
      partnerId,
      partnerUserId,
      email,
      eoaAddress,
      safeAddress: safeAddressOf(eoaAddress),
      createdAtMs: this.clock.now(),
    };
    try {
      await this.users.insertOne(user);
    } catch (err) {
      if (err instanceof DuplicateKeyError) {
        const winner = await this.users.findOne({ partnerId, partnerUserId });
        if (winner) return { user: await this.withEmail(winner, email), created: false };
      }
      throw err;
    }
    for (const l of this.listeners) await l(user);
    return { user, created: true };
  }

  /** `user` with `email` stored, when one is given and differs (the cached copy replaced too); else `user` as it is. */
  private async withEmail(user: UserDoc, email: string | null): Promise<UserDoc> {
    if (email === null || email === user.email) return user;
    await this.users.updateOne({ _id: user._id }, { email });
    const updated = { ...user, email };
    if (this.cache.has(user._id)) this.remember(updated);
    return updated;
  }

  /**
   * The user whose deposit wallet (Safe) is `safeAddress` (EIP-55 checksummed, as stored), or null.
   */
  async byWallet(safeAddress: string): Promise<UserDoc | null> {
    return this.users.findOne({ safeAddress });
  }

  /**
   * The user `partnerUserId` of `partnerId`.
   * @throws {DomainError} `NOT_FOUND` when the partner has no such user.
   */
  async byPartnerUserId(partnerId: string, partnerUserId: string): Promise<UserDoc> {
    const cached = this.cache.get(`${partnerId}\u0000${partnerUserId}`);
    if (cached) return cached;
    const u = await this.users.findOne({ partnerId, partnerUserId });
    if (!u) throw errors.notFound(`no user ${partnerUserId} for this partner`);
    this.remember(u);
    return u;
  }

  async byId(id: string): Promise<UserDoc | null> {
    const cached = this.cache.get(id);
    if (cached) return cached;
    const u = await this.users.findOne({ _id: id });
    if (u) this.remember(u);
    return u;
  }

  /**
   * {@link byId} / {@link byPartnerUserId} without waiting, for a user read before (a user's
   * only change, its email, replaces the cached copy): the user, or undefined when the store must be read.
   * @param partnerUserId - with `partnerId`: look up by the partner's id; without: `idOrPartner` is
   *   the `platform_user_id`.
   */
  cached(idOrPartner: string, partnerUserId?: string): UserDoc | undefined {
    return this.cache.get(partnerUserId === undefined ? idOrPartner : `${idOrPartner}\u0000${partnerUserId}`);
  }

  /**
   * A bounded cache spares the store a read per request (a user
   * changes only through {@link withEmail}, which updates it).
   */
  private remember(u: UserDoc): void {
    if (this.cache.size >= USER_CACHE_SIZE) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(u._id, u);
    this.cache.set(`${u.partnerId}\u0000${u.partnerUserId}`, u);
  }
}
