// The cluster's end-to-end latency alone, instrumented, at small scale (issue 14's "p99 <= 10 ms at
// 50,000 records/s, acks=all, replication factor 3"), and, with --builds, several builds side by side in one
// run so that a change is measured against its baseline under the same machine load.
//
//   npm run bench:cluster-latency -- [--seconds 10] [--warmup 3] [--rate 50000]
//       [--builds this=.,base=/path/to/other/checkout] [--rounds 1] [--variants rf3-all,rf1-1] [--json FILE]
//       [--cpu-prof DIR]   (each broker runs with node --cpu-prof, its profile written into DIR at its exit)
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
import { flag } from '../lib/flags.js'

const seconds = Number(flag('seconds') ?? 10)
const warmup = Number(flag('warmup') ?? 3)
const rate = Number(flag('rate') ?? 50_000)
const rounds = Number(flag('rounds') ?? 1)
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
const variants = (flag('variants') ?? 'rf3-all').split(',') as Variant[]
for (const v of variants) if (!(v in VARIANTS)) throw new Error(`unknown variant ${v} (${Object.keys(VARIANTS).join(', ')})`)
if (!(seconds >= 1) || !(warmup >= 0) || !(rate > 0) || !(rounds >= 1)) throw new Error('bad --seconds / --warmup / --rate / --rounds')

const PROBE_JS = join(REPO_ROOT, 'dist', 'bench', 'broker', 'process-probe.js')
const E2E_JS = join(REPO_ROOT, 'dist', 'bench', 'broker', 'e2e-latency.js')
const log = (s: string): void => void process.stderr.write(`[cluster-latency] ${s}\n`)
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

interface Percentiles { p50: number; p99: number; p999: number; max: number; avg?: number }
interface ProbeLine { t: number; loop: { p50: number; p99: number; max: number }; gc: { minor: number; major: number; other: number; ms: number; maxMs: number }; cpuMs: number }
interface Measured {
  build: string
  round: number
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
}

/** Each record's e2e cut at its acknowledgement: means over the median band and over the tail. */
interface Split {
  joined: number
  ackToPoll: { p50: number; p99: number }
  /** Records whose e2e is within +-10% of the median: mean e2e, mean append-to-ack, mean ack-to-poll. */
  median: { n: number; e2e: number; ack: number; after: number }
  /** Records whose e2e is at or above the e2e p99. */
  tail: { n: number; e2e: number; ack: number; after: number }
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
  for (let i = 0; i < c.length; i += 2) {
    const ackNs = ackBySend.get(c[i]!)
    if (ackNs !== undefined) rows.push([(c[i + 1]! - c[i]!) / 1e6, (ackNs - c[i]!) / 1e6])
  }
  if (rows.length === 0) return null
  const byE2e = rows.map((r) => r[0]).sort((a, b) => a - b)
  const pct = (sorted: number[], q: number): number => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!
  const p50 = pct(byE2e, 0.5)
  const p99 = pct(byE2e, 0.99)
  const after = rows.map((r) => r[0] - r[1]).sort((a, b) => a - b)
  const band = (keep: (e2e: number) => boolean): Split['tail'] => {
    const sel = rows.filter((r) => keep(r[0]))
    const mean = (f: (r: [number, number]) => number): number => sel.reduce((a, r) => a + f(r), 0) / Math.max(1, sel.length)
    return { n: sel.length, e2e: mean((r) => r[0]), ack: mean((r) => r[1]), after: mean((r) => r[0] - r[1]) }
  }
  return {
    joined: rows.length,
    ackToPoll: { p50: pct(after, 0.5), p99: pct(after, 0.99) },
    median: band((e) => e >= p50 * 0.9 && e <= p50 * 1.1),
    tail: band((e) => e >= p99),
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

async function e2e(build: { label: string; root: string; clientRoot: string }, cluster: BenchCluster, probeFiles: Map<number, string>, topic: string, variant: Variant, round: number): Promise<Measured> {
  const env = { ...process.env, SKEIN_E2E_CLIENT_ROOT: build.clientRoot }
  const traceBase = join(tmpdir(), `skein-e2e-trace-${process.pid}-${Math.round(performance.now())}`)
  const traces = { producer: `${traceBase}-producer.f64`, consumer: `${traceBase}-consumer.f64` }
  const bootstrap = cluster.bootstrap()
  const consumer = spawn(process.execPath, [E2E_JS, 'consume', bootstrap, topic, String(seconds + 1), String(warmup)], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...env, SKEIN_E2E_TRACE: traces.consumer } })
  let cout = ''
  let cerr = ''
  consumer.stdout.on('data', (d: Buffer) => (cout += d.toString()))
  consumer.stderr.on('data', (d: Buffer) => (cerr += d.toString()))
  const done = new Promise<number | null>((res) => consumer.once('exit', (code) => res(code)))
  const killer = setTimeout(() => consumer.kill('SIGKILL'), (seconds + warmup + 90) * 1000)
  const load0 = loadavg()[0]!
  try {
    for (let i = 0; !cout.includes('ready\n'); i++) {
      if (i > 300 || consumer.exitCode !== null) throw new Error(`e2e consumer not ready:\n${cerr}`)
      await sleep(100)
    }
    const startedAt = Date.now()
    const pout = await runNode([E2E_JS, 'produce', bootstrap, topic, String(rate), String(seconds + warmup), String(VARIANTS[variant].acks), String(warmup)], (seconds + warmup + 60) * 1000, { env: { ...env, SKEIN_E2E_TRACE: traces.producer } })
    const endedAt = Date.now()
    const prod = JSON.parse(lastJsonLine(pout)) as { sent: number; failed: number; ratePerSec: number; loopDelayMs: { p99: number; max: number }; ackMs: Percentiles & { count: number }; cpuMs: number }
    if (prod.failed > 0) throw new Error(`${prod.failed} e2e records failed`)
    if ((await done) !== 0) throw new Error(`e2e consumer failed:\n${cerr}`)
    const c = JSON.parse(lastJsonLine(cout)) as { records: number; measured: number; latencyMs: Percentiles; series: { second: number; records: number; avgMs: number; maxMs: number }[]; loopDelayMs: { p99: number; max: number } | null; cpuMs: number | null }
    const measuredRecords = prod.ackMs.count
    const brokers = [...probeFiles].map(([id, file]) => {
      const lines = probeLines(file, startedAt + warmup * 1000, endedAt)
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
    return {
      build: build.label,
      round,
      variant,
      load: [load0, loadavg()[0]!],
      e2e: c.latencyMs,
      ack: prod.ackMs,
      records: c.measured,
      ratePerSec: prod.ratePerSec,
      series: c.series.map((w) => `${w.avgMs.toFixed(1)}/${w.maxMs.toFixed(0)}`).join(' '),
      clients: {
        producer: { loopP99: prod.loopDelayMs.p99, loopMax: prod.loopDelayMs.max, cpuUsPerRecord: (prod.cpuMs * 1000) / Math.max(1, measuredRecords) },
        consumer: { loopP99: c.loopDelayMs?.p99 ?? NaN, loopMax: c.loopDelayMs?.max ?? NaN, cpuUsPerRecord: ((c.cpuMs ?? NaN) * 1000) / Math.max(1, c.measured) },
      },
      brokers,
      split: split(traces.producer, traces.consumer),
    }
  } finally {
    rmSync(traces.producer, { force: true })
    rmSync(traces.consumer, { force: true })
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
      nodeArgs: ['--import', `file://${PROBE_JS}`, ...(cpuProfDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${resolve(cpuProfDir)}`, `--cpu-prof-name=broker-${build.label}-${round}-${id}.cpuprofile`])],
      env: { SKEIN_PROBE_OUT: probeFiles.get(id)! },
    }))
    try {
      for (const variant of variants) {
        const topic = `e2e-${variant}`
        const v = VARIANTS[variant]
        await createTopic(cluster.bootstrap(), { name: topic, numPartitions: 6, replicationFactor: v.replicationFactor })
        log(`  ${variant}: ${rate} records/s, ${warmup} s warm-up + ${seconds} s`)
        const m = await e2e(build, cluster, probeFiles, topic, variant, round)
        results.push(m)
        log(`  ${variant}: e2e p50 ${m.e2e.p50.toFixed(2)} p99 ${m.e2e.p99.toFixed(2)} p99.9 ${m.e2e.p999.toFixed(2)} ms; ack p50 ${m.ack.p50.toFixed(2)} p99 ${m.ack.p99.toFixed(2)} ms; load ${m.load.map((l) => l.toFixed(2)).join(' -> ')}`)
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
  process.stdout.write('| build | round | load 1m | e2e p50 / p99 / p99.9 / max ms | ack p50 / p99 / p99.9 ms | loop p99 / max ms: brokers 1, 2, 3; producer; consumer | broker GC: count, total ms, longest ms | CPU us/record: brokers 1, 2, 3; producer; consumer |\n')
  process.stdout.write('| --- | --- | --- | --- | --- | --- | --- | --- |\n')
  for (const r of rows) {
    process.stdout.write(
      `| ${r.build} | ${r.round} | ${r.load.map((l) => l.toFixed(1)).join(' -> ')} | ${ms(r.e2e.p50)} / ${ms(r.e2e.p99)} / ${ms(r.e2e.p999)} / ${ms(r.e2e.max)} | ${ms(r.ack.p50)} / ${ms(r.ack.p99)} / ${ms(r.ack.p999)} | ` +
        `${r.brokers.map((b) => `${ms(b.loopP99)}/${ms(b.loopMax)}`).join(', ')}; ${ms(r.clients.producer.loopP99)}/${ms(r.clients.producer.loopMax)}; ${ms(r.clients.consumer.loopP99)}/${ms(r.clients.consumer.loopMax)} | ` +
        `${r.brokers.map((b) => `${b.gcCount}, ${b.gcMs.toFixed(0)}, ${b.gcMaxMs.toFixed(1)}`).join('; ')} | ` +
        `${r.brokers.map((b) => us(b.cpuUsPerRecord)).join(', ')}; ${us(r.clients.producer.cpuUsPerRecord)}; ${us(r.clients.consumer.cpuUsPerRecord)} |\n`,
    )
  }
  for (const r of rows) {
    process.stdout.write(`  ${r.build} round ${r.round} per second (avg/max ms): ${r.series}\n`)
    process.stdout.write(`    brokers' CPU ms per second of the measured window: ${r.brokers.map((b) => `${b.id}: ${b.lines.map((l) => l.cpuMs.toFixed(0)).join(' ')}`).join('; ')}\n`)
    process.stdout.write(`    brokers' event-loop delay max per second: ${r.brokers.map((b) => `${b.id}: ${b.lines.map((l) => l.loop.max.toFixed(0)).join(' ')}`).join('; ')}\n`)
    const sp = r.split
    if (sp !== null) {
      process.stdout.write(
        `    split of ${sp.joined} records at their ack: ack-to-poll p50 ${ms(sp.ackToPoll.p50)} p99 ${ms(sp.ackToPoll.p99)}; ` +
          `median band (${sp.median.n}): e2e ${ms(sp.median.e2e)} = append-to-ack ${ms(sp.median.ack)} + ack-to-poll ${ms(sp.median.after)}; ` +
          `tail >= p99 (${sp.tail.n}): e2e ${ms(sp.tail.e2e)} = append-to-ack ${ms(sp.tail.ack)} + ack-to-poll ${ms(sp.tail.after)}\n`,
      )
    }
  }
}
if (jsonOut !== undefined) writeFileSync(jsonOut, JSON.stringify(results, null, 1))
process.exit(0)
