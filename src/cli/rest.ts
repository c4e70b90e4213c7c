// `skein rest`: Confluent's REST Proxy (kafka-rest-start) in front of any Kafka cluster, Skein or Apache
// Kafka: settings from a kafka-rest.properties file (Confluent's names), --override items and the flags
// below, in that order of precedence (flags last). Runs until SIGINT or SIGTERM.
import { parseRestProperties, restSettings } from '../config/client-rest.js'
import { webFront } from '../console/index.js'
import { requiresClientCertificates } from '../client/http-tls.js'
import { exposureNotice } from '../http/index.js'
import { createLogger } from '../observability/logger.js'
import { RestProxy } from '../rest/index.js'
import { parseKeyValues, type CommandSpec } from './args.js'
import { BOOTSTRAP_OPTION, DEFAULT_BOOTSTRAP, readPropertiesFile, runCommand } from './common.js'

const SPEC: CommandSpec = {
  command: 'skein rest',
  usage: 'skein rest [--bootstrap-server HOST:PORT] [--listeners URL] [--config FILE] [options]',
  summary: "Runs Confluent's REST Proxy API (v2 and v3) against a Kafka cluster (kafka-rest-start), with Skein's web console (/console/), WebSocket streaming (/ws/topics/{topic}) and /health, /ready, /metrics.",
  options: [
    BOOTSTRAP_OPTION,
    { name: 'listeners', value: 'URL', desc: 'HTTP listeners, comma-separated (default http://127.0.0.1:8082, loopback only)' },
    { name: 'schema-registry-url', value: 'URL', desc: 'Schema Registry for the avro, jsonschema and protobuf formats' },
    { name: 'config', value: 'FILE', desc: 'kafka-rest.properties with the REST Proxy settings (docs/configuration.md: REST Proxy configs)' },
    { name: 'override', value: 'KEY=VALUE', repeat: true, desc: 'A setting on top of the file (repeatable)' },
  ],
  notes: `Examples:
  skein rest --bootstrap-server 127.0.0.1:9092 --listeners http://127.0.0.1:8082
  curl http://127.0.0.1:8082/v3/clusters
  open http://127.0.0.1:8082/console/ in a browser

A secured cluster: the proxy's (and the console's) Kafka login with Confluent's client.* names, e.g.
  --override client.security.protocol=SASL_SSL --override client.sasl.mechanism=SCRAM-SHA-512
  --override 'client.sasl.jaas.config=...ScramLoginModule required username="rest" password="...";'
  --override client.ssl.truststore.location=ca.pem   (docs/security.md)`,
}

export function runRest(argv: readonly string[]): Promise<number> {
  return runCommand(SPEC, argv, async (args) => {
    const entries = new Map<string, string>()
    const file = args.get('config')
    if (file !== undefined) for (const [k, v] of readPropertiesFile(file)) entries.set(k, v)
    for (const [k, v] of parseKeyValues(args.all('override'), '--override')) entries.set(k, v)
    if (args.get('bootstrap-server') !== undefined) entries.set('bootstrap.servers', args.get('bootstrap-server')!)
    if (args.get('listeners') !== undefined) entries.set('listeners', args.get('listeners')!)
    if (args.get('schema-registry-url') !== undefined) entries.set('schema.registry.url', args.get('schema-registry-url')!)
    const settings = restSettings(parseRestProperties(entries))
    const log = createLogger()
    const bootstrapServers = settings.bootstrapServers ?? [DEFAULT_BOOTSTRAP]
    let stopping = false
    const proxy = await RestProxy.start({ settings, bootstrapServers, logger: log, extend: webFront({ settings, bootstrapServers, log, stopping: () => stopping }) })
    const notice = exposureNotice('REST Proxy', proxy.listeners.map((l) => l.url), settings.httpAuth.method === 'BASIC', requiresClientCertificates(settings.httpTls))
    process.stdout.write(`${notice.line}\n`)
    for (const w of notice.warnings) log.warn(w)
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve)
      process.once('SIGTERM', resolve)
    })
    stopping = true
    await proxy.stop()
    return 0
  })
}
