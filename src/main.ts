#!/usr/bin/env node
// `npm start`: runs one broker until SIGINT/SIGTERM. Kafka's start script conventions: a config file
// (config/server.properties) and `--override key=value` items applied on top of it.
import { realpathSync } from 'node:fs'
import { pathToFileURL } from 'node:url'
import { tuneMallocForBroker } from './addon/malloc-tuning.js'
import { type BrokerConfig, loadBrokerConfig } from './config/broker-config.js'
import { EMBEDDED_REST_PREFIX, REST_CONFIGS, restSettings } from './config/client-rest.js'
import type { ConfigValue } from './config/config-def.js'
import { Broker } from './server/broker.js'
import { createLogger, type Logger } from './observability/logger.js'

const HELP = `Usage: skein broker [--config FILE] [--override key=value ...]

Runs a Skein broker (Kafka protocol) until SIGINT or SIGTERM.

Options:
  --config FILE           Java .properties file with Kafka's broker config names
                          (default when run by npm start: config/server.properties)
  --override key=value    Set one config on top of the file (repeatable)
  -h, --help              Show this help

Defaults without a config file: listeners=PLAINTEXT://127.0.0.1:9092, log.dirs=./data.
With rest.listeners set (config/server.properties sets http://127.0.0.1:8082), the REST Proxy runs in
the same process as a client of this broker. The config reference is in README.md.`

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
  stop(): Promise<void>
}

/**
 * The REST Proxy inside the broker process, when rest.listeners is set: a client-side product, so it
 * reaches the broker like any client, over the Kafka protocol on the broker's own PLAINTEXT listener.
 * It is started here, by the entry point, because server/ imports no client-side product. The rest.*
 * settings are the REST Proxy's own (config/client-rest.ts) under that prefix. The same HTTP server
 * serves the web front (src/console: the console, WebSocket streams, /health, /ready) and /metrics,
 * which renders the broker's registry: the one HTTP port of the process serves every HTTP endpoint.
 */
export async function startEmbeddedServices(broker: Broker, config: BrokerConfig, log: Logger): Promise<EmbeddedServices> {
  const listeners = config.getList(`${EMBEDDED_REST_PREFIX}listeners`) ?? []
  if (listeners.length === 0) return { restUrls: [], stop: async () => {} }
  const values = new Map<string, ConfigValue>()
  for (const d of REST_CONFIGS) {
    const name = EMBEDDED_REST_PREFIX + d.name
    if (d.embeddable && config.isSet(name)) values.set(d.name, config.get(name))
  }
  const protocols = config.securityProtocolMap
  const plain = config.listeners.find((l) => (protocols.get(l.name) ?? l.name) === 'PLAINTEXT')
  if (plain === undefined) throw new Error('rest.listeners needs a PLAINTEXT broker listener for the embedded REST Proxy to connect to')
  const endpoint = broker.endpointFor(plain.name)
  const host = endpoint.host === '' || endpoint.host === '0.0.0.0' ? '127.0.0.1' : endpoint.host === '::' ? '::1' : endpoint.host
  const [{ RestProxy }, { webFront }] = await Promise.all([import('./rest/index.js'), import('./console/index.js')])
  const settings = restSettings(values)
  const bootstrapServers = [host.includes(':') ? `[${host}]:${endpoint.port}` : `${host}:${endpoint.port}`]
  let stopping = false
  // The web console, WebSocket streams and /metrics share the proxy's HTTP server; /metrics renders the
  // broker's own registry, which only this process can read.
  const extend = webFront({ settings, bootstrapServers, log, brokerMetrics: broker.metrics.registry, stopping: () => stopping })
  const proxy = await RestProxy.start({ settings, bootstrapServers, logger: log, extend })
  return {
    restUrls: proxy.listeners.map((l) => l.url),
    stop: () => {
      stopping = true
      return proxy.stop()
    },
  }
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
  let broker: Broker
  let config: BrokerConfig
  try {
    config = loadBrokerConfig({ file: args.configFile, overrides: args.overrides })
    broker = await Broker.start(config, { logger: log })
  } catch (err) {
    process.stderr.write(`skein: cannot start the broker: ${(err as Error).message}\n`)
    return 1
  }
  let services: EmbeddedServices
  try {
    services = await startEmbeddedServices(broker, config, log)
  } catch (err) {
    process.stderr.write(`skein: cannot start the REST Proxy: ${(err as Error).message}\n`)
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
        .catch((err: unknown) => log.warn({ err: (err as Error).message }, 'REST Proxy stop failed'))
        .then(() => broker.stop())
        .then(
          () => resolve(0),
          (err: unknown) => {
            log.error({ err: (err as Error).message }, 'unclean shutdown')
            resolve(1)
          },
        )
    }
    process.on('SIGINT', () => stop('SIGINT'))
    process.on('SIGTERM', () => stop('SIGTERM'))
  })
}

const isMain = process.argv[1] !== undefined && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href
if (isMain) {
  runBroker(process.argv.slice(2)).then((code) => {
    process.exitCode = code
  })
}
