// A partition's replication state on its leader (Kafka's Partition and Replica, leader side): the leader
// epoch and the partition epoch it holds, the committed ISR and an ISR change waiting at the controller,
// each follower's log end offset and when it was last caught up, and the high watermark rules.
//
// Rules (Kafka's Partition.scala, Replica.scala; KIP-497):
// - Caught up: a follower whose LEO equals the leader's, or that was caught up within
//   replica.lag.time.max.ms. lastCaughtUpMs moves to this fetch's time when the fetch offset reaches the
//   leader's LEO of now, and to the previous fetch's time when it reaches the leader's LEO of then (a
//   follower under a steady trickle of produces stays in sync).
// - Maximal ISR: the committed ISR plus the replicas an AlterPartition in flight would add; HW and acks
//   use it (a shrink in flight still counts the replicas it removes).
// - HW: never advances while the committed ISR is smaller than min(min.insync.replicas, RF)
//   (KAFKA-15583); otherwise the minimum LEO over the leader, the maximal ISR and the followers that are
//   caught up (a follower about to join holds it back, unless the controller took it out of the ISR: a
//   broker shutting down or failed is not eligible). It only increases.
// - Shrink: followers of the ISR that are not caught up. Expand: a follower outside the ISR whose LEO
//   reached the HW and the start offset of the current leader epoch. One AlterPartition at a time.
// - Appends move the HW themselves (in the shard, no round trip to this thread) while the maximal ISR is
//   the leader alone and min ISR allows that: a single broker stays as fast as before replication.

/** A follower as its leader sees it. */
export interface FollowerProgress {
  readonly brokerId: number
  /** Its log end offset, from its last fetch; -1 until it fetches from this leader. */
  leo: number
  lastCaughtUpMs: number
  lastFetchMs: number
  /** The leader's LEO at that last fetch. */
  lastFetchLeaderLeo: number
}

/** An ISR change sent to the controller, not answered yet. */
export interface PendingIsrChange {
  isr: number[]
  /** Whether it adds replicas (an expansion) or removes them (a shrink). */
  expands: boolean
}

export interface LeaderStateInit {
  topic: string
  partition: number
  brokerId: number
  leaderEpoch: number
  partitionEpoch: number
  replicas: readonly number[]
  isr: readonly number[]
  minInsyncReplicas: number
  /** The leader's LEO when it became leader (the current epoch starts there). */
  logEndOffset: number
  highWatermark: number
  now: number
}

export class PartitionLeaderState {
  readonly topic: string
  readonly partition: number
  readonly brokerId: number
  readonly leaderEpoch: number
  partitionEpoch: number
  readonly replicas: readonly number[]
  /** The ISR the controller committed. */
  isr: number[]
  pending: PendingIsrChange | undefined
  /**
   * No expansion is proposed before this time (ms): set after the controller refused one (e.g. the
   * follower's broker is in a controlled shutdown), so its next fetches do not each ask again.
   */
  expandRetryAt = 0
  minInsyncReplicas: number
  /** The leader's LEO as its appends answered (a lower bound of the shard's). */
  logEndOffset: number
  highWatermark: number
  /** The first offset of this leader epoch. */
  readonly epochStartOffset: number
  readonly followers = new Map<number, FollowerProgress>()
  /**
   * Replicas the controller took out of the ISR (a broker shutting down, failed, or whose log dir failed):
   * not eligible to join (Kafka's isReplicaIsrEligible), so a late fetch of theirs does not make them hold
   * the HW back as replicas about to join; eligible again once an ISR with them is committed.
   */
  readonly removedByController = new Set<number>()

  constructor(init: LeaderStateInit) {
    this.topic = init.topic
    this.partition = init.partition
    this.brokerId = init.brokerId
    this.leaderEpoch = init.leaderEpoch
    this.partitionEpoch = init.partitionEpoch
    this.replicas = [...init.replicas]
    this.isr = [...init.isr]
    this.minInsyncReplicas = init.minInsyncReplicas
    this.logEndOffset = init.logEndOffset
    this.highWatermark = init.highWatermark
    this.epochStartOffset = init.logEndOffset
    for (const id of init.replicas) {
      if (id === init.brokerId) continue
      // Kafka's makeLeader: followers' LEOs are unknown; those in the ISR count as caught up now, so they
      // are not dropped before they had a chance to fetch from the new leader.
      const inIsr = init.isr.includes(id)
      this.followers.set(id, { brokerId: id, leo: -1, lastCaughtUpMs: inIsr ? init.now : 0, lastFetchMs: 0, lastFetchLeaderLeo: -1 })
    }
  }

  /** min(min.insync.replicas, RF): a partition with fewer replicas than min ISR asks for no more than it has. */
  get effectiveMinIsr(): number {
    return Math.min(this.minInsyncReplicas, this.replicas.length)
  }

  /** The committed ISR plus the replicas a pending expansion adds. */
  maximalIsr(): number[] {
    if (this.pending === undefined) return this.isr
    const out = [...this.isr]
    for (const id of this.pending.isr) if (!out.includes(id)) out.push(id)
    return out
  }

  /** Whether appends may move the HW themselves (see the file header). */
  get highWatermarkFollowsLeo(): boolean {
    const max = this.maximalIsr()
    return max.length === 1 && max[0] === this.brokerId && this.effectiveMinIsr <= 1
  }

  /** acks=all is refused (NOT_ENOUGH_REPLICAS) while the ISR is smaller than this. */
  get underMinIsr(): boolean {
    return this.isr.length < this.effectiveMinIsr
  }

  /** Whether a follower is caught up at `now` (Kafka's Replica.isCaughtUp). */
  isCaughtUp(f: FollowerProgress, now: number, lagMs: number): boolean {
    return f.leo === this.logEndOffset || now - f.lastCaughtUpMs <= lagMs
  }

  /** A follower fetched at fetchOffset while the leader's LEO was leaderLeo (Kafka's updateFetchState). */
  updateFollower(brokerId: number, fetchOffset: number, leaderLeo: number, now: number): FollowerProgress | undefined {
    const f = this.followers.get(brokerId)
    if (f === undefined) return undefined
    if (leaderLeo > this.logEndOffset) this.logEndOffset = leaderLeo
    if (fetchOffset >= leaderLeo) f.lastCaughtUpMs = Math.max(f.lastCaughtUpMs, now)
    else if (f.lastFetchLeaderLeo >= 0 && fetchOffset >= f.lastFetchLeaderLeo) f.lastCaughtUpMs = Math.max(f.lastCaughtUpMs, f.lastFetchMs)
    f.leo = fetchOffset
    f.lastFetchMs = now
    f.lastFetchLeaderLeo = leaderLeo
    return f
  }

  /** The HW the rules allow now (never below the current one). */
  computeHighWatermark(now: number, lagMs: number): number {
    if (this.isr.length < this.effectiveMinIsr) return this.highWatermark
    const max = this.maximalIsr()
    let hw = this.logEndOffset
    for (const f of this.followers.values()) {
      const aboutToJoin = f.leo >= 0 && now - f.lastCaughtUpMs <= lagMs && this.replicas.includes(f.brokerId) && !this.removedByController.has(f.brokerId)
      if (max.includes(f.brokerId) || aboutToJoin) {
        if (f.leo < hw) hw = f.leo
      }
    }
    return Math.max(hw, this.highWatermark)
  }

  /**
   * The controller changed the ISR under this leader and epoch (a broker left it: controlled shutdown, a
   * failure): followers keep their progress, except that one outside the new ISR no longer counts as
   * caught up (Kafka's resetReplicaState), else a replica that stopped fetching would hold the HW back for
   * replica.lag.time.max.ms as one about to join.
   */
  applyControllerIsr(isr: readonly number[], partitionEpoch: number): void {
    for (const id of this.isr) if (!isr.includes(id)) this.removedByController.add(id)
    this.isr = [...isr]
    this.partitionEpoch = partitionEpoch
    for (const id of isr) this.removedByController.delete(id)
    for (const f of this.followers.values()) if (!isr.includes(f.brokerId)) f.lastCaughtUpMs = 0
  }

  /** The controller committed an ISR this leader proposed (AlterPartition's answer). */
  applyCommittedIsr(isr: readonly number[], partitionEpoch: number): void {
    this.isr = [...isr]
    this.partitionEpoch = partitionEpoch
    for (const id of isr) this.removedByController.delete(id)
  }

  /** ISR members (not the leader) that are no longer caught up. */
  outOfSyncReplicas(now: number, lagMs: number): number[] {
    const out: number[] = []
    for (const id of this.isr) {
      if (id === this.brokerId) continue
      const f = this.followers.get(id)
      if (f === undefined || !this.isCaughtUp(f, now, lagMs)) out.push(id)
    }
    return out
  }

  /** Whether a follower outside the ISR may join it now (Kafka's isFollowerInSync). */
  mayJoinIsr(brokerId: number): boolean {
    if (this.isr.includes(brokerId)) return false
    const f = this.followers.get(brokerId)
    return f !== undefined && f.leo >= this.highWatermark && f.leo >= this.epochStartOffset
  }
}
