// The offset or time index of an ACTIVE segment, held in memory and written to its file with pwrite.
//
// File layout: exactly that of the mapped indexes (native/src/mmap-index.cc): a flat array of
// big-endian entries, 8 bytes (int32 relative offset | int32 .log position) or 12 bytes (int64
// timestamp | int32 relative offset), sorted by key. The file always holds exactly the entries written
// so far (no preallocated tail: the room to grow, segment.index.bytes, exists only in memory), so a file
// reopens with entries = size / entrySize, as a cleanly closed mapped index does.
//
// Why not write through an mmap as Kafka does: the first store into each page of a fresh mapped file
// costs a write fault that ext4 serves with a journal handle (page_mkwrite), measured here at 0.2 to 17
// ms per page under load, against ~10 us for a pwrite of the same bytes. With many partitions every
// append touches a new page of some index, and those faults were most of the broker's CPU time
// (bench/results/PROFILE-SCALE.md, 1,000 partitions). Lookups on the active segment read the memory copy.
//
// When the file is written: writeFile() (flush, roll and close), never on the append path itself. An
// index is made durable by sync() (fdatasync) in the segment's flush, before the .log's fdatasync, so
// the indexes of every segment below the recovery point are on disk. Entries past the last flush may be
// lost in a crash: the segments holding them lie past the recovery point, and recovery rebuilds their
// indexes from the .log (segment.ts). No descriptor stays open between writes.

import { closeSync, constants, fstatSync, ftruncateSync, openSync, readSync, writeSync } from 'node:fs'
import type { NativeIndexFile } from '../addon/types.js'
import { ErrorCode, KafkaError } from '../domain/errors.js'
import { fsyncFd } from './durability.js'

/**
 * The index operations the segment uses; both MemoryIndex and the native mapped index provide them
 * (their meaning is documented on NativeIndexFile).
 */
export type SegmentIndex = Pick<
  NativeIndexFile,
  'entries' | 'maxEntries' | 'isFull' | 'append' | 'lookup' | 'lookupCeiling' | 'keyAt' | 'valueAt' | 'truncateToEntries' | 'resize'
>

const MAX_INDEX_BYTES = 0x7fffffff
const MAX_UINT32 = 0xffffffff
const INITIAL_ENTRIES = 64

export class MemoryIndex implements SegmentIndex {
  private buf: Buffer
  private n: number
  private max: number
  /** Entries [0, fileEntries) are in the file as they are here. */
  private fileEntries: number
  /** Size of the file in bytes, -1 when it does not exist (or must be replaced whole). */
  private fileSize: number
  private unsynced = false

  private constructor(
    readonly path: string,
    readonly entrySize: 8 | 12,
    maxBytes: number,
    content: Buffer | null,
  ) {
    checkMaxBytes(maxBytes)
    this.n = content === null ? 0 : Math.floor(content.length / entrySize)
    this.buf = content ?? Buffer.alloc(0)
    this.max = Math.max(Math.floor(maxBytes / entrySize), this.n)
    this.fileEntries = this.n
    this.fileSize = content === null ? -1 : content.length
  }

  /** An empty index whose file (if any) is replaced by the next writeFile. */
  static empty(path: string, entrySize: 8 | 12, maxBytes: number): MemoryIndex {
    return new MemoryIndex(path, entrySize, maxBytes, null)
  }

  /**
   * The index in path (missing: empty, and `existed` is false) with room for maxBytes. A partial entry
   * at the end (a torn write) is not counted and is cut off by the next writeFile.
   */
  static load(path: string, entrySize: 8 | 12, maxBytes: number): { index: MemoryIndex; existed: boolean } {
    let fd: number
    try {
      fd = openSync(path, constants.O_RDONLY)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { index: MemoryIndex.empty(path, entrySize, maxBytes), existed: false }
      throw err
    }
    try {
      const size = fstatSync(fd).size
      if (size > MAX_INDEX_BYTES) throw new KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, `index ${path} is ${size} bytes, over ${MAX_INDEX_BYTES}`)
      const content = Buffer.alloc(size)
      let done = 0
      while (done < size) {
        const r = readSync(fd, content, done, size - done, done)
        if (r === 0) break
        done += r
      }
      const index = new MemoryIndex(path, entrySize, maxBytes, content.subarray(0, done - (done % entrySize)))
      index.fileSize = size
      return { index, existed: true }
    } finally {
      closeSync(fd)
    }
  }

  entries(): number {
    return this.n
  }

  maxEntries(): number {
    return this.max
  }

  isFull(): boolean {
    return this.n >= this.max
  }

  /** As the native index: key >= the last key, value a uint32; throws when full. */
  append(key: number, value: number): void {
    if (this.entrySize === 8) {
      if (!Number.isInteger(key) || key < 0 || key > MAX_UINT32) throw new RangeError(`index append: relative offset ${key} is not a uint32`)
    } else if (!Number.isSafeInteger(key)) {
      throw new RangeError(`index append: timestamp ${key} is not a safe integer`)
    }
    if (!Number.isInteger(value) || value < 0 || value > MAX_UINT32) throw new RangeError(`index append: value ${value} is not a uint32`)
    if (this.n >= this.max) throw new Error(`index append: index '${this.path}' is full (${this.n} entries)`)
    if (this.n > 0 && key < this.keyAt(this.n - 1)) throw new Error(`index append: key ${key} is smaller than the last key in '${this.path}'`)
    const at = this.n * this.entrySize
    if (at + this.entrySize > this.buf.length) {
      const grown = Buffer.alloc(Math.min(Math.max(INITIAL_ENTRIES, this.n * 2), this.max) * this.entrySize)
      this.buf.copy(grown, 0, 0, at)
      this.buf = grown
    }
    if (this.entrySize === 8) {
      this.buf.writeUInt32BE(key, at)
      this.buf.writeUInt32BE(value, at + 4)
    } else {
      const hi = Math.floor(key / 0x100000000)
      this.buf.writeInt32BE(hi, at)
      this.buf.writeUInt32BE(key - hi * 0x100000000, at + 4)
      this.buf.writeUInt32BE(value, at + 8)
    }
    this.n++
  }

  private key(i: number): number {
    const at = i * this.entrySize
    if (this.entrySize === 8) return this.buf.readUInt32BE(at)
    return this.buf.readInt32BE(at) * 0x100000000 + this.buf.readUInt32BE(at + 4)
  }

  /** First position whose key >= target (n when none). */
  private lowerBound(target: number): number {
    let lo = 0
    let hi = this.n
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (this.key(mid) < target) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  /** Largest entry with key <= target (the first of equal keys on an exact hit), or -1. */
  lookup(target: number): number {
    if (Number.isNaN(target)) throw new RangeError('index lookup: target is NaN')
    const lb = this.lowerBound(target)
    if (lb < this.n && this.key(lb) === target) return lb
    return lb - 1
  }

  /** Smallest entry with key >= target (the first of equal keys), or -1. */
  lookupCeiling(target: number): number {
    if (Number.isNaN(target)) throw new RangeError('index lookupCeiling: target is NaN')
    const lb = this.lowerBound(target)
    return lb < this.n ? lb : -1
  }

  keyAt(i: number): number {
    this.checkPosition(i, 'keyAt')
    return this.key(i)
  }

  valueAt(i: number): number {
    this.checkPosition(i, 'valueAt')
    return this.buf.readUInt32BE(i * this.entrySize + this.entrySize - 4)
  }

  private checkPosition(i: number, method: string): void {
    if (!Number.isInteger(i) || i < 0 || i >= this.n) throw new RangeError(`index ${method}: position ${i} is not below entries() ${this.n}`)
  }

  truncateToEntries(n: number): void {
    if (!Number.isInteger(n) || n < 0) throw new RangeError(`index truncateToEntries: n ${n}`)
    if (n < this.n) this.n = n
    if (n < this.fileEntries) this.fileEntries = n
  }

  /** Room for maxBytes (rounded down to whole entries), never below the entries in use. Memory only. */
  resize(maxBytes: number): void {
    checkMaxBytes(maxBytes)
    this.max = Math.max(Math.floor(maxBytes / this.entrySize), this.n)
  }

  /** True when the file does not hold exactly the entries in memory. */
  get dirty(): boolean {
    return this.fileEntries !== this.n || this.fileSize !== this.n * this.entrySize
  }

  get fileExists(): boolean {
    return this.fileSize >= 0
  }

  /**
   * Makes the file hold exactly the entries in memory: the new ones are written with pwrite and a longer
   * file is cut back. No fsync (see sync). create: write an empty file when none exists.
   */
  writeFile(create: boolean): void {
    if (!this.dirty && this.fileSize >= 0) return
    if (this.fileSize < 0 && this.n === 0 && !create) return
    const replace = this.fileSize < 0
    const fd = openSync(this.path, constants.O_WRONLY | constants.O_CREAT | (replace ? constants.O_TRUNC : 0), 0o644)
    try {
      const from = replace ? 0 : this.fileEntries * this.entrySize
      const to = this.n * this.entrySize
      let off = from
      while (off < to) off += writeSync(fd, this.buf, off, to - off, off)
      const size = replace ? to : Math.max(this.fileSize, to)
      if (size > to) ftruncateSync(fd, to)
      this.fileSize = to
      this.fileEntries = this.n
      this.unsynced = true
    } finally {
      closeSync(fd)
    }
  }

  /** fdatasync of what writeFile wrote (off the JS thread). */
  async sync(): Promise<void> {
    if (!this.unsynced) return
    this.unsynced = false
    try {
      await syncFile(this.path)
    } catch (err) {
      this.unsynced = true
      throw err
    }
  }
}

/**
 * fdatasync of the file at path (opened for the call). A file gone meanwhile (its segment was deleted
 * while a background flush waited) needs no sync.
 */
export async function syncFile(path: string): Promise<void> {
  let fd: number
  try {
    fd = openSync(path, constants.O_RDONLY)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return
    throw err
  }
  try {
    await fsyncFd(fd, true)
  } finally {
    closeSync(fd)
  }
}

function checkMaxBytes(maxBytes: number): void {
  if (!Number.isInteger(maxBytes) || maxBytes < 0 || maxBytes > MAX_INDEX_BYTES) throw new RangeError(`index maxBytes ${maxBytes} is not in [0, ${MAX_INDEX_BYTES}]`)
}
