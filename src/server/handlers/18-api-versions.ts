// ApiVersions: v0-3
//
// Behavior:
// * Lists every API in the handler table with the range its handler serves (derived, never maintained).
// * v3+: ClientSoftwareName/Version must match Kafka's pattern, else INVALID_REQUEST.
// * A version above 3 never reaches this handler: the dispatcher answers it in the v0 format with
//   UNSUPPORTED_VERSION and this API's range (KIP-511).
// Version notes:
// * v1+: throttle time. v3: flexible, SupportedFeatures/FinalizedFeatures tagged fields (left empty).
import { ErrorCode } from '../../domain/errors.js'
import * as ApiVersions from '../../protocol/messages/18-api-versions.gen.js'
import { defineHandler } from './common/handler.js'

const SOFTWARE_PATTERN = /^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$/

export const apiVersionsHandler = defineHandler<ApiVersions.ApiVersionsRequest, ApiVersions.ApiVersionsResponse>({
  api: ApiVersions.ApiVersionsApi,
  minVersion: 0,
  maxVersion: 3,
  decodeRequest: ApiVersions.decodeApiVersionsRequest,
  encodeResponse: ApiVersions.encodeApiVersionsResponse,
  authorizes: true,
  handle(req, ctx) {
    const apiKeys = ctx.apiVersions.map((v) => ApiVersions.createApiVersion(v))
    if (ctx.apiVersion >= 3 && (!SOFTWARE_PATTERN.test(req.clientSoftwareName) || !SOFTWARE_PATTERN.test(req.clientSoftwareVersion))) {
      return ApiVersions.createApiVersionsResponse({ errorCode: ErrorCode.INVALID_REQUEST, apiKeys })
    }
    return ApiVersions.createApiVersionsResponse({ errorCode: ErrorCode.NONE, apiKeys })
  },
})
