// The frame pool's reuse rule and bounds, on small slabs: a slab's memory is handed out again only once
// every pin on it (each region's own, and each pinFrame of a view into it) is gone; the pooled memory
// never exceeds its bound, and frames beyond it still get memory of their own.
import { describe, expect, it } from 'vitest'
import { FramePool, isPooledFrame, pinFrame, unpinFrame } from '../../src/shard/frame-pool.js'

function pool(): FramePool {
  const p = new FramePool({ slabBytes: 1024, maxFrameBytes: 700, maxPooledBytes: 2048 })
  p.poison = true
  return p
}

describe('FramePool', () => {
  it('hands out shared memory from one slab until it is full', () => {
    const p = pool()
    const a = p.acquire(300)
    const b = p.acquire(300)
    expect(a.buffer).toBeInstanceOf(SharedArrayBuffer)
    expect(b.buffer).toBe(a.buffer)
    expect(b.byteOffset).toBe(a.byteOffset + 300)
    expect(isPooledFrame(a) && isPooledFrame(b.subarray(10, 20))).toBe(true)
    expect(p.stats()).toMatchObject({ slabs: 1, pinnedSlabs: 1, pooledFrames: 2, unpooledFrames: 0 })
  })

  it('does not reuse a slab while any view of it is pinned, and reuses it once none is', () => {
    const p = pool()
    const first = p.acquire(500)
    first.fill(1)
    const records = first.subarray(100, 200)
    expect(pinFrame(records)).toBe(true) // the router's pin for an append viewing the frame
    unpinFrame(first) // the connection is done with the request
    // The slab is full for a 600-byte frame: the next one goes to a second slab, the first stays intact.
    const second = p.acquire(600)
    expect(second.buffer).not.toBe(first.buffer)
    // Both slabs of the bound are in use (one pinned by the append): a third frame gets its own memory.
    const third = p.acquire(600)
    expect(isPooledFrame(third)).toBe(false)
    expect(third.buffer).toBeInstanceOf(SharedArrayBuffer)
    expect(p.stats()).toMatchObject({ slabs: 2, unpooledFrames: 1 })
    expect(records.every((x) => x === 1)).toBe(true)
    // The shard answered: the first slab is free again (poisoned) and is handed out next.
    unpinFrame(records)
    expect(records.every((x) => x === 0xee)).toBe(true)
    const fourth = p.acquire(600)
    expect(fourth.buffer).toBe(first.buffer)
    expect(p.stats()).toMatchObject({ slabs: 2, pinnedSlabs: 2 })
    unpinFrame(second)
    unpinFrame(fourth)
    expect(p.stats().pinnedSlabs).toBe(0)
  })

  it('starts the current slab over in place once nothing pins it', () => {
    const p = pool()
    const a = p.acquire(400)
    unpinFrame(a)
    const b = p.acquire(400)
    expect(b.buffer).toBe(a.buffer)
    expect(b.byteOffset).toBe(a.byteOffset)
    expect(p.stats()).toMatchObject({ slabs: 1, recycled: 1 })
  })

  it('gives frames above maxFrameBytes memory of their own, never a slab', () => {
    const p = pool()
    const big = p.acquire(701)
    expect(big.length).toBe(701)
    expect(isPooledFrame(big)).toBe(false)
    expect(pinFrame(big)).toBe(false)
    unpinFrame(big) // not pool memory: nothing to do
    expect(p.stats()).toMatchObject({ slabs: 0, pooledFrames: 0, unpooledFrames: 1 })
  })

  it('refuses an unpin without a pin (a double release would free memory still in use)', () => {
    const p = pool()
    const a = p.acquire(10)
    unpinFrame(a)
    expect(() => unpinFrame(a)).toThrow(/unpinned more often than pinned/)
  })

  it('leaves plain buffers alone', () => {
    const plain = Buffer.alloc(64)
    expect(pinFrame(plain)).toBe(false)
    expect(isPooledFrame(plain)).toBe(false)
    expect(() => unpinFrame(plain)).not.toThrow()
  })

  it('rejects inconsistent sizes', () => {
    expect(() => new FramePool({ slabBytes: 100, maxFrameBytes: 200, maxPooledBytes: 1000 })).toThrow(RangeError)
  })
})
