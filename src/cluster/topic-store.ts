// The broker's record of which topics exist: name, topic id, partition count and per-topic config
// overrides. On a single broker without a controller quorum this is what ZooKeeper's /brokers/topics and
// /config/topics hold for Kafka.
//
// File `<log.dir>/cluster-metadata.json`, layout:
//   { "version": 1, "topics": [ { "name", "topicId", "partitions", "replicationFactor", "configs": {k: v},
//     "createdAt" } ... ],
//     "brokerConfigs": { "perBroker": {k: v}, "clusterDefault": {k: v} } }
// brokerConfigs holds what AlterConfigs set on the broker resource (Kafka keeps these in ZooKeeper's
// /config/brokers/<id> and /config/brokers/<default>).
// Every change rewrites the whole file atomically: write `cluster-metadata.json.tmp`, fsync it, rename it
// over the old file, fsync the directory. A crash leaves either the old or the new file, never a mix; a
// stale `.tmp` is ignored and replaced. Topics are few and change rarely, so rewriting is cheap.
//
// Recovery: partition directories on disk that this file does not list (a topic deletion that a crash
// cut short before its directories were renamed, or a lost file) are never adopted as topics: the
// broker moves them aside at startup (`<topic>-<partition>.<uuid>-stray`, kept on disk) and says so,
// so nothing deleted comes back and no data is dropped silently (TopicManager.recover).
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { randomKafkaUuid } from '../domain/uuid.js'
import { writeFileAtomicSync } from '../storage/atomic-file.js'

export interface TopicRecord {
  name: string
  /** Kafka's topic id: 16 random bytes, shown in base64url (22 characters). */
  topicId: string
  partitions: number
  replicationFactor: number
  configs: Record<string, string>
  createdAt: number
}

const FILE_NAME = 'cluster-metadata.json'
const FORMAT_VERSION = 1

export interface DynamicBrokerConfigRecord {
  perBroker: Record<string, string>
  clusterDefault: Record<string, string>
}

export class TopicStore {
  private readonly topics = new Map<string, TopicRecord>()
  private brokerConfigs: DynamicBrokerConfigRecord = { perBroker: {}, clusterDefault: {} }
  private readonly byId = new Map<string, TopicRecord>()

  private constructor(private readonly dir: string) {}

  static open(dir: string): TopicStore {
    const store = new TopicStore(dir)
    const path = join(dir, FILE_NAME)
    if (existsSync(path)) {
      const parsed = JSON.parse(readFileSync(path, 'utf8')) as { version: number; topics: TopicRecord[]; brokerConfigs?: DynamicBrokerConfigRecord }
      if (parsed.version !== FORMAT_VERSION) {
        throw new Error(`${path}: unsupported format version ${parsed.version} (this broker reads version ${FORMAT_VERSION})`)
      }
      for (const t of parsed.topics) store.index(t)
      if (parsed.brokerConfigs !== undefined) store.brokerConfigs = parsed.brokerConfigs
    }
    return store
  }

  list(): TopicRecord[] {
    return [...this.topics.values()].sort((a, b) => a.name.localeCompare(b.name))
  }

  get(name: string): TopicRecord | undefined {
    return this.topics.get(name)
  }

  getById(topicId: string): TopicRecord | undefined {
    return this.byId.get(topicId)
  }

  /** Adds a topic and persists it before returning. */
  create(record: Omit<TopicRecord, 'topicId' | 'createdAt'> & { topicId?: string; createdAt?: number }): TopicRecord {
    if (this.topics.has(record.name)) throw new Error(`topic ${record.name} already exists`)
    const full: TopicRecord = {
      name: record.name,
      topicId: record.topicId ?? randomKafkaUuid(),
      partitions: record.partitions,
      replicationFactor: record.replicationFactor,
      configs: { ...record.configs },
      createdAt: record.createdAt ?? Date.now(),
    }
    this.index(full)
    this.persist()
    return full
  }

  setPartitions(name: string, partitions: number): void {
    const t = this.require(name)
    t.partitions = partitions
    this.persist()
  }

  setConfigs(name: string, configs: Record<string, string>): void {
    const t = this.require(name)
    t.configs = { ...configs }
    this.persist()
  }

  delete(name: string): void {
    const t = this.require(name)
    this.topics.delete(name)
    this.byId.delete(t.topicId)
    this.persist()
  }

  dynamicBrokerConfigs(): DynamicBrokerConfigRecord {
    return { perBroker: { ...this.brokerConfigs.perBroker }, clusterDefault: { ...this.brokerConfigs.clusterDefault } }
  }

  setDynamicBrokerConfigs(configs: DynamicBrokerConfigRecord): void {
    this.brokerConfigs = { perBroker: { ...configs.perBroker }, clusterDefault: { ...configs.clusterDefault } }
    this.persist()
  }

  private require(name: string): TopicRecord {
    const t = this.topics.get(name)
    if (t === undefined) throw new Error(`unknown topic ${name}`)
    return t
  }

  private index(t: TopicRecord): void {
    this.topics.set(t.name, t)
    this.byId.set(t.topicId, t)
  }

  private persist(): void {
    const path = join(this.dir, FILE_NAME)
    const body = JSON.stringify({ version: FORMAT_VERSION, topics: this.list(), brokerConfigs: this.brokerConfigs }, null, 2) + '\n'
    writeFileAtomicSync(path, body)
  }
}
