/**
 * `npm run bench:combos`: combos through the real HTTP path (the service in-process on port 0, the
 * client `fetch` with keep-alive). Prints, against the goals:
 * - quote latency with 2 legs and with 10 legs, p50 / p99 (goal p99 < 20 ms);
 * - accept latency, p50 / p99 (goal p99 < 30 ms), each accept of a fresh quote;
 * - resolution: `BENCH_COMBOS` open combos (2 legs each, from a pool of 10 markets) whose markets
 *   then all resolve at the venue: the time from the first resolution until every combo's record
 *   shows its final status (`RESOLVED_WIN` or `RESOLVED_LOSS`; goal < 1 s).
 *
 * Requests are sent one at a time (latency, not throughput). Knobs: BENCH_QUOTES (300 per figure),
 * BENCH_COMBOS (1000), BENCH_STORE=disk (SQLite store on disk in a temp DATA_DIR; in memory by
 * default).
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startHttp } from '../api/server.js';
import { COMBO_KIND } from '../engine/combos/service.js';
import { loadConfig } from '../engine/config.js';
import { createLogger } from '../engine/logger.js';
import { startServices } from '../engine/service.js';
import type { SimVenue } from '../engine/venue/sim-venue.js';

const QUOTES = Number(process.env.BENCH_QUOTES ?? 300);
const COMBOS = Number(process.env.BENCH_COMBOS ?? 1000);
const DISK = process.env.BENCH_STORE === 'disk';
const KEY = 'pts_bench_master_key_0123456789abcdef';

/** What the bench reads of an answer: a quote's ids (an accept's `combo_order_id`). */
interface Answer {
  status: number;
  body: { combo_order_id: string; quote_id: string };
}

/** The `p` quantile of `xs` (ms), nearest rank. */
function quantile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)] ?? NaN;
}

const line = (what: string, xs: number[], goal: number) => {
  const p99 = quantile(xs, 0.99);
  return (
    `${what}: p50 ${quantile(xs, 0.5).toFixed(2)} ms, p99 ${p99.toFixed(2)} ms, max ${Math.max(...xs).toFixed(2)} ` +
    `ms (${xs.length} requests; goal p99 < ${goal} ms: ${p99 < goal ? 'met' : 'NOT met'})`
  );
};

async function main(): Promise<void> {
  const dir = DISK ? await fs.mkdtemp(path.join(os.tmpdir(), 'pts-bench-combos-')) : null;
  const config = loadConfig({
    ...process.env,
    DATA_DIR: dir ?? ':memory:',
    MONGODB_URI: '',
    LOG_LEVEL: 'silent',
    MASTER_API_KEY: KEY,
    SIM_REPLAY: 'off',
    SIM_CAPTURE: 'off',
    SIM_CONTROL: 'on',
    SIM_INITIAL_PUSD: '100000000',
    RATE_LIMIT_PER_MIN: '0',
  });
  const { services } = await startServices(config, createLogger('silent'));
  const http = await startHttp(services, 0, '127.0.0.1');
  const base = `http://127.0.0.1:${http.port}`;
  const call = async (method: string, p: string, body?: unknown): Promise<Answer> => {
    const r = await fetch(base + p, {
      method,
      headers: {
        authorization: `Bearer ${KEY}`,
        'content-type': 'application/json',
        'x-partner-user-id': 'bench',
        ...(method === 'GET' ? {} : { 'idempotency-key': randomUUID() }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: r.status, body: (await r.json()) as Answer['body'] };
  };
  await call('POST', '/v2/trade/users', { partner_user_id: 'bench' });
  // YES tokens of open markets with an ask to price from
  const yes = services.venue
    .markets()
    .map((m) => m.tokens[0]!.tokenId)
    .filter((t) => services.venue.touch(t).ask !== undefined)
    .slice(0, 40);
  const quote = (legs: string[]) => call('POST', '/v2/trade/combo/quote', { leg_position_ids: legs, notional_usd: 1 });
  const timed = async <T>(fn: () => Promise<T>): Promise<[number, T]> => {
    const t0 = performance.now();
    const r = await fn();
    return [performance.now() - t0, r];
  };

  for (let i = 0; i < 20; i++) await quote(yes.slice(i % 10, (i % 10) + 2)); // warm-up
  const q2: number[] = [];
  const q10: number[] = [];
  const acc: number[] = [];
  for (let i = 0; i < QUOTES; i++) {
    const [ms, r] = await timed(() => quote([yes[i % 20]!, yes[20 + (i % 20)]!]));
    if (r.status !== 200) throw new Error(`quote: ${JSON.stringify(r.body)}`);
    q2.push(ms);
  }
  for (let i = 0; i < QUOTES; i++) {
    const legs = Array.from({ length: 10 }, (_, k) => yes[(i + k * 4) % 40]!);
    const [ms, r] = await timed(() => quote(legs));
    if (r.status !== 200) throw new Error(`quote: ${JSON.stringify(r.body)}`);
    q10.push(ms);
  }
  for (let i = 0; i < QUOTES; i++) {
    const q = (await quote([yes[i % 20]!, yes[20 + (i % 20)]!])).body;
    const [ms, r] = await timed(() =>
      call('POST', '/v2/trade/combo/accept', { combo_order_id: q.combo_order_id, quote_id: q.quote_id }),
    );
    if (r.status !== 200) throw new Error(`accept: ${JSON.stringify(r.body)}`);
    acc.push(ms);
  }
  console.log(line('quote, 2 legs', q2, 20));
  console.log(line('quote, 10 legs', q10, 20));
  console.log(line('accept', acc, 30));

  // resolution: COMBOS open combos over a pool of 10 markets not used above, then every market resolves
  const pool = services.venue
    .markets()
    .filter((m) => m.tokens[0] && services.venue.touch(m.tokens[0].tokenId).ask !== undefined)
    .slice(40, 50);
  const ids: string[] = [];
  for (let i = 0; i < COMBOS; i++) {
    const a = pool[i % 10]!;
    const b = pool[(i + 1 + (i % 9)) % 10]!;
    const q = (await quote([a.tokens[0]!.tokenId, b.tokens[0]!.tokenId])).body;
    const r = await call('POST', '/v2/trade/combo/accept', { combo_order_id: q.combo_order_id, quote_id: q.quote_id });
    if (r.status !== 200) throw new Error(`accept: ${JSON.stringify(r.body)}`);
    ids.push(q.combo_order_id);
  }
  const pending = new Set(ids);
  const done = new Promise<number>((resolve) => {
    services.host.on('changed', (c) => {
      const final = c.record.status === 'RESOLVED_WIN' || c.record.status === 'RESOLVED_LOSS';
      if (c.record.kind !== COMBO_KIND || !final || !pending.delete(c.record._id)) return;
      if (pending.size === 0) resolve(performance.now());
    });
  });
  const venue = services.venue as SimVenue;
  const t0 = performance.now();
  // even markets resolve YES, odd ones NO
  await Promise.all(pool.map((m, i) => venue.resolveMarket(m.conditionId, m.tokens[i % 2]!.tokenId)));
  const ms = (await done) - t0;
  const stored = await services.actors.findOwned(
    (await services.users.byPartnerUserId('demo', 'bench'))._id,
    { kind: COMBO_KIND, status: { $in: ['RESOLVED_WIN', 'RESOLVED_LOSS'] } },
    { limit: 1 },
  );
  console.log(
    `resolution: ${COMBOS} open combos final ${ms.toFixed(0)} ms after their 10 markets resolved ` +
      `(${stored.total} stored final; goal < 1000 ms: ${ms < 1000 ? 'met' : 'NOT met'})`,
  );
  await http.close();
  await services.stop();
  if (dir) await fs.rm(dir, { recursive: true, force: true });
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
