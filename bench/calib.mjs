// @ts-check
/**
 * `npm run bench:calib`: a fixed JavaScript workload (JSON round trips into a Map, a walk of it, SHA-256),
 * printed as the CPU time it took. Run before and after a battery of benchmarks: on a shared virtual
 * machine the same work takes more or less CPU from one hour to the next, and figures near a target land
 * on either side of it with the host, not with the code.
 */
import { createHash } from 'node:crypto';

const t0 = process.cpuUsage();
let acc = 0;
for (let r = 0; r < 20; r++) {
  const m = new Map();
  for (let i = 0; i < 50_000; i++) {
    const o = { id: `x${i}`, p: (i % 97) / 100, s: String(i * 7) };
    m.set(o.id, JSON.parse(JSON.stringify(o)));
  }
  for (const [k, v] of m) acc += v.p + k.length;
  const h = createHash('sha256');
  for (let i = 0; i < 20_000; i++) h.update(`abc${i}`);
  acc += h.digest()[0] ?? 0;
}
const used = process.cpuUsage(t0);
console.log(`calib ${Math.round((used.user + used.system) / 1000)} ms of CPU${acc > 0 ? '' : ' (!)'}`);
