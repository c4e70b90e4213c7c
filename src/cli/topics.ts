// `skein topics`: kafka-topics.sh. Create, list, describe (partitions, leader, replicas, ISR and the
// topic's own configs, in kafka-topics' layout), alter (add partitions) and delete.
import { Admin } from '../client/admin.js'
import { ErrorCode, KafkaError } from '../domain/errors.js'
import { parseKeyValues, UsageError, type CommandSpec } from './args.js'
import { adminOptions, BOOTSTRAP_OPTION, COMMAND_CONFIG_OPTION, COMMAND_PROPERTY_OPTION, oneAction, runCommand } from './common.js'

const SPEC: CommandSpec = {
  command: 'skein topics',
  usage: 'skein topics [--bootstrap-server HOST:PORT] --create|--list|--describe|--alter|--delete [options]',
  summary: 'Create, list, describe, alter and delete topics (kafka-topics).',
  options: [
    BOOTSTRAP_OPTION,
    COMMAND_CONFIG_OPTION,
    COMMAND_PROPERTY_OPTION,
    { name: 'create', desc: 'Create a topic' },
    { name: 'list', desc: 'List topic names' },
    { name: 'describe', desc: 'Describe topics: partitions, leader, replicas, ISR, configs' },
    { name: 'alter', desc: 'Add partitions to a topic (with --partitions)' },
    { name: 'delete', desc: 'Delete a topic' },
    { name: 'topic', value: 'TOPIC', desc: 'The topic (for --list and --describe: a regular expression)' },
    { name: 'partitions', value: 'N', desc: 'Partition count (--create: default the broker\'s num.partitions; --alter: the new count)' },
    { name: 'replication-factor', value: 'R', desc: 'Replication factor (--create; default the broker\'s default.replication.factor)' },
    { name: 'config', value: 'KEY=VALUE', repeat: true, desc: 'A topic config for --create' },
    { name: 'if-not-exists', desc: 'With --create: no error when the topic exists' },
    { name: 'if-exists', desc: 'With --alter or --delete: no error when the topic does not exist' },
    { name: 'exclude-internal', desc: 'Leave internal topics out of --list and --describe' },
  ],
  notes: `Examples:
  skein topics --create --topic demo --partitions 3 --replication-factor 1 --config retention.ms=86400000
  skein topics --list
  skein topics --describe --topic demo
  skein topics --alter --topic demo --partitions 6
  skein topics --delete --topic demo`,
}

export function runTopics(argv: readonly string[]): Promise<number> {
  return runCommand(SPEC, argv, async (args) => {
    const action = oneAction(args, ['create', 'list', 'describe', 'alter', 'delete'])
    const admin = new Admin(adminOptions(args, 'skein topics', 'skein-topics'))
    try {
      switch (action) {
        case 'create': {
          const topic = args.require('topic', 'with --create')
          const configs = Object.fromEntries(parseKeyValues(args.all('config'), '--config'))
          try {
            await admin.createTopics([{ name: topic, numPartitions: args.int('partitions', { min: 1 }) ?? -1, replicationFactor: args.int('replication-factor', { min: 1, max: 32767 }) ?? -1, configs }])
          } catch (err) {
            if (err instanceof KafkaError && err.code === ErrorCode.TOPIC_ALREADY_EXISTS && args.has('if-not-exists')) return 0
            throw err
          }
          process.stdout.write(`Created topic ${topic}.\n`)
          return 0
        }
        case 'list': {
          const names = await admin.listTopics({ includeInternal: !args.has('exclude-internal') })
          const re = topicPattern(args.get('topic'))
          process.stdout.write(names.filter((n) => re === null || re.test(n)).map((n) => `${n}\n`).join(''))
          return 0
        }
        case 'describe':
          return await describe(admin, args.get('topic'), args.has('exclude-internal'))
        case 'alter': {
          const topic = args.require('topic', 'with --alter')
          const count = args.int('partitions', { min: 1 })
          if (count === undefined) throw new UsageError('--alter needs --partitions N (the new partition count)')
          try {
            await admin.createPartitions(topic, count)
          } catch (err) {
            if (err instanceof KafkaError && err.code === ErrorCode.UNKNOWN_TOPIC_OR_PARTITION && args.has('if-exists')) return 0
            throw err
          }
          process.stdout.write(`Topic ${topic} now has ${count} partitions.\n`)
          return 0
        }
        default: {
          const topic = args.require('topic', 'with --delete')
          try {
            await admin.deleteTopics([topic])
          } catch (err) {
            if (err instanceof KafkaError && err.code === ErrorCode.UNKNOWN_TOPIC_OR_PARTITION && args.has('if-exists')) return 0
            throw err
          }
          process.stdout.write(`Deleted topic ${topic}.\n`)
          return 0
        }
      }
    } finally {
      await admin.close()
    }
  })
}

/** kafka-topics treats --topic as a regular expression for --list and --describe (anchored). */
function topicPattern(topic: string | undefined): RegExp | null {
  if (topic === undefined) return null
  try {
    return new RegExp(`^(?:${topic})$`)
  } catch {
    throw new UsageError(`--topic '${topic}' is not a valid regular expression`)
  }
}

async function describe(admin: Admin, topic: string | undefined, excludeInternal: boolean): Promise<number> {
  const re = topicPattern(topic)
  const isPlainName = topic !== undefined && /^[A-Za-z0-9._-]+$/.test(topic)
  const names = isPlainName ? [topic] : (await admin.listTopics({ includeInternal: !excludeInternal })).filter((n) => re === null || re.test(n))
  if (names.length === 0) {
    if (topic !== undefined) throw new KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `no topic matches '${topic}'`)
    return 0
  }
  const topics = await admin.describeTopics(names)
  const configs = await admin.describeConfigs(topics.map((t) => ({ type: 'topic' as const, name: t.name })))
  let out = ''
  topics.forEach((t, i) => {
    // kafka-topics shows the topic's own (dynamic) configs, not inherited defaults.
    const own = (configs[i]?.configs ?? []).filter((c) => c.source === 'DYNAMIC_TOPIC_CONFIG').map((c) => `${c.name}=${c.sensitive ? '<sensitive>' : c.value ?? ''}`)
    const rf = t.partitions[0]?.replicas.length ?? 0
    out += `Topic: ${t.name}\tTopicId: ${t.topicId}\tPartitionCount: ${t.partitions.length}\tReplicationFactor: ${rf}\tConfigs: ${own.join(',')}\n`
    for (const p of t.partitions) {
      out += `\tTopic: ${t.name}\tPartition: ${p.partition}\tLeader: ${p.leader < 0 ? 'none' : p.leader}\tReplicas: ${p.replicas.join(',')}\tIsr: ${p.isr.join(',')}\n`
    }
  })
  process.stdout.write(out)
  return 0
}
