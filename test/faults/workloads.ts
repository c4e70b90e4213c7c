// The fault suite's workloads: clients nobody here wrote, each recording what it did into one history
// (checker.ts). librdkafka through python3-confluent-kafka (workload.py, a child process printing one
// JSON line per delivery report or record read) and kafkajs in this process (an idempotent producer and
// a transactional one that commits two transactions in three and aborts the third). Child processes are
// stopped by their PIDs, and SIGKILLed by a watchdog shell if this process ends first.
import { spawn, type ChildProcess } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Kafka, logLevel, type Producer } from 'kafkajs'
import { SYSTEM_PYTHON } from '../harness/index.js'
import type { Op, SendOp } from './checker.js'

export const WORKLOAD_PY = join(dirname(fileURLToPath(import.meta.url)), 'workload.py')

/** A detached shell SIGKILLs pid once this process is gone (or exits when pid does). */
export function killWhenOrphaned(pid: number): void {
  const script = `while kill -0 ${process.pid} 2>/dev/null && kill -0 ${pid} 2>/dev/null; do sleep 0.5; done; kill -CONT ${pid} 2>/dev/null; kill -9 ${pid} 2>/dev/null; exit 0`
  const w = spawn('/bin/sh', ['-c', script], { detached: true, stdio: 'ignore' })
  w.on('error', () => {})
  w.unref()
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

/** One workload.py process. */
class PythonClient {
  readonly exited: Promise<void>
  private stderr = ''
  private partial = ''
  /** Lines other than sends and polls (done, drain-incomplete, consumer-error). */
  readonly notes: Record<string, unknown>[] = []

  constructor(
    readonly child: ChildProcess,
    history: Op[],
  ) {
    child.stdout!.on('data', (d: Buffer) => {
      const text = this.partial + d.toString()
      const lines = text.split('\n')
      this.partial = lines.pop()!
      for (const line of lines) {
        if (line.trim() === '') continue
        const event = JSON.parse(line) as Record<string, unknown>
        if (event.type === 'send' || event.type === 'poll') history.push(event as unknown as Op)
        else this.notes.push(event)
      }
    })
    child.stderr!.on('data', (d: Buffer) => {
      this.stderr = (this.stderr + d.toString()).slice(-8000)
    })
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()))
    if (child.pid !== undefined) killWhenOrphaned(child.pid)
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null
  }

  /** SIGTERM by PID (a producer flushes first), SIGKILL after timeoutMs. */
  async stop(timeoutMs = 45_000): Promise<void> {
    if (!this.running) return
    this.child.kill('SIGTERM')
    const timer = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs)
    await this.exited
    clearTimeout(timer)
  }

  stderrTail(): string {
    return this.stderr
  }
}

function python(args: string[], history: Op[]): PythonClient {
  const child = spawn(SYSTEM_PYTHON, [WORKLOAD_PY, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
  return new PythonClient(child, history)
}

export interface WorkloadOptions {
  topic: string
  partitions: number
  /** The brokers' bootstrap list (all of them: clients find the live ones). */
  bootstrap: () => string
  /** librdkafka producer rate (records/s); 0 for none. Default 100. */
  pythonRate?: number
  /** kafkajs idempotent producer: one acks=all send every this many ms; 0 for none. Default 25. */
  kafkajsIntervalMs?: number
  /** kafkajs transactional producer. Default false. */
  transactions?: boolean
  /** librdkafka read_committed consumer reading all along. Default true. */
  consumer?: boolean
  /** message.timeout.ms of the librdkafka producer. */
  messageTimeoutMs?: number
}

/** Producers and a consumer running against a topic, all writing into `history`. */
export class Workload {
  readonly history: Op[] = []
  private readonly python: PythonClient[] = []
  private readonly loops: Promise<void>[] = []
  private running = true
  readonly kafkajsErrors: string[] = []

  constructor(readonly options: WorkloadOptions) {}

  start(): void {
    const o = this.options
    const rate = o.pythonRate ?? 100
    if (rate > 0) {
      this.python.push(
        python(['produce', '--bootstrap', o.bootstrap(), '--topic', o.topic, '--prefix', 'rdk', '--rate', String(rate), '--idempotent', '--message-timeout-ms', String(o.messageTimeoutMs ?? 60_000)], this.history),
      )
    }
    if (o.consumer ?? true) this.python.push(python(['consume', '--bootstrap', o.bootstrap(), '--topic', o.topic, '--partitions', String(o.partitions), '--client', 'rdk-reader'], this.history))
    const interval = o.kafkajsIntervalMs ?? 25
    if (interval > 0) this.loops.push(this.idempotentLoop(interval))
    if (o.transactions === true) this.loops.push(this.transactionalLoop())
  }

  private kafka(clientId: string): Kafka {
    return new Kafka({
      clientId,
      brokers: this.options.bootstrap().split(','),
      logLevel: logLevel.NOTHING,
      requestTimeout: 10_000,
      connectionTimeout: 3000,
      retry: { retries: 30, initialRetryTime: 200, maxRetryTime: 2000 },
    })
  }

  /** One acks=all record at a time to partitions in turn; after a failure, a fresh producer (new producer id). */
  private async idempotentLoop(intervalMs: number): Promise<void> {
    let producer: Producer | undefined
    let seq = 0
    let generation = 0
    while (this.running) {
      try {
        if (producer === undefined) {
          producer = this.kafka(`faults-js-${generation++}`).producer({ idempotent: true, maxInFlightRequests: 1 })
          await producer.connect()
        }
      } catch (err) {
        this.kafkajsErrors.push(`connect: ${(err as Error).message}`)
        producer = undefined
        await sleep(500)
        continue
      }
      const value = `js-${seq}`
      const partition = seq % this.options.partitions
      const op: SendOp = { type: 'send', client: 'js', seq: seq++, value, outcome: 'fail', acks: -1, time: 0 }
      try {
        const [md] = await producer.send({ topic: this.options.topic, acks: -1, timeout: 10_000, messages: [{ value, partition }] })
        Object.assign(op, { outcome: 'ok', partition: md!.partition, offset: Number(md!.baseOffset), time: Date.now() })
      } catch (err) {
        Object.assign(op, { error: (err as Error).message, time: Date.now() })
        this.kafkajsErrors.push(`send ${value}: ${(err as Error).message}`)
        await producer.disconnect().catch(() => {})
        producer = undefined
      }
      this.history.push(op)
      await sleep(intervalMs)
    }
    await producer?.disconnect().catch(() => {})
  }

  /** Transactions of two records on two partitions: committed, committed, aborted, ... */
  private async transactionalLoop(): Promise<void> {
    let producer: Producer | undefined
    let seq = 0
    let n = 0
    while (this.running) {
      try {
        if (producer === undefined) {
          producer = this.kafka('faults-txn').producer({ transactionalId: 'faults-txn', idempotent: true, maxInFlightRequests: 1, transactionTimeout: 10_000 })
          await producer.connect()
        }
      } catch (err) {
        this.kafkajsErrors.push(`txn connect: ${(err as Error).message}`)
        producer = undefined
        await sleep(500)
        continue
      }
      const commit = n++ % 3 !== 2
      const ops: SendOp[] = [0, 1].map((i) => ({ type: 'send', client: 'txn', seq: seq++, value: `txn-${seq - 1}`, outcome: 'fail', acks: -1, time: 0, transaction: 'unknown', partition: (n + i) % this.options.partitions }))
      try {
        const txn = await producer.transaction()
        try {
          for (const op of ops) {
            const [md] = await txn.send({ topic: this.options.topic, acks: -1, timeout: 10_000, messages: [{ value: op.value, partition: op.partition! }] })
            Object.assign(op, { outcome: 'ok', offset: Number(md!.baseOffset), time: Date.now() })
          }
        } catch (err) {
          await txn.abort()
          for (const op of ops) Object.assign(op, { transaction: 'aborted', definite: true, error: (err as Error).message, time: Date.now() })
          throw err
        }
        if (commit) await txn.commit()
        else await txn.abort()
        for (const op of ops) Object.assign(op, { transaction: commit ? 'committed' : 'aborted', definite: commit ? undefined : true, time: Date.now() })
      } catch (err) {
        this.kafkajsErrors.push(`txn: ${(err as Error).message}`)
        await producer.disconnect().catch(() => {})
        producer = undefined
        await sleep(200)
      }
      for (const op of ops) if (op.outcome === 'ok' || op.transaction !== 'unknown') this.history.push(op)
      await sleep(50)
    }
    await producer?.disconnect().catch(() => {})
  }

  /** Stops the producers (the librdkafka one flushes) and the consumer. */
  async stop(): Promise<void> {
    this.running = false
    await Promise.all([...this.loops, ...this.python.map((p) => p.stop())])
  }

  /**
   * Reads every partition from the beginning to its end (read_committed, librdkafka), as a fresh consumer
   * after healing; its polls join the history. Returns what it noted (e.g. drain-incomplete).
   */
  async drain(client = 'final-reader', timeoutS = 90): Promise<Record<string, unknown>[]> {
    const o = this.options
    const p = python(['consume', '--bootstrap', o.bootstrap(), '--topic', o.topic, '--partitions', String(o.partitions), '--client', client, '--drain', '--timeout', String(timeoutS)], this.history)
    const timer = setTimeout(() => p.child.kill('SIGKILL'), (timeoutS + 30) * 1000)
    await p.exited
    clearTimeout(timer)
    const incomplete = p.notes.filter((n) => n.type === 'drain-incomplete')
    if (incomplete.length > 0 || p.child.exitCode !== 0) throw new Error(`the final read did not reach the end: ${JSON.stringify(p.notes)}\n${p.stderrTail().slice(-3000)}`)
    return p.notes
  }

  /** For failure messages: what the librdkafka clients printed last. */
  diagnostics(): string {
    return this.python.map((p) => p.stderrTail().slice(-1500)).join('\n---\n') + `\nkafkajs errors: ${this.kafkajsErrors.slice(-10).join(' | ')}`
  }
}
