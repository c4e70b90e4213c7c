// ZooKeeper's four-letter words (ruok, srvr, mntr…) over a plain TCP connection: how `skein cluster up`
// and the test harness see that a ZooKeeper they started serves, without a session.
import { connect } from 'node:net'

/** Sends a four-letter-word command and returns the whole answer ('' when the connection fails). */
export function fourLetterWord(port: number, command: string, timeoutMs = 2000, host = '127.0.0.1'): Promise<string> {
  return new Promise((resolveAnswer) => {
    const socket = connect({ host, port })
    const chunks: Buffer[] = []
    const timer = setTimeout(() => socket.destroy(), timeoutMs)
    socket.on('connect', () => socket.write(command))
    socket.on('data', (d: Buffer) => chunks.push(d))
    socket.on('error', () => {})
    socket.on('close', () => {
      clearTimeout(timer)
      resolveAnswer(Buffer.concat(chunks).toString('utf8'))
    })
  })
}
