// REST Proxy API v3 (Confluent's api/v3/openapi.yaml, application/json): clusters, brokers, topics
// (list, create with configs, delete, partition count), partitions and replicas, topic and broker configs
// (list, get, set, reset, alter batch), consumer groups, their consumers and assignments, and lag
// (per partition and the group's summary). Every resource carries `kind`, `metadata.self` (and a CRN
// resource_name) and `related` links, as the spec's schemas require. Records (produce) are produce.ts.
import type { ConfigEntry, ConfigResource, GroupDescription, TopicDescription } from '../client/admin.js'
import type { PartitionInfo } from '../client/cluster-connections.js'
import { ErrorCode, KafkaError } from '../client/errors.js'
import { EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, tpKey } from '../client/offsets.js'
import type { BufferedRequest, HttpServer } from '../http/index.js'
import { type RestContext, jsonRoute } from './context.js'
import { Errors, RestError } from './errors.js'
import { V3_JSON, asObject, baseUrl, checkV3ContentType, intParam, jsonBody, optArray, optBool, optInt, optString, reqInt, reqString } from './request.js'

const enc = encodeURIComponent

/** URLs and CRNs of one cluster's resources, from the base URL the client used. */
class Links {
  constructor(
    readonly base: string,
    readonly cluster: string,
  ) {}

  url(...segments: (string | number)[]): string {
    return `${this.base}/v3/clusters/${enc(this.cluster)}${segments.map((s) => `/${enc(String(s))}`).join('')}`
  }

  crn(...pairs: [string, string | number][]): string {
    return `crn:///kafka=${this.cluster}${pairs.map(([k, v]) => `/${k}=${v}`).join('')}`
  }

  related(...segments: (string | number)[]): { related: string } {
    return { related: this.url(...segments) }
  }
}

function list(kind: string, self: string, data: unknown[]): unknown {
  return { kind, metadata: { self, next: null }, data }
}

const GROUP_STATES: Record<string, string> = {
  Stable: 'STABLE',
  PreparingRebalance: 'PREPARING_REBALANCE',
  CompletingRebalance: 'COMPLETING_REBALANCE',
  Empty: 'EMPTY',
  Dead: 'DEAD',
  Assigning: 'ASSIGNING',
  Reconciling: 'RECONCILING',
}

export function mountV3(server: HttpServer, ctx: RestContext): void {
  /** A route under /v3/clusters/{cluster_id}: the cluster must be this one (else 404). */
  const routeWith = (method: string, pattern: string, fn: (req: BufferedRequest, links: Links) => Promise<{ status: number; body?: unknown }>): void =>
    jsonRoute(server, ctx, method, `/v3/clusters/:cluster_id${pattern}`, V3_JSON, async (req) => {
      if (req.body.length > 0) checkV3ContentType(req)
      const id = await ctx.clusterId()
      if (req.params.cluster_id !== id) throw Errors.clusterNotFound(req.params.cluster_id!)
      return fn(req, new Links(baseUrl(req, ctx.fallbackBaseUrl), id))
    })
  const get = (pattern: string, fn: (req: BufferedRequest, links: Links) => Promise<{ status: number; body?: unknown }>): void => routeWith('GET', pattern, fn)

  // Clusters

  const clusterData = async (links: Links): Promise<unknown> => {
    const { controllerId } = await ctx.admin.describeCluster()
    return {
      kind: 'KafkaCluster',
      metadata: { self: links.url(), resource_name: links.crn() },
      cluster_id: links.cluster,
      controller: links.related('brokers', controllerId),
      acls: links.related('acls'),
      brokers: links.related('brokers'),
      broker_configs: links.related('broker-configs'),
      consumer_groups: links.related('consumer-groups'),
      topics: links.related('topics'),
      partition_reassignments: links.related('topics', '-', 'partitions', '-', 'reassignment'),
    }
  }

  jsonRoute(server, ctx, 'GET', '/v3/clusters', V3_JSON, async (req) => {
    const links = new Links(baseUrl(req, ctx.fallbackBaseUrl), await ctx.clusterId())
    return { status: 200, body: list('KafkaClusterList', `${links.base}/v3/clusters`, [await clusterData(links)]) }
  })

  get('', async (_req, links) => ({ status: 200, body: await clusterData(links) }))

  // Brokers

  const brokerData = (links: Links, b: { nodeId: number; host: string; port: number; rack: string | null }): unknown => ({
    kind: 'KafkaBroker',
    metadata: { self: links.url('brokers', b.nodeId), resource_name: links.crn(['broker', b.nodeId]) },
    cluster_id: links.cluster,
    broker_id: b.nodeId,
    host: b.host,
    port: b.port,
    rack: b.rack,
    configs: links.related('brokers', b.nodeId, 'configs'),
    partition_replicas: links.related('brokers', b.nodeId, 'partition-replicas'),
  })

  const brokers = async (): Promise<{ nodeId: number; host: string; port: number; rack: string | null }[]> => (await ctx.admin.describeCluster()).brokers.sort((a, b) => a.nodeId - b.nodeId)

  const broker = async (param: string | undefined): Promise<{ nodeId: number; host: string; port: number; rack: string | null }> => {
    const id = intParam(param, Errors.notFound)
    const b = (await brokers()).find((x) => x.nodeId === id)
    if (b === undefined) throw Errors.notFound()
    return b
  }

  get('/brokers', async (_req, links) => ({ status: 200, body: list('KafkaBrokerList', links.url('brokers'), (await brokers()).map((b) => brokerData(links, b))) }))
  get('/brokers/:broker_id', async (req, links) => ({ status: 200, body: brokerData(links, await broker(req.params.broker_id)) }))

  // Topics

  const topicDescription = async (name: string): Promise<TopicDescription> => {
    try {
      const [t] = await ctx.admin.describeTopics([name])
      return t!
    } catch (e) {
      if (e instanceof KafkaError && (e.code === ErrorCode.UNKNOWN_TOPIC_OR_PARTITION || e.code === ErrorCode.INVALID_TOPIC_EXCEPTION)) throw Errors.unknownTopicPartition()
      throw e
    }
  }

  const topicData = (links: Links, t: { name: string; isInternal: boolean; partitionsCount: number; replicationFactor: number }): unknown => ({
    kind: 'KafkaTopic',
    metadata: { self: links.url('topics', t.name), resource_name: links.crn(['topic', t.name]) },
    cluster_id: links.cluster,
    topic_name: t.name,
    is_internal: t.isInternal,
    replication_factor: t.replicationFactor,
    partitions_count: t.partitionsCount,
    partitions: links.related('topics', t.name, 'partitions'),
    configs: links.related('topics', t.name, 'configs'),
    partition_reassignments: links.related('topics', t.name, 'partitions', '-', 'reassignment'),
  })

  const fromDescription = (t: TopicDescription): { name: string; isInternal: boolean; partitionsCount: number; replicationFactor: number } => ({
    name: t.name,
    isInternal: t.isInternal,
    partitionsCount: t.partitions.length,
    replicationFactor: t.partitions[0]?.replicas.length ?? 0,
  })

  get('/topics', async (_req, links) => {
    const all = await ctx.admin.describeTopics(null, { includeInternal: true })
    return { status: 200, body: list('KafkaTopicList', links.url('topics'), all.map((t) => topicData(links, fromDescription(t)))) }
  })

  get('/topics/:topic_name', async (req, links) => ({ status: 200, body: topicData(links, fromDescription(await topicDescription(req.params.topic_name!))) }))

  // Partitions and replicas

  const partitionData = (links: Links, topic: string, p: PartitionInfo): unknown => ({
    kind: 'KafkaPartition',
    metadata: { self: links.url('topics', topic, 'partitions', p.partition), resource_name: links.crn(['topic', topic], ['partition', p.partition]) },
    cluster_id: links.cluster,
    topic_name: topic,
    partition_id: p.partition,
    ...(p.leader >= 0 ? { leader: links.related('topics', topic, 'partitions', p.partition, 'replicas', p.leader) } : {}),
    replicas: links.related('topics', topic, 'partitions', p.partition, 'replicas'),
    reassignment: links.related('topics', topic, 'partitions', p.partition, 'reassignment'),
  })

  const replicaData = (links: Links, topic: string, p: PartitionInfo, brokerId: number): unknown => ({
    kind: 'KafkaReplica',
    metadata: { self: links.url('topics', topic, 'partitions', p.partition, 'replicas', brokerId), resource_name: links.crn(['topic', topic], ['partition', p.partition], ['replica', brokerId]) },
    cluster_id: links.cluster,
    topic_name: topic,
    partition_id: p.partition,
    broker_id: brokerId,
    is_leader: p.leader === brokerId,
    is_in_sync: p.isr.includes(brokerId),
    broker: links.related('brokers', brokerId),
  })

  const partition = async (topic: string, param: string | undefined): Promise<PartitionInfo> => {
    const t = await topicDescription(topic)
    const id = intParam(param, Errors.unknownTopicPartition)
    const p = t.partitions.find((x) => x.partition === id)
    if (p === undefined) throw Errors.unknownTopicPartition()
    return p
  }

  get('/topics/:topic_name/partitions', async (req, links) => {
    const t = await topicDescription(req.params.topic_name!)
    return { status: 200, body: list('KafkaPartitionList', links.url('topics', t.name, 'partitions'), t.partitions.map((p) => partitionData(links, t.name, p))) }
  })

  get('/topics/:topic_name/partitions/:partition_id', async (req, links) => {
    const topic = req.params.topic_name!
    return { status: 200, body: partitionData(links, topic, await partition(topic, req.params.partition_id)) }
  })

  get('/topics/:topic_name/partitions/:partition_id/offset', async (req, links) => {
    const topic = req.params.topic_name!
    const p = await partition(topic, req.params.partition_id)
    const q = (timestamp: number): Promise<Map<string, { offset: number }>> => ctx.admin.listOffsets([{ topic, partition: p.partition, timestamp }])
    const [earliest, latest] = await Promise.all([q(EARLIEST_TIMESTAMP), q(LATEST_TIMESTAMP)])
    return {
      status: 200,
      body: {
        kind: 'KafkaPartitionWithOffsets',
        metadata: { self: links.url('topics', topic, 'partitions', p.partition, 'offset'), resource_name: links.crn(['topic', topic], ['partition', p.partition]) },
        cluster_id: links.cluster,
        topic_name: topic,
        partition_id: p.partition,
        earliest_offset: earliest.get(tpKey(topic, p.partition))?.offset ?? 0,
        latest_offset: latest.get(tpKey(topic, p.partition))?.offset ?? 0,
      },
    }
  })

  get('/topics/:topic_name/partitions/:partition_id/replicas', async (req, links) => {
    const topic = req.params.topic_name!
    const p = await partition(topic, req.params.partition_id)
    return { status: 200, body: list('KafkaReplicaList', links.url('topics', topic, 'partitions', p.partition, 'replicas'), p.replicas.map((b) => replicaData(links, topic, p, b))) }
  })

  get('/topics/:topic_name/partitions/:partition_id/replicas/:broker_id', async (req, links) => {
    const topic = req.params.topic_name!
    const p = await partition(topic, req.params.partition_id)
    const b = intParam(req.params.broker_id, Errors.notFound)
    if (!p.replicas.includes(b)) throw Errors.notFound()
    return { status: 200, body: replicaData(links, topic, p, b) }
  })

  get('/brokers/:broker_id/partition-replicas', async (req, links) => {
    const b = await broker(req.params.broker_id)
    const all = await ctx.admin.describeTopics(null, { includeInternal: true })
    const data = all.flatMap((t) => t.partitions.filter((p) => p.replicas.includes(b.nodeId)).map((p) => replicaData(links, t.name, p, b.nodeId)))
    return { status: 200, body: list('KafkaReplicaList', links.url('brokers', b.nodeId, 'partition-replicas'), data) }
  })

  // Topic admin

  routeWith('POST', '/topics', async (req, links) => {
    const body = asObject(jsonBody(req, true))
    const name = reqString(body, 'topic_name')
    if (body['replicas_assignments'] !== undefined && body['replicas_assignments'] !== null) throw Errors.badRequest('replicas_assignments is not supported: give partitions_count and replication_factor')
    const configs: Record<string, string> = {}
    for (const c of optArray(body, 'configs') ?? []) {
      const o = asObject(c, 'config')
      const value = optString(o, 'value')
      if (value !== undefined) configs[reqString(o, 'name')] = value
    }
    const validateOnly = optBool(body, 'validate_only') ?? false
    const [created] = await ctx.admin.createTopics(
      [{ name, numPartitions: optInt(body, 'partitions_count', 1) ?? -1, replicationFactor: optInt(body, 'replication_factor', 1, 32767) ?? -1, configs }],
      { validateOnly },
    )
    return { status: validateOnly ? 200 : 201, body: topicData(links, { name, isInternal: false, partitionsCount: created!.numPartitions, replicationFactor: created!.replicationFactor }) }
  })

  routeWith('PATCH', '/topics/:topic_name', async (req, links) => {
    const count = reqInt(asObject(jsonBody(req, true)), 'partitions_count', 1)
    const topic = req.params.topic_name!
    await topicDescription(topic)
    await ctx.admin.createPartitions(topic, count)
    return { status: 200, body: topicData(links, fromDescription(await topicDescription(topic))) }
  })

  routeWith('DELETE', '/topics/:topic_name', async (req) => {
    try {
      await ctx.admin.deleteTopics([req.params.topic_name!])
    } catch (e) {
      if (e instanceof KafkaError && e.code === ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) throw Errors.unknownTopicPartition()
      throw e
    }
    return { status: 204 }
  })

  // Configs (topic and broker)

  const configData = (links: Links, resource: ConfigResource, c: ConfigEntry): unknown => {
    const topic = resource.type === 'topic'
    const path = topic ? ['topics', resource.name, 'configs', c.name] : ['brokers', resource.name, 'configs', c.name]
    return {
      kind: topic ? 'KafkaTopicConfig' : 'KafkaBrokerConfig',
      metadata: { self: links.url(...path), resource_name: links.crn(topic ? ['topic', resource.name] : ['broker', resource.name], ['config', c.name]) },
      cluster_id: links.cluster,
      ...(topic ? { topic_name: resource.name } : { broker_id: Number(resource.name) }),
      name: c.name,
      value: c.sensitive ? null : c.value,
      is_default: c.isDefault,
      is_read_only: c.readOnly,
      is_sensitive: c.sensitive,
      source: c.source,
      synonyms: c.synonyms.map((s) => ({ name: s.name, value: c.sensitive ? null : s.value, source: s.source })),
    }
  }

  const describe = async (resource: ConfigResource): Promise<ConfigEntry[]> => {
    try {
      const [r] = await ctx.admin.describeConfigs([resource])
      return r?.configs ?? []
    } catch (e) {
      if (e instanceof KafkaError && e.code === ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) throw Errors.unknownTopicPartition()
      throw e
    }
  }

  const alterBatch = async (resource: ConfigResource, body: unknown): Promise<void> => {
    const o = asObject(body)
    const data = optArray(o, 'data')
    if (data === undefined) throw new RestError(422, 422, 'data may not be null')
    const ops = data.map((x) => {
      const e = asObject(x, 'config')
      const name = reqString(e, 'name')
      const op = (optString(e, 'operation') ?? 'SET').toUpperCase()
      if (op === 'DELETE') return { op: 'delete' as const, name }
      if (op !== 'SET') throw Errors.badRequest(`Unknown config operation ${op}: expected SET or DELETE`)
      const value = optString(e, 'value')
      if (value === undefined) throw Errors.badRequest(`config ${name}: SET needs a value`)
      return { op: 'set' as const, name, value }
    })
    await ctx.admin.alterConfigs(resource, ops, { validateOnly: optBool(o, 'validate_only') ?? false })
  }

  const configRoutes = (prefix: string, resourceOf: (req: BufferedRequest) => Promise<ConfigResource>): void => {
    get(`${prefix}/configs`, async (req, links) => {
      const resource = await resourceOf(req)
      const configs = await describe(resource)
      const self = links.url(...(resource.type === 'topic' ? ['topics', resource.name, 'configs'] : ['brokers', resource.name, 'configs']))
      return { status: 200, body: list(resource.type === 'topic' ? 'KafkaTopicConfigList' : 'KafkaBrokerConfigList', self, configs.map((c) => configData(links, resource, c))) }
    })
    get(`${prefix}/configs/:name`, async (req, links) => {
      const resource = await resourceOf(req)
      const c = (await describe(resource)).find((x) => x.name === req.params.name)
      if (c === undefined) throw Errors.notFound()
      return { status: 200, body: configData(links, resource, c) }
    })
    routeWith('PUT', `${prefix}/configs/:name`, async (req) => {
      const resource = await resourceOf(req)
      const value = optString(asObject(jsonBody(req, true)), 'value')
      const name = req.params.name!
      await ctx.admin.alterConfigs(resource, value === undefined ? [{ op: 'delete', name }] : [{ op: 'set', name, value }])
      return { status: 204 }
    })
    routeWith('DELETE', `${prefix}/configs/:name`, async (req) => {
      await ctx.admin.alterConfigs(await resourceOf(req), [{ op: 'delete', name: req.params.name! }])
      return { status: 204 }
    })
    routeWith('POST', `${prefix}/configs:alter`, async (req) => {
      await alterBatch(await resourceOf(req), jsonBody(req, true))
      return { status: 204 }
    })
  }

  configRoutes('/topics/:topic_name', async (req) => {
    const name = req.params.topic_name!
    await topicDescription(name)
    return { type: 'topic', name }
  })
  configRoutes('/brokers/:broker_id', async (req) => ({ type: 'broker', name: String((await broker(req.params.broker_id)).nodeId) }))

  get('/topics/-/configs', async (_req, links) => {
    const topics = await ctx.admin.listTopics({ includeInternal: true })
    const described = topics.length === 0 ? [] : await ctx.admin.describeConfigs(topics.map((name) => ({ type: 'topic' as const, name })))
    const data = described.flatMap((r) => r.configs.map((c) => configData(links, r.resource, c)))
    return { status: 200, body: list('KafkaTopicConfigList', links.url('topics', '-', 'configs'), data) }
  })

  get('/brokers/-/configs', async (_req, links) => {
    const ids = (await brokers()).map((b) => String(b.nodeId))
    const data: unknown[] = []
    for (const name of ids) for (const c of await describe({ type: 'broker', name })) data.push(configData(links, { type: 'broker', name }, c))
    return { status: 200, body: list('KafkaBrokerConfigList', links.url('brokers', '-', 'configs'), data) }
  })

  // Consumer groups, consumers, assignments and lag

  const coordinatorId = async (group: string): Promise<number> => {
    const conn = await ctx.admin.cluster.coordinator(group)
    for (const b of ctx.admin.cluster.metadata.brokers.values()) if (b.host === conn.host && b.port === conn.port) return b.nodeId
    return -1
  }

  const groupDescription = async (group: string): Promise<GroupDescription> => {
    const [g] = await ctx.admin.describeGroups([group]).catch((e: unknown) => {
      if (e instanceof KafkaError && e.code === ErrorCode.GROUP_ID_NOT_FOUND) throw Errors.notFound()
      throw e
    })
    if (g === undefined || g.state === 'Dead') throw Errors.notFound()
    return g
  }

  const groupData = async (links: Links, g: GroupDescription): Promise<unknown> => ({
    kind: 'KafkaConsumerGroup',
    metadata: { self: links.url('consumer-groups', g.groupId), resource_name: links.crn(['consumer-group', g.groupId]) },
    cluster_id: links.cluster,
    consumer_group_id: g.groupId,
    is_simple: g.protocolType === '',
    partition_assignor: g.protocol,
    state: GROUP_STATES[g.state] ?? 'UNKNOWN',
    type: 'CLASSIC',
    is_mixed_consumer_group: false,
    coordinator: links.related('brokers', await coordinatorId(g.groupId)),
    consumers: links.related('consumer-groups', g.groupId, 'consumers'),
    lag_summary: links.related('consumer-groups', g.groupId, 'lag-summary'),
  })

  get('/consumer-groups', async (_req, links) => {
    const ids = (await ctx.admin.listGroups()).map((g) => g.groupId)
    const described = ids.length === 0 ? [] : await ctx.admin.describeGroups(ids)
    const data = await Promise.all(described.filter((g) => g.state !== 'Dead').map((g) => groupData(links, g)))
    return { status: 200, body: list('KafkaConsumerGroupList', links.url('consumer-groups'), data) }
  })

  get('/consumer-groups/:group', async (req, links) => ({ status: 200, body: await groupData(links, await groupDescription(req.params.group!)) }))

  type Member = GroupDescription['members'][number]
  const consumerData = (links: Links, group: string, m: Member): unknown => ({
    kind: 'KafkaConsumer',
    metadata: { self: links.url('consumer-groups', group, 'consumers', m.memberId), resource_name: links.crn(['consumer-group', group], ['consumer', m.memberId]) },
    cluster_id: links.cluster,
    consumer_group_id: group,
    consumer_id: m.memberId,
    instance_id: m.groupInstanceId,
    client_id: m.clientId,
    assignments: links.related('consumer-groups', group, 'consumers', m.memberId, 'assignments'),
  })

  const assignmentData = (links: Links, group: string, m: Member, a: { topic: string; partition: number }): unknown => ({
    kind: 'KafkaConsumerAssignment',
    metadata: {
      self: links.url('consumer-groups', group, 'consumers', m.memberId, 'assignments', a.topic, 'partitions', a.partition),
      resource_name: links.crn(['consumer-group', group], ['consumer', m.memberId], ['topic', a.topic], ['partition', a.partition]),
    },
    cluster_id: links.cluster,
    consumer_group_id: group,
    consumer_id: m.memberId,
    topic_name: a.topic,
    partition_id: a.partition,
    partition: links.related('topics', a.topic, 'partitions', a.partition),
    lag: links.related('consumer-groups', group, 'lags', a.topic, 'partitions', a.partition),
  })

  const member = async (group: string, consumer: string): Promise<Member> => {
    const m = (await groupDescription(group)).members.find((x) => x.memberId === consumer)
    if (m === undefined) throw Errors.notFound()
    return m
  }

  get('/consumer-groups/:group/consumers', async (req, links) => {
    const g = await groupDescription(req.params.group!)
    return { status: 200, body: list('KafkaConsumerList', links.url('consumer-groups', g.groupId, 'consumers'), g.members.map((m) => consumerData(links, g.groupId, m))) }
  })

  get('/consumer-groups/:group/consumers/:consumer', async (req, links) => ({ status: 200, body: consumerData(links, req.params.group!, await member(req.params.group!, req.params.consumer!)) }))

  get('/consumer-groups/:group/consumers/:consumer/assignments', async (req, links) => {
    const group = req.params.group!
    const m = await member(group, req.params.consumer!)
    return { status: 200, body: list('KafkaConsumerAssignmentList', links.url('consumer-groups', group, 'consumers', m.memberId, 'assignments'), m.assignment.map((a) => assignmentData(links, group, m, a))) }
  })

  get('/consumer-groups/:group/consumers/:consumer/assignments/:topic_name/partitions/:partition_id', async (req, links) => {
    const group = req.params.group!
    const m = await member(group, req.params.consumer!)
    const p = intParam(req.params.partition_id, Errors.notFound)
    const a = m.assignment.find((x) => x.topic === req.params.topic_name && x.partition === p)
    if (a === undefined) throw Errors.notFound()
    return { status: 200, body: assignmentData(links, group, m, a) }
  })

  interface Lag {
    topic: string
    partition: number
    current: number
    end: number
    lag: number
    member: Member | undefined
  }

  /** Lag of every partition the group has committed an offset for: log end offset minus the commit. */
  const lags = async (group: string): Promise<{ g: GroupDescription; rows: Lag[] }> => {
    const g = await groupDescription(group)
    const committed = await ctx.admin.fetchOffsets(group)
    const owner = new Map<string, Member>()
    for (const m of g.members) for (const a of m.assignment) owner.set(tpKey(a.topic, a.partition), m)
    const tps = [...committed].filter(([, o]) => o >= 0).map(([k, o]) => {
      const i = k.lastIndexOf('\u0000')
      return { topic: k.slice(0, i), partition: Number(k.slice(i + 1)), committed: o }
    })
    const ends = tps.length === 0 ? new Map() : await ctx.admin.listOffsets(tps.map((t) => ({ topic: t.topic, partition: t.partition, timestamp: LATEST_TIMESTAMP })))
    const rows = tps
      .map((t) => {
        const end = ends.get(tpKey(t.topic, t.partition))?.offset ?? t.committed
        return { topic: t.topic, partition: t.partition, current: t.committed, end, lag: Math.max(0, end - t.committed), member: owner.get(tpKey(t.topic, t.partition)) }
      })
      .sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition))
    return { g, rows }
  }

  const lagData = (links: Links, group: string, r: Lag): unknown => ({
    kind: 'KafkaConsumerLag',
    metadata: { self: links.url('consumer-groups', group, 'lags', r.topic, 'partitions', r.partition), resource_name: links.crn(['consumer-group', group], ['lag', r.topic], ['partition', r.partition]) },
    cluster_id: links.cluster,
    consumer_group_id: group,
    topic_name: r.topic,
    partition_id: r.partition,
    current_offset: r.current,
    log_end_offset: r.end,
    lag: r.lag,
    consumer_id: r.member?.memberId ?? '',
    instance_id: r.member?.groupInstanceId ?? null,
    client_id: r.member?.clientId ?? '',
  })

  get('/consumer-groups/:group/lags', async (req, links) => {
    const { g, rows } = await lags(req.params.group!)
    return { status: 200, body: list('KafkaConsumerLagList', links.url('consumer-groups', g.groupId, 'lags'), rows.map((r) => lagData(links, g.groupId, r))) }
  })

  get('/consumer-groups/:group/lags/:topic_name/partitions/:partition_id', async (req, links) => {
    const { g, rows } = await lags(req.params.group!)
    const p = intParam(req.params.partition_id, Errors.notFound)
    const r = rows.find((x) => x.topic === req.params.topic_name && x.partition === p)
    if (r === undefined) throw Errors.notFound()
    return { status: 200, body: lagData(links, g.groupId, r) }
  })

  get('/consumer-groups/:group/lag-summary', async (req, links) => {
    const { g, rows } = await lags(req.params.group!)
    let max: Lag | undefined
    let total = 0
    for (const r of rows) {
      total += r.lag
      if (max === undefined || r.lag > max.lag) max = r
    }
    const consumerId = max?.member?.memberId ?? ''
    return {
      status: 200,
      body: {
        kind: 'KafkaConsumerGroupLagSummary',
        metadata: { self: links.url('consumer-groups', g.groupId, 'lag-summary'), resource_name: links.crn(['consumer-group', g.groupId], ['lag-summary', g.groupId]) },
        cluster_id: links.cluster,
        consumer_group_id: g.groupId,
        max_lag_consumer_id: consumerId,
        max_lag_instance_id: max?.member?.groupInstanceId ?? null,
        max_lag_client_id: max?.member?.clientId ?? '',
        max_lag_topic_name: max?.topic ?? '',
        max_lag_partition_id: max?.partition ?? 0,
        max_lag: max?.lag ?? 0,
        total_lag: total,
        max_lag_consumer: links.related('consumer-groups', g.groupId, 'consumers', consumerId),
        max_lag_partition: links.related('topics', max?.topic ?? '', 'partitions', max?.partition ?? 0),
      },
    }
  })

}
