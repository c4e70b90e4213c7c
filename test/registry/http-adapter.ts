// A test-only HTTP front for the registry's route table on node:http, standing in for the
// uWebSockets.js layer (issue 17) until it exists: method, decoded path, query and body in; status,
// Confluent's content type and the serialized body out.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { CONTENT_TYPE, type RegistryRequest, type RegistryResponse, SchemaRegistryService, handle, serializeBody } from '../../src/registry/index.js'

export interface RegistryHttp {
  url: string
  close(): Promise<void>
}

/** Serves a registry service, or any request handler (a RegistryNode's handle). */
export async function serveRegistry(target: SchemaRegistryService | ((req: RegistryRequest) => Promise<RegistryResponse>), port = 0): Promise<RegistryHttp> {
  const respond = target instanceof SchemaRegistryService ? (req: RegistryRequest) => handle(target, req) : target
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://registry')
      const body = chunks.length > 0 ? Buffer.concat(chunks).toString('utf8') : undefined
      // Percent-decoding of each path segment is the route table's job, so "%2F" stays inside a subject.
      void respond({ method: req.method ?? 'GET', path: url.pathname, query: url.searchParams, body }).then((r) => {
        res.writeHead(r.status, { 'Content-Type': CONTENT_TYPE })
        res.end(serializeBody(r.body))
      })
    })
  })
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  }
}
