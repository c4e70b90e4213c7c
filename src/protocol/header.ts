// Request and response headers. The header version follows from the API key and version
// (api-keys.gen.ts has the rules and their two exceptions); the codecs are the generated ones.
//
// Request header: int16 apiKey, int16 apiVersion, int32 correlationId, then v1+ a classic nullable
// client id (never compact, even in v2), then v2 a tagged-field section.
// Response header: int32 correlationId, then v1 a tagged-field section.

import { requestHeaderVersion, responseHeaderVersion } from './api-keys.gen.js'
import { ProtocolDecodeError } from './primitives/errors.js'
import type { Reader } from './primitives/reader.js'
import type { Writer } from './primitives/writer.js'
import { createRequestHeader, decodeRequestHeader, encodeRequestHeader, type RequestHeader } from './messages/request-header.gen.js'
import { createResponseHeader, decodeResponseHeader, encodeResponseHeader, type ResponseHeader } from './messages/response-header.gen.js'

export { requestHeaderVersion, responseHeaderVersion }
export { createRequestHeader, decodeRequestHeader, encodeRequestHeader, type RequestHeader }
export { createResponseHeader, decodeResponseHeader, encodeResponseHeader, type ResponseHeader }

/** The fixed start of every request header (all versions). */
export interface RequestHeaderPeek {
  apiKey: number
  apiVersion: number
  correlationId: number
}

/**
 * Reads apiKey, apiVersion and correlationId from a request (the bytes after the 4-byte size)
 * without decoding anything else, so the server can answer UNSUPPORTED_VERSION even for versions
 * it cannot parse.
 */
export function peekRequestHeader(request: Buffer, offset = 0): RequestHeaderPeek {
  if (offset < 0 || request.length - offset < 8) throw new ProtocolDecodeError(`request of ${request.length - offset} bytes is shorter than a header`)
  return {
    apiKey: request.readInt16BE(offset),
    apiVersion: request.readInt16BE(offset + 2),
    correlationId: request.readInt32BE(offset + 4),
  }
}

/** Decodes a request header in the version its apiKey/apiVersion call for. */
export function readRequestHeader(r: Reader): RequestHeader {
  if (r.remaining < 4) throw new ProtocolDecodeError(`request of ${r.remaining} bytes is shorter than a header`)
  const apiKey = r.buf.readInt16BE(r.offset)
  const apiVersion = r.buf.readInt16BE(r.offset + 2)
  return decodeRequestHeader(r, requestHeaderVersion(apiKey, apiVersion))
}

/** Encodes a request header in the version its apiKey/apiVersion call for. */
export function writeRequestHeader(w: Writer, header: RequestHeader): void {
  encodeRequestHeader(w, header, requestHeaderVersion(header.requestApiKey, header.requestApiVersion))
}

/** Writes the response header for a request (v0, or v1 with an empty tagged section). */
export function writeResponseHeader(w: Writer, apiKey: number, apiVersion: number, correlationId: number): void {
  encodeResponseHeader(w, { correlationId }, responseHeaderVersion(apiKey, apiVersion))
}

/** Decodes the response header of a response to the given API version. */
export function readResponseHeader(r: Reader, apiKey: number, apiVersion: number): ResponseHeader {
  return decodeResponseHeader(r, responseHeaderVersion(apiKey, apiVersion))
}
