#!/usr/bin/env node
// `npm start`: runs one broker until SIGINT/SIGTERM. Kafka's start script conventions: a config file
// (config/server.properties) and `--override key=value` items applied on top of it.
import { X509Certificate } from 'node:crypto'
import { realpathSync } from 'node:fs'
import type { ConnectionOptions as TlsConnectionOptions } from 'node:tls'
import { pathToFileURL } from 'node:url'
import { tuneMallocForBroker } from './addon/malloc-tuning.js'
import { ANONYMOUS, mapSubject, parsePrincipalMappingRules, rfc2253Subject, userPrincipal } from './auth/principal.js'
import { type BrokerConfig, loadBrokerConfig } from './config/broker-config.js'
import { CLIENT_PREFIX, EMBEDDED_REST_PREFIX, REST_CONFIGS, restSettings } from './config/client-rest.js'
import { KAFKASTORE_PREFIX, REGISTRY_CONFIGS, embeddedRegistryName, registrySettings } from './config/client-registry.js'
import type { ConfigValue } from './config/config-def.js'
import { Broker } from './broker/broker.js'
import { Admin } from './client/admin.js'
import { securityFromProps } from './client/client-security-config.js'
import { describeOpenConnections } from './client/connection.js'
import type { ClientSecurity } from './client/sasl.js'
import { brokerLoginOn, interBrokerListenerName } from './broker/inter-broker-security.js'
import { ErrorCode, KafkaError, errorName } from './domain/errors.js'
import { type HttpServer, ListenError, mountHealthEndpoints } from './http/index.js'
import { HealthEndpoints } from './observability/health-endpoints.js'
import { createLogger, type Logger } from './observability/logger.js'

const HELP = `Usage: skein broker [--config FILE] [--override key=value ...]

Runs a Skein broker (Kafka protocol) until SIGINT or SIGTERM.

Options:
  --config FILE           Java .properties file with Kafka's broker config names
                          (default when run by npm start: config/server.properties)
  --override key=value    Set one config on top of the file (repeatable)
  -h, --help              Show this help

Defaults without a config file: listeners=PLAINTEXT://127.0.0.1:9092, log.dirs=./data.
With schema.registry.listeners set (config/server.properties sets http://127.0.0.1:8081), the Schema
Registry runs in the same process, and with rest.listeners (http://127.0.0.1:8082) the REST Proxy: both
as clients of this broker, logged in as the broker on its inter-broker listener unless
schema.registry.kafkastore.* / rest.client.* (security.protocol, sasl.*, ssl.*) give them their own
identity (docs/security.md). The config reference is in docs/configuration.md.`

export interface BrokerArgs {
  configFile?: string
  overrides: string[]
  help: boolean
}

export function parseBrokerArgs(argv: readonly string[]): BrokerArgs {
  const out: BrokerArgs = { overrides: [], help: false }
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    const next = (): string => {
      const v = argv[++i]
      if (v === undefined) throw new Error(`${arg} needs a value`)
      return v
    }
    if (arg === '-h' || arg === '--help') out.help = true
    else if (arg === '--config') out.configFile = next()
    else if (arg.startsWith('--config=')) out.configFile = arg.slice('--config='.length)
    else if (arg === '--override') out.overrides.push(next())
    else if (arg.startsWith('--override=')) out.overrides.push(arg.slice('--override='.length))
    else if (!arg.startsWith('-') && out.configFile === undefined) out.configFile = arg // kafka-server-start.sh style
    else throw new Error(`unknown argument '${arg}' (see --help)`)
  }
  return out
}

/** What the embedded services need to be stopped before the broker. */
export interface EmbeddedServices {
  /** The REST Proxy's bound listener URLs (none when rest.listeners is empty). */
  readonly restUrls: string[]
  /** The Schema Registry's bound listener URLs (none when schema.registry.listeners is empty). */
  readonly registryUrls: string[]
  stop(): Promise<void>
}

/** An embedded product's listener failure named by the broker's key for it (the product says `listeners`). */
function renameListenError(configKey: string): (err: unknown) => never {
  return (err) => {
    throw err instanceof ListenError ? err.renamed(configKey) : err
  }
}

/** How an embedded product reaches this broker: the listener, the client identity and the principal it has there. */
export interface EmbeddedIdentity {
  /** host:port of the listener it connects to. */
  bootstrap: string
  listener: string
  security: ClientSecurity | undefined
  /** The principal the broker sees, for messages ("User:broker"). */
  principal: string
}

const AUTHORIZATION_FAILURES: ReadonlySet<number> = new Set([ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.GROUP_AUTHORIZATION_FAILED, ErrorCode.CLUSTER_AUTHORIZATION_FAILED])

/**
 * The identity of an embedded product (`product` names it in messages). With none of its security
 * settings (`props`, prefix removed; the keys are `prefix` + name) it is the broker's own: the
 * inter-broker listener and the broker's login there (broker/inter-broker-security.ts), so a broker whose
 * only listener is SASL serves its registry and REST Proxy as it replicates. With them it is a client
 * like any other, on the listener whose protocol is its security.protocol (the inter-broker listener
 * first when it has that protocol).
 */
export function embeddedIdentity(broker: Broker, config: BrokerConfig, product: string, prefix: string, props: ReadonlyMap<string, string>): EmbeddedIdentity {
  const protocolOf = (listener: string): string => config.securityProtocolMap.get(listener) ?? listener
  const interBroker = interBrokerListenerName(config)
  let listener: string
  let security: ClientSecurity | undefined
  if (props.size === 0) {
    listener = interBroker
    try {
      security = brokerLoginOn(config, listener)
    } catch (err) {
      throw new Error(`${product} logs in as the broker on its inter-broker listener ${listener} unless ${prefix}security.protocol (and ${prefix}sasl.*, ${prefix}ssl.*) give it an identity of its own: ${(err as Error).message}`)
    }
  } else {
    try {
      security = securityFromProps(props)
    } catch (err) {
      throw new Error(`${product}: ${prefix}${(err as Error).message}`)
    }
    const protocol = (props.get('security.protocol') ?? 'PLAINTEXT').trim().toUpperCase()
    const found = [interBroker, ...config.listeners.map((l) => l.name)].find((l) => protocolOf(l) === protocol)
    if (found === undefined) {
      throw new Error(`${product}: ${prefix}security.protocol=${protocol}, but the broker has no ${protocol} listener (listeners: ${config.listeners.map((l) => `${l.name}:${protocolOf(l.name)}`).join(', ')})`)
    }
    listener = found
  }
  const endpoint = broker.endpointFor(listener)
  const host = endpoint.host === '' || endpoint.host === '0.0.0.0' ? '127.0.0.1' : endpoint.host === '::' ? '::1' : endpoint.host
  const bootstrap = host.includes(':') ? `[${host}]:${endpoint.port}` : `${host}:${endpoint.port}`
  // SASL: the user name; TLS alone: what its certificate maps to on that listener; PLAINTEXT: anonymous.
  const principal = security?.sasl !== undefined ? userPrincipal(security.sasl.username) : security?.tls !== undefined ? tlsPrincipal(config, listener, security.tls) : ANONYMOUS
  return { bootstrap, listener, security, principal }
}

/**
 * The principal a TLS-only client gets on `listener`, as the listener derives it (server/listener-security.ts):
 * its certificate's subject through ssl.principal.mapping.rules when the listener asks for client
 * certificates, else User:ANONYMOUS. Only for messages: a store it cannot read here (PKCS12) is described.
 */
function tlsPrincipal(config: BrokerConfig, listener: string, tls: TlsConnectionOptions): string {
  const clientAuth = String(config.forListener(listener, 'ssl.client.auth') ?? 'none').trim().toLowerCase()
  if (clientAuth === 'none') return ANONYMOUS
  const certs = [tls.cert].flat().filter((c) => c !== undefined).map((c) => c.toString())
  const pem = certs.map((c) => /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/.exec(c)?.[0]).find((c) => c !== undefined)
  if (pem === undefined) return 'the principal of its TLS certificate'
  try {
    const rules = parsePrincipalMappingRules(String(config.forListener(listener, 'ssl.principal.mapping.rules') ?? 'DEFAULT'))
    return userPrincipal(mapSubject(rules, rfc2253Subject(new X509Certificate(pem).subject)))
  } catch {
    return 'the principal of its TLS certificate'
  }
}

/** A refusal by the authorizer during an embedded product's start, said with what the product needs. */
function namingTheAcl(product: string, identity: EmbeddedIdentity, needs: string): (err: unknown) => never {
  return (err) => {
    if (err instanceof KafkaError && AUTHORIZATION_FAILURES.has(err.code)) {
      throw new Error(`${product} (principal ${identity.principal}) needs ${needs}: ACL refused (${errorName(err.code)})`)
    }
    throw err
  }
}

/**
 * The Schema Registry and the REST Proxy inside the broker process, when schema.registry.listeners /
 * rest.listeners are set: client-side products, so they reach the broker like any client, over the Kafka
 * protocol, with the identity their settings give them (schema.registry.kafkastore.*, rest.client.*) or by
 * default the broker's own inter-broker listener and login (embeddedIdentity). They are started here, by the entry point, because
 * server/ imports no client-side product. Their settings are their own (config/client-registry.ts,
 * config/client-rest.ts) under the prefixes schema.registry. and rest.; the REST Proxy uses the embedded
 * registry unless rest.schema.registry.url says otherwise. The REST Proxy's HTTP server also serves the
 * web front (src/console: the console, WebSocket streams). The broker's own /metrics (its registry),
 * /health and /ready (observability/health-endpoints.ts) are served on every one of these HTTP servers,
 * so they exist whenever an HTTP listener is configured.
 */
export async function startEmbeddedServices(broker: Broker, config: BrokerConfig, log: Logger): Promise<EmbeddedServices> {
  const stops: (() => Promise<void>)[] = []
  const stopAll = async (): Promise<void> => {
    stopping = true
    for (const stop of stops.reverse()) await stop()
  }
  let registryUrls: string[] = []
  let restUrls: string[] = []
  let stopping = false
  try {
    const registryListeners = config.getList(embeddedRegistryName('listeners')) ?? []
    const restListeners = config.getList(`${EMBEDDED_REST_PREFIX}listeners`) ?? []
    const registryValues = new Map<string, ConfigValue>()
    for (const d of REGISTRY_CONFIGS) {
      const name = embeddedRegistryName(d.name)
      if (d.embeddable && config.isSet(name)) registryValues.set(d.name, config.get(name))
    }
    const restValues = new Map<string, ConfigValue>()
    for (const d of REST_CONFIGS) {
      const name = EMBEDDED_REST_PREFIX + d.name
      if (d.embeddable && config.isSet(name)) restValues.set(d.name, config.get(name))
    }
    const registryConfig = registrySettings(registryValues)
    const registryIdentity = registryListeners.length > 0
      ? embeddedIdentity(broker, config, 'the embedded Schema Registry', embeddedRegistryName(KAFKASTORE_PREFIX), registryConfig.kafkastoreSecurityConfigs)
      : null
    const restIdentity = restListeners.length > 0
      ? embeddedIdentity(broker, config, 'the embedded REST Proxy', EMBEDDED_REST_PREFIX + CLIENT_PREFIX, restSettings(restValues).clientSecurityConfigs)
      : null
    // The broker's /metrics, /health and /ready, on each HTTP server below. /ready asks the cluster over
    // the Kafka protocol, as any client would, with the first product's identity.
    let health: HealthEndpoints | null = null
    const healthIdentity = registryIdentity ?? restIdentity
    if (healthIdentity !== null) {
      const admin = new Admin({ bootstrapServers: healthIdentity.bootstrap, security: healthIdentity.security, clientId: 'skein-health' })
      stops.push(() => admin.close())
      health = new HealthEndpoints({
        metrics: broker.metrics.registry,
        clusterReachable: async () => (await admin.describeCluster()).brokers.length > 0,
        stopping: () => stopping,
      })
    }
    const mountHealth = (server: HttpServer): void => mountHealthEndpoints(server, health!)
    if (registryIdentity !== null) {
      const { SchemaRegistryServer, registryAclNeeds } = await import('./registry/server.js')
      const registry = await SchemaRegistryServer.start({
        settings: registryConfig,
        bootstrapServers: [registryIdentity.bootstrap],
        security: registryIdentity.security,
        logger: log,
        extend: mountHealth,
        configPrefix: 'schema.registry.',
      })
        .catch(renameListenError('schema.registry.listeners'))
        .catch(namingTheAcl('the embedded Schema Registry', registryIdentity, registryAclNeeds(registryConfig)))
      stops.push(() => registry.stop())
      registryUrls = registry.urls
      log.info({ listener: registryIdentity.listener, principal: registryIdentity.principal }, 'the embedded Schema Registry reaches the broker')
    }
    if (restIdentity !== null) {
      if (!restValues.has('schema.registry.url') && registryUrls.length > 0) restValues.set('schema.registry.url', [registryUrls[0]!])
      const bootstrap = restIdentity.bootstrap
      const [{ RestProxy }, { webFront }] = await Promise.all([import('./rest/index.js'), import('./console/index.js')])
      const settings = restSettings(restValues)
      // The web console and WebSocket streams share the proxy's HTTP server and Kafka identity, with the
      // broker's /metrics, /health and /ready; the console's charts read the broker's own registry, which
      // only this process can read.
      const front = webFront({ settings, bootstrapServers: [bootstrap], log, brokerMetrics: broker.metrics.registry, stopping: () => stopping, health: false })
      const extend: typeof front = (server, clients) => {
        mountHealth(server)
        return front(server, clients)
      }
      const proxy = await RestProxy.start({ settings, bootstrapServers: [bootstrap], security: restIdentity.security, logger: log, extend, configPrefix: EMBEDDED_REST_PREFIX }).catch(renameListenError('rest.listeners'))
      stops.push(() => proxy.stop())
      restUrls = proxy.listeners.map((l) => l.url)
      log.info({ listener: restIdentity.listener, principal: restIdentity.principal }, 'the embedded REST Proxy reaches the broker')
    }
  } catch (err) {
    await stopAll().catch(() => undefined)
    throw err
  }
  return { restUrls, registryUrls, stop: stopAll }
}

export async function runBroker(argv: readonly string[]): Promise<number> {
  let args: BrokerArgs
  try {
    args = parseBrokerArgs(argv)
  } catch (err) {
    process.stderr.write(`skein: ${(err as Error).message}\n`)
    return 1
  }
  if (args.help) {
    process.stdout.write(HELP + '\n')
    return 0
  }
  const log = createLogger()
  // A broker process receives every request into fresh socket-read buffers; keeping freed memory at the
  // heap top (up to 256 MiB) instead of trimming it saves re-faulting those pages on every read: 0.72x the
  // broker CPU per produced record in a side-by-side kcat run (src/addon/malloc-tuning.ts). Only the
  // server entry does this: a library user's process keeps its own malloc settings.
  tuneMallocForBroker()
  // A signal while the broker or its services start is kept, and acted on as soon as what is starting can
  // be stopped cleanly (without a handler node would end the process at once, with no clean shutdown).
  let earlySignal: string | null = null
  const onEarlySignal = (signal: string): void => {
    if (earlySignal !== null) {
      log.warn({ signal }, 'second signal: exiting at once')
      process.exit(1)
    }
    earlySignal = signal
    log.info({ signal }, 'stopping once started')
  }
  // One listener per signal for the process's life, switched from the early handling to stop() below:
  // removing a signal's last listener and adding another lets a signal that arrives then go unhandled
  // (seen under load: a SIGTERM right after start neither stopped the broker nor ended the process).
  let onSignal = onEarlySignal
  process.on('SIGINT', () => onSignal('SIGINT'))
  process.on('SIGTERM', () => onSignal('SIGTERM'))
  let broker: Broker
  let config: BrokerConfig
  try {
    config = loadBrokerConfig({ file: args.configFile, overrides: args.overrides })
    broker = await Broker.start(config, { logger: log })
  } catch (err) {
    process.stderr.write(`skein: cannot start the broker: ${(err as Error).message}\n`)
    return 1
  }
  if (earlySignal !== null) {
    log.info({ signal: earlySignal }, 'stopping')
    await broker.stop()
    exitIfHeldOpen(log)
    return 0
  }
  let services: EmbeddedServices
  try {
    services = await startEmbeddedServices(broker, config, log)
  } catch (err) {
    process.stderr.write(`skein: cannot start the embedded services: ${(err as Error).message}\n`)
    await broker.stop().catch(() => {})
    return 1
  }
  return new Promise<number>((resolve) => {
    let signalled = false
    const stop = (signal: string): void => {
      if (signalled) {
        log.warn({ signal }, 'second signal: exiting at once')
        process.exit(1)
      }
      signalled = true
      log.info({ signal }, 'stopping')
      services
        .stop()
        .catch((err: unknown) => log.warn({ err: (err as Error).message }, 'embedded services stop failed'))
        .then(() => broker.stop())
        .then(
          () => {
            exitIfHeldOpen(log)
            resolve(0)
          },
          (err: unknown) => {
            log.error({ err: (err as Error).message }, 'unclean shutdown')
            resolve(1)
          },
        )
    }
    onSignal = stop
    if (earlySignal !== null) stop(earlySignal)
    // Every log dir failed: the broker stops itself (Kafka halts); the process exits 1 once it has.
    broker.onFatal(() => {
      if (signalled) return
      signalled = true
      services.stop().catch(() => {}).then(() => broker.stop()).then(() => resolve(1), () => resolve(1))
    })
  })
}

/** How long a stopped broker's process may take to end by itself before it is ended. */
const EXIT_GRACE_MS = 2000

/**
 * After a clean stop the event loop should drain on its own. If something still holds it open (a socket or
 * timer that was not closed — a bug), the process must not hang past its shutdown (service managers and
 * `skein cluster` wait on it): name what is open, then exit. The timer is unref'd so a clean stop is
 * not delayed by it.
 */
function exitIfHeldOpen(log: Logger): void {
  setTimeout(() => {
    const getHandles = (process as unknown as { _getActiveHandles?: () => unknown[] })._getActiveHandles
    const held = (getHandles?.call(process) ?? []).map(describeHandle).filter((d) => d !== undefined)
    log.warn({ held, connections: describeOpenConnections() }, 'the broker stopped but its process was still held open; exiting')
    process.exit(process.exitCode ?? 0)
  }, EXIT_GRACE_MS).unref()
}

function describeHandle(h: unknown): string | undefined {
  const name = (h as { constructor?: { name?: string } }).constructor?.name ?? 'unknown'
  if (name === 'WriteStream' || name === 'ReadStream') return undefined // stdio
  const s = h as { remoteAddress?: string; remotePort?: number; localPort?: number }
  if (s.remotePort !== undefined) return `${name} ${s.localPort} -> ${s.remoteAddress}:${s.remotePort}`
  return name
}

const isMain = process.argv[1] !== undefined && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href
if (isMain) {
  runBroker(process.argv.slice(2)).then((code) => {
    process.exitCode = code
  })
}
