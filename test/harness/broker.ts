// Brokers for tests: in process (startTestBroker) or as the real `node dist/src/main.js` child process
// (startBrokerProcess) for signal, crash and memory tests. Every broker gets a fresh temp data dir on
// 127.0.0.1 and a bounded start-up; stop() removes nothing unless asked, so restart tests can reopen
// the same directory.
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { freeLoopbackPort } from '../../src/cli/free-port.js'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { loadBrokerConfig } from '../../src/config/broker-config.js'
import { silentLogger } from '../../src/observability/logger.js'
import { Broker } from '../../src/broker/broker.js'

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..')
export const MAIN_JS = join(REPO_ROOT, 'dist', 'src', 'main.js')

export function tempDataDir(tag = 'broker'): string {
  return mkdtempSync(join(tmpdir(), `skein-${tag}-`))
}

export interface TestBroker {
  broker: Broker
  host: string
  port: number
  /** '127.0.0.1:<port>' */
  bootstrap: string
  dataDir: string
  /** Graceful stop; removes the data dir unless keepData. */
  stop(opts?: { keepData?: boolean }): Promise<void>
  /** Graceful stop, then a new broker on the same data dir and the same port. */
  restart(): Promise<TestBroker>
}

/** An in-process broker on 127.0.0.1 (port 0 unless overridden) with a fresh temp data dir. */
export async function startTestBroker(overrides: string[] = [], opts: { dataDir?: string; port?: number } = {}): Promise<TestBroker> {
  const dataDir = opts.dataDir ?? tempDataDir()
  const config = loadBrokerConfig({
    overrides: [`listeners=PLAINTEXT://127.0.0.1:${opts.port ?? 0}`, `log.dirs=${dataDir}`, 'io.threads=1', ...overrides],
  })
  const broker = await Broker.start(config, { logger: silentLogger(), shutdownGraceMs: 2000 })
  const endpoint = broker.endpointFor()
  const tb: TestBroker = {
    broker,
    host: endpoint.host,
    port: endpoint.port,
    bootstrap: `${endpoint.host}:${endpoint.port}`,
    dataDir,
    async stop(stopOpts = {}) {
      await broker.stop()
      if (stopOpts.keepData !== true) rmSync(dataDir, { recursive: true, force: true })
    },
    async restart() {
      await broker.stop()
      return startTestBroker(overrides, { dataDir, port: endpoint.port })
    },
  }
  return tb
}

/** A TCP port on 127.0.0.1 that was free a moment ago (src/cli/free-port.ts says why not port 0). */
export const freePort = (): Promise<number> => freeLoopbackPort()

export interface BrokerProcessOptions {
  /** Reuse a data dir (restart tests); default a fresh temp dir. */
  dataDir?: string
  /** Default: a free port. */
  port?: number
  overrides?: string[]
  /** How long to wait for the "ready" log line (ms). Default 20000. */
  readyTimeoutMs?: number
  /** Run the broker under this open-file limit (RLIMIT_NOFILE, soft and hard, set by prlimit(1)). */
  nofile?: number
  /** The address to listen on; default 127.0.0.1 (a network namespace's address for the fault suite). */
  host?: string
  /** A command the broker runs under, e.g. ['ip', 'netns', 'exec', 'ns1'] (it must exec, keeping the PID). */
  commandPrefix?: string[]
}

export interface BrokerProcess {
  child: ChildProcess
  pid: number
  host: string
  port: number
  bootstrap: string
  dataDir: string
  /** Everything the child wrote to stdout/stderr so far (for failure messages). */
  output(): string
  /** Resident set size in KiB from /proc/<pid>/status. */
  rssKiB(): number
  /** Sends a signal and waits (bounded) for the exit; resolves the exit code or signal name. */
  kill(signal: NodeJS.Signals, timeoutMs?: number): Promise<number | string>
  /** True while the process has not exited. */
  alive(): boolean
}

/**
 * The real broker as a child process: `node dist/src/main.js --override ...`. Needs `npx tsc -p
 * tsconfig.json` first (the shard workers run from dist/ anyway). Resolves once the broker logs its
 * ready line; rejects with the child's output if it exits or stays silent.
 */
export async function startBrokerProcess(opts: BrokerProcessOptions = {}): Promise<BrokerProcess> {
  if (!existsSync(MAIN_JS)) throw new Error(`${MAIN_JS} is missing: run npx tsc -p tsconfig.json first`)
  const dataDir = opts.dataDir ?? tempDataDir('proc')
  const port = opts.port ?? (await freePort())
  const host = opts.host ?? '127.0.0.1'
  const args = [
    MAIN_JS,
    '--override', `listeners=PLAINTEXT://${host}:${port}`,
    '--override', `log.dirs=${dataDir}`,
    '--override', 'io.threads=1',
    ...(opts.overrides ?? []).flatMap((o) => ['--override', o]),
  ]
  const [plainCommand, plainArgv] = opts.nofile === undefined ? [process.execPath, args] : ['prlimit', [`--nofile=${opts.nofile}`, '--', process.execPath, ...args]]
  const [command, argv] = opts.commandPrefix === undefined ? [plainCommand, plainArgv] : [opts.commandPrefix[0]!, [...opts.commandPrefix.slice(1), plainCommand, ...plainArgv]]
  const child = spawn(command, argv, { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, SKEIN_LOG_LEVEL: process.env.SKEIN_TEST_BROKER_LOG_LEVEL ?? 'info', SKEIN_LOG_FORMAT: 'json' } })
  let out = ''
  let exited: number | string | null = null
  const exitWaiters: ((v: number | string) => void)[] = []
  child.on('exit', (code, signal) => {
    exited = code ?? signal ?? -1
    for (const w of exitWaiters.splice(0)) w(exited)
  })
  const ready = new Promise<void>((resolveReady, reject) => {
    const timer = setTimeout(() => reject(new Error(`broker process not ready after ${opts.readyTimeoutMs ?? 20000} ms:\n${out}`)), opts.readyTimeoutMs ?? 20000)
    const onData = (d: Buffer): void => {
      out += d.toString()
      if (/"msg":"[^"]*ready/.test(out)) {
        clearTimeout(timer)
        resolveReady()
      }
    }
    child.stdout!.on('data', onData)
    child.stderr!.on('data', (d: Buffer) => {
      out += d.toString()
    })
    child.once('exit', (code, signal) => {
      clearTimeout(timer)
      reject(new Error(`broker process exited (${code ?? signal}) before ready:\n${out}`))
    })
  })
  try {
    await ready
  } catch (err) {
    if (exited === null) child.kill('SIGKILL')
    throw err
  }
  const pid = child.pid!
  return {
    child,
    pid,
    host,
    port,
    bootstrap: `${host}:${port}`,
    dataDir,
    output: () => out,
    rssKiB() {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8')
      const m = /VmRSS:\s+(\d+) kB/.exec(status)
      if (m === null) throw new Error(`no VmRSS in /proc/${pid}/status`)
      return Number(m[1])
    },
    alive: () => exited === null,
    kill(signal, timeoutMs = 15000) {
      if (exited !== null) return Promise.resolve(exited)
      return new Promise((resolveExit, reject) => {
        const timer = setTimeout(() => {
          child.kill('SIGKILL')
          reject(new Error(`broker process did not exit within ${timeoutMs} ms of ${signal}:\n${out}`))
        }, timeoutMs)
        exitWaiters.push((v) => {
          clearTimeout(timer)
          resolveExit(v)
        })
        child.kill(signal)
      })
    },
  }
}
