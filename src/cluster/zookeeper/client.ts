// A ZooKeeper client over node:net: one TCP connection at a time to one server of the ensemble, one
// session that survives moving between servers. See index.ts for what it implements and what not.
//
// Session and connection rules (those of ZooKeeper's Java client, ClientCnxn):
// - Connect: ConnectRequest(protocol 0, last zxid seen, requested timeout, session id + password, readOnly
//   allowed?) → ConnectResponse(negotiated timeout, session id, password, readOnly). A negotiated timeout
//   of 0 answers an attempt to resume a session the server has expired.
// - Heartbeat: a ping (xid -2) when nothing was sent for a third of the negotiated timeout; the
//   connection is given up when nothing was received for two thirds of it (pings are answered), and the
//   client moves on to the next server with the same session id and password.
// - Requests get increasing xids; the server answers a session's requests in order, so a reply must match
//   the oldest request in flight (anything else is a broken stream: the connection is dropped).
// - A dropped connection fails every request in flight with CONNECTIONLOSS (it may or may not have been
//   applied: the caller decides whether to retry). Requests issued while disconnected wait and go out on
//   the next connection of the same session.
// - Watches are re-registered on every new connection of the session with SetWatches (opcode 101, xid -8)
//   carrying the last zxid seen: the server fires at once the watches whose node changed while the client
//   was away, so a watcher never has to re-read because of a reconnect.
// - When the server says the session expired (at reconnect), the client emits 'session-expired', fails
//   everything pending and every later call with SESSIONEXPIRED, ends every watch with a 'None'/'Expired'
//   event, and stays dead: its ephemerals are gone and the owner must build a new client and re-register.
//   The client never declares expiry on its own; only the server knows.
import { EventEmitter } from 'node:events'
import { connect as netConnect, type Socket } from 'node:net'
import type { Logger } from '../../observability/logger.js'
import { silentLogger } from '../../observability/logger.js'
import { ZooKeeperError, isZooKeeperError, multiFailure } from './errors.js'
import { FrameReader, FrameTooLargeError } from './framing.js'
import { JuteReader, JuteWriter } from './jute.js'
import { Chroot, parseConnectString, pathPrefixes, validatePath, type ServerAddress } from './paths.js'
import {
  CreateMode,
  OPEN_ACL_UNSAFE,
  OpCode,
  SESSION_PASSWORD_LENGTH,
  Xid,
  ZooKeeperErrorCode,
  decodeConnectResponse,
  encodeConnectRequest,
  encodeRequest,
  isSequential,
  readMultiResponse,
  readMultiGetDataResponse,
  readReplyHeader,
  readStat,
  readWatcherEvent,
  writeAuth,
  writeCreate,
  writeMulti,
  writeMultiGetData,
  writePathVersion,
  writePathWatch,
  writeSetData,
  writeSetWatches,
  type ACL,
  type MultiOp,
  type MultiOpResult,
  type Stat,
} from './protocol.js'
import { WatchRegistry, type WatchEvent, type WatchKind, type Watcher } from './watches.js'

/** Kafka's zookeeper.session.timeout.ms default. */
export const DEFAULT_SESSION_TIMEOUT_MS = 18_000
/** ZooKeeper's jute.maxbuffer default (the client's packet limit, ZKClientConfig). */
export const DEFAULT_MAX_BUFFER_BYTES = 1024 * 1024
/**
 * Operations (a multi's or multiRead's count as many as they hold) written and not yet answered. The
 * server answers a session's requests in order, so whatever is sent behind a burst (a ping, the answer
 * that proves this session is heard: msSinceContact) waits for all of it; a controller writing 66,000 ISR
 * changes at once made that a second, and its broker's lease lapsed on a server that was only busy. The
 * rest wait here, in order. Kafka's ZooKeeperClient bounds it too (zookeeper.max.in.flight.requests).
 * 2,000: two of a controller's 1,000-state multiReads (one read while the other's answer is decoded), or
 * twenty 100-write multis, tens of milliseconds of the server's work.
 */
export const DEFAULT_MAX_OPS_IN_FLIGHT = 2000
/** Room for the reply header and Stat around a znode of jute.maxbuffer bytes (ZooKeeper's jute.maxbuffer.extrasize). */
const FRAME_HEADROOM_BYTES = 1024
/** SetWatches is split so that no packet comes near the server's jute.maxbuffer (ClientCnxn: 128 KiB). */
const SET_WATCHES_MAX_PATH_BYTES = 128 * 1024
const MAX_XID = 0x7fffffff
const RECONNECT_BACKOFF_START_MS = 100
const RECONNECT_BACKOFF_MAX_MS = 1000
/** The version that matches any version in delete, setData, check and multi. Every other value is compared exactly; 0 included. */
export const ANY_VERSION = -1

export type ZooKeeperState = 'connecting' | 'connected' | 'disconnected' | 'expired' | 'auth-failed' | 'closed'

export interface ZooKeeperClientOptions {
  /** Requested session timeout; the server clamps it to [2, 20] × its tickTime. Default 18000 (Kafka's). */
  sessionTimeoutMs?: number
  /** ZooKeeperClient.connect gives up when no server answered within this (Kafka's zookeeper.connection.timeout.ms). Default: the session timeout. */
  connectTimeoutMs?: number
  /** Largest znode payload expected (jute.maxbuffer); reply frames above it plus 1 KiB are refused before any allocation. Default 1 MiB. */
  maxBufferBytes?: number
  /** Accept a read-only server (one cut off from its quorum). Default false: Kafka needs writes. */
  canBeReadOnly?: boolean
  /** Resume this session (with sessionPassword) instead of creating one. */
  sessionId?: bigint
  sessionPassword?: Buffer
  /**
   * Ping at least this often, even when a third of the session timeout is longer (a broker's lease needs
   * to know within about a second whether ZooKeeper still answers it; see msSinceLastReceived).
   * Default: a third of the session timeout, as the Java client.
   */
  pingIntervalMs?: number
  /** Operations written and not yet answered, at most (DEFAULT_MAX_OPS_IN_FLIGHT); one request larger than it goes alone. */
  maxOpsInFlight?: number
  logger?: Logger
}

export interface ConnectedInfo {
  sessionId: bigint
  negotiatedTimeoutMs: number
  /** 'host:port' of the server this connection is to. */
  server: string
  readOnly: boolean
  /** True when this connection resumed the session of an earlier one. */
  resumed: boolean
}

export interface ZooKeeperClientEvents {
  /** Every state change. */
  state: [state: ZooKeeperState]
  connected: [info: ConnectedInfo]
  disconnected: [reason: string]
  /** The server expired the session: ephemerals and watches are gone; this client is dead. */
  'session-expired': []
  'auth-failed': []
  closed: []
}

export interface CreateOptions {
  /** Default PERSISTENT. */
  mode?: CreateMode
  /** Default OPEN_ACL_UNSAFE. */
  acl?: readonly ACL[]
}

export interface WatchOption {
  /**
   * One-shot watch: called at most once, when the node (or its children) next changes, or with type
   * 'None' when the session ends first. Registered only when the read succeeds (exists: also when the
   * node is absent); after a CONNECTIONLOSS the caller reads again to watch.
   */
  watch?: Watcher
}

export interface NodeData {
  data: Buffer
  stat: Stat
}

export type Data = Buffer | string

export interface WatchHandle {
  /** Stops delivering changes; the pending server watch is left to fire into nothing. */
  stop(): void
}

export interface WatchLoopOptions {
  /** Called once when the loop ends on its own: the session expired or the client closed (event.type 'None'), or a read failed with an error other than CONNECTIONLOSS. */
  onEnd?: (reason: WatchEvent | ZooKeeperError) => void
}

interface Pending {
  xid: number
  type: number
  packet: Buffer
  path: string | undefined
  /** Decodes the body of a successful reply. */
  decode: (r: JuteReader) => unknown
  /** Turns an error code into a value instead of a rejection (exists → null on NONODE). */
  recover?: (err: number) => { value: unknown } | undefined
  /** Runs as the reply is processed, before anything that follows it on the stream (watch registration). */
  onReply?: (err: number) => void
  resolve: (v: unknown) => void
  reject: (e: Error) => void
  /** When it was written (Date.now()): its reply dates the server's contact (msSinceContact). */
  sentAt?: number
  /** The operations it carries (a multi's ops, a multiRead's reads; 1 otherwise): its share of the in-flight bound. */
  ops: number
}

interface AuthInfo {
  scheme: string
  auth: Buffer
}

interface PendingAuth {
  resolve: () => void
  reject: (e: Error) => void
}

function toBuffer(data: Data | undefined): Buffer {
  if (data === undefined) return Buffer.alloc(0)
  return typeof data === 'string' ? Buffer.from(data, 'utf8') : data
}

function checkVersion(version: number, path: string): void {
  if (!Number.isInteger(version) || version < ANY_VERSION || version > MAX_XID) {
    throw new ZooKeeperError(ZooKeeperErrorCode.BADARGUMENTS, path, `version must be an integer >= -1, got ${String(version)}`)
  }
}

function checkMode(mode: number, path: string): void {
  if (!Object.values(CreateMode).includes(mode as CreateMode)) throw new ZooKeeperError(ZooKeeperErrorCode.BADARGUMENTS, path, `unsupported create mode ${mode}`)
}

export class ZooKeeperClient extends EventEmitter<ZooKeeperClientEvents> {
  readonly chroot: string
  private readonly servers: ServerAddress[]
  private readonly paths: Chroot
  private readonly requestedTimeoutMs: number
  private readonly maxFrameBytes: number
  private readonly canBeReadOnly: boolean
  private readonly log: Logger

  private currentState: ZooKeeperState = 'connecting'
  private sessionIdValue: bigint
  private password: Buffer
  private negotiatedTimeout = 0
  private readOnlyValue = false
  private lastZxid = 0n
  private xid = 0
  private everConnected = false

  private socket: Socket | undefined
  /** The socket corked until the end of this turn (write), if any. */
  private corked: Socket | undefined
  /** Increases per connection attempt; callbacks of an older socket see a different value and do nothing. */
  private generation = 0
  private established = false
  private serverIndex: number
  private failedAttempts = 0
  private serverLabel: string | undefined
  private lastSend = 0
  private lastRecv = 0
  /** Send times of the pings not answered yet (answered in order), and of the newest answered one. */
  private readonly pingsInFlight: number[] = []
  private lastPingAnsweredSentAt = 0
  private readonly pingIntervalMs: number | undefined
  private heartbeatTimer: NodeJS.Timeout | undefined
  private attemptTimer: NodeJS.Timeout | undefined
  private reconnectTimer: NodeJS.Timeout | undefined
  /** testHooks.pause() */
  private paused = false
  private reconnectDeferred = false
  private closing = false

  /**
   * Not yet sent, in order, from queuedHead on: issued while not connected, or while maxOpsInFlight were in
   * flight. An index rather than shift(): a burst of 100,000 creates can wait here, and shift() copies the
   * array each time once it is large (a loop of 100,000 shift() calls took 4.4 s on this machine).
   */
  private queued: Pending[] = []
  private queuedHead = 0
  /** Sent, in xid order, waiting for their reply. */
  private readonly inFlight = new Map<number, Pending>()
  /** The ops of inFlight's requests. */
  private opsInFlight = 0
  private readonly maxOpsInFlight: number
  private readonly authInfo: AuthInfo[] = []
  private readonly pendingAuth: PendingAuth[] = []
  /** addAuth calls made while not connected: answered once the credentials go out. */
  private deferredAuth: Array<{ info: AuthInfo } & PendingAuth> = []
  private readonly watches = new WatchRegistry()

  /** Connects and resolves once the first connection is up; rejects (and closes) after connectTimeoutMs. */
  static async connect(connectString: string, options: ZooKeeperClientOptions = {}): Promise<ZooKeeperClient> {
    const client = new ZooKeeperClient(connectString, options)
    try {
      await client.waitUntilConnected(options.connectTimeoutMs ?? options.sessionTimeoutMs ?? DEFAULT_SESSION_TIMEOUT_MS)
    } catch (err) {
      await client.close()
      throw err
    }
    return client
  }

  /** Starts connecting at once; requests issued before the connection is up wait for it. */
  constructor(connectString: string, options: ZooKeeperClientOptions = {}) {
    super()
    const parsed = parseConnectString(connectString)
    this.servers = parsed.servers
    // Shuffled like ZooKeeper's StaticHostProvider, so that clients spread over the ensemble.
    for (let i = this.servers.length - 1; i > 0; i--) {
      const j = Math.floor(Math.random() * (i + 1))
      ;[this.servers[i], this.servers[j]] = [this.servers[j]!, this.servers[i]!]
    }
    this.serverIndex = 0
    this.chroot = parsed.chroot
    this.paths = new Chroot(parsed.chroot)
    this.requestedTimeoutMs = options.sessionTimeoutMs ?? DEFAULT_SESSION_TIMEOUT_MS
    this.pingIntervalMs = options.pingIntervalMs
    this.maxOpsInFlight = options.maxOpsInFlight ?? DEFAULT_MAX_OPS_IN_FLIGHT
    this.maxFrameBytes = (options.maxBufferBytes ?? DEFAULT_MAX_BUFFER_BYTES) + FRAME_HEADROOM_BYTES
    this.canBeReadOnly = options.canBeReadOnly ?? false
    this.log = options.logger ?? silentLogger()
    this.sessionIdValue = options.sessionId ?? 0n
    this.password = options.sessionPassword ?? Buffer.alloc(SESSION_PASSWORD_LENGTH)
    if (!Number.isInteger(this.requestedTimeoutMs) || this.requestedTimeoutMs <= 0) throw new Error(`invalid session timeout ${this.requestedTimeoutMs}`)
    setImmediate(() => this.attempt())
  }

  /**
   * Milliseconds since the newest ping or request the server has answered was SENT (or since this connection was
   * established); Infinity while no connection is established. A broker's lease is judged from it, and
   * from send times, because an answer read after this process was stopped proves nothing about the
   * time it was stopped.
   */
  get msSinceContact(): number {
    return this.established ? Date.now() - this.lastPingAnsweredSentAt : Infinity
  }

  get state(): ZooKeeperState {
    return this.currentState
  }
  /** 0n until the first connection. */
  get sessionId(): bigint {
    return this.sessionIdValue
  }
  /** With sessionId, what another client needs to resume (or close) this session. */
  get sessionPassword(): Buffer {
    return Buffer.from(this.password)
  }
  get negotiatedTimeoutMs(): number {
    return this.negotiatedTimeout
  }
  /** 'host:port' of the server while connected. */
  get connectedServer(): string | undefined {
    return this.currentState === 'connected' ? this.serverLabel : undefined
  }
  get isReadOnly(): boolean {
    return this.readOnlyValue
  }
  /** Number of (path, kind) watches registered; for tests and metrics. */
  get watchCount(): number {
    return this.watches.size
  }

  private get terminal(): boolean {
    return this.currentState === 'expired' || this.currentState === 'auth-failed' || this.currentState === 'closed'
  }

  /** Resolves when connected; rejects after timeoutMs, or when the client dies first. */
  waitUntilConnected(timeoutMs: number): Promise<void> {
    if (this.currentState === 'connected') return Promise.resolve()
    if (this.terminal) return Promise.reject(this.deadError())
    return new Promise((resolve, reject) => {
      const onState = (state: ZooKeeperState): void => {
        if (state === 'connected') finish()
        else if (state === 'expired' || state === 'auth-failed' || state === 'closed') finish(this.deadError())
      }
      const timer = setTimeout(() => {
        const where = this.servers.map((s) => `${s.host}:${s.port}`).join(',')
        finish(new ZooKeeperError(ZooKeeperErrorCode.CONNECTIONLOSS, undefined, `no ZooKeeper server of ${where} answered within ${timeoutMs} ms`))
      }, timeoutMs)
      const finish = (err?: Error): void => {
        clearTimeout(timer)
        this.off('state', onState)
        if (err) reject(err)
        else resolve()
      }
      this.on('state', onState)
    })
  }

  // ---------------------------------------------------------------- operations

  /** Creates a znode; resolves with its path (with the counter for sequential modes). */
  async create(path: string, data?: Data, options: CreateOptions = {}): Promise<string> {
    return (await this.createNode(OpCode.create, path, data, options)).path
  }

  /** create2: creates a znode and returns its path and Stat. */
  async create2(path: string, data?: Data, options: CreateOptions = {}): Promise<{ path: string; stat: Stat }> {
    const { path: created, stat } = await this.createNode(OpCode.create2, path, data, options)
    return { path: created, stat: stat! }
  }

  private createNode(type: number, path: string, data: Data | undefined, options: CreateOptions): Promise<{ path: string; stat: Stat | undefined }> {
    const mode = options.mode ?? CreateMode.PERSISTENT
    checkMode(mode, path)
    validatePath(path, isSequential(mode))
    const payload = toBuffer(data)
    const acl = options.acl ?? OPEN_ACL_UNSAFE
    return this.request(type, path, (w) => writeCreate(w, this.paths.toServer(path), payload, acl, mode), (r) => ({
      path: this.paths.toClient(r.ustring()),
      stat: type === OpCode.create2 ? readStat(r) : undefined,
    }))
  }

  /** Deletes a znode if its version is `version` (ANY_VERSION: whatever it is). */
  async delete(path: string, version: number): Promise<void> {
    validatePath(path)
    checkVersion(version, path)
    return this.request(OpCode.delete, path, (w) => writePathVersion(w, this.paths.toServer(path), version), () => undefined)
  }

  /**
   * The node's Stat, or null when it does not exist. A watch fires on create, delete or data change;
   * it is set whether or not the node exists.
   */
  async exists(path: string, options: WatchOption = {}): Promise<Stat | null> {
    validatePath(path)
    const watch = options.watch
    return this.request(OpCode.exists, path, (w) => writePathWatch(w, this.paths.toServer(path), watch !== undefined), readStat, {
      recover: (err) => (err === ZooKeeperErrorCode.NONODE ? { value: null } : undefined),
      onReply:
        watch === undefined
          ? undefined
          : (err) => {
              if (err === ZooKeeperErrorCode.OK) this.watches.add('data', path, watch)
              else if (err === ZooKeeperErrorCode.NONODE) this.watches.add('exist', path, watch)
            },
    })
  }

  /** Data and Stat; NONODE when absent. A watch fires on data change or delete. */
  async getData(path: string, options: WatchOption = {}): Promise<NodeData> {
    validatePath(path)
    return this.request(
      OpCode.getData,
      path,
      (w) => writePathWatch(w, this.paths.toServer(path), options.watch !== undefined),
      (r) => ({ data: r.buffer(), stat: readStat(r) }),
      { onReply: this.registerOnSuccess('data', path, options.watch) },
    )
  }

  /**
   * Reads many nodes in one request (ZooKeeper 3.6+ multiRead; no watches). Not a transaction: each
   * read answers on its own, with the node or the code it failed with (NONODE for a missing one). A
   * server without multiRead rejects the whole request with UNIMPLEMENTED. Thousands of getData
   * requests cost the server and this process a request each; one multiRead of them costs one.
   */
  async getDataMany(paths: readonly string[]): Promise<Array<NodeData | { err: number }>> {
    for (const path of paths) validatePath(path)
    return this.request(
      OpCode.multiRead,
      undefined,
      (w) => writeMultiGetData(w, paths, (p) => this.paths.toServer(p)),
      (r) => {
        const results = readMultiGetDataResponse(r)
        if (results.length !== paths.length) throw new ZooKeeperError(ZooKeeperErrorCode.MARSHALLINGERROR, undefined, `multiRead of ${paths.length} reads answered with ${results.length} results`)
        return results.map((x) => (x.ok ? { data: x.data, stat: x.stat } : { err: x.err }))
      },
      { ops: paths.length },
    )
  }

  /** Writes data if the node's version is `version` (ANY_VERSION: unconditionally); resolves with the new Stat. */
  async setData(path: string, data: Data, version: number): Promise<Stat> {
    validatePath(path)
    checkVersion(version, path)
    const payload = toBuffer(data)
    return this.request(OpCode.setData, path, (w) => writeSetData(w, this.paths.toServer(path), payload, version), readStat)
  }

  /** Child names (unordered). A watch fires when a child is added or removed, or the node is deleted. */
  async getChildren(path: string, options: WatchOption = {}): Promise<string[]> {
    validatePath(path)
    return this.request(OpCode.getChildren, path, (w) => writePathWatch(w, this.paths.toServer(path), options.watch !== undefined), (r) => r.stringVector(), {
      onReply: this.registerOnSuccess('child', path, options.watch),
    })
  }

  /** getChildren2: child names and the parent's Stat. */
  async getChildren2(path: string, options: WatchOption = {}): Promise<{ children: string[]; stat: Stat }> {
    validatePath(path)
    return this.request(
      OpCode.getChildren2,
      path,
      (w) => writePathWatch(w, this.paths.toServer(path), options.watch !== undefined),
      (r) => ({ children: r.stringVector(), stat: readStat(r) }),
      { onReply: this.registerOnSuccess('child', path, options.watch) },
    )
  }

  /** Waits until the server this client talks to has caught up with the leader for path. */
  async sync(path: string): Promise<void> {
    validatePath(path)
    return this.request(OpCode.sync, path, (w) => w.ustring(this.paths.toServer(path)), () => undefined)
  }

  /**
   * Applies all ops atomically or none. Versions are compared exactly (0 is version 0; only -1 means
   * any). Resolves with one result per op; when any op fails, rejects with a ZooKeeperMultiError naming
   * the first failing op and carrying every op's code.
   */
  async multi(ops: readonly MultiOp[]): Promise<MultiOpResult[]> {
    for (const op of ops) {
      if (op.type === 'create') {
        checkMode(op.mode, op.path)
        validatePath(op.path, isSequential(op.mode))
      } else {
        validatePath(op.path)
        checkVersion(op.version, op.path)
      }
    }
    const paths = ops.map((op) => op.path)
    return this.request(
      OpCode.multi,
      undefined,
      (w) => writeMulti(w, ops, (p) => this.paths.toServer(p)),
      (r) => {
        const results = readMultiResponse(r, (p) => this.paths.toClient(p))
        if (results.length !== ops.length) throw new ZooKeeperError(ZooKeeperErrorCode.MARSHALLINGERROR, undefined, `multi of ${ops.length} ops answered with ${results.length} results`)
        const failure = multiFailure(results, paths)
        if (failure !== undefined) throw failure
        return results.map((x) => (x.ok ? x.result : undefined)) as MultiOpResult[]
      },
      { ops: ops.length },
    )
  }

  /**
   * Adds credentials to the session (AuthPacket, xid -4), e.g. ('digest', 'user:password'). They are
   * kept and sent again on every reconnect, even when this promise rejects with CONNECTIONLOSS. A server
   * answering AUTHFAILED ends the session ('auth-failed').
   */
  addAuth(scheme: string, auth: Data): Promise<void> {
    if (this.terminal || this.closing) return Promise.reject(this.deadError())
    const info = { scheme, auth: toBuffer(auth) }
    this.authInfo.push(info)
    if (this.currentState !== 'connected') {
      // Sent with the others as soon as the connection is up; settled by the server's answer then.
      return new Promise((resolve, reject) => this.deferredAuth.push({ info, resolve, reject }))
    }
    return new Promise((resolve, reject) => {
      this.pendingAuth.push({ resolve, reject })
      this.write(encodeRequest(Xid.auth, OpCode.auth, (w) => writeAuth(w, info.scheme, info.auth)))
    })
  }

  /**
   * Ends the session: closeSession, so that the server deletes this session's ephemerals at once. When
   * not connected, the session is simply abandoned (the server expires it after the timeout).
   */
  async close(): Promise<void> {
    if (this.terminal || this.closing) return
    this.closing = true
    clearTimeout(this.reconnectTimer)
    if (this.currentState === 'connected') {
      // Replies come in order: those still in flight or waiting to be sent are answered first, then the closeSession.
      const xid = this.nextXid()
      const done = new Promise<void>((resolve) => {
        this.queued.push({
          xid,
          type: OpCode.closeSession,
          packet: encodeRequest(xid, OpCode.closeSession),
          path: undefined,
          decode: () => undefined,
          resolve: () => resolve(),
          reject: () => resolve(),
          ops: 1,
        })
        this.sendQueued()
      })
      const limit = Math.min(this.negotiatedTimeout || this.requestedTimeoutMs, 5000)
      let timer: NodeJS.Timeout | undefined
      await Promise.race([done, new Promise<void>((resolve) => (timer = setTimeout(resolve, limit)))])
      clearTimeout(timer)
    }
    this.die('closed', ZooKeeperErrorCode.SESSIONEXPIRED, 'client closed')
  }

  // ---------------------------------------------------------------- helpers for Kafka's controller

  /**
   * Creates path and every missing ancestor as persistent znodes (data on the last one only); existing
   * nodes are left as they are. The creates are pipelined (the server applies a session's requests in
   * order): one round trip. Resolves with whether path itself was created.
   */
  async mkdirp(path: string, data?: Data): Promise<boolean> {
    validatePath(path)
    if (path === '/') return false
    const prefixes = pathPrefixes(path)
    const results = await Promise.allSettled(prefixes.map((p, i) => this.create(p, i === prefixes.length - 1 ? data : undefined)))
    let created = false
    for (let i = 0; i < results.length; i++) {
      const r = results[i]!
      if (r.status === 'fulfilled') {
        if (i === results.length - 1) created = true
      } else if (!isZooKeeperError(r.reason, ZooKeeperErrorCode.NODEEXISTS)) {
        throw r.reason
      }
    }
    return created
  }

  /** mkdirp of the chroot itself (paths outside the chroot are otherwise unreachable). */
  async ensureChroot(): Promise<void> {
    if (this.chroot === '') return
    for (const p of pathPrefixes(this.chroot)) {
      try {
        await this.request(OpCode.create, p, (w) => writeCreate(w, p, Buffer.alloc(0), OPEN_ACL_UNSAFE, CreateMode.PERSISTENT), () => undefined)
      } catch (err) {
        if (!isZooKeeperError(err, ZooKeeperErrorCode.NODEEXISTS)) throw err
      }
    }
  }

  /**
   * Creates path with data, or when it already exists reads what is there (Kafka's createOrGet pattern,
   * e.g. /cluster/id). `created` tells which happened.
   */
  async createOrGet(path: string, data: Data, options: CreateOptions = {}): Promise<{ created: boolean; data: Buffer; stat: Stat }> {
    for (let attempt = 0; ; attempt++) {
      try {
        const { stat } = await this.create2(path, data, options)
        return { created: true, data: toBuffer(data), stat }
      } catch (err) {
        if (!isZooKeeperError(err, ZooKeeperErrorCode.NODEEXISTS)) throw err
      }
      try {
        const existing = await this.getData(path)
        return { created: false, ...existing }
      } catch (err) {
        // Deleted between our create and our read: try again, a few times.
        if (!isZooKeeperError(err, ZooKeeperErrorCode.NONODE) || attempt >= 4) throw err
      }
    }
  }

  /**
   * A multi guarded by a version check, as Kafka's controller wraps every write:
   * [check(checkPath, checkVersion), ...ops]. Resolves with the results of `ops` (the check's left out).
   * A ZooKeeperMultiError with opIndex 0 (BADVERSION, or NONODE) means the guard failed: for
   * /controller_epoch, another controller has taken over (Kafka's ControllerMovedException).
   */
  async conditionalMulti(checkPath: string, checkVersion: number, ops: readonly MultiOp[]): Promise<MultiOpResult[]> {
    const results = await this.multi([{ type: 'check', path: checkPath, version: checkVersion }, ...ops])
    return results.slice(1)
  }

  /**
   * The re-arm pattern for one-shot watches, packaged: reads path with a watch and calls onChange with
   * the data (null while the node does not exist); each time the watch fires, reads again with a new
   * watch and calls onChange again. Reads failing with CONNECTIONLOSS are retried on the next connection.
   * Consecutive calls may carry the same data (a change and its revert). Ends with onEnd when the session
   * does.
   */
  watchData(path: string, onChange: (node: NodeData | null) => void, options: WatchLoopOptions = {}): WatchHandle {
    validatePath(path)
    return this.watchLoop(
      async (watch) => {
        try {
          return await this.getData(path, { watch })
        } catch (err) {
          if (!isZooKeeperError(err, ZooKeeperErrorCode.NONODE)) throw err
        }
        // Absent: watch for its creation. If it appeared in between, exists finds it and the data
        // watch it sets fires on the next change; read it now.
        const stat = await this.exists(path, { watch })
        return stat === null ? null : await this.getData(path, { watch })
      },
      onChange,
      options,
    )
  }

  /** watchData for the child list: onChange gets the children (null while the node does not exist). */
  watchChildren(path: string, onChange: (children: string[] | null) => void, options: WatchLoopOptions = {}): WatchHandle {
    validatePath(path)
    return this.watchLoop(
      async (watch) => {
        try {
          return await this.getChildren(path, { watch })
        } catch (err) {
          if (!isZooKeeperError(err, ZooKeeperErrorCode.NONODE)) throw err
        }
        const stat = await this.exists(path, { watch })
        return stat === null ? null : await this.getChildren(path, { watch })
      },
      onChange,
      options,
    )
  }

  private watchLoop<T>(read: (watch: Watcher) => Promise<T>, onChange: (value: T) => void, options: WatchLoopOptions): WatchHandle {
    let stopped = false
    let reading = false
    let again = false
    const end = (reason: WatchEvent | ZooKeeperError): void => {
      if (stopped) return
      stopped = true
      try {
        options.onEnd?.(reason)
      } catch (err) {
        this.log.error({ err }, 'zookeeper watch onEnd callback threw')
      }
    }
    // One watcher function for the whole loop: registering it again on the same path is a no-op, so
    // overlapping reads never stack up callbacks.
    const watcher: Watcher = (event) => {
      if (event.type === 'None') end(event)
      else arm()
    }
    const arm = (): void => {
      if (stopped) return
      if (reading) {
        again = true
        return
      }
      reading = true
      again = false
      read(watcher).then(
        (value) => {
          reading = false
          if (stopped) return
          try {
            onChange(value)
          } catch (err) {
            this.log.error({ err }, 'zookeeper watch callback threw')
          }
          if (again) arm()
        },
        (err: unknown) => {
          reading = false
          if (stopped) return
          if (isZooKeeperError(err, ZooKeeperErrorCode.CONNECTIONLOSS) && !this.terminal) {
            arm() // waits in the queue for the next connection
            return
          }
          end(err instanceof ZooKeeperError ? err : new ZooKeeperError(ZooKeeperErrorCode.SYSTEMERROR, undefined, String(err)))
        },
      )
    }
    arm()
    return {
      stop: () => {
        stopped = true
      },
    }
  }

  // ---------------------------------------------------------------- test hooks

  /**
   * For tests only. pause() simulates a stopped process (SIGSTOP, a long GC pause): no pings, a silent
   * connection is not given up, and a dropped one is not replaced until resume(). So the server expires
   * the session after its timeout, and the client learns it when it resumes and reconnects.
   * dropConnection() breaks the TCP connection as a network failure would; the session survives.
   */
  readonly testHooks = {
    pause: (): void => {
      this.paused = true
    },
    resume: (): void => {
      this.paused = false
      if (this.reconnectDeferred) {
        this.reconnectDeferred = false
        this.scheduleAttempt()
      }
    },
    /** Operations written and not yet answered. */
    opsInFlight: (): number => this.opsInFlight,
    dropConnection: (): void => {
      if (this.socket === undefined) return
      if (this.established) this.connectionLost('connection dropped by test hook')
      else this.attemptFailed('connection dropped by test hook')
    },
  }

  // ---------------------------------------------------------------- requests

  private registerOnSuccess(kind: WatchKind, path: string, watch: Watcher | undefined): ((err: number) => void) | undefined {
    if (watch === undefined) return undefined
    return (err) => {
      if (err === ZooKeeperErrorCode.OK) this.watches.add(kind, path, watch)
    }
  }

  private nextXid(): number {
    this.xid = this.xid >= MAX_XID ? 1 : this.xid + 1
    return this.xid
  }

  private request<T>(
    type: number,
    path: string | undefined,
    body: (w: JuteWriter) => void,
    decode: (r: JuteReader) => T,
    extra: { recover?: Pending['recover']; onReply?: Pending['onReply']; ops?: number } = {},
  ): Promise<T> {
    if (this.terminal || this.closing) return Promise.reject(this.deadError(path))
    return new Promise<T>((resolve, reject) => {
      const xid = this.nextXid()
      const pending: Pending = {
        xid,
        type,
        packet: encodeRequest(xid, type, body),
        path,
        decode,
        recover: extra.recover,
        onReply: extra.onReply,
        resolve: resolve as (v: unknown) => void,
        reject,
        ops: extra.ops ?? 1,
      }
      this.queued.push(pending)
      if (this.currentState === 'connected') this.sendQueued()
    })
  }

  /** Sends what waits, in order, while the in-flight bound allows (a request over it goes when nothing else is out). */
  private sendQueued(): void {
    while (this.queuedHead < this.queued.length) {
      const next = this.queued[this.queuedHead]!
      if (this.opsInFlight > 0 && this.opsInFlight + next.ops > this.maxOpsInFlight) break
      this.queuedHead++
      this.send(next)
    }
    // Sent entries are dropped once they are half the array (each costs one copy of what remains).
    if (this.queuedHead === this.queued.length) {
      this.queued = []
      this.queuedHead = 0
    } else if (this.queuedHead >= 1024 && this.queuedHead * 2 >= this.queued.length) {
      this.queued = this.queued.slice(this.queuedHead)
      this.queuedHead = 0
    }
  }

  private send(p: Pending): void {
    this.inFlight.set(p.xid, p)
    this.opsInFlight += p.ops
    this.write(p.packet)
    p.sentAt = this.lastSend
  }

  /**
   * Packets written in one turn of the event loop leave in one write: a controller's thousands of
   * requests in a burst cost one system call per turn instead of one each.
   */
  private write(packet: Buffer): void {
    const socket = this.socket
    if (socket !== undefined) {
      if (this.corked !== socket) {
        this.corked = socket
        socket.cork()
        process.nextTick(() => {
          if (this.corked === socket) this.corked = undefined
          socket.uncork()
        })
      }
      socket.write(packet)
    }
    this.lastSend = Date.now()
  }

  private deadError(path?: string): ZooKeeperError {
    if (this.currentState === 'auth-failed') return new ZooKeeperError(ZooKeeperErrorCode.AUTHFAILED, path, 'authentication failed; the client is closed')
    if (this.currentState === 'expired') return new ZooKeeperError(ZooKeeperErrorCode.SESSIONEXPIRED, path, 'the session expired; create a new client')
    return new ZooKeeperError(ZooKeeperErrorCode.SESSIONEXPIRED, path, 'client closed')
  }

  // ---------------------------------------------------------------- connection

  private setState(state: ZooKeeperState): void {
    if (this.currentState === state) return
    this.currentState = state
    this.emit('state', state)
  }

  private attempt(): void {
    if (this.terminal || this.closing) return
    const server = this.servers[this.serverIndex % this.servers.length]!
    this.serverIndex = (this.serverIndex + 1) % this.servers.length
    const generation = ++this.generation
    this.established = false
    this.serverLabel = server.host.includes(':') ? `[${server.host}]:${server.port}` : `${server.host}:${server.port}`
    this.setState(this.everConnected ? 'disconnected' : 'connecting')
    this.log.debug({ server: this.serverLabel }, 'zookeeper: connecting')

    const socket = netConnect({ host: server.host, port: server.port })
    socket.setNoDelay(true)
    this.socket = socket
    const frames = new FrameReader(this.maxFrameBytes)
    // Java's connectTimeout: the session timeout shared among the servers, so one full round fits in it.
    const attemptMs = Math.max(1000, Math.floor((this.negotiatedTimeout || this.requestedTimeoutMs) / this.servers.length))
    this.attemptTimer = setTimeout(() => {
      if (generation === this.generation && !this.established) this.attemptFailed(`no answer from ${this.serverLabel} within ${attemptMs} ms`)
    }, attemptMs)

    socket.on('connect', () => {
      if (generation !== this.generation) return
      socket.write(
        encodeConnectRequest({
          lastZxidSeen: this.lastZxid,
          timeoutMs: this.requestedTimeoutMs,
          sessionId: this.sessionIdValue,
          password: this.password,
          readOnly: this.canBeReadOnly,
        }),
      )
    })
    socket.on('data', (chunk: Buffer) => {
      if (generation !== this.generation) return
      let list: Buffer[]
      try {
        list = frames.push(chunk)
      } catch (err) {
        const detail = err instanceof FrameTooLargeError ? err.message : String(err)
        this.log.warn({ server: this.serverLabel, err: detail }, 'zookeeper: refusing a frame, dropping the connection')
        if (this.established) this.connectionLost(detail)
        else this.attemptFailed(detail)
        return
      }
      for (const frame of list) {
        if (generation !== this.generation) return
        this.lastRecv = Date.now()
        if (!this.established) this.onHandshake(frame)
        else this.onFrame(frame)
      }
    })
    const onGone = (err?: Error): void => {
      if (generation !== this.generation) return
      const why = err !== undefined ? err.message : `${this.serverLabel} closed the connection`
      if (this.established) this.connectionLost(why)
      else this.attemptFailed(why)
    }
    socket.on('error', onGone)
    socket.on('close', () => onGone())
  }

  private attemptFailed(reason: string): void {
    this.log.debug({ server: this.serverLabel, reason }, 'zookeeper: connection attempt failed')
    this.teardownSocket()
    this.failedAttempts++
    this.scheduleAttempt()
  }

  /** The next server at once; after a full round without success, a growing pause (up to 1 s). */
  private scheduleAttempt(): void {
    if (this.terminal || this.closing) return
    if (this.paused) {
      this.reconnectDeferred = true
      return
    }
    const rounds = Math.floor(this.failedAttempts / this.servers.length)
    const delay = this.failedAttempts % this.servers.length === 0 && rounds > 0 ? Math.min(RECONNECT_BACKOFF_MAX_MS, RECONNECT_BACKOFF_START_MS * 2 ** (rounds - 1)) : 0
    clearTimeout(this.reconnectTimer)
    this.reconnectTimer = setTimeout(() => this.attempt(), delay)
  }

  private onHandshake(frame: Buffer): void {
    let resp
    try {
      resp = decodeConnectResponse(frame)
    } catch (err) {
      this.attemptFailed(`bad ConnectResponse: ${String(err)}`)
      return
    }
    clearTimeout(this.attemptTimer)
    if (resp.timeoutMs <= 0) {
      this.log.warn({ sessionId: this.sessionIdValue.toString(16) }, 'zookeeper: session expired')
      this.teardownSocket()
      this.die('expired', ZooKeeperErrorCode.SESSIONEXPIRED, 'the session expired')
      return
    }
    const resumed = this.everConnected || this.sessionIdValue !== 0n
    this.pingsInFlight.length = 0
    this.lastPingAnsweredSentAt = Date.now()
    this.established = true
    this.everConnected = true
    this.failedAttempts = 0
    this.sessionIdValue = resp.sessionId
    this.password = resp.password
    this.negotiatedTimeout = resp.timeoutMs
    this.readOnlyValue = resp.readOnly
    this.lastSend = Date.now()

    // Order on the wire: credentials, then watches, then what callers queued meanwhile.
    for (const info of this.authInfo) {
      const deferred = this.deferredAuth.find((d) => d.info === info)
      this.pendingAuth.push(deferred ?? { resolve: () => {}, reject: () => {} })
      this.write(encodeRequest(Xid.auth, OpCode.auth, (w) => writeAuth(w, info.scheme, info.auth)))
    }
    this.deferredAuth = []
    this.sendSetWatches()
    this.sendQueued()
    this.scheduleHeartbeat()

    this.log.info({ server: this.serverLabel, sessionId: resp.sessionId.toString(16), timeoutMs: resp.timeoutMs, readOnly: resp.readOnly }, 'zookeeper: connected')
    this.setState('connected')
    this.emit('connected', { sessionId: resp.sessionId, negotiatedTimeoutMs: resp.timeoutMs, server: this.serverLabel!, readOnly: resp.readOnly, resumed })
  }

  private sendSetWatches(): void {
    const lists: Record<WatchKind, string[]> = {
      data: this.watches.paths('data').map((p) => this.paths.toServer(p)),
      exist: this.watches.paths('exist').map((p) => this.paths.toServer(p)),
      child: this.watches.paths('child').map((p) => this.paths.toServer(p)),
    }
    const kinds: WatchKind[] = ['data', 'exist', 'child']
    let batch: Record<WatchKind, string[]> = { data: [], exist: [], child: [] }
    let batchBytes = 0
    const flush = (): void => {
      if (batch.data.length + batch.exist.length + batch.child.length === 0) return
      const b = batch
      this.write(encodeRequest(Xid.setWatches, OpCode.setWatches, (w) => writeSetWatches(w, this.lastZxid, b.data, b.exist, b.child)))
      batch = { data: [], exist: [], child: [] }
      batchBytes = 0
    }
    for (const kind of kinds) {
      for (const p of lists[kind]) {
        batch[kind].push(p)
        batchBytes += Buffer.byteLength(p) + 4
        if (batchBytes >= SET_WATCHES_MAX_PATH_BYTES) flush()
      }
    }
    flush()
  }

  private onFrame(frame: Buffer): void {
    const r = new JuteReader(frame)
    let header
    try {
      header = readReplyHeader(r)
    } catch (err) {
      this.connectionLost(`bad reply header: ${String(err)}`)
      return
    }
    switch (header.xid) {
      case Xid.ping:
        this.lastPingAnsweredSentAt = Math.max(this.lastPingAnsweredSentAt, this.pingsInFlight.shift() ?? 0)
        return
      case Xid.notification: {
        let event
        try {
          event = readWatcherEvent(r)
        } catch (err) {
          this.connectionLost(`bad watcher event: ${String(err)}`)
          return
        }
        this.dispatchWatch(event.type, this.paths.toClient(event.path))
        return
      }
      case Xid.auth: {
        const waiter = this.pendingAuth.shift()
        if (header.err === ZooKeeperErrorCode.OK) {
          waiter?.resolve()
          return
        }
        waiter?.reject(new ZooKeeperError(header.err, undefined, 'authentication failed'))
        if (header.err === ZooKeeperErrorCode.AUTHFAILED) {
          this.teardownSocket()
          this.die('auth-failed', ZooKeeperErrorCode.AUTHFAILED, 'authentication failed')
        }
        return
      }
      case Xid.setWatches:
        if (header.err !== ZooKeeperErrorCode.OK) this.log.warn({ err: header.err }, 'zookeeper: SetWatches failed')
        return
    }
    const oldest = this.inFlight.values().next().value
    if (oldest === undefined || oldest.xid !== header.xid) {
      this.connectionLost(`reply xid ${header.xid} does not match the oldest request in flight (${oldest?.xid ?? 'none'})`)
      return
    }
    this.inFlight.delete(header.xid)
    this.opsInFlight -= oldest.ops
    if (this.established) this.sendQueued()
    // Any answer shows the server heard this session when the request was sent (not only a ping's: a busy
    // client may send no ping for a while).
    if (oldest.sentAt !== undefined && oldest.sentAt > this.lastPingAnsweredSentAt) this.lastPingAnsweredSentAt = oldest.sentAt
    if (header.zxid > 0n) this.lastZxid = header.zxid
    try {
      oldest.onReply?.(header.err)
    } catch (err) {
      this.log.error({ err }, 'zookeeper: watch registration failed')
    }
    if (header.err !== ZooKeeperErrorCode.OK) {
      const recovered = oldest.recover?.(header.err)
      if (recovered !== undefined) oldest.resolve(recovered.value)
      else oldest.reject(new ZooKeeperError(header.err, oldest.path))
      return
    }
    let value: unknown
    try {
      value = oldest.decode(r)
    } catch (err) {
      if (err instanceof ZooKeeperError) {
        oldest.reject(err)
        return
      }
      oldest.reject(new ZooKeeperError(ZooKeeperErrorCode.MARSHALLINGERROR, oldest.path, `malformed reply: ${String(err)}`))
      this.connectionLost(`malformed reply to xid ${header.xid}: ${String(err)}`)
      return
    }
    oldest.resolve(value)
  }

  private dispatchWatch(type: WatchEvent['type'], path: string): void {
    for (const watcher of this.watches.take(type, path)) this.callWatcher(watcher, { type, state: 'SyncConnected', path })
  }

  private callWatcher(watcher: Watcher, event: WatchEvent): void {
    try {
      watcher(event)
    } catch (err) {
      this.log.error({ err, path: event.path }, 'zookeeper watcher threw')
    }
  }

  /** Heartbeat loop: ping after a third of the timeout without sending; give up after two thirds without receiving. */
  private scheduleHeartbeat(): void {
    clearTimeout(this.heartbeatTimer)
    const generation = this.generation
    const pingEvery = Math.max(1, Math.min(this.pingIntervalMs ?? Infinity, Math.floor(this.negotiatedTimeout / 3)))
    const readTimeout = Math.max(1, Math.floor((this.negotiatedTimeout * 2) / 3))
    const tick = (): void => {
      if (generation !== this.generation || !this.established) return
      const now = Date.now()
      if (!this.paused) {
        if (now - this.lastRecv >= readTimeout) {
          this.connectionLost(`no answer from ${this.serverLabel} for ${now - this.lastRecv} ms`)
          return
        }
        if (now - this.lastSend >= pingEvery) {
          this.pingsInFlight.push(now)
          this.write(encodeRequest(Xid.ping, OpCode.ping))
        }
      } else {
        // A paused process notices nothing; keep the silence from counting once it resumes.
        this.lastRecv = now
      }
      const next = Math.min(this.lastSend + pingEvery, this.lastRecv + readTimeout) - now
      this.heartbeatTimer = setTimeout(tick, Math.max(10, this.paused ? pingEvery : next))
    }
    this.heartbeatTimer = setTimeout(tick, pingEvery)
  }

  /** The connection of a live session broke: fail what is in flight, try the next server. */
  private connectionLost(reason: string): void {
    this.log.info({ server: this.serverLabel, reason }, 'zookeeper: disconnected')
    this.teardownSocket()
    this.failInFlight(ZooKeeperErrorCode.CONNECTIONLOSS, reason)
    if (this.closing) {
      this.die('closed', ZooKeeperErrorCode.SESSIONEXPIRED, 'client closed')
      return
    }
    this.setState('disconnected')
    this.emit('disconnected', reason)
    this.scheduleAttempt()
  }

  private teardownSocket(): void {
    this.generation++
    this.established = false
    clearTimeout(this.heartbeatTimer)
    clearTimeout(this.attemptTimer)
    const socket = this.socket
    this.socket = undefined
    socket?.destroy()
  }

  private failInFlight(code: number, detail: string): void {
    const inFlight = [...this.inFlight.values()]
    this.inFlight.clear()
    this.opsInFlight = 0
    for (const p of inFlight) p.reject(new ZooKeeperError(code, p.path, detail))
    const auths = this.pendingAuth.splice(0)
    for (const a of auths) a.reject(new ZooKeeperError(code, undefined, detail))
  }

  /** Terminal: fail everything, end every watch, stop for good. */
  private die(state: 'expired' | 'auth-failed' | 'closed', code: number, detail: string): void {
    if (this.terminal) return
    clearTimeout(this.reconnectTimer)
    this.teardownSocket()
    this.failInFlight(code, detail)
    const queued = this.queued.slice(this.queuedHead)
    this.queued = []
    this.queuedHead = 0
    for (const p of queued) p.reject(new ZooKeeperError(code, p.path, detail))
    for (const d of this.deferredAuth.splice(0)) d.reject(new ZooKeeperError(code, undefined, detail))
    this.setState(state)
    const watchState = state === 'expired' ? 'Expired' : state === 'auth-failed' ? 'AuthFailed' : 'Closed'
    for (const [watcher, path] of this.watches.takeAll()) this.callWatcher(watcher, { type: 'None', state: watchState, path })
    if (state === 'expired') this.emit('session-expired')
    else if (state === 'auth-failed') this.emit('auth-failed')
    else this.emit('closed')
  }
}
