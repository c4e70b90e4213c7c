// What /metrics shows of share groups (KIP-932), read through the broker's own services:
// * countAcknowledgements: the share-partition service the handlers get, counting the records each
//   successful acknowledgement settles by type (Kafka's ShareGroupMetrics RecordAcknowledgementsPerSec;
//   RELEASE is what makes a record be delivered again).
// * shareGroupLag: for each share group this broker coordinates, each share-partition's start offset and
//   lag (the high watermark, where this broker leads the partition, minus the start offset), found as
//   DescribeShareGroupOffsets finds them: the topics its ShareGroupStatePartitionMetadata names and those
//   the members subscribe to or are assigned (every topic for an empty group without that record),
//   keeping the share-partitions with state.
import type { Counter } from '../observability/metrics.js'
import type { GroupCoordinatorApi, MetadataView, SharePartitionService, ShareGroupOffsetsService, ShareOffsetRef } from '../server/handlers/common/ports.js'

export function countAcknowledgements(service: SharePartitionService, counters: readonly (Counter | undefined)[]): SharePartitionService {
  return {
    beginRequest: (...a) => service.beginRequest(...a),
    closeSession: (...a) => service.closeSession(...a),
    fetch: (...a) => service.fetch(...a),
    releaseLeases: (...a) => service.releaseLeases(...a),
    lockDurationMs: (...a) => service.lockDurationMs(...a),
    async acknowledge(group, memberId, items) {
      const results = await service.acknowledge(group, memberId, items)
      items.forEach((item, i) => {
        if (results[i]?.errorCode !== 0) return
        for (const b of item.batches) {
          if (b.acknowledgeTypes.length === 1) counters[b.acknowledgeTypes[0]!]?.inc(b.lastOffset - b.firstOffset + 1)
          else for (const t of b.acknowledgeTypes) counters[t]?.inc()
        }
      })
      return results
    },
  }
}

export interface ShareLagPorts {
  coordinator(): Pick<GroupCoordinatorApi, 'listGroups' | 'shareGroupDescribe'> | undefined
  offsets: ShareGroupOffsetsService
  metadata: Pick<MetadataView, 'topic' | 'topicById' | 'topics' | 'isInternalTopic'>
  /** The partition's high watermark where this broker leads it, else undefined. */
  highWatermark(topic: string, partition: number): number | undefined
}

export async function shareGroupLag(ports: ShareLagPorts): Promise<{ group: string; topic: string; partition: number; startOffset: number; lag: number }[]> {
  const coordinator = ports.coordinator()
  if (coordinator === undefined) return []
  const { groups } = await coordinator.listGroups()
  const out: { group: string; topic: string; partition: number; startOffset: number; lag: number }[] = []
  for (const listed of groups) {
    if (listed.groupType !== 'share') continue
    const [g] = await coordinator.shareGroupDescribe([listed.groupId])
    if (g === undefined || g.errorCode !== 0) continue
    const names = new Set<string>()
    for (const m of g.members) {
      for (const t of m.subscribedTopicNames) names.add(t)
      for (const t of m.assignment) names.add(t.topicName)
    }
    for (const id of g.stateTopicIds ?? []) {
      const t = ports.metadata.topicById(id)
      if (t !== undefined) names.add(t.name)
    }
    if (names.size === 0 && g.stateTopicIds == null) for (const t of ports.metadata.topics()) if (!ports.metadata.isInternalTopic(t.name)) names.add(t.name)
    const parts: ShareOffsetRef[] = []
    for (const name of names) {
      const info = ports.metadata.topic(name)
      if (info !== undefined) for (let p = 0; p < info.partitions; p++) parts.push({ topic: name, topicId: info.topicId, partition: p })
    }
    const answers = await ports.offsets.startOffsets(listed.groupId, parts)
    parts.forEach((p, i) => {
      const a = answers[i]!
      if (a.errorCode !== 0 || a.startOffset < 0) return
      const hw = ports.highWatermark(p.topic, p.partition)
      out.push({ group: listed.groupId, topic: p.topic, partition: p.partition, startOffset: a.startOffset, lag: hw === undefined ? -1 : Math.max(0, hw - a.startOffset) })
    })
  }
  return out
}
