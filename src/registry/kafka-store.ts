// The registry's state kept in a Kafka topic, as Confluent's KafkaStore does: a compacted, single-partition
// topic (`_schemas` by default) that the registry replays from its start when it starts and then follows.
// A write is produced with acks=all and acknowledged only once this instance's reader has applied it
// (read-your-writes), so a caller never sees its own write missing. Recovery after a crash is the replay:
// the topic is the only state; nothing is kept on local disk.
// Uses Skein's own client (src/client) and works against any Kafka-compatible cluster.
import { Admin, Consumer, ErrorCode, KafkaError, LATEST_TIMESTAMP, Producer, listOffsets, tpKey } from '../client/index.js'
import type { ClientOptions } from '../client/index.js'
import { Errors } from './errors.js'
import { Keys, type RegistryRecord, SCHEMAS_TOPIC, Values } from './schemas-topic-records.js'
import type { RegistryStore } from './service.js'
import { RegistryState } from './state.js'

export interface KafkaStoreOptions extends ClientOptions {
  /** kafkastore.topic */
  topic?: string
  /** kafkastore.topic.replication.factor (-1: the broker's default; above the live brokers: their number). */
  replicationFactor?: number
  /** kafkastore.timeout.ms: how long a write may take to be produced and read back. */
  timeoutMs?: number
  /** kafkastore.init.timeout.ms: how long the first replay may take. */
  initTimeoutMs?: number
}

interface Waiter {
  offset: number
  resolve: () => void
  reject: (e: Error) => void
  timer: NodeJS.Timeout
}

export class KafkaRegistryStore implements RegistryStore {
  readonly state = new RegistryState()
  readonly topic: string
  private readonly producer: Producer
  private readonly consumer: Consumer
  private readonly admin: Admin
  private readonly timeoutMs: number
  private readonly initTimeoutMs: number
  private readonly replicationFactor: number
  /** The next offset the reader will apply: every record below it is in `state`. */
  private position = 0
  private waiters: Waiter[] = []
  private running = false
  private loop?: Promise<void>
  lastError?: Error

  constructor(opts: KafkaStoreOptions) {
    this.topic = opts.topic ?? SCHEMAS_TOPIC
    this.timeoutMs = opts.timeoutMs ?? 500
    this.initTimeoutMs = opts.initTimeoutMs ?? 60_000
    this.replicationFactor = opts.replicationFactor ?? -1
    const client: ClientOptions = { ...opts, clientId: opts.clientId ?? 'skein-schema-registry' }
    this.producer = new Producer({ ...client, acks: -1, lingerMs: 0, allowAutoTopicCreation: false })
    this.consumer = new Consumer({ ...client, autoOffsetReset: 'earliest', fetchMaxWaitMs: 100 })
    this.admin = new Admin(client)
  }

  /** Creates the topic if needed, replays it to its end, then follows it. */
  async start(): Promise<void> {
    await this.ensureTopic()
    this.consumer.assign([{ topic: this.topic, partition: 0 }])
    this.consumer.seek(this.topic, 0, 'earliest')
    this.running = true
    this.loop = this.follow()
    const end = await this.endOffset()
    await this.waitFor(end, this.initTimeoutMs)
  }

  private async ensureTopic(): Promise<void> {
    const existing = await this.admin.listTopics({ includeInternal: true })
    if (existing.includes(this.topic)) return
    // Confluent's rule: the smaller of kafkastore.topic.replication.factor and the live brokers, so a
    // default of 3 still starts against a single broker.
    let replicationFactor = this.replicationFactor
    if (replicationFactor > 0) replicationFactor = Math.min(replicationFactor, Math.max(1, (await this.admin.describeCluster()).brokers.length))
    try {
      await this.admin.createTopics([{ name: this.topic, numPartitions: 1, replicationFactor, configs: { 'cleanup.policy': 'compact' } }])
    } catch (e) {
      if (!(e instanceof KafkaError && e.code === ErrorCode.TOPIC_ALREADY_EXISTS)) throw e
    }
  }

  private async endOffset(): Promise<number> {
    const answers = await listOffsets(this.admin.cluster, [{ topic: this.topic, partition: 0, timestamp: LATEST_TIMESTAMP }])
    return answers.get(tpKey(this.topic, 0))?.offset ?? 0
  }

  private async follow(): Promise<void> {
    while (this.running) {
      try {
        const records = await this.consumer.poll(100)
        for (const r of records) this.state.apply(r.key, r.value)
        const position = this.consumer.position(this.topic, 0)
        if (position !== null && position > this.position) this.position = position
        this.lastError = undefined
        this.release()
      } catch (e) {
        // A broker going away is retried by polling again; the registry keeps serving reads meanwhile.
        this.lastError = e as Error
        if (this.running) await new Promise((r) => setTimeout(r, 200))
      }
    }
  }

  private release(): void {
    const ready = this.waiters.filter((w) => w.offset <= this.position)
    if (ready.length === 0) return
    this.waiters = this.waiters.filter((w) => w.offset > this.position)
    for (const w of ready) {
      clearTimeout(w.timer)
      w.resolve()
    }
  }

  /** Resolves once every record below `offset` has been applied. */
  private waitFor(offset: number, timeoutMs: number): Promise<void> {
    if (offset <= this.position) return Promise.resolve()
    return new Promise((resolve, reject) => {
      const w: Waiter = {
        offset,
        resolve,
        reject,
        timer: setTimeout(() => {
          this.waiters = this.waiters.filter((x) => x !== w)
          reject(Errors.timeout(`Write to the Kafka store timed out while waiting for offset ${offset}`))
        }, timeoutMs),
      }
      this.waiters.push(w)
    })
  }

  async write(records: RegistryRecord[]): Promise<void> {
    if (records.length === 0) return
    let last = -1
    try {
      const metas = await this.producer.sendBatch(
        records.map((r) => ({ topic: this.topic, partition: 0, key: Buffer.from(r.key, 'utf8'), value: r.value === null ? null : Buffer.from(r.value, 'utf8') })),
      )
      last = Math.max(...metas.map((m) => m.offset))
    } catch (e) {
      throw Errors.store(`Error while writing to the Kafka store: ${(e as Error).message}`)
    }
    await this.waitFor(last + 1, Math.max(this.timeoutMs, 5_000))
  }

  /** Waits until this instance has read everything written so far (by any instance). */
  async sync(timeoutMs = this.timeoutMs): Promise<void> {
    await this.waitFor(await this.endOffset(), Math.max(timeoutMs, 5_000))
  }

  /** Writes a NOOP record and waits for it: what a newly elected primary does before assigning ids. */
  async noop(): Promise<void> {
    await this.write([{ key: Keys.noop(), value: Values.noop() }])
  }

  async stop(): Promise<void> {
    this.running = false
    await this.loop?.catch(() => undefined)
    for (const w of this.waiters) {
      clearTimeout(w.timer)
      w.reject(Errors.store('Kafka store stopped'))
    }
    this.waiters = []
    await Promise.allSettled([this.producer.close(), this.consumer.close(), this.admin.close()])
  }
}
