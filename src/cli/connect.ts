// `skein connect distributed <worker.properties>` and `skein connect standalone <worker.properties>
// [connector.properties ...]`: a Kafka Connect worker (connect-distributed.sh / connect-standalone.sh),
// with Kafka's worker and connector property names. --override key=value items go over the file.
// Runs until SIGINT or SIGTERM, then stops its tasks (committing their offsets) and leaves the group.
import { startConnect } from '../connect/runtime/connect.js'
import { requiresClientCertificates } from '../client/http-tls.js'
import { restTlsProps } from '../connect/runtime/worker-config.js'
import { exposureNotice } from '../http/index.js'
import { createLogger } from '../observability/logger.js'
import { parseKeyValues, UsageError, type CommandSpec } from './args.js'
import { readPropertiesFile, runCommand } from './common.js'

const SPEC: CommandSpec = {
  command: 'skein connect',
  usage: 'skein connect distributed WORKER.properties [--override K=V ...]\n       skein connect standalone WORKER.properties [CONNECTOR.properties ...] [--override K=V ...]',
  summary: 'Runs a Kafka Connect worker (connect-distributed / connect-standalone), REST API on listeners (default http://127.0.0.1:8083).',
  options: [{ name: 'override', value: 'KEY=VALUE', repeat: true, desc: 'A worker setting on top of the file (repeatable)' }],
  notes: `Examples:
  skein connect distributed config/connect-distributed.properties
  skein connect standalone config/connect-standalone.properties config/connect-file-source.properties
  curl http://127.0.0.1:8083/connectors`,
}

export function runConnect(argv: readonly string[]): Promise<number> {
  return runCommand(SPEC, argv, async (args) => {
    const [mode, workerFile, ...connectorFiles] = args.positionals
    if (mode !== 'distributed' && mode !== 'standalone') throw new UsageError('the first argument must be distributed or standalone')
    if (workerFile === undefined) throw new UsageError('a worker properties file is required')
    if (mode === 'distributed' && connectorFiles.length > 0) throw new UsageError('distributed mode takes connectors through the REST API, not files')
    const props = Object.fromEntries(readPropertiesFile(workerFile))
    for (const [k, v] of parseKeyValues(args.all('override'), '--override')) props[k] = v
    const connectors = connectorFiles.map((f) => Object.fromEntries(readPropertiesFile(f)))
    const log = createLogger()
    const handle = await startConnect({ mode, props, connectors, log })
    const notice = exposureNotice(`Kafka Connect (${mode})`, handle.rest.listeners.map((l) => l.url), false, requiresClientCertificates(restTlsProps({ originals: props }).props))
    process.stdout.write(`${notice.line}\n`)
    for (const w of notice.warnings) log.warn(w)
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve)
      process.once('SIGTERM', resolve)
    })
    await handle.stop()
    return 0
  })
}
