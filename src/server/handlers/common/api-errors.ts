// How handlers turn a failure into a response's error code and message, and the duplicate checks
// several admin requests make before acting.
import { ErrorCode, errorName, KafkaError } from '../../../domain/errors.js'
import type { HandlerLog } from './ports.js'

/** The error code and message of a failure, as a response carries them. */
export interface ApiError {
  errorCode: ErrorCode
  errorMessage: string | null
}

/**
 * KafkaError -> its code and message (without the code-name prefix KafkaError adds). Anything else is
 * a bug: logged, and answered UNKNOWN_SERVER_ERROR without a message, as Kafka does, so that internals
 * do not leak to clients.
 */
export function apiError(err: unknown, log: HandlerLog, what: string): ApiError {
  if (err instanceof KafkaError) return { errorCode: err.code, errorMessage: stripCodeName(err.code, err.message) }
  log.error({ err }, `${what} failed`)
  return { errorCode: ErrorCode.UNKNOWN_SERVER_ERROR, errorMessage: null }
}

/** A KafkaError's (or shard outcome's) message without the code-name prefix; null when only the name is left. */
export function stripCodeName(code: number, message: string): string | null {
  const name = errorName(code)
  if (message === name) return null
  return message.startsWith(`${name}: `) ? message.slice(name.length + 2) : message
}

/** Names that occur more than once. */
export function duplicatesOf(names: Iterable<string>): Set<string> {
  const seen = new Set<string>()
  const dups = new Set<string>()
  for (const n of names) {
    if (seen.has(n)) dups.add(n)
    seen.add(n)
  }
  return dups
}
