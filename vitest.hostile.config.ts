import { defineConfig } from 'vitest/config'

// The hostile-neighbour suite (npm run test:hostile): one long run of a hostile client at every API and version
// against a broker child process while a good producer and consumer run. Its smoke (test/hostile/smoke.test.ts)
// is in npm test; this file pattern (*.hostile.ts) is not, so npm test never runs the full one.
export default defineConfig({
  test: {
    include: ['test/hostile/**/*.hostile.ts'],
    pool: 'forks',
    fileParallelism: false,
    testTimeout: 10 * 60_000,
    hookTimeout: 120_000,
    reporters: ['default'],
  },
})
