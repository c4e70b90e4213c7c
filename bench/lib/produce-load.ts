// A produce load that costs its own process little, so that the broker is the bottleneck: Produce
// requests (acks=1, one record batch per partition of one topic) are encoded once, then written raw over
// a few connections with several requests in flight on each; a request goes out again as soon as its
// response is back (only its correlation id is rewritten). Every response is decoded and every
// partition's error code must be 0: a refused batch fails the run with Kafka's error name, so a benchmark
// cannot measure refusals as throughput. Records are counted from acknowledged partitions only.
import { connect, type Socket } from 'node:net'
import { errorName } from '../../src/domain/errors.js'
import { encodeRequestFrame, readResponseHeader } from '../../src/protocol/index.js'
import * as Produce from '../../src/protocol/messages/00-produce.gen.js'
import { Reader } from '../../src/protocol/primitives/reader.js'

const PRODUCE_API_KEY = 0
/** Size prefix (4) + api key (2) + api version (2): where the request header's correlation id starts. */
const CORRELATION_ID_OFFSET = 8

export interface ProduceLoadOptions {
  port: number
  topic: string
  /** Partitions 0..partitions-1, each given the batch in every request. */
  partitions: number
  /** One RecordBatch v2, sent as it is (a compressed batch keeps its codec's bytes). */
  batch: Buffer
  recordsPerBatch: number
  connections: number
  /** Requests in flight per connection. */
  inFlight: number
  /** Produce version (default 9, flexible, as current Java clients send). */
  version?: number
}

/** What one measured window saw: acknowledged records, its length, and the loader's own CPU. */
export interface LoadWindow {
  records: number
  seconds: number
  /** This process's CPU (user + system) in the window, microseconds. */
  loaderCpuMicros: number
}

class LoadConnection {
  private readonly frames: Buffer[]
  /** Frame indexes in the order they were written: a connection's responses come back in that order. */
  private readonly outstanding: number[] = []
  private chunks: Buffer[] = []
  private buffered = 0
  private nextCorrelationId = 1
  running = false
  failure: Error | null = null
  private drained: (() => void) | null = null

  constructor(private readonly socket: Socket, template: Buffer, inFlight: number, private readonly version: number, private readonly onAcked: (partitions: number) => void, private readonly partitions: number) {
    // One copy of the request per slot: a slot's buffer is rewritten only after its response arrived,
    // when the broker has read all of it.
    this.frames = Array.from({ length: inFlight }, () => Buffer.from(template))
    socket.on('data', (d: Buffer) => this.onData(d))
    socket.on('error', (err) => this.fail(new Error(`produce load connection: ${err.message}`)))
    socket.on('close', () => this.fail(new Error('the broker closed a produce load connection')))
  }

  /** Fills every slot; called only when nothing is in flight (at open, or after stop() resolved). */
  start(): void {
    this.running = true
    for (let slot = 0; slot < this.frames.length; slot++) this.send(slot)
  }

  /** Stops sending; resolves when every request in flight is answered. */
  stop(): Promise<void> {
    this.running = false
    if (this.outstanding.length === 0 || this.failure !== null) return Promise.resolve()
    return new Promise((resolve) => (this.drained = resolve))
  }

  close(): void {
    this.socket.removeAllListeners('close')
    this.socket.destroy()
  }

  private send(slot: number): void {
    const frame = this.frames[slot]!
    frame.writeInt32BE(this.nextCorrelationId++ & 0x7fffffff, CORRELATION_ID_OFFSET)
    this.outstanding.push(slot)
    this.socket.write(frame)
  }

  private fail(err: Error): void {
    if (this.failure === null) this.failure = err
    this.running = false
    const d = this.drained
    this.drained = null
    d?.()
  }

  private onData(d: Buffer): void {
    this.chunks.push(d)
    this.buffered += d.length
    if (this.buffered < 4) return
    let all = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks)
    let pos = 0
    while (all.length - pos >= 4) {
      const size = all.readInt32BE(pos)
      if (all.length - pos < 4 + size) break
      this.onResponse(all.subarray(pos + 4, pos + 4 + size))
      pos += 4 + size
    }
    all = all.subarray(pos)
    this.chunks = all.length > 0 ? [all] : []
    this.buffered = all.length
  }

  private onResponse(frame: Buffer): void {
    const slot = this.outstanding.shift()
    if (slot === undefined) return this.fail(new Error('a Produce response nobody asked for'))
    const r = new Reader(frame)
    const header = readResponseHeader(r, PRODUCE_API_KEY, this.version)
    const expected = this.frames[slot]!.readInt32BE(CORRELATION_ID_OFFSET)
    if (header.correlationId !== expected) return this.fail(new Error(`Produce response for correlation id ${header.correlationId}, expected ${expected}`))
    const res = Produce.decodeProduceResponse(r, this.version)
    let acked = 0
    for (const topic of res.responses) {
      for (const p of topic.partitionResponses) {
        if (p.errorCode !== 0) {
          return this.fail(new Error(`partition ${topic.name}-${p.index} answered ${errorName(p.errorCode)} (${p.errorCode})${p.errorMessage ? `: ${p.errorMessage}` : ''}`))
        }
        acked++
      }
    }
    if (acked !== this.partitions) return this.fail(new Error(`a Produce response acknowledged ${acked} of ${this.partitions} partitions`))
    this.onAcked(acked)
    if (this.running) this.send(slot)
    else if (this.outstanding.length === 0) {
      const d = this.drained
      this.drained = null
      d?.()
    }
  }
}

export class ProduceLoad {
  /** Records acknowledged since open (every window and what ran between them). */
  ackedRecords = 0

  private constructor(private readonly connections: LoadConnection[]) {}

  static async open(opts: ProduceLoadOptions): Promise<ProduceLoad> {
    const version = opts.version ?? 9
    const request = Produce.createProduceRequest({
      acks: 1,
      timeoutMs: 30000,
      topicData: [
        Produce.createTopicProduceData({
          name: opts.topic,
          partitionData: Array.from({ length: opts.partitions }, (_, index) => Produce.createPartitionProduceData({ index, records: opts.batch })),
        }),
      ],
    })
    const template = encodeRequestFrame({ requestApiKey: PRODUCE_API_KEY, requestApiVersion: version, correlationId: 0, clientId: 'skein-bench-load' }, (w) => Produce.encodeProduceRequest(w, request, version))
    const sockets = await Promise.all(Array.from({ length: opts.connections }, () => openSocket(opts.port)))
    const load = new ProduceLoad([])
    const count = (partitions: number): void => {
      load.ackedRecords += partitions * opts.recordsPerBatch
    }
    for (const s of sockets) load.connections.push(new LoadConnection(s, template, opts.inFlight, version, count, opts.partitions))
    return load
  }

  /**
   * Runs the load for rampMs (not counted: connections reach their steady state), then measures windowMs:
   * records acknowledged in the window, and sample(), called at the window's start and end (the broker's
   * CPU from /proc). Then stops sending and waits for the requests in flight. Throws the first failure.
   */
  async run<T>(rampMs: number, windowMs: number, sample: () => T): Promise<{ window: LoadWindow; before: T; after: T }> {
    for (const c of this.connections) c.start()
    await sleep(rampMs)
    this.check()
    const records0 = this.ackedRecords
    const cpu0 = process.cpuUsage()
    const before = sample()
    const t0 = performance.now()
    await sleep(windowMs)
    const after = sample()
    const seconds = (performance.now() - t0) / 1000
    const cpu = process.cpuUsage(cpu0)
    const records = this.ackedRecords - records0
    await Promise.all(this.connections.map((c) => c.stop()))
    this.check()
    return { window: { records, seconds, loaderCpuMicros: cpu.user + cpu.system }, before, after }
  }

  close(): void {
    for (const c of this.connections) c.close()
  }

  private check(): void {
    for (const c of this.connections) if (c.failure !== null) throw c.failure
  }
}

function openSocket(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port })
    s.once('connect', () => {
      s.setNoDelay(true)
      s.removeListener('error', reject)
      resolve(s)
    })
    s.once('error', reject)
  })
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms))
}
