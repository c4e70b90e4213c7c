// `skein configs`: kafka-configs. Describe a topic's, broker's or group's configs (the overridden ones, or
// all with --all, each with its synonyms: where the value comes from) and alter them with --add-config and
// --delete-config (IncrementalAlterConfigs: a deleted config falls back to its default).
import { Admin, type ConfigEntry, type ConfigResource } from '../client/admin.js'
import { parseKeyValues, UsageError, type CommandSpec } from './args.js'
import { adminOptions, BOOTSTRAP_OPTION, COMMAND_CONFIG_OPTION, COMMAND_PROPERTY_OPTION, oneAction, runCommand } from './common.js'
import { isQuotaCommand, runQuotaConfigs } from './configs-quotas.js'

const SPEC: CommandSpec = {
  command: 'skein configs',
  usage: 'skein configs [--bootstrap-server HOST:PORT] --entity-type topics|brokers|groups|users|clients (--entity-name NAME | --entity-default) --describe|--alter [options]',
  summary: 'Describe and alter topic, broker and group configs, client quotas and SCRAM credentials (kafka-configs).',
  options: [
    BOOTSTRAP_OPTION,
    COMMAND_CONFIG_OPTION,
    COMMAND_PROPERTY_OPTION,
    { name: 'entity-type', value: 'TYPE', repeat: true, desc: 'topics, brokers, groups, users or clients (users and clients together: a user+client-id quota)' },
    { name: 'entity-name', value: 'NAME', repeat: true, desc: 'Topic name, broker id, group id, user principal name or client-id' },
    { name: 'entity-default', desc: 'The default entity: of brokers, users or clients' },
    { name: 'user', value: 'USER', desc: 'Shorthand for --entity-type users --entity-name USER' },
    { name: 'client', value: 'ID', desc: 'Shorthand for --entity-type clients --entity-name ID' },
    { name: 'user-defaults', desc: 'Shorthand for --entity-type users --entity-default' },
    { name: 'client-defaults', desc: 'Shorthand for --entity-type clients --entity-default' },
    { name: 'topic', value: 'TOPIC', desc: 'Shorthand for --entity-type topics --entity-name TOPIC' },
    { name: 'broker', value: 'ID', desc: 'Shorthand for --entity-type brokers --entity-name ID' },
    { name: 'group', value: 'GROUP', desc: 'Shorthand for --entity-type groups --entity-name GROUP' },
    { name: 'describe', desc: 'Show the configs' },
    { name: 'alter', desc: 'Change configs (with --add-config and/or --delete-config)' },
    { name: 'all', desc: 'With --describe: every config, not only the overridden ones' },
    { name: 'add-config', value: 'K=V[,K=V]', repeat: true, desc: "Configs to set; list values in brackets: 'cleanup.policy=[compact,delete]'" },
    { name: 'delete-config', value: 'K[,K]', repeat: true, desc: 'Configs to remove (back to their default)' },
  ],
  notes: `Examples:
  skein configs --entity-type topics --entity-name demo --describe
  skein configs --entity-type topics --entity-name demo --alter --add-config retention.ms=3600000,cleanup.policy=compact
  skein configs --entity-type topics --entity-name demo --alter --delete-config retention.ms
  skein configs --entity-type brokers --entity-name 0 --describe --all
Group configs (consumer.session.timeout.ms, share.auto.offset.reset, share.record.lock.duration.ms, ...):
  skein configs --entity-type groups --entity-name my-group --alter --add-config share.auto.offset.reset=earliest
  skein configs --entity-type groups --entity-name my-group --alter --delete-config share.auto.offset.reset
  skein configs --entity-type groups --entity-name my-group --describe --all
Client quotas (producer_byte_rate, consumer_byte_rate, request_percentage, controller_mutation_rate):
  skein configs --entity-type users --entity-name alice --alter --add-config producer_byte_rate=1048576
  skein configs --entity-type users --entity-name alice --entity-type clients --entity-name app --alter --add-config consumer_byte_rate=2097152
  skein configs --entity-type clients --entity-default --alter --add-config request_percentage=50
  skein configs --entity-type clients --entity-default --alter --delete-config request_percentage
  skein configs --entity-type users --describe
SCRAM credentials (AlterUserScramCredentials; the password is salted here, iterations 4096 by default):
  skein configs --entity-type users --entity-name alice --alter --add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=alice-secret]'
  skein configs --entity-type users --entity-name alice --alter --delete-config SCRAM-SHA-512
  skein configs --entity-type users --entity-name alice --describe`,
}

function resource(args: import('./args.js').ParsedArgs): { type: ConfigResource['type']; name: string | null; label: string } {
  let type = args.get('entity-type')
  let name = args.get('entity-name') ?? null
  if (args.has('topic')) {
    type = 'topics'
    name = args.get('topic')!
  }
  if (args.has('broker')) {
    type = 'brokers'
    name = args.get('broker')!
  }
  if (args.has('group')) {
    type = 'groups'
    name = args.get('group')!
  }
  if (type === undefined) throw new UsageError('--entity-type topics|brokers|groups is required')
  if (args.has('entity-default')) {
    if (type !== 'brokers') throw new UsageError('--entity-default is for --entity-type brokers')
    return { type: 'broker', name: '', label: 'default brokers' }
  }
  if (type === 'topics' || type === 'topic') return { type: 'topic', name, label: 'topic' }
  if (type === 'brokers' || type === 'broker') {
    if (name !== null && !/^\d+$/.test(name)) throw new UsageError(`--entity-name '${name}' is not a broker id`)
    return { type: 'broker', name, label: 'broker' }
  }
  if (type === 'groups' || type === 'group') return { type: 'group', name, label: 'group' }
  if (type === 'broker-loggers') return { type: 'broker-logger', name, label: 'broker-logger' }
  throw new UsageError(`--entity-type '${type}' is not supported (topics, brokers, groups, users, clients)`)
}

function synonymText(c: ConfigEntry): string {
  return c.synonyms.map((s) => `${s.source}:${s.name}=${c.sensitive ? '<sensitive>' : s.value ?? 'null'}`).join(', ')
}

export function runConfigs(argv: readonly string[]): Promise<number> {
  return runCommand(SPEC, argv, async (args) => {
    const action = oneAction(args, ['describe', 'alter'])
    if (isQuotaCommand(args)) return runQuotaConfigs(args, argv, action as 'describe' | 'alter')
    const r = resource(args)
    const admin = new Admin(adminOptions(args, 'skein configs', 'skein-configs'))
    try {
      if (action === 'describe') {
        let names: string[]
        if (r.name !== null) names = [r.name]
        else if (r.type === 'topic') names = await admin.listTopics()
        else if (r.type === 'group') names = (await admin.listGroups()).map((g) => g.groupId).sort()
        else names = (await admin.describeCluster()).brokers.map((b) => String(b.nodeId))
        let out = ''
        for (const name of names) {
          const [result] = await admin.describeConfigs([{ type: r.type, name }])
          const all = args.has('all')
          const dynamicSources = r.type === 'topic' ? ['DYNAMIC_TOPIC_CONFIG'] : r.type === 'group' ? ['GROUP_CONFIG'] : name === '' ? ['DYNAMIC_DEFAULT_BROKER_CONFIG'] : ['DYNAMIC_BROKER_CONFIG']
          const entries = (result?.configs ?? []).filter((c) => all || dynamicSources.includes(c.source)).sort((a, b) => (a.name < b.name ? -1 : 1))
          const what = name === '' ? 'the default broker' : `${r.label} ${name}`
          out += `${all ? 'All' : 'Dynamic'} configs for ${what} are:\n`
          for (const c of entries) out += `  ${c.name}=${c.sensitive ? '<sensitive>' : c.value ?? 'null'} sensitive=${c.sensitive} synonyms={${synonymText(c)}}\n`
        }
        process.stdout.write(out)
        return 0
      }
      if (r.name === null) throw new UsageError('--alter needs --entity-name (or --entity-default)')
      const adds = parseKeyValues(args.all('add-config'), '--add-config', true)
      const deletes = args.all('delete-config').flatMap((d) => d.split(',')).map((d) => d.trim()).filter((d) => d !== '')
      if (adds.size === 0 && deletes.length === 0) throw new UsageError('--alter needs --add-config and/or --delete-config')
      for (const d of deletes) if (adds.has(d)) throw new UsageError(`config '${d}' is both added and deleted`)
      await admin.alterConfigs({ type: r.type, name: r.name }, [
        ...[...adds].map(([name, value]) => ({ op: 'set' as const, name, value })),
        ...deletes.map((name) => ({ op: 'delete' as const, name })),
      ])
      process.stdout.write(r.name === '' ? 'Completed updating default config for brokers in the cluster.\n' : `Completed updating config for ${r.label} ${r.name}.\n`)
      return 0
    } finally {
      await admin.close()
    }
  })
}
