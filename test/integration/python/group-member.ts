// The Node side of group_member.py: spawns one librdkafka or kafka-python group member as a child process
// (Debian's /usr/bin/python3), follows its JSON-line events (assignment, messages, commits, errors) and
// closes it with LeaveGroup or kills it. Shared by the consumer-group integration tests.
import { spawn, type ChildProcess } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { SYSTEM_PYTHON } from '../../harness/index.js'

const SCRIPT = join(dirname(fileURLToPath(import.meta.url)), 'group_member.py')

export type PythonClient = 'confluent' | 'kafka-python'

/** One consumed record, whoever consumed it. */
export interface Seen {
  member: string
  partition: number
  offset: number
  value: string
}

export interface MemberRequest {
  bootstrap: string
  group: string
  topic: string
  strategy: 'range' | 'roundrobin'
  /** Also the client.id; names the member in Seen. */
  name: string
  /** The child exits by itself after this long (default 120). */
  maxSeconds?: number
}

export interface PythonMember {
  readonly name: string
  readonly proc: ChildProcess
  /** The latest full assignment (partitions of the topic), [] before the first. */
  assignment: number[]
  /** How many assignments it has received. */
  assignments: number
  /** Next offset per partition as of its last successful commit. */
  committed: Map<number, number>
  /** Commit and consume errors it reported. */
  errors: string[]
  /** All it printed on stderr (for failure messages). */
  stderr(): string
  exited(): boolean
  /** "close": commit, LeaveGroup, exit; resolves once the process has exited (bounded). */
  close(timeoutMs?: number): Promise<void>
  /** SIGKILL, no LeaveGroup. */
  kill(): void
}

export function spawnPythonMember(client: PythonClient, req: MemberRequest, seen: Seen[]): PythonMember {
  const proc = spawn(SYSTEM_PYTHON, [SCRIPT, client], { stdio: ['pipe', 'pipe', 'pipe'] })
  let err = ''
  let buf = ''
  let exitedFlag = false
  const exitWaiters: (() => void)[] = []
  const m: PythonMember = {
    name: req.name,
    proc,
    assignment: [],
    assignments: 0,
    committed: new Map(),
    errors: [],
    stderr: () => err,
    exited: () => exitedFlag,
    close(timeoutMs = 20_000) {
      if (exitedFlag) return Promise.resolve()
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          proc.kill('SIGKILL')
          reject(new Error(`${req.name} did not close within ${timeoutMs} ms\nstderr: ${err.slice(-4000)}`))
        }, timeoutMs)
        exitWaiters.push(() => {
          clearTimeout(timer)
          resolve()
        })
        proc.stdin!.write('close\n')
      })
    },
    kill() {
      if (!exitedFlag) proc.kill('SIGKILL')
    },
  }
  proc.on('exit', () => {
    exitedFlag = true
    for (const w of exitWaiters.splice(0)) w()
  })
  proc.stdin!.on('error', () => {})
  proc.stderr!.on('data', (d: Buffer) => {
    err += d.toString()
  })
  proc.stdout!.on('data', (d: Buffer) => {
    buf += d.toString()
    let nl: number
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl)
      buf = buf.slice(nl + 1)
      let ev: { event: string; [k: string]: unknown }
      try {
        ev = JSON.parse(line)
      } catch {
        m.errors.push(`unparsable line: ${line}`)
        continue
      }
      switch (ev.event) {
        case 'assigned':
          m.assignment = ev.partitions as number[]
          m.assignments++
          break
        case 'revoked':
          m.assignment = m.assignment.filter((p) => !(ev.partitions as number[]).includes(p))
          break
        case 'message':
          seen.push({ member: req.name, partition: ev.partition as number, offset: ev.offset as number, value: ev.value as string })
          break
        case 'committed':
          for (const [p, o] of Object.entries(ev.offsets as Record<string, number>)) m.committed.set(Number(p), o)
          break
        case 'error':
          m.errors.push(ev.error as string)
          break
        default:
          break
      }
    }
  })
  const { maxSeconds, ...rest } = req
  proc.stdin!.write(JSON.stringify({ ...rest, max_seconds: maxSeconds ?? 120 }) + '\n')
  return m
}

export async function waitFor(what: string, cond: () => boolean | Promise<boolean>, timeoutMs = 30_000, describe?: () => string): Promise<void> {
  const start = Date.now()
  while (!(await cond())) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${describe === undefined ? '' : `\n${describe()}`}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

/** True when the members' assignments together hold every partition exactly once. */
export function coversOnce(assignments: readonly (readonly number[])[], partitions: number): boolean {
  const all = assignments.flat()
  return all.length === partitions && new Set(all).size === partitions && all.every((p) => p >= 0 && p < partitions)
}
