// `skein groups`: kafka-consumer-groups. List groups (with --state, their states), describe them as that
// tool does (--offsets, the default: per partition the committed offset, log end offset, lag and the
// member that owns it; --members: the members and their assignments; --state: coordinator, assignor,
// state and member count; --verbose adds its extra columns), reset offsets (plan with --dry-run, apply
// with --execute; only while the group has no members), delete groups. The describe tables are laid out
// column for column as kafka-consumer-groups prints them, because scripts parse them.
import { Admin, type GroupDescription } from '../client/admin.js'
import type { CommittedOffset } from '../client/group.js'
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
    { name: 'list', desc: 'List group ids (with --state: and their states)' },
    { name: 'describe', desc: 'Describe groups: --offsets (the default), --members or --state' },
    { name: 'offsets', desc: 'With --describe: per partition the committed offset, log end offset, lag and owning member' },
    { name: 'members', desc: 'With --describe: the members, their hosts, client ids and partition counts' },
    { name: 'state', value: 'STATES', optionalValue: true, desc: 'With --describe: coordinator, assignor, state and member count. With --list: show states, only these if given (e.g. stable,empty)' },
    { name: 'verbose', desc: 'With --describe: more columns (LEADER-EPOCH; epochs and assignments; group epochs)' },
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
  skein groups --describe --group demo-readers --members --verbose
  skein groups --reset-offsets --group demo-readers --topic demo --to-earliest --execute`,
}

export function runGroups(argv: readonly string[]): Promise<number> {
  return runCommand(SPEC, argv, async (args) => {
    const action = oneAction(args, ['list', 'describe', 'reset-offsets', 'delete'])
    for (const view of args.given(['offsets', 'members', 'verbose'])) if (action !== 'describe') throw new UsageError(`--${view} can only be used with --describe`)
    if (args.has('state') && action !== 'describe' && action !== 'list') throw new UsageError('--state can only be used with --describe or --list')
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
        case 'list':
          return await listGroups(admin, args)
        case 'describe': {
          const views = args.given(['offsets', 'members', 'state'])
          if (views.length > 1) throw new UsageError('--describe takes at most one of --offsets, --members, --state')
          const verbose = args.has('verbose')
          if (args.get('state') !== undefined) throw new UsageError('--describe --state takes no value (state filters are for --list)')
          // kafka-consumer-groups describes groups in the order of their ids.
          for (const g of [...new Set(await groups())].sort()) {
            if (views[0] === 'members') await describeMembers(admin, g, verbose)
            else if (views[0] === 'state') await describeState(admin, g, verbose)
            else await describeOffsets(admin, g, verbose)
          }
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

/** Kafka's MISSING_COLUMN_VALUE. */
const MISSING = '-'

/** Java's %-Ns: left-aligned, padded to at least width. */
const left = (s: string, width: number): string => s.padEnd(width)
const widest = (min: number, cells: readonly string[]): number => Math.max(min, ...cells.map((c) => c.length))

/**
 * What kafka-consumer-groups says on stderr about a group's state before its table; false when there is
 * nothing to print (no rows), as that tool decides.
 */
function announceState(d: GroupDescription, rows: number): boolean {
  if (d.state === 'Empty') process.stderr.write(`\nConsumer group '${d.groupId}' has no active members.\n`)
  else if (d.state === 'PreparingRebalance' || d.state === 'CompletingRebalance' || d.state === 'Assigning' || d.state === 'Reconciling') process.stderr.write(`\nWarning: Consumer group '${d.groupId}' is rebalancing.\n`)
  return rows > 0
}

interface OffsetRow {
  topic: string
  partition: number
  committed: CommittedOffset | undefined
  logEnd: number | undefined
  consumerId: string
  host: string
  clientId: string
}

/** kafka-consumer-groups --describe [--offsets] [--verbose]: one row per partition with an owner or a committed offset. */
async function describeOffsets(admin: Admin, groupId: string, verbose: boolean): Promise<void> {
  const d = await describeOne(admin, groupId)
  const committed = await admin.listConsumerGroupOffsets(groupId)
  const rows: OffsetRow[] = []
  const assigned = new Set<string>()
  const byPartition = (a: { topic: string; partition: number }, b: { topic: string; partition: number }): number => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition)
  // Members with the most partitions first (a stable sort keeps the coordinator's order otherwise).
  const members = d.members.filter((m) => m.assignment.length > 0).sort((a, b) => b.assignment.length - a.assignment.length)
  for (const m of members) {
    for (const tp of [...m.assignment].sort(byPartition)) {
      assigned.add(tpKey(tp.topic, tp.partition))
      rows.push({ ...tp, committed: committed.get(tpKey(tp.topic, tp.partition)), logEnd: undefined, consumerId: m.memberId, host: m.clientHost, clientId: m.clientId })
    }
  }
  const unassigned = [...committed.keys()].filter((k) => !assigned.has(k)).map((k) => ({ topic: k.split('\u0000')[0]!, partition: Number(k.split('\u0000')[1]) }))
  for (const tp of unassigned.sort(byPartition)) rows.push({ ...tp, committed: committed.get(tpKey(tp.topic, tp.partition)), logEnd: undefined, consumerId: MISSING, host: MISSING, clientId: MISSING })
  const ends = await logEndOffsets(admin, rows)
  for (const r of rows) r.logEnd = ends.get(tpKey(r.topic, r.partition))
  if (!announceState(d, rows.length)) return

  const cells = rows.map((r) => {
    const offset = r.committed?.offset
    const lag = offset === undefined || r.logEnd === undefined ? MISSING : String(r.logEnd - offset)
    const epoch = r.committed?.leaderEpoch ?? null
    return { groupId, topic: r.topic, partition: String(r.partition), epoch: epoch === null ? MISSING : String(epoch), offset: offset === undefined ? MISSING : String(offset), logEnd: r.logEnd === undefined ? MISSING : String(r.logEnd), lag, consumerId: r.consumerId, host: r.host, clientId: r.clientId }
  })
  const G = widest(15, cells.map((c) => c.groupId))
  const T = widest(15, cells.map((c) => c.topic))
  const C = widest(15, cells.map((c) => c.consumerId))
  const H = widest(15, cells.map((c) => c.host))
  const line = (c: (typeof cells)[number]): string =>
    `\n${left(c.groupId, G)} ${left(c.topic, T)} ${left(c.partition, 10)} ${verbose ? `${left(c.epoch, 15)} ` : ''}${left(c.offset, 15)} ${left(c.logEnd, 15)} ${left(c.lag, 15)} ${left(c.consumerId, C)} ${left(c.host, H)} ${c.clientId}`
  const header = { groupId: 'GROUP', topic: 'TOPIC', partition: 'PARTITION', epoch: 'LEADER-EPOCH', offset: 'CURRENT-OFFSET', logEnd: 'LOG-END-OFFSET', lag: 'LAG', consumerId: 'CONSUMER-ID', host: 'HOST', clientId: 'CLIENT-ID' }
  process.stdout.write(line(header) + cells.map(line).join('') + '\n')
}

/** Log end offsets; a partition without an answer (deleted topic, no leader) is left out and shows '-'. */
async function logEndOffsets(admin: Admin, tps: readonly { topic: string; partition: number }[]): Promise<Map<string, number>> {
  const out = new Map<string, number>()
  if (tps.length === 0) return out
  const unique = [...new Map(tps.map((tp) => [tpKey(tp.topic, tp.partition), { topic: tp.topic, partition: tp.partition, timestamp: LATEST_TIMESTAMP }])).values()]
  try {
    for (const [k, a] of await admin.listOffsets(unique)) out.set(k, a.offset)
  } catch (err) {
    if (!(err instanceof KafkaError)) throw err
    // One unknown topic fails the whole request: ask topic by topic, so the others still get their offsets.
    for (const topic of new Set(unique.map((q) => q.topic))) {
      const answers = await admin.listOffsets(unique.filter((q) => q.topic === topic)).catch((e: unknown) => {
        if (e instanceof KafkaError) return new Map<string, { offset: number }>()
        throw e
      })
      for (const [k, a] of answers) out.set(k, a.offset)
    }
  }
  return out
}

/** Kafka's assignment text: 'topic:0,1;other:2', topics sorted, partitions sorted. */
function assignmentText(tps: readonly { topic: string; partition: number }[]): string {
  if (tps.length === 0) return MISSING
  const byTopic = new Map<string, number[]>()
  for (const tp of tps) {
    let list = byTopic.get(tp.topic)
    if (list === undefined) byTopic.set(tp.topic, (list = []))
    list.push(tp.partition)
  }
  return [...byTopic].map(([topic, ps]) => `${topic}:${ps.sort((a, b) => a - b).join(',')}`).sort().join(';')
}

/** kafka-consumer-groups --describe --members [--verbose]. */
async function describeMembers(admin: Admin, groupId: string, verbose: boolean): Promise<void> {
  const d = await describeOne(admin, groupId)
  const printable = announceState(d, d.members.length)
  const rows = d.members.map((m) => ({ groupId, consumerId: m.memberId, instanceId: m.groupInstanceId ?? '', host: m.clientHost, clientId: m.clientId, partitions: String(m.assignment.length), current: assignmentText(m.assignment) }))
  const withInstance = rows.some((r) => r.instanceId !== '')
  // As kafka-consumer-groups: column widths come from the rows only when they are printed.
  const sized = printable ? rows : []
  const G = widest(15, sized.map((r) => r.groupId))
  const C = widest(15, sized.map((r) => r.consumerId))
  const I = widest(17, sized.map((r) => r.instanceId))
  const H = widest(15, sized.map((r) => r.host))
  const L = widest(15, sized.map((r) => r.clientId))
  const CA = widest(20, sized.map((r) => r.current))
  // Classic groups have no member epochs or target assignments (KIP-848 groups do): '-'.
  const TA = 20
  const head = (r: { groupId: string; consumerId: string; instanceId: string; host: string; clientId: string; partitions: string }): string =>
    `${left(r.groupId, G)} ${left(r.consumerId, C)} ${withInstance ? `${left(r.instanceId, I)} ` : ''}${left(r.host, H)} ${left(r.clientId, L)} ${left(r.partitions, 15)} `
  const tail = (epoch: string, current: string, targetEpoch: string, target: string): string => (verbose ? `${left(epoch, 15)} ${left(current, CA)} ${left(targetEpoch, 15)} ${left(target, TA)}` : '')
  let out = '\n' + head({ groupId: 'GROUP', consumerId: 'CONSUMER-ID', instanceId: 'GROUP-INSTANCE-ID', host: 'HOST', clientId: 'CLIENT-ID', partitions: '#PARTITIONS' }) + tail('CURRENT-EPOCH', 'CURRENT-ASSIGNMENT', 'TARGET-EPOCH', 'TARGET-ASSIGNMENT') + '\n'
  for (const r of rows) out += head(r) + tail(MISSING, r.current, MISSING, MISSING) + '\n'
  process.stdout.write(out)
}

/** kafka-consumer-groups --describe --state [--verbose]. */
async function describeState(admin: Admin, groupId: string, verbose: boolean): Promise<void> {
  const d = await describeOne(admin, groupId)
  announceState(d, 1)
  const coordinator = d.coordinator === null ? MISSING : `${d.coordinator.host}:${d.coordinator.port}  (${d.coordinator.nodeId})`
  const G = Math.max(15, groupId.length)
  const C = Math.max(25, coordinator.length)
  const line = (group: string, coord: string, strategy: string, state: string, epoch: string, targetEpoch: string, members: string): string =>
    `\n${left(group, G)} ${left(coord, C)} ${left(strategy, 20)} ${left(state, 20)} ${verbose ? `${left(epoch, 15)} ${left(targetEpoch, 25)} ` : ''}${members}`
  const header = line('GROUP', 'COORDINATOR (ID)', 'ASSIGNMENT-STRATEGY', 'STATE', 'GROUP-EPOCH', 'TARGET-ASSIGNMENT-EPOCH', '#MEMBERS')
  // Classic groups have no group epochs (KIP-848 consumer groups do): '-'.
  const epoch = (n: number | undefined): string => (n === undefined ? MISSING : String(n))
  const row = line(groupId, coordinator, d.protocol === '' ? MISSING : d.protocol, d.state, epoch(d.groupEpoch), epoch(d.assignmentEpoch), String(d.members.length))
  process.stdout.write(header + row + '\n')
}

/** Kafka's GroupState names: the classic ones and those of KIP-848 consumer groups (Assigning, Reconciling). */
const GROUP_STATES = ['Stable', 'Empty', 'PreparingRebalance', 'CompletingRebalance', 'Assigning', 'Reconciling', 'Dead']

/** kafka-consumer-groups --list [--state [STATES]]. */
async function listGroups(admin: Admin, args: import('./args.js').ParsedArgs): Promise<number> {
  const list = await admin.listGroups({
    onUnreachable: (b, err) => process.stderr.write(`Warning: broker ${b.nodeId} (${b.host}:${b.port}) could not be reached, the groups it coordinates are not listed: ${err.message}\n`),
  })
  if (!args.has('state')) {
    process.stdout.write(list.map((g) => `${g.groupId}\n`).join(''))
    return 0
  }
  const filter = args.get('state')
  let wanted: Set<string> | null = null
  if (filter !== undefined && filter.trim() !== '') {
    wanted = new Set()
    for (const name of filter.split(',').map((x) => x.trim())) {
      const state = GROUP_STATES.find((st) => st.toLowerCase() === name.toLowerCase())
      if (state === undefined) throw new UsageError(`Invalid state list '${filter}'. Valid states are: ${GROUP_STATES.join(', ')}`)
      wanted.add(state)
    }
  }
  const shown = list.filter((g) => wanted === null || wanted.has(g.state))
  const W = Math.max(15, ...shown.map((g) => g.groupId.length)) + 10
  process.stdout.write([`${left('GROUP', W)} ${left('STATE', 20)}`, ...shown.map((g) => `${left(g.groupId, W)} ${left(g.state === '' ? 'Unknown' : g.state, 20)}`)].map((l) => `${l}\n`).join(''))
  return 0
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
