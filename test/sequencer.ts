// The order npm test starts its files in. Two files run at a time, and vitest, without the timings of an
// earlier run (a fresh clone, CI), starts the largest files first, so small but slow ones (the fault and
// hostile smokes, about 15 s each) start near the end. Here the files known to be slow start first,
// longest first, so the quick ones fill in at the end; files not listed keep vitest's order after them,
// and the non-isolated quick tier (vitest.config.ts) runs last, together, so its workers are reused.
// (Replaying the fresh run's file times on two workers, size order ends 3 s after the ideal and this
// one at it: a small gain that keeps the end of the run short as slow files are added.)
import { relative } from 'node:path'
import { BaseSequencer, type TestSpecification } from 'vitest/node'

/**
 * Seconds each file took in a fresh-clone npm test (2 cores, two files at a time), for those over 5 s.
 * Only the order matters: a stale figure costs some balance at the end of the run, never a test.
 */
export const KNOWN_SECONDS: Readonly<Record<string, number>> = {
  'test/docs/docs.test.ts': 82,
  'test/cli/commands.test.ts': 56,
  'test/cluster/replication.test.ts': 38,
  'test/faults/share-smoke.test.ts': 30,
  'test/connect/runtime.test.ts': 24,
  'test/security/listeners-tls-sasl.test.ts': 22,
  'test/cluster/operations.test.ts': 20,
  'test/cluster/replication-paths.test.ts': 20,
  'test/cluster/cluster.test.ts': 19,
  'test/streams/eos-faults.test.ts': 18,
  'test/faults/smoke.test.ts': 17,
  'test/registry/server.test.ts': 17,
  'test/hostile/smoke.test.ts': 16,
  'test/cli/timeouts.test.ts': 16,
  'test/cli/configs-scram.test.ts': 16,
  'test/connect/distributed.test.ts': 16,
  'test/integration/transactions-kafkajs.test.ts': 15,
  'test/registry/cli-serdes.test.ts': 15,
  'test/security/acls.test.ts': 15,
  'test/cli/cluster-command.test.ts': 14,
  'test/cluster/zookeeper.test.ts': 14,
  'test/server/many-partitions.test.ts': 13,
  'test/quota/quotas.test.ts': 13,
  'test/security/embedded-identity.test.ts': 13,
  'test/cluster/secure-cluster-strict.test.ts': 13,
  'test/integration/consumer-groups-raw.test.ts': 12,
  'test/streams/broker.test.ts': 12,
  'test/connect/mirror-maker.test.ts': 12,
  'test/observability/logger.test.ts': 12,
  'test/broker/topic-lifecycle.test.ts': 11,
  'test/cluster/zk-store.test.ts': 11,
  'test/integration/groups-kafkajs.test.ts': 11,
  'test/integration/groups-kcat-python.test.ts': 11,
  'test/console/streams.test.ts': 11,
  'test/http/https.test.ts': 10,
  'test/integration/fetch-clients.test.ts': 10,
  'test/server/admin-fairness.test.ts': 10,
  'test/integration/kafka-python.test.ts': 10,
  'test/integration/groups-confluent.test.ts': 10,
  'test/integration/confluent-python.test.ts': 9,
  'test/rest/embedded.test.ts': 9,
  'test/http/server.test.ts': 9,
  'test/server/request-bounds.test.ts': 9,
  'test/rest/v2.test.ts': 9,
  'test/integration/compaction.test.ts': 8,
  'test/connect/mirror-acls-metrics.test.ts': 8,
  'test/server/list-request-slices.test.ts': 8,
  'test/integration/transactions-confluent.test.ts': 8,
  'test/integration/idempotence-raw.test.ts': 8,
  'test/integration/compaction-codecs.test.ts': 8,
  'test/registry/primary-kill.test.ts': 8,
  'test/storage/cleaner-crash.test.ts': 8,
  'test/server/connection.test.ts': 8,
  'test/shard/router.test.ts': 8,
  'test/server/restart.test.ts': 8,
  'test/console/browser.test.ts': 7,
  'test/integration/kcat.test.ts': 7,
  'test/integration/compression-clients.test.ts': 7,
  'test/cli/acls.test.ts': 6,
  'test/cluster/replication-metrics.test.ts': 6,
  'test/cluster/control-fencing.test.ts': 6,
  'test/connect/rest-https.test.ts': 6,
  'test/cli/bench-compression.test.ts': 6,
  'test/cli/eos.test.ts': 5,
}

export class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const ordered = await super.sort(files)
    const root = this.ctx.config.root
    // [group, -seconds]: known slow files, then the other isolated files, then the shared-worker tier.
    const key = (f: TestSpecification): [number, number] => {
      if (f.project.config.isolate === false) return [2, 0]
      const seconds = KNOWN_SECONDS[relative(root, f.moduleId)]
      return seconds === undefined ? [1, 0] : [0, -seconds]
    }
    // Array.prototype.sort is stable: within a group vitest's own order stands.
    return ordered.sort((a, b) => {
      const [ga, sa] = key(a)
      const [gb, sb] = key(b)
      return ga - gb || sa - sb
    })
  }
}
