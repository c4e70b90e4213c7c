// The quick tier's files (`npm run test:unit`, vitest.unit.config.ts), chosen by timing each file: nothing
// here starts a broker, a child process or ZooKeeper, sleeps beyond a few milliseconds, or needs the
// compiled dist/. npm test runs them too, sharing their workers' modules (vitest.config.ts).
// A new test file joins the tier by being added here, once it is known to be quick and self-contained.
export const UNIT_FILES = [
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
]

/** The one quick file that measures the heap: it needs a worker of its own. */
export const HEAP_MEASURING = ['test/observability/metrics.test.ts']
