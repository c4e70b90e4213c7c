// The coordinators' PartitionWriter port (src/coordinator/runtime/partition-writer.ts) over the
// partition service: records go in as one uncompressed RecordBatch appended as leader with acks=all
// (so once replication exists an append resolves when the in-sync replicas have it, as Kafka's
// coordinators require), and are read back for replay up to the log end offset (Kafka's coordinators
// load what the partition's log has when they become its leader: a new leader's high watermark may
// still be below records the old leader acknowledged). Used for __consumer_offsets and
// __transaction_state alike.
import { native } from '../../addon/index.js'
import type { CoordinatorRecord, PartitionWriter, ReadChunk, StoredRecord, TransactionalAppend } from '../../coordinator/runtime/partition-writer.js'
import { ErrorCode, KafkaError } from '../../domain/errors.js'
import { BASE_SEQUENCE_OFFSET, CONTROL_MASK, COMPRESSION_MASK, PRODUCER_EPOCH_OFFSET, PRODUCER_ID_OFFSET, TRANSACTIONAL_MASK, iterateBatches, readInt64 } from '../../protocol/records/batch.js'
import { buildRecordBatch, decodeRecords } from '../../protocol/records/builder.js'
import { readRegions } from '../../storage/regions.js'
import type { CoordinatorPartitionAccess } from './internal-topic-service.js'

const READ_CHUNK_BYTES = 1 << 20
/** Kafka's log start offset lookup (ListOffsets EARLIEST). */
const EARLIEST = -2

export class CoordinatorPartitionWriter implements PartitionWriter {
  constructor(
    private readonly partitions: CoordinatorPartitionAccess,
    private readonly topic: string,
    /** How long an append may wait for the in-sync replicas (offsets.commit.timeout.ms for groups). */
    private readonly appendTimeoutMs: number,
  ) {}

  async append(partition: number, records: readonly CoordinatorRecord[], txn?: TransactionalAppend): Promise<void> {
    const batch = buildRecordBatch(
      records.map((r) => ({ key: r.key, value: r.value })),
      (data, seed) => native.crc32c(data, seed),
      txn === undefined ? {} : { producerId: txn.producerId, producerEpoch: txn.producerEpoch, baseSequence: txn.baseSequence, transactional: true },
    )
    const [res] = await this.partitions.appendAsLeader([{ topic: this.topic, partition, records: batch }], { acks: -1, timeoutMs: this.appendTimeoutMs })
    if (res === undefined || !res.ok) throw new KafkaError((res?.ok === false ? res.errorCode : ErrorCode.UNKNOWN_SERVER_ERROR) as ErrorCode, res?.ok === false ? res.message : 'no append result')
  }

  /** Moves the partition's log start up to `offset` (DeleteRecords as its leader); the records before it go. */
  async deleteRecordsBefore(partition: number, offset: number): Promise<void> {
    if (this.partitions.deleteRecords === undefined) return
    const [res] = await this.partitions.deleteRecords([{ topic: this.topic, partition, offset }])
    if (res === undefined || !res.ok) throw new KafkaError((res?.ok === false ? res.errorCode : ErrorCode.UNKNOWN_SERVER_ERROR) as ErrorCode, res?.ok === false ? res.message : 'no delete result')
  }

  async read(partition: number, fromOffset: number): Promise<ReadChunk> {
    const { partitions, topic } = this
    let [res] = await partitions.read([{ topic, partition, offset: fromOffset, maxBytes: READ_CHUNK_BYTES, logEnd: true }])
    if (res !== undefined && !res.ok && res.errorCode === ErrorCode.OFFSET_OUT_OF_RANGE) {
      // Records before the log start offset are gone (deleted or cleaned): start from the log start.
      const [start] = await partitions.listOffsets([{ topic, partition, timestamp: EARLIEST }])
      if (start?.ok && start.value.offset > fromOffset) {
        fromOffset = start.value.offset
        ;[res] = await partitions.read([{ topic, partition, offset: fromOffset, maxBytes: READ_CHUNK_BYTES, logEnd: true }])
      }
    }
    if (res === undefined || !res.ok) throw new KafkaError((res?.ok === false ? res.errorCode : ErrorCode.UNKNOWN_SERVER_ERROR) as ErrorCode, res?.ok === false ? res.message : 'no read result')
    const value = res.value
    let bytes: Buffer
    try {
      bytes = readRegions(value.regions)
    } finally {
      if (value.regions.length > 0) partitions.releaseLeases([value])
    }
    const records: StoredRecord[] = []
    let nextOffset = fromOffset
    for (const info of iterateBatches(bytes)) {
      nextOffset = Math.max(nextOffset, info.lastOffset + 1)
      if ((info.attributes & COMPRESSION_MASK) !== 0) throw new KafkaError(ErrorCode.CORRUPT_MESSAGE, `compressed batch at offset ${info.baseOffset} of ${topic}-${partition}: coordinator partitions are written uncompressed`)
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
    return { records, nextOffset, endOffset: value.logEndOffset }
  }
}
