// WebSocket streaming of a topic: GET /ws/topics/{topic} upgrades to a WebSocket that receives the
// topic's records as they arrive and produces to it, with an acknowledgement per message. docs/http.md
// ("WebSocket streaming") documents the protocol; in short:
//
//   query      partition=0,1 (default every partition) | offset=N|earliest|latest (default latest)
//              | timestamp=MS (first record at or after) | group=G (subscribe as a member of group G:
//              its committed offsets, partitions shared with the group's other members; the offsets
//              of the records handed to the socket are auto-committed every 5 s and at the close)
//              format=json (default) | binary; encoding=auto (default) | utf8 | base64 (json only)
//   server ->  {"type":"subscribed",...} once, then {"type":"records","records":[...]} text frames, or
//              binary frames (layout in encodeBinaryRecords); {"type":"ack",...} per produced message;
//              {"type":"error",...} before a close for a failure (after the acks of the produce
//              messages already taken; later ones are answered with error_code 50003).
//   client ->  {"type":"produce","id":..,"partition":..,"key":..,"value":..,"headers":{..},"encoding":..}
//              text frames, or binary frames whose bytes are one record's value. Each is acknowledged
//              with its sequence number on the socket (seq, from 1) and its id.
//
// Backpressure, both ways:
// - To the client: the consumer is not polled while more than pauseBytes are queued for the socket
//   (uWS getBufferedAmount); it resumes on drain. A client that keeps more than pauseBytes unread for
//   slowClientTimeoutMs, or lets the queue pass maxBufferedBytes, is disconnected with close code 1008:
//   memory per socket stays bounded whatever the client does.
// - From the client: at most maxInFlightProduce messages are being produced at once per socket; more
//   are answered at once with error_code 42901 and not written (the client waits for acks, as a Kafka
//   producer bounds its in-flight requests). Messages are at most maxMessageBytes (uWS closes the
//   socket on a larger one).
import { Consumer } from '../client/consumer.js'
import type { ClientSecurity } from '../client/sasl.js'
import type { Admin } from '../client/admin.js'
import type { Producer, RecordMetadata } from '../client/producer.js'
import type { ConsumedRecord, Header } from '../client/record-batches.js'
import { HttpError, jsonNestedDeeperThan, tooDeepMessage, type HttpRequest, type HttpServer, type WebSocketConnection } from '../http/index.js'
import type { Logger } from '../observability/logger.js'
import type { Counter, Gauge, MetricsRegistry } from '../observability/metrics.js'
import { currentCaller } from '../rest/caller-identity.js'
import { fromError } from '../rest/errors.js'
import { type DecodedField, type Encoding, ENCODINGS, type RecordDecoder } from './decode.js'

export interface TopicStreamsOptions {
  bootstrapServers: string[]
  /** The identity of the Kafka clients (TLS, SASL); absent: PLAINTEXT as User:ANONYMOUS. */
  security?: ClientSecurity
  admin: Admin
  producer: Producer
  decoder: RecordDecoder
  log: Logger
  metrics?: MetricsRegistry
  /** Consuming pauses while more than this is queued for the client. Default 1 MiB. */
  pauseBytes?: number
  /** A client with more than this queued is disconnected. Default 16 MiB. */
  maxBufferedBytes?: number
  /** A client that keeps pauseBytes unread this long is disconnected. Default 30 000 ms. */
  slowClientTimeoutMs?: number
  /** Produce messages being written at once per socket. Default 1000. */
  maxInFlightProduce?: number
  /** Largest message from the client. Default 1 MiB. */
  maxMessageBytes?: number
  /** Records per poll (max.poll.records of each socket's consumer). Default 2000. */
  maxPollRecords?: number
}

type Start = { kind: 'offset'; offset: number | 'earliest' | 'latest' } | { kind: 'timestamp'; timestamp: number }

interface StreamRequest {
  topic: string
  partitions: number[] | null
  start: Start
  group: string | null
  format: 'json' | 'binary'
  encoding: Encoding
}

/** One socket's state, from upgrade to close. */
interface Stream extends StreamRequest {
  consumer: Consumer | null
  closed: boolean
  /** Resolves the wait for the socket to drain (or close). */
  wake: (() => void) | null
  /** Produce messages received so far (the seq of the last one). */
  seq: number
  inFlight: number
  /** The consuming side failed: the socket closes once the produce messages already taken are acknowledged. */
  failed: boolean
  /** Called when the last in-flight produce message is acknowledged (a failed stream waits on it to close). */
  settled: (() => void) | null
  /** The consuming loop's end. */
  done: Promise<void> | null
}

/** Close codes (RFC 6455): 1008 policy violation (slow client), 1011 server error. */
const SLOW_CLIENT = 1008
const SERVER_ERROR = 1011
/** Text frames carry at most this many bytes of records; a larger poll is split. */
const FRAME_TARGET_BYTES = 256 * 1024

function badRequest(message: string): HttpError {
  return new HttpError(400, message, { 'Content-Type': 'application/json' }, JSON.stringify({ error_code: 40002, message }))
}

/** The query of an upgrade request, checked; an HttpError with a Confluent body when it is wrong. */
export function parseStreamRequest(topic: string, q: URLSearchParams): StreamRequest {
  const format = q.get('format') ?? 'json'
  if (format !== 'json' && format !== 'binary') throw badRequest(`format must be json or binary, not '${format}'`)
  const encoding = (q.get('encoding') ?? 'auto') as Encoding
  if (!ENCODINGS.includes(encoding)) throw badRequest(`encoding must be one of ${ENCODINGS.join(', ')}, not '${encoding}'`)
  let partitions: number[] | null = null
  const p = q.get('partition')
  if (p !== null) {
    partitions = p.split(',').map((x) => Number(x.trim()))
    if (partitions.some((n) => !Number.isInteger(n) || n < 0)) throw badRequest(`partition must be partition numbers separated by commas, not '${p}'`)
  }
  const group = q.get('group')
  const offset = q.get('offset')
  const timestamp = q.get('timestamp')
  if (offset !== null && timestamp !== null) throw badRequest('give offset or timestamp, not both')
  let start: Start = { kind: 'offset', offset: 'latest' }
  if (timestamp !== null) {
    const ts = Number(timestamp)
    if (!Number.isInteger(ts) || ts < 0) throw badRequest(`timestamp must be milliseconds since the epoch, not '${timestamp}'`)
    start = { kind: 'timestamp', timestamp: ts }
  } else if (offset !== null) {
    if (offset === 'earliest' || offset === 'latest') start = { kind: 'offset', offset }
    else {
      const n = Number(offset)
      if (!Number.isInteger(n) || n < 0) throw badRequest(`offset must be a non-negative offset, earliest or latest, not '${offset}'`)
      start = { kind: 'offset', offset: n }
    }
  }
  if (group !== null) {
    if (group === '') throw badRequest('group must not be empty')
    if (partitions !== null) throw badRequest('a group subscription gets its partitions from the group: leave out partition')
    if (start.kind !== 'offset' || typeof start.offset === 'number') throw badRequest('a group starts at its committed offsets: offset may only be earliest or latest (where to start without one)')
  }
  return { topic, partitions, start, group, format, encoding }
}

/**
 * Binary frame of records (format=binary), big-endian:
 *   u8 1 (records) | u32 count | per record:
 *     i32 partition | f64 offset | f64 timestamp (ms) | i32 key length (-1 null) | key
 *     | i32 value length (-1 null) | value | u16 header count | per header: u16 key length | key (UTF-8)
 *     | i32 value length (-1 null) | value
 * Offsets and timestamps are doubles: exact up to 2^53, which no offset reaches.
 */
export function encodeBinaryRecords(records: readonly ConsumedRecord[], from: number, to: number): Buffer {
  let size = 5
  for (let i = from; i < to; i++) {
    const r = records[i]!
    size += 4 + 8 + 8 + 4 + (r.key?.length ?? 0) + 4 + (r.value?.length ?? 0) + 2
    for (const h of r.headers) size += 2 + Buffer.byteLength(h.key) + 4 + (h.value?.length ?? 0)
  }
  const out = Buffer.allocUnsafe(size)
  out[0] = 1
  out.writeUInt32BE(to - from, 1)
  let at = 5
  const bytes = (b: Buffer | null): void => {
    if (b === null) {
      out.writeInt32BE(-1, at)
      at += 4
    } else {
      out.writeInt32BE(b.length, at)
      b.copy(out, at + 4)
      at += 4 + b.length
    }
  }
  for (let i = from; i < to; i++) {
    const r = records[i]!
    out.writeInt32BE(r.partition, at)
    out.writeDoubleBE(r.offset, at + 4)
    out.writeDoubleBE(r.timestamp, at + 12)
    at += 20
    bytes(r.key)
    bytes(r.value)
    out.writeUInt16BE(r.headers.length, at)
    at += 2
    for (const h of r.headers) {
      const n = out.write(h.key, at + 2, 'utf8')
      out.writeUInt16BE(n, at)
      at += 2 + n
      bytes(h.value)
    }
  }
  return out
}

function recordBytes(r: ConsumedRecord): number {
  let n = 64 + (r.key?.length ?? 0) + (r.value?.length ?? 0)
  for (const h of r.headers) n += 16 + h.key.length + (h.value?.length ?? 0)
  return n
}

interface StreamMetrics {
  connections: Gauge
  recordsSent: Counter
  recordsProduced: Counter
  slowClients: Counter
}

export class TopicStreams {
  private readonly streams = new Set<Stream>()
  private readonly pauseBytes: number
  private readonly maxBufferedBytes: number
  private readonly slowClientTimeoutMs: number
  private readonly maxInFlightProduce: number
  private readonly metrics: StreamMetrics | null
  /** The most bytes seen queued for one socket (tests check the bound). */
  maxBufferedSeen = 0

  constructor(private readonly opts: TopicStreamsOptions) {
    this.pauseBytes = opts.pauseBytes ?? 1024 * 1024
    this.maxBufferedBytes = Math.max(this.pauseBytes, opts.maxBufferedBytes ?? 16 * 1024 * 1024)
    this.slowClientTimeoutMs = opts.slowClientTimeoutMs ?? 30_000
    this.maxInFlightProduce = opts.maxInFlightProduce ?? 1000
    const r = opts.metrics
    this.metrics =
      r === undefined
        ? null
        : {
            connections: r.gauge('skein_websocket_connections', 'Open WebSocket topic streams').labels(),
            recordsSent: r.counter('skein_websocket_records_sent_total', 'Records sent to WebSocket clients').labels(),
            recordsProduced: r.counter('skein_websocket_records_produced_total', 'Records produced by WebSocket clients and acknowledged').labels(),
            slowClients: r.counter('skein_websocket_slow_client_disconnects_total', 'WebSocket clients disconnected for not reading').labels(),
          }
  }

  /** Open streams now. */
  get size(): number {
    return this.streams.size
  }

  mount(server: HttpServer): void {
    server.ws<Stream>('/ws/topics/:topic', {
      maxPayloadLength: this.opts.maxMessageBytes ?? 1024 * 1024,
      // uWS drops sends past this; the stream closes the socket when that happens.
      maxBackpressure: this.maxBufferedBytes,
      idleTimeoutSeconds: 0,
      upgrade: (req) => this.upgrade(req),
      open: (ws) => this.open(ws),
      message: (ws, message, isBinary) => this.onMessage(ws, message, isBinary),
      drain: (ws) => {
        if (ws.bufferedAmount <= this.pauseBytes) this.wakeUp(ws.data)
      },
      close: (ws) => this.onClose(ws.data),
    })
  }

  private async upgrade(req: HttpRequest): Promise<Stream> {
    const request = parseStreamRequest(req.params.topic!, req.query)
    const [described] = await this.opts.admin.describeTopics([request.topic]).catch(() => [])
    if (described === undefined || described.partitions.length === 0) {
      const message = `Topic ${request.topic} not found.`
      throw new HttpError(404, message, { 'Content-Type': 'application/json' }, JSON.stringify({ error_code: 40403, message }))
    }
    const known = described.partitions.map((p) => p.partition)
    const missing = request.partitions?.find((p) => !known.includes(p))
    if (missing !== undefined) {
      const message = `Partition ${missing} of topic ${request.topic} not found.`
      throw new HttpError(404, message, { 'Content-Type': 'application/json' }, JSON.stringify({ error_code: 40402, message }))
    }
    return { ...request, partitions: request.partitions ?? (request.group === null ? known.sort((a, b) => a - b) : null), consumer: null, closed: false, wake: null, seq: 0, inFlight: 0, failed: false, settled: null, done: null }
  }

  private open(ws: WebSocketConnection<Stream>): void {
    const s = ws.data
    this.streams.add(s)
    this.metrics?.connections.inc()
    // Nothing is sent from within open: uWS calls it inside the upgrade's cork, and a send there can end
    // the new socket with 1006 at once (uNetworking/uWebSockets.js#1108, seen here about one upgrade in
    // four). The stream starts on the next turn of the event loop instead.
    s.done = new Promise<void>((resolve) => setTimeout(resolve, 0)).then(() => (s.closed ? undefined : this.consume(ws))).catch(async (err: unknown) => {
      if (s.closed) return
      this.opts.log.warn({ err: (err as Error).message, topic: s.topic }, 'WebSocket stream failed')
      s.failed = true
      this.sendJson(ws, { type: 'error', ...fromError(err).toJSON() })
      // Produce messages taken before the failure may already be written: their acks go out before the
      // close, or the client would count them lost and send them again. The producer's delivery timeout
      // bounds the wait; a socket the client closes meanwhile ends it too (onClose).
      if (s.inFlight > 0) await new Promise<void>((resolve) => (s.settled = resolve))
      if (!s.closed) ws.end(SERVER_ERROR, 'stream failed')
    })
  }

  private onClose(s: Stream): void {
    if (s.closed) return
    s.closed = true
    this.streams.delete(s)
    this.metrics?.connections.dec()
    this.wakeUp(s)
    this.settle(s)
  }

  private settle(s: Stream): void {
    const settled = s.settled
    s.settled = null
    settled?.()
  }

  private wakeUp(s: Stream): void {
    const w = s.wake
    s.wake = null
    w?.()
  }

  /** Sends a text frame; a socket past its bound is closed instead. */
  private sendJson(ws: WebSocketConnection<Stream>, message: unknown): boolean {
    return this.sendFrame(ws, JSON.stringify(message), false)
  }

  private sendFrame(ws: WebSocketConnection<Stream>, frame: string | Buffer, binary: boolean): boolean {
    if (ws.closed) return false
    const r = ws.send(frame, binary)
    const queued = ws.bufferedAmount
    if (queued > this.maxBufferedSeen) this.maxBufferedSeen = queued
    if (r === 'dropped' || queued > this.maxBufferedBytes) {
      this.disconnectSlow(ws, `more than ${this.maxBufferedBytes} bytes unread`)
      return false
    }
    return true
  }

  private disconnectSlow(ws: WebSocketConnection<Stream>, why: string): void {
    if (ws.closed) return
    this.metrics?.slowClients.inc()
    this.opts.log.info({ topic: ws.data.topic, why }, 'WebSocket client disconnected: too slow')
    ws.end(SLOW_CLIENT, `slow client: ${why}`)
  }

  /** Waits until the socket has at most pauseBytes queued; false when the client was too slow or left. */
  private async waitForDrain(ws: WebSocketConnection<Stream>): Promise<boolean> {
    const s = ws.data
    const deadline = Date.now() + this.slowClientTimeoutMs
    while (!s.closed && ws.bufferedAmount > this.pauseBytes) {
      const left = deadline - Date.now()
      if (left <= 0) {
        this.disconnectSlow(ws, `more than ${this.pauseBytes} bytes unread for ${this.slowClientTimeoutMs} ms`)
        return false
      }
      let timer: NodeJS.Timeout | undefined
      await new Promise<void>((resolve) => {
        s.wake = resolve
        timer = setTimeout(resolve, Math.min(left, 1000))
      })
      clearTimeout(timer)
      s.wake = null
    }
    return !s.closed
  }

  private async consume(ws: WebSocketConnection<Stream>): Promise<void> {
    const s = ws.data
    // Opened by an authenticated caller whose requests act as them: the consumer logs in as the caller.
    const caller = currentCaller()
    const consumer = new Consumer({
      bootstrapServers: caller?.bootstrapServers ?? this.opts.bootstrapServers,
      security: caller?.security ?? this.opts.security,
      clientId: 'skein-websocket',
      groupId: s.group ?? undefined,
      autoOffsetReset: s.start.kind === 'offset' && s.start.offset === 'earliest' ? 'earliest' : 'latest',
      maxPollRecords: this.opts.maxPollRecords ?? 2000,
      fetchMaxWaitMs: 500,
    })
    s.consumer = consumer
    try {
      if (s.group !== null) consumer.subscribe([s.topic])
      else {
        consumer.assign(s.partitions!.map((partition) => ({ topic: s.topic, partition })))
        const to = s.start.kind === 'timestamp' ? { timestamp: s.start.timestamp } : s.start.offset
        for (const p of s.partitions!) consumer.seek(s.topic, p, to)
      }
      this.sendJson(ws, {
        type: 'subscribed',
        topic: s.topic,
        partitions: s.partitions,
        group: s.group,
        format: s.format,
        encoding: s.format === 'json' ? s.encoding : undefined,
        from: s.start.kind === 'timestamp' ? { timestamp: s.start.timestamp } : { offset: s.start.offset },
      })
      while (!s.closed) {
        if (ws.bufferedAmount > this.pauseBytes && !(await this.waitForDrain(ws))) break
        const records = await consumer.poll(500)
        if (s.closed || records.length === 0) continue
        if (s.format === 'binary') this.sendBinary(ws, records)
        else await this.sendRecordsJson(ws, records)
        this.metrics?.recordsSent.inc(records.length)
      }
    } finally {
      s.consumer = null
      await consumer.close().catch(() => {})
    }
  }

  private sendBinary(ws: WebSocketConnection<Stream>, records: readonly ConsumedRecord[]): void {
    // Corked: the frames of one poll leave in one write.
    ws.cork(() => {
      let from = 0
      let bytes = 0
      for (let i = 0; i < records.length; i++) {
        bytes += recordBytes(records[i]!)
        if (bytes >= FRAME_TARGET_BYTES || i === records.length - 1) {
          if (!this.sendFrame(ws, encodeBinaryRecords(records, from, i + 1), true)) return
          from = i + 1
          bytes = 0
        }
      }
    })
  }

  private async sendRecordsJson(ws: WebSocketConnection<Stream>, records: readonly ConsumedRecord[]): Promise<void> {
    const s = ws.data
    const { decoder } = this.opts
    // Decoding through the registry is asynchronous; plain text or base64 is not, and costs no promise.
    const field = (b: Buffer | null): DecodedField | null | Promise<DecodedField | null> => (b === null ? null : decoder.mayUseRegistry(b, s.encoding) ? decoder.decode(s.topic, b, s.encoding) : decoder.plain(b, s.encoding))
    const auto = s.encoding === 'auto'
    const frames: string[] = []
    let parts: string[] = []
    let bytes = 0
    for (const r of records) {
      let key = field(r.key)
      let value = field(r.value)
      if (key instanceof Promise) key = await key
      if (value instanceof Promise) value = await value
      const out: Record<string, unknown> = { partition: r.partition, offset: r.offset, timestamp: r.timestamp, key: key?.data ?? null, value: value?.data ?? null }
      if (auto) {
        out.keyFormat = key?.format ?? null
        out.valueFormat = value?.format ?? null
        if (value?.schemaId !== undefined) out.valueSchemaId = value.schemaId
        if (key?.schemaId !== undefined) out.keySchemaId = key.schemaId
      }
      if (r.headers.length > 0) out.headers = r.headers.map((h: Header) => ({ key: h.key, value: h.value === null ? null : decoder.plain(h.value, s.encoding === 'base64' ? 'base64' : 'auto').data }))
      const text = JSON.stringify(out)
      parts.push(text)
      bytes += text.length
      if (bytes >= FRAME_TARGET_BYTES) {
        frames.push(`{"type":"records","records":[${parts.join(',')}]}`)
        parts = []
        bytes = 0
      }
    }
    if (parts.length > 0) frames.push(`{"type":"records","records":[${parts.join(',')}]}`)
    if (s.closed) return
    ws.cork(() => {
      for (const f of frames) if (!this.sendFrame(ws, f, false)) return
    })
  }

  private onMessage(ws: WebSocketConnection<Stream>, message: Buffer, isBinary: boolean): void {
    const s = ws.data
    const seq = ++s.seq
    let id: unknown
    let record: { partition?: number; key?: Buffer | null; value: Buffer | null; headers?: Header[] }
    try {
      if (isBinary) record = { value: Buffer.from(message) }
      else {
        const m = parseProduceMessage(message.toString('utf8'))
        id = m.id
        record = m.record
      }
    } catch (err) {
      this.sendJson(ws, { type: 'ack', seq, id, error_code: 40001, message: (err as Error).message })
      return
    }
    if (s.failed) {
      this.sendJson(ws, { type: 'ack', seq, id, error_code: 50003, message: 'The stream failed (see its error message) and is closing; nothing more is produced on it' })
      return
    }
    if (s.inFlight >= this.maxInFlightProduce) {
      this.sendJson(ws, { type: 'ack', seq, id, error_code: 42901, message: `more than ${this.maxInFlightProduce} messages waiting for their acknowledgement; wait for acks before sending more` })
      return
    }
    s.inFlight++
    this.opts.producer.send({ topic: s.topic, partition: record.partition, key: record.key ?? null, value: record.value, headers: record.headers }).then(
      (meta: RecordMetadata) => {
        s.inFlight--
        this.metrics?.recordsProduced.inc()
        this.sendJson(ws, { type: 'ack', seq, id, partition: meta.partition, offset: meta.offset, timestamp: meta.timestamp })
        if (s.inFlight === 0) this.settle(s)
      },
      (err: unknown) => {
        s.inFlight--
        this.sendJson(ws, { type: 'ack', seq, id, ...fromError(err).toJSON() })
        if (s.inFlight === 0) this.settle(s)
      },
    )
  }

  /** Closes every stream (the server is stopping) and waits for their consumers to close. */
  async stop(): Promise<void> {
    const pending: Promise<void>[] = []
    for (const s of this.streams) {
      s.closed = true
      this.wakeUp(s)
      if (s.done !== null) pending.push(s.done)
    }
    await Promise.all(pending)
  }
}

/** A produce message's JSON: value (and key, header values) as text, base64 or any JSON. */
export function parseProduceMessage(text: string): { id: unknown; record: { partition?: number; key: Buffer | null; value: Buffer | null; headers?: Header[] } } {
  let m: unknown
  if (jsonNestedDeeperThan(text)) throw new Error(tooDeepMessage())
  try {
    m = JSON.parse(text)
  } catch {
    throw new Error('a text message must be JSON: {"type":"produce","value":...}')
  }
  if (typeof m !== 'object' || m === null || Array.isArray(m)) throw new Error('a text message must be a JSON object')
  const o = m as Record<string, unknown>
  if (o.type !== undefined && o.type !== 'produce') throw new Error(`unknown message type '${String(o.type)}' (only produce is sent to the server)`)
  const encoding = o.encoding ?? 'utf8'
  if (encoding !== 'utf8' && encoding !== 'base64' && encoding !== 'json') throw new Error(`encoding must be utf8, base64 or json, not '${String(encoding)}'`)
  const bytes = (v: unknown, what: string): Buffer | null => {
    if (v === undefined || v === null) return null
    if (encoding === 'json') return Buffer.from(JSON.stringify(v))
    if (typeof v !== 'string') throw new Error(`${what} must be a string with encoding ${encoding} (or use encoding json)`)
    return encoding === 'base64' ? Buffer.from(v, 'base64') : Buffer.from(v, 'utf8')
  }
  let partition: number | undefined
  if (o.partition !== undefined && o.partition !== null) {
    if (!Number.isInteger(o.partition) || (o.partition as number) < 0) throw new Error('partition must be a non-negative integer')
    partition = o.partition as number
  }
  let headers: Header[] | undefined
  if (o.headers !== undefined && o.headers !== null) {
    if (typeof o.headers !== 'object' || Array.isArray(o.headers)) throw new Error('headers must be an object of name: value')
    headers = Object.entries(o.headers as Record<string, unknown>).map(([key, v]) => {
      if (v !== null && typeof v !== 'string') throw new Error(`header ${key} must be a string or null`)
      return { key, value: v === null ? null : encoding === 'base64' ? Buffer.from(v, 'base64') : Buffer.from(v, 'utf8') }
    })
  }
  return { id: o.id, record: { partition, key: bytes(o.key, 'key'), value: bytes(o.value, 'value'), headers } }
}
