// Peer systems and third-party clients measured in the same run: Redis Streams (XADD of the same
// 100-byte values, pipelined, persistence off) and librdkafka through kcat (producer and consumer), so
// that the produce figure does not depend on Skein's own client (bench/broker/rdkafka-perf.ts drives
// librdkafka without kcat's per-record text I/O, with the same settings). A tool that is not installed is reported
// with the command that installs it, never dropped from the table.
import { spawn } from 'node:child_process'
import { closeSync, openSync, writeSync } from 'node:fs'
import { connect } from 'node:net'
import { freePort } from './broker-process.js'
import { hasCommand, run } from './run.js'

export const PEER_INSTALL = 'apt-get install -y redis-server nats-server'
export const KCAT_INSTALL = 'apt-get install -y kcat'

export type Measured<T> = { ok: true; value: T } | { ok: false; reason: string }

export interface RedisResult {
  recordsPerSec: number
  /** The redis-benchmark settings of the best run. */
  setting: string
  runs: { setting: string; recordsPerSec: number }[]
}

export function waitForPort(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  return new Promise((resolve, reject) => {
    const attempt = (): void => {
      const s = connect({ host: '127.0.0.1', port })
      s.once('connect', () => {
        s.destroy()
        resolve()
      })
      s.once('error', () => {
        if (Date.now() > deadline) reject(new Error(`nothing listening on ${port} after ${timeoutMs} ms`))
        else setTimeout(attempt, 50)
      })
    }
    attempt()
  })
}

/**
 * Redis Streams: a fresh `redis-server --save '' --appendonly no` on a free port, then `redis-benchmark
 * XADD bench * v <100 bytes>` with one connection and with four, both pipelining 1,000 commands (a single
 * pipelined client is what one Kafka producer is; four give Redis its better figure on 2 cores). The
 * better run is the peer figure.
 */
export async function redisXadd(records: number): Promise<Measured<RedisResult>> {
  if (!(await hasCommand('redis-server')) || !(await hasCommand('redis-benchmark'))) return { ok: false, reason: `not installed (${PEER_INSTALL})` }
  const port = await freePort()
  const server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no'], { stdio: 'ignore' })
  try {
    await waitForPort(port, 10000)
    const value = 'r'.repeat(100)
    const runs: { setting: string; recordsPerSec: number }[] = []
    for (const clients of [1, 4]) {
      const setting = `-c ${clients} -P 1000`
      const r = await run('redis-benchmark', ['-p', String(port), '-n', String(records), '-c', String(clients), '-P', '1000', '--csv', 'XADD', 'bench', '*', 'v', value], { timeoutMs: 120000 })
      if (r.code !== 0) return { ok: false, reason: `redis-benchmark exited ${r.code}: ${r.stderr.slice(0, 200)}` }
      // --csv: "test","rps","avg_latency_ms",...
      const line = r.stdout.trim().split('\n').find((l) => l.startsWith('"XADD'))
      const rps = line === undefined ? NaN : Number(line.split('","')[1])
      if (!Number.isFinite(rps)) return { ok: false, reason: `unexpected redis-benchmark output: ${r.stdout.slice(0, 200)}` }
      runs.push({ setting, recordsPerSec: rps })
      await run('redis-cli', ['-p', String(port), 'DEL', 'bench'], { timeoutMs: 10000 }).catch(() => undefined)
    }
    const best = runs.reduce((a, b) => (b.recordsPerSec > a.recordsPerSec ? b : a))
    return { ok: true, value: { recordsPerSec: best.recordsPerSec, setting: best.setting, runs } }
  } finally {
    server.kill('SIGTERM')
  }
}

/** A file of `records` lines of `size` bytes each (the newline is the delimiter, not part of the value). */
export function writeRecordFile(path: string, records: number, size: number): void {
  const line = Buffer.alloc(size + 1, 0x6b)
  line[size] = 0x0a
  const chunkLines = 10000
  const chunk = Buffer.allocUnsafe(line.length * chunkLines)
  for (let i = 0; i < chunkLines; i++) line.copy(chunk, i * line.length)
  const fd = openSync(path, 'w')
  try {
    for (let done = 0; done < records; done += chunkLines) {
      const n = Math.min(chunkLines, records - done)
      writeSync(fd, chunk, 0, n * line.length)
    }
  } finally {
    closeSync(fd)
  }
}

export interface ClientRun {
  records: number
  recordsPerSec: number
  mbPerSec: number
  seconds: number
}

/**
 * The librdkafka producer settings of the benchmark, for kcat and bench/broker/rdkafka-perf.c alike:
 * acks=1, linger.ms=5, batches of up to 100,000 records (librdkafka's batch.size, 1,000,000 bytes, is the
 * bound that applies to 100-byte records), a local queue big enough for the whole run, no compression.
 */
export const RDKAFKA_PRODUCER_CONFIG: Record<string, string | number> = {
  acks: 1,
  'linger.ms': 5,
  'batch.num.messages': 100000,
  'queue.buffering.max.messages': 2000000,
  'queue.buffering.max.kbytes': 2097151,
  'compression.codec': 'none',
}
/** The librdkafka consumer setting of the benchmark: a long-poll Fetch waits at most 100 ms. */
export const RDKAFKA_CONSUMER_CONFIG: Record<string, string | number> = { 'fetch.wait.max.ms': 100 }

/** librdkafka configuration properties as -X key=value arguments (kcat and rdkafka-perf take the same). */
export function rdkafkaArgs(config: Record<string, string | number>): string[] {
  return Object.entries(config).flatMap(([k, v]) => ['-X', `${k}=${v}`])
}

/**
 * librdkafka producer (kcat -P) with RDKAFKA_PRODUCER_CONFIG: the records of `file`,
 * one per line. The figure is records over kcat's wall-clock time, which includes its start, metadata
 * and the final flush of every acknowledgement (kcat exits only when all are delivered).
 */
export async function kcatProduce(bootstrap: string, topic: string, file: string, records: number, size: number): Promise<Measured<ClientRun>> {
  if (!(await hasCommand('kcat', ['-V']))) return { ok: false, reason: `not installed (${KCAT_INSTALL})` }
  const r = await run('kcat', ['-P', '-b', bootstrap, '-t', topic, ...rdkafkaArgs(RDKAFKA_PRODUCER_CONFIG)], { stdinFile: file, timeoutMs: 180000 })
  if (r.code !== 0) return { ok: false, reason: `kcat -P exited ${r.code}: ${r.stderr.slice(0, 300)}` }
  const s = r.ms / 1000
  return { ok: true, value: { records, recordsPerSec: records / s, mbPerSec: (records * size) / 2 ** 20 / s, seconds: s } }
}

/** librdkafka consumer (kcat -C -o beginning -e, RDKAFKA_CONSUMER_CONFIG): reads every partition to its end; counts the records it printed. */
export async function kcatConsume(bootstrap: string, topic: string, size: number): Promise<Measured<ClientRun>> {
  if (!(await hasCommand('kcat', ['-V']))) return { ok: false, reason: `not installed (${KCAT_INSTALL})` }
  const r = await run('kcat', ['-C', '-b', bootstrap, '-t', topic, '-o', 'beginning', '-e', '-q', '-f', '\n', ...rdkafkaArgs(RDKAFKA_CONSUMER_CONFIG)], { timeoutMs: 180000 })
  if (r.code !== 0) return { ok: false, reason: `kcat -C exited ${r.code}: ${r.stderr.slice(0, 300)}` }
  const records = r.lines
  const s = r.ms / 1000
  return { ok: true, value: { records, recordsPerSec: records / s, mbPerSec: (records * size) / 2 ** 20 / s, seconds: s } }
}
