// Connect workers as real child processes (`node dist/src/skein.js connect distributed|standalone`) for
// the integration tests, a REST helper on fetch, and polling.
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { REPO_ROOT } from '../harness/broker.js'

export const SKEIN_JS = join(REPO_ROOT, 'dist', 'src', 'skein.js')

export interface WorkerProcess {
  child: ChildProcess
  pid: number
  url: string
  output(): string
  alive(): boolean
  kill(signal: NodeJS.Signals, timeoutMs?: number): Promise<void>
}

const live = new Set<ChildProcess>()
process.once('exit', () => {
  for (const c of live) if (c.exitCode === null) c.kill('SIGKILL')
})

/** Starts a worker; resolves once it prints its REST URL. */
export async function startWorker(mode: 'distributed' | 'standalone', props: Record<string, string>, connectorFiles: string[] = [], timeoutMs = 60000): Promise<WorkerProcess> {
  if (!existsSync(SKEIN_JS)) throw new Error(`${SKEIN_JS} is missing: run npx tsc -p tsconfig.json first`)
  const dir = mkdtempSync(join(tmpdir(), 'skein-connect-worker-'))
  const file = join(dir, 'worker.properties')
  writeFileSync(file, Object.entries(props).map(([k, v]) => `${k}=${v}`).join('\n') + '\n')
  const child = spawn(process.execPath, [SKEIN_JS, 'connect', mode, file, ...connectorFiles], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, SKEIN_LOG_LEVEL: process.env['SKEIN_CONNECT_TEST_LOG'] ?? 'info' } })
  live.add(child)
  let out = ''
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`worker not listening after ${timeoutMs} ms:\n${out}`)), timeoutMs)
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString()
      const m = /listening on (http:\/\/[^\s,]+)/.exec(out)
      if (m !== null) {
        clearTimeout(timer)
        resolve(m[1]!)
      }
    })
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()))
    child.once('exit', (code, signal) => {
      clearTimeout(timer)
      reject(new Error(`worker exited (${code ?? signal}) before listening:\n${out}`))
    })
  })
  return {
    child,
    pid: child.pid!,
    url,
    output: () => out,
    alive: () => child.exitCode === null && child.signalCode === null,
    async kill(signal, ms = 20000) {
      if (child.exitCode !== null || child.signalCode !== null) return
      const exited = new Promise<void>((r) => child.once('exit', () => r()))
      child.kill(signal)
      let timer: NodeJS.Timeout | undefined
      await Promise.race([exited, new Promise<void>((r) => (timer = setTimeout(r, ms)))])
      clearTimeout(timer)
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL')
        await exited
      }
      live.delete(child)
    },
  }
}

/** Starts a worker and waits until GET /health says it finished startup (joined its group, read its topics). */
export async function startReadyWorker(mode: 'distributed' | 'standalone', props: Record<string, string>, connectorFiles: string[] = []): Promise<WorkerProcess> {
  const w = await startWorker(mode, props, connectorFiles)
  await waitFor(`${w.url} healthy`, async () => (await rest(w.url, 'GET', '/health')).status === 200)
  return w
}

export interface RestAnswer<T = any> {
  status: number
  body: T
}

export async function rest<T = any>(base: string, method: string, path: string, body?: unknown): Promise<RestAnswer<T>> {
  const res = await fetch(base + path, {
    method,
    headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(120000),
  })
  const text = await res.text()
  let parsed: unknown = text
  try {
    parsed = text === '' ? undefined : JSON.parse(text)
  } catch {
    // not JSON: the text
  }
  return { status: res.status, body: parsed as T }
}

/** Polls until fn returns a truthy value (returned), or throws with the last value / error after timeoutMs. */
export async function waitFor<T>(what: string, fn: () => Promise<T | undefined | null | false>, timeoutMs = 60000, intervalMs = 250): Promise<T> {
  const deadline = Date.now() + timeoutMs
  let last: unknown
  for (;;) {
    try {
      const v = await fn()
      if (v) return v
      last = v
    } catch (err) {
      last = err
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${last instanceof Error ? last.message : JSON.stringify(last)}`)
    await new Promise((r) => setTimeout(r, intervalMs))
  }
}

/** MirrorMaker's internal topics (and its flows' Connect topics) with one replica: a one-broker test cluster. */
export const MIRROR_ONE_REPLICA: Readonly<Record<string, string>> = {
  'replication.factor': '1',
  'checkpoints.topic.replication.factor': '1',
  'heartbeats.topic.replication.factor': '1',
  'offset-syncs.topic.replication.factor': '1',
  'config.storage.replication.factor': '1',
  'offset.storage.replication.factor': '1',
  'status.storage.replication.factor': '1',
}
