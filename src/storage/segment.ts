// One log segment: `<20-digit base offset>.log` plus its sparse `.index` and `.timeindex`.
//
// .log: RecordBatch v2 bytes exactly as on the wire (each batch carries its own CRC32C), appended at
//   the end with fs.writeSync. Recovery walks the batches from position 0, checks each one whole (length,
//   magic, CRC, offsets increasing) and truncates the file at the end of the last good batch, so a torn
//   or corrupt tail is never served.
// .index (offset index): 8-byte entries, int32 offset relative to the base offset (the batch's LAST
//   offset) + int32 byte position of that batch in the .log, sorted by both. One entry per
//   indexIntervalBytes appended (sparse). The file holds exactly the entries written (no preallocated
//   tail; segment.index.bytes bounds the entries, as Kafka's maxIndexSize does).
// .timeindex: 12-byte entries, int64 max timestamp so far in the segment + int32 relative offset of the
//   batch that holds it (its last offset); an entry is added with each offset index entry when the max
//   timestamp grew, and once more when the segment becomes inactive, so the last entry is the segment's
//   largest timestamp. The time index is treated as full one entry early to keep room for that.
// Neither index is checksummed: both are derived from the .log and rebuilt from it whenever they are
// missing, inconsistent, or may be stale (an unclean shutdown, for every segment past the recovery point).
//
// How and when files are open (partition count bounded by the disk, not by the open-file limit):
// every descriptor and mapping goes through the thread's OpenFileCache (open-files.ts), a bounded LRU.
// - .log: opened on first use (a read, an append, a recovery scan), kept while the cache has room, and
//   closed again when it needs the room (least recently used first). An idle partition holds nothing
//   open. The descriptor number is valid only until the next open of another file, so code that keeps
//   it across other opens or across an await pins the segment (retain/release): read leases (their
//   regions carry the fd to the thread that sends them), an fsync in flight, the log cleaner's reader.
// - Active segment: both indexes live in memory (memory-index.ts) and are written to their files with
//   pwrite on flush, roll and close; no descriptor stays open. A new segment creates no index file until
//   it has entries or is flushed or rolled; a cleanly closed segment whose .log is empty may have no
//   index files at all (nothing to index), which open() accepts. An existing active segment's index
//   files are read into memory when the partition opens (the LEO comes from the last offset entry).
// - Inactive segments: both indexes are mapped (native mmap, read only from here on, no descriptor kept)
//   on first use, i.e. the first lookup, and unmapped when the cache needs the room or the segment
//   closes. A segment that the partition's recovery did not re-validate gets, on that first use, the
//   same consistency check the open used to run eagerly (the last two entries of each index against
//   the .log); when it fails, the indexes are rebuilt from the .log then (CRC-checked batch walk; the
//   .log itself is not cut, since a segment below the recovery point was fsynced whole) and the rebuild
//   is counted in indexesRebuilt. Missing index files of a non-empty segment are still found at open (a
//   stat) and recovered there.
//
// Deletion: files are unlinked immediately; an open .log descriptor stays open while pins (reads in
// flight, whose regions carry the fd) hold it, and is closed by the last release. Linux keeps an
// unlinked file readable (and sendfile-able) through an open descriptor, so there is no need for
// Kafka's `.deleted` rename and file.delete.delay.ms.

import { closeSync, constants, existsSync, fstatSync, ftruncateSync, futimesSync, openSync, readSync, rmSync, statSync, unlinkSync, writeSync } from 'node:fs'
import { sep } from 'node:path'
import { native } from '../addon/index.js'
import type { NativeIndexFile } from '../addon/types.js'
import { ErrorCode, KafkaError } from '../domain/errors.js'
import { readBatchHeader, scanFileBatches } from '../protocol/records/file-scan.js'
import type { BatchInfo } from '../protocol/records/batch.js'
import { NO_TIMESTAMP, TIMESTAMP_TYPE_MASK } from '../protocol/records/batch.js'
import { inflateBatch } from '../protocol/records/inflate.js'
import { fsyncFd } from './durability.js'
import { MemoryIndex, syncFile } from './memory-index.js'
import type { SegmentIndex } from './memory-index.js'
import { CachedHandle, OpenFileCache } from './open-files.js'

export const LOG_SUFFIX = '.log'
export const INDEX_SUFFIX = '.index'
export const TIME_INDEX_SUFFIX = '.timeindex'
const OFFSET_ENTRY = 8
const TIME_ENTRY = 12
const INT32_MAX = 0x7fffffff
const MAX_INDEX_BYTES = 0x7fffffff

/**
 * A file of a partition directory: dir, then the name. Not path.join: its normalizing built every path
 * of many string pieces, kept for the segment's life (3 paths a segment, megabytes at 100,000 partitions);
 * the directory is normal already (LogManager joins it once).
 */
export function fileInDir(dir: string, name: string): string {
  return dir.endsWith(sep) ? dir + name : `${dir}${sep}${name}`
}

/** Kafka's file name for a base offset: 20 digits, zero padded. */
export function segmentFileName(baseOffset: number, suffix: string): string {
  return String(baseOffset).padStart(20, '0') + suffix
}

/** Parses `<20 digits>.log` (or another suffix), else null. */
export function parseSegmentFileName(name: string, suffix: string): number | null {
  if (!name.endsWith(suffix)) return null
  const digits = name.slice(0, -suffix.length)
  if (!/^\d{20}$/.test(digits)) return null
  const n = Number(digits)
  return Number.isSafeInteger(n) ? n : null
}

/** One batch of an append, as the segment indexes it. */
export interface AppendedBatch {
  /** Position relative to the start of the appended bytes. */
  position: number
  size: number
  lastOffset: number
  maxTimestamp: number
}

export interface SegmentSettings {
  indexIntervalBytes: number
  segmentIndexBytes: number
  /** The thread's cache of open segment files (default: defaultOpenFiles). */
  files?: OpenFileCache
}

/** The cache of segments created without one (tools and tests; a LogManager brings its own). */
export const defaultOpenFiles = new OpenFileCache(1024)

export class LogSegment {
  readonly baseOffset: number
  readonly logPath: string
  readonly indexPath: string
  readonly timeIndexPath: string
  private readonly files: OpenFileCache
  /** Descriptor of the .log, -1 while closed (see the header: use `fd`, which opens it). */
  private logFd: number
  /** The .log descriptor and the mapped indexes as the open-file cache sees them. */
  private readonly logHandle: CachedHandle
  private readonly indexHandle: CachedHandle
  size: number
  /** When the segment object was created (Kafka's `created`), the fallback for time-based roll. */
  readonly created: number
  /** Null until first use (inactive segments: mapped lazily, see the file header). */
  private offsetIndex: SegmentIndex | null = null
  private timeIndex: SegmentIndex | null = null
  /** The active segment's indexes (the same objects as above), or null. */
  private offsetMem: MemoryIndex | null = null
  private timeMem: MemoryIndex | null = null
  /** Inactive segment not re-validated at open: next offset to check its indexes against on first use. */
  private pendingCheck: number | null = null
  /** Index files written since the last flush whose memory copy was dropped (roll): fdatasync'd by flush. */
  private unsyncedFiles: string[] = []
  private bytesSinceLastIndexEntry = 0
  /** Largest batch maxTimestamp appended so far (NO_TIMESTAMP when none); undefined: read lazily from the time index. */
  private _maxTimestampSoFar: number | undefined = NO_TIMESTAMP
  private _offsetOfMaxTimestampSoFar: number
  /** maxTimestamp of the first batch, which time-based rolling measures from; undefined until read. */
  private firstBatchTimestamp: number | undefined
  deleted = false
  private closed = false
  /** Called when a lazily opened index failed its check and was rebuilt (PartitionLog counts it). */
  onIndexRebuilt: (() => void) | null = null

  private constructor(dir: string, baseOffset: number, files: OpenFileCache, fd: number, size: number, created: number, fileSuffix = '') {
    this.baseOffset = baseOffset
    this.files = files
    this.logFd = fd
    this.logHandle = new CachedHandle(1, () => {
      const f = this.logFd
      this.logFd = -1
      closeSync(f)
    })
    this.indexHandle = new CachedHandle(2, () => this.unmapIndexes())
    this.logPath = fileInDir(dir, segmentFileName(baseOffset, LOG_SUFFIX) + fileSuffix)
    this.indexPath = fileInDir(dir, segmentFileName(baseOffset, INDEX_SUFFIX) + fileSuffix)
    this.timeIndexPath = fileInDir(dir, segmentFileName(baseOffset, TIME_INDEX_SUFFIX) + fileSuffix)
    this.size = size
    this.created = created
    this._offsetOfMaxTimestampSoFar = baseOffset
  }

  /**
   * Creates an empty segment (truncating leftovers with the same name; index files of the same name are
   * removed, and written again only when there is something to write). fileSuffix is appended to the
   * three file names (the log cleaner writes `<base>.log.cleaned` ..., see segment-swap.ts). inEmptyDir:
   * the directory was just created, so there are no leftovers to remove.
   */
  static create(dir: string, baseOffset: number, settings: SegmentSettings, now: number, fileSuffix = '', inEmptyDir = false): LogSegment {
    const logPath = fileInDir(dir, segmentFileName(baseOffset, LOG_SUFFIX) + fileSuffix)
    const files = settings.files ?? defaultOpenFiles
    const fd = files.openWith(1, () => openSync(logPath, constants.O_RDWR | constants.O_CREAT | constants.O_TRUNC, 0o644))
    const seg = new LogSegment(dir, baseOffset, files, fd, 0, now, fileSuffix)
    try {
      if (!inEmptyDir) {
        unlinkIfExists(seg.indexPath)
        unlinkIfExists(seg.timeIndexPath)
      }
    } catch (err) {
      closeSync(fd)
      throw err
    }
    files.admit(seg.logHandle)
    seg.useMemoryIndexes(MemoryIndex.empty(seg.indexPath, OFFSET_ENTRY, settings.segmentIndexBytes), MemoryIndex.empty(seg.timeIndexPath, TIME_ENTRY, settings.segmentIndexBytes))
    return seg
  }

  /**
   * Opens an existing segment. The active one reads its indexes into memory with room to grow; an
   * inactive one maps them on first use (checkOnFirstUse sets the check that first use runs). Returns the
   * segment and whether an index file of a non-empty .log is missing (must rebuild).
   */
  static open(dir: string, baseOffset: number, settings: SegmentSettings, active: boolean, now: number): { segment: LogSegment; indexMissing: boolean } {
    const logPath = fileInDir(dir, segmentFileName(baseOffset, LOG_SUFFIX))
    // No descriptor yet: the .log is opened on first use (see the header).
    const seg = new LogSegment(dir, baseOffset, settings.files ?? defaultOpenFiles, -1, statSync(logPath).size, now)
    let indexMissing: boolean
    if (active && seg.size === 0) {
      // Nothing to index: whatever index files exist are stale and replaced by the first write.
      seg.useMemoryIndexes(MemoryIndex.empty(seg.indexPath, OFFSET_ENTRY, settings.segmentIndexBytes), MemoryIndex.empty(seg.timeIndexPath, TIME_ENTRY, settings.segmentIndexBytes))
      indexMissing = false
    } else if (active) {
      const o = MemoryIndex.load(seg.indexPath, OFFSET_ENTRY, settings.segmentIndexBytes)
      const t = MemoryIndex.load(seg.timeIndexPath, TIME_ENTRY, settings.segmentIndexBytes)
      seg.useMemoryIndexes(o.index, t.index)
      indexMissing = seg.size > 0 && (!o.existed || !t.existed)
    } else {
      indexMissing = seg.size > 0 && (!existsSync(seg.indexPath) || !existsSync(seg.timeIndexPath))
    }
    // Unknown until the time index is read (lazily, as Kafka's LogSegment does).
    seg._maxTimestampSoFar = seg.size === 0 ? NO_TIMESTAMP : undefined
    return { segment: seg, indexMissing }
  }

  private useMemoryIndexes(o: MemoryIndex, t: MemoryIndex): void {
    this.closeIndexes()
    this.offsetMem = o
    this.timeMem = t
    this.offsetIndex = o
    this.timeIndex = t
  }

  /**
   * An inactive segment that recovery did not re-validate: on first use its indexes get the cheap
   * consistency check against nextOffset (the next segment's base) and are rebuilt if it fails.
   */
  checkOnFirstUse(nextOffset: number): void {
    if (this.offsetIndex === null) this.pendingCheck = nextOffset
  }

  /** Maps the indexes of an inactive segment (first use), running the pending check. */
  private loadIndexes(): void {
    if (this.closed) throw new KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, `segment ${this.logPath} is closed`)
    // maxBytes 0: map exactly the entries on disk (a partial trailing entry is cut off).
    const [o, t] = this.files.openWith(2, (): [NativeIndexFile, NativeIndexFile] => {
      const offsets = native.openIndex(this.indexPath, OFFSET_ENTRY, 0)
      try {
        return [offsets, native.openIndex(this.timeIndexPath, TIME_ENTRY, 0)]
      } catch (err) {
        offsets.close(false)
        throw err
      }
    })
    this.offsetIndex = o
    this.timeIndex = t
    this.files.admit(this.indexHandle)
    const check = this.pendingCheck
    this.pendingCheck = null
    if (check !== null && !this.indexesLookSane(check, false)) this.rebuildIndexesInPlace(check)
  }

  /** Rebuilds both indexes of an inactive segment from its .log without cutting the .log (see the header). */
  private rebuildIndexesInPlace(limitOffset: number): void {
    const o = MemoryIndex.empty(this.indexPath, OFFSET_ENTRY, MAX_INDEX_BYTES)
    const t = MemoryIndex.empty(this.timeIndexPath, TIME_ENTRY, MAX_INDEX_BYTES)
    this.useMemoryIndexes(o, t)
    this.indexWholeLog(limitOffset)
    this.maybeAppendTimeIndex(true)
    o.resize(o.entries() * OFFSET_ENTRY)
    t.resize(t.entries() * TIME_ENTRY)
    o.writeFile(true)
    t.writeFile(true)
    this.offsetMem = null
    this.timeMem = null
    this.unsyncedFiles.push(this.indexPath, this.timeIndexPath)
    this.onIndexRebuilt?.()
  }

  private get oidx(): SegmentIndex {
    if (this.offsetIndex === null) this.loadIndexes()
    else this.files.touch(this.indexHandle)
    return this.offsetIndex!
  }

  private get tidx(): SegmentIndex {
    if (this.timeIndex === null) this.loadIndexes()
    else this.files.touch(this.indexHandle)
    return this.timeIndex!
  }

  /**
   * The .log descriptor, opened if the cache closed it (or never opened it). Valid until the next open
   * of another segment file: hold it longer only under retain().
   */
  get fd(): number {
    if (this.logFd >= 0) {
      this.files.touch(this.logHandle)
      return this.logFd
    }
    if (this.closed) throw new KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, `segment ${this.logPath} is closed`)
    this.logFd = this.files.openWith(1, () => openSync(this.logPath, constants.O_RDWR))
    this.files.admit(this.logHandle)
    return this.logFd
  }

  /** Whether the .log descriptor is open now (tests and diagnostics). */
  get isLogOpen(): boolean {
    return this.logFd >= 0
  }

  /** Largest batch timestamp in the segment (NO_TIMESTAMP when none); read from the time index on first use. */
  get maxTimestampSoFar(): number {
    if (this._maxTimestampSoFar === undefined) this.loadMaxTimestampFromIndex()
    return this._maxTimestampSoFar!
  }

  /** Last offset of the batch holding maxTimestampSoFar. */
  get offsetOfMaxTimestampSoFar(): number {
    if (this._maxTimestampSoFar === undefined) this.loadMaxTimestampFromIndex()
    return this._offsetOfMaxTimestampSoFar
  }

  /** True when lastOffset can still be expressed relative to this segment's base (int32). */
  canHold(lastOffset: number): boolean {
    return lastOffset - this.baseOffset <= INT32_MAX
  }

  /**
   * Kafka rolls when either index is full. The time index counts as full one slot early: that slot is
   * kept for the entry added when the segment becomes inactive.
   */
  indexesFull(): boolean {
    const t = this.tidx
    return this.oidx.isFull() || t.entries() >= t.maxEntries() - 1
  }

  offsetIndexEntries(): number {
    return this.oidx.entries()
  }

  timeIndexEntries(): number {
    return this.tidx.entries()
  }

  /**
   * Appends bytes holding whole batches (already validated, offsets assigned) with one write at the end
   * of the .log, then indexes them as Kafka's LogSegment.append does. On a write error the file is cut
   * back to its old size and KAFKA_STORAGE_ERROR is thrown, so nothing partial stays behind.
   */
  append(bytes: Buffer, batches: readonly AppendedBatch[]): void {
    const start = this.size
    const fd = this.fd
    try {
      let off = 0
      while (off < bytes.length) off += writeSync(fd, bytes, off, bytes.length - off, start + off)
    } catch (err) {
      try {
        ftruncateSync(fd, start)
      } catch {
        // The original error is the one to report; recovery truncates any tail on the next open.
      }
      throw new KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, `write to ${this.logPath} failed: ${(err as Error).message}`)
    }
    for (const b of batches) this.indexBatch(b.lastOffset, b.maxTimestamp, start + b.position, b.size)
    this.size = start + bytes.length
  }

  private indexBatch(lastOffset: number, maxTimestamp: number, position: number, size: number): void {
    if (this.firstBatchTimestamp === undefined && position === 0) this.firstBatchTimestamp = maxTimestamp
    if (maxTimestamp > this.maxTimestampSoFar) {
      this._maxTimestampSoFar = maxTimestamp
      this._offsetOfMaxTimestampSoFar = lastOffset
    }
    if (this.bytesSinceLastIndexEntry > this.indexIntervalBytes) {
      const o = this.oidx
      if (o.entries() < o.maxEntries()) o.append(lastOffset - this.baseOffset, position)
      this.maybeAppendTimeIndex(false)
      this.bytesSinceLastIndexEntry = 0
    }
    this.bytesSinceLastIndexEntry += size
  }

  /** index.interval.bytes in force; PartitionLog keeps it current (updateConfig). */
  indexIntervalBytes = 4096

  private maybeAppendTimeIndex(final: boolean): void {
    const t = this.tidx
    const maxTs = this.maxTimestampSoFar
    if (maxTs < 0) return
    const n = t.entries()
    if (n > 0 && t.keyAt(n - 1) >= maxTs) return
    const room = final ? t.maxEntries() - n : t.maxEntries() - n - 1
    if (room <= 0) return
    t.append(maxTs, this._offsetOfMaxTimestampSoFar - this.baseOffset)
  }

  /** Timestamp time-based rolling measures from (Kafka's rollingBasedTimestamp), or undefined. */
  rollingBasedTimestamp(): number | undefined {
    if (this.firstBatchTimestamp === undefined && this.size > 0) {
      this.firstBatchTimestamp = readBatchHeader(this.fd, 0, this.size)?.maxTimestamp ?? NO_TIMESTAMP
    }
    return this.firstBatchTimestamp
  }

  /** Kafka's timeWaitedForRoll: age by the first batch's timestamp, else by creation time. */
  timeWaitedForRoll(now: number, incomingMaxTimestamp: number): number {
    const t = this.rollingBasedTimestamp()
    return t !== undefined && t >= 0 ? incomingMaxTimestamp - t : now - this.created
  }

  /** The segment's largest timestamp, for retention.ms: max batch timestamp, else the file's mtime. */
  largestTimestamp(): number {
    if (this.maxTimestampSoFar >= 0) return this.maxTimestampSoFar
    return fstatSync(this.fd).mtimeMs
  }

  /** Modification time of the .log (Kafka's LogSegment.lastModified). */
  lastModified(): number {
    return fstatSync(this.fd).mtimeMs
  }

  /** Sets the .log's modification time (a cleaned segment keeps the newest of the segments it replaces). */
  setLastModified(ms: number): void {
    futimesSync(this.fd, ms / 1000, ms / 1000)
  }

  /** Byte position to start a forward scan for target: the largest index entry <= target, else 0. */
  private startPositionFor(offset: number): number {
    const o = this.oidx
    const i = o.lookup(offset - this.baseOffset)
    return i < 0 ? 0 : o.valueAt(i)
  }

  /**
   * Start of the last indexed batch at or before position, or 0: index entries are batch starts, and
   * their positions increase with their offsets, so a binary search over the values finds it.
   */
  indexedBatchStartAtOrBefore(position: number): number {
    const o = this.oidx
    let lo = 0
    let hi = o.entries() - 1
    let best = 0
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1
      const v = o.valueAt(mid)
      if (v <= position) {
        best = v
        lo = mid + 1
      } else {
        hi = mid - 1
      }
    }
    return best
  }

  /** The first batch whose lastOffset >= offset (the one containing it), or null when none. */
  translateOffset(offset: number): BatchInfo | null {
    let found: BatchInfo | null = null
    const from = this.startPositionFor(offset)
    scanFileBatches(this.fd, from, this.size, null, (b) => {
      if (b.lastOffset >= offset) {
        found = b
        return 'stop'
      }
    })
    return found
  }

  /**
   * Kafka's LogSegment.findOffsetByTimestamp: the first record (in offset order) whose timestamp is >=
   * timestamp and whose offset is >= startingOffset (the log start), as its offset and timestamp, or null.
   * The time index says where to start: every batch before the one of the largest entry <= timestamp has
   * a smaller max timestamp, because an entry's offset is where its timestamp was first reached. From
   * there batch headers skip batches whose max timestamp is smaller; a batch that may hold the answer
   * has its records decoded (decompressed, at most maxRecordBytes), and when none of them qualifies
   * (they lie below startingOffset) the scan goes on.
   */
  findOffsetByTimestamp(timestamp: number, startingOffset: number, maxRecordBytes: number): { offset: number; timestamp: number } | null {
    const t = this.tidx
    const i = t.lookup(timestamp)
    const fromOffset = Math.max(i < 0 ? this.baseOffset : this.baseOffset + t.valueAt(i), startingOffset)
    let found: { offset: number; timestamp: number } | null = null
    const from = this.startPositionFor(fromOffset)
    const fd = this.fd
    scanFileBatches(fd, from, this.size, null, (b) => {
      if (b.lastOffset < startingOffset || b.maxTimestamp < timestamp) return
      found = firstRecordAtOrAfter(fd, b, timestamp, startingOffset, maxRecordBytes)
      if (found !== null) return 'stop'
    })
    return found
  }

  /** The batch holding maxTimestampSoFar (its last offset is offsetOfMaxTimestampSoFar). */
  batchWithMaxTimestamp(): BatchInfo | null {
    if (this.maxTimestampSoFar < 0) return null
    return this.translateOffset(this.offsetOfMaxTimestampSoFar)
  }

  /** Offset after the last batch (scanning from the last index entry), or the base offset when empty. */
  readNextOffset(): number {
    // An empty .log needs no descriptor (an idle partition opens none at startup).
    if (this.size === 0) return this.baseOffset
    const o = this.oidx
    const n = o.entries()
    let next = this.baseOffset
    const start = n === 0 ? 0 : o.valueAt(n - 1)
    scanFileBatches(this.fd, start, this.size, null, (b) => {
      next = b.lastOffset + 1
    })
    return next
  }

  /** Restores maxTimestampSoFar from the time index's last entry (NO_TIMESTAMP when it has none). */
  loadMaxTimestampFromIndex(): void {
    const t = this.tidx
    const n = t.entries()
    if (n > 0) {
      this._maxTimestampSoFar = t.keyAt(n - 1)
      this._offsetOfMaxTimestampSoFar = this.baseOffset + t.valueAt(n - 1)
    } else if (this._maxTimestampSoFar === undefined) {
      this._maxTimestampSoFar = NO_TIMESTAMP
      this._offsetOfMaxTimestampSoFar = this.baseOffset
    }
  }

  /**
   * Consistency check of both indexes against the .log, for a segment whose next offset is nextOffset.
   * thorough: every entry (the active segment after a clean shutdown); otherwise the last two entries
   * of each index (cheap, catches a preallocated tail of zeros or a stale file).
   */
  indexesLookSane(nextOffset: number, thorough: boolean): boolean {
    const o = this.oidx
    const maxRel = nextOffset - 1 - this.baseOffset
    const on = o.entries()
    for (let i = thorough ? 0 : Math.max(0, on - 2); i < on; i++) {
      const key = o.keyAt(i)
      const pos = o.valueAt(i)
      if (key > maxRel || pos >= this.size) return false
      if (i > 0 && (key <= o.keyAt(i - 1) || pos <= o.valueAt(i - 1))) return false
    }
    if (on > 0) {
      const lastKey = o.keyAt(on - 1)
      const lastPosition = o.valueAt(on - 1)
      const last = readBatchHeader(this.fd, lastPosition, this.size)
      if (last === null || last.lastOffset - this.baseOffset !== lastKey) return false
    }
    // Fetched after the .log read: opening the .log may have made the cache unmap older indexes.
    const t = this.tidx
    const tn = t.entries()
    for (let i = thorough ? 0 : Math.max(0, tn - 2); i < tn; i++) {
      const rel = t.valueAt(i)
      if (rel > maxRel || t.keyAt(i) < 0) return false
      if (i > 0 && (t.keyAt(i) <= t.keyAt(i - 1) || rel < t.valueAt(i - 1))) return false
    }
    return true
  }

  /**
   * Rebuilds both indexes from the .log, checking every batch whole (CRC included) and that offsets
   * increase within [baseOffset, min(baseOffset + 2^31, limitOffset)), limitOffset being the next
   * segment's base. Truncates the .log after the last good batch. Indexes get indexRoomBytes of room
   * (an inactive segment is trimmed again by onBecomeInactive); their files are replaced when written.
   * Returns the next offset and how many bytes were cut off.
   */
  recover(limitOffset: number, indexRoomBytes: number): { nextOffset: number; truncatedBytes: number } {
    this.pendingCheck = null
    this.useMemoryIndexes(MemoryIndex.empty(this.indexPath, OFFSET_ENTRY, indexRoomBytes), MemoryIndex.empty(this.timeIndexPath, TIME_ENTRY, indexRoomBytes))
    const { next, validEnd } = this.indexWholeLog(limitOffset)
    const truncatedBytes = this.size - validEnd
    if (truncatedBytes > 0) this.truncateLogTo(validEnd)
    return { nextOffset: next, truncatedBytes }
  }

  /**
   * Cuts the .log at position (a batch boundary: a follower's truncation) and indexes what stays, from
   * the batch headers, into new in-memory indexes (indexRoomBytes of room): the segment is the log's
   * active segment again. Its bytes were verified when written or recovered, so no CRC is checked.
   */
  truncateToPosition(position: number, indexRoomBytes: number): void {
    this.pendingCheck = null
    if (position < this.size) this.truncateLogTo(position)
    this.useMemoryIndexes(MemoryIndex.empty(this.indexPath, OFFSET_ENTRY, indexRoomBytes), MemoryIndex.empty(this.timeIndexPath, TIME_ENTRY, indexRoomBytes))
    this.indexWholeLog(Number.MAX_SAFE_INTEGER, false)
  }

  /** Indexes every good batch of the .log into the (empty) indexes; returns the next offset and where the good batches end. */
  private indexWholeLog(limitOffset: number, checkCrc = true): { next: number; validEnd: number } {
    this.bytesSinceLastIndexEntry = 0
    this._maxTimestampSoFar = NO_TIMESTAMP
    this._offsetOfMaxTimestampSoFar = this.baseOffset
    this.firstBatchTimestamp = undefined
    let next = this.baseOffset
    const result = scanFileBatches(this.fd, 0, this.size, checkCrc ? native.crc32c : null, (b) => {
      if (b.baseOffset < next || b.lastOffset < b.baseOffset || b.lastOffset >= limitOffset || !this.canHold(b.lastOffset)) return 'reject'
      this.indexBatch(b.lastOffset, b.maxTimestamp, b.position, b.size)
      next = b.lastOffset + 1
    })
    return { next, validEnd: result.validEnd }
  }

  private truncateLogTo(size: number): void {
    ftruncateSync(this.fd, size)
    this.size = size
  }

  /**
   * The segment stops being active: the final time index entry is added, both index files are written
   * with exactly their entries (fdatasync'd by the next flush, which roll starts) and the memory copies
   * are dropped; lookups map the files from then on.
   */
  onBecomeInactive(): void {
    if (this.offsetMem === null || this.timeMem === null) return
    this.maybeAppendTimeIndex(true)
    this.offsetMem.writeFile(true)
    this.timeMem.writeFile(true)
    this.unsyncedFiles.push(this.indexPath, this.timeIndexPath)
    this.offsetMem = null
    this.timeMem = null
    this.offsetIndex = null
    this.timeIndex = null
  }

  /** Writes the active indexes' new entries and fdatasyncs index files, then the .log (fdatasync). */
  async flush(): Promise<void> {
    if (this.closed) return
    const create = this.size > 0
    this.offsetMem?.writeFile(create)
    this.timeMem?.writeFile(create)
    const files = this.unsyncedFiles
    this.unsyncedFiles = []
    try {
      if (this.offsetMem?.fileExists) await this.offsetMem.sync()
      if (this.timeMem?.fileExists) await this.timeMem.sync()
      for (const f of files) await syncFile(f)
    } catch (err) {
      this.unsyncedFiles.push(...files)
      throw err
    }
    // Pinned across the fsync: the cache must not close (and the process reuse) the number meanwhile.
    if (this.closed) return
    this.retain()
    try {
      await fsyncFd(this.logFd, true)
    } finally {
      this.release()
    }
  }

  /**
   * Pins the .log descriptor (opening it if needed): the cache will not close it, nor will close() or
   * delete(), until the matching release. Read leases, fsyncs and the cleaner's reader pin.
   */
  retain(): void {
    this.files.pin(this.logHandle)
    try {
      void this.fd
    } catch (err) {
      this.files.unpin(this.logHandle)
      throw err
    }
  }

  /** retain() unless the segment is closed and its descriptor gone; false then. */
  tryRetain(): boolean {
    if (this.closed && this.logFd < 0) return false
    this.retain()
    return true
  }

  /** Drops one pin; a closed segment's descriptor closes with the last one. */
  release(): void {
    this.files.unpin(this.logHandle)
  }

  /** Unmaps the indexes of an inactive segment (the cache's close of indexHandle). */
  private unmapIndexes(): void {
    const mapped = [this.offsetIndex, this.timeIndex]
    this.offsetIndex = null
    this.timeIndex = null
    for (const x of mapped) if (x !== null && !(x instanceof MemoryIndex)) (x as NativeIndexFile).close(false)
  }

  private closeIndexes(): void {
    // Mapped indexes belong to the cache, which unmaps them; memory ones are dropped.
    this.files.retire(this.indexHandle)
    this.offsetIndex = null
    this.timeIndex = null
    this.offsetMem = null
    this.timeMem = null
  }

  /**
   * Closes the indexes (an active segment's are written with the final time entry; mapped ones are
   * unmapped) and the .log descriptor, at once or, when pinned, at the last release.
   */
  close(): void {
    if (this.closed) return
    this.closed = true
    try {
      if (!this.deleted && this.offsetMem !== null && this.timeMem !== null) {
        this.maybeAppendTimeIndex(true)
        // An empty .log needs no index files; a non-empty one always gets both (open checks for them).
        const create = this.size > 0
        this.offsetMem.writeFile(create)
        this.timeMem.writeFile(create)
      }
      this.closeIndexes()
    } finally {
      this.files.retire(this.logHandle)
    }
  }

  /** Unlinks the three files now; an open fd lives on until the last pin is released. */
  delete(): void {
    this.deleted = true
    this.close()
    for (const p of [this.logPath, this.indexPath, this.timeIndexPath]) rmSync(p, { force: true })
  }
}

/** The first record of batch b with a timestamp >= timestamp and an offset >= startingOffset, or null. */
function firstRecordAtOrAfter(fd: number, b: BatchInfo, timestamp: number, startingOffset: number, maxRecordBytes: number): { offset: number; timestamp: number } | null {
  const bytes = Buffer.allocUnsafe(b.size)
  let done = 0
  while (done < b.size) {
    const n = readSync(fd, bytes, done, b.size - done, b.position + done)
    if (n === 0) throw new KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, `batch at ${b.position} ends early`)
    done += n
  }
  const { header, records } = inflateBatch(bytes, maxRecordBytes)
  // LogAppendTime: every record's timestamp is the batch's (its max timestamp), whatever the record says.
  const appendTime = (header.attributes & TIMESTAMP_TYPE_MASK) !== 0
  for (const r of records) {
    const offset = header.baseOffset + r.offsetDelta
    const ts = appendTime ? header.maxTimestamp : header.baseTimestamp + r.timestampDelta
    if (ts >= timestamp && offset >= startingOffset) return { offset, timestamp: ts }
  }
  return null
}

function unlinkIfExists(path: string): void {
  try {
    unlinkSync(path)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
  }
}
