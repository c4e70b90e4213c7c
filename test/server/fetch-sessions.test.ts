// Fetch sessions (KIP-227) over raw frames: a full fetch opens a session, incremental fetches name only
// what changed and are answered only the partitions with something new, forgotten partitions leave the
// session, and session ids and epochs are checked as Kafka checks them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ErrorCode } from '../../src/domain/errors.js'
import * as Fetch from '../../src/protocol/messages/01-fetch.gen.js'
import { decodeAllRecords, RawClient, recordsBuffer, simpleBatch, startTestBroker, type TestBroker } from '../harness/index.js'

interface Wanted {
  topic?: string
  topicId?: string
  partition: number
  offset: number
}

describe('fetch sessions', () => {
  let tb: TestBroker
  let raw: RawClient

  beforeAll(async () => {
    tb = await startTestBroker()
    raw = await RawClient.connect(tb.host, tb.port)
    expect((await raw.createTopic('fs', 3)).errorCode).toBe(0)
    expect((await raw.createTopic('fs-other', 1)).errorCode).toBe(0)
  })

  afterAll(async () => {
    raw?.close()
    await tb?.stop()
  })

  const idOf = (name: string): string => tb.broker.topics.get(name)!.topicId

  function fetch(
    sessionId: number,
    sessionEpoch: number,
    wanted: Wanted[],
    opts: { forget?: Wanted[]; version?: number; minBytes?: number; maxWaitMs?: number } = {},
  ): Promise<Fetch.FetchResponse> {
    const version = opts.version ?? 12
    const byTopic = (list: Wanted[]): Map<string, Wanted[]> => {
      const m = new Map<string, Wanted[]>()
      for (const w of list) {
        const key = version >= 13 ? (w.topicId ?? idOf(w.topic!)) : w.topic!
        m.set(key, [...(m.get(key) ?? []), w])
      }
      return m
    }
    const topicFields = (key: string): { topic: string } | { topicId: string } => (version >= 13 ? { topicId: key } : { topic: key })
    const req = Fetch.createFetchRequest({
      maxWaitMs: opts.maxWaitMs ?? 0,
      minBytes: opts.minBytes ?? 0,
      maxBytes: 1 << 20,
      sessionId,
      sessionEpoch,
      topics: [...byTopic(wanted)].map(([key, ps]) =>
        Fetch.createFetchTopic({ ...topicFields(key), partitions: ps.map((p) => Fetch.createFetchPartition({ partition: p.partition, fetchOffset: BigInt(p.offset), partitionMaxBytes: 1 << 16 })) }),
      ),
      forgottenTopicsData: [...byTopic(opts.forget ?? [])].map(([key, ps]) => Fetch.createForgottenTopic({ ...topicFields(key), partitions: ps.map((p) => p.partition) })),
    })
    return raw.call(1, version, (w) => Fetch.encodeFetchRequest(w, req, version), Fetch.decodeFetchResponse, (opts.maxWaitMs ?? 0) + 10000)
  }

  /** [topic or id, partition, highWatermark, values] of each partition answered. */
  function answered(res: Fetch.FetchResponse): [string, number, bigint, string[]][] {
    return res.responses.flatMap((t) =>
      t.partitions.map((p): [string, number, bigint, string[]] => [t.topic !== '' ? t.topic : t.topicId, p.partitionIndex, p.highWatermark, decodeAllRecords(recordsBuffer(p)).map((r) => r.value!.toString())]),
    )
  }

  const all: Wanted[] = [0, 1, 2].map((partition) => ({ topic: 'fs', partition, offset: 0 }))

  it('opens a session with a full fetch and then answers only what changed', async () => {
    expect((await raw.produce('fs', 0, simpleBatch('a', 2))).errorCode).toBe(0)
    const full = await fetch(0, 0, all)
    expect(full.errorCode).toBe(0)
    expect(full.sessionId).toBeGreaterThan(0)
    expect(answered(full)).toEqual([['fs', 0, 2n, ['a-0', 'a-1']], ['fs', 1, 0n, []], ['fs', 2, 0n, []]])
    const id = full.sessionId

    // The client moves partition 0 on; nothing new anywhere: an empty answer.
    const idle = await fetch(id, 1, [{ topic: 'fs', partition: 0, offset: 2 }])
    expect(idle).toMatchObject({ errorCode: 0, sessionId: id })
    expect(answered(idle)).toEqual([])

    // New records on partition 2 only: only partition 2 is answered, from its remembered offset.
    expect((await raw.produce('fs', 2, simpleBatch('c', 1))).errorCode).toBe(0)
    const changed = await fetch(id, 2, [])
    expect(answered(changed)).toEqual([['fs', 2, 1n, ['c-0']]])
    // Its offset stays 0 until the client says otherwise, so the records come again.
    expect(answered(await fetch(id, 3, []))).toEqual([['fs', 2, 1n, ['c-0']]])
    expect(answered(await fetch(id, 4, [{ topic: 'fs', partition: 2, offset: 1 }]))).toEqual([])

    // A partition added to the session is answered the first time in any case.
    const added = await fetch(id, 5, [{ topic: 'fs-other', partition: 0, offset: 0 }])
    expect(answered(added)).toEqual([['fs-other', 0, 0n, []]])

    // Forgotten partitions are not answered even when they change.
    expect((await raw.produce('fs', 1, simpleBatch('b', 1))).errorCode).toBe(0)
    expect((await raw.produce('fs-other', 0, simpleBatch('o', 1))).errorCode).toBe(0)
    const forgot = await fetch(id, 6, [], { forget: [{ topic: 'fs', partition: 1, offset: 0 }] })
    expect(answered(forgot)).toEqual([['fs-other', 0, 1n, ['o-0']]])
  })

  it('long-polls an incremental fetch over every partition of the session', async () => {
    const full = await fetch(0, 0, [{ topic: 'fs-other', partition: 0, offset: 1 }])
    const id = full.sessionId
    const started = Date.now()
    const waiting = fetch(id, 1, [], { minBytes: 1, maxWaitMs: 5000 })
    setTimeout(() => void raw.produce('fs-other', 0, simpleBatch('late', 1)), 200)
    const res = await waiting
    expect(Date.now() - started).toBeLessThan(4000)
    expect(answered(res)).toEqual([['fs-other', 0, 2n, ['late-0']]])
  })

  it('checks session ids and epochs', async () => {
    const id = (await fetch(0, 0, all)).sessionId
    expect((await fetch(id, 1, [])).errorCode).toBe(0)
    // The same epoch again (a duplicate) and one skipped ahead.
    expect(await fetch(id, 1, [])).toMatchObject({ errorCode: ErrorCode.INVALID_FETCH_SESSION_EPOCH, sessionId: 0, responses: [] })
    expect(await fetch(id, 5, [])).toMatchObject({ errorCode: ErrorCode.INVALID_FETCH_SESSION_EPOCH, sessionId: 0 })
    // The session is still there at its epoch.
    expect((await fetch(id, 2, [])).errorCode).toBe(0)
    // An id the broker never gave.
    expect(await fetch(id + 1, 1, [])).toMatchObject({ errorCode: ErrorCode.FETCH_SESSION_ID_NOT_FOUND, sessionId: 0, responses: [] })
    expect(await fetch(0, 3, all)).toMatchObject({ errorCode: ErrorCode.FETCH_SESSION_ID_NOT_FOUND })
  })

  it('a full fetch naming a session closes it; epoch -1 opens none; forgetting everything closes it', async () => {
    const first = (await fetch(0, 0, all)).sessionId
    const second = await fetch(first, 0, all)
    expect(second.sessionId).toBeGreaterThan(0)
    expect(second.sessionId).not.toBe(first)
    expect((await fetch(first, 1, [])).errorCode).toBe(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)

    const closing = await fetch(second.sessionId, -1, all)
    expect(closing).toMatchObject({ errorCode: 0, sessionId: 0 })
    expect(answered(closing)).toHaveLength(3)
    expect((await fetch(second.sessionId, 1, [])).errorCode).toBe(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)

    const third = (await fetch(0, 0, [{ topic: 'fs', partition: 0, offset: 0 }])).sessionId
    const emptied = await fetch(third, 1, [], { forget: [{ topic: 'fs', partition: 0, offset: 0 }] })
    expect(emptied).toMatchObject({ errorCode: 0, sessionId: 0, responses: [] })
    expect((await fetch(third, 2, [])).errorCode).toBe(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
  })

  it('sessions of Fetch v13+ go by topic id; a deleted topic then answers UNKNOWN_TOPIC_ID; versions may not mix', async () => {
    expect((await raw.createTopic('fs-doomed', 1)).errorCode).toBe(0)
    const doomedId = idOf('fs-doomed')
    const full = await fetch(0, 0, [{ topic: 'fs', partition: 0, offset: 0 }, { topic: 'fs-doomed', partition: 0, offset: 0 }], { version: 13 })
    expect(full.responses.map((t) => t.topicId)).toEqual([idOf('fs'), doomedId])
    const id = full.sessionId
    expect(answered(await fetch(id, 1, [{ topic: 'fs', partition: 0, offset: 2 }], { version: 17 }))).toEqual([])

    await tb.broker.topics.delete('fs-doomed')
    await tb.broker.topics.create({ name: 'fs-doomed', numPartitions: 1, replicationFactor: 1, configs: {}, validateOnly: false })
    const gone = await fetch(id, 2, [], { version: 13 })
    expect(gone.responses.map((t) => [t.topicId, t.partitions.map((p) => p.errorCode)])).toEqual([[doomedId, [ErrorCode.UNKNOWN_TOPIC_ID]]])
    // Errors are answered every time, until the client forgets the partition.
    expect(answered(await fetch(id, 3, [], { version: 13 }))).toHaveLength(1)
    expect(answered(await fetch(id, 4, [], { version: 13, forget: [{ topicId: doomedId, partition: 0, offset: 0 }] }))).toEqual([])

    expect(await fetch(id, 5, [], { version: 12 })).toMatchObject({ errorCode: ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR, sessionId: 0 })
    const byName = (await fetch(0, 0, all, { version: 12 })).sessionId
    expect((await fetch(byName, 1, [], { version: 13 })).errorCode).toBe(ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR)
  })

  it('v4-6 and sessionless v7+ fetches answer every partition with session id 0', async () => {
    for (const [version, epoch] of [[4, -1], [6, -1], [7, -1], [11, -1]]) {
      const res = await fetch(0, epoch!, all, { version })
      expect(res.sessionId).toBe(0)
      expect(answered(res)).toHaveLength(3)
    }
  })
})

describe('fetch sessions with max.incremental.fetch.session.cache.slots', () => {
  it('opens no more sessions than the cache holds (and none at 0)', async () => {
    for (const slots of [0, 2]) {
      const tb = await startTestBroker([`max.incremental.fetch.session.cache.slots=${slots}`])
      const raw = await RawClient.connect(tb.host, tb.port)
      try {
        expect((await raw.createTopic('slots', 1)).errorCode).toBe(0)
        const req = Fetch.createFetchRequest({
          maxBytes: 1 << 20,
          sessionId: 0,
          sessionEpoch: 0,
          topics: [Fetch.createFetchTopic({ topic: 'slots', partitions: [Fetch.createFetchPartition({ partition: 0, partitionMaxBytes: 1024 })] })],
        })
        const ids: number[] = []
        for (let i = 0; i < 4; i++) {
          const res = await raw.call(1, 12, (w) => Fetch.encodeFetchRequest(w, req, 12), Fetch.decodeFetchResponse)
          expect(res.errorCode).toBe(0)
          ids.push(res.sessionId)
        }
        // The first sessions are recent and as large as the newcomers: nothing is evicted.
        expect(ids.filter((id) => id !== 0)).toHaveLength(slots)
        expect(ids.slice(slots)).toEqual(new Array(4 - slots).fill(0))
      } finally {
        raw.close()
        await tb.stop()
      }
    }
  })
})
