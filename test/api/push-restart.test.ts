import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { io as connect, type Socket } from 'socket.io-client';
import { afterAll, describe, expect, it } from 'vitest';
import { RESYNC_REASON } from '../../api/push.js';
import { spawnService, type ServiceProcess } from '../process.js';
import { poll } from './trading-kit.js';

/**
 * Live updates across a restart (updates made while the service restarts must not be lost to the
 * clients, whose last pushes would stay PENDING while REST says CONFIRMED). Connection-state
 * recovery lives in the process; a client coming back with a session the new process does not
 * have is told so (`resync.required`), and reads the current state through REST.
 */
describe('live updates across a kill -9 restart (child process, same port)', () => {
  let dir: string;
  const procs: ServiceProcess[] = [];
  let client: Socket | null = null;
  afterAll(async () => {
    client?.disconnect();
    for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGKILL');
    if (dir) await fs.rm(dir, { recursive: true, force: true });
  });

  it('a reconnect after a restart is not recovered and gets resync.required; a brief drop gets none', async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-push-restart-'));
    const key = 'pts_push_restart_master_key_0123456789abcdef';
    const env = { DATA_DIR: dir, MASTER_API_KEY: key, SIM_REPLAY: 'off' };
    const first = await spawnService(env);
    procs.push(first);
    const port = new URL(first.baseUrl).port;
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const call = async (base: string, method: string, p: string, body?: unknown, user?: string) => {
      const extra: Record<string, string> = method === 'POST' ? { 'idempotency-key': randomUUID() } : {};
      if (user) extra['x-partner-user-id'] = user;
      const r = await fetch(base + p, {
        method,
        headers: { ...headers, ...extra },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: r.status, body: (await r.json()) as any };
    };
    expect((await call(first.baseUrl, 'POST', '/v2/trade/users', { partner_user_id: 'ann' })).status).toBe(201);
    const token = (await call(first.baseUrl, 'GET', '/v2/trade/markets?limit=50')).body.markets.find(
      (m: any) => m.tick_size === '0.01',
    ).tokens[0].token_id;
    const resyncs: Array<{ reason: string }> = [];
    const orders: any[] = [];
    client = connect(`${first.baseUrl}/v2/trade`, {
      auth: { token: key },
      transports: ['websocket'],
      forceNew: true,
      reconnectionDelay: 100,
      reconnectionDelayMax: 200,
    });
    client.on('resync.required', (info) => resyncs.push(info));
    client.on('order.updated', (o) => orders.push(o));
    await new Promise<void>((r) => client!.once('connect', () => r()));
    const placed = await call(
      first.baseUrl,
      'POST',
      '/v2/trade/order',
      { symbol: token, side: 'buy', type: 'LIMIT', price: '0.02', size: '5' },
      'ann',
    );
    expect(placed.status, JSON.stringify(placed.body)).toBe(200);
    await poll(
      'the order pushed',
      async () => orders.some((o) => o.order_id === placed.body.order_id),
      (ok) => ok,
      10_000,
    );
    // a brief drop of the transport: recovered, no resync
    const recovered = new Promise<void>((r) => client!.once('connect', () => r()));
    client.io.engine.close();
    await recovered;
    expect(client.recovered).toBe(true);
    expect(resyncs).toEqual([]);
    // kill -9, and a new process on the same port and data: the client comes back unrecovered. The
    // client may reconnect before spawnService has seen /healthz answer, so the wait starts first.
    const reconnected = new Promise<void>((r) => client!.once('connect', () => r()));
    first.child.kill('SIGKILL');
    await first.exited;
    const second = await spawnService({ ...env, PORT: port });
    procs.push(second);
    await reconnected;
    expect(client.recovered).toBe(false);
    await poll(
      'resync.required received',
      async () => resyncs.length > 0,
      (ok) => ok,
      10_000,
    );
    expect(resyncs).toEqual([{ reason: RESYNC_REASON }]);
    // what REST shows is what the client reloads; later updates flow again
    const again = await call(
      second.baseUrl,
      'POST',
      '/v2/trade/order',
      { symbol: token, side: 'buy', type: 'LIMIT', price: '0.02', size: '6' },
      'ann',
    );
    await poll(
      'the order pushed',
      async () => orders.some((o) => o.order_id === again.body.order_id),
      (ok) => ok,
      10_000,
    );
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  }, 60_000);
});
