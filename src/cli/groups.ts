// `skein groups`: kafka-consumer-groups. List groups, describe one (per partition: committed offset, log
// end offset, lag and the member that owns it), reset its offsets (plan with --dry-run, apply with
// --execute; only while the group has no members), delete groups.
import { Admin, type GroupDescription } from '../client/admin.js'
import { EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, tpKey } from '../client/offsets.js'
import { ErrorCode, KafkaError } from '../domain/errors.js'
import { parseIntArg, UsageError, type CommandSpec } from './args.js'
import { adminOptions, BOOTSTRAP_OPTION, COMMAND_CONFIG_OPTION, COMMAND_PROPERTY_OPTION, formatTable, oneAction, runCommand } from './common.js'

const SPEC: CommandSpec = {
  command: 'skein groups',
  usage: 'skein groups [--bootstrap-server HOST:PORT] --list|--describe|--reset-offsets|--delete [options]',
  summary: 'List, describe, reset and delete consumer groups (kafka-consumer-groups).',
  options: [
    BOOTSTRAP_OPTION,
    COMMAND_CONFIG_OPTION,
    COMMAND_PROPERTY_OPTION,
    { name: 'list', desc: 'List group ids' },
    { name: 'describe', desc: 'Offsets, log end offsets, lag and members per partition' },
    { name: 'reset-offsets', desc: 'Move committed offsets (the group must have no members)' },
    { name: 'delete', desc: 'Delete groups (they must have no members)' },
    { name: 'group', value: 'GROUP', repeat: true, desc: 'The group' },
    { name: 'all-groups', desc: 'Every group (--describe, --delete)' },
    { name: 'topic', value: 'TOPIC[:P,P]', repeat: true, desc: 'Topic (optionally partitions) to reset' },
    { name: 'all-topics', desc: 'Reset every topic the group has offsets for' },
    { name: 'to-earliest', desc: 'Reset to the earliest offset' },
    { name: 'to-latest', desc: 'Reset to the log end offset' },
    { name: 'to-offset', value: 'N', desc: 'Reset to offset N (clamped to the partition\'s range)' },
    { name: 'to-datetime', value: 'YYYY-MM-DDTHH:mm:SS.sss', desc: 'Reset to the first offset at or after this time (UTC unless an offset like +02:00 is given)' },
    { name: 'shift-by', value: 'N', desc: 'Move the committed offset by N (may be negative)' },
    { name: 'dry-run', desc: 'Show the new offsets without changing anything (the default)' },
    { name: 'execute', desc: 'Commit the new offsets' },
    { name: 'timeout', value: 'MS', desc: 'Deadline of each admin call, retries included (default 5000, as kafka-consumer-groups; it replaces default.api.timeout.ms)' },
  ],
  notes: `Examples:
  skein groups --list
  skein groups --describe --group demo-readers
  skein groups --reset-offsets --group demo-readers --topic demo --to-earliest --execute`,
}

export function runGroups(argv: readonly string[]): Promise<number> {
  return runCommand(SPEC, argv, async (args) => {
    const action = oneAction(args, ['list', 'describe', 'reset-offsets', 'delete'])
    const opts = adminOptions(args, 'skein groups', 'skein-consumer-groups')
    // kafka-consumer-groups gives every admin call its --timeout (default 5000 ms).
    opts.apiTimeoutMs = args.int('timeout', { min: 1 }) ?? 5000
    opts.apiTimeoutName = '--timeout'
    const admin = new Admin(opts)
    try {
      const groups = async (): Promise<string[]> => {
        if (args.has('all-groups')) return (await admin.listGroups()).map((g) => g.groupId)
        const g = args.all('group')
        if (g.length === 0) throw new UsageError(`--${action} needs --group GROUP${action === 'reset-offsets' ? '' : ' or --all-groups'}`)
        return g
      }
      switch (action) {
        case 'list': {
          const list = await admin.listGroups()
          process.stdout.write(list.map((g) => `${g.groupId}\n`).join(''))
          return 0
        }
        case 'describe': {
          for (const g of await groups()) await describeGroup(admin, g)
          return 0
        }
        case 'reset-offsets':
          return await resetOffsets(admin, args)
        default: {
          const ids = await groups()
          await admin.deleteGroups(ids)
          process.stdout.write(`Deletion of requested consumer groups (${ids.map((g) => `'${g}'`).join(', ')}) was successful.\n`)
          return 0
        }
      }
    } finally {
      await admin.close()
    }
  })
}

async function describeOne(admin: Admin, groupId: string): Promise<GroupDescription> {
  const [d] = await admin.describeGroups([groupId])
  if (d === undefined || d.state === 'Dead') throw new KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, `consumer group '${groupId}' does not exist`)
  return d
}

async function describeGroup(admin: Admin, groupId: string): Promise<void> {
  const d = await describeOne(admin, groupId)
  const committed = await admin.fetchOffsets(groupId)
  const owner = new Map<string, { memberId: string; host: string; clientId: string }>()
  for (const m of d.members) for (const tp of m.assignment) owner.set(tpKey(tp.topic, tp.partition), { memberId: m.memberId, host: m.clientHost, clientId: m.clientId })
  const keys = new Set([...committed.keys(), ...owner.keys()])
  const tps = [...keys].map((k) => {
    const [topic, p] = k.split('\u0000')
    return { topic: topic!, partition: Number(p) }
  })
  tps.sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition))
  const ends = tps.length > 0 ? await admin.listOffsets(tps.map((tp) => ({ ...tp, timestamp: LATEST_TIMESTAMP }))) : new Map()
  let out = '\n'
  if (d.members.length === 0) out += `Consumer group '${groupId}' has no active members.\n\n`
  const rows = tps.map((tp) => {
    const k = tpKey(tp.topic, tp.partition)
    const cur = committed.get(k)
    const end = ends.get(k)?.offset
    const o = owner.get(k)
    return [groupId, tp.topic, String(tp.partition), cur === undefined ? '-' : String(cur), end === undefined ? '-' : String(end), cur === undefined || end === undefined ? '-' : String(Math.max(0, end - cur)), o?.memberId ?? '-', o?.host ?? '-', o?.clientId ?? '-']
  })
  out += formatTable(['GROUP', 'TOPIC', 'PARTITION', 'CURRENT-OFFSET', 'LOG-END-OFFSET', 'LAG', 'CONSUMER-ID', 'HOST', 'CLIENT-ID'], rows)
  process.stdout.write(out)
}

/** Parses --to-datetime like Kafka (yyyy-MM-dd'T'HH:mm:SS.sss, optional zone); local time is UTC here. */
export function parseDateTime(s: string): number {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d{1,3})?(Z|[+-]\d{2}:?\d{2})?$/.exec(s)
  if (m === null) throw new UsageError(`--to-datetime '${s}' is not YYYY-MM-DDTHH:mm:SS[.sss][Z|+hh:mm]`)
  const iso = `${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}${(m[7] ?? '.000').padEnd(4, '0')}${m[8] === undefined ? 'Z' : m[8].length === 5 ? `${m[8].slice(0, 3)}:${m[8].slice(3)}` : m[8]}`
  const t = Date.parse(iso)
  if (Number.isNaN(t)) throw new UsageError(`--to-datetime '${s}' is not a valid time`)
  return t
}

async function resetOffsets(admin: Admin, args: import('./args.js').ParsedArgs): Promise<number> {
  const groupIds = args.all('group')
  if (groupIds.length !== 1) throw new UsageError('--reset-offsets needs exactly one --group')
  const groupId = groupIds[0]!
  const spec = oneAction(args, ['to-earliest', 'to-latest', 'to-offset', 'to-datetime', 'shift-by'])
  if (args.has('dry-run') && args.has('execute')) throw new UsageError('--dry-run and --execute cannot be used together')
  if (!args.has('topic') && !args.has('all-topics')) throw new UsageError('--reset-offsets needs --topic TOPIC or --all-topics')
  const execute = args.has('execute')
  const d = await admin.describeGroups([groupId])
  const state = d[0]?.state ?? 'Dead'
  if (execute && state !== 'Empty' && state !== 'Dead') {
    throw new KafkaError(ErrorCode.NON_EMPTY_GROUP, `assignments can only be reset if the group '${groupId}' is inactive, but the current state is ${state}`)
  }
  const committed = await admin.fetchOffsets(groupId)
  // The partitions in scope.
  let tps: { topic: string; partition: number }[] = []
  if (args.has('all-topics')) {
    tps = [...committed.keys()].map((k) => ({ topic: k.split('\u0000')[0]!, partition: Number(k.split('\u0000')[1]) }))
  } else {
    for (const t of args.all('topic')) {
      const colon = t.indexOf(':')
      const name = colon < 0 ? t : t.slice(0, colon)
      const [info] = await admin.describeTopics([name])
      const all = info!.partitions.map((p) => p.partition)
      const wanted = colon < 0 ? all : t.slice(colon + 1).split(',').map((p) => parseIntArg('topic', p, { min: 0 }))
      for (const p of wanted) {
        if (!all.includes(p)) throw new KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `topic '${name}' has no partition ${p}`)
        tps.push({ topic: name, partition: p })
      }
    }
  }
  tps.sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition))
  const earliest = await admin.listOffsets(tps.map((tp) => ({ ...tp, timestamp: EARLIEST_TIMESTAMP })))
  const latest = await admin.listOffsets(tps.map((tp) => ({ ...tp, timestamp: LATEST_TIMESTAMP })))
  const clamp = (k: string, o: number): number => Math.min(Math.max(o, earliest.get(k)?.offset ?? 0), latest.get(k)?.offset ?? o)
  let byTime: Map<string, { offset: number }> | null = null
  if (spec === 'to-datetime') {
    const ts = parseDateTime(args.get('to-datetime')!)
    byTime = await admin.listOffsets(tps.map((tp) => ({ ...tp, timestamp: ts })))
  }
  const plan = tps.map((tp) => {
    const k = tpKey(tp.topic, tp.partition)
    let target: number
    switch (spec) {
      case 'to-earliest':
        target = earliest.get(k)!.offset
        break
      case 'to-latest':
        target = latest.get(k)!.offset
        break
      case 'to-offset':
        target = clamp(k, parseIntArg('to-offset', args.get('to-offset')!, { min: 0 }))
        break
      case 'to-datetime': {
        const o = byTime!.get(k)?.offset ?? -1
        target = o < 0 ? latest.get(k)!.offset : o
        break
      }
      default: {
        const shift = parseIntArg('shift-by', args.get('shift-by')!)
        const base = committed.get(k) ?? latest.get(k)!.offset
        target = clamp(k, base + shift)
      }
    }
    return { ...tp, offset: target }
  })
  if (execute) await admin.commitOffsets(groupId, plan)
  else if (!args.has('dry-run')) process.stderr.write('skein groups: no --execute given: this is a dry run (nothing was changed)\n')
  process.stdout.write('\n' + formatTable(['GROUP', 'TOPIC', 'PARTITION', 'NEW-OFFSET'], plan.map((p) => [groupId, p.topic, String(p.partition), String(p.offset)])))
  return 0
}
