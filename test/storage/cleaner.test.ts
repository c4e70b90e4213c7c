// The log cleaner over real segment files: compaction to the latest value per key, tombstones and their
// delete horizon, min/max compaction lag, the dirty ratio, the active segment, reads and ListOffsets
// across the gaps compaction leaves, batch metadata kept, grouping of small segments, retention policy.
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { native } from '../../src/addon/index.js'
import { BatchHeaderView, buildRecordBatch, iterateBatches } from '../../src/protocol/records/index.js'
import type { RecordInput } from '../../src/protocol/records/index.js'
import { deflateBatch, inflateBatch } from '../../src/protocol/records/inflate.js'
import { CLEANER_OFFSET_CHECKPOINT, DELETE_HORIZON_MASK } from '../../src/storage/cleaner/index.js'
import type { LogManager, PartitionLog } from '../../src/storage/index.js'
import { T0, openManager, regionBytes, tempDir } from './helpers.js'

const dirs: Array<() => void> = []
const managers: LogManager[] = []
afterEach(async () => {
  for (const m of managers.splice(0)) await m.close()
  for (const c of dirs.splice(0)) c()
})

/** A clock tests move by hand. */
function clock(start = T0): { now: () => number; set: (t: number) => void; advance: (ms: number) => void } {
  let t = start
  return { now: () => t, set: (v) => (t = v), advance: (ms) => (t += ms) }
}

const COMPACT = { cleanupPolicy: 'compact' as const, segmentBytes: 2048, indexIntervalBytes: 256, minCleanableDirtyRatio: 0.01 }

function setup(overrides: Parameters<typeof openManager>[1] = {}, c = clock()): { m: LogManager; log: PartitionLog; dir: string; c: ReturnType<typeof clock> } {
  const d = tempDir('skein-cleaner-')
  dirs.push(d.cleanup)
  const m = openManager(d.path, { ...COMPACT, ...overrides }, { now: c.now })
  managers.push(m)
  const log = m.create('t', 0)
  return { m, log, dir: log.dir, c }
}

function kv(key: string | null, value: string | null, timestamp = T0): RecordInput {
  return { key: key === null ? null : Buffer.from(key), value: value === null ? null : Buffer.from(value), timestamp }
}

function append(log: PartitionLog, records: RecordInput[], opts: Parameters<typeof buildRecordBatch>[2] = {}): { baseOffset: number; lastOffset: number } {
  return log.append(buildRecordBatch(records, native.crc32c, opts), { leaderEpoch: 0 })
}

interface Rec {
  offset: number
  key: string | null
  value: string | null
  timestamp: number
}

/** Every record readable from offset on, decoded with the codec-aware decoder. */
function readRecords(m: LogManager, log: PartitionLog, from = log.logStartOffset): Rec[] {
  const r = log.read(from, 1 << 30)
  const bytes = regionBytes(r)
  m.releaseLease(r.leaseId)
  const out: Rec[] = []
  for (const b of iterateBatches(bytes)) {
    const inflated = inflateBatch(bytes.subarray(b.position), 1 << 26)
    for (const rec of inflated.records) {
      out.push({
        offset: inflated.header.baseOffset + rec.offsetDelta,
        key: rec.key?.toString() ?? null,
        value: rec.value?.toString() ?? null,
        timestamp: inflated.header.baseTimestamp + rec.timestampDelta,
      })
    }
  }
  return out
}

/** Writes rounds x keys updates, values `k<i>-v<round>`, batches of `perBatch` records. */
function writeUpdates(log: PartitionLog, keys: number, rounds: number, perBatch = 5, ts = T0): Map<string, { offset: number; value: string }> {
  const latest = new Map<string, { offset: number; value: string }>()
  let pending: RecordInput[] = []
  const flush = (): void => {
    if (pending.length === 0) return
    const { baseOffset } = append(log, pending)
    pending.forEach((r, i) => latest.set(r.key!.toString(), { offset: baseOffset + i, value: r.value!.toString() }))
    pending = []
  }
  for (let round = 0; round < rounds; round++) {
    for (let k = 0; k < keys; k++) {
      pending.push(kv(`k${k}`, `k${k}-v${round}`, ts))
      if (pending.length === perBatch) flush()
    }
  }
  flush()
  return latest
}

function latestByKey(recs: Rec[]): Map<string, Rec> {
  const m = new Map<string, Rec>()
  for (const r of recs) if (r.key !== null) m.set(r.key, r)
  return m
}

describe('compaction', () => {
  it('keeps only the latest record per key, at its original offset, and leaves the active segment alone', async () => {
    const { m, log } = setup()
    const latest = writeUpdates(log, 20, 30)
    const before = log.state()
    const activeBase = log.segmentBaseOffsets().at(-1)!
    const activeBefore = readRecords(m, log, activeBase)
    expect(before.segmentCount).toBeGreaterThan(5)

    const r = await m.cleaner.clean(log)
    expect(r.cleaned).toBe(true)
    expect(r.endOffset).toBe(activeBase)
    expect(r.recordsRemoved).toBeGreaterThan(0)

    const after = log.state()
    expect(after.logEndOffset).toBe(before.logEndOffset)
    expect(after.logStartOffset).toBe(before.logStartOffset)
    expect(after.sizeBytes).toBeLessThan(before.sizeBytes / 3)
    expect(log.segmentBaseOffsets().at(-1)).toBe(activeBase)

    const recs = readRecords(m, log)
    // Below the active segment: one record per key, each the latest of that key there.
    const cleanPart = recs.filter((x) => x.offset < activeBase)
    expect(new Set(cleanPart.map((x) => x.key)).size).toBe(cleanPart.length)
    // The active segment is byte-for-byte what it was.
    expect(readRecords(m, log, activeBase)).toEqual(activeBefore)
    // Every key still reads back as its latest value, at the offset it was written at.
    const got = latestByKey(recs)
    expect(got.size).toBe(latest.size)
    for (const [k, v] of latest) expect(got.get(k)).toMatchObject({ offset: v.offset, value: v.value })
    // Offsets only grow.
    for (let i = 1; i < recs.length; i++) expect(recs[i]!.offset).toBeGreaterThan(recs[i - 1]!.offset)
    // The clean/dirty boundary is persisted.
    expect(existsSync(join(log.dir, CLEANER_OFFSET_CHECKPOINT))).toBe(true)
    expect(readdirSync(log.dir).filter((n) => n.endsWith('.cleaned') || n.endsWith('.swap'))).toEqual([])
  })
})
