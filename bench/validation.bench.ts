// What validating every produced record costs (issue 30), per codec (npm run bench:validation), in two
// tables from one run:
// 1. In process: PartitionLog.append of the same producer batches (100 keyed records of ~100 B each,
//    about 11 KB before compression), with the record walk (validated: every record's structure,
//    compressed batches decompressed in bounded chunks) and without it (unvalidated: header and CRC only,
//    what the append path did before, switched by benchOnlySkipRecordWalk). The two alternate A B A B,
//    each round on a fresh partition that is deleted afterwards; the table gives the median round of each:
//    records appended per second of wall time, and CPU time (user + system) per record.
// 2. Through a broker: per codec, two broker processes (io.threads=0, fresh data dirs) started by the
//    bench-only entry bench/lib/validation-broker.ts, one validating and one with the record walk switched
//    off; a raw produce load (bench/lib/produce-load.ts: pre-built acks=1 Produce requests, one batch per
//    partition, the codec's real bytes, pipelined over a few connections) goes to one of them at a time,
//    in alternating rounds (A B, B A, ...) after a warm-up of each. The table gives the medians per
//    variant: records/s acknowledged, the broker's CPU (user + system of its pid, /proc) per record, and
//    the ratios. Every response must carry error 0, each broker's log end offsets must add up to the
//    records acknowledged, and each broker is first sent a batch only the record walk refuses, to show the
//    switch took effect.
// Both tables are written to bench/results/VALIDATION-RESULTS.md when the whole bench ran.
// Env: BENCH_PARTS (append,broker: the default is both), BENCH_CODECS (default none,lz4,zstd,snappy,gzip);
// in process BENCH_ROUNDS (rounds per variant, default 6), BENCH_ROUND_MS (default 500); through the broker
// BENCH_BROKER_ROUNDS (default 6), BENCH_BROKER_ROUND_MS (default 2000), BENCH_BROKER_WARMUP_MS (default 2000).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ErrorCode, errorName } from '../src/domain/errors.js'
import { benchOnlySkipRecordWalk } from '../src/protocol/records/validate.js'
import { DEFAULT_LOG_CONFIG, LogManager } from '../src/storage/index.js'
import { RawClient } from '../test/harness/raw-client.js'
import { benchDir, mainThreadSchedStat, processCpuMicros, type RunningBroker, startBroker } from './broker/broker-process.js'
import { machineInfo } from './broker/machine.js'
import { ProduceLoad } from './lib/produce-load.js'
import { BENCH_RESULTS_DIR } from './lib/results-dir.js'
import { producerBatch, RECORDS_PER_BATCH, trailingBytesBatch, VALIDATION_CODECS } from './lib/validation-batches.js'

const PARTS = (process.env.BENCH_PARTS ?? 'append,broker').split(',').map((p) => p.trim())
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6)
const ROUND_MS = Number(process.env.BENCH_ROUND_MS ?? 500)
const BROKER_ROUNDS = Number(process.env.BENCH_BROKER_ROUNDS ?? 6)
const BROKER_ROUND_MS = Number(process.env.BENCH_BROKER_ROUND_MS ?? 2000)
const BROKER_WARMUP_MS = Number(process.env.BENCH_BROKER_WARMUP_MS ?? 2000)
/** Load before each measured window, not counted: every connection has its requests in flight again. */
const RAMP_MS = 300
const RECORDS = RECORDS_PER_BATCH
/** Through the broker: each request carries one batch for each of these partitions. */
const PARTITIONS = 8
const CONNECTIONS = 4
const IN_FLIGHT = 8
const TOPIC = 'validation-bench'
const PROBE_TOPIC = 'validation-probe'
const ENTRY_JS = join(dirname(fileURLToPath(import.meta.url)), 'lib', 'validation-broker.js')
const ALL_CODECS = VALIDATION_CODECS
const codecFilter = process.env.BENCH_CODECS?.split(',').map((c) => c.trim())
const CODECS = ALL_CODECS.filter(([name]) => codecFilter === undefined || codecFilter.includes(name))

type Row = Record<string, string | number>

interface Round {
  recordsPerSecond: number
  cpuNsPerRecord: number
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 === 1 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2
}

const T0 = performance.now()

function log(msg: string): void {
  process.stderr.write(`[validation +${((performance.now() - T0) / 1000).toFixed(1)} s] ${msg}\n`)
}

// ---- 1. in process: PartitionLog.append ----

async function appendTable(): Promise<Row[]> {
  const dir = mkdtempSync(join(tmpdir(), 'skein-bench-validation-'))
  const manager = LogManager.open({ dataDir: dir, defaults: { ...DEFAULT_LOG_CONFIG, compressionType: 'producer' }, cleanShutdown: true })
  let partition = 0

  /** Appends batch to a fresh partition for ROUND_MS, then deletes the partition. */
  const round = (batch: Buffer, validated: boolean): Round => {
    benchOnlySkipRecordWalk(!validated)
    const p = partition++
    const partitionLog = manager.create('bench', p)
    let n = 0
    const cpu0 = process.cpuUsage()
    const t0 = performance.now()
    let t = t0
    while (t - t0 < ROUND_MS) {
      for (let i = 0; i < 32; i++) partitionLog.append(batch, { leaderEpoch: 0 })
      n += 32
      t = performance.now()
    }
    const cpu = process.cpuUsage(cpu0)
    manager.delete('bench', p)
    benchOnlySkipRecordWalk(false)
    const records = n * RECORDS
    return { recordsPerSecond: records / ((t - t0) / 1000), cpuNsPerRecord: ((cpu.user + cpu.system) * 1000) / records }
  }

  const rows: Row[] = []
  try {
    for (const [name, codec] of CODECS) {
      const batch = producerBatch(codec)
      // Warm-up of both paths (JIT, codec contexts), not measured.
      round(batch, true)
      round(batch, false)
      const a: Round[] = []
      const b: Round[] = []
      for (let i = 0; i < ROUNDS; i++) {
        a.push(round(batch, true))
        b.push(round(batch, false))
      }
      const va = median(a.map((r) => r.recordsPerSecond))
      const vb = median(b.map((r) => r.recordsPerSecond))
      const ca = median(a.map((r) => r.cpuNsPerRecord))
      const cb = median(b.map((r) => r.cpuNsPerRecord))
      rows.push({
        codec: name,
        'batch B': batch.length,
        'validated rec/s': Math.round(va),
        'unvalidated rec/s': Math.round(vb),
        'throughput ratio': +(va / vb).toFixed(3),
        'validated CPU ns/rec': Math.round(ca),
        'unvalidated CPU ns/rec': Math.round(cb),
        'CPU ratio': +(ca / cb).toFixed(3),
      })
    }
  } finally {
    await manager.close()
    rmSync(dir, { recursive: true, force: true })
  }
  return rows
}

// ---- 2. through a broker process ----

interface BrokerRound extends Round {
  /** The load generator's own CPU per acknowledged record. */
  loaderNsPerRecord: number
  /** The broker's CPU over the round as a share of one core (near 100: the broker's thread is the bottleneck). */
  brokerCpuPercent: number
  /** Share of the round the broker's main thread was ready to run but waited for a core (other work on the machine). */
  runQueueWaitPercent: number
}

interface Variant {
  validated: boolean
  broker: RunningBroker
  admin: RawClient
  load: ProduceLoad
  rounds: BrokerRound[]
}

/** A broker of one variant with the bench topic, its switch checked, and a produce load connected to it. */
async function startVariant(validated: boolean, batch: Buffer): Promise<Variant> {
  const dataDir = benchDir(`validation-${validated ? 'validated' : 'unvalidated'}`)
  let broker: RunningBroker
  try {
    broker = await startBroker({ dataDir, mainJs: ENTRY_JS, entryArgs: validated ? [] : ['--skip-record-walk'], overrides: ['io.threads=0'] })
  } catch (err) {
    rmSync(dataDir, { recursive: true, force: true })
    throw err
  }
  let admin: RawClient | undefined
  try {
    admin = await RawClient.connect('127.0.0.1', broker.port, 30000)
    for (const [topic, partitions] of [[TOPIC, PARTITIONS], [PROBE_TOPIC, 1]] as const) {
      const created = await admin.createTopic(topic, partitions)
      if (created.errorCode !== 0) throw new Error(`CreateTopics ${topic}: ${errorName(created.errorCode)} ${created.errorMessage ?? ''}`)
    }
    const probe = await admin.produce(PROBE_TOPIC, 0, trailingBytesBatch(), 1)
    const expected = validated ? ErrorCode.CORRUPT_MESSAGE : ErrorCode.NONE
    if (probe.errorCode !== expected) {
      throw new Error(`the ${validated ? 'validated' : 'unvalidated'} broker answered a batch with trailing bytes with ${errorName(probe.errorCode)}, expected ${errorName(expected)}: the record walk switch did not take effect`)
    }
    const load = await ProduceLoad.open({ port: broker.port, topic: TOPIC, partitions: PARTITIONS, batch, recordsPerBatch: RECORDS, connections: CONNECTIONS, inFlight: IN_FLIGHT })
    return { validated, broker, admin, load, rounds: [] }
  } catch (err) {
    admin?.close()
    await broker.stop()
    rmSync(dataDir, { recursive: true, force: true })
    throw err
  }
}

async function brokerRound(v: Variant, rampMs: number, windowMs: number): Promise<BrokerRound> {
  const sample = (): { cpuMicros: number; runQueueWaitNs: number } => ({ cpuMicros: processCpuMicros(v.broker.pid), runQueueWaitNs: mainThreadSchedStat(v.broker.pid).runQueueWaitNs })
  const { window, before, after } = await v.load.run(rampMs, windowMs, sample)
  if (window.records === 0) throw new Error('no record was acknowledged in a round')
  const cpuMicros = after.cpuMicros - before.cpuMicros
  return {
    recordsPerSecond: window.records / window.seconds,
    cpuNsPerRecord: (cpuMicros * 1000) / window.records,
    loaderNsPerRecord: (window.loaderCpuMicros * 1000) / window.records,
    brokerCpuPercent: (cpuMicros / (window.seconds * 1e6)) * 100,
    runQueueWaitPercent: ((after.runQueueWaitNs - before.runQueueWaitNs) / (window.seconds * 1e9)) * 100,
  }
}

/** The broker's log end offsets must add up to the records the load saw acknowledged: nothing dropped. */
async function checkStored(v: Variant): Promise<void> {
  let stored = 0n
  for (let p = 0; p < PARTITIONS; p++) {
    const res = await v.admin.listOffset(TOPIC, p, -1n)
    if (res.errorCode !== 0) throw new Error(`ListOffsets ${TOPIC}-${p}: ${errorName(res.errorCode)}`)
    stored += res.offset
  }
  if (stored !== BigInt(v.load.ackedRecords)) throw new Error(`the ${v.validated ? 'validated' : 'unvalidated'} broker stored ${stored} records, ${v.load.ackedRecords} were acknowledged`)
}

async function stopVariant(v: Variant): Promise<void> {
  v.load.close()
  v.admin.close()
  // The data is thrown away: a broker that takes long to flush it is killed.
  await v.broker.stop(5000)
  rmSync(v.broker.dataDir, { recursive: true, force: true })
}

async function brokerTable(): Promise<{ rows: Row[]; detail: Row[] }> {
  const rows: Row[] = []
  const detail: Row[] = []
  for (const [name, codec] of CODECS) {
    const batch = producerBatch(codec)
    log(`${name}: starting a validated and an unvalidated broker`)
    const variants = await Promise.all([startVariant(true, batch), startVariant(false, batch)])
    log(`${name}: brokers ready, warm-up and rounds`)
    try {
      // Warm-up of each broker (JIT, codec contexts, page cache), not measured.
      for (const v of variants) await brokerRound(v, 0, BROKER_WARMUP_MS)
      // A B, B A, A B, ...: each variant goes first in half the pairs, so neither always runs right after
      // the other's load (the page cache it left dirty, the machine's drift) and order effects cancel.
      for (let i = 0; i < BROKER_ROUNDS; i++) {
        for (const v of i % 2 === 0 ? variants : [...variants].reverse()) v.rounds.push(await brokerRound(v, RAMP_MS, BROKER_ROUND_MS))
      }
      for (const v of variants) await checkStored(v)
      log(`${name}: rounds done, stopping the brokers`)
    } finally {
      await Promise.all(variants.map(stopVariant))
    }
    const [a, b] = variants as [Variant, Variant]
    const va = median(a.rounds.map((r) => r.recordsPerSecond))
    const vb = median(b.rounds.map((r) => r.recordsPerSecond))
    const ca = median(a.rounds.map((r) => r.cpuNsPerRecord))
    const cb = median(b.rounds.map((r) => r.cpuNsPerRecord))
    const throughputRatio = va / vb
    const cpuRatio = ca / cb
    const met = throughputRatio >= 0.9 && cpuRatio <= 1 / 0.9
    rows.push({
      codec: name,
      'batch B': batch.length,
      'validated rec/s': Math.round(va),
      'unvalidated rec/s': Math.round(vb),
      'throughput ratio': +throughputRatio.toFixed(3),
      'validated broker CPU ns/rec': Math.round(ca),
      'unvalidated broker CPU ns/rec': Math.round(cb),
      'CPU ratio': +cpuRatio.toFixed(3),
      'loader CPU ns/rec': Math.round(median([...a.rounds, ...b.rounds].map((r) => r.loaderNsPerRecord))),
      '≥ 0.9': name === 'gzip' ? (met ? 'yes (not required)' : 'no (not required)') : met ? 'yes' : 'NO',
    })
    for (const v of variants) {
      detail.push({
        codec: name,
        variant: v.validated ? 'validated' : 'unvalidated',
        'rec/s per round': v.rounds.map((r) => Math.round(r.recordsPerSecond)).join(' '),
        'broker CPU ns/rec per round': v.rounds.map((r) => Math.round(r.cpuNsPerRecord)).join(' '),
        'broker CPU % of a core per round': v.rounds.map((r) => Math.round(r.brokerCpuPercent)).join(' '),
        'broker waiting for a core % per round': v.rounds.map((r) => Math.round(r.runQueueWaitPercent)).join(' '),
      })
    }
    log(`${name}: validated ${Math.round(va)} rec/s ${Math.round(ca)} ns/rec, unvalidated ${Math.round(vb)} rec/s ${Math.round(cb)} ns/rec`)
  }
  return { rows, detail }
}

// ---- the run and its report ----

function markdownTable(rows: Row[]): string {
  if (rows.length === 0) return '(no rows)'
  const headers = Object.keys(rows[0]!)
  const cell = (v: string | number): string => (typeof v === 'number' && Number.isInteger(v) ? v.toLocaleString('en-US') : String(v))
  return [`| ${headers.join(' | ')} |`, `| ${headers.map(() => '---').join(' | ')} |`, ...rows.map((r) => `| ${headers.map((h) => cell(r[h]!)).join(' | ')} |`)].join('\n')
}

const load0 = loadavg()
const machine = machineInfo(tmpdir())
let appendRows: Row[] | undefined
let broker: { rows: Row[]; detail: Row[] } | undefined
if (PARTS.includes('append')) {
  appendRows = await appendTable()
  console.log(`PartitionLog.append, ${RECORDS} records per batch, ${ROUNDS} alternating rounds of ${ROUND_MS} ms per variant (medians)`)
  console.table(appendRows)
}
if (PARTS.includes('broker')) {
  broker = await brokerTable()
  console.log(
    `Through a broker process (io.threads=0): acks=1 Produce of one ${RECORDS}-record batch to each of ${PARTITIONS} partitions, ` +
      `${CONNECTIONS} connections x ${IN_FLIGHT} in flight, ${BROKER_ROUNDS} alternating rounds of ${BROKER_ROUND_MS} ms per variant after ${BROKER_WARMUP_MS} ms of warm-up (medians)`,
  )
  console.table(broker.rows)
  console.table(broker.detail)
}
const load1 = loadavg()

if (appendRows === undefined || broker === undefined || CODECS.length !== ALL_CODECS.length) {
  log('a partial run (BENCH_PARTS or BENCH_CODECS): bench/results/VALIDATION-RESULTS.md not written')
} else {
  const fmtLoad = (l: number[]): string => l.map((x) => x.toFixed(2)).join(' ')
  const md = `# Skein validation benchmark results

Generated by \`npm run bench:validation\` on ${machine.date}; load average ${fmtLoad(load0)} at the start, ${fmtLoad(load1)} at
the end. Do not edit by hand: rerun the benchmark.

- CPU: ${machine.cpu}, ${machine.cores} cores available to node (shared by the broker and the load generator)
- Memory: ${machine.memoryGiB} GiB
- Disk (data directory): ${machine.disk}
- Kernel: ${machine.kernel}
- Node.js: ${machine.node}

**Validated** runs the produce path as shipped: every batch's header and CRC, then the record walk (every
record's length and varints, offset deltas, the declared count, no trailing bytes; a compressed batch is
decompressed in bounded chunks for it). **Unvalidated** is the same build with the record walk switched off
(\`benchOnlySkipRecordWalk\`, reachable only from the bench): headers and CRC, what the append path did
before issue 30. Ratios are validated / unvalidated: a throughput ratio of 0.9 is 10% fewer records per
second, a CPU ratio of 1.111 is 11% more CPU per record. Issue 30 asks for validated ≥ 0.9 of unvalidated
for every codec but gzip; the last column says whether both ratios meet it.

## Through a broker process

The broker (io.threads=0, the default: partitions on the main thread) in a child process started by
\`bench/lib/validation-broker.ts\`, one fresh broker and data directory per variant and codec. The load:
acks=1 Produce v9 requests, each with one ${RECORDS}-record batch (the codec's real compressed bytes) for each
of ${PARTITIONS} partitions of one topic, encoded once and written raw over ${CONNECTIONS} connections with
${IN_FLIGHT} requests in flight on each (\`bench/lib/produce-load.ts\`). After ${BROKER_WARMUP_MS} ms of warm-up per
broker, ${BROKER_ROUNDS} rounds of ${BROKER_ROUND_MS} ms per variant, alternating validated / unvalidated (A B, B A,
A B, ...: each goes first in half the pairs); medians.
**rec/s**: records acknowledged per second; **broker CPU ns/rec**: user + system CPU of the broker's pid
(/proc/<pid>/stat) over the round per acknowledged record; **loader CPU**: the load generator's own. Every
response carried error 0 for every partition, each broker's log end offsets added up to the records
acknowledged, and before the load each broker was sent a batch with bytes after its last record: the
validated broker refused it (CORRUPT_MESSAGE), the unvalidated one stored it, so the switch was in effect.

${markdownTable(broker.rows)}

Per round, in the order they ran (validated and unvalidated alternating), with the broker's CPU as a share
of one core and the share of the round its main thread was ready to run but waited for a core
(/proc/<pid>/schedstat): the two add up to about 100 when the broker is the bottleneck, and the waiting
share is the machine's other work taking the cores.

${markdownTable(broker.detail)}

## In process: PartitionLog.append

The same batches appended to a partition log in the bench's own process, ${ROUNDS} alternating rounds of
${ROUND_MS} ms per variant on a fresh partition each; medians. CPU is the process's user + system time.

${markdownTable(appendRows)}

Two cores are shared by the broker and the load generator (and by whatever else runs on the machine: see
the load averages and the waiting share above), so records/s moves with what else runs; CPU per record is
the steadier figure.
`
  writeFileSync(join(BENCH_RESULTS_DIR, 'VALIDATION-RESULTS.md'), md)
  log(`wrote ${join(BENCH_RESULTS_DIR, 'VALIDATION-RESULTS.md')}`)
}
