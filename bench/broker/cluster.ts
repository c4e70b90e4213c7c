// The cluster part of the broker benchmark (issue 14; `npm run bench:broker -- --only cluster`, or part of a
// full run): a single broker and a 3-broker cluster on ZooKeeper (Debian's, started by the test harness:
// test/harness/zookeeper.ts; brokers, by broker-process.ts, as `node dist/src/main.js` processes), side by side in
// one run, so the ratios are taken under the same machine load. ZooKeeper runs with tickTime=500 ms (the test
// harness's), so its session expiry is checked every half second rather than every 2 s.
//
//   produce        rdkafka-perf (librdkafka, bench/broker/rdkafka-perf.c), 100-byte records, 6 partitions:
//                  the single broker (replication factor 1) and the cluster (replication factor 3,
//                  min.insync.replicas=2, Kafka's balanced assignment: every broker leads two partitions and
//                  follows four), acks=1 and acks=all; a warm-up run of a fifth, then the better of two runs.
//   CPU per record the same produce to a topic whose six partitions all have replicas [1, 2, 3] (broker 1
//                  leads everything, 2 and 3 only follow), one run per acks setting after a warm-up: utime +
//                  stime of each broker process from /proc/<pid>/stat, divided by the records acknowledged,
//                  for the leader and each follower, beside the single broker's.
//   latency        bench/broker/e2e-latency.js at a fixed 50,000 records/s, acks=all, replication factor 3:
//                  the consumer reads up to the high watermark, so the figure includes replication.
//   failover       zookeeper.session.timeout.ms=6000; a Skein producer (acks=all, idempotent, retry.backoff.ms=10,
//                  so that its exponential retry backoff, capped at 1 s, adds little) appends one
//                  record every 5 ms to partition 0 of a replication-factor-3 topic; its leader is SIGKILLed;
//                  the figure is the time from the kill to the acknowledgement of the first record appended
//                  after it (so necessarily written by the new leader), and the time until the metadata names
//                  a new leader. The killed broker is restarted and back in the ISR before the next run.
//
// Results: rows for the broker benchmark's table, and bench/results/CLUSTER-RESULTS.md.
import { spawn } from 'node:child_process'
import { rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { Admin } from '../../src/client/admin.js'
import { Producer } from '../../src/client/producer.js'
import { startZooKeeper, zookeeperMissing, type ZooKeeperTestServer } from '../../test/harness/zookeeper.js'
import { benchDir, freePort, processCpuMicros, REPO_ROOT, startBroker, type BrokerOptions, type RunningBroker } from './broker-process.js'
import { lastJsonLine } from './machine.js'
import { RDKAFKA_PRODUCER_CONFIG } from './peers.js'
import { rdkafkaPerf, type RdkafkaPerfResult } from './rdkafka-perf.js'
import { fmtInt, fmtMs, type Row } from './report.js'
import { runNode } from './run.js'

export interface ClusterBenchOptions {
  /** Records per measured produce run. */
  records: number
  /** Seconds of the latency run (after warmupSeconds more). */
  e2eSeconds: number
  e2eWarmupSeconds: number
  /** Failover runs (each kills the leader of partition 0, then restarts it). */
  failoverRuns: number
  dataParent: string
  log: (s: string) => void
}

export interface ClusterBenchResult {
  rows: Row[]
  notes: string[]
}

const E2E_RATE = 50_000
const SESSION_TIMEOUT_MS = 6000
const BASE_OVERRIDES = ['auto.create.topics.enable=false', 'log.cleaner.enable=false']
// Leaders stay where the controller put them (no preferred-leader rebalance after a broker returns), so the
// failover runs kill the leader they measured.
const CLUSTER_OVERRIDES = [...BASE_OVERRIDES, 'min.insync.replicas=2', 'default.replication.factor=3', 'offsets.topic.replication.factor=3', 'auto.leader.rebalance.enable=false']
const E2E_JS = join(REPO_ROOT, 'dist', 'bench', 'broker', 'e2e-latency.js')

interface Produced {
  recordsPerSec: number
  runs: number[]
  /** CPU microseconds per acknowledged record of each broker process (by broker id) over the measured runs. */
  cpuUsPerRecord: Map<number, number>
}

class BenchFailure extends Error {}

/** ZooKeeper (test/harness/zookeeper.ts, tickTime 500 ms) and broker processes (broker-process.ts) on free ports. */
export interface BenchCluster {
  brokers: { id: number; port: number; dataDir: string; process: RunningBroker | null }[]
  bootstrap(): string
  pid(id: number): number
  /** SIGKILL, without waiting. */
  kill(id: number): void
  start(id: number): Promise<void>
  stop(): Promise<void>
}

export async function startBenchCluster(ids: number[], dataParent: string, log: (s: string) => void, brokerOptions?: (id: number) => Partial<BrokerOptions>): Promise<BenchCluster> {
  const zk: ZooKeeperTestServer = await startZooKeeper()
  const connect = `${zk.connectString}/skein-bench`
  const brokers = await Promise.all(ids.map(async (id) => ({ id, port: await freePort(), dataDir: benchDir(`cluster${id}`, dataParent), process: null as RunningBroker | null })))
  const overrides = (id: number): string[] => [`broker.id=${id}`, `zookeeper.connect=${connect}`, `zookeeper.session.timeout.ms=${SESSION_TIMEOUT_MS}`, ...CLUSTER_OVERRIDES]
  const cluster: BenchCluster = {
    brokers,
    bootstrap: () => brokers.filter((b) => b.process !== null).map((b) => `127.0.0.1:${b.port}`).join(','),
    pid(id) {
      const b = brokers.find((x) => x.id === id)
      if (b?.process == null) throw new Error(`broker ${id} is not running`)
      return b.process.pid
    },
    kill(id) {
      const b = brokers.find((x) => x.id === id)!
      b.process?.child.kill('SIGKILL')
      b.process = null
    },
    async start(id) {
      const b = brokers.find((x) => x.id === id)!
      b.process = await startBroker({ ...brokerOptions?.(id), dataDir: b.dataDir, port: b.port, overrides: overrides(id) })
    },
    async stop() {
      await Promise.all(brokers.map((b) => b.process?.stop(5000)))
      for (const b of brokers) rmSync(b.dataDir, { recursive: true, force: true })
      await zk.stop()
    },
  }
  try {
    await Promise.all(ids.map((id) => cluster.start(id)))
    // Serving is not registered: wait until the metadata lists every broker.
    const admin = new Admin({ bootstrapServers: cluster.bootstrap(), clientId: 'bench-cluster-admin' })
    try {
      for (let i = 0; ; i++) {
        const d = await admin.describeCluster().catch(() => null)
        if (d !== null && d.brokers.length === ids.length && d.controllerId >= 0) break
        if (i > 600) throw new BenchFailure('the brokers did not all register within 60 s')
        await sleep(100)
      }
    } finally {
      await admin.close()
    }
  } catch (err) {
    log(`  cluster start failed: ${brokers.map((b) => b.process?.output().slice(-1000) ?? '').join('\n')}`)
    await cluster.stop()
    throw err
  }
  return cluster
}

export async function createTopic(bootstrap: string, topic: { name: string; numPartitions?: number; replicationFactor?: number; replicaAssignment?: number[][] }): Promise<void> {
  const admin = new Admin({ bootstrapServers: bootstrap, clientId: 'bench-cluster-admin', requestTimeoutMs: 60000 })
  try {
    await admin.createTopics([topic], { timeoutMs: 60000 })
    // Every partition with a leader on every broker's metadata before the clock starts.
    for (let i = 0; ; i++) {
      // A broker that has not had the controller's UpdateMetadata yet answers UNKNOWN_TOPIC_OR_PARTITION.
      const [d] = await admin.describeTopics([topic.name]).catch(() => [undefined])
      if (d !== undefined && d.partitions.length > 0 && d.partitions.every((p) => p.leader >= 0 && p.isr.length === p.replicas.length)) break
      if (i > 300) throw new BenchFailure(`topic ${topic.name} has no leaders after 30 s`)
      await sleep(100)
    }
  } finally {
    await admin.close()
  }
}

async function perf(bootstrap: string, topic: string, n: number, acks: '1' | 'all'): Promise<RdkafkaPerfResult> {
  const r = await rdkafkaPerf('produce', bootstrap, topic, n, { size: 100, config: { ...RDKAFKA_PRODUCER_CONFIG, acks } })
  if (!r.ok) throw new BenchFailure(r.reason)
  return r.value
}

/** Warm-up of a fifth of n, then `measuredRuns` runs; the best is the figure, CPU is over the measured runs. */
async function produce(bootstrap: string, topic: string, n: number, acks: '1' | 'all', pids: Map<number, number>, measuredRuns: number): Promise<Produced> {
  await perf(bootstrap, topic, Math.max(1000, Math.floor(n / 5)), acks)
  const cpu0 = new Map([...pids].map(([id, pid]) => [id, processCpuMicros(pid)]))
  const runs: RdkafkaPerfResult[] = []
  for (let i = 0; i < measuredRuns; i++) runs.push(await perf(bootstrap, topic, n, acks))
  const records = runs.reduce((a, r) => a + r.records, 0)
  const cpuUsPerRecord = new Map([...pids].map(([id, pid]) => [id, (processCpuMicros(pid) - cpu0.get(id)!) / records]))
  return { recordsPerSec: Math.max(...runs.map((r) => r.recordsPerSec)), runs: runs.map((r) => r.recordsPerSec), cpuUsPerRecord }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

interface Percentiles { p50: number; p99: number; p999: number; max: number }

async function e2eLatency(bootstrap: string, topic: string, seconds: number, warmup: number): Promise<Percentiles & { measured: number; rate: number; seen: number; sent: number; series: string; first3s: Percentiles & { count: number } }> {
  const consumer = spawn(process.execPath, [E2E_JS, 'consume', bootstrap, topic, String(seconds + 1), String(warmup)], { stdio: ['ignore', 'pipe', 'pipe'] })
  let cout = ''
  let cerr = ''
  consumer.stdout.on('data', (d: Buffer) => (cout += d.toString()))
  consumer.stderr.on('data', (d: Buffer) => (cerr += d.toString()))
  const done = new Promise<number | null>((res) => consumer.once('exit', (code) => res(code)))
  const killer = setTimeout(() => consumer.kill('SIGKILL'), (seconds + warmup + 60) * 1000)
  try {
    for (let i = 0; !cout.includes('ready\n'); i++) {
      if (i > 300 || consumer.exitCode !== null) throw new BenchFailure(`e2e consumer not ready:\n${cerr}`)
      await sleep(100)
    }
    const pout = await runNode([E2E_JS, 'produce', bootstrap, topic, String(E2E_RATE), String(seconds + warmup), '-1'], (seconds + warmup + 60) * 1000)
    const prod = JSON.parse(lastJsonLine(pout)) as { sent: number; failed: number; ratePerSec: number }
    if (prod.failed > 0) throw new BenchFailure(`${prod.failed} e2e records failed`)
    if ((await done) !== 0) throw new BenchFailure(`e2e consumer failed:\n${cerr}`)
    const c = JSON.parse(lastJsonLine(cout)) as { records: number; measured: number; latencyMs: Percentiles; first3sMs: Percentiles & { count: number }; series: { second: number; records: number; p50Ms: number; p99Ms: number; maxMs: number }[] }
    // Per second: a latency that grows second after second is a backlog (something not keeping up), a flat one is a constant delay.
    const series = c.series.map((w) => `${w.second}s ${fmtInt(w.records)}, ${fmtMs(w.p50Ms)} / ${fmtMs(w.p99Ms)} / ${fmtMs(w.maxMs)}`).join('; ')
    return { ...c.latencyMs, measured: c.measured, rate: prod.ratePerSec, seen: c.records, sent: prod.sent, series, first3s: c.first3sMs }
  } finally {
    clearTimeout(killer)
    if (consumer.exitCode === null) consumer.kill('SIGKILL')
  }
}

interface FailoverRun {
  victim: number
  newLeader: number
  /** Kill to the first acknowledgement of a record appended after the kill. */
  firstAckMs: number
  /** Kill to the metadata naming another leader. */
  electedMs: number
  /** The killed leader was also the controller (a new controller is elected first). */
  wasController: boolean
}

async function failover(cluster: BenchCluster, topic: string, log: (s: string) => void): Promise<FailoverRun> {
  const admin = new Admin({ bootstrapServers: cluster.bootstrap(), clientId: 'bench-failover-admin' })
  const producer = new Producer({ bootstrapServers: cluster.bootstrap(), clientId: 'bench-failover', acks: -1, enableIdempotence: true, lingerMs: 0, deliveryTimeoutMs: 120000, retryBackoffMs: 10 })
  let killedAt = -1
  let firstAckAfterKill = -1
  let failed: Error | null = null
  let stop = false
  try {
    await producer.topicInfo(topic)
    // The writer: one record every 5 ms; a record's appendedAt is read when its acknowledgement arrives.
    const writer = (async () => {
      while (!stop) {
        const appendedAt = performance.now()
        producer.append(topic, 0, null, Buffer.alloc(100, 0x61), undefined, (err) => {
          if (err !== null) failed ??= err
          else if (killedAt >= 0 && appendedAt > killedAt && firstAckAfterKill < 0) firstAckAfterKill = performance.now()
        })
        await sleep(5)
      }
    })()
    await sleep(2000)
    // The leader as the metadata has it just before the kill (leaders do not move otherwise here:
    // auto.leader.rebalance.enable=false); the run is refused below unless the kill really moved it.
    const [before] = await admin.describeTopics([topic])
    const victim = before!.partitions[0]!.leader
    const epochBefore = before!.partitions[0]!.leaderEpoch
    const wasController = (await admin.describeCluster()).controllerId === victim
    log(`  SIGKILL broker ${victim} (leader of ${topic}-0 at leader epoch ${epochBefore})`)
    killedAt = performance.now()
    cluster.kill(victim)
    let electedMs = -1
    let newLeader = -1
    const deadline = killedAt + SESSION_TIMEOUT_MS * 5
    while ((electedMs < 0 || firstAckAfterKill < 0) && performance.now() < deadline && failed === null) {
      if (electedMs < 0) {
        const [d] = await admin.describeTopics([topic]).catch(() => [undefined])
        const leader = d?.partitions[0]?.leader ?? -1
        if (leader >= 0 && leader !== victim && d!.partitions[0]!.leaderEpoch > epochBefore) {
          electedMs = performance.now() - killedAt
          newLeader = leader
        }
      }
      await sleep(electedMs < 0 ? 50 : 10)
    }
    stop = true
    await writer
    await producer.flush()
    if (failed !== null) throw new BenchFailure(`a record failed during the failover: ${(failed as Error).message}`)
    if (firstAckAfterKill < 0 || electedMs < 0) throw new BenchFailure(`no new leader acknowledged a write within ${SESSION_TIMEOUT_MS * 5} ms of the kill`)
    return { victim, newLeader, firstAckMs: firstAckAfterKill - killedAt, electedMs, wasController }
  } finally {
    stop = true
    await producer.close().catch(() => {})
    await admin.close().catch(() => {})
  }
}

/** Restarts a killed broker and waits until it is back in the ISR of every partition of the topics. */
async function rejoin(cluster: BenchCluster, id: number, topics: string[]): Promise<void> {
  await cluster.start(id)
  const admin = new Admin({ bootstrapServers: cluster.bootstrap(), clientId: 'bench-rejoin-admin' })
  try {
    for (let i = 0; ; i++) {
      const ds = await admin.describeTopics(topics).catch(() => [])
      if (ds.length === topics.length && ds.every((d) => d.partitions.every((p) => p.isr.includes(id)))) return
      if (i > 1200) throw new BenchFailure(`broker ${id} did not rejoin the ISR within 120 s`)
      await sleep(100)
    }
  } finally {
    await admin.close()
  }
}

const rate = (x: number): string => `${fmtInt(Math.round(x))} rec/s`
const us = (x: number | undefined): string => (x === undefined ? '-' : `${x.toFixed(2)} us`)

export async function clusterBench(opts: ClusterBenchOptions): Promise<ClusterBenchResult> {
  const { records: n, log } = opts
  const rows: Row[] = []
  const notes: string[] = []
  const missing = zookeeperMissing()
  if (missing !== undefined) throw new BenchFailure(missing)

  // --- the single broker ---
  const single: Partial<Record<'1' | 'all', Produced>> = {}
  const dir = benchDir('single', opts.dataParent)
  const broker = await startBroker({ dataDir: dir, overrides: BASE_OVERRIDES })
  try {
    for (const acks of ['1', 'all'] as const) {
      await createTopic(broker.bootstrap, { name: `single-acks-${acks}`, numPartitions: 6, replicationFactor: 1 })
      log(`  single broker, rdkafka-perf acks=${acks}, ${fmtInt(n)} records (warm-up, then best of 2)`)
      single[acks] = await produce(broker.bootstrap, `single-acks-${acks}`, n, acks, new Map([[0, broker.pid]]), 2)
    }
  } finally {
    await broker.stop()
    rmSync(dir, { recursive: true, force: true })
  }

  // --- the cluster ---
  log('  starting ZooKeeper and 3 brokers')
  const cluster = await startBenchCluster([1, 2, 3], opts.dataParent, log)
  const balanced: Partial<Record<'1' | 'all', Produced>> = {}
  const pinned: Partial<Record<'1' | 'all', Produced>> = {}
  let e2e: Awaited<ReturnType<typeof e2eLatency>> | undefined
  const failovers: FailoverRun[] = []
  try {
    const bootstrap = cluster.bootstrap()
    const pids = new Map(cluster.brokers.map((b) => [b.id, cluster.pid(b.id)]))
    for (const acks of ['1', 'all'] as const) {
      await createTopic(bootstrap, { name: `rf3-acks-${acks}`, numPartitions: 6, replicationFactor: 3 })
      log(`  cluster, RF 3, rdkafka-perf acks=${acks}, ${fmtInt(n)} records (warm-up, then best of 2)`)
      balanced[acks] = await produce(bootstrap, `rf3-acks-${acks}`, n, acks, pids, 2)
    }
    for (const acks of ['1', 'all'] as const) {
      const name = `rf3-leader1-acks-${acks}`
      await createTopic(bootstrap, { name, replicaAssignment: Array.from({ length: 6 }, () => [1, 2, 3]) })
      log(`  cluster, RF 3, every partition led by broker 1, acks=${acks}, ${fmtInt(n)} records (warm-up, then 1 run)`)
      pinned[acks] = await produce(bootstrap, name, n, acks, pids, 1)
    }
    await createTopic(bootstrap, { name: 'e2e', numPartitions: 6, replicationFactor: 3 })
    log(`  end-to-end latency at ${fmtInt(E2E_RATE)}/s, acks=all, for ${opts.e2eWarmupSeconds} + ${opts.e2eSeconds} s`)
    e2e = await e2eLatency(bootstrap, 'e2e', opts.e2eSeconds, opts.e2eWarmupSeconds)
    await createTopic(bootstrap, { name: 'failover', numPartitions: 1, replicationFactor: 3 })
    for (let i = 0; i < opts.failoverRuns; i++) {
      log(`  failover ${i + 1} of ${opts.failoverRuns}`)
      const f = await failover(cluster, 'failover', log)
      failovers.push(f)
      log(`    first acknowledged write from broker ${f.newLeader} ${fmtInt(f.firstAckMs)} ms after the kill (elected in metadata at ${fmtInt(f.electedMs)} ms${f.wasController ? '; the leader was the controller too' : ''})`)
      log(`  restarting broker ${f.victim}, waiting for the ISR`)
      await rejoin(cluster, f.victim, ['failover'])
    }
  } catch (err) {
    const tail = cluster.brokers.map((b) => `--- broker ${b.id} ---\n${b.process?.output().slice(-1500) ?? '(not running)'}`).join('\n')
    throw new Error(`${(err as Error).message}\n${tail}`)
  } finally {
    await cluster.stop()
  }

  // --- rows ---
  for (const acks of ['1', 'all'] as const) {
    const s = single[acks]!
    const c = balanced[acks]!
    const target = acks === '1' ? 800_000 : 500_000
    const cpuSum = [...c.cpuUsPerRecord.values()].reduce((a, b) => a + b, 0)
    rows.push({
      workload: `cluster: produce 100 B, rdkafka-perf, 6 partitions, RF 3${acks === 'all' ? ', min.insync.replicas=2' : ''}, acks=${acks} (single broker, RF 1, beside)`,
      skein: `${rate(c.recordsPerSec)} (runs: ${c.runs.map((x) => fmtInt(Math.round(x))).join(', ')}); all brokers' CPU ${us(cpuSum)} per record`,
      peer: `single: ${rate(s.recordsPerSec)}; CPU ${us(s.cpuUsPerRecord.get(0))} per record`,
      ratio: `${((c.recordsPerSec / s.recordsPerSec) * 100).toFixed(0)}% of single`,
      target: `>= ${fmtInt(target)} rec/s: ${c.recordsPerSec >= target ? 'yes' : 'NO'}`,
    })
  }
  for (const acks of ['1', 'all'] as const) {
    const p = pinned[acks]!
    const leader = p.cpuUsPerRecord.get(1)!
    const followers = [2, 3].map((id) => p.cpuUsPerRecord.get(id)!)
    const s = single[acks]!.cpuUsPerRecord.get(0)!
    rows.push({
      workload: `cluster: broker CPU per record, acks=${acks}, all 6 partitions led by broker 1 (leader / followers 2, 3)`,
      skein: `leader ${us(leader)}, followers ${followers.map(us).join(', ')} (${rate(p.recordsPerSec)})`,
      peer: `single: ${us(s)}`,
      ratio: `leader ${(leader / s).toFixed(2)}x, follower ${(followers.reduce((a, b) => a + b, 0) / 2 / s).toFixed(2)}x single`,
      target: 'reported',
    })
  }
  if (e2e !== undefined) {
    rows.push({
      workload: `cluster: end-to-end latency at ${fmtInt(Math.round(e2e.rate))} rec/s, acks=all, RF 3, p50 / p99 / p99.9`,
      skein: `${fmtMs(e2e.p50)} / ${fmtMs(e2e.p99)} / ${fmtMs(e2e.p999)} ms (max ${fmtMs(e2e.max)}; ${fmtInt(e2e.measured)} records measured)`,
      peer: '-',
      ratio: '-',
      target: `p99 <= 10 ms: ${e2e.p99 <= 10 ? 'yes' : 'NO'}`,
    })
    rows.push({
      workload: 'cluster: the same, its first 3 s only (from the first record consumed), p50 / p99 / p99.9',
      skein: `${fmtMs(e2e.first3s.p50)} / ${fmtMs(e2e.first3s.p99)} / ${fmtMs(e2e.first3s.p999)} ms (max ${fmtMs(e2e.first3s.max)}; ${fmtInt(e2e.first3s.count)} records)`,
      peer: '-',
      ratio: '-',
      target: `p99 <= 10 ms: ${e2e.first3s.p99 <= 10 ? 'yes' : 'NO'}`,
    })
    if (e2e.seen !== e2e.sent) notes.push(`cluster end-to-end: the consumer saw ${e2e.seen} of ${e2e.sent} records`)
    notes.push(`cluster end-to-end latency (acks=all, RF 3) per second from the first record (records, p50 / p99 / max ms): ${e2e.series}`)
  }
  if (failovers.length > 0) {
    const worst = Math.max(...failovers.map((f) => f.firstAckMs))
    rows.push({
      workload: `cluster: SIGKILL of a leader to the first acknowledged write from the new leader (zookeeper.session.timeout.ms=${SESSION_TIMEOUT_MS})`,
      skein: failovers.map((f) => `${fmtInt(f.firstAckMs)} ms (elected at ${fmtInt(f.electedMs)} ms${f.wasController ? '; the leader was the controller too' : ''})`).join('; '),
      peer: '-',
      ratio: '-',
      target: `session timeout + < 1 s: ${worst < SESSION_TIMEOUT_MS + 1000 ? 'yes' : 'NO'}`,
    })
  }
  return { rows, notes }
}

/** bench/results/CLUSTER-RESULTS.md: the cluster rows of this run with how they were measured. */
export function writeClusterResults(resultsDir: string, header: string, table: string, notes: string[], opts: ClusterBenchOptions): void {
  const md = `# Skein cluster benchmark results

${header}

${table}
${notes.length > 0 ? `\nNotes from this run:\n\n${notes.map((x) => `- ${x}`).join('\n')}\n` : ''}
## How each figure is measured (bench/broker/cluster.ts)

- One run holds both sides: a single broker (no ZooKeeper, replication factor 1), then Debian's ZooKeeper
  and 3 Skein broker processes (\`node dist/src/main.js --override broker.id=N --override
  zookeeper.connect=...\`, bench/broker/broker-process.ts), all on this machine with the client.
- **Produce**: rdkafka-perf (bench/broker/rdkafka-perf.c on librdkafka), ${fmtInt(opts.records)} records of 100 B per
  run, 6 partitions, the benchmark's librdkafka settings with \`acks=1\` or \`acks=all\`; a warm-up run of a fifth
  of the records, then the better of two runs. The cluster topics have replication factor 3 and
  min.insync.replicas=2, with Kafka's assignment (each broker leads two partitions and follows four).
- **CPU per record**: a topic whose six partitions all have replicas [1, 2, 3], so broker 1 only leads and
  brokers 2 and 3 only follow; after a warm-up, one run per acks setting; each broker's utime + stime
  (/proc/<pid>/stat) over the run divided by the records acknowledged. The single broker's figure is over its two
  measured runs.
- **End-to-end latency**: bench/broker/e2e-latency.js, a producer process (acks=all, linger.ms=0) at
  ${fmtInt(E2E_RATE)} records/s to a 6-partition RF-3 topic, a consumer process reading up to the high watermark;
  ${opts.e2eWarmupSeconds === 0 ? `all ${opts.e2eSeconds} s are measured, the first seconds included (reported apart too: the first 3 s from the first record consumed)` : `the first ${opts.e2eWarmupSeconds} s are warm-up, then ${opts.e2eSeconds} s are measured`}.
- **Failover**: zookeeper.session.timeout.ms=${SESSION_TIMEOUT_MS}; a Skein producer (acks=all, idempotent) appends one
  record every 5 ms to partition 0 of an RF-3 topic; the leader is SIGKILLed; the figure is the time from the
  kill to the acknowledgement of the first record appended after it, so written by the new leader (and the
  time until the metadata names the new leader). The broker is restarted and back in the ISR between runs
  (${opts.failoverRuns} run${opts.failoverRuns === 1 ? '' : 's'}).
`
  writeFileSync(join(resultsDir, 'CLUSTER-RESULTS.md'), md)
}
