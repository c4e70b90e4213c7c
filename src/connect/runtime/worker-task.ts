// Running one task: WorkerSourceTask (poll the task, transform, convert, produce; commit source offsets)
// and WorkerSinkTask (consume, convert, transform, put; commit consumer offsets).
//
// Delivery:
// - at least once (source): an offset becomes committable only when the record that carries it and every
//   earlier record of the same source partition were acknowledged by the broker (Kafka's
//   SubmittedRecords); offsets are written every offset.flush.interval.ms and when the task stops, then
//   SourceTask.commit() runs. A crash replays from the last committed offsets.
// - exactly once (source, exactly.once.source.support=enabled, KIP-618): each task has a transactional
//   producer (transactional.id <group.id>-<connector>-<task>, which fences a previous instance of the
//   same task); its records and the offsets they reach are written in one transaction, committed per
//   poll() batch (transaction.boundary=poll), every transaction.boundary.interval.ms (interval) or
//   when the task asks through its TransactionContext (connector). Offsets are read back read_committed.
// - sinks: consumer offsets are committed only after put() took the records and flush() (or
//   preCommit()) returned, every offset.flush.interval.ms, before partitions are revoked and at stop.
import { type BatchDelivery, Consumer, type ConsumedRecord, type ConsumerOptions, type Header, isRetriableError, Producer, type ProducerOptions, type RebalanceListener, tpKey } from '../../client/index.js'
import type { Logger } from '../../observability/logger.js'
import type { MetricsRegistry } from '../../observability/metrics.js'
import type { TaskCounts } from './worker-metrics.js'
import { ConnectHeaders, type Converter, type HeaderConverter, type OffsetStorageReader, type RecordMetadata as TaskRecordMetadata, RetriableException, type SinkRecord, type SinkTask, type SinkTaskContext, type SourceRecord, type SourceTask, type TopicPartition, type TransactionContext } from '../api/plugin.js'
import type { ConnectRecord } from '../api/plugin.js'
import type { SchemaAndValue } from '../api/data.js'
import type { TransformationChain } from './connector-config.js'
import { ErrorHandler, type Stage, ToleranceExceededError } from './errors.js'
import { offsetRecord, type OffsetBackingStore, type SourceOffset, type SourcePartition, canonicalJson } from './offset-store.js'
import type { State } from './status-store.js'

export interface TaskId {
  connector: string
  task: number
}

export function taskName(id: TaskId): string {
  return `${id.connector}-${id.task}`
}

/** Where a task reports its state (the worker writes it to the status store). */
export type StatusReporter = (state: State, trace: string | null) => void

export interface TaskDeps {
  id: TaskId
  taskProps: Record<string, string>
  keyConverter: Converter
  valueConverter: Converter
  headerConverter: HeaderConverter
  chain: TransformationChain
  errors: ErrorHandler
  log: Logger
  report: StatusReporter
  offsetFlushIntervalMs: number
  gracefulTimeoutMs: number
  /** The worker's metrics registry, handed to the task in its context. */
  metrics: MetricsRegistry
  /** The task's record counts (source-task-metrics / sink-task-metrics). */
  counts: TaskCounts
  /** A topic the task wrote to or read from (GET /connectors/{c}/topics). */
  onTopic: (topic: string) => void
}

function traceOf(err: unknown): string {
  const e = err as Error
  let s = e?.stack ?? String(err)
  let c = (e as { cause?: unknown })?.cause
  for (let depth = 0; c !== undefined && c !== null && depth < 5; depth++) {
    s += `\nCaused by: ${(c as Error).stack ?? String(c)}`
    c = (c as { cause?: unknown }).cause
  }
  return s
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

/**
 * The consumed record a SinkRecord came from (for the errant record reporter and rewinds), kept on the
 * record under a symbol: a property of the object literal costs nothing per record, where a WeakMap
 * entry per record cost more than the rest of building it. A record a transform or the task made by
 * spreading one keeps it; another record object has none.
 */
const ORIGIN = Symbol('skein.connect.origin')

function originOf(record: SinkRecord): ConsumedRecord | undefined {
  return (record as { [ORIGIN]?: ConsumedRecord })[ORIGIN]
}

function withOrigin(record: SinkRecord | null, origin: ConsumedRecord): SinkRecord | null {
  if (record !== null && originOf(record) !== origin && Object.isExtensible(record)) (record as { [ORIGIN]?: ConsumedRecord })[ORIGIN] = origin
  return record
}

/** Kafka's TransformationChain.apply under the error handler: the record, or null (dropped or skipped). */
async function transform<R extends ConnectRecord>(chain: TransformationChain, errors: ErrorHandler, record: R, consumerRecord?: ConsumedRecord): Promise<R | null> {
  let r: R | null = record
  for (const s of chain.stages) {
    const current: R = r!
    const out = await errors.execute('TRANSFORMATION', s.transform.constructor.name, () => {
      if (s.predicate !== null && s.predicate.test(current) === s.negate) return current
      return s.transform.apply(current) as R | null
    }, { consumerRecord, record: current.topic })
    if (!out.ok) return null
    r = out.value
    if (r === null) return null
  }
  return r
}

/**
 * transform() that stays synchronous while every stage answers synchronously (the usual case): the sink's
 * per-record path takes no microtask per stage. From the first stage that answers with a promise on, it
 * continues asynchronously, in order.
 */
function transformSyncFirst<R extends ConnectRecord>(chain: TransformationChain, errors: ErrorHandler, record: R, consumerRecord: ConsumedRecord, from = 0): R | null | Promise<R | null> {
  let r: R = record
  for (let i = from; i < chain.stages.length; i++) {
    const s = chain.stages[i]!
    const current: R = r
    const out = errors.executeSync('TRANSFORMATION', s.transform.constructor.name, () => {
      if (s.predicate !== null && s.predicate.test(current) === s.negate) return current
      return s.transform.apply(current) as R | null
    }, { consumerRecord, record: current.topic })
    if (out instanceof Promise) return out.then((o) => (!o.ok || o.value === null ? null : transformSyncFirst(chain, errors, o.value, consumerRecord, i + 1)))
    if (out.value === null) return null
    r = out.value
  }
  return r
}

abstract class WorkerTask {
  protected stopping = false
  protected paused = false
  private resumeWaiters: (() => void)[] = []
  protected loop: Promise<void> | null = null
  failed = false

  constructor(protected readonly deps: TaskDeps) {}

  get id(): TaskId {
    return this.deps.id
  }

  start(initialState: 'STARTED' | 'PAUSED'): void {
    this.paused = initialState === 'PAUSED'
    this.loop = this.runGuarded()
  }

  private async runGuarded(): Promise<void> {
    try {
      await this.execute()
      if (!this.failed) this.deps.report('UNASSIGNED', null)
    } catch (err) {
      if (this.stopping && !(err instanceof ToleranceExceededError)) {
        this.deps.report('UNASSIGNED', null)
        return
      }
      this.failed = true
      this.deps.log.error({ err: (err as Error).message }, 'task failed')
      this.deps.report('FAILED', traceOf(err))
    } finally {
      await this.close().catch(() => {})
    }
  }

  protected abstract execute(): Promise<void>
  protected abstract close(): Promise<void>
  protected abstract stopTask(): Promise<void>

  setTargetState(state: 'STARTED' | 'PAUSED'): void {
    const wasPaused = this.paused
    this.paused = state === 'PAUSED'
    if (wasPaused && !this.paused) {
      for (const w of this.resumeWaiters.splice(0)) w()
      if (!this.failed) this.deps.report('RUNNING', null)
    } else if (!wasPaused && this.paused && !this.failed) this.deps.report('PAUSED', null)
  }

  protected async awaitUnpaused(): Promise<void> {
    while (this.paused && !this.stopping) await new Promise<void>((r) => this.resumeWaiters.push(r))
  }

  /** Stops the task: its own stop(), then waits (task.shutdown.graceful.timeout.ms) for the loop to end. */
  async stop(): Promise<void> {
    if (this.stopping) return this.loop?.catch(() => {})
    this.stopping = true
    for (const w of this.resumeWaiters.splice(0)) w()
    await this.stopTask().catch(() => {})
    let timer: NodeJS.Timeout | undefined
    await Promise.race([this.loop?.catch(() => {}), new Promise<void>((r) => (timer = setTimeout(r, this.deps.gracefulTimeoutMs)))])
    clearTimeout(timer)
  }
}

// ---- source tasks ----

/**
 * Records of each source partition in the order sent, acknowledged or not (Kafka's SubmittedRecords): an
 * offset becomes committable once its record and every record of the same source partition sent before
 * it are acknowledged. An entry stands for one record, or for a run of records of one partition from one
 * poll() batch (the batched path counts them instead of tracking each: its offset is the run's last).
 */
export class SubmittedRecords {
  private readonly byPartition = new Map<string, { partition: SourcePartition; queue: SubmittedEntry[]; committable: SourceOffset | null }>()
  outstanding = 0

  /** A new entry of `records` unacknowledged records (more may join it through add()). */
  entry(key: string, partition: SourcePartition | null, offset: SourceOffset | null, records = 1): SubmittedEntry {
    let p = this.byPartition.get(key)
    if (p === undefined) this.byPartition.set(key, (p = { partition: partition ?? {}, queue: [], committable: null }))
    const part = p
    const entry: SubmittedEntry = {
      offset,
      pending: records,
      add: (o) => {
        entry.pending++
        entry.offset = o
        this.outstanding++
      },
      ack: () => {
        if (entry.pending <= 0) return
        entry.pending--
        this.outstanding--
        if (entry.pending > 0) return
        while (part.queue.length > 0 && part.queue[0]!.pending === 0) {
          const head = part.queue.shift()!
          if (head.offset !== null) part.committable = head.offset
        }
      },
    }
    p.queue.push(entry)
    this.outstanding += records
    return entry
  }

  submit(partition: SourcePartition | null, offset: SourceOffset | null): { ack: () => void } {
    return this.entry(partition === null ? '' : canonicalJson(partition), partition, offset)
  }

  /** Offsets that can be committed now, taken (the next call returns only newer ones). */
  takeCommittable(): { partition: SourcePartition; offset: SourceOffset }[] {
    const out: { partition: SourcePartition; offset: SourceOffset }[] = []
    for (const [key, p] of this.byPartition) {
      if (key !== '' && p.committable !== null) out.push({ partition: p.partition, offset: p.committable })
      p.committable = null
      if (p.queue.length === 0) this.byPartition.delete(key)
    }
    return out
  }
}

export interface SubmittedEntry {
  offset: SourceOffset | null
  pending: number
  /** One more record joins the entry; its offset is now the entry's. */
  add(offset: SourceOffset | null): void
  ack(): void
}

/** A poll() batch on the batched path: its records and, per record, the entry that tracks it. */
interface InFlightBatch {
  firstSeq: number
  records: SourceRecord[]
  entries: (SubmittedEntry | null)[]
  remaining: number
}

export interface SourceTaskDeps extends TaskDeps {
  task: SourceTask
  producerOptions: ProducerOptions
  offsets: OffsetBackingStore
  /** Exactly-once: the transactional id, the boundary and its interval. */
  exactlyOnce: { transactionalId: string; boundary: 'poll' | 'interval' | 'connector'; intervalMs: number } | null
}

export class WorkerSourceTask extends WorkerTask {
  private producer: Producer | null = null
  private readonly submitted = new SubmittedRecords()
  private lastCommit = Date.now()
  private sendError: Error | null = null
  private inTransaction = false
  private commitRequested: 'commit' | 'abort' | null = null
  private commitAfter: { record: SourceRecord; action: 'commit' | 'abort' } | null = null
  /** Exactly-once: the newest offset per partition written in the open transaction. */
  private readonly txnOffsets = new Map<string, { partition: SourcePartition; offset: SourceOffset }>()
  private lastTxnCommit = Date.now()
  private commitTimer: NodeJS.Timeout | undefined
  private commitChain: Promise<void> = Promise.resolve()
  /** Batched path: a sequence number per record (the producer's ctx), the poll batches not fully acknowledged. */
  private nextSeq = 0
  private readonly inFlight: InFlightBatch[] = []
  private readonly partitionKeys = new WeakMap<SourcePartition, string>()
  /** A converter answered with a promise once: every record takes the per-record path. */
  private asyncConverters = false

  constructor(private readonly s: SourceTaskDeps) {
    super(s)
  }

  private reader(): OffsetStorageReader {
    const store = this.s.offsets
    const connector = this.id.connector
    return {
      offset: async (partition) => store.get(connector, partition),
      offsets: async (partitions) => new Map(partitions.map((p) => [p, store.get(connector, p)])),
    }
  }

  private transactionContext(): TransactionContext | null {
    if (this.s.exactlyOnce?.boundary !== 'connector') return null
    const set = (action: 'commit' | 'abort', record?: SourceRecord): void => {
      if (record === undefined) this.commitRequested = action
      else this.commitAfter = { record, action }
    }
    return {
      commitTransaction: (record?: SourceRecord) => set('commit', record),
      abortTransaction: (record?: SourceRecord) => set('abort', record),
    } as TransactionContext
  }

  protected async execute(): Promise<void> {
    const task = this.s.task
    // At least once: offsets are committed every offset.flush.interval.ms even while poll() blocks
    // (Kafka's SourceTaskOffsetCommitter), not only between polls.
    if (this.s.exactlyOnce === null) {
      this.commitTimer = setInterval(() => void this.commitOffsets().catch((err) => this.s.log.warn({ err: (err as Error).message }, 'offset commit failed')), this.s.offsetFlushIntervalMs)
      this.commitTimer.unref()
    }
    task.initialize({ configs: () => ({ ...this.s.taskProps }), offsetStorageReader: this.reader(), transactionContext: this.transactionContext(), metrics: this.s.metrics })
    const eos = this.s.exactlyOnce
    this.producer = new Producer({ ...this.s.producerOptions, ...(eos !== null ? { transactionalId: eos.transactionalId, enableIdempotence: true, acks: -1 } : {}) })
    if (eos !== null) await this.producer.initTransactions()
    await task.start({ ...this.s.taskProps })
    this.deps.report(this.paused ? 'PAUSED' : 'RUNNING', null)
    while (!this.stopping) {
      if (this.paused) {
        await this.commitOffsets()
        await this.awaitUnpaused()
        continue
      }
      if (this.sendError !== null) throw this.sendError
      let records: SourceRecord[] | null
      try {
        records = await task.poll()
      } catch (err) {
        if (this.stopping) break
        if (err instanceof RetriableException) {
          await sleep(100)
          continue
        }
        throw err
      }
      if (records !== null && records.length > 0) {
        this.s.counts.polledOrRead += records.length
        await this.sendRecords(records)
      }
      await this.maybeCommit(records?.length ?? 0)
    }
    await this.finish()
  }

  private async sendRecords(records: SourceRecord[]): Promise<void> {
    if (this.s.exactlyOnce === null && this.s.chain.empty && !this.asyncConverters) return this.sendBatched(records)
    const eos = this.s.exactlyOnce
    for (const record of records) {
      if (this.sendError !== null) throw this.sendError
      if (eos !== null && !this.inTransaction) {
        this.producer!.beginTransaction()
        this.inTransaction = true
      }
      const transformed = await transform(this.s.chain, this.s.errors, record)
      if (transformed === null) {
        // Dropped by a transform or skipped after an error: its offset may be committed.
        this.trackOffset(record, true)
        await this.s.task.commitRecord?.(record, null)
        await this.afterRecord(record)
        continue
      }
      const converted = await this.convert(transformed)
      if (converted === null) {
        this.trackOffset(record, true)
        await this.afterRecord(record)
        continue
      }
      this.s.onTopic(transformed.topic)
      const { ack } = this.trackOffset(record, false)
      const producer = this.producer!
      if (!producer.hasCapacity) await producer.waitForCapacity()
      try {
        await producer.topicInfo(transformed.topic)
      } catch (err) {
        throw new Error(`topic ${transformed.topic} is not available: ${(err as Error).message}`, { cause: err })
      }
      this.s.counts.writtenOrSent++
      producer.append(transformed.topic, transformed.kafkaPartition ?? undefined, converted.key, converted.value, converted.headers, (err, meta) => {
        if (err !== null) {
          if (this.s.errors.tolerateAll && eos === null) {
            this.s.log.warn({ err: err.message }, 'failed to send a record; skipped (errors.tolerance=all)')
            ack()
            return
          }
          this.sendError ??= err
          return
        }
        ack()
        if (meta !== null) void Promise.resolve(this.s.task.commitRecord?.(record, { topic: meta.topic, partition: meta.partition, offset: meta.offset, timestamp: meta.timestamp })).catch(() => {})
      }, 0, transformed.timestamp ?? Date.now())
      await this.afterRecord(record)
    }
  }

  /**
   * The batched path (at least once, no transforms, converters that answer synchronously: MirrorMaker's
   * ByteArrayConverter, String, JSON): a poll() batch is converted and appended in one synchronous loop,
   * acknowledged per producer batch (appendBatched), and tracked per source partition and poll batch
   * instead of per record. A record whose conversion throws goes through the per-record path, which
   * applies errors.tolerance and the retries. Awaits happen only for new topics' metadata and when the
   * producer's buffer is full.
   */
  private async sendBatched(records: SourceRecord[]): Promise<void> {
    const producer = this.producer!
    const batch: InFlightBatch = { firstSeq: this.nextSeq, records, entries: new Array(records.length).fill(null), remaining: records.length }
    this.nextSeq += records.length
    this.inFlight.push(batch)
    // Per source partition (by object identity, as a connector usually reuses one object per partition): its run in this batch.
    const runs = new Map<object | null, SubmittedEntry>()
    const topics = new Set<string>()
    const metadata = producer.cluster
    for (let i = 0; i < records.length; i++) {
      if (this.sendError !== null) throw this.sendError
      const record = records[i]!
      const converted = this.asyncConverters ? undefined : this.convertNow(record)
      if (converted === undefined) {
        // Conversion failed or went async: this record takes the per-record path (errors.tolerance, retries),
        // and the partition's later records a new run, behind it.
        batch.remaining--
        runs.delete(record.sourcePartition)
        await this.sendOne(record)
        continue
      }
      const topic = record.topic
      if (!topics.has(topic)) {
        topics.add(topic)
        this.s.onTopic(topic)
      }
      const sp = record.sourcePartition
      let entry = runs.get(sp)
      // A run fully acknowledged already (acks arrive while this loop waits for room) is closed: a new one starts.
      if (entry === undefined || entry.pending === 0) {
        entry = this.submitted.entry(sp === null ? '' : this.partitionKey(sp), sp, record.sourceOffset)
        runs.set(sp, entry)
      } else entry.add(record.sourceOffset)
      batch.entries[i] = entry
      if (converted === null) {
        // Dropped by its converter (tolerated): acknowledged at once, its offset may be committed.
        batch.remaining--
        batch.entries[i] = null
        entry.ack()
        continue
      }
      const known = metadata.metadata.topics.get(topic)
      if (known === undefined || known.partitions.length === 0) {
        try {
          await producer.topicInfo(topic)
        } catch (err) {
          throw new Error(`topic ${topic} is not available: ${(err as Error).message}`, { cause: err })
        }
      }
      if (!producer.hasCapacity) await producer.waitForCapacity()
      this.s.counts.writtenOrSent++
      producer.appendBatched(topic, record.kafkaPartition ?? undefined, converted.key, converted.value, converted.headers, this.onBatchDelivered, batch.firstSeq + i, record.timestamp ?? Date.now())
    }
    if (batch.remaining === 0) this.inFlight.splice(this.inFlight.indexOf(batch), 1)
  }

  /** The delivery of a producer batch on the batched path: acknowledgements and commitRecord. */
  private readonly onBatchDelivered = (err: Error | null, d: BatchDelivery): void => {
    const commitRecord = this.s.task.commitRecord
    const tolerate = err !== null && this.s.errors.tolerateAll
    if (err !== null) {
      if (tolerate) this.s.log.warn({ err: err.message }, 'failed to send records; skipped (errors.tolerance=all)')
      else this.sendError ??= err
    }
    let batch: InFlightBatch | undefined
    for (let k = d.from; k < d.to; k++) {
      const seq = d.ctxs[k]!
      if (batch === undefined || seq < batch.firstSeq || seq >= batch.firstSeq + batch.records.length) batch = this.inFlight.find((b) => seq >= b.firstSeq && seq < b.firstSeq + b.records.length)
      if (batch === undefined) continue
      const i = seq - batch.firstSeq
      if (err === null || tolerate) batch.entries[i]?.ack()
      if (err === null && commitRecord !== undefined) {
        const meta: TaskRecordMetadata = { topic: d.topic, partition: d.partition, offset: d.baseOffset >= 0 ? d.baseOffset + k : -1, timestamp: d.logAppendTime >= 0 ? d.logAppendTime : d.timestamps[k]! }
        try {
          const r = commitRecord.call(this.s.task, batch.records[i]!, meta)
          if (r instanceof Promise) r.catch(() => {})
        } catch (e) {
          this.s.log.warn({ err: (e as Error).message }, 'SourceTask.commitRecord failed')
        }
      }
      if (--batch.remaining === 0) {
        this.inFlight.splice(this.inFlight.indexOf(batch), 1)
        batch = undefined
      }
    }
  }

  private partitionKey(p: SourcePartition): string {
    let k = this.partitionKeys.get(p)
    if (k === undefined) this.partitionKeys.set(p, (k = canonicalJson(p)))
    return k
  }

  /**
   * Converts a record synchronously: its bytes (null: dropped), or undefined when a converter threw or
   * answered with a promise (then the converters count as async from now on and the per-record path
   * handles every record).
   */
  private convertNow(r: SourceRecord): { key: Buffer | null; value: Buffer | null; headers: Header[] | undefined } | undefined {
    try {
      let headers: Header[] | undefined
      if (r.headers.size > 0) {
        headers = []
        for (const x of r.headers) headers.push({ key: x.key, value: this.s.headerConverter.fromConnectHeader(r.topic, x.key, x.schema, x.value) })
      }
      const key = this.s.keyConverter.fromConnectData(r.topic, r.headers, r.keySchema, r.key)
      const value = this.s.valueConverter.fromConnectData(r.topic, r.headers, r.valueSchema, r.value)
      if (key instanceof Promise || value instanceof Promise) {
        for (const x of [key, value]) if (x instanceof Promise) x.catch(() => {})
        this.asyncConverters = true
        return undefined
      }
      return { key, value, headers }
    } catch {
      return undefined
    }
  }

  /** One record through the per-record path (used by the batched path for a record it could not convert). */
  private async sendOne(record: SourceRecord): Promise<void> {
    const converted = await this.convert(record)
    if (converted === null) {
      this.trackOffset(record, true)
      await this.s.task.commitRecord?.(record, null)
      return
    }
    this.s.onTopic(record.topic)
    const { ack } = this.trackOffset(record, false)
    const producer = this.producer!
    if (!producer.hasCapacity) await producer.waitForCapacity()
    try {
      await producer.topicInfo(record.topic)
    } catch (err) {
      throw new Error(`topic ${record.topic} is not available: ${(err as Error).message}`, { cause: err })
    }
    this.s.counts.writtenOrSent++
    producer.append(record.topic, record.kafkaPartition ?? undefined, converted.key, converted.value, converted.headers, (err, meta) => {
      if (err !== null) {
        if (this.s.errors.tolerateAll) ack()
        else this.sendError ??= err
        return
      }
      ack()
      if (meta !== null) void Promise.resolve(this.s.task.commitRecord?.(record, { topic: meta.topic, partition: meta.partition, offset: meta.offset, timestamp: meta.timestamp })).catch(() => {})
    }, 0, record.timestamp ?? Date.now())
  }

  /** Exactly-once with connector-defined boundaries: a commit or abort asked for after this record. */
  private async afterRecord(record: SourceRecord): Promise<void> {
    if (this.commitAfter !== null && this.commitAfter.record === record) {
      const action = this.commitAfter.action
      this.commitAfter = null
      await this.endTransaction(action)
    }
  }

  private trackOffset(record: SourceRecord, acked: boolean): { ack: () => void } {
    if (this.s.exactlyOnce !== null) {
      if (record.sourcePartition !== null && record.sourceOffset !== null) this.txnOffsets.set(canonicalJson(record.sourcePartition), { partition: record.sourcePartition, offset: record.sourceOffset })
      return { ack: () => {} }
    }
    const h = this.submitted.submit(record.sourcePartition, record.sourceOffset)
    if (acked) h.ack()
    return h
  }

  private async convert(r: SourceRecord): Promise<{ key: Buffer | null; value: Buffer | null; headers: Header[] } | null> {
    const e = this.s.errors
    const headers: Header[] = []
    const h = await e.execute('HEADER_CONVERTER', this.s.headerConverter.constructor.name, () => {
      for (const x of r.headers) headers.push({ key: x.key, value: this.s.headerConverter.fromConnectHeader(r.topic, x.key, x.schema, x.value) })
    }, { record: r.topic })
    if (!h.ok) return null
    const k = await e.execute('KEY_CONVERTER', this.s.keyConverter.constructor.name, () => this.s.keyConverter.fromConnectData(r.topic, r.headers, r.keySchema, r.key), { record: r.topic })
    if (!k.ok) return null
    const v = await e.execute('VALUE_CONVERTER', this.s.valueConverter.constructor.name, () => this.s.valueConverter.fromConnectData(r.topic, r.headers, r.valueSchema, r.value), { record: r.topic })
    if (!v.ok) return null
    return { key: k.value, value: v.value, headers }
  }

  private async maybeCommit(polled: number): Promise<void> {
    const eos = this.s.exactlyOnce
    if (eos === null) {
      if (Date.now() - this.lastCommit >= this.s.offsetFlushIntervalMs) await this.commitOffsets()
      return
    }
    if (!this.inTransaction) return
    if (eos.boundary === 'poll' && polled > 0) await this.endTransaction('commit')
    else if (eos.boundary === 'interval' && Date.now() - this.lastTxnCommit >= eos.intervalMs) await this.endTransaction('commit')
    else if (eos.boundary === 'connector' && this.commitRequested !== null) {
      const action = this.commitRequested
      this.commitRequested = null
      await this.endTransaction(action)
    }
  }

  /** Exactly-once: the transaction's offsets join it, then it commits (or aborts). */
  private async endTransaction(action: 'commit' | 'abort'): Promise<void> {
    if (!this.inTransaction) return
    const producer = this.producer!
    const topic = this.s.offsets.topic
    if (action === 'commit') {
      if (topic !== null) {
        for (const { partition, offset } of this.txnOffsets.values()) {
          const { key, value } = offsetRecord({ connector: this.id.connector, partition, offset })
          await producer.send({ topic, key, value })
        }
      }
      await producer.commitTransaction()
      // Seen by this worker's reader at once (the offsets topic tail brings them too).
      if (this.txnOffsets.size > 0 && topic === null) await this.s.offsets.set([...this.txnOffsets.values()].map((o) => ({ connector: this.id.connector, ...o })))
      await this.s.offsets.readToEnd().catch(() => {})
      await this.s.task.commit?.()
    } else {
      await producer.abortTransaction()
    }
    this.txnOffsets.clear()
    this.inTransaction = false
    this.lastTxnCommit = Date.now()
  }

  /** At least once: writes the offsets of acknowledged records, then SourceTask.commit(). One at a time, in order. */
  commitOffsets(): Promise<void> {
    const next = this.commitChain.catch(() => {}).then(() => this.commitNow())
    this.commitChain = next
    return next
  }

  private async commitNow(): Promise<void> {
    this.lastCommit = Date.now()
    if (this.s.exactlyOnce !== null) return
    const offsets = this.submitted.takeCommittable()
    if (offsets.length === 0) return
    await this.s.offsets.set(offsets.map((o) => ({ connector: this.id.connector, partition: o.partition, offset: o.offset })))
    try {
      await this.s.task.commit?.()
    } catch (err) {
      this.s.log.warn({ err: (err as Error).message }, 'SourceTask.commit failed')
    }
  }

  private async finish(): Promise<void> {
    clearInterval(this.commitTimer)
    const producer = this.producer
    if (producer === null) return
    if (this.s.exactlyOnce !== null) {
      if (this.inTransaction) await this.endTransaction(this.sendError === null ? 'commit' : 'abort').catch(() => {})
      return
    }
    // Everything sent is acknowledged (or failed) before the final offsets are taken.
    let timer: NodeJS.Timeout | undefined
    await Promise.race([producer.flush().catch(() => {}), new Promise<void>((r) => (timer = setTimeout(r, this.s.gracefulTimeoutMs)))])
    clearTimeout(timer)
    await this.commitOffsets().catch(() => {})
  }

  protected async stopTask(): Promise<void> {
    await this.s.task.stop()
  }

  protected async close(): Promise<void> {
    clearInterval(this.commitTimer)
    if (!this.stopping) await Promise.resolve(this.s.task.stop()).catch(() => {})
    const p = this.producer
    this.producer = null
    if (p !== null) {
      if (this.s.exactlyOnce !== null && this.inTransaction) await p.abortTransaction().catch(() => {})
      await p.close().catch(() => {})
    }
    this.s.chain.close()
  }
}

// ---- sink tasks ----

export interface SinkTaskDeps extends TaskDeps {
  task: SinkTask
  consumerOptions: ConsumerOptions
  topics: string[]
  topicsRegex: RegExp | null
  /** Reporter of records the task rejects through its ErrantRecordReporter (dead letter queue). */
  errantRecordReporter: ((record: ConsumedRecord, err: Error) => Promise<void>) | null
  /** Lists topics (for topics.regex subscriptions). */
  listTopics: () => Promise<string[]>
}

export class WorkerSinkTask extends WorkerTask {
  private consumer: Consumer | null = null
  /** Next offset to commit per partition: after the last record given to put() (or skipped). */
  private readonly current = new Map<string, { tp: TopicPartition; offset: number }>()
  private lastCommit = Date.now()
  private commitRequested = false
  private timeoutMs = 0
  private readonly seeks: { tp: TopicPartition; offset: number }[] = []
  private assigned: TopicPartition[] = []

  constructor(private readonly s: SinkTaskDeps) {
    super(s)
  }

  private context(): SinkTaskContext {
    const reporter = this.s.errantRecordReporter
    return {
      configs: () => ({ ...this.s.taskProps }),
      offset: (a: TopicPartition | Map<TopicPartition, number>, b?: number) => {
        if (a instanceof Map) for (const [tp, o] of a) this.seeks.push({ tp, offset: o })
        else this.seeks.push({ tp: a, offset: b! })
      },
      timeout: (ms: number) => {
        this.timeoutMs = ms
      },
      assignment: () => [...this.assigned],
      requestCommit: () => {
        this.commitRequested = true
      },
      metrics: this.s.metrics,
      errantRecordReporter: reporter === null ? null : {
        report: async (record: SinkRecord, error: Error) => {
          const origin = originOf(record)
          if (origin !== undefined) await reporter(origin, error)
        },
      },
    } as SinkTaskContext
  }

  private async subscription(): Promise<string[]> {
    if (this.s.topicsRegex === null) return this.s.topics
    const re = this.s.topicsRegex
    return (await this.s.listTopics()).filter((t) => re.test(t))
  }

  protected async execute(): Promise<void> {
    const task = this.s.task
    task.initialize(this.context())
    await task.start({ ...this.s.taskProps })
    this.consumer = new Consumer({ ...this.s.consumerOptions, enableAutoCommit: false })
    // Partitions given up are committed and closed before the rejoin; new ones are opened before their first fetch.
    const listener: RebalanceListener = {
      onPartitionsRevoked: async (tps) => {
        for (const tp of tps) this.revoked.add(tpKey(tp.topic, tp.partition))
        await this.commit()
        await task.close?.(tps)
        for (const tp of tps) this.current.delete(tpKey(tp.topic, tp.partition))
      },
      onPartitionsAssigned: async (tps) => {
        // open() is never called while a put() runs.
        await this.awaitPut()
        this.assigned = tps
        await task.open?.(tps)
      },
    }
    let topics = await this.subscription()
    let lastTopicCheck = Date.now()
    if (topics.length > 0) this.consumer.subscribe(topics, listener)
    for (const t of topics) this.s.onTopic(t)
    this.deps.report(this.paused ? 'PAUSED' : 'RUNNING', null)
    while (!this.stopping) {
      this.throwIfPutFailed()
      if (this.paused) {
        await this.commit()
        await this.awaitUnpaused()
        continue
      }
      if (this.s.topicsRegex !== null && Date.now() - lastTopicCheck > 5000) {
        lastTopicCheck = Date.now()
        const now = await this.subscription()
        if (now.join(',') !== topics.join(',')) {
          topics = now
          this.consumer.subscribe(topics, listener)
          for (const t of topics) this.s.onTopic(t)
        }
      }
      if (topics.length === 0) {
        await sleep(500)
        continue
      }
      this.applySeeks()
      let records: ConsumedRecord[]
      try {
        // The previous batch's put() may still be in flight: the next fetch overlaps it.
        records = await this.consumer.poll(500)
      } catch (err) {
        // A subscribed topic that does not exist yet, a coordinator moving: the consumer tries again.
        if (this.stopping) break
        if (!isRetriableError(err)) throw err
        this.s.log.debug({ err: (err as Error).message }, 'poll failed; retrying')
        await sleep(1000)
        continue
      }
      if (this.stopping) break
      this.s.counts.polledOrRead += records.length
      if (records.length > 0) {
        // Converted while the previous put() runs; put() calls stay one at a time and in order.
        let batch = await this.convert(records)
        // While that put() still runs, the batch is topped up to max.poll.records from what the consumer
        // has (a fetch often holds a little more than one poll: polls of 3000 then 376 records made every
        // other put() small, and the next big conversion then ran while the sink's system sat idle).
        const maxPollRecords = Math.max(1, this.s.consumerOptions.maxPollRecords ?? 500)
        this.revoked.clear()
        while (this.inFlightPut !== null && !this.putSettled && records.length < maxPollRecords && !this.stopping) {
          let more: ConsumedRecord[]
          try {
            more = await this.consumer.poll(0, maxPollRecords - records.length)
          } catch {
            break // the next poll of the loop meets the error again and handles it
          }
          if (this.revoked.size > 0) {
            // Partitions were given up (closed, their offsets committed) in that poll: their records
            // taken before it are not put here; whoever owns them now reads them again from the commit.
            const revoked = this.revoked
            records = records.filter((r) => !revoked.has(tpKey(r.topic, r.partition)))
            batch = batch.filter((sr) => {
              const o = originOf(sr)
              return o === undefined || !revoked.has(tpKey(o.topic, o.partition))
            })
            this.revoked = new Set()
          }
          if (more.length === 0) break
          records = records.concat(more)
          for (const sr of await this.convert(more)) batch.push(sr)
        }
        await this.awaitPut()
        this.throwIfPutFailed()
        if (this.seeks.length > 0) {
          // The previous put() rewound partitions (SinkTaskContext.offset): what was fetched past the
          // rewind is dropped, and fetched again from the new position.
          const rewound = new Set(this.seeks.map((x) => tpKey(x.tp.topic, x.tp.partition)))
          records = records.filter((r) => !rewound.has(tpKey(r.topic, r.partition)))
          batch = batch.filter((sr) => {
            const o = originOf(sr)
            return o === undefined || !rewound.has(tpKey(o.topic, o.partition))
          })
        }
        if (records.length > 0) this.startPut(batch, records)
      }
      if (this.commitRequested || Date.now() - this.lastCommit >= this.s.offsetFlushIntervalMs) await this.commit()
    }
    await this.commit()
    this.throwIfPutFailed()
  }

  private applySeeks(): void {
    for (const s of this.seeks.splice(0)) {
      try {
        this.consumer!.seek(s.tp.topic, s.tp.partition, s.offset)
      } catch {
        // not assigned (any more): nothing to move
      }
    }
  }

  /** The put() in flight, settled to its failure or null; never rejects (nothing waits on it while the loop polls). */
  private inFlightPut: Promise<unknown> | null = null
  private putFailure: { error: unknown } | null = null

  /** Partitions given up while the loop topped up a batch (their records in it are dropped). */
  private revoked = new Set<string>()
  /** Whether the put() in flight has returned (the loop stops topping up the next batch then). */
  private putSettled = false

  private startPut(batch: SinkRecord[], records: ConsumedRecord[]): void {
    this.putSettled = false
    this.inFlightPut = this.put(batch, records).then(() => {
      this.putSettled = true
      return null
    }, (error: unknown) => {
      this.putSettled = true
      this.putFailure ??= { error }
    })
  }

  /** Waits for the put() in flight, if any (before the next put, a commit, open or close). */
  private async awaitPut(): Promise<void> {
    while (this.inFlightPut !== null) {
      const p = this.inFlightPut
      await p
      if (this.inFlightPut === p) this.inFlightPut = null
    }
  }

  private throwIfPutFailed(): void {
    if (this.putFailure !== null) throw this.putFailure.error
  }

  /**
   * Consumed records to sink records (null: dropped by a transform or skipped after a tolerated error).
   * The converters are called directly; only a failure or a promise goes through the error handler
   * (ErrorHandler.executeAfter), so a record that converts synchronously allocates no closure per stage.
   */
  private toSinkRecord(r: ConsumedRecord): SinkRecord | null | Promise<SinkRecord | null> {
    const kc = this.s.keyConverter
    let key: SchemaAndValue | Promise<SchemaAndValue>
    try {
      key = kc.toConnectData(r.topic, null, r.key)
    } catch (error) {
      return this.afterStage('KEY_CONVERTER', kc, () => kc.toConnectData(r.topic, null, r.key), { error }, r, (k) => this.withHeaders(r, k))
    }
    if (key instanceof Promise) return this.afterStage('KEY_CONVERTER', kc, () => kc.toConnectData(r.topic, null, r.key), { pending: key }, r, (k) => this.withHeaders(r, k))
    return this.withHeaders(r, key)
  }

  /** A stage whose first call threw or answered with a promise: retried and reported by the error handler, then next. */
  private afterStage<T>(stage: Stage, by: object, op: () => T | Promise<T>, first: { error: unknown } | { pending: Promise<T> }, r: ConsumedRecord, next: (value: T) => SinkRecord | null | Promise<SinkRecord | null>): Promise<SinkRecord | null> {
    return this.s.errors.executeAfter(stage, by.constructor.name, op, first, { consumerRecord: r }).then((x) => (x.ok ? next(x.value) : null))
  }

  private withHeaders(r: ConsumedRecord, key: SchemaAndValue): SinkRecord | null | Promise<SinkRecord | null> {
    // No headers: nothing to convert, nothing that can fail.
    if (r.headers.length === 0) return this.withValue(r, key, new ConnectHeaders())
    const hc = this.s.headerConverter
    const h = this.s.errors.executeSync('HEADER_CONVERTER', hc.constructor.name, () => {
      const headers = new ConnectHeaders()
      for (const x of r.headers) {
        const sv = hc.toConnectHeader(r.topic, x.key, x.value)
        headers.add(x.key, sv.value, sv.schema)
      }
      return headers
    }, { consumerRecord: r })
    if (h instanceof Promise) return h.then((x) => (x.ok ? this.withValue(r, key, x.value) : null))
    return this.withValue(r, key, h.value)
  }

  private withValue(r: ConsumedRecord, key: SchemaAndValue, headers: ConnectHeaders): SinkRecord | null | Promise<SinkRecord | null> {
    const vc = this.s.valueConverter
    let value: SchemaAndValue | Promise<SchemaAndValue>
    try {
      value = vc.toConnectData(r.topic, headers, r.value)
    } catch (error) {
      return this.afterStage('VALUE_CONVERTER', vc, () => vc.toConnectData(r.topic, headers, r.value), { error }, r, (v) => this.transformed(r, key, headers, v))
    }
    if (value instanceof Promise) return this.afterStage('VALUE_CONVERTER', vc, () => vc.toConnectData(r.topic, headers, r.value), { pending: value }, r, (v) => this.transformed(r, key, headers, v))
    return this.transformed(r, key, headers, value)
  }

  private transformed(r: ConsumedRecord, key: SchemaAndValue, headers: ConnectHeaders, value: SchemaAndValue): SinkRecord | null | Promise<SinkRecord | null> {
    const record: SinkRecord & { [ORIGIN]?: ConsumedRecord } = {
      topic: r.topic,
      kafkaPartition: r.partition,
      kafkaOffset: r.offset,
      keySchema: key.schema,
      key: key.value,
      valueSchema: value.schema,
      value: value.value,
      timestamp: r.timestamp,
      timestampType: r.timestampType,
      headers,
      originalTopic: r.topic,
      originalKafkaPartition: r.partition,
      originalKafkaOffset: r.offset,
      [ORIGIN]: r,
    }
    const out = transformSyncFirst(this.s.chain, this.s.errors, record, r)
    if (out instanceof Promise) return out.then((o) => withOrigin(o, r))
    return out === record ? out : withOrigin(out, r)
  }

  private async convert(records: ConsumedRecord[]): Promise<SinkRecord[]> {
    const batch: SinkRecord[] = []
    for (let i = 0; i < records.length; i++) {
      // While a put() is in flight, its I/O gets the event loop between slices of the conversion.
      if (i % 256 === 255 && this.inFlightPut !== null) await new Promise<void>((resolve) => setImmediate(resolve))
      const r = records[i]!
      let sr = this.toSinkRecord(r)
      if (sr instanceof Promise) sr = await sr
      if (sr !== null) batch.push(sr)
    }
    return batch
  }

  private async put(batch: SinkRecord[], records: ConsumedRecord[]): Promise<void> {
    for (;;) {
      try {
        await this.s.task.put(batch)
        this.s.counts.writtenOrSent += batch.length
        break
      } catch (err) {
        if (err instanceof RetriableException && !this.stopping) {
          // Kafka pauses the partitions and redelivers the same batch after the task's timeout.
          const wait = this.timeoutMs > 0 ? this.timeoutMs : 1000
          this.timeoutMs = 0
          this.s.log.warn({ err: err.message }, `put failed, retrying in ${wait} ms`)
          await sleep(wait)
          continue
        }
        throw err
      }
    }
    // put() took them: the next commit may cover them (after flush/preCommit). A partition's records are
    // in offset order, so its last one in the batch is the one to commit after.
    for (let i = 0; i < records.length; i++) {
      const r = records[i]!
      const next = records[i + 1]
      if (next !== undefined && next.partition === r.partition && next.topic === r.topic) continue
      this.current.set(tpKey(r.topic, r.partition), { tp: { topic: r.topic, partition: r.partition }, offset: r.offset + 1 })
    }
  }

  /** preCommit (default: flush, then everything put), then the offsets are committed to the group. */
  private async commit(): Promise<void> {
    // Offsets only for records whose put() returned: the one in flight finishes first.
    await this.awaitPut()
    if (this.putFailure !== null) return
    this.lastCommit = Date.now()
    this.commitRequested = false
    const consumer = this.consumer
    if (consumer === null || this.current.size === 0) return
    const current = new Map(this.current)
    const task = this.s.task
    let offsets: Map<string, { tp: TopicPartition; offset: number }>
    if (task.preCommit !== undefined) offsets = await task.preCommit(current)
    else {
      await task.flush?.(current)
      offsets = current
    }
    const list = [...offsets.values()].map((o) => ({ topic: o.tp.topic, partition: o.tp.partition, offset: o.offset }))
    if (list.length === 0) return
    try {
      await consumer.commit(list)
    } catch (err) {
      // A commit refused after a rebalance: the records are redelivered to the new owner (at least once).
      this.s.log.warn({ err: (err as Error).message }, 'offset commit failed')
    }
  }

  protected async stopTask(): Promise<void> {
    // The loop sees stopping after its current poll (at most 500 ms) and commits; the task stops in close().
  }

  protected async close(): Promise<void> {
    // The task is closed and stopped only after the put() in flight, if any, returned.
    await this.awaitPut()
    const c = this.consumer
    this.consumer = null
    try {
      if (this.assigned.length > 0) await this.s.task.close?.(this.assigned)
    } catch {
      // closing is best effort
    }
    await Promise.resolve(this.s.task.stop()).catch(() => {})
    await c?.close({ commit: false }).catch(() => {})
    this.s.chain.close()
  }
}
