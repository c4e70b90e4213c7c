// The plugin API (Kafka's connect-api, typed for TypeScript): connectors and their tasks, records,
// headers, transformations, predicates and converters. A plugin is a class with a no-argument
// constructor; the runtime finds it by class name or alias (plugins.ts) among the built-ins and the
// modules under plugin.path. Task and connector methods may be async.
import type { ConfigDef } from './config-def.js'
import type { Schema, SchemaAndValue } from './data.js'
import type { MetricsRegistry } from '../../observability/metrics.js'

/** One header: key, schema (null when schemaless) and value. */
export interface ConnectHeader {
  key: string
  schema: Schema | null
  value: unknown
}

const NO_HEADERS: ConnectHeader[] = Object.freeze([]) as unknown as ConnectHeader[]

/** Kafka's ConnectHeaders: an ordered list of headers, several with the same key allowed. */
export class ConnectHeaders implements Iterable<ConnectHeader> {
  /** NO_HEADERS until the first add: most records have none, and a sink makes one per record. */
  private list: ConnectHeader[]

  constructor(headers?: Iterable<ConnectHeader>) {
    this.list = headers === undefined ? NO_HEADERS : [...headers]
  }

  [Symbol.iterator](): Iterator<ConnectHeader> {
    return this.list[Symbol.iterator]()
  }

  get size(): number {
    return this.list.length
  }

  add(key: string, value: unknown, schema: Schema | null = null): this {
    if (this.list === NO_HEADERS) this.list = []
    this.list.push({ key, schema, value })
    return this
  }

  addString(key: string, value: string | null): this {
    return this.add(key, value, null)
  }

  /** The last header with this key. */
  lastWithName(key: string): ConnectHeader | undefined {
    for (let i = this.list.length - 1; i >= 0; i--) if (this.list[i]!.key === key) return this.list[i]
    return undefined
  }

  allWithName(key: string): ConnectHeader[] {
    return this.list.filter((h) => h.key === key)
  }

  remove(key: string): this {
    for (let i = this.list.length - 1; i >= 0; i--) if (this.list[i]!.key === key) this.list.splice(i, 1)
    return this
  }

  duplicate(): ConnectHeaders {
    return new ConnectHeaders(this.list.map((h) => ({ ...h })))
  }
}

/** What Kafka's ConnectRecord carries; sources and sinks add their own fields. */
export interface ConnectRecord {
  topic: string
  /** null: the producer's partitioner decides. */
  kafkaPartition: number | null
  keySchema: Schema | null
  key: unknown
  valueSchema: Schema | null
  value: unknown
  /** Milliseconds since the epoch, or null. */
  timestamp: number | null
  headers: ConnectHeaders
}

/** A record from a source task: where it comes from (sourcePartition) and how far it got (sourceOffset). */
export interface SourceRecord extends ConnectRecord {
  sourcePartition: Record<string, unknown> | null
  sourceOffset: Record<string, unknown> | null
}

export type RecordTimestampType = 'NoTimestampType' | 'CreateTime' | 'LogAppendTime'

/** A record handed to a sink task, from a topic-partition at an offset. */
export interface SinkRecord extends ConnectRecord {
  kafkaPartition: number
  kafkaOffset: number
  timestampType: RecordTimestampType
  /** The topic, partition and offset the record was consumed from, before any transformation changed them. */
  originalTopic: string
  originalKafkaPartition: number
  originalKafkaOffset: number
}

/** A copy of record with some fields replaced (Kafka's newRecord): keeps the kind (source or sink). */
export function newRecord<R extends ConnectRecord>(record: R, changes: Partial<ConnectRecord>): R {
  return { ...record, ...changes, headers: changes.headers ?? record.headers.duplicate() }
}

export function sourceRecord(r: Partial<SourceRecord> & { topic: string }): SourceRecord {
  return {
    topic: r.topic,
    kafkaPartition: r.kafkaPartition ?? null,
    keySchema: r.keySchema ?? null,
    key: r.key ?? null,
    valueSchema: r.valueSchema ?? null,
    value: r.value ?? null,
    timestamp: r.timestamp ?? null,
    headers: r.headers ?? new ConnectHeaders(),
    sourcePartition: r.sourcePartition ?? null,
    sourceOffset: r.sourceOffset ?? null,
  }
}

export interface TopicPartition {
  topic: string
  partition: number
}

/** Thrown by tasks for failures that may pass: the runtime retries instead of failing the task. */
export class RetriableException extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'RetriableException'
  }
}

/** Kafka's ConnectException: a failure of a connector, task or the runtime. */
export class ConnectException extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'ConnectException'
  }
}

// ---- connectors ----

export interface ConnectorContext {
  /** Asks the runtime to call taskConfigs again (the set of tables or files changed). */
  requestTaskReconfiguration(): void
  /** Fails the connector with this error. */
  raiseError(err: Error): void
}

export type ConnectorType = 'source' | 'sink'
export type ExactlyOnceSupport = 'SUPPORTED' | 'UNSUPPORTED'
export type ConnectorTransactionBoundaries = 'SUPPORTED' | 'UNSUPPORTED'

export interface ConnectorValidation {
  /** Per key: error messages (merged into the ConfigDef's own validation). */
  errors: Record<string, string[]>
}

export abstract class Connector {
  context!: ConnectorContext

  initialize(context: ConnectorContext): void {
    this.context = context
  }

  abstract version(): string
  abstract start(props: Record<string, string>): void | Promise<void>
  abstract stop(): void | Promise<void>
  /** The task class, a constructor of SourceTask or SinkTask. */
  abstract taskClass(): new () => Task
  /** Up to maxTasks task configs. */
  abstract taskConfigs(maxTasks: number): Record<string, string>[] | Promise<Record<string, string>[]>
  abstract config(): ConfigDef
  /** Extra checks beyond the ConfigDef (cross-key rules): errors per key. */
  validate?(props: Record<string, string>): ConnectorValidation | Promise<ConnectorValidation>
}

/** Offsets as the REST API's PATCH /offsets passes them: partition -> offset (null: reset). */
export type OffsetAlterations = Map<Record<string, unknown>, Record<string, unknown> | null>

export abstract class SourceConnector extends Connector {
  readonly kind = 'source' as const
  /** KIP-618: whether this connector can give exactly-once delivery with these props. */
  exactlyOnceSupport?(props: Record<string, string>): ExactlyOnceSupport | null
  /** KIP-618: whether the connector can define transaction boundaries itself (transaction.boundary=connector). */
  canDefineTransactionBoundaries?(props: Record<string, string>): ConnectorTransactionBoundaries
  /** KIP-875: approves (true) or refuses (throws) an offsets change made through the REST API. */
  alterOffsets?(props: Record<string, string>, offsets: OffsetAlterations): boolean | Promise<boolean>
}

export abstract class SinkConnector extends Connector {
  readonly kind = 'sink' as const
  alterOffsets?(props: Record<string, string>, offsets: Map<TopicPartition, number | null>): boolean | Promise<boolean>
}

// ---- tasks ----

export interface OffsetStorageReader {
  /** The last committed offset of a source partition, or null. */
  offset(partition: Record<string, unknown>): Promise<Record<string, unknown> | null>
  offsets(partitions: Record<string, unknown>[]): Promise<Map<Record<string, unknown>, Record<string, unknown> | null>>
}

/** KIP-618: lets a task with transaction.boundary=connector commit or abort the current transaction. */
export interface TransactionContext {
  /** Commits the transaction after the records of the current poll() batch. */
  commitTransaction(): void
  /** Commits the transaction right after this record. */
  commitTransaction(record: SourceRecord): void
  abortTransaction(): void
  abortTransaction(record: SourceRecord): void
}

export interface SourceTaskContext {
  configs(): Record<string, string>
  offsetStorageReader: OffsetStorageReader
  /** Non-null only for exactly-once tasks with transaction.boundary=connector. */
  transactionContext: TransactionContext | null
  /** The worker's metrics registry (what Kafka's pluginMetrics() gives a task), served at GET /metrics. */
  metrics?: MetricsRegistry
}

/** Where a record went (Kafka's RecordMetadata), given to SourceTask.commitRecord. */
export interface RecordMetadata {
  topic: string
  partition: number
  offset: number
  timestamp: number
}

export interface ErrantRecordReporter {
  /** Reports a record the task could not handle: dead letter queue and error log, as errors.* says. */
  report(record: SinkRecord, error: Error): Promise<void>
}

export interface SinkTaskContext {
  configs(): Record<string, string>
  /** Resets consumption of a partition to an offset (applied before the next poll). */
  offset(tp: TopicPartition, offset: number): void
  offset(offsets: Map<TopicPartition, number>): void
  /** After a RetriableException: wait this long before the records are put again. */
  timeout(ms: number): void
  assignment(): TopicPartition[]
  /** Asks for an offset commit (flush) soon. */
  requestCommit(): void
  errantRecordReporter: ErrantRecordReporter | null
  /** The worker's metrics registry (what Kafka's pluginMetrics() gives a task), served at GET /metrics. */
  metrics?: MetricsRegistry
}

export interface Task {
  version(): string
  start(props: Record<string, string>): void | Promise<void>
  stop(): void | Promise<void>
}

export abstract class SourceTask implements Task {
  context!: SourceTaskContext

  initialize(context: SourceTaskContext): void {
    this.context = context
  }

  abstract version(): string
  abstract start(props: Record<string, string>): void | Promise<void>
  /** The next records, or null / [] when there are none yet (the runtime calls again at once: wait inside for data). */
  abstract poll(): Promise<SourceRecord[] | null>
  abstract stop(): void | Promise<void>
  /** Called after offsets are committed. */
  commit?(): void | Promise<void>
  /** Called once per record when it was written (metadata) or dropped by a transform or filter (null). */
  commitRecord?(record: SourceRecord, metadata: RecordMetadata | null): void | Promise<void>
}

export abstract class SinkTask implements Task {
  context!: SinkTaskContext

  initialize(context: SinkTaskContext): void {
    this.context = context
  }

  abstract version(): string
  abstract start(props: Record<string, string>): void | Promise<void>
  abstract put(records: SinkRecord[]): void | Promise<void>
  abstract stop(): void | Promise<void>
  /** Makes everything put so far durable in the external system. */
  flush?(currentOffsets: Map<string, { tp: TopicPartition; offset: number }>): void | Promise<void>
  /**
   * Before offsets are committed: returns the offsets safe to commit (default: flush(), then all of
   * currentOffsets). Keys are `topic\0partition`.
   */
  preCommit?(currentOffsets: Map<string, { tp: TopicPartition; offset: number }>): Map<string, { tp: TopicPartition; offset: number }> | Promise<Map<string, { tp: TopicPartition; offset: number }>>
  open?(partitions: TopicPartition[]): void | Promise<void>
  close?(partitions: TopicPartition[]): void | Promise<void>
}

// ---- transformations, predicates, converters ----

export interface Transformation<R extends ConnectRecord = ConnectRecord> {
  configure(props: Record<string, string>): void
  /** The changed record, or null to drop it. */
  apply(record: R): R | null
  config(): ConfigDef
  close?(): void
  version?(): string
}

export interface Predicate<R extends ConnectRecord = ConnectRecord> {
  configure(props: Record<string, string>): void
  test(record: R): boolean
  config(): ConfigDef
  close?(): void
  version?(): string
}

/** Converts between Connect data and bytes (Kafka's Converter; may be async for schema registries). */
export interface Converter {
  configure(props: Record<string, string>, isKey: boolean): void
  fromConnectData(topic: string, headers: ConnectHeaders | null, schema: Schema | null, value: unknown): Buffer | null | Promise<Buffer | null>
  toConnectData(topic: string, headers: ConnectHeaders | null, value: Buffer | null): SchemaAndValue | Promise<SchemaAndValue>
  config?(): ConfigDef
  close?(): void | Promise<void>
  version?(): string
}

/** Converts header values (Kafka's HeaderConverter). */
export interface HeaderConverter {
  configure(props: Record<string, string>): void
  fromConnectHeader(topic: string, headerKey: string, schema: Schema | null, value: unknown): Buffer | null
  toConnectHeader(topic: string, headerKey: string, value: Buffer | null): SchemaAndValue
  config?(): ConfigDef
  close?(): void
}

export type PluginKind = 'source' | 'sink' | 'converter' | 'header_converter' | 'transformation' | 'predicate'

/** How a module under plugin.path (or a built-in) makes its plugins known. */
export interface PluginDescriptor {
  /** The class name the configs use, e.g. org.apache.kafka.connect.file.FileStreamSinkConnector. */
  className: string
  kind: PluginKind
  /** Other names accepted for it. */
  aliases?: string[]
  version?: string
  create: () => Connector | Transformation | Predicate | Converter | HeaderConverter
}
