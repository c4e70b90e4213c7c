// The HTTP adapter over real sockets: routes and parameters, 404/405, body limits (413 before buffering),
// streamed bodies paused under a slow reader, responses that wait for a slow client, aborted requests,
// handler failures, static assets with gzip/br and ETags, WebSockets with backpressure, listen/close.
import { execFileSync, spawn } from 'node:child_process'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { connect, type Socket } from 'node:net'
import { join } from 'node:path'
import { brotliDecompressSync, gunzipSync } from 'node:zlib'
import { afterEach, describe, expect, it } from 'vitest'
import { createHttpServer, HttpError, ListenError, parseHttpListener, staticAssetsFrom, type HttpServer } from '../../src/http/index.js'
import { REPO_ROOT } from '../harness/broker.js'
import { TestWebSocket } from '../harness/ws-client.js'

const servers: HttpServer[] = []
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close()
})

async function start(setup: (s: HttpServer) => void, opts: Parameters<typeof createHttpServer>[0] = {}): Promise<{ server: HttpServer; base: string; port: number }> {
  const server = await createHttpServer(opts)
  servers.push(server)
  setup(server)
  const l = await server.listen('http://127.0.0.1:0')
  return { server, base: l.url, port: l.port }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

/** A raw HTTP/1.1 exchange: writes the request head and returns the socket. */
function rawConnect(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => resolve(s))
    s.once('error', reject)
  })
}

describe('http adapter', () => {
  it('parses listener URLs as Confluent writes them', () => {
    expect(parseHttpListener('http://127.0.0.1:8082')).toEqual({ scheme: 'http', host: '127.0.0.1', port: 8082 })
    expect(parseHttpListener('http://:8082')).toEqual({ scheme: 'http', host: '', port: 8082 })
    expect(parseHttpListener('http://[::1]:0')).toEqual({ scheme: 'http', host: '::1', port: 0 })
    expect(parseHttpListener('HTTPS://127.0.0.1:8443')).toEqual({ scheme: 'https', host: '127.0.0.1', port: 8443 })
    expect(() => parseHttpListener('ftp://127.0.0.1:21')).toThrow(/only http and https are supported/)
    expect(() => parseHttpListener('127.0.0.1:8082')).toThrow(/malformed/)
    expect(() => parseHttpListener('http://h:70000')).toThrow(/outside/)
  })

  it('routes with decoded path parameters, query and headers; 404 and 405 for the rest', async () => {
    const { base } = await start((s) => {
      s.route('GET', '/topics/:topic/partitions/:partition', (req, res) => {
        res.send(200, { 'Content-Type': 'application/json' }, JSON.stringify({ params: req.params, q: req.query.get('x'), h: req.header('x-test'), path: req.path }))
      })
      s.route('POST', '/echo', (req, res) => res.send(201, null, req.body))
    })
    let r = await fetch(`${base}/topics/a%2Fb/partitions/3?x=1`, { headers: { 'X-Test': 'yes' } })
    expect(r.status).toBe(200)
    expect(await r.json()).toEqual({ params: { topic: 'a/b', partition: '3' }, q: '1', h: 'yes', path: '/topics/a%2Fb/partitions/3' })
    r = await fetch(`${base}/echo`, { method: 'POST', body: 'hello' })
    expect(r.status).toBe(201)
    expect(await r.text()).toBe('hello')
    r = await fetch(`${base}/nowhere`)
    expect(r.status).toBe(404)
    r = await fetch(`${base}/echo`, { method: 'GET' })
    expect(r.status).toBe(405)
    expect(r.headers.get('allow')).toBe('POST')
    r = await fetch(`${base}/topics/%E0%A4%A/partitions/1`)
    expect(r.status).toBe(400)
  })

  it('uses the products\' error body for 404, 405, 413 and 500', async () => {
    const { base } = await start(
      (s) => {
        s.route('POST', '/x', () => {
          throw new Error('boom')
        })
      },
      { maxBodyBytes: 10, errorBody: (status, message) => ({ headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ error_code: status, message }) }) },
    )
    expect(await (await fetch(`${base}/y`)).json()).toEqual({ error_code: 404, message: 'Not Found' })
    expect(await (await fetch(`${base}/x`)).json()).toEqual({ error_code: 405, message: 'Method Not Allowed' })
    expect(await (await fetch(`${base}/x`, { method: 'POST', body: '1' })).json()).toEqual({ error_code: 500, message: 'Internal Server Error' })
    const r = await fetch(`${base}/x`, { method: 'POST', body: 'x'.repeat(11) })
    expect(r.status).toBe(413)
    expect(((await r.json()) as { error_code: number }).error_code).toBe(413)
  })

  it('refuses a body over the limit with 413 before reading it: declared length and chunked', async () => {
    let calls = 0
    const { base, port } = await start((s) => {
      s.route('POST', '/small', (req, res) => {
        calls++
        res.send(200, null, String(req.body.length))
      }, { maxBodyBytes: 1000 })
    })
    // Declared: 413 at once, though the client has sent none of its 50 MB yet.
    const sock = await rawConnect(port)
    const answer = new Promise<string>((resolve) => {
      let text = ''
      sock.on('data', (d) => (text += d.toString()))
      sock.on('close', () => resolve(text))
    })
    sock.write('POST /small HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 50000000\r\n\r\n')
    const text = await answer
    expect(text).toMatch(/^HTTP\/1.1 413 /)
    // Chunked: refused once the bytes so far pass the limit.
    const sock2 = await rawConnect(port)
    const answer2 = new Promise<string>((resolve) => {
      let t = ''
      sock2.on('data', (d) => (t += d.toString()))
      sock2.on('close', () => resolve(t))
      sock2.on('error', () => resolve(t))
    })
    sock2.write('POST /small HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n')
    for (let i = 0; i < 4 && !sock2.destroyed; i++) {
      sock2.write(`258\r\n${'y'.repeat(600)}\r\n`)
      await sleep(20)
    }
    expect(await answer2).toMatch(/^HTTP\/1.1 413 /)
    // Within the limit, both ways.
    expect(await (await fetch(`${base}/small`, { method: 'POST', body: 'x'.repeat(1000) })).text()).toBe('1000')
    const small = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new Uint8Array(300))
        c.enqueue(new Uint8Array(300))
        c.close()
      },
    })
    expect(await (await fetch(`${base}/small`, { method: 'POST', body: small, duplex: 'half' } as RequestInit)).text()).toBe('600')
    expect(calls).toBe(2)
  })

  it('streams a request body and pauses the socket while the handler does not read', async () => {
    let release!: () => void
    const released = new Promise<void>((r) => (release = r))
    let total = 0
    const { port } = await start((s) => {
      s.streamRoute('POST', '/upload', async (req, res) => {
        await released
        for await (const chunk of req.body) total += chunk.length
        res.send(200, null, String(total))
      }, { bufferBytes: 64 * 1024 })
    })
    const sock = await rawConnect(port)
    let response = ''
    sock.on('data', (d) => (response += d.toString()))
    sock.write('POST /upload HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n')
    // Write 64 MiB as fast as the socket takes it, for one second, while the handler reads nothing.
    const chunk = Buffer.alloc(256 * 1024, 97)
    const framed = Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')])
    let written = 0
    const deadline = Date.now() + 1000
    while (Date.now() < deadline && written < 64 * 1024 * 1024) {
      if (!sock.write(framed)) await Promise.race([new Promise((r) => sock.once('drain', r)), sleep(Math.max(0, deadline - Date.now()))])
      else written += chunk.length
    }
    // The server paused reading: the client could not hand over much more than the socket buffers hold.
    expect(written).toBeLessThan(32 * 1024 * 1024)
    release()
    await new Promise((r) => (sock.writableNeedDrain ? sock.once('drain', r) : r(undefined)))
    sock.write('0\r\n\r\n')
    const deadline2 = Date.now() + 10_000
    while (!response.includes('\r\n\r\n') && Date.now() < deadline2) await sleep(20)
    expect(response).toMatch(/^HTTP\/1.1 200 /)
    expect(total).toBeGreaterThanOrEqual(written)
    sock.destroy()
  })

  it('sends a large body only as fast as a slow client reads it', async () => {
    const body = Buffer.alloc(48 * 1024 * 1024)
    for (let i = 0; i < body.length; i += 4096) body.writeUInt32BE(i, i)
    const { port } = await start((s) => s.route('GET', '/big', (_req, res) => res.send(200, { 'Content-Type': 'application/octet-stream' }, body)))
    const sock = await rawConnect(port)
    const parts: Buffer[] = []
    sock.on('data', (d: Buffer) => parts.push(d))
    sock.write('GET /big HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')
    sock.pause()
    await sleep(300)
    sock.resume()
    const got = await new Promise<Buffer>((resolve) => {
      const check = (): void => {
        const all = Buffer.concat(parts)
        const end = all.indexOf('\r\n\r\n')
        if (end >= 0 && all.length - end - 4 >= body.length) resolve(all.subarray(end + 4, end + 4 + body.length))
        else setTimeout(check, 20)
      }
      check()
    })
    expect(got.equals(body)).toBe(true)
    sock.destroy()
  })

  it('streamed writes report backpressure and writable() waits for a slow client', async () => {
    let writes = 0
    let stalls = 0
    let done!: () => void
    const finished = new Promise<void>((r) => (done = r))
    const { port } = await start((s) =>
      s.route('GET', '/stream', async (_req, res) => {
        res.writeHead(200, { 'Content-Type': 'text/plain' })
        const line = 'x'.repeat(64 * 1024 - 1) + '\n'
        for (let i = 0; i < 1024 && !res.aborted; i++) {
          writes++
          if (!res.write(line)) {
            stalls++
            await res.writable()
          }
        }
        res.end()
        done()
      }),
    )
    const sock = await rawConnect(port)
    let received = 0
    sock.on('data', (d: Buffer) => (received += d.length))
    sock.write('GET /stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')
    sock.pause()
    await sleep(400)
    // 64 MiB to send; while the client reads nothing, the handler is held back after a few MiB.
    expect(writes * 64 * 1024).toBeLessThan(24 * 1024 * 1024)
    expect(stalls).toBeGreaterThan(0)
    sock.resume()
    await finished
    const deadline = Date.now() + 10_000
    while (received < 64 * 1024 * 1024 && Date.now() < deadline) await sleep(20)
    expect(received).toBeGreaterThan(64 * 1024 * 1024)
    expect(writes).toBe(1024)
    sock.destroy()
  })

  it('tells a handler that its client went away, and drops its later answer', async () => {
    let aborted!: () => void
    const wasAborted = new Promise<void>((r) => (aborted = r))
    let answered = false
    const { port, base } = await start((s) =>
      s.route('GET', '/slow', async (_req, res) => {
        res.onAborted(aborted)
        await wasAborted
        res.send(200, null, 'late') // dropped: the native response is gone
        answered = true
      }),
    )
    const sock = await rawConnect(port)
    sock.write('GET /slow HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')
    await sleep(100)
    sock.destroy()
    await wasAborted
    await sleep(20)
    expect(answered).toBe(true)
    // The server still serves.
    expect((await fetch(`${base}/slow2`)).status).toBe(404)
  })

  it('answers HttpError with its status, and a handler that forgot to answer with 500', async () => {
    const { base } = await start((s) => {
      s.route('GET', '/teapot', async () => {
        throw new HttpError(418, 'short and stout', { 'Content-Type': 'application/json' }, '{"error_code":418}')
      })
      s.route('GET', '/forgot', async () => {})
    })
    const r = await fetch(`${base}/teapot`)
    expect(r.status).toBe(418)
    expect(await r.text()).toBe('{"error_code":418}')
    expect((await fetch(`${base}/forgot`)).status).toBe(500)
  })

  it('serves static assets compressed as the client accepts, with ETags', async () => {
    const html = '<!doctype html><title>Skein</title>' + '<p>hello</p>'.repeat(200)
    const { base } = await start((s) => s.static('/ui', staticAssetsFrom({ 'index.html': html, 'app.js': 'console.log(1)\n'.repeat(100) })))
    let r = await fetch(`${base}/ui/`, { headers: { 'Accept-Encoding': 'gzip, br' } })
    expect(r.status).toBe(200)
    expect(r.headers.get('content-encoding')).toBe('br')
    expect(r.headers.get('content-type')).toBe('text/html; charset=utf-8')
    expect(await r.text()).toBe(html) // fetch decodes br
    const raw = await rawGet(new URL(base).port, '/ui/app.js', { 'Accept-Encoding': 'gzip' })
    expect(raw.headers['content-encoding']).toBe('gzip')
    expect(gunzipSync(raw.body).toString()).toBe('console.log(1)\n'.repeat(100))
    const rawBr = await rawGet(new URL(base).port, '/ui/app.js', { 'Accept-Encoding': 'br;q=1, gzip;q=0' })
    expect(brotliDecompressSync(rawBr.body).toString()).toBe('console.log(1)\n'.repeat(100))
    const plain = await rawGet(new URL(base).port, '/ui/app.js', {})
    expect(plain.headers['content-encoding']).toBeUndefined()
    expect(plain.body.toString()).toBe('console.log(1)\n'.repeat(100))
    const etag = plain.headers['etag']!
    r = await fetch(`${base}/ui/app.js`, { headers: { 'If-None-Match': etag } })
    expect(r.status).toBe(304)
    r = await fetch(`${base}/ui/app.js`, { method: 'HEAD' })
    expect(r.status).toBe(200)
    expect((await fetch(`${base}/ui/missing.js`)).status).toBe(404)
  })

  it('WebSocket routes: upgrade data, messages both ways, refusal, and backpressure on a slow reader', async () => {
    const events: string[] = []
    let drains = 0
    let dropped = 0
    let buffered = 0
    const { port } = await start((s) => {
      s.ws<{ topic: string }>('/ws/:topic', {
        maxBackpressure: 256 * 1024,
        upgrade: async (req) => {
          if (req.params.topic === 'forbidden') throw new HttpError(403, 'no')
          return { topic: req.params.topic! }
        },
        open: (ws) => events.push(`open ${ws.data.topic}`),
        message: (ws, msg) => {
          const text = msg.toString()
          if (text === 'flood') {
            // Sends until the queue passes maxBackpressure: sends then report 'dropped'.
            const chunk = Buffer.alloc(64 * 1024)
            for (let i = 0; i < 200; i++) {
              const r = ws.send(chunk)
              if (r === 'buffered') buffered++
              if (r === 'dropped') dropped++
            }
            events.push(`queued ${ws.bufferedAmount > 0}`)
          } else ws.send(`echo ${ws.data.topic} ${text}`)
        },
        drain: () => drains++,
        close: (ws, code) => events.push(`close ${ws.data.topic} ${code}`),
      })
    })
    const ws = await TestWebSocket.open(port, '/ws/orders')
    ws.send('hi')
    const [m] = await ws.waitFor(1)
    expect(m!.data.toString()).toBe('echo orders hi')
    await expect(TestWebSocket.open(port, '/ws/forbidden')).rejects.toThrow(/403/)
    ws.pause()
    ws.send('flood')
    const deadline = Date.now() + 5000
    while (!events.includes('queued true') && Date.now() < deadline) await sleep(20)
    expect(events).toContain('queued true')
    expect(buffered).toBeGreaterThan(0)
    expect(dropped).toBeGreaterThan(0)
    ws.resume()
    const deadline2 = Date.now() + 5000
    while (drains === 0 && Date.now() < deadline2) await sleep(20)
    expect(drains).toBeGreaterThan(0)
    ws.close()
    const deadline3 = Date.now() + 5000
    while (!events.some((e) => e.startsWith('close orders')) && Date.now() < deadline3) await sleep(20)
    expect(events[0]).toBe('open orders')
    expect(events.some((e) => e.startsWith('close orders'))).toBe(true)
  })

  it('survives a client that uploads on after its answer, keeps none of the rest, and closes that connection', async () => {
    // Issue 31: the REST produce route answers 400 at the first bad bytes while a chunked upload goes on;
    // pausing the ended response threw inside a uWS callback and ended the process.
    const { port, base } = await start((s) => {
      s.streamRoute('POST', '/records', async (req, res) => {
        for await (const _chunk of req.body) {
          res.send(400, null, 'bad records')
          return
        }
      }, { bufferBytes: 64 * 1024 })
      s.route('GET', '/alive', (_req, res) => res.send(200, null, 'yes'))
    })
    const sock = await rawConnect(port)
    let response = ''
    sock.on('data', (d) => (response += d.toString()))
    sock.on('error', () => undefined)
    const closed = new Promise<void>((r) => sock.once('close', () => r()))
    sock.write('POST /records HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n')
    const chunk = Buffer.alloc(256 * 1024, 120)
    const framed = Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')])
    let written = 0
    let isClosed = false
    void closed.then(() => (isClosed = true))
    const deadline = Date.now() + 10_000
    while (!isClosed && written < 100 * 1024 * 1024 && Date.now() < deadline) {
      if (!sock.write(framed)) await Promise.race([new Promise((r) => sock.once('drain', r)), closed, sleep(200)])
      written += chunk.length
    }
    await Promise.race([closed, sleep(5000)])
    expect(response).toMatch(/^HTTP\/1.1 400 /)
    // The server closed the connection rather than read 100 MiB it does not want.
    expect(isClosed).toBe(true)
    expect(written).toBeLessThan(100 * 1024 * 1024)
    const r = await fetch(`${base}/alive`)
    expect(await r.text()).toBe('yes')
  })

  it('refuses a port that another process listens on, naming the config key (no shared SO_REUSEPORT port)', async () => {
    // Issue 31: uWS's default listen sets SO_REUSEPORT, so a second broker with the same config shared
    // 8081/8082 and the kernel alternated requests between the two processes.
    const holder = spawn(process.execPath, ['--input-type=module', '-e', `
      const { createHttpServer } = await import(${JSON.stringify(join(REPO_ROOT, 'dist', 'src', 'http', 'index.js'))})
      const s = await createHttpServer()
      s.route('GET', '/who', (_q, r) => r.send(200, null, 'holder'))
      const l = await s.listen('http://127.0.0.1:0')
      process.stdout.write(l.port + '\\n')
      setInterval(() => undefined, 1000)
    `], { stdio: ['ignore', 'pipe', 'inherit'] })
    try {
      const port = await new Promise<number>((resolve, reject) => {
        holder.stdout!.once('data', (d: Buffer) => resolve(Number(d.toString().trim())))
        holder.once('exit', (code) => reject(new Error(`the holder exited with ${code}`)))
      })
      const other = await createHttpServer()
      servers.push(other)
      other.route('GET', '/who', (_q, r) => r.send(200, null, 'intruder'))
      await expect(other.listen(`http://127.0.0.1:${port}`, 'rest.listeners')).rejects.toThrow(/^rest.listeners: cannot listen on http:\/\/127.0.0.1:\d+: EADDRINUSE/)
      for (let i = 0; i < 10; i++) expect(await (await fetch(`http://127.0.0.1:${port}/who`)).text()).toBe('holder')
    } finally {
      holder.kill('SIGKILL')
    }
  })

  it('refuses state changes and WebSockets from pages of other origins, and foreign Host names on loopback (issue 31)', async () => {
    const setup = (s: HttpServer): void => {
      s.route('GET', '/read', (_req, res) => res.send(200, null, 'read'))
      s.route('POST', '/topics', (_req, res) => res.send(201, null, 'created'))
      s.ws('/ws', { open: (c) => c.send('hello') })
    }
    const { port } = await start(setup)
    const post = (headers: Record<string, string>): Promise<number> =>
      exchange(port, `POST /topics HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: text/plain\r\nContent-Length: 1\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\nx`).then((r) => r.status)
    // A cross-origin "simple" form post: refused; the same origin, or no Origin at all (curl, clients): served.
    expect(await post({ Origin: 'http://evil.example' })).toBe(403)
    expect(await post({ Origin: 'null' })).toBe(403)
    expect(await post({ Origin: `http://127.0.0.1:${port}` })).toBe(201)
    expect(await post({})).toBe(201)
    // Reads are not checked (the browser's same-origin policy keeps their answers from other pages).
    expect((await exchange(port, `GET /read HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nOrigin: http://evil.example\r\n\r\n`)).status).toBe(200)
    // WebSocket handshakes carry Origin: another origin's is refused before the upgrade.
    await expect(TestWebSocket.open(port, '/ws', { Origin: 'http://evil.example' })).rejects.toThrow(/403/)
    const ws = await TestWebSocket.open(port, '/ws', { Origin: 'http://127.0.0.1' })
    expect((await ws.waitFor(1))[0]!.data.toString()).toBe('hello')
    ws.close()
    // DNS rebinding: a loopback listener answers only Host names of loopback.
    expect((await exchange(port, `GET /read HTTP/1.1\r\nHost: evil.example:${port}\r\n\r\n`)).status).toBe(403)
    expect((await exchange(port, `GET /read HTTP/1.1\r\nHost: localhost:${port}\r\n\r\n`)).status).toBe(200)
    expect((await exchange(port, `GET /read HTTP/1.1\r\nHost: [::1]:${port}\r\n\r\n`)).status).toBe(200)
    // access.control.allow.origin lets named origins (or *) in.
    const allowed = await start(setup, { allowedOrigins: ['http://console.example:3000'] })
    const postTo = (p: number, origin: string): Promise<number> =>
      exchange(p, `POST /topics HTTP/1.1\r\nHost: 127.0.0.1:${p}\r\nContent-Length: 0\r\nOrigin: ${origin}\r\n\r\n`).then((r) => r.status)
    expect(await postTo(allowed.port, 'http://console.example:3000')).toBe(201)
    expect(await postTo(allowed.port, 'http://evil.example')).toBe(403)
    const any = await start(setup, { allowedOrigins: ['*'] })
    expect(await postTo(any.port, 'http://evil.example')).toBe(201)
  })

  it('serves any Host name on a listener bound to every interface', async () => {
    const server = await createHttpServer()
    servers.push(server)
    server.route('GET', '/read', (_req, res) => res.send(200, null, 'read'))
    const l = await server.listen('http://0.0.0.0:0')
    expect((await exchange(l.port, `GET /read HTTP/1.1\r\nHost: broker.example:${l.port}\r\n\r\n`)).status).toBe(200)
  })

  it('listens on several URLs, refuses a busy port, and close() ends open connections', async () => {
    let aborted = false
    const { server, port } = await start((s) =>
      s.route('GET', '/hang', (_req, res) => {
        res.onAborted(() => (aborted = true))
        return new Promise<void>((resolve) => res.onAborted(resolve))
      }),
    )
    const second = await server.listen('http://127.0.0.1:0')
    expect(server.listeners.map((l) => l.port)).toEqual([port, second.port])
    const other = await createHttpServer()
    servers.push(other)
    await expect(other.listen(`http://127.0.0.1:${port}`)).rejects.toThrow(/^listeners: cannot listen on .*: EADDRINUSE \(address already in use\)$/)
    await expect(other.listen(`http://127.0.0.1:${port}`, 'rest.listeners')).rejects.toBeInstanceOf(ListenError)
    const pending = fetch(`http://127.0.0.1:${second.port}/hang`).catch((e: Error) => e)
    await sleep(100)
    await server.close()
    expect(await pending).toBeInstanceOf(Error)
    expect(aborted).toBe(true)
    await expect(fetch(`http://127.0.0.1:${port}/hang`)).rejects.toThrow()
  })
})

describe('uWebSockets.js stays behind src/http', () => {
  it('is imported by src/http/uws.ts only', () => {
    const importers: string[] = []
    const walk = (dir: string): void => {
      for (const name of readdirSync(dir)) {
        const full = join(dir, name)
        if (statSync(full).isDirectory()) walk(full)
        else if (name.endsWith('.ts') && /from ['"]uwebsockets['"]|import\(['"]uwebsockets['"]\)|require\(['"]uwebsockets['"]\)/.test(readFileSync(full, 'utf8'))) importers.push(full.slice(REPO_ROOT.length + 1))
      }
    }
    walk(join(REPO_ROOT, 'src'))
    expect(importers).toEqual(['src/http/uws.ts'])
  })

  it('is loaded only when a server is created (dist/, after npx tsc)', () => {
    const script = `
      import { createRequire } from 'node:module'
      const cache = createRequire(import.meta.url).cache
      const loaded = () => Object.keys(cache).some((k) => k.includes('uwebsockets'))
      const http = await import('./dist/src/http/index.js')
      await import('./dist/src/rest/index.js').catch(() => {})
      const before = loaded()
      const s = await http.createHttpServer()
      const after = loaded()
      await s.close()
      console.log(JSON.stringify({ before, after }))`
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: REPO_ROOT }).toString().trim()
    expect(JSON.parse(out)).toEqual({ before: false, after: true })
  })
})

/** GET over a raw socket, so that the body is seen as sent (fetch would decode it). */
async function rawGet(port: string, path: string, headers: Record<string, string>): Promise<{ status: number; headers: Record<string, string>; body: Buffer }> {
  const sock = await rawConnect(Number(port))
  const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('')
  sock.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n${extra}\r\n`)
  const parts: Buffer[] = []
  sock.on('data', (d: Buffer) => parts.push(d))
  await new Promise((r) => sock.on('close', r))
  const all = Buffer.concat(parts)
  const end = all.indexOf('\r\n\r\n')
  const lines = all.subarray(0, end).toString().split('\r\n')
  const h: Record<string, string> = {}
  for (const l of lines.slice(1)) {
    const i = l.indexOf(':')
    h[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim()
  }
  let body = all.subarray(end + 4)
  if (h['content-length'] !== undefined) body = body.subarray(0, Number(h['content-length']))
  return { status: Number(lines[0]!.split(' ')[1]), headers: h, body }
}

/** One raw request on a fresh connection: the status and body of its answer. */
async function exchange(port: number, request: string): Promise<{ status: number; text: string }> {
  const sock = await rawConnect(port)
  sock.on('error', () => undefined)
  let text = ''
  sock.on('data', (d: Buffer) => {
    text += d.toString()
    if (/\r\n\r\n/.test(text)) sock.end()
  })
  sock.write(request)
  await new Promise((r) => sock.on('close', r))
  return { status: Number(text.split(' ')[1]), text }
}
