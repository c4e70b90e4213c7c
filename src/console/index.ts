// Skein's web front beside the REST Proxy (a client-side product): the web console, WebSocket streaming
// of topics, and standalone the process's /metrics, /health, /ready. main.ts (inside a broker, which
// serves its own /metrics, /health and /ready) and `skein rest` (standalone) serve it on the REST Proxy's
// HTTP server through RestProxyOptions.extend.
import { httpClientTls } from '../client/http-tls.js'
import type { RestSettings } from '../config/client-rest.js'
import type { Admin } from '../client/admin.js'
import type { ClientSecurity } from '../client/sasl.js'
import type { Producer } from '../client/producer.js'
import type { HttpServer } from '../http/index.js'
import type { Logger } from '../observability/logger.js'
import type { MetricsRegistry } from '../observability/metrics.js'
import { mountWebApp, type WebApp } from './app.js'

export { consoleAssetsDir, mountWebApp } from './app.js'
export type { WebApp, WebAppOptions } from './app.js'
export { RecordDecoder } from './decode.js'
export { encodeBinaryRecords, parseProduceMessage, parseStreamRequest, TopicStreams } from './streams.js'

export interface WebFrontOptions {
  settings: RestSettings
  bootstrapServers: string[]
  log: Logger
  /** The broker's registry, when the front runs inside a broker. */
  brokerMetrics?: MetricsRegistry
  stopping?: () => boolean
  /** Serve /metrics, /health and /ready (default true); false inside a broker, which mounts its own. */
  health?: boolean
  /** Receives the mounted app (tests and the broker read its streams). */
  onMounted?: (app: WebApp) => void
}

/** The REST Proxy extension that serves the web front with the proxy's settings (console.enable, websocket.*). */
export function webFront(opts: WebFrontOptions): (server: HttpServer, clients: { admin: Admin; producer: Producer; security: ClientSecurity | undefined }) => WebApp {
  const s = opts.settings
  return (server, clients) => {
    const app = mountWebApp(server, {
      // Getters, not copies: the REST Proxy's clients answer with the caller's own when requests act as their caller.
      get admin() {
        return clients.admin
      },
      get producer() {
        return clients.producer
      },
      security: clients.security,
      bootstrapServers: opts.bootstrapServers,
      log: opts.log,
      schemaRegistryUrls: s.schemaRegistryUrl,
      schemaRegistryTls: httpClientTls(s.schemaRegistryTls, 'schema.registry.'),
      metrics: opts.brokerMetrics,
      brokerMetrics: opts.brokerMetrics !== undefined,
      console: s.consoleEnable,
      websocket: s.websocketEnable,
      stopping: opts.stopping,
      health: opts.health,
      streams: {
        pauseBytes: s.websocketPauseBytes,
        maxBufferedBytes: s.websocketMaxBufferedBytes,
        slowClientTimeoutMs: s.websocketSlowClientTimeoutMs,
        maxInFlightProduce: s.websocketMaxInflightProduce,
        maxMessageBytes: s.requestBodyMaxBytes,
      },
    })
    opts.onMounted?.(app)
    return app
  }
}
