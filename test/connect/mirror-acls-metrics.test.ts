// MirrorMaker 2 between two single Skein brokers with an ACL authorizer (real processes; MirrorMaker
// connects as User:ANONYMOUS, a super user): topic ACL sync with Kafka's rules (LITERAL topic ACLs of
// replicated topics only, ALLOW WRITE left out, ALLOW ALL copied as ALLOW READ, DENY copied), again at
// sync.topic.acls.interval.seconds for ACLs added later; and MirrorMaker's metrics (record-count,
// record-age-ms, replication-latency-ms, byte-count, checkpoint-latency-ms) on GET /metrics, moving as
// records are mirrored and checkpoints written.
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { Admin, Producer } from '../../src/client/index.js'
import { MirrorMakerConfig, startMirrorMaker, type MirrorMakerHandle } from '../../src/connect/mirror-maker.js'
import { type AclBinding, AclOperation, AclPermission, PatternType, ResourceType } from '../../src/domain/acl.js'
import { WindowedStat } from '../../src/connect/mirror/metrics.js'
import { freeLoopbackPort } from '../../src/cli/free-port.js'
import { silentLogger } from '../../src/observability/logger.js'
import { startBrokerProcess, type BrokerProcess } from '../harness/broker.js'
import { MIRROR_ONE_REPLICA, waitFor } from './helpers.js'

const SECURED = ['auto.create.topics.enable=false', 'authorizer.class.name=kafka.security.authorizer.AclAuthorizer', 'super.users=User:ANONYMOUS']
const topicAcl = (name: string, principal: string, operation: number, permission: number, patternType: number = PatternType.LITERAL): AclBinding =>
  ({ resourceType: ResourceType.TOPIC, resourceName: name, patternType, principal, host: '*', operation, permission })
const ANY_TOPIC = { resourceType: ResourceType.TOPIC, resourceName: null, patternType: PatternType.ANY, principal: null, host: null, operation: AclOperation.ANY, permission: AclPermission.ANY }
const brief = (b: AclBinding): string => `${b.resourceName} ${b.principal} ${b.operation} ${b.permission} ${b.patternType}`

/** Sample values of a metric family from Prometheus text, by their label text. */
function samples(text: string, name: string): Map<string, number> {
  const out = new Map<string, number>()
  for (const line of text.split('\n')) {
    const m = new RegExp(`^${name}(\\{[^}]*\\})? (\\S+)$`).exec(line)
    if (m !== null) out.set(m[1] ?? '', Number(m[2]))
  }
  return out
}

describe('WindowedStat (Kafka\'s two 30 s samples)', () => {
  test('min, max, avg and rates cover the last one to two samples; NaN when nothing is in them', () => {
    let t = 1_000_000
    const s = new WindowedStat(() => t)
    expect(s.avg).toBeNaN()
    expect(s.max).toBeNaN()
    s.record(10)
    s.record(30)
    t += 31_000 // a new sample; the first still counts
    s.record(20)
    expect([s.min, s.max, s.avg, s.last]).toEqual([10, 30, 20, 20])
    expect(s.rateOfCount()).toBeCloseTo(3 / 31, 5) // 3 values over the 31 s since the oldest sample began
    t += 31_000 // the first sample is replaced
    s.record(50)
    expect([s.min, s.max, s.avg]).toEqual([20, 50, 35])
    t += 120_000 // both stale
    expect(s.avg).toBeNaN()
    expect(s.last).toBe(50)
  })
})

describe('MirrorMaker 2: topic ACL sync and metrics', () => {
  let a: BrokerProcess
  let b: BrokerProcess
  let restPort = 0
  let adminA: Admin
  let adminB: Admin
  let mm: MirrorMakerHandle
  const age = 5000
  const produce = async (n: number, from: number): Promise<void> => {
    const p = new Producer({ bootstrapServers: a.bootstrap, lingerMs: 2 })
    await p.sendBatch(Array.from({ length: n }, (_v, i) => ({ topic: 'orders', partition: i % 2, key: `k${from + i}`, value: `order ${from + i}`.padEnd(20, '.'), timestamp: Date.now() - age })))
    await p.close()
  }

  beforeAll(async () => {
    ;[a, b] = await Promise.all([startBrokerProcess({ overrides: SECURED }), startBrokerProcess({ overrides: SECURED })])
    adminA = new Admin({ bootstrapServers: a.bootstrap })
    adminB = new Admin({ bootstrapServers: b.bootstrap })
    await adminA.createTopics([{ name: 'orders', numPartitions: 2, replicationFactor: 1 }, { name: 'secret', numPartitions: 1, replicationFactor: 1 }])
    const created = await adminA.createAcls([
      topicAcl('orders', 'User:alice', AclOperation.READ, AclPermission.ALLOW),
      topicAcl('orders', 'User:bob', AclOperation.ALL, AclPermission.ALLOW),
      topicAcl('orders', 'User:carol', AclOperation.WRITE, AclPermission.ALLOW),
      topicAcl('orders', 'User:mallory', AclOperation.READ, AclPermission.DENY),
      topicAcl('ord', 'User:dave', AclOperation.READ, AclPermission.ALLOW, PatternType.PREFIXED),
      topicAcl('secret', 'User:erin', AclOperation.READ, AclPermission.ALLOW),
      { resourceType: ResourceType.GROUP, resourceName: 'billing', patternType: PatternType.LITERAL, principal: 'User:alice', host: '*', operation: AclOperation.READ, permission: AclPermission.ALLOW },
    ])
    expect(created.every((r) => r.errorCode === 0)).toBe(true)
    await produce(40, 0)
    await adminA.commitOffsets('billing', [{ topic: 'orders', partition: 0, offset: 10 }, { topic: 'orders', partition: 1, offset: 15 }])
    restPort = await freeLoopbackPort()
    mm = await startMirrorMaker(new MirrorMakerConfig({
      clusters: 'A, B',
      'A.bootstrap.servers': a.bootstrap,
      'B.bootstrap.servers': b.bootstrap,
      'A->B.enabled': 'true',
      'A->B.topics': 'orders',
      'B->A.emit.heartbeats.enabled': 'false',
      groups: 'billing',
      'emit.checkpoints.interval.seconds': '1',
      'sync.topic.acls.interval.seconds': '1',
      'offset.lag.max': '0',
      ...MIRROR_ONE_REPLICA,
      'offset.flush.interval.ms': '500',
      // The process's own REST server (KIP-710's switch) at a port chosen here.
      'dedicated.mode.enable.internal.rest': 'true',
      listeners: `http://127.0.0.1:${restPort}`,
    }), silentLogger())
  }, 60_000)

  afterAll(async () => {
    await mm?.stop()
    await adminA?.close()
    await adminB?.close()
    await Promise.all([a?.kill('SIGTERM'), b?.kill('SIGTERM')])
  })

  test('the source\'s LITERAL ACLs of replicated topics reach the remote topic: WRITE left out, ALL as READ, DENY kept; later ones at the interval', async () => {
    const expected = [
      topicAcl('A.orders', 'User:alice', AclOperation.READ, AclPermission.ALLOW),
      topicAcl('A.orders', 'User:bob', AclOperation.READ, AclPermission.ALLOW),
      topicAcl('A.orders', 'User:mallory', AclOperation.READ, AclPermission.DENY),
    ].map(brief).sort()
    const onB = async (): Promise<string[]> => (await adminB.describeAcls(ANY_TOPIC)).map(brief).sort()
    await waitFor('the ACLs on B', async () => (await onB()).length >= expected.length, 30_000)
    expect(await onB()).toEqual(expected)

    await adminA.createAcls([topicAcl('orders', 'User:zoe', AclOperation.DESCRIBE, AclPermission.ALLOW)])
    const later = [...expected, brief(topicAcl('A.orders', 'User:zoe', AclOperation.DESCRIBE, AclPermission.ALLOW))].sort()
    await waitFor('the later ACL on B', async () => (await onB()).length === later.length, 15_000)
    expect(await onB()).toEqual(later)
  }, 60_000)

  test('record-count, byte-count, record-age-ms and replication-latency-ms per partition, and checkpoint-latency-ms, move on GET /metrics', async () => {
    const url = `${mm.flows.find((f) => f.flow.source === 'A' && f.flow.target === 'B')!.connect.url}/metrics`
    const scrape = async (): Promise<string> => {
      const res = await fetch(url)
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toContain('text/plain')
      return res.text()
    }
    const P = 'kafka_connect_mirror_mirrorsourceconnector_'
    const part = (p: number): string => `{source="A",target="B",topic="A.orders",partition="${p}"}`
    const total = (text: string, name: string): number => [...samples(text, `${P}${name}`).values()].reduce((x, y) => x + y, 0)
    let text = await waitFor('40 records counted', async () => {
      const t = await scrape()
      return total(t, 'record_count') === 40 ? t : undefined
    }, 30_000)
    expect(samples(text, `${P}record_count`).get(part(0))).toBe(20)
    expect(total(text, 'byte_count')).toBe(40 * 20)
    for (const p of [0, 1]) {
      expect(samples(text, `${P}record_age_ms_min`).get(part(p))).toBeGreaterThanOrEqual(age)
      expect(samples(text, `${P}record_age_ms_max`).get(part(p))).toBeLessThan(age + 60_000)
      const lat = samples(text, `${P}replication_latency_ms_avg`).get(part(p))!
      expect(lat).toBeGreaterThanOrEqual(age)
      expect(samples(text, `${P}replication_latency_ms_min`).get(part(p))).toBeLessThanOrEqual(lat)
      expect(samples(text, `${P}replication_latency_ms_max`).get(part(p))).toBeGreaterThanOrEqual(lat)
      expect(samples(text, `${P}record_rate`).get(part(p))).toBeGreaterThan(0)
    }

    await produce(10, 40)
    text = await waitFor('50 records counted', async () => {
      const t = await scrape()
      return total(t, 'record_count') === 50 ? t : undefined
    }, 30_000)
    expect(total(text, 'byte_count')).toBe(50 * 20)

    const C = 'kafka_connect_mirror_mirrorcheckpointconnector_checkpoint_latency_ms'
    text = await waitFor('a checkpoint latency', async () => {
      const t = await scrape()
      return samples(t, C).size > 0 ? t : undefined
    }, 30_000)
    const [labels, latency] = [...samples(text, C)][0]!
    expect(labels).toMatch(/^\{source="A",target="B",group="billing",topic="A\.orders",partition="[01]"\}$/)
    expect(latency).toBeGreaterThanOrEqual(0)
    expect(latency).toBeLessThan(30_000)
    expect(samples(text, `${C}_max`).get(labels)).toBeGreaterThanOrEqual(latency)
  }, 90_000)

  test('dedicated.mode.enable.internal.rest: the process serves /metrics (every flow\'s), /health and / on the port set in listeners', async () => {
    const base = `http://127.0.0.1:${restPort}`
    expect(mm.restUrls).toEqual([base])
    await waitFor('healthy', async () => (await fetch(`${base}/health`)).status === 200, 30_000)
    const root = await (await fetch(`${base}/`)).json() as { flows: { source: string; target: string; worker_url: string }[] }
    expect(root.flows.map((f) => `${f.source}->${f.target}`).sort()).toEqual(mm.flows.map((f) => `${f.flow.source}->${f.flow.target}`).sort())
    expect(root.flows.map((f) => f.worker_url).sort()).toEqual(mm.flows.map((f) => f.connect.url).sort())
    const res = await fetch(`${base}/metrics`)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toContain('text/plain')
    const count = samples(await res.text(), 'kafka_connect_mirror_mirrorsourceconnector_record_count')
    expect([...count.values()].reduce((x, y) => x + y, 0)).toBeGreaterThanOrEqual(40)
    expect((await fetch(`${base}/connectors`)).status).toBe(404)
  }, 60_000)
})
