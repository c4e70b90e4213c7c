// The cluster's end-to-end latency alone, instrumented, at small scale (issue 14's "p99 <= 10 ms at
// 50,000 records/s, acks=all, replication factor 3"), and, with --builds, several builds side by side in one
// run so that a change is measured against its baseline under the same machine load.
//
//   npm run bench:cluster-latency -- [--seconds 10] [--warmup 3] [--rate 50000]
//       [--builds this=.,base=/path/to/other/checkout] [--rounds 1] [--variants rf3-all,rf1-1] [--json FILE]
//       [--clients skein,rdkafka]   (the client processes: Skein's own (bench/broker/e2e-latency.js, the
//                           default) and/or librdkafka (bench/broker/rdkafka-perf.c's latency mode: a producer and
//                           a consumer handle in one C process); each pass runs each on its own topic, in turn)
//       [--rdkafka-producer k=v,k=v] [--rdkafka-consumer k=v]   (librdkafka settings over the tool's defaults)
//       [--client-node-args "..."] [--broker-node-args "..."]   (node options for the client / broker processes)
//       [--client-prerun SECONDS]   (Skein's clients first run the same load on a side topic, unmeasured, so the
//                           measured topic's first seconds are those of a new topic with already-compiled clients)
//       [--same-topic 1]   (every pass on the first pass's topic: new clients on a topic the brokers already serve)
//       [--cpu-prof DIR]   (each broker runs with node --cpu-prof, its profile written into DIR at its exit)
//       [--passes 1]       (each variant N times on the same brokers, each pass with a fresh topic and fresh
//                           client processes: pass 2 on brokers warmed by pass 1 is what the full benchmark's
//                           latency run sees, after its throughput runs, with fresh clients and a new topic)
//
// For each round, for each build (in turn: A B A B ...): Debian's ZooKeeper and 3 brokers of that build
// (its dist/src/main.js, with the overrides of bench/broker/cluster.ts), a 6-partition topic per variant,
// then bench/broker/e2e-latency.js with that build's client (SKEIN_E2E_CLIENT_ROOT) for each variant:
//   rf3-all   replication factor 3, min.insync.replicas=2, acks=all (the target's workload)
//   rf3-1     replication factor 3, acks=1 (the consumer still reads up to the high watermark)
//   rf1-1     replication factor 1, acks=1 on the same brokers: no replication, the floor of produce + fetch
// What is reported per variant, over the measured window (after the warm-up):
//   e2e       append in the producer process to the record handed out by the consumer's poll: p50/p99/p99.9
//   ack       append to the producer's delivery callback (acks=all: leader append + replication + HW)
//   split     each record's e2e cut in two at its acknowledgement (both clients trace every measured record,
//             SKEIN_E2E_TRACE, joined on the send time): append-to-ack and ack-to-poll (the leader answers
//             the produce and wakes the consumer's fetch at the same HW move, so ack-to-poll is the
//             consumer's side: its fetch answer, the client's decoding and poll), for the median records and
//             for the records at or above the e2e p99
//   loop      each process's event-loop delay p99 and max (the brokers through bench/broker/process-probe.ts,
//             preloaded with --import: GC pauses, long synchronous work, waiting for a CPU)
//   gc        each broker's collections and pause time (PerformanceObserver 'gc')
//   cpu       CPU time per record of every process (brokers, producer, consumer), microseconds
// and the load average before and after. Nothing is written unless --json names a file.
// Prints one table per variant. A build is a built checkout (npx tsc -p tsconfig.json there); `.` or `this`
// is this one; `label=BROKER_DIR+CLIENT_DIR` runs one checkout's brokers with another's clients.
import { readFileSync, rmSync } from 'node:fs'
import { performance } from 'node:perf_hooks'
import { spawn } from 'node:child_process'
import { loadavg } from 'node:os'
import { join, resolve } from 'node:path'
import { writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { REPO_ROOT } from './broker-process.js'
import { createTopic, startBenchCluster, type BenchCluster } from './cluster.js'
import { lastJsonLine } from './machine.js'
import { runNode } from './run.js'
import { flag, nodeArgsFlag } from '../lib/flags.js'
import { rdkafkaLatency } from './rdkafka-perf.js'

const seconds = Number(flag('seconds') ?? 10)
const warmup = Number(flag('warmup') ?? 3)
const rate = Number(flag('rate') ?? 50_000)
const rounds = Number(flag('rounds') ?? 1)
const passes = Number(flag('passes') ?? 1)
const jsonOut = flag('json')
const cpuProfDir = flag('cpu-prof')
const builds = (flag('builds') ?? 'this=.').split(',').map((b) => {
  const [label, dirs] = b.includes('=') ? (b.split('=') as [string, string]) : [b, b]
  const at = (dir: string): string => (dir === '.' || dir === 'this' ? REPO_ROOT : resolve(dir))
  // BROKER_DIR+CLIENT_DIR: the brokers of one build with the clients of another.
  const [brokerDir, clientDir] = dirs.includes('+') ? (dirs.split('+') as [string, string]) : [dirs, dirs]
  return { label, root: at(brokerDir), clientRoot: at(clientDir) }
})
const VARIANTS = {
  'rf3-all': { replicationFactor: 3, acks: -1 },
  'rf3-1': { replicationFactor: 3, acks: 1 },
  'rf1-1': { replicationFactor: 1, acks: 1 },
} as const
type Variant = keyof typeof VARIANTS
type Client = 'skein' | 'rdkafka'
const clients = (flag('clients') ?? 'skein').split(',') as Client[]
for (const c of clients) if (c !== 'skein' && c !== 'rdkafka') throw new Error(`unknown client ${c} (skein, rdkafka)`)
const clientNodeArgs = nodeArgsFlag('client-node-args')
const brokerNodeArgs = nodeArgsFlag('broker-node-args')
const pairs = (f: string | undefined): Record<string, string> =>
  Object.fromEntries((f ?? '').split(',').filter((p) => p !== '').map((p) => [p.slice(0, p.indexOf('=')), p.slice(p.indexOf('=') + 1)]))
const rdkafkaProducerConfig = pairs(flag('rdkafka-producer'))
const rdkafkaConsumerConfig = pairs(flag('rdkafka-consumer'))
const sameTopic = flag('same-topic') === '1'
const clientPrerun = Number(flag('client-prerun') ?? 0)
const variants = (flag('variants') ?? 'rf3-all').split(',') as Variant[]
for (const v of variants) if (!(v in VARIANTS)) throw new Error(`unknown variant ${v} (${Object.keys(VARIANTS).join(', ')})`)
if (!(seconds >= 1) || !(warmup >= 0) || !(rate > 0) || !(rounds >= 1) || !(passes >= 1)) throw new Error('bad --seconds / --warmup / --rate / --rounds / --passes')

const PROBE_JS = join(REPO_ROOT, 'dist', 'bench', 'broker', 'process-probe.js')
const E2E_JS = join(REPO_ROOT, 'dist', 'bench', 'broker', 'e2e-latency.js')
const log = (s: string): void => void process.stderr.write(`[cluster-latency] ${s}\n`)
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

interface Percentiles { p50: number; p99: number; p999: number; max: number; avg?: number }
interface ProbeLine { t: number; loop: { p50: number; p99: number; max: number }; gc: { minor: number; major: number; other: number; ms: number; maxMs: number }; cpuMs: number }
interface Measured {
  build: string
  client: Client
  round: number
  pass: number
  variant: Variant
  load: [number, number]
  e2e: Percentiles
  ack: Percentiles
  records: number
  ratePerSec: number
  series: string
  clients: { producer: { loopP99: number; loopMax: number; cpuUsPerRecord: number }; consumer: { loopP99: number; loopMax: number; cpuUsPerRecord: number } }
  brokers: { id: number; loopP99: number; loopMax: number; gcCount: number; gcMs: number; gcMaxMs: number; cpuUsPerRecord: number; lines: ProbeLine[] }[]
  split: Split | null
  /** The clients' probe lines, from their start. */
  clientLines: { producer: ProbeLine[]; consumer: ProbeLine[] }
}

/** Each record's e2e cut at its acknowledgement: means over the median band and over the tail. */
interface Split {
  joined: number
  ackToPoll: { p50: number; p99: number }
  /** Records whose e2e is within +-10% of the median: mean e2e, mean append-to-ack, mean ack-to-poll. */
  median: { n: number; e2e: number; ack: number; after: number }
  /** Records whose e2e is at or above the e2e p99. */
  tail: { n: number; e2e: number; ack: number; after: number }
  /** Per second of send time from the first traced record: where the first seconds' latency is. */
  seconds: { n: number; e2e: { p50: number; p99: number }; ack: { p50: number; p99: number }; after: { p50: number; p99: number } }[]
  /** The first 2 s in tenths of a second, the same figures. */
  tenths: Split['seconds']
}

function readPairs(file: string): Float64Array {
  try {
    const b = readFileSync(file)
    return new Float64Array(b.buffer, b.byteOffset, b.length / 8)
  } catch {
    return new Float64Array(0)
  }
}

function split(producerFile: string, consumerFile: string): Split | null {
  const p = readPairs(producerFile)
  const c = readPairs(consumerFile)
  if (p.length === 0 || c.length === 0) return null
  const ackBySend = new Map<number, number>()
  for (let i = 0; i < p.length; i += 2) if (p[i + 1]! > 0) ackBySend.set(p[i]!, p[i + 1]!)
  const rows: [number, number][] = [] // [e2e ms, append-to-ack ms]
  const perSecond: [number, number][][] = []
  const perTenth: [number, number][][] = []
  let firstSendNs = Infinity
  for (let i = 0; i < c.length; i += 2) if (c[i]! < firstSendNs) firstSendNs = c[i]!
  for (let i = 0; i < c.length; i += 2) {
    const ackNs = ackBySend.get(c[i]!)
    if (ackNs === undefined) continue
    const row: [number, number] = [(c[i + 1]! - c[i]!) / 1e6, (ackNs - c[i]!) / 1e6]
    rows.push(row)
    const second = Math.floor((c[i]! - firstSendNs) / 1e9)
    ;(perSecond[second] ??= []).push(row)
    const tenth = Math.floor((c[i]! - firstSendNs) / 1e8)
    if (tenth < 20) (perTenth[tenth] ??= []).push(row)
  }
  if (rows.length === 0) return null
  const byE2e = rows.map((r) => r[0]).sort((a, b) => a - b)
  const pct = (sorted: number[], q: number): number => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!
  const p50p99 = (xs: number[]): { p50: number; p99: number } => {
    const sorted = xs.sort((a, b) => a - b)
    return sorted.length === 0 ? { p50: NaN, p99: NaN } : { p50: pct(sorted, 0.5), p99: pct(sorted, 0.99) }
  }
  const p50 = pct(byE2e, 0.5)
  const p99 = pct(byE2e, 0.99)
  const after = rows.map((r) => r[0] - r[1]).sort((a, b) => a - b)
  const band = (keep: (e2e: number) => boolean): Split['tail'] => {
    const sel = rows.filter((r) => keep(r[0]))
    const mean = (f: (r: [number, number]) => number): number => sel.reduce((a, r) => a + f(r), 0) / Math.max(1, sel.length)
    return { n: sel.length, e2e: mean((r) => r[0]), ack: mean((r) => r[1]), after: mean((r) => r[0] - r[1]) }
  }
  const window = (sec: [number, number][] = []): Split['seconds'][number] => ({
    n: sec.length,
    e2e: p50p99(sec.map((r) => r[0])),
    ack: p50p99(sec.map((r) => r[1])),
    after: p50p99(sec.map((r) => r[0] - r[1])),
  })
  return {
    joined: rows.length,
    ackToPoll: { p50: pct(after, 0.5), p99: pct(after, 0.99) },
    median: band((e) => e >= p50 * 0.9 && e <= p50 * 1.1),
    tail: band((e) => e >= p99),
    seconds: Array.from(perSecond, window),
    tenths: Array.from(perTenth, window),
  }
}

function probeLines(file: string, from: number, to: number): ProbeLine[] {
  let text = ''
  try {
    text = readFileSync(file, 'utf8')
  } catch {
    return []
  }
  return text.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as ProbeLine).filter((l) => l.t > from + 1000 && l.t <= to)
}

function brokerFigures(probeFiles: Map<number, string>, from: number, to: number): Measured['brokers'] {
  return [...probeFiles].map(([id, file]) => {
    const lines = probeLines(file, from, to)
    const cpuMs = lines.reduce((a, l) => a + l.cpuMs, 0)
    // Records in the probe's windows: the rate times the windows' length.
    const windowRecords = lines.length * rate
    return {
      id,
      loopP99: Math.max(0, ...lines.map((l) => l.loop.p99)),
      loopMax: Math.max(0, ...lines.map((l) => l.loop.max)),
      gcCount: lines.reduce((a, l) => a + l.gc.minor + l.gc.major + l.gc.other, 0),
      gcMs: lines.reduce((a, l) => a + l.gc.ms, 0),
      gcMaxMs: Math.max(0, ...lines.map((l) => l.gc.maxMs)),
      cpuUsPerRecord: windowRecords === 0 ? NaN : (cpuMs * 1000) / windowRecords,
      lines,
    }
  })
}

/** librdkafka's producer and consumer (rdkafka-perf latency, one C process): every second is measured. */
async function e2eRdkafka(build: { label: string }, cluster: BenchCluster, probeFiles: Map<number, string>, topic: string, variant: Variant, round: number, pass: number): Promise<Measured> {
  const load0 = loadavg()[0]!
  const startedAt = Date.now()
  const r = await rdkafkaLatency(cluster.bootstrap(), topic, rate, seconds + warmup, { acks: VARIANTS[variant].acks === -1 ? 'all' : String(VARIANTS[variant].acks), ...rdkafkaProducerConfig }, rdkafkaConsumerConfig)
  const endedAt = Date.now()
  if (!r.ok) throw new Error(r.reason)
  const t = r.value
  const nan = { loopP99: NaN, loopMax: NaN }
  return {
    build: build.label,
    client: 'rdkafka',
    round,
    pass,
    variant,
    load: [load0, loadavg()[0]!],
    e2e: t.e2eMs,
    ack: t.ackMs,
    records: t.e2eMs.count,
    ratePerSec: t.ratePerSec,
    series: t.series.map((w) => `${w.p50Ms.toFixed(1)}/${w.p99Ms.toFixed(1)}/${w.maxMs.toFixed(0)}`).join(' '),
    // One process for both: its CPU is shown as the producer's.
    clients: { producer: { ...nan, cpuUsPerRecord: (t.cpuMs * 1000) / Math.max(1, t.sent) }, consumer: { ...nan, cpuUsPerRecord: NaN } },
    brokers: brokerFigures(probeFiles, startedAt, endedAt),
    split: null,
    clientLines: { producer: [], consumer: [] },
  }
}

async function e2e(build: { label: string; root: string; clientRoot: string }, cluster: BenchCluster, probeFiles: Map<number, string>, topic: string, variant: Variant, round: number, pass: number): Promise<Measured> {
  const bootstrap = cluster.bootstrap()
  const env: NodeJS.ProcessEnv = { ...process.env, SKEIN_E2E_CLIENT_ROOT: build.clientRoot }
  if (clientPrerun > 0) {
    env.SKEIN_E2E_PRERUN_TOPIC = `${topic}-prerun-${pass}`
    env.SKEIN_E2E_PRERUN_SECONDS = String(clientPrerun)
    await createTopic(bootstrap, { name: env.SKEIN_E2E_PRERUN_TOPIC, numPartitions: 6, replicationFactor: VARIANTS[variant].replicationFactor })
  }
  const traceBase = join(tmpdir(), `skein-e2e-trace-${process.pid}-${Math.round(performance.now())}`)
  const traces = { producer: `${traceBase}-producer.f64`, consumer: `${traceBase}-consumer.f64` }
  // The clients carry the probe too: their own event-loop delay, GC and CPU per second, start-up included.
  const clientProbes = { producer: `${traceBase}-producer-probe.jsonl`, consumer: `${traceBase}-consumer-probe.jsonl` }
  const probeArgs = ['--import', `file://${PROBE_JS}`, ...clientNodeArgs]
  const consumer = spawn(process.execPath, [...probeArgs, E2E_JS, 'consume', bootstrap, topic, String(seconds + 1), String(warmup)], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...env, SKEIN_E2E_TRACE: traces.consumer, SKEIN_PROBE_OUT: clientProbes.consumer } })
  let cout = ''
  let cerr = ''
  consumer.stdout.on('data', (d: Buffer) => (cout += d.toString()))
  consumer.stderr.on('data', (d: Buffer) => (cerr += d.toString()))
  const done = new Promise<number | null>((res) => consumer.once('exit', (code) => res(code)))
  const killer = setTimeout(() => consumer.kill('SIGKILL'), (seconds + warmup + clientPrerun + 90) * 1000)
  const load0 = loadavg()[0]!
  try {
    for (let i = 0; !cout.includes('ready\n'); i++) {
      if (i > 300 || consumer.exitCode !== null) throw new Error(`e2e consumer not ready:\n${cerr}`)
      await sleep(100)
    }
    const startedAt = Date.now()
    const pout = await runNode([...probeArgs, E2E_JS, 'produce', bootstrap, topic, String(rate), String(seconds + warmup), String(VARIANTS[variant].acks), String(warmup)], (seconds + warmup + clientPrerun + 60) * 1000, { env: { ...env, SKEIN_E2E_TRACE: traces.producer, SKEIN_PROBE_OUT: clientProbes.producer } })
    const endedAt = Date.now()
    const prod = JSON.parse(lastJsonLine(pout)) as { sent: number; failed: number; ratePerSec: number; loopDelayMs: { p99: number; max: number }; ackMs: Percentiles & { count: number }; cpuMs: number }
    if (prod.failed > 0) throw new Error(`${prod.failed} e2e records failed`)
    if ((await done) !== 0) throw new Error(`e2e consumer failed:\n${cerr}`)
    const c = JSON.parse(lastJsonLine(cout)) as { records: number; measured: number; latencyMs: Percentiles; series: { second: number; records: number; avgMs: number; p50Ms: number; p99Ms: number; maxMs: number }[]; loopDelayMs: { p99: number; max: number } | null; cpuMs: number | null }
    const measuredRecords = prod.ackMs.count
    const brokers = brokerFigures(probeFiles, startedAt + (clientPrerun + warmup) * 1000, endedAt)
    return {
      build: build.label,
      client: 'skein',
      round,
      pass,
      variant,
      load: [load0, loadavg()[0]!],
      e2e: c.latencyMs,
      ack: prod.ackMs,
      records: c.measured,
      ratePerSec: prod.ratePerSec,
      series: c.series.map((w) => `${w.p50Ms.toFixed(1)}/${w.p99Ms.toFixed(1)}/${w.maxMs.toFixed(0)}`).join(' '),
      clients: {
        producer: { loopP99: prod.loopDelayMs.p99, loopMax: prod.loopDelayMs.max, cpuUsPerRecord: (prod.cpuMs * 1000) / Math.max(1, measuredRecords) },
        consumer: { loopP99: c.loopDelayMs?.p99 ?? NaN, loopMax: c.loopDelayMs?.max ?? NaN, cpuUsPerRecord: ((c.cpuMs ?? NaN) * 1000) / Math.max(1, c.measured) },
      },
      brokers,
      split: split(traces.producer, traces.consumer),
      clientLines: { producer: probeLines(clientProbes.producer, 0, Infinity), consumer: probeLines(clientProbes.consumer, 0, Infinity) },
    }
  } finally {
    rmSync(traces.producer, { force: true })
    rmSync(traces.consumer, { force: true })
    rmSync(clientProbes.producer, { force: true })
    rmSync(clientProbes.consumer, { force: true })
    clearTimeout(killer)
    if (consumer.exitCode === null) consumer.kill('SIGKILL')
  }
}

const results: Measured[] = []
for (let round = 1; round <= rounds; round++) {
  for (const build of builds) {
    log(`round ${round}, build ${build.label} (brokers ${build.root}, clients ${build.clientRoot}): ZooKeeper and 3 brokers`)
    const probeFiles = new Map([1, 2, 3].map((id) => [id, join(tmpdir(), `skein-probe-${process.pid}-${build.label}-${id}.jsonl`)]))
    const cluster = await startBenchCluster([1, 2, 3], tmpdir(), log, (id) => ({
      mainJs: join(build.root, 'dist', 'src', 'main.js'),
      nodeArgs: ['--import', `file://${PROBE_JS}`, ...brokerNodeArgs, ...(cpuProfDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${resolve(cpuProfDir)}`, `--cpu-prof-name=broker-${build.label}-${round}-${id}.cpuprofile`])],
      env: { SKEIN_PROBE_OUT: probeFiles.get(id)! },
    }))
    try {
      for (let pass = 1; pass <= passes; pass++) for (const variant of variants) for (const client of clients) {
        const topic = sameTopic ? `e2e-${variant}-${client}` : `e2e-${variant}-${pass}-${client}`
        const v = VARIANTS[variant]
        if (!sameTopic || pass === 1) await createTopic(cluster.bootstrap(), { name: topic, numPartitions: 6, replicationFactor: v.replicationFactor })
        log(`  ${variant} pass ${pass}, ${client} clients: ${rate} records/s, ${warmup} s warm-up + ${seconds} s`)
        const m = client === 'skein' ? await e2e(build, cluster, probeFiles, topic, variant, round, pass) : await e2eRdkafka(build, cluster, probeFiles, topic, variant, round, pass)
        results.push(m)
        log(`  ${variant} pass ${pass}, ${client} clients: e2e p50 ${m.e2e.p50.toFixed(2)} p99 ${m.e2e.p99.toFixed(2)} p99.9 ${m.e2e.p999.toFixed(2)} ms; ack p50 ${m.ack.p50.toFixed(2)} p99 ${m.ack.p99.toFixed(2)} ms; load ${m.load.map((l) => l.toFixed(2)).join(' -> ')}`)
      }
    } finally {
      await cluster.stop()
      for (const f of probeFiles.values()) rmSync(f, { force: true })
    }
  }
}

const ms = (x: number): string => (Number.isFinite(x) ? x.toFixed(2) : '-')
const us = (x: number): string => (Number.isFinite(x) ? x.toFixed(2) : '-')
for (const variant of variants) {
  const rows = results.filter((r) => r.variant === variant)
  process.stdout.write(`\n${variant} (${rate} records/s, ${seconds} s measured after ${warmup} s)\n`)
  process.stdout.write('| build | clients | round.pass | load 1m | e2e p50 / p99 / p99.9 / max ms | ack p50 / p99 / p99.9 ms | loop p99 / max ms: brokers 1, 2, 3; producer; consumer | broker GC: count, total ms, longest ms | CPU us/record: brokers 1, 2, 3; producer; consumer |\n')
  process.stdout.write('| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n')
  for (const r of rows) {
    process.stdout.write(
      `| ${r.build} | ${r.client} | ${r.round}.${r.pass} | ${r.load.map((l) => l.toFixed(1)).join(' -> ')} | ${ms(r.e2e.p50)} / ${ms(r.e2e.p99)} / ${ms(r.e2e.p999)} / ${ms(r.e2e.max)} | ${ms(r.ack.p50)} / ${ms(r.ack.p99)} / ${ms(r.ack.p999)} | ` +
        `${r.brokers.map((b) => `${ms(b.loopP99)}/${ms(b.loopMax)}`).join(', ')}; ${ms(r.clients.producer.loopP99)}/${ms(r.clients.producer.loopMax)}; ${ms(r.clients.consumer.loopP99)}/${ms(r.clients.consumer.loopMax)} | ` +
        `${r.brokers.map((b) => `${b.gcCount}, ${b.gcMs.toFixed(0)}, ${b.gcMaxMs.toFixed(1)}`).join('; ')} | ` +
        `${r.brokers.map((b) => us(b.cpuUsPerRecord)).join(', ')}; ${us(r.clients.producer.cpuUsPerRecord)}; ${us(r.clients.consumer.cpuUsPerRecord)} |\n`,
    )
  }
  for (const r of rows) {
    process.stdout.write(`  ${r.build} ${r.client} clients, round ${r.round} pass ${r.pass} per second from the first record consumed (p50/p99/max ms): ${r.series}\n`)
    process.stdout.write(`    brokers' CPU ms per second of the measured window: ${r.brokers.map((b) => `${b.id}: ${b.lines.map((l) => l.cpuMs.toFixed(0)).join(' ')}`).join('; ')}\n`)
    process.stdout.write(`    brokers' event-loop delay max per second: ${r.brokers.map((b) => `${b.id}: ${b.lines.map((l) => l.loop.max.toFixed(0)).join(' ')}`).join('; ')}\n`)
    for (const [name, lines] of Object.entries(r.clientLines)) {
      process.stdout.write(`    ${name} per second from its start (CPU ms, loop max ms, GC count/ms): ${lines.map((l) => `${l.cpuMs.toFixed(0)},${l.loop.max.toFixed(0)},${l.gc.minor + l.gc.major + l.gc.other}/${l.gc.ms.toFixed(0)}`).join(' ')}\n`)
    }
    process.stdout.write(`    brokers' GC per second (collections/ms, longest ms): ${r.brokers.map((b) => `${b.id}: ${b.lines.map((l) => `${l.gc.minor + l.gc.major + l.gc.other}/${l.gc.ms.toFixed(0)},${l.gc.maxMs.toFixed(0)}`).join(' ')}`).join('; ')}\n`)
    const sp = r.split
    if (sp !== null) {
      process.stdout.write(
        `    split of ${sp.joined} records at their ack: ack-to-poll p50 ${ms(sp.ackToPoll.p50)} p99 ${ms(sp.ackToPoll.p99)}; ` +
          `median band (${sp.median.n}): e2e ${ms(sp.median.e2e)} = append-to-ack ${ms(sp.median.ack)} + ack-to-poll ${ms(sp.median.after)}; ` +
          `tail >= p99 (${sp.tail.n}): e2e ${ms(sp.tail.e2e)} = append-to-ack ${ms(sp.tail.ack)} + ack-to-poll ${ms(sp.tail.after)}\n`,
      )
      process.stdout.write(
        `    per second of send time, p50/p99 ms of e2e | append-to-ack | ack-to-poll: ${sp.seconds.map((x, i) => `${i + 1}s ${ms(x.e2e.p50)}/${ms(x.e2e.p99)} | ${ms(x.ack.p50)}/${ms(x.ack.p99)} | ${ms(x.after.p50)}/${ms(x.after.p99)}`).join('; ')}\n`,
      )
      process.stdout.write(
        `    the first 2 s per 100 ms of send time, p50/p99 ms of e2e | append-to-ack: ${sp.tenths.map((x, i) => `${(i / 10).toFixed(1)}s ${ms(x.e2e.p50)}/${ms(x.e2e.p99)} | ${ms(x.ack.p50)}/${ms(x.ack.p99)}`).join('; ')}\n`,
      )
    }
  }
}
if (jsonOut !== undefined) writeFileSync(jsonOut, JSON.stringify(results, null, 1))
process.exit(0)
