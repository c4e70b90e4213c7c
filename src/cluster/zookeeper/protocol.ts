// ZooKeeper's client wire protocol: constants (org.apache.zookeeper.ZooDefs, KeeperException.Code,
// Watcher.Event, ClientCnxn's special xids) and the records of zookeeper.jute that the client sends and
// receives. Framing: every packet in both directions is an int length followed by that many bytes. The
// first packet each way on a connection is ConnectRequest / ConnectResponse (no header); after it,
// requests are RequestHeader(xid, type) + body and replies are ReplyHeader(xid, zxid, err) + body, where
// the body is only present when err is 0.
import { JuteReader, JuteWriter } from './jute.js'

/** Request types (ZooDefs.OpCode). Only those this client sends are listed. */
export const OpCode = {
  create: 1,
  delete: 2,
  exists: 3,
  getData: 4,
  setData: 5,
  getChildren: 8,
  sync: 9,
  ping: 11,
  getChildren2: 12,
  check: 13,
  multi: 14,
  create2: 15,
  /** ZooKeeper 3.6+: several reads in one request, each answered on its own (not a transaction). */
  multiRead: 22,
  auth: 100,
  setWatches: 101,
  closeSession: -11,
  error: -1,
} as const

/** xids with a meaning of their own (ClientCnxn); ordinary requests count up from 1. */
export const Xid = {
  notification: -1,
  ping: -2,
  auth: -4,
  setWatches: -8,
} as const

/** KeeperException.Code: the error codes a ZooKeeper server answers with, plus the client-side ones. */
export const ZooKeeperErrorCode = {
  OK: 0,
  SYSTEMERROR: -1,
  RUNTIMEINCONSISTENCY: -2,
  DATAINCONSISTENCY: -3,
  /** Client side: the connection dropped before the answer came; the request may or may not have been applied. */
  CONNECTIONLOSS: -4,
  MARSHALLINGERROR: -5,
  UNIMPLEMENTED: -6,
  OPERATIONTIMEOUT: -7,
  BADARGUMENTS: -8,
  UNKNOWNSESSION: -12,
  NEWCONFIGNOQUORUM: -13,
  RECONFIGINPROGRESS: -14,
  APIERROR: -100,
  NONODE: -101,
  NOAUTH: -102,
  BADVERSION: -103,
  NOCHILDRENFOREPHEMERALS: -108,
  NODEEXISTS: -110,
  NOTEMPTY: -111,
  SESSIONEXPIRED: -112,
  INVALIDCALLBACK: -113,
  INVALIDACL: -114,
  AUTHFAILED: -115,
  SESSIONMOVED: -118,
  NOTREADONLY: -119,
  EPHEMERALONLOCALSESSION: -120,
  NOWATCHER: -121,
  REQUESTTIMEOUT: -122,
  RECONFIGDISABLED: -123,
  SESSIONCLOSEDREQUIRESASLAUTH: -124,
  QUOTAEXCEEDED: -125,
  THROTTLEDOP: -127,
} as const
export type ZooKeeperErrorCode = (typeof ZooKeeperErrorCode)[keyof typeof ZooKeeperErrorCode]

const ERROR_NAMES = new Map<number, string>(Object.entries(ZooKeeperErrorCode).map(([name, code]) => [code, name]))

export function zooKeeperErrorName(code: number): string {
  return ERROR_NAMES.get(code) ?? `UNKNOWN(${code})`
}

/** CreateMode flags (org.apache.zookeeper.CreateMode). TTL and container modes are not offered. */
export const CreateMode = {
  PERSISTENT: 0,
  EPHEMERAL: 1,
  PERSISTENT_SEQUENTIAL: 2,
  EPHEMERAL_SEQUENTIAL: 3,
} as const
export type CreateMode = (typeof CreateMode)[keyof typeof CreateMode]

export function isSequential(mode: CreateMode): boolean {
  return (mode & 2) !== 0
}

/** Watcher.Event.EventType, by the numbers the server sends. */
const EVENT_TYPES: Record<number, WatchEventType> = {
  [-1]: 'None',
  1: 'NodeCreated',
  2: 'NodeDeleted',
  3: 'NodeDataChanged',
  4: 'NodeChildrenChanged',
}
export type WatchEventType = 'None' | 'NodeCreated' | 'NodeDeleted' | 'NodeDataChanged' | 'NodeChildrenChanged'

/** ZooDefs.Perms */
export const Perms = { READ: 1, WRITE: 2, CREATE: 4, DELETE: 8, ADMIN: 16, ALL: 31 } as const

export interface Id {
  scheme: string
  id: string
}
export interface ACL {
  perms: number
  id: Id
}

/** ZooDefs.Ids.OPEN_ACL_UNSAFE: anyone may do anything. What Kafka uses unless zookeeper.set.acl is on. */
export const OPEN_ACL_UNSAFE: readonly ACL[] = Object.freeze([{ perms: Perms.ALL, id: { scheme: 'world', id: 'anyone' } }])
/** ZooDefs.Ids.CREATOR_ALL_ACL: everything, for the ids the creating session authenticated as. */
export const CREATOR_ALL_ACL: readonly ACL[] = Object.freeze([{ perms: Perms.ALL, id: { scheme: 'auth', id: '' } }])
/** ZooDefs.Ids.READ_ACL_UNSAFE: anyone may read. */
export const READ_ACL_UNSAFE: readonly ACL[] = Object.freeze([{ perms: Perms.READ, id: { scheme: 'world', id: 'anyone' } }])

/** A znode's metadata (org.apache.zookeeper.data.Stat). zxids and the session id are 64-bit: bigint. */
export interface Stat {
  /** zxid of the create; Kafka uses the broker registration's czxid as the broker epoch. */
  czxid: bigint
  mzxid: bigint
  /** ms since the epoch */
  ctime: number
  mtime: number
  /** Data version: the zkVersion that conditional writes compare against. Starts at 0. */
  version: number
  cversion: number
  aversion: number
  /** Session id of the owner for an ephemeral node, 0n otherwise. */
  ephemeralOwner: bigint
  dataLength: number
  numChildren: number
  pzxid: bigint
}

export function readStat(r: JuteReader): Stat {
  return {
    czxid: r.long(),
    mzxid: r.long(),
    ctime: r.longAsNumber(),
    mtime: r.longAsNumber(),
    version: r.int(),
    cversion: r.int(),
    aversion: r.int(),
    ephemeralOwner: r.long(),
    dataLength: r.int(),
    numChildren: r.int(),
    pzxid: r.long(),
  }
}

function writeAcl(w: JuteWriter, acl: readonly ACL[]): void {
  w.int(acl.length)
  for (const a of acl) w.int(a.perms).ustring(a.id.scheme).ustring(a.id.id)
}

// ---- connection handshake ----

/** Jute's protocol version; 0 is the only one ZooKeeper has. */
export const PROTOCOL_VERSION = 0
/** Length of the session password the server issues (and what a new session sends: zeros). */
export const SESSION_PASSWORD_LENGTH = 16

export interface ConnectRequest {
  lastZxidSeen: bigint
  timeoutMs: number
  sessionId: bigint
  password: Buffer
  readOnly: boolean
}

/** ConnectRequest followed by the readOnly flag that servers since 3.4 read (ClientCnxn.primeConnection). */
export function encodeConnectRequest(req: ConnectRequest): Buffer {
  return new JuteWriter(64)
    .int(PROTOCOL_VERSION)
    .long(req.lastZxidSeen)
    .int(req.timeoutMs)
    .long(req.sessionId)
    .buffer(req.password)
    .bool(req.readOnly)
    .frame()
}

export interface ConnectResponse {
  protocolVersion: number
  /** Negotiated session timeout; 0 or less means the session the client asked to resume has expired. */
  timeoutMs: number
  sessionId: bigint
  password: Buffer
  /** The server is a read-only one (partitioned from its quorum); absent on very old servers. */
  readOnly: boolean
}

export function decodeConnectResponse(frame: Buffer): ConnectResponse {
  const r = new JuteReader(frame)
  const protocolVersion = r.int()
  const timeoutMs = r.int()
  const sessionId = r.long()
  const password = r.buffer()
  const readOnly = r.has(1) ? r.bool() : false
  return { protocolVersion, timeoutMs, sessionId, password, readOnly }
}

// ---- requests ----

/** A request packet: length, RequestHeader(xid, type), then the body written by `body`. */
export function encodeRequest(xid: number, type: number, body?: (w: JuteWriter) => void): Buffer {
  const w = new JuteWriter(128).int(xid).int(type)
  body?.(w)
  return w.frame()
}

export function writeCreate(w: JuteWriter, path: string, data: Buffer, acl: readonly ACL[], mode: CreateMode): void {
  w.ustring(path).buffer(data)
  writeAcl(w, acl)
  w.int(mode)
}

export function writePathWatch(w: JuteWriter, path: string, watch: boolean): void {
  w.ustring(path).bool(watch)
}

export function writePathVersion(w: JuteWriter, path: string, version: number): void {
  w.ustring(path).int(version)
}

export function writeSetData(w: JuteWriter, path: string, data: Buffer, version: number): void {
  w.ustring(path).buffer(data).int(version)
}

export function writeAuth(w: JuteWriter, scheme: string, auth: Buffer): void {
  w.int(0).ustring(scheme).buffer(auth)
}

export function writeSetWatches(w: JuteWriter, relativeZxid: bigint, data: readonly string[], exist: readonly string[], child: readonly string[]): void {
  w.long(relativeZxid).stringVector(data).stringVector(exist).stringVector(child)
}

// ---- replies ----

export interface ReplyHeader {
  xid: number
  zxid: bigint
  err: number
}

export function readReplyHeader(r: JuteReader): ReplyHeader {
  return { xid: r.int(), zxid: r.long(), err: r.int() }
}

export interface RawWatcherEvent {
  type: WatchEventType
  /** KeeperState number (3 = SyncConnected for node events). */
  state: number
  /** Server-side path, chroot included. */
  path: string
}

export function readWatcherEvent(r: JuteReader): RawWatcherEvent {
  const typeNumber = r.int()
  const state = r.int()
  const path = r.ustring()
  const type = EVENT_TYPES[typeNumber]
  if (type === undefined) throw new RangeError(`unknown watcher event type ${typeNumber}`)
  return { type, state, path }
}

// ---- multi ----

/** One operation of a multi (ZooKeeper's Op): a transaction applies all or none of them. */
export type MultiOp =
  | { type: 'check'; path: string; version: number }
  | { type: 'create'; path: string; data: Buffer; mode: CreateMode; acl?: readonly ACL[] }
  | { type: 'setData'; path: string; data: Buffer; version: number }
  | { type: 'delete'; path: string; version: number }

/** What a successful operation of a multi returned. */
export type MultiOpResult =
  | { type: 'check' }
  | { type: 'create'; path: string }
  | { type: 'setData'; stat: Stat }
  | { type: 'delete' }

const MULTI_OP_CODES = { check: OpCode.check, create: OpCode.create, setData: OpCode.setData, delete: OpCode.delete } as const

/**
 * MultiRequest: each op as MultiHeader(type, done=false, err=-1) + its request record, then
 * MultiHeader(-1, true, -1). Creates go as plain create: ZooKeeper 3.8 answers a create2 inside a
 * multi with a create result anyway (path, no Stat).
 * `toWire` maps client paths to server paths (the chroot).
 */
export function writeMulti(w: JuteWriter, ops: readonly MultiOp[], toWire: (path: string) => string): void {
  for (const op of ops) {
    w.int(MULTI_OP_CODES[op.type]).bool(false).int(-1)
    const path = toWire(op.path)
    switch (op.type) {
      case 'check':
      case 'delete':
        writePathVersion(w, path, op.version)
        break
      case 'create':
        writeCreate(w, path, op.data, op.acl ?? OPEN_ACL_UNSAFE, op.mode)
        break
      case 'setData':
        writeSetData(w, path, op.data, op.version)
        break
    }
  }
  w.int(-1).bool(true).int(-1)
}

/**
 * MultiReadRequest (ZooKeeper 3.6+, OpCode.multiRead): the multi's framing with getData ops, each
 * MultiHeader(getData, false, -1) + GetDataRequest(path, watch=false), then MultiHeader(-1, true, -1).
 */
export function writeMultiGetData(w: JuteWriter, paths: readonly string[], toWire: (path: string) => string): void {
  for (const path of paths) {
    w.int(OpCode.getData).bool(false).int(-1)
    writePathWatch(w, toWire(path), false)
  }
  w.int(-1).bool(true).int(-1)
}

/** One read of a multiRead: its data and Stat, or the code it failed with (each read fails on its own). */
export type RawReadResult = { ok: true; data: Buffer; stat: Stat } | { ok: false; err: number }

/** MultiResponse of a multiRead of getData ops: GetDataResponse or ErrorResponse per op. */
export function readMultiGetDataResponse(r: JuteReader): RawReadResult[] {
  const out: RawReadResult[] = []
  for (;;) {
    const type = r.int()
    const done = r.bool()
    const err = r.int()
    if (done) break
    if (type === OpCode.getData) out.push({ ok: true, data: r.buffer(), stat: readStat(r) })
    else if (type === OpCode.error) out.push({ ok: false, err: r.int() })
    else throw new RangeError(`unexpected multiRead result type ${type} (err ${err})`)
  }
  return out
}

/** One entry of a multi's answer: the op's result, or the error code it failed with. */
export type RawMultiResult = { ok: true; result: MultiOpResult } | { ok: false; err: number }

/**
 * MultiResponse: MultiHeader + record per op until a header with done=true. A failed transaction answers
 * every op with type -1 and an ErrorResponse: 0 for the ops before the one that failed (rolled back),
 * that op's own code, and RUNTIMEINCONSISTENCY for the ops after it.
 */
export function readMultiResponse(r: JuteReader, fromWire: (path: string) => string): RawMultiResult[] {
  const out: RawMultiResult[] = []
  for (;;) {
    const type = r.int()
    const done = r.bool()
    const err = r.int()
    if (done) break
    switch (type) {
      case OpCode.check:
        out.push({ ok: true, result: { type: 'check' } })
        break
      case OpCode.create:
        out.push({ ok: true, result: { type: 'create', path: fromWire(r.ustring()) } })
        break
      case OpCode.create2: {
        out.push({ ok: true, result: { type: 'create', path: fromWire(r.ustring()) } })
        readStat(r)
        break
      }
      case OpCode.setData:
        out.push({ ok: true, result: { type: 'setData', stat: readStat(r) } })
        break
      case OpCode.delete:
        out.push({ ok: true, result: { type: 'delete' } })
        break
      case OpCode.error:
        out.push({ ok: false, err: r.int() })
        break
      default:
        throw new RangeError(`unexpected multi result type ${type} (err ${err})`)
    }
  }
  return out
}
