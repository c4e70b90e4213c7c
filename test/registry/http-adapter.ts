// The registry's HTTP front for tests: src/registry/http.ts (the route table on Skein's uWebSockets.js
// adapter), the same wiring a registry deployment uses, on 127.0.0.1 and a free or given port.
import { type RegistryRequest, type RegistryResponse, SchemaRegistryService, handle } from '../../src/registry/index.js'
import { startRegistryHttp } from '../../src/registry/http.js'

export interface RegistryHttp {
  url: string
  close(): Promise<void>
}

/** Serves a registry service, or any request handler (a RegistryNode's handle). */
export async function serveRegistry(target: SchemaRegistryService | ((req: RegistryRequest) => Promise<RegistryResponse>), port = 0): Promise<RegistryHttp> {
  const respond = target instanceof SchemaRegistryService ? (req: RegistryRequest) => handle(target, req) : target
  const server = await startRegistryHttp(respond, { listeners: [`http://127.0.0.1:${port}`] })
  return { url: server.listeners[0]!.url, close: () => server.close() }
}
