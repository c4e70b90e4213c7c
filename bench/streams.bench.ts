// Skein Streams benchmark (npm run bench:streams [-- --quick] [-- --threads]): against a Skein broker
// run as its own process, over N records of 100 bytes (a 9-byte key among 10,000, a 91-byte value) in a
// 4-partition topic, in one run:
//   raw consume             - the client consumer reading the N records (the broker's consume figure)
//   raw consume + produce   - the client consumer and producer copying the N records to another topic,
//                             without Streams: the ceiling of the stateless topology on this machine
//   stateless map/filter    - filter + mapValues + to, at_least_once and exactly_once_v2
//   stateful count          - groupByKey().count() (LMDB store, changelog, the record cache of 10 MiB as
//                             Kafka's default) + to, both guarantees, and at_least_once without the cache
//                             (statestore.cache.max.bytes=0: one output record per input record)
//   restore                 - a store rebuilt from a changelog of about 1 GB (100 MB with --quick):
//                             1 KiB values, from the start of the application to RUNNING
// Each processing run is a fresh application reading from the start, timed until it has processed the
// whole input: at_least_once until the output holds one record per input record, exactly_once_v2 (and
// the cached count at_least_once, whose output holds one record per key per commit) until the offsets it
// committed reach the input's end; the cached count at_least_once runs with commit.interval.ms=1000 for
// that (its time includes up to a second of waiting for the commit after the last record). --threads also compares, for the stateless case, one
// thread, two threads on the event loop (num.stream.threads=2), and two worker_threads each running an
// instance (the alternative threading model). Each processing row also gives the rate after the
// application reached RUNNING (its group join and task start-up taken out), and the CPU time (user +
// system) this process spent per input record: on a shared machine it varies far less than the rates.
// Flags: --records N (default 10,000,000; --quick 1,000,000), --restore-mb M (changelog size of the restore
// run, default 1024; --quick 100), --only RUN (one run, e.g. stateful-at_least_once, for profiling: no
// raw consume, no restore), --no-write (print only; bench/results/STREAMS-RESULTS.md stays untouched). The env
// variables BENCH_RECORDS, BENCH_RESTORE_MB and BENCH_ONLY do the same.
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads'
import { fileURLToPath } from 'node:url'
import { Admin, Consumer, Producer } from '../src/client/index.js'
import { LATEST_TIMESTAMP } from '../src/client/offsets.js'
import { Consumed, KafkaStreams, Materialized, Produced, Serdes, StreamsBuilder, type Topology } from '../src/streams/index.js'
import { flag } from './lib/flags.js'
import { BENCH_RESULTS_DIR } from './lib/results-dir.js'

const QUICK = process.argv.includes('--quick')
const THREADS = process.argv.includes('--threads')
const WRITE = !process.argv.includes('--no-write')
const N = Number(flag('records') ?? process.env.BENCH_RECORDS ?? (QUICK ? 1_000_000 : 10_000_000))
const PARTITIONS = 4
const KEYS = 10_000
const RESTORE_MB = Number(flag('restore-mb') ?? process.env.BENCH_RESTORE_MB ?? (QUICK ? 100 : 1024))
const RESTORE_BYTES = RESTORE_MB * 1024 * 1024
const ONLY = flag('only') ?? process.env.BENCH_ONLY
if (!Number.isInteger(N) || N < 1000) throw new Error('--records must be an integer >= 1000')
if (!(RESTORE_MB > 0)) throw new Error('--restore-mb must be positive')

type Kind = 'stateless' | 'stateful' | 'stateful-nocache'

function topology(kind: Kind, input: string, output: string): Topology {
  const b = new StreamsBuilder()
  const s = b.stream(input, Consumed.with(Serdes.Bytes(), Serdes.Bytes()))
  if (kind === 'stateless') {
    s.filter((_k, v) => v[0] !== 0x7a)
      .mapValues((v) => v)
      .to(output, Produced.with(Serdes.Bytes(), Serdes.Bytes()))
  } else {
    s.groupByKey().count(Materialized.as('bench-counts')).toStream().to(output, Produced.with(Serdes.Bytes(), Serdes.Long()))
  }
  return b.build()
}

function appConfig(bootstrap: string, appId: string, guarantee: string, threads = 1, kind: Kind = 'stateless'): Record<string, unknown> {
  return {
    ...(kind === 'stateful-nocache' ? { 'statestore.cache.max.bytes': 0 } : {}),
    ...(kind === 'stateful' && guarantee === 'at_least_once' ? { 'commit.interval.ms': 1000 } : {}),
    'application.id': appId,
    'bootstrap.servers': bootstrap,
    'processing.guarantee': guarantee,
    'num.stream.threads': threads,
    'state.dir': mkdtempSync(join(tmpdir(), 'skein-bench-streams-')),
    'producer.batch.size': 262144,
    'producer.linger.ms': 20,
    'max.poll.records': 2000,
  }
}

async function produceInput(bootstrap: string, topic: string, n: number, valueSize = 91, distinctKeys = KEYS): Promise<void> {
  const p = new Producer({ bootstrapServers: bootstrap, batchSize: 262144, lingerMs: 10, enableIdempotence: false, acks: 1 })
  await p.topicInfo(topic)
  const value = Buffer.alloc(valueSize, 'v')
  let failed: Error | null = null
  const cb = (err: Error | null): void => {
    if (err !== null) failed ??= err
  }
  for (let i = 0; i < n; i++) {
    // 9 bytes: 'k', seven digits, 'x' (with a 91-byte value: a 100-byte record).
    const key = Buffer.from(`k${String(i % distinctKeys).padStart(7, '0')}x`)
    p.appendBatched(topic, undefined, key, value, undefined, cb)
    if (!p.hasCapacity) await p.waitForCapacity()
  }
  await p.flush()
  await p.close()
  if (failed !== null) throw failed
}

async function endOffsets(admin: Admin, topic: string, readCommitted = false): Promise<number[]> {
  const answers = await admin.listOffsets(Array.from({ length: PARTITIONS }, (_, partition) => ({ topic, partition, timestamp: LATEST_TIMESTAMP })), readCommitted ? 1 : 0)
  return Array.from({ length: PARTITIONS }, (_, p) => answers.get(`${topic}\u0000${p}`)!.offset)
}

async function rawConsume(bootstrap: string, topic: string, n: number): Promise<number> {
  const c = new Consumer({ bootstrapServers: bootstrap, autoOffsetReset: 'earliest', maxPollRecords: 5000, fetchMaxWaitMs: 100 })
  c.assign(Array.from({ length: PARTITIONS }, (_, partition) => ({ topic, partition })))
  let got = 0
  const t0 = performance.now()
  while (got < n) got += (await c.poll(500)).length
  const s = (performance.now() - t0) / 1000
  await c.close()
  return got / s
}

/** Copies the input to a new topic with the client alone (the settings Streams' producer gets here). */
async function rawCopy(bootstrap: string, admin: Admin, topic: string, n: number): Promise<{ rate: number; cpuMicros: number }> {
  const output = `bench-copy-${Date.now()}`
  await admin.createTopics([{ name: output, numPartitions: PARTITIONS, replicationFactor: 1 }])
  const c = new Consumer({ bootstrapServers: bootstrap, autoOffsetReset: 'earliest', maxPollRecords: 2000, fetchMaxWaitMs: 100 })
  const p = new Producer({ bootstrapServers: bootstrap, batchSize: 262144, lingerMs: 20 })
  await p.topicInfo(output)
  c.assign(Array.from({ length: PARTITIONS }, (_, partition) => ({ topic, partition })))
  let failed: Error | null = null
  const cb = (err: Error | null): void => {
    if (err !== null) failed ??= err
  }
  let got = 0
  const t0 = performance.now()
  const cpu0 = process.cpuUsage()
  while (got < n) {
    const records = await c.poll(500)
    for (const r of records) p.appendBatched(output, undefined, r.key, r.value, undefined, cb, 0, r.timestamp)
    got += records.length
    if (!p.hasCapacity) await p.waitForCapacity()
  }
  await p.flush()
  const s = (performance.now() - t0) / 1000
  const cpu = process.cpuUsage(cpu0)
  await c.close()
  await p.close()
  if (failed !== null) throw failed
  return { rate: got / s, cpuMicros: (cpu.user + cpu.system) / got }
}

interface AppRun {
  /** Records over the time from start() to the end. */
  rate: number
  /** Records over the time from RUNNING to the end (NaN when RUNNING was not seen before the end). */
  runningRate: number
  startSeconds: number
  /** CPU time (user + system) of this process per input record, in microseconds (NaN when not measured). */
  cpuMicros: number
}

/** Runs an application until its committed offsets reach the input's end. */
async function runApp(bootstrap: string, admin: Admin, kind: Kind, guarantee: string, input: string, ends: number[], threads = 1): Promise<AppRun> {
  const appId = `bench-${kind}-${guarantee}-${threads}-${Date.now()}`
  const output = `${appId}-out`
  await admin.createTopics([{ name: output, numPartitions: PARTITIONS, replicationFactor: 1 }])
  const cfg = appConfig(bootstrap, appId, guarantee, threads, kind)
  const streams = new KafkaStreams(topology(kind, input, output), cfg)
  const t0 = performance.now()
  const cpu0 = process.cpuUsage()
  let running = -1
  const watch = setInterval(() => {
    if (running < 0 && streams.state === 'RUNNING') running = performance.now()
  }, 5)
  await streams.start()
  if (guarantee === 'exactly_once_v2' || kind === 'stateful') await waitCommitted(admin, appId, input, ends)
  else await waitOutput(admin, output, ends)
  const end = performance.now()
  const cpu = process.cpuUsage(cpu0)
  clearInterval(watch)
  await streams.close()
  rmSync(cfg['state.dir'] as string, { recursive: true, force: true })
  return { rate: N / ((end - t0) / 1000), runningRate: running < 0 ? NaN : N / ((end - running) / 1000), startSeconds: running < 0 ? NaN : (running - t0) / 1000, cpuMicros: (cpu.user + cpu.system) / N }
}

/**
 * at_least_once commits offsets only every 30 s (Kafka's default): the run is done when the output holds
 * one record per input record (both topologies write one per input).
 */
async function waitOutput(admin: Admin, output: string, ends: number[]): Promise<void> {
  const total = ends.reduce((a, b) => a + b, 0)
  for (;;) {
    await new Promise((r) => setTimeout(r, 100))
    const out = await endOffsets(admin, output).catch(() => [0])
    if (out.reduce((a, b) => a + b, 0) >= total) return
  }
}

/** exactly_once_v2 commits input offsets with each transaction (every 100 ms): done when they reach the input's end. */
async function waitCommitted(admin: Admin, appId: string, input: string, ends: number[]): Promise<void> {
  for (;;) {
    await new Promise((r) => setTimeout(r, 100))
    const committed = await admin.fetchOffsets(appId).catch(() => new Map<string, number>())
    if (ends.every((e, p) => (committed.get(`${input}\u0000${p}`) ?? 0) >= e)) return
  }
}

/** Two worker threads, each an instance with one stream thread (the worker-thread model). */
async function runWorkers(bootstrap: string, admin: Admin, input: string, ends: number[]): Promise<AppRun> {
  const appId = `bench-workers-${Date.now()}`
  const output = `${appId}-out`
  await admin.createTopics([{ name: output, numPartitions: PARTITIONS, replicationFactor: 1 }])
  const t0 = performance.now()
  const workers = [0, 1].map(() => new Worker(fileURLToPath(import.meta.url), { workerData: { bootstrap, appId, input, output } }))
  await Promise.all(workers.map((w) => new Promise<void>((resolve, reject) => {
    w.once('message', () => resolve())
    w.once('error', reject)
  })))
  await waitOutput(admin, output, ends)
  const s = (performance.now() - t0) / 1000
  for (const w of workers) w.postMessage('stop')
  await Promise.all(workers.map((w) => new Promise((r) => w.once('exit', r))))
  return { rate: N / s, runningRate: NaN, startSeconds: NaN, cpuMicros: NaN }
}

async function worker(): Promise<void> {
  const { bootstrap, appId, input, output } = workerData as { bootstrap: string; appId: string; input: string; output: string }
  const streams = new KafkaStreams(topology('stateless', input, output), appConfig(bootstrap, appId, 'at_least_once'))
  await streams.start()
  parentPort!.postMessage('started')
  parentPort!.once('message', () => {
    void streams.close().then(() => process.exit(0))
  })
}

/** A store rebuilt from a changelog of about `bytes`: from start() to RUNNING. */
async function restore(bootstrap: string, admin: Admin): Promise<{ seconds: number; bytes: number; records: number }> {
  const appId = `bench-restore-${Date.now()}`
  const input = `${appId}-in`
  const changelog = `${appId}-bench-counts-changelog`
  await admin.createTopics([
    { name: input, numPartitions: PARTITIONS, replicationFactor: 1 },
    { name: changelog, numPartitions: PARTITIONS, replicationFactor: 1, configs: { 'cleanup.policy': 'compact' } },
  ])
  const valueSize = 1000
  const records = Math.floor(RESTORE_BYTES / (valueSize + 12))
  await produceInput(bootstrap, changelog, records, valueSize, records)
  const cfg = appConfig(bootstrap, appId, 'at_least_once')
  const streams = new KafkaStreams(topology('stateful', input, `${appId}-out`), cfg)
  const t0 = performance.now()
  await streams.start()
  while (streams.state !== 'RUNNING') await new Promise((r) => setTimeout(r, 50))
  const seconds = (performance.now() - t0) / 1000
  await streams.close()
  rmSync(cfg['state.dir'] as string, { recursive: true, force: true })
  return { seconds, bytes: records * (valueSize + 9), records }
}

/** The broker as its own process (dist/src/main.js), so that it does not share the event loop with Streams. */
async function startBroker(dataDir: string): Promise<{ bootstrap: string; child: ChildProcess }> {
  const port = await new Promise<number>((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const a = srv.address()
      srv.close(() => resolve(typeof a === 'object' && a !== null ? a.port : 0))
    })
  })
  const main = join(fileURLToPath(new URL('.', import.meta.url)), '..', 'src', 'main.js')
  const overrides = [`listeners=PLAINTEXT://127.0.0.1:${port}`, `log.dirs=${dataDir}`, 'group.initial.rebalance.delay.ms=0', 'log.segment.bytes=536870912']
  const child = spawn(process.execPath, [main, ...overrides.flatMap((o) => ['--override', o])], { stdio: ['ignore', 'pipe', 'inherit'] })
  await new Promise<void>((resolve, reject) => {
    let out = ''
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString()
      if (/"msg":"[^"]*ready/.test(out)) resolve()
    })
    child.once('exit', (code) => reject(new Error(`the broker exited (${code}) before it was ready:\n${out}`)))
  })
  child.stdout!.resume()
  return { bootstrap: `127.0.0.1:${port}`, child }
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'skein-bench-broker-'))
  let broker: { bootstrap: string; child: ChildProcess } | null = null
  const load0 = loadavg()
  const lines: string[] = []
  const out = (line: string): void => {
    console.log(line)
    lines.push(line)
  }
  try {
    broker = await startBroker(dataDir)
    const admin = new Admin({ bootstrapServers: broker.bootstrap })
    const input = 'bench-streams-in'
    await admin.createTopics([{ name: input, numPartitions: PARTITIONS, replicationFactor: 1 }])
    out(`Skein Streams benchmark: ${N.toLocaleString('en')} records of 100 bytes (10,000 keys), ${PARTITIONS} partitions, ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), node ${process.version}`)
    let t = performance.now()
    await produceInput(broker.bootstrap, input, N)
    out(`input produced in ${((performance.now() - t) / 1000).toFixed(1)} s`)
    const ends = await endOffsets(admin, input)
    const rows: [string, AppRun][] = []
    const fmt = (x: number): string => (Number.isNaN(x) ? '-' : Math.round(x).toLocaleString('en'))
    if (ONLY === undefined) {
      const raw = await rawConsume(broker.bootstrap, input, N)
      rows.push(['raw consume (client consumer, the broker\'s consume figure)', { rate: raw, runningRate: NaN, startSeconds: NaN, cpuMicros: NaN }])
    }
    if (ONLY === undefined || ONLY === 'raw-copy') {
      const copy = await rawCopy(broker.bootstrap, admin, input, N)
      rows.push(['raw consume + produce (client alone, no Streams: the stateless ceiling)', { rate: copy.rate, runningRate: NaN, startSeconds: NaN, cpuMicros: copy.cpuMicros }])
    }
    const label: Record<Kind, string> = { stateless: 'stateless map/filter', stateful: 'stateful count', 'stateful-nocache': 'stateful count without record cache' }
    for (const kind of ['stateless', 'stateful', 'stateful-nocache'] as Kind[]) {
      for (const g of ['at_least_once', 'exactly_once_v2']) {
        if (kind === 'stateful-nocache' && g === 'exactly_once_v2') continue
        if (ONLY !== undefined && ONLY !== `${kind}-${g}`) continue
        t = performance.now()
        rows.push([`${label[kind]} ${g}`, await runApp(broker.bootstrap, admin, kind, g, input, ends)])
      }
    }
    if (THREADS) {
      rows.push(['stateless at_least_once, 2 threads on the event loop', await runApp(broker.bootstrap, admin, 'stateless', 'at_least_once', input, ends, 2)])
      rows.push(['stateless at_least_once, 2 worker_threads (an instance each)', await runWorkers(broker.bootstrap, admin, input, ends)])
    }
    out('')
    out('| Run | records/s (from start()) | records/s (from RUNNING) | start-up to RUNNING | CPU of this process per record | target |')
    out('| --- | ---: | ---: | ---: | ---: | --- |')
    for (const [name, r] of rows) {
      const target = name.startsWith('stateless') && name.includes('at_least_once') ? 500_000 : name.startsWith('stateful count at_least_once') ? 250_000 : 0
      const best = Number.isNaN(r.runningRate) ? r.rate : r.runningRate
      out(`| ${name} | ${fmt(r.rate)} | ${fmt(r.runningRate)} | ${Number.isNaN(r.startSeconds) ? '-' : `${r.startSeconds.toFixed(1)} s`} | ${Number.isNaN(r.cpuMicros) ? '-' : `${r.cpuMicros.toFixed(2)} µs`} | ${target === 0 ? '-' : `${target.toLocaleString('en')}: ${best >= target ? 'met' : 'NOT met'}`} |`)
    }
    if (ONLY === undefined) {
      const r = await restore(broker.bootstrap, admin)
      out('')
      out(`Restore of a ${(r.bytes / 1024 / 1024).toFixed(0)} MiB store (${r.records.toLocaleString('en')} records of 1 KiB) from its changelog: ${r.seconds.toFixed(1)} s (${(r.bytes / 1024 / 1024 / r.seconds).toFixed(1)} MiB/s), from start() to RUNNING.`)
    }
    await admin.close()
    const load1 = loadavg()
    out('')
    out(`Load average ${load0[0]!.toFixed(1)} before and ${load1[0]!.toFixed(1)} after the run (1 minute); the broker ran as its own process on the same machine.`)
    if (WRITE && ONLY === undefined && !THREADS) {
      const md = `# bench:streams results\n\n\`npm run bench:streams -- --records ${N} --restore-mb ${RESTORE_MB}\` (bench/streams.bench.ts), ${new Date().toISOString().slice(0, 10)}. Do not edit by hand: rerun the benchmark.\nEach processing run is a fresh application reading the input from the start; at_least_once is done when the output holds one record per input record, exactly_once_v2 and the cached count at_least_once (commit.interval.ms=1000: its output holds one record per key per commit, and its time includes up to a second of waiting for the last commit) when the offsets it committed reach the input's end.\n\n${lines.join('\n')}\n`
      writeFileSync(join(BENCH_RESULTS_DIR, 'STREAMS-RESULTS.md'), md)
      console.log('\nWrote bench/results/STREAMS-RESULTS.md')
    }
  } finally {
    if (broker !== null) {
      broker.child.kill('SIGTERM')
      await new Promise((r) => broker!.child.once('exit', r))
    }
    rmSync(dataDir, { recursive: true, force: true })
  }
}

if (isMainThread) {
  main().catch((err: unknown) => {
    console.error(err)
    process.exit(1)
  })
} else {
  void worker()
}
