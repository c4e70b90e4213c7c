// Child process of the loopback bandwidth measurement: accepts connections on a free 127.0.0.1 port,
// prints `port N`, and discards everything it reads until it is terminated.
import { createServer } from 'node:net'

const server = createServer((sock) => {
  sock.on('data', () => {})
  sock.on('error', () => {})
})
server.listen({ host: '127.0.0.1', port: 0 }, () => {
  const addr = server.address()
  process.stdout.write(`port ${typeof addr === 'object' && addr !== null ? addr.port : 0}\n`)
})
process.on('SIGTERM', () => process.exit(0))
