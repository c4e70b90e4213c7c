// /metrics, /health and /ready on the REST Proxy's HTTP server, as a broker process serves them: the
// broker's own registry scraped over HTTP after real traffic and read with a real Prometheus text parser
// (parse-prometheus-text-format), the web front's own families beside Kafka's; liveness always,
// readiness only while the cluster answers and the process is not stopping.
import parsePrometheusTextFormat from 'parse-prometheus-text-format'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Admin, Producer } from '../../src/client/index.js'
import { startWebFront, type WebFrontSetup } from './helpers.js'

let web: WebFrontSetup
beforeAll(async () => {
  web = await startWebFront()
})
afterAll(async () => {
  await web?.stop()
})

type Families = ReturnType<typeof parsePrometheusTextFormat>

function value(f: Families, name: string, labels: Record<string, string> = {}): number | undefined {
  const m = f.find((x) => x.name === name)?.metrics.find((s) => JSON.stringify(s.labels ?? {}) === JSON.stringify(labels))
  return m === undefined ? undefined : Number(m.value)
}

describe('GET /metrics', () => {
  it("serves the broker's metrics in Prometheus' text format, parsed by a real Prometheus text parser", async () => {
    const admin = new Admin({ bootstrapServers: web.broker.bootstrap })
    await admin.createTopics([{ name: 'scraped', numPartitions: 2 }])
    const producer = new Producer({ bootstrapServers: web.broker.bootstrap, lingerMs: 0 })
    await producer.sendBatch(Array.from({ length: 20 }, (_, i) => ({ topic: 'scraped', partition: i % 2, value: Buffer.alloc(50, 7) })))
    await producer.close()

    const res = await fetch(`${web.base}/metrics`)
    await admin.close()
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/)
    const text = await res.text()
    const f = parsePrometheusTextFormat(text)
    // Every family has HELP and TYPE, as the exposition format asks.
    for (const family of f) {
      expect(family.help, family.name).not.toBe('')
      expect(['COUNTER', 'GAUGE', 'SUMMARY', 'HISTOGRAM', 'UNTYPED']).toContain(family.type)
    }
    expect(f.find((x) => x.name === 'kafka_server_brokertopicmetrics_messagesin_total')?.type).toBe('COUNTER')
    expect(value(f, 'kafka_server_brokertopicmetrics_messagesin_total', { topic: 'scraped' })).toBe(20)
    expect(value(f, 'kafka_server_brokertopicmetrics_bytesin_total', { topic: 'scraped' })).toBeGreaterThan(20 * 50)
    expect(value(f, 'kafka_log_log_logendoffset', { topic: 'scraped', partition: '1' })).toBe(10)
    expect(value(f, 'kafka_network_requestmetrics_totaltimems', { request: 'Produce', quantile: '0.99' })).toBeGreaterThan(0)
    // As the JMX exporter writes a Kafka histogram: percentiles as a gauge with a quantile label, and _count.
    expect(f.find((x) => x.name === 'kafka_network_requestmetrics_totaltimems')?.type).toBe('GAUGE')
    expect(value(f, 'kafka_network_requestmetrics_totaltimems_count', { request: 'Produce' })).toBeGreaterThanOrEqual(1)
    expect(value(f, 'kafka_controller_kafkacontroller_activecontrollercount')).toBe(1)
    expect(value(f, 'kafka_server_replicamanager_underreplicatedpartitions')).toBe(0)
    // The admin client's connection was open during the scrape.
    expect(value(f, 'kafka_server_socket_server_metrics_connection_count', { listener: 'PLAINTEXT', networkProcessor: '0' })).toBeGreaterThanOrEqual(1)
    // The web front writes its own families to the same registry.
    expect(value(f, 'skein_websocket_connections')).toBe(0)
  })
})

describe('GET /health and /ready', () => {
  it('/health answers 200 while the process serves; /ready 200 while the cluster answers', async () => {
    const health = await fetch(`${web.base}/health`)
    expect(health.status).toBe(200)
    expect(await health.json()).toEqual({ status: 'UP' })
    const ready = await fetch(`${web.base}/ready`)
    expect(ready.status).toBe(200)
    expect(await ready.json()).toEqual({ status: 'UP' })
  })

  it('/ready answers 503 once the process is stopping, /health still 200', async () => {
    web.setStopping(true)
    try {
      const ready = await fetch(`${web.base}/ready`)
      expect(ready.status).toBe(503)
      expect(await ready.json()).toMatchObject({ status: 'DOWN', reason: 'stopping' })
      expect((await fetch(`${web.base}/health`)).status).toBe(200)
    } finally {
      web.setStopping(false)
    }
  })

  it('/ready answers 503 when the cluster does not answer, and 200 again when it is back', async () => {
    await web.restartBroker(async () => {
      const ready = await fetch(`${web.base}/ready`)
      expect(ready.status).toBe(503)
      expect(((await ready.json()) as { status: string }).status).toBe('DOWN')
      expect((await fetch(`${web.base}/health`)).status).toBe(200)
    })
    const deadline = Date.now() + 15_000
    let status = 0
    while (status !== 200 && Date.now() < deadline) {
      status = (await fetch(`${web.base}/ready`)).status
      if (status !== 200) await new Promise((r) => setTimeout(r, 200))
    }
    expect(status).toBe(200)
  })
})
