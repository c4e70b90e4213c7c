// The coordinator runtime (after Kafka's coordinator-common CoordinatorRuntime): one state machine per
// internal partition this broker coordinates (Kafka calls it a CoordinatorShard; in Skein a shard is
// a worker thread and nothing else), driven by operations that return {records, result}. The runtime
// appends an operation's records to the partition through the PartitionWriter and only then replays
// them into the state machine and completes the operation; a failed append completes it with an error
// instead. Operations on one partition run strictly one after the other (a queue per partition, each
// waiting for the previous one's append), so state is only touched from the main thread, in order,
// without locks. Loading a partition = replaying every record in it; while that runs, operations fail
// with COORDINATOR_LOAD_IN_PROGRESS.
//
// Timers (session timeouts, rebalance deadlines, offset expiry) are keyed per partition and fire as
// ordinary write operations, so they are serialised with requests. Time comes from an injected Clock.
import { ErrorCode, KafkaError } from '../../domain/errors.js'
import type { Clock, TimerHandle } from './clock.js'
import type { CoordinatorRecord, PartitionWriter, StoredRecord, TransactionalAppend } from './partition-writer.js'

/** What an operation produced. */
export interface CoordinatorResult<T> {
  records: CoordinatorRecord[]
  /** The answer; may be a promise that settles later (a JoinGroup waiting for its rebalance). */
  result: T | Promise<T>
  /**
   * Replay the records into the state machine once written (default true). False when the operation already
   * changed the in-memory state itself and the records only make it durable (classic group metadata,
   * as Kafka's replayRecords=false).
   */
  replay?: boolean
  /** Called after the append, with null on success or the error it failed with. */
  onAppended?: (error: KafkaError | null) => void
  /** Write the records as one transactional batch of this producer (TxnOffsetCommit). */
  transactional?: TransactionalAppend
}

/** An operation's answer when it writes nothing. */
export function noRecords<T>(result: T): CoordinatorResult<T> {
  return { records: [], result }
}

/** The state of one coordinated partition, rebuilt by replaying its records (Kafka: CoordinatorShard). */
export interface CoordinatorStateMachine {
  replay(record: StoredRecord): void
  /** The partition finished loading: schedule what the loaded state needs (timers). */
  onLoaded(): void
  /** The partition is no longer coordinated here: fail whatever waits. */
  onUnloaded(): void
}

/** Logging that a pino Logger satisfies; the coordinator does not depend on the logging module. */
export interface CoordinatorLogger {
  info(obj: object, msg?: string): void
  warn(obj: object, msg?: string): void
  error(obj: object, msg?: string): void
}

export type WriteOperation<S, T> = (state: S) => CoordinatorResult<T>

/** Keyed timers of one partition; scheduling a key again replaces the previous timer. */
export class CoordinatorTimer<S> {
  readonly #timers = new Map<string, TimerHandle>()

  constructor(
    private readonly clock: Clock,
    private readonly run: (name: string, op: WriteOperation<S, void>) => void,
  ) {}

  schedule(key: string, delayMs: number, op: WriteOperation<S, void>): void {
    this.cancel(key)
    const handle = this.clock.setTimeout(() => {
      if (this.#timers.get(key) !== handle) return
      this.#timers.delete(key)
      this.run(key, op)
    }, delayMs)
    this.#timers.set(key, handle)
  }

  cancel(key: string): void {
    const h = this.#timers.get(key)
    if (h !== undefined) {
      this.clock.clearTimeout(h)
      this.#timers.delete(key)
    }
  }

  isScheduled(key: string): boolean {
    return this.#timers.has(key)
  }

  cancelAll(): void {
    for (const h of this.#timers.values()) this.clock.clearTimeout(h)
    this.#timers.clear()
  }

  get size(): number {
    return this.#timers.size
  }
}

/** What a state machine gets from the runtime. */
export interface StateMachineContext<S> {
  partition: number
  /**
   * The epoch this broker coordinates the partition in (Kafka: the partition's leader epoch when this
   * broker was elected its leader); transaction markers carry it, so partitions fence older coordinators.
   */
  epoch: number
  clock: Clock
  timer: CoordinatorTimer<S>
  log: CoordinatorLogger
}

type PartitionStatus = 'loading' | 'active' | 'failed' | 'closed'

interface PartitionContext<S> {
  partition: number
  epoch: number
  status: PartitionStatus
  machine: S
  timer: CoordinatorTimer<S>
  /** Settles when the last queued operation has finished its append. */
  tail: Promise<void>
  /** Offset after the last record loaded or written. */
  nextOffset: number
}

export interface CoordinatorRuntimeOptions<S extends CoordinatorStateMachine> {
  writer: PartitionWriter
  clock: Clock
  log: CoordinatorLogger
  newStateMachine(ctx: StateMachineContext<S>): S
}

/** Kafka's mapping of append errors to what coordinator clients should do (retry elsewhere, or give up). */
export function appendErrorToCoordinatorError(err: unknown): KafkaError {
  const code = err instanceof KafkaError ? err.code : ErrorCode.UNKNOWN_SERVER_ERROR
  switch (code) {
    case ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
    case ErrorCode.NOT_ENOUGH_REPLICAS:
    case ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND:
    case ErrorCode.REQUEST_TIMED_OUT:
    case ErrorCode.KAFKA_STORAGE_ERROR:
      return new KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, (err as Error).message)
    case ErrorCode.NOT_LEADER_OR_FOLLOWER:
      return new KafkaError(ErrorCode.NOT_COORDINATOR, (err as Error).message)
    // A transactional append (TxnOffsetCommit) refused by the partition's producer state: the producer
    // must learn it was fenced; the sequence errors let the coordinator retry with a fresh sequence.
    case ErrorCode.INVALID_PRODUCER_EPOCH:
    case ErrorCode.PRODUCER_FENCED:
    case ErrorCode.UNKNOWN_PRODUCER_ID:
    case ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER:
      return err as KafkaError
    default:
      return new KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, (err as Error)?.message ?? String(err))
  }
}

export class CoordinatorRuntime<S extends CoordinatorStateMachine> {
  readonly #partitions = new Map<number, PartitionContext<S>>()

  constructor(private readonly opts: CoordinatorRuntimeOptions<S>) {}

  get clock(): Clock {
    return this.opts.clock
  }

  /**
   * Becomes the coordinator of a partition in `epoch` (Kafka's onElection with the partition's leader
   * epoch): replays it from the start, then accepts operations. Resolves when loaded (operations
   * meanwhile get COORDINATOR_LOAD_IN_PROGRESS). A load in a newer epoch replaces the current one (its
   * state machine is unloaded first); the same or an older epoch changes nothing.
   */
  async load(partition: number, epoch = 0): Promise<void> {
    const existing = this.#partitions.get(partition)
    if (existing !== undefined && existing.status !== 'failed' && existing.status !== 'closed') {
      if (epoch <= existing.epoch) return
      this.unload(partition)
    }
    let ctx!: PartitionContext<S>
    const timer = new CoordinatorTimer<S>(this.opts.clock, (name, op) => {
      // A timer firing after unload must not touch a stale state machine.
      if (this.#partitions.get(partition) !== ctx) return
      this.write(partition, name, op).catch((err: unknown) => {
        if (!(err instanceof KafkaError)) this.opts.log.error({ partition, timer: name, err: (err as Error)?.message }, 'coordinator timer operation failed')
      })
    })
    const machineCtx: StateMachineContext<S> = { partition, epoch, clock: this.opts.clock, timer, log: this.opts.log }
    ctx = { partition, epoch, status: 'loading', machine: this.opts.newStateMachine(machineCtx), timer, tail: Promise.resolve(), nextOffset: 0 }
    this.#partitions.set(partition, ctx)
    const started = this.opts.clock.now()
    let count = 0
    try {
      let offset = 0
      for (;;) {
        const chunk = await this.opts.writer.read(partition, offset)
        if (ctx.status !== 'loading') return
        for (const r of chunk.records) {
          ctx.machine.replay(r)
          count++
        }
        offset = chunk.nextOffset
        if (chunk.records.length === 0 || offset >= chunk.endOffset) break
      }
      ctx.nextOffset = offset
      ctx.status = 'active'
      ctx.machine.onLoaded()
      if (count > 0) this.opts.log.info({ partition, records: count, ms: this.opts.clock.now() - started }, 'loaded coordinator partition')
    } catch (err) {
      ctx.status = 'failed'
      this.opts.log.error({ partition, err: (err as Error)?.message }, 'cannot load coordinator partition')
      throw err
    }
  }

  /** Stops coordinating a partition: timers cancelled, waiters failed, state dropped. */
  unload(partition: number): void {
    const ctx = this.#partitions.get(partition)
    if (ctx === undefined) return
    this.#partitions.delete(partition)
    ctx.status = 'closed'
    ctx.timer.cancelAll()
    ctx.machine.onUnloaded()
  }

  close(): void {
    for (const p of [...this.#partitions.keys()]) this.unload(p)
  }

  /** Throws the error a client gets when this partition cannot serve operations right now. */
  private active(partition: number): PartitionContext<S> {
    const ctx = this.#partitions.get(partition)
    if (ctx === undefined || ctx.status === 'closed') throw new KafkaError(ErrorCode.NOT_COORDINATOR, `not the coordinator of partition ${partition}`)
    if (ctx.status === 'loading') throw new KafkaError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
    if (ctx.status === 'failed') throw new KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, `partition ${partition} failed to load`)
    return ctx
  }

  isActive(partition: number): boolean {
    return this.#partitions.get(partition)?.status === 'active'
  }

  /** The epoch the partition is coordinated in, while it is active here; undefined otherwise. */
  activeEpoch(partition: number): number | undefined {
    const ctx = this.#partitions.get(partition)
    return ctx?.status === 'active' ? ctx.epoch : undefined
  }

  isLoading(partition: number): boolean {
    return this.#partitions.get(partition)?.status === 'loading'
  }

  /**
   * Runs an operation after every earlier one on the partition has been written. Its records are
   * appended (and replayed unless replay=false) before the returned promise takes the result.
   */
  write<T>(partition: number, name: string, op: WriteOperation<S, T>): Promise<T> {
    let ctx: PartitionContext<S>
    try {
      ctx = this.active(partition)
    } catch (err) {
      return Promise.reject(err)
    }
    // The result is boxed: a pending result (a JoinGroup awaiting its rebalance) must not hold the queue.
    const done = ctx.tail.then(async (): Promise<{ result: T | Promise<T> }> => {
      // The partition may have been unloaded while this operation waited its turn.
      if (this.#partitions.get(partition) !== ctx || ctx.status !== 'active') throw new KafkaError(ErrorCode.NOT_COORDINATOR, `not the coordinator of partition ${partition}`)
      const res = op(ctx.machine)
      if (res.records.length > 0) {
        try {
          await this.opts.writer.append(partition, res.records, res.transactional)
        } catch (err) {
          const mapped = appendErrorToCoordinatorError(err)
          this.opts.log.warn({ partition, op: name, err: (err as Error)?.message }, 'coordinator append failed')
          res.onAppended?.(mapped)
          throw mapped
        }
        const base = ctx.nextOffset
        ctx.nextOffset += res.records.length
        if (res.replay !== false && this.#partitions.get(partition) === ctx) {
          res.records.forEach((r, i) => ctx.machine.replay({ ...r, offset: base + i }))
        }
      }
      res.onAppended?.(null)
      return { result: res.result }
    })
    ctx.tail = done.then(
      () => undefined,
      () => undefined,
    )
    return done.then((box) => box.result)
  }

  /** Runs a read-only function against the partition's state once earlier writes are done. */
  async read<T>(partition: number, fn: (state: S) => T): Promise<T> {
    const ctx = this.active(partition)
    await ctx.tail
    if (this.#partitions.get(partition) !== ctx) throw new KafkaError(ErrorCode.NOT_COORDINATOR, `not the coordinator of partition ${partition}`)
    return fn(ctx.machine)
  }

  /** The state machines that are loaded and active, by partition. */
  activeStateMachines(): [number, S][] {
    const out: [number, S][] = []
    for (const [p, ctx] of this.#partitions) if (ctx.status === 'active') out.push([p, ctx.machine])
    return out
  }

  /** True when some partition is still loading (ListGroups answers COORDINATOR_LOAD_IN_PROGRESS then). */
  anyLoading(): boolean {
    for (const ctx of this.#partitions.values()) if (ctx.status === 'loading') return true
    return false
  }

  /** Settles once every operation queued so far has finished (tests with a ManualClock). */
  async idle(): Promise<void> {
    for (;;) {
      const tails = [...this.#partitions.values()].map((c) => c.tail)
      await Promise.all(tails)
      // Operations may have queued more (a timer op completing a join); wait until nothing changes.
      const after = [...this.#partitions.values()].map((c) => c.tail)
      if (after.length === tails.length && after.every((t, i) => t === tails[i])) return
    }
  }
}
