// Kafka Connect for Skein: the plugin API (for connectors, converters, transforms and predicates written
// in TypeScript), the shipped plugins, and the runtime (standalone and distributed workers, REST API).
export * from './api/config-def.js'
export * from './api/data.js'
export * from './api/plugin.js'
export * from './connectors/index.js'
export * from './converters/index.js'
export * from './transforms/index.js'
export { startConnect } from './runtime/connect.js'
export type { ConnectHandle, ConnectOptions } from './runtime/connect.js'
export { Plugins } from './runtime/plugins.js'
export { ConnectAssignor } from './runtime/assignor.js'
export * from './runtime/protocol.js'
export { DLQ_HEADERS } from './runtime/errors.js'
