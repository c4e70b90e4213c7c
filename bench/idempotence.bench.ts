// Idempotence benchmark (node dist/bench/idempotence.bench.js): append throughput of the same batches
// with idempotence off (producerId -1) and on (producerId >= 0, consecutive sequences, so every batch
// goes through the producer state checks), side by side in one run:
//   1. PartitionLog.append on this thread (the cost of the checks themselves), 1 KiB and 16 KiB batches;
//   2. ShardRouter.append with one worker thread, 6 partitions, 4 rounds in flight (what Produce does).
// Batches are prepared before timing (each idempotent one with its own sequence and CRC, as a client
// sends them). Settings alternate off/on for ROUNDS rounds and the median is reported.
// Env: BENCH_MB (bytes appended per measurement, default 24), BENCH_ROUNDS (default 3).
import { mkdtempSync, rmSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { native } from '../src/addon/index.js'
import { silentLogger } from '../src/observability/logger.js'
import { BASE_SEQUENCE_OFFSET, CRC_OFFSET, ATTRIBUTES_OFFSET, PRODUCER_EPOCH_OFFSET, PRODUCER_ID_OFFSET, writeInt64 } from '../src/protocol/records/batch.js'
import { ShardRouter } from '../src/shard/index.js'
import { DEFAULT_LOG_CONFIG, LogManager } from '../src/storage/index.js'
import { ProducerStateManager } from '../src/storage/producer-state.js'
import { makeBenchBatch } from './lib/storage-fixtures.js'

const MiB = 1024 * 1024
const totalBytes = Number(process.env.BENCH_MB ?? 24) * MiB
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const PARTITIONS = 6
const IN_FLIGHT = 4

/** count copies of template, each in its own ArrayBuffer; idempotent ones get producer 1000+p, epoch 0, sequence per copy. */
function prepare(template: Buffer, records: number, count: number, producerId: number): Buffer[] {
  const out: Buffer[] = []
  for (let i = 0; i < count; i++) {
    const b = Buffer.allocUnsafeSlow(template.length)
    template.copy(b)
    if (producerId >= 0) {
      writeInt64(b, PRODUCER_ID_OFFSET, producerId)
      b.writeInt16BE(0, PRODUCER_EPOCH_OFFSET)
      b.writeInt32BE((i * records) % 0x80000000, BASE_SEQUENCE_OFFSET)
      b.writeUInt32BE(native.crc32c(b.subarray(ATTRIBUTES_OFFSET)), CRC_OFFSET)
    }
    out.push(b)
  }
  return out
}

function median(xs: number[]): number {
  const s = xs.slice().sort((a, b) => a - b)
  return s[s.length >> 1]!
}

/** records/s of appending count batches to one PartitionLog on this thread. */
async function logRun(batchBytes: number, idempotent: boolean): Promise<number> {
  const { batch, records } = makeBenchBatch(100, batchBytes)
  const count = Math.max(1, Math.floor(totalBytes / batch.length))
  const batches = prepare(batch, records, count, idempotent ? 1000 : -1)
  const dir = mkdtempSync(join(tmpdir(), 'skein-bench-idem-'))
  const m = LogManager.open({ dataDir: dir, defaults: { ...DEFAULT_LOG_CONFIG, segmentBytes: 64 * MiB }, cleanShutdown: true })
  try {
    const log = m.create('bench', 0)
    const t0 = performance.now()
    for (const b of batches) log.append(b, { leaderEpoch: 0 })
    const elapsed = (performance.now() - t0) / 1000
    if (log.logEndOffset !== count * records) throw new Error(`wrote ${log.logEndOffset} records, expected ${count * records}`)
    if (idempotent && log.producerState.size !== 1) throw new Error('the producer state was not kept')
    return (count * records) / elapsed
  } finally {
    await m.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

/** records/s through ShardRouter (one worker thread), PARTITIONS partitions, IN_FLIGHT rounds outstanding. */
async function routerRun(idempotent: boolean): Promise<number> {
  const { batch, records } = makeBenchBatch(100, 16 * 1024)
  const rounds = Math.max(1, Math.floor(totalBytes / batch.length / PARTITIONS))
  const perPartition = Array.from({ length: PARTITIONS }, (_, p) => prepare(batch, records, rounds, idempotent ? 2000 + p : -1))
  const dir = mkdtempSync(join(tmpdir(), 'skein-bench-idem-router-'))
  const router = await ShardRouter.start({ dataDir: dir, ioThreads: 1, logger: silentLogger(), defaults: { ...DEFAULT_LOG_CONFIG, segmentBytes: 64 * MiB } })
  try {
    for (const c of await router.createPartitions(Array.from({ length: PARTITIONS }, (_, partition) => ({ topic: 'bench', partition })))) {
      if (!c.ok) throw new Error(c.message)
    }
    let next = 0
    const t0 = performance.now()
    // Rounds are taken in order, so each partition's sequences arrive in order (the shard runs batches in order).
    const loop = async (): Promise<void> => {
      while (next < rounds) {
        const r = next++
        const items = perPartition.map((bs, partition) => ({ topic: 'bench', partition, records: bs[r]!, leaderEpoch: 0 }))
        for (const res of await router.append(items)) if (!res.ok || res.value.duplicate === true) throw new Error(res.ok ? 'unexpected duplicate' : res.message)
      }
    }
    await Promise.all(Array.from({ length: IN_FLIGHT }, loop))
    return (rounds * PARTITIONS * records) / ((performance.now() - t0) / 1000)
  } finally {
    await router.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

/** The producer state check and update alone, per one-batch payload (ns), after a warm-up. */
function checkCostNs(): number {
  const { batch, records } = makeBenchBatch(100, 1024)
  const batches = prepare(batch, records, 1000, 3000)
  const state = new ProducerStateManager(tmpdir())
  const n = 300_000
  let offset = 0
  let t0 = 0
  for (let i = 0; i < n + 50_000; i++) {
    if (i === 50_000) t0 = performance.now()
    const b = batches[i % 1000]!
    b.writeInt32BE((i * records) % 0x80000000, BASE_SEQUENCE_OFFSET)
    const check = state.checkAppend(b, [{ position: 0, recordCount: records, maxTimestamp: 0 }], offset, -1)
    if (check.kind !== 'append') throw new Error(`unexpected ${check.kind}`)
    state.applyAppend(check)
    offset += records
  }
  return ((performance.now() - t0) * 1e6) / n
}

interface Row {
  path: string
  'off records/s': string
  'on records/s': string
  'on/off': string
}

function row(path: string, off: number[], on: number[]): Row {
  const a = median(off)
  const b = median(on)
  return { path, 'off records/s': Math.round(a).toLocaleString('en-US'), 'on records/s': Math.round(b).toLocaleString('en-US'), 'on/off': (b / a).toFixed(3) }
}

const rows: Row[] = []
for (const batchBytes of [1024, 16 * 1024]) {
  const off: number[] = []
  const on: number[] = []
  for (let r = 0; r < ROUNDS; r++) {
    // Alternate which goes first, so neither always runs behind the other's writeback and GC.
    if (r % 2 === 0) off.push(await logRun(batchBytes, false))
    on.push(await logRun(batchBytes, true))
    if (r % 2 === 1) off.push(await logRun(batchBytes, false))
  }
  rows.push(row(`PartitionLog.append, ${batchBytes / 1024} KiB batches`, off, on))
}
{
  const off: number[] = []
  const on: number[] = []
  for (let r = 0; r < ROUNDS; r++) {
    if (r % 2 === 0) off.push(await routerRun(false))
    on.push(await routerRun(true))
    if (r % 2 === 1) off.push(await routerRun(false))
  }
  rows.push(row(`ShardRouter.append (1 worker), ${PARTITIONS} partitions, 16 KiB batches`, off, on))
}
console.log(`Idempotence on vs off: 100-byte records, ${totalBytes / MiB} MiB per measurement, median of ${ROUNDS} alternating rounds; ${cpus()[0]?.model ?? 'unknown CPU'} x${cpus().length}, node ${process.version}`)
console.table(rows)
console.log(`Producer state check + update alone: ${checkCostNs().toFixed(0)} ns per idempotent batch`)
