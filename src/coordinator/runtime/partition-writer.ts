// The port through which a coordinator reaches its internal partitions (Kafka's PartitionWriter): append
// records and read them back for replay. The broker implements it over its partition service
// (src/broker/coordinators/coordinator-partition-writer.ts); tests and embedders use InMemoryPartitionWriter.
// Coordinators never see RecordBatches, segments or threads, only keyed records and offsets.
import { ErrorCode, KafkaError } from '../../domain/errors.js'

/** One record of a compacted coordinator partition; a null value is a tombstone. */
export interface CoordinatorRecord {
  key: Buffer
  value: Buffer | null
}

export interface StoredRecord extends CoordinatorRecord {
  offset: number
  /** Set for records of a transactional batch (TxnOffsetCommit) and for transaction markers. */
  producerId?: number
  producerEpoch?: number
  /** The record's sequence number (batch base sequence + its index) in a transactional batch. */
  sequence?: number
  /** A transaction marker (control batch) of producerId: key and value are the control record's. */
  control?: 'commit' | 'abort'
}

/** Appends records as one transactional batch of a producer (TxnOffsetCommit's pending offsets). */
export interface TransactionalAppend {
  producerId: number
  producerEpoch: number
  baseSequence: number
}

export interface ReadChunk {
  records: StoredRecord[]
  /** Where the next read starts. */
  nextOffset: number
  /** The partition's committed end (high watermark) when read; loading stops once nextOffset reaches it. */
  endOffset: number
}

export interface PartitionWriter {
  /**
   * Appends records as one batch; resolves once they are committed (the high watermark passed them),
   * rejects with a KafkaError otherwise. Appends to one partition resolve in call order.
   */
  append(partition: number, records: readonly CoordinatorRecord[], txn?: TransactionalAppend): Promise<void>
  /**
   * Reads committed records from an offset (at least one batch when there is one), transaction
   * markers included (as records with `control` set).
   */
  read(partition: number, fromOffset: number): Promise<ReadChunk>
  /**
   * Deletes the records before `offset` (the partition's log start moves up to it): a coordinator prunes
   * records its state no longer needs (the share coordinator's, below every share-partition's last snapshot).
   */
  deleteRecordsBefore?(partition: number, offset: number): Promise<void>
}

/** Partitions as arrays in memory. `failNextAppend` injects a write failure (tests of the error paths). */
export class InMemoryPartitionWriter implements PartitionWriter {
  readonly partitions = new Map<number, StoredRecord[]>()
  /** Each partition's log start (records before it deleted; a log keeps its offsets as indexes). */
  readonly logStart = new Map<number, number>()
  /** The next append to any partition rejects with this code (once). */
  failNextAppend: ErrorCode | null = null
  /** Records returned per read call (small values exercise chunked loading). */
  readChunkSize = 1000
  appendCount = 0

  async append(partition: number, records: readonly CoordinatorRecord[], txn?: TransactionalAppend): Promise<void> {
    await Promise.resolve()
    if (this.failNextAppend !== null) {
      const code = this.failNextAppend
      this.failNextAppend = null
      throw new KafkaError(code, 'injected append failure')
    }
    const log = this.log(partition)
    records.forEach((r, i) => {
      const stored: StoredRecord = { offset: log.length, key: Buffer.from(r.key), value: r.value === null ? null : Buffer.from(r.value) }
      if (txn !== undefined) Object.assign(stored, { producerId: txn.producerId, producerEpoch: txn.producerEpoch, sequence: txn.baseSequence + i })
      log.push(stored)
    })
    this.appendCount++
  }

  /** Appends a transaction marker (what the transaction coordinator writes to a partition it touched). */
  async appendMarker(partition: number, producerId: number, producerEpoch: number, commit: boolean): Promise<void> {
    await Promise.resolve()
    const log = this.log(partition)
    const key = Buffer.alloc(4)
    key.writeInt16BE(commit ? 1 : 0, 2)
    log.push({ offset: log.length, key, value: Buffer.alloc(6), producerId, producerEpoch, control: commit ? 'commit' : 'abort' })
  }

  async read(partition: number, fromOffset: number): Promise<ReadChunk> {
    await Promise.resolve()
    const log = this.log(partition)
    const from = Math.max(fromOffset, this.logStart.get(partition) ?? 0)
    const records = log.slice(from, from + this.readChunkSize)
    return { records, nextOffset: from + records.length, endOffset: log.length }
  }

  async deleteRecordsBefore(partition: number, offset: number): Promise<void> {
    await Promise.resolve()
    const log = this.log(partition)
    if (offset > log.length) throw new KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE, `offset ${offset} is past the log end ${log.length}`)
    this.logStart.set(partition, Math.max(offset, this.logStart.get(partition) ?? 0))
  }

  /** Every record of a partition from its log start (tests compare replayed state with live state). */
  records(partition: number): StoredRecord[] {
    return this.log(partition).slice(this.logStart.get(partition) ?? 0)
  }

  private log(partition: number): StoredRecord[] {
    let log = this.partitions.get(partition)
    if (log === undefined) {
      log = []
      this.partitions.set(partition, log)
    }
    return log
  }
}
