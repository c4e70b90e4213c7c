// The cleaner's offset map (Kafka's SkimpyOffsetMap): MD5 of a record key -> the largest offset seen for
// it in the dirty section. Keys are never stored, only their 16-byte digests, so memory is 24 bytes a
// slot whatever the key sizes, fixed when the map is made: an open-addressing table over typed arrays
// (power-of-two slot count, double hashing from two digest words, so a probe sequence visits every slot).
// Like Kafka, two keys with the same MD5 are taken for one key; that risk is accepted.

import { hash } from 'node:crypto'

/** Bytes a slot takes: 16 of digest + 8 of offset. */
export const OFFSET_MAP_SLOT_BYTES = 24
/** Fill limit (Kafka's log.cleaner.io.buffer.load.factor default). */
export const OFFSET_MAP_LOAD_FACTOR = 0.9

export class OffsetMap {
  readonly slots: number
  /** Entries that may be put before the map counts as full. */
  readonly capacity: number
  private readonly digests: Uint32Array
  /** offset + 1; 0 marks an empty slot. */
  private readonly offsets: Float64Array
  private readonly mask: number
  private entries = 0
  private _latestOffset = -1

  /**
   * A map for at least `wanted` entries when memoryBytes allows, else as many as memoryBytes holds.
   * Throws RangeError when memoryBytes cannot hold even a handful of slots.
   */
  constructor(wanted: number, memoryBytes: number) {
    const maxSlots = 2 ** Math.floor(Math.log2(Math.max(1, memoryBytes / OFFSET_MAP_SLOT_BYTES)))
    if (maxSlots < 16) throw new RangeError(`${memoryBytes} bytes are too few for an offset map`)
    let slots = 16
    while (slots < maxSlots && slots * OFFSET_MAP_LOAD_FACTOR < wanted) slots *= 2
    this.slots = slots
    this.mask = slots - 1
    this.capacity = Math.floor(slots * OFFSET_MAP_LOAD_FACTOR)
    this.digests = new Uint32Array(slots * 4)
    this.offsets = new Float64Array(slots)
  }

  get size(): number {
    return this.entries
  }

  /** The largest offset put so far, -1 when none. */
  get latestOffset(): number {
    return this._latestOffset
  }

  /** Room for n more entries (n new keys at worst). */
  hasRoomFor(n: number): boolean {
    return this.entries + n <= this.capacity
  }

  /** Records offset as the latest for key (callers put in increasing offset order). */
  put(key: Uint8Array, offset: number): void {
    const d = digest(key)
    const slot = this.find(d, true)
    if (this.offsets[slot] === 0) {
      if (this.entries >= this.capacity) throw new RangeError('offset map is full')
      this.entries++
      const at = slot * 4
      this.digests[at] = d[0]!
      this.digests[at + 1] = d[1]!
      this.digests[at + 2] = d[2]!
      this.digests[at + 3] = d[3]!
    }
    this.offsets[slot] = offset + 1
    if (offset > this._latestOffset) this._latestOffset = offset
  }

  /** The latest offset put for key, or -1. */
  get(key: Uint8Array): number {
    const slot = this.find(digest(key), false)
    return slot < 0 ? -1 : this.offsets[slot]! - 1
  }

  /** Slot holding d, or (forInsert) the empty slot where it goes; -1 when absent and not inserting. */
  private find(d: Uint32Array, forInsert: boolean): number {
    const step = (d[1]! | 1) >>> 0
    let slot = d[0]! & this.mask
    for (let i = 0; i < this.slots; i++) {
      if (this.offsets[slot] === 0) return forInsert ? slot : -1
      const at = slot * 4
      if (this.digests[at] === d[0] && this.digests[at + 1] === d[1] && this.digests[at + 2] === d[2] && this.digests[at + 3] === d[3]) return slot
      slot = (slot + step) & this.mask
    }
    if (forInsert) throw new RangeError('offset map is full')
    return -1
  }
}

const scratch = new Uint32Array(4)

function digest(key: Uint8Array): Uint32Array {
  const h = hash('md5', key, 'buffer') as unknown as Buffer
  scratch[0] = h.readUInt32LE(0)
  scratch[1] = h.readUInt32LE(4)
  scratch[2] = h.readUInt32LE(8)
  scratch[3] = h.readUInt32LE(12)
  return scratch
}
