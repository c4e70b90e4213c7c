// FramePool: memory for Produce request frames that shard threads read without another copy.
//
// A Produce frame is received (copied once from the socket's read buffers) into a region of a
// SharedArrayBuffer slab. The record batches decoded from it are views of that memory; a view of a
// SharedArrayBuffer crosses postMessage to a shard worker as shared memory: no copy, no transfer, and
// one frame's batches may go to several shards. Slabs are reused, so their pages stay faulted in
// (a fresh buffer per request cost a page fault per 4 KiB).
//
// Reuse rule: a slab's memory is handed out again only when nothing pins it. Regions are bump-allocated
// and never freed one by one: a slab starts over only once every pin on it is gone. Pins are counted
// per slab: one per region handed out (dropped by the connection when its request is finished) and one
// per operation that views the region (taken by the router for each append, dropped when the shard has
// answered it, i.e. after the bytes were written and nothing on the shard views them any more; the
// storage layer keeps no views of appended records, it writes them and keeps offsets and numbers).
//
// Bounded: at most maxPooledBytes of slabs exist for the whole process, whatever the number of
// connections. A frame larger than maxFrameBytes, or one arriving while every slab is pinned and the
// bound is reached, gets a SharedArrayBuffer of its own, which the GC frees like any buffer.

export interface FramePoolOptions {
  /** Size of one slab. */
  slabBytes: number
  /** Largest frame served from a slab; larger frames get a buffer of their own. At most slabBytes. */
  maxFrameBytes: number
  /** Upper bound of the memory held in slabs. */
  maxPooledBytes: number
}

export interface FramePoolStats {
  slabs: number
  /** Slabs with at least one pin. */
  pinnedSlabs: number
  /** Frames served from a slab / given a buffer of their own, since the pool was created. */
  pooledFrames: number
  unpooledFrames: number
  /** Times a slab was started over (every pin released), since the pool was created. */
  recycled: number
}

interface Slab {
  readonly pool: FramePool
  readonly memory: SharedArrayBuffer
  /** Bytes handed out since the slab last started over. */
  used: number
  /** Regions and operations still viewing the slab. */
  pins: number
}

// Which slab a SharedArrayBuffer is, for pinFrame/unpinFrame (which receive only the views).
const slabs = new WeakMap<ArrayBufferLike, Slab>()

export class FramePool {
  readonly #opts: FramePoolOptions
  readonly #all: Slab[] = []
  readonly #free: Slab[] = []
  #current: Slab | undefined
  #pooledFrames = 0
  #unpooledFrames = 0
  #recycled = 0
  /**
   * Fill a slab's used bytes with 0xEE before they are reused. Only for tests: a view used after its
   * release then reads garbage, which byte-for-byte checks catch, instead of a later frame's bytes.
   */
  poison = false

  constructor(opts: FramePoolOptions) {
    if (!(opts.slabBytes > 0 && opts.maxFrameBytes > 0 && opts.maxFrameBytes <= opts.slabBytes && opts.maxPooledBytes >= 0)) {
      throw new RangeError(`invalid frame pool sizes ${JSON.stringify(opts)}`)
    }
    this.#opts = { ...opts }
  }

  /**
   * A Buffer of `size` bytes (contents undefined) over shared memory, pinned once: the caller must
   * unpinFrame() it once it no longer reads it and no longer hands it on. `size` must already have been
   * checked against the request size limit.
   */
  acquire(size: number): Buffer {
    const slab = size <= this.#opts.maxFrameBytes ? this.#slabWithRoom(size) : undefined
    if (slab === undefined) {
      this.#unpooledFrames++
      return Buffer.from(new SharedArrayBuffer(size))
    }
    const offset = slab.used
    slab.used += size
    slab.pins++
    this.#pooledFrames++
    return Buffer.from(slab.memory, offset, size)
  }

  stats(): FramePoolStats {
    return {
      slabs: this.#all.length,
      pinnedSlabs: this.#all.filter((s) => s.pins > 0).length,
      pooledFrames: this.#pooledFrames,
      unpooledFrames: this.#unpooledFrames,
      recycled: this.#recycled,
    }
  }

  #slabWithRoom(size: number): Slab | undefined {
    const current = this.#current
    if (current !== undefined && this.#opts.slabBytes - current.used >= size) return current
    // The current slab is full: it goes back to the free list as soon as (or if already) unpinned.
    if (current !== undefined) {
      this.#current = undefined
      if (current.pins === 0) {
        this.#recycle(current)
        this.#free.push(current)
      }
    }
    let next = this.#free.pop()
    if (next === undefined && (this.#all.length + 1) * this.#opts.slabBytes <= this.#opts.maxPooledBytes) {
      next = { pool: this, memory: new SharedArrayBuffer(this.#opts.slabBytes), used: 0, pins: 0 }
      slabs.set(next.memory, next)
      this.#all.push(next)
    }
    this.#current = next
    return next
  }

  /** Called with a slab whose last pin is gone. */
  #unpinned(slab: Slab): void {
    if (slab !== this.#current) {
      this.#recycle(slab)
      this.#free.push(slab)
    } else {
      // The current slab starts over in place: its first bytes are the ones most recently touched.
      this.#recycle(slab)
    }
  }

  #recycle(slab: Slab): void {
    if (this.poison) new Uint8Array(slab.memory, 0, slab.used).fill(0xee)
    slab.used = 0
    this.#recycled++
  }

  /** @internal for pinFrame/unpinFrame */
  static pin(view: Uint8Array, delta: 1 | -1): boolean {
    const slab = slabs.get(view.buffer)
    if (slab === undefined) return false
    if (delta === -1 && slab.pins <= 0) throw new Error('frame pool: a slab was unpinned more often than pinned')
    slab.pins += delta
    if (slab.pins === 0) slab.pool.#unpinned(slab)
    return true
  }
}

/** Pins the slab a view lies in (no-op, false, for memory not from a FramePool). */
export function pinFrame(view: Uint8Array): boolean {
  return FramePool.pin(view, 1)
}

/** Drops one pin taken by acquire() or pinFrame(); the slab's memory may be reused once none is left. */
export function unpinFrame(view: Uint8Array): void {
  FramePool.pin(view, -1)
}

/** Whether the view lies in a FramePool slab. */
export function isPooledFrame(view: Uint8Array): boolean {
  return slabs.has(view.buffer)
}

// The broker's pool: 8 slabs of 8 MiB. Clients send produce requests of up to about 1 MB (the producer's
// max.request.size / librdkafka's message.max.bytes), several per slab; the slabs in use at once are
// those with requests still in progress, a few under load.
export const framePool = new FramePool({
  slabBytes: 8 << 20,
  maxFrameBytes: 2 << 20,
  maxPooledBytes: 64 << 20,
})
