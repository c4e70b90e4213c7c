// Kafka's znode layout and payloads (ZooKeeper mode), encoded and decoded: the paths and JSON that
// Kafka's ZkData.scala defines, so that Kafka's tooling and a person with zkCli.sh see the tree they
// know. Every payload is UTF-8 JSON except /controller_epoch (plain decimal text). Decoders accept the
// older versions Kafka still reads and throw on malformed data (the caller decides what that means).
import {
  LeaderRecoveryState,
  type BrokerRegistration,
  type ConfigChange,
  type ConfigEntityType,
  type ListenerEndpoint,
  type PartitionState,
  type ProducerIdBlock,
  type ReplicaAssignment,
  type TopicAssignment,
  CONFIG_ENTITY_TYPES,
} from './metadata-store.js'

export const ZkPaths = {
  controller: '/controller',
  controllerEpoch: '/controller_epoch',
  brokers: '/brokers',
  brokerIds: '/brokers/ids',
  brokerId: (id: number) => `/brokers/ids/${id}`,
  topics: '/brokers/topics',
  topic: (t: string) => `/brokers/topics/${t}`,
  topicPartitions: (t: string) => `/brokers/topics/${t}/partitions`,
  topicPartition: (t: string, p: number) => `/brokers/topics/${t}/partitions/${p}`,
  partitionState: (t: string, p: number) => `/brokers/topics/${t}/partitions/${p}/state`,
  seqId: '/brokers/seqid',
  deleteTopics: '/admin/delete_topics',
  deleteTopic: (t: string) => `/admin/delete_topics/${t}`,
  config: '/config',
  configEntityType: (type: ConfigEntityType) => `/config/${type}`,
  configEntity: (type: ConfigEntityType, name: string) => `/config/${type}/${name}`,
  configChanges: '/config/changes',
  configChangePrefix: 'config_change_',
  clusterId: '/cluster/id',
  producerIdBlock: '/latest_producer_id_block',
  isrChangeNotification: '/isr_change_notification',
  logDirEventNotification: '/log_dir_event_notification',
  logDirEventPrefix: 'log_dir_event_',
  consumers: '/consumers',
  /** ACLs of LITERAL resource patterns (Kafka's AclAuthorizer): /kafka-acl/<ResourceType>/<name>. */
  acls: '/kafka-acl',
  /** ACLs of PREFIXED resource patterns: /kafka-acl-extended/prefixed/<ResourceType>/<name>. */
  prefixedAcls: '/kafka-acl-extended/prefixed',
  aclChanges: '/kafka-acl-changes',
  extendedAclChanges: '/kafka-acl-extended-changes',
  aclChangePrefix: 'acl_changes_',
} as const

/** ZkData.PersistentZkPaths plus /config/<type> for every entity type: created at broker startup. */
export const PERSISTENT_ZK_PATHS: readonly string[] = [
  ZkPaths.consumers,
  ZkPaths.brokerIds,
  ZkPaths.topics,
  ZkPaths.configChanges,
  ZkPaths.deleteTopics,
  ZkPaths.seqId,
  ZkPaths.isrChangeNotification,
  ZkPaths.producerIdBlock,
  ZkPaths.logDirEventNotification,
  ZkPaths.acls,
  ZkPaths.prefixedAcls,
  ZkPaths.aclChanges,
  ZkPaths.extendedAclChanges,
  ...CONFIG_ENTITY_TYPES.map((t) => ZkPaths.configEntityType(t)),
]

const json = (value: unknown): Buffer => Buffer.from(JSON.stringify(value), 'utf8')

function parseObject(data: Buffer, what: string): Record<string, unknown> {
  let parsed: unknown
  try {
    parsed = JSON.parse(data.toString('utf8'))
  } catch (err) {
    throw new Error(`${what}: not JSON (${(err as Error).message})`)
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error(`${what}: not a JSON object`)
  return parsed as Record<string, unknown>
}

function int(value: unknown, what: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value)) throw new Error(`${what}: not an integer`)
  return value
}

function intList(value: unknown, what: string): number[] {
  if (!Array.isArray(value)) throw new Error(`${what}: not a list`)
  return value.map((v, i) => int(v, `${what}[${i}]`))
}

// ---- /controller

/** {"version":2,"brokerid":1,"timestamp":"1730000000000","kraftControllerEpoch":-1}; the timestamp is a string. */
export function encodeController(brokerId: number, timestamp = Date.now()): Buffer {
  return json({ version: 2, brokerid: brokerId, timestamp: String(timestamp), kraftControllerEpoch: -1 })
}

export function decodeController(data: Buffer): number {
  return int(parseObject(data, '/controller').brokerid, '/controller brokerid')
}

// ---- /controller_epoch: plain decimal text

export function encodeControllerEpoch(epoch: number): Buffer {
  return Buffer.from(String(epoch), 'utf8')
}

export function decodeControllerEpoch(data: Buffer): number {
  const text = data.toString('utf8').trim()
  if (!/^-?\d+$/.test(text)) throw new Error(`/controller_epoch: '${text.slice(0, 40)}' is not a number`)
  return Number(text)
}

// ---- /brokers/ids/<id>

/**
 * Version 5: host/port of the first PLAINTEXT endpoint (null/-1 without one, for old clients), endpoints
 * as listener URIs, rack only when set, the listener -> security protocol map, features (none).
 */
export function encodeBrokerRegistration(reg: BrokerRegistration, timestamp = Date.now()): Buffer {
  const plaintext = reg.endpoints.find((e) => e.securityProtocol === 'PLAINTEXT')
  const body: Record<string, unknown> = {
    version: 5,
    host: plaintext?.host ?? null,
    port: plaintext?.port ?? -1,
    jmx_port: -1,
    timestamp: String(timestamp),
    endpoints: reg.endpoints.map((e) => `${e.listenerName}://${formatHost(e.host)}:${e.port}`),
  }
  if (reg.rack !== null) body.rack = reg.rack
  body.listener_security_protocol_map = Object.fromEntries(reg.endpoints.map((e) => [e.listenerName, e.securityProtocol]))
  body.features = {}
  return json(body)
}

function formatHost(host: string): string {
  return host.includes(':') ? `[${host}]` : host
}

export function decodeBrokerRegistration(id: number, data: Buffer): BrokerRegistration {
  const what = `/brokers/ids/${id}`
  const o = parseObject(data, what)
  const version = int(o.version, `${what} version`)
  let endpoints: ListenerEndpoint[]
  if (version <= 1) {
    endpoints = [{ listenerName: 'PLAINTEXT', host: String(o.host), port: int(o.port, `${what} port`), securityProtocol: 'PLAINTEXT' }]
  } else {
    const map = (o.listener_security_protocol_map ?? {}) as Record<string, string>
    if (!Array.isArray(o.endpoints)) throw new Error(`${what}: endpoints is not a list`)
    endpoints = o.endpoints.map((uri) => parseEndpoint(String(uri), map, what))
  }
  const rack = typeof o.rack === 'string' ? o.rack : null
  return { id, endpoints, rack }
}

function parseEndpoint(uri: string, protocolMap: Record<string, string>, what: string): ListenerEndpoint {
  const m = /^([A-Za-z0-9_-]+):\/\/(\[[^\]]*\]|[^:]*):(\d+)$/.exec(uri)
  if (m === null) throw new Error(`${what}: bad endpoint '${uri}'`)
  const listenerName = m[1]!
  const host = m[2]!.startsWith('[') ? m[2]!.slice(1, -1) : m[2]!
  return { listenerName, host, port: Number(m[3]), securityProtocol: protocolMap[listenerName] ?? listenerName }
}

// ---- /brokers/topics/<t>

/** Version 3: partitions, adding/removing replicas (only partitions that have some), topic_id when known. */
export function encodeTopicAssignment(a: TopicAssignment): Buffer {
  const partitions: Record<string, number[]> = {}
  const adding: Record<string, number[]> = {}
  const removing: Record<string, number[]> = {}
  a.partitions.forEach((r, p) => {
    partitions[String(p)] = r.replicas
    if (r.addingReplicas.length > 0) adding[String(p)] = r.addingReplicas
    if (r.removingReplicas.length > 0) removing[String(p)] = r.removingReplicas
  })
  const body: Record<string, unknown> = { version: 3 }
  if (a.topicId !== null) body.topic_id = a.topicId
  body.partitions = partitions
  body.adding_replicas = adding
  body.removing_replicas = removing
  return json(body)
}

export function decodeTopicAssignment(name: string, data: Buffer): TopicAssignment {
  const what = `/brokers/topics/${name}`
  const o = parseObject(data, what)
  const partitionsJson = (o.partitions ?? {}) as Record<string, unknown>
  const adding = (o.adding_replicas ?? {}) as Record<string, unknown>
  const removing = (o.removing_replicas ?? {}) as Record<string, unknown>
  const entries = Object.entries(partitionsJson).map(([p, replicas]) => {
    const index = Number(p)
    if (!Number.isInteger(index) || index < 0) throw new Error(`${what}: bad partition '${p}'`)
    const r: ReplicaAssignment = {
      replicas: intList(replicas, `${what} partition ${p}`),
      addingReplicas: adding[p] === undefined ? [] : intList(adding[p], `${what} adding ${p}`),
      removingReplicas: removing[p] === undefined ? [] : intList(removing[p], `${what} removing ${p}`),
    }
    return [index, r] as const
  })
  entries.sort((x, y) => x[0] - y[0])
  const partitions: ReplicaAssignment[] = []
  for (const [index, r] of entries) {
    if (index !== partitions.length) throw new Error(`${what}: partitions are not 0..n-1`)
    partitions.push(r)
  }
  return { name, topicId: typeof o.topic_id === 'string' ? o.topic_id : null, partitions }
}

// ---- /brokers/topics/<t>/partitions/<p>/state

/** Version 1; leader_recovery_state only while RECOVERING. The znode's version is the partition epoch. */
export function encodePartitionState(s: PartitionState): Buffer {
  const l = s.leaderAndIsr
  const body: Record<string, unknown> = { version: 1, leader: l.leader, leader_epoch: l.leaderEpoch, controller_epoch: s.controllerEpoch, isr: l.isr }
  if (l.leaderRecoveryState === LeaderRecoveryState.RECOVERING) body.leader_recovery_state = LeaderRecoveryState.RECOVERING
  return json(body)
}

export function decodePartitionState(path: string, data: Buffer, zkVersion: number): PartitionState {
  const o = parseObject(data, path)
  return {
    leaderAndIsr: {
      leader: int(o.leader, `${path} leader`),
      leaderEpoch: int(o.leader_epoch, `${path} leader_epoch`),
      isr: intList(o.isr, `${path} isr`),
      leaderRecoveryState: o.leader_recovery_state === undefined ? LeaderRecoveryState.RECOVERED : int(o.leader_recovery_state, `${path} leader_recovery_state`),
      partitionEpoch: zkVersion,
    },
    controllerEpoch: int(o.controller_epoch, `${path} controller_epoch`),
  }
}

// ---- /config/<type>/<name> and /config/changes/config_change_<seq>

/** {"version":1,"config":{...}}; every value is a string. */
export function encodeEntityConfig(config: Readonly<Record<string, string>>): Buffer {
  return json({ version: 1, config })
}

export function decodeEntityConfig(path: string, data: Buffer): Record<string, string> {
  if (data.length === 0) return {}
  const o = parseObject(data, path)
  const config = (o.config ?? {}) as Record<string, unknown>
  const out: Record<string, string> = {}
  for (const [k, v] of Object.entries(config)) out[k] = String(v)
  return out
}

/** {"version":2,"entity_path":"topics/<t>"} */
export function encodeConfigChange(change: ConfigChange): Buffer {
  return json({ version: 2, entity_path: `${change.entityType}/${change.entityName}` })
}

/** The entity a notification names, or undefined for version 1 notifications and unknown types (skipped). */
export function decodeConfigChange(data: Buffer): ConfigChange | undefined {
  const o = parseObject(data, ZkPaths.configChanges)
  if (o.version !== 2 || typeof o.entity_path !== 'string') return undefined
  const slash = o.entity_path.indexOf('/')
  if (slash < 0) return undefined
  const entityType = o.entity_path.slice(0, slash) as ConfigEntityType
  if (!CONFIG_ENTITY_TYPES.includes(entityType)) return undefined
  return { entityType, entityName: o.entity_path.slice(slash + 1) }
}

// ---- /cluster/id

/** {"version":"1","id":"<cluster id>"}: the version is a string here. */
export function encodeClusterId(id: string): Buffer {
  return json({ version: '1', id })
}

export function decodeClusterId(data: Buffer): string {
  const id = parseObject(data, ZkPaths.clusterId).id
  if (typeof id !== 'string' || id === '') throw new Error(`${ZkPaths.clusterId}: no id`)
  return id
}

// ---- /latest_producer_id_block

/** {"version":1,"broker":1,"block_start":"0","block_end":"999"}: start and end (inclusive) are strings. */
export function encodeProducerIdBlock(brokerId: number, block: ProducerIdBlock): Buffer {
  return json({ version: 1, broker: brokerId, block_start: String(block.firstProducerId), block_end: String(block.lastProducerId) })
}

export function decodeProducerIdBlock(data: Buffer): ProducerIdBlock | undefined {
  if (data.length === 0) return undefined
  const o = parseObject(data, ZkPaths.producerIdBlock)
  const first = Number(o.block_start)
  const last = Number(o.block_end)
  if (!Number.isSafeInteger(first) || !Number.isSafeInteger(last)) throw new Error(`${ZkPaths.producerIdBlock}: malformed block`)
  return { firstProducerId: first, lastProducerId: last }
}

// ---- /log_dir_event_notification/log_dir_event_<seq> (ZkData.scala LogDirEventNotificationSequenceZNode)

/** Kafka's LogDirEventNotificationHandler.LogDirFailureEvent. */
export const LOG_DIR_FAILURE_EVENT = 1

export function encodeLogDirEvent(brokerId: number): Buffer {
  return Buffer.from(JSON.stringify({ version: 1, broker: brokerId, event: LOG_DIR_FAILURE_EVENT }), 'utf8')
}

/** The broker id of a log dir event, or undefined for a malformed or other event. */
export function decodeLogDirEvent(data: Buffer): number | undefined {
  try {
    const j = JSON.parse(data.toString('utf8')) as { broker?: unknown; event?: unknown }
    return Number.isInteger(j.broker) && j.event === LOG_DIR_FAILURE_EVENT ? (j.broker as number) : undefined
  } catch {
    return undefined
  }
}
