// The transaction coordinator as the broker (and library users) call it: one
// TransactionCoordinatorState (the state machine of one partition) per partition of
// __transaction_state, run by the CoordinatorRuntime, a transactional id living on partition
// abs(javaStringHashCode(id)) % transaction.state.log.num.partitions (Kafka's partitionFor).
//
// Two-phase commit: EndTxn writes PrepareCommit/PrepareAbort durably and answers; then the markers are
// written to every partition of the transaction through the TxnMarkerWriter (retried with backoff
// until each partition took its marker or no longer exists), and only then CompleteCommit/CompleteAbort
// is written. The same completion runs for a transaction fenced by InitProducerId or timed out, and for
// every Prepare* found when a partition is loaded (a coordinator restarting mid-commit finishes it).
//
// Coordinator epochs (Kafka's): each __transaction_state partition is loaded in an epoch, the leader
// epoch of that partition when this broker became its leader (partitionEpoch). Its markers carry that
// epoch, and a partition refuses a marker from an older epoch than one it has seen
// (TRANSACTION_COORDINATOR_FENCED, storage/producer-state.ts). A completion stops, writing nothing more,
// once its partition is no longer coordinated here in the epoch that decided the transaction (unloaded,
// or loaded again in a newer epoch, whose own load finishes the transaction).
import { ErrorCode, KafkaError } from '../../domain/errors.js'
import { kafkaAbs, javaStringHashCode } from '../group/partitioner.js'
import type { Clock } from '../runtime/clock.js'
import type { PartitionWriter } from '../runtime/partition-writer.js'
import { CoordinatorRuntime, type CoordinatorLogger } from '../runtime/runtime.js'
import { TxnStatus } from './transaction-log-records.js'
import { TransactionCoordinatorState, type InitStep } from './txn-coordinator-state.js'
import type {
  DescribedTransaction,
  EndTxnResult,
  InitProducerIdResult,
  ListTransactionsFilter,
  ListedTransaction,
  PreparedTransaction,
  ProducerIdAndEpoch,
  ProducerIdSource,
  TopicPartitionRef,
  TransactionCoordinatorConfig,
  TxnMarkerWriter,
} from './types.js'

export interface TransactionCoordinatorOptions {
  config: TransactionCoordinatorConfig
  /** The leader epoch of a __transaction_state partition: the coordinator epoch it is loaded in. Default 0. */
  partitionEpoch?: (partition: number) => number
  writer: PartitionWriter
  markers: TxnMarkerWriter
  producerIds: ProducerIdSource
  clock: Clock
  log: CoordinatorLogger
}

/** How long InitProducerId waits for a fenced transaction's abort before answering CONCURRENT_TRANSACTIONS. */
const INIT_WAIT_MS = 5000
/** How long AddPartitionsToTxn waits for the previous transaction's markers before answering CONCURRENT_TRANSACTIONS. */
const ADD_PARTITIONS_WAIT_MS = 1000
const MARKER_RETRY_MIN_MS = 50
const MARKER_RETRY_MAX_MS = 2000

export function transactionPartition(transactionalId: string, partitionCount: number): number {
  return kafkaAbs(javaStringHashCode(transactionalId)) % partitionCount
}

export class TransactionCoordinator {
  readonly runtime: CoordinatorRuntime<TransactionCoordinatorState>
  readonly config: TransactionCoordinatorConfig
  readonly #opts: TransactionCoordinatorOptions
  /** Completions in progress (markers being written), by transactional id. */
  readonly #completions = new Map<string, { coordinatorEpoch: number; done: Promise<void> }>()
  /** Every completion still running, superseded ones included. */
  readonly #running = new Set<Promise<void>>()
  #closed = false

  constructor(opts: TransactionCoordinatorOptions) {
    this.#opts = opts
    this.config = opts.config
    this.runtime = new CoordinatorRuntime<TransactionCoordinatorState>({
      writer: opts.writer,
      clock: opts.clock,
      log: opts.log,
      newStateMachine: (ctx) => new TransactionCoordinatorState(ctx, opts.config, { onPrepared: (partition, txn) => this.#complete(partition, txn) }),
    })
  }

  partitionFor(transactionalId: string): number {
    return transactionPartition(transactionalId, this.config.transactionStatePartitions)
  }

  async loadAll(): Promise<void> {
    const loads = []
    for (let p = 0; p < this.config.transactionStatePartitions; p++) loads.push(this.runtime.load(p, this.#opts.partitionEpoch?.(p) ?? 0))
    const results = await Promise.allSettled(loads)
    const failed = results.find((r) => r.status === 'rejected')
    if (failed !== undefined) throw (failed as PromiseRejectedResult).reason
  }

  close(): void {
    this.#closed = true
    this.runtime.close()
  }

  /** Settles when every completion started so far has finished (tests, graceful stop). */
  async completionsIdle(): Promise<void> {
    while (this.#running.size > 0) await Promise.all([...this.#running])
  }

  private codeOf(err: unknown, op: string): ErrorCode {
    if (err instanceof KafkaError) return err.code
    this.#opts.log.error({ op, err: (err as Error)?.stack ?? String(err) }, 'transaction coordinator operation failed unexpectedly')
    return ErrorCode.UNKNOWN_SERVER_ERROR
  }

  // ---- operations -------------------------------------------------------------------------------

  /** InitProducerId with a transactional id. expected: the producer's id and epoch (v3+ KIP-360), else null. */
  async initProducerId(transactionalId: string, timeoutMs: number, expected: ProducerIdAndEpoch | null): Promise<InitProducerIdResult> {
    const fail = (errorCode: ErrorCode): InitProducerIdResult => ({ errorCode, producerId: -1, producerEpoch: -1 })
    if (!Number.isInteger(timeoutMs) || timeoutMs <= 0 || timeoutMs > this.config.maxTimeoutMs) return fail(ErrorCode.INVALID_TRANSACTION_TIMEOUT)
    const partition = this.partitionFor(transactionalId)
    let newProducerId: number | null = null
    const deadline = this.#opts.clock.now() + INIT_WAIT_MS
    try {
      for (;;) {
        const id = newProducerId
        const step: InitStep = await this.runtime.write(partition, 'init-producer-id', (s) => s.initProducerId({ transactionalId, timeoutMs, expected, newProducerId: id }))
        if (step.kind === 'done') return { errorCode: step.errorCode, producerId: step.producerId, producerEpoch: step.producerEpoch }
        if (step.kind === 'need-id') {
          newProducerId = await this.#opts.producerIds.nextProducerId()
          continue
        }
        // 'wait': an abort (maybe the fence we just wrote) is being completed.
        const pending = this.#completions.get(transactionalId)?.done
        const left = deadline - this.#opts.clock.now()
        if (pending === undefined || left <= 0) return fail(ErrorCode.CONCURRENT_TRANSACTIONS)
        const finished = await this.#within(pending, left)
        if (!finished) return fail(ErrorCode.CONCURRENT_TRANSACTIONS)
      }
    } catch (err) {
      return fail(this.codeOf(err, 'init-producer-id'))
    }
  }

  /** AddPartitionsToTxn (and AddOffsetsToTxn with the group's __consumer_offsets partition). */
  async addPartitions(transactionalId: string, producerId: number, producerEpoch: number, partitions: readonly TopicPartitionRef[]): Promise<ErrorCode> {
    const partition = this.partitionFor(transactionalId)
    try {
      let code = await this.runtime.write(partition, 'add-partitions', (s) => s.addPartitions(transactionalId, producerId, producerEpoch, partitions))
      // The producer's previous transaction is still writing its markers (EndTxn answers before them):
      // rather than send the client into its retry backoff, wait a little for them and try again.
      const pending = this.#completions.get(transactionalId)?.done
      if (code === ErrorCode.CONCURRENT_TRANSACTIONS && pending !== undefined && (await this.#within(pending, ADD_PARTITIONS_WAIT_MS))) {
        code = await this.runtime.write(partition, 'add-partitions', (s) => s.addPartitions(transactionalId, producerId, producerEpoch, partitions))
      }
      return code
    } catch (err) {
      return this.codeOf(err, 'add-partitions')
    }
  }

  /** EndTxn: answers once Prepare* is durable; the markers and Complete* follow. */
  async endTxn(transactionalId: string, producerId: number, producerEpoch: number, commit: boolean): Promise<EndTxnResult> {
    try {
      const errorCode = await this.runtime.write(this.partitionFor(transactionalId), 'end-txn', (s) => s.endTxn(transactionalId, producerId, producerEpoch, commit))
      return { errorCode }
    } catch (err) {
      return { errorCode: this.codeOf(err, 'end-txn') }
    }
  }

  async describeTransactions(ids: readonly string[]): Promise<DescribedTransaction[]> {
    return Promise.all(
      ids.map(async (id) => {
        try {
          return await this.runtime.read(this.partitionFor(id), (s) => s.describe(id))
        } catch (err) {
          return { transactionalId: id, errorCode: this.codeOf(err, 'describe-transactions'), state: 'Dead' as const, timeoutMs: 0, startTimestamp: -1, producerId: -1, producerEpoch: -1, topics: [] }
        }
      }),
    )
  }

  async listTransactions(filter: ListTransactionsFilter): Promise<{ errorCode: ErrorCode; transactions: ListedTransaction[] }> {
    const out: ListedTransaction[] = []
    for (const [partition] of this.runtime.activeStateMachines()) {
      out.push(...(await this.runtime.read(partition, (s) => s.list(filter)).catch(() => [] as ListedTransaction[])))
    }
    return { errorCode: this.runtime.anyLoading() ? ErrorCode.COORDINATOR_LOAD_IN_PROGRESS : ErrorCode.NONE, transactions: out }
  }

  /** The status of a transactional id (undefined when unknown); for tests and tools. */
  async status(transactionalId: string): Promise<TxnStatus | undefined> {
    return this.runtime.read(this.partitionFor(transactionalId), (s) => s.status(transactionalId))
  }

  // ---- completion -------------------------------------------------------------------------------

  #within(p: Promise<void>, ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const h = this.#opts.clock.setTimeout(() => resolve(false), ms)
      p.then(
        () => {
          this.#opts.clock.clearTimeout(h)
          resolve(true)
        },
        () => {
          this.#opts.clock.clearTimeout(h)
          resolve(true)
        },
      )
    })
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.#opts.clock.setTimeout(resolve, ms))
  }

  /** Writes the markers of a decided transaction, then its Complete* record. */
  #complete(partition: number, txn: PreparedTransaction): void {
    // A previous completion of the same id may still be finishing: run after it, unless it belongs to an
    // older coordinator epoch (it stops by itself; the new epoch must not wait for a stale one).
    const current = this.#completions.get(txn.transactionalId)
    const previous = current !== undefined && current.coordinatorEpoch >= txn.coordinatorEpoch ? current.done : Promise.resolve()
    const run: Promise<void> = previous
      .then(() => this.#writeMarkersAndComplete(partition, txn))
      .catch((err: unknown) => {
        if (!(err instanceof KafkaError)) this.#opts.log.error({ transactionalId: txn.transactionalId, err: (err as Error)?.stack ?? String(err) }, 'completing a transaction failed')
        else this.#opts.log.warn({ transactionalId: txn.transactionalId, err: err.message }, 'completing a transaction stopped')
      })
      .finally(() => {
        this.#running.delete(run)
        if (this.#completions.get(txn.transactionalId)?.done === run) this.#completions.delete(txn.transactionalId)
      })
    this.#running.add(run)
    this.#completions.set(txn.transactionalId, { coordinatorEpoch: txn.coordinatorEpoch, done: run })
  }

  /** Whether this coordinator still coordinates the partition in the epoch that decided txn. */
  #stillCoordinator(partition: number, txn: PreparedTransaction): boolean {
    return !this.#closed && this.runtime.activeEpoch(partition) === txn.coordinatorEpoch
  }

  async #writeMarkersAndComplete(partition: number, txn: PreparedTransaction): Promise<void> {
    // Let the operation that wrote Prepare* finish first (we are called from its onAppended).
    await Promise.resolve()
    const { coordinatorEpoch } = txn
    let pending = txn.partitions.map((p) => ({ ...p, producerId: txn.producerId, producerEpoch: txn.producerEpoch, coordinatorEpoch, commit: txn.commit }))
    let delay = MARKER_RETRY_MIN_MS
    while (pending.length > 0) {
      if (!this.#stillCoordinator(partition, txn)) return this.#cancelled(partition, txn)
      let results: { errorCode: number }[]
      try {
        results = await this.#opts.markers.writeMarkers(pending)
      } catch (err) {
        this.#opts.log.warn({ transactionalId: txn.transactionalId, err: (err as Error)?.message }, 'writing transaction markers failed; retrying')
        results = pending.map(() => ({ errorCode: ErrorCode.UNKNOWN_SERVER_ERROR }))
      }
      const failed = pending.filter((p, i) => {
        const code = results[i]?.errorCode ?? ErrorCode.UNKNOWN_SERVER_ERROR
        if (code === ErrorCode.TRANSACTION_COORDINATOR_FENCED || code === ErrorCode.INVALID_PRODUCER_EPOCH) {
          // A newer coordinator or producer epoch wrote there. Kafka's coordinator takes that as being
          // stale and stops; a coordinator that is still current finishes (the marker is obsolete).
          this.#opts.log.warn({ transactionalId: txn.transactionalId, topic: p.topic, partition: p.partition, coordinatorEpoch, error: code }, 'transaction marker refused by the partition')
          return false
        }
        return code !== ErrorCode.NONE && code !== ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
      })
      if (failed.length === 0) break
      this.#opts.log.warn({ transactionalId: txn.transactionalId, partitions: failed.map((p) => `${p.topic}-${p.partition}`), retryMs: delay }, 'transaction markers not written; retrying')
      pending = failed
      await this.#sleep(delay)
      delay = Math.min(delay * 2, MARKER_RETRY_MAX_MS)
    }
    if (!this.#stillCoordinator(partition, txn)) return this.#cancelled(partition, txn)
    await this.runtime.write(partition, 'complete-txn', (s) => s.completeTxn(txn))
  }

  #cancelled(partition: number, txn: PreparedTransaction): void {
    if (this.#closed) return
    this.#opts.log.info(
      { transactionalId: txn.transactionalId, partition, coordinatorEpoch: txn.coordinatorEpoch, currentEpoch: this.runtime.activeEpoch(partition) ?? null },
      'no longer the coordinator of this transaction in the epoch that decided it; its markers are left to the current one',
    )
  }
}
