// Read leases: a read pins the segments its regions point into, so neither deleting a segment
// (retention, DeleteRecords, partition deletion) nor the open-file cache (open-files.ts) closes a
// descriptor a response is still being sent from.

import type { LogSegment } from './segment.js'

export class LeaseTable {
  private nextId = 1
  private readonly leases = new Map<number, LogSegment[]>()

  /**
   * Takes over pins the caller already holds (one retain() per entry of segments, taken when it read the
   * segment's fd) and returns the lease id (> 0); release drops them.
   */
  adopt(segments: LogSegment[]): number {
    const id = this.nextId
    // Ids stay below 2^31 so they fit in any int32 message field between threads; wrap skips live ids.
    do {
      this.nextId = this.nextId >= 0x7fffffff ? 1 : this.nextId + 1
    } while (this.leases.has(this.nextId))
    this.leases.set(id, segments)
    return id
  }

  /** Unpins a lease; unknown or already released ids are ignored. */
  release(id: number): void {
    const segments = this.leases.get(id)
    if (segments === undefined) return
    this.leases.delete(id)
    for (const s of segments) s.release()
  }

  get size(): number {
    return this.leases.size
  }
}
