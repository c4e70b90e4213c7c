// REST Proxy API v2, as kafka-rest serves it: topics and partitions (metadata, offsets), brokers, and
// produce to a topic or a partition with the embedded formats binary, json, avro, jsonschema and
// protobuf. Bodies and answers are application/vnd.kafka[.format].v2+json.
import type { PartitionInfo } from '../client/cluster-connections.js'
import { ErrorCode, KafkaError } from '../client/errors.js'
import { EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, tpKey } from '../client/offsets.js'
import type { HttpServer } from '../http/index.js'
import { type RestContext, jsonRoute } from './context.js'
import { Errors, RestError, fromError } from './errors.js'
import { type ResolvedSchema, type SchemaFormat, decodeBase64 } from './formats.js'
import { type EmbeddedFormat, V2_JSON, asObject, checkV2ContentType, intParam, jsonBody, optArray, optInt, optString, v2ProduceFormat } from './request.js'

function partitionJson(p: PartitionInfo): unknown {
  return {
    partition: p.partition,
    leader: p.leader,
    replicas: p.replicas.map((b) => ({ broker: b, leader: b === p.leader, in_sync: p.isr.includes(b) })),
  }
}

/** The topic's description, or 40401. */
export async function describeTopic(ctx: RestContext, topic: string): Promise<{ name: string; isInternal: boolean; partitions: PartitionInfo[] }> {
  try {
    const [t] = await ctx.admin.describeTopics([topic])
    return t!
  } catch (e) {
    if (e instanceof KafkaError && (e.code === ErrorCode.UNKNOWN_TOPIC_OR_PARTITION || e.code === ErrorCode.INVALID_TOPIC_EXCEPTION)) throw Errors.topicNotFound()
    throw e
  }
}

const SCHEMA_FORMATS: Partial<Record<EmbeddedFormat, SchemaFormat>> = { avro: 'AVRO', jsonschema: 'JSONSCHEMA', protobuf: 'PROTOBUF' }

interface PartitionOffset {
  partition: number | null
  offset: number | null
  error_code: number | null
  error: string | null
}

/** Produce of v2: every record serialized first (a bad one fails the request), then sent together. */
async function produce(ctx: RestContext, topic: string, pathPartition: number | undefined, format: EmbeddedFormat, body: unknown): Promise<unknown> {
  const req = asObject(body)
  const records = optArray(req, 'records')
  if (records === undefined || records.length === 0) throw new RestError(422, 422, 'records may not be empty')
  const schemaFormat = SCHEMA_FORMATS[format]
  let keySchema: ResolvedSchema | undefined
  let valueSchema: ResolvedSchema | undefined
  if (schemaFormat !== undefined) {
    const keyId = optInt(req, 'key_schema_id')
    const keyText = optString(req, 'key_schema')
    const valueId = optInt(req, 'value_schema_id')
    const valueText = optString(req, 'value_schema')
    if (keyId !== undefined || keyText !== undefined) keySchema = await ctx.schemas.resolve(topic, true, keyId !== undefined ? { schemaId: keyId } : { format: schemaFormat, rawSchema: keyText })
    if (valueId !== undefined || valueText !== undefined) valueSchema = await ctx.schemas.resolve(topic, false, valueId !== undefined ? { schemaId: valueId } : { format: schemaFormat, rawSchema: valueText })
  }
  const encode = async (v: unknown, schema: ResolvedSchema | undefined, isKey: boolean): Promise<Buffer | null> => {
    if (v === undefined || v === null) return null
    switch (format) {
      case 'binary':
        try {
          return decodeBase64(v)
        } catch {
          throw Errors.invalidPayload(`${isKey ? 'key' : 'value'} is not base64: ${JSON.stringify(v).slice(0, 64)}`)
        }
      case 'json':
        return Buffer.from(JSON.stringify(v), 'utf8')
      default:
        if (schema === undefined) throw isKey ? Errors.keySchemaMissing() : Errors.valueSchemaMissing()
        return ctx.schemas.serialize(topic, schema, v)
    }
  }
  const encoded: { partition: number | undefined; key: Buffer | null; value: Buffer | null }[] = []
  for (const r of records) {
    const rec = asObject(r, 'record')
    const partition = pathPartition ?? optInt(rec, 'partition', 0)
    encoded.push({ partition, key: await encode(rec['key'], keySchema, true), value: await encode(rec['value'], valueSchema, false) })
  }
  let info
  try {
    info = await ctx.producer.topicInfo(topic)
  } catch (e) {
    if (e instanceof KafkaError && e.code === ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) throw Errors.topicNotFound()
    throw e
  }
  if (pathPartition !== undefined && pathPartition >= info.partitions.length) throw Errors.partitionNotFound()
  const offsets: PartitionOffset[] = await Promise.all(
    encoded.map(async (r): Promise<PartitionOffset> => {
      if (r.partition !== undefined && r.partition >= info.partitions.length) return { partition: null, offset: null, error_code: 40402, error: 'Partition not found.' }
      try {
        const meta = await ctx.producer.send({ topic, partition: r.partition, key: r.key, value: r.value })
        return { partition: meta.partition, offset: meta.offset, error_code: null, error: null }
      } catch (e) {
        const err = fromError(e)
        return { partition: null, offset: null, error_code: err.errorCode, error: err.message }
      }
    }),
  )
  return { offsets, key_schema_id: keySchema?.id ?? null, value_schema_id: valueSchema?.id ?? null }
}

export function mountV2(server: HttpServer, ctx: RestContext): void {
  const route = (method: string, pattern: string, fn: Parameters<typeof jsonRoute>[5]): void => jsonRoute(server, ctx, method, pattern, V2_JSON, fn)

  route('GET', '/topics', async (req) => {
    checkV2ContentType(req)
    return { status: 200, body: await ctx.admin.listTopics() }
  })

  route('GET', '/topics/:topic', async (req) => {
    const t = await describeTopic(ctx, req.params.topic!)
    const [described] = await ctx.admin.describeConfigs([{ type: 'topic', name: t.name }])
    const configs: Record<string, string | null> = {}
    for (const c of described?.configs ?? []) configs[c.name] = c.sensitive ? null : c.value
    return { status: 200, body: { name: t.name, configs, partitions: t.partitions.map(partitionJson) } }
  })

  route('GET', '/topics/:topic/partitions', async (req) => {
    const t = await describeTopic(ctx, req.params.topic!)
    return { status: 200, body: t.partitions.map(partitionJson) }
  })

  const partitionOf = async (topic: string, p: string | undefined): Promise<PartitionInfo> => {
    const t = await describeTopic(ctx, topic)
    const partition = t.partitions.find((x) => x.partition === intParam(p, Errors.partitionNotFound))
    if (partition === undefined) throw Errors.partitionNotFound()
    return partition
  }

  route('GET', '/topics/:topic/partitions/:partition', async (req) => {
    return { status: 200, body: partitionJson(await partitionOf(req.params.topic!, req.params.partition)) }
  })

  route('GET', '/topics/:topic/partitions/:partition/offsets', async (req) => {
    const topic = req.params.topic!
    const p = await partitionOf(topic, req.params.partition)
    const [earliest, latest] = await Promise.all([
      ctx.admin.listOffsets([{ topic, partition: p.partition, timestamp: EARLIEST_TIMESTAMP }]),
      ctx.admin.listOffsets([{ topic, partition: p.partition, timestamp: LATEST_TIMESTAMP }]),
    ])
    return { status: 200, body: { beginning_offset: earliest.get(tpKey(topic, p.partition))?.offset ?? 0, end_offset: latest.get(tpKey(topic, p.partition))?.offset ?? 0 } }
  })

  route('POST', '/topics/:topic', async (req) => {
    const format = v2ProduceFormat(req)
    return { status: 200, body: await produce(ctx, req.params.topic!, undefined, format, jsonBody(req, true)) }
  })

  route('POST', '/topics/:topic/partitions/:partition', async (req) => {
    const format = v2ProduceFormat(req)
    const partition = intParam(req.params.partition, Errors.partitionNotFound)
    return { status: 200, body: await produce(ctx, req.params.topic!, partition, format, jsonBody(req, true)) }
  })

  route('GET', '/brokers', async () => {
    const { brokers } = await ctx.admin.describeCluster()
    return { status: 200, body: { brokers: brokers.map((b) => b.nodeId).sort((a, b) => a - b) } }
  })

  route('GET', '/', async () => ({ status: 200, body: {} }))
}
