// The Go clients Debian packages, and Burrow, against a Skein cluster: a ZooKeeper (Debian's) and three
// Skein broker processes (test/harness/cluster.ts), each advertised behind a recording proxy so the test
// sees which API versions each client really sends. Run with npm run test:compat-go; the results and why
// are in RESULTS.md beside this file, and the smoke in npm test is go-smoke.test.ts.
// - sarama 1.22.1 (Version 2.1.0): metadata, ClusterAdmin CreateTopic, an idempotent acks=all producer,
//   partition consumers, a consumer group that commits (OffsetCommit v2, with a retention) and the
//   committed offsets read back through ClusterAdmin. Its default commit (no retention) is OffsetCommit
//   v1, which Kafka 4.0 removed (KIP-896): refused, and nothing committed. Its default Config.Version
//   (0.8.2) produces with Produce v0 (message format v0): Kafka 4.0 refuses it, Skein up-converts it as
//   Kafka 3.x did.
// - kafka-go 0.2.1 hard-codes old versions: Metadata v1, the group path (JoinGroup v1, OffsetCommit v2),
//   and CreateTopics v0, Produce v2 and Fetch v2, which Kafka 4.0 removed (KIP-896) and Skein serves as
//   Kafka 3.x did, converting message formats (v1 sets up-converted on produce, batches v2 down-converted
//   to magic 1 on fetch): everything works.
// - confluent-kafka-go 0.11.6 over librdkafka 2.0.2: everything works.
// - Burrow 1.2.1 (sarama inside): it starts, takes its ZooKeeper, reads __consumer_offsets, asks the
//   brokers for their log-end offsets with ListOffsets v0 (deprecated, removed in Kafka 4.0, served by
//   Skein as by Kafka 3.x for this), and reports the group's lag.
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Kafka, logLevel } from 'kafkajs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freePort, RecordingProxy, startCluster, type TestCluster } from '../../harness/index.js'
import { BURROW, buildProgram, requireBurrow, runProgram } from './go-programs.js'

const PRODUCE = 0
const FETCH = 1
const LIST_OFFSETS = 2
const OFFSET_COMMIT = 8
const CREATE_TOPICS = 19

/** Polls cond until it holds; fails with message() (evaluated then, so it can show the latest log). */
async function waitFor(cond: () => Promise<boolean> | boolean, timeoutMs: number, message: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms: ${message()}`)
    await new Promise((r) => setTimeout(r, 250))
  }
}

/** The values of a topic's first `count` messages, read from the start by a kafkajs consumer of a group of its own. */
async function readAll(kafka: Kafka, topic: string, count: number): Promise<string[]> {
  const consumer = kafka.consumer({ groupId: `go-compat-read-${Date.now()}` })
  const values: string[] = []
  await consumer.connect()
  try {
    await consumer.subscribe({ topic, fromBeginning: true })
    await consumer.run({ eachMessage: async ({ message }) => void values.push(message.value?.toString() ?? '') })
    await waitFor(() => values.length >= count, 30_000, () => `read ${values.length} of ${count}: ${values.join(' ')}`)
  } finally {
    await consumer.disconnect()
  }
  return values
}

describe('Go clients and Burrow against three brokers and ZooKeeper', () => {
  let cluster: TestCluster
  const proxies = new Map<number, RecordingProxy>()
  let bootstrap = ''

  beforeAll(async () => {
    const brokerPorts = new Map<number, number>()
    for (const id of [1, 2, 3]) {
      brokerPorts.set(id, await freePort())
      // Fetch bodies are kept to tell the clients' fetches from the replica fetchers', which pass
      // through the proxies too (brokers reach each other at the advertised addresses).
      proxies.set(id, await RecordingProxy.start(await freePort(), () => brokerPorts.get(id)!, [FETCH]))
    }
    cluster = await startCluster({
      brokerPort: (id) => brokerPorts.get(id),
      brokerOverrides: (id) => [`advertised.listeners=PLAINTEXT://127.0.0.1:${proxies.get(id)!.port}`],
      overrides: ['default.replication.factor=3', 'offsets.topic.replication.factor=3', 'offsets.topic.num.partitions=3', 'min.insync.replicas=2'],
      sessionTimeoutMs: 8000,
    })
    bootstrap = [...proxies.values()].map((p) => `127.0.0.1:${p.port}`).join(',')
  })

  afterAll(async () => {
    await cluster?.stop()
    for (const p of proxies.values()) await p.close()
  })

  /**
   * The versions of one API the clients sent through any proxy since `from` (a snapshot of the counts).
   * A Fetch with a replica id (the body's first int32 below v15; v15+ moved it to a tagged field, which
   * no client here sends) is a follower's, not a client's.
   */
  function recorded(apiKey: number, from: Map<number, number>): number[] {
    const out: number[] = []
    for (const [id, p] of proxies) {
      for (const r of p.requests.slice(from.get(id) ?? 0)) {
        if (r.apiKey !== apiKey) continue
        if (apiKey === FETCH && (r.apiVersion >= 15 || r.body!.readInt32BE(0) >= 0)) continue
        out.push(r.apiVersion)
      }
    }
    return out
  }
  function mark(): Map<number, number> {
    return new Map([...proxies].map(([id, p]) => [id, p.requests.length]))
  }

  function kafkajs(): Kafka {
    return new Kafka({ clientId: 'go-compat-setup', brokers: bootstrap.split(','), logLevel: logLevel.NOTHING })
  }

  it('sarama 1.22.1: metadata, CreateTopic, idempotent acks=all produce, consume, a group that commits; OffsetCommit v1 refused as in Kafka 4.0, Produce v0 served as in Kafka 3.x', async () => {
    const sarama = await buildProgram('sarama')
    const from = mark()
    const r = await runProgram(sarama.path, ['-brokers', bootstrap, '-topic', 'go-sarama', '-group', 'go-sarama-group', '-messages', '30'])
    for (const name of ['metadata', 'create_topic', 'produce_idempotent', 'consume', 'group_commit', 'offset_commit_v1_refused', 'default_version', 'group_offsets']) {
      expect(r.checks.get(name), `${name}\n${r.output}`).toMatchObject({ ok: true })
    }
    expect(r.checks.get('group_offsets')!.detail).toMatch(/total=30 /)
    expect(r.checks.get('default_version')!.detail).toMatch(/^Config.Version 0.8.2.0: Produce v0 written at \d\/\d+$/)
    expect(r.code, r.output).toBe(0)
    // What sarama put on the wire: Produce v3 (record batches) and the default version's v0, Fetch v4,
    // CreateTopics v2, OffsetCommit v2 from the group and the one v1 the refusal check sends.
    expect(new Set(recorded(PRODUCE, from))).toEqual(new Set([0, 3]))
    expect(new Set(recorded(FETCH, from))).toEqual(new Set([4]))
    expect(new Set(recorded(CREATE_TOPICS, from))).toEqual(new Set([2]))
    expect(new Set(recorded(OFFSET_COMMIT, from))).toEqual(new Set([1, 2]))
  })

  it('kafka-go 0.2.1: metadata, CreateTopics v0, Produce v2 (message format v1), Fetch v2 (down-converted) and a group commit', async () => {
    const kafkaGo = await buildProgram('kafka-go')
    const topic = 'go-kafka-go'
    const group = 'go-kafka-go-group'
    const kafka = kafkajs()
    const admin = kafka.admin()
    await admin.connect()
    const producer = kafka.producer()
    await producer.connect()
    try {
      await admin.createTopics({ topics: [{ topic, numPartitions: 3, replicationFactor: 3 }], waitForLeaders: true })
      await producer.send({ topic, acks: -1, messages: [0, 1, 2, 3, 4, 5].map((i) => ({ partition: i % 3, value: `setup-${i}` })) })
      const from = mark()
      const r = await runProgram(kafkaGo.path, ['-brokers', bootstrap, '-topic', topic, '-create-topic', 'go-kafka-go-created', '-group', group])
      expect(r.checks.get('metadata'), r.output).toMatchObject({ ok: true, detail: 'partitions=3 brokers_in_replicas=3' })
      expect(r.checks.get('group_commit'), r.output).toMatchObject({ ok: true })
      // The versions Kafka 4.0 removed and Skein serves as Kafka 3.x did, converting formats: CreateTopics
      // v0, Produce v2 (a message format v1 set, up-converted) and Fetch v2 (down-converted to magic 1).
      expect(r.checks.get('create_topic'), r.output).toMatchObject({ ok: true, detail: 'created' })
      expect(r.checks.get('produce'), r.output).toMatchObject({ ok: true, detail: 'written=5 acks=all' })
      expect(r.checks.get('consume'), r.output).toMatchObject({ ok: true })
      expect(r.code, r.output).toBe(0)
      expect(new Set(recorded(CREATE_TOPICS, from))).toEqual(new Set([0]))
      expect(new Set(recorded(PRODUCE, from))).toEqual(new Set([2]))
      expect(new Set(recorded(FETCH, from))).toEqual(new Set([2]))
      expect(new Set(recorded(OFFSET_COMMIT, from))).toEqual(new Set([2]))
      // The commit is there for any other client: offset 1 on each partition.
      const committed = await admin.fetchOffsets({ groupId: group, topics: [topic] })
      expect(committed[0]!.partitions.map((p) => p.offset).sort()).toEqual(['1', '1', '1'])
      // The topic kafka-go created, with its 3 x 3 replicas.
      const created = await admin.fetchTopicMetadata({ topics: ['go-kafka-go-created'] })
      expect(created.topics[0]!.partitions.map((p) => p.replicas.length)).toEqual([3, 3, 3])
      // The 6 setup messages and kafka-go's 5; the consume check read partition 0 from its start, every
      // message once at consecutive offsets with its timestamp, kafka-go's own among them.
      const ends = await admin.fetchTopicOffsets(topic)
      expect(ends.reduce((n, p) => n + Number(p.high), 0)).toBe(11)
      const p0 = ends.find((p) => p.partition === 0)!
      const own = Number(p0.high) - 2
      expect(r.checks.get('consume')!.detail).toBe(`read=${p0.high} own=${own}`)
      // kafkajs reads kafka-go's messages (up-converted to record batches v2) with their keys.
      const values = await readAll(kafka, topic, 11)
      expect(values.filter((v) => v.startsWith('kafka-go-')).sort()).toEqual([0, 1, 2, 3, 4].map((i) => `kafka-go-${i}`))
    } finally {
      await producer.disconnect()
      await admin.disconnect()
    }
  })

  it('confluent-kafka-go 0.11.6 (librdkafka 2.0.2): metadata, CreateTopics, idempotent produce, a group that commits', async () => {
    const confluent = await buildProgram('confluent-kafka-go')
    const r = await runProgram(confluent.path, ['-brokers', bootstrap, '-topic', 'go-confluent', '-group', 'go-confluent-group', '-messages', '30'])
    for (const name of ['metadata', 'create_topic', 'produce_idempotent', 'group_commit']) {
      expect(r.checks.get(name), `${name}\n${r.output}`).toMatchObject({ ok: true })
    }
    expect(r.checks.get('group_commit')!.detail).toBe('read=30 missing=0 committed_total=30')
    expect(r.code, r.output).toBe(0)
  })

  it('Burrow 1.2.1: runs against the cluster, reads the brokers\' offsets (ListOffsets v0) and the group\'s commits, and reports its lag', async () => {
    requireBurrow()
    const topic = 'go-burrow'
    const group = 'go-burrow-group'
    const kafka = kafkajs()
    const admin = kafka.admin()
    await admin.connect()
    const producer = kafka.producer()
    await producer.connect()
    const dir = mkdtempSync(join(tmpdir(), 'skein-burrow-'))
    let burrow: ChildProcess | undefined
    try {
      await admin.createTopics({ topics: [{ topic, numPartitions: 3, replicationFactor: 3 }], waitForLeaders: true })
      await producer.send({ topic, acks: -1, messages: Array.from({ length: 9 }, (_, i) => ({ partition: i % 3, value: `burrow-${i}` })) })
      // A group that committed 2 of the 3 messages of each partition: lag 1 per partition, were it seen.
      await admin.setOffsets({ groupId: group, topic, partitions: [0, 1, 2].map((partition) => ({ partition, offset: '2' })) })

      const httpPort = await freePort()
      const servers = bootstrap.split(',').map((s) => `"${s}"`).join(', ')
      writeFileSync(join(dir, 'burrow.toml'), [
        '[general]', `pidfile="${join(dir, 'burrow.pid')}"`,
        '[logging]', 'level="info"',
        // Burrow keeps its own locks in ZooKeeper: the cluster's, under a root of its own.
        '[zookeeper]', `servers=[ "${cluster.zookeeper.connectString}" ]`, 'timeout=6', `root-path="/burrow-${process.pid}"`,
        // The newest broker version Burrow's sarama knows below 2.2: its consumer fetches __consumer_offsets with Fetch v4.
        '[client-profile.skein]', 'client-id="burrow-skein"', 'kafka-version="2.1.0"',
        '[cluster.skein]', 'class-name="kafka"', `servers=[ ${servers} ]`, 'client-profile="skein"', 'topic-refresh=2', 'offset-refresh=1',
        '[consumer.skein]', 'class-name="kafka"', 'cluster="skein"', `servers=[ ${servers} ]`, 'client-profile="skein"', 'offsets-topic="__consumer_offsets"',
        '[httpserver.default]', `address="127.0.0.1:${httpPort}"`,
        '[storage.default]', 'class-name="inmemory"', 'workers=4', 'intervals=10', 'expire-group=604800', 'min-distance=1',
        '[evaluator.default]', 'class-name="caching"', 'expire-cache=1',
        '',
      ].join('\n'))
      const from = mark()
      let log = ''
      burrow = spawn(BURROW, ['-config-dir', dir], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] })
      burrow.stdout!.on('data', (d: Buffer) => (log += d.toString()))
      burrow.stderr!.on('data', (d: Buffer) => (log += d.toString()))
      const get = async (path: string): Promise<Record<string, unknown>> => {
        const res = await fetch(`http://127.0.0.1:${httpPort}${path}`)
        return (await res.json()) as Record<string, unknown>
      }
      // Its broker offsets: ListOffsets v0 to each leader (served as Kafka 3.x serves it; Kafka 4.0 removed
      // it and closes the connection, so Burrow reports nothing against Kafka 4). Its consumer module's
      // sarama client finds where to start in __consumer_offsets with v1: both versions are on the wire.
      await waitFor(() => new Set(recorded(LIST_OFFSETS, from)).size === 2, 60_000, () => `Burrow sent ListOffsets ${JSON.stringify([...new Set(recorded(LIST_OFFSETS, from))])}, not v0 and v1:\n${log.slice(-4000)}`)
      expect(log).not.toMatch(/failed to fetch offsets from broker/)
      // The topic is listed with its log-end offsets (3 records per partition).
      await waitFor(async () => ((await get('/v3/kafka/skein/topic')).topics as string[] | undefined)?.includes(topic) === true, 60_000, () => `Burrow never listed ${topic}:\n${log.slice(-4000)}`)
      expect((await get(`/v3/kafka/skein/topic/${topic}`)).offsets).toEqual([3, 3, 3])
      // The group's committed offsets, read from __consumer_offsets (Fetch v4), against those: lag 1 per partition.
      expect(recorded(FETCH, from)).toContain(4)
      let lag: Record<string, unknown> = {}
      await waitFor(async () => {
        lag = await get(`/v3/kafka/skein/consumer/${group}/lag`)
        return (lag.status as { totallag?: number } | undefined)?.totallag === 3
      }, 60_000, () => `Burrow's lag for ${group}: ${JSON.stringify(lag)}\n${log.slice(-4000)}`)
      const status = lag.status as { partition_count: number; partitions: { topic: string; partition: number; current_lag: number }[] }
      expect(status.partition_count).toBe(3)
      expect(status.partitions.map((p) => [p.topic, p.partition, p.current_lag]).sort()).toEqual([[topic, 0, 1], [topic, 1, 1], [topic, 2, 1]])
      expect((await get('/v3/kafka/skein/consumer')).consumers).toContain(group)
      // Burrow was alive throughout: the answers came from it, not from an error page.
      expect(burrow.exitCode, log.slice(-4000)).toBeNull()
    } finally {
      if (burrow?.pid !== undefined && burrow.exitCode === null) {
        const exited = new Promise((r) => burrow!.once('exit', r))
        process.kill(burrow.pid, 'SIGTERM')
        await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))])
        if (burrow.exitCode === null) process.kill(burrow.pid, 'SIGKILL')
      }
      rmSync(dir, { recursive: true, force: true })
      await producer.disconnect()
      await admin.disconnect()
    }
  })
})
