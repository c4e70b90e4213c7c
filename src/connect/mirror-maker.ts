// Dedicated MirrorMaker 2 (Kafka's connect-mirror-maker.sh / MirrorMaker): `skein mirror-maker
// mm2.properties` reads connect-mirror-maker's config (clusters, <alias>.bootstrap.servers and other
// <alias>.* client settings, <source>-><target>.enabled, <source>-><target>.* overrides, and any
// connector or worker setting at the top level) and runs one distributed Connect herder per replication
// flow, in this process, on the target cluster: group.id <source>-mm2, internal topics
// mm2-configs|offsets|status.<source>.internal. The elected leader of each flow's group writes the
// three connectors' configs (MirrorSourceConnector, MirrorCheckpointConnector, MirrorHeartbeatConnector);
// several mirror-maker processes with the same file share the work and take over each other's tasks.
//
// As in Kafka, a flow that is not enabled still gets a herder running only the heartbeat connector
// (unless emit.heartbeats.enabled=false), so that A->B's heartbeats come back to A through B->A.
// Each herder's REST listener is internal (127.0.0.1, an ephemeral port): it names the worker in its
// group; the Connect REST API is not meant to be used in dedicated mode.
//
// dedicated.mode.enable.internal.rest=true (KIP-710's name; default false) gives the process one REST
// server of its own on `listeners` (default http://:8083, an empty host binding 127.0.0.1 as a Connect
// worker's does): GET / (version and flows), GET /health (200 once every flow's herder is ready) and
// GET /metrics (every flow's metrics, Prometheus text), at a port the user chooses. A top-level
// rest.extension.classes with Connect's BASIC authentication extension (runtime/rest-auth.ts) guards it
// as it guards every flow's worker REST.
//
// The `skein mirror-maker` command that reads the file and runs this is cli/mirror-maker.ts.
import { httpListenerTls } from '../client/http-tls.js'
import { createHttpServer, type HttpServer, type HttpTls } from '../http/index.js'
import type { Logger } from '../observability/logger.js'
import { MetricsRegistry } from '../observability/metrics.js'
import { PROMETHEUS_CONTENT_TYPE, renderPrometheusText } from '../observability/prometheus.js'
import { ConfigException } from './api/config-def.js'
import { startConnect, type ConnectHandle } from './runtime/connect.js'
import { NotLeaderError } from './runtime/herder.js'
import { connectRestAuth, type ConnectRestAuth } from './runtime/rest-auth.js'
import { CONNECT_VERSION } from './runtime/rest.js'
import { restTlsProps } from './runtime/worker-config.js'

const BYTE_ARRAY = 'org.apache.kafka.connect.converters.ByteArrayConverter'
/** KIP-710's switch for the dedicated process's REST server. */
export const ENABLE_INTERNAL_REST = 'dedicated.mode.enable.internal.rest'
export const MIRROR_CONNECTORS = ['MirrorSourceConnector', 'MirrorCheckpointConnector', 'MirrorHeartbeatConnector'] as const

export interface Flow {
  source: string
  target: string
  /** <source>-><target>.enabled: replication and checkpoints; heartbeats alone otherwise. */
  enabled: boolean
}

/** connect-mirror-maker's configuration (Kafka's MirrorMakerConfig). */
export class MirrorMakerConfig {
  readonly clusters: string[]

  constructor(readonly props: Readonly<Record<string, string>>) {
    this.clusters = (props['clusters'] ?? '').split(',').map((c) => c.trim()).filter((c) => c !== '')
    if (this.clusters.length === 0) throw new ConfigException('clusters', 'clusters is required: the aliases of the clusters, e.g. clusters = A, B')
    for (const c of this.clusters) {
      if (c.includes('->') || /\s/.test(c)) throw new ConfigException('clusters', `cluster alias '${c}' may not contain '->' or spaces`)
      if ((props[`${c}.bootstrap.servers`] ?? '').trim() === '') throw new ConfigException(`${c}.bootstrap.servers`, `${c}.bootstrap.servers is required`)
    }
  }

  /** Flows with a herder: enabled ones, and the others while heartbeats are emitted (see the file comment). */
  flows(): Flow[] {
    const out: Flow[] = []
    const globalHeartbeats = (this.props['emit.heartbeats.enabled'] ?? 'true').trim().toLowerCase() !== 'false'
    for (const source of this.clusters) {
      for (const target of this.clusters) {
        if (source === target) continue
        const prefix = `${source}->${target}.`
        const enabled = (this.props[`${prefix}enabled`] ?? 'false').trim().toLowerCase() === 'true'
        const hb = this.props[`${prefix}emit.heartbeats.enabled`]
        const heartbeats = hb === undefined ? globalHeartbeats : hb.trim().toLowerCase() !== 'false'
        if (enabled || heartbeats) out.push({ source, target, enabled })
      }
    }
    return out
  }

  /** A cluster's own settings (`<alias>.*`, prefix removed): bootstrap.servers, consumer.*, producer.*, admin.*... */
  clusterProps(alias: string): Record<string, string> {
    const out: Record<string, string> = {}
    for (const [k, v] of Object.entries(this.props)) if (k.startsWith(`${alias}.`)) out[k.slice(alias.length + 1)] = v
    return out
  }

  /**
   * The listeners of the process's own REST server (dedicated.mode.enable.internal.rest=true, KIP-710),
   * or null when it is off (the default). An empty host binds 127.0.0.1, as a Connect worker's does.
   */
  internalRestListeners(): string[] | null {
    const enabled = (this.props[ENABLE_INTERNAL_REST] ?? 'false').trim().toLowerCase()
    if (enabled !== 'true' && enabled !== 'false') throw new ConfigException(ENABLE_INTERNAL_REST, `${ENABLE_INTERNAL_REST} must be true or false, not '${this.props[ENABLE_INTERNAL_REST]}'`)
    if (enabled === 'false') return null
    const listeners = (this.props['listeners'] ?? 'http://:8083').split(',').map((l) => l.trim()).filter((l) => l !== '')
    if (listeners.length === 0) throw new ConfigException(ENABLE_INTERNAL_REST, `${ENABLE_INTERNAL_REST}=true needs listeners, e.g. listeners = http://0.0.0.0:8083`)
    return listeners.map((l) => l.replace(/^(https?):\/\/:/, '$1://127.0.0.1:'))
  }

  /** Top-level settings: neither a cluster's nor a flow's (nor the process's own REST server's switch). */
  /** The top-level rest.extension.classes' REST authentication, or null (throws on an unknown class). */
  restAuth(): ConnectRestAuth | null {
    const classes = (this.props['rest.extension.classes'] ?? '').split(',').map((c) => c.trim()).filter((c) => c !== '')
    return connectRestAuth(classes, this.props['java.security.auth.login.config'] ?? null)
  }

  private topLevel(): Record<string, string> {
    const out: Record<string, string> = {}
    for (const [k, v] of Object.entries(this.props)) {
      if (k === 'clusters' || k === ENABLE_INTERNAL_REST || k.includes('->') || this.clusters.some((c) => k.startsWith(`${c}.`))) continue
      out[k] = v
    }
    return out
  }

  /** The Connect worker of a flow: on the target cluster, with the flow's group and internal topics. */
  workerProps(f: Flow): Record<string, string> {
    const props: Record<string, string> = { ...this.topLevel(), ...this.clusterProps(f.target) }
    props['group.id'] ??= `${f.source}-mm2`
    props['config.storage.topic'] ??= `mm2-configs.${f.source}.internal`
    props['offset.storage.topic'] ??= `mm2-offsets.${f.source}.internal`
    props['status.storage.topic'] ??= `mm2-status.${f.source}.internal`
    props['key.converter'] ??= BYTE_ARRAY
    props['value.converter'] ??= BYTE_ARRAY
    props['header.converter'] ??= BYTE_ARRAY
    // Internal: each herder of the process gets its own port (the worker's id in its group).
    props['listeners'] = 'http://127.0.0.1:0'
    delete props['rest.advertised.host.name']
    delete props['rest.advertised.port']
    return props
  }

  /** A connector of a flow: top level, then the flow's overrides, both clusters' settings, names. */
  connectorProps(f: Flow, connector: (typeof MIRROR_CONNECTORS)[number]): Record<string, string> {
    const props: Record<string, string> = { ...this.topLevel() }
    for (const k of ['listeners', 'group.id', 'bootstrap.servers', 'config.storage.topic', 'offset.storage.topic', 'status.storage.topic']) delete props[k]
    for (const [k, v] of Object.entries(this.clusterProps(f.source))) props[`source.cluster.${k}`] = v
    for (const [k, v] of Object.entries(this.clusterProps(f.target))) props[`target.cluster.${k}`] = v
    const prefix = `${f.source}->${f.target}.`
    for (const [k, v] of Object.entries(this.props)) if (k.startsWith(prefix)) props[k.slice(prefix.length)] = v
    props['name'] = connector
    props['connector.class'] = `org.apache.kafka.connect.mirror.${connector}`
    props['source.cluster.alias'] = f.source
    props['target.cluster.alias'] = f.target
    props['enabled'] = String(f.enabled)
    props['key.converter'] ??= BYTE_ARRAY
    props['value.converter'] ??= BYTE_ARRAY
    props['header.converter'] ??= BYTE_ARRAY
    return props
  }
}

export interface MirrorMakerHandle {
  flows: { flow: Flow; connect: ConnectHandle }[]
  /** One registry for every flow's herder (each herder's REST listener serves it at /metrics, and the process's own REST server when on). */
  metrics: MetricsRegistry
  /** The process's own REST server's URLs (dedicated.mode.enable.internal.rest=true), else []. */
  restUrls: string[]
  stop(): Promise<void>
}

/** The process's own REST server: GET /, /health (every flow's herder ready) and /metrics. */
async function startMirrorRest(listeners: string[], tls: HttpTls | undefined, flows: { flow: Flow; connect: ConnectHandle }[], metrics: MetricsRegistry, log: Logger, auth: ConnectRestAuth | null): Promise<HttpServer> {
  const json = { 'Content-Type': 'application/json' }
  const server = await createHttpServer({
    tls,
    ...(auth === null ? {} : { authenticator: auth.authenticator }),
    errorBody: (status, message) => ({ headers: json, body: JSON.stringify({ error_code: status, message }) }),
    onHandlerError: (err) => log.error({ err: (err as Error).message }, 'MirrorMaker REST handler error'),
  })
  server.route('GET', '/', async (_req, res) => {
    res.send(200, json, JSON.stringify({ version: CONNECT_VERSION, commit: 'skein', flows: flows.map((f) => ({ source: f.flow.source, target: f.flow.target, enabled: f.flow.enabled, worker_url: f.connect.url })) }))
  })
  server.route('GET', '/health', async (_req, res) => {
    const ready = flows.every((f) => f.connect.herder.ready)
    res.send(ready ? 200 : 503, json, JSON.stringify(ready
      ? { status: 'healthy', message: 'Every replication flow\'s worker has completed startup.' }
      : { status: 'starting', message: 'A replication flow\'s worker is still starting up.' }))
  })
  server.route('GET', '/metrics', async (_req, res) => {
    const text = renderPrometheusText(await metrics.scrape())
    if (!res.aborted) res.send(200, { 'Content-Type': PROMETHEUS_CONTENT_TYPE }, text)
  })
  try {
    for (const l of listeners) await server.listen(l)
  } catch (err) {
    await server.close()
    throw err
  }
  return server
}

const sameProps = (a: Record<string, string>, b: Record<string, string>): boolean => {
  const ka = Object.keys(a)
  return ka.length === Object.keys(b).length && ka.every((k) => a[k] === b[k])
}

function restTlsOf(config: MirrorMakerConfig, listeners: readonly string[]): HttpTls | undefined {
  const { props, prefix } = restTlsProps({ originals: config.props })
  return httpListenerTls(props, listeners, prefix)
}

/** Starts a herder per flow (only flows whose target is in `only`, when given) and keeps the connector configs written. */
export async function startMirrorMaker(config: MirrorMakerConfig, log: Logger, only: readonly string[] | null = null): Promise<MirrorMakerHandle> {
  const flows = config.flows().filter((f) => only === null || only.includes(f.target))
  const restListeners = config.internalRestListeners()
  // An https listener's stores, as a Connect worker's (listeners.https.ssl.*, else ssl.*): read before any flow starts.
  const restTls = restListeners === null ? undefined : restTlsOf(config, restListeners)
  // Before any flow starts, so that an unknown extension class or a bad JAAS file stops the process at once.
  const restAuth = config.restAuth()
  const started: { flow: Flow; connect: ConnectHandle }[] = []
  const metrics = new MetricsRegistry()
  let rest: HttpServer | null = null
  try {
    for (const flow of flows) {
      const connect = await startConnect({ mode: 'distributed', props: config.workerProps(flow), log: log.child({ flow: `${flow.source}->${flow.target}` }), metrics })
      started.push({ flow, connect })
    }
    if (restListeners !== null) rest = await startMirrorRest(restListeners, restTls, started, metrics, log, restAuth)
  } catch (err) {
    for (const s of started) await s.connect.stop().catch(() => {})
    throw err
  }
  let running = true
  // The leader of each flow's group writes the connectors' configs (again when a new leader finds them different).
  const configure = async (): Promise<void> => {
    for (const { flow, connect } of started) {
      const h = connect.herder
      if (!running || !h.ready || !h.isLeader) continue
      for (const name of MIRROR_CONNECTORS) {
        const props = config.connectorProps(flow, name)
        let current: Record<string, string> | null = null
        try {
          current = h.connectorConfig(name)
        } catch {
          current = null
        }
        if (current !== null && sameProps(current, props)) continue
        try {
          await h.putConnectorConfig(name, props, true)
          log.info({ flow: `${flow.source}->${flow.target}`, connector: name }, 'configured connector')
        } catch (err) {
          if (!(err instanceof NotLeaderError)) log.warn({ connector: name, err: (err as Error).message }, 'could not configure connector')
        }
      }
    }
  }
  let timer: NodeJS.Timeout | null = null
  const loop = (): void => {
    timer = setTimeout(() => void configure().catch((err) => log.warn({ err: (err as Error).message }, 'configuring connectors failed')).finally(() => running && loop()), 1000)
  }
  await configure().catch(() => {})
  loop()
  return {
    flows: started,
    metrics,
    restUrls: rest === null ? [] : rest.listeners.map((l) => l.url),
    async stop() {
      running = false
      if (timer !== null) clearTimeout(timer)
      await rest?.close().catch(() => {})
      await Promise.all(started.map((s) => s.connect.stop().catch(() => {})))
    },
  }
}
