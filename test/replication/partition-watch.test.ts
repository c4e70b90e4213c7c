// The follower purgatory's standing watches (a follower fetch session's view of its partitions): what
// notify() and mark() record, what wakes a parked wait, and that a closed watch holds nothing.
import { describe, expect, it } from 'vitest'
import { DelayedFetchPurgatory, partitionKey } from '../../src/replication/delayed-fetch.js'

const A = partitionKey('t', 0)
const B = partitionKey('t', 1)

describe('PartitionWatch', () => {
  it('records the watched partitions notified (records) or marked (a new HW) since it was last asked, once each', () => {
    const purgatory = new DelayedFetchPurgatory()
    const watch = purgatory.watch()
    watch.add(A)
    purgatory.notify(A)
    purgatory.mark(A)
    purgatory.notify(B) // not watched
    expect([...watch.takeChanged()]).toEqual([A])
    expect([...watch.takeChanged()]).toEqual([])
    watch.add(B)
    purgatory.mark(B)
    expect([...watch.takeChanged()]).toEqual([B])
  })

  it('wakes a parked wait on records, not on a new HW; answers at once when something changed before it parked', async () => {
    const purgatory = new DelayedFetchPurgatory()
    const watch = purgatory.watch()
    watch.add(A)
    const parked = watch.wait(5000)
    let woken: boolean | undefined
    void parked.then((byData) => (woken = byData))
    purgatory.mark(A)
    await new Promise((r) => setTimeout(r, 10))
    expect(woken).toBeUndefined()
    const started = Date.now()
    purgatory.notify(A)
    expect(await parked).toBe(true)
    expect(Date.now() - started).toBeLessThan(1000)
    // A change already recorded (the HW above): no wait at all.
    expect(await watch.wait(5000)).toBe(true)
    watch.takeChanged()
    expect(await watch.wait(20)).toBe(false)
  })

  it('lets go of every partition when closed or when one is deleted, and ends a parked wait', async () => {
    const purgatory = new DelayedFetchPurgatory()
    const watch = purgatory.watch()
    watch.add(A)
    watch.add(B)
    purgatory.notify(B)
    watch.delete(B)
    expect([...watch.takeChanged()]).toEqual([])
    expect(purgatory.interested).toBe(true)
    const parked = watch.wait(5000)
    watch.close()
    expect(await parked).toBe(false)
    expect(purgatory.interested).toBe(false)
    purgatory.notify(A)
    expect([...watch.takeChanged()]).toEqual([])
  })
})
