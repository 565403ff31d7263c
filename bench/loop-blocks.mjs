// @ts-check
/**
 * Event-loop block tracer for benchmarks: preloaded into the service with
 * `node --import ./bench/loop-blocks.mjs` and `BENCH_LOOP_BLOCKS=<file>` in its environment.
 *
 * A 1 ms timer measures how late it fires: a lateness of L ms means the loop ran something else,
 * without returning to its timers, for about L ms (one long synchronous task, or one loop
 * iteration that served many callbacks). Every lateness ≥ `BENCH_LOOP_BLOCK_MS` (default 10) is
 * recorded as a block: wall-clock end (`atMs`, epoch ms), length (`ms`), the CPU time the process
 * used meanwhile (`cpuMs`, all its threads: far below `ms` when the machine's other work held the
 * process off its core, rather than the process itself), and its monotonic window
 * (`fromUs` / `toUs`, the clock of V8's CPU profiles, to find what ran in it), with the garbage
 * collections (≥ 1 ms) that ended inside it (kind, ms). The list (and every such collection) is written as JSON to
 * the file when the process exits (`process.exit` or the end of the loop).
 *
 * It also times every HTTP request inside the service (from its `request` event to the response's
 * `finish`): `slowest` lists the 50 slowest (end `atMs`, `ms`, method and path), so that a long
 * client-side latency can be told apart from a server-side one, and `requests` holds every
 * request's end and length (`[atMs, ms]`, the first 2,000,000), for the service's own percentiles.
 * `elu` samples the event loop's utilisation every second (`[atMs, share busy 0–1]`, from
 * `performance.eventLoopUtilization()`): near 1 under load, a request's latency is mostly its
 * wait for the loop, not for the store.
 */
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import { PerformanceObserver, constants, performance } from 'node:perf_hooks';
import { setInterval } from 'node:timers';

const file = process.env.BENCH_LOOP_BLOCKS;
const thresholdMs = Number(process.env.BENCH_LOOP_BLOCK_MS ?? 10);

if (file) {
  /**
   * @type {{ atMs: number; ms: number; cpuMs: number; fromUs: number; toUs: number;
   *   gc: { kind: string; ms: number }[] }[]}
   */
  const blocks = [];
  /** @type {{ endUs: number; kind: string; ms: number }[]} */
  const gcs = [];
  const kinds = {
    [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
    [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
    [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
    [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
  };
  const origin = performance.timeOrigin;
  const nowUs = () => Number(process.hrtime.bigint() / 1000n);
  // performance.now() and hrtime differ by a constant: map GC entries (performance time) to hrtime µs
  const offsetUs = nowUs() - performance.now() * 1000;
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const detail = /** @type {{ kind?: number } | undefined} */ (e.detail);
      if (e.duration >= 1 && gcs.length < 200_000)
        gcs.push({
          endUs: offsetUs + (e.startTime + e.duration) * 1000,
          kind: kinds[detail?.kind ?? 0] ?? String(detail?.kind),
          ms: e.duration,
        });
    }
  }).observe({ entryTypes: ['gc'] });

  let due = nowUs() + 1000;
  let cpuAtDue = process.cpuUsage();
  const tick = () => {
    const now = nowUs();
    const lateMs = (now - due) / 1000;
    if (lateMs >= thresholdMs) {
      const fromUs = due;
      const cpu = process.cpuUsage(cpuAtDue);
      blocks.push({
        atMs: Math.round(origin + performance.now()),
        ms: Math.round(lateMs * 10) / 10,
        cpuMs: Math.round((cpu.user + cpu.system) / 100) / 10,
        fromUs,
        toUs: now,
        gc: [],
      });
    }
    due = nowUs() + 1000;
    cpuAtDue = process.cpuUsage();
    setTimeout(tick, 1).unref();
  };
  setTimeout(tick, 1).unref();
  /** @type {{ atMs: number; ms: number; what: string }[]} */
  let slowest = [];
  let served = 0;
  /** @type {number[][]} */
  const requests = [];
  /** @type {number[][]} */
  const elu = [];
  let eluBefore = performance.eventLoopUtilization();
  setInterval(() => {
    const now = performance.eventLoopUtilization();
    elu.push([Math.round(origin + performance.now()), performance.eventLoopUtilization(now, eluBefore).utilization]);
    eluBefore = now;
  }, 1000).unref();
  const emit = http.Server.prototype.emit;
  http.Server.prototype.emit = /** @type {any} */ (
    function (/** @type {string} */ event, /** @type {any[]} */ ...args) {
      if (event === 'request') {
        const [req, res] = /** @type {[http.IncomingMessage, http.ServerResponse]} */ (/** @type {unknown} */ (args));
        const t0 = nowUs();
        res.once('finish', () => {
          served++;
          const ms = (nowUs() - t0) / 1000;
          if (requests.length < 2_000_000) requests.push([Math.round(origin + performance.now()), ms]);
          if (slowest.length < 50 || ms > slowest[slowest.length - 1].ms) {
            slowest.push({
              atMs: Math.round(origin + performance.now()),
              ms: Math.round(ms * 10) / 10,
              what: `${req.method} ${req.url}`,
            });
            slowest.sort((a, b) => b.ms - a.ms);
            if (slowest.length > 50) slowest = slowest.slice(0, 50);
          }
        });
      }
      return emit.call(this, event, ...args);
    }
  );

  process.on('exit', () => {
    // GC entries arrive after the fact: matched to the blocks they ended in at the end
    for (const b of blocks)
      b.gc = gcs
        .filter((g) => g.endUs >= b.fromUs && g.endUs <= b.toUs)
        .map((g) => ({ kind: g.kind, ms: Math.round(g.ms * 10) / 10 }));
    writeFileSync(
      file,
      JSON.stringify({
        blocks,
        served,
        slowest,
        requests,
        elu,
        gcs: gcs.map((g) => ({ ...g, endUs: Math.round(g.endUs) })),
      }),
    );
  });
}
