// Consume side of bench:http, one child process per run so that the reader's CPU is its own:
//   node consume.js ws HOST:PORT TOPIC RECORDS json|binary   -> /ws/topics/TOPIC?offset=0&format=...
//   node consume.js kafka BOOTSTRAP TOPIC RECORDS            -> Skein's consumer, every partition from 0
// Each prints one JSON line {records, seconds, recordsPerSec, cpuMs} once RECORDS records have arrived,
// timed from the upgrade's answer (ws) or the assignment (kafka) to the last record.
// The WebSocket client is the least that reads RFC 6455 server frames (unmasked, unfragmented, as uWS
// sends them) over a TCP socket, counting records without decoding them: the u32 count of a binary frame
// (layout in src/console/streams.ts encodeBinaryRecords), the `{"partition":` of each record object in a
// JSON frame. Node 20 has no WebSocket client of its own.
import { randomBytes } from 'node:crypto'
import { connect } from 'node:net'
import { performance } from 'node:perf_hooks'
import { Consumer } from '../../src/client/consumer.js'

const [mode, address, topic, recordsArg, format] = process.argv.slice(2)
const want = Number(recordsArg)
if (address === undefined || topic === undefined || !(want > 0)) throw new Error('usage: consume.js ws|kafka ADDRESS TOPIC RECORDS [json|binary]')

function report(records: number, t0: number, cpu0: NodeJS.CpuUsage): void {
  const seconds = (performance.now() - t0) / 1000
  const cpu = process.cpuUsage(cpu0)
  process.stdout.write(JSON.stringify({ records, seconds, recordsPerSec: records / seconds, cpuMs: (cpu.user + cpu.system) / 1000 }) + '\n')
  process.exit(0)
}

async function viaWebSocket(): Promise<void> {
  const [host, port] = address!.split(':')
  const socket = connect(Number(port), host)
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve)
    socket.once('error', reject)
  })
  socket.on('error', (err) => {
    process.stderr.write(`socket error: ${err.message}\n`)
    process.exit(1)
  })
  const key = randomBytes(16).toString('base64')
  socket.write(`GET /ws/topics/${encodeURIComponent(topic!)}?offset=0&format=${format ?? 'binary'} HTTP/1.1\r\nHost: ${address}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`)
  const token = Buffer.from('{"partition":')
  let buf: Buffer = Buffer.alloc(0)
  let upgraded = false
  let records = 0
  let t0 = 0
  let cpu0 = process.cpuUsage()
  socket.on('close', () => {
    process.stderr.write(`the server closed the socket after ${records} records\n`)
    process.exit(1)
  })
  socket.on('data', (d: Buffer) => {
    buf = buf.length === 0 ? d : Buffer.concat([buf, d])
    if (!upgraded) {
      const end = buf.indexOf('\r\n\r\n')
      if (end < 0) return
      const head = buf.subarray(0, end).toString('latin1')
      if (!head.startsWith('HTTP/1.1 101')) {
        process.stderr.write(`upgrade refused: ${buf.toString('latin1').slice(0, 500)}\n`)
        process.exit(1)
      }
      upgraded = true
      t0 = performance.now()
      cpu0 = process.cpuUsage()
      buf = buf.subarray(end + 4)
    }
    let at = 0
    for (;;) {
      if (buf.length - at < 2) break
      const opcode = buf[at]! & 0x0f
      let len = buf[at + 1]! & 0x7f
      let head = 2
      if (len === 126) {
        if (buf.length - at < 4) break
        len = buf.readUInt16BE(at + 2)
        head = 4
      } else if (len === 127) {
        if (buf.length - at < 10) break
        len = Number(buf.readBigUInt64BE(at + 2))
        head = 10
      }
      if (buf.length - at < head + len) break
      const payload = buf.subarray(at + head, at + head + len)
      at += head + len
      if (opcode === 2 && payload[0] === 1) records += payload.readUInt32BE(1)
      else if (opcode === 1) {
        for (let i = payload.indexOf(token); i >= 0; i = payload.indexOf(token, i + token.length)) records++
        if (payload.includes('"type":"error"')) {
          process.stderr.write(`error frame: ${payload.toString().slice(0, 500)}\n`)
          process.exit(1)
        }
      } else if (opcode === 8) {
        process.stderr.write(`close frame after ${records} records: ${payload.subarray(2).toString()}\n`)
        process.exit(1)
      }
      if (records >= want) report(records, t0, cpu0)
    }
    buf = at === buf.length ? Buffer.alloc(0) : buf.subarray(at)
  })
}

async function viaKafka(): Promise<void> {
  const c = new Consumer({ bootstrapServers: address!, clientId: 'bench-http-consume', autoOffsetReset: 'earliest', maxPollRecords: 2000, fetchMaxWaitMs: 500 })
  const info = await c.cluster.topic(topic!)
  const t0 = performance.now()
  const cpu0 = process.cpuUsage()
  c.assign(info.partitions.map((p) => ({ topic: topic!, partition: p.partition })))
  for (const p of info.partitions) c.seek(topic!, p.partition, 0)
  let records = 0
  while (records < want) records += (await c.poll(500)).length
  report(records, t0, cpu0)
}

if (mode === 'ws') await viaWebSocket()
else if (mode === 'kafka') await viaKafka()
else throw new Error(`unknown mode ${mode}`)
