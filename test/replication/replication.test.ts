// The replication rules without sockets: the leader's view of a partition (Kafka's HW, ISR shrink and
// expansion rules), the acks=all purgatory, and a ReplicaFetcher driven through its ports against real
// leader and follower logs on disk (truncation by leader epoch of a diverged ex-leader, out of range,
// byte-identical result, the follower's replication throttle and ReplicationBytesInPerSec).
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { ErrorCode, KafkaError } from '../../src/domain/errors.js'
import { createLogger } from '../../src/observability/logger.js'
import { Counter } from '../../src/observability/metrics.js'
import { DelayedProducePurgatory } from '../../src/replication/delayed-produce.js'
import type { FollowerFetchAnswer, FollowerFetchResult, FollowerLog, LeaderEndpoint } from '../../src/replication/leader-endpoint.js'
import { PartitionLeaderState } from '../../src/replication/partition.js'
import { ReplicaFetcher, type FollowerThrottle } from '../../src/replication/replica-fetcher.js'
import { ReplicationQuota } from '../../src/replication/replication-quota.js'
import type { LogManager, PartitionLog } from '../../src/storage/index.js'
import { T0, makeBatch, openManager, regionBytes, tempDir } from '../storage/helpers.js'

const LAG = 1000

function leaderState(over: Partial<ConstructorParameters<typeof PartitionLeaderState>[0]> = {}): PartitionLeaderState {
  return new PartitionLeaderState({
    topic: 't', partition: 0, brokerId: 1, leaderEpoch: 3, partitionEpoch: 7, replicas: [1, 2, 3], isr: [1, 2, 3],
    minInsyncReplicas: 2, logEndOffset: 10, highWatermark: 10, now: 0, ...over,
  })
}

describe("the leader's view of a partition", () => {
  it('moves the HW to the smallest LEO of the ISR, never back, and not while the ISR is below min ISR', () => {
    const s = leaderState()
    s.logEndOffset = 20
    // Followers' LEOs are unknown until they fetch: the HW waits for them.
    expect(s.computeHighWatermark(100, LAG)).toBe(10)
    s.updateFollower(2, 20, 20, 100)
    expect(s.computeHighWatermark(100, LAG)).toBe(10)
    s.updateFollower(3, 15, 20, 100)
    expect(s.computeHighWatermark(100, LAG)).toBe(15)
    s.highWatermark = 15
    s.updateFollower(3, 12, 20, 110) // a truncated follower cannot lower it
    expect(s.computeHighWatermark(110, LAG)).toBe(15)
    s.isr = [1]
    s.updateFollower(3, 20, 20, 120)
    expect(s.computeHighWatermark(120, LAG)).toBe(15) // ISR 1 < min ISR 2
    expect(s.underMinIsr).toBe(true)
  })

  it("counts a follower caught up when it reaches the leader's LEO of now or of its previous fetch", () => {
    const s = leaderState()
    s.logEndOffset = 20
    s.updateFollower(2, 20, 20, 1000)
    expect(s.followers.get(2)!.lastCaughtUpMs).toBe(1000)
    // The leader appended meanwhile; the follower reached what the leader had at its previous fetch.
    s.updateFollower(2, 20, 25, 1500)
    expect(s.followers.get(2)!.lastCaughtUpMs).toBe(1000)
    s.updateFollower(2, 25, 30, 1900)
    expect(s.followers.get(2)!.lastCaughtUpMs).toBe(1500)
    // Follower 3 never fetched: out of sync after the lag (it counted as caught up when the leader started).
    s.updateFollower(2, 30, 30, 2000)
    expect(s.outOfSyncReplicas(900, LAG)).toEqual([])
    expect(s.outOfSyncReplicas(2000, LAG)).toEqual([3])
  })

  it('lets a follower join once it reached the HW and the epoch start; the maximal ISR counts it meanwhile', () => {
    const s = leaderState({ isr: [1, 2], logEndOffset: 10, highWatermark: 10 })
    s.logEndOffset = 30
    s.highWatermark = 25
    s.updateFollower(3, 20, 30, 100)
    expect(s.mayJoinIsr(3)).toBe(false)
    s.updateFollower(3, 26, 30, 200)
    expect(s.mayJoinIsr(3)).toBe(true)
    s.pending = { isr: [1, 2, 3], expands: true }
    expect(s.maximalIsr()).toEqual([1, 2, 3])
    s.updateFollower(2, 30, 30, 200)
    expect(s.computeHighWatermark(200, LAG)).toBe(26)
  })

  it('takes an ISR from the controller in place: progress kept, a replica that left holds the HW back no more', () => {
    const s = leaderState()
    s.logEndOffset = 20
    s.updateFollower(2, 20, 20, 5000)
    s.updateFollower(3, 15, 20, 5000) // broker 3 stops fetching here (a controlled shutdown)
    expect(s.computeHighWatermark(5000, LAG)).toBe(15)
    s.applyControllerIsr([1, 2], 8)
    expect(s).toMatchObject({ isr: [1, 2], partitionEpoch: 8, leaderEpoch: 3 })
    expect(s.followers.get(2)!.leo).toBe(20)
    expect(s.computeHighWatermark(5010, LAG)).toBe(20)
    // A late fetch of the broker that left (in flight when it shut down) does not make it one about to join.
    s.logEndOffset = 30
    s.updateFollower(3, 22, 30, 5020) // caught up by the previous-fetch rule, behind follower 2
    s.updateFollower(2, 25, 30, 5020)
    expect(s.computeHighWatermark(5020, LAG)).toBe(25)
    // Once an ISR with it is committed again, it counts as before.
    s.applyCommittedIsr([1, 2, 3], 9)
    expect(s.removedByController.size).toBe(0)
  })

  it('lets appends move the HW only while the maximal ISR is the leader alone and min ISR allows it', () => {
    expect(leaderState({ replicas: [1], isr: [1], minInsyncReplicas: 2 }).highWatermarkFollowsLeo).toBe(true)
    expect(leaderState({ isr: [1], minInsyncReplicas: 1 }).highWatermarkFollowsLeo).toBe(true)
    expect(leaderState({ isr: [1], minInsyncReplicas: 2 }).highWatermarkFollowsLeo).toBe(false)
    const s = leaderState({ isr: [1], minInsyncReplicas: 1 })
    s.pending = { isr: [1, 2], expands: true }
    expect(s.highWatermarkFollowsLeo).toBe(false)
  })
})

describe('the acks=all purgatory', () => {
  it('answers in offset order as the HW passes, NOT_ENOUGH_REPLICAS_AFTER_APPEND below min ISR, REQUEST_TIMED_OUT at the timeout', async () => {
    const p = new DelayedProducePurgatory()
    const a = p.wait('t-0', 5, 10_000)
    const b = p.wait('t-0', 9, 10_000)
    const c = p.wait('t-1', 3, 10_000)
    const d = p.wait('t-2', 3, 30)
    p.complete('t-0', 6, true)
    expect(await a).toBe(ErrorCode.NONE)
    expect(p.size).toBe(3)
    p.complete('t-0', 9, false)
    expect(await b).toBe(ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND)
    p.failAll('t-1', ErrorCode.NOT_LEADER_OR_FOLLOWER)
    expect(await c).toBe(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    expect(await d).toBe(ErrorCode.REQUEST_TIMED_OUT)
    expect(p.size).toBe(0)
  })
})

// ---------------------------------------------------------------- a fetcher between two real logs

let dirs: ReturnType<typeof tempDir>[] = []
afterEach(() => {
  for (const d of dirs) d.cleanup()
  dirs = []
})

function open(): LogManager {
  const d = tempDir('skein-fetcher-')
  dirs.push(d)
  return openManager(d.path, { segmentBytes: 600 }, { highWatermarkFollowsLeo: false })
}

/** A LeaderEndpoint answering from a leader log in this process, as the leader's Fetch handler does. */
function localLeader(lm: LogManager, leader: PartitionLog, leaderEpoch: () => number, truncatesOnFetch = true): LeaderEndpoint {
  return {
    truncatesOnFetch,
    async epochEndOffset(_t, _p, currentLeaderEpoch, epoch) {
      if (currentLeaderEpoch < leaderEpoch()) return { errorCode: ErrorCode.FENCED_LEADER_EPOCH, leaderEpoch: -1, endOffset: -1 }
      const end = leader.endOffsetForEpoch(epoch)
      return { errorCode: ErrorCode.NONE, leaderEpoch: end.leaderEpoch, endOffset: end.endOffset }
    },
    // Sessionless (answers session id 0): every fetch names every partition.
    async fetch({ partitions }): Promise<FollowerFetchResult> {
      await new Promise((r) => setTimeout(r, 5))
      return { errorCode: ErrorCode.NONE, sessionId: 0, answers: partitions.map((p) => {
        const base = { topic: p.topic, partition: p.partition, highWatermark: leader.highWatermark, logStartOffset: leader.logStartOffset, records: Buffer.alloc(0) }
        if (p.currentLeaderEpoch < leaderEpoch()) return { ...base, errorCode: ErrorCode.FENCED_LEADER_EPOCH }
        try {
          // Fetch v11 (before the diverging epoch): the leader reads from the offset, whatever the follower has.
          const r: ReturnType<PartitionLog['readForFollower']> = truncatesOnFetch ? leader.readForFollower(p.fetchOffset, p.maxBytes, p.lastFetchedEpoch) : leader.read(p.fetchOffset, p.maxBytes, { logEnd: true })
          const records = regionBytes(r)
          lm.releaseLease(r.leaseId)
          const answer: FollowerFetchAnswer = { ...base, errorCode: ErrorCode.NONE, records }
          if (r.divergingEpoch !== undefined) answer.divergingEpoch = { epoch: r.divergingEpoch.leaderEpoch, endOffset: r.divergingEpoch.endOffset }
          return answer
        } catch (err) {
          return { ...base, errorCode: (err as KafkaError).code }
        }
      }) }
    },
    async offsets() {
      return { errorCode: ErrorCode.NONE, logEndOffset: leader.logEndOffset, logStartOffset: leader.logStartOffset }
    },
    close() {},
  }
}

function followerLog(log: PartitionLog): FollowerLog {
  const state = () => ({ ...log.replicaState() })
  return {
    async append(_t, _p, records, hw, start) {
      const r = log.appendAsFollower(records)
      log.maybeIncrementHighWatermark(hw)
      log.maybeIncrementLogStartOffset(start)
      return { ...state(), lastEpoch: r.lastEpoch }
    },
    async truncate(_t, _p, offset) {
      log.truncateTo(offset)
      return state()
    },
    async truncateFullyAndStartAt(_t, _p, offset) {
      log.truncateFullyAndStartAt(offset)
      return state()
    },
    async endOffsetForEpoch(_t, _p, epoch) {
      return log.endOffsetForEpoch(epoch)
    },
  }
}

function logBytes(log: PartitionLog): Buffer {
  return Buffer.concat(readdirSync(log.dir).filter((n) => n.endsWith('.log')).sort().map((n) => readFileSync(join(log.dir, n))))
}

async function until(what: string, fn: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!fn()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 10))
  }
}

describe('a replica fetcher', () => {
  it.each([
    ['the diverging epoch of Fetch v12', true],
    ['OffsetForLeaderEpoch before fetching (Fetch v11, Kafka before 2.7)', false],
  ])("truncates a returning ex-leader's unreplicated tail through %s and ends byte-identical to the new leader", async (_how, truncatesOnFetch) => {
    const lm = open()
    const fm = open()
    const leader = lm.create('t', 0)
    const exLeader = fm.create('t', 0)
    // Epoch 0: both have offsets 0..5 (the ex-leader led and its follower copied them).
    exLeader.assignLeaderEpoch(0)
    for (let i = 0; i < 3; i++) exLeader.append(makeBatch(`a${i}`, 2), { leaderEpoch: 0, now: T0 })
    leader.appendAsFollower(regionBytes(exLeader.read(0, 1 << 20, { logEnd: true })))
    // The ex-leader wrote 6..9 that nobody copied, then died; the other replica leads at epoch 1.
    for (let i = 0; i < 2; i++) exLeader.append(makeBatch(`lost${i}`, 2), { leaderEpoch: 0, now: T0 })
    leader.assignLeaderEpoch(1)
    for (let i = 0; i < 6; i++) leader.append(makeBatch(`b${i}`, 3), { leaderEpoch: 1, now: T0 })
    leader.setHighWatermark(leader.logEndOffset)

    const fetcher = new ReplicaFetcher(1, async () => localLeader(lm, leader, () => 1, truncatesOnFetch), followerLog(exLeader), {
      maxWaitMs: 0, minBytes: 1, maxBytes: 1 << 20, partitionMaxBytes: 200, backoffMs: 20,
    }, createLogger({ level: 'silent' }))
    fetcher.add([{ topic: 't', partition: 0, leaderEpoch: 1, fetchOffset: exLeader.logEndOffset, lastFetchedEpoch: exLeader.latestEpoch, highWatermark: 0 }])
    await until('the follower caught up', () => exLeader.logEndOffset === leader.logEndOffset && exLeader.highWatermark === leader.highWatermark)
    await fetcher.stop()
    expect(logBytes(exLeader).equals(logBytes(leader))).toBe(true)
    expect(exLeader.epochEntries()).toEqual(leader.epochEntries())
    expect(exLeader.epochEntries()).toEqual([{ epoch: 0, startOffset: 0 }, { epoch: 1, startOffset: 6 }])
    await lm.close()
    await fm.close()
  })

  it("starts again at the leader's log start when the leader no longer has the fetch offset; stops on removal", async () => {
    const lm = open()
    const fm = open()
    const leader = lm.create('t', 0)
    const follower = fm.create('t', 0)
    leader.assignLeaderEpoch(2)
    for (let i = 0; i < 8; i++) leader.append(makeBatch(`c${i}`, 2), { leaderEpoch: 2, now: T0 })
    leader.setHighWatermark(leader.logEndOffset)
    leader.deleteRecordsBefore(10)
    const fetcher = new ReplicaFetcher(1, async () => localLeader(lm, leader, () => 2), followerLog(follower), {
      maxWaitMs: 0, minBytes: 1, maxBytes: 1 << 20, partitionMaxBytes: 1 << 20, backoffMs: 20,
    }, createLogger({ level: 'silent' }))
    fetcher.add([{ topic: 't', partition: 0, leaderEpoch: 2, fetchOffset: 0, lastFetchedEpoch: -1, highWatermark: 0 }])
    await until('the follower caught up', () => follower.logEndOffset === leader.logEndOffset)
    expect(follower.logStartOffset).toBe(leader.logStartOffset)
    await fetcher.remove(['t\u00000'])
    leader.append(makeBatch('late', 1), { leaderEpoch: 2, now: T0 })
    await new Promise((r) => setTimeout(r, 100))
    expect(follower.logEndOffset).toBe(leader.logEndOffset - 1)
    await fetcher.stop()
    await lm.close()
    await fm.close()
  })

  it("counts every listed replica's bytes against follower.replication.throttled.rate but holds back only one not at the leader's HW; counts all bytes in", async () => {
    const lm = open()
    const fm = open()
    const leaders = [lm.create('t', 0), lm.create('t', 1)]
    const followers = [fm.create('t', 0), fm.create('t', 1)]
    for (const l of leaders) l.assignLeaderEpoch(0)
    for (let i = 0; i < 20; i++) leaders[1]!.append(makeBatch(`far${i}`, 2, T0, 40), { leaderEpoch: 0, now: T0 })
    leaders[0]!.append(makeBatch('start', 2), { leaderEpoch: 0, now: T0 })
    // Partition 0's follower already has the leader's log: its first answer finds it at the HW, in sync.
    followers[0]!.appendAsFollower(regionBytes(leaders[0]!.read(0, 1 << 20, { logEnd: true })))
    for (const l of leaders) l.setHighWatermark(l.logEndOffset)
    const alreadyCopied = followers[0]!.logEndOffset

    let bound = 1
    const quota = new ReplicationQuota({ brokerId: 1, bound: () => bound, throttledReplicas: () => '0:1,1:1', samples: 11, sampleMs: 1000 })
    const recorded: number[] = []
    const throttle: FollowerThrottle = {
      listsReplicas: (topic) => quota.listsReplicas(topic),
      isThrottled: (topic, partition) => quota.isThrottled(topic, partition),
      isQuotaExceeded: () => quota.isQuotaExceeded(),
      record: (bytes) => {
        recorded.push(bytes)
        quota.record(bytes)
      },
    }
    const bytesIn = new Counter()
    const byPartition = leaders.map((l) => localLeader(lm, l, () => 0))
    const endpoint: LeaderEndpoint = {
      ...byPartition[0]!,
      fetch: async (req, s) => {
        const answers = await Promise.all(req.partitions.map((p) => byPartition[p.partition]!.fetch({ ...req, partitions: [p] }, s)))
        return { errorCode: ErrorCode.NONE, sessionId: 0, answers: answers.flatMap((a) => a.answers) }
      },
    }
    const fetcher = new ReplicaFetcher(1, async () => endpoint, { ...followerLog(followers[0]!), append: (t, p, ...rest) => followerLog(followers[p]!).append(t, p, ...rest) }, {
      maxWaitMs: 0, minBytes: 1, maxBytes: 1 << 20, partitionMaxBytes: 300, backoffMs: 20,
    }, createLogger({ level: 'silent' }), throttle, bytesIn)
    fetcher.add(followers.map((f, partition) => ({ topic: 't', partition, leaderEpoch: 0, fetchOffset: f.logEndOffset, lastFetchedEpoch: f.latestEpoch, highWatermark: 0 })))
    // The first fetch passes (nothing measured yet) and puts the rate far over 1 B/s.
    await until('the first fetch of partition 1', () => followers[1]!.logEndOffset > 0)
    const firstFetch = followers[1]!.logEndOffset
    expect(firstFetch).toBeLessThan(leaders[1]!.logEndOffset)
    // Partition 0 stays in sync: what its leader appends is fetched at once, and its bytes count too.
    let appended = 0
    for (let i = 0; i < 5; i++) {
      const batch = makeBatch(`near${i}`, 1)
      appended += batch.length
      leaders[0]!.append(batch, { leaderEpoch: 0, now: T0 })
      leaders[0]!.setHighWatermark(leaders[0]!.logEndOffset)
      await until(`partition 0 at ${leaders[0]!.logEndOffset}`, () => followers[0]!.logEndOffset === leaders[0]!.logEndOffset, 2000)
    }
    expect(followers[1]!.logEndOffset).toBe(firstFetch)
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0)
    expect(sum(recorded)).toBe(logBytes(followers[1]!).length + appended)
    expect(bytesIn.value).toBe(sum(recorded))
    expect(quota.rate()).toBeGreaterThan(1)

    bound = 2 ** 63 // unthrottled: partition 1 catches up
    await until('partition 1 caught up', () => followers[1]!.logEndOffset === leaders[1]!.logEndOffset)
    await fetcher.stop()
    expect(logBytes(followers[1]!).equals(logBytes(leaders[1]!))).toBe(true)
    expect(bytesIn.value).toBe(logBytes(leaders[1]!).length + appended)
    expect(followers[0]!.logEndOffset).toBeGreaterThan(alreadyCopied)
    await lm.close()
    await fm.close()
  })

  it('closes a connection to the leader that completes after stop (it would keep a stopped broker alive)', async () => {
    let finishConnect: (e: LeaderEndpoint) => void = () => {}
    let connecting = false
    let closed = 0
    const endpoint: LeaderEndpoint = {
      truncatesOnFetch: true,
      fetch: () => new Promise(() => {}),
      offsets: async () => ({ errorCode: 0, logEndOffset: 0, logStartOffset: 0 }),
      epochEndOffset: async () => ({ errorCode: 0, leaderEpoch: -1, endOffset: -1 }),
      close: () => void closed++,
    }
    const never = (): never => {
      throw new Error('not used')
    }
    const fetcher = new ReplicaFetcher(
      1,
      () => {
        connecting = true
        return new Promise<LeaderEndpoint>((resolve) => (finishConnect = resolve))
      },
      { append: never, truncate: never, endOffsetForEpoch: never, state: never } as unknown as FollowerLog,
      { maxWaitMs: 0, minBytes: 1, maxBytes: 1 << 20, partitionMaxBytes: 1 << 20, backoffMs: 20 },
      createLogger({ level: 'silent' }),
    )
    fetcher.add([{ topic: 't', partition: 0, leaderEpoch: 0, fetchOffset: 0, lastFetchedEpoch: -1, highWatermark: 0 }])
    await until('the fetcher connecting', () => connecting)
    const stopped = fetcher.stop()
    finishConnect(endpoint)
    await Promise.race([stopped, new Promise((r) => setTimeout(r, 2000))])
    expect(closed).toBe(1)
  })
})
