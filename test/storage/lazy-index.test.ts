// Lazily opened indexes (segment.ts header): what files a partition opens, when, and that lookups,
// appends and recovery stay exact when indexes are mapped on first use or held in memory.
import { closeSync, existsSync, openSync, readdirSync, readFileSync, statSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { native } from '../../src/addon/index.js'
import { DEFAULT_LOG_CONFIG, LogManager } from '../../src/storage/index.js'
import type { PartitionLog } from '../../src/storage/index.js'
import { MemoryIndex } from '../../src/storage/memory-index.js'
import { T0, decodeAll, makeBatch, readAll, regionBytes, tempDir } from './helpers.js'

const settings = { segmentBytes: 2048, indexIntervalBytes: 200, segmentIndexBytes: 4096 }
const defaults = { ...DEFAULT_LOG_CONFIG, ...settings }

function openFds(): number {
  return readdirSync('/proc/self/fd').length
}

/** Index files of the partition mapped into this process (/proc/self/maps), by name. */
function mappedIndexes(log: PartitionLog): string[] {
  const names = new Set<string>()
  for (const line of readFileSync('/proc/self/maps', 'utf8').split('\n')) {
    const at = line.indexOf(log.dir + '/')
    if (at >= 0) names.add(line.slice(at + log.dir.length + 1).replace(/ \(deleted\)$/, ''))
  }
  return [...names].sort()
}

/** Files in the partition directory whose name ends with suffix, sorted. */
function files(log: PartitionLog, suffix: string): string[] {
  return readdirSync(log.dir).filter((f) => f.endsWith(suffix)).sort().map((f) => join(log.dir, f))
}

/** 40 batches of 2 records (offsets 2i, 2i+1, timestamp T0 + i): about ten segments. */
function fill(log: PartitionLog, from = 0, n = 40): void {
  for (let i = from; i < from + n; i++) log.append(makeBatch(`b${i}`, 2, T0 + i, 60), { leaderEpoch: 0 })
}

/** Reads one batch at each offset and checks it holds the offset; checks offsetForTimestamp too. */
function checkLookups(m: LogManager, log: PartitionLog): void {
  for (let off = log.logStartOffset; off < log.logEndOffset; off++) {
    const r = log.read(off, 1)
    const recs = decodeAll(regionBytes(r))
    m.releaseLease(r.leaseId)
    expect(recs.some((x) => x.offset === off)).toBe(true)
  }
  for (let i = 0; i < log.logEndOffset / 2; i++) expect(log.offsetForTimestamp(T0 + i)?.offset).toBe(2 * i)
}

describe('lazily opened indexes', () => {
  let dir: { path: string; cleanup: () => void }
  beforeEach(() => {
    dir = tempDir()
  })
  afterEach(() => dir.cleanup())

  it('a new partition opens nothing but its .log (kept by the open-file cache) and writes nothing else', async () => {
    const m = LogManager.open({ dataDir: dir.path, defaults, cleanShutdown: true })
    const before = openFds()
    const n = 300
    for (let p = 0; p < n; p++) m.create('many', p)
    expect(m.files.openCost).toBe(n)
    expect(openFds() - before).toBe(n)
    expect(readdirSync(join(dir.path, 'many-0'))).toEqual(['00000000000000000000.log'])
    await m.close()
    // An empty log closes without index files, checkpoints of 0 or an empty producer snapshot.
    expect(readdirSync(join(dir.path, 'many-7'))).toEqual(['00000000000000000000.log'])
    const m2 = LogManager.open({ dataDir: dir.path, defaults, cleanShutdown: true })
    expect(m2.partitions()).toHaveLength(n)
    for (const log of m2.partitions()) {
      expect(log.recovery).toEqual({ segmentsRecovered: 0, bytesTruncated: 0, segmentsDropped: 0, indexesRebuilt: 0, cleanedFilesDeleted: 0, swapsCompleted: 0 })
      expect(log.logEndOffset).toBe(0)
    }
    const log = m2.get('many', 3)!
    fill(log)
    checkLookups(m2, log)
    await m2.close()
  })

  it('after a clean restart, maps an inactive segment\'s indexes only on first use; lookups and appends stay exact', async () => {
    const m = LogManager.open({ dataDir: dir.path, defaults, cleanShutdown: true })
    fill(m.create('t', 0))
    const segments = m.get('t', 0)!.segmentBaseOffsets().length
    expect(segments).toBeGreaterThan(4)
    await m.close()

    const before = openFds()
    const m2 = LogManager.open({ dataDir: dir.path, defaults, cleanShutdown: true })
    const log = m2.get('t', 0)!
    // Only the active segment's .log is open (scanned for the log end offset); no index is open (the
    // active one is read into memory, the others are mapped on first use).
    expect(openFds() - before).toBe(1)
    expect(log.recovery.indexesRebuilt + log.recovery.segmentsRecovered).toBe(0)
    expect(log.logEndOffset).toBe(80)
    // A lookup in the first segment maps its two indexes, and no other segment's; a mapping holds no
    // descriptor (the native index closes it once mapped).
    expect(mappedIndexes(log)).toEqual([])
    const r = log.read(0, 1)
    m2.releaseLease(r.leaseId)
    expect(mappedIndexes(log)).toEqual(['00000000000000000000.index', '00000000000000000000.timeindex'])
    expect(openFds() - before).toBe(2)
    checkLookups(m2, log)
    // The first record carrying the largest timestamp (both of its batch do), as Kafka 3.8+ answers.
    expect(log.maxTimestamp()).toEqual({ offset: 78, timestamp: T0 + 39 })

    // Appends to the reopened active segment extend its in-memory indexes and roll as before.
    fill(log, 40, 20)
    expect(log.logEndOffset).toBe(120)
    checkLookups(m2, log)
    await m2.close()
    // Every index file holds exactly its entries (no preallocated tail).
    for (const f of files(log, '.index')) expect(statSync(f).size % 8).toBe(0)
    for (const f of files(log, '.timeindex')) expect(statSync(f).size % 12).toBe(0)
    expect(files(log, '.index')).toHaveLength(files(log, '.log').length)

    const m3 = LogManager.open({ dataDir: dir.path, defaults, cleanShutdown: true })
    const log3 = m3.get('t', 0)!
    expect(log3.recovery.indexesRebuilt + log3.recovery.segmentsRecovered).toBe(0)
    expect(readAll(m3, log3).map((x) => x.offset)).toEqual(Array.from({ length: 120 }, (_, i) => i))
    checkLookups(m3, log3)
    await m3.close()
  })

  it('after an unclean restart, recovers from the recovery point and opens older segments lazily', async () => {
    const m = LogManager.open({ dataDir: dir.path, defaults: { ...defaults, flushMessages: 1 }, cleanShutdown: true })
    const log = m.create('t', 0)
    fill(log)
    // Wait for the background flushes (flush.messages=1), then drop the log without closing it: the
    // state a crash leaves (the checkpoint is written, the marker is absent).
    await log.flush()
    await log.writeCheckpoints()
    const bases = log.segmentBaseOffsets()
    const m2 = LogManager.open({ dataDir: dir.path, defaults, cleanShutdown: false })
    const log2 = m2.get('t', 0)!
    // Only the segment holding the recovery point (the active one) is re-validated.
    expect(log2.recovery.segmentsRecovered).toBe(1)
    expect(log2.segmentBaseOffsets()).toEqual(bases)
    expect(log2.logEndOffset).toBe(80)
    checkLookups(m2, log2)
    fill(log2, 40, 5)
    checkLookups(m2, log2)
    await m2.close()
    await m.close()
  })

  it('rebuilds a corrupt index of an inactive segment on first use, without touching the .log', async () => {
    const m = LogManager.open({ dataDir: dir.path, defaults, cleanShutdown: true })
    const log = m.create('t', 0)
    fill(log)
    await m.close()
    const idx = files(log, '.index')[1]!
    const logFile = files(log, '.log')[1]!
    const logSize = statSync(logFile).size
    const size = statSync(idx).size
    expect(size).toBeGreaterThanOrEqual(16)
    // The last entry points past the end of the .log.
    const junk = Buffer.alloc(8)
    junk.writeUInt32BE(1, 0)
    junk.writeUInt32BE(999_999, 4)
    const fd = openSync(idx, 'r+')
    writeSync(fd, junk, 0, 8, size - 8)
    closeSync(fd)

    const m2 = LogManager.open({ dataDir: dir.path, defaults, cleanShutdown: true })
    const log2 = m2.get('t', 0)!
    expect(log2.recovery.indexesRebuilt).toBe(0)
    checkLookups(m2, log2)
    expect(log2.recovery.indexesRebuilt).toBe(1)
    expect(log2.recovery.segmentsRecovered).toBe(0)
    expect(statSync(logFile).size).toBe(logSize)
    await m2.close()
    expect(statSync(idx).size).toBe(size)

    const m3 = LogManager.open({ dataDir: dir.path, defaults, cleanShutdown: true })
    const log3 = m3.get('t', 0)!
    checkLookups(m3, log3)
    expect(log3.recovery.indexesRebuilt).toBe(0)
    await m3.close()
  })

  it('a missing index of a non-empty segment is still recovered at open', async () => {
    const m = LogManager.open({ dataDir: dir.path, defaults, cleanShutdown: true })
    const log = m.create('t', 0)
    fill(log)
    await m.close()
    const tidx = files(log, '.timeindex')[2]!
    const { rmSync } = await import('node:fs')
    rmSync(tidx)
    const m2 = LogManager.open({ dataDir: dir.path, defaults, cleanShutdown: true })
    const log2 = m2.get('t', 0)!
    expect(log2.recovery.segmentsRecovered).toBe(1)
    expect(existsSync(tidx)).toBe(true)
    checkLookups(m2, log2)
    await m2.close()
  })
})

describe('MemoryIndex', () => {
  let dir: { path: string; cleanup: () => void }
  beforeEach(() => {
    dir = tempDir()
  })
  afterEach(() => dir.cleanup())

  it('answers lookups exactly as the native mapped index, and its file reads back the same', () => {
    let seed = 12345
    const rand = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31
      return seed % n
    }
    for (const entrySize of [8, 12] as const) {
      const mem = MemoryIndex.empty(join(dir.path, `m${entrySize}`), entrySize, 4000 * entrySize)
      const nat = native.openIndex(join(dir.path, `n${entrySize}`), entrySize, 4000 * entrySize)
      let key = entrySize === 8 ? 0 : T0
      for (let i = 0; i < 3000; i++) {
        // Time index keys repeat (equal timestamps); offset keys strictly increase.
        key += entrySize === 8 ? 1 + rand(5) : rand(3)
        mem.append(key, i * 10)
        nat.append(key, i * 10)
      }
      expect(mem.entries()).toBe(nat.entries())
      for (let q = 0; q < 2000; q++) {
        const target = (entrySize === 8 ? 0 : T0) - 5 + rand(key - (entrySize === 8 ? 0 : T0) + 10)
        expect(mem.lookup(target)).toBe(nat.lookup(target))
        expect(mem.lookupCeiling(target)).toBe(nat.lookupCeiling(target))
      }
      for (let i = 0; i < 3000; i += 97) {
        expect(mem.keyAt(i)).toBe(nat.keyAt(i))
        expect(mem.valueAt(i)).toBe(nat.valueAt(i))
      }
      expect(() => mem.append(key - 1, 0)).toThrow()
      mem.writeFile(true)
      nat.close(true)
      const again = MemoryIndex.load(join(dir.path, `m${entrySize}`), entrySize, 4000 * entrySize)
      expect(again.existed).toBe(true)
      expect(again.index.entries()).toBe(3000)
      for (let i = 0; i < 3000; i += 31) expect(again.index.keyAt(i)).toBe(mem.keyAt(i))
      // Truncation shrinks the file at the next write.
      again.index.truncateToEntries(100)
      again.index.writeFile(false)
      expect(statSync(join(dir.path, `m${entrySize}`)).size).toBe(100 * entrySize)
    }
  })

  it('refuses to grow past its room and reports full', () => {
    const mem = MemoryIndex.empty(join(dir.path, 'x'), 8, 24)
    mem.append(1, 1)
    mem.append(2, 2)
    mem.append(3, 3)
    expect(mem.isFull()).toBe(true)
    expect(() => mem.append(4, 4)).toThrow(/full/)
    // An empty index with nothing to write creates no file unless asked.
    const empty = MemoryIndex.empty(join(dir.path, 'y'), 12, 120)
    empty.writeFile(false)
    expect(existsSync(join(dir.path, 'y'))).toBe(false)
    empty.writeFile(true)
    expect(statSync(join(dir.path, 'y')).size).toBe(0)
  })
})
