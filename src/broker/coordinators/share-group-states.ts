// The group coordinator's ShareGroupStatePort (KIP-932): share-partition state initialized for the
// partitions assigned to a share group's members, and deleted with the group, through the broker's
// persister (BrokerSharePersister: the share coordinator here or over the inter-broker listener).
//
// * Initialize: a share-partition whose state was never initialized (ReadShareGroupStateSummary answers
//   state epoch 0, start offset -1) gets InitializeShareGroupState with state epoch 1 and start offset -1,
//   as Kafka 4.1's group coordinator sends it: the share-partition's leader takes the group's
//   share.auto.offset.reset on its first load. State already there is left alone. The group coordinator
//   asks only for partitions its ShareGroupStatePartitionMetadata does not record as initialized, so a
//   heartbeat of a settled group costs no round trip.
// * Delete: DeleteShareGroupState for the share-partitions the group coordinator recorded for the group
//   (its ShareGroupStatePartitionMetadata: initialized or being initialized), a few at a time; a group
//   with no such record (made before Skein kept it) gets one for every partition of every topic in the
//   metadata (a share coordinator writes nothing for a key it does not hold). The copies this broker holds
//   in memory are dropped.
import type { ShareGroupStatePort } from '../../coordinator/group/group-coordinator.js'
import type { MetadataImage } from '../../cluster/metadata-image.js'
import type { SharePartitionManager } from '../../replication/share/share-partition-manager.js'
import type { BrokerSharePersister } from './share-states.js'

const DELETE_CONCURRENCY = 32

export class BrokerShareGroupStates implements ShareGroupStatePort {
  constructor(
    private readonly persister: () => Pick<BrokerSharePersister, 'readSummary' | 'initializeState' | 'deleteState'>,
    private readonly metadata: Pick<MetadataImage, 'topics'>,
    private readonly partitions: () => Pick<SharePartitionManager, 'onStateReset'> | undefined,
  ) {}

  async initialize(groupId: string, assigned: readonly [topicId: string, partitions: readonly number[]][]): Promise<void> {
    const p = this.persister()
    await Promise.all(assigned.flatMap(([topicId, parts]) => parts.map(async (partition) => {
      const key = { group: groupId, topicId, partition }
      const summary = await p.readSummary(key)
      if (summary.stateEpoch <= 0 && summary.startOffset < 0) await p.initializeState(key, 1, -1)
    })))
  }

  async deleteGroup(groupId: string, statePartitions: readonly [topicId: string, partitions: readonly number[]][] | undefined): Promise<void> {
    const keys: { group: string; topicId: string; partition: number }[] = []
    if (statePartitions !== undefined) {
      for (const [topicId, partitions] of statePartitions) for (const partition of partitions) keys.push({ group: groupId, topicId, partition })
    } else {
      for (const t of this.metadata.topics()) {
        if (t.topicId === '') continue
        for (let partition = 0; partition < t.partitions; partition++) keys.push({ group: groupId, topicId: t.topicId, partition })
      }
    }
    const p = this.persister()
    let next = 0
    const worker = async (): Promise<void> => {
      while (next < keys.length) {
        const key = keys[next++]!
        await p.deleteState(key)
        this.partitions()?.onStateReset(groupId, key.topicId, key.partition)
      }
    }
    await Promise.all(Array.from({ length: Math.min(DELETE_CONCURRENCY, keys.length) }, worker))
  }
}
