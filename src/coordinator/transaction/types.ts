// The transaction coordinator's operations and ports in plain types: handlers translate the wire
// messages (any version) into these; the broker implements the ports over the shard workers that
// own the partitions.
import type { ErrorCode } from '../../domain/errors.js'
import type { TxnStatusName } from './transaction-log-records.js'

export interface TransactionCoordinatorConfig {
  /** transaction.state.log.num.partitions (the topic's real partition count) */
  transactionStatePartitions: number
  /** transaction.max.timeout.ms */
  maxTimeoutMs: number
  /** transactional.id.expiration.ms */
  transactionalIdExpirationMs: number
  /** transaction.abort.timed.out.transaction.cleanup.interval.ms */
  abortTimedOutTransactionsIntervalMs: number
  /** transaction.remove.expired.transaction.cleanup.interval.ms */
  removeExpiredTransactionalIdsIntervalMs: number
}

export interface TopicPartitionRef {
  topic: string
  partition: number
}

/** One transaction marker to write (the shard router's writeTxnMarkers item). */
export interface TxnMarkerItem extends TopicPartitionRef {
  producerId: number
  producerEpoch: number
  coordinatorEpoch: number
  commit: boolean
}

/**
 * Writes COMMIT/ABORT control batches. One answer per item, in order: NONE when written;
 * UNKNOWN_TOPIC_OR_PARTITION when the partition no longer exists (the marker is dropped, as Kafka
 * does); TRANSACTION_COORDINATOR_FENCED / INVALID_PRODUCER_EPOCH when the partition has seen a newer
 * coordinator or producer epoch (the marker is obsolete); anything else is retried.
 */
export interface TxnMarkerWriter {
  writeMarkers(items: readonly TxnMarkerItem[]): Promise<{ errorCode: number }[]>
}

/** Where new producer ids come from (the broker's ProducerIdManager). */
export interface ProducerIdSource {
  nextProducerId(): Promise<number>
}

export interface ProducerIdAndEpoch {
  producerId: number
  producerEpoch: number
}

export interface InitProducerIdResult {
  errorCode: ErrorCode
  producerId: number
  producerEpoch: number
}

export interface EndTxnResult {
  errorCode: ErrorCode
}

export interface DescribedTransaction {
  transactionalId: string
  errorCode: ErrorCode
  state: TxnStatusName
  timeoutMs: number
  /** -1 when no transaction is open */
  startTimestamp: number
  producerId: number
  producerEpoch: number
  topics: { topic: string; partitions: number[] }[]
}

export interface ListedTransaction {
  transactionalId: string
  producerId: number
  state: TxnStatusName
}

export interface ListTransactionsFilter {
  /** Kafka state names; empty = all. */
  states: string[]
  /** Empty = all. */
  producerIds: number[]
  /** Only transactions running longer than this (ms); -1 = no filter (ListTransactions v1). */
  durationMs: number
}

/** A transaction whose outcome is decided (Prepare* written): what its markers need. */
export interface PreparedTransaction {
  transactionalId: string
  producerId: number
  producerEpoch: number
  /** The epoch of the __transaction_state partition's coordinator that decided it (in every marker). */
  coordinatorEpoch: number
  commit: boolean
  partitions: TopicPartitionRef[]
}
