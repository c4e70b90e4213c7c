// Skein's Schema Registry core, compatible with Confluent Schema Registry: schema types (Avro, JSON Schema,
// Protobuf) with their compatibility rules, the `_schemas` topic's record formats and replay, the registry
// operations, and a transport-independent route table for its REST API.
export * from './avro/index.js'
export { checkCompatibility } from './compatibility.js'
export type { PreviousSchema } from './compatibility.js'
export * from './contexts.js'
export * from './errors.js'
export { JsonSchema, JsonSchemaParseError, diffJsonSchemas, COMPATIBLE_CHANGES_STRICT } from './jsonschema/index.js'
export { ProtobufSchema, ProtobufParseError, messageAt, messageIndexes } from './protobuf/index.js'
export * from './records.js'
export { ACCEPTED_CONTENT_TYPES, CONTENT_TYPE, RawSchema, handle, serializeBody } from './routes.js'
export type { RegistryRequest, RegistryResponse } from './routes.js'
export { parseSchema } from './schemas.js'
export * from './service.js'
export { RegistryState, schemaIdentity } from './state.js'
export * from './types.js'
export { KafkaRegistryStore } from './kafka-store.js'
export type { KafkaStoreOptions } from './kafka-store.js'
