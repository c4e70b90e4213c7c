// Durable share-partition state (KIP-932) on one broker: a share group consumes with raw ShareFetch /
// ShareAcknowledge, accepts, rejects and releases some records and holds others; the broker process is
// SIGKILLed and started again on its data dir. The share-partition is then read back from the share
// coordinator's __share_group_state: no accepted or rejected record is delivered again, every other one
// is, each with its delivery count counted on from before the crash. Also: the share state APIs (83-87)
// answer over the wire as the share-partition leader uses them, and FindCoordinator with key type SHARE.
import { rmSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ErrorCode } from '../../src/domain/errors.js'
import { shareStatePartition } from '../../src/coordinator/share/share-coordinator.js'
import * as FindCoordinator from '../../src/protocol/messages/10-find-coordinator.gen.js'
import * as ApiVersions from '../../src/protocol/messages/18-api-versions.gen.js'
import * as Read from '../../src/protocol/messages/84-read-share-group-state.gen.js'
import * as Write from '../../src/protocol/messages/85-write-share-group-state.gen.js'
import * as Summary from '../../src/protocol/messages/87-read-share-group-state-summary.gen.js'
import { RawClient, batchOf, startBrokerProcess, type BrokerProcess } from '../harness/index.js'
import { ACCEPT, REJECT, RELEASE, ShareSessionClient, acquiredOf, joinShareGroup, partitionOf } from './share-raw.js'

const TOPIC = 'durable-share'
const GROUP = 'durable-group'
const STATE_PARTITIONS = 5
const OVERRIDES = [
  `share.coordinator.state.topic.num.partitions=${STATE_PARTITIONS}`, 'share.coordinator.snapshot.update.records.per.snapshot=3',
  'share.coordinator.state.topic.prune.interval.ms=300',
]

let proc: BrokerProcess
let raw: RawClient

beforeAll(async () => {
  proc = await startBrokerProcess({ overrides: OVERRIDES })
  raw = await RawClient.connect(proc.host, proc.port)
}, 60_000)

afterAll(async () => {
  raw?.close()
  if (proc?.alive()) await proc.kill('SIGKILL')
  if (proc !== undefined) rmSync(proc.dataDir, { recursive: true, force: true })
})

async function readState(c: RawClient, topicId: string, leaderEpoch: number): Promise<Read.PartitionResult> {
  const req = Read.createReadShareGroupStateRequest({ groupId: GROUP, topics: [Read.createReadStateData({ topicId, partitions: [Read.createPartitionData({ partition: 0, leaderEpoch })] })] })
  const res = await c.call(84, 0, (w) => Read.encodeReadShareGroupStateRequest(w, req, 0), Read.decodeReadShareGroupStateResponse)
  return res.results[0]!.partitions[0]!
}

/** Fetches until the share-partition answers records (the coordinator may be loading after a restart). */
async function fetchUntilRecords(s: ShareSessionClient, timeoutMs = 40_000): Promise<Map<number, number>> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const res = await s.fetch({ maxWaitMs: 500 })
    const p = res.errorCode === 0 ? partitionOf(res) : undefined
    if (p !== undefined && p.errorCode === 0) {
      const got = acquiredOf(p)
      if (got.size > 0) return got
    }
    if (Date.now() > deadline) throw new Error(`no records within ${timeoutMs} ms: ${JSON.stringify({ error: res.errorCode, partition: p?.errorCode })}\n${proc.output().slice(-3000)}`)
    if (res.errorCode !== 0) s.epoch = 0
  }
}

/** The first fetch, which makes the share-partition (retried while the new topic's partition is not served yet). */
async function initialize(s: ShareSessionClient): Promise<void> {
  const deadline = Date.now() + 20_000
  for (;;) {
    const code = partitionOf(await s.fetch({ maxWaitMs: 0, minBytes: 0 }))?.errorCode
    if (code === 0) return
    if (Date.now() > deadline) throw new Error(`the share-partition answers error ${code}\n${proc.output().slice(-4000)}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

describe('share-partition state across a SIGKILL of the broker', () => {
  it('acknowledged records are never delivered again, the others are, with their delivery counts', async () => {
    expect((await raw.createTopic(TOPIC, 1)).errorCode).toBe(0)
    const md = await raw.metadata([TOPIC], false, 12)
    const topicId = md.topics[0]!.topicId

    // The first fetch makes the share-partition, starting at the end (share.auto.offset.reset=latest): 0.
    const a = new ShareSessionClient(raw, GROUP, 'member-a', topicId)
    await joinShareGroup(raw, GROUP, 'member-a', TOPIC)
    await initialize(a)
    for (let b = 0; b < 5; b++) {
      const res = await raw.produce(TOPIC, 0, batchOf([{ value: Buffer.from(`v${2 * b}`) }, { value: Buffer.from(`v${2 * b + 1}`) }]))
      expect(res.errorCode).toBe(0)
    }
    const first = await fetchUntilRecords(a)
    expect([...first.entries()]).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9].map((o) => [o, 1]))

    // 0-2 accepted, 3 rejected, 4-5 released, 6-9 held.
    expect(await a.acknowledge([[0, 2, ACCEPT], [3, 3, REJECT], [4, 5, RELEASE]])).toBe(ErrorCode.NONE)
    // The released records come back (delivery count 2) and are released again: their count is 2 now.
    const again = await fetchUntilRecords(a)
    expect([...again.entries()]).toEqual([[4, 2], [5, 2]])
    expect(await a.acknowledge([[4, 5, RELEASE]])).toBe(ErrorCode.NONE)

    // What the share coordinator keeps, as a share-partition leader reads it (ReadShareGroupState, 84).
    const kept = await readState(raw, topicId, 0)
    expect(kept.errorCode).toBe(0)
    expect(kept.stateEpoch).toBe(1)
    expect(kept.startOffset).toBe(4n)
    expect(kept.stateBatches.map((b) => [Number(b.firstOffset), Number(b.lastOffset), b.deliveryState, b.deliveryCount])).toEqual([[4, 5, 0, 2], [6, 9, 0, 1]])

    // Five writes of the share-partition: a snapshot, three updates, a snapshot; the coordinator prunes
    // its partition up to that last snapshot, so the restart replays it and nothing before it.
    const statePartition = shareStatePartition(`${GROUP}:${topicId}:0`, STATE_PARTITIONS)
    const deadline = Date.now() + 20_000
    let logStart = 0n
    while (logStart === 0n && Date.now() < deadline) {
      logStart = (await raw.listOffset('__share_group_state', statePartition, -2n)).offset
      if (logStart === 0n) await new Promise((r) => setTimeout(r, 100))
    }
    expect(logStart).toBeGreaterThan(0n)

    // The acknowledgements were answered: the broker dies now, holding 6-9 for member-a.
    expect(await proc.kill('SIGKILL')).toBe('SIGKILL')
    raw.close()
    proc = await startBrokerProcess({ dataDir: proc.dataDir, port: proc.port, overrides: OVERRIDES })
    raw = await RawClient.connect(proc.host, proc.port)

    await joinShareGroup(raw, GROUP, 'member-b', TOPIC)
    const b = new ShareSessionClient(raw, GROUP, 'member-b', topicId)
    const after = await fetchUntilRecords(b)
    // No accepted (0-2) or rejected (3) record again; the released ones on their third delivery, the held
    // ones on their second (their first delivery was saved when they were acquired).
    expect([...after.entries()]).toEqual([[4, 3], [5, 3], [6, 2], [7, 2], [8, 2], [9, 2]])
    expect(await b.acknowledge([[4, 9, ACCEPT]])).toBe(ErrorCode.NONE)
    const res = await b.fetch({ maxWaitMs: 300 })
    expect(partitionOf(res)?.acquiredRecords ?? []).toEqual([])
    // Everything is acknowledged: the share-partition starts past the last record.
    const final = await readState(raw, topicId, 0)
    expect(final.startOffset).toBe(10n)
    expect(final.stateBatches).toEqual([])
  })

  it('the share state APIs over the wire: fencing, summary, FindCoordinator key type SHARE, ApiVersions', async () => {
    const md = await raw.metadata([TOPIC], false, 12)
    const topicId = md.topics[0]!.topicId
    // A write from an older leader epoch than one read is fenced (FENCED_LEADER_EPOCH), and one in an
    // older state epoch (FENCED_STATE_EPOCH); the summary answers the start offset.
    expect((await readState(raw, topicId, 7)).errorCode).toBe(0)
    const write = async (stateEpoch: number, leaderEpoch: number): Promise<number> => {
      const req = Write.createWriteShareGroupStateRequest({ groupId: GROUP, topics: [Write.createWriteStateData({ topicId, partitions: [Write.createPartitionData({ partition: 0, stateEpoch, leaderEpoch, startOffset: 10n })] })] })
      const r = await raw.call(85, 0, (w) => Write.encodeWriteShareGroupStateRequest(w, req, 0), Write.decodeWriteShareGroupStateResponse)
      return r.results[0]!.partitions[0]!.errorCode
    }
    expect(await write(1, 6)).toBe(ErrorCode.FENCED_LEADER_EPOCH)
    expect(await write(0, 7)).toBe(ErrorCode.FENCED_STATE_EPOCH)
    expect(await write(1, 7)).toBe(ErrorCode.NONE)
    const sreq = Summary.createReadShareGroupStateSummaryRequest({ groupId: GROUP, topics: [Summary.createReadStateSummaryData({ topicId, partitions: [Summary.createPartitionData({ partition: 0, leaderEpoch: 7 })] })] })
    const summary = await raw.call(87, 0, (w) => Summary.encodeReadShareGroupStateSummaryRequest(w, sreq, 0), Summary.decodeReadShareGroupStateSummaryResponse)
    expect(summary.results[0]!.partitions[0]).toMatchObject({ errorCode: 0, stateEpoch: 1, startOffset: 10n })

    // FindCoordinator v6, key type SHARE: the leader of the key's __share_group_state partition (this broker).
    const key = `${GROUP}:${topicId}:0`
    const find = async (keyType: number, keys: string[], version = 6): Promise<FindCoordinator.Coordinator[]> => {
      const req = FindCoordinator.createFindCoordinatorRequest({ keyType, coordinatorKeys: keys })
      return (await raw.call(10, version, (w) => FindCoordinator.encodeFindCoordinatorRequest(w, req, version), FindCoordinator.decodeFindCoordinatorResponse)).coordinators
    }
    const [found, bad] = await find(2, [key, 'no-partition-key'])
    expect(found).toMatchObject({ key, errorCode: 0, port: proc.port })
    expect(bad).toMatchObject({ errorCode: ErrorCode.INVALID_REQUEST })
    expect((await find(2, [key], 4))[0]).toMatchObject({ errorCode: ErrorCode.INVALID_REQUEST })
    expect(shareStatePartition(key, STATE_PARTITIONS)).toBeGreaterThanOrEqual(0)

    // Advertised as Kafka lists its broker APIs.
    const req = ApiVersions.createApiVersionsRequest({ clientSoftwareName: 'test', clientSoftwareVersion: '1' })
    const versions = await raw.call(18, 3, (w) => ApiVersions.encodeApiVersionsRequest(w, req, 3), ApiVersions.decodeApiVersionsResponse)
    for (const k of [83, 84, 85, 86, 87]) expect(versions.apiKeys.find((v) => v.apiKey === k), `API ${k}`).toMatchObject({ minVersion: 0, maxVersion: 0 })
    expect(versions.apiKeys.find((v) => v.apiKey === 10)).toMatchObject({ maxVersion: 6 })
  })
})
