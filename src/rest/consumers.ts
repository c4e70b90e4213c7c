// v2 consumer instances: a Kafka consumer per instance, created in a group by POST /consumers/{group},
// then driven by subscription or assignment, seeks, record reads and offset commits, and deleted by
// DELETE or after consumer.instance.timeout.ms without requests. The operations of one instance run one
// after another (a consumer is not re-entrant); records read but not handed out (over max_bytes) wait
// for the next read; a record that does not deserialize is handed out to nobody: the records before it
// are, and the position stays on it (as KafkaConsumer after a RecordDeserializationException). The instance's embedded format decides how keys and values are rendered, and a
// read that asks for another format gets 406 / 40601, as in kafka-rest.
import { randomUUID } from 'node:crypto'
import { Consumer, type OffsetReset } from '../client/consumer.js'
import { ErrorCode, KafkaError } from '../client/errors.js'
import type { ConsumedRecord } from '../client/record-batches.js'
import type { ClientSecurity } from '../client/sasl.js'
import type { BufferedRequest, HttpServer } from '../http/index.js'
import { currentCaller } from './caller-identity.js'
import { type RestContext, jsonRoute } from './context.js'
import { Errors, RestError } from './errors.js'
import type { SchemaFormat } from './formats.js'
import {
  type EmbeddedFormat,
  EMBEDDED_FORMATS,
  type Json,
  V2_JSON,
  acceptedV2Format,
  asObject,
  baseUrl,
  checkV2ContentType,
  jsonBody,
  optArray,
  optBool,
  optInt,
  optLong,
  optString,
  reqInt,
  reqString,
  v2ContentType,
} from './request.js'

interface Instance {
  group: string
  name: string
  format: EmbeddedFormat
  consumer: Consumer
  options: ConstructorParameters<typeof Consumer>[0]
  requestTimeoutMs: number | undefined
  mode: 'none' | 'subscribed' | 'assigned'
  subscription: string[]
  /** Records read from Kafka but not returned yet (a read stopped at max_bytes). */
  pending: ConsumedRecord[]
  lastUsed: number
  /** The tail of this instance's operation queue. */
  queue: Promise<unknown>
  closed: boolean
  /**
   * The authenticated user who created it (null without authentication): only they reach it; another
   * user gets 40403, as if it did not exist, so instance names leak nothing.
   */
  owner: string | null
}

const key = (group: string, name: string): string => `${group}\u0000${name}`

function tpList(v: unknown[] | undefined, name: string): { topic: string; partition: number }[] {
  if (v === undefined) throw new RestError(422, 422, `${name} may not be null`)
  return v.map((x) => {
    const o = asObject(x, 'partition')
    return { topic: reqString(o, 'topic'), partition: reqInt(o, 'partition', 0) }
  })
}

/** A seek or commit on a partition this consumer does not have: Kafka's IllegalStateException. */
function notAssigned(e: unknown, topic: string, partition: number): never {
  if (e instanceof KafkaError && e.code === ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) throw Errors.illegalState(`No current assignment for partition ${topic}-${partition}`)
  throw e
}

const SCHEMA_FORMATS: Partial<Record<EmbeddedFormat, SchemaFormat>> = { avro: 'AVRO', jsonschema: 'JSONSCHEMA', protobuf: 'PROTOBUF' }

export class ConsumerInstances {
  private readonly instances = new Map<string, Instance>()
  private readonly timer: NodeJS.Timeout
  private closing = false

  constructor(
    private readonly ctx: RestContext,
    private readonly bootstrapServers: string[],
    /** The proxy's Kafka identity (client.* settings, or the broker's own when embedded). */
    private readonly security?: ClientSecurity,
  ) {
    const timeout = ctx.settings.consumerInstanceTimeoutMs
    this.timer = setInterval(() => void this.expire(), Math.max(50, Math.min(1000, Math.floor(timeout / 4))))
    this.timer.unref()
  }

  get size(): number {
    return this.instances.size
  }

  /** Closes instances idle for longer than consumer.instance.timeout.ms. */
  private async expire(): Promise<void> {
    const deadline = Date.now() - this.ctx.settings.consumerInstanceTimeoutMs
    for (const inst of [...this.instances.values()]) {
      if (inst.lastUsed < deadline) {
        this.ctx.log.info({ group: inst.group, instance: inst.name }, 'REST consumer instance expired')
        await this.remove(inst)
      }
    }
  }

  private async remove(inst: Instance): Promise<void> {
    if (this.instances.get(key(inst.group, inst.name)) === inst) this.instances.delete(key(inst.group, inst.name))
    if (inst.closed) return
    inst.closed = true
    await inst.queue.catch(() => {})
    await inst.consumer.close().catch(() => {})
  }

  async close(): Promise<void> {
    this.closing = true
    clearInterval(this.timer)
    await Promise.all([...this.instances.values()].map((i) => this.remove(i)))
  }

  create(group: string, body: Json, owner: string | null = null): { instance_id: string; name: string } {
    if (this.closing) throw Errors.serverError()
    const id = optString(body, 'id')
    const name = id ?? optString(body, 'name') ?? `rest-consumer-${this.ctx.settings.id === '' ? '' : `${this.ctx.settings.id}-`}${randomUUID()}`
    const formatName = (optString(body, 'format') ?? 'binary').toLowerCase()
    if (!(EMBEDDED_FORMATS as readonly string[]).includes(formatName)) throw new RestError(422, 422, 'Invalid format type.')
    let reset = optString(body, 'auto.offset.reset')
    if (reset === 'smallest') reset = 'earliest'
    if (reset === 'largest') reset = 'latest'
    if (reset !== undefined && !['earliest', 'latest', 'none'].includes(reset)) throw Errors.invalidConsumerConfig(`Invalid value ${reset} for configuration auto.offset.reset: String must be one of: latest, earliest, none`)
    const autoCommit = optBool(body, 'auto.commit.enable')
    const minBytes = optInt(body, 'fetch.min.bytes')
    const requestTimeoutMs = optInt(body, 'consumer.request.timeout.ms', 0)
    if (this.instances.has(key(group, name))) throw Errors.consumerAlreadyExists()
    // Acting as the caller: the consumer logs in to Kafka as them (rest/caller-identity.ts).
    const caller = currentCaller()
    const options = {
      bootstrapServers: caller?.bootstrapServers ?? this.bootstrapServers,
      security: caller?.security ?? this.security,
      clientId: `skein-rest-${name}`.slice(0, 200),
      groupId: group,
      autoOffsetReset: (reset ?? 'latest') as OffsetReset,
      enableAutoCommit: autoCommit ?? true,
      fetchMinBytes: minBytes !== undefined && minBytes > 0 ? minBytes : 1,
      fetchMaxWaitMs: 500,
    }
    this.instances.set(key(group, name), {
      group,
      name,
      format: formatName as EmbeddedFormat,
      consumer: new Consumer(options),
      options,
      requestTimeoutMs,
      mode: 'none',
      subscription: [],
      pending: [],
      lastUsed: Date.now(),
      queue: Promise.resolve(),
      closed: false,
      owner,
    })
    return { instance_id: name, name }
  }

  /** Runs an operation on an instance after the ones before it; unknown instance: 40403. */
  run<T>(group: string, name: string, op: (inst: Instance) => Promise<T>, user: string | null = null): Promise<T> {
    const inst = this.instances.get(key(group, name))
    if (inst === undefined || inst.closed || inst.owner !== user) return Promise.reject(Errors.consumerInstanceNotFound())
    inst.lastUsed = Date.now()
    const result = inst.queue.then(() => {
      if (inst.closed) throw Errors.consumerInstanceNotFound()
      return op(inst)
    })
    inst.queue = result.catch(() => {})
    return result.finally(() => {
      inst.lastUsed = Date.now()
    })
  }

  async delete(group: string, name: string, user: string | null = null): Promise<void> {
    const inst = this.instances.get(key(group, name))
    if (inst === undefined || inst.owner !== user) throw Errors.consumerInstanceNotFound()
    await this.remove(inst)
  }

  /** A fresh consumer for an instance (unsubscribe: the Kafka consumer leaves its group). */
  async reset(inst: Instance): Promise<void> {
    await inst.consumer.close().catch(() => {})
    inst.consumer = new Consumer(inst.options)
    inst.mode = 'none'
    inst.subscription = []
    inst.pending = []
  }

  /** Records as the instance's format renders them, up to maxBytes of keys and values, waiting up to timeoutMs. */
  async read(inst: Instance, timeoutMs: number, maxBytes: number): Promise<unknown[]> {
    if (inst.mode === 'none') return []
    const deadline = Date.now() + timeoutMs
    let records = inst.pending
    inst.pending = []
    while (records.length === 0) {
      const left = deadline - Date.now()
      if (left <= 0) break
      try {
        records = await inst.consumer.poll(Math.min(left, 500))
      } catch (e) {
        if (e instanceof KafkaError) throw e
        throw new RestError(500, 50002, `Kafka error: ${(e as Error).message}`)
      }
    }
    const out: ConsumedRecord[] = []
    let bytes = 0
    for (let i = 0; i < records.length; i++) {
      const r = records[i]!
      const size = (r.key?.length ?? 0) + (r.value?.length ?? 0)
      if (out.length > 0 && bytes + size > maxBytes) {
        inst.pending = records.slice(i)
        break
      }
      out.push(r)
      bytes += size
    }
    const rendered = await Promise.allSettled(out.map((r) => this.render(inst, r)))
    const bad = rendered.findIndex((x) => x.status === 'rejected')
    if (bad < 0) return rendered.map((x) => (x as PromiseFulfilledResult<unknown>).value)
    // A record that does not deserialize (Kafka's RecordDeserializationException): the records before it
    // are handed out, and every partition's position goes back to its first record not handed out, so
    // the bad record is where the next read (and a commit) stays until the client seeks past it.
    this.rewind(inst, [...out.slice(bad), ...inst.pending])
    inst.pending = []
    if (bad === 0) throw (rendered[0] as PromiseRejectedResult).reason
    return rendered.slice(0, bad).map((x) => (x as PromiseFulfilledResult<unknown>).value)
  }

  /** Seeks each partition of records back to the first of them (the records are fetched again later). */
  private rewind(inst: Instance, records: readonly ConsumedRecord[]): void {
    const first = new Map<string, ConsumedRecord>()
    for (const r of records) {
      const key = `${r.topic}\u0000${r.partition}`
      const seen = first.get(key)
      if (seen === undefined || r.offset < seen.offset) first.set(key, r)
    }
    for (const r of first.values()) inst.consumer.seek(r.topic, r.partition, r.offset)
  }

  /**
   * Where a commit without offsets puts each assigned partition: its position, or the first record read
   * but not yet handed out (over max_bytes), so nothing is committed past a record the client never got.
   */
  consumedPositions(inst: Instance): { topic: string; partition: number; offset: number }[] {
    const held = new Map<string, number>()
    for (const r of inst.pending) {
      const key = `${r.topic}\u0000${r.partition}`
      held.set(key, Math.min(held.get(key) ?? Infinity, r.offset))
    }
    return inst.consumer.assignment().flatMap((tp) => {
      const at = inst.consumer.position(tp.topic, tp.partition)
      if (at === null) return []
      return [{ topic: tp.topic, partition: tp.partition, offset: Math.min(at, held.get(`${tp.topic}\u0000${tp.partition}`) ?? Infinity) }]
    })
  }

  private async render(inst: Instance, r: ConsumedRecord): Promise<unknown> {
    const conv = async (b: Buffer | null): Promise<unknown> => {
      if (b === null) return null
      switch (inst.format) {
        case 'binary':
          return b.toString('base64')
        case 'json':
          try {
            return JSON.parse(b.toString('utf8'))
          } catch (e) {
            throw new RestError(500, 50002, `Kafka error: Error deserializing key/value for partition ${r.topic}-${r.partition} at offset ${r.offset}: not JSON (${(e as Error).message}). Seek past it to continue consumption.`)
          }
        default:
          return this.ctx.schemas.deserialize(SCHEMA_FORMATS[inst.format]!, r.topic, b)
      }
    }
    return { topic: r.topic, key: await conv(r.key), value: await conv(r.value), partition: r.partition, offset: r.offset }
  }
}

export function mountConsumers(server: HttpServer, ctx: RestContext, instances: ConsumerInstances): void {
  const route = (method: string, pattern: string, fn: Parameters<typeof jsonRoute>[5]): void =>
    jsonRoute(server, ctx, method, pattern, V2_JSON, async (req) => {
      checkV2ContentType(req)
      return fn(req)
    })
  const base = '/consumers/:group/instances/:instance'
  const on = <T>(req: BufferedRequest, op: (inst: Instance) => Promise<T>): Promise<T> => instances.run(req.params.group!, req.params.instance!, op, req.principal?.user ?? null)

  route('POST', '/consumers/:group', async (req) => {
    const body = asObject(jsonBody(req, false) ?? {})
    const group = req.params.group!
    const { instance_id } = instances.create(group, body, req.principal?.user ?? null)
    const uri = `${baseUrl(req, ctx.fallbackBaseUrl)}/consumers/${encodeURIComponent(group)}/instances/${encodeURIComponent(instance_id)}`
    return { status: 200, body: { instance_id, base_uri: uri } }
  })

  route('DELETE', base, async (req) => {
    await instances.delete(req.params.group!, req.params.instance!, req.principal?.user ?? null)
    return { status: 204 }
  })

  route('POST', `${base}/subscription`, async (req) => {
    const body = asObject(jsonBody(req, true))
    const topics = optArray(body, 'topics')
    const pattern = optString(body, 'topic_pattern')
    if ((topics === undefined || topics.length === 0) === (pattern === undefined)) throw new RestError(422, 422, 'A list (of Topics type) or a topic pattern (of String type) must be provided.')
    return on(req, async (inst) => {
      if (inst.mode === 'assigned') throw Errors.illegalState('Subscription to topics, partitions and pattern are mutually exclusive')
      let names: string[]
      if (pattern !== undefined) {
        let re: RegExp
        try {
          re = new RegExp(`^(?:${pattern})$`)
        } catch (e) {
          throw new RestError(422, 422, `topic_pattern is not a regular expression: ${(e as Error).message}`)
        }
        // A pattern is resolved against the topics that exist now (Kafka's consumer re-evaluates it).
        names = (await ctx.admin.listTopics()).filter((t) => re.test(t))
      } else {
        names = topics!.map((t) => {
          if (typeof t !== 'string' || t === '') throw new RestError(400, 400, 'topics must be a list of topic names')
          return t
        })
      }
      inst.consumer.subscribe(names)
      inst.mode = 'subscribed'
      inst.subscription = names
      inst.pending = []
      return { status: 204 }
    })
  })

  route('GET', `${base}/subscription`, async (req) => on(req, async (inst) => ({ status: 200, body: { topics: inst.subscription } })))

  route('DELETE', `${base}/subscription`, async (req) =>
    on(req, async (inst) => {
      if (inst.mode === 'subscribed') await instances.reset(inst)
      return { status: 204 }
    }),
  )

  route('POST', `${base}/assignments`, async (req) => {
    const partitions = tpList(optArray(asObject(jsonBody(req, true)), 'partitions'), 'partitions')
    return on(req, async (inst) => {
      if (inst.mode === 'subscribed') throw Errors.illegalState('Subscription to topics, partitions and pattern are mutually exclusive')
      inst.consumer.assign(partitions)
      inst.mode = partitions.length > 0 ? 'assigned' : 'none'
      inst.pending = []
      return { status: 204 }
    })
  })

  route('GET', `${base}/assignments`, async (req) => on(req, async (inst) => ({ status: 200, body: { partitions: inst.consumer.assignment() } })))

  route('POST', `${base}/positions`, async (req) => {
    const body = asObject(jsonBody(req, true))
    const offsets = (optArray(body, 'offsets') ?? []).map((x) => {
      const o = asObject(x, 'offset')
      return { topic: reqString(o, 'topic'), partition: reqInt(o, 'partition', 0), offset: optLong(o, 'offset') ?? 0 }
    })
    const timestamps = (optArray(body, 'timestamps') ?? []).map((x) => {
      const o = asObject(x, 'timestamp')
      const ts = Date.parse(reqString(o, 'timestamp'))
      if (Number.isNaN(ts)) throw new RestError(400, 400, `timestamp ${String(o['timestamp'])} is not an ISO 8601 date-time`)
      return { topic: reqString(o, 'topic'), partition: reqInt(o, 'partition', 0), timestamp: ts }
    })
    return on(req, async (inst) => {
      for (const o of offsets) {
        if (o.offset < 0) throw Errors.illegalState(`Seek offset must not be a negative number`)
        try {
          inst.consumer.seek(o.topic, o.partition, o.offset)
        } catch (e) {
          notAssigned(e, o.topic, o.partition)
        }
      }
      for (const t of timestamps) {
        try {
          inst.consumer.seek(t.topic, t.partition, { timestamp: t.timestamp })
        } catch (e) {
          notAssigned(e, t.topic, t.partition)
        }
      }
      inst.pending = []
      return { status: 204 }
    })
  })

  for (const [suffix, to] of [['beginning', 'earliest'], ['end', 'latest']] as const) {
    route('POST', `${base}/positions/${suffix}`, async (req) => {
      const partitions = tpList(optArray(asObject(jsonBody(req, true)), 'partitions'), 'partitions')
      return on(req, async (inst) => {
        for (const p of partitions) {
          try {
            inst.consumer.seek(p.topic, p.partition, to)
          } catch (e) {
            notAssigned(e, p.topic, p.partition)
          }
        }
        inst.pending = []
        return { status: 204 }
      })
    })
  }

  route('GET', `${base}/records`, async (req) => {
    const wanted = acceptedV2Format(req)
    const timeoutParam = req.query.get('timeout')
    const maxBytesParam = req.query.get('max_bytes')
    const timeout = timeoutParam !== null && /^-?\d+$/.test(timeoutParam) ? Number(timeoutParam) : -1
    const maxBytes = maxBytesParam !== null && /^-?\d+$/.test(maxBytesParam) ? Number(maxBytesParam) : -1
    return on(req, async (inst) => {
      if (inst.format !== wanted) throw Errors.consumerFormatMismatch()
      const limit = inst.requestTimeoutMs ?? ctx.settings.consumerRequestTimeoutMs
      const wait = timeout >= 0 ? Math.min(timeout, limit) : limit
      const bytes = maxBytes > 0 ? Math.min(maxBytes, ctx.settings.consumerRequestMaxBytes) : ctx.settings.consumerRequestMaxBytes
      return { status: 200, body: await instances.read(inst, wait, bytes), contentType: v2ContentType(inst.format) }
    })
  })

  route('POST', `${base}/offsets`, async (req) => {
    const body = jsonBody(req, false)
    const given =
      body === undefined
        ? undefined
        : (optArray(asObject(body), 'offsets') ?? []).map((x) => {
            const o = asObject(x, 'offset')
            return { topic: reqString(o, 'topic'), partition: reqInt(o, 'partition', 0), offset: optLong(o, 'offset') ?? 0, metadata: optString(o, 'metadata') }
          })
    return on(req, async (inst) => {
      // No offsets given: everything consumed so far, as KafkaConsumer.commitSync() commits.
      const list = given !== undefined && given.length > 0 ? given : instances.consumedPositions(inst)
      await inst.consumer.commit(list)
      return { status: 200, body: list.map((o) => ({ topic: o.topic, partition: o.partition, consumed: o.offset - 1, committed: o.offset })) }
    })
  })

  route('GET', `${base}/offsets`, async (req) => {
    const partitions = tpList(optArray(asObject(jsonBody(req, true)), 'partitions'), 'partitions')
    return on(req, async (inst) => {
      const committed = await ctx.admin.fetchOffsets(inst.group, partitions)
      return {
        status: 200,
        body: {
          offsets: partitions.flatMap((p) => {
            const o = committed.get(`${p.topic}\u0000${p.partition}`)
            return o === undefined || o < 0 ? [] : [{ topic: p.topic, partition: p.partition, offset: o, metadata: '' }]
          }),
        },
      }
    })
  })
}
