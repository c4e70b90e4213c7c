// Share groups (KIP-932) on /metrics: Kafka's ShareGroupMetrics RecordAcknowledgementsPerSec by ackType
// (kafka_server_sharegroupmetrics_recordacknowledgements_total), and each share-partition's start offset and
// lag for the share groups this broker coordinates (kafka_sharegroup_start_offset, kafka_sharegroup_lag),
// against a broker with a ShareConsumer acknowledging records explicitly.
import parsePrometheusTextFormat from 'parse-prometheus-text-format'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { AcknowledgeType, Admin, Producer, ShareConsumer } from '../../src/client/index.js'
import { renderPrometheusText } from '../../src/observability/prometheus.js'
import { startTestBroker, type TestBroker } from '../harness/broker.js'

let tb: TestBroker
let admin: Admin
beforeAll(async () => {
  tb = await startTestBroker()
  admin = new Admin({ bootstrapServers: tb.bootstrap })
})
afterAll(async () => {
  await admin?.close()
  await tb?.stop()
})

type Families = ReturnType<typeof parsePrometheusTextFormat>
const scrape = async (): Promise<Families> => parsePrometheusTextFormat(renderPrometheusText(await tb.broker.metrics.registry.scrape()))
function value(f: Families, name: string, labels: Record<string, string> = {}): number | undefined {
  const m = f.find((x) => x.name === name)?.metrics.find((s) => JSON.stringify(s.labels ?? {}) === JSON.stringify(labels))
  return m === undefined ? undefined : Number(m.value)
}

describe('share group metrics', () => {
  it('counts acknowledged records by type and shows start offset and lag per share-partition', async () => {
    await admin.createTopics([{ name: 'metered', numPartitions: 1 }])
    const producer = new Producer({ bootstrapServers: tb.bootstrap, lingerMs: 0 })
    for (let i = 0; i < 6; i++) await producer.send({ topic: 'metered', partition: 0, value: `r${i}` })
    await producer.close()
    await admin.alterConfigs({ type: 'group', name: 'metered-group' }, [{ op: 'set', name: 'share.auto.offset.reset', value: 'earliest' }])
    const c = new ShareConsumer({ bootstrapServers: tb.bootstrap, groupId: 'metered-group', acknowledgementMode: 'explicit' })
    c.subscribe(['metered'])
    try {
      let got = 0
      const deadline = Date.now() + 15_000
      while (got < 6 && Date.now() < deadline) {
        for (const r of await c.poll(300)) {
          got++
          // 0-3 accepted, 4 released (it will come again), 5 rejected.
          c.acknowledge(r, r.offset < 4 ? AcknowledgeType.ACCEPT : r.offset === 4 ? AcknowledgeType.RELEASE : AcknowledgeType.REJECT)
        }
      }
      expect(got).toBe(6)
      await c.commitSync()
      const f = await scrape()
      const acks = 'kafka_server_sharegroupmetrics_recordacknowledgements_total'
      expect([value(f, acks, { ackType: 'Accept' }), value(f, acks, { ackType: 'Release' }), value(f, acks, { ackType: 'Reject' })]).toEqual([4, 1, 1])
      const tp = { sharegroup: 'metered-group', topic: 'metered', partition: '0' }
      expect(value(f, 'kafka_sharegroup_start_offset', tp)).toBe(4)
      expect(value(f, 'kafka_sharegroup_lag', tp)).toBe(2)
      // Offsets 4 (released) and 5 (rejected) are in flight above the start offset; nothing was delivered twice yet.
      const sp = { group: 'metered-group', topic: 'metered', partition: '0' }
      expect(value(f, 'kafka_server_sharepartitionmetrics_inflightmessagecount', sp)).toBe(2)
      expect(value(f, 'kafka_server_sharegroupmetrics_recordredeliveries_total', {})).toBe(0)
      // The released record comes again (delivery count 2): one redelivery; accepted, nothing is in flight.
      const again: number[] = []
      const until = Date.now() + 15_000
      while (again.length === 0 && Date.now() < until) {
        for (const r of await c.poll(300)) {
          again.push(r.deliveryCount)
          c.acknowledge(r, AcknowledgeType.ACCEPT)
        }
      }
      expect(again).toEqual([2])
      await c.commitSync()
      const after = await scrape()
      expect(value(after, 'kafka_server_sharegroupmetrics_recordredeliveries_total', {})).toBe(1)
      expect(value(after, 'kafka_server_sharepartitionmetrics_inflightmessagecount', sp)).toBe(0)
      expect(value(after, 'kafka_server_sharepartitionmetrics_acquisitionlocktimeouts_total', {})).toBe(0)
    } finally {
      await c.close()
    }
  })
})
