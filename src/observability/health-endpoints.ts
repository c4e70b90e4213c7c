// A process's GET /metrics, /health and /ready, answered without any HTTP server of their own (an HTTP
// server mounts them: http/health-routes.ts). /metrics renders a metrics registry in Prometheus' text
// format: in a broker process the broker's own registry (Kafka's metrics under the JMX exporter's names,
// plus the HTTP side's), standalone (`skein rest`) that process's registry. /health answers 200 while the
// process serves HTTP (liveness); /ready answers 200 only when the cluster answers (DescribeCluster
// within readyTimeoutMs) and the process is not stopping, else 503 (readiness). A broker serves them on
// every HTTP listener it has (rest.listeners, schema.registry.listeners): main.ts.
import type { MetricsRegistry } from './metrics.js'
import { PROMETHEUS_CONTENT_TYPE, renderPrometheusText } from './prometheus.js'

export interface HealthOptions {
  metrics: MetricsRegistry
  /** Whether the cluster answers now (a DescribeCluster round trip); throws or resolves false when not. */
  clusterReachable(): Promise<boolean>
  /** True once the process is stopping: /ready answers 503 from then on. */
  stopping?: () => boolean
  /** Default 2000 ms. */
  readyTimeoutMs?: number
}

/** One HTTP answer, for whichever server mounts the endpoints to send. */
export interface HealthAnswer {
  status: number
  headers: Record<string, string>
  body: string
}

const JSON_TYPE = { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' }

/** The paths served, each answered by HealthEndpoints.answer. */
export const HEALTH_PATHS = ['/metrics', '/health', '/ready'] as const
export type HealthPath = (typeof HEALTH_PATHS)[number]

export class HealthEndpoints {
  private readonly timeout: number

  constructor(private readonly opts: HealthOptions) {
    this.timeout = opts.readyTimeoutMs ?? 2000
  }

  answer(path: HealthPath): Promise<HealthAnswer> {
    switch (path) {
      case '/metrics':
        return this.metrics()
      case '/health':
        return Promise.resolve({ status: 200, headers: JSON_TYPE, body: JSON.stringify({ status: 'UP' }) })
      case '/ready':
        return this.ready()
    }
  }

  private async metrics(): Promise<HealthAnswer> {
    const text = renderPrometheusText(await this.opts.metrics.scrape())
    return { status: 200, headers: { 'Content-Type': PROMETHEUS_CONTENT_TYPE, 'Cache-Control': 'no-store' }, body: text }
  }

  private async ready(): Promise<HealthAnswer> {
    if (this.opts.stopping?.() === true) return { status: 503, headers: JSON_TYPE, body: JSON.stringify({ status: 'DOWN', reason: 'stopping' }) }
    let timer: NodeJS.Timeout | undefined
    const reachable = await Promise.race([
      this.opts.clusterReachable().catch(() => false),
      new Promise<false>((resolve) => {
        timer = setTimeout(() => resolve(false), this.timeout)
      }),
    ])
    clearTimeout(timer)
    if (reachable) return { status: 200, headers: JSON_TYPE, body: JSON.stringify({ status: 'UP' }) }
    return { status: 503, headers: JSON_TYPE, body: JSON.stringify({ status: 'DOWN', reason: `the Kafka cluster did not answer within ${this.timeout} ms` }) }
  }
}
