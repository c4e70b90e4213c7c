import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    // Two files at a time even on a 2-core machine (vitest's default there is one): most files wait on
    // sockets, ZooKeeper sessions and child processes rather than on CPU, so the suite takes about half the time.
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    reporters: ['default', './test/reporters/summary.ts'],
  },
})
