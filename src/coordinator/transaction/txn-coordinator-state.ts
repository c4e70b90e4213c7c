// The state machine of one __transaction_state partition (Kafka's TransactionCoordinator +
// TransactionStateManager for the transactional ids that hash here). Every operation returns the
// record to append and the answer; state changes only by replaying records (so live state and a reload
// are the same function of the log), except the last producer epoch kept for KIP-360 retries, which
// lives in memory as in Kafka's TransactionMetadata (no record version carries it). The previous
// producer id is in the records (TransactionLogValue v1): the id before the transition each record
// makes, so after a producer id rotation it names the exhausted id.
//
// Transitions (status written in the record):
//   (new) / Empty / CompleteCommit / CompleteAbort --InitProducerId--> Empty (epoch + 1)
//   Empty / Complete* --AddPartitionsToTxn--> Ongoing --EndTxn--> PrepareCommit | PrepareAbort
//   Ongoing --InitProducerId (fence) or timeout--> PrepareAbort with epoch + 1
//   Prepare* --markers written to every partition--> CompleteCommit | CompleteAbort
//   Empty / Complete* idle for transactional.id.expiration.ms --> tombstone
// A Prepare* transaction is handed to the coordinator (onPrepared) when it is written and when a
// partition loads in that state, which writes the markers and then completes it.
import { ErrorCode } from '../../domain/errors.js'
import type { CoordinatorRecord, StoredRecord } from '../runtime/partition-writer.js'
import { noRecords, type CoordinatorResult, type CoordinatorStateMachine, type StateMachineContext } from '../runtime/runtime.js'
import {
  CoordinatorRecordError,
  NO_PRODUCER_ID,
  TxnStatus,
  decodeTransactionKey,
  decodeTransactionValue,
  encodeTransactionKey,
  encodeTransactionValue,
  txnStatusFromName,
  txnStatusName,
} from './transaction-log-records.js'
import type {
  DescribedTransaction,
  ListTransactionsFilter,
  ListedTransaction,
  PreparedTransaction,
  ProducerIdAndEpoch,
  TopicPartitionRef,
  TransactionCoordinatorConfig,
} from './types.js'

/** Kafka's producer epoch is an int16; at Short.MAX_VALUE - 1 the id is exhausted and replaced. */
const MAX_EPOCH = 0x7fff - 1
/** Kafka's RecordBatch.NO_PRODUCER_EPOCH. */
const NO_PRODUCER_EPOCH = -1

/** Kafka's TransactionMetadata.isEpochExhausted. */
function isEpochExhausted(epoch: number): boolean {
  return epoch >= MAX_EPOCH
}
const ABORT_TIMER = 'abort-timed-out-transactions'
const EXPIRE_TIMER = 'expire-transactional-ids'

export interface TransactionMetadata {
  transactionalId: string
  producerId: number
  /** The producer id before the last transition (after a rotation: the exhausted one); -1 unknown. */
  previousProducerId: number
  producerEpoch: number
  timeoutMs: number
  status: TxnStatus
  /** topic -> partitions */
  partitions: Map<string, Set<number>>
  startTimestamp: number
  lastUpdateTimestamp: number
}

export type InitStep =
  | { kind: 'done'; errorCode: ErrorCode; producerId: number; producerEpoch: number }
  /** A new producer id is needed: allocate one and call again with it. */
  | { kind: 'need-id' }
  /** A transaction is being completed (or was just fenced): wait for it, then call again. */
  | { kind: 'wait' }

export interface InitInput {
  transactionalId: string
  timeoutMs: number
  expected: ProducerIdAndEpoch | null
  newProducerId: number | null
}

export interface TransactionCoordinatorStateHooks {
  onPrepared(partition: number, txn: PreparedTransaction): void
}

function partitionList(m: Map<string, Set<number>>): { topic: string; partitions: number[] }[] {
  return [...m].map(([topic, ps]) => ({ topic, partitions: [...ps].sort((a, b) => a - b) }))
}

export class TransactionCoordinatorState implements CoordinatorStateMachine {
  readonly txns = new Map<string, TransactionMetadata>()
  /**
   * Kafka's lastProducerEpoch: the epoch before the last InitProducerId bump of a producer that named
   * itself (KIP-360), so that its retry gets the same answer; memory only, as in Kafka, and reset by a
   * bump from a producer that did not name itself.
   */
  readonly #lastEpoch = new Map<string, number>()

  constructor(
    private readonly ctx: StateMachineContext<TransactionCoordinatorState>,
    private readonly config: TransactionCoordinatorConfig,
    private readonly hooks: TransactionCoordinatorStateHooks,
  ) {}

  private now(): number {
    return this.ctx.clock.now()
  }

  // ---- replay -----------------------------------------------------------------------------------

  replay(record: StoredRecord): void {
    if (record.control !== undefined) return
    try {
      const id = decodeTransactionKey(record.key)
      if (record.value === null) {
        this.txns.delete(id)
        this.#lastEpoch.delete(id)
        return
      }
      const v = decodeTransactionValue(record.value)
      const partitions = new Map<string, Set<number>>()
      for (const t of v.partitions) partitions.set(t.topic, new Set(t.partitions))
      this.txns.set(id, {
        transactionalId: id,
        producerId: v.producerId,
        previousProducerId: v.previousProducerId,
        producerEpoch: v.producerEpoch,
        timeoutMs: v.transactionTimeoutMs,
        status: v.status,
        partitions,
        startTimestamp: v.startTimestamp,
        lastUpdateTimestamp: v.lastUpdateTimestamp,
      })
    } catch (err) {
      if (!(err instanceof CoordinatorRecordError)) throw err
      this.ctx.log.error({ partition: this.ctx.partition, offset: record.offset, err: err.message }, 'skipping a malformed __transaction_state record')
    }
  }

  onLoaded(): void {
    this.ctx.timer.schedule(ABORT_TIMER, this.config.abortTimedOutTransactionsIntervalMs, (s) => s.abortTimedOutTransactions())
    this.ctx.timer.schedule(EXPIRE_TIMER, this.config.removeExpiredTransactionalIdsIntervalMs, (s) => s.expireTransactionalIds())
    // A coordinator that stopped between Prepare* and Complete* finishes the job.
    for (const txn of this.txns.values()) {
      if (txn.status === TxnStatus.PrepareCommit || txn.status === TxnStatus.PrepareAbort) this.hooks.onPrepared(this.ctx.partition, this.prepared(txn))
    }
  }

  onUnloaded(): void {}

  // ---- helpers ----------------------------------------------------------------------------------

  private record(txn: TransactionMetadata): CoordinatorRecord {
    return {
      key: encodeTransactionKey(txn.transactionalId),
      value: encodeTransactionValue({
        producerId: txn.producerId,
        previousProducerId: txn.previousProducerId,
        nextProducerId: NO_PRODUCER_ID,
        producerEpoch: txn.producerEpoch,
        transactionTimeoutMs: txn.timeoutMs,
        status: txn.status,
        partitions: partitionList(txn.partitions),
        lastUpdateTimestamp: txn.lastUpdateTimestamp,
        startTimestamp: txn.startTimestamp,
        clientTransactionVersion: 0,
      }),
    }
  }

  /** The state after a transition from `txn`: Kafka's TxnTransitMetadata, whose previous producer id is txn's. */
  private transit(txn: TransactionMetadata, change: Partial<TransactionMetadata>): TransactionMetadata {
    return { ...txn, ...change, previousProducerId: txn.producerId }
  }

  private prepared(txn: TransactionMetadata): PreparedTransaction {
    const partitions: TopicPartitionRef[] = []
    for (const [topic, ps] of txn.partitions) for (const partition of ps) partitions.push({ topic, partition })
    return {
      transactionalId: txn.transactionalId,
      producerId: txn.producerId,
      producerEpoch: txn.producerEpoch,
      coordinatorEpoch: this.ctx.epoch,
      commit: txn.status === TxnStatus.PrepareCommit,
      partitions,
    }
  }

  /** Writes a transition to Prepare*; once durable the coordinator writes the markers. */
  private prepare(next: TransactionMetadata): CoordinatorRecord {
    return this.record(next)
  }

  private isPrepare(s: TxnStatus): boolean {
    return s === TxnStatus.PrepareCommit || s === TxnStatus.PrepareAbort || s === TxnStatus.PrepareEpochFence
  }

  /** The common producer checks of AddPartitionsToTxn and EndTxn (Kafka's order). */
  private producerError(txn: TransactionMetadata | undefined, producerId: number, producerEpoch: number): ErrorCode {
    if (txn === undefined || txn.status === TxnStatus.Dead) return ErrorCode.INVALID_PRODUCER_ID_MAPPING
    if (txn.producerId !== producerId) return ErrorCode.INVALID_PRODUCER_ID_MAPPING
    if (txn.producerEpoch !== producerEpoch) return ErrorCode.PRODUCER_FENCED
    return ErrorCode.NONE
  }

  // ---- operations -------------------------------------------------------------------------------

  initProducerId(input: InitInput): CoordinatorResult<InitStep> {
    const now = this.now()
    const txn = this.txns.get(input.transactionalId)
    const done = (errorCode: ErrorCode, producerId = -1, producerEpoch = -1): CoordinatorResult<InitStep> => noRecords({ kind: 'done', errorCode, producerId, producerEpoch })
    if (txn === undefined) {
      if (input.newProducerId === null) return noRecords({ kind: 'need-id' })
      const created: TransactionMetadata = {
        transactionalId: input.transactionalId,
        producerId: input.newProducerId,
        previousProducerId: NO_PRODUCER_ID,
        producerEpoch: 0,
        timeoutMs: input.timeoutMs,
        status: TxnStatus.Empty,
        partitions: new Map(),
        startTimestamp: -1,
        lastUpdateTimestamp: now,
      }
      return { records: [this.record(created)], result: { kind: 'done', errorCode: ErrorCode.NONE, producerId: created.producerId, producerEpoch: 0 } }
    }
    const exp = input.expected
    // Kafka's isValidProducerId (KIP-360): a producer that names itself has the current id, or the
    // previous one with an exhausted epoch (a retry of the rotation it asked for).
    if (exp !== null && exp.producerId !== txn.producerId && !(exp.producerId === txn.previousProducerId && isEpochExhausted(exp.producerEpoch))) {
      return done(ErrorCode.PRODUCER_FENCED)
    }
    if (this.isPrepare(txn.status)) return noRecords({ kind: 'wait' })
    if (txn.status === TxnStatus.Ongoing) {
      // Fence the current producer: abort its transaction under a bumped epoch, so that markers carry
      // an epoch its in-flight writes cannot match.
      const fenced = txn.producerEpoch < MAX_EPOCH ? txn.producerEpoch + 1 : txn.producerEpoch
      const next = this.transit(txn, { producerEpoch: fenced, status: TxnStatus.PrepareAbort, lastUpdateTimestamp: now })
      this.ctx.log.info({ transactionalId: txn.transactionalId, producerId: txn.producerId, epoch: fenced }, 'fencing the producer of an ongoing transaction and aborting it')
      return {
        records: [this.prepare(next)],
        result: { kind: 'wait' },
        onAppended: (err) => {
          if (err === null) this.hooks.onPrepared(this.ctx.partition, this.prepared(next))
        },
      }
    }
    // Empty, CompleteCommit, CompleteAbort. An exhausted epoch (and a producer that names that epoch, if
    // it names one) gets a new producer id (Kafka's prepareProducerIdRotation); otherwise the epoch is
    // bumped (prepareIncrementProducerEpoch).
    const fresh = { timeoutMs: input.timeoutMs, status: TxnStatus.Empty, partitions: new Map<string, Set<number>>(), startTimestamp: -1, lastUpdateTimestamp: now }
    let next: TransactionMetadata
    let lastEpoch: number
    if (isEpochExhausted(txn.producerEpoch) && (exp === null || exp.producerEpoch === txn.producerEpoch)) {
      if (input.newProducerId === null) return noRecords({ kind: 'need-id' })
      next = this.transit(txn, { ...fresh, producerId: input.newProducerId, producerEpoch: 0 })
      lastEpoch = exp === null ? NO_PRODUCER_EPOCH : txn.producerEpoch
    } else if (exp === null) {
      next = this.transit(txn, { ...fresh, producerEpoch: txn.producerEpoch + 1 })
      lastEpoch = NO_PRODUCER_EPOCH
    } else if (exp.producerEpoch === txn.producerEpoch) {
      next = this.transit(txn, { ...fresh, producerEpoch: txn.producerEpoch + 1 })
      lastEpoch = txn.producerEpoch
    } else if (exp.producerEpoch === (this.#lastEpoch.get(txn.transactionalId) ?? NO_PRODUCER_EPOCH)) {
      // A retry of a bump whose answer the producer lost: the same id and epoch again.
      next = this.transit(txn, fresh)
      lastEpoch = exp.producerEpoch
    } else {
      this.ctx.log.info({ transactionalId: txn.transactionalId, expected: exp, producerId: txn.producerId, producerEpoch: txn.producerEpoch }, 'InitProducerId from a fenced producer epoch')
      return done(ErrorCode.PRODUCER_FENCED)
    }
    return {
      records: [this.record(next)],
      result: { kind: 'done', errorCode: ErrorCode.NONE, producerId: next.producerId, producerEpoch: next.producerEpoch },
      onAppended: (err) => {
        if (err === null) this.#lastEpoch.set(txn.transactionalId, lastEpoch)
      },
    }
  }

  addPartitions(transactionalId: string, producerId: number, producerEpoch: number, partitions: readonly TopicPartitionRef[]): CoordinatorResult<ErrorCode> {
    const txn = this.txns.get(transactionalId)
    const error = this.producerError(txn, producerId, producerEpoch)
    if (error !== ErrorCode.NONE) return noRecords(error)
    if (this.isPrepare(txn!.status)) return noRecords(ErrorCode.CONCURRENT_TRANSACTIONS)
    const ongoing = txn!.status === TxnStatus.Ongoing
    if (ongoing && partitions.every((p) => txn!.partitions.get(p.topic)?.has(p.partition) === true)) return noRecords(ErrorCode.NONE)
    const merged = new Map<string, Set<number>>()
    if (ongoing) for (const [t, ps] of txn!.partitions) merged.set(t, new Set(ps))
    for (const p of partitions) {
      let ps = merged.get(p.topic)
      if (ps === undefined) merged.set(p.topic, (ps = new Set()))
      ps.add(p.partition)
    }
    const now = this.now()
    const next = this.transit(txn!, { status: TxnStatus.Ongoing, partitions: merged, startTimestamp: ongoing ? txn!.startTimestamp : now, lastUpdateTimestamp: now })
    return { records: [this.record(next)], result: ErrorCode.NONE }
  }

  endTxn(transactionalId: string, producerId: number, producerEpoch: number, commit: boolean): CoordinatorResult<ErrorCode> {
    const txn = this.txns.get(transactionalId)
    const error = this.producerError(txn, producerId, producerEpoch)
    if (error !== ErrorCode.NONE) return noRecords(error)
    switch (txn!.status) {
      case TxnStatus.Ongoing: {
        const next = this.transit(txn!, { status: commit ? TxnStatus.PrepareCommit : TxnStatus.PrepareAbort, lastUpdateTimestamp: this.now() })
        return {
          records: [this.prepare(next)],
          result: ErrorCode.NONE,
          onAppended: (err) => {
            if (err === null) this.hooks.onPrepared(this.ctx.partition, this.prepared(next))
          },
        }
      }
      // A retried EndTxn whose first attempt got through.
      case TxnStatus.CompleteCommit:
        return noRecords(commit ? ErrorCode.NONE : ErrorCode.INVALID_TXN_STATE)
      case TxnStatus.CompleteAbort:
        return noRecords(commit ? ErrorCode.INVALID_TXN_STATE : ErrorCode.NONE)
      case TxnStatus.PrepareCommit:
        return noRecords(commit ? ErrorCode.CONCURRENT_TRANSACTIONS : ErrorCode.INVALID_TXN_STATE)
      case TxnStatus.PrepareAbort:
        return noRecords(commit ? ErrorCode.INVALID_TXN_STATE : ErrorCode.CONCURRENT_TRANSACTIONS)
      default:
        return noRecords(ErrorCode.INVALID_TXN_STATE)
    }
  }

  /** Every marker is written: the transaction is complete. A stale call (state moved on) does nothing. */
  completeTxn(p: PreparedTransaction): CoordinatorResult<boolean> {
    const txn = this.txns.get(p.transactionalId)
    const expected = p.commit ? TxnStatus.PrepareCommit : TxnStatus.PrepareAbort
    if (txn === undefined || txn.status !== expected || txn.producerId !== p.producerId || txn.producerEpoch !== p.producerEpoch) return noRecords(false)
    const next = this.transit(txn, { status: p.commit ? TxnStatus.CompleteCommit : TxnStatus.CompleteAbort, partitions: new Map(), lastUpdateTimestamp: this.now() })
    return { records: [this.record(next)], result: true }
  }

  /** Status of a transactional id, for the coordinator (retries, tests). */
  status(transactionalId: string): TxnStatus | undefined {
    return this.txns.get(transactionalId)?.status
  }

  // ---- timers -----------------------------------------------------------------------------------

  /** Transactions open longer than their timeout are fenced (epoch + 1) and aborted, as Kafka does. */
  abortTimedOutTransactions(): CoordinatorResult<void> {
    this.ctx.timer.schedule(ABORT_TIMER, this.config.abortTimedOutTransactionsIntervalMs, (s) => s.abortTimedOutTransactions())
    const now = this.now()
    const records: CoordinatorRecord[] = []
    const aborted: TransactionMetadata[] = []
    for (const txn of this.txns.values()) {
      if (txn.status !== TxnStatus.Ongoing || txn.startTimestamp < 0 || now - txn.startTimestamp <= txn.timeoutMs) continue
      const next = this.transit(txn, { producerEpoch: txn.producerEpoch < MAX_EPOCH ? txn.producerEpoch + 1 : txn.producerEpoch, status: TxnStatus.PrepareAbort, lastUpdateTimestamp: now })
      this.ctx.log.info({ transactionalId: txn.transactionalId, producerId: txn.producerId, timeoutMs: txn.timeoutMs }, 'aborting a transaction that timed out')
      records.push(this.prepare(next))
      aborted.push(next)
    }
    return {
      records,
      result: undefined,
      onAppended: (err) => {
        if (err === null) for (const next of aborted) this.hooks.onPrepared(this.ctx.partition, this.prepared(next))
      },
    }
  }

  /** transactional.id.expiration.ms: ids with no open transaction and no update for that long are removed. */
  expireTransactionalIds(): CoordinatorResult<void> {
    this.ctx.timer.schedule(EXPIRE_TIMER, this.config.removeExpiredTransactionalIdsIntervalMs, (s) => s.expireTransactionalIds())
    const now = this.now()
    const records: CoordinatorRecord[] = []
    for (const txn of this.txns.values()) {
      const idle = txn.status === TxnStatus.Empty || txn.status === TxnStatus.CompleteCommit || txn.status === TxnStatus.CompleteAbort
      if (idle && now - txn.lastUpdateTimestamp >= this.config.transactionalIdExpirationMs) records.push({ key: encodeTransactionKey(txn.transactionalId), value: null })
    }
    if (records.length > 0) this.ctx.log.info({ partition: this.ctx.partition, expired: records.length }, 'expiring transactional ids')
    return { records, result: undefined }
  }

  // ---- describe / list --------------------------------------------------------------------------

  describe(transactionalId: string): DescribedTransaction {
    const txn = this.txns.get(transactionalId)
    if (txn === undefined) {
      return { transactionalId, errorCode: ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, state: 'Dead', timeoutMs: 0, startTimestamp: -1, producerId: -1, producerEpoch: -1, topics: [] }
    }
    return {
      transactionalId,
      errorCode: ErrorCode.NONE,
      state: txnStatusName(txn.status),
      timeoutMs: txn.timeoutMs,
      startTimestamp: txn.status === TxnStatus.Empty ? -1 : txn.startTimestamp,
      producerId: txn.producerId,
      producerEpoch: txn.producerEpoch,
      topics: partitionList(txn.partitions),
    }
  }

  list(filter: ListTransactionsFilter): ListedTransaction[] {
    const states = new Set(filter.states.map((s) => txnStatusFromName(s)).filter((s) => s !== undefined))
    const pids = new Set(filter.producerIds)
    const now = this.now()
    const out: ListedTransaction[] = []
    for (const txn of this.txns.values()) {
      if (filter.states.length > 0 && !states.has(txn.status)) continue
      if (pids.size > 0 && !pids.has(txn.producerId)) continue
      if (filter.durationMs >= 0 && (txn.startTimestamp < 0 || now - txn.startTimestamp <= filter.durationMs)) continue
      out.push({ transactionalId: txn.transactionalId, producerId: txn.producerId, state: txnStatusName(txn.status) })
    }
    return out
  }
}
