// The sans-io Kafka wire layer: primitives, headers, frames, API keys and every generated
// message module (as a namespace: `Produce.ProduceRequest`, `Fetch.encodeFetchResponse`, ...).

export { Reader } from './primitives/reader.js'
export { Writer } from './primitives/writer.js'
export { ProtocolDecodeError, ProtocolEncodeError } from './primitives/errors.js'
export { ZERO_UUID, isFileRegionRef, isRecordsPayload, recordsLength } from './primitives/types.js'
export type { FileRegionRef, Records, RecordsPayload, TaggedField } from './primitives/types.js'
export * from './header.js'
export * from './frame.js'
export * from './api-keys.gen.js'
export * from './messages/index.gen.js'
