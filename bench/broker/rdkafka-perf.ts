// librdkafka driven by a small C tool of our own (bench/broker/rdkafka-perf.c: produce and consume from
// memory, no per-record text I/O), so that the librdkafka figures measure the broker rather than kcat's
// line parsing and printing. The C file is compiled on demand with the system compiler against the
// librdkafka headers (`cc -O2 -Wall -o <out> rdkafka-perf.c -lrdkafka`) into a cache directory keyed by
// the source's hash and the compiler, so an edit rebuilds it; CC picks another compiler. A missing
// compiler or missing headers are reported as "not installed", never dropped from the table.
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { REPO_ROOT } from './broker-process.js'
import { lastJsonLine } from './machine.js'
import { rdkafkaArgs, type Measured } from './peers.js'
import { run } from './run.js'

/** The C source, from the repository root (tsc compiles this file into dist/bench/broker/, the .c stays in bench/broker/). */
export const RDKAFKA_PERF_SOURCE = join(REPO_ROOT, 'bench', 'broker', 'rdkafka-perf.c')
export const RDKAFKA_PERF_INSTALL = 'apt-get install -y librdkafka-dev gcc'
const NOT_INSTALLED = `not installed (${RDKAFKA_PERF_INSTALL})`

/** The JSON line rdkafka-perf prints (see the header of rdkafka-perf.c). */
export interface RdkafkaPerfResult {
  mode: 'produce' | 'consume'
  /** Records delivered (produce) or read (consume). */
  records: number
  /** Value bytes of those records. */
  bytes: number
  elapsedMs: number
  recordsPerSec: number
  mbPerSec: number
  errors: number
  /** The tool's own CPU (user + system, librdkafka's threads included) over the timed part. */
  cpuMs: number
}

export interface BuildOptions {
  /** Compiler command (may carry arguments, e.g. 'ccache gcc'); default $CC or 'cc'. */
  cc?: string
  source?: string
  cacheDir?: string
}

/** Compiles rdkafka-perf.c unless the cache holds a binary of this source and compiler; resolves its path. */
export async function buildRdkafkaPerf(opts: BuildOptions = {}): Promise<Measured<string>> {
  const cc = (opts.cc ?? process.env.CC ?? 'cc').trim().split(/\s+/)
  const source = opts.source ?? RDKAFKA_PERF_SOURCE
  let text: Buffer
  try {
    text = readFileSync(source)
  } catch (err) {
    return { ok: false, reason: `cannot read ${source}: ${(err as Error).message}` }
  }
  const hash = createHash('sha256').update(cc.join(' ')).update('\0').update(text).digest('hex').slice(0, 16)
  const dir = opts.cacheDir ?? join(tmpdir(), 'skein-rdkafka-perf')
  const out = join(dir, `rdkafka-perf-${hash}`)
  if (existsSync(out)) return { ok: true, value: out }
  mkdirSync(dir, { recursive: true })
  // Compile to a private name and rename, so a concurrent run never executes a half-written binary.
  const tmp = `${out}.${process.pid}.tmp`
  try {
    const r = await run(cc[0]!, [...cc.slice(1), '-O2', '-Wall', '-o', tmp, source, '-lrdkafka'], { timeoutMs: 120000 })
    if (r.code !== 0) {
      // No librdkafka-dev: the header is missing (or, with only the runtime library, -lrdkafka has no .so).
      if (/rdkafka\.h: No such file|cannot find -lrdkafka/.test(r.stderr)) return { ok: false, reason: NOT_INSTALLED }
      return { ok: false, reason: `${cc.join(' ')} failed (exit ${r.code}): ${r.stderr.trim().slice(0, 300)}` }
    }
    renameSync(tmp, out)
    return { ok: true, value: out }
  } catch (err) {
    // spawn fails with ENOENT when there is no such compiler.
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { ok: false, reason: NOT_INSTALLED }
    return { ok: false, reason: `${cc.join(' ')}: ${(err as Error).message.split('\n')[0]}` }
  } finally {
    rmSync(tmp, { force: true })
  }
}

export interface RdkafkaPerfOptions {
  /** Value size in bytes (produce only). */
  size?: number
  /** librdkafka configuration properties, passed as -X key=value. */
  config?: Record<string, string | number>
  /** Give up after this long without a delivery report / a record (-w). */
  idleMs?: number
  timeoutMs?: number
}

/**
 * One run of the tool (built on first use). Fails, with the tool's stderr as the reason, when the tool
 * exits non-zero: delivery errors, fewer records than asked, consume errors.
 */
export async function rdkafkaPerf(mode: 'produce' | 'consume', bootstrap: string, topic: string, records: number, opts: RdkafkaPerfOptions = {}): Promise<Measured<RdkafkaPerfResult>> {
  const bin = await buildRdkafkaPerf()
  if (!bin.ok) return bin
  const args = [mode, '-b', bootstrap, '-t', topic, '-n', String(records)]
  if (mode === 'produce') args.push('-s', String(opts.size ?? 100))
  if (opts.idleMs !== undefined) args.push('-w', String(opts.idleMs))
  args.push(...rdkafkaArgs(opts.config ?? {}))
  const r = await run(bin.value, args, { timeoutMs: opts.timeoutMs ?? 300000 })
  if (r.code !== 0) {
    // The tool's own diagnostics start with 'rdkafka-perf:'; librdkafka's log lines may surround them.
    const own = r.stderr.split('\n').filter((l) => l.startsWith('rdkafka-perf:'))
    const detail = own.length > 0 ? own.slice(0, 3).join('; ') : r.stderr.trim().slice(-300)
    return { ok: false, reason: `rdkafka-perf ${mode} exited ${r.code}: ${detail.slice(0, 300)}` }
  }
  return { ok: true, value: JSON.parse(lastJsonLine(r.stdout)) as RdkafkaPerfResult }
}

export interface LatencyPercentiles { count: number; avg: number; p50: number; p99: number; p999: number; max: number }

/** The JSON line of `rdkafka-perf latency` (see the header of rdkafka-perf.c). */
export interface RdkafkaLatencyResult {
  mode: 'latency'
  sent: number
  acked: number
  failed: number
  consumed: number
  ratePerSec: number
  /** Send to the consumer's receipt, every record. */
  e2eMs: LatencyPercentiles
  /** The same, for the records consumed in the first 3 s from the first record consumed. */
  first3sMs: LatencyPercentiles
  /** Send to the delivery report. */
  ackMs: LatencyPercentiles
  /** Per second from the first record consumed. */
  series: { second: number; records: number; p50Ms: number; p99Ms: number; maxMs: number }[]
  /** The process's CPU (producer and consumer, librdkafka's threads included) while sending and draining. */
  cpuMs: number
}

/**
 * End-to-end latency with librdkafka's producer and consumer (one C process) at `rate` records/s for
 * `seconds`; `producerConfig` overrides the tool's producer defaults (acks=all, idempotence, linger.ms=0),
 * `consumerConfig` its consumer's (fetch.wait.max.ms=100, fetch.min.bytes=1).
 */
export async function rdkafkaLatency(bootstrap: string, topic: string, rate: number, seconds: number, producerConfig: Record<string, string | number> = {}, consumerConfig: Record<string, string | number> = {}): Promise<Measured<RdkafkaLatencyResult>> {
  const bin = await buildRdkafkaPerf()
  if (!bin.ok) return bin
  const args = ['latency', '-b', bootstrap, '-t', topic, '-r', String(rate), '-d', String(seconds), ...rdkafkaArgs(producerConfig)]
  for (const [k, v] of Object.entries(consumerConfig)) args.push('-C', `${k}=${v}`)
  const r = await run(bin.value, args, { timeoutMs: (seconds + 90) * 1000 })
  if (r.code !== 0) {
    const own = r.stderr.split('\n').filter((l) => l.startsWith('rdkafka-perf:'))
    const detail = own.length > 0 ? own.slice(0, 3).join('; ') : r.stderr.trim().slice(-300)
    return { ok: false, reason: `rdkafka-perf latency exited ${r.code}: ${detail.slice(0, 300)}` }
  }
  return { ok: true, value: JSON.parse(lastJsonLine(r.stdout)) as RdkafkaLatencyResult }
}
