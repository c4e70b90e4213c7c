// DeleteTopics removes every group's committed offsets of the deleted topic from __consumer_offsets
// (Kafka's GroupCoordinator.onPartitionsDeleted): OffsetFetch and `skein groups --describe` no longer
// show them, a topic re-created under the same name starts without them, and a restart (a replay of
// __consumer_offsets) does not bring them back. A deletion queued before a crash and completed by the
// controller at the next start takes the offsets with it too.
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ErrorCode } from '../../src/domain/errors.js'
import * as OffsetCommit from '../../src/protocol/messages/08-offset-commit.gen.js'
import * as OffsetFetch from '../../src/protocol/messages/09-offset-fetch.gen.js'
import * as DeleteTopics from '../../src/protocol/messages/20-delete-topics.gen.js'
import { skein } from '../cli/helpers.js'
import { RawClient, startTestBroker, type TestBroker } from '../harness/index.js'

let tb: TestBroker
let raw: RawClient

beforeAll(async () => {
  tb = await startTestBroker(['offsets.topic.num.partitions=3'])
  raw = await RawClient.connect(tb.host, tb.port)
})

afterAll(async () => {
  raw?.close()
  await tb?.stop()
})

const commit = (groupId: string, topic: string, partitions: number[]) =>
  raw.call(
    8,
    8,
    (w) =>
      OffsetCommit.encodeOffsetCommitRequest(
        w,
        OffsetCommit.createOffsetCommitRequest({
          groupId,
          generationIdOrMemberEpoch: -1,
          memberId: '',
          topics: [{ name: topic, partitions: partitions.map((p) => OffsetCommit.createOffsetCommitRequestPartition({ partitionIndex: p, committedOffset: BigInt(5 + p), committedMetadata: null })) }],
        }),
        8,
      ),
    OffsetCommit.decodeOffsetCommitResponse,
  )

/** Every committed offset of a group: topic -> partitions. */
async function committed(groupId: string): Promise<Record<string, number[]>> {
  const res = await raw.call(9, 8, (w) => OffsetFetch.encodeOffsetFetchRequest(w, OffsetFetch.createOffsetFetchRequest({ groups: [{ groupId, topics: null, memberId: null, memberEpoch: -1 }] }), 8), OffsetFetch.decodeOffsetFetchResponse)
  expect(res.groups[0]!.errorCode).toBe(ErrorCode.NONE)
  return Object.fromEntries(res.groups[0]!.topics.map((t) => [t.name, t.partitions.map((p) => p.partitionIndex)]))
}

const deleteTopic = (name: string) =>
  raw.call(20, 6, (w) => DeleteTopics.encodeDeleteTopicsRequest(w, DeleteTopics.createDeleteTopicsRequest({ topics: [DeleteTopics.createDeleteTopicState({ name })], timeoutMs: 10_000 }), 6), DeleteTopics.decodeDeleteTopicsResponse)

describe('DeleteTopics and committed offsets', () => {
  it("every group's offsets of the deleted topic are gone; other topics keep theirs; nothing comes back on re-creation or restart", async () => {
    await raw.createTopic('doomed', 3)
    await raw.createTopic('kept', 1)
    for (const [g, t, ps] of [['readers-a', 'doomed', [0, 1, 2]], ['readers-a', 'kept', [0]], ['readers-b', 'doomed', [1]]] as const) {
      const r = await commit(g, t, [...ps])
      for (const p of r.topics[0]!.partitions) expect(p.errorCode).toBe(ErrorCode.NONE)
    }
    expect(await committed('readers-a')).toEqual({ doomed: [0, 1, 2], kept: [0] })
    const before = await skein(['groups', '--bootstrap-server', tb.bootstrap, '--describe', '--group', 'readers-a'])
    expect(before.out).toMatch(/readers-a\s+doomed\s+2\s+7\s+0/)

    const del = await deleteTopic('doomed')
    expect(del.responses[0]!.errorCode).toBe(ErrorCode.NONE)
    expect(await committed('readers-a')).toEqual({ kept: [0] })
    expect(await committed('readers-b')).toEqual({})
    const after = await skein(['groups', '--bootstrap-server', tb.bootstrap, '--describe', '--group', 'readers-a'])
    expect(after.code).toBe(0)
    expect(after.out).not.toContain('doomed')
    expect(after.out).toMatch(/readers-a\s+kept\s+0\s+5\s+0/)

    // The same name again is a new topic: no offsets.
    await raw.createTopic('doomed', 3)
    expect(await committed('readers-a')).toEqual({ kept: [0] })

    raw.close()
    tb = await tb.restart()
    raw = await RawClient.connect(tb.host, tb.port)
    const deadline = Date.now() + 10_000
    for (;;) {
      const res = await raw.call(9, 8, (w) => OffsetFetch.encodeOffsetFetchRequest(w, OffsetFetch.createOffsetFetchRequest({ groups: [{ groupId: 'readers-a', topics: null, memberId: null, memberEpoch: -1 }] }), 8), OffsetFetch.decodeOffsetFetchResponse)
      if (res.groups[0]!.errorCode !== ErrorCode.COORDINATOR_LOAD_IN_PROGRESS || Date.now() > deadline) break
      await new Promise((r) => setTimeout(r, 50))
    }
    expect(await committed('readers-a')).toEqual({ kept: [0] })
    expect(await committed('readers-b')).toEqual({})
  })

  it('a deletion queued before a crash removes the offsets when the controller completes it at the next start', async () => {
    await raw.createTopic('queued', 2)
    for (const p of (await commit('readers-c', 'queued', [0, 1])).topics[0]!.partitions) expect(p.errorCode).toBe(ErrorCode.NONE)
    for (const p of (await commit('readers-c', 'kept', [0])).topics[0]!.partitions) expect(p.errorCode).toBe(ErrorCode.NONE)
    expect(await committed('readers-c')).toEqual({ kept: [0], queued: [0, 1] })
    raw.close()
    await tb.stop({ keepData: true })
    // As if the broker died right after DeleteTopics queued the deletion in its metadata store.
    const file = join(tb.dataDir, 'cluster-metadata.json')
    const state = JSON.parse(readFileSync(file, 'utf8')) as { deleteTopics: string[] }
    state.deleteTopics = ['queued']
    writeFileSync(file, JSON.stringify(state))

    tb = await startTestBroker(['offsets.topic.num.partitions=3'], { dataDir: tb.dataDir })
    raw = await RawClient.connect(tb.host, tb.port)
    const deadline = Date.now() + 15_000
    let seen: Record<string, number[]> | undefined
    while (Date.now() < deadline) {
      const res = await raw.call(9, 8, (w) => OffsetFetch.encodeOffsetFetchRequest(w, OffsetFetch.createOffsetFetchRequest({ groups: [{ groupId: 'readers-c', topics: null, memberId: null, memberEpoch: -1 }] }), 8), OffsetFetch.decodeOffsetFetchResponse)
      if (res.groups[0]!.errorCode === ErrorCode.NONE) {
        seen = Object.fromEntries(res.groups[0]!.topics.map((t) => [t.name, t.partitions.map((p) => p.partitionIndex)]))
        if (!('queued' in seen)) break
      }
      await new Promise((r) => setTimeout(r, 50))
    }
    expect(seen).toEqual({ kept: [0] })
    expect(tb.broker.topics.get('queued')).toBeUndefined()
  })
})
