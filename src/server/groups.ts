// The broker side of the group coordinator: __consumer_offsets is created on first use (Kafka's way:
// never by a client's Metadata auto-creation) with offsets.topic.num.partitions,
// offsets.topic.replication.factor, cleanup.policy=compact and offsets.topic.segment.bytes; the
// coordinator's PartitionWriter port is implemented here over the partition shards (records go in as
// uncompressed RecordBatches and are read back for replay); and the topics port answers partition
// counts and offsets for commits and lag. When the topic already exists at startup, every partition is
// replayed in the background (group requests meanwhile get COORDINATOR_LOAD_IN_PROGRESS).
import { native } from '../addon/index.js'
import { GroupCoordinator } from '../coordinator/group/group-coordinator.js'
import type { GroupCoordinatorConfig, TopicsView } from '../coordinator/group/types.js'
import { systemClock } from '../coordinator/runtime/clock.js'
import type { CoordinatorRecord, PartitionWriter, ReadChunk, StoredRecord, TransactionalAppend } from '../coordinator/runtime/partition-writer.js'
import { ErrorCode, KafkaError } from '../domain/errors.js'
import { BASE_SEQUENCE_OFFSET, CONTROL_MASK, COMPRESSION_MASK, PRODUCER_EPOCH_OFFSET, PRODUCER_ID_OFFSET, TRANSACTIONAL_MASK, iterateBatches, readInt64 } from '../protocol/records/batch.js'
import { buildRecordBatch, decodeRecords } from '../protocol/records/builder.js'
import type { ShardRouter } from '../shard/router.js'
import { readRegions } from '../storage/regions.js'
import type { TopicRecord } from '../cluster/topic-store.js'
import type { Broker } from './broker.js'
import { partitionKey } from './fetch-purgatory.js'
import { InternalTopicService, type InternalTopicSpec } from './internal-topic-service.js'
import { LEADER_EPOCH } from './partition-checks.js'

export const CONSUMER_OFFSETS_TOPIC = '__consumer_offsets'
const READ_CHUNK_BYTES = 1 << 20


/** The coordinator's PartitionWriter over the partition shards of __consumer_offsets. */
export class ShardPartitionWriter implements PartitionWriter {
  constructor(
    private readonly router: ShardRouter,
    private readonly topic: string,
    private readonly onAppended: (partition: number) => void,
  ) {}

  async append(partition: number, records: readonly CoordinatorRecord[], txn?: TransactionalAppend): Promise<void> {
    const batch = buildRecordBatch(
      records.map((r) => ({ key: r.key, value: r.value })),
      (data, seed) => native.crc32c(data, seed),
      txn === undefined ? {} : { producerId: txn.producerId, producerEpoch: txn.producerEpoch, baseSequence: txn.baseSequence, transactional: true },
    )
    const [res] = await this.router.append([{ topic: this.topic, partition, records: batch, leaderEpoch: LEADER_EPOCH }])
    if (res === undefined || !res.ok) throw new KafkaError((res?.ok === false ? res.errorCode : ErrorCode.UNKNOWN_SERVER_ERROR) as ErrorCode, res?.ok === false ? res.message : 'no append result')
    this.onAppended(partition)
  }

  async read(partition: number, fromOffset: number): Promise<ReadChunk> {
    let [res] = await this.router.read([{ topic: this.topic, partition, offset: fromOffset, maxBytes: READ_CHUNK_BYTES }])
    if (res !== undefined && !res.ok && res.errorCode === ErrorCode.OFFSET_OUT_OF_RANGE) {
      // Records before the log start offset are gone (deleted or cleaned): start from the log start.
      const [start] = await this.router.listOffsets([{ topic: this.topic, partition, timestamp: -2 }])
      if (start?.ok && start.value.offset > fromOffset) {
        fromOffset = start.value.offset
        ;[res] = await this.router.read([{ topic: this.topic, partition, offset: fromOffset, maxBytes: READ_CHUNK_BYTES }])
      }
    }
    if (res === undefined || !res.ok) throw new KafkaError((res?.ok === false ? res.errorCode : ErrorCode.UNKNOWN_SERVER_ERROR) as ErrorCode, res?.ok === false ? res.message : 'no read result')
    const value = res.value
    let bytes: Buffer
    try {
      bytes = readRegions(value.regions)
    } finally {
      if (value.leaseId !== 0) this.router.releaseLeases([{ shard: value.shard, leaseId: value.leaseId }])
    }
    const records: StoredRecord[] = []
    let nextOffset = fromOffset
    for (const info of iterateBatches(bytes)) {
      nextOffset = Math.max(nextOffset, info.lastOffset + 1)
      if ((info.attributes & COMPRESSION_MASK) !== 0) throw new KafkaError(ErrorCode.CORRUPT_MESSAGE, `compressed batch at offset ${info.baseOffset} of ${this.topic}-${partition}: coordinator partitions are written uncompressed`)
      const transactional = (info.attributes & TRANSACTIONAL_MASK) !== 0
      const producerId = readInt64(bytes, info.position + PRODUCER_ID_OFFSET)
      const producerEpoch = bytes.readInt16BE(info.position + PRODUCER_EPOCH_OFFSET)
      const baseSequence = bytes.readInt32BE(info.position + BASE_SEQUENCE_OFFSET)
      if ((info.attributes & CONTROL_MASK) !== 0) {
        // A transaction marker (EndTransactionMarker: key = version int16 + type int16, 1 = COMMIT).
        for (const r of decodeRecords(bytes, info.position)) {
          if (r.offset < fromOffset || r.key === null || r.key.length < 4) continue
          const type = r.key.readInt16BE(2)
          if (type !== 0 && type !== 1) continue
          records.push({ offset: r.offset, key: r.key, value: r.value, producerId, producerEpoch, control: type === 1 ? 'commit' : 'abort' })
        }
        continue
      }
      decodeRecords(bytes, info.position).forEach((r, i) => {
        if (r.offset < fromOffset || r.key === null) return
        const stored: StoredRecord = { offset: r.offset, key: r.key, value: r.value }
        if (transactional && producerId >= 0) Object.assign(stored, { producerId, producerEpoch, sequence: baseSequence + i })
        records.push(stored)
      })
    }
    return { records, nextOffset, endOffset: value.highWatermark }
  }
}

/** Owns the broker's GroupCoordinator: created with __consumer_offsets on first use, closed on stop. */
export class GroupService extends InternalTopicService<GroupCoordinator> {
  constructor(broker: Broker) {
    super(broker, CONSUMER_OFFSETS_TOPIC)
  }

  protected topicSpec(): InternalTopicSpec {
    const c = this.broker.config
    return {
      numPartitions: c.getInt('offsets.topic.num.partitions'),
      replicationFactor: c.getInt('offsets.topic.replication.factor'),
      configs: { 'cleanup.policy': 'compact', 'segment.bytes': String(c.getInt('offsets.topic.segment.bytes')) },
    }
  }

  protected build(topic: TopicRecord): GroupCoordinator {
    const { broker } = this
    const c = broker.config
    const config: GroupCoordinatorConfig = {
      offsetsTopicPartitions: topic.partitions,
      offsetsRetentionMs: c.getInt('offsets.retention.minutes') * 60_000,
      offsetsRetentionCheckIntervalMs: c.getInt('offsets.retention.check.interval.ms'),
      initialRebalanceDelayMs: c.getInt('group.initial.rebalance.delay.ms'),
      minSessionTimeoutMs: c.getInt('group.min.session.timeout.ms'),
      maxSessionTimeoutMs: c.getInt('group.max.session.timeout.ms'),
      maxGroupSize: c.getInt('group.max.size'),
      offsetMetadataMaxBytes: c.getInt('offset.metadata.max.bytes'),
    }
    const writer = new ShardPartitionWriter(broker.router, CONSUMER_OFFSETS_TOPIC, (partition) => broker.purgatory.notify(partitionKey(CONSUMER_OFFSETS_TOPIC, partition)))
    return new GroupCoordinator({ config, writer, topics: brokerTopicsView(broker), clock: systemClock, log: broker.log })
  }
}

function brokerTopicsView(broker: Broker): TopicsView {
  return {
    partitionCount: (topic) => broker.topics.get(topic)?.partitions,
    async offsets(partitions) {
      const states = await broker.router.states(partitions)
      const byKey = new Map(states.map((s) => [partitionKey(s.topic, s.partition), s]))
      return partitions.map((p) => {
        const s = byKey.get(partitionKey(p.topic, p.partition))
        return s === undefined ? null : { logEndOffset: s.logEndOffset, highWatermark: s.highWatermark }
      })
    },
  }
}
