// Bounds-checked reader over one Buffer. Every read checks the remaining bytes against `end` (not
// the Buffer's length, so a sub-range such as a tagged field can be fenced off) and throws
// ProtocolDecodeError on truncation, bad lengths or over-long varints. Array counts are checked
// against the bytes left before anything is allocated, so a tiny input cannot claim a huge array, and
// against an optional budget of elements for the whole input (`elementBudget`), so a large input cannot
// make the decoder build millions of objects either.

import { ProtocolDecodeError } from './errors.js'
import type { TaggedField } from './types.js'

export class Reader {
  readonly buf: Buffer
  offset: number
  end: number
  /**
   * Array elements the rest of the input may still declare, at every depth together; a count beyond it
   * throws ProtocolDecodeError before the array is built. Infinity (the default) checks nothing.
   */
  elementBudget = Infinity

  constructor(buf: Buffer, offset = 0, end = buf.length) {
    if (offset < 0 || end > buf.length || offset > end) throw new ProtocolDecodeError(`bad reader range ${offset}..${end} of ${buf.length}`)
    this.buf = buf
    this.offset = offset
    this.end = end
  }

  get remaining(): number {
    return this.end - this.offset
  }

  private need(n: number): void {
    if (this.end - this.offset < n) {
      throw new ProtocolDecodeError(`truncated: need ${n} bytes at offset ${this.offset}, ${this.end - this.offset} left`)
    }
  }

  /** Narrows `end` to the next `size` bytes; returns the old end for popLimit. */
  pushLimit(size: number): number {
    this.need(size)
    const saved = this.end
    this.end = this.offset + size
    return saved
  }

  /** Restores the end saved by pushLimit; the fenced range must have been consumed exactly. */
  popLimit(saved: number): void {
    if (this.offset !== this.end) throw new ProtocolDecodeError(`tagged field has ${this.end - this.offset} unread bytes`)
    this.end = saved
  }

  skip(n: number): void {
    this.need(n)
    this.offset += n
  }

  readInt8(): number {
    this.need(1)
    return (this.buf[this.offset++]! << 24) >> 24
  }

  readUint8(): number {
    this.need(1)
    return this.buf[this.offset++]!
  }

  readBool(): boolean {
    this.need(1)
    return this.buf[this.offset++] !== 0
  }

  readInt16(): number {
    this.need(2)
    const b = this.buf
    const o = this.offset
    this.offset = o + 2
    return ((b[o]! << 24) | (b[o + 1]! << 16)) >> 16
  }

  readUint16(): number {
    this.need(2)
    const b = this.buf
    const o = this.offset
    this.offset = o + 2
    return (b[o]! << 8) | b[o + 1]!
  }

  readInt32(): number {
    this.need(4)
    const b = this.buf
    const o = this.offset
    this.offset = o + 4
    return (b[o]! << 24) | (b[o + 1]! << 16) | (b[o + 2]! << 8) | b[o + 3]!
  }

  readUint32(): number {
    return this.readInt32() >>> 0
  }

  readInt64(): bigint {
    this.need(8)
    const hi = this.buf.readInt32BE(this.offset)
    // Within +-2^53 (every offset and timestamp): one BigInt from an exact number, instead of the
    // temporaries readBigInt64BE builds.
    const v = hi >= -0x200000 && hi < 0x200000 ? BigInt(hi * 4294967296 + this.buf.readUInt32BE(this.offset + 4)) : this.buf.readBigInt64BE(this.offset)
    this.offset += 8
    return v
  }

  readFloat64(): number {
    this.need(8)
    const v = this.buf.readDoubleBE(this.offset)
    this.offset += 8
    return v
  }

  /** Unsigned LEB128, at most 5 bytes and 32 bits. */
  readUvarint(): number {
    const b = this.buf
    let o = this.offset
    let result = 0
    for (let shift = 0; shift < 35; shift += 7) {
      if (o >= this.end) throw new ProtocolDecodeError(`truncated varint at offset ${this.offset}`)
      const byte = b[o++]!
      if (shift === 28 && byte > 0x0f) throw new ProtocolDecodeError(`varint at offset ${this.offset} exceeds 32 bits`)
      result |= (byte & 0x7f) << shift
      if ((byte & 0x80) === 0) {
        this.offset = o
        return result >>> 0
      }
    }
    throw new ProtocolDecodeError(`varint at offset ${this.offset} is longer than 5 bytes`)
  }

  /** Zigzag-encoded signed 32-bit varint. */
  readVarint(): number {
    const u = this.readUvarint()
    return (u >>> 1) ^ -(u & 1)
  }

  /** Unsigned LEB128, at most 10 bytes and 64 bits. */
  readUvarlong(): bigint {
    const b = this.buf
    let o = this.offset
    // Up to 7 bytes (49 bits) stay exact in a double, the common case for record offsets/timestamps.
    let low = 0
    let mul = 1
    for (let i = 0; i < 10; i++) {
      if (o >= this.end) throw new ProtocolDecodeError(`truncated varlong at offset ${this.offset}`)
      const byte = b[o++]!
      if (i === 9 && byte > 0x01) throw new ProtocolDecodeError(`varlong at offset ${this.offset} exceeds 64 bits`)
      if (i < 7) {
        low += (byte & 0x7f) * mul
        mul *= 128
        if ((byte & 0x80) === 0) {
          this.offset = o
          return BigInt(low)
        }
      } else {
        // Slow path: finish in bigint.
        let result = BigInt(low)
        let shift = BigInt(7 * i)
        result |= BigInt(byte & 0x7f) << shift
        if ((byte & 0x80) === 0) {
          this.offset = o
          return result
        }
        for (let j = i + 1; j < 10; j++) {
          if (o >= this.end) throw new ProtocolDecodeError(`truncated varlong at offset ${this.offset}`)
          const next = b[o++]!
          if (j === 9 && next > 0x01) throw new ProtocolDecodeError(`varlong at offset ${this.offset} exceeds 64 bits`)
          shift += 7n
          result |= BigInt(next & 0x7f) << shift
          if ((next & 0x80) === 0) {
            this.offset = o
            return result
          }
        }
        break
      }
    }
    throw new ProtocolDecodeError(`varlong at offset ${this.offset} is longer than 10 bytes`)
  }

  /** Zigzag-encoded signed 64-bit varint. */
  readVarlong(): bigint {
    const u = this.readUvarlong()
    return BigInt.asIntN(64, (u >> 1n) ^ -(u & 1n))
  }

  readUuid(): string {
    this.need(16)
    const s = this.buf.toString('base64url', this.offset, this.offset + 16)
    this.offset += 16
    return s
  }

  private utf8(len: number): string {
    this.need(len)
    const s = this.buf.toString('utf8', this.offset, this.offset + len)
    this.offset += len
    return s
  }

  /** Classic string: int16 length; -1 (null) is rejected. */
  readString(): string {
    const len = this.readInt16()
    if (len < 0) throw new ProtocolDecodeError(len === -1 ? 'null in a non-nullable string' : `negative string length ${len}`)
    return this.utf8(len)
  }

  readNullableString(): string | null {
    const len = this.readInt16()
    if (len === -1) return null
    if (len < 0) throw new ProtocolDecodeError(`negative string length ${len}`)
    return this.utf8(len)
  }

  /** Compact string: uvarint length+1; 0 (null) is rejected. */
  readCompactString(): string {
    const n = this.readUvarint()
    if (n === 0) throw new ProtocolDecodeError('null in a non-nullable compact string')
    if (n - 1 > 0x7fff) throw new ProtocolDecodeError(`compact string length ${n - 1} exceeds 32767`)
    return this.utf8(n - 1)
  }

  readCompactNullableString(): string | null {
    const n = this.readUvarint()
    if (n === 0) return null
    if (n - 1 > 0x7fff) throw new ProtocolDecodeError(`compact string length ${n - 1} exceeds 32767`)
    return this.utf8(n - 1)
  }

  private bytes(len: number, view: boolean): Buffer {
    this.need(len)
    const sub = this.buf.subarray(this.offset, this.offset + len)
    this.offset += len
    return view ? sub : Buffer.from(sub)
  }

  /** Classic bytes: int32 length. `view` returns a zero-copy subarray instead of a copy. */
  readBytes(view = false): Buffer {
    const len = this.readInt32()
    if (len < 0) throw new ProtocolDecodeError(len === -1 ? 'null in non-nullable bytes' : `negative bytes length ${len}`)
    return this.bytes(len, view)
  }

  readNullableBytes(view = false): Buffer | null {
    const len = this.readInt32()
    if (len === -1) return null
    if (len < 0) throw new ProtocolDecodeError(`negative bytes length ${len}`)
    return this.bytes(len, view)
  }

  readCompactBytes(view = false): Buffer {
    const n = this.readUvarint()
    if (n === 0) throw new ProtocolDecodeError('null in non-nullable compact bytes')
    return this.bytes(n - 1, view)
  }

  readCompactNullableBytes(view = false): Buffer | null {
    const n = this.readUvarint()
    if (n === 0) return null
    return this.bytes(n - 1, view)
  }

  /** A records field: nullable bytes, always a zero-copy view of the input. */
  readRecords(compact: boolean, nullable: boolean): Buffer | null {
    const b = compact ? this.readCompactNullableBytes(true) : this.readNullableBytes(true)
    if (b === null && !nullable) throw new ProtocolDecodeError('null in non-nullable records')
    return b
  }

  /** `n` raw bytes, copied. */
  readRaw(n: number): Buffer {
    return this.bytes(n, false)
  }

  private checkCount(n: number, minElementSize: number): void {
    if (n * minElementSize > this.end - this.offset) {
      throw new ProtocolDecodeError(`array of ${n} elements cannot fit in the ${this.end - this.offset} bytes left`)
    }
    if (n > this.elementBudget) {
      throw new ProtocolDecodeError(`array of ${n} elements is beyond the ${this.elementBudget} elements this input may still declare`)
    }
    this.elementBudget -= n
  }

  /**
   * Classic array length (int32). Returns -1 for null when `nullable`, else throws on null.
   * `minElementSize` is the fewest bytes one element can take; the count is checked against the
   * remaining bytes before the caller allocates.
   */
  readArrayLength(minElementSize: number, nullable: boolean): number {
    const n = this.readInt32()
    if (n < 0) {
      if (n === -1 && nullable) return -1
      throw new ProtocolDecodeError(n === -1 ? 'null in a non-nullable array' : `negative array length ${n}`)
    }
    this.checkCount(n, minElementSize)
    return n
  }

  /** Compact array length (uvarint count+1); -1 for null when `nullable`. */
  readCompactArrayLength(minElementSize: number, nullable: boolean): number {
    const u = this.readUvarint()
    if (u === 0) {
      if (nullable) return -1
      throw new ProtocolDecodeError('null in a non-nullable compact array')
    }
    this.checkCount(u - 1, minElementSize)
    return u - 1
  }

  /** A tagged-field section with no known tags: every field is kept as unknown. */
  readUnknownTaggedFields(): TaggedField[] | undefined {
    const count = this.readUvarint()
    let fields: TaggedField[] | undefined
    for (let i = 0; i < count; i++) {
      const tag = this.readUvarint()
      const size = this.readUvarint()
      ;(fields ??= []).push({ tag, data: this.readRaw(size) })
    }
    return fields
  }
}
