// Confluent REST Proxy's error answers: every failure is `{"error_code": n, "message": "..."}` with an
// HTTP status, where n is the status or a five-digit refinement of it (40401 topic not found, 40403
// consumer instance not found, 42206 payload error, 50002 Kafka error, ...), as kafka-rest's Errors and
// rest-utils' KafkaExceptionMapper assign them. fromError maps anything thrown (client errors by their
// Kafka error code) onto one of these, so no handler failure reaches the client as anything else.
import { ConnectionError, ErrorCode, KafkaError, TimeoutError } from '../client/errors.js'

export class RestError extends Error {
  constructor(
    readonly status: number,
    readonly errorCode: number,
    message: string,
  ) {
    super(message)
    this.name = 'RestError'
  }

  toJSON(): { error_code: number; message: string } {
    return { error_code: this.errorCode, message: this.message }
  }
}

export const Errors = {
  topicNotFound: (): RestError => new RestError(404, 40401, 'Topic not found.'),
  partitionNotFound: (): RestError => new RestError(404, 40402, 'Partition not found.'),
  consumerInstanceNotFound: (): RestError => new RestError(404, 40403, 'Consumer instance not found.'),
  unknownTopicPartition: (message = 'This server does not host this topic-partition.'): RestError => new RestError(404, 40403, message),
  notFound: (): RestError => new RestError(404, 404, 'HTTP 404 Not Found'),
  clusterNotFound: (id: string): RestError => new RestError(404, 404, `Cluster ${id} cannot be found.`),
  methodNotAllowed: (): RestError => new RestError(405, 405, 'HTTP 405 Method Not Allowed'),
  notAcceptable: (): RestError => new RestError(406, 406, 'HTTP 406 Not Acceptable'),
  consumerFormatMismatch: (): RestError => new RestError(406, 40601, 'The requested embedded data format does not match the deserializer for this consumer instance'),
  consumerAlreadySubscribed: (): RestError =>
    new RestError(409, 40901, 'Consumer cannot subscribe the the specified target because it has already subscribed to other topics.'),
  consumerAlreadyExists: (): RestError => new RestError(409, 40902, 'Consumer with specified consumer ID already exists in the specified consumer group.'),
  illegalState: (detail: string): RestError => new RestError(409, 40903, `Illegal state: ${detail}`),
  tooLarge: (): RestError => new RestError(413, 413, 'The request included a message larger than the maximum message size the server can accept.'),
  unsupportedMediaType: (): RestError => new RestError(415, 415, 'HTTP 415 Unsupported Media Type'),
  keySchemaMissing: (): RestError => new RestError(422, 42201, 'Request includes keys but does not include key schema'),
  valueSchemaMissing: (): RestError => new RestError(422, 42202, 'Request includes values but does not include value schema'),
  jsonConversion: (detail: string): RestError => new RestError(422, 42203, `Conversion of JSON to Object failed: ${detail}`),
  invalidConsumerConfig: (detail: string): RestError => new RestError(422, 42204, `Invalid consumer configuration: ${detail}`),
  invalidSchema: (detail: string): RestError => new RestError(422, 42205, `Invalid schema: ${detail}`),
  invalidPayload: (detail: string): RestError => new RestError(422, 42206, `Payload error. ${detail}`),
  serialization: (detail: string): RestError => new RestError(422, 42207, `Error serializing message. ${detail}`),
  emptyBody: (): RestError => new RestError(422, 422, 'Payload error. Request body is empty. Data is required.'),
  /** A v3-style 400: "Bad Request: <detail>". */
  badRequest: (detail: string): RestError => new RestError(400, 400, `Bad Request: ${detail}`),
  /** Kafka refused the request as invalid (topic exists, bad replication factor, bad config, ...). */
  kafkaBadRequest: (message: string): RestError => new RestError(400, 40002, message),
  serverError: (): RestError => new RestError(500, 500, 'Internal Server Error'),
}

/** Kafka errors that kafka-rest answers with 400 / 40002 (KafkaExceptionMapper's table). */
const BAD_REQUEST_CODES: ReadonlySet<number> = new Set([
  ErrorCode.INVALID_REPLICATION_FACTOR,
  ErrorCode.SECURITY_DISABLED,
  ErrorCode.UNSUPPORTED_VERSION,
  ErrorCode.INVALID_PARTITIONS,
  ErrorCode.INVALID_REQUEST,
  ErrorCode.UNKNOWN_SERVER_ERROR,
  ErrorCode.POLICY_VIOLATION,
  ErrorCode.TOPIC_ALREADY_EXISTS,
  ErrorCode.INVALID_CONFIG,
  ErrorCode.TOPIC_DELETION_DISABLED,
  ErrorCode.INVALID_TOPIC_EXCEPTION,
  ErrorCode.INVALID_REQUIRED_ACKS,
  ErrorCode.RECORD_LIST_TOO_LARGE,
  ErrorCode.MESSAGE_TOO_LARGE,
  ErrorCode.INVALID_TIMESTAMP,
  ErrorCode.INVALID_RECORD,
])

const AUTHENTICATION_CODES: ReadonlySet<number> = new Set([ErrorCode.SASL_AUTHENTICATION_FAILED, ErrorCode.ILLEGAL_SASL_STATE, ErrorCode.UNSUPPORTED_SASL_MECHANISM])
const AUTHORIZATION_CODES: ReadonlySet<number> = new Set([
  ErrorCode.TOPIC_AUTHORIZATION_FAILED,
  ErrorCode.GROUP_AUTHORIZATION_FAILED,
  ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
  ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
  ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED,
])

/** Any failure as Confluent's error answer (KafkaExceptionMapper's rules for Kafka errors). */
export function fromError(err: unknown): RestError {
  if (err instanceof RestError) return err
  if (err instanceof KafkaError) {
    const code = err.code as number
    if (AUTHENTICATION_CODES.has(code)) return new RestError(401, 40101, err.message)
    if (AUTHORIZATION_CODES.has(code)) return new RestError(403, 40301, err.message)
    if (code === ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) return new RestError(404, 40403, err.message)
    if (code === ErrorCode.BROKER_NOT_AVAILABLE) return new RestError(503, 50302, err.message)
    if (code === ErrorCode.THROTTLING_QUOTA_EXCEEDED) return new RestError(429, 42901, err.message)
    if (BAD_REQUEST_CODES.has(code)) return new RestError(400, 40002, err.message)
    if (err.retriable) return new RestError(500, 50003, err.message)
    return new RestError(500, 50002, `Kafka error: ${err.message}`)
  }
  if (err instanceof TimeoutError) {
    if (err.message.toLowerCase().includes('not present in metadata')) return Errors.topicNotFound()
    return new RestError(500, 50003, err.message)
  }
  if (err instanceof ConnectionError) return new RestError(500, 50003, err.message)
  return Errors.serverError()
}
