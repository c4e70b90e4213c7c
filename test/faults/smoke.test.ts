// The fault suite's smoke run in npm test: one SIGKILL of a partition leader in a three-broker cluster
// under the librdkafka and kafkajs idempotent acks=all workloads, then the checker (nothing acknowledged
// lost, no inconsistent offset, no duplicate) and every replica byte-identical up to the high watermark.
// The full suite is npm run test:faults (test/faults/*.faults.ts).
import { expect, it } from 'vitest'
import { hasPythonModule, zookeeperMissing } from '../harness/index.js'
import { runScenario } from './runner.js'
import { crash } from './scenarios.js'

const missing = zookeeperMissing() ?? (hasPythonModule('confluent_kafka') ? undefined : 'python3-confluent-kafka is not installed')

it.skipIf(missing !== undefined)('survives a SIGKILL of the leader with nothing acknowledged lost (smoke)', async () => {
  const r = await runScenario({ ...crash('SIGKILL', 'leader'), name: 'smoke-sigkill-leader', rounds: 1 }, { save: false })
  expect(r.acknowledged).toBeGreaterThan(20)
  expect({ lost: r.lost, inconsistent: r.inconsistent, duplicates: r.duplicates, abortedReads: r.abortedReads, nonMonotonic: r.nonMonotonic, replicasIdentical: r.replicasIdentical }).toEqual({
    lost: 0, inconsistent: 0, duplicates: 0, abortedReads: 0, nonMonotonic: 0, replicasIdentical: true,
  })
  expect(r.ok, r.examples.join('\n')).toBe(true)
}, 90_000)
