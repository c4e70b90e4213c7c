// Client-side failures that are not a Kafka error code from a broker: a broker that cannot be reached,
// a request that got no answer in time, a closed client. Broker answers with an error code become
// KafkaError (src/domain/errors.ts) so callers switch on Kafka's codes either way.
import { ErrorCode, KafkaError, isRetriable } from '../domain/errors.js'

export { ErrorCode, KafkaError, isRetriable }

/** The broker could not be reached, or the connection broke before an answer. Retriable. */
export class ConnectionError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'ConnectionError'
  }
}

/** No answer within request.timeout.ms. Retriable. */
export class TimeoutError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'TimeoutError'
  }
}

/**
 * The peer accepted the connection but does not speak Kafka (an HTTP or TLS server, say): its answer to
 * ApiVersions is not a Kafka response. Not retriable: asking again gets the same answer.
 */
export class NotKafkaBrokerError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'NotKafkaBrokerError'
  }
}

/** Whether a client operation may succeed when tried again (after a metadata refresh and a backoff). */
export function isRetriableError(err: unknown): boolean {
  if (err instanceof ConnectionError || err instanceof TimeoutError) return true
  return err instanceof KafkaError && err.retriable
}

/** Throws a KafkaError for a non-zero error code (with the broker's message when it sent one). */
export function throwIfError(code: number, message?: string | null): void {
  if (code !== ErrorCode.NONE) throw new KafkaError(code as ErrorCode, message ?? undefined)
}

/**
 * The idempotent or transactional producer cannot go on as it is. fatal: the producer can only be closed
 * (fenced by a newer instance with the same transactional.id, not authorized, a broker that cannot serve
 * it, ...). Otherwise the error is abortable: abortTransaction(), then the producer goes on. code is the
 * Kafka error behind it (PRODUCER_FENCED for a fenced producer, whichever code the broker used).
 */
export class ProducerStateError extends KafkaError {
  readonly fatal: boolean

  constructor(code: ErrorCode, message: string, fatal: boolean) {
    super(code, message)
    this.name = 'ProducerStateError'
    this.fatal = fatal
  }
}

/** A record that was not sent because its transaction was aborted (Kafka's TransactionAbortedException). */
export class TransactionAbortedError extends Error {
  constructor(message = 'the transaction was aborted before this record was sent') {
    super(message)
    this.name = 'TransactionAbortedError'
  }
}

/** A method called in a state that does not allow it (Kafka's IllegalStateException): a bug in the caller. */
export class IllegalStateError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'IllegalStateError'
  }
}

/**
 * A client setting with a value the client cannot use (Kafka's ConfigException): a bad number, an
 * unknown acks or security.protocol, an unreadable key store. Thrown while options are built, never
 * once a client runs.
 */
export class ConfigException extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'ConfigException'
  }
}
