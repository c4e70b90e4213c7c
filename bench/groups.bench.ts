// Consumer-group benchmark (node dist/bench/groups.bench.js) against a real broker child process
// (dist/src/main.js, group.initial.rebalance.delay.ms=0), driven by Skein's own client (src/client
// GroupMember: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit), each member on its own
// connection as separate consumers would be.
// 1. Rebalance time of a 10-member group on a 20-partition topic, three ways:
//    - cold: 10 members join an empty group at once; from the 10th JoinGroup until all 10 hold their
//      assignment of one common generation (the group is Stable and every SyncGroup answered);
//    - join: a 10th member joins a Stable group of 9; from its JoinGroup until all 10 hold the new
//      generation's assignment;
//    - leave: one of 10 sends LeaveGroup; from the LeaveGroup until the 9 others hold the next one.
//    Members that are already in the group learn about a rebalance from their next Heartbeat (as in
//    Kafka), so join and leave include up to one heartbeat.interval.ms (printed with the figures; the
//    change comes at a random point of the heartbeat period, so about half of it on average).
// 2. OffsetCommit throughput of one client that is a member of a Stable group (the commit carries its
//    generation and member id and is appended to __consumer_offsets before the answer): commits/s and
//    latency for 1-partition and 50-partition commits, one at a time and 16 in flight on the connection.
// Env: BENCH_ROUNDS (rebalance rounds, default 5), BENCH_SECONDS (per commit run, default 2),
//      BENCH_HEARTBEAT_MS (default 100).
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { cpus, tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Admin, Cluster, GroupMember } from '../src/client/index.js'

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 2)
const HEARTBEAT_MS = Number(process.env.BENCH_HEARTBEAT_MS ?? 100)
const MEMBERS = 10
const REBALANCE_PARTITIONS = 20
const COMMIT_PARTITIONS = 50
const IN_FLIGHT = 16
const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..')

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const srv = createServer()
    srv.once('error', reject)
    srv.listen({ host: '127.0.0.1', port: 0 }, () => {
      const addr = srv.address()
      srv.close(() => resolvePort(typeof addr === 'object' && addr !== null ? addr.port : 0))
    })
  })
}

interface BrokerChild {
  proc: ChildProcess
  bootstrap: string
  stop(): Promise<void>
}

async function startBroker(): Promise<BrokerChild> {
  const dataDir = mkdtempSync(join(tmpdir(), 'skein-bench-groups-'))
  const port = await freePort()
  const overrides = [`listeners=PLAINTEXT://127.0.0.1:${port}`, `log.dirs=${dataDir}`, 'io.threads=1', 'group.initial.rebalance.delay.ms=0', 'offsets.topic.num.partitions=5']
  const proc = spawn(process.execPath, [join(REPO_ROOT, 'dist', 'src', 'main.js'), ...overrides.flatMap((o) => ['--override', o])], {
    cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, SKEIN_LOG_LEVEL: 'info' },
  })
  let out = ''
  await new Promise<void>((ready, fail) => {
    const timer = setTimeout(() => fail(new Error(`broker not ready after 20 s:\n${out}`)), 20_000)
    proc.stdout!.on('data', (d: Buffer) => {
      if (out.length < 1 << 16) out += d.toString()
      if (/"msg":"[^"]*ready/.test(out)) {
        clearTimeout(timer)
        ready()
      }
    })
    proc.stderr!.on('data', (d: Buffer) => {
      if (out.length < 1 << 16) out += d.toString()
    })
    proc.once('exit', (code, signal) => {
      clearTimeout(timer)
      fail(new Error(`broker exited (${code ?? signal}) before ready:\n${out}`))
    })
  })
  return {
    proc,
    bootstrap: `127.0.0.1:${port}`,
    async stop() {
      const exited = new Promise<void>((r) => proc.once('exit', () => r()))
      proc.kill('SIGTERM')
      const timer = setTimeout(() => proc.kill('SIGKILL'), 15_000)
      await exited
      clearTimeout(timer)
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

/** One group member on its own connection; rejoins whenever a heartbeat asks for it. */
class Member {
  readonly cluster: Cluster
  readonly group: GroupMember
  assignment: number[] = []
  generation = -1
  private running = true
  private loop: Promise<void> | null = null

  constructor(bootstrap: string, groupId: string, private readonly topic: string, private readonly onAssigned: () => void) {
    this.cluster = new Cluster({ bootstrapServers: bootstrap, clientId: 'bench-groups' })
    this.group = new GroupMember(this.cluster, { groupId, sessionTimeoutMs: 10_000, rebalanceTimeoutMs: 10_000, heartbeatIntervalMs: HEARTBEAT_MS, assignors: ['range'] })
  }

  /** Starts the member: the first JoinGroup goes out now (synchronously up to its first await). */
  start(): void {
    this.loop = (async () => {
      while (this.running) {
        if (this.group.heartbeatError !== null) throw this.group.heartbeatError
        if (this.group.needsRejoin) {
          const assigned = await this.group.join([this.topic])
          if (!this.running) break
          this.assignment = assigned.map((tp) => tp.partition)
          this.generation = this.group.generationId
          this.onAssigned()
        } else {
          await sleep(2)
        }
      }
    })()
  }

  async leave(): Promise<void> {
    this.running = false
    await this.group.leave()
    await this.loop
    await this.cluster.close()
  }
}

/** A group whose settle() resolves when every member holds one generation's complete assignment. */
class BenchGroup {
  readonly members: Member[] = []
  private waiter: { minGeneration: number; resolve: (at: number) => void } | null = null

  constructor(private readonly bootstrap: string, readonly groupId: string, private readonly topic: string, private readonly partitions: number) {}

  add(): Member {
    const m = new Member(this.bootstrap, this.groupId, this.topic, () => this.check())
    this.members.push(m)
    return m
  }

  private settledGeneration(): number {
    const g = this.members[0]?.generation ?? -1
    if (g < 0 || this.members.some((m) => m.generation !== g || m.group.needsRejoin)) return -1
    const all = this.members.flatMap((m) => m.assignment)
    return all.length === this.partitions && new Set(all).size === this.partitions ? g : -1
  }

  private check(): void {
    const w = this.waiter
    if (w === null) return
    const g = this.settledGeneration()
    if (g >= w.minGeneration) {
      this.waiter = null
      w.resolve(performance.now())
    }
  }

  /** Resolves the time (performance.now) at which a generation >= minGeneration settled. */
  settle(minGeneration: number, timeoutMs = 30_000): Promise<number> {
    return new Promise((resolveAt, reject) => {
      const timer = setTimeout(() => reject(new Error(`group ${this.groupId} did not settle within ${timeoutMs} ms`)), timeoutMs)
      this.waiter = {
        minGeneration,
        resolve: (at) => {
          clearTimeout(timer)
          resolveAt(at)
        },
      }
      this.check()
    })
  }

  generation(): number {
    return Math.max(...this.members.map((m) => m.generation))
  }

  async close(): Promise<void> {
    await Promise.all(this.members.splice(0).map((m) => m.leave()))
  }
}

function stats(name: string, ms: number[]): Record<string, string | number> {
  const s = [...ms].sort((a, b) => a - b)
  const pick = (q: number): number => s[Math.min(s.length - 1, Math.floor(q * s.length))]!
  return { scenario: name, rounds: s.length, 'min ms': s[0]!.toFixed(1), 'median ms': pick(0.5).toFixed(1), 'max ms': s[s.length - 1]!.toFixed(1), 'mean ms': (s.reduce((a, b) => a + b, 0) / s.length).toFixed(1) }
}

async function rebalances(bootstrap: string, topic: string): Promise<Array<Record<string, string | number>>> {
  const cold: number[] = []
  const joined: number[] = []
  const left: number[] = []
  for (let round = 0; round < ROUNDS; round++) {
    // Cold start: ten members join an empty group at once.
    const a = new BenchGroup(bootstrap, `bench-cold-${round}`, topic, REBALANCE_PARTITIONS)
    for (let i = 0; i < MEMBERS; i++) a.add()
    for (const m of a.members.slice(0, MEMBERS - 1)) m.start()
    const t0 = performance.now()
    a.members[MEMBERS - 1]!.start()
    const settled = a.settle(0)
    cold.push((await settled) - t0)
    await a.close()

    // A 10th member joins a Stable group of nine, then one of the ten leaves.
    const b = new BenchGroup(bootstrap, `bench-warm-${round}`, topic, REBALANCE_PARTITIONS)
    for (let i = 0; i < MEMBERS - 1; i++) b.add().start()
    await b.settle(0)
    // Stable for a few heartbeats before the change, which comes at a random point of the members'
    // heartbeat period (they started their timers together, at the last SyncGroup).
    await sleep(HEARTBEAT_MS * (3 + Math.random()))
    const before = b.generation()
    const tenth = b.add()
    const t1 = performance.now()
    tenth.start()
    joined.push((await b.settle(before + 1)) - t1)
    await sleep(HEARTBEAT_MS * (3 + Math.random()))
    const gen = b.generation()
    const leaver = b.members.splice(3, 1)[0]!
    const t2 = performance.now()
    const settledAfterLeave = b.settle(gen + 1)
    await leaver.leave()
    left.push((await settledAfterLeave) - t2)
    await b.close()
  }
  return [
    stats(`cold: ${MEMBERS} join an empty group`, cold),
    stats(`join: 10th joins a Stable group of ${MEMBERS - 1}`, joined),
    stats(`leave: 1 of ${MEMBERS} leaves`, left),
  ]
}

async function commits(bootstrap: string, topic: string): Promise<Array<Record<string, string | number>>> {
  const group = new BenchGroup(bootstrap, 'bench-commit', topic, COMMIT_PARTITIONS)
  const member = group.add()
  member.start()
  await group.settle(0)
  const rows: Array<Record<string, string | number>> = []
  let next = 1
  // Warm-up (JIT on both sides, the __consumer_offsets partition's first appends), not counted.
  for (const warmEnd = performance.now() + 500; performance.now() < warmEnd; ) await member.group.commit([{ topic, partition: 0, offset: next++ }])
  for (const [width, inFlight] of [[1, 1], [1, IN_FLIGHT], [COMMIT_PARTITIONS, 1], [COMMIT_PARTITIONS, IN_FLIGHT]] as const) {
    const latencies: number[] = []
    const end = performance.now() + SECONDS * 1000
    const start = performance.now()
    const worker = async (): Promise<void> => {
      while (performance.now() < end) {
        const offset = next++
        const offsets = Array.from({ length: width }, (_, p) => ({ topic, partition: p, offset }))
        const t = performance.now()
        await member.group.commit(offsets)
        latencies.push(performance.now() - t)
      }
    }
    await Promise.all(Array.from({ length: inFlight }, worker))
    const s = (performance.now() - start) / 1000
    latencies.sort((a, b) => a - b)
    rows.push({
      commit: `${width} partition${width === 1 ? '' : 's'}`,
      'in flight': inFlight,
      'commits/s': Math.round(latencies.length / s),
      'offsets/s': Math.round((latencies.length * width) / s),
      'p50 ms': latencies[Math.floor(latencies.length * 0.5)]!.toFixed(2),
      'p99 ms': latencies[Math.floor(latencies.length * 0.99)]!.toFixed(2),
    })
  }
  // The last commit is what the group holds.
  const committed = await member.group.fetchCommitted(null)
  if (committed.size !== COMMIT_PARTITIONS) throw new Error(`expected ${COMMIT_PARTITIONS} committed offsets, got ${committed.size}`)
  await group.close()
  return rows
}

const broker = await startBroker()
try {
  const admin = new Admin({ bootstrapServers: broker.bootstrap, clientId: 'bench-groups' })
  await admin.createTopics([{ name: 'bench-rebalance', numPartitions: REBALANCE_PARTITIONS }, { name: 'bench-commit', numPartitions: COMMIT_PARTITIONS }])
  await admin.close()
  console.log(`consumer-group benchmark: broker child process, ${cpus()[0]?.model ?? 'unknown cpu'} x${cpus().length}, node ${process.version}`)
  console.log(`\n1. rebalance of ${MEMBERS} members over ${REBALANCE_PARTITIONS} partitions (range), heartbeat.interval.ms=${HEARTBEAT_MS}, ${ROUNDS} rounds`)
  console.table(await rebalances(broker.bootstrap, 'bench-rebalance'))
  console.log(`\n2. OffsetCommit from one member of a Stable group, ${SECONDS} s per row`)
  console.table(await commits(broker.bootstrap, 'bench-commit'))
} finally {
  await broker.stop()
}
