// `skein schema-registry`: a Schema Registry instance (Confluent's API, schema-registry-start) against any
// Kafka cluster, Skein or Apache Kafka: settings from a schema-registry.properties file (Confluent's
// names), --override items and the flags below, in that order of precedence (flags last). Several
// instances with the same schema.registry.group.id elect one primary. Runs until SIGINT or SIGTERM.
import { parseRegistryProperties, registrySettings } from '../config/client-registry.js'
import { requiresClientCertificates } from '../client/http-tls.js'
import { exposureNotice } from '../http/index.js'
import { createLogger } from '../observability/logger.js'
import { SchemaRegistryServer } from '../registry/server.js'
import { parseKeyValues, type CommandSpec } from './args.js'
import { BOOTSTRAP_OPTION, DEFAULT_BOOTSTRAP, readPropertiesFile, runCommand } from './common.js'

const SPEC: CommandSpec = {
  command: 'skein schema-registry',
  usage: 'skein schema-registry [--bootstrap-server HOST:PORT] [--listeners URL] [--config FILE] [options]',
  summary: "Runs a Schema Registry instance (Confluent's API) storing its state in a Kafka cluster (schema-registry-start).",
  options: [
    BOOTSTRAP_OPTION,
    { name: 'listeners', value: 'URL', desc: 'HTTP listeners, comma-separated (default http://127.0.0.1:8081, loopback only)' },
    { name: 'config', value: 'FILE', desc: 'schema-registry.properties with the registry settings (docs/configuration.md: Schema Registry configs)' },
    { name: 'override', value: 'KEY=VALUE', repeat: true, desc: 'A setting on top of the file (repeatable)' },
  ],
  notes: `Examples:
  skein schema-registry --bootstrap-server 127.0.0.1:9092 --listeners http://127.0.0.1:8081
  curl http://127.0.0.1:8081/subjects

A secured cluster: the registry's Kafka login with Confluent's kafkastore.* names, e.g.
  --override kafkastore.security.protocol=SASL_SSL --override kafkastore.sasl.mechanism=SCRAM-SHA-512
  --override 'kafkastore.sasl.jaas.config=...ScramLoginModule required username="registry" password="...";'
  --override kafkastore.ssl.truststore.location=ca.pem   (docs/security.md)`,
}

export function runSchemaRegistry(argv: readonly string[]): Promise<number> {
  return runCommand(SPEC, argv, async (args) => {
    const entries = new Map<string, string>()
    const file = args.get('config')
    if (file !== undefined) for (const [k, v] of readPropertiesFile(file)) entries.set(k, v)
    for (const [k, v] of parseKeyValues(args.all('override'), '--override')) entries.set(k, v)
    if (args.get('bootstrap-server') !== undefined) entries.set('kafkastore.bootstrap.servers', args.get('bootstrap-server')!)
    if (args.get('listeners') !== undefined) entries.set('listeners', args.get('listeners')!)
    const settings = registrySettings(parseRegistryProperties(entries))
    const log = createLogger()
    const registry = await SchemaRegistryServer.start({ settings, bootstrapServers: settings.bootstrapServers ?? [DEFAULT_BOOTSTRAP], logger: log })
    const notice = exposureNotice('Schema Registry', registry.urls, settings.httpAuth.method === 'BASIC', requiresClientCertificates(settings.httpTls))
    process.stdout.write(`${notice.line}\n`)
    for (const w of notice.warnings) log.warn(w)
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve)
      process.once('SIGTERM', resolve)
    })
    await registry.stop()
    return 0
  })
}
