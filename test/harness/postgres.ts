// A real PostgreSQL server for tests: Debian's `postgresql` package (15: /usr/lib/postgresql/15/bin),
// `initdb` into a fresh temp dir and the `postgres` server itself on a free loopback port (and its unix
// socket in the same dir), trust authentication for the superuser `skein`. initdb and postgres refuse to
// run as root, so when the tests run as root (CI does) both are spawned as the `postgres` system user
// (spawn's uid/gid), and the temp dir is handed to that user. The child is the postmaster itself, so it
// is stopped by its PID: SIGINT (fast shutdown), then SIGKILL; a detached watchdog shell kills it if the
// test process goes away without stopping it. Ready once `SELECT 1` answers.
//
// When the binaries are absent, postgresMissing() says so (tests skip with that message, printed
// loudly); when they are present, any failure to start is a test failure.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { freeLoopbackPort } from '../../src/cli/free-port.js'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'

export const POSTGRES_INSTALL_HINT = 'apt-get install -y postgresql'

/** The newest installed server's bin directory, or undefined. */
export function postgresBinDir(): string | undefined {
  const base = '/usr/lib/postgresql'
  if (!existsSync(base)) return undefined
  const versions = readdirSync(base).filter((v) => existsSync(join(base, v, 'bin', 'initdb'))).sort((a, b) => Number(b) - Number(a))
  return versions.length === 0 ? undefined : join(base, versions[0]!, 'bin')
}

let missingChecked = false
let missingReason: string | undefined

export function postgresMissing(): string | undefined {
  if (!missingChecked) {
    missingChecked = true
    if (postgresBinDir() === undefined) {
      missingReason = `Debian's PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): PostgreSQL tests are SKIPPED. Install with: ${POSTGRES_INSTALL_HINT}`
      console.warn(`[skein tests] ${missingReason}`)
    }
  }
  return missingReason
}

const freePort = (): Promise<number> => freeLoopbackPort()

/** uid/gid to run as: the postgres user when we are root, else ourselves. */
function runAs(): { uid?: number; gid?: number } {
  if (process.getuid?.() !== 0) return {}
  const id = (flag: string): number => Number(spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' }).stdout.trim())
  const uid = id('-u')
  const gid = id('-g')
  if (!Number.isInteger(uid) || uid <= 0) throw new Error('running as root, but there is no postgres user to run PostgreSQL as (apt-get install postgresql creates it)')
  return { uid, gid }
}

export interface PostgresOptions {
  /** Settings passed with -c (e.g. { fsync: 'off' }). */
  settings?: Record<string, string>
  startTimeoutMs?: number
}

export class PostgresServer {
  private child: ChildProcess | null = null
  private output = ''
  readonly host = '127.0.0.1'
  readonly user = 'skein'
  readonly database = 'postgres'

  /** What the server wrote to stdout and stderr so far: its log (errors included). */
  get log(): string {
    return this.output
  }

  private constructor(readonly dir: string, readonly port: number) {}

  /** jdbc:postgresql://127.0.0.1:<port>/postgres, what the connectors' connection.url takes. */
  get jdbcUrl(): string {
    return `jdbc:postgresql://${this.host}:${this.port}/${this.database}`
  }

  get pid(): number | undefined {
    return this.child?.exitCode === null && this.child.signalCode === null ? this.child.pid : undefined
  }

  /** A connected client (end() it when done). */
  async client(): Promise<pg.Client> {
    const c = new pg.Client({ host: this.host, port: this.port, user: this.user, database: this.database })
    c.on('error', () => {})
    await c.connect()
    return c
  }

  async query<T extends Record<string, unknown> = Record<string, unknown>>(text: string, values: unknown[] = []): Promise<T[]> {
    const c = await this.client()
    try {
      return (await c.query(text, values)).rows as T[]
    } finally {
      await c.end()
    }
  }

  static async start(opts: PostgresOptions = {}): Promise<PostgresServer> {
    const bin = postgresBinDir()
    if (bin === undefined) throw new Error(`PostgreSQL is not installed (${POSTGRES_INSTALL_HINT})`)
    const dir = mkdtempSync(join(tmpdir(), 'skein-pg-'))
    const as = runAs()
    if (as.uid !== undefined) chownSync(dir, as.uid, as.gid!)
    const data = join(dir, 'data')
    const env = { ...process.env, LC_ALL: 'C', LANG: 'C', HOME: dir }
    const init = spawnSync(join(bin, 'initdb'), ['-D', data, '-U', 'skein', '--auth=trust', '-E', 'UTF8', '--no-sync', '--no-instructions'], { ...as, env, encoding: 'utf8', cwd: dir })
    if (init.status !== 0) {
      rmSync(dir, { recursive: true, force: true })
      throw new Error(`initdb failed (${init.status ?? init.signal}): ${init.stderr}${init.stdout}`)
    }
    const port = await freePort()
    const server = new PostgresServer(dir, port)
    const settings = { listen_addresses: '127.0.0.1', unix_socket_directories: dir, max_connections: '200', ...(opts.settings ?? {}) }
    const args = ['-D', data, '-p', String(port), ...Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`])]
    const child = spawn(join(bin, 'postgres'), args, { ...as, env, cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] })
    server.child = child
    child.stdout!.on('data', (d: Buffer) => (server.output += d.toString()))
    child.stderr!.on('data', (d: Buffer) => (server.output += d.toString()))
    child.on('error', (err) => (server.output += `spawn error: ${err.message}\n`))
    if (child.pid !== undefined) watchdog(child.pid)
    const deadline = Date.now() + (opts.startTimeoutMs ?? 30000)
    for (;;) {
      if (server.pid === undefined) {
        await server.stop()
        throw new Error(`postgres exited before it was ready:\n${server.output}`)
      }
      try {
        await server.query('SELECT 1')
        return server
      } catch (err) {
        if (Date.now() > deadline) {
          await server.stop()
          throw new Error(`postgres not ready after ${opts.startTimeoutMs ?? 30000} ms (${(err as Error).message}):\n${server.output}`)
        }
        await new Promise((r) => setTimeout(r, 200))
      }
    }
  }

  /** Fast shutdown by PID (SIGINT), SIGKILL after 10 s; removes the temp dir. */
  async stop(): Promise<void> {
    const c = this.child
    if (c !== null && c.exitCode === null && c.signalCode === null) {
      const exited = new Promise<void>((r) => c.once('exit', () => r()))
      try {
        process.kill(c.pid!, 'SIGINT')
      } catch {
        // already gone
      }
      let timer: NodeJS.Timeout | undefined
      await Promise.race([exited, new Promise<void>((r) => (timer = setTimeout(r, 10000)))])
      clearTimeout(timer)
      if (c.exitCode === null && c.signalCode === null) {
        try {
          process.kill(c.pid!, 'SIGKILL')
        } catch {
          // already gone
        }
        await exited
      }
    }
    this.child = null
    rmSync(this.dir, { recursive: true, force: true })
  }
}

/** Kills the postmaster if this test process goes away without stopping it (vitest may end workers abruptly). */
function watchdog(pid: number): void {
  const script = `while kill -0 ${process.pid} 2>/dev/null && kill -0 ${pid} 2>/dev/null; do sleep 0.5; done; kill -9 ${pid} 2>/dev/null; exit 0`
  const w = spawn('/bin/sh', ['-c', script], { detached: true, stdio: 'ignore' })
  w.on('error', () => {})
  w.unref()
}
