// `npm run test:unit`: the quick tier for the inner loop (about half a minute on 2 cores; `npm test` stays
// the full suite). In-process tests only, chosen by timing each file: nothing here starts a broker, a child
// process or ZooKeeper, sleeps beyond a few milliseconds, or needs the compiled dist/ (shard workers load
// dist/src/shard/worker.js), so vitest runs the TypeScript directly without tsc first. The registry files
// serve its HTTP front in-process on a loopback port; the slower socket files (native sendfile and worker
// threads, storage open-files: 2-10 s each) stay in `npm test`.
// A new test file joins the tier by being added here, once it is known to be quick and self-contained.
import { defineConfig } from 'vitest/config'

// Test files share their worker's modules (isolate: false): each file would otherwise import the broker's
// modules afresh, which was two thirds of the tier's CPU time. The one file that measures the heap needs a
// worker of its own and runs as a second project.
const HEAP_MEASURING = ['test/observability/metrics.test.ts']

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
          include: [
            // Whole folders: the protocol codecs, config, coordinators (driven on a fake clock), replication
            // rules, record batches.
            'test/protocol/*.test.ts',
            'test/config/*.test.ts',
            'test/coordinator/*.test.ts',
            'test/replication/*.test.ts',
            'test/records/*.test.ts',
            // Storage units (not crash/disk-full: child processes; open-files: sockets; cleaner-shard: dist/).
            'test/storage/cleaner.test.ts',
            'test/storage/compression-append.test.ts',
            'test/storage/data-directory.test.ts',
            'test/storage/lazy-index.test.ts',
            'test/storage/log-dirs.test.ts',
            'test/storage/meta-properties.test.ts',
            'test/storage/partition-log.test.ts',
            'test/storage/producer-state.test.ts',
            'test/storage/replica-model.test.ts',
            'test/storage/replication.test.ts',
            'test/storage/txn-cleaner.test.ts',
            'test/storage/txn.test.ts',
            // Other fast units.
            'test/auth/auth-units.test.ts',
            'test/cli/cluster-ops-tools.test.ts',
            'test/client/frame-receiver.test.ts',
            'test/cluster/replica-assignment.test.ts',
            'test/connect/converters.test.ts',
            'test/connect/errors.test.ts',
            'test/connect/group-protocol.test.ts',
            'test/connect/mirror-formats.test.ts',
            'test/connect/registry-converters.test.ts',
            'test/faults/checker.test.ts',
            'test/native/bench-baselines.test.ts',
            'test/native/crc32c.test.ts',
            'test/native/fsync.test.ts',
            'test/native/loader.test.ts',
            'test/native/malloc-tune.test.ts',
            'test/native/mmap-index.test.ts',
            'test/quota/client-quotas.test.ts',
            'test/registry/avro.test.ts',
            'test/registry/bad-input.test.ts',
            'test/registry/http.test.ts',
            'test/registry/jsonschema.test.ts',
            'test/registry/kafkajs-client.test.ts',
            'test/registry/levels.test.ts',
            'test/registry/protobuf.test.ts',
            'test/registry/records.test.ts',
            'test/registry/serdes.test.ts',
            'test/registry/service.test.ts',
            'test/rest/openapi.test.ts',
            'test/rest/splitter.test.ts',
            'test/server/fetch-session-cache.test.ts',
            'test/shard/frame-pool.test.ts',
            'test/streams/cache.test.ts',
            'test/streams/operators.test.ts',
            'test/streams/state.test.ts',
          ],
        },
      },
      { extends: true, test: { name: 'unit-isolated', include: HEAP_MEASURING } },
    ],
  },
})
