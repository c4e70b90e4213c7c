// Read leases: a read pins the segments its regions point into, so deleting a segment (retention,
// DeleteRecords, partition deletion) never closes a descriptor a response is still being sent from.

import type { LogSegment } from './segment.js'

export class LeaseTable {
  private nextId = 1
  private readonly leases = new Map<number, LogSegment[]>()

  /** Pins segments and returns the lease id (> 0). */
  acquire(segments: LogSegment[]): number {
    for (const s of segments) s.retain()
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
