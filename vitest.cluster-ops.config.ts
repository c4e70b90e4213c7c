// `npm run test:cluster-ops`: the cluster-operations tests with Kafka's bound on unavailability (the
// longest gap in acknowledged writes under 1 s across a controlled shutdown, a preferred election and a
// rolling restart), meant for a quiet machine, plus the long variants (test/cluster/*.ops.ts: throttled
// reassignment (both sides, and the leader side alone), cancellation, preferred and unclean elections on
// demand, rolling restart under load, an aborted transaction's marker across a leader change).
import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/cluster/operations.test.ts', 'test/cluster/*.ops.ts'],
    pool: 'forks',
    fileParallelism: false,
    testTimeout: 300_000,
    hookTimeout: 120_000,
    env: { SKEIN_OPS_MAX_GAP_MS: '1000' },
    reporters: ['default'],
  },
})
