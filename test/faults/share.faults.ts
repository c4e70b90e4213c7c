// Share-group faults (npm run test:faults, issue 33): four ShareConsumer processes through a SIGKILL of
// one of them while it holds records and a SIGKILL and restart of a partition leader; every record must be
// acknowledged exactly once (share-scenario.ts). Saved to RESULTS.md with the other scenarios.
import { describe, expect, it } from 'vitest'
import { zookeeperMissing } from '../harness/index.js'
import { FULL, runShareScenario } from './share-scenario.js'

const only = process.env.FAULTS_ONLY?.split(',')

describe.skipIf(zookeeperMissing() !== undefined)('share-group faults', () => {
  it.skipIf(only !== undefined && !only.includes(FULL.name))(FULL.name, async () => {
    const r = await runShareScenario(FULL)
    expect(r.ok, JSON.stringify({ produced: r.produced, ackedOnce: r.ackedOnce, ackedTwice: r.ackedTwice, missing: r.missing, neverDelivered: r.neverDelivered, indeterminate: r.indeterminate, replicas: r.replicaDetail, examples: r.examples })).toBe(true)
    expect(r.redeliveries, 'the killed member\'s records were delivered again').toBeGreaterThan(0)
  })
})
