// A minimal Kafka client over node:net for raw-socket tests, built on the generated codecs. It pipelines
// requests on one connection, matches responses by correlation id and records the order responses
// arrived in (ordering tests), and can also write arbitrary bytes (hostile-input tests).
import { connect, type Socket } from 'node:net'
import { native } from '../../src/addon/index.js'
import { encodeRequestFrame, readResponseHeader } from '../../src/protocol/index.js'
import * as ApiVersions from '../../src/protocol/messages/18-api-versions.gen.js'
import * as CreateTopics from '../../src/protocol/messages/19-create-topics.gen.js'
import * as Fetch from '../../src/protocol/messages/01-fetch.gen.js'
import * as ListOffsets from '../../src/protocol/messages/02-list-offsets.gen.js'
import * as Metadata from '../../src/protocol/messages/03-metadata.gen.js'
import * as Produce from '../../src/protocol/messages/00-produce.gen.js'
import { Reader } from '../../src/protocol/primitives/reader.js'
import type { Writer } from '../../src/protocol/primitives/writer.js'
import { buildRecordBatch, type BuildBatchOptions, type RecordInput } from '../../src/protocol/records/builder.js'

export const crc32c = (d: Uint8Array, s?: number): number => native.crc32c(d, s)

/** An uncompressed RecordBatch v2 with a valid CRC. */
export function batchOf(records: readonly RecordInput[], opts?: BuildBatchOptions): Buffer {
  return buildRecordBatch(records, crc32c, opts)
}

/** `count` records with values `${tag}-${i}` (and keys `k${i}` when keyed). */
export function simpleBatch(tag: string, count: number, keyed = false): Buffer {
  return batchOf(Array.from({ length: count }, (_, i) => ({ key: keyed ? Buffer.from(`k${i}`) : null, value: Buffer.from(`${tag}-${i}`) })))
}

interface Pending {
  resolve: (frame: Buffer) => void
  reject: (err: Error) => void
  timer: NodeJS.Timeout
}

export class RawClient {
  private nextCorrelationId = 1
  private readonly pending = new Map<number, Pending>()
  private chunks: Buffer[] = []
  private buffered = 0
  /** Correlation ids in the order their responses arrived. */
  readonly received: number[] = []
  /** When each correlation id's response was complete (Date.now()). */
  readonly receivedAt = new Map<number, number>()
  /** Frames whose correlation id nobody waits for (after a timeout or unsolicited). */
  readonly unmatched: Buffer[] = []
  closed = false
  readonly closedPromise: Promise<void>

  private constructor(readonly socket: Socket, readonly timeoutMs: number) {
    socket.on('data', (d: Buffer) => this.onData(d))
    this.closedPromise = new Promise((resolve) => {
      socket.on('close', () => {
        this.closed = true
        for (const [id, p] of this.pending) {
          clearTimeout(p.timer)
          p.reject(new Error(`connection closed before the response to correlation id ${id}`))
        }
        this.pending.clear()
        resolve()
      })
    })
    socket.on('error', () => {})
  }

  static connect(host: string, port: number, timeoutMs = 10000): Promise<RawClient> {
    return new Promise((resolve, reject) => {
      const socket = connect({ host, port })
      const timer = setTimeout(() => {
        socket.destroy()
        reject(new Error(`connect to ${host}:${port} timed out`))
      }, timeoutMs)
      socket.once('connect', () => {
        clearTimeout(timer)
        socket.setNoDelay(true)
        resolve(new RawClient(socket, timeoutMs))
      })
      socket.once('error', (err) => {
        clearTimeout(timer)
        reject(err)
      })
    })
  }

  private onData(d: Buffer): void {
    this.chunks.push(d)
    this.buffered += d.length
    for (;;) {
      if (this.buffered < 4) return
      const head = this.chunks[0]!.length >= 4 ? this.chunks[0]! : Buffer.concat(this.chunks)
      const size = head.readInt32BE(0)
      // Join the chunks only once the whole frame is here (large responses arrive in many pieces).
      if (this.buffered < 4 + size) return
      const all = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks)
      const frame = all.subarray(4, 4 + size)
      const rest = all.subarray(4 + size)
      this.chunks = rest.length > 0 ? [rest] : []
      this.buffered = rest.length
      const correlationId = frame.readInt32BE(0)
      this.received.push(correlationId)
      this.receivedAt.set(correlationId, Date.now())
      const p = this.pending.get(correlationId)
      if (p === undefined) {
        this.unmatched.push(frame)
        continue
      }
      this.pending.delete(correlationId)
      clearTimeout(p.timer)
      p.resolve(frame)
    }
  }

  /** Writes raw bytes (hostile tests); resolves once they are handed to the kernel. */
  write(data: Buffer): Promise<void> {
    return new Promise((resolve, reject) => this.socket.write(data, (err) => (err ? reject(err) : resolve())))
  }

  /** A request frame for apiKey/version with the next correlation id. */
  frame(apiKey: number, version: number, writeBody: (w: Writer) => void, correlationId = this.nextCorrelationId++): { correlationId: number; bytes: Buffer } {
    const bytes = encodeRequestFrame({ requestApiKey: apiKey, requestApiVersion: version, correlationId, clientId: 'skein-test' }, writeBody)
    return { correlationId, bytes }
  }

  /** Waits for the response frame (header included) of correlationId. */
  waitFor(correlationId: number, timeoutMs = this.timeoutMs): Promise<Buffer> {
    if (this.closed) return Promise.reject(new Error('connection is closed'))
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(correlationId)
        reject(new Error(`no response to correlation id ${correlationId} within ${timeoutMs} ms`))
      }, timeoutMs)
      this.pending.set(correlationId, { resolve, reject, timer })
    })
  }

  /** Sends one request and decodes its response. */
  async call<Res>(apiKey: number, version: number, writeBody: (w: Writer) => void, decode: (r: Reader, version: number) => Res, timeoutMs?: number): Promise<Res> {
    const { correlationId, bytes } = this.frame(apiKey, version, writeBody)
    const response = this.waitFor(correlationId, timeoutMs)
    await this.write(bytes)
    return decodeResponse(await response, apiKey, version, decode)
  }

  apiVersions(version = 3): Promise<ApiVersions.ApiVersionsResponse> {
    const req = ApiVersions.createApiVersionsRequest({ clientSoftwareName: 'skein-test', clientSoftwareVersion: '1.0' })
    return this.call(18, version, (w) => ApiVersions.encodeApiVersionsRequest(w, req, version), ApiVersions.decodeApiVersionsResponse)
  }

  metadata(topics: string[] | null, allowAutoTopicCreation = false, version = 9): Promise<Metadata.MetadataResponse> {
    const req = Metadata.createMetadataRequest({
      topics: topics === null ? null : topics.map((name) => Metadata.createMetadataRequestTopic({ name })),
      allowAutoTopicCreation,
    })
    return this.call(3, version, (w) => Metadata.encodeMetadataRequest(w, req, version), Metadata.decodeMetadataResponse)
  }

  /** CreateTopics; `timeoutMs` is how long the broker waits for the new partitions' leaders (Kafka's request field). */
  async createTopic(name: string, numPartitions: number, configs: Record<string, string> = {}, version = 5, timeoutMs = 10_000): Promise<CreateTopics.CreatableTopicResult> {
    const req = CreateTopics.createCreateTopicsRequest({
      timeoutMs,
      topics: [
        CreateTopics.createCreatableTopic({
          name,
          numPartitions,
          replicationFactor: 1,
          configs: Object.entries(configs).map(([n, value]) => CreateTopics.createCreatableTopicConfig({ name: n, value })),
        }),
      ],
    })
    const res = await this.call(19, version, (w) => CreateTopics.encodeCreateTopicsRequest(w, req, version), CreateTopics.decodeCreateTopicsResponse)
    return res.topics[0]!
  }

  produceRequest(topic: string, partition: number, records: Buffer, acks: number): Produce.ProduceRequest {
    return Produce.createProduceRequest({
      acks,
      timeoutMs: 10000,
      topicData: [Produce.createTopicProduceData({ name: topic, partitionData: [Produce.createPartitionProduceData({ index: partition, records })] })],
    })
  }

  /** Produce with a response (acks 1 or -1); returns the partition's response. */
  async produce(topic: string, partition: number, records: Buffer, acks = 1, version = 7): Promise<Produce.PartitionProduceResponse> {
    const req = this.produceRequest(topic, partition, records, acks)
    const res = await this.call(0, version, (w) => Produce.encodeProduceRequest(w, req, version), Produce.decodeProduceResponse)
    return res.responses[0]!.partitionResponses[0]!
  }

  /** acks=0 produce: written, no response expected. Returns the correlation id it used. */
  async produceNoAck(topic: string, partition: number, records: Buffer, version = 7): Promise<number> {
    const req = this.produceRequest(topic, partition, records, 0)
    const { correlationId, bytes } = this.frame(0, version, (w) => Produce.encodeProduceRequest(w, req, version))
    await this.write(bytes)
    return correlationId
  }

  fetchRequest(topic: string, partition: number, offset: number, opts: { maxWaitMs?: number; minBytes?: number; maxBytes?: number; partitionMaxBytes?: number } = {}): Fetch.FetchRequest {
    return Fetch.createFetchRequest({
      maxWaitMs: opts.maxWaitMs ?? 0,
      minBytes: opts.minBytes ?? 0,
      maxBytes: opts.maxBytes ?? 64 * 1024 * 1024,
      topics: [Fetch.createFetchTopic({ topic, partitions: [Fetch.createFetchPartition({ partition, fetchOffset: BigInt(offset), partitionMaxBytes: opts.partitionMaxBytes ?? 16 * 1024 * 1024 })] })],
    })
  }

  async fetch(topic: string, partition: number, offset: number, opts: { maxWaitMs?: number; minBytes?: number; maxBytes?: number; partitionMaxBytes?: number } = {}, version = 12): Promise<Fetch.PartitionData> {
    const req = this.fetchRequest(topic, partition, offset, opts)
    const res = await this.call(1, version, (w) => Fetch.encodeFetchRequest(w, req, version), Fetch.decodeFetchResponse, (opts.maxWaitMs ?? 0) + this.timeoutMs)
    return res.responses[0]!.partitions[0]!
  }

  /** isolationLevel 1 (read_committed) answers latest (-1n) with the last stable offset instead of the high watermark. */
  async listOffset(topic: string, partition: number, timestamp: bigint, version = 5, isolationLevel = 0): Promise<ListOffsets.ListOffsetsPartitionResponse> {
    const req = ListOffsets.createListOffsetsRequest({
      replicaId: -1,
      isolationLevel,
      topics: [ListOffsets.createListOffsetsTopic({ name: topic, partitions: [ListOffsets.createListOffsetsPartition({ partitionIndex: partition, timestamp })] })],
    })
    const res = await this.call(2, version, (w) => ListOffsets.encodeListOffsetsRequest(w, req, version), ListOffsets.decodeListOffsetsResponse)
    return res.topics[0]!.partitions[0]!
  }

  /** Resolves true if the broker closes the connection within timeoutMs. */
  async waitClosed(timeoutMs: number): Promise<boolean> {
    if (this.closed) return true
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), timeoutMs)
    })
    const r = await Promise.race([this.closedPromise.then(() => true), timeout])
    clearTimeout(timer)
    return r
  }

  close(): void {
    this.socket.destroy()
  }
}

/** Decodes a response frame (without size prefix): header for apiKey/version, then the body. */
export function decodeResponse<Res>(frame: Buffer, apiKey: number, version: number, decode: (r: Reader, version: number) => Res): Res {
  const r = new Reader(frame)
  readResponseHeader(r, apiKey, version)
  return decode(r, version)
}

/** The records bytes of a fetched partition as one Buffer (the client decoder gives a Buffer). */
export function recordsBuffer(p: Fetch.PartitionData): Buffer {
  const r = p.records
  if (r === null) return Buffer.alloc(0)
  if (!Buffer.isBuffer(r)) throw new Error('fetched records are not a Buffer')
  return r
}
