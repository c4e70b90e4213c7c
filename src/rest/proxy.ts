// The REST Proxy: Confluent's REST API (v2 and v3) over Skein's HTTP adapter, backed by Skein's Kafka
// client. It is a client of the cluster like any other: one admin client and one producer shared by all
// requests, a consumer per v2 consumer instance, all over the Kafka protocol, whether it runs standalone
// (`skein rest`) or inside a broker process (rest.listeners), where it connects to the broker's own listener.
import { Admin } from '../client/admin.js'
import { applyProducerProps } from '../client/client-config.js'
import { prefixedSecurity } from '../client/client-security-config.js'
import type { ClientSecurity } from '../client/sasl.js'
import { Producer, type ProducerOptions } from '../client/producer.js'
import type { RestSettings } from '../config/client-rest.js'
import { httpClientTls, httpListenerTls } from '../client/http-tls.js'
import { basicAuthenticatorFrom, type BoundListener, createHttpServer, type HttpServer } from '../http/index.js'
import { type Logger, silentLogger } from '../observability/logger.js'
import { CallerClientPool, currentCaller } from './caller-identity.js'
import { ConsumerInstances, mountConsumers } from './consumers.js'
import { type RestContext, restErrorBody } from './context.js'
import { SchemaSupport } from './formats.js'
import { mountProduce } from './produce.js'
import { mountV2 } from './v2.js'
import { mountV3 } from './v3.js'

/** Another front served by the proxy's HTTP server (the console, WebSocket streams, /metrics). */
export interface RestProxyExtension {
  /** Called after the server closed its connections. */
  stop(): Promise<void>
}

export interface RestProxyOptions {
  settings: RestSettings
  /** The Kafka cluster: host:port items. */
  bootstrapServers: string[]
  /**
   * The identity of the proxy's Kafka clients. Absent: from the settings' client.* (security.protocol,
   * sasl.*, ssl.*), PLAINTEXT when none is set. A broker passes its embedded proxy's resolved identity.
   */
  security?: ClientSecurity
  logger?: Logger
  /**
   * Mounts more routes on the proxy's server before it listens, sharing its admin client and producer
   * (main.ts and skein rest add the console this way: rest/ does not import the products beside it).
   */
  extend?: (server: HttpServer, clients: { admin: Admin; producer: Producer; security: ClientSecurity | undefined }) => RestProxyExtension
  /** How start-up errors name the settings: '' standalone, 'rest.' in a broker. */
  configPrefix?: string
}

export class RestProxy {
  private constructor(
    private readonly server: HttpServer,
    private readonly ctx: RestContext,
    private readonly consumers: ConsumerInstances,
    private readonly extension: RestProxyExtension | null,
    private readonly callers: CallerClientPool | null,
  ) {}

  /** The proxy's bound listeners (with the ports actually bound). */
  get listeners(): readonly BoundListener[] {
    return this.server.listeners
  }

  /** v2 consumer instances alive now. */
  get consumerInstances(): number {
    return this.consumers.size
  }

  /** Builds the proxy and listens on every listener of the settings. */
  static async start(opts: RestProxyOptions): Promise<RestProxy> {
    const { settings } = opts
    const log = opts.logger ?? silentLogger()
    const security = opts.security ?? prefixedSecurity('client.', settings.clientSecurityConfigs)
    // Read before anything starts, so a bad key store fails start-up with nothing to close.
    const tls = httpListenerTls(settings.httpTls, settings.listeners, opts.configPrefix ?? '')
    const registryTls = httpClientTls(settings.schemaRegistryTls, `${opts.configPrefix ?? ''}schema.registry.`)
    const clientOptions = { bootstrapServers: opts.bootstrapServers, security, clientId: `skein-rest${settings.id === '' ? '' : `-${settings.id}`}` }
    const admin = new Admin(clientOptions)
    // Topics are not created by producing to them through the proxy: an unknown topic is 40401 at once.
    const producerOptions: ProducerOptions = { ...clientOptions, allowAutoTopicCreation: false, maxBlockMs: 30_000 }
    applyProducerProps(producerOptions, settings.producerConfigs)
    const producer = new Producer(producerOptions)
    const callers = callerPool(opts, producerOptions, log)
    let clusterId: Promise<string> | null = null
    const ctx: RestContext = {
      settings,
      // The caller's own clients when the request acts as its caller (caller-identity.ts), else the proxy's.
      get admin() {
        return currentCaller()?.admin ?? admin
      },
      get producer() {
        return currentCaller()?.producer ?? producer
      },
      schemas: SchemaSupport.fromUrls(settings.schemaRegistryUrl, registryTls),
      log,
      fallbackBaseUrl: '',
      clusterId: () => {
        clusterId ??= admin.describeCluster().then((c) => c.clusterId ?? 'skein')
        clusterId.catch(() => (clusterId = null))
        return clusterId
      },
    }
    const server = await createHttpServer({
      maxBodyBytes: settings.requestBodyMaxBytes,
      allowedOrigins: settings.allowedOrigins,
      errorBody: restErrorBody,
      authenticator: basicAuthenticatorFrom(settings.httpAuth) ?? undefined,
      tls,
      onHandlerError: (err, req) => log.warn({ err: (err as Error).message, method: req.method, path: req.path }, 'REST handler failed'),
    })
    const consumers = new ConsumerInstances(ctx, opts.bootstrapServers, security)
    const routes = callers?.wrapServer(server) ?? server
    if (settings.apiV2Enable) {
      mountV2(routes, ctx)
      mountConsumers(routes, ctx, consumers)
    }
    if (settings.apiV3Enable) {
      mountV3(routes, ctx)
      mountProduce(routes, ctx)
    }
    // Getters: the caller's own clients when requests act as their caller (caller-identity.ts).
    const extension = opts.extend?.(routes, { get admin() { return ctx.admin }, get producer() { return ctx.producer }, security }) ?? null
    const proxy = new RestProxy(server, ctx, consumers, extension, callers)
    try {
      for (const l of settings.listeners) await server.listen(l)
    } catch (err) {
      await proxy.stop()
      throw err
    }
    ;(ctx as { fallbackBaseUrl: string }).fallbackBaseUrl = server.listeners[0]?.url ?? ''
    log.info({ listeners: server.listeners.map((l) => l.url) }, 'REST Proxy listening')
    return proxy
  }

  /** Stops listening, closes the consumer instances, flushes the producer and closes the clients. */
  async stop(): Promise<void> {
    await this.server.close()
    await this.extension?.stop()
    await this.consumers.close()
    await this.callers?.close()
    await this.ctx.producer.close().catch(() => {})
    await this.ctx.admin.close().catch(() => {})
  }
}

/** The per-user client pool when requests act as their caller (authentication.kafka.sasl.mechanism), else null. */
function callerPool(opts: RestProxyOptions, producerOptions: ProducerOptions, log: Logger): CallerClientPool | null {
  const { httpAuth, caller } = opts.settings
  if (caller.mechanism === null) return null
  if (httpAuth.method !== 'BASIC') throw new Error('authentication.kafka.sasl.mechanism needs authentication.method=BASIC: the caller must be authenticated to act as them')
  // SASL_SSL: the TLS half comes from the proxy's own client.ssl.* (the same trust store the proxy's clients
  // use), read as if client.security.protocol were SSL so that its SASL settings, if any, play no part.
  // Without client.ssl.* settings, the TLS of the proxy's own identity: inside a broker, by default the
  // inter-broker listener's trust and key stores (src/config/client-security-names.ts).
  const ownSsl = [...opts.settings.clientSecurityConfigs.keys()].some((k) => k.startsWith('ssl.'))
  const tls = caller.securityProtocol !== 'SASL_SSL'
    ? undefined
    : ownSsl || opts.security?.tls === undefined
      ? prefixedSecurity('client.', new Map([...opts.settings.clientSecurityConfigs, ['security.protocol', 'SSL']]))?.tls
      : opts.security.tls
  return new CallerClientPool({ ...caller, mechanism: caller.mechanism }, opts.bootstrapServers, producerOptions, log, tls)
}
