// v3 records: POST /v3/clusters/{cluster_id}/topics/{topic_name}/records. The body is one or more
// produce requests as concatenated JSON (one per line, or back to back); for as long as the client keeps
// the connection open (Transfer-Encoding: chunked) records are read as they arrive, handed to the shared
// producer, and a delivery report per record is written back on the same connection, in request order,
// each with its own error_code (200 on success), separated by "\r\n" as kafka-rest's ChunkedOutput does.
// The HTTP status is 200 once the stream is open. A malformed JSON text or a record larger than the
// limit ends the stream with a last error report (400 / 413), as kafka-rest does.
//
// Flow control, both ways: the body is read only while the producer has buffer room and fewer than
// MAX_PENDING reports are outstanding (the HTTP adapter pauses the socket meanwhile), and reading stops
// while the client does not take its reports (uWS backpressure). Memory per stream is bounded by the
// record limit, the producer's buffer.memory and MAX_PENDING reports.
//
// POST .../records:batch (up to 10 entries with ids, 207 Multi-Status) shares the record encoding.
import type { Header } from '../client/record-batches.js'
import type { TopicInfo } from '../client/cluster-connections.js'
import { ErrorCode, KafkaError } from '../client/errors.js'
import type { BatchDelivery } from '../client/producer.js'
import { jsonNestedDeeperThan, MAX_JSON_DEPTH, tooDeepMessage, type HttpResponse, type HttpServer, type StreamedRequest } from '../http/index.js'
import { type RestContext, jsonRoute } from './context.js'
import { Errors, RestError, fromError } from './errors.js'
import { type ResolvedSchema, type SchemaFormat, type SchemaSpec, decodeBase64 } from './formats.js'
import { type Json, V3_JSON, asObject, checkV3ContentType, jsonBody, optArray, optInt, optString } from './request.js'

/** Reports outstanding (records sent, report not yet written) before reading pauses. */
const MAX_PENDING = 32768
const SEPARATOR = '\r\n'
const JSON_HEADERS = { 'Content-Type': V3_JSON }

const EMPTY = Buffer.alloc(0)

const isSpace = (c: number): boolean => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09

/**
 * Splits a byte stream of concatenated JSON objects (kafka-rest's JsonStream) into parsed objects of at
 * most maxBytes each. The usual shape, one object per line, takes a fast path: the line is handed to
 * JSON.parse whole. Anything else (objects back to back, an object over several lines or across chunks,
 * malformed text) goes through a scanner that follows strings and nesting to find each object's end.
 */
export class JsonSplitter {
  private rest: Buffer = EMPTY
  /** Scanner state inside an unfinished object (which starts at rest[0]). */
  private depth = 0
  private inString = false
  private escape = false

  constructor(private readonly maxBytes: number) {}

  /** The complete objects in the bytes so far; throws RestError (fatal: the stream ends) on bad input. */
  push(chunk: Buffer, out: unknown[]): void {
    const b = this.rest.length > 0 ? Buffer.concat([this.rest, chunk]) : chunk
    let pos = 0
    if (this.depth > 0) {
      const end = this.scan(b, 0, this.rest.length)
      if (end < 0) return this.keep(b, 0)
      this.emit(b, 0, end, out)
      pos = end
    }
    const n = b.length
    while (pos < n) {
      if (isSpace(b[pos]!)) {
        pos++
        continue
      }
      if (b[pos] !== 0x7b) throw Errors.badRequest(`Error processing JSON: expected a JSON object, found '${String.fromCharCode(b[pos]!)}'`)
      const bulk = this.wholeLines(b, pos, out)
      if (bulk > pos) {
        pos = bulk
        continue
      }
      const nl = b.indexOf(0x0a, pos)
      if (nl >= 0 && nl - pos <= this.maxBytes) {
        let e = nl
        while (e > pos && isSpace(b[e - 1]!)) e--
        if (b[e - 1] === 0x7d) {
          if (jsonNestedDeeperThan(b, MAX_JSON_DEPTH, pos, e)) throw Errors.badRequest(`Error processing JSON: ${tooDeepMessage()}`)
          let v: unknown
          try {
            v = JSON.parse(b.toString('utf8', pos, e))
          } catch {
            v = undefined
          }
          if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
            out.push(v)
            pos = nl + 1
            continue
          }
        }
      }
      this.depth = 0
      this.inString = false
      this.escape = false
      const end = this.scan(b, pos, pos)
      if (end < 0) return this.keep(b, pos)
      this.emit(b, pos, end, out)
      pos = end
    }
    this.rest = EMPTY
  }

  /**
   * The fast path for many records: every complete line from b[pos] on (pos at a '{') parsed by one
   * JSON.parse, as `[line1\n,line2\n,...]`. It applies only when each line is one object on its own: it
   * starts with '{' and ends with '}' (around whitespace), is at most maxBytes long, and the array has one
   * element per line, each an object. A line break inside a string stays a raw newline there, which
   * JSON.parse refuses, so an object spread over lines never passes. Anything else returns pos and the
   * lines take the per-line path, which gives the same objects or the same error. Returns the index after
   * the last line taken.
   */
  private wholeLines(b: Buffer, pos: number, out: unknown[]): number {
    const last = b.lastIndexOf(0x0a)
    if (last <= pos) return pos
    let lines = 0
    for (let start = pos; start <= last; ) {
      const nl = b.indexOf(0x0a, start)
      if (nl - start > this.maxBytes) return pos
      let s = start
      while (s < nl && isSpace(b[s]!)) s++
      let e = nl
      while (e > s && isSpace(b[e - 1]!)) e--
      if (b[s] !== 0x7b || b[e - 1] !== 0x7d) return pos
      lines++
      start = nl + 1
    }
    if (lines < 2) return pos
    if (jsonNestedDeeperThan(b, MAX_JSON_DEPTH, pos, last)) throw Errors.badRequest(`Error processing JSON: ${tooDeepMessage()}`)
    let parsed: unknown
    try {
      parsed = JSON.parse(`[${b.toString('utf8', pos, last).replaceAll('\n', '\n,')}]`)
    } catch {
      return pos
    }
    if (!Array.isArray(parsed) || parsed.length !== lines) return pos
    for (const v of parsed) if (v === null || typeof v !== 'object' || Array.isArray(v)) return pos
    for (const v of parsed) out.push(v)
    return last + 1
  }

  /** Follows an object that starts at b[start] from b[from]: the index after its end, or -1 (state kept). */
  private scan(b: Buffer, start: number, from: number): number {
    let depth = this.depth
    let inString = this.inString
    let escape = this.escape
    for (let i = from, n = b.length; i < n; i++) {
      const c = b[i]!
      if (inString) {
        if (escape) escape = false
        else if (c === 0x5c) escape = true
        else if (c === 0x22) inString = false
        continue
      }
      if (c === 0x22) inString = true
      else if (c === 0x7b || c === 0x5b) depth++
      else if ((c === 0x7d || c === 0x5d) && --depth === 0) {
        this.depth = 0
        this.inString = false
        this.escape = false
        return i + 1
      }
      if (i + 1 - start > this.maxBytes) throw Errors.tooLarge()
    }
    this.depth = depth
    this.inString = inString
    this.escape = escape
    return -1
  }

  private keep(b: Buffer, from: number): void {
    this.rest = b.subarray(from)
    if (this.rest.length > this.maxBytes) throw Errors.tooLarge()
  }

  private emit(b: Buffer, start: number, end: number, out: unknown[]): void {
    if (end - start > this.maxBytes) throw Errors.tooLarge()
    if (jsonNestedDeeperThan(b, MAX_JSON_DEPTH, start, end)) throw Errors.badRequest(`Error processing JSON: ${tooDeepMessage()}`)
    try {
      out.push(JSON.parse(b.toString('utf8', start, end)))
    } catch (e) {
      throw Errors.badRequest(`Error processing JSON: ${(e as Error).message}`)
    }
  }

  /** At the end of the body: a started object that never closed is malformed. */
  end(): void {
    if (this.rest.length > 0) throw Errors.badRequest('Error processing JSON: unexpected end of input inside an object')
  }
}

const TYPES = ['BINARY', 'JSON', 'STRING', 'AVRO', 'JSONSCHEMA', 'PROTOBUF'] as const
type DataType = (typeof TYPES)[number]

interface Encoded {
  bytes: Buffer | null
  /** The report's `"key":{...}` or `"value":{...}` member (with its leading comma), '' when absent. */
  meta: string
  data: Record<string, unknown> | null
}

/** The report members of schema-less keys and values, by name, type and size: the same few strings for every record of a stream. */
const PLAIN_META: Record<'key' | 'value', Record<string, string[]>> = { key: { BINARY: [], JSON: [], STRING: [] }, value: { BINARY: [], JSON: [], STRING: [] } }

function plainMeta(name: 'key' | 'value', type: 'BINARY' | 'JSON' | 'STRING', size: number): string {
  if (size > 65536) return metaJson(name, type, size)
  const byType = PLAIN_META[name][type]!
  return (byType[size] ??= metaJson(name, type, size))
}

function metaJson(name: 'key' | 'value', type: string, size: number, schema?: ResolvedSchema): string {
  const extra = schema === undefined ? '' : `,"subject":${JSON.stringify(schema.subject)},"schema_id":${schema.id},"schema_version":${schema.version}`
  return `,"${name}":{"type":"${type}","size":${size}${extra}}`
}

/** The schema spec of a key or value (kafka-rest's ProduceRequestData fields). */
function schemaSpec(d: Json, type: DataType | undefined): SchemaSpec {
  return {
    format: type === 'AVRO' || type === 'JSONSCHEMA' || type === 'PROTOBUF' ? type : undefined,
    schemaId: optInt(d, 'schema_id', 0),
    schemaVersion: optInt(d, 'schema_version', 1),
    rawSchema: optString(d, 'schema'),
    subject: optString(d, 'subject'),
    strategy: optString(d, 'subject_name_strategy'),
  }
}

/** A key or value: synchronous for the formats without schemas, a promise for the others. */
function encodeData(ctx: RestContext, topic: string, name: 'key' | 'value', raw: unknown): Encoded | Promise<Encoded> {
  if (raw === undefined || raw === null) return { bytes: null, meta: '', data: null }
  const d = asObject(raw, name)
  const typeName = optString(d, 'type')
  const type = typeName?.toUpperCase() as DataType | undefined
  if (type !== undefined && !TYPES.includes(type)) throw Errors.badRequest(`Unknown ${name} type ${typeName}`)
  const data = d['data']
  if (type === 'BINARY') {
    const bytes = data === null || data === undefined ? null : decodeBase64(data)
    return { bytes, meta: plainMeta(name, type, bytes?.length ?? 0), data: d }
  }
  if (type === 'JSON') {
    const bytes = data === null || data === undefined ? null : Buffer.from(JSON.stringify(data), 'utf8')
    return { bytes, meta: plainMeta(name, type, bytes?.length ?? 0), data: d }
  }
  if (type === 'STRING') {
    if (data !== null && data !== undefined && typeof data !== 'string') throw Errors.badRequest(`${name}: data of type STRING must be a JSON string`)
    const bytes = data === null || data === undefined ? null : Buffer.from(data, 'utf8')
    return { bytes, meta: plainMeta(name, type, bytes?.length ?? 0), data: d }
  }
  // A schema type, or no type at all: the schema named by the other fields (default: the subject's latest).
  const spec = schemaSpec(d, type)
  return (async (): Promise<Encoded> => {
    const schema = await ctx.schemas.resolve(topic, name === 'key', spec)
    const bytes = await ctx.schemas.serialize(topic, schema, data)
    return { bytes, meta: metaJson(name, schema.format satisfies SchemaFormat, bytes.length, schema), data: d }
  })()
}

interface ProduceRecord {
  partition: number | undefined
  headers: Header[] | undefined
  timestamp: number
  key: Encoded
  value: Encoded
}

/** One produce request (kafka-rest's ProduceRequest) in the form the producer takes. */
function encodeRecord(ctx: RestContext, topic: string, json: unknown): ProduceRecord | Promise<ProduceRecord> {
  const r = asObject(json, 'produce request')
  const partition = optInt(r, 'partition_id')
  if (partition !== undefined && partition < 0) throw Errors.partitionNotFound()
  let headers: Header[] | undefined
  const hs = optArray(r, 'headers')
  if (hs !== undefined) {
    headers = hs.map((h) => {
      const o = asObject(h, 'header')
      const name = optString(o, 'name')
      if (name === undefined) throw Errors.badRequest('a header needs a name')
      const v = o['value']
      return { key: name, value: v === null || v === undefined ? null : decodeBase64(v) }
    })
  }
  let timestamp = Date.now()
  const ts = r['timestamp']
  if (ts !== undefined && ts !== null) {
    const t = typeof ts === 'string' ? Date.parse(ts) : NaN
    if (Number.isNaN(t)) throw Errors.badRequest(`timestamp ${JSON.stringify(ts)} is not an ISO 8601 date-time`)
    timestamp = t
  }
  const key = encodeData(ctx, topic, 'key', r['key'])
  const value = encodeData(ctx, topic, 'value', r['value'])
  if (key instanceof Promise || value instanceof Promise) {
    return Promise.all([key, value]).then(([k, v]) => ({ partition, headers, timestamp, key: k, value: v }))
  }
  return { partition, headers, timestamp, key, value }
}

function errorLine(e: RestError): string {
  return JSON.stringify({ error_code: e.errorCode, message: e.message })
}

/** The topic's metadata, or the error every record of the request is answered with. */
async function topicInfo(ctx: RestContext, topic: string): Promise<TopicInfo | RestError> {
  try {
    return await ctx.producer.topicInfo(topic)
  } catch (e) {
    if (e instanceof KafkaError && (e.code === ErrorCode.UNKNOWN_TOPIC_OR_PARTITION || e.code === ErrorCode.INVALID_TOPIC_EXCEPTION)) return Errors.topicNotFound()
    return fromError(e)
  }
}

/** Report text held back once the body has ended, before it is written anyway. */
const OUT_BYTES = 64 * 1024

/** One streaming produce request: records in, reports out in the same order. */
class RecordStream {
  /**
   * Per outstanding record, by sequence number & mask: its report once known, and its key/value report
   * members. A ring that starts small (most requests carry a record or a few) and doubles as needed, up
   * to twice MAX_PENDING (at most MAX_PENDING + 1 are ever outstanding), below the size at which V8
   * would make an array a slow dictionary.
   */
  private reports: (string | undefined)[] = new Array<string | undefined>(16)
  private metas: string[] = new Array<string>(16)
  private mask = 15
  /** Reports written so far (= the sequence number of the first outstanding record). */
  private written = 0
  /** Records taken so far (each gets the next sequence number). */
  private sent = 0
  private headDone = false
  private idle: (() => void) | null = null
  private roomWaiter: (() => void) | null = null
  private readonly prefix: string
  private readonly deadline: number
  private lastTs = -1
  private lastIso = ''
  /** Reports moved out of the ring and not written yet. */
  private out = ''
  /** The whole body has been read. */
  private inputDone = false
  /** The last write found the client's socket backed up: wait for it to drain before taking more records. */
  private backedUp = false

  constructor(
    private readonly ctx: RestContext,
    private readonly res: HttpResponse,
    clusterId: string,
    private readonly topic: string,
  ) {
    this.prefix = `{"error_code":200,"cluster_id":${JSON.stringify(clusterId)},"topic_name":${JSON.stringify(topic)},"partition_id":`
    this.deadline = Date.now() + ctx.settings.streamingConnectionMaxDurationMs
    // A client gone away: whoever waits for room or for the last reports stops waiting.
    res.onAborted(() => {
      this.roomWaiter?.()
      this.roomWaiter = null
      this.idle?.()
      this.idle = null
    })
  }

  private iso(ts: number): string {
    if (ts !== this.lastTs) {
      this.lastTs = ts
      this.lastIso = new Date(ts).toISOString()
    }
    return this.lastIso
  }

  private readonly onDelivery = (err: Error | null, d: BatchDelivery): void => {
    if (err !== null) {
      const line = errorLine(fromError(err))
      for (let k = d.from; k < d.to; k++) this.reports[d.ctxs[k]! & this.mask] = line
    } else {
      const head = `${this.prefix}${d.partition},"offset":`
      for (let k = d.from; k < d.to; k++) {
        const slot = d.ctxs[k]! & this.mask
        const ts = d.logAppendTime >= 0 ? d.logAppendTime : d.timestamps[k]!
        this.reports[slot] = `${head}${d.baseOffset + k},"timestamp":"${this.iso(ts)}"${this.metas[slot]}}`
      }
    }
    this.flush()
  }

  /**
   * Moves the reports that are complete, from the first outstanding one on, to the output. While the
   * body is still arriving they are written at once (a streaming client waits for them); once it has
   * all arrived they are held (up to OUT_BYTES) so that a plain request's answer, head and reports and
   * end, leaves in one write.
   */
  private flush(): void {
    let text = ''
    for (;;) {
      if (this.written === this.sent) break
      const slot = this.written & this.mask
      const report = this.reports[slot]
      if (report === undefined) break
      text += report + SEPARATOR
      this.reports[slot] = undefined
      this.metas[slot] = ''
      this.written++
    }
    if (text === '') return
    this.out += text
    if (!this.inputDone || this.out.length >= OUT_BYTES) this.writeOut()
    if (this.roomWaiter !== null && this.sent - this.written < MAX_PENDING / 2) {
      const w = this.roomWaiter
      this.roomWaiter = null
      w()
    }
    if (this.written === this.sent && this.idle !== null) {
      const w = this.idle
      this.idle = null
      w()
    }
  }

  private writeOut(): void {
    if (this.out === '') return
    this.head()
    if (!this.res.write(this.out)) this.backedUp = true
    this.out = ''
  }

  private head(): void {
    if (this.headDone) return
    this.headDone = true
    this.res.writeHead(200, JSON_HEADERS)
  }

  /** Room in the ring for one more outstanding record. */
  private reserve(): void {
    if (this.sent - this.written <= this.mask) return
    const cap = (this.mask + 1) * 2
    const reports = new Array<string | undefined>(cap)
    const metas = new Array<string>(cap)
    for (let seq = this.written; seq < this.sent; seq++) {
      reports[seq & (cap - 1)] = this.reports[seq & this.mask]
      metas[seq & (cap - 1)] = this.metas[seq & this.mask]!
    }
    this.reports = reports
    this.metas = metas
    this.mask = cap - 1
  }

  /** A report known at once (a record refused before it was sent). */
  private report(line: string): void {
    this.reserve()
    const slot = this.sent & this.mask
    this.metas[slot] = ''
    this.reports[slot] = line
    this.sent++
    this.flush()
  }

  private send(info: TopicInfo, rec: ProduceRecord): void {
    if (rec.partition !== undefined && rec.partition >= info.partitions.length) {
      this.report(errorLine(Errors.partitionNotFound()))
      return
    }
    this.reserve()
    const seq = this.sent
    const slot = seq & this.mask
    this.metas[slot] = rec.key.meta + rec.value.meta
    this.reports[slot] = undefined
    this.sent++
    try {
      this.ctx.producer.appendBatched(this.topic, rec.partition, rec.key.bytes, rec.value.bytes, rec.headers, this.onDelivery, seq, rec.timestamp)
    } catch (e) {
      this.reports[slot] = errorLine(fromError(e))
      this.flush()
    }
  }

  private allWritten(): Promise<void> {
    if (this.written === this.sent || this.res.aborted) return Promise.resolve()
    return new Promise((resolve) => (this.idle = resolve))
  }

  /** Resolves once fewer than MAX_PENDING / 2 reports are outstanding (or the client is gone). */
  private room(): Promise<void> {
    if (this.sent - this.written < MAX_PENDING / 2 || this.res.aborted) return Promise.resolve()
    return new Promise((resolve) => (this.roomWaiter = resolve))
  }

  async run(body: AsyncIterable<Buffer>): Promise<void> {
    const info = await topicInfo(this.ctx, this.topic)
    const splitter = new JsonSplitter(this.ctx.settings.produceRecordMaxBytes)
    const values: unknown[] = []
    let fatal: RestError | null = null
    let records = 0
    try {
      outer: for await (const chunk of body) {
        if (this.res.aborted) return
        if (Date.now() > this.deadline) {
          fatal = new RestError(408, 408, 'Streaming connection open for longer than allowed: Connection will be closed.')
          break
        }
        try {
          splitter.push(chunk, values)
        } catch (e) {
          fatal = fromError(e)
        }
        for (let i = 0; i < values.length; i++) {
          records++
          if (info instanceof RestError) {
            this.report(errorLine(info))
            continue
          }
          try {
            const rec = encodeRecord(this.ctx, this.topic, values[i])
            this.send(info, rec instanceof Promise ? await rec : rec)
          } catch (e) {
            this.report(errorLine(fromError(e)))
          }
          // Flow control: the producer's buffer, the reports outstanding, the client's reading.
          if (!this.ctx.producer.hasCapacity) await this.ctx.producer.waitForCapacity()
          if (this.sent - this.written >= MAX_PENDING) await this.room()
          if (this.backedUp) {
            await this.res.writable()
            this.backedUp = false
          }
          if (this.res.aborted) return
        }
        values.length = 0
        if (fatal !== null) break outer
      }
      if (fatal === null) splitter.end()
    } catch (e) {
      if (this.res.aborted) return
      fatal = fromError(e)
    }
    this.inputDone = true
    if (this.out.length >= OUT_BYTES) this.writeOut()
    await this.allWritten()
    if (this.res.aborted) return
    if (fatal !== null) {
      this.head()
      this.res.end(this.out + errorLine(fatal) + SEPARATOR)
      return
    }
    if (records === 0) {
      const e = Errors.emptyBody()
      this.res.send(e.status, JSON_HEADERS, errorLine(e))
      return
    }
    this.head()
    this.res.end(this.out)
  }
}

export function mountProduce(server: HttpServer, ctx: RestContext): void {
  server.streamRoute(
    'POST',
    '/v3/clusters/:cluster_id/topics/:topic_name/records',
    async (req: StreamedRequest, res: HttpResponse) => {
      let clusterId: string
      try {
        checkV3ContentType(req)
        clusterId = await ctx.clusterId()
        if (req.params.cluster_id !== clusterId) throw Errors.clusterNotFound(req.params.cluster_id!)
      } catch (e) {
        const err = fromError(e)
        res.send(err.status, JSON_HEADERS, errorLine(err), { closeConnection: true })
        return
      }
      await new RecordStream(ctx, res, clusterId, req.params.topic_name!).run(req.body)
    },
    { bufferBytes: 1024 * 1024 },
  )

  jsonRoute(server, ctx, 'POST', '/v3/clusters/:cluster_id/topics/:topic_name/records:batch', V3_JSON, async (req) => {
    checkV3ContentType(req)
    const clusterId = await ctx.clusterId()
    if (req.params.cluster_id !== clusterId) throw Errors.clusterNotFound(req.params.cluster_id!)
    const topic = req.params.topic_name!
    const entries = optArray(asObject(jsonBody(req, true)), 'entries')
    const batchError = (m: string): RestError => new RestError(400, 42208, m)
    if (entries === undefined || entries.length === 0) throw batchError('Empty batch.')
    if (entries.length > 10) throw batchError('Too many entries in batch.')
    const ids = entries.map((e) => {
      const id = asObject(e, 'entry')['id']
      if (typeof id !== 'string' || id.length < 1 || id.length > 80) throw batchError('Batch entry identifier is not a valid string.')
      return id
    })
    if (new Set(ids).size !== ids.length) throw batchError('Batch entry IDs are not distinct.')
    const info = await topicInfo(ctx, topic)
    const successes: unknown[] = []
    const failures: unknown[] = []
    await Promise.all(
      entries.map(async (e, i) => {
        const id = ids[i]!
        try {
          if (info instanceof RestError) throw info
          const rec = await encodeRecord(ctx, topic, e)
          if (rec.partition !== undefined && rec.partition >= info.partitions.length) throw Errors.partitionNotFound()
          const meta = await ctx.producer.send({ topic, partition: rec.partition, key: rec.key.bytes, value: rec.value.bytes, headers: rec.headers, timestamp: rec.timestamp })
          const report = JSON.parse(`{"id":${JSON.stringify(id)},"cluster_id":${JSON.stringify(clusterId)},"topic_name":${JSON.stringify(topic)},"partition_id":${meta.partition},"offset":${meta.offset},"timestamp":"${new Date(meta.timestamp).toISOString()}"${rec.key.meta}${rec.value.meta}}`) as unknown
          successes.push(report)
        } catch (err) {
          const r = fromError(err)
          failures.push({ id, error_code: r.errorCode, message: r.message })
        }
      }),
    )
    return { status: 207, body: { successes, failures } }
  })
}
