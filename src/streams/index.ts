// Skein Streams: stream processing on Kafka topics as a TypeScript library (Kafka Streams' concepts and
// names): the DSL (StreamsBuilder, KStream, KTable, GlobalKTable, windows, joins), the Processor API,
// state stores (LMDB on disk or in memory, with changelogs), KafkaStreams (the runtime: tasks, threads,
// group membership, exactly-once), interactive queries and the TopologyTestDriver.
export * from './core/errors.js'
export { Headers } from './core/headers.js'
export { KeyValue, Record } from './core/record.js'
export type { RecordMetadata } from './core/record.js'
export { Serdes, serdeFrom } from './core/serdes.js'
export type { Deserializer, Serde, SerdeDefaults, Serializer } from './core/serdes.js'
export { AvroSerde, JsonSchemaSerde, ProtobufSerde } from './core/schema-registry-serdes.js'
export { FailOnInvalidTimestamp, PunctuationType, TaskId } from './processor/api.js'
export type { Cancellable, Processor, ProcessorContext, ProcessorSupplier, Punctuator, StreamPartitioner, TimestampExtractor, TopicNameExtractor } from './processor/api.js'
export { Topology, TopologyDescription } from './processor/topology.js'
export type { OffsetResetPolicy } from './processor/topology.js'
export { Stores, StoreBuilder, KeyValueStoreBuilder, TimestampedKeyValueStoreBuilder, WindowStoreBuilder, SessionStoreBuilder } from './state/builders.js'
export type { BytesStoreSupplier, SessionBytesStoreSupplier, WindowBytesStoreSupplier } from './state/builders.js'
export { Window, Windowed } from './state/stores.js'
export type {
  KeyValueStore,
  ReadOnlyKeyValueStore,
  ReadOnlySessionStore,
  ReadOnlyWindowStore,
  SessionStore,
  StateStore,
  TimestampedKeyValueStore,
  ValueAndTimestamp,
  WindowStore,
} from './state/stores.js'
export { Branched, BranchedKStream, CogroupedKStream, GlobalKTable, KGroupedStream, KGroupedTable, KStream, KTable, SessionWindowedKStream, StreamsBuilder, TimeWindowedKStream } from './dsl/kstream.js'
export { Change } from './dsl/internal.js'
export { Consumed, Grouped, Joined, Materialized, Named, Produced, Repartitioned, StreamJoined, TableJoined } from './dsl/options.js'
export { BufferConfig, JoinWindows, SessionWindows, SlidingWindows, Suppressed, TimeWindows, WindowedSerdes } from './dsl/windows.js'
export { KafkaStreams, QueryableStoreTypes, StoreQueryParameters } from './runtime/kafka-streams.js'
export type { HostInfo, KafkaStreamsState, KeyQueryMetadata, QueryableStoreType, StateListener, StreamThreadExceptionResponse, StreamsMetadata } from './runtime/kafka-streams.js'
export { StreamsConfig } from './runtime/config.js'
export type { ProcessingGuarantee, StreamsConfigInput } from './runtime/config.js'
export { LogAndContinueExceptionHandler, LogAndFailExceptionHandler } from './runtime/handlers.js'
export type { DeserializationExceptionHandler, HandlerResponse, ProductionExceptionHandler } from './runtime/handlers.js'
export { TestInputTopic, TestOutputTopic, TopologyTestDriver } from './runtime/test-driver.js'
export type { TestRecord } from './runtime/test-driver.js'
