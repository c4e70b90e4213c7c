// The producer: records are appended to a per-partition batch (batch.size bytes), a batch is sent when
// full or when linger.ms has passed, batches for the same leader go in one Produce request, and several
// requests may be in flight per broker (max.in.flight.requests.per.connection; as in Kafka without
// idempotence, a retried batch may then land after a later one). Retriable errors (NOT_LEADER_OR_FOLLOWER,
// a broken connection, ...) refresh the metadata and resend after retry.backoff.ms until
// delivery.timeout.ms; other errors fail the batch's records.
import { ApiKey } from '../protocol/api-keys.gen.js'
import * as Produce from '../protocol/messages/00-produce.gen.js'
import { ErrorCode, KafkaError } from '../domain/errors.js'
import { Cluster, sleep, type ClientOptions, type TopicInfo } from './cluster.js'
import { ConnectionError, isRetriableError, TimeoutError } from './errors.js'
import { Partitioner, type PartitionerName } from './partitioner.js'
import { COMPRESSION_CODECS, RecordBatchWriter, type CompressionName, type Header } from './records.js'

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
  /** Bytes of unsent records before send() waits. Default 32 MiB. */
  bufferMemory?: number
  partitioner?: PartitionerName
  /** Let the broker create unknown topics (auto.create.topics.enable). Default true. */
  allowAutoTopicCreation?: boolean
  /** How long send() waits for a topic's metadata. Default 60000. */
  maxBlockMs?: number
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

interface Batch {
  topic: string
  partition: number
  writer: RecordBatchWriter
  callbacks: (DeliveryCallback | undefined)[]
  ctxs: number[]
  timestamps: number[]
  createdAt: number
  bytes: Buffer | null
  attempts: number
  retryAt: number
}

interface PartitionQueue {
  topic: string
  partition: number
  open: Batch | null
  ready: Batch[]
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
  private readonly queues = new Map<string, PartitionQueue>()
  private readonly inFlight = new Map<number, number>()
  private lingerTimer: NodeJS.Timeout | null = null
  private retryTimer: NodeJS.Timeout | null = null
  private draining = false
  private drainAgain = false
  private unfinished = 0
  private buffered = 0
  private readonly idleWaiters: (() => void)[] = []
  private readonly capacityWaiters: (() => void)[] = []
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
        if (t.partitions.length > 0) return t
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

  /** Sends one record; resolves when the broker has acknowledged it (acks) or it failed. */
  async send(record: ProducerRecord): Promise<RecordMetadata> {
    const t = await this.topicInfo(record.topic)
    return new Promise<RecordMetadata>((resolve, reject) => {
      this.appendResolved(t, record.partition, toBuffer(record.key), toBuffer(record.value), toHeaders(record.headers), record.timestamp ?? Date.now(), (err, meta) => {
        if (err !== null) reject(err)
        else resolve(meta!)
      }, 0)
    })
  }

  /** Sends many records; resolves with their metadata in order (rejects on the first failure). */
  async sendBatch(records: readonly ProducerRecord[]): Promise<RecordMetadata[]> {
    return Promise.all(records.map((r) => this.send(r)))
  }

  /**
   * The hot path (perf tool, console producer): appends one record and calls cb(err, meta, ctx) when it
   * is acknowledged. The topic's metadata must already be loaded (await topicInfo first).
   */
  append(topic: string, partition: number | undefined, key: Buffer | null, value: Buffer | null, headers: Header[] | undefined, cb?: DeliveryCallback, ctx = 0, timestamp = Date.now()): void {
    const t = this.cluster.metadata.topics.get(topic)
    if (t === undefined || t.partitions.length === 0) throw new KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `no metadata for topic '${topic}' (await topicInfo first)`)
    this.appendResolved(t, partition, key, value, headers, timestamp, cb, ctx)
  }

  /** False once more than buffer.memory bytes wait to be sent; then await waitForCapacity(). */
  get hasCapacity(): boolean {
    return this.buffered < this.bufferMemory
  }

  waitForCapacity(): Promise<void> {
    if (this.hasCapacity || this.closed) return Promise.resolve()
    return new Promise((resolve) => this.capacityWaiters.push(resolve))
  }

  private appendResolved(t: TopicInfo, partition: number | undefined, key: Buffer | null, value: Buffer | null, headers: Header[] | undefined, timestamp: number, cb: DeliveryCallback | undefined, ctx: number): void {
    if (this.closed) {
      cb?.(new KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, 'the producer is closed'), null, ctx)
      return
    }
    const numPartitions = t.partitions.length
    let p: number
    if (partition !== undefined) {
      if (!Number.isInteger(partition) || partition < 0 || partition >= numPartitions) {
        cb?.(new KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `partition ${partition} of topic '${t.name}' does not exist (it has ${numPartitions})`), null, ctx)
        return
      }
      p = partition
    } else {
      p = this.partitioner.partition(t.name, key, numPartitions)
    }
    const size = RecordBatchWriter.recordSize(key, value, headers)
    if (size + 61 > this.maxRequestSize) {
      cb?.(new KafkaError(ErrorCode.MESSAGE_TOO_LARGE, `a record of ${size} bytes is larger than max.request.size ${this.maxRequestSize}`), null, ctx)
      return
    }
    const qk = `${t.name}\u0000${p}`
    let q = this.queues.get(qk)
    if (q === undefined) {
      q = { topic: t.name, partition: p, open: null, ready: [] }
      this.queues.set(qk, q)
    }
    if (q.open !== null && !q.open.writer.tryAppend(timestamp, key, value, headers)) {
      this.seal(q, numPartitions)
    }
    if (q.open === null) {
      q.open = { topic: t.name, partition: p, writer: new RecordBatchWriter(Math.max(this.batchSize, size + 61)), callbacks: [], ctxs: [], timestamps: [], createdAt: Date.now(), bytes: null, attempts: 0, retryAt: 0 }
      this.unfinished++
      if (!q.open.writer.tryAppend(timestamp, key, value, headers)) throw new Error('a record did not fit an empty batch sized for it')
    }
    const b = q.open
    b.callbacks.push(cb)
    b.ctxs.push(ctx)
    b.timestamps.push(timestamp)
    this.buffered += size
    if (b.writer.sizeInBytes >= this.batchSize) {
      this.seal(q, numPartitions)
      this.scheduleDrain(0)
    } else {
      this.scheduleDrain(this.lingerMs)
    }
  }

  private seal(q: PartitionQueue, numPartitions: number): void {
    const b = q.open
    if (b === null) return
    q.open = null
    b.bytes = b.writer.build(this.codec as 0)
    q.ready.push(b)
    this.partitioner.batchClosed(q.topic, q.partition, numPartitions)
  }

  private scheduleDrain(delayMs: number): void {
    if (delayMs <= 0) {
      if (this.draining) {
        this.drainAgain = true
        return
      }
      queueMicrotask(() => this.drain(false))
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
      for (const q of this.queues.values()) {
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
    // Group the head batches of each partition by leader; one batch per partition per request.
    const byLeader = new Map<number, Batch[]>()
    let earliestRetry = Infinity
    for (const q of this.queues.values()) {
      const head = q.ready[0]
      if (head === undefined) continue
      if (head.retryAt > now) {
        earliestRetry = Math.min(earliestRetry, head.retryAt)
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
          const q = this.queues.get(`${b.topic}\u0000${b.partition}`)!
          const head = q.ready[0]
          if (head === undefined || head.retryAt > now) continue
          if (batches.length > 0 && size + head.bytes!.length > this.maxRequestSize) continue
          q.ready.shift()
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
    const topics = [...new Set([...this.queues.values()].map((q) => q.topic))]
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
    const req: Produce.ProduceRequest = {
      transactionalId: null,
      acks: this.acks,
      timeoutMs: this.cluster.requestTimeoutMs,
      topicData: [...topics].map(([name, partitionData]) => ({ name, partitionData })),
    }
    const encode = (w: Parameters<typeof Produce.encodeProduceRequest>[0], v: number): void => Produce.encodeProduceRequest(w, req, v)
    const done = (): void => {
      this.inFlight.set(leader, (this.inFlight.get(leader) ?? 1) - 1)
      this.drain(false)
    }
    this.cluster
      .nodeConnection(leader)
      .then(async (conn) => {
        if (this.acks === 0) {
          await conn.sendNoResponse(ApiKey.Produce, encode)
          for (const b of batches) this.complete(b, null, -1, -1)
          return
        }
        const res = await conn.send(ApiKey.Produce, encode, Produce.decodeProduceResponse)
        const results = new Map<string, Produce.PartitionProduceResponse>()
        for (const t of res.responses) for (const p of t.partitionResponses) results.set(`${t.name}\u0000${p.index}`, p)
        for (const b of batches) {
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
        for (const b of batches) this.retryOrFail(b, err as Error)
      })
      .finally(done)
  }

  private retryOrFail(b: Batch, err: Error): void {
    const age = Date.now() - b.createdAt
    if (!this.closed && isRetriableError(err) && age < this.deliveryTimeoutMs) {
      b.attempts++
      b.retryAt = Date.now() + Math.min(this.cluster.retryBackoffMs * 2 ** Math.min(b.attempts - 1, 5), 1000)
      const q = this.queues.get(`${b.topic}\u0000${b.partition}`)!
      q.ready.unshift(b)
      // The leader may have moved (NOT_LEADER_OR_FOLLOWER) or the broker gone: look again.
      this.refreshSoon()
      return
    }
    const reason = err instanceof KafkaError ? err : new KafkaError(ErrorCode.NETWORK_EXCEPTION, err.message)
    this.complete(b, reason, -1, -1)
  }

  private complete(b: Batch, err: Error | null, baseOffset: number, logAppendTime: number): void {
    this.unfinished--
    for (let i = 0; i < b.callbacks.length; i++) {
      const cb = b.callbacks[i]
      if (cb === undefined) continue
      if (err !== null) cb(err, null, b.ctxs[i]!)
      else cb(null, { topic: b.topic, partition: b.partition, offset: baseOffset < 0 ? -1 : baseOffset + i, timestamp: logAppendTime >= 0 ? logAppendTime : b.timestamps[i]! }, b.ctxs[i]!)
    }
    this.buffered -= b.writer.sizeInBytes - 61
    if (this.buffered < this.bufferMemory) for (const w of this.capacityWaiters.splice(0)) w()
    if (this.unfinished === 0) for (const w of this.idleWaiters.splice(0)) w()
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

  /** Flushes, then closes every connection. */
  async close(): Promise<void> {
    if (this.closed) return
    await this.flush()
    this.closed = true
    for (const w of this.capacityWaiters.splice(0)) w()
    if (this.retryTimer !== null) clearTimeout(this.retryTimer)
    await this.cluster.close()
  }
}
