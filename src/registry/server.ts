// One Schema Registry instance served over HTTP, as `skein schema-registry` runs it and as a broker
// embeds it: the HTTP listeners open first (so the identity other instances forward writes to carries
// the bound port, which matters for port 0), then the instance replays `_schemas` and joins the primary
// election. Requests that arrive during the replay wait for it, as Confluent's instances do not answer
// before their store is initialized.
import { prefixedSecurity } from '../client/client-security-config.js'
import { httpClientTls, httpListenerTls } from '../client/http-tls.js'
import type { ClientSecurity } from '../client/sasl.js'
import type { RegistrySettings } from '../config/client-registry.js'
import { basicAuthenticatorFrom, type HttpServer } from '../http/index.js'
import { type Logger, silentLogger } from '../observability/logger.js'
import { startRegistryHttp } from './http.js'
import { RegistryNode } from './node.js'
import type { CompatibilityLevel } from './schema-type/types.js'

export interface SchemaRegistryServerOptions {
  settings: RegistrySettings
  /** The Kafka cluster holding the registry's topic. */
  bootstrapServers: readonly string[]
  /**
   * The identity of the registry's Kafka clients. Absent: from the settings' kafkastore.* (security.protocol,
   * sasl.*, ssl.*), PLAINTEXT when none is set. A broker passes its embedded registry's resolved identity.
   */
  security?: ClientSecurity
  logger?: Logger
  /** Client id of the registry's Kafka clients. */
  clientId?: string
  /** Mounts more routes on the registry's HTTP server (inside a broker: the broker's /metrics, /health, /ready). */
  extend?: (server: HttpServer) => void
  /** How start-up errors name the settings: '' standalone, 'schema.registry.' in a broker. */
  configPrefix?: string
}

/**
 * The Kafka ACLs the registry's principal needs, in words, for start-up errors: it replays and writes its
 * topic (Describe, Read, Write), creates it when missing (Create on the topic or the cluster), and elects
 * its primary through a group (FindCoordinator, JoinGroup, SyncGroup, Heartbeat: Read on the group).
 */
export function registryAclNeeds(settings: Pick<RegistrySettings, 'topic' | 'groupId'>): string {
  return `Describe, Read and Write on topic ${settings.topic} (and Create on it or on the cluster while it does not exist) and Read on group ${settings.groupId}`
}

export class SchemaRegistryServer {
  private constructor(
    readonly node: RegistryNode,
    private readonly http: HttpServer,
  ) {}

  /** The bound listener URLs. */
  get urls(): string[] {
    return this.http.listeners.map((l) => l.url)
  }

  static async start(opts: SchemaRegistryServerOptions): Promise<SchemaRegistryServer> {
    const { settings } = opts
    // Read before the listeners open, so a bad kafkastore.* setting fails start-up with nothing to close.
    const security = opts.security ?? prefixedSecurity('kafkastore.', settings.kafkastoreSecurityConfigs)
    const tls = httpListenerTls(settings.httpTls, settings.listeners, opts.configPrefix ?? '')
    const log = opts.logger ?? silentLogger()
    if (settings.listeners.length === 0) throw new Error('the Schema Registry needs at least one listener')
    // Resolves with the instance once it has replayed the topic; requests wait for it.
    let started!: (node: RegistryNode) => void
    const instance = new Promise<RegistryNode>((resolve) => (started = resolve))
    const http = await startRegistryHttp(
      async (req) => (await instance).handle(req),
      {
        listeners: settings.listeners,
        maxBodyBytes: settings.requestBodyMaxBytes,
        allowedOrigins: settings.allowedOrigins,
        extend: opts.extend,
        authenticator: basicAuthenticatorFrom(settings.httpAuth),
        writeRoles: settings.writeRoles,
        tls,
      },
    )
    const first = http.listeners[0]!
    const host = settings.hostName !== '' ? settings.hostName : first.host === '' || first.host === '0.0.0.0' ? '127.0.0.1' : first.host === '::' ? '::1' : first.host
    const node = new RegistryNode({
      bootstrapServers: [...opts.bootstrapServers],
      security,
      clientId: opts.clientId,
      topic: settings.topic,
      replicationFactor: settings.replicationFactor,
      timeoutMs: settings.timeoutMs,
      initTimeoutMs: settings.initTimeoutMs,
      groupId: settings.groupId,
      identity: { host, port: first.port, scheme: first.url.startsWith('https:') ? 'https' : 'http', leaderEligibility: settings.leaderEligibility },
      peerTls: tls === undefined ? undefined : httpClientTls(settings.httpTls, opts.configPrefix ?? ''),
      defaultCompatibility: settings.defaultCompatibility as CompatibilityLevel,
    })
    try {
      await node.start()
    } catch (err) {
      await node.stop().catch(() => undefined)
      await http.close()
      throw err
    }
    started(node)
    log.info({ listeners: http.listeners.map((l) => l.url).join(','), topic: settings.topic }, 'Schema Registry started')
    return new SchemaRegistryServer(node, http)
  }

  async stop(): Promise<void> {
    await this.http.close()
    await this.node.stop()
  }
}
