// `skein reassign-partitions`: kafka-reassign-partitions with Kafka's JSON (version 1).
//   --generate: a proposal moving the topics of --topics-to-move-json-file ({"version":1,"topics":[{"topic":"t"}]})
//     onto --broker-list, with Kafka's rack-unaware assignment; prints the current and proposed assignments.
//   --execute: AlterPartitionReassignments for --reassignment-json-file
//     ({"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[2,3]}]}); prints the current
//     assignment (for a rollback). --throttle B sets leader/follower.replication.throttled.rate on the
//     brokers involved and the topics' leader.replication.throttled.replicas (the current replicas) and
//     follower.replication.throttled.replicas (the ones added), as Kafka's tool does.
//   --verify: each partition completed or still in progress; once all are done the throttles are removed.
//   --cancel: cancels the file's reassignments still in progress (the added replicas are removed).
import { readFileSync } from 'node:fs'
import { Admin, type AlterOp } from '../client/admin.js'
import { ErrorCode, errorName } from '../domain/errors.js'
import { UsageError, type CommandSpec } from './args.js'
import { adminOptions, BOOTSTRAP_OPTION, COMMAND_CONFIG_OPTION, COMMAND_PROPERTY_OPTION, oneAction, runCommand } from './common.js'

const SPEC: CommandSpec = {
  command: 'skein reassign-partitions',
  usage: 'skein reassign-partitions --bootstrap-server HOST:PORT (--generate --topics-to-move-json-file F --broker-list 1,2,3 | --execute|--verify|--cancel --reassignment-json-file F) [--throttle BYTES]',
  summary: 'Move partition replicas between brokers (kafka-reassign-partitions).',
  options: [
    BOOTSTRAP_OPTION,
    COMMAND_CONFIG_OPTION,
    COMMAND_PROPERTY_OPTION,
    { name: 'generate', desc: 'Propose an assignment of the topics in --topics-to-move-json-file over --broker-list (changes nothing)' },
    { name: 'execute', desc: 'Start the reassignment in --reassignment-json-file' },
    { name: 'verify', desc: 'Show whether each reassignment of the file completed; removes the throttles once all did' },
    { name: 'cancel', desc: 'Cancel the reassignments of the file still in progress' },
    { name: 'reassignment-json-file', value: 'FILE', desc: '{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[2,3]}]}' },
    { name: 'topics-to-move-json-file', value: 'FILE', desc: '{"version":1,"topics":[{"topic":"t"}]}' },
    { name: 'broker-list', value: 'IDS', desc: 'With --generate: the brokers to spread replicas over, comma-separated' },
    { name: 'throttle', value: 'BYTES', desc: 'With --execute: bytes/s for the moving replicas, as leader.replication.throttled.rate and follower.replication.throttled.rate on the brokers involved (--verify removes it)' },
  ],
  notes: `Examples:
  skein reassign-partitions --bootstrap-server 127.0.0.1:9092 --generate --topics-to-move-json-file topics.json --broker-list 1,2,3
  skein reassign-partitions --bootstrap-server 127.0.0.1:9092 --execute --reassignment-json-file plan.json --throttle 10000000
  skein reassign-partitions --bootstrap-server 127.0.0.1:9092 --verify --reassignment-json-file plan.json`,
}

export interface PlannedReplicas {
  topic: string
  partition: number
  replicas: number[]
}

function readJson(file: string): unknown {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    throw new UsageError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
  }
  try {
    return JSON.parse(text)
  } catch (err) {
    throw new UsageError(`${file} is not JSON: ${(err as Error).message}`)
  }
}

/** Kafka's reassignment JSON (version 1); log_dirs other than "any" are refused (one log dir per broker). */
export function parseReassignmentJson(doc: unknown, file: string): PlannedReplicas[] {
  const o = doc as { version?: unknown; partitions?: unknown }
  if (o === null || typeof o !== 'object' || !Array.isArray(o.partitions)) throw new UsageError(`${file}: expected {"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}]}`)
  if (o.version !== undefined && o.version !== 1) throw new UsageError(`${file}: unsupported version ${JSON.stringify(o.version)} (1 is)`)
  const out = o.partitions.map((p: unknown, i: number) => {
    const { topic, partition, replicas, log_dirs: logDirs } = (p ?? {}) as { topic?: unknown; partition?: unknown; replicas?: unknown; log_dirs?: unknown }
    if (typeof topic !== 'string' || !Number.isInteger(partition) || !Array.isArray(replicas) || !replicas.every((r) => Number.isInteger(r))) {
      throw new UsageError(`${file}: partitions[${i}] needs "topic", "partition" and "replicas" (broker ids)`)
    }
    if (replicas.length === 0) throw new UsageError(`${file}: partitions[${i}] has no replicas`)
    if (new Set(replicas).size !== replicas.length) throw new UsageError(`${file}: partitions[${i}] lists a broker twice: ${JSON.stringify(replicas)}`)
    if (logDirs !== undefined && (!Array.isArray(logDirs) || logDirs.length !== replicas.length || logDirs.some((d) => d !== 'any'))) {
      throw new UsageError(`${file}: partitions[${i}]: log_dirs other than "any" are not supported`)
    }
    return { topic, partition: partition as number, replicas: replicas as number[] }
  })
  const keys = out.map((p) => `${p.topic}-${p.partition}`)
  const dup = keys.find((k, i) => keys.indexOf(k) !== i)
  if (dup !== undefined) throw new UsageError(`${file}: partition ${dup} is listed twice`)
  return out
}

export function reassignmentJson(partitions: readonly PlannedReplicas[]): string {
  return JSON.stringify({
    version: 1,
    partitions: [...partitions]
      .sort((a, b) => (a.topic === b.topic ? a.partition - b.partition : a.topic < b.topic ? -1 : 1))
      .map((p) => ({ topic: p.topic, partition: p.partition, replicas: p.replicas, log_dirs: p.replicas.map(() => 'any') })),
  })
}

/** Kafka's rack-unaware replica assignment (AdminUtils.assignReplicasToBrokersRackUnaware). */
export function assignReplicas(brokers: readonly number[], partitions: number, replicationFactor: number, startIndex: number, shift: number): number[][] {
  const ids = [...brokers].sort((a, b) => a - b)
  const n = ids.length
  const out: number[][] = []
  let nextShift = shift
  for (let p = 0; p < partitions; p++) {
    if (p > 0 && p % n === 0) nextShift++
    const first = (p + startIndex) % n
    const r = [ids[first]!]
    for (let j = 0; j < replicationFactor - 1; j++) r.push(ids[(first + 1 + ((nextShift + j) % (n - 1))) % n]!)
    out.push(r)
  }
  return out
}

export function runReassignPartitions(argv: readonly string[]): Promise<number> {
  return runCommand(SPEC, argv, async (args) => {
    const action = oneAction(args, ['generate', 'execute', 'verify', 'cancel'])
    const throttle = args.int('throttle', { min: 1 })
    if (throttle !== undefined && action !== 'execute') throw new UsageError('--throttle goes with --execute')
    const admin = new Admin(adminOptions(args, 'skein reassign-partitions', 'skein-reassign-partitions'))
    try {
      if (action === 'generate') {
        const file = args.require('topics-to-move-json-file', 'with --generate')
        const doc = readJson(file) as { topics?: unknown }
        if (!Array.isArray(doc?.topics) || !doc.topics.every((t: unknown) => typeof (t as { topic?: unknown })?.topic === 'string')) {
          throw new UsageError(`${file}: expected {"version":1,"topics":[{"topic":"t"}]}`)
        }
        const topics = (doc.topics as { topic: string }[]).map((t) => t.topic)
        const brokerList = args.require('broker-list', 'with --generate').split(',').map((s) => s.trim()).filter((s) => s !== '')
        if (brokerList.length === 0 || !brokerList.every((b) => /^\d+$/.test(b))) throw new UsageError(`--broker-list must be broker ids, comma-separated`)
        const brokers = [...new Set(brokerList.map(Number))]
        const described = await admin.describeTopics(topics)
        const current: PlannedReplicas[] = []
        const proposed: PlannedReplicas[] = []
        for (const t of described) {
          const rf = t.partitions[0]?.replicas.length ?? 1
          if (rf > brokers.length) throw new UsageError(`topic ${t.name} has replication factor ${rf}, more than the ${brokers.length} brokers of --broker-list`)
          const plan = assignReplicas(brokers, t.partitions.length, rf, Math.floor(Math.random() * brokers.length), Math.floor(Math.random() * brokers.length))
          for (const p of t.partitions) {
            current.push({ topic: t.name, partition: p.partition, replicas: p.replicas })
            proposed.push({ topic: t.name, partition: p.partition, replicas: plan[p.partition]! })
          }
        }
        process.stdout.write(`Current partition replica assignment\n${reassignmentJson(current)}\n\nProposed partition reassignment configuration\n${reassignmentJson(proposed)}\n`)
        return 0
      }

      const file = args.require('reassignment-json-file', `with --${action}`)
      const plan = parseReassignmentJson(readJson(file), file)
      const topics = [...new Set(plan.map((p) => p.topic))]
      const described = new Map((await admin.describeTopics(topics)).map((t) => [t.name, t]))
      const currentOf = (p: PlannedReplicas): number[] => {
        const info = described.get(p.topic)?.partitions.find((x) => x.partition === p.partition)
        if (info === undefined) throw new UsageError(`partition ${p.topic}-${p.partition} does not exist`)
        return info.replicas
      }
      const name = (p: { topic: string; partition: number }): string => `${p.topic}-${p.partition}`

      if (action === 'execute') {
        const current = plan.map((p) => ({ ...p, replicas: currentOf(p) }))
        let out = `Current partition replica assignment\n\n${reassignmentJson(current)}\n\nSave this to use as the --reassignment-json-file option during rollback\n`
        if (throttle !== undefined) {
          await setThrottles(admin, plan, current, throttle)
          out += `Warning: You must run --verify periodically, until the reassignment completes, to ensure the throttle is removed.\nThe inter-broker throttle limit was set to ${throttle} B/s\n`
        }
        const results = await admin.alterPartitionReassignments(plan)
        const failed = results.filter((r) => r.errorCode !== ErrorCode.NONE)
        if (failed.length > 0) {
          process.stdout.write(out)
          throw new Error(`Error reassigning partition(s):\n${failed.map((r) => `${name(r)}: ${errorName(r.errorCode)}${r.errorMessage ? ` (${r.errorMessage})` : ''}`).join('\n')}`)
        }
        out += `Successfully started partition reassignment${plan.length === 1 ? '' : 's'} for ${plan.map(name).join(',')}\n`
        process.stdout.write(out)
        return 0
      }

      const ongoing = await admin.listPartitionReassignments(plan.map((p) => ({ topic: p.topic, partition: p.partition })))
      const inProgress = new Set(ongoing.map(name))
      if (action === 'cancel') {
        const toCancel = plan.filter((p) => inProgress.has(name(p)))
        if (toCancel.length === 0) {
          process.stdout.write('None of the specified partition reassignments are active.\n')
          return 0
        }
        const results = await admin.alterPartitionReassignments(toCancel.map((p) => ({ topic: p.topic, partition: p.partition, replicas: null })))
        const failed = results.filter((r) => r.errorCode !== ErrorCode.NONE && r.errorCode !== ErrorCode.NO_REASSIGNMENT_IN_PROGRESS)
        if (failed.length > 0) throw new Error(`Error cancelling partition reassignment(s):\n${failed.map((r) => `${name(r)}: ${errorName(r.errorCode)}`).join('\n')}`)
        process.stdout.write(`Successfully cancelled partition reassignment${toCancel.length === 1 ? '' : 's'} for: ${toCancel.map(name).join(',')}\n`)
        return 0
      }

      // verify
      let out = 'Status of partition reassignment:\n'
      let allDone = true
      for (const p of plan) {
        const current = currentOf(p)
        if (inProgress.has(name(p))) {
          allDone = false
          out += `Reassignment of partition ${name(p)} is still in progress.\n`
        } else if (current.length === p.replicas.length && current.every((r, i) => r === p.replicas[i])) {
          out += `Reassignment of partition ${name(p)} is completed.\n`
        } else {
          out += `There is no active reassignment of partition ${name(p)}, but replica set is ${current.join(',')} rather than ${p.replicas.join(',')}.\n`
        }
      }
      if (allDone) out += await clearThrottles(admin, topics)
      process.stdout.write(out)
      return 0
    } finally {
      await admin.close()
    }
  })
}

const THROTTLE_RATES = ['leader.replication.throttled.rate', 'follower.replication.throttled.rate']
const THROTTLED_REPLICAS = ['leader.replication.throttled.replicas', 'follower.replication.throttled.replicas']

/** Kafka's tool: the rate on every broker involved; per topic, the current replicas as leaders and the added ones as followers. */
async function setThrottles(admin: Admin, plan: readonly PlannedReplicas[], current: readonly PlannedReplicas[], rate: number): Promise<void> {
  const brokers = new Set<number>()
  const leaders = new Map<string, string[]>()
  const followers = new Map<string, string[]>()
  plan.forEach((p, i) => {
    const now = current[i]!.replicas
    for (const b of [...now, ...p.replicas]) brokers.add(b)
    const moving = p.replicas.filter((b) => !now.includes(b))
    if (moving.length === 0) return
    leaders.set(p.topic, [...(leaders.get(p.topic) ?? []), ...now.map((b) => `${p.partition}:${b}`)])
    followers.set(p.topic, [...(followers.get(p.topic) ?? []), ...moving.map((b) => `${p.partition}:${b}`)])
  })
  for (const b of [...brokers].sort((x, y) => x - y)) {
    await admin.alterConfigs({ type: 'broker', name: String(b) }, THROTTLE_RATES.map((name) => ({ op: 'set', name, value: String(rate) }) as AlterOp))
  }
  for (const [topic, list] of leaders) {
    await admin.alterConfigs({ type: 'topic', name: topic }, [
      { op: 'set', name: 'leader.replication.throttled.replicas', value: list.join(',') },
      { op: 'set', name: 'follower.replication.throttled.replicas', value: (followers.get(topic) ?? []).join(',') },
    ])
  }
}

async function clearThrottles(admin: Admin, topics: readonly string[]): Promise<string> {
  const { brokers } = await admin.describeCluster()
  const ids = brokers.map((b) => b.nodeId).sort((a, b) => a - b)
  for (const id of ids) await admin.alterConfigs({ type: 'broker', name: String(id) }, THROTTLE_RATES.map((name) => ({ op: 'delete', name }) as AlterOp))
  for (const t of topics) await admin.alterConfigs({ type: 'topic', name: t }, THROTTLED_REPLICAS.map((name) => ({ op: 'delete', name }) as AlterOp))
  return `Clearing broker-level throttles on brokers ${ids.join(',')}\n${topics.map((t) => `Clearing topic-level throttles on topic ${t}\n`).join('')}`
}
