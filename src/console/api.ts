// The web console's JSON API under /console/api: what the pages show, gathered with the admin client
// over the Kafka protocol (so it works against any Kafka cluster), plus throughput counters from the
// broker's metrics registry when the console runs inside a broker. Errors answer Confluent's error
// body, as the REST Proxy does.
import { Consumer } from '../client/consumer.js'
import type { ClientSecurity } from '../client/sasl.js'
import type { Admin, ConfigEntry } from '../client/admin.js'
import { tpKey } from '../client/offsets.js'
import type { SharePartitionOffsetInfo } from '../client/share-group-admin.js'
import { jsonNestedDeeperThan, tooDeepMessage, type BufferedRequest, type HttpServer } from '../http/index.js'
import type { Logger } from '../observability/logger.js'
import type { MetricsRegistry } from '../observability/metrics.js'
import { currentCaller } from '../rest/caller-identity.js'
import { fromError, RestError } from '../rest/errors.js'
import type { RecordDecoder } from './decode.js'

export interface ConsoleApiOptions {
  admin: Admin
  bootstrapServers: string[]
  /** The identity of the Kafka clients (TLS, SASL); absent: PLAINTEXT as User:ANONYMOUS. */
  security?: ClientSecurity
  decoder: RecordDecoder
  log: Logger
  /** The broker's registry (embedded console): throughput from BrokerTopicMetrics. */
  brokerMetrics?: MetricsRegistry
  /** Whether /ws/topics is served (the live tail). */
  websocket: boolean
}

const JSON_HEADERS = { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' }
const MAX_BROWSE = 500
const IN_FLIGHT_FAMILIES = new Set(['kafka_server_sharepartitionmetrics_inflightmessagecount'])
const THROUGHPUT_FAMILIES = new Set(['kafka_server_brokertopicmetrics_messagesin_total', 'kafka_server_brokertopicmetrics_bytesin_total', 'kafka_server_brokertopicmetrics_bytesout_total'])

function notFound(what: string): RestError {
  return new RestError(404, 40403, `${what} not found.`)
}

function badRequest(message: string): RestError {
  return new RestError(400, 40002, message)
}

function intParam(q: URLSearchParams, name: string, min: number): number | undefined {
  const v = q.get(name)
  if (v === null || v === '') return undefined
  const n = Number(v)
  if (!Number.isInteger(n) || n < min) throw badRequest(`${name} must be an integer >= ${min}, not '${v}'`)
  return n
}

export function mountConsoleApi(server: HttpServer, opts: ConsoleApiOptions): void {
  // Read at each use: the REST Proxy's clients object answers with the caller's own admin client when
  // requests act as their caller (rest/caller-identity.ts).
  const admin = (): Admin => opts.admin
  const route = (method: string, pattern: string, fn: (req: BufferedRequest) => Promise<{ status?: number; body?: unknown }>): void => {
    server.route(method, `/console/api${pattern}`, async (req, res) => {
      try {
        const r = await fn(req)
        if (r.body === undefined) res.send(r.status ?? 204, { 'Cache-Control': 'no-store' })
        else res.send(r.status ?? 200, JSON_HEADERS, JSON.stringify(r.body))
      } catch (e) {
        const err = fromError(e)
        if (!(e instanceof RestError) && err.status >= 500) opts.log.warn({ err: (e as Error).message, path: req.path }, 'console API request failed')
        res.send(err.status, JSON_HEADERS, JSON.stringify(err.toJSON()))
      }
    })
  }

  /** Earliest and latest offsets of partitions, keyed topic\0partition. */
  const offsets = async (tps: readonly { topic: string; partition: number }[]): Promise<{ start: Map<string, number>; end: Map<string, number> }> => {
    if (tps.length === 0) return { start: new Map(), end: new Map() }
    const [start, end] = await Promise.all([
      admin().listOffsets(tps.map((t) => ({ ...t, timestamp: -2 }))),
      admin().listOffsets(tps.map((t) => ({ ...t, timestamp: -1 }))),
    ])
    const pick = (m: Map<string, { offset: number }>): Map<string, number> => new Map([...m].map(([k, v]) => [k, v.offset]))
    return { start: pick(start), end: pick(end) }
  }

  const sizes = async (): Promise<{ reachable: Set<number>; bytes: Map<string, number> }> => {
    const dirs = await admin().describeLogDirs()
    const bytes = new Map<string, number>()
    const reachable = new Set<number>()
    for (const d of dirs) {
      reachable.add(d.broker)
      for (const p of d.partitions) if (!p.isFuture) bytes.set(tpKey(p.topic, p.partition), Math.max(bytes.get(tpKey(p.topic, p.partition)) ?? 0, p.sizeBytes))
    }
    return { reachable, bytes }
  }

  route('GET', '/info', async () => ({ body: { websocket: opts.websocket, schemaRegistry: opts.decoder.hasRegistry, throughputSource: opts.brokerMetrics !== undefined ? 'broker-metrics' : 'offsets' } }))

  route('GET', '/cluster', async () => {
    const [cluster, logDirs, topics] = await Promise.all([admin().describeCluster(), sizes(), admin().describeTopics(null, { includeInternal: true })])
    const partitions = topics.reduce((n, t) => n + t.partitions.length, 0)
    const offline = topics.reduce((n, t) => n + t.partitions.filter((p) => p.leader < 0).length, 0)
    const underReplicated = topics.reduce((n, t) => n + t.partitions.filter((p) => p.isr.length < p.replicas.length).length, 0)
    return {
      body: {
        clusterId: cluster.clusterId,
        controllerId: cluster.controllerId,
        brokers: cluster.brokers
          .map((b) => ({ id: b.nodeId, host: b.host, port: b.port, rack: b.rack, controller: b.nodeId === cluster.controllerId, status: logDirs.reachable.has(b.nodeId) ? 'up' : 'unreachable', leaderPartitions: topics.reduce((n, t) => n + t.partitions.filter((p) => p.leader === b.nodeId).length, 0) }))
          .sort((a, b) => a.id - b.id),
        topics: topics.filter((t) => !t.isInternal).length,
        partitions,
        offlinePartitions: offline,
        underReplicatedPartitions: underReplicated,
      },
    }
  })

  route('GET', '/topics', async () => {
    const topics = await admin().describeTopics(null, { includeInternal: true })
    const tps = topics.flatMap((t) => t.partitions.map((p) => ({ topic: t.name, partition: p.partition })))
    const [o, s] = await Promise.all([offsets(tps), sizes()])
    return {
      body: topics
        .map((t) => {
          let records = 0
          let bytes = 0
          for (const p of t.partitions) {
            const k = tpKey(t.name, p.partition)
            records += Math.max(0, (o.end.get(k) ?? 0) - (o.start.get(k) ?? 0))
            bytes += s.bytes.get(k) ?? 0
          }
          return {
            name: t.name,
            internal: t.isInternal,
            partitions: t.partitions.length,
            replicationFactor: t.partitions[0]?.replicas.length ?? 0,
            underReplicated: t.partitions.filter((p) => p.isr.length < p.replicas.length).length,
            records,
            sizeBytes: bytes,
          }
        })
        .sort((a, b) => (a.internal === b.internal ? a.name.localeCompare(b.name) : a.internal ? 1 : -1)),
    }
  })

  route('POST', '/topics', async (req) => {
    let body: { name?: unknown; partitions?: unknown; replicationFactor?: unknown; configs?: unknown }
    if (jsonNestedDeeperThan(req.body)) throw badRequest(tooDeepMessage())
    try {
      body = JSON.parse(req.body.toString('utf8'))
    } catch {
      throw badRequest('the body must be JSON: {"name": ..., "partitions": ..., "replicationFactor": ..., "configs": {...}}')
    }
    if (typeof body.name !== 'string' || body.name === '') throw badRequest('name must be a topic name')
    const numPartitions = body.partitions === undefined ? -1 : Number(body.partitions)
    const replicationFactor = body.replicationFactor === undefined ? -1 : Number(body.replicationFactor)
    if (!Number.isInteger(numPartitions) || (numPartitions < 1 && numPartitions !== -1)) throw badRequest('partitions must be a positive integer')
    if (!Number.isInteger(replicationFactor) || (replicationFactor < 1 && replicationFactor !== -1)) throw badRequest('replicationFactor must be a positive integer')
    const configs: Record<string, string> = {}
    if (body.configs !== undefined && body.configs !== null) {
      if (typeof body.configs !== 'object' || Array.isArray(body.configs)) throw badRequest('configs must be an object of name: value')
      for (const [k, v] of Object.entries(body.configs as Record<string, unknown>)) configs[k] = String(v)
    }
    const [created] = await admin().createTopics([{ name: body.name, numPartitions, replicationFactor, configs }])
    return { status: 201, body: created }
  })

  route('GET', '/topics/:topic', async (req) => {
    const name = req.params.topic!
    const [t] = await admin().describeTopics([name], { includeInternal: true }).catch(() => [])
    if (t === undefined || t.partitions.length === 0) throw notFound(`Topic ${name}`)
    const tps = t.partitions.map((p) => ({ topic: name, partition: p.partition }))
    const [o, s, configs] = await Promise.all([offsets(tps), sizes(), admin().describeConfigs([{ type: 'topic', name }])])
    return {
      body: {
        name: t.name,
        topicId: t.topicId,
        internal: t.isInternal,
        partitions: t.partitions
          .map((p) => {
            const k = tpKey(name, p.partition)
            return { partition: p.partition, leader: p.leader, replicas: p.replicas, isr: p.isr, offlineReplicas: p.offlineReplicas, startOffset: o.start.get(k) ?? null, endOffset: o.end.get(k) ?? null, sizeBytes: s.bytes.get(k) ?? null }
          })
          .sort((a, b) => a.partition - b.partition),
        configs: (configs[0]?.configs ?? [])
          .map((c: ConfigEntry) => ({ name: c.name, value: c.sensitive ? null : c.value, source: c.source, isDefault: c.isDefault, readOnly: c.readOnly, sensitive: c.sensitive }))
          .sort((a, b) => a.name.localeCompare(b.name)),
      },
    }
  })

  route('DELETE', '/topics/:topic', async (req) => {
    await admin().deleteTopics([req.params.topic!])
    return { status: 204 }
  })

  // The message browser: records of one partition from an offset or a timestamp, decoded for display.
  route('GET', '/topics/:topic/records', async (req) => {
    const topic = req.params.topic!
    const partition = intParam(req.query, 'partition', 0) ?? 0
    const offset = intParam(req.query, 'offset', 0)
    const timestamp = intParam(req.query, 'timestamp', 0)
    const limit = Math.min(MAX_BROWSE, intParam(req.query, 'limit', 1) ?? 50)
    const encoding = req.query.get('encoding') ?? 'auto'
    if (encoding !== 'auto' && encoding !== 'utf8' && encoding !== 'base64') throw badRequest('encoding must be auto, utf8 or base64')
    const [t] = await admin().describeTopics([topic], { includeInternal: true }).catch(() => [])
    if (t === undefined || t.partitions.length === 0) throw notFound(`Topic ${topic}`)
    if (!t.partitions.some((p) => p.partition === partition)) throw new RestError(404, 40402, `Partition ${partition} of topic ${topic} not found.`)
    const o = await offsets([{ topic, partition }])
    const end = o.end.get(tpKey(topic, partition)) ?? 0
    const start = o.start.get(tpKey(topic, partition)) ?? 0
    const caller = currentCaller()
    const consumer = new Consumer({ bootstrapServers: caller?.bootstrapServers ?? opts.bootstrapServers, security: caller?.security ?? opts.security, clientId: 'skein-console', maxPollRecords: limit, fetchMaxWaitMs: 100 })
    const out: unknown[] = []
    let next = offset ?? start
    try {
      consumer.assign([{ topic, partition }])
      consumer.seek(topic, partition, timestamp !== undefined ? { timestamp } : offset !== undefined ? offset : 'earliest')
      const deadline = Date.now() + 3000
      while (out.length < limit && Date.now() < deadline) {
        const position = consumer.position(topic, partition)
        if (position !== null && position >= end) break
        for (const r of await consumer.poll(200)) {
          if (out.length >= limit) break
          const [key, value] = await Promise.all([opts.decoder.decode(topic, r.key, encoding), opts.decoder.decode(topic, r.value, encoding)])
          out.push({
            partition: r.partition,
            offset: r.offset,
            timestamp: r.timestamp,
            timestampType: r.timestampType,
            key: key?.data ?? null,
            keyFormat: key?.format ?? null,
            value: value?.data ?? null,
            valueFormat: value?.format ?? null,
            valueSchemaId: value?.schemaId ?? null,
            headers: r.headers.map((h) => ({ key: h.key, value: h.value === null ? null : opts.decoder.plain(h.value, encoding === 'base64' ? 'base64' : 'auto').data })),
          })
          next = r.offset + 1
        }
      }
    } finally {
      await consumer.close().catch(() => {})
    }
    return { body: { topic, partition, startOffset: start, endOffset: end, nextOffset: next, records: out } }
  })

  /** Committed offsets and lag of a group, per partition. */
  const groupLag = async (groupId: string): Promise<{ topic: string; partition: number; committed: number; endOffset: number | null; lag: number | null }[]> => {
    const committed = await admin().fetchOffsets(groupId)
    const tps = [...committed.keys()].map((k) => {
      const i = k.lastIndexOf('\u0000')
      return { topic: k.slice(0, i), partition: Number(k.slice(i + 1)) }
    })
    const ends = tps.length === 0 ? new Map<string, { offset: number }>() : await admin().listOffsets(tps.map((t) => ({ ...t, timestamp: -1 })))
    return tps
      .map((t) => {
        const k = tpKey(t.topic, t.partition)
        const c = committed.get(k)!
        const end = ends.get(k)?.offset ?? null
        return { ...t, committed: c, endOffset: end, lag: end === null || c < 0 ? null : Math.max(0, end - c) }
      })
      .sort((a, b) => (a.topic === b.topic ? a.partition - b.partition : a.topic.localeCompare(b.topic)))
  }

  /**
   * The in-flight records of a share group's share-partitions led by this broker (the embedded console's
   * broker registry, Kafka's SharePartitionMetrics InFlightMessageCount), keyed topic\0partition; null
   * outside a broker. No Kafka API gives a client these counts, so share-partitions led by other brokers
   * are not in it (their brokers' consoles and /metrics show them), nor idle ones this broker dropped from
   * memory (loaded again on their next use).
   */
  async function inFlightHere(groupId: string): Promise<Map<string, number> | null> {
    if (opts.brokerMetrics === undefined) return null
    const [family] = await opts.brokerMetrics.scrape(IN_FLIGHT_FAMILIES)
    const out = new Map<string, number>()
    for (const s of family?.samples ?? []) if (s.labels[0] === groupId) out.set(tpKey(s.labels[1]!, Number(s.labels[2])), s.value)
    return out
  }

  /**
   * A share group (KIP-932) as the groups page shows it: its state, members and, per share-partition, the
   * start offset, the lag (the high watermark minus the start offset: the records not yet finished with,
   * in flight included), the records in flight when this broker holds it (null otherwise) and the members
   * assigned it.
   */
  async function shareGroup(groupId: string) {
    const [g] = await admin().describeShareGroups([groupId])
    const [offsets, inFlight] = await Promise.all([admin().describeShareGroupOffsets(groupId).catch(() => new Map<string, SharePartitionOffsetInfo>()), inFlightHere(groupId)])
    const owners = new Map<string, string[]>()
    for (const m of g!.members) for (const a of m.assignment) owners.set(tpKey(a.topic, a.partition), [...(owners.get(tpKey(a.topic, a.partition)) ?? []), m.clientId])
    const partitions = [...offsets.values()]
      .map((o) => ({ topic: o.topic, partition: o.partition, startOffset: o.startOffset, lag: o.lag, inFlight: inFlight?.get(tpKey(o.topic, o.partition)) ?? null, owners: owners.get(tpKey(o.topic, o.partition)) ?? [] }))
      .sort((a, b) => (a.topic === b.topic ? a.partition - b.partition : a.topic.localeCompare(b.topic)))
    const known = partitions.filter((p) => p.inFlight !== null)
    return {
      groupId,
      state: g!.state,
      protocolType: 'share',
      protocol: g!.assignor,
      members: g!.members.map((m) => ({ memberId: m.memberId, clientId: m.clientId, host: m.clientHost, assignment: m.assignment })),
      partitions,
      lag: partitions.reduce((n, p) => n + (p.lag ?? 0), 0),
      // Over the share-partitions this broker holds; null when it holds none of them (or outside a broker).
      inFlight: known.length === 0 ? null : known.reduce((n, p) => n + p.inFlight!, 0),
    }
  }

  route('GET', '/groups', async () => {
    const all = await admin().listGroups()
    const shares = all.filter((g) => g.protocolType === 'share')
    const listed = all.filter((g) => g.protocolType !== 'share')
    const shareRows = await Promise.all(
      shares.map(async (l) => {
        const g = await shareGroup(l.groupId).catch(() => null)
        if (g === null) return { groupId: l.groupId, state: l.state, protocolType: 'share', members: 0, topics: [], lag: 0, inFlight: null }
        return { groupId: g.groupId, state: g.state, protocolType: 'share', members: g.members.length, topics: [...new Set(g.partitions.map((p) => p.topic))], lag: g.lag, inFlight: g.inFlight }
      }),
    )
    const described = listed.length === 0 ? [] : await admin().describeGroups(listed.map((g) => g.groupId))
    const rows = await Promise.all(
      described.map(async (g) => {
        const lag = await groupLag(g.groupId).catch(() => [])
        return {
          groupId: g.groupId,
          state: g.state,
          protocolType: g.protocolType,
          members: g.members.length,
          topics: [...new Set(lag.map((l) => l.topic))],
          lag: lag.reduce((n, l) => n + (l.lag ?? 0), 0),
        }
      }),
    )
    return { body: [...rows, ...shareRows].sort((a, b) => a.groupId.localeCompare(b.groupId)) }
  })

  route('GET', '/groups/:group', async (req) => {
    const groupId = req.params.group!
    if ((await admin().listGroups()).some((g) => g.groupId === groupId && g.protocolType === 'share')) return { body: await shareGroup(groupId) }
    const [g] = await admin().describeGroups([groupId])
    const lag = await groupLag(groupId)
    if (g === undefined || (g.state === 'Dead' && lag.length === 0)) throw notFound(`Consumer group ${groupId}`)
    const owner = new Map<string, string>()
    for (const m of g.members) for (const a of m.assignment) owner.set(tpKey(a.topic, a.partition), m.clientId)
    return {
      body: {
        groupId,
        state: g.state,
        protocolType: g.protocolType,
        protocol: g.protocol,
        members: g.members.map((m) => ({ memberId: m.memberId, clientId: m.clientId, host: m.clientHost, assignment: m.assignment })),
        partitions: lag.map((l) => ({ ...l, owner: owner.get(tpKey(l.topic, l.partition)) ?? null })),
        lag: lag.reduce((n, l) => n + (l.lag ?? 0), 0),
      },
    }
  })

  // Cumulative counters: the page turns two readings into rates. Inside a broker they are its
  // BrokerTopicMetrics; against another cluster, the sum of the log end offsets (records only).
  route('GET', '/throughput', async () => {
    if (opts.brokerMetrics !== undefined) {
      const families = await opts.brokerMetrics.scrape(THROUGHPUT_FAMILIES)
      const total = (name: string): number => families.find((f) => f.name === name)?.samples.find((s) => s.labels[0] === '')?.value ?? 0
      const perTopic: Record<string, { messagesIn: number; bytesIn: number; bytesOut: number }> = {}
      for (const f of families) {
        const field = f.name.includes('messagesin') ? 'messagesIn' : f.name.includes('bytesin') ? 'bytesIn' : 'bytesOut'
        for (const s of f.samples) {
          const t = s.labels[0]!
          if (t === '' || t.startsWith('__')) continue
          ;(perTopic[t] ??= { messagesIn: 0, bytesIn: 0, bytesOut: 0 })[field] = s.value
        }
      }
      return {
        body: {
          time: Date.now(),
          source: 'broker-metrics',
          messagesIn: total('kafka_server_brokertopicmetrics_messagesin_total'),
          bytesIn: total('kafka_server_brokertopicmetrics_bytesin_total'),
          bytesOut: total('kafka_server_brokertopicmetrics_bytesout_total'),
          topics: perTopic,
        },
      }
    }
    const topics = await admin().describeTopics(null)
    const tps = topics.flatMap((t) => t.partitions.map((p) => ({ topic: t.name, partition: p.partition })))
    const ends = tps.length === 0 ? new Map<string, { offset: number }>() : await admin().listOffsets(tps.map((t) => ({ ...t, timestamp: -1 })))
    const perTopic: Record<string, { messagesIn: number; bytesIn: null; bytesOut: null }> = {}
    let sum = 0
    for (const t of tps) {
      const end = ends.get(tpKey(t.topic, t.partition))?.offset ?? 0
      sum += end
      ;(perTopic[t.topic] ??= { messagesIn: 0, bytesIn: null, bytesOut: null }).messagesIn += end
    }
    return { body: { time: Date.now(), source: 'offsets', messagesIn: sum, bytesIn: null, bytesOut: null, topics: perTopic } }
  })
}
