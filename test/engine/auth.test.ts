import { describe, expect, it } from 'vitest';
import { ApiKeyService, KEY_CACHE_MS } from '../../engine/auth.js';
import { toApiError } from '../../api/errors.js';
import { ManualClock } from '../../engine/clock.js';
import { EmbeddedStore } from '../../engine/store/embedded.js';

describe('ApiKeyService: cached authentication (spec part 5)', () => {
  it('a revocation here applies at once, expiry applies on time, a change made by another process within KEY_CACHE_MS', async () => {
    const clock = new ManualClock(1_800_000_000_000);
    const store = await EmbeddedStore.open(null);
    const keys = await ApiKeyService.open(store, clock);
    const revokeHere = await keys.mintUserKey('p', 'u1', ['trade.read'], null);
    const expiring = await keys.mintUserKey('p', 'u1', ['trade.read'], clock.now() + 1_000);
    const elsewhere = await keys.mintUserKey('p', 'u1', ['trade.read'], null);
    for (const k of [revokeHere, expiring, elsewhere]) expect((await keys.authenticate(k.token)).keyId).toBe(k.doc._id);

    await keys.revoke('p', revokeHere.doc._id);
    await expect(keys.authenticate(revokeHere.token).catch(toApiError)).resolves.toMatchObject({ status: 401, message: 'API key has been revoked' });

    clock.advance(1_000);
    await expect(keys.authenticate(expiring.token).catch(toApiError)).resolves.toMatchObject({ status: 401, message: 'API key has expired' });

    // another process sharing the store revokes: this one sees it once its cached copy is older than KEY_CACHE_MS
    const raw = await store.collection<{ _id: string; revokedAtMs: number | null }>('apiKeys');
    await raw.updateOne({ _id: elsewhere.doc._id }, { revokedAtMs: clock.now() });
    expect((await keys.authenticate(elsewhere.token)).keyId).toBe(elsewhere.doc._id);
    clock.advance(KEY_CACHE_MS);
    await expect(keys.authenticate(elsewhere.token).catch(toApiError)).resolves.toMatchObject({ status: 401, message: 'API key has been revoked' });

    // an unknown token stays unknown; a key minted later is found at once
    await expect(keys.authenticate('pts_not_a_real_key_0123456789abcdef').catch(toApiError)).resolves.toMatchObject({ status: 401 });
    const later = await keys.mintUserKey('p', 'u1', ['trade.read'], null);
    expect((await keys.authenticate(later.token)).keyId).toBe(later.doc._id);
    await store.close();
  });
});
