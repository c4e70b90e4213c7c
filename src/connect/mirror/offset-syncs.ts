// Offset syncs: the pairs (upstream offset, downstream offset) MirrorSourceTask writes to
// mm2-offset-syncs.<target>.internal, and the store MirrorCheckpointTask translates group offsets with.
//
// Writer side (Kafka's OffsetSyncWriter.PartitionState): a sync is sent at once for the first record of a
// partition in this task's lifetime, when the offset translated from the last sync would be offset.lag.max
// or more behind, when upstream offsets skipped (compaction, transaction markers) or the downstream offset
// went back; otherwise the newest pair waits as a "delayed" sync that goes out when the task commits its
// offsets (so an idle topic's consumers are translated up to its end).
//
// Reader side (Kafka 3.5+'s OffsetSyncStore, KAFKA-14666): per partition a few syncs are kept, newest first,
// spaced more widely with age (the i-th kept sync at least 2^(i-1) upstream offsets older than the
// newest), and the oldest one, so offsets of lagging groups still translate. An upstream offset
// translates through the newest sync at or before it: to that sync's downstream offset when equal, else
// one past it, never further, because records after a sync may have been filtered or compacted away, and
// overshooting would skip records. A consumer moving to the target therefore re-reads at most the records since that
// sync (about offset.lag.max), and misses none.
import type { OffsetSync } from './sync-checkpoint-heartbeat-records.js'

export class OffsetSyncPartitionState {
  private previousUpstream = -1
  private previousDownstream = -1
  private lastSyncDownstream = -1
  private pending = false

  constructor(private readonly maxOffsetLag: number) {}

  /** Records a replicated record; true when a sync should be sent now. */
  update(upstreamOffset: number, downstreamOffset: number): boolean {
    const first = this.lastSyncDownstream === -1
    const stale = downstreamOffset - (this.lastSyncDownstream + 1) >= this.maxOffsetLag
    const skipped = upstreamOffset - this.previousUpstream !== 1
    const truncated = downstreamOffset < this.previousDownstream
    if (first || stale || skipped || truncated) {
      this.lastSyncDownstream = downstreamOffset
      this.pending = true
    }
    this.previousUpstream = upstreamOffset
    this.previousDownstream = downstreamOffset
    return this.pending
  }

  reset(): void {
    this.pending = false
  }
}

/** How many syncs a partition keeps (Kafka keeps 64). */
const SYNCS_PER_PARTITION = 64

const tpKey = (topic: string, partition: number): string => `${topic}\u0000${partition}`

export class OffsetSyncStore {
  /** Newest first. */
  private readonly syncs = new Map<string, OffsetSync[]>()

  add(sync: OffsetSync): void {
    const key = tpKey(sync.topic, sync.partition)
    const old = this.syncs.get(key) ?? []
    const latest = old[0]
    // A sync at or before the newest one upstream means the source was reset or rewound: start over.
    const list = latest !== undefined && sync.upstreamOffset <= latest.upstreamOffset ? [] : old
    const kept: OffsetSync[] = [sync]
    for (const s of list) {
      if (kept.length >= SYNCS_PER_PARTITION) break
      const previous = kept[kept.length - 1]!
      if (s.downstreamOffset > previous.downstreamOffset) continue
      // The i-th kept sync is at least 2^(i-1) upstream offsets older than the newest.
      if (sync.upstreamOffset - s.upstreamOffset >= 2 ** (kept.length - 1)) kept.push(s)
    }
    // The oldest sync stays too: a group far behind still translates (conservatively, through it).
    const oldest = list[list.length - 1]
    if (oldest !== undefined && kept[kept.length - 1] !== oldest && oldest.downstreamOffset <= kept[kept.length - 1]!.downstreamOffset) {
      if (kept.length >= SYNCS_PER_PARTITION) kept.pop()
      kept.push(oldest)
    }
    this.syncs.set(key, kept)
  }

  /** The downstream offset for a committed upstream offset; -1: too old to translate; null: no sync yet. */
  translateDownstream(topic: string, partition: number, upstreamOffset: number): number | null {
    const list = this.syncs.get(tpKey(topic, partition))
    if (list === undefined || list.length === 0) return null
    const sync = list.find((s) => s.upstreamOffset <= upstreamOffset)
    if (sync === undefined) return -1
    return sync.downstreamOffset + (sync.upstreamOffset === upstreamOffset ? 0 : 1)
  }

  partitions(): number {
    return this.syncs.size
  }
}
