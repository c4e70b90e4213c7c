// The broker under test as a child process, `node [nodeArgs] dist/src/main.js --override ...`, as
// test/harness startBrokerProcess runs it, but without forcing io.threads (the benchmark measures the
// broker's own default unless a workload sets it), with extra node options (--cpu-prof) and with the time
// from spawn to the ready log line (the start-time workload).
import { spawn, type ChildProcess } from 'node:child_process'
import { createWriteStream, existsSync, mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve, sep } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { freePort } from '../../test/harness/broker.js'

export { freePort }

/** The repository root (dist/bench/broker/ is three levels below it). */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..')
export const MAIN_JS = join(REPO_ROOT, 'dist', 'src', 'main.js')
export const SKEIN_JS = join(REPO_ROOT, 'dist', 'src', 'skein.js')

export function benchDir(tag: string, parent = tmpdir()): string {
  return mkdtempSync(join(parent, `skein-bench-${tag}-`))
}


export interface BrokerOptions {
  dataDir: string
  port?: number
  overrides?: string[]
  /** Options for node itself, before main.js (e.g. --cpu-prof). */
  nodeArgs?: string[]
  readyTimeoutMs?: number
  /**
   * Another entry script (default this checkout's dist/src/main.js): another build's main.js, run from its
   * own checkout, or a bench-only entry of this checkout (run from this checkout).
   */
  mainJs?: string
  /** Arguments of the entry script, before the --override items (for a bench-only entry). */
  entryArgs?: string[]
  /** Extra environment of the broker process. */
  env?: Record<string, string>
  /** Appends everything the broker prints to this file (its log level stays SKEIN_LOG_LEVEL of env, warn by default). */
  logFile?: string
}

export interface RunningBroker {
  child: ChildProcess
  pid: number
  port: number
  bootstrap: string
  dataDir: string
  /** Milliseconds from spawn to the ready log line. */
  startMs: number
  output(): string
  /** Resident set size in KiB (/proc/<pid>/status VmRSS). */
  rssKiB(): number
  /** SIGTERM (graceful: flush, checkpoints) and wait; SIGKILL after timeoutMs. */
  stop(timeoutMs?: number): Promise<void>
}

export async function startBroker(opts: BrokerOptions): Promise<RunningBroker> {
  const mainJs = opts.mainJs ?? MAIN_JS
  if (!existsSync(mainJs)) throw new Error(`${mainJs} is missing: run npx tsc -p tsconfig.json first`)
  const port = opts.port ?? (await freePort())
  const args = [
    ...(opts.nodeArgs ?? []),
    mainJs,
    ...(opts.entryArgs ?? []),
    '--override', `listeners=PLAINTEXT://127.0.0.1:${port}`,
    '--override', `log.dirs=${opts.dataDir}`,
    ...(opts.overrides ?? []).flatMap((o) => ['--override', o]),
  ]
  const t0 = performance.now()
  const cwd = opts.mainJs === undefined || mainJs.startsWith(REPO_ROOT + sep) ? REPO_ROOT : resolve(dirname(mainJs), '..', '..')
  const child = spawn(process.execPath, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, SKEIN_LOG_LEVEL: 'warn', ...opts.env } })
  let out = ''
  let exited = false
  const exitPromise = new Promise<void>((resolveExit) => child.once('exit', () => {
    exited = true
    resolveExit()
  }))
  // The ready line is logged at info; the level is warn to keep the hot path quiet, so readiness is the
  // listening port accepting a connection. The log still shows warnings and errors for failure messages.
  const logFile = opts.logFile === undefined ? undefined : createWriteStream(opts.logFile, { flags: 'a' })
  child.stdout!.on('data', (d: Buffer) => {
    logFile?.write(d)
    if (out.length < 1 << 20) out += d.toString()
  })
  child.stderr!.on('data', (d: Buffer) => {
    logFile?.write(d)
    if (out.length < 1 << 20) out += d.toString()
  })
  child.once('exit', () => logFile?.end())
  const timeoutMs = opts.readyTimeoutMs ?? 60000
  const deadline = t0 + timeoutMs
  for (;;) {
    if (exited) throw new Error(`broker exited before serving:\n${out}`)
    if (await canConnect(port)) break
    if (performance.now() > deadline) {
      child.kill('SIGKILL')
      throw new Error(`broker not serving on ${port} after ${timeoutMs} ms:\n${out}`)
    }
    await new Promise((r) => setTimeout(r, 20))
  }
  const startMs = performance.now() - t0
  const pid = child.pid!
  return {
    child,
    pid,
    port,
    bootstrap: `127.0.0.1:${port}`,
    dataDir: opts.dataDir,
    startMs,
    output: () => out,
    rssKiB() {
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
      if (m === null) throw new Error(`no VmRSS for ${pid}`)
      return Number(m[1])
    },
    async stop(stopTimeoutMs = 30000) {
      if (exited) return
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), stopTimeoutMs)
      await exitPromise
      clearTimeout(timer)
    },
  }
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolveConn) => {
    import('node:net').then(({ connect }) => {
      const s = connect({ host: '127.0.0.1', port })
      s.once('connect', () => {
        s.destroy()
        resolveConn(true)
      })
      s.once('error', () => resolveConn(false))
    }, () => resolveConn(false))
  })
}

/** A process's CPU time so far (user + system, all threads) in microseconds, from /proc/<pid>/stat. */
export function processCpuMicros(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  // Fields after the command name (which may hold spaces) start after the last ')'; utime and stime are
  // fields 14 and 15 of the whole line, in clock ticks (100 per second on Linux).
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / 100
}

/**
 * A process's main thread from /proc/<pid>/schedstat: nanoseconds it ran on a CPU, and nanoseconds it was
 * runnable but waited for one (the machine's other work taking the cores), so far.
 */
export function mainThreadSchedStat(pid: number): { onCpuNs: number; runQueueWaitNs: number } {
  const [onCpu, waiting] = readFileSync(`/proc/${pid}/schedstat`, 'utf8').trim().split(' ')
  return { onCpuNs: Number(onCpu), runQueueWaitNs: Number(waiting) }
}
