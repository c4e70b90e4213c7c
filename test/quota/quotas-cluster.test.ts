// Client quotas in a cluster (ZooKeeper and two broker processes): a quota altered through one broker is
// stored in Kafka's layout (/config/users/<user>/clients/<client-id>, a change notification under
// /config/changes) and every broker applies it without a restart: a produce over the quota to either
// broker comes back with throttle_time_ms; removing it frees both.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Admin } from '../../src/client/admin.js'
import { ZooKeeperClient } from '../../src/cluster/zookeeper/index.js'
import * as Produce from '../../src/protocol/messages/00-produce.gen.js'
import { batchOf, startCluster, zookeeperMissing, type ClusterBroker, type TestCluster } from '../harness/index.js'

const MISSING = zookeeperMissing()

/** throttle_time_ms of a 100 kB produce by client-id 'skein-test' (the topic need not exist: the bytes are measured). */
async function produceThrottle(b: ClusterBroker): Promise<number> {
  const client = await b.client()
  try {
    const req = client.produceRequest('quota-topic', 0, batchOf([{ value: Buffer.alloc(100_000, 3) }]), 1)
    const res = await client.call(0, 7, (w) => Produce.encodeProduceRequest(w, req, 7), Produce.decodeProduceResponse)
    return res.throttleTimeMs
  } finally {
    client.close()
  }
}

async function eventually(check: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time')
    await new Promise((r) => setTimeout(r, 200))
  }
}

describe.skipIf(MISSING !== undefined)('client quotas in a cluster', () => {
  let cluster: TestCluster
  let zk: ZooKeeperClient

  beforeAll(async () => {
    cluster = await startCluster({ brokerIds: [1, 2], overrides: ['quota.window.num=2'] })
    zk = await ZooKeeperClient.connect(cluster.connect)
  }, 120_000)
  afterAll(async () => {
    await zk?.close()
    await cluster?.stop()
  })

  it('a quota altered through one broker is stored as Kafka does and applied on every broker', async () => {
    const [b1, b2] = cluster.brokers as [ClusterBroker, ClusterBroker]
    expect(await produceThrottle(b1)).toBe(0)
    expect(await produceThrottle(b2)).toBe(0)
    const admin1 = new Admin({ bootstrapServers: [b1.bootstrap], clientId: 'quota-admin' })
    await admin1.alterClientQuotas([{ entity: { user: 'ANONYMOUS', 'client-id': 'skein-test' }, ops: { producer_byte_rate: 10_000 } }])
    await admin1.close()
    const node = await zk.getData('/config/users/ANONYMOUS/clients/skein-test')
    expect(JSON.parse(node.data.toString())).toEqual({ version: 1, config: { producer_byte_rate: '10000' } })
    const changes = await zk.getChildren('/config/changes')
    const last = changes.sort().at(-1)!
    expect(JSON.parse((await zk.getData(`/config/changes/${last}`)).data.toString())).toEqual({ version: 2, entity_path: 'users/ANONYMOUS/clients/skein-test' })
    // Both brokers: throttled once the notification has reached them.
    for (const b of [b1, b2]) await eventually(async () => (await produceThrottle(b)) > 0)
    const admin2 = new Admin({ bootstrapServers: [b2.bootstrap], clientId: 'quota-admin' })
    expect(await admin2.describeClientQuotas([{ entityType: 'user', match: 'ANONYMOUS' }], false)).toEqual([
      { entity: { user: 'ANONYMOUS', 'client-id': 'skein-test' }, values: { producer_byte_rate: 10_000 } },
    ])
    await admin2.alterClientQuotas([{ entity: { user: 'ANONYMOUS', 'client-id': 'skein-test' }, ops: { producer_byte_rate: null } }])
    await admin2.close()
    for (const b of [b1, b2]) await eventually(async () => (await produceThrottle(b)) === 0)
  }, 90_000)
})
