// The records of __transaction_state, byte for byte as Kafka writes them (TransactionLogKey /
// TransactionLogValue), so Kafka's tools can read a Skein partition and the other way round.
//
//   key   version INT16 (= 0) | transactionalId STRING
//   value version INT16 (0 or 1) | producerId INT64 | producerEpoch INT16 | transactionTimeoutMs INT32 |
//         transactionStatus INT8 | transactionPartitions NULLABLE ARRAY of
//           [topic STRING | partitionIds ARRAY of INT32] |
//         transactionLastUpdateTimestampMs INT64 | transactionStartTimestampMs INT64
//   v0: STRING = int16 length + UTF-8, ARRAY = int32 count (-1 = null).
//   v1: flexible: compact forms (unsigned varint length + 1, 0 = null) and tagged fields after every
//       struct (Kafka's tags there: previousProducerId, nextProducerId, clientTransactionVersion; read
//       and skipped).
//   transactionStatus: 0 Empty, 1 Ongoing, 2 PrepareCommit, 3 PrepareAbort, 4 CompleteCommit,
//                      5 CompleteAbort, 6 Dead, 7 PrepareEpochFence.
//   A null value (tombstone) removes the transactional id (it expired).
//
// We write v0 (Kafka 2.x-3.x's format) and read v0 and v1. Recovery: ordinary records of a compacted
// partition; the coordinator rebuilds every transactional id by replaying them in offset order (the
// last record per key wins), then finishes any transaction found in PrepareCommit/PrepareAbort.
// Decoding checks each length against the bytes left before allocating and throws
// TransactionRecordError on malformed input.

export class TransactionRecordError extends Error {
  override readonly name = 'TransactionRecordError'
}

export const TRANSACTION_KEY_VERSION = 0
export const TRANSACTION_VALUE_VERSION = 0

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
  producerEpoch: number
  transactionTimeoutMs: number
  status: TxnStatus
  /** topic -> partitions, in the order added */
  partitions: { topic: string; partitions: number[] }[]
  lastUpdateTimestamp: number
  startTimestamp: number
}

// ---- writing -------------------------------------------------------------------------------------

function stringBytes(s: string): Buffer {
  const b = Buffer.from(s, 'utf8')
  if (b.length > 0x7fff) throw new TransactionRecordError(`string of ${b.length} bytes is too long for a record field`)
  return b
}

export function encodeTransactionKey(transactionalId: string): Buffer {
  const id = stringBytes(transactionalId)
  const out = Buffer.allocUnsafe(4 + id.length)
  out.writeInt16BE(TRANSACTION_KEY_VERSION, 0)
  out.writeInt16BE(id.length, 2)
  id.copy(out, 4)
  return out
}

export function encodeTransactionValue(v: TransactionLogValue): Buffer {
  const topics = v.partitions.map((t) => ({ name: stringBytes(t.topic), partitions: t.partitions }))
  let size = 2 + 8 + 2 + 4 + 1 + 4 + 8 + 8
  for (const t of topics) size += 2 + t.name.length + 4 + 4 * t.partitions.length
  const out = Buffer.allocUnsafe(size)
  let at = out.writeInt16BE(TRANSACTION_VALUE_VERSION, 0)
  at = out.writeBigInt64BE(BigInt(v.producerId), at)
  at = out.writeInt16BE(v.producerEpoch, at)
  at = out.writeInt32BE(v.transactionTimeoutMs, at)
  at = out.writeInt8(v.status, at)
  at = out.writeInt32BE(topics.length, at)
  for (const t of topics) {
    at = out.writeInt16BE(t.name.length, at)
    at += t.name.copy(out, at)
    at = out.writeInt32BE(t.partitions.length, at)
    for (const p of t.partitions) at = out.writeInt32BE(p, at)
  }
  at = out.writeBigInt64BE(BigInt(v.lastUpdateTimestamp), at)
  out.writeBigInt64BE(BigInt(v.startTimestamp), at)
  return out
}

// ---- reading -------------------------------------------------------------------------------------

class In {
  at = 0
  constructor(
    private readonly buf: Buffer,
    private readonly flexible: boolean,
  ) {}

  private need(n: number, what: string): void {
    if (n < 0 || this.at + n > this.buf.length) throw new TransactionRecordError(`${what}: needs ${n} bytes, ${this.buf.length - this.at} left`)
  }
  int8(): number {
    this.need(1, 'int8')
    return this.buf.readInt8(this.at++)
  }
  int16(): number {
    this.need(2, 'int16')
    const v = this.buf.readInt16BE(this.at)
    this.at += 2
    return v
  }
  int32(): number {
    this.need(4, 'int32')
    const v = this.buf.readInt32BE(this.at)
    this.at += 4
    return v
  }
  int64(): number {
    this.need(8, 'int64')
    const v = this.buf.readBigInt64BE(this.at)
    this.at += 8
    if (v > BigInt(Number.MAX_SAFE_INTEGER) || v < BigInt(Number.MIN_SAFE_INTEGER)) throw new TransactionRecordError(`int64 ${v} is out of range`)
    return Number(v)
  }
  uvarint(): number {
    let v = 0
    for (let shift = 0; shift < 35; shift += 7) {
      this.need(1, 'varint')
      const b = this.buf[this.at++]!
      v += (b & 0x7f) * 2 ** shift
      if ((b & 0x80) === 0) return v
    }
    throw new TransactionRecordError('varint is too long')
  }
  /** Element count of an array; -1 = null. */
  arrayLength(minElementBytes: number): number {
    const n = this.flexible ? this.uvarint() - 1 : this.int32()
    if (n < -1) throw new TransactionRecordError(`array length ${n}`)
    if (n > 0) this.need(n * minElementBytes, 'array')
    return n
  }
  string(): string {
    const n = this.flexible ? this.uvarint() - 1 : this.int16()
    if (n < 0) throw new TransactionRecordError('null string where a string is required')
    this.need(n, 'string')
    const s = this.buf.toString('utf8', this.at, this.at + n)
    this.at += n
    return s
  }
  taggedFields(): void {
    if (!this.flexible) return
    const count = this.uvarint()
    for (let i = 0; i < count; i++) {
      this.uvarint()
      const size = this.uvarint()
      this.need(size, 'tagged field')
      this.at += size
    }
  }
}

export function decodeTransactionKey(buf: Buffer): string {
  const r = new In(buf, false)
  const version = r.int16()
  if (version !== TRANSACTION_KEY_VERSION) throw new TransactionRecordError(`unknown __transaction_state key version ${version}`)
  return r.string()
}

export function decodeTransactionValue(buf: Buffer): TransactionLogValue {
  const version = new In(buf, false).int16()
  if (version !== 0 && version !== 1) throw new TransactionRecordError(`unknown __transaction_state value version ${version}`)
  const r = new In(buf, version >= 1)
  r.at = 2
  const producerId = r.int64()
  const producerEpoch = r.int16()
  const transactionTimeoutMs = r.int32()
  const status = r.int8()
  if (status < 0 || status > 7) throw new TransactionRecordError(`unknown transaction status ${status}`)
  const count = r.arrayLength(version >= 1 ? 3 : 6)
  const partitions: TransactionLogValue['partitions'] = []
  for (let i = 0; i < count; i++) {
    const topic = r.string()
    const n = r.arrayLength(4)
    const ps: number[] = []
    for (let j = 0; j < n; j++) ps.push(r.int32())
    r.taggedFields()
    partitions.push({ topic, partitions: ps })
  }
  const lastUpdateTimestamp = r.int64()
  const startTimestamp = r.int64()
  r.taggedFields()
  return { producerId, producerEpoch, transactionTimeoutMs, status: status as TxnStatus, partitions, lastUpdateTimestamp, startTimestamp }
}
