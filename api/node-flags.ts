/**
 * The V8 flags the service runs with. `npm start` passes them (package.json, checked by a test), and
 * so do the tests and benchmarks that start the service as a process (test/process.ts), so that
 * what they measure is what runs.
 *
 * `--max-semi-space-size=64` (MiB): V8's young generation may grow to 2 × 64 MiB instead of 2 × 16.
 * An order allocates about 50–90 KB that dies young; with the default, a scavenge ran about every
 * 30 ms under load and found a quarter of the young generation alive (the state of the requests
 * in flight), copying it each time. Four times as large, scavenges run a quarter as often and copy
 * that state a quarter as often: measured in `bench:orders`, the main thread's scavenge pauses fell
 * from about 22 to 14 µs an order and the CPU per order by 4–23 % (8 alternating pairs of runs).
 * The cost: up to 96 MiB more memory under load (the young generation grows only when allocation
 * keeps it full) and scavenge pauses of about 8 ms instead of 3.
 */
export const SERVICE_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=64'];

/**
 * The flags of {@link SERVICE_NODE_FLAGS} this process was not started with: neither on its command
 * line (`execArgv`) nor in `NODE_OPTIONS`. A flag counts as given whatever its value.
 * @param execArgv - the process's Node flags (`process.execArgv`).
 * @param nodeOptions - `NODE_OPTIONS`, if set.
 * @returns the missing flags, as {@link SERVICE_NODE_FLAGS} spells them (empty: none missing).
 */
export function missingNodeFlags(execArgv: readonly string[], nodeOptions: string | undefined): string[] {
  const given = [...execArgv, ...(nodeOptions ?? '').split(/\s+/).filter(Boolean)].map(flagName);
  return SERVICE_NODE_FLAGS.filter((f) => !given.includes(flagName(f)));
}

/** `--max-semi-space-size=64` → `--max-semi-space-size` (V8 reads `_` and `-` alike). */
function flagName(flag: string): string {
  return flag.split('=')[0]!.replace(/_/g, '-');
}
