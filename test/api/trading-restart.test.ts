import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { spawnService } from '../process.js';

const KEY = 'pts_restart_master_key_abcdef0123456789';

describe('kill -9 in the middle of trading, then restart (child process, SQLite store on disk)', () => {
  let dir: string;
  afterAll(async () => {
    if (dir) await fs.rm(dir, { recursive: true, force: true });
  });

  it('resting orders still rest, balances and positions unchanged, no fill applied twice', async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-trade-'));
    const env = { DATA_DIR: dir, MASTER_API_KEY: KEY, SIM_REPLAY: 'off' };
    const svc = await spawnService(env);
    const call = async (base: string, method: string, p: string, body?: unknown) => {
      const r = await fetch(base + p, {
        method,
        headers: {
          authorization: `Bearer ${KEY}`,
          'content-type': 'application/json',
          'x-partner-user-id': 'trader',
          ...(method === 'GET' ? {} : { 'idempotency-key': randomUUID() }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: r.status, body: (await r.json()) as any };
    };
    await call(svc.baseUrl, 'POST', '/v2/trade/users', { partner_user_id: 'trader' });
    const markets = (await call(svc.baseUrl, 'GET', '/v2/trade/markets?limit=3')).body.markets;
    const tokens: string[] = markets.map((m: any) => m.tokens[0].token_id);
    const resting: string[] = [];
    for (const t of tokens) {
      const book = (await call(svc.baseUrl, 'GET', `/v2/trade/book?token_id=${t}`)).body;
      const fill = await call(svc.baseUrl, 'POST', '/v2/trade/order', {
        symbol: t,
        side: 'buy',
        type: 'LIMIT',
        price: book.asks[0].price,
        size: '7',
      });
      expect(fill.body.status).toBe('FILLED');
      const rest = await call(svc.baseUrl, 'POST', '/v2/trade/order', {
        symbol: t,
        side: 'buy',
        type: 'LIMIT',
        price: '0.01',
        size: '9',
      });
      expect(rest.body.status).toBe('OPEN');
      resting.push(rest.body.order_id);
    }
    // a burst in flight while the process dies
    const burst = tokens.map((t) =>
      call(svc.baseUrl, 'POST', '/v2/trade/order', { symbol: t, side: 'buy', type: 'MARKET', quote_amount: '2' }).catch(
        () => null,
      ),
    );
    await new Promise((r) => setTimeout(r, 5));
    svc.child.kill('SIGKILL');
    await svc.exited;
    await Promise.all(burst);

    const again = await spawnService(env);
    const balances = (await call(again.baseUrl, 'GET', '/v2/trade/balances')).body;
    const positions = (await call(again.baseUrl, 'GET', '/v2/trade/positions')).body.positions;
    const open = (await call(again.baseUrl, 'GET', '/v2/trade/orders/open')).body;
    expect(
      open.orders.filter((o: any) => !resting.includes(o.order_id)),
      'orders open that should not be',
    ).toEqual([]);
    expect(open.orders.map((o: any) => o.order_id).sort()).toEqual([...resting].sort());
    expect(balances.reserved).toBe('0.27');
    for (const t of tokens) {
      const book = (await call(again.baseUrl, 'GET', `/v2/trade/book?token_id=${t}`)).body;
      expect(book.bids.find((l: any) => l.price === '0.01')).toEqual({ price: '0.01', size: '9' });
    }
    // Balance = start − Σ matched over every FILLED order: each fill is applied exactly once.
    const spent = positions.reduce((s: number, p: any) => s + Number(p.cost_usd), 0);
    expect(Number(balances.balance)).toBeCloseTo(10000 - spent, 6);
    // a second restart changes nothing
    again.child.kill('SIGKILL');
    await again.exited;
    const third = await spawnService(env);
    expect((await call(third.baseUrl, 'GET', '/v2/trade/balances')).body).toEqual(balances);
    expect((await call(third.baseUrl, 'GET', '/v2/trade/positions')).body.positions).toEqual(positions);
    third.child.kill('SIGTERM');
    expect(await third.exited).toBe(0);
  });
});

describe('SIM_REPLAY=on moves the MSTR token along its recorded path', () => {
  it('the touch of the MSTR token changes over time', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-replay-'));
    try {
      const svc = await spawnService({
        DATA_DIR: dir,
        MASTER_API_KEY: KEY,
        SIM_REPLAY: 'on',
        SIM_REPLAY_SPEED: '30000',
      });
      const mstr = '111128191581505463501777127559667396812474366956707382672202929745167742497287';
      const seen = new Set<string>();
      for (let i = 0; i < 40 && seen.size < 2; i++) {
        const r = await fetch(`${svc.baseUrl}/v2/trade/book?token_id=${mstr}&depth=1`, {
          headers: { authorization: `Bearer ${KEY}` },
        });
        const b = (await r.json()) as any;
        seen.add(`${b.bids[0]?.price}/${b.asks[0]?.price}`);
        await new Promise((res) => setTimeout(res, 250));
      }
      svc.child.kill('SIGTERM');
      await svc.exited;
      expect(seen.size).toBeGreaterThan(1);
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });
});
