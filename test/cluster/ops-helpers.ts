// Helpers of the cluster-operations tests (test/cluster/operations.test.ts in npm test and the longer
// test/cluster/*.ops.ts of `npm run test:cluster-ops`): metadata views every broker agrees on, a load of
// acks=all writes by kafkajs (a client nobody here wrote) that records when each write was acknowledged
// (the longest gap is the unavailability a client sees), reading a partition back, and comparing replicas.
import { spawn, type ChildProcess } from 'node:child_process'
import { appendFileSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { Kafka, logLevel, type Producer } from 'kafkajs'
export { readAll } from '../harness/index.js'
import { partitionsOf, SYSTEM_PYTHON, until, type ClusterBroker, type PartitionView, type TestCluster } from '../harness/index.js'

export { partitionsOf, until, type PartitionView } from '../harness/index.js'

/**
 * The partitions as every running broker answers them, once all agree and `check` holds. A timeout names
 * what each broker answered last (which broker disagreed, or what the check did not like).
 */
export async function agreed(cluster: TestCluster, topic: string, check: (ps: PartitionView[]) => boolean, what: string, timeoutMs?: number): Promise<PartitionView[]> {
  let lastViews = '(none answered)'
  try {
    return await until(
      what,
      async () => {
        const alive = cluster.brokers.filter((b) => b.alive())
        const views = await Promise.all(alive.map((b) => partitionsOf(b, topic)))
        lastViews = alive.map((b, i) => `broker ${b.id}: ${JSON.stringify(views[i])}`).join('\n')
        const first = JSON.stringify(views[0])
        if (!views.every((v) => JSON.stringify(v) === first)) return undefined
        return check(views[0]!) ? views[0] : undefined
      },
      timeoutMs,
    )
  } catch (err) {
    throw new Error(`${(err as Error).message}; the last answers:\n${lastViews}`)
  }
}


/** The concatenated .log segment files of a replica (empty when it has none). */
export function logBytes(b: ClusterBroker, topic: string, partition: number): Buffer {
  const dir = join(b.dataDir, `${topic}-${partition}`)
  let names: string[]
  try {
    names = readdirSync(dir).sort()
  } catch {
    return Buffer.alloc(0)
  }
  return Buffer.concat(names.filter((n) => n.endsWith('.log')).map((n) => readFileSync(join(dir, n))))
}

/**
 * What each replica of a partition holds at its end, read from its .log files: the last `count` batches as
 * "offsets first..last epoch E producer P/epoch seq first..last" (a failed wait for progress prints it, to
 * tell a replica missing acknowledged batches from one holding more than was acknowledged).
 */
export function replicaTails(cluster: TestCluster, topic: string, partition: number, count = 8): string {
  const out: string[] = []
  for (const b of cluster.brokers) {
    const bytes = logBytes(b, topic, partition)
    const batches: string[] = []
    // RecordBatch v2 header: baseOffset @0, batchLength @8, partitionLeaderEpoch @12, lastOffsetDelta @23,
    // producerId @43, producerEpoch @51, baseSequence @53.
    for (let pos = 0; pos + 61 <= bytes.length; pos += 12 + bytes.readInt32BE(pos + 8)) {
      const base = Number(bytes.readBigInt64BE(pos))
      const delta = bytes.readInt32BE(pos + 23)
      const seq = bytes.readInt32BE(pos + 53)
      batches.push(`${base}..${base + delta} epoch ${bytes.readInt32BE(pos + 12)} producer ${bytes.readBigInt64BE(pos + 43)}/${bytes.readInt16BE(pos + 51)} seq ${seq}..${seq + delta}`)
    }
    out.push(`${topic}-${partition} on broker ${b.id}${b.alive() ? '' : ' (down)'}: ${batches.length} batches${batches.length > count ? ', the last:' : ''}\n  ${batches.slice(-count).join('\n  ')}`)
  }
  return out.join('\n')
}

/** The brokers' log lines from `since` on (ms, broker time), each prefixed by its offset from `since` and the broker. */
export function brokerLinesSince(cluster: TestCluster, since: number, maxPerBroker = 200): string {
  const out: string[] = []
  for (const b of cluster.brokers) {
    const lines = b.output().split('\n').filter((l) => Date.parse(/"time":"([^"]+)"/.exec(l)?.[1] ?? '') >= since)
    out.push(`--- broker ${b.id}`, ...lines.slice(-maxPerBroker).map((l) => `${Date.parse(/"time":"([^"]+)"/.exec(l)![1]!) - since} ${l.slice(0, 400)}`))
  }
  return out.join('\n')
}

/** Waits until every listed replica's log equals the first one's. */
export async function expectIdenticalLogs(cluster: TestCluster, topic: string, partition: number, replicas: readonly number[]): Promise<void> {
  await until(`identical replicas ${replicas.join(',')} of ${topic}-${partition}`, async () => {
    const reference = logBytes(cluster.broker(replicas[0]!), topic, partition)
    if (reference.length === 0) return undefined
    return replicas.every((id) => logBytes(cluster.broker(id), topic, partition).equals(reference)) ? true : undefined
  })
}

/**
 * A kafkajs producer writing `topic` with acks=all (idempotent, one request in flight), one record per
 * `intervalMs` per partition, each awaited: every acknowledgement's time is kept, so the longest gap
 * between two acknowledgements is how long writers saw the partition unavailable. Errors that reach the
 * caller (after kafkajs's retries) are kept with whether Kafka calls them retriable.
 */
export class AckedLoad {
  readonly acked = new Map<number, { value: string; at: number }[]>()
  readonly errors: { partition: number; message: string; retriable: boolean }[] = []
  /** kafkajs's own log lines, when SKEIN_OPS_DEBUG is set. */
  readonly log: { at: number; text: string }[] = []
  #running = true
  #loops: Promise<void>[] = []
  #producer: Producer

  constructor(
    bootstrap: string[],
    readonly topic: string,
    readonly partitions: number[],
    private readonly intervalMs = 10,
  ) {
    const debug = process.env.SKEIN_OPS_DEBUG !== undefined
    const kafka = new Kafka({
      clientId: `ops-load-${topic}`,
      brokers: bootstrap,
      logLevel: debug ? logLevel.DEBUG : logLevel.NOTHING,
      logCreator: () => (entry) => {
        if (debug) this.log.push({ at: Date.now(), text: `${entry.log.message} ${JSON.stringify({ ...entry.log, message: undefined, timestamp: undefined, logger: undefined }).slice(0, 300)}` })
      },
      retry: { retries: 40, initialRetryTime: 50, maxRetryTime: 300 },
    })
    this.#producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
  }

  async start(): Promise<void> {
    await this.#producer.connect()
    for (const p of this.partitions) {
      this.acked.set(p, [])
      this.#loops.push(this.#loop(p))
    }
  }

  async #loop(partition: number): Promise<void> {
    for (let i = 0; this.#running; i++) {
      const value = `${this.topic}-${partition}-${i}`
      try {
        await this.#producer.send({ topic: this.topic, acks: -1, timeout: 30_000, messages: [{ partition, value }] })
        this.acked.get(partition)!.push({ value, at: Date.now() })
      } catch (err) {
        const e = err as Error & { retriable?: boolean }
        this.errors.push({ partition, message: e.message, retriable: e.retriable === true })
      }
      await new Promise((r) => setTimeout(r, this.intervalMs))
    }
  }

  /** How many acknowledgements so far. */
  count(): number {
    let n = 0
    for (const list of this.acked.values()) n += list.length
    return n
  }

  /** Waits until `n` more writes were acknowledged. */
  async progress(n: number, timeoutMs = 30_000): Promise<void> {
    const target = this.count() + n
    await until(`${n} more acknowledged writes to ${this.topic}`, async () => (this.count() >= target ? true : undefined), timeoutMs)
  }

  /** The longest time between two acknowledgements of one partition within [from, to] (ms). */
  longestGap(from: number, to: number): { partition: number; gapMs: number } {
    return longestGapOf(this.acked, from, to)
  }

  async stop(): Promise<void> {
    this.#running = false
    await Promise.all(this.#loops)
    await this.#producer.disconnect()
  }
}

const ACKED_LOAD_PY = join(dirname(fileURLToPath(import.meta.url)), 'python', 'acked_load.py')

/**
 * The same load through librdkafka (python3-confluent-kafka, test/cluster/python/acked_load.py): records are
 * produced without waiting (one per partition every intervalMs, idempotent, acks=all) and each delivery
 * report is kept with its time. Failed deliveries are kept in `errors` with librdkafka's retriable flag.
 * A fatal error of the idempotent producer ends the load process: it is kept in `errors` (not retriable)
 * and waits for progress fail at once with it, rather than running into their timeout.
 */
export class LibrdkafkaLoad {
  readonly acked = new Map<number, { value: string; at: number }[]>()
  readonly errors: { partition: number; message: string; retriable: boolean }[] = []
  #child: ChildProcess | undefined
  #exited: Promise<void> | undefined
  /** Why the load process ended before stop(), once it has. */
  #ended: string | undefined
  #stopping = false
  #stderr = ''

  constructor(
    private readonly bootstrap: string,
    readonly topic: string,
    readonly partitions: number[],
    private readonly intervalMs = 10,
  ) {}

  async start(): Promise<void> {
    for (const p of this.partitions) this.acked.set(p, [])
    const child = spawn(SYSTEM_PYTHON, [ACKED_LOAD_PY], { stdio: ['pipe', 'pipe', 'pipe'] })
    this.#child = child
    // SKEIN_RDKAFKA_DEBUG=broker,msg,... turns on librdkafka's debug contexts; SKEIN_RDKAFKA_LOG=FILE keeps its whole stderr there.
    child.stdin.write(JSON.stringify({ bootstrap: this.bootstrap, topic: this.topic, partitions: this.partitions, interval_ms: this.intervalMs, debug: process.env.SKEIN_RDKAFKA_DEBUG }) + '\n')
    const logFile = process.env.SKEIN_RDKAFKA_LOG
    child.stderr.on('data', (d: Buffer) => {
      if (logFile !== undefined) appendFileSync(logFile, d)
      this.#stderr = (this.#stderr + d.toString()).slice(-4000)
    })
    let fatal: string | undefined
    createInterface({ input: child.stdout }).on('line', (line) => {
      const r = JSON.parse(line) as { p: number; v: string; t: number; err: string | null; retriable: boolean } | { fatal: string }
      if ('fatal' in r) {
        fatal = r.fatal
        this.errors.push({ partition: -1, message: `librdkafka fatal error: ${r.fatal}`, retriable: false })
      } else if (r.err === null) this.acked.get(r.p)?.push({ value: r.v, at: r.t })
      else this.errors.push({ partition: r.p, message: r.err, retriable: r.retriable })
    })
    this.#exited = new Promise((resolve) =>
      child.once('close', (code, signal) => {
        if (!this.#stopping) this.#ended = fatal !== undefined ? `librdkafka fatal error: ${fatal}` : `the load process exited (${signal ?? `status ${code}`}): ${this.#stderr}`
        resolve()
      }),
    )
  }

  count(): number {
    let n = 0
    for (const list of this.acked.values()) n += list.length
    return n
  }

  async progress(n: number, timeoutMs = 30_000): Promise<void> {
    const target = this.count() + n
    const deadline = Date.now() + timeoutMs
    while (this.count() < target) {
      if (this.#ended !== undefined) throw new Error(`waiting for ${n} more acknowledged writes to ${this.topic}: ${this.#ended}`)
      if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${n} more acknowledged writes to ${this.topic}${this.#stderr === '' ? '' : ` (librdkafka: ${this.#stderr})`}`)
      await new Promise((r) => setTimeout(r, 50))
    }
  }

  longestGap(from: number, to: number): { partition: number; gapMs: number } {
    return longestGapOf(this.acked, from, to)
  }

  async stop(): Promise<void> {
    this.#stopping = true
    this.#child?.kill('SIGTERM')
    await this.#exited
  }
}

/** The longest time between two acknowledgements of one partition within [from, to] (ms). */
export function longestGapOf(acked: ReadonlyMap<number, readonly { at: number }[]>, from: number, to: number): { partition: number; gapMs: number } {
  let worst = { partition: -1, gapMs: 0 }
  for (const [partition, list] of acked) {
    let prev = from
    for (const a of list) {
      if (a.at < from) continue
      if (a.at > to) break
      if (a.at - prev > worst.gapMs) worst = { partition, gapMs: a.at - prev }
      prev = a.at
    }
    const tail = Math.min(to, Date.now()) - prev
    if (tail > worst.gapMs) worst = { partition, gapMs: tail }
  }
  return worst
}
