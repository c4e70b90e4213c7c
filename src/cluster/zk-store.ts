// The MetadataStore over ZooKeeper, in Kafka's znode layout (zk-data.ts), with the chroot of
// zookeeper.connect (created when missing, as Kafka does). Kafka's KafkaZkClient is the model:
//
// - Every controller write is one multi: [check(/controller_epoch, epochVersion), ...ops]. BADVERSION or
//   NONODE on the check means another controller took over: ControllerMovedError, nothing applied.
// - Partition states: setData at the expected version (the partition epoch) inside that multi.
// - Campaign: multi [create /controller (ephemeral), setData /controller_epoch = E+1 at the version read];
//   on NODEEXISTS/BADVERSION the outcome is read back (the multi may have been ours before a connection
//   loss): won only when /controller names us and the epoch is E+1.
// - Broker registration: an ephemeral /brokers/ids/<id>, epoch = its czxid. A registration left by an
//   earlier session (a restart within the session timeout) is waited out; one owned by this session
//   (created before a connection loss) is ours.
// - Requests failing with CONNECTIONLOSS are sent again. Where the first attempt may have been applied,
//   the retry's NODEEXISTS/BADVERSION is checked against what was written (same data: it was ours).
// - Session expiry: listeners hear 'expired', a new session is opened (retried until it works or the store
//   is closed), every watch is armed again and called once, listeners hear 'reestablished' (the broker
//   then registers again: a new broker epoch, and runs for controller).
// - Large multis (recursive deletes) are split in chunks below ZooKeeper's 1 MiB request limit, each
//   chunk guarded by the epoch check.
// - Partition state updates are written PARTITION_STATES_PER_MULTI to a multi (one guarded transaction for
//   many partitions, where Kafka pipelines one per partition): at 100,000 partitions a failover's ISR and
//   leader writes are 1,000 ZooKeeper transactions, not 100,000. (First states at creation stay one multi
//   per partition: batched, the 10,000-partition creation of bench:failover-scale saw every broker's session
//   expire, not understood yet.) A multi is all or nothing, so a chunk refused for
//   one partition (a version conflict, a vanished topic) is written again one partition per multi, which
//   sorts the conflicts from the rest; a chunk that may have gone through before a lost connection is
//   recognised per partition by its data.
import { SLICE_MS } from '../domain/main-thread-slices.js'
import type { Logger } from '../observability/logger.js'
import { silentLogger } from '../observability/logger.js'
import {
  CreateMode,
  Op,
  ZooKeeperClient,
  ZooKeeperError,
  ZooKeeperErrorCode,
  ZooKeeperMultiError,
  isZooKeeperError,
  type MultiOp,
  type MultiOpResult,
  type Stat,
  type WatchHandle,
} from './zookeeper/index.js'
import {
  BrokerIdInUseError,
  ControllerMovedError,
  TopicExistsError,
  UnknownTopicError,
  partitionKey,
  type AclResource,
  type BrokerRegistration,
  type StoredAcl,
  type StoredResourceAcls,
  type ConfigChange,
  type ConfigEntityType,
  type ControllerEpoch,
  type LeaderAndIsr,
  type MetadataStore,
  type PartitionState,
  type PartitionStateUpdateResult,
  type PartitionStateWrite,
  type ProducerIdBlock,
  type RegisteredBroker,
  type StoreSessionEvent,
  type TopicAssignment,
  type TopicPartitionId,
  type Unwatch,
} from './metadata-store.js'
import {
  PERSISTENT_ZK_PATHS,
  ZkPaths,
  decodeBrokerRegistration,
  decodeClusterId,
  decodeConfigChange,
  decodeController,
  decodeControllerEpoch,
  decodePartitionState,
  decodeProducerIdBlock,
  decodeTopicAssignment,
  decodeEntityConfig,
  encodeBrokerRegistration,
  encodeClusterId,
  encodeConfigChange,
  encodeController,
  encodeControllerEpoch,
  encodeEntityConfig,
  encodePartitionState,
  encodeProducerIdBlock,
  encodeTopicAssignment,
  decodeLogDirEvent,
  encodeLogDirEvent,
} from './zk-data.js'

export interface ZkStoreOptions {
  /** zookeeper.connect: host:port[,host:port...][/chroot] */
  connect: string
  /** zookeeper.session.timeout.ms */
  sessionTimeoutMs: number
  /** zookeeper.connection.timeout.ms: how long start() waits for a first connection. */
  connectionTimeoutMs: number
  /** Ping ZooKeeper at least this often (broker.heartbeat.interval.ms): the broker's lease reads msSinceContact. */
  pingIntervalMs?: number
  logger?: Logger
}

/** Ops per guarded multi when deleting trees: far below the 1 MiB request limit for Kafka's paths. */
const MULTI_CHUNK = 200
/** Partition states per guarded multi: each op is a path and ~100 bytes of JSON, far below the 1 MiB limit. */
export const PARTITION_STATES_PER_MULTI = 100
/** Partition states per multiRead: ~200 bytes of answer each, far below the 1 MiB packet limit. */
export const PARTITION_STATES_PER_READ = 1000
/** Kafka's ZkNodeChangeNotificationListener purges config change notifications older than this. */
const CONFIG_CHANGE_EXPIRATION_MS = 15 * 60_000
const RECONNECT_BACKOFF_MS = 1000

interface WatchEntry {
  kind: 'children' | 'data'
  path: string
  onChange: () => void
  handle: WatchHandle | undefined
  stopped: boolean
}

export class ZkStore implements MetadataStore {
  readonly kind = 'zookeeper' as const
  readonly description: string
  readonly #options: ZkStoreOptions
  readonly #log: Logger
  #client: ZooKeeperClient | undefined
  #closed = false
  /** The server answered a multiRead with UNIMPLEMENTED (ZooKeeper before 3.6). */
  #multiReadUnsupported = false
  readonly #sessionListeners: ((event: StoreSessionEvent) => void)[] = []
  readonly #watches = new Set<WatchEntry>()
  /** Resolves when a live session is available (replaced while a lost session is being renewed). */
  #ready: Promise<ZooKeeperClient> = Promise.reject(new Error('not started'))

  constructor(options: ZkStoreOptions) {
    this.#options = options
    this.#log = options.logger ?? silentLogger()
    this.description = `ZooKeeper ${options.connect}`
    this.#ready.catch(() => {})
  }

  /** The current session's client (tests: pause it to let the session expire). */
  get client(): ZooKeeperClient | undefined {
    return this.#client
  }

  async start(): Promise<void> {
    const client = await this.#connect(this.#options.connectionTimeoutMs)
    await client.ensureChroot()
    // Kafka's persistent paths; creating them one by one ignores those that exist.
    for (const path of PERSISTENT_ZK_PATHS) await client.mkdirp(path)
    this.#useClient(client)
  }

  async close(): Promise<void> {
    this.#closed = true
    for (const w of this.#watches) {
      w.stopped = true
      w.handle?.stop()
    }
    this.#watches.clear()
    await this.#client?.close()
  }

  onSession(listener: (event: StoreSessionEvent) => void): void {
    this.#sessionListeners.push(listener)
  }

  async #connect(timeoutMs: number): Promise<ZooKeeperClient> {
    return ZooKeeperClient.connect(this.#options.connect, {
      sessionTimeoutMs: this.#options.sessionTimeoutMs,
      connectTimeoutMs: timeoutMs,
      pingIntervalMs: this.#options.pingIntervalMs,
      logger: this.#log,
    })
  }

  #useClient(client: ZooKeeperClient): void {
    this.#client = client
    this.#ready = Promise.resolve(client)
    client.once('session-expired', () => this.#onExpired(client))
  }

  #onExpired(expired: ZooKeeperClient): void {
    if (this.#closed || this.#client !== expired) return
    this.#log.warn({ zookeeper: this.#options.connect }, 'ZooKeeper session expired: registrations and the controller role are gone; opening a new session')
    let resolveReady!: (c: ZooKeeperClient) => void
    this.#ready = new Promise((resolve) => (resolveReady = resolve))
    this.#emit('expired')
    const renew = async (): Promise<void> => {
      while (!this.#closed) {
        try {
          const client = await this.#connect(this.#options.connectionTimeoutMs)
          if (this.#closed) {
            await client.close()
            return
          }
          this.#useClient(client)
          resolveReady(client)
          for (const w of this.#watches) this.#arm(w, client, true)
          this.#log.info({ sessionId: client.sessionId.toString(16) }, 'new ZooKeeper session')
          this.#emit('reestablished')
          return
        } catch (err) {
          this.#log.warn({ err: (err as Error).message }, 'cannot open a new ZooKeeper session; retrying')
          await new Promise((r) => setTimeout(r, RECONNECT_BACKOFF_MS))
        }
      }
    }
    void renew()
  }

  #emit(event: StoreSessionEvent): void {
    for (const l of this.#sessionListeners) {
      try {
        l(event)
      } catch (err) {
        this.#log.error({ err }, 'store session listener failed')
      }
    }
  }

  /**
   * Runs fn against the live session: again after CONNECTIONLOSS (attempt counts up, so fn can tell a
   * retry), and on the next session after SESSIONEXPIRED. Other errors go to the caller.
   */
  async #run<T>(fn: (client: ZooKeeperClient, attempt: number) => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      if (this.#closed) throw new Error('the metadata store is closed')
      const client = await this.#ready
      try {
        return await fn(client, attempt)
      } catch (err) {
        if (isZooKeeperError(err, ZooKeeperErrorCode.CONNECTIONLOSS)) continue
        if (isZooKeeperError(err, ZooKeeperErrorCode.SESSIONEXPIRED) && !this.#closed) {
          // The expiry handler swaps #ready; wait for it if it has not yet.
          if (this.#client === client) await new Promise((r) => setTimeout(r, 50))
          continue
        }
        throw err
      }
    }
  }

  // ---------------------------------------------------------------- watches

  #watch(kind: WatchEntry['kind'], path: string, onChange: () => void): Unwatch {
    const entry: WatchEntry = { kind, path, onChange, handle: undefined, stopped: false }
    this.#watches.add(entry)
    const client = this.#client
    if (client !== undefined && client.state !== 'expired' && client.state !== 'closed') this.#arm(entry, client, false)
    return () => {
      entry.stopped = true
      entry.handle?.stop()
      this.#watches.delete(entry)
    }
  }

  /**
   * Reads with a watch and calls onChange at each change. The first read only sets the watch (callers
   * register before they read, and ZooKeeper orders a session's requests), unless `fireFirst` (a new
   * session: changes may have been missed).
   */
  #arm(entry: WatchEntry, client: ZooKeeperClient, fireFirst: boolean): void {
    let first = !fireFirst
    const onChange = (): void => {
      if (entry.stopped) return
      if (first) {
        first = false
        return
      }
      entry.onChange()
    }
    const onEnd = (reason: unknown): void => {
      if (entry.stopped || this.#closed) return
      const ended = reason as { type?: string; state?: string; message?: string }
      // A lost session is re-armed by the expiry handler; anything else is logged.
      if (ended.type === 'None' && ended.state === 'Expired') return
      if (ended.type === 'None' && ended.state === 'Closed') return
      this.#log.error({ path: entry.path, reason: ended.message ?? ended.state }, 'ZooKeeper watch ended')
    }
    entry.handle =
      entry.kind === 'children' ? client.watchChildren(entry.path, onChange, { onEnd }) : client.watchData(entry.path, onChange, { onEnd })
  }

  // ---------------------------------------------------------------- cluster id

  async getOrCreateClusterId(proposed: string): Promise<string> {
    return this.#run(async (client) => {
      await client.mkdirp('/cluster')
      const { data } = await client.createOrGet(ZkPaths.clusterId, encodeClusterId(proposed))
      return decodeClusterId(data)
    })
  }

  // ---------------------------------------------------------------- brokers

  async registerBroker(registration: BrokerRegistration, waitMs: number): Promise<bigint> {
    const path = ZkPaths.brokerId(registration.id)
    const data = encodeBrokerRegistration(registration)
    const deadline = Date.now() + waitMs
    let warned = false
    for (;;) {
      const result = await this.#run(async (client) => {
        try {
          const { stat } = await client.create2(path, data, { mode: CreateMode.EPHEMERAL })
          return { epoch: stat.czxid }
        } catch (err) {
          if (!isZooKeeperError(err, ZooKeeperErrorCode.NODEEXISTS)) throw err
        }
        const stat = await client.exists(path)
        if (stat === null) return { retry: true }
        // Created by this session before a connection loss: ours.
        if (stat.ephemeralOwner === client.sessionId) return { epoch: stat.czxid }
        return { ownedBy: stat.ephemeralOwner }
      })
      if ('epoch' in result && result.epoch !== undefined) return result.epoch
      if ('ownedBy' in result) {
        if (Date.now() >= deadline) {
          throw new BrokerIdInUseError(
            `${path} is registered by another ZooKeeper session (0x${result.ownedBy!.toString(16)}): another broker uses broker.id ${registration.id}, or a previous run's session has not expired yet`,
          )
        }
        if (!warned) {
          warned = true
          this.#log.warn({ path }, 'broker id registered by an earlier session; waiting for it to expire')
        }
        await new Promise((r) => setTimeout(r, 500))
      }
    }
  }

  async getBroker(id: number): Promise<RegisteredBroker | undefined> {
    return this.#run(async (client) => {
      try {
        const { data, stat } = await client.getData(ZkPaths.brokerId(id))
        return { ...decodeBrokerRegistration(id, data), epoch: stat.czxid }
      } catch (err) {
        if (isZooKeeperError(err, ZooKeeperErrorCode.NONODE)) return undefined
        throw err
      }
    })
  }

  async getLiveBrokers(): Promise<RegisteredBroker[]> {
    const ids = await this.#run((client) => client.getChildren(ZkPaths.brokerIds))
    const brokers = await Promise.all(
      ids
        .filter((s) => /^\d+$/.test(s))
        .map(Number)
        .map(async (id) => {
          try {
            return await this.getBroker(id)
          } catch (err) {
            this.#log.error({ brokerId: id, err: (err as Error).message }, 'unreadable broker registration; ignored')
            return undefined
          }
        }),
    )
    return brokers.filter((b): b is RegisteredBroker => b !== undefined).sort((a, b) => a.id - b.id)
  }

  watchBrokers(onChange: () => void): Unwatch {
    return this.#watch('children', ZkPaths.brokerIds, onChange)
  }

  // ---------------------------------------------------------------- controller

  async getControllerId(): Promise<number> {
    return this.#run(async (client) => {
      try {
        return decodeController((await client.getData(ZkPaths.controller)).data)
      } catch (err) {
        if (isZooKeeperError(err, ZooKeeperErrorCode.NONODE)) return -1
        throw err
      }
    })
  }

  watchController(onChange: () => void): Unwatch {
    return this.#watch('data', ZkPaths.controller, onChange)
  }

  async getControllerEpoch(): Promise<ControllerEpoch | undefined> {
    return this.#run(async (client) => {
      try {
        const { data, stat } = await client.getData(ZkPaths.controllerEpoch)
        return { epoch: decodeControllerEpoch(data), epochVersion: stat.version }
      } catch (err) {
        if (isZooKeeperError(err, ZooKeeperErrorCode.NONODE)) return undefined
        throw err
      }
    })
  }

  async campaign(brokerId: number): Promise<ControllerEpoch> {
    let current = await this.getControllerEpoch()
    if (current === undefined) {
      await this.#run(async (client) => {
        try {
          await client.create(ZkPaths.controllerEpoch, encodeControllerEpoch(0))
        } catch (err) {
          if (!isZooKeeperError(err, ZooKeeperErrorCode.NODEEXISTS)) throw err
        }
      })
      current = (await this.getControllerEpoch())!
    }
    const newEpoch = current.epoch + 1
    const ops = [
      Op.create(ZkPaths.controller, encodeController(brokerId), CreateMode.EPHEMERAL),
      Op.setData(ZkPaths.controllerEpoch, encodeControllerEpoch(newEpoch), current.epochVersion),
    ]
    try {
      const results = await this.#run((client) => client.multi(ops))
      const set = results[1]
      if (set?.type !== 'setData') throw new Error('unexpected multi result')
      return { epoch: newEpoch, epochVersion: set.stat.version }
    } catch (err) {
      if (!(err instanceof ZooKeeperMultiError) || (err.code !== ZooKeeperErrorCode.NODEEXISTS && err.code !== ZooKeeperErrorCode.BADVERSION)) throw err
    }
    // Someone else won, or our multi went through before a lost connection: read the outcome.
    const controller = await this.getControllerId()
    if (controller === brokerId) {
      const now = await this.getControllerEpoch()
      if (now !== undefined && now.epoch === newEpoch) return now
    }
    throw new ControllerMovedError(controller === -1 ? 'the controller registration went away during the election' : `broker ${controller} is the controller`)
  }

  async resign(token: ControllerEpoch): Promise<void> {
    try {
      await this.#guarded(token, [Op.delete(ZkPaths.controller, -1)])
    } catch (err) {
      if (err instanceof ControllerMovedError) return
      if (err instanceof ZooKeeperMultiError && err.code === ZooKeeperErrorCode.NONODE) return
      throw err
    }
  }

  async removeDeadController(controllerId: number): Promise<boolean> {
    // The epoch read before and after /controller: equal versions mean that registration belongs to that
    // epoch (an election writes both in one multi), so the guarded delete cannot remove a newer controller.
    const before = await this.getControllerEpoch()
    if (before === undefined || (await this.getControllerId()) !== controllerId) return false
    const after = await this.getControllerEpoch()
    if (after === undefined || after.epochVersion !== before.epochVersion) return false
    try {
      await this.#guarded(before, [Op.delete(ZkPaths.controller, -1)])
      return true
    } catch (err) {
      if (err instanceof ControllerMovedError) return false
      if (err instanceof ZooKeeperMultiError && err.code === ZooKeeperErrorCode.NONODE) return false
      throw err
    }
  }

  msSinceContact(): number {
    return this.#client?.msSinceContact ?? Infinity
  }

  /** [check(/controller_epoch, token.epochVersion), ...ops]: ControllerMovedError when the check fails. */
  async #guarded(token: ControllerEpoch, ops: readonly MultiOp[], isRetryOk?: (err: ZooKeeperMultiError) => Promise<boolean>): Promise<void> {
    const all = [Op.check(ZkPaths.controllerEpoch, token.epochVersion), ...ops]
    await this.#run(async (client, attempt) => {
      try {
        await client.multi(all)
      } catch (err) {
        if (err instanceof ZooKeeperMultiError) {
          if (err.opIndex === 0) throw new ControllerMovedError(`controller epoch ${token.epoch} is no longer current (${err.codeName} on /controller_epoch)`)
          if (attempt > 0 && isRetryOk !== undefined && (await isRetryOk(err))) return
        }
        throw err
      }
    })
  }

  // ---------------------------------------------------------------- topics

  async getTopicNames(): Promise<string[]> {
    return (await this.#run((client) => client.getChildren(ZkPaths.topics))).sort()
  }

  watchTopics(onChange: () => void): Unwatch {
    return this.#watch('children', ZkPaths.topics, onChange)
  }

  async getTopicAssignments(names: readonly string[]): Promise<Map<string, TopicAssignment>> {
    const out = new Map<string, TopicAssignment>()
    await Promise.all(
      names.map(async (name) => {
        const a = await this.#readTopic(name)
        if (a !== undefined) out.set(name, a)
      }),
    )
    return out
  }

  async #readTopic(name: string): Promise<TopicAssignment | undefined> {
    return this.#run(async (client) => {
      try {
        return decodeTopicAssignment(name, (await client.getData(ZkPaths.topic(name))).data)
      } catch (err) {
        if (isZooKeeperError(err, ZooKeeperErrorCode.NONODE)) return undefined
        throw err
      }
    })
  }

  watchTopicAssignment(name: string, onChange: () => void): Unwatch {
    return this.#watch('data', ZkPaths.topic(name), onChange)
  }

  async createTopic(assignment: TopicAssignment, configs: Readonly<Record<string, string>>): Promise<void> {
    const path = ZkPaths.topic(assignment.name)
    if ((await this.#run((client) => client.exists(path))) !== null) throw new TopicExistsError(`Topic '${assignment.name}' already exists.`)
    await this.#setOrCreate(ZkPaths.configEntity('topics', assignment.name), encodeEntityConfig(configs))
    const data = encodeTopicAssignment(assignment)
    await this.#run(async (client, attempt) => {
      try {
        await client.create(path, data)
      } catch (err) {
        if (!isZooKeeperError(err, ZooKeeperErrorCode.NODEEXISTS)) throw err
        if (attempt > 0 && (await client.getData(path)).data.equals(data)) return
        throw new TopicExistsError(`Topic '${assignment.name}' already exists.`)
      }
    })
  }

  async setTopicAssignment(assignment: TopicAssignment): Promise<void> {
    await this.#run(async (client) => {
      try {
        await client.setData(ZkPaths.topic(assignment.name), encodeTopicAssignment(assignment), -1)
      } catch (err) {
        if (isZooKeeperError(err, ZooKeeperErrorCode.NONODE)) throw new UnknownTopicError(`The topic '${assignment.name}' does not exist.`)
        throw err
      }
    })
  }

  async setTopicIds(token: ControllerEpoch, assignments: readonly TopicAssignment[]): Promise<void> {
    for (const a of assignments) await this.#guarded(token, [Op.setData(ZkPaths.topic(a.name), encodeTopicAssignment(a), -1)])
  }

  async setTopicAssignments(token: ControllerEpoch, assignments: readonly TopicAssignment[]): Promise<void> {
    for (const a of assignments) await this.#guarded(token, [Op.setData(ZkPaths.topic(a.name), encodeTopicAssignment(a), -1)])
  }

  // ---------------------------------------------------------------- partition states

  /**
   * PARTITION_STATES_PER_READ states to a multiRead (ZooKeeper 3.6+): a new controller reads every
   * partition's state, and 100,000 getData requests kept ZooKeeper (and this session's pings) busy for
   * seconds. A server without multiRead gets a getData per partition, as before.
   */
  async getPartitionStates(partitions: readonly TopicPartitionId[]): Promise<Map<string, PartitionState>> {
    const out = new Map<string, PartitionState>()
    if (this.#multiReadUnsupported) {
      await Promise.all(
        partitions.map(async ({ topic, partition }) => {
          const s = await this.#readState(topic, partition)
          if (s !== undefined) out.set(partitionKey(topic, partition), s)
        }),
      )
      return out
    }
    try {
      await Promise.all(
        chunks(partitions, PARTITION_STATES_PER_READ).map(async (chunk) => {
          const paths = chunk.map(({ topic, partition }) => ZkPaths.partitionState(topic, partition))
          const results = await this.#run((client) => client.getDataMany(paths))
          results.forEach((r, i) => {
            const path = paths[i]!
            if ('err' in r) {
              if (r.err === ZooKeeperErrorCode.NONODE) return
              throw new ZooKeeperError(r.err, path)
            }
            out.set(partitionKey(chunk[i]!.topic, chunk[i]!.partition), decodePartitionState(path, r.data, r.stat.version))
          })
        }),
      )
    } catch (err) {
      if (!isZooKeeperError(err, ZooKeeperErrorCode.UNIMPLEMENTED)) throw err
      this.#log.info({ err: (err as Error).message }, 'ZooKeeper does not serve multiRead (3.6+): partition states are read one request each')
      this.#multiReadUnsupported = true
      return this.getPartitionStates(partitions)
    }
    return out
  }

  async #readState(topic: string, partition: number): Promise<PartitionState | undefined> {
    const path = ZkPaths.partitionState(topic, partition)
    return this.#run(async (client) => {
      try {
        const { data, stat } = await client.getData(path)
        return decodePartitionState(path, data, stat.version)
      } catch (err) {
        if (isZooKeeperError(err, ZooKeeperErrorCode.NONODE)) return undefined
        throw err
      }
    })
  }

  async createPartitionStates(token: ControllerEpoch, writes: readonly PartitionStateWrite[]): Promise<{ created: Map<string, LeaderAndIsr>; failed: Map<string, Error> }> {
    const created = new Map<string, LeaderAndIsr>()
    const failed = new Map<string, Error>()
    // The parent znodes carry no data; plain (non-recursive) creates, as Kafka's, so that a topic deleted
    // meanwhile is not brought back as an empty znode.
    const topics = [...new Set(writes.map((w) => w.topic))]
    await Promise.all(topics.map((t) => this.#createIgnoringExists(ZkPaths.topicPartitions(t))))
    await Promise.all(writes.map((w) => this.#createIgnoringExists(ZkPaths.topicPartition(w.topic, w.partition))))
    let moved: ControllerMovedError | undefined
    await Promise.all(
      writes.map(async (w) => {
        const key = partitionKey(w.topic, w.partition)
        const path = ZkPaths.partitionState(w.topic, w.partition)
        const data = encodePartitionState(w.state)
        try {
          await this.#guarded(token, [Op.create(path, data)], async (err) => err.code === ZooKeeperErrorCode.NODEEXISTS && (await this.#sameData(path, data)))
          created.set(key, { ...w.state.leaderAndIsr, partitionEpoch: 0 })
        } catch (err) {
          if (err instanceof ControllerMovedError) moved = err
          else failed.set(key, err as Error)
        }
      }),
    )
    if (moved !== undefined) throw moved
    return { created, failed }
  }

  async updatePartitionStates(token: ControllerEpoch, writes: readonly PartitionStateWrite[]): Promise<PartitionStateUpdateResult> {
    const result: PartitionStateUpdateResult = { updated: new Map(), badVersion: [], failed: new Map() }
    let moved: ControllerMovedError | undefined
    const one = async (w: PartitionStateWrite, maybeApplied: boolean): Promise<void> => {
      const key = partitionKey(w.topic, w.partition)
      const path = ZkPaths.partitionState(w.topic, w.partition)
      const data = encodePartitionState(w.state)
      const expected = w.state.leaderAndIsr.partitionEpoch
      let newVersion = expected + 1
      // A retry after a lost connection: if the znode holds what we wrote, the first attempt went through.
      const ours = async (err: ZooKeeperMultiError): Promise<boolean> => {
        if (err.code !== ZooKeeperErrorCode.BADVERSION) return false
        const now = await this.#run((client) => client.getData(path))
        if (!now.data.equals(data)) return false
        newVersion = now.stat.version
        return true
      }
      try {
        try {
          await this.#guarded(token, [Op.setData(path, data, expected)], ours)
        } catch (err) {
          // The chunk's multi may have written it before its connection was lost.
          if (!(maybeApplied && err instanceof ZooKeeperMultiError && (await ours(err)))) throw err
        }
        result.updated.set(key, { ...w.state.leaderAndIsr, partitionEpoch: newVersion })
      } catch (err) {
        if (err instanceof ControllerMovedError) moved = err
        else if (err instanceof ZooKeeperMultiError && err.code === ZooKeeperErrorCode.BADVERSION) result.badVersion.push(key)
        else result.failed.set(key, err as Error)
      }
    }
    const writeChunk = async (chunk: PartitionStateWrite[]): Promise<void> => {
      const ops = chunk.map((w) => Op.setData(ZkPaths.partitionState(w.topic, w.partition), encodePartitionState(w.state), w.state.leaderAndIsr.partitionEpoch))
      const outcome = chunk.length === 1 ? { applied: false as const, maybeApplied: false } : await this.#guardedChunk(token, ops)
      if (outcome === 'moved') {
        moved = new ControllerMovedError(`controller epoch ${token.epoch} is no longer current`)
        return
      }
      if (outcome.applied) {
        chunk.forEach((w, i) => {
          const r = outcome.results[i + 1]
          const version = r?.type === 'setData' ? r.stat.version : w.state.leaderAndIsr.partitionEpoch + 1
          result.updated.set(partitionKey(w.topic, w.partition), { ...w.state.leaderAndIsr, partitionEpoch: version })
        })
        return
      }
      await Promise.all(chunk.map((w) => one(w, outcome.maybeApplied)))
    }
    // The multis go out without waiting for each other's answers, but are built a slice of main-thread time
    // at a time: the 66,000 ISR changes of a failover at 100,000 partitions, built in one go, held this
    // thread (and the broker's pings and requests) for seconds.
    const sent: Promise<void>[] = []
    let sliceStart = performance.now()
    for (const chunk of chunks(writes, PARTITION_STATES_PER_MULTI)) {
      const written = writeChunk(chunk)
      // Observed now (a failure while this loop yields is not unhandled), and again by Promise.all below.
      written.catch(() => {})
      sent.push(written)
      if (performance.now() - sliceStart >= SLICE_MS) {
        await new Promise<void>((resolve) => setImmediate(resolve))
        sliceStart = performance.now()
      }
    }
    await Promise.all(sent)
    if (moved !== undefined) throw moved
    return result
  }

  /**
   * One guarded multi for a chunk of partition writes: 'moved' when the epoch check failed; not applied
   * when any other op was refused (nothing of it was written), maybeApplied when an earlier attempt was lost
   * with its connection (it may have been written, then this attempt was refused because it was).
   */
  async #guardedChunk(token: ControllerEpoch, ops: readonly MultiOp[]): Promise<{ applied: true; results: MultiOpResult[] } | { applied: false; maybeApplied: boolean } | 'moved'> {
    let attempts = 0
    try {
      const results = await this.#run((client) => {
        attempts++
        return client.multi([Op.check(ZkPaths.controllerEpoch, token.epochVersion), ...ops])
      })
      return { applied: true, results }
    } catch (err) {
      if (!(err instanceof ZooKeeperMultiError)) throw err
      if (err.opIndex === 0) return 'moved'
      return { applied: false, maybeApplied: attempts > 1 }
    }
  }

  async #sameData(path: string, data: Buffer): Promise<boolean> {
    try {
      return (await this.#run((client) => client.getData(path))).data.equals(data)
    } catch {
      return false
    }
  }

  async #createIgnoringExists(path: string, data?: Buffer): Promise<void> {
    await this.#run(async (client) => {
      try {
        await client.create(path, data)
      } catch (err) {
        if (!isZooKeeperError(err, ZooKeeperErrorCode.NODEEXISTS, ZooKeeperErrorCode.NONODE)) throw err
      }
    })
  }

  // ---------------------------------------------------------------- deletion

  async queueTopicDeletions(names: readonly string[]): Promise<string[]> {
    const already: string[] = []
    for (const name of names) {
      await this.#run(async (client, attempt) => {
        try {
          await client.create(ZkPaths.deleteTopic(name))
        } catch (err) {
          if (!isZooKeeperError(err, ZooKeeperErrorCode.NODEEXISTS)) throw err
          if (attempt === 0) already.push(name)
        }
      })
    }
    return already
  }

  async getTopicDeletions(): Promise<string[]> {
    return (await this.#run((client) => client.getChildren(ZkPaths.deleteTopics))).sort()
  }

  watchTopicDeletions(onChange: () => void): Unwatch {
    return this.#watch('children', ZkPaths.deleteTopics, onChange)
  }

  async removeTopicDeletions(token: ControllerEpoch, names: readonly string[]): Promise<void> {
    for (const name of names) await this.#guardedDeleteIfExists(token, [ZkPaths.deleteTopic(name)])
  }

  // ---------------------------------------------------------------- log dir failures

  async notifyLogDirFailure(brokerId: number): Promise<void> {
    await this.#run((client) =>
      client.create(`${ZkPaths.logDirEventNotification}/${ZkPaths.logDirEventPrefix}`, encodeLogDirEvent(brokerId), { mode: CreateMode.PERSISTENT_SEQUENTIAL }))
  }

  async getLogDirEvents(): Promise<{ name: string; brokerId: number }[]> {
    const names = (await this.#run((client) => client.getChildren(ZkPaths.logDirEventNotification))).filter((n) => n.startsWith(ZkPaths.logDirEventPrefix)).sort()
    const out: { name: string; brokerId: number }[] = []
    for (const name of names) {
      try {
        const { data } = await this.#run((client) => client.getData(`${ZkPaths.logDirEventNotification}/${name}`))
        out.push({ name, brokerId: decodeLogDirEvent(data) ?? -1 })
      } catch (err) {
        if (!isZooKeeperError(err, ZooKeeperErrorCode.NONODE)) throw err
      }
    }
    return out
  }

  watchLogDirEvents(onChange: () => void): Unwatch {
    return this.#watch('children', ZkPaths.logDirEventNotification, onChange)
  }

  async removeLogDirEvents(token: ControllerEpoch, names: readonly string[]): Promise<void> {
    for (const name of names) await this.#guardedDeleteIfExists(token, [`${ZkPaths.logDirEventNotification}/${name}`])
  }

  async deleteTopic(token: ControllerEpoch, name: string): Promise<void> {
    // Leaves first: states, partition znodes, the partitions znode, the topic; then its config.
    const root = ZkPaths.topic(name)
    const order: string[] = []
    const walk = async (path: string): Promise<void> => {
      let children: string[]
      try {
        children = await this.#run((client) => client.getChildren(path))
      } catch (err) {
        if (isZooKeeperError(err, ZooKeeperErrorCode.NONODE)) return
        throw err
      }
      for (const c of children) await walk(`${path}/${c}`)
      order.push(path)
    }
    await walk(root)
    for (let i = 0; i < order.length; i += MULTI_CHUNK) await this.#guardedDeleteIfExists(token, order.slice(i, i + MULTI_CHUNK))
    await this.#guardedDeleteIfExists(token, [ZkPaths.configEntity('topics', name)])
  }

  /** Guarded deletes of paths in order; those already gone are skipped (a retry, or someone else's cleanup). */
  async #guardedDeleteIfExists(token: ControllerEpoch, paths: readonly string[]): Promise<void> {
    let remaining = [...paths]
    for (let round = 0; remaining.length > 0; round++) {
      try {
        await this.#guarded(token, remaining.map((p) => Op.delete(p, -1)))
        return
      } catch (err) {
        if (!(err instanceof ZooKeeperMultiError) || err.code !== ZooKeeperErrorCode.NONODE || round > paths.length) throw err
        // Drop the path that was missing and try the rest again.
        remaining = remaining.filter((_, i) => i !== err.opIndex - 1)
      }
    }
  }

  // ---------------------------------------------------------------- configs

  async getEntityConfig(entityType: ConfigEntityType, entityName: string): Promise<Record<string, string>> {
    const path = ZkPaths.configEntity(entityType, entityName)
    return this.#run(async (client) => {
      try {
        return decodeEntityConfig(path, (await client.getData(path)).data)
      } catch (err) {
        if (isZooKeeperError(err, ZooKeeperErrorCode.NONODE)) return {}
        throw err
      }
    })
  }

  async getEntityNames(entityType: ConfigEntityType): Promise<string[]> {
    return this.#run(async (client) => {
      try {
        return (await client.getChildren(ZkPaths.configEntityType(entityType))).sort()
      } catch (err) {
        if (isZooKeeperError(err, ZooKeeperErrorCode.NONODE)) return []
        throw err
      }
    })
  }

  async getUserClientEntityNames(user: string): Promise<string[]> {
    return (await this.#children(`${ZkPaths.configEntity('users', user)}/clients`)).sort()
  }

  async setEntityConfig(entityType: ConfigEntityType, entityName: string, config: Readonly<Record<string, string>>): Promise<void> {
    // A nested entity (/config/users/<user>/clients/<client-id>) needs its parents; Kafka creates them
    // empty (an empty /config/users/<user> reads as no config).
    const parts = entityName.split('/')
    for (let i = 1; i < parts.length; i++) await this.#createIfMissing(ZkPaths.configEntity(entityType, parts.slice(0, i).join('/')))
    await this.#setOrCreate(ZkPaths.configEntity(entityType, entityName), encodeEntityConfig(config))
    const change: ConfigChange = { entityType, entityName }
    await this.#run((client) => client.create(`${ZkPaths.configChanges}/${ZkPaths.configChangePrefix}`, encodeConfigChange(change), { mode: CreateMode.PERSISTENT_SEQUENTIAL }))
  }

  // ---------------------------------------------------------------- ACLs

  async getAcls(): Promise<StoredResourceAcls[]> {
    const out: StoredResourceAcls[] = []
    for (const [patternType, root] of [['LITERAL', ZkPaths.acls], ['PREFIXED', ZkPaths.prefixedAcls]] as const) {
      for (const resourceType of await this.#children(root)) {
        for (const name of await this.#children(`${root}/${resourceType}`)) {
          const path = `${root}/${resourceType}/${name}`
          const data = await this.#run(async (client) => {
            try {
              return (await client.getData(path)).data
            } catch (err) {
              if (isZooKeeperError(err, ZooKeeperErrorCode.NONODE)) return null
              throw err
            }
          })
          if (data === null) continue
          const parsed = JSON.parse(data.toString('utf8')) as { version?: number; acls?: StoredAcl[] }
          if (!Array.isArray(parsed.acls)) throw new Error(`${path}: not an ACL node ({"version":1,"acls":[...]})`)
          out.push({ resource: { patternType, resourceType, name }, acls: parsed.acls })
        }
      }
    }
    return out
  }

  async setResourceAcls(resource: AclResource, acls: readonly StoredAcl[]): Promise<void> {
    const root = resource.patternType === 'LITERAL' ? ZkPaths.acls : ZkPaths.prefixedAcls
    const path = `${root}/${resource.resourceType}/${resource.name}`
    await this.#run((client) => client.mkdirp(`${root}/${resource.resourceType}`))
    if (acls.length === 0) {
      await this.#run(async (client) => {
        try {
          await client.delete(path, -1)
        } catch (err) {
          if (!isZooKeeperError(err, ZooKeeperErrorCode.NONODE)) throw err
        }
      })
    } else {
      await this.#setOrCreate(path, Buffer.from(JSON.stringify({ version: 1, acls }), 'utf8'))
    }
    // Kafka's change notifications: "<ResourceType>:<name>" for literal patterns, JSON for the extended ones.
    const [changes, data] =
      resource.patternType === 'LITERAL'
        ? [ZkPaths.aclChanges, `${resource.resourceType}:${resource.name}`]
        : [ZkPaths.extendedAclChanges, JSON.stringify({ version: 1, resourceType: resource.resourceType, name: resource.name, patternType: resource.patternType })]
    await this.#run((client) => client.create(`${changes}/${ZkPaths.aclChangePrefix}`, Buffer.from(data, 'utf8'), { mode: CreateMode.PERSISTENT_SEQUENTIAL }))
  }

  async #children(path: string): Promise<string[]> {
    return this.#run(async (client) => {
      try {
        return await client.getChildren(path)
      } catch (err) {
        if (isZooKeeperError(err, ZooKeeperErrorCode.NONODE)) return []
        throw err
      }
    })
  }

  async #createIfMissing(path: string): Promise<void> {
    await this.#run(async (client) => {
      try {
        await client.create(path, Buffer.alloc(0))
      } catch (err) {
        if (!isZooKeeperError(err, ZooKeeperErrorCode.NODEEXISTS)) throw err
      }
    })
  }

  async #setOrCreate(path: string, data: Buffer): Promise<void> {
    await this.#run(async (client) => {
      for (;;) {
        try {
          await client.setData(path, data, -1)
          return
        } catch (err) {
          if (!isZooKeeperError(err, ZooKeeperErrorCode.NONODE)) throw err
        }
        try {
          await client.create(path, data)
          return
        } catch (err) {
          if (!isZooKeeperError(err, ZooKeeperErrorCode.NODEEXISTS)) throw err
        }
      }
    })
  }

  watchAclChanges(onChange: () => void): Unwatch {
    const unwatch = [this.#watch('children', ZkPaths.aclChanges, onChange), this.#watch('children', ZkPaths.extendedAclChanges, onChange)]
    return () => unwatch.forEach((u) => u())
  }

  watchConfigChanges(onChanges: (changes: ConfigChange[]) => void): Unwatch {
    let lastSeen = -1
    let initialized = false
    let running = Promise.resolve()
    const process = (): void => {
      running = running.then(async () => {
        const children = await this.#run((client) => client.getChildren(ZkPaths.configChanges)).catch(() => [] as string[])
        const seqs = children
          .filter((c) => c.startsWith(ZkPaths.configChangePrefix))
          .map((c) => ({ name: c, seq: Number(c.slice(ZkPaths.configChangePrefix.length)) }))
          .filter((c) => Number.isSafeInteger(c.seq))
          .sort((a, b) => a.seq - b.seq)
        if (!initialized) {
          // Changes published before this broker watched are in the configs it reads at startup.
          initialized = true
          lastSeen = seqs.length > 0 ? seqs[seqs.length - 1]!.seq : -1
          return
        }
        const fresh = seqs.filter((c) => c.seq > lastSeen)
        const changes: ConfigChange[] = []
        for (const c of fresh) {
          const path = `${ZkPaths.configChanges}/${c.name}`
          try {
            const { data, stat } = await this.#run((client) => client.getData(path))
            const change = decodeConfigChange(data)
            if (change !== undefined) changes.push(change)
            await this.#purgeIfObsolete(path, stat)
          } catch (err) {
            if (!isZooKeeperError(err, ZooKeeperErrorCode.NONODE)) this.#log.warn({ path, err: (err as Error).message }, 'unreadable config change notification')
          }
          lastSeen = c.seq
        }
        if (changes.length > 0) onChanges(changes)
      })
      running.catch((err: unknown) => this.#log.error({ err: (err as Error).message }, 'config change processing failed'))
    }
    process()
    const unwatch = this.#watch('children', ZkPaths.configChanges, process)
    return unwatch
  }

  async #purgeIfObsolete(path: string, stat: Stat): Promise<void> {
    if (Date.now() - stat.ctime < CONFIG_CHANGE_EXPIRATION_MS) return
    await this.#run((client) => client.delete(path, -1)).catch(() => {})
  }

  // ---------------------------------------------------------------- producer ids

  async allocateProducerIdBlock(brokerId: number, blockSize: number): Promise<ProducerIdBlock> {
    for (;;) {
      const { data, stat } = await this.#run((client) => client.getData(ZkPaths.producerIdBlock))
      const previous = decodeProducerIdBlock(data)
      const first = previous === undefined ? 0 : previous.lastProducerId + 1
      const block = { firstProducerId: first, lastProducerId: first + blockSize - 1 }
      if (!Number.isSafeInteger(block.lastProducerId)) throw new Error('producer ids are exhausted')
      const next = encodeProducerIdBlock(brokerId, block)
      const won = await this.#run(async (client, attempt) => {
        try {
          await client.setData(ZkPaths.producerIdBlock, next, stat.version)
          return true
        } catch (err) {
          if (!isZooKeeperError(err, ZooKeeperErrorCode.BADVERSION)) throw err
          // After a lost connection our write may be the one that moved the version.
          return attempt > 0 && (await client.getData(ZkPaths.producerIdBlock)).data.equals(next)
        }
      })
      if (won) return block
    }
  }
}

/** Consecutive slices of at most `size` items. */
function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = []
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size))
  return out
}
