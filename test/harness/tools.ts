// External clients for the integration tests: kcat and Debian's python3 modules (librdkafka through
// confluent_kafka, kafka-python). A missing tool is reported loudly with its install command and the
// tests that need it are skipped with it.skipIf, never passed silently.
import { spawn, spawnSync } from 'node:child_process'

export const INSTALL_HINT = 'apt-get install -y kcat python3-confluent-kafka python3-kafka python3-snappy python3-lz4 python3-zstandard python3-requests python3-jsonschema python3-protobuf'
/** Debian's interpreter: the python3 first on PATH may be another installation without these modules. */
export const SYSTEM_PYTHON = '/usr/bin/python3'

function probe(cmd: string, args: string[]): boolean {
  try {
    const r = spawnSync(cmd, args, { stdio: 'ignore', timeout: 15000 })
    return r.status === 0
  } catch {
    return false
  }
}

function detect(name: string, ok: boolean): boolean {
  if (!ok) console.warn(`[skein tests] ${name} is not available: these tests are SKIPPED. Install with: ${INSTALL_HINT}`)
  return ok
}

let kcat: boolean | undefined
export function hasKcat(): boolean {
  kcat ??= detect('kcat', probe('kcat', ['-V']))
  return kcat
}

const pythonModules = new Map<string, boolean>()
export function hasPythonModule(module: string): boolean {
  let ok = pythonModules.get(module)
  if (ok === undefined) {
    ok = detect(`${SYSTEM_PYTHON} module '${module}'`, probe(SYSTEM_PYTHON, ['-c', `import ${module}`]))
    pythonModules.set(module, ok)
  }
  return ok
}

export interface RunResult {
  code: number | null
  signal: string | null
  stdout: Buffer
  stderr: string
}

/**
 * Runs a command with a hard timeout (the child is SIGKILLed when it passes, and the promise rejects
 * with what it printed), optional stdin. Resolves whatever the exit code; check it.
 */
export function run(cmd: string, args: string[], opts: { input?: Buffer | string; timeoutMs?: number; env?: NodeJS.ProcessEnv; cwd?: string } = {}): Promise<RunResult> {
  const timeoutMs = opts.timeoutMs ?? 30000
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'], env: opts.env ?? process.env, cwd: opts.cwd })
    const out: Buffer[] = []
    let err = ''
    child.stdout.on('data', (d: Buffer) => out.push(d))
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString()
    })
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`${cmd} ${args.join(' ')} did not finish within ${timeoutMs} ms\nstdout: ${Buffer.concat(out).toString().slice(0, 2000)}\nstderr: ${err.slice(0, 4000)}`))
    }, timeoutMs)
    child.on('error', (e) => {
      clearTimeout(timer)
      reject(e)
    })
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      resolve({ code, signal, stdout: Buffer.concat(out), stderr: err })
    })
    child.stdin.on('error', () => {})
    child.stdin.end(opts.input ?? '')
  })
}

/** Runs and throws (with the output) unless the exit code is 0. */
export async function runOk(cmd: string, args: string[], opts: { input?: Buffer | string; timeoutMs?: number; env?: NodeJS.ProcessEnv } = {}): Promise<RunResult> {
  const r = await run(cmd, args, opts)
  if (r.code !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.code ?? r.signal}\nstdout: ${r.stdout.toString().slice(0, 2000)}\nstderr: ${r.stderr.slice(0, 4000)}`)
  return r
}
