// Checks every partition-level request makes before touching a partition: does it exist here, and is
// the client's idea of its leader epoch current. One broker leads every partition at epoch 0 until
// replication (and leader elections) exist.
import type { TopicRecord } from '../cluster/topic-store.js'
import { ErrorCode } from '../domain/errors.js'

export const LEADER_EPOCH = 0

/** -1 skips the check; a newer epoch than ours is unknown to us, an older one is fenced (KIP-320). */
export function leaderEpochError(currentLeaderEpoch: number): ErrorCode {
  if (currentLeaderEpoch < 0) return ErrorCode.NONE
  if (currentLeaderEpoch > LEADER_EPOCH) return ErrorCode.UNKNOWN_LEADER_EPOCH
  if (currentLeaderEpoch < LEADER_EPOCH) return ErrorCode.FENCED_LEADER_EPOCH
  return ErrorCode.NONE
}

/** NONE when this broker leads the partition and the epoch (if given) is current, else Kafka's code. */
export function leaderPartitionError(topic: TopicRecord | undefined, partition: number, currentLeaderEpoch = -1): ErrorCode {
  if (topic === undefined || partition < 0 || partition >= topic.partitions) return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
  return leaderEpochError(currentLeaderEpoch)
}
