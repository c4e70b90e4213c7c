// The metrics registry and its Prometheus text, read back with parse-prometheus-text-format (a port of
// the Prometheus Python client's parser, whose output follows prom2json): counters, gauges, collected
// families, summaries with quantiles from the log-linear buckets, label escaping, and a window that
// forgets old values.
import parsePrometheusTextFormat from 'parse-prometheus-text-format'
import { describe, expect, it } from 'vitest'
import { bucketMidpoint, bucketOf, Histogram, HISTOGRAM_BUCKETS, MetricsRegistry } from '../../src/observability/metrics.js'
import { renderPrometheusText } from '../../src/observability/prometheus.js'

interface ParsedMetric {
  value?: string
  labels?: Record<string, string>
}
interface ParsedFamily {
  name: string
  help: string
  type: string
  metrics: ParsedMetric[]
}

async function scrape(r: MetricsRegistry): Promise<ParsedFamily[]> {
  return parsePrometheusTextFormat(renderPrometheusText(await r.scrape())) as ParsedFamily[]
}

describe('metrics registry', () => {
  it('renders counters, gauges and collected families that a Prometheus parser reads back', async () => {
    const r = new MetricsRegistry()
    const msgs = r.counter('kafka_server_brokertopicmetrics_messagesin_total', 'records appended', ['topic'])
    const all = msgs.labels('')
    const t = msgs.labels('orders')
    t.inc(3)
    all.inc(3)
    msgs.labels('we"ird\\top\nic').inc()
    r.gauge('kafka_server_replicamanager_underreplicatedpartitions', 'under-replicated').labels().set(2)
    r.collected('kafka_log_log_size', 'log bytes', 'gauge', ['topic', 'partition'], async (emit) => {
      emit(['orders', '0'], 1234)
      emit(['orders', '1'], 0)
    })
    const parsed = await scrape(r)
    const byName = new Map(parsed.map((f) => [f.name, f]))
    const m = byName.get('kafka_server_brokertopicmetrics_messagesin_total')!
    expect(m.type).toBe('COUNTER')
    expect(m.help).toBe('records appended')
    // The all-topics child has no topic label at all, as the JMX exporter writes the MBean without one.
    expect(m.metrics).toEqual([{ value: '3' }, { value: '3', labels: { topic: 'orders' } }, { value: '1', labels: { topic: 'we"ird\\top\nic' } }])
    expect(byName.get('kafka_server_replicamanager_underreplicatedpartitions')!.metrics).toEqual([{ value: '2' }])
    expect(byName.get('kafka_log_log_size')!.metrics).toEqual([
      { value: '1234', labels: { topic: 'orders', partition: '0' } },
      { value: '0', labels: { topic: 'orders', partition: '1' } },
    ])
  })

  it('keeps one family per name and refuses a second definition that differs', () => {
    const r = new MetricsRegistry()
    const a = r.counter('x_total', 'x', ['topic'])
    expect(r.counter('x_total', 'x', ['topic'])).toBe(a)
    expect(() => r.gauge('x_total', 'x', ['topic'])).toThrow(/already registered/)
    expect(() => r.counter('bad-name', 'x')).toThrow(/invalid metric name/)
    expect(() => a.labels('a', 'b')).toThrow(/takes 1 label/)
  })

  it('a handle is resolved once: the same child object for the same labels, and removal stops its scraping', async () => {
    const r = new MetricsRegistry()
    const f = r.counter('y_total', 'y', ['topic'])
    expect(f.labels('t')).toBe(f.labels('t'))
    f.labels('t').inc()
    f.remove('t')
    const parsed = await scrape(r)
    expect(parsed.find((p) => p.name === 'y_total')?.metrics ?? []).toEqual([])
  })

  it('summaries: Kafka percentiles as a gauge with quantile labels and a _count counter, as the JMX exporter writes them', async () => {
    const r = new MetricsRegistry()
    const s = r.summary('kafka_network_requestmetrics_totaltimems', 'total time', ['request'])
    const produce = s.labels('Produce')
    for (let i = 1; i <= 1000; i++) produce.record(i / 10) // 0.1 .. 100 ms
    s.labels('Fetch') // no values yet: zeros
    const parsed = await scrape(r)
    const f = parsed.find((p) => p.name === 'kafka_network_requestmetrics_totaltimems')!
    expect(f.type).toBe('GAUGE')
    const q = (request: string, quantile: string): number => Number(f.metrics.find((m) => m.labels?.request === request && m.labels?.quantile === quantile)!.value)
    expect(f.metrics.filter((m) => m.labels?.request === 'Produce').map((m) => m.labels!.quantile)).toEqual(['0.50', '0.75', '0.95', '0.98', '0.99', '0.999'])
    // Bucket midpoints are within 1/32 of the true value.
    expect(Math.abs(q('Produce', '0.50') - 50) / 50).toBeLessThan(0.04)
    expect(Math.abs(q('Produce', '0.99') - 99) / 99).toBeLessThan(0.04)
    expect(Math.abs(q('Produce', '0.999') - 99.9) / 99.9).toBeLessThan(0.04)
    expect(q('Fetch', '0.99')).toBe(0)
    const count = parsed.find((p) => p.name === 'kafka_network_requestmetrics_totaltimems_count')!
    expect(count.type).toBe('COUNTER')
    expect(count.metrics).toEqual([
      { value: '1000', labels: { request: 'Produce' } },
      { value: '0', labels: { request: 'Fetch' } },
    ])
  })

  it('log-linear buckets cover 0 to 2^31 µs in order, each midpoint inside its bucket', () => {
    let last = -1
    for (const v of [0, 1, 15, 16, 17, 31, 32, 1000, 123456, 2 ** 30, 2 ** 31 - 1, 2 ** 40]) {
      const b = bucketOf(v)
      expect(b).toBeGreaterThanOrEqual(last)
      expect(b).toBeLessThan(HISTOGRAM_BUCKETS)
      last = b
      if (v < 2 ** 31) expect(Math.abs(bucketMidpoint(b) - v) / Math.max(1, v)).toBeLessThanOrEqual(1 / 16)
    }
  })

  it('quantiles describe the last one to two windows: old values age out', () => {
    let now = 0
    const h = new Histogram(1000, () => now)
    for (let i = 0; i < 100; i++) h.record(500)
    expect(h.quantiles([0.5])[0]).toBeCloseTo(500, -1)
    now = 1500 // one window later: the old values are still in the previous window
    h.record(1)
    expect(h.quantiles([0.99])[0]).toBeCloseTo(500, -1)
    now = 2600 // the window with 500s has rotated out
    h.record(1)
    expect(h.quantiles([0.99])[0]).toBeCloseTo(1, 1)
    now = 10_000 // long silence: both windows empty
    expect(h.quantiles([0.5, 0.99])).toEqual([0, 0])
    expect(h.count).toBe(102)
  })

  it('recording allocates nothing: a million values on a resolved handle keep the heap flat', () => {
    const r = new MetricsRegistry()
    const c = r.counter('z_total', 'z', ['topic']).labels('t')
    const h = r.summary('z_ms', 'z', ['request']).labels('Produce')
    for (let i = 0; i < 10_000; i++) {
      c.inc()
      h.record(i % 50)
    }
    const before = process.memoryUsage().heapUsed
    for (let i = 0; i < 1_000_000; i++) {
      c.inc(100)
      h.record(i % 50)
    }
    const grown = process.memoryUsage().heapUsed - before
    // An allocation per call would be tens of MB; a GC in between may even shrink the heap.
    expect(grown).toBeLessThan(2 * 1024 * 1024)
  })
})
