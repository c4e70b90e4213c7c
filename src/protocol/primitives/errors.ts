// Typed codec errors. They carry a stable string `code` (BRK_ prefix, like platformatic's PLT_KFK_)
// for logs and tests, and the Kafka error code a server would answer with.

import { ErrorCode } from '../../domain/errors.js'

/** Malformed or truncated input. The server answers INVALID_REQUEST or closes the connection. */
export class ProtocolDecodeError extends Error {
  readonly code = 'BRK_DECODE'
  readonly errorCode: ErrorCode = ErrorCode.INVALID_REQUEST

  constructor(message: string) {
    super(message)
    this.name = 'ProtocolDecodeError'
  }
}

/**
 * A message that cannot be written in the requested version: a non-default value in a field the
 * version lacks, null where the version does not allow it, a value out of the type's range.
 */
export class ProtocolEncodeError extends Error {
  readonly code = 'BRK_ENCODE'
  readonly errorCode: ErrorCode = ErrorCode.UNSUPPORTED_VERSION

  constructor(message: string) {
    super(message)
    this.name = 'ProtocolEncodeError'
  }
}
