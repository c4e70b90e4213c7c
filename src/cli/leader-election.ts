// `skein leader-election`: kafka-leader-election. Asks the controller (ElectLeaders) to elect the
// preferred replica (PREFERRED) or, for partitions without a live leader, any live replica (UNCLEAN) for
// every partition, one partition, or the partitions of a JSON file in Kafka's format
// ({"partitions":[{"topic":"t","partition":0}]}). Prints Kafka's lines; exits 1 when a partition could not
// elect.
import { readFileSync } from 'node:fs'
import { Admin, type PartitionOutcome } from '../client/admin.js'
import { ErrorCode, errorName } from '../domain/errors.js'
import { UsageError, type CommandSpec } from './args.js'
import { adminOptions, BOOTSTRAP_OPTION, COMMAND_CONFIG_OPTION, COMMAND_PROPERTY_OPTION, runCommand } from './common.js'

const SPEC: CommandSpec = {
  command: 'skein leader-election',
  usage: 'skein leader-election --bootstrap-server HOST:PORT --election-type PREFERRED|UNCLEAN (--all-topic-partitions | --topic T --partition P | --path-to-json-file F)',
  summary: 'Elect preferred or unclean leaders (kafka-leader-election).',
  options: [
    BOOTSTRAP_OPTION,
    COMMAND_CONFIG_OPTION,
    COMMAND_PROPERTY_OPTION,
    { name: 'election-type', value: 'TYPE', desc: 'PREFERRED (the first replica of the assignment, if live and in sync) or UNCLEAN (any live replica, for partitions without a live leader)' },
    { name: 'all-topic-partitions', desc: 'Every partition of every topic' },
    { name: 'topic', value: 'TOPIC', desc: 'One partition: its topic (with --partition)' },
    { name: 'partition', value: 'P', desc: 'One partition: its number (with --topic)' },
    { name: 'path-to-json-file', value: 'FILE', desc: 'Partitions in Kafka\'s JSON: {"partitions":[{"topic":"t","partition":0}]}' },
  ],
  notes: `Examples:
  skein leader-election --bootstrap-server 127.0.0.1:9092 --election-type PREFERRED --all-topic-partitions
  skein leader-election --bootstrap-server 127.0.0.1:9092 --election-type UNCLEAN --topic orders --partition 0`,
}

/** Kafka's --path-to-json-file format. */
export function parseElectionJson(text: string, file: string): { topic: string; partition: number }[] {
  let doc: unknown
  try {
    doc = JSON.parse(text)
  } catch (err) {
    throw new UsageError(`${file} is not JSON: ${(err as Error).message}`)
  }
  const partitions = (doc as { partitions?: unknown }).partitions
  if (!Array.isArray(partitions)) throw new UsageError(`${file}: expected {"partitions":[{"topic":"t","partition":0},...]}`)
  const out = partitions.map((p: unknown, i) => {
    const { topic, partition } = (p ?? {}) as { topic?: unknown; partition?: unknown }
    if (typeof topic !== 'string' || !Number.isInteger(partition)) throw new UsageError(`${file}: partitions[${i}] needs a string "topic" and an integer "partition"`)
    return { topic, partition: partition as number }
  })
  const keys = out.map((p) => `${p.topic}-${p.partition}`)
  const dup = keys.find((k, i) => keys.indexOf(k) !== i)
  if (dup !== undefined) throw new UsageError(`${file}: duplicate partition ${dup}`)
  return out
}

export function runLeaderElection(argv: readonly string[]): Promise<number> {
  return runCommand(SPEC, argv, async (args) => {
    const type = args.require('election-type').toUpperCase()
    if (type !== 'PREFERRED' && type !== 'UNCLEAN') throw new UsageError(`--election-type must be PREFERRED or UNCLEAN, not '${args.get('election-type')}'`)
    const scopes = args.given(['all-topic-partitions', 'topic', 'path-to-json-file'])
    if (scopes.length !== 1) throw new UsageError('give exactly one of --all-topic-partitions, --topic with --partition, --path-to-json-file')
    let partitions: { topic: string; partition: number }[] | null = null
    if (args.has('topic')) {
      const partition = args.int('partition', { min: 0 })
      if (partition === undefined) throw new UsageError('--topic needs --partition')
      partitions = [{ topic: args.get('topic')!, partition }]
    } else if (args.has('partition')) {
      throw new UsageError('--partition needs --topic')
    } else if (args.has('path-to-json-file')) {
      const file = args.get('path-to-json-file')!
      let text: string
      try {
        text = readFileSync(file, 'utf8')
      } catch (err) {
        throw new UsageError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
      }
      partitions = parseElectionJson(text, file)
    }
    const admin = new Admin(adminOptions(args, 'skein leader-election', 'skein-leader-election'))
    try {
      const results = await admin.electLeaders(type === 'PREFERRED' ? 'preferred' : 'unclean', partitions)
      return report(type, results)
    } finally {
      await admin.close()
    }
  })
}

/** Kafka's LeaderElectionCommand output: elected, not needed, failed (exit 1 when any failed). */
function report(type: string, results: readonly PartitionOutcome[]): number {
  const name = (r: PartitionOutcome): string => `${r.topic}-${r.partition}`
  const sorted = [...results].sort((a, b) => (a.topic === b.topic ? a.partition - b.partition : a.topic < b.topic ? -1 : 1))
  const elected = sorted.filter((r) => r.errorCode === ErrorCode.NONE)
  const notNeeded = sorted.filter((r) => r.errorCode === ErrorCode.ELECTION_NOT_NEEDED)
  const failed = sorted.filter((r) => r.errorCode !== ErrorCode.NONE && r.errorCode !== ErrorCode.ELECTION_NOT_NEEDED)
  let out = ''
  if (elected.length > 0) out += `Successfully completed leader election (${type}) for partitions ${elected.map(name).join(', ')}\n`
  if (notNeeded.length > 0) out += `Valid replica already elected for partitions ${notNeeded.map(name).join(', ')}\n`
  process.stdout.write(out)
  if (failed.length === 0) return 0
  let err = `Failed to elect leader for partitions ${failed.map(name).join(', ')}\n`
  for (const r of failed) err += `Error completing leader election (${type}) for partition: ${name(r)}: ${errorName(r.errorCode)}${r.errorMessage ? `: ${r.errorMessage}` : ''}\n`
  err += `${failed.length} replica(s) could not be elected\n`
  process.stderr.write(err)
  return 1
}
