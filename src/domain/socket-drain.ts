// Waiting for a socket's write buffer to drain, the backpressure both ends of a Kafka connection use:
// the client's pipelined producer and the broker's connection (before a sendfile, and while answers
// queue up). It lives on the ground floor because the client and the server both import it and it needs
// nothing but node:net.
import type { Socket } from 'node:net'

/** Resolves at the socket's next 'drain', or at its 'close' (nothing will drain then); never rejects. */
export function drainOrClose(socket: Socket): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = (): void => {
      socket.off('drain', done)
      socket.off('close', done)
      resolve()
    }
    socket.once('drain', done)
    socket.once('close', done)
  })
}
