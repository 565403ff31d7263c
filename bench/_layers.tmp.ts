import { randomUUID } from 'node:crypto';
import autocannon from 'autocannon';
import { spawnService } from '../test/process.js';
const KEY = 'pts_bench_master_key_0123456789abcdef';
const D = Number(process.env.D ?? 6);
import fs from 'node:fs';
let PID = 0;
const cpu = () => { const f = fs.readFileSync(`/proc/${PID}/stat`, 'utf8').split(') ')[1]!.split(' '); return (Number(f[11]) + Number(f[12])) * 10; };
async function run(label: string, opts: autocannon.Options) {
  const c0 = cpu();
  const r = await autocannon({ connections: 50, duration: D, ...opts });
  const ms = cpu() - c0;
  console.log(`${label.padEnd(28)} ${r.requests.average.toFixed(0).padStart(6)} req/s p50 ${r.latency.p50} p99 ${r.latency.p99} non2xx ${r.non2xx}  server cpu ${(ms * 1000 / r.requests.total).toFixed(0)} µs/req`);
}
const svc = await spawnService({ DATA_DIR: ':memory:', MASTER_API_KEY: KEY, SIM_REPLAY: 'off', LOG_LEVEL: process.env.LL ?? 'warn', RATE_LIMIT_PER_MIN: '0' }, 30_000, process.env.PROF ? ['--cpu-prof', '--cpu-prof-dir=' + process.env.PROF] : []);
PID = svc.child.pid!;
const H = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };
for (let u = 0; u < 50; u++) await fetch(`${svc.baseUrl}/v2/trade/users`, { method: 'POST', headers: { ...H, 'idempotency-key': randomUUID() }, body: JSON.stringify({ partner_user_id: `bench${u}` }) });
const markets = (await (await fetch(`${svc.baseUrl}/v2/trade/markets?limit=100`, { headers: H })).json()) as any;
const tokens = markets.markets.filter((m: any) => m.tick_size === '0.01').map((m: any) => m.tokens[0]!.token_id);
if (!process.env.ONLY) await run('healthz', { url: `${svc.baseUrl}/healthz` });
if (!process.env.ONLY) await run('balances (auth+user)', { url: `${svc.baseUrl}/v2/trade/balances`, headers: { ...H, 'x-partner-user-id': 'bench1' } });
let i = 0;
await run('POST order', { url: `${svc.baseUrl}/v2/trade/order`, method: 'POST', requests: [{ setupRequest: (req) => { i++; const crossing = i % 5 === 0;
  const body = { symbol: tokens[i % tokens.length], side: 'buy', type: 'LIMIT', price: crossing ? '0.99' : `0.0${1 + (i % 5)}`, size: '5', ...(crossing ? { time_in_force: 'IOC' } : {}) };
  return { ...req, headers: { ...H, 'x-partner-user-id': `bench${i % 50}`, 'idempotency-key': randomUUID() }, body: JSON.stringify(body) }; } }] });
svc.child.kill('SIGTERM'); await svc.exited;
