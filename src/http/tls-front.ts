// HTTPS listeners: a node:tls server on the public address ends TLS and hands each connection's bytes to
// the uWS app, which serves them from a unix socket in a private directory (mode 0700, removed at close),
// so nothing but this process's front reaches the plaintext side.
//
// Why not uWS's own SSLApp: measured on uwebsockets 3.0.6 (test/http/https.test.ts keeps the facts that
// matter checked), its ca_file_name makes a client certificate from another CA fail the handshake, but a
// client that sends no certificate at all is let in (SSL_VERIFY_PEER without FAIL_IF_NO_PEER_CERT), and
// no API tells the app whether one was presented: ssl.client.authentication=REQUIRED could not be
// enforced. SSLApp also reads only PEM files by name (no PKCS12 without writing the key out). node:tls
// gives the Kafka listeners' semantics and store formats (src/auth/tls.ts, src/client/) to HTTP too.
// The cost: one more copy of each byte inside the process, and handlers see no remote address.
import { mkdtempSync, rmSync } from 'node:fs'
import { connect, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createServer, type Server as TlsServer, type TLSSocket } from 'node:tls'
import type { HttpTls } from './types.js'

/** A private directory for the plaintext side's unix socket. */
export function privateSocketPath(): { dir: string; path: string } {
  // mkdtemp creates the directory with mode 0700: other users cannot connect to the socket inside.
  const dir = mkdtempSync(join(tmpdir(), 'skein-https-'))
  return { dir, path: join(dir, 'http.sock') }
}

export function removeSocketDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true })
}

/** The TLS side of a server's https listeners; each connection is relayed to the unix socket at innerPath. */
export class TlsFront {
  private readonly servers: TlsServer[] = []
  private readonly open = new Set<Socket>()

  constructor(
    private readonly tls: HttpTls,
    private readonly innerPath: string,
    /** Errors of a listening TLS server (not of one connection), for the log. */
    private readonly onError?: (err: Error) => void,
  ) {}

  /** Listens on host:port (port 0: any); resolves the bound port, rejects with the system's error code. */
  listen(host: string, port: number): Promise<number> {
    const { options, clientAuth } = this.tls
    const server = createServer({
      ...options,
      // REQUIRED and REQUESTED ask for a certificate; only REQUIRED fails the handshake without one.
      requestCert: clientAuth !== 'none',
      rejectUnauthorized: clientAuth === 'required',
    })
    server.on('secureConnection', (clear) => this.relay(clear))
    // A failed handshake (no certificate under REQUIRED, an untrusted one, plain HTTP on the TLS port):
    // node:tls has already closed that socket; nothing else to do.
    server.on('tlsClientError', () => {})
    return new Promise((resolve, reject) => {
      let listening = false
      // Before listening: why the bind failed. After: an accept error (EMFILE...) must not end the
      // process, which an 'error' event without a listener would; node keeps accepting afterwards.
      server.on('error', (err: NodeJS.ErrnoException) => {
        if (!listening) reject(err.code ?? 'EUNKNOWN')
        else this.onError?.(err)
      })
      // No SO_REUSEPORT from node: a second process asking for the port fails with EADDRINUSE, as the
      // uWS listeners do with LIBUS_LISTEN_EXCLUSIVE_PORT.
      server.listen({ host: host === '' ? undefined : host, port }, () => {
        listening = true
        this.servers.push(server)
        resolve((server.address() as { port: number }).port)
      })
    })
  }

  private relay(clear: TLSSocket): void {
    // REQUESTED lets a client without a certificate in, but a certificate that was sent must be trusted
    // (as Jetty's want-client-auth and uWS's own verification do): cut such a connection off.
    if (!clear.authorized && this.tls.clientAuth === 'requested' && Object.keys(clear.getPeerCertificate()).length > 0) {
      clear.destroy()
      return
    }
    const inner = connect(this.innerPath)
    this.open.add(clear)
    this.open.add(inner)
    const end = (): void => {
      this.open.delete(clear)
      this.open.delete(inner)
      clear.destroy()
      inner.destroy()
    }
    clear.on('error', end)
    inner.on('error', end)
    clear.on('close', end)
    inner.on('close', end)
    // pipe: each side paused while the other cannot take more, so a slow client holds uWS back (its
    // backpressure then reaches the handlers as it does over http).
    clear.pipe(inner)
    inner.pipe(clear)
  }

  /** Stops listening and cuts every relayed connection. */
  close(): void {
    for (const s of this.servers.splice(0)) s.close()
    for (const s of this.open) s.destroy()
    this.open.clear()
  }
}
