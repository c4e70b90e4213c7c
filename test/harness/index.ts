// Test harness: brokers (in process and as a child process), clusters (ZooKeeper + broker processes),
// ZooKeeper servers, a raw protocol client, a recording proxy (which versions real clients send), record
// decoding and external tool detection. Integration and server tests import from here.
export * from './broker.js'
export * from './cluster.js'
export * from './cluster-views.js'
export * from './disk.js'
export * from './raw-client.js'
export * from './records.js'
export * from './recording-proxy.js'
export * from './tools.js'
export * from './zookeeper.js'
export * from './security.js'
