// Worker-thread side of worker-threads.test.ts: loads the compiled addon directly (workers run plain
// JS) and exercises crc32c, an mmap'd index, and optionally leaves a sendfile in flight.
import { createRequire } from 'node:module'
import { createServer, connect } from 'node:net'
import { openSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parentPort, workerData } from 'node:worker_threads'

const require = createRequire(import.meta.url)
const native = require(process.env.SKEIN_NATIVE_PATH || new URL('../../build/Release/skein_native.node', import.meta.url).pathname)

const { task, dir, id, data } = workerData

if (task === 'work') {
  const check = native.crc32c(Buffer.from('123456789'))
  const crc = native.crc32c(data)
  const crcSoftware = native.crc32cSoftware(data)
  const path = join(dir, `worker-${id}.index`)
  const index = native.openIndex(path, 8, 8 * 20_000)
  for (let i = 0; i < 20_000; i++) index.append(i * 3, i * 100)
  const lookups = [index.lookup(-1), index.lookup(0), index.lookup(31), index.lookup(59_997), index.lookup(1e9)]
  const positions = lookups.map((p) => (p >= 0 ? index.valueAt(p) : -1))
  const entries = index.entries()
  index.close(true)
  parentPort.postMessage({ check, crc, crcSoftware, hardware: native.crc32cHardware(), lookups, positions, entries, path })
} else if (task === 'pending-sendfile-remote') {
  // Same, but the reader is a paused socket in the parent thread: the connection stays healthy, so
  // the sendfile is still waiting for writability when the worker's env is torn down.
  const file = join(dir, `worker-${id}.log`)
  writeFileSync(file, Buffer.alloc(32 << 20, 2))
  const fd = openSync(file, 'r')
  const socket = connect(workerData.port, '127.0.0.1', () => {
    native.sendfile(socket._handle.fd, fd, 0, 32 << 20, (err, sent) => parentPort.postMessage({ unexpected: true, err: String(err), sent }))
    setTimeout(() => parentPort.postMessage({ pending: true }), 50)
  })
} else if (task === 'pending-sendfile') {
  // A sendfile that cannot finish (the reader never reads), plus an index left open: the worker is
  // then terminated, and the addon must tear down its poll handle and mapping cleanly.
  const file = join(dir, `worker-${id}.log`)
  writeFileSync(file, Buffer.alloc(32 << 20, 1))
  const fd = openSync(file, 'r')
  native.openIndex(join(dir, `worker-${id}-open.index`), 8, 8 * 1000).append(1, 1)
  const server = createServer({ allowHalfOpen: true }, (socket) => {
    native.sendfile(socket._handle.fd, fd, 0, 32 << 20, (err, sent) => parentPort.postMessage({ unexpected: true, err: String(err), sent }))
    setTimeout(() => parentPort.postMessage({ pending: true }), 50)
  })
  server.listen(0, '127.0.0.1', () => {
    const client = connect(server.address().port, '127.0.0.1')
    client.pause()
  })
}
