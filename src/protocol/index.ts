// The sans-io Kafka wire layer: primitives, headers, frames, API keys and every generated
// message module (as a namespace: `Produce.ProduceRequest`, `Fetch.encodeFetchResponse`, ...).

export { Reader } from './primitives/reader.js'
export { Writer } from './primitives/writer.js'
export { ProtocolDecodeError, ProtocolEncodeError } from './primitives/errors.js'
export { ZERO_UUID, isFileRegion, isRecordsPayload, recordsLength } from './primitives/types.js'
export type { Records, RecordsPayload, TaggedField } from './primitives/types.js'
export type { FileRegion } from '../domain/file-region.js'
export * from './header.js'
export * from './frame.js'
export * from './api-keys.gen.js'
export * from './messages/index.gen.js'
