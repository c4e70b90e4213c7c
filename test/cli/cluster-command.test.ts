// `skein cluster` end to end, as a user runs it: `skein cluster up --brokers 3 --dir TMP` as a subprocess
// (Debian's ZooKeeper and three broker processes), kafkajs produces to a topic with replication factor 3,
// `skein cluster status` shows 3 brokers, a controller and nothing under-replicated, `skein cluster restart
// --rolling` restarts every broker (new PIDs) and the records are read back afterwards, and SIGTERM to the
// `cluster up` process stops every process it started (their PIDs are gone). Needs dist/ (npx tsc).
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ConfigResourceTypes, Kafka, logLevel } from 'kafkajs'
import { afterAll, describe, expect, it } from 'vitest'
import { zookeeperMissing } from '../harness/index.js'
import { findZkServer } from '../../src/cli/dev-cluster.js'
import { SKEIN_JS, skein } from './helpers.js'

const MISSING = zookeeperMissing()

interface State {
  supervisorPid: number
  zookeeper: { pid?: number }
  bootstrapServers: string
  brokers: { id: number; pid?: number }[]
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

describe('skein cluster up without ZooKeeper', () => {
  it('names the Debian package to install', () => {
    expect(() => findZkServer(undefined, ['/nonexistent/bin/zkServer.sh'])).toThrow(/apt-get install zookeeper/)
  })
  it('reports a given zkServer.sh that does not exist', async () => {
    const r = await skein(['cluster', 'up', '--zookeeper-server', '/nonexistent/zkServer.sh', '--dir', join(tmpdir(), 'skein-cluster-unused')])
    expect(r.code).toBe(1)
    expect(r.stderr.toString()).toBe('skein cluster up: /nonexistent/zkServer.sh does not exist\n')
  })
})

describe.skipIf(MISSING !== undefined)('skein cluster', () => {
  const dir = mkdtempSync(join(tmpdir(), 'skein-cluster-cmd-'))
  let up: ChildProcess | undefined
  let out = ''
  const readState = (): State => JSON.parse(readFileSync(join(dir, 'cluster.json'), 'utf8')) as State
  const pidsOf = (s: State): number[] => [s.zookeeper.pid, ...s.brokers.map((b) => b.pid)].filter((p): p is number => p !== undefined)
  const seen = new Set<number>()
  let passed = false

  afterAll(() => {
    // On a failure, what the supervisor printed and how the brokers stopped, for the report.
    if (!passed) {
      console.error(`skein cluster up printed:\n${out}`)
      for (const id of [1, 2, 3]) {
        try {
          const lines = readFileSync(join(dir, `broker-${id}.log`), 'utf8').split('\n').filter((l) => /controlled shutdown|error|warn/i.test(l))
          console.error(`broker ${id}:\n${lines.slice(-15).join('\n')}`)
        } catch {
          // no log
        }
      }
    }
    // Only on failure is anything left: SIGKILL what the cluster started, by PID.
    if (up?.pid !== undefined && alive(up.pid)) up.kill('SIGKILL')
    try {
      for (const pid of pidsOf(readState())) seen.add(pid)
    } catch {
      // no state file: nothing was started
    }
    for (const pid of seen) if (alive(pid)) process.kill(pid, 'SIGKILL')
    if (passed) rmSync(dir, { recursive: true, force: true })
    else console.error(`left ${dir} for a look`)
  })

  it('up, status, produce/consume with RF 3, rolling restart, and SIGTERM stops everything', async () => {
    up = spawn(process.execPath, [SKEIN_JS, 'cluster', 'up', '--brokers', '3', '--dir', dir], { stdio: ['ignore', 'pipe', 'pipe'] })
    up.stdout!.on('data', (d: Buffer) => (out += d.toString()))
    up.stderr!.on('data', (d: Buffer) => (out += d.toString()))
    const exited = new Promise<number | string>((r) => up!.once('exit', (code, sig) => r(code ?? sig ?? -1)))

    const deadline = Date.now() + 20_000
    while (!/^bootstrap\.servers=/m.test(out)) {
      if (up.exitCode !== null) throw new Error(`skein cluster up exited:\n${out}`)
      if (Date.now() > deadline) throw new Error(`no bootstrap.servers within 20 s:\n${out}`)
      await new Promise((r) => setTimeout(r, 100))
    }
    const bootstrap = /^bootstrap\.servers=(.+)$/m.exec(out)![1]!
    expect(out).toMatch(/^zookeeper\.connect=127\.0\.0\.1:\d+\/skein$/m)
    const first = readState()
    expect(first.bootstrapServers).toBe(bootstrap)
    expect(first.supervisorPid).toBe(up.pid)
    for (const pid of pidsOf(first)) seen.add(pid)
    expect(pidsOf(first)).toHaveLength(4)

    const kafka = new Kafka({ clientId: 'cluster-cmd-test', brokers: bootstrap.split(','), logLevel: logLevel.NOTHING })
    const admin = kafka.admin()
    await admin.connect()
    await admin.createTopics({ topics: [{ topic: 'orders', numPartitions: 3, replicationFactor: 3 }], waitForLeaders: true })
    // Every internal topic is made with 3 replicas and, where Kafka has one, a min ISR of 2.
    const internal = ['offsets.topic.replication.factor', 'transaction.state.log.replication.factor', 'transaction.state.log.min.isr', 'share.coordinator.state.topic.replication.factor', 'share.coordinator.state.topic.min.isr']
    const described = await admin.describeConfigs({ includeSynonyms: false, resources: [{ type: ConfigResourceTypes.BROKER, name: '1', configNames: internal }] })
    expect(Object.fromEntries(described.resources[0]!.configEntries.map((e) => [e.configName, e.configValue]))).toEqual({
      'offsets.topic.replication.factor': '3', 'transaction.state.log.replication.factor': '3', 'transaction.state.log.min.isr': '2',
      'share.coordinator.state.topic.replication.factor': '3', 'share.coordinator.state.topic.min.isr': '2',
    })
    await admin.disconnect()
    const producer = kafka.producer()
    await producer.connect()
    const values = Array.from({ length: 30 }, (_, i) => `order-${i}`)
    await producer.send({ topic: 'orders', acks: -1, messages: values.map((v) => ({ key: v, value: v })) })
    await producer.disconnect()

    const status = await skein(['cluster', 'status', '--dir', dir])
    expect(status.code, status.stderr.toString()).toBe(0)
    expect(status.out).toMatch(/^Brokers: 3$/m)
    expect(status.out).toMatch(/^Controller: [123]$/m)
    for (const port of bootstrap.split(',').map((b) => b.split(':')[1])) expect(status.out).toContain(`127.0.0.1:${port}`)
    expect(status.out).toMatch(/^Topics: 1, partitions: 3$/m)
    expect(status.out).toMatch(/^Under-replicated partitions: 0$/m)
    expect(status.out).toMatch(/^Offline partitions: 0$/m)
    // The same through --bootstrap-server (any cluster).
    const byBootstrap = await skein(['cluster', 'status', '--bootstrap-server', bootstrap.split(',')[0]!])
    expect(byBootstrap.out).toMatch(/^Brokers: 3$/m)

    const restarted = await skein(['cluster', 'restart', '--rolling', '--dir', dir], { timeoutMs: 60_000 })
    expect(restarted.code, restarted.stderr.toString() + out).toBe(0)
    expect(restarted.out).toMatch(/Broker 3 is back after [\d.]+ s; no partition is under-replicated/)
    expect(restarted.out).toMatch(/^Rolling restart complete$/m)
    const second = readState()
    for (const pid of pidsOf(second)) seen.add(pid)
    for (const b of second.brokers) {
      const before = first.brokers.find((x) => x.id === b.id)!
      expect(b.pid).toBeDefined()
      expect(b.pid).not.toBe(before.pid)
      expect(alive(before.pid!)).toBe(false)
    }
    const after = await skein(['cluster', 'status', '--dir', dir])
    expect(after.out).toMatch(/^Brokers: 3$/m)
    expect(after.out).toMatch(/^Under-replicated partitions: 0$/m)

    // Every record survived the rolling restart.
    const consumer = kafka.consumer({ groupId: 'cluster-cmd-readers', maxWaitTimeInMs: 500 })
    await consumer.connect()
    await consumer.subscribe({ topic: 'orders', fromBeginning: true })
    const got = new Set<string>()
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`read ${got.size} of ${values.length}`)), 20_000)
      void consumer.run({
        eachMessage: async ({ message }) => {
          got.add(message.value!.toString())
          if (got.size === values.length) {
            clearTimeout(timer)
            resolve()
          }
        },
      })
    })
    await consumer.disconnect()
    expect([...got].sort()).toEqual([...values].sort())

    process.kill(up.pid!, 'SIGTERM')
    expect(await exited).toBe(0)
    expect(out).toMatch(/^Stopped\.$/m)
    for (const pid of seen) expect(alive(pid), `pid ${pid} still running`).toBe(false)
    passed = true
  }, 40_000)
})
