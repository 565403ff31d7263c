/**
 * `npm run bench:compaction` (issue 15, item 1): the embedded store's compaction of one on-disk
 * collection of `BENCH_DOCS` (100,000) actor-like records (~700 bytes each), once as NeDB does it
 * (`compactDatafileAsync`) and once as the store does it (`compactInSlices`), with a 1 ms timer
 * measuring the longest event-loop block meanwhile, and whether writes to the collection went on.
 * Prints wall and CPU time of each, the longest block, and how many writes were acknowledged while
 * each compaction ran (NeDB holds the collection: none).
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { EmbeddedStore } from '../engine/store/embedded.js';
import type { Doc } from '../engine/store/port.js';

const N = Number(process.env.BENCH_DOCS ?? 100_000);

type ActorLike = Doc & { ownerKey: string; snapshot: string };

async function main(): Promise<void> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-bench-compact-'));
  const store = await EmbeddedStore.open(dir);
  try {
    const c = await store.collection<ActorLike>('actors', [{ fields: ['ownerKey'] }]);
    const docs: ActorLike[] = [];
    for (let i = 0; i < N; i++) {
      docs.push({ _id: `ord-${((i * 7919) % N).toString(36)}-${i}`, ownerKey: `u${i % 50}|${i}`, snapshot: JSON.stringify({ value: 'open', context: { price: '0.05', size: '5', filled: '0', id: i, note: 'x'.repeat(600) } }) });
    }
    for (let i = 0; i < docs.length; i += 1000) await c.insertMany!(docs.slice(i, i + 1000));
    const internals = c as unknown as { ds: { compactDatafileAsync(): Promise<void> }; compact(): Promise<void> };
    console.log(`bench:compaction — ${N} records, node ${process.version}, ${os.cpus().length} cores`);
    for (const how of ['NeDB compactDatafileAsync', 'compactInSlices'] as const) {
      // the longest block, and the CPU time the process used in it (below its length when the
      // machine's other work held the process off its core)
      let maxLateMs = 0;
      let maxLateCpuMs = 0;
      let due = performance.now() + 1;
      let cpuAtDue = process.cpuUsage();
      const timer = setInterval(() => {
        const now = performance.now();
        if (now - due > maxLateMs) {
          maxLateMs = now - due;
          const used = process.cpuUsage(cpuAtDue);
          maxLateCpuMs = (used.user + used.system) / 1000;
        }
        due = now + 1;
        cpuAtDue = process.cpuUsage();
      }, 1);
      // writes to the collection while it compacts: one at a time, counted when acknowledged
      let writes = 0;
      let done = false;
      const writer = (async () => {
        for (let k = 0; !done; k++) {
          await c.updateOne({ _id: docs[k % N]!._id }, { ownerKey: `w|${k}` });
          if (!done) writes++;
          await new Promise((r) => setImmediate(r));
        }
      })();
      const t0 = performance.now();
      const cpu0 = process.cpuUsage();
      if (how === 'compactInSlices') await internals.compact();
      else await internals.ds.compactDatafileAsync();
      const cpu = process.cpuUsage(cpu0);
      const wallMs = performance.now() - t0;
      done = true;
      await writer;
      clearInterval(timer);
      console.log(
        `${how.padEnd(27)} wall ${wallMs.toFixed(0).padStart(5)} ms  CPU ${((cpu.user + cpu.system) / 1000).toFixed(0).padStart(5)} ms  longest event-loop block ${maxLateMs.toFixed(1).padStart(7)} ms (CPU ${maxLateCpuMs.toFixed(1)} ms)  writes acknowledged meanwhile ${writes}`,
      );
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    await store.close();
    await fs.rm(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
