// The leader epoch cache of one partition (Kafka's LeaderEpochFileCache): which leader epoch started at
// which offset. A follower truncates by it (its end offset for an epoch, compared with the leader's: no
// divergent logs after a leader change), a leader answers OffsetForLeaderEpoch and Fetch's diverging
// epoch from it.
//
// File: <dataDir>/<topic>-<partition>/leader-epoch-checkpoint, Kafka's LeaderEpochCheckpointFile, text,
// '\n' line ends:
//   line 1: version, always 0
//   line 2: number of entries
//   then one line per entry, oldest first: "<epoch> <startOffset>" (both ascending)
// Written whole and atomically (tmp + fsync + rename + dir fsync), so a crash leaves the old or the new
// file. When: at the partition's periodic checkpoint and close, after a truncation, and before a flush
// moves the recovery point past offsets whose epochs the file does not have yet (partition-log.ts).
// Recovery: entries at or past the recovered log end are dropped, and the epochs of every batch from the
// first recovered segment on are assigned again from the batches themselves (each batch carries the
// epoch of the leader that wrote it). A missing or malformed file with a non-empty log is rebuilt the
// same way from the whole log. An epoch started by a leader that has written nothing yet is the only
// thing a lost file forgets; it has no data to disagree about.

import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { writeFileAtomic } from './durability.js'
import { fileInDir } from './segment.js'

export const LEADER_EPOCH_CHECKPOINT = 'leader-epoch-checkpoint'
/** Kafka's UNDEFINED_EPOCH and UNDEFINED_EPOCH_OFFSET (OffsetForLeaderEpoch answers them for an unknown epoch). */
export const UNDEFINED_EPOCH = -1
export const UNDEFINED_EPOCH_OFFSET = -1
/** A checkpoint larger than this is treated as malformed (over a million entries). */
const MAX_CHECKPOINT_BYTES = 32 * 1024 * 1024

export interface EpochEntry {
  epoch: number
  startOffset: number
}

/** An epoch and the offset after its last record (Kafka's EpochEndOffset). */
export interface EpochEndOffset {
  leaderEpoch: number
  endOffset: number
}

export function formatEpochCheckpoint(entries: readonly EpochEntry[]): string {
  let s = `0\n${entries.length}\n`
  for (const e of entries) s += `${e.epoch} ${e.startOffset}\n`
  return s
}

/** The entries of a checkpoint file's text, or null when it is not one (version, count, order). */
export function parseEpochCheckpoint(text: string): EpochEntry[] | null {
  const lines = text.split('\n')
  if (lines[0] !== '0') return null
  const count = Number(lines[1])
  if (!Number.isSafeInteger(count) || count < 0 || lines.length < count + 2) return null
  const out: EpochEntry[] = []
  for (let i = 0; i < count; i++) {
    const parts = lines[2 + i]!.split(' ')
    if (parts.length !== 2) return null
    const epoch = Number(parts[0])
    const startOffset = Number(parts[1])
    if (!Number.isInteger(epoch) || epoch < 0 || epoch > 0x7fffffff || !Number.isSafeInteger(startOffset) || startOffset < 0) return null
    const prev = out.at(-1)
    if (prev !== undefined && (epoch <= prev.epoch || startOffset < prev.startOffset)) return null
    out.push({ epoch, startOffset })
  }
  // Anything but an empty last line after the entries is not Kafka's format.
  if (lines.slice(count + 2).some((l) => l !== '')) return null
  return out
}

export class LeaderEpochCache {
  readonly path: string
  /** Ascending by epoch and by start offset. */
  private entries: EpochEntry[]
  /** Entries changed since the file was last written. */
  private dirty = false
  /** The latest entry was assigned without data (see assign) and is not yet due in the file. */
  private unconfirmed = false
  private writing: Promise<void> = Promise.resolve()

  private constructor(dir: string, entries: EpochEntry[]) {
    this.path = fileInDir(dir, LEADER_EPOCH_CHECKPOINT)
    this.entries = entries
  }

  /** A cache with no entries and no file (a new partition). */
  static empty(dir: string): LeaderEpochCache {
    return new LeaderEpochCache(dir, [])
  }

  /** The cache in dir's checkpoint; `found` is false when the file is missing or malformed. */
  static load(dir: string, listed: boolean): { cache: LeaderEpochCache; found: boolean } {
    let entries: EpochEntry[] | null = null
    if (listed) {
      try {
        const buf = readFileSync(join(dir, LEADER_EPOCH_CHECKPOINT))
        if (buf.length <= MAX_CHECKPOINT_BYTES) entries = parseEpochCheckpoint(buf.toString('utf8'))
      } catch {
        entries = null
      }
    }
    const cache = new LeaderEpochCache(dir, entries ?? [])
    return { cache, found: entries !== null }
  }

  /** Every entry (copies), oldest first. */
  all(): EpochEntry[] {
    return this.entries.map((e) => ({ epoch: e.epoch, startOffset: e.startOffset }))
  }

  get isDirty(): boolean {
    return this.dirty
  }

  /** The newest epoch, or UNDEFINED_EPOCH when there is none. */
  latestEpoch(): number {
    return this.entries.at(-1)?.epoch ?? UNDEFINED_EPOCH
  }

  /**
   * Records that `epoch` starts at `startOffset` (Kafka's assign): nothing when it is the latest epoch
   * already starting at or before that offset; otherwise entries with an epoch >= it or a start offset >=
   * it are dropped first, so the cache stays monotonic. Negative values are ignored (batches written
   * without an epoch). Returns whether the cache changed.
   *
   * fromData: the epoch comes from a batch in the log (false: a new leader's epoch at its LEO, before it
   * wrote anything). Such an entry is written to the file only once a batch of that epoch is appended:
   * until then recovery would not miss it (there is nothing of it to disagree about), and a broker
   * taking the leadership of thousands of partitions writes no file for each.
   */
  assign(epoch: number, startOffset: number, fromData = true): boolean {
    if (epoch < 0 || startOffset < 0) return false
    const latest = this.entries.at(-1)
    if (latest !== undefined && latest.epoch === epoch && latest.startOffset <= startOffset) {
      if (fromData && this.unconfirmed) {
        this.unconfirmed = false
        this.dirty = true
      }
      return false
    }
    let dropped = false
    while (this.entries.length > 0) {
      const last = this.entries.at(-1)!
      if (last.epoch < epoch && last.startOffset < startOffset) break
      this.entries.pop()
      dropped = true
    }
    this.entries.push({ epoch, startOffset })
    this.unconfirmed = !fromData
    if (fromData || dropped) this.dirty = true
    return true
  }

  /** Drops the entries starting at or after endOffset (the log was truncated there). */
  truncateFromEnd(endOffset: number): void {
    const before = this.entries.length
    while (this.entries.length > 0 && this.entries.at(-1)!.startOffset >= endOffset) this.entries.pop()
    if (this.entries.length !== before) this.dirty = true
  }

  /**
   * The log now starts at startOffset: entries wholly before it go, and the last of them that started at
   * or before it is kept, starting at startOffset (Kafka's truncateFromStart).
   */
  truncateFromStart(startOffset: number): void {
    let n = 0
    while (n < this.entries.length && this.entries[n]!.startOffset <= startOffset) n++
    if (n === 0) return
    const kept = this.entries[n - 1]!
    if (n === 1 && kept.startOffset === startOffset) return
    this.entries = [{ epoch: kept.epoch, startOffset }, ...this.entries.slice(n)]
    this.dirty = true
  }

  /** Forgets everything (the log was emptied). */
  clear(): void {
    if (this.entries.length > 0) this.dirty = true
    this.entries = []
  }

  /**
   * Kafka's endOffsetFor: the end offset of `epoch` in a log ending at logEndOffset, and the epoch it
   * belongs to. UNDEFINED (-1, -1) for epoch -1 or an epoch newer than every entry; (epoch, LEO) for the
   * latest epoch; for an epoch between entries, the largest epoch <= it and the start offset of the next
   * one; for an epoch older than every entry, (epoch, the first entry's start offset).
   */
  endOffsetFor(epoch: number, logEndOffset: number): EpochEndOffset {
    const undefinedAnswer = { leaderEpoch: UNDEFINED_EPOCH, endOffset: UNDEFINED_EPOCH_OFFSET }
    if (epoch === UNDEFINED_EPOCH) return undefinedAnswer
    const latest = this.entries.at(-1)
    if (latest !== undefined && latest.epoch === epoch) return { leaderEpoch: epoch, endOffset: logEndOffset }
    // The first entry with a higher epoch, and the one before it (the floor), if any.
    let higher = -1
    for (let i = 0; i < this.entries.length; i++) {
      if (this.entries[i]!.epoch > epoch) {
        higher = i
        break
      }
    }
    if (higher < 0) return undefinedAnswer
    const next = this.entries[higher]!
    if (higher === 0) return { leaderEpoch: epoch, endOffset: next.startOffset }
    return { leaderEpoch: this.entries[higher - 1]!.epoch, endOffset: next.startOffset }
  }

  /** The epoch of the leader that wrote `offset` (the entry starting at or before it), -1 when unknown. */
  epochForOffset(offset: number): number {
    let epoch = UNDEFINED_EPOCH
    for (const e of this.entries) {
      if (e.startOffset > offset) break
      epoch = e.epoch
    }
    return epoch
  }

  /** Writes the file if the entries changed since the last write; writes run one at a time, in order. */
  checkpoint(): Promise<void> {
    if (!this.dirty) return this.writing
    this.dirty = false
    const text = formatEpochCheckpoint(this.entries)
    const write = this.writing.then(() => writeFileAtomic(this.path, text))
    // A failed write leaves the cache dirty: the next checkpoint tries again.
    this.writing = write.catch(() => {
      this.dirty = true
    })
    return write
  }

  /** Resolves when every write started so far has finished. */
  async drain(): Promise<void> {
    await this.writing
  }
}
