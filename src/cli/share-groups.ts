// `skein share-groups`: kafka-share-groups (KIP-932 share groups). List share groups (with --state,
// their states), describe them as that tool does (--offsets, the default: per share-partition the start
// offset and lag; --members: the members and their assignments; --state: coordinator, state and member
// count; --verbose adds its extra columns), reset their start offsets (--dry-run or --execute, one of
// them required as Kafka requires it; only while the group has no members), delete the state of whole
// topics (--delete-offsets) and delete groups. The tables are laid out column for column as
// kafka-share-groups prints them, because scripts parse them.
import { Admin } from '../client/admin.js'
import type { ShareGroupDescription, SharePartitionOffsetInfo } from '../client/share-group-admin.js'
import { EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, tpKey } from '../client/offsets.js'
import { ErrorCode, KafkaError } from '../domain/errors.js'
import { parseIntArg, UsageError, type CommandSpec, type ParsedArgs } from './args.js'
import { adminOptions, BOOTSTRAP_OPTION, COMMAND_CONFIG_OPTION, COMMAND_PROPERTY_OPTION, describeError, oneAction, runCommand } from './common.js'
import { parseDateTime } from './groups.js'

const SPEC: CommandSpec = {
  command: 'skein share-groups',
  usage: 'skein share-groups [--bootstrap-server HOST:PORT] --list|--describe|--reset-offsets|--delete-offsets|--delete [options]',
  summary: 'List, describe, reset and delete share groups (kafka-share-groups, KIP-932).',
  options: [
    BOOTSTRAP_OPTION,
    COMMAND_CONFIG_OPTION,
    COMMAND_PROPERTY_OPTION,
    { name: 'list', desc: 'List share group ids (with --state: and their states)' },
    { name: 'describe', desc: 'Describe share groups: --offsets (the default), --members or --state' },
    { name: 'offsets', desc: 'With --describe: per share-partition the start offset and lag' },
    { name: 'members', desc: 'With --describe: the members, their hosts, client ids and assignments' },
    { name: 'state', value: 'STATES', optionalValue: true, desc: 'With --describe: coordinator, state and member count. With --list: show states, only these if given (e.g. stable,empty)' },
    { name: 'verbose', desc: 'With --describe: more columns (LEADER-EPOCH; MEMBER-EPOCH; GROUP-EPOCH and ASSIGNMENT-EPOCH)' },
    { name: 'reset-offsets', desc: 'Set the start offsets of a share group (it must have no members); needs --dry-run or --execute' },
    { name: 'delete-offsets', desc: 'Delete the share-partition state of whole topics (--topic) of a share group with no members' },
    { name: 'delete', desc: 'Delete share groups (they must have no members)' },
    { name: 'group', value: 'GROUP', repeat: true, desc: 'The share group' },
    { name: 'all-groups', desc: 'Every share group (--describe, --delete)' },
    { name: 'topic', value: 'TOPIC[:P,P]', repeat: true, desc: 'Topic (for --reset-offsets optionally partitions)' },
    { name: 'all-topics', desc: 'Reset every share-partition the group has state for' },
    { name: 'to-earliest', desc: 'Reset to the earliest offset' },
    { name: 'to-latest', desc: 'Reset to the log end offset' },
    { name: 'to-offset', value: 'N', desc: "Reset to offset N (clamped to the partition's range)" },
    { name: 'to-datetime', value: 'YYYY-MM-DDTHH:mm:SS.sss', desc: 'Reset to the first offset at or after this time (UTC unless an offset like +02:00 is given)' },
    { name: 'dry-run', desc: 'Show the new offsets without changing anything' },
    { name: 'execute', desc: 'Set the new offsets' },
    { name: 'timeout', value: 'MS', desc: 'Deadline of each admin call, retries included (default 5000, as kafka-share-groups)' },
  ],
  notes: `Examples:
  skein share-groups --list --state
  skein share-groups --describe --group workers                  # START-OFFSET and LAG per share-partition
  skein share-groups --describe --group workers --members --verbose
  skein share-groups --reset-offsets --group workers --topic jobs --to-earliest --execute
  skein share-groups --delete-offsets --group workers --topic jobs
  skein share-groups --delete --group workers

LAG is the partition's high watermark minus the share-partition start offset: the records the group has
not finished with, those in flight included.`,
}

/** Kafka's MISSING_COLUMN_VALUE. */
const MISSING = '-'
/** Java's %-Ns. */
const left = (s: string, width: number): string => s.padEnd(width)
const widest = (min: number, cells: readonly string[]): number => Math.max(min, ...cells.map((c) => c.length))
/** Kafka's share group states (GroupState.groupStatesForType(SHARE)). */
const SHARE_STATES = ['Empty', 'Stable', 'Dead']

export function runShareGroups(argv: readonly string[]): Promise<number> {
  return runCommand(SPEC, argv, async (args) => {
    const action = oneAction(args, ['list', 'describe', 'reset-offsets', 'delete-offsets', 'delete'])
    for (const view of args.given(['offsets', 'members', 'verbose'])) if (action !== 'describe') throw new UsageError(`--${view} can only be used with --describe`)
    if (args.has('state') && action !== 'describe' && action !== 'list') throw new UsageError('--state can only be used with --describe or --list')
    if (args.has('all-groups') && action !== 'describe' && action !== 'delete') throw new UsageError('--all-groups can only be used with --describe or --delete')
    const opts = adminOptions(args, 'skein share-groups', 'skein-share-groups')
    opts.apiTimeoutMs = args.int('timeout', { min: 1 }) ?? 5000
    opts.apiTimeoutName = '--timeout'
    const admin = new Admin(opts)
    try {
      switch (action) {
        case 'list':
          return await listGroups(admin, args)
        case 'describe':
          return await describe(admin, args)
        case 'reset-offsets':
          return await resetOffsets(admin, args)
        case 'delete-offsets':
          return await deleteOffsets(admin, args)
        default:
          return await deleteGroups(admin, args)
      }
    } finally {
      await admin.close()
    }
  })
}

function oneGroup(args: ParsedArgs, action: string): string {
  const groups = args.all('group')
  if (groups.length !== 1) throw new UsageError(`--${action} needs exactly one --group`)
  return groups[0]!
}

const unreachable = (b: { nodeId: number; host: string; port: number }, err: Error): void => {
  process.stderr.write(`Warning: broker ${b.nodeId} (${b.host}:${b.port}) could not be reached, the share groups it coordinates are not listed: ${err.message}\n`)
}

/** kafka-share-groups --list [--state [STATES]]. */
async function listGroups(admin: Admin, args: ParsedArgs): Promise<number> {
  if (!args.has('state')) {
    const list = await admin.listShareGroups({ onUnreachable: unreachable })
    process.stdout.write(list.map((g) => `${g.groupId}\n`).join(''))
    return 0
  }
  const filter = args.get('state')
  const states: string[] = []
  if (filter !== undefined && filter.trim() !== '') {
    for (const name of filter.split(',').map((x) => x.trim())) {
      const state = SHARE_STATES.find((s) => s.toLowerCase() === name.toLowerCase())
      if (state === undefined) throw new UsageError(`Invalid state list '${filter}'. Valid states are: ${SHARE_STATES.join(', ')}`)
      states.push(state)
    }
  }
  const list = await admin.listShareGroups({ states, onUnreachable: unreachable })
  const G = widest(15, list.map((g) => g.groupId))
  process.stdout.write([`${left('GROUP', G)} STATE`, ...list.map((g) => `${left(g.groupId, G)} ${g.state === '' ? 'Unknown' : g.state}`)].map((l) => `${l}\n`).join(''))
  return 0
}

/** What kafka-share-groups says on stderr before a group's members or state; false when there are no rows to print. */
function announceState(d: ShareGroupDescription, rows: number): boolean {
  if (d.state === 'Empty') process.stderr.write(`\nShare group '${d.groupId}' has no active members.\n`)
  return rows > 0
}

async function describe(admin: Admin, args: ParsedArgs): Promise<number> {
  const views = args.given(['offsets', 'members', 'state'])
  if (views.length > 1) throw new UsageError('--describe takes at most one of --offsets, --members, --state')
  if (args.get('state') !== undefined) throw new UsageError('--describe --state takes no value (state filters are for --list)')
  const verbose = args.has('verbose')
  let ids: string[]
  if (args.has('all-groups')) ids = (await admin.listShareGroups({ onUnreachable: unreachable })).map((g) => g.groupId)
  else {
    ids = args.all('group')
    if (ids.length === 0) throw new UsageError('--describe needs --group GROUP or --all-groups')
  }
  // kafka-share-groups describes groups in the order of their ids.
  for (const groupId of [...new Set(ids)].sort()) {
    const [d] = await admin.describeShareGroups([groupId])
    if (views[0] === 'members') printMembers(d!, verbose)
    else if (views[0] === 'state') printState(d!, verbose)
    else printOffsets(groupId, await admin.describeShareGroupOffsets(groupId), verbose)
  }
  return 0
}

/** kafka-share-groups --describe [--offsets] [--verbose]. */
function printOffsets(groupId: string, offsets: ReadonlyMap<string, SharePartitionOffsetInfo>, verbose: boolean): void {
  const rows = [...offsets.values()].sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition))
  if (rows.length === 0) {
    process.stdout.write(`\nShare group '${groupId}' has no offset information.\n`)
    return
  }
  const G = Math.max(15, groupId.length)
  const T = widest(15, rows.map((r) => r.topic))
  const text = (n: number | null): string => (n === null ? MISSING : String(n))
  const fmt = (group: string, topic: string, partition: string, epoch: string, offset: string, lag: string): string =>
    `\n${left(group, G)} ${left(topic, T)} ${left(partition, 10)} ${verbose ? `${left(epoch, 13)} ` : ''}${left(offset, 13)} ${lag}`
  let out = fmt('GROUP', 'TOPIC', 'PARTITION', 'LEADER-EPOCH', 'START-OFFSET', 'LAG')
  for (const r of rows) out += fmt(groupId, r.topic, String(r.partition), text(r.leaderEpoch), text(r.startOffset), text(r.lag))
  process.stdout.write(out + '\n')
}

/** Kafka's assignment text: 'topic:0,1;other:2', topics sorted, partitions sorted. */
function assignmentText(tps: readonly { topic: string; partition: number }[]): string {
  const byTopic = new Map<string, number[]>()
  for (const tp of tps) byTopic.set(tp.topic, [...(byTopic.get(tp.topic) ?? []), tp.partition])
  return [...byTopic].map(([topic, ps]) => `${topic}:${ps.sort((a, b) => a - b).join(',')}`).sort().join(';')
}

/** kafka-share-groups --describe --members [--verbose]. */
function printMembers(d: ShareGroupDescription, verbose: boolean): void {
  const members = [...d.members].sort((a, b) => (a.memberId < b.memberId ? -1 : a.memberId > b.memberId ? 1 : 0))
  if (!announceState(d, members.length)) return
  const G = Math.max(15, d.groupId.length)
  const C = widest(15, members.map((m) => m.memberId))
  const H = widest(15, members.map((m) => m.clientHost))
  const L = widest(15, members.map((m) => m.clientId))
  const fmt = (consumerId: string, host: string, clientId: string, partitions: string, epoch: string, assignment: string, group = d.groupId): string =>
    `\n${left(group, G)} ${left(consumerId, C)} ${left(host, H)} ${left(clientId, L)} ${left(partitions, 12)} ${verbose ? `${left(epoch, 13)} ` : ''}${assignment}`
  let out = fmt('CONSUMER-ID', 'HOST', 'CLIENT-ID', '#PARTITIONS', 'MEMBER-EPOCH', 'ASSIGNMENT', 'GROUP')
  for (const m of members) out += fmt(m.memberId, m.clientHost, m.clientId, String(m.assignment.length), String(m.memberEpoch), assignmentText(m.assignment))
  process.stdout.write(out + '\n')
}

/** kafka-share-groups --describe --state [--verbose]. */
function printState(d: ShareGroupDescription, verbose: boolean): void {
  announceState(d, 1)
  const coordinator = d.coordinator === null ? MISSING : `${d.coordinator.host}:${d.coordinator.port}  (${d.coordinator.nodeId})`
  const G = Math.max(15, d.groupId.length)
  const C = Math.max(25, coordinator.length)
  const fmt = (group: string, coord: string, state: string, epoch: string, assignmentEpoch: string, members: string): string =>
    `\n${left(group, G)} ${left(coord, C)} ${left(state, 15)} ${verbose ? `${left(epoch, 12)} ${left(assignmentEpoch, 17)} ` : ''}${members}`
  process.stdout.write(
    fmt('GROUP', 'COORDINATOR (ID)', 'STATE', 'GROUP-EPOCH', 'ASSIGNMENT-EPOCH', '#MEMBERS') +
      fmt(d.groupId, coordinator, d.state, String(d.groupEpoch), String(d.assignmentEpoch), String(d.members.length)) +
      '\n',
  )
}

/** kafka-share-groups --reset-offsets: Kafka's GroupOffsetsResetter scenarios for a share group with no members. */
async function resetOffsets(admin: Admin, args: ParsedArgs): Promise<number> {
  const groupId = oneGroup(args, 'reset-offsets')
  const spec = oneAction(args, ['to-earliest', 'to-latest', 'to-offset', 'to-datetime'])
  if (args.has('dry-run') && args.has('execute')) throw new UsageError('--dry-run and --execute cannot be used together')
  if (!args.has('dry-run') && !args.has('execute')) throw new UsageError('Option [reset-offsets] takes the option: [execute] or [dry-run]')
  if (args.has('topic') === args.has('all-topics')) throw new UsageError('--reset-offsets needs one of --topic TOPIC or --all-topics')
  // Kafka: only an empty group (or one that does not exist yet) may be reset.
  try {
    const [d] = await admin.describeShareGroups([groupId])
    if (d !== undefined && d.state !== 'Empty' && d.state !== 'Dead') throw new KafkaError(ErrorCode.NON_EMPTY_GROUP, `Share group '${groupId}' is not empty.`)
  } catch (err) {
    if (!(err instanceof KafkaError) || err.code !== ErrorCode.GROUP_ID_NOT_FOUND) throw err
  }
  let tps: { topic: string; partition: number }[] = []
  if (args.has('all-topics')) {
    tps = [...(await admin.describeShareGroupOffsets(groupId)).values()].map((i) => ({ topic: i.topic, partition: i.partition }))
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
  const earliest = tps.length === 0 ? new Map() : await admin.listOffsets(tps.map((tp) => ({ ...tp, timestamp: EARLIEST_TIMESTAMP })))
  const latest = tps.length === 0 ? new Map() : await admin.listOffsets(tps.map((tp) => ({ ...tp, timestamp: LATEST_TIMESTAMP })))
  let byTime: Map<string, { offset: number }> | null = null
  if (spec === 'to-datetime' && tps.length > 0) byTime = await admin.listOffsets(tps.map((tp) => ({ ...tp, timestamp: parseDateTime(args.get('to-datetime')!) })))
  const plan = tps.map((tp) => {
    const k = tpKey(tp.topic, tp.partition)
    const low: number = earliest.get(k)?.offset ?? 0
    const high: number = latest.get(k)?.offset ?? 0
    let offset: number
    if (spec === 'to-earliest') offset = low
    else if (spec === 'to-latest') offset = high
    else if (spec === 'to-offset') offset = Math.min(Math.max(parseIntArg('to-offset', args.get('to-offset')!, { min: 0 }), low), high)
    else {
      const o = byTime?.get(k)?.offset ?? -1
      offset = o < 0 ? high : o
    }
    return { ...tp, offset }
  })
  if (args.has('execute') && plan.length > 0) await admin.alterShareGroupOffsets(groupId, plan)
  // Kafka's GroupOffsetsResetter.printOffsetsToReset.
  const fmt = (g: string, t: string, p: string, o: string): string => `\n${left(g, 30)} ${left(t, 30)} ${left(p, 10)} ${left(o, 15)}`
  let out = plan.length === 0 ? '' : fmt('GROUP', 'TOPIC', 'PARTITION', 'NEW-OFFSET')
  for (const p of plan) out += fmt(groupId, p.topic, String(p.partition), String(p.offset))
  process.stdout.write(out + '\n')
  return 0
}

/** kafka-share-groups --delete-offsets --group G --topic T...: a TOPIC / STATUS table. */
async function deleteOffsets(admin: Admin, args: ParsedArgs): Promise<number> {
  const groupId = oneGroup(args, 'delete-offsets')
  const topics = [...new Set(args.all('topic'))]
  if (topics.length === 0) throw new UsageError('--delete-offsets needs --topic TOPIC')
  if (topics.some((t) => t.includes(':'))) throw new UsageError('--delete-offsets takes whole topics (--topic TOPIC, no partitions)')
  let results: Map<string, KafkaError | null>
  try {
    results = await admin.deleteShareGroupOffsets(groupId, topics)
  } catch (err) {
    if (!(err instanceof KafkaError)) throw err
    process.stdout.write(`\nError: ${describeError(err)}\n`)
    return 1
  }
  const T = widest(15, topics)
  let out = `\n${left('TOPIC', T)} STATUS`
  for (const t of [...topics].sort()) {
    const e = results.get(t)
    out += `\n${left(t, T)} ${e === undefined || e === null ? 'Successful' : `Error: ${describeError(e)}`}`
  }
  process.stdout.write(out + '\n')
  return [...results.values()].some((e) => e !== null) ? 1 : 0
}

/** kafka-share-groups --delete: only listed, empty share groups are sent to be deleted. */
async function deleteGroups(admin: Admin, args: ParsedArgs): Promise<number> {
  const listed = await admin.listShareGroups({ onUnreachable: unreachable })
  const ids = args.has('all-groups') ? listed.map((g) => g.groupId) : args.all('group')
  if (ids.length === 0) throw new UsageError('--delete needs --group GROUP or --all-groups')
  const failed = new Map<string, string>()
  const toDelete: string[] = []
  for (const groupId of new Set(ids)) {
    const l = listed.find((g) => g.groupId === groupId)
    if (l === undefined) failed.set(groupId, `Group '${groupId}' is not a share group.`)
    else if (l.state === 'Dead') failed.set(groupId, `Share group '${groupId}' group state is DEAD.`)
    else if (l.state !== 'Empty') failed.set(groupId, `Share group '${groupId}' is not EMPTY.`)
    else toDelete.push(groupId)
  }
  const results = toDelete.length === 0 ? new Map<string, KafkaError | null>() : await admin.deleteShareGroups(toDelete)
  const deleted: string[] = []
  for (const [g, e] of results) {
    if (e === null) deleted.push(g)
    else failed.set(g, describeError(e))
  }
  const quoted = (gs: readonly string[]): string => gs.map((g) => `'${g}'`).join(', ')
  if (failed.size === 0) {
    process.stdout.write(`Deletion of requested share groups (${quoted(deleted)}) was successful.\n`)
    return 0
  }
  let out = '\nError: Deletion of some share groups failed:\n'
  for (const [g, why] of failed) out += `* Group '${g}' could not be deleted due to: ${why}\n`
  if (deleted.length > 0) out += `\nThese share groups were deleted successfully: ${quoted(deleted)}\n`
  process.stdout.write(out)
  return 1
}
