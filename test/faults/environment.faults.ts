// Environment faults (npm run test:faults): the ZooKeeper leader killed, a full disk, a slow link, and the
// network faults between brokers in namespaces (partitions, loss, a bandwidth cap). Scenarios needing root
// say so and are recorded as skipped when it is missing.
import { describe, expect, it } from 'vitest'
import { zookeeperMissing } from '../harness/index.js'
import { runScenario, type Scenario } from './runner.js'
import { diskFull, networkScenarios, slowLink, zookeeperLeaderKilled } from './environment-scenarios.js'

const only = process.env.FAULTS_ONLY?.split(',')
const selected = (s: Scenario): boolean => only === undefined || only.includes(s.name)

describe.skipIf(zookeeperMissing() !== undefined)('environment faults', () => {
  for (const s of [zookeeperLeaderKilled(), diskFull(), slowLink(), ...networkScenarios()]) {
    // Scenarios left out by FAULTS_ONLY are reported as skipped, so a file with none selected still passes.
    it.skipIf(!selected(s))(s.name, async () => {
      const r = await runScenario(s)
      if (r.skipped !== undefined) return
      expect(r.ok, `${s.name}: ${JSON.stringify({ lost: r.lost, inconsistent: r.inconsistent, duplicates: r.duplicates, abortedReads: r.abortedReads, nonMonotonic: r.nonMonotonic, replicas: r.replicaDetail, examples: r.examples, notes: r.notes })}`).toBe(true)
    })
  }
})
