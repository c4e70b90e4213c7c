// A real cluster for tests: a ZooKeeper (Debian's, test/harness/zookeeper.ts) and N Skein broker processes
// (`node dist/src/main.js --override broker.id=N --override zookeeper.connect=<zk>/<chroot> ...`), each on a
// free loopback port with its own temp log dir. Brokers are signalled and stopped by their PIDs (SIGKILL,
// SIGSTOP/SIGCONT, SIGTERM), and any left running when the test worker ends are SIGKILLed by a watchdog
// shell per process (vitest may end a worker without running exit handlers), as the ZooKeeper harness does.
// Needs `npx tsc -p tsconfig.json` first (brokers run dist/).
import { spawn } from 'node:child_process'
import { rmSync } from 'node:fs'
import { startBrokerProcess, tempDataDir, type BrokerProcess } from './broker.js'
import { RawClient } from './raw-client.js'
import { freeLoopbackPort, startZooKeeper, type ZooKeeperTestServer } from './zookeeper.js'

export interface ClusterOptions {
  /** Broker ids; default 1..3. */
  brokerIds?: number[]
  /** Overrides for every broker (after the harness's own). */
  overrides?: string[]
  /** Overrides for one broker. */
  brokerOverrides?: (id: number) => string[]
  /** zookeeper.session.timeout.ms; default 4000 (the harness's ZooKeeper allows 1000..10000). */
  sessionTimeoutMs?: number
  /** An already running ZooKeeper (the cluster then leaves it running at stop). */
  zookeeper?: ZooKeeperTestServer
  /** The address a broker listens on (default 127.0.0.1), e.g. its network namespace's. */
  brokerHost?: (id: number) => string
  /** A broker's port (default a free loopback port), e.g. one a proxy in front of it forwards to. */
  brokerPort?: (id: number) => number | undefined
  /** A command a broker runs under (e.g. ip netns exec NS), see BrokerProcessOptions.commandPrefix. */
  brokerCommandPrefix?: (id: number) => string[] | undefined
}

export class ClusterBroker {
  process: BrokerProcess | undefined
  readonly dataDir = tempDataDir('cluster')

  constructor(
    readonly id: number,
    readonly port: number,
    private readonly overrides: string[],
    readonly host = '127.0.0.1',
    private readonly commandPrefix?: string[],
  ) {}

  get bootstrap(): string {
    return `${this.host}:${this.port}`
  }

  get pid(): number {
    if (this.process === undefined || !this.process.alive()) throw new Error(`broker ${this.id} is not running`)
    return this.process.pid
  }

  alive(): boolean {
    return this.process?.alive() ?? false
  }

  /** Starts the process (again, on the same port and data dir) and resolves once it logs that it is ready. */
  async start(): Promise<void> {
    if (this.alive()) throw new Error(`broker ${this.id} is already running`)
    this.process = await startBrokerProcess({ dataDir: this.dataDir, port: this.port, host: this.host, commandPrefix: this.commandPrefix, overrides: this.overrides, readyTimeoutMs: 60_000 })
    killWhenOrphaned(this.process.pid)
  }

  /** Sends a signal by PID (SIGKILL, SIGSTOP, SIGCONT, SIGTERM). */
  signal(signal: NodeJS.Signals): void {
    process.kill(this.pid, signal)
  }

  /** SIGKILL, and waits for the exit. */
  async kill(): Promise<void> {
    if (!this.alive()) return
    await this.process!.kill('SIGKILL')
  }

  /** SIGTERM (a clean, controlled shutdown), and waits for the exit (SIGKILL after timeoutMs). */
  async stop(timeoutMs = 30_000): Promise<void> {
    if (!this.alive()) return
    try {
      process.kill(this.process!.pid, 'SIGCONT')
    } catch {
      // gone already
    }
    await this.process!.kill('SIGTERM', timeoutMs).catch(() => this.process?.kill('SIGKILL'))
  }

  output(): string {
    return this.process?.output() ?? ''
  }

  /** A raw client connected to this broker. */
  client(): Promise<RawClient> {
    return RawClient.connect(this.host, this.port)
  }
}

export interface TestCluster {
  zookeeper: ZooKeeperTestServer
  /** zookeeper.connect of the brokers (with the cluster's chroot). */
  connect: string
  chroot: string
  brokers: ClusterBroker[]
  broker(id: number): ClusterBroker
  /** bootstrap.servers of the running brokers. */
  bootstrap(): string
  /** Stops every broker (SIGKILL: tests do not wait for controlled shutdowns) and the ZooKeeper it started; removes data dirs. */
  stop(): Promise<void>
}

let clusterN = 0

/** A ZooKeeper and brokers on free loopback ports, all running and ready when this resolves. */
export async function startCluster(options: ClusterOptions = {}): Promise<TestCluster> {
  const ownZk = options.zookeeper === undefined
  const zookeeper = options.zookeeper ?? (await startZooKeeper())
  const chroot = `/skein-test-${process.pid}-${++clusterN}`
  const connect = `${zookeeper.connectString}${chroot}`
  const ids = options.brokerIds ?? [1, 2, 3]
  const brokers: ClusterBroker[] = []
  for (const id of ids) {
    const overrides = [
      `broker.id=${id}`,
      `zookeeper.connect=${connect}`,
      `zookeeper.session.timeout.ms=${options.sessionTimeoutMs ?? 4000}`,
      'io.threads=0',
      'controlled.shutdown.retry.backoff.ms=200',
      ...(options.overrides ?? []),
      ...(options.brokerOverrides?.(id) ?? []),
    ]
    brokers.push(new ClusterBroker(id, options.brokerPort?.(id) ?? (await freeLoopbackPort()), overrides, options.brokerHost?.(id), options.brokerCommandPrefix?.(id)))
  }
  const cluster: TestCluster = {
    zookeeper,
    connect,
    chroot,
    brokers,
    broker(id) {
      const b = brokers.find((x) => x.id === id)
      if (b === undefined) throw new Error(`no broker ${id}`)
      return b
    },
    bootstrap: () =>
      brokers
        .filter((b) => b.alive())
        .map((b) => b.bootstrap)
        .join(','),
    async stop() {
      await Promise.all(brokers.map((b) => b.kill().catch(() => {})))
      for (const b of brokers) rmSync(b.dataDir, { recursive: true, force: true })
      if (ownZk) await zookeeper.stop()
    },
  }
  try {
    await Promise.all(brokers.map((b) => b.start()))
  } catch (err) {
    await cluster.stop()
    throw err
  }
  return cluster
}

/** A detached shell SIGKILLs pid once this test process is gone (or exits when pid does). */
function killWhenOrphaned(pid: number): void {
  const script = `while kill -0 ${process.pid} 2>/dev/null && kill -0 ${pid} 2>/dev/null; do sleep 0.5; done; kill -CONT ${pid} 2>/dev/null; kill -9 ${pid} 2>/dev/null; exit 0`
  const w = spawn('/bin/sh', ['-c', script], { detached: true, stdio: 'ignore' })
  w.on('error', () => {})
  w.unref()
}
