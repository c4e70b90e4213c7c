import { defineConfig } from 'vitest/config'
import { LongestFirstSequencer } from './test/sequencer.js'
import { IN_PROCESS_FILES, UNIT_FILES } from './test/unit-files.js'

export default defineConfig({
  test: {
    pool: 'forks',
    // Two files at a time even on a 2-core machine (vitest's default there is one): most files wait on
    // sockets, ZooKeeper sessions and child processes rather than on CPU, so the suite takes about half the time.
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    reporters: ['default', './test/reporters/summary.ts'],
    // Slow files first, so the run does not end waiting on one (test/sequencer.ts).
    sequence: { sequencer: LongestFirstSequencer },
    projects: [
      // Each file in a process of its own.
      { extends: true, test: { name: 'all', include: ['test/**/*.test.ts'], exclude: [...UNIT_FILES, ...IN_PROCESS_FILES] } },
      // The quick tier's files (test/unit-files.ts) share their worker's modules, as in `npm run test:unit`:
      // importing the broker's modules afresh for each was most of their CPU time.
      { extends: true, test: { name: 'unit', include: UNIT_FILES, isolate: false } },
      // Likewise the in-process tier (test/unit-files.ts): quick files with brokers in the test's own process.
      { extends: true, test: { name: 'in-process', include: IN_PROCESS_FILES, isolate: false } },
    ],
  },
})
