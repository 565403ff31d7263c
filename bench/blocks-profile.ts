/**
 * What ran in the service's long event-loop blocks: reads a V8 CPU profile
 * (`BENCH_CPU_PROF=<dir> npm run bench:orders`) and the block list `bench/loop-blocks.mjs` wrote
 * beside it (only those within the load runs, when the file lists them), and prints, over the samples inside blocks of
 * at least `minMs`, the functions by self time and the project's functions by total time (their callees included);
 * then, for each of the longest blocks, its leading project functions and the garbage collections that ended in it.
 *
 * `npx tsx bench/blocks-profile.ts <file.cpuprofile> <loop-blocks….json> [minMs=20] [longest=10]`
 * (`BLOCKS_BY=cpu`: blocks by the CPU time the process used in them rather than by their length)
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}
interface Block {
  atMs: number;
  ms: number;
  cpuMs?: number;
  fromUs: number;
  toUs: number;
  gc: { kind: string; ms: number }[];
}

const [profileFile, blocksFile, minArg, longestArg] = process.argv.slice(2);
if (!profileFile || !blocksFile) {
  console.error('usage: tsx bench/blocks-profile.ts <file.cpuprofile> <loop-blocks.json> [minMs] [longest]');
  process.exit(2);
}
const minMs = Number(minArg ?? 20);
const longest = Number(longestArg ?? 10);
const profile = JSON.parse(readFileSync(profileFile, 'utf8')) as Profile;
const traced = JSON.parse(readFileSync(blocksFile, 'utf8')) as {
  blocks: Block[];
  runs?: { fromMs: number; toMs: number }[];
};
// the blocks within the load runs when the file names them (start-up and shutdown left out)
const inRuns = (b: Block) => !traced.runs || traced.runs.some((r) => b.atMs >= r.fromMs && b.atMs <= r.toMs);
// BLOCKS_BY=cpu: blocks whose CPU time (not length) reaches minMs: the process's own stalls
const byCpu = process.env.BLOCKS_BY === 'cpu';
const blocks = traced.blocks.filter((b) => (byCpu ? (b.cpuMs ?? b.ms) : b.ms) >= minMs && inRuns(b));

const byId = new Map<number, ProfileNode>();
const parent = new Map<number, number>();
for (const n of profile.nodes) {
  byId.set(n.id, n);
  for (const c of n.children ?? []) parent.set(c, n.id);
}
/** `name file:line`, the file relative to the project (dist/…) or to node_modules. */
const frameName = (n: ProfileNode): string => {
  const f = n.callFrame;
  const url = f.url.replace(/^file:\/\//, '');
  const short = url.includes('node_modules/')
    ? url.slice(url.lastIndexOf('node_modules/') + 13)
    : url.includes('/dist/')
      ? url.slice(url.indexOf('/dist/') + 6)
      : url;
  return `${f.functionName || '(anonymous)'} ${short}${short ? `:${f.lineNumber + 1}` : ''}`;
};
const isProject = (n: ProfileNode) => n.callFrame.url.includes('/dist/') && !n.callFrame.url.includes('node_modules');

// sample times (µs, the monotonic clock the tracer records)
const times: number[] = [];
let t = profile.startTime;
for (const d of profile.timeDeltas) times.push((t += d));

const top = (m: Map<string, number>, k: number, total: number) =>
  [...m]
    .sort((a, b) => b[1] - a[1])
    .slice(0, k)
    .map(([name, n]) => `  ${((100 * n) / total).toFixed(1).padStart(5)} %  ${name}`)
    .join('\n');

function tally(from: number, to: number): { self: Map<string, number>; total: Map<string, number>; n: number } {
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  let n = 0;
  // binary search for the first sample at or after `from`
  let lo = 0;
  let hi = times.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (times[mid]! < from) lo = mid + 1;
    else hi = mid;
  }
  for (let i = lo; i < times.length && times[i]! <= to; i++) {
    n++;
    const leaf = byId.get(profile.samples[i]!)!;
    self.set(frameName(leaf), (self.get(frameName(leaf)) ?? 0) + 1);
    const seen = new Set<string>();
    for (let id: number | undefined = leaf.id; id !== undefined; id = parent.get(id)) {
      const node = byId.get(id)!;
      if (!isProject(node)) continue;
      const name = frameName(node);
      if (seen.has(name)) continue;
      seen.add(name);
      total.set(name, (total.get(name) ?? 0) + 1);
    }
  }
  return { self, total, n };
}

const all = { self: new Map<string, number>(), total: new Map<string, number>(), n: 0 };
for (const b of blocks) {
  const r = tally(b.fromUs, b.toUs);
  all.n += r.n;
  for (const [k, v] of r.self) all.self.set(k, (all.self.get(k) ?? 0) + v);
  for (const [k, v] of r.total) all.total.set(k, (all.total.get(k) ?? 0) + v);
}
console.log(`${blocks.length} blocks ≥ ${minMs} ms, ${all.n} samples in them`);
console.log(`self time:\n${top(all.self, 25, all.n)}`);
console.log(`project functions, total time:\n${top(all.total, 25, all.n)}`);
for (const b of [...blocks].sort((a, c) => c.ms - a.ms).slice(0, longest)) {
  const r = tally(b.fromUs, b.toUs);
  console.log(
    `\nblock ${b.ms} ms (CPU ${b.cpuMs ?? '?'} ms) at ${new Date(b.atMs).toISOString()}  ` +
      `GC: ${b.gc.map((g) => `${g.kind} ${g.ms} ms`).join(', ') || 'none ≥ 1 ms'}  (${r.n} samples)`,
  );
  console.log(`self:\n${top(r.self, 6, r.n)}\nproject, total:\n${top(r.total, 8, r.n)}`);
}
