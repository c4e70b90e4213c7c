// The aborted-transaction index of one partition (Kafka's TransactionIndex): which transactions were
// aborted, so that read_committed consumers can drop their records. The broker never filters bytes; a
// Fetch lists the aborted transactions overlapping its range and the client skips those batches.
//
// Files: `<20-digit base offset>.txnindex` in the partition directory, Kafka's layout, big-endian,
// fixed 34-byte entries appended in marker order, no header:
//   version int16 (= 0) | producerId int64 | firstOffset int64 (the transaction's first offset here) |
//   lastOffset int64 (the ABORT marker's offset) | lastStableOffset int64 (the LSO once it completed)
// An entry goes to the file named after the active segment when its marker is appended. A file belongs
// to the segment covering its base offset: the log cleaner merges segments without renaming these
// files, and retention deletes a file with the segment that covers it. The cleaner removes the entries
// of aborted transactions whose records it has all removed: their files are rewritten whole (a temp
// file, fsynced, renamed over the old one).
// The files are written with the log and fsynced with it (flush); nothing is checksummed. Recovery: on
// an unclean open the files of every segment from the recovery point on (and any file whose size is not
// a whole number of entries, or whose entry version is not 0) are deleted and rebuilt from the log by
// the producer state replay, which sees every marker (producer-state.ts); files below the first segment
// are leftovers of retention and are deleted.
//
// Descriptors: none stay open. An append opens the file (O_APPEND), writes its entry and closes it; a
// flush opens each file appended to since the last one for its fdatasync (aborts are rare: a partition
// must not hold a descriptor per file, see open-files.ts).
//
// Memory: every entry of the partition stays in memory (one small object per aborted transaction),
// sorted by lastOffset; a Fetch binary-searches it.

import { closeSync, constants, openSync, readdirSync, rmSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { readInt64, writeInt64 } from '../protocol/records/batch.js'
import { writeFileAtomicSync } from './atomic-file.js'
import type { AbortedTransaction } from './types.js'
import { readWholeFile } from './durability.js'
import { syncFile } from './memory-index.js'

export const TXN_INDEX_SUFFIX = '.txnindex'
export const TXN_INDEX_ENTRY_BYTES = 34
const ENTRY_VERSION = 0
/** A .txnindex larger than this is treated as corrupt and rebuilt (over 7 million aborted transactions). */
const MAX_FILE_BYTES = 256 * 1024 * 1024

/** One .txnindex entry. */
export interface AbortedTxnEntry {
  producerId: number
  firstOffset: number
  /** Offset of the ABORT marker. */
  lastOffset: number
  /** The LSO right after the abort: no transaction still open then started below it. */
  lastStableOffset: number
}

interface IndexedEntry extends AbortedTxnEntry {
  /** Base offset of the file holding the entry. */
  fileBase: number
}

export function txnIndexFileName(baseOffset: number): string {
  return String(baseOffset).padStart(20, '0') + TXN_INDEX_SUFFIX
}

function parseTxnIndexFileName(name: string): number | null {
  if (!name.endsWith(TXN_INDEX_SUFFIX)) return null
  const digits = name.slice(0, -TXN_INDEX_SUFFIX.length)
  if (!/^\d{20}$/.test(digits)) return null
  const n = Number(digits)
  return Number.isSafeInteger(n) ? n : null
}

export function encodeTxnIndexEntry(e: AbortedTxnEntry): Buffer {
  const buf = Buffer.alloc(TXN_INDEX_ENTRY_BYTES)
  buf.writeInt16BE(ENTRY_VERSION, 0)
  writeInt64(buf, 2, e.producerId)
  writeInt64(buf, 10, e.firstOffset)
  writeInt64(buf, 18, e.lastOffset)
  writeInt64(buf, 26, e.lastStableOffset)
  return buf
}

/** Decodes a whole file's bytes; null when the size, a version or an offset is impossible. */
export function decodeTxnIndex(buf: Buffer): AbortedTxnEntry[] | null {
  if (buf.length % TXN_INDEX_ENTRY_BYTES !== 0) return null
  const out: AbortedTxnEntry[] = []
  for (let p = 0; p < buf.length; p += TXN_INDEX_ENTRY_BYTES) {
    if (buf.readInt16BE(p) !== ENTRY_VERSION) return null
    const e = { producerId: readInt64(buf, p + 2), firstOffset: readInt64(buf, p + 10), lastOffset: readInt64(buf, p + 18), lastStableOffset: readInt64(buf, p + 26) }
    if (!(e.producerId >= 0 && e.firstOffset >= 0 && e.lastOffset > e.firstOffset && e.lastStableOffset >= 0) || !Number.isSafeInteger(e.lastStableOffset)) return null
    out.push(e)
  }
  return out
}


/** The .txnindex files of one partition directory and their entries in memory. */
export class TransactionIndex {
  readonly dir: string
  /** Every entry, sorted by lastOffset. */
  private entries: IndexedEntry[] = []
  /** Bases of the files appended to since the last flush. */
  private readonly unsynced = new Set<number>()

  constructor(dir: string) {
    this.dir = dir
  }

  /** Number of aborted transactions indexed. */
  get size(): number {
    return this.entries.length
  }

  /** Base offsets of the .txnindex files in the directory, with whether each one decodes. */
  static scan(dir: string, listing?: readonly string[]): { base: number; valid: boolean }[] {
    const out: { base: number; valid: boolean }[] = []
    for (const name of listing ?? readdirSync(dir)) {
      const base = parseTxnIndexFileName(name)
      if (base === null) continue
      const bytes = readWholeFile(join(dir, name), MAX_FILE_BYTES)
      out.push({ base, valid: bytes !== null && decodeTxnIndex(bytes) !== null })
    }
    return out.sort((a, b) => a.base - b.base)
  }

  /**
   * Loads the files whose base lies in [firstSegmentBase, rebuildFrom) and deletes the others (stale
   * ones below the log, and those to be rebuilt by replay). Entries at or past rebuildFrom are dropped too.
   */
  load(firstSegmentBase: number, rebuildFrom: number, listing?: readonly string[]): void {
    this.unsynced.clear()
    this.entries = []
    for (const { base } of TransactionIndex.scan(this.dir, listing)) {
      const path = join(this.dir, txnIndexFileName(base))
      if (base < firstSegmentBase || base >= rebuildFrom) {
        rmSync(path, { force: true })
        continue
      }
      const bytes = readWholeFile(path, MAX_FILE_BYTES)
      const decoded = bytes === null ? null : decodeTxnIndex(bytes)
      if (decoded === null) {
        rmSync(path, { force: true })
        continue
      }
      for (const e of decoded) if (e.lastOffset < rebuildFrom) this.entries.push({ ...e, fileBase: base })
    }
    this.entries.sort((a, b) => a.lastOffset - b.lastOffset)
  }

  /** Appends an entry to the file of fileBase (the active segment's base), creating it when needed. */
  append(entry: AbortedTxnEntry, fileBase: number): void {
    const fd = openSync(join(this.dir, txnIndexFileName(fileBase)), constants.O_WRONLY | constants.O_CREAT | constants.O_APPEND, 0o644)
    try {
      const bytes = encodeTxnIndexEntry(entry)
      let off = 0
      while (off < bytes.length) off += writeSync(fd, bytes, off, bytes.length - off)
    } finally {
      closeSync(fd)
    }
    this.unsynced.add(fileBase)
    const last = this.entries.at(-1)
    const e = { ...entry, fileBase }
    if (last === undefined || last.lastOffset <= entry.lastOffset) this.entries.push(e)
    else {
      this.entries.push(e)
      this.entries.sort((a, b) => a.lastOffset - b.lastOffset)
    }
  }

  /**
   * Kafka's collectAbortedTxns over the whole log: the aborted transactions with lastOffset >= fetchOffset
   * and firstOffset < upperBound, in marker order. Stops at the first entry whose lastStableOffset
   * reaches upperBound: every later transaction starts at or after it.
   */
  collect(fetchOffset: number, upperBound: number): AbortedTransaction[] {
    const out: AbortedTransaction[] = []
    let lo = 0
    let hi = this.entries.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (this.entries[mid]!.lastOffset < fetchOffset) lo = mid + 1
      else hi = mid
    }
    for (let i = lo; i < this.entries.length; i++) {
      const e = this.entries[i]!
      if (e.firstOffset < upperBound) out.push({ producerId: e.producerId, firstOffset: e.firstOffset })
      if (e.lastStableOffset >= upperBound) break
    }
    return out
  }

  /** Every entry (copies), in marker order; for tests and the cleaner. */
  all(): AbortedTxnEntry[] {
    return this.entries.map((e) => ({ producerId: e.producerId, firstOffset: e.firstOffset, lastOffset: e.lastOffset, lastStableOffset: e.lastStableOffset }))
  }

  /**
   * Removes entries, named by producer id and marker offset (the cleaner: aborted transactions with no
   * records left). Each file that held one is rewritten whole with the rest, atomically, or deleted.
   */
  remove(entries: readonly { producerId: number; lastOffset: number }[]): void {
    const doomed = new Set(entries.map((e) => `${e.producerId}:${e.lastOffset}`))
    const files = new Set<number>()
    const kept: IndexedEntry[] = []
    for (const e of this.entries) {
      if (doomed.has(`${e.producerId}:${e.lastOffset}`)) files.add(e.fileBase)
      else kept.push(e)
    }
    if (files.size === 0) return
    this.entries = kept
    for (const base of files) {
      // No descriptor stays open (an append opens the file by name), and the rewrite is fsynced.
      this.unsynced.delete(base)
      const rest = kept.filter((e) => e.fileBase === base)
      const path = join(this.dir, txnIndexFileName(base))
      if (rest.length === 0) rmSync(path, { force: true })
      else writeFileAtomicSync(path, Buffer.concat(rest.map((e) => encodeTxnIndexEntry(e))))
    }
  }

  /** Segments below firstSegmentBase are gone: deletes the files (and entries) that belonged to them. */
  deleteFilesBefore(firstSegmentBase: number): void {
    const doomed = new Set<number>()
    for (const e of this.entries) if (e.fileBase < firstSegmentBase) doomed.add(e.fileBase)
    for (const name of readdirSync(this.dir)) {
      const base = parseTxnIndexFileName(name)
      if (base !== null && base < firstSegmentBase) doomed.add(base)
    }
    if (doomed.size === 0) return
    for (const base of doomed) this.removeFile(base)
    this.entries = this.entries.filter((e) => e.fileBase >= firstSegmentBase)
  }

  /** The log was emptied: every file goes. */
  deleteAll(): void {
    this.deleteFilesBefore(Number.MAX_SAFE_INTEGER)
  }

  private removeFile(base: number): void {
    this.unsynced.delete(base)
    rmSync(join(this.dir, txnIndexFileName(base)), { force: true })
  }

  /** fsync of the files appended to since the last flush. */
  async flush(): Promise<void> {
    const bases = [...this.unsynced]
    this.unsynced.clear()
    try {
      // A file deleted meanwhile (retention) needs no sync: syncFile skips it.
      for (const base of bases) await syncFile(join(this.dir, txnIndexFileName(base)))
    } catch (err) {
      for (const base of bases) this.unsynced.add(base)
      throw err
    }
  }

  /** Forgets what is unsynced (the log closes; its flush ran before). */
  close(): void {
    this.unsynced.clear()
  }
}
