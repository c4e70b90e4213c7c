// Runs test/streams/count-app.ts (compiled, from dist/) as a child process and follows its state lines.
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { REPO_ROOT } from '../harness/index.js'

export const COUNT_APP_JS = join(REPO_ROOT, 'dist', 'test', 'streams', 'count-app.js')

export interface AppProcess {
  child: ChildProcess
  states: string[]
  output(): string
  waitForState(state: string, timeoutMs?: number, after?: number): Promise<void>
  kill(signal: NodeJS.Signals): Promise<void>
  alive(): boolean
}

export function startCountApp(args: string[]): AppProcess {
  if (!existsSync(COUNT_APP_JS)) throw new Error(`${COUNT_APP_JS} is missing: run npx tsc -p tsconfig.json first`)
  const child = spawn(process.execPath, [COUNT_APP_JS, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
  const states: string[] = []
  let out = ''
  let exited = false
  child.stdout!.on('data', (d: Buffer) => {
    out += d.toString()
    for (const m of d.toString().matchAll(/STATE (\w+)/g)) states.push(m[1]!)
  })
  child.stderr!.on('data', (d: Buffer) => {
    out += d.toString()
  })
  const exit = new Promise<void>((resolve) =>
    child.once('exit', () => {
      exited = true
      resolve()
    }),
  )
  return {
    child,
    states,
    output: () => out,
    alive: () => !exited,
    async waitForState(state, timeoutMs = 60_000, after = 0) {
      const deadline = Date.now() + timeoutMs
      while (!states.slice(after).includes(state)) {
        if (exited) throw new Error(`the app exited before reaching ${state}:\n${out}`)
        if (Date.now() > deadline) throw new Error(`the app did not reach ${state} within ${timeoutMs} ms (states: ${states.join(' ')}):\n${out}`)
        await new Promise((r) => setTimeout(r, 50))
      }
    },
    async kill(signal) {
      if (exited) return
      child.kill(signal)
      await Promise.race([exit, new Promise((r) => setTimeout(r, 20_000))])
    },
  }
}
