import { defineConfig } from 'vitest/config'

// The fault suite (npm run test:faults): long scenarios against real clusters, one file at a time (they
// share two cores and signal processes by PID). FAULTS_REPETITIONS lowers the rounds of the crash scenarios.
export default defineConfig({
  test: {
    include: ['test/faults/**/*.faults.ts'],
    pool: 'forks',
    fileParallelism: false,
    testTimeout: 60 * 60_000,
    hookTimeout: 120_000,
    reporters: ['default'],
  },
})
