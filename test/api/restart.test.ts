import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { printedMasterKey, spawnService } from '../process.js';

describe('restarts keep everything (child process on the SQLite store on disk)', () => {
  let dir: string;
  afterAll(async () => {
    if (dir) await fs.rm(dir, { recursive: true, force: true });
  });

  it('generates a master key once, and users survive SIGTERM and kill -9 with the same addresses', async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-restart-'));
    const env = { DATA_DIR: dir };
    const first = await spawnService(env);
    const key = await printedMasterKey(first);
    expect(first.output()).toMatch(/MASTER_API_KEY for partner 'demo' \(shown once/);
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const created = (await (
      await fetch(`${first.baseUrl}/v2/trade/users`, {
        method: 'POST',
        headers: { ...headers, 'idempotency-key': randomUUID() },
        body: JSON.stringify({ partner_user_id: 'u1' }),
      })
    ).json()) as Record<string, unknown>;
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);

    const second = await spawnService(env);
    expect(second.output()).not.toMatch(/MASTER_API_KEY/);
    const r2 = await fetch(`${second.baseUrl}/v2/trade/users`, {
      method: 'POST',
      headers: { ...headers, 'idempotency-key': randomUUID() },
      body: JSON.stringify({ partner_user_id: 'u1' }),
    });
    expect(r2.status).toBe(200);
    expect(await r2.json()).toEqual({ ...created, created: false });
    const made = (await (
      await fetch(`${second.baseUrl}/v2/trade/users`, {
        method: 'POST',
        headers: { ...headers, 'idempotency-key': randomUUID() },
        body: JSON.stringify({ partner_user_id: 'u2' }),
      })
    ).json()) as Record<string, unknown>;
    second.child.kill('SIGKILL');
    await second.exited;

    const third = await spawnService(env);
    const r3 = await fetch(`${third.baseUrl}/v2/trade/users`, {
      method: 'POST',
      headers: { ...headers, 'idempotency-key': randomUUID() },
      body: JSON.stringify({ partner_user_id: 'u2' }),
    });
    expect(r3.status).toBe(200);
    expect(await r3.json()).toEqual({ ...made, created: false });
    third.child.kill('SIGTERM');
    expect(await third.exited).toBe(0);
  });
});
