// The request versions this client can drive, per API. A connection uses the highest version inside both
// this range and the broker's ApiVersions range. Upper bounds stop where a version changes what the client
// must do rather than just adding defaulted fields: Fetch v13+ names topics by id, FindCoordinator v4+
// batches keys (handled), OffsetFetch v8+ batches groups, OffsetCommit v9+ and JoinGroup's KIP-848 fields
// belong to the new consumer protocol. The transaction APIs stop before KIP-890 part 2 (transaction
// version 2: EndTxn v5 bumps the epoch on every commit, Produce v12 adds partitions implicitly);
// AddPartitionsToTxn v4+ is the brokers' batched form.
import { ApiKey } from '../protocol/api-keys.gen.js'
import { ErrorCode, KafkaError } from '../domain/errors.js'

export interface VersionRange {
  min: number
  max: number
}

export const CLIENT_VERSIONS: ReadonlyMap<number, VersionRange> = new Map<number, VersionRange>([
  [ApiKey.Produce, { min: 3, max: 9 }],
  [ApiKey.Fetch, { min: 4, max: 12 }],
  [ApiKey.ListOffsets, { min: 1, max: 7 }],
  [ApiKey.Metadata, { min: 1, max: 12 }],
  [ApiKey.OffsetCommit, { min: 2, max: 8 }],
  [ApiKey.OffsetFetch, { min: 1, max: 7 }],
  [ApiKey.FindCoordinator, { min: 0, max: 6 }],
  [ApiKey.JoinGroup, { min: 0, max: 9 }],
  [ApiKey.Heartbeat, { min: 0, max: 4 }],
  [ApiKey.LeaveGroup, { min: 0, max: 5 }],
  [ApiKey.SyncGroup, { min: 0, max: 5 }],
  [ApiKey.DescribeGroups, { min: 0, max: 5 }],
  [ApiKey.ListGroups, { min: 0, max: 5 }],
  [ApiKey.ApiVersions, { min: 0, max: 3 }],
  [ApiKey.CreateTopics, { min: 2, max: 7 }],
  [ApiKey.DeleteTopics, { min: 1, max: 6 }],
  [ApiKey.DeleteRecords, { min: 0, max: 2 }],
  [ApiKey.DescribeConfigs, { min: 1, max: 4 }],
  // v1+: PREFIXED patterns.
  [ApiKey.DescribeAcls, { min: 1, max: 3 }],
  [ApiKey.CreateAcls, { min: 1, max: 3 }],
  [ApiKey.DeleteAcls, { min: 1, max: 3 }],
  [ApiKey.AlterConfigs, { min: 0, max: 2 }],
  [ApiKey.CreatePartitions, { min: 0, max: 3 }],
  [ApiKey.DeleteGroups, { min: 0, max: 2 }],
  [ApiKey.IncrementalAlterConfigs, { min: 0, max: 1 }],
  [ApiKey.ElectLeaders, { min: 1, max: 2 }],
  [ApiKey.AlterPartitionReassignments, { min: 0, max: 0 }],
  [ApiKey.ListPartitionReassignments, { min: 0, max: 0 }],
  [ApiKey.DescribeCluster, { min: 0, max: 1 }],
  [ApiKey.AlterReplicaLogDirs, { min: 1, max: 2 }],
  [ApiKey.DescribeLogDirs, { min: 1, max: 4 }],
  [ApiKey.InitProducerId, { min: 0, max: 5 }],
  [ApiKey.AddPartitionsToTxn, { min: 0, max: 3 }],
  [ApiKey.AddOffsetsToTxn, { min: 0, max: 4 }],
  [ApiKey.EndTxn, { min: 0, max: 4 }],
  [ApiKey.TxnOffsetCommit, { min: 0, max: 4 }],
  [ApiKey.ConsumerGroupDescribe, { min: 0, max: 0 }],
  [ApiKey.DescribeClientQuotas, { min: 0, max: 1 }],
  [ApiKey.AlterClientQuotas, { min: 0, max: 1 }],
  [ApiKey.DescribeUserScramCredentials, { min: 0, max: 0 }],
  [ApiKey.AlterUserScramCredentials, { min: 0, max: 0 }],
  // Share groups (KIP-932): v1 only, Kafka 4.1's (client-chosen member ids). v0 was 4.0's early access,
  // which Kafka no longer serves; ShareFetch v2 (KIP-1206 acquire modes) is not driven. A broker that does
  // not advertise them fails the share consumer with UNSUPPORTED_VERSION, as Kafka's client does.
  [ApiKey.ShareGroupHeartbeat, { min: 1, max: 1 }],
  [ApiKey.ShareFetch, { min: 1, max: 1 }],
  [ApiKey.ShareAcknowledge, { min: 1, max: 1 }],
  // Share groups' admin APIs: ShareGroupDescribe v1 as the others; the offsets APIs v0, Kafka 4.1's.
  [ApiKey.ShareGroupDescribe, { min: 1, max: 1 }],
  [ApiKey.DescribeShareGroupOffsets, { min: 0, max: 0 }],
  [ApiKey.AlterShareGroupOffsets, { min: 0, max: 0 }],
  [ApiKey.DeleteShareGroupOffsets, { min: 0, max: 0 }],
])

/** Highest version in both ranges, or a KafkaError(UNSUPPORTED_VERSION) naming the API. */
export function pickVersion(apiKey: number, apiName: string, broker: VersionRange | undefined): number {
  const client = CLIENT_VERSIONS.get(apiKey)
  if (client === undefined) throw new KafkaError(ErrorCode.UNSUPPORTED_VERSION, `this client does not implement ${apiName}`)
  if (broker === undefined) throw new KafkaError(ErrorCode.UNSUPPORTED_VERSION, `the broker does not support ${apiName}`)
  const v = Math.min(client.max, broker.max)
  if (v < client.min || v < broker.min) {
    throw new KafkaError(ErrorCode.UNSUPPORTED_VERSION, `${apiName}: broker versions ${broker.min}-${broker.max} and client versions ${client.min}-${client.max} do not overlap`)
  }
  return v
}
