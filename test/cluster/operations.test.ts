// Cluster operations in a real cluster (a ZooKeeper and three Skein broker processes, min.insync.replicas=2,
// auto.leader.rebalance.enable with a 2 s check), with kafkajs writing acks=all all along:
// - ElectLeaders and the reassignment APIs answer Kafka's errors (NOT_CONTROLLER off the controller,
//   ELECTION_NOT_NEEDED, UNKNOWN_TOPIC_OR_PARTITION, INVALID_REPLICA_ASSIGNMENT, NO_REASSIGNMENT_IN_PROGRESS),
//   through the raw protocol, kafkajs's admin and `skein leader-election`.
// - `skein reassign-partitions` moves a partition with data from brokers [1,2] to [2,3] under produce load:
//   nothing acknowledged is lost or duplicated, the topic znode ends with [2,3] and no adding/removing
//   replicas, the two replicas' logs are identical and broker 1's copy is deleted.
// - SIGTERM of a leader (controlled shutdown) under acks=all load and a consumer: only retriable errors,
//   its leaderships move in one election each before it exits, the longest gap between acknowledgements is
//   printed (held under 1 s in test:cluster-ops only: npm test asserts no time); while it is down a topic is
//   deleted, partitions are added and a topic config changes, and PREFERRED elections of its partitions
//   answer PREFERRED_LEADER_NOT_AVAILABLE; when it returns all three reach it, and the auto rebalance gives
//   it its preferred leaderships back (that gap is printed too).
// - leader.replication.throttled.rate (set with kafkajs's admin): a replica added to a partition whose
//   leader is over its throttle gets no more than the first fetch's worth and the reassignment waits; once
//   the rate is removed it catches up and the replicas are identical (npm run test:cluster-ops times it).
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Kafka, logLevel } from 'kafkajs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ZooKeeperClient } from '../../src/cluster/zookeeper/index.js'
import { ErrorCode } from '../../src/domain/errors.js'
import * as CreateTopics from '../../src/protocol/messages/19-create-topics.gen.js'
import * as DescribeConfigs from '../../src/protocol/messages/32-describe-configs.gen.js'
import * as ElectLeaders from '../../src/protocol/messages/43-elect-leaders.gen.js'
import * as AlterPartitionReassignments from '../../src/protocol/messages/45-alter-partition-reassignments.gen.js'
import { batchOf, hasPythonModule, startCluster, zookeeperMissing, type RawClient, type TestCluster } from '../harness/index.js'
import { skein } from '../cli/helpers.js'
import { AckedLoad, agreed, brokerLinesSince, expectIdenticalLogs, LibrdkafkaLoad, logBytes, readAll, replicaTails, until } from './ops-helpers.js'

const MISSING = zookeeperMissing()
/**
 * The failure detectors are set above the stalls of a loaded machine: ZooKeeper's session (10 s, the most
 * the test ZooKeeper's tickTime of 500 ms allows) and the controller's fencing of a silent broker
 * (broker.session.timeout.ms at Kafka's default, 9 s; Skein ships 2 s). The controlled-shutdown case
 * asserts that each leadership moves in exactly one election and that the partitions the stopped broker
 * only followed keep their leader and leader epoch. With 2 s, a broker whose process is held for over 2 s
 * (npm test runs two files at a time on two cores, at load averages up to 25) is fenced by the controller,
 * as it should be (Kafka's controller fences a broker whose heartbeats stop): its leaderships move at a new
 * leader epoch and the case waited 40 s for views that could no longer match ("the ISRs without the stopped
 * broker, leaders and epochs kept"). A broker held with SIGSTOP for 2.6 s just before the SIGTERM is
 * fenced and fails the case that way; with these settings it passes (so does a 5 s hold, over the old 4 s
 * ZooKeeper session). No case here waits for a session to expire or for a silent broker to be fenced: a
 * stopped broker's session is closed at once, and a closed port is fenced at once whatever the timeout.
 */
const SESSION_TIMEOUT_MS = 10_000
const BROKER_SESSION_TIMEOUT_MS = 9000
/**
 * The longest gap in acknowledged writes allowed across a controlled shutdown and a preferred election:
 * `npm run test:cluster-ops` (a quiet machine) holds Kafka's promise, under 1 s. npm test shares a loaded
 * machine and asserts no time (how long a gap lasts there depends on the load); it checks
 * instead what keeps the gap short: the leaderships moved in one election each while the broker was still
 * up (its controlled shutdown reported none left), and the figure is printed either way.
 */
const MAX_GAP_MS = process.env.SKEIN_OPS_MAX_GAP_MS === undefined ? undefined : Number(process.env.SKEIN_OPS_MAX_GAP_MS)

async function createTopic(c: RawClient, name: string, opts: { partitions?: number; rf?: number; assignments?: number[][] }): Promise<number> {
  const topic = CreateTopics.createCreatableTopic({ name, numPartitions: opts.partitions ?? -1, replicationFactor: opts.rf ?? -1 })
  if (opts.assignments !== undefined) topic.assignments = opts.assignments.map((brokerIds, partitionIndex) => CreateTopics.createCreatableReplicaAssignment({ partitionIndex, brokerIds }))
  const req = CreateTopics.createCreateTopicsRequest({ timeoutMs: 30_000, topics: [topic] })
  const res = await c.call(19, 5, (w) => CreateTopics.encodeCreateTopicsRequest(w, req, 5), CreateTopics.decodeCreateTopicsResponse, 40_000)
  return res.topics[0]!.errorCode
}

describe.skipIf(MISSING !== undefined)('cluster operations: elections, reassignment, controlled shutdown', () => {
  let cluster: TestCluster
  let zk: ZooKeeperClient
  let kafka: Kafka
  const dir = mkdtempSync(join(tmpdir(), 'skein-ops-'))

  const controllerId = async (): Promise<number> => JSON.parse((await zk.getData('/controller')).data.toString()).brokerid as number
  const withClient = async <T>(id: number, fn: (c: RawClient) => Promise<T>): Promise<T> => {
    const c = await cluster.broker(id).client()
    try {
      return await fn(c)
    } finally {
      c.close()
    }
  }

  beforeAll(async () => {
    cluster = await startCluster({
      sessionTimeoutMs: SESSION_TIMEOUT_MS,
      overrides: [
        'min.insync.replicas=2', 'default.replication.factor=3', 'replica.fetch.backoff.ms=200',
        'offsets.topic.replication.factor=3', 'offsets.topic.num.partitions=3', 'group.initial.rebalance.delay.ms=0',
        'auto.leader.rebalance.enable=true', 'leader.imbalance.check.interval.seconds=2',
        `broker.session.timeout.ms=${BROKER_SESSION_TIMEOUT_MS}`,
      ],
    })
    zk = await ZooKeeperClient.connect(cluster.connect)
    kafka = new Kafka({ clientId: 'ops-test', brokers: cluster.brokers.map((b) => b.bootstrap), logLevel: logLevel.NOTHING })
  }, 120_000)

  afterAll(async () => {
    await zk?.close()
    await cluster?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it("answers ElectLeaders and reassignment requests with Kafka's errors", async () => {
    expect(await withClient(1, (c) => createTopic(c, 'elect', { partitions: 3, rf: 3 }))).toBe(ErrorCode.NONE)
    await agreed(cluster, 'elect', (ps) => ps.length === 3 && ps.every((p) => p.isr.length === 3 && p.leader === p.replicas[0]), 'elect with full ISRs')
    const controller = await controllerId()
    const other = [1, 2, 3].find((id) => id !== controller)!
    const elect = (id: number, type: number, partitions: ElectLeaders.TopicPartitions[] | null) =>
      withClient(id, (c) => {
        const req = ElectLeaders.createElectLeadersRequest({ electionType: type, topicPartitions: partitions })
        return c.call(43, 2, (w) => ElectLeaders.encodeElectLeadersRequest(w, req, 2), ElectLeaders.decodeElectLeadersResponse)
      })
    const notController = await elect(other, 0, [ElectLeaders.createTopicPartitions({ topic: 'elect', partitions: [0] })])
    expect(notController.errorCode).toBe(ErrorCode.NOT_CONTROLLER)
    const res = await elect(controller, 0, [ElectLeaders.createTopicPartitions({ topic: 'elect', partitions: [0, 1] }), ElectLeaders.createTopicPartitions({ topic: 'nope', partitions: [0] })])
    expect(res.errorCode).toBe(ErrorCode.NONE)
    const codes = Object.fromEntries(res.replicaElectionResults.flatMap((t) => t.partitionResult.map((p) => [`${t.topic}-${p.partitionId}`, p.errorCode])))
    expect(codes).toEqual({ 'elect-0': ErrorCode.ELECTION_NOT_NEEDED, 'elect-1': ErrorCode.ELECTION_NOT_NEEDED, 'nope-0': ErrorCode.UNKNOWN_TOPIC_OR_PARTITION })
    const unclean = await elect(controller, 1, [ElectLeaders.createTopicPartitions({ topic: 'elect', partitions: [2] })])
    expect(unclean.replicaElectionResults[0]!.partitionResult[0]!.errorCode).toBe(ErrorCode.ELECTION_NOT_NEEDED)

    // The tool, against any broker (it finds the controller).
    const all = await skein(['leader-election', '--bootstrap-server', cluster.broker(other).bootstrap, '--election-type', 'PREFERRED', '--all-topic-partitions'])
    expect(all.code, all.stderr.toString()).toBe(0)
    expect(all.out).toMatch(/^Valid replica already elected for partitions .*elect-0, elect-1, elect-2/m)
    const unknown = await skein(['leader-election', '--bootstrap-server', cluster.bootstrap(), '--election-type', 'UNCLEAN', '--topic', 'nope', '--partition', '3'])
    expect(unknown.code).toBe(1)
    expect(unknown.stderr.toString()).toContain('Error completing leader election (UNCLEAN) for partition: nope-3: UNKNOWN_TOPIC_OR_PARTITION')

    // --generate proposes Kafka's assignment over the broker list (nothing changes).
    const topicsFile = join(dir, 'topics.json')
    writeFileSync(topicsFile, JSON.stringify({ version: 1, topics: [{ topic: 'elect' }] }))
    const generated = await skein(['reassign-partitions', '--bootstrap-server', cluster.bootstrap(), '--generate', '--topics-to-move-json-file', topicsFile, '--broker-list', '1,2,3'])
    expect(generated.code, generated.stderr.toString()).toBe(0)
    const [, current, proposed] = generated.out.split(/Current partition replica assignment\n|\n\nProposed partition reassignment configuration\n/)
    expect(JSON.parse(current!).partitions).toHaveLength(3)
    const proposal = JSON.parse(proposed!) as { version: number; partitions: { topic: string; partition: number; replicas: number[] }[] }
    expect(proposal.version).toBe(1)
    expect(proposal.partitions.map((p) => [...p.replicas].sort())).toEqual([[1, 2, 3], [1, 2, 3], [1, 2, 3]])

    const alter = (partitions: AlterPartitionReassignments.ReassignablePartition[]) =>
      withClient(controller, (c) => {
        const req = AlterPartitionReassignments.createAlterPartitionReassignmentsRequest({ topics: [AlterPartitionReassignments.createReassignableTopic({ name: 'elect', partitions })] })
        return c.call(45, 0, (w) => AlterPartitionReassignments.encodeAlterPartitionReassignmentsRequest(w, req, 0), AlterPartitionReassignments.decodeAlterPartitionReassignmentsResponse)
      })
    const bad = await alter([
      AlterPartitionReassignments.createReassignablePartition({ partitionIndex: 0, replicas: [1, 9] }),
      AlterPartitionReassignments.createReassignablePartition({ partitionIndex: 1, replicas: [2, 2] }),
      AlterPartitionReassignments.createReassignablePartition({ partitionIndex: 2, replicas: null }),
      AlterPartitionReassignments.createReassignablePartition({ partitionIndex: 7, replicas: [1] }),
    ])
    expect(bad.responses[0]!.partitions.map((p) => p.errorCode)).toEqual([
      ErrorCode.INVALID_REPLICA_ASSIGNMENT, ErrorCode.INVALID_REPLICA_ASSIGNMENT, ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ])
    const admin = kafka.admin()
    await admin.connect()
    try {
      expect((await admin.listPartitionReassignments({})).topics).toEqual([])
    } finally {
      await admin.disconnect()
    }
  })

  it('moves a partition with data from brokers [1,2] to [2,3] under acks=all load (skein reassign-partitions)', async () => {
    expect(await withClient(1, (c) => createTopic(c, 'moving', { assignments: [[1, 2]] }))).toBe(ErrorCode.NONE)
    await agreed(cluster, 'moving', (ps) => ps.length === 1 && ps[0]!.isr.length === 2, 'moving with a full ISR')
    const load = new AckedLoad(cluster.brokers.map((b) => b.bootstrap), 'moving', [0], 5)
    await load.start()
    try {
      await load.progress(200)
      const plan = join(dir, 'moving.json')
      writeFileSync(plan, JSON.stringify({ version: 1, partitions: [{ topic: 'moving', partition: 0, replicas: [2, 3] }] }))
      const started = Date.now()
      const exec = await skein(['reassign-partitions', '--bootstrap-server', cluster.bootstrap(), '--execute', '--reassignment-json-file', plan])
      expect(exec.code, exec.stderr.toString()).toBe(0)
      expect(exec.out).toContain('{"version":1,"partitions":[{"topic":"moving","partition":0,"replicas":[1,2],"log_dirs":["any","any"]}]}')
      expect(exec.out).toContain('Successfully started partition reassignment for moving-0')
      await until('the reassignment to complete', async () => {
        const v = await skein(['reassign-partitions', '--bootstrap-server', cluster.bootstrap(), '--verify', '--reassignment-json-file', plan])
        return v.out.includes('Reassignment of partition moving-0 is completed.') ? v.out : undefined
      })
      const tookMs = Date.now() - started
      await load.progress(200)
      const gap = load.longestGap(started, Date.now())
      console.log(`[ops] reassignment of moving-0 [1,2] -> [2,3] under load: ${tookMs} ms; longest gap between acknowledged writes ${gap.gapMs} ms`)
    } finally {
      await load.stop()
    }
    expect(load.errors).toEqual([])
    const [view] = await agreed(cluster, 'moving', (ps) => ps[0]!.isr.length === 2 && ps[0]!.replicas.length === 2, 'moving on [2,3]')
    expect(view!.replicas).toEqual([2, 3])
    expect(view!.isr).toEqual([2, 3])
    const znode = JSON.parse((await zk.getData('/brokers/topics/moving')).data.toString())
    expect(znode).toMatchObject({ partitions: { '0': [2, 3] }, adding_replicas: {}, removing_replicas: {} })
    // Nothing acknowledged lost or doubled; both replicas hold the same bytes; broker 1's copy is gone.
    const values = (await readAll(cluster.broker(view!.leader), 'moving', 0)).map((r) => r.value)
    expect(values).toEqual(load.acked.get(0)!.map((a) => a.value))
    await expectIdenticalLogs(cluster, 'moving', 0, [2, 3])
    await until("broker 1's replica of moving-0 to be deleted", async () => (readdirSync(cluster.broker(1).dataDir).some((f) => f.startsWith('moving-0')) ? undefined : true))
  }, 120_000)

  it('moves leaderships off a SIGTERMed broker under load (gap measured), completes what changed while it was down, and gives its leaderships back', async () => {
    await withClient(1, async (c) => {
      expect(await createTopic(c, 'steady', { partitions: 3, rf: 3 })).toBe(ErrorCode.NONE)
      expect(await createTopic(c, 'doomed', { partitions: 2, rf: 3 })).toBe(ErrorCode.NONE)
      expect(await createTopic(c, 'grow', { partitions: 1, rf: 2 })).toBe(ErrorCode.NONE)
    })
    const before = await agreed(cluster, 'steady', (ps) => ps.length === 3 && ps.every((p) => p.isr.length === 3 && p.leader === p.replicas[0]), 'steady balanced with full ISRs')
    const controller = await controllerId()
    const victim = before.find((p) => p.leader !== controller)!.leader
    const victimBroker = cluster.broker(victim)

    // librdkafka writes (kafkajs stalls for seconds when a broker closes a connection with its metadata
    // request in flight, whatever the broker does, so it would measure itself).
    const load = hasPythonModule('confluent_kafka')
      ? new LibrdkafkaLoad(cluster.bootstrap(), 'steady', [0, 1, 2], 10)
      : new AckedLoad(cluster.brokers.map((b) => b.bootstrap), 'steady', [0, 1, 2], 10)
    const consumed = new Set<string>()
    const consumer = kafka.consumer({ groupId: 'ops-steady', maxWaitTimeInMs: 500, retry: { retries: 30, initialRetryTime: 100, maxRetryTime: 1000 } })
    await consumer.connect()
    await consumer.subscribe({ topic: 'steady', fromBeginning: true })
    await consumer.run({ eachMessage: async ({ message }) => void consumed.add(message.value!.toString()) })
    await load.start()
    // A wait for progress that fails prints the end of every replica of steady and what the brokers logged
    // since `since` (a load that stalls or fails must say where).
    const progress = async (n: number, since: number): Promise<void> => {
      try {
        await load.progress(n)
      } catch (err) {
        console.log(`[ops] ${(err as Error).message}\n${[0, 1, 2].map((p) => replicaTails(cluster, 'steady', p)).join('\n')}\n${brokerLinesSince(cluster, since)}`)
        throw err
      }
    }
    let shutdownGap: { partition: number; gapMs: number }
    let rebalanceGap: { partition: number; gapMs: number }
    const admin = kafka.admin({ retry: { retries: 20, initialRetryTime: 200 } })
    await admin.connect()
    try {
      await progress(300, Date.now())
      const sigterm = Date.now()
      await victimBroker.stop()
      const stoppedIn = Date.now() - sigterm
      expect(victimBroker.output()).toMatch(/"msg":"controlled shutdown succeeded"/)
      // Where it only followed, it left the ISR under the same leader and leader epoch (KAFKA-15021): the
      // leader and the other follower changed the ISR in place, no fetch was fenced.
      const followed = before.filter((p) => p.leader !== victim)
      const led = before.filter((p) => p.leader === victim)
      let afterShutdown: Awaited<ReturnType<typeof agreed>>
      try {
        afterShutdown = await agreed(
          cluster, 'steady',
          (ps) => followed.every((f) => ps[f.partition]!.leader === f.leader && ps[f.partition]!.epoch === f.epoch && !ps[f.partition]!.isr.includes(victim)) && led.every((l) => ps[l.partition]!.leader >= 0 && ps[l.partition]!.leader !== victim),
          'the ISRs without the stopped broker, leaders and epochs kept; new leaders where it led',
        )
      } catch (err) {
        console.log(`[ops] ${(err as Error).message}\nbefore the SIGTERM: ${JSON.stringify(before)}\n${brokerLinesSince(cluster, sigterm - 500)}`)
        throw err
      }
      // Where it led, the leadership moved once, at its controlled shutdown (the next leader epoch), and
      // not again when its registration went: nothing waited for the broker's loss to be noticed.
      expect(led.length).toBeGreaterThan(0)
      for (const l of led) expect(afterShutdown[l.partition]!.epoch, `steady-${l.partition}`).toBe(l.epoch + 1)
      await progress(200, sigterm)
      shutdownGap = load.longestGap(sigterm, Date.now())
      // SKEIN_OPS_DEBUG=1: the brokers' log lines of the window, to see where a long gap went.
      if (process.env.SKEIN_OPS_DEBUG !== undefined) {
        for (const b of cluster.brokers) {
          const lines = b.output().split('\n').map((l) => ({ t: Date.parse(/"time":"([^"]+)"/.exec(l)?.[1] ?? ''), l })).filter((x) => x.t >= sigterm - 200 && x.t <= sigterm + 4000)
          console.log(`--- broker ${b.id}\n${lines.map((x) => `${x.t - sigterm} ${x.l.slice(0, 300)}`).join('\n')}`)
        }
      }
      console.log(`[ops] controlled shutdown of broker ${victim} (stopped in ${stoppedIn} ms): longest gap between acknowledged writes ${shutdownGap.gapMs} ms (partition ${shutdownGap.partition})`)

      // While it is down: a deletion, new partitions, a config change; its preferred partitions cannot elect it.
      await admin.deleteTopics({ topics: ['doomed'] })
      await admin.createPartitions({ topicPartitions: [{ topic: 'grow', count: 3 }] })
      await admin.alterConfigs({ validateOnly: false, resources: [{ type: 2, name: 'grow', configEntries: [{ name: 'retention.ms', value: '7654321' }] }] })
      const json = join(dir, 'preferred.json')
      const preferredByVictim = before.filter((p) => p.replicas[0] === victim).map((p) => ({ topic: 'steady', partition: p.partition }))
      writeFileSync(json, JSON.stringify({ partitions: preferredByVictim }))
      const election = await skein(['leader-election', '--bootstrap-server', cluster.bootstrap(), '--election-type', 'PREFERRED', '--path-to-json-file', json])
      expect(election.code).toBe(1)
      expect(election.stderr.toString()).toContain(`Error completing leader election (PREFERRED) for partition: steady-${preferredByVictim[0]!.partition}: PREFERRED_LEADER_NOT_AVAILABLE`)
      expect(readdirSync(victimBroker.dataDir).some((f) => /^doomed-\d$/.test(f))).toBe(true)

      await victimBroker.start()
      const back = Date.now()
      await agreed(cluster, 'steady', (ps) => ps.every((p) => p.isr.length === 3 && p.leader === p.replicas[0]), 'the auto rebalance to give the preferred leaderships back', 30_000)
      const balanced = Date.now()
      await progress(200, back)
      rebalanceGap = load.longestGap(back, Date.now())
      console.log(`[ops] broker ${victim} back: preferred leaderships restored ${balanced - back} ms after its start; longest gap between acknowledged writes ${rebalanceGap.gapMs} ms (partition ${rebalanceGap.partition})`)
    } finally {
      await admin.disconnect()
      await load.stop()
    }
    expect(load.errors.filter((e) => !e.retriable)).toEqual([])
    if (MAX_GAP_MS !== undefined) {
      expect(shutdownGap.gapMs).toBeLessThan(MAX_GAP_MS)
      expect(rebalanceGap.gapMs).toBeLessThan(MAX_GAP_MS)
    }
    // Nothing acknowledged is lost: the leaders hold it, the consumer read it.
    const views = await agreed(cluster, 'steady', (ps) => ps.every((p) => p.isr.length === 3), 'steady with full ISRs')
    for (const v of views) {
      const values = new Set((await readAll(cluster.broker(v.leader), 'steady', v.partition)).map((r) => r.value))
      for (const a of load.acked.get(v.partition)!) expect(values.has(a.value), a.value).toBe(true)
    }
    const acked = [...load.acked.values()].flat().map((a) => a.value)
    await until('the consumer to read every acknowledged write', async () => (acked.every((v) => consumed.has(v)) ? true : undefined), 60_000)
    await consumer.disconnect()

    // What changed while it was down reached it.
    await until('the deletion of doomed to complete', async () => ((await zk.exists('/brokers/topics/doomed')) === null && (await zk.exists('/admin/delete_topics/doomed')) === null ? true : undefined))
    await until(`doomed's replicas on broker ${victim} to be deleted`, async () => (readdirSync(victimBroker.dataDir).some((f) => /^doomed-\d$/.test(f)) ? undefined : true))
    await agreed(cluster, 'grow', (ps) => ps.length === 3 && ps.every((p) => p.leader >= 0), `broker ${victim} to see grow's three partitions`)
    const retention = await withClient(victim, async (c) => {
      const req = DescribeConfigs.createDescribeConfigsRequest({ resources: [DescribeConfigs.createDescribeConfigsResource({ resourceType: 2, resourceName: 'grow', configurationKeys: ['retention.ms'] })] })
      const res = await c.call(32, 1, (w) => DescribeConfigs.encodeDescribeConfigsRequest(w, req, 1), DescribeConfigs.decodeDescribeConfigsResponse)
      return res.results[0]!.configs.find((x) => x.name === 'retention.ms')?.value
    })
    expect(retention).toBe('7654321')
  }, 180_000)

  it("holds a new replica back while its leader's replication throttle is exceeded, and lets it catch up once removed", async () => {
    expect(await withClient(1, (c) => createTopic(c, 'held', { assignments: [[1, 2]] }))).toBe(ErrorCode.NONE)
    await agreed(cluster, 'held', (ps) => ps[0]?.isr.length === 2 && ps[0]!.leader === 1, 'held led by 1 with a full ISR')
    await withClient(1, async (c) => {
      for (let b = 0; b < 30; b++) {
        const batch = batchOf(Array.from({ length: 100 }, (_, i) => ({ key: null, value: Buffer.alloc(1000, `${b}-${i}`) })))
        expect((await c.produce('held', 0, batch, -1)).errorCode).toBe(ErrorCode.NONE)
      }
    })
    const admin = kafka.admin()
    await admin.connect()
    const configs = (type: number, name: string, entries: Record<string, string>) =>
      admin.alterConfigs({ validateOnly: false, resources: [{ type, name, configEntries: Object.entries(entries).map(([n, value]) => ({ name: n, value })) }] })
    try {
      // 1 B/s: the new replica's first fetch passes (nothing measured yet), then the rate stays over it.
      await configs(4, '1', { 'leader.replication.throttled.rate': '1' })
      await configs(2, 'held', { 'leader.replication.throttled.replicas': '*' })
      await admin.alterPartitionReassignments({ topics: [{ topic: 'held', partitionAssignment: [{ partition: 0, replicas: [1, 2, 3] }] }] })
      await new Promise((r) => setTimeout(r, 2000))
      expect((await admin.listPartitionReassignments({})).topics).toHaveLength(1)
      const [midway] = await agreed(cluster, 'held', (ps) => ps[0]!.replicas.length === 3, 'held with broker 3 added')
      expect(midway!.isr).not.toContain(3)
      // At most one fetch's worth: replica.fetch.max.bytes (1 MiB) plus the batch that crosses it.
      const copied = logBytes(cluster.broker(3), 'held', 0).length
      expect(copied).toBeLessThanOrEqual((1 << 20) + 110_000)
      expect(logBytes(cluster.broker(1), 'held', 0).length).toBeGreaterThan(3_000_000)
      await configs(4, '1', {})
      await agreed(cluster, 'held', (ps) => ps[0]!.isr.length === 3 && ps[0]!.replicas.length === 3, 'held on [1,2,3] with a full ISR')
      expect((await admin.listPartitionReassignments({})).topics).toEqual([])
      await configs(2, 'held', {})
    } finally {
      await admin.disconnect()
    }
    await expectIdenticalLogs(cluster, 'held', 0, [1, 2, 3])
  }, 60_000)
})
