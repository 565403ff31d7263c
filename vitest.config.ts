import { defineConfig } from 'vitest/config';

/**
 * Test files that share their worker's module graph (`isolate: false`): importing the service's
 * modules (and compiling its schemas) once per worker instead of once per file halves the CPU a
 * light file costs. A file belongs here only when it closes every service, store and venue it
 * opens and changes nothing process-wide: no fake clock (`useTestClock`), `process.env`,
 * `process.on`, child process or browser. Every other file (and any new one) runs isolated.
 */
const SHARED_WORKER = [
  'test/machines/combo.test.ts',
  'test/machines/copytrade.test.ts',
  'test/machines/input.test.ts',
  'test/machines/market-resolved.test.ts',
  'test/machines/order.test.ts',
  'test/machines/strategies.test.ts',
  'test/machines/strategy-kit.test.ts',
  'test/machines/wallet.test.ts',
  'test/engine/venue/capture-replay.test.ts',
  'test/engine/venue/capture-resume.test.ts',
  'test/engine/venue/capture.test.ts',
  'test/engine/venue/checkpoint.test.ts',
  'test/engine/venue/conservation.test.ts',
  'test/engine/venue/journal.test.ts',
  'test/engine/venue/ledger-wallet-ops.test.ts',
  'test/engine/venue/ledger.test.ts',
  'test/engine/venue/market-events.test.ts',
  'test/engine/venue/matching.test.ts',
  'test/engine/venue/row-json.test.ts',
  'test/api/admission-accept.test.ts',
  'test/api/admission.test.ts',
  'test/api/auth-cache.test.ts',
  'test/api/cancel-crash.test.ts',
  'test/api/capture-replay.test.ts',
  'test/api/capture-touch.test.ts',
  'test/api/capture-trial.test.ts',
  'test/api/child-risk.test.ts',
  'test/api/combos-capture.test.ts',
  'test/api/complementary.test.ts',
  'test/api/contract.test.ts',
  'test/api/disk-store.test.ts',
  'test/api/dispatch.test.ts',
  'test/api/error-map.test.ts',
  'test/api/foundation.test.ts',
  'test/api/http-hardening.test.ts',
  'test/api/http-trial.test.ts',
  'test/api/idempotency.test.ts',
  'test/api/market-resolution.test.ts',
  'test/api/openapi.test.ts',
  'test/api/order-validation.test.ts',
  'test/api/order-versions.test.ts',
  'test/api/orders-batch.test.ts',
  'test/api/orders.test.ts',
  'test/api/partner-shapes.test.ts',
  'test/api/push.test.ts',
  'test/api/real-history.test.ts',
  'test/api/response-batch.test.ts',
  'test/api/restart-revisions.test.ts',
  'test/api/security.test.ts',
  'test/api/step-answer.test.ts',
  'test/api/store-faults.test.ts',
  'test/api/strategies.test.ts',
  'test/api/trade-history.test.ts',
  'test/api/wallet.test.ts',
  'test/engine/actor-host.test.ts',
  'test/engine/auth.test.ts',
  'test/engine/backoff.test.ts',
  'test/engine/decimal.test.ts',
  'test/engine/risk.test.ts',
  'test/engine/strategies.test.ts',
  'test/engine/strategies/stored-form.test.ts',
  'test/engine/triggers.test.ts',
  'test/engine/wallet/reconcile.test.ts',
  'test/invariants.test.ts',
  'test/schemas/orders.test.ts',
];

const common = {
  // generous: with two files at a time on two shared cores a child-process test can take several times its quiet time
  testTimeout: 60_000,
  hookTimeout: 60_000,
  pool: 'forks',
} as const;

export default defineConfig({
  test: {
    // once for both projects: builds dist/ and provides the MongoDB of the run (test/global-setup.ts)
    globalSetup: ['test/global-setup.ts'],
    // three test files at a time on two cores (vitest's default there is one): the suite's slow files mostly
    // wait on child processes, timers and sockets; every file uses port 0 and folders of its own (the
    // suite's wall time on this machine: ~230 s at two, ~200 s at three)
    maxWorkers: 3,
    projects: [
      { test: { ...common, name: 'shared-worker', include: SHARED_WORKER, isolate: false } },
      { test: { ...common, name: 'isolated', include: ['test/**/*.test.ts'], exclude: SHARED_WORKER } },
    ],
  },
});
