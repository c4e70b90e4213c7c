// The error of a coordinator record that cannot be read or written in Kafka's format: malformed or
// truncated bytes, an unknown value version, a value out of its field's range. A state machine skips
// (and logs) such a record when replaying its partition, so that one bad record cannot stop a load.
import { ProtocolDecodeError, ProtocolEncodeError } from '../../protocol/primitives/errors.js'

export class CoordinatorRecordError extends Error {
  override readonly name = 'CoordinatorRecordError'
}

/** Runs a generated record codec, reporting its decode and encode errors as CoordinatorRecordError. */
export function recordCodec<T>(what: string, run: () => T): T {
  try {
    return run()
  } catch (err) {
    if (err instanceof ProtocolDecodeError || err instanceof ProtocolEncodeError) throw new CoordinatorRecordError(`${what}: ${err.message}`)
    throw err
  }
}

/** An int64 field as a number; beyond 2^53 it cannot be one without losing precision. */
export function safeNumber(v: bigint, what: string): number {
  if (v > BigInt(Number.MAX_SAFE_INTEGER) || v < BigInt(Number.MIN_SAFE_INTEGER)) throw new CoordinatorRecordError(`${what} ${v} is out of range`)
  return Number(v)
}
