// Share-partition state's lifecycle against a real broker (KIP-932): the group coordinator initializes
// the state of the partitions it assigns (ShareGroupHeartbeat), and the partition's leader serves no
// other share-partition, so a ShareFetch naming any group id creates nothing, in memory or in
// __share_group_state; DeleteGroups of an empty share group deletes its state (a group made again under
// the id starts afresh); idle share-partitions leave memory and come back from the persister intact; an
// acknowledgement whose state save fails is undone.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { ErrorCode } from '../../src/domain/errors.js'
import * as DeleteGroups from '../../src/protocol/messages/42-delete-groups.gen.js'
import * as ShareFetch from '../../src/protocol/messages/78-share-fetch.gen.js'
import * as ShareGroupHeartbeat from '../../src/protocol/messages/76-share-group-heartbeat.gen.js'
import { Admin } from '../../src/client/admin.js'
import { RawClient, runOk, startTestBroker, type TestBroker } from '../harness/index.js'

const ACCEPT = 1
const RELEASE = 2
const STATE_TOPIC = '__share_group_state'

let tb: TestBroker
let raw: RawClient

beforeAll(async () => {
  tb = await startTestBroker(['group.share.min.record.lock.duration.ms=1000'])
  raw = await RawClient.connect(tb.host, tb.port)
}, 60_000)

afterAll(async () => {
  raw?.close()
  await tb?.stop()
})

async function topic(name: string, values: string[]): Promise<string> {
  expect((await raw.createTopic(name, 1)).errorCode).toBe(0)
  await runOk('kcat', ['-P', '-b', tb.bootstrap, '-t', name, '-p', '0', '-X', 'linger.ms=0'], { input: values.join('\n') + '\n', timeoutMs: 20_000 })
  return (await raw.metadata([name], false, 12)).topics[0]!.topicId
}

async function earliest(group: string): Promise<void> {
  await tb.broker.groupConfigs.replaceGroupConfigs(group, new Map([['share.auto.offset.reset', 'earliest']]), false)
}

async function heartbeat(groupId: string, memberId: string, memberEpoch: number, topics: string[] | null): Promise<ShareGroupHeartbeat.ShareGroupHeartbeatResponse> {
  const body = ShareGroupHeartbeat.createShareGroupHeartbeatRequest({ groupId, memberId, memberEpoch, subscribedTopicNames: topics })
  return raw.call(76, 1, (w) => ShareGroupHeartbeat.encodeShareGroupHeartbeatRequest(w, body, 1), ShareGroupHeartbeat.decodeShareGroupHeartbeatResponse)
}

async function shareFetch(o: { group: string; member: string; epoch: number; topicId: string; acks?: [number, number, number][] }): Promise<ShareFetch.PartitionData> {
  const req = ShareFetch.createShareFetchRequest({
    groupId: o.group, memberId: o.member, shareSessionEpoch: o.epoch, maxWaitMs: 500, minBytes: 1, maxBytes: 1 << 20, maxRecords: 500, batchSize: 500,
    topics: [ShareFetch.createFetchTopic({
      topicId: o.topicId,
      partitions: [ShareFetch.createFetchPartition({
        partitionIndex: 0,
        acknowledgementBatches: (o.acks ?? []).map(([f, l, t]) => ShareFetch.createAcknowledgementBatch({ firstOffset: BigInt(f), lastOffset: BigInt(l), acknowledgeTypes: [t] })),
      })],
    })],
  })
  const res = await raw.call(78, 1, (w) => ShareFetch.encodeShareFetchRequest(w, req, 1), ShareFetch.decodeShareFetchResponse, 20_000)
  expect(res.errorCode).toBe(0)
  return res.responses[0]!.partitions[0]!
}

function acquired(p: ShareFetch.PartitionData): [offset: number, deliveryCount: number][] {
  const out: [number, number][] = []
  for (const a of p.acquiredRecords) for (let o = Number(a.firstOffset); o <= Number(a.lastOffset); o++) out.push([o, a.deliveryCount])
  return out
}

/** The high watermarks of __share_group_state summed: what the share coordinators have written. */
async function stateTopicEnd(): Promise<number> {
  const md = await raw.metadata([STATE_TOPIC], false, 12)
  const t = md.topics.find((x) => x.name === STATE_TOPIC)
  if (t === undefined || t.errorCode !== 0) return 0
  let sum = 0
  for (const p of t.partitions) sum += Number((await raw.listOffset(STATE_TOPIC, p.partitionIndex, -1n)).offset)
  return sum
}

describe('share-partition state is made by the group coordinator only', () => {
  it('a ShareFetch naming random group ids is refused UNKNOWN_TOPIC_OR_PARTITION and makes nothing', async () => {
    const topicId = await topic('sl-hostile', ['a', 'b'])
    // One real member, so the state topic exists and is measured.
    await earliest('sl-real')
    expect((await heartbeat('sl-real', 'm', 0, ['sl-hostile'])).errorCode).toBe(0)
    expect(acquired(await shareFetch({ group: 'sl-real', member: 'm', epoch: 0, topicId }))).toEqual([[0, 1], [1, 1]])
    const held = tb.broker.sharePartitions.size
    const end = await stateTopicEnd()
    expect(end).toBeGreaterThan(0)
    for (let i = 0; i < 60; i++) {
      const p = await shareFetch({ group: `hostile-${randomBytes(8).toString('hex')}`, member: 'x', epoch: 0, topicId })
      expect(p.errorCode).toBe(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
      expect(p.acquiredRecords).toEqual([])
    }
    expect(tb.broker.sharePartitions.size).toBe(held)
    expect(await stateTopicEnd()).toBe(end)
  })
})

describe('deleting a share group deletes its share-partition state', () => {
  it('a group made again under the id starts afresh', async () => {
    const topicId = await topic('sl-deleted', ['a', 'b', 'c'])
    const g = 'sl-del-group'
    await earliest(g)
    expect((await heartbeat(g, 'm', 0, ['sl-deleted'])).errorCode).toBe(0)
    expect(acquired(await shareFetch({ group: g, member: 'm', epoch: 0, topicId }))).toEqual([[0, 1], [1, 1], [2, 1]])
    // Accepted and the session closed: never delivered again to this group.
    await shareFetch({ group: g, member: 'm', epoch: -1, topicId, acks: [[0, 2, ACCEPT]] }).catch(() => undefined)
    expect((await heartbeat(g, 'm', -1, null)).errorCode).toBe(0)
    const del = await raw.call(42, 2, (w) => DeleteGroups.encodeDeleteGroupsRequest(w, DeleteGroups.createDeleteGroupsRequest({ groupsNames: [g] }), 2), DeleteGroups.decodeDeleteGroupsResponse)
    expect(del.results[0]!.errorCode).toBe(0)
    // Nothing served for the deleted group until a member is assigned the partition again.
    expect((await shareFetch({ group: g, member: 'm2', epoch: 0, topicId })).errorCode).toBe(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    expect((await heartbeat(g, 'm2', 0, ['sl-deleted'])).errorCode).toBe(0)
    const again = await shareFetch({ group: g, member: 'm2', epoch: 1, topicId })
    expect(acquired(again)).toEqual([[0, 1], [1, 1], [2, 1]])
  })
})

describe('a state save that fails', () => {
  it('undoes the acknowledgement it carried: the records are delivered again', async () => {
    const topicId = await topic('sl-savefail', ['a', 'b', 'c'])
    const g = 'sl-savefail-group'
    await earliest(g)
    expect((await heartbeat(g, 'm', 0, ['sl-savefail'])).errorCode).toBe(0)
    expect(acquired(await shareFetch({ group: g, member: 'm', epoch: 0, topicId }))).toEqual([[0, 1], [1, 1], [2, 1]])
    // A state topic whose max.message.bytes no state record fits: every save is refused.
    const admin = new Admin({ bootstrapServers: [tb.bootstrap] })
    try {
      await admin.alterConfigs({ type: 'topic', name: STATE_TOPIC }, [{ op: 'set', name: 'max.message.bytes', value: '64' }])
      const refused = await shareFetch({ group: g, member: 'm', epoch: 1, topicId, acks: [[0, 2, ACCEPT]] })
      expect(refused.acknowledgeErrorCode).not.toBe(0)
      await admin.alterConfigs({ type: 'topic', name: STATE_TOPIC }, [{ op: 'delete', name: 'max.message.bytes' }])
      // The accept was never saved, so it did not happen: the three records come again.
      let again = acquired(refused)
      for (let i = 0; i < 5 && again.length === 0; i++) again = acquired(await shareFetch({ group: g, member: 'm', epoch: 2 + i, topicId }))
      expect(again.map(([o]) => o)).toEqual([0, 1, 2])
    } finally {
      await admin.alterConfigs({ type: 'topic', name: STATE_TOPIC }, [{ op: 'delete', name: 'max.message.bytes' }]).catch(() => undefined)
      await admin.close()
    }
  })
})

describe('idle share-partitions leave memory', () => {
  it('one with no acquired record and no session is dropped, and reloaded from the persister as it was', async () => {
    const topicId = await topic('sl-idle', ['a', 'b', 'c', 'd', 'e'])
    const g = 'sl-idle-group'
    await earliest(g)
    expect((await heartbeat(g, 'm', 0, ['sl-idle'])).errorCode).toBe(0)
    const spm = tb.broker.sharePartitions
    const saved = spm.memoryLimits
    try {
      spm.memoryLimits = { ...saved, idleMs: 0 }
      expect(acquired(await shareFetch({ group: g, member: 'm', epoch: 0, topicId }))).toEqual([[0, 1], [1, 1], [2, 1], [3, 1], [4, 1]])
      const held = spm.size
      // Records acquired and a session open: kept.
      spm.dropIdle()
      expect(spm.size).toBe(held)
      // 0-1 accepted, 2-4 released, the session closed: nothing left to keep it.
      await shareFetch({ group: g, member: 'm', epoch: -1, topicId, acks: [[0, 1, ACCEPT], [2, 4, RELEASE]] }).catch(() => undefined)
      await new Promise((r) => setTimeout(r, 200))
      expect(spm.dropIdle()).toBeGreaterThanOrEqual(1)
      expect(spm.size).toBeLessThan(held)
      const back = await shareFetch({ group: g, member: 'm', epoch: 0, topicId })
      expect(acquired(back)).toEqual([[2, 2], [3, 2], [4, 2]])
    } finally {
      spm.memoryLimits = saved
    }
  })

  it('past maxPartitions the idle ones least recently used go first', async () => {
    const spm = tb.broker.sharePartitions
    const saved = spm.memoryLimits
    try {
      const topicId = await topic('sl-count', ['a'])
      for (const g of ['sl-c1', 'sl-c2', 'sl-c3']) {
        await earliest(g)
        expect((await heartbeat(g, 'm', 0, ['sl-count'])).errorCode).toBe(0)
        await shareFetch({ group: g, member: 'm', epoch: 0, topicId, acks: [] })
        await shareFetch({ group: g, member: 'm', epoch: -1, topicId, acks: [[0, 0, ACCEPT]] }).catch(() => undefined)
      }
      await new Promise((r) => setTimeout(r, 200))
      const before = spm.size
      // Not idle for long, but over the count: the three idle ones go; the ones in use (sessions, locks) stay.
      spm.memoryLimits = { idleMs: 3_600_000, maxPartitions: 1 }
      expect(spm.dropIdle(true)).toBeGreaterThanOrEqual(3)
      expect(spm.size).toBeLessThanOrEqual(before - 3)
    } finally {
      spm.memoryLimits = saved
    }
  })
})
