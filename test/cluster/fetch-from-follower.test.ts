// Fetch from follower (KIP-392) in a real cluster: a ZooKeeper and three Skein broker processes, broker.rack
// RACK<id> each and replica.selector.class=RackAwareReplicaSelector (as librdkafka's trivup clusters), a
// topic of one partition with three replicas.
// - librdkafka (python3-confluent-kafka) with client.rack = a follower's rack reads every record, in
//   order, from that follower: the leader answers its first fetch with PreferredReadReplica and no
//   records. Both sides show it: librdkafka's per-broker rxbytes, and each broker's BytesOutPerSec
//   (GET /metrics on its REST listener): the follower sent the records, the leader none of them.
// - a follower serves v11+ consumer fetches itself up to its high watermark; to v10 it is not the
//   leader (NOT_LEADER_OR_FOLLOWER); past its log end a fetch with a leader epoch is OFFSET_OUT_OF_RANGE,
//   one without an empty answer.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ErrorCode } from '../../src/domain/errors.js'
import * as Fetch from '../../src/protocol/messages/01-fetch.gen.js'
import { freeLoopbackPort, startCluster, zookeeperMissing, prometheusSamples, type TestCluster } from '../harness/index.js'
import { hasPythonModule, runOk, SYSTEM_PYTHON } from '../harness/tools.js'
import { skein } from '../cli/helpers.js'
import { agreed } from './ops-helpers.js'

const MISSING = zookeeperMissing() ?? (hasPythonModule('confluent_kafka') ? undefined : 'python3-confluent-kafka is not installed')
const RACK_CONSUMER_PY = join(dirname(fileURLToPath(import.meta.url)), 'python', 'rack_consumer.py')
const COUNT = 400
const SIZE = 1000

describe.skipIf(MISSING !== undefined)('fetch from follower (KIP-392) in a cluster', () => {
  let cluster: TestCluster
  const restPorts = new Map<number, number>()

  const bytesOut = async (id: number): Promise<number> => {
    const res = await fetch(`http://127.0.0.1:${restPorts.get(id)}/metrics`)
    expect(res.status).toBe(200)
    return prometheusSamples(await res.text()).get('kafka_server_brokertopicmetrics_bytesout_total') ?? 0
  }

  beforeAll(async () => {
    for (const id of [1, 2, 3]) restPorts.set(id, await freeLoopbackPort())
    cluster = await startCluster({
      overrides: ['default.replication.factor=3', 'offsets.topic.replication.factor=3', 'replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector'],
      brokerOverrides: (id) => [`broker.rack=RACK${id}`, `rest.listeners=http://127.0.0.1:${restPorts.get(id)}`],
    })
  }, 120_000)

  afterAll(async () => {
    await cluster?.stop()
  })

  it('sends a consumer with client.rack to the follower in its rack, which serves every record', async () => {
    const created = await skein(['topics', '--bootstrap-server', cluster.bootstrap(), '--create', '--topic', 'near', '--partitions', '1', '--replication-factor', '3'])
    expect(created.code, created.stderr).toBe(0)
    const [p] = await agreed(cluster, 'near', (ps) => ps.length === 1 && ps[0]!.isr.length === 3, 'near with three in-sync replicas', 60_000)
    const leader = p!.leader
    const follower = p!.replicas.find((r) => r !== leader)!
    const before = { leader: await bytesOut(leader), follower: await bytesOut(follower) }

    const r = await runOk(SYSTEM_PYTHON, [RACK_CONSUMER_PY], {
      input: JSON.stringify({ bootstrap: cluster.bootstrap(), topic: 'near', count: COUNT, size: SIZE, rack: `RACK${follower}`, timeout: 90 }) + '\n',
      timeoutMs: 150_000,
    })
    const out = JSON.parse(r.stdout.toString().trim().split('\n').pop()!) as { consumed: number; in_order: boolean; rxbytes: Record<string, number> }
    expect(out.consumed).toBe(COUNT)
    expect(out.in_order).toBe(true)
    // librdkafka's own view: the records came from the follower.
    expect(out.rxbytes[String(follower)]).toBeGreaterThan(COUNT * SIZE)
    expect(out.rxbytes[String(leader)] ?? 0).toBeLessThan(SIZE)

    // The brokers' view: the follower sent the records to a client, the leader sent none.
    expect((await bytesOut(follower)) - before.follower).toBeGreaterThanOrEqual(COUNT * SIZE)
    expect((await bytesOut(leader)) - before.leader).toBeLessThan(SIZE)
  }, 240_000)

  it('serves v11+ consumer fetches on a follower up to its high watermark, and says past its log end what Kafka says', async () => {
    const [p] = await agreed(cluster, 'near', (ps) => ps.length === 1 && ps[0]!.isr.length === 3, 'near with three in-sync replicas', 60_000)
    const follower = cluster.broker(p!.replicas.find((r) => r !== p!.leader)!)
    const c = await follower.client()
    try {
      const fetchAt = async (offset: number, version: number, currentLeaderEpoch: number): Promise<Fetch.PartitionData> => {
        const req = c.fetchRequest('near', 0, offset)
        req.topics[0]!.partitions[0]!.currentLeaderEpoch = currentLeaderEpoch
        const res = await c.call(1, version, (w) => Fetch.encodeFetchRequest(w, req, version), Fetch.decodeFetchResponse)
        return res.responses[0]!.partitions[0]!
      }
      // Older consumers know nothing of followers: NOT_LEADER_OR_FOLLOWER, as from Kafka.
      expect((await fetchAt(0, 10, -1)).errorCode).toBe(ErrorCode.NOT_LEADER_OR_FOLLOWER)
      // v12: records from the follower, up to its high watermark (every record: acks=all).
      const served = await fetchAt(0, 12, p!.epoch)
      expect(served.errorCode).toBe(ErrorCode.NONE)
      expect(served.highWatermark).toBe(BigInt(COUNT))
      expect(served.preferredReadReplica).toBe(-1)
      expect(Buffer.isBuffer(served.records) ? served.records.length : 0).toBeGreaterThan(0)
      // Past the follower's log end: with a leader epoch the client asks the leader (OFFSET_OUT_OF_RANGE);
      // without one it may just be on stale metadata, and gets an empty answer (KAFKA-14288).
      expect((await fetchAt(COUNT + 100, 12, p!.epoch)).errorCode).toBe(ErrorCode.OFFSET_OUT_OF_RANGE)
      const empty = await fetchAt(COUNT + 100, 12, -1)
      expect(empty.errorCode).toBe(ErrorCode.NONE)
      expect(empty.highWatermark).toBe(BigInt(COUNT))
      expect(Buffer.isBuffer(empty.records) ? empty.records.length : 0).toBe(0)
    } finally {
      c.close()
    }
  }, 120_000)
})
