// `skein mirror-maker mm2.properties [--clusters A,B] [--override K=V ...]`: dedicated MirrorMaker 2
// (connect-mirror-maker.sh). Reads the file, builds connect/mirror-maker.ts's MirrorMakerConfig and runs
// its herders until SIGINT or SIGTERM.
import { MirrorMakerConfig, startMirrorMaker } from '../connect/mirror-maker.js'
import { createLogger } from '../observability/logger.js'
import { parseKeyValues, UsageError, type CommandSpec } from './args.js'
import { readPropertiesFile, runCommand } from './common.js'

const SPEC: CommandSpec = {
  command: 'skein mirror-maker',
  usage: 'skein mirror-maker MM2.properties [--clusters ALIAS[,ALIAS...]] [--override K=V ...]',
  summary: 'Runs MirrorMaker 2 in dedicated mode (connect-mirror-maker): a Connect herder per replication flow running MirrorSourceConnector, MirrorCheckpointConnector and MirrorHeartbeatConnector.',
  options: [
    { name: 'clusters', value: 'ALIASES', desc: 'Only the flows whose target cluster is one of these (comma-separated; default all)' },
    { name: 'override', value: 'KEY=VALUE', repeat: true, desc: 'A setting on top of the file' },
  ],
  notes: `The file uses connect-mirror-maker's names, e.g.:
  clusters = A, B
  A.bootstrap.servers = localhost:9092
  B.bootstrap.servers = localhost:9093
  A->B.enabled = true
  A->B.topics = orders.*
  groups = .*
  replication.factor = 1
  emit.checkpoints.interval.seconds = 10
  sync.group.offsets.enabled = true
  dedicated.mode.enable.internal.rest = true
  listeners = http://127.0.0.1:8083
With dedicated.mode.enable.internal.rest = true (KIP-710; default false) the process serves GET /,
GET /health and GET /metrics (every flow's MirrorMaker and Connect metrics) on listeners (default
http://:8083; an empty host binds 127.0.0.1). Without it, each flow's worker has only its internal
listener on 127.0.0.1 and a random port.
Remote topics are named <source>.<topic> (replication.policy.separator); checkpoints go to
<source>.checkpoints.internal on the target, offset syncs to mm2-offset-syncs.<target>.internal on the
source, heartbeats to heartbeats. Several processes with the same file share the work.
Example: skein mirror-maker config/mm2.properties`,
}

export function runMirrorMaker(argv: readonly string[]): Promise<number> {
  return runCommand(SPEC, argv, async (args) => {
    const [file, ...rest] = args.positionals
    if (file === undefined) throw new UsageError('an mm2.properties file is required')
    if (rest.length > 0) throw new UsageError(`unexpected argument ${rest[0]}`)
    const props = Object.fromEntries(readPropertiesFile(file))
    for (const [k, v] of parseKeyValues(args.all('override'), '--override')) props[k] = v
    const config = new MirrorMakerConfig(props)
    const only = args.get('clusters') === undefined ? null : args.get('clusters')!.split(',').map((c) => c.trim()).filter((c) => c !== '')
    const log = createLogger()
    const mm = await startMirrorMaker(config, log, only)
    process.stdout.write(`MirrorMaker started: ${mm.flows.map((f) => `${f.flow.source}->${f.flow.target}${f.flow.enabled ? '' : ' (heartbeats)'}`).join(', ')}${mm.restUrls.length > 0 ? `; REST (/metrics, /health) on ${mm.restUrls.join(', ')}` : ''}\n`)
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve)
      process.once('SIGTERM', resolve)
    })
    await mm.stop()
    return 0
  })
}
