// Offset syncs: the pairs (upstream offset, downstream offset) MirrorSourceTask writes to
// mm2-offset-syncs.<target>.internal, and the store MirrorCheckpointTask translates group offsets with.
//
// Writer side (Kafka's OffsetSyncWriter.PartitionState): a sync is sent at once for the first record of a
// partition in this task's lifetime, when the offset translated from the last sync would be offset.lag.max
// or more behind, when upstream offsets skipped (compaction, transaction markers) or the downstream offset
// went back; otherwise the newest pair waits as a "delayed" sync that goes out when the task commits its
// offsets (so an idle topic's consumers are translated up to its end).
//
// Reader side (the aim of Kafka 3.5+'s OffsetSyncStore, KAFKA-14666: precision that falls off with a
// group's lag, in a small store). Per partition the kept syncs, newest first, are thinned on every add so
// that of two neighbours either nothing was ever between them or the older is at most twice as far behind
// the newest sync as the newer one. A sync is dropped only when its neighbours satisfy that without it,
// and the condition, once true, stays true as newer syncs arrive (every distance grows by the same
// amount), so it holds for every pair at all times. An offset L behind the newest sync therefore
// translates through a kept sync less than max(L, the spacing of two syncs) further back: what a moved
// consumer re-reads is about offset.lag.max for a group at the head and grows with its lag, never with the
// partition. The store keeps at most about 2*log2(newest / offset.lag.max) + 3 syncs; the oldest is never
// dropped, so a group far behind still translates, conservatively, through it. (Kafka's store keeps one
// sync per power-of-two bucket of 64; right after the newest crosses a large power of two its near-head
// buckets all hold the newest sync, and a group just behind it translates a whole bucket back.)
// An upstream offset translates through the newest sync at or before it: to that sync's downstream offset
// when equal, else one past it, never further, because records after a sync may have been filtered or
// compacted away, and overshooting would skip records.
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

const tpKey = (topic: string, partition: number): string => `${topic}\u0000${partition}`

export class OffsetSyncStore {
  /** Newest first. */
  private readonly syncs = new Map<string, OffsetSync[]>()

  add(sync: OffsetSync): void {
    const key = tpKey(sync.topic, sync.partition)
    const old = this.syncs.get(key) ?? []
    const newest = old[0]
    // A sync before the newest one upstream means the source was reset or rewound: start over.
    if (newest !== undefined && sync.upstreamOffset < newest.upstreamOffset) {
      this.syncs.set(key, [sync])
      return
    }
    // The same upstream offset again replaces it; a sync whose downstream offset is past the new one's
    // (the target was truncated) would translate past records that no longer exist there: dropped.
    const kept = [sync]
    for (let i = newest?.upstreamOffset === sync.upstreamOffset ? 1 : 0; i < old.length; i++) {
      if (old[i]!.downstreamOffset <= sync.downstreamOffset) kept.push(old[i]!)
    }
    const behind = (i: number): number => sync.upstreamOffset - kept[i]!.upstreamOffset
    for (let i = 1; i < kept.length - 1; ) {
      if (behind(i + 1) <= 2 * behind(i - 1)) kept.splice(i, 1)
      else i++
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

  /** How many syncs are kept for a partition (0 when none). */
  kept(topic: string, partition: number): number {
    return this.syncs.get(tpKey(topic, partition))?.length ?? 0
  }

  partitions(): number {
    return this.syncs.size
  }
}
