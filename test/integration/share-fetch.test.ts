// ShareFetch (78) and ShareAcknowledge (79) v1 against a real broker (KIP-932), records produced by
// kcat (librdkafka): members sharing a partition never hold the same record, acknowledged records are
// not delivered again, RELEASE is (delivery count 2), locks expire, session epochs, closing a session or
// its connection releases what the member holds, long polls, per-partition errors.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { AclOperation, AclPermission, PatternType, ResourceType } from '../../src/domain/acl.js'
import { ErrorCode } from '../../src/domain/errors.js'
import * as SaslHandshake from '../../src/protocol/messages/17-sasl-handshake.gen.js'
import * as CreateAcls from '../../src/protocol/messages/30-create-acls.gen.js'
import * as SaslAuthenticate from '../../src/protocol/messages/36-sasl-authenticate.gen.js'
import * as DeleteTopics from '../../src/protocol/messages/20-delete-topics.gen.js'
import * as InitProducerId from '../../src/protocol/messages/22-init-producer-id.gen.js'
import * as ShareAcknowledge from '../../src/protocol/messages/79-share-acknowledge.gen.js'
import * as ShareFetch from '../../src/protocol/messages/78-share-fetch.gen.js'
import * as ShareGroupHeartbeat from '../../src/protocol/messages/76-share-group-heartbeat.gen.js'
import { RawClient, batchOf, decodeAllRecords, runOk, startTestBroker, type TestBroker } from '../harness/index.js'

const ACCEPT = 1
const RELEASE = 2
const REJECT = 3

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

/** Topic id -> name, of the topics the tests made. */
const topicNames = new Map<string, string>()
/** group\0member\0topic id of the members that joined by ShareGroupHeartbeat. */
const joined = new Set<string>()

/** Creates a topic and answers its id. */
async function topicWithId(name: string, partitions = 1): Promise<string> {
  const created = await raw.createTopic(name, partitions)
  expect(created.errorCode).toBe(0)
  const md = await raw.metadata([name], false, 12)
  const id = md.topics[0]!.topicId
  expect(id).not.toBe('AAAAAAAAAAAAAAAAAAAAAA')
  topicNames.set(id, name)
  return id
}

/**
 * The member joins the share group subscribed to the topic (ShareGroupHeartbeat, epoch 0), as a share
 * consumer does before it fetches: the group coordinator initializes the state of the partitions it
 * assigns, and the leader serves no other share-partition.
 */
async function join(groupId: string, memberId: string, topicId: string, client = raw): Promise<void> {
  const name = topicNames.get(topicId)
  const k = `${groupId}\u0000${memberId}\u0000${topicId}`
  if (name === undefined || joined.has(k)) return
  const body = ShareGroupHeartbeat.createShareGroupHeartbeatRequest({ groupId, memberId, memberEpoch: 0, subscribedTopicNames: [name] })
  const res = await client.call(76, 1, (w) => ShareGroupHeartbeat.encodeShareGroupHeartbeatRequest(w, body, 1), ShareGroupHeartbeat.decodeShareGroupHeartbeatResponse)
  // Refused (no Read on the group, say): the fetch then gets its own answer.
  if (res.errorCode === 0) joined.add(k)
}

/** Produces with kcat, one run per call: each call's values land in batches of their own. */
async function produce(topic: string, values: string[], partition = 0): Promise<void> {
  await runOk('kcat', ['-P', '-b', tb.bootstrap, '-t', topic, '-p', String(partition), '-X', 'linger.ms=0'], { input: values.join('\n') + '\n', timeoutMs: 20_000 })
}

/** A group starting at the log start, with an optional lock duration (through the group config service, as IncrementalAlterConfigs does). */
async function group(name: string, lockMs?: number): Promise<string> {
  const configs = new Map([['share.auto.offset.reset', 'earliest']])
  if (lockMs !== undefined) configs.set('share.record.lock.duration.ms', String(lockMs))
  await tb.broker.groupConfigs.replaceGroupConfigs(name, configs, false)
  return name
}

type Acks = [first: number, last: number, types: number[]][]

interface FetchOpts {
  group: string
  member: string
  epoch: number
  topicId?: string
  partitions?: { partition: number; acks?: Acks }[]
  maxWaitMs?: number
  minBytes?: number
  maxBytes?: number
  maxRecords?: number
  forget?: { topicId: string; partitions: number[] }[]
}

function ackBatches(acks: Acks | undefined): ShareFetch.AcknowledgementBatch[] {
  return (acks ?? []).map(([first, last, types]) => ShareFetch.createAcknowledgementBatch({ firstOffset: BigInt(first), lastOffset: BigInt(last), acknowledgeTypes: types }))
}

async function shareFetch(o: FetchOpts, client = raw): Promise<ShareFetch.ShareFetchResponse> {
  if (o.epoch === 0 && o.topicId !== undefined) await join(o.group, o.member, o.topicId, client)
  const req = ShareFetch.createShareFetchRequest({
    groupId: o.group,
    memberId: o.member,
    shareSessionEpoch: o.epoch,
    maxWaitMs: o.maxWaitMs ?? 200,
    minBytes: o.minBytes ?? 1,
    maxBytes: o.maxBytes ?? 52428800,
    maxRecords: o.maxRecords ?? 500,
    batchSize: o.maxRecords ?? 500,
    topics: o.topicId === undefined ? [] : [ShareFetch.createFetchTopic({
      topicId: o.topicId,
      partitions: (o.partitions ?? [{ partition: 0 }]).map((p) => ShareFetch.createFetchPartition({ partitionIndex: p.partition, acknowledgementBatches: ackBatches(p.acks) })),
    })],
    forgottenTopicsData: (o.forget ?? []).map((f) => ShareFetch.createForgottenTopic(f)),
  })
  return client.call(78, 1, (w) => ShareFetch.encodeShareFetchRequest(w, req, 1), ShareFetch.decodeShareFetchResponse, 20_000)
}

async function shareAck(o: { group: string; member: string; epoch: number; topicId: string; partitions: { partition: number; acks: Acks }[] }, client = raw): Promise<ShareAcknowledge.ShareAcknowledgeResponse> {
  const req = ShareAcknowledge.createShareAcknowledgeRequest({
    groupId: o.group,
    memberId: o.member,
    shareSessionEpoch: o.epoch,
    topics: [ShareAcknowledge.createAcknowledgeTopic({
      topicId: o.topicId,
      partitions: o.partitions.map((p) => ShareAcknowledge.createAcknowledgePartition({
        partitionIndex: p.partition,
        acknowledgementBatches: p.acks.map(([first, last, types]) => ShareAcknowledge.createAcknowledgementBatch({ firstOffset: BigInt(first), lastOffset: BigInt(last), acknowledgeTypes: types })),
      })),
    })],
  })
  return client.call(79, 1, (w) => ShareAcknowledge.encodeShareAcknowledgeRequest(w, req, 1), ShareAcknowledge.decodeShareAcknowledgeResponse, 20_000)
}

/** The answer's partition, checked to have no error. */
function part(res: ShareFetch.ShareFetchResponse, partition = 0): ShareFetch.PartitionData {
  expect(res.errorCode).toBe(0)
  const p = res.responses.flatMap((t) => t.partitions).find((x) => x.partitionIndex === partition)
  expect(p, `partition ${partition} in the answer`).toBeDefined()
  return p!
}

/** The acquired offsets with their delivery counts, and checks that the records sent hold each of them. */
function acquired(p: ShareFetch.PartitionData): Map<number, number> {
  const out = new Map<number, number>()
  for (const a of p.acquiredRecords) for (let o = Number(a.firstOffset); o <= Number(a.lastOffset); o++) out.set(o, a.deliveryCount)
  expect(p.records).not.toBeNull()
  const sent = new Set(decodeAllRecords(p.records as Buffer).map((r) => r.offset))
  for (const o of out.keys()) expect(sent.has(o), `record ${o} sent`).toBe(true)
  return out
}

function ranges(offsets: Iterable<number>): Acks {
  return [...offsets].sort((a, b) => a - b).map((o) => [o, o, [ACCEPT]])
}

describe('ShareFetch and ShareAcknowledge', () => {
  it('two members share a partition: never the same record at once, acknowledged records never again', async () => {
    const topicId = await topicWithId('share-two-members')
    for (let b = 0; b < 10; b++) await produce('share-two-members', [`v${b}-0`, `v${b}-1`, `v${b}-2`])
    const g = await group('g-two-members')
    const seen = new Map<number, string>()
    const epochs: Record<string, number> = { a: 0, b: 0 }
    const pendingAcks: Record<string, Acks> = { a: [], b: [] }
    for (let round = 0; round < 20 && seen.size < 30; round++) {
      const held = new Map<number, string>()
      for (const m of ['a', 'b']) {
        const res = await shareFetch({ group: g, member: m, epoch: epochs[m]!, topicId, partitions: [{ partition: 0, acks: pendingAcks[m] }], maxRecords: 4, maxWaitMs: 100 })
        epochs[m] = epochs[m]! + 1
        const p = part(res)
        expect(p.acknowledgeErrorCode).toBe(0)
        expect(res.acquisitionLockTimeoutMs).toBe(30000)
        const got = acquired(p)
        for (const [o, count] of got) {
          expect(count).toBe(1)
          expect(held.has(o), `offset ${o} held by both`).toBe(false)
          expect(seen.has(o), `offset ${o} delivered twice`).toBe(false)
          held.set(o, m)
          seen.set(o, m)
        }
        pendingAcks[m] = ranges(got.keys())
      }
    }
    expect([...seen.keys()].sort((x, y) => x - y)).toEqual(Array.from({ length: 30 }, (_, i) => i))
    // Both members got some.
    expect(new Set(seen.values()).size).toBe(2)
    // The last acknowledgements go with the closing request; nothing is left for anyone.
    for (const m of ['a', 'b']) {
      const closed = await shareAck({ group: g, member: m, epoch: -1, topicId, partitions: [{ partition: 0, acks: pendingAcks[m]! }] })
      expect(closed.errorCode).toBe(0)
      expect(closed.responses[0]?.partitions[0]?.errorCode ?? 0).toBe(0)
    }
    const late = part(await shareFetch({ group: g, member: 'c', epoch: 0, topicId, maxWaitMs: 300 }))
    expect(late.acquiredRecords).toEqual([])
    expect(late.records).toEqual(Buffer.alloc(0))
  })

  it('RELEASE is redelivered with delivery count 2, ACCEPT and REJECT are not; ShareAcknowledge answers per partition', async () => {
    const topicId = await topicWithId('share-ack-types')
    await produce('share-ack-types', ['r0', 'r1', 'r2', 'r3', 'r4'])
    const g = await group('g-ack-types')
    const first = acquired(part(await shareFetch({ group: g, member: 'a', epoch: 0, topicId })))
    expect([...first.keys()]).toEqual([0, 1, 2, 3, 4])
    const acked = await shareAck({ group: g, member: 'a', epoch: 1, topicId, partitions: [{ partition: 0, acks: [[0, 4, [ACCEPT, RELEASE, REJECT, RELEASE, ACCEPT]]] }] })
    expect(acked.errorCode).toBe(0)
    expect(acked.responses[0]!.partitions[0]!.errorCode).toBe(0)
    const again = acquired(part(await shareFetch({ group: g, member: 'b', epoch: 0, topicId })))
    expect([...again.entries()]).toEqual([[1, 2], [3, 2]])
    // Acknowledging records b holds, as a: INVALID_RECORD_STATE, and b still holds them.
    const wrong = await shareAck({ group: g, member: 'a', epoch: 2, topicId, partitions: [{ partition: 0, acks: [[1, 1, [ACCEPT]]] }] })
    expect(wrong.responses[0]!.partitions[0]!.errorCode).toBe(ErrorCode.INVALID_RECORD_STATE)
    // Malformed batches: INVALID_REQUEST.
    const reversed = await shareAck({ group: g, member: 'b', epoch: 1, topicId, partitions: [{ partition: 0, acks: [[3, 1, [ACCEPT]]] }] })
    expect(reversed.responses[0]!.partitions[0]!.errorCode).toBe(ErrorCode.INVALID_REQUEST)
    const beyond = await shareAck({ group: g, member: 'b', epoch: 2, topicId, partitions: [{ partition: 0, acks: [[3, 1_000_000, [ACCEPT]]] }] })
    expect(beyond.responses[0]!.partitions[0]!.errorCode).toBe(ErrorCode.INVALID_REQUEST)
    const ok = await shareAck({ group: g, member: 'b', epoch: 3, topicId, partitions: [{ partition: 0, acks: [[1, 1, [ACCEPT]], [3, 3, [ACCEPT]]] }] })
    expect(ok.responses[0]!.partitions[0]!.errorCode).toBe(0)
    const none = part(await shareFetch({ group: g, member: 'c', epoch: 0, topicId, maxWaitMs: 300 }))
    expect(none.acquiredRecords).toEqual([])
  })

  it('an expired acquisition lock redelivers the records; the late acknowledgement is INVALID_RECORD_STATE', async () => {
    const topicId = await topicWithId('share-lock-expiry')
    await produce('share-lock-expiry', ['x0', 'x1', 'x2'])
    const g = await group('g-lock-expiry', 1500)
    const res = await shareFetch({ group: g, member: 'a', epoch: 0, topicId })
    expect(res.acquisitionLockTimeoutMs).toBe(1500)
    expect([...acquired(part(res)).keys()]).toEqual([0, 1, 2])
    // Held: b gets nothing for now.
    expect(part(await shareFetch({ group: g, member: 'b', epoch: 0, topicId, maxWaitMs: 100 })).acquiredRecords).toEqual([])
    // The lock ends while b waits: b is woken with the records, delivery count 2.
    const started = Date.now()
    const redelivered = acquired(part(await shareFetch({ group: g, member: 'b', epoch: 1, topicId, maxWaitMs: 5000 })))
    expect(Date.now() - started).toBeLessThan(4500)
    expect([...redelivered.entries()]).toEqual([[0, 2], [1, 2], [2, 2]])
    const late = await shareAck({ group: g, member: 'a', epoch: 1, topicId, partitions: [{ partition: 0, acks: [[0, 2, [ACCEPT]]] }] })
    expect(late.responses[0]!.partitions[0]!.errorCode).toBe(ErrorCode.INVALID_RECORD_STATE)
    // Acknowledgements piggybacked on a ShareFetch answer in AcknowledgeErrorCode.
    const piggy = part(await shareFetch({ group: g, member: 'a', epoch: 2, topicId, partitions: [{ partition: 0, acks: [[0, 0, [ACCEPT]]] }], maxWaitMs: 0 }))
    expect(piggy.acknowledgeErrorCode).toBe(ErrorCode.INVALID_RECORD_STATE)
    const byB = part(await shareFetch({ group: g, member: 'b', epoch: 2, topicId, partitions: [{ partition: 0, acks: [[0, 2, [ACCEPT]]] }], maxWaitMs: 0 }))
    expect(byB.acknowledgeErrorCode).toBe(0)
  })

  it('past the delivery count limit (5) a record is archived', async () => {
    const topicId = await topicWithId('share-delivery-limit')
    await produce('share-delivery-limit', ['d0'])
    const g = await group('g-delivery-limit')
    for (let delivery = 1; delivery <= 5; delivery++) {
      const epoch = delivery === 1 ? 0 : delivery - 1
      const p = part(await shareFetch({ group: g, member: 'a', epoch, topicId, partitions: [{ partition: 0, acks: delivery === 1 ? [] : [[0, 0, [RELEASE]]] }] }))
      expect([...acquired(p).entries()]).toEqual([[0, delivery]])
    }
    const sixth = part(await shareFetch({ group: g, member: 'a', epoch: 5, topicId, partitions: [{ partition: 0, acks: [[0, 0, [RELEASE]]] }], maxWaitMs: 300 }))
    expect(sixth.acknowledgeErrorCode).toBe(0)
    expect(sixth.acquiredRecords).toEqual([])
  })

  it('session epochs: SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH, acknowledgements in an opening request', async () => {
    const topicId = await topicWithId('share-epochs')
    await produce('share-epochs', ['e0', 'e1'])
    const g = await group('g-epochs')
    expect((await shareFetch({ group: g, member: 'a', epoch: 1, topicId })).errorCode).toBe(ErrorCode.SHARE_SESSION_NOT_FOUND)
    expect((await shareAck({ group: g, member: 'a', epoch: 1, topicId, partitions: [{ partition: 0, acks: [[0, 0, [ACCEPT]]] }] })).errorCode).toBe(ErrorCode.SHARE_SESSION_NOT_FOUND)
    const opening = await shareFetch({ group: g, member: 'a', epoch: 0, topicId, partitions: [{ partition: 0, acks: [[0, 0, [ACCEPT]]] }] })
    expect(opening.errorCode).toBe(ErrorCode.INVALID_REQUEST)
    expect(opening.responses).toEqual([])
    expect([...acquired(part(await shareFetch({ group: g, member: 'a', epoch: 0, topicId }))).keys()]).toEqual([0, 1])
    // Only ShareFetch opens a session; a skipped or repeated epoch is refused and changes nothing.
    expect((await shareAck({ group: g, member: 'a', epoch: 0, topicId, partitions: [{ partition: 0, acks: [[0, 0, [ACCEPT]]] }] })).errorCode).toBe(ErrorCode.INVALID_SHARE_SESSION_EPOCH)
    expect((await shareFetch({ group: g, member: 'a', epoch: 5 })).errorCode).toBe(ErrorCode.INVALID_SHARE_SESSION_EPOCH)
    expect((await shareAck({ group: g, member: 'a', epoch: 1, topicId, partitions: [{ partition: 0, acks: [[0, 0, [ACCEPT]]] }] })).errorCode).toBe(0)
    expect((await shareAck({ group: g, member: 'a', epoch: 1, topicId, partitions: [{ partition: 0, acks: [[1, 1, [ACCEPT]]] }] })).errorCode).toBe(ErrorCode.INVALID_SHARE_SESSION_EPOCH)
    // The session remembers its partitions: a fetch naming none still fetches them.
    await produce('share-epochs', ['e2'])
    const next = part(await shareFetch({ group: g, member: 'a', epoch: 2, partitions: [], maxWaitMs: 2000 }))
    expect([...acquired(next).keys()]).toEqual([2])
    // Forgotten partitions are no longer fetched.
    await produce('share-epochs', ['e3'])
    const forgot = await shareFetch({ group: g, member: 'a', epoch: 3, forget: [{ topicId, partitions: [0] }], maxWaitMs: 200 })
    expect(forgot.errorCode).toBe(0)
    expect(forgot.responses).toEqual([])
  })

  it('closing the session (epoch -1) applies its acknowledgements and releases the rest; so does a closed connection', async () => {
    const topicId = await topicWithId('share-close')
    await produce('share-close', ['c0', 'c1', 'c2', 'c3'])
    const g = await group('g-close')
    expect([...acquired(part(await shareFetch({ group: g, member: 'a', epoch: 0, topicId }))).keys()]).toEqual([0, 1, 2, 3])
    const closed = await shareAck({ group: g, member: 'a', epoch: -1, topicId, partitions: [{ partition: 0, acks: [[0, 0, [ACCEPT]]] }] })
    expect(closed.errorCode).toBe(0)
    expect(closed.responses[0]!.partitions[0]!.errorCode).toBe(0)
    expect((await shareFetch({ group: g, member: 'a', epoch: 1, topicId })).errorCode).toBe(ErrorCode.SHARE_SESSION_NOT_FOUND)
    const other = await RawClient.connect(tb.host, tb.port)
    const b = acquired(part(await shareFetch({ group: g, member: 'b', epoch: 0, topicId }, other)))
    expect([...b.entries()]).toEqual([[1, 2], [2, 2], [3, 2]])
    // b's connection goes away without closing its session: its records come back within the sweep.
    other.close()
    await other.closedPromise
    const started = Date.now()
    const c = acquired(part(await shareFetch({ group: g, member: 'c', epoch: 0, topicId, maxWaitMs: 5000 })))
    expect(Date.now() - started).toBeLessThan(4000)
    expect([...c.entries()]).toEqual([[1, 3], [2, 3], [3, 3]])
    // ShareFetch with epoch -1 closes too, fetching nothing.
    const fin = await shareFetch({ group: g, member: 'c', epoch: -1, topicId, partitions: [{ partition: 0, acks: [[1, 3, [REJECT]]] }] })
    expect(fin.errorCode).toBe(0)
    expect(part(fin).acknowledgeErrorCode).toBe(0)
    expect(part(fin).acquiredRecords).toEqual([])
    expect(part(await shareFetch({ group: g, member: 'd', epoch: 0, topicId, maxWaitMs: 200 })).acquiredRecords).toEqual([])
  })

  it('long poll: waits MaxWaitMs for records, wakes on new ones; MinBytes above what there is waits the whole time; MaxBytes 0 gives none', async () => {
    const topicId = await topicWithId('share-long-poll')
    const g = await group('g-long-poll')
    const started = Date.now()
    const empty = part(await shareFetch({ group: g, member: 'a', epoch: 0, topicId, maxWaitMs: 500 }))
    expect(Date.now() - started).toBeGreaterThanOrEqual(450)
    expect(empty.acquiredRecords).toEqual([])
    expect(empty.records).toEqual(Buffer.alloc(0))
    const waiting = shareFetch({ group: g, member: 'a', epoch: 1, topicId, maxWaitMs: 10_000 })
    await new Promise((r) => setTimeout(r, 300))
    const producedAt = Date.now()
    await produce('share-long-poll', ['late'])
    const woken = part(await waiting)
    expect(Date.now() - producedAt).toBeLessThan(5000)
    expect([...acquired(woken).keys()]).toEqual([0])
    await produce('share-long-poll', ['more'])
    const slow = Date.now()
    const full = part(await shareFetch({ group: g, member: 'b', epoch: 0, topicId, minBytes: 0x7fffffff, maxWaitMs: 700 }))
    expect(Date.now() - slow).toBeGreaterThanOrEqual(650)
    expect([...acquired(full).keys()]).toEqual([1])
    // MinBytes 0 answers at once, with nothing to give.
    const eager = Date.now()
    expect(part(await shareFetch({ group: g, member: 'b', epoch: 1, topicId, minBytes: 0, maxWaitMs: 5000 })).acquiredRecords).toEqual([])
    expect(Date.now() - eager).toBeLessThan(2500)
    await produce('share-long-poll', ['zero'])
    const zero = part(await shareFetch({ group: g, member: 'c', epoch: 0, topicId, maxBytes: 0, maxWaitMs: 200 }))
    expect(zero.acquiredRecords).toEqual([])
    expect(zero.records).toEqual(Buffer.alloc(0))
  })

  it('MaxRecords and MaxBytes bound an answer (at least one batch); the default offset reset is latest', async () => {
    const topicId = await topicWithId('share-bounds')
    for (let i = 0; i < 6; i++) await produce('share-bounds', [`b${i}`])
    const g = await group('g-bounds')
    expect([...acquired(part(await shareFetch({ group: g, member: 'a', epoch: 0, topicId, maxRecords: 2 }))).keys()]).toEqual([0, 1])
    expect([...acquired(part(await shareFetch({ group: g, member: 'a', epoch: 1, topicId, maxBytes: 1 }))).keys()]).toEqual([2])
    expect([...acquired(part(await shareFetch({ group: g, member: 'a', epoch: 2, topicId }))).keys()]).toEqual([3, 4, 5])
    // A group without share.auto.offset.reset starts at the end: only records produced later.
    const latest = 'g-bounds-latest'
    expect(part(await shareFetch({ group: latest, member: 'a', epoch: 0, topicId, maxWaitMs: 200 })).acquiredRecords).toEqual([])
    await produce('share-bounds', ['after'])
    expect([...acquired(part(await shareFetch({ group: latest, member: 'a', epoch: 1, topicId, maxWaitMs: 5000 }))).keys()]).toEqual([6])
  })

  it('takes the session partitions in turns (rotated by the session epoch) when MaxRecords cannot serve them all', async () => {
    const topicId = await topicWithId('share-rotate', 2)
    for (const p of [0, 1]) for (let i = 0; i < 3; i++) await produce('share-rotate', [`p${p}-${i}`], p)
    const g = await group('g-rotate')
    const served: number[] = []
    for (let epoch = 0; epoch < 4; epoch++) {
      const res = await shareFetch({ group: g, member: 'a', epoch, topicId, partitions: epoch === 0 ? [{ partition: 0 }, { partition: 1 }] : [], maxRecords: 1 })
      const withRecords = res.responses.flatMap((t) => t.partitions).filter((p) => p.acquiredRecords.length > 0)
      expect(withRecords).toHaveLength(1)
      served.push(withRecords[0]!.partitionIndex)
    }
    expect(served).toEqual([0, 1, 0, 1])
  })

  it('per-partition errors: UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_OR_PARTITION; request errors for empty ids', async () => {
    const topicId = await topicWithId('share-errors')
    const g = await group('g-errors')
    const unknownId = 'AAAAAAAAAAAAAAAAAAAAAQ'
    const res = await shareFetch({ group: g, member: 'a', epoch: 0, topicId: unknownId, maxWaitMs: 0 })
    expect(res.errorCode).toBe(0)
    expect(res.responses[0]!.partitions[0]!.errorCode).toBe(ErrorCode.UNKNOWN_TOPIC_ID)
    const missing = await shareFetch({ group: g, member: 'b', epoch: 0, topicId, partitions: [{ partition: 7 }], maxWaitMs: 0 })
    expect(part(missing, 7).errorCode).toBe(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    const ack = await shareAck({ group: g, member: 'b', epoch: 1, topicId: unknownId, partitions: [{ partition: 0, acks: [[0, 0, [ACCEPT]]] }] })
    expect(ack.responses[0]!.partitions[0]!.errorCode).toBe(ErrorCode.UNKNOWN_TOPIC_ID)
    expect((await shareFetch({ group: '', member: 'a', epoch: 0 })).errorCode).toBe(ErrorCode.INVALID_GROUP_ID)
    expect((await shareFetch({ group: g, member: '', epoch: 0 })).errorCode).toBe(ErrorCode.INVALID_REQUEST)
  })

  it('share.isolation.level: read_committed acquires only committed and plain records up to the LSO; control records never', async () => {
    const topic = 'share-txn'
    const topicId = await topicWithId(topic)
    const init = InitProducerId.createInitProducerIdRequest({ transactionalId: null, transactionTimeoutMs: 60000 })
    const pid = Number((await raw.call(22, 2, (w) => InitProducerId.encodeInitProducerIdRequest(w, init, 2), InitProducerId.decodeInitProducerIdResponse)).producerId)
    let seq = 0
    const txn = async (values: string[]): Promise<void> => {
      const batch = batchOf(values.map((v) => ({ key: null, value: Buffer.from(v) })), { producerId: pid, producerEpoch: 0, baseSequence: seq, transactional: true })
      seq += values.length
      expect((await raw.produce(topic, 0, batch)).errorCode).toBe(0)
    }
    const marker = async (commit: boolean): Promise<void> => {
      const [o] = await tb.broker.router.writeTxnMarkers([{ topic, partition: 0, producerId: pid, producerEpoch: 0, coordinatorEpoch: 0, commit }])
      expect(o!.ok).toBe(true)
    }
    await txn(['aborted-0', 'aborted-1']) // 0-1
    await marker(false) // 2
    await txn(['committed-3', 'committed-4']) // 3-4
    await marker(true) // 5
    await produce(topic, ['plain-6']) // 6
    await txn(['open-7']) // 7, still open: the LSO stays at 7
    const committed = await group('g-txn-committed')
    await tb.broker.groupConfigs.replaceGroupConfigs(committed, new Map([['share.auto.offset.reset', 'earliest'], ['share.isolation.level', 'read_committed']]), false)
    const rc = part(await shareFetch({ group: committed, member: 'a', epoch: 0, topicId }))
    expect([...acquired(rc).keys()]).toEqual([3, 4, 6])
    const uncommitted = await group('g-txn-uncommitted')
    const ru = part(await shareFetch({ group: uncommitted, member: 'a', epoch: 0, topicId }))
    expect([...acquired(ru).keys()]).toEqual([0, 1, 3, 4, 6, 7])
    // The open transaction commits: read_committed gets it then.
    await marker(true) // 8
    const later = part(await shareFetch({ group: committed, member: 'a', epoch: 1, topicId, maxWaitMs: 2000 }))
    expect([...acquired(later).keys()]).toEqual([7])
    // Done with everything but what was acquired: the markers and aborted records never block the SPSO.
    const done = await shareAck({ group: committed, member: 'a', epoch: 2, topicId, partitions: [{ partition: 0, acks: [[3, 4, [ACCEPT]], [6, 7, [ACCEPT, ACCEPT]]] }] })
    expect(done.responses[0]!.partitions[0]!.errorCode).toBe(0)
  })

  it('a deleted topic: its share-partitions go, late acknowledgements get UNKNOWN_TOPIC_ID, the name created again starts afresh', async () => {
    const name = 'share-deleted'
    const oldId = await topicWithId(name)
    await produce(name, ['old-0', 'old-1'])
    const g = await group('g-deleted')
    expect([...acquired(part(await shareFetch({ group: g, member: 'a', epoch: 0, topicId: oldId }))).keys()]).toEqual([0, 1])
    const before = tb.broker.sharePartitions.size
    const deleted = await raw.call(20, 6, (w) => DeleteTopics.encodeDeleteTopicsRequest(w, DeleteTopics.createDeleteTopicsRequest({ topics: [DeleteTopics.createDeleteTopicState({ name })], timeoutMs: 10_000 }), 6), DeleteTopics.decodeDeleteTopicsResponse)
    expect(deleted.responses[0]!.errorCode).toBe(0)
    expect(tb.broker.sharePartitions.size).toBe(before - 1)
    const late = await shareAck({ group: g, member: 'a', epoch: 1, topicId: oldId, partitions: [{ partition: 0, acks: [[0, 1, [ACCEPT]]] }] })
    expect(late.responses[0]!.partitions[0]!.errorCode).toBe(ErrorCode.UNKNOWN_TOPIC_ID)
    const newId = await topicWithId(name)
    expect(newId).not.toBe(oldId)
    await produce(name, ['new-0'])
    // The member's next heartbeat is assigned the topic made again (its state initialized then).
    await join(g, 'a', newId)
    const fresh = part(await shareFetch({ group: g, member: 'a', epoch: 2, topicId: newId, maxWaitMs: 2000 }))
    expect([...acquired(fresh).entries()]).toEqual([[0, 1]])
  })

  it('is advertised at v1 together with ShareGroupHeartbeat (librdkafka uses them as a set)', async () => {
    const versions = await raw.apiVersions()
    const range = (key: number): [number, number] | undefined => {
      const k = versions.apiKeys.find((x) => x.apiKey === key)
      return k === undefined ? undefined : [k.minVersion, k.maxVersion]
    }
    expect([range(76), range(78), range(79)]).toEqual([[1, 1], [1, 1], [1, 1]])
  })
})

describe('share sessions are bounded by group.share.max.share.sessions', () => {
  let small: TestBroker
  beforeAll(async () => {
    small = await startTestBroker(['group.share.max.share.sessions=1'])
  }, 60_000)
  afterAll(async () => {
    await small?.stop()
  })

  it('answers SHARE_SESSION_LIMIT_REACHED when full, and has room again once a session closes or its connection does', async () => {
    const c1 = await RawClient.connect(small.host, small.port)
    const c2 = await RawClient.connect(small.host, small.port)
    expect((await shareFetch({ group: 'g', member: 'a', epoch: 0, maxWaitMs: 0 }, c1)).errorCode).toBe(0)
    // The same member opening again replaces its session: no room needed.
    expect((await shareFetch({ group: 'g', member: 'a', epoch: 0, maxWaitMs: 0 }, c1)).errorCode).toBe(0)
    expect((await shareFetch({ group: 'g', member: 'b', epoch: 0, maxWaitMs: 0 }, c2)).errorCode).toBe(ErrorCode.SHARE_SESSION_LIMIT_REACHED)
    const closed = await c1.call(79, 1, (w) => ShareAcknowledge.encodeShareAcknowledgeRequest(w, ShareAcknowledge.createShareAcknowledgeRequest({ groupId: 'g', memberId: 'a', shareSessionEpoch: -1 }), 1), ShareAcknowledge.decodeShareAcknowledgeResponse)
    expect(closed.errorCode).toBe(0)
    expect((await shareFetch({ group: 'g', member: 'b', epoch: 0, maxWaitMs: 0 }, c2)).errorCode).toBe(0)
    // b's connection closes: its session goes with it, and a may open one.
    c2.close()
    await c2.closedPromise
    // (The broker sees the close a moment after the client does.)
    let code = -1
    for (let i = 0; i < 40 && code !== 0; i++) {
      code = (await shareFetch({ group: 'g', member: 'a', epoch: 0, maxWaitMs: 0 }, c1)).errorCode
      if (code !== 0) await new Promise((r) => setTimeout(r, 50))
    }
    expect(code).toBe(0)
    c1.close()
  })
})

describe('share fetch authorization', () => {
  let secure: TestBroker
  const JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret" user_bob="bob-secret";'
  let openId = ''
  let secretId = ''

  async function login(user: string): Promise<RawClient> {
    const c = await RawClient.connect(secure.host, secure.broker.endpoints[0]!.port)
    expect((await c.call(17, 1, (w) => SaslHandshake.encodeSaslHandshakeRequest(w, { mechanism: 'PLAIN' }, 1), SaslHandshake.decodeSaslHandshakeResponse)).errorCode).toBe(0)
    const auth = await c.call(36, 1, (w) => SaslAuthenticate.encodeSaslAuthenticateRequest(w, { authBytes: Buffer.from(`\u0000${user}\u0000${user}-secret`) }, 1), SaslAuthenticate.decodeSaslAuthenticateResponse)
    expect(auth.errorCode).toBe(0)
    return c
  }

  beforeAll(async () => {
    secure = await startTestBroker([
      'listeners=SASL_PLAINTEXT://127.0.0.1:0',
      'listener.security.protocol.map=SASL_PLAINTEXT:SASL_PLAINTEXT',
      'sasl.enabled.mechanisms=PLAIN',
      `listener.name.sasl_plaintext.plain.sasl.jaas.config=${JAAS}`,
      'authorizer.class.name=kafka.security.authorizer.AclAuthorizer',
      'super.users=User:admin',
      'allow.everyone.if.no.acl.found=false',
    ])
    const admin = await login('admin')
    for (const name of ['sf-open', 'sf-secret']) expect((await admin.createTopic(name, 1)).errorCode).toBe(0)
    const md = await admin.metadata(['sf-open', 'sf-secret'], false, 12)
    openId = md.topics.find((t) => t.name === 'sf-open')!.topicId
    secretId = md.topics.find((t) => t.name === 'sf-secret')!.topicId
    topicNames.set(openId, 'sf-open')
    topicNames.set(secretId, 'sf-secret')
    const allow = (resourceType: number, resourceName: string): CreateAcls.AclCreation =>
      CreateAcls.createAclCreation({ resourceType, resourceName, resourcePatternType: PatternType.LITERAL, principal: 'User:bob', host: '*', operation: AclOperation.READ, permissionType: AclPermission.ALLOW })
    const created = await admin.call(30, 3, (w) => CreateAcls.encodeCreateAclsRequest(w, CreateAcls.createCreateAclsRequest({ creations: [allow(ResourceType.GROUP, 'sf-bob'), allow(ResourceType.TOPIC, 'sf-open')] }), 3), CreateAcls.decodeCreateAclsResponse)
    expect(created.results.map((r) => r.errorCode)).toEqual([0, 0])
    admin.close()
  }, 60_000)

  afterAll(async () => {
    await secure?.stop()
  })

  it('needs Read on the group (GROUP_AUTHORIZATION_FAILED) and on each topic (TOPIC_AUTHORIZATION_FAILED per partition)', async () => {
    const bob = await login('bob')
    expect((await shareFetch({ group: 'sf-other', member: 'b', epoch: 0, topicId: openId, maxWaitMs: 0 }, bob)).errorCode).toBe(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    const ack = await bob.call(79, 1, (w) => ShareAcknowledge.encodeShareAcknowledgeRequest(w, ShareAcknowledge.createShareAcknowledgeRequest({ groupId: 'sf-other', memberId: 'b', shareSessionEpoch: 1 }), 1), ShareAcknowledge.decodeShareAcknowledgeResponse)
    expect(ack.errorCode).toBe(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    const open = await shareFetch({ group: 'sf-bob', member: 'b', epoch: 0, topicId: openId, maxWaitMs: 0 }, bob)
    expect(open.errorCode).toBe(0)
    expect(open.responses[0]!.partitions[0]!.errorCode).toBe(0)
    const secret = await shareFetch({ group: 'sf-bob', member: 'b', epoch: 1, topicId: secretId, maxWaitMs: 0 }, bob)
    expect(secret.errorCode).toBe(0)
    expect(secret.responses[0]!.partitions[0]!.errorCode).toBe(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    const acks = await shareAck({ group: 'sf-bob', member: 'b', epoch: 2, topicId: secretId, partitions: [{ partition: 0, acks: [[0, 0, [ACCEPT]]] }] }, bob)
    expect(acks.responses[0]!.partitions[0]!.errorCode).toBe(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    bob.close()
  })
})
