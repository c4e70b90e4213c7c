// The replica manager on its own (src/replication/replica-manager.ts with its fetcher and ISR managers),
// over an inline shard router (io.threads=0) on a temp dir: no broker, no sockets. The controller and the
// leaders it would fetch from are test doubles of its ports (alterPartition, connectLeader). Covered:
// appends as leader read back up to the HW, acks=all waiting for a follower's fetch, an ISR shrink sent as
// AlterPartition after replica.lag.time.max.ms, a leader turned follower truncating where its log diverged
// from the new leader's, and a failed log directory taking its partitions offline.
import { rmSync } from 'node:fs'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { ErrorCode } from '../../src/domain/errors.js'
import { silentLogger } from '../../src/observability/logger.js'
import type { AlterPartitionRequest, AlterPartitionResponse } from '../../src/protocol/messages/56-alter-partition.gen.js'
import type { FollowerFetchAnswer, FollowerFetchPartition, FollowerFetchResult, LeaderEndpoint } from '../../src/replication/leader-endpoint.js'
import type { LiveLeader, PartitionLeaderAndIsr } from '../../src/replication/partition-requests.js'
import { ReplicaManager, type ReplicaManagerDeps } from '../../src/replication/replica-manager.js'
import type { PartitionService, ReplicaManagerPort } from '../../src/server/handlers/common/ports.js'
import type { ShardRouter } from '../../src/shard/router.js'
import { DEFAULT_LOG_CONFIG } from '../../src/storage/index.js'
import { batch, openReplicatedRouter, readRegions, removeDir, startRouter, tempDir, value } from '../shard/helpers.js'

const BROKER = 1
const cleanup: (() => Promise<void> | void)[] = []

afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c()
})

/** The controller's side of AlterPartition: records each request and commits the ISR it proposes. */
class FakeController {
  readonly requests: AlterPartitionRequest[] = []

  alterPartition = async (request: AlterPartitionRequest): Promise<AlterPartitionResponse> => {
    this.requests.push(request)
    const t = request.topics[0]!
    const p = t.partitions[0]!
    return {
      throttleTimeMs: 0,
      errorCode: ErrorCode.NONE,
      topics: [{
        topicName: t.topicName,
        topicId: t.topicId,
        partitions: [{ partitionIndex: p.partitionIndex, errorCode: ErrorCode.NONE, leaderId: request.brokerId, leaderEpoch: p.leaderEpoch, isr: p.newIsr, leaderRecoveryState: 0, partitionEpoch: p.partitionEpoch + 1 }],
      }],
    }
  }
}

function replicaManager(router: ShardRouter, over: Partial<ReplicaManagerDeps> = {}): ReplicaManager {
  const rm = new ReplicaManager(router, silentLogger(), {
    brokerId: BROKER,
    logConfigFor: async () => DEFAULT_LOG_CONFIG,
    defaultLogConfig: () => DEFAULT_LOG_CONFIG,
    knowsPartition: () => true,
    minInsyncReplicas: async () => 1,
    brokerEpoch: () => 5n,
    alterPartition: new FakeController().alterPartition,
    connectLeader: async () => {
      throw new Error('no leader in this test')
    },
    replicaLagTimeMaxMs: 30_000,
    fetcher: { maxWaitMs: 50, minBytes: 1, maxBytes: 1 << 20, partitionMaxBytes: 1 << 20, backoffMs: 20 },
    ...over,
  })
  cleanup.push(() => rm.close())
  return rm
}

function leaderAndIsr(over: Partial<PartitionLeaderAndIsr> = {}): PartitionLeaderAndIsr {
  return { topic: 't', partition: 0, topicId: 'AAAAAAAAAAAAAAAAAAAAAA', controllerEpoch: 1, leader: BROKER, leaderEpoch: 1, isr: [BROKER], partitionEpoch: 0, replicas: [BROKER], leaderRecoveryState: 0, ...over }
}

async function become(rm: ReplicaManager, p: PartitionLeaderAndIsr, leaders: LiveLeader[] = []): Promise<void> {
  const [answer] = await rm.becomeLeaderOrFollower(0, 1, [p], leaders)
  expect(answer!.errorCode).toBe(ErrorCode.NONE)
}

async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const v = await probe()
    if (v !== undefined) return v
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 10))
  }
}

async function logEnd(rm: ReplicaManager, topic = 't', partition = 0): Promise<{ logEndOffset: number; highWatermark: number }> {
  const [s] = await rm.states([{ topic, partition }])
  return s!
}

describe('ReplicaManager over an inline router', () => {
  it("fits the handlers' PartitionService and the control plane's ReplicaManagerPort (checked by tsc)", () => {
    // replication/ does not import the ports: the shapes it declares must stay assignable to them.
    const asPorts = (rm: ReplicaManager): [PartitionService, ReplicaManagerPort] => [rm, rm]
    expect(asPorts).toBeTypeOf('function')
  })

  it("gives the event loop turns while a large LeaderAndIsr installs its partitions' roles and starts their fetchers", async () => {
    // A new controller's LeaderAndIsr at 100,000 partitions gave its own broker 33,000 new roles, installed
    // in one piece (0.7 s). Turns are observed from a setImmediate loop: the number of partitions installed
    // at each turn must pass through values between none and all.
    const router = await openReplicatedRouter(0, cleanup)
    const rm = replicaManager(router)
    const n = 1200
    const partitions = Array.from({ length: n }, (_, i) =>
      i % 2 === 0 ? leaderAndIsr({ partition: i }) : leaderAndIsr({ partition: i, leader: 2, replicas: [BROKER, 2], isr: [BROKER, 2] }),
    )
    const installed = (): number => partitions.filter((p) => rm.hosted('t', p.partition) !== undefined).length
    const followersFetched = (): number => [...rm.fetcherPartitions().values()].flat().reduce((a, b) => a + b, 0)
    const seen: { installed: number; fetched: number }[] = []
    let watching = true
    const watch = (): void => {
      seen.push({ installed: installed(), fetched: followersFetched() })
      if (watching) setImmediate(watch)
    }
    // The slices are timed by performance.now(): a clock that moves 20 ms a reading ends a slice at every
    // look at it, whatever this machine's speed.
    let fakeNow = performance.now()
    const clock = vi.spyOn(performance, 'now').mockImplementation(() => (fakeNow += 20))
    try {
      setImmediate(watch)
      const answers = await rm.becomeLeaderOrFollower(0, 1, partitions, [{ brokerId: 2, host: '127.0.0.1', port: 1 }])
      expect(answers.filter((a) => a.errorCode !== ErrorCode.NONE)).toEqual([])
    } finally {
      watching = false
      clock.mockRestore()
    }
    expect(installed()).toBe(n)
    expect(followersFetched()).toBe(n / 2)
    expect(seen.some((s) => s.installed > 0 && s.installed < n), `installed at each turn: ${[...new Set(seen.map((s) => s.installed))].join(', ')}`).toBe(true)
    expect(seen.some((s) => s.fetched > 0 && s.fetched < n / 2), `fetched at each turn: ${[...new Set(seen.map((s) => s.fetched))].join(', ')}`).toBe(true)
  })

  it('appends as leader, stamping the leader epoch, and serves consumers up to the HW', async () => {
    const router = await openReplicatedRouter(0, cleanup)
    const rm = replicaManager(router)
    await become(rm, leaderAndIsr({ leaderEpoch: 4 }))
    expect(rm.leaderError('t', 0)).toBe(ErrorCode.NONE)
    expect(rm.leaderError('t', 0, 3)).toBe(ErrorCode.FENCED_LEADER_EPOCH)
    expect(rm.leaderError('t', 0, 5)).toBe(ErrorCode.UNKNOWN_LEADER_EPOCH)
    expect(rm.leadership()).toEqual({ leaders: 1, underReplicated: 0 })

    const [r] = await rm.appendAsLeader([{ topic: 't', partition: 0, records: batch('a', 3) }], { acks: 1, timeoutMs: 1000 })
    expect(value(r).baseOffset).toBe(0)
    // The ISR is the leader alone: the HW follows the log end, consumers read at once.
    expect(await logEnd(rm)).toMatchObject({ logEndOffset: 3, highWatermark: 3 })
    const [read] = await rm.read([{ topic: 't', partition: 0, offset: 0, maxBytes: 1 << 20 }])
    const v = value(read)
    const bytes = readRegions(v.regions)
    rm.releaseLeases([v])
    expect(bytes.includes(Buffer.from('a-2'))).toBe(true)
    // The batch carries the leader epoch (partitionLeaderEpoch, bytes 12..15 of the batch header).
    expect(bytes.readInt32BE(12)).toBe(4)
    const [offset] = await rm.listOffsets([{ topic: 't', partition: 0, timestamp: -1 }])
    expect(value(offset)).toMatchObject({ offset: 3, leaderEpoch: 4 })

    // Not the leader, or not hosted: refused before the shard.
    const [other] = await rm.appendAsLeader([{ topic: 't', partition: 1, records: batch('b', 1) }], { acks: 1, timeoutMs: 1000 })
    expect(other).toMatchObject({ ok: false, errorCode: ErrorCode.NOT_LEADER_OR_FOLLOWER })
    // One request mixing led and not-led partitions: each answered for itself, the led ones written.
    await become(rm, leaderAndIsr({ partition: 2, leaderEpoch: 4 }))
    const mixed = await rm.appendAsLeader([
      { topic: 't', partition: 0, records: batch('c', 1) },
      { topic: 't', partition: 1, records: batch('d', 1) },
      { topic: 't', partition: 2, records: batch('e', 1) },
    ], { acks: -1, timeoutMs: 1000 })
    expect(mixed.map((m) => (m.ok ? m.value.baseOffset : m.errorCode))).toEqual([3, ErrorCode.NOT_LEADER_OR_FOLLOWER, 0])
  })

  it("answers acks=all once a follower's fetch moves the HW past the append", async () => {
    const router = await openReplicatedRouter(0, cleanup)
    const controller = new FakeController()
    const rm = replicaManager(router, { minInsyncReplicas: async () => 2, alterPartition: controller.alterPartition })
    await become(rm, leaderAndIsr({ replicas: [1, 2], isr: [1, 2] }))

    let answered = false
    const pending = rm.appendAsLeader([{ topic: 't', partition: 0, records: batch('x', 2) }], { acks: -1, timeoutMs: 10_000 }).then((r) => {
      answered = true
      return r
    })
    await until('the leader append', async () => ((await logEnd(rm)).logEndOffset === 2 ? true : undefined))
    expect(answered).toBe(false)
    expect((await logEnd(rm)).highWatermark).toBe(0)
    // Consumers see nothing above the HW; a consumer's fetch parks until it moves.
    const parked = rm.waitForAppends([{ topic: 't', partition: 0 }], 10_000)

    // The follower fetches from 0 (gets the records), then from 2: it has them, the HW moves to 2.
    const [first] = await rm.readForFollower(2, [{ topic: 't', partition: 0, fetchOffset: 0, maxBytes: 1 << 20, currentLeaderEpoch: 1, lastFetchedEpoch: -1 }])
    expect(value(first).bytes).toBeGreaterThan(0)
    // (The answer is the shard's read, lease included, typed as what the Fetch handler needs.)
    rm.releaseLeases([value(first) as never])
    expect(answered).toBe(false)
    const [second] = await rm.readForFollower(2, [{ topic: 't', partition: 0, fetchOffset: 2, maxBytes: 1 << 20, currentLeaderEpoch: 1, lastFetchedEpoch: 1 }])
    expect(value(second).bytes).toBe(0)
    const [r] = await pending
    expect(value(r).baseOffset).toBe(0)
    expect(await parked).toBe(true)
    expect((await logEnd(rm)).highWatermark).toBe(2)
    // The follower was in the ISR all along: nothing to tell the controller.
    expect(controller.requests).toEqual([])

    // Not a replica of the partition: refused.
    const [stranger] = await rm.readForFollower(3, [{ topic: 't', partition: 0, fetchOffset: 0, maxBytes: 1 << 20, currentLeaderEpoch: 1, lastFetchedEpoch: -1 }])
    expect(stranger).toMatchObject({ ok: false, errorCode: ErrorCode.NOT_LEADER_OR_FOLLOWER })
  })

  it('refuses acks=all below min.insync.replicas without writing', async () => {
    const router = await openReplicatedRouter(0, cleanup)
    const rm = replicaManager(router, { minInsyncReplicas: async () => 2 })
    await become(rm, leaderAndIsr({ replicas: [1, 2], isr: [1] }))
    const [r] = await rm.appendAsLeader([{ topic: 't', partition: 0, records: batch('x', 1) }], { acks: -1, timeoutMs: 1000 })
    expect(r).toMatchObject({ ok: false, errorCode: ErrorCode.NOT_ENOUGH_REPLICAS })
    expect((await logEnd(rm)).logEndOffset).toBe(0)
    // acks=1 is written (and waits for no one).
    const [one] = await rm.appendAsLeader([{ topic: 't', partition: 0, records: batch('y', 1) }], { acks: 1, timeoutMs: 1000 })
    expect(value(one).baseOffset).toBe(0)
  })

  it('shrinks the ISR through AlterPartition when a follower does not fetch for replica.lag.time.max.ms', async () => {
    const router = await openReplicatedRouter(0, cleanup)
    const controller = new FakeController()
    const rm = replicaManager(router, { replicaLagTimeMaxMs: 100, alterPartition: controller.alterPartition })
    await become(rm, leaderAndIsr({ replicas: [1, 2], isr: [1, 2], partitionEpoch: 3, leaderEpoch: 2 }))
    await rm.appendAsLeader([{ topic: 't', partition: 0, records: batch('x', 1) }], { acks: 1, timeoutMs: 1000 })

    await until('an AlterPartition', () => (controller.requests.length > 0 ? true : undefined))
    const request = controller.requests[0]!
    expect(request).toMatchObject({ brokerId: BROKER, brokerEpoch: 5n })
    expect(request.topics[0]).toMatchObject({ topicName: 't', partitions: [{ partitionIndex: 0, leaderEpoch: 2, newIsr: [1], partitionEpoch: 3 }] })
    // The committed answer is applied: ISR [1] at the controller's new partition epoch.
    await until('the committed ISR', () => (rm.hosted('t', 0)!.isr.length === 1 ? true : undefined))
    expect(rm.hosted('t', 0)).toMatchObject({ isr: [1], partitionEpoch: 4 })
    expect(rm.leadership()).toEqual({ leaders: 1, underReplicated: 1 })
  })

  it('truncates by leader epoch when a leader becomes a follower of a leader whose log went another way', async () => {
    const router = await openReplicatedRouter(0, cleanup)
    const fetches: FollowerFetchPartition[][] = []
    // The new leader (broker 2, epoch 2) kept only the first 3 offsets of epoch 1.
    const endpoint: LeaderEndpoint = {
      truncatesOnFetch: true,
      epochEndOffset: async () => ({ errorCode: ErrorCode.NONE, leaderEpoch: 1, endOffset: 3 }),
      offsets: async () => ({ errorCode: ErrorCode.NONE, logEndOffset: 3, logStartOffset: 0 }),
      fetch: async ({ partitions }): Promise<FollowerFetchResult> => {
        fetches.push([...partitions])
        await new Promise((r) => setTimeout(r, 10))
        return { errorCode: ErrorCode.NONE, sessionId: 0, answers: partitions.map((p): FollowerFetchAnswer => ({
          topic: p.topic,
          partition: p.partition,
          errorCode: ErrorCode.NONE,
          highWatermark: 3,
          logStartOffset: 0,
          records: Buffer.alloc(0),
          ...(p.lastFetchedEpoch === 1 && p.fetchOffset > 3 ? { divergingEpoch: { epoch: 1, endOffset: 3 } } : {}),
        })) }
      },
      close: () => {},
    }
    const rm = replicaManager(router, { connectLeader: async () => endpoint })
    await become(rm, leaderAndIsr({ leaderEpoch: 1 }))
    await rm.appendAsLeader([{ topic: 't', partition: 0, records: batch('a', 3) }], { acks: 1, timeoutMs: 1000 })
    await rm.appendAsLeader([{ topic: 't', partition: 0, records: batch('b', 2) }], { acks: 1, timeoutMs: 1000 })
    expect((await logEnd(rm)).logEndOffset).toBe(5)

    await become(rm, leaderAndIsr({ leader: 2, leaderEpoch: 2, replicas: [1, 2], isr: [2] }), [{ brokerId: 2, host: '127.0.0.1', port: 1 }])
    expect(rm.leaderError('t', 0)).toBe(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    expect(rm.fetcherPartitions()).toEqual(new Map([[2, [1]]]))
    await until('the truncation', async () => ((await logEnd(rm)).logEndOffset === 3 ? true : undefined))
    // It fetches on from the leader's end of epoch 1.
    await until('a fetch from offset 3', () => (fetches.some((f) => f[0]!.fetchOffset === 3) ? true : undefined))
    expect(fetches[0]![0]).toMatchObject({ fetchOffset: 5, lastFetchedEpoch: 1, currentLeaderEpoch: 2 })

    // StopReplica stops the fetcher for it.
    const [stopped] = await rm.stopReplicas(0, 1, [{ topic: 't', partition: 0, leaderEpoch: -1, deletePartition: false }])
    expect(stopped!.errorCode).toBe(ErrorCode.NONE)
    expect(rm.fetcherPartitions()).toEqual(new Map([[2, [0]]]))
  })

  it('takes the partitions of a failed log directory offline: waiting appends and later requests answer KAFKA_STORAGE_ERROR', async () => {
    const dirA = tempDir()
    const dirB = tempDir()
    cleanup.push(() => removeDir(dirA), () => removeDir(dirB))
    const router = await startRouter(dirA, 0, { dataDirs: [dirA, dirB], highWatermarkFollowsLeo: false })
    cleanup.push(() => router.close().catch(() => undefined))
    const rm = replicaManager(router, { minInsyncReplicas: async () => 2 })
    // Two partitions, one per directory (a new partition goes to the directory with the fewest).
    await become(rm, leaderAndIsr({ partition: 0, replicas: [1, 2], isr: [1, 2] }))
    await become(rm, leaderAndIsr({ partition: 1, replicas: [1, 2], isr: [1, 2] }))
    const states = await rm.states()
    const inB = states.find((s) => s.logDir === dirB)!
    const inA = states.find((s) => (s.logDir ?? dirA) === dirA)!
    expect(inB).toBeDefined()
    expect(inA).toBeDefined()

    // An acks=all append waits for the follower in both.
    const waiting = rm.appendAsLeader([{ topic: 't', partition: inB.partition, records: batch('x', 1) }], { acks: -1, timeoutMs: 10_000 })
    await until('the leader append', async () => ((await logEnd(rm, 't', inB.partition)).logEndOffset === 1 ? true : undefined))

    rmSync(dirB, { recursive: true, force: true })
    expect(await router.checkLogDirs(true)).toEqual([dirB])
    expect(await rm.onLogDirFailure(dirB)).toBe(1)
    const [r] = await waiting
    expect(r).toMatchObject({ ok: false, errorCode: ErrorCode.KAFKA_STORAGE_ERROR })
    expect(rm.leaderError('t', inB.partition)).toBe(ErrorCode.KAFKA_STORAGE_ERROR)
    expect(rm.leaderError('t', inA.partition)).toBe(ErrorCode.NONE)
    const dirs = await rm.logDirs(null)
    expect(dirs.find((d) => d.path === dirB)).toMatchObject({ errorCode: ErrorCode.KAFKA_STORAGE_ERROR, partitions: [] })
    expect(dirs.find((d) => d.path === dirA)!.partitions.map((p) => p.partition)).toEqual([inA.partition])
  })
})
