// The producer's idempotence and transactions, after Kafka's TransactionManager: the producer id and
// epoch (InitProducerId), the sequence numbers of each partition and the batches in flight they order,
// epoch bumps (KIP-360), and, with a transactional.id, the transaction states (UNINITIALIZED ->
// INITIALIZING -> READY -> IN_TRANSACTION -> COMMITTING_TRANSACTION / ABORTING_TRANSACTION -> READY,
// ABORTABLE_ERROR, FATAL_ERROR) with their coordinator requests: FindCoordinator (type TRANSACTION),
// InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit (to the group coordinator) and
// EndTxn. The producer (producer.ts) owns the batches and asks this class, per batch, whether and how a
// batch may go; nothing here runs per record.
//
// Sequences, per partition: a batch gets its base sequence when it first goes into a Produce request (so
// a batch that expires unsent leaves no gap) and keeps it across retries. At most 5 batches of a
// partition are in flight, the number of batches the broker remembers per producer to recognise a
// retried one. After a failure, the batches that must be resent go again one at a time, in sequence
// order, each once no request with one of the partition's batches is unanswered, and new batches wait
// behind them: so the log keeps the order of the sends, and a batch the broker already wrote (its answer
// was lost) is recognised as a duplicate. An acknowledged batch also vouches for the unacknowledged ones
// before it (the broker takes a sequence only right after the previous one): they are complete, written.
//
// Errors of the idempotent producer (no transactional.id): OUT_OF_ORDER_SEQUENCE_NUMBER for a batch that
// is not the partition's first unacknowledged one means an earlier one is missing: it is retried behind
// it. For the first one, or UNKNOWN_PRODUCER_ID (the broker lost the producer's state), the sequences have
// a gap the broker will not accept: the producer bumps its epoch locally (KIP-360; a new epoch must start
// at sequence 0, which the broker accepts) once the partition has no request unanswered, gives that
// partition's unacknowledged batches new sequences from 0 and resends them; other partitions move to the
// new epoch when their in-flight batches are done. A batch the broker refused for good (too large, ...)
// leaves a gap too and bumps the epoch the same way. An epoch at 32767 takes a new producer id instead.
//
// Errors of the transactional producer, as the Java client classifies them: fatal (the producer can only
// be closed) for PRODUCER_FENCED and INVALID_PRODUCER_EPOCH from the transaction or group coordinator (a
// newer instance with the same transactional.id fenced this one), authorization failures,
// INVALID_TXN_STATE and unexpected errors; abortable for everything else: any failed batch
// (INVALID_PRODUCER_EPOCH from Produce too, KIP-588: the coordinator may have bumped the epoch to abort a
// transaction that timed out), UNKNOWN_PRODUCER_ID, INVALID_PRODUCER_ID_MAPPING, group membership errors
// of TxnOffsetCommit. After an abortable error, abortTransaction() ends the transaction with EndTxn and
// then bumps the epoch with InitProducerId (v3+, KIP-360) so that the sequences restart cleanly; a
// coordinator too old for that makes a failure of a sent batch fatal instead. Retriable coordinator
// errors (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, CONCURRENT_TRANSACTIONS, ...) are retried with a
// backoff within max.block.ms.
import { ApiKey } from '../protocol/api-keys.gen.js'
import * as AddOffsetsToTxn from '../protocol/messages/25-add-offsets-to-txn.gen.js'
import * as AddPartitionsToTxn from '../protocol/messages/24-add-partitions-to-txn.gen.js'
import * as EndTxn from '../protocol/messages/26-end-txn.gen.js'
import * as InitProducerId from '../protocol/messages/22-init-producer-id.gen.js'
import * as TxnOffsetCommit from '../protocol/messages/28-txn-offset-commit.gen.js'
import { ErrorCode, KafkaError, errorName, isRetriable } from '../domain/errors.js'
import { sleep, type Cluster } from './cluster-connections.js'
import type { BrokerConnection } from './connection.js'
import { IllegalStateError, ProducerStateError, TimeoutError, TransactionAbortedError, isRetriableError } from './errors.js'
import type { ConsumerGroupMetadata, TopicPartitionOffset } from './group.js'
import { stampProducerState } from './record-batches.js'

export type TransactionState =
  | 'UNINITIALIZED'
  | 'INITIALIZING'
  | 'READY'
  | 'IN_TRANSACTION'
  | 'COMMITTING_TRANSACTION'
  | 'ABORTING_TRANSACTION'
  | 'ABORTABLE_ERROR'
  | 'FATAL_ERROR'

/** What the transaction manager reads and writes of a producer batch. */
export interface SequencedBatch {
  /** Records in the batch. */
  count: number
  /** The built batch (null once recycled). */
  bytes: Buffer | null
  producerId: number
  producerEpoch: number
  /** -1 until the batch is first sent. */
  baseSequence: number
  /** In a Produce request that has not been answered. */
  inRequest: boolean
}

/** The broker keeps the metadata of a producer's last 5 batches per partition (Kafka's in-flight limit). */
export const MAX_IN_FLIGHT_PER_PARTITION = 5
const NO_SEQUENCE = -1
const MAX_EPOCH = 32767
/** Java's ADD_PARTITIONS_RETRY_BACKOFF_MS: CONCURRENT_TRANSACTIONS on the first AddPartitionsToTxn of a transaction is the previous one's markers being written; it clears within milliseconds. */
const CONCURRENT_TRANSACTIONS_BACKOFF_MS = 20

/** Kafka's DefaultRecordBatch.incrementSequence: sequences wrap from 2^31-1 to 0. */
export function incrementSequence(sequence: number, increment: number): number {
  if (sequence > 0x7fffffff - increment) return increment - (0x7fffffff - sequence) - 1
  return sequence + increment
}

/** The idempotence state of one partition of the producer. */
export class PartitionSequences {
  /** The producer id and epoch this partition's sequences belong to. */
  producerId = -1
  producerEpoch = -1
  nextSequence = 0
  lastAckedSequence = -1
  /** Batches with a sequence that are not complete, in sequence order. */
  readonly inFlight: SequencedBatch[] = []
  /** How many of them are in an unanswered Produce request. */
  inRequest = 0
  /** An epoch bump must give this partition's unacknowledged batches new sequences before anything more is sent. */
  bumpRequested = false
  /** Transactional: part of the ongoing transaction (AddPartitionsToTxn answered), or being added. */
  added = false
  adding = false

  constructor(
    readonly topic: string,
    readonly partition: number,
  ) {}
}

/** Where the producer keeps a partition's PartitionSequences (its partition queue). */
export interface SequencesHolder {
  topic: string
  partition: number
  seq: PartitionSequences | null
}

/** What the transaction manager asks of the producer. */
export interface ProducerHooks {
  /** Sends what may go now (a producer id arrived, partitions joined the transaction, the epoch moved). */
  wake(): void
  /** Fails the batches not sent yet (open ones included), and with sentToo also the sent ones waiting for a retry. */
  failUnsent(err: Error, sentToo: boolean): void
  /** Fails every incomplete batch, in flight or not (fatal errors). */
  failAll(err: Error): void
  /** Sends every batch and resolves once all are complete. */
  flush(): Promise<void>
}

export interface TransactionManagerOptions {
  transactionalId: string | null
  transactionTimeoutMs: number
  maxBlockMs: number
  deliveryTimeoutMs: number
}

/** Coordinator errors after which the coordinator must be looked up again. */
function coordinatorMoved(code: number): boolean {
  return code === ErrorCode.NOT_COORDINATOR || code === ErrorCode.COORDINATOR_NOT_AVAILABLE
}

const codeOf = (err: unknown): ErrorCode => (err instanceof KafkaError ? err.code : ErrorCode.UNKNOWN_SERVER_ERROR)

export class TransactionManager {
  readonly transactionalId: string | null
  private readonly transactionTimeoutMs: number
  private readonly maxBlockMs: number
  private readonly deliveryTimeoutMs: number
  state: TransactionState
  producerId = -1
  producerEpoch = -1
  /** The error behind ABORTABLE_ERROR or FATAL_ERROR. */
  lastError: ProducerStateError | null = null
  private readonly partitions: PartitionSequences[] = []
  /** Idempotent: some partition asked for an epoch bump. */
  private bumpWanted = false
  /** Transactional: the transaction must end with an epoch bump (InitProducerId with the current id and epoch). */
  private epochBumpRequired = false
  private coordinatorSupportsBump = false
  /** Partitions or offsets were added: the transaction exists on the coordinator and needs EndTxn. */
  private transactionStarted = false
  private pendingAdd: PartitionSequences[] = []
  private adding: Promise<void> | null = null
  private initializing: Promise<void> | null = null
  private completing: Promise<void> | null = null
  /** Coordinator requests go one at a time, in call order (Java sends one transactional request at a time). */
  private chain: Promise<unknown> = Promise.resolve()
  private closed = false

  constructor(
    private readonly cluster: Cluster,
    private readonly hooks: ProducerHooks,
    opts: TransactionManagerOptions,
  ) {
    this.transactionalId = opts.transactionalId
    this.transactionTimeoutMs = opts.transactionTimeoutMs
    this.maxBlockMs = opts.maxBlockMs
    this.deliveryTimeoutMs = opts.deliveryTimeoutMs
    this.state = 'UNINITIALIZED'
  }

  get transactional(): boolean {
    return this.transactionalId !== null
  }

  /** A transaction is open: begun and not yet committed or aborted (Java's hasOngoingTransaction). */
  get hasOngoingTransaction(): boolean {
    return this.state === 'IN_TRANSACTION' || this.state === 'COMMITTING_TRANSACTION' || this.state === 'ABORTING_TRANSACTION' || this.state === 'ABORTABLE_ERROR'
  }

  close(): void {
    this.closed = true
  }

  // ---- per-batch decisions, called by the producer ----

  /** The partition's sequence state, created on first use. */
  sequencesFor(holder: SequencesHolder): PartitionSequences {
    let s = holder.seq
    if (s === null) {
      s = holder.seq = new PartitionSequences(holder.topic, holder.partition)
      this.partitions.push(s)
    }
    return s
  }

  /**
   * Called when a record needs a new batch of partition holder: the reason the record must be refused now
   * (a fatal error; transactional: no transaction begun, or an abortable error), else null. A
   * transactional producer starts adding the partition to the transaction here, while the batch fills.
   */
  refuseNewBatch(holder: SequencesHolder): Error | null {
    if (this.state === 'FATAL_ERROR') return this.lastError
    if (!this.transactional) return null
    if (this.state === 'ABORTABLE_ERROR') return new ProducerStateError(this.lastError!.code, `cannot send: the transaction has failed and must be aborted (${this.lastError!.message})`, false)
    if (this.state !== 'IN_TRANSACTION') {
      if (this.producerId < 0) return new IllegalStateError('cannot send before initTransactions() has completed on a transactional producer')
      return new IllegalStateError(`cannot send in state ${this.state}: call beginTransaction() first`)
    }
    const s = this.sequencesFor(holder)
    if (!s.added && !s.adding) this.addPartition(s)
    return null
  }

  /**
   * Whether head, the first batch of a partition's queue, may go into a Produce request now. False while
   * there is no producer id (InitProducerId is started), the partition is not in the transaction yet, an
   * epoch bump is pending, an earlier batch must be resent first, or 5 of its batches are in flight.
   */
  maySend(holder: SequencesHolder, head: SequencedBatch): boolean {
    if (this.state === 'FATAL_ERROR') return false
    if (this.producerId < 0) {
      this.ensureProducerId()
      return false
    }
    const s = this.sequencesFor(holder)
    if (s.bumpRequested) return false
    if (head.baseSequence !== NO_SEQUENCE) return s.inRequest === 0 && s.inFlight[0] === head
    if (this.transactional) {
      // New batches of a failed transaction would only be aborted: they wait for abortTransaction().
      if (this.state !== 'IN_TRANSACTION' && this.state !== 'COMMITTING_TRANSACTION') return false
      if (!s.added) {
        if (!s.adding) this.addPartition(s)
        return false
      }
    }
    if (s.producerId !== this.producerId || s.producerEpoch !== this.producerEpoch) {
      // The producer moved to a new id or epoch: this partition follows once its older batches are done.
      if (s.inFlight.length > 0) return false
      s.producerId = this.producerId
      s.producerEpoch = this.producerEpoch
      s.nextSequence = 0
      s.lastAckedSequence = -1
    }
    return s.inFlight.length < MAX_IN_FLIGHT_PER_PARTITION
  }

  /** b goes into a Produce request: a new batch gets its producer id, epoch and sequence now. */
  sending(holder: SequencesHolder, b: SequencedBatch): void {
    const s = holder.seq!
    if (b.baseSequence === NO_SEQUENCE) {
      b.producerId = s.producerId
      b.producerEpoch = s.producerEpoch
      b.baseSequence = s.nextSequence
      s.nextSequence = incrementSequence(s.nextSequence, b.count)
      s.inFlight.push(b)
      stampProducerState(b.bytes!, b.producerId, b.producerEpoch, b.baseSequence, this.transactional)
    }
    b.inRequest = true
    s.inRequest++
  }

  /** The request carrying b was answered or failed. */
  requestDone(holder: SequencesHolder, b: SequencedBatch): void {
    if (!b.inRequest) return
    b.inRequest = false
    holder.seq!.inRequest--
  }

  /**
   * What to do with a sent batch the broker did not take: 'retry' (resend it, in its place), 'duplicate'
   * (the broker already has it: success without an offset, as the Java client does) or 'fail'.
   */
  produceErrorVerdict(holder: SequencesHolder, b: SequencedBatch, err: Error): 'retry' | 'duplicate' | 'fail' {
    const s = holder.seq!
    const code = err instanceof KafkaError ? err.code : null
    if (code === ErrorCode.DUPLICATE_SEQUENCE_NUMBER) return 'duplicate'
    if (code === ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER) {
      // An earlier batch is missing at the broker (it failed or is being resent): this one follows it.
      if (s.inFlight[0] !== b) return 'retry'
      // The first unacknowledged batch itself does not follow what the broker has: a real gap.
      if (this.transactional) return 'fail'
      this.requestBump(s)
      return 'retry'
    }
    if (code === ErrorCode.UNKNOWN_PRODUCER_ID) {
      // The broker has no state for this producer here (it expired, or the partition was recreated). For
      // a batch behind an unacknowledged one that may only mean the one before is not written yet: it is
      // resent behind it; the first one starts the partition again at sequence 0 of a new epoch.
      if (this.transactional) return 'fail'
      if (s.inFlight[0] === b) this.requestBump(s)
      return 'retry'
    }
    return isRetriableError(err) ? 'retry' : 'fail'
  }

  /**
   * b completed: acknowledged (err null) or failed. definite: the broker refused it, so it is not in the
   * log. Returns the batches now known to be written although their own answers are missing: the broker
   * takes a sequence only right after the one before, so an acknowledged batch vouches for the
   * unacknowledged ones ahead of it (a retry of such a batch could no longer be recognised once it falls
   * out of the broker's last 5, and would be refused as out of order). The producer completes them as
   * written, without an offset, as the Java client does with DUPLICATE_SEQUENCE_NUMBER.
   */
  completed(holder: SequencesHolder, b: SequencedBatch, err: Error | null, definite: boolean): SequencedBatch[] | null {
    const s = holder.seq
    let sent = false
    let vouched: SequencedBatch[] | null = null
    if (s !== null && b.baseSequence !== NO_SEQUENCE) {
      const i = s.inFlight.indexOf(b)
      if (i >= 0) {
        if (err === null && i > 0) vouched = s.inFlight.slice(0, i).filter((e) => e.producerId === b.producerId && e.producerEpoch === b.producerEpoch)
        s.inFlight.splice(i, 1)
        sent = true
      }
      if (err === null && b.producerId === s.producerId && b.producerEpoch === s.producerEpoch) s.lastAckedSequence = incrementSequence(b.baseSequence, b.count - 1)
    }
    if (err !== null) this.batchFailed(s, err, sent, definite)
    return vouched !== null && vouched.length > 0 ? vouched : null
  }

  /** A record refused before it joined a batch: for a transactional producer the transaction cannot commit. */
  recordRefused(err: Error): void {
    if (this.transactional && !(err instanceof IllegalStateError) && !(err instanceof ProducerStateError)) this.abortableError(err)
  }

  private batchFailed(s: PartitionSequences | null, err: Error, sent: boolean, definite: boolean): void {
    if (this.state === 'FATAL_ERROR' || err instanceof TransactionAbortedError) return
    const code = codeOf(err)
    if (code === ErrorCode.CLUSTER_AUTHORIZATION_FAILED || code === ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED || code === ErrorCode.UNSUPPORTED_VERSION || code === ErrorCode.PRODUCER_FENCED) {
      this.fatalError(code, err.message)
      return
    }
    if (this.transactional) {
      if (sent && !this.coordinatorSupportsBump) {
        // The sequences of this partition may now have a gap that only an epoch bump could clear.
        this.fatalError(code, `${err.message} (a sent batch failed and the transaction coordinator cannot bump the epoch: the producer cannot go on)`)
        return
      }
      this.abortableError(err)
      return
    }
    // Idempotent: a batch the broker refused leaves a gap in the sequences; start the partition again at
    // sequence 0 of a new epoch. A batch whose fate is unknown (it expired after being sent) may be in the
    // log: the next batch tells, being acknowledged or refused as out of order (which bumps the epoch then).
    if (sent && definite && s !== null) this.requestBump(s)
  }

  private requestBump(s: PartitionSequences): void {
    s.bumpRequested = true
    this.bumpWanted = true
  }

  /**
   * Idempotent producer: performs the epoch bump the partitions asked for, for those with no request
   * unanswered: the epoch goes up by one (or a new producer id is fetched when it is exhausted) and their
   * unacknowledged batches get new sequences from 0. Called before each send round.
   */
  maybeBumpEpoch(): void {
    if (!this.bumpWanted || this.producerId < 0 || this.state === 'FATAL_ERROR') return
    const ready = this.partitions.filter((s) => s.bumpRequested && s.inRequest === 0)
    if (ready.length === 0) return
    if (ready.some((s) => s.producerId === this.producerId && s.producerEpoch === this.producerEpoch)) {
      if (this.producerEpoch >= MAX_EPOCH) {
        this.producerId = -1
        this.producerEpoch = -1
        this.ensureProducerId()
        return
      }
      this.producerEpoch++
    }
    for (const s of ready) {
      let seq = 0
      for (const b of s.inFlight) {
        b.producerId = this.producerId
        b.producerEpoch = this.producerEpoch
        b.baseSequence = seq
        seq = incrementSequence(seq, b.count)
        stampProducerState(b.bytes!, b.producerId, b.producerEpoch, b.baseSequence, false)
      }
      s.producerId = this.producerId
      s.producerEpoch = this.producerEpoch
      s.nextSequence = seq
      s.lastAckedSequence = -1
      s.bumpRequested = false
    }
    this.bumpWanted = this.partitions.some((s) => s.bumpRequested)
  }

  // ---- errors ----

  private fatalError(code: ErrorCode, message: string): void {
    if (this.state === 'FATAL_ERROR') return
    this.state = 'FATAL_ERROR'
    this.lastError = new ProducerStateError(code, message, true)
    const err = this.lastError
    // Not from inside the caller's loop over batches: the failures are delivered right after.
    queueMicrotask(() => this.hooks.failAll(err))
  }

  private fenced(): void {
    this.fatalError(ErrorCode.PRODUCER_FENCED, `the producer was fenced: a newer producer with transactional.id '${this.transactionalId}' was initialized (or this one's epoch is stale)`)
  }

  private abortableError(err: Error): void {
    if (this.state === 'FATAL_ERROR' || this.state === 'ABORTING_TRANSACTION' || this.state === 'ABORTABLE_ERROR') return
    this.state = 'ABORTABLE_ERROR'
    this.lastError = err instanceof ProducerStateError ? err : new ProducerStateError(codeOf(err), err.message, false)
    if (this.coordinatorSupportsBump) this.epochBumpRequired = true
    const reason = this.lastError
    // Records not sent yet would only be aborted: they fail now, and new ones are refused until the abort.
    queueMicrotask(() => this.hooks.failUnsent(reason, false))
  }

  /** abortableError where the coordinator can bump the epoch, else fatal (Java's abortableErrorIfPossible). */
  private abortableErrorIfPossible(code: ErrorCode, message: string): void {
    if (this.coordinatorSupportsBump) this.abortableError(new ProducerStateError(code, message, false))
    else this.fatalError(code, message)
  }

  /** Throws lastError when the producer is in an error state (abortable errors allowed when abortable). */
  private throwIfFailed(abortableOk = false): void {
    if (this.state === 'FATAL_ERROR') throw this.lastError!
    if (this.state === 'ABORTABLE_ERROR' && !abortableOk) throw this.lastError!
  }

  private ensureTransactional(method: string): void {
    if (!this.transactional) throw new IllegalStateError(`${method}() needs a transactional producer (transactional.id)`)
  }

  // ---- coordinator requests ----

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.chain.then(fn, fn)
    this.chain = run.catch(() => {})
    return run
  }

  /**
   * Runs attempt until it does not throw a retriable error, with a backoff between tries, for at most
   * timeoutMs. attempt throws KafkaError for an error code; NOT_COORDINATOR and COORDINATOR_NOT_AVAILABLE
   * make the coordinator of (key, keyType) be looked up again.
   */
  private async retrying<T>(what: string, key: string, keyType: number, timeoutMs: number, attempt: (conn: BrokerConnection) => Promise<T>, backoffFor?: (code: number) => number, stillWanted?: () => boolean): Promise<T> {
    const deadline = Date.now() + timeoutMs
    for (let n = 0; ; n++) {
      if (stillWanted !== undefined && !stillWanted()) throw new TransactionAbortedError(`${what} was given up: the transaction is over`)
      let lastErr: unknown
      try {
        const conn = await this.cluster.coordinator(key, keyType)
        return await attempt(conn)
      } catch (err) {
        lastErr = err
        if (!isRetriableError(err)) throw err
        if (err instanceof KafkaError && coordinatorMoved(err.code)) this.cluster.forgetCoordinator(key, keyType)
      }
      if (this.closed) throw lastErr
      const code = lastErr instanceof KafkaError ? lastErr.code : -1
      const backoff = backoffFor?.(code) ?? Math.min(this.cluster.retryBackoffMs * 2 ** Math.min(n, 5), 1000)
      if (Date.now() + backoff >= deadline) throw new TimeoutError(`${what} did not complete within ${timeoutMs} ms: ${(lastErr as Error).message}`)
      await sleep(backoff)
    }
  }

  /** Idempotent producer: fetches a producer id (any broker answers) unless one is being fetched. */
  ensureProducerId(): void {
    if (this.transactional || this.initializing !== null || this.producerId >= 0 || this.state === 'FATAL_ERROR' || this.closed) return
    this.initializing = this.fetchIdempotentProducerId().finally(() => {
      this.initializing = null
      this.hooks.wake()
    })
  }

  private async fetchIdempotentProducerId(): Promise<void> {
    const req = InitProducerId.createInitProducerIdRequest({ transactionalId: null, transactionTimeoutMs: 0x7fffffff, producerId: -1n, producerEpoch: -1 })
    const deadline = Date.now() + this.deliveryTimeoutMs
    for (let n = 0; !this.closed; n++) {
      let err: Error
      try {
        const conn = await this.cluster.anyConnection()
        const res = await conn.send(ApiKey.InitProducerId, (w, v) => InitProducerId.encodeInitProducerIdRequest(w, req, v), InitProducerId.decodeInitProducerIdResponse)
        if (res.errorCode === ErrorCode.NONE) {
          this.producerId = Number(res.producerId)
          this.producerEpoch = res.producerEpoch
          this.state = 'READY'
          return
        }
        err = new KafkaError(res.errorCode as ErrorCode, 'InitProducerId')
      } catch (e) {
        err = e as Error
      }
      if (!isRetriableError(err)) {
        this.fatalError(codeOf(err), `cannot get a producer id for the idempotent producer: ${err.message}`)
        return
      }
      // Retried at the next send round; the batches waiting meanwhile expire after delivery.timeout.ms.
      if (Date.now() >= deadline) return
      await sleep(Math.min(this.cluster.retryBackoffMs * 2 ** Math.min(n, 5), 1000))
    }
  }

  /** InitProducerId with the transactional id: a new producer id or the same one with a higher epoch. */
  private async transactionalInitProducerId(bump: boolean): Promise<void> {
    const key = this.transactionalId!
    const res = await this.retrying('InitProducerId', key, 1, this.maxBlockMs, async (conn) => {
      this.coordinatorSupportsBump = conn.supports(ApiKey.InitProducerId) && conn.version(ApiKey.InitProducerId) >= 3
      const req = InitProducerId.createInitProducerIdRequest({
        transactionalId: key,
        transactionTimeoutMs: this.transactionTimeoutMs,
        producerId: bump ? BigInt(this.producerId) : -1n,
        producerEpoch: bump ? this.producerEpoch : -1,
      })
      const r = await conn.send(ApiKey.InitProducerId, (w, v) => InitProducerId.encodeInitProducerIdRequest(w, req, v), InitProducerId.decodeInitProducerIdResponse)
      if (r.errorCode !== ErrorCode.NONE && isRetriable(r.errorCode)) throw new KafkaError(r.errorCode as ErrorCode, `InitProducerId for '${key}'`)
      return r
    })
    switch (res.errorCode) {
      case ErrorCode.NONE:
        this.producerId = Number(res.producerId)
        this.producerEpoch = res.producerEpoch
        // Every partition starts again at sequence 0 of the new epoch.
        for (const s of this.partitions) {
          s.producerId = -1
          s.producerEpoch = -1
        }
        return
      case ErrorCode.INVALID_PRODUCER_EPOCH:
      case ErrorCode.PRODUCER_FENCED:
        this.fenced()
        break
      case ErrorCode.TRANSACTION_ABORTABLE:
        this.abortableError(new KafkaError(res.errorCode, `InitProducerId for '${key}'`))
        break
      default:
        this.fatalError(res.errorCode as ErrorCode, `InitProducerId for '${key}'${res.errorCode === ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED || res.errorCode === ErrorCode.CLUSTER_AUTHORIZATION_FAILED ? '' : ': unexpected error'}`)
    }
    throw this.lastError!
  }

  private addPartition(s: PartitionSequences): void {
    s.adding = true
    this.pendingAdd.push(s)
    this.kickAdd()
  }

  private kickAdd(): void {
    if (this.adding !== null || this.pendingAdd.length === 0) return
    const list = this.pendingAdd
    this.pendingAdd = []
    this.adding = this.serial(() => this.addPartitions(list))
      .catch((err: unknown) => {
        for (const s of list) s.adding = false
        if (!(err instanceof ProducerStateError) && !(err instanceof TransactionAbortedError)) this.abortableError(err as Error)
      })
      .finally(() => {
        this.adding = null
        this.kickAdd()
        this.hooks.wake()
      })
  }

  /** AddPartitionsToTxn for partitions (one request, retried as a whole). */
  private async addPartitions(list: PartitionSequences[]): Promise<void> {
    if (this.state !== 'IN_TRANSACTION' && this.state !== 'COMMITTING_TRANSACTION') {
      for (const s of list) s.adding = false
      return
    }
    const key = this.transactionalId!
    const byTopic = new Map<string, number[]>()
    for (const s of list) {
      let ps = byTopic.get(s.topic)
      if (ps === undefined) byTopic.set(s.topic, (ps = []))
      ps.push(s.partition)
    }
    const req = AddPartitionsToTxn.createAddPartitionsToTxnRequest({
      v3AndBelowTransactionalId: key,
      v3AndBelowProducerId: BigInt(this.producerId),
      v3AndBelowProducerEpoch: this.producerEpoch,
      v3AndBelowTopics: [...byTopic].map(([name, partitions]) => AddPartitionsToTxn.createAddPartitionsToTxnTopic({ name, partitions })),
    })
    const firstOfTransaction = !this.partitions.some((s) => s.added)
    const errors = await this.retrying(
      'AddPartitionsToTxn',
      key,
      1,
      this.deliveryTimeoutMs,
      async (conn) => {
        const res = await conn.send(ApiKey.AddPartitionsToTxn, (w, v) => AddPartitionsToTxn.encodeAddPartitionsToTxnRequest(w, req, v), AddPartitionsToTxn.decodeAddPartitionsToTxnResponse)
        const codes: { topic: string; partition: number; code: number }[] = []
        for (const t of res.resultsByTopicV3AndBelow) for (const p of t.resultsByPartition) codes.push({ topic: t.name, partition: p.partitionIndex, code: p.partitionErrorCode })
        // One retriable error retries the whole request (Java: reenqueue).
        const retriable = codes.find((c) => c.code !== ErrorCode.NONE && isRetriable(c.code))
        if (retriable !== undefined) throw new KafkaError(retriable.code as ErrorCode, `AddPartitionsToTxn ${retriable.topic}-${retriable.partition}`)
        return codes
      },
      (code) => (code === ErrorCode.CONCURRENT_TRANSACTIONS && firstOfTransaction ? CONCURRENT_TRANSACTIONS_BACKOFF_MS : Math.min(this.cluster.retryBackoffMs, 1000)),
      // An abort (or a fatal error) meanwhile makes the partitions unneeded.
      () => this.state === 'IN_TRANSACTION' || this.state === 'COMMITTING_TRANSACTION',
    )
    for (const s of list) s.adding = false
    const failed = errors.filter((e) => e.code !== ErrorCode.NONE)
    for (const e of failed) {
      switch (e.code) {
        case ErrorCode.INVALID_PRODUCER_EPOCH:
        case ErrorCode.PRODUCER_FENCED:
          this.fenced()
          return
        case ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
        case ErrorCode.INVALID_TXN_STATE:
          this.fatalError(e.code as ErrorCode, `AddPartitionsToTxn ${e.topic}-${e.partition}`)
          return
        case ErrorCode.UNKNOWN_PRODUCER_ID:
        case ErrorCode.INVALID_PRODUCER_ID_MAPPING:
          this.abortableErrorIfPossible(e.code as ErrorCode, `AddPartitionsToTxn ${e.topic}-${e.partition}`)
          return
      }
    }
    if (failed.length > 0) {
      // TOPIC_AUTHORIZATION_FAILED, OPERATION_NOT_ATTEMPTED beside another partition's error, TRANSACTION_ABORTABLE, ...
      const real = failed.find((e) => e.code !== ErrorCode.OPERATION_NOT_ATTEMPTED) ?? failed[0]!
      this.abortableError(new KafkaError(real.code as ErrorCode, `could not add ${failed.map((e) => `${e.topic}-${e.partition} (${errorName(e.code)})`).join(', ')} to the transaction`))
      return
    }
    for (const s of list) s.added = true
    if (list.length > 0) this.transactionStarted = true
  }

  // ---- the transactional API ----

  async initTransactions(): Promise<void> {
    this.ensureTransactional('initTransactions')
    this.throwIfFailed()
    if (this.initializing !== null) return this.initializing
    if (this.state !== 'UNINITIALIZED' && this.state !== 'INITIALIZING') throw new IllegalStateError(`initTransactions() was already called (state ${this.state})`)
    this.state = 'INITIALIZING'
    this.initializing = this.serial(async () => {
      await this.transactionalInitProducerId(false)
      this.state = 'READY'
    }).finally(() => {
      this.initializing = null
    })
    return this.initializing
  }

  beginTransaction(): void {
    this.ensureTransactional('beginTransaction')
    this.throwIfFailed()
    if (this.state !== 'READY') throw new IllegalStateError(this.state === 'UNINITIALIZED' || this.state === 'INITIALIZING' ? 'beginTransaction() before initTransactions() has completed' : `beginTransaction() in state ${this.state}: the previous transaction is not finished`)
    this.state = 'IN_TRANSACTION'
  }

  async sendOffsetsToTransaction(offsets: readonly TopicPartitionOffset[], group: ConsumerGroupMetadata): Promise<void> {
    this.ensureTransactional('sendOffsetsToTransaction')
    this.throwIfFailed()
    if (this.state !== 'IN_TRANSACTION') throw new IllegalStateError(`sendOffsetsToTransaction() outside a transaction (state ${this.state})`)
    await this.serial(async () => {
      this.throwIfFailed()
      try {
        await this.addOffsets(group.groupId)
        await this.commitTxnOffsets(offsets, group)
      } catch (err) {
        if (err instanceof ProducerStateError) throw err
        // Out of retries (a timeout): the transaction cannot go on.
        this.abortableError(err as Error)
        throw this.lastError!
      }
    })
  }

  private async addOffsets(groupId: string): Promise<void> {
    const key = this.transactionalId!
    const req = AddOffsetsToTxn.createAddOffsetsToTxnRequest({ transactionalId: key, producerId: BigInt(this.producerId), producerEpoch: this.producerEpoch, groupId })
    const code = await this.retrying('AddOffsetsToTxn', key, 1, this.maxBlockMs, async (conn) => {
      const res = await conn.send(ApiKey.AddOffsetsToTxn, (w, v) => AddOffsetsToTxn.encodeAddOffsetsToTxnRequest(w, req, v), AddOffsetsToTxn.decodeAddOffsetsToTxnResponse)
      if (res.errorCode !== ErrorCode.NONE && isRetriable(res.errorCode)) throw new KafkaError(res.errorCode as ErrorCode, `AddOffsetsToTxn for group '${groupId}'`)
      return res.errorCode
    })
    switch (code) {
      case ErrorCode.NONE:
        this.transactionStarted = true
        return
      case ErrorCode.INVALID_PRODUCER_EPOCH:
      case ErrorCode.PRODUCER_FENCED:
        this.fenced()
        break
      case ErrorCode.UNKNOWN_PRODUCER_ID:
      case ErrorCode.INVALID_PRODUCER_ID_MAPPING:
        this.abortableErrorIfPossible(code, `AddOffsetsToTxn for group '${groupId}'`)
        break
      case ErrorCode.GROUP_AUTHORIZATION_FAILED:
      case ErrorCode.TRANSACTION_ABORTABLE:
        this.abortableError(new KafkaError(code, `AddOffsetsToTxn for group '${groupId}'`))
        break
      default:
        this.fatalError(code as ErrorCode, `AddOffsetsToTxn for group '${groupId}'`)
    }
    throw this.lastError!
  }

  private async commitTxnOffsets(offsets: readonly TopicPartitionOffset[], group: ConsumerGroupMetadata): Promise<void> {
    const key = this.transactionalId!
    let pending = [...offsets]
    const deadline = Date.now() + this.maxBlockMs
    for (let n = 0; pending.length > 0; n++) {
      const byTopic = new Map<string, TxnOffsetCommit.TxnOffsetCommitRequestPartition[]>()
      for (const o of pending) {
        let list = byTopic.get(o.topic)
        if (list === undefined) byTopic.set(o.topic, (list = []))
        list.push(TxnOffsetCommit.createTxnOffsetCommitRequestPartition({ partitionIndex: o.partition, committedOffset: BigInt(o.offset), committedLeaderEpoch: o.leaderEpoch ?? -1, committedMetadata: o.metadata ?? '' }))
      }
      const req = TxnOffsetCommit.createTxnOffsetCommitRequest({
        transactionalId: key,
        groupId: group.groupId,
        producerId: BigInt(this.producerId),
        producerEpoch: this.producerEpoch,
        generationId: group.generationId,
        memberId: group.memberId,
        groupInstanceId: group.groupInstanceId,
        topics: [...byTopic].map(([name, partitions]) => TxnOffsetCommit.createTxnOffsetCommitRequestTopic({ name, partitions })),
      })
      const res = await this.retrying('TxnOffsetCommit', group.groupId, 0, Math.max(1, deadline - Date.now()), async (conn) =>
        conn.send(ApiKey.TxnOffsetCommit, (w, v) => TxnOffsetCommit.encodeTxnOffsetCommitRequest(w, req, v), TxnOffsetCommit.decodeTxnOffsetCommitResponse),
      )
      const retry: TopicPartitionOffset[] = []
      let firstRetriable: KafkaError | null = null
      for (const t of res.topics) {
        for (const p of t.partitions) {
          const code = p.errorCode as ErrorCode
          if (code === ErrorCode.NONE) continue
          const what = `TxnOffsetCommit ${t.name}-${p.partitionIndex} for group '${group.groupId}'`
          if (coordinatorMoved(code) || code === ErrorCode.REQUEST_TIMED_OUT || code === ErrorCode.UNKNOWN_TOPIC_OR_PARTITION || code === ErrorCode.COORDINATOR_LOAD_IN_PROGRESS || code === ErrorCode.CONCURRENT_TRANSACTIONS) {
            if (coordinatorMoved(code) || code === ErrorCode.REQUEST_TIMED_OUT) this.cluster.forgetCoordinator(group.groupId, 0)
            const o = pending.find((x) => x.topic === t.name && x.partition === p.partitionIndex)
            if (o !== undefined) retry.push(o)
            firstRetriable ??= new KafkaError(code, what)
            continue
          }
          switch (code) {
            case ErrorCode.INVALID_PRODUCER_EPOCH:
            case ErrorCode.PRODUCER_FENCED:
              this.fenced()
              break
            case ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
            case ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT:
              this.fatalError(code, what)
              break
            case ErrorCode.UNKNOWN_MEMBER_ID:
            case ErrorCode.ILLEGAL_GENERATION:
              this.abortableError(new KafkaError(code, `${what}: the consumer group's metadata does not match (a rebalance happened: this member's offsets cannot be committed)`))
              break
            case ErrorCode.GROUP_AUTHORIZATION_FAILED:
            case ErrorCode.FENCED_INSTANCE_ID:
            case ErrorCode.TRANSACTION_ABORTABLE:
              this.abortableError(new KafkaError(code, what))
              break
            default:
              this.fatalError(code, `${what}: unexpected error`)
          }
          throw this.lastError!
        }
      }
      pending = retry
      if (pending.length === 0) return
      const backoff = Math.min(this.cluster.retryBackoffMs * 2 ** Math.min(n, 5), 1000)
      if (Date.now() + backoff >= deadline) throw new TimeoutError(`TxnOffsetCommit did not complete within ${this.maxBlockMs} ms: ${firstRetriable?.message ?? ''}`)
      await sleep(backoff)
    }
  }

  async commitTransaction(): Promise<void> {
    this.ensureTransactional('commitTransaction')
    this.throwIfFailed()
    // A commit that timed out may be called again: it goes on where it was.
    if (this.state === 'COMMITTING_TRANSACTION') {
      if (this.completing !== null) return this.completing
      return (this.completing = this.finishCommit().finally(() => (this.completing = null)))
    }
    if (this.state !== 'IN_TRANSACTION') throw new IllegalStateError(`commitTransaction() outside a transaction (state ${this.state})`)
    this.state = 'COMMITTING_TRANSACTION'
    return (this.completing = this.finishCommit().finally(() => (this.completing = null)))
  }

  private async finishCommit(): Promise<void> {
    // Every record of the transaction must be written (and so its partition added) before EndTxn.
    await this.hooks.flush()
    while (this.adding !== null) await this.adding
    this.throwIfFailed()
    await this.serial(async () => {
      this.throwIfFailed()
      if (this.transactionStarted) await this.endTxn(true)
    })
    this.transactionCompleted()
  }

  async abortTransaction(): Promise<void> {
    this.ensureTransactional('abortTransaction')
    this.throwIfFailed(true)
    if (this.state === 'ABORTING_TRANSACTION') {
      if (this.completing !== null) return this.completing
      return (this.completing = this.finishAbort().finally(() => (this.completing = null)))
    }
    if (this.state !== 'IN_TRANSACTION' && this.state !== 'ABORTABLE_ERROR') throw new IllegalStateError(`abortTransaction() outside a transaction (state ${this.state})`)
    this.state = 'ABORTING_TRANSACTION'
    for (const s of this.pendingAdd) s.adding = false
    this.pendingAdd = []
    return (this.completing = this.finishAbort().finally(() => (this.completing = null)))
  }

  private async finishAbort(): Promise<void> {
    // Records not sent are dropped; sent ones are waited for (resent if need be) unless the epoch will be
    // bumped, which makes their sequences irrelevant.
    this.hooks.failUnsent(new TransactionAbortedError(), this.epochBumpRequired)
    await this.hooks.flush()
    while (this.adding !== null) await this.adding
    this.throwIfFailed()
    await this.serial(async () => {
      this.throwIfFailed()
      // An unknown producer id mapping is refused by EndTxn too: only the epoch bump can help then.
      if (this.transactionStarted && this.lastError?.code !== ErrorCode.INVALID_PRODUCER_ID_MAPPING) await this.endTxn(false)
      if (this.epochBumpRequired) await this.transactionalInitProducerId(true)
    })
    this.transactionCompleted()
  }

  private async endTxn(committed: boolean): Promise<void> {
    const key = this.transactionalId!
    const req = EndTxn.createEndTxnRequest({ transactionalId: key, producerId: BigInt(this.producerId), producerEpoch: this.producerEpoch, committed })
    const what = `EndTxn(${committed ? 'commit' : 'abort'}) for '${key}'`
    const code = await this.retrying(what, key, 1, this.maxBlockMs, async (conn) => {
      const res = await conn.send(ApiKey.EndTxn, (w, v) => EndTxn.encodeEndTxnRequest(w, req, v), EndTxn.decodeEndTxnResponse)
      if (res.errorCode !== ErrorCode.NONE && isRetriable(res.errorCode)) throw new KafkaError(res.errorCode as ErrorCode, what)
      return res.errorCode
    })
    switch (code) {
      case ErrorCode.NONE:
        return
      case ErrorCode.INVALID_PRODUCER_EPOCH:
      case ErrorCode.PRODUCER_FENCED:
        this.fenced()
        break
      case ErrorCode.UNKNOWN_PRODUCER_ID:
      case ErrorCode.INVALID_PRODUCER_ID_MAPPING:
        this.abortableErrorIfPossible(code, what)
        break
      case ErrorCode.TRANSACTION_ABORTABLE:
        this.abortableError(new KafkaError(code, what))
        break
      default:
        this.fatalError(code as ErrorCode, what)
    }
    throw this.lastError!
  }

  private transactionCompleted(): void {
    this.state = 'READY'
    this.lastError = null
    this.epochBumpRequired = false
    this.transactionStarted = false
    for (const s of this.partitions) {
      s.added = false
      s.adding = false
    }
  }
}
