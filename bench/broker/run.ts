// Child processes of the benchmark (client tools, peers) with a hard time limit: a tool that hangs is
// killed and reported, never left running on the shared machine.
import { spawn, type StdioOptions } from 'node:child_process'
import { openSync, closeSync } from 'node:fs'
import { performance } from 'node:perf_hooks'

export interface RunOutput {
  code: number | null
  stdout: string
  stderr: string
  /** Newlines seen on stdout (all of them, also past the kept 4 MiB). */
  lines: number
  /** Wall-clock milliseconds from spawn to exit. */
  ms: number
}

/** Runs cmd; stdinFile (when given) is connected as standard input. Rejects on timeout. */
export function run(cmd: string, args: readonly string[], opts: { timeoutMs?: number; stdinFile?: string; env?: NodeJS.ProcessEnv } = {}): Promise<RunOutput> {
  const timeoutMs = opts.timeoutMs ?? 120000
  const stdinFd = opts.stdinFile !== undefined ? openSync(opts.stdinFile, 'r') : null
  const stdio: StdioOptions = [stdinFd ?? 'ignore', 'pipe', 'pipe']
  return new Promise((resolve, reject) => {
    const t0 = performance.now()
    const child = spawn(cmd, args, { stdio, env: opts.env ?? process.env })
    if (stdinFd !== null) closeSync(stdinFd)
    let stdout = ''
    let stderr = ''
    let lines = 0
    child.stdout!.on('data', (d: Buffer) => {
      for (let i = d.indexOf(10); i !== -1; i = d.indexOf(10, i + 1)) lines++
      if (stdout.length < 4 << 20) stdout += d.toString()
    })
    child.stderr!.on('data', (d: Buffer) => {
      if (stderr.length < 1 << 20) stderr += d.toString()
    })
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`${cmd} ${args.join(' ')} did not finish within ${timeoutMs} ms\n${stderr.slice(-2000)}`))
    }, timeoutMs)
    child.once('error', (err) => {
      clearTimeout(timer)
      reject(err)
    })
    child.once('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr, lines, ms: performance.now() - t0 })
    })
  })
}

/** Runs a node script; rejects (with its stderr) unless it exits 0. Resolves its stdout. */
export async function runNode(args: readonly string[], timeoutMs?: number, opts: { env?: NodeJS.ProcessEnv } = {}): Promise<string> {
  const r = await run(process.execPath, args, { timeoutMs, env: opts.env })
  if (r.code !== 0) throw new Error(`node ${args.join(' ')} exited ${r.code}\n${r.stdout.slice(-2000)}\n${r.stderr.slice(-2000)}`)
  return r.stdout
}

/** True when `cmd` can be started (exit status ignored). */
export async function hasCommand(cmd: string, args: readonly string[] = ['--version']): Promise<boolean> {
  try {
    await run(cmd, args, { timeoutMs: 10000 })
    return true
  } catch {
    return false
  }
}
