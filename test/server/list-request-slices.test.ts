// List-taking requests at request.max.list.elements are answered in slices of main-thread time (issue 30):
// while one client's OffsetForLeaderEpoch, DescribeGroups, ConsumerGroupDescribe, FindCoordinator,
// DescribeTransactions or DeleteGroups names ~100,000 items, another client's ApiVersions and Metadata keep
// answering; and a large request whose client hangs up is abandoned rather than finished for nobody.
// Against a broker process, so the probe's timing is the broker's alone.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ErrorCode } from '../../src/domain/errors.js'
import * as FindCoordinator from '../../src/protocol/messages/10-find-coordinator.gen.js'
import * as DescribeGroups from '../../src/protocol/messages/15-describe-groups.gen.js'
import * as OffsetForLeaderEpoch from '../../src/protocol/messages/23-offset-for-leader-epoch.gen.js'
import * as DeleteGroups from '../../src/protocol/messages/42-delete-groups.gen.js'
import * as DescribeTransactions from '../../src/protocol/messages/65-describe-transactions.gen.js'
import * as ConsumerGroupDescribe from '../../src/protocol/messages/69-consumer-group-describe.gen.js'
import { readResponseHeader } from '../../src/protocol/header.js'
import { Reader } from '../../src/protocol/primitives/reader.js'
import type { Writer } from '../../src/protocol/primitives/writer.js'
import { RawClient, startBrokerProcess, type BrokerProcess } from '../harness/index.js'

/** One request less than the limit's elements, so that the request's other list (one topic) fits too. */
const COUNT = 99_999
/**
 * The other client's slowest ApiVersions + Metadata round trip may take this long. Before these requests
 * were sliced each held the broker in one piece for 1.5 to 8 s on the shared development machine
 * (FindCoordinator of 100,000 keys, DescribeGroups and ConsumerGroupDescribe compared their id lists with
 * themselves). Decoding the request and encoding the answer still run in one piece each, 20 to 400 ms for
 * 100,000 elements depending on the machine's load and whether the codec is warm, hence the margin.
 */
const PROBE_BOUND_MS = 1_500

/** ApiVersions and Metadata round trips on their own connection until stopped; the slowest pair's time. */
function probeLatency(host: string, port: number): { stop(): Promise<{ maxMs: number; rounds: number }> } {
  let stopped = false
  let maxMs = 0
  let rounds = 0
  const running = (async () => {
    const c = await RawClient.connect(host, port, 60_000)
    try {
      while (!stopped) {
        const started = performance.now()
        expect((await c.apiVersions()).errorCode).toBe(ErrorCode.NONE)
        expect((await c.metadata(['sliced'])).topics[0]!.errorCode).toBe(ErrorCode.NONE)
        maxMs = Math.max(maxMs, performance.now() - started)
        rounds++
        await new Promise((r) => setTimeout(r, 5))
      }
    } finally {
      c.close()
    }
  })()
  return {
    async stop() {
      stopped = true
      await running
      return { maxMs, rounds }
    },
  }
}

const ids = (prefix: string): string[] => Array.from({ length: COUNT }, (_, i) => `${prefix}-${i}`)

describe('list-taking requests at the limit are answered in slices', () => {
  let broker: BrokerProcess
  let client: RawClient

  beforeAll(async () => {
    broker = await startBrokerProcess()
    client = await RawClient.connect(broker.host, broker.port, 30_000)
    expect((await client.createTopic('sliced', 2)).errorCode).toBe(ErrorCode.NONE)
    // The group and transaction coordinators' topics exist before the timed requests.
    const find = (keyType: number): FindCoordinator.FindCoordinatorRequest => FindCoordinator.createFindCoordinatorRequest({ keyType, coordinatorKeys: ['warm-up'] })
    for (const keyType of [0, 1]) await client.call(10, 4, (w) => FindCoordinator.encodeFindCoordinatorRequest(w, find(keyType), 4), FindCoordinator.decodeFindCoordinatorResponse, 30_000)
    await client.metadata(['sliced'])
  }, 90_000)

  afterAll(async () => {
    client?.close()
    await broker?.kill('SIGTERM')
  })

  /** Sends one large request (built before the probe starts) and answers its response body's reader and the probe's figures. */
  async function whileProbed(apiKey: number, version: number, writeBody: (w: Writer) => void): Promise<{ body: Reader; maxMs: number; rounds: number }> {
    const { correlationId, bytes } = client.frame(apiKey, version, writeBody)
    const probe = probeLatency(broker.host, broker.port)
    await new Promise((r) => setTimeout(r, 100))
    const answer = client.waitFor(correlationId, 120_000)
    await client.write(bytes)
    const frame = await answer
    const { maxMs, rounds } = await probe.stop()
    const body = new Reader(frame)
    readResponseHeader(body, apiKey, version)
    return { body, maxMs, rounds }
  }

  it('OffsetForLeaderEpoch v4 naming 99,999 partitions (mostly unknown)', async () => {
    const req = OffsetForLeaderEpoch.createOffsetForLeaderEpochRequest({
      replicaId: -1,
      topics: [OffsetForLeaderEpoch.createOffsetForLeaderTopic({ topic: 'sliced', partitions: Array.from({ length: COUNT }, (_, partition) => OffsetForLeaderEpoch.createOffsetForLeaderPartition({ partition, currentLeaderEpoch: -1, leaderEpoch: 0 })) })],
    })
    const { body, maxMs, rounds } = await whileProbed(23, 4, (w) => OffsetForLeaderEpoch.encodeOffsetForLeaderEpochRequest(w, req, 4))
    console.log(`${COUNT}-partition OffsetForLeaderEpoch: other client's slowest ApiVersions+Metadata ${maxMs.toFixed(1)} ms over ${rounds} rounds`)
    const partitions = OffsetForLeaderEpoch.decodeOffsetForLeaderEpochResponse(body, 4).topics[0]!.partitions
    expect(partitions.length).toBe(COUNT)
    expect(partitions.slice(0, 3).map((p) => [p.partition, p.errorCode, p.endOffset])).toEqual([[0, 0, 0n], [1, 0, 0n], [2, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1n]])
    expect(partitions[COUNT - 1]!.partition).toBe(COUNT - 1)
    expect(maxMs).toBeLessThan(PROBE_BOUND_MS)
  }, 180_000)

  it('DescribeGroups v5 naming 99,999 distinct groups, answered in the request\'s order', async () => {
    const groups = ids('described')
    const req = DescribeGroups.createDescribeGroupsRequest({ groups, includeAuthorizedOperations: true })
    const { body, maxMs, rounds } = await whileProbed(15, 5, (w) => DescribeGroups.encodeDescribeGroupsRequest(w, req, 5))
    console.log(`${COUNT}-group DescribeGroups: other client's slowest ApiVersions+Metadata ${maxMs.toFixed(1)} ms over ${rounds} rounds`)
    const described = DescribeGroups.decodeDescribeGroupsResponse(body, 5).groups
    expect(described.map((g) => g.groupId)).toEqual(groups)
    // A group nobody has joined is Dead, without an error (Kafka before DescribeGroups v6).
    expect(new Set(described.map((g) => `${g.errorCode} ${g.groupState}`))).toEqual(new Set(['0 Dead']))
    expect(maxMs).toBeLessThan(PROBE_BOUND_MS)
  }, 180_000)

  it('ConsumerGroupDescribe v0 naming 99,999 distinct groups', async () => {
    const groupIds = ids('consumer')
    const req = ConsumerGroupDescribe.createConsumerGroupDescribeRequest({ groupIds })
    const { body, maxMs, rounds } = await whileProbed(69, 0, (w) => ConsumerGroupDescribe.encodeConsumerGroupDescribeRequest(w, req, 0))
    console.log(`${COUNT}-group ConsumerGroupDescribe: other client's slowest ApiVersions+Metadata ${maxMs.toFixed(1)} ms over ${rounds} rounds`)
    const described = ConsumerGroupDescribe.decodeConsumerGroupDescribeResponse(body, 0).groups
    expect(described.map((g) => g.groupId)).toEqual(groupIds)
    expect(new Set(described.map((g) => g.errorCode))).toEqual(new Set([ErrorCode.GROUP_ID_NOT_FOUND]))
    expect(maxMs).toBeLessThan(PROBE_BOUND_MS)
  }, 180_000)

  it('FindCoordinator v4 naming 99,999 keys', async () => {
    const coordinatorKeys = ids('key')
    const req = FindCoordinator.createFindCoordinatorRequest({ keyType: 0, coordinatorKeys })
    const { body, maxMs, rounds } = await whileProbed(10, 4, (w) => FindCoordinator.encodeFindCoordinatorRequest(w, req, 4))
    console.log(`${COUNT}-key FindCoordinator: other client's slowest ApiVersions+Metadata ${maxMs.toFixed(1)} ms over ${rounds} rounds`)
    const coordinators = FindCoordinator.decodeFindCoordinatorResponse(body, 4).coordinators
    expect(coordinators.map((c) => c.key)).toEqual(coordinatorKeys)
    expect(new Set(coordinators.map((c) => `${c.errorCode} ${c.port}`))).toEqual(new Set([`0 ${broker.port}`]))
    expect(maxMs).toBeLessThan(PROBE_BOUND_MS)
  }, 180_000)

  it('DescribeTransactions v0 naming 99,999 transactional ids', async () => {
    const transactionalIds = ids('txn')
    const req = DescribeTransactions.createDescribeTransactionsRequest({ transactionalIds })
    const { body, maxMs, rounds } = await whileProbed(65, 0, (w) => DescribeTransactions.encodeDescribeTransactionsRequest(w, req, 0))
    console.log(`${COUNT}-id DescribeTransactions: other client's slowest ApiVersions+Metadata ${maxMs.toFixed(1)} ms over ${rounds} rounds`)
    const states = DescribeTransactions.decodeDescribeTransactionsResponse(body, 0).transactionStates
    expect(states.map((s) => s.transactionalId)).toEqual(transactionalIds)
    expect(new Set(states.map((s) => s.errorCode))).toEqual(new Set([ErrorCode.TRANSACTIONAL_ID_NOT_FOUND]))
    expect(maxMs).toBeLessThan(PROBE_BOUND_MS)
  }, 180_000)

  it('DeleteGroups v2 naming 99,999 groups, each answered in the request\'s order', async () => {
    const groupsNames = ids('deleted')
    const req = DeleteGroups.createDeleteGroupsRequest({ groupsNames })
    const { body, maxMs, rounds } = await whileProbed(42, 2, (w) => DeleteGroups.encodeDeleteGroupsRequest(w, req, 2))
    console.log(`${COUNT}-group DeleteGroups: other client's slowest ApiVersions+Metadata ${maxMs.toFixed(1)} ms over ${rounds} rounds`)
    const results = DeleteGroups.decodeDeleteGroupsResponse(body, 2).results
    expect(results.map((r) => r.groupId)).toEqual(groupsNames)
    expect(new Set(results.map((r) => r.errorCode))).toEqual(new Set([ErrorCode.GROUP_ID_NOT_FOUND]))
    expect(maxMs).toBeLessThan(PROBE_BOUND_MS)
  }, 180_000)

  it('abandons a large request whose client hangs up, and goes on serving', async () => {
    const req = DescribeGroups.createDescribeGroupsRequest({ groups: ids('abandoned') })
    const hostile = await RawClient.connect(broker.host, broker.port, 30_000)
    const { bytes } = hostile.frame(15, 5, (w) => DescribeGroups.encodeDescribeGroupsRequest(w, req, 5))
    await hostile.write(bytes)
    // Long enough for the broker to have begun; far too short to have answered 99,999 groups.
    await new Promise((r) => setTimeout(r, 30))
    hostile.close()
    const deadline = Date.now() + 30_000
    while (!/abandoned: nobody waits for the answer/.test(broker.output()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
    expect(broker.output()).toMatch(/abandoned: nobody waits for the answer/)
    expect((await client.apiVersions()).errorCode).toBe(ErrorCode.NONE)
  }, 60_000)
})
