// Real ZooKeeper servers for tests: Debian's package (`apt-get install zookeeper`, 3.8, run through
// /usr/share/zookeeper/bin/zkServer.sh start-foreground, which execs the JVM so the child's PID is the
// server's). Each server gets a temp dir holding its zoo.cfg, data dir and console log, free loopback
// ports, and is ready once it answers `ruok` with `imok` and `srvr` with a Mode (standalone, leader or
// follower: it serves requests). Servers are stopped by PID (SIGTERM, then SIGKILL), and any still
// running when the test process ends are SIGKILLed (by an exit handler, and by a watchdog shell for
// runners that end workers without running exit handlers).
//
// When /usr/share/zookeeper is absent, zookeeperMissing() says so (tests skip with that message, printed
// loudly); when it is present, any failure to start is a test failure, never a skip.
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, openSync, closeSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { fourLetterWord } from '../../src/cli/four-letter-word.js'
import { freeLoopbackPort } from '../../src/cli/free-port.js'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export const ZOOKEEPER_HOME = '/usr/share/zookeeper'
export const ZK_SERVER_SH = join(ZOOKEEPER_HOME, 'bin', 'zkServer.sh')
export const ZOOKEEPER_INSTALL_HINT = 'apt-get install -y zookeeper'

let missingChecked = false
let missingReason: string | undefined

/** Why ZooKeeper tests cannot run here (printed once), or undefined when Debian's ZooKeeper is installed. */
export function zookeeperMissing(): string | undefined {
  if (!missingChecked) {
    missingChecked = true
    if (!existsSync(ZK_SERVER_SH)) {
      missingReason = `Debian's ZooKeeper is not installed (${ZK_SERVER_SH} is missing): ZooKeeper tests are SKIPPED. Install with: ${ZOOKEEPER_INSTALL_HINT}`
      console.warn(`[skein tests] ${missingReason}`)
    }
  }
  return missingReason
}

const live = new Set<ChildProcess>()
let exitHookInstalled = false
function track(child: ChildProcess): void {
  live.add(child)
  child.once('exit', () => live.delete(child))
  if (!exitHookInstalled) {
    exitHookInstalled = true
    process.once('exit', () => {
      for (const c of live) if (c.pid !== undefined) safeKill(c.pid, 'SIGKILL')
    })
  }
}

/**
 * Test runners may end a worker without running its 'exit' handlers (vitest does). A detached shell per
 * server polls both PIDs and SIGKILLs the JVM once this process is gone, then exits; it also exits when
 * the server is stopped normally.
 */
function watchdog(jvmPid: number): void {
  const script = `while kill -0 ${process.pid} 2>/dev/null && kill -0 ${jvmPid} 2>/dev/null; do sleep 0.5; done; kill -9 ${jvmPid} 2>/dev/null; exit 0`
  const w = spawn('/bin/sh', ['-c', script], { detached: true, stdio: 'ignore' })
  w.on('error', () => {})
  w.unref()
}

function safeKill(pid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(pid, signal)
    return true
  } catch {
    return false
  }
}

export { freeLoopbackPort }

export { fourLetterWord }

export interface ZooKeeperServerOptions {
  /** ZooKeeper's tickTime (ms): session timeouts are clamped to [2, 20] ticks. Default 500, so tests can use short sessions. */
  tickTime?: number
  /** How long start() waits for the server to serve. Default 30 s. */
  startTimeoutMs?: number
  /** clientPortAddress (default 127.0.0.1): the fault suite's brokers in network namespaces reach it on a bridge's address. */
  clientPortAddress?: string
}

interface PeerPorts {
  id: number
  clientPort: number
  quorumPort: number
  electionPort: number
}

/** One ZooKeeper server process (standalone, or one member of an ensemble). */
export class ZooKeeperServerProcess {
  private child: ChildProcess | undefined
  private exited: Promise<void> = Promise.resolve()
  private spawnError: Error | undefined

  constructor(
    /** myid; 0 for a standalone server. */
    readonly id: number,
    readonly port: number,
    /** Temp dir with zoo.cfg, data/ and zookeeper.out. */
    readonly dir: string,
    private readonly startTimeoutMs: number,
    /** Its clientPortAddress (four-letter words and clients use it). */
    readonly host: string = '127.0.0.1',
  ) {}

  /** '<host>:<port>' */
  get address(): string {
    return `${this.host}:${this.port}`
  }

  get pid(): number | undefined {
    return this.child?.exitCode === null && this.child.signalCode === null ? this.child.pid : undefined
  }

  get running(): boolean {
    return this.pid !== undefined
  }

  get configPath(): string {
    return join(this.dir, 'zoo.cfg')
  }

  /** Launches the JVM (does not wait until it serves; see waitUntilServing). */
  launch(): void {
    if (this.running) throw new Error(`ZooKeeper ${this.id} is already running (pid ${this.pid})`)
    const logFd = openSync(join(this.dir, 'zookeeper.out'), 'a')
    const child = spawn(ZK_SERVER_SH, ['start-foreground', this.configPath], {
      cwd: this.dir,
      stdio: ['ignore', logFd, logFd],
      env: {
        ...process.env,
        ZOO_LOG_DIR: this.dir,
        ZOO_LOG4J_PROP: 'INFO,CONSOLE',
        // Small and quick to start: tests run several of these on a 2-core machine.
        JVMFLAGS: '-Xms16m -Xmx192m -XX:+UseSerialGC -XX:TieredStopAtLevel=1',
      },
    })
    closeSync(logFd)
    this.child = child
    track(child)
    if (child.pid !== undefined) watchdog(child.pid)
    this.exited = new Promise((resolve) => {
      child.once('exit', () => resolve())
      child.once('error', () => resolve())
    })
    this.spawnError = undefined
    child.once('error', (err) => {
      this.spawnError = err
    })
  }

  /** Resolves once the server answers ruok → imok and srvr shows a Mode (it serves requests). */
  async waitUntilServing(timeoutMs = this.startTimeoutMs): Promise<string> {
    const deadline = Date.now() + timeoutMs
    let last = ''
    while (Date.now() < deadline) {
      if (this.spawnError !== undefined) throw new Error(`could not run ${ZK_SERVER_SH}: ${this.spawnError.message}`)
      if (!this.running) throw new Error(`ZooKeeper ${this.id} exited during start-up (code ${this.child?.exitCode}, signal ${this.child?.signalCode}):\n${this.logTail()}`)
      if ((await fourLetterWord(this.port, 'ruok', 1000, this.host)) === 'imok') {
        last = await fourLetterWord(this.port, 'srvr', 1000, this.host)
        const mode = /Mode: (\w+)/.exec(last)
        if (mode !== null) return mode[1]!
      }
      await new Promise((r) => setTimeout(r, 150))
    }
    throw new Error(`ZooKeeper ${this.id} on ${this.address} did not serve within ${timeoutMs} ms (last srvr: ${JSON.stringify(last.slice(0, 200))}):\n${this.logTail()}`)
  }

  async start(): Promise<void> {
    this.launch()
    await this.waitUntilServing()
  }

  /** Sends a signal to the server's PID (SIGKILL, SIGSTOP, SIGCONT, ...). */
  kill(signal: NodeJS.Signals = 'SIGKILL'): void {
    const pid = this.pid
    if (pid === undefined) throw new Error(`ZooKeeper ${this.id} is not running`)
    safeKill(pid, signal)
  }

  /** Waits for the process to exit (after kill). */
  waitForExit(): Promise<void> {
    return this.exited
  }

  /** SIGTERM by PID, SIGKILL after 10 s; resolves when the process is gone. */
  async stop(): Promise<void> {
    const pid = this.pid
    if (pid === undefined) return
    safeKill(pid, 'SIGCONT') // a SIGSTOPped JVM cannot act on SIGTERM
    safeKill(pid, 'SIGTERM')
    const timer = setTimeout(() => safeKill(pid, 'SIGKILL'), 10_000)
    await this.exited
    clearTimeout(timer)
  }

  /** Mode from srvr ('leader', 'follower', 'standalone'), or undefined when not serving. */
  async mode(): Promise<string | undefined> {
    const srvr = await fourLetterWord(this.port, 'srvr', 1000, this.host)
    return /Mode: (\w+)/.exec(srvr)?.[1]
  }

  logTail(lines = 40): string {
    try {
      return readFileSync(join(this.dir, 'zookeeper.out'), 'utf8').split('\n').slice(-lines).join('\n')
    } catch {
      return '(no log)'
    }
  }
}

function writeConfig(dir: string, me: PeerPorts, peers: PeerPorts[], tickTime: number, clientPortAddress = '127.0.0.1'): void {
  const dataDir = join(dir, 'data')
  mkdirSync(dataDir, { recursive: true })
  const lines = [
    `tickTime=${tickTime}`,
    'initLimit=20',
    'syncLimit=10',
    `dataDir=${dataDir}`,
    `clientPort=${me.clientPort}`,
    `clientPortAddress=${clientPortAddress}`,
    'admin.enableServer=false',
    '4lw.commands.whitelist=ruok,srvr,mntr,stat',
    'maxClientCnxns=0',
    'autopurge.purgeInterval=0',
  ]
  if (peers.length > 0) {
    for (const p of peers) lines.push(`server.${p.id}=127.0.0.1:${p.quorumPort}:${p.electionPort}`)
    writeFileSync(join(dataDir, 'myid'), `${me.id}\n`)
  }
  writeFileSync(join(dir, 'zoo.cfg'), lines.join('\n') + '\n')
}

export interface ZooKeeperTestServer {
  server: ZooKeeperServerProcess
  /** '127.0.0.1:<port>' */
  connectString: string
  /** Stops the server and removes its temp dir. */
  stop(): Promise<void>
}

/** A standalone ZooKeeper on a free loopback port in a fresh temp dir, serving when this resolves. */
export async function startZooKeeper(options: ZooKeeperServerOptions = {}): Promise<ZooKeeperTestServer> {
  const missing = zookeeperMissing()
  if (missing !== undefined) throw new Error(missing)
  const dir = mkdtempSync(join(tmpdir(), 'skein-zk-'))
  const me: PeerPorts = { id: 0, clientPort: await freeLoopbackPort(), quorumPort: 0, electionPort: 0 }
  writeConfig(dir, me, [], options.tickTime ?? 500, options.clientPortAddress)
  const server = new ZooKeeperServerProcess(0, me.clientPort, dir, options.startTimeoutMs ?? 30_000, options.clientPortAddress)
  try {
    await server.start()
  } catch (err) {
    await server.stop()
    throw err
  }
  return {
    server,
    connectString: server.address,
    async stop() {
      await server.stop()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

export interface ZooKeeperEnsemble {
  servers: ZooKeeperServerProcess[]
  /** All members: '127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3' */
  connectString: string
  /** The member listening on 'host:port'. */
  serverAt(address: string): ZooKeeperServerProcess | undefined
  /** Stops every member and removes the temp dirs. */
  stop(): Promise<void>
}

/** An ensemble of `size` servers on loopback (server.N=127.0.0.1:quorum:election), all serving when this resolves. */
export async function startZooKeeperEnsemble(size = 3, options: ZooKeeperServerOptions = {}): Promise<ZooKeeperEnsemble> {
  const missing = zookeeperMissing()
  if (missing !== undefined) throw new Error(missing)
  const root = mkdtempSync(join(tmpdir(), 'skein-zk-ensemble-'))
  const peers: PeerPorts[] = []
  for (let id = 1; id <= size; id++) {
    peers.push({ id, clientPort: await freeLoopbackPort(), quorumPort: await freeLoopbackPort(), electionPort: await freeLoopbackPort() })
  }
  const servers = peers.map((p) => {
    const dir = join(root, `zk${p.id}`)
    mkdirSync(dir, { recursive: true })
    writeConfig(dir, p, peers, options.tickTime ?? 500)
    return new ZooKeeperServerProcess(p.id, p.clientPort, dir, options.startTimeoutMs ?? 45_000)
  })
  const stop = async (): Promise<void> => {
    await Promise.all(servers.map((s) => s.stop()))
    rmSync(root, { recursive: true, force: true })
  }
  try {
    for (const s of servers) s.launch()
    await Promise.all(servers.map((s) => s.waitUntilServing()))
  } catch (err) {
    await stop()
    throw err
  }
  return {
    servers,
    connectString: servers.map((s) => s.address).join(','),
    serverAt: (address) => servers.find((s) => s.address === address),
    stop,
  }
}
