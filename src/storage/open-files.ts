// The bounded cache of open segment files of one thread (Kafka has no such thing: it keeps every
// segment's FileChannel open and needs a file descriptor per segment, so its partition count is bounded
// by `ulimit -n`; here it is bounded by the disk).
//
// What is cached: a segment's .log descriptor (cost 1) and the mapped offset and time indexes of an
// inactive segment (cost 2: two mappings, which count against vm.max_map_count as descriptors count
// against the open-file limit). Active segments keep their indexes in memory (memory-index.ts) and
// cost nothing here but their .log. Everything is opened on first use and closed again when the cache
// needs the room: least recently used first (a doubly linked list, so a use is a few pointer moves).
//
// Pins: a handle whose descriptor number is held somewhere the cache cannot see is pinned, and a
// pinned handle is never closed by the cache. Read leases pin the segments their file regions point
// into until the lease is released (the main thread may be sendfile-ing from them meanwhile), an fsync
// in flight pins its segment, and the log cleaner pins the segment it is reading across its yields.
// Pinned handles leave the LRU list and count towards the bound all the same; when every open handle
// is pinned the cache goes over its bound rather than close one (leases are few and short-lived).
//
// When open() meets EMFILE or ENFILE anyway (the bound is set above what the process may open, or
// sockets took the room), it closes half of the unpinned handles and tries again, until nothing is left
// to close; only then does the open fail.

import { readFileSync } from 'node:fs'
import { ErrorCode, KafkaError } from '../domain/errors.js'

/** Something the cache can close: a segment's .log descriptor or its pair of mapped indexes. */
export class CachedHandle {
  /** Neighbours in the LRU list (only while listed: open and unpinned). */
  prev: CachedHandle | null = null
  next: CachedHandle | null = null
  listed = false
  open = false
  pins = 0
  /** The owner is closed: close at the last unpin instead of going back to the list. */
  retired = false

  constructor(
    readonly cost: number,
    /** Closes the resource (the cache has already forgotten the handle). */
    readonly closeResource: () => void,
  ) {}
}

/** Smallest bound a cache accepts: one call touches at most a segment's .log and indexes (3), and the LRU keeps those. */
export const MIN_OPEN_FILES = 16

export class OpenFileCache {
  private maxOpen: number
  /** Cost of the open handles, listed or pinned. */
  private used = 0
  /** Least recently used first. */
  private head: CachedHandle | null = null
  private tail: CachedHandle | null = null
  private listedCount = 0
  /** Handles closed to make room (a counter for tests and diagnostics). */
  evictions = 0

  constructor(maxOpen: number) {
    this.maxOpen = checkBound(maxOpen)
  }

  get bound(): number {
    return this.maxOpen
  }

  /** Cost of everything open now (pinned handles included). */
  get openCost(): number {
    return this.used
  }

  setBound(maxOpen: number): void {
    this.maxOpen = checkBound(maxOpen)
    this.shrink(this.maxOpen, null)
  }

  /**
   * Runs an open of `cost` units (a function that opens and returns a descriptor or mapping) after making
   * room for it, and retries after closing more when the process is out of descriptors. The caller then
   * admit()s the handle it opened.
   */
  openWith<T>(cost: number, open: () => T): T {
    this.shrink(this.maxOpen - cost, null)
    for (;;) {
      try {
        return open()
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code
        if (code !== 'EMFILE' && code !== 'ENFILE' && code !== 'ENOMEM') throw err
        if (this.listedCount === 0) {
          throw new KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, `out of open files (${code}) with ${this.used} segment files open, all of them in use: ${(err as Error).message}`)
        }
        this.shrink(this.used - Math.max(1, Math.ceil(this.listedCount / 2)), null)
      }
    }
  }

  /** The handle was just opened: count it, list it as most recently used, and close others over the bound. */
  admit(h: CachedHandle): void {
    if (h.open) return
    h.open = true
    h.retired = false
    this.used += h.cost
    if (h.pins === 0) this.link(h)
    this.shrink(this.maxOpen, h)
  }

  /** A use: h becomes the most recently used. */
  touch(h: CachedHandle): void {
    if (!h.listed || h === this.tail) return
    this.unlink(h)
    this.link(h)
  }

  /** h (open) may not be closed until the matching unpin. */
  pin(h: CachedHandle): void {
    if (h.pins++ === 0 && h.listed) this.unlink(h)
  }

  unpin(h: CachedHandle): void {
    if (h.pins <= 0) return
    if (--h.pins > 0 || !h.open) return
    if (h.retired) this.closeNow(h)
    else {
      this.link(h)
      this.shrink(this.maxOpen, null)
    }
  }

  /** The owner is done with h: closed now, or at its last unpin. */
  retire(h: CachedHandle): void {
    if (!h.open) return
    h.retired = true
    if (h.pins === 0) this.closeNow(h)
  }

  private closeNow(h: CachedHandle): void {
    if (h.listed) this.unlink(h)
    h.open = false
    this.used -= h.cost
    h.closeResource()
  }

  /** Closes least recently used handles until the open cost is at most target (never `keep`). */
  private shrink(target: number, keep: CachedHandle | null): void {
    while (this.used > target && this.head !== null) {
      const victim = this.head === keep ? keep.next : this.head
      if (victim === null) return
      this.evictions++
      this.closeNow(victim)
    }
  }

  private link(h: CachedHandle): void {
    h.prev = this.tail
    h.next = null
    if (this.tail === null) this.head = h
    else this.tail.next = h
    this.tail = h
    h.listed = true
    this.listedCount++
  }

  private unlink(h: CachedHandle): void {
    if (h.prev === null) this.head = h.next
    else h.prev.next = h.next
    if (h.next === null) this.tail = h.prev
    else h.next.prev = h.prev
    h.prev = null
    h.next = null
    h.listed = false
    this.listedCount--
  }
}

function checkBound(n: number): number {
  if (!Number.isInteger(n) || n < MIN_OPEN_FILES) throw new RangeError(`open segment files bound ${n} is not an integer >= ${MIN_OPEN_FILES}`)
  return n
}

/**
 * The process's soft limit on open files (RLIMIT_NOFILE, from /proc/self/limits), or null where it
 * cannot be read or is unlimited.
 */
export function openFileLimit(): number | null {
  try {
    const m = /^Max open files\s+(\d+|unlimited)\s/m.exec(readFileSync('/proc/self/limits', 'utf8'))
    if (m === null || m[1] === 'unlimited') return null
    return Number(m[1])
  } catch {
    return null
  }
}

/**
 * The per-thread bound for `threads` caches sharing a process: log.segment.open.files.max, capped at half
 * of the open-file limit (the rest is for sockets and short-lived files), divided evenly.
 */
export function openFilesPerThread(configuredMax: number, threads: number, limit: number | null = openFileLimit()): number {
  const total = limit === null ? configuredMax : Math.min(configuredMax, Math.floor(limit / 2))
  return Math.max(MIN_OPEN_FILES, Math.floor(total / Math.max(1, threads)))
}
