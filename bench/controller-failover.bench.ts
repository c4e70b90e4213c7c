// The new controller's own work in a failover at scale (issue 32), without ZooKeeper or brokers:
// npm run bench:controller-failover -> node dist/bench/controller-failover.bench.js
//   [--partitions 100000] [--runs 3] [--builds this=.,base=/path/to/other/checkout]
//
// bench/failover-scale.bench.ts measures a failover end to end (ZooKeeper, three broker processes, Metadata
// polls); there the new controller's thread also runs its broker, its ZooKeeper client and the replica
// fetchers, and the figures move by seconds from run to run. This isolates what the controller computes:
// a ControllerContext of --partitions partitions (topics of 1,000, replicas [1,2,3] rotated so that each
// broker leads a third), broker 2 dead, then the partition state machine's startup (electing leaders for
// broker 2's third) and the replica state machine's startup (broker 2 out of every ISR, every live replica
// told), as Controller.#onControllerFailover runs them. The store is an in-memory double that writes
// synchronously and the channel drops the requests, so the figures are the controller's own CPU and
// allocation: the time of each step, the process's CPU and GC time over both, and the longest the event
// loop waited for a turn meanwhile (a timer every millisecond), which is what a 2 s failure detector on
// the same thread would see. Each run is a fresh child process; with --builds the builds alternate
// (A B A B ...), each child loading that checkout's dist/.
import { spawn } from 'node:child_process'
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks'
import { resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { flag } from './lib/flags.js'

interface RunResult {
  partitions: number
  leadersMs: number
  replicasMs: number
  offlineMs: number
  onlineMs: number
  cpuMs: number
  gcMs: number
  longestWaitMs: number
  heapUsedMb: number
}

/** One failover in this process, with the modules of the checkout at root. */
async function child(root: string, partitions: number): Promise<RunResult> {
  const dist = (p: string): string => pathToFileURL(resolve(root, 'dist', 'src', p)).href
  const { ControllerContext } = await import(dist('cluster/controller/context.js'))
  const { PartitionStateMachine } = await import(dist('cluster/controller/partition-state-machine.js'))
  const { ReplicaStateMachine } = await import(dist('cluster/controller/replica-state-machine.js'))
  const { RequestBatch, LeaderAndIsrMemory } = await import(dist('cluster/controller/request-batch.js'))
  const { partitionKey } = await import(dist('cluster/metadata-store.js'))
  const { silentLogger } = await import(dist('observability/logger.js'))
  type State = { leaderAndIsr: { leader: number; leaderEpoch: number; isr: number[]; leaderRecoveryState: number; partitionEpoch: number }; controllerEpoch: number }
  type Write = { topic: string; partition: number; state: State }
  const states = new Map<string, State>()
  const store = {
    getPartitionStates: async (ps: readonly { topic: string; partition: number }[]) => {
      const out = new Map<string, State>()
      for (const tp of ps) {
        const k = partitionKey(tp.topic, tp.partition)
        const s = states.get(k)
        if (s !== undefined) out.set(k, structuredClone(s))
      }
      return out
    },
    updatePartitionStates: async (_token: unknown, writes: readonly Write[]) => {
      const result = { updated: new Map(), badVersion: [] as string[], failed: new Map() }
      for (const w of writes) {
        const k = partitionKey(w.topic, w.partition)
        const written = { ...w.state.leaderAndIsr, partitionEpoch: states.get(k)!.leaderAndIsr.partitionEpoch + 1 }
        states.set(k, { leaderAndIsr: written, controllerEpoch: w.state.controllerEpoch })
        result.updated.set(k, written)
      }
      return result
    },
  }
  const ctx = new ControllerContext()
  ctx.epoch = 3
  for (const id of [1, 3]) ctx.liveBrokers.set(id, { id, epoch: BigInt(id), rack: null, endpoints: [{ listenerName: 'PLAINTEXT', host: '127.0.0.1', port: 9000 + id, securityProtocol: 'PLAINTEXT' }] })
  const perTopic = 1000
  for (let t = 0; t * perTopic < partitions; t++) {
    const topic = `topic-${t}`
    ctx.allTopics.add(topic)
    for (let p = 0; p < Math.min(perTopic, partitions - t * perTopic); p++) {
      const replicas = [0, 1, 2].map((i) => 1 + ((p + i) % 3))
      ctx.setAssignment({ topic, partition: p }, { replicas, addingReplicas: [], removingReplicas: [] })
      const s: State = { leaderAndIsr: { leader: replicas[0]!, leaderEpoch: 4, isr: [...replicas], leaderRecoveryState: 0, partitionEpoch: 7 }, controllerEpoch: 2 }
      states.set(partitionKey(topic, p), s)
      ctx.putLeadership({ topic, partition: p }, structuredClone(s))
    }
  }
  const channel = { send: () => undefined, drained: async () => undefined }
  const told = new LeaderAndIsrMemory()
  const batch = new RequestBatch(ctx, () => channel, 3, 'PLAINTEXT', () => undefined, undefined, told)
  const log = silentLogger()
  const partitionStateMachine = new PartitionStateMachine({ context: ctx, store, batch, uncleanLeaderElection: async (ts: string[]) => new Map(ts.map((t) => [t, false])), log })
  const replicaStateMachine = new ReplicaStateMachine({ context: ctx, store, batch, told, log })

  let gcMs = 0
  const gc = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) gcMs += e.duration
  })
  gc.observe({ entryTypes: ['gc'] })
  const delay = monitorEventLoopDelay({ resolution: 1 })
  delay.enable()
  await new Promise((r) => setTimeout(r, 50))
  gcMs = 0
  delay.reset()
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  told.remember()
  await partitionStateMachine.startup()
  const t1 = performance.now()
  const replicas = (await replicaStateMachine.startup()) as { offlineMs: number; onlineMs: number }
  told.forget()
  const t2 = performance.now()
  const cpu = process.cpuUsage(cpu0)
  delay.disable()
  await new Promise((r) => setTimeout(r, 20))
  gc.disconnect()
  return {
    partitions,
    leadersMs: Math.round(t1 - t0),
    replicasMs: Math.round(t2 - t1),
    ...replicas,
    cpuMs: Math.round((cpu.user + cpu.system) / 1000),
    gcMs: Math.round(gcMs),
    longestWaitMs: Math.round(delay.max / 1e6),
    heapUsedMb: Math.round(process.memoryUsage().heapUsed / 2 ** 20),
  }
}

const self = fileURLToPath(import.meta.url)
const childRoot = flag('child')
if (childRoot !== undefined) {
  process.stdout.write(JSON.stringify(await child(childRoot, Number(flag('partitions') ?? 100_000))) + '\n')
  process.exit(0)
}

const partitions = Number(flag('partitions') ?? 100_000)
const runs = Number(flag('runs') ?? 3)
if (!(partitions >= 1000) || !(runs >= 1)) throw new Error('--partitions wants 1000 or more, --runs 1 or more')
const here = resolve(self, '..', '..', '..')
const builds = (flag('builds') ?? 'this=.').split(',').map((b) => {
  const [label, dir] = b.includes('=') ? (b.split('=') as [string, string]) : [b, b]
  return { label, root: dir === '.' || dir === 'this' ? here : resolve(dir) }
})

function runChild(root: string): Promise<RunResult> {
  return new Promise((resolveRun, reject) => {
    const c = spawn(process.execPath, [self, '--child', root, '--partitions', String(partitions)], { stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    c.stdout.on('data', (d: Buffer) => (out += d.toString()))
    c.once('exit', (code) => (code === 0 ? resolveRun(JSON.parse(out.trim().split('\n').pop()!) as RunResult) : reject(new Error(`child for ${root} exited ${code}`))))
  })
}

const rows: { build: string; r: RunResult }[] = []
for (let i = 0; i < runs; i++) {
  for (const b of builds) {
    const r = await runChild(b.root)
    rows.push({ build: b.label, r })
    process.stderr.write(`[controller-failover] ${b.label} run ${i + 1}: ${JSON.stringify(r)}\n`)
  }
}
process.stdout.write(`\nController failover at ${partitions.toLocaleString('en-US')} partitions, broker 2 of 3 dead (in-memory store; ${runs} run(s) per build)\n`)
process.stdout.write('| build | leaders step ms | replicas step ms (offline / online) | CPU ms | GC ms | longest event-loop wait ms | heap used MiB |\n| --- | --- | --- | --- | --- | --- | --- |\n')
for (const { build, r } of rows) {
  process.stdout.write(`| ${build} | ${r.leadersMs} | ${r.replicasMs} (${r.offlineMs} / ${r.onlineMs}) | ${r.cpuMs} | ${r.gcMs} | ${r.longestWaitMs} | ${r.heapUsedMb} |\n`)
}
