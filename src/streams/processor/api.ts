// The Processor API (Kafka's org.apache.kafka.streams.processor.api): processors with init / process /
// close, the context they get (forward, schedule, state stores, record metadata, stream and wall-clock
// time), punctuation, and task ids.
import type { StateStore } from '../state/stores.js'
import type { Record, RecordMetadata } from '../core/record.js'

export enum PunctuationType {
  /** Fires as stream time (the largest record timestamp seen by the task) passes each interval. */
  STREAM_TIME = 'STREAM_TIME',
  /** Fires on the wall clock, checked by the stream thread between records. */
  WALL_CLOCK_TIME = 'WALL_CLOCK_TIME',
}

export type Punctuator = (timestamp: number) => void

export interface Cancellable {
  cancel(): void
}

/** A task: one partition of one sub-topology ('<subtopology>_<partition>', as Kafka prints it). */
export class TaskId {
  constructor(
    readonly subtopology: number,
    readonly partition: number,
  ) {}

  toString(): string {
    return `${this.subtopology}_${this.partition}`
  }

  static parse(s: string): TaskId {
    const m = /^(\d+)_(\d+)$/.exec(s)
    if (m === null) throw new Error(`'${s}' is not a task id`)
    return new TaskId(Number(m[1]), Number(m[2]))
  }

  equals(o: TaskId): boolean {
    return o.subtopology === this.subtopology && o.partition === this.partition
  }
}

export interface ProcessorContext<KForward = unknown, VForward = unknown> {
  applicationId(): string
  taskId(): TaskId
  /** The topic, partition and offset of the record being processed; null inside a punctuation. */
  recordMetadata(): RecordMetadata | null
  /** The application's configuration (the StreamsConfig properties). */
  appConfigs(): { readonly [key: string]: unknown }
  currentSystemTimeMs(): number
  /** The task's stream time: the largest timestamp of the records it has processed (-1 before any). */
  currentStreamTimeMs(): number
  getStateStore<S extends StateStore = StateStore>(name: string): S
  /** Calls punctuator every intervalMs of stream time or wall-clock time until cancelled. */
  schedule(intervalMs: number, type: PunctuationType, punctuator: Punctuator): Cancellable
  /** Sends a record to every child, or only to the named one. */
  forward<K extends KForward, V extends VForward>(record: Record<K, V>, childName?: string): void
  /** Asks for a commit as soon as possible (after this record). */
  commit(): void
  /** default.key.serde and default.value.serde. */
  keySerde(): import('../core/serdes.js').Serde<unknown>
  valueSerde(): import('../core/serdes.js').Serde<unknown>
}

export interface Processor<KIn, VIn, KOut = never, VOut = never> {
  init?(context: ProcessorContext<KOut, VOut>): void
  process(record: Record<KIn, VIn>): void
  close?(): void
}

/**
 * Makes a new processor per task (Kafka's ProcessorSupplier): a function, or an object whose get() does
 * it and which may name state stores to create and connect (stores()).
 */
export type ProcessorSupplier<KIn, VIn, KOut = never, VOut = never> =
  | (() => Processor<KIn, VIn, KOut, VOut>)
  | { get(): Processor<KIn, VIn, KOut, VOut>; stores?(): import('../state/builders.js').StoreBuilder<StateStore>[] }

export function supplierGet<KIn, VIn, KOut, VOut>(s: ProcessorSupplier<KIn, VIn, KOut, VOut>): Processor<KIn, VIn, KOut, VOut> {
  return typeof s === 'function' ? s() : s.get()
}

export function supplierStores(s: ProcessorSupplier<unknown, unknown, unknown, unknown>): import('../state/builders.js').StoreBuilder<StateStore>[] {
  return typeof s === 'function' ? [] : (s.stores?.() ?? [])
}

/** Picks a record's timestamp (Kafka's TimestampExtractor); partitionTime is the partition's largest so far. */
export type TimestampExtractor = (record: { topic: string; partition: number; offset: number; timestamp: number; key: unknown; value: unknown }, partitionTime: number) => number

/** Kafka's default: the record's own timestamp (CreateTime or LogAppendTime). */
export const FailOnInvalidTimestamp: TimestampExtractor = (r) => r.timestamp

/** Chooses the partition of a record written to a topic (Kafka's StreamPartitioner); undefined = default (murmur2 of the key bytes). */
export type StreamPartitioner<K, V> = (topic: string, key: K | null, value: V | null, numPartitions: number) => number | undefined

/** Chooses the topic of each record (Kafka's TopicNameExtractor). */
export type TopicNameExtractor<K, V> = (key: K | null, value: V | null, recordContext: { topic: string | null; partition: number; offset: number; timestamp: number }) => string
