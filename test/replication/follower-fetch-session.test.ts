// The replica fetcher's side of KIP-227 fetch sessions, through its ports: a scripted leader endpoint that
// records every Fetch and answers as a session-keeping leader would, and an in-memory follower log.
// A full fetch opens the session; incremental fetches name only partitions added or moved since they were
// named, and those the session drops; a session error or a dropped connection goes back to a full fetch.
import { afterEach, describe, expect, it } from 'vitest'
import { ErrorCode } from '../../src/domain/errors.js'
import { createLogger } from '../../src/observability/logger.js'
import type { FollowerFetchAnswer, FollowerFetchRequest, FollowerFetchResult, FollowerLog, LeaderEndpoint } from '../../src/replication/leader-endpoint.js'
import { ReplicaFetcher } from '../../src/replication/replica-fetcher.js'

const SESSION_ID = 4242

/** A follower log per partition that only counts: each append of the leader's bytes adds one offset. */
function countingLog(): FollowerLog & { ends: Map<number, number> } {
  const ends = new Map<number, number>()
  const state = (p: number) => ({ logStartOffset: 0, logEndOffset: ends.get(p) ?? 0, highWatermark: 0, latestEpoch: 0 })
  return {
    ends,
    async append(_t, p) {
      ends.set(p, (ends.get(p) ?? 0) + 1)
      return { ...state(p), lastEpoch: 0 }
    },
    async truncate(_t, p, offset) {
      ends.set(p, offset)
      return state(p)
    },
    async truncateFullyAndStartAt(_t, p, offset) {
      ends.set(p, offset)
      return state(p)
    },
    async endOffsetForEpoch() {
      return { leaderEpoch: 0, endOffset: 0 }
    },
  }
}

type Script = (req: FollowerFetchRequest, n: number) => FollowerFetchResult | Error

/** A leader endpoint answering each Fetch by the script; every request is kept (copied). */
function scriptedLeader(script: Script): { endpoint: LeaderEndpoint; requests: FollowerFetchRequest[] } {
  const requests: FollowerFetchRequest[] = []
  const endpoint: LeaderEndpoint = {
    truncatesOnFetch: true,
    async fetch(req) {
      requests.push({ ...req, partitions: req.partitions.map((p) => ({ ...p })), forgotten: [...req.forgotten] })
      await new Promise((r) => setTimeout(r, 2))
      const answer = script(req, requests.length)
      if (answer instanceof Error) throw answer
      return answer
    },
    offsets: async () => ({ errorCode: ErrorCode.NONE, logEndOffset: 0, logStartOffset: 0 }),
    epochEndOffset: async () => ({ errorCode: ErrorCode.NONE, leaderEpoch: 0, endOffset: 0 }),
    close: () => {},
  }
  return { endpoint, requests }
}

const record = (partition: number): FollowerFetchAnswer => ({ topic: 't', partition, errorCode: ErrorCode.NONE, highWatermark: 1, logStartOffset: 0, records: Buffer.from('x') })
const named = (req: FollowerFetchRequest | undefined): [partition: number, fetchOffset: number][] => (req?.partitions ?? []).map((p) => [p.partition, p.fetchOffset])
const ok = (answers: FollowerFetchAnswer[], sessionId = SESSION_ID): FollowerFetchResult => ({ errorCode: ErrorCode.NONE, sessionId, answers })

async function until(what: string, fn: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!fn()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 2))
  }
}

const fetchers: ReplicaFetcher[] = []
afterEach(async () => {
  await Promise.all(fetchers.splice(0).map((f) => f.stop()))
})

function start(endpoint: LeaderEndpoint, log: FollowerLog, partitions: number[]): ReplicaFetcher {
  const fetcher = new ReplicaFetcher(1, async () => endpoint, log, { maxWaitMs: 0, minBytes: 1, maxBytes: 1 << 20, partitionMaxBytes: 1 << 20, backoffMs: 30 }, createLogger({ level: 'silent' }))
  fetchers.push(fetcher)
  fetcher.add(partitions.map((partition) => ({ topic: 't', partition, leaderEpoch: 5, fetchOffset: 0, lastFetchedEpoch: -1, highWatermark: 0 })))
  return fetcher
}

describe("a replica fetcher's fetch session (KIP-227)", () => {
  it('names every partition once, then only those that moved; drops removed ones; applies answers for partitions it did not name', async () => {
    const log = countingLog()
    let appendTo2 = false
    /** The number of the fetch answered with partition 2's records. */
    let appendedAt = 0
    const { endpoint, requests } = scriptedLeader((_req, n) => {
      if (n === 1) return ok([record(0), { ...record(1), records: Buffer.alloc(0), highWatermark: 0 }, { ...record(2), records: Buffer.alloc(0), highWatermark: 0 }])
      // Partition 2 gets records while the follower names nothing: the session's position answers it.
      if (appendTo2) {
        appendTo2 = false
        appendedAt = n
        return ok([record(2)])
      }
      return ok([])
    })
    const fetcher = start(endpoint, log, [0, 1, 2])
    await until('the second fetch', () => requests.length >= 2)
    // The full fetch: session id 0, epoch 0, every partition. The next: the session, epoch 1, only partition 0 (moved to 1).
    expect([requests[0]!.sessionId, requests[0]!.sessionEpoch, named(requests[0])]).toEqual([0, 0, [[0, 0], [1, 0], [2, 0]]])
    expect([requests[1]!.sessionId, requests[1]!.sessionEpoch, named(requests[1])]).toEqual([SESSION_ID, 1, [[0, 1]]])
    await until('an idle fetch', () => requests.length >= 3)
    expect([requests[2]!.sessionEpoch, named(requests[2]), requests[2]!.forgotten]).toEqual([2, [], []])
    appendTo2 = true
    await until('partition 2 appended', () => log.ends.get(2) === 1)
    await until('the fetch after', () => requests.length > appendedAt)
    // The fetch right after names partition 2 at its new offset, and only it.
    expect(named(requests[appendedAt])).toEqual([[2, 1]])
    // A removed partition is dropped from the session by the next fetch, once.
    const afterRemove = requests.length
    await fetcher.remove(['t\u00001'])
    await until('two fetches after the removal', () => requests.length >= afterRemove + 2)
    const forgotten = requests.slice(afterRemove).map((r) => r.forgotten)
    expect(forgotten[0]).toEqual([{ topic: 't', partition: 1 }])
    expect(forgotten[1]).toEqual([])
    expect(log.ends.get(0)).toBe(1)
  })

  it('goes back to a full fetch after a session error or a dropped connection (closing the old session then)', async () => {
    const log = countingLog()
    let fail: 'not-found' | 'drop' | undefined
    /** The number of the fetch that failed last. */
    let failedAt = 0
    const { endpoint, requests } = scriptedLeader((req, n) => {
      if (fail === 'not-found') {
        fail = undefined
        failedAt = n
        return { errorCode: ErrorCode.FETCH_SESSION_ID_NOT_FOUND, sessionId: 0, answers: [] }
      }
      if (fail === 'drop') {
        fail = undefined
        failedAt = n
        return new Error('connection closed')
      }
      return ok(req.sessionEpoch === 0 ? req.partitions.map((p) => ({ ...record(p.partition), records: Buffer.alloc(0), highWatermark: 0 })) : [])
    })
    start(endpoint, log, [0, 1])
    await until('an incremental fetch', () => requests.some((r) => r.sessionEpoch > 0))
    fail = 'not-found'
    await until('the fetch after the error', () => failedAt > 0 && requests.length > failedAt)
    // FETCH_SESSION_ID_NOT_FOUND: a full fetch naming no session.
    const afterError = requests[failedAt]!
    expect([afterError.sessionId, afterError.sessionEpoch, named(afterError)]).toEqual([0, 0, [[0, 0], [1, 0]]])
    const errorAt = failedAt
    await until('an incremental fetch again', () => requests.slice(errorAt + 1).some((r) => r.sessionEpoch > 0))
    fail = 'drop'
    await until('the fetch after reconnecting', () => failedAt > errorAt && requests.length > failedAt)
    // A dropped connection: a full fetch that closes the session it had (Kafka's nextCloseExisting).
    const afterDrop = requests[failedAt]!
    expect([afterDrop.sessionId, afterDrop.sessionEpoch, named(afterDrop)]).toEqual([SESSION_ID, 0, [[0, 0], [1, 0]]])
  })

  it('idle incremental rounds name nothing; a partition held back by an error leaves the session and is named again once ready; a re-added one is named at its new epoch', async () => {
    const log = countingLog()
    let errorFor1 = false
    let erroredAt = 0
    const { endpoint, requests } = scriptedLeader((req, n) => {
      if (req.sessionEpoch === 0) return ok(req.partitions.map((p) => ({ ...record(p.partition), records: Buffer.alloc(0), highWatermark: 0 })))
      if (errorFor1) {
        errorFor1 = false
        erroredAt = n
        return ok([{ ...record(1), errorCode: ErrorCode.NOT_LEADER_OR_FOLLOWER, records: Buffer.alloc(0) }])
      }
      return ok([])
    })
    const fetcher = start(endpoint, log, [0, 1, 2])
    await until('idle incremental fetches', () => requests.filter((r) => r.sessionEpoch > 0).length >= 3)
    for (const r of requests.filter((x) => x.sessionEpoch > 0)) expect([named(r), r.forgotten]).toEqual([[], []])
    // An error holds partition 1 back for replica.fetch.backoff.ms (30 ms here): the rounds meanwhile drop
    // it from the session, and the first round after names it again at its position.
    errorFor1 = true
    await until('partition 1 named again', () => erroredAt > 0 && requests.slice(erroredAt).some((r) => named(r).some(([p]) => p === 1)))
    const after = requests.slice(erroredAt)
    const droppedAt = after.findIndex((r) => r.forgotten.some((f) => f.partition === 1))
    const namedAt = after.findIndex((r) => named(r).some(([p]) => p === 1))
    expect(droppedAt).toBeGreaterThanOrEqual(0)
    expect(namedAt).toBeGreaterThan(droppedAt)
    expect(named(after[namedAt])).toEqual([[1, 0]])
    // Idle again: nothing named.
    const idleFrom = requests.length
    await until('idle fetches again', () => requests.length >= idleFrom + 3)
    for (const r of requests.slice(idleFrom + 1)) expect(named(r)).toEqual([])
    // A new leader epoch for partition 2 (the replica manager adds it again): named with it.
    const readdFrom = requests.length
    fetcher.add([{ topic: 't', partition: 2, leaderEpoch: 6, fetchOffset: 0, lastFetchedEpoch: -1, highWatermark: 0 }])
    await until('partition 2 named at epoch 6', () => requests.slice(readdFrom).some((r) => r.partitions.some((p) => p.partition === 2 && p.currentLeaderEpoch === 6)))
    const idleAgain = requests.length
    await until('idle after the re-add', () => requests.length >= idleAgain + 3)
    for (const r of requests.slice(idleAgain + 1)) expect(named(r)).toEqual([])
  })

  it('keeps fetching in full from a leader that opens no session (session id 0 in every answer)', async () => {
    const log = countingLog()
    const { endpoint, requests } = scriptedLeader((req) => ok(req.partitions.map((p) => ({ ...record(p.partition), records: Buffer.alloc(0), highWatermark: 0 })), 0))
    start(endpoint, log, [0, 1])
    await until('three fetches', () => requests.length >= 3)
    for (const r of requests.slice(0, 3)) expect([r.sessionId, r.sessionEpoch, named(r), r.forgotten]).toEqual([0, 0, [[0, 0], [1, 0]], []])
  })
})
