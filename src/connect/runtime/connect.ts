// A Connect worker put together (Kafka's ConnectDistributed / ConnectStandalone): the plugins, the REST
// listener (bound first: its URL is the worker's id in the group and in status records), the stores,
// the worker and the herder. Standalone workers are then given the connectors of the property files
// named on the command line.
import { Admin } from '../../client/index.js'
import { httpClientTls, httpListenerTls } from '../../client/http-tls.js'
import type { Logger } from '../../observability/logger.js'
import { MetricsRegistry } from '../../observability/metrics.js'
import { ConnectWorkerMetrics } from './worker-metrics.js'
import { KafkaConfigStore, MemoryConfigStore } from './config-store.js'
import { DistributedHerder, type Herder, StandaloneHerder } from './herder.js'
import { Loggers } from './loggers.js'
import { FileOffsetStore, KafkaOffsetStore } from './offset-store.js'
import { Plugins } from './plugins.js'
import { ConnectRest } from './rest.js'
import { connectRestAuth } from './rest-auth.js'
import { KafkaStatusStore, MemoryStatusStore } from './status-store.js'
import { Worker } from './worker.js'
import { parseWorkerConfig, restListeners, restTlsProps, type WorkerMode } from './worker-config.js'

export interface ConnectOptions {
  mode: WorkerMode
  /** The worker's properties (Kafka's names). */
  props: Record<string, string>
  /** Standalone: connector configs to create at start. */
  connectors?: Record<string, string>[]
  log: Logger
  /** The registry the worker's tasks write to and GET /metrics serves (a new one when not given). */
  metrics?: MetricsRegistry
}

export interface ConnectHandle {
  herder: Herder
  rest: ConnectRest
  url: string
  plugins: Plugins
  metrics: MetricsRegistry
  stop(): Promise<void>
}

export async function startConnect(o: ConnectOptions): Promise<ConnectHandle> {
  const config = parseWorkerConfig(o.mode, o.props)
  const v = config.values
  const log = o.log
  const metrics = o.metrics ?? new MetricsRegistry()
  const loggers = new Loggers(log)
  const plugins = new Plugins()
  const pluginPath = v['plugin.path'] as string[] | null
  if (pluginPath !== null && pluginPath.length > 0) {
    await plugins.loadPath(pluginPath)
    for (const e of plugins.loadErrors) log.warn({ path: e.path, err: e.error }, 'could not load plugin')
  }
  const client = { bootstrapServers: v['bootstrap.servers'] as string[], clientId: (v['client.id'] as string) || undefined }
  let clusterId: string | null = null
  let herder: Herder | null = null
  const allowedOrigins = String(config.values['access.control.allow.origin'] ?? '').split(',').map((o) => o.trim()).filter((o) => o !== '')
  const listeners = restListeners(config)
  // Read before anything listens, so a bad key store stops start-up naming its setting.
  const tlsSettings = restTlsProps(config)
  const tls = httpListenerTls(tlsSettings.props, listeners, tlsSettings.prefix)
  // Only a worker serving https calls others over https (its cluster's URLs are https): the worker's
  // ssl.* may otherwise be meant for its Kafka clients alone.
  const peerTls = tls === undefined ? undefined : httpClientTls(tlsSettings.props, tlsSettings.prefix)
  const auth = connectRestAuth(v['rest.extension.classes'] as string[], v['java.security.auth.login.config'] as string | null)
  const rest = await ConnectRest.start({ listeners, tls, peerTls, allowedOrigins, herder: () => herder, loggers, log: loggers.get('skein.connect.rest'), clusterId: () => clusterId, metrics, auth })
  const workerMetrics = new ConnectWorkerMetrics(metrics)
  try {
    const bound = rest.listeners[0]!
    // Kafka's default: the scheme of the first listener.
    const advertised = (v['rest.advertised.listener'] as string | null) ?? (bound.url.startsWith('https:') ? 'https' : 'http')
    const host = (v['rest.advertised.host.name'] as string | null) ?? bound.host
    const port = (v['rest.advertised.port'] as number | null) ?? bound.port
    const url = `${advertised}://${host}:${port}`
    const workerId = `${host}:${port}`
    const onError = (what: string) => (err: unknown) => log.warn({ err: (err as Error).message }, `${what} reader error`)
    const distributed = o.mode === 'distributed'
    const eos = distributed && String(v['exactly.once.source.support']).toLowerCase() === 'enabled'
    const configStore = distributed ? new KafkaConfigStore(client, v['config.storage.topic'] as string, v['config.storage.replication.factor'] as number, onError('config topic')) : new MemoryConfigStore()
    const statusStore = distributed ? new KafkaStatusStore(client, v['status.storage.topic'] as string, v['status.storage.partitions'] as number, v['status.storage.replication.factor'] as number, onError('status topic')) : new MemoryStatusStore()
    const offsetStore = distributed
      ? new KafkaOffsetStore(client, v['offset.storage.topic'] as string, v['offset.storage.partitions'] as number, v['offset.storage.replication.factor'] as number, eos, onError('offsets topic'))
      : new FileOffsetStore(v['offset.storage.file.filename'] as string)
    const generation = { current: () => herder?.generation ?? -1 }
    const worker = new Worker({
      config,
      workerId,
      plugins,
      offsets: offsetStore,
      status: statusStore,
      log: loggers.get('skein.connect.worker'),
      generation: () => generation.current(),
      onTaskReconfiguration: (name) => herder?.requestTaskReconfiguration(name),
      exactlyOnceGroupId: eos ? (v['group.id'] as string) : null,
      metrics,
      workerMetrics,
    })
    const opts = { config, worker, configStore, statusStore, offsetStore, plugins, log: loggers.get('skein.connect.herder'), workerId, url, peerTls, ...(auth === null ? {} : { signer: auth.signer }) }
    const h: Herder = distributed ? new DistributedHerder(opts) : new StandaloneHerder(opts)
    h.onRebalanceCompleted = () => workerMetrics.rebalanceCompleted()
    workerMetrics.attach({
      connectorCount: () => worker.connectorNames().length,
      taskCount: () => worker.taskIds().length,
      taskStates: () => new Map(h.connectorNames().flatMap((name) => {
        try {
          return [[name, h.connectorStatus(name).tasks.map((t) => t.state)] as [string, string[]]]
        } catch {
          return []
        }
      })),
      generation: () => h.generation,
      rebalancing: () => h.rebalancing,
    })
    h.onLoggerLevel = (ns, level) => {
      try {
        loggers.setLevel(ns, level)
      } catch {
        // an unknown level from another writer: ignored
      }
    }
    const admin = new Admin(client)
    try {
      clusterId = (await admin.describeCluster()).clusterId
    } finally {
      await admin.close()
    }
    await h.start()
    herder = h
    for (const c of o.connectors ?? []) {
      const name = c['name']
      if (name === undefined) throw new Error('a connector properties file has no name')
      await h.putConnectorConfig(name, c, true)
    }
    log.info({ url, mode: o.mode }, 'Kafka Connect worker started')
    return {
      herder: h,
      rest,
      url,
      plugins,
      metrics,
      async stop() {
        await rest.close().catch(() => {})
        await h.stop()
        workerMetrics.close()
      },
    }
  } catch (err) {
    workerMetrics.close()
    await rest.close().catch(() => {})
    throw err
  }
}
