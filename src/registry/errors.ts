// Confluent Schema Registry's error codes (io.confluent.kafka.schemaregistry.rest.exceptions.Errors): the
// HTTP status and the `error_code` in the JSON body `{"error_code": 40401, "message": "..."}` that every
// client library switches on. Kept as Confluent numbers them so that clients nobody here wrote behave.

export const RegistryErrorCode = {
  SUBJECT_NOT_FOUND: 40401,
  VERSION_NOT_FOUND: 40402,
  SCHEMA_NOT_FOUND: 40403,
  SUBJECT_SOFT_DELETED: 40404,
  SUBJECT_NOT_SOFT_DELETED: 40405,
  SCHEMA_VERSION_SOFT_DELETED: 40406,
  SCHEMA_VERSION_NOT_SOFT_DELETED: 40407,
  SUBJECT_LEVEL_COMPATIBILITY_NOT_CONFIGURED: 40408,
  SUBJECT_LEVEL_MODE_NOT_CONFIGURED: 40409,
  // HTTP 409. Confluent before 7.x put 409 itself in error_code; current releases send 40901.
  INCOMPATIBLE_SCHEMA: 40901,
  INVALID_SCHEMA: 42201,
  INVALID_VERSION: 42202,
  INVALID_COMPATIBILITY_LEVEL: 42203,
  INVALID_MODE: 42204,
  OPERATION_NOT_PERMITTED: 42205,
  REFERENCE_EXISTS: 42206,
  ID_DOES_NOT_MATCH: 42207,
  INVALID_SUBJECT: 42208,
  SCHEMA_TOO_LARGE: 42209,
  CONTEXT_NOT_EMPTY: 42211,
  // The generic "unprocessable entity" Confluent's REST layer uses for a malformed request body.
  UNPROCESSABLE_ENTITY: 422,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  STORE_ERROR: 50001,
  OPERATION_TIMEOUT: 50002,
  REQUEST_FORWARDING_FAILED: 50003,
  UNKNOWN_LEADER: 50004,
  JSON_PARSE_ERROR: 50005,
} as const

export type RegistryErrorCodeValue = (typeof RegistryErrorCode)[keyof typeof RegistryErrorCode]

/** A failure the REST layer turns into `status` + `{error_code, message}`. */
export class RegistryError extends Error {
  constructor(
    readonly status: number,
    readonly errorCode: number,
    message: string,
  ) {
    super(message)
    this.name = 'RegistryError'
  }

  toBody(): { error_code: number; message: string } {
    return { error_code: this.errorCode, message: this.message }
  }
}

// Messages follow Errors.java's formats, so that log scrapers and tests written against Confluent match.
export const Errors = {
  subjectNotFound: (subject: string) => new RegistryError(404, RegistryErrorCode.SUBJECT_NOT_FOUND, `Subject '${subject}' not found.`),
  versionNotFound: (version: number | string) => new RegistryError(404, RegistryErrorCode.VERSION_NOT_FOUND, `Version ${version} not found.`),
  schemaNotFound: (id?: number) =>
    new RegistryError(404, RegistryErrorCode.SCHEMA_NOT_FOUND, id === undefined ? 'Schema not found' : `Schema ${id} not found`),
  subjectSoftDeleted: (subject: string) =>
    new RegistryError(
      404,
      RegistryErrorCode.SUBJECT_SOFT_DELETED,
      `Subject '${subject}' was soft deleted.Set permanent=true to delete permanently`,
    ),
  subjectNotSoftDeleted: (subject: string) =>
    new RegistryError(
      404,
      RegistryErrorCode.SUBJECT_NOT_SOFT_DELETED,
      `Subject '${subject}' was not deleted first before being permanently deleted`,
    ),
  versionSoftDeleted: (subject: string, version: number) =>
    new RegistryError(
      404,
      RegistryErrorCode.SCHEMA_VERSION_SOFT_DELETED,
      `Subject '${subject}' Version ${version} was soft deleted.Set permanent=true to delete permanently`,
    ),
  versionNotSoftDeleted: (subject: string, version: number) =>
    new RegistryError(
      404,
      RegistryErrorCode.SCHEMA_VERSION_NOT_SOFT_DELETED,
      `Subject '${subject}' Version ${version} was not deleted first before being permanently deleted`,
    ),
  subjectCompatibilityNotConfigured: (subject: string) =>
    new RegistryError(
      404,
      RegistryErrorCode.SUBJECT_LEVEL_COMPATIBILITY_NOT_CONFIGURED,
      `Subject '${subject}' does not have subject-level compatibility configured`,
    ),
  subjectModeNotConfigured: (subject: string) =>
    new RegistryError(404, RegistryErrorCode.SUBJECT_LEVEL_MODE_NOT_CONFIGURED, `Subject '${subject}' does not have subject-level mode configured`),
  incompatibleSchema: (subject: string, messages: string[]) =>
    new RegistryError(
      409,
      RegistryErrorCode.INCOMPATIBLE_SCHEMA,
      `Schema being registered is incompatible with an earlier schema for subject "${subject}", details: [${messages.join(', ')}]`,
    ),
  invalidSchema: (message: string) => new RegistryError(422, RegistryErrorCode.INVALID_SCHEMA, message),
  invalidVersion: (version: string) =>
    new RegistryError(
      422,
      RegistryErrorCode.INVALID_VERSION,
      `The specified version '${version}' is not a valid version id. Allowed values are between [1, 2^31-1] and the string "latest"`,
    ),
  invalidCompatibilityLevel: () =>
    new RegistryError(
      422,
      RegistryErrorCode.INVALID_COMPATIBILITY_LEVEL,
      'Invalid compatibility level. Valid values are none, backward, forward, full, backward_transitive, forward_transitive, and full_transitive',
    ),
  invalidMode: () =>
    new RegistryError(422, RegistryErrorCode.INVALID_MODE, 'Invalid mode. Valid values are READWRITE, READONLY, IMPORT and FORWARD.'),
  operationNotPermitted: (message: string) => new RegistryError(422, RegistryErrorCode.OPERATION_NOT_PERMITTED, message),
  referenceExists: (key: string) =>
    new RegistryError(422, RegistryErrorCode.REFERENCE_EXISTS, `One or more references exist to the schema ${key}.`),
  idDoesNotMatch: (message = 'The ID of an imported schema does not match the existing ID') =>
    new RegistryError(422, RegistryErrorCode.ID_DOES_NOT_MATCH, message),
  invalidSubject: (subject: string) =>
    new RegistryError(422, RegistryErrorCode.INVALID_SUBJECT, `The specified subject '${subject}' is not a valid.`),
  schemaTooLarge: () =>
    new RegistryError(422, RegistryErrorCode.SCHEMA_TOO_LARGE, 'Register operation failed because schema is too large'),
  contextNotEmpty: (context: string) =>
    new RegistryError(422, RegistryErrorCode.CONTEXT_NOT_EMPTY, `The specified context '${context}' is not empty.`),
  unprocessable: (message: string) => new RegistryError(422, RegistryErrorCode.UNPROCESSABLE_ENTITY, message),
  notFound: (message = 'HTTP 404 Not Found') => new RegistryError(404, RegistryErrorCode.NOT_FOUND, message),
  methodNotAllowed: () => new RegistryError(405, RegistryErrorCode.METHOD_NOT_ALLOWED, 'HTTP 405 Method Not Allowed'),
  store: (message: string) => new RegistryError(500, RegistryErrorCode.STORE_ERROR, message),
  timeout: (message: string) => new RegistryError(500, RegistryErrorCode.OPERATION_TIMEOUT, message),
  unknownLeader: () => new RegistryError(500, RegistryErrorCode.UNKNOWN_LEADER, 'Leader not known.'),
  jsonParse: (message: string) => new RegistryError(400, RegistryErrorCode.JSON_PARSE_ERROR, message),
}
