// Skein's ZooKeeper client: what Kafka's ZooKeeper-mode control plane needs, written against ZooKeeper's
// jute wire protocol over node:net, with no dependency beyond node built-ins. It replaces
// node-zookeeper-client, whose multi turned an expected version 0 into -1 (any) and so broke the
// controller's fencing on /controller_epoch; here every version is sent as given and only -1 means any.
//
// Implements:
// - Connection string with several servers and a chroot (`h1:2181,h2:2181/skein`); paths on the wire are
//   under the chroot, paths coming back (sequential names, watch events) are stripped of it. The chroot
//   node itself is created only on request (ensureChroot), as in Kafka.
// - Session: ConnectRequest/Response with protocol version 0, timeout negotiation, session id + password,
//   the readOnly flag (read-only servers accepted only with canBeReadOnly; no background search for a
//   read-write server then). Pings at a third of the negotiated timeout; a connection silent for two
//   thirds of it is abandoned for the next server, resuming the same session. Requests in flight at a
//   drop fail with CONNECTIONLOSS; requests issued while disconnected wait for the next connection.
//   Watches are re-registered on each new connection with SetWatches (so the caller never re-reads
//   because of a reconnect). Expiry is learnt from the server: 'session-expired', everything pending and
//   later fails with SESSIONEXPIRED, watches end with a 'None'/'Expired' event, the client is dead.
//   Events: 'state' (connecting | connected | disconnected | expired | auth-failed | closed),
//   'connected', 'disconnected', 'session-expired', 'auth-failed', 'closed'.
// - Operations: create / create2 (persistent, ephemeral, sequential, ephemeral-sequential; ACLs),
//   delete, exists, getData, setData, getChildren, getChildren2, sync, multi (check / create / setData /
//   delete, all-or-nothing, per-op results or a ZooKeeperMultiError with per-op codes), addAuth (any
//   scheme, e.g. digest; re-sent on reconnect). Errors are ZooKeeperError with KeeperException codes.
// - Watches: one-shot callbacks passed as { watch } to exists / getData / getChildren(2), fired once
//   with the event type. The re-arm pattern (read again with a new watch inside the callback) is
//   packaged as watchData / watchChildren.
// - Kafka helpers: mkdirp, createOrGet, conditionalMulti(checkPath, checkVersion, ops).
// - Bounded memory: a reply frame longer than jute.maxbuffer (maxBufferBytes, 1 MiB default) plus 1 KiB
//   is refused from its length prefix, before allocation; the connection is dropped (CONNECTIONLOSS) and
//   the session resumes on the next one. As with the Java client, reading that node again fails the same
//   way: raise maxBufferBytes. Requests waiting for a connection are held in memory; bounding how many a
//   caller issues is the caller's business.
//
// Not implemented: SASL / Kerberos, TLS, TTL and container nodes, persistent (recursive) watches and
// removeWatches, getACL / setACL, reconfig, multiRead of anything but getData (getDataMany), read-only-to-read-write server switching, DNS
// re-resolution of the server list, a request timeout (as in ZooKeeper's Java client, a request waits
// while the client is disconnected until the session is resumed or expires).
export { ZooKeeperClient, ANY_VERSION, DEFAULT_MAX_BUFFER_BYTES, DEFAULT_SESSION_TIMEOUT_MS } from './client.js'
export type {
  ConnectedInfo,
  CreateOptions,
  Data,
  NodeData,
  WatchHandle,
  WatchLoopOptions,
  WatchOption,
  ZooKeeperClientEvents,
  ZooKeeperClientOptions,
  ZooKeeperState,
} from './client.js'
export { ZooKeeperError, ZooKeeperMultiError, isZooKeeperError } from './errors.js'
export { CreateMode, CREATOR_ALL_ACL, OPEN_ACL_UNSAFE, Perms, READ_ACL_UNSAFE, ZooKeeperErrorCode, zooKeeperErrorName } from './protocol.js'
export type { ACL, Id, MultiOp, MultiOpResult, Stat, WatchEventType } from './protocol.js'
export type { WatchEvent, Watcher } from './watches.js'
export { parseConnectString } from './paths.js'
export type { ConnectString, ServerAddress } from './paths.js'
export { Op } from './ops.js'
