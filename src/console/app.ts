// Skein's web front beside the REST Proxy, on the same HTTP server: the web console (/console/, its
// JSON API under /console/api), WebSocket streaming (/ws/topics/{topic}), and standalone (`skein rest`)
// the process's /metrics, /health and /ready (observability/health-endpoints.ts). Like the REST Proxy it
// is a client of the cluster (admin client, producer and consumers over the Kafka protocol); inside a
// broker, main.ts hands it the broker's metrics registry, so the console's throughput charts read the
// broker's own metrics, and mounts the broker's /metrics, /health and /ready itself (health: false).
import type { ConnectionOptions } from 'node:tls'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { Admin } from '../client/admin.js'
import type { ClientSecurity } from '../client/sasl.js'
import type { Producer } from '../client/producer.js'
import { type HttpServer, loadStaticAssets, mountHealthEndpoints } from '../http/index.js'
import type { Logger } from '../observability/logger.js'
import { HealthEndpoints } from '../observability/health-endpoints.js'
import { MetricsRegistry } from '../observability/metrics.js'
import { mountConsoleApi } from './api.js'
import { RecordDecoder } from './decode.js'
import { TopicStreams, type TopicStreamsOptions } from './streams.js'

export interface WebAppOptions {
  admin: Admin
  producer: Producer
  bootstrapServers: string[]
  /** The identity of the Kafka clients (TLS, SASL); absent: PLAINTEXT as User:ANONYMOUS. */
  security?: ClientSecurity
  log: Logger
  schemaRegistryUrls: readonly string[] | null
  /** TLS for https:// registry URLs (the REST Proxy's schema.registry.ssl.*). */
  schemaRegistryTls?: ConnectionOptions
  /** The broker's registry when embedded in a broker; standalone: a registry of this process. */
  metrics?: MetricsRegistry
  /** True when `metrics` holds the broker's metrics (the console's throughput charts read them). */
  brokerMetrics?: boolean
  console: boolean
  websocket: boolean
  /** /ready answers 503 once this says so (the process is stopping). */
  stopping?: () => boolean
  /** Serve /metrics, /health and /ready over `metrics` (default true); false when the process serves its own (a broker). */
  health?: boolean
  /** Bounds of the WebSocket streams (TopicStreamsOptions). */
  streams?: Pick<TopicStreamsOptions, 'pauseBytes' | 'maxBufferedBytes' | 'slowClientTimeoutMs' | 'maxInFlightProduce' | 'maxMessageBytes' | 'maxPollRecords'>
}

export interface WebApp {
  readonly streams: TopicStreams | null
  readonly metrics: MetricsRegistry
  /** Closes the WebSocket streams' consumers (after the HTTP server closed their sockets). */
  stop(): Promise<void>
}

/** The console's static files: src/console/assets, found from src/ (tests) or dist/src/ (the build). */
export function consoleAssetsDir(): string {
  const candidates = [new URL('./assets/', import.meta.url), new URL('../../../src/console/assets/', import.meta.url)]
  for (const c of candidates) {
    const path = fileURLToPath(c)
    if (existsSync(`${path}index.html`)) return path
  }
  throw new Error('the web console assets (src/console/assets) are missing')
}

export function mountWebApp(server: HttpServer, opts: WebAppOptions): WebApp {
  const metrics = opts.metrics ?? new MetricsRegistry()
  const decoder = new RecordDecoder(opts.schemaRegistryUrls, opts.schemaRegistryTls)
  if (opts.health !== false) {
    mountHealthEndpoints(server, new HealthEndpoints({
      metrics,
      clusterReachable: async () => (await opts.admin.describeCluster()).brokers.length > 0,
      stopping: opts.stopping,
    }))
  }
  let streams: TopicStreams | null = null
  if (opts.websocket) {
    // Getters: the caller's own clients when requests act as their caller (rest/caller-identity.ts).
    streams = new TopicStreams({
      ...opts.streams,
      bootstrapServers: opts.bootstrapServers,
      security: opts.security,
      get admin() {
        return opts.admin
      },
      get producer() {
        return opts.producer
      },
      decoder,
      log: opts.log,
      metrics,
    })
    streams.mount(server)
  }
  if (opts.console) {
    // A getter: the caller's own admin client when requests act as their caller (rest/caller-identity.ts).
    mountConsoleApi(server, { get admin() { return opts.admin }, bootstrapServers: opts.bootstrapServers, security: opts.security, decoder, log: opts.log, brokerMetrics: opts.brokerMetrics === true ? metrics : undefined, websocket: opts.websocket })
    server.static('/console', loadStaticAssets(consoleAssetsDir()))
  }
  return {
    streams,
    metrics,
    stop: async () => {
      await streams?.stop()
    },
  }
}
