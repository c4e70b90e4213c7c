// The broker side of the group coordinator: __consumer_offsets is created on first use (Kafka's way:
// never by a client's Metadata auto-creation) with offsets.topic.num.partitions,
// offsets.topic.replication.factor, cleanup.policy=compact and offsets.topic.segment.bytes; the
// coordinator's PartitionWriter port appends and reads through the partition service
// (coordinator-partition-writer.ts); and the topics port answers partition counts and offsets for
// commits and lag. When the topic already exists at startup, every partition is replayed in the
// background (group requests meanwhile get COORDINATOR_LOAD_IN_PROGRESS).
import { GroupCoordinator, type ShareGroupStatePort } from '../../coordinator/group/group-coordinator.js'
import { assignorName } from '../../coordinator/group/server-assignors.js'
import type { GroupCoordinatorConfig, TopicsView } from '../../coordinator/group/types.js'
import { systemClock } from '../../coordinator/runtime/clock.js'
import type { TopicInfo } from '../../server/handlers/common/ports.js'
import { CoordinatorPartitionWriter } from './coordinator-partition-writer.js'
import { partitionKey } from '../../replication/delayed-fetch.js'
import type { GroupConfigAdmin, GroupCoordinatorService } from '../../server/handlers/common/ports.js'
import { InternalTopicService, type InternalTopicPorts, type InternalTopicSpec } from './internal-topic-service.js'
import type { ReplicaManager } from '../../replication/replica-manager.js'

export const CONSUMER_OFFSETS_TOPIC = '__consumer_offsets'

/** What the group service uses of the broker: an internal topic's ports, and the offsets behind lag. */
export interface GroupServicePorts extends InternalTopicPorts {
  readonly partitions: InternalTopicPorts['partitions'] & Pick<ReplicaManager, 'states'>
  /** Group configs: {consumer,share}.session.timeout.ms and {consumer,share}.heartbeat.interval.ms of a group override the broker's. */
  readonly groupConfigs?: Pick<GroupConfigAdmin, 'effective'>
  /** Share-partition state for share groups (share-group-states.ts): initialized on assignment, deleted with the group. */
  readonly shareStates?: ShareGroupStatePort
}

/** Owns the broker's GroupCoordinator: created with __consumer_offsets on first use, closed on stop. */
export class GroupService extends InternalTopicService<GroupCoordinator, GroupServicePorts> implements GroupCoordinatorService {
  constructor(ports: GroupServicePorts) {
    super(ports, CONSUMER_OFFSETS_TOPIC)
  }

  protected topicSpec(): InternalTopicSpec {
    const c = this.ports.config()
    return {
      numPartitions: c.getInt('offsets.topic.num.partitions'),
      replicationFactor: c.getInt('offsets.topic.replication.factor'),
      configs: { 'cleanup.policy': 'compact', 'segment.bytes': String(c.getInt('offsets.topic.segment.bytes')) },
    }
  }

  protected build(topic: TopicInfo): GroupCoordinator {
    const { ports } = this
    const c = ports.config()
    const config: GroupCoordinatorConfig = {
      offsetsTopicPartitions: topic.partitions,
      offsetsRetentionMs: c.getInt('offsets.retention.minutes') * 60_000,
      offsetsRetentionCheckIntervalMs: c.getInt('offsets.retention.check.interval.ms'),
      initialRebalanceDelayMs: c.getInt('group.initial.rebalance.delay.ms'),
      minSessionTimeoutMs: c.getInt('group.min.session.timeout.ms'),
      maxSessionTimeoutMs: c.getInt('group.max.session.timeout.ms'),
      maxGroupSize: c.getInt('group.max.size'),
      offsetMetadataMaxBytes: c.getInt('offset.metadata.max.bytes'),
      consumerGroupSessionTimeoutMs: c.getInt('group.consumer.session.timeout.ms'),
      consumerGroupHeartbeatIntervalMs: c.getInt('group.consumer.heartbeat.interval.ms'),
      consumerGroupMaxSize: c.getInt('group.consumer.max.size'),
      consumerGroupAssignors: c.getList('group.consumer.assignors')!.map((a) => assignorName(a)!),
      consumerGroupConfig: ports.groupConfigs === undefined ? undefined : (groupId) => ({
        sessionTimeoutMs: ports.groupConfigs!.effective(groupId, 'consumer.session.timeout.ms') as number,
        heartbeatIntervalMs: ports.groupConfigs!.effective(groupId, 'consumer.heartbeat.interval.ms') as number,
      }),
      shareGroupSessionTimeoutMs: c.getInt('group.share.session.timeout.ms'),
      shareGroupHeartbeatIntervalMs: c.getInt('group.share.heartbeat.interval.ms'),
      shareGroupMaxSize: c.getInt('group.share.max.size'),
      shareGroupConfig: ports.groupConfigs === undefined ? undefined : (groupId) => ({
        sessionTimeoutMs: ports.groupConfigs!.effective(groupId, 'share.session.timeout.ms') as number,
        heartbeatIntervalMs: ports.groupConfigs!.effective(groupId, 'share.heartbeat.interval.ms') as number,
      }),
    }
    const writer = new CoordinatorPartitionWriter(ports.partitions, CONSUMER_OFFSETS_TOPIC, c.getInt('offsets.commit.timeout.ms'))
    return new GroupCoordinator({ config, writer, topics: brokerTopicsView(ports), clock: systemClock, log: ports.log, shareStates: ports.shareStates })
  }

  async onPartitionsDeleted(partitions: readonly { topic: string; partition: number }[]): Promise<void> {
    await this.current?.onPartitionsDeleted(partitions)
  }
}

function brokerTopicsView(ports: GroupServicePorts): TopicsView {
  return {
    partitionCount: (topic) => ports.topics.get(topic)?.partitions,
    topicId: (topic) => ports.topics.get(topic)?.topicId,
    topicName: (topicId) => ports.topics.getById(topicId)?.name,
    async offsets(partitions) {
      const states = await ports.partitions.states(partitions)
      const byKey = new Map(states.map((s) => [partitionKey(s.topic, s.partition), s]))
      return partitions.map((p) => {
        const s = byKey.get(partitionKey(p.topic, p.partition))
        return s === undefined ? null : { logEndOffset: s.logEndOffset, highWatermark: s.highWatermark }
      })
    },
  }
}
