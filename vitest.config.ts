import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    // generous: with two files at a time on two shared cores a child-process test can take several times its quiet time
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // two test files at a time (vitest's default on two cores is one): the suite's slow files mostly
    // wait on child processes, timers and sockets; every file uses port 0 and folders of its own
    maxWorkers: 2,
  },
});
