// A partition this broker hosts, as the last LeaderAndIsr for it said: the entry of the replica manager's
// leadership table that the ISR manager (alter-partition-manager.ts) reads and updates too.
import type { FollowerLogState } from './leader-endpoint.js'
import type { LiveLeader } from './partition-requests.js'
import type { PartitionLeaderState } from './partition.js'

export interface HostedPartition {
  readonly topic: string
  readonly partition: number
  topicId: string
  isLeader: boolean
  leaderId: number
  leaderEpoch: number
  partitionEpoch: number
  controllerEpoch: number
  replicas: readonly number[]
  isr: readonly number[]
  leaderRecoveryState: number
  /** The leader's inter-broker endpoint, for a follower (where it would fetch from). */
  leaderEndpoint: LiveLeader | undefined
  /** Replication state while this broker leads the partition. */
  leaderState: PartitionLeaderState | undefined
  /** Whether the shard moves the HW on append (the mode last sent to it). */
  hwFollowsLeo: boolean
  /**
   * A follower's log as its fetcher last left it (log start, end, HW), undefined on a leader: a consumer's
   * read from this follower (KIP-392) past its log end is told apart from one below its log start.
   */
  followerLog: FollowerLogState | undefined
}
