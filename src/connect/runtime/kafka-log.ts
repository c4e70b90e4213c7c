// Kafka's KafkaBasedLog: a compacted topic read from its beginning and then followed, every record handed
// to a callback in order; readToEnd() resolves once everything written before the call has been handed
// over; send() writes a record. The config, offset and status stores are built on it. The topic is
// created when missing (compacted; partitions and replication factor as configured).
import { Admin, Consumer, type ConsumedRecord, ErrorCode, KafkaError, LATEST_TIMESTAMP, listOffsets, Producer, type ClientOptions, type ProducerOptions, tpKey } from '../../client/index.js'

export interface KafkaLogOptions {
  client: ClientOptions
  topic: string
  /** Partitions when the topic is created (-1: the broker default). */
  partitions: number
  replicationFactor: number
  onRecord: (record: ConsumedRecord) => void
  producer?: Partial<ProducerOptions>
  /** Read only committed transactional records (the offsets topic with exactly-once sources). */
  readCommitted?: boolean
  /** Called with errors of the background reader (it keeps trying). */
  onError?: (err: unknown) => void
}

export async function ensureTopic(client: ClientOptions, name: string, partitions: number, replicationFactor: number, configs: Record<string, string>): Promise<number> {
  const admin = new Admin(client)
  try {
    const existing = await admin.describeTopics([name]).catch(() => [])
    const found = existing.find((t) => t.name === name)
    if (found !== undefined && found.partitions.length > 0) return found.partitions.length
    try {
      await admin.createTopics([{ name, numPartitions: partitions, replicationFactor, configs }])
    } catch (err) {
      if (!(err instanceof KafkaError && err.code === ErrorCode.TOPIC_ALREADY_EXISTS)) {
        // A replication factor above the broker count: retry with the broker default, as a single-node
        // development cluster needs (Kafka refuses; a clear log line is more useful than a dead worker).
        if (err instanceof KafkaError && err.code === ErrorCode.INVALID_REPLICATION_FACTOR && replicationFactor !== -1) {
          await admin.createTopics([{ name, numPartitions: partitions, replicationFactor: -1, configs }])
        } else throw err
      }
    }
    for (let i = 0; i < 100; i++) {
      const d = (await admin.describeTopics([name]).catch(() => [])).find((t) => t.name === name)
      if (d !== undefined && d.partitions.length > 0 && d.partitions.every((p) => p.leader >= 0)) return d.partitions.length
      await new Promise((r) => setTimeout(r, 100))
    }
    throw new Error(`topic ${name} did not become available`)
  } finally {
    await admin.close()
  }
}

export class KafkaBasedLog {
  private consumer: Consumer | null = null
  private producer: Producer | null = null
  private partitions = 0
  private running = false
  private loop: Promise<void> | null = null
  private readonly waiters: { targets: Map<string, number>; resolve: () => void; reject: (e: unknown) => void }[] = []

  constructor(private readonly opts: KafkaLogOptions) {}

  get topic(): string {
    return this.opts.topic
  }

  get partitionCount(): number {
    return this.partitions
  }

  async start(): Promise<void> {
    this.partitions = await ensureTopic(this.opts.client, this.opts.topic, this.opts.partitions, this.opts.replicationFactor, { 'cleanup.policy': 'compact' })
    this.producer = new Producer({ ...this.opts.client, acks: -1, lingerMs: 0, ...(this.opts.producer ?? {}) })
    this.consumer = new Consumer({ ...this.opts.client, isolationLevel: this.opts.readCommitted ? 'read_committed' : 'read_uncommitted', autoOffsetReset: 'earliest', fetchMaxWaitMs: 200 })
    const tps = Array.from({ length: this.partitions }, (_v, partition) => ({ topic: this.opts.topic, partition }))
    this.consumer.assign(tps)
    for (const tp of tps) this.consumer.seek(tp.topic, tp.partition, 'earliest')
    this.running = true
    this.loop = this.run()
    await this.readToEnd()
  }

  private async run(): Promise<void> {
    while (this.running) {
      try {
        const records = await this.consumer!.poll(200)
        for (const r of records) this.opts.onRecord(r)
        this.checkWaiters()
      } catch (err) {
        if (!this.running) break
        this.opts.onError?.(err)
        await new Promise((r) => setTimeout(r, 500))
      }
    }
  }

  private checkWaiters(): void {
    for (let i = this.waiters.length - 1; i >= 0; i--) {
      const w = this.waiters[i]!
      let done = true
      for (const [k, end] of w.targets) {
        const [topic, p] = k.split('\u0000')
        if ((this.consumer!.position(topic!, Number(p)) ?? -1) < end) {
          done = false
          break
        }
      }
      if (done) {
        this.waiters.splice(i, 1)
        w.resolve()
      }
    }
  }

  /** Resolves once every record written before this call has been passed to onRecord. */
  async readToEnd(): Promise<void> {
    if (this.consumer === null) throw new Error('the log is not started')
    const queries = Array.from({ length: this.partitions }, (_v, partition) => ({ topic: this.opts.topic, partition, timestamp: LATEST_TIMESTAMP }))
    const ends = await listOffsets(this.consumer.cluster, queries, this.opts.readCommitted ? 1 : 0)
    const targets = new Map<string, number>()
    for (const q of queries) {
      const end = ends.get(tpKey(q.topic, q.partition))?.offset ?? 0
      if (end > 0) targets.set(tpKey(q.topic, q.partition), end)
    }
    if (targets.size === 0) return
    await new Promise<void>((resolve, reject) => {
      this.waiters.push({ targets, resolve, reject })
      this.checkWaiters()
    })
  }

  /** Writes one record and resolves when the broker acknowledged it. */
  async send(key: Buffer | string | null, value: Buffer | string | null, partition?: number): Promise<void> {
    if (this.producer === null) throw new Error('the log is not started')
    await this.producer.send({ topic: this.opts.topic, key, value, partition })
  }

  async stop(): Promise<void> {
    this.running = false
    for (const w of this.waiters.splice(0)) w.reject(new Error('the log is stopped'))
    await this.loop?.catch(() => {})
    await this.producer?.close().catch(() => {})
    await this.consumer?.close().catch(() => {})
    this.producer = null
    this.consumer = null
  }
}
