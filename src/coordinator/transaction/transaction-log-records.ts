// The records of __transaction_state, byte for byte as Kafka writes them (TransactionLogKey /
// TransactionLogValue), so Kafka's tools can read a Skein partition and the other way round.
//
// The formats are Kafka's JSON definitions (scripts/coordinator-records/transaction-coordinator/),
// turned into ./generated/*.gen.ts by `npm run gen:protocol`; this file picks the versions to write
// and maps the generated structs to the coordinator's types. Framing (Kafka's): a key or value is an
// int16 version and then the struct in that version.
//
//   key   v0: transactionalId
//   value v0: producerId | producerEpoch | transactionTimeoutMs | transactionStatus |
//             transactionPartitions (nullable) [topic | partitionIds [int32]] |
//             transactionLastUpdateTimestampMs | transactionStartTimestampMs
//         v1: v0, flexible, with the tagged fields previousProducerId (0), nextProducerId (1) and
//             clientTransactionVersion (2), which Kafka writes once the transaction.version feature is >= 1
//             (the default of a Kafka 4.0 cluster); the two producer ids are set since KAFKA-20310
//   transactionStatus: 0 Empty, 1 Ongoing, 2 PrepareCommit, 3 PrepareAbort, 4 CompleteCommit,
//                      5 CompleteAbort, 6 Dead, 7 PrepareEpochFence.
//   A null value (tombstone) removes the transactional id (it expired).
//
// We write v1 as a Kafka 4.x cluster does (transaction.version >= 1), with the previous producer id (the
// id before the transition the record makes: a different one after a producer id rotation, KIP-360),
// the next producer id (-1: Skein has no transaction.version 2 epoch bumps, so no id is ever pending)
// and client transaction version 0; an Empty transaction's partitions are null, as Kafka writes them. We
// read v0 (previous and next producer id -1) and v1. The previous producer *epoch* is in no version of
// this schema (Kafka keeps it in memory, KAFKA-20357 adds it later). Recovery: ordinary records
// of a compacted partition; the coordinator rebuilds every transactional id by replaying them in
// offset order (the last record per key wins), then finishes any transaction found in
// PrepareCommit/PrepareAbort. The generated decoders check each length against the bytes left before
// allocating; malformed input throws CoordinatorRecordError.
import { CoordinatorRecordError, recordCodec, safeNumber } from '../runtime/record-error.js'
import {
  decodeTransactionCoordinatorRecordKey,
  decodeTransactionLogValueRecord,
  encodeTransactionLogKeyRecord,
  encodeTransactionLogValueRecord,
} from './generated/records.gen.js'
import { createPartitionsSchema, createTransactionLogValue } from './generated/transaction-log-value.gen.js'

export { CoordinatorRecordError }

export const TRANSACTION_KEY_VERSION = 0
export const TRANSACTION_VALUE_VERSION = 1
/** Kafka's RecordBatch.NO_PRODUCER_ID. */
export const NO_PRODUCER_ID = -1

export const TxnStatus = {
  Empty: 0,
  Ongoing: 1,
  PrepareCommit: 2,
  PrepareAbort: 3,
  CompleteCommit: 4,
  CompleteAbort: 5,
  Dead: 6,
  PrepareEpochFence: 7,
} as const
export type TxnStatus = (typeof TxnStatus)[keyof typeof TxnStatus]

const STATUS_NAMES = ['Empty', 'Ongoing', 'PrepareCommit', 'PrepareAbort', 'CompleteCommit', 'CompleteAbort', 'Dead', 'PrepareEpochFence'] as const
export type TxnStatusName = (typeof STATUS_NAMES)[number]

/** Kafka's TransactionState name (DescribeTransactions, ListTransactions filters). */
export function txnStatusName(s: TxnStatus): TxnStatusName {
  return STATUS_NAMES[s]!
}

export function txnStatusFromName(name: string): TxnStatus | undefined {
  const i = (STATUS_NAMES as readonly string[]).indexOf(name)
  return i < 0 ? undefined : (i as TxnStatus)
}

export interface TransactionLogValue {
  producerId: number
  /** The producer id before this transition (v1; -1 when unknown: v0 records). */
  previousProducerId: number
  /** The producer id handed out once the transaction completes (transaction.version 2); -1 when none. */
  nextProducerId: number
  producerEpoch: number
  transactionTimeoutMs: number
  status: TxnStatus
  /** topic -> partitions, in the order added */
  partitions: { topic: string; partitions: number[] }[]
  lastUpdateTimestamp: number
  startTimestamp: number
  /** The transaction.version feature level the client used (0: EndTxn below v5). */
  clientTransactionVersion: number
}

// ---- writing -------------------------------------------------------------------------------------

export function encodeTransactionKey(transactionalId: string): Buffer {
  return recordCodec('TransactionLogKey', () => encodeTransactionLogKeyRecord({ transactionalId }, TRANSACTION_KEY_VERSION))
}

export function encodeTransactionValue(v: TransactionLogValue): Buffer {
  const value = createTransactionLogValue({
    producerId: BigInt(v.producerId),
    previousProducerId: BigInt(v.previousProducerId),
    nextProducerId: BigInt(v.nextProducerId),
    producerEpoch: v.producerEpoch,
    transactionTimeoutMs: v.transactionTimeoutMs,
    transactionStatus: v.status,
    // Kafka writes null for an Empty transaction (it has no partitions).
    transactionPartitions: v.status === TxnStatus.Empty ? null : v.partitions.map((t) => createPartitionsSchema({ topic: t.topic, partitionIds: t.partitions })),
    transactionLastUpdateTimestampMs: BigInt(v.lastUpdateTimestamp),
    transactionStartTimestampMs: BigInt(v.startTimestamp),
    clientTransactionVersion: v.clientTransactionVersion,
  })
  return recordCodec('TransactionLogValue', () => encodeTransactionLogValueRecord(value, TRANSACTION_VALUE_VERSION))
}

// ---- reading -------------------------------------------------------------------------------------

export function decodeTransactionKey(buf: Buffer): string {
  const key = recordCodec('__transaction_state key', () => decodeTransactionCoordinatorRecordKey(buf))
  if (key.type === 'unknown') throw new CoordinatorRecordError(`unknown __transaction_state key version ${key.version}`)
  return key.key.transactionalId
}

export function decodeTransactionValue(buf: Buffer): TransactionLogValue {
  const { value: v } = recordCodec('TransactionLogValue', () => decodeTransactionLogValueRecord(buf))
  const status = v.transactionStatus
  if (status < 0 || status > 7) throw new CoordinatorRecordError(`unknown transaction status ${status}`)
  return {
    producerId: safeNumber(v.producerId, 'producer id'),
    previousProducerId: safeNumber(v.previousProducerId, 'previous producer id'),
    nextProducerId: safeNumber(v.nextProducerId, 'next producer id'),
    producerEpoch: v.producerEpoch,
    transactionTimeoutMs: v.transactionTimeoutMs,
    status: status as TxnStatus,
    partitions: (v.transactionPartitions ?? []).map((t) => ({ topic: t.topic, partitions: t.partitionIds })),
    lastUpdateTimestamp: safeNumber(v.transactionLastUpdateTimestampMs, 'last update timestamp'),
    startTimestamp: safeNumber(v.transactionStartTimestampMs, 'start timestamp'),
    clientTransactionVersion: v.clientTransactionVersion,
  }
}
