// Small helpers shared by the transactional handlers (24, 25, 26, 28).
import { ErrorCode } from '../../../domain/errors.js'

/** A producer id from the wire as a number; null when it cannot be one this broker handed out. */
export function producerIdOf(id: bigint): number | null {
  return id >= 0n && id <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(id) : null
}

/** Kafka answers clients of versions before PRODUCER_FENCED (KIP-588) with INVALID_PRODUCER_EPOCH. */
export function fencedForVersion(code: number, old: boolean): number {
  return code === ErrorCode.PRODUCER_FENCED && old ? ErrorCode.INVALID_PRODUCER_EPOCH : code
}
