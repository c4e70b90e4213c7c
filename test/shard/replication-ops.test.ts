// The shard operations of replication, on real files, inline and on worker threads (results and record
// buffers cross the thread boundary): becomeLeader / becomeFollower and the high watermark modes,
// setHighWatermark, readForFollower (with the HW raised in the same message, and the diverging epoch),
// appendAsFollower (verbatim, the leader's HW and log start taken), truncate (durable), endOffsetForEpoch,
// replicaState.
import { afterEach, describe, expect, it } from 'vitest'
import type { ShardRouter } from '../../src/shard/index.js'
import { batch, openReplicatedRouter, readRegions, value } from './helpers.js'

const cleanup: (() => Promise<void> | void)[] = []
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn()
})

const open = (ioThreads: number): Promise<ShardRouter> => openReplicatedRouter(ioThreads, cleanup)

describe.each([0, 1])('replication shard operations (io.threads=%i)', (ioThreads) => {
  it('serve a leader and a follower partition end to end', async () => {
    const router = await open(ioThreads)
    const leader = { topic: 'l', partition: 0 }
    const follower = { topic: 'f', partition: 0 }
    await router.createPartitions([leader, follower])

    // A leader whose ISR is more than itself: appends do not move the HW.
    expect(value((await router.call('becomeLeader', [{ ...leader, leaderEpoch: 4, highWatermarkFollowsLeo: false }]))[0])).toEqual({ logStartOffset: 0, logEndOffset: 0, highWatermark: 0, latestEpoch: 4 })
    for (let i = 0; i < 3; i++) value((await router.append([{ ...leader, records: batch(`a${i}`, 2), leaderEpoch: 4 }]))[0])
    expect(value((await router.call('replicaState', [leader]))[0]).highWatermark).toBe(0)
    // Consumers see nothing above the HW.
    expect(value((await router.read([{ ...leader, offset: 0, maxBytes: 1 << 20 }]))[0]).bytes).toBe(0)

    // The follower fetches everything up to the LEO; the HW rides on the read.
    value((await router.call('becomeFollower', [follower]))[0])
    const read = value((await router.call('readForFollower', [{ ...leader, offset: 0, maxBytes: 1 << 20, lastFetchedEpoch: -1, highWatermark: 4 }]))[0])
    expect(read.highWatermark).toBe(4)
    expect(read.logEndOffset).toBe(6)
    const bytes = readRegions(read.regions)
    router.releaseLeases([read])
    const appended = value((await router.call('appendAsFollower', [{ ...follower, records: Buffer.from(bytes), highWatermark: read.highWatermark, logStartOffset: 0 }]))[0])
    expect(appended).toMatchObject({ batches: 3, lastOffset: 5, lastEpoch: 4, latestEpoch: 4, logEndOffset: 6, highWatermark: 4 })
    const copy = value((await router.call('readForFollower', [{ ...follower, offset: 0, maxBytes: 1 << 20, lastFetchedEpoch: -1 }]))[0])
    expect(readRegions(copy.regions).equals(bytes)).toBe(true)
    router.releaseLeases([copy])

    // setHighWatermark raises only; followsLeo moves it to the LEO.
    expect(value((await router.call('setHighWatermark', [{ ...leader, highWatermark: 2 }]))[0])).toBe(4)
    expect(value((await router.call('setHighWatermark', [{ ...leader, followsLeo: true }]))[0])).toBe(6)

    // A new epoch on the follower's side that the leader never had: the leader answers the divergence.
    value((await router.call('becomeLeader', [{ ...follower, leaderEpoch: 5, highWatermarkFollowsLeo: true }]))[0])
    value((await router.append([{ ...follower, records: batch('lost', 3), leaderEpoch: 5 }]))[0])
    value((await router.call('becomeLeader', [{ ...leader, leaderEpoch: 6, highWatermarkFollowsLeo: true }]))[0])
    value((await router.append([{ ...leader, records: batch('b', 1), leaderEpoch: 6 }]))[0])
    const diverged = value((await router.call('readForFollower', [{ ...leader, offset: 9, maxBytes: 1 << 20, lastFetchedEpoch: 5 }]))[0])
    expect(diverged.divergingEpoch).toEqual({ leaderEpoch: 4, endOffset: 6 })
    expect(diverged.bytes).toBe(0)
    expect(value((await router.call('endOffsetForEpoch', [{ ...follower, leaderEpoch: 4 }]))[0])).toEqual({ leaderEpoch: 4, endOffset: 6 })
    expect(value((await router.call('truncate', [{ ...follower, offset: 6 }]))[0])).toEqual({ logStartOffset: 0, logEndOffset: 6, highWatermark: 6, latestEpoch: 4 })
    expect(value((await router.call('endOffsetForEpoch', [{ ...leader, leaderEpoch: 6 }]))[0])).toEqual({ leaderEpoch: 6, endOffset: 7 })
  })
})
