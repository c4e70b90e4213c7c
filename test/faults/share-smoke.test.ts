// The share-group fault scenario's smoke run in npm test (share-scenario.ts; the full run is
// test/faults/share.faults.ts in npm run test:faults): four ShareConsumer processes on three brokers, one
// member SIGKILLed while it holds records, no broker killed; every record acknowledged exactly once and the
// killed member's records delivered again.
import { expect, it } from 'vitest'
import { zookeeperMissing } from '../harness/index.js'
import { runShareScenario } from './share-scenario.js'

it.skipIf(zookeeperMissing() !== undefined)('a share group loses and doubles no acknowledgement when a member is SIGKILLed holding records (smoke)', async () => {
  const r = await runShareScenario({ name: 'share-smoke', records: 1000, rate: 250, members: 4, lockMs: 2000, killBroker: false, holdMs: 50, victimHoldMs: 500 }, { save: false })
  expect({ produced: r.produced, ackedTwice: r.ackedTwice, missing: r.missing, neverDelivered: r.neverDelivered, examples: r.examples, replicasIdentical: r.replicasIdentical }).toEqual({ produced: 1000, ackedTwice: 0, missing: 0, neverDelivered: 0, examples: [], replicasIdentical: true })
  expect(r.ackedOnce + r.indeterminate).toBe(1000)
  expect(r.redeliveries).toBeGreaterThan(0)
}, 90_000)
