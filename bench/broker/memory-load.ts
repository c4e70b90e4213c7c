// Load for the broker memory workload, in its own process (1,000 sockets and 50 producers would
// otherwise share the orchestrator's event loop):
//   node memory-load.js BOOTSTRAP TOPIC IDLE PRODUCERS RATE_EACH SECONDS
// Opens IDLE connections that each negotiate ApiVersions (so the broker holds a real, served connection)
// and then stay silent, prints `idle-ready`, then runs PRODUCERS producers (one connection each) at
// RATE_EACH 100-byte records/s for SECONDS, and prints one JSON line. The orchestrator samples the
// broker's RSS meanwhile.
import { performance } from 'node:perf_hooks'
import { BrokerConnection } from '../../src/client/connection.js'
import { Producer } from '../../src/client/producer.js'

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

const [bootstrap, topic, idleArg, producersArg, rateArg, secondsArg] = process.argv.slice(2)
if (bootstrap === undefined || topic === undefined) throw new Error('usage: memory-load.js BOOTSTRAP TOPIC IDLE PRODUCERS RATE_EACH SECONDS')
const [host, portText] = bootstrap.split(':') as [string, string]
const idle = Number(idleArg)
const producers = Number(producersArg)
const rateEach = Number(rateArg)
const seconds = Number(secondsArg)

// Connect in waves of 100: the accept queue of the broker is not what is measured.
const conns: BrokerConnection[] = []
for (let i = 0; i < idle; i += 100) {
  const wave = await Promise.all(
    Array.from({ length: Math.min(100, idle - i) }, () => BrokerConnection.connect({ host, port: Number(portText), clientId: 'bench-idle' })),
  )
  conns.push(...wave)
}
process.stdout.write('idle-ready\n')
await sleep(1000)

const value = Buffer.alloc(100, 0x62)
let acked = 0
let failed = 0
const onAck = (err: Error | null): void => {
  if (err !== null) failed++
  else acked++
}
const t0 = performance.now()
await Promise.all(
  Array.from({ length: producers }, async (_, i) => {
    const p = new Producer({ bootstrapServers: bootstrap, clientId: `bench-active-${i}`, acks: 1, lingerMs: 5 })
    await p.topicInfo(topic)
    const start = performance.now()
    const end = t0 + seconds * 1000
    let sent = 0
    while (performance.now() < end) {
      const due = Math.floor(((performance.now() - start) / 1000) * rateEach)
      for (; sent < due; sent++) p.append(topic, undefined, null, value, undefined, onAck)
      await sleep(10)
    }
    await p.flush()
    await p.close()
  }),
)
const elapsed = (performance.now() - t0) / 1000
for (const c of conns) c.close()
process.stdout.write(JSON.stringify({ idle: conns.length, producers, acked, failed, recordsPerSec: Math.round(acked / elapsed) }) + '\n')
process.exit(0)
