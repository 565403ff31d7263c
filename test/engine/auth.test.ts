import { describe, expect, it } from 'vitest';
import { ApiKeyService, KEY_CACHE_MS } from '../../engine/auth.js';
import { toApiError } from '../../api/errors.js';
import { ManualClock } from '../../engine/clock.js';
import { SqliteStore } from '../../engine/store/sqlite.js';
import { FaultyStore } from './store/faulty-store.js';

describe('ApiKeyService: cached authentication (spec part 5)', () => {
  it("a revocation here applies at once, expiry on time, another process's change within KEY_CACHE_MS", async () => {
    const clock = new ManualClock(1_800_000_000_000);
    const store = await SqliteStore.open(null);
    const keys = await ApiKeyService.open(store, clock);
    const revokeHere = await keys.mintUserKey('p', 'u1', ['trade.read'], null);
    const expiring = await keys.mintUserKey('p', 'u1', ['trade.read'], clock.now() + 1_000);
    const elsewhere = await keys.mintUserKey('p', 'u1', ['trade.read'], null);
    for (const k of [revokeHere, expiring, elsewhere]) expect((await keys.authenticate(k.token)).keyId).toBe(k.doc._id);

    await keys.revoke('p', revokeHere.doc._id);
    await expect(keys.authenticate(revokeHere.token).catch(toApiError)).resolves.toMatchObject({
      status: 401,
      message: 'API key has been revoked',
    });

    clock.advance(1_000);
    await expect(keys.authenticate(expiring.token).catch(toApiError)).resolves.toMatchObject({
      status: 401,
      message: 'API key has expired',
    });

    // another process sharing the store revokes: this one sees it once its cached copy is older than KEY_CACHE_MS
    const raw = await store.collection<{ _id: string; revokedAtMs: number | null }>('apiKeys');
    await raw.updateOne({ _id: elsewhere.doc._id }, { revokedAtMs: clock.now() });
    expect((await keys.authenticate(elsewhere.token)).keyId).toBe(elsewhere.doc._id);
    clock.advance(KEY_CACHE_MS);
    await expect(keys.authenticate(elsewhere.token).catch(toApiError)).resolves.toMatchObject({
      status: 401,
      message: 'API key has been revoked',
    });

    // an unknown token stays unknown; a key minted later is found at once
    await expect(keys.authenticate('pts_not_a_real_key_0123456789abcdef').catch(toApiError)).resolves.toMatchObject({
      status: 401,
    });
    const later = await keys.mintUserKey('p', 'u1', ['trade.read'], null);
    expect((await keys.authenticate(later.token)).keyId).toBe(later.doc._id);
    await store.close();
  });
  it('a token seen before is answered from cache, and refused on the very next call once revoked/expired', async () => {
    const clock = new ManualClock(1_800_000_000_000);
    const store = new FaultyStore(await SqliteStore.open(null));
    const keys = await ApiKeyService.open(store, clock);
    const k = await keys.mintUserKey('p', 'u1', ['trade.read', 'trade.execute'], clock.now() + 2_000);
    const first = await keys.authenticate(k.token);
    const again = await keys.authenticate(k.token);
    expect(again).toBe(first); // the cached principal, without hashing the token again
    expect(Object.isFrozen(again) && Object.isFrozen(again.scopes)).toBe(true);
    expect(again).toMatchObject({
      keyId: k.doc._id,
      partnerId: 'p',
      kind: 'user',
      userId: 'u1',
      scopes: ['trade.read', 'trade.execute'],
      expiresAtMs: clock.now() + 2_000,
    });

    // expiry is checked on every call, cached or not
    clock.advance(1_999);
    expect((await keys.authenticate(k.token)).keyId).toBe(k.doc._id);
    clock.advance(1);
    await expect(keys.authenticate(k.token).catch(toApiError)).resolves.toMatchObject({
      status: 401,
      message: 'API key has expired',
    });

    // revocation: refused on the very next call although the token was cached a moment ago
    const live = await keys.mintUserKey('p', 'u1', ['trade.read'], null);
    expect((await keys.authenticate(live.token)).keyId).toBe(live.doc._id);
    expect((await keys.authenticate(live.token)).keyId).toBe(live.doc._id);
    await keys.revoke('p', live.doc._id);
    await expect(keys.authenticate(live.token).catch(toApiError)).resolves.toMatchObject({
      status: 401,
      message: 'API key has been revoked',
    });

    // a read racing a revocation is not kept: the next call reads the store again
    const racing = await keys.mintUserKey('p', 'u1', ['trade.read'], null);
    // hold the authentication's store read, once done, until the revocation is done
    const hold = store.hold({
      collections: ['apiKeys'],
      ops: ['findOne'],
      where: (i) => i.filter !== undefined && 'hash' in i.filter,
      when: 'after',
    });
    const during = keys.authenticate(racing.token).catch(toApiError);
    await keys.revoke('p', racing.doc._id);
    expect(hold.fired).toBe(1); // the authentication's read ran and waits
    hold.release();
    expect(await during).toMatchObject({ keyId: racing.doc._id }); // it read the key before the revocation
    hold.remove();
    await expect(keys.authenticate(racing.token).catch(toApiError)).resolves.toMatchObject({
      status: 401,
      message: 'API key has been revoked',
    });

    // once older than KEY_CACHE_MS the token's entry is read again (a change made by another process)
    const other = await keys.mintUserKey('p', 'u1', ['trade.read'], null);
    const before = await keys.authenticate(other.token);
    clock.advance(KEY_CACHE_MS);
    const after = await keys.authenticate(other.token);
    expect(after).not.toBe(before);
    expect(after).toEqual(before);
    await store.close();
  });
});
