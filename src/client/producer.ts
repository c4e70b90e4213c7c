// The producer: records are appended to a per-partition batch (batch.size bytes), a batch is sent when
// full or when linger.ms has passed, batches for the same leader go in one Produce request, and several
// requests may be in flight per broker (max.in.flight.requests.per.connection). Retriable errors
// (NOT_LEADER_OR_FOLLOWER, a broken connection, ...) refresh the metadata and resend after
// retry.backoff.ms until delivery.timeout.ms; other errors fail the batch's records.
//
// Idempotence (enable.idempotence, on by default as in the Java client when acks=all, retries > 0 and at
// most 5 requests in flight) and transactions (transactional.id) are the TransactionManager's
// (transactions.ts): batches carry a producer id, epoch and sequence, so a retried batch the broker
// already wrote is not written twice and batches land in the order they were sent. Without idempotence,
// as in Kafka, a retried batch may land after a later one. The manager is consulted once per batch,
// never per record, and not at all when idempotence is off.
//
// The hot path (append / appendBatched) does no per-record allocation: a record is encoded straight into
// its partition's batch buffer (pooled, see BatchBufferPool), and its delivery context and timestamp go
// into per-batch typed arrays. Acknowledgements are delivered per batch with one loop over its records;
// appendBatched callers get one callback per batch instead of one per record.
import { ApiKey } from '../protocol/api-keys.gen.js'
import * as Produce from '../protocol/messages/00-produce.gen.js'
import { ErrorCode, KafkaError } from '../domain/errors.js'
import { Cluster, sleep, type ClientOptions, type ClusterMetadata, type TopicInfo } from './cluster-connections.js'
import { ConnectionError, IllegalStateError, isRetriableError, TimeoutError } from './errors.js'
import type { ConsumerGroupMetadata, TopicPartitionOffset } from './group.js'
import { Partitioner, type PartitionerName } from './partitioner.js'
import { BatchBufferPool, COMPRESSION_CODECS, RecordBatchWriter, type CompressionName, type Header } from './record-batches.js'
import { MAX_IN_FLIGHT_PER_PARTITION, TransactionManager, type PartitionSequences, type TransactionState } from './transactions.js'
import { sizeOfVarint } from '../protocol/records/varint.js'

export interface ProducerOptions extends ClientOptions {
  /** 0, 1 or -1 (all). Default -1, as Kafka 3+. */
  acks?: number
  /** Bytes of records per partition batch. Default 16384. */
  batchSize?: number
  /** How long a batch waits for more records. Default 5 (Kafka 4). */
  lingerMs?: number
  compression?: CompressionName
  /** Produce requests in flight per broker. Default 5. */
  maxInFlight?: number
  /** Upper bound on the time from send to success or failure. Default 120000. */
  deliveryTimeoutMs?: number
  /** Largest Produce request. Default 1048576. */
  maxRequestSize?: number
  /** buffer.memory: bytes of unsent records before send() waits for room (at most max.block.ms). Default 32 MiB. */
  bufferMemory?: number
  partitioner?: PartitionerName
  /** Let the broker create unknown topics (auto.create.topics.enable). Default true. */
  allowAutoTopicCreation?: boolean
  /**
   * max.block.ms: how long send() waits for a topic's metadata and then for buffer room, in all, and how
   * long initTransactions, sendOffsetsToTransaction, commitTransaction and abortTransaction wait for the
   * coordinators. Default 60000.
   */
  maxBlockMs?: number
  /**
   * enable.idempotence: producer id and sequence numbers, so that retries write nothing twice and keep the
   * order. Default true, but false (as in the Java client) when acks is not -1, maxInFlight is above 5 or
   * retries is 0; set to true explicitly with one of those, it is a configuration error.
   */
  enableIdempotence?: boolean
  /** transactional.id: makes the producer transactional (needs idempotence). Default none. */
  transactionalId?: string | null
  /** transaction.timeout.ms: how long the coordinator lets a transaction stay open before aborting it. Default 60000. */
  transactionTimeoutMs?: number
}

export type RecordValue = Buffer | string | null

export interface ProducerRecord {
  topic: string
  partition?: number
  key?: RecordValue
  value: RecordValue
  headers?: Header[] | Record<string, string | Buffer | null>
  timestamp?: number
}

export interface RecordMetadata {
  topic: string
  partition: number
  /** -1 with acks=0. */
  offset: number
  timestamp: number
}

/** Called once per record; ctx is whatever the caller passed to append (no closure per record). */
export type DeliveryCallback = (err: Error | null, meta: RecordMetadata | null, ctx: number) => void

/**
 * What a BatchDeliveryCallback receives: records [from, to) of one batch, all appended with that callback,
 * in append order. Record k has offset baseOffset + k (when baseOffset >= 0), the ctx ctxs[k] and the
 * timestamp timestamps[k]. The object and its arrays are reused once the callback returns: copy what you
 * keep.
 */
export interface BatchDelivery {
  topic: string
  partition: number
  /** Offset of the batch's first record; -1 with acks=0 and on failure. */
  baseOffset: number
  /** The broker's LogAppendTime for the batch, or -1 (CreateTime: the records' own timestamps). */
  logAppendTime: number
  from: number
  to: number
  ctxs: Float64Array
  timestamps: Float64Array
}

/** Called once per batch for the records appended with appendBatched (every record is in exactly one call). */
export type BatchDeliveryCallback = (err: Error | null, delivery: BatchDelivery) => void

/** Consecutive records of a batch appended with the same callback. */
interface Run {
  cb: DeliveryCallback | BatchDeliveryCallback | undefined
  perBatch: boolean
  from: number
  to: number
}

interface Batch {
  queue: PartitionQueue
  topic: string
  partition: number
  writer: RecordBatchWriter
  count: number
  /** Per record: the caller's ctx and the record's timestamp (pooled arrays, grown by doubling). */
  ctxs: Float64Array
  timestamps: Float64Array
  runs: Run[]
  /** What this batch adds to the buffer.memory count. */
  bufferedBytes: number
  createdAt: number
  bytes: Buffer | null
  attempts: number
  retryAt: number
  /** Socket writes of this batch not finished yet: its buffer is reused only once they are done. */
  writesPending: number
  done: boolean
  /** Idempotence (transactions.ts): set when the batch is first sent; baseSequence -1 before. */
  producerId: number
  producerEpoch: number
  baseSequence: number
  inRequest: boolean
}

interface PartitionQueue {
  topic: string
  partition: number
  open: Batch | null
  ready: Batch[]
  /** Idempotence state of the partition (null without idempotence, or until first used). */
  seq: PartitionSequences | null
}

const toBuffer = (v: RecordValue | undefined): Buffer | null => (v == null ? null : typeof v === 'string' ? Buffer.from(v) : v)

function toHeaders(h: ProducerRecord['headers']): Header[] | undefined {
  if (h === undefined) return undefined
  if (Array.isArray(h)) return h
  return Object.entries(h).map(([key, value]) => ({ key, value: toBuffer(value) }))
}

export class Producer {
  readonly cluster: Cluster
  private readonly acks: number
  private readonly batchSize: number
  private readonly lingerMs: number
  private readonly codec: number
  private readonly maxInFlight: number
  private readonly deliveryTimeoutMs: number
  private readonly maxRequestSize: number
  private readonly bufferMemory: number
  private readonly allowAutoTopicCreation: boolean
  private readonly maxBlockMs: number
  private readonly partitioner: Partitioner
  /** Idempotence and transactions; null when enable.idempotence is off (the plain path). */
  private readonly tm: TransactionManager | null
  /** Partition queues by topic, indexed by partition; queueList holds them all in creation order. */
  private readonly queues = new Map<string, PartitionQueue[]>()
  private readonly queueList: PartitionQueue[] = []
  private lastTopic: string | null = null
  private lastInfoTopic: string | null = null
  private lastInfoMeta: ClusterMetadata | null = null
  private lastInfo: TopicInfo | null = null
  private lastQueues: PartitionQueue[] | undefined = undefined
  private readonly bufferPool: BatchBufferPool
  /** Per-record arrays of completed batches, for reuse; at most one pair per batch buffer.memory holds. */
  private readonly freeSlots: { ctxs: Float64Array; timestamps: Float64Array }[] = []
  private readonly maxFreeSlots: number
  /** Records in the fullest batch so far: new per-record arrays start that large instead of growing to it. */
  private slotHint = 16
  private readonly inFlight = new Map<number, number>()
  private lingerTimer: NodeJS.Timeout | null = null
  private retryTimer: NodeJS.Timeout | null = null
  private draining = false
  private drainQueued = false
  private readonly queuedDrain = (): void => {
    this.drainQueued = false
    this.drain(false)
  }
  private drainAgain = false
  private unfinished = 0
  private buffered = 0
  private readonly idleWaiters: (() => void)[] = []
  private readonly capacityWaiters: (() => void)[] = []
  /** send() calls between their start and their append (waiting for metadata or buffer room). */
  private sendsWaiting = 0
  private readonly sendWaiters: (() => void)[] = []
  private closed = false

  constructor(opts: ProducerOptions) {
    this.cluster = new Cluster(opts)
    this.acks = opts.acks ?? -1
    if (![0, 1, -1].includes(this.acks)) throw new KafkaError(ErrorCode.INVALID_REQUIRED_ACKS, `acks must be 0, 1 or -1 (all), not ${this.acks}`)
    this.batchSize = opts.batchSize ?? 16384
    this.lingerMs = opts.lingerMs ?? 5
    this.codec = COMPRESSION_CODECS[opts.compression ?? 'none']
    this.maxInFlight = Math.max(1, opts.maxInFlight ?? 5)
    this.deliveryTimeoutMs = opts.deliveryTimeoutMs ?? 120000
    this.maxRequestSize = opts.maxRequestSize ?? 1048576
    this.bufferMemory = opts.bufferMemory ?? 32 * 1024 * 1024
    this.allowAutoTopicCreation = opts.allowAutoTopicCreation ?? true
    this.maxBlockMs = opts.maxBlockMs ?? 60000
    this.partitioner = new Partitioner(opts.partitioner ?? 'default')
    // As Kafka's BufferPool: free batch.size buffers are kept for reuse, at most buffer.memory of them.
    this.bufferPool = new BatchBufferPool(this.batchSize, this.bufferMemory)
    this.maxFreeSlots = Math.max(16, Math.ceil(this.bufferMemory / Math.max(1, this.batchSize)))
    this.tm = resolveIdempotence(opts, this.acks, this.maxInFlight)
      ? new TransactionManager(
          this.cluster,
          {
            wake: () => this.drain(false),
            failUnsent: (err, sentToo) => this.failUnsent(err, sentToo),
            failAll: (err) => this.failAll(err),
            flush: () => this.flush(),
          },
          { transactionalId: opts.transactionalId ?? null, transactionTimeoutMs: opts.transactionTimeoutMs ?? 60000, maxBlockMs: this.maxBlockMs, deliveryTimeoutMs: this.deliveryTimeoutMs },
        )
      : null
  }

  /** Whether the producer is idempotent (enable.idempotence, after the Java client's defaults and rules). */
  get idempotent(): boolean {
    return this.tm !== null
  }

  /** The transaction state ('UNINITIALIZED' ... 'FATAL_ERROR'); null when idempotence is off. */
  get transactionState(): TransactionState | null {
    return this.tm?.state ?? null
  }

  /** The producer id and epoch the producer writes with (-1 before InitProducerId); null without idempotence. */
  get producerIdAndEpoch(): { producerId: number; producerEpoch: number } | null {
    return this.tm === null ? null : { producerId: this.tm.producerId, producerEpoch: this.tm.producerEpoch }
  }

  private transactions(method: string): TransactionManager {
    if (this.tm === null || !this.tm.transactional) throw new IllegalStateError(`${method}() needs a transactional producer (transactional.id)`)
    return this.tm
  }

  /**
   * Registers the transactional.id with its transaction coordinator (InitProducerId): a transaction a
   * previous instance left open is aborted, and that instance is fenced. Once, before the first transaction.
   */
  async initTransactions(): Promise<void> {
    await this.transactions('initTransactions').initTransactions()
  }

  /** Starts a transaction: the records sent until commit or abort belong to it. */
  beginTransaction(): void {
    this.transactions('beginTransaction').beginTransaction()
  }

  /**
   * Adds a consumer group's offsets to the transaction (AddOffsetsToTxn, then TxnOffsetCommit to the group
   * coordinator): they are committed with the transaction's records, or not at all. group is the
   * consumer's groupMetadata(), so that the coordinator refuses a member that is no longer in the group
   * (a bare group id skips that check).
   */
  async sendOffsetsToTransaction(offsets: readonly TopicPartitionOffset[], group: ConsumerGroupMetadata | string): Promise<void> {
    const metadata = typeof group === 'string' ? { groupId: group, generationId: -1, memberId: '', groupInstanceId: null } : group
    await this.transactions('sendOffsetsToTransaction').sendOffsetsToTransaction(offsets, metadata)
  }

  /**
   * Sends every record of the transaction, waits for their acknowledgements, then commits (EndTxn). If a
   * record failed the commit throws an abortable ProducerStateError: abortTransaction() then. A
   * TimeoutError leaves the commit pending: call commitTransaction() again.
   */
  async commitTransaction(): Promise<void> {
    const tm = this.transactions('commitTransaction')
    await this.sendsAppended()
    await tm.commitTransaction()
  }

  /**
   * Aborts the transaction: records not sent yet fail with TransactionAbortedError, the sent ones are
   * waited for, then EndTxn (abort); after an abortable error the epoch is bumped too.
   */
  async abortTransaction(): Promise<void> {
    const tm = this.transactions('abortTransaction')
    await this.sendsAppended()
    await tm.abortTransaction()
  }

  /** Connects to a bootstrap broker (optional: the first send connects too). */
  async connect(): Promise<void> {
    await this.cluster.anyConnection()
  }

  /** Metadata of a topic with at least one partition, waiting up to max.block.ms for it to appear. */
  async topicInfo(topic: string): Promise<TopicInfo> {
    const cached = this.cluster.metadata.topics.get(topic)
    if (cached !== undefined && cached.errorCode === ErrorCode.NONE && cached.partitions.length > 0) return cached
    const deadline = Date.now() + this.maxBlockMs
    for (let attempt = 0; ; attempt++) {
      try {
        const t = await this.cluster.topic(topic, { refresh: attempt > 0, autoCreate: this.allowAutoTopicCreation })
        if (t.partitions.length > 0) {
          this.warmUp(t)
          return t
        }
      } catch (err) {
        const code = err instanceof KafkaError ? err.code : null
        // An unknown topic is final unless the broker may be creating it.
        if (code === ErrorCode.UNKNOWN_TOPIC_OR_PARTITION && !this.allowAutoTopicCreation) throw err
        // The cluster already retried the connection: a broker that is down stays down for this call.
        if (err instanceof ConnectionError) throw err
        if (!isRetriableError(err) || Date.now() >= deadline) throw err
      }
      if (Date.now() >= deadline) throw new TimeoutError(`topic '${topic}' not present in metadata after ${this.maxBlockMs} ms`)
      await sleep(Math.min(this.cluster.retryBackoffMs * 2 ** Math.min(attempt, 5), 1000))
    }
  }

  /**
   * What the first send would otherwise wait for, one step after another, started as soon as a topic's
   * metadata is known: the idempotent producer's InitProducerId (the Java client asks for it when the
   * producer starts) and the connections to the topic's leaders (TCP and ApiVersions). Without this the
   * first records waited for the producer id, then for each leader's connection, then for their own
   * Produce. Failures are left to the sends, which retry or report them as before.
   */
  private warmUp(t: TopicInfo): void {
    if (this.closed) return
    this.tm?.ensureProducerId()
    const leaders = new Set<number>()
    for (const p of t.partitions) if (p.leader >= 0) leaders.add(p.leader)
    for (const leader of leaders) this.cluster.nodeConnection(leader).catch(() => {})
  }

  /**
   * Sends one record; resolves when the broker has acknowledged it (acks) or it failed. With a
   * transactional producer the record belongs to the transaction in which send() was called:
   * commitTransaction() and abortTransaction() wait for the sends still waiting for metadata or room.
   */
  async send(record: ProducerRecord): Promise<RecordMetadata> {
    const started = Date.now()
    this.sendsWaiting++
    let t: TopicInfo
    try {
      t = await this.topicInfo(record.topic)
      // As Kafka's send(): while buffer.memory bytes wait to be sent, wait for room, for at most what is
      // left of max.block.ms (the metadata wait counts too). Re-checked after each wake-up, since other
      // senders woken at the same time may have filled the room again.
      while (!this.hasCapacity && !this.closed) await this.waitForCapacity(Math.max(0, this.maxBlockMs - (Date.now() - started)))
    } catch (err) {
      this.sendAppended()
      throw err
    }
    return new Promise<RecordMetadata>((resolve, reject) => {
      const cb: DeliveryCallback = (err, meta) => {
        if (err !== null) reject(err)
        else resolve(meta!)
      }
      try {
        this.appendResolved(t, record.partition, toBuffer(record.key), toBuffer(record.value), toHeaders(record.headers), record.timestamp ?? Date.now(), cb, false, 0)
      } finally {
        this.sendAppended()
      }
    })
  }

  private sendAppended(): void {
    if (--this.sendsWaiting === 0 && this.sendWaiters.length > 0) for (const w of this.sendWaiters.splice(0)) w()
  }

  /** Resolves once every send() called so far has appended its record (or failed). */
  private async sendsAppended(): Promise<void> {
    while (this.sendsWaiting > 0) await new Promise<void>((resolve) => this.sendWaiters.push(resolve))
  }

  /** Sends many records; resolves with their metadata in order (rejects on the first failure). */
  async sendBatch(records: readonly ProducerRecord[]): Promise<RecordMetadata[]> {
    return Promise.all(records.map((r) => this.send(r)))
  }

  /**
   * The hot path (console producer, latency tools): appends one record and calls cb(err, meta, ctx) when
   * it is acknowledged. The topic's metadata must already be loaded (await topicInfo first).
   */
  append(topic: string, partition: number | undefined, key: Buffer | null, value: Buffer | null, headers: Header[] | undefined, cb?: DeliveryCallback, ctx = 0, timestamp = Date.now()): void {
    this.appendResolved(this.loadedTopic(topic), partition, key, value, headers, timestamp, cb, false, ctx)
  }

  /**
   * As append, but the acknowledgement comes once per batch: cb(err, delivery) covers the records
   * delivery.from..to-1 of one batch (their ctx values in delivery.ctxs). For callers producing at high
   * rates (the perf tool), where a callback and a metadata object per record cost more than the record.
   */
  appendBatched(topic: string, partition: number | undefined, key: Buffer | null, value: Buffer | null, headers: Header[] | undefined, cb: BatchDeliveryCallback, ctx = 0, timestamp = Date.now()): void {
    this.appendResolved(this.loadedTopic(topic), partition, key, value, headers, timestamp, cb, true, ctx)
  }

  private loadedTopic(topic: string): TopicInfo {
    // A metadata refresh replaces the whole ClusterMetadata object, so (object, topic) identifies the answer.
    const meta = this.cluster.metadata
    if (topic === this.lastInfoTopic && meta === this.lastInfoMeta) return this.lastInfo!
    const t = meta.topics.get(topic)
    if (t === undefined || t.partitions.length === 0) throw new KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `no metadata for topic '${topic}' (await topicInfo first)`)
    this.lastInfoTopic = topic
    this.lastInfoMeta = meta
    this.lastInfo = t
    return t
  }

  /** False once more than buffer.memory bytes wait to be sent; then await waitForCapacity(). */
  get hasCapacity(): boolean {
    return this.buffered < this.bufferMemory
  }

  /**
   * Resolves once there is room again (or the producer closed); with a finite timeoutMs, rejects with a
   * TimeoutError when there is still none by then (Kafka's "Failed to allocate memory within the
   * configured max blocking time"). Default: no limit (callers doing their own flow control).
   */
  waitForCapacity(timeoutMs = Infinity): Promise<void> {
    if (this.hasCapacity || this.closed) return Promise.resolve()
    if (!Number.isFinite(timeoutMs)) return new Promise((resolve) => this.capacityWaiters.push(resolve))
    return new Promise((resolve, reject) => {
      const waiter = (): void => {
        clearTimeout(timer)
        resolve()
      }
      const timer = setTimeout(() => {
        const i = this.capacityWaiters.indexOf(waiter)
        if (i >= 0) this.capacityWaiters.splice(i, 1)
        reject(new TimeoutError(`Failed to allocate memory within the configured max blocking time ${timeoutMs} ms (buffer.memory=${this.bufferMemory})`))
      }, Math.max(0, timeoutMs))
      this.capacityWaiters.push(waiter)
    })
  }

  private appendResolved(t: TopicInfo, partition: number | undefined, key: Buffer | null, value: Buffer | null, headers: Header[] | undefined, timestamp: number, cb: DeliveryCallback | BatchDeliveryCallback | undefined, perBatch: boolean, ctx: number): void {
    if (this.closed) {
      this.failOne(cb, perBatch, t.name, partition ?? -1, ctx, timestamp, new KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, 'the producer is closed'))
      return
    }
    const numPartitions = t.partitions.length
    let p: number
    if (partition !== undefined) {
      if (!Number.isInteger(partition) || partition < 0 || partition >= numPartitions) {
        this.failOne(cb, perBatch, t.name, partition, ctx, timestamp, new KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `partition ${partition} of topic '${t.name}' does not exist (it has ${numPartitions})`))
        return
      }
      p = partition
    } else {
      p = this.partitioner.partition(t.name, key, numPartitions)
    }
    const fields = RecordBatchWriter.fieldsSize(key, value, headers)
    // The record's encoded size with offset and timestamp deltas of 0 (RecordBatchWriter.recordSize).
    const size = sizeOfVarint(3 + fields) + 3 + fields
    if (size + 61 > this.maxRequestSize) {
      this.failOne(cb, perBatch, t.name, p, ctx, timestamp, new KafkaError(ErrorCode.MESSAGE_TOO_LARGE, `a record of ${size} bytes is larger than max.request.size ${this.maxRequestSize}`))
      return
    }
    const q = this.queueFor(t.name, p)
    let b = q.open
    if (b !== null && !b.writer.tryAppendSized(timestamp, key, value, headers, fields)) {
      this.seal(q, numPartitions)
      b = null
    }
    if (b === null) {
      if (this.tm !== null) {
        // Per new batch, not per record: the manager closes the open batches when its state changes.
        const refused = this.tm.refuseNewBatch(q)
        if (refused !== null) {
          this.failOne(cb, perBatch, t.name, p, ctx, timestamp, refused)
          return
        }
      }
      b = this.newBatch(q, size)
      if (!b.writer.tryAppendSized(timestamp, key, value, headers, fields)) throw new Error('a record did not fit an empty batch sized for it')
    }
    const i = b.count++
    if (i === b.ctxs.length) this.growSlots(b)
    b.ctxs[i] = ctx
    b.timestamps[i] = timestamp
    const runs = b.runs
    const last = runs.length > 0 ? runs[runs.length - 1]! : undefined
    if (last !== undefined && last.cb === cb && last.perBatch === perBatch) last.to = i + 1
    else runs.push({ cb, perBatch, from: i, to: i + 1 })
    b.bufferedBytes += size
    this.buffered += size
    if (b.writer.sizeInBytes >= this.batchSize) {
      this.seal(q, numPartitions)
      this.scheduleDrain(0)
    } else {
      this.scheduleDrain(this.lingerMs)
    }
  }

  /** A record refused before it joined a batch: its callback hears so at once. */
  private failOne(cb: DeliveryCallback | BatchDeliveryCallback | undefined, perBatch: boolean, topic: string, partition: number, ctx: number, timestamp: number, err: Error): void {
    this.tm?.recordRefused(err)
    if (cb === undefined) return
    if (!perBatch) {
      ;(cb as DeliveryCallback)(err, null, ctx)
      return
    }
    const ctxs = new Float64Array(1)
    const timestamps = new Float64Array(1)
    ctxs[0] = ctx
    timestamps[0] = timestamp
    ;(cb as BatchDeliveryCallback)(err, { topic, partition, baseOffset: -1, logAppendTime: -1, from: 0, to: 1, ctxs, timestamps })
  }

  private queueFor(topic: string, partition: number): PartitionQueue {
    // Most appends go to the topic of the previous one: skip the map lookup then.
    let list = topic === this.lastTopic ? this.lastQueues : this.queues.get(topic)
    if (list === undefined) this.queues.set(topic, (list = []))
    this.lastTopic = topic
    this.lastQueues = list
    let q = list[partition]
    if (q === undefined) {
      q = { topic, partition, open: null, ready: [], seq: null }
      list[partition] = q
      this.queueList.push(q)
    }
    return q
  }

  private newBatch(q: PartitionQueue, firstRecordSize: number): Batch {
    const slots = this.freeSlots.pop() ?? { ctxs: new Float64Array(this.slotHint), timestamps: new Float64Array(this.slotHint) }
    const b: Batch = {
      queue: q,
      topic: q.topic,
      partition: q.partition,
      writer: new RecordBatchWriter(Math.max(this.batchSize, firstRecordSize + 61), this.bufferPool),
      count: 0,
      ctxs: slots.ctxs,
      timestamps: slots.timestamps,
      runs: [],
      bufferedBytes: 0,
      createdAt: Date.now(),
      bytes: null,
      attempts: 0,
      retryAt: 0,
      writesPending: 0,
      done: false,
      producerId: -1,
      producerEpoch: -1,
      baseSequence: -1,
      inRequest: false,
    }
    q.open = b
    this.unfinished++
    return b
  }

  private growSlots(b: Batch): void {
    const ctxs = new Float64Array(b.ctxs.length * 2)
    const timestamps = new Float64Array(b.ctxs.length * 2)
    ctxs.set(b.ctxs)
    timestamps.set(b.timestamps)
    b.ctxs = ctxs
    b.timestamps = timestamps
  }

  private seal(q: PartitionQueue, numPartitions: number): void {
    const b = q.open
    if (b === null) return
    q.open = null
    if (b.count > this.slotHint) this.slotHint = b.count
    // An idempotent producer computes the CRC when it stamps the producer id and sequence in.
    b.bytes = b.writer.build(this.codec as 0, this.tm === null)
    q.ready.push(b)
    this.partitioner.batchClosed(q.topic, q.partition, numPartitions)
  }

  private scheduleDrain(delayMs: number): void {
    if (delayMs <= 0) {
      if (this.draining) {
        this.drainAgain = true
        return
      }
      // One queued drain serves every append of this turn (with linger.ms=0 each append asks for one).
      if (this.drainQueued) return
      this.drainQueued = true
      queueMicrotask(this.queuedDrain)
      return
    }
    if (this.lingerTimer !== null) return
    this.lingerTimer = setTimeout(() => {
      this.lingerTimer = null
      this.drain(true)
    }, delayMs)
  }

  /** Sends what is ready; with expired, open batches older than linger.ms are sealed first. */
  private drain(expired: boolean): void {
    if (this.draining) {
      this.drainAgain = true
      return
    }
    this.draining = true
    try {
      const now = Date.now()
      let openLeft = false
      for (const q of this.queueList) {
        if (q.open === null) continue
        if (expired || now - q.open.createdAt >= this.lingerMs) this.seal(q, this.cluster.metadata.topics.get(q.topic)?.partitions.length ?? 1)
        else openLeft = true
      }
      if (openLeft) this.scheduleDrain(this.lingerMs)
      this.sendReady(now)
    } finally {
      this.draining = false
    }
    if (this.drainAgain) {
      this.drainAgain = false
      queueMicrotask(() => this.drain(false))
    }
  }

  private sendReady(now: number): void {
    const tm = this.tm
    if (tm !== null) tm.maybeBumpEpoch()
    // Group the head batches of each partition by leader; one batch per partition per request.
    const byLeader = new Map<number, Batch[]>()
    let earliestRetry = Infinity
    for (const q of this.queueList) {
      const head = q.ready[0]
      if (head === undefined) continue
      if (head.retryAt > now) {
        earliestRetry = Math.min(earliestRetry, head.retryAt)
        continue
      }
      if (tm !== null && !tm.maySend(q, head)) {
        // Waiting for a producer id, the transaction, an epoch bump or earlier batches (each of which
        // calls drain when it is done). A batch never sent still expires after delivery.timeout.ms.
        if (head.baseSequence < 0 && now - head.createdAt >= this.deliveryTimeoutMs) {
          q.ready.shift()
          this.complete(head, new KafkaError(ErrorCode.REQUEST_TIMED_OUT, `${q.topic}-${q.partition}: not sent within delivery.timeout.ms ${this.deliveryTimeoutMs}`), -1, -1)
        }
        continue
      }
      const t = this.cluster.metadata.topics.get(q.topic)
      const leader = t?.partitions[q.partition]?.leader ?? -1
      if (leader < 0) {
        if (now - head.createdAt >= this.deliveryTimeoutMs) {
          // No leader for the whole delivery timeout (the topic may be gone): fail instead of waiting forever.
          q.ready.shift()
          this.complete(head, new KafkaError(ErrorCode.REQUEST_TIMED_OUT, `no leader for ${q.topic}-${q.partition} within delivery.timeout.ms ${this.deliveryTimeoutMs}`), -1, -1)
          continue
        }
        this.refreshSoon()
        earliestRetry = Math.min(earliestRetry, now + this.cluster.retryBackoffMs)
        continue
      }
      let list = byLeader.get(leader)
      if (list === undefined) byLeader.set(leader, (list = []))
      list.push(head)
    }
    for (const [leader, heads] of byLeader) {
      while ((this.inFlight.get(leader) ?? 0) < this.maxInFlight) {
        const batches: Batch[] = []
        let size = 0
        for (const b of heads) {
          const q = b.queue
          const head = q.ready[0]
          if (head === undefined || head.retryAt > now) continue
          if (tm !== null && head !== b && !tm.maySend(q, head)) continue
          if (batches.length > 0 && size + head.bytes!.length > this.maxRequestSize) continue
          q.ready.shift()
          if (tm !== null) tm.sending(q, head)
          batches.push(head)
          size += head.bytes!.length
        }
        if (batches.length === 0) break
        this.sendRequest(leader, batches)
      }
    }
    if (earliestRetry !== Infinity && this.retryTimer === null) {
      this.retryTimer = setTimeout(() => {
        this.retryTimer = null
        this.drain(false)
      }, Math.max(1, earliestRetry - Date.now()))
    }
  }

  private refreshing: Promise<unknown> | null = null

  private refreshSoon(): void {
    if (this.refreshing !== null) return
    const topics = [...this.queues.keys()]
    this.refreshing = this.cluster.refreshMetadata(topics, false).catch(() => {}).finally(() => {
      this.refreshing = null
      this.drain(false)
    })
  }

  private sendRequest(leader: number, batches: Batch[]): void {
    this.inFlight.set(leader, (this.inFlight.get(leader) ?? 0) + 1)
    const topics = new Map<string, Produce.PartitionProduceData[]>()
    for (const b of batches) {
      let list = topics.get(b.topic)
      if (list === undefined) topics.set(b.topic, (list = []))
      list.push({ index: b.partition, records: b.bytes })
    }
    const tm = this.tm
    const req: Produce.ProduceRequest = {
      transactionalId: tm !== null ? tm.transactionalId : null,
      acks: this.acks,
      timeoutMs: this.cluster.requestTimeoutMs,
      topicData: [...topics].map(([name, partitionData]) => ({ name, partitionData })),
    }
    const encode = (w: Parameters<typeof Produce.encodeProduceRequest>[0], v: number): void => Produce.encodeProduceRequest(w, req, v)
    const done = (): void => {
      this.inFlight.set(leader, (this.inFlight.get(leader) ?? 1) - 1)
      this.drain(false)
    }
    // The socket may read the batches' buffers until the write finishes, even after an answer or a
    // failure: a buffer goes back to the pool only when this has run and the batch is complete.
    const onWritten = (): void => {
      for (const b of batches) {
        b.writesPending--
        this.maybeRecycle(b)
      }
    }
    const sendOpts = { onWritten }
    this.cluster
      .nodeConnection(leader)
      .then(async (conn) => {
        for (const b of batches) b.writesPending++
        if (this.acks === 0) {
          await conn.sendNoResponse(ApiKey.Produce, encode, sendOpts)
          for (const b of batches) this.complete(b, null, -1, -1)
          return
        }
        const res = await conn.send(ApiKey.Produce, encode, Produce.decodeProduceResponse, sendOpts)
        const results = new Map<string, Produce.PartitionProduceResponse>()
        for (const t of res.responses) for (const p of t.partitionResponses) results.set(`${t.name}\u0000${p.index}`, p)
        for (const b of batches) {
          if (tm !== null) tm.requestDone(b.queue, b)
          const r = results.get(`${b.topic}\u0000${b.partition}`)
          if (r === undefined) {
            this.retryOrFail(b, new KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, `no answer for ${b.topic}-${b.partition} in the Produce response`))
            continue
          }
          if (r.errorCode === ErrorCode.NONE) this.complete(b, null, Number(r.baseOffset), Number(r.logAppendTimeMs))
          else this.retryOrFail(b, new KafkaError(r.errorCode as ErrorCode, r.errorMessage ?? `${b.topic}-${b.partition}`))
        }
      })
      .catch((err: unknown) => {
        for (const b of batches) {
          if (tm !== null) tm.requestDone(b.queue, b)
          this.retryOrFail(b, err as Error)
        }
      })
      .finally(done)
  }

  private retryOrFail(b: Batch, err: Error): void {
    // Already delivered (its buffer may be back in the pool): never send it again.
    if (b.done) return
    const age = Date.now() - b.createdAt
    let retry = isRetriableError(err)
    if (this.tm !== null && b.baseSequence >= 0) {
      const verdict = this.tm.produceErrorVerdict(b.queue, b, err)
      if (verdict === 'duplicate') {
        this.complete(b, null, -1, -1)
        return
      }
      retry = verdict === 'retry'
    }
    if (!this.closed && retry && age < this.deliveryTimeoutMs) {
      b.attempts++
      b.retryAt = Date.now() + Math.min(this.cluster.retryBackoffMs * 2 ** Math.min(b.attempts - 1, 5), 1000)
      if (b.baseSequence >= 0) this.requeueInSequence(b)
      else b.queue.ready.unshift(b)
      // The leader may have moved (NOT_LEADER_OR_FOLLOWER) or the broker gone: look again.
      this.refreshSoon()
      return
    }
    const reason = err instanceof KafkaError ? err : new KafkaError(ErrorCode.NETWORK_EXCEPTION, err.message)
    // definite: the broker answered that it did not take the batch (not a lost answer or an expiry).
    this.complete(b, reason, -1, -1, !retry && err instanceof KafkaError)
  }

  /** Puts a sent batch back in its queue before every batch sent after it (and before the unsent ones). */
  private requeueInSequence(b: Batch): void {
    const ready = b.queue.ready
    const inFlight = b.queue.seq!.inFlight
    const rank = inFlight.indexOf(b)
    let i = 0
    while (i < ready.length && ready[i]!.baseSequence >= 0 && inFlight.indexOf(ready[i]!) < rank) i++
    ready.splice(i, 0, b)
  }

  /**
   * Idempotence: fails the batches not sent yet, open ones included (an abortable error, an abort), and
   * with sentToo those sent and waiting for a retry.
   */
  private failUnsent(err: Error, sentToo: boolean): void {
    const doomed: Batch[] = []
    for (const q of this.queueList) {
      if (q.open !== null) this.seal(q, this.cluster.metadata.topics.get(q.topic)?.partitions.length ?? 1)
      if (q.ready.length === 0) continue
      const keep: Batch[] = []
      for (const b of q.ready) (b.baseSequence < 0 || (sentToo && !b.inRequest) ? doomed : keep).push(b)
      q.ready = keep
    }
    for (const b of doomed) this.complete(b, err, -1, -1)
  }

  /** Idempotence: a fatal error fails every incomplete batch, those in flight too (their answers are ignored). */
  private failAll(err: Error): void {
    this.failUnsent(err, true)
    for (const q of this.queueList) if (q.seq !== null) for (const b of [...q.seq.inFlight]) this.complete(b as Batch, err, -1, -1)
  }

  private complete(b: Batch, err: Error | null, baseOffset: number, logAppendTime: number, definite = false): void {
    if (b.done) return
    b.done = true
    this.unfinished--
    if (this.tm !== null) {
      const written = this.tm.completed(b.queue, b, err, definite)
      if (written !== null) {
        for (const w of written as Batch[]) {
          const i = w.queue.ready.indexOf(w)
          if (i >= 0) w.queue.ready.splice(i, 1)
          this.complete(w, null, -1, -1)
        }
      }
    }
    this.deliver(b, err, err !== null ? -1 : baseOffset, err !== null ? -1 : logAppendTime)
    // The callbacks have returned: the per-record arrays can serve another batch.
    if (this.freeSlots.length < this.maxFreeSlots) this.freeSlots.push({ ctxs: b.ctxs, timestamps: b.timestamps })
    b.runs = []
    this.maybeRecycle(b)
    this.buffered -= b.bufferedBytes
    if (this.buffered < this.bufferMemory && this.capacityWaiters.length > 0) for (const w of this.capacityWaiters.splice(0)) w()
    if (this.unfinished === 0 && this.idleWaiters.length > 0) for (const w of this.idleWaiters.splice(0)) w()
  }

  /** Calls every record's callback once, in append order; an exception from one does not stop the rest. */
  private deliver(b: Batch, err: Error | null, baseOffset: number, logAppendTime: number): void {
    for (const run of b.runs) {
      const cb = run.cb
      if (cb === undefined) continue
      if (run.perBatch) {
        try {
          ;(cb as BatchDeliveryCallback)(err, { topic: b.topic, partition: b.partition, baseOffset, logAppendTime, from: run.from, to: run.to, ctxs: b.ctxs, timestamps: b.timestamps })
        } catch (e) {
          rethrowLater(e)
        }
        continue
      }
      const each = cb as DeliveryCallback
      for (let i = run.from; i < run.to; i++) {
        try {
          if (err !== null) each(err, null, b.ctxs[i]!)
          else each(null, { topic: b.topic, partition: b.partition, offset: baseOffset < 0 ? -1 : baseOffset + i, timestamp: logAppendTime >= 0 ? logAppendTime : b.timestamps[i]! }, b.ctxs[i]!)
        } catch (e) {
          rethrowLater(e)
        }
      }
    }
  }

  /** A completed batch whose writes are all finished: nothing views its buffer, which goes back to the pool. */
  private maybeRecycle(b: Batch): void {
    if (!b.done || b.writesPending !== 0 || b.bytes === null) return
    b.bytes = null
    b.writer.release()
  }

  /** Sends every buffered record now and resolves when all of them are acknowledged or failed. */
  async flush(): Promise<void> {
    if (this.lingerTimer !== null) {
      clearTimeout(this.lingerTimer)
      this.lingerTimer = null
    }
    this.drain(true)
    if (this.unfinished === 0) return
    await new Promise<void>((resolve) => this.idleWaiters.push(resolve))
  }

  /** Flushes, then closes every connection. A transaction still open is aborted first, as in Kafka. */
  async close(): Promise<void> {
    if (this.closed) return
    if (this.tm !== null && this.tm.transactional && this.tm.hasOngoingTransaction && this.tm.state !== 'FATAL_ERROR') await this.tm.abortTransaction().catch(() => {})
    await this.flush()
    this.closed = true
    this.tm?.close()
    for (const w of this.capacityWaiters.splice(0)) w()
    if (this.retryTimer !== null) clearTimeout(this.retryTimer)
    await this.cluster.close()
  }
}

/**
 * Whether the producer is idempotent, by the Java client's rules (ProducerConfig): enable.idempotence
 * defaults to true, but a default true gives way to acks other than all, more than 5 requests in flight
 * or retries=0, which an explicit true may not be combined with; transactional.id needs idempotence.
 */
function resolveIdempotence(opts: ProducerOptions, acks: number, maxInFlight: number): boolean {
  const transactional = opts.transactionalId !== undefined && opts.transactionalId !== null
  if (transactional && opts.transactionalId === '') throw new KafkaError(ErrorCode.INVALID_CONFIG, 'transactional.id must not be empty')
  if (opts.transactionTimeoutMs !== undefined && (!Number.isSafeInteger(opts.transactionTimeoutMs) || opts.transactionTimeoutMs < 1)) throw new KafkaError(ErrorCode.INVALID_CONFIG, `transaction.timeout.ms must be a positive integer, not ${opts.transactionTimeoutMs}`)
  const explicit = opts.enableIdempotence !== undefined
  let idempotent = opts.enableIdempotence ?? true
  if (idempotent) {
    const conflicts: string[] = []
    if (acks !== -1) conflicts.push(`acks must be all (-1), not ${acks}`)
    if (maxInFlight > MAX_IN_FLIGHT_PER_PARTITION) conflicts.push(`max.in.flight.requests.per.connection must be at most ${MAX_IN_FLIGHT_PER_PARTITION}, not ${maxInFlight}`)
    if (opts.retries === 0) conflicts.push('retries must be greater than 0')
    if (conflicts.length > 0) {
      if (explicit) throw new KafkaError(ErrorCode.INVALID_CONFIG, `the idempotent producer (enable.idempotence=true) needs: ${conflicts.join('; ')}`)
      if (transactional) throw new KafkaError(ErrorCode.INVALID_CONFIG, `a transactional.id needs idempotence, which needs: ${conflicts.join('; ')}`)
      idempotent = false
    }
  }
  if (transactional && !idempotent) throw new KafkaError(ErrorCode.INVALID_CONFIG, 'cannot set a transactional.id without also enabling idempotence (enable.idempotence=false)')
  return idempotent
}

/** A delivery callback threw: the error surfaces as an uncaught exception, the producer's state stays whole. */
function rethrowLater(e: unknown): void {
  queueMicrotask(() => {
    throw e
  })
}
