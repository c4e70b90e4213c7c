// GET /metrics, /health and /ready. /metrics renders a metrics registry in Prometheus' text format: in a
// broker process the broker's own registry (Kafka's metrics under the JMX exporter's names, plus the
// HTTP side's), standalone the proxy process's registry (the HTTP side's). /health answers 200 while the
// process serves HTTP (liveness); /ready answers 200 only when the cluster answers (DescribeCluster
// within readyTimeoutMs) and the process is not stopping, else 503 (readiness).
import type { HttpServer } from '../http/index.js'
import type { MetricsRegistry } from '../observability/metrics.js'
import { PROMETHEUS_CONTENT_TYPE, renderPrometheusText } from '../observability/prometheus.js'

export interface HealthOptions {
  metrics: MetricsRegistry
  /** Whether the cluster answers now (a DescribeCluster round trip); throws or resolves false when not. */
  clusterReachable(): Promise<boolean>
  /** True once the process is stopping: /ready answers 503 from then on. */
  stopping?: () => boolean
  /** Default 2000 ms. */
  readyTimeoutMs?: number
}

const JSON_TYPE = { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' }

export function mountHealth(server: HttpServer, opts: HealthOptions): void {
  const timeout = opts.readyTimeoutMs ?? 2000
  server.route('GET', '/metrics', async (_req, res) => {
    const text = renderPrometheusText(await opts.metrics.scrape())
    res.send(200, { 'Content-Type': PROMETHEUS_CONTENT_TYPE, 'Cache-Control': 'no-store' }, text)
  })
  server.route('GET', '/health', (_req, res) => {
    res.send(200, JSON_TYPE, JSON.stringify({ status: 'UP' }))
  })
  server.route('GET', '/ready', async (_req, res) => {
    if (opts.stopping?.() === true) {
      res.send(503, JSON_TYPE, JSON.stringify({ status: 'DOWN', reason: 'stopping' }))
      return
    }
    let timer: NodeJS.Timeout | undefined
    const reachable = await Promise.race([
      opts.clusterReachable().catch(() => false),
      new Promise<false>((resolve) => {
        timer = setTimeout(() => resolve(false), timeout)
      }),
    ])
    clearTimeout(timer)
    if (reachable) res.send(200, JSON_TYPE, JSON.stringify({ status: 'UP' }))
    else res.send(503, JSON_TYPE, JSON.stringify({ status: 'DOWN', reason: `the Kafka cluster did not answer within ${timeout} ms` }))
  })
}
