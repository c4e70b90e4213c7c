// Skein's REST Proxy (Confluent's REST API v2 and v3), a client-side product: it talks to Kafka brokers
// through src/client only, standalone (`skein rest`) or inside a broker process (rest.listeners).
export { RestProxy } from './proxy.js'
export type { RestProxyOptions } from './proxy.js'
export { RestError, Errors as RestErrors, fromError } from './errors.js'
export { JsonSplitter } from './produce.js'
