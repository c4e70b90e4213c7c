// `skein cluster`: a local development cluster in one command. `up` starts Debian's ZooKeeper
// (zkServer.sh start-foreground, which execs the JVM so its PID is the server's) and N broker processes
// (`node dist/src/main.js --config config/server.properties --override broker.id=i ...`) on free loopback
// ports, all data under one directory, and stays in the foreground as their supervisor: it owns every
// process it started and stops them by PID (brokers with SIGTERM, a controlled shutdown, then ZooKeeper) on
// Ctrl-C or SIGTERM. `status` prints brokers, the controller and under-replicated / offline partitions from
// Metadata. `restart --rolling` asks the supervisor (SIGUSR2) to restart its brokers one at a time, each
// only once no partition is under-replicated, so the restarted processes stay its children.
//
// The state file, <dir>/cluster.json, is JSON (ClusterState below): the supervisor's PID, ZooKeeper's and
// every broker's PID and port, and the progress of rolling restarts. It is rewritten whole (written to
// cluster.json.tmp, then renamed), so after a crash it holds the last complete state; it is stale when the
// supervisor PID is no longer running, and `cluster up` on the same directory then starts over (the
// brokers' log dirs and ZooKeeper's data are reused, so topics survive).
//
// This is a client-side tool: it starts the broker as a program, never imports it.
import { spawn, type ChildProcess } from 'node:child_process'
import { closeSync, existsSync, fstatSync, mkdirSync, openSync, readFileSync, readSync, renameSync, statSync, writeFileSync } from 'node:fs'
import { fourLetterWord } from './four-letter-word.js'
import { freeLoopbackPort } from './free-port.js'
import { delimiter, dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Admin } from '../client/admin.js'
import { parseIntArg, UsageError, type CommandSpec } from './args.js'
import { BOOTSTRAP_OPTION, formatTable, runCommand, type ParsedArgs } from './common.js'

/** dist/src/cli → the package root (config/ and dist/src/main.js live there). */
const PACKAGE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..')
const MAIN_JS = join(PACKAGE_ROOT, 'dist', 'src', 'main.js')
const SERVER_PROPERTIES = join(PACKAGE_ROOT, 'config', 'server.properties')
const DEFAULT_DIR = './cluster-data'
const STATE_FILE = 'cluster.json'
const CHROOT = '/skein'
const ZOOKEEPER_INSTALL_HINT = 'apt-get install zookeeper'

export interface BrokerState {
  id: number
  port: number
  /** undefined while the broker is not running. */
  pid?: number
  logDir: string
  logFile: string
}

export interface ClusterState {
  version: 1
  supervisorPid: number
  dir: string
  zookeeper: { pid?: number; port: number; connect: string; dataDir: string; logFile: string }
  /** zookeeper.connect of the brokers (with the chroot). */
  zookeeperConnect: string
  bootstrapServers: string
  brokers: BrokerState[]
  /** Rolling restarts completed (successfully or not); `restart` waits for this to grow. */
  restartsCompleted: number
  restartInProgress: boolean
  /** Lines describing the current / last rolling restart. */
  restartLog: string[]
  lastRestartError?: string
}

const UP_SPEC: CommandSpec = {
  command: 'skein cluster up',
  usage: 'skein cluster up [--brokers N] [--dir DIR] [--partitions-default N] [--override key=value ...]',
  summary: 'Start a local development cluster: a ZooKeeper and N brokers on free loopback ports, until Ctrl-C.',
  options: [
    { name: 'brokers', value: 'N', desc: 'Number of brokers, ids 1..N (default 3)' },
    { name: 'dir', value: 'DIR', desc: `Directory for ZooKeeper's data, the brokers' log dirs, their logs and ${STATE_FILE} (default ${DEFAULT_DIR}; reused when it exists)` },
    { name: 'partitions-default', value: 'N', desc: 'num.partitions of the brokers (partitions of a topic created without a count)' },
    { name: 'override', value: 'KEY=VALUE', repeat: true, desc: 'A broker config for every broker, after the cluster\'s own' },
    { name: 'zookeeper-server', value: 'PATH', desc: 'zkServer.sh to run (default: found under $ZOOKEEPER_HOME, /usr/share/zookeeper, /opt/zookeeper or on PATH)' },
  ],
  notes: `Each broker runs node dist/src/main.js --config config/server.properties with broker.id=i,
zookeeper.connect=127.0.0.1:<zk port>${CHROOT}, listeners=PLAINTEXT://127.0.0.1:<port>, log.dirs=DIR/broker-i,
the embedded Schema Registry and REST Proxy off (their ports would clash), and the internal topics'
replication factor min(N, 3) (transaction.state.log.min.isr min(N, 2)). Output goes to DIR/broker-i.log and
DIR/zookeeper/zookeeper.out. Once every broker is registered it prints bootstrap.servers and
zookeeper.connect. Ctrl-C or SIGTERM stops the brokers (SIGTERM: controlled shutdown), then ZooKeeper, by PID.

Examples:
  skein cluster up --brokers 3
  skein cluster up --brokers 3 --dir /tmp/dev --override min.insync.replicas=2`,
}

const STATUS_SPEC: CommandSpec = {
  command: 'skein cluster status',
  usage: 'skein cluster status [--bootstrap-server HOST:PORT | --dir DIR]',
  summary: 'Brokers, the controller, and under-replicated and offline partitions of a cluster.',
  options: [
    BOOTSTRAP_OPTION,
    { name: 'dir', value: 'DIR', desc: `A cluster started by skein cluster up: its bootstrap servers from DIR/${STATE_FILE} (default ${DEFAULT_DIR}, when no --bootstrap-server)` },
  ],
  notes: `Under-replicated: a partition whose ISR is smaller than its replica set (kafka-topics
--under-replicated-partitions). Offline: a partition without a leader. Works against any cluster.`,
}

const RESTART_SPEC: CommandSpec = {
  command: 'skein cluster restart',
  usage: 'skein cluster restart --rolling [--dir DIR] [--timeout-ms MS]',
  summary: 'Rolling restart of a cluster started by skein cluster up.',
  options: [
    { name: 'rolling', desc: 'Restart the brokers one at a time (the only mode)' },
    { name: 'dir', value: 'DIR', desc: `The cluster's directory (default ${DEFAULT_DIR})` },
    { name: 'timeout-ms', value: 'MS', desc: 'Give up waiting after this long (default 600000)' },
  ],
  notes: `The skein cluster up process does the restart (SIGUSR2 asks it to), so the new broker processes
are its children and Ctrl-C still stops them. For each broker in id order: SIGTERM (a controlled shutdown:
its leaderships move first), wait for the exit, start it again with the same arguments, wait until it is
registered and no partition is under-replicated, then the next. This command prints the progress and
exits 0 when the restart completed, 1 when it failed.`,
}

const HELP = `Usage: skein cluster <up|status|restart> [options]

A local development cluster (ZooKeeper and N brokers on this machine):
  up        Start it and supervise it until Ctrl-C
  status    Brokers, controller, under-replicated and offline partitions (any cluster)
  restart   --rolling: restart its brokers one at a time

Run 'skein cluster <subcommand> --help' for its options.
`

export function runCluster(argv: readonly string[]): Promise<number> {
  const [sub, ...rest] = argv
  switch (sub) {
    case 'up':
      return runCommand(UP_SPEC, rest, up)
    case 'status':
      return runCommand(STATUS_SPEC, rest, status)
    case 'restart':
      return runCommand(RESTART_SPEC, rest, restart)
    case undefined:
    case '-h':
    case '--help':
      process.stdout.write(HELP)
      return Promise.resolve(sub === undefined ? 1 : 0)
    default:
      process.stderr.write(`skein cluster: unknown subcommand '${sub}' (see skein cluster --help)\n`)
      return Promise.resolve(1)
  }
}

// ---------------------------------------------------------------------------------------------------------
// Processes and ports

function alive(pid: number | undefined): boolean {
  if (pid === undefined) return false
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

function signal(pid: number | undefined, sig: NodeJS.Signals): void {
  if (pid === undefined) return
  try {
    process.kill(pid, sig)
  } catch {
    // gone already
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

/** zkServer.sh: --zookeeper-server, then $ZOOKEEPER_HOME, Debian's /usr/share/zookeeper, /opt/zookeeper, PATH. */
export function findZkServer(explicit?: string, candidates: readonly string[] = zkServerCandidates()): string {
  if (explicit !== undefined) {
    if (!existsSync(explicit)) throw new UsageError(`${explicit} does not exist`)
    return explicit
  }
  const found = candidates.find((c) => existsSync(c))
  if (found === undefined) {
    throw new UsageError(`ZooKeeper is not installed (no zkServer.sh in /usr/share/zookeeper/bin, $ZOOKEEPER_HOME/bin or PATH): install it with '${ZOOKEEPER_INSTALL_HINT}' (Debian/Ubuntu), or give --zookeeper-server PATH`)
  }
  return found
}

function zkServerCandidates(): string[] {
  return [
    ...(process.env.ZOOKEEPER_HOME !== undefined ? [join(process.env.ZOOKEEPER_HOME, 'bin', 'zkServer.sh')] : []),
    '/usr/share/zookeeper/bin/zkServer.sh',
    '/opt/zookeeper/bin/zkServer.sh',
    ...(process.env.PATH ?? '').split(delimiter).filter((p) => p !== '').map((p) => join(p, 'zkServer.sh')),
  ]
}

function readState(dir: string): ClusterState | undefined {
  const path = join(dir, STATE_FILE)
  if (!existsSync(path)) return undefined
  return JSON.parse(readFileSync(path, 'utf8')) as ClusterState
}

function writeState(state: ClusterState): void {
  const path = join(state.dir, STATE_FILE)
  writeFileSync(`${path}.tmp`, JSON.stringify(state, null, 2) + '\n')
  renameSync(`${path}.tmp`, path)
}

/** A short-lived admin client for polling: few retries, so a broker that is down fails the poll fast. */
function pollAdmin(bootstrap: string): Admin {
  return new Admin({ bootstrapServers: bootstrap, clientId: 'skein-cluster', connectTimeoutMs: 2000, requestTimeoutMs: 5000, apiTimeoutMs: 8000, retries: 1, retryBackoffMs: 100 })
}

interface Health {
  brokers: number[]
  controllerId: number
  underReplicated: number
  offline: number
}

async function clusterHealth(bootstrap: string): Promise<Health> {
  const admin = pollAdmin(bootstrap)
  try {
    const cluster = await admin.describeCluster()
    const topics = await admin.describeTopics(null, { includeInternal: true })
    const partitions = topics.flatMap((t) => t.partitions)
    return {
      brokers: cluster.brokers.map((b) => b.nodeId).sort((a, b) => a - b),
      controllerId: cluster.controllerId,
      underReplicated: partitions.filter((p) => p.isr.length < p.replicas.length).length,
      offline: partitions.filter((p) => p.leader < 0).length,
    }
  } finally {
    await admin.close().catch(() => {})
  }
}

/** Polls until check(health) holds; throws with the last health / error after timeoutMs. */
async function waitForHealth(bootstrap: string, what: string, timeoutMs: number, check: (h: Health) => boolean, stillOk: () => void = () => {}): Promise<void> {
  const deadline = Date.now() + timeoutMs
  let last = ''
  while (Date.now() < deadline) {
    stillOk()
    try {
      const h = await clusterHealth(bootstrap)
      if (check(h)) return
      last = `brokers [${h.brokers.join(',')}], controller ${h.controllerId}, ${h.underReplicated} under-replicated, ${h.offline} offline`
    } catch (err) {
      last = (err as Error).message.split('\n')[0]!
    }
    await sleep(300)
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last: ${last})`)
}

// ---------------------------------------------------------------------------------------------------------
// up

interface RunningBroker {
  state: BrokerState
  child?: ChildProcess
  exited: Promise<void>
  /** Set while the supervisor itself stops it (restart, shutdown): its exit is expected. */
  stopping: boolean
  /** Where this run's output starts in its log file (the file is appended to across restarts). */
  logOffset?: number
}

/** How long a broker that logged "shut down cleanly" may take to exit before it is SIGKILLed. */
const STOP_AFTER_CLEAN_MS = 3000

function fileSize(path: string): number {
  try {
    return statSync(path).size
  } catch {
    return 0
  }
}

/** Whether the broker's current run logged the last line of its shutdown (Broker.stop's "shut down cleanly"). */
function loggedCleanShutdown(b: RunningBroker): boolean {
  // It is among the last lines: read the end of this run's output only.
  let fd: number | undefined
  try {
    fd = openSync(b.state.logFile, 'r')
    const size = fstatSync(fd).size
    const from = Math.max(b.logOffset ?? 0, size - 4096)
    const buf = Buffer.alloc(size - from)
    readSync(fd, buf, 0, buf.length, from)
    return buf.includes('shut down cleanly')
  } catch {
    return false
  } finally {
    if (fd !== undefined) closeSync(fd)
  }
}

async function up(args: ParsedArgs): Promise<number> {
  const n = args.int('brokers', { min: 1, max: 64 }) ?? 3
  const dir = resolve(args.get('dir') ?? DEFAULT_DIR)
  const partitionsDefault = args.int('partitions-default', { min: 1 })
  const zkServer = findZkServer(args.get('zookeeper-server'))
  if (!existsSync(MAIN_JS)) throw new UsageError(`${MAIN_JS} is missing: run npm run build first`)
  const previous = readState(dir)
  if (previous !== undefined && alive(previous.supervisorPid) && previous.supervisorPid !== process.pid) {
    throw new UsageError(`a cluster is already running from ${dir} (skein cluster up, pid ${previous.supervisorPid})`)
  }
  mkdirSync(dir, { recursive: true })

  // ZooKeeper: a standalone server with its data under DIR/zookeeper.
  const zkDir = join(dir, 'zookeeper')
  const zkDataDir = join(zkDir, 'data')
  mkdirSync(zkDataDir, { recursive: true })
  const zkPort = await freeLoopbackPort()
  writeFileSync(
    join(zkDir, 'zoo.cfg'),
    [
      '# Written by skein cluster up.',
      'tickTime=2000',
      `dataDir=${zkDataDir}`,
      `clientPort=${zkPort}`,
      'clientPortAddress=127.0.0.1',
      'admin.enableServer=false', // else its AdminServer takes port 8080
      '4lw.commands.whitelist=ruok,srvr,mntr,stat',
      'maxClientCnxns=0',
    ].join('\n') + '\n',
  )
  const zkLog = join(zkDir, 'zookeeper.out')
  const children = new Set<ChildProcess>()
  // Detached (own process group): Ctrl-C reaches only this supervisor, which stops the brokers before
  // ZooKeeper. Should this process die without running its handlers, the orphan guard stops them.
  const spawnLogged = (command: string, argv: string[], logFile: string, cwd: string, env: NodeJS.ProcessEnv): ChildProcess => {
    const fd = openSync(logFile, 'a')
    const child = spawn(command, argv, { cwd, env, detached: true, stdio: ['ignore', fd, fd] })
    closeSync(fd)
    if (child.pid !== undefined) orphanGuard(child.pid)
    children.add(child)
    child.once('exit', () => children.delete(child))
    child.on('error', () => {})
    return child
  }
  process.once('exit', () => {
    for (const c of children) signal(c.pid, 'SIGKILL')
  })
  // Should this process be SIGKILLed, a small shell per child stops it (SIGTERM, SIGKILL 30 s later).
  const orphanGuard = (pid: number): void => {
    const script = `while kill -0 ${process.pid} 2>/dev/null; do kill -0 ${pid} 2>/dev/null || exit 0; sleep 1; done; kill -TERM ${pid} 2>/dev/null; sleep 30; kill -9 ${pid} 2>/dev/null; exit 0`
    const guard = spawn('/bin/sh', ['-c', script], { detached: true, stdio: 'ignore' })
    guard.on('error', () => {})
    guard.unref()
  }

  const zk = spawnLogged(zkServer, ['start-foreground', join(zkDir, 'zoo.cfg')], zkLog, zkDir, {
    ...process.env,
    ZOO_LOG_DIR: zkDir,
    ZOO_LOG4J_PROP: 'INFO,CONSOLE',
    JVMFLAGS: process.env.JVMFLAGS ?? '-Xms16m -Xmx256m -XX:+UseSerialGC',
  })
  const zkExited = new Promise<void>((r) => zk.once('exit', () => r()))
  const zkConnect = `127.0.0.1:${zkPort}`
  const zookeeperConnect = `${zkConnect}${CHROOT}`

  const rf = Math.min(n, 3)
  const common = [
    `zookeeper.connect=${zookeeperConnect}`,
    'schema.registry.listeners=',
    'rest.listeners=',
    `offsets.topic.replication.factor=${rf}`,
    `transaction.state.log.replication.factor=${rf}`,
    `transaction.state.log.min.isr=${Math.min(n, 2)}`,
    `share.coordinator.state.topic.replication.factor=${rf}`,
    `share.coordinator.state.topic.min.isr=${Math.min(n, 2)}`,
    ...(partitionsDefault !== undefined ? [`num.partitions=${partitionsDefault}`] : []),
  ]
  const extra = args.all('override')
  for (const o of extra) if (!o.includes('=')) throw new UsageError(`--override ${o}: expected key=value`)

  const brokers: RunningBroker[] = []
  for (let id = 1; id <= n; id++) {
    const logDir = join(dir, `broker-${id}`)
    mkdirSync(logDir, { recursive: true })
    brokers.push({ state: { id, port: await freeLoopbackPort(), logDir, logFile: join(dir, `broker-${id}.log`) }, exited: Promise.resolve(), stopping: false })
  }
  const bootstrapServers = brokers.map((b) => `127.0.0.1:${b.state.port}`).join(',')
  const state: ClusterState = {
    version: 1,
    supervisorPid: process.pid,
    dir,
    zookeeper: { pid: zk.pid, port: zkPort, connect: zkConnect, dataDir: zkDataDir, logFile: zkLog },
    zookeeperConnect,
    bootstrapServers,
    brokers: brokers.map((b) => b.state),
    restartsCompleted: 0,
    restartInProgress: false,
    restartLog: [],
  }
  writeState(state)

  let shuttingDown = false
  const startBroker = (b: RunningBroker): void => {
    const overrides = [`broker.id=${b.state.id}`, `listeners=PLAINTEXT://127.0.0.1:${b.state.port}`, `log.dirs=${b.state.logDir}`, ...common, ...extra]
    const child = spawnLogged(process.execPath, [MAIN_JS, '--config', SERVER_PROPERTIES, ...overrides.flatMap((o) => ['--override', o])], b.state.logFile, PACKAGE_ROOT, process.env)
    b.child = child
    b.logOffset = fileSize(b.state.logFile)
    b.stopping = false
    b.state.pid = child.pid
    b.exited = new Promise((r) => child.once('exit', () => r()))
    child.once('exit', (code, sig) => {
      if (b.child === child) b.state.pid = undefined
      if (!b.stopping && !shuttingDown) {
        process.stdout.write(`broker ${b.state.id} exited unexpectedly (${code ?? sig}); see ${b.state.logFile}\n`)
        writeState(state)
      }
    })
  }
  /**
   * SIGTERM (a controlled shutdown) and wait for the exit. A broker that logged its clean shutdown but is
   * still running STOP_AFTER_CLEAN_MS later is SIGKILLed (a handle left open must not stall a rolling
   * restart or Ctrl-C), as is one still running after timeoutMs.
   */
  const stopBroker = async (b: RunningBroker, timeoutMs = 60_000): Promise<string> => {
    const pid = b.state.pid
    if (pid === undefined) return ''
    let note = ''
    b.stopping = true
    signal(pid, 'SIGCONT')
    signal(pid, 'SIGTERM')
    let done = false
    void b.exited.then(() => (done = true))
    const deadline = Date.now() + timeoutMs
    let cleanSince: number | undefined
    while (!done) {
      await Promise.race([b.exited, sleep(250)])
      if (done) break
      if (cleanSince === undefined && loggedCleanShutdown(b)) cleanSince = Date.now()
      if (cleanSince !== undefined && Date.now() - cleanSince > STOP_AFTER_CLEAN_MS) {
        note = ` (SIGKILLed: it logged a clean shutdown but did not exit within ${STOP_AFTER_CLEAN_MS} ms)`
        if (shuttingDown) process.stdout.write(`broker ${b.state.id} (pid ${pid})${note}\n`)
        signal(pid, 'SIGKILL')
        break
      }
      if (Date.now() > deadline) {
        note = ` (SIGKILLed: still running ${timeoutMs} ms after SIGTERM)`
        process.stdout.write(`broker ${b.state.id} (pid ${pid})${note}\n`)
        signal(pid, 'SIGKILL')
        break
      }
    }
    await b.exited
    return note
  }

  let stopRequested: () => void = () => {}
  const stopSignal = new Promise<void>((r) => (stopRequested = r))
  const onStop = (): void => {
    if (shuttingDown) return
    shuttingDown = true
    stopRequested()
  }
  process.on('SIGINT', onStop)
  process.on('SIGTERM', onStop)
  process.on('SIGHUP', onStop)

  const shutdown = async (): Promise<void> => {
    shuttingDown = true
    process.stdout.write('Stopping the brokers (controlled shutdown), then ZooKeeper...\n')
    await Promise.all(brokers.map((b) => stopBroker(b)))
    if (zk.exitCode === null && zk.signalCode === null) {
      signal(zk.pid, 'SIGTERM')
      const timer = setTimeout(() => signal(zk.pid, 'SIGKILL'), 15_000)
      await zkExited
      clearTimeout(timer)
    }
    state.zookeeper.pid = undefined
    writeState(state)
    process.stdout.write('Stopped.\n')
  }

  try {
    // ZooKeeper first: it serves once ruok is answered imok and srvr shows a mode.
    const zkDeadline = Date.now() + 60_000
    for (;;) {
      if (shuttingDown) throw new Error('stopped during start-up')
      if (zk.exitCode !== null || zk.signalCode !== null) throw new Error(`ZooKeeper (${zkServer}) exited during start-up; see ${zkLog}`)
      if ((await fourLetterWord(zkPort, 'ruok', 1000)) === 'imok' && /Mode: \w+/.test(await fourLetterWord(zkPort, 'srvr', 1000))) break
      if (Date.now() > zkDeadline) throw new Error(`ZooKeeper did not serve on ${zkConnect} within 60 s; see ${zkLog}`)
      await sleep(200)
    }
    process.stdout.write(`ZooKeeper: ${zkConnect} (pid ${zk.pid}, ${zkLog})\n`)
    for (const b of brokers) startBroker(b)
    writeState(state)
    for (const b of brokers) process.stdout.write(`Broker ${b.state.id}: 127.0.0.1:${b.state.port} (pid ${b.state.pid}, log.dirs ${b.state.logDir}, output ${b.state.logFile})\n`)
    const ids = brokers.map((b) => b.state.id)
    await waitForHealth(bootstrapServers, `all ${n} brokers to register`, 120_000, (h) => ids.every((id) => h.brokers.includes(id)) && h.controllerId >= 0, () => {
      if (shuttingDown) throw new Error('stopped during start-up')
      const dead = brokers.find((b) => b.state.pid === undefined)
      if (dead !== undefined) throw new Error(`broker ${dead.state.id} exited during start-up; see ${dead.state.logFile}`)
    })
  } catch (err) {
    process.stderr.write(`skein cluster up: ${(err as Error).message}\n`)
    await shutdown()
    return 1
  }
  process.stdout.write(
    `Cluster ready: ${n} broker${n === 1 ? '' : 's'}\n` +
      `bootstrap.servers=${bootstrapServers}\n` +
      `zookeeper.connect=${zookeeperConnect}\n` +
      `State in ${join(dir, STATE_FILE)}. Ctrl-C stops everything.\n`,
  )

  // Rolling restarts, asked for by `skein cluster restart --rolling` with SIGUSR2; one at a time.
  let restarting: Promise<void> = Promise.resolve()
  const log = (line: string): void => {
    state.restartLog.push(line)
    process.stdout.write(`${line}\n`)
    writeState(state)
  }
  const rollingRestart = async (): Promise<void> => {
    state.restartInProgress = true
    state.restartLog = []
    state.lastRestartError = undefined
    writeState(state)
    try {
      for (const b of brokers) {
        if (shuttingDown) throw new Error('the cluster is stopping')
        const oldPid = b.state.pid
        const t0 = Date.now()
        const took = (): string => `${((Date.now() - t0) / 1000).toFixed(1)} s`
        log(`Restarting broker ${b.state.id} (pid ${oldPid ?? 'none'}): SIGTERM`)
        const note = await stopBroker(b)
        if (shuttingDown) throw new Error('the cluster is stopping')
        startBroker(b)
        writeState(state)
        log(`Broker ${b.state.id} stopped after ${took()}${note}, started again (pid ${b.state.pid}); waiting until it is registered and no partition is under-replicated`)
        await waitForHealth(bootstrapServers, `broker ${b.state.id} to rejoin with no under-replicated partition`, 180_000, (h) => h.brokers.includes(b.state.id) && h.underReplicated === 0 && h.offline === 0, () => {
          if (shuttingDown) throw new Error('the cluster is stopping')
          if (b.state.pid === undefined) throw new Error(`broker ${b.state.id} exited after its restart; see ${b.state.logFile}`)
        })
        log(`Broker ${b.state.id} is back after ${took()}; no partition is under-replicated`)
      }
      log('Rolling restart complete')
    } catch (err) {
      state.lastRestartError = (err as Error).message
      log(`Rolling restart failed: ${state.lastRestartError}`)
    } finally {
      state.restartInProgress = false
      state.restartsCompleted++
      writeState(state)
    }
  }
  process.on('SIGUSR2', () => {
    if (shuttingDown) return
    restarting = restarting.then(async () => {
      await rollingRestart()
    })
  })

  await stopSignal
  await restarting.catch(() => {})
  await shutdown()
  return 0
}

// ---------------------------------------------------------------------------------------------------------
// status

async function status(args: ParsedArgs): Promise<number> {
  let bootstrap = args.get('bootstrap-server')
  if (bootstrap === undefined) {
    const dir = resolve(args.get('dir') ?? DEFAULT_DIR)
    const state = readState(dir)
    if (state === undefined) throw new UsageError(`no ${STATE_FILE} in ${dir}: give --bootstrap-server HOST:PORT or the --dir of a skein cluster up`)
    if (!alive(state.supervisorPid)) throw new UsageError(`the cluster in ${dir} is not running (its skein cluster up, pid ${state.supervisorPid}, is gone)`)
    bootstrap = state.bootstrapServers
  }
  const admin = new Admin({ bootstrapServers: bootstrap, clientId: 'skein-cluster', connectTimeoutMs: 5000, requestTimeoutMs: 30_000, apiTimeoutMs: 60_000, retries: 3, retryBackoffMs: 100 })
  try {
    const cluster = await admin.describeCluster()
    const topics = await admin.describeTopics(null, { includeInternal: true })
    const brokers = [...cluster.brokers].sort((a, b) => a.nodeId - b.nodeId)
    let out = `Cluster id: ${cluster.clusterId ?? '-'}\n`
    out += `Controller: ${cluster.controllerId < 0 ? 'none' : cluster.controllerId}\n`
    out += `Brokers: ${brokers.length}\n`
    out += formatTable(
      ['ID', 'HOST:PORT', 'RACK', 'CONTROLLER'],
      brokers.map((b) => [String(b.nodeId), `${b.host}:${b.port}`, b.rack ?? '-', b.nodeId === cluster.controllerId ? 'yes' : '']),
    )
    const rows = topics.flatMap((t) => t.partitions.map((p) => ({ topic: t.name, p })))
    const under = rows.filter((r) => r.p.isr.length < r.p.replicas.length)
    const offline = rows.filter((r) => r.p.leader < 0)
    out += `Topics: ${topics.length}, partitions: ${rows.length}\n`
    out += `Under-replicated partitions: ${under.length}\n`
    out += `Offline partitions: ${offline.length}\n`
    const problems = [...new Set([...under, ...offline])]
    if (problems.length > 0) {
      out += formatTable(
        ['TOPIC', 'PARTITION', 'LEADER', 'REPLICAS', 'ISR', 'OFFLINE-REPLICAS'],
        problems.map((r) => [r.topic, String(r.p.partition), r.p.leader < 0 ? 'none' : String(r.p.leader), r.p.replicas.join(','), r.p.isr.join(','), r.p.offlineReplicas.join(',')]),
      )
    }
    process.stdout.write(out)
    return 0
  } finally {
    await admin.close()
  }
}

// ---------------------------------------------------------------------------------------------------------
// restart

async function restart(args: ParsedArgs): Promise<number> {
  if (!args.has('rolling')) throw new UsageError('give --rolling (brokers are restarted one at a time)')
  const dir = resolve(args.get('dir') ?? DEFAULT_DIR)
  const timeoutMs = args.has('timeout-ms') ? parseIntArg('timeout-ms', args.get('timeout-ms')!, { min: 1 }) : 600_000
  const before = readState(dir)
  if (before === undefined) throw new UsageError(`no ${STATE_FILE} in ${dir}: is a skein cluster up running there?`)
  if (!alive(before.supervisorPid)) throw new UsageError(`the cluster in ${dir} is not running (its skein cluster up, pid ${before.supervisorPid}, is gone)`)
  const target = before.restartsCompleted + (before.restartInProgress ? 2 : 1)
  process.kill(before.supervisorPid, 'SIGUSR2')
  const deadline = Date.now() + timeoutMs
  let printed = 0
  let started = false
  for (;;) {
    await sleep(250)
    let s: ClusterState
    try {
      s = readState(dir)!
    } catch {
      continue // mid-rename on some filesystems: read again
    }
    // Lines of the restart this command asked for (a restart already running when it was asked finishes first).
    if (s.restartsCompleted === target - 1 && (s.restartInProgress || started)) {
      started = true
      for (; printed < s.restartLog.length; printed++) process.stdout.write(`${s.restartLog[printed]}\n`)
    }
    if (s.restartsCompleted >= target) {
      for (; printed < s.restartLog.length; printed++) process.stdout.write(`${s.restartLog[printed]}\n`)
      if (s.lastRestartError !== undefined) throw new Error(`rolling restart failed: ${s.lastRestartError}`)
      return 0
    }
    if (!alive(s.supervisorPid)) throw new Error(`skein cluster up (pid ${s.supervisorPid}) exited before the restart completed`)
    if (Date.now() > deadline) throw new Error(`the rolling restart did not complete within ${timeoutMs} ms`)
  }
}
