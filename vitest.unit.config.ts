// `npm run test:unit`: the quick tier for the inner loop (about half a minute on 2 cores; `npm test` stays
// the full suite). In-process tests only, chosen by timing each file: nothing here starts a broker, a child
// process or ZooKeeper, sleeps beyond a few milliseconds, or needs the compiled dist/ (shard workers load
// dist/src/shard/worker.js), so vitest runs the TypeScript directly without tsc first. The registry files
// serve its HTTP front in-process on a loopback port; the slower socket files (native sendfile and worker
// threads, storage open-files: 2-10 s each) stay in `npm test`.
// A new test file joins the tier by being added to test/unit-files.ts, once it is known to be quick and
// self-contained (npm test runs the same files, also sharing their workers' modules).
import { defineConfig } from 'vitest/config'
import { HEAP_MEASURING, UNIT_FILES } from './test/unit-files.js'

// Test files share their worker's modules (isolate: false): each file would otherwise import the broker's
// modules afresh, which was two thirds of the tier's CPU time. The one file that measures the heap needs a
// worker of its own and runs as a second project.

export default defineConfig({
  test: {
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    reporters: ['default', './test/reporters/summary.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          isolate: false,
          include: UNIT_FILES,
        },
      },
      { extends: true, test: { name: 'unit-isolated', include: HEAP_MEASURING } },
    ],
  },
})
