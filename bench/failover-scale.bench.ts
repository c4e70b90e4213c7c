// Failover at scale, as a curve (issue 32; npm run bench:failover-scale -> node dist/bench/failover-scale.bench.js):
// controller failover and leader re-election with 1,000, 10,000 and 100,000 partitions on a 3-broker cluster.
// Kafka's ZooKeeper controller took minutes at six-figure partition counts (it loaded the state and wrote
// each partition's leader-and-ISR one by one); KRaft takes seconds. The figures say where Skein is.
//
// Per point N (a fresh cluster each: Debian's ZooKeeper from test/harness, three broker processes from
// bench/broker/broker-process.ts; zookeeper.session.timeout.ms 6000 unless --session-timeout-ms, as bench/broker/cluster.ts):
//   create      N partitions as topics of --topic-partitions (default 1,000) each, replication factor 3 with
//               Kafka's balanced assignment (every broker leads a third and follows the rest), CreateTopics
//               in requests of 10 topics: from the first request until every broker's Metadata shows every
//               partition with a leader and a full ISR. Then each broker's RSS.
//   controller  SIGKILL the active controller; from the kill:
//                 elected  /controller in ZooKeeper names another broker (polled every 20 ms)
//                 serving  a one-partition topic, created as soon as the election is seen, has a leader in a
//                          live broker's Metadata (the new controller loaded the cluster's state and took
//                          the topic change after it)
//                 led      every partition the dead broker led has a live leader in the Metadata of both
//                          live brokers (polled back to back; at 100k partitions one Metadata answer is
//                          megabytes, so the granularity is the poll's own time, printed)
//               The killed broker stays down (a restart's catch-up, thousands of ISR expansions queued at the
//               controller, would be measured as part of the next failover).
//   settle      until every partition's ISR is its live replicas in both live brokers' Metadata (settled;
//               waited for at most --settle-wait).
//   broker      SIGKILL the other live broker, the non-controller (it leads about half the partitions by
//               now): until every partition it led has a leader, the last broker, in its Metadata (led).
//   The peak RSS of every broker over the failovers (sampled at each poll) is kept too.
//
// What a SIGKILL costs before anything reacts is failure detection (the broker's ZooKeeper session expiring,
// or whatever faster path the brokers have); the split in the report (detected = elected for the
// controller, the first partition moved for a broker) shows it apart from the work after it.
//
// Flags: --sizes 1000,10000,100000 (k suffix allowed), --topic-partitions 1000, --session-timeout-ms 6000,
// --broker-session-timeout-ms N (broker.session.timeout.ms; the shipped 2000 unless given), --settle-wait 180 (seconds the
// cluster gets to settle before the broker kill goes on regardless), --data-dir DIR (parent of the
// brokers' data dirs), --log-dir DIR (each broker's log at info, to DIR/failover-<N>-broker<id>.log), --cpu-prof DIR (each broker under node --cpu-prof, profiles written at a clean exit:
// not the killed ones), --probe-dir DIR (each broker's CPU, event-loop delay and GC by kind per second, from
// bench/broker/process-probe.ts, to DIR/failover-<N>-broker<id>.jsonl), --json FILE (raw results; default bench/results/failover-scale.json when writing),
// --idle-seconds 10 (the idle cluster's CPU measured after creation; 0: not), --broker-node-args "..." (node options for the brokers), --trace (log every failover poll, per broker), --main-js PATH (another build's
// dist/src/main.js, run from its own checkout, to compare two builds), --no-write (print only; otherwise bench/results/FAILOVER-SCALE.md, failover-scale.svg and the JSON, rewritten
// after every phase, so a run stopped half-way leaves what it measured, the unfinished point marked).
import { rmSync, writeFileSync, mkdirSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { Admin } from '../src/client/admin.js'
import { BrokerConnection } from '../src/client/connection.js'
import { ApiKey } from '../src/protocol/api-keys.gen.js'
import * as Metadata from '../src/protocol/messages/03-metadata.gen.js'
import { ZooKeeperClient } from '../src/cluster/zookeeper/client.js'
import { decodeController } from '../src/cluster/zk-data.js'
import { startZooKeeper, zookeeperMissing, type ZooKeeperTestServer } from '../test/harness/zookeeper.js'
import { REPO_ROOT, benchDir, freePort, processCpuMicros, startBroker, type RunningBroker } from './broker/broker-process.js'
import { machineInfo, type MachineInfo } from './broker/machine.js'
import { fmtInt, machineMarkdown } from './broker/report.js'
import { flag, nodeArgsFlag } from './lib/flags.js'
import { BENCH_RESULTS_DIR } from './lib/results-dir.js'

const count = (text: string, what: string): number => {
  const m = /^(\d+)(k?)$/i.exec(text.trim())
  if (m === null || Number(m[1]) === 0) throw new Error(`${what}: expected a positive whole number (k suffix allowed), not '${text}'`)
  return Number(m[1]) * (m[2] === '' ? 1 : 1000)
}
const sizes = (flag('sizes') ?? '1000,10000,100000').split(',').map((s) => count(s, '--sizes'))
const topicPartitions = count(flag('topic-partitions') ?? '1000', '--topic-partitions')
const dataParent = flag('data-dir') ?? tmpdir()
const cpuProfDir = flag('cpu-prof')
const probeDir = flag('probe-dir')
const brokerNodeArgs = nodeArgsFlag('broker-node-args')
/** --main-js PATH: another build's dist/src/main.js (run from its checkout), to compare builds on this machine. */
const mainJs = flag('main-js')
const write = !process.argv.includes('--no-write')
/** --trace: every Metadata poll of a failover, per broker (when each broker's answers changed). */
const trace = process.argv.includes('--trace')
/** --log-dir DIR: every broker's log, at info, appended to DIR/failover-<N>-broker<id>.log. */
const logDir = flag('log-dir')
if (logDir !== undefined) mkdirSync(logDir, { recursive: true })
const settleWaitMs = count(flag('settle-wait') ?? '180', '--settle-wait') * 1000
/** --idle-seconds N: how long the idle cluster's CPU is measured after creation (0: not measured). */
const idleFlag = flag('idle-seconds')
const idleMs = idleFlag === '0' ? 0 : count(idleFlag ?? '10', '--idle-seconds') * 1000
const jsonOut = flag('json') ?? (write ? join(BENCH_RESULTS_DIR, 'failover-scale.json') : undefined)

const IDS = [1, 2, 3]
const SESSION_TIMEOUT_MS = count(flag('session-timeout-ms') ?? '6000', '--session-timeout-ms')
/** --broker-session-timeout-ms: broker.session.timeout.ms (failure detection by silence); the shipped default when not given. */
const brokerSessionFlag = flag('broker-session-timeout-ms')
const BROKER_SESSION_TIMEOUT_MS = brokerSessionFlag === undefined ? undefined : count(brokerSessionFlag, '--broker-session-timeout-ms')
const OVERRIDES = [
  'auto.create.topics.enable=false', 'log.cleaner.enable=false', 'default.replication.factor=3', 'offsets.topic.replication.factor=3',
  // Leaders stay where the controller put them, so the broker kill finds the leaders it counted.
  'auto.leader.rebalance.enable=false', `zookeeper.session.timeout.ms=${SESSION_TIMEOUT_MS}`,
  ...(BROKER_SESSION_TIMEOUT_MS === undefined ? [] : [`broker.session.timeout.ms=${BROKER_SESSION_TIMEOUT_MS}`]),
]
/** Any phase not done in this long fails the point (the rest of the run goes on). */
const PHASE_TIMEOUT_MS = 20 * 60_000
const log = (s: string): void => void process.stderr.write(`[bench:failover-scale ${new Date().toISOString().slice(11, 19)}] ${s}\n`)
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))
const secs = (ms: number | null | undefined): string => (ms === null || ms === undefined ? '-' : `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`)
const MiB = (kib: number): string => `${Math.round(kib / 1024)} MiB`

interface Point {
  partitions: number
  topics: number
  createMs: number | null
  /** RSS after creation, by broker id, KiB. */
  rssAfterCreateKiB: Record<number, number>
  /** Each broker's CPU while the cluster idled after creation, in percent of one core (by broker id). */
  idleCpuPercent: Record<number, number>
  /** Highest RSS seen during the failovers, by broker id, KiB. */
  peakRssKiB: Record<number, number>
  controller: {
    killed: number
    ledByKilled: number
    electedMs: number | null
    newController: number | null
    servingMs: number | null
    firstMovedMs: number | null
    ledMs: number | null
    /** Longest Metadata poll of the led phase (the measure's granularity). */
    pollMs: number
    /** Until every ISR is its live replicas again (null: not within --settle-wait). */
    settledMs: number | null
  } | null
  broker: { killed: number; ledByKilled: number; firstMovedMs: number | null; ledMs: number | null; pollMs: number; brokersLeft: number } | null
  error: string | null
  /** False while the point runs (a report written mid-way shows it unfinished). */
  done: boolean
}

interface Cluster {
  zk: ZooKeeperTestServer
  chroot: string
  brokers: Map<number, { port: number; dataDir: string; process: RunningBroker | null }>
  start(id: number, readyTimeoutMs?: number): Promise<void>
  kill(id: number): void
  live(): number[]
  stop(): Promise<void>
}

async function startCluster(point: number): Promise<Cluster> {
  const zk = await startZooKeeper()
  const chroot = `/skein-bench-failover`
  const brokers = new Map<number, { port: number; dataDir: string; process: RunningBroker | null }>()
  for (const id of IDS) brokers.set(id, { port: await freePort(), dataDir: benchDir(`failover${point}-${id}`, dataParent), process: null })
  const cluster: Cluster = {
    zk,
    chroot,
    brokers,
    async start(id, readyTimeoutMs = 120_000) {
      const b = brokers.get(id)!
      const nodeArgs = [...brokerNodeArgs, ...(cpuProfDir === undefined ? [] : ['--cpu-prof', '--cpu-prof-dir', cpuProfDir, '--cpu-prof-name', `failover-${point}-broker${id}-${Date.now()}.cpuprofile`])]
      // The process probe (bench/broker/process-probe.ts): each second's CPU, event-loop delay and GC by kind.
      const probeEnv: Record<string, string> = {}
      if (probeDir !== undefined) {
        nodeArgs.push('--import', `file://${join(REPO_ROOT, 'dist', 'bench', 'broker', 'process-probe.js')}`)
        probeEnv.SKEIN_PROBE_OUT = join(probeDir, `failover-${point}-broker${id}.jsonl`)
      }
      const logFile = logDir === undefined ? undefined : join(logDir, `failover-${point}-broker${id}.log`)
      b.process = await startBroker({ dataDir: b.dataDir, port: b.port, nodeArgs, mainJs, readyTimeoutMs, logFile, env: { SKEIN_LOG_LEVEL: logDir === undefined ? 'warn' : 'info', ...probeEnv }, overrides: [`broker.id=${id}`, `zookeeper.connect=${zk.connectString}${chroot}`, ...OVERRIDES] })
    },
    kill(id) {
      const b = brokers.get(id)!
      b.process?.child.kill('SIGKILL')
      b.process = null
    },
    live: () => [...brokers].filter(([, b]) => b.process !== null).map(([id]) => id),
    async stop() {
      await Promise.all([...brokers.values()].map((b) => b.process?.stop(60_000)))
      for (const b of brokers.values()) rmSync(b.dataDir, { recursive: true, force: true })
      await zk.stop()
    },
  }
  try {
    await Promise.all(IDS.map((id) => cluster.start(id)))
  } catch (err) {
    await cluster.stop()
    throw err
  }
  return cluster
}

/** One connection per broker for Metadata, so each answer is known to come from that broker. */
class MetadataProbe {
  #conns = new Map<number, BrokerConnection>()
  constructor(private readonly cluster: Cluster) {}

  async metadata(id: number, topics: string[] | null): Promise<Metadata.MetadataResponse> {
    let conn = this.#conns.get(id)
    if (conn === undefined || conn.closed) {
      conn = await BrokerConnection.connect({ host: '127.0.0.1', port: this.cluster.brokers.get(id)!.port, clientId: 'bench-failover-probe', requestTimeoutMs: 120_000 })
      this.#conns.set(id, conn)
    }
    const req = Metadata.createMetadataRequest({ topics: topics === null ? null : topics.map((name) => Metadata.createMetadataRequestTopic({ name })), allowAutoTopicCreation: false })
    return conn.send(ApiKey.Metadata, (w, v) => Metadata.encodeMetadataRequest(w, req, v), Metadata.decodeMetadataResponse)
  }

  drop(id: number): void {
    void this.#conns.get(id)?.close()
    this.#conns.delete(id)
  }

  async close(): Promise<void> {
    await Promise.all([...this.#conns.values()].map((c) => c.close()))
  }
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = PHASE_TIMEOUT_MS, everyMs = 50): Promise<T> {
  const deadline = performance.now() + timeoutMs
  for (;;) {
    const v = await probe().catch(() => undefined)
    if (v !== undefined) return v
    if (performance.now() > deadline) throw new Error(`timed out after ${secs(timeoutMs)} waiting for ${what}`)
    await sleep(everyMs)
  }
}

const key = (topic: string, partition: number): string => `${topic}:${partition}`

/** Partition -> leader from one broker's Metadata of the bench's topics; null when any topic is missing or incomplete. */
function leaders(res: Metadata.MetadataResponse, topics: readonly string[], perTopic: number, full = false): Map<string, number> | null {
  const byName = new Map(res.topics.map((t) => [t.name, t]))
  const out = new Map<string, number>()
  for (const name of topics) {
    const t = byName.get(name)
    if (t === undefined || t.errorCode !== 0 || t.partitions.length !== perTopic) return null
    for (const p of t.partitions) {
      if (full && (p.leaderId < 0 || p.isrNodes.length !== p.replicaNodes.length)) return null
      out.set(key(name ?? '', p.partitionIndex), p.leaderId)
    }
  }
  return out
}

async function runPoint(n: number, machineLoad: () => void, onProgress: (p: Point) => void): Promise<Point> {
  const perTopic = Math.min(n, topicPartitions)
  const topicCount = Math.ceil(n / perTopic)
  if (topicCount * perTopic !== n) throw new Error(`${n} partitions are not a whole number of ${perTopic}-partition topics`)
  const topics = Array.from({ length: topicCount }, (_, i) => `scale-${String(i).padStart(4, '0')}`)
  const point: Point = { partitions: n, topics: topicCount, createMs: null, rssAfterCreateKiB: {}, idleCpuPercent: {}, peakRssKiB: {}, controller: null, broker: null, error: null, done: false }
  const progress = (): void => onProgress(point)
  log(`${fmtInt(n)} partitions: ${topicCount} topic(s) of ${fmtInt(perTopic)}, replication factor 3`)
  const cluster = await startCluster(n)
  const probe = new MetadataProbe(cluster)
  const zkc = await ZooKeeperClient.connect(`${cluster.zk.connectString}${cluster.chroot}`, { sessionTimeoutMs: 30_000 })
  const sampleRss = (): void => {
    for (const [id, b] of cluster.brokers) {
      if (b.process === null) continue
      try {
        point.peakRssKiB[id] = Math.max(point.peakRssKiB[id] ?? 0, b.process.rssKiB())
      } catch {
        // exited between the check and the read
      }
    }
  }
  const controllerInZk = async (): Promise<number> => decodeController((await zkc.getData('/controller')).data)
  /** Both live brokers' Metadata: the partitions in `watched` whose leader is still `dead` or none, and the longest poll. */
  const stillLeaderless = async (watched: readonly string[], dead: number): Promise<{ left: number; pollMs: number }> => {
    let left = 0
    let pollMs = 0
    for (const id of cluster.live()) {
      const t0 = performance.now()
      const m = leaders(await probe.metadata(id, topics), topics, perTopic)
      pollMs = Math.max(pollMs, performance.now() - t0)
      if (m === null) return { left: watched.length, pollMs }
      let here = 0
      for (const k of watched) {
        const l = m.get(k)
        if (l === undefined || l < 0 || l === dead || !cluster.live().includes(l)) here++
      }
      left = Math.max(left, here)
      if (trace) log(`    trace: broker ${id} answers ${here} of ${watched.length} still led by ${dead} or none (poll ${Math.round(performance.now() - t0)} ms)`)
    }
    sampleRss()
    return { left, pollMs }
  }
  /** Waits until no partition of `watched` is leaderless: time of the first move and of the last, from t0. */
  const reElection = async (watched: readonly string[], dead: number, t0: number): Promise<{ firstMovedMs: number; ledMs: number; pollMs: number }> => {
    let firstMovedMs: number | null = null
    let pollMs = 0
    for (;;) {
      const r = await stillLeaderless(watched, dead).catch(() => ({ left: watched.length, pollMs: 0 }))
      pollMs = Math.max(pollMs, r.pollMs)
      const now = performance.now() - t0
      if (firstMovedMs === null && r.left < watched.length) firstMovedMs = now
      if (r.left === 0) return { firstMovedMs: firstMovedMs ?? now, ledMs: now, pollMs }
      if (now > PHASE_TIMEOUT_MS) throw new Error(`${r.left} of ${watched.length} partitions still without a live leader after ${secs(now)}`)
      // A Metadata answer of 100,000 partitions costs the broker real time: poll at most half the time.
      await sleep(Math.max(20, r.pollMs))
    }
  }
  const fullIsr = async (): Promise<boolean | undefined> => {
    for (const id of cluster.live()) if (leaders(await probe.metadata(id, topics), topics, perTopic, true) === null) return undefined
    return true
  }
  const settled = async (): Promise<boolean | undefined> => {
    const live = new Set(cluster.live())
    for (const id of live) {
      for (const t of (await probe.metadata(id, topics)).topics) {
        for (const p of t.partitions) {
          const want = p.replicaNodes.filter((r) => live.has(r))
          if (p.leaderId < 0 || !live.has(p.leaderId) || p.isrNodes.length !== want.length || !want.every((r) => p.isrNodes.includes(r))) return undefined
        }
      }
    }
    return true
  }
  const admin = new Admin({ bootstrapServers: IDS.map((id) => `127.0.0.1:${cluster.brokers.get(id)!.port}`).join(','), clientId: 'bench-failover', requestTimeoutMs: 600_000, apiTimeoutMs: 900_000 })
  try {
    await until('every broker registered', async () => ((await admin.describeCluster())?.brokers.length === 3 ? true : undefined), 120_000, 100)

    // ---- create
    const c0 = performance.now()
    for (let i = 0; i < topics.length; i += 10) {
      await admin.createTopics(topics.slice(i, i + 10).map((name) => ({ name, numPartitions: perTopic, replicationFactor: 3 })), { timeoutMs: 600_000 })
    }
    await until('every partition led with a full ISR on every broker', fullIsr, PHASE_TIMEOUT_MS, 200)
    point.createMs = performance.now() - c0
    for (const [id, b] of cluster.brokers) point.rssAfterCreateKiB[id] = b.process!.rssKiB()
    sampleRss()
    log(`  created in ${secs(point.createMs)}; RSS ${IDS.map((id) => `${id}: ${MiB(point.rssAfterCreateKiB[id]!)}`).join(', ')}`)
    machineLoad()
    progress()

    // ---- idle: what holding the partitions costs (replication's fetches of idle partitions, the controller's
    // and brokers' heartbeats), a few seconds after creation so the last ISR changes are done.
    if (idleMs > 0) {
      // Past the last catch-up and ISR changes of the creation (5 s was not always enough at 10,000).
      await sleep(15_000)
      const cpu0 = new Map([...cluster.brokers].map(([id, b]) => [id, processCpuMicros(b.process!.pid)]))
      const i0 = performance.now()
      await sleep(idleMs)
      const elapsed = (performance.now() - i0) / 1000
      for (const [id, b] of cluster.brokers) point.idleCpuPercent[id] = Math.round(((processCpuMicros(b.process!.pid) - cpu0.get(id)!) / 1e6 / elapsed) * 100)
      log(`  idle CPU over ${(elapsed).toFixed(1)} s: ${IDS.map((id) => `${id}: ${point.idleCpuPercent[id]}%`).join(', ')}`)
      progress()
    }

    // ---- controller failover
    const controller = await controllerInZk()
    const before = leaders(await probe.metadata(IDS.find((id) => id !== controller)!, topics), topics, perTopic)!
    const ledByController = [...before].filter(([, l]) => l === controller).map(([k]) => k)
    log(`  SIGKILL controller ${controller} (leads ${fmtInt(ledByController.length)})`)
    const t0 = performance.now()
    cluster.kill(controller)
    probe.drop(controller)
    const c = { killed: controller, ledByKilled: ledByController.length, electedMs: null as number | null, newController: null as number | null, servingMs: null as number | null, firstMovedMs: null as number | null, ledMs: null as number | null, pollMs: 0, settledMs: null as number | null }
    point.controller = c
    const probeTopic = `probe-${n}`
    const elected = (async () => {
      c.newController = await until('a new controller in ZooKeeper', async () => {
        const id = await controllerInZk()
        return id !== controller ? id : undefined
      }, PHASE_TIMEOUT_MS, 20)
      c.electedMs = performance.now() - t0
      log(`  broker ${c.newController} elected at ${secs(c.electedMs)}`)
      // Creation goes to the live brokers (the Admin finds the new controller, or any broker, which writes it).
      await until('the probe topic created', async () => {
        try {
          await admin.createTopics([{ name: probeTopic, numPartitions: 1, replicationFactor: 2 }], { timeoutMs: 600_000 })
        } catch (err) {
          if (!/already exists/i.test((err as Error).message)) throw err
        }
        return true
      }, PHASE_TIMEOUT_MS, 100)
      await until('the probe topic led', async () => {
        const res = await probe.metadata(c.newController!, [probeTopic])
        const p = res.topics[0]?.partitions[0]
        return res.topics[0]?.errorCode === 0 && p !== undefined && p.leaderId >= 0 && p.leaderId !== controller ? true : undefined
      }, PHASE_TIMEOUT_MS, 50)
      c.servingMs = performance.now() - t0
      log(`  new controller serving at ${secs(c.servingMs)}`)
    })()
    const reled = reElection(ledByController, controller, t0).then((r) => {
      Object.assign(c, r)
      log(`  every partition of broker ${controller} led again at ${secs(r.ledMs)} (first at ${secs(r.firstMovedMs)}; polls up to ${secs(r.pollMs)})`)
    })
    await Promise.all([elected, reled])

    progress()
    // ---- settle: every ISR is its live replicas (the dead broker out of all of them)
    try {
      await until('every ISR at its live replicas', settled, settleWaitMs, 250)
      c.settledMs = performance.now() - t0
      log(`  settled at ${secs(c.settledMs)}`)
    } catch {
      log(`  not settled after ${secs(settleWaitMs)} more; the broker kill goes on`)
    }
    progress()

    // ---- non-controller broker failover
    const current = await controllerInZk()
    const live = cluster.live()
    const now = leaders(await probe.metadata(current, topics), topics, perTopic)!
    const candidates = live.filter((id) => id !== current).map((id) => ({ id, led: [...now].filter(([, l]) => l === id).map(([k]) => k) }))
    candidates.sort((a, b) => b.led.length - a.led.length)
    const victim = candidates[0]
    if (victim === undefined || victim.led.length === 0) throw new Error(`no live non-controller broker leads anything (controller ${current}, live ${live})`)
    log(`  SIGKILL broker ${victim.id} (leads ${fmtInt(victim.led.length)}; controller ${current})`)
    const b0 = performance.now()
    cluster.kill(victim.id)
    probe.drop(victim.id)
    const r = await reElection(victim.led, victim.id, b0)
    point.broker = { killed: victim.id, ledByKilled: victim.led.length, ...r, brokersLeft: cluster.live().length }
    log(`  every partition of broker ${victim.id} led again at ${secs(r.ledMs)} (first at ${secs(r.firstMovedMs)}; polls up to ${secs(r.pollMs)})`)
    point.done = true
  } catch (err) {
    point.error = (err as Error).message
    log(`  FAILED: ${point.error}`)
    for (const [id, b] of cluster.brokers) if (b.process !== null) log(`  broker ${id} output (tail): ${b.process.output().slice(-1500)}`)
  } finally {
    sampleRss()
    await admin.close()
    await probe.close()
    await zkc.close()
    await cluster.stop()
  }
  return point
}

// ---------------------------------------------------------------- report

function chartSvg(points: readonly Point[]): string {
  const W = 980
  const H = 420
  const f = { x0: 90, y0: 60, w: 560, h: 280 }
  const series = [
    { label: 'controller: elected', color: '#7f8c8d', v: (p: Point) => p.controller?.electedMs },
    { label: 'controller: serving', color: '#2471a3', v: (p: Point) => p.controller?.servingMs },
    { label: 'controller: every partition led', color: '#c0392b', v: (p: Point) => p.controller?.ledMs },
    { label: 'broker: every partition led', color: '#27ae60', v: (p: Point) => p.broker?.ledMs },
    { label: 'create N partitions', color: '#8e44ad', v: (p: Point) => p.createMs ?? undefined, dashed: true },
  ]
  const pts = [...points].sort((a, b) => a.partitions - b.partitions)
  const all = pts.flatMap((p) => series.map((s) => s.v(p) ?? 0))
  const maxS = Math.max(1, ...all) / 1000
  // Log y: the curve spans from about a second to minutes.
  const yMin = 0.1
  const yMax = 10 ** Math.ceil(Math.log10(maxS * 1.2))
  const py = (ms: number): number => f.y0 + f.h - ((Math.log10(Math.max(yMin, ms / 1000)) - Math.log10(yMin)) / (Math.log10(yMax) - Math.log10(yMin))) * f.h
  const xs = pts.map((p) => Math.log10(p.partitions))
  const xMin = Math.min(...xs, 3)
  const xMax = Math.max(...xs, xMin + 1)
  const px = (n: number): number => f.x0 + 30 + ((Math.log10(n) - xMin) / (xMax - xMin)) * (f.w - 60)
  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif">`,
    `<rect width="${W}" height="${H}" fill="#fff"/>`,
    `<text x="${f.x0 + f.w / 2}" y="${f.y0 - 24}" text-anchor="middle" font-size="14" font-weight="bold">Failover time vs partitions (3 brokers, replication factor 3; SIGKILL)</text>`,
  ]
  for (let e = Math.log10(yMin); e <= Math.log10(yMax) + 1e-9; e++) {
    const v = 10 ** e
    const y = py(v * 1000)
    out.push(`<line x1="${f.x0}" y1="${y}" x2="${f.x0 + f.w}" y2="${y}" stroke="#ddd"/>`)
    out.push(`<text x="${f.x0 - 6}" y="${y + 4}" text-anchor="end" font-size="11">${v >= 1 ? v.toFixed(0) : v.toFixed(1)} s</text>`)
  }
  out.push(`<line x1="${f.x0}" y1="${f.y0}" x2="${f.x0}" y2="${f.y0 + f.h}" stroke="#333"/>`)
  out.push(`<line x1="${f.x0}" y1="${f.y0 + f.h}" x2="${f.x0 + f.w}" y2="${f.y0 + f.h}" stroke="#333"/>`)
  out.push(`<text x="${f.x0 - 56}" y="${f.y0 + f.h / 2}" text-anchor="middle" font-size="12" transform="rotate(-90 ${f.x0 - 56} ${f.y0 + f.h / 2})">seconds from the kill (log scale)</text>`)
  for (const p of pts) out.push(`<text x="${px(p.partitions)}" y="${f.y0 + f.h + 16}" text-anchor="middle" font-size="11">${fmtInt(p.partitions)}</text>`)
  out.push(`<text x="${f.x0 + f.w / 2}" y="${f.y0 + f.h + 36}" text-anchor="middle" font-size="12">partitions (log scale)</text>`)
  // The session timeout: what a SIGKILLed broker costs before ZooKeeper notices, when nothing is faster.
  out.push(`<line x1="${f.x0}" y1="${py(SESSION_TIMEOUT_MS)}" x2="${f.x0 + f.w}" y2="${py(SESSION_TIMEOUT_MS)}" stroke="#e67e22" stroke-dasharray="3 3"/>`)
  out.push(`<text x="${f.x0 + 4}" y="${py(SESSION_TIMEOUT_MS) - 4}" font-size="10" fill="#e67e22">zookeeper.session.timeout.ms</text>`)
  series.forEach((s, i) => {
    const have = pts.filter((p) => s.v(p) !== undefined && s.v(p) !== null)
    if (have.length > 0) {
      out.push(`<polyline fill="none" stroke="${s.color}" stroke-width="2"${s.dashed === true ? ' stroke-dasharray="6 4"' : ''} points="${have.map((p) => `${px(p.partitions)},${py(s.v(p)!)}`).join(' ')}"/>`)
      for (const p of have) {
        out.push(`<circle cx="${px(p.partitions)}" cy="${py(s.v(p)!)}" r="3.5" fill="${s.color}"/>`)
        out.push(`<text x="${px(p.partitions) + 6}" y="${py(s.v(p)!) - 5}" font-size="10" fill="${s.color}">${secs(s.v(p))}</text>`)
      }
    }
    const ly = f.y0 + 10 + i * 22
    out.push(`<line x1="${f.x0 + f.w + 20}" y1="${ly}" x2="${f.x0 + f.w + 44}" y2="${ly}" stroke="${s.color}" stroke-width="2"${s.dashed === true ? ' stroke-dasharray="6 4"' : ''}/>`)
    out.push(`<text x="${f.x0 + f.w + 50}" y="${ly + 4}" font-size="11">${s.label}</text>`)
  })
  const failed = pts.filter((p) => p.error !== null || !p.done)
  if (failed.length > 0) out.push(`<text x="${f.x0 + f.w + 20}" y="${f.y0 + 140}" font-size="11" fill="#c0392b">incomplete: ${failed.map((p) => fmtInt(p.partitions)).join(', ')}</text>`)
  out.push(`<text x="${W / 2}" y="${H - 12}" text-anchor="middle" font-size="11" fill="#555">Generated by npm run bench:failover-scale (bench/results/FAILOVER-SCALE.md has the table and how it is measured).</text>`)
  out.push('</svg>')
  return out.join('\n') + '\n'
}

function table(points: readonly Point[]): { headers: string[]; rows: string[][] } {
  const headers = ['Partitions', 'Create', 'RSS after create (1/2/3)', 'Idle CPU (1/2/3)', 'Controller killed: elected', 'serving', 'its partitions led (first .. all)', 'ISRs settled', 'Broker killed: its partitions led (first .. all)', 'Peak RSS (1/2/3)', 'Metadata poll (max)']
  const rows = points.map((p) => {
    const c = p.controller
    const b = p.broker
    const rss = (r: Record<number, number>): string => IDS.map((id) => (r[id] === undefined ? '-' : MiB(r[id]!))).join(' / ')
    return [
      `${fmtInt(p.partitions)} (${p.topics} topic${p.topics === 1 ? '' : 's'})`,
      secs(p.createMs),
      rss(p.rssAfterCreateKiB),
      IDS.map((id) => (p.idleCpuPercent[id] === undefined ? '-' : `${p.idleCpuPercent[id]}%`)).join(' / '),
      c === null ? '-' : `${secs(c.electedMs)} (broker ${c.newController ?? '?'})`,
      c === null ? '-' : secs(c.servingMs),
      c === null ? '-' : `${fmtInt(c.ledByKilled)}: ${secs(c.firstMovedMs)} .. ${secs(c.ledMs)}`,
      c === null ? '-' : c.settledMs === null ? `not within ${secs(settleWaitMs)}` : secs(c.settledMs),
      b === null ? '-' : `${fmtInt(b.ledByKilled)}: ${secs(b.firstMovedMs)} .. ${secs(b.ledMs)}`,
      rss(p.peakRssKiB),
      secs(Math.max(c?.pollMs ?? 0, b?.pollMs ?? 0)),
    ]
  })
  return { headers, rows }
}

function report(points: readonly Point[], machine: MachineInfo, load0: number[], quiet: boolean): void {
  const { headers, rows } = table(points)
  const all = [headers, ...rows]
  const widths = headers.map((_, i) => Math.max(...all.map((r) => r[i]!.length)))
  const load1 = loadavg()
  const loads = `load average ${load0.map((l) => l.toFixed(2)).join(' ')} at the start, ${load1.map((l) => l.toFixed(2)).join(' ')} at the end`
  if (!quiet) {
    process.stdout.write(`${all.map((r) => r.map((c, i) => c.padEnd(widths[i]!)).join(' | ')).join('\n')}\n`)
    for (const p of points) if (p.error !== null) process.stdout.write(`${fmtInt(p.partitions)}: ${p.error}\n`)
    process.stdout.write(`${loads}\n`)
  }
  const raw = { generated: machine.date, sizes, topicPartitions, sessionTimeoutMs: SESSION_TIMEOUT_MS, brokerSessionTimeoutMs: BROKER_SESSION_TIMEOUT_MS ?? null, load0, load1, machine, points }
  if (jsonOut !== undefined) {
    writeFileSync(jsonOut, `${JSON.stringify(raw, null, 2)}\n`)
    if (!quiet) log(`wrote ${jsonOut}`)
  }
  if (!write) return
  writeFileSync(join(BENCH_RESULTS_DIR, 'failover-scale.svg'), chartSvg(points))
  const failed = points.filter((p) => p.error !== null || !p.done)
  const md = `# Skein failover at scale

Generated by \`npm run bench:failover-scale -- --sizes ${sizes.join(',')} --topic-partitions ${topicPartitions}${SESSION_TIMEOUT_MS === 6000 ? '' : ` --session-timeout-ms ${SESSION_TIMEOUT_MS}`}${BROKER_SESSION_TIMEOUT_MS === undefined ? '' : ` --broker-session-timeout-ms ${BROKER_SESSION_TIMEOUT_MS}`}\` on ${machine.date}; ${loads}. Do not edit by hand: rerun the benchmark. The raw figures are in [failover-scale.json](failover-scale.json).

${machineMarkdown(machine)}

![Failover time against partitions](failover-scale.svg)

| ${headers.join(' | ')} |
| ${headers.map(() => '---').join(' | ')} |
${rows.map((r) => `| ${r.join(' | ')} |`).join('\n')}
${failed.length === 0 ? '' : `\nIncomplete points:\n\n${failed.map((p) => `- ${fmtInt(p.partitions)}: ${p.error ?? 'the run stopped before this point finished (the figures shown are the phases it completed)'}`).join('\n')}\n`}
## How it is measured (bench/failover-scale.bench.ts)

- Each point is a fresh cluster: Debian's ZooKeeper (tickTime 500 ms) and three Skein broker processes on this
  machine, zookeeper.session.timeout.ms=${SESSION_TIMEOUT_MS}${BROKER_SESSION_TIMEOUT_MS === undefined ? '' : `, broker.session.timeout.ms=${BROKER_SESSION_TIMEOUT_MS}`}, auto.leader.rebalance.enable=false. The partitions are
  topics of ${fmtInt(topicPartitions)} partitions (fewer for a smaller point), replication factor 3 with Kafka's balanced
  assignment, so each broker leads a third of them and follows the rest.
- **Create**: CreateTopics in requests of 10 topics, from the first request until the Metadata of every broker shows
  every partition with a leader and a full ISR. **RSS**: /proc/<pid>/status VmRSS of each broker after that, and the
  highest seen while the failovers ran.
- **Idle CPU**: each broker's CPU time (/proc/<pid>/stat utime + stime) over \`--idle-seconds\` (${idleMs / 1000} s) of an idle
  cluster, 15 s after creation, in percent of one core: what merely holding the partitions costs (the followers'
  fetches of idle partitions, heartbeats, timers).
- **Controller killed**: SIGKILL of the active controller. **elected**: /controller in ZooKeeper names another
  broker (polled every 20 ms). **serving**: a one-partition topic created as soon as the election is seen has a
  leader in the new controller's Metadata: the new controller has loaded the cluster's state and handled a change
  after it. **its partitions led**: every partition the killed broker led has a live leader in the Metadata of both
  live brokers; *first* is the first poll that saw any of them moved. The time before anything moves is failure
  detection (the brokers' defaults: broker.session.timeout.ms, broker.heartbeat.interval.ms; a SIGKILLed broker's
  port refuses connections, which fences it at once; else the ZooKeeper session); after it, the controller's work (its start-up, the elections, the ZooKeeper writes, the
  LeaderAndIsr and UpdateMetadata requests, the brokers applying them).
- **ISRs settled**: from the controller's kill until every partition's ISR is its live replicas (the dead broker out
  of all of them) in both live brokers' Metadata. The killed broker is not restarted: its catch-up (an ISR
  expansion per partition queued at the controller) would be measured as part of the next failover.
- **Broker killed**: then SIGKILL of the other surviving broker, the non-controller (it leads about half the
  partitions by then), until every partition it led has a live leader (the last broker) in its Metadata. So this
  is a broker failure handled by a controller that has run since the first failover, on what is left of the
  cluster.
- **Metadata poll (max)**: the longest single Metadata answer of the polls, i.e. how coarse the figures are.
`
  writeFileSync(join(BENCH_RESULTS_DIR, 'FAILOVER-SCALE.md'), md)
  if (!quiet) log(`wrote ${join(BENCH_RESULTS_DIR, 'FAILOVER-SCALE.md')} and failover-scale.svg`)
}

async function main(): Promise<void> {
  const missing = zookeeperMissing()
  if (missing !== undefined) throw new Error(missing)
  if (cpuProfDir !== undefined) mkdirSync(cpuProfDir, { recursive: true })
  if (probeDir !== undefined) mkdirSync(probeDir, { recursive: true })
  const load0 = loadavg()
  const machine = machineInfo(dataParent)
  const points: Point[] = []
  for (const n of sizes) {
    const point = await runPoint(n, () => log(`  load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`), (p) => report([...points, p], machine, load0, true))
    points.push(point)
    report(points, machine, load0, true)
  }
  report(points, machine, load0, false)
}

await main()
