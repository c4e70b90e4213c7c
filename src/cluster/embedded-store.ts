// The MetadataStore of a single broker without ZooKeeper: what ZooKeeper would hold for Kafka, kept in a
// file in the broker's log dir. The controller and the broker run over it exactly as over ZooKeeper: the
// broker registers (a new broker epoch each start), wins the controller election (a new controller epoch
// each start), writes topic assignments and the deletion queue; the controller writes partition states,
// guarded by its epoch. Watches are in-process callbacks, called after the change is on disk.
//
// File `<log.dir>/cluster-metadata.json`, format version 2 (one line per topic, so the file stays
// readable and small to rewrite):
//   { "version": 2,
//     "brokerEpoch": <last broker epoch handed out>,
//     "controllerEpoch": <epoch>, "controllerEpochVersion": <its version, the fencing token>,
//     "topics": [ { "name", "topicId", "createdAt", "partitions": [[replica ids] per partition],
//                   "addingReplicas": {"<p>": [ids]}, "removingReplicas": {"<p>": [ids]} } ... ],
//     "partitionStates": { "<topic>": [ {"leader","leaderEpoch","isr","leaderRecoveryState",
//                                         "controllerEpoch","version"} or null per partition ] },
//     "deleteTopics": [ names queued for deletion ],
//     "configs": { "topics": {"<t>": {k: v}}, "brokers": {"<id>" | "<default>": {k: v}},
//                  "clients": {...}, "users": {"<user>" | "<user>/clients/<client-id>": {k: v}}, "ips": {...} },
//       (names sanitized as in ZooKeeper; "<user>/clients/<client-id>" is a user+client-id quota entity)
//     "acls": { "<LITERAL|PREFIXED>/<ResourceType>/<name>": [ {"principal","permissionType","operation","host"} ] } }
// ("acls" is optional: files written before ACLs have none.)
// Version 1 (Skein before clusters: topics with a partition count and configs, brokerConfigs.perBroker /
// clusterDefault) is upgraded when read: every partition's replica is this broker, topic configs and
// broker configs move under "configs"; the upgraded file is written back at once.
//
// Every change rewrites the whole file atomically: write `cluster-metadata.json.tmp`, fsync it, rename it
// over the old file, fsync the directory. A crash leaves either the old or the new file, never a mix; a
// stale `.tmp` is ignored and replaced. The controller's partition-state writes (a new topic of 100,000
// partitions is ~10 MB of text) are written in slices instead (issue 30): the text is built from a
// snapshot in ~SLICE_MS pieces and written off the main thread through `cluster-metadata.json.sliced.tmp`;
// a sliced write never renames over a newer write that finished first (that one holds its changes too).
//
// Producer ids: file `<log.dir>/producer-id-block`, text, '\n' line ends (kept from before clusters):
//   line 1: format version, 0
//   line 2: the first producer id NOT yet reserved (the end of the last block handed out)
// Rewritten atomically (tmp + fsync + rename + dir fsync) before a block is handed out, so a crash leaves a
// value at or above every id handed out. A missing file means none was (start at 0); a malformed one
// refuses allocation rather than risk reusing ids.
import { existsSync, readFileSync, renameSync } from 'node:fs'
import { open as openFile } from 'node:fs/promises'
import { join } from 'node:path'
import { ErrorCode, KafkaError } from '../domain/errors.js'
import { writeFileAtomicSync } from '../storage/atomic-file.js'
import { fsyncDir, writeFileAtomic } from '../storage/durability.js'
import { MainThreadSlices } from '../domain/main-thread-slices.js'
import {
  type AclResource,
  type StoredAcl,
  type StoredResourceAcls,
  CONFIG_ENTITY_TYPES,
  ControllerMovedError,
  DEFAULT_ENTITY_NAME,
  LeaderRecoveryState,
  TopicExistsError,
  UnknownTopicError,
  partitionKey,
  type BrokerRegistration,
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

export const CLUSTER_METADATA_FILE = 'cluster-metadata.json'
export const PRODUCER_ID_BLOCK_FILE = 'producer-id-block'
const FORMAT_VERSION = 2
/** Partition states stringified per piece of a sliced write (a piece is well under a slice's time). */
const STATES_PER_PIECE = 2048

interface StoredTopic {
  name: string
  topicId: string | null
  createdAt: number
  partitions: number[][]
  addingReplicas: Record<string, number[]>
  removingReplicas: Record<string, number[]>
}

interface StoredPartitionState {
  leader: number
  leaderEpoch: number
  isr: number[]
  leaderRecoveryState: number
  controllerEpoch: number
  version: number
}

interface FileV2 {
  version: 2
  brokerEpoch: number
  controllerEpoch: number
  controllerEpochVersion: number
  topics: StoredTopic[]
  partitionStates: Record<string, (StoredPartitionState | null)[]>
  deleteTopics: string[]
  configs: Record<ConfigEntityType, Record<string, Record<string, string>>>
  /** "<LITERAL|PREFIXED>/<ResourceType>/<name>" -> its ACLs; absent in files written before ACLs. */
  acls?: Record<string, StoredAcl[]>
}

interface FileV1 {
  version: 1
  topics: { name: string; topicId: string; partitions: number; replicationFactor: number; configs: Record<string, string>; createdAt: number }[]
  brokerConfigs?: { perBroker: Record<string, string>; clusterDefault: Record<string, string> }
}

type Channel = 'brokers' | 'controller' | 'topics' | 'deletions' | 'logDirEvents' | `topic:${string}`

export class EmbeddedStore implements MetadataStore {
  readonly kind = 'embedded' as const
  readonly description: string
  readonly #path: string
  readonly #dir: string
  #state: FileV2
  readonly #live = new Map<number, RegisteredBroker>()
  #controllerId = -1
  readonly #watchers = new Map<Channel, Set<() => void>>()
  readonly #configWatchers = new Set<(changes: ConfigChange[]) => void>()
  #closed = false

  private constructor(dir: string, state: FileV2) {
    this.#dir = dir
    this.#path = join(dir, CLUSTER_METADATA_FILE)
    this.description = this.#path
    this.#state = state
  }

  /**
   * Opens (or starts) the file in `dir`. `brokerId` is the owner: a version 1 file is upgraded with it as
   * every partition's replica. Throws on a format this broker does not read.
   */
  static open(dir: string, brokerId: number): EmbeddedStore {
    const path = join(dir, CLUSTER_METADATA_FILE)
    let state: FileV2
    let upgraded = false
    if (existsSync(path)) {
      const parsed = JSON.parse(readFileSync(path, 'utf8')) as { version: number }
      if (parsed.version === 1) {
        state = upgradeV1(parsed as FileV1, brokerId)
        upgraded = true
      } else if (parsed.version === FORMAT_VERSION) {
        state = normalize(parsed as FileV2)
      } else {
        throw new Error(`${path}: unsupported format version ${parsed.version} (this broker reads versions 1 and ${FORMAT_VERSION})`)
      }
    } else {
      state = normalize({ version: 2 } as FileV2)
    }
    const store = new EmbeddedStore(dir, state)
    if (upgraded) store.#persist()
    return store
  }

  async start(): Promise<void> {}

  async close(): Promise<void> {
    this.#closed = true
    this.#live.clear()
    this.#controllerId = -1
    this.#watchers.clear()
    this.#configWatchers.clear()
  }

  /** No sessions here: nothing ever expires. */
  onSession(_listener: (event: StoreSessionEvent) => void): void {}

  /** The cluster id lives in meta.properties for a single broker; the proposal is it. */
  async getOrCreateClusterId(proposed: string): Promise<string> {
    return proposed
  }

  // ---------------------------------------------------------------- brokers

  async registerBroker(registration: BrokerRegistration): Promise<bigint> {
    this.#state.brokerEpoch += 1
    this.#persist()
    const epoch = BigInt(this.#state.brokerEpoch)
    this.#live.set(registration.id, { ...registration, endpoints: registration.endpoints.map((e) => ({ ...e })), epoch })
    this.#notify('brokers')
    return epoch
  }

  async getBroker(id: number): Promise<RegisteredBroker | undefined> {
    const b = this.#live.get(id)
    return b === undefined ? undefined : { ...b }
  }

  async getLiveBrokers(): Promise<RegisteredBroker[]> {
    return [...this.#live.values()].map((b) => ({ ...b })).sort((a, b) => a.id - b.id)
  }

  watchBrokers(onChange: () => void): Unwatch {
    return this.#watch('brokers', onChange)
  }

  // ---------------------------------------------------------------- controller

  async getControllerId(): Promise<number> {
    return this.#controllerId
  }

  watchController(onChange: () => void): Unwatch {
    return this.#watch('controller', onChange)
  }

  async getControllerEpoch(): Promise<ControllerEpoch | undefined> {
    if (this.#state.controllerEpochVersion < 0) return undefined
    return { epoch: this.#state.controllerEpoch, epochVersion: this.#state.controllerEpochVersion }
  }

  async campaign(brokerId: number): Promise<ControllerEpoch> {
    if (this.#controllerId !== -1) throw new ControllerMovedError(`broker ${this.#controllerId} is the controller`)
    this.#state.controllerEpoch += 1
    this.#state.controllerEpochVersion += 1
    this.#persist()
    this.#controllerId = brokerId
    this.#notify('controller')
    return { epoch: this.#state.controllerEpoch, epochVersion: this.#state.controllerEpochVersion }
  }

  async removeDeadController(): Promise<boolean> {
    // One broker, in this process: it is never another broker's dead controller.
    return false
  }

  msSinceContact(): number {
    return 0
  }

  async resign(token: ControllerEpoch): Promise<void> {
    if (token.epochVersion !== this.#state.controllerEpochVersion) return
    this.#controllerId = -1
    this.#notify('controller')
  }

  #checkEpoch(token: ControllerEpoch): void {
    if (this.#closed || token.epochVersion !== this.#state.controllerEpochVersion) {
      throw new ControllerMovedError(`controller epoch ${token.epoch} is no longer current`)
    }
  }

  // ---------------------------------------------------------------- topics

  async getTopicNames(): Promise<string[]> {
    return this.#state.topics.map((t) => t.name).sort()
  }

  watchTopics(onChange: () => void): Unwatch {
    return this.#watch('topics', onChange)
  }

  /** Built in ~SLICE_MS slices: a topic of 100,000 partitions is 300,000 arrays. */
  async getTopicAssignments(names: readonly string[]): Promise<Map<string, TopicAssignment>> {
    const out = new Map<string, TopicAssignment>()
    const slices = new MainThreadSlices()
    for (const name of names) {
      const t = this.#topic(name)
      if (t === undefined) continue
      // Each partition's entries are read in one go (a reassignment changes them together).
      const moving = Object.keys(t.addingReplicas).length > 0 || Object.keys(t.removingReplicas).length > 0
      const partitions: TopicAssignment['partitions'] = []
      for (let p = 0; p < t.partitions.length; p++) {
        const pause = slices.turn()
        if (pause !== undefined) await pause
        partitions.push({
          replicas: [...t.partitions[p]!],
          addingReplicas: moving ? [...(t.addingReplicas[String(p)] ?? [])] : [],
          removingReplicas: moving ? [...(t.removingReplicas[String(p)] ?? [])] : [],
        })
      }
      out.set(name, { name: t.name, topicId: t.topicId, partitions })
    }
    return out
  }

  watchTopicAssignment(name: string, onChange: () => void): Unwatch {
    return this.#watch(`topic:${name}`, onChange)
  }

  async createTopic(assignment: TopicAssignment, configs: Readonly<Record<string, string>>): Promise<void> {
    if (this.#topic(assignment.name) !== undefined) throw new TopicExistsError(`Topic '${assignment.name}' already exists.`)
    this.#state.configs.topics[assignment.name] = { ...configs }
    this.#state.topics.push(fromAssignment(assignment, Date.now()))
    this.#state.topics.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    this.#persist()
    this.#notify('topics')
  }

  async setTopicAssignment(assignment: TopicAssignment): Promise<void> {
    const i = this.#state.topics.findIndex((t) => t.name === assignment.name)
    if (i < 0) throw new UnknownTopicError(`The topic '${assignment.name}' does not exist.`)
    this.#state.topics[i] = fromAssignment(assignment, this.#state.topics[i]!.createdAt)
    this.#persist()
    this.#notify(`topic:${assignment.name}`)
  }

  async setTopicIds(token: ControllerEpoch, assignments: readonly TopicAssignment[]): Promise<void> {
    this.#checkEpoch(token)
    for (const a of assignments) {
      const t = this.#topic(a.name)
      if (t !== undefined) t.topicId = a.topicId
    }
    this.#persist()
  }

  async setTopicAssignments(token: ControllerEpoch, assignments: readonly TopicAssignment[]): Promise<void> {
    this.#checkEpoch(token)
    for (const a of assignments) {
      const i = this.#state.topics.findIndex((t) => t.name === a.name)
      if (i >= 0) this.#state.topics[i] = fromAssignment(a, this.#state.topics[i]!.createdAt)
    }
    this.#persist()
  }

  // ---------------------------------------------------------------- partition states

  async getPartitionStates(partitions: readonly TopicPartitionId[]): Promise<Map<string, PartitionState>> {
    const out = new Map<string, PartitionState>()
    for (const { topic, partition } of partitions) {
      const s = this.#state.partitionStates[topic]?.[partition]
      if (s !== undefined && s !== null) out.set(partitionKey(topic, partition), toPartitionState(s))
    }
    return out
  }

  async createPartitionStates(token: ControllerEpoch, writes: readonly PartitionStateWrite[]): Promise<{ created: Map<string, LeaderAndIsr>; failed: Map<string, Error> }> {
    this.#checkEpoch(token)
    const created = new Map<string, LeaderAndIsr>()
    const failed = new Map<string, Error>()
    const slices = new MainThreadSlices()
    for (const w of writes) {
      const pause = slices.turn()
      if (pause !== undefined) await pause
      const key = partitionKey(w.topic, w.partition)
      if (this.#topic(w.topic) === undefined) {
        failed.set(key, new UnknownTopicError(`topic ${w.topic} does not exist`))
        continue
      }
      const list = (this.#state.partitionStates[w.topic] ??= [])
      if (list[w.partition] !== undefined && list[w.partition] !== null) {
        failed.set(key, new Error(`partition ${key} already has a state`))
        continue
      }
      while (list.length < w.partition) list.push(null)
      list[w.partition] = fromPartitionState(w.state, 0)
      created.set(key, { ...w.state.leaderAndIsr, partitionEpoch: 0 })
    }
    if (created.size > 0) await this.#persistInSlices()
    return { created, failed }
  }

  async updatePartitionStates(token: ControllerEpoch, writes: readonly PartitionStateWrite[]): Promise<PartitionStateUpdateResult> {
    this.#checkEpoch(token)
    const result: PartitionStateUpdateResult = { updated: new Map(), badVersion: [], failed: new Map() }
    const slices = new MainThreadSlices()
    for (const w of writes) {
      const pause = slices.turn()
      if (pause !== undefined) await pause
      const key = partitionKey(w.topic, w.partition)
      const current = this.#state.partitionStates[w.topic]?.[w.partition]
      if (current === undefined || current === null) {
        result.failed.set(key, new Error(`partition ${key} has no state`))
        continue
      }
      if (current.version !== w.state.leaderAndIsr.partitionEpoch) {
        result.badVersion.push(key)
        continue
      }
      const version = current.version + 1
      this.#state.partitionStates[w.topic]![w.partition] = fromPartitionState(w.state, version)
      result.updated.set(key, { ...w.state.leaderAndIsr, partitionEpoch: version })
    }
    if (result.updated.size > 0) await this.#persistInSlices()
    return result
  }

  // ---------------------------------------------------------------- deletion

  async queueTopicDeletions(names: readonly string[]): Promise<string[]> {
    const already = names.filter((n) => this.#state.deleteTopics.includes(n))
    const fresh = names.filter((n) => !this.#state.deleteTopics.includes(n))
    if (fresh.length > 0) {
      this.#state.deleteTopics.push(...fresh)
      this.#persist()
      this.#notify('deletions')
    }
    return already
  }

  async getTopicDeletions(): Promise<string[]> {
    return [...this.#state.deleteTopics].sort()
  }

  watchTopicDeletions(onChange: () => void): Unwatch {
    return this.#watch('deletions', onChange)
  }

  async removeTopicDeletions(token: ControllerEpoch, names: readonly string[]): Promise<void> {
    this.#checkEpoch(token)
    const before = this.#state.deleteTopics.length
    this.#state.deleteTopics = this.#state.deleteTopics.filter((n) => !names.includes(n))
    if (this.#state.deleteTopics.length !== before) {
      this.#persist()
      this.#notify('deletions')
    }
  }

  // ---------------------------------------------------------------- log dir failures

  /** Log dir events of this process (not persisted: a restarted broker reopens its directories anyway). */
  #logDirEvents: { name: string; brokerId: number }[] = []
  #logDirEventSeq = 0

  async notifyLogDirFailure(brokerId: number): Promise<void> {
    this.#logDirEvents.push({ name: `log_dir_event_${String(this.#logDirEventSeq++).padStart(10, '0')}`, brokerId })
    this.#notify('logDirEvents')
  }

  async getLogDirEvents(): Promise<{ name: string; brokerId: number }[]> {
    return [...this.#logDirEvents]
  }

  watchLogDirEvents(onChange: () => void): Unwatch {
    return this.#watch('logDirEvents', onChange)
  }

  async removeLogDirEvents(token: ControllerEpoch, names: readonly string[]): Promise<void> {
    this.#checkEpoch(token)
    this.#logDirEvents = this.#logDirEvents.filter((e) => !names.includes(e.name))
  }

  async deleteTopic(token: ControllerEpoch, name: string): Promise<void> {
    this.#checkEpoch(token)
    const before = this.#state.topics.length
    this.#state.topics = this.#state.topics.filter((t) => t.name !== name)
    delete this.#state.partitionStates[name]
    delete this.#state.configs.topics[name]
    this.#persist()
    if (this.#state.topics.length !== before) {
      this.#notify('topics')
      this.#notify(`topic:${name}`)
    }
  }

  // ---------------------------------------------------------------- ACLs

  async getAcls(): Promise<StoredResourceAcls[]> {
    return Object.entries(this.#state.acls ?? {}).map(([key, acls]) => {
      const first = key.indexOf('/')
      const second = key.indexOf('/', first + 1)
      const resource: AclResource = { patternType: key.slice(0, first) as AclResource['patternType'], resourceType: key.slice(first + 1, second), name: key.slice(second + 1) }
      return { resource, acls: acls.map((a) => ({ ...a })) }
    })
  }

  async setResourceAcls(resource: AclResource, acls: readonly StoredAcl[]): Promise<void> {
    const all = (this.#state.acls ??= {})
    const key = `${resource.patternType}/${resource.resourceType}/${resource.name}`
    if (acls.length === 0) delete all[key]
    else all[key] = acls.map((a) => ({ ...a }))
    this.#persist()
  }

  // ---------------------------------------------------------------- configs

  async getEntityConfig(entityType: ConfigEntityType, entityName: string): Promise<Record<string, string>> {
    return { ...(this.#state.configs[entityType][entityName] ?? {}) }
  }

  async getEntityNames(entityType: ConfigEntityType): Promise<string[]> {
    // Sanitized names never contain '/': one that does is a nested entity (<user>/clients/<client-id>),
    // whose parent is listed as ZooKeeper lists the parent znode.
    return [...new Set(Object.keys(this.#state.configs[entityType]).map((n) => n.split('/')[0]!))].sort()
  }

  async getUserClientEntityNames(user: string): Promise<string[]> {
    const prefix = `${user}/clients/`
    return Object.keys(this.#state.configs.users).filter((n) => n.startsWith(prefix)).map((n) => n.slice(prefix.length)).sort()
  }

  async setEntityConfig(entityType: ConfigEntityType, entityName: string, config: Readonly<Record<string, string>>): Promise<void> {
    this.#state.configs[entityType][entityName] = { ...config }
    this.#persist()
    const changes = [{ entityType, entityName }]
    setImmediate(() => {
      for (const w of this.#configWatchers) w(changes)
    })
  }

  watchAclChanges(): Unwatch {
    // One broker: its own ACL changes are applied where they are made.
    return () => {}
  }

  watchConfigChanges(onChanges: (changes: ConfigChange[]) => void): Unwatch {
    this.#configWatchers.add(onChanges)
    return () => this.#configWatchers.delete(onChanges)
  }

  // ---------------------------------------------------------------- producer ids

  async allocateProducerIdBlock(_brokerId: number, blockSize: number): Promise<ProducerIdBlock> {
    const path = join(this.#dir, PRODUCER_ID_BLOCK_FILE)
    const start = readProducerIdBlockFile(path)
    const end = start + blockSize
    if (!Number.isSafeInteger(end)) throw new KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, 'producer ids are exhausted')
    await writeFileAtomic(path, `0\n${end}\n`)
    return { firstProducerId: start, lastProducerId: end - 1 }
  }

  // ---------------------------------------------------------------- internals

  #topic(name: string): StoredTopic | undefined {
    return this.#state.topics.find((t) => t.name === name)
  }

  #watch(channel: Channel, onChange: () => void): Unwatch {
    let set = this.#watchers.get(channel)
    if (set === undefined) {
      set = new Set()
      this.#watchers.set(channel, set)
    }
    // Each registration is its own entry, even for the same function.
    const entry = (): void => onChange()
    set.add(entry)
    return () => {
      set.delete(entry)
    }
  }

  /** Watchers run after the caller's write has returned, as ZooKeeper's would. */
  #notify(channel: Channel): void {
    const set = this.#watchers.get(channel)
    if (set === undefined || set.size === 0) return
    const callbacks = [...set]
    setImmediate(() => {
      if (this.#closed) return
      for (const cb of callbacks) cb()
    })
  }

  /** Numbers the writes as they begin; the newest one on disk is #persisted. */
  #persistsBegun = 0
  #persisted = 0
  /** Sliced writes go one after another (they share their temporary file). */
  #slicedWrites: Promise<void> = Promise.resolve()

  #persist(): void {
    const seq = ++this.#persistsBegun
    const states = Object.entries(this.#state.partitionStates)
    writeFileAtomicSync(this.#path, this.#fileText(states.map(([t, list]) => `    ${JSON.stringify(t)}: ${JSON.stringify(list)}`)))
    this.#persisted = Math.max(this.#persisted, seq)
  }

  #fileText(stateLines: readonly string[]): string {
    const s = this.#state
    const lines: string[] = []
    lines.push('{')
    lines.push(`  "version": ${FORMAT_VERSION},`)
    lines.push(`  "brokerEpoch": ${s.brokerEpoch},`)
    lines.push(`  "controllerEpoch": ${s.controllerEpoch},`)
    lines.push(`  "controllerEpochVersion": ${s.controllerEpochVersion},`)
    lines.push(`  "topics": [${s.topics.length === 0 ? '' : '\n' + s.topics.map((t) => `    ${JSON.stringify(t)}`).join(',\n') + '\n  '}],`)
    lines.push(`  "partitionStates": {${stateLines.length === 0 ? '' : '\n' + stateLines.join(',\n') + '\n  '}},`)
    lines.push(`  "deleteTopics": ${JSON.stringify(s.deleteTopics)},`)
    lines.push(`  "configs": ${JSON.stringify(s.configs)}${s.acls === undefined ? '' : ','}`)
    if (s.acls !== undefined) lines.push(`  "acls": ${JSON.stringify(s.acls)}`)
    lines.push('}')
    return lines.join('\n') + '\n'
  }

  /**
   * The same file as #persist, for writes of many partition states: the state lists are copied at once
   * (their entries are replaced, never changed, so the copy is a snapshot), stringified in pieces with
   * turns for others between them, and written and fsynced off the main thread. When a newer write
   * reached the disk meanwhile, this one is dropped: the newer holds everything this one had.
   */
  #persistInSlices(): Promise<void> {
    const seq = ++this.#persistsBegun
    const snapshot = Object.entries(this.#state.partitionStates).map(([t, list]) => [t, list.slice()] as const)
    // Everything but the states as it is now, with a mark where they go (JSON text never holds a raw NUL).
    const [before, after] = this.#fileText(['\u0000']).split('\u0000') as [string, string]
    const write = async (): Promise<void> => {
      if (this.#persisted > seq) return
      const slices = new MainThreadSlices()
      const tmp = `${this.#path}.sliced.tmp`
      const file = await openFile(tmp, 'w', 0o644)
      try {
        // Piece by piece: never the whole text (or its bytes) at once on the main thread.
        await file.write(before)
        for (let t = 0; t < snapshot.length; t++) {
          const [topic, list] = snapshot[t]!
          let text = `${t === 0 ? '' : ',\n'}    ${JSON.stringify(topic)}: [`
          for (let i = 0; i < list.length; i += STATES_PER_PIECE) {
            await slices.turn()
            text += `${i === 0 ? '' : ','}${JSON.stringify(list.slice(i, i + STATES_PER_PIECE)).slice(1, -1)}`
            await file.write(text)
            text = ''
          }
          await file.write(`${text}]`)
        }
        await file.write(after)
        await file.sync()
      } finally {
        await file.close()
      }
      if (this.#persisted > seq) return
      renameSync(tmp, this.#path)
      this.#persisted = seq
      await fsyncDir(this.#dir)
    }
    const done = this.#slicedWrites.then(write)
    this.#slicedWrites = done.catch(() => {})
    return done
  }
}

/** The first unreserved producer id recorded in the block file; 0 when there is none. Throws when it is unusable. */
export function readProducerIdBlockFile(path: string): number {
  let text: string
  try {
    const buf = readFileSync(path)
    if (buf.length > 64) throw new Error(`${buf.length} bytes`)
    text = buf.toString('utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0
    throw new KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, `cannot read ${path}: ${(err as Error).message}`)
  }
  const m = /^0\n(\d{1,16})\n$/.exec(text)
  const value = m === null ? NaN : Number(m[1])
  if (!Number.isSafeInteger(value)) throw new KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, `${path} is malformed; refusing to hand out producer ids that may repeat`)
  return value
}

function emptyConfigs(): FileV2['configs'] {
  return Object.fromEntries(CONFIG_ENTITY_TYPES.map((t) => [t, {}])) as FileV2['configs']
}

function normalize(raw: Partial<FileV2>): FileV2 {
  const configs = emptyConfigs()
  for (const t of CONFIG_ENTITY_TYPES) Object.assign(configs[t], raw.configs?.[t] ?? {})
  return {
    version: 2,
    brokerEpoch: raw.brokerEpoch ?? 0,
    controllerEpoch: raw.controllerEpoch ?? 0,
    controllerEpochVersion: raw.controllerEpochVersion ?? -1,
    topics: (raw.topics ?? []).map((t) => ({ ...t, addingReplicas: t.addingReplicas ?? {}, removingReplicas: t.removingReplicas ?? {} })),
    partitionStates: raw.partitionStates ?? {},
    deleteTopics: raw.deleteTopics ?? [],
    configs,
    ...(raw.acls === undefined ? {} : { acls: raw.acls }),
  }
}

function upgradeV1(v1: FileV1, brokerId: number): FileV2 {
  const state = normalize({})
  for (const t of v1.topics) {
    state.topics.push({
      name: t.name,
      topicId: t.topicId,
      createdAt: t.createdAt,
      partitions: Array.from({ length: t.partitions }, () => [brokerId]),
      addingReplicas: {},
      removingReplicas: {},
    })
    state.configs.topics[t.name] = { ...t.configs }
  }
  state.topics.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  if (v1.brokerConfigs !== undefined) {
    if (Object.keys(v1.brokerConfigs.perBroker).length > 0) state.configs.brokers[String(brokerId)] = { ...v1.brokerConfigs.perBroker }
    if (Object.keys(v1.brokerConfigs.clusterDefault).length > 0) state.configs.brokers[DEFAULT_ENTITY_NAME] = { ...v1.brokerConfigs.clusterDefault }
  }
  return state
}

function fromAssignment(a: TopicAssignment, createdAt: number): StoredTopic {
  const adding: Record<string, number[]> = {}
  const removing: Record<string, number[]> = {}
  a.partitions.forEach((r, p) => {
    if (r.addingReplicas.length > 0) adding[String(p)] = [...r.addingReplicas]
    if (r.removingReplicas.length > 0) removing[String(p)] = [...r.removingReplicas]
  })
  return { name: a.name, topicId: a.topicId, createdAt, partitions: a.partitions.map((r) => [...r.replicas]), addingReplicas: adding, removingReplicas: removing }
}

function toPartitionState(s: StoredPartitionState): PartitionState {
  return {
    leaderAndIsr: { leader: s.leader, leaderEpoch: s.leaderEpoch, isr: [...s.isr], leaderRecoveryState: s.leaderRecoveryState ?? LeaderRecoveryState.RECOVERED, partitionEpoch: s.version },
    controllerEpoch: s.controllerEpoch,
  }
}

function fromPartitionState(s: PartitionState, version: number): StoredPartitionState {
  const l = s.leaderAndIsr
  return { leader: l.leader, leaderEpoch: l.leaderEpoch, isr: [...l.isr], leaderRecoveryState: l.leaderRecoveryState, controllerEpoch: s.controllerEpoch, version }
}
