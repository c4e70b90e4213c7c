// NATS JetStream as a peer of the produce workload, measured in the same run as Skein and Redis.
//
// What it measures: how fast one client connection gets 100-byte records persisted and acknowledged by a
// JetStream stream with file storage (one replica), publishing asynchronously with a bounded window of
// outstanding acknowledgements, as a NATS client's async publish does. The figure is acknowledged records
// over the time from the first PUB to the last acknowledgement. Optionally (a second, clearly labelled
// figure) core NATS pub/sub: the same records through the server to one subscriber, in memory and without
// persistence, so not comparable to a log on disk.
//
// How: a fresh `nats-server -js -sd <temp dir under the benchmark's data parent> -a 127.0.0.1 -p <free
// port>` (always stopped, its store dir removed), and NATS's text protocol spoken here over node:net
// (no NATS client library is a dependency): INFO, CONNECT {"verbose":false,"headers":false,...},
// PING/PONG, SUB, PUB subject [reply] #bytes, MSG subject sid [reply] #bytes, -ERR. The stream is created
// through the JetStream API ($JS.API.STREAM.CREATE.BENCH, file storage, subjects bench.>); every record
// is `PUB bench.x _INBOX.<token>.<run>.<i> 100` and its acknowledgement, {"stream":"BENCH","seq":n} or
// {"error":...}, arrives as a MSG on that inbox. Every record must be acknowledged exactly once and any
// error acknowledgement fails the measurement; at the end the stream must hold every acknowledged record
// ($JS.API.STREAM.INFO.BENCH). JetStream's file store writes messages to its block files through the
// page cache and fsyncs them every 2 minutes by default (its sync_interval), comparable to Skein's log at
// acks=1 (written, not fsynced per batch).
//
// A warm-up run of a fifth of the records with each window in WINDOWS picks the window (the best warm-up
// figure); two measured runs with it follow and the better one is the figure (both are reported), as the
// Skein produce workload does. CPU per record of the server (/proc utime + stime) and of this client
// (process.cpuUsage) are over both measured runs.
import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { connect, type Socket } from 'node:net'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { freePort, processCpuMicros } from './broker-process.js'
import { waitForPort, type Measured } from './peers.js'
import { hasCommand } from './run.js'

export const NATS_INSTALL = 'apt-get install -y nats-server'
/** Windows of outstanding acknowledgements tried in the warm-up. */
export const WINDOWS = [1000, 10_000, 50_000] as const
const RECORD_SIZE = 100
const STREAM = 'BENCH'
/** A run fails when no acknowledgement arrives for this long. */
const STALL_MS = 30_000
/** NATS's default max_control_line; a longer control line from the server is a protocol error. */
const MAX_CONTROL_LINE = 4096
/** Bounds on the max_payload the server announces (its default is 1 MiB, its maximum 64 MiB). */
const DEFAULT_MAX_PAYLOAD = 1 << 20
const MAX_MAX_PAYLOAD = 64 << 20

export interface WindowedRun {
  window: number
  records: number
  recordsPerSec: number
}

export interface NatsFigure {
  recordsPerSec: number
  mbPerSec: number
  /** The window of the measured runs (the best in the warm-up). */
  window: number
  /** The two measured runs. */
  runs: number[]
  /** Warm-up runs, one per window tried. */
  warmup: WindowedRun[]
  serverCpuUsPerRecord: number
  clientCpuUsPerRecord: number
}

export interface NatsResult {
  version: string
  jetstream: NatsFigure
  /** Records in the stream after the runs (every acknowledged record; checked). */
  streamMessages: number
  /** Core NATS pub/sub, in memory, no persistence (not comparable to a log on disk). */
  core: Measured<NatsFigure>
}

// --- the protocol ---

type MsgHandler = (subject: string, sid: string, payload: Buffer) => void

/**
 * One client connection. The parser keeps at most one partial frame between reads, bounded by
 * MAX_CONTROL_LINE + max_payload + 2 bytes (a MSG announcing more than max_payload is a protocol error).
 * Payloads handed to onMsg are views of the read buffer, valid only during the call.
 */
export class NatsConnection {
  onMsg: MsgHandler = () => undefined
  /** Set once: the first -ERR, protocol error, socket error or close. */
  failure: Error | null = null
  private readonly failListeners: ((err: Error) => void)[] = []
  private readonly pongs: { resolve: () => void; reject: (err: Error) => void }[] = []
  private rest: Buffer | null = null
  /** Payload bytes of the MSG whose control line was parsed, or -1 between frames. */
  private need = -1
  private msgSubject = ''
  private msgSid = ''
  private maxPayload = DEFAULT_MAX_PAYLOAD
  info: Record<string, unknown> | null = null
  private infoWaiter: (() => void) | null = null

  private constructor(readonly socket: Socket) {
    socket.setNoDelay(true)
    socket.on('data', (chunk: Buffer) => {
      try {
        this.parse(chunk)
      } catch (err) {
        this.fail(err as Error)
      }
    })
    socket.on('error', (err) => this.fail(err))
    socket.on('close', () => this.fail(new Error('connection closed by the server')))
  }

  static async open(port: number, name: string, timeoutMs = 10_000): Promise<NatsConnection> {
    const socket = connect({ host: '127.0.0.1', port })
    const c = new NatsConnection(socket)
    const timer = setTimeout(() => c.fail(new Error(`no INFO/PONG from nats-server within ${timeoutMs} ms`)), timeoutMs)
    try {
      await new Promise<void>((resolve, reject) => {
        c.infoWaiter = resolve
        c.onFailure(reject)
      })
      const connectOptions = { verbose: false, pedantic: false, tls_required: false, name, lang: 'node', version: '0', protocol: 1, echo: false, headers: false, no_responders: false }
      socket.write(`CONNECT ${JSON.stringify(connectOptions)}\r\n`)
      // The PONG to the first PING says the CONNECT was accepted (a rejected one gets -ERR and a close).
      await c.ping()
    } catch (err) {
      c.close()
      throw err
    } finally {
      clearTimeout(timer)
    }
    return c
  }

  /** Resolves when the server has processed everything written before it (PONG). */
  ping(): Promise<void> {
    if (this.failure !== null) return Promise.reject(this.failure)
    return new Promise((resolve, reject) => {
      this.pongs.push({ resolve, reject })
      this.socket.write('PING\r\n')
    })
  }

  onFailure(fn: (err: Error) => void): void {
    if (this.failure !== null) fn(this.failure)
    else this.failListeners.push(fn)
  }

  close(): void {
    this.fail(new Error('closed'))
    this.socket.destroy()
  }

  private fail(err: Error): void {
    if (this.failure !== null) return
    this.failure = err
    for (const p of this.pongs.splice(0)) p.reject(err)
    for (const fn of this.failListeners.splice(0)) fn(err)
    this.socket.destroy()
  }

  private parse(chunk: Buffer): void {
    if (this.failure !== null) return
    const b = this.rest === null ? chunk : Buffer.concat([this.rest, chunk])
    this.rest = null
    let pos = 0
    while (pos < b.length) {
      if (this.need >= 0) {
        const end = pos + this.need
        if (b.length < end + 2) break
        if (b[end] !== 0x0d || b[end + 1] !== 0x0a) throw new Error('protocol error: MSG payload not followed by CRLF')
        this.need = -1
        this.onMsg(this.msgSubject, this.msgSid, b.subarray(pos, end))
        if (this.failure !== null) return
        pos = end + 2
        continue
      }
      const eol = b.indexOf('\r\n', pos, 'latin1')
      if (eol === -1) {
        if (b.length - pos > MAX_CONTROL_LINE) throw new Error(`protocol error: control line longer than ${MAX_CONTROL_LINE} bytes`)
        break
      }
      if (eol - pos > MAX_CONTROL_LINE) throw new Error(`protocol error: control line longer than ${MAX_CONTROL_LINE} bytes`)
      const line = b.toString('latin1', pos, eol)
      pos = eol + 2
      this.control(line)
      if (this.failure !== null) return
    }
    if (pos < b.length) this.rest = b.subarray(pos)
  }

  private control(line: string): void {
    // The server separates fields by single spaces: split on those for MSG, the line of every record,
    // and fall back to the protocol's general whitespace rules for anything else.
    if (line.startsWith('MSG ')) {
      const f = line.split(' ')
      if (f.every((x) => x !== '' && !x.includes('\t'))) return this.msg(f, line)
    }
    const sp = line.search(/[ \t]/)
    const op = (sp === -1 ? line : line.slice(0, sp)).toUpperCase()
    switch (op) {
      case 'MSG':
        return this.msg(line.trim().split(/[ \t]+/), line)
      case 'PING':
        this.socket.write('PONG\r\n')
        return
      case 'PONG': {
        const p = this.pongs.shift()
        if (p === undefined) throw new Error('protocol error: PONG without PING')
        p.resolve()
        return
      }
      case '+OK':
        return
      case '-ERR':
        throw new Error(`nats-server: -ERR ${line.slice(4).trim()}`)
      case 'INFO': {
        const info = JSON.parse(line.slice(sp + 1)) as Record<string, unknown>
        const mp = info['max_payload']
        this.maxPayload = typeof mp === 'number' && Number.isInteger(mp) && mp > 0 ? Math.min(mp, MAX_MAX_PAYLOAD) : DEFAULT_MAX_PAYLOAD
        this.info = info
        const w = this.infoWaiter
        this.infoWaiter = null
        w?.()
        return
      }
      default:
        // HMSG cannot arrive (headers are off in CONNECT); anything else is not NATS.
        throw new Error(`protocol error: unexpected '${line.slice(0, 200)}'`)
    }
  }

  /** MSG <subject> <sid> [reply-to] <#bytes>: `f` holds the fields, the operation first. */
  private msg(f: string[], line: string): void {
    if (f.length !== 4 && f.length !== 5) throw new Error(`protocol error: bad MSG line '${line.slice(0, 200)}'`)
    const size = f[f.length - 1]!
    const n = /^\d{1,9}$/.test(size) ? Number(size) : NaN
    if (!(n <= this.maxPayload)) throw new Error(`protocol error: MSG of ${size} bytes (max_payload ${this.maxPayload})`)
    this.msgSubject = f[1]!
    this.msgSid = f[2]!
    this.need = n
  }
}

/** A JetStream API request: one reply on a fresh inbox, parsed; rejects on an API error or no reply. */
async function jsRequest(c: NatsConnection, inboxPrefix: string, subject: string, body: unknown, timeoutMs = 10_000): Promise<Record<string, unknown>> {
  const inbox = `${inboxPrefix}req${randomBytes(4).toString('hex')}`
  const prev = c.onMsg
  try {
    return await new Promise<Record<string, unknown>>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no reply to ${subject} within ${timeoutMs} ms (JetStream not enabled?)`)), timeoutMs)
      c.onFailure((err) => {
        clearTimeout(timer)
        reject(err)
      })
      c.onMsg = (subj, _sid, payload) => {
        if (subj !== inbox) return
        clearTimeout(timer)
        try {
          const reply = JSON.parse(payload.toString('utf8')) as Record<string, unknown>
          const e = reply['error'] as { code?: number; description?: string } | undefined
          if (e !== undefined) reject(new Error(`${subject}: ${e.description ?? 'error'} (${e.code ?? '?'})`))
          else resolve(reply)
        } catch (err) {
          reject(err as Error)
        }
      }
      const data = Buffer.from(JSON.stringify(body))
      c.socket.write(`PUB ${subject} ${inbox} ${data.length}\r\n`)
      c.socket.write(data)
      c.socket.write('\r\n')
    })
  } finally {
    c.onMsg = prev
  }
}

// --- the workloads ---

const ACK_PREFIX = Buffer.from(`{"stream":"${STREAM}","seq":`, 'latin1')

/**
 * Publishes `records` 100-byte records with at most `window` of them unconfirmed and resolves with the
 * rate from the first PUB to the last confirmation. JetStream: each PUB carries its own reply inbox and is
 * confirmed by its acknowledgement there. Core: PUBs without reply to a subject that `sub` (a second
 * connection) subscribes to; a record is confirmed when the subscriber receives it.
 */
function windowedRun(mode: 'jetstream' | 'core', pub: NatsConnection, sub: NatsConnection, inboxPrefix: string, runId: number, records: number, window: number): Promise<WindowedRun> {
  const payload = Buffer.alloc(RECORD_SIZE, 0x72)
  const replyPrefix = `${inboxPrefix}${runId}.`
  const seen = mode === 'jetstream' ? new Uint8Array(records) : null
  let sent = 0
  let confirmed = 0
  let t0 = 0
  let lastProgress = performance.now()
  // Refill once a sixteenth of the window is free, so every write carries a batch of PUBs.
  const refillAt = Math.max(1, Math.floor(window / 16))
  return new Promise<WindowedRun>((resolve, reject) => {
    let done = false
    // Refill after each read of the confirming connection (its parser, registered first, has handled the
    // read by then): the message handler runs per record, this once per read.
    const onData = (): void => {
      if (!done) refill()
    }
    const finish = (err: Error | null): void => {
      if (done) return
      done = true
      clearInterval(watchdog)
      sub.socket.off('data', onData)
      sub.onMsg = () => undefined
      if (err !== null) reject(err)
      else resolve({ window, records, recordsPerSec: records / ((performance.now() - t0) / 1000) })
    }
    const watchdog = setInterval(() => {
      if (performance.now() - lastProgress > STALL_MS) finish(new Error(`${mode}: no progress for ${STALL_MS / 1000} s (${confirmed} of ${records} confirmed, ${sent} sent)`))
    }, 1000)
    const subject = mode === 'jetstream' ? 'bench.x' : 'core.x'
    const frameMax = 4 + subject.length + 1 + replyPrefix.length + 11 + 4 + 2 + RECORD_SIZE + 2
    const refill = (): void => {
      const n = Math.min(window - (sent - confirmed), records - sent)
      if (n <= 0 || (n < refillAt && sent + n < records)) return
      const buf = Buffer.allocUnsafe(n * frameMax)
      let off = 0
      for (let i = 0; i < n; i++, sent++) {
        off += buf.write(mode === 'jetstream' ? `PUB ${subject} ${replyPrefix}${sent} ${RECORD_SIZE}\r\n` : `PUB ${subject} ${RECORD_SIZE}\r\n`, off, 'latin1')
        off += payload.copy(buf, off)
        buf[off++] = 0x0d
        buf[off++] = 0x0a
      }
      pub.socket.write(buf.subarray(0, off))
    }
    sub.onMsg = (subj, _sid, data) => {
      if (mode === 'jetstream') {
        if (!subj.startsWith(replyPrefix)) return // a request's inbox
        const i = Number(subj.slice(replyPrefix.length))
        if (!Number.isInteger(i) || i < 0 || i >= sent) return finish(new Error(`jetstream: acknowledgement on ${subj}, which no record used`))
        if (seen![i] !== 0) return finish(new Error(`jetstream: record ${i} acknowledged twice`))
        seen![i] = 1
        // The common reply is exactly {"stream":"BENCH","seq":n}; anything else is parsed in full.
        const plain = data.length > ACK_PREFIX.length && data.compare(ACK_PREFIX, 0, ACK_PREFIX.length, 0, ACK_PREFIX.length) === 0 && data.indexOf('"error"', 0, 'latin1') === -1
        if (!plain) {
          let reply: { stream?: string; seq?: number; error?: { description?: string; code?: number } }
          try {
            reply = JSON.parse(data.toString('utf8'))
          } catch {
            return finish(new Error(`jetstream: unparsable acknowledgement '${data.toString('utf8', 0, 200)}'`))
          }
          if (reply.error !== undefined) return finish(new Error(`jetstream: error acknowledgement for record ${i}: ${reply.error.description ?? ''} (${reply.error.code ?? '?'})`))
          if (reply.stream !== STREAM || typeof reply.seq !== 'number') return finish(new Error(`jetstream: unexpected acknowledgement '${data.toString('utf8', 0, 200)}'`))
        }
      } else if (subj !== 'core.x' || data.length !== RECORD_SIZE) {
        return finish(new Error(`core: unexpected message on ${subj} (${data.length} bytes)`))
      }
      confirmed++
      lastProgress = performance.now()
      if (confirmed === records) finish(null)
    }
    sub.socket.on('data', onData)
    pub.onFailure(finish)
    sub.onFailure(finish)
    t0 = performance.now()
    refill()
  })
}

async function measure(mode: 'jetstream' | 'core', pub: NatsConnection, sub: NatsConnection, inboxPrefix: string, serverPid: number, records: number, windows: readonly number[], nextRun: () => number): Promise<NatsFigure> {
  const warmup: WindowedRun[] = []
  for (const w of windows) warmup.push(await windowedRun(mode, pub, sub, inboxPrefix, nextRun(), Math.max(1000, Math.floor(records / 5)), w))
  const window = warmup.reduce((a, b) => (b.recordsPerSec > a.recordsPerSec ? b : a)).window
  const server0 = processCpuMicros(serverPid)
  const client0 = process.cpuUsage()
  const a = await windowedRun(mode, pub, sub, inboxPrefix, nextRun(), records, window)
  const b = await windowedRun(mode, pub, sub, inboxPrefix, nextRun(), records, window)
  const client = process.cpuUsage(client0)
  const serverUs = processCpuMicros(serverPid) - server0
  const best = Math.max(a.recordsPerSec, b.recordsPerSec)
  return {
    recordsPerSec: best,
    mbPerSec: (best * RECORD_SIZE) / 2 ** 20,
    window,
    runs: [a.recordsPerSec, b.recordsPerSec],
    warmup,
    serverCpuUsPerRecord: serverUs / (2 * records),
    clientCpuUsPerRecord: (client.user + client.system) / (2 * records),
  }
}

/**
 * The NATS peer: JetStream publish with acknowledgements to a file-backed stream, then core NATS pub/sub,
 * against a fresh nats-server whose store lives in a temp dir under `dataParent` (the disk Skein's log is
 * on). `{ ok: false }` with the install command when nats-server is missing, with the cause on failure.
 */
export async function natsPeer(records: number, dataParent: string, opts: { core?: boolean } = {}): Promise<Measured<NatsResult>> {
  if (!(await hasCommand('nats-server', ['--version']))) return { ok: false, reason: `not installed (${NATS_INSTALL})` }
  const storeDir = mkdtempSync(join(dataParent, 'skein-bench-nats-'))
  let server: ChildProcess | null = null
  let serverLog = ''
  const conns: NatsConnection[] = []
  try {
    const port = await freePort()
    server = spawn('nats-server', ['-js', '-sd', storeDir, '-a', '127.0.0.1', '-p', String(port)], { stdio: ['ignore', 'pipe', 'pipe'] })
    const keepLog = (d: Buffer): void => {
      serverLog = (serverLog + d.toString()).slice(-4000)
    }
    server.stdout!.on('data', keepLog)
    server.stderr!.on('data', keepLog)
    const exited = new Promise<never>((_, reject) => {
      server!.once('exit', (code, signal) => reject(new Error(`nats-server exited (${signal ?? code})`)))
      server!.once('error', (err) => reject(new Error(`nats-server did not start: ${err.message}`)))
    })
    exited.catch(() => undefined)
    await Promise.race([waitForPort(port, 10_000), exited])
    const token = randomBytes(6).toString('hex')
    const inboxPrefix = `_INBOX.${token}.`
    const pub = await NatsConnection.open(port, 'skein-bench-pub')
    conns.push(pub)
    // Replies to this connection's requests and publishes all come to one wildcard subscription.
    pub.socket.write(`SUB ${inboxPrefix}> 1\r\n`)
    await pub.ping()
    const version = String(pub.info?.['version'] ?? '?')
    await jsRequest(pub, inboxPrefix, `$JS.API.STREAM.CREATE.${STREAM}`, {
      name: STREAM,
      subjects: ['bench.>'],
      retention: 'limits',
      storage: 'file',
      num_replicas: 1,
      discard: 'old',
      max_consumers: -1,
      max_msgs: -1,
      max_bytes: -1,
      max_age: 0,
      max_msg_size: -1,
    })
    let runId = 0
    const nextRun = (): number => runId++
    const serverPid = server.pid!
    const jetstream = await measure('jetstream', pub, pub, inboxPrefix, serverPid, records, WINDOWS, nextRun)
    // Every acknowledged record must be in the stream: warm-ups plus both measured runs.
    const expected = WINDOWS.length * Math.max(1000, Math.floor(records / 5)) + 2 * records
    const info = await jsRequest(pub, inboxPrefix, `$JS.API.STREAM.INFO.${STREAM}`, {})
    const streamMessages = Number((info['state'] as { messages?: number } | undefined)?.messages)
    if (streamMessages !== expected) return { ok: false, reason: `the stream holds ${streamMessages} messages, ${expected} were acknowledged` }
    let core: Measured<NatsFigure> = { ok: false, reason: 'not run' }
    if (opts.core !== false) {
      try {
        const sub = await NatsConnection.open(port, 'skein-bench-sub')
        conns.push(sub)
        sub.socket.write('SUB core.x 1\r\n')
        await sub.ping() // the subscription is registered before the first PUB
        core = { ok: true, value: await measure('core', pub, sub, inboxPrefix, serverPid, records, WINDOWS, nextRun) }
      } catch (err) {
        core = { ok: false, reason: (err as Error).message.split('\n')[0]! }
      }
    }
    return { ok: true, value: { version, jetstream, streamMessages, core } }
  } catch (err) {
    const tail = serverLog.trim().split('\n').slice(-3).join(' / ')
    return { ok: false, reason: `${(err as Error).message.split('\n')[0]!}${tail !== '' ? ` (nats-server: ${tail.slice(0, 300)})` : ''}` }
  } finally {
    for (const c of conns) c.close()
    // A server that never started (spawn error) has no pid and will not emit 'exit'.
    if (server !== null && server.pid !== undefined && server.exitCode === null && server.signalCode === null) {
      const s = server
      const gone = new Promise<void>((r) => s.once('exit', () => r()))
      s.kill('SIGTERM')
      const killer = setTimeout(() => s.kill('SIGKILL'), 10_000)
      await gone
      clearTimeout(killer)
    }
    rmSync(storeDir, { recursive: true, force: true })
  }
}
