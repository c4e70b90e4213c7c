// One hello-world HTTP server for bench:http, in a process of its own: `node hello-server.js uws|node`
// prints its port and serves GET /hello with "Hello, World!" until killed. uws is Skein's adapter over
// uWebSockets.js (src/http), node is node:http with keep-alive, each as small as the other.
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createHttpServer } from '../../src/http/index.js'

const kind = process.argv[2]
const BODY = 'Hello, World!'
if (kind === 'uws') {
  const server = await createHttpServer()
  const headers = { 'Content-Type': 'text/plain' }
  server.route('GET', '/hello', (_req, res) => res.send(200, headers, BODY))
  const l = await server.listen('http://127.0.0.1:0')
  process.stdout.write(`${l.port}\n`)
} else if (kind === 'node') {
  const server = createServer((req, res) => {
    if (req.url === '/hello') {
      res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': BODY.length })
      res.end(BODY)
    } else {
      res.writeHead(404)
      res.end()
    }
  })
  server.keepAliveTimeout = 60_000
  server.listen(0, '127.0.0.1', () => process.stdout.write(`${(server.address() as AddressInfo).port}\n`))
} else {
  process.stderr.write('usage: hello-server.js uws|node\n')
  process.exit(2)
}
