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
import { readSync } from 'node:fs'
import { ErrorCode, KafkaError } from '../domain/errors.js'
import { BASE_SEQUENCE_OFFSET, CONTROL_MASK, COMPRESSION_MASK, PRODUCER_EPOCH_OFFSET, PRODUCER_ID_OFFSET, TRANSACTIONAL_MASK, iterateBatches, readInt64 } from '../protocol/records/batch.js'
import { buildRecordBatch, decodeRecords } from '../protocol/records/builder.js'
import type { ShardRouter } from '../shard/router.js'
import type { FileRegion } from '../storage/types.js'
import type { Broker } from './broker.js'
import { partitionKey } from './fetch-purgatory.js'
import { LEADER_EPOCH } from './partition-checks.js'

export const CONSUMER_OFFSETS_TOPIC = '__consumer_offsets'
const READ_CHUNK_BYTES = 1 << 20

function readRegionBytes(regions: readonly FileRegion[]): Buffer {
  const total = regions.reduce((n, r) => n + r.length, 0)
  const out = Buffer.allocUnsafe(total)
  let at = 0
  for (const r of regions) {
    let done = 0
    while (done < r.length) {
      const n = readSync(r.fd, out, at + done, r.length - done, r.position + done)
      if (n === 0) throw new Error(`file region ends early (fd ${r.fd}, position ${r.position + done})`)
      done += n
    }
    at += r.length
  }
  return out
}

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
      bytes = readRegionBytes(value.regions)
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
export class GroupService {
  #starting: Promise<GroupCoordinator> | undefined
  #coordinator: GroupCoordinator | undefined
  #closed = false

  constructor(private readonly broker: Broker) {}

  /** At startup: if __consumer_offsets exists, start coordinating it now (replay in the background). */
  startIfPresent(): void {
    if (this.broker.topics.get(CONSUMER_OFFSETS_TOPIC) === undefined) return
    this.coordinator().catch((err: unknown) => this.broker.log.error({ err: (err as Error)?.message }, 'cannot start the group coordinator'))
  }

  /** The coordinator, once __consumer_offsets exists (created now if needed). */
  coordinator(): Promise<GroupCoordinator> {
    if (this.#closed) return Promise.reject(new KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, 'the broker is shutting down'))
    if (this.#starting === undefined) {
      this.#starting = this.#start()
      // A failed start (the topic could not be created) is retried by the next request.
      this.#starting.catch(() => {
        this.#starting = undefined
      })
    }
    return this.#starting
  }

  /** The coordinator if it is running (for the library API and tests). */
  get current(): GroupCoordinator | undefined {
    return this.#coordinator
  }

  async #start(): Promise<GroupCoordinator> {
    const { broker } = this
    let topic = broker.topics.get(CONSUMER_OFFSETS_TOPIC)
    const created = topic === undefined
    if (topic === undefined) {
      try {
        topic = await broker.topics.create({
          name: CONSUMER_OFFSETS_TOPIC,
          numPartitions: broker.config.getInt('offsets.topic.num.partitions'),
          replicationFactor: broker.config.getInt('offsets.topic.replication.factor'),
          configs: { 'cleanup.policy': 'compact', 'segment.bytes': String(broker.config.getInt('offsets.topic.segment.bytes')) },
          validateOnly: false,
        })
      } catch (err) {
        topic = broker.topics.get(CONSUMER_OFFSETS_TOPIC)
        if (topic === undefined) {
          broker.log.error({ err: (err as Error).message }, 'cannot create __consumer_offsets')
          throw new KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, `cannot create ${CONSUMER_OFFSETS_TOPIC}: ${(err as Error).message}`)
        }
      }
    }
    if (this.#closed) throw new KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, 'the broker is shutting down')
    const c = broker.config
    // The topic's real partition count decides where groups live, whatever the config says now.
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
    const coordinator = new GroupCoordinator({ config, writer, topics: brokerTopicsView(broker), clock: systemClock, log: broker.log })
    this.#coordinator = coordinator
    const loading = coordinator.loadAll().catch((err: unknown) => broker.log.error({ err: (err as Error)?.message }, 'loading __consumer_offsets failed'))
    // A new topic is empty: wait for the (instant) load so the first request is served, not told to retry.
    if (created) await loading
    return coordinator
  }

  close(): void {
    this.#closed = true
    this.#coordinator?.close()
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
