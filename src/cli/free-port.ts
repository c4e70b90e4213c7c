// Choosing a loopback port for a server started a moment later (a local cluster, test servers).
//
// Why not simply listen on port 0, read the port and close: that port comes from the kernel's ephemeral
// range, which is also where the source port of every outgoing connection comes from. Between the check
// and the real server's bind, any client connecting anywhere (a ZooKeeper peer dialling another, a broker
// dialling ZooKeeper) can take it as its source port, and the server then dies with EADDRINUSE. Ports
// just below the ephemeral range are never handed out that way, so only another process choosing the
// same port could take it.
import { readFileSync } from 'node:fs'
import { createServer } from 'node:net'

/** The low end of the kernel's ephemeral port range (Linux's default 32768 when unreadable). */
function ephemeralRangeStart(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0])
    return Number.isInteger(low) && low > 1024 ? low : 32768
  } catch {
    return 32768
  }
}

function tryListen(host: string, port: number): Promise<number | undefined> {
  return new Promise((resolvePort) => {
    const srv = createServer()
    srv.once('error', () => resolvePort(undefined))
    srv.listen({ host, port, exclusive: true }, () => {
      const addr = srv.address()
      const bound = typeof addr === 'object' && addr !== null ? addr.port : undefined
      srv.close(() => resolvePort(bound))
    })
  })
}

/**
 * A TCP port on `host` that was free a moment ago, preferably below the ephemeral range (see above);
 * falls back to a kernel-chosen port when none of the tries below the range is free.
 */
export async function freeLoopbackPort(host = '127.0.0.1'): Promise<number> {
  const high = ephemeralRangeStart()
  const low = Math.max(1025, high - 12_000)
  for (let attempt = 0; attempt < 40; attempt++) {
    const port = await tryListen(host, low + Math.floor(Math.random() * (high - low)))
    if (port !== undefined) return port
  }
  const port = await tryListen(host, 0)
  if (port === undefined) throw new Error(`no free TCP port on ${host}`)
  return port
}
