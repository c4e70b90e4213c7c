// Skein's one HTTP adapter, over uWebSockets.js (README.md in this folder says where the package comes
// from). The REST Proxy, the Schema Registry, Connect, metrics and the console all serve through it.
export { createHttpServer } from './server.js'
export { mountHealthEndpoints } from './health-routes.js'
export { exposureNotice, formatHttpListener, isLoopbackHost, parseHttpListener } from './listener.js'
export type { HttpListener } from './listener.js'
export { contentTypeOf, loadStaticAssets, pickEncoding, staticAsset, staticAssetsFrom } from './static.js'
export type { StaticAsset, StaticAssets } from './static.js'
export { jsonNestedDeeperThan, MAX_JSON_DEPTH, tooDeepMessage } from './json-depth.js'
export { HttpError, ListenError } from './types.js'
export { BasicAuthenticator, basicAuthenticatorFrom, loadUsersFile, MAX_AUTHORIZATION_BYTES, parseBasic, parsePasswordProperties, parseUsersFile } from './basic-auth.js'
export type { AuthVerdict, BasicAuthOptions, BasicAuthSettings, HttpPrincipal, HttpUser, RequestHead } from './basic-auth.js'
export type {
  BoundListener,
  BufferedRequest,
  ErrorResponder,
  Handler,
  Headers,
  HttpRequest,
  HttpResponse,
  HttpServer,
  HttpServerOptions,
  HttpTls,
  RouteOptions,
  StreamedRequest,
  StreamRouteOptions,
  WebSocketConnection,
  WebSocketRoute,
} from './types.js'
