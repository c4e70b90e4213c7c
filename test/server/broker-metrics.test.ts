// The broker's metrics after real traffic (Skein's producer, consumer and admin client over sockets),
// read from its registry through the Prometheus text and parse-prometheus-text-format: the
// BrokerTopicMetrics per topic and in total, RequestMetrics per API, log metrics per partition,
// connections, purgatory sizes, consumer lag, the replication gauges at 0, and a deleted topic's
// metrics dropped.
import parsePrometheusTextFormat from 'parse-prometheus-text-format'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Admin, Consumer, Producer } from '../../src/client/index.js'
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

async function scrape(): Promise<Families> {
  return parsePrometheusTextFormat(renderPrometheusText(await tb.broker.metrics.registry.scrape()))
}

/** The value of a sample whose labels are exactly `labels`; undefined when absent. */
function value(f: Families, name: string, labels: Record<string, string> = {}): number | undefined {
  const family = f.find((x) => x.name === name)
  const m = family?.metrics.find((s) => JSON.stringify(s.labels ?? {}) === JSON.stringify(labels))
  return m === undefined ? undefined : Number(m.value)
}

describe('broker metrics', () => {
  it('counts records and bytes in and out per topic and in total, and times requests per API', async () => {
    await admin.createTopics([{ name: 'metrics-a', numPartitions: 2 }, { name: 'metrics-b', numPartitions: 1 }])
    const before = await scrape()
    const totalBefore = value(before, 'kafka_server_brokertopicmetrics_messagesin_total') ?? 0
    const producer = new Producer({ bootstrapServers: tb.bootstrap, lingerMs: 0 })
    const value100 = Buffer.alloc(100, 1)
    await producer.sendBatch(Array.from({ length: 30 }, (_, i) => ({ topic: 'metrics-a', partition: i % 2, value: value100 })))
    await producer.sendBatch(Array.from({ length: 5 }, () => ({ topic: 'metrics-b', partition: 0, value: value100 })))
    await producer.close()
    const consumer = new Consumer({ bootstrapServers: tb.bootstrap, groupId: 'metrics-group', enableAutoCommit: false, autoOffsetReset: 'earliest' })
    consumer.subscribe(['metrics-a'])
    let got = 0
    const deadline = Date.now() + 15000
    while (got < 30 && Date.now() < deadline) got += (await consumer.poll(300)).length
    expect(got).toBe(30)
    // Commit only partition 0's first 5 records: partition 0 lags by 10, partition 1 by 15.
    await consumer.commit([{ topic: 'metrics-a', partition: 0, offset: 5 }, { topic: 'metrics-a', partition: 1, offset: 0 }])
    const f = await scrape()
    await consumer.close()

    expect(value(f, 'kafka_server_brokertopicmetrics_messagesin_total', { topic: 'metrics-a' })).toBe(30)
    expect(value(f, 'kafka_server_brokertopicmetrics_messagesin_total', { topic: 'metrics-b' })).toBe(5)
    // The total counts every append (the coordinators' __consumer_offsets writes too, as in Kafka).
    expect(value(f, 'kafka_server_brokertopicmetrics_messagesin_total')! - totalBefore).toBeGreaterThanOrEqual(35)
    const bytesInA = value(f, 'kafka_server_brokertopicmetrics_bytesin_total', { topic: 'metrics-a' })!
    expect(bytesInA).toBeGreaterThan(30 * 100)
    // The consumer read every byte of metrics-a's batches at least once.
    expect(value(f, 'kafka_server_brokertopicmetrics_bytesout_total', { topic: 'metrics-a' })).toBeGreaterThanOrEqual(bytesInA)
    expect(value(f, 'kafka_server_brokertopicmetrics_totalproducerequests_total', { topic: 'metrics-a' })).toBeGreaterThanOrEqual(2)
    expect(value(f, 'kafka_server_brokertopicmetrics_totalfetchrequests_total', { topic: 'metrics-a' })).toBeGreaterThanOrEqual(2)
    expect(value(f, 'kafka_server_brokertopicmetrics_failedproducerequests_total', { topic: 'metrics-a' })).toBe(0)

    const requests = f.find((x) => x.name === 'kafka_network_requestmetrics_requests_total')!.metrics
    const produceRequests = requests.filter((m) => m.labels?.request === 'Produce')
    expect(produceRequests.length).toBeGreaterThan(0)
    expect(produceRequests.every((m) => /^\d+$/.test(m.labels!.version!))).toBe(true)
    expect(requests.some((m) => m.labels?.request === 'Fetch')).toBe(true)
    expect(requests.some((m) => m.labels?.request === 'Metadata')).toBe(true)
    const p99 = value(f, 'kafka_network_requestmetrics_totaltimems', { request: 'Produce', quantile: '0.99' })!
    expect(p99).toBeGreaterThan(0)
    expect(p99).toBeLessThan(10_000)
    expect(value(f, 'kafka_network_requestmetrics_totaltimems', { request: 'FetchConsumer', quantile: '0.50' })).toBeGreaterThan(0)
    expect(value(f, 'kafka_network_requestmetrics_totaltimems_count', { request: 'Produce' })).toBeGreaterThanOrEqual(2)
    expect(value(f, 'kafka_network_requestmetrics_throttletimems', { request: 'Produce', quantile: '0.99' })).toBe(0)
  })

  it('log size and offsets per partition, lag per group and partition, connections, purgatories, replication gauges', async () => {
    const f = await scrape()
    expect(value(f, 'kafka_log_log_logendoffset', { topic: 'metrics-a', partition: '0' })).toBe(15)
    expect(value(f, 'kafka_log_log_logendoffset', { topic: 'metrics-b', partition: '0' })).toBe(5)
    expect(value(f, 'kafka_log_log_logstartoffset', { topic: 'metrics-a', partition: '1' })).toBe(0)
    expect(value(f, 'kafka_log_log_size', { topic: 'metrics-a', partition: '0' })).toBeGreaterThan(15 * 100)
    expect(value(f, 'kafka_log_log_numlogsegments', { topic: 'metrics-a', partition: '0' })).toBe(1)
    expect(value(f, 'kafka_consumergroup_lag', { consumergroup: 'metrics-group', topic: 'metrics-a', partition: '0' })).toBe(10)
    expect(value(f, 'kafka_consumergroup_lag', { consumergroup: 'metrics-group', topic: 'metrics-a', partition: '1' })).toBe(15)
    expect(value(f, 'kafka_consumergroup_current_offset', { consumergroup: 'metrics-group', topic: 'metrics-a', partition: '0' })).toBe(5)
    expect(value(f, 'kafka_consumergroup_lag_sum', { consumergroup: 'metrics-group', topic: 'metrics-a' })).toBe(25)
    // The admin client's connection is open.
    expect(value(f, 'kafka_server_socket_server_metrics_connection_count', { listener: 'PLAINTEXT', networkProcessor: '0' })).toBeGreaterThanOrEqual(1)
    expect(value(f, 'kafka_server_delayedoperationpurgatory_purgatorysize', { delayedOperation: 'Produce' })).toBe(0)
    expect(value(f, 'kafka_server_delayedoperationpurgatory_purgatorysize', { delayedOperation: 'Fetch' })).toBeGreaterThanOrEqual(0)
    expect(value(f, 'kafka_server_replicamanager_underreplicatedpartitions')).toBe(0)
    expect(value(f, 'kafka_controller_kafkacontroller_offlinepartitionscount')).toBe(0)
    expect(value(f, 'kafka_controller_kafkacontroller_activecontrollercount')).toBe(1)
    expect(value(f, 'kafka_server_replicamanager_isrshrinks_total')).toBe(0)
    expect(value(f, 'kafka_server_replicamanager_isrexpands_total')).toBe(0)
    // Clients' traffic is not replication (the cluster tests count replication).
    expect(value(f, 'kafka_server_brokertopicmetrics_replicationbytesin_total')).toBe(0)
    expect(value(f, 'kafka_server_brokertopicmetrics_replicationbytesout_total')).toBe(0)
    expect(value(f, 'kafka_server_leaderreplication_byte_rate')).toBe(0)
    expect(value(f, 'kafka_server_followerreplication_byte_rate')).toBe(0)
    expect(value(f, 'kafka_server_replicamanager_partitioncount')).toBeGreaterThanOrEqual(3)
    // The one broker leads every partition it holds.
    expect(value(f, 'kafka_server_replicamanager_leadercount')).toBe(value(f, 'kafka_server_replicamanager_partitioncount'))
  })

  it('a parked fetch shows in the Fetch purgatory size', async () => {
    const consumer = new Consumer({ bootstrapServers: tb.bootstrap, fetchMaxWaitMs: 3000 })
    consumer.assign([{ topic: 'metrics-b', partition: 0 }])
    consumer.seek('metrics-b', 0, 'latest')
    const polling = consumer.poll(3000)
    let seen = 0
    const deadline = Date.now() + 2500
    while (seen === 0 && Date.now() < deadline) {
      seen = value(await scrape(), 'kafka_server_delayedoperationpurgatory_purgatorysize', { delayedOperation: 'Fetch' }) ?? 0
      await new Promise((r) => setTimeout(r, 50))
    }
    await polling
    await consumer.close()
    expect(seen).toBe(1)
  })

  it("a deleted topic's metrics are no longer scraped", async () => {
    await admin.deleteTopics(['metrics-b'])
    const f = await scrape()
    expect(value(f, 'kafka_server_brokertopicmetrics_messagesin_total', { topic: 'metrics-b' })).toBeUndefined()
    expect(value(f, 'kafka_log_log_size', { topic: 'metrics-b', partition: '0' })).toBeUndefined()
    expect(value(f, 'kafka_server_brokertopicmetrics_messagesin_total', { topic: 'metrics-a' })).toBe(30)
  })
})
